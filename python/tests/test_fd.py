"""Derivatives against central finite differences: the gradient along random
directions against (L(t + e u) - L(t - e u)) / 2e, and H v against the same
difference of the gradient; both through the Python interface, which reads
and writes m.theta."""
import numpy as np

import lnkit


def test_gradient_fd(files):
    m = lnkit.Model.load(files.config, files.weights)
    data = lnkit.Data([files.batch, files.batch2], chunk=2)
    _, g = m.loss_grad(data)
    theta0 = m.theta.copy()
    rng = np.random.default_rng(11)
    eps = 1e-5
    for _ in range(3):
        u = rng.standard_normal(m.n_params)
        u /= np.linalg.norm(u)
        m.theta[:] = theta0 + eps * u
        lp = m.loss(data)
        m.theta[:] = theta0 - eps * u
        lm = m.loss(data)
        m.theta[:] = theta0
        fd = (lp - lm) / (2 * eps)
        assert abs(fd - g @ u) <= 1e-7 * max(1.0, abs(g @ u)), (fd, g @ u)
    # one coordinate of each of a few tensors, named views
    for name in m.names[:: max(1, len(m.names) // 5)]:
        view = m.params[name].reshape(-1)
        o, _, _ = m.offset(name)
        old = view[0]
        view[0] = old + eps
        lp = m.loss(data)
        view[0] = old - eps
        lm = m.loss(data)
        view[0] = old
        assert abs((lp - lm) / (2 * eps) - g[o]) <= 1e-7 * max(1.0, abs(g[o])), name


def test_hvp_fd(files):
    m = lnkit.Model.load(files.config, files.weights)
    data = lnkit.Data(files.batch)
    v = np.random.default_rng(5).standard_normal(m.n_params)
    v /= np.linalg.norm(v)
    hv = m.hvp(data, v)
    theta0 = m.theta.copy()
    eps = 1e-4
    m.theta[:] = theta0 + eps * v
    _, gp = m.loss_grad(data)
    m.theta[:] = theta0 - eps * v
    _, gm = m.loss_grad(data)
    m.theta[:] = theta0
    fd = (gp - gm) / (2 * eps)
    assert np.linalg.norm(fd - hv) <= 1e-6 * max(1.0, np.linalg.norm(hv))
