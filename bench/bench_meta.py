#!/usr/bin/env python3
"""Write NAME.meta.json beside a benchmark CSV (results/bench/NAME.csv).

usage: bench_meta.py CSV --command CMD --start ISO --seconds S [--threads N]
                     [--ranks N] [--lnkit BIN] [--param KEY=VALUE ...]

The sidecar is written by lnkit's one writer (`BIN meta`, studies/summary/
sidecar.py; BIN: --lnkit, else $LNKIT, else build/bin/lnkit), so it has the keys
of every lnkit sidecar (docs/MODEL.md §9): the command line (CMD split as the
shell would), the git commit BIN was built from, compiler and library versions,
the BLAS kernel BIN chooses on this machine, threads and ranks (of the
benchmark: 1 unless given), the start and wall time; plus the benchmark's own
keys: csv, columns, rows, parameters (the configurations and seeds, from
--param).  Written to a temporary name and renamed (never half written); an
error (no CSV, unwritable sidecar) is one line and exit status 2.
"""
import argparse
import os
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "studies",
                                "summary"))
import sidecar  # noqa: E402


def value(v):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--command", required=True)
    ap.add_argument("--start", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--lnkit")
    ap.add_argument("--param", action="append", default=[])
    a = ap.parse_args()
    if not os.path.isfile(a.csv):
        sidecar.die("bench_meta", f"{a.csv}: no such file")
    with open(a.csv, newline="") as f:
        header = f.readline().strip().split(",")
        rows = sum(1 for _ in f)
    params = {}
    for p in a.param:
        k, sep, v = p.partition("=")
        if not sep:
            sidecar.die("bench_meta", f"--param {p}: expected KEY=VALUE")
        params[k] = value(v)
    extra = {"csv": os.path.basename(a.csv), "columns": header, "rows": rows,
             "parameters": params}
    run = sidecar.Run(argv=shlex.split(a.command), start=a.start, script=False)
    run.write(a.csv, extra=extra, threads=a.threads, ranks=a.ranks, seconds=a.seconds,
              lnkit=a.lnkit)


if __name__ == "__main__":
    main()
