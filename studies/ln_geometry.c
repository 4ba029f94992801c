/* ln_geometry: the LayerNorm geometry study (`make study-geometry`; issue 5).
 *
 * Brody, Alon, Yahav 2023 ("On the Expressivity Role of LayerNorm in Transformers'
 * Attention") and the objections raised against it, checked part by part:
 *   random   selectability heat maps over (n, d) for random keys, Gaussian and with a
 *            common offset and anisotropic scales, under none / projection P / scaling S
 *            (RMS, eps 0) / LayerNorm = S(P):                 heatmap.csv
 *   ortho    |cos(k, 1)| and the angle to the line of 1 against d up to 512, with
 *            the spread over key sets (the fit is the summary's): orthogonality.csv
 *   heads    d = 512 (and 16, 64), h in {1..16}: per-head slice mean and norm spread
 *            after a full-width LN, a per-head LN, a per-head RMSNorm; per-head
 *            selectability:                             heads_stats.csv, heads_select.csv
 *   model    Pre-/Post-LN language models at initialisation on synthetic and real text:
 *            unselectable keys per layer and head along x -> N(x) -> N(x) Wk_j -> qk-norm,
 *            the hull-membership checks of the affine maps, and |cos(x, 1)| of the
 *            norms' inputs:            model_select.csv, model_affine.csv, model_cos.csv
 *   maps     attention maps at layer 2 of an encoder with full-width LN, per-head LN and
 *            per-head RMSNorm (qk_norm): entropy and stripe statistics of every layer and
 *            head, and the layer-2 maps of one sequence:  attn_stats.csv, attn_map_*.csv
 *   counts   how many normalisation statistics a LayerNorm computes:  norm_counts.csv
 * Every CSV gets a .meta.json.  This program writes the raw rows only; its summary
 * (tables, figures, claims) is made from the files by python3 -m studies.summary
 * geometry DIR, and studies/scripts/study_geometry.sh runs both. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lnkit/geometry.h"
#include "lnkit/lnkit.h"
#include "front/front.h"
#include "lnkit/text.h"
#include "kit/kit.h"


static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ln_geometry: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* ------------------------------------------------------------ output files */

typedef struct {
    const char *out;     /* output directory */
    int runs, nstep, nmax, dmax;
    uint64_t seed;
    const char *text;    /* real-text file, or NULL */
} study;

/* One CSV row from a format: s string, i int, l long, g double, G double or empty
 * when not finite (e.g. "no such key" as INFINITY). */
static void row(out_csv *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f; f++) {
        switch (*f) {
        case 's': CLI_CK(lnk_csv_str(&o->c, va_arg(ap, const char *))); break;
        case 'i': CLI_CK(lnk_csv_int(&o->c, va_arg(ap, int))); break;
        case 'l': CLI_CK(lnk_csv_int(&o->c, va_arg(ap, long))); break;
        case 'g': CLI_CK(lnk_csv_double(&o->c, va_arg(ap, double))); break;
        case 'G': {
            double v = va_arg(ap, double);
            CLI_CK(isfinite(v) ? lnk_csv_double(&o->c, v) : lnk_csv_str(&o->c, ""));
            break;
        }
        }
    }
    va_end(ap);
    CLI_CK(lnk_csv_end_row(&o->c));
}

/* A part's sidecar keys: the study and the part first (lnk_meta_free them). */
static lnk_meta *part_meta(const char *part)
{
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    lnk_meta_str(m, "study", "ln_geometry");
    lnk_meta_str(m, "part", part);
    return m;
}

/* ------------------------------------------------ part random: heat maps */

static const lnk_geom_norm heat_norms[4] = {LNK_GEOM_NONE, LNK_GEOM_CENTER, LNK_GEOM_SCALE,
                                           LNK_GEOM_LAYERNORM};

static void part_random(study *S)
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

static void part_ortho(study *S)
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

static void part_heads(study *S)
{
    static const int hs[] = {1, 2, 4, 8, 16};
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
    /* per-head selectability: n = 64 keys, 20 runs, every head */
    static const int dsel[] = {16, 64, 512};
    enum { NK = 64, RUNS = 20 };
    static const char *const sh[] = {"dist", "d", "h", "d_k", "variant", "keys", "runs",
                                      "frac_unselectable", "frac_head_sets_with_unselectable"};
    csv_open(&o, S->out, "heads_select.csv", sh, 9);
    X = xmalloc(sizeof(double) * NK * 512);
    Y = xmalloc(sizeof(double) * NK * 512);
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
    extra = part_meta("heads");
    lnk_meta_int(extra, "keys", (int)NK);
    lnk_meta_int(extra, "runs", (int)RUNS);
    lnk_meta_int(extra, "eps", 0);
    lnk_meta_int(extra, "key_seed", (long long)(S->seed + 9));
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    free(X);
    free(Y);
    free(Sl);
    printf("heads: done\n");
}

/* ----------------------------------------------- model-based parts: data */

typedef struct {
    const char *name;  /* "synthetic" or "text" */
    lnk_batch lm;      /* lm batch: tgt [B, T] */
    int V;
} dataset;

/* The real-text data set, or 0 if the file is absent (message printed). */
static int load_text(const study *S, int B, int max_len, dataset *ds)
{
    struct stat sb;
    if (!S->text || stat(S->text, &sb) != 0) {
        printf("real text: %s not found, skipping the text runs\n", S->text ? S->text : "(none)");
        return 0;
    }
    lnk_text t;
    lnk_vocab *v;
    CLI_CK(lnk_text_read(S->text, &t));
    study_input_read(S->text, &t.digest);
    const lnk_text *tp = &t;
    CLI_CK(lnk_vocab_build(&tp, 1, 1, 0, &v));
    CLI_CK(lnk_text_lm_batch(&t, v, 0, B, max_len, &ds->lm));
    ds->V = lnk_vocab_size(v);
    ds->name = "text";
    lnk_vocab_free(v);
    lnk_text_free(&t);
    return 1;
}

static lnk_config make_cfg(const char *task, int d, int h, int L, int V, const char *pos,
                           const char *qk)
{
    lnk_config c;
    lnk_config_default(&c);
    CLI_CK(lnk_config_set(&c, "task", task));
    c.d = d;
    c.h = h;
    c.L = L;
    c.V = V;
    CLI_CK(lnk_config_set(&c, "norm_pos", pos));
    CLI_CK(lnk_config_set(&c, "qk_norm", qk));
    CLI_CK(lnk_config_finalize(&c));
    return c;
}

static const double *tensor(const lnk_model *m, const double *th, const char *fmt, int l)
{
    char name[LNK_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    int i = lnk_layout_find(lnk_model_layout(m), name);
    if (i < 0) {
        fprintf(stderr, "ln_geometry: no tensor %s\n", name);
        exit(2);
    }
    return th + lnk_model_layout(m)->t[i].offset;
}

/* ------------------------------------------- part model: unselectable keys */

/* Per-head stages: keys of head j computed from a version of the norm's input. */
enum { ST_X, ST_P, ST_S, ST_N, ST_QK, NST };
static const char *const st_name[NST] = {"x Wk_j", "P(x) Wk_j", "S(x) Wk_j", "N(x) Wk_j",
                                         "qknorm(N(x) Wk_j)"};
static const char *const st_short[NST] = {"x_wk", "center_x_wk", "scale_x_wk", "keys",
                                          "keys_qk"};

typedef struct {
    long keys[NST], uns[NST];
} headacc;

static void sel_set(const double *K, int n, int d, int *sel)
{
    CLI_CK(lnk_geom_selectable(K, n, d, 0, sel, NULL));
}

/* Y [m, d] = X [m, d] W [d, d] + b */
static void affine(const double *X, const double *W, const double *b, double *Y, int m, int d)
{
    for (int i = 0; i < m; i++)
        for (int o = 0; o < d; o++)
            Y[(size_t)i * d + o] = b ? b[o] : 0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, d, 1.0, X, d, W, d, 1.0, Y, d);
}

static void slice(const double *X, double *Y, int m, int d, int j, int dk)
{
    for (int i = 0; i < m; i++)
        memcpy(Y + (size_t)i * dk, X + (size_t)i * d + (size_t)j * dk, sizeof(double) * dk);
}

/* One model variant: rows of model_select.csv, model_affine.csv and model_cos.csv. */
static void model_variant(out_csv *o, out_csv *oa, out_csv *oc, const dataset *dsx, int d, int h, int L,
                          const char *pos, const char *qk)
{
    lnk_config c = make_cfg("lm", d, h, L, dsx->V, pos, qk);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    double *th = xmalloc(sizeof(double) * lnk_model_n_params(m));
    CLI_CK(lnk_model_init_params(m, th));
    const lnk_batch *b = &dsx->lm;
    lnk_workspace *ws = lnk_workspace_alloc(m, b->B, 0, b->T, 0);
    if (!ws)
        cli_die_lib();
    double loss;
    CLI_CK(lnk_model_eval(ws, th, b, &loss, NULL, NULL));
    lnk_geom_unit us[64];
    int nu = lnk_geom_attn_units(ws, us, 64), dk = d / h, qkn = strcmp(qk, "none") != 0;
    int Tm = b->T;
    double *X = xmalloc(sizeof(double) * Tm * d), *NX = xmalloc(sizeof(double) * Tm * d),
           *V1 = xmalloc(sizeof(double) * Tm * d), *V2 = xmalloc(sizeof(double) * Tm * d),
           *Sl = xmalloc(sizeof(double) * Tm * d);
    int *sx = xmalloc(sizeof(int) * Tm), *snx = xmalloc(sizeof(int) * Tm),
        *s1 = xmalloc(sizeof(int) * Tm), *idx = xmalloc(sizeof(int) * Tm);
    for (int iu = 0; iu < nu; iu++) {
        const lnk_geom_unit *u = &us[iu];
        int l = u->layer, B, T;
        const double *xin, *xout, *Kf, *KQ;
        const uint8_t *pad;
        CLI_CK(lnk_geom_unit_rows(ws, u, LNK_GEOM_NORM_IN, &xin, &B, &T, &pad));
        CLI_CK(lnk_geom_unit_rows(ws, u, LNK_GEOM_NORM_OUT, &xout, &B, &T, NULL));
        CLI_CK(lnk_geom_unit_rows(ws, u, LNK_GEOM_KEYS, &Kf, &B, &T, NULL));
        CLI_CK(lnk_geom_unit_rows(ws, u, LNK_GEOM_KEYS_QK, &KQ, &B, &T, NULL));
        const double *wk = tensor(m, th, "dec.%d.attn.wk", l), *bk = tensor(m, th, "dec.%d.attn.bk", l);
        headacc acc[64];
        memset(acc, 0, sizeof acc);
        long full_keys = 0, full_unx = 0, full_unn = 0;
        long mis_n = 0, mis_x = 0, viol_n = 0, viol_x = 0, nkeys = 0;
        double cs[4] = {0, 0, 0, 0}; /* sums of |cos(., 1)|: x, N(x), K_j, qk-normed K_j */
        int nsets = 0;
        for (int bb = 0; bb < B; bb++) {
            int mkeys = 0;
            for (int t = 0; t < T; t++)
                if (!pad[(size_t)bb * T + t])
                    idx[mkeys++] = t;
            if (mkeys < 2)
                continue;
            nsets++;
            nkeys += mkeys;
            for (int i = 0; i < mkeys; i++) {
                size_t r = ((size_t)bb * T + idx[i]) * d;
                cs[0] += fabs(lnk_geom_cos_ones(xin + r, d));
                cs[1] += fabs(lnk_geom_cos_ones(xout + r, d));
                for (int j = 0; j < h; j++) {
                    cs[2] += fabs(lnk_geom_cos_ones(Kf + r + (size_t)j * dk, dk)) / h;
                    cs[3] += fabs(lnk_geom_cos_ones(KQ + r + (size_t)j * dk, dk)) / h;
                }
            }
            for (int i = 0; i < mkeys; i++) {
                memcpy(X + (size_t)i * d, xin + ((size_t)bb * T + idx[i]) * d, sizeof(double) * d);
                memcpy(NX + (size_t)i * d, xout + ((size_t)bb * T + idx[i]) * d, sizeof(double) * d);
            }
            /* full width: x and N(x), and their images under the (invertible) Wk */
            sel_set(X, mkeys, d, sx);
            sel_set(NX, mkeys, d, snx);
            affine(X, wk, bk, V1, mkeys, d);
            sel_set(V1, mkeys, d, s1);
            for (int i = 0; i < mkeys; i++) {
                mis_x += s1[i] != sx[i];
                full_unx += !sx[i];
                full_unn += !snx[i];
            }
            full_keys += mkeys;
            for (int i = 0; i < mkeys; i++) /* the model's keys, rows of this sequence */
                memcpy(V2 + (size_t)i * d, Kf + ((size_t)bb * T + idx[i]) * d, sizeof(double) * d);
            sel_set(V2, mkeys, d, s1);
            for (int i = 0; i < mkeys; i++)
                mis_n += s1[i] != snx[i];
            /* per head: the keys of head j from x, P(x), S(x), N(x), and after qk-norm */
            for (int stg = 0; stg < NST; stg++) {
                if (stg == ST_QK && !qkn)
                    continue;
                const double *src = V2;
                if (stg == ST_X) {
                    src = V1; /* x Wk + bk */
                } else if (stg == ST_P || stg == ST_S) {
                    CLI_CK(lnk_geom_apply(stg == ST_P ? LNK_GEOM_CENTER : LNK_GEOM_SCALE, X, Sl, mkeys,
                                      d, 1, 0.0));
                    affine(Sl, wk, bk, NX, mkeys, d); /* NX reused as scratch */
                    src = NX;
                } else if (stg == ST_QK) {
                    for (int i = 0; i < mkeys; i++)
                        memcpy(Sl + (size_t)i * d, KQ + ((size_t)bb * T + idx[i]) * d,
                               sizeof(double) * d);
                    src = Sl;
                }
                for (int j = 0; j < h; j++) {
                    double *hk = xmalloc(sizeof(double) * mkeys * dk);
                    slice(src, hk, mkeys, d, j, dk);
                    int *sh = xmalloc(sizeof(int) * mkeys);
                    sel_set(hk, mkeys, dk, sh);
                    for (int i = 0; i < mkeys; i++) {
                        acc[j].uns[stg] += !sh[i];
                        /* an affine image of a hull point is a hull point: unselectable
                         * before Wk_j stays unselectable after it */
                        if (stg == ST_X)
                            viol_x += !sx[i] && sh[i];
                        if (stg == ST_N)
                            viol_n += !snx[i] && sh[i];
                    }
                    acc[j].keys[stg] += mkeys;
                    free(hk);
                    free(sh);
                }
            }
        }
        /* rows: full width, then per head */
        row(o, "ssiiissssilll", dsx->name, pos, d, h, L, qk, "all", "x", "x (full width)", l,
            (long)nsets, full_keys, full_unx);
        row(o, "ssiiissssilll", dsx->name, pos, d, h, L, qk, "all", "norm_out",
            "N(x) (full width)", l, (long)nsets, full_keys, full_unn);
        for (int stg = 0; stg < NST; stg++) {
            for (int j = 0; j < h; j++) {
                if (stg == ST_QK && !qkn)
                    continue;
                char hb[16];
                snprintf(hb, sizeof hb, "%d", j);
                row(o, "ssiiissssilll", dsx->name, pos, d, h, L, qk, hb, st_short[stg],
                    st_name[stg], l, (long)nsets, acc[j].keys[stg], acc[j].uns[stg]);
            }
        }
        row(oc, "ssiiisigggg", dsx->name, pos, d, h, L, qk, l, cs[0] / nkeys, cs[1] / nkeys,
            cs[2] / nkeys, cs[3] / nkeys);
        row(oa, "ssiiisisll", dsx->name, pos, d, h, L, qk, l, "x vs x Wk (full width): mismatches",
            nkeys, mis_x);
        row(oa, "ssiiisisll", dsx->name, pos, d, h, L, qk, l,
            "N(x) vs N(x) Wk (full width): mismatches", nkeys, mis_n);
        row(oa, "ssiiisisll", dsx->name, pos, d, h, L, qk, l,
            "unselectable in x but selectable in x Wk_j", nkeys * h, viol_x);
        row(oa, "ssiiisisll", dsx->name, pos, d, h, L, qk, l,
            "unselectable in N(x) but selectable in N(x) Wk_j", nkeys * h, viol_n);
        if (mis_x || mis_n || viol_x || viol_n)
            printf("  affine check FAILED: %s %s d=%d qk=%s layer %d: %ld %ld %ld %ld\n",
                   dsx->name, pos, d, qk, l, mis_x, mis_n, viol_x, viol_n);
    }
    free(X);
    free(NX);
    free(V1);
    free(V2);
    free(Sl);
    free(sx);
    free(snx);
    free(s1);
    free(idx);
    lnk_workspace_free(ws);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void part_model(study *S)
{
    static const char *const hdr[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "head",
                                      "stage", "stage_name", "layer", "sequences", "keys",
                                      "unselectable"};
    static const char *const ha[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "layer",
                                     "check", "keys", "count"};
    static const char *const hc[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "layer",
                                     "mean_abs_cos_norm_in", "mean_abs_cos_norm_out",
                                     "mean_abs_cos_keys_head", "mean_abs_cos_keys_qk_head"};
    out_csv o, oa, oc;
    csv_open(&o, S->out, "model_select.csv", hdr, 13);
    csv_open(&oa, S->out, "model_affine.csv", ha, 10);
    csv_open(&oc, S->out, "model_cos.csv", hc, 11);
    enum { B = 32, LEN = 24, L = 4 };
    dataset dsv[2];
    int nds = 1;
    /* synthetic: lm batch of ids uniform in [4, 500) through a throwaway model */
    {
        lnk_config c = make_cfg("lm", 8, 4, 1, 500, "pre", "none");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        CLI_CK(lnk_batch_synthetic(m, B, LEN, S->seed + 1000, &dsv[0].lm));
        dsv[0].V = 500;
        dsv[0].name = "synthetic";
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    nds += load_text(S, B, 30, &dsv[1]);
    static const int cfgs[3][2] = {{8, 4}, {64, 4}, {512, 8}};
    static const char *const poss[2] = {"pre", "post"};
    static const char *const qks[3] = {"none", "layernorm", "rmsnorm"};
    for (int di = 0; di < nds; di++)
        for (int ic = 0; ic < 3; ic++)
            for (int ip = 0; ip < 2; ip++)
                for (int iq = 0; iq < 3; iq++)
                    model_variant(&o, &oa, &oc, &dsv[di], cfgs[ic][0], cfgs[ic][1], L, poss[ip],
                                  qks[iq]);
    lnk_meta *extra = part_meta("model");
    lnk_meta_int(extra, "B", B);
    lnk_meta_int(extra, "synthetic_len", LEN);
    lnk_meta_str(extra, "text", nds > 1 ? S->text : "");
    lnk_meta_str(extra, "init", "xavier");
    lnk_meta_int(extra, "model_seed", 0);
    lnk_meta_real(extra, "tol", LNK_GEOM_SEL_TOL);
    lnk_meta_int(extra, "synthetic_batch_seed", (long long)(S->seed + 1000));
    lnk_meta_str(extra, "varied", "data in {synthetic, text}, (d, h) in {(8, 4), (64, 4), "
                                  "(512, 8)}, norm_pos in {pre, post}, qk_norm in {none, "
                                  "layernorm, rmsnorm}");
    lnk_meta_str(extra, "config_note", "config is the first variant; every row holds its own "
                                       "(data, norm_pos, d, h, L, qk_norm)");
    lnk_config base = make_cfg("lm", cfgs[0][0], cfgs[0][1], L, dsv[0].V, poss[0], qks[0]);
    csv_close(&o, &base, extra, NULL, 0);
    csv_close(&oa, &base, extra, NULL, 0);
    csv_close(&oc, &base, extra, NULL, 0);
    lnk_config_clear(&base);
    lnk_meta_free(extra);
    for (int di = 0; di < nds; di++)
        lnk_batch_free(&dsv[di].lm);
    printf("model activations: done (%d data sets)\n", nds);
}

/* ------------------------------------------------ part maps: attention maps */

static void part_maps(study *S)
{
    enum { B = 16, d = 64, h = 4, L = 4, LAYER = 2 };
    dataset ds;
    int have_text = load_text(S, B, 30, &ds);
    lnk_batch cb = {0};
    int V;
    if (have_text) {
        /* encoder input = the lm row (<bos> .. <eos> <pad>..); labels = the ids */
        V = ds.V;
        cb.B = ds.lm.B;
        cb.S = ds.lm.T;
        cb.src = xmalloc(sizeof(int64_t) * cb.B * cb.S);
        cb.labels = xmalloc(sizeof(int64_t) * cb.B * cb.S);
        memcpy(cb.src, ds.lm.tgt, sizeof(int64_t) * cb.B * cb.S);
        memcpy(cb.labels, ds.lm.tgt, sizeof(int64_t) * cb.B * cb.S);
        cb.owns = 1;
        lnk_batch_free(&ds.lm);
    } else {
        V = 500;
        lnk_config c = make_cfg("cls", d, h, L, V, "pre", "none");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        CLI_CK(lnk_batch_synthetic(m, B, 24, S->seed + 2000, &cb));
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    /* the longest sequence for the pictures */
    int show = 0, showlen = 0;
    for (int b = 0; b < cb.B; b++) {
        int n = 0;
        while (n < cb.S && cb.src[(size_t)b * cb.S + n] != LNK_PAD)
            n++;
        if (n > showlen) {
            showlen = n;
            show = b;
        }
    }
    static const char *const qks[3] = {"none", "layernorm", "rmsnorm"};
    static const char *const vname[3] = {"fullLN", "headLN", "headRMS"};
    static const char *const hdr[] = {"variant", "qk_norm", "layer", "head", "ent_mean",
                                      "ent_min", "ent_uniform", "col_mass", "col_mass_max",
                                      "col_mass_uniform", "logit_max", "data", "sequences",
                                      "d"};
    out_csv o;
    csv_open(&o, S->out, "attn_stats.csv", hdr, 14);
    /* uniform references from the padding pattern */
    double ent_u = 0, col_u = 0;
    int rows = 0;
    for (int b = 0; b < cb.B; b++) {
        int n = 0;
        for (int t = 0; t < cb.S; t++)
            n += cb.src[(size_t)b * cb.S + t] != LNK_PAD;
        ent_u += n * log((double)n);
        rows += n;
        col_u += 1.0 / n / cb.B;
    }
    ent_u /= rows;
    for (int iv = 0; iv < 3; iv++) {
        lnk_config c = make_cfg("cls", d, h, L, V, "pre", qks[iv]);
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        double *th = xmalloc(sizeof(double) * lnk_model_n_params(m)), loss;
        CLI_CK(lnk_model_init_params(m, th));
        lnk_workspace *ws = lnk_workspace_alloc(m, cb.B, cb.S, 0, 0);
        if (!ws)
            cli_die_lib();
        CLI_CK(lnk_model_eval(ws, th, &cb, &loss, NULL, NULL));
        lnk_geom_attn_stat *as;
        int nas;
        CLI_CK(lnk_geom_model_attn(ws, &as, &nas));
        for (int l = 0; l < L; l++) {
            for (int i = 0; i < nas; i++) {
                const lnk_geom_attn_stat *a = &as[i];
                if (a->u.layer != l)
                    continue;
                row(&o, "ssiigggggggsii", vname[iv], qks[iv], l, a->head, a->ent_mean, a->ent_min,
                    ent_u, a->col_mass, a->col_mass_max, col_u, a->logit_max,
                    have_text ? "text" : "synthetic", cb.B, (int)d);
            }
        }
        free(as);
        /* the layer-2 maps of the sequence shown: recompute from the workspace rows */
        lnk_geom_unit us[16];
        int nu = lnk_geom_attn_units(ws, us, 16);
        for (int iu = 0; iu < nu; iu++) {
            if (us[iu].layer != LAYER)
                continue;
            const double *Q, *K;
            int Bq, T;
            CLI_CK(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_QUERIES_QK, &Q, &Bq, &T, NULL));
            CLI_CK(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_KEYS_QK, &K, &Bq, &T, NULL));
            char name[128];
            snprintf(name, sizeof name, "attn_map_layer2_%s.csv", vname[iv]);
            static const char *const mh[] = {"head", "query", "key", "weight", "sequence"};
            out_csv om;
            csv_open(&om, S->out, name, mh, 5);
            int dk = d / h, n = showlen;
            double *z = xmalloc(sizeof(double) * n);
            for (int j = 0; j < h; j++)
                for (int t = 0; t < n; t++) {
                    double mx = -INFINITY, s = 0;
                    for (int u = 0; u < n; u++) {
                        double a = 0;
                        for (int e = 0; e < dk; e++)
                            a += Q[((size_t)show * T + t) * d + j * dk + e] *
                                 K[((size_t)show * T + u) * d + j * dk + e];
                        z[u] = a / sqrt((double)dk);
                        mx = fmax(mx, z[u]);
                    }
                    for (int u = 0; u < n; u++)
                        s += (z[u] = exp(z[u] - mx));
                    for (int u = 0; u < n; u++)
                        row(&om, "iiigi", j, t, u, z[u] / s, show);
                }
            free(z);
            lnk_meta *extra = part_meta("maps");
            lnk_meta_int(extra, "layer", LAYER);
            lnk_meta_int(extra, "sequence", show);
            lnk_meta_int(extra, "tokens", showlen);
            csv_close(&om, &c, extra, NULL, 0);
            lnk_meta_free(extra);
        }
        lnk_workspace_free(ws);
        free(th);
        lnk_model_free(m);
        if (iv == 2) {
            lnk_meta *extra = part_meta("maps");
            lnk_meta_int(extra, "B", cb.B);
            lnk_meta_str(extra, "data", have_text ? S->text : "synthetic");
            lnk_meta_str(extra, "varied", "qk_norm in {none, layernorm, rmsnorm}");
            csv_close(&o, &c, extra, NULL, 0);
            lnk_meta_free(extra);
        }
        lnk_config_clear(&c);
    }
    lnk_batch_free(&cb);
    printf("attention maps: done\n");
}

/* ---------------------------------------------- part counts: statistics */

static void part_counts(study *S)
{
    typedef struct {
        const char *name, *task, *pos;
        int B, T, d, h, L, Ldec;
    } cc;
    static const cc cfg[] = {
        {"GPT-2 small", "lm", "pre", 12, 1024, 768, 12, 12, 0},
        {"GPT-2 medium", "lm", "pre", 12, 1024, 1024, 16, 24, 0},
        {"BERT-base (no embedding LN)", "cls", "post", 12, 512, 768, 12, 12, 0},
        {"Transformer base, enc 6 + dec 6", "seq2seq", "post", 12, 1024, 512, 8, 6, 6},
        {"Brody et al. small GPT-2", "lm", "pre", 12, 1024, 8, 4, 4, 0},
    };
    static const char *const hdr[] = {
        "model", "task", "norm_pos", "B", "T", "d", "h", "L", "norms_per_block",
        "norms_per_model", "tokens_per_batch", "stats_per_norm_fullwidth",
        "stats_per_norm_perhead", "stats_per_block_fullwidth", "stats_per_block_perhead",
        "stats_per_model_fullwidth", "stats_per_model_perhead", "qknorm_stats_per_model"};
    out_csv o;
    csv_open(&o, S->out, "norm_counts.csv", hdr, 18);
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        const cc *k = &cfg[i];
        /* count the norms of the architecture from a small model of the same shape */
        lnk_config c;
        lnk_config_default(&c);
        CLI_CK(lnk_config_set(&c, "task", k->task));
        CLI_CK(lnk_config_set(&c, "norm_pos", k->pos));
        c.d = 8;
        c.h = 2;
        if (k->Ldec) {
            c.L_enc = k->L;
            c.L_dec = k->Ldec;
        } else {
            c.L = k->L;
        }
        CLI_CK(lnk_config_finalize(&c));
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        const lnk_layout *lay = lnk_model_layout(m);
        long norms = 0, attn = 0;
        for (int t = 0; t < lay->n_tensors; t++) {
            const char *nm = lay->t[t].name;
            size_t n = strlen(nm);
            if (strstr(nm, "norm") && n > 2 && !strcmp(nm + n - 2, ".g"))
                norms++;
            if (n > 3 && !strcmp(nm + n - 3, ".wq"))
                attn++;
        }
        lnk_model_free(m);
        lnk_config_clear(&c);
        long blocks = k->L + k->Ldec;
        long tok = (long)k->B * k->T;
        /* per block: the norms of an encoder block (2) or decoder block (2 or 3); the
         * model total comes from the layout */
        long npb = k->Ldec ? 3 : 2;
        long full = tok, head = tok * k->h;
        row(&o, "sssiiiiillllllllll", k->name, k->task, k->pos, k->B, k->T, k->d, k->h,
            (int)blocks, npb, norms, tok, full, head, npb * full, npb * head, norms * full,
            norms * head, attn * 2 * head);
    }
    lnk_meta *extra = part_meta("counts");
    lnk_meta_str(extra, "unit", "(mean, variance) pairs; RMSNorm computes one mean square per pair");
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    printf("counts: done\n");
}

/* ------------------------------------------------------------------- main */

typedef struct {
    study S;
    cli_ints parts;
} args_t;

enum { P_RANDOM, P_ORTHO, P_HEADS, P_MODEL, P_MAPS, P_COUNTS };
static const cli_choice part_names[] = {{"random", P_RANDOM}, {"ortho", P_ORTHO},
                                        {"heads", P_HEADS}, {"model", P_MODEL},
                                        {"maps", P_MAPS}, {"counts", P_COUNTS}, {NULL, 0}};

static const cli_opt opts[] = {
    {.type = CLI_STR, .name = "out", .arg = "DIR", CLI_AT(args_t, S.out), .flags = CLI_WRITES,
     .help = "output directory"},
    {.type = CLI_WORDS, .name = "parts", CLI_AT(args_t, parts), .ref = part_names,
     .help = "the parts to run"},
    {.type = CLI_INT, .name = "runs", .arg = "N", CLI_AT(args_t, S.runs), .min = 1,
     .max = 100000, .help = "runs per heat-map cell"},
    {.type = CLI_INT, .name = "n-step", .arg = "S", CLI_AT(args_t, S.nstep), .min = 1, .max = 60,
     .help = "heat-map n = 3, 3+S, ..., n-max"},
    {.type = CLI_INT, .name = "n-max", .arg = "N", CLI_AT(args_t, S.nmax), .min = 3, .max = 200,
     .help = "the largest n"},
    {.type = CLI_INT, .name = "d-max", .arg = "D", CLI_AT(args_t, S.dmax), .min = 3, .max = 64,
     .help = "heat-map d = 3..D"},
    {.type = CLI_STR, .name = "text", .arg = "FILE", CLI_AT(args_t, S.text), .flags = CLI_READS,
     .help = "real text, one sentence a line"},
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(args_t, S.seed), .max = 1L << 40,
     .help = "seed of the random keys (the parts' seeds derive from it)"},
    {0}};

static void defaults(void *p)
{
    args_t *a = p;
    a->S = (study){"results/geometry", 100, 1, 60, 15, 0, "data/multi30k/val.en"};
    for (int k = 0; k < 6; k++)
        a->parts.v[a->parts.n++] = k;
}

static const cli_cmd cmd = {
    .name = "ln_geometry",
    .usage = "[--out DIR] [--parts P[,P..]] [--runs N] [--n-step S] [--n-max N] [--d-max D]\n"
             "[--text FILE] [--rng-seed N]",
    .about = "LayerNorm geometry (Brody et al. 2023): selectable keys by exact LP, orthogonality\n"
             "to the all-ones vector, per-head statistics, attention maps.  The summary:\n"
             "python3 -m studies.summary geometry DIR.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "ln_geometry");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    study S = a.S;
    if ((S.nmax - 3) / S.nstep + 2 > 64)
        cli_die("--n-max, --n-step: too many n values (at most 62)");
    static const char *const known[] = {"random", "ortho", "heads", "model", "maps", "counts"};
    int want[6] = {0};
    for (int i = 0; i < a.parts.n; i++)
        want[a.parts.v[i]] = 1;
    /* Under mpirun the study is not spread over the ranks: rank 0 does all the
     * work and writes the outputs once, the others are done. */
    if (!study_root())
        return 0;
    make_dir(S.out);
    lnk_set_blas_threads(1);
    /* every seed the parts derive from --rng-seed, in every sidecar */
    CLI_CK(lnk_prov_seed(cli_prov(), "heatmap_key_seed", S.seed));
    CLI_CK(lnk_prov_seed(cli_prov(), "heads_stats_key_seed", S.seed + 5));
    CLI_CK(lnk_prov_seed(cli_prov(), "heads_select_key_seed", S.seed + 9));
    CLI_CK(lnk_prov_seed(cli_prov(), "orthogonality_key_seed", S.seed + 17));
    CLI_CK(lnk_prov_seed(cli_prov(), "model_synthetic_batch_seed", S.seed + 1000));
    CLI_CK(lnk_prov_seed(cli_prov(), "maps_synthetic_batch_seed", S.seed + 2000));
    CLI_CK(lnk_prov_seed(cli_prov(), "model_init_seed", 0));
    double t0 = lnk_now();
    void (*fn[6])(study *) = {part_random, part_ortho, part_heads, part_model, part_maps,
                              part_counts};
    for (int k = 0; k < 6; k++)
        if (want[k]) {
            double t = lnk_now();
            fn[k](&S);
            printf("  part %s: %.1f s\n", known[k], lnk_now() - t);
        }
    printf("wrote the CSVs under %s in %.1f s (the summary: python3 -m studies.summary geometry "
           "%s)\n",
           S.out, lnk_now() - t0, S.out);
    return 0;
}
