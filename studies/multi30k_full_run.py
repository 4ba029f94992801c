#!/usr/bin/env python3
"""One finished run of studies/multi30k_full.sh -> a row of its runs.csv.

usage: multi30k_full_run.py RUNS.csv TAG d h d_ff pos seed what RESULT.csv
       multi30k_full_run.py --sidecar RUNS.csv     (the sidecar alone)

Reads RESULT.csv's sidecar (lnkit's .meta.json): products of the whole run
(products_total, over every resume), products and wall time of the last
process, and the machine; appends one row (written whole, then renamed).
seconds_per_product is the last process's wall time over its products; the
run's hours are products_total times that (an estimate where the run was
resumed: earlier processes' times are not kept).  RUNS.csv's sidecar (lnkit
meta) names every run's sidecar as an input and the command that remakes the
runs and their inputs.
"""
import csv
import glob
import json
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "summary"))
import sidecar  # noqa: E402

HEADER = ["run", "d", "h", "d_ff", "pos", "seed", "what", "products_total", "resumed_from",
          "last_process_products", "last_process_seconds", "seconds_per_product",
          "estimated_hours", "blas_kernel", "threads", "cpu", "git_commit", "last_process_started"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def write_sidecar(runs):
    ins = sorted(glob.glob(os.path.join(os.path.dirname(runs) or ".", "d*_eigs.meta.json")))
    sidecar.Run().write(runs, inputs=ins, extra={
        "what": "one row per finished run of studies/multi30k_full.sh, appended by "
                "studies/multi30k_full_run.py from the run's sidecar (products, last "
                "process's seconds) and this machine's CPU",
        "remake": "bash studies/multi30k_full.sh --widths 32,64,128,256 --seeds 0,1,2 (and "
                  "--widths 512 --k 1); its inputs (out/multi30k_full/: lnkit batch of "
                  "data/multi30k/val.{de,en}, lnkit init per run) are remade by the same "
                  "command, which skips finished runs"})


def main(a):
    if len(a) == 2 and a[0] == "--sidecar":
        write_sidecar(a[1])
        return 0
    if len(a) != 9:
        print(__doc__, file=sys.stderr)
        return 2
    runs, tag, d, h, dff, pos, seed, what, result = a
    with open(os.path.splitext(result)[0] + ".meta.json") as f:
        m = json.load(f)
    tot = int(m.get("products_total", m.get("hvp_products", 0)))
    here = int(m.get("hvp_products", 0))
    wall = float(m.get("wall_seconds", 0.0))
    spp = wall / here if here else float("nan")
    row = [tag, d, h, dff, pos, seed, what, tot, m.get("resumed_from", 0), here, f"{wall:.1f}",
           f"{spp:.2f}", f"{tot * spp / 3600:.2f}", m.get("blas_kernel", ""), m.get("threads", ""),
           cpu_model(), m.get("git_commit", ""), m.get("start_time", "")]
    rows = []
    if os.path.exists(runs):
        with open(runs, newline="") as f:
            rows = [r for r in csv.reader(f)][1:]
    rows = [r for r in rows if not (r[0] == tag and r[6] == what)] + [[str(x) for x in row]]
    tmp = runs + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(rows)
    os.replace(tmp, runs)
    write_sidecar(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
