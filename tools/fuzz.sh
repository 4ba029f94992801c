#!/usr/bin/env bash
# Run every libFuzzer target of BUILD (make fuzz) for SECONDS each, from the
# committed seeds tests/fuzz/seeds/TARGET/ plus the corpus grown by earlier
# runs (BUILD/corpus/TARGET/), and print per target: executions, execs/s,
# coverage, corpus size and findings (crashes, leaks, timeouts, out of
# memory, each input kept in BUILD/findings/TARGET/).  Exit 1 if any target
# found something.
set -uo pipefail
build=${1:-build-fuzz}
secs=${2:-60}
cd "$(dirname "$0")/.."
total_found=0
printf '%-18s %12s %9s %6s %7s %8s\n' target executions exec/s cov corpus findings
for bin in "$build"/fuzz_*; do
    [ -x "$bin" ] || continue
    t=$(basename "$bin")
    t=${t#fuzz_}
    seeds=tests/fuzz/seeds/$t
    corpus=$build/corpus/$t
    found=$build/findings/$t
    log=$build/logs/$t.log
    mkdir -p "$corpus" "$found" "$build/logs"
    before=$(ls -A "$found" | wc -l)
    # -rss_limit_mb: a reader asked to allocate more than this is a finding
    "$bin" "$corpus" "$seeds" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="$found/" -rss_limit_mb=2048 -max_len=65536 -timeout=20 \
        >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    after=$(ls -A "$found" | wc -l)
    new=$((after - before))
    [ $rc -ne 0 ] && [ $new -eq 0 ] && new=1   # a failure libFuzzer did not save
    total_found=$((total_found + new))
    printf '%-18s %12s %9s %6s %7s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
        "$(ls -A "$corpus" | wc -l)" "$new"
    if [ $new -gt 0 ]; then
        echo "  $t: see $log and $found/"
        grep -E 'ERROR|SUMMARY|property failed' "$log" | head -5 | sed 's/^/  /'
    fi
done
echo "fuzz: ${secs} s per target, $total_found finding(s)"
[ $total_found -eq 0 ]
