/* Row norms (LayerNorm center = 1, RMSNorm center = 0): forward, tangent,
 * backward, backward tangent.  Math in layers.h.  Each row is independent;
 * gain/bias gradients are summed over rows in row order (deterministic). */
#include <math.h>
#include <string.h>
#include "layers/layers.h"

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

void lnk_norm_forward(double *y, double *xhat, double *r, const double *x, const double *g,
                      const double *b, int R, int n, int center, double eps)
{
    for (int row = 0; row < R; row++) {
        const double *xr = x + (size_t)row * n;
        double *hr = xhat + (size_t)row * n, *yr = y + (size_t)row * n;
        double mu = center ? mean(xr, n) : 0.0, v = 0;
        for (int i = 0; i < n; i++) {
            double c = xr[i] - mu;
            v += c * c;
        }
        double rr = 1.0 / sqrt(v / n + eps);
        r[row] = rr;
        for (int i = 0; i < n; i++) {
            hr[i] = (xr[i] - mu) * rr;
            yr[i] = (g ? g[i] * hr[i] : hr[i]) + (b ? b[i] : 0.0);
        }
    }
}

void lnk_norm_tangent(double *ydot, double *xhatdot, double *rdot, const double *xdot,
                      const double *xhat, const double *r, const double *g, const double *gdot,
                      const double *bdot, int R, int n, int center)
{
    for (int row = 0; row < R; row++) {
        const double *xd = xdot + (size_t)row * n, *hr = xhat + (size_t)row * n;
        double *hd = xhatdot + (size_t)row * n, *yd = ydot + (size_t)row * n;
        double rr = r[row], u = mean_prod(hr, xd, n), m = center ? mean(xd, n) : 0.0;
        rdot[row] = -rr * rr * u;
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

void lnk_norm_backward(double *dx, double *dg, double *db, const double *dy, const double *xhat,
                       const double *r, const double *g, int R, int n, int center, int accum)
{
    for (int row = 0; row < R; row++) {
        const double *dr = dy + (size_t)row * n, *hr = xhat + (size_t)row * n;
        double *dxr = dx + (size_t)row * n;
        double sm = 0, sa = 0;
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            sm += dh;
            sa += dh * hr[i];
        }
        double m = center ? sm / n : 0.0, a = sa / n, rr = r[row];
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            double v = rr * (dh - m - hr[i] * a);
            dxr[i] = accum ? dxr[i] + v : v;
        }
        if (dg)
            for (int i = 0; i < n; i++)
                dg[i] += dr[i] * hr[i];
        if (db)
            for (int i = 0; i < n; i++)
                db[i] += dr[i];
    }
}

void lnk_norm_backward_tangent(double *dxdot, double *dgdot, double *dbdot, const double *dydot,
                               const double *dy, const double *xhat, const double *xhatdot,
                               const double *r, const double *rdot, const double *g,
                               const double *gdot, int R, int n, int center, int accum)
{
    for (int row = 0; row < R; row++) {
        const double *dr = dy + (size_t)row * n, *ddr = dydot + (size_t)row * n;
        const double *hr = xhat + (size_t)row * n, *hd = xhatdot + (size_t)row * n;
        double *out = dxdot + (size_t)row * n;
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
        double rr = r[row], rd = rdot[row];
        double m = center ? sm / n : 0.0, a = sa / n;
        double md = center ? smd / n : 0.0, ad = sad / n;
        for (int i = 0; i < n; i++) {
            double dh = g ? dr[i] * g[i] : dr[i];
            double dhd = g ? ddr[i] * g[i] : ddr[i];
            if (gdot)
                dhd += dr[i] * gdot[i];
            double v = rd * (dh - m - hr[i] * a) + rr * (dhd - md - hd[i] * a - hr[i] * ad);
            out[i] = accum ? out[i] + v : v;
        }
        if (dgdot)
            for (int i = 0; i < n; i++)
                dgdot[i] += ddr[i] * hr[i] + dr[i] * hd[i];
        if (dbdot)
            for (int i = 0; i < n; i++)
                dbdot[i] += ddr[i];
    }
}
