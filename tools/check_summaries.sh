#!/usr/bin/env bash
# make check-results, second half: every study's summary, re-run on a copy of its
# committed raw rows alone, must reproduce the committed summary files exactly
# (tables, values.csv, claims.csv, summary.md, report.json, plot data), write
# every figure and sidecar that is committed, and leave no committed file
# unwritten (a stale table of an older summary fails).  Sidecars (*.meta.json:
# times) and figures (PDF, PNG) are checked for presence, not compared.
#
#   bash tools/check_summaries.sh [BUILD_DIR]    (PYTHON: python3 with numpy, scipy,
#                                                 matplotlib; RESULTS: results)
# The studies are those of `python3 -m studies.summary --list`; the raw rows of
# each are the files its report.json names (and their sidecars).
set -uo pipefail
BUILD=${1:-build}
PYTHON=${PYTHON:-python3}
RESULTS=${RESULTS:-results} # the tests point it at an edited copy
export LNKIT=${LNKIT:-$BUILD/bin/lnkit} # the summaries' sidecar writer (lnkit meta)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
# the studies' list: a Python that cannot run the summaries must fail here, not
# check nothing and pass
if ! studies=$("$PYTHON" -m studies.summary --list) || [ -z "$studies" ]; then
    echo "check_summaries: '$PYTHON -m studies.summary --list' failed or listed no study" \
         "(PYTHON: a python3 with numpy, scipy and matplotlib)" >&2
    exit 1
fi
for s in $studies; do
    src=$RESULTS/$s copy=$tmp/$s
    if [ ! -f "$src/report.json" ]; then
        echo "check_summaries: $src/report.json: missing (run python3 -m studies.summary $s)" >&2
        bad=1; continue
    fi
    mkdir -p "$copy"
    "$PYTHON" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["raw"]))' \
        "$src/report.json" > "$tmp/$s.raw"
    while IFS= read -r f; do
        mkdir -p "$copy/$(dirname "$f")"
        cp "$src/$f" "$src/${f%.csv}.meta.json" "$copy/$(dirname "$f")/" || bad=1
    done < "$tmp/$s.raw"
    if ! "$PYTHON" -m studies.summary "$s" "$copy" >"$tmp/$s.log" 2>&1; then
        echo "check_summaries: $s: the summary failed: python3 -m studies.summary $s $src" >&2
        tail -5 "$tmp/$s.log" >&2
        bad=1; continue
    fi
    n=0
    while IFS= read -r -d '' f; do
        rel=${f#"$copy"/}
        if [ ! -e "$src/$rel" ]; then
            echo "check_summaries: $src/$rel: written by the summary but not committed" >&2
            bad=1
        elif case $rel in *.meta.json | *.png | *.pdf) false ;; *) true ;; esac &&
            ! cmp -s "$f" "$src/$rel"; then
            echo "check_summaries: $src/$rel differs from what its summary writes from the committed rows:" >&2
            diff "$src/$rel" "$f" | head -6 >&2
            bad=1
        fi
        n=$((n + 1))
    done < <(find "$copy" -type f -print0)
    while IFS= read -r -d '' f; do
        rel=${f#"$src"/}
        [ -e "$copy/$rel" ] || { echo "check_summaries: $src/$rel: committed, but neither raw rows nor written by the summary (stale?)" >&2; bad=1; }
    done < <(find "$src" -type f -print0)
    echo "check_summaries: $s: $n files checked"
done
exit $bad
