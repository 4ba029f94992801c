/* ReLU.  Its derivative is the mask [x > 0], which serves the tangent, the
 * backward and the backward tangent alike (the second derivative is zero
 * almost everywhere; at x == 0 we take the derivative 0, as PyTorch does). */
#include "layers/layers.h"

void lnk_relu_forward(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0.0;
}

void lnk_relu_mask(double *y, const double *dotx, const double *x, size_t n, int accum)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i] > 0 ? dotx[i] : 0.0;
        y[i] = accum ? y[i] + v : v;
    }
}
