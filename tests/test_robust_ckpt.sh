#!/usr/bin/env bash
# A checkpoint held by one run, and what fixes its rounding (issue 30, items 1
# and 10), run by tests/test_robust_ckpt.c:
#   bash tests/test_robust_ckpt.sh LNKIT
# - two runs on one --checkpoint (eigs, trace, density): while the first
#   holds it (blocked reading a FIFO --config: it locks before it reads any
#   input; or stopped by SIGSTOP in the middle of its work, a state saved),
#   the second is refused at once: exit 2, one line naming the checkpoint
#   and the holder's pid and host, the holder's files untouched; the holder
#   then killed by SIGKILL, a resume succeeds (its lock never blocks) with
#   the output of an uninterrupted run, byte for byte, and no file left;
# - a state written with another BLAS kernel (LNK_BLAS_KERNEL) or another
#   --threads is refused, naming both values; --resume-anywhere resumes it
#   and the sidecar records what changed.
# Every process is bounded in time (timeout).  Prints "ok - ..." / "not ok - ...".
set -u
L=$1
. "$(cd "$(dirname "$0")" && pwd)/harness.sh"
export OPENBLAS_NUM_THREADS=1
TO=(timeout -k 5 120)
host=$(hostname)

"$L" init --d 64 --h 4 --L 2 --V 100 --seed 3 -o m.safetensors >/dev/null 2>&1 &&
"$L" batch --synthetic --config m.json --rows 16 --len 16 --rng-seed 1 -o b.safetensors >/dev/null 2>&1 ||
    { bad "set-up"; exit 1; }
C=(--weights m.safetensors --batch b.safetensors)

# until COMMAND succeeds, at most 20 s
wait_for() { local i; for i in $(seq 2000); do eval "$1" && return 0; sleep 0.01; done; return 1; }
# SIGKILL the PIDs and wait (at most 20 s) until each has exited: its files
# closed and so its lock released (gone, or a zombie), which a wait on
# timeout's pid does not promise for timeout's child on a loaded machine
# child_of PID: the first child of PID, or PID itself (no procps on a fresh root)
child_of() {
    local s line rest
    for s in /proc/[0-9]*/stat; do
        read -r line < "$s" 2>/dev/null || continue
        rest=${line##*) }
        set -- $rest
        if [ "$2" = "$PPID_WANT" ]; then line=${s#/proc/}; echo "${line%/stat}"; return; fi
    done
    echo "$PPID_WANT"
}
kill_gone() {
    local p
    kill -9 "$@" 2>/dev/null
    for p in "$@"; do
        wait_for "[ ! -e /proc/$p ] || grep -q '^State:.*Z' /proc/$p/status 2>/dev/null"
    done
}
# the holder's files, to be compared after a refused run
snap() { for f in ck ck.basis ck.lock; do [ -e $f ] && sha256sum $f; done 2>/dev/null; }

# name | exit status of a whole run | arguments
CASES=(
  "eigs|3|eigs -k 3 --which both --tol 0 --max-steps 60"
  "trace|0|trace --probes 60 --method hutchpp"
  "density|0|density --runs 3 --steps 20 --sigma-fraction 0.02"
)
for c in "${CASES[@]}"; do
    name=${c%%|*}; c=${c#*|}; want=${c%%|*}; read -r -a A <<< "${c#*|}"
    rm -f ck ck.* ref.* out.* cfg
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --quiet -o ref.csv >/dev/null 2>/dev/null
    [ $? -eq "$want" ] || { bad "$name: the reference run"; continue; }

    # 1. the holder waits on its --config, a FIFO, holding the lock
    mkfifo cfg
    "${TO[@]}" "$L" "${A[@]}" --config cfg "${C[@]}" --quiet --checkpoint ck -o out.csv \
        >/dev/null 2>&1 &
    pid=$!
    if ! wait_for "grep -q 'pid' ck.lock 2>/dev/null"; then
        bad "$name: the holder never recorded itself in ck.lock"; kill -9 $pid; wait $pid; continue
    fi
    holder=$(PPID_WANT=$pid child_of) # timeout's child (named exe after a BLAS re-exec)
    t0=$(date +%s%N)
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --quiet --checkpoint ck -o out2.csv \
        >/dev/null 2>err
    rc=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ $rc -eq 2 ] && [ "$(grep -c . err)" -eq 1 ] && grep -q "checkpoint ck is in use by another run (pid $holder on host $host" err &&
        [ ! -e out2.csv ] && [ $ms -lt 10000 ]; then
        ok "$name: a second run while the first waits to read its input: refused in $ms ms: $(cat err)"
    else
        bad "$name: second run: exit $rc after $ms ms (holder pid $holder): $(cat err)"
    fi
    kill_gone $holder $pid; wait $pid 2>/dev/null
    rm -f cfg
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --quiet --checkpoint ck -o out.csv \
        >/dev/null 2>err
    rc=$?; left=$(ls ck* 2>/dev/null | tr '\n' ' ')
    if [ $rc -eq "$want" ] && cmp -s ref.csv out.csv && [ -z "$left" ]; then
        ok "$name: after the holder was killed (SIGKILL, its ck.lock left), the next run took the checkpoint: output identical, no file left"
    else
        bad "$name: after SIGKILL: exit $rc, left '$left': $(cat err)"
    fi

    # 2. the holder stopped (SIGSTOP) once a state is saved, then killed
    rm -f ck ck.* out.*
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --quiet --checkpoint ck \
        --checkpoint-every 1 -o out.csv >/dev/null 2>&1 &
    pid=$!
    if ! wait_for "grep -aq products ck 2>/dev/null"; then
        bad "$name: no state saved"; kill -9 $pid; wait $pid; continue
    fi
    sleep 0.2 # a few more products
    holder=$(PPID_WANT=$pid child_of)
    kill -STOP $holder
    before=$(snap)
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --quiet --checkpoint ck -o out2.csv \
        >/dev/null 2>err
    rc=$?
    if [ $rc -eq 2 ] && [ "$(grep -c . err)" -eq 1 ] && grep -q "pid $holder on host $host" err &&
        [ "$(snap)" = "$before" ] && [ ! -e out2.csv ]; then
        ok "$name: a second run while the first is stopped mid-work: refused, the holder's files untouched"
    else
        bad "$name: second run mid-work: exit $rc: $(cat err)"
    fi
    kill -9 $holder; kill -CONT $holder 2>/dev/null; kill_gone $holder; wait $pid 2>/dev/null
    "${TO[@]}" "$L" "${A[@]}" --config m.json "${C[@]}" --checkpoint ck -o out.csv >/dev/null 2>err
    rc=$?; left=$(ls ck* 2>/dev/null | tr '\n' ' ')
    from=$(grep -o 'resumed from [0-9]* products' err)
    if [ $rc -eq "$want" ] && [ -n "$from" ] && cmp -s ref.csv out.csv && [ -z "$left" ]; then
        ok "$name: killed mid-work, then $from: output identical, no file left"
    else
        bad "$name: resume after SIGKILL: exit $rc, '$from', left '$left': $(grep -v '^[a-z]*: \(step\|probe\)' err | head -c 300)"
    fi
done

# 3. what fixes the rounding: a state written with another kernel or --threads
A=(eigs -k 3 --which both --tol 0 --max-steps 60 --config m.json "${C[@]}")
kdef=$("$L" --version | sed -n 's/^BLAS kernel: \([^ ]*\).*/\1/p')
kalt=Haswell; [ "$kdef" = Haswell ] && kalt=Prescott
if [ "$(LNK_BLAS_KERNEL=$kalt "$L" --version | sed -n 's/^BLAS kernel: \([^ ]*\).*/\1/p')" != "$kalt" ]; then
    echo "ok - # SKIP the kernel $kalt cannot be loaded here"
else
    state_with() { # ENV... : a run killed once a state is saved
        rm -f ck ck.* out.*
        env "$@" "${TO[@]}" "$L" "${A[@]}" --quiet --checkpoint ck --checkpoint-every 1 -o out.csv \
            >/dev/null 2>&1 &
        local p=$!
        wait_for "grep -aq products ck 2>/dev/null"
        kill_gone "$(PPID_WANT=$p child_of)" $p; wait $p 2>/dev/null
    }
    state_with LNK_BLAS_KERNEL=$kalt
    cp ck ck.keep
    "${TO[@]}" "$L" "${A[@]}" --quiet --checkpoint ck -o out.csv >/dev/null 2>err; rc=$?
    if [ $rc -eq 2 ] && [ "$(grep -c . err)" -eq 1 ] &&
        grep -q "written with the BLAS kernel $kalt, this run has $kdef.*--resume-anywhere" err &&
        cmp -s ck ck.keep && [ ! -e out.csv ]; then
        ok "written with the kernel $kalt, resumed on $kdef: refused: $(cat err)"
    else
        bad "another kernel: exit $rc: $(cat err)"
    fi
    "${TO[@]}" "$L" "${A[@]}" --checkpoint ck --resume-anywhere -o out.csv >/dev/null 2>err; rc=$?
    moved=$(python3 -c "import json; m=json.load(open('out.meta.json')); print(m['resume_anywhere'], m['resumed_elsewhere'])" 2>&1)
    if [ $rc -eq 3 ] && [ "$moved" = "True the BLAS kernel: $kalt -> $kdef" ] &&
        grep -q "elsewhere (--resume-anywhere): the BLAS kernel: $kalt -> $kdef" err; then
        ok "--resume-anywhere: resumed, the sidecar records it ($moved)"
    else
        bad "--resume-anywhere: exit $rc, sidecar '$moved': $(head -c 300 err)"
    fi
    state_with OPENBLAS_NUM_THREADS=2
    "${TO[@]}" "$L" "${A[@]}" --quiet --threads 1 --checkpoint ck -o out.csv >/dev/null 2>err; rc=$?
    if [ $rc -eq 2 ] && grep -q "the BLAS thread count (--threads) 2, this run has 1" err; then
        ok "written with 2 BLAS threads, resumed with 1: refused: $(cat err)"
    else
        bad "another thread count: exit $rc: $(cat err)"
    fi
fi
echo "tests: $pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
