"""Helpers of the reference's self-test (tests/test_ref_torch.py and
ref/selftest_forward.py): pass/fail counting, random weights and batches,
finite differences."""
import sys
import traceback

import numpy as np
import torch

from .base import BOS, EOS
from .layout import unflatten
from .model import loss_fn
from .derivs import loss_grad

VERBOSE = "-v" in sys.argv
RESULTS = {"pass": 0, "fail": 0}


def check(name, ok, detail=""):
    if ok:
        RESULTS["pass"] += 1
        if VERBOSE:
            print(f"ok   {name} {detail}")
    else:
        RESULTS["fail"] += 1
        print(f"FAIL {name} {detail}")


def run(name, fn, *args):
    try:
        fn(*args)
    except Exception:
        RESULTS["fail"] += 1
        print(f"FAIL {name}: exception")
        traceback.print_exc()


def random_weights(layout, rng, scale=0.5):
    """Random weights with non-trivial gains/biases (far from the init point)."""
    w = {}
    for name, shape in layout:
        a = rng.normal(size=shape) * scale
        if name.endswith(".g"):
            a = 1.0 + 0.3 * rng.normal(size=shape)
        w[name] = a
    return w


def random_ids(rng, B, n, V, lengths, first=None):
    a = np.zeros((B, n), dtype=np.int64)
    for r in range(B):
        a[r, :lengths[r]] = rng.integers(4, V, size=lengths[r])
        if first is not None:
            a[r, 0] = first
    return a


def random_batch(c, rng, B=3, n=5):
    """Batch with trailing padding on all rows but one."""
    lens = [n] + [int(rng.integers(2, n)) for _ in range(B - 1)]
    b = {}
    if c["task"] == "cls":
        b["src"] = random_ids(rng, B, n, c["V_src"], lens)
        b["labels"] = rng.integers(0, c["n_classes"], size=(B, n)).astype(np.int64)
    else:
        tgt = random_ids(rng, B, n + 1, c["V_tgt"], [l + 1 for l in lens], first=BOS)
        if c["task"] == "seq2seq":   # end the row with <eos>
            for r in range(B):
                tgt[r, lens[r]] = EOS
            slens = [int(rng.integers(1, n + 2)) for _ in range(B)]
            slens[int(rng.integers(0, B))] = n + 1
            b["src"] = random_ids(rng, B, n + 1, c["V_src"], slens)
        b["tgt"] = tgt
    return b


def append_pads(c, b, k=2):
    out = {}
    for name, a in b.items():
        extra = np.zeros((a.shape[0], k), dtype=np.int64)
        if name == "labels":   # labels under <pad> are arbitrary
            extra[:] = 1
        out[name] = np.concatenate([a, extra], axis=1)
    return out


def fd_error(f, exact, steps=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7)):
    """Smallest relative error between exact and the central difference
    (f(h) - f(-h)) / 2h over a range of steps h.  A range, because with d_k = 2 a
    per-head norm can be very sharply curved (width ~ sqrt(eps)) and a ReLU kink may
    lie within a large step, while tiny steps lose digits to rounding."""
    scale = max(1.0, float(np.linalg.norm(exact)))
    return min(float(np.linalg.norm((f(h) - f(-h)) / (2 * h) - exact)) / scale
               for h in steps)


def loss_of(c, layout, theta, tb):
    with torch.no_grad():
        p = unflatten(torch.as_tensor(theta, dtype=torch.float64), layout)
        return float(loss_fn(c, p, tb))


def grad_of(c, layout, theta, tb):
    _, L, g = loss_grad(c, layout, theta, tb)
    return float(L), g.numpy()


def relerr(a, b):
    """max |a - b| / max |b| (the C tests' measure, tests/testutil.h)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
