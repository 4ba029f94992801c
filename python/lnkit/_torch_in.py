"""torch.nn modules -> lnkit (lnkit.torch_io.from_torch): the modules are
checked (what lnkit cannot express is refused with the module's name and
why), described (heads, activation, eps, norm type and placement), and their
state (or gradients) handed to torch_io.from_state_dict, the one mapping of
names and shapes.  Imports torch (only lnkit.torch_io imports this module)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._lib import Error
from .torch_io import PREFIX, _refuse, from_state_dict
from . import _torch_out

_PARTS = ("transformer", "encoder", "decoder", "src_emb", "tgt_emb", "src_pos", "tgt_pos",
          "output", "encoder_norm", "decoder_norm")


class _Seen:
    """What the modules say, checked to agree across the whole model."""

    def __init__(self):
        self.vals = {}

    def same(self, key, value, where):
        if key not in self.vals:
            self.vals[key] = (value, where)
        elif self.vals[key][0] != value:
            v0, w0 = self.vals[key]
            _refuse(where, "%s %r differs from %s's %r: lnkit has one %s for the model"
                    % (key, value, w0, v0, key))


def _activation(a, where):
    if a is F.relu or a is torch.relu or isinstance(a, nn.ReLU):
        return "relu"
    if a is F.gelu or (isinstance(a, nn.GELU) and a.approximate == "none"):
        return "gelu"
    if isinstance(a, nn.GELU):
        _refuse(where, "GELU(approximate=%r): lnkit's gelu is the exact one (erf)" % a.approximate)
    _refuse(where, "activation %r: lnkit has relu, gelu (exact) and swiglu; a custom "
            "activation cannot be mapped" % (getattr(a, "__name__", None) or a,))


def _norm_kind(m, where, seen, d):
    if isinstance(m, nn.Identity):
        seen.same("norm", "none", where)
        return
    if isinstance(m, nn.LayerNorm):
        if not m.elementwise_affine:
            _refuse(where, "LayerNorm(elementwise_affine=False): lnkit's LayerNorm has its gain "
                    "and shift")
        kind = "layernorm"
    elif isinstance(m, _torch_out.RMSNorm) or (hasattr(nn, "RMSNorm") and
                                               isinstance(m, getattr(nn, "RMSNorm"))):
        if getattr(m, "eps", None) is None or getattr(m, "weight", None) is None:
            _refuse(where, "RMSNorm without eps or weight: lnkit's has both")
        kind = "rmsnorm"
    else:
        _refuse(where, "%s: lnkit's norms are nn.LayerNorm, lnkit.torch_io.RMSNorm and "
                "nn.Identity (none)" % type(m).__name__)
    if tuple(m.normalized_shape) != (d,):
        _refuse(where, "normalized_shape %s, expected (%d,)" % (tuple(m.normalized_shape), d))
    seen.same("norm", kind, where)
    seen.same("layer_norm_eps", float(m.eps), where)


def _mha(m, where, seen, d):
    if not isinstance(m, nn.MultiheadAttention):
        _refuse(where, "%s is not nn.MultiheadAttention" % type(m).__name__)
    if m.embed_dim != d:
        _refuse(where, "embed_dim %d, the embeddings' d is %d" % (m.embed_dim, d))
    if m.kdim != d or m.vdim != d:
        _refuse(where, "kdim %d, vdim %d: lnkit's keys and values have width d = %d"
                % (m.kdim, m.vdim, d))
    if m.bias_k is not None or m.bias_v is not None:
        _refuse(where, "add_bias_kv: lnkit's attention has no extra key/value biases")
    if m.add_zero_attn:
        _refuse(where, "add_zero_attn: lnkit's attention has no zero key/value")
    if m.in_proj_bias is None:
        _refuse(where, "bias=False: lnkit's bias=false also removes the LayerNorm shifts, which "
                "torch 1.13's layers always have")
    seen.same("nhead", m.num_heads, where)
    return m.dropout


def _layer(layer, where, cross, seen, d):
    base = nn.TransformerDecoderLayer if cross else nn.TransformerEncoderLayer
    if not isinstance(layer, base):
        _refuse(where, "%s is not nn.%s: its forward is unknown to lnkit"
                % (type(layer).__name__, base.__name__))
    for meth in ("forward", "_sa_block", "_mha_block", "_ff_block"):
        if hasattr(base, meth) and getattr(type(layer), meth) is not getattr(base, meth):
            _refuse(where, "%s overrides %s: only torch.nn's own computation is mapped"
                    % (type(layer).__name__, meth))
    drops = [("self_attn", _mha(layer.self_attn, where + ".self_attn", seen, d))]
    if cross:
        drops.append(("multihead_attn", _mha(layer.multihead_attn, where + ".multihead_attn",
                                             seen, d)))
    for k in ("dropout", "dropout1", "dropout2", "dropout3"):
        if hasattr(layer, k):
            drops.append((k, getattr(layer, k).p))
    for k, p in drops:
        if p > 0 and layer.training:
            _refuse("%s.%s" % (where, k), "dropout %g in training mode: lnkit's loss has no "
                    "dropout; call model.eval() or build the layers with dropout=0" % p)
    seen.same("activation", _activation(layer.activation, where + ".activation"), where)
    for k in ("norm1", "norm2", "norm3"):
        if hasattr(layer, k):
            _norm_kind(getattr(layer, k), "%s.%s" % (where, k), seen, d)
    return bool(layer.norm_first)


def _embedding(m, where, d=None):
    if not isinstance(m, nn.Embedding):
        _refuse(where, "%s is not nn.Embedding" % type(m).__name__)
    if m.padding_idx not in (None, 0):
        _refuse(where, "padding_idx %d: lnkit's <pad> is id 0 (MODEL.md §1), and torch keeps "
                "that row's gradient at zero" % m.padding_idx)
    if m.max_norm is not None:
        _refuse(where, "max_norm %g: the lookup renormalises rows, lnkit's does not" % m.max_norm)
    if m.scale_grad_by_freq:
        _refuse(where, "scale_grad_by_freq: the gradient is not the loss's")
    if d is not None and m.embedding_dim != d:
        _refuse(where, "embedding_dim %d, expected d = %d" % (m.embedding_dim, d))


def _tensors(mod, prefix, grad, out):
    """mod's parameters (or their .grad) under prefix."""
    if grad:
        for k, p in mod.named_parameters():
            if p.grad is None:
                raise Error("torch_io: %s.%s has no .grad (run backward first)" % (prefix, k))
            out["%s.%s" % (prefix, k)] = p.grad
    else:
        for k, v in mod.state_dict().items():
            out["%s.%s" % (prefix, k)] = v


def _parts(a):
    m = a["model"]
    p = {k: a[k] for k in _PARTS}
    if m is not None:
        for k in _PARTS:
            if p[k] is None and getattr(m, k, None) is not None:
                p[k] = getattr(m, k)
    if p["transformer"] is not None:
        t = p["transformer"]
        if not isinstance(t, nn.Transformer):
            _refuse("transformer", "%s is not nn.Transformer" % type(t).__name__)
        p["encoder"] = p["encoder"] or t.encoder
        p["decoder"] = p["decoder"] or t.decoder
    return p


def convert(a):
    p = _parts(a)
    model = a["model"]
    opts = {k: a[k] for k in ("task", "pos", "input_scale", "label_smoothing")}
    if isinstance(model, _torch_out.TorchModel):   # its forward's settings are its config's
        c = model.config
        defaults = {"task": None, "pos": None, "input_scale": 1.0, "label_smoothing": 0.0}
        for k in opts:
            if opts[k] == defaults[k]:
                opts[k] = c.get(k, {"pos": "sinusoidal"}.get(k, defaults[k]))
    task = opts["task"]
    if task is None:
        task = {(True, True): "seq2seq", (False, True): "lm",
                (True, False): "cls"}.get((p["encoder"] is not None, p["decoder"] is not None))
        if task is None:
            raise Error("torch_io: from_torch: no encoder or decoder given")
    if task not in ("lm", "cls", "seq2seq"):
        raise Error("torch_io: from_torch: task %r, expected lm, cls or seq2seq" % (task,))
    if task == "lm" and p["decoder"] is None:      # a decoder-only stack given as "encoder"
        p["decoder"], p["encoder"] = p["encoder"], None
        p["decoder_norm"] = p["decoder_norm"] or p["encoder_norm"]
    if task == "cls" and p["encoder"] is None:
        p["encoder"], p["decoder"] = p["decoder"], None
        p["encoder_norm"] = p["encoder_norm"] or p["decoder_norm"]
    sides = {"cls": ["src"], "lm": ["tgt"], "seq2seq": ["src", "tgt"]}[task]
    for s in sides:
        if p[s + "_emb"] is None:
            raise Error("torch_io: from_torch: task %s needs %s_emb (the token embedding)"
                        % (task, s))
    d = p[sides[0] + "_emb"].embedding_dim
    state, seen, flags = {}, _Seen(), {}
    for s in sides:
        _embedding(p[s + "_emb"], PREFIX[s + "_emb"], d)
        _tensors(p[s + "_emb"], PREFIX[s + "_emb"], a["grad"], state)
        if p[s + "_pos"] is not None:
            _embedding(p[s + "_pos"], PREFIX[s + "_pos"], d)
            _tensors(p[s + "_pos"], PREFIX[s + "_pos"], a["grad"], state)
    stacks = [("encoder", False)] if task != "lm" else []
    stacks += [("decoder", task == "seq2seq")] if task != "cls" else []
    for part, cross in stacks:
        mod = p[part]
        if mod is None:
            raise Error("torch_io: from_torch: task %s needs %s" % (task, part))
        if isinstance(mod, (nn.TransformerEncoder, nn.TransformerDecoder)):
            layers, final = list(mod.layers), mod.norm
            if p[part + "_norm"] is not None:
                _refuse(part + "_norm", "given beside %s.norm" % part)
        elif isinstance(mod, (list, tuple, nn.ModuleList)):
            layers, final = list(mod), p[part + "_norm"]
        else:
            _refuse(part, "%s: expected nn.TransformerEncoder / -Decoder or a list of their "
                    "layers" % type(mod).__name__)
        if not layers:
            _refuse(part, "no layers")
        P = PREFIX[part]
        flags[part] = [_layer(l, "%s.layers.%d" % (P, i), cross, seen, d)
                       for i, l in enumerate(layers)]
        for i, l in enumerate(layers):
            _tensors(l, "%s.layers.%d" % (P, i), a["grad"], state)
        if final is not None:
            _norm_kind(final, P + ".norm", seen, d)
            if not isinstance(final, nn.Identity):
                _tensors(final, P + ".norm", a["grad"], state)
    E = p["src_emb" if task == "cls" else "tgt_emb"]
    out = p["output"]
    tie = out is None
    if out is not None:
        if not isinstance(out, nn.Linear):
            _refuse(PREFIX["output"], "%s is not nn.Linear" % type(out).__name__)
        if out.bias is not None:
            _refuse(PREFIX["output"], "a bias (Linear(bias=True)): lnkit's logits are z W_out "
                    "(MODEL.md §4); build it with bias=False")
        tie = out.weight is E.weight
        if not tie:
            _tensors(out, PREFIX["output"], a["grad"], state)
    pos = opts["pos"]
    if pos is None:
        pos = "learned" if any(p[s + "_pos"] is not None for s in sides) else "sinusoidal"
    scale = math.sqrt(d) if pos == "sinusoidal" else 1.0
    if a["emb_scale"] is not None and a["emb_scale"] != scale:
        _refuse(PREFIX[sides[0] + "_emb"], "embedding scale %r with %s positions: lnkit's is "
                "%r (MODEL.md §2: sqrt(d) with sinusoidal, 1 otherwise)"
                % (a["emb_scale"], pos, scale))
    v = seen.vals
    spec = {"task": task, "nhead": v["nhead"][0], "activation": v["activation"][0],
            "norm": v["norm"][0], "norm_first": flags, "pos": pos, "tie_output": tie,
            "label_smoothing": opts["label_smoothing"], "input_scale": opts["input_scale"]}
    if "layer_norm_eps" in v:
        spec["layer_norm_eps"] = v["layer_norm_eps"][0]
    return from_state_dict(state, spec)
