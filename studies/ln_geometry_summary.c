/* ln_geometry_summary: the summarising step of the LayerNorm geometry study.
 *
 *   ln_geometry_summary [DIR]        (DIR: results/geometry)
 *
 * Reads only the raw CSVs that studies/ln_geometry wrote into DIR and writes,
 * beside them: the tables (NAME.md and NAME.tex, all of them collected with
 * their captions in summary.md), orthogonality_fit.csv (the power-law fits),
 * values.csv (name,value: every number results/README.md quotes, formatted as
 * quoted), claims.csv (claim,value,setting,file: the headline claims) and the
 * gnuplot scripts (*.gp) that studies/scripts/study_geometry.sh renders in DIR.
 * Deterministic: no times, dates or paths in any of these files, so
 * tools/check_summaries.sh can re-run it on the committed rows and compare.
 *
 * Spreads: a fraction of counts is given with the binomial standard error
 * where it is compared; a mean over keys with the spread over key sets (the
 * keys of one set share their offset and scales); power laws by weighted least
 * squares (studies/kit/fit.c) with standard error, chi^2/dof and range. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/geometry.h"
#include "lnkit/lnkit.h"
#include "front/front.h"
#include "kit/kit.h"

static const char *dir;

/* ------------------------------------------------------------ output files */

static FILE *out_open(lnk_afile *a, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CK(lnk_afile_open(a, path));
    study_track(a);
    return a->f;
}

static void out_commit(lnk_afile *a)
{
    study_untrack(a);
    CK(lnk_afile_commit(a));
}

static lnk_afile sum_file;
static FILE *sum; /* summary.md */

/* NAME.md and NAME.tex from t; in summary.md under "## title" with the caption. */
static void emit(lnk_table *t, const char *name, const char *title, const char *caption)
{
    lnk_afile a;
    char fn[256];
    snprintf(fn, sizeof fn, "%s.md", name);
    CK(lnk_table_write_md(t, out_open(&a, fn)));
    out_commit(&a);
    snprintf(fn, sizeof fn, "%s.tex", name);
    CK(lnk_table_write_tex(t, out_open(&a, fn), caption, name));
    out_commit(&a);
    fprintf(sum, "## %s\n\n`%s.md`: %s\n\n", title, name, caption);
    CK(lnk_table_write_md(t, sum));
    fprintf(sum, "\n");
    lnk_table_free(t);
}

static void table(lnk_table *t, int ncol, const char *const *head, const char *align)
{
    CK(lnk_table_init(t, ncol, head, align));
}

static int trow(lnk_table *t)
{
    int r = lnk_table_new_row(t);
    if (r < 0)
        die();
    return r;
}

/* --------------------------------------------------- values.csv, claims.csv */

enum { MAXV = 256, MAXC = 32 };
static char *vname[MAXV], *vval[MAXV];
static int nval;
static char *cl[MAXC][4];
static int ncl;

/* value NAME (quoted as <!--q:geometry.NAME-->), formatted */
static const char *val(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *val(const char *name, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < nval; i++)
        if (!strcmp(vname[i], name))
            fail("value '%s' given twice", name);
    if (nval == MAXV)
        fail("more than %d values", MAXV);
    vname[nval] = strdup(name);
    vval[nval] = strdup(buf);
    return vval[nval++];
}

/* a value given before */
static const char *vv(const char *name)
{
    for (int i = 0; i < nval; i++)
        if (!strcmp(vname[i], name))
            return vval[i];
    fail("no value '%s'", name);
}

static void claim(const char *c, const char *v, const char *setting, const char *file)
{
    if (ncl == MAXC)
        fail("more than %d claims", MAXC);
    const char *f[4] = {c, v, setting, file};
    for (int k = 0; k < 4; k++)
        cl[ncl][k] = strdup(f[k]);
    ncl++;
}

static void write_values(void)
{
    lnk_afile a;
    lnk_csv c;
    static const char *const h[] = {"name", "value"};
    CK(lnk_csv_begin(&c, out_open(&a, "values.csv"), h, 2));
    for (int i = 0; i < nval; i++) {
        CK(lnk_csv_str(&c, vname[i]));
        CK(lnk_csv_str(&c, vval[i]));
        CK(lnk_csv_end_row(&c));
    }
    lnk_csv_free(&c);
    out_commit(&a);
    static const char *const hc[] = {"claim", "value", "setting", "file"};
    CK(lnk_csv_begin(&c, out_open(&a, "claims.csv"), hc, 4));
    for (int i = 0; i < ncl; i++) {
        for (int k = 0; k < 4; k++)
            CK(lnk_csv_str(&c, cl[i][k]));
        CK(lnk_csv_end_row(&c));
    }
    lnk_csv_free(&c);
    out_commit(&a);
}

/* ------------------------------------------------------------ reading rows */

static double num(const study_table *t, size_t r, const char *col)
{
    return study_table_num(t, r, study_table_col(t, col));
}

/* a number, or NAN for an empty field */
static double num_or_nan(const study_table *t, size_t r, const char *col)
{
    const char *s = study_table_str(t, r, study_table_col(t, col));
    return *s ? num(t, r, col) : NAN;
}

static const char *str(const study_table *t, size_t r, const char *col)
{
    return study_table_str(t, r, study_table_col(t, col));
}

static int is(const study_table *t, size_t r, const char *col, const char *v)
{
    return !strcmp(str(t, r, col), v);
}

/* "a-b" (or "a" when equal) with format f for each end */
static void range(char *buf, size_t n, const char *f, double a, double b)
{
    char x[24], y[24];
    snprintf(x, sizeof x, f, a);
    snprintf(y, sizeof y, f, b);
    if (!strcmp(x, y))
        snprintf(buf, n, "%s", x);
    else
        snprintf(buf, n, "%s-%s", x, y);
}

/* 12288 -> "12,288" */
static void thousands(char *buf, size_t n, long v)
{
    char t[32];
    snprintf(t, sizeof t, "%ld", v);
    size_t len = strlen(t), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = t[i];
    }
    buf[o] = 0;
}

static const char *PALETTE =
    "set palette defined (0 '#440154', 0.125 '#472d7b', 0.25 '#3b528b', 0.375 '#2c728e', "
    "0.5 '#21918c', 0.625 '#28ae80', 0.75 '#5ec962', 0.875 '#addc30', 1 '#fde725') # viridis\n";
static const char *TERM = "set terminal pngcairo noenhanced font 'sans,9'";

/* ------------------------------------------- random keys: heat maps (part random) */

static const char *const norm_csv[4] = {"none", "center", "scale", "layernorm"};
static const char *const norm_label[4] = {"none", "projection P", "scaling S (RMS)",
                                          "LayerNorm S(P)"};
static const char *const dist_csv[2] = {"gauss", "offset"};

enum { MAXN = 64, MAXD = 64 };
typedef struct {
    int nn, nd, ns[MAXN], dlo, runs;
    int have[2][4];
    double fa[2][4][MAXD][MAXN], mf[2][4][MAXD][MAXN], minsel[2][4];
    long lps[2][4], nearb[2][4], amb[2][4];
    long first_row[2][4]; /* the block's first row in heatmap.csv (for the plots) */
} heat;

/* smallest d whose cell (n index in) is <= lim; -1 if none */
static int thr(const heat *H, int ds, int k, int in, double lim)
{
    for (int id = 0; id < H->nd; id++)
        if (H->fa[ds][k][id][in] <= lim)
            return H->dlo + id;
    return -1;
}

static void thr_cell(char *b, size_t n, const heat *H, int t)
{
    if (t < 0)
        snprintf(b, n, "- (> %d)", H->dlo + H->nd - 1);
    else if (t == H->dlo)
        snprintf(b, n, "<= %d", t);
    else
        snprintf(b, n, "%d", t);
}

static void heat_gp(const heat *H, int stat)
{
    const char *name = stat ? "heatmap_mean_frac" : "heatmap_frac_any";
    const char *what = stat ? "mean fraction of unselectable keys"
                            : "fraction of runs with >= 1 unselectable key";
    char fn[64];
    snprintf(fn, sizeof fn, "%s.gp", name);
    lnk_afile a;
    FILE *f = out_open(&a, fn);
    fprintf(f, "# %s.png from heatmap.csv (written by ln_geometry_summary; run in its directory)\n",
            name);
    fprintf(f, "%s size 1500,700\nset output '%s.png'\nset datafile separator ','\n", TERM, name);
    fprintf(f, "%s", PALETTE);
    fprintf(f, "set cbrange [0:1]\nset cblabel '%s'\nset xlabel 'n (keys)'\nset ylabel 'd'\n"
               "set xrange [%g:%g]\nset yrange [%g:%g]\n",
            what, H->ns[0] - 0.5, H->ns[H->nn - 1] + 0.5, H->dlo - 0.5, H->dlo + H->nd - 0.5);
    fprintf(f, "set multiplot layout 2,4 title '%s (%d runs a cell; rows: gauss keys, offset "
               "keys; columns: the norm, as in heatmap_thresholds.md)'\n",
            what, H->runs);
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++) {
            long a0 = H->first_row[ds][k], a1 = a0 + (long)H->nn * H->nd - 1;
            fprintf(f, "set title '%s keys, %s'\n", dist_csv[ds], norm_label[k]);
            fprintf(f, "plot 'heatmap.csv' skip 1 every ::%ld::%ld using 3:4:%d with image "
                       "notitle\n", a0, a1, stat ? 7 : 6);
        }
    fprintf(f, "unset multiplot\n");
    out_commit(&a);
}

static void part_random(void)
{
    study_table t;
    study_table_read(&t, dir, "heatmap.csv");
    heat *H = calloc(1, sizeof *H);
    if (!H)
        fail("out of memory");
    /* grid from the rows: n and d values in order of appearance */
    int dmax = 0;
    H->dlo = 1 << 30;
    for (size_t r = 0; r < t.d.nrow; r++) {
        int n = (int)num(&t, r, "n"), d = (int)num(&t, r, "d");
        H->dlo = d < H->dlo ? d : H->dlo;
        dmax = d > dmax ? d : dmax;
        int in = 0;
        while (in < H->nn && H->ns[in] != n)
            in++;
        if (in == H->nn) {
            if (H->nn == MAXN)
                fail("heatmap.csv: more than %d values of n", MAXN);
            H->ns[H->nn++] = n;
        }
    }
    H->nd = dmax - H->dlo + 1;
    if (H->nd > MAXD)
        fail("heatmap.csv: more than %d values of d", MAXD);
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++) {
            H->minsel[ds][k] = INFINITY;
            H->first_row[ds][k] = -1;
        }
    for (size_t r = 0; r < t.d.nrow; r++) {
        int ds = -1, k = -1;
        for (int i = 0; i < 2; i++)
            if (is(&t, r, "dist", dist_csv[i]))
                ds = i;
        for (int i = 0; i < 4; i++)
            if (is(&t, r, "norm", norm_csv[i]))
                k = i;
        if (ds < 0 || k < 0)
            fail("heatmap.csv: row %zu: unknown dist or norm", r + 2);
        int n = (int)num(&t, r, "n"), id = (int)num(&t, r, "d") - H->dlo, in = 0;
        while (H->ns[in] != n)
            in++;
        if (H->first_row[ds][k] < 0)
            H->first_row[ds][k] = (long)r;
        H->have[ds][k]++;
        H->runs = (int)num(&t, r, "runs");
        H->fa[ds][k][id][in] = num(&t, r, "frac_any");
        H->mf[ds][k][id][in] = num(&t, r, "mean_frac");
        H->lps[ds][k] += (long)num(&t, r, "n_lp");
        H->amb[ds][k] += (long)num(&t, r, "n_ambiguous");
        H->nearb[ds][k] += (long)num(&t, r, "n_near");
        H->minsel[ds][k] = fmin(H->minsel[ds][k], num_or_nan(&t, r, "min_sel_dist"));
    }
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++)
            if (H->have[ds][k] != H->nn * H->nd)
                fail("heatmap.csv: %s / %s has %d cells, expected %d (one block per dist and "
                     "norm)", dist_csv[ds], norm_csv[k], H->have[ds][k], H->nn * H->nd);
    study_table_free(&t);
    int dhi = H->dlo + H->nd - 1, nmax = H->ns[H->nn - 1];
    val("heat.runs", "%d", H->runs);
    val("heat.nmax", "%d", nmax);
    val("heat.dmin", "%d", H->dlo);
    val("heat.dmax", "%d", dhi);

    /* thresholds at the grid's n nearest to 20, 40 and n-max */
    int target[3] = {20, 40, nmax}, show[3], nshow = 0;
    for (int i = 0; i < 3; i++) {
        int best = 0;
        for (int in = 0; in < H->nn; in++)
            if (abs(H->ns[in] - target[i]) < abs(H->ns[best] - target[i]))
                best = in;
        if (nshow == 0 || show[nshow - 1] != best)
            show[nshow++] = best;
    }
    lnk_table T;
    const char *head[20];
    char hb[8][48];
    int nc = 0;
    head[nc++] = "keys";
    head[nc++] = "norm";
    for (int i = 0; i < nshow; i++) {
        snprintf(hb[2 * i], 48, "n=%d: d(<=0.5)", H->ns[show[i]]);
        snprintf(hb[2 * i + 1], 48, "n=%d: d(<=0.05)", H->ns[show[i]]);
        head[nc++] = hb[2 * i];
        head[nc++] = hb[2 * i + 1];
    }
    char hm[64];
    snprintf(hm, sizeof hm, "mean unselectable at d=%d, n=%d", H->dlo, nmax);
    head[nc++] = "max cell";
    head[nc++] = hm;
    head[nc++] = "LPs";
    head[nc++] = "near-boundary keys";
    head[nc++] = "ambiguous";
    head[nc++] = "smallest selectable distance";
    char al[24];
    for (int i = 0; i < nc; i++)
        al[i] = i < 2 ? 'l' : 'r';
    table(&T, nc, head, al);
    long amb_total = 0;
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++) {
            int r = trow(&T), c = 0;
            lnk_table_set(&T, r, c++, "%s", dist_csv[ds]);
            lnk_table_set(&T, r, c++, "%s", norm_label[k]);
            for (int i = 0; i < nshow; i++)
                for (int lv = 0; lv < 2; lv++) {
                    int d = thr(H, ds, k, show[i], lv ? 0.05 : 0.5);
                    char b[32];
                    thr_cell(b, sizeof b, H, d);
                    lnk_table_set(&T, r, c++, "%s", b);
                    char nm[64];
                    snprintf(nm, sizeof nm, "heat.%s.%s.n%d.%s", dist_csv[ds], norm_csv[k],
                             H->ns[show[i]], lv ? "tail" : "half");
                    val(nm, "%s", b);
                }
            double mx = 0;
            for (int id = 0; id < H->nd; id++)
                for (int in = 0; in < H->nn; in++)
                    mx = fmax(mx, H->fa[ds][k][id][in]);
            lnk_table_set(&T, r, c++, "%.2f", mx);
            lnk_table_set(&T, r, c++, "%.2f", H->mf[ds][k][0][H->nn - 1]);
            lnk_table_set(&T, r, c++, "%ld", H->lps[ds][k]);
            lnk_table_set(&T, r, c++, "%ld", H->nearb[ds][k]);
            lnk_table_set(&T, r, c++, "%ld", H->amb[ds][k]);
            if (isfinite(H->minsel[ds][k]))
                lnk_table_set(&T, r, c++, "%.2g", H->minsel[ds][k]);
            else
                lnk_table_set(&T, r, c++, "-");
            char nm[64];
            snprintf(nm, sizeof nm, "heat.%s.%s.max", dist_csv[ds], norm_csv[k]);
            val(nm, "%.2f", mx);
            snprintf(nm, sizeof nm, "heat.%s.%s.meanfrac", dist_csv[ds], norm_csv[k]);
            val(nm, "%.2f", H->mf[ds][k][0][H->nn - 1]);
            amb_total += H->amb[ds][k];
        }
    char cap[1024];
    snprintf(cap, sizeof cap,
             "Random keys, %d runs a cell, n = %d..%d, d = %d..%d; norms with eps = 0; a key is "
             "unselectable when its l1 distance to the hull of the other keys is below %g "
             "relative (an LP, GLPK).  A cell is the fraction of runs with at least one "
             "unselectable key.  Columns d(<=0.5), d(<=0.05): the smallest d at which that "
             "fraction drops to <= 0.5 and <= 0.05 (\"-\": not within d <= %d).  \"mean "
             "unselectable\": the mean over runs of the fraction of unselectable keys.  "
             "gauss: N(0, 1) keys; offset: mu + s .* z of the same z (mu_c ~ N(1, 1), s_c = "
             "exp(N(0, 1)) per set).",
             H->runs, H->ns[0], nmax, H->dlo, dhi, LNK_GEOM_SEL_TOL, dhi);
    emit(&T, "heatmap_thresholds", "Random keys: selectability thresholds (`heatmap.csv`)", cap);
    val("heat.ambiguous", "%ld", amb_total);
    {
        double m = fmin(H->minsel[0][3], H->minsel[1][3]);
        val("heat.ln_margin", "%.0e", m);
    }
    /* none at the largest two d: most runs with an unselectable key, over n and both dists */
    for (int back = 1; back >= 0; back--) {
        double mx = 0;
        for (int ds = 0; ds < 2; ds++)
            for (int in = 0; in < H->nn; in++)
                mx = fmax(mx, H->fa[ds][0][H->nd - 1 - back][in]);
        char nm[64];
        snprintf(nm, sizeof nm, "heat.none.d%d.max", dhi - back);
        val(nm, "%.0f%%", 100 * mx);
    }

    /* affine check: offset "none" cells against gauss "none" cells */
    int same = 0;
    for (int id = 0; id < H->nd; id++)
        for (int in = 0; in < H->nn; in++)
            same += H->fa[0][0][id][in] == H->fa[1][0][id][in] &&
                    H->mf[0][0][id][in] == H->mf[1][0][id][in];
    val("heat.affine.same", "%d", same);
    val("heat.affine.cells", "%d", H->nn * H->nd);

    /* Centring: P keys in d dimensions are, in distribution, keys in d - 1 (an affine
     * image of a (d-1)-dim Gaussian), so frac(P, n, d) and frac(none, n, d - s) should
     * agree for s = 1 up to sampling: two-proportion z with the pooled p, over the cells
     * where the pooled p is strictly between 0 and 1. */
    double chi[3], dms[3], dsds[3];
    int cells[3], withins[3];
    for (int s = 0; s <= 2; s++) {
        double zz = 0, d1 = 0, d2 = 0;
        int m = 0, w = 0;
        for (int ds = 0; ds < 2; ds++)
            for (int id = s; id < H->nd; id++)
                for (int in = 0; in < H->nn; in++) {
                    double p1 = H->fa[ds][1][id][in], p2 = H->fa[ds][0][id - s][in];
                    double p = (p1 + p2) / 2;
                    if (!(p > 0 && p < 1))
                        continue;
                    double z = (p1 - p2) / sqrt(2 * p * (1 - p) / H->runs);
                    zz += z * z;
                    d1 += p1 - p2;
                    d2 += (p1 - p2) * (p1 - p2);
                    w += fabs(z) <= 2;
                    m++;
                }
        chi[s] = m ? zz / m : NAN;
        cells[s] = m;
        dms[s] = m ? d1 / m : NAN;
        dsds[s] = m > 1 ? sqrt(fmax(0, (d2 - m * dms[s] * dms[s]) / (m - 1))) : 0;
        withins[s] = w;
    }
    double dm = dms[1], dsd = dsds[1];
    int within = withins[1];
    /* the thresholds' shift, per n, level and key distribution (both thresholds inside
     * the grid and the "none" one above its first d, so that the shift is not censored) */
    int sh[2 * 2 * MAXN], nsh = 0, smin = 99, smax = -99;
    for (int ds = 0; ds < 2; ds++)
        for (int in = 0; in < H->nn; in++)
            for (int lv = 0; lv < 2; lv++) {
                double lim = lv ? 0.05 : 0.5;
                int a = thr(H, ds, 0, in, lim), b = thr(H, ds, 1, in, lim);
                if (a <= H->dlo || b < 0)
                    continue;
                sh[nsh] = b - a;
                smin = sh[nsh] < smin ? sh[nsh] : smin;
                smax = sh[nsh] > smax ? sh[nsh] : smax;
                nsh++;
            }
    double shm = 0, shsd = 0;
    for (int i = 0; i < nsh; i++)
        shm += (double)sh[i] / nsh;
    for (int i = 0; i < nsh; i++)
        shsd += (sh[i] - shm) * (sh[i] - shm) / (nsh > 1 ? nsh - 1 : 1);
    shsd = sqrt(shsd);
    int cnt[8] = {0};
    for (int i = 0; i < nsh; i++)
        if (sh[i] >= 0 && sh[i] < 8)
            cnt[sh[i]]++;
    {
        static const char *const hc[] = {"comparison", "cells", "chi^2/dof (z^2 mean)",
                                         "mean difference ± sd", "cells with |z| <= 2"};
        table(&T, 5, hc, "lrrrr");
        for (int s = 0; s <= 2; s++) {
            int r = trow(&T);
            lnk_table_set(&T, r, 0, "frac(P, n, d) vs frac(none, n, d - %d)", s);
            lnk_table_set(&T, r, 1, "%d", cells[s]);
            lnk_table_set(&T, r, 2, "%.2f", chi[s]);
            lnk_table_set(&T, r, 3, "%.3f ± %.3f", fabs(dms[s]) < 5e-4 ? 0.0 : dms[s], dsds[s]);
            lnk_table_set(&T, r, 4, "%d (%.0f%%)", withins[s], 100.0 * withins[s] / cells[s]);
        }
        snprintf(cap, sizeof cap,
                 "Does the projection P cost exactly one dimension?  The keys P(k) of d "
                 "dimensions are, in distribution, keys of d - 1 dimensions (for both key "
                 "distributions), so cell by cell the fraction of runs with an unselectable "
                 "key after P at d should equal that without a norm at d - 1, up to sampling "
                 "(two-proportion z, pooled p, %d runs each; cells where the pooled p is 0 or 1 "
                 "left out; both key distributions, all n).  chi^2/dof near 1 for a shift of "
                 "one dimension and not for 0 or 2.  The thresholds of "
                 "`heatmap_thresholds.md` move by %d to %d dimensions (mean %.2f, sd %.2f over "
                 "%d pairs of n and level, %d by 0, %d by 1, %d by 2; \"none\" thresholds at "
                 "d = %d left out as censored).",
                 H->runs, smin, smax, shm, shsd, nsh, cnt[0], cnt[1], cnt[2], H->dlo);
        emit(&T, "centring", "Random keys: the projection's cost in dimensions", cap);
    }
    char b[64];
    val("centre.cells", "%d", cells[1]);
    val("centre.chi2_1", "%.2f", chi[1]);
    val("centre.chi2_0", "%.1f", chi[0]);
    val("centre.chi2_2", "%.1f", chi[2]);
    snprintf(b, sizeof b, "%.3f ± %.3f", dm, dsd);
    if (!strncmp(b, "-0.000 ", 7))
        memmove(b, b + 1, strlen(b));
    val("centre.diff", "%s", b);
    val("centre.within2", "%.0f%%", 100.0 * within / cells[1]);
    val("centre.shift", "%.2f ± %.2f", shm, shsd);
    val("centre.shift_range", "%d-%d", smin, smax);
    val("centre.shift_pairs", "%d", nsh);
    val("centre.shift_counts", "%d / %d / %d", cnt[0], cnt[1], cnt[2]);
    {
        char v[256], s[256];
        snprintf(v, sizeof v,
                 "chi2/dof %.2f for a shift of 1 dimension (%.1f for 0, %.1f for 2) over %d "
                 "cells; mean difference %s; threshold shifts %d-%d (mean %.2f ± %.2f sd, %d "
                 "pairs)",
                 chi[1], chi[0], chi[2], cells[1], b, smin, smax, shm, shsd, nsh);
        snprintf(s, sizeof s, "random keys gauss and offset, n = %d..%d, d = %d..%d, %d runs a "
                              "cell, eps = 0", H->ns[0], nmax, H->dlo, dhi, H->runs);
        claim("The projection P costs one dimension in distribution (frac(P, d) = frac(none, "
              "d - 1) cell by cell); a threshold moves by one only on average",
              v, s, "heatmap.csv");
    }
    /* the plain reproduction claim */
    {
        char v[256], s[256], a1[32], a2[32];
        int in = H->nn - 1;
        thr_cell(a1, sizeof a1, H, thr(H, 0, 0, in, 0.5));
        thr_cell(a2, sizeof a2, H, thr(H, 0, 0, in, 0.05));
        double mxl = 0;
        for (int ds = 0; ds < 2; ds++)
            for (int k = 2; k < 4; k++)
                for (int id = 0; id < H->nd; id++)
                    for (int j = 0; j < H->nn; j++)
                        mxl = fmax(mxl, H->fa[ds][k][id][j]);
        snprintf(v, sizeof v, "no norm, n = %d: fraction <= 0.5 from d = %s, <= 0.05 from d = "
                              "%s; after S or LayerNorm: %.2f in every cell", nmax, a1, a2, mxl);
        snprintf(s, sizeof s, "gauss keys, n = %d..%d, d = %d..%d, %d runs a cell, eps = 0, "
                              "tolerance %g", H->ns[0], nmax, H->dlo, dhi, H->runs,
                 LNK_GEOM_SEL_TOL);
        claim("Brody et al.'s random-key experiment reproduced: unselectable keys fade out with "
              "d; scaling onto the sphere makes every key selectable", v, s, "heatmap.csv");
    }
    heat_gp(H, 0);
    heat_gp(H, 1);
    free(H);
}

/* --------------------------------------------- orthogonality (part ortho) */

static const char *const odist[3] = {"gauss", "offset", "offset0"};

static void part_ortho(void)
{
    study_table t;
    study_table_read(&t, dir, "orthogonality.csv");
    enum { MAXP = 64 };
    double D[3][MAXP], Y[3][MAXP], SE[3][MAXP], TH[MAXP];
    int np[3] = {0, 0, 0};
    long keys = 0, sets = 0;
    for (size_t r = 0; r < t.d.nrow; r++) {
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (is(&t, r, "dist", odist[i]))
                k = i;
        if (k < 0)
            fail("orthogonality.csv: row %zu: unknown dist '%s'", r + 2, str(&t, r, "dist"));
        if (np[k] == MAXP)
            fail("orthogonality.csv: more than %d values of d", MAXP);
        int i = np[k]++;
        D[k][i] = num(&t, r, "d");
        Y[k][i] = num(&t, r, "mean_abs_cos");
        sets = (long)num(&t, r, "sets");
        keys = (long)num(&t, r, "keys");
        SE[k][i] = num(&t, r, "sd_set_mean_abs_cos") / sqrt((double)sets);
        if (k == 0)
            TH[i] = num(&t, r, "gauss_theory_abs_cos");
    }
    study_table_free(&t);
    if (np[0] != np[1] || np[0] != np[2] || np[0] < 4)
        fail("orthogonality.csv: expected the same d values (>= 4) for gauss, offset, offset0");
    int n = np[0];
    const double DMIN = 8;
    int i0 = 0;
    while (i0 < n && D[0][i0] < DMIN)
        i0++;
    int nf = n - i0;
    lnk_fit F[3], FT;
    for (int k = 0; k < 3; k++)
        CK(lnk_fit_power(D[k] + i0, Y[k] + i0, SE[k] + i0, (size_t)nf, &F[k]));
    /* the exact Gaussian curve fitted with the data's weights: its slope over the range */
    CK(lnk_fit_power(D[0] + i0, TH + i0, SE[0] + i0, (size_t)nf, &FT));
    /* the Gaussian data against the exact curve, point by point */
    double zz = 0;
    for (int i = 0; i < n; i++)
        zz += (Y[0][i] - TH[i]) * (Y[0][i] - TH[i]) / (SE[0][i] * SE[0][i]);
    double chi_th = zz / n;
    /* orthogonality_fit.csv (its sidecar names orthogonality.csv with its SHA-256) */
    {
        char in[1200];
        snprintf(in, sizeof in, "%s/orthogonality.csv", dir);
        study_input(in);
        out_csv o;
        static const char *const h[] = {"dist", "d_min", "d_max", "points", "exponent",
                                        "se_exponent", "chi2_dof", "intercept", "se_intercept"};
        csv_open(&o, dir, "orthogonality_fit.csv", h, 9);
        for (int k = 0; k < 4; k++) {
            const lnk_fit *f = k < 3 ? &F[k] : &FT;
            CK(lnk_csv_str(&o.c, k < 3 ? odist[k] : "gauss_theory"));
            CK(lnk_csv_int(&o.c, (long long)D[0][i0]));
            CK(lnk_csv_int(&o.c, (long long)D[0][n - 1]));
            CK(lnk_csv_int(&o.c, nf));
            CK(lnk_csv_double(&o.c, f->slope));
            CK(lnk_csv_double(&o.c, f->se_slope));
            CK(lnk_csv_double(&o.c, f->chisq / f->dof));
            CK(lnk_csv_double(&o.c, f->intercept));
            CK(lnk_csv_double(&o.c, f->se_intercept));
            CK(lnk_csv_end_row(&o.c));
        }
        lnk_meta *extra = lnk_meta_alloc();
        if (!extra)
            die();
        lnk_meta_str(extra, "study", "ln_geometry");
        lnk_meta_str(extra, "part", "ortho");
        lnk_meta_str(extra, "fit", "weighted least squares of ln mean|cos| on ln d "
                                   "(studies/kit/fit.c), errors sd over sets / sqrt(sets)");
        csv_close(&o, NULL, extra, NULL, 0);
        lnk_meta_free(extra);
    }
    int i8 = i0, i64 = 0;
    for (int i = 0; i < n; i++)
        if (D[0][i] == 64)
            i64 = i;
    char dlo[16], dhi[16];
    snprintf(dlo, sizeof dlo, "%g", D[0][i0]);
    snprintf(dhi, sizeof dhi, "%g", D[0][n - 1]);
    val("ortho.keys", "%ld", keys);
    val("ortho.sets", "%ld", sets);
    val("ortho.range", "%s-%s", dlo, dhi);
    lnk_table T;
    char h1[32], h2[32], h3[32], h4[48];
    snprintf(h1, sizeof h1, "mean abs cos at d=%g", D[0][i8]);
    snprintf(h2, sizeof h2, "d=%g", D[0][i64]);
    snprintf(h3, sizeof h3, "d=%g", D[0][n - 1]);
    snprintf(h4, sizeof h4, "acos(mean abs cos) at d=%g", D[0][n - 1]);
    const char *head[] = {"keys", h1, h2, h3, h4, "exponent b (± se)", "chi^2/dof"};
    table(&T, 7, head, "lrrrrrr");
    for (int k = 0; k < 4; k++) {
        int r = trow(&T);
        const lnk_fit *f = k < 3 ? &F[k] : &FT;
        char b[64];
        if (k < 3) {
            lnk_table_set(&T, r, 0, "%s", odist[k]);
            int ix[3] = {i8, i64, n - 1};
            for (int j = 0; j < 3; j++) {
                lnk_fmt_pm(b, sizeof b, Y[k][ix[j]], SE[k][ix[j]]);
                lnk_table_set(&T, r, 1 + j, "%s", b);
            }
            lnk_table_set(&T, r, 4, "%.1f deg", acos(Y[k][n - 1]) * 180 / M_PI);
        } else {
            lnk_table_set(&T, r, 0, "gauss theory E abs cos");
            lnk_table_set(&T, r, 1, "%.4f", TH[i8]);
            lnk_table_set(&T, r, 2, "%.4f", TH[i64]);
            lnk_table_set(&T, r, 3, "%.4f", TH[n - 1]);
            lnk_table_set(&T, r, 4, "%.1f deg", acos(TH[n - 1]) * 180 / M_PI);
        }
        if (k < 3) {
            lnk_fmt_pm(b, sizeof b, f->slope, f->se_slope);
            lnk_table_set(&T, r, 5, "%s", b);
            lnk_table_set(&T, r, 6, "%.1f", f->chisq / f->dof);
        } else { /* the curve has no scatter: its slope only */
            lnk_table_set(&T, r, 5, "%.4f", f->slope);
            lnk_table_set(&T, r, 6, "-");
        }
    }
    char cap[1400];
    snprintf(cap, sizeof cap,
             "Mean |cos(k, 1)| over %ld keys per d (%ld sets of %ld; ± the standard error from "
             "the spread of the %ld set means, as the keys of one set share their offset and "
             "scales).  Fit of ln mean|cos| = a + b ln d over %s <= d <= %s (%d points), "
             "weighted least squares with these errors (studies/kit/fit.c; se scaled by "
             "sqrt(chi^2/dof) when that exceeds 1).  The theory row fits the exact Gaussian "
             "E|cos| = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)) with the same weights: it "
             "approaches sqrt(2/(pi d)) with a local slope -1/2 - 1/(4d), hence b below -1/2 "
             "over a finite range.  The gauss means against the exact curve: chi^2/dof %.2f "
             "over all %d d.  offset: a common mean mu_c ~ N(1, 1) per coordinate (so along 1) "
             "and scales s_c = exp(N(0, 1)); offset0: the same with mu_c ~ N(0, 1).",
             keys, sets, keys / (sets ? sets : 1), sets, dlo, dhi, nf, chi_th, n);
    emit(&T, "orthogonality_fit", "Orthogonality to the all-ones vector (`orthogonality.csv`)",
         cap);
    /* local slopes between successive d */
    {
        const char *hl[] = {"d", "gauss", "offset", "offset0", "gauss theory"};
        table(&T, 5, hl, "lrrrr");
        for (int i = i0; i + 1 < n; i++) {
            int r = trow(&T);
            double l = log(D[0][i + 1] / D[0][i]);
            lnk_table_set(&T, r, 0, "%g-%g", D[0][i], D[0][i + 1]);
            for (int k = 0; k < 3; k++) {
                double s = log(Y[k][i + 1] / Y[k][i]) / l;
                double se = sqrt(pow(SE[k][i] / Y[k][i], 2) + pow(SE[k][i + 1] / Y[k][i + 1], 2)) / l;
                char b[64];
                lnk_fmt_pm(b, sizeof b, s, se);
                lnk_table_set(&T, r, 1 + k, "%s", b);
            }
            lnk_table_set(&T, r, 4, "%.3f", log(TH[i + 1] / TH[i]) / l);
        }
        snprintf(cap, sizeof cap,
                 "Local slopes d ln mean|cos| / d ln d between successive d (± se from the two "
                 "points' standard errors).  The offset keys are not a power law: their |cos| "
                 "levels off at the offset's share along 1, so the single exponent of "
                 "`orthogonality_fit.md` only averages a slope that goes to 0.");
        emit(&T, "orthogonality_local", "Orthogonality: local slopes", cap);
    }
    char b[64];
    for (int k = 0; k < 3; k++) {
        char nm[64];
        lnk_fmt_pm(b, sizeof b, F[k].slope, F[k].se_slope);
        snprintf(nm, sizeof nm, "ortho.%s.b", odist[k]);
        val(nm, "%s", b);
        snprintf(nm, sizeof nm, "ortho.%s.chi2", odist[k]);
        val(nm, "%.1f", F[k].chisq / F[k].dof);
        snprintf(nm, sizeof nm, "ortho.%s.cos64", odist[k]);
        lnk_fmt_pm(b, sizeof b, Y[k][i64], SE[k][i64]);
        val(nm, "%s", b);
        snprintf(nm, sizeof nm, "ortho.%s.cos512", odist[k]);
        lnk_fmt_pm(b, sizeof b, Y[k][n - 1], SE[k][n - 1]);
        val(nm, "%s", b);
        snprintf(nm, sizeof nm, "ortho.%s.angle512", odist[k]);
        val(nm, "%.1f", acos(Y[k][n - 1]) * 180 / M_PI);
        snprintf(nm, sizeof nm, "ortho.%s.zhalf", odist[k]);
        val(nm, "%.1f", fabs(F[k].slope + 0.5) / F[k].se_slope);
    }
    val("ortho.theory.b", "%.3f", FT.slope);
    val("ortho.gauss.ztheory", "%.1f", fabs(F[0].slope - FT.slope) / F[0].se_slope);
    val("ortho.gauss.chi2_theory", "%.2f", chi_th);
    {
        /* offset: the local slope over the last interval */
        double l = log(D[1][n - 1] / D[1][n - 2]);
        double s = log(Y[1][n - 1] / Y[1][n - 2]) / l;
        double se = sqrt(pow(SE[1][n - 2] / Y[1][n - 2], 2) + pow(SE[1][n - 1] / Y[1][n - 1], 2)) / l;
        lnk_fmt_pm(b, sizeof b, s, se);
        val("ortho.offset.last_local", "%s", b);
        val("ortho.offset.last_range", "%g-%g", D[1][n - 2], D[1][n - 1]);
    }
    /* the smallest d where the gauss mean |cos| is <= 0.05 */
    {
        int dd = -1;
        for (int i = 0; i < n && dd < 0; i++)
            if (Y[0][i] <= 0.05)
                dd = (int)D[0][i];
        val("ortho.gauss.d005", "%d", dd);
    }
    {
        char v[300], s[200], b2[64];
        lnk_fmt_pm(b, sizeof b, F[0].slope, F[0].se_slope);
        snprintf(v, sizeof v, "b = %s (se), chi2/dof %.1f, d = %s-%s; exact Gaussian curve's slope "
                              "%.3f over the same range (%.1f se away); -1/2 is %.1f se away",
                 b, F[0].chisq / F[0].dof, dlo, dhi, FT.slope,
                 fabs(F[0].slope - FT.slope) / F[0].se_slope,
                 fabs(F[0].slope + 0.5) / F[0].se_slope);
        snprintf(s, sizeof s, "gauss keys N(0, I_d), %ld keys per d in %ld sets", keys, sets);
        claim("Random zero-mean keys: mean |cos(k, 1)| ~ d^b", v, s, "orthogonality.csv");
        lnk_fmt_pm(b, sizeof b, F[1].slope, F[1].se_slope);
        lnk_fmt_pm(b2, sizeof b2, Y[1][n - 1], SE[1][n - 1]);
        snprintf(v, sizeof v, "not a power law: b = %s (se), chi2/dof %.1f, d = %s-%s; |cos| = %s "
                              "at d = %s (%.0f deg)",
                 b, F[1].chisq / F[1].dof, dlo, dhi, b2, dhi, acos(Y[1][n - 1]) * 180 / M_PI);
        snprintf(s, sizeof s, "offset keys (mean mu_c ~ N(1,1), scales exp(N(0,1))), %ld keys "
                              "per d in %ld sets", keys, sets);
        claim("Keys with a common mean along 1 do not become orthogonal to 1 with d", v, s,
              "orthogonality.csv");
    }
    /* orthogonality.gp: log-log points with se bars, the fitted lines over the fitted
     * range and the exact Gaussian curve */
    lnk_afile a;
    FILE *f = out_open(&a, "orthogonality.gp");
    fprintf(f, "# orthogonality.png from orthogonality.csv (written by ln_geometry_summary; run "
               "in its directory)\n");
    fprintf(f, "%s size 820,580\nset output 'orthogonality.png'\nset datafile separator ','\n",
            TERM);
    fprintf(f, "set logscale xy\nset xlabel 'd'\nset ylabel 'mean |cos(k, 1)| (± se)'\n"
               "set key bottom left\nset xrange [%g:%g]\nset yrange [0.02:1]\n",
            D[0][0] / 1.2, D[0][n - 1] * 1.2);
    fprintf(f, "set title 'orthogonality to the all-ones vector: weighted power-law fits over "
               "d = %s-%s, exact Gaussian curve, d^(-1/2)'\n", dlo, dhi);
    static const int pt[3] = {7, 5, 9};
    static const char *const col[3] = {"#1f77b4", "#d62728", "#2ca02c"};
    static const char *const lab[3] = {"gauss keys", "offset keys (mean along 1)",
                                       "offset0 keys (zero mean)"};
    for (int k = 0; k < 3; k++)
        fprintf(f, "a%d = %.10g; b%d = %.10g\n", k, F[k].intercept, k, F[k].slope);
    fprintf(f, "fit_line(x, a, b) = (x >= %s && x <= %s) ? exp(a) * x**b : 1/0\n", dlo, dhi);
    fprintf(f, "set samples 400\nplot \\\n");
    for (int k = 0; k < 3; k++) {
        lnk_fmt_pm(b, sizeof b, F[k].slope, F[k].se_slope);
        fprintf(f, "  'orthogonality.csv' skip 1 every ::%d::%d using 2:4:(column(10)/sqrt(column(9))) "
                   "with yerrorbars pt %d lc rgb '%s' title '%s', \\\n",
                k * n, k * n + n - 1, pt[k], col[k], lab[k]);
        fprintf(f, "  fit_line(x, a%d, b%d) with lines lc rgb '%s' title sprintf('fit: b = %s, "
                   "chi^2/dof %.1f'), \\\n", k, k, col[k], b, F[k].chisq / F[k].dof);
    }
    fprintf(f, "  'orthogonality.csv' skip 1 every ::0::%d using 2:7 with lines dt 2 lc rgb "
               "'black' title 'exact Gaussian E|cos|', \\\n", n - 1);
    fprintf(f, "  sqrt(2 / (pi * x)) with lines dt 3 lc rgb 'gray40' title 'theory sqrt(2/(pi "
               "d)) (slope -1/2)'\n");
    out_commit(&a);
}

/* --------------------------------------------------------- heads (part heads) */

static void part_heads(void)
{
    study_table t;
    study_table_read(&t, dir, "heads_stats.csv");
    lnk_table T;
    const char *head[] = {"keys", "h", "d_k", "full-width LN: abs slice mean (± sd)",
                          "norm ratio sd [min, max]", "per-head LN: abs slice mean",
                          "norm ratio sd", "per-head RMS: abs slice mean (± sd)", "norm ratio sd"};
    table(&T, 9, head, "lrrrrrrrr");
    /* rows come as (dist, h) blocks of fullLN, headLN, headRMS */
    double fl_lo[2] = {INFINITY, INFINITY}, fl_hi[2] = {0, 0}, sd_lo[2] = {INFINITY, INFINITY},
           sd_hi[2] = {0, 0}, rm_lo[2] = {INFINITY, INFINITY}, rm_hi[2] = {0, 0};
    double hl_mean = 0, hl_sd = 0, rms_sd = 0, mn_hmax[2] = {0, 0}, mx_hmax[2] = {0, 0};
    int hmax = 0, d = 0;
    for (size_t r = 0; r + 2 < t.d.nrow; r += 3) {
        if (!is(&t, r, "variant", "fullLN") || !is(&t, r + 1, "variant", "headLN") ||
            !is(&t, r + 2, "variant", "headRMS"))
            fail("heads_stats.csv: row %zu: expected fullLN, headLN, headRMS rows", r + 2);
        int ds = is(&t, r, "dist", "gauss") ? 0 : 1, h = (int)num(&t, r, "h");
        d = (int)num(&t, r, "d");
        int rr = trow(&T);
        char b[64];
        lnk_table_set(&T, rr, 0, "%s", str(&t, r, "dist"));
        lnk_table_set(&T, rr, 1, "%d", h);
        lnk_table_set(&T, rr, 2, "%d", (int)num(&t, r, "d_k"));
        double m0 = num(&t, r, "mean_abs_slice_mean"), s0 = num(&t, r, "sd_abs_slice_mean");
        lnk_fmt_pm(b, sizeof b, m0, s0);
        lnk_table_set(&T, rr, 3, "%s", b);
        double rsd = num(&t, r, "slice_norm_ratio_sd"), rmn = num(&t, r, "slice_norm_ratio_min"),
               rmx = num(&t, r, "slice_norm_ratio_max");
        lnk_table_set(&T, rr, 4, "%.2g [%.3f, %.3f]", rsd, rmn, rmx);
        lnk_table_set(&T, rr, 5, "%.1e", num(&t, r + 1, "mean_abs_slice_mean"));
        lnk_table_set(&T, rr, 6, "%.1e", num(&t, r + 1, "slice_norm_ratio_sd"));
        double m2 = num(&t, r + 2, "mean_abs_slice_mean"), s2 = num(&t, r + 2, "sd_abs_slice_mean");
        lnk_fmt_pm(b, sizeof b, m2, s2);
        lnk_table_set(&T, rr, 7, "%s", b);
        lnk_table_set(&T, rr, 8, "%.1e", num(&t, r + 2, "slice_norm_ratio_sd"));
        if (h > 1) { /* h = 1: the full-width LN is the per-head LN */
            fl_lo[ds] = fmin(fl_lo[ds], m0);
            fl_hi[ds] = fmax(fl_hi[ds], m0);
            sd_lo[ds] = fmin(sd_lo[ds], rsd);
            sd_hi[ds] = fmax(sd_hi[ds], rsd);
        }
        rm_lo[ds] = fmin(rm_lo[ds], m2);
        rm_hi[ds] = fmax(rm_hi[ds], m2);
        hl_mean = fmax(hl_mean, num(&t, r + 1, "mean_abs_slice_mean"));
        hl_sd = fmax(hl_sd, num(&t, r + 1, "slice_norm_ratio_sd"));
        rms_sd = fmax(rms_sd, num(&t, r + 2, "slice_norm_ratio_sd"));
        if (h >= hmax) {
            hmax = h;
            mn_hmax[ds] = rmn;
            mx_hmax[ds] = rmx;
        }
        char nm[64];
        snprintf(nm, sizeof nm, "heads.%s.h%d.mean", str(&t, r, "dist"), h);
        val(nm, "%.3f", m0);
    }
    study_table_free(&t);
    char cap[700];
    snprintf(cap, sizeof cap,
             "Keys at d = %d (2000 a distribution, in sets of 40 sharing the offset); for each "
             "head slice of width d_k = d/h: the mean of its entries (mean over keys and heads "
             "of its absolute value ± the sd over them) and its norm relative to sqrt(d_k) (1 = "
             "on the per-head LayerNorm sphere; sd over keys and heads, [min, max]); eps = 0.",
             d);
    emit(&T, "heads_stats", "Heads: per-head slices (`heads_stats.csv`)", cap);
    char r1[64];
    val("heads.d", "%d", d);
    for (int ds = 0; ds < 2; ds++) {
        char nm[64];
        range(r1, sizeof r1, "%.2g", sd_lo[ds], sd_hi[ds]);
        snprintf(nm, sizeof nm, "heads.%s.ratio_sd", dist_csv[ds]);
        val(nm, "%s", r1);
        snprintf(nm, sizeof nm, "heads.%s.ratio_range_hmax", dist_csv[ds]);
        val(nm, "%.2f-%.2f", mn_hmax[ds], mx_hmax[ds]);
        snprintf(nm, sizeof nm, "heads.%s.rms_mean", dist_csv[ds]);
        range(r1, sizeof r1, "%.2g", rm_lo[ds], rm_hi[ds]);
        val(nm, "%s", r1);
        snprintf(nm, sizeof nm, "heads.%s.full_mean", dist_csv[ds]);
        range(r1, sizeof r1, "%.3f", fl_lo[ds], fl_hi[ds]);
        val(nm, "%s", r1);
    }
    val("heads.hmax", "%d", hmax);
    val("heads.headln.mean_max", "%.1e", hl_mean);
    val("heads.headln.ratio_sd_max", "%.2g", hl_sd);
    val("heads.headrms.ratio_sd_max", "%.2g", rms_sd);

    /* per-head selectability */
    study_table_read(&t, dir, "heads_select.csv");
    const char *hs[] = {"keys", "d", "h", "d_k", "raw", "full-width LN", "per-head LN",
                        "per-head RMS"};
    table(&T, 8, hs, "lrrrrrrr");
    static const char *const hv[4] = {"raw", "fullLN", "headLN", "headRMS"};
    double ph4 = 0, d512 = 0;
    int nk = 0, runs = 0;
    for (size_t r = 0; r + 3 < t.d.nrow; r += 4) {
        for (int v = 0; v < 4; v++)
            if (!is(&t, r + v, "variant", hv[v]))
                fail("heads_select.csv: row %zu: expected variant %s", r + v + 2, hv[v]);
        int rr = trow(&T), dd = (int)num(&t, r, "d"), h = (int)num(&t, r, "h"),
            dk = (int)num(&t, r, "d_k");
        nk = (int)num(&t, r, "keys");
        runs = (int)num(&t, r, "runs");
        lnk_table_set(&T, rr, 0, "%s", str(&t, r, "dist"));
        lnk_table_set(&T, rr, 1, "%d", dd);
        lnk_table_set(&T, rr, 2, "%d", h);
        lnk_table_set(&T, rr, 3, "%d", dk);
        for (int v = 0; v < 4; v++) {
            double fr = num(&t, r + v, "frac_unselectable");
            lnk_table_set(&T, rr, 4 + v, "%.2f", fr);
            if (v >= 2 && dk >= 4)
                ph4 = fmax(ph4, fr);
            if (dd == 512)
                d512 = fmax(d512, fr);
            if (is(&t, r, "dist", "gauss") &&
                ((dd == 16 && h == 4) || (dd == 64 && h == 16) || dk == 2)) {
                char nm[64];
                snprintf(nm, sizeof nm, "sel.d%dh%d.%s", dd, h, hv[v]);
                val(nm, "%.0f%%", 100 * fr);
            }
        }
    }
    study_table_free(&t);
    snprintf(cap, sizeof cap,
             "Per-head selectability: %d keys, %d runs; the fraction of unselectable keys over "
             "all heads and runs (keys of head j = columns of slice j; binomial se <= %.2f).",
             nk, runs, 0.5 / sqrt((double)nk * runs));
    emit(&T, "heads_select", "Heads: per-head selectability (`heads_select.csv`)", cap);
    val("sel.keys", "%d", nk);
    val("sel.runs", "%d", runs);
    val("sel.perhead_dk4_max", "%.0f%%", 100 * ph4);
    val("sel.d512_max", "%.0f%%", 100 * d512);
    {
        char v[300], s[200];
        snprintf(v, sizeof v, "d = 16, h = 4: %s unselectable after a full-width LN vs %s raw; "
                              "per-head LN or RMS: %.0f%% for d_k >= 4; d_k = 2: per-head LN %s, "
                              "per-head RMS %s",
                 vv("sel.d16h4.fullLN"), vv("sel.d16h4.raw"), 100 * ph4, vv("sel.d16h8.headLN"),
                 vv("sel.d16h8.headRMS"));
        snprintf(s, sizeof s, "gauss keys, %d keys, %d runs, d = 16, 64, 512, h = 1-16, eps = 0",
                 nk, runs);
        claim("Multi-head objection: a full-width LN leaves each head's keys as unselectable as "
              "raw ones; a per-head norm fixes it (RMS also at d_k = 2)", v, s,
              "heads_select.csv");
    }
}

/* ------------------------------------------------------- models (part model) */

enum { NSTG = 7 };
static const char *const stg_csv[NSTG] = {"x_wk", "center_x_wk", "scale_x_wk", "keys", "x",
                                          "norm_out", "keys_qk"};
static const char *const stg_label[NSTG] = {"x Wk_j", "P(x) Wk_j", "S(x) Wk_j", "N(x) Wk_j",
                                            "x (full width)", "N(x) (full width)",
                                            "qknorm(N(x) Wk_j)"};

typedef struct {
    char data[16], pos[8], qk[16];
    int d, h, L;
    long keys[NSTG][8], un[NSTG][8];
} mvar;

static void part_model(void)
{
    study_table t;
    study_table_read(&t, dir, "model_select.csv");
    enum { MAXV_ = 64 };
    mvar *V = calloc(MAXV_, sizeof *V);
    if (!V)
        fail("out of memory");
    int nv = 0, seqs = 0;
    for (size_t r = 0; r < t.d.nrow; r++) {
        const char *da = str(&t, r, "data"), *po = str(&t, r, "norm_pos"), *qk = str(&t, r, "qk_norm");
        int d = (int)num(&t, r, "d");
        int v = 0;
        while (v < nv && (strcmp(V[v].data, da) || strcmp(V[v].pos, po) || strcmp(V[v].qk, qk) ||
                          V[v].d != d))
            v++;
        if (v == nv) {
            if (nv == MAXV_)
                fail("model_select.csv: more than %d model variants", MAXV_);
            snprintf(V[v].data, sizeof V[v].data, "%s", da);
            snprintf(V[v].pos, sizeof V[v].pos, "%s", po);
            snprintf(V[v].qk, sizeof V[v].qk, "%s", qk);
            V[v].d = d;
            V[v].h = (int)num(&t, r, "h");
            V[v].L = (int)num(&t, r, "L");
            nv++;
        }
        int s = 0;
        while (s < NSTG && !is(&t, r, "stage", stg_csv[s]))
            s++;
        if (s == NSTG)
            fail("model_select.csv: row %zu: unknown stage '%s'", r + 2, str(&t, r, "stage"));
        int l = (int)num(&t, r, "layer");
        if (l < 0 || l >= 8)
            fail("model_select.csv: row %zu: layer %d", r + 2, l);
        V[v].keys[s][l] += (long)num(&t, r, "keys");
        V[v].un[s][l] += (long)num(&t, r, "unselectable");
        seqs = (int)num(&t, r, "sequences");
    }
    study_table_free(&t);
    int L = V[0].L;
    if (L < 1 || L > 8)
        fail("model_select.csv: L = %d, expected 1..8", L);
    lnk_table T;
    const char *head[4 + 1 + 8];
    char lh[8][24];
    int nc = 0;
    head[nc++] = "data";
    head[nc++] = "d/h";
    head[nc++] = "norm";
    head[nc++] = "qk_norm";
    head[nc++] = "stage";
    for (int l = 0; l < L; l++) {
        snprintf(lh[l], sizeof lh[l], "layer %d", l);
        head[nc++] = lh[l];
    }
    table(&T, nc, head, "lllllrrrrrrrr");
    /* ranges quoted */
    long minkh = 1L << 60, minkf = 1L << 60; /* smallest key counts shown: per head, full width */
    double d8lo = 1, d8hi = 0, shift = 0, xfull = 0, nfull = 0, qlnlo = 1, qlnhi = 0, qrlo = 1,
           qrhi = 0, big = 0, qkdiff = 0;
    int bigd = 0, bigh = 0;
#define FR(v, s, l) ((double)(v)->un[s][l] / (double)(v)->keys[s][l])
    for (int v = 0; v < nv; v++) {
        mvar *m = &V[v];
        int post = !strcmp(m->pos, "post"), none = !strcmp(m->qk, "none");
        for (int s = 0; s < NSTG; s++)
            for (int l = 0; l < L; l++)
                if (m->keys[s][l]) {
                    if (m->d > 8)
                        big = fmax(big, FR(m, s, l));
                    if (m->d > bigd)
                        bigd = m->d, bigh = m->h;
                }
        if (m->d == 8) {
            for (int l = 0; l < L; l++) {
                if (none) {
                    for (int s = 0; s < 4; s++) {
                        d8lo = fmin(d8lo, FR(m, s, l));
                        d8hi = fmax(d8hi, FR(m, s, l));
                    }
                    if (!(post && l == 0))
                        shift = fmax(shift, fabs(FR(m, 3, l) - FR(m, 0, l)));
                    xfull = fmax(xfull, FR(m, 4, l));
                    if (!(post && l == 0))
                        nfull = fmax(nfull, FR(m, 5, l));
                } else if (!strcmp(m->qk, "layernorm")) {
                    qlnlo = fmin(qlnlo, FR(m, 6, l));
                    qlnhi = fmax(qlnhi, FR(m, 6, l));
                } else {
                    qrlo = fmin(qrlo, FR(m, 6, l));
                    qrhi = fmax(qrhi, FR(m, 6, l));
                }
            }
        }
        if (!none) { /* the stages before the qk-norm in this model against the none model */
            for (int w = 0; w < nv; w++)
                if (!strcmp(V[w].qk, "none") && !strcmp(V[w].data, m->data) &&
                    !strcmp(V[w].pos, m->pos) && V[w].d == m->d)
                    for (int s = 0; s < 6; s++)
                        for (int l = 0; l < L; l++)
                            if (m->keys[s][l] && V[w].keys[s][l])
                                qkdiff = fmax(qkdiff, fabs(FR(m, s, l) - FR(&V[w], s, l)));
        }
        if (m->d > 64)
            continue; /* d = 512: every key selectable (value model.big) */
        for (int s = 0; s < NSTG; s++) {
            if ((s == 6) == none)
                continue;
            int r = trow(&T);
            lnk_table_set(&T, r, 0, "%s", m->data);
            lnk_table_set(&T, r, 1, "%d/%d", m->d, m->h);
            lnk_table_set(&T, r, 2, "%s-LN", m->pos);
            lnk_table_set(&T, r, 3, "%s", m->qk);
            lnk_table_set(&T, r, 4, "%s", stg_label[s]);
            for (int l = 0; l < L; l++) {
                if (s == 4 || s == 5)
                    minkf = m->keys[s][l] < minkf ? m->keys[s][l] : minkf;
                else
                    minkh = m->keys[s][l] < minkh ? m->keys[s][l] : minkh;
                if (post && l == 0 && (s == 3 || s == 5))
                    lnk_table_set(&T, r, 5 + l, "%.3f (x)", FR(m, s, l));
                else
                    lnk_table_set(&T, r, 5 + l, "%.3f", FR(m, s, l));
            }
        }
    }
    char cap[1600];
    snprintf(cap, sizeof cap,
             "Language models at initialisation (Xavier init, model seed 0, L = %d, block norm "
             "LayerNorm), %d sequences (synthetic: ids uniform in [4, 500), 24 tokens; text: "
             "the first %d lines of multi30k val.en, <bos> .. <eos>).  Keys of one sequence "
             "form one set (causal masking ignored: every non-pad position).  Fraction of "
             "unselectable keys per layer (over all heads) for the keys of head j computed from "
             "the norm's input x, its projection P(x), its scaling S(x), the norm output N(x) "
             "(the model's keys), and after the per-head qk-norm; and full-width x and N(x) "
             "(d-dim).  The stages before the qk-norm are shown for the qk_norm = none model; "
             "in the qk_norm = layernorm and rmsnorm models they differ from it by up to %.1f "
             "points (their activations differ from layer 1 on; model_select.csv has them).  "
             "\"(x)\": Post-LN layer 0 has no norm before its attention, which reads the "
             "embedding x, so the N(x) stages hold x there.  Binomial se <= %.3f for the "
             "per-head rows, <= %.3f full width.  d = %d, h = %d: %.0f%% unselectable at "
             "every stage (model_select.csv).",
             L, seqs, seqs, 100 * qkdiff, 0.5 / sqrt((double)minkh), 0.5 / sqrt((double)minkf),
             bigd, bigh, 100 * big);
    emit(&T, "model_select", "Model activations at initialisation: unselectable keys "
                             "(`model_select.csv`)", cap);
    char b[64];
    range(b, sizeof b, "%.0f", 100 * d8lo, 100 * d8hi);
    val("model.d8.range", "%s%%", b);
    val("model.d8.shift", "%.0f", 100 * shift);
    val("model.qkdiff", "%.1f", 100 * qkdiff);
    range(b, sizeof b, "%.1f", 0.0, 100 * xfull);
    val("model.xfull", "%s%%", b);
    val("model.nfull", "%.1f%%", 100 * nfull);
    range(b, sizeof b, "%.0f", 100 * qlnlo, 100 * qlnhi);
    val("model.qkln", "%s%%", b);
    range(b, sizeof b, "%.1f", 100 * qrlo, 100 * qrhi);
    val("model.qkrms", "%s%%", b);
    val("model.big", "%.0f%%", 100 * big);
    val("model.seqs", "%d", seqs);
    {
        char v[300], s[200];
        range(b, sizeof b, "%.0f", 100 * d8lo, 100 * d8hi);
        snprintf(v, sizeof v, "per head %s%% unselectable whether from x, P(x), S(x) or N(x) "
                              "(N(x) vs x: <= %.0f points); full width N(x): %.1f%%",
                 b, 100 * shift, 100 * nfull);
        snprintf(s, sizeof s, "lm, d = 8, h = 4 (d_k = 2), L = %d, Pre- and Post-LN, qk_norm "
                              "none, synthetic and multi30k text, %d sequences, Xavier init seed 0",
                 L, seqs);
        claim("Models at init: a full-width LayerNorm does not make a head's keys selectable", v,
              s, "model_select.csv");
    }
    free(V);
#undef FR

    /* hull membership through Wk */
    study_table_read(&t, dir, "model_affine.csv");
    long kx = 0, mx = 0, mn = 0, vx = 0, vn = 0, kh = 0;
    for (size_t r = 0; r < t.d.nrow; r++) {
        const char *c = str(&t, r, "check");
        long k = (long)num(&t, r, "keys"), n = (long)num(&t, r, "count");
        if (!strncmp(c, "x vs x Wk", 9))
            kx += k, mx += n;
        else if (!strncmp(c, "N(x) vs N(x) Wk", 15))
            mn += n;
        else if (!strncmp(c, "unselectable in x but", 21))
            kh += k, vx += n;
        else
            vn += n;
    }
    study_table_free(&t);
    thousands(b, sizeof b, kx);
    val("affine.keys", "%s", b);
    thousands(b, sizeof b, kh);
    val("affine.keyheads", "%s", b);
    val("affine.mismatch", "%ld", mx + mn);
    val("affine.violations", "%ld", vx + vn);

    /* |cos(x, 1)| of the norms' inputs */
    study_table_read(&t, dir, "model_cos.csv");
    const char *hc[3 + 8] = {"data", "d", "norm"};
    for (int l = 0; l < L; l++)
        hc[3 + l] = lh[l];
    table(&T, 3 + L, hc, "lrlrrrrrrrr");
    double l0lo = 1, l0hi = 0, prelo = 1, prehi = 0, postlo = 1, posthi = 0, outmax = 0;
    int dbig = 0;
    for (size_t r = 0; r < t.d.nrow; r++)
        dbig = (int)fmax(dbig, num(&t, r, "d"));
    for (size_t r = 0; r < t.d.nrow; r += (size_t)L) {
        if (!is(&t, r, "qk_norm", "none"))
            continue;
        int rr = trow(&T), d = (int)num(&t, r, "d"), post = is(&t, r, "norm_pos", "post");
        lnk_table_set(&T, rr, 0, "%s", str(&t, r, "data"));
        lnk_table_set(&T, rr, 1, "%d", d);
        lnk_table_set(&T, rr, 2, "%s-LN", str(&t, r, "norm_pos"));
        for (int l = 0; l < L; l++) {
            double c = num(&t, r + l, "mean_abs_cos_norm_in");
            if ((int)num(&t, r + l, "layer") != l)
                fail("model_cos.csv: row %zu: expected layer %d", r + l + 2, l);
            lnk_table_set(&T, rr, 3 + l, "%.3f", c);
            if (l == 0) {
                l0lo = fmin(l0lo, c);
                l0hi = fmax(l0hi, c);
            } else if (d == dbig) {
                if (post) {
                    postlo = fmin(postlo, c);
                    posthi = fmax(posthi, c);
                } else {
                    prelo = fmin(prelo, c);
                    prehi = fmax(prehi, c);
                }
            }
            if (!(post && l == 0))
                outmax = fmax(outmax, num(&t, r + l, "mean_abs_cos_norm_out"));
        }
    }
    study_table_free(&t);
    snprintf(cap, sizeof cap,
             "Mean |cos(x, 1)| of the norm inputs x (the activations the projection acts on), "
             "qk_norm none, the models of `model_select.md` and d = %d.  Layer 0 is the "
             "embedding (token + sinusoidal position) for both placements.",
             dbig);
    emit(&T, "model_cos", "Model activations: alignment with the all-ones vector "
                          "(`model_cos.csv`)", cap);
    range(b, sizeof b, "%.2f", l0lo, l0hi);
    val("cos.l0", "%s", b);
    range(b, sizeof b, "%.2f", prelo, prehi);
    val("cos.pre_big", "%s", b);
    range(b, sizeof b, "%.3f", postlo, posthi);
    val("cos.post_big", "%s", b);
    val("cos.dbig", "%d", dbig);
    val("cos.out_max", "%.0e", outmax);
}

/* ---------------------------------------------------- attention (part maps) */

static void attn_gp(const char *out, const char *const *vars, int nv, int heads, int ntok,
                    double wmax)
{
    lnk_afile a;
    char fn[128];
    snprintf(fn, sizeof fn, "%s.gp", out);
    FILE *f = out_open(&a, fn);
    fprintf(f, "# %s.png from attn_map_layer2_*.csv (written by ln_geometry_summary; run in its "
               "directory)\n", out);
    fprintf(f, "%s size %d,%d\nset output '%s.png'\nset datafile separator ','\n", TERM,
            330 * heads, 300 * nv + 40, out);
    fprintf(f, "%s", PALETTE);
    fprintf(f, "set cbrange [0:%.4f]\nset cblabel 'attention weight'\nset xlabel 'key'\n"
               "set ylabel 'query'\nset size ratio -1\nset xrange [-0.5:%d.5]\n"
               "set yrange [%d.5:-0.5]\n", wmax, ntok - 1, ntok - 1);
    fprintf(f, "set multiplot layout %d,%d title 'attention maps, layer 2, one sequence of %d "
               "tokens (Pre-LN encoder at init; variants as in attn_stats.md; common colour "
               "scale)'\n", nv, heads, ntok);
    for (int v = 0; v < nv; v++)
        for (int j = 0; j < heads; j++) {
            fprintf(f, "set title '%s, head %d'\n", vars[v], j);
            fprintf(f, "plot 'attn_map_layer2_%s.csv' skip 1 every ::%d::%d using 3:2:4 with "
                       "image notitle\n", vars[v], j * ntok * ntok, (j + 1) * ntok * ntok - 1);
        }
    fprintf(f, "unset multiplot\n");
    out_commit(&a);
}

static void part_maps(void)
{
    study_table t;
    study_table_read(&t, dir, "attn_stats.csv");
    static const char *const vars[3] = {"fullLN", "headLN", "headRMS"};
    lnk_table T;
    const char *head[] = {"variant", "layer", "row entropy: mean over heads (± sd)",
                          "min over heads and rows", "column mass: mean over heads (± sd)",
                          "max over heads", "largest logit: max over heads"};
    table(&T, 7, head, "lrrrrrr");
    int heads = 0, layers = 0, seqs = 0, d = 0;
    double entu = 0, colu = 0;
    double elo = INFINITY, ehi = 0, clo = INFINITY, chi = 0, cxlo = INFINITY, cxhi = 0,
           lflo = INFINITY, lfhi = 0, lplo = INFINITY, lphi = 0;
    const char *data = "";
    for (size_t r = 0; r < t.d.nrow; r++) {
        heads = (int)fmax(heads, num(&t, r, "head") + 1);
        layers = (int)fmax(layers, num(&t, r, "layer") + 1);
    }
    for (int v = 0; v < 3; v++)
        for (int l = 0; l < layers; l++) {
            double e[64], c[64], emin = INFINITY, cmax = 0, lmax = -INFINITY;
            int k = 0;
            for (size_t r = 0; r < t.d.nrow; r++) {
                if (!is(&t, r, "variant", vars[v]) || (int)num(&t, r, "layer") != l)
                    continue;
                if (k == 64)
                    fail("attn_stats.csv: more than 64 heads");
                e[k] = num(&t, r, "ent_mean");
                c[k] = num(&t, r, "col_mass");
                emin = fmin(emin, num(&t, r, "ent_min"));
                cmax = fmax(cmax, num(&t, r, "col_mass_max"));
                lmax = fmax(lmax, num(&t, r, "logit_max"));
                entu = num(&t, r, "ent_uniform");
                colu = num(&t, r, "col_mass_uniform");
                seqs = (int)num(&t, r, "sequences");
                d = (int)num(&t, r, "d");
                data = str(&t, r, "data");
                k++;
            }
            if (k != heads)
                fail("attn_stats.csv: %s layer %d has %d heads, expected %d", vars[v], l, k, heads);
            double em, es, cm, cs;
            lnk_mean_sd(e, 1, (size_t)k, &em, &es);
            lnk_mean_sd(c, 1, (size_t)k, &cm, &cs);
            int r = trow(&T);
            char b[64];
            lnk_table_set(&T, r, 0, "%s", vars[v]);
            lnk_table_set(&T, r, 1, "%d", l);
            lnk_fmt_pm(b, sizeof b, em, es);
            lnk_table_set(&T, r, 2, "%s", b);
            lnk_table_set(&T, r, 3, "%.2f", emin);
            lnk_fmt_pm(b, sizeof b, cm, cs);
            lnk_table_set(&T, r, 4, "%s", b);
            lnk_table_set(&T, r, 5, "%.2f", cmax);
            lnk_table_set(&T, r, 6, "%.2f", lmax);
            elo = fmin(elo, em), ehi = fmax(ehi, em);
            clo = fmin(clo, cm), chi = fmax(chi, cm);
            cxlo = fmin(cxlo, cmax), cxhi = fmax(cxhi, cmax);
            if (v == 0)
                lflo = fmin(lflo, lmax), lfhi = fmax(lfhi, lmax);
            else
                lplo = fmin(lplo, lmax), lphi = fmax(lphi, lmax);
        }
    char datab[32];
    snprintf(datab, sizeof datab, "%s", data);
    study_table_free(&t);
    /* the maps drawn */
    study_table_read(&t, dir, "attn_map_layer2_fullLN.csv");
    int ntok = 0, seq = (int)num(&t, 0, "sequence");
    for (size_t r = 0; r < t.d.nrow; r++)
        ntok = (int)fmax(ntok, num(&t, r, "query") + 1);
    study_table_free(&t);
    double wmax = 0;
    for (int v = 0; v < 3; v++) {
        char fn[64];
        snprintf(fn, sizeof fn, "attn_map_layer2_%s.csv", vars[v]);
        study_table_read(&t, dir, fn);
        if (t.d.nrow != (size_t)heads * ntok * ntok)
            fail("%s: %zu rows, expected %d heads x %d x %d", fn, t.d.nrow, heads, ntok, ntok);
        for (size_t r = 0; r < t.d.nrow; r++)
            wmax = fmax(wmax, num(&t, r, "weight"));
        study_table_free(&t);
    }
    char cap[1400];
    snprintf(cap, sizeof cap,
             "Encoder (cls task, no causal mask), Pre-LN, d = %d, h = %d, L = %d, Xavier init "
             "seed 0, on %d %s sequences.  fullLN: qk_norm none (the block LayerNorm only); "
             "headLN / headRMS: qk_norm layernorm / rmsnorm on each head's queries and keys.  "
             "Per head: the row entropy averaged over rows (uniform rows: %.3f, the mean of "
             "ln T), its minimum over rows; the column mass max_j (1/T) sum_t A[t, j] averaged "
             "over sequences (uniform: %.3f; a vertical stripe: near 1), its maximum over "
             "sequences; the largest logit.  The table aggregates the heads as each column "
             "says (mean ± sd over the %d heads, or min / max over them).  The layer-2 maps of "
             "sequence %d (%d tokens) are drawn in attn_layer2*.png.",
             d, heads, layers, seqs, datab, entu, colu, heads, seq, ntok);
    emit(&T, "attn_stats", "Attention maps (`attn_stats.csv`, `attn_map_layer2_*.csv`)", cap);
    char b[64];
    val("maps.d", "%d", d);
    val("maps.h", "%d", heads);
    val("maps.sqrt_dk", "%g", sqrt((double)d / heads));
    range(b, sizeof b, "%.2f", cxlo, cxhi);
    val("maps.colmax", "%s", b);
    range(b, sizeof b, "%.2f", clo, chi);
    val("maps.colmean", "%s", b);
    val("maps.col_uniform", "%.3f", colu);
    range(b, sizeof b, "%.2f", elo, ehi);
    val("maps.ent", "%s", b);
    val("maps.ent_uniform", "%.2f", entu);
    range(b, sizeof b, "%.1f", lplo, lphi);
    val("maps.logit_perhead", "%s", b);
    range(b, sizeof b, "%.1f", lflo, lfhi);
    val("maps.logit_full", "%s", b);
    {
        char v[300], s[200];
        snprintf(v, sizeof v, "largest column mass %s (uniform %.3f, a stripe near 1); largest "
                              "logit %s with per-head norms, %s with the full-width LN alone",
                 vv("maps.colmax"), colu, vv("maps.logit_perhead"), vv("maps.logit_full"));
        snprintf(s, sizeof s, "Pre-LN encoder at init, d = %d, h = %d, L = %d, %d %s sequences, "
                              "Xavier seed 0", d, heads, layers, seqs, datab);
        claim("No vertical attention stripes at initialisation, with or without per-head norms",
              v, s, "attn_stats.csv");
    }
    for (int v = 0; v < 3; v++) {
        char out[64];
        snprintf(out, sizeof out, "attn_layer2_%s", vars[v]);
        attn_gp(out, vars + v, 1, heads, ntok, wmax);
    }
    attn_gp("attn_layer2", vars, 3, heads, ntok, wmax);
}

/* ---------------------------------------------------- statistics (part counts) */

static void part_counts(void)
{
    study_table t;
    study_table_read(&t, dir, "norm_counts.csv");
    lnk_table T;
    const char *head[] = {"model", "B x T", "d", "h", "norms/model", "per norm: full width",
                          "per head", "per model: full width", "per head"};
    table(&T, 9, head, "lrrrrrrrr");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int rr = trow(&T);
        lnk_table_set(&T, rr, 0, "%s", str(&t, r, "model"));
        lnk_table_set(&T, rr, 1, "%s x %s", str(&t, r, "B"), str(&t, r, "T"));
        static const char *const c[] = {"d", "h", "norms_per_model", "stats_per_norm_fullwidth",
                                        "stats_per_norm_perhead", "stats_per_model_fullwidth",
                                        "stats_per_model_perhead"};
        for (int k = 0; k < 7; k++)
            lnk_table_set(&T, rr, 2 + k, "%s", str(&t, r, c[k]));
        if (r == 0) { /* GPT-2 small, quoted */
            char b[32];
            val("counts.model", "%s", str(&t, r, "model"));
            val("counts.B", "%s", str(&t, r, "B"));
            val("counts.T", "%s", str(&t, r, "T"));
            val("counts.h", "%s", str(&t, r, "h"));
            val("counts.norms", "%s", str(&t, r, "norms_per_model"));
            static const char *const q[] = {"per_norm", "per_norm_head", "per_model",
                                            "per_model_head"};
            for (int k = 0; k < 4; k++) {
                thousands(b, sizeof b, (long)num(&t, r, c[3 + k]));
                char nm[64];
                snprintf(nm, sizeof nm, "counts.%s", q[k]);
                val(nm, "%s", b);
            }
        }
    }
    study_table_free(&t);
    emit(&T, "norm_counts", "How many normalisation statistics? (`norm_counts.csv`)",
         "A LayerNorm computes one mean and one variance per token, whatever the number of "
         "heads: B x T (mean, variance) pairs per batch.  A per-head norm computes h times as "
         "many; a per-head qk-norm adds 2 h B T per attention (queries and keys; "
         "cross-attention counted with T keys).  Norms per model counted from the library's "
         "parameter layout (tensors `*norm*.g`; seq2seq: T source = T target tokens).  The CSV "
         "also has the counts per block (2 norms per encoder / self-attention-only block, 3 per "
         "seq2seq decoder block).");
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    study_init("ln_geometry_summary");
    lnk_prov_args(cli_prov(), argc, argv);
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        printf("usage: ln_geometry_summary [DIR]   (DIR: results/geometry)\n"
               "Tables (.md, .tex, summary.md), orthogonality_fit.csv, values.csv, claims.csv "
               "and the gnuplot scripts (.gp) of the geometry study, from its raw CSVs in DIR.\n");
        return argc > 2 ? 2 : 0;
    }
    dir = argc == 2 ? argv[1] : "results/geometry";
    sum = out_open(&sum_file, "summary.md");
    fprintf(sum, "# LayerNorm geometry (studies/ln_geometry, `make study-geometry`)\n\n"
                 "Tables written by studies/ln_geometry_summary from the CSVs in this "
                 "directory; plots rendered from the .gp scripts beside them.\n\n");
    part_random();
    part_ortho();
    part_heads();
    part_model();
    part_maps();
    part_counts();
    out_commit(&sum_file);
    write_values();
    printf("ln_geometry_summary: wrote the tables, values.csv (%d values), claims.csv (%d "
           "claims) and the .gp scripts in %s\n", nval, ncl, dir);
    return 0;
}
