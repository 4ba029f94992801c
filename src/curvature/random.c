/* Random vectors for the curvature routines.  This file must not include
 * cblas.h: gsl_randist.h pulls in gsl_cblas.h, whose enums clash. */
#include <gsl/gsl_randist.h>
#include "curvature/internal.h"
#include "lnkit/curvature.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

gsl_rng *lnk_cv_rng(uint64_t seed, uint64_t stream)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return NULL;
    uint64_t h = splitmix64(splitmix64(seed) ^ (stream * 0xd1b54a32d192ed03ull + 1));
    unsigned long s = (unsigned long)(h & 0xffffffffu);
    gsl_rng_set(r, s ? s : 1);
    return r;
}

void lnk_cv_gaussian(gsl_rng *r, double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = gsl_ran_gaussian(r, 1.0);
}

void lnk_cv_rademacher(gsl_rng *r, double *x, size_t n)
{
    unsigned long bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 32 == 0)
            bits = gsl_rng_get(r); /* mt19937: 32 random bits */
        x[i] = (bits & 1u) ? 1.0 : -1.0;
        bits >>= 1;
    }
}

void lnk_cv_random(const struct lnk_group *g, gsl_rng *r, int kind, double *x, size_t n)
{
    if (!g) {
        if (kind == 0)
            lnk_cv_gaussian(r, x, n);
        else
            lnk_cv_rademacher(r, x, n);
        return;
    }
    /* The same draws as the one-process vector, keeping [offset, offset + n):
     * all n_global values are drawn (RNG cost O(n_global), no memory), so a
     * stream that goes on to the next vector is where it would be in one
     * process. */
    size_t end = g->n_global;
    unsigned long bits = 0;
    for (size_t i = 0; i < end; i++) {
        double v;
        if (kind == 0) {
            v = gsl_ran_gaussian(r, 1.0);
        } else {
            if (i % 32 == 0)
                bits = gsl_rng_get(r);
            v = (bits & 1u) ? 1.0 : -1.0;
            bits >>= 1;
        }
        if (i >= g->offset && i < g->offset + n)
            x[i - g->offset] = v;
    }
}
