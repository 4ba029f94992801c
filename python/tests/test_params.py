"""Named views: m.params[name] is a view into m.theta with the tensor's
shape, in the order and at the offsets `lnkit params` prints (MODEL.md §6);
a write through a view changes the flat vector and the products."""
import re

import numpy as np

import lnkit
from conftest import run


def test_layout_equals_cli(files):
    m = lnkit.Model.load(files.config, files.weights)
    rows = []
    for line in run("params", "--config", files.config).splitlines():
        f = re.match(r"\s*(\d+)\s+(\S+)\s+\[([\d, ]+)\]\s+(\d+)\s+(\d+)\s*$", line)
        if f:
            rows.append((f.group(2), tuple(int(x) for x in f.group(3).split(",")),
                         int(f.group(4)), int(f.group(5))))
    assert [r[0] for r in rows] == m.names == list(m.params)
    for name, shape, count, offset in rows:
        assert m.offset(name) == (offset, count, shape)
        assert m.params[name].shape == shape
    assert sum(r[2] for r in rows) == m.n_params == m.theta.size


def test_views_write_through(pre):
    m = lnkit.Model.load(pre.config, pre.weights)
    assert m.theta.dtype == np.float64 and m.theta.flags.c_contiguous
    w2 = m.params["dec.0.ffn.w2"]
    o, s, shape = m.offset("dec.0.ffn.w2")
    assert np.shares_memory(w2, m.theta) and w2.flags.c_contiguous and w2.shape == shape
    assert np.array_equal(w2.ravel(), m.theta[o:o + s])
    loss0 = m.loss(pre.batch)
    w2[3, 5] += 0.5
    assert m.theta[o + 3 * shape[1] + 5] == w2[3, 5]
    assert m.loss(pre.batch) != loss0
    m.params["dec.0.ffn.w2"] = 0.0          # assignment writes into the vector
    assert not m.theta[o:o + s].any()
    # the gradient in the same layout: its view is the tensor's gradient
    _, g = m.loss_grad(pre.batch)
    assert g[o:o + s].reshape(shape).shape == w2.shape
    # theta assignment copies in, checked
    t = m.theta.copy()
    m.theta = np.zeros(m.n_params)
    assert not m.theta.any()
    m.theta = t
    assert np.array_equal(m.theta, t)


def test_operator_snapshot(pre):
    """m.hessian() copies the weights: later writes do not change it; the
    product at the new weights is m.hvp's."""
    m = lnkit.Model.load(pre.config, pre.weights)
    v = m.load_vector(pre.vector)
    H = m.hessian(pre.batch)
    before = H @ v
    m.params["dec.1.attn.wq"][:] *= 2
    assert np.array_equal(H @ v, before)
    after = m.hvp(pre.batch, v)
    assert np.max(np.abs(after - before)) > 1e-6 * np.max(np.abs(before))
    assert np.array_equal(m.hessian(pre.batch) @ v, after)
