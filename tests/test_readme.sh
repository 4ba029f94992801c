#!/usr/bin/env bash
# The README's command-line walk-through, run exactly as written: the fenced
# ```sh blocks marked <!-- test-readme: walk-through --> and (when the MPI
# build and mpirun are there) <!-- test-readme: mpi --> are extracted from
# README.md and run in order by one bash in an empty folder, with the clone
# seen at ~/lnkit (HOME is a temporary folder holding a link to it), under
# `set -euo pipefail`: the first command whose exit status is not 0 fails the
# test and is named.  Then the ```python block marked <!-- test-readme: python -->
# runs in the same folder as example.py, as the README says.  Then a few
# outputs are checked.
#
#   bash tests/test_readme.sh [BUILD_DIR]          (make test-readme)
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
ROOT=$PWD
T=$(mktemp -d /tmp/lnkit-readme.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "test-readme: FAILED: $*" >&2; exit 1; }
[ -x "$ROOT/bin/lnkit" ] || fail "bin/lnkit not built (make all)"

# the lines of the ```sh (or ```python) block after the marker <!-- test-readme: NAME -->
extract() {
    awk -v tag="<!-- test-readme: $1 -->" '
        $0 == tag { want = 1; next }
        want && /^```(sh|python)$/ { inside = 1; next }
        inside && /^```$/ { exit }
        inside { print }' README.md
}
walk=$(extract walk-through)
mpi=$(extract mpi)
[ -n "$walk" ] || fail "no walk-through block in README.md"
[ -n "$mpi" ] || fail "no mpi block in README.md"
run_mpi=0
if [ -x "$ROOT/build-mpi/bin/lnkit" ] && command -v mpirun >/dev/null; then run_mpi=1; fi

mkdir -p "$T/home" "$T/work"
ln -s "$ROOT" "$T/home/lnkit"
{
    echo 'set -E; trap '\''echo "test-readme: exit $? from: $BASH_COMMAND" >&2'\'' ERR'
    printf '%s\n' "$walk"
    if [ $run_mpi = 1 ]; then printf '%s\n' "$mpi"; fi
} > "$T/walk.sh"
if ! (cd "$T/work" && env HOME="$T/home" bash -euo pipefail "$T/walk.sh") >"$T/walk.log" 2>&1; then
    tail -n 15 "$T/walk.log" >&2
    fail "the walk-through stopped (see the line above)"
fi
# the Python example, saved as example.py in the same folder and run as the
# README says (PYTHONPATH=~/lnkit/python python3 example.py) with Debian's
# python3; the package finds the clone's build/liblnkit.so by itself
py=$(extract python)
[ -n "$py" ] || fail "no python block in README.md"
printf '%s\n' "$py" > "$T/work/example.py"
PY=${PYTHON:-/usr/bin/python3}
if ! (cd "$T/work" && env -u LNKIT_LIB HOME="$T/home" PYTHONPATH="$T/home/lnkit/python" \
        "$PY" example.py) >"$T/py.log" 2>&1; then
    tail -n 15 "$T/py.log" >&2
    fail "the Python example failed (see above)"
fi
grep -q '^post-LN top eigenvalues' "$T/py.log" && grep -q '^pre-LN top eigenvalues' "$T/py.log" ||
    fail "the Python example did not print both spectra"
"$PY" - "$T/work/density_postpre.csv" <<'PY' || fail "the Python example's density_postpre.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for pos in ("post", "pre"):
    t = [float(r["t"]) for r in rows if r["norm_pos"] == pos]
    p = [float(r["density"]) for r in rows if r["norm_pos"] == pos]
    area = sum((t[i + 1] - t[i]) * (p[i] + p[i + 1]) / 2 for i in range(len(t) - 1))
    assert len(t) > 10 and abs(area - 1) < 1e-6, (pos, len(t), area)
PY
n_cmd=$(grep -c '^lnkit\|^mpirun\|^head\|^printf' "$T/walk.sh" || true)

# what the walk-through must have made
cd "$T/work"
for f in w.json w.safetensors b.safetensors v.safetensors hv.safetensors eigs.csv eigs.meta.json \
         top_w2.csv density.csv nodes.csv text.safetensors text.vocab tw.json m30k.safetensors \
         m30k.src.vocab m30k.tgt.vocab s2s.json s2s_eigs.csv; do
    [ -s "$f" ] || fail "the walk-through did not make $f"
done
[ "$(wc -l < eigs.csv)" = 7 ] || fail "eigs.csv: expected 3 top and 3 bottom rows"
[ "$(wc -l < s2s_eigs.csv)" = 5 ] || fail "s2s_eigs.csv: expected 2 top and 2 bottom rows"
grep -q '"task": "seq2seq"' s2s.json || fail "s2s.json is not a seq2seq config"
if [ $run_mpi = 1 ]; then
    python3 - <<'PY' || fail "mpirun eigs differs from one process"
import csv
a = [float(r["eigenvalue"]) for r in csv.DictReader(open("s2s_eigs.csv"))]
b = [float(r["eigenvalue"]) for r in csv.DictReader(open("s2s_eigs_mpi.csv"))]
assert len(a) == len(b) == 4, (a, b)
assert all(abs(x - y) <= 1e-10 * max(abs(y), 1e-300) for x, y in zip(a, b)), (a, b)
PY
    echo "test-readme: passed: walk-through ($n_cmd commands), the Python example and the MPI block (2 ranks = 1 process to 1e-10)"
else
    echo "test-readme: passed: walk-through ($n_cmd commands) and the Python example; MPI block SKIPPED (no build-mpi/bin/lnkit or mpirun: make MPI=1)"
fi
