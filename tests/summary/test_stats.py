"""studies/summary/stats.py on cases whose answers are worked out by hand here
(the arithmetic is in the comments; t quantiles from printed tables), and the
weighting trap of per-point 1/sd^2 weights, which the old method falls into.

    python3 -m pytest tests/summary        (from the repository's root)
"""
import math

import numpy as np
import pytest

from studies.summary import stats as S

# Student's t, two-sided 95% (e.g. Abramowitz & Stegun, table 26.10)
T1, T2, T4, T10 = 12.7062047, 4.30265273, 2.77644511, 2.22813885
X4 = np.repeat([0.0, 1.0, 2.0, 3.0], 3)  # 4 points, 3 seeds each


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(b))


def test_t_quantiles():
    for dof, t in ((1, T1), (2, T2), (4, T4), (10, T10)):
        assert close(S.tq(dof), t)


def test_line_through_symmetric_seeds():
    # y = 1 + 2x, seeds -0.1, 0, +0.1 at every point: slope 2, RSS = 4 x 0.02 = 0.08,
    # s^2 = 0.08 / (12 - 2) = 0.008, Sxx = 3 x sum (x - 1.5)^2 = 15, se = sqrt(0.008/15)
    y = 1 + 2 * X4 + np.tile([-0.1, 0.0, 0.1], 4)
    f = S.fit_line(X4, y)
    se = math.sqrt(0.008 / 15)
    assert close(f.slope.value, 2) and close(f.intercept, 1) and close(f.slope.se, se)
    assert f.slope.dof == 10 and f.slope.n == 12
    assert close(f.slope.lo, 2 - T10 * se) and close(f.slope.hi, 2 + T10 * se)
    assert f.chi2dof == 0 and f.source == "seed scatter"
    # leverage 3 (1/12 + (x - 1.5)^2 / 15): 0.7, 0.3, 0.3, 0.7 (sum 2); no point moves the slope
    assert np.allclose(f.leverage, [0.7, 0.3, 0.3, 0.7]) and np.allclose(f.loo, 2)
    assert f.points == (0.0, 1.0, 2.0, 3.0) and f.n_at == (3, 3, 3, 3)


def test_lack_of_fit_scales_the_variance():
    # means 0, 1, 1, 3 (seeds +-0.1): b = 4.5 / 5 = 0.9, a = 1.25 - 1.35 = -0.1; mean residuals
    # 0.1, 0.2, -0.7, 0.4, SS_lack = 3 x 0.70 = 2.1 (2 dof), SS_pure = 4 x 0.02 = 0.08 (8 dof):
    # chi2/dof = 1.05 / 0.01 = 105 > 1, so var = MS_lack / Sxx = 1.05 / 15 with 2 dof
    y = np.repeat([0.0, 1.0, 1.0, 3.0], 3) + np.tile([-0.1, 0.0, 0.1], 4)
    f = S.fit_line(X4, y)
    assert close(f.slope.value, 0.9) and close(f.intercept, -0.1)
    assert close(f.chi2dof, 105) and f.slope.dof == 2 and f.source.startswith("lack of fit")
    assert close(f.slope.se, math.sqrt(0.07))
    assert close(f.slope.hi - f.slope.value, T2 * math.sqrt(0.07))
    assert S.verdict(f.slope, margin=0.1) == S.UNRESOLVED
    # left out: x = 3 -> means 0, 1, 1 at 0, 1, 2: slope (2/3 + 1/3) / 2 = 0.5;
    # x = 0 -> 1, 1, 3 at 1, 2, 3: slope (2/3 + 4/3) / 2 = 1
    assert close(f.loo[3], 0.5) and close(f.loo[0], 1.0)


def test_power_law_exponent_and_se():
    # y = 3 x^-0.5 exp(e), e = -0.2, 0, 0.2 at x = 1, 2, 4, 8: slope -0.5, RSS = 4 x 0.08,
    # Sxx = 3 x 5 (ln 2)^2, se = sqrt(0.032 / Sxx)
    x = np.repeat([1.0, 2.0, 4.0, 8.0], 3)
    y = 3 * x ** -0.5 * np.exp(np.tile([-0.2, 0.0, 0.2], 4))
    f = S.fit_power(x, y)
    assert close(f.slope.value, -0.5) and close(f.intercept, math.log(3))
    assert close(f.slope.se, math.sqrt(0.032 / (15 * math.log(2) ** 2)))
    assert f.points == (1.0, 2.0, 4.0, 8.0)
    assert S.verdict(f.slope, null=-0.5, margin=0.2, up="shallower", down="steeper",
                     flat="equal") == "equal"


def old_weighted(x, y):
    """The method the summaries used before: each point's mean weighted by
    n / sd^2 of its own seeds, se from the weights, scaled up by
    sqrt(chi^2/dof) when that exceeds 1; 'resolved' when |slope| > 2 se."""
    ux = np.unique(x)
    m = np.array([y[x == u].mean() for u in ux])
    w = np.array([len(y[x == u]) / y[x == u].var(ddof=1) for u in ux])
    xm, ym = (w * ux).sum() / w.sum(), (w * m).sum() / w.sum()
    sxx = (w * (ux - xm) ** 2).sum()
    b = (w * (ux - xm) * (m - ym)).sum() / sxx
    chi = (w * (m - ym - b * (ux - xm)) ** 2).sum() / (len(ux) - 2)
    return b, math.sqrt(1 / sxx) * max(1.0, math.sqrt(chi))


def test_weighting_trap():
    # Flat in truth; the end points' three seeds happen to lie close together
    # (+-0.01) while the middle ones scatter by +-1.  Pooled: means 0, 0.2, 0.3, 0.5,
    # b = 0.8 / 5 = 0.16, a = 0.01, mean residuals -0.01, 0.03, -0.03, 0.01: SS_lack = 3 x
    # 0.002 (2 dof), SS_pure = 2 x 2 + 2 x 0.0002 (8 dof), chi2/dof < 1, so
    # s^2 = (0.006 + 4.0004) / 10, se = sqrt(s^2 / 15) = 0.1634: not resolved.
    y = np.concatenate([[-0.01, 0, 0.01], [-0.8, 0.2, 1.2], [-0.7, 0.3, 1.3],
                        [0.49, 0.5, 0.51]]).astype(float)
    f = S.fit_line(X4, y)
    se = math.sqrt(4.0064 / 10 / 15)
    assert close(f.slope.value, 0.16) and close(f.slope.se, se) and f.slope.dof == 10
    assert close(f.slope.lo, 0.16 - T10 * se) and f.slope.lo < 0
    assert S.verdict(f.slope, margin=0.1) == S.UNRESOLVED
    # The old weights (n / sd^2: 30000 at the ends, 3 in the middle) pin the line to the
    # two tight points: slope (0.5 - 0) / 3, se about 1 / sqrt(30000 x 2 x 1.5^2) = 0.0027,
    # and the slope looks resolved by dozens of its standard errors.
    b, se_old = old_weighted(X4, y)
    assert abs(b - 0.5 / 3) < 1e-3 and se_old < 0.003 and b / se_old > 50
    # Coverage under a flat truth (Gaussian seeds, 4 points x 3 seeds, fixed stream):
    # the pooled 95% interval covers 0 in about 95% of the data sets (a little more:
    # the lack-of-fit switch is conservative); the old +-2 se covers it far less often.
    rng = np.random.default_rng(1)
    new = old = 0
    n = 4000
    for _ in range(n):
        z = rng.normal(0.0, 1.0, 12)
        g = S.fit_line(X4, z)
        new += g.slope.lo < 0 < g.slope.hi
        bo, so = old_weighted(X4, z)
        old += abs(bo) < 2 * so
    assert 0.94 <= new / n <= 0.98, new / n
    assert old / n <= 0.90, old / n


def test_mean_ratio_difference():
    # (1, 2, 3): mean 2, sd 1, se 1/sqrt(3), 2 dof
    e = S.mean_ci([1, 2, 3])
    assert close(e.value, 2) and close(e.sd, 1) and e.dof == 2
    assert close(e.lo, 2 - T2 / math.sqrt(3)) and close(e.hi, 2 + T2 / math.sqrt(3))
    # per-seed ratios 2, 4, 8: log ratios ln 2 (1, 2, 3), geometric mean 4, interval
    # 4 exp(-+ t_2 ln 2 / sqrt(3))
    r = S.ratio_ci([2, 4, 8], [1, 1, 1])
    h = T2 * math.log(2) / math.sqrt(3)
    assert r.log and close(r.value, 4) and close(r.lo, 4 * math.exp(-h)) and \
        close(r.hi, 4 * math.exp(h))
    assert S.verdict(r, null=1, up="larger", down="smaller") == S.UNRESOLVED
    # ratios 4 exp(-0.1, 0, 0.1): sd 0.1 in log, interval 4 exp(-+ t_2 0.1 / sqrt(3)) > 1
    r = S.ratio_ci(4 * np.exp([-0.1, 0.0, 0.1]), [1, 1, 1])
    assert close(r.lo, 4 * math.exp(-T2 * 0.1 / math.sqrt(3)))
    assert S.verdict(r, null=1, up="larger", down="smaller") == "larger"
    # Welch, equal variances 1 and n = 3: se = sqrt(2/3), dof (2/3)^2 / (2 (1/3)^2 / 2) = 4
    d = S.diff_ci([1, 2, 3], [4, 5, 6])
    assert close(d.value, -3) and close(d.se, math.sqrt(2 / 3)) and close(d.dof, 4)
    assert close(d.hi, -3 + T4 * math.sqrt(2 / 3))
    assert S.verdict(d, up="larger", down="smaller") == "smaller"


def est(lo, hi):
    return S.Est((lo + hi) / 2, 1, 5, 7, lo, hi)


def test_the_rule():
    assert S.verdict(est(0.1, 0.3)) == "grows"
    assert S.verdict(est(-0.3, -0.1)) == "shrinks"
    assert S.verdict(est(-0.05, 0.05), margin=0.1) == "flat"
    assert S.verdict(est(-0.05, 0.15), margin=0.1) == S.UNRESOLVED
    assert S.verdict(est(-0.05, 0.05)) == S.UNRESOLVED          # no margin stated: never flat
    assert S.verdict(est(0.02, 0.08), margin=0.1) == "grows, within the margin"
    assert S.verdict(est(0.95, 1.08), null=1, margin=(1 / 1.1, 1.1), flat="equal") == "equal"
    assert S.verdict(est(-0.58, -0.45), null=-0.5, margin=0.1, flat="equal") == "equal"


def test_bad_input_and_one_seed():
    with pytest.raises(ValueError, match="need 3 at 2 points"):
        S.fit_line([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="> 0"):
        S.fit_power([1, 2, 3], [1, -2, 3])
    with pytest.raises(ValueError, match="not finite"):
        S.fit_line([1, 2, 3], [1, math.nan, 3])
    # one seed a point: the scatter about the line is all there is (k - 2 dof)
    f = S.fit_line([0, 1, 2], [0, 1, 3])   # b = 1.5, residuals 1/6 (1, -2, 1): RSS = 1/6
    assert close(f.slope.value, 1.5) and f.slope.dof == 1 and math.isnan(f.chi2dof)
    assert close(f.slope.se, math.sqrt(1 / 6 / 2)) and "one seed" in f.source
    e = S.mean_ci([5.0])
    assert e.n == 1 and math.isnan(e.se) and "no interval" in S.ci(e)
    assert S.verdict(e, margin=1) == S.UNRESOLVED


def test_numbers():
    assert S.pm(24.31, 7.4) == "24.3 ± 7.4"
    assert S.pm(285.2, 177) == "285 ± 177"
    assert S.pm(1.69e-6, 1.3e-6) == "1.69e-6 ± 1.3e-6"
    assert S.ci(S.Est(0.152, 0.065, 10, 12, 0.007, 0.297)) == "0.15 [0.01, 0.30]"
    assert S.num(0.0123456) == "0.0123" and S.num(123456.0) == "1.23e5"
