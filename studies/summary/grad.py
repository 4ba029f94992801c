"""The gradient-norm study of Xiong et al. 2020 (studies/grad_norms; results/grad):
depth.csv, depth_seq2seq.csv, width.csv, tie_ablation.csv, profile.csv and the
hidden-state CSVs.  The statistic is the last block's ||mean over the batches of
dL/dW2||_F (w2_norm_of_mean); every trend is a fit to the per-seed values."""
import math
from collections import defaultdict

import numpy as np

from . import plots
from . import stats as S
from .writer import Summary, fnum, read, sidecar_of

SERIES = [(st, p) for st in ("theorem", "realistic") for p in ("post", "pre")]
NAME = {"post": "Post-LN", "pre": "Pre-LN"}
COL = "w2_norm_of_mean"
RAW = ["depth.csv", "depth_seq2seq.csv", "width.csv", "tie_ablation.csv", "profile.csv",
       "depth_hidden.csv", "width_hidden.csv"]
TH = {"post": (0.0, ("grows", "shrinks", "flat")),
      "pre": (-0.5, ("shallower than -1/2", "steeper than -1/2", "equal to -1/2")),
      "ratio": (0.5, ("steeper than 1/2", "shallower than 1/2", "equal to 1/2"))}


def table(rows, x, col=COL):
    """{(setting, pos): {x: {seed: value}}}"""
    t = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        t[(r["setting"], r["norm_pos"])][int(r[x])][int(r["seed"])] = fnum(r, col)
    return t


def ratio(t, st):
    """Per-seed Post/Pre (the same seed initialises both) of setting st."""
    a, b = t[(st, "post")], t[(st, "pre")]
    return {x: {s: a[x][s] / b[x][s] for s in a[x] if s in b[x]} for x in a if x in b}


def fit(v, lo=0, hi=math.inf):
    pts = [(x, y) for x in sorted(v) if lo <= x <= hi for y in v[x].values()]
    return S.fit_power([p[0] for p in pts], [p[1] for p in pts])


def summarise(study, d):
    dep, s2s, wid = (read(d, f, ("setting", "norm_pos", "L", "d", "seed", COL))
                     for f in RAW[:3])
    m = sidecar_of(d, "depth.csv")
    out = Summary(study, d, "Gradient norms at initialisation (Xiong et al. 2020, Theorem 1)", (
        f"cls task (seq2seq L-L for depth_seq2seq), synthetic batches (ids uniform in [4, V)), "
        f"V = {m['V']}, output tied to the embedding; theorem setting (Wq = Wk = 0, Wo = I, "
        "Xavier-normal, h = 1, d_ff = d) and realistic (Xavier-uniform, h = 4, d_ff = 4d, label "
        f"smoothing 0.1); depth L = {m['Ls'][0]}-{m['Ls'][-1]} at d = {m['d']}, width d = "
        f"{m['ds'][0]}-{m['ds'][-1]} at L = {m['L']}; {m['seeds']} seeds, {m['batches']} "
        f"batches of B x {m['T']} (B = {m['B']}; 4 in width); statistic: the last block's "
        "||mean over the batches of dL/dW2||_F"), "make study-grad", RAW, "grad")
    D, Q, W = table(dep, "L"), table(s2s, "L"), table(wid, "d")
    fits = []
    for name, t, ranges in (("depth", D, ((1, "all L"), (2, "L >= 2"), (8, "L >= 8"))),
                            ("depth_seq2seq", Q, ((0, "all L"),))):
        for st in ("theorem", "realistic"):
            for what, v in (("post", t[(st, "post")]), ("pre", t[(st, "pre")]),
                            ("ratio", ratio(t, st))):
                for lo, lab in ranges if what != "ratio" else ranges[:1]:
                    fits.append((name, st, what, lab, fit(v, lo), "L"))
    ds = sorted(W[SERIES[0]])
    bound = float(np.polyfit(np.log(ds), np.log(ds) + 0.5 * np.log(np.log(ds)), 1)[0])
    out.value("width_bound_slope", f"{bound:.2f}")
    for st, p in SERIES:
        fits.append(("width", st, p, "all d", fit(W[(st, p)]), "d"))
    rows = []
    for name, st, what, lab, f, xn in fits:
        null, words = (bound, ("above the bound's", "below the bound's", "equal to the "
                               "bound's")) if name == "width" else TH[what]
        cid = f"{name}.{st}.{what}.{lab.replace(' >= ', '_from').replace(' ', '_')}"
        series = f"{st} {NAME.get(what, 'Post/Pre')}"
        word = out.fit_claim(cid, f"{name}: {series} against {xn} ({lab})", f, f"{name}.csv", xn,
                             null=null, margin=0.1, words=words)
        if name == "depth_seq2seq" and what == "pre":   # five depths: does it fall at all?
            out.claim(cid + ".falls", f"{name}: {series} against L: falls?", f.slope,
                      f"{name}.csv", margin=0.1)
        if name == "width" and what == "post":   # grad/'s headline: d^(1/2)
            out.claim(cid + ".half", f"width: {series} against d: d^(1/2)?", f.slope,
                      "width.csv", null=0.5, margin=0.1,
                      words=("above 1/2", "below 1/2", "equal to 1/2"))
        rows.append([name, series, lab, S.ci(f.slope), f"{null:.2f}", word,
                     S.num(f.slope.dof, 2), S.num(f.chi2dof, 2), out.values[cid + ".loo"]])
    out.table("fits", "Log-log slopes of the last block's ||dL/dW2||_F (fits to the per-seed "
              "values), 95% CI, against Theorem 1 (Post-LN flat, Pre-LN L^(-1/2), their ratio "
              f"L^(1/2); in d the bound d sqrt(ln d), log-log slope {bound:.2f}), margin 0.1",
              ["sweep", "series", "range", "slope [95% CI]", "reference", "verdict", "dof",
               "χ²/dof", "leave one out"], rows, "lllrrlrrl")
    local(out, D)
    sweeps(out, D, Q, W, ds)
    ties(out, read(d, "tie_ablation.csv", ("setting", "norm_pos", "seed", COL)), W)
    hidden(out, read(d, "depth_hidden.csv", ("setting", "norm_pos", "L", "seed", "site",
                                             "sq_mean")),
           read(d, "width_hidden.csv", ("setting", "norm_pos", "d", "site", "frac_over")))
    profile(out, read(d, "profile.csv", ("task", "setting", "norm_pos", "stack", "layer",
                                         "tensor", "norm_of_mean")))
    secs = [sidecar_of(d, f).get("wall_seconds", 0) for f in RAW[:5]]
    out.value("time_sweeps_min", f"{max(secs[2], sum(secs) - secs[2]) / 60:.1f}")
    out.close()


def local(out, D):
    """Slopes between successive depths (each a fit to the two points' seeds)."""
    Ls = sorted(D[SERIES[0]])
    rows = []
    for a, b in zip(Ls, Ls[1:]):
        rows.append([f"{a}-{b}"] + [S.ci(fit(D[k], a, b).slope) for k in SERIES])
    out.table("depth_local", "Local slopes between successive depths L (cls): the fit to the "
              "two depths' seeds, 95% CI", ["L"] + [f"{st} {NAME[p]}" for st, p in SERIES],
              rows)


def sweeps(out, D, Q, W, ds):
    for name, t, xn in (("depth", D, "L"), ("depth_seq2seq", Q, "L"), ("width", W, "d")):
        xs = sorted(t[SERIES[0]])
        rows = [[x] + [S.pm(*_msd(t[k][x].values())) for k in SERIES] +
                [S.ci(S.ratio_ci(*_pair(t, st, x))) for st in ("theorem", "realistic")]
                for x in xs]
        out.table(f"{name}_table", f"Last block's ||dL/dW2||_F against {xn} ({name}): mean ± "
                  "sd over seeds, and the Post/Pre ratio (geometric mean of the per-seed "
                  "ratios [95% CI])", [xn] + [f"{st} {NAME[p]}" for st, p in SERIES] +
                  ["theorem Post/Pre", "realistic Post/Pre"], rows)
        for k in SERIES:
            gm = [_gm(t[k][x].values()) for x in xs]
            out.value(f"{name}.{k[0]}.{k[1]}.range", f"{S.num(min(gm), 2)}-{S.num(max(gm), 2)}")
        fig, ax = plots.figure(2)
        for a, st in zip(ax, ("theorem", "realistic")):
            for p in ("post", "pre"):
                plots.seeds(a, xs, [list(t[(st, p)][x].values()) for x in xs], p)
                f = fit(t[(st, p)])
                plots.fit(a, f, plots.STYLE[p][0], f"fit {S.num(f.slope.value, 2)}")
            plots.log_axes(a, xs)
            a.set_title(f"{st} setting")
            a.set_xlabel("depth L" if xn == "L" else "width d")
            a.set_ylabel("last block ||dL/dW2||_F")
            a.legend(ncol=2)
        out.figure(name, f"The last block's ||dL/dW2||_F against {xn} ({name}), Post-LN and "
                   f"Pre-LN; dashed: power-law fits over the whole range. {plots.CAPTION}.",
                   fig)
    out.value("width_pre_exceeds_post_from", str(min(
        (x for x in ds if _gm(W[("theorem", "pre")][x].values()) >
         _gm(W[("theorem", "post")][x].values())), default="-")))


def _pair(t, st, x):
    s = sorted(set(t[(st, "post")][x]) & set(t[(st, "pre")][x]))
    return [t[(st, "post")][x][i] for i in s], [t[(st, "pre")][x][i] for i in s]


def _msd(v):
    e = S.mean_ci(list(v))
    return e.value, (e.sd if e.n > 1 else math.nan)


def _gm(v):
    return math.exp(float(np.mean(np.log(list(v)))))


def ties(out, rows, W):
    T = table(rows, "d")
    rw = []
    for st, p in SERIES:
        x = next(iter(T[(st, p)]))
        s = sorted(set(T[(st, p)][x]) & set(W[(st, p)][x]))
        e = S.ratio_ci([W[(st, p)][x][i] for i in s], [T[(st, p)][x][i] for i in s])
        word = out.claim(f"tie.{st}.{p}", f"{st} {NAME[p]} at d = {x}: ||dL/dW2||_F with the "
                         "output tied to the embedding over untied", e, "tie_ablation.csv",
                         null=1, margin=(1 / 1.2, 1.2), words=("larger", "smaller", "equal"),
                         how=f"{len(s)} seeds, paired; equal: within a factor 1.2")
        rw.append([st, NAME[p], x, S.ci(e), word])
    out.table("tie", "Tied over untied output at d = V: ||dL/dW2||_F ratio (geometric mean of "
              "per-seed ratios [95% CI])", ["setting", "norm", "d", "tied / untied", "verdict"],
              rw, "llrrl")


def hidden(out, dh, wh):
    """Lemma 2 at the deepest model: Pre-LN block inputs against [1 + l/2, 1 + 3l/2],
    Post-LN FFN sums against 1 + 2r/(1 + r)^2 (r = d_ff/d; 1.5 for d_ff = d)."""
    Lmax = max(int(r["L"]) for r in dh)
    v = defaultdict(lambda: defaultdict(list))
    for r in dh:
        if int(r["L"]) != Lmax:
            continue
        st, p, site, l = r["setting"], r["norm_pos"], r["site"], int(r["layer"])
        if p == "pre" and site in ("in", "out"):
            v[(st, "pre")][l + 1 if site == "in" else Lmax + 1].append(fnum(r, "sq_mean"))
        elif p == "post" and site == "ffn":
            v[(st, "post")][l + 1].append(fnum(r, "sq_mean"))
    rows = []
    for st in ("theorem", "realistic"):
        r_ = 1.0 if st == "theorem" else 4.0
        target = 1 + 2 * r_ / (1 + r_) ** 2
        inb = sum(S.mean_ci(x).lo <= 1 + 1.5 * l and S.mean_ci(x).hi >= 1 + 0.5 * l
                  for l, x in v[(st, "pre")].items())
        out.value(f"lemma2.{st}.inband", f"{inb} of {len(v[(st, 'pre')])}")
        per_seed = np.mean([v[(st, "post")][l] for l in sorted(v[(st, "post")])], axis=0)
        out.claim(f"lemma2.{st}.post5", f"Lemma 2, {st}: Post-LN E||x^(post,5)||^2/d averaged "
                  f"over the layers against {target:.3f}", S.mean_ci(per_seed),
                  "depth_hidden.csv", null=target, margin=0.05,
                  words=("above", "below", "equal"), how=f"{len(per_seed)} seeds, the layer "
                  "average per seed; equal: within 0.05")
        for l in (1, 2, 4, 8, 16, 32, Lmax, Lmax + 1):
            if l in v[(st, "pre")]:
                rows.append([st, l, f"[{1 + 0.5 * l:g}, {1 + 1.5 * l:g}]",
                             S.ci(S.mean_ci(v[(st, "pre")][l]))])
    out.value("lemma2_L", str(Lmax))
    out.table("lemma2", f"Lemma 2 at L = {Lmax}: Pre-LN E||x_l||^2/d (l = 1: the embedding "
              f"output; l = L + 1: the final norm's input), mean over seeds [95% CI], against "
              "the band [1 + l/2, 1 + 3l/2]", ["setting", "l", "band", "E||x_l||^2/d"], rows,
              "lrrr")
    fr = defaultdict(list)
    for r in wh:
        if r["site"] in ("attn", "ffn") and r["setting"] == "theorem":
            fr[(r["norm_pos"], int(r["d"]))].append(fnum(r, "frac_over"))
    for (p, x), f in fr.items():
        out.value(f"bounded.{p}.d{x}", S.num(float(np.mean(f)), 2))


def profile(out, rows):
    """Figure 3 a, b: every block's W2 of the 6-layer cls and the 6-6 seq2seq model."""
    v = defaultdict(list)
    for r in rows:
        if r["tensor"] == "ffn.w2":
            v[(r["task"], r["setting"], r["norm_pos"], r["stack"], int(r["layer"]))].append(
                fnum(r, "norm_of_mean"))
    fig, ax = plots.figure(2)
    for a, task in zip(ax, ("seq2seq", "cls")):
        for p in ("post", "pre"):
            for stk, ls in (("enc", ":"), ("dec", "-")):
                ks = sorted(k[4] for k in v if k[:4] == (task, "theorem", p, stk))
                if ks:
                    plots.seeds(a, [k + 1 for k in ks], [v[(task, "theorem", p, stk, k)]
                                                         for k in ks], p,
                                label=f"{NAME[p]} {stk}", line=ls)
                    gm = [_gm(v[(task, "theorem", p, stk, k)]) for k in ks]
                    out.value(f"profile.{task}.{p}.{stk}", f"{S.num(gm[0], 2)} -> "
                              f"{S.num(gm[-1], 2)}")
        plots.log_axes(a, xlog=False)
        a.set_title(f"{task}, theorem setting")
        a.set_xlabel("block")
        a.set_ylabel("||dL/dW2||_F")
        a.legend(ncol=2)
    out.figure("profile", "Every block's ||dL/dW2||_F (Xiong et al.'s Figure 3 a, b): the 6-6 "
               "seq2seq model (encoder dotted, decoder solid) and the 6-layer cls model, theorem "
               f"setting, d = 128. {plots.CAPTION}.", fig)
