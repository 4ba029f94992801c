"""The reference's command line (tests/ref_torch.py), part of
tests/test_ref_torch.py: flat and named vectors, the dense Hessian, G v and
F v, the torch.nn model, jobs, error exits."""
import contextlib
import io
import json
import os

import numpy as np

import ref_torch as R
from .derivs import dense_ggn
from .testkit import check, random_weights, random_batch, grad_of, relerr


def cli(*args):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = R.main([str(a) for a in args])
    return rc, err.getvalue()


def test_cli(TMP):
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
    cfg_nn, bn = _ggn_nn_jobs(TMP, rng, (cp, wp, bp, vp, onp), o, c, layout, theta, tb, v)
    _errors(TMP, rng, cfg, w, b, onp, cfg_nn, bn)


def _ggn_nn_jobs(TMP, rng, paths, o, c, layout, theta, tb, v):
    """--ggn, --nn (expressible or not), --jobs."""
    cp, wp, bp, vp, onp = paths
    # G v and F v against the dense Gauss-Newton matrix; F v = H v - G v
    rc, err = cli("--config", cp, "--weights", wp, "--batch", bp, "--vector", vp, "--ggn",
                  "-o", onp)
    o3, _ = R.st_read(onp) if rc == 0 else ({}, None)
    G = dense_ggn(c, layout, theta, tb).numpy() if rc == 0 else None
    check("cli --ggn: gv == dense G v, fv == hv - gv, hv unchanged",
          rc == 0 and relerr(o3["gv"], G @ v) < 1e-12 and
          np.array_equal(o3["fv"], o3["hv"] - o3["gv"]) and np.array_equal(o3["hv"], o["hv"]),
          err)
    rc, err = cli("--config", cp, "--weights", wp, "--batch", bp, "--ggn", "-o", onp)
    check("cli error: --ggn without --vector", rc == 2 and "--vector" in err, err)

    # --nn: expressible (post, LayerNorm, no qk_norm) and not (this config's qk_norm)
    cfg_nn = {"task": "seq2seq", "d": 4, "h": 2, "d_ff": 6, "L": 1, "V": 7,
              "activation": "gelu", "tie_output": True}
    cn = R.resolve_config(cfg_nn)
    ln = R.param_layout(cn)
    wn = random_weights(ln, rng)
    bn = random_batch(cn, rng)
    cpn, wpn, bpn = (os.path.join(TMP, f) for f in ("cn.json", "wn.st", "bn.st"))
    json.dump(cfg_nn, open(cpn, "w"))
    R.st_write(wpn, wn)
    R.st_write(bpn, bn)
    rc, err = cli("--config", cpn, "--weights", wpn, "--batch", bpn, "--nn", "-o", onp)
    o4, m4 = R.st_read(onp) if rc == 0 else ({}, {})
    check("cli --nn: nn_loss, nn_grad == loss, grad (1e-13, 1e-12)",
          rc == 0 and abs(o4["nn_loss"][0] - o4["loss"][0]) < 1e-13 * o4["loss"][0] and
          relerr(o4["nn_grad"], o4["grad"]) < 1e-12 and "nn_skipped" not in m4, err)
    rc, err = cli("--config", cp, "--weights", wp, "--batch", bp, "--nn", "-o", onp)
    o5, m5 = R.st_read(onp) if rc == 0 else ({}, {})
    check("cli --nn on a configuration torch.nn lacks: nn_skipped says why",
          rc == 0 and "nn_loss" not in o5 and "qk_norm" in m5.get("nn_skipped", ""), err)

    # --jobs: several commands in one process; a bad job is named, the others run
    jp = os.path.join(TMP, "jobs.json")
    outs = [os.path.join(TMP, f"j{i}.st") for i in range(3)]
    for f in outs:
        if os.path.exists(f):
            os.remove(f)
    json.dump([{"config": cp, "weights": wp, "batch": bp, "vector": vp, "ggn": True,
                "output": outs[0]},
               {"config": cp, "weights": wpn, "batch": bp, "output": outs[1]},
               {"config": cpn, "weights": wpn, "batch": bpn, "nn": True, "output": outs[2]}],
              open(jp, "w"))
    rc, err = cli("--jobs", jp)
    ok = rc == 2 and "job 1:" in err and "job 0" not in err and not os.path.exists(outs[1])
    ok = ok and np.array_equal(R.st_read(outs[0])[0]["gv"], o3["gv"])
    ok = ok and np.array_equal(R.st_read(outs[2])[0]["nn_grad"], o4["nn_grad"])
    check("cli --jobs: outputs as single runs, bad job named", ok, err)
    json.dump([{"config": cp, "weights": wp, "batch": bp, "output": outs[0], "hv": 1}],
              open(jp, "w"))
    rc, err = cli("--jobs", jp)
    check("cli --jobs: unknown job key refused", rc == 2 and "job 0:" in err, err)
    return cfg_nn, bn


def _errors(TMP, rng, cfg, w, b, onp, cfg_nn, bn):
    """Error exits: one line naming the problem, exit 2."""
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


    cfg_l = dict(cfg_nn, pos="learned", max_len=3)
    cl = R.resolve_config(cfg_l)
    expect_error("learned positions beyond max_len", "max_len", cfg2=cfg_l,
                 w2=random_weights(R.param_layout(cl), rng), b2=bn)
