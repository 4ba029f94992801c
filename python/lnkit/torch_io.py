"""PyTorch models in and out: a model built from torch.nn's transformer layers,
embeddings, norms and linear maps (or its state_dict and a description) to
lnkit's configuration (MODEL.md §8) and weights (§6), and back.

    cfg, w = lnkit.torch_io.from_torch(task="lm", decoder=my.blocks, tgt_emb=my.tok,
                                       tgt_pos=my.wpe, output=my.head)
    m = lnkit.torch_io.to_model(cfg, w)             # an lnkit.Model with these weights
    lnkit.torch_io.save(cfg, w, "m.json", "m.safetensors")
    cfg, w = lnkit.torch_io.from_state_dict(sd, {"task": "seq2seq", "nhead": 8, ...})
    tm = lnkit.torch_io.to_torch(m)                 # torch.nn model, tm(src=, tgt=) -> loss

docs/torch.md gives the mapping module by module, the description's keys, the
conventions a forward must follow (embedding scale, masks, loss) and every
refusal.  Conversions are exact: matrices are transposed (lnkit's y = x W + b,
W [in, out]; torch's Linear y = x W^T + b), the packed in_proj of
nn.MultiheadAttention is split into wq, wk, wv; no value is rounded.
What lnkit's model cannot express is refused with a ConversionError (an
lnkit.Error) naming the module and why.  torch is imported only by the
functions that need it; the rest of lnkit never imports it.
"""
import math

import numpy as np

from ._lib import Error

# RMSNorm, NoNorm and TorchModel (torch.nn modules) are attributes made on first use
__all__ = ["ConversionError", "from_torch", "from_state_dict", "to_torch", "to_model", "save",
           "PREFIX"]


class ConversionError(Error):
    """A model (or a configuration) that the other side cannot express."""


def _refuse(where, why):
    raise ConversionError("torch_io: %s: %s" % (where, why))


def _torch():
    try:
        import torch
    except ImportError:
        raise Error("torch_io: PyTorch is not installed (Debian: python3-torch)") from None
    return torch


# state_dict prefixes of a model's parts (from_state_dict's default; to_torch's names)
PREFIX = {"src_emb": "src_emb", "src_pos": "src_pos", "tgt_emb": "tgt_emb",
          "tgt_pos": "tgt_pos", "encoder": "encoder", "decoder": "decoder", "output": "output"}
_SPEC_KEYS = {"task", "nhead", "activation", "layer_norm_eps", "norm", "norm_first", "pos",
              "tie_output", "label_smoothing", "input_scale", "prefix", "ignore"}


def _np(t):
    if hasattr(t, "detach"):
        t = t.detach().cpu().double().numpy()
    return np.array(t, dtype=np.float64)   # a copy


# ---------------------------------------------------------------------------
# state_dict -> lnkit (no torch needed)

class _State:
    """The state_dict's arrays, read once each; what is left is an error."""

    def __init__(self, state, ignore):
        self.s = dict(state)
        self.used = set()
        self.ignore = list(ignore or ())

    def has(self, k):
        return k in self.s

    def get(self, k, shape=None, what=None):
        if k not in self.s:
            _refuse(what or k, "missing from the state_dict (expected %s)" % k)
        a = _np(self.s[k])
        if shape is not None and a.shape != tuple(shape):
            _refuse(k, "shape %s, expected %s" % (list(a.shape), list(shape)))
        self.used.add(k)
        return a

    def leftover(self):
        out = []
        for k in self.s:
            if k in self.used or any(k == p or (p.endswith(".") and k.startswith(p))
                                     for p in self.ignore):
                continue
            out.append(k)
        return out


def _layers_of(st, prefix):
    """Number of layers of the stack under prefix ("P.layers.N. ...")."""
    idx = set()
    head = prefix + ".layers."
    for k in st.s:
        if k.startswith(head):
            n = k[len(head):].split(".", 1)[0]
            if n.isdigit():
                idx.add(int(n))
    if idx and idx != set(range(len(idx))):
        _refuse(prefix, "layers %s are not numbered 0 .. N-1" % sorted(idx))
    return len(idx)


def _attn(st, P, d, out, name):
    """nn.MultiheadAttention at P -> lnkit's attention tensors (name.w*, name.b*)."""
    for bad in ("bias_k", "bias_v"):
        if st.has(P + "." + bad):
            _refuse(P, "add_bias_kv: lnkit's attention has no extra key/value biases")
    if st.has(P + ".in_proj_weight"):
        W = st.get(P + ".in_proj_weight", (3 * d, d))
        ws = [W[:d], W[d:2 * d], W[2 * d:]]
    else:
        ws = [st.get("%s.%s_proj_weight" % (P, x), (d, d), P) for x in "qkv"]
    if not st.has(P + ".in_proj_bias"):
        _refuse(P, "no in_proj_bias (bias=False): lnkit's bias=false also removes the "
                "LayerNorm shifts, which torch 1.13's layers always have")
    b = st.get(P + ".in_proj_bias", (3 * d,))
    for i, x in enumerate("qkv"):
        out["%s.w%s" % (name, x)] = ws[i].T.copy()
        out["%s.b%s" % (name, x)] = b[i * d:(i + 1) * d].copy()
    out[name + ".wo"] = st.get(P + ".out_proj.weight", (d, d)).T.copy()
    if not st.has(P + ".out_proj.bias"):
        _refuse(P + ".out_proj", "no bias (bias=False): see in_proj_bias")
    out[name + ".bo"] = st.get(P + ".out_proj.bias", (d,))


def _norm(st, P, d, kind, out, name):
    if kind == "none":
        for k in (P + ".weight", P + ".bias"):
            if st.has(k):
                _refuse(k, "a norm's parameter with norm = none")
        return
    out[name + ".g"] = st.get(P + ".weight", (d,))
    if kind == "layernorm":
        if not st.has(P + ".bias"):
            _refuse(P, "LayerNorm without bias: lnkit's LayerNorm has its shift b with bias=true")
        out[name + ".b"] = st.get(P + ".bias", (d,))
    elif st.has(P + ".bias"):
        _refuse(P + ".bias", "an RMSNorm has no shift")


def _stack(st, P, stack, cross, d, kind, out):
    """Layers of a TransformerEncoder (or Decoder, cross) at P -> lnkit's
    tensors of stack ("enc" or "dec"); (L, d_ff, has_final_norm)."""
    L = _layers_of(st, P)
    if L == 0:
        _refuse(P, "no layers in the state_dict (expected %s.layers.0...)" % P)
    d_ff = None
    for l in range(L):
        M, N = "%s.layers.%d" % (P, l), "%s.%d" % (stack, l)
        _attn(st, M + ".self_attn", d, out, N + ".attn")
        _norm(st, M + ".norm1", d, kind, out, N + ".norm1")
        if cross:
            _attn(st, M + ".multihead_attn", d, out, N + ".xattn")
            _norm(st, M + ".norm2", d, kind, out, N + ".norm2")
        elif st.has(M + ".multihead_attn.out_proj.weight"):
            _refuse(M, "a decoder layer (cross-attention) where the task has none")
        w1 = st.get(M + ".linear1.weight")
        if d_ff is None:
            d_ff = w1.shape[0]
        if w1.shape != (d_ff, d):
            _refuse(M + ".linear1", "weight %s, expected [%d, %d] (one d_ff for every layer)"
                    % (list(w1.shape), d_ff, d))
        out[N + ".ffn.w1"] = w1.T.copy()
        out[N + ".ffn.b1"] = st.get(M + ".linear1.bias", (d_ff,))
        out[N + ".ffn.w2"] = st.get(M + ".linear2.weight", (d, d_ff)).T.copy()
        out[N + ".ffn.b2"] = st.get(M + ".linear2.bias", (d,))
        k = 3 if cross else 2
        _norm(st, "%s.norm%d" % (M, k), d, kind, out, "%s.norm%d" % (N, k))
    final = st.has(P + ".norm.weight")
    if final:
        _norm(st, P + ".norm", d, kind, out, stack + ".final_norm")
    return L, d_ff, final


def _placement(where, flags, final, kind):
    """norm_first flags of a stack's layers and its final norm -> (norm_pos, k):
    post (no final norm), pre, or mix with k Post-LN layers first."""
    k = 0
    while k < len(flags) and not flags[k]:
        k += 1
    if any(not f for f in flags[k:]):
        _refuse(where, "a post-norm layer after a pre-norm one: lnkit's mix puts the "
                "Post-LN layers first (MODEL.md §3)")
    if kind == "none":   # every norm is the identity: the placements agree; keep the flags'
        return ("post", 0) if k == len(flags) else ("pre", 0) if k == 0 else ("mix", k)
    if not final:
        if k < len(flags):
            _refuse(where, "pre-norm layers (norm_first=True) without a final norm: lnkit's "
                    "pre and mix end the stack with one (MODEL.md §3)")
        return "post", 0
    return ("pre", 0) if k == 0 else ("mix", k)


def _mix_ratio(splits):
    """The least rho in [0, 1] with floor(rho L) = k for every (L, k), or None."""
    lo = max(k / L for L, k in splits)
    hi = min((k + 1) / L if k < L else 1.0 for L, k in splits)
    for rho in (lo, math.nextafter(lo, 2.0)):
        if rho <= hi and rho <= 1.0 and all(math.floor(rho * L) == k for L, k in splits):
            return rho
    return None


def _embeddings(st, pf, sides, pos, h):
    """Token embeddings and learned position tables -> (weights, d, pos, max_len)."""
    w = {}
    emb = {s: st.get(pf[s + "_emb"] + ".weight", what=pf[s + "_emb"]) for s in sides}
    d = emb[sides[0]].shape[1]
    if d % h:
        _refuse("spec", "nhead %d does not divide d_model %d" % (h, d))
    learned = [s for s in sides if st.has(pf[s + "_pos"] + ".weight")]
    if pos is None:
        pos = "learned" if learned else "sinusoidal"
    if pos not in ("sinusoidal", "learned", "none"):
        _refuse("spec", "pos %r: torch.nn has sinusoidal (by hand), learned (nn.Embedding) or "
                "none; rotary positions are not in nn.MultiheadAttention" % (pos,))
    max_len = None
    for s in sides:
        if emb[s].ndim != 2 or emb[s].shape[1] != d:
            _refuse(pf[s + "_emb"], "weight %s, expected [V, %d]" % (list(emb[s].shape), d))
        w[s + "_emb"] = emb[s]
        if pos == "learned":
            P = st.get(pf[s + "_pos"] + ".weight", what=pf[s + "_pos"])
            if P.ndim != 2 or P.shape[1] != d or (max_len is not None and P.shape[0] != max_len):
                _refuse(pf[s + "_pos"], "weight %s, expected [max_len, %d] (one max_len for "
                        "both sides)" % (list(P.shape), d))
            max_len = P.shape[0]
            w[s + "_pos"] = P
        elif s in learned:
            _refuse(pf[s + "_pos"], "a position table with pos = %s" % pos)
    if pos == "sinusoidal" and d % 2:
        _refuse("spec", "sinusoidal positions need d_model even, got %d" % d)
    return w, d, pos, max_len


def _output(st, O, E, tie, d, w):
    """The output layer at O (none when tied: then a stored copy must equal E)."""
    if st.has(O + ".bias"):
        _refuse(O, "a bias on the output layer: lnkit's logits are z W_out (MODEL.md §4)")
    if st.has(O + ".weight"):
        Wo = st.get(O + ".weight")
        if tie and not np.array_equal(Wo, E):
            _refuse(O, "tie_output, but its weight differs from the embedding's")
        if not tie:
            if Wo.ndim != 2 or Wo.shape[1] != d:
                _refuse(O, "weight %s, expected [n_out, %d]" % (list(Wo.shape), d))
            w["out.w"] = Wo.T.copy()
    elif not tie:
        _refuse(O, "no output weight (%s.weight) and tie_output is not set" % O)


def from_state_dict(state, spec):
    """(config, weights) from a state_dict (names -> tensors or arrays) and its
    description spec (docs/torch.md): task, nhead, and where they differ from
    the defaults activation ("relu"), layer_norm_eps (1e-5), norm
    ("layernorm"), norm_first (False; or {"encoder": [...], "decoder": [...]}),
    pos ("sinusoidal"; "learned" when the position tables are there),
    tie_output, label_smoothing, input_scale, prefix (the parts' prefixes,
    PREFIX by default) and ignore (keys or "prefix." to leave out).  weights
    is a dict of float64 arrays in lnkit's names and order."""
    if not isinstance(spec, dict):
        raise Error("torch_io: spec: expected a dict (docs/torch.md), got %s"
                    % type(spec).__name__)
    bad = sorted(set(spec) - _SPEC_KEYS)
    if bad:
        raise Error("torch_io: spec: unknown key %r (known: %s)" % (bad[0], sorted(_SPEC_KEYS)))
    pf = dict(PREFIX, **(spec.get("prefix") or {}))
    st = _State(state, spec.get("ignore"))
    task = spec.get("task")
    if task not in ("lm", "cls", "seq2seq"):
        raise Error("torch_io: spec: task %r, expected lm, cls or seq2seq" % (task,))
    h = spec.get("nhead")
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise Error("torch_io: spec: nhead %r, expected the number of heads (the state_dict "
                    "does not hold it)" % (h,))
    act = spec.get("activation", "relu")
    if act not in ("relu", "gelu"):
        _refuse("spec", "activation %r: torch.nn's layers have relu and gelu" % (act,))
    kind = spec.get("norm", "layernorm")
    if kind not in ("layernorm", "rmsnorm", "none"):
        raise Error("torch_io: spec: norm %r, expected layernorm, rmsnorm or none" % (kind,))
    has_enc, has_dec = task in ("cls", "seq2seq"), task in ("lm", "seq2seq")
    sides = (["src"] if has_enc else []) + (["tgt"] if has_dec else [])
    w, d, pos, max_len = _embeddings(st, pf, sides, spec.get("pos"), h)
    flags = spec.get("norm_first", False)
    stacks, L, d_ff, place = [], {}, set(), {}
    if has_enc:
        stacks.append(("enc", "encoder", False))
    if has_dec:
        stacks.append(("dec", "decoder", task == "seq2seq"))
    for stack, part, cross in stacks:
        P = pf[part]
        n, f, final = _stack(st, P, stack, cross, d, kind, w)
        L[stack] = n
        d_ff.add(f)
        fl = flags.get(part, [False] * n) if isinstance(flags, dict) else [bool(flags)] * n
        if len(fl) != n:
            _refuse(P, "norm_first lists %d layers, the state_dict %d" % (len(fl), n))
        place[stack] = _placement(P, list(fl), final, kind)
    if len(d_ff) > 1:
        _refuse("spec", "the encoder and decoder have different dim_feedforward %s" % d_ff)
    kinds = {p for p, _ in place.values()}
    if len(kinds) > 1 and kind == "none":   # identity norms: the placements agree
        kinds, place = {"pre"}, {s: ("pre", 0) for s in place}
    if len(kinds) > 1 and kinds - {"pre", "mix"}:
        _refuse("spec", "the stacks have different norm placements %s" % sorted(kinds))
    norm_pos = "mix" if "mix" in kinds else kinds.pop()
    rho = None
    if norm_pos == "mix":
        rho = _mix_ratio([(L[s], k) for s, (_, k) in place.items()])
        if rho is None:
            _refuse("spec", "no mix_ratio gives %s Post-LN layers (floor(rho L) per stack)"
                    % {s: (k, L[s]) for s, (_, k) in place.items()})
    tie = bool(spec.get("tie_output", False))
    E = w["src_emb"] if task == "cls" else w["tgt_emb"]
    _output(st, pf["output"], E, tie, d, w)
    left = st.leftover()
    if left:
        _refuse(left[0], "not mapped to lnkit (%d such keys; put buffers and other modules "
                "in spec['ignore'])" % len(left))
    eps = float(spec.get("layer_norm_eps", 1e-5))
    cfg = {"task": task, "norm_pos": norm_pos, "norm": kind, "d": d, "h": h,
           "d_ff": d_ff.pop(), "eps": eps, "tie_output": tie}
    if has_enc:
        cfg["L_enc"], cfg["V_src"] = L["enc"], w["src_emb"].shape[0]
    if has_dec:
        cfg["L_dec"], cfg["V_tgt"] = L["dec"], w["tgt_emb"].shape[0]
    cfg["L"] = L["enc"] if has_enc else L["dec"]
    cfg["V"] = cfg["V_src"] if task == "cls" else cfg["V_tgt"]
    if task == "cls":
        cfg["n_classes"] = E.shape[0] if tie else w["out.w"].shape[1]
    for k, v, default in (("label_smoothing", spec.get("label_smoothing", 0.0), 0.0),
                          ("input_scale", spec.get("input_scale", 1.0), 1.0),
                          ("activation", act, "relu"), ("pos", pos, "sinusoidal")):
        if v != default:
            cfg[k] = v
    if max_len is not None:
        cfg["max_len"] = max_len
    if rho is not None:
        cfg["mix_ratio"] = rho
    return cfg, _ordered(cfg, w)


def _ordered(cfg, w):
    """The weights in lnkit's order (MODEL.md §6), the library's layout of cfg."""
    from ._model import Model
    names = Model(cfg, _init=False).names
    if set(names) != set(w):
        raise Error("torch_io: internal: the mapped tensors %s differ from the layout's %s"
                    % (sorted(set(w) - set(names))[:3], sorted(set(names) - set(w))[:3]))
    return {n: w[n] for n in names}


# ---------------------------------------------------------------------------
# lnkit side: an lnkit.Model, files

def to_model(config, weights):
    """An lnkit.Model of config with these weights (every tensor of the layout,
    no other)."""
    from ._model import Model
    m = Model(config, _init=False)
    names = set(m.names)
    missing = [n for n in m.names if n not in weights]
    extra = sorted(set(weights) - names)
    if missing or extra:
        raise Error("torch_io: the weights do not match the configuration's tensors: %s"
                    % ("missing %r" % missing[0] if missing else "unexpected %r" % extra[0]))
    for n in m.names:
        a = np.asarray(weights[n], dtype=np.float64)
        if a.shape != m.params[n].shape:
            raise Error("torch_io: tensor %r has shape %s, the configuration's is %s"
                        % (n, list(a.shape), list(m.params[n].shape)))
        m.params[n] = a
    m.theta = m.theta   # checks finiteness
    return m


def save(config, weights, config_path, weights_path):
    """Write the configuration (JSON, as `lnkit init` does) and the weights
    (safetensors, lnkit's names and order) through the library, with their
    record (docs/MODEL.md section 9: this call, the configuration's SHA-256)."""
    to_model(config, weights)._save("python: lnkit.torch_io.save", "weights given to "
                                    "torch_io.save, in lnkit's names and order (docs/torch.md)",
                                    weights_path, config_path)


# ---------------------------------------------------------------------------
# torch.nn modules -> lnkit

def from_torch(model=None, *, task=None, transformer=None, encoder=None, decoder=None,
               src_emb=None, tgt_emb=None, src_pos=None, tgt_pos=None, output=None,
               encoder_norm=None, decoder_norm=None, pos=None, emb_scale=None,
               input_scale=1.0, label_smoothing=0.0, grad=False):
    """(config, weights) of a model built from torch.nn modules.  The parts are
    given by keyword or taken from model's attributes of these names (a model
    of to_torch has them all): embeddings (nn.Embedding), learned position
    tables, encoder / decoder (nn.TransformerEncoder / -Decoder, a sequence of
    their layers with encoder_norm / decoder_norm, or transformer =
    nn.Transformer), output (nn.Linear without bias; None, or sharing the
    embedding's weight: tied).  The model's forward must follow lnkit's
    conventions (docs/torch.md); pos, emb_scale, input_scale and
    label_smoothing say what the forward does where modules cannot tell.
    grad=True maps the parameters' .grad instead of their values."""
    args = dict(locals())
    _torch()
    from . import _torch_in
    return _torch_in.convert(args)


# ---------------------------------------------------------------------------
# lnkit -> torch.nn modules

def to_torch(config, weights=None):
    """A TorchModel (torch.nn modules, float64) computing lnkit's loss: config
    is an lnkit.Model (its configuration and weights) or a configuration dict;
    weights a dict of lnkit's names, a safetensors path, or None (lnkit's
    initialisation of the configuration, MODEL.md §5)."""
    from ._model import Model
    _torch()
    from . import _torch_out
    if isinstance(config, Model):
        m = config
        if weights is not None:
            raise Error("torch_io: to_torch: an lnkit.Model carries its weights; weights must "
                        "be None")
    elif isinstance(weights, dict):
        m = to_model(config, weights)
    else:
        m = Model(config, _init=weights is None)
        if weights is not None:
            m.load_weights(weights)
    return _torch_out.build(m.config, m.params)


def __getattr__(name):
    if name in ("RMSNorm", "NoNorm", "TorchModel"):
        _torch()
        from . import _torch_out
        return getattr(_torch_out, name)
    raise AttributeError("module 'lnkit.torch_io' has no attribute %r" % name)
