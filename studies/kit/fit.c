/* Power-law fits by (weighted) least squares in log-log coordinates, mean and
 * sd over seeds, and the "mean ± sd" cell format (studies/kit/analysis.h). */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "analysis.h"
#include "lnkit/error.h"

int lnk_fit_power(const double *x, const double *y, const double *se_y, size_t n, lnk_fit *f)
{
    if (n < (se_y ? 2u : 3u))
        return lnk_error(LNK_EINVAL, "power fit: %zu points, need at least %d%s", n,
                         se_y ? 2 : 3, se_y ? "" : " (unweighted: the scatter gives the errors)");
    double *lx = malloc(sizeof(double) * n), *ly = malloc(sizeof(double) * n),
           *w = se_y ? malloc(sizeof(double) * n) : NULL;
    if (!lx || !ly || (se_y && !w)) {
        free(lx), free(ly), free(w);
        return lnk_error(LNK_ENOMEM, "power fit: out of memory for %zu points", n);
    }
    int st = LNK_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (!(x[i] > 0) || !(y[i] > 0) || !isfinite(x[i]) || !isfinite(y[i]))
            st = lnk_error(LNK_EINVAL, "power fit: point %zu is (x = %g, y = %g), both must be "
                           "finite and > 0", i, x[i], y[i]);
        else if (se_y && !(se_y[i] > 0 && isfinite(se_y[i])))
            st = lnk_error(LNK_EINVAL, "power fit: point %zu has standard error %g, expected "
                           "finite and > 0", i, se_y[i]);
        else {
            lx[i] = log(x[i]);
            ly[i] = log(y[i]);
            if (w) /* var(ln y) ~ (se/y)^2 */
                w[i] = (y[i] / se_y[i]) * (y[i] / se_y[i]);
        }
    }
    if (!st) {
        double c0, c1, c00, c01, c11, chisq;
        if (w)
            gsl_fit_wlinear(lx, 1, w, 1, ly, 1, n, &c0, &c1, &c00, &c01, &c11, &chisq);
        else
            gsl_fit_linear(lx, 1, ly, 1, n, &c0, &c1, &c00, &c01, &c11, &chisq);
        int dof = (int)n - 2;
        double scale = 1.0;
        if (w && dof > 0 && chisq / dof > 1.0)
            scale = sqrt(chisq / dof);
        f->n = n;
        f->slope = c1;
        f->intercept = c0;
        f->se_slope = scale * sqrt(c11);
        f->se_intercept = scale * sqrt(c00);
        f->cov = scale * scale * c01;
        f->chisq = chisq;
        f->dof = dof;
        f->scale = scale;
    }
    free(lx), free(ly), free(w);
    return st;
}

double lnk_fit_pvalue(const lnk_fit *f)
{
    return f->dof > 0 ? gsl_cdf_chisq_Q(f->chisq, (double)f->dof) : 1.0;
}

void lnk_mean_sd(const double *x, size_t stride, size_t n, double *mean, double *sd)
{
    double m = gsl_stats_mean(x, stride, n);
    *mean = m;
    *sd = n > 1 ? gsl_stats_sd_m(x, stride, n, m) : 0.0;
}

void lnk_fmt_pm(char *buf, size_t n, double mean, double sd)
{
    double am = fabs(mean);
    if (!(sd > 0) || !isfinite(sd)) {
        snprintf(buf, n, "%.4g", mean);
        return;
    }
    if ((am != 0 && am < 1e-3) || am >= 1e5) {
        snprintf(buf, n, "%.3g ± %.2g", mean, sd);
        return;
    }
    /* two significant digits of sd: decimals = 1 - floor(log10 sd), at least 0 */
    int dec = 1 - (int)floor(log10(sd));
    if (dec < 0)
        dec = 0;
    if (dec > 12)
        dec = 12;
    snprintf(buf, n, "%.*f ± %.*f", dec, mean, dec, sd);
}
