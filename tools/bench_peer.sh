#!/usr/bin/env bash
# lnkit against PyTorch + SciPy, side by side in one run: `bash tools/bench_peer.sh BUILD_DIR`
# (what `make bench-peer` runs).  bench/bench_peer.py says what is measured; it writes
# results/bench/bench_peer.csv and bench_peer.meta.json.  Takes about 15 minutes (the
# Multi30k full-size products are most of it; --skip-multi30k leaves them out).
set -euo pipefail
build=${1:?usage: bash tools/bench_peer.sh BUILD_DIR [bench_peer.py options]}
shift
bash tools/deps.sh python3-torch python3-numpy python3-scipy
# the system Python with Debian's torch and scipy (not a pyenv one on PATH)
/usr/bin/python3 bench/bench_peer.py --build "$build" "$@"
