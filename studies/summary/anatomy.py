"""Curvature anatomy (studies/anatomy): extremes of H, its Gauss-Newton part G and
functional part F; eigenvector mass per tensor; per-layer block norms ||A_bb||_F;
Jensen-Shannon distances between block spectra.  From lm/ and seq2seq/
{extremes,mass,blocknorms,js}.csv.  Post/Pre ratios and ratios between quantities
are paired by seed; trends are fits to the per-seed values (stats.py)."""
import math
from collections import defaultdict

import numpy as np

from . import plots
from . import stats as S
from .writer import Summary, fnum, read, sidecar_of

PARTS = ("lm", "seq2seq")
FILES = ("extremes.csv", "mass.csv", "blocknorms.csv", "js.csv")
OPS = {"hessian": "H", "ggn": "G", "functional": "F"}
POS = ("post", "pre")
NAME = {"post": "Post-LN", "pre": "Pre-LN"}
EQUAL = (1 / 1.2, 1.2)
KINDS = ("Q", "K", "V", "O", "FFN1", "FFN2")
EXT = ("H_top", "H_bottom", "G_top", "F_top", "F_bottom")


def kind_of(t):
    """Tensor name -> kind for the eigenvector masses."""
    if t.endswith("_emb"):
        return "emb"
    if t.startswith("out."):
        return "out"
    p = t.split(".")
    if len(p) >= 3 and p[-2] in ("attn", "xattn"):
        return ("X" if p[-2] == "xattn" else "") + p[-1][1].upper()
    return "FFN" if len(p) >= 3 and p[-2] == "ffn" else "norm"


def cfg(r):
    return (r["task"], r["norm_pos"], r["norm"], r["qk_norm"], int(r["L"]), int(r["d"]))


def load(d):
    """V[cfg][quantity][seed] and the raw rows."""
    V = defaultdict(lambda: defaultdict(dict))
    rows = {f: [] for f in FILES}
    for p in PARTS:
        for f in FILES:
            rows[f] += read(d, f"{p}/{f}")
    conv = [0, 0, set()]
    for r in rows["extremes.csv"]:
        q = OPS[r["operator"]] + "_" + r["which"]
        conv[1] += 1
        if r["converged"] != "1":
            conv[2].add(q.replace("_", " "))
            continue
        conv[0] += 1
        V[cfg(r)][q][int(r["seed"])] = abs(fnum(r, "eigenvalue"))
    agg = defaultdict(float)
    for r in rows["blocknorms.csv"]:
        side = r["side"] + "." if r["task"] == "seq2seq" else ""
        agg[(cfg(r), int(r["seed"]), OPS[r["operator"]], side + r["kind"])] += \
            fnum(r, "frob") ** 2
    for (c, s, op, k), v in agg.items():
        V[c][f"{op}_frob_{k}"][s] = math.sqrt(v)
    for c in list(V):
        pre = "dec." if c[0] == "seq2seq" else ""
        for s, q in V[c].get(f"H_frob_{pre}Q", {}).items():
            V[c]["H_ratio_VQ"][s] = V[c][f"H_frob_{pre}V"][s] / q
    js = defaultdict(list)
    for r in rows["js.csv"]:
        js[(cfg(r), int(r["seed"]))].append((fnum(r, "js_distance"), fnum(r, "js_scaled")))
    for (c, s), v in js.items():
        V[c]["JS_mean"][s] = float(np.mean([a for a, _ in v]))
        V[c]["JSs_mean"][s] = float(np.mean([b for _, b in v]))
    mk = defaultdict(float)
    for r in rows["mass.csv"]:
        mk[(cfg(r), OPS[r["operator"]] + "_" + r["which"], int(r["seed"]),
            kind_of(r["tensor"]))] += fnum(r, "mass")
    for (c, vec, s, k), v in mk.items():
        V[c][f"mass_{vec}_{k}"][s] = v
    return V, rows, conv, mk


def summarise(study, d):
    V, rows, conv, mk = load(d)
    m = {p: sidecar_of(d, f"{p}/extremes.csv") for p in PARTS}
    ref = {"lm": tuple(m["lm"]["lm_ref"]), "seq2seq": tuple(m["seq2seq"]["s2s_ref"])}
    def span(task, i, j):
        """The sweep's values of L (i = 4) or d (i = 5) at the reference's other one."""
        v = sorted({c[i] for c in V if c[0] == task and c[j] == ref[task][j - 4]})
        return f"{v[0]}-{v[-1]}" if v else "none"
    seeds = sorted({len(s) for c in V for s in [V[c].get("H_top", {})] if s})
    setting = "; ".join([
        f"lm: {m['lm']['lm_data']}, Xavier, h = {m['lm']['h']}, d_ff = 4d, L = "
        f"{span('lm', 4, 5)} at d = {ref['lm'][1]} and d = {span('lm', 5, 4)} at L = "
        f"{ref['lm'][0]} (the reference point), RMSNorm and per-head LayerNorm qk_norm there",
        f"seq2seq: {m['seq2seq']['s2s_data']}, L = {span('seq2seq', 4, 5)} at d = "
        f"{ref['seq2seq'][1]} and d = {span('seq2seq', 5, 4)} at L = {ref['seq2seq'][0]}",
        f"{'-'.join(map(str, seeds))} seeds a point; Lanczos tol {m['lm']['tol']:g}, block "
        "norms by "
        f"Hutchinson ({m['lm']['probes']} probes), SLQ {m['lm']['slq_runs']} x "
        f"{m['lm']['slq_steps']} per kind block, JS kernel {m['lm']['sigma_fraction']:g} of "
        "the common node range"])
    out = Summary(study, d, "Curvature anatomy at initialisation: H = G + F, eigenvectors, "
                  "blocks", setting, "make study-anatomy",
                  [f"{p}/{f}" for p in PARTS for f in FILES], "anatomy")
    out.value("checks.converged", f"{conv[0]} of {conv[1]}")
    out.value("checks.unconverged", ", ".join(sorted(conv[2])) or "none")
    sums = defaultdict(float)
    for (c, vec, s, k), v in mk.items():
        sums[(c, vec, s)] += v
    out.value("checks.mass_sum_maxdev", S.num(max(abs(v - 1) for v in sums.values()), 1))
    point_claims(out, V, ref)
    fits(out, V, ref)
    tables(out, V, rows, ref)
    figures(out, V, rows, ref)
    out.close()


def key(task, pos, L, d, norm="layernorm", qk="none"):
    return (task, pos, norm, qk, L, d)


def paired(V, a, qa, b, qb):
    """Per-seed values of quantity qa at config a and qb at b, over common seeds."""
    s = sorted(set(V[a][qa]) & set(V[b][qb]))
    return [V[a][qa][i] for i in s], [V[b][qb][i] for i in s]


def ratio_claim(out, cid, text, V, a, qa, b, qb, file, margin=EQUAL):
    if a not in V or b not in V:
        return None
    x, y = paired(V, a, qa, b, qb)
    if len(x) < 2:
        return None
    return out.claim(cid, text, S.ratio_ci(x, y), file, null=1, margin=margin,
                     words=("larger", "smaller", "equal"),
                     how=f"{len(x)} seeds, paired ratios; equal: within a factor 1.2")


def point_claims(out, V, ref):
    L0, d0 = ref["lm"]
    Lmax = max(c[4] for c in V if c[0] == "lm")
    P, R = key("lm", "post", L0, d0), key("lm", "pre", L0, d0)
    ratio_claim(out, "ref_H_top", f"Top of H, Post-LN / Pre-LN (lm, L = {L0}, d = {d0})",
                V, P, "H_top", R, "H_top", "lm/extremes.csv")
    ratio_claim(out, "ref_G_over_H", "Post-LN: top of G over top of H (the Gauss-Newton part "
                "above H)", V, P, "G_top", P, "H_top", "lm/extremes.csv")
    ratio_claim(out, "ref_F_over_H", "Post-LN: |bottom of F| over |bottom of H| (the "
                "functional part below H)", V, P, "F_bottom", P, "H_bottom", "lm/extremes.csv")
    ratio_claim(out, "ref_mass_FFN_over_Q", "Post-LN: mass of H's top eigenvector on the FFN "
                "tensors over its mass on the query weights", V, P, "mass_H_top_FFN", P,
                "mass_H_top_Q", "lm/mass.csv")
    for p in POS:
        ratio_claim(out, f"L1_VQ_{p}", f"{NAME[p]}, one layer (L = 1, d = {d0}): "
                    "||H_VV||_F over ||H_QQ||_F (Ormaniec et al.: value blocks far larger)",
                    V, key("lm", p, 1, d0), "H_frob_V", key("lm", p, 1, d0), "H_frob_Q",
                    "lm/blocknorms.csv")
        ratio_claim(out, f"rms_{p}", f"{NAME[p]}: top of H with RMSNorm over LayerNorm",
                    V, key("lm", p, L0, d0, "rmsnorm"), "H_top", key("lm", p, L0, d0),
                    "H_top", "lm/extremes.csv")
        ratio_claim(out, f"qk_{p}", f"{NAME[p]}: aggregate V/Q block-norm ratio with per-head "
                    "LayerNorm qk_norm over without", V, key("lm", p, L0, d0, qk="layernorm"),
                    "H_ratio_VQ", key("lm", p, L0, d0), "H_ratio_VQ", "lm/blocknorms.csv")
    ratio_claim(out, "ref_JS_pre_over_post", "Mean JS distance between block spectra, Pre-LN / "
                "Post-LN", V, R, "JS_mean", P, "JS_mean", "lm/js.csv")
    for c in V:   # reference values for the prose: mean ± sd over seeds
        if (c[4], c[5]) in (ref[c[0]], (1, ref[c[0]][1]), (Lmax, d0)) or c[2:4] != \
                ("layernorm", "none"):
            tag = ".".join(map(str, c[:4])) + f".L{c[4]}.d{c[5]}"
            for q in EXT + ("H_ratio_VQ", "JS_mean", "JSs_mean", "mass_H_top_Q",
                            "mass_H_top_FFN", "mass_H_top_V"):
                if V[c].get(q):
                    out.value(f"{tag}.{q}", S.pm(*_msd(V[c][q].values())))
    post_gt = [sum(V[c]["H_top"].get(s, 0) > V[(c[0], "pre") + c[2:]]["H_top"].get(s, math.inf)
                   for s in V[c]["H_top"]) for c in list(V) if c[1] == "post"]
    out.value("checks.post_gt_pre_top_seeds", f"{sum(post_gt)} of "
              f"{sum(len(V[c]['H_top']) for c in V if c[1] == 'post')}")


def _msd(v):
    e = S.mean_ci(list(v))
    return e.value, (e.sd if e.n > 1 else math.nan)


def sweep(V, task, pos, kind, ref):
    L0, d0 = ref[task]
    return sorted([c for c in V if c[0] == task and c[1] == pos and c[2:4] == ("layernorm",
                   "none") and (c[5] == d0 if kind == "depth" else c[4] == L0)],
                  key=lambda c: c[4] if kind == "depth" else c[5])


def fit_of(V, cs, q, kind, pre_cs=None):
    """A power law of quantity q (or of the Post/Pre ratio: pre_cs) over the sweep's
    per-seed values."""
    xs, ys = [], []
    for i, c in enumerate(cs):
        if pre_cs is None:
            v = list(V[c].get(q, {}).values())
        else:
            a, b = paired(V, c, q, pre_cs[i], q)
            v = [x / y for x, y in zip(a, b)]
        xs += [c[4] if kind == "depth" else c[5]] * len(v)
        ys += v
    return S.fit_power(xs, ys)


def fits(out, V, ref):
    rows = []
    spec = [("lm", "depth", ("H_top", "H_bottom", "G_top", "F_bottom", "H_ratio_VQ", "JS_mean",
                             "JSs_mean")),
            ("lm", "width", ("H_top", "H_bottom", "G_top", "F_bottom", "H_ratio_VQ", "JS_mean")),
            ("seq2seq", "depth", ("H_top", "H_bottom", "H_ratio_VQ")),
            ("seq2seq", "width", ("H_top", "H_bottom"))]
    claims = {("lm", "depth", "ratio", q) for q in ("H_top", "H_bottom", "G_top", "F_bottom")} | \
        {("lm", "width", "ratio", q) for q in ("H_top", "H_bottom")} | \
        {("lm", "depth", p, "H_ratio_VQ") for p in POS} | \
        {("lm", "depth", p, "JS_mean") for p in POS} | \
        {("seq2seq", "depth", "ratio", "H_top")}
    x = {"depth": "L", "width": "d"}
    data = []
    for task, kind, qs in spec:
        cs = {p: sweep(V, task, p, kind, ref) for p in POS}
        for q in qs:
            for series in ("post", "pre", "ratio"):
                if series == "ratio" and not q.startswith(("H_", "G_", "F_")) or \
                        q == "H_ratio_VQ" and series == "ratio":
                    continue
                try:   # a small run may have too few points for a fit
                    f = fit_of(V, cs["post"], q, kind, cs["pre"]) if series == "ratio" else \
                        fit_of(V, cs[series], q, kind)
                except ValueError:
                    continue
                what = "Post/Pre ratio of " if series == "ratio" else NAME[series] + " "
                cid = f"{task}.{kind}.{series}.{q}"
                text = f"{task}: {what}{q.replace('_', ' ')} against {x[kind]} ({kind} sweep)"
                if (task, kind, series, q) in claims:
                    word = out.fit_claim(cid, text, f, f"{task}/extremes.csv", x[kind],
                                         margin=0.1)
                else:
                    word = S.verdict(f.slope, 0, 0.1)
                    out.value(cid, S.ci(f.slope))
                top = max(zip(f.leverage, f.points))
                lo, hi = np.nanmin(f.loo), np.nanmax(f.loo)
                e = f.slope
                data.append([task, kind, series, q, min(f.points), max(f.points), f.n_obs,
                             e.value, e.se, e.dof, e.lo, e.hi, f.chi2dof, word])
                rows.append([task, kind, what.strip(), q, f"{x[kind]} = {min(f.points):g}-"
                             f"{max(f.points):g}", f.n_obs, S.ci(f.slope),
                             S.num(f.slope.dof, 2), S.num(f.chi2dof, 2), word,
                             f"{x[kind]} = {top[1]:g}: {top[0]:.2f}",
                             f"{S.num(lo)} to {S.num(hi)}"])
    out.csv("fits.csv", ["task", "sweep", "series", "quantity", "x_min", "x_max", "seeds",
                         "slope", "se", "dof", "ci_lo", "ci_hi", "chi2dof", "verdict"], data,
            "power-law exponents against L or d: fits to the per-seed values (stats.fit_power)")
    out.table("fits", "Power-law exponents against depth L or width d: least squares through "
              "the per-seed values (ratios: per-seed Post/Pre), 95% CI, the verdict (flat: "
              "|b| < 0.1), the point with the largest leverage and the exponent's range "
              "with one point left out", ["task", "sweep", "series", "quantity", "range",
                                         "seeds", "exponent [95% CI]", "dof", "χ²/dof",
                                         "verdict", "largest leverage", "leave one out"],
              rows, "llll" + "r" * 5 + "lrr")


def tables(out, V, rows, ref):
    t = []
    for c in sorted(V, key=lambda c: (c[0], c[2], c[3], c[4], c[5], c[1])):
        t.append(list(c) + [S.pm(*_msd(V[c][q].values())) if V[c].get(q) else "-"
                            for q in EXT] + ["/".join(str(len(V[c].get(q, {}))) for q in EXT)])
    out.table("extremes", "Extreme eigenvalues (magnitudes) of H, its Gauss-Newton part G and "
              "functional part F at initialisation, mean ± sd over converged seeds (n: seeds "
              "per column)", ["task", "pos", "norm", "qk", "L", "d", "H top", "|H bottom|",
                              "G top", "F top", "|F bottom|", "n"], t, "llllrr" + "r" * 6)
    kinds = ("emb", "Q", "K", "V", "O", "FFN", "out")
    t = [[task, NAME[p], vec] + [S.pm(*_msd(V[key(task, p, *ref[task])][f"mass_{vec}_{k}"]
                                            .values())) for k in kinds]
         for task in PARTS for p in POS for vec in ("H_top", "H_bottom")]
    out.table("mass", "Mass of the extreme eigenvectors of H on each kind of tensor (sum of "
              "squared entries over all layers) at the reference points, mean ± sd over seeds",
              ["task", "pos", "vector"] + list(kinds), t, "lll" + "r" * len(kinds))
    Lmax = max(c[4] for c in V if c[0] == "lm")
    per = defaultdict(list)
    for r in rows["blocknorms.csv"]:
        c = cfg(r)
        if c[0] == "lm" and c[4] == Lmax and c[2:4] == ("layernorm", "none") and \
                r["operator"] == "hessian":
            per[(c[1], int(r["layer"]), r["kind"])].append(fnum(r, "frob"))
    out.per_layer = per
    for p in POS:
        for k in ("Q", "V"):
            out.value(f"layers.{p}.{k}", f"{S.num(_gm(per[(p, 0, k)]), 2)} -> "
                                         f"{S.num(_gm(per[(p, Lmax - 1, k)]), 2)}")
    t = [[l] + [S.num(_gm(per[(p, l, k)]), 2) for p in POS for k in ("Q", "V", "FFN2")]
         for l in range(Lmax)]
    out.table("layers", f"||H_bb||_F per layer of the lm model with L = {Lmax}, d = 32: "
              "geometric mean over seeds (every kind in blocknorms.csv; figure blocknorms)",
              ["layer"] + [f"{NAME[p]} {k}" for p in POS for k in ("Q", "V", "FFN2")], t)
    fg = defaultdict(lambda: [0, 0])
    by = defaultdict(dict)
    for r in rows["blocknorms.csv"]:
        by[(r["task"], cfg(r), r["seed"], r["block"])][OPS[r["operator"]]] = fnum(r, "frob")
    for (task, c, _, b), v in by.items():
        k = [r for r in (b.split(".")[-1],)][0]
        g = fg[(task, c[1], kind_of(b) if not b.endswith(("w1", "w2")) else "FFN" + b[-1])]
        g[0] += v["F"] > v["G"]
        g[1] += 1
        del k
    for (task, p, k), (a, n) in sorted(fg.items()):
        out.value(f"checks.F_gt_G.{task}.{p}.{k}", f"{a} of {n}")


def _gm(v):
    return math.exp(float(np.mean(np.log(v)))) if v else math.nan


def figures(out, V, rows, ref):
    fig, ax = plots.figure(4, w=2.5, h=2.6)
    for i, (kind, q) in enumerate([("depth", "H_top"), ("depth", "H_bottom"), ("width", "H_top"),
                                   ("width", "H_ratio_VQ")]):
        for p in POS:
            cs = sweep(V, "lm", p, kind, ref)
            xs = [c[4] if kind == "depth" else c[5] for c in cs]
            plots.seeds(ax[i], xs, [list(V[c][q].values()) for c in cs], p)
        plots.log_axes(ax[i], xs)
        ax[i].set_xlabel("depth L" if kind == "depth" else "width d")
        ax[i].set_title({"H_top": "top of H", "H_bottom": "|bottom of H|",
                         "H_ratio_VQ": "||H_VV|| / ||H_QQ||"}[q])
    ax[0].legend()
    out.figure("extremes", "lm: the top and bottom of H against depth (d = 32) and width (L = "
               "4), and the value/query block-norm ratio against width. " + plots.CAPTION,
               fig)
    per = out.per_layer
    Lmax = max(k[1] for k in per) + 1
    fig, ax = plots.figure(2, w=3.4, h=2.8)
    for a, p in zip(ax, POS):
        for i, (k, col) in enumerate(zip(("Q", "V", "O", "FFN2"), ("tab:red", "tab:blue",
                                                                 "tab:green", "tab:purple"))):
            plots.seeds(a, [l + 0.15 * (i - 1.5) for l in range(Lmax)],
                        [per[(p, l, k)] for l in range(Lmax)], color=col, label=k)
        plots.log_axes(a, xlog=False)
        a.set_title(f"{NAME[p]}, L = {Lmax}")
        a.set_xlabel("layer")
    ax[0].set_ylabel("||H_bb||_F")
    ax[1].legend(ncol=2)
    out.figure("blocknorms", f"Per-layer Frobenius norms of the diagonal Hessian blocks of the "
               f"query, value, output and second FFN matrices (lm, L = {Lmax}, d = 32; every "
               "kind in blocknorms.csv; Ormaniec et al.'s heterogeneity). "
               f"{plots.CAPTION} (bars, "
               "not mean ± sd: a block near 0 in one seed stays on the log axis).", fig)
