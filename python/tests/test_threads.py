"""Threads: products release the GIL (another Python thread keeps running
during one), the BLAS thread count is settable and does not change the
numbers, and Ctrl-C (KeyboardInterrupt) stops a Lanczos run between steps."""
import _thread
import signal
import threading
import time

import numpy as np
import pytest

import lnkit


@pytest.fixture(scope="module")
def big():
    """A product of about 0.1 to 0.5 s on one thread."""
    m = lnkit.Model({"d": 128, "h": 4, "L": 4, "V": 1000}, seed=0)
    return m, lnkit.Data.synthetic(m, rows=8, len=64, rng_seed=1)


def test_products_release_the_gil(big):
    """A counting thread's longest pause while the main thread runs products
    (in C, GIL released) is a small part of a product's time; with the GIL
    held through the call it would be the whole product."""
    m, d = big
    old = lnkit.threads()
    lnkit.set_threads(1)
    try:
        H = m.hessian(d, cache_mb=0)
        v = np.ones(m.n_params)
        H @ v                                   # warm up: workspace faulted in
        stop = threading.Event()
        stamps = []

        def count():
            while not stop.is_set():
                stamps.append(time.perf_counter())
                for _ in range(2000):
                    pass
        t = threading.Thread(target=count)
        t.start()
        time.sleep(0.05)
        t0 = time.perf_counter()
        for _ in range(3):
            H @ v
        t1 = time.perf_counter()
        stop.set()
        t.join()
        product = (t1 - t0) / 3
        during = np.array([s for s in stamps if t0 <= s <= t1])
        gaps = np.diff(np.concatenate([[t0], during, [t1]]))
        assert product > 0.05, "the product is too short to tell (%.3f s)" % product
        assert len(during) > 10 and gaps.max() < 0.5 * product, \
            "the other thread stalled %.3f s during products of %.3f s" % (gaps.max(), product)
    finally:
        lnkit.set_threads(old)


def test_threads_settable_same_numbers(big):
    m, d = big
    old = lnkit.threads()
    v = np.random.default_rng(0).standard_normal(m.n_params)
    try:
        lnkit.set_threads(1)
        assert lnkit.threads() == 1
        a = m.hvp(d, v)
        lnkit.set_threads(2)
        assert lnkit.threads() == 2
        b = m.hvp(d, v)
    finally:
        lnkit.set_threads(old)
    assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(a))


def test_two_threads_two_operators(big):
    """Products from two Python threads at once (one operator each) give
    each thread's own answer."""
    m, d = big
    v = [np.random.default_rng(s).standard_normal(m.n_params) for s in (1, 2)]
    ref = [m.hvp(d, x) for x in v]
    out = [None, None]

    def work(i):
        H = m.hessian(d, cache_mb=0)
        out[i] = H @ v[i]
    ts = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for a, b in zip(out, ref):
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))


def test_ctrl_c_stops_eigs(big):
    m, d = big
    # Python's own SIGINT handler, as in an interactive session: a process
    # started in the background by a non-interactive shell (make test under
    # nohup ... &) inherits SIGINT ignored, and then no Ctrl-C can arrive.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lnkit.eigs(m, d, k=5, tol=0, max_steps=10000, mode="light", cache_mb=0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert time.perf_counter() - t0 < 30
