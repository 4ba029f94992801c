#!/usr/bin/python3
"""Self-test of tests/ref_torch.py (the independent PyTorch reference).

run: /usr/bin/python3 tests/test_ref_torch.py [-v]
Exit 0 when every check passes; the last line is "N passed, N failed".

Checks, on tiny random models (every task x norm_pos x norm x qk_norm, tie_output and
label_smoothing on some):
  - gradient vs central differences of the loss on a few coordinates;
  - H v vs central differences of the gradient along v;
  - symmetry u.Hv == v.Hu;
  - appending <pad> columns leaves loss and gradient unchanged;
  - the loss is one mean over all scored tokens (rows are independent);
and, independently of ref_torch's block code, the loss against a model built from
torch.nn.Transformer{Encoder,Decoder}Layer + F.cross_entropy (LayerNorm, no qk_norm),
parameter counts against a hand formula, the safetensors writer/reader, and the
command line (flat and named vectors, dense Hessian, error exits).
"""
import io
import json
import math
import os
import sys
import tempfile
import traceback
import contextlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_torch as R  # noqa: E402

torch.set_num_threads(1)
VERBOSE = "-v" in sys.argv
RESULTS = {"pass": 0, "fail": 0}
TMP = tempfile.mkdtemp(prefix="test_ref_torch.")


def check(name, ok, detail=""):
    if ok:
        RESULTS["pass"] += 1
        if VERBOSE:
            print(f"ok   {name} {detail}")
    else:
        RESULTS["fail"] += 1
        print(f"FAIL {name} {detail}")


def run(name, fn, *args):
    try:
        fn(*args)
    except Exception:
        RESULTS["fail"] += 1
        print(f"FAIL {name}: exception")
        traceback.print_exc()


# ---------------------------------------------------------------------------
# helpers

def random_weights(layout, rng, scale=0.5):
    """Random weights with non-trivial gains/biases (far from the init point)."""
    w = {}
    for name, shape in layout:
        a = rng.normal(size=shape) * scale
        if name.endswith(".g"):
            a = 1.0 + 0.3 * rng.normal(size=shape)
        w[name] = a
    return w


def random_ids(rng, B, n, V, lengths, first=None):
    a = np.zeros((B, n), dtype=np.int64)
    for r in range(B):
        a[r, :lengths[r]] = rng.integers(4, V, size=lengths[r])
        if first is not None:
            a[r, 0] = first
    return a


def random_batch(c, rng, B=3, n=5):
    """Batch with trailing padding on all rows but one."""
    lens = [n] + [int(rng.integers(2, n)) for _ in range(B - 1)]
    b = {}
    if c["task"] == "cls":
        b["src"] = random_ids(rng, B, n, c["V_src"], lens)
        b["labels"] = rng.integers(0, c["n_classes"], size=(B, n)).astype(np.int64)
    else:
        tgt = random_ids(rng, B, n + 1, c["V_tgt"], [l + 1 for l in lens], first=R.BOS)
        if c["task"] == "seq2seq":   # end the row with <eos>
            for r in range(B):
                tgt[r, lens[r]] = R.EOS
            slens = [int(rng.integers(1, n + 2)) for _ in range(B)]
            slens[int(rng.integers(0, B))] = n + 1
            b["src"] = random_ids(rng, B, n + 1, c["V_src"], slens)
        b["tgt"] = tgt
    return b


def append_pads(c, b, k=2):
    out = {}
    for name, a in b.items():
        extra = np.zeros((a.shape[0], k), dtype=np.int64)
        if name == "labels":   # labels under <pad> are arbitrary
            extra[:] = 1
        out[name] = np.concatenate([a, extra], axis=1)
    return out


def fd_error(f, exact, steps=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7)):
    """Smallest relative error between exact and the central difference
    (f(h) - f(-h)) / 2h over a range of steps h.  A range, because with d_k = 2 a
    per-head norm can be very sharply curved (width ~ sqrt(eps)) and a ReLU kink may
    lie within a large step, while tiny steps lose digits to rounding."""
    scale = max(1.0, float(np.linalg.norm(exact)))
    return min(float(np.linalg.norm((f(h) - f(-h)) / (2 * h) - exact)) / scale
               for h in steps)


def loss_of(c, layout, theta, tb):
    with torch.no_grad():
        p = R.unflatten(torch.as_tensor(theta, dtype=torch.float64), layout)
        return float(R.loss_fn(c, p, tb))


def grad_of(c, layout, theta, tb):
    _, L, g = R.loss_grad(c, layout, theta, tb)
    return float(L), g.numpy()


CONFIGS = []
for task in ("lm", "cls", "seq2seq"):
    for norm_pos in ("post", "pre"):
        for norm in ("layernorm", "rmsnorm", "none"):
            for qk in ("none", "layernorm", "rmsnorm"):
                i = len(CONFIGS)
                cfg = {"task": task, "norm_pos": norm_pos, "norm": norm, "qk_norm": qk,
                       "d": 4, "h": 2, "d_ff": 6, "L": 1 + i % 2, "V": 7,
                       "tie_output": i % 3 == 1, "label_smoothing": 0.1 if i % 2 else None}
                if task == "seq2seq" and i % 4 == 0:
                    cfg["V_src"] = 9
                if task == "cls" and i % 3 != 1 and i % 5 == 0:
                    cfg["n_classes"] = 5
                if task == "seq2seq" and i % 3 == 0:
                    cfg["L_enc"], cfg["L_dec"] = 2, 1
                CONFIGS.append(cfg)


# ---------------------------------------------------------------------------
# per-configuration derivative checks

def test_config(k, cfg):
    tag = f"cfg{k}[{cfg['task']},{cfg['norm_pos']},{cfg['norm']},qk={cfg['qk_norm']}," \
          f"tie={cfg['tie_output']},ls={cfg['label_smoothing']}]"
    rng = np.random.default_rng(1000 + k)
    c = R.resolve_config(cfg)
    layout = R.param_layout(c)
    n = R.n_params(layout)
    w = random_weights(layout, rng)
    b = random_batch(c, rng)
    # through the files, with our own writer
    wpath, bpath = os.path.join(TMP, f"w{k}.st"), os.path.join(TMP, f"b{k}.st")
    R.st_write(wpath, w)
    R.st_write(bpath, b)
    theta = R.flatten_named(R.st_read(wpath)[0], layout, wpath)
    tb = R.check_batch(c, R.st_read(bpath)[0])

    L0, g = grad_of(c, layout, theta, tb)
    check(f"{tag} finite loss", math.isfinite(L0) and np.all(np.isfinite(g)), f"L={L0}")

    # gradient vs central differences on a few coordinates (largest |g| and random ones)
    coords = list(rng.choice(n, size=4, replace=False)) + [int(np.argmax(np.abs(g)))]
    worst = 0.0
    for i in coords:
        e = np.zeros(n)
        e[i] = 1.0
        worst = max(worst, fd_error(lambda t: loss_of(c, layout, theta + t * e, tb), g[i]))
    check(f"{tag} grad vs FD", worst < 1e-7, f"rel err {worst:.2e}")

    # Hv vs central differences of the gradient along v
    v = rng.normal(size=n)
    v /= np.linalg.norm(v)
    u = rng.normal(size=n)
    _, _, hv = R.hvp(c, layout, theta, tb, v)
    _, _, hu = R.hvp(c, layout, theta, tb, u)
    hv, hu = hv.numpy(), hu.numpy()
    err = fd_error(lambda t: grad_of(c, layout, theta + t * v, tb)[1], hv)
    check(f"{tag} Hv vs FD of grad", err < 1e-6, f"rel err {err:.2e}")

    sym = abs(u @ hv - v @ hu) / max(1.0, abs(u @ hv))
    check(f"{tag} u.Hv == v.Hu", sym < 1e-11, f"rel diff {sym:.2e}")

    # appending <pad> columns changes nothing
    tb2 = R.check_batch(c, append_pads(c, b))
    L2, g2 = grad_of(c, layout, theta, tb2)
    dl = abs(L2 - L0) / max(1.0, abs(L0))
    dg = np.abs(g2 - g).max() / max(1.0, np.abs(g).max())
    check(f"{tag} pad-append invariance", dl < 1e-13 and dg < 1e-12,
          f"dloss {dl:.1e} dgrad {dg:.1e}")

    # one mean over all scored tokens: loss = sum_r n_r L_r / sum_r n_r
    tot, cnt = 0.0, 0
    for r in range(b[next(iter(b))].shape[0]):
        br = {name: a[r:r + 1] for name, a in b.items()}
        tbr = R.check_batch(c, br)
        nr = int(tbr[3].sum())
        tot += nr * loss_of(c, layout, theta, tbr)
        cnt += nr
    dm = abs(tot / cnt - L0) / max(1.0, abs(L0))
    check(f"{tag} token-mean over rows", dm < 1e-13, f"rel diff {dm:.1e}")


# ---------------------------------------------------------------------------
# independent forward: torch.nn layers + F.cross_entropy (LayerNorm, qk_norm none)

def pe_alt(T, d):
    """Sinusoidal table written another way (exp/log form)."""
    pe = torch.zeros(T, d, dtype=torch.float64)
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def load_mha(m, w, prefix):
    t = lambda name: torch.tensor(w[prefix + name])  # noqa: E731
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([t(".wq").T, t(".wk").T, t(".wv").T], 0))
        m.in_proj_bias.copy_(torch.cat([t(".bq"), t(".bk"), t(".bv")]))
        m.out_proj.weight.copy_(t(".wo").T)
        m.out_proj.bias.copy_(t(".bo"))


def load_ln(m, w, prefix):
    with torch.no_grad():
        m.weight.copy_(torch.tensor(w[prefix + ".g"]))
        m.bias.copy_(torch.tensor(w[prefix + ".b"]))


def load_ffn(layer, w, prefix):
    with torch.no_grad():
        layer.linear1.weight.copy_(torch.tensor(w[prefix + ".w1"]).T)
        layer.linear1.bias.copy_(torch.tensor(w[prefix + ".b1"]))
        layer.linear2.weight.copy_(torch.tensor(w[prefix + ".w2"]).T)
        layer.linear2.bias.copy_(torch.tensor(w[prefix + ".b2"]))


def nn_loss(c, w, b):
    d, h, eps, pre = c["d"], c["h"], c["eps"], c["norm_pos"] == "pre"
    kw = dict(d_model=d, nhead=h, dim_feedforward=c["d_ff"], dropout=0.0, activation="relu",
              layer_norm_eps=eps, batch_first=True, norm_first=pre, dtype=torch.float64)

    def enc_layer(prefix):
        m = nn.TransformerEncoderLayer(**kw)
        load_mha(m.self_attn, w, prefix + ".attn")
        load_ln(m.norm1, w, prefix + ".norm1")
        load_ln(m.norm2, w, prefix + ".norm2")
        load_ffn(m, w, prefix + ".ffn")
        return m.train()   # training mode keeps the generic (non fast-path) kernels

    def final(x, prefix):
        if not pre:
            return x
        return F.layer_norm(x, (d,), torch.tensor(w[prefix + ".g"]),
                            torch.tensor(w[prefix + ".b"]), eps)

    def emb(E, ids):
        return math.sqrt(d) * torch.tensor(E)[ids] + pe_alt(ids.shape[1], d)[None]

    if c["has_enc"]:
        src = torch.tensor(b["src"])
        x = emb(w["src_emb"], src)
        for l in range(c["L_enc"]):
            x = enc_layer(f"enc.{l}")(x, src_key_padding_mask=src == 0)
        mem = final(x, "enc.final_norm")
    if c["task"] == "cls":
        z, E, labels, scored = mem, w["src_emb"], torch.tensor(b["labels"]), src != 0
    else:
        tgt = torch.tensor(b["tgt"])
        tin, labels = tgt[:, :-1], tgt[:, 1:]
        scored = labels != 0
        T = tin.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = emb(w["tgt_emb"], tin)
        for l in range(c["L_dec"]):
            P = f"dec.{l}"
            if c["task"] == "lm":   # a self-attention-only decoder block is an encoder layer
                x = enc_layer(P)(x, src_mask=causal, src_key_padding_mask=tin == 0)
            else:
                m = nn.TransformerDecoderLayer(**kw)
                load_mha(m.self_attn, w, P + ".attn")
                load_mha(m.multihead_attn, w, P + ".xattn")
                for j in (1, 2, 3):
                    load_ln(getattr(m, f"norm{j}"), w, f"{P}.norm{j}")
                load_ffn(m, w, P + ".ffn")
                x = m.train()(x, mem, tgt_mask=causal, tgt_key_padding_mask=tin == 0,
                              memory_key_padding_mask=src == 0)
        z, E = final(x, "dec.final_norm"), w["tgt_emb"]
    Wout = torch.tensor(E).T if c["tie_output"] else torch.tensor(w["out.w"])
    logits = z @ Wout
    per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                          reduction="none", label_smoothing=c["label_smoothing"])
    return float(per[scored.reshape(-1)].sum() / scored.sum())


def test_against_nn():
    k = 0
    for task in ("lm", "cls", "seq2seq"):
        for norm_pos in ("post", "pre"):
            for tie, ls in ((False, 0.0), (True, 0.2)):
                k += 1
                cfg = {"task": task, "norm_pos": norm_pos, "d": 8, "h": 2, "d_ff": 12,
                       "L": 2, "V": 13, "tie_output": tie, "label_smoothing": ls}
                rng = np.random.default_rng(500 + k)
                c = R.resolve_config(cfg)
                layout = R.param_layout(c)
                w = random_weights(layout, rng)
                b = random_batch(c, rng, B=3, n=6)
                theta = R.flatten_named(w, layout, "w")
                mine = loss_of(c, layout, theta, R.check_batch(c, b))
                with torch.no_grad():
                    ref = nn_loss(c, w, b)
                rel = abs(mine - ref) / abs(ref)
                check(f"nn.Transformer loss [{task},{norm_pos},tie={tie},ls={ls}]",
                      rel < 1e-13, f"ref_torch {mine:.17g} nn {ref:.17g} rel {rel:.1e}")


def test_pe():
    for d in (4, 16, 64):
        a = R.sinusoidal_pe(50, d)
        bb = pe_alt(50, d)
        ref = torch.tensor([[math.sin(t / 10000 ** (2 * (j // 2) / d)) if j % 2 == 0 else
                             math.cos(t / 10000 ** (2 * (j // 2) / d)) for j in range(d)]
                            for t in range(50)], dtype=torch.float64)
        check(f"PE table d={d}", float((a - bb).abs().max()) < 1e-12 and
              float((a - ref).abs().max()) < 1e-12)


# ---------------------------------------------------------------------------
# parameter counts vs hand formula, names of MODEL.md section 6

def test_layout():
    for cfg in CONFIGS + [{"task": "seq2seq", "d": 16, "h": 4, "L_enc": 3, "L_dec": 2,
                           "V_src": 40, "V_tgt": 30, "norm": "rmsnorm", "norm_pos": "pre"}]:
        c = R.resolve_config(cfg)
        d, f = c["d"], c["d_ff"]
        nrm = {"layernorm": 2 * d, "rmsnorm": d, "none": 0}[c["norm"]]
        attn = 4 * d * d + 4 * d
        ffp = 2 * d * f + f + d
        n = 0
        if c["has_enc"]:
            n += c["V_src"] * d + c["L_enc"] * (attn + ffp + 2 * nrm)
            n += nrm if c["norm_pos"] == "pre" else 0
        if c["has_dec"]:
            x = (attn + nrm) if c["task"] == "seq2seq" else 0
            n += c["V_tgt"] * d + c["L_dec"] * (attn + ffp + 2 * nrm + x)
            n += nrm if c["norm_pos"] == "pre" else 0
        if not c["tie_output"]:
            n += d * (c["n_classes"] if c["task"] == "cls" else c["V_tgt"])
        lay = R.param_layout(c)
        names = [nm for nm, _ in lay]
        ok = R.n_params(lay) == n and len(set(names)) == len(names)
        if c["norm"] != "layernorm":
            ok = ok and not any(nm.endswith(".b") and "norm" in nm for nm in names)
        if c["norm_pos"] == "post":
            ok = ok and not any("final_norm" in nm for nm in names)
        check(f"layout count {cfg.get('task')},{cfg.get('norm_pos')},{cfg.get('norm')}",
              ok, f"{R.n_params(lay)} vs {n}")
    c = R.resolve_config({"task": "seq2seq", "L": 1, "norm_pos": "pre"})
    names = [nm for nm, _ in R.param_layout(c)]
    want = ["src_emb", "tgt_emb"] + [f"enc.0.attn.{x}" for x in
                                     ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")] + \
        ["enc.0.norm1.g", "enc.0.norm1.b", "enc.0.ffn.w1", "enc.0.ffn.b1", "enc.0.ffn.w2",
         "enc.0.ffn.b2", "enc.0.norm2.g", "enc.0.norm2.b", "enc.final_norm.g",
         "enc.final_norm.b"] + [f"dec.0.attn.{x}" for x in
                                ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")] + \
        ["dec.0.norm1.g", "dec.0.norm1.b"] + [f"dec.0.xattn.{x}" for x in
                                              ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")] + \
        ["dec.0.norm2.g", "dec.0.norm2.b", "dec.0.ffn.w1", "dec.0.ffn.b1", "dec.0.ffn.w2",
         "dec.0.ffn.b2", "dec.0.norm3.g", "dec.0.norm3.b", "dec.final_norm.g",
         "dec.final_norm.b", "out.w"]
    check("layout order seq2seq pre (MODEL.md §6)", names == want)
    c = R.resolve_config({"task": "lm", "L": 1})
    names = [nm for nm, _ in R.param_layout(c)]
    check("layout lm: no enc/src_emb, norms renumbered",
          names[0] == "tgt_emb" and not any(nm.startswith(("enc.", "src_emb")) for nm in names)
          and "dec.0.norm2.g" in names and not any("norm3" in nm or "xattn" in nm
                                                   for nm in names))


# ---------------------------------------------------------------------------
# safetensors writer/reader

def test_safetensors():
    rng = np.random.default_rng(7)
    t = {"a": rng.normal(size=(3, 5)), "b": np.arange(7, dtype=np.int64).reshape(7, 1),
         "c": rng.normal(size=(1,)), "empty": np.zeros((0, 4))}
    p = os.path.join(TMP, "st.safetensors")
    R.st_write(p, t, {"k": "v"})
    raw = open(p, "rb").read()
    nh = int.from_bytes(raw[:8], "little")
    hdr = json.loads(raw[8:8 + nh])
    back, meta = R.st_read(p)
    ok = nh % 8 == 0 and raw[8 + nh - 1:8 + nh] in (b" ", b"}") and meta == {"k": "v"}
    ok = ok and all(np.array_equal(back[k], t[k]) and back[k].dtype == t[k].dtype for k in t)
    ok = ok and hdr["a"]["dtype"] == "F64" and hdr["b"]["dtype"] == "I64"
    ok = ok and hdr["a"]["data_offsets"] == [0, 120] and len(raw) == 8 + nh + 120 + 56 + 8
    check("safetensors round trip, header padding, offsets", ok)
    # a hand-made file with a different physical order and an unpadded header
    body = np.array([1.5, -2.0], "<f8").tobytes() + np.array([3], "<i8").tobytes()
    h = json.dumps({"y": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]},
                    "x": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    with open(p, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + body)
    back, _ = R.st_read(p)
    check("safetensors reader by name", list(back["x"]) == [1.5, -2.0] and back["y"][0] == 3)


# ---------------------------------------------------------------------------
# command line

def cli(*args):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = R.main([str(a) for a in args])
    return rc, err.getvalue()


def test_cli():
    rng = np.random.default_rng(99)
    cfg = {"task": "seq2seq", "norm_pos": "pre", "norm": "layernorm", "qk_norm": "rmsnorm",
           "d": 4, "h": 2, "d_ff": 6, "L": 1, "V": 7, "V_src": 8, "label_smoothing": 0.1,
           "n_params": 12345, "param_order": ["ignored"], "seed": 3, "init": "theorem"}
    c = R.resolve_config(cfg)
    layout = R.param_layout(c)
    n = R.n_params(layout)
    cp, wp, bp = (os.path.join(TMP, f) for f in ("c.json", "w.st", "b.st"))
    vp, vnp, op, onp = (os.path.join(TMP, f) for f in ("v.st", "vn.st", "o.st", "on.st"))
    json.dump(cfg, open(cp, "w"))
    w = random_weights(layout, rng)
    # physical order shuffled: files are read by name
    names = [nm for nm, _ in layout]
    rng.shuffle(names)
    R.st_write(wp, {nm: w[nm] for nm in names})
    b = random_batch(c, rng)
    R.st_write(bp, b)
    v = rng.normal(size=n)
    R.st_write(vp, {"v": v})
    vn, off = {}, 0
    for nm, s in layout:
        k = int(np.prod(s))
        vn[nm] = v[off:off + k].reshape(s)
        off += k
    R.st_write(vnp, vn)
    rc, err = cli("--config", cp, "--weights", wp, "--batch", bp, "--vector", vp,
                  "--dense-hessian", "-o", op)
    check("cli runs (flat v, dense Hessian)", rc == 0, err)
    if rc:
        return
    o, meta = R.st_read(op)
    theta = R.flatten_named(w, layout, "w")
    L, g = grad_of(c, layout, theta, R.check_batch(c, b))
    H = o["hessian"]
    check("cli output shapes", o["loss"].shape == (1,) and o["grad"].shape == (n,) and
          o["hv"].shape == (n,) and H.shape == (n, n) and meta["n_params"] == str(n))
    check("cli loss/grad == in-process", o["loss"][0] == L and np.array_equal(o["grad"], g))
    check("cli H v == hv", np.abs(H @ v - o["hv"]).max() < 1e-12 * max(1, np.abs(H).max()))
    check("cli Hessian symmetric", np.abs(H - H.T).max() < 1e-13 * max(1, np.abs(H).max()))
    # Hessian column vs finite differences of the gradient
    j = int(rng.integers(n))
    e = np.zeros(n)
    e[j] = 1e-5
    tb = R.check_batch(c, b)
    fd = (grad_of(c, layout, theta + e, tb)[1] - grad_of(c, layout, theta - e, tb)[1]) / 2e-5
    check("cli Hessian column vs FD", np.abs(fd - H[:, j]).max() < 1e-6)
    rc, err = cli("--config", cp, "--weights", wp, "--batch", bp, "--vector", vnp, "-o", onp)
    o2, _ = R.st_read(onp) if rc == 0 else ({}, None)
    check("cli named vector == flat vector", rc == 0 and np.array_equal(o2["hv"], o["hv"]), err)

    # error exits
    def expect_error(what, needle, cfg2=None, w2=None, b2=None):
        cp2, wp2, bp2 = (os.path.join(TMP, f) for f in ("c2.json", "w2.st", "b2.st"))
        json.dump(cfg if cfg2 is None else cfg2, open(cp2, "w"))
        R.st_write(wp2, w if w2 is None else w2)
        R.st_write(bp2, b if b2 is None else b2)
        rc, err = cli("--config", cp2, "--weights", wp2, "--batch", bp2, "-o", onp)
        check(f"cli error: {what}", rc == 2 and needle in err, repr(err))

    expect_error("unknown config key", "'dd'", cfg2=dict(cfg, dd=1))
    expect_error("bad value", "'norm'", cfg2=dict(cfg, norm="batchnorm"))
    expect_error("h does not divide d", "'h'", cfg2=dict(cfg, h=3))
    expect_error("wrong type", "'tie_output'", cfg2=dict(cfg, tie_output=1))
    expect_error("missing tensor", "'out.w'", w2={k: a for k, a in w.items() if k != "out.w"})
    expect_error("extra tensor", "'enc.1.attn.wq'", w2=dict(w, **{"enc.1.attn.wq": w["enc.0.attn.wq"]}))
    expect_error("wrong shape", "'dec.0.ffn.w1'", w2=dict(w, **{"dec.0.ffn.w1": np.zeros((6, 4))}))
    bad = {k: a.copy() for k, a in b.items()}
    bad["src"][1, :] = 0
    expect_error("row starting with <pad>", "starts with <pad>", b2=bad)
    bad = {k: a.copy() for k, a in b.items()}
    bad["tgt"][1, 1:] = 0
    expect_error("row without scored position", "no scored position", b2=bad)
    bad = {k: a.copy() for k, a in b.items()}
    bad["tgt"][0, 1] = 7
    expect_error("id out of range", "tgt[0,1] = 7", b2=bad)


def main():
    run("safetensors", test_safetensors)
    run("pe", test_pe)
    run("layout", test_layout)
    for k, cfg in enumerate(CONFIGS):
        run(f"config {k}", test_config, k, cfg)
    run("nn.Transformer", test_against_nn)
    run("cli", test_cli)
    print(f"{RESULTS['pass']} passed, {RESULTS['fail']} failed")
    return 0 if RESULTS["fail"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
