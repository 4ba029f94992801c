#!/usr/bin/env bash
# make study-hessian: Post-LN vs Pre-LN Hessian spectra at initialisation
# (studies/hessian_spectrum, default configuration) -> results/hessian/, then
# its summary (python3 -m studies.summary hessian).  Extra arguments go to the
# study program.
set -euo pipefail
BUILD=${1:-build}
shift || true
out=results/hessian
start=$(date +%s)
"$BUILD/studies/hessian_spectrum" --out "$out" "$@"
"${PYTHON:-python3}" -m studies.summary hessian "$out"
echo "study-hessian: done in $(( $(date +%s) - start )) s -> $out/ (summary.md, density.pdf)"
