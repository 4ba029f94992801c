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
from .placements_data import NAME, PARTS, STAGES, Data, gmean, ratio
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
    tot = [0, 0, 0.0, 0.0]
    tab = []
    for st in STAGES:
        for s, part, got, n, wall, cpu, big, resumed in rows:
            if s != st:
                continue
            out.value(f"status.{st}.{part}", f"{got} of {n}")
            out.value(f"time.{st}.{part}", S.num(wall / 3600))
            tab.append([st, part, f"{got} of {n}", S.num(wall / 3600), S.num(cpu / 3600),
                        S.num(big / 60) if got else "-", resumed])
            tot = [tot[0] + got, tot[1] + n, tot[2] + wall, tot[3] + cpu]
    out.value("status.total", f"{tot[0]} of {tot[1]}")
    out.value("time.total", f"{tot[2] / 3600:.1f}")
    out.value("time.total_cpu", f"{tot[3] / 3600:.1f}")
    out.value("status.outside_grid", str(outside))
    out.value("status.incomplete", str(D.orphans))
    secs, n, unknown = D.remaining()
    out.value("status.left_h", S.num(secs / 3600))
    out.value("status.left_points", str(n))
    out.value("status.left_unknown", str(unknown))
    tab.append(["all", "", f"{tot[0]} of {tot[1]}", S.num(tot[2] / 3600),
                S.num(tot[3] / 3600), "", ""])
    tab.append(["still to run", "", f"{tot[1] - tot[0]}", f"{S.num(secs / 3600)} (est.)", "",
                "", ""])
    out.table("status", "Points present of those the runner's stages make, and their time on "
              "this machine's 2 cores (shared with other work; the runner runs 2 points at a "
              "time, one BLAS thread each, under nice): the sum of the sidecars' wall and CPU "
              "times in hours, the longest point in minutes; resumed: Multi30k runs continued "
              "from a checkpoint (their sidecar's time is the last session's); still to run: the "
              "wall time of the missing points, each estimated by the mean of the present "
              "points of its key (other seeds) or else of its part and size, for the "
              f"{n} points with such a basis ({unknown} without one yet), one point at a time",
              ["stage", "part", "present", "wall h", "CPU h", "longest min", "resumed"], tab,
              "llrrrrr")
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
    rows = [rank_fit_row(*r[1:]) if r[0] == "fit" else rank_row(*r[1:]) for r in rank]
    out.table("ranking", "The placements ranked on each measure, smallest first (geometric "
              "means over seeds in brackets; exponents for fits): '<' where the paired ratio "
              "of a placement and the one before it (or the difference of their exponents) "
              "excludes 1 (0) at 95%, '~' where it does not (not resolved at this precision); "
              "a placement without points yet is not ranked",
              ["measure", "setting", "1st", "2nd", "3rd", "4th", "5th", "6th"], rows,
              "llllllll")
    out.close()
