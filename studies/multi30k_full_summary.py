#!/usr/bin/env python3
"""Summary of studies/multi30k_full.sh, from its files only.

usage: multi30k_full_summary.py [DIR]     (DIR: results/multi30k_full)

Reads DIR/d{d}_{pos}_s{seed}_eigs.csv (lnkit eigs --which both) and their
sidecars (and DIR/runs.csv for the time per product) and writes DIR/summary.md,
DIR/runs.md and DIR/ratios.md (its two tables, which results/README.md
includes), DIR/trend.csv, DIR/trend_points.csv, DIR/trend.gp (-> trend.png, rendered by
studies/multi30k_full.sh), DIR/values.csv (the numbers results/README.md
quotes) and DIR/claims.csv (rows of its citation table), each CSV with a
.meta.json sidecar by lnkit's one writer (`lnkit meta`, build/bin/lnkit or $LNKIT):
  - per run: the largest and the most negative eigenvalue, their residuals,
    whether each converged (lnkit's explicit residual test), products;
  - per width: the Post/Pre ratios of the top eigenvalue and of the bottom
    eigenvalue's magnitude, over the seeds whose Post and Pre values both
    converged (mean, sample sd, count; unconverged pairs are left out and
    counted);
  - the trend: a weighted least-squares fit of log(ratio) against log(d) over
    the widths below d = 512 with 2 or more converged seeds (3 widths needed),
    with the slope's standard error and chi^2/dof, and its prediction at
    d = 512 against the measured ratio there (in standard errors of the
    prediction);
  - the check of -k 1 (DIR/k1_check/, if there): runs with the extremes only
    (-k 1: the same Krylov space, stopped once the top and bottom eigenvalue
    converge) against the -k 5 runs of the same width, norm and seed: the
    largest relative difference of the two extremes and the products of each.
Standard library only.
"""
import csv
import glob
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
import sidecar  # noqa: E402  (studies/kit/sidecar.py: lnkit meta, the one sidecar writer)

NAME = re.compile(r"d(\d+)_(post|pre)_s(\d+)_eigs\.csv$")


def load(dirpath):
    runs = {}
    for path in sorted(glob.glob(os.path.join(dirpath, "d*_eigs.csv"))):
        m = NAME.search(os.path.basename(path))
        if not m:
            continue
        d, pos, seed = int(m.group(1)), m.group(2), int(m.group(3))
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        top = [r for r in rows if r["which"] == "top" and r["index"] == "0"]
        bot = [r for r in rows if r["which"] == "bottom" and r["index"] == "0"]
        if not top or not bot:
            raise SystemExit(f"multi30k_full_summary: {path}: no top 0 / bottom 0 row")
        with open(os.path.splitext(path)[0] + ".meta.json") as f:
            meta = json.load(f)
        runs[(d, pos, seed)] = dict(
            top=float(top[0]["eigenvalue"]), top_res=float(top[0]["residual"]),
            top_conv=top[0]["converged"] == "1",
            bot=float(bot[0]["eigenvalue"]), bot_res=float(bot[0]["residual"]),
            bot_conv=bot[0]["converged"] == "1",
            products=int(meta.get("products_total", meta.get("hvp_products", 0))),
            k=int(meta.get("k", 0)),
            n_params=int(meta.get("block_size", 0)), steps=meta.get("steps"))
    return runs


def check_k1(dirpath, runs):
    """(check run, main run) pairs of DIR/k1_check/ whose main run is in runs."""
    sub = os.path.join(dirpath, "k1_check")
    if not os.path.isdir(sub):
        return []
    pairs = []
    for key, c in sorted(load(sub).items()):
        if key not in runs:
            raise SystemExit(f"multi30k_full_summary: k1_check/d{key[0]}_{key[1]}_s{key[2]}: "
                             "no run of the same width, norm and seed to compare with")
        c["path"] = os.path.join(sub, f"d{key[0]}_{key[1]}_s{key[2]}_eigs.csv")
        pairs.append((c, runs[key]))
    return pairs


def mean_sd(xs):
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    mu = sum(xs) / n
    sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1)) if n > 1 else float("nan")
    return mu, sd


def wls(xs, ys, ses):
    """y = a + b x with weights 1/se^2: (a, b, se_b, chi2/dof, cov)."""
    w = [1 / s ** 2 for s in ses]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs))
    sy = sum(wi * y for wi, y in zip(w, ys))
    sxx = sum(wi * x * x for wi, x in zip(w, xs))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    det = sw * sxx - sx * sx
    b = (sw * sxy - sx * sy) / det
    a = (sy - b * sx) / sw
    chi2 = sum(wi * (y - a - b * x) ** 2 for wi, x, y in zip(w, xs, ys))
    dof = len(xs) - 2
    return a, b, math.sqrt(sw / det), (chi2 / dof if dof > 0 else float("nan")), \
        (sxx / det, -sx / det, sw / det)


TARGET = 512  # the full size: the trend over the smaller widths is predicted here


def pm(mu, sd):
    """mean +- sd with the mean rounded where the sd's second significant figure is."""
    if not math.isfinite(sd) or sd <= 0:
        return f"{mu:.4g}"
    k = max(0, 1 - int(math.floor(math.log10(sd))))
    return f"{mu:.{k}f} ± {sd:.{k}f}"


def ratios(runs, d, key, conv):
    """Post/Pre ratios of one width over the seeds with both runs finished:
    (ratios of the seeds where both converged, count left out)."""
    f = (lambda x: x) if key == "top" else abs
    rs, left = [], 0
    for s in sorted({k[2] for k in runs if k[0] == d}):
        a, b = runs.get((d, "post", s)), runs.get((d, "pre", s))
        if not a or not b:
            continue
        if a[conv] and b[conv]:
            rs.append(f(a[key]) / f(b[key]))
        else:
            left += 1
    return rs, left


def fit_trend(pts):
    """log(ratio) = a + b log(d), weighted by the seed spread of log(ratio) at each d."""
    xs = [math.log(d) for d, _ in pts]
    ns = [len(rs) for _, rs in pts]
    ys, sds = zip(*(mean_sd([math.log(r) for r in rs]) for _, rs in pts))
    ses = [max(sd / math.sqrt(n), 1e-12) for sd, n in zip(sds, ns)]
    a, b, seb, chi, (vaa, vab, vbb) = wls(xs, ys, ses)
    x0 = math.log(TARGET)
    # one seed's scatter about its width's mean (pooled over the fitted widths): a
    # measured point from m seeds is compared with sqrt(sep^2 + sd_seed^2 / m)
    sd_seed = math.sqrt(sum((n - 1) * sd ** 2 for sd, n in zip(sds, ns)) / sum(n - 1 for n in ns))
    return dict(a=a, b=b, seb=seb, chi=chi, pred=a + b * x0,
                sep=math.sqrt(vaa + 2 * vab * x0 + vbb * x0 * x0), sd_seed=sd_seed)


def write_atomic(path, text):
    with open(path + ".tmp", "w", newline="") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def csv_text(header, rows):
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


GP = """# gnuplot script written by studies/multi30k_full_summary.py: the Post/Pre ratios
# of the extreme Hessian eigenvalues against width (trend.csv, trend_points.csv)
set terminal pngcairo size 900,560 noenhanced
set output 'trend.png'
set datafile separator ','
set logscale xy
set xrange [24:700]
set xtics (32, 64, 128, 256, 512)
set xlabel 'width d (h = max(1, d/64), d_ff = 4d, 6-6 encoder-decoder, all 1014 pairs)'
set ylabel 'Post-LN / Pre-LN'
set title 'Multi30k, Xavier init: Post/Pre ratio of the extreme Hessian eigenvalues (points: seeds; bars: mean ± sd)'
set key top left
set ytics (0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8)
set grid ytics
plot 'trend_points.csv' using (strcol(1) eq 'top' ? $2 * 0.97 : 1/0):3 skip 1 with points pt 7 ps 0.6 lc rgb '#1f77b4' title 'top, one seed', \\
     'trend_points.csv' using (strcol(1) eq 'bot' ? $2 * 1.03 : 1/0):3 skip 1 with points pt 5 ps 0.6 lc rgb '#d62728' title 'abs(bottom), one seed', \\
     'trend.csv' using (strcol(1) eq 'top' && $3 > 1 ? $2 * 0.97 : 1/0):4:($4 - $5):($4 + $5) skip 1 with yerrorbars pt 6 ps 1.4 lc rgb '#1f77b4' title 'top, mean ± sd', \\
     'trend.csv' using (strcol(1) eq 'bot' && $3 > 1 ? $2 * 1.03 : 1/0):4:($4 - $5):($4 + $5) skip 1 with yerrorbars pt 4 ps 1.4 lc rgb '#d62728' title 'abs(bottom), mean ± sd'%s
"""


def main(argv):
    dirpath = argv[0] if argv else "results/multi30k_full"
    run = sidecar.Run()
    runs = load(dirpath)
    if not runs:
        print(f"multi30k_full_summary: no runs in {dirpath}", file=sys.stderr)
        return 2
    widths = sorted({k[0] for k in runs})
    runinfo = {}
    rp = os.path.join(dirpath, "runs.csv")
    if os.path.exists(rp):
        with open(rp, newline="") as f:
            for r in csv.DictReader(f):
                runinfo[r["run"]] = r
    values, claims = [], []
    out = ["# Multi30k 6-6 encoder-decoder at initialisation: extreme Hessian eigenvalues",
           "",
           "Generated by `studies/multi30k_full_summary.py` from the CSVs beside it "
           "(`lnkit eigs --which both`, one Krylov space per run; Xavier init; all Multi30k "
           "validation pairs; h = max(1, d/64), d_ff = 4d). A value counts as converged when "
           "lnkit's explicit residual ||Hv - lv|| <= tol max|l| (tol 1e-6).", "",
           ]
    tab_runs = ["| d | pos | seed | k | params | products | s/product | hours | top | top residual "
                "| conv | bottom | bottom residual | conv |",
                "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|---|"]
    for (d, pos, seed), r in sorted(runs.items()):
        tag = f"d{d}_{pos}_s{seed}"
        ri = runinfo.get(tag, {})
        spp = ri.get("seconds_per_product", "")
        hrs = ri.get("estimated_hours", "")
        # each run's numbers, for prose about a single run (e.g. the full size)
        values += [(f"run.{tag}.top", f"{r['top']:.6g}"), (f"run.{tag}.bottom", f"{r['bot']:.6g}"),
                   (f"run.{tag}.top_residual", f"{r['top_res']:.2g}"),
                   (f"run.{tag}.bottom_residual", f"{r['bot_res']:.2g}"),
                   (f"run.{tag}.converged", "both" if r["top_conv"] and r["bot_conv"] else
                    "not both"), (f"run.{tag}.products", str(r["products"]))]
        values += [(f"run.{tag}.{c}", v) for c, v in (("seconds_per_product", spp),
                                                      ("estimated_hours", hrs)) if v]
        tab_runs.append(f"| {d} | {pos} | {seed} | {r['k']} | {r['n_params']} | {r['products']} | {spp} | {hrs} "
                   f"| {r['top']:.6g} | {r['top_res']:.2g} | {'yes' if r['top_conv'] else 'no'} "
                   f"| {r['bot']:.6g} | {r['bot_res']:.2g} | {'yes' if r['bot_conv'] else 'no'} |")
    out += tab_runs
    n_conv = sum(r["top_conv"] + r["bot_conv"] for r in runs.values())
    values += [("runs", str(len(runs))), ("extremes_converged", str(n_conv)),
               ("extremes", str(2 * len(runs)))]
    out += ["", "Post/Pre ratios per width (seeds with both values converged; mean ± sample sd "
            "over seeds, the mean rounded at the sd's second figure):",
            ""]
    tab_ratio = ["| d | top ratio | n | left out | abs(bottom) ratio | n | left out |",
                 "|--:|--:|--:|--:|--:|--:|--:|"]
    trend, points = {}, []
    for d in widths:
        line = [str(d)]
        for key, conv in (("top", "top_conv"), ("bot", "bot_conv")):
            rs, left = ratios(runs, d, key, conv)
            mu, sd = mean_sd(rs)
            txt = pm(mu, sd) if len(rs) > 1 else (f"{mu:.4g}" if rs else "-")
            line += [txt, str(len(rs)), str(left)]
            trend[(d, key)] = rs
            points += [(key, d, r) for r in rs]
            if rs:
                values.append((f"{key}_ratio_d{d}", txt))
                values.append((f"{key}_ratio_d{d}_n", str(len(rs))))
            if len(rs) > 1:
                claims.append((f"Post-LN/Pre-LN ratio of the {'top' if key == 'top' else 'abs(bottom)'} "
                               f"Hessian eigenvalue at d = {d}",
                               f"{txt} (mean ± sd over {len(rs)} seeds, {left} left out)",
                               f"Multi30k 6-6 enc-dec, d = {d}, all 1014 pairs, Xavier init, "
                               "converged extremes (tol 1e-6)",
                               f"d{d}_*_eigs.csv"))
        tab_ratio.append("| " + " | ".join(line) + " |")
    out += tab_ratio
    if points:
        values += [("ratios_above_1", f"{sum(r > 1 for _, _, r in points)} of {len(points)}"),
                   ("ratio_min", f"{min(r for _, _, r in points):.2f}")]
    write_atomic(os.path.join(dirpath, "trend.csv"), csv_text(
        ["quantity", "d", "n", "mean_ratio", "sd_ratio"],
        [[key, d, len(rs), f"{mean_sd(rs)[0]:.17g}", f"{mean_sd(rs)[1]:.17g}"]
         for (d, key), rs in sorted(trend.items(), key=lambda kv: (kv[0][1], kv[0][0])) if rs]))
    write_atomic(os.path.join(dirpath, "trend_points.csv"), csv_text(
        ["quantity", "d", "ratio"],
        [[q, d, f"{r:.17g}"] for q, d, r in sorted(points)]))
    out += ["", "In `trend.csv` (per width) and `trend_points.csv` (per seed), quantity `top` is "
            "the top eigenvalue's ratio and `bot` the abs(bottom) ratio; `trend.png` draws them.", ""]
    checks = check_k1(dirpath, runs)
    if checks:
        worst = max(max(abs(c["top"] - r["top"]) / abs(r["top"]),
                        abs(c["bot"] - r["bot"]) / abs(r["bot"])) for c, r in checks)
        share = [c["products"] / r["products"] for c, r in checks]
        conv = all(c["top_conv"] and c["bot_conv"] for c, _ in checks)
        values += [("k1_check_runs", str(len(checks))),
                   ("k1_check_max_rel", f"{worst:.2g}"),
                   ("k1_check_products", ", ".join(f"{c['products']} against {r['products']}"
                                                   for c, r in checks)),
                   ("k1_check_share", f"{min(share):.2f}-{max(share):.2f}"),
                   ("k1_check_converged", "all" if conv else "not all")]
        out += [f"Check of -k 1 (`k1_check/`): {len(checks)} runs with the extremes only against "
                f"the -k {checks[0][1]['k']} runs of the same width, norm and seed: largest relative "
                f"difference of the top or bottom eigenvalue {worst:.2g}; products "
                f"{min(share):.2f}-{max(share):.2f} of theirs; extremes converged: "
                f"{'all' if conv else 'not all'}.", ""]
    fits = []
    for key, label in (("top", "top eigenvalue"), ("bot", "abs(bottom eigenvalue)")):
        pts = [(d, trend[(d, key)]) for d in widths
               if d < TARGET and len(trend[(d, key)]) >= 2]
        if len(pts) < 3:
            txt = (f"Trend of the {label} ratio: {len(pts)} width(s) below d = {TARGET} with 2 or "
                   "more converged seeds so far; a fit needs 3 (its chi^2 needs one degree of "
                   "freedom), so none is made yet.")
            values.append((f"{key}_trend", "not fitted yet"))
            out += [txt, ""]
            continue
        ft = fit_trend(pts)
        rng = f"d = {pts[0][0]}-{pts[-1][0]}"
        txt = (f"Trend of the {label} ratio over {rng}: ratio ~ d^b with b = {ft['b']:.3f} ± "
               f"{ft['seb']:.3f} (chi^2/dof {ft['chi']:.2g}); predicted at d = {TARGET}: "
               f"{math.exp(ft['pred']):.3g} (x/ {math.exp(ft['sep']):.3g})")
        values += [(f"{key}_trend_b", f"{ft['b']:.3f} ± {ft['seb']:.3f}"),
                   (f"{key}_trend_b_z", f"{ft['b'] / ft['seb']:.1f}"),
                   (f"{key}_trend_chi2", f"{ft['chi']:.2g}"),
                   (f"{key}_trend_pred", f"{math.exp(ft['pred']):.3g}"),
                   (f"{key}_trend_pred_f", f"{math.exp(ft['sep']):.3g}"),
                   (f"{key}_trend_range", rng)]
        meas = trend.get((TARGET, key), [])
        if meas:
            m = mean_sd([math.log(r) for r in meas])[0]
            z = (m - ft["pred"]) / ft["sep"]
            z_all = (m - ft["pred"]) / math.sqrt(ft["sep"] ** 2 + ft["sd_seed"] ** 2 / len(meas))
            txt += (f"; measured {math.exp(m):.3g} from {len(meas)} seed(s), {z:+.1f} standard "
                    f"errors of the prediction from it, {z_all:+.1f} with the scatter of "
                    f"{len(meas)} seed(s) about a width's mean added (one seed: x/ "
                    f"{math.exp(ft['sd_seed']):.3g}, pooled over the fitted widths).")
            values += [(f"{key}_trend_meas", f"{math.exp(m):.3g}"),
                       (f"{key}_trend_meas_sigma", f"{z:+.1f}"),
                       (f"{key}_trend_meas_sigma_all", f"{z_all:+.1f}"),
                       (f"{key}_trend_seed_f", f"{math.exp(ft['sd_seed']):.3g}")]
        else:
            txt += f"; not measured (converged) at d = {TARGET} yet."
        claims.append((f"Width exponent of the Post/Pre {label} ratio",
                       f"{ft['b']:.3f} ± {ft['seb']:.3f} (se), chi2/dof {ft['chi']:.2g}, {rng}",
                       "Multi30k 6-6 enc-dec, all pairs, Xavier init, converged extremes",
                       "trend.csv"))
        fits.append((key, ft, pts))
        out += [txt, ""]
    lines = ""
    for key, ft, _ in fits:
        col = "#1f77b4" if key == "top" else "#d62728"
        lines += (f", \\\n     [24:{TARGET}] exp({ft['a']!r} + {ft['b']!r} * log(x)) with lines "
                  f"dt 2 lc rgb '{col}' title 'fit ({'top' if key == 'top' else 'abs(bottom)'}), "
                  f"d^{ft['b']:.2f}'")
    write_atomic(os.path.join(dirpath, "trend.gp"), GP % lines)
    write_atomic(os.path.join(dirpath, "summary.md"), "\n".join(out).rstrip("\n") + "\n")
    write_atomic(os.path.join(dirpath, "runs.md"), "\n".join(tab_runs) + "\n")
    write_atomic(os.path.join(dirpath, "ratios.md"), "\n".join(tab_ratio) + "\n")
    write_atomic(os.path.join(dirpath, "values.csv"), csv_text(["name", "value"], values))
    write_atomic(os.path.join(dirpath, "claims.csv"),
                 csv_text(["claim", "value", "setting", "file"], claims))
    # each CSV's sidecar by lnkit's one writer: the files read, with checksums
    inputs = []
    for d, pos, seed in sorted(runs):
        base = os.path.join(dirpath, f"d{d}_{pos}_s{seed}_eigs")
        inputs += [base + ".csv", base + ".meta.json"]
    if os.path.exists(rp):
        inputs.append(rp)
    for c, _ in checks:
        inputs += [c["path"], os.path.splitext(c["path"])[0] + ".meta.json"]
    for name, what in (("trend.csv", "Post/Pre ratios per width: mean, sd, count"),
                       ("trend_points.csv", "Post/Pre ratios per width and seed"),
                       ("values.csv", "numbers quoted by results/README.md"),
                       ("claims.csv", "rows of the citation table of results/README.md")):
        run.write(os.path.join(dirpath, name), inputs=inputs,
                  extra=dict(file=name, what=what, program="studies/multi30k_full_summary.py",
                             tol=1e-6, fit_below_d=TARGET))
    print(f"multi30k_full_summary: {len(runs)} runs -> {dirpath}/summary.md, trend.csv, "
          "trend_points.csv, trend.gp, values.csv, claims.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
