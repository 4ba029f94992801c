"""The overhead of a product through the Python package against the lnkit
program's, on config (b): lm, d=256, h=4, L=6, d_ff=1024, V=4000, B=16,
T=32 input positions (tgt rows of 33), Post-LN, 2 BLAS threads.

  lnkit hvp --repeat R           median s/product, primal pass kept (the first
                                 product runs it and is not counted)
  H = m.hessian(data); H @ v     the same products through Python (after one
                                 warm-up product that runs the primal pass)
  --cache-mb 0 / cache_mb=0      both with the primal pass recomputed in each
  H.apply(v, out=y)              the same into a reused array (no page faults)
  m.hvp(data, v)                 the one-off call (a workspace made and freed,
                                 the primal pass, one product)
Rounds alternate the two tools so that a disturbance hits both.  The
products must agree to 1e-12 relative.  Writes out/bench/bench_python.csv.

  /usr/bin/python3 bench/bench_python.py --build build [--rounds 3] [--repeat 10]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench", "bench_python.csv"))
    a = ap.parse_args()
    os.environ.setdefault("LNKIT_LIB", os.path.join(ROOT, a.build, "liblnkit.so.0.1"))
    import numpy as np
    import lnkit
    lnk = os.path.join(ROOT, a.build, "bin", "lnkit")
    tmp = tempfile.mkdtemp(prefix="lnkit-benchpy.")
    p = lambda f: os.path.join(tmp, f)  # noqa: E731

    def cli(*args):
        r = subprocess.run([lnk, *map(str, args)], capture_output=True, text=True)
        if r.returncode:
            sys.exit("bench_python: lnkit %s: %s" % (" ".join(map(str, args)), r.stderr))
        return r.stderr

    cli("init", "--d", 256, "--h", 4, "--L", 6, "--d-ff", 1024, "--V", 4000, "--norm-pos", "post",
        "--seed", 0, "-o", p("w.safetensors"), "--quiet")
    cli("batch", "--synthetic", "--config", p("w.json"), "--rows", 16, "--len", 32, "--rng-seed", 1,
        "-o", p("b.safetensors"), "--quiet")
    cli("vector", "--config", p("w.json"), "--random", "--rng-seed", 1, "--flat",
        "-o", p("v.safetensors"), "--quiet")
    lnkit.set_threads(a.threads)
    m = lnkit.Model.load(p("w.json"), p("w.safetensors"))
    data = lnkit.Data(p("b.safetensors"))
    v = m.load_vector(p("v.safetensors"))

    def cli_median(extra):
        err = cli("hvp", "--config", p("w.json"), "--weights", p("w.safetensors"), "--batch",
                  p("b.safetensors"), "--vector", p("v.safetensors"), "-o", p("hv.safetensors"),
                  "--repeat", a.repeat + 1, "--threads", a.threads, *extra)
        return float(re.search(r"median ([0-9.]+) s per product", err).group(1))

    def py_median(cache_mb):
        H = m.hessian(data, cache_mb=cache_mb)
        y = H @ v                                   # the primal pass (kept or not)
        t, tout = [], []
        out = np.empty_like(y)
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            y = H @ v
            t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            H.apply(v, out=out)
            tout.append(time.perf_counter() - t0)
        H.close()
        assert np.array_equal(out, y)
        return statistics.median(t), statistics.median(tout), y

    def oneoff_median():
        t = []
        for _ in range(max(3, a.repeat // 3)):
            t0 = time.perf_counter()
            m.hvp(data, v)
            t.append(time.perf_counter() - t0)
        return statistics.median(t)

    rows = []
    for rnd in range(a.rounds):
        c_keep = cli_median([])
        py_keep, py_keep_out, y = py_median(None)
        c_re = cli_median(["--cache-mb", 0])
        py_re, py_re_out, y0 = py_median(0)
        one = oneoff_median()
        ref = m.load_vector(p("hv.safetensors"))
        err = max(np.max(np.abs(y - ref)), np.max(np.abs(y0 - ref))) / np.max(np.abs(ref))
        if err > 1e-12:
            sys.exit("bench_python: Python's H v differs from lnkit hvp's by %.3g" % err)
        rows.append(dict(round=rnd, cli_kept=c_keep, python_kept=py_keep,
                         python_kept_out=py_keep_out, cli_recomputed=c_re,
                         python_recomputed=py_re, python_recomputed_out=py_re_out,
                         python_oneoff=one, rel_diff=err))
        print("round %d: kept pass: lnkit hvp %.4f s, Python H @ v %.4f s (%+.1f%%), "
              "H.apply(v, out) %.4f s; recomputed: %.4f s, %.4f s (%+.1f%%), %.4f s; m.hvp one-off "
              "%.4f s; |diff| %.1e"
              % (rnd, c_keep, py_keep, 100 * (py_keep / c_keep - 1), py_keep_out, c_re, py_re,
                 100 * (py_re / c_re - 1), py_re_out, one, err), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "round"}
    print("median over %d rounds (n_params %d, %d threads, kernel %s): kept %.4f vs %.4f s "
          "(Python %+.1f%%; with out= %.4f s), recomputed %.4f vs %.4f s (%+.1f%%), one-off m.hvp %.4f s"
          % (a.rounds, m.n_params, a.threads, lnkit.blas_kernel(), med["cli_kept"],
             med["python_kept"], 100 * (med["python_kept"] / med["cli_kept"] - 1),
             med["python_kept_out"],
             med["cli_recomputed"], med["python_recomputed"],
             100 * (med["python_recomputed"] / med["cli_recomputed"] - 1), med["python_oneoff"]))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("bench_python: ->", a.out)
    for f in os.listdir(tmp):
        os.unlink(p(f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
