#!/usr/bin/env bash
# Resumable runs from the command line (issue 18), run by tests/test_checkpoint.c:
#   bash tests/test_checkpoint.sh LNKIT
# - SIGKILL at random times (3 seeds, each run killed twice, then finished)
#   and inside saves (LNK_CKPT_FAULT: after the rows, before FILE's rename):
#   the final CSV (and trace's stdout) equals the uninterrupted run's byte for
#   byte, for eigs --which both (full, partial reorthogonalisation, basis in
#   FILE.basis), trace (Hutchinson, Hutch++) and density; the checkpoint files
#   are gone at the end and the sidecar has the products and resumed_from;
# - a different run is refused with exit 2 and one line naming the item
#   (an option, the weights, a batch file, the configuration, the command);
#   a corrupt, truncated or foreign checkpoint: exit 2, one line, no crash;
# - a basis larger than the disk's free space: exit 2, one line, no files left;
# - full + partial reorthogonalisation with the basis on disk gives the
#   extremes of --reorth always to 1e-10 relative.
# Prints "ok - ..." / "not ok - ..." lines; exit status 1 if any failed.
set -u
L=$1
. "$(cd "$(dirname "$0")" && pwd)/harness.sh"
export OPENBLAS_NUM_THREADS=1

"$L" init --task seq2seq --d 32 --h 4 --L 2 --V 60 --seed 5 -o m.safetensors >/dev/null 2>&1 &&
"$L" batch --synthetic --config m.json --rows 24 --len 12 --rng-seed 2 -o b1.safetensors >/dev/null 2>&1 &&
"$L" batch --synthetic --config m.json --rows 8 --len 9 --rng-seed 3 -o b2.safetensors >/dev/null 2>&1 ||
    { bad "set-up"; exit 1; }
C=(--config m.json --weights m.safetensors --batch b1.safetensors --batch b2.safetensors --chunk 8)

# name | exit status | arguments (output options added below); --tol 0 runs
# eigs to its step limit, not converged: status 3 (docs/guide/files.md,
# "Exit status")
CASES=(
  "eigs|3|eigs ${C[*]} -k 3 --which both --tol 0 --max-steps 40"
  "hutchinson|0|trace ${C[*]} --probes 24"
  "hutchpp|0|trace ${C[*]} --probes 24 --method hutchpp"
  "density|0|density ${C[*]} --runs 3 --steps 12 --sigma-fraction 0.01 --nodes nodes.csv"
)

products() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['products_total'], m['resumed_from'])" "$1"; }

for c in "${CASES[@]}"; do
    name=${c%%|*}; c=${c#*|}; want=${c%%|*}; read -r -a A <<< "${c#*|}"
    "$L" "${A[@]}" --quiet -o ref.csv > ref.out 2>ref.err
    rc=$?; [ $rc -eq "$want" ] || { bad "$name: reference run: exit $rc: $(cat ref.err)"; continue; }
    [ -f nodes.csv ] && mv nodes.csv ref_nodes.csv
    refp=$(products ref.meta.json | cut -d' ' -f1)
    t0=$(date +%s%N); "$L" "${A[@]}" --quiet -o ref2.csv > /dev/null 2>&1; t1=$(date +%s%N)
    dur=$(( (t1 - t0) / 1000000 )) # ms of an uninterrupted run
    same() { # the outputs of a resumed run against the reference
        cmp -s ref.csv out.csv && cmp -s ref.out out.out &&
            { [ ! -f ref_nodes.csv ] || cmp -s ref_nodes.csv nodes.csv; }
    }
    # random kills, 3 seeds, two kills each
    for seed in 1 2 3; do
        RANDOM=$((seed * 1000 + ${#name}))
        rm -f ck ck.* out.* nodes.csv
        kills=0
        for k in 1 2; do
            ms=$(( dur / 10 + RANDOM % (dur * 7 / 10 + 1) ))
            "$L" "${A[@]}" --quiet --checkpoint ck --checkpoint-every 2 -o out.csv > out.out 2>/dev/null &
            pid=$!
            sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
            kill -9 $pid 2>/dev/null && kills=$((kills + 1))
            wait $pid 2>/dev/null
        done
        "$L" "${A[@]}" --checkpoint ck --checkpoint-every 2 -o out.csv > out.out 2>run.err
        rc=$?
        read -r tot from <<< "$(products out.meta.json 2>/dev/null)"
        if [ $rc -eq "$want" ] && same && [ ! -e ck ] && [ ! -e ck.basis ] && [ ! -e ck.lock ] &&
            [ "$tot" = "$refp" ]; then
            ok "$name: seed $seed: $kills kill(s) at random times, resumed from ${from:-?} of $tot products: output identical"
        else
            bad "$name: seed $seed: exit $rc, products ${tot:-?} (ref $refp), files: $(ls ck* 2>/dev/null | tr '\n' ' '), $(head -c 300 run.err)"
        fi
    done
    # kills inside a save: rows on disk but FILE not yet replaced; FILE's
    # temporary file written but not renamed
    for f in rows:3 file:5 rows:9; do
        rm -f ck ck.* out.* nodes.csv
        krc=$( (LNK_CKPT_FAULT=$f exec "$L" "${A[@]}" --quiet --checkpoint ck --checkpoint-every 2 \
            -o out.csv > out.out 2>/dev/null) 2>/dev/null; echo $?)
        "$L" "${A[@]}" --quiet --checkpoint ck --checkpoint-every 2 -o out.csv > out.out 2>run.err
        rc=$?
        left=$(ls ck* 2>/dev/null | tr '\n' ' ')
        if [ $krc -eq 137 ] && [ $rc -eq "$want" ] && same && [ -z "$left" ]; then
            ok "$name: killed in save ($f), resumed: output identical, no file left"
        else
            bad "$name: killed in save ($f): kill exit $krc, exit $rc, left '$left', $(head -c 300 run.err)"
        fi
    done
    rm -f ref_nodes.csv
done

# --- refusals: a different run, one line naming the item, exit 2
A=(eigs "${C[@]}" -k 3 --which both --tol 0 --max-steps 40)
rm -f ck ck.*
( (LNK_CKPT_FAULT=rows:4 exec "$L" "${A[@]}" --quiet --checkpoint ck -o out.csv 2>/dev/null) ) 2>/dev/null
cp ck ck.keep; cp ck.basis ck.basis.keep
refuse() { # NAME REGEX ARGS...
    local nm=$1 re=$2; shift 2
    cp ck.keep ck; cp ck.basis.keep ck.basis
    "$L" "$@" --quiet --checkpoint ck -o out.csv > /dev/null 2>err
    local rc=$? n; n=$(grep -c . err)
    if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -Eq -e "$re" err && cmp -s ck ck.keep; then
        ok "refused ($nm): $(cat err)"
    else
        bad "refused ($nm): exit $rc, $n line(s): $(cat err)"
    fi
}
C2=(--config m.json --weights m.safetensors --batch b1.safetensors --batch b2.safetensors)
refuse "--tol" 'belongs to a different run: --tol is 0 there, 1e-08 here' \
    eigs "${C[@]}" -k 3 --which both --tol 1e-8 --max-steps 40
refuse "-k" '-k is 3 there, 4 here' eigs "${C[@]}" -k 4 --which both --tol 0 --max-steps 40
refuse "--which" '--which is both there, top here' eigs "${C[@]}" -k 3 --which top --tol 0 --max-steps 40
refuse "--max-steps" '--max-steps is 40 there, 41 here' eigs "${C[@]}" -k 3 --which both --tol 0 --max-steps 41
refuse "--reorth" '--reorth is partial there, always here' "${A[@]}" --reorth always
refuse "--mode" '--mode is full there, light here' "${A[@]}" --mode light
refuse "--rng-seed" '--rng-seed is 0 there, 1 here' "${A[@]}" --rng-seed 1
refuse "--chunk" '--chunk is 8 there, 4 here' eigs "${C2[@]}" --chunk 4 -k 3 --which both --tol 0 --max-steps 40
refuse "--block" '--block is \* there, \*.attn.\* here' "${A[@]}" --block '*.attn.*'
refuse "--operator" '--operator is absent there, ggn here' "${A[@]}" --operator ggn
"$L" init --task seq2seq --d 32 --h 4 --L 2 --V 60 --seed 6 -o m6.safetensors >/dev/null 2>&1
refuse "weights" '--weights \(SHA-256\) is [0-9a-f]{64} there' eigs --config m.json --weights m6.safetensors \
    --batch b1.safetensors --batch b2.safetensors --chunk 8 -k 3 --which both --tol 0 --max-steps 40
"$L" batch --synthetic --config m.json --rows 8 --len 9 --rng-seed 4 -o b3.safetensors >/dev/null 2>&1
refuse "a batch file" '--batch file 2 \(SHA-256\)' eigs --config m.json --weights m.safetensors \
    --batch b1.safetensors --batch b3.safetensors --chunk 8 -k 3 --which both --tol 0 --max-steps 40
refuse "the number of batch files" 'the number of --batch files is 2 there, 1 here' eigs --config m.json \
    --weights m.safetensors --batch b1.safetensors --chunk 8 -k 3 --which both --tol 0 --max-steps 40
refuse "the configuration" 'the configuration \(SHA-256 of its resolved keys\)' "${A[@]}" --label-smoothing 0.1
refuse "the command" 'written by lnkit eigs, this is lnkit density' density "${C[@]}" --runs 2 --steps 10 --sigma 0.1
refuse "trace options" 'written by lnkit eigs, this is lnkit trace' trace "${C[@]}" --probes 10

# --- corrupt, truncated, foreign: exit 2, one line, the file kept
corrupt() { # NAME REGEX COMMAND-TO-DAMAGE
    local nm=$1 re=$2; shift 2
    cp ck.keep ck; cp ck.basis.keep ck.basis
    eval "$1"
    "$L" "${A[@]}" --quiet --checkpoint ck -o out.csv > /dev/null 2>err
    local rc=$? n; n=$(grep -c . err)
    if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -Eq -e "$re" err && [ -e ck ]; then
        ok "corrupt ($nm): $(cat err)"
    else
        bad "corrupt ($nm): exit $rc, $n line(s): $(cat err)"
    fi
}
corrupt "byte flipped" 'corrupt or not a lnkit checkpoint.*SHA-256' \
    "printf '\\x55' | dd of=ck bs=1 seek=100 conv=notrunc status=none"
corrupt "truncated" 'truncated' "truncate -s 200 ck"
corrupt "empty" 'too short' ": > ck"
corrupt "foreign file" 'not a lnkit checkpoint' "cp ref.csv ck"
corrupt "basis truncated" 'ck.basis has [0-9]+ bytes, expected' "truncate -s 4096 ck.basis"
corrupt "basis row changed" 'row 2 does not match its checksum' \
    "printf '\\x55\\x55' | dd of=ck.basis bs=1 seek=\$((2 * 8 * $(python3 -c "import json; print(json.load(open('ref.meta.json'))['block_size'])" 2>/dev/null || echo 0) + 80)) conv=notrunc status=none"
rm -f ck; cp ck.basis.keep ck.basis
"$L" "${A[@]}" --quiet --checkpoint ck -o out.csv > /dev/null 2>err; rc=$?
if [ $rc -eq 2 ] && grep -q 'exists but its checkpoint' err && cmp -s ck.basis ck.basis.keep; then
    ok "an orphan ck.basis is refused, not replaced: $(cat err)"
else
    bad "orphan ck.basis: exit $rc: $(cat err)"
fi
rm -f ck ck.*

# --- a basis larger than the disk's free space: refused before anything is
# reserved or written (a failed reservation fills the disk on its way), and a
# fresh run leaves neither file behind; n ~ 3.3e5 parameters, so the rows
# (n + 1 of n values) need about 0.9 TB
"$L" init --task lm --d 128 --h 4 --L 1 --V 600 --seed 1 -o big.safetensors >/dev/null 2>&1 &&
"$L" batch --synthetic --config big.json --rows 2 --len 4 --rng-seed 1 -o bigb.safetensors >/dev/null 2>&1
rm -f out.csv
"$L" eigs --config big.json --weights big.safetensors --batch bigb.safetensors -k 1 --which top \
    --max-steps 16777216 --quiet --checkpoint ck -o out.csv > /dev/null 2>err; rc=$?
n=$(grep -c . err)
if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && grep -Eq 'the basis needs [0-9.e+]+ GB .*GB free: fewer rows' err &&
   [ ! -e ck ] && [ ! -e ck.basis ] && [ ! -e out.csv ]; then
    ok "a basis larger than the free space: refused, nothing left behind: $(cat err)"
else
    bad "basis larger than the free space: exit $rc, $n line(s), files: $(ls ck* out.csv 2>/dev/null | tr '\n' ' '): $(cat err)"
fi
rm -f ck ck.* out.*

# --- the mode for the full-size run: full + partial reorthogonalisation with
# the basis on disk against --reorth always, the extremes to 1e-10 relative
"$L" eigs "${C[@]}" -k 5 --which both --tol 1e-10 --max-steps 200 --quiet --checkpoint ck -o part.csv 2>err &&
"$L" eigs "${C[@]}" -k 5 --which both --tol 1e-10 --max-steps 200 --quiet --reorth always -o alw.csv 2>>err
if out=$(python3 - <<'EOF'
import csv
a = list(csv.DictReader(open("part.csv"))); b = list(csv.DictReader(open("alw.csv")))
assert len(a) == len(b) == 10, (len(a), len(b))
scale = max(abs(float(r["eigenvalue"])) for r in b)
err = max(abs(float(x["eigenvalue"]) - float(y["eigenvalue"])) / scale for x, y in zip(a, b))
assert err <= 1e-10, err
print("%.2g" % err)
EOF
); then
    ok "full + partial with the basis on disk vs --reorth always: top-5 and bottom-5 agree to $out of max|l|"
else
    bad "partial (basis on disk) vs always: $out $(cat err)"
fi

echo "tests: $pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
