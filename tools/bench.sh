#!/usr/bin/env bash
# lnkit benchmark: `bash tools/bench.sh BUILD_DIR` (what `make bench` runs).
# Runs BUILD_DIR/bench/bench_model on 2 BLAS threads (OpenBLAS on the best
# kernel: the program's start, src/front/start.c), prints its table and writes results/bench/bench_model.csv
# and bench_lanczos.csv (temp name then mv: never half written).
set -euo pipefail
build=${1:?usage: bash tools/bench.sh BUILD_DIR}
bin=$build/bench/bench_model
[ -x "$bin" ] || { echo "bench.sh: $bin not found (run make bench)" >&2; exit 2; }
out=results/bench
mkdir -p "$out"
start=$(date -u +%FT%TZ); t0=$(date +%s.%N)
secs() { echo "$(date +%s.%N) $t0" | awk '{printf "%.3f", $1 - $2}'; }
tmp=$(mktemp "$out/.bench_model.csv.XXXXXX")
trap 'rm -f "$tmp" "$tmp.meta.json"' EXIT
"$bin" --threads 2 -o "$tmp"
rm -f "$tmp.meta.json" # the benchmark's sidecar of the temporary name: bench_meta.py writes the file's
chmod 644 "$tmp"
mv "$tmp" "$out/bench_model.csv"
trap - EXIT
python3 bench/bench_meta.py "$out/bench_model.csv" --command "bash tools/bench.sh $build" \
    --start "$start" --seconds "$(secs)" --threads 2 --lnkit "$build/bin/lnkit" \
    --param "configs=a: d=128 h=4 L=6 d_ff=512 V=1000 B=16 T=32; b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 (lm, LayerNorm, Xavier, seed 0)" --param repeat=default \
    --param "remake=make bench (on a quiet machine: the timings)"
echo "bench.sh: wrote $out/bench_model.csv"

# Lanczos on the model Hessian (config b): step time split into H v and
# vector work, 80 steps, against the product alone (partial reorthogonalisation);
# then again with the basis written before the run (--pretouch), which tells the
# host's first-touch cost of new memory (a VM's) from the rest of the step.
tl=$(mktemp "$out/.bench_lanczos.csv.XXXXXX")
t2=$(mktemp "$out/.bench_lanczos.csv.XXXXXX")
trap 'rm -f "$tl" "$t2" "$tl.meta.json" "$t2.meta.json"' EXIT
"$build/bench/bench_lanczos" --threads 2 --steps 80 -o "$tl"
"$build/bench/bench_lanczos" --threads 2 --steps 80 --pretouch -o "$t2"
rm -f "$tl.meta.json" "$t2.meta.json" # two runs in one file: bench_meta.py's sidecar
tail -n +2 "$t2" >> "$tl"
rm -f "$t2"
chmod 644 "$tl"
mv "$tl" "$out/bench_lanczos.csv"
trap - EXIT
python3 bench/bench_meta.py "$out/bench_lanczos.csv" --command "bash tools/bench.sh $build" \
    --start "$start" --seconds "$(secs)" --threads 2 --lnkit "$build/bin/lnkit" \
    --param config=b --param steps=80 --param "rows=as eigs runs; --pretouch"
# Lanczos vector work alone on a cheap operator of the same size, if built.
if [ -x "$build/bench/bench_curvature" ]; then "$build/bench/bench_curvature"; fi
# Would blocks of vectors sharing one pass be faster?  The GEMMs' answer.
if [ -x "$build/bench/bench_blocks" ]; then "$build/bench/bench_blocks" --threads 2; fi
