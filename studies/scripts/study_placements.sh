#!/usr/bin/env bash
# The placement study (issue 34): every normalisation placement's curvature
# and gradients at initialisation.  This runner lists the points of the
# stages asked for, skips those whose CSV and sidecar both exist (the driver
# writes them whole, or not at all), and runs the rest with the driver
# (studies/placements.c), JOBS at a time, each under nice with one BLAS
# thread.  Run it again after a kill or a restart: finished points are
# skipped, and a Multi30k run (stage m30k) continues from its checkpoint.
# In the background in a session of its own (setsid), nice alone does not
# make it yield: with the kernel's autogroup (/proc/sys/kernel/
# sched_autogroup_enabled = 1) sessions share the CPUs equally, whatever
# their processes' nice; `echo 19 > /proc/PID/autogroup` (PID the runner's)
# lowers its session's share.
#
#   bash studies/scripts/study_placements.sh [options] STAGE...
#     --bin PATH    the driver (build/studies/placements; the long runs use a
#                   frozen build of a clean commit outside the checkout)
#     --out DIR     results (results/placements)
#     --work DIR    checkpoints (out/placements-work, git-ignored)
#     --log FILE    progress, one line a point, and the driver's messages
#                   (out/placements.log)
#     --jobs N      points at a time (2)
#     --seeds N     seeds 0..N-1 (3)
#     --list        print the points still to do (part, file, arguments), run nothing
#     --first RE    run the points whose file matches the extended regular
#                   expression RE first (e.g. 'anatomy/.*_L6_d64_' for one
#                   setting's seeds before the rest), the others after, each
#                   group in the stages' order
#   STAGE: core      parts extremes, anatomy, grad on the core grid: the six
#                    placements, LayerNorm, ReLU, lm; L = 1 2 4 6 8 12 16 24 at
#                    d = 64 and d = 32 64 128 256 at L = 6
#          m30k      the Multi30k 6-6 encoder-decoder on all 1014 pairs, d = 64,
#                    h = 1 (as results/multi30k_full): extremes of H, G, F
#          coupling  part coupling at L = 6, d = 64
#          scale     part scale at L = 1 and 6, d = 64, input_scale 1/4 .. 4, and
#                    at L = 1 without norms
#          variations  parts extremes, anatomy, grad at L = 6 and 12, d = 64, one
#                    factor at a time: RMSNorm, SwiGLU, rope, bias-free
#          all       the five in that order
# Files: DIR/PART/TAG.csv with TAG.meta.json, TAG = NORMPOS_NORM_ACT_POS_bBIAS_
# L<L>_d<d>_s<seed> (+ _x<input_scale> for scale); m30k: DIR/m30k/NORMPOS_s<seed>_
# <operator>.csv.  Summaries: python3 -m studies.summary placements DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/studies/placements OUT=results/placements WORK=out/placements-work
LOG=out/placements.log JOBS=2 SEEDS=3 LIST=0 FIRST= STAGES=()
die() { echo "study-placements: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift ;; --out) OUT=$2; shift ;; --work) WORK=$2; shift ;;
    --log) LOG=$2; shift ;; --jobs) JOBS=$2; shift ;; --seeds) SEEDS=$2; shift ;;
    --list) LIST=1 ;;
    --first) FIRST=$2; shift ;;
    core|m30k|coupling|scale|variations) STAGES+=("$1") ;;
    all) STAGES+=(core m30k coupling scale variations) ;;
    *) die "unknown option or stage '$1' (see the header of $0)" ;;
    esac
    shift
done
[ ${#STAGES[@]} -gt 0 ] || die "name a stage: core m30k coupling scale variations all"
[ -x "$BIN" ] || die "$BIN is not an executable (make all, or --bin)"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs: expected a positive integer, got '$JOBS'"
[[ $SEEDS =~ ^[1-9][0-9]*$ ]] || die "--seeds: expected a positive integer, got '$SEEDS'"
[ -z "$FIRST" ] || awk -v re="$FIRST" 'BEGIN { exit !("" ~ re || 1) }' 2> /dev/null ||
    die "--first: '$FIRST' is not an extended regular expression"
PLACEMENTS="post pre peri out deepnorm mix"
mkdir -p "$OUT" "$WORK" "$(dirname "$LOG")"

# One point a line: PART FILE ARGS...
point() { # PART NORMPOS NORM ACT POS BIAS L D SEED [SCALE]
    local part=$1 np=$2 nm=$3 act=$4 pos=$5 bias=$6 L=$7 d=$8 s=$9 x=${10:-}
    local tag=${np}_${nm}_${act}_${pos}_b${bias}_L${L}_d${d}_s${s}${x:+_x$x}
    local b=true; [ "$bias" = 0 ] && b=false
    echo "$part $OUT/$part/$tag.csv --norm-pos $np --norm $nm --activation $act --pos $pos" \
         "--bias $b --L $L --d $d --seed $s${x:+ --input-scale $x}"
}
grid() { # PARTS (comma-separated) VARIATION (NORM ACT POS BIAS) CONFIGS (L:d ...)
    local parts=$1 nm=$2 act=$3 pos=$4 bias=$5; shift 5
    for s in $(seq 0 $((SEEDS - 1))); do
        for c in "$@"; do
            for np in $PLACEMENTS; do
                for part in ${parts//,/ }; do point "$part" "$np" "$nm" "$act" "$pos" "$bias" \
                    "${c%:*}" "${c#*:}" "$s"; done
            done
        done
    done
}
CORE=(1:64 2:64 4:64 6:64 8:64 12:64 16:64 24:64 6:32 6:128 6:256)
SCALES="0.25 0.5 1 2 4"
points() {
    case $1 in
    core) # the gradients first (seconds), then the extremes, then the anatomy
        for part in grad extremes anatomy; do
            grid $part layernorm relu sinusoidal 1 "${CORE[@]}"
        done ;;
    m30k)
        for s in $(seq 0 $((SEEDS - 1))); do for np in $PLACEMENTS; do
            for op in hessian ggn functional; do
                echo "eigs $OUT/m30k/${np}_s${s}_$op.csv --task seq2seq --norm-pos $np --L 6" \
                     "--d 64 --h 1 --seed $s --operator $op --max-steps 300" \
                     "--checkpoint $WORK/m30k_${np}_s${s}_$op.ckpt"
            done
        done; done ;;
    coupling) grid coupling layernorm relu sinusoidal 1 6:64 ;;
    scale)
        for s in $(seq 0 $((SEEDS - 1))); do for L in 1 6; do for x in $SCALES; do
            for np in $PLACEMENTS; do
                point scale "$np" layernorm relu sinusoidal 1 "$L" 64 "$s" "$x"
            done
        done; done
        for x in $SCALES; do point scale pre none relu sinusoidal 1 1 64 "$s" "$x"; done; done ;;
    variations)
        grid extremes,anatomy,grad rmsnorm relu sinusoidal 1 6:64 12:64
        grid extremes,anatomy,grad layernorm swiglu sinusoidal 1 6:64 12:64
        grid extremes,anatomy,grad layernorm relu rope 1 6:64 12:64
        grid extremes,anatomy,grad layernorm relu sinusoidal 0 6:64 12:64 ;;
    esac
}

todo=$(mktemp)
trap 'rm -f "$todo" "$todo.o"' EXIT
total=0
for st in "${STAGES[@]}"; do
    while read -r part file args; do
        total=$((total + 1))
        meta=${file%.csv}.meta.json
        [ -f "$file" ] && [ -f "$meta" ] && continue
        echo "$part $file $args" >> "$todo"
    done < <(points "$st")
done
if [ -n "$FIRST" ]; then
    { awk -v re="$FIRST" '$2 ~ re' "$todo"; awk -v re="$FIRST" '$2 !~ re' "$todo"; } > "$todo.o"
    mv "$todo.o" "$todo"
fi
n=$(wc -l < "$todo")
if [ "$LIST" = 1 ]; then
    cat "$todo"
    echo "study-placements: $n of $total points to do" >&2
    exit 0
fi
echo "$(date -u +%FT%TZ) study-placements: ${STAGES[*]}: $n of $total points to do," \
     "$JOBS at a time, driver $BIN" >> "$LOG"
# the points finished are the lines after this one; the time left is the
# rate so far (points of very different costs: an estimate)
LOG_FROM=$(stat -c %s "$LOG") START=$(date +%s.%N) N=$n

# One point: the driver's messages and a line with its time, the points done
# and the time left go to the log.
run_one() {
    local part=$1 file=$2; shift 2
    mkdir -p "$(dirname "$file")"
    rm -f "$file".tmp.* # a killed run's unfinished output (the driver writes FILE.tmp.XXXXXX)
    local t0 rc=0
    t0=$(date +%s.%N)
    OPENBLAS_NUM_THREADS=1 nice -n 10 "$BIN" --part "$part" --out "$file" "$@" \
        2>> "$LOG.err" || rc=$?
    local done
    { # one point at a time counts the lines and writes its own
        flock 9
        done=$(($(tail -c +$((LOG_FROM + 1)) "$LOG" | grep -c ' rc=') + 1))
        echo "$(date -u +%FT%TZ) $part $file $(awk -v a="$t0" -v b="$(date +%s.%N)" \
            -v s="$START" -v d="$done" -v n="$N" -v rc="$rc" 'BEGIN { l = (b - s) / d * (n - d)
            h = l < 7200 ? sprintf("%.0f min", l / 60) : sprintf("%.1f h", l / 3600)
            u = l < 120 ? sprintf("%.0f s", l) : h
            printf "%.1f s rc=%s (%d/%d, about %s left)", b - a, rc, d, n, u }')" >> "$LOG"
    } 9>> "$LOG"
    return 0
}
export -f run_one
export BIN LOG LOG_FROM START N
xargs -r -a "$todo" -P "$JOBS" -L 1 bash -c 'run_one "$@"' run_one
left=0
while read -r part file args; do
    [ -f "$file" ] && [ -f "${file%.csv}.meta.json" ] || left=$((left + 1))
done < "$todo"
echo "$(date -u +%FT%TZ) study-placements: ${STAGES[*]}: done, $left point(s) failed" \
     "(see $LOG.err)" >> "$LOG"
[ "$left" = 0 ] || { echo "study-placements: $left point(s) failed; see $LOG and $LOG.err" >&2
                     exit 1; }
