#!/usr/bin/env bash
# make study-grad-factorial: the gradient study's headline fits over its settings
# (issue 17, item 4) -> results/grad_factorial/.
#
#   bash studies/scripts/study_grad_factorial.sh [BUILD_DIR]
#
# Rows: studies/grad_norms depth and width sweeps (Post-LN and Pre-LN, theorem
# and realistic settings, tasks cls and lm, last block's W2; hidden-state
# statistics skipped), one pair of CSVs per vocabulary V and output tying:
# depth_V<V>_<tied|untied>.csv (L = 2, 4, 8, 16, 32 at d = 64) and
# width_V<V>_<tied|untied>.csv (d = 32, 64, 128, 256 at L = 4), 3 seeds a point.
# Summary: python3 -m studies.summary grad_factorial (fits.csv, values.csv, claims.csv,
# factorial.{md,tex,pdf}, summary.md) from the rows in the output directory.
#
# The sweeps run in two lanes of one BLAS thread each (depth, width).  Work
# happens in BUILD_DIR/grad-factorial-work, which a re-run after an
# interruption resumes (grad_norms skips the points already in its CSVs); on
# success the files are copied to the output directory and the work directory
# removed.
# Overrides (the test runs a tiny factorial): GF_OUT (results/grad_factorial),
# GF_WORK, GF_SEEDS (3), GF_LS (2,4,8,16,32), GF_D (64), GF_DS (32,64,128,256),
# GF_L (4), GF_VS ("64 256"), GF_TASKS (cls,lm), GF_ARGS (more grad_norms
# options, e.g. --rows 2 --len 4).
set -euo pipefail
BUILD=${1:-build}
G=$BUILD/studies/grad_norms
OUT=${GF_OUT:-results/grad_factorial}
WORK=${GF_WORK:-$BUILD/grad-factorial-work}
SEEDS=${GF_SEEDS:-3}
LS=${GF_LS:-2,4,8,16,32}
D=${GF_D:-64}
DS=${GF_DS:-32,64,128,256}
L=${GF_L:-4}
VS=${GF_VS:-64 256}
TASKS=${GF_TASKS:-cls,lm}
read -r -a EXTRA <<<"${GF_ARGS:-}"
for b in "$G"; do
    [ -x "$b" ] || { echo "study_grad_factorial: $b not built (run make all)" >&2; exit 2; }
done
mkdir -p "$WORK" "$OUT"
[ -n "$(ls -A "$WORK" 2>/dev/null)" ] && echo "study_grad_factorial: resuming the interrupted run in $WORK"
T0=$(date +%s)

# lane SWEEP: every V and tying of one sweep, one after the other
lane() {
    local sweep=$1 V tie
    for V in $VS; do
        for tie in tied untied; do
            local name=${sweep}_V${V}_${tie} args=(--task "$TASKS" --V "$V" --seeds "$SEEDS"
                --threads 1 --no-hidden --out "$WORK/${sweep}_V${V}_${tie}.csv")
            [ "$tie" = untied ] && args+=(--untied)
            if [ "$sweep" = depth ]; then args+=(--Ls "$LS" --d "$D"); else args+=(--ds "$DS" --L "$L"); fi
            if ! "$G" "$sweep" "${args[@]}" "${EXTRA[@]}" 2>"$WORK/$name.log"; then
                echo "study_grad_factorial: sweep $name failed:" >&2
                tail -5 "$WORK/$name.log" >&2
                return 1
            fi
            echo "study_grad_factorial: $name done ($(( $(date +%s) - T0 )) s since the start)"
        done
    done
}
echo "study_grad_factorial: running the sweeps ($SEEDS seeds a point; progress in $WORK/*.log)"
lane depth &
l1=$!
lane width &
l2=$!
st=0
wait $l1 || st=1
wait $l2 || st=1
[ $st -eq 0 ] || { echo "study_grad_factorial: a sweep failed; re-run to resume" >&2; exit 1; }
# publish the rows, then summarise them where they are (its section of results/README.md
# is written by hand)
rm -f "$OUT"/depth_*.csv "$OUT"/width_*.csv "$OUT"/depth_*.meta.json "$OUT"/width_*.meta.json
cp "$WORK"/*.csv "$WORK"/*.meta.json "$OUT"/
rm -rf "$WORK"
"${PYTHON:-python3}" -m studies.summary grad_factorial "$OUT"
echo "study_grad_factorial: results in $OUT/ ($(( $(date +%s) - T0 )) s)"
