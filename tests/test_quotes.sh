#!/usr/bin/env bash
# tools/quotes.py must catch a quoted number or table that differs from its file:
# a copy of docs/guide/performance.md with one inline value and one table cell changed fails
# --check naming the mark, and --write restores the files' text.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp docs/guide/performance.md "$tmp/R.md"
python3 tools/quotes.py --check "$tmp/R.md" >/dev/null
# one inline value
sed -i 's|<!--q:bench_model.dgemm_gflops-->[^<]*<!--/q-->|<!--q:bench_model.dgemm_gflops-->999.9<!--/q-->|' "$tmp/R.md"
if python3 tools/quotes.py --check "$tmp/R.md" 2>"$tmp/err"; then
    echo "test_quotes: a changed value passed the check" >&2; exit 1
fi
grep -q "bench_model.dgemm_gflops' reads '999.9'" "$tmp/err"
# one table cell (the first data row of the bench_mpi block)
cp docs/guide/performance.md "$tmp/R.md"
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
cmp -s docs/guide/performance.md "$tmp/R.md" || { echo "test_quotes: --write did not restore the text" >&2; exit 1; }
# an unknown name is an error, not a silent pass
printf '<!--q:no.such.value-->1<!--/q-->\n' > "$tmp/U.md"
if python3 tools/quotes.py --check "$tmp/U.md" 2>"$tmp/err"; then
    echo "test_quotes: an unknown quote passed" >&2; exit 1
fi
grep -q "unknown quote 'no.such.value'" "$tmp/err"
echo "test_quotes: passed (changed value, changed table and unknown name caught; --write restores)"

# values.csv of a study and include blocks (results/README.md's marks)
mkdir -p "$tmp/r"
cat > "$tmp/I.md" <<'MD'
<!-- include:results/grad/fits.md -->
<!-- /include -->
MD
python3 tools/quotes.py --write "$tmp/I.md" >/dev/null
python3 tools/quotes.py --check "$tmp/I.md" >/dev/null
python3 - "$tmp/I.md" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("|", s.index("\n") + 1)
j = next(k for k in range(i, len(s)) if s[k].isdigit())
s = s[:j] + ("1" if s[j] != "1" else "2") + s[j + 1:]
open(p, "w").write(s)
PY
if python3 tools/quotes.py --check "$tmp/I.md" 2>"$tmp/err"; then
    echo "test_quotes: an edited included table passed the check" >&2; exit 1
fi
grep -q "block 'include:results/grad/fits.md' differs" "$tmp/err"
if [ -f results/multi30k_full/values.csv ]; then
    name=$(awk -F, 'NR == 2 {print $1}' results/multi30k_full/values.csv)
    val=$(awk -F, 'NR == 2 {print $2}' results/multi30k_full/values.csv)
    printf '<!--q:multi30k_full.%s-->%s<!--/q-->\n' "$name" "$val" > "$tmp/V.md"
    python3 tools/quotes.py --check "$tmp/V.md" >/dev/null
    printf '<!--q:multi30k_full.%s-->%s1<!--/q-->\n' "$name" "$val" > "$tmp/V.md"
    if python3 tools/quotes.py --check "$tmp/V.md" 2>"$tmp/err"; then
        echo "test_quotes: an edited study value passed the check" >&2; exit 1
    fi
fi
# a committed table edited by hand no longer matches its summarising step
cp -r results "$tmp/results"
f=$tmp/results/grad/fits.md
python3 - "$f" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("\n", s.index("\n") + 1)   # past the header and its rule
j = next(k for k in range(i, len(s)) if s[k].isdigit())
s = s[:j] + ("1" if s[j] != "1" else "2") + s[j + 1:]
open(p, "w").write(s)
PY
if RESULTS=$tmp/results bash tools/check_summaries.sh "${BUILD:-build}" >/dev/null 2>"$tmp/err"; then
    echo "test_quotes: a hand-edited table passed check_summaries" >&2; exit 1
fi
grep -q "grad/fits.md differs" "$tmp/err"
# a grad and a demo number quoted in results/README.md, edited by hand, fail the check
for mark in grad.depth.theorem.pre.all_L demo.loss_post; do
    cp results/README.md "$tmp/RR.md"
    sed -i "s|<!--q:$mark-->[^<]*<!--/q-->|<!--q:$mark-->-0.50 ± 0.03<!--/q-->|" "$tmp/RR.md"
    if python3 tools/quotes.py --check "$tmp/RR.md" 2>"$tmp/err"; then
        echo "test_quotes: an edited quote of $mark passed the check" >&2; exit 1
    fi
    grep -q "$mark' reads '-0.50 ± 0.03'" "$tmp/err"
done
# values.csv and a LaTeX table edited by hand no longer match their summaries, and a
# stale file (written by no summary) is named
rm -rf "$tmp/results" && cp -r results "$tmp/results"
sed -i '2s/,.*/,9.99/' "$tmp/results/demo/values.csv"
printf '%% edited\n' >>"$tmp/results/grad/fits.tex"
printf 'old\n' >"$tmp/results/hessian/old_table.md"
if RESULTS=$tmp/results bash tools/check_summaries.sh "${BUILD:-build}" >/dev/null 2>"$tmp/err"; then
    echo "test_quotes: hand-edited values.csv and .tex passed check_summaries" >&2; exit 1
fi
grep -q "demo/values.csv differs" "$tmp/err"
grep -q "grad/fits.tex differs" "$tmp/err"
grep -q "hessian/old_table.md: committed, but neither raw rows nor written" "$tmp/err"
echo "test_quotes: passed (study values, includes and re-made summaries checked)"
