/* Random key sets of the selectability heat map (Brody et al.'s experiment,
 * plus keys with a common offset and anisotropic scales) and one heat-map cell. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include "lnkit/error.h"
#include "lnkit/geometry.h"

const char *lnk_geom_keydist_name(lnk_geom_keydist k)
{
    return k == LNK_GEOM_KEYS_GAUSS ? "gauss" : k == LNK_GEOM_KEYS_OFFSET ? "offset" : "?";
}

/* splitmix64: decorrelated seeds from (seed, n, d, run). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t lnk_geom_run_seed(uint64_t seed, int n, int d, int run)
{
    return mix(mix(mix(mix(seed) ^ (uint64_t)n) ^ (uint64_t)d) ^ (uint64_t)run);
}

int lnk_geom_random_keys(lnk_geom_keydist dist, int n, int d, uint64_t seed, double *K)
{
    if (n < 1 || d < 1 || (dist != LNK_GEOM_KEYS_GAUSS && dist != LNK_GEOM_KEYS_OFFSET))
        return lnk_error(LNK_EINVAL, "random keys: n = %d, d = %d, distribution %d", n, d,
                         (int)dist);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return lnk_error(LNK_ENOMEM, "random keys: out of memory");
    gsl_rng_set(r, (unsigned long)(seed & 0xffffffffUL) ^ (unsigned long)(seed >> 32));
    for (long i = 0; i < (long)n * d; i++)
        K[i] = gsl_ran_gaussian_ziggurat(r, 1.0);
    if (dist == LNK_GEOM_KEYS_OFFSET) {
        double *mu = malloc(sizeof(double) * 2 * (size_t)d);
        if (!mu) {
            gsl_rng_free(r);
            return lnk_error(LNK_ENOMEM, "random keys: out of memory");
        }
        double *sc = mu + d;
        for (int c = 0; c < d; c++)
            mu[c] = 1.0 + gsl_ran_gaussian_ziggurat(r, 1.0);
        for (int c = 0; c < d; c++)
            sc[c] = exp(gsl_ran_gaussian_ziggurat(r, 1.0));
        for (int i = 0; i < n; i++)
            for (int c = 0; c < d; c++)
                K[(size_t)i * d + c] = mu[c] + sc[c] * K[(size_t)i * d + c];
        free(mu);
    }
    gsl_rng_free(r);
    return LNK_OK;
}

int lnk_geom_heat_cell(lnk_geom_keydist dist, lnk_geom_norm norm, int n, int d, int runs,
                       uint64_t seed, double tol, lnk_geom_cell *out)
{
    if (runs < 1)
        return lnk_error(LNK_EINVAL, "heat-map cell: runs = %d, need >= 1", runs);
    double *K = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1) * (d > 0 ? d : 1));
    if (!K)
        return lnk_error(LNK_ENOMEM, "heat-map cell: out of memory");
    lnk_geom_cell c = {runs, 0, 0, 0, 0, 0, INFINITY};
    int st = LNK_OK;
    for (int r = 0; r < runs && !st; r++) {
        st = lnk_geom_random_keys(dist, n, d, lnk_geom_run_seed(seed, n, d, r), K);
        st = st ? st : lnk_geom_apply(norm, K, K, n, d, 1, 0.0);
        int cnt = 0;
        lnk_geom_sel_info info;
        st = st ? st : lnk_geom_count_unselectable(K, n, d, tol, &cnt, &info);
        if (st)
            break;
        c.frac_any += cnt > 0;
        c.mean_frac += (double)cnt / n;
        c.n_lp += info.n_lp;
        c.n_ambiguous += info.n_ambiguous;
        c.n_near += info.n_near;
        c.min_sel_dist = fmin(c.min_sel_dist, info.min_sel_dist);
    }
    free(K);
    if (st)
        return st;
    c.frac_any /= runs;
    c.mean_frac /= runs;
    *out = c;
    return LNK_OK;
}
