"""The placement study's extremes (part 1), Multi30k runs (part 6) and one-factor
variations (studies/summary/placements.py): each placement's extremes of H, G, F and
traces over the seeds, its ratio to Pre-LN paired by seed, power-law exponents in L
(d = 64) and in d (L = 6), from the per-seed values (stats.py)."""
import dataclasses

import matplotlib.pyplot as plt

from . import plots
from . import stats as S
from .placements_data import (DEPTHS, LOO_NOTE, NAME, PLACEMENTS, SEEDS, STYLE, VAR_NAME,
                              VARIATIONS, WIDTHS, design_leverage, ftxt, gmean, js0, nseeds_text,
                              power_fit, ratio, signed, txt, xiong)

REF = ("base", 6, 64)


def eigf(op, which):
    return lambda pt: pt.eig(op, which)


def tracef(op):
    return lambda pt: pt.get("trace", op)


MEASURES = (("H_top", "top of H", eigf("hessian", "top")),
            ("H_bottom", "|bottom of H|", eigf("hessian", "bottom")),
            ("G_top", "top of G", eigf("ggn", "top")),
            ("F_top", "top of F", eigf("functional", "top")),
            ("F_bottom", "|bottom of F|", eigf("functional", "bottom")),
            ("tr_H", "tr H", tracef("hessian")), ("tr_G", "tr G", tracef("ggn")),
            ("tr_F", "tr F", tracef("functional")))


def key(p, L, d, var="base", x=1.0):
    return (var, p, L, d, x)


def sratio(a, b):
    """Paired ratio of two signed series (of one sign each, the same): (Est or None, text)."""
    (x, sx), (y, sy) = signed(a), signed(b)
    if not x or not y:
        return None, "-"
    if sx == 0 or sy != sx:
        return None, "signs differ"
    e = ratio(x, y)
    return e, txt(e)


def sgm(a):
    """Signed geometric mean over seeds [95% CI] (text) of a series of one sign."""
    x, sg = signed(a)
    e = gmean(x) if sg else None
    if e is None:
        return "-" if not a else "signs differ"
    if sg < 0:
        e = dataclasses.replace(e, value=-e.value, lo=-e.hi, hi=-e.lo, log=False)
    return S.ci(e)


def sfit(pairs):
    """Power law of |y| over [(x, signed series)] where every value has one sign."""
    sg = {signed(v)[1] for _, v in pairs if v}
    if len(sg) != 1 or 0 in sg:
        return None
    return power_fit([(x, signed(v)[0]) for x, v in pairs])


def how(D, part, keys, n):
    """The claim's method: the seeds used, and those present but left out (an
    eigenvalue that did not converge)."""
    both = set.intersection(*(set(D.pts(part, k)) for k in keys))
    return (f"{nseeds_text(n)} paired by seed; {len(both) - n} of the {len(both)} present in "
            "both left out as unconverged")


def extremes(out, cl, D):
    """Part 1: the reference table, the exponent table, the figures, the claims; returns
    the ranking's entries."""
    file = "extremes/*.csv"
    ref = {m: {p: D.series("extremes", key(p, 6, 64), f) for p in PLACEMENTS}
           for m, _, f in MEASURES}
    rows = []
    for p in PLACEMENTS:
        row = [NAME[p], len(D.pts("extremes", key(p, 6, 64)))]
        for m, lab, _ in MEASURES:
            if p == "pre":
                row.append(sgm(ref[m]["pre"]))
                out.value(f"ref.pre.{m}", row[-1])
                continue
            e, t = sratio(ref[m][p], ref[m]["pre"])
            row.append(t)
            if m in ("H_top", "H_bottom"):
                cl.ratio(f"ref.{p}.{m}", f"{lab}, {NAME[p]} / Pre-LN (lm, L = 6, d = 64)", e,
                         file, how(D, "extremes", [key(p, 6, 64), key("pre", 6, 64)],
                                   e.n if e else 0))
            else:
                out.value(f"ref.{p}.{m}", t)
        rows.append(row)
    for name, ms, what, note in (
            ("extremes_ref", MEASURES[:5], "Lanczos extremes", "of |values|; unconverged "
             "eigenvalues left out (table unconverged)"),
            ("traces_ref", MEASURES[5:], "Hutchinson traces", "Pre-LN's signed; 'signs "
             "differ': the seeds' traces have both signs, no ratio")):
        out.table(name, f"{what} at L = 6, d = 64: Pre-LN's geometric mean over seeds [95% CI]"
                  ", and every other placement's ratio to Pre-LN (geometric mean of the "
                  f"per-seed ratios [95% CI]); {note}; seeds: present",
                  ["placement", "seeds"] + [lab for _, lab, _ in ms],
                  [r[:2] + [r[2 + MEASURES.index(m)] for m in ms] for r in rows], wide=True)
    fits, flags = {}, cl.flags
    rows = {"L": [], "d": []}
    for p in PLACEMENTS:
        for xn, pts in (("L", [(L, key(p, L, 64)) for L in DEPTHS]),
                        ("d", [(d, key(p, 6, d)) for d in WIDTHS])):
            row = [NAME[p], f"{sum(len(D.pts('extremes', k)) for _, k in pts)} of "
                   f"{SEEDS * len(pts)}"]
            for m, lab, f in MEASURES:
                fit = sfit([(x, D.series("extremes", k, f)) for x, k in pts])
                fits[(p, xn, m)] = fit
                row.append(ftxt(fit, flags, [lab, NAME[p], xn]))
                if not (xn == "L" and m == "H_top"):
                    out.value(f"exp{xn}.{p}.{m}", row[-1])
            rows[xn].append(row)
        f = fits[(p, "L", "H_top")]
        have = sum(len(D.pts("extremes", key(p, L, 64))) for L in DEPTHS)
        cl.fit(f"expL.{p}.H_top", f"{NAME[p]}: top of H against depth L (d = 64, L = 1-24; "
               f"the {have} of {SEEDS * len(DEPTHS)} planned seed-points present, "
               f"{have - (f.n_obs if f else 0)} left out as unconverged)", f, file, "L")
    exponent_tables(out, rows)
    ratio_exponents(out, D, flags)
    for xn, xs, lab in (("L", DEPTHS, "depth L (d = 64)"), ("d", WIDTHS, "width d (L = 6)")):
        fig, ax = plt.subplots(2, 2, figsize=(6.8, 5.0), layout="constrained")
        for a, (m, ml, f) in zip(ax.flat, [MEASURES[i] for i in (0, 1, 2, 4)]):
            for p in PLACEMENTS:
                ks = [(x, key(p, x, 64) if xn == "L" else key(p, 6, x)) for x in xs]
                v = [(x, D.series("extremes", k, f)) for x, k in ks]
                v = [(x, s) for x, s in v if s]
                if v:
                    plots.seeds(a, [x for x, _ in v], [list(s.values()) for _, s in v],
                                label=NAME[p], color=STYLE[p][0], marker=STYLE[p][1])
            plots.log_axes(a, xs)
            a.set_xlabel(lab)
            a.set_ylabel(ml)
        plots.legend(ax.flat[0], ncol=2)
        out.figure(f"extremes_{xn}", f"Top and |bottom| eigenvalues of H, the top of G and "
                   f"the |bottom| of F against {lab}, every placement. {plots.CAPTION}.", fig)
    return [("seeds", "top of H", "L = 6, d = 64", ref["H_top"]),
            ("seeds", "|bottom of H|", "L = 6, d = 64", ref["H_bottom"]),
            ("seeds", "top of G", "L = 6, d = 64", ref["G_top"]),
            ("seeds", "|bottom of F|", "L = 6, d = 64", ref["F_bottom"]),
            ("fit", "exponent of the top of H in L", "d = 64, L = 1-24",
             {p: fits[(p, "L", "H_top")] for p in PLACEMENTS})]


LEV = {"L": design_leverage("L", DEPTHS), "d": design_leverage("d", WIDTHS)}
AGAINST = {"L": "depth L = 1-24 at d = 64", "d": "width d = 32-256 at L = 6"}


def exponent_tables(out, rows):
    """The extremes' and traces' exponents, one table each for L and d."""
    for xn in ("L", "d"):
        for name, ms, what in (("extremes", MEASURES[:5], "the extremes"),
                               ("traces", MEASURES[5:], "the traces (|tr|, where every value "
                                "has one sign)")):
            out.table(f"{name}_exponents_{xn}", f"Power-law exponents of {what} in "
                      f"{AGAINST[xn]}: fits to the per-seed values, 95% CI (effective exponents "
                      f"over the points present); leverage with every seed present: "
                      f"{LEV[xn]}; {LOO_NOTE}; seed-points: those present of those "
                      "planned (an unconverged eigenvalue is left out of its fit)",
                      ["placement", "seed-points"] + [lab for _, lab, _ in ms],
                      [r[:2] + [r[2 + MEASURES.index(m)] for m in ms] for r in rows[xn]],
                      wide=True)


def ratio_exponents(out, D, flags):
    """Exponents of each placement's ratio to Pre-LN (the per-seed ratios) in L and d."""
    ms = [MEASURES[i] for i in (0, 1, 2, 4)]
    rows = {"L": [], "d": []}
    for p in PLACEMENTS:
        if p == "pre":
            continue
        for xn, pts in (("L", [(L, (L, 64)) for L in DEPTHS]),
                        ("d", [(d, (6, d)) for d in WIDTHS])):
            both = sum(len(set(D.pts("extremes", key(p, L, d))) &
                           set(D.pts("extremes", key("pre", L, d)))) for _, (L, d) in pts)
            row = [NAME[p], f"{both} of {SEEDS * len(pts)}"]
            for m, lab, f in ms:
                per = []
                for x, (L, d) in pts:
                    a = D.series("extremes", key(p, L, d), f)
                    b = D.series("extremes", key("pre", L, d), f)
                    per.append((x, {s: a[s] / b[s] for s in a if s in b}))
                row.append(ftxt(power_fit(per), flags, [f"{lab} / Pre-LN", NAME[p], xn]))
                out.value(f"ratio_exp{xn}.{p}.{m}", row[-1])
            rows[xn].append(row)
    for xn in ("L", "d"):
        out.table(f"ratio_exponents_{xn}", "Exponents of each placement's ratio to Pre-LN "
                  f"(per-seed ratios, paired by seed) in {AGAINST[xn]}: fits to the per-seed "
                  f"ratios, 95% CI; leverage: {LEV[xn]}; {LOO_NOTE}; seed-points: those "
                  "with both placements present, of those planned",
                  ["placement", "seed-points"] + [lab for _, lab, _ in ms], rows[xn],
                  wide=True)


M30K = (("H_top", "top of H", "hessian", "top"), ("H_bottom", "|bottom of H|", "hessian",
                                                   "bottom"),
        ("G_top", "top of G", "ggn", "top"), ("F_top", "top of F", "functional", "top"),
        ("F_bottom", "|bottom of F|", "functional", "bottom"))


def m30k(out, cl, D):
    """Part 6: the Multi30k 6-6 model on all pairs, every placement's extremes and its
    ratio to Pre-LN."""
    v = {(m, p): D.series("m30k", (p, op), eigf(op, w)) for m, _, op, w in M30K
         for p in PLACEMENTS}
    rows = []
    for p in PLACEMENTS:
        row = [NAME[p]]
        for m, lab, op, _ in M30K:
            if p == "pre":
                row.append(sgm(v[(m, p)]))
                continue
            e = ratio(v[(m, p)], v[(m, "pre")])
            row.append(txt(e))
            if m in ("H_top", "H_bottom"):
                cl.ratio(f"m30k.{p}.{m}", f"Multi30k 6-6 (all pairs, d = 64): {lab}, {NAME[p]} "
                         "/ Pre-LN", e, "m30k/*.csv",
                         how(D, "m30k", [(p, op), ("pre", op)], e.n if e else 0))
            else:
                out.value(f"m30k.{p}.{m}", row[-1])
        rows.append(row + [len(D.pts("m30k", (p, "hessian")))])
    out.table("m30k", "Multi30k 6-6 encoder-decoder (d = 64, h = 1, all 1014 validation pairs) "
              "at initialisation: Pre-LN's extremes (geometric mean over seeds [95% CI]) and "
              "every other placement's ratio to Pre-LN (paired by seed [95% CI]); seeds: the "
              "runs of H present", ["placement"] + [lab for _, lab, _, _ in M30K] + ["seeds"],
              rows)
    return [("seeds", "top of H", "Multi30k 6-6", {p: v[("H_top", p)] for p in PLACEMENTS}),
            ("seeds", "|bottom of H|", "Multi30k 6-6",
             {p: v[("H_bottom", p)] for p in PLACEMENTS})]


def variations(out, D):
    """One factor at a time at L = 6 and 12: each measure with the factor over the core
    grid's value at the same seed."""
    M = (("H_top", "top of H", "extremes", eigf("hessian", "top")),
         ("H_bottom", "|bottom of H|", "extremes", eigf("hessian", "bottom")),
         ("grad", "last ||dL/dW2||_F", "grad", xiong), ("JS0", "JS0 (scaled)", "anatomy", js0()))
    rows = []
    for var in VARIATIONS:
        for L in (6, 12):
            for mid, lab, part, f in M:
                row = [VAR_NAME[var], L, lab]
                for p in PLACEMENTS:
                    e = ratio(D.series(part, key(p, L, 64, var), f),
                              D.series(part, key(p, L, 64), f))
                    row.append(txt(e))
                    out.value(f"var.{var}.L{L}.{mid}.{p}", row[-1])
                rows.append(row)
    out.table("variations", "One factor at a time (d = 64): each measure with the factor over "
              "the same placement's with LayerNorm, ReLU, sinusoidal positions and biases (the "
              "core grid), paired by seed [95% CI]", ["factor", "L", "measure"] +
              [NAME[p] for p in PLACEMENTS], rows, "lrl" + "r" * len(PLACEMENTS))
