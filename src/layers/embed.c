/* Token embedding with its position term and scales (MODEL.md §2):
 *   e[r] = sigma (c E[ids[r]] + P_t),  t = r % T,
 * sinusoidal: c = sqrt(d), P_t the table of Vaswani et al.
 * (PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...)); otherwise
 * c = 1 and P_t the row t of the learned table P (NULL: no position term).
 * The map (E, P) -> e is linear, so its tangent and its backward tangent are
 * the forward and backward maps themselves applied to tangents.  sigma = 1
 * multiplies nothing (today's embedding, bit for bit). */
#include <math.h>
#include <string.h>
#include "layers/layers.h"

void lnk_embed_forward(double *e, const int64_t *ids, const double *E, const double *P, int R,
                       int T, int d, int sinusoidal, double sigma)
{
    double s = sinusoidal ? sqrt((double)d) : 1.0;
    for (int r = 0; r < R; r++) {
        const double *er = E + (size_t)ids[r] * d;
        double *out = e + (size_t)r * d, t = (double)(r % T);
        if (sinusoidal) {
            for (int i = 0; i < d; i += 2) {
                double ang = t / pow(10000.0, (double)i / d);
                out[i] = s * er[i] + sin(ang);
                out[i + 1] = s * er[i + 1] + cos(ang);
            }
        } else if (P) {
            const double *pr = P + (size_t)(r % T) * d;
            for (int i = 0; i < d; i++)
                out[i] = er[i] + pr[i];
        } else {
            memcpy(out, er, sizeof(double) * (size_t)d);
        }
        if (sigma != 1.0)
            for (int i = 0; i < d; i++)
                out[i] *= sigma;
    }
}

void lnk_embed_tangent(double *edot, const int64_t *ids, const double *Edot, const double *Pdot,
                       int R, int T, int d, int sinusoidal, double sigma)
{
    double s = (sinusoidal ? sqrt((double)d) : 1.0) * sigma;
    for (int r = 0; r < R; r++) {
        const double *er = Edot + (size_t)ids[r] * d;
        double *out = edot + (size_t)r * d;
        for (int i = 0; i < d; i++)
            out[i] = s * er[i];
        if (Pdot) {
            const double *pr = Pdot + (size_t)(r % T) * d;
            for (int i = 0; i < d; i++)
                out[i] += sigma * pr[i];
        }
    }
}

void lnk_embed_backward(double *dE, double *dP, const int64_t *ids, const double *de, int R, int T,
                        int d, int sinusoidal, double sigma)
{
    double s = (sinusoidal ? sqrt((double)d) : 1.0) * sigma;
    for (int r = 0; r < R; r++) {
        const double *g = de + (size_t)r * d;
        if (dE) {
            double *er = dE + (size_t)ids[r] * d;
            for (int i = 0; i < d; i++)
                er[i] += s * g[i];
        }
        if (dP) {
            double *pr = dP + (size_t)(r % T) * d;
            for (int i = 0; i < d; i++)
                pr[i] += sigma * g[i];
        }
    }
}
