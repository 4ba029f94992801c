#!/usr/bin/env bash
# The MPI tests (make test-mpi): lnkit built with MPI=1 under mpirun with 1, 2
# and 3 ranks against the one-process build, on a seq2seq and an lm model.
#   bash tests/mpi/run.sh SERIAL_BUILD MPI_BUILD      (e.g. build build-mpi)
# Checks: eval, H v, top-5 / bottom eigenvalues, Hutchinson and Hutch++
# traces, SLQ nodes and weights equal the one-process results to 1e-12
# relative (tests/mpi/compare.py); repeated runs with the same rank count are
# bitwise identical; a rank that fails (reported error, exit without
# finalize, SIGKILL) ends the job with a non-zero status, one message naming
# the rank, and no output file or temporary file left behind.  Then the
# sweep test (tests/mpi/test_sweep.sh), the anatomy's commands on a data set
# with blocks (tests/mpi/test_curvature_ops.sh) and the resumable runs
# (tests/mpi/test_checkpoint.sh).  Prints "tests: N passed, N failed,
# N skipped" like tools/runtests.sh.
set -u
SB=${1:-build}; MB=${2:-build-mpi}
S=$(cd "$SB" && pwd)/bin/lnkit
M=$(cd "$MB" && pwd)/bin/lnkit
# the test build's program, for the injected failures (LNK_FAULT; make testing)
MT=$(cd "$MB" && pwd)/testing/bin/lnkit
HERE=$(cd "$(dirname "$0")" && pwd)
CMP="python3 $HERE/compare.py"
# Every job has a time limit: OpenMPI's mpirun has been seen to hang after a
# rank's abort when 3 ranks share 2 cores (all ranks dead, mpirun waiting);
# a failure case that hits the limit is retried once (see fault()).
LIMIT=120
MR=(timeout -k 10 $LIMIT mpirun -q --allow-run-as-root --oversubscribe)
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
. "$HERE/../harness.sh"

# --- data: a seq2seq model (one batch of 12 rows) and an lm model (two batch files)
run "$S" init --task seq2seq --d 16 --h 2 --L 2 --V 40 --seed 3 -o s2s.safetensors || exit 1
run "$S" batch --synthetic --config s2s.json --rows 12 --len 7 --rng-seed 1 -o s2s_b.safetensors || exit 1
run "$S" init --task lm --norm-pos pre --d 16 --h 4 --L 2 --V 48 --seed 5 -o lm.safetensors || exit 1
run "$S" batch --synthetic --config lm.json --rows 9 --len 10 --rng-seed 2 -o lm_b1.safetensors || exit 1
run "$S" batch --synthetic --config lm.json --rows 5 --len 6 --rng-seed 4 -o lm_b2.safetensors || exit 1
C2=(--config s2s.json --weights s2s.safetensors --batch s2s_b.safetensors)
CL=(--config lm.json --weights lm.safetensors --batch lm_b1.safetensors --batch lm_b2.safetensors
    --chunk 3 --block '*.attn.*,*emb')
run "$S" eval "${C2[@]}" --grad-out v.safetensors || exit 1

# --- one-process references
"$S" eval "${C2[@]}" > eval.1.csv
"$S" hvp "${C2[@]}" --vector v.safetensors -o hv.1.safetensors
"$S" eigs "${C2[@]}" -k 5 --which both --tol 1e-10 --quiet -o eigs.1.csv --vectors vec.1.safetensors
"$S" trace "${C2[@]}" --probes 12 --quiet > tr.1.csv
"$S" trace "${C2[@]}" --probes 12 --method hutchpp --quiet > trpp.1.csv
"$S" density "${C2[@]}" --runs 2 --steps 30 --sigma-fraction 0.01 --quiet -o d.1.csv --nodes n.1.csv
"$S" eigs "${CL[@]}" -k 5 --tol 1e-10 --quiet -o eigsl.1.csv
"$S" density "${CL[@]}" --runs 2 --steps 25 --sigma-fraction 0.01 --quiet -o dl.1.csv --nodes nl.1.csv

# --- 1, 2, 3 ranks against them
for p in 1 2 3; do
    R=("${MR[@]}" -np $p "$M")
    "${R[@]}" eval "${C2[@]}" > eval.$p.csv 2>err || cat err
    check "eval, $p rank(s): loss and gradient norms" $CMP csv eval.1.csv eval.$p.csv --cols value
    "${R[@]}" hvp "${C2[@]}" --vector v.safetensors -o hv.$p.safetensors 2>err || cat err
    check "H v, $p rank(s)" $CMP st hv.1.safetensors hv.$p.safetensors
    "${R[@]}" eigs "${C2[@]}" -k 5 --which both --tol 1e-10 --quiet -o eigs.$p.csv \
        --vectors vec.$p.safetensors 2>err || cat err
    check "top-5 and bottom-5 eigenvalues, $p rank(s)" $CMP csv eigs.1.csv eigs.$p.csv \
        --cols which,index,eigenvalue,converged
    check "eigenvectors, $p rank(s) (1e-9: converged vectors)" $CMP st vec.1.safetensors \
        vec.$p.safetensors --rtol 1e-9
    "${R[@]}" trace "${C2[@]}" --probes 12 --quiet > tr.$p.csv 2>err || cat err
    check "Hutchinson trace, $p rank(s)" $CMP csv tr.1.csv tr.$p.csv
    "${R[@]}" trace "${C2[@]}" --probes 12 --method hutchpp --quiet > trpp.$p.csv 2>err || cat err
    check "Hutch++ trace, $p rank(s)" $CMP csv trpp.1.csv trpp.$p.csv
    "${R[@]}" density "${C2[@]}" --runs 2 --steps 30 --sigma-fraction 0.01 --quiet -o d.$p.csv \
        --nodes n.$p.csv 2>err || cat err
    check "SLQ nodes and weights, $p rank(s)" $CMP csv n.1.csv n.$p.csv
    "${R[@]}" eigs "${CL[@]}" -k 5 --tol 1e-10 --quiet -o eigsl.$p.csv 2>err || cat err
    check "lm block Hessian over 2 files in chunks, top-5, $p rank(s)" $CMP csv eigsl.1.csv \
        eigsl.$p.csv --cols which,index,eigenvalue,converged
    "${R[@]}" density "${CL[@]}" --runs 2 --steps 25 --sigma-fraction 0.01 --quiet -o dl.$p.csv \
        --nodes nl.$p.csv 2>err || cat err
    check "lm block SLQ nodes, $p rank(s)" $CMP csv nl.1.csv nl.$p.csv
done

# --- the same rank count twice: bitwise
for p in 2 3; do
    R=("${MR[@]}" -np $p "$M")
    "${R[@]}" eigs "${C2[@]}" -k 5 --which both --tol 1e-10 --quiet -o eigs.r$p.csv 2>/dev/null
    "${R[@]}" hvp "${C2[@]}" --vector v.safetensors -o hv.r$p.safetensors 2>/dev/null
    "${R[@]}" density "${C2[@]}" --runs 2 --steps 30 --sigma-fraction 0.01 --quiet -o d.r$p.csv \
        --nodes n.r$p.csv 2>/dev/null
    "${R[@]}" trace "${C2[@]}" --probes 12 --quiet > tr.r$p.csv 2>/dev/null
    if cmp -s eigs.$p.csv eigs.r$p.csv && cmp -s hv.$p.safetensors hv.r$p.safetensors &&
        cmp -s n.$p.csv n.r$p.csv && cmp -s d.$p.csv d.r$p.csv && cmp -s tr.$p.csv tr.r$p.csv; then
        ok "$p ranks, run twice: eigs, H v, SLQ nodes, density, trace bitwise identical"
    else
        bad "$p ranks, run twice: outputs differ"
    fi
done

# --- the MPI build without mpirun (a one-process job)
"$M" eigs "${C2[@]}" -k 5 --which both --tol 1e-10 --quiet -o eigs.single.csv 2>err || cat err
check "MPI build run without mpirun" $CMP csv eigs.1.csv eigs.single.csv --cols eigenvalue

# --- curvature operators (--operator ggn|functional) and lnkit blocks, 2 and 3 ranks
CB=(--config lm.json --weights lm.safetensors --batch lm_b1.safetensors --batch lm_b2.safetensors
    --chunk 3)
BK=(--block 'dec.0.attn.w*' --group '*.ffn.*' --operator ggn --probes 10 --max-steps 80 --tol 1e-10
    --runs 2 --steps 12 --quiet)
"$S" hvp "${C2[@]}" --vector v.safetensors --operator ggn -o gv.1.safetensors
"$S" eigs "${CL[@]}" --operator ggn -k 3 --tol 1e-10 --quiet -o eigsg.1.csv
"$S" eigs "${C2[@]}" --operator functional -k 3 --which both --tol 1e-10 --quiet -o eigsf.1.csv
"$S" blocks "${CB[@]}" "${BK[@]}" -o blk.1.csv --pairs pairs.1.csv
for p in 2 3; do
    R=("${MR[@]}" -np $p "$M")
    "${R[@]}" hvp "${C2[@]}" --vector v.safetensors --operator ggn -o gv.$p.safetensors 2>err || cat err
    check "G v, $p ranks" $CMP st gv.1.safetensors gv.$p.safetensors
    "${R[@]}" eigs "${CL[@]}" --operator ggn -k 3 --tol 1e-10 --quiet -o eigsg.$p.csv 2>err || cat err
    check "lm block G over 2 files in chunks, top-3, $p ranks" $CMP csv eigsg.1.csv eigsg.$p.csv \
        --cols which,index,eigenvalue,converged
    "${R[@]}" eigs "${C2[@]}" --operator functional -k 3 --which both --tol 1e-10 --quiet \
        -o eigsf.$p.csv 2>err || cat err
    check "seq2seq F, top-3 and bottom-3, $p ranks" $CMP csv eigsf.1.csv eigsf.$p.csv \
        --cols which,index,eigenvalue,converged
    "${R[@]}" blocks "${CB[@]}" "${BK[@]}" -o blk.$p.csv --pairs pairs.$p.csv 2>err || cat err
    check "blocks of G: Frobenius norms, top eigenvalues, SLQ ranges, $p ranks" $CMP csv \
        blk.1.csv blk.$p.csv --cols block,type,n,frob,frob2,frob_se,top,node_max
    # G is singular: its bottom eigenvalues and nodes are ~1e-8 of its top ones, so their own
    # column scale is tiny; 1e-9 of it is ~1e-17 of the operator's
    check "blocks of G: bottom eigenvalues (~0), $p ranks (1e-9 of their scale)" $CMP csv \
        blk.1.csv blk.$p.csv --cols bottom,node_min --rtol 1e-9
    check "blocks of G: Jensen-Shannon distances, $p ranks (1e-10)" $CMP csv pairs.1.csv \
        pairs.$p.csv --rtol 1e-10
done

# --- faults: non-zero exit, one message naming the rank, nothing left behind
fault() { # NAME SPEC EXPECT_REGEX [noq: mpirun without -q]
    local name=$1 spec=$2 re=$3 mr=("${MR[@]}") rc try t0
    [ "${4:-}" = noq ] && mr=(timeout -k 10 $LIMIT mpirun --allow-run-as-root --oversubscribe)
    for try in 1 2; do
        rm -rf fdir && mkdir fdir
        t0=$SECONDS
        LNK_FAULT=$spec "${mr[@]}" -np 3 "$MT" eigs "${C2[@]}" -k 3 --quiet -o fdir/e.csv \
            >fdir.out 2>fdir.err
        rc=$?
        [ $((SECONDS - t0)) -lt $LIMIT ] && break
        echo "# $name: mpirun hung past ${LIMIT} s (OpenMPI), retrying once"
    done
    local left; left=$(ls -A fdir)
    local lines; lines=$(grep -c . fdir.err)
    if [ $rc -ne 0 ] && [ -z "$left" ] && grep -Eq "$re" fdir.err; then
        ok "$name: exit $rc, '$(grep -E "$re" fdir.err | head -1)', no file left"
    else
        bad "$name: exit $rc, files left: '$left', stderr ($lines lines): $(cat fdir.err)"
    fi
}
fault "rank 1 runs out of memory in its 3rd H v" 1:hvp:error:3 '^lnkit eigs: rank 1: out of memory'
fault "rank 2 cannot load its shard" 2:load:error '^lnkit eigs: rank 2: cannot load its shard'
fault "rank 0 fails in its 2nd H v" 0:hvp:error:2 '^lnkit eigs: rank 0: out of memory'
fault "rank 1 exits without finalize" 1:hvp:exit:2 'rank 1'
# without -q mpirun itself names the dead rank and the signal
fault "rank 1 is killed (SIGKILL)" 1:hvp:kill:4 'process rank 1 .*signal 9' noq
LNK_FAULT=1:hvp:error:3 "${MR[@]}" -np 3 "$MT" eigs "${C2[@]}" -k 3 --quiet -o e.csv 2>f.err
n=$(grep -c . f.err)
[ "$n" -eq 1 ] && ok "a reported failure prints exactly one line" || bad "a reported failure printed $n lines: $(cat f.err)"
# a bad file that every rank reads: the one-process message, once
"${MR[@]}" -np 2 "$M" eigs --config s2s.json --weights nosuch.safetensors --batch s2s_b.safetensors \
    -k 3 -o e.csv 2>f.err; rc=$?
if [ $rc -ne 0 ] && [ "$(grep -c . f.err)" -eq 1 ] && grep -q 'nosuch.safetensors' f.err && [ ! -e e.csv ]; then
    ok "missing weights file: exit $rc, one line: $(cat f.err)"
else
    bad "missing weights file: exit $rc, stderr: $(cat f.err)"
fi

# a FIFO as an input: every rank reads its inputs, and a FIFO has one reader (inputs are read
# once: issue 30): refused at once, one line, no rank waiting for a writer
for opt in --config --weights; do
    rm -f in.fifo && mkfifo in.fifo
    case $opt in --config) src=s2s.json; args=(--config in.fifo --weights s2s.safetensors) ;;
                 *) src=s2s.safetensors; args=(--config s2s.json --weights in.fifo) ;; esac
    (timeout 60 sh -c "cat $src > in.fifo" 2>/dev/null &)
    "${MR[@]}" -np 2 "$M" eigs "${args[@]}" --batch s2s_b.safetensors -k 3 -o e.csv 2>f.err; rc=$?
    if [ $rc -eq 2 ] && [ "$(grep -c . f.err)" -eq 1 ] && grep -q 'in.fifo: is a FIFO or pipe; under mpirun' f.err &&
        [ ! -e e.csv ]; then
        ok "$opt as a FIFO on 2 ranks: exit 2, one line: $(cat f.err)"
    else
        bad "$opt as a FIFO on 2 ranks: exit $rc, stderr: $(cat f.err)"
    fi
    timeout 5 cat in.fifo > /dev/null 2>&1 # lets the writer go
done

# a bad flag: every rank meets it while setting up; one line, a clean exit 2 (no abort)
"${MR[@]}" -np 3 "$M" eigs "${C2[@]}" -k 3 --bogus -o e.csv 2>f.err; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c . f.err)" -eq 1 ] && grep -q "unknown option '--bogus'" f.err &&
    [ ! -e e.csv ]; then
    ok "bad flag on 3 ranks: exit 2, one line: $(cat f.err)"
else
    bad "bad flag on 3 ranks: exit $rc, stderr: $(cat f.err)"
fi
# --help is printed once, by rank 0
n=$("${MR[@]}" -np 3 "$M" eigs --help 2>/dev/null | grep -c '^usage:')
[ "$n" = 1 ] && ok "--help on 3 ranks printed once" || bad "--help on 3 ranks printed $n times"

# --- sweeps (studies over ranks)
if [ -f "$HERE/test_sweep.sh" ]; then
    out=$(bash "$HERE/test_sweep.sh" "$(cd "$OLDPWD" 2>/dev/null; cd "$(dirname "$S")/.." && pwd)" \
          "$(cd "$(dirname "$M")/.." && pwd)" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|not ok)' 
    p=$(printf '%s\n' "$out" | sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/p' | tail -1)
    if [ -n "$p" ]; then
        set -- $p; pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + $3))
    fi
    [ $rc -ne 0 ] && [ -z "$p" ] && { bad "test_sweep.sh exited $rc: $out"; }
fi

# --- the anatomy's commands on a Multi30k data set and an lm model, with blocks
# (eigs --operator hessian|ggn|functional --mass, blocks), 2 ranks
if [ -f "$HERE/test_curvature_ops.sh" ]; then
    out=$(bash "$HERE/test_curvature_ops.sh" "$(cd "$(dirname "$S")/.." && pwd)" \
          "$(cd "$(dirname "$M")/.." && pwd)" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|not ok)'
    p=$(printf '%s\n' "$out" | sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/p' | tail -1)
    if [ -n "$p" ]; then
        set -- $p; pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + $3))
    fi
    [ $rc -ne 0 ] && [ -z "$p" ] && { bad "test_curvature_ops.sh exited $rc: $out"; }
fi

# --- resumable runs (checkpoints) under MPI
if [ -f "$HERE/test_checkpoint.sh" ]; then
    out=$(bash "$HERE/test_checkpoint.sh" "$(cd "$(dirname "$M")/.." && pwd)" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|not ok)'
    p=$(printf '%s\n' "$out" | sed -n 's/^tests: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/p' | tail -1)
    if [ -n "$p" ]; then
        set -- $p; pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + $3))
    fi
    [ $rc -ne 0 ] && [ -z "$p" ] && { bad "test_checkpoint.sh exited $rc: $out"; }
fi

echo
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
