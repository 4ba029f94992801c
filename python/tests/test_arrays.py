"""The one rule for arrays given to lnkit (issue 30.6): every array the
package keeps is copied when it is given, so changing the caller's array
afterwards never changes a result, whatever its dtype and layout; vectors
given to a product are read during the call only.  Token ids: every integer
dtype (int8 to int64, uint8 to uint64) in every layout (C, Fortran, strided
slices, read-only views, nested lists) is accepted; floats (even whole
numbers), bool, complex, object, strings, ragged lists and arrays that are
not 2-D are refused with lnkit.Error."""
import numpy as np
import pytest

import lnkit
from conftest import read_safetensors

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def layouts(ids, dtype):
    """(name, array given, the caller's writable array behind it) for ids."""
    a = ids.astype(dtype)
    yield "C", a, a
    f = np.asfortranarray(ids.astype(dtype))
    yield "Fortran", f, f
    big = np.zeros((ids.shape[0] * 2, ids.shape[1] * 3), dtype=dtype)
    big[::2, ::3] = ids
    yield "strided", big[::2, ::3], big
    base = ids.astype(dtype)
    ro = base.view()
    ro.flags.writeable = False
    yield "read-only view", ro, base
    rev = ids[::-1].astype(dtype)
    yield "reversed rows", rev[::-1], rev


@pytest.fixture(scope="module")
def setup(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    other = lnkit.Model({"d": 16, "h": 2, "L": 2, "V": 30, "norm_pos": "post"}, seed=9)
    ids = read_safetensors(pre.batch)["tgt"]
    assert ids.max() < 24 and ids.ndim == 2
    ref = (m.loss(lnkit.Data.from_arrays(tgt=ids.copy())),
           other.loss(lnkit.Data.from_arrays(tgt=ids.copy())))
    return m, other, ids, ref


@pytest.mark.parametrize("dtype", INTS, ids=lambda t: np.dtype(t).name)
def test_ids_copied_on_entry(setup, dtype):
    m, other, ids, ref = setup
    changed = np.where(ids > 0, 5, 0)   # other valid ids: a different loss
    assert m.loss(lnkit.Data.from_arrays(tgt=changed)) != ref[0]
    for name, given, caller in layouts(ids, dtype):
        d = lnkit.Data.from_arrays(tgt=given)
        caller[...] = 5                  # before the first use (chunks are made then)
        assert m.loss(d) == ref[0], name
        caller[...] = 6                  # after it, then another model kind (chunks made again)
        assert other.loss(d) == ref[1], name
        assert m.loss(d) == ref[0], name


def test_lists_accepted(setup):
    m, _, ids, ref = setup
    rows = ids.tolist()
    d = lnkit.Data.from_arrays(tgt=rows)
    rows[0][1] = 7
    assert m.loss(d) == ref[0]


def test_refused(setup):
    m, _, ids, _ = setup
    bad = {"float64 (whole numbers)": ids.astype(np.float64),
           "float32": ids.astype(np.float32), "float16": ids.astype(np.float16),
           "bool": ids > 4, "complex": ids.astype(np.complex128),
           "object": ids.astype(object), "str": ids.astype(str),
           "0-d": np.int64(5), "1-d": ids[0], "3-d": ids[None], "no rows": ids[:0],
           "no columns": ids[:, :0], "ragged": [[4, 5, 6], [4, 5]], "a dict": {"a": 1},
           "None row": [[4, 5], None]}
    for what, a in bad.items():
        with pytest.raises(lnkit.Error) as e:
            lnkit.Data.from_arrays(tgt=a)
        msg = str(e.value)
        assert "'tgt'" in msg and "\n" not in msg, (what, msg)
    with pytest.raises(lnkit.Error, match="astype"):     # the way out is named
        lnkit.Data.from_arrays(tgt=ids.astype(float))
    with pytest.raises(lnkit.Error, match="out of range"):
        lnkit.Data.from_arrays(tgt=np.full((2, 3), 2**63, dtype=np.uint64))


def test_weights_and_vectors(pre):
    """theta is copied when set; an operator keeps its own weights; a product's
    result never aliases its vector; named() alone gives views, and says so."""
    m = lnkit.Model.load(pre.config, pre.weights)
    d = lnkit.Data(pre.batch)
    w = m.theta.copy()
    loss = m.loss(d)
    m.theta = w
    w[:] = 0
    assert m.loss(d) == loss
    v = m.load_vector(pre.vector)
    H = m.hessian(d)
    hv = H @ v
    m.theta[:] = 0.01                   # the operator made before keeps its weights
    assert np.array_equal(H @ v, hv)
    m.theta = H._theta
    hv2 = m.hvp(d, v)
    assert not np.shares_memory(hv2, v) and np.array_equal(hv2, hv)
    g = m.loss_grad(d)[1]
    views = m.named(g)
    g[m.offset("out.w")[0]] = 123.0
    assert views["out.w"].flat[0] == 123.0
    for bad in (g[::-1], g.astype(np.float32), list(g)):
        with pytest.raises(lnkit.Error, match="views"):
            m.named(bad)
