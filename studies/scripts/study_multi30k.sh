#!/usr/bin/env bash
# make study-multi30k: Post-LN vs Pre-LN encoder-decoder Hessians and Figure 3
# gradient norms at initialisation on Multi30k (studies/multi30k_hessian,
# default = the reduced configuration that fits ~15 minutes on 2 cores:
# seq2seq 6-6, d = 32, h = 4, d_ff = 64, the first 200 validation pairs,
# 3 seeds) -> results/multi30k/, then its summary (python3 -m studies.summary).
#
#   bash studies/scripts/study_multi30k.sh [BUILD_DIR] [study options...]
#
# The data folder is data/multi30k (shipped in the repository) or
# $LNK_DATA/multi30k when LNK_DATA is set; --src/--tgt among the options
# override it.  MULTI30K_OUT overrides the output directory.  Extra options go
# to the study program (e.g. --rows 0 --d 64 --d-ff 128 for a larger run;
# see build/studies/multi30k_hessian --help).
set -euo pipefail
BUILD=${1:-build}
shift || true
P=$BUILD/studies/multi30k_hessian
OUT=${MULTI30K_OUT:-results/multi30k}
DATA=${LNK_DATA:+$LNK_DATA/multi30k}
DATA=${DATA:-data/multi30k}
[ -x "$P" ] || { echo "study_multi30k: $P not built (run make all)" >&2; exit 2; }
data_args=()
case " $* " in
*" --src"*) ;;
*)
    for f in "$DATA/val.de" "$DATA/val.en"; do
        [ -r "$f" ] || { echo "study_multi30k: $f not found (set LNK_DATA or pass --src/--tgt)" >&2; exit 2; }
    done
    data_args=(--src "$DATA/val.de" --tgt "$DATA/val.en")
    ;;
esac
start=$(date +%s)
"$P" --out "$OUT" "${data_args[@]}" "$@"
"${PYTHON:-python3}" -m studies.summary "$(basename "$OUT")" "$OUT"
echo "study-multi30k: done in $(( $(date +%s) - start )) s -> $OUT/ (summary.md, density.pdf, grad.pdf)"
