#!/usr/bin/env bash
# make study-anatomy: the curvature anatomy at initialisation (issue 17):
# studies/anatomy computes the rows, the lm points and the seq2seq points as
# two single-threaded processes side by side (results/anatomy/lm/ and
# results/anatomy/seq2seq/), then studies/anatomy_summary.py makes the tables,
# the fits, values.csv and the gnuplot scripts in results/anatomy/ from those
# files, and gnuplot draws the plots.  Extra arguments go to both study runs.
# OUT overrides the output directory (the test uses a temporary one).
set -euo pipefail
BUILD=${1:-build}
shift || true
out=${OUT:-results/anatomy}
PY=$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
start=$(date +%s)
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
"$BUILD/studies/anatomy" --out "$out/lm" --s2s-L '' --s2s-d '' "$@" &
p1=$!
# seq2seq costs ~20x an lm product here (two stacks, cross-attention, 16
# weight matrices a layer): fewer pairs, seeds, probes and SLQ steps, and the
# depths 1, 2, 6 at d = 16 (the 6-6 model is the reference point)
"$BUILD/studies/anatomy" --out "$out/seq2seq" --lm-L '' --lm-d '' --s2s-L 1,2,6 --s2s-d '' \
    --s2s-L-ref 6 --s2s-d-ref 16 --pairs 6 --seeds 2 --probes 4 --steps 16 --eig-steps 200 \
    "$@" &
p2=$!
rc=0
wait $p1 || rc=$?
wait $p2 || rc=$?
if [ $rc -ne 0 ]; then echo "study-anatomy: a study run failed ($rc)" >&2; exit $rc; fi
"$PY" studies/anatomy_summary.py "$out" lm seq2seq
for g in extremes blocknorms js; do
    if [ -f "$out/$g.gp" ]; then (cd "$out" && gnuplot "$g.gp"); fi
done
echo "study-anatomy: done in $(( $(date +%s) - start )) s -> $out/ (summary.md, tables.tex, *.png)"
