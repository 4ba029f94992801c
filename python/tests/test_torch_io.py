"""lnkit.torch_io: PyTorch models in and out (docs/torch.md).

Models written here as a PyTorch user writes them (torch.nn's layers, their own
forward and F.cross_entropy) are converted to lnkit; lnkit's loss and gradient
(the C library, through lnkit.Model) must equal PyTorch's to 1e-12 relative.
Round trips in both directions keep every weight bit for bit; lnkit models sent
to torch.nn (to_torch) give lnkit's loss and gradient through PyTorch's
autograd.  Every refusal is checked with its message (module and reason)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import lnkit
from conftest import rel_err, run, read_record, same_bytes, RECORD_KEYS, CONFIG_ITEM

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
tio = lnkit.torch_io
TOL = 1e-12
torch.set_num_threads(1)
# the Tagger in eval mode without gradients runs torch's nested-tensor fast path (on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")


# ---------------------------------------------------------------------------
# models as a PyTorch user writes them

def batch(task, V, B=3, n=6, V_src=None, n_classes=None, seed=0):
    """Ids with trailing padding (MODEL.md §4 layout): lm tgt [B, n+1] with <bos>;
    cls src, labels; seq2seq src, tgt."""
    g = np.random.default_rng(seed)
    lens = [n] + [int(g.integers(2, n)) for _ in range(B - 1)]
    out = {}
    if task in ("cls", "seq2seq"):
        Vs = V_src or V
        src = np.zeros((B, n), np.int64)
        for r in range(B):
            src[r, :lens[(r + 1) % B]] = g.integers(4, Vs, lens[(r + 1) % B])
        out["src"] = src
        if task == "cls":
            out["labels"] = g.integers(0, n_classes or Vs, (B, n)).astype(np.int64)
    if task in ("lm", "seq2seq"):
        tgt = np.zeros((B, n + 1), np.int64)
        for r in range(B):
            tgt[r, 0] = 2
            tgt[r, 1:lens[r] + 1] = g.integers(4, V, lens[r])
        out["tgt"] = tgt
    return out


def sinusoidal(T, d):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


class GPT(nn.Module):
    """Decoder-only: token and learned position embeddings, Pre-LN GELU blocks
    with dropout (off in eval mode), a final LayerNorm, a bias-free head."""

    def __init__(self, V=13, d=8, h=2, L=2, d_ff=12, max_len=10, norm_first=True):
        super().__init__()
        self.tok, self.wpe = nn.Embedding(V, d), nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=norm_first)
        self.blocks = nn.TransformerEncoder(layer, L, norm=nn.LayerNorm(d))
        self.head = nn.Linear(d, V, bias=False)

    def forward(self, tgt):
        x, y = tgt[:, :-1], tgt[:, 1:]
        T = x.shape[1]
        z = self.blocks(self.tok(x) + self.wpe(torch.arange(T)),
                        mask=torch.triu(torch.ones(T, T, dtype=torch.bool), 1),
                        src_key_padding_mask=x == 0)
        return F.cross_entropy(self.head(z).flatten(0, 1), y.flatten(), ignore_index=0)

    def parts(self):
        return dict(task="lm", decoder=self.blocks, tgt_emb=self.tok, tgt_pos=self.wpe,
                    output=self.head)


class Tagger(nn.Module):
    """Encoder-only token classifier: sqrt(d)-scaled embedding plus sinusoidal
    positions, Post-LN layers, a linear head."""

    def __init__(self, V=15, d=8, h=2, L=2, d_ff=16, n_classes=5, norm=None):
        super().__init__()
        self.d = d
        self.emb = nn.Embedding(V, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            d, h, d_ff, dropout=0.0, batch_first=True), L, norm=norm)
        self.cls = nn.Linear(d, n_classes, bias=False)

    def forward(self, src, labels):
        S = src.shape[1]
        x = self.emb(src) * math.sqrt(self.d) + sinusoidal(S, self.d)
        z = self.enc(x, src_key_padding_mask=src == 0)
        lab = labels.masked_fill(src == 0, -100)
        return F.cross_entropy(self.cls(z).flatten(0, 1), lab.flatten())

    def parts(self):
        return dict(task="cls", encoder=self.enc, src_emb=self.emb, output=self.cls)


class Translator(nn.Module):
    """nn.Transformer with tied target embedding and generator, label smoothing."""

    def __init__(self, Vs=11, Vt=9, d=8, h=2, L=2, d_ff=12, norm_first=False, ls=0.1):
        super().__init__()
        self.d, self.ls = d, ls
        self.src_tok, self.tgt_tok = nn.Embedding(Vs, d), nn.Embedding(Vt, d)
        self.transformer = nn.Transformer(d, h, L, L, d_ff, dropout=0.0, batch_first=True,
                                          norm_first=norm_first)
        self.gen = nn.Linear(d, Vt, bias=False)
        self.gen.weight = self.tgt_tok.weight

    def forward(self, src, tgt):
        x, y = tgt[:, :-1], tgt[:, 1:]
        S, T = src.shape[1], x.shape[1]
        s = self.src_tok(src) * math.sqrt(self.d) + sinusoidal(S, self.d)
        t = self.tgt_tok(x) * math.sqrt(self.d) + sinusoidal(T, self.d)
        z = self.transformer(s, t, tgt_mask=torch.triu(torch.ones(T, T, dtype=torch.bool), 1),
                             src_key_padding_mask=src == 0, tgt_key_padding_mask=x == 0,
                             memory_key_padding_mask=src == 0)
        return F.cross_entropy(self.gen(z).flatten(0, 1), y.flatten(), ignore_index=0,
                               label_smoothing=self.ls)

    def parts(self):
        return dict(transformer=self.transformer, src_emb=self.src_tok, tgt_emb=self.tgt_tok,
                    output=self.gen, label_smoothing=self.ls)


class MixLM(nn.Module):
    """A list of encoder layers, the first Post-LN, the rest Pre-LN, a final
    norm (Mix-LN); no positions; the norm given as a module pattern."""

    def __init__(self, V=13, d=8, h=2, L=4, d_ff=12, k_post=1, norm=nn.LayerNorm):
        super().__init__()
        self.tok = nn.Embedding(V, d)
        self.layers = nn.ModuleList()
        for l in range(L):
            m = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                           norm_first=l >= k_post)
            m.norm1, m.norm2 = norm(d), norm(d)
            self.layers.append(m)
        self.final = norm(d)
        self.head = nn.Linear(d, V, bias=False)

    def forward(self, tgt):
        x, y = tgt[:, :-1], tgt[:, 1:]
        T = x.shape[1]
        z = self.tok(x)
        for m in self.layers:
            z = m(z, src_mask=torch.triu(torch.ones(T, T, dtype=torch.bool), 1),
                  src_key_padding_mask=x == 0)
        return F.cross_entropy(self.head(self.final(z)).flatten(0, 1), y.flatten(),
                               ignore_index=0)

    def parts(self):
        return dict(task="lm", decoder=self.layers, decoder_norm=self.final, tgt_emb=self.tok,
                    output=self.head, pos="none")


def _rms(d):
    return tio.RMSNorm(d)


USER = {
    "gpt_pre_gelu_learned": lambda: GPT(),
    "tagger_post": lambda: Tagger(),
    "translator_post_final_norms": lambda: Translator(),
    "translator_pre": lambda: Translator(norm_first=True, ls=0.0),
    "mix_lm": lambda: MixLM(),
    "rms_lm_pre": lambda: MixLM(L=2, k_post=0, norm=_rms),
    # torch 1.13's layers read norm1.eps in evaluation mode: nn.Identity norms run in
    # training mode (dropout 0), lnkit.torch_io.NoNorm in either
    "identity_lm_post": lambda: MixLM(L=2, k_post=2, norm=lambda d: nn.Identity()).train(),
    "nonorm_lm_pre": lambda: MixLM(L=2, k_post=0, norm=lambda d: tio.NoNorm()),
}


def torch_loss_grad(model, b, grad=True):
    args = {k: torch.tensor(v) for k, v in b.items()}
    model.zero_grad()
    L = model(**args)
    L.backward()
    return float(L)


def lnkit_data(b):
    return lnkit.Data.from_arrays(**b)


def flat(m, named):
    return np.concatenate([np.asarray(named[n], dtype=np.float64).reshape(-1) for n in m.names])


@pytest.fixture(params=sorted(USER))
def user(request):
    torch.manual_seed(sorted(USER).index(request.param))
    model = USER[request.param]().double()
    if request.param != "identity_lm_post":
        model.eval()
    with torch.no_grad():   # gains and biases away from 1 and 0
        for n, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return request.param, model


def user_batch(model, cfg):
    return batch(cfg["task"], cfg.get("V_tgt", cfg.get("V")), V_src=cfg.get("V_src"),
                 n_classes=cfg.get("n_classes"), seed=3)


# ---------------------------------------------------------------------------
# torch -> lnkit: loss and gradient through the C library

def test_user_model_loss_grad(user):
    name, model = user
    cfg, w = tio.from_torch(**model.parts())
    m = tio.to_model(cfg, w)
    assert list(w) == m.names
    b = user_batch(model, cfg)
    Lt = torch_loss_grad(model, b)
    _, gw = tio.from_torch(**model.parts(), grad=True)
    L, g = m.loss_grad(lnkit_data(b))
    assert abs(L - Lt) <= TOL * abs(Lt), (name, L, Lt)
    assert rel_err(g, flat(m, gw)) <= TOL, name


def test_user_model_round_trip(user, tmp_path):
    """torch -> lnkit -> torch: to_torch's model gives the user's loss; back to
    lnkit gives the same configuration and the same bits; the files read back."""
    name, model = user
    cfg, w = tio.from_torch(**model.parts())
    b = user_batch(model, cfg)
    with torch.no_grad():
        Lt = float(model(**{k: torch.tensor(v) for k, v in b.items()}))
        tm = tio.to_torch(cfg, w)
        L2 = float(tm(**{k: torch.tensor(v) for k, v in b.items()}))
    assert abs(L2 - Lt) <= TOL * abs(Lt), name
    cfg2, w2 = tio.from_torch(tm)
    assert cfg2 == cfg
    assert list(w2) == list(w) and all(np.array_equal(w2[n], w[n]) for n in w)
    tio.save(cfg, w, tmp_path / "c.json", tmp_path / "w.safetensors")
    m = lnkit.Model.load(tmp_path / "c.json", tmp_path / "w.safetensors")
    assert np.array_equal(m.theta, flat(m, w))
    # the file says how it was made (docs/MODEL.md section 9): this call, the
    # configuration's SHA-256 as `lnkit init` records it for the written
    # configuration, no seed (the user's weights); the same input, the same bytes
    rec = read_record(tmp_path / "w.safetensors")
    assert list(rec) == RECORD_KEYS, name
    assert rec["command"] == "python: lnkit.torch_io.save"
    assert rec["content"] == ("weights given to torch_io.save, in lnkit's names and order "
                              "(docs/torch.md)")
    assert rec["seeds"] == {}, name
    run("init", "--config", tmp_path / "c.json", "-o", tmp_path / "i.safetensors", "--quiet")
    assert rec["identity"] == {CONFIG_ITEM: read_record(tmp_path / "i.safetensors")["identity"]
                               [CONFIG_ITEM]}, name
    tio.save(cfg, w, tmp_path / "c2.json", tmp_path / "w2.safetensors")
    assert same_bytes(tmp_path / "w.safetensors", tmp_path / "w2.safetensors"), name


def test_state_dict_route():
    """A state_dict and its description give what the modules give."""
    torch.manual_seed(1)
    model = Translator().double()
    cfg, w = tio.from_torch(**model.parts())
    spec = {"task": "seq2seq", "nhead": 2, "tie_output": True, "label_smoothing": 0.1,
            "prefix": {"src_emb": "src_tok", "tgt_emb": "tgt_tok", "output": "gen",
                       "encoder": "transformer.encoder", "decoder": "transformer.decoder"}}
    cfg2, w2 = tio.from_state_dict(model.state_dict(), spec)
    assert cfg2 == cfg and all(np.array_equal(w2[n], w[n]) for n in w) and list(w2) == list(w)
    sd = dict(model.state_dict(), pe=torch.zeros(3))
    with pytest.raises(tio.ConversionError, match=r"torch_io: pe: not mapped to lnkit"):
        tio.from_state_dict(sd, spec)
    cfg3, _ = tio.from_state_dict(sd, dict(spec, ignore=["pe"]))
    assert cfg3 == cfg
    np_sd = {k: v.numpy() for k, v in model.state_dict().items()}   # arrays work too
    assert tio.from_state_dict(np_sd, spec)[0] == cfg


# ---------------------------------------------------------------------------
# lnkit -> torch -> lnkit

LNKIT = [
    {"task": "lm", "norm_pos": "pre", "d": 8, "h": 2, "L": 2, "V": 11},
    {"task": "lm", "norm_pos": "post", "norm": "rmsnorm", "tie_output": True, "d": 8, "L": 2,
     "V": 11, "label_smoothing": 0.1},
    {"task": "cls", "norm_pos": "pre", "norm": "none", "d": 8, "L": 1, "V": 11,
     "n_classes": 4},
    {"task": "seq2seq", "norm_pos": "post", "d": 8, "h": 4, "L_enc": 2, "L_dec": 1, "V": 9,
     "V_src": 12},
    {"task": "seq2seq", "norm_pos": "mix", "mix_ratio": 0.5, "activation": "gelu",
     "pos": "learned", "max_len": 9, "d": 8, "L": 2, "V": 9, "tie_output": True},
    {"task": "lm", "norm_pos": "mix", "mix_ratio": 1, "pos": "none", "input_scale": 0.5,
     "norm": "rmsnorm", "d": 6, "h": 3, "L": 3, "V": 9},
    {"task": "cls", "norm_pos": "post", "activation": "gelu", "pos": "learned", "max_len": 8,
     "d": 8, "L": 2, "V": 11, "tie_output": True, "label_smoothing": 0.2},
]


@pytest.mark.parametrize("k", range(len(LNKIT)))
def test_lnkit_to_torch(k):
    """lnkit's model (its initialisation, gains and biases moved) as torch.nn
    modules: PyTorch's loss and gradient equal lnkit's; back to lnkit, the same
    configuration and weights bit for bit."""
    m = lnkit.Model(LNKIT[k], seed=k)
    g = np.random.default_rng(k)
    for n in m.names:
        if m.params[n].ndim == 1:
            m.params[n] += 0.1 * g.normal(size=m.params[n].shape)
    c = m.config
    b = batch(c["task"], c["V_tgt"], V_src=c["V_src"], n_classes=c["n_classes"], seed=k)
    L, grad = m.loss_grad(lnkit_data(b))
    tm = tio.to_torch(m)
    tm.zero_grad()
    Lt = tm(**{n: torch.tensor(v) for n, v in b.items()})
    Lt.backward()
    _, gw = tio.from_torch(tm, grad=True)
    assert abs(float(Lt) - L) <= TOL * abs(L)
    assert rel_err(flat(m, gw), grad) <= TOL
    cfg2, w2 = tio.from_torch(tm)
    m2 = tio.to_model(cfg2, w2)
    assert np.array_equal(m2.theta, m.theta)
    ignore = {"seed", "init", "n_params", "param_order", "deepnorm_alpha", "deepnorm_beta"}
    assert {a: v for a, v in m2.config.items() if a not in ignore} == \
        {a: v for a, v in c.items() if a not in ignore}


def test_to_torch_default_init_and_files(tmp_path):
    m = lnkit.Model({"d": 8, "L": 1, "V": 10, "norm_pos": "pre"}, seed=4)
    m.save(tmp_path / "w.safetensors", tmp_path / "c.json")
    a = tio.to_torch(m.config)                    # lnkit's initialisation of the config
    b = tio.to_torch(m.config, tmp_path / "w.safetensors")
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)
    # lnkit's initialisation through torch and back is still it, bit for bit:
    # torch_io.save records the seed that made it, as Model.save does
    cfg, w = tio.from_torch(a)
    tio.save({**cfg, "seed": 4}, w, tmp_path / "c2.json", tmp_path / "w2.safetensors")
    rec, rec_m = read_record(tmp_path / "w2.safetensors"), read_record(tmp_path / "w.safetensors")
    assert rec_m["seeds"] == rec["seeds"] == {"init": 4}
    assert rec["command"] == "python: lnkit.torch_io.save" and rec["identity"] == rec_m["identity"]


# ---------------------------------------------------------------------------
# refusals: each names the module and says why

def _layer(**kw):
    args = dict(d_model=8, nhead=2, dim_feedforward=12, dropout=0.0, batch_first=True)
    args.update(kw)
    return nn.TransformerEncoderLayer(**args).double()


def _lm(layers, final=None, **kw):
    parts = dict(task="lm", decoder=list(layers), decoder_norm=final,
                 tgt_emb=nn.Embedding(13, 8).double(), output=nn.Linear(8, 13, bias=False))
    parts.update(kw)
    return parts


class OwnForward(nn.TransformerEncoderLayer):
    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        return src


def _set(m, **kw):
    for k, v in kw.items():
        setattr(m, k, v)
    return m


REFUSALS = [
    ("dropout in training mode", lambda: _lm([_layer(dropout=0.1).train()]),
     r"decoder\.layers\.0\.self_attn: dropout 0\.1 in training mode"),
    ("tanh GELU", lambda: _lm([_layer(activation=nn.GELU(approximate="tanh"))]),
     r"decoder\.layers\.0\.activation: GELU\(approximate='tanh'\): lnkit's gelu is the exact"),
    ("custom activation", lambda: _lm([_layer(activation=F.silu)]),
     r"decoder\.layers\.0\.activation: activation 'silu'.*custom activation"),
    ("eps differs per layer", lambda: _lm([_layer(), _layer(layer_norm_eps=1e-6)]),
     r"decoder\.layers\.1\.norm1: layer_norm_eps 1e-06 differs from decoder\.layers\.0\.norm1"),
    ("pre-norm without final norm", lambda: _lm([_layer(norm_first=True)]),
     r"torch_io: decoder: pre-norm layers \(norm_first=True\) without a final norm"),
    ("pre before post", lambda: _lm([_layer(norm_first=True), _layer()], nn.LayerNorm(8)),
     r"decoder: a post-norm layer after a pre-norm one"),
    ("add_bias_kv", lambda: _lm([_set(_layer(), self_attn=nn.MultiheadAttention(
        8, 2, add_bias_kv=True, batch_first=True))]),
     r"decoder\.layers\.0\.self_attn: add_bias_kv"),
    ("add_zero_attn", lambda: _lm([_set(_layer(), self_attn=nn.MultiheadAttention(
        8, 2, add_zero_attn=True, batch_first=True))]),
     r"decoder\.layers\.0\.self_attn: add_zero_attn"),
    ("attention without bias", lambda: _lm([_set(_layer(), self_attn=nn.MultiheadAttention(
        8, 2, bias=False, batch_first=True))]), r"decoder\.layers\.0\.self_attn: bias=False"),
    ("kdim", lambda: _lm([_set(_layer(), self_attn=nn.MultiheadAttention(
        8, 2, kdim=4, vdim=4, batch_first=True))]), r"self_attn: kdim 4, vdim 4"),
    ("heads differ", lambda: _lm([_layer(), _layer(nhead=4)]),
     r"decoder\.layers\.1\.self_attn: nhead 4 differs"),
    ("output bias", lambda: _lm([_layer()], output=nn.Linear(8, 13)),
     r"output: a bias \(Linear\(bias=True\)\)"),
    ("padding_idx", lambda: _lm([_layer()], tgt_emb=nn.Embedding(13, 8, padding_idx=1)),
     r"tgt_emb: padding_idx 1: lnkit's <pad> is id 0"),
    ("max_norm", lambda: _lm([_layer()], tgt_emb=nn.Embedding(13, 8, max_norm=1.0)),
     r"tgt_emb: max_norm 1"),
    ("own forward", lambda: _lm([OwnForward(8, 2, 12, 0.0, batch_first=True)]),
     r"decoder\.layers\.0: OwnForward overrides forward"),
    ("LayerNorm without affine", lambda: _lm([_set(_layer(), norm1=nn.LayerNorm(
        8, elementwise_affine=False))]),
     r"decoder\.layers\.0\.norm1: LayerNorm\(elementwise_affine=False\)"),
    ("mixed norm types", lambda: _lm([_set(_layer(), norm1=tio.RMSNorm(8))]),
     r"decoder\.layers\.0\.norm2: norm 'layernorm' differs from "
     r"decoder\.layers\.0\.norm1's 'rmsnorm'"),
    ("foreign norm", lambda: _lm([_set(_layer(), norm1=nn.BatchNorm1d(8))]),
     r"decoder\.layers\.0\.norm1: BatchNorm1d: lnkit's norms are"),
    ("d_ff differs", lambda: _lm([_layer(), _layer(dim_feedforward=16)]),
     r"decoder\.layers\.1\.linear1: weight \[16, 8\], expected \[12, 8\]"),
    ("cross-attention layer in lm", lambda: _lm([nn.TransformerDecoderLayer(8, 2, 12)]),
     r"decoder\.layers\.0: TransformerDecoderLayer is not nn\.TransformerEncoderLayer"),
    ("embedding scale", lambda: dict(_lm([_layer()]), emb_scale=1.0),
     r"tgt_emb: embedding scale 1\.0 with sinusoidal positions: lnkit's is 2\.8"),
    ("rotary positions", lambda: dict(_lm([_layer()]), pos="rope"),
     r"spec: pos 'rope'.*rotary"),
]


@pytest.mark.parametrize("what,parts,message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal(what, parts, message):
    with pytest.raises(tio.ConversionError, match=message):
        tio.from_torch(**parts())


TO_TORCH_REFUSALS = [
    ({"norm_pos": "peri"}, r"to_torch: norm_pos peri: torch\.nn's layers put the norm before"),
    ({"norm_pos": "out"}, r"to_torch: norm_pos out"),
    ({"norm_pos": "deepnorm"}, r"to_torch: norm_pos deepnorm:.*scaled residual"),
    ({"qk_norm": "layernorm"}, r"to_torch: qk_norm layernorm: nn\.MultiheadAttention has no"),
    ({"activation": "swiglu"}, r"to_torch: activation swiglu"),
    ({"bias": False}, r"to_torch: bias false"),
    ({"pos": "rope"}, r"to_torch: pos rope"),
]


@pytest.mark.parametrize("cfg,message", TO_TORCH_REFUSALS, ids=[str(c) for c, _ in
                                                                 TO_TORCH_REFUSALS])
def test_to_torch_refusal(cfg, message):
    with pytest.raises(tio.ConversionError, match=message):
        tio.to_torch(dict(cfg, d=8, L=1, V=9))


def test_state_dict_refusals():
    torch.manual_seed(2)
    sd = GPT().double().state_dict()
    spec = {"task": "lm", "nhead": 2, "norm_first": True, "activation": "gelu",
            "prefix": {"decoder": "blocks", "tgt_emb": "tok", "tgt_pos": "wpe", "output": "head"}}
    assert tio.from_state_dict(sd, spec)[0]["pos"] == "learned"
    with pytest.raises(lnkit.Error, match=r"spec: nhead None, expected the number of heads"):
        tio.from_state_dict(sd, {k: v for k, v in spec.items() if k != "nhead"})
    with pytest.raises(lnkit.Error, match=r"spec: unknown key 'heads'"):
        tio.from_state_dict(sd, dict(spec, heads=2))
    with pytest.raises(tio.ConversionError, match=r"spec: activation 'silu'"):
        tio.from_state_dict(sd, dict(spec, activation="silu"))
    bad = dict(sd, **{"head.bias": torch.zeros(13)})
    with pytest.raises(tio.ConversionError, match=r"head: a bias on the output layer"):
        tio.from_state_dict(bad, spec)
    bad = {k: v for k, v in sd.items() if k != "blocks.layers.1.linear2.bias"}
    with pytest.raises(tio.ConversionError, match=r"blocks\.layers\.1\.linear2\.bias: missing"):
        tio.from_state_dict(bad, spec)
    with pytest.raises(tio.ConversionError, match=r"blocks: pre-norm layers"):
        tio.from_state_dict({k: v for k, v in sd.items() if not k.startswith("blocks.norm.")},
                            spec)
    with pytest.raises(lnkit.Error, match=r"blocks\.layers\.0\.self_attn\.in_proj_weight has no "
                       r"\.grad|has no \.grad"):
        m = GPT().double()
        tio.from_torch(**m.parts(), grad=True)


def test_import_without_torch():
    """import lnkit never imports torch; without torch, torch_io maps state
    dicts of arrays and says what is missing for the rest."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, lnkit\n"
        "t = lnkit.torch_io\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "d = 4\n"
        "sd = {'tgt_emb.weight': np.ones((9, d)), 'output.weight': np.ones((9, d))}\n"
        "p = 'decoder.layers.0.'\n"
        "sd.update({p + 'self_attn.in_proj_weight': np.ones((3 * d, d)),\n"
        "           p + 'self_attn.in_proj_bias': np.ones(3 * d),\n"
        "           p + 'self_attn.out_proj.weight': np.ones((d, d)),\n"
        "           p + 'self_attn.out_proj.bias': np.ones(d),\n"
        "           p + 'linear1.weight': np.ones((6, d)), p + 'linear1.bias': np.ones(6),\n"
        "           p + 'linear2.weight': np.ones((d, 6)), p + 'linear2.bias': np.ones(d)})\n"
        "for k in ('norm1', 'norm2'):\n"
        "    sd[p + k + '.weight'] = np.ones(d); sd[p + k + '.bias'] = np.ones(d)\n"
        "cfg, w = t.from_state_dict(sd, {'task': 'lm', 'nhead': 2})\n"
        "assert cfg['norm_pos'] == 'post' and cfg['d_ff'] == 6, cfg\n"
        "try:\n"
        "    t.to_torch(cfg, w)\n"
        "except lnkit.Error as e:\n"
        "    assert 'PyTorch is not installed' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('no error')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
