/* ReLU.  Its derivative is the mask [x > 0], which serves the tangent, the
 * backward and the backward tangent alike (the second derivative is zero
 * almost everywhere; at x == 0 we take the derivative 0, as PyTorch does).
 * Element-wise: split over the BLAS threads (core/par.h). */
#include "core/par.h"
#include "layers/layers.h"

typedef struct {
    double *y;
    const double *dotx, *x;
    int accum;
} relu_job;

static void forward_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const relu_job *j = ctx;
    for (size_t i = lo; i < hi; i++)
        j->y[i] = j->x[i] > 0 ? j->x[i] : 0.0;
}

void lnk_relu_forward(double *y, const double *x, size_t n)
{
    relu_job j = {y, NULL, x, 0};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, forward_part, &j);
}

static void mask_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const relu_job *j = ctx;
    double *y = j->y;
    const double *d = j->dotx, *x = j->x;
    /* two loops, not accum ? : inside one: each vectorises */
    if (j->accum)
        for (size_t i = lo; i < hi; i++)
            y[i] += x[i] > 0 ? d[i] : 0.0;
    else
        for (size_t i = lo; i < hi; i++)
            y[i] = x[i] > 0 ? d[i] : 0.0;
}

void lnk_relu_mask(double *y, const double *dotx, const double *x, size_t n, int accum)
{
    relu_job j = {y, dotx, x, accum};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, mask_part, &j);
}
