"""SciPy's eigsh (ARPACK) over the LinearOperator finds the extremes that
lnkit.eigs (the library's Lanczos) finds, to 1e-8 relative; and the operator
is the symmetric matrix the products say (on a model small enough to form)."""
import numpy as np
from scipy.sparse.linalg import eigsh, LinearOperator

import lnkit
from conftest import rel_err


def test_eigsh_equals_lnkit_eigs(files):
    m = lnkit.Model.load(files.config, files.weights)
    data = lnkit.Data([files.batch, files.batch2], chunk=3)
    H = m.hessian(data)
    assert isinstance(H, LinearOperator) and H.dtype == np.float64
    r = lnkit.eigs(m, data, k=3, which="both", tol=1e-10, max_steps=400)
    top = eigsh(H, k=3, which="LA", tol=1e-12, return_eigenvectors=False)
    bottom = eigsh(H, k=3, which="SA", tol=1e-12, return_eigenvectors=False)
    assert rel_err(np.sort(top)[::-1], r.top) <= 1e-8
    assert rel_err(np.sort(bottom), r.bottom) <= 1e-8


def test_block_eigsh(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    H = m.hessian(pre.batch, block="*.attn.*")
    r = lnkit.eigs(H, k=2, tol=1e-10, max_steps=400)
    top = eigsh(H, k=2, which="LA", tol=1e-12, return_eigenvectors=False)
    assert rel_err(np.sort(top)[::-1], r.top) <= 1e-8


def test_dense_hessian_small(pre):
    """H formed column by column (H @ I) is symmetric to rounding, and its
    dense eigenvalues (LAPACK) are lnkit.eigs's; eigenvectors satisfy H y = l y."""
    m = lnkit.Model.load(pre.config, pre.weights)
    H = m.hessian(pre.batch, block="dec.1.ffn.w2,dec.1.ffn.b1,dec.1.attn.wo")
    n = H.shape[0]
    assert n <= 2000
    D = H @ np.eye(n)
    assert np.max(np.abs(D - D.T)) <= 1e-12 * np.max(np.abs(D))
    w = np.linalg.eigvalsh(0.5 * (D + D.T))
    r = lnkit.eigs(H, k=2, which="both", tol=1e-12, max_steps=600, vectors=True)
    assert rel_err(r.top, w[::-1][:2]) <= 1e-10
    assert rel_err(r.bottom, w[:2]) <= 1e-10
    for lam, y in zip(r.values, r.vectors):
        assert np.linalg.norm(H @ y - lam * y) <= 1e-8 * np.max(np.abs(w))
    assert H.n_products >= n
