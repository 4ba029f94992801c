#!/usr/bin/env python3
"""Write NAME.meta.json beside a benchmark CSV (results/bench/NAME.csv).

usage: bench_meta.py CSV --command CMD [--start ISO] [--seconds S] [--threads N]
                     [--lnkit BIN] [--param KEY=VALUE ...] [--after-the-run COMMIT]

The sidecar holds what the guide asks of every result: the command line, the
parameters (the benchmark configurations and seeds), the git commit, the
versions and BLAS kernel (from `BIN --version`), the threads, the start time
and the wall time.  --after-the-run COMMIT writes the sidecar of a CSV made
before sidecars existed: the commit that wrote the CSV is named, and the
run's start time, wall time and versions are null (not recorded then).
The file is written to a temporary name and renamed (never half written).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys


def value(v):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--command", required=True)
    ap.add_argument("--start")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--lnkit")
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--after-the-run")
    a = ap.parse_args()
    if not os.path.isfile(a.csv):
        sys.exit(f"bench_meta: {a.csv}: no such file")
    with open(a.csv, newline="") as f:
        header = f.readline().strip().split(",")
        rows = sum(1 for _ in f)
    params = {}
    for p in a.param:
        k, sep, v = p.partition("=")
        if not sep:
            sys.exit(f"bench_meta: --param {p}: expected KEY=VALUE")
        params[k] = value(v)
    meta = {"csv": os.path.basename(a.csv), "columns": header, "rows": rows,
            "command": a.command, "parameters": params, "threads": a.threads}
    if a.after_the_run:
        meta.update({"git_commit": a.after_the_run, "start_time": None, "wall_seconds": None,
                     "versions": None,
                     "note": "sidecar written after the run (the CSV predates sidecars for "
                             "benchmarks): the commit is the one that wrote the CSV; its "
                             "start time, wall time and versions were not recorded"})
    else:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        meta.update({"git_commit": git("rev-parse", "HEAD"), "git_dirty": bool(dirty),
                     "start_time": a.start or datetime.datetime.now(
                         datetime.timezone.utc).isoformat(timespec="seconds"),
                     "wall_seconds": a.seconds, "versions": None})
        if a.lnkit:
            out = subprocess.run([a.lnkit, "--version"], capture_output=True, text=True)
            meta["versions"] = out.stdout.strip().split("\n") if out.returncode == 0 else None
    path = a.csv[:-4] + ".meta.json" if a.csv.endswith(".csv") else a.csv + ".meta.json"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
