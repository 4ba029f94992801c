"""The gradient study's headline fits over its settings (results/grad_factorial):
depth_V<V>_<tied|untied>.csv and width_V<V>_<tied|untied>.csv (grad_norms rows).
A cell is task x output x V x setting x statistic; in each, four power laws of
the last block's ||dL/dW2||_F fitted to the per-seed values (stats.fit_power):
pre_L (Pre-LN against L, Theorem 1: -1/2), post_L (Post-LN against L: flat),
post_d (Post-LN against d: grad/'s 1/2), pre_d (Pre-LN against d: at most the
log-log slope of d sqrt(ln d)), and d_diff = pre_d - post_d.  Across cells: the
mean of the cells' slopes with its t interval (the cells as replicates of the
settings)."""
import glob
import math
import os
from collections import defaultdict

import numpy as np

from . import plots
from . import stats as S
from .writer import SummaryError, Summary, fnum, read, sidecar_of

STATS = {"nom": "w2_norm_of_mean", "mn": "w2_mean_norm"}
MARGIN = 0.1
Q = {  # quantity: (sweep, norm_pos, text, words)
    "pre_L": ("depth", "pre", "Pre-LN slope in L",
              ("shallower than -1/2", "steeper than -1/2", "equal to -1/2")),
    "post_L": ("depth", "post", "Post-LN slope in L", ("grows", "shrinks", "flat")),
    "post_d": ("width", "post", "Post-LN exponent in d",
               ("above 1/2", "below 1/2", "equal to 1/2")),
    "pre_d": ("width", "pre", "Pre-LN exponent in d",
              ("above the bound's", "below the bound's", "equal to the bound's")),
    "d_diff": (None, None, "Pre-LN minus Post-LN exponent in d", ("larger", "smaller", "equal")),
}
SHORT = {"equal": "=", "flat": "=", "not": "?", "grows": "+", "shrinks": "-", "above": "+",
         "below": "-", "larger": "+", "smaller": "-", "shallower": "+", "steeper": "-"}


def summarise(study, d):
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "depth_V*_*.csv")) +
                   glob.glob(os.path.join(d, "width_V*_*.csv")))
    if not files:
        raise SummaryError(f"{d}: no depth_V*_*.csv / width_V*_*.csv")
    obs = defaultdict(list)   # (task, output, V, setting, sweep, pos) -> [(x, row)]
    for f in files:
        sweep, out_ = f.split("_")[0], f.split("_")[2][:-4]
        for r in read(d, f, ("task", "setting", "norm_pos", "L", "d", "V", "seed") +
                      tuple(STATS.values())):
            obs[(r["task"], out_, int(r["V"]), r["setting"], sweep, r["norm_pos"])].append(
                (int(r["L"] if sweep == "depth" else r["d"]), r))
    m = sidecar_of(d, files[0])
    mw = sidecar_of(d, next(f for f in files if f.startswith("width")))
    ds = sorted({x for k, v in obs.items() if k[4] == "width" for x, _ in v})
    Ls = sorted({x for k, v in obs.items() if k[4] == "depth" for x, _ in v})
    b = np.log(ds)
    bound = float(np.polyfit(b, b + 0.5 * np.log(np.log(ds)), 1)[0])
    ref = {"pre_L": -0.5, "post_L": 0.0, "post_d": 0.5, "pre_d": bound, "d_diff": 0.0}
    out = Summary(study, d, "The gradient study's headlines over its settings (factorial)", (
        f"grad_norms sweeps, last block's ||dL/dW2||_F: depth L = {Ls[0]}-{Ls[-1]} at d = "
        f"{m['d']} (B = {m['B']}), width d = {ds[0]}-{ds[-1]} at L = {mw['L']} (B = "
        f"{mw['B']}), T = {m['T']}, {m['batches']} batches, {m['seeds']} seeds; tasks cls and "
        "lm, output tied or untied, V = 64 and 256, theorem and realistic settings (as grad/); "
        "statistics: norm of the mean gradient (nom) and mean of the per-batch norms (mn)"),
        "make study-grad-factorial", files, "factorial")
    cells = sorted({k[:4] for k in obs})
    fits, rows, table = {}, [], []
    for c in cells:
        for st, col in STATS.items():
            for q, (sweep, pos, _, _) in Q.items():
                if sweep is None:
                    fits[c + (st, q)] = S.diff_of(fits[c + (st, "pre_d")].slope,
                                                  fits[c + (st, "post_d")].slope)
                    continue
                pts = obs.get(c + (sweep, pos))
                if not pts:
                    raise SummaryError(f"{d}: cell {'/'.join(map(str, c))}: no {sweep} rows "
                                       f"for {pos}-LN")
                fits[c + (st, q)] = S.fit_power([x for x, _ in pts],
                                                [fnum(r, col, d) for _, r in pts])
            cellrow = list(c) + [st]
            for q, (_, _, _, w) in Q.items():
                f = fits[c + (st, q)]
                e = getattr(f, "slope", f)
                word = S.verdict(e, ref[q], MARGIN, *w)
                cellrow.append(f"{S.ci(e)} {SHORT[word.split()[0].rstrip(',')]}")
                rows.append(list(c) + [st, q, e.value, e.se, e.dof, e.lo, e.hi,
                                       getattr(f, "chi2dof", math.nan), ref[q], word])
            table.append(cellrow)
    out.csv("fits.csv", ["task", "output", "V", "setting", "statistic", "quantity", "slope",
                         "se", "dof", "ci_lo", "ci_hi", "chi2dof", "reference", "verdict"], rows,
            "per cell, statistic and quantity: the power-law slope, its 95% CI and verdict")
    out.value("bound_slope", f"{bound:.2f}")
    out.table("factorial", "Slopes [95% CI] of every cell (task, output, V, setting, "
              "statistic), with the verdict against the reference (margin 0.1): = equal / "
              "flat, + above, - below, ? not resolved. References: pre_L -1/2, post_L 0, "
              f"post_d 1/2, pre_d {bound:.2f} (d sqrt(ln d)), d_diff 0",
              ["task", "output", "V", "setting", "stat"] + list(Q), table, "lllll" + "r" * 5)
    headlines(out, fits, cells, ref)
    figure(out, fits, cells, ref)
    out.close()


def headlines(out, fits, cells, ref):
    """Per quantity and output: the mean over the cells' slopes (nom), and how
    many cells say what; counts per factor level for the prose."""
    groups = {"pre_L": ("tied", "untied"), "post_L": (None,), "post_d": ("tied", "untied"),
              "d_diff": ("tied", "untied"), "pre_d": (None,)}
    for q, outs in groups.items():
        _, _, text, w = Q[q]
        for o in outs:
            sel = [c for c in cells if o is None or c[1] == o]
            if len(sel) < 2:   # a factorial without this level: no mean over cells
                continue
            es = [getattr(fits[c + ("nom", q)], "slope", fits[c + ("nom", q)]) for c in sel]
            words = [S.verdict(e, ref[q], MARGIN, *w) for e in es]
            count = ", ".join(f"{k} in {words.count(k)}" for k in sorted(set(words)))
            tag = q + (f"_{o}" if o else "")
            out.claim(tag, f"{text}{', ' + o + ' output' if o else ''}: mean over "
                      f"{len(sel)} cells (norm of the mean)", S.mean_ci([e.value for e in es]),
                      "fits.csv", null=ref[q], margin=MARGIN, words=w,
                      how=f"t over the {len(sel)} cells' slopes; per cell: {count}")
            out.value(tag + ".cells", count)
            out.value(tag + ".positive", f"{sum(e.value > 0 for e in es)} of {len(es)}")
            out.value(tag + ".range", f"{min(e.value for e in es):.2f} to "
                                      f"{max(e.value for e in es):.2f}")
    for c in cells:
        for q in ("pre_L", "post_L", "post_d"):
            e = fits[c + ("nom", q)].slope
            out.value(f"{q}.{'.'.join(map(str, c))}", S.ci(e))


def figure(out, fits, cells, ref):
    fig, ax = plots.figure(4, w=2.2, h=3.4)
    for a, q in zip(ax, ("pre_L", "post_L", "post_d", "d_diff")):
        for i, c in enumerate(cells):
            e = getattr(fits[c + ("nom", q)], "slope", fits[c + ("nom", q)])
            col = "tab:purple" if c[1] == "tied" else "tab:orange"
            a.errorbar([e.value], [i], xerr=[[e.value - e.lo], [e.hi - e.value]], fmt="o",
                       color=col, ms=3, capsize=2)
        a.axvline(ref[q], color="k", lw=0.8)
        a.axvspan(ref[q] - MARGIN, ref[q] + MARGIN, color="0.9", zorder=0)
        a.set_title(q, fontsize=8)
        a.set_yticks(range(len(cells)))
        a.set_yticklabels(["/".join(map(str, c)) if a is ax[0] else "" for c in cells],
                          fontsize=6)
    ax[0].plot([], [], "o", color="tab:purple", label="tied output")
    ax[0].plot([], [], "o", color="tab:orange", label="untied output")
    fig.legend(loc="upper center", ncol=2, bbox_to_anchor=(0.5, 0.0))
    out.figure("factorial", "Slopes and 95% CIs of every cell (norm of the mean gradient): "
               "pre_L, post_L the Pre-LN and Post-LN slopes in L, post_d the Post-LN exponent "
               "in d, d_diff Pre-LN's minus Post-LN's exponent in d; line: the reference, grey: "
               "its margin +-0.1", fig)
