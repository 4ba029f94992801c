#!/usr/bin/env bash
# lnkit against PyTorch (float64): `bash tools/bench_torch.sh BUILD_DIR` (what
# `make bench-torch` runs).  Runs bench/bench_torch.py and bench_model, both on
# 2 threads, and prints per (config, norm_pos) the gradient and HVP times and
# the speed-up (torch time / lnkit time; > 1: lnkit is faster).
# The CSVs go to results/bench/{bench_torch,bench_model_vs_torch}.csv (temp + mv);
# bench_model.csv has one writer, tools/bench.sh: lnkit's rows here are only compared.
# Rows of bench_model with no PyTorch counterpart (issue 32's placements and
# parts) are lnkit-only and left out of the comparison.
set -euo pipefail
build=${1:?usage: bash tools/bench_torch.sh BUILD_DIR}
bin=$build/bench/bench_model
[ -x "$bin" ] || { echo "bench_torch.sh: $bin not found (run make bench-torch)" >&2; exit 2; }
py=/usr/bin/python3   # the system Python with python3-torch (not a pyenv one on PATH)
bash tools/deps.sh python3-torch python3-numpy
out=results/bench
mkdir -p "$out"
start=$(date -u +%FT%TZ); t0=$(date +%s.%N)
tt=$(mktemp "$out/.bench_torch.csv.XXXXXX")
tl=$(mktemp "$out/.bench_model.csv.XXXXXX")
tv=$(mktemp "$out/.bench_model_vs_torch.csv.XXXXXX")
trap 'rm -f "$tt" "$tl" "$tv" "$tl.meta.json"' EXIT

echo "== PyTorch (bench/bench_torch.py --threads 2)"
"$py" bench/bench_torch.py --threads 2 --csv "$tt"
echo
echo "== lnkit ($bin --threads 2)"
"$bin" --threads 2 -o "$tl"
rm -f "$tl.meta.json" # the benchmark's sidecar of a file only compared here
echo
echo "== lnkit vs PyTorch (speed-up = torch s / lnkit s)"
awk -F, '
    FNR == 1 { f++; for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
    f == 1 {
        k = $col[FILENAME, "config"] "," $col[FILENAME, "pos"]
        tg[k] = $col[FILENAME, "grad_s"]; th[k] = $col[FILENAME, "hvp_s"]; next }
    {
        k = $col[FILENAME, "config"] "," $col[FILENAME, "pos"]
        if (!(k in tg)) next   # lnkit-only rows (placements and parts)
        order[++n] = k
        lg[k] = $col[FILENAME, "grad_s"]; lh[k] = $col[FILENAME, "hvp_s"] }
    END {
        for (k in tg) if (!(k in lg)) { print "bench_torch.sh: no lnkit row for " k > "/dev/stderr"; bad = 1 }
        printf "%-6s %-4s %12s %12s %8s %12s %12s %8s\n", "config", "pos", "lnkit_grad_s",
               "torch_grad_s", "speedup", "lnkit_hvp_s", "torch_hvp_s", "speedup"
        print "config,pos,lnkit_grad_s,torch_grad_s,grad_speedup,lnkit_hvp_s,torch_hvp_s,hvp_speedup" > CSV
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, ",")
            printf "%-6s %-4s %12.5f %12.5f %8.2f %12.5f %12.5f %8.2f\n", p[1], p[2],
                   lg[k], tg[k], tg[k] / lg[k], lh[k], th[k], th[k] / lh[k]
            printf "%s,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", p[1], p[2], lg[k], tg[k],
                   tg[k] / lg[k], lh[k], th[k], th[k] / lh[k] > CSV
        }
        exit bad
    }' CSV="$tv" "$tt" "$tl"
chmod 644 "$tt" "$tv"
mv "$tt" "$out/bench_torch.csv"
rm -f "$tl"
mv "$tv" "$out/bench_model_vs_torch.csv"
trap - EXIT
secs=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.3f", $1 - $2}')
for f in bench_torch bench_model_vs_torch; do
    python3 bench/bench_meta.py "$out/$f.csv" --command "bash tools/bench_torch.sh $build" \
        --start "$start" --seconds "$secs" --threads 2 --lnkit "$build/bin/lnkit" \
        --param "configs=a: d=128 h=4 L=6 d_ff=512 V=1000 B=16 T=32; b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 (lm, LayerNorm, Xavier, seed 0)" --param "torch=$("$py" -c 'import torch; print(torch.__version__)')" \
        --param "remake=make bench-torch (on a quiet machine: the timings)"
done
echo "bench_torch.sh: wrote $out/bench_torch.csv, bench_model_vs_torch.csv"
