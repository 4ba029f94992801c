#!/usr/bin/env bash
# lnkit benchmark: `bash tools/bench.sh BUILD_DIR` (what `make bench` runs).
# Runs the benchmarks of BUILD_DIR/bench on 2 BLAS threads (OpenBLAS on the
# best kernel: the program's start, src/front/start.c), prints their tables
# and writes results/bench/bench_model.csv, bench_span.csv and
# bench_lanczos.csv (temp name then mv: never half written), each with its
# sidecar (bench/bench_meta.py).  BENCH_ONLY="bench_span ..." runs only the
# benchmarks named (of bench_model bench_span bench_lanczos bench_curvature
# bench_blocks), e.g. to remake one result file.
set -euo pipefail
build=${1:?usage: bash tools/bench.sh BUILD_DIR}
all="bench_model bench_span bench_lanczos bench_curvature bench_blocks"
only=${BENCH_ONLY:-$all}
for b in $only; do
    case " $all " in *" $b "*) ;; *) echo "bench.sh: BENCH_ONLY: unknown benchmark '$b' (expected some of: $all)" >&2; exit 2 ;; esac
done
bin=$build/bench/bench_model
[ -x "$bin" ] || { echo "bench.sh: $bin not found (run make bench)" >&2; exit 2; }
out=results/bench
mkdir -p "$out"
command="bash tools/bench.sh $build"
[ -z "${BENCH_ONLY:-}" ] || command="BENCH_ONLY='$BENCH_ONLY' $command"
# each result's clock: its start and wall seconds in its sidecar
clock() { start=$(date -u +%FT%TZ); t0=$(date +%s.%N); }
secs() { echo "$(date +%s.%N) $t0" | awk '{printf "%.3f", $1 - $2}'; }

# write_csv NAME PROG ARGS...: PROG ARGS -o a temporary name, renamed to
# $out/NAME.csv once whole; its clock started (the sidecar's, written after).
write_csv() {
    local name=$1
    shift
    clock
    tmp=$(mktemp "$out/.$name.csv.XXXXXX")
    trap 'rm -f "$tmp" "$tmp.meta.json"' EXIT
    "$@" -o "$tmp"
    rm -f "$tmp.meta.json" # the benchmark's sidecar of the temporary name: bench_meta.py writes the file's
    chmod 644 "$tmp"
    mv "$tmp" "$out/$name.csv"
    trap - EXIT
}

bench_model() {
    write_csv bench_model "$bin" --threads 2
    python3 bench/bench_meta.py "$out/bench_model.csv" --command "$command" \
        --start "$start" --seconds "$(secs)" --threads 2 --lnkit "$build/bin/lnkit" \
        --param "configs=a: d=128 h=4 L=6 d_ff=512 V=1000 B=16 T=32; b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 (lm, LayerNorm, Xavier, seed 0)" --param repeat=default \
        --param "remake=make bench (on a quiet machine: the timings)"
    echo "bench.sh: wrote $out/bench_model.csv"
}

# Block products (H v, which skips the work below the block, and G v) on
# the configs of bench_model, against the full product.
bench_span() {
    local repeat=7 # products per block and kind: the run takes about 2 minutes
    write_csv bench_span "$build/bench/bench_span" --threads 2 --repeat $repeat
    python3 bench/bench_meta.py "$out/bench_span.csv" --command "$command" \
        --start "$start" --seconds "$(secs)" --threads 2 --lnkit "$build/bin/lnkit" \
        --param "configs=a: d=128 h=4 L=6 d_ff=512 V=1000 B=16 T=32; b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 (lm, LayerNorm, Post-LN and Pre-LN, Xavier, seed 0; synthetic batch seed 1)" \
        --param "blocks=*, *_emb, dec.0.ffn.w2, dec.3.ffn.w2, dec.5.ffn.w2, dec.final_norm.* (Pre-LN), out.w; kinds hessian and ggn" \
        --param repeat=$repeat \
        --param "remake=BENCH_ONLY=bench_span make bench (on a quiet machine: the timings)"
    echo "bench.sh: wrote $out/bench_span.csv"
}

# Lanczos on the model Hessian (config b): step time split into H v and
# vector work, 80 steps, against the product alone (partial reorthogonalisation);
# then again with the basis written before the run (--pretouch), which tells the
# host's first-touch cost of new memory (a VM's) from the rest of the step.
bench_lanczos() {
    clock
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
    python3 bench/bench_meta.py "$out/bench_lanczos.csv" --command "$command" \
        --start "$start" --seconds "$(secs)" --threads 2 --lnkit "$build/bin/lnkit" \
        --param config=b --param steps=80 --param "rows=as eigs runs; --pretouch"
}

# Lanczos vector work alone on a cheap operator of the same size, if built.
bench_curvature() {
    if [ -x "$build/bench/bench_curvature" ]; then "$build/bench/bench_curvature"; fi
}
# Would blocks of vectors sharing one pass be faster?  The GEMMs' answer.
bench_blocks() {
    if [ -x "$build/bench/bench_blocks" ]; then "$build/bench/bench_blocks" --threads 2; fi
}

for b in $all; do
    case " $only " in *" $b "*) "$b" ;; esac
done
