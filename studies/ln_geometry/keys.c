/* The geometry study's parts on random keys (geom.h): the selectability heat
 * maps (random), the keys' angle to the all-ones vector against d (ortho),
 * and per-head slices after full-width and per-head norms (heads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/geometry.h"
#include "front/front.h"
#include "geom.h"

/* ------------------------------------------------ part random: heat maps */

static const lnk_geom_norm heat_norms[4] = {LNK_GEOM_NONE, LNK_GEOM_CENTER, LNK_GEOM_SCALE,
                                           LNK_GEOM_LAYERNORM};

void part_random(study *S)
{
    int nn = 0, nd = S->dmax - 3 + 1, ns[64];
    for (int n = 3; n <= S->nmax; n += S->nstep)
        ns[nn++] = n;
    if (ns[nn - 1] != S->nmax)
        ns[nn++] = S->nmax;
    static const char *const hdr[] = {"dist", "norm", "n", "d", "runs", "frac_any", "mean_frac",
                                      "n_lp", "n_ambiguous", "n_near", "min_sel_dist"};
    out_csv o;
    csv_open(&o, S->out, "heatmap.csv", hdr, 11);
    double t0 = lnk_now();
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++) {
            for (int id = 0; id < nd; id++)
                for (int in = 0; in < nn; in++) {
                    int d = 3 + id, n = ns[in];
                    lnk_geom_cell c;
                    CLI_CK(lnk_geom_heat_cell((lnk_geom_keydist)ds, heat_norms[k], n, d, S->runs,
                                          S->seed, 0, &c));
                    row(&o, "ssiiigglllG", lnk_geom_keydist_name(ds),
                        lnk_geom_norm_name(heat_norms[k]), n, d, S->runs, c.frac_any,
                        c.mean_frac, c.n_lp, c.n_ambiguous, c.n_near, c.min_sel_dist);
                }
            fprintf(stderr, "  heat map %s / %s done (%.0f s)\n", lnk_geom_keydist_name(ds),
                    lnk_geom_norm_name(heat_norms[k]), lnk_now() - t0);
        }
    lnk_meta *extra = part_meta("random");
    char nr[48], dr[24];
    snprintf(nr, sizeof nr, "3..%d step %d", S->nmax, S->nstep);
    snprintf(dr, sizeof dr, "3..%d", S->dmax);
    lnk_meta_int(extra, "runs", S->runs);
    lnk_meta_str(extra, "n", nr);
    lnk_meta_str(extra, "d", dr);
    lnk_meta_real(extra, "tol", LNK_GEOM_SEL_TOL);
    lnk_meta_int(extra, "eps", 0);
    lnk_meta_int(extra, "key_seed", (long long)S->seed);
    lnk_meta_str(extra, "keys", "gauss: N(0,1) iid; offset: mu + s*z, mu_c ~ N(1,1), s_c = "
                                "exp(N(0,1)) per set, same z");
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    printf("random keys: %d cells x 8, %.0f s\n", nd * nn, lnk_now() - t0);
}

/* ----------------------------------------------- part ortho: cos to 1 vs d */

/* E|cos(x, 1)| for x ~ N(0, I_d): cos^2 ~ Beta(1/2, (d-1)/2). */
static double gauss_abs_cos(int d)
{
    return exp(lgamma(d / 2.0) - lgamma((d + 1) / 2.0)) / sqrt(M_PI);
}

void part_ortho(study *S)
{
    static const int ds[] = {3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    enum { ND = sizeof ds / sizeof ds[0], SETS = 100, N = 40 };
    static const char *const dname[3] = {"gauss", "offset", "offset0"};
    static const char *const hdr[] = {"dist", "d", "keys", "mean_abs_cos", "sd_abs_cos",
                                      "mean_angle_deg", "gauss_theory_abs_cos",
                                      "mean_abs_cos_after_center", "sets",
                                      "sd_set_mean_abs_cos"};
    out_csv o;
    csv_open(&o, S->out, "orthogonality.csv", hdr, 10);
    double *K = xmalloc(sizeof(double) * N * 512), *mu = xmalloc(sizeof(double) * 1024);
    for (int di = 0; di < 3; di++)
        for (int id = 0; id < ND; id++) {
            int d = ds[id];
            double s = 0, s2 = 0, ang = 0, cc = 0, q1 = 0, q2 = 0;
            for (int set = 0; set < SETS; set++) {
                double sset = 0; /* this set's sum: keys of a set share mu and s */
                uint64_t sd = lnk_geom_run_seed(S->seed + 17, N, d, set);
                CLI_CK(lnk_geom_random_keys(di == 1 ? LNK_GEOM_KEYS_OFFSET : LNK_GEOM_KEYS_GAUSS, N,
                                        d, sd, K));
                if (di == 2) { /* zero-mean offset, anisotropic scales: own draws */
                    uint64_t sd2 = lnk_geom_run_seed(sd, 1, d, 99);
                    CLI_CK(lnk_geom_random_keys(LNK_GEOM_KEYS_GAUSS, 2, d, sd2, mu));
                    for (int i = 0; i < N; i++)
                        for (int c = 0; c < d; c++)
                            K[i * d + c] = mu[c] + exp(mu[d + c]) * K[i * d + c];
                }
                for (int i = 0; i < N; i++) {
                    double c = fabs(lnk_geom_cos_ones(K + (size_t)i * d, d));
                    s += c;
                    s2 += c * c;
                    sset += c;
                    ang += lnk_geom_angle_ones(K + (size_t)i * d, d);
                    lnk_geom_center(K + (size_t)i * d, K + (size_t)i * d, d);
                    cc += fabs(lnk_geom_cos_ones(K + (size_t)i * d, d));
                }
                q1 += sset / N;
                q2 += (sset / N) * (sset / N);
            }
            int m = SETS * N;
            double mean = s / m, sdv = sqrt(fmax(0.0, (s2 - m * mean * mean) / (m - 1)));
            double qm = q1 / SETS, qsd = sqrt(fmax(0.0, (q2 - SETS * qm * qm) / (SETS - 1)));
            row(&o, "siigggGgig", dname[di], d, m, mean, sdv, ang / m,
                di == 0 ? gauss_abs_cos(d) : NAN, cc / m, (int)SETS, qsd);
        }
    lnk_meta *extra = part_meta("ortho");
    lnk_meta_int(extra, "keys_per_d", SETS * N);
    lnk_meta_str(extra, "dists", "gauss N(0,1); offset mu_c ~ N(1,1), s_c = exp(N(0,1)); "
                                 "offset0 mu_c ~ N(0,1), s_c = exp(N(0,1))");
    lnk_meta_int(extra, "key_seed", (long long)(S->seed + 17));
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    free(K);
    free(mu);
    printf("orthogonality: done\n");
}

/* ----------------------------------------------------- part heads: slices */

static const char *const hv_name[4] = {"raw", "fullLN", "headLN", "headRMS"};

/* Y = variant v of X [n, d] with h heads (eps = 0). */
static void head_variant(int v, const double *X, double *Y, int n, int d, int h)
{
    if (v == 0)
        memcpy(Y, X, sizeof(double) * n * d);
    else
        CLI_CK(lnk_geom_apply(v == 3 ? LNK_GEOM_RMSNORM : LNK_GEOM_LAYERNORM, X, Y, n, d,
                          v == 1 ? 1 : h, 0.0));
}

static const int hs[] = {1, 2, 4, 8, 16};

/* heads_stats.csv: slice means, cosines and norm ratios of N keys at d = 512. */
static void heads_stats(const study *S)
{
    enum { N = 2000 };
    static const char *const hdr[] = {"dist", "d", "h", "d_k", "variant", "mean_abs_slice_mean",
                                      "max_abs_slice_mean", "mean_abs_slice_cos",
                                      "slice_norm_ratio_mean", "slice_norm_ratio_sd",
                                      "slice_norm_ratio_min", "slice_norm_ratio_max",
                                      "sd_abs_slice_mean"};
    out_csv o;
    csv_open(&o, S->out, "heads_stats.csv", hdr, 13);
    int d = 512;
    double *X = xmalloc(sizeof(double) * N * d), *Y = xmalloc(sizeof(double) * N * d);
    double cs[16], ra[16], mu[16];
    for (int ds = 0; ds < 2; ds++) {
        /* N keys as 50 sets of 40 (offset: a common mu, s per set) */
        for (int set = 0; set < N / 40; set++)
            CLI_CK(lnk_geom_random_keys((lnk_geom_keydist)ds, 40, d,
                                    lnk_geom_run_seed(S->seed + 5, 40, d, set), X + (size_t)set * 40 * d));
        for (int ih = 0; ih < 5; ih++) {
            int h = hs[ih], dk = d / h;
            for (int v = 1; v < 4; v++) {
                head_variant(v, X, Y, N, d, h);
                double sm = 0, sm2 = 0, mx = 0, sc = 0, r1 = 0, r2 = 0, rmin = INFINITY, rmax = 0;
                for (int i = 0; i < N; i++) {
                    CLI_CK(lnk_geom_head_stats(Y + (size_t)i * d, d, h, cs, ra, mu));
                    for (int j = 0; j < h; j++) {
                        sm += fabs(mu[j]);
                        sm2 += mu[j] * mu[j];
                        mx = fmax(mx, fabs(mu[j]));
                        sc += fabs(cs[j]);
                        r1 += ra[j];
                        r2 += ra[j] * ra[j];
                        rmin = fmin(rmin, ra[j]);
                        rmax = fmax(rmax, ra[j]);
                    }
                }
                double m = (double)N * h, rm = r1 / m;
                double rsd = sqrt(fmax(0.0, (r2 - m * rm * rm) / (m - 1)));
                double ssd = sqrt(fmax(0.0, (sm2 - m * (sm / m) * (sm / m)) / (m - 1)));
                row(&o, "siiisgggggggg", lnk_geom_keydist_name(ds), d, h, dk, hv_name[v], sm / m,
                    mx, sc / m, rm, rsd, rmin, rmax, ssd);
            }
        }
    }
    lnk_meta *extra = part_meta("heads");
    lnk_meta_int(extra, "keys", (int)N);
    lnk_meta_int(extra, "eps", 0);
    lnk_meta_int(extra, "key_seed", (long long)(S->seed + 5));
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    free(X);
    free(Y);
}

/* heads_select.csv: per-head selectability, n = 64 keys, 20 runs, every head. */
static void heads_select(const study *S)
{
    static const int dsel[] = {16, 64, 512};
    enum { NK = 64, RUNS = 20 };
    static const char *const sh[] = {"dist", "d", "h", "d_k", "variant", "keys", "runs",
                                      "frac_unselectable", "frac_head_sets_with_unselectable"};
    out_csv o;
    csv_open(&o, S->out, "heads_select.csv", sh, 9);
    double *X = xmalloc(sizeof(double) * NK * 512), *Y = xmalloc(sizeof(double) * NK * 512);
    double *Sl = xmalloc(sizeof(double) * NK * 512);
    for (int ds = 0; ds < 2; ds++)
        for (int id = 0; id < 3; id++)
            for (int ih = 0; ih < 5; ih++) {
                int dd = dsel[id], h = hs[ih], dk = dd / h;
                if (dk < 2)
                    continue;
                double fr[4];
                for (int v = 0; v < 4; v++) {
                    long un = 0, anyc = 0;
                    for (int r = 0; r < RUNS; r++) {
                        CLI_CK(lnk_geom_random_keys((lnk_geom_keydist)ds, NK, dd,
                                                lnk_geom_run_seed(S->seed + 9, NK, dd, r), X));
                        head_variant(v, X, Y, NK, dd, h);
                        for (int j = 0; j < h; j++) {
                            for (int i = 0; i < NK; i++)
                                memcpy(Sl + (size_t)i * dk, Y + (size_t)i * dd + (size_t)j * dk,
                                       sizeof(double) * dk);
                            int cnt;
                            CLI_CK(lnk_geom_count_unselectable(Sl, NK, dk, 0, &cnt, NULL));
                            un += cnt;
                            anyc += cnt > 0;
                        }
                    }
                    fr[v] = (double)un / ((double)NK * RUNS * h);
                    row(&o, "siiisiigg", lnk_geom_keydist_name(ds), dd, h, dk, hv_name[v], NK, RUNS,
                        fr[v], (double)anyc / (RUNS * h));
                }
            }
    lnk_meta *extra = part_meta("heads");
    lnk_meta_int(extra, "keys", (int)NK);
    lnk_meta_int(extra, "runs", (int)RUNS);
    lnk_meta_int(extra, "eps", 0);
    lnk_meta_int(extra, "key_seed", (long long)(S->seed + 9));
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    free(X);
    free(Y);
    free(Sl);
}

void part_heads(study *S)
{
    heads_stats(S);
    heads_select(S);
    printf("heads: done\n");
}
