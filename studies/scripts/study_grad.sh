#!/usr/bin/env bash
# make study-grad: the gradient-norm study (Xiong et al. 2020, Theorem 1, Lemma 2,
# Figure 3) at initialisation, regenerated into results/grad/.
#
#   bash studies/scripts/study_grad.sh [BUILD_DIR]
#
# Sweeps (studies/grad_norms, 10 seeds a point, Post-LN and Pre-LN, theorem and
# realistic settings): depth (cls, L = 1..48, d = 64), depth_seq2seq (L-L
# seq2seq, L = 6..14, Figure 3 c, d), width (cls, d = 32..1024, L = 4),
# tie_ablation (d = 256 = V with an untied output matrix), profile (6-layer cls
# and 6-6 seq2seq, d = 128, Figure 3 a, b).  Hidden-state statistics (CSV
# NAME_hidden.csv) for depth, width and profile; the other two skip them.
# Then the raw rows (CSV + .meta.json, with each sweep's wall time) go to
# results/grad/, and its summary, `python3 -m studies.summary grad` (it can run
# alone on the committed rows: tables, fits, Lemma 2 checks, figures, values.csv
# and claims.csv for the prose), writes the rest there.
#
# The sweeps run in two lanes of one BLAS thread each (the small matrices of
# the d = 64 models run slower on two threads than on one): lane 1 the width
# sweep, lane 2 the others.  Work happens in BUILD_DIR/grad-work, which a
# re-run after an interruption resumes (grad_norms skips points already in
# its CSVs); on success the files are copied to results/grad/ and the work
# directory removed, so the next `make study-grad` starts afresh.
# GRAD_SEEDS overrides the number of seeds (default 10), GRAD_OUT the output directory.
set -euo pipefail
BUILD=${1:-build}
G=$BUILD/studies/grad_norms
OUT=${GRAD_OUT:-results/grad}
WORK=$BUILD/grad-work
SEEDS=${GRAD_SEEDS:-10}
for b in "$G"; do
    [ -x "$b" ] || { echo "study_grad: $b not built (run make all)" >&2; exit 2; }
done
mkdir -p "$WORK" "$OUT"
[ -n "$(ls -A "$WORK" 2>/dev/null)" ] && echo "study_grad: resuming the interrupted run in $WORK"

T0=$(date +%s.%N)
elapsed() { echo "$(date +%s.%N) $1" | awk '{printf "%.1f", $1 - $2}'; }

# run NAME ARGS...: one sweep, its stderr in WORK/NAME.log, its time in WORK/NAME.time
run() {
    local name=$1 t
    shift
    t=$(date +%s.%N)
    if ! "$G" "$@" --threads 1 --seeds "$SEEDS" --out "$WORK/$name.csv" 2>"$WORK/$name.log"; then
        echo "study_grad: sweep $name failed:" >&2
        tail -5 "$WORK/$name.log" >&2
        return 1
    fi
    elapsed "$t" >"$WORK/$name.time"
    printf 'study_grad: sweep %-14s %7s s   (%s)\n' "$name" "$(cat "$WORK/$name.time")" \
        "$(tail -1 "$WORK/$name.log")"
}

echo "study_grad: running the sweeps ($SEEDS seeds a point; progress in $WORK/*.log)"
( run width width ) &
lane1=$!
(
    run depth depth
    run depth_seq2seq depth --task seq2seq --Ls 6,8,10,12,14 --no-hidden
    run profile profile
    run tie_ablation width --ds 256 --untied --no-hidden
) &
lane2=$!
st=0
wait $lane1 || st=1
wait $lane2 || st=1
[ $st -eq 0 ] || { echo "study_grad: a sweep failed; re-run to resume" >&2; exit 1; }
echo "study_grad: sweeps done in $(elapsed "$T0") s (two lanes in parallel)"

# publish: replace results/grad with the raw rows of this run, then summarise there
rm -f "$OUT"/*.csv "$OUT"/*.meta.json "$OUT"/*.md "$OUT"/*.tex "$OUT"/*.png "$OUT"/*.pdf
cp "$WORK"/*.csv "$WORK"/*.meta.json "$OUT"/
t=$(date +%s.%N)
"${PYTHON:-python3}" -m studies.summary grad "$OUT"
echo "study_grad: summary in $(elapsed "$t") s"
rm -rf "$WORK"
echo "study_grad: results in $OUT/ (total $(elapsed "$T0") s); sweep times in the sidecars"
