"""The placement study (issue 34; studies/placements.c, studies/scripts/study_placements.sh):
curvature and gradients of the six normalisation placements at initialisation, from
results/placements/PART/TAG.csv (one point and part a file, with its sidecar).

The parts' summaries are in placements_curv.py (extremes, Multi30k, variations),
placements_blocks.py (anatomy, coupling) and placements_scale.py (gradients, input
scale); this module loads the rows (placements_data.py), states what is present and
what is still to come, the time each part took, the ranking of the placements, and
writes everything through writer.Summary.  It works on any subset of the grid: a
number is written only where its points are present; every value the prose quotes is
always defined (its text says "not yet run" until its points exist).
"""
import os

from . import placements_blocks as B
from . import placements_curv as C
from . import placements_scale as G
from . import stats as S
from .placements_data import BASES, NAME, PARTS, STAGES, Data, gmean, ratio
from .writer import HERE, Summary, SummaryError

MODULES = ("placements_data", "placements_curv", "placements_blocks", "placements_scale")


class Wide(Summary):
    """Every table shrunk to the line where it is wider (writer.table_tex's wide)."""

    def table(self, *a, **k):
        k.setdefault("wide", True)
        return super().table(*a, **k)


class Claims:
    """writer.Summary's claims where the data exist; otherwise the values the prose
    quotes, saying why there is no number yet."""

    def __init__(self, out):
        self.out = out
        self.flags = []   # fits one point carries (placements_data.ftxt)

    def absent(self, cid, why="not yet run", fit=False):
        self.out.value(cid, why)
        self.out.value(cid + ".verdict", why)
        if fit:
            self.out.value(cid + ".chi2dof", "-")
            self.out.value(cid + ".loo", "-")

    def ratio(self, cid, text, e, file, how, null=1.0, margin=(1 / 1.2, 1.2),
              words=("larger", "smaller", "equal")):
        if e is None:
            return self.absent(cid)
        return self.out.claim(cid, text, e, file, null=null, margin=margin, words=words,
                              how=how)

    def fit(self, cid, text, f, file, xname, null=0.0, margin=0.1,
            words=("grows", "shrinks", "flat")):
        if f is None:
            return self.absent(cid, "too few points yet", fit=True)
        return self.out.fit_claim(cid, text, f, file, xname, null=null, margin=margin,
                                  words=words)


def setting(D):
    """The study's setting from a sidecar (numbers never typed here)."""
    m = next((pt.meta for part in PARTS if part != "m30k" for v in D.P[part].values()
              for pt in v.values()), None)
    if m is None:
        raise SummaryError(f"{D.d}: no complete point (PART/TAG.csv with its .meta.json)")
    c = m["config"]
    return (f"{c['task']} at initialisation ({c['init']}), V = {c['V']}, h = {c['h']}, "
            f"d_ff = {c['d_ff'] // c['d']}d, {m['data']}; the six placements (post, pre, peri, "
            "out, deepnorm, mix; docs/MODEL.md §3) with LayerNorm, ReLU, sinusoidal positions "
            "and biases, L = 1-24 at d = 64 and d = 32-256 at L = 6, one factor at a time "
            "(RMSNorm, SwiGLU, rope, bias-free) at L = 6 and 12; seeds 0-2 (the "
            f"initialisation; the batch is the same); Lanczos at most {m['eig_steps']} steps, "
            f"residual <= {m['tol']:g} max|lambda| (the converged column); Hutchinson "
            f"{m['probes']} probes a Frobenius norm, {m['trace_probes']} a trace, "
            f"{m['cross_probes']} a coupling source group; SLQ {m['slq_runs']} x "
            f"{m['slq_steps']} steps a block, JS kernel {m['sigma_fraction']:g} of the "
            "common node range; Multi30k: seq2seq 6-6, d = 64, h = 1, all validation pairs")


def status(out, D):
    rows, outside = D.status()
    left = D.remaining()
    tot = [0, 0, 0.0, 0.0, 0, 0.0, 0]
    tab = []
    for st in STAGES:
        for s, part, got, n, wall, cpu, big, resumed in rows:
            if s != st:
                continue
            nl, secs, bases = left.get((st, part), (0, 0.0, {}))
            none = bases.get(None, 0)
            basis = ", ".join(f"{b} {bases[b]}" for b in BASES if bases.get(b)) + \
                (f"{', ' if len(bases) > 1 else ''}none yet {none}" if none else "")
            out.value(f"status.{st}.{part}", f"{got} of {n}")
            out.value(f"time.{st}.{part}", S.num(cpu / 3600))
            out.value(f"time.{st}.{part}.wall", S.num(wall / 3600))
            out.value(f"left.{st}.{part}", str(nl))
            out.value(f"left.{st}.{part}.cpu_h", S.num(secs / 3600) if nl > none else "-")
            out.value(f"left.{st}.{part}.unknown", str(none))
            tab.append([st, part, f"{got} of {n}", S.num(cpu / 3600), S.num(wall / 3600),
                        S.num(big / 60) if got else "-", nl,
                        (S.num(secs / 3600) if nl > none else "-") + ("+" if none and
                                                                      nl > none else ""),
                        basis or "-"])
            tot = [tot[0] + got, tot[1] + n, tot[2] + wall, tot[3] + cpu, tot[4] + nl,
                   tot[5] + secs, tot[6] + none]
    out.value("status.total", f"{tot[0]} of {tot[1]}")
    out.value("time.total", f"{tot[2] / 3600:.1f}")
    out.value("time.total_cpu", f"{tot[3] / 3600:.1f}")
    out.value("status.outside_grid", str(outside))
    out.value("status.incomplete", str(D.orphans))
    out.value("status.resumed", str(sum(r[7] for r in rows)))
    out.value("status.left_points", str(tot[4]))
    out.value("status.left_cpu_h", f"{tot[5] / 3600:.1f}")
    out.value("status.left_2cores_h", f"{tot[5] / 3600 / 2:.1f}")
    out.value("status.left_unknown", str(tot[6]))
    tab.append(["all", "", f"{tot[0]} of {tot[1]}", S.num(tot[3] / 3600),
                S.num(tot[2] / 3600), "", tot[4],
                S.num(tot[5] / 3600) + ("+" if tot[6] else ""), ""])
    out.table("status", "Points done of those the runner's stages plan, and their time on this "
              "machine's 2 cores (shared with other work; the runner runs 2 points at a time, "
              "one BLAS thread each, under nice): the sums of the sidecars' CPU and wall times "
              "in hours (the wall sum counts two points running at once twice), the longest "
              "point's wall time in minutes; left: the points still to run, and the CPU hours "
              "they need, each point estimated from (basis, points so estimated): seeds, the "
              "mean CPU time of its own other seeds; size, of its part's points of the same "
              "L, d and factor; core size, of its part's core-grid points at that L and d; "
              "products, the Hessian products its part makes (from the driver's settings) "
              "times the CPU seconds a product took in the extremes at that size; none yet: "
              "no basis until a point of its kind finishes ('+': more than the sum shown). "
              "Multi30k runs resumed from a checkpoint count the last session's time only "
              f"({out.values['status.resumed']} so far)",
              ["stage", "part", "done", "CPU h", "wall h", "longest min", "left",
               "CPU h left", "basis"], tab, "llrrrrrrl")
    conv = []
    for part in PARTS:
        ok, n, bad = D.conv[part]
        out.value(f"conv.{part}", f"{ok} of {n}")
        conv += [[p, op, w, b or "(whole)", r, st] for p, op, w, b, r, st in bad]
    out.value("conv.unconverged", str(len(conv)))
    out.table("unconverged", "Eigenvalues whose Lanczos run did not converge (residual above "
              "the tolerance at the step limit): reported here, left out of every ratio, "
              "fit and ranking", ["file", "operator", "which", "block", "residual", "steps"],
              conv or [["none", "", "", "", "", ""]], "llllrr")


def loo_table(out, flags):
    out.value("loo.count", str(len(flags)))
    out.table("loo", "Exponents that one point carries: leaving that depth, width or scale out "
              "(all its seeds) moves the exponent outside its 95% interval; the exponent with "
              "every point present, and without that one (marked ' *' in their tables)",
              ["measure", "placement", "in", "exponent [95% CI]", "without", "exponent"],
              flags or [["none", "", "", "", "", ""]], "llllrr")


def rank_row(label, where, per):
    """[label, where, 1st, ..., 6th]: smallest first, each 'NAME (geometric mean)'; from the
    second on '< ' where the paired ratio of the two neighbours excludes 1 (95%), '~ '
    where it does not (not resolved)."""
    est = {p: gmean(v) for p, v in per.items() if v}
    order = sorted(est, key=lambda p: est[p].value)
    cells = [f"{NAME[p]} ({S.num(est[p].value)})" for p in order]
    for i, (a, b) in enumerate(zip(order, order[1:])):
        r = ratio(per[b], per[a])
        cells[i + 1] = ("< " if r is not None and r.lo > 1 else "~ ") + cells[i + 1]
    return [label, where] + (cells or ["no points yet"]) + [""] * (len(NAME) - max(1, len(cells)))


def rank_fit_row(label, where, fits):
    """The same for fitted exponents: '<' where the difference of the two slopes
    excludes 0 (stats.diff_of, the fits taken as independent: conservative, as the
    placements share their seeds)."""
    fits = {p: f for p, f in fits.items() if f is not None}
    order = sorted(fits, key=lambda p: fits[p].slope.value)
    cells = [f"{NAME[p]} ({S.num(fits[p].slope.value, 2)})" for p in order]
    for i, (a, b) in enumerate(zip(order, order[1:])):
        e = S.diff_of(fits[b].slope, fits[a].slope)
        cells[i + 1] = ("< " if e.lo > 0 else "~ ") + cells[i + 1]
    return [label, where] + (cells or ["too few points yet"]) + [""] * (len(NAME) -
                                                                       max(1, len(cells)))


def summarise(study, d):
    D = Data(d)
    out = Wide(study, d, "The placement study: curvature and gradients of every "
                  "normalisation placement at initialisation (issue 34)", setting(D),
                  "make study-placements", D.raw, "placements")
    out.inputs[3:3] = [os.path.relpath(os.path.join(HERE, m + ".py")) for m in MODULES]
    cl = Claims(out)
    status(out, D)
    rank = []
    rank += C.extremes(out, cl, D)
    rank += B.anatomy(out, cl, D)
    rank += B.coupling(out, cl, D)
    rank += G.grad(out, cl, D)
    G.scale(out, cl, D)
    rank += C.m30k(out, cl, D)
    C.variations(out, D)
    loo_table(out, cl.flags)
    rows = []
    for kind, label, where, per in rank:
        r = rank_fit_row(label, where, per) if kind == "fit" else rank_row(label, where, per)
        n = sorted({len(v) for v in per.values() if v}) if kind != "fit" else []
        seeds = "" if not n else f"; {n[0]}" if len(n) == 1 else f"; {n[0]}-{n[-1]}"
        seeds += " seed" + ("s" if n and n[-1] > 1 else "") if n else ""
        rows.append([label, where + seeds, " ".join(c for c in r[2:] if c)])
    out.table("ranking", "The placements ranked on each measure, smallest first (geometric "
              "means over seeds in brackets; exponents for fits): '<' where the paired ratio "
              "of a placement and the one before it (or the difference of their exponents) "
              "excludes 1 (0) at 95%, '~' where it does not (not resolved at this precision); "
              "a placement without points yet is not ranked; seeds: those present",
              ["measure", "setting", "order, smallest first"], rows,
              "".join(r">{\raggedright\arraybackslash}p{%s\linewidth}" % w
                      for w in ("0.22", "0.18", "0.5")))
    out.close()
