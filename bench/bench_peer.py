#!/usr/bin/python3
"""lnkit against PyTorch + SciPy on the same problem, side by side in one run (make bench-peer).

usage: /usr/bin/python3 bench/bench_peer.py --build BUILD [--out DIR] [--threads 2]
                                            [--repeat R] [--skip-multi30k]

Config (b): task lm, d=256, h=4, L=6, d_ff=1024, V=4000, Post-LN, Xavier init (seed 0); a
synthetic batch of B=16 rows of 33 tokens (<bos> + 32, seed 1): lnkit writes both files
and PyTorch reads the same files (tests/ref_torch.py, the independent reference).

1. Top-5 Hessian eigenvalues to tol 1e-6:
   - PyTorch float64, the double-backward graph built once (loss, then the gradient with
     create_graph) and reused for every product (PyHessian's way), inside scipy.sparse.linalg
     .eigsh (ARPACK, which='LA', tol=1e-6);
   - `lnkit eigs -k 5 --which top --tol 1e-6`.
   Products, wall time (lnkit: the whole process; PyTorch: from reading the files to eigsh's
   answer, without the interpreter's start and `import torch`), and the agreement of the
   eigenvalues.
2. One H v: lnkit with the primal pass kept (what eigs uses) and recomputed, against
   PyTorch's product on the reused graph and on a fresh graph; median of R after a warm-up.
3. The Multi30k full-size product (6-6, d=512, h=8, d_ff=2048, all 1014 pairs, chunks of at
   most 512 padded tokens) from bench_multi30k --all: the first product (every primal pass)
   and the second (reusing the kept ones).

Each tool runs in its default environment (PyTorch in its own process without lnkit's
variables; both on --threads threads).  Results: DIR/bench_peer.csv (measure,tool,value,unit)
and DIR/bench_peer.meta.json (lnkit's one writer, `lnkit meta`: commit, versions, BLAS kernel,
threads, times; and PyTorch's versions and kernel, the machine load).
Figures from a machine shared with other work are provisional: the sidecar records the load.
"""
import argparse
import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "studies", "summary"))
import sidecar  # noqa: E402  (studies/summary/sidecar.py: lnkit meta, the one sidecar writer)
CFG_B = dict(d=256, h=4, L=6, d_ff=1024, V=4000, B=16, T=32)


def run(cmd, env=None, cwd=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"bench_peer: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p, dt


def loadavg():
    return os.getloadavg()[0]


def cpu_busy():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


# --------------------------------------------------------------------------- PyTorch worker

def torch_worker(a):
    """Run in a separate process: PyTorch + scipy on the files; print one JSON object."""
    t_import = time.perf_counter()
    import ctypes
    import numpy as np
    import scipy
    import torch
    from scipy.sparse.linalg import LinearOperator, eigsh
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import ref_torch as R
    t_import = time.perf_counter() - t_import
    torch.set_num_threads(a.threads)
    kernel = "unknown"
    for lib in ("libopenblas.so.0", "libblas.so.3"):
        try:
            f = ctypes.CDLL(lib).openblas_get_corename
            f.restype = ctypes.c_char_p
            kernel = f().decode()
            break
        except (OSError, AttributeError):
            continue
    show = torch.__config__.show()
    info = [m.group(0) for m in re.finditer(r"(BLAS_INFO=\w+|CPU capability usage: \w+)", show)]
    out = dict(torch=torch.__version__, scipy=scipy.__version__, numpy=np.__version__,
               threads=torch.get_num_threads(), openblas_kernel=kernel, import_s=t_import,
               blas_info=info)
    t0 = time.perf_counter()
    c, layout, theta_np, tb = R.load_all(a.config, a.weights, a.batch)
    theta = torch.tensor(theta_np, dtype=torch.float64, requires_grad=True)
    L = R.loss_fn(c, R.unflatten(theta, layout), tb)
    (g,) = torch.autograd.grad(L, theta, create_graph=True)  # the graph, built once
    out["graph_s"] = time.perf_counter() - t0
    count = [0]

    def matvec(v):
        count[0] += 1
        vt = torch.as_tensor(np.ascontiguousarray(v).reshape(-1), dtype=torch.float64)
        (hv,) = torch.autograd.grad(g, theta, grad_outputs=vt, retain_graph=True)
        return hv.detach().numpy()

    n = theta.numel()
    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    vals = eigsh(op, k=5, which="LA", tol=a.tol, return_eigenvectors=False)
    out["eigs_s"] = time.perf_counter() - t0
    out["eigs_products"] = count[0]
    out["eigs_values"] = sorted(float(x) for x in vals)[::-1]
    # one product on the reused graph, and on a fresh graph
    v = np.random.default_rng(3).standard_normal(n)
    ts = []
    for r in range(a.repeat + 1):
        s = time.perf_counter()
        matvec(v)
        if r:
            ts.append(time.perf_counter() - s)
    out["hvp_reused_s"] = statistics.median(ts)
    ts = []
    for r in range(min(a.repeat, 3) + 1):
        s = time.perf_counter()
        R.hvp(c, layout, theta_np, tb, v)
        if r:
            ts.append(time.perf_counter() - s)
    out["hvp_fresh_s"] = statistics.median(ts)
    out["n_params"] = n
    out["loss"] = float(L)
    print(json.dumps(out))


# --------------------------------------------------------------------------- driver

def lnkit_version(lnkit):
    p, _ = run([lnkit, "--version"])
    lines = p.stdout.strip().splitlines()
    return lines[0], (lines[1] if len(lines) > 1 else "")


def parse_hvp_median(stderr):
    for line in stderr.splitlines():
        if "median" in line:
            return float(line.split("median")[1].split()[0])
    sys.exit(f"bench_peer: no median in lnkit hvp's output: {stderr}")


def parse_args():
    ap = argparse.ArgumentParser(description="lnkit vs PyTorch + SciPy (make bench-peer)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--skip-multi30k", action="store_true")
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--config")
    ap.add_argument("--weights")
    ap.add_argument("--batch")
    return ap.parse_args()


class Rows:
    """The measured rows (measure, tool, value, unit), each printed as it comes."""

    def __init__(self):
        self.rows = []

    def __call__(self, measure, tool, value, unit):
        self.rows.append((measure, tool, value, unit))
        print(f"  {measure:<34} {tool:<16} {value:>14.6g} {unit}", flush=True)


FILES = ("--config", "w.json", "--weights", "w.safetensors", "--batch", "b.safetensors")


def make_problem(lnkit, work, threads):
    """Config (b)'s weights and batch in WORK; lnkit's version and BLAS kernel."""
    s = CFG_B
    run([lnkit, "init", "--d", str(s["d"]), "--h", str(s["h"]), "--L", str(s["L"]),
         "--d-ff", str(s["d_ff"]), "--V", str(s["V"]), "--norm-pos", "post", "--seed", "0",
         "-o", "w.safetensors"], cwd=work)
    run([lnkit, "batch", "--synthetic", "--V", str(s["V"]), "--rows", str(s["B"]),
         "--len", str(s["T"]), "--rng-seed", "1", "-o", "b.safetensors"], cwd=work)
    ver, kernel = lnkit_version(lnkit)
    print(f"bench_peer: config (b) lm d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 Post-LN, "
          f"{threads} threads; {ver}; {kernel}")
    return ver, kernel


def eigs_rows(a, lnkit, work, row):
    """1. Top-5 eigenvalues, PyTorch + scipy and lnkit: the worker's answers (tw) and
    lnkit eigs's sidecar."""
    # PyTorch + scipy, in its own process and default environment
    env = {k: v for k, v in os.environ.items() if not k.startswith("LNK_")}
    print("== PyTorch float64 + scipy eigsh (graph built once, reused) ...", flush=True)
    p, _ = run(["/usr/bin/python3", os.path.abspath(__file__), "--torch-worker",
                "--threads", str(a.threads), "--repeat", str(a.repeat), "--tol", str(a.tol),
                "--config", "w.json", "--weights", "w.safetensors", "--batch",
                "b.safetensors"], env=env, cwd=work)
    tw = json.loads(p.stdout.strip().splitlines()[-1])
    print("== lnkit eigs -k 5 --which top --tol 1e-6 ...", flush=True)
    _, lt = run([lnkit, "eigs", *FILES, "-k", "5", "--which", "top", "--tol", str(a.tol),
                 "--threads", str(a.threads), "--quiet", "-o", "e.csv"], cwd=work)
    with open(os.path.join(work, "e.meta.json")) as f:
        lmeta = json.load(f)
    with open(os.path.join(work, "e.csv")) as f:
        hdr = f.readline().strip().split(",")
        lvals = [float(line.split(",")[hdr.index("eigenvalue")]) for line in f if line.strip()]
    lprod = int(lmeta.get("hvp_products", 0))
    agree = max(abs(x - y) / abs(y) for x, y in zip(lvals, tw["eigs_values"]))
    print("== results", flush=True)
    row("eigs_top5_wall", "torch+scipy", tw["eigs_s"], "s")
    row("eigs_top5_wall", "lnkit", lt, "s")
    row("eigs_top5_products", "torch+scipy", tw["eigs_products"], "H v")
    row("eigs_top5_products", "lnkit", lprod, "H v")
    row("eigs_top5_speedup", "lnkit", tw["eigs_s"] / lt, "x")
    row("eigs_top5_agreement", "both", agree, "max rel. diff")
    for i, (x, y) in enumerate(zip(lvals, tw["eigs_values"])):
        row(f"eigenvalue_{i}", "lnkit", x, "")
        row(f"eigenvalue_{i}", "torch+scipy", y, "")
    row("torch_graph_build", "torch", tw["graph_s"], "s")
    return tw, lmeta


def hvp_rows(a, lnkit, work, tw, row):
    """2. One H v: lnkit with the primal pass kept and recomputed, PyTorch on the reused
    and on a fresh graph."""
    import numpy as np  # noqa: E402 (the driver needs numpy only here)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import ref_torch as R  # noqa: E402
    v = np.random.default_rng(3).standard_normal(tw["n_params"])
    R.st_write(os.path.join(work, "v.safetensors"), {"v": v})
    hv = ["hvp", *FILES, "--vector", "v.safetensors", "-o", "hv.safetensors",
          "--threads", str(a.threads)]
    p, _ = run([lnkit, *hv, "--repeat", str(a.repeat + 1)], cwd=work)
    kept = parse_hvp_median(p.stderr)
    p, _ = run([lnkit, *hv, "--repeat", str(a.repeat), "--cache-mb", "0"], cwd=work)
    fresh = parse_hvp_median(p.stderr)
    row("hvp_primal_kept", "lnkit", kept, "s")
    row("hvp_recomputed", "lnkit", fresh, "s")
    row("hvp_reused_graph", "torch", tw["hvp_reused_s"], "s")
    row("hvp_fresh_graph", "torch", tw["hvp_fresh_s"], "s")
    row("hvp_speedup_kept_vs_reused", "lnkit", tw["hvp_reused_s"] / kept, "x")
    row("hvp_speedup_recomputed_vs_fresh", "lnkit", tw["hvp_fresh_s"] / fresh, "x")


def multi30k_rows(a, m30k, work, row):
    """3. The Multi30k full-size product: bench_multi30k's rows."""
    print("== bench_multi30k --all (6-6, d=512, h=8, d_ff=2048, all pairs) ...", flush=True)
    mcsv = os.path.join(work, "m30k.csv")
    run([m30k, "--all", "--sizes", "512,8,2048", "--products", "2", "--threads",
         str(a.threads), "-o", mcsv,
         "--src", os.path.join(ROOT, "data", "multi30k", "val.de"),
         "--tgt", os.path.join(ROOT, "data", "multi30k", "val.en")])
    with open(mcsv, newline="") as f:
        m30 = list(csv.DictReader(f))
    for r in m30:
        k = int(r["product"])
        row(f"multi30k_full_hvp_{'first' if k == 1 else 'kept'}", "lnkit",
            float(r["seconds"]), "s")
    row("multi30k_cached_chunks", "lnkit", int(m30[-1]["cached_chunks"]),
        f"of {m30[-1]['chunks']}")
    return m30


def cpu_name():
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return cpu


def main():
    a = parse_args()
    if a.torch_worker:
        return torch_worker(a)

    sidecar_run = sidecar.Run()  # start time and clock of the sidecar
    wall0 = time.perf_counter()
    busy0 = cpu_busy()
    load0 = loadavg()
    build = os.path.abspath(a.build)
    lnkit = os.path.join(build, "bin", "lnkit")
    m30k = os.path.join(build, "bench", "bench_multi30k")
    for f in (lnkit, m30k):
        if not os.access(f, os.X_OK):
            sys.exit(f"bench_peer: {f} not found (make bench-peer builds it)")
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="lnkit-peer-")
    row = Rows()
    try:
        ver, kernel = make_problem(lnkit, work, a.threads)
        tw, lmeta = eigs_rows(a, lnkit, work, row)
        hvp_rows(a, lnkit, work, tw, row)
        m30 = None if a.skip_multi30k else multi30k_rows(a, m30k, work, row)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    busy1 = cpu_busy()
    wall = time.perf_counter() - wall0
    # the machine's busy share over the run (this run's own use is at most threads /
    # cores of it) and the load averages: what the lead needs to judge the figures
    busy = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
    csvp = os.path.join(a.out, "bench_peer.csv")
    tmp = csvp + ".tmp"
    with open(tmp, "w") as f:
        f.write("measure,tool,value,unit\n")
        for m, t, v, u in row.rows:
            f.write(f"{m},{t},{v:.17g},{u}\n")
    # the sidecar by lnkit's one writer (lnkit meta): command line, commit, versions,
    # BLAS kernel, threads, start and wall time; these are the benchmark's own keys
    meta = dict(
        tol=a.tol, repeat=a.repeat,
        config_b=dict(task="lm", norm="layernorm", norm_pos="post", init="xavier", seed=0,
                      batch_seed=1, **CFG_B),
        lnkit=dict(version=ver, blas=kernel, eigs_meta=lmeta),
        torch=dict((k, tw[k]) for k in ("torch", "scipy", "numpy", "threads",
                                        "openblas_kernel", "blas_info", "import_s", "loss")),
        multi30k=m30,
        machine=dict(cpu=cpu_name(), cores=os.cpu_count(),
                     load_average_start=load0, load_average_end=loadavg(),
                     machine_busy_share=busy,
                     note="machine shared with other work: figures are provisional unless "
                          "machine_busy_share stays near this run's own use "
                          "(threads / cores)"),
    )
    os.replace(tmp, csvp)
    sidecar_run.write(csvp, extra=meta, seeds={"init": 0, "batch": 1}, threads=a.threads,
                      seconds=wall, lnkit=lnkit)
    print(f"bench_peer: wrote {csvp} and bench_peer.meta.json ({wall:.0f} s; machine busy "
          f"{100 * busy:.0f}%, load average {load0:.2f} -> {loadavg():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
