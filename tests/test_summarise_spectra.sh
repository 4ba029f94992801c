#!/usr/bin/env bash
# The summarising steps of hessian_spectrum and multi30k_hessian (--summarise DIR)
# against an independent recomputation (numpy) from the committed raw rows, and
# the rule that a Post/Pre comparison uses only seeds where both values converged:
#   - multi30k: the block residual/value median (all rows, Post-LN, Pre-LN), the
#     converged counts, the top eigenvalue's mean ± sd, the weighted depth slope of
#     Pre-LN's last decoder W2 and its se, recomputed from the CSVs;
#   - an eigenvalue marked unconverged leaves its seed out of the comparison (2 of 3)
#     and is flagged in per_seed.md; a block pair whose Pre-LN value is marked
#     converged enters the block comparisons (count + 1);
#   - hessian: a block marked unconverged leaves its pair out (30 -> 29);
#   - multi30k_full: the width fit, its prediction at d = 512 and the measured point's
#     distances from it, on made-up runs whose answer is known in closed form;
#   - a directory without raw rows: exit 2, one line, nothing written.
#   bash tests/test_summarise_spectra.sh [BUILD_DIR]      (PYTHON: a python3 with numpy)
set -euo pipefail
BUILD=${1:-${BUILD:-build}}
PYTHON=${PYTHON:-python3}
M=$BUILD/studies/multi30k_hessian
H=$BUILD/studies/hessian_spectrum
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_summarise_spectra: $*" >&2; exit 1; }
val() { awk -F, -v k="$2" '$1 == k { sub(/^[^,]*,/, ""); gsub(/"/, ""); print; exit }' "$1/values.csv"; }

cp -r results/multi30k "$tmp/multi30k"
"$M" --summarise "$tmp/multi30k" >/dev/null
"$PYTHON" - "$tmp/multi30k" <<'PY'
import csv, math, sys
import numpy as np
d = sys.argv[1]
vals = {r["name"]: r["value"] for r in csv.DictReader(open(f"{d}/values.csv"))}
blk = list(csv.DictReader(open(f"{d}/blocks.csv")))
rel = lambda rows: [float(r["residual"]) / abs(float(r["top_eigenvalue"])) for r in rows]
def pct(x): return f"{100 * x:.2g}%"
checks = [
    ("block_rel_median", pct(np.median(rel(blk)))),
    ("block_rel_median_post", pct(np.median(rel([r for r in blk if r["norm_pos"] == "post"])))),
    ("block_rel_median_pre", pct(np.median(rel([r for r in blk if r["norm_pos"] == "pre"])))),
    ("block_conv_pre", f"{sum(int(r['converged']) for r in blk if r['norm_pos'] == 'pre')} of 99"),
]
for k, want in checks:
    assert vals[k] == want, (k, vals[k], want)
# top eigenvalue, Post-LN: mean ± sd over the seeds where both converged
e = list(csv.DictReader(open(f"{d}/eigs.csv")))
top = {(r["norm_pos"], r["seed"]): (float(r["eigenvalue"]), int(r["converged"]))
       for r in e if r["which"] == "top" and r["index"] == "0"}
seeds = [s for s in "012" if top[("post", s)][1] and top[("pre", s)][1]]
x = np.array([top[("post", s)][0] for s in seeds])
m, sd = vals["top_post"].split(" ± ")
assert abs(float(m) - x.mean()) <= 0.5 * 10 ** -(len(m.split(".")[1]) if "." in m else 0) + 1e-12
assert abs(float(sd) - x.std(ddof=1)) <= 0.051 * float(sd), (sd, x.std(ddof=1))
# the weighted depth slope of Pre-LN's last decoder W2 (seed means, se = sd / sqrt(G))
g = list(csv.DictReader(open(f"{d}/grad.csv")))
Ls = sorted({int(r["L"]) for r in g if True})
Ls = [L for L in Ls if L in (6, 8, 10, 12, 14)]
y, se = [], []
for L in Ls:
    v = np.array([float(r["grad_norm"]) for r in g if r["norm_pos"] == "pre" and int(r["L"]) == L
                  and r["side"] == "dec" and int(r["layer"]) == L - 1 and r["tensor"] == "ffn.w2"])
    y.append(v.mean()); se.append(v.std(ddof=1) / math.sqrt(len(v)))
X, Y = np.log(Ls), np.log(y)
w = (np.array(y) / np.array(se)) ** 2
W = w.sum(); xm = (w * X).sum() / W; ym = (w * Y).sum() / W
b = (w * (X - xm) * (Y - ym)).sum() / (w * (X - xm) ** 2).sum()
a = ym - b * xm
chi2 = (w * (Y - a - b * X) ** 2).sum(); dof = len(Ls) - 2
seb = math.sqrt(1 / (w * (X - xm) ** 2).sum()) * max(1.0, math.sqrt(chi2 / dof))
sb, ss = vals["slope_pre"].split(" ± ")
assert abs(float(sb) - b) <= 0.0051 and abs(float(ss) - seb) <= 0.0051, (vals["slope_pre"], b, seb)
assert vals["chi2dof_pre"] == f"{chi2 / dof:.2f}", (vals["chi2dof_pre"], chi2 / dof)
print(f"multi30k recomputed: median {vals['block_rel_median']}, slope {b:.4f} ± {seb:.4f}")
PY

# an unconverged eigenvalue leaves its seed out of the comparison
cp -r results/multi30k "$tmp/m2"
"$PYTHON" - "$tmp/m2/eigs.csv" <<'PY'
import csv, sys
p = sys.argv[1]
rows = list(csv.reader(open(p)))
for r in rows[1:]:
    if r[0] == "pre" and r[1] == "1" and r[2] == "top" and r[3] == "0":
        r[6] = "0"
csv.writer(open(p, "w", newline=""), lineterminator="\n").writerows(rows)
PY
"$M" --summarise "$tmp/m2" >/dev/null
[ "$(val "$tmp/m2" top_seeds)" = "2 of 3" ] || fail "an unconverged Pre-LN top eigenvalue still compared: $(val "$tmp/m2" top_seeds)"
grep -q "(not converged)" "$tmp/m2/per_seed.md" || fail "per_seed.md does not flag the unconverged value"
[ "$(val "$tmp/m2" bottom_seeds)" = "3 of 3" ] || fail "the bottom eigenvalues lost a seed"
# a Pre-LN block value marked converged where Post-LN's is: one more pair compared
before=$(val "$tmp/m2" block_pairs)
"$PYTHON" - "$tmp/m2/blocks.csv" <<'PY'
import csv, sys
p = sys.argv[1]
rows = list(csv.reader(open(p)))
h = rows[0]; ip, is_, ib, ic = h.index("norm_pos"), h.index("seed"), h.index("block"), h.index("converged")
conv = {(r[ip], r[is_], r[ib]): r[ic] for r in rows[1:]}
for r in rows[1:]:
    if r[ip] == "pre" and r[ic] == "0" and conv[("post", r[is_], r[ib])] == "1":
        r[ic] = "1"
        break
csv.writer(open(p, "w", newline=""), lineterminator="\n").writerows(rows)
PY
"$M" --summarise "$tmp/m2" >/dev/null
after=$(val "$tmp/m2" block_pairs)
[ "${after%% *}" -eq $((${before%% *} + 1)) ] || fail "block pairs $before -> $after, expected one more"

# hessian: a block marked unconverged leaves its pair out
cp -r results/hessian "$tmp/h"
"$H" --summarise "$tmp/h" >/dev/null
n0=$(val "$tmp/h" block_pairs_compared)
sed -i '2s/,1$/,0/' "$tmp/h/blocks.csv"
"$H" --summarise "$tmp/h" >/dev/null
n1=$(val "$tmp/h" block_pairs_compared)
[ "$n1" -eq $((n0 - 1)) ] || fail "hessian: block pairs $n0 -> $n1 after marking one unconverged"
grep -q "| 2 of 3 |" "$tmp/h/blocks_table.md" || fail "hessian: blocks_table.md does not show 2 of 3"

# multi30k_full's width trend on made-up runs whose answer is known in closed form:
# log(Post/Pre) = 0.25 ln d ± 0.1 (two seeds) at d = 32, 64, 128, so the weighted fit
# (equal weights, se = 0.1) has slope 0.25 ± 0.1 / (sqrt 2 ln 2), chi^2 0, a pooled seed sd of
# 0.1 sqrt 2, and predicts ln r = 0.25 ln 512 with se 0.1 sqrt(29/6) (OLS: 1/3 +
# (x0 - mean x)^2 / Sxx, x = 5, 6, 7, x0 = 9 in units of ln 2). One seed at d = 512 is
# put 0.1 sqrt(41/6) above it: 1 se once one seed's scatter (0.1 sqrt 2) is added,
# sqrt(41/29) = 1.19 se of the prediction alone; the slope is 2.5 of its se (sqrt 2 ln 2 / 0.4).
mkdir "$tmp/full"
"$PYTHON" - "$tmp/full" <<'PY'
import json, math, sys
d = sys.argv[1]
def run(w, pos, seed, lam):
    with open(f"{d}/d{w}_{pos}_s{seed}_eigs.csv", "w") as f:
        f.write(f"which,index,eigenvalue,residual,converged\ntop,0,{lam!r},1e-9,1\n"
                f"bottom,0,{-lam!r},1e-9,1\n")
    json.dump({"k": 1, "products_total": 10, "block_size": 1000},
              open(f"{d}/d{w}_{pos}_s{seed}_eigs.meta.json", "w"))
for w in (32, 64, 128):
    for seed, e in ((0, 0.1), (1, -0.1)):
        run(w, "pre", seed, 10.0)
        run(w, "post", seed, 10.0 * math.exp(0.25 * math.log(w) + e))
run(512, "pre", 0, 10.0)
run(512, "post", 0, 10.0 * math.exp(0.25 * math.log(512) + 0.1 * math.sqrt(41 / 6)))
PY
LNKIT=$BUILD/bin/lnkit "$PYTHON" studies/multi30k_full_summary.py "$tmp/full" >/dev/null
for q in top bot; do
    for kv in "trend_b=0.250 ± 0.102" "trend_pred=4.76" "trend_pred_f=1.25" \
              "trend_seed_f=1.15" "trend_meas_sigma=+1.2" "trend_meas_sigma_all=+1.0" \
              "trend_meas=6.18" "trend_b_z=2.5"; do
        got=$(val "$tmp/full" "${q}_${kv%%=*}")
        [ "$got" = "${kv#*=}" ] || fail "multi30k_full: ${q}_${kv%%=*} = '$got', expected '${kv#*=}'"
    done
    chi=$(val "$tmp/full" "${q}_trend_chi2")
    awk -v c="$chi" 'BEGIN { exit !(c + 0 < 1e-12) }' || fail "multi30k_full: ${q}_trend_chi2 = $chi, expected 0"
done

# no raw rows: one line, exit 2, nothing written
mkdir "$tmp/empty"
for p in "$M" "$H"; do
    if "$p" --summarise "$tmp/empty" 2>"$tmp/err"; then fail "$p --summarise on an empty directory passed"; fi
    [ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "$p: expected one line, got: $(cat "$tmp/err")"
    [ -z "$(ls -A "$tmp/empty")" ] || fail "$p: left files in an empty directory: $(ls "$tmp/empty")"
done
echo "test_summarise_spectra: passed (medians, counts, mean ± sd and the weighted slope recomputed; unconverged values left out of comparisons; the multi30k_full width fit and its d = 512 comparison on a closed-form case; empty directory refused)"
