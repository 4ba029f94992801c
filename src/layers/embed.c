/* Token embedding with the sqrt(d) scale and the sinusoidal position table of
 * Vaswani et al.: PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...).
 * The map E -> e is linear, so its tangent and its backward tangent are the
 * forward and backward maps themselves applied to tangents. */
#include <math.h>
#include <string.h>
#include "layers/layers.h"

void lnk_embed_forward(double *e, const int64_t *ids, const double *E, int R, int T, int d)
{
    double s = sqrt((double)d);
    for (int r = 0; r < R; r++) {
        const double *er = E + (size_t)ids[r] * d;
        double *out = e + (size_t)r * d, t = (double)(r % T);
        for (int i = 0; i < d; i += 2) {
            double ang = t / pow(10000.0, (double)i / d);
            out[i] = s * er[i] + sin(ang);
            out[i + 1] = s * er[i + 1] + cos(ang);
        }
    }
}

void lnk_embed_tangent(double *edot, const int64_t *ids, const double *Edot, int R, int d)
{
    double s = sqrt((double)d);
    for (int r = 0; r < R; r++) {
        const double *er = Edot + (size_t)ids[r] * d;
        double *out = edot + (size_t)r * d;
        for (int i = 0; i < d; i++)
            out[i] = s * er[i];
    }
}

void lnk_embed_backward(double *dE, const int64_t *ids, const double *de, int R, int d)
{
    double s = sqrt((double)d);
    for (int r = 0; r < R; r++) {
        double *er = dE + (size_t)ids[r] * d;
        const double *g = de + (size_t)r * d;
        for (int i = 0; i < d; i++)
            er[i] += s * g[i];
    }
}
