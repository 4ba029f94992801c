#!/usr/bin/env bash
# Run every cmocka test program given, then print the totals as
# "tests: N passed, N failed, N skipped".  Exit non-zero if any failed.
set -u
pass=0; fail=0; skip=0; bad=()
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
    if [ $rc -ne 0 ]; then
        bad+=("$(basename "$t")")
        # a crash or an abort counts as a failure even if cmocka printed nothing
        if [ -z "$f" ] || [ "$f" = 0 ]; then fail=$((fail + 1)); fi
    fi
done
echo
[ ${#bad[@]} -gt 0 ] && echo "failing programs: ${bad[*]}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] && [ ${#bad[@]} -eq 0 ]
