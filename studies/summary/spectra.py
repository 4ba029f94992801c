"""Hessian spectra, Post-LN against Pre-LN (studies/hessian_spectrum: results/hessian;
studies/multi30k_hessian: results/multi30k, results/multi30k_all), from eigs.csv,
trace.csv, blocks.csv, slq_nodes.csv (and grad.csv, jobs.csv for Multi30k).
Ratios are paired by seed over the seeds where both values converged."""
import math
from collections import defaultdict

import numpy as np

from . import plots
from . import stats as S
from .writer import Summary, fnum, read, sidecar_of

POS = ("post", "pre")
NAME = {"post": "Post-LN", "pre": "Pre-LN"}
EQUAL = (1 / 1.2, 1.2)   # "equal": a ratio within a factor 1.2
KAPPA, MARGIN, PAD, PER_SIGMA = 3.0, 0.05, 6.0, 4   # density: lnk_sigma_from_kappa's


def setting_of(m):
    c = m["config"]
    s = (f"{c['task']} {c['L']}-{c['L']}" if c["task"] == "seq2seq" else f"{c['task']}, "
         f"L = {c['L']}") + (f", {c['norm']}, {c['init']} init, d = {c['d']}, h = {c['h']}, "
                            f"d_ff = {c['d_ff']}")
    if "pairs" in m:
        s += (f"; Multi30k De-En validation, {'all' if m['sentences'] == 0 else 'first'} "
              f"{m['pairs']} pairs (V_src = {c['V_src']}, V_tgt = {c['V_tgt']}, "
              f"{m['n_scored']} scored tokens)")
    else:
        s += f", V = {c['V']}; {m['data']}, B = {m['B']}, T = {m['T']}"
    return s + (f"; {m['seeds']} seeds; eigenvalues converged at residual <= {m['eig_tol']:g} "
                f"x the run's largest |Ritz value|")


def per_seed(rows, key, val, conv=None):
    """{pos: {seed: value}} of the rows that pass key, converged ones only."""
    out = defaultdict(dict)
    for r in rows:
        if key(r) and (conv is None or r[conv] == "1"):
            out[r["norm_pos"]][int(r["seed"])] = val(r)
    return out


def compare(out, cid, text, v, file, seeds):
    """Post / Pre over the seeds where both have a value: a claim and a table row."""
    both = [s for s in seeds if s in v["post"] and s in v["pre"]]
    row = [text] + [S.pm(*_msd(list(v[p].values()))) if v[p] else "-" for p in POS]
    if len(both) >= 2 and all(v[p][s] > 0 for p in POS for s in both):
        e = S.ratio_ci([v["post"][s] for s in both], [v["pre"][s] for s in both])
        word = out.claim(cid, f"{text}: Post-LN / Pre-LN", e, file, null=1, margin=EQUAL,
                         words=("larger", "smaller", "equal"),
                         how=f"{len(both)} seeds, paired; equal: within a factor 1.2")
        return row + [S.ci(e), word, f"{len(both)} of {len(seeds)}"]
    return row + ["-", "-", f"{len(both)} of {len(seeds)}"]


def _msd(v):
    e = S.mean_ci(v)
    return e.value, (e.sd if e.n > 1 else math.nan)


def summarise(study, d):
    eig = read(d, "eigs.csv", ("norm_pos", "seed", "which", "index", "eigenvalue", "converged"))
    trc = read(d, "trace.csv", ("norm_pos", "seed", "trace", "stderr"))
    blk = read(d, "blocks.csv", ("norm_pos", "seed", "block", "top_eigenvalue", "converged"))
    slq = read(d, "slq_nodes.csv", ("norm_pos", "seed", "run", "node", "weight"))
    m = sidecar_of(d, "eigs.csv")
    m30k = "pairs" in m
    raw = ["eigs.csv", "trace.csv", "blocks.csv", "slq_nodes.csv"] + \
        (["grad.csv", "jobs.csv"] if m30k else [])
    title = (f"Multi30k ({m.get('pairs')} pairs): Hessian and gradients at initialisation, "
             "Post-LN vs Pre-LN" if m30k
             else "Hessian spectra at initialisation, Post-LN vs Pre-LN")
    cmd = ("make study-hessian" if not m30k else "make study-multi30k" if study == "multi30k"
           else "OPENBLAS_NUM_THREADS=1 mpirun -np 2 -x OPENBLAS_NUM_THREADS build-mpi/studies/"
                "multi30k_hessian --rows 0 --jobs 1 --grad-seeds 3 --out results/multi30k_all")
    out = Summary(study, d, title, setting_of(m), cmd, raw, "spectra")
    seeds = list(range(m["seeds"]))
    ext = lambda w: lambda r: r["which"] == w and r["index"] == "0"  # noqa: E731
    top = per_seed(eig, ext("top"), lambda r: fnum(r, "eigenvalue"), "converged")
    bot = per_seed(eig, ext("bottom"), lambda r: -fnum(r, "eigenvalue"), "converged")
    tr = per_seed(trc, lambda r: True, lambda r: fnum(r, "trace"))
    nconv = sum(r["converged"] == "1" for r in eig)
    out.value("eig_conv", f"{nconv} of {len(eig)}")
    rows = [compare(out, "top", "top eigenvalue", top, "eigs.csv", seeds),
            compare(out, "bottom", "|bottom eigenvalue|", bot, "eigs.csv", seeds),
            compare(out, "trace", "trace (Hutchinson)", tr, "trace.csv", seeds)]
    out.value("trace_se_max", S.num(max(fnum(r, "stderr") for r in trc), 2))
    if m30k:
        jobs = read(d, "jobs.csv", ("kind", "norm_pos", "seed", "loss"))
        loss = per_seed(jobs, lambda r: r["kind"] == "spectrum", lambda r: fnum(r, "loss"))
        rows.append(compare(out, "loss", "loss at init", loss, "jobs.csv", seeds))
    out.table("extremes", "Extremes and trace of the Hessian at initialisation: mean ± sd "
              "over seeds (converged values), and the Post-LN / Pre-LN ratio: geometric mean "
              "of the per-seed ratios [95% CI], verdict (equal: within a factor 1.2)",
              ["quantity", "Post-LN", "Pre-LN", "Post / Pre [95% CI]", "verdict",
               "seeds compared"], rows, "lrrrlr")
    out.table("per_seed", "Every seed: extreme eigenvalues and trace (* not converged)",
              ["seed", "top Post", "top Pre", "bottom Post", "bottom Pre", "trace Post",
               "trace Pre"], [[s] + [_cell(eig, p, s, w) for w in ("top", "bottom")
                                     for p in POS] + [S.num(tr[p].get(s, math.nan))
                                                      for p in POS] for s in seeds])
    blocks(out, blk, seeds, m30k)
    density(out, slq, m)
    if m30k:
        gradients(out, read(d, "grad.csv", ("norm_pos", "seed", "L", "side", "layer", "tensor",
                                             "grad_norm")), m)
    out.close()


def _cell(eig, p, s, w):
    r = [r for r in eig if r["norm_pos"] == p and int(r["seed"]) == s and r["which"] == w
         and r["index"] == "0"]
    return S.num(fnum(r[0], "eigenvalue")) + ("" if r[0]["converged"] == "1" else "*") \
        if r else "-"


def blocks(out, blk, seeds, m30k):
    names = list(dict.fromkeys(r["block"] for r in blk))
    rows, larger, res = [], 0, []
    for b in names:
        v = per_seed([r for r in blk if r["block"] == b], lambda r: True,
                     lambda r: fnum(r, "top_eigenvalue"), "converged")
        both = [s for s in seeds if s in v["post"] and s in v["pre"]]
        row = [f"`{b}`"] + [S.pm(*_msd(list(v[p].values()))) if v[p] else "-" for p in POS]
        if len(both) >= 2:
            e = S.ratio_ci([v["post"][s] for s in both], [v["pre"][s] for s in both])
            w = S.verdict(e, 1, EQUAL, "larger", "smaller", "equal")
            larger += w.startswith("larger")
            row += [S.ci(e), w]
        else:
            row += ["-", "-"]
        res += [fnum(r, "residual") / abs(fnum(r, "top_eigenvalue")) for r in blk
                if r["block"] == b]
        rows.append(row + [f"{len(both)} of {len(seeds)}"])
    ok = sum(r[-1].split()[0] not in ("0", "1") for r in rows)
    out.value("blocks_larger", f"{larger} of {ok}")
    out.value("blocks_compared", f"{ok} of {len(names)}")
    out.value("block_conv", f"{sum(r['converged'] == '1' for r in blk)} of {len(blk)}")
    out.value("block_rel_median", f"{100 * float(np.median(res)):.2g}%")
    out.table("blocks", "Top eigenvalue of each parameter block: mean ± sd over converged "
              "seeds, Post-LN / Pre-LN [95% CI] over the seeds where both converged",
              ["block", "Post-LN", "Pre-LN", "Post / Pre [95% CI]", "verdict",
               "seeds compared"], rows, "lrrrlr")


def density(out, slq, m):
    """The pooled SLQ density of each norm position (every seed's runs averaged), one
    Gaussian kernel for both: sigma from Papyan's kappa = 3 on the union of the nodes'
    range, on one grid (lnk_sigma_from_kappa, lnk_slq_pool_grid)."""
    res = defaultdict(list)
    for r in slq:
        res[(r["norm_pos"], int(r["seed"]))].append((int(r["run"]), fnum(r, "node"),
                                                      fnum(r, "weight")))
    nodes = np.array([n for v in res.values() for _, n, _ in v])
    lo, hi = float(nodes.min()), float(nodes.max())
    sig = (1 + 2 * MARGIN) * (hi - lo) / ((m["slq_steps"] - 1) * math.sqrt(8 * math.log(KAPPA)))
    npts = math.ceil((hi - lo + 2 * PAD * sig) / (sig / PER_SIGMA) - 1e-9) + 1
    t = np.linspace(lo - PAD * sig, hi + PAD * sig, npts)
    phi = {}
    for p in POS:
        keys = [k for k in res if k[0] == p]
        acc = np.zeros(npts)
        for k in keys:
            runs = len({r for r, _, _ in res[k]})
            nw = np.array([(n, w) for _, n, w in res[k]])
            z = (t[:, None] - nw[None, :, 0]) / sig
            acc += (np.exp(-0.5 * z * z) @ nw[:, 1]) / (runs * sig * math.sqrt(2 * math.pi))
        phi[p] = acc / len(keys)
        ext = [n for k in keys for _, n, _ in res[k]]
        out.value(f"tail_neg_{p}", S.num(min(ext)))
        out.value(f"tail_pos_{p}", S.num(max(ext)))
    out.value("sigma", S.num(sig))
    out.csv("density.csv", ["norm_pos", "t", "density"],
            [[p, float(x), float(y)] for p in POS for x, y in zip(t, phi[p])],
            f"pooled SLQ density, Gaussian kernel sigma = {sig!r} (Papyan's kappa = 3)")
    fig, (ax,) = plots.figure(w=4.6)
    for p in POS:
        ax.plot(t, np.maximum(phi[p], 1e-12), color=plots.STYLE[p][0], lw=1, label=NAME[p])
    ax.set_yscale("log")
    ax.set_ylim(1e-6, None)
    ax.set_xlabel("eigenvalue")
    ax.set_ylabel("spectral density")
    ax.legend()
    out.figure("density", "Spectral density of the Hessian at initialisation (SLQ, every "
               f"seed's runs pooled; Gaussian kernel, sigma = {S.num(sig)} from Papyan's "
               "kappa = 3, the same for both); log density axis", fig)


def gradients(out, g, m):
    """Xiong et al.'s Figure 3 on Multi30k: the profile of the L-L model and the last
    decoder W2 against L (per-seed fits)."""
    L0 = m["config"]["L"]
    Ls = [int(x) for x in str(m["depths"]).split(",")]
    val = defaultdict(list)
    for r in g:
        val[(r["norm_pos"], int(r["L"]), r["side"], int(r["layer"]), r["tensor"])].append(
            fnum(r, "grad_norm"))
    rows = [[f"{s} {l}"] + [S.pm(*_msd(val[(p, L0, s, l, t)])) for p in POS
                            for t in ("ffn.w1", "ffn.w2")]
            for s in ("enc", "dec") for l in range(L0)]
    out.table("profile", f"||dL/dW||_F of every layer's FFN matrices, the {L0}-{L0} model "
              "(Xiong et al.'s Figure 3 a, b), mean ± sd over seeds",
              ["layer", "Post-LN W1", "Post-LN W2", "Pre-LN W1", "Pre-LN W2"], rows)
    last = {p: [val[(p, L, "dec", L - 1, "ffn.w2")] for L in Ls] for p in POS}
    fits = {p: S.fit_power([L for L, v in zip(Ls, last[p]) for _ in v],
                           [y for v in last[p] for y in v]) for p in POS}
    xs = "L"
    out.fit_claim("slope_post", "Post-LN last decoder ||dL/dW2||_F against depth L (Theorem "
                  "1: flat)", fits["post"], "grad.csv", xs, margin=0.1)
    out.fit_claim("slope_pre", "Pre-LN last decoder ||dL/dW2||_F against depth L",
                  fits["pre"], "grad.csv", xs, margin=0.1)
    out.claim("slope_pre_theory", "Pre-LN depth exponent against Theorem 1's -1/2",
              fits["pre"].slope, "grad.csv", null=-0.5, margin=0.1,
              words=("shallower than -1/2", "steeper than -1/2", "equal to -1/2"))
    out.value("grad_seeds", str(len(last["post"][0])))
    out.table("depth", "Last decoder ||dL/dW2||_F against depth (L-L models; Figure 3 c, d): "
              "mean ± sd over seeds, and the ratio of the geometric means",
              ["L", "Post-LN", "Pre-LN", "Post / Pre"],
              [[L, S.pm(*_msd(a)), S.pm(*_msd(b)), f"{_gm(a) / _gm(b):.2f}"]
               for L, a, b in zip(Ls, last["post"], last["pre"])])
    fig, ax = plots.figure(2)
    for p in POS:
        for s, mk in (("enc", ":"), ("dec", "-")):
            plots.seeds(ax[0], list(range(1, L0 + 1)), [val[(p, L0, s, l, "ffn.w2")]
                                                        for l in range(L0)], p,
                        label=f"{NAME[p]} {s}", line=mk)
        plots.seeds(ax[1], Ls, last[p], p)
        plots.fit(ax[1], fits[p], plots.STYLE[p][0], f"fit {S.num(fits[p].slope.value, 2)}")
    plots.log_axes(ax[0], list(range(1, L0 + 1)), xlog=False)
    plots.log_axes(ax[1], Ls)
    ax[0].set_xlabel("layer")
    ax[1].set_xlabel("depth L (L-L model)")
    for a in ax:
        a.set_ylabel("||dL/dW2||_F")
        a.legend(ncol=2)
    out.figure("grad", f"Left: every layer's W2 gradient norm in the {L0}-{L0} model (Figure 3 "
               "a, b; encoder dotted, decoder solid). Right: the last decoder layer's against "
               f"depth with the per-seed power-law fits (Figure 3 c, d). {plots.CAPTION}.", fig)


def _gm(v):
    return math.exp(float(np.mean(np.log(v))))
