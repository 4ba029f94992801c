#!/usr/bin/env bash
# make study-hessian: Post-LN vs Pre-LN Hessian spectra at initialisation
# (studies/hessian_spectrum, default configuration) -> results/hessian/, then
# the density plot with gnuplot.  Extra arguments go to the study program.
set -euo pipefail
BUILD=${1:-build}
shift || true
out=results/hessian
start=$(date +%s)
"$BUILD/studies/hessian_spectrum" --out "$out" "$@"
(cd "$out" && gnuplot density.gp)
echo "study-hessian: done in $(( $(date +%s) - start )) s -> $out/ (summary.md, density.png)"
