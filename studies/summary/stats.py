"""The statistics of every study summary (docs/statistics.md states the method).

Seeds are the replicates.  A trend is a least-squares line through the
per-seed observations (never through per-point means weighted by per-point
spreads: with 3 seeds a point's sd is itself uncertain by a factor of about
2, and the point whose seeds happen to lie close together takes the fit).
Its variance comes from the seed scatter pooled across the sweep: the
per-seed fit's residual variance RSS / (N - 2).  Where the points' means
scatter about the line more than the seeds predict (the lack-of-fit ratio
chi^2/dof = MS_lack / MS_pure > 1), the variance is the pooled seed scatter
times chi^2/dof, i.e. MS_lack, with k - 2 degrees of freedom (k points).
Intervals are 95%, Student's t with those degrees of freedom.

The words of a claim come from its interval by one rule (verdict): "grows",
"larger", ... only when the interval excludes the null; "flat", "equal" only
when it lies inside a margin stated beside the claim; otherwise "not resolved
at this precision".
"""
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as _st

LEVEL = 0.95
UNRESOLVED = "not resolved at this precision"


def tq(dof):
    """Two-sided 95% quantile of Student's t with dof degrees of freedom."""
    return float(_st.t.ppf(0.5 + LEVEL / 2, dof)) if dof > 0 else math.inf


@dataclass(frozen=True)
class Est:
    """An estimate, its standard error and degrees of freedom, and its 95%
    interval [lo, hi].  log: estimated on the log scale (value, lo, hi are
    exp of the log-scale mean and interval; se is in log units)."""
    value: float
    se: float
    dof: float
    n: int
    lo: float
    hi: float
    sd: float = math.nan
    log: bool = False


def _est(m, se, dof, n, sd=math.nan, log=False):
    h = tq(dof) * se if math.isfinite(se) else math.inf
    lo, hi = m - h, m + h
    if log:
        return Est(math.exp(m), se, dof, n, math.exp(lo) if lo > -700 else 0.0,
                   math.exp(hi) if hi < 700 else math.inf, sd, True)
    return Est(m, se, dof, n, lo, hi, sd)


def mean_ci(v):
    """Mean of the seeds' values, sample sd, se = sd / sqrt(n), n - 1 dof."""
    v = np.asarray(v, float)
    n = len(v)
    if n == 0:
        raise ValueError("mean_ci: no values")
    sd = float(v.std(ddof=1)) if n > 1 else math.nan
    return _est(float(v.mean()), sd / math.sqrt(n) if n > 1 else math.nan, n - 1, n, sd)


def ratio_ci(a, b):
    """Paired ratio a_s / b_s over seeds s (both > 0): the geometric mean of
    the per-seed ratios and its interval, from the mean and scatter of the
    log ratios (n - 1 dof)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or len(a) == 0 or (a <= 0).any() or (b <= 0).any():
        raise ValueError("ratio_ci: expected paired positive values")
    e = mean_ci(np.log(a / b))
    return _est(e.value, e.se, e.dof, e.n, e.sd, log=True)


def diff_ci(a, b):
    """mean(a) - mean(b) of two independent groups of seeds (Welch: se from
    both groups' variances, Welch-Satterthwaite dof)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("diff_ci: need at least 2 values in each group")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else 1
    return _est(float(a.mean() - b.mean()), se, dof, len(a) + len(b))


def diff_of(a, b):
    """a - b of two independent estimates (e.g. two fits' slopes): se from both,
    Welch-Satterthwaite dof from theirs."""
    se = math.hypot(a.se, b.se)
    dof = se ** 4 / (a.se ** 4 / a.dof + b.se ** 4 / b.dof) if se > 0 else min(a.dof, b.dof)
    return _est(a.value - b.value, se, dof, a.n + b.n)


@dataclass(frozen=True)
class Fit:
    """A least-squares line y = intercept + slope x over per-seed observations.
    slope: an Est; points: the distinct x (as given to fit_power: original
    units); n_at: observations per point; leverage: each point's share of
    the hat matrix' trace (sum of its observations' h_ii; they sum to 2);
    loo: the slope with each point (all its seeds) left out (nan where fewer
    than 2 points would remain); chi2dof: lack-of-fit ratio MS_lack / MS_pure
    (nan without replicates or with 2 points); source: what the variance is."""
    slope: Est
    intercept: float
    chi2dof: float
    points: tuple
    n_at: tuple
    leverage: tuple
    loo: tuple
    source: str
    s2: float = math.nan
    xbar: float = math.nan
    sxx: float = math.nan
    log: bool = False

    @property
    def n_obs(self):
        return sum(self.n_at)


def _ols(x, y):
    xm = x.mean()
    sxx = float(((x - xm) ** 2).sum())
    b = float(((x - xm) * (y - y.mean())).sum() / sxx)
    return b, float(y.mean() - b * xm), sxx


def fit_line(x, y, labels=None):
    """Fit y = a + b x to observations (x_i, y_i), one per seed and point.
    labels: the points' names in the order of x (default: x)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    lab = list(labels) if labels is not None else list(x)
    if len(x) != len(y) or len(lab) != len(x):
        raise ValueError("fit_line: x, y (and labels) differ in length")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("fit_line: a value is not finite")
    ux = np.unique(x)
    N, k = len(x), len(ux)
    if k < 2 or N < 3:
        raise ValueError(f"fit_line: {N} observations at {k} points; need 3 at 2 points")
    b, a, sxx = _ols(x, y)
    rss = float(((y - a - b * x) ** 2).sum())
    sspe = float(sum(((y[x == u] - y[x == u].mean()) ** 2).sum() for u in ux))
    npe, nlof = N - k, k - 2
    s2, dof, src, chi = rss / (N - 2), N - 2, "seed scatter", math.nan
    if npe == 0:
        src = "scatter about the line (one seed a point)"
    elif nlof > 0:
        mlof = max(rss - sspe, 0.0) / nlof
        chi = mlof / (sspe / npe) if sspe > 0 else (math.inf if mlof > 0 else math.nan)
        if chi > 1:
            s2, dof, src = mlof, nlof, "lack of fit (seed scatter x chi2/dof)"
    xm = x.mean()
    first = [lab[int(np.flatnonzero(x == u)[0])] for u in ux]
    n_at = tuple(int((x == u).sum()) for u in ux)
    lev = tuple(float(n * (1 / N + (u - xm) ** 2 / sxx)) for u, n in zip(ux, n_at))
    loo = []
    for u in ux:
        m = x != u
        loo.append(_ols(x[m], y[m])[0] if len(np.unique(x[m])) >= 2 else math.nan)
    return Fit(_est(b, math.sqrt(s2 / sxx), dof, N), a, chi, tuple(first), n_at, lev,
               tuple(loo), src, s2, float(xm), sxx)


def fit_power(x, y):
    """y ~ A x^b: fit_line(ln x, ln y); every x, y > 0 (pass |y| for a
    magnitude).  The points keep their original x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_power: every x and y must be > 0")
    return replace(fit_line(np.log(x), np.log(y), labels=[float(v) for v in x]), log=True)


def fit_moments(x, mean, sd, n, power=True):
    """The same fit from per-point summaries of the replicates (their mean, sample
    sd and count): the per-replicate fit depends on nothing else, so each point's
    replicates are stood in for by n values with that mean and sd.  power: a
    power law, ln(mean) against ln x with the sd of ln y taken as sd / mean (the
    delta method, close when sd / mean is small)."""
    xs, ys, lab = [], [], []
    for xi, m, s, k in zip(x, mean, sd, n):
        lab += [float(xi)] * k
        if power:
            xi, m, s = math.log(xi), math.log(m), s / m
        z = np.array([(-1.0) ** j for j in range(k - k % 2)] + [0.0] * (k % 2))
        z *= 1.0 if k % 2 else math.sqrt((k - 1) / k)
        xs += [xi] * k
        ys += list(m + s * z)
    f = fit_line(xs, ys, labels=lab)
    return replace(f, log=power)


def prop_ci(k, n):
    """k successes in n trials: k / n with its Clopper-Pearson 95% interval."""
    a = (1 - LEVEL) / 2
    lo = float(_st.beta.ppf(a, k, n - k + 1)) if k > 0 else 0.0
    hi = float(_st.beta.ppf(1 - a, k + 1, n - k)) if k < n else 1.0
    return Est(k / n, math.nan, math.nan, n, lo, hi)


def predict(f, x, one_seed=False):
    """The fitted line at x (original units for a power law) with its 95%
    interval: of the line (the mean at x), or with one_seed of a single new
    seed's value there (the seed scatter s^2 added: a prediction interval)."""
    u = math.log(x) if f.log else x
    var = f.s2 * (1 / f.n_obs + (u - f.xbar) ** 2 / f.sxx + (1 if one_seed else 0))
    return _est(f.intercept + f.slope.value * u, math.sqrt(var), f.slope.dof, f.n_obs,
                log=f.log)


def verdict(e, null=0.0, margin=None, up="grows", down="shrinks", flat="flat"):
    """The one rule: up (down) when the 95% interval lies above (below) the
    null; flat when it lies inside null +- margin (margin: a number, or the
    (low, high) band); otherwise UNRESOLVED.  An interval that excludes the
    null inside the band says both ("grows, within the margin")."""
    if margin is None:
        band = None
    elif isinstance(margin, tuple):
        band = margin
    else:
        band = (null - margin, null + margin)
    inside = band is not None and band[0] < e.lo and e.hi < band[1]
    if e.lo > null or e.hi < null:
        w = up if e.lo > null else down
        return w + (", within the margin" if inside else "")
    return flat if inside else UNRESOLVED


# ------------------------------------------------------------------ numbers

def num(x, sig=3):
    """x to sig significant digits, fixed point where that reads well."""
    if x is None or not math.isfinite(x):
        return "-" if x is None or math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    if e >= 5 or e < -3:
        return f"{x:.{sig - 1}e}".replace("e-0", "e-").replace("e+0", "e+").replace("e+", "e")
    return f"{x:.{max(0, sig - 1 - e)}f}"


def decimals(spread):
    """Decimals that show spread to 2 significant digits."""
    if not (spread > 0) or not math.isfinite(spread):
        return None
    return max(0, 1 - math.floor(math.log10(spread)))


def pm(m, sd):
    """mean +- sd, the sd to 2 significant digits, the mean to the same place."""
    d = decimals(sd)
    if d is None or not math.isfinite(m):
        return num(m, 4)
    if m != 0 and (abs(m) < 1e-3 or abs(m) >= 1e5):
        return f"{num(m)} ± {num(sd, 2)}"
    return f"{m:.{d}f} ± {sd:.{d}f}"


def ci(e, unit=""):
    """'value [lo, hi]' with the decimals of the interval's half-width (a ratio,
    estimated on the log scale: each to 3 significant digits)."""
    if e.log and math.isfinite(e.hi) and e.lo > 0:
        return f"{num(e.value)}{unit} [{num(e.lo)}, {num(e.hi)}]"
    if not (math.isfinite(e.lo) and math.isfinite(e.hi)):
        return f"{num(e.value)}{unit} (one seed: no interval)" if e.n == 1 else \
            f"{num(e.value)}{unit} [no interval]"
    d = decimals((e.hi - e.lo) / 2) if e.hi > e.lo else 4
    big = max(abs(e.lo), abs(e.hi))
    if big < 1e-3 or big >= 1e5:
        return f"{num(e.value)}{unit} [{num(e.lo)}, {num(e.hi)}]"
    f = lambda x: f"{x:.{d}f}" if x == 0 or round(x, d) != 0 else num(x, 2)  # noqa: E731
    return f"{f(e.value)}{unit} [{f(e.lo)}, {f(e.hi)}]"
