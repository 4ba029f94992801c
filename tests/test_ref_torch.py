#!/usr/bin/python3
"""Self-test of tests/ref_torch.py (the independent PyTorch reference, package tests/ref/).

run: /usr/bin/python3 tests/test_ref_torch.py [-v]
Exit 0 when every check passes; the last line is "N passed, N failed".
tests/test_reference.c runs it before comparing lnkit with the reference.

Checks, on tiny random models (every task x norm_pos post/pre x norm x qk_norm; every
variant of issue 32 alone on each task; the pairwise-covering set of tests/pairwise.conf):
  - gradient vs central differences of the loss on a few coordinates;
  - H v vs central differences of the gradient along v; symmetry u.Hv == v.Hu;
  - G v: symmetry, v.Gv >= 0, H_out against the loss's own Hessian in the logits (label
    smoothing included), and on some configurations G v and H v against dense G, H;
  - appending <pad> columns leaves loss and gradient unchanged;
  - the loss is one mean over all scored tokens (rows are independent);
and (ref/selftest_forward.py) the forward definitions against torch.nn's transformer
modules, torch.nn.functional's pieces, LLaMA's complex RoPE, identities between the
placements; parameter names and counts (MODEL.md §6, issue 32's readings) against a hand
formula, the safetensors writer/reader, and (ref/selftest_cli.py) the command line.
"""
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_torch as R  # noqa: E402
from ref import selftest_forward, selftest_cli  # noqa: E402
from ref.derivs import dense_ggn, loss_of_logits_hessian_check  # noqa: E402
from ref.testkit import (check, run, RESULTS, random_weights, random_batch,  # noqa: E402
                         append_pads, fd_error, loss_of, grad_of, relerr)

torch.set_num_threads(1)
TMP = tempfile.mkdtemp(prefix="test_ref_torch.")
HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = {"d": 4, "h": 2, "d_ff": 6, "L": 2, "V": 7, "max_len": 8}

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
VARIANTS = [{"norm_pos": "peri"}, {"norm_pos": "out"}, {"norm_pos": "deepnorm"},
            {"norm_pos": "mix", "mix_ratio": 0.5}, {"activation": "gelu"},
            {"activation": "swiglu"}, {"pos": "learned"}, {"pos": "rope"}, {"pos": "none"},
            {"bias": False}, {"input_scale": 0.5}]
for task in ("lm", "cls", "seq2seq"):
    for v in VARIANTS:
        CONFIGS.append(dict(SMALL, task=task, **v))


def pairwise_configs(path=os.path.join(HERE, "pairwise.conf")):
    out = []
    for line in open(path):
        cfg = dict(SMALL)
        for w in line.split():
            k, v = w.split("=")
            cfg[k] = {"true": True, "false": False}.get(v, v)
        cfg["label_smoothing"] = float(cfg["label_smoothing"])
        if cfg["norm_pos"] == "mix":
            cfg["mix_ratio"] = 0.5
        out.append(cfg)
    return out


CONFIGS += pairwise_configs()


def tag_of(k, cfg):
    keys = ("task", "norm_pos", "norm", "qk_norm", "activation", "pos", "bias", "tie_output",
            "label_smoothing", "input_scale")
    return f"cfg{k}[" + ",".join(f"{cfg[x]}" for x in keys if x in cfg) + "]"


# ---------------------------------------------------------------------------
# per-configuration derivative checks

def test_config(k, cfg):
    tag = tag_of(k, cfg)
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

    # Gauss-Newton part: symmetric positive semidefinite; H_out is the loss's Hessian
    gv, gu = R.ggn(c, layout, theta, tb, v).numpy(), R.ggn(c, layout, theta, tb, u).numpy()
    sym = abs(u @ gv - v @ gu) / max(1.0, abs(u @ gv))
    check(f"{tag} u.Gv == v.Gu, v.Gv >= 0", sym < 1e-11 and v @ gv >= -1e-14,
          f"rel diff {sym:.2e}, v.Gv {v @ gv:.3e}")
    with torch.no_grad():
        z = R.logits_fn(c, R.unflatten(torch.tensor(theta), layout), tb)
        z = z * min(1.0, 8.0 / float(z.abs().max()))   # unsaturated: H_out not all rounding
    du = torch.tensor(rng.normal(size=tuple(z.shape)))
    e = relerr(R.hout_apply(c, z, tb, du), loss_of_logits_hessian_check(c, z, tb, du))
    check(f"{tag} H_out == the loss's Hessian in the logits", e < 1e-13, f"{e:.1e}")
    if k % 7 == 0:   # dense matrices on some configurations
        H = R.dense_hessian(c, layout, theta, tb).numpy()
        G = dense_ggn(c, layout, theta, tb).numpy()
        eh, eg = relerr(hv, H @ v), relerr(gv, G @ v)
        es = np.abs(G - G.T).max() / np.abs(G).max()
        lam = np.linalg.eigvalsh((G + G.T) / 2).min() / np.abs(G).max()
        check(f"{tag} H v, G v vs dense H, G (J^T H_out J)", eh < 1e-12 and eg < 1e-12 and
              es < 1e-13 and lam > -1e-12, f"H {eh:.1e} G {eg:.1e} sym {es:.1e} min {lam:.1e}")

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
# parameter counts vs hand formula, names of MODEL.md §6 and issue 32

def count(c):
    d, f, bias = c["d"], c["d_ff"], c["bias"]
    nrm = {"layernorm": 2 * d if bias else d, "rmsnorm": d, "none": 0}[c["norm"]]
    per_sub = 2 * nrm if c["norm_pos"] == "peri" else nrm
    attn = 4 * d * d + (4 * d if bias else 0)
    ffp = 2 * d * f + ((f + d) if bias else 0)
    if c["activation"] == "swiglu":
        ffp += d * f + (f if bias else 0)
    final = nrm if c["norm_pos"] in ("pre", "peri", "out", "mix") else 0
    pos = c["max_len"] * d if c["pos"] == "learned" else 0
    n = 0
    if c["has_enc"]:
        n += c["V_src"] * d + pos + c["L_enc"] * (attn + ffp + 2 * per_sub) + final
    if c["has_dec"]:
        x = (attn + per_sub) if c["task"] == "seq2seq" else 0
        n += c["V_tgt"] * d + pos + c["L_dec"] * (attn + ffp + 2 * per_sub + x) + final
    if not c["tie_output"]:
        n += d * (c["n_classes"] if c["task"] == "cls" else c["V_tgt"])
    return n


def test_layout():
    for cfg in CONFIGS + [{"task": "seq2seq", "d": 16, "h": 4, "L_enc": 3, "L_dec": 2,
                           "V_src": 40, "V_tgt": 30, "norm": "rmsnorm", "norm_pos": "pre"}]:
        c = R.resolve_config(cfg)
        lay = R.param_layout(c)
        names = [nm for nm, _ in lay]
        ok = R.n_params(lay) == count(c) and len(set(names)) == len(names)
        if c["norm"] != "layernorm" or not c["bias"]:
            ok = ok and not any(nm.endswith(".b") and "norm" in nm for nm in names)
        if c["norm_pos"] in ("post", "deepnorm"):
            ok = ok and not any("final_norm" in nm for nm in names)
        check(f"layout count {tag_of(0, cfg)}", ok, f"{R.n_params(lay)} vs {count(c)}")
    attn = lambda p, b=True: [f"{p}.{x}" for x in (  # noqa: E731
        ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo") if b else ("wq", "wk", "wv", "wo"))]
    ln = lambda p: [p + ".g", p + ".b"]  # noqa: E731
    ffn = ["ffn.w1", "ffn.b1", "ffn.w2", "ffn.b2"]
    want = ["src_emb", "tgt_emb"] + attn("enc.0.attn") + ln("enc.0.norm1") + \
        ["enc.0." + x for x in ffn] + ln("enc.0.norm2") + ln("enc.final_norm") + \
        attn("dec.0.attn") + ln("dec.0.norm1") + attn("dec.0.xattn") + ln("dec.0.norm2") + \
        ["dec.0." + x for x in ffn] + ln("dec.0.norm3") + ln("dec.final_norm") + ["out.w"]
    cases = [({"task": "seq2seq", "L": 1, "norm_pos": "pre"}, want, "seq2seq pre (MODEL.md §6)")]
    want = ["tgt_emb", "tgt_pos"] + attn("dec.0.attn") + ln("dec.0.norm1") + \
        ln("dec.0.norm1_out") + ["dec.0.ffn." + x for x in ("w1", "b1", "w3", "b3", "w2", "b2")] \
        + ln("dec.0.norm2") + ln("dec.0.norm2_out") + ln("dec.final_norm") + ["out.w"]
    cases.append(({"task": "lm", "L": 1, "norm_pos": "peri", "activation": "swiglu",
                   "pos": "learned"}, want, "lm peri swiglu learned"))
    want = ["src_emb", "tgt_emb"] + attn("enc.0.attn", False) + ["enc.0.norm1_out.g"] + \
        ["enc.0.ffn.w1", "enc.0.ffn.w2", "enc.0.norm2_out.g", "enc.final_norm.g"] + \
        attn("dec.0.attn", False) + ["dec.0.norm1_out.g"] + attn("dec.0.xattn", False) + \
        ["dec.0.norm2_out.g", "dec.0.ffn.w1", "dec.0.ffn.w2", "dec.0.norm3_out.g",
         "dec.final_norm.g", "out.w"]
    cases.append(({"task": "seq2seq", "L": 1, "norm_pos": "out", "bias": False}, want,
                  "seq2seq out bias=false (LayerNorm without b)"))
    want = ["src_emb", "src_pos"] + attn("enc.0.attn") + ln("enc.0.norm1") + \
        ["enc.0." + x for x in ffn] + ln("enc.0.norm2") + ["out.w"]
    cases.append(({"task": "cls", "L": 1, "norm_pos": "deepnorm", "pos": "learned"}, want,
                  "cls deepnorm learned"))
    for cfg, want, what in cases:
        names = [nm for nm, _ in R.param_layout(R.resolve_config(cfg))]
        check(f"layout order {what}", names == want, f"{names}")
    c = R.resolve_config({"task": "lm", "L": 1})
    names = [nm for nm, _ in R.param_layout(c)]
    check("layout lm: no enc/src_emb, norms renumbered",
          names[0] == "tgt_emb" and not any(nm.startswith(("enc.", "src_emb")) for nm in names)
          and "dec.0.norm2.g" in names and not any("norm3" in nm or "xattn" in nm
                                                   for nm in names))
    c = R.resolve_config({"task": "lm", "pos": "learned", "max_len": 4, "V": 9})
    tb = {"tgt": np.array([[2, 5, 6, 7, 8, 3]])}
    try:
        R.check_batch(c, tb)
        ok = False
    except R.RefError as e:
        ok = "max_len" in str(e)
    check("learned positions: a batch longer than max_len is refused", ok)


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


def main():
    run("safetensors", test_safetensors)
    run("layout", test_layout)
    selftest_forward.run_all(run)
    for k, cfg in enumerate(CONFIGS):
        run(f"config {k}", test_config, k, cfg)
    run("cli", selftest_cli.test_cli, TMP)
    print(f"{RESULTS['pass']} passed, {RESULTS['fail']} failed")
    return 0 if RESULTS["fail"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
