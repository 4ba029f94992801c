#!/usr/bin/env bash
# Sweeps over the ranks of an MPI job (issue 7, item 4; run by tests/mpi/run.sh):
#   bash tests/mpi/test_sweep.sh SERIAL_BUILD MPI_BUILD      (e.g. build build-mpi)
# Small runs of the studies grad_norms (depth and profile sweeps, and a resumed
# sweep), demo_postpre, hessian_spectrum and multi30k_hessian (on a made-up
# 12-pair corpus), each by the one-process build, by the MPI build without
# mpirun, and under mpirun with 2 and 3 ranks.  Every CSV must equal the
# one-process one byte for byte in every column except the wall-clock timings
# (the columns named in TIMING), the same files must be written (no
# temporary file left), and the summaries must agree (timing lines aside).
# Then: a rank that fails where it hands its points over (LNK_FAULT
# R:sweep:error|exit) ends the job with a non-zero status, a message naming the
# rank and no file left behind; a bad flag prints one line; and the comparison
# itself catches a changed value.  Every run has a time limit (a deadlock
# fails the test instead of hanging it).
#
# The failure cases run with 2 ranks: with 3 ranks on 2 cores, OpenMPI 4.1's
# mpirun sometimes never returns after MPI_Abort (all ranks dead, seen in a
# third of the runs of a 10-line MPI program; not with 2 ranks, nor with
# --mca btl self,tcp); a run that times out is tried once more and reported.  Prints "ok - ..." / "not ok - ..." and
# "tests: N passed, N failed, N skipped"; exit status 1 if any failed.
#
# OpenBLAS's multi-threaded kernels sum in an order that depends on the thread
# count, and mpirun binds each rank to a core (one thread) when there are
# enough cores, so every run here uses one BLAS thread: the results are then
# those of the same arithmetic, whatever the rank count.
set -u
SB=$(cd "${1:-build}" && pwd) || exit 1
MB=$(cd "${2:-build-mpi}" && pwd) || exit 1
TIMING="seconds" # wall-clock columns, compared by name: differ between any two runs
MR=(mpirun -q --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS -x LNK_FAULT)
export OPENBLAS_NUM_THREADS=1 LNK_FAULT=
. "$(cd "$(dirname "$0")" && pwd)/../harness.sh"
# limit COMMAND...: at most 120 s (exit status 137 beyond)
limit() { timeout -s KILL 120 "$@"; }

# csvsame A B: same header and rows, every field equal except the TIMING columns
cat > csvsame.py <<'EOF'
import csv, sys
a, b, ign = sys.argv[1], sys.argv[2], set(sys.argv[3].split(","))
def rows(p):
    with open(p, newline="") as f:
        return list(csv.reader(f))
A, B = rows(a), rows(b)
if not A or not B or A[0] != B[0]:
    sys.exit(f"{b}: header differs from {a}")
keep = [j for j, h in enumerate(A[0]) if h not in ign]
if len(A) != len(B):
    sys.exit(f"{b}: {len(B) - 1} rows, {a}: {len(A) - 1}")
for i, (x, y) in enumerate(zip(A, B)):
    if len(x) != len(y) or any(x[j] != y[j] for j in keep):
        sys.exit(f"{b}: row {i} differs: '{','.join(x)}' vs '{','.join(y)}'")
EOF
csvsame() { python3 csvsame.py "$1" "$2" "$TIMING"; }

# same_dir REF DIR: the same files; CSVs by csvsame, *.md without timing lines,
# other files (gnuplot scripts) byte for byte; prints the number of CSVs or the problem
same_dir() {
    local ref=$1 dir=$2 f n=0 why
    if ! diff <(cd "$ref" && find . -type f | sort) <(cd "$dir" && find . -type f | sort) >diff.out; then
        echo "files differ: $(tr '\n' ' ' <diff.out)"; return 1
    fi
    for f in $(cd "$ref" && find . -type f ! -name '*.meta.json' | sort); do
        case $f in
        *.csv) why=$(csvsame "$ref/$f" "$dir/$f" 2>&1) || { echo "$why"; return 1; }; n=$((n + 1)) ;;
        *.md) diff <(grep -Ev 'Wall time|s of job time' "$ref/$f") \
                   <(grep -Ev 'Wall time|s of job time' "$dir/$f") >/dev/null ||
                  { echo "$f differs"; return 1; } ;;
        *) cmp -s "$ref/$f" "$dir/$f" || { echo "$f differs"; return 1; } ;;
        esac
    done
    echo "$n CSVs"
}

# a made-up parallel corpus for multi30k_hessian
for i in $(seq 1 12); do
    echo "ein hund $i sieht die katze und $((i % 5)) kinder laufen"
done >src.txt
for i in $(seq 1 12); do
    echo "a dog $i sees the cat and $((i % 5)) children run"
done >tgt.txt

GN=(--batches 2 --rows 2 --len 6 --V 40)
# run_all LABEL PROGRAM ARGS...: the four runs (s: one-process build, p1: MPI build
# without mpirun, p2, p3: 2 and 3 ranks), OUT in ARGS replaced by LABEL.RUN, compared
run_all() {
    local label=$1 prog=$2; shift 2
    local a args r rc
    for r in s p1 p2 p3; do
        args=()
        for a in "$@"; do args+=("${a//OUT/$label.$r}"); done
        mkdir -p "$label.$r"
        case $r in
        s) limit "$SB/studies/$prog" "${args[@]}" >"$label.$r.log" 2>&1 ;;
        p1) limit "$MB/studies/$prog" "${args[@]}" >"$label.$r.log" 2>&1 ;;
        p2) limit "${MR[@]}" -np 2 "$MB/studies/$prog" "${args[@]}" >"$label.$r.log" 2>&1 ;;
        p3) limit "${MR[@]}" -np 3 "$MB/studies/$prog" "${args[@]}" >"$label.$r.log" 2>&1 ;;
        esac
        rc=$?
        [ $rc -eq 0 ] || { bad "$label ($r): exit $rc: $(tail -3 "$label.$r.log")"; return 1; }
    done
    local what why
    for r in p1 p2 p3; do
        case $r in p1) what="MPI build without mpirun" ;; p2) what="2 ranks" ;; p3) what="3 ranks" ;; esac
        if why=$(same_dir "$label.s" "$label.$r"); then
            ok "$label, $what: the one-process outputs ($why)"
        else
            bad "$label, $what: $why"
        fi
    done
}

run_all grad_norms-depth grad_norms depth --out OUT/depth.csv --Ls 1,2,3 --d 16 --seeds 3 "${GN[@]}"
run_all grad_norms-profile grad_norms profile --out OUT/profile.csv --task cls,seq2seq --d 16 --L 2 \
    --seeds 2 "${GN[@]}"
# resume: the depth sweep extended (more seeds, one more depth, a depth given twice)
for r in s p1 p2 p3; do mkdir -p grad_norms-resume.$r && cp grad_norms-depth.s/* grad_norms-resume.$r/; done
run_all grad_norms-resume grad_norms depth --out OUT/depth.csv --Ls 1,2,2,4 --d 16 --seeds 5 \
    --save-every 0 "${GN[@]}"
run_all demo_postpre demo_postpre --out OUT --seeds 3 --d 16 --L 2 --rows 2 --len 6 --V 40
run_all hessian_spectrum hessian_spectrum --out OUT --d 8 --h 2 --L 1 --V 20 --rows 2 --len 5 \
    --seeds 2 --k 2 --probes 4 --runs 2 --steps 6 --block-steps 4
run_all multi30k_hessian multi30k_hessian --out OUT --src src.txt --tgt tgt.txt --d 8 --h 2 \
    --d-ff 16 --L 1 --seeds 2 --k 2 --max-steps 8 --probes 4 --runs 2 --steps 6 --block-steps 4 \
    --depths 1,2 --grad-seeds 2 --jobs 1

# --- a failing rank: non-zero exit, the rank named, nothing left in the output directory
fault() { # NAME NP SPEC REGEX PROGRAM ARGS... (output directory fdir)
    local name=$1 np=$2 spec=$3 re=$4 prog=$5; shift 5
    local try rc left note=
    for try in 1 2; do
        rm -rf fdir && mkdir fdir
        LNK_FAULT=$spec timeout -s KILL 30 "${MR[@]}" -np "$np" "$MB/testing/studies/$prog" "$@" \
            >f.out 2>f.err
        rc=$?
        [ $rc -eq 137 ] || break
        note=" (mpirun hung after the abort once, tried again)"
    done
    left=$(ls -A fdir)
    if [ $rc -ne 0 ] && [ $rc -ne 137 ] && [ -z "$left" ] && grep -Eq "$re" f.err; then
        ok "$name: exit $rc, '$(grep -E "$re" f.err | head -1)', no file left$note"
    else
        bad "$name: exit $rc, files left: '$left', stderr: $(cat f.err)"
    fi
}
fault "demo_postpre, rank 1 of 2 fails" 2 1:sweep:error '^demo_postpre: rank 1: ' \
    demo_postpre --out fdir --seeds 3 --d 16 --L 2 --rows 2 --len 6 --V 40
fault "demo_postpre, rank 1 of 2 exits without finalize" 2 1:sweep:exit 'rank 1' \
    demo_postpre --out fdir --seeds 3 --d 16 --L 2 --rows 2 --len 6 --V 40
fault "hessian_spectrum, rank 1 of 2 fails (rank 0 has 4 files open)" 2 1:sweep:error \
    '^hessian_spectrum: rank 1: ' hessian_spectrum --out fdir --d 8 --h 2 --L 1 --V 20 \
    --rows 2 --len 5 --seeds 2 --k 2 --probes 4 --runs 2 --steps 6 --block-steps 4
fault "grad_norms, rank 1 of 2 fails" 2 1:sweep:error '^grad_norms: rank 1: ' \
    grad_norms depth --out fdir/depth.csv --Ls 1,2 --d 16 --seeds 2 "${GN[@]}"

# --- a bad flag, seen by every rank: the one-process message, once, exit 2, no directory
limit "${MR[@]}" -np 2 "$MB/studies/demo_postpre" --out baddir --seeds x >f.out 2>f.err; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c . f.err)" -eq 1 ] && grep -q "^demo_postpre: --seeds" f.err &&
    [ ! -e baddir ]; then
    ok "bad flag under mpirun: exit 2, one line: $(cat f.err)"
else
    bad "bad flag under mpirun: exit $rc, stderr: $(cat f.err)"
fi

# --- the comparison can fail: one value changed in a copy
if [ -f demo_postpre.s/postpre_loss.csv ]; then
    rm -rf perturbed && cp -r demo_postpre.s perturbed
    sed -i '3s/\./.9/' perturbed/postpre_loss.csv
    if cmp -s demo_postpre.s/postpre_loss.csv perturbed/postpre_loss.csv; then
        bad "the comparison: could not perturb the file"
    elif why=$(same_dir demo_postpre.s perturbed); then
        bad "the comparison misses a changed value ($why)"
    else
        ok "the comparison catches a changed value ($(echo "$why" | head -1))"
    fi
fi

echo
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
