/* The exact GELU, GELU(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (MODEL.md §2):
 * forward, tangent, backward, backward tangent.  Its Jacobian is diagonal,
 * GELU'(x) = Phi(x) + x phi(x), cached by the forward (d1) for the three
 * maps that use it; the backward tangent adds the second-order term
 * GELU''(x) xdot dy with GELU''(x) = phi(x) (2 - x^2).  Element-wise: split
 * over the BLAS threads (core/par.h). */
#include <math.h>
#include "core/par.h"
#include "layers/layers.h"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

typedef struct {
    double *y, *d1;
    const double *x, *a, *b, *c, *e; /* e: d1 in the backward tangent */
} gelu_job;

static void forward_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const gelu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double x = j->x[i], Phi = 0.5 * (1.0 + erf(x * INV_SQRT2));
        double phi = INV_SQRT_2PI * exp(-0.5 * x * x);
        j->y[i] = x * Phi;
        j->d1[i] = Phi + x * phi;
    }
}

void lnk_gelu_forward(double *y, double *d1, const double *x, size_t n)
{
    gelu_job j = {.y = y, .d1 = d1, .x = x};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, forward_part, &j);
}

/* y = d1 a, elementwise. */
static void scale_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const gelu_job *j = ctx;
    for (size_t i = lo; i < hi; i++)
        j->y[i] = j->a[i] * j->b[i];
}

void lnk_gelu_tangent(double *ydot, const double *d1, const double *xdot, size_t n)
{
    gelu_job j = {.y = ydot, .a = d1, .b = xdot};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, scale_part, &j);
}

void lnk_gelu_backward(double *dx, const double *d1, const double *dy, size_t n)
{
    gelu_job j = {.y = dx, .a = d1, .b = dy};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, scale_part, &j);
}

/* R{dx} = d1 R{dy} + phi(x) (2 - x^2) xdot dy. */
static void backward_tangent_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const gelu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double x = j->x[i], d2 = INV_SQRT_2PI * exp(-0.5 * x * x) * (2.0 - x * x);
        j->y[i] = j->e[i] * j->a[i] + d2 * j->b[i] * j->c[i];
    }
}

void lnk_gelu_backward_tangent(double *dxdot, const double *dydot, const double *dy,
                               const double *xdot, const double *x, const double *d1, size_t n)
{
    gelu_job j = {.y = dxdot, .e = d1, .a = dydot, .b = xdot, .c = dy, .x = x};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, backward_tangent_part, &j);
}
