"""Several batches are one data set everywhere in the Python API (issue
30.5): a list of files (or a Data of several files, in chunks or not) gives
the loss, gradient, H v, eigenvalues, trace and density of one batch holding
all their rows (MODEL.md §4: the token-weighted mean loss), and every
function that takes data takes the list the same way."""
import numpy as np
import pytest

import lnkit
from conftest import read_safetensors, rel_err

TOL = 1e-12


def joined(*paths):
    """One batch holding the rows of the files (read here, not by the
    library); shorter rows padded with <pad> (id 0) at the end, which is
    masked as a key and as a label (MODEL.md §4)."""
    parts = [read_safetensors(p) for p in paths]
    out = {}
    for k in parts[0]:
        w = max(p[k].shape[1] for p in parts)
        out[k] = np.concatenate([np.pad(p[k], ((0, 0), (0, w - p[k].shape[1]))) for p in parts])
    return out


def test_two_files_are_one_batch(files):
    m = lnkit.Model.load(files.config, files.weights)
    pair = [files.batch, files.batch2]
    one = lnkit.Data.from_arrays(**joined(*pair))
    v = m.load_vector(files.vector)
    ref_loss, ref_g = m.loss_grad(one)
    ref_hv = m.hvp(one, v)
    for d in (pair, lnkit.Data(pair), lnkit.Data(pair, chunk=2), lnkit.Data(pair, chunk=1)):
        loss, g = m.loss_grad(d)
        assert loss == pytest.approx(ref_loss, rel=TOL) and rel_err(g, ref_g) <= TOL
        assert m.loss(d) == pytest.approx(ref_loss, rel=TOL)
        assert rel_err(m.hvp(d, v), ref_hv) <= TOL
        assert rel_err(m.hessian(d) @ v, ref_hv) <= TOL
    # the token-weighted mean of the two files' losses, not the last file's
    n1, n2 = (lnkit.Data(p).n_scored(m) for p in pair)
    l1, l2 = m.loss(files.batch), m.loss(files.batch2)
    assert lnkit.Data(pair).n_scored(m) == n1 + n2 == one.n_scored(m)
    assert ref_loss == pytest.approx((n1 * l1 + n2 * l2) / (n1 + n2), rel=TOL)
    assert abs(ref_loss - l2) > 1e-6


def test_curvature_of_two_files(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    pair = [pre.batch, pre.batch2]
    one = lnkit.Data.from_arrays(**joined(*pair))
    r1 = lnkit.eigs(m, one, k=2, which="both", tol=1e-10)
    t1 = lnkit.trace(m, one, probes=10)
    d1 = lnkit.density(m, one, runs=2, steps=10)
    b1 = lnkit.blocks(m, one, no_tensors=True, group=["*.attn.*"], probes=4, runs=1, steps=8)
    for d in (pair, lnkit.Data(pair, chunk=3)):
        r = lnkit.eigs(m, d, k=2, which="both", tol=1e-10)
        assert rel_err(r.values, r1.values) <= 1e-10
        t = lnkit.trace(m, d, probes=10)
        assert t.trace == pytest.approx(t1.trace, rel=1e-10)
        dd = lnkit.density(m, d, runs=2, steps=10)
        assert rel_err(np.concatenate(dd.nodes), np.concatenate(d1.nodes)) <= 1e-9
        b = lnkit.blocks(m, d, no_tensors=True, group=["*.attn.*"], probes=4, runs=1, steps=8)
        assert b.frob == pytest.approx(b1.frob, rel=1e-10)
