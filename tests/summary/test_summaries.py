"""The study summaries (python3 -m studies.summary STUDY DIR) on made-up rows whose
answers are worked out by hand here: the Hessian spectra's paired ratios over the
seeds where both values converged and the density's normalisation; the Multi30k
width trend and its prediction at d = 512; the factorial's exponents in every
cell; the geometry's one-dimension shift and orthogonality exponent; one claim of
the committed demo against numpy/scipy; errors as one line and exit status 2; the
factorial study script at a tiny size.

    BUILD=build python3 -m pytest tests/summary     (from the repository's root)
"""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as st

from studies.summary import geometry, writer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
ENV = dict(os.environ, LNKIT=os.environ.get("LNKIT") or os.path.join(ROOT, BUILD, "bin",
                                                                        "lnkit"))
T1, T10, T13 = 12.7062047, 2.22813885, 2.16036866  # Student's t, 97.5%


def put(d, name, head, rows, meta=None):
    os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
    with open(os.path.join(d, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(head)
        w.writerows(rows)
    with open(os.path.join(d, name[:-4] + ".meta.json"), "w") as f:
        json.dump(meta or {}, f)


def summary(study, d, ok=True):
    r = subprocess.run([sys.executable, "-m", "studies.summary", study, str(d)], cwd=ROOT,
                       env=ENV, capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr
    return r


def claims(d):
    with open(os.path.join(d, "claims.csv"), newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def est(text):
    """'m [lo, hi]' -> the three numbers."""
    return [float(t) for t in text.replace("[", " ").replace("]", " ").replace(",", " ").split()]


def near(got, want, rel=5e-3):
    return all(abs(g - w) <= rel * abs(w) + 1e-12 for g, w in zip(got, want))


def values(d):
    with open(os.path.join(d, "values.csv"), newline="") as f:
        return {r["name"]: r["value"] for r in csv.DictReader(f)}


def test_spectra(tmp_path):
    # Post/Pre top ratios 2 and 8 at seeds 0 and 1; seed 2's Pre-LN top did not converge, so
    # it is left out: geometric mean 4, log sd sqrt(2) ln 2, se ln 2, 1 dof.
    d = str(tmp_path)
    top = {("post", 0): 2.0, ("pre", 0): 1.0, ("post", 1): 16.0, ("pre", 1): 2.0,
           ("post", 2): 9.0, ("pre", 2): 3.0}
    put(d, "eigs.csv", ["norm_pos", "seed", "which", "index", "eigenvalue", "residual",
                        "converged"],
        [[p, s, w, 0, v if w == "top" else -v, 1e-12, int(not (p == "pre" and s == 2 and
                                                               w == "top"))]
         for (p, s), v in top.items() for w in ("top", "bottom")],
        {"config": {"task": "lm", "L": 2, "norm": "layernorm", "init": "xavier", "d": 8,
                    "h": 2, "d_ff": 32, "V": 20}, "data": "made up", "B": 2, "T": 4,
         "seeds": 3, "eig_tol": 1e-8, "slq_steps": 3})
    put(d, "trace.csv", ["norm_pos", "seed", "trace", "stderr"],
        [[p, s, 10.0, 1.0] for p, s in top])
    put(d, "blocks.csv", ["norm_pos", "seed", "block", "top_eigenvalue", "residual",
                          "converged"], [[p, s, "b0", v, 1e-9, 1] for (p, s), v in top.items()])
    put(d, "slq_nodes.csv", ["norm_pos", "seed", "run", "index", "node", "weight"],
        [[p, s, 0, i, -1.0 + 2 * i, 0.5] for p, s in top for i in (0, 1)])
    summary("hessian", d)
    c = claims(d)
    h = T1 * math.log(2)
    assert near(est(c["top"]["value"]), [4, 4 * math.exp(-h), 4 * math.exp(h)])
    ext = open(os.path.join(d, "extremes.md")).read()
    assert "| 2 of 3 |" in ext.split("top eigenvalue")[1].split("\n")[0]
    # |bottom| at all three seeds: ratios 2, 8, 3 (geometric mean 48^(1/3))
    assert near(est(c["bottom"]["value"])[:1], [48 ** (1 / 3)])
    with open(os.path.join(d, "density.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for p in ("post", "pre"):
        t = np.array([float(r["t"]) for r in rows if r["norm_pos"] == p])
        y = np.array([float(r["density"]) for r in rows if r["norm_pos"] == p])
        assert abs(np.sum((t[1:] - t[:-1]) * (y[1:] + y[:-1]) / 2) - 1) < 1e-6
    os.remove(os.path.join(d, "trace.csv"))
    r = summary("hessian", d, ok=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "trace.csv" in r.stderr


def test_multi30k_full_trend(tmp_path):
    # per-seed ratios 2 d^(1/4) exp(e), e = -0.1, 0, 0.1 at d = 32-256, one seed at 512 on
    # the line: slope 1/4, RSS = 4 x 0.02, s^2 = 0.08 / 10, Sxx = 3 x 5 (ln 2)^2
    d = str(tmp_path)
    runs = []
    for w in (32, 64, 128, 256, 512):
        for s, e in enumerate((-0.1, 0.0, 0.1) if w < 512 else (0.0,)):
            for p, v in (("post", 2 * w ** 0.25 * math.exp(e)), ("pre", 1.0)):
                put(d, f"d{w}_{p}_s{s}_eigs.csv", ["which", "index", "eigenvalue", "residual",
                                                   "converged"],
                    [["top", 0, v, 1e-9, 1], ["bottom", 0, -v, 1e-9, 1]],
                    {"k": 1, "block_size": 100, "products_total": 10})
                runs.append([f"d{w}_{p}_s{s}", "1.0"])
    put(d, "runs.csv", ["run", "seconds_per_product"], runs)
    summary("multi30k_full", d)
    c, v = claims(d), values(d)
    se = math.sqrt(0.008 / (15 * math.log(2) ** 2))
    assert near(est(c["top_trend"]["value"]), [0.25, 0.25 - T10 * se, 0.25 + T10 * se])
    assert c["top_trend"]["verdict"] == "grows"
    assert v["top_meas_inside"] == "inside" and v["top_meas"] == f"{2 * 512 ** 0.25:.3g}"


def factorial_rows(sweep, xs):
    """Rows of cls/tied/V64/theorem with exponents pre_L -1/2, post_L 0, post_d 1/2,
    pre_d 1 and seed factors exp(-0.1, 0, 0.1)."""
    b = {("depth", "pre"): -0.5, ("depth", "post"): 0.0, ("width", "post"): 0.5,
         ("width", "pre"): 1.0}
    rows = []
    for p in ("post", "pre"):
        for x in xs:
            for s, e in enumerate((-0.1, 0.0, 0.1)):
                y = 0.3 * x ** b[(sweep, p)] * math.exp(e)
                L, dd = (x, 64) if sweep == "depth" else (4, x)
                rows.append(["theorem", "cls", p, L, dd, 64, s, y, y])
    return rows


def test_factorial(tmp_path):
    d = str(tmp_path)
    head = ["setting", "task", "norm_pos", "L", "d", "V", "seed", "w2_norm_of_mean",
            "w2_mean_norm"]
    meta = {"d": 64, "B": 8, "T": 16, "batches": 4, "seeds": 3, "L": 4}
    put(d, "depth_V64_tied.csv", head, factorial_rows("depth", (2, 4, 8, 16, 32)), meta)
    put(d, "width_V64_tied.csv", head, factorial_rows("width", (32, 64, 128, 256)), meta)
    summary("grad_factorial", d)
    with open(os.path.join(d, "fits.csv"), newline="") as f:
        fits = {(r["statistic"], r["quantity"]): r for r in csv.DictReader(f)}
    want = {"pre_L": -0.5, "post_L": 0.0, "post_d": 0.5, "pre_d": 1.0, "d_diff": 0.5}
    for (stat, q), r in fits.items():
        assert abs(float(r["slope"]) - want[q]) < 1e-9, (stat, q)
    # pre_L: RSS 5 x 0.02 over 13 dof, Sxx = 3 x 10 (ln 2)^2: half-width t_13 se < 0.1
    se = math.sqrt(0.1 / 13 / (30 * math.log(2) ** 2))
    assert abs(float(fits[("nom", "pre_L")]["se"]) - se) < 1e-12
    assert fits[("nom", "pre_L")]["verdict"] == "equal to -1/2" and T13 * se < 0.1
    os.remove(os.path.join(d, "width_V64_tied.csv"))
    put(d, "width_V64_tied.csv", head, [r for r in factorial_rows("width", (32, 64))
                                        if r[2] == "post"], meta)
    r = summary("grad_factorial", d, ok=False)
    assert "cls/tied/64/theorem: no width rows for pre-LN" in r.stderr


def test_geometry_shift_and_exponent(tmp_path):
    # P's fraction at d is exactly no-norm's at d - 1: mean difference 0, chi^2/dof 0;
    # mean |cos| = 0.8 d^(-1/2) exactly: exponent -1/2, the theory curve's too
    out = writer.Summary("geometry", str(tmp_path), "t", "s", "c", [], "geometry")
    none = lambda n, x: min(1.0, max(0.0, n / 60 * (12 - x) / 8))  # noqa: E731
    rows = []
    for dist in ("gauss", "offset"):
        for n in (20, 40, 60):
            for x in range(3, 13):
                for nm, v in (("none", none(n, x)), ("center", none(n, x - 1)), ("scale", 0.0),
                              ("layernorm", 0.0)):
                    rows.append({"dist": dist, "norm": nm, "n": str(n), "d": str(x),
                                 "runs": "100", "frac_any": str(round(v * 100) / 100)})
    geometry.random_keys(out, rows)
    assert out.values["centre_shift1"].startswith("0") and out.values["centre.chi2_1"] == "0.00"
    assert out.values["centre_shift1.verdict"] == "equal"
    assert out.values["after_layernorm.verdict"].startswith("none")
    assert out.values["heat.gauss.none.n60.half"] == "8"   # n = 60: (12 - 8) / 8 = 0.5
    orows = [{"dist": dist, "d": str(x), "mean_abs_cos": repr(0.8 * x ** -0.5), "sets": "100",
              "sd_set_mean_abs_cos": repr(0.008 * x ** -0.5),
              "gauss_theory_abs_cos": repr(0.8 * x ** -0.5)}
             for dist in ("gauss", "offset", "offset0") for x in (8, 16, 32, 64, 128, 256, 512)]
    geometry.ortho(out, orows)
    assert out.values["ortho.theory_slope"] == "-0.500"
    assert out.values["ortho.gauss"].startswith("-0.500") and \
        out.values["ortho.gauss.verdict"] == "equal"


def test_demo_claim_independently():
    # the committed demo's Post-LN loss: mean and t interval recomputed with numpy/scipy
    with open(os.path.join(ROOT, "results/demo/postpre_loss.csv"), newline="") as f:
        x = np.array([float(r["loss"]) for r in csv.DictReader(f) if r["norm_pos"] == "post"])
    h = st.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    v = claims(os.path.join(ROOT, "results/demo"))["loss_post"]["value"]
    m, lo, hi = est(v)
    assert abs(m - x.mean()) < 6e-4 and abs(lo - (x.mean() - h)) < 6e-4 and \
        abs(hi - (x.mean() + h)) < 6e-4


def test_unknown_study_and_directory(tmp_path):
    r = summary("nosuch", str(tmp_path), ok=False)
    assert r.returncode == 2 and "unknown study 'nosuch'" in r.stderr
    r = summary("demo", str(tmp_path / "absent"), ok=False)
    assert r.returncode == 2 and "no such directory" in r.stderr


def test_factorial_script_tiny(tmp_path):
    # the study script end to end at a tiny size: rows, then the summary, every output
    g = os.path.join(ROOT, BUILD, "studies", "grad_norms")
    if not os.access(g, os.X_OK):
        pytest.skip(f"{g} not built")
    env = dict(ENV, GF_OUT=str(tmp_path / "out"), GF_WORK=str(tmp_path / "work"), GF_SEEDS="2",
               GF_LS="1,2,3", GF_D="8", GF_DS="8,16,24", GF_L="1", GF_VS="16",
               GF_TASKS="cls", GF_ARGS="--rows 2 --len 4 --batches 2", PYTHON=sys.executable)
    r = subprocess.run(["bash", "studies/scripts/study_grad_factorial.sh", BUILD], cwd=ROOT,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    for f in ("depth_V16_tied", "width_V16_untied", "fits", "values", "claims"):
        assert (out / f"{f}.csv").exists() and (out / f"{f}.meta.json").exists(), f
    assert (out / "factorial.tex").exists() and (out / "report.json").exists()
