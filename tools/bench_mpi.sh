#!/usr/bin/env bash
# make bench-mpi: the data-parallel H v and Lanczos step on the 6-6 Multi30k
# model (reduced size) with 1 rank x 1 thread, 1 rank x 2 BLAS threads and
# 2 ranks x 1 thread, then the time model T(P) = T(1 x 1) / P + T_comm(P)
# checked against the 2-rank point.
#   bash tools/bench_mpi.sh SERIAL_BUILD MPI_BUILD [bench_mpi options]
# Writes results/bench/bench_mpi.csv (temp name, then mv) and prints the table.
# Runs 1 rank x 1 thread, 1 x 2 and 2 x 1.  Default: --rows 256 --max-tokens 512
# --repeat 5 --steps 8 (about 2 minutes on 2 cores; the VM's timings vary
# by up to 35% between runs: compare the ratios of one run);
# BENCH_MPI_NET_GBPS (default 10) is the network bandwidth assumed for the
# multi-node prediction.
set -euo pipefail
MB=${2:?usage: bash tools/bench_mpi.sh SERIAL_BUILD MPI_BUILD [options]}
SB=$1
shift 2
args="$*"
bin=$MB/bench/bench_mpi
[ -x "$bin" ] || { echo "bench_mpi.sh: $bin not built (make bench-mpi)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench_mpi.sh: mpirun not found (make deps-test)" >&2; exit 2; }
out=results/bench
mkdir -p "$out"
start=$(date -u +%FT%TZ); t0=$(date +%s.%N)
tmp=$(mktemp "$out/.bench_mpi.csv.XXXXXX")
trap 'rm -f "$tmp" "$tmp.meta.json"' EXIT
# bench_mpi writes the header row into the empty file, then each run its row
opts=(--rows 256 --max-tokens 512 --repeat 5 --steps 8 "$@")
# --bind-to none: mpirun binds a lone rank to one core, which would leave a
# second BLAS thread no core of its own
MR=(mpirun -q --allow-run-as-root --oversubscribe --bind-to none)
OPENBLAS_NUM_THREADS=1 "${MR[@]}" -np 1 "$bin" --threads 1 -o "$tmp" "${opts[@]}"
OPENBLAS_NUM_THREADS=2 "${MR[@]}" -np 1 "$bin" --threads 2 -o "$tmp" "${opts[@]}" | tail -1
OPENBLAS_NUM_THREADS=1 "${MR[@]}" -np 2 "$bin" --threads 1 -o "$tmp" "${opts[@]}" | tail -1
rm -f "$tmp.meta.json" # the last run's sidecar: bench_meta.py's records the three
chmod 644 "$tmp"
mv "$tmp" "$out/bench_mpi.csv"
trap - EXIT
# threads and ranks in the sidecar: the most that one of its runs used (the param runs names each)
python3 bench/bench_meta.py "$out/bench_mpi.csv" --command "bash tools/bench_mpi.sh $SB $MB${args:+ $args}" \
    --start "$start" --seconds "$(echo "$(date +%s.%N) $t0" | awk '{printf "%.3f", $1 - $2}')" \
    --lnkit "$SB/bin/lnkit" --threads 2 --ranks 2 --param "options=${opts[*]}" \
    --param "runs=1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread" \
    --param "size=d,h,d_ff,L = 64,4,256,6 (seq2seq, Post-LN, Xavier, seed 0)" \
    --param "remake=make bench-mpi (on a quiet machine: the timings)"
python3 - "$out/bench_mpi.csv" "${BENCH_MPI_NET_GBPS:-10}" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
net = float(sys.argv[2]) * 1e9 / 8          # bytes per second
def pick(r, t):
    return next(x for x in rows if x["ranks"] == str(r) and x["threads"] == str(t))
r11, r12, r21 = pick(1, 1), pick(1, 2), pick(2, 1)
n = int(r11["n_params"])
T11, T12, T21 = (float(x["t_hvp_s"]) for x in (r11, r12, r21))
C2, B2 = float(r21["t_comm_s"]), float(r21["bytes_per_hvp"])
bw = (B2 / 2) / C2 if C2 > 0 else float("inf")
# Amdahl within a rank: T(1 x t) = T11 (s + (1 - s) / t); s from the 1 x 2 point
s = max(0.0, min(1.0, 2 * T12 / T11 - 1))
imb = float(r21["imbalance_padded"])
pred21 = T11 / 2 * imb + C2
print("\nbench-mpi: %d parameters; one H v moves %.2f MB per rank with 2 ranks "
      "(model 16 n (P-1)/P = %.2f MB)" % (n, B2 / 2 / 1e6, 16 * n * 0.5 / 1e6))
print("time model for P ranks of 1 thread each (one per core):")
print("    T(P) = T(1 x 1) / P * imbalance + T_comm(P),   T_comm(P) = 16 n (P-1)/P / bandwidth")
print("    (imbalance: the largest shard's padded positions over the mean; shards are whole chunks)")
print("  measured on this machine (2 cores):")
print("    1 rank  x 1 thread : %.3f s per H v" % T11)
print("    1 rank  x 2 threads: %.3f s (speed-up %.2f; Amdahl serial fraction s = %.2f: the"
      " element-wise loops and small GEMMs do not use the 2nd thread)" % (T12, T11 / T12, s))
print("    2 ranks x 1 thread : %.3f s measured; model %.3f / 2 x %.3f + %.4f = %.3f s (%+.1f%%)"
      % (T21, T11, imb, C2, pred21, 100 * (pred21 - T21) / T21))
print("    communication of one H v with 2 ranks: %.4f s, %.2f GB/s per rank (shared memory)"
      % (C2, bw / 1e9))
print("  prediction for P single-thread ranks on nodes joined by a %.0f Gbit/s network"
      " (balanced shards):" % (net * 8 / 1e9))
for P in (1, 2, 4, 8, 16, 32, 64):
    tc = 16 * n * (P - 1) / P / net
    print("    P = %2d: %.3f s per H v (compute %.3f + comm %.4f)" % (P, T11 / P + tc, T11 / P, tc))
PY
echo "bench_mpi.sh: wrote $out/bench_mpi.csv"
