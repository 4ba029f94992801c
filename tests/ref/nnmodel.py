"""The same model built from torch.nn's own transformer modules, for the
variants torch.nn expresses (torch 1.13): nn.TransformerEncoder/-Decoder of
nn.TransformerEncoderLayer/-DecoderLayer with norm_first False (post) or True
(pre; mix as a per-layer choice), activation relu or gelu, biases on,
LayerNorm (or nn.Identity for norm = none), no qk_norm, any positions but
rope, any task.  The embeddings, positions and output are written here
another way than in model.py (the exp/log form of the sinusoidal table,
F.cross_entropy with its label_smoothing).

The modules' parameters are bound to functions of the flat vector with
torch.nn.utils.stateless.functional_call, so that autograd gives the
gradient in the flat order of MODEL.md §6."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.stateless import functional_call

from .base import PAD, RefError
from .config import FINAL_NORM, placement
from .layout import unflatten


def expressible(c):
    """None if torch.nn expresses configuration c, else why not."""
    if c["norm_pos"] not in ("post", "pre", "mix"):
        return f"norm_pos {c['norm_pos']}: torch.nn's layers are post (norm_first=False) or pre"
    if c["norm"] == "rmsnorm":
        return "norm rmsnorm: torch 1.13 has no RMSNorm module"
    if c["qk_norm"] != "none":
        return "qk_norm: nn.MultiheadAttention has no query/key norm"
    if c["activation"] == "swiglu":
        return "activation swiglu: the layers' FFN has two matrices"
    if not c["bias"]:
        return "bias false: torch 1.13's layers always have biases"
    if c["pos"] == "rope":
        return "pos rope: nn.MultiheadAttention has no rotary positions"
    return None


def pe_alt(T, d):
    """Sinusoidal table written another way (exp/log form)."""
    pe = torch.zeros(T, d, dtype=torch.float64)
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def _layer(c, cls, pre):
    m = cls(d_model=c["d"], nhead=c["h"], dim_feedforward=c["d_ff"], dropout=0.0,
            activation=c["activation"], layer_norm_eps=c["eps"], batch_first=True,
            norm_first=pre, dtype=torch.float64)
    if c["norm"] == "none":
        for k in ("norm1", "norm2", "norm3"):
            if hasattr(m, k):
                setattr(m, k, nn.Identity())
    return m


def build(c):
    """{"enc": module or None, "dec": module or None}: nn.TransformerEncoder for
    the encoder and for lm's decoder (a self-attention-only block is an
    encoder layer under a causal mask), nn.TransformerDecoder for seq2seq."""
    out = {"enc": None, "dec": None}
    for stack, L in (("enc", c["L_enc"]), ("dec", c["L_dec"])):
        if L == 0:
            continue
        cross = stack == "dec" and c["task"] == "seq2seq"
        cls = nn.TransformerDecoderLayer if cross else nn.TransformerEncoderLayer
        layers = [_layer(c, cls, placement(c, stack, l) == "pre") for l in range(L)]
        norm = None
        if c["norm_pos"] in FINAL_NORM and c["norm"] == "layernorm":
            norm = nn.LayerNorm(c["d"], eps=c["eps"], dtype=torch.float64)
        if cross:
            m = nn.TransformerDecoder(layers[0], L, norm=norm)
        else:
            m = nn.TransformerEncoder(layers[0], L, norm=norm, enable_nested_tensor=False)
        m.layers = nn.ModuleList(layers)
        out[stack] = m.train()   # dropout is 0; training mode keeps the generic kernels
    return out


def _bind(c, p, stack, L):
    """torch.nn parameter names of a stack -> tensors made from p (lnkit's names):
    in_proj_weight = [Wq^T; Wk^T; Wv^T] (torch's Linear is y = x W^T + b)."""
    out = {}

    def attn(dst, src):
        out[dst + ".in_proj_weight"] = torch.cat([p[src + ".wq"].t(), p[src + ".wk"].t(),
                                                  p[src + ".wv"].t()], 0)
        out[dst + ".in_proj_bias"] = torch.cat([p[src + ".bq"], p[src + ".bk"], p[src + ".bv"]])
        out[dst + ".out_proj.weight"] = p[src + ".wo"].t()
        out[dst + ".out_proj.bias"] = p[src + ".bo"]

    def norm(dst, src):
        if c["norm"] == "layernorm":
            out[dst + ".weight"] = p[src + ".g"]
            out[dst + ".bias"] = p[src + ".b"]

    cross = stack == "dec" and c["task"] == "seq2seq"
    for l in range(L):
        P, M = f"{stack}.{l}", f"layers.{l}"
        attn(M + ".self_attn", P + ".attn")
        norm(M + ".norm1", P + ".norm1")
        if cross:
            attn(M + ".multihead_attn", P + ".xattn")
            norm(M + ".norm2", P + ".norm2")
        out[M + ".linear1.weight"] = p[P + ".ffn.w1"].t()
        out[M + ".linear1.bias"] = p[P + ".ffn.b1"]
        out[M + ".linear2.weight"] = p[P + ".ffn.w2"].t()
        out[M + ".linear2.bias"] = p[P + ".ffn.b2"]
        norm(M + (".norm3" if cross else ".norm2"), P + (".norm3" if cross else ".norm2"))
    if c["norm_pos"] in FINAL_NORM:
        norm("norm", stack + ".final_norm")
    return out


def _emb(c, p, side, ids):
    T, d = ids.shape[1], c["d"]
    E = p[side + "_emb"]
    if c["pos"] == "sinusoidal":
        x = F.embedding(ids, E) * math.sqrt(d) + pe_alt(T, d)[None]
    elif c["pos"] == "learned":
        x = F.embedding(ids, E) + F.embedding(torch.arange(T), p[side + "_pos"])[None]
    else:
        x = F.embedding(ids, E)
    return x * c["input_scale"]


def _call(mod, bound, args, kwargs):
    """mod(*args, **kwargs) with its parameters replaced by bound, which must
    name every one of them (a parameter left out would silently keep its
    random initial value)."""
    names = {k for k, _ in mod.named_parameters()}
    if names != set(bound):
        raise RefError(f"nnmodel: parameters {sorted(names ^ set(bound))[:3]} unbound")
    return functional_call(mod, bound, args, kwargs)


def nn_loss(c, mods, p, tb):
    """The loss of MODEL.md §4 through the torch.nn modules."""
    src, tin, labels, scored = tb
    if c["has_enc"]:
        x = _emb(c, p, "src", src)
        mem = _call(mods["enc"], _bind(c, p, "enc", c["L_enc"]), (x,),
                              {"src_key_padding_mask": src == PAD})
    if c["task"] == "cls":
        z, E = mem, p["src_emb"]
    else:
        T = tin.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = _emb(c, p, "tgt", tin)
        b = _bind(c, p, "dec", c["L_dec"])
        if c["task"] == "lm":
            z = _call(mods["dec"], b, (x,), {"mask": causal,
                                                       "src_key_padding_mask": tin == PAD})
        else:
            z = _call(mods["dec"], b, (x, mem),
                                {"tgt_mask": causal, "tgt_key_padding_mask": tin == PAD,
                                 "memory_key_padding_mask": src == PAD})
        E = p["tgt_emb"]
    logits = F.linear(z, E) if c["tie_output"] else z @ p["out.w"]
    per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                          reduction="none", label_smoothing=c["label_smoothing"])
    return per[scored.reshape(-1)].sum() / scored.sum()


def nn_loss_grad(c, layout, theta_np, tb):
    """(loss, gradient) through torch.nn's modules; RefError if torch.nn does
    not express the configuration."""
    why = expressible(c)
    if why:
        raise RefError(f"--nn: {why}")
    mods = build(c)
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    L = nn_loss(c, mods, unflatten(theta, layout), tb)
    (g,) = torch.autograd.grad(L, theta)
    return L.detach(), g.detach()
