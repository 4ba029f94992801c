/* LayerNorm geometry: the projection P, the scaling S and the norms built from
 * them, on single vectors and on the rows (or per-head slices) of a matrix. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "lnkit/error.h"
#include "lnkit/geometry.h"

static const char *const names[] = {"none", "center", "scale", "layernorm", "rmsnorm"};

const char *lnk_geom_norm_name(lnk_geom_norm k)
{
    return (k >= LNK_GEOM_NONE && k <= LNK_GEOM_RMSNORM) ? names[k] : "?";
}

int lnk_geom_norm_parse(const char *s, lnk_geom_norm *k)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, names[i])) {
            *k = (lnk_geom_norm)i;
            return LNK_OK;
        }
    return lnk_error(LNK_EINVAL,
                     "norm '%s': expected one of none, center, scale, layernorm, rmsnorm",
                     s ? s : "(null)");
}

/* Sums of squares (and sums) of entries near the range of doubles overflow,
 * those of tiny entries underflow: where the plain sums are not safe, the
 * entries are first scaled by 2^-e around the largest (exact), which S, P,
 * the norms built from them and the ratios below do not notice (eps scaled
 * by 2^-2e with them).  Where the plain sums are safe they are used as they
 * are, so that every committed result keeps its bits. */
static int exponent(const double *x, int d)
{
    double m = 0;
    for (int i = 0; i < d; i++)
        m = fmax(m, fabs(x[i]));
    return m > 0 && isfinite(m) ? ilogb(m) : 0;
}

void lnk_geom_center(const double *x, double *y, int d)
{
    double mu = 0;
    for (int i = 0; i < d; i++)
        mu += x[i];
    mu /= d;
    if (!isfinite(mu)) { /* the sum overflowed: the mean of the scaled entries */
        int e = exponent(x, d);
        mu = 0;
        for (int i = 0; i < d; i++)
            mu += ldexp(x[i], -e);
        mu = ldexp(mu / d, e);
    }
    for (int i = 0; i < d; i++)
        y[i] = x[i] - mu;
}

/* y = x / sqrt(sum(x^2)/d + eps): S when eps = 0 (x = 0 maps to 0, not NaN). */
static void scale_eps(const double *x, double *y, int d, double eps)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += x[i] * x[i];
    int e = 0;
    if (!(ss <= DBL_MAX) || (ss < 0x1p-900 && eps < 0x1p-900 && ss > 0)) {
        e = exponent(x, d);
        ss = 0;
        for (int i = 0; i < d; i++)
            ss += ldexp(x[i], -e) * ldexp(x[i], -e);
        eps = ldexp(eps, -2 * e);
    }
    double den = ss / d + eps;
    double r = den > 0 ? 1.0 / sqrt(den) : 0.0;
    for (int i = 0; i < d; i++)
        y[i] = ldexp(x[i], -e) * r;
}

void lnk_geom_scale(const double *x, double *y, int d) { scale_eps(x, y, d, 0.0); }

void lnk_geom_layernorm(const double *x, double *y, int d, double eps)
{
    /* P(x) of entries near the range of doubles overflows: scale first */
    int e = exponent(x, d);
    if (e > 500) {
        for (int i = 0; i < d; i++)
            y[i] = ldexp(x[i], -e);
        lnk_geom_center(y, y, d);
        scale_eps(y, y, d, ldexp(eps, -2 * e));
        return;
    }
    lnk_geom_center(x, y, d);
    scale_eps(y, y, d, eps);
}

void lnk_geom_rmsnorm(const double *x, double *y, int d, double eps) { scale_eps(x, y, d, eps); }

int lnk_geom_apply(lnk_geom_norm kind, const double *X, double *Y, int n, int d, int h,
                   double eps)
{
    if (n < 0 || d < 1 || h < 1 || d % h || !(eps >= 0))
        return lnk_error(LNK_EINVAL,
                         "norm %s: n = %d, d = %d, h = %d, eps = %g: need n >= 0, d >= 1, "
                         "h >= 1 dividing d, eps >= 0",
                         lnk_geom_norm_name(kind), n, d, h, eps);
    if (kind < LNK_GEOM_NONE || kind > LNK_GEOM_RMSNORM)
        return lnk_error(LNK_EINVAL, "norm: unknown kind %d", (int)kind);
    int dk = d / h;
    for (long s = 0; s < (long)n * h; s++) {
        const double *x = X + s * dk;
        double *y = Y + s * dk;
        switch (kind) {
        case LNK_GEOM_NONE:
            if (y != x)
                memmove(y, x, sizeof(double) * dk);
            break;
        case LNK_GEOM_CENTER: lnk_geom_center(x, y, dk); break;
        case LNK_GEOM_SCALE: lnk_geom_scale(x, y, dk); break;
        case LNK_GEOM_LAYERNORM: lnk_geom_layernorm(x, y, dk, eps); break;
        case LNK_GEOM_RMSNORM: lnk_geom_rmsnorm(x, y, dk, eps); break;
        }
    }
    return LNK_OK;
}

/* ------------------------------------------------------------- statistics */

double lnk_geom_mean(const double *x, int d)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        s += x[i];
    return s / d;
}

double lnk_geom_norm_ratio(const double *x, int d)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += x[i] * x[i];
    if (ss >= 0x1p-900 && ss <= DBL_MAX)
        return sqrt(ss / d);
    int e = exponent(x, d);
    ss = 0;
    for (int i = 0; i < d; i++)
        ss += ldexp(x[i], -e) * ldexp(x[i], -e);
    return ldexp(sqrt(ss / d), e);
}

double lnk_geom_cos_ones(const double *x, int d)
{
    double s = 0, ss = 0;
    for (int i = 0; i < d; i++) {
        s += x[i];
        ss += x[i] * x[i];
    }
    if (!(ss >= 0x1p-900 && ss <= DBL_MAX && isfinite(s))) {
        int e = exponent(x, d); /* the cosine is scale-invariant */
        s = ss = 0;
        for (int i = 0; i < d; i++) {
            double y = ldexp(x[i], -e);
            s += y;
            ss += y * y;
        }
    }
    if (ss == 0)
        return 0;
    double c = s / (sqrt(ss) * sqrt((double)d));
    return c > 1 ? 1 : (c < -1 ? -1 : c);
}

double lnk_geom_angle_ones(const double *x, int d)
{
    return acos(fabs(lnk_geom_cos_ones(x, d))) * (180.0 / M_PI);
}

int lnk_geom_head_stats(const double *x, int d, int h, double *cos, double *ratio, double *mean)
{
    if (d < 1 || h < 1 || d % h)
        return lnk_error(LNK_EINVAL, "head statistics: d = %d, h = %d: h must divide d", d, h);
    int dk = d / h;
    for (int j = 0; j < h; j++) {
        const double *s = x + (size_t)j * dk;
        if (cos)
            cos[j] = lnk_geom_cos_ones(s, dk);
        if (ratio)
            ratio[j] = lnk_geom_norm_ratio(s, dk);
        if (mean)
            mean[j] = lnk_geom_mean(s, dk);
    }
    return LNK_OK;
}
