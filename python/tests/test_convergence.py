"""Eigenpairs that did not converge (issue 30.2): the result is returned
whole with per-pair `converged` flags and `all_converged`, and
lnkit.ConvergenceWarning (a UserWarning) names how many of the requested
pairs failed, the worst residual against tol and the Lanczos steps; no
warning when every pair converged.  The flags are the lnkit program's
`converged` column on the same run."""
import csv
import re
import warnings

import numpy as np
import pytest

import lnkit
from conftest import run


@pytest.fixture(scope="module")
def md(pre):
    return lnkit.Model.load(pre.config, pre.weights), lnkit.Data(pre.batch)


def parse(msg):
    m = re.search(r"(\d+) of (\d+) requested eigenpairs did not converge: worst residual "
                  r"(\S+) max\|l\| against tol (\S+), after (\d+) Lanczos steps", msg)
    assert m, msg
    return int(m[1]), int(m[2]), float(m[3]), float(m[4]), int(m[5])


def test_warning_class():
    assert issubclass(lnkit.ConvergenceWarning, UserWarning)
    assert "ConvergenceWarning" in lnkit.__all__


def test_not_converged_warns(md, pre):
    m, d = md
    with pytest.warns(lnkit.ConvergenceWarning) as rec:
        r = lnkit.eigs(m, d, k=3, which="both", max_steps=8, tol=1e-8)
    assert len(rec) == 1
    w = rec[0].message
    assert len(r.values) == 6 and r.converged.dtype == bool and r.converged.shape == (6,)
    assert not r.all_converged and r.steps == 8 and r.stop == "max_steps"
    failed, requested, worst, tol, steps = parse(str(w))
    rel = r.residuals / r.scale
    assert failed == (~r.converged).sum() == w.n_failed and requested == 6 == w.n_requested
    assert worst == pytest.approx(rel[~r.converged].max(), rel=1e-2) and worst > 1e-8
    assert tol == 1e-8 == w.tol and steps == 8 == w.steps
    assert np.array_equal(r.converged, r.residuals <= 1e-8 * r.scale)
    # the lnkit program's converged column on the same run
    out = pre.path("unconv.csv")
    run("eigs", "--config", pre.config, "--weights", pre.weights, "--batch", pre.batch, "-k", 3,
        "--which", "both", "--max-steps", 8, "--tol", "1e-8", "-o", out, "--quiet", ok=(0, 3))
    cli = [int(row["converged"]) for row in csv.DictReader(open(out))]
    assert cli == [int(c) for c in r.converged]
    # an error when asked for
    with warnings.catch_warnings():
        warnings.simplefilter("error", lnkit.ConvergenceWarning)
        with pytest.raises(lnkit.ConvergenceWarning):
            lnkit.eigs(m, d, k=3, max_steps=5)


def test_converged_is_silent(md):
    m, d = md
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = lnkit.eigs(m, d, k=2, tol=1e-8, max_steps=300)
    assert r.all_converged and r.converged.all() and r.n_converged == 2
    assert not [w for w in rec if issubclass(w.category, lnkit.ConvergenceWarning)]


def test_ggn_bottom_named(md):
    """G is positive semidefinite: its bottom pairs crowd at 0, and the
    warning says so rather than only "raise max_steps"."""
    m, d = md
    with pytest.warns(lnkit.ConvergenceWarning, match="positive semidefinite"):
        r = lnkit.eigs(m, d, k=2, which="both", operator="ggn", max_steps=10, tol=1e-10)
    assert (r.bottom >= -1e-8 * r.scale).all()


def test_blocks_warn(md):
    m, d = md
    with pytest.warns(lnkit.ConvergenceWarning, match="of 2 blocks") as rec:
        b = lnkit.blocks(m, d, block="dec.0.ffn.w1,out.w", max_steps=3, probes=2, runs=1,
                         steps=3)
    assert not b.all_converged
    failed, requested, _, tol, steps = parse(str(rec[0].message))
    assert requested == 4 and failed == (~b.top_converged).sum() + (~b.bottom_converged).sum()
    assert tol == lnkit.defaults()["blocks"]["tol"] and steps == 3


def test_blocks_hint(md):
    """The warning of lnkit.blocks says why, as `lnkit blocks` does: the step
    limit; G_bb's bottom end at 0 (positive semidefinite), not the step
    limit; a block zero to rounding with no larger block to judge it by."""
    m, d = md
    small = dict(probes=2, runs=1, steps=3)
    with pytest.warns(lnkit.ConvergenceWarning, match="step limit was reached"):
        lnkit.blocks(m, d, block="dec.0.ffn.w1", max_steps=3, **small)
    with pytest.warns(lnkit.ConvergenceWarning) as rec:
        b = lnkit.blocks(m, d, block="dec.0.attn.wv", operator="ggn", tol=1e-12, **small)
    msg = str(rec[0].message)
    assert "G_bb is positive semidefinite" in msg and "step limit was" not in msg, msg
    assert b.top_converged.all() and not b.bottom_converged.any()
    assert (b.bottom >= -1e-8 * np.abs(b.top)).all()
    with pytest.warns(lnkit.ConvergenceWarning, match="no larger block in this run"):
        b = lnkit.blocks(m, d, block="dec.0.attn.bk", **small)
    assert b.eig_steps[0] < lnkit.defaults()["blocks"]["max_steps"]


def _where(call):
    """call()'s warnings (every one recorded) as (category, filename)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call()
    return [(w.category, w.filename) for w in rec]


def test_warnings_point_at_the_caller(md):
    """Every lnkit warning names the user's line, whatever lies between
    (the @renamed wrapper of an old keyword, a helper): the location is
    what warnings filters by module and de-duplicates by."""
    m, d = md
    small = dict(probes=2, runs=1, steps=3)
    calls = {"eigs": lambda: lnkit.eigs(m, d, k=1, max_steps=5),
             "eigs old keyword": lambda: lnkit.eigs(m, d, k=1, max_steps=5, seed=3),
             "density old keyword": lambda: lnkit.density(m, d, runs=1, steps=3, seed=3),
             "blocks": lambda: lnkit.blocks(m, d, block="dec.0.ffn.w1", max_steps=3, **small),
             "blocks old keyword": lambda: lnkit.blocks(m, d, block="dec.0.ffn.w1",
                                                        eig_steps=3, **small),
             "defaults old key": lambda: lnkit.defaults()["eigs"]["seed"],
             "Trace.std_error": lambda: lnkit.trace(m, d, probes=2).std_error}
    for name, call in calls.items():
        got = _where(call)
        kinds = {c for c, _ in got}
        want = ({DeprecationWarning} if "old" in name or "std_error" in name else set()) | \
            ({lnkit.ConvergenceWarning} if name.startswith(("eigs", "blocks")) else set())
        assert kinds == want, (name, got)
        assert all(f == __file__ for _, f in got), (name, got)
