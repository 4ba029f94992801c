/* SwiGLU's gate, u = SiLU(a) c with SiLU(a) = a s, s = sigmoid(a) (MODEL.md
 * §2; a = x W1 + b1, c = x W3 + b3): forward, tangent, backward, backward
 * tangent.  The forward caches s; from it
 *   SiLU'(a)  = p = s (1 + a (1 - s)),
 *   SiLU''(a) = q = s (1 - s) (2 + a (1 - 2 s)),
 *   tangent:           udot = p c adot + SiLU(a) cdot
 *   backward:          da = du c p,  dc = du SiLU(a)
 *   backward tangent:  R{da} = R{du} c p + du (cdot p + c q adot),
 *                      R{dc} = R{du} SiLU(a) + du p adot.
 * Element-wise: split over the BLAS threads (core/par.h). */
#include <math.h>
#include "core/par.h"
#include "layers/layers.h"

typedef struct {
    double *o1, *o2;
    const double *a, *c, *s, *ad, *cd, *du, *dud;
} glu_job;

static double silu_d1(double a, double s) { return s * (1.0 + a * (1.0 - s)); }

static void forward_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const glu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double a = j->a[i], s = 1.0 / (1.0 + exp(-a));
        j->o2[i] = s;
        j->o1[i] = a * s * j->c[i];
    }
}

void lnk_swiglu_forward(double *u, double *s, const double *a, const double *c, size_t n)
{
    glu_job j = {.o1 = u, .o2 = s, .a = a, .c = c};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, forward_part, &j);
}

static void tangent_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const glu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double a = j->a[i], s = j->s[i];
        j->o1[i] = silu_d1(a, s) * j->c[i] * j->ad[i] + a * s * j->cd[i];
    }
}

void lnk_swiglu_tangent(double *udot, const double *adot, const double *cdot, const double *a,
                        const double *c, const double *s, size_t n)
{
    glu_job j = {.o1 = udot, .a = a, .c = c, .s = s, .ad = adot, .cd = cdot};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, tangent_part, &j);
}

static void backward_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const glu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double a = j->a[i], s = j->s[i], du = j->du[i];
        j->o1[i] = du * j->c[i] * silu_d1(a, s);
        j->o2[i] = du * a * s;
    }
}

void lnk_swiglu_backward(double *da, double *dc, const double *du, const double *a,
                         const double *c, const double *s, size_t n)
{
    glu_job j = {.o1 = da, .o2 = dc, .a = a, .c = c, .s = s, .du = du};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, backward_part, &j);
}

static void backward_tangent_part(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const glu_job *j = ctx;
    for (size_t i = lo; i < hi; i++) {
        double a = j->a[i], s = j->s[i], c = j->c[i], du = j->du[i], dud = j->dud[i];
        double ad = j->ad[i], p = silu_d1(a, s);
        double q = s * (1.0 - s) * (2.0 + a * (1.0 - 2.0 * s));
        j->o1[i] = dud * c * p + du * (j->cd[i] * p + c * q * ad);
        j->o2[i] = dud * a * s + du * p * ad;
    }
}

void lnk_swiglu_backward_tangent(double *dadot, double *dcdot, const double *dudot,
                                 const double *du, const double *adot, const double *cdot,
                                 const double *a, const double *c, const double *s, size_t n)
{
    glu_job j = {.o1 = dadot, .o2 = dcdot, .a = a, .c = c, .s = s, .ad = adot, .cd = cdot,
                 .du = du, .dud = dudot};
    lnk_par_for(n, LNK_PAR_GRAIN, 0, NULL, backward_tangent_part, &j);
}
