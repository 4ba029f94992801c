#!/usr/bin/env bash
# The reference experiment at full size and its width trend (issue 18): the
# extreme Hessian eigenvalues of Post-LN and Pre-LN 6-6 encoder-decoders at
# initialisation (Xavier) on all 1014 Multi30k validation pairs, top and
# bottom from one Krylov space (lnkit eigs --which both), with residuals;
# optionally the Hutch++ trace.  Every run is resumable (--checkpoint): start
# the script again after a restart and each run continues from its last save;
# finished runs are skipped.
#
#   bash studies/multi30k_full.sh [options]
#     --widths LIST    model widths d, comma-separated (512); h = max(1, d/64)
#                      and d_ff = 4 d, as at d = 512 (h = 8, d_ff = 2048)
#     --seeds LIST     initialisation seeds (0)
#     --pos LIST       norm positions (post,pre)
#     --k N            eigenpairs per end (5)          --tol T       (1e-6)
#     --max-steps M    Lanczos steps (120)             --threads N   (2)
#                      (the basis on disk: M + 1 vectors, 45 GB at d = 512; the
#                      runs up to d = 256 used 300 and stopped by tol within 82 products)
#     --cache-mb MB    memory for kept primal passes (8000)
#     --trace N        also a Hutch++ trace with N probes (0: none)
#     --out DIR        results (results/multi30k_full)
#     --work DIR       weights, data set, checkpoints (out/multi30k_full, git-ignored)
#     --build DIR      lnkit's build folder (build)
#
# Each run writes DIR/d{d}_{pos}_s{seed}_eigs.csv with its .meta.json (lnkit's
# sidecar: configuration, inputs with SHA-256, command line, commit, versions,
# BLAS kernel, threads, times, products, resumes) and a line in DIR/runs.csv
# (products, seconds, seconds per product, machine).  The summary is made from
# those files by python3 -m studies.summary multi30k_full at the end of every
# invocation.
set -euo pipefail
cd "$(dirname "$0")/.."
widths=512 seeds=0 poss=post,pre k=5 tol=1e-6 steps=120 threads=2 cache=8000 trace=0
out=results/multi30k_full work=out/multi30k_full build=build
while [ $# -gt 0 ]; do
    case $1 in
    --widths) widths=$2 ;; --seeds) seeds=$2 ;; --pos) poss=$2 ;; --k) k=$2 ;;
    --tol) tol=$2 ;; --max-steps) steps=$2 ;; --threads) threads=$2 ;; --cache-mb) cache=$2 ;;
    --trace) trace=$2 ;; --out) out=$2 ;; --work) work=$2 ;; --build) build=$2 ;;
    *) echo "multi30k_full: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift 2 || { echo "multi30k_full: $1 needs a value" >&2; exit 2; }
done
lnkit=$build/bin/lnkit
[ -x "$lnkit" ] || { echo "multi30k_full: $lnkit not built (run make)" >&2; exit 2; }
mkdir -p "$out" "$work"

# The data set: all pairs, sorted by length; chunks of at most 512 padded tokens.
data=$work/m30k_all.safetensors
if [ ! -f "$data" ]; then
    "$lnkit" batch --src data/multi30k/val.de --tgt data/multi30k/val.en --max-tokens 512 \
        -o "$data" 2> "$work/batch.log"
fi
rows=$(sed -n 's/.*--chunk \([0-9][0-9]*\) keeps every chunk.*/\1/p' "$work/batch.log" | head -n 1)
[ -n "$rows" ] || { echo "multi30k_full: no --chunk in $work/batch.log" >&2; exit 2; }
vs=$(wc -l < "${data%.safetensors}.src.vocab")
vt=$(wc -l < "${data%.safetensors}.tgt.vocab")

runs=$out/runs.csv

IFS=, read -r -a W <<< "$widths"; IFS=, read -r -a S <<< "$seeds"; IFS=, read -r -a P <<< "$poss"
for d in "${W[@]}"; do
    h=$(( d / 64 > 0 ? d / 64 : 1 )); dff=$(( 4 * d ))
    for seed in "${S[@]}"; do
        for pos in "${P[@]}"; do
            tag=d${d}_${pos}_s${seed}
            wts=$work/$tag.safetensors
            if [ ! -f "$wts" ]; then
                "$lnkit" init --task seq2seq --L 6 --d "$d" --h "$h" --d-ff "$dff" \
                    --V-src "$vs" --V-tgt "$vt" --norm-pos "$pos" --init xavier --seed "$seed" \
                    --quiet -o "$wts"
            fi
            common=(--config "${wts%.safetensors}.json" --weights "$wts" --batch "$data"
                    --chunk "$rows" --threads "$threads" --cache-mb "$cache")
            what_list=(eigs)
            [ "$trace" -gt 0 ] && what_list+=(trace)
            for what in "${what_list[@]}"; do
                csv=$out/${tag}_$what.csv
                [ -f "$csv" ] && continue   # finished
                echo "multi30k_full: $tag $what ($(date -u +%FT%TZ))"
                if [ "$what" = eigs ]; then
                    # exit 3: written, some pairs not converged (the CSV's converged column
                    # and runs.csv say which); the sweep goes on
                    rc=0
                    "$lnkit" eigs "${common[@]}" -k "$k" --which both --tol "$tol" \
                        --max-steps "$steps" --checkpoint "$work/${tag}_eigs.ckpt" -o "$csv" || rc=$?
                    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"
                else
                    "$lnkit" trace "${common[@]}" --method hutchpp --probes "$trace" \
                        --checkpoint "$work/${tag}_trace.ckpt" -o "$csv"
                fi
                python3 studies/multi30k_full_run.py "$runs" "$tag" "$d" "$h" "$dff" "$pos" \
                    "$seed" "$what" "$csv"
            done
        done
    done
done
echo "multi30k_full: all runs done -> $out"
"${PYTHON:-python3}" -m studies.summary multi30k_full "$out"
