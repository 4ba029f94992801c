/* Row norms (LayerNorm center = 1, RMSNorm center = 0): forward, tangent,
 * backward, backward tangent.  Math in layers.h.  Each row is independent:
 * rows are split over the BLAS threads (core/par.h); gain/bias gradients
 * are summed over rows in row order, serially (deterministic). */
#include <math.h>
#include <string.h>
#include "core/par.h"
#include "layers/layers.h"

/* The arguments of one call, for its row parts. */
typedef struct {
    double *y, *xhat, *r;             /* forward outputs; tangent: ydot, xhatdot, rdot */
    const double *x, *g, *b;          /* forward inputs; tangent: xdot, g */
    const double *xh, *rr, *gdot, *bdot; /* tangent: primal xhat, r; parameter tangents */
    const double *dy, *dyd, *hd, *rd; /* backward (tangent): dy, R{dy}, R{xhat}, R{r} */
    double *dx;
    int n, center, accum;
    double eps;
} norm_job;

static double mean(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return s / n;
}

static double mean_prod(const double *x, const double *y, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s / n;
}

static void forward_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const norm_job *j = ctx;
    int n = j->n;
    const double *g = j->g, *b = j->b;
    for (size_t row = lo; row < hi; row++) {
        const double *xr = j->x + row * n;
        double *hr = j->xhat + row * n, *yr = j->y + row * n;
        double mu = j->center ? mean(xr, n) : 0.0, v = 0;
        for (int i = 0; i < n; i++) {
            double c = xr[i] - mu;
            v += c * c;
        }
        double rr = 1.0 / sqrt(v / n + j->eps);
        j->r[row] = rr;
        for (int i = 0; i < n; i++) {
            hr[i] = (xr[i] - mu) * rr;
            yr[i] = (g ? g[i] * hr[i] : hr[i]) + (b ? b[i] : 0.0);
        }
    }
}

void lnk_norm_forward(double *y, double *xhat, double *r, const double *x, const double *g,
                      const double *b, int R, int n, int center, double eps)
{
    norm_job j = {.y = y, .xhat = xhat, .r = r, .x = x, .g = g, .b = b, .n = n,
                  .center = center, .eps = eps};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)n), 0, NULL, forward_rows, &j);
}

static void tangent_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const norm_job *j = ctx;
    int n = j->n;
    const double *g = j->g, *gdot = j->gdot, *bdot = j->bdot;
    for (size_t row = lo; row < hi; row++) {
        const double *xd = j->x + row * n, *hr = j->xh + row * n;
        double *hd = j->xhat + row * n, *yd = j->y + row * n;
        double rr = j->rr[row], u = mean_prod(hr, xd, n), m = j->center ? mean(xd, n) : 0.0;
        j->r[row] = -rr * rr * u;
        for (int i = 0; i < n; i++) {
            hd[i] = rr * (xd[i] - m - hr[i] * u);
            double yv = g ? g[i] * hd[i] : hd[i];
            if (gdot)
                yv += gdot[i] * hr[i];
            if (bdot)
                yv += bdot[i];
            yd[i] = yv;
        }
    }
}

void lnk_norm_tangent(double *ydot, double *xhatdot, double *rdot, const double *xdot,
                      const double *xhat, const double *r, const double *g, const double *gdot,
                      const double *bdot, int R, int n, int center)
{
    norm_job j = {.y = ydot, .xhat = xhatdot, .r = rdot, .x = xdot, .g = g, .xh = xhat,
                  .rr = r, .gdot = gdot, .bdot = bdot, .n = n, .center = center};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)n), 0, NULL, tangent_rows, &j);
}

static void backward_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const norm_job *j = ctx;
    int n = j->n;
    const double *g = j->g;
    for (size_t row = lo; row < hi; row++) {
        const double *dr = j->dy + row * n, *hr = j->xh + row * n;
        double *dxr = j->dx + row * n;
        double sm = 0, sa = 0;
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            sm += dh;
            sa += dh * hr[i];
        }
        double m = j->center ? sm / n : 0.0, a = sa / n, rr = j->rr[row];
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            double v = rr * (dh - m - hr[i] * a);
            dxr[i] = j->accum ? dxr[i] + v : v;
        }
    }
}

void lnk_norm_backward(double *dx, double *dg, double *db, const double *dy, const double *xhat,
                       const double *r, const double *g, int R, int n, int center, int accum)
{
    norm_job j = {.dx = dx, .dy = dy, .xh = xhat, .rr = r, .g = g, .n = n, .center = center,
                  .accum = accum};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)n), 0, NULL, backward_rows, &j);
    for (int row = 0; row < R; row++) {
        const double *dr = dy + (size_t)row * n, *hr = xhat + (size_t)row * n;
        if (dg)
            for (int i = 0; i < n; i++)
                dg[i] += dr[i] * hr[i];
        if (db)
            for (int i = 0; i < n; i++)
                db[i] += dr[i];
    }
}

static void backward_tangent_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const norm_job *j = ctx;
    int n = j->n;
    const double *g = j->g, *gdot = j->gdot;
    for (size_t row = lo; row < hi; row++) {
        const double *dr = j->dy + row * n, *ddr = j->dyd + row * n;
        const double *hr = j->xh + row * n, *hd = j->hd + row * n;
        double *out = j->dx + row * n;
        /* dxh = dy g, R{dxh} = R{dy} g + dy R{g} */
        double sm = 0, sa = 0, smd = 0, sad = 0;
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            double dhd = g ? ddr[i] * g[i] : ddr[i];
            if (gdot)
                dhd += dr[i] * gdot[i];
            sm += dh;
            sa += dh * hr[i];
            smd += dhd;
            sad += hd[i] * dh + hr[i] * dhd;
        }
        double rr = j->rr[row], rd = j->rd[row];
        double m = j->center ? sm / n : 0.0, a = sa / n;
        double md = j->center ? smd / n : 0.0, ad = sad / n;
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            double dhd = g ? ddr[i] * g[i] : ddr[i];
            if (gdot)
                dhd += dr[i] * gdot[i];
            double v = rd * (dh - m - hr[i] * a) + rr * (dhd - md - hd[i] * a - hr[i] * ad);
            out[i] = j->accum ? out[i] + v : v;
        }
    }
}

void lnk_norm_backward_tangent(double *dxdot, double *dgdot, double *dbdot, const double *dydot,
                               const double *dy, const double *xhat, const double *xhatdot,
                               const double *r, const double *rdot, const double *g,
                               const double *gdot, int R, int n, int center, int accum)
{
    norm_job j = {.dx = dxdot, .dy = dy, .dyd = dydot, .xh = xhat, .hd = xhatdot, .rr = r,
                  .rd = rdot, .g = g, .gdot = gdot, .n = n, .center = center, .accum = accum};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)n), 0, NULL, backward_tangent_rows, &j);
    for (int row = 0; row < R; row++) {
        const double *dr = dy + (size_t)row * n, *ddr = dydot + (size_t)row * n;
        const double *hr = xhat + (size_t)row * n, *hd = xhatdot + (size_t)row * n;
        if (dgdot)
            for (int i = 0; i < n; i++)
                dgdot[i] += ddr[i] * hr[i] + dr[i] * hd[i];
        if (dbdot)
            for (int i = 0; i < n; i++)
                dbdot[i] += ddr[i];
    }
}
