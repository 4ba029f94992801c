"""The placement study's gradients (part 4) and input scale (part 5)
(studies/summary/placements.py).

Part 4: Xiong et al. 2020's Theorem 1 quantity, the last layer's ||dL/dW2||_F, against
depth and width beside its two lines: Post-LN O(d sqrt(ln d)), independent of L; Pre-LN
O(d sqrt(ln d / L)).  Part 5: block norms ||A_bb||_F (A = H, G, F) against the input scale
sigma (docs/MODEL.md §2, input_scale), exponents per placement; at one layer without norms
beside the exponents of Ormaniec, Dangel and Singh (ICLR 2025) for a self-attention layer."""
import math

import numpy as np

from . import plots
from . import stats as S
from .placements_data import (DEPTHS, LOO_NOTE, NAME, PLACEMENTS, SCALES, SEEDS, STYLE,
                              WIDTHS, design_leverage, ftxt, gmean, power_fit, txt, xiong)

HALF = ("shallower than -1/2", "steeper than -1/2", "equal to -1/2")


def key(p, L, d=64, var="base", x=1.0):
    return (var, p, L, d, x)


def loo_range(f, xn):
    """'lo to hi (x)': the leave-one-out exponents' range and the point that moves it most."""
    ok = [(abs(v - f.slope.value), p, v) for p, v in zip(f.points, f.loo) if v == v] if f \
        else []
    if not ok:
        return "-"
    vs = [v for _, _, v in ok]
    return f"{S.num(min(vs))} to {S.num(max(vs))} ({xn} = {max(ok)[1]:g})"


def names(ps):
    return ", ".join(NAME[p] for p in ps) or "none"


def grad(out, cl, D):
    """Part 4; returns the ranking's entries."""
    ds = np.array(WIDTHS, float)
    bound = float(np.polyfit(np.log(ds), np.log(ds * np.sqrt(np.log(ds))), 1)[0])
    out.value("grad.bound_slope", f"{bound:.2f}")
    rows, rows_d, fits, words = [], [], {}, {}
    for p in PLACEMENTS:
        fL = power_fit([(L, D.series("grad", key(p, L), xiong)) for L in DEPTHS])
        fd = power_fit([(d, D.series("grad", key(p, 6, d), xiong)) for d in WIDTHS])
        fits[p] = fL
        nL = sum(len(D.pts("grad", key(p, L))) for L in DEPTHS)
        words[p] = cl.fit(f"grad.{p}.L", f"{NAME[p]}: last layer's ||dL/dW2||_F against depth "
                          f"L (lm, d = 64, L = 1-24; {nL} of {SEEDS * len(DEPTHS)} planned "
                          "seed-points; exact gradients, nothing to converge; Theorem 1: "
                          "Post-LN flat, Pre-LN L^(-1/2))", fL, "grad/*.csv", "L")
        half = S.verdict(fL.slope, -0.5, 0.1, *HALF) if fL else "-"
        wd = S.verdict(fd.slope, bound, 0.1, "above the bound's", "below the bound's",
                       "equal to the bound's") if fd else "-"
        if p == "pre":
            cl.fit("grad.pre.L_half", "Pre-LN: the depth exponent against Theorem 1's -1/2 "
                   f"(d = 64, L = 1-24; {nL} of {SEEDS * len(DEPTHS)} planned seed-points)",
                   fL, "grad/*.csv", "L", null=-0.5, words=HALF)
        out.value(f"grad.{p}.d", txt(fd.slope) if fd else "-")
        out.value(f"grad.{p}.d.verdict", wd)
        rows.append([NAME[p], ftxt(fL, cl.flags, ["last ||dL/dW2||_F", NAME[p], "L"]),
                     words[p] or "-", half, S.num(fL.chi2dof, 2) if fL else "-",
                     loo_range(fL, "L")])
        rows_d.append([NAME[p], ftxt(fd, cl.flags, ["last ||dL/dW2||_F", NAME[p], "d"]), wd,
                       S.num(fd.chi2dof, 2) if fd else "-", loo_range(fd, "d")])
    for w in ("flat", "shrinks", "grows"):
        out.value(f"grad.{w}", names(p for p in PLACEMENTS if words[p] and
                                     words[p].split(",")[0] == w))
    out.value("grad.unresolved", names(p for p in PLACEMENTS if words[p] == S.UNRESOLVED))
    out.table("grad_fits_L", "Xiong et al.'s Theorem 1 quantity, the last layer's "
              "||dL/dW2||_F at initialisation (lm): its exponent in depth L = 1-24 (d = 64), "
              "95% CI, fits to the per-seed values; the verdict against 0 (depth-independent "
              "within |b| < 0.1) and against Pre-LN's -1/2 (within 0.1); leave one out: the "
              "range of the exponent with one depth (all its seeds) left out, and the depth "
              f"that moves it most; leverage: {design_leverage('L', DEPTHS)}; {LOO_NOTE}",
              ["placement", "exponent in L", "against 0", "against -1/2", "χ²/dof",
               "leave one out"], rows)
    out.table("grad_fits_d", "The same quantity's exponent in width d = 32-256 (L = 6), 95% "
              "CI, against the bound d sqrt(ln d) (its log-log slope over these widths, "
              f"{bound:.2f}, within 0.1); leave one out as in grad_fits_L; leverage: "
              f"{design_leverage('d', WIDTHS)}; {LOO_NOTE}",
              ["placement", "exponent in d", "against the bound", "χ²/dof", "leave one out"],
              rows_d)
    rows = []
    for xn, xs in (("L", DEPTHS), ("d", WIDTHS)):
        for x in xs:
            k = (lambda p: key(p, x)) if xn == "L" else (lambda p: key(p, 6, x))
            rows.append([f"{xn} = {x}"] + [txt(gmean(D.series("grad", k(p), xiong)))
                                           for p in PLACEMENTS])
    out.table("grad_values", "The last layer's ||dL/dW2||_F, geometric mean over seeds [95% "
              "CI], at each depth (d = 64) and width (L = 6)", ["point"] +
              [NAME[p] for p in PLACEMENTS], rows, wide=True)
    grad_figure(out, D, bound)
    return [("seeds", "last layer's ||dL/dW2||_F", "L = 6, d = 64",
             {p: D.series("grad", key(p, 6), xiong) for p in PLACEMENTS}),
            ("fit", "exponent of the last ||dL/dW2||_F in L", "d = 64, L = 1-24", fits)]


def legend_below(axes, under, ncol):
    """One legend of every labelled series of axes, below the panel under (clear of the
    data)."""
    seen = {}
    for a in axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        under.legend(list(seen.values()), list(seen), loc="upper center", fontsize=6,
                     bbox_to_anchor=(0.5, -0.22), ncol=ncol)


def grad_figure(out, D, bound):
    fig, ax = plots.figure(2, 3.5, 2.9)
    for a, xn, xs in ((ax[0], "L", DEPTHS), (ax[1], "d", WIDTHS)):
        anchor = {}
        for p in PLACEMENTS:
            k = (lambda x: key(p, x)) if xn == "L" else (lambda x: key(p, 6, x))
            v = [(x, D.series("grad", k(x), xiong)) for x in xs]
            v = [(x, s) for x, s in v if s]
            if not v:
                continue
            plots.seeds(a, [x for x, _ in v], [list(s.values()) for _, s in v],
                        label=NAME[p], color=STYLE[p][0], marker=STYLE[p][1])
            anchor[p] = (v[0][0], gmean(v[0][1]).value)
        x = np.geomspace(min(xs), max(xs), 50)
        if xn == "L":
            for p, f, lab in (("post", lambda t: 0 * t, "Theorem 1, Post-LN: flat"),
                              ("pre", lambda t: -0.5 * t, "Theorem 1, Pre-LN: L^(-1/2)")):
                if p in anchor:
                    x0, y0 = anchor[p]
                    a.plot(x, y0 * np.exp(f(np.log(x / x0))), ":", color=STYLE[p][0], lw=1,
                           label=lab)
        elif "post" in anchor:
            x0, y0 = anchor["post"]
            ln = a.plot(x, y0 * (x / x0) ** bound, ":", color="gray", lw=1,
                        label="d sqrt(ln d) (the bound's shape)")
            a.legend(handles=ln, fontsize=6)
        plots.log_axes(a, xs)
        a.set_xlabel("depth L (d = 64)" if xn == "L" else "width d (L = 6)")
        a.set_ylabel("last layer ||dL/dW2||_F")
    legend_below([ax[0]], ax[0], 3)
    out.figure("grad", "Xiong et al.'s Theorem 1 quantity, the last layer's ||dL/dW2||_F, "
               "against depth and width, every placement; dotted: the theorem's lines (Post-LN "
               "flat, Pre-LN L^(-1/2); in d the bound's d sqrt(ln d)), shapes only, drawn "
               f"through the placement's first point. {plots.CAPTION}.", fig)


# ------------------------------------------------------------------ part 5

BLOCKS = (("Q", "dec.0.Q"), ("K", "dec.0.K"), ("V", "dec.0.V"), ("O", "dec.0.O"),
          ("FFN1", "dec.0.FFN1"), ("FFN2", "dec.0.FFN2"), ("emb", "emb"), ("out", "out"),
          ("all", None))
# Ormaniec et al.'s exponents for one self-attention layer at small input scale, as the
# authors draw them beside their measurements (dalab/transformer-hessian,
# Transformer_Hessian.ipynb, get_exponent: query block H_o sigma^6, H_f and H sigma^5;
# value block H_o and H sigma^2, H_f zero), and the query-value blocks derived by the same
# argument (J_Q ~ sigma^3, J_V ~ sigma: G_QV ~ sigma^4; d2/dW_Q dW_V ~ sigma^3).
THEIRS = (("H", "Q", None, 5, "theirs"), ("G", "Q", None, 6, "theirs"),
          ("F", "Q", None, 5, "theirs"), ("H", "V", None, 2, "theirs"),
          ("G", "V", None, 2, "theirs"), ("G", "V", "Q", 4, "derived here"),
          ("F", "V", "Q", 3, "derived here"))
OPN = {"H": "hessian", "G": "ggn", "F": "functional"}


def block_f(op, blk, src=None):
    """||A_bb||_F of the group blk (None: every group's together), or with src the cross
    norm ||A_(blk, src)||_F of the first layer's kinds blk and src."""
    def f(pt):
        if blk is None:
            v = [float(r["value"]) for r in pt.where("frob", operator=OPN[op])]
            return math.sqrt(sum(x * x for x in v)) if v else None
        if src:
            return pt.get("cross", OPN[op], "", f"dec.0.{blk}", f"dec.0.{src}")
        return pt.get("frob", OPN[op], "", blk)
    return f


def sigma_fit(D, var, p, L, f, top=max(SCALES)):
    return power_fit([(x, D.series("scale", key(p, L, var=var, x=x), f)) for x in SCALES
                      if x <= top])


def scale(out, cl, D):
    """Part 5: exponents in sigma per placement, L and operator; Ormaniec et al.'s."""
    for op in ("H", "G", "F"):
        for L in (1, 6):
            sets = [(NAME[p], "base", p) for p in PLACEMENTS] + \
                ([("no norms", "nonorm", "pre")] if L == 1 else [])
            rows = [["seed-points"] + [present(D, var, p, L) for _, var, p in sets]]
            rows += [[bn] + [scale_cell(out, cl, D, op, bn, blk, lab, var, p, L)
                             for lab, var, p in sets] for bn, blk in BLOCKS]
            out.table(f"scale_{op}_L{L}", f"Exponents b of ||{op}_bb||_F ~ sigma^b against the "
                      f"input scale sigma = {', '.join(f'{x:g}' for x in SCALES)} at L = {L}, "
                      "d = 64: the first layer's blocks, the embeddings, the output, and all "
                      "blocks together (the root sum of squares of every group's block); fits "
                      "to the per-seed values, 95% CI; 0 (rounding): the block is zero to "
                      "rounding (below 1e-12 of H's); leverage: "
                      f"{design_leverage('sigma', SCALES)}; {LOO_NOTE}; seed-points: the "
                      "(sigma, seed) points present of those planned",
                      ["block"] + [lab for lab, _, _ in sets], rows)
    for p in PLACEMENTS:
        cl.fit(f"scale.{p}.all", f"{NAME[p]} (L = 6, d = 64): all blocks' ||H_bb||_F against "
               f"the input scale sigma = 1/4-4 ({present(D, 'base', p, 6)} planned "
               "seed-points; Hutchinson estimates, nothing to converge)",
               sigma_fit(D, "base", p, 6, block_f("H", None)), "scale/*.csv", "sigma")
    ormaniec(out, cl, D)
    scale_figure(out, D)


def present(D, var, p, L):
    """'n of N': the (sigma, seed) points present of those planned."""
    n = sum(len(D.pts("scale", key(p, L, var=var, x=x))) for x in SCALES)
    return f"{n} of {SEEDS * len(SCALES)}"


def scale_cell(out, cl, D, op, bn, blk, lab, var, p, L):
    """One block's exponent in sigma (text), its value for the prose and its one-point mark."""
    h = D.series("scale", key(p, L, var=var, x=1.0), block_f("H", blk))
    v = D.series("scale", key(p, L, var=var, x=1.0), block_f(op, blk))
    if op != "H" and v and h and max(v.values()) < 1e-12 * max(h.values()):
        t = "0 (rounding)"
    else:
        t = ftxt(sigma_fit(D, var, p, L, block_f(op, blk)), cl.flags,
                 [f"||{op}_bb||_F, {bn}", f"{lab}, L = {L}", "sigma"])
    out.value(f"scale.{op}.{var}.{p}.L{L}.{bn}", t)
    return t


def ormaniec(out, cl, D):
    rows = []
    for op, blk, src, b, whose in THEIRS:
        name = f"{op}_{blk}{src or blk}"
        f = block_f(op, blk, src) if src else block_f(op, f"dec.0.{blk}")
        low = sigma_fit(D, "nonorm", "pre", 1, f, top=1.0)
        full = sigma_fit(D, "nonorm", "pre", 1, f)
        pre = sigma_fit(D, "base", "pre", 1, f)
        if whose == "theirs" and (op, blk) != ("F", "V"):
            cl.fit(f"ormaniec.{name}", f"One layer, no norms: ||{name}||_F against sigma <= 1 "
                   f"(Ormaniec et al.: sigma^{b}; Hutchinson estimates)", low, "scale/*.csv",
                   "sigma", null=b, margin=0.5, words=(f"steeper than {b}", f"shallower than {b}",
                                      f"equal to {b}"))
        word = S.verdict(low.slope, b, 0.5, f"steeper than {b}", f"shallower than {b}",
                         f"equal to {b}") if low else "-"
        rows.append([name, f"{b} ({whose})", txt(low.slope) if low else "-", word,
                     txt(full.slope) if full else "-", txt(pre.slope) if pre else "-"])
    r = None
    for x in SCALES:
        fv = D.series("scale", key("pre", 1, var="nonorm", x=x), block_f("F", "dec.0.V"))
        hv = D.series("scale", key("pre", 1, var="nonorm", x=x), block_f("H", "dec.0.V"))
        r = max([fv[s] / hv[s] for s in fv if s in hv] + ([r] if r is not None else []),
                default=None)
    out.value("ormaniec.F_VV", "not yet run" if r is None else S.num(r, 2))
    rows.append(["F_VV", "zero (theirs)", "-", "-", "-", "-"])
    out.table("ormaniec", "One layer without norms (lm, d = 64, h = 4, ReLU FFN, biases): "
              "exponents of the self-attention blocks' norms in the input scale sigma, against "
              "Ormaniec, Dangel and Singh's for one self-attention layer at small sigma (their "
              "repository's reference lines; the query-value blocks derived here by the same "
              "argument); ours fitted over sigma = 1/4-1 and 1/4-4 (95% CI), the verdict "
              "within 0.5 of theirs; beside them Pre-LN at L = 1. Their setting: one head, "
              "d = 128, cross-entropy on digit sums, sigma the embeddings' std over 0.01-10; "
              "largest ||F_VV||_F / ||H_VV||_F here over every sigma and seed: "
              f"{out.values['ormaniec.F_VV']}",
              ["block", "their exponent", "ours, sigma <= 1", "verdict", "ours, all sigma",
               "Pre-LN, L = 1"], rows, "llrlrr")


def scale_figure(out, D):
    if not D.P["scale"]:   # no figure without points
        return
    fig, ax = plots.figure(3, 2.6, 2.6)
    panels = ((ax[0], 1, "H", "dec.0.Q", "||H_QQ||_F, first layer, L = 1"),
              (ax[1], 1, "H", "dec.0.V", "||H_VV||_F, first layer, L = 1"),
              (ax[2], 6, "H", None, "all blocks' ||H_bb||_F, L = 6"))
    for a, L, op, blk, lab in panels:
        sets = [("base", p, NAME[p], STYLE[p]) for p in PLACEMENTS]
        if L == 1:
            sets.append(("nonorm", "pre", "no norms", ("black", "x")))
        for var, p, name, (c, m) in sets:
            v = [(x, D.series("scale", key(p, L, var=var, x=x), block_f(op, blk)))
                 for x in SCALES]
            v = [(x, s) for x, s in v if s]
            if v:
                plots.seeds(a, [x for x, _ in v], [list(s.values()) for _, s in v],
                            label=name, color=c, marker=m)
            if var == "nonorm" and v:   # Ormaniec et al.'s small-sigma exponent, its shape
                b = 5 if blk.endswith("Q") else 2
                x0, y0 = v[0][0], gmean(v[0][1]).value
                xs = np.geomspace(min(SCALES), max(SCALES), 20)
                a.plot(xs, y0 * (xs / x0) ** b, ":", color="black", lw=0.8,
                       label=f"sigma^{b} (Ormaniec et al.)")
        plots.log_axes(a, SCALES)
        a.set_xlabel("input scale sigma")
        a.set_title(lab, fontsize=7)
    legend_below(ax, ax[1], 4)
    out.figure("scale", "Block norms of H against the input scale sigma (d = 64): the first "
               "layer's query and value blocks at L = 1 (black: no norms; dotted: Ormaniec et "
               "al.'s small-sigma exponent for one self-attention layer, sigma^5 and sigma^2, "
               "drawn through the smallest sigma), and all blocks together at L = 6. "
               f"{plots.CAPTION}.", fig)
