#!/usr/bin/env bash
# The curvature anatomy at initialisation (issue 17): studies/anatomy computes
# the rows, the lm points and the seq2seq points as two single-threaded
# processes side by side (OUT/lm/ and OUT/seq2seq/), then its summary
# (python3 -m studies.summary anatomy OUT) makes the tables, fits, figures,
# values.csv and claims.csv in OUT from those files.  Extra arguments go to
# both study runs.
#
#   bash studies/scripts/study_anatomy.sh BUILD_DIR [--full] [ARGS...]
#
# --full (make study-anatomy): the ranges, the committed
# results/anatomy/ (hours; start it in the background, see results/README.md's
# anatomy section for the command and the measured cost).  Without it (make
# study-anatomy-quick, about half an hour): reduced sizes into
# out/anatomy-quick/ (git-ignored), so that a quick look does not replace the
# committed files.  OUT overrides the output directory (the test uses a
# temporary one).
# lm: depth L = 1, 2, 4, 8, 12, 16, 24 at d = 32 and width d = 32, 64, 128,
# 256 at L = 4, with the RMSNorm and qk_norm variants at L = 4, d = 32;
# seq2seq on the first ANATOMY_PAIRS (32) Multi30k pairs: the 6-6 model at
# d = ANATOMY_S2S_DS (32,64,128) and the depths ANATOMY_S2S_LS (1,2,4,6) at
# d = 32; ANATOMY_SEEDS (3) seeds.  The points of d = ANATOMY_S2S_BIG (empty:
# none; e.g. 256) are computed with ANATOMY_BIG_SEEDS (1) seeds.  With
# ANATOMY_MPI=DIR (an MPI build, make MPI=1: DIR/studies/anatomy) the seq2seq
# lane's ANATOMY_SEEDS run is on 2 ranks (mpirun; the same rows, byte for
# byte), so that both cores work on it once the lm lane is done; the
# ANATOMY_S2S_BIG points always run in one process (memory, below).  The rows go
# to WORK (ANATOMY_WORK, default BUILD_DIR/anatomy-full-work) with
# `anatomy --resume`: a run that is killed, or a machine that restarts,
# continues where it stopped when the same command is started again (every
# point is checkpointed; a point cut off between its files is computed again).
# When both lanes are done the rows replace results/anatomy/{lm,seq2seq}/, the
# summary is made in OUT and WORK is removed.
set -euo pipefail
BUILD=${1:-build}
shift || true
full=0
if [ "${1:-}" = --full ]; then full=1; shift; fi
if [ $full -eq 1 ]; then out=${OUT:-results/anatomy}; else out=${OUT:-out/anatomy-quick}; fi
PY=$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
start=$(date +%s)
export OPENBLAS_NUM_THREADS=1
A=$BUILD/studies/anatomy
[ -x "$A" ] || { echo "study-anatomy: $A not built (run make all)" >&2; exit 2; }

summarise() { # DIR: the summary of DIR/lm and DIR/seq2seq (tables, figures, claims)
    "${PYTHON:-$PY}" -m studies.summary anatomy "$1"
}

if [ $full -eq 0 ]; then
    mkdir -p "$out"
    "$A" --out "$out/lm" --s2s-L '' --s2s-d '' "$@" &
    p1=$!
    # seq2seq costs ~20x an lm product here (two stacks, cross-attention, 16
    # weight matrices a layer): fewer pairs, seeds, probes and SLQ steps, and the
    # depths 1, 2, 6 at d = 16 (the 6-6 model is the reference point)
    "$A" --out "$out/seq2seq" --lm-L '' --lm-d '' --s2s-L 1,2,6 --s2s-d '' \
        --s2s-L-ref 6 --s2s-d-ref 16 --s2s-rows 6 --seeds 2 --probes 4 --steps 16 --max-steps 200 \
        "$@" &
    p2=$!
    rc=0
    wait $p1 || rc=$?
    wait $p2 || rc=$?
    if [ $rc -ne 0 ]; then echo "study-anatomy: a study run failed ($rc)" >&2; exit $rc; fi
    summarise "$out"
    echo "study-anatomy: done in $(( $(date +%s) - start )) s -> $out/ (summary.md, tables, figures)"
    exit 0
fi

# ---------------------------------------------------------------- --full
WORK=${ANATOMY_WORK:-$BUILD/anatomy-full-work}
SEEDS=${ANATOMY_SEEDS:-3}
PAIRS=${ANATOMY_PAIRS:-32}
LM_LS=${ANATOMY_LM_LS:-1,2,4,8,12,16,24}
LM_DS=${ANATOMY_LM_DS:-32,64,128,256}
S2S_LS=${ANATOMY_S2S_LS:-1,2,4,6}
S2S_DS=${ANATOMY_S2S_DS:-32,64,128}
S2S_BIG=${ANATOMY_S2S_BIG:-}
BIG_SEEDS=${ANATOMY_BIG_SEEDS:-1}
mkdir -p "$WORK/lm" "$WORK/seq2seq"
[ -s "$WORK/lm/js.csv" ] || [ -s "$WORK/seq2seq/js.csv" ] &&
    echo "study-anatomy --full: resuming the run in $WORK"
echo "study-anatomy --full: lm L = $LM_LS, d = $LM_DS; seq2seq on $PAIRS pairs, 6-6 at d = $S2S_DS${S2S_BIG:+ (d = $S2S_BIG: $BIG_SEEDS seed(s))}, L = $S2S_LS at d = 32; $SEEDS seeds; progress in $WORK/*.log"
# the seq2seq settings of every run into WORK/seq2seq (the resume checks them)
S2S=(--lm-L '' --lm-d '' --s2s-L-ref 6 --s2s-d-ref 32 --s2s-rows "$PAIRS" --probes 4 --steps 16
     --max-steps 200)
lane_lm() {
    nice -n 10 "$A" --out "$WORK/lm" --resume --lm-L "$LM_LS" --lm-d "$LM_DS" --lm-L-ref 4 \
        --lm-d-ref 32 --s2s-L '' --s2s-d '' --seeds "$SEEDS" "$@" 2>>"$WORK/lm.log"
}
S2S_RUN=(nice -n 10 "$A")
if [ -n "${ANATOMY_MPI:-}" ]; then
    [ -x "$ANATOMY_MPI/studies/anatomy" ] ||
        { echo "study-anatomy: $ANATOMY_MPI/studies/anatomy not built (make MPI=1)" >&2; exit 2; }
    S2S_RUN=(nice -n 10 mpirun -q --oversubscribe -x OPENBLAS_NUM_THREADS -np 2
             "$ANATOMY_MPI/studies/anatomy")
    [ "$(id -u)" = 0 ] && S2S_RUN=(nice -n 10 mpirun -q --allow-run-as-root --oversubscribe
                                   -x OPENBLAS_NUM_THREADS -np 2 "$ANATOMY_MPI/studies/anatomy")
fi
lane_s2s() {
    # the largest widths first with their fewer seeds, then the rest (the
    # sidecars keep the seeds of the last run: $SEEDS)
    # one process: a point of the 6-6 model at d = 256 holds a Lanczos basis of
    # up to (eig steps + 1) x 11e6 doubles (17.6 GB at 200 steps); two such
    # points side by side would not fit in 24 GiB
    if [ -n "$S2S_BIG" ]; then
        nice -n 10 "$A" --out "$WORK/seq2seq" --resume "${S2S[@]}" --s2s-L '' --s2s-d "$S2S_BIG" \
            --seeds "$BIG_SEEDS" "$@" 2>>"$WORK/seq2seq.log" || return 1
    fi
    "${S2S_RUN[@]}" --out "$WORK/seq2seq" --resume "${S2S[@]}" --s2s-L "$S2S_LS" \
        --s2s-d "$S2S_DS" --seeds "$SEEDS" "$@" 2>>"$WORK/seq2seq.log"
}
lane_lm "$@" &
p1=$!
lane_s2s "$@" &
p2=$!
rc=0
wait $p1 || rc=$?
wait $p2 || rc=$?
if [ $rc -ne 0 ]; then
    echo "study-anatomy --full: a lane failed ($rc; $WORK/*.log); run the same command again to resume" >&2
    exit $rc
fi
mkdir -p "$out"
for part in lm seq2seq; do
    rm -rf "$out/$part"
    cp -r "$WORK/$part" "$out/$part"
done
summarise "$out"
rm -rf "$WORK"
echo "study-anatomy --full: done in $(( $(date +%s) - start )) s -> $out/"
