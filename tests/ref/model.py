"""The transformer of docs/MODEL.md §2-§4 and issue 32's variants, in PyTorch
float64, written from the papers and the contract (not from lnkit's C code).

p is a dict {name: tensor} of MODEL.md §6 names (layout.unflatten of a flat
vector); every function is differentiable in p to any order (autograd)."""
import math

import numpy as np
import torch

from .base import PAD, RefError
from .config import FINAL_NORM, placement
from .layout import sublayer_norms


# ---------------------------------------------------------------------------
# positions and embeddings (MODEL.md §2; issue 32: learned, rope, none)

def sinusoidal_pe(T, d, dtype=torch.float64):
    """Vaswani et al. 2017, §3.5: PE[t, 2i] = sin(t / 10000^(2i/d)),
    PE[t, 2i+1] = cos(t / 10000^(2i/d)), t from 0."""
    pe = np.zeros((T, d))
    t = np.arange(T, dtype=np.float64)
    for i in range(d // 2):
        div = np.power(10000.0, (2.0 * i) / d)
        pe[:, 2 * i] = np.sin(t / div)
        pe[:, 2 * i + 1] = np.cos(t / div)
    return torch.tensor(pe, dtype=dtype)


def embed(c, p, side, ids):
    """side: "src" or "tgt".  Scale sqrt(d) with sinusoidal positions
    (Vaswani), 1 with learned (GPT-2), rope and none (LLaMA); then the
    positions are added (sinusoidal, learned: the table's first T rows); the
    whole is multiplied by input_scale (1 by default)."""
    T = ids.shape[1]
    E = p[side + "_emb"]
    if c["pos"] == "sinusoidal":
        x = math.sqrt(c["d"]) * E[ids] + sinusoidal_pe(T, c["d"])[None]
    elif c["pos"] == "learned":
        if T > c["max_len"]:
            raise RefError(f"batch: {T} positions, max_len = {c['max_len']}")
        x = E[ids] + p[side + "_pos"][:T][None]
    else:
        x = E[ids]
    if c["input_scale"] != 1.0:
        x = c["input_scale"] * x
    return x


def rope(x):
    """Rotary position embedding (Su et al., RoFormer, eq. 34; Meta's LLaMA):
    x [B, h, T, d_k]; the pair (2i, 2i+1) of the row at position t (from 0) is
    rotated by the angle t * 10000^(-2i/d_k)."""
    T, dk = x.shape[-2], x.shape[-1]
    i = torch.arange(dk // 2, dtype=torch.float64)
    freq = torch.pow(torch.tensor(10000.0, dtype=torch.float64), -2.0 * i / dk)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]   # [T, dk/2]
    cos, sin = torch.cos(ang), torch.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y0 = x0 * cos - x1 * sin
    y1 = x0 * sin + x1 * cos
    return torch.stack([y0, y1], dim=-1).reshape(x.shape)


# ---------------------------------------------------------------------------
# norms, attention, feed-forward (MODEL.md §2)

def _norm(kind, x, eps, g=None, b=None):
    if kind == "none":
        return x
    if kind == "layernorm":
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        y = xc / torch.sqrt(var + eps)
    elif kind == "rmsnorm":
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    else:
        raise RefError(f"unknown norm {kind!r}")
    if g is not None:
        y = y * g
    if b is not None:
        y = y + b
    return y


def block_norm(c, p, prefix, x):
    if c["norm"] == "none":
        return x
    return _norm(c["norm"], x, c["eps"], p[prefix + ".g"], p.get(prefix + ".b"))


def linear(p, w, b, x):
    y = x @ p[w]
    return y + p[b] if b in p else y


def mha(c, p, prefix, xq, xkv, key_pad, causal, rotary=False):
    """xq [B,Tq,d], xkv [B,Tk,d]; key_pad [B,Tk] bool (True = <pad>, masked).
    rotary: self-attention with pos = rope (queries and keys rotated after
    qk_norm, as in OLMo 2)."""
    B, Tq, d = xq.shape
    Tk = xkv.shape[1]
    h, dk = c["h"], c["d_k"]
    q = linear(p, prefix + ".wq", prefix + ".bq", xq).view(B, Tq, h, dk).transpose(1, 2)
    k = linear(p, prefix + ".wk", prefix + ".bk", xkv).view(B, Tk, h, dk).transpose(1, 2)
    v = linear(p, prefix + ".wv", prefix + ".bv", xkv).view(B, Tk, h, dk).transpose(1, 2)
    if c["qk_norm"] != "none":
        q = _norm(c["qk_norm"], q, c["eps"])
        k = _norm(c["qk_norm"], k, c["eps"])
    if rotary:
        q, k = rope(q), rope(k)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(dk)           # [B,h,Tq,Tk]
    mask = key_pad[:, None, None, :].expand(B, 1, Tq, Tk)
    if causal:
        fut = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1)
        mask = mask | fut[None, None]
    s = s.masked_fill(mask, float("-inf"))
    a = torch.softmax(s, dim=-1)
    o = (a @ v).transpose(1, 2).reshape(B, Tq, d)
    return linear(p, prefix + ".wo", prefix + ".bo", o)


def gelu(x):
    """Exact GELU (Hendrycks and Gimpel 2016): x Phi(x), Phi by erf."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def silu(x):
    """SiLU / Swish-1 (Elfwing et al. 2018): x sigmoid(x)."""
    return x * torch.sigmoid(x)


def ffn(c, p, prefix, x):
    """relu, gelu: act(x W1 + b1) W2 + b2; swiglu (Shazeer 2020, LLaMA):
    (silu(x W1 + b1) * (x W3 + b3)) W2 + b2."""
    a = linear(p, prefix + ".w1", prefix + ".b1", x)
    if c["activation"] == "relu":
        a = torch.relu(a)
    elif c["activation"] == "gelu":
        a = gelu(a)
    else:
        a = silu(a) * linear(p, prefix + ".w3", prefix + ".b3", x)
    return linear(p, prefix + ".w2", prefix + ".b2", a)


# ---------------------------------------------------------------------------
# blocks (MODEL.md §3; issue 32's placements)

def residual(c, p, prefix, place, k, alpha, x, f):
    """One residual sublayer (the k-th of its block, 1-based) of stream x with
    sublayer f (a function of its input):
      post:     N(x + f(x))                    (Vaswani et al. 2017)
      pre:      x + f(N(x))                    (Xiong et al. 2020)
      peri:     x + N_out(f(N_in(x)))          (Kim et al. 2025; Gemma 2's sandwich)
      out:      x + N_out(f(x))                (OLMo 2)
      deepnorm: N(alpha x + f(x))              (Wang et al. 2022, DeepNet)"""
    nin, nout = sublayer_norms(c, place, k)
    N = lambda name, y: block_norm(c, p, f"{prefix}.{name}", y)  # noqa: E731
    if place == "post":
        return N(nin, x + f(x))
    if place == "pre":
        return x + f(N(nin, x))
    if place == "peri":
        return x + N(nout, f(N(nin, x)))
    if place == "out":
        return x + N(nout, f(x))
    if place == "deepnorm":
        return N(nin, alpha * x + f(x))
    raise RefError(f"unknown placement {place!r}")


def encoder(c, p, src):
    pad = src == PAD
    x = embed(c, p, "src", src)
    rot = c["pos"] == "rope"
    for l in range(c["L_enc"]):
        P, pl = f"enc.{l}", placement(c, "enc", l)
        a = c["alpha_enc"]
        x = residual(c, p, P, pl, 1, a, x,
                     lambda y: mha(c, p, P + ".attn", y, y, pad, False, rot))
        x = residual(c, p, P, pl, 2, a, x, lambda y: ffn(c, p, P + ".ffn", y))
    if c["norm_pos"] in FINAL_NORM:
        x = block_norm(c, p, "enc.final_norm", x)
    return x


def decoder(c, p, tin, mem=None, mem_pad=None):
    """Self-attention (causal), cross-attention on mem (seq2seq), FFN; the
    norms of a self-attention-only decoder are numbered as the encoder's."""
    pad = tin == PAD
    x = embed(c, p, "tgt", tin)
    rot = c["pos"] == "rope"
    cross = mem is not None
    for l in range(c["L_dec"]):
        P, pl = f"dec.{l}", placement(c, "dec", l)
        a = c["alpha_dec"]
        x = residual(c, p, P, pl, 1, a, x,
                     lambda y: mha(c, p, P + ".attn", y, y, pad, True, rot))
        k = 2
        if cross:
            x = residual(c, p, P, pl, 2, a, x,
                         lambda y: mha(c, p, P + ".xattn", y, mem, mem_pad, False))
            k = 3
        x = residual(c, p, P, pl, k, a, x, lambda y: ffn(c, p, P + ".ffn", y))
    if c["norm_pos"] in FINAL_NORM:
        x = block_norm(c, p, "dec.final_norm", x)
    return x


# ---------------------------------------------------------------------------
# batches and loss (MODEL.md §4)

def check_batch(c, batch):
    """Validate a batch {name: int64 numpy} and return torch tensors (src, tin, labels, scored)."""
    def ids(name):
        if name not in batch:
            raise RefError(f"batch: missing tensor {name!r} for task {c['task']}")
        a = batch[name]
        if a.dtype.kind not in "iu" or a.ndim != 2:
            raise RefError(f"batch: tensor {name!r} must be I64 [B, len], got "
                           f"{a.dtype} {list(a.shape)}")
        if a.shape[0] < 1:
            raise RefError(f"batch: tensor {name!r} has no rows")
        return torch.tensor(a.astype(np.int64))

    def check_range(name, t, V):
        bad = (t < 0) | (t >= V)
        if bool(bad.any()):
            i = bad.nonzero()[0].tolist()
            raise RefError(f"batch: {name}[{i[0]},{i[1]}] = {int(t[i[0], i[1]])}, "
                           f"expected an id in [0, {V})")

    def check_start(name, t):
        if t.shape[1] < 1:
            raise RefError(f"batch: tensor {name!r} has no columns")
        rows = (t[:, 0] == PAD).nonzero()
        if len(rows):
            raise RefError(f"batch: {name} row {int(rows[0])} starts with <pad>")

    def check_len(name, n):
        if c["pos"] == "learned" and n > c["max_len"]:
            raise RefError(f"batch: {name} has {n} positions, more than max_len = "
                           f"{c['max_len']} (the learned position table's rows)")

    src = tin = None
    if c["has_enc"]:
        src = ids("src")
        check_range("src", src, c["V_src"])
        check_start("src", src)
        check_len("src", src.shape[1])
    if c["task"] == "cls":
        labels = ids("labels")
        if labels.shape != src.shape:
            raise RefError(f"batch: labels shape {list(labels.shape)} != src shape "
                           f"{list(src.shape)}")
        scored = src != PAD
        lab = labels.masked_fill(~scored, 0)
        check_range("labels", torch.where(scored, labels, torch.zeros_like(labels)),
                    c["n_classes"])
        labels = lab
    else:
        tgt = ids("tgt")
        check_range("tgt", tgt, c["V_tgt"])
        check_start("tgt", tgt)
        if tgt.shape[1] < 2:
            raise RefError(f"batch: tgt has {tgt.shape[1]} columns, expected >= 2")
        if src is not None and src.shape[0] != tgt.shape[0]:
            raise RefError(f"batch: src has {src.shape[0]} rows, tgt {tgt.shape[0]}")
        tin = tgt[:, :-1]
        labels = tgt[:, 1:]
        scored = labels != PAD
        check_len("tgt (the decoder's input)", tin.shape[1])
    empty = (~scored.any(dim=1)).nonzero()
    if len(empty):
        raise RefError(f"batch: row {int(empty[0])} has no scored position")
    return src, tin, labels, scored


def logits_fn(c, p, tb):
    """The logits [B, len, C] of MODEL.md §4 (every position, scored or not)."""
    src, tin, labels, scored = tb
    if c["task"] == "cls":
        z = encoder(c, p, src)
        Wemb = p["src_emb"]
    elif c["task"] == "lm":
        z = decoder(c, p, tin)
        Wemb = p["tgt_emb"]
    else:
        m = encoder(c, p, src)
        z = decoder(c, p, tin, m, src == PAD)
        Wemb = p["tgt_emb"]
    return z @ Wemb.t() if c["tie_output"] else z @ p["out.w"]


def loss_from_logits(c, logits, tb):
    """Mean over the scored positions of the (label-smoothed) cross-entropy."""
    _, _, labels, scored = tb
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    a = c["label_smoothing"]
    per = nll if a == 0 else (1 - a) * nll + a * (-logp.mean(-1))
    return per[scored].sum() / scored.sum()


def loss_fn(c, p, tb):
    """Scalar loss of MODEL.md section 4. p: {name: tensor}; tb: output of check_batch."""
    return loss_from_logits(c, logits_fn(c, p, tb), tb)
