"""Parameter names, shapes and order (docs/MODEL.md §6, with issue 32's
"Readings fixed here": a sublayer's output norm `normK_out` right after its
input norm `normK` (`out` has only the `_out` ones), SwiGLU's gate `ffn.w3`
[d, d_ff] and `ffn.b3` in the order w1, b1, w3, b3, w2, b2, learned position
tables `src_pos` / `tgt_pos` [max_len, d] right after their embedding,
`bias = false` dropping every attention and FFN bias and the LayerNorm shift)."""
import numpy as np
import torch

from .base import RefError
from .config import FINAL_NORM, placement


def _norm_params(c, prefix):
    d = c["d"]
    if c["norm"] == "layernorm":
        return [(prefix + ".g", (d,))] + ([(prefix + ".b", (d,))] if c["bias"] else [])
    if c["norm"] == "rmsnorm":
        return [(prefix + ".g", (d,))]
    return []


def sublayer_norms(c, place, k):
    """Names of the norms of the k-th sublayer (1-based) of a block with the
    given placement, in the order of MODEL.md §6: (input norm, output norm),
    either None when the placement has no such norm."""
    nin, nout = f"norm{k}", f"norm{k}_out"
    if place == "peri":
        return nin, nout
    if place == "out":
        return None, nout
    return nin, None


def _sub_norm_params(c, prefix, place, k):
    out = []
    for n in sublayer_norms(c, place, k):
        if n is not None:
            out += _norm_params(c, f"{prefix}.{n}")
    return out


def _attn_params(c, prefix):
    d = c["d"]
    out = []
    for m in ("q", "k", "v", "o"):
        out.append((f"{prefix}.w{m}", (d, d)))
        if c["bias"]:
            out.append((f"{prefix}.b{m}", (d,)))
    return out


def _ffn_params(c, prefix):
    d, f = c["d"], c["d_ff"]
    out = [(prefix + ".w1", (d, f))] + ([(prefix + ".b1", (f,))] if c["bias"] else [])
    if c["activation"] == "swiglu":
        out += [(prefix + ".w3", (d, f))] + ([(prefix + ".b3", (f,))] if c["bias"] else [])
    out += [(prefix + ".w2", (f, d))] + ([(prefix + ".b2", (d,))] if c["bias"] else [])
    return out


def param_layout(c):
    """[(name, shape)] in the flat order of MODEL.md section 6."""
    d = c["d"]
    lay = []
    if c["has_enc"]:
        lay.append(("src_emb", (c["V_src"], d)))
        if c["pos"] == "learned":
            lay.append(("src_pos", (c["max_len"], d)))
    if c["has_dec"]:
        lay.append(("tgt_emb", (c["V_tgt"], d)))
        if c["pos"] == "learned":
            lay.append(("tgt_pos", (c["max_len"], d)))
    for l in range(c["L_enc"]):
        p, pl = f"enc.{l}", placement(c, "enc", l)
        lay += _attn_params(c, p + ".attn") + _sub_norm_params(c, p, pl, 1)
        lay += _ffn_params(c, p + ".ffn") + _sub_norm_params(c, p, pl, 2)
    if c["has_enc"] and c["norm_pos"] in FINAL_NORM:
        lay += _norm_params(c, "enc.final_norm")
    for l in range(c["L_dec"]):
        p, pl = f"dec.{l}", placement(c, "dec", l)
        lay += _attn_params(c, p + ".attn") + _sub_norm_params(c, p, pl, 1)
        if c["task"] == "seq2seq":
            lay += _attn_params(c, p + ".xattn") + _sub_norm_params(c, p, pl, 2)
            lay += _ffn_params(c, p + ".ffn") + _sub_norm_params(c, p, pl, 3)
        else:
            lay += _ffn_params(c, p + ".ffn") + _sub_norm_params(c, p, pl, 2)
    if c["has_dec"] and c["norm_pos"] in FINAL_NORM:
        lay += _norm_params(c, "dec.final_norm")
    if not c["tie_output"]:
        n_out = c["n_classes"] if c["task"] == "cls" else c["V_tgt"]
        lay.append(("out.w", (d, n_out)))
    return lay


def n_params(layout):
    return sum(int(np.prod(s)) for _, s in layout)


def unflatten(theta, layout):
    """Views of the flat vector theta, by name.  torch.split, not one slice per tensor:
    its backward is one concatenation, where slices would each build a full-size
    zero gradient (O(n_tensors * n_params) work)."""
    sizes = [int(np.prod(shape)) for _, shape in layout]
    parts = torch.split(theta, sizes)
    return {name: t.view(shape) for (name, shape), t in zip(layout, parts)}


def flatten_named(tensors, layout, what):
    """Named arrays (exactly the layout's names) -> flat float64 numpy vector."""
    names = {n for n, _ in layout}
    missing = [n for n, _ in layout if n not in tensors]
    extra = sorted(set(tensors) - names)
    if missing:
        raise RefError(f"{what}: missing tensor {missing[0]!r} ({len(missing)} missing)")
    if extra:
        raise RefError(f"{what}: unexpected tensor {extra[0]!r} for this configuration")
    parts = []
    for name, shape in layout:
        a = np.asarray(tensors[name])
        if a.dtype != np.dtype("<f8"):
            raise RefError(f"{what}: tensor {name!r} has dtype {a.dtype}, expected F64")
        if tuple(a.shape) != tuple(shape):
            raise RefError(f"{what}: tensor {name!r} has shape {list(a.shape)}, "
                           f"expected {list(shape)}")
        parts.append(a.reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)
