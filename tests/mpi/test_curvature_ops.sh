#!/usr/bin/env bash
# The curvature anatomy's commands under MPI (issue 17: "lnkit eigs --operator
# ggn|functional and the block command work on every task, data sets and blocks
# included, and under MPI"; run by tests/mpi/run.sh):
#   bash tests/mpi/test_curvature_ops.sh SERIAL_BUILD MPI_BUILD   (e.g. build build-mpi)
# On a seq2seq model of a Multi30k data set (the first 24 pairs of
# data/multi30k, `lnkit batch --src --tgt`, cut into chunks of 5 rows: the
# chunks are spread over the ranks) and on an lm model of two batch files in
# chunks of 3 rows, each with a --block: `lnkit eigs --operator
# hessian|ggn|functional --mass` (eigenvalues, residual flags and each
# eigenvector's mass per tensor) and `lnkit blocks` (per-tensor blocks and
# --group blocks: Frobenius norms, extremes, SLQ node ranges, Jensen-Shannon
# distances) under mpirun -np 2 against the one-process build.  Equal to
# 1e-12 relative (tests/mpi/compare.py: the largest difference over a column's
# largest value) for eigenvalues and norms, as tests/mpi/run.sh asks of the
# other commands (the Jensen-Shannon distances: see JSCMP below); 1e-9 for the
# masses (squares of converged eigenvectors' entries: a vector is fixed only
# to the residual tolerance) and for G's bottom eigenvalues, which are
# rounding noise of a singular operator; the same rank count twice: bitwise
# identical files (the ranks sum in a fixed order).  Prints "ok - ..." /
# "not ok - ..." and "tests: N passed, N failed, N skipped"; exit 1 if any
# failed.  Every run has a time limit.
set -u
SB=$(cd "${1:-build}" && pwd) || exit 1
MB=$(cd "${2:-build-mpi}" && pwd) || exit 1
S=$SB/bin/lnkit
M=$MB/bin/lnkit
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=$HERE/../../data/multi30k
CMP="python3 $HERE/compare.py"
# a generous limit: the machine may be shared (a deadlock still fails the test)
MR=(timeout -k 10 900 mpirun -q --allow-run-as-root --oversubscribe -np 2)
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
. "$HERE/../harness.sh"
for f in "$S" "$M" "$DATA/val.de" "$DATA/val.en"; do
    [ -e "$f" ] || { echo "not ok - $f not found"; echo "tests: 0 passed, 1 failed, 0 skipped"; exit 1; }
done

# --- data: 24 Multi30k pairs and a 2-2 encoder-decoder on their vocabularies;
# an lm model with two batch files
head -n 24 "$DATA/val.de" > m.de
head -n 24 "$DATA/val.en" > m.en
run "$S" batch --src m.de --tgt m.en --quiet -o m30k.safetensors || exit 1
run "$S" init --task seq2seq --d 16 --h 2 --d-ff 32 --L 2 --V-src "$(wc -l < m30k.src.vocab)" \
    --V-tgt "$(wc -l < m30k.tgt.vocab)" --seed 7 -o s2s.safetensors || exit 1
run "$S" init --task lm --d 16 --h 4 --L 2 --V 48 --seed 5 -o lm.safetensors || exit 1
run "$S" batch --synthetic --config lm.json --rows 9 --len 10 --rng-seed 2 -o lm_b1.safetensors || exit 1
run "$S" batch --synthetic --config lm.json --rows 5 --len 6 --rng-seed 4 -o lm_b2.safetensors || exit 1
CS=(--config s2s.json --weights s2s.safetensors --batch m30k.safetensors --chunk 5)
CL=(--config lm.json --weights lm.safetensors --batch lm_b1.safetensors --batch lm_b2.safetensors
    --chunk 3)
E=(--tol 1e-10 --max-steps 300 --quiet)

# NAME|ARGS...: the eigs runs (each with --mass), one process and 2 ranks
EIGS=(
    "s2s_h|${CS[*]} --block enc.*.attn.*,dec.*.xattn.* -k 2 --which both"
    "s2s_g|${CS[*]} --operator ggn --block dec.* -k 3 --which top"
    "s2s_f|${CS[*]} --operator functional -k 2 --which both"
    "lm_h|${CL[*]} --block *.ffn.*,*emb -k 2 --which both"
    "lm_g|${CL[*]} --operator ggn --block dec.1.* -k 2 --which top"
    "lm_f|${CL[*]} --operator functional --block *.attn.* -k 2 --which both"
)
# NAME|ARGS...: the blocks runs (groups and per-tensor blocks under a --block)
BLOCKS=(
    "s2s_bf|${CS[*]} --operator functional --block dec.1.* --group dec.*.xattn.* --group dec.*.ffn.*"
    "s2s_bg|${CS[*]} --operator ggn --no-tensors --group enc.* --group dec.* --group *emb,out.w"
    "lm_bh|${CL[*]} --block dec.0.* --group *.attn.w* --group *.ffn.*"
)
# The Jensen-Shannon distance is the square root of the divergence, whose
# derivative is infinite at 0: between two blocks whose operator is zero (key
# biases, to which softmax is blind: their nodes are ~1e-18) the divergence is
# rounding noise, ~1e-17, and the distance ~1e-9 on either run.  So the
# divergences (squares) are compared to 1e-12 of their largest, and the
# distances that are not at that floor (> 1e-4) to 1e-10 relative.
JSCMP='
import csv, sys
a = [float(r["js_distance"]) for r in csv.DictReader(open(sys.argv[1]))]
b = [float(r["js_distance"]) for r in csv.DictReader(open(sys.argv[2]))]
if len(a) != len(b) or not a:
    sys.exit("%d vs %d pairs" % (len(a), len(b)))
s2 = max(x * x for x in a)
d2 = max(abs(x * x - y * y) for x, y in zip(a, b)) / s2
big = [(x, y) for x, y in zip(a, b) if x > 1e-4]
d1 = max((abs(x - y) / x for x, y in big), default=0.0)
print("%d pairs: divergences %.3g of the largest, %d distances > 1e-4 within %.3g" % (len(a), d2, len(big), d1))
sys.exit(0 if d2 <= 1e-12 and d1 <= 1e-10 else 1)'
BK=(--probes 8 --max-steps 120 --tol 1e-10 --runs 2 --steps 12)

for line in "${EIGS[@]}"; do
    name=${line%%|*}
    set -f; read -r -a args <<<"${line#*|}"; set +f
    "$S" eigs "${args[@]}" "${E[@]}" -o "$name.1.csv" --mass "$name.1.mass.csv" 2>"$name.1.err" ||
        { bad "eigs $name, one process: $(cat "$name.1.err")"; continue; }
    for r in 2 2b; do
        "${MR[@]}" "$M" eigs "${args[@]}" "${E[@]}" -o "$name.$r.csv" --mass "$name.$r.mass.csv" \
            2>"$name.$r.err" || { bad "eigs $name, 2 ranks: exit $? $(cat "$name.$r.err")"; continue 2; }
    done
    check "eigs $name (${line#*|}), 2 ranks: eigenvalues, converged flags" \
        $CMP csv "$name.1.csv" "$name.2.csv" --cols which,index,eigenvalue,converged
    # every requested value converged, so that the comparison is of converged pairs
    n=$(awk -F, 'NR > 1 && $5 != 1' "$name.1.csv" | wc -l)
    [ "$n" -eq 0 ] && ok "eigs $name: every eigenpair converged to 1e-10" ||
        bad "eigs $name: $n eigenpairs not converged: $(cat "$name.1.csv")"
    check "eigs $name, 2 ranks: mass per tensor (1e-9)" \
        $CMP csv "$name.1.mass.csv" "$name.2.mass.csv" --cols which,index,tensor,n,mass --rtol 1e-9
    # the masses of each eigenvector sum to 1
    check "eigs $name: each eigenvector's masses sum to 1" python3 -c "
import csv, sys, collections
s = collections.defaultdict(float)
for r in csv.DictReader(open('$name.2.mass.csv')):
    s[(r['which'], r['index'])] += float(r['mass'])
bad = {k: v for k, v in s.items() if abs(v - 1) > 1e-9}
if not s or bad:
    sys.exit('sums %s' % dict(s))
print('%d vectors' % len(s))"
    if cmp -s "$name.2.csv" "$name.2b.csv" && cmp -s "$name.2.mass.csv" "$name.2b.mass.csv"; then
        ok "eigs $name, 2 ranks twice: bitwise identical"
    else
        bad "eigs $name, 2 ranks twice: the files differ"
    fi
done

for line in "${BLOCKS[@]}"; do
    name=${line%%|*}
    set -f; read -r -a args <<<"${line#*|}"; set +f
    # G's blocks are singular: their bottom extremes (~1e-8 of the top) never
    # pass a tolerance relative to the block, so the run says so, exit 3
    # (README, "Inputs, outputs and failures")
    want=0; [ "${name#*_}" = bg ] && want=3
    "$S" blocks "${args[@]}" "${BK[@]}" --quiet -o "$name.1.csv" --pairs "$name.1.pairs.csv" \
        2>"$name.1.err"
    rc=$?; [ $rc -eq $want ] || { bad "blocks $name, one process: exit $rc: $(cat "$name.1.err")"; continue; }
    for r in 2 2b; do
        "${MR[@]}" "$M" blocks "${args[@]}" "${BK[@]}" --quiet -o "$name.$r.csv" \
            --pairs "$name.$r.pairs.csv" 2>"$name.$r.err"
        rc=$?; [ $rc -eq $want ] ||
            { bad "blocks $name, 2 ranks: exit $rc (124: the time limit) $(cat "$name.$r.err")"; continue 2; }
    done
    nb=$(($(wc -l < "$name.1.csv") - 1))
    check "blocks $name (${line#*|}; $nb blocks), 2 ranks: names, sizes, Frobenius norms, top eigenvalues, SLQ node ranges" \
        $CMP csv "$name.1.csv" "$name.2.csv" --cols block,type,n,operator,frob,frob2,frob_se,top,node_max
    if [ "${name#*_}" = bg ]; then
        # G's blocks are singular: bottom eigenvalues and nodes ~1e-8 of the top
        check "blocks $name, 2 ranks: bottom eigenvalues, smallest nodes (1e-9 of their scale)" \
            $CMP csv "$name.1.csv" "$name.2.csv" --cols bottom,node_min --rtol 1e-9
    else
        check "blocks $name, 2 ranks: bottom eigenvalues, smallest nodes" \
            $CMP csv "$name.1.csv" "$name.2.csv" --cols bottom,node_min
    fi
    check "blocks $name, 2 ranks: Jensen-Shannon divergences (1e-12), distances above 1e-4 (1e-10)" \
        python3 -c "$JSCMP" "$name.1.pairs.csv" "$name.2.pairs.csv"
    if cmp -s "$name.2.csv" "$name.2b.csv" && cmp -s "$name.2.pairs.csv" "$name.2b.pairs.csv"; then
        ok "blocks $name, 2 ranks twice: bitwise identical"
    else
        bad "blocks $name, 2 ranks twice: the files differ"
    fi
done

# --- studies/anatomy --resume on 2 ranks (studies/scripts/study_anatomy.sh --full
# with ANATOMY_MPI): a run in two parts equals one run of one process, byte for byte
if [ -x "$SB/studies/anatomy" ] && [ -x "$MB/studies/anatomy" ]; then
    AC=(--lm-d '' --s2s-L '' --s2s-d '' --no-variants --lm-L-ref 2 --lm-d-ref 8 --h 2 --seeds 2
        --probes 2 --runs 1 --steps 6 --max-steps 60 --quiet --V 16 --rows 2 --len 4)
    "$SB/studies/anatomy" --out an1 --lm-L 1,2,3 "${AC[@]}" 2>an.err &&
        "${MR[@]}" "$MB/studies/anatomy" --out an2 --lm-L 1,2 "${AC[@]}" --resume 2>>an.err &&
        "${MR[@]}" "$MB/studies/anatomy" --out an2 --lm-L 1,2,3 "${AC[@]}" --resume 2>>an.err
    rc=$? same=1
    for f in extremes mass blocknorms js; do cmp -s "an1/$f.csv" "an2/$f.csv" || same=0; done
    if [ $rc -eq 0 ] && [ $same -eq 1 ]; then
        ok "anatomy --resume, 2 ranks in two parts: the four CSVs of one process, byte for byte"
    else
        bad "anatomy --resume, 2 ranks in two parts: exit $rc, same $same: $(cat an.err)"
    fi
else
    skip=$((skip + 1)); echo "ok - # SKIP studies/anatomy not built in both builds"
fi

echo
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
