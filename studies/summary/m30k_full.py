"""The Multi30k reference experiment at full size and its width trend
(studies/multi30k_full.sh): d{d}_{pos}_s{seed}_eigs.csv (lnkit eigs --which both)
with their sidecars, runs.csv, k1_check/.  Per width the Post/Pre ratios of the
top eigenvalue and of |bottom|, paired by seed; the width trend fitted to the
per-seed log ratios over the widths with 2 or more seeds; the single seed at
d = 512 against the trend's 95% prediction interval for one seed."""
import glob
import os
import re

from . import plots
from . import stats as S
from .writer import SummaryError, Summary, fnum, read, sidecar_of

RUN = re.compile(r"d(\d+)_(post|pre)_s(\d+)_eigs\.csv$")
TARGET = 512
REMAKE = ("bash studies/multi30k_full.sh --widths 32,64,128,256 --seeds 0,1,2 --k 5 --max-steps "
          "300 (d = 256: --k 1 --max-steps 120 after seed 0); then --widths 512 --k 1: "
          "the inputs in out/multi30k_full/ (lnkit batch, lnkit init) are remade by the same "
          "command, which skips the finished runs")


def load(d):
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "d*_eigs.csv"))):
        m = RUN.search(path)
        if not m:
            continue
        rows = read(d, os.path.basename(path), ("which", "index", "eigenvalue", "converged"))
        ex = {r["which"]: r for r in rows if r["index"] == "0"}
        if set(ex) != {"top", "bottom"}:
            raise SummaryError(f"{path}: no top 0 / bottom 0 row")
        meta = sidecar_of(d, os.path.basename(path))
        runs[(int(m.group(1)), m.group(2), int(m.group(3)))] = dict(
            ex=ex, k=meta.get("k"), n=meta.get("block_size"),
            products=meta.get("products_total", meta.get("hvp_products")))
    if not runs:
        raise SummaryError(f"{d}: no d*_eigs.csv")
    return runs


def summarise(study, d):
    runs = load(d)
    info = {r["run"]: r for r in read(d, "runs.csv", ("run", "seconds_per_product"))}
    raw = sorted(os.path.relpath(p, d) for p in glob.glob(os.path.join(d, "d*_eigs.csv")) +
                 glob.glob(os.path.join(d, "k1_check", "d*_eigs.csv"))) + ["runs.csv"]
    out = Summary(study, d, "Multi30k at full size and the width trend of Post/Pre", (
        "seq2seq 6-6 encoder-decoder, LayerNorm, Xavier init, h = max(1, d/64), d_ff = 4d, all "
        "1014 Multi30k De-En validation pairs; lnkit eigs --which both (top and bottom from one "
        "Krylov space), converged at explicit residual <= 1e-6 max|l|; 3 seeds at d = 32-256, "
        "1 at d = 512"), REMAKE, raw, "m30k_full")
    rows = []
    for (w, p, s), r in sorted(runs.items()):
        i = info.get(f"d{w}_{p}_s{s}", {})
        t, b = r["ex"]["top"], r["ex"]["bottom"]
        rows.append([w, p, s, r["k"], r["n"], r["products"], i.get("seconds_per_product", "-"),
                     S.num(fnum(t, "eigenvalue"), 6), S.num(fnum(t, "residual"), 2),
                     "yes" if t["converged"] == "1" else "no", S.num(fnum(b, "eigenvalue"), 6),
                     S.num(fnum(b, "residual"), 2), "yes" if b["converged"] == "1" else "no"])
    nconv = sum(r["ex"][k]["converged"] == "1" for r in runs.values() for k in ("top", "bottom"))
    out.value("extremes_converged", f"{nconv} of {2 * len(runs)}")
    out.table("runs", "Every run: width, norm position, seed, -k, parameters, products, seconds "
              "per product (last process), extremes with explicit residuals",
              ["d", "pos", "seed", "k", "params", "products", "s/product", "top", "residual",
               "conv", "bottom", "residual", "conv"], rows, "rlrrrrrrrlrrl")
    widths = sorted({k[0] for k in runs})
    per = {}   # (quantity, d) -> per-seed ratios
    for q, key, f in (("top", "top", lambda v: v), ("bot", "bottom", abs)):
        for w in widths:
            per[(q, w)] = [f(fnum(runs[(w, "post", s)]["ex"][key], "eigenvalue")) /
                           f(fnum(runs[(w, "pre", s)]["ex"][key], "eigenvalue"))
                           for s in sorted({k[2] for k in runs if k[0] == w})
                           if (w, "pre", s) in runs and (w, "post", s) in runs and all(
                               runs[(w, p, s)]["ex"][key]["converged"] == "1"
                               for p in ("post", "pre"))]
    table, claims_fit = [], {}
    for w in widths:
        row = [w]
        for q in ("top", "bot"):
            v = per[(q, w)]
            e = S.ratio_ci(v, [1.0] * len(v))
            row += [S.ci(e), S.verdict(e, 1, None, "larger", "smaller") if len(v) > 1 else "-",
                    len(v)]
            out.value(f"{q}_ratio_d{w}", S.ci(e))
        table.append(row)
    out.table("ratios", "Post-LN / Pre-LN ratio of the top eigenvalue and of |bottom| per width: "
              "geometric mean of the per-seed ratios [95% CI] (one seed: its ratio)",
              ["d", "top ratio", "verdict", "seeds", "|bottom| ratio", "verdict", "seeds"],
              table, "rrlrrlr")
    fitw = [w for w in widths if len(per[("top", w)]) >= 2 and len(per[("bot", w)]) >= 2]
    out.value("trend_range", f"d = {fitw[0]}-{fitw[-1]}")
    name = {"top": "top eigenvalue", "bot": "|bottom eigenvalue|"}
    for q in ("top", "bot"):
        f = S.fit_power([w for w in fitw for _ in per[(q, w)]],
                        [r for w in fitw for r in per[(q, w)]])
        claims_fit[q] = f
        g = S.fit_power([w for w in fitw[:-1] for _ in per[(q, w)]],
                        [r for w in fitw[:-1] for r in per[(q, w)]])
        out.value(f"{q}_trend_without_d{fitw[-1]}", S.ci(g.slope))
        out.fit_claim(f"{q}_trend", f"Width exponent of the Post/Pre ratio of the {name[q]}",
                      f, "d*_eigs.csv", "d", margin=0.1)
        if len(per[(q, TARGET)]) == 1:
            pr = S.predict(f, TARGET, one_seed=True)
            meas = per[(q, TARGET)][0]
            out.value(f"{q}_pred", S.ci(pr))
            out.value(f"{q}_meas", S.num(meas))
            out.value(f"{q}_meas_inside", "inside" if pr.lo < meas < pr.hi else "outside")
    out.csv("trend_points.csv", ["quantity", "d", "ratio"],
            [[q, w, r] for q in ("bot", "top") for w in widths for r in per[(q, w)]],
            "per-seed Post/Pre ratios (quantity bot: |bottom|)")
    k1(out, d, runs)
    fig, ax = plots.figure(2)
    for a, q in zip(ax, ("top", "bot")):
        plots.seeds(a, widths, [per[(q, w)] for w in widths], color="k", label="Post / Pre")
        plots.fit(a, claims_fit[q], "tab:green", f"fit d = {fitw[0]}-{fitw[-1]}: "
                  f"slope {S.ci(claims_fit[q].slope)}")
        plots.log_axes(a, widths)
        a.set_xlabel("width d")
        a.set_ylabel(f"Post-LN / Pre-LN, {name[q]}")
        a.legend(loc="lower right")
    out.figure("trend", "Post-LN / Pre-LN ratio of the Hessian's extremes against width "
               f"(Multi30k, 6-6). {plots.CAPTION}; d = 512 is one seed. Line: power-law fit to "
               f"the per-seed ratios over d = {fitw[0]}-{fitw[-1]}.", fig)
    out.close()


def k1(out, d, runs):
    """The check of -k 1: runs with the extremes only against the -k 5 runs."""
    sub = os.path.join(d, "k1_check")
    if not os.path.isdir(sub):
        return
    worst, prods = 0.0, []
    for key, c in sorted(load(sub).items()):
        if key not in runs:
            raise SummaryError(f"{sub}: d{key[0]}_{key[1]}_s{key[2]}: no run to compare with")
        for w in ("top", "bottom"):
            a, b = fnum(c["ex"][w], "eigenvalue"), fnum(runs[key]["ex"][w], "eigenvalue")
            worst = max(worst, abs(a - b) / abs(b))
        prods.append(f"{c['products']} against {runs[key]['products']}")
    out.value("k1_check_max_rel", S.num(worst, 2))
    out.value("k1_check_products", ", ".join(prods))
