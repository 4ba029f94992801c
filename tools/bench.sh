#!/usr/bin/env bash
# lnkit benchmark: `bash tools/bench.sh BUILD_DIR` (what `make bench` runs).
# Runs BUILD_DIR/bench/bench_model on 2 BLAS threads (OpenBLAS on the best
# kernel: lnk_blas_setup), prints its table and writes results/bench/bench_model.csv
# and bench_lanczos.csv (temp name then mv: never half written).
set -euo pipefail
build=${1:?usage: bash tools/bench.sh BUILD_DIR}
bin=$build/bench/bench_model
[ -x "$bin" ] || { echo "bench.sh: $bin not found (run make bench)" >&2; exit 2; }
out=results/bench
mkdir -p "$out"
tmp=$(mktemp "$out/.bench_model.csv.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$bin" --threads 2 --csv "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out/bench_model.csv"
trap - EXIT
echo "bench.sh: wrote $out/bench_model.csv"

# Lanczos on the model Hessian (config b): step time split into H v and
# vector work, 80 steps, against the product alone (partial reorthogonalisation).
tl=$(mktemp "$out/.bench_lanczos.csv.XXXXXX")
trap 'rm -f "$tl"' EXIT
"$build/bench/bench_lanczos" --threads 2 --steps 80 --csv "$tl"
chmod 644 "$tl"
mv "$tl" "$out/bench_lanczos.csv"
trap - EXIT
# Lanczos vector work alone on a cheap operator of the same size, if built.
if [ -x "$build/bench/bench_curvature" ]; then "$build/bench/bench_curvature"; fi
# Would blocks of vectors sharing one pass be faster?  The GEMMs' answer.
if [ -x "$build/bench/bench_blocks" ]; then "$build/bench/bench_blocks" --threads 2; fi
