#!/usr/bin/env bash
# make check-results, second half: every study's summarising step, re-run on a
# copy of its committed raw rows, must reproduce the committed tables, values
# (values.csv, the numbers the READMEs quote) and plot scripts exactly.
# Sidecars (*.meta.json: times, command lines) and PNGs are not compared.
#
#   bash tools/check_summaries.sh [BUILD_DIR]
#
# One line per study below: the results directory and the summarising command,
# where {} stands for the copy.  A study added to results/ adds its line.
set -uo pipefail
BUILD=${1:-build}
PYTHON=${PYTHON:-python3}
RESULTS=${RESULTS:-results} # the tests point it at an edited copy
export LNKIT=${LNKIT:-$BUILD/bin/lnkit} # the Python summarisers' sidecar writer (lnkit meta)
SUMMARIES=(
    "demo|$BUILD/studies/demo_postpre --summarise {}"
    "grad|$BUILD/studies/grad_table --dir {}"
    "geometry|$BUILD/studies/ln_geometry_summary {}"
    "grad_factorial|$BUILD/studies/grad_factorial --dir {}"
    "anatomy|$PYTHON studies/anatomy_summary.py {} lm seq2seq"
    "multi30k_full|$PYTHON studies/multi30k_full_summary.py {}"
    "hessian|$BUILD/studies/hessian_spectrum --summarise {}"
    "multi30k|$BUILD/studies/multi30k_hessian --summarise {}"
    "multi30k_all|$BUILD/studies/multi30k_hessian --summarise {}"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for line in "${SUMMARIES[@]}"; do
    dir=${line%%|*}
    cmd=${line#*|}
    src=$RESULTS/$dir
    [ -d "$src" ] || { echo "check_summaries: $src: no such directory" >&2; bad=1; continue; }
    copy=$tmp/$dir
    cp -r "$src" "$copy"
    if ! eval "${cmd//\{\}/\"$copy\"}" >"$tmp/$dir.log" 2>&1; then
        echo "check_summaries: $dir: the summarising step failed: ${cmd//\{\}/$src}" >&2
        tail -5 "$tmp/$dir.log" >&2
        bad=1
        continue
    fi
    n=0
    while IFS= read -r -d '' f; do
        rel=${f#"$copy"/}
        case $rel in *.meta.json | *.png) continue ;; esac
        n=$((n + 1))
        if [ ! -e "$src/$rel" ]; then
            echo "check_summaries: $src/$rel: written by the summarising step but not committed" >&2
            bad=1
        elif ! cmp -s "$f" "$src/$rel"; then
            echo "check_summaries: $src/$rel differs from what its summarising step writes from the committed rows:" >&2
            diff "$src/$rel" "$f" | head -6 >&2
            bad=1
        fi
    done < <(find "$copy" -type f -print0)
    echo "check_summaries: $dir: $n files compared"
done
exit $bad
