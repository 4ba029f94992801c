"""lnkit -> torch.nn (lnkit.torch_io.to_torch): TorchModel, a module of
torch.nn's own layers (nn.Embedding, nn.TransformerEncoder / -Decoder of
nn.TransformerEncoderLayer / -DecoderLayer, nn.LayerNorm, nn.Linear) whose
forward computes the loss of MODEL.md §4, and RMSNorm, the norm module
torch 1.13 lacks.  Imports torch (only lnkit.torch_io imports this module)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .torch_io import ConversionError

PAD = 0


class RMSNorm(nn.Module):
    """RMSNorm of MODEL.md §2, g * x / sqrt(mean(x^2) + eps), for torch
    versions without nn.RMSNorm: put it in place of a layer's LayerNorm
    (layer.norm1 = RMSNorm(d, eps)); from_torch maps it to norm = rmsnorm.
    Its parameter is `weight` [d]."""

    def __init__(self, d, eps=1e-5, dtype=torch.float64):
        super().__init__()
        self.normalized_shape = (d,)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, dtype=dtype))

    def forward(self, x):
        return self.weight * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps))

    def extra_repr(self):
        return "%d, eps=%g" % (self.normalized_shape[0], self.eps)


class NoNorm(nn.Identity):
    """norm = none: the identity, with the `eps` that torch 1.13's
    TransformerEncoderLayer reads from its norms in evaluation mode (a plain
    nn.Identity there raises AttributeError); from_torch takes either."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps


def sinusoidal(T, d):
    """PE of Vaswani et al. (MODEL.md §2), float64 [T, d]."""
    pe = np.zeros((T, d))
    t = np.arange(T, dtype=np.float64)
    for i in range(d // 2):
        div = np.power(10000.0, (2.0 * i) / d)
        pe[:, 2 * i] = np.sin(t / div)
        pe[:, 2 * i + 1] = np.cos(t / div)
    return torch.tensor(pe)


def refusal(cfg):
    """Why torch.nn's layers cannot express cfg (None if they can)."""
    why = {"peri": "norms on both sides of each sublayer", "out": "a norm on the sublayer's "
           "output inside the residual", "deepnorm": "a scaled residual (alpha x)"}
    if cfg["norm_pos"] in why:
        return ("norm_pos %s: torch.nn's layers put the norm before (norm_first=True) or after "
                "the residual sum, not %s" % (cfg["norm_pos"], why[cfg["norm_pos"]]))
    if cfg["qk_norm"] != "none":
        return "qk_norm %s: nn.MultiheadAttention has no query/key norm" % cfg["qk_norm"]
    if cfg.get("activation", "relu") not in ("relu", "gelu"):
        return ("activation %s: the layers' feed-forward is linear2(act(linear1(x))), no gate"
                % cfg["activation"])
    if not cfg.get("bias", True):
        return "bias false: torch 1.13's transformer layers always have biases"
    if cfg.get("pos", "sinusoidal") == "rope":
        return "pos rope: nn.MultiheadAttention has no rotary positions"
    return None


def _layer(cfg, cross, pre):
    cls = nn.TransformerDecoderLayer if cross else nn.TransformerEncoderLayer
    m = cls(d_model=cfg["d"], nhead=cfg["h"], dim_feedforward=cfg["d_ff"], dropout=0.0,
            activation=cfg.get("activation", "relu"), layer_norm_eps=cfg["eps"],
            batch_first=True, norm_first=pre, dtype=torch.float64)
    for k in ("norm1", "norm2", "norm3"):
        if hasattr(m, k):
            setattr(m, k, _norm(cfg))
    return m


def _norm(cfg):
    if cfg["norm"] == "layernorm":
        return nn.LayerNorm(cfg["d"], eps=cfg["eps"], dtype=torch.float64)
    if cfg["norm"] == "rmsnorm":
        return RMSNorm(cfg["d"], cfg["eps"])
    return NoNorm(cfg["eps"])


class TorchModel(nn.Module):
    """lnkit's model (a configuration torch.nn's layers express) as torch.nn
    modules, float64: src_emb, src_pos, tgt_emb, tgt_pos (nn.Embedding),
    encoder, decoder (nn.TransformerEncoder, or nn.TransformerDecoder for
    seq2seq; lm's decoder is an encoder stack under a causal mask), output
    (nn.Linear without bias; absent when tied).  Layers are batch_first with
    dropout 0; mix has per-layer norm_first.

        loss = tm(tgt=ids)                  # lm: ids [B, T+1], <bos> first
        loss = tm(src=ids, labels=lab)      # cls
        loss = tm(src=s, tgt=t)             # seq2seq
    """

    def __init__(self, config):
        super().__init__()
        why = refusal(config)
        if why:
            raise ConversionError("torch_io: to_torch: " + why)
        self.config = dict(config)
        c = self.config
        d, task = c["d"], c["task"]
        kw = dict(dtype=torch.float64)
        learned = c.get("pos", "sinusoidal") == "learned"
        if task in ("cls", "seq2seq"):
            self.src_emb = nn.Embedding(c["V_src"], d, **kw)
            if learned:
                self.src_pos = nn.Embedding(c["max_len"], d, **kw)
            self.encoder = self._stack("enc", c["L_enc"], False)
        if task in ("lm", "seq2seq"):
            self.tgt_emb = nn.Embedding(c["V_tgt"], d, **kw)
            if learned:
                self.tgt_pos = nn.Embedding(c["max_len"], d, **kw)
            self.decoder = self._stack("dec", c["L_dec"], task == "seq2seq")
        if not c["tie_output"]:
            n_out = c["n_classes"] if task == "cls" else c["V_tgt"]
            self.output = nn.Linear(d, n_out, bias=False, **kw)

    def _stack(self, stack, L, cross):
        c = self.config
        n_post = L if c["norm_pos"] == "post" else 0
        if c["norm_pos"] == "mix":
            n_post = int(math.floor(c["mix_ratio"] * L))
        layers = [_layer(c, cross, l >= n_post) for l in range(L)]
        final = None
        if c["norm_pos"] != "post" and c["norm"] != "none":
            final = _norm(c)
        if cross:
            m = nn.TransformerDecoder(layers[0], L, norm=final)
        else:
            m = nn.TransformerEncoder(layers[0], L, norm=final, enable_nested_tensor=False)
        m.layers = nn.ModuleList(layers)
        return m

    def embed(self, side, ids):
        """input_scale * (c E[ids] + P) of MODEL.md §2."""
        c = self.config
        pos = c.get("pos", "sinusoidal")
        E = getattr(self, side + "_emb")
        T = ids.shape[1]
        if pos == "sinusoidal":
            x = math.sqrt(c["d"]) * E(ids) + sinusoidal(T, c["d"])[None]
        elif pos == "learned":
            x = E(ids) + getattr(self, side + "_pos")(torch.arange(T))[None]
        else:
            x = E(ids)
        s = c.get("input_scale", 1.0)
        return x if s == 1.0 else s * x

    def logits(self, src=None, tgt=None):
        """Logits of every position: cls [B, S, n_classes] from src; lm and
        seq2seq [B, T, V_tgt] for the decoder's input tgt[:, :-1]."""
        c = self.config
        if c["task"] in ("cls", "seq2seq"):
            S = src.shape[1]
            # an explicit (all-False) mask keeps torch 1.13 off its fused fast path,
            # which assumes LayerNorm and would not run RMSNorm or nn.Identity
            mem = self.encoder(self.embed("src", src), mask=torch.zeros(S, S, dtype=torch.bool),
                               src_key_padding_mask=src == PAD)
        if c["task"] == "cls":
            z, E = mem, self.src_emb
        else:
            tin = tgt[:, :-1]
            T = tin.shape[1]
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            x = self.embed("tgt", tin)
            if c["task"] == "lm":
                z = self.decoder(x, mask=causal, src_key_padding_mask=tin == PAD)
            else:
                z = self.decoder(x, mem, tgt_mask=causal, tgt_key_padding_mask=tin == PAD,
                                 memory_key_padding_mask=src == PAD)
            E = self.tgt_emb
        return F.linear(z, E.weight) if c["tie_output"] else self.output(z)

    def forward(self, src=None, tgt=None, labels=None):
        """The loss of MODEL.md §4: the mean over the scored positions of the
        (label-smoothed) cross-entropy."""
        c = self.config
        z = self.logits(src, tgt)
        if c["task"] == "cls":
            scored = src != PAD
            labels = labels.masked_fill(~scored, 0)
        else:
            labels = tgt[:, 1:]
            scored = labels != PAD
        per = F.cross_entropy(z.reshape(-1, z.shape[-1]), labels.reshape(-1), reduction="none",
                              label_smoothing=c.get("label_smoothing", 0.0))
        return per[scored.reshape(-1)].sum() / scored.sum()


def _load_attn(m, p, name):
    m.in_proj_weight.copy_(torch.cat([p(name + ".wq").T, p(name + ".wk").T, p(name + ".wv").T]))
    m.in_proj_bias.copy_(torch.cat([p(name + ".bq"), p(name + ".bk"), p(name + ".bv")]))
    m.out_proj.weight.copy_(p(name + ".wo").T)
    m.out_proj.bias.copy_(p(name + ".bo"))


def _load_norm(m, p, name):
    if isinstance(m, nn.Identity):
        return
    m.weight.copy_(p(name + ".g"))
    if isinstance(m, nn.LayerNorm):
        m.bias.copy_(p(name + ".b"))


def build(cfg, params):
    """TorchModel of the resolved configuration cfg with lnkit's named tensors
    params (MODEL.md §6) copied in."""
    tm = TorchModel(cfg)
    p = lambda n: torch.tensor(np.asarray(params[n]), dtype=torch.float64)  # noqa: E731
    with torch.no_grad():
        for side in ("src", "tgt"):
            if hasattr(tm, side + "_emb"):
                getattr(tm, side + "_emb").weight.copy_(p(side + "_emb"))
            if hasattr(tm, side + "_pos"):
                getattr(tm, side + "_pos").weight.copy_(p(side + "_pos"))
        for stack, part in (("enc", "encoder"), ("dec", "decoder")):
            mod = getattr(tm, part, None)
            if mod is None:
                continue
            cross = isinstance(mod, nn.TransformerDecoder)
            for l, layer in enumerate(mod.layers):
                N = "%s.%d" % (stack, l)
                _load_attn(layer.self_attn, p, N + ".attn")
                _load_norm(layer.norm1, p, N + ".norm1")
                if cross:
                    _load_attn(layer.multihead_attn, p, N + ".xattn")
                    _load_norm(layer.norm2, p, N + ".norm2")
                layer.linear1.weight.copy_(p(N + ".ffn.w1").T)
                layer.linear1.bias.copy_(p(N + ".ffn.b1"))
                layer.linear2.weight.copy_(p(N + ".ffn.w2").T)
                layer.linear2.bias.copy_(p(N + ".ffn.b2"))
                k = 3 if cross else 2
                _load_norm(getattr(layer, "norm%d" % k), p, "%s.norm%d" % (N, k))
            if mod.norm is not None:
                _load_norm(mod.norm, p, stack + ".final_norm")
        if hasattr(tm, "output"):
            tm.output.weight.copy_(p("out.w").T)
    return tm

