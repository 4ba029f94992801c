#!/usr/bin/env bash
# lnkit LayerNorm geometry study: `bash studies/scripts/study_geometry.sh BUILD_DIR` (what
# `make study-geometry` runs).  Runs BUILD_DIR/studies/ln_geometry in two processes
# (the random-key heat maps, and the other parts) on the machine's 2 cores, which write
# the raw CSVs (+ .meta.json) of results/geometry/; then its summary
# (python3 -m studies.summary geometry: tables, figures, values.csv, claims.csv;
# runnable alone on the directory).  Options
# for the study can be passed in LNK_GEOMETRY_ARGS (e.g. "--trials 20 --n-step 3" for a
# quick run; the default is the full grid).
set -euo pipefail
build=${1:?usage: bash studies/scripts/study_geometry.sh BUILD_DIR}
bin=$build/studies/ln_geometry
[ -x "$bin" ] || { echo "study_geometry.sh: $bin not found (run make)" >&2; exit 2; }
out=results/geometry
text=${LNK_GEOMETRY_TEXT:-data/multi30k/val.en}
args=${LNK_GEOMETRY_ARGS:-}
mkdir -p "$out"
tmp=$(mktemp -d "$out/.run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

# shellcheck disable=SC2086
"$bin" --out "$out" --text "$text" --parts random $args >"$tmp/random.log" 2>&1 &
p1=$!
# shellcheck disable=SC2086
"$bin" --out "$out" --text "$text" --parts ortho,heads,model,maps,counts $args >"$tmp/rest.log" 2>&1 &
p2=$!
st=0
wait $p1 || st=1
wait $p2 || st=1
cat "$tmp/rest.log" "$tmp/random.log"
[ $st -eq 0 ] || { echo "study_geometry.sh: ln_geometry failed (log above)" >&2; exit 2; }

"${PYTHON:-python3}" -m studies.summary geometry "$out"
echo "study_geometry.sh: wrote $out/ (CSV + .meta.json, tables, figures, values.csv, claims.csv) in $(($(date +%s) - start)) s"
