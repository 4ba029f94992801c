"""The placement study's anatomy (part 2) and coupling (part 3)
(studies/summary/placements.py): block norms ||H_bb||_F by tensor kind and layer,
eigenvector mass by kind, Jensen-Shannon distances between block spectra and JS0 (Zhang
et al. 2024: the mean over pairs of blocks); off-diagonal against diagonal block norms and
the block-diagonal approximation's extremes against the full Hessian's."""
import math
from collections import defaultdict

import matplotlib.pyplot as plt
from matplotlib import ticker

from . import plots
from . import stats as S
from .placements_data import (DEPTHS, NAME, PLACEMENTS, STYLE, gmean, js0, mean, nseeds_text,
                              ratio, transpose, txt)

KINDS = ("Q", "K", "V", "O", "FFN1", "FFN2", "norm", "bias", "emb", "final", "out")
HUTCH = "Hutchinson estimates (their se in the rows; nothing to converge)"
PLOT_KINDS = ("Q", "K", "V", "O", "FFN1", "FFN2")
KIND_STYLE = dict(zip(PLOT_KINDS, ("tab:green", "tab:olive", "tab:purple", "tab:pink",
                                   "tab:orange", "tab:red")))


def key(p, L=6, d=64):
    return ("base", p, L, d, 1.0)


def kind_norms(pt):
    """{kind: sqrt(sum over its layers' ||H_bb||_F^2)}."""
    s = defaultdict(float)
    for r in pt.where("frob", operator="hessian"):
        s[r["kind"]] += float(r["value"]) ** 2
    return {k: math.sqrt(v) for k, v in s.items()}


def per_kind(D, part, k, f):
    """{kind: {seed: value}} from f(point) -> {kind: value}."""
    out = defaultdict(dict)
    for s, pt in sorted(D.pts(part, k).items()):
        v = f(pt)
        if v is None:
            continue
        for kind, x in v.items():
            out[kind][s] = x
    return out


def mass_of(which):
    def f(pt):
        if pt.eig("hessian", which) is None:   # unconverged: its vector is left out too
            return None
        m = defaultdict(float)
        for r in pt.where("mass", operator="hessian", which=which):
            m[r["kind"]] += float(r["value"])
        return m
    return f


def layers_of(pt, kind):
    """{layer: ||H_bb||_F} of one kind."""
    return {int(r["layer"]): float(r["value"]) for r in pt.where("frob", operator="hessian",
                                                                  kind=kind) if r["layer"]}


def anatomy(out, cl, D):
    """Part 2 at L = 6, d = 64 (and the layer profile at the deepest L present for every
    placement); returns the ranking's entries."""
    rows, vq = [], {}
    for p in PLACEMENTS:
        kn = per_kind(D, "anatomy", key(p), kind_norms)
        row = [NAME[p], len(D.pts("anatomy", key(p)))] + [txt(gmean(kn[k])) if kn[k] else "-"
                                                         for k in KINDS]
        vq[p] = {s: kn["V"][s] / kn["Q"][s] for s in kn["V"] if s in kn["Q"]}
        e = ratio(kn["V"], kn["Q"])
        cl.ratio(f"VQ.{p}", f"{NAME[p]} (L = 6, d = 64): ||H_VV||_F over ||H_QQ||_F, every "
                 "layer's blocks together (Ormaniec et al.: value blocks far larger)", e,
                 "anatomy/*.csv",
                 f"{nseeds_text(e.n if e else 0)}, paired (the same model); {HUTCH}")
        rows.append(row + [txt(e)])
    out.table("blocknorms", "||H_bb||_F by tensor kind at L = 6, d = 64 (the root sum of "
              "squares over the layers' blocks; Hutchinson), geometric mean over seeds [95% "
              "CI], and the value over query ratio (paired by seed)",
              *transpose("kind", ["placement", "seeds"] + list(KINDS) + ["V/Q"], rows))
    mass_table(out, D)
    layer_figure(out, D)
    js = {p: D.series("anatomy", key(p), js0()) for p in PLACEMENTS}
    rows = []
    for p in PLACEMENTS:
        raw = D.series("anatomy", key(p), js0("raw"))
        e = ratio(js[p], js["pre"]) if p != "pre" else None
        if p != "pre":
            cl.ratio(f"js0.{p}", f"JS0 of the block spectra (scaled), {NAME[p]} / Pre-LN (L = "
                     "6, d = 64)", e, "anatomy/*.csv",
                     f"{nseeds_text(e.n if e else 0)}, paired; SLQ spectra (Lanczos at a fixed "
                     "number of steps: nothing to converge)")
        out.value(f"js0.{p}.scaled", txt(mean(js[p])))
        out.value(f"js0.{p}.raw", txt(mean(raw)))
        rows.append([NAME[p], len(js[p]), txt(mean(raw)), txt(mean(js[p])),
                     txt(e) if p != "pre" else "1"])
    out.table("js0", "JS0 (Zhang et al. 2024: the mean Jensen-Shannon distance over pairs of "
              "weight blocks' SLQ spectra, natural log) at L = 6, d = 64: of the spectra as "
              "they are (raw) and each divided by its largest |node| (scaled: shapes only), "
              "mean over seeds [95% CI], and the scaled JS0's ratio to Pre-LN (paired)",
              ["placement", "seeds", "JS0 raw", "JS0 scaled", "scaled / Pre-LN"], rows)
    js_pairs(out, D)
    js_figure(out, D)
    return [("seeds", "||H_VV||_F / ||H_QQ||_F", "L = 6, d = 64", vq),
            ("seeds", "JS0 (scaled)", "L = 6, d = 64", js)]


def mass_table(out, D):
    """One table a vector (top, bottom): a row a tensor kind, a column a placement."""
    for which in ("top", "bottom"):
        m = {p: per_kind(D, "extremes", key(p), mass_of(which)) for p in PLACEMENTS}
        rows = [["seeds"] + [len(m[p]["Q"]) for p in PLACEMENTS]]
        for k in KINDS:
            row = [k]
            for p in PLACEMENTS:
                e = mean(m[p][k]) if m[p][k] else None
                row.append("-" if e is None else S.pm(e.value, e.sd) if e.n > 1 else
                           S.num(e.value))
                out.value(f"mass.{which}.{p}.{k}", row[-1])
            rows.append(row)
        out.table(f"mass_{which}", f"Mass of H's {which} eigenvector on each tensor kind (the "
                  "squared entries summed over the kind's tensors in every layer; a column sums "
                  "to 1) at L = 6, d = 64: mean ± sd over the seeds whose eigenvalue converged "
                  "(seeds: their number)", ["kind"] + [NAME[p] for p in PLACEMENTS], rows)


def layer_figure(out, D):
    full = [L for L in DEPTHS if all(D.pts("anatomy", key(p, L)) for p in PLACEMENTS)]
    if not full:
        return
    L = max(full)
    out.value("layers_L", str(L))
    fig, ax = plt.subplots(2, 3, figsize=(7.0, 4.6), layout="constrained", sharey=True)
    for a, p in zip(ax.flat, PLACEMENTS):
        pts = D.pts("anatomy", key(p, L))
        for k in PLOT_KINDS:
            per = defaultdict(list)
            for pt in pts.values():
                for l, v in layers_of(pt, k).items():
                    per[l + 1].append(v)
            ls = sorted(per)
            plots.seeds(a, ls, [per[l] for l in ls], label=k, color=KIND_STYLE[k], marker=".")
            g = [math.exp(sum(map(math.log, per[l])) / len(per[l])) for l in ls]
            out.value(f"layers.{p}.{k}", f"{S.num(g[0], 2)} -> {S.num(g[-1], 2)}")
        plots.log_axes(a, xlog=False)
        a.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        a.set_title(NAME[p])
        a.set_xlabel("layer")
    ax[0][0].set_ylabel("||H_bb||_F")
    ax[1][0].set_ylabel("||H_bb||_F")
    plots.legend(ax[0][0], ncol=2)
    out.figure("blocknorms_layers", f"||H_bb||_F of each layer's weight matrices at L = {L}, "
               f"d = 64 (the deepest model present for every placement), by kind. "
               f"{plots.CAPTION}.", fig)


def js_pairs(out, D):
    pairs = sorted({(r["block"], r["block_b"]) for p in PLACEMENTS
                    for pt in D.pts("anatomy", key(p)).values()
                    for r in pt.where("js", which="scaled")})
    rows = []
    for a, b in pairs:
        row = [f"{a}-{b}"]
        for p in PLACEMENTS:
            v = D.series("anatomy", key(p), lambda pt: pt.get("js", "hessian", "scaled", a, b))
            row.append(txt(mean(v)) if v else "-")
        rows.append(row)
    if rows:
        out.table("js_pairs", "Jensen-Shannon distance between the scaled spectra of two kinds "
                  "of weight blocks (the mean over the block pairs of those kinds; a kind with "
                  "itself: pairs of its layers) at L = 6, d = 64, mean over seeds [95% CI]",
                  ["kinds"] + [NAME[p] for p in PLACEMENTS], rows)


def js_figure(out, D):
    if not D.P["anatomy"]:   # no figure without points
        return
    fig, ax = plots.figure(1, 3.6, 2.8)
    for p in PLACEMENTS:
        v = [(L, D.series("anatomy", key(p, L), js0())) for L in DEPTHS]
        v = [(L, s) for L, s in v if s]
        if v:
            plots.seeds(ax[0], [L for L, _ in v], [list(s.values()) for _, s in v],
                        label=NAME[p], color=STYLE[p][0], marker=STYLE[p][1])
    plots.log_axes(ax[0], DEPTHS)
    ax[0].set_xlabel("depth L (d = 64)")
    ax[0].set_ylabel("JS0 (scaled spectra)")
    plots.legend(ax[0], ncol=2)
    out.figure("js0_L", f"JS0 of the scaled block spectra against depth, every placement. "
               f"{plots.CAPTION}.", fig)


# ------------------------------------------------------------------ part 3

def coupling_of(pt):
    """One seed's coupling numbers: the off-diagonal share of ||H||_F^2 (all of it, and
    within a layer, across layers, with emb/final/out), ||off||_F / ||diag||_F, and the
    block-diagonal approximation's extremes over the full Hessian's (None where a block's
    or the full run did not converge)."""
    layer = {r["block"]: r["layer"] for r in pt.where("cross")}
    sq = defaultdict(float)
    for r in pt.where("cross", operator="hessian"):
        a, b, v = r["block"], r["block_b"], float(r["value"]) ** 2
        la, lb = layer[a], layer.get(b, "")
        sq["diag" if a == b else "outside" if "" in (la, lb) else
           "within" if la == lb else "across"] += v
    tot = sum(sq.values())
    off = tot - sq["diag"]
    res = {"share": off / tot, "within": sq["within"] / tot, "across": sq["across"] / tot,
           "outside": sq["outside"] / tot, "od": math.sqrt(off / sq["diag"])}
    for w, pick in (("top", max), ("bottom", min)):
        bl = pt.where("block_eig", operator="hessian", which=w)
        full = pt.ix.get(("eig", "hessian", w, "", ""))
        if bl and full and full["converged"] == "1" and all(r["converged"] == "1" for r in bl):
            res[w] = abs(pick(float(r["value"]) for r in bl)) / abs(float(full["value"]))
    return res


def coupling(out, cl, D):
    """Part 3 at L = 6, d = 64; returns the ranking's entries."""
    rows, od, bt = [], {}, {}
    for p in PLACEMENTS:
        c = {s: coupling_of(pt) for s, pt in sorted(D.pts("coupling", key(p)).items())}
        col = {m: {s: v[m] for s, v in c.items() if m in v}
               for m in ("share", "within", "across", "outside", "od", "top", "bottom")}
        od[p], bt[p] = col["od"], col["top"]
        e = gmean(col["od"])
        cl.ratio(f"coupling.{p}.od", f"{NAME[p]} (L = 6, d = 64): ||H_off||_F / ||H_diag||_F "
                 "over the blocks of each layer's tensors", e, "coupling/*.csv",
                 f"{nseeds_text(len(col['od']))}; {HUTCH}")
        e2 = gmean(col["top"])
        cl.ratio(f"coupling.{p}.top", f"{NAME[p]} (L = 6, d = 64): top of the block-diagonal "
                 "approximation over the full Hessian's top", e2, "coupling/*.csv",
                 f"{nseeds_text(len(col['top']))} where every block's and the full run converged")
        rows.append([NAME[p], len(c)] + [txt(mean(col[m])) if col[m] else "-"
                                         for m in ("share", "within", "across", "outside")] +
                    [txt(e), txt(e2), txt(gmean(col["bottom"]))])
        for m in ("share", "within", "across", "outside", "bottom"):
            out.value(f"coupling.{p}.{m}", txt(mean(col[m]) if m != "bottom" else
                                               gmean(col[m])))
    out.table("coupling", "Coupling at L = 6, d = 64, the blocks being each layer's tensor "
              "groups (Q, K, V, O, FFN1, FFN2, norm, bias) and emb, final, out: the share of "
              "||H||_F^2 off the block diagonal (off share: all of it; of which within a "
              "layer, between layers, with emb, final or out), mean over seeds [95% CI]; "
              "off / diag: ||H_off||_F / ||H_diag||_F; bd / full: the block-diagonal "
              "approximation's extremes over the full Hessian's (top; |bottom|); geometric "
              "means [95% CI]",
              *transpose("measure", ["placement", "seeds", "off share", "within a layer",
                                     "between layers", "with emb/final/out", "off / diag",
                                     "top: bd / full", "|bottom|: bd / full"], rows))
    return [("seeds", "||H_off||_F / ||H_diag||_F", "L = 6, d = 64", od),
            ("seeds", "block-diagonal top / full top", "L = 6, d = 64", bt)]
