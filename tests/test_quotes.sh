#!/usr/bin/env bash
# tools/quotes.py must catch a quoted number or table that differs from its file:
# a copy of README.md with one inline value and one table cell changed fails
# --check naming the mark, and --write restores the files' text.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp README.md "$tmp/R.md"
python3 tools/quotes.py --check "$tmp/R.md" >/dev/null
# one inline value
sed -i 's|<!--q:bench_model.dgemm_gflops-->[^<]*<!--/q-->|<!--q:bench_model.dgemm_gflops-->999.9<!--/q-->|' "$tmp/R.md"
if python3 tools/quotes.py --check "$tmp/R.md" 2>"$tmp/err"; then
    echo "test_quotes: a changed value passed the check" >&2; exit 1
fi
grep -q "bench_model.dgemm_gflops' reads '999.9'" "$tmp/err"
# one table cell (the first data row of the bench_mpi block)
cp README.md "$tmp/R.md"
python3 - "$tmp/R.md" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("<!-- gen:bench_mpi -->")
j = s.index("| 1 x 1 |", i)
s = s[:j] + "| 1 x 1 | 0.001" + s[s.index(" |", j + 9):]
open(p, "w").write(s)
PY
if python3 tools/quotes.py --check "$tmp/R.md" 2>"$tmp/err"; then
    echo "test_quotes: a changed table passed the check" >&2; exit 1
fi
grep -q "block 'bench_mpi' differs" "$tmp/err"
python3 tools/quotes.py --write "$tmp/R.md" >/dev/null
cmp -s README.md "$tmp/R.md" || { echo "test_quotes: --write did not restore the text" >&2; exit 1; }
# an unknown name is an error, not a silent pass
printf '<!--q:no.such.value-->1<!--/q-->\n' > "$tmp/U.md"
if python3 tools/quotes.py --check "$tmp/U.md" 2>"$tmp/err"; then
    echo "test_quotes: an unknown quote passed" >&2; exit 1
fi
grep -q "unknown quote 'no.such.value'" "$tmp/err"
echo "test_quotes: passed (changed value, changed table and unknown name caught; --write restores)"
