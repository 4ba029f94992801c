#!/usr/bin/env bash
# Resumable runs under MPI (issue 18; run by tests/mpi/run.sh):
#   bash tests/mpi/test_checkpoint.sh MPI_BUILD
# With 2 ranks: a run killed inside a save (rank 0, LNK_CKPT_FAULT) or at a
# random H v product (rank 1 gets SIGKILL, LNK_FAULT=1:hvp:kill:N; 3 seeds)
# and started again gives the CSV of the uninterrupted 2-rank run byte for
# byte, for eigs --which both (full, partial reorthogonalisation: each rank's
# basis slice in ck.basis.R), Hutch++ and density; the files are gone at the
# end.  Resuming with another rank count is refused: exit 2, one line.
# Prints "ok - ..." / "not ok - ..." and "tests: N passed, N failed, N skipped".
set -u
M=$(cd "${1:-build-mpi}" && pwd)/bin/lnkit
# the test build's program, for the injected failures (LNK_FAULT, LNK_CKPT_FAULT)
MT=$(cd "${1:-build-mpi}" && pwd)/testing/bin/lnkit
LIMIT=120
MR=(timeout -k 10 $LIMIT mpirun -q --allow-run-as-root --oversubscribe)
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
. "$(cd "$(dirname "$0")" && pwd)/../harness.sh"

"$M" init --task seq2seq --d 16 --h 2 --L 2 --V 40 --seed 3 -o s.safetensors >/dev/null 2>&1 &&
"$M" batch --synthetic --config s.json --rows 16 --len 8 --rng-seed 1 -o b.safetensors >/dev/null 2>&1 ||
    { bad "set-up"; echo "tests: $pass passed, $fail failed, 0 skipped"; exit 1; }
C=(--config s.json --weights s.safetensors --batch b.safetensors --chunk 2)
# name | exit status (eigs --tol 0: not converged, 3) | arguments
CASES=(
  "eigs|3|eigs ${C[*]} -k 3 --which both --tol 0 --max-steps 30"
  "hutchpp|0|trace ${C[*]} --probes 18 --method hutchpp"
  "density|0|density ${C[*]} --runs 2 --steps 12 --sigma-fraction 0.01"
)
R2=("${MR[@]}" -np 2 "$M")
R2T=("${MR[@]}" -np 2 "$MT")
for c in "${CASES[@]}"; do
    name=${c%%|*}; c=${c#*|}; want=${c%%|*}; read -r -a A <<< "${c#*|}"
    "${R2[@]}" "${A[@]}" --quiet -o ref.csv > ref.out 2>err
    rc=$?; [ $rc -eq "$want" ] || { bad "$name: reference: exit $rc: $(cat err)"; continue; }
    cp ref.csv "ref_$name.csv"
    for how in rows:2 file:3 hvp:5 hvp:11 hvp:17; do
        rm -f ck ck.* out.*
        if [ "${how%%:*}" = hvp ]; then
            LNK_FAULT=1:hvp:kill:${how#*:} "${R2T[@]}" "${A[@]}" --quiet --checkpoint ck \
                --checkpoint-every 2 -o out.csv > out.out 2>/dev/null
        else
            LNK_CKPT_FAULT=$how "${R2T[@]}" "${A[@]}" --quiet --checkpoint ck \
                --checkpoint-every 2 -o out.csv > out.out 2>/dev/null
        fi
        krc=$?
        slices=$(ls ck.basis.* 2>/dev/null | tr '\n' ' ')
        "${R2[@]}" "${A[@]}" --checkpoint ck --checkpoint-every 2 -o out.csv > out.out 2>err
        rc=$?
        from=$(grep -o 'resumed from [0-9]* products' err | head -1)
        left=$(ls ck* 2>/dev/null | tr '\n' ' ')
        if [ $krc -ne 0 ] && [ $krc -ne 3 ] && [ $rc -eq "$want" ] && cmp -s ref.csv out.csv && cmp -s ref.out out.out &&
            [ -z "$left" ]; then
            ok "$name, 2 ranks, killed ($how; slices: ${slices:-none}), ${from:-started again}: output identical, no file left"
        else
            bad "$name, 2 ranks, killed ($how): exits $krc, $rc, left '$left': $(grep -v '^[a-z]*: \(step\|probe\)' err | head -c 400)"
        fi
    done
done
# another rank count: refused
A0=${CASES[0]#*|}; read -r -a A <<< "${A0#*|}"
rm -f ck ck.* out.*
LNK_CKPT_FAULT=rows:3 "${R2T[@]}" "${A[@]}" --quiet --checkpoint ck -o out.csv >/dev/null 2>&1
for np in 1 3; do
    "${MR[@]}" -np $np "$M" "${A[@]}" --quiet --checkpoint ck -o out.csv > /dev/null 2>err
    rc=$?
    if [ $rc -ne 0 ] && [ "$(grep -c . err)" -eq 1 ] &&
        grep -q "written by 2 MPI rank(s), this run has $np" err && [ ! -e out.csv ]; then
        ok "resumed with $np rank(s) instead of 2: refused, exit $rc: $(cat err)"
    else
        bad "resumed with $np rank(s) instead of 2: exit $rc: $(cat err)"
    fi
done
# one checkpoint, two jobs: rank 0 holds it (a lock on ck.lock) from before
# any input is read to its end (the holder stops itself, SIGSTOP, where it
# takes its shard: LNK_FAULT=0:load:stop of the test build; a FIFO input under
# mpirun is refused); a second job, of 2 ranks or of 1, is refused at once
# naming the holder; once rank 0 is killed (SIGKILL), the next job takes the
# checkpoint and finishes
rm -f ck ck.* out.*
LNK_FAULT=0:load:stop "${R2T[@]}" "${A[@]}" --quiet --checkpoint ck -o out.csv >/dev/null 2>&1 &
job=$!
for i in $(seq 2000); do grep -q pid ck.lock 2>/dev/null && break; sleep 0.01; done
holder=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' ck.lock 2>/dev/null)
for np in 2 1; do
    "${MR[@]}" -np $np "$M" "${A[@]}" --quiet --checkpoint ck -o out2.csv >/dev/null 2>err
    rc=$?
    if [ -n "$holder" ] && [ $rc -eq 2 ] && [ "$(grep -c . err)" -eq 1 ] &&
        grep -q "checkpoint ck is in use by another run (pid $holder on host" err && [ ! -e out2.csv ]; then
        ok "a job of $np rank(s) while a 2-rank job holds the checkpoint: refused: $(cat err)"
    else
        bad "a job of $np rank(s) on a held checkpoint (holder '$holder'): exit $rc: $(cat err)"
    fi
done
[ -n "$holder" ] && kill -9 "$holder"
wait $job 2>/dev/null
"${R2[@]}" "${A[@]}" --quiet --checkpoint ck -o out.csv >/dev/null 2>err
rc=$?; left=$(ls ck* 2>/dev/null | tr '\n' ' ')
if [ $rc -eq 3 ] && cmp -s out.csv ref_eigs.csv && [ -z "$left" ]; then
    ok "after the holder's rank 0 was killed, a 2-rank job took the checkpoint: output identical, no file left"
else
    bad "after the holder was killed: exit $rc, left '$left': $(cat err)"
fi
# every rank's rows file is a path of the run: an output named like one is refused
"${R2[@]}" "${A[@]}" --quiet --checkpoint ck -o ck.basis.1 >/dev/null 2>err
rc=$?
if [ $rc -eq 2 ] && grep -q "rank 1's rows file of --checkpoint" err && [ ! -e ck.basis.1 ]; then
    ok "-o ck.basis.1 with --checkpoint ck on 2 ranks: refused: $(cat err)"
else
    bad "-o ck.basis.1 on 2 ranks: exit $rc: $(cat err)"
fi
echo "tests: $pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
