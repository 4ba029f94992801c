#!/usr/bin/python3
"""PyTorch (float64) benchmark of the docs/MODEL.md transformer, to set lnkit's timings against.

usage: /usr/bin/python3 bench/bench_torch.py [--threads N] [--repeat R] [--repeat-b R]
                                             [--configs a,b] [--csv FILE]

Task lm, LayerNorm, Post-LN and Pre-LN, two sizes:
  a: d=128 h=4 L=6 d_ff=512  V=1000 B=16 T=32
  b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32
T is the number of input positions (the tgt rows hold T+1 tokens: <bos>=2 then ids uniform
in [4, V), no padding).  Xavier-uniform init (MODEL.md section 5 default), float64.
Timed, each as the median over R runs after one warm-up:
  fwd_s   the loss (forward only, no autograd graph);
  grad_s  loss + backward;
  hvp_s   one Hessian-vector product with the graph rebuilt: forward, gradient with
          create_graph, gradient of <g, v>.
The model code is tests/ref_torch.py (the independent reference), unchanged.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import ref_torch as R  # noqa: E402

SIZES = {
    "a": dict(d=128, h=4, L=6, d_ff=512, V=1000, B=16, T=32),
    "b": dict(d=256, h=4, L=6, d_ff=1024, V=4000, B=16, T=32),
}


def xavier_init(layout, d, gen):
    """MODEL.md section 5 default: matrices U(-a, a), a = sqrt(6/(in+out)); embeddings
    N(0, 1/d); biases 0; norm gains 1."""
    parts = []
    for name, shape in layout:
        if name in ("src_emb", "tgt_emb"):
            t = torch.randn(shape, generator=gen, dtype=torch.float64) / math.sqrt(d)
        elif len(shape) == 2:
            a = math.sqrt(6.0 / (shape[0] + shape[1]))
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * a
        elif name.endswith(".g"):
            t = torch.ones(shape, dtype=torch.float64)
        else:
            t = torch.zeros(shape, dtype=torch.float64)
        parts.append(t.reshape(-1))
    return torch.cat(parts)


def median_time(fn, repeat):
    fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def bench_one(size, pos, repeat, seed):
    s = SIZES[size]
    c = R.resolve_config({"task": "lm", "norm_pos": pos, "norm": "layernorm", "d": s["d"],
                          "h": s["h"], "L": s["L"], "d_ff": s["d_ff"], "V": s["V"]})
    layout = R.param_layout(c)
    gen = torch.Generator().manual_seed(seed)
    theta0 = xavier_init(layout, s["d"], gen)
    tgt = torch.randint(4, s["V"], (s["B"], s["T"] + 1), generator=gen, dtype=torch.int64)
    tgt[:, 0] = R.BOS
    tb = R.check_batch(c, {"tgt": tgt.numpy()})
    v = torch.randn(theta0.numel(), generator=gen, dtype=torch.float64)

    def fwd():
        with torch.no_grad():
            return float(R.loss_fn(c, R.unflatten(theta0, layout), tb))

    def grad():
        theta = theta0.clone().requires_grad_(True)
        L = R.loss_fn(c, R.unflatten(theta, layout), tb)
        (g,) = torch.autograd.grad(L, theta)
        return g

    def hvp():
        theta = theta0.clone().requires_grad_(True)
        L = R.loss_fn(c, R.unflatten(theta, layout), tb)
        (g,) = torch.autograd.grad(L, theta, create_graph=True)
        (hv,) = torch.autograd.grad(g @ v, theta)
        return hv

    loss = fwd()
    return dict(config=size, pos=pos, n_params=theta0.numel(), loss=loss,
                fwd_s=median_time(fwd, repeat), grad_s=median_time(grad, repeat),
                hvp_s=median_time(hvp, repeat), repeat=repeat)


def main(argv=None):
    ap = argparse.ArgumentParser(description="PyTorch float64 benchmark (lm, Post/Pre-LN)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs for config a")
    ap.add_argument("--repeat-b", type=int, default=3,
                    help="timed runs for config b (fewer: keeps the default run short)")
    ap.add_argument("--configs", default="a,b")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    sizes = [x for x in a.configs.split(",") if x]
    for x in sizes:
        if x not in SIZES:
            ap.error(f"--configs: unknown config {x!r}, expected a or b")
    print(f"torch {torch.__version__}, float64, threads={torch.get_num_threads()}, "
          f"median of R runs after 1 warm-up (R={a.repeat} for a, {a.repeat_b} for b)")
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores"
          + (" (busy machine: timings will be noisy)" if load > 0.5 else ""))
    for x in sizes:
        print(f"  {x}: " + " ".join(f"{k}={v}" for k, v in SIZES[x].items()))
    rows = []
    print(f"{'config':>6} {'pos':>4} {'n_params':>9} {'R':>2} {'loss':>10} "
          f"{'fwd_s':>10} {'grad_s':>10} {'hvp_s':>10} {'hvp/grad':>8}")
    for x in sizes:
        for pos in ("post", "pre"):
            r = bench_one(x, pos, a.repeat if x == "a" else a.repeat_b, a.seed)
            rows.append(r)
            print(f"{x:>6} {pos:>4} {r['n_params']:>9} {r['repeat']:>2} {r['loss']:>10.6f} "
                  f"{r['fwd_s']:>10.4f} {r['grad_s']:>10.4f} {r['hvp_s']:>10.4f} "
                  f"{r['hvp_s'] / r['grad_s']:>8.2f}", flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            f.write("config,pos,fwd_s,grad_s,hvp_s\n")
            for r in rows:
                f.write(f"{r['config']},{r['pos']},{r['fwd_s']:.17g},{r['grad_s']:.17g},"
                        f"{r['hvp_s']:.17g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
