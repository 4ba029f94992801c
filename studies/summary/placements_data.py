"""The placement study's raw rows (studies/placements.c, one CSV and sidecar a point and
part) for its summary (studies/summary/placements.py): loading, the grid that
studies/scripts/study_placements.sh runs (what is present, what is still to come), and
the per-seed series every part is computed from.

A point is PART/TAG.csv with TAG.meta.json (both, or it is not read: the driver writes
them whole).  Its key: (variation, placement, L, d, input scale) from the sidecar's
configuration, the seed apart (seeds are the replicates); a Multi30k run's key is
(placement, operator).  Eigenvalues whose `converged` is not 1 are counted at loading
and never enter a series.
"""
import glob
import math
import os
from collections import defaultdict

from . import stats as S
from .writer import SummaryError, fnum, read, sidecar_of

PLACEMENTS = ("post", "pre", "peri", "out", "deepnorm", "mix")
NAME = {"post": "Post-LN", "pre": "Pre-LN", "peri": "Peri-LN", "out": "Out-LN",
        "deepnorm": "DeepNorm", "mix": "Mix-LN"}
STYLE = {"post": ("tab:red", "o"), "pre": ("tab:blue", "s"), "peri": ("tab:green", "^"),
         "out": ("tab:purple", "D"), "deepnorm": ("tab:orange", "v"), "mix": ("tab:brown", "P")}
COLS = ("measure", "operator", "which", "block", "kind", "layer", "n", "block_b", "value", "se",
        "residual", "converged", "steps")
PARTS = ("grad", "extremes", "anatomy", "coupling", "scale", "m30k")
SEEDS = 3
CORE = ((1, 64), (2, 64), (4, 64), (6, 64), (8, 64), (12, 64), (16, 64), (24, 64), (6, 32),
        (6, 128), (6, 256))
DEPTHS = tuple(L for L, d in CORE if d == 64)
WIDTHS = tuple(sorted(d for L, d in CORE if L == 6))
SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
VARIATIONS = ("rmsnorm", "swiglu", "rope", "nobias")
VAR_NAME = {"base": "LayerNorm, ReLU, sinusoidal, biases", "rmsnorm": "RMSNorm",
            "swiglu": "SwiGLU", "rope": "rope", "nobias": "bias-free", "nonorm": "no norms"}
OPS = ("hessian", "ggn", "functional")
STAGES = ("core", "m30k", "coupling", "scale", "variations")
EQUAL = (1 / 1.2, 1.2)   # "equal" for a ratio: within a factor 1.2


def variation(c, where):
    """The one factor a configuration changes from the core grid's."""
    if c.get("norm") == "none":
        return "nonorm"
    v = [n for n, ok in (("rmsnorm", c.get("norm") == "rmsnorm"),
                         ("swiglu", c.get("activation") == "swiglu"),
                         ("rope", c.get("pos") == "rope"), ("nobias", c.get("bias") is False))
         if ok]
    if c.get("norm") not in ("layernorm", "rmsnorm") or \
            c.get("activation") not in ("relu", "swiglu") or \
            c.get("pos") not in ("sinusoidal", "rope"):
        raise SummaryError(f"{where}: configuration outside the study's grid (norm "
                           f"{c.get('norm')}, activation {c.get('activation')}, pos "
                           f"{c.get('pos')})")
    return "+".join(v) or "base"


class Pt:
    """One point: its rows indexed by (measure, operator, which, block, block_b)."""

    def __init__(self, name, rows, meta):
        self.name, self.rows, self.meta = name, rows, meta
        self.ix = {(r["measure"], r["operator"], r["which"], r["block"], r["block_b"]): r
                   for r in rows}

    def get(self, measure, op="", which="", block="", block_b=""):
        """The row's value, or None where the point has no such row."""
        r = self.ix.get((measure, op, which, block, block_b))
        return None if r is None else fnum(r, "value", self.name)

    def eig(self, op, which, block="", measure="eig"):
        """|eigenvalue| if it converged, else None (counted at loading)."""
        r = self.ix.get((measure, op, which, block, ""))
        if r is None or r["converged"] != "1":
            return None
        return abs(fnum(r, "value", self.name))

    def where(self, measure, **eq):
        return [r for r in self.rows if r["measure"] == measure and
                all(r[k] == v for k, v in eq.items())]

    @property
    def wall(self):
        return float(self.meta.get("wall_seconds") or 0)

    @property
    def cpu(self):
        return float(self.meta.get("cpu_seconds") or 0)

    @property
    def products(self):
        return float(self.meta.get("products_this_run") or 0)


def point_key(part, meta, where):
    c = meta.get("config")
    if not isinstance(c, dict):
        raise SummaryError(f"{where}: the sidecar has no configuration")
    try:
        if part == "m30k":
            return (c["norm_pos"], meta["operator"]), int(c["seed"])
        return (variation(c, where), c["norm_pos"], int(c["L"]), int(c["d"]),
                float(c["input_scale"])), int(c["seed"])
    except (KeyError, TypeError, ValueError) as e:
        raise SummaryError(f"{where}: the sidecar lacks {e}") from None


class Data:
    """Every complete point under d: P[part][key][seed] -> Pt; raw: their names;
    conv[part]: [converged, total, [unconverged (point, operator, which, block)]]."""

    def __init__(self, d):
        self.d, self.raw, self.orphans = d, [], 0
        self.P = {p: defaultdict(dict) for p in PARTS}
        self.conv = {p: [0, 0, []] for p in PARTS}
        for part in PARTS:
            for path in sorted(glob.glob(os.path.join(d, part, "*.csv"))):
                rel = os.path.relpath(path, d)
                if ".tmp." in rel:
                    continue
                if not os.path.isfile(path[:-4] + ".meta.json"):
                    self.orphans += 1   # being written: the sidecar comes last
                    continue
                meta = sidecar_of(d, rel)
                want = "eigs" if part == "m30k" else part
                if meta.get("part") != want:
                    raise SummaryError(f"{os.path.join(d, rel)}: sidecar part "
                                       f"'{meta.get('part')}', expected '{want}'")
                key, seed = point_key(part, meta, os.path.join(d, rel))
                pt = Pt(rel, read(d, rel, COLS), meta)
                if seed in self.P[part][key]:
                    raise SummaryError(f"{os.path.join(d, rel)}: the same point as "
                                       f"{self.P[part][key][seed].name}")
                self.P[part][key][seed] = pt
                self.raw.append(rel)
                self._count(part, pt, key, seed)

    def _count(self, part, pt, key, seed):
        c = self.conv[part]
        for r in pt.rows:
            if r["measure"] in ("eig", "block_eig") and r["converged"] != "":
                c[1] += 1
                if r["converged"] == "1":
                    c[0] += 1
                else:
                    c[2].append((pt.name, r["operator"], r["which"], r["block"],
                                 S.num(fnum(r, "residual", pt.name), 2), r["steps"]))

    def pts(self, part, key):
        return self.P[part].get(key, {})

    def series(self, part, key, f):
        """{seed: f(point)} where f gives a finite number (None: left out)."""
        out = {}
        for s, pt in sorted(self.pts(part, key).items()):
            v = f(pt)
            if v is not None and math.isfinite(v):
                out[s] = v
        return out

    def expected(self):
        """(stage, part, key, seed) of every point the runner's stages make."""
        E = []
        for s in range(SEEDS):
            for part in ("grad", "extremes", "anatomy"):
                E += [("core", part, ("base", p, L, d, 1.0), s) for L, d in CORE
                      for p in PLACEMENTS]
            E += [("m30k", "m30k", (p, op), s) for p in PLACEMENTS for op in OPS]
            E += [("coupling", "coupling", ("base", p, 6, 64, 1.0), s) for p in PLACEMENTS]
            E += [("scale", "scale", ("base", p, L, 64, x), s) for L in (1, 6) for x in SCALES
                  for p in PLACEMENTS]
            E += [("scale", "scale", ("nonorm", "pre", 1, 64, x), s) for x in SCALES]
            E += [("variations", part, (v, p, L, 64, 1.0), s) for v in VARIATIONS
                  for L in (6, 12) for p in PLACEMENTS for part in ("extremes", "anatomy",
                                                                     "grad")]
        return E

    def status(self):
        """[(stage, part, present, expected, wall s, cpu s, largest wall s, resumed)] and
        the number of points outside the grid."""
        got = defaultdict(list)
        want = defaultdict(int)
        seen = set()
        for st, part, key, s in self.expected():
            want[(st, part)] += 1
            pt = self.P[part].get(key, {}).get(s)
            if pt is not None:
                got[(st, part)].append(pt)
                seen.add(pt.name)
        rows = []
        for (st, part), n in want.items():
            g = got[(st, part)]
            rows.append((st, part, len(g), n, sum(p.wall for p in g), sum(p.cpu for p in g),
                         max((p.wall for p in g), default=0.0),
                         sum(1 for p in g if float(p.meta.get("products_before") or 0) > 0)))
        return rows, len(self.raw) - len(seen)


    def remaining(self):
        """The CPU seconds the missing points need, each estimated from the first basis
        that exists (BASES): {(stage, part): [points left, CPU seconds, {basis: points}]}
        (basis None: no estimate yet)."""
        by_key, by_size, per_prod, shape = defaultdict(list), defaultdict(list), {}, {}
        for part in PARTS:
            for k, v in self.P[part].items():
                for pt in v.values():
                    by_key[(part, k)].append(pt.cpu)
                    if part != "m30k":
                        by_size[(part, k[0], k[2], k[3])].append(pt.cpu)
        for k, v in self.P["extremes"].items():   # the product model's inputs, per size
            pts = [pt for pt in v.values() if pt.products > 0]
            if pts:
                sz = (k[0], k[2], k[3])
                per_prod.setdefault(sz, []).extend(pt.cpu / pt.products for pt in pts)
                shape[sz] = pts[0]
        out = defaultdict(lambda: [0, 0.0, defaultdict(int)])
        for st, part, k, s in self.expected():
            if s in self.P[part].get(k, {}):
                continue
            cpu, basis = estimate(part, k, by_key, by_size, per_prod, shape)
            o = out[(st, part)]
            o[0] += 1
            o[1] += cpu or 0.0
            o[2][basis] += 1
        return out


# What a missing point's time is estimated from, in this order: "seeds": the mean CPU time
# of its own key's present points (other seeds); "size": of its part's points of the same
# factor, L and d (any placement, scale); "core size": of the core grid's points of its part
# at that L and d (a factor's points before any of them ran); "products": the Hessian
# products the part makes (from the driver's settings, PRODUCTS) times the CPU seconds a
# product took in the extremes at that size.
BASES = ("seeds", "size", "core size", "products")
WEIGHT_KINDS = {"Q", "K", "V", "O", "FFN1", "FFN2", "FFN3", "XQ", "XK", "XV", "XO", "emb",
                "out"}


def products(part, pt):
    """The Hessian products one point of part makes at the size of extremes point pt:
    anatomy, a Frobenius norm a group (probes) and an SLQ spectrum a weight block (runs x
    steps); scale, a Frobenius norm a group for each of H, G, F and a cross norm from each of
    the first layer's Q, K, V, O (cross probes) for each; None for the other parts."""
    m = pt.meta
    g, probes = int(m.get("groups") or 0), int(m.get("probes") or 0)
    if part == "anatomy":
        nw = sum(1 for r in pt.where("mass", operator="hessian", which="top")
                 if r["kind"] in WEIGHT_KINDS)
        return g * probes + nw * int(m.get("slq_runs") or 0) * int(m.get("slq_steps") or 0)
    if part == "scale":
        return 3 * g * probes + 3 * 4 * int(m.get("cross_probes") or 0)
    return None


def estimate(part, k, by_key, by_size, per_prod, shape):
    """(CPU seconds, basis) of one missing point, or (None, None)."""
    cands = [("seeds", by_key.get((part, k)))]
    if part != "m30k":
        cands += [("size", by_size.get((part, k[0], k[2], k[3]))),
                  ("core size", by_size.get((part, "base", k[2], k[3])))]
    for basis, v in cands:
        if v:
            return sum(v) / len(v), basis
    if part == "m30k":
        return None, None
    for sz in ((k[0], k[2], k[3]), ("base", k[2], k[3])):
        if sz in per_prod:
            n = products(part, shape[sz])
            if n:
                return n * sum(per_prod[sz]) / len(per_prod[sz]), "products"
    return None, None


# ------------------------------------------------------------------ statistics helpers

def paired(a, b):
    s = sorted(set(a) & set(b))
    return [a[i] for i in s], [b[i] for i in s]


def ratio(a, b):
    """Paired ratio a/b over the seeds both have (stats.ratio_ci), or None."""
    x, y = paired(a, b)
    if not x or min(x) <= 0 or min(y) <= 0:
        return None
    return S.ratio_ci(x, y)


def gmean(a):
    """Geometric mean over the seeds [95% CI] (positive values), or None."""
    v = list(a.values()) if isinstance(a, dict) else list(a)
    if not v or min(v) <= 0:
        return None
    return S.ratio_ci(v, [1.0] * len(v))


def mean(a):
    v = list(a.values()) if isinstance(a, dict) else list(a)
    return S.mean_ci(v) if v else None


def power_fit(pairs):
    """fit_power over [(x, {seed: y})]: None where too few observations (fewer than 3
    at 2 points) or a y is not > 0."""
    xs, ys = [], []
    for x, v in pairs:
        for y in v.values():
            xs.append(float(x))
            ys.append(y)
    if len(set(xs)) < 2 or len(xs) < 3 or min(ys) <= 0:
        return None
    return S.fit_power(xs, ys)


def txt(e):
    """An Est as 'value [lo, hi]', 'value (1 seed)', or '-' (no data)."""
    if e is None:
        return "-"
    return f"{S.num(e.value)} (1 seed)" if e.n == 1 else S.ci(e)


def carried(f):
    """(point, slope without it) where leaving that one point (all its seeds) out moves the
    slope outside the fit's 95% interval (the point that moves it most); else None."""
    ok = [(abs(v - f.slope.value), p, v) for p, v in zip(f.points, f.loo) if v == v]
    if not ok:
        return None
    _, p, v = max(ok)
    return None if f.slope.lo <= v <= f.slope.hi else (p, v)


def ftxt(f, flags=None, what=()):
    """A fit's slope as txt(), marked ' *' where one point carries it (carried); the mark's
    row [what..., slope, point, slope without it] goes to flags."""
    if f is None:
        return "-"
    t, c = txt(f.slope), carried(f)
    if c is None:
        return t
    if flags is not None:
        flags.append(list(what) + [t, f"{c[0]:g}", S.num(c[1])])
    return t + " *"


def design_leverage(name, xs):
    """Each point's leverage in a log-log fit over xs with the same seeds at every point
    (1/k + (ln x - mean)^2 / Sxx; they sum to 2): 'L = 1: 0.53, 2: 0.28, ...'."""
    lx = [math.log(x) for x in xs]
    m = sum(lx) / len(lx)
    sxx = sum((v - m) ** 2 for v in lx)
    return f"{name} = " + ", ".join(f"{x:g}: {1 / len(xs) + (v - m) ** 2 / sxx:.2f}"
                                     for x, v in zip(xs, lx))


LOO_NOTE = ("' *': one point carries the fit (leaving it out, all its seeds, moves the "
            "exponent outside the interval; table loo)")


def transpose(first, head, rows):
    """A table with a row a placement as one with a column a placement: (head, rows); the
    old columns' names (head[1:]) become the rows' first cells."""
    return [first] + [r[0] for r in rows], [[h] + [r[i] for r in rows]
                                            for i, h in enumerate(head[1:], 1)]


def nseeds_text(n):
    return f"{n} seed" + ("" if n == 1 else "s")


def nseeds(*ds):
    return min((len(d) for d in ds), default=0)


def xiong(pt):
    """Xiong et al.'s Theorem 1 quantity: ||dL/dW2||_F of the last layer's FFN (its
    second weight matrix: the group dec.(L-1).FFN2 of an lm)."""
    return pt.get("grad", block=f"dec.{int(pt.meta['config']['L']) - 1}.FFN2")


def js0(which="scaled"):
    return lambda pt: pt.get("js0", "hessian", which)


def signed(series):
    """(|values|, sign): sign +1 or -1 where every value has it, 0 where the signs differ
    (no ratio or power law of such a series is taken)."""
    v = list(series.values())
    sg = 1 if v and min(v) > 0 else -1 if v and max(v) < 0 else 0
    return {s: abs(x) for s, x in series.items()}, sg
