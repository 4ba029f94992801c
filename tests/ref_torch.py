#!/usr/bin/python3
"""Independent PyTorch (float64) reference of the transformer of docs/MODEL.md.

Written from the model contract and the papers only (docs/MODEL.md §1-§9, issue 32; not
from the C sources), to cross-check lnkit's loss, gradient and curvature products.  The
model is the package tests/ref/; this file is its command line and re-exports its names
(bench/bench_torch.py and bench/bench_peer.py import it as a module).

usage:
  /usr/bin/python3 tests/ref_torch.py --config C.json --weights W.safetensors \
      --batch B.safetensors [--vector v.safetensors [--ggn]] [--nn] [--dense-hessian] \
      -o out.safetensors
  /usr/bin/python3 tests/ref_torch.py --jobs jobs.json

out.safetensors holds "loss" F64 [1], "grad" F64 [n_params] (flat, MODEL.md section 6
order), "hv" F64 [n_params] when --vector is given, "gv" (G v, the Gauss-Newton part of
MODEL.md §7) and "fv" (F v = H v - G v) with --ggn, "hessian" F64 [n, n] with
--dense-hessian, and with --nn "nn_loss" [1] and "nn_grad" [n_params] from a model built
of torch.nn's transformer modules when torch.nn expresses the configuration (else the
metadata key "nn_skipped" says why).  --jobs runs many such commands in one process: a
JSON list of objects with the keys config, weights, batch, output and optionally vector,
ggn, nn, dense_hessian (one torch start for a whole test).  Errors print
"ref_torch: <message>" (with --jobs: "ref_torch: job K: <message>", the other jobs still
run) and exit 2.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref import *  # noqa: E402,F401,F403  (the reference's names, for importers)
from ref import (RefError, st_read, st_write, resolve_config, param_layout, n_params,  # noqa: E402
                 flatten_named, check_batch, loss_grad, curvature_products, hvp,
                 dense_hessian)
from ref import nnmodel  # noqa: E402


def warn_read_only(obj, layout, path):
    """n_params / param_order written by another program: not used here, but a
    disagreement with this reference's layout is worth a warning (stderr)."""
    n = n_params(layout)
    k = obj.get("n_params")
    if k is not None and k != n:
        print(f"ref_torch: warning: {path}: n_params = {k}, this reference counts {n}",
              file=sys.stderr)
    order = obj.get("param_order")
    names = [nm for nm, _ in layout]
    if isinstance(order, list) and order:
        got = [e if isinstance(e, str) else (e.get("name") if isinstance(e, dict) else
               (e[0] if isinstance(e, list) and e else None)) for e in order]
        if got != names:
            print(f"ref_torch: warning: {path}: param_order differs from this reference's "
                  f"order (first: {got[:3]} vs {names[:3]})", file=sys.stderr)


def load_all(config_path, weights_path, batch_path):
    with open(config_path) as f:
        try:
            obj = json.load(f)
        except json.JSONDecodeError as e:
            raise RefError(f"{config_path}: invalid JSON ({e})")
    c = resolve_config(obj)
    layout = param_layout(c)
    warn_read_only(obj, layout, config_path)
    w, _ = st_read(weights_path)
    theta = flatten_named(w, layout, weights_path)
    b, _ = st_read(batch_path)
    tb = check_batch(c, b)
    return c, layout, theta, tb


def read_vector(path, layout):
    t, _ = st_read(path)
    n = n_params(layout)
    if set(t) == {"v"}:
        v = t["v"]
        if v.dtype != np.dtype("<f8") or v.shape != (n,):
            raise RefError(f"{path}: tensor 'v' is {v.dtype} {list(v.shape)}, "
                           f"expected F64 [{n}]")
        return v.copy()
    return flatten_named(t, layout, path)


def run_one(config, weights, batch, output, vector=None, ggn=False, nn=False,
            dense_hessian_=False):
    """One command: compute and write output (RefError / OSError on bad input)."""
    c, layout, theta, tb = load_all(config, weights, batch)
    n = len(theta)
    out = {}
    meta = {"n_params": n, "param_order": ",".join(nm for nm, _ in layout)}
    if ggn and not vector:
        raise RefError("--ggn needs --vector")
    if vector:
        v = read_vector(vector, layout)
        if ggn:
            L, g, hv, gv, fv = curvature_products(c, layout, theta, tb, v)
        else:
            L, g, hv = hvp(c, layout, theta, tb, v)
    else:
        _, L, g = loss_grad(c, layout, theta, tb)
    out["loss"] = L.detach().reshape(1)
    out["grad"] = g.detach()
    if vector:
        out["hv"] = hv
        if ggn:
            out["gv"], out["fv"] = gv, fv
    if nn:
        why = nnmodel.expressible(c)
        if why:
            meta["nn_skipped"] = why
        else:
            out["nn_loss"], out["nn_grad"] = nnmodel.nn_loss_grad(c, layout, theta, tb)
            out["nn_loss"] = out["nn_loss"].reshape(1)
    if dense_hessian_:
        if n > 3000:
            raise RefError(f"--dense-hessian: n_params = {n}, expected <= 3000")
        out["hessian"] = dense_hessian(c, layout, theta, tb)
    st_write(output, out, meta)


_JOB_KEYS = {"config", "weights", "batch", "output", "vector", "ggn", "nn", "dense_hessian"}


def run_jobs(path):
    with open(path) as f:
        try:
            jobs = json.load(f)
        except json.JSONDecodeError as e:
            raise RefError(f"{path}: invalid JSON ({e})")
    if not isinstance(jobs, list):
        raise RefError(f"{path}: expected a JSON list of jobs")
    bad = 0
    for k, j in enumerate(jobs):
        try:
            if not isinstance(j, dict) or set(j) - _JOB_KEYS or \
                    not {"config", "weights", "batch", "output"} <= set(j):
                raise RefError(f"expected an object with config, weights, batch, output "
                               f"(and optionally {sorted(_JOB_KEYS - {'config', 'weights', 'batch', 'output'})})")
            run_one(j["config"], j["weights"], j["batch"], j["output"], j.get("vector"),
                    bool(j.get("ggn")), bool(j.get("nn")), bool(j.get("dense_hessian")))
        except (RefError, OSError) as e:
            print(f"ref_torch: job {k}: {e}", file=sys.stderr)
            bad += 1
    return 2 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--jobs")
    ap.add_argument("--config")
    ap.add_argument("--weights")
    ap.add_argument("--batch")
    ap.add_argument("--vector")
    ap.add_argument("--ggn", action="store_true")
    ap.add_argument("--nn", action="store_true")
    ap.add_argument("--dense-hessian", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    try:
        if a.jobs:
            return run_jobs(a.jobs)
        for k in ("config", "weights", "batch", "output"):
            if getattr(a, k) is None:
                raise RefError(f"--{k} is required (or --jobs)")
        run_one(a.config, a.weights, a.batch, a.output, a.vector, a.ggn, a.nn,
                a.dense_hessian)
    except (RefError, OSError) as e:
        print(f"ref_torch: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
