"""The placement study's driver (studies/placements) on tiny models, against
independent computations: the dense H, G = J^T H_out J and F = H - G built
column by column from exact products (lnkit's Python package, whose products
tests/test_ggn.c and the reference tests check against finite differences and
PyTorch), their eigenvalues, eigenvectors, traces and blocks by NumPy; the
gradient against `lnkit eval`.  The groups are rebuilt here from the tensor
names by the rule stated in studies/placements/place.h.

Run: make test-placements (BUILD, LNKIT_LIB, PYTHONPATH=python)."""
import csv
import json
import math
import os
import re
import subprocess

import numpy as np
import pytest

import lnkit

BUILD = os.environ.get("BUILD", "build")
DRIVER = os.path.abspath(os.path.join(BUILD, "studies", "placements"))
LNKIT = os.path.abspath(os.path.join(BUILD, "bin", "lnkit"))
TINY = {"d": 8, "h": 2, "L": 1, "V": 12, "d_ff": 16}
B, T, BATCH_SEED = 2, 4, 1234
KINDS = {"attn.wq": "Q", "attn.wk": "K", "attn.wv": "V", "attn.wo": "O", "xattn.wq": "XQ",
         "xattn.wk": "XK", "xattn.wv": "XV", "xattn.wo": "XO", "ffn.w1": "FFN1",
         "ffn.w3": "FFN3", "ffn.w2": "FFN2"}


def group_of(name):
    """The group of a tensor (place.h): a weight matrix of a layer, the layer's
    norms or biases, emb, final, out."""
    if name == "out.w":
        return "out"
    if name.endswith("_emb") or name.endswith("_pos"):
        return "emb"
    if ".final_norm." in name:
        return name[:3] + ".final"
    m = re.match(r"(enc|dec)\.(\d+)\.(.*)$", name)
    side, layer, rest = m.groups()
    kind = KINDS.get(rest, "norm" if rest.startswith("norm") else "bias")
    return "%s.%s.%s" % (side, layer, kind)


def groups(model):
    """{group: coordinate indices}, in layout order."""
    g = {}
    for name in model.names:
        off, size, _ = model.offset(name)
        g.setdefault(group_of(name), []).extend(range(off, off + size))
    return {k: np.array(v) for k, v in g.items()}


def run(part, out, cfg, *extra):
    args = [DRIVER, "--part", part, "--out", str(out), "--rows", str(B), "--len", str(T),
            "--quiet"]
    for k, v in cfg.items():
        args += ["--" + k.replace("_", "-"), str(v).lower() if isinstance(v, bool) else str(v)]
    subprocess.run(args + list(extra), check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    with open(out) as f:
        rows = list(csv.DictReader(f))
    meta = json.load(open(str(out)[:-4] + ".meta.json"))
    return rows, meta


def dense(cfg, seed):
    m = lnkit.Model(cfg, seed=seed)
    data = lnkit.Data.synthetic(m, B, T, rng_seed=BATCH_SEED)
    n = m.n_params
    mats = {}
    for op in ("hessian", "ggn"):
        A = m.hessian(data, operator=op, cache_mb=0)
        M = np.column_stack([A.matvec(e) for e in np.eye(n)])
        mats[op] = (M + M.T) / 2
    mats["functional"] = mats["hessian"] - mats["ggn"]
    return m, data, mats


def unbiased(est, what, z_max=4.0):
    """Hutchinson estimates [(value, exact, se, source)]: each within z_max se,
    and the mean of the standardised errors within 3 / sqrt(k) of 0 over the k
    sources (rows from one source's probes share them, so their errors are
    correlated: a source's mean error has variance <= 1).  A bias of a few per
    cent on every block fails even where one block's se hides it."""
    by = {}
    for v, x, se, src in est:
        assert abs(v - x) <= z_max * se + 1e-12 * abs(x), (what, src, v, x, se)
        if se > 1e-12 * abs(x):
            by.setdefault(src, []).append((v - x) / se)
    z = [sum(e) / len(e) for e in by.values()]
    assert len(z) >= 3 and abs(sum(z) / len(z)) <= 3 / math.sqrt(len(z)), (what, z)


def pick(rows, **kw):
    return [r for r in rows if all(r[k] == v for k, v in kw.items())]


CASES = [("post", {}), ("peri", {"L": 2}), ("mix", {"L": 2, "mix_ratio": 0.5}),
         ("deepnorm", {"bias": False}), ("out", {"activation": "swiglu"}),
         ("pre", {"pos": "rope", "norm": "rmsnorm"})]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def case(request, tmp_path_factory):
    pos, more = request.param
    cfg = dict(TINY, norm_pos=pos, **more)
    m, data, mats = dense(cfg, seed=1)
    return cfg, m, data, mats, tmp_path_factory.mktemp(pos)


def test_extremes(case):
    cfg, m, data, mats, tmp = case
    rows, meta = run("extremes", tmp / "e.csv", dict(cfg, seed=1))
    assert meta["config"]["norm_pos"] == cfg["norm_pos"] and meta["part"] == "extremes"
    assert meta["n_params"] == m.n_params
    for op, M in mats.items():
        w = np.linalg.eigvalsh(M)
        scale = np.abs(w).max()
        top = pick(rows, measure="eig", operator=op, which="top")
        assert len(top) == 1 and top[0]["converged"] == "1"
        assert abs(float(top[0]["value"]) - w[-1]) <= 1e-6 * scale
        bot = pick(rows, measure="eig", operator=op, which="bottom")
        if op == "ggn":
            # G's bottom is not computed: rank G <= the bound < n, so it is 0
            bound = float(pick(rows, measure="g_rank_bound")[0]["value"])
            assert bound < m.n_params and np.linalg.matrix_rank(M, 1e-10 * scale) <= bound
            assert not bot and abs(w[0]) <= 1e-10 * scale
        else:
            assert len(bot) == 1 and abs(float(bot[0]["value"]) - w[0]) <= 1e-6 * scale
        tr = pick(rows, measure="trace", operator=op)[0]
        # Hutchinson: within 4 standard errors of the exact trace, the error of
        # the se itself bounded (64 probes: the sd of the sd is ~9%)
        exact = np.trace(M)
        se = float(tr["se"])
        assert abs(float(tr["value"]) - exact) <= 4 * se
        off = M - np.diag(np.diag(M))
        # the standard error of the mean (sd / sqrt 64), not the sd: within a
        # factor 3 of Hutchinson's sqrt(2 sum_{i != j} A_ij^2 / N) (the sample
        # sd of a heavy-tailed quadratic form scatters; the sd is 8x the se)
        assert 1 / 3 < se / math.sqrt(2 * (off ** 2).sum() / 64) < 3
    # H's extreme eigenvectors' mass on each group (sign-free), where the
    # eigenvalue is separated from the next by 1e-3 of the scale
    H = mats["hessian"]
    w, V = np.linalg.eigh(H)
    g = groups(m)
    sc = np.abs(w).max()
    for which, i, j in (("top", -1, -2), ("bottom", 0, 1)):
        if abs(w[i] - w[j]) < 1e-3 * sc:
            continue
        mass = {r["block"]: float(r["value"]) for r in pick(rows, measure="mass", which=which)}
        assert set(mass) == set(g)
        assert abs(sum(mass.values()) - 1) < 1e-10
        for k, idx in g.items():
            assert abs(mass[k] - (V[idx, i] ** 2).sum()) < 1e-4, (which, k)


def test_anatomy(case):
    cfg, m, data, mats, tmp = case
    rows, _ = run("anatomy", tmp / "a.csv", dict(cfg, seed=1), "--probes", "400")
    H = mats["hessian"]
    g = groups(m)
    fro = pick(rows, measure="frob")
    assert [r["block"] for r in fro] == list(g)
    assert all(int(r["n"]) == len(g[r["block"]]) for r in fro)
    unbiased([(float(r["value"]), np.linalg.norm(H[np.ix_(g[r["block"]], g[r["block"]])]),
               float(r["se"]), r["block"]) for r in fro], "frob")
    # JS distances in [0, sqrt(ln 2)], JS0 the count-weighted mean of the
    # kind pairs' means (every pair of weight blocks once)
    weights = [k for k in g if k.split(".")[-1] not in ("norm", "bias", "final")]
    npair = len(weights) * (len(weights) - 1) // 2
    for which in ("raw", "scaled"):
        js = pick(rows, measure="js", which=which)
        assert all(0 <= float(r["value"]) <= math.sqrt(math.log(2)) + 1e-12 for r in js)
        cnt = sum(int(r["steps"]) for r in js)
        assert cnt == npair
        js0 = pick(rows, measure="js0", which=which)[0]
        mean = sum(float(r["value"]) * int(r["steps"]) for r in js) / cnt
        assert int(js0["steps"]) == npair and abs(float(js0["value"]) - mean) < 1e-12


def test_grad_against_lnkit_eval(case, tmp_path):
    cfg, m, data, mats, tmp = case
    rows, _ = run("grad", tmp / "g.csv", dict(cfg, seed=1))
    args = []
    for k, v in dict(cfg, seed=1).items():
        args += ["--" + k.replace("_", "-"), str(v).lower() if isinstance(v, bool) else str(v)]
    subprocess.run([LNKIT, "init"] + args + ["-o", str(tmp_path / "w.safetensors"), "--quiet"],
                   check=True)
    subprocess.run([LNKIT, "batch", "--synthetic", "--config", str(tmp_path / "w.json"),
                    "--rows", str(B), "--len", str(T), "--rng-seed", str(BATCH_SEED), "-o",
                    str(tmp_path / "b.safetensors")], check=True, capture_output=True)
    out = subprocess.run([LNKIT, "eval", "--config", str(tmp_path / "w.json"), "--weights",
                          str(tmp_path / "w.safetensors"), "--batch",
                          str(tmp_path / "b.safetensors")], check=True, capture_output=True,
                         text=True).stdout
    ev = list(csv.DictReader(out.splitlines()))
    loss = [float(r["value"]) for r in ev if r["quantity"] == "loss"][0]
    norms = {r["tensor"]: float(r["value"]) for r in ev if r["quantity"] == "grad_norm"}
    assert abs(float(pick(rows, measure="loss")[0]["value"]) - loss) <= 1e-12 * loss
    want = {}
    for name in m.names:
        want[group_of(name)] = want.get(group_of(name), 0) + norms[name] ** 2
    got = {r["block"]: float(r["value"]) for r in pick(rows, measure="grad")}
    assert set(got) == set(want)
    for k in want:
        assert abs(got[k] - math.sqrt(want[k])) <= 1e-12 * max(1e-300, math.sqrt(want[k])), k
    # the Xiong et al. quantity: the last layer's FFN2
    last = "dec.%d.FFN2" % (cfg["L"] - 1)
    assert abs(got[last] - norms["dec.%d.ffn.w2" % (cfg["L"] - 1)]) <= 1e-12 * got[last]


def test_coupling(case):
    cfg, m, data, mats, tmp = case
    if cfg["norm_pos"] not in ("post", "peri"):
        pytest.skip("two placements are enough for the coupling part's arithmetic")
    # 2000 probes a source: the estimates' skew (a quadratic form's sample
    # mean and sd move together) is then small enough for normal limits
    rows, _ = run("coupling", tmp / "c.csv", dict(cfg, seed=1), "--cross-probes", "2000")
    H = mats["hessian"]
    g = groups(m)
    cross = pick(rows, measure="cross")
    assert len(cross) == len(g) ** 2
    # a block's rows or columns all 0 (a bias that no loss term reaches) give
    # an exact 0 with se 0
    unbiased([(float(r["value"]), np.linalg.norm(H[np.ix_(g[r["block"]], g[r["block_b"]])]),
               float(r["se"] or 0), r["block_b"]) for r in cross], "cross", 5.0)
    for k, idx in g.items():
        w = np.linalg.eigvalsh(H[np.ix_(idx, idx)])
        sc = np.abs(np.linalg.eigvalsh(H)).max()
        top = pick(rows, measure="block_eig", block=k, which="top")[0]
        assert abs(float(top["value"]) - w[-1]) <= 1e-6 * sc
        if len(idx) > 1:
            bot = pick(rows, measure="block_eig", block=k, which="bottom")[0]
            assert abs(float(bot["value"]) - w[0]) <= 1e-6 * sc


def test_scale(case, tmp_path):
    cfg, m, data, mats, tmp = case
    if cfg["norm_pos"] != "post":
        pytest.skip("one placement is enough for the scale part's arithmetic")
    cfg = dict(cfg, input_scale=2.5, norm="none")
    m, data, mats = dense(cfg, seed=1)
    rows, meta = run("scale", tmp_path / "s.csv", dict(cfg, seed=1), "--probes", "400",
                     "--cross-probes", "2000")
    assert meta["config"]["input_scale"] == 2.5
    g = groups(m)
    for op, M in mats.items():
        unbiased([(float(r["value"]), np.linalg.norm(M[np.ix_(g[r["block"]], g[r["block"]])]),
                   float(r["se"]), r["block"]) for r in pick(rows, measure="frob", operator=op)],
                 op)
        cross = pick(rows, measure="cross", operator=op)
        for r in cross:  # 4 sources: too few for the mean test; each row within 5 se
            x = np.linalg.norm(M[np.ix_(g[r["block"]], g[r["block_b"]])])
            assert abs(float(r["value"]) - x) <= 5 * float(r["se"] or 0) + 1e-12 * x, (op, r)
        src = {r["block_b"] for r in pick(rows, measure="cross", operator=op)}
        assert src == {"dec.0.Q", "dec.0.K", "dec.0.V", "dec.0.O"}


def test_bad_input(tmp_path):
    """One line naming the problem, exit 2, no output."""
    for args, msg in ((["--part", "nope"], "--part: expected"),
                      (["--part", "grad", "--d", "abc"], "--d: expected an integer"),
                      (["--part", "grad", "--foo", "1"], "unknown option '--foo'"),
                      (["--part", "grad", "--d", "7", "--h", "1"], "key 'd'"),
                      (["--part", "grad", "--checkpoint", "x"], "--checkpoint"),
                      (["--part", "grad", "--probes", "1"], "probes")):
        out = tmp_path / "x.csv"
        p = subprocess.run([DRIVER, "--out", str(out)] + args, capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr and p.stderr.count("\n") == 1, p.stderr
        assert not out.exists()


def test_runner_resumes(tmp_path):
    """The runner skips the points whose CSV and sidecar exist and runs the
    rest (a stub driver records its calls)."""
    stub = tmp_path / "stub"
    calls = tmp_path / "calls"
    stub.write_text("#!/bin/sh\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                    "echo \"$out\" >> %s\n"
                    "[ -f %s ] && case \"$out\" in *post_*s0.csv) exit 2 ;; esac\n"
                    "echo x > \"$out\"; echo '{}' > \"${out%%.csv}.meta.json\"\n"
                    % (calls, tmp_path / "fail"))
    (tmp_path / "fail").write_text("")
    stub.chmod(0o755)
    out = tmp_path / "res"
    script = os.path.join(os.path.dirname(__file__), "..", "studies", "scripts",
                          "study_placements.sh")

    def runner(*extra):
        return subprocess.run(["bash", script, "--bin", str(stub), "--out", str(out), "--work",
                               str(tmp_path / "w"), "--log", str(tmp_path / "log"), "--seeds",
                               "2"] + list(extra), capture_output=True, text=True)

    p = runner("coupling")
    assert p.returncode == 1 and "1 point(s) failed" in p.stderr  # post seed 0
    first = calls.read_text().split()
    assert len(first) == 12 and len(set(first)) == 12
    # each point's log line: the points done and the time left
    log = [x for x in (tmp_path / "log").read_text().splitlines() if " rc=" in x]
    done_n = [re.search(r" rc=\d+ \((\d+)/12, about \d+(\.\d)? (s|min|h) left\)$", x) for x in log]
    assert all(done_n) and sorted(int(m.group(1)) for m in done_n) == list(range(1, 13)), log
    done = sorted(x.name for x in (out / "coupling").glob("*.csv"))
    assert len(done) == 11
    calls.write_text("")
    (out / "coupling" / done[0]).with_suffix(".meta.json").unlink()  # cut off before its sidecar
    p = runner("coupling")
    assert p.returncode == 1
    again = calls.read_text().split()
    assert sorted(os.path.basename(x) for x in again) == sorted(
        [done[0], "post_layernorm_relu_sinusoidal_b1_L6_d64_s0.csv"])
    listed = runner("--list", "coupling").stdout.split("\n")
    assert len([x for x in listed if x.startswith("coupling ")]) == 1
    (tmp_path / "fail").unlink()
    calls.write_text("")
    assert runner("coupling").returncode == 0 and len(calls.read_text().split()) == 1
    assert runner("coupling").returncode == 0 and len(calls.read_text().split()) == 1
    bad = runner("--jobs", "x", "coupling")
    assert bad.returncode == 2 and "--jobs" in bad.stderr


def test_runner_first(tmp_path):
    """--first RE lists (and runs) the points whose file matches RE first, the
    others after, each group in the stages' order; a bad RE is one line, exit 2."""
    script = os.path.join(os.path.dirname(__file__), "..", "studies", "scripts",
                          "study_placements.sh")

    def listed(*extra):
        p = subprocess.run(["bash", script, "--bin", "/bin/true", "--out", str(tmp_path / "r"),
                            "--work", str(tmp_path / "w"), "--log", str(tmp_path / "log"),
                            "--list"] + list(extra), capture_output=True, text=True)
        return p, [x.split()[1] for x in p.stdout.splitlines()]

    _, plain = listed("coupling", "core")
    p, first = listed("--first", "anatomy/.*_L6_d(64|256)_s[12]", "coupling", "core")
    assert p.returncode == 0
    hit = [f for f in plain if re.search("anatomy/.*_L6_d(64|256)_s[12]", f)]
    assert len(hit) == 24 and sorted(first) == sorted(plain)
    assert first == hit + [f for f in plain if f not in hit]
    p, _ = listed("--first", "anatomy/(", "core")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--first" in p.stderr


def test_eigs_checkpoint_resumes(tmp_path):
    """--part eigs killed mid-run (SIGKILL, right after a save: the checkpoint
    file is replaced by rename, so its inode changes) and started again
    continues from its checkpoint: the same rows, bit for bit, as an
    uninterrupted run, and no checkpoint left behind."""
    import signal
    import time
    args = ["--part", "eigs", "--L", "2", "--d", "64", "--norm-pos", "peri", "--operator",
            "functional", "--tol", "0", "--max-steps", "120"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    subprocess.run([DRIVER, "--out", str(tmp_path / "ref.csv"), "--quiet"] + args, check=True,
                   env=env)
    ref = (tmp_path / "ref.csv").read_bytes()
    # --checkpoint-every applies only with --checkpoint (refused without it)
    args += ["--checkpoint-every", "2"]
    ck = tmp_path / "ck"
    resumed = 0
    for attempt in range(3):
        out = tmp_path / ("out%d.csv" % attempt)
        p = subprocess.Popen([DRIVER, "--out", str(out), "--quiet", "--checkpoint", str(ck)] +
                             args, env=env)
        t0 = time.time()
        while not ck.exists() and p.poll() is None and time.time() - t0 < 60:
            time.sleep(0.002)
        first = ck.stat().st_ino if ck.exists() else None
        saves = 0
        while p.poll() is None and saves <= attempt and time.time() - t0 < 60:
            try:
                ino = ck.stat().st_ino
            except FileNotFoundError:
                ino = first
            if ino != first:
                saves, first = saves + 1, ino
            time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert not out.exists() or p.returncode == 0
        subprocess.run([DRIVER, "--out", str(out), "--quiet", "--checkpoint", str(ck)] + args,
                       check=True, env=env)
        assert out.read_bytes() == ref
        assert not ck.exists() and not (tmp_path / "ck.basis").exists()
        meta = json.load(open(str(out)[:-4] + ".meta.json"))
        resumed += meta["products_before"] > 0
    assert resumed >= 2


def test_eigs_checkpoint_other_run(tmp_path):
    """A checkpoint of another run (here another --tol) is refused in one
    line that names it once, after the program's name (not 'placements:
    placements:'), exit 2, and the checkpoint is kept."""
    import signal
    import time
    args = ["--part", "eigs", "--L", "2", "--d", "64", "--operator", "hessian",
            "--max-steps", "120", "--checkpoint-every", "1"]
    out, ck = tmp_path / "e.csv", tmp_path / "ck"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    p = subprocess.Popen([DRIVER, "--out", str(out), "--quiet", "--checkpoint", str(ck),
                          "--tol", "0"] + args, env=env)
    t0 = time.time()
    while not ck.exists() and p.poll() is None and time.time() - t0 < 60:
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert ck.exists()
    r = subprocess.run([DRIVER, "--out", str(out), "--quiet", "--checkpoint", str(ck),
                        "--tol", "0.001"] + args, capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("placements: checkpoint %s belongs to a different run" % ck), \
        r.stderr
    assert "--tol" in r.stderr and ck.exists() and not out.exists()



def test_eigs_checkpoint_old_names(tmp_path):
    """A checkpoint made with an option's old name (--eig-steps, as before
    the rename) resumes with its new name (--max-steps): the identity keeps
    the old name, so the run is the same; the rows are those of an
    uninterrupted run, the sidecar keeps its key eig_steps, and the old name
    is one warning line."""
    import signal
    import time
    args = ["--part", "eigs", "--L", "2", "--d", "64", "--operator", "hessian", "--tol", "0"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    ref, out, ck = tmp_path / "ref.csv", tmp_path / "e.csv", tmp_path / "ck"
    subprocess.run([DRIVER, "--out", str(ref), "--quiet", "--max-steps", "120"] + args,
                   check=True, env=env)
    p = subprocess.Popen([DRIVER, "--out", str(out), "--checkpoint", str(ck),
                          "--checkpoint-every", "1", "--eig-steps", "120"] + args, env=env,
                         stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not ck.exists() and p.poll() is None and time.time() - t0 < 60:
        time.sleep(0.002)
    first = ck.stat().st_ino if ck.exists() else None
    while p.poll() is None and time.time() - t0 < 60:  # a save after the first
        try:
            if ck.stat().st_ino != first:
                break
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    err = p.communicate()[1]
    assert ck.exists()
    assert err.splitlines()[0] == ("placements: warning: --eig-steps is now --max-steps (the "
                                   "old name goes in the next release)"), err
    r = subprocess.run([DRIVER, "--out", str(out), "--quiet", "--checkpoint", str(ck),
                        "--max-steps", "120"] + args, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert out.read_bytes() == ref.read_bytes() and not ck.exists()
    meta = json.load(open(str(out)[:-4] + ".meta.json"))
    assert meta["products_before"] > 0 and meta["eig_steps"] == 120
