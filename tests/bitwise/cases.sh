#!/usr/bin/env bash
# The runs whose outputs tests/test_bitwise.sh compares bit for bit with the
# committed reference (tests/bitwise/ref/KERNEL/, made by main's lnkit before
# the performance work of issue 14; see tests/bitwise/README.md).
#
# usage: cases.sh LNKIT OUTDIR KERNEL
# Runs LNKIT with LNK_BLAS_KERNEL=KERNEL and writes into OUTDIR every result
# file (CSV written with %.17g) and SHA256SUMS, the checksums of them and of
# the binary outputs (eigenvectors, H v); sidecars (.meta.json: times,
# commit) are removed, and so is the record the binary outputs embed
# (docs/MODEL.md section 9: it names the commit), leaving the bytes the
# reference build wrote (unrecord below).  Deterministic in everything but
# the machine's BLAS kernel, hence one reference per kernel.
set -euo pipefail
L=$1; out=$2; export LNK_BLAS_KERNEL=$3
mkdir -p "$out"; cd "$out"
run() { "$L" "$@" --quiet; }

# Models: lm Post-LN and Pre-LN (a tiny one; a medium one, n = 0.2 M, whose
# vectors are long enough for OpenBLAS to split its level-1 kernels over two
# threads), seq2seq Post-LN and Pre-LN.
"$L" init --task lm --d 16 --h 2 --L 2 --V 32 --seed 3 --quiet -o lm_post.safetensors
"$L" init --task lm --norm-pos pre --d 64 --h 4 --L 2 --d-ff 256 --V 500 --seed 4 --quiet \
    -o lm_pre.safetensors
"$L" init --task seq2seq --d 16 --h 2 --L 1 --V 32 --seed 5 --quiet -o s2s_post.safetensors
"$L" init --task seq2seq --norm-pos pre --d 24 --h 3 --L 2 --V 40 --seed 6 --quiet \
    -o s2s_pre.safetensors
"$L" batch --synthetic --config lm_post.json --rows 6 --len 8 --rng-seed 1 -o lm_post.b.safetensors >/dev/null 2>&1
"$L" batch --synthetic --config lm_pre.json --rows 8 --len 16 --rng-seed 2 -o lm_pre.b.safetensors >/dev/null 2>&1
"$L" batch --synthetic --config s2s_post.json --rows 4 --len 6 --rng-seed 3 -o s2s_post.b.safetensors >/dev/null 2>&1
"$L" batch --synthetic --config s2s_pre.json --rows 6 --len 7 --rng-seed 4 -o s2s_pre.b.safetensors >/dev/null 2>&1

for m in lm_post lm_pre s2s_post s2s_pre; do
    M=(--config $m.json --weights $m.safetensors --batch $m.b.safetensors)
    for t in 1 2 3; do
        p=$m.t$t; T=(--threads $t)
        run eigs "${M[@]}" "${T[@]}" -k 3 --which both --vectors $p.eigs.vec.safetensors \
            -o $p.eigs.csv
        run eigs "${M[@]}" "${T[@]}" -k 3 --which top --reorth always --vectors \
            $p.eigs_always.vec.safetensors -o $p.eigs_always.csv
        run eigs "${M[@]}" "${T[@]}" -k 2 --which bottom --mode light --max-steps 60 \
            --tol 1e-4 -o $p.eigs_light.csv
        run trace "${M[@]}" "${T[@]}" --probes 12 -o $p.trace.csv >/dev/null
        run trace "${M[@]}" "${T[@]}" --probes 12 --method hutchpp --rng-seed 7 \
            -o $p.trace_hutchpp.csv >/dev/null
        run density "${M[@]}" "${T[@]}" --runs 2 --steps 25 --sigma-fraction 0.01 \
            -o $p.density.csv --nodes $p.nodes.csv
        run vector --config $m.json --random --rng-seed 9 --flat -o $p.v.safetensors
        run hvp "${M[@]}" "${T[@]}" --vector $p.v.safetensors --repeat 3 \
            -o $p.hvp.vec.safetensors 2>/dev/null
    done
done
# The primal pass recomputed every product (--cache-mb 0) and a data set of
# two chunks, on the medium model.
M=(--config lm_pre.json --weights lm_pre.safetensors --batch lm_pre.b.safetensors)
for t in 1 2 3; do
    run eigs "${M[@]}" --threads $t -k 2 --cache-mb 0 -o lm_pre.t$t.eigs_nocache.csv
    run eigs "${M[@]}" --threads $t -k 2 --chunk 4 -o lm_pre.t$t.eigs_chunk.csv
    run density "${M[@]}" --threads $t --runs 1 --steps 20 --sigma-fraction 0.02 --chunk 4 \
        --cache-mb 0 -o lm_pre.t$t.density_nocache.csv --nodes lm_pre.t$t.nodes_nocache.csv
done
rm -f ./*.meta.json ./*.v.safetensors
# Each binary output without __metadata__'s "lnkit" (and without an empty
# __metadata__), its header rewritten as lnkit writes one: compact JSON in
# the same order, padded with spaces to a multiple of 8 bytes.
unrecord() {
    python3 - "$@" <<'PY'
import json, struct, sys
for p in sys.argv[1:]:
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    md = h.get("__metadata__", {})
    md.pop("lnkit", None)
    if not md:
        h.pop("__metadata__", None)
    t = json.dumps(h, separators=(",", ":"), ensure_ascii=False).encode()
    t += b" " * ((8 - len(t) % 8) % 8)
    open(p, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
}
unrecord ./*.vec.safetensors
sha256sum -- *.csv *.vec.safetensors > SHA256SUMS
rm -f ./*.safetensors ./*.json
