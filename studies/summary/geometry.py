"""LayerNorm geometry after Brody, Alon, Yahav 2023 (studies/ln_geometry;
results/geometry): random keys' selectability (heatmap.csv), orthogonality to the
all-ones vector (orthogonality.csv), per-head statistics (heads_*.csv), models at
initialisation (model_*.csv), attention maps (attn_*.csv), statistics counts."""
import math
from collections import defaultdict

import numpy as np

from . import plots
from . import stats as S
from .writer import Summary, fnum, read

NORMS = ("none", "center", "scale", "layernorm")
NLAB = {"none": "none", "center": "projection P", "scale": "scaling S (RMS)",
        "layernorm": "LayerNorm S(P)"}
RAW = ["heatmap.csv", "orthogonality.csv", "heads_stats.csv", "heads_select.csv",
       "model_select.csv", "model_affine.csv", "model_cos.csv", "attn_stats.csv",
       "attn_map_layer2_fullLN.csv", "attn_map_layer2_headLN.csv",
       "attn_map_layer2_headRMS.csv", "norm_counts.csv"]


def summarise(study, d):
    out = Summary(study, d, "LayerNorm geometry (Brody et al. 2023) and its objections", (
        "random keys: Gaussian N(0, I_d) and offset keys (mu_c ~ N(1, 1), s_c = exp(N(0, 1)) "
        "per set), n = 3-60 keys, d = 3-15, 100 runs a cell, eps = 0, selectability by an LP "
        "with certified bounds (tolerance 1e-12); orthogonality: 4000 keys per d in 100 sets; "
        "models: lm, d = 8, 64, 512, h = 4, L = 4, Pre- and Post-LN, Xavier init seed 0, "
        "synthetic and Multi30k text, 32 sequences"), "make study-geometry", RAW, "geometry")
    random_keys(out, read(d, "heatmap.csv", ("dist", "norm", "n", "d", "runs", "frac_any")))
    ortho(out, read(d, "orthogonality.csv", ("dist", "d", "mean_abs_cos", "sets",
                                               "sd_set_mean_abs_cos", "gauss_theory_abs_cos")))
    heads(out, read(d, "heads_stats.csv"), read(d, "heads_select.csv"))
    models(out, read(d, "model_select.csv"), read(d, "model_affine.csv"),
           read(d, "model_cos.csv"))
    attention(out, d, read(d, "attn_stats.csv"))
    c = read(d, "norm_counts.csv")
    out.table("norm_counts", "(mean, variance) pairs a norm computes per batch, full width "
              "and per head (x h), per norm and per model",
              ["model", "B", "T", "d", "h", "norms", "per norm", "per norm, per head",
               "per model", "per model, per head"],
              [[r["model"], r["B"], r["T"], r["d"], r["h"], r["norms_per_model"],
                r["stats_per_norm_fullwidth"], r["stats_per_norm_perhead"],
                r["stats_per_model_fullwidth"], r["stats_per_model_perhead"]] for r in c],
              "l" + "r" * 9)
    out.close()


def random_keys(out, rows):
    H = {(r["dist"], r["norm"], int(r["n"]), int(r["d"])): r for r in rows}
    ns, ds = sorted({k[2] for k in H}), sorted({k[3] for k in H})
    runs = int(rows[0]["runs"])
    fa = lambda k: fnum(H[k], "frac_any")  # noqa: E731
    t = []
    for dist in ("gauss", "offset"):
        for nm in NORMS:
            row = [dist, NLAB[nm]]
            for n in (20, 40, ns[-1]):
                for lim, lab in ((0.5, "half"), (0.05, "tail")):
                    th = next((x for x in ds if fa((dist, nm, n, x)) <= lim), None)
                    txt = "-" if th is None else f"<= {th}" if th == ds[0] else str(th)
                    out.value(f"heat.{dist}.{nm}.n{n}.{lab}", txt)
                    row.append(txt)
            mx = max(fa(k) for k in H if k[:2] == (dist, nm))
            out.value(f"heat.{dist}.{nm}.max", f"{mx:.2f}")
            row.append(f"{mx:.2f}")
            t.append(row)
    out.table("heatmap_thresholds", f"Random keys ({runs} runs a cell): the smallest d at "
              "which the fraction of runs with an unselectable key is <= 0.5 and <= 0.05, at "
              "n = 20, 40, 60 keys, and the largest fraction over the grid",
              ["keys", "norm"] + [f"n={n}: d({lab})" for n in (20, 40, ns[-1])
                                  for lab in ("<=0.5", "<=0.05")] + ["max cell"], t, "ll" +
              "r" * 7)
    for nm in ("scale", "layernorm"):
        k = sum(round(fa(c) * runs) for c in H if c[1] == nm)
        n = runs * sum(1 for c in H if c[1] == nm)
        out.claim(f"after_{nm}", f"Runs with an unselectable key after {NLAB[nm]} (both key "
                  "distributions, every cell)", S.prop_ci(k, n), "heatmap.csv",
                  margin=(-1e-3, 1e-3), words=("some", "-", "none (below 0.1%)"),
                  how=f"{k} of {n} runs; Clopper-Pearson interval")
    rows_c, diffs = [], []
    for s in (0, 1, 2):   # frac(P, n, d) against frac(none, n, d - s): two-proportion z
        z, dd = [], []
        for (dist, nm, n, x), r in H.items():
            if nm != "center" or (dist, "none", n, x - s) not in H:
                continue
            p1, p2 = fa((dist, "center", n, x)), fa((dist, "none", n, x - s))
            p = (p1 + p2) / 2
            if 0 < p < 1:
                z.append((p1 - p2) / math.sqrt(2 * p * (1 - p) / runs))
                dd.append(p1 - p2)
        z = np.array(z)
        rows_c.append([f"d - {s}", len(z), f"{np.mean(z ** 2):.2f}",
                       S.pm(float(np.mean(dd)), float(np.std(dd, ddof=1))),
                       f"{np.sum(abs(z) <= 2)} ({100 * np.mean(abs(z) <= 2):.0f}%)"])
        out.value(f"centre.chi2_{s}", f"{np.mean(z ** 2):.2f}")
        diffs.append(dd)
    out.table("centring", "The projection P against no norm one dimension down: frac(P, n, d) "
              "against frac(none, n, d - s), cells with a pooled fraction strictly between 0 "
              "and 1; chi^2/dof = mean z^2 of the two-proportion z",
              ["comparison", "cells", "χ²/dof", "mean difference ± sd", "|z| <= 2"], rows_c)
    out.claim("centre_shift1", "frac(P, n, d) - frac(none, n, d - 1), mean over the cells: P "
              "costs one dimension", S.mean_ci(diffs[1]), "heatmap.csv", margin=0.02,
              words=("larger", "smaller", "equal"),
              how=f"{len(diffs[1])} cells (t over cells; they share runs' keys across n)")
    fig, ax = plots.figure(4, w=2.1, h=2.3)
    for a, nm in zip(ax, NORMS):
        img = np.array([[fa(("gauss", nm, n, x)) for x in ds] for n in ns])
        im = a.imshow(img, origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis",
                      extent=(ds[0] - 0.5, ds[-1] + 0.5, ns[0] - 0.5, ns[-1] + 0.5))
        a.set_title(NLAB[nm])
        a.set_xlabel("d")
        a.grid(False)
    ax[0].set_ylabel("n keys")
    fig.colorbar(im, ax=ax, shrink=0.8, label="runs with an unselectable key")
    out.figure("heatmap", f"Gaussian keys: the fraction of {runs} runs with at least one "
               "unselectable key, by dimension d and number of keys n, without a norm, after "
               "the projection P, the scaling S and LayerNorm S(P)", fig)


def ortho(out, rows):
    fits, t = {}, []
    for dist in ("gauss", "offset", "offset0"):
        r = sorted([x for x in rows if x["dist"] == dist and int(x["d"]) >= 8],
                   key=lambda x: int(x["d"]))
        xs = [int(x["d"]) for x in r]
        f = S.fit_moments(xs, [fnum(x, "mean_abs_cos") for x in r],
                          [fnum(x, "sd_set_mean_abs_cos") for x in r],
                          [int(x["sets"]) for x in r])
        fits[dist] = (xs, r, f)
    xs, r, f = fits["gauss"]
    th = S.fit_power(xs, [fnum(x, "gauss_theory_abs_cos") for x in r]).slope.value
    out.value("ortho.theory_slope", f"{th:.3f}")
    out.value("ortho.range", f"{xs[0]}-{xs[-1]}")
    out.fit_claim("ortho.gauss", f"Gaussian keys: mean |cos(k, 1)| ~ d^b over d = {xs[0]}-"
                  f"{xs[-1]} against the exact curve's slope {th:.3f}", f, "orthogonality.csv",
                  "d", null=th, margin=0.01, words=("shallower", "steeper", "equal"))
    out.claim("ortho.gauss_half", "Gaussian keys: the same exponent against -1/2", f.slope,
              "orthogonality.csv", null=-0.5, margin=0.01,
              words=("shallower than -1/2", "steeper than -1/2", "equal to -1/2"))
    xs, r, _ = fits["offset"]
    tail = S.fit_moments([x for x in xs if x >= 256], [fnum(x, "mean_abs_cos") for x in r
                                                       if int(x["d"]) >= 256],
                         [fnum(x, "sd_set_mean_abs_cos") for x in r if int(x["d"]) >= 256],
                         [int(x["sets"]) for x in r if int(x["d"]) >= 256])
    out.fit_claim("ortho.offset_tail", "Offset keys (common mean along 1): mean |cos(k, 1)| "
                  "against d over d >= 256", tail, "orthogonality.csv", "d", margin=0.1)
    for dist, (xs, r, f) in fits.items():
        c = {int(x["d"]): fnum(x, "mean_abs_cos") for x in r}
        t.append([dist, S.num(c[8]), S.num(c[64]), S.num(c[512]),
                  f"{math.degrees(math.acos(c[512])):.1f}", S.ci(f.slope),
                  S.num(f.chi2dof, 2)])
        out.value(f"ortho.{dist}.cos512", S.num(c[512]))
        out.value(f"ortho.{dist}.angle512", f"{math.degrees(math.acos(c[512])):.1f}")
    out.table("orthogonality_fit", "Mean |cos(k, 1)| of random keys and its power law in d "
              "(fit to the 100 sets' means a width, 95% CI; chi^2/dof of the lack of fit)",
              ["keys", "d = 8", "d = 64", "d = 512", "angle at 512 (deg)", "exponent [95% CI]",
               "χ²/dof"], t)
    fig, (ax,) = plots.figure(w=4.0, h=3.0)
    for dist, col in (("gauss", "tab:blue"), ("offset", "tab:red"), ("offset0", "tab:green")):
        xs, r, f = fits[dist]
        m = np.array([fnum(x, "mean_abs_cos") for x in r])
        h = np.array([S.tq(int(x["sets"]) - 1) * fnum(x, "sd_set_mean_abs_cos") /
                      math.sqrt(int(x["sets"])) for x in r])
        ax.errorbar(xs, m, yerr=h, fmt="o", ms=3, color=col, capsize=2, label=dist)
        plots.fit(ax, f, col)
    ax.plot(xs, [fnum(x, "gauss_theory_abs_cos") for x in fits["gauss"][1]], "k:", lw=1,
            label="exact E|cos|, Gaussian")
    plots.log_axes(ax, [8, 16, 32, 64, 128, 256, 512])
    ax.set_xlabel("d")
    ax.set_ylabel("mean |cos(k, 1)|")
    ax.legend()
    out.figure("orthogonality", "Mean |cos(k, 1)| of random keys against d: markers the mean "
               "over 4000 keys, bars the 95% CI from the scatter of the 100 sets' means, "
               "dashed the power-law fits, dotted the exact Gaussian curve", fig)


def heads(out, hs, sel):
    t = defaultdict(dict)
    for r in sel:
        t[(r["dist"], int(r["d"]), int(r["h"]), int(r["d_k"]))][r["variant"]] = \
            fnum(r, "frac_unselectable")
    var = ("raw", "fullLN", "headLN", "headRMS")
    out.table("heads_select", "Fraction of a head's keys that are unselectable (64 keys, 20 "
              "runs): raw, after a full-width LN, a per-head LN and a per-head RMSNorm",
              ["keys", "d", "h", "d_k"] + ["raw", "full-width LN", "per-head LN",
                                           "per-head RMS"],
              [list(k) + [f"{v.get(x, math.nan):.2f}" for x in var] for k, v in
               sorted(t.items())], "lrrrrrrr")
    for k, v in t.items():
        if k[0] == "gauss":
            for x in var:
                out.value(f"sel.d{k[1]}h{k[2]}.{x}", f"{100 * v[x]:.0f}%")
    out.value("heads.headln_mean_max", S.num(max(fnum(r, "mean_abs_slice_mean") for r in hs
                                                 if r["variant"] == "headLN"), 1))


def models(out, sel, aff, cos):
    """Fractions per layer (summed over heads): their range over the layers."""
    acc = defaultdict(lambda: [0.0, 0.0])
    for r in sel:
        a = acc[(r["data"], int(r["d"]), r["norm_pos"], r["qk_norm"], r["stage_name"],
                 r["layer"])]
        a[0] += fnum(r, "unselectable")
        a[1] += fnum(r, "keys")
    v = defaultdict(list)
    for k, (u, n) in acc.items():
        v[k[:5]].append(u / n)
    rows = sorted(v)
    big = max(x for k in rows if k[1] > 8 for x in v[k])
    out.table("model_select", "Models at initialisation, d = 8, h = 4: the fraction of keys "
              "that are unselectable per head (stages x Wk_j ... qknorm) or full width, summed "
              "over a layer's heads; range over the layers (d = 64 and 512: at most "
              f"{100 * big:.1f}% at every stage; model_select.csv)",
              ["data", "norm", "qk_norm", "stage", "min", "max"],
              [[k[0]] + list(k[2:]) + [f"{min(v[k]):.3f}", f"{max(v[k]):.3f}"] for k in rows
               if k[1] == 8], "llllrr")
    d8 = [x for k in rows if k[1] == 8 and k[3] == "none" and "Wk_j" in k[4] for x in v[k]]
    out.value("model.d8.range", f"{100 * min(d8):.0f}-{100 * max(d8):.0f}%")
    full = [x for k in rows if k[4] == "N(x) (full width)" for x in v[k]]
    out.value("model.nfull_max", f"{100 * max(full):.1f}%")
    big = [x for k in rows if k[1] > 8 and k[3] == "none" for x in v[k]]
    out.value("model.big_max", f"{100 * max(big):.0f}%")
    out.value("affine.mismatch", str(sum(int(fnum(r, "count")) for r in aff
                                         if "mismatch" in r["check"])))
    co = [fnum(r, "mean_abs_cos_norm_out") for r in cos
          if not (r["norm_pos"] == "post" and r["layer"] == "0")]   # Post-LN layer 0 reads x
    out.value("cos.out_max", S.num(max(co), 1))


def attention(out, d, st):
    t = defaultdict(list)
    for r in st:
        t[r["variant"]].append(r)
    rows = [[v, S.pm(*_msd([fnum(r, "ent_mean") for r in rs])),
             f"{fnum(rs[0], 'ent_uniform'):.2f}", f"{max(fnum(r, 'col_mass_max') for r in rs):.2f}",
             f"{fnum(rs[0], 'col_mass_uniform'):.3f}", f"{max(fnum(r, 'logit_max') for r in rs):.2f}"]
            for v, rs in t.items()]
    out.table("attn_stats", "Attention at initialisation (Pre-LN encoder, d = 64, h = 4, L = 4, "
              "16 text sequences): row entropy (mean ± sd over layers and heads) against "
              "uniform rows, largest column mass against uniform, largest logit",
              ["variant", "row entropy", "uniform", "largest column mass", "uniform",
               "largest logit"], rows, "lrrrrr")
    for v, rs in t.items():
        out.value(f"maps.{v}.colmax", f"{max(fnum(r, 'col_mass_max') for r in rs):.2f}")
        out.value(f"maps.{v}.logit", f"{max(fnum(r, 'logit_max') for r in rs):.2f}")
    fig, ax = plots.figure(3, w=2.2, h=2.3)
    imgs = {}
    for v in ("fullLN", "headLN", "headRMS"):
        m = read(d, f"attn_map_layer2_{v}.csv", ("head", "query", "key", "weight"))
        nq = max(int(r["query"]) for r in m) + 1
        imgs[v] = np.zeros((nq, nq))
        for r in m:
            if r["head"] == "0":
                imgs[v][int(r["query"]), int(r["key"])] = fnum(r, "weight")
    top = max(float(i.max()) for i in imgs.values())
    for a, (v, img) in zip(ax, imgs.items()):
        im = a.imshow(img, cmap="magma", vmin=0, vmax=top)
        a.set_title(v)
        a.set_xlabel("key")
        a.grid(False)
    fig.colorbar(im, ax=ax, shrink=0.8, label="attention weight")
    ax[0].set_ylabel("query")
    out.figure("attn_layer2", "Attention weights of head 0 in layer 2, one text sequence, "
               "full-width LN, per-head LN and per-head RMSNorm, on one colour scale (no "
               "vertical stripes: no key takes most of every query's weight)", fig)


def _msd(v):
    e = S.mean_ci(v)
    return e.value, e.sd
