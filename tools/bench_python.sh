#!/usr/bin/env bash
# A product through the Python package against `lnkit hvp --repeat` on config (b):
# `bash tools/bench_python.sh BUILD_DIR [bench_python.py options]` (make bench-python).
# bench/bench_python.py says what is measured; writes out/bench/bench_python.csv.
set -euo pipefail
build=${1:?usage: bash tools/bench_python.sh BUILD_DIR [options]}
shift
bash tools/deps.sh python3-numpy python3-scipy
"${PYTHON:-/usr/bin/python3}" bench/bench_python.py --build "$build" "$@"
