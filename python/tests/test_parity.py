"""Python and the lnkit program compute the same things with the same
defaults (issue 31.5): lnkit.trace = `lnkit trace`, lnkit.blocks = `lnkit
blocks` (every column, the distances and the densities), eigs/trace/density
with operator= = `--operator`, and each function called with its defaults
runs what the command runs with its own (the sidecar records the settings).
The defaults come from the library's *_opts_default (lnkit.defaults())."""
import csv
import json

import numpy as np
import pytest

import lnkit
from conftest import run, read_eigs_csv, rel_err

TOL = 1e-12


@pytest.fixture(scope="module")
def md(pre):
    return lnkit.Model.load(pre.config, pre.weights), [pre.batch, pre.batch2]


def cli(pre, cmd, *args, ok=(0,)):
    return run(cmd, "--config", pre.config, "--weights", pre.weights, "--batch", pre.batch,
               "--batch", pre.batch2, *args, ok=ok)


def meta(path):
    return json.load(open(path.rsplit(".", 1)[0] + ".meta.json"))


def test_defaults_are_the_librarys():
    d = lnkit.defaults()
    assert d["eigs"] == {"k": 5, "max_steps": 200, "tol": 1e-6, "mode": "full",
                         "reorth": "partial", "rng_seed": 0}
    assert d["trace"] == {"method": "hutchinson", "probes": 100, "rng_seed": 0}
    assert (d["density"]["runs"], d["density"]["steps"]) == (10, 80)
    assert (d["density"]["start_vectors"], d["density"]["mode"], d["density"]["reorth"]) == (
        "rademacher", "full", "partial")
    assert (d["blocks"]["probes"], d["blocks"]["max_steps"], d["blocks"]["tol"]) == (30, 100, 1e-6)
    import inspect
    sig = inspect.signature(lnkit.eigs).parameters
    assert sig["tol"].default == d["eigs"]["tol"] and sig["k"].default == d["eigs"]["k"]
    assert inspect.signature(lnkit.trace).parameters["probes"].default == d["trace"]["probes"]
    ds = inspect.signature(lnkit.density).parameters
    assert ds["start_vectors"].default == d["density"]["start_vectors"]
    # reorth=None and sigma_fraction=None stand for these defaults (so that a
    # reorth given with mode='light', or two kernel widths, can be refused)
    assert sig["reorth"].default is None and ds["reorth"].default is None
    assert ds["sigma_fraction"].default is None and d["density"]["sigma_fraction"] == 0.01
    d["eigs"]["k"] = 99                     # a copy: the package's defaults stay
    assert lnkit.defaults()["eigs"]["k"] == 5


def test_eigs_defaults_equal_cli(md, pre):
    m, data = md
    out = pre.path("par_eigs.csv")
    cli(pre, "eigs", "-o", out, "--quiet", ok=(0, 3))
    top, _, _ = read_eigs_csv(out)
    side = meta(out)
    r = lnkit.eigs(m, data)
    assert len(r.top) == len(top) == side["k"]
    assert (r.tol, r.steps, r.stop) == (side["tol"], side["steps"], side["stop"])
    assert rel_err(r.top, top) <= TOL


@pytest.mark.parametrize("op", ["ggn", "functional"])
def test_operator_equals_cli(md, pre, op):
    m, data = md
    out = pre.path("par_eigs_%s.csv" % op)
    which = "top" if op == "ggn" else "both"
    cli(pre, "eigs", "--operator", op, "-k", 2, "--which", which, "--tol", "1e-8", "-o", out,
        "--quiet")
    top, bottom, res = read_eigs_csv(out)
    r = lnkit.eigs(m, data, k=2, which=which, tol=1e-8, operator=op)
    assert meta(out)["operator"] == op == r.operator
    assert rel_err(r.top, top) <= TOL and rel_err(r.residuals, res) <= 1e-6
    if bottom:
        assert rel_err(r.bottom, bottom) <= TOL
    t = json.loads(cli(pre, "trace", "--operator", op, "--probes", 12, "--json", "--quiet"))
    pt = lnkit.trace(m, data, probes=12, operator=op)
    assert pt.trace == pytest.approx(t["trace"], rel=TOL, abs=1e-14)
    out = pre.path("par_density_%s.csv" % op)
    cli(pre, "density", "--operator", op, "--runs", 2, "--steps", 10, "--sigma", "0.05",
        "-o", out, "--quiet")
    dens = lnkit.density(m, data, runs=2, steps=10, sigma=0.05, operator=op)
    assert rel_err(dens.density, [float(r["density"]) for r in csv.DictReader(open(out))]) <= 1e-10
    H = m.hessian(data, operator=op)
    assert lnkit.trace(H, probes=12).trace == pt.trace
    with pytest.raises(lnkit.Error, match="operator"):
        lnkit.trace(H, operator="hessian")


@pytest.mark.parametrize("method", [None, "hutchinson", "hutchpp"])
def test_trace_equals_cli(md, pre, method):
    m, data = md
    args = ["--method", method] if method else []
    out = pre.path("par_trace.csv")
    t = json.loads(cli(pre, "trace", *args, "--json", "-o", out, "--quiet"))
    kw = {"method": method} if method else {}
    r = lnkit.trace(m, data, **kw)
    assert (r.method, r.probes) == (t["method"], t["probes"]) == (
        meta(out)["method"], meta(out)["probes"])
    assert r.trace == pytest.approx(t["trace"], rel=TOL)
    assert r.stderr == pytest.approx(t["stderr"], rel=1e-10)
    r2 = lnkit.trace(m, data, rng_seed=3, block="*.attn.*", probes=20, **kw)
    t2 = json.loads(cli(pre, "trace", *args, "--rng-seed", 3, "--block", "*.attn.*",
                        "--probes", 20, "--json", "--quiet"))
    assert r2.trace == pytest.approx(t2["trace"], rel=TOL)


def test_density_defaults_equal_cli(md, pre):
    m, data = md
    out, nodes = pre.path("par_density.csv"), pre.path("par_nodes.csv")
    cli(pre, "density", "--sigma-fraction", lnkit.defaults()["density"]["sigma_fraction"],
        "-o", out, "--nodes", nodes, "--quiet")
    rows = list(csv.DictReader(open(out)))
    d = lnkit.density(m, data)
    assert len(d.nodes) == meta(out)["runs"] and max(map(len, d.nodes)) <= meta(out)["steps"]
    assert len(rows) == len(d.t)
    assert rel_err(d.t, [float(r["t"]) for r in rows]) <= TOL
    assert rel_err(d.density, [float(r["density"]) for r in rows]) <= 1e-10


def test_density_bad_width_message(md, pre):
    """A kernel width that overflows (the nodes' range here is above 2): the
    library's own words (the CLI shows them after its option:
    tests/test_robust_values.c), no internal function name."""
    m, data = md
    with pytest.raises(lnkit.Error) as e:
        lnkit.density(m, data, runs=1, steps=6, sigma_fraction=1e308)
    msg = str(e.value)
    assert msg.startswith("fraction f = 1e+308 of the spectral range [") and \
        msg.endswith("gives sigma = inf; expected a finite sigma > 0"), msg


def test_blocks_equal_cli(md, pre):
    """Default settings, the tensors of one pattern and two groups: every
    column of -o, --pairs and --density."""
    m, data = md
    o, p, dn = (pre.path("par_blocks_%s.csv" % x) for x in ("o", "pairs", "density"))
    cli(pre, "blocks", "--block", "dec.1.attn.w*", "--group", "*.ffn.*", "--group", "dec.0.*",
        "-o", o, "--pairs", p, "--density", dn, "--quiet", ok=(0, 3))
    b = lnkit.blocks(m, data, block="dec.1.attn.w*", group=["*.ffn.*", "dec.0.*"])
    rows = list(csv.DictReader(open(o)))
    assert [r["block"] for r in rows] == b.names and len(rows) == 6
    side = meta(o)
    assert (side["probes"], side["eig_steps"], side["tol"], side["runs"], side["steps"]) == (
        b.probes, lnkit.defaults()["blocks"]["max_steps"], lnkit.defaults()["blocks"]["tol"],
        lnkit.defaults()["blocks"]["runs"], lnkit.defaults()["blocks"]["steps"])
    assert side["sigma"] == pytest.approx(b.sigma, rel=TOL)
    for mine, theirs in zip(b.rows(), rows):
        assert list(theirs) == list(lnkit.BlockStats.COLUMNS)
        for c in lnkit.BlockStats.COLUMNS:
            a, t = mine[c], theirs[c]
            if isinstance(a, float):
                assert a == pytest.approx(float(t), rel=1e-10, abs=1e-13), (mine["block"], c)
            else:
                assert str(int(a) if isinstance(a, bool) else a) == t, (mine["block"], c)
    pairs = list(csv.DictReader(open(p)))
    assert len(pairs) == 15
    for r in pairs:
        i, j = b.names.index(r["block_a"]), b.names.index(r["block_b"])
        assert b.js[i, j] == pytest.approx(float(r["js_distance"]), rel=1e-9, abs=1e-13)
    dens = list(csv.DictReader(open(dn)))
    assert len(dens) == 6 * len(b.t)
    assert rel_err(b.density.ravel(), [float(r["density"]) for r in dens]) <= 1e-10
    assert rel_err(b.t, [float(r["t"]) for r in dens[:len(b.t)]]) <= TOL


def test_blocks_options(md):
    m, data = md
    H = m.hessian(data, operator="ggn", block="out.w")
    with pytest.warns(lnkit.ConvergenceWarning, match="bottom_converged"):  # G's zero cluster
        b = lnkit.blocks(H, probes=4, runs=1, steps=6, max_steps=30, sigma=0.1, group=["*.b1"])
    assert b.names == ["out.w", "*.b1"] and b.types == ["tensor", "group"]
    assert b.operator == "ggn" and (b.bottom >= -1e-8 * np.abs(b.top)).all()
    assert b.sigma == 0.1 and b.js.shape == (2, 2) and b.js[0, 1] == b.js[1, 0] > 0
    assert np.all(np.abs(np.trapz(b.density, b.t, axis=1) - 1) < 1e-6)
    assert H.n_products == 0               # H itself was not used (a new workspace was)
    with pytest.raises(lnkit.Error, match="more than once"):
        lnkit.blocks(m, data, group=["*.b1", "*.b1"])
    with pytest.raises(lnkit.Error, match="no block"):
        lnkit.blocks(m, data, no_tensors=True)
    with pytest.raises(lnkit.Error, match="enc"):
        lnkit.blocks(m, data, group=["enc.*"])
    with pytest.raises(lnkit.Error, match="cancel"):
        lnkit.blocks(m, data, block="out.w", probes=2, runs=1, steps=3, max_steps=5,
                     progress=lambda p: True)


def test_seed_range_is_the_programs(md, pre):
    """rng_seed= takes what --rng-seed takes, so any Python run can be repeated
    with the lnkit program."""
    import subprocess
    from conftest import lnkit_bin
    m, data = md
    for seed in (0, lnkit._curvature.SEED_MAX, lnkit._curvature.SEED_MAX + 1, -1):
        r = subprocess.run([lnkit_bin(), "trace", "--config", pre.config, "--weights",
                            pre.weights, "--batch", pre.batch, "--probes", "2", "--rng-seed",
                            str(seed), "--quiet"], capture_output=True, text=True)
        try:
            lnkit.trace(m, data, probes=2, rng_seed=seed)
            py_ok = True
        except lnkit.Error as e:
            py_ok = False
            assert "seed" in str(e)
        assert py_ok == (r.returncode == 0), (seed, r.stderr)


def test_blocks_zero_block_rule_equal_cli(md, pre):
    """A block that is zero to rounding (the attention key bias, which
    softmax ignores) counts as converged by the same rule in both: its
    extremes are 0 to what the products resolve (lnk_blockstat_settle)."""
    m, data = md
    o = pre.path("par_blocks_zero.csv")
    cli(pre, "blocks", "--block", "dec.0.attn.*", "-o", o, "--quiet", ok=(0, 3))
    rows = {r["block"]: r for r in csv.DictReader(open(o))}
    b = lnkit.blocks(m, data, block="dec.0.attn.*")
    zero = [n for n in b.names if n.endswith(".bk")]
    assert zero, b.names
    i = b.names.index(zero[0])
    scale = max(np.max(np.abs(b.top)), np.max(np.abs(b.bottom)))
    assert max(abs(b.top[i]), abs(b.bottom[i])) <= 1e-10 * scale   # zero to rounding
    for n in b.names:
        j = b.names.index(n)
        assert (int(b.top_converged[j]), int(b.bottom_converged[j])) == (
            int(rows[n]["top_converged"]), int(rows[n]["bottom_converged"])), n
    assert b.top_converged[i] and b.bottom_converged[i]


def refused(pre, cmd, *args):
    """The lnkit program's one-line refusal (exit 2) of cmd with these options."""
    import subprocess
    from conftest import lnkit_bin
    r = subprocess.run([lnkit_bin(), cmd, "--config", pre.config, "--weights", pre.weights,
                        "--batch", pre.batch, *map(str, args), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    return r.stderr.strip()


@pytest.mark.parametrize("args,kw", [
    (["--sigma-variance", "1e-3"], {"sigma_variance": 1e-3}),
    (["--sigma-kappa", "3", "--start-vectors", "gaussian"],
     {"sigma_kappa": 3, "start_vectors": "gaussian"}),
    (["--reorth", "always", "--sigma", "0.05"], {"reorth": "always", "sigma": 0.05}),
    (["--mode", "light", "--grid-per-sigma", "6"], {"mode": "light", "grid_per_sigma": 6})])
def test_density_options_equal_cli(md, pre, args, kw):
    """Every option of `lnkit density` has its keyword, with the same
    meaning: the same grid and density, and the sidecar's settings."""
    m, data = md
    out = pre.path("par_density_opts.csv")
    cli(pre, "density", "--runs", 3, "--steps", 12, *args, "-o", out, "--quiet")
    rows = list(csv.DictReader(open(out)))
    d = lnkit.density(m, data, runs=3, steps=12, **kw)
    side = meta(out)
    assert d.sigma == pytest.approx(side["sigma"], rel=1e-12)
    assert (d.sigma_option.replace("_", "-"), d.sigma_value) == (side["sigma_option"],
                                                                 side["sigma_value"])
    assert (d.start_vectors, d.mode, d.reorth) == (side["start"], side["mode"], side["reorth"])
    assert len(rows) == len(d.t)
    assert rel_err(d.t, [float(r["t"]) for r in rows]) <= TOL
    assert rel_err(d.density, [float(r["density"]) for r in rows]) <= 1e-10


def test_kernel_width_one_of_four(md, pre):
    """Two kernel widths are refused by both, as are widths out of range."""
    m, data = md
    assert "give only one of --sigma, --sigma-variance, --sigma-kappa, --sigma-fraction" in \
        refused(pre, "density", "--sigma", 0.1, "--sigma-kappa", 3)
    for f in (lnkit.density, lnkit.blocks):
        for two in ({"sigma": 0.1, "sigma_kappa": 3}, {"sigma_fraction": 0.02,
                                                       "sigma_variance": 1e-3}):
            with pytest.raises(lnkit.Error, match="give only one of sigma, sigma_variance, "
                               "sigma_kappa, sigma_fraction"):
                f(m, data, **two)
    assert "--sigma-kappa" in refused(pre, "density", "--sigma-kappa", 1)
    with pytest.raises(lnkit.Error, match="sigma_kappa: expected a number > 1"):
        lnkit.density(m, data, sigma_kappa=1)
    with pytest.raises(lnkit.Error, match="sigma_variance: expected a number > 0"):
        lnkit.blocks(m, data, sigma_variance=0)


@pytest.mark.parametrize("args,kw", [(["--sigma-variance", "1e-3"], {"sigma_variance": 1e-3}),
                                     (["--sigma-kappa", "3"], {"sigma_kappa": 3})])
def test_blocks_width_equal_cli(md, pre, args, kw):
    m, data = md
    o, dn = pre.path("par_blocks_w.csv"), pre.path("par_blocks_wd.csv")
    cli(pre, "blocks", "--block", "dec.1.attn.w*", "--runs", 2, "--steps", 12, *args, "-o", o,
        "--density", dn, "--quiet", ok=(0, 3))
    b = lnkit.blocks(m, data, block="dec.1.attn.w*", runs=2, steps=12, **kw)
    side = meta(o)
    assert b.sigma == pytest.approx(side["sigma"], rel=1e-12)
    assert b.sigma_option.replace("_", "-") == args[0][2:]
    dens = list(csv.DictReader(open(dn)))
    assert len(dens) == len(b.names) * len(b.t)
    assert rel_err(b.density.ravel(), [float(r["density"]) for r in dens]) <= 1e-10


@pytest.mark.parametrize("op", ["ggn", "functional"])
def test_hvp_operator_equals_cli(md, pre, op):
    """m.hvp(operator=) is `lnkit hvp --operator`: G v and F v, with G v + F v = H v."""
    m, data = md
    v = m.load_vector(pre.vector)
    out = pre.path("par_hvp_%s.safetensors" % op)
    cli(pre, "hvp", "--operator", op, "--vector", pre.vector, "-o", out, "--quiet")
    theirs = m.load_vector(out)
    mine = m.hvp(data, v, operator=op)
    assert rel_err(mine, theirs) <= 1e-12
    hv = m.hvp(data, v)
    other = m.hvp(data, v, operator="functional" if op == "ggn" else "ggn")
    assert rel_err(mine, hv) > 1e-3                  # not H v
    assert rel_err(mine + other, hv) <= 1e-10        # H = G + F
    with pytest.raises(lnkit.Error, match="operator"):
        m.hvp(data, v, operator="gauss-newton")


@pytest.mark.parametrize("op", ["hessian", "ggn"])
def test_hvp_block_equals_cli(md, pre, op):
    """`lnkit hvp --block P [--chunk N]` writes A_bb v_b in the block, 0 outside
    it (v whole, its other entries unused): the block part is m.hvp(v_b,
    block=P), and the whole product of v cut to the block, restricted to it."""
    import fnmatch
    m, data = md
    P = "dec.0.attn.*,*.ffn.w2"
    inb = np.zeros(m.n_params, dtype=bool)
    for name in m.names:
        if any(fnmatch.fnmatchcase(name, g) for g in P.split(",")):
            off, size, _ = m.offset(name)
            inb[off:off + size] = True
    assert 0 < inb.sum() < m.n_params
    v = m.load_vector(pre.vector)
    assert np.all(v[~inb] != 0)                      # the entries the block must not use
    cut = np.where(inb, v, 0.0)
    vcut = pre.path("par_hvp_cut.safetensors")
    m.save_vector(vcut, cut)
    whole = pre.path("par_hvp_whole_%s.safetensors" % op)
    cli(pre, "hvp", "--operator", op, "--vector", vcut, "-o", whole, "--quiet")
    full = m.load_vector(whole)[inb]                 # (A v_cut) restricted to the block
    mine = m.hvp(data, v[inb], block=P, operator=op)
    assert rel_err(mine, full) <= TOL
    for chunk in ([], ["--chunk", "2"]):
        out = pre.path("par_hvp_block_%s.safetensors" % op)
        cli(pre, "hvp", "--operator", op, "--block", P, *chunk, "--vector", pre.vector, "-o",
            out, "--quiet")
        theirs = m.load_vector(out)
        assert rel_err(theirs[inb], mine) <= TOL
        assert rel_err(theirs[inb], full) <= TOL
        assert np.all(theirs[~inb] == 0)


def test_reorth_only_with_full_mode(md, pre):
    """reorth given with mode='light' is refused in the program's words; left
    out it is the library's default, which the result records as the sidecar
    of `lnkit eigs --mode light` does."""
    m, data = md
    for cmd, f in (("eigs", lnkit.eigs), ("density", lnkit.density)):
        assert refused(pre, cmd, "--mode", "light", "--reorth", "always") == (
            "lnkit %s: --reorth applies only with --mode full, not --mode light" % cmd)
        with pytest.raises(lnkit.Error) as e:
            f(m, data, mode="light", reorth="always")
        assert str(e.value) == "%s: reorth applies only with mode='full', not mode='light'" % cmd
    out = pre.path("par_eigs_light.csv")
    cli(pre, "eigs", "--mode", "light", "-k", 1, "--max-steps", 40, "-o", out, "--quiet",
        ok=(0, 3))
    import inspect
    assert inspect.signature(lnkit.eigs).parameters["reorth"].default is None
    r = lnkit.eigs(m, data, k=1, max_steps=40, mode="light")
    assert (r.mode, r.reorth) == ("light", lnkit.defaults()["eigs"]["reorth"]) == (
        meta(out)["mode"], meta(out)["reorth"])
    top, _, _ = read_eigs_csv(out)
    assert rel_err(r.top, top) <= TOL
    r = lnkit.eigs(m, data, k=1, reorth="always", tol=1e-8)
    assert r.reorth == "always" and r.n_reorth > 0


def test_synthetic_defaults_and_seed_range_equal_cli(md, pre):
    """Data.synthetic's defaults are `lnkit batch --synthetic`'s (rows, len,
    seed: the same batch, so the same loss bitwise) and its seed range is
    --rng-seed's."""
    import subprocess
    from conftest import lnkit_bin
    m, _ = md
    out = pre.path("par_synthetic.safetensors")
    run("batch", "--synthetic", "--config", pre.config, "-o", out, "--quiet")
    d = lnkit.Data.synthetic(m)
    assert d.n_scored(m) == lnkit.Data([out]).n_scored(m)
    assert m.loss(d) == m.loss([out])
    seed = lnkit._curvature.SEED_MAX
    run("batch", "--synthetic", "--config", pre.config, "--rng-seed", seed, "-o", out, "--quiet")
    assert m.loss(lnkit.Data.synthetic(m, rng_seed=seed)) == m.loss([out])
    r = subprocess.run([lnkit_bin(), "batch", "--synthetic", "--config", pre.config, "--rng-seed",
                        str(seed + 1), "-o", out, "--quiet"], capture_output=True, text=True)
    assert r.returncode == 2 and "--rng-seed" in r.stderr
    with pytest.raises(lnkit.Error, match="seed"):
        lnkit.Data.synthetic(m, rng_seed=seed + 1)


@pytest.mark.parametrize("chunk", [None, 2])
def test_loss_grad_equals_cli(md, pre, chunk):
    """`lnkit eval [--chunk N]` and `lnkit vector --gradient [--chunk N]` give
    m.loss_grad(Data(files, chunk=N)): the same loss and gradient."""
    m, files = md
    loss, g = m.loss_grad(lnkit.Data(files, chunk=chunk))
    extra = ["--chunk", chunk] if chunk else []
    ev = json.loads(cli(pre, "eval", *extra, "--json", "--quiet"))
    assert abs(ev["loss"] - loss) <= TOL * abs(loss)
    assert abs(ev["grad_norm_total"] - np.linalg.norm(g)) <= 1e-10 * np.linalg.norm(g)
    out = pre.path("par_grad_%s.safetensors" % chunk)
    cli(pre, "vector", "--gradient", *extra, "-o", out, "--quiet")
    assert rel_err(m.load_vector(out), g) <= TOL
