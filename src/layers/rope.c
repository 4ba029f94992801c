/* Rotary positions (MODEL.md §2; RoFormer, Meta's LLaMA): the row r of an
 * [R, d] matrix of h heads (d_k = d / h columns each) is at position
 * t = r % T, and each head's pairs of columns (2i, 2i+1) turn by the angle
 * t theta_i, theta_i = 10000^(-2i/d_k):
 *   y[2i] = x[2i] cos - x[2i+1] sin,   y[2i+1] = x[2i] sin + x[2i+1] cos.
 * The map is linear and does not depend on the parameters: its tangent is
 * the forward map applied to the tangent, its backward the transpose (the
 * rotation by -angle), and its backward tangent the backward map applied to
 * the adjoint's tangent.  Rows are independent: split over the BLAS threads
 * (core/par.h); every map may work in place (y == x). */
#include <math.h>
#include "core/par.h"
#include "layers/layers.h"

void lnk_rope_table(double *cs, double *sn, int T, int dk)
{
    int half = dk / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            /* as the sinusoidal table: t / 10000^(2i/d_k) */
            double ang = (double)t / pow(10000.0, (double)(2 * i) / dk);
            cs[(size_t)t * half + i] = cos(ang);
            sn[(size_t)t * half + i] = sin(ang);
        }
}

typedef struct {
    double *y;
    const double *x, *cs, *sn;
    int T, d, h;
    double sgn; /* +1 forward, -1 backward (the transpose) */
} rope_job;

static void rotate_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const rope_job *j = ctx;
    int d = j->d, dk = d / j->h, half = dk / 2;
    for (size_t r = lo; r < hi; r++) {
        const double *c = j->cs + (size_t)(r % (size_t)j->T) * half;
        const double *s = j->sn + (size_t)(r % (size_t)j->T) * half;
        const double *x = j->x + r * d;
        double *y = j->y + r * d;
        for (int hd = 0; hd < j->h; hd++)
            for (int i = 0; i < half; i++) {
                int p = hd * dk + 2 * i;
                double x0 = x[p], x1 = x[p + 1], sv = j->sgn * s[i];
                y[p] = x0 * c[i] - x1 * sv;
                y[p + 1] = x0 * sv + x1 * c[i];
            }
    }
}

static void rope_run(double *y, const double *x, const double *cs, const double *sn, int R, int T,
                     int d, int h, double sgn)
{
    rope_job j = {y, x, cs, sn, T, d, h, sgn};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)d), 0, NULL, rotate_rows, &j);
}

void lnk_rope_forward(double *y, const double *x, const double *cs, const double *sn, int R,
                      int T, int d, int h)
{
    rope_run(y, x, cs, sn, R, T, d, h, 1.0);
}

void lnk_rope_tangent(double *ydot, const double *xdot, const double *cs, const double *sn, int R,
                      int T, int d, int h)
{
    rope_run(ydot, xdot, cs, sn, R, T, d, h, 1.0);
}

void lnk_rope_backward(double *dx, const double *dy, const double *cs, const double *sn, int R,
                       int T, int d, int h)
{
    rope_run(dx, dy, cs, sn, R, T, d, h, -1.0);
}

void lnk_rope_backward_tangent(double *dxdot, const double *dydot, const double *cs,
                               const double *sn, int R, int T, int d, int h)
{
    rope_run(dxdot, dydot, cs, sn, R, T, d, h, -1.0);
}
