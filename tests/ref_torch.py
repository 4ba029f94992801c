#!/usr/bin/python3
"""Independent PyTorch (float64) reference of the transformer of docs/MODEL.md.

Written from the model contract only (docs/MODEL.md §1-§9; not from the C sources), to cross-check lnkit's loss,
gradient and Hessian-vector products.

usage:
  /usr/bin/python3 tests/ref_torch.py --config C.json --weights W.safetensors \
      --batch B.safetensors [--vector v.safetensors] [--dense-hessian] -o out.safetensors

out.safetensors holds "loss" F64 [1], "grad" F64 [n_params] (flat, MODEL.md section 6
order), "hv" F64 [n_params] when --vector is given, "hessian" F64 [n, n] with
--dense-hessian.  Errors print "ref_torch: <message>" and exit 2.
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch

PAD, UNK, BOS, EOS = 0, 1, 2, 3


class RefError(Exception):
    pass


# ---------------------------------------------------------------------------
# safetensors (hand-written: 8-byte LE header length, JSON header, data buffer)

_DT = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "I64": np.dtype("<i8"),
       "I32": np.dtype("<i4"), "U8": np.dtype("u1")}
_DT_NAME = {np.dtype("<f8"): "F64", np.dtype("<i8"): "I64",
            np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}


def st_read(path):
    """Return ({name: numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise RefError(f"{path}: file of {len(raw)} bytes, expected at least 8")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise RefError(f"{path}: header length {n} exceeds file size {len(raw)}")
    try:
        hdr = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RefError(f"{path}: header is not valid JSON ({e})")
    if not isinstance(hdr, dict):
        raise RefError(f"{path}: header is not a JSON object")
    buf = raw[8 + n:]
    meta = hdr.pop("__metadata__", None) or {}
    out = {}
    for name, info in hdr.items():
        try:
            dt = _DT[info["dtype"]]
        except KeyError:
            raise RefError(f"{path}: tensor {name}: unsupported dtype {info.get('dtype')!r}")
        shape = [int(s) for s in info["shape"]]
        b, e = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= b <= e <= len(buf)) or e - b != count * dt.itemsize:
            raise RefError(f"{path}: tensor {name}: data_offsets [{b},{e}] do not match "
                           f"shape {shape} x {dt.itemsize} bytes in a buffer of {len(buf)}")
        out[name] = np.frombuffer(buf[b:e], dtype=dt).reshape(shape).copy()
    return out, meta


def st_write(path, tensors, metadata=None):
    """tensors: ordered {name: array-like (float -> F64, int -> I64)}."""
    hdr = {}
    if metadata:
        hdr["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu().numpy()
        a = np.asarray(t)
        if a.dtype.kind == "f":
            a = a.astype("<f8")
        elif a.dtype.kind in "iub":
            a = a.astype("<i8")
        else:
            raise RefError(f"{path}: tensor {name}: cannot write dtype {a.dtype}")
        a = np.ascontiguousarray(a)
        data = a.tobytes()
        hdr[name] = {"dtype": _DT_NAME[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------
# configuration (MODEL.md section 8)

_CHOICES = {"task": ("lm", "seq2seq", "cls"), "norm_pos": ("post", "pre"),
            "norm": ("layernorm", "rmsnorm", "none"),
            "qk_norm": ("none", "layernorm", "rmsnorm"),
            "init": ("xavier", "xavier_normal", "theorem")}
_INTS = ("d", "h", "d_ff", "L", "L_enc", "L_dec", "V", "V_src", "V_tgt", "n_classes", "seed")
_KNOWN = set(_CHOICES) | set(_INTS) | {"eps", "tie_output", "label_smoothing",
                                       "n_params", "param_order"}


def resolve_config(obj):
    """JSON object -> dict of resolved, validated settings."""
    if not isinstance(obj, dict):
        raise RefError("config: not a JSON object")
    for k in obj:
        if k not in _KNOWN:
            raise RefError(f"config: unknown key {k!r}")
    g = {k: v for k, v in obj.items() if v is not None}
    c = {}
    defaults = {"task": "lm", "norm_pos": "post", "norm": "layernorm", "qk_norm": "none",
                "init": "xavier"}
    for k, choices in _CHOICES.items():
        v = g.get(k, defaults[k])
        if not isinstance(v, str) or v not in choices:
            raise RefError(f"config: key {k!r} = {v!r}, expected one of {list(choices)}")
        c[k] = v

    def get_int(k, default, lo=1):
        v = g.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise RefError(f"config: key {k!r} = {v!r}, expected an integer")
        if v < lo:
            raise RefError(f"config: key {k!r} = {v}, expected >= {lo}")
        return v

    c["d"] = get_int("d", 16)
    c["h"] = get_int("h", 2)
    if c["d"] % c["h"]:
        raise RefError(f"config: key 'h' = {c['h']} does not divide d = {c['d']}")
    if c["d"] % 2:
        raise RefError(f"config: key 'd' = {c['d']}, expected even (sinusoidal PE)")
    c["d_k"] = c["d"] // c["h"]
    c["d_ff"] = get_int("d_ff", 4 * c["d"])
    L = get_int("L", 2)
    c["L_enc"] = get_int("L_enc", L)
    c["L_dec"] = get_int("L_dec", L)
    V = get_int("V", 32)
    c["V_src"] = get_int("V_src", V)
    c["V_tgt"] = get_int("V_tgt", V)
    # Reading chosen: for cls the default n_classes is the source vocabulary
    # (V_src, which is V unless overridden), so that tie_output's src_emb fits.
    c["n_classes"] = get_int("n_classes", c["V_src"])
    c["seed"] = get_int("seed", 0, lo=0)
    eps = g.get("eps", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0 \
            or not math.isfinite(eps):
        raise RefError(f"config: key 'eps' = {eps!r}, expected a number >= 0")
    c["eps"] = float(eps)
    tie = g.get("tie_output", False)
    if not isinstance(tie, bool):
        raise RefError(f"config: key 'tie_output' = {tie!r}, expected true or false")
    c["tie_output"] = tie
    a = g.get("label_smoothing", 0.0)
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not (0 <= a < 1):
        raise RefError(f"config: key 'label_smoothing' = {a!r}, expected 0 <= a < 1")
    c["label_smoothing"] = float(a)
    if c["task"] == "cls" and c["tie_output"] and c["n_classes"] != c["V_src"]:
        raise RefError(f"config: key 'n_classes' = {c['n_classes']}, with tie_output it "
                       f"must equal the source vocabulary {c['V_src']}")
    c["has_enc"] = c["task"] in ("cls", "seq2seq")
    c["has_dec"] = c["task"] in ("lm", "seq2seq")
    if not c["has_enc"]:
        c["L_enc"] = 0
    if not c["has_dec"]:
        c["L_dec"] = 0
    return c


# ---------------------------------------------------------------------------
# parameter layout (MODEL.md section 6)

def _norm_params(c, prefix):
    d = c["d"]
    if c["norm"] == "layernorm":
        return [(prefix + ".g", (d,)), (prefix + ".b", (d,))]
    if c["norm"] == "rmsnorm":
        return [(prefix + ".g", (d,))]
    return []


def _attn_params(c, prefix):
    d = c["d"]
    out = []
    for m in ("q", "k", "v", "o"):
        out += [(f"{prefix}.w{m}", (d, d)), (f"{prefix}.b{m}", (d,))]
    return out


def _ffn_params(c, prefix):
    d, f = c["d"], c["d_ff"]
    return [(prefix + ".w1", (d, f)), (prefix + ".b1", (f,)),
            (prefix + ".w2", (f, d)), (prefix + ".b2", (d,))]


def param_layout(c):
    """[(name, shape)] in the flat order of MODEL.md section 6."""
    d = c["d"]
    lay = []
    if c["has_enc"]:
        lay.append(("src_emb", (c["V_src"], d)))
    if c["has_dec"]:
        lay.append(("tgt_emb", (c["V_tgt"], d)))
    for l in range(c["L_enc"]):
        p = f"enc.{l}"
        lay += _attn_params(c, p + ".attn") + _norm_params(c, p + ".norm1")
        lay += _ffn_params(c, p + ".ffn") + _norm_params(c, p + ".norm2")
    if c["has_enc"] and c["norm_pos"] == "pre":
        lay += _norm_params(c, "enc.final_norm")
    for l in range(c["L_dec"]):
        p = f"dec.{l}"
        lay += _attn_params(c, p + ".attn") + _norm_params(c, p + ".norm1")
        if c["task"] == "seq2seq":
            lay += _attn_params(c, p + ".xattn") + _norm_params(c, p + ".norm2")
            lay += _ffn_params(c, p + ".ffn") + _norm_params(c, p + ".norm3")
        else:
            lay += _ffn_params(c, p + ".ffn") + _norm_params(c, p + ".norm2")
    if c["has_dec"] and c["norm_pos"] == "pre":
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
        a = tensors[name]
        if a.dtype != np.dtype("<f8"):
            raise RefError(f"{what}: tensor {name!r} has dtype {a.dtype}, expected F64")
        if tuple(a.shape) != tuple(shape):
            raise RefError(f"{what}: tensor {name!r} has shape {list(a.shape)}, "
                           f"expected {list(shape)}")
        parts.append(a.reshape(-1))
    return np.concatenate(parts) if parts else np.zeros(0)


# ---------------------------------------------------------------------------
# model (MODEL.md sections 2-4)

def sinusoidal_pe(T, d, dtype=torch.float64):
    pe = np.zeros((T, d))
    t = np.arange(T, dtype=np.float64)
    for i in range(d // 2):
        div = np.power(10000.0, (2.0 * i) / d)
        pe[:, 2 * i] = np.sin(t / div)
        pe[:, 2 * i + 1] = np.cos(t / div)
    return torch.tensor(pe, dtype=dtype)


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


def mha(c, p, prefix, xq, xkv, key_pad, causal):
    """xq [B,Tq,d], xkv [B,Tk,d]; key_pad [B,Tk] bool (True = <pad>, masked)."""
    B, Tq, d = xq.shape
    Tk = xkv.shape[1]
    h, dk = c["h"], c["d_k"]
    q = (xq @ p[prefix + ".wq"] + p[prefix + ".bq"]).view(B, Tq, h, dk).transpose(1, 2)
    k = (xkv @ p[prefix + ".wk"] + p[prefix + ".bk"]).view(B, Tk, h, dk).transpose(1, 2)
    v = (xkv @ p[prefix + ".wv"] + p[prefix + ".bv"]).view(B, Tk, h, dk).transpose(1, 2)
    if c["qk_norm"] != "none":
        q = _norm(c["qk_norm"], q, c["eps"])
        k = _norm(c["qk_norm"], k, c["eps"])
    s = (q @ k.transpose(-1, -2)) / math.sqrt(dk)           # [B,h,Tq,Tk]
    mask = key_pad[:, None, None, :].expand(B, 1, Tq, Tk)
    if causal:
        fut = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1)
        mask = mask | fut[None, None]
    s = s.masked_fill(mask, float("-inf"))
    a = torch.softmax(s, dim=-1)
    o = (a @ v).transpose(1, 2).reshape(B, Tq, d)
    return o @ p[prefix + ".wo"] + p[prefix + ".bo"]


def ffn(p, prefix, x):
    return torch.relu(x @ p[prefix + ".w1"] + p[prefix + ".b1"]) @ p[prefix + ".w2"] \
        + p[prefix + ".b2"]


def embed(c, E, ids):
    T = ids.shape[1]
    return math.sqrt(c["d"]) * E[ids] + sinusoidal_pe(T, c["d"])[None]


def encoder(c, p, src):
    pad = src == PAD
    x = embed(c, p["src_emb"], src)
    pre = c["norm_pos"] == "pre"
    for l in range(c["L_enc"]):
        P = f"enc.{l}"
        if pre:
            n1 = block_norm(c, p, P + ".norm1", x)
            y = x + mha(c, p, P + ".attn", n1, n1, pad, False)
            x = y + ffn(p, P + ".ffn", block_norm(c, p, P + ".norm2", y))
        else:
            y = block_norm(c, p, P + ".norm1", x + mha(c, p, P + ".attn", x, x, pad, False))
            x = block_norm(c, p, P + ".norm2", y + ffn(p, P + ".ffn", y))
    if pre:
        x = block_norm(c, p, "enc.final_norm", x)
    return x


def decoder(c, p, tin, mem=None, mem_pad=None):
    pad = tin == PAD
    x = embed(c, p["tgt_emb"], tin)
    pre = c["norm_pos"] == "pre"
    cross = mem is not None
    nf = ".norm3" if cross else ".norm2"
    for l in range(c["L_dec"]):
        P = f"dec.{l}"
        if pre:
            n1 = block_norm(c, p, P + ".norm1", x)
            u = x + mha(c, p, P + ".attn", n1, n1, pad, True)
            if cross:
                y = u + mha(c, p, P + ".xattn", block_norm(c, p, P + ".norm2", u), mem,
                            mem_pad, False)
            else:
                y = u
            x = y + ffn(p, P + ".ffn", block_norm(c, p, P + nf, y))
        else:
            u = block_norm(c, p, P + ".norm1", x + mha(c, p, P + ".attn", x, x, pad, True))
            if cross:
                y = block_norm(c, p, P + ".norm2", u + mha(c, p, P + ".xattn", u, mem,
                                                           mem_pad, False))
            else:
                y = u
            x = block_norm(c, p, P + nf, y + ffn(p, P + ".ffn", y))
    if pre:
        x = block_norm(c, p, "dec.final_norm", x)
    return x


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

    src = tin = None
    if c["has_enc"]:
        src = ids("src")
        check_range("src", src, c["V_src"])
        check_start("src", src)
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
    empty = (~scored.any(dim=1)).nonzero()
    if len(empty):
        raise RefError(f"batch: row {int(empty[0])} has no scored position")
    return src, tin, labels, scored


def loss_fn(c, p, tb):
    """Scalar loss of MODEL.md section 4. p: {name: tensor}; tb: output of check_batch."""
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
    logits = z @ Wemb.t() if c["tie_output"] else z @ p["out.w"]
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    a = c["label_smoothing"]
    per = nll if a == 0 else (1 - a) * nll + a * (-logp.mean(-1))
    return per[scored].sum() / scored.sum()


# ---------------------------------------------------------------------------
# derivatives

def loss_grad(c, layout, theta_np, tb, create_graph=False):
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    L = loss_fn(c, unflatten(theta, layout), tb)
    (g,) = torch.autograd.grad(L, theta, create_graph=create_graph)
    return theta, L, g


def hvp(c, layout, theta_np, tb, v_np):
    theta, L, g = loss_grad(c, layout, theta_np, tb, create_graph=True)
    v = torch.as_tensor(v_np, dtype=torch.float64)
    (hv,) = torch.autograd.grad(g @ v, theta, allow_unused=True)
    if hv is None:
        hv = torch.zeros_like(theta)
    return L.detach(), g.detach(), hv.detach()


def dense_hessian(c, layout, theta_np, tb, chunk=256):
    """H row by row: e_i^T H = d(g_i)/d theta, by reverse mode through the gradient's
    graph (exact, like the HVPs).  Rows in batches through is_grads_batched (vmap);
    one row at a time if vmap cannot handle an operation."""
    theta, L, g = loss_grad(c, layout, theta_np, tb, create_graph=True)
    n = theta.numel()
    H = torch.zeros(n, n, dtype=torch.float64)
    if not g.requires_grad:
        return H
    try:
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            eye = torch.zeros(e - s, n, dtype=torch.float64)
            eye[torch.arange(e - s), torch.arange(s, e)] = 1.0
            (rows,) = torch.autograd.grad(g, theta, grad_outputs=eye, retain_graph=True,
                                          is_grads_batched=True)
            H[s:e] = rows
        return H
    except RuntimeError:
        pass
    for i in range(n):
        (row,) = torch.autograd.grad(g[i], theta, retain_graph=True, allow_unused=True)
        if row is not None:
            H[i] = row
    return H


# ---------------------------------------------------------------------------
# command line

def warn_read_only(obj, layout, path):
    """n_params / param_order written by another program: not used here, but a
    disagreement with this reference's layout is worth a warning (stderr)."""
    n = n_params(layout)
    k = obj.get("n_params")
    if k is not None and k != n:
        print(f"ref_torch: warning: {path}: n_params = {k}, this reference counts {n}",
              file=sys.stderr)
    order = obj.get("param_order")
    names = [nm for nm, _ in layout]
    if isinstance(order, list) and order:
        got = [e if isinstance(e, str) else (e.get("name") if isinstance(e, dict) else
               (e[0] if isinstance(e, list) and e else None)) for e in order]
        if got != names:
            print(f"ref_torch: warning: {path}: param_order differs from this reference's "
                  f"order (first: {got[:3]} vs {names[:3]})", file=sys.stderr)


def load_all(config_path, weights_path, batch_path):
    with open(config_path) as f:
        try:
            obj = json.load(f)
        except json.JSONDecodeError as e:
            raise RefError(f"{config_path}: invalid JSON ({e})")
    c = resolve_config(obj)
    layout = param_layout(c)
    warn_read_only(obj, layout, config_path)
    w, _ = st_read(weights_path)
    theta = flatten_named(w, layout, weights_path)
    b, _ = st_read(batch_path)
    tb = check_batch(c, b)
    return c, layout, theta, tb


def read_vector(path, layout):
    t, _ = st_read(path)
    n = n_params(layout)
    if set(t) == {"v"}:
        v = t["v"]
        if v.dtype != np.dtype("<f8") or v.shape != (n,):
            raise RefError(f"{path}: tensor 'v' is {v.dtype} {list(v.shape)}, "
                           f"expected F64 [{n}]")
        return v.copy()
    return flatten_named(t, layout, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--config", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--batch", required=True)
    ap.add_argument("--vector")
    ap.add_argument("--dense-hessian", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    try:
        c, layout, theta, tb = load_all(a.config, a.weights, a.batch)
        n = len(theta)
        out = {}
        if a.vector:
            v = read_vector(a.vector, layout)
            L, g, hv = hvp(c, layout, theta, tb, v)
        else:
            _, L, g = loss_grad(c, layout, theta, tb)
            hv = None
        out["loss"] = L.detach().reshape(1)
        out["grad"] = g.detach()
        if hv is not None:
            out["hv"] = hv
        if a.dense_hessian:
            if n > 3000:
                raise RefError(f"--dense-hessian: n_params = {n}, expected <= 3000")
            out["hessian"] = dense_hessian(c, layout, theta, tb)
        st_write(a.output, out, {"n_params": n,
                                 "param_order": ",".join(nm for nm, _ in layout)})
    except (RefError, OSError) as e:
        print(f"ref_torch: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
