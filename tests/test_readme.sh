#!/usr/bin/env bash
# The README's command-line walk-through, run exactly as written: the fenced
# ```sh blocks marked <!-- test-readme: walk-through --> and (when the MPI
# build and mpirun are there) <!-- test-readme: mpi --> are extracted from
# README.md and run in order by one bash in an empty folder, with the clone
# seen at ~/lnkit (HOME is a temporary folder holding a link to it), under
# `set -euo pipefail`: the first command whose exit status is not 0 fails the
# test and is named.  Then the ```python block marked <!-- test-readme: python -->
# runs in the same folder as example.py, as the README says.  Then: every
# command of the tour ran (bash's trace against the block), every file it names
# as an output exists, the checkpoint was resumed to the uninterrupted bytes and
# removed, the results are what their commands promise, and the tour took at
# most ten minutes.
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
    echo 'exec {trace}>"$TRACE_FILE"; BASH_XTRACEFD=$trace; set -x'
    printf '%s\n' "$walk"
    echo 'set +x' 
    if [ $run_mpi = 1 ]; then printf '%s\n' "$mpi"; fi
} > "$T/walk.sh"
t0=$(date +%s)
if ! (cd "$T/work" && env HOME="$T/home" TRACE_FILE="$T/trace" bash -euo pipefail "$T/walk.sh") \
        >"$T/walk.log" 2>&1; then
    tail -n 15 "$T/walk.log" >&2
    fail "the walk-through stopped (see the line above)"
fi
walk_s=$(( $(date +%s) - t0 ))
# every command of the block ran: the first words of its commands (continuation
# lines joined, comments dropped) are a subsequence of those bash traced at top level
printf '%s\n' "$walk" > "$T/walk.block"
"${PYTHON:-python3}" - "$T/walk.block" "$T/trace" <<'PY' || fail "not every command of the walk-through ran"
import re, sys
cmds, line = [], ""
for raw in open(sys.argv[1]).read().splitlines():
    line += raw
    if line.endswith("\\"):
        line = line[:-1]
        continue
    line = re.sub(r"(^|\s)#.*", "", line).strip()
    if line:
        # a loop's keyword is not traced: its condition's command is
        words = re.split(r"[\s=]", re.sub(r"^(until|while|if)\s+", "", line), 1)
        cmds.append(words[0])
    line = ""
traced = [re.split(r"[\s=]", l[2:], 1)[0] for l in open(sys.argv[2]) if l.startswith("+ ")]
i = 0
for w in traced:
    if i < len(cmds) and w == cmds[i]:
        i += 1
if i < len(cmds):
    sys.exit(f"test-readme: command {i + 1} of the walk-through ({cmds[i]} ...) did not run")
print(f"test-readme: all {len(cmds)} commands of the walk-through ran")
PY
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
n_cmd=$(grep -c '^+ ' "$T/trace" || true)

# what the walk-through must have made: every file it names after -o, --nodes,
# --pairs, --density, --vectors or '>' (and a result's sidecar beside a CSV)
cd "$T/work"
outs=$(grep -oE '(-o|--output|--nodes|--pairs|--density|--vectors|--mass|>) +[A-Za-z0-9_.]+' \
           < <(sed 's/^#.*//; s/[[:space:]]#.*//' <<<"$walk") | awk '{print $2}' | sort -u)
[ "$(wc -l <<<"$outs")" -ge 20 ] || fail "found only $(wc -l <<<"$outs") outputs in the walk-through"
for f in $outs text.vocab w.json tw.json s2s.json m30k.src.vocab m30k.tgt.vocab; do
    [ -s "$f" ] || fail "the walk-through did not make $f"
done
for f in $(grep -oE -- '-o +[A-Za-z0-9_.]+\.csv' <<<"$walk" | awk '{print $2}'); do
    [ -s "${f%.csv}.meta.json" ] || fail "no sidecar ${f%.csv}.meta.json beside $f"
done
[ "$(wc -l < eigs.csv)" = 7 ] || fail "eigs.csv: expected 3 top and 3 bottom rows"
[ "$(wc -l < s2s_eigs.csv)" = 5 ] || fail "s2s_eigs.csv: expected 2 top and 2 bottom rows"
grep -q '"task": "seq2seq"' s2s.json || fail "s2s.json is not a seq2seq config"
grep -q '^lnkit eigs: resumed from [1-9][0-9]* products (checkpoint eigs.ckpt)$' "$T/walk.log" ||
    fail "the second eigs run of the checkpoint example did not resume (no 'resumed from')"
cmp -s eigs.csv eigs_resumed.csv || fail "the resumed eigs differs from the uninterrupted one"
for f in eigs.ckpt eigs.ckpt.basis; do [ ! -e "$f" ] || fail "$f left after the run completed"; done
grep -q '^resumed = uninterrupted, byte for byte$' "$T/walk.log" || fail "the tour's cmp line"
"$PY" - "$T/walk.log" <<'PY' || fail "the walk-through's results (above)"
import csv, json, math, sys
log = open(sys.argv[1]).read()
rows = lambda f: list(csv.DictReader(open(f)))
ev = {(r["quantity"], r["tensor"]): float(r["value"]) for r in rows("eval.csv")}
loss = ev[("loss", "")] if ("loss", "") in ev else next(v for (q, _), v in ev.items() if q == "loss")
assert math.isfinite(loss) and loss > 0, ("eval loss", loss)
js = []
for i in [0] + [k + 1 for k, c in enumerate(log) if c == "\n"]:
    if log.startswith("{", i):
        try:
            js.append(json.JSONDecoder().raw_decode(log, i)[0])
        except ValueError:
            pass
assert any("loss" in j and abs(j["loss"] - loss) <= 1e-12 * loss for j in js), "eval --json"
tr = next(j for j in js if "trace" in j)
assert math.isfinite(tr["trace"]) and tr["probes"] == 60, tr
for f in ("eigs.csv", "eigs_ggn.csv", "top_w2.csv", "s2s_eigs.csv"):
    for r in rows(f):
        assert r["converged"] in ("1", "true"), (f, r)
        assert float(r["residual"]) <= 1e-6 * 1e3, (f, r)
top = {r["which"]: float(r["eigenvalue"]) for r in rows("eigs.csv") if r["index"] == "0"}
assert top["top"] > 0 > top["bottom"], top
assert all(float(r["eigenvalue"]) >= -1e-8 for r in rows("eigs_ggn.csv")), "G is PSD"
d = rows("density.csv")
t, p = [float(r["t"]) for r in d], [float(r["density"]) for r in d]
area = sum((t[i + 1] - t[i]) * (p[i] + p[i + 1]) / 2 for i in range(len(t) - 1))
assert len(t) > 10 and abs(area - 1) < 1e-3, ("density area", area)
b = rows("blocks.csv")
assert [r["block"] for r in b] == ["dec.0.attn.wq", "dec.0.attn.wk", "dec.0.attn.wv",
                                   "dec.0.attn.wo", "dec.0.attn.wq,dec.0.attn.wk"], b
assert all(float(r["frob"]) >= 0 for r in b)
assert len(rows("blocks_js.csv")) == len(b) * (len(b) - 1) // 2, "one distance a pair"
PY
[ "$walk_s" -le 600 ] || fail "the ten-minute tour took $walk_s s"
if [ $run_mpi = 1 ]; then
    python3 - <<'PY' || fail "mpirun eigs differs from one process"
import csv
a = [float(r["eigenvalue"]) for r in csv.DictReader(open("s2s_eigs.csv"))]
b = [float(r["eigenvalue"]) for r in csv.DictReader(open("s2s_eigs_mpi.csv"))]
assert len(a) == len(b) == 4, (a, b)
assert all(abs(x - y) <= 1e-10 * max(abs(y), 1e-300) for x, y in zip(a, b)), (a, b)
PY
    echo "test-readme: passed: walk-through ($n_cmd commands, $walk_s s, outputs checked), the Python example and the MPI block (2 ranks = 1 process to 1e-10)"
else
    echo "test-readme: passed: walk-through ($n_cmd commands, $walk_s s, outputs checked) and the Python example; MPI block SKIPPED (no build-mpi/bin/lnkit or mpirun: make MPI=1)"
fi
