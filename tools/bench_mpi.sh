#!/usr/bin/env bash
# make bench-mpi: the data-parallel H v and Lanczos step on the 6-6 Multi30k
# model (reduced size) with 1 rank x 2 BLAS threads and 2 ranks x 1 thread,
# then the time model T(P) = T_compute / P + T_comm(P) checked against them.
#   bash tools/bench_mpi.sh SERIAL_BUILD MPI_BUILD [bench_mpi options]
# Writes results/bench/bench_mpi.csv (temp name, then mv) and prints the table.
# Default: --pairs 256 --repeat 3 --steps 10 (about 2 minutes on 2 cores);
# BENCH_MPI_NET_GBPS (default 10) is the network bandwidth assumed for the
# multi-node prediction.
set -euo pipefail
MB=${2:?usage: bash tools/bench_mpi.sh SERIAL_BUILD MPI_BUILD [options]}
shift 2
bin=$MB/bench/bench_mpi
[ -x "$bin" ] || { echo "bench_mpi.sh: $bin not built (make bench-mpi)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench_mpi.sh: mpirun not found (make deps-test)" >&2; exit 2; }
out=results/bench
mkdir -p "$out"
tmp=$(mktemp "$out/.bench_mpi.csv.XXXXXX")
trap 'rm -f "$tmp"' EXIT
echo "data,pairs,scored_tokens,chunks,d,d_ff,n_params,ranks,threads,t_hvp_s,t_comm_s,bytes_per_hvp,t_step_s,t_orth_s,basis_MB_80_steps" > "$tmp"
opts=(--pairs 256 --repeat 3 --steps 10 "$@")
MR=(mpirun -q --allow-run-as-root --oversubscribe)
OPENBLAS_NUM_THREADS=2 "${MR[@]}" -np 1 "$bin" --threads 2 --csv "$tmp" "${opts[@]}"
OPENBLAS_NUM_THREADS=1 "${MR[@]}" -np 2 "$bin" --threads 1 --csv "$tmp" "${opts[@]}" | tail -1
chmod 644 "$tmp"
mv "$tmp" "$out/bench_mpi.csv"
trap - EXIT
python3 - "$out/bench_mpi.csv" "${BENCH_MPI_NET_GBPS:-10}" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
net = float(sys.argv[2]) * 1e9 / 8          # bytes per second
r1 = next(r for r in rows if r["ranks"] == "1")
r2 = next(r for r in rows if r["ranks"] == "2")
n = int(r1["n_params"])
T1, T2 = float(r1["t_hvp_s"]), float(r2["t_hvp_s"])
C2, B2 = float(r2["t_comm_s"]), float(r2["bytes_per_hvp"])
# per rank: allgather + reduce-scatter of 8 n bytes, (P-1)/P of each
bw = (B2 / 2) / C2 if C2 > 0 else float("inf")  # bytes per second per rank, measured (shared memory)
print("\nbench-mpi: %d parameters; one H v moves %.1f MB per rank with 2 ranks "
      "(model 16 n (P-1)/P = %.1f MB)" % (n, B2 / 2 / 1e6, 16 * n * 0.5 / 1e6))
print("time model: T(P) = T_compute / P + T_comm(P),  T_comm(P) = 16 n (P-1)/P / bandwidth")
print("  the 2 points of this machine (the same 2 cores, so T_compute is shared, not divided):")
print("    1 rank  x 2 threads: T = %.3f s  (T_compute)" % T1)
print("    2 ranks x 1 thread : T = %.3f s  measured; model T_compute + T_comm = %.3f + %.4f = %.3f s"
      " (%+.1f%%)" % (T2, T1, C2, T1 + C2, 100 * (T1 + C2 - T2) / T2))
print("    measured shared-memory bandwidth per rank: %.2f GB/s" % (bw / 1e9))
print("  on P nodes like this one (T_compute / P, %.0f Gbit/s network):" % (net * 8 / 1e9))
for P in (1, 2, 4, 8, 16, 32):
    tc = 16 * n * (P - 1) / P / net
    print("    P = %2d: %.3f s per H v (compute %.3f + comm %.4f)" % (P, T1 / P + tc, T1 / P, tc))
PY
echo "bench_mpi.sh: wrote $out/bench_mpi.csv"
