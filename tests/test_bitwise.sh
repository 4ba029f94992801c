#!/usr/bin/env bash
# Bit for bit: runs tests/bitwise/cases.sh (eigs: partial and full
# reorthogonalisation, light mode, Ritz vectors, the primal pass kept and
# recomputed, two chunks; trace: Hutchinson and Hutch++; density nodes and
# curve; hvp; lm and seq2seq, Post-LN and Pre-LN, 1, 2 and 3 BLAS threads)
# with this build's lnkit, then checks
#  - that every output is the same bytes on 1, 2 and 3 threads (the guide's
#    "the same numbers on every thread count"; core/blas_fixed.h), and
#  - that every output equals the committed reference of each BLAS kernel the
#    CPU can run (tests/bitwise/ref/KERNEL/: see tests/bitwise/README.md for
#    the code that made them): a change that alters one bit of these outputs
#    would alter the committed results too.
#
# usage: test_bitwise.sh BUILD
set -uo pipefail
build=${1:-build}
L=$(cd "$build" && pwd)/bin/lnkit
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
ran=0; fail=0
for ref in "$here"/bitwise/ref/*/; do
    k=$(basename "$ref")
    case $k in
        Cooperlake) need=(avx512f avx512bw avx512vl avx512_bf16) ;;
        SkylakeX) need=(avx512f avx512bw avx512vl) ;;
        Haswell) need=(avx2 fma) ;;
        *) need=(unknown-kernel) ;;
    esac
    if ! has "${need[@]}"; then
        echo "test_bitwise: $k: SKIPPED (the CPU lacks ${need[*]})"
        continue
    fi
    if ! bash "$here/bitwise/cases.sh" "$L" "$tmp/$k" "$k" >"$tmp/$k.log" 2>&1; then
        echo "test_bitwise: $k: FAILED: cases.sh stopped:"; tail -5 "$tmp/$k.log"
        fail=1; continue
    fi
    ran=1
    nt=0
    for f in "$tmp/$k"/*.t1.*; do
        for t in 2 3; do
            g=${f/.t1./.t$t.}
            if ! cmp -s "$f" "$g"; then
                echo "test_bitwise: $k: FAILED: $(basename "$g") differs from $(basename "$f"): the thread count changed the result"
                fail=1
            fi
            nt=$((nt + 1))
        done
    done
    echo "test_bitwise: $k: $nt outputs on 2 and 3 threads compared with 1 thread"
    if diff -r "$ref" "$tmp/$k" >"$tmp/$k.diff"; then
        echo "test_bitwise: $k: $(grep -c . "$ref/SHA256SUMS") outputs bitwise equal to the reference"
    else
        echo "test_bitwise: $k: FAILED: outputs differ from the reference:"
        head -40 "$tmp/$k.diff"; fail=1
    fi
done
[ $ran = 1 ] || echo "test_bitwise: SKIPPED: no reference kernel runs on this CPU"
exit $fail
