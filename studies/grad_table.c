/* grad_table: the analysis of the gradient-norm study (studies/grad_norms.c).
 *
 *   grad_table [--dir DIR] [--stat norm_of_mean|mean_norm]
 *
 * Reads whichever of DIR/{depth,depth_seq2seq,width,profile}.csv and their
 * _hidden.csv exist (default DIR results/grad) and writes, in DIR:
 *   depth_table.{md,tex}      last-layer ||dL/dW2||_F against L, mean ± sd over seeds
 *   depth_ratio.{md,tex}      Post-LN / Pre-LN (per seed) against sqrt(L)
 *   depth_bound.{md,tex}      norm / (d sqrt(ln d)) (Post-LN), norm / (d sqrt(ln d / L)) (Pre-LN)
 *   width_table, width_bound  the same against d
 *   depth_seq2seq_table       the L-L seq2seq models (Figure 3 c, d)
 *   slopes.{md,tex}           log-log slopes ± standard errors (weighted least squares,
 *                             weights from the seed sd) against L and d, with the theory's
 *   lemma2.{md,tex}           E||x^{pre}_l||^2/d against [1 + l/2, 1 + 3l/2] and
 *                             E||x^{post,5}_l||^2/d against 1.5 (deepest model of the depth sweep)
 *   hidden_table.{md,tex}     Lemma 3 Jacobian norm and the (eps, delta) fraction per site
 *   profile_<setting>.{md,tex} every block's W1, W2 (Figure 3 a, b)
 *   timing.{md,tex}           seconds per seed against L and d, with slopes
 *   summary.md                all the Markdown tables under headings
 * and the plot data (each with .meta.json): depth_summary.csv, width_summary.csv,
 * depth_seq2seq_summary.csv, lemma2_summary.csv, profile_<task>_summary.csv.
 * A short summary goes to stdout.  The Lemma 2 layer index l follows the paper
 * (from 1: x^{pre}_1 is the embedding output, x^{pre}_{L+1} the last residual). */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include "lnkit/lnkit.h"
#include "front/front.h"
#include "kit/analysis.h"
#include "kit/kit.h"
#include "kit/quoted.h"


static const char *dir = "results/grad";
static const char *stat_col = "w2_norm_of_mean";
static FILE *summary;  /* summary.md */
static char start_iso[32];
static double t_start;
static int depth_V;     /* V of the depth sweep (the hidden-state CSVs do not repeat it) */
static study_quoted Q; /* values.csv (the numbers results/README.md quotes), claims.csv */

/* One value of values.csv: the name from a format, the text as quoted. */
static void qv(const char *value, const char *namefmt, ...) __attribute__((format(printf, 2, 3)));
static void qv(const char *value, const char *namefmt, ...)
{
    char name[200];
    va_list ap;
    va_start(ap, namefmt);
    vsnprintf(name, sizeof name, namefmt, ap);
    va_end(ap);
    quoted_value(&Q, name, "%s", value);
}

/* x to 2 significant digits, fixed point (0.056, 0.43, 4.8, 62, 14.5 -> 15). */
static const char *f2(double x)
{
    static char buf[8][32];
    static int k;
    k = (k + 1) % 8;
    int dec = x != 0 ? 1 - (int)floor(log10(fabs(x))) : 2;
    if (dec < 0)
        dec = 0;
    snprintf(buf[k], sizeof buf[k], "%.*f", dec, x);
    return buf[k];
}

/* "lo-hi" of v[0..n-1] with dec decimals (ratios near 1). */
static const char *range_dec(const double *v, int n, int dec)
{
    static char buf[4][64];
    static int k;
    k = (k + 1) % 4;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    snprintf(buf[k], sizeof buf[k], "%.*f-%.*f", dec, lo, dec, hi);
    return buf[k];
}

/* "lo-hi" of v[0..n-1], each to 2 significant digits. */
static const char *range2(const double *v, int n)
{
    static char buf[4][64];
    static int k;
    k = (k + 1) % 4;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    snprintf(buf[k], sizeof buf[k], "%s-%s", f2(lo), f2(hi));
    return buf[k];
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static const char *pth(const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static int col(const lnk_csvdata *t, const char *name)
{
    int j = lnk_csvdata_col(t, name);
    if (j < 0)
        fail("%s: no column '%s'", t->what, name);
    return j;
}

static double num(const lnk_csvdata *t, size_t r, int j)
{
    double v;
    CK(lnk_csvdata_num(t, r, j, &v));
    return v;
}

/* Series: 0 theorem Post-LN, 1 theorem Pre-LN, 2 realistic Post-LN, 3 realistic Pre-LN. */
enum { NS = 4 };
static const char *const s_name[NS] = {"theorem Post-LN", "theorem Pre-LN", "realistic Post-LN",
                                       "realistic Pre-LN"};
static const char *const s_id[NS] = {"theorem_post", "theorem_pre", "realistic_post",
                                     "realistic_pre"};

static int series_of(const lnk_csvdata *t, size_t r)
{
    const char *s = lnk_csvdata_str(t, r, col(t, "setting"));
    const char *p = lnk_csvdata_str(t, r, col(t, "norm_pos"));
    int si = strcmp(s, "theorem") == 0 ? 0 : strcmp(s, "realistic") == 0 ? 1 : -1;
    int pi = strcmp(p, "post") == 0 ? 0 : strcmp(p, "pre") == 0 ? 1 : -1;
    if (si < 0 || pi < 0)
        fail("%s: data row %zu: setting '%s', norm_pos '%s' not known", t->what, r + 1, s, p);
    return 2 * si + pi;
}

/* One cell of a sweep: values over seeds of one series at one x. */
typedef struct {
    int n, cap;
    double *v, *sec;
    int *seed;
    const char *key;   /* the configuration, must be one per cell */
} cellv;

typedef struct {
    int nx;
    int x[128];
    cellv c[NS][128];
    int L, d;          /* the fixed one */
    const char *task;
    int V, batches, tied, seeds; /* the setting the claims name (seeds: the most in a cell) */
    const char *file;  /* the CSV it came from */
} sweepdata;

static int xindex(sweepdata *s, int x)
{
    for (int i = 0; i < s->nx; i++)
        if (s->x[i] == x)
            return i;
    if (s->nx == 128)
        fail("more than 128 sweep values");
    int i = s->nx++;
    while (i > 0 && s->x[i - 1] > x) { /* keep sorted */
        s->x[i] = s->x[i - 1];
        for (int k = 0; k < NS; k++)
            s->c[k][i] = s->c[k][i - 1];
        i--;
    }
    s->x[i] = x;
    for (int k = 0; k < NS; k++)
        memset(&s->c[k][i], 0, sizeof(cellv));
    return i;
}

static void cell_push(cellv *c, double v, double sec, int seed, const char *key, const char *what)
{
    if (c->key && strcmp(c->key, key) != 0)
        fail("%s: two configurations for one table cell:\n  %s\n  %s\n(write them to different "
             "CSVs with grad_norms --out)", what, c->key, key);
    c->key = key;
    for (int i = 0; i < c->n; i++)
        if (c->seed[i] == seed)
            fail("%s: seed %d twice for %s", what, seed, key);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->v = realloc(c->v, sizeof(double) * c->cap);
        c->sec = realloc(c->sec, sizeof(double) * c->cap);
        c->seed = realloc(c->seed, sizeof(int) * c->cap);
        if (!c->v || !c->sec || !c->seed)
            fail("out of memory");
    }
    c->v[c->n] = v;
    c->sec[c->n] = sec;
    c->seed[c->n++] = seed;
}

static void cell_ms(const cellv *c, double *m, double *sd)
{
    lnk_mean_sd(c->v, 1, (size_t)c->n, m, sd);
}

/* Load a depth or width CSV (x = L or d), the values of column vcol (NULL: the statistic). */
static int load_sweep(const char *name, int by_L, const char *vcol, lnk_csvdata *t,
                      sweepdata *s)
{
    if (!exists(pth(name)))
        return 0;
    CK(lnk_csvdata_read(pth(name), t));
    study_input(pth(name));
    memset(s, 0, sizeof *s);
    s->file = name;
    int jx = col(t, by_L ? "L" : "d"), jo = col(t, by_L ? "d" : "L"),
        jv = col(t, vcol ? vcol : stat_col), js = col(t, "seed"), jt = col(t, "seconds"),
        jk = col(t, "key"), jtask = col(t, "task"), jV = col(t, "V"), jb = col(t, "batches"),
        jtie = col(t, "tie_output");
    if (t->nrow) {
        s->V = (int)num(t, 0, jV);
        s->batches = (int)num(t, 0, jb);
        const char *tie = lnk_csvdata_str(t, 0, jtie);
        s->tied = strcmp(tie, "1") == 0 || strcmp(tie, "true") == 0;
    }
    for (size_t r = 0; r < t->nrow; r++) {
        int sr = series_of(t, r), xi = xindex(s, (int)num(t, r, jx));
        int other = (int)num(t, r, jo);
        const char *task = lnk_csvdata_str(t, r, jtask);
        if (!s->task)
            s->task = task;
        else if (strcmp(task, s->task) != 0)
            fail("%s: tasks '%s' and '%s' mixed; one task per CSV", t->what, s->task, task);
        if (by_L)
            s->d = s->d && s->d != other ? -1 : other;
        else
            s->L = s->L && s->L != other ? -1 : other;
        cell_push(&s->c[sr][xi], num(t, r, jv), num(t, r, jt), (int)num(t, r, js),
                  lnk_csvdata_str(t, r, jk), t->what);
    }
    if (s->d < 0 || s->L < 0)
        fail("%s: the fixed %s varies between rows", t->what, by_L ? "d" : "L");
    for (int k = 0; k < NS; k++)
        for (int i = 0; i < s->nx; i++)
            s->seeds = s->c[k][i].n > s->seeds ? s->c[k][i].n : s->seeds;
    return 1;
}

static void free_sweep(sweepdata *s)
{
    for (int k = 0; k < NS; k++)
        for (int i = 0; i < s->nx; i++)
            free(s->c[k][i].v), free(s->c[k][i].sec), free(s->c[k][i].seed);
}

/* ------------------------------------------------------------ output */

static void write_table(const lnk_table *tb, const char *base, const char *title,
                        const char *caption)
{
    char md[256], tex[256];
    snprintf(md, sizeof md, "%s.md", base);
    snprintf(tex, sizeof tex, "%s.tex", base);
    lnk_afile a;
    CK(lnk_afile_open(&a, pth(md)));
    CK(lnk_table_write_md(tb, a.f));
    CK(lnk_afile_commit(&a));
    CK(lnk_afile_open(&a, pth(tex)));
    CK(lnk_table_write_tex(tb, a.f, caption, NULL));
    CK(lnk_afile_commit(&a));
    if (summary) {
        fprintf(summary, "## %s\n\n%s\n\n", title, caption);
        CK(lnk_table_write_md(tb, summary));
        fputc('\n', summary);
    }
}

/* Plot data: a CSV (kit: out_csv) with its .meta.json naming what it holds
 * and the input CSV beside it that it summarises: the input's configuration
 * (its first point; the key column of its rows gives each row's own) and
 * its parameters and seeds (its sidecar without the versions, times and
 * command line of its run: this sidecar's own are the summary's). */
static void oc_close(out_csv *o, const char *what, const char *input)
{
    char side[1100];
    snprintf(side, sizeof side, "%s", pth(input));
    char *dot = strrchr(side, '.');
    if (dot && !strcmp(dot, ".csv"))
        *dot = '\0';
    strncat(side, ".meta.json", sizeof side - strlen(side) - 1);
    /* an input without its sidecar (rows from elsewhere): no configuration to record */
    json_t *in = exists(side) ? json_load_file(side, 0, NULL) : NULL;
    int has = in != NULL;
    if (exists(side) && (!in || !json_is_object(in)))
        fail("%s: not a JSON object (the sidecar of the input %s)", side, input);
    lnk_config cfg;
    lnk_config_default(&cfg);
    json_t *jc = in ? json_object_get(in, "config") : NULL;
    char *txt = jc && json_is_object(jc) ? json_dumps(jc, 0) : NULL;
    if (in && !txt)
        fail("%s: no configuration object 'config'", side);
    if (txt) {
        CK(lnk_config_parse_json(&cfg, txt, side));
        CK(lnk_config_finalize(&cfg));
        free(txt);
    }
    static const char *const drop[] = {"config", "seed", "versions", "start_time",
                                       "wall_seconds", "threads", "ranks", "command_line", "cwd",
                                       "blas", "blas_kernel", "blas_kernel_choice", "inputs",
                                       "named_seeds", "git_commit", "command_line_bytes_hex",
                                       "cwd_bytes_hex", "blas_kernel_choice_bytes_hex"};
    for (size_t k = 0; in && k < sizeof drop / sizeof drop[0]; k++)
        json_object_del(in, drop[k]);
    lnk_meta *x = lnk_meta_alloc();
    if (!x)
        die();
    lnk_meta_str(x, "study", "grad_table (analysis of grad_norms)");
    lnk_meta_str(x, "what", what);
    lnk_meta_str(x, "statistic", stat_col);
    lnk_meta_str(x, "input", input);
    lnk_meta_str(x, "config_note", in ? "config: the input's first point; the input's rows hold "
                                        "every configuration in their key column"
                                      : "the input has no sidecar: no configuration recorded");
    lnk_meta_json(x, "input_parameters", in ? in : json_null());
    csv_close(o, has ? &cfg : NULL, x, start_iso, t_start);
    lnk_meta_free(x);
    lnk_config_clear(&cfg);
}

static void pm(char *b, size_t n, const cellv *c)
{
    double m, sd;
    cell_ms(c, &m, &sd);
    lnk_fmt_pm(b, n, m, sd);
}

/* ------------------------------------------------------------ slopes */

typedef struct {
    lnk_table *tb;
} slopes;

/* The setting a claim holds in: series k (its init) of sweep s, with what is
 * fixed; `fixed` e.g. "d = 64". */
static const char *setting_of(const sweepdata *s, int st, const char *fixed)
{
    static char buf[4][400];
    static int q;
    q = (q + 1) % 4;
    snprintf(buf[q], sizeof buf[q], "%s, %s, output %s, V = %d, %s, %s over %d batches, %d seeds",
             s->task,
             st ? "realistic init (Xavier-uniform, h = 4, d_ff = 4d, label smoothing 0.1)"
                : "theorem init (Wq = Wk = 0, Wo = I, Xavier-normal, h = 1, d_ff = d)",
             s->tied ? "tied to the embedding" : "untied", s->V, fixed,
             strcmp(stat_col, "w2_mean_norm") == 0 ? "mean of the per-batch norms"
                                                  : "norm of the mean gradient",
             s->batches, s->seeds);
    return buf[q];
}

/* A fit and the x range it covers. */
typedef struct {
    int ok;
    lnk_fit f;
    int xlo, xhi;
} fitres;

/* Fit the series means against x (x[i] >= xmin) with weights from the seed sd. */
static int fit_cells(const sweepdata *s, const cellv *cs, int xmin, fitres *fr)
{
    double x[128], y[128], se[128];
    int n = 0;
    fr->ok = 0;
    for (int i = 0; i < s->nx; i++) {
        if (s->x[i] < xmin || cs[i].n == 0)
            continue;
        double m, sd;
        cell_ms(&cs[i], &m, &sd);
        if (!(m > 0))
            continue;
        x[n] = s->x[i];
        y[n] = m;
        /* a single seed has no sd: fall back to an unweighted fit below */
        se[n] = cs[i].n > 1 && sd > 0 ? sd / sqrt((double)cs[i].n) : 0;
        n++;
    }
    int weighted = 1;
    for (int i = 0; i < n; i++)
        weighted &= se[i] > 0;
    if (n < (weighted ? 2 : 3))
        return 0;
    CK(lnk_fit_power(x, y, weighted ? se : NULL, (size_t)n, &fr->f));
    fr->ok = 1;
    fr->xlo = (int)x[0];
    fr->xhi = (int)x[n - 1];
    return 1;
}

/* The verdict on a slope against its theory: "consistent with T (z se)"
 * within 2 standard errors, "z se from T" beyond. */
static const char *verdict(const lnk_fit *f, double theory, const char *theory_txt)
{
    static char buf[4][96];
    static int q;
    q = (q + 1) % 4;
    double z = fabs(f->slope - theory) / f->se_slope;
    if (z <= 2)
        snprintf(buf[q], sizeof buf[q], "consistent with %s (%.1f se)", theory_txt, z);
    else
        snprintf(buf[q], sizeof buf[q], "%.1f se from %s", z, theory_txt);
    return buf[q];
}

/* The goodness of a fit in words: chi^2/dof, and "poor fit" where
 * P(chi^2 >= observed) < 0.01 (lnk_fit_pvalue). */
static const char *goodness(const lnk_fit *f)
{
    static char buf[4][96];
    static int q;
    q = (q + 1) % 4;
    double p = lnk_fit_pvalue(f);
    if (f->dof <= 0)
        snprintf(buf[q], sizeof buf[q], "2 points, no goodness of fit");
    else if (p < 0.01)
        snprintf(buf[q], sizeof buf[q], "chi2/dof %.1f, p = %.1g: a poor fit",
                 f->chisq / f->dof, p);
    else
        snprintf(buf[q], sizeof buf[q], "chi2/dof %.1f, p = %.2f", f->chisq / f->dof, p);
    return buf[q];
}

/* A slope as values.csv gives it: KEY_slope "b ± se", KEY_chi2, KEY_dev (|b - theory|/se),
 * KEY_fit (goodness), KEY_verdict, KEY_range "xlo-xhi"; and the claim text
 * "b ± se (se), goodness, X = lo-hi; verdict" into claim (may be NULL). */
static void slope_values(const char *key, const fitres *fr, double theory, const char *theory_txt,
                         const char *xname, char *claim, size_t nclaim)
{
    char b[64], r[32], c[16];
    lnk_fmt_pm(b, sizeof b, fr->f.slope, fr->f.se_slope);
    snprintf(r, sizeof r, "%d-%d", fr->xlo, fr->xhi);
    qv(b, "%s_slope", key);
    snprintf(c, sizeof c, "%.1f", fr->f.dof > 0 ? fr->f.chisq / fr->f.dof : 0.0);
    qv(c, "%s_chi2", key);
    snprintf(c, sizeof c, "%.1f", fabs(fr->f.slope - theory) / fr->f.se_slope);
    qv(c, "%s_dev", key);
    qv(goodness(&fr->f), "%s_fit", key);
    qv(verdict(&fr->f, theory, theory_txt), "%s_verdict", key);
    qv(r, "%s_range", key);
    if (claim)
        snprintf(claim, nclaim, "%s (se), %s, %s = %s; %s", b, goodness(&fr->f), xname, r,
                 verdict(&fr->f, theory, theory_txt));
}

static void slope_row(lnk_table *tb, const char *sweep, const char *series, const char *what,
                      const fitres *fr, double theory, const char *theory_txt)
{
    const lnk_fit *f = &fr->f;
    int r = lnk_table_new_row(tb);
    if (r < 0)
        die();
    char b[64];
    lnk_table_set(tb, r, 0, "%s", sweep);
    lnk_table_set(tb, r, 1, "%s", series);
    lnk_table_set(tb, r, 2, "%s", what);
    lnk_fmt_pm(b, sizeof b, f->slope, f->se_slope);
    lnk_table_set(tb, r, 3, "%s", b);
    lnk_table_set(tb, r, 4, "%s", theory_txt);
    lnk_table_set(tb, r, 5, "%.1f", fabs(f->slope - theory) / f->se_slope);
    lnk_table_set(tb, r, 6, "%zu", f->n);
    lnk_table_set(tb, r, 7, "%.2f", f->dof > 0 ? f->chisq / f->dof : 0.0);
    lnk_table_set(tb, r, 8, "%.2g", lnk_fit_pvalue(f));
    printf("  %-14s %-18s %-28s slope %s (theory %s)\n", sweep, series, what, b, theory_txt);
}

/* A table's header: the swept variable (xname, aligned xalign), then each
 * setting with a point of at least min_n seeds (have[k] says which), right-
 * aligned.  Returns the columns. */
static int setting_head(const sweepdata *s, int min_n, const char *xname, char xalign,
                        const char **head, char *align, int *have)
{
    int nc = 1;
    head[0] = xname;
    align[0] = xalign;
    for (int k = 0; k < NS; k++) {
        have[k] = 0;
        for (int i = 0; i < s->nx; i++)
            have[k] |= s->c[k][i].n >= min_n;
        if (have[k]) {
            head[nc] = s_name[k];
            align[nc++] = 'r';
        }
    }
    align[nc] = 0;
    return nc;
}

/* Successive-point slopes d ln(norm) / d ln(x) between neighbouring x, each
 * a two-point weighted fit (standard error from the two seed means' errors):
 * where a power law fits poorly, these show where the exponent changes. */
static void local_slopes(const sweepdata *s, const char *base, const char *label,
                         const char *xname)
{
    int have[NS];
    const char *head[1 + NS];
    char align[2 + NS];
    int nc = setting_head(s, 2, xname, 'l', head, align, have);
    lnk_table tb;
    CK(lnk_table_init(&tb, nc, head, align));
    for (int i = 0; i + 1 < s->nx; i++) {
        int r = lnk_table_new_row(&tb), c = 1;
        lnk_table_set(&tb, r, 0, "%d-%d", s->x[i], s->x[i + 1]);
        for (int k = 0; k < NS; k++) {
            if (!have[k])
                continue;
            sweepdata two = {0};
            two.nx = 2;
            two.x[0] = s->x[i], two.x[1] = s->x[i + 1];
            two.c[k][0] = s->c[k][i], two.c[k][1] = s->c[k][i + 1];
            fitres fr;
            char b[64] = "";
            if (fit_cells(&two, two.c[k], 0, &fr))
                lnk_fmt_pm(b, sizeof b, fr.f.slope, fr.f.se_slope);
            lnk_table_set(&tb, r, c++, "%s", b);
        }
    }
    char cap[400], name[128], title[160];
    snprintf(cap, sizeof cap, "%s: local log-log slopes of the last-layer ||dL/dW2||_F between "
             "successive %s (two-point fits of the seed means; ± one standard error from the "
             "seeds); %s.", label, xname,
             strcmp(xname, "L") == 0
                 ? "Theorem 1's rates: 0 for Post-LN, -0.5 for Pre-LN"
                 : "Theorem 1's rate d sqrt(ln d) (both) has local slope 1 + 1/(2 ln d), 1.1-1.2 "
                   "here");
    snprintf(name, sizeof name, "%s_local_slopes", base);
    snprintf(title, sizeof title, "%s: local slopes", label);
    write_table(&tb, name, title, cap);
    lnk_table_free(&tb);
}

/* ------------------------------------------------------------ depth */

typedef struct {
    fitres all[NS], tail[NS], ratio[2];
} sweepfits;

/* Values BASE_{post,pre}_realistic_over_theorem: the range over the sweep of
 * the realistic setting's seed mean over the theorem setting's. */
static void realistic_over_theorem(const sweepdata *s, const char *base)
{
    for (int p = 0; p < 2; p++) {
        double v[128];
        int n = 0;
        for (int i = 0; i < s->nx; i++)
            if (s->c[p][i].n && s->c[2 + p][i].n) {
                double mt, mr, sd;
                cell_ms(&s->c[p][i], &mt, &sd);
                cell_ms(&s->c[2 + p][i], &mr, &sd);
                v[n++] = mr / mt;
            }
        if (n)
            qv(range_dec(v, n, 2), "%s_%s_realistic_over_theorem", base, p ? "pre" : "post");
    }
}

/* A sweep's norms table: the swept variable (xname), then mean ± sd for each
 * setting with rows; have[k] says which settings those are. */
static void norms_table(const sweepdata *s, const char *xname, lnk_table *tb, int *have)
{
    const char *head[1 + NS];
    char align[2 + NS];
    int nc = setting_head(s, 1, xname, 'r', head, align, have);
    CK(lnk_table_init(tb, nc, head, align));
    for (int i = 0; i < s->nx; i++) {
        int r = lnk_table_new_row(tb), c = 1;
        lnk_table_set(tb, r, 0, "%d", s->x[i]);
        for (int k = 0; k < NS; k++)
            if (have[k]) {
                char b[64] = "";
                if (s->c[k][i].n)
                    pm(b, sizeof b, &s->c[k][i]);
                lnk_table_set(tb, r, c++, "%s", b);
            }
    }
}

/* The bound-ratio table's header: the swept variable, then each setting
 * with rows over its Theorem 1 rate; right-aligned.  Returns the columns. */
static int bound_head(const char *xname, const int *have, const char **bh, char *align)
{
    int nc = 1;
    bh[0] = xname;
    for (int k = 0; k < NS; k++)
        if (have[k])
            bh[nc++] = k % 2 ? (k < 2 ? "theorem Pre / (d sqrt(ln d / L)) x 1e3"
                                      : "realistic Pre / (d sqrt(ln d / L)) x 1e3")
                             : (k < 2 ? "theorem Post / (d sqrt(ln d)) x 1e3"
                                      : "realistic Post / (d sqrt(ln d)) x 1e3");
    memset(align, 'r', (size_t)nc);
    align[nc] = 0;
    return nc;
}

static void depth_tables(const sweepdata *s, const char *base, const char *label, lnk_table *sl,
                         sweepfits *fits)
{
    memset(fits, 0, sizeof *fits);
    int have[NS], ns = 0;
    lnk_table tb;
    norms_table(s, "L", &tb, have);
    for (int k = 0; k < NS; k++)
        ns += have[k];
    char cap[512], name[128];
    snprintf(cap, sizeof cap, "%s: ||dL/dW2||_F of the last block (%s) against the depth L at "
             "d = %d, "
             "%s task; mean ± sd over seeds.", label, stat_col, s->d, s->task);
    snprintf(name, sizeof name, "%s_table", base);
    write_table(&tb, name, label, cap);
    lnk_table_free(&tb);
    (void)ns;
    /* ranges of the seed means over L, and realistic / theorem per norm position */
    for (int k = 0; k < NS; k++) {
        double v[128];
        int n = 0;
        for (int i = 0; i < s->nx; i++)
            if (s->c[k][i].n) {
                double m, sd;
                cell_ms(&s->c[k][i], &m, &sd);
                v[n++] = m;
            }
        if (n)
            qv(range2(v, n), "%s_%s_norms", base, s_id[k]);
    }
    realistic_over_theorem(s, base);

    /* Post/Pre ratio per seed against sqrt(L) */
    static const char *const rh[] = {"L", "sqrt(L)", "theorem Post/Pre", "theorem ratio/sqrt(L)",
                                     "realistic Post/Pre", "realistic ratio/sqrt(L)"};
    CK(lnk_table_init(&tb, 6, rh, "rrrrrr"));
    double rx[2][128], ry[2][128], rse[2][128];
    int rn[2] = {0, 0};
    for (int i = 0; i < s->nx; i++) {
        int r = lnk_table_new_row(&tb);
        double sq = sqrt((double)s->x[i]);
        lnk_table_set(&tb, r, 0, "%d", s->x[i]);
        lnk_table_set(&tb, r, 1, "%.3f", sq);
        for (int st = 0; st < 2; st++) {
            const cellv *po = &s->c[2 * st][i], *pr = &s->c[2 * st + 1][i];
            double q[1024];
            int n = 0;
            for (int a = 0; a < po->n && n < 1024; a++)
                for (int b = 0; b < pr->n; b++)
                    if (po->seed[a] == pr->seed[b] && pr->v[b] > 0)
                        q[n++] = po->v[a] / pr->v[b];
            char b1[64] = "", b2[64] = "";
            if (n) {
                double m, sd;
                lnk_mean_sd(q, 1, (size_t)n, &m, &sd);
                lnk_fmt_pm(b1, sizeof b1, m, sd);
                lnk_fmt_pm(b2, sizeof b2, m / sq, sd / sq);
                if (n > 1 && sd > 0 && m > 0) {
                    rx[st][rn[st]] = s->x[i];
                    ry[st][rn[st]] = m;
                    rse[st][rn[st]++] = sd / sqrt((double)n);
                }
            }
            lnk_table_set(&tb, r, 2 + 2 * st, "%s", b1);
            lnk_table_set(&tb, r, 3 + 2 * st, "%s", b2);
        }
    }
    for (int st = 0; st < 2; st++) {
        double v[128];
        for (int i = 0; i < rn[st]; i++)
            v[i] = ry[st][i] / sqrt(rx[st][i]);
        if (rn[st])
            qv(range_dec(v, rn[st], 2), "%s_%s_ratio_over_sqrtL", base, st ? "realistic" : "theorem");
    }
    snprintf(cap, sizeof cap, "%s: Post-LN / Pre-LN ratio of the last-layer ||dL/dW2||_F "
             "(per seed, same weights and batches), against sqrt(L); mean ± sd over seeds.",
             label);
    snprintf(name, sizeof name, "%s_ratio", base);
    char title[160];
    snprintf(title, sizeof title, "%s: Post-LN / Pre-LN", label);
    write_table(&tb, name, title, cap);
    lnk_table_free(&tb);

    /* bound ratios */
    double d = s->d, dl = d * sqrt(log(d)), bv[NS][128];
    int bn[NS] = {0};
    const char *bh[1 + NS];
    char align[2 + NS];
    int nc = bound_head("L", have, bh, align);
    CK(lnk_table_init(&tb, nc, bh, align));
    for (int i = 0; i < s->nx; i++) {
        int r = lnk_table_new_row(&tb), c = 1;
        lnk_table_set(&tb, r, 0, "%d", s->x[i]);
        for (int k = 0; k < NS; k++)
            if (have[k]) {
                char b[64] = "";
                if (s->c[k][i].n) {
                    double m, sd, sc = (k % 2 ? dl / sqrt((double)s->x[i]) : dl) / 1e3;
                    cell_ms(&s->c[k][i], &m, &sd);
                    lnk_fmt_pm(b, sizeof b, m / sc, sd / sc);
                    bv[k][bn[k]++] = m / sc;
                }
                lnk_table_set(&tb, r, c++, "%s", b);
            }
    }
    snprintf(cap, sizeof cap, "%s: the last-layer norm divided by Theorem 1's rate, d sqrt(ln d) "
             "for Post-LN and d sqrt(ln d / L) for Pre-LN (d = %d), times 1000; bounded in L if "
             "the rate holds, constant if it is tight.", label, s->d);
    snprintf(name, sizeof name, "%s_bound", base);
    snprintf(title, sizeof title, "%s: ratio to the bound", label);
    write_table(&tb, name, title, cap);
    lnk_table_free(&tb);
    for (int k = 0; k < NS; k++)
        if (bn[k])
            qv(range2(bv[k], bn[k]), "%s_%s_bound", base, s_id[k]);

    /* slopes: all L, and the deeper half (L >= the median L) */
    char fixed[64];
    snprintf(fixed, sizeof fixed, "d = %d", s->d);
    for (int k = 0; k < NS; k++) {
        if (!have[k])
            continue;
        int pre = k % 2, st = k / 2;
        const char *th = pre ? "-0.5" : "0";
        char key[96], claim[400], cname[300];
        if (fit_cells(s, s->c[k], 0, &fits->all[k])) {
            slope_row(sl, label, s_name[k], "norm vs L, all L", &fits->all[k], pre ? -0.5 : 0,
                      th);
            snprintf(key, sizeof key, "%s_%s_all", base, s_id[k]);
            slope_values(key, &fits->all[k], pre ? -0.5 : 0, pre ? "-1/2" : "0 (flat)", "L",
                         claim, sizeof claim);
            snprintf(cname, sizeof cname, "%s: %s last-layer ||dL/dW2||_F against L, log-log "
                     "slope (Theorem 1: %s)", label, s_name[k], pre ? "L^(-1/2)" : "flat");
            quoted_claim(&Q, cname, claim, setting_of(s, st, fixed), s->file);
        }
        if (s->nx > 4 && fit_cells(s, s->c[k], s->x[s->nx / 2], &fits->tail[k])) {
            char w[64];
            snprintf(w, sizeof w, "norm vs L, L >= %d", s->x[s->nx / 2]);
            slope_row(sl, label, s_name[k], w, &fits->tail[k], pre ? -0.5 : 0, th);
            snprintf(key, sizeof key, "%s_%s_tail", base, s_id[k]);
            slope_values(key, &fits->tail[k], pre ? -0.5 : 0, pre ? "-1/2" : "0 (flat)", "L",
                         claim, sizeof claim);
            if (pre) {
                snprintf(cname, sizeof cname, "%s: %s last-layer ||dL/dW2||_F against L, "
                         "log-log slope over the deeper half", label, s_name[k]);
                quoted_claim(&Q, cname, claim, setting_of(s, st, fixed), s->file);
            }
        }
    }
    for (int st = 0; st < 2; st++) {
        if (rn[st] < 2)
            continue;
        fitres *fr = &fits->ratio[st];
        CK(lnk_fit_power(rx[st], ry[st], rse[st], (size_t)rn[st], &fr->f));
        fr->ok = 1;
        fr->xlo = (int)rx[st][0];
        fr->xhi = (int)rx[st][rn[st] - 1];
        slope_row(sl, label, st ? "realistic" : "theorem", "Post/Pre ratio vs L", fr, 0.5, "0.5");
        char key[96], claim[400], cname[200];
        snprintf(key, sizeof key, "%s_%s_ratio", base, st ? "realistic" : "theorem");
        slope_values(key, fr, 0.5, "1/2", "L", claim, sizeof claim);
        snprintf(cname, sizeof cname, "%s: %s Post-LN / Pre-LN ratio against L, log-log slope "
                 "(Theorem 1: L^(1/2))", label, st ? "realistic" : "theorem");
        quoted_claim(&Q, cname, claim, setting_of(s, st, fixed), s->file);
    }
}

static void summary_csv(const sweepdata *s, const char *name, const char *xname, int depth)
{
    char input[128]; /* NAME_summary.csv summarises NAME.csv */
    snprintf(input, sizeof input, "%s", name);
    char *suffix = strstr(input, "_summary.csv");
    if (suffix)
        strcpy(suffix, ".csv");
    /* x, per series mean/sd, and the theory curves anchored at the first x */
    const char *head[1 + 5 * NS];
    char hb[2 * NS][48];
    int n = 0;
    head[n++] = xname;
    for (int k = 0; k < NS; k++) {
        snprintf(hb[2 * k], 48, "%s_mean", s_id[k]);
        snprintf(hb[2 * k + 1], 48, "%s_sd", s_id[k]);
        head[n++] = hb[2 * k];
        head[n++] = hb[2 * k + 1];
    }
    /* theory: depth: Pre-LN L^{-1/2}, Post-LN flat; width: d sqrt(ln d) (both) */
    static char th[NS][48], bh[2 * NS][48];
    for (int k = 0; k < NS; k++) {
        snprintf(th[k], 48, "%s_theory", s_id[k]);
        head[n++] = th[k];
    }
    /* the bound tables' normalisation: x 1e3 / (d sqrt(ln d)) (Post-LN),
     * x 1e3 / (d sqrt(ln d / L)) (Pre-LN) */
    for (int k = 0; k < NS; k++) {
        snprintf(bh[2 * k], 48, "%s_bound_mean", s_id[k]);
        snprintf(bh[2 * k + 1], 48, "%s_bound_sd", s_id[k]);
        head[n++] = bh[2 * k];
        head[n++] = bh[2 * k + 1];
    }
    out_csv o;
    csv_open(&o, dir, name, head, n);
    double anchor[NS];
    for (int k = 0; k < NS; k++) {
        anchor[k] = NAN;
        for (int i = 0; i < s->nx && isnan(anchor[k]); i++)
            if (s->c[k][i].n) {
                double m, sd;
                cell_ms(&s->c[k][i], &m, &sd);
                double x0 = s->x[i];
                /* y = anchor * g(x), g(x0) = 1 */
                anchor[k] = depth ? (k % 2 ? m * sqrt(x0) : m) : m / (x0 * sqrt(log(x0)));
            }
    }
    for (int i = 0; i < s->nx; i++) {
        CK(lnk_csv_int(&o.c, s->x[i]));
        for (int k = 0; k < NS; k++) {
            double m = 0, sd = 0;
            if (s->c[k][i].n)
                cell_ms(&s->c[k][i], &m, &sd);
            csv_num_or_empty(&o, m, s->c[k][i].n > 0);
            csv_num_or_empty(&o, sd, s->c[k][i].n > 0);
        }
        for (int k = 0; k < NS; k++) {
            double x = s->x[i];
            double g = depth ? (k % 2 ? 1 / sqrt(x) : 1) : x * sqrt(log(x));
            csv_num_or_empty(&o, anchor[k] * g, !isnan(anchor[k]));
        }
        for (int k = 0; k < NS; k++) {
            double m = 0, sd = 0, L = depth ? s->x[i] : s->L, d = depth ? s->d : s->x[i];
            double sc = d * sqrt(log(d) / (k % 2 ? L : 1)) / 1e3;
            if (s->c[k][i].n)
                cell_ms(&s->c[k][i], &m, &sd);
            csv_num_or_empty(&o, m / sc, s->c[k][i].n > 0);
            csv_num_or_empty(&o, sd / sc, s->c[k][i].n > 0);
        }
        CK(lnk_csv_end_row(&o.c));
    }
    oc_close(&o, depth ? "last-layer norm per L: mean, sd over seeds; theory curves anchored at "
                         "the smallest L (Pre-LN L^-1/2, Post-LN flat); the norm over Theorem 1's "
                         "rate x 1e3 (bound columns, as in the _bound table)"
                       : "last-layer norm per d: mean, sd over seeds; theory d sqrt(ln d) anchored "
                         "at the smallest d; the norm over Theorem 1's rate x 1e3 (bound columns, "
                         "as in width_bound)", input);
}

/* ------------------------------------------------------------ plot scripts
 * Each plot is a gnuplot script NAME.gp beside its data, rendered by
 * `gnuplot NAME.gp` in this directory (studies/scripts/study_grad.sh) into
 * NAME.png.  Fitted lines are the fits of the slopes table, drawn over the
 * range they were fitted on; theory lines are anchored at the first point. */

static FILE *gp_open(lnk_afile *a, const char *name, int w, int h)
{
    char f[128];
    snprintf(f, sizeof f, "%s.gp", name);
    CK(lnk_afile_open(a, pth(f)));
    study_track(a);
    fprintf(a->f,
            "# %s.png from the CSVs beside this script; written by grad_table (do not edit):\n"
            "# run `gnuplot %s.gp` in this directory.\n"
            "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
            "    set terminal pngcairo size %d,%d noenhanced font \"sans,11\" linewidth 1.3\n"
            "} else {\n"
            "    set terminal png size %d,%d noenhanced\n"
            "}\n"
            "set output '%s.png'\n"
            "set datafile separator comma\n"
            "set datafile missing \"\"\n"
            "set grid\n"
            "set samples 400\n"
            "# Post-LN red, Pre-LN blue; dashed: theory; solid: fitted; dotted: fitted on the "
            "deeper half\n"
            "set style line 1 lc rgb '#c0392b' pt 7 ps 0.9\n"
            "set style line 2 lc rgb '#2c6fbb' pt 5 ps 0.9\n"
            "set style line 3 lc rgb '#e67e22' pt 6 ps 0.9\n"
            "set style line 4 lc rgb '#16a085' pt 4 ps 0.9\n"
            "set style line 11 lc rgb '#c0392b' dt 2\n"
            "set style line 12 lc rgb '#2c6fbb' dt 2\n"
            "set style line 21 lc rgb '#c0392b' lw 1.5\n"
            "set style line 22 lc rgb '#2c6fbb' lw 1.5\n"
            "set style line 31 lc rgb '#c0392b' dt 3 lw 2\n"
            "set style line 32 lc rgb '#2c6fbb' dt 3 lw 2\n",
            name, name, w, h, w, h, name);
    return a->f;
}

static void gp_close(lnk_afile *a)
{
    study_untrack(a);
    CK(lnk_afile_commit(a));
}

/* ", \\\n     A x^b on [lo, hi] with lines ls LS title '...'" for a fit. */
static void gp_fit(FILE *f, const fitres *fr, int ls, const char *who, const char *xname)
{
    if (!fr->ok)
        return;
    char b[64];
    lnk_fmt_pm(b, sizeof b, fr->f.slope, fr->f.se_slope);
    fprintf(f, ", \\\n     (x >= %d && x <= %d ? %.8g * x**(%.8g) : 1/0) with lines ls %d "
            "title \"%s fit, %s = %d-%d: slope %s, chi2/dof %.1f\"",
            fr->xlo, fr->xhi, exp(fr->f.intercept), fr->f.slope, ls, who, xname, fr->xlo,
            fr->xhi, b, fr->f.dof > 0 ? fr->f.chisq / fr->f.dof : 0.0);
}

static void gp_xtics(FILE *f, const sweepdata *s)
{
    fprintf(f, "set xtics (");
    for (int i = 0; i < s->nx; i++)
        fprintf(f, "%s%d", i ? ", " : "", s->x[i]);
    fprintf(f, ")\nset xrange [%g:%g]\n", s->x[0] / 1.2, s->x[s->nx - 1] * 1.2);
}

/* A log y range from the lowest mean - sd to the highest mean + sd, with room
 * below (depth: the key) or above (width) by the factor room. */
static void gp_yrange(FILE *f, const sweepdata *s, double room)
{
    double lo = INFINITY, hi = 0;
    for (int k = 0; k < NS; k++)
        for (int i = 0; i < s->nx; i++)
            if (s->c[k][i].n) {
                double m, sd;
                cell_ms(&s->c[k][i], &m, &sd);
                lo = fmin(lo, m - sd > 0 ? m - sd : m / 2);
                hi = fmax(hi, m + sd);
            }
    if (hi > 0)
        fprintf(f, "set yrange [%.3g:%.3g]\n", room > 1 ? lo / 1.2 : lo / 4, hi * 1.2);
}

/* depth.png / depth_seq2seq.png: log-log, one panel per setting. */
static void depth_gp(const sweepdata *s, const sweepfits *fits, const char *base, int seq2seq)
{
    lnk_afile a;
    FILE *f = gp_open(&a, base, 1400, 620);
    fprintf(f, "set multiplot layout 1,2 title \"Last-layer ||dL/dW2||_F against depth L (%s, "
            "d = %d, V = %d, output tied to the embedding), mean ± sd over %d seeds; log-log\"\n",
            seq2seq ? "L-L seq2seq, Figure 3 c, d" : "cls encoder", s->d, s->V, s->seeds);
    fprintf(f, "set logscale xy\nset key bottom left font \",9\"\n");
    gp_xtics(f, s);
    gp_yrange(f, s, 1.0);
    fprintf(f, "set xlabel \"L (%s)\"\nset ylabel \"||dL/dW2||_F\"\n",
            seq2seq ? "blocks per stack" : "blocks");
    for (int st = 0; st < 2; st++) {
        const char *sn = st ? "realistic" : "theorem";
        fprintf(f, "set title \"%s setting\"\n", sn);
        fprintf(f, "plot '%s_summary.csv' using \"L\":\"%s_post_mean\":\"%s_post_sd\" with "
                "yerrorlines ls 1 title \"Post-LN\", \\\n"
                "     '' using \"L\":\"%s_post_theory\" with lines ls 11 title \"Post-LN theory: "
                "flat\"", base, sn, sn, sn);
        gp_fit(f, &fits->all[2 * st], 21, "Post-LN", "L");
        fprintf(f, ", \\\n     '%s_summary.csv' using \"L\":\"%s_pre_mean\":\"%s_pre_sd\" with "
                "yerrorlines ls 2 title \"Pre-LN\", \\\n"
                "     '' using \"L\":\"%s_pre_theory\" with lines ls 12 title \"Pre-LN theory: "
                "L^(-1/2)\"", base, sn, sn, sn);
        gp_fit(f, &fits->all[2 * st + 1], 22, "Pre-LN", "L");
        gp_fit(f, &fits->tail[2 * st + 1], 32, "Pre-LN", "L");
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\n");
    gp_close(&a);
}

/* width.png: log-log norms per setting, and the width_bound normalisation. */
static void width_gp(const sweepdata *s, const fitres *fits)
{
    lnk_afile a;
    FILE *f = gp_open(&a, "width", 1900, 620);
    fprintf(f, "set multiplot layout 1,3 title \"Last-layer ||dL/dW2||_F against width d (cls, "
            "L = %d, V = %d, output tied to the embedding), mean ± sd over %d seeds\"\n",
            s->L, s->V, s->seeds);
    fprintf(f, "set logscale xy\nset key bottom right font \",9\"\n");
    gp_xtics(f, s);
    gp_yrange(f, s, 1.0);
    fprintf(f, "set xlabel \"d\"\nset ylabel \"||dL/dW2||_F\"\n");
    for (int st = 0; st < 2; st++) {
        const char *sn = st ? "realistic" : "theorem";
        fprintf(f, "set title \"%s setting (dashed: d sqrt(ln d) through the first point)\"\n",
                sn);
        fprintf(f, "plot 'width_summary.csv' using \"d\":\"%s_post_mean\":\"%s_post_sd\" with "
                "yerrorlines ls 1 title \"Post-LN\", \\\n"
                "     '' using \"d\":\"%s_post_theory\" with lines ls 11 title \"Post-LN theory: "
                "d sqrt(ln d)\"", sn, sn, sn);
        gp_fit(f, &fits[2 * st], 21, "Post-LN", "d");
        fprintf(f, ", \\\n     'width_summary.csv' using \"d\":\"%s_pre_mean\":\"%s_pre_sd\" "
                "with yerrorlines ls 2 title \"Pre-LN\", \\\n"
                "     '' using \"d\":\"%s_pre_theory\" with lines ls 12 title \"Pre-LN theory: "
                "d sqrt(ln d / L)\"", sn, sn, sn);
        gp_fit(f, &fits[2 * st + 1], 22, "Pre-LN", "d");
        fprintf(f, "\n");
    }
    fprintf(f, "set title \"norm / Theorem 1's rate x 1e3 (width_bound)\"\n"
            "unset logscale y\nset yrange [0:*]\nset key top right font \",9\"\n"
            "set ylabel \"x 1e3: Post-LN / (d sqrt(ln d)), Pre-LN / (d sqrt(ln d / L))\"\n");
    fprintf(f, "plot 'width_summary.csv' using \"d\":\"theorem_post_bound_mean\":"
            "\"theorem_post_bound_sd\" with yerrorlines ls 1 title \"theorem Post-LN\", \\\n"
            "     '' using \"d\":\"theorem_pre_bound_mean\":\"theorem_pre_bound_sd\" with "
            "yerrorlines ls 2 title \"theorem Pre-LN\", \\\n"
            "     '' using \"d\":\"realistic_post_bound_mean\":\"realistic_post_bound_sd\" with "
            "yerrorlines ls 3 dt 4 title \"realistic Post-LN\", \\\n"
            "     '' using \"d\":\"realistic_pre_bound_mean\":\"realistic_pre_bound_sd\" with "
            "yerrorlines ls 4 dt 4 title \"realistic Pre-LN\"\n");
    fprintf(f, "unset multiplot\n");
    gp_close(&a);
}

/* profile_TASK.png: every block's W1 and W2, encoder and decoder apart. */
static void profile_gp(const char *task, int xmax)
{
    char name[64];
    snprintf(name, sizeof name, "profile_%s", task);
    lnk_afile a;
    FILE *f = gp_open(&a, name, 1400, 1000);
    int s2s = strcmp(task, "seq2seq") == 0;
    fprintf(f, "set multiplot layout 2,2 title \"Per-layer gradient norms at initialisation, "
            "%s, mean ± sd over seeds (Figure 3 a, b)\"\n",
            s2s ? "6-6 seq2seq (encoder blocks, then decoder blocks)" : "6-layer cls encoder");
    fprintf(f, "set xlabel \"block\"\nset xrange [0:%d]\nset yrange [0:*]\n"
            "set offsets 0, 0, graph 0.08, 0\nset key top left font \",9\"\n", xmax + 1);
    for (int st = 0; st < 2; st++)
        for (int w = 1; w <= 2; w++) {
            const char *sn = st ? "realistic" : "theorem";
            fprintf(f, "set title \"%s setting: W%d\"\nset ylabel \"||dL/dW%d||_F\"\n", sn, w,
                    w);
            fprintf(f, "data = 'profile_%s_%s_summary.csv'\n", task, sn);
            const char *stk[2] = {"enc", "dec"};
            fprintf(f, "plot ");
            for (int k = 0; k < (s2s ? 2 : 1); k++)
                for (int p = 0; p < 2; p++)
                    fprintf(f, "%sdata using \"x\":(strcol(\"stack\") eq \"%s\" ? "
                            "column(\"%s_w%d_mean\") : 1/0):\"%s_w%d_sd\":xtic(strcol(\"layer\")) "
                            "with yerrorlines ls %d title \"%s%s\"",
                            k || p ? ", \\\n     " : "", stk[k], p ? "pre" : "post", w,
                            p ? "pre" : "post", w, 1 + p, k ? "" : p ? "Pre-LN" : "Post-LN",
                            "");
            fprintf(f, "\n");
        }
    fprintf(f, "unset multiplot\n");
    gp_close(&a);
}

/* lemma2.png: Pre-LN block inputs against the band, Post-LN FFN sums against the target. */
static void lemma2_gp(void)
{
    lnk_afile a;
    FILE *f = gp_open(&a, "lemma2", 1400, 1000);
    fprintf(f, "data = 'lemma2_summary.csv'\n"
            "set multiplot layout 2,2 title \"Lemma 2: E||x_l||^2/d against the layer l (paper "
            "numbering; l = 1 is the embedding output), mean ± sd over seeds\"\n"
            "set xlabel \"l\"\nset ylabel \"E||x||^2 / d\"\nset key top left\n");
    for (int st = 0; st < 2; st++) {
        const char *sn = st ? "realistic" : "theorem";
        fprintf(f, "set title \"%s setting: Pre-LN block inputs\"\n"
                "plot data using \"l\":\"lo\":\"hi\" with filledcurves lc rgb '#cfe0f3' title "
                "\"band [1 + l/2, 1 + 3l/2]\", \\\n"
                "     data using \"l\":\"%s_pre_mean\":\"%s_pre_sd\" with yerrorlines ls 2 "
                "title \"Pre-LN x^pre_l\"\n", sn, sn, sn);
    }
    for (int st = 0; st < 2; st++) {
        const char *sn = st ? "realistic" : "theorem";
        fprintf(f, "set title \"%s setting: Post-LN FFN residual sums\"\n"
                "plot data using \"l\":\"%s_post5_mean\":\"%s_post5_sd\" with yerrorlines ls 1 "
                "title \"Post-LN x^{post,5}_l\", \\\n"
                "     data using \"l\":\"%s_post5_target\" with lines ls 11 title "
                "\"1 + 2r/(1+r)^2, r = d_ff/d\"\n", sn, sn, sn, sn);
    }
    fprintf(f, "unset multiplot\n");
    gp_close(&a);
}

/* ------------------------------------------------------------ width */

static void width_tables(const sweepdata *s, const sweepdata *loss, lnk_table *sl, fitres *fits)
{
    int have[NS];
    lnk_table tb;
    norms_table(s, "d", &tb, have);
    char cap[512];
    snprintf(cap, sizeof cap, "Width sweep: ||dL/dW2||_F of the last block (%s) against d at "
             "L = %d, %s task; mean ± sd over seeds.", stat_col, s->L, s->task);
    write_table(&tb, "width_table", "Width sweep", cap);
    lnk_table_free(&tb);

    const char *bh[1 + NS];
    char align[2 + NS];
    int nc = bound_head("d", have, bh, align);
    CK(lnk_table_init(&tb, nc, bh, align));
    for (int i = 0; i < s->nx; i++) {
        int r = lnk_table_new_row(&tb), c = 1;
        double d = s->x[i];
        lnk_table_set(&tb, r, 0, "%d", s->x[i]);
        for (int k = 0; k < NS; k++)
            if (have[k]) {
                char b[64] = "";
                if (s->c[k][i].n) {
                    double m, sd, sc = d * sqrt(log(d) / (k % 2 ? s->L : 1)) / 1e3;
                    cell_ms(&s->c[k][i], &m, &sd);
                    lnk_fmt_pm(b, sizeof b, m / sc, sd / sc);
                }
                lnk_table_set(&tb, r, c++, "%s", b);
            }
    }
    snprintf(cap, sizeof cap, "Width sweep: the last-layer norm divided by Theorem 1's rate, "
             "d sqrt(ln d) for Post-LN and d sqrt(ln d / L) for Pre-LN (L = %d), times 1000; "
             "bounded in d if the rate holds, constant if it is tight.", s->L);
    write_table(&tb, "width_bound", "Width sweep: ratio to the bound", cap);
    lnk_table_free(&tb);

    /* the bound's own log-log slope over the same d, for comparison */
    double bx[128], by[128];
    for (int i = 0; i < s->nx; i++) {
        bx[i] = s->x[i];
        by[i] = s->x[i] * sqrt(log((double)s->x[i]));
    }
    lnk_fit bf;
    char bt[64] = "1 (+ log)";
    if (s->nx >= 3) {
        CK(lnk_fit_power(bx, by, NULL, (size_t)s->nx, &bf));
        snprintf(bt, sizeof bt, "%.3f (d sqrt(ln d))", bf.slope);
    }
    char fixed[64], bts[32];
    snprintf(fixed, sizeof fixed, "L = %d", s->L);
    snprintf(bts, sizeof bts, "%.2f", s->nx >= 3 ? bf.slope : 1);
    qv(bts, "width_bound_slope");
    for (int k = 0; k < NS; k++) {
        memset(&fits[k], 0, sizeof fits[k]);
        if (!(have[k] && fit_cells(s, s->c[k], 0, &fits[k])))
            continue;
        double th = s->nx >= 3 ? bf.slope : 1;
        slope_row(sl, "width", s_name[k], "norm vs d", &fits[k], th, bt);
        char key[96], claim[400], cname[300], tt[64];
        snprintf(key, sizeof key, "width_%s", s_id[k]);
        snprintf(tt, sizeof tt, "the bound's %s", bts);
        slope_values(key, &fits[k], th, tt, "d", claim, sizeof claim);
        snprintf(cname, sizeof cname, "Width sweep: %s last-layer ||dL/dW2||_F against d, "
                 "log-log slope (Theorem 1's bound d sqrt(ln d)%s has slope %s here)", s_name[k],
                 k % 2 ? " / sqrt(L)" : "", bts);
        quoted_claim(&Q, cname, claim, setting_of(s, k / 2, fixed), s->file);
    }
    /* the largest local exponent, where Pre-LN first exceeds Post-LN, the ratios to the
     * bound at the ends, and the loss at the ends */
    for (int k = 0; k < NS; k++) {
        if (!have[k])
            continue;
        double best = -INFINITY;
        int at = -1;
        for (int i = 0; i + 1 < s->nx; i++) {
            if (!s->c[k][i].n || !s->c[k][i + 1].n)
                continue;
            double m0, m1, sd;
            cell_ms(&s->c[k][i], &m0, &sd);
            cell_ms(&s->c[k][i + 1], &m1, &sd);
            double b = log(m1 / m0) / log((double)s->x[i + 1] / s->x[i]);
            if (b > best)
                best = b, at = i;
        }
        if (at >= 0) {
            char b[32], r[32];
            snprintf(b, sizeof b, "%.2f", best);
            snprintf(r, sizeof r, "%d-%d", s->x[at], s->x[at + 1]);
            qv(b, "width_%s_local_max", s_id[k]);
            qv(r, "width_%s_local_max_at", s_id[k]);
        }
        for (int e = 0; e < 2; e++) {
            int i = e ? s->nx - 1 : 0;
            if (!s->c[k][i].n)
                continue;
            double m, sd, sc = s->x[i] * sqrt(log((double)s->x[i]) / (k % 2 ? s->L : 1)) / 1e3;
            cell_ms(&s->c[k][i], &m, &sd);
            qv(f2(m / sc), "width_%s_bound_%s", s_id[k], e ? "last" : "first");
            if (loss && loss->nx == s->nx && loss->c[k][i].n) {
                cell_ms(&loss->c[k][i], &m, &sd);
                char b[32];
                snprintf(b, sizeof b, "%.1f", m);
                qv(b, "width_%s_loss_%s", s_id[k], e ? "last" : "first");
            }
        }
        double v[128];
        int n = 0;
        for (int i = 0; i < s->nx; i++)
            if (s->c[k][i].n) {
                double m, sd, sc = s->x[i] * sqrt(log((double)s->x[i]) / (k % 2 ? s->L : 1)) / 1e3;
                cell_ms(&s->c[k][i], &m, &sd);
                v[n++] = m / sc;
            }
        qv(range2(v, n), "width_%s_bound", s_id[k]);
        if (loss && loss->nx == s->nx) {
            n = 0;
            for (int i = 0; i < s->nx; i++)
                if (loss->c[k][i].n) {
                    double m, sd;
                    cell_ms(&loss->c[k][i], &m, &sd);
                    v[n++] = m;
                }
            if (n) {
                double lo = INFINITY, hi = -INFINITY;
                for (int i = 0; i < n; i++)
                    lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
                char b[48];
                snprintf(b, sizeof b, "%.1f-%.1f", lo, hi);
                qv(b, "width_%s_loss", s_id[k]);
            }
        }
    }
    realistic_over_theorem(s, "width");
    for (int st = 0; st < 2; st++) {
        int first = -1;
        for (int i = 0; i < s->nx && first < 0; i++) {
            double mp, mq, sd;
            if (!s->c[2 * st][i].n || !s->c[2 * st + 1][i].n)
                continue;
            cell_ms(&s->c[2 * st][i], &mp, &sd);
            cell_ms(&s->c[2 * st + 1][i], &mq, &sd);
            if (mq > mp)
                first = s->x[i];
        }
        char b[32];
        snprintf(b, sizeof b, "%d", first);
        if (first > 0)
            qv(b, "width_%s_pre_exceeds_post_from", st ? "realistic" : "theorem");
    }
}

/* ------------------------------------------------------------ timing */

static void timing_table(const sweepdata *dep, const sweepdata *wid)
{
    static const char *const h[] = {"sweep", "L", "d", "theorem s/seed", "realistic s/seed"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 5, h, "lrrrr"));
    const sweepdata *sw[2] = {dep, wid};
    double fx[2][2][128], fy[2][2][128];
    int fn[2][2] = {{0, 0}, {0, 0}};
    for (int w = 0; w < 2; w++) {
        const sweepdata *s = sw[w];
        if (!s)
            continue;
        for (int i = 0; i < s->nx; i++) {
            int r = lnk_table_new_row(&tb);
            lnk_table_set(&tb, r, 0, "%s", w ? "width" : "depth");
            lnk_table_set(&tb, r, 1, "%d", w ? s->L : s->x[i]);
            lnk_table_set(&tb, r, 2, "%d", w ? s->x[i] : s->d);
            for (int st = 0; st < 2; st++) {
                double v[2048];
                int n = 0;
                for (int p = 0; p < 2; p++) {
                    const cellv *c = &s->c[2 * st + p][i];
                    for (int q = 0; q < c->n && n < 2048; q++)
                        v[n++] = c->sec[q];
                }
                if (n) {
                    double m, sd;
                    char b[64];
                    lnk_mean_sd(v, 1, (size_t)n, &m, &sd);
                    lnk_fmt_pm(b, sizeof b, m, sd);
                    lnk_table_set(&tb, r, 3 + st, "%s", b);
                    fx[w][st][fn[w][st]] = s->x[i];
                    fy[w][st][fn[w][st]++] = m;
                }
            }
        }
    }
    write_table(&tb, "timing", "Time per point",
                "Seconds per seed (model initialisation plus all batches' gradients; one BLAS "
                "thread, two sweeps running in parallel on a shared machine), mean ± sd over "
                "Post-LN and Pre-LN and seeds.");
    lnk_table_free(&tb);
    for (int w = 0; w < 2; w++)
        for (int st = 0; st < 2; st++) {
            /* the larger half of the sweep: small sizes are dominated by fixed costs */
            int n = fn[w][st], h0 = n / 2;
            lnk_fit f;
            if (n - h0 >= 3 && lnk_fit_power(fx[w][st] + h0, fy[w][st] + h0, NULL,
                                             (size_t)(n - h0), &f) == LNK_OK) {
                printf("  time per seed grows as %s^%.2f (± %.2f) in the %s setting (%s >= %g)\n",
                       w ? "d" : "L", f.slope, f.se_slope, st ? "realistic" : "theorem",
                       w ? "d" : "L", fx[w][st][h0]);
                char b[64], key[64], r[32];
                lnk_fmt_pm(b, sizeof b, f.slope, f.se_slope);
                if (summary)
                    fprintf(summary, "Time per seed grows as %s^(%s) in the %s setting "
                            "(unweighted fit over %s >= %g).\n\n", w ? "d" : "L", b,
                            st ? "realistic" : "theorem", w ? "d" : "L", fx[w][st][h0]);
                snprintf(key, sizeof key, "timing_%s_%s", w ? "width" : "depth",
                         st ? "realistic" : "theorem");
                qv(b, "%s_slope", key);
                snprintf(r, sizeof r, "%g", fx[w][st][h0]);
                qv(r, "%s_from", key);
            }
        }
}

/* ------------------------------------------------------------ Lemma 2 */

/* Mean over seeds of sq_mean at (series, stack, layer, site) for one key. */
typedef struct {
    const lnk_csvdata *t;
    int jk, jset, jpos, jL, jseed, jstack, jlayer, jsite, jsq, jfrac, jjac, jjmax, jtask;
} hidx;

static void hidx_init(hidx *h, const lnk_csvdata *t)
{
    h->t = t;
    h->jk = col(t, "key"), h->jset = col(t, "setting"), h->jpos = col(t, "norm_pos");
    h->jL = col(t, "L"), h->jseed = col(t, "seed"), h->jstack = col(t, "stack");
    h->jlayer = col(t, "layer"), h->jsite = col(t, "site"), h->jsq = col(t, "sq_mean");
    h->jfrac = col(t, "frac_over"), h->jjac = col(t, "jac_mean"), h->jjmax = col(t, "jac_max");
    h->jtask = col(t, "task");
}

/* Lemma 2 per layer.  The theorem setting's values are the paper's: Post-LN
 * E||x^{post,5}||^2/d = 1.5 and Pre-LN in [1 + l/2, 1 + 3l/2].  With d_ff = r d
 * and Xavier weights (variance 2/(d + d_ff) in W1 and W2), E||FFN(x)||^2 =
 * 2 r/(1 + r)^2 ||x||^2 (1/2 for r = 1, 0.32 for r = 4), so the Post-LN target
 * of a setting is 1 + 2 r/(1 + r)^2; the table shows it in the header. */
static void lemma2(const lnk_csvdata *t)
{
    hidx h;
    hidx_init(&h, t);
    int jd = col(t, "d"), jff = col(t, "d_ff");
    /* the deepest model per series */
    int Lmax[NS] = {0};
    double target[2] = {1.5, 1.5};
    for (size_t r = 0; r < t->nrow; r++) {
        int k = series_of(t, r), L = (int)num(t, r, h.jL);
        Lmax[k] = L > Lmax[k] ? L : Lmax[k];
        double q = num(t, r, jff) / num(t, r, jd);
        target[k / 2] = 1 + 2 * q / ((1 + q) * (1 + q));
    }
    int L = 0;
    for (int k = 0; k < NS; k++)
        L = Lmax[k] > L ? Lmax[k] : L;
    if (L == 0)
        return;
    /* per series k, paper index l = 1..L+1: values over seeds of
     *   Pre-LN  E||x_l||^2/d   (site "in" of block l-1; "out" for l = L+1)
     *   Post-LN E||x^{post,5}_l||^2/d (site "ffn" of block l-1), l <= L */
    int nl = L + 1;
    cellv *v = calloc((size_t)NS * nl, sizeof(cellv));
    if (!v)
        fail("out of memory");
    for (size_t r = 0; r < t->nrow; r++) {
        int k = series_of(t, r);
        if ((int)num(t, r, h.jL) != L || Lmax[k] != L)
            continue;
        const char *site = lnk_csvdata_str(t, r, h.jsite);
        int layer = (int)num(t, r, h.jlayer), pre = k % 2, l = -1;
        if (pre && strcmp(site, "in") == 0)
            l = layer + 1;
        else if (pre && strcmp(site, "out") == 0)
            l = L + 1;
        else if (!pre && strcmp(site, "ffn") == 0)
            l = layer + 1;
        if (l < 1)
            continue;
        if (strcmp(lnk_csvdata_str(t, r, h.jstack), "enc") != 0 &&
            strcmp(lnk_csvdata_str(t, r, h.jtask), "lm") != 0)
            continue; /* the encoder (cls) or the lm decoder */
        cell_push(&v[k * nl + l - 1], num(t, r, h.jsq), 0, (int)num(t, r, h.jseed),
                  lnk_csvdata_str(t, r, h.jk), t->what);
    }
    char h4[64], h7[64];
    snprintf(h4, sizeof h4, "theorem Post-LN x^{post,5} (%.2f)", target[0]);
    snprintf(h7, sizeof h7, "realistic Post-LN x^{post,5} (%.2f)", target[1]);
    const char *head[] = {"l", "band [1 + l/2, 1 + 3l/2]", "theorem Pre-LN", "in band", h4,
                          "realistic Pre-LN", "in band", h7};
    lnk_table tb;
    CK(lnk_table_init(&tb, 8, head, "rrrrrrrr"));
    static const char *const sh[] = {"l", "lo", "hi", "theorem_pre_mean", "theorem_pre_sd",
                                     "theorem_post5_mean", "theorem_post5_sd",
                                     "realistic_pre_mean", "realistic_pre_sd",
                                     "realistic_post5_mean", "realistic_post5_sd",
                                     "theorem_post5_target", "realistic_post5_target"};
    out_csv o;
    csv_open(&o, dir, "lemma2_summary.csv", sh, 13);
    static int sseed[2][1024], scount[2][1024];
    static double ssum[2][1024];
    int nseed[2] = {0, 0};
    int inband[2] = {0, 0}, tot[2] = {0, 0}, post_ok[2] = {0, 0}, post_n[2] = {0, 0};
    double post_dev[2] = {0, 0}, post_avg[2] = {0, 0};
    char lv[16];
    snprintf(lv, sizeof lv, "%d", L);
    qv(lv, "lemma2_L");
    for (int l = 1; l <= nl; l++) {
        double lo = 1 + l / 2.0, hi = 1 + 1.5 * l;
        CK(lnk_csv_int(&o.c, l));
        CK(lnk_csv_double(&o.c, lo));
        CK(lnk_csv_double(&o.c, hi));
        /* table rows: l in 1..4, then the depth-sweep values, and L+1 */
        int show = l <= 4 || l == nl || l == 6 || l == 8 || l == 12 || l == 16 || l == 24 ||
                   l == 32 || l == 48 || l == 64;
        int r = show ? lnk_table_new_row(&tb) : -1;
        if (show) {
            lnk_table_set(&tb, r, 0, "%d", l);
            lnk_table_set(&tb, r, 1, "[%.1f, %.1f]", lo, hi);
        }
        for (int st = 0; st < 2; st++) {
            const cellv *cp = &v[(2 * st + 1) * nl + l - 1], *cq = &v[(2 * st) * nl + l - 1];
            double m = 0, sd = 0, m5 = 0, sd5 = 0;
            if (cp->n)
                cell_ms(cp, &m, &sd);
            if (cq->n)
                cell_ms(cq, &m5, &sd5);
            csv_num_or_empty(&o, m, cp->n > 0);
            csv_num_or_empty(&o, sd, cp->n > 0);
            csv_num_or_empty(&o, m5, cq->n > 0);
            csv_num_or_empty(&o, sd5, cq->n > 0);
            /* "in band": the seed mean within the interval widened by 3 standard errors */
            double se = cp->n > 1 ? sd / sqrt((double)cp->n) : 0;
            int in = m >= lo - 3 * se && m <= hi + 3 * se;
            if (cp->n) {
                tot[st]++;
                inband[st] += in;
            }
            if (cp->n && (l == 1 || l == L)) {
                char b[64], band[64];
                pm(b, sizeof b, cp);
                qv(b, "lemma2_%s_pre_l%s", st ? "realistic" : "theorem", l == 1 ? "1" : "L");
                snprintf(band, sizeof band, "[%g, %g]", lo, hi);
                if (st == 0)
                    qv(band, "lemma2_band_l%s", l == 1 ? "1" : "L");
            }
            for (int q = 0; q < cq->n; q++) { /* per seed: the sum over the layers */
                int j = 0;
                while (j < nseed[st] && sseed[st][j] != cq->seed[q])
                    j++;
                if (j == nseed[st]) {
                    if (j == 1024)
                        fail("%s: more than 1024 seeds", t->what);
                    sseed[st][j] = cq->seed[q], ssum[st][j] = 0, scount[st][j] = 0;
                    nseed[st]++;
                }
                ssum[st][j] += cq->v[q];
                scount[st][j]++;
            }
            if (cq->n) {
                double se5 = cq->n > 1 ? sd5 / sqrt((double)cq->n) : 0;
                post_n[st]++;
                post_ok[st] += fabs(m5 - target[st]) <= 3 * se5;
                post_dev[st] = fmax(post_dev[st], fabs(m5 - target[st]));
                post_avg[st] += m5;
            }
            if (show) {
                char b[64] = "", b5[64] = "";
                if (cp->n)
                    pm(b, sizeof b, cp);
                if (cq->n)
                    pm(b5, sizeof b5, cq);
                lnk_table_set(&tb, r, 2 + 3 * st, "%s", b);
                lnk_table_set(&tb, r, 3 + 3 * st, "%s", cp->n ? (in ? "yes" : "no") : "");
                lnk_table_set(&tb, r, 4 + 3 * st, "%s", b5);
            }
        }
        CK(lnk_csv_double(&o.c, target[0]));
        CK(lnk_csv_double(&o.c, target[1]));
        CK(lnk_csv_end_row(&o.c));
    }
    oc_close(&o, "Lemma 2 per layer l (paper numbering): E||x^pre_l||^2/d and its band [lo, hi], "
                 "E||x^{post,5}_l||^2/d and its expected value 1 + 2r/(1+r)^2, r = d_ff/d (1.5 in "
                 "the theorem setting); mean, sd over seeds",
             "depth_hidden.csv");
    char cap[700];
    snprintf(cap, sizeof cap, "Lemma 2 at L = %d: mean over tokens of ||x||^2/d, mean ± sd over "
             "seeds. Pre-LN x^{pre}_l (l = 1: embedding output; l = L+1: last residual, the final "
             "norm's input) against [1 + l/2, 1 + 3l/2] ('in band': within it up to 3 standard "
             "errors); Post-LN x^{post,5}_l against 1 + 2r/(1+r)^2 with r = d_ff/d (in brackets: "
             "1.5 for the theorem's d_ff = d).", L);
    write_table(&tb, "lemma2", "Lemma 2", cap);
    lnk_table_free(&tb);
    for (int st = 0; st < 2; st++) {
        if (tot[st])
            printf("  Lemma 2, %s Pre-LN: %d of %d layers in [1 + l/2, 1 + 3l/2] (3 se)\n",
                   st ? "realistic" : "theorem", inband[st], tot[st]);
        if (post_n[st])
            printf("  Lemma 2, %s Post-LN: E||x^{post,5}||^2/d averages %.4f over %d layers "
                   "(target %.4f); within 3 se of it at %d layers (largest deviation %.3f)\n",
                   st ? "realistic" : "theorem", post_avg[st] / post_n[st], post_n[st],
                   target[st], post_ok[st], post_dev[st]);
        /* the layer average per seed, then mean ± standard error over the seeds */
        double av[1024], m = 0, sd = 0;
        for (int j = 0; j < nseed[st]; j++)
            av[j] = ssum[st][j] / scount[st][j];
        char avg[64] = "", tg[32], b[64];
        if (nseed[st]) {
            lnk_mean_sd(av, 1, (size_t)nseed[st], &m, &sd);
            lnk_fmt_pm(avg, sizeof avg, m, sd / sqrt((double)nseed[st]));
        }
        snprintf(tg, sizeof tg, "%.2f", target[st]);
        const char *sn = st ? "realistic" : "theorem";
        snprintf(b, sizeof b, "%d of %d", inband[st], tot[st]);
        qv(b, "lemma2_%s_inband", sn);
        qv(avg, "lemma2_%s_post5_avg", sn);
        qv(tg, "lemma2_%s_post5_target", sn);
        snprintf(b, sizeof b, "%d of %d", post_ok[st], post_n[st]);
        qv(b, "lemma2_%s_post5_within", sn);
        if (tot[st]) {
            char cv[200], set[200];
            snprintf(cv, sizeof cv, "%d of %d layers in the band (3 se)", inband[st], tot[st]);
            snprintf(set, sizeof set, "cls, %s init, output tied to the embedding, V = %d, "
                     "d = %d, L = %d, %d seeds", sn, depth_V,
                     (int)num(t, 0, jd), L, nseed[st]);
            char cn[200];
            snprintf(cn, sizeof cn, "Lemma 2: %s Pre-LN E||x_l||^2/d lies in [1 + l/2, 1 + 3l/2] "
                     "at every layer l", sn);
            quoted_claim(&Q, cn, cv, set, "depth_hidden.csv");
        }
        if (summary && (tot[st] || post_n[st]))
            fprintf(summary, "%s setting: Pre-LN in the band at %d of %d layers; Post-LN "
                    "E||x^{post,5}||^2/d averaged over the %d layers is %s (mean ± standard "
                    "error over %d seeds; target %s), within 3 standard errors of the target at "
                    "%d of the layers (largest deviation %s).\n\n",
                    st ? "Realistic" : "Theorem", inband[st], tot[st], post_n[st], avg,
                    nseed[st], tg, post_ok[st], f2(post_dev[st]));
    }
    for (int i = 0; i < NS * nl; i++)
        free(v[i].v), free(v[i].sec), free(v[i].seed);
    free(v);
}

/* Tied vs untied output weights at the widths of the ablation CSV. */
static void tie_table(const sweepdata *tied, const sweepdata *unt, const sweepdata *tied_loss,
                      const sweepdata *unt_loss)
{
    static const char *const head[] = {"d", "series", "tied (out = embedding)", "untied out.w",
                                       "tied / untied"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 5, head, "rlrrr"));
    for (int i = 0; i < unt->nx; i++) {
        int j = -1;
        for (int q = 0; q < tied->nx; q++)
            if (tied->x[q] == unt->x[i])
                j = q;
        for (int k = 0; k < NS; k++) {
            const cellv *cu = &unt->c[k][i], *ct = j >= 0 ? &tied->c[k][j] : NULL;
            if (!cu->n)
                continue;
            int r = lnk_table_new_row(&tb);
            char b[64] = "", bu[64];
            lnk_table_set(&tb, r, 0, "%d", unt->x[i]);
            lnk_table_set(&tb, r, 1, "%s", s_name[k]);
            pm(bu, sizeof bu, cu);
            lnk_table_set(&tb, r, 3, "%s", bu);
            if (ct && ct->n) {
                double mt, st, mu, su;
                pm(b, sizeof b, ct);
                cell_ms(ct, &mt, &st);
                cell_ms(cu, &mu, &su);
                lnk_table_set(&tb, r, 4, "%.2f", mt / mu);
                char q[32];
                snprintf(q, sizeof q, "%.2f", mt / mu);
                qv(q, "tie_%s_ratio", s_id[k]);
                if (k % 2) {
                    char cv[300], fixed[64], bt[64];
                    pm(bt, sizeof bt, ct);
                    snprintf(cv, sizeof cv, "tied / untied %.2f (tied %s, untied %s, mean ± sd)",
                             mt / mu, bt, bu);
                    snprintf(fixed, sizeof fixed, "d = %d, L = %d", unt->x[i], unt->L);
                    char cn[200];
                    snprintf(cn, sizeof cn, "Tied output: %s last-layer ||dL/dW2||_F with the "
                             "output tied to the embedding against a separate out.w", s_name[k]);
                    quoted_claim(&Q, cn, cv, setting_of(unt, k / 2, fixed), unt->file);
                }
            }
            for (int w = 0; w < 2; w++) {
                const sweepdata *ls = w ? unt_loss : tied_loss;
                int xi = w ? i : j;
                if (!ls || xi < 0 || xi >= ls->nx || !ls->c[k][xi].n)
                    continue;
                double m, sd;
                char q[32];
                cell_ms(&ls->c[k][xi], &m, &sd);
                snprintf(q, sizeof q, "%.1f", m);
                qv(q, "tie_%s_%s_loss", s_id[k], w ? "untied" : "tied");
            }
            lnk_table_set(&tb, r, 2, "%s", b);
        }
    }
    char cap[400];
    snprintf(cap, sizeof cap, "Output layer ablation at L = %d: the last-layer ||dL/dW2||_F (%s) "
             "with the output tied to the input embedding (N(0, 1/d)) and with a separate out.w "
             "(Xavier-normal, variance 2/(d + V): the same 1/d when d = V).", unt->L, stat_col);
    write_table(&tb, "tie_table", "Tied vs untied output", cap);
    lnk_table_free(&tb);
}

/* The mechanism in L: the Jacobian norm of the norm right after the last W2
 * (Pre-LN: the final norm at x^{pre}_{L+1}; Post-LN: the last block's second
 * norm at x^{post,5}_L), Lemma 3.  Pre-LN's E||x_{L+1}||^2/d grows like L
 * (Lemma 2), so its Jacobian falls like L^{-1/2}; Post-LN's stays put. */
static void final_norm_table(const lnk_csvdata *t)
{
    hidx h;
    hidx_init(&h, t);
    sweepdata *sq = calloc(1, sizeof *sq), *jac = calloc(1, sizeof *jac);
    if (!sq || !jac)
        fail("out of memory");
    for (size_t r = 0; r < t->nrow; r++) {
        int k = series_of(t, r), L = (int)num(t, r, h.jL), layer = (int)num(t, r, h.jlayer);
        const char *site = lnk_csvdata_str(t, r, h.jsite);
        const char *stk = lnk_csvdata_str(t, r, h.jstack);
        if (strcmp(stk, "enc") != 0 && strcmp(lnk_csvdata_str(t, r, h.jtask), "lm") != 0)
            continue;
        int use = k % 2 ? strcmp(site, "out") == 0 : strcmp(site, "ffn") == 0 && layer == L - 1;
        if (!use || !lnk_csvdata_str(t, r, h.jjac)[0])
            continue;
        int xi = xindex(sq, L), xj = xindex(jac, L), seed = (int)num(t, r, h.jseed);
        const char *key = lnk_csvdata_str(t, r, h.jk);
        cell_push(&sq->c[k][xi], num(t, r, h.jsq), 0, seed, key, t->what);
        cell_push(&jac->c[k][xj], num(t, r, h.jjac), 0, seed, key, t->what);
    }
    if (sq->nx == 0) {
        free(sq), free(jac);
        return;
    }
    static const char *const head[] = {
        "L", "theorem Post ||J||", "theorem Pre E||x_{L+1}||^2/d", "theorem Pre ||J||",
        "theorem Pre ||J|| sqrt(L)", "realistic Post ||J||", "realistic Pre E||x_{L+1}||^2/d",
        "realistic Pre ||J||", "realistic Pre ||J|| sqrt(L)"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 9, head, "rrrrrrrrr"));
    for (int i = 0; i < sq->nx; i++) {
        int r = lnk_table_new_row(&tb);
        double sL = sqrt((double)sq->x[i]);
        lnk_table_set(&tb, r, 0, "%d", sq->x[i]);
        for (int st = 0; st < 2; st++) {
            char b[64] = "";
            const cellv *jp = &jac->c[2 * st][i], *jq = &jac->c[2 * st + 1][i],
                        *sp = &sq->c[2 * st + 1][i];
            if (jp->n)
                pm(b, sizeof b, jp);
            lnk_table_set(&tb, r, 1 + 4 * st, "%s", b);
            b[0] = '\0';
            if (sp->n)
                pm(b, sizeof b, sp);
            lnk_table_set(&tb, r, 2 + 4 * st, "%s", b);
            b[0] = '\0';
            if (jq->n)
                pm(b, sizeof b, jq);
            lnk_table_set(&tb, r, 3 + 4 * st, "%s", b);
            b[0] = '\0';
            if (jq->n) {
                double m, sd;
                cell_ms(jq, &m, &sd);
                lnk_fmt_pm(b, sizeof b, m * sL, sd * sL);
            }
            lnk_table_set(&tb, r, 4 + 4 * st, "%s", b);
        }
    }
    for (int st = 0; st < 2; st++) {
        double jr[128], pr[128];
        int nj = 0, np = 0;
        for (int i = 0; i < sq->nx; i++) {
            double m, sd;
            if (jac->c[2 * st + 1][i].n && sq->x[i] >= 2) {
                cell_ms(&jac->c[2 * st + 1][i], &m, &sd);
                jr[nj++] = m * sqrt((double)sq->x[i]);
            }
            if (jac->c[2 * st][i].n) {
                cell_ms(&jac->c[2 * st][i], &m, &sd);
                pr[np++] = m;
            }
        }
        const char *sn = st ? "realistic" : "theorem";
        if (nj)
            qv(range_dec(jr, nj, 2), "final_%s_pre_jsqrtL", sn);
        if (np)
            qv(range_dec(pr, np, 2), "final_%s_post_j", sn);
        for (int e = 0; e < 2; e++) {
            const cellv *c = &sq->c[2 * st + 1][e ? sq->nx - 1 : 0];
            if (!c->n)
                continue;
            char b[64], l[16];
            pm(b, sizeof b, c);
            qv(b, "final_%s_pre_sq_%s", sn, e ? "last" : "first");
            snprintf(l, sizeof l, "%d", sq->x[e ? sq->nx - 1 : 0]);
            if (st == 0)
                qv(l, "final_L_%s", e ? "last" : "first");
        }
    }
    write_table(&tb, "final_norm", "The norm after the last W2 (Lemma 3)",
                "Spectral norm of the Jacobian sqrt(d)/||x - mean(x) 1|| (Lemma 3; mean over "
                "tokens, mean ± sd over seeds) of the norm the last W2's output goes through: "
                "Post-LN the last block's second norm (at x^{post,5}_L), Pre-LN the final norm "
                "(at x^{pre}_{L+1}, whose E||x||^2/d is shown). Pre-LN's Jacobian falls like "
                "L^{-1/2} because E||x_{L+1}||^2 grows like L (Lemma 2); times sqrt(L) it "
                "stays roughly constant.");
    lnk_table_free(&tb);
    free_sweep(sq), free_sweep(jac);
    free(sq), free(jac);
}

/* Empirical (eps, delta)-boundedness against d: the fraction of tokens with
 * (Z - EZ)/EZ > eps, Z = ||x||^2, at the residual sums (sites attn and ffn: the
 * norms' inputs of Post-LN), averaged over layers and seeds. */
static void bounded_table(const lnk_csvdata *t)
{
    hidx h;
    hidx_init(&h, t);
    int jd = col(t, "d"), jeps = col(t, "bound_eps");
    sweepdata *s = calloc(1, sizeof *s);
    if (!s)
        fail("out of memory");
    /* one value per (series, d, seed): the mean over the sites of that seed */
    typedef struct { int k, d, seed; double sum; int n; } acc;
    acc *a = calloc(t->nrow + 1, sizeof(acc));
    int na = 0;
    for (size_t r = 0; r < t->nrow; r++) {
        const char *site = lnk_csvdata_str(t, r, h.jsite);
        if (strcmp(site, "attn") != 0 && strcmp(site, "ffn") != 0)
            continue;
        int k = series_of(t, r), d = (int)num(t, r, jd), seed = (int)num(t, r, h.jseed), i;
        for (i = 0; i < na; i++)
            if (a[i].k == k && a[i].d == d && a[i].seed == seed)
                break;
        if (i == na)
            a[na++] = (acc){k, d, seed, 0, 0};
        a[i].sum += num(t, r, h.jfrac);
        a[i].n++;
    }
    if (!na) {
        free(a), free(s);
        return;
    }
    for (int i = 0; i < na; i++) /* the series and d identify the configuration here */
        cell_push(&s->c[a[i].k][xindex(s, a[i].d)], a[i].sum / a[i].n, 0, a[i].seed, "width",
                  t->what);
    const char *head[1 + NS];
    head[0] = "d";
    for (int k = 0; k < NS; k++)
        head[1 + k] = s_name[k];
    lnk_table tb;
    CK(lnk_table_init(&tb, 1 + NS, head, "rrrrr"));
    for (int i = 0; i < s->nx; i++) {
        int r = lnk_table_new_row(&tb);
        lnk_table_set(&tb, r, 0, "%d", s->x[i]);
        for (int k = 0; k < NS; k++) {
            char b[64] = "";
            if (s->c[k][i].n)
                pm(b, sizeof b, &s->c[k][i]);
            if (s->c[k][i].n) {
                double m, sd;
                cell_ms(&s->c[k][i], &m, &sd);
                qv(f2(m), "bounded_%s_d%d", s_id[k], s->x[i]);
            }
            lnk_table_set(&tb, r, 1 + k, "%s", b);
        }
    }
    char cap[500];
    snprintf(cap, sizeof cap, "Empirical (eps, delta)-boundedness of Z = ||x||^2 against d (width "
             "sweep): the fraction of tokens with (Z - EZ)/EZ > %g (EZ: the batch mean at that "
             "site) at the residual sums after attention and after the FFN, averaged over the "
             "blocks; mean ± sd over seeds. Theorem 1 holds with probability 0.99 - delta - "
             "eps/(0.9 + eps).", t->nrow ? num(t, 0, jeps) : 0);
    write_table(&tb, "bounded_table", "(eps, delta)-boundedness against d", cap);
    lnk_table_free(&tb);
    free_sweep(s);
    free(s), free(a);
}

/* Lemma 3 Jacobian and the (eps, delta) fraction per site, over layers and seeds. */
static void hidden_table(const lnk_csvdata *t, const char *src)
{
    hidx h;
    hidx_init(&h, t);
    static const char *const sites[] = {"in", "attn", "xattn", "ffn", "out"};
    static const char *const head[] = {"setting", "norm", "stack", "site", "E ||x||^2/d",
                                       "P((Z-EZ)/EZ > eps)", "||J_LN|| mean", "||J_LN|| max over seeds"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 8, head, "llllrrrr"));
    int jeps = col(t, "bound_eps");
    double eps = t->nrow ? num(t, 0, jeps) : 0;
    for (int k = 0; k < NS; k++)
        for (int stk = 0; stk < 2; stk++)
            for (int si = 0; si < 5; si++) {
                /* per seed: the mean over the blocks; then mean ± sd over the seeds */
                cellv csq = {0}, cfr = {0}, cjm = {0};
                double jx = 0;
                for (size_t r = 0; r < t->nrow; r++) {
                    if (series_of(t, r) != k ||
                        strcmp(lnk_csvdata_str(t, r, h.jstack), stk ? "dec" : "enc") != 0 ||
                        strcmp(lnk_csvdata_str(t, r, h.jsite), sites[si]) != 0 ||
                        strcmp(lnk_csvdata_str(t, r, h.jtask), "cls") != 0)
                        continue;
                    int seed = (int)num(t, r, h.jseed), q = 0;
                    while (q < csq.n && csq.seed[q] != seed)
                        q++;
                    if (q == csq.n) {
                        cell_push(&csq, 0, 0, seed, "", t->what);
                        cell_push(&cfr, 0, 0, seed, "", t->what);
                        cell_push(&cjm, 0, 0, seed, "", t->what);
                    }
                    csq.v[q] += num(t, r, h.jsq); /* sums; the counts in sec */
                    csq.sec[q] += 1;
                    cfr.v[q] += num(t, r, h.jfrac);
                    if (lnk_csvdata_str(t, r, h.jjac)[0]) {
                        cjm.v[q] += num(t, r, h.jjac);
                        cjm.sec[q] += 1;
                        jx = fmax(jx, num(t, r, h.jjmax));
                    }
                }
                if (csq.n) {
                    int r = lnk_table_new_row(&tb), hasj = cjm.sec[0] > 0;
                    for (int q = 0; q < csq.n; q++) {
                        cfr.v[q] /= csq.sec[q];
                        csq.v[q] /= csq.sec[q];
                        if (hasj)
                            cjm.v[q] /= cjm.sec[q] > 0 ? cjm.sec[q] : 1;
                    }
                    char b[64];
                    lnk_table_set(&tb, r, 0, "%s", k < 2 ? "theorem" : "realistic");
                    lnk_table_set(&tb, r, 1, "%s", k % 2 ? "Pre-LN" : "Post-LN");
                    lnk_table_set(&tb, r, 2, "%s", stk ? "dec" : "enc");
                    lnk_table_set(&tb, r, 3, "%s", sites[si]);
                    pm(b, sizeof b, &csq);
                    lnk_table_set(&tb, r, 4, "%s", b);
                    pm(b, sizeof b, &cfr);
                    lnk_table_set(&tb, r, 5, "%s", b);
                    if (hasj) {
                        pm(b, sizeof b, &cjm);
                        lnk_table_set(&tb, r, 6, "%s", b);
                        lnk_table_set(&tb, r, 7, "%.2f", jx);
                    }
                }
                free(csq.v), free(csq.sec), free(csq.seed);
                free(cfr.v), free(cfr.sec), free(cfr.seed);
                free(cjm.v), free(cjm.sec), free(cjm.seed);
            }
    char cap[600];
    snprintf(cap, sizeof cap, "Hidden states of the %s cls models, averaged over the blocks of each "
             "seed, mean ± sd over seeds (the max column: the largest token value over blocks and seeds): "
             "||x||^2/d at each site (in: block input; attn, ffn: after the residual add; out: "
             "the stack's last residual), the fraction of tokens with (Z - EZ)/EZ > %g for "
             "Z = ||x||^2 (empirical (eps, delta)-boundedness), and Lemma 3's ||J_LN|| = "
             "sqrt(d)/||x - mu 1|| where the site is a norm's input.", src, eps);
    if (tb.nrow)
        write_table(&tb, "hidden_table", "Hidden states: Lemma 3 and (eps, delta)-boundedness",
                    cap);
    lnk_table_free(&tb);
}

/* ------------------------------------------------------------ profile */

static void profile(const lnk_csvdata *t)
{
    int jk = col(t, "key"), jtask = col(t, "task"), jstack = col(t, "stack"),
        jlayer = col(t, "layer"), jten = col(t, "tensor"), jseed = col(t, "seed");
    int jv = col(t, strcmp(stat_col, "w2_mean_norm") == 0 ? "mean_norm" : "norm_of_mean");
    static const char *const tasks[] = {"cls", "seq2seq", "lm"};
    static const char *const tens[] = {"ffn.w1", "ffn.w2", "attn.wv", "attn.wo", "block"};
    static const char *const tid[] = {"w1", "w2", "wv", "wo", "block"}; /* plot column names */
    enum { NT = 5, ML = 256 };
    for (int st = 0; st < 2; st++) {
        static const char *const head[] = {"task", "stack", "layer", "Post-LN W1", "Post-LN W2",
                                           "Pre-LN W1", "Pre-LN W2"};
        lnk_table tb;
        CK(lnk_table_init(&tb, 7, head, "llrrrrr"));
        for (int ta = 0; ta < 3; ta++) {
            /* cells [pos][tensor][stack][layer] */
            cellv *c = calloc((size_t)2 * NT * 2 * ML, sizeof(cellv));
            if (!c)
                fail("out of memory");
#define C(p, te, sk, l) c[(((p) * NT + (te)) * 2 + (sk)) * ML + (l)]
            int nl[2] = {0, 0}, any = 0;
            for (size_t r = 0; r < t->nrow; r++) {
                int k = series_of(t, r);
                if (k / 2 != st || strcmp(lnk_csvdata_str(t, r, jtask), tasks[ta]) != 0)
                    continue;
                int te = -1;
                for (int q = 0; q < NT; q++)
                    if (strcmp(lnk_csvdata_str(t, r, jten), tens[q]) == 0)
                        te = q;
                if (te < 0)
                    continue;
                int sk = strcmp(lnk_csvdata_str(t, r, jstack), "dec") == 0;
                int l = (int)num(t, r, jlayer);
                if (l < 0 || l >= ML)
                    fail("%s: layer %d out of range", t->what, l);
                nl[sk] = l + 1 > nl[sk] ? l + 1 : nl[sk];
                cell_push(&C(k % 2, te, sk, l), num(t, r, jv), 0, (int)num(t, r, jseed),
                          lnk_csvdata_str(t, r, jk), t->what);
                any = 1;
            }
            if (any) {
                for (int sk = 0; sk < 2; sk++)
                    for (int l = 0; l < nl[sk]; l++) {
                        int r = lnk_table_new_row(&tb);
                        lnk_table_set(&tb, r, 0, "%s", tasks[ta]);
                        lnk_table_set(&tb, r, 1, "%s", sk ? "dec" : "enc");
                        lnk_table_set(&tb, r, 2, "%d", l + 1);
                        for (int p = 0; p < 2; p++)
                            for (int te = 0; te < 2; te++) {
                                char b[64] = "";
                                if (C(p, te, sk, l).n)
                                    pm(b, sizeof b, &C(p, te, sk, l));
                                lnk_table_set(&tb, r, 3 + 2 * p + te, "%s", b);
                            }
                    }
                if (st == 0 || st == 1) { /* plot data, one file per task and setting */
                    char name[128];
                    snprintf(name, sizeof name, "profile_%s_%s_summary.csv", tasks[ta],
                             st ? "realistic" : "theorem");
                    static char hb[2 * NT * 2][40];
                    const char *head2[3 + 2 * NT * 2];
                    int n = 0;
                    head2[n++] = "x";
                    head2[n++] = "stack";
                    head2[n++] = "layer";
                    for (int p = 0; p < 2; p++)
                        for (int te = 0; te < NT; te++) {
                            snprintf(hb[(p * NT + te) * 2], 40, "%s_%s_mean", p ? "pre" : "post",
                                     tid[te]);
                            snprintf(hb[(p * NT + te) * 2 + 1], 40, "%s_%s_sd", p ? "pre" : "post",
                                     tid[te]);
                            head2[n++] = hb[(p * NT + te) * 2];
                            head2[n++] = hb[(p * NT + te) * 2 + 1];
                        }
                    out_csv o;
                    csv_open(&o, dir, name, head2, n);
                    /* x: encoder blocks 1..L_enc, a gap, then the decoder's */
                    for (int sk = 0; sk < 2; sk++)
                        for (int l = 0; l < nl[sk]; l++) {
                            CK(lnk_csv_int(&o.c, sk ? nl[0] + 2 + l : l + 1));
                            char lb[32];
                            snprintf(lb, sizeof lb, "%s%d", sk ? "dec" : "enc", l + 1);
                            CK(lnk_csv_str(&o.c, sk ? "dec" : "enc"));
                            CK(lnk_csv_str(&o.c, lb));
                            for (int p = 0; p < 2; p++)
                                for (int te = 0; te < NT; te++) {
                                    double m = 0, sd = 0;
                                    const cellv *cc = &C(p, te, sk, l);
                                    if (cc->n)
                                        cell_ms(cc, &m, &sd);
                                    csv_num_or_empty(&o, m, cc->n > 0);
                                    csv_num_or_empty(&o, sd, cc->n > 0);
                                }
                            CK(lnk_csv_end_row(&o.c));
                        }
                    oc_close(&o, "per-layer gradient norms (x: position, encoder blocks, a "
                                 "gap, then decoder blocks), mean, sd over seeds",
                             "profile.csv");
                    profile_gp(tasks[ta], nl[1] ? nl[0] + 1 + nl[1] : nl[0]);
                    /* W2 per stack and norm position: first and last block, range */
                    for (int sk = 0; sk < 2; sk++)
                        for (int p = 0; p < 2 && nl[sk]; p++) {
                            double v[ML];
                            for (int l = 0; l < nl[sk]; l++) {
                                double sd;
                                cell_ms(&C(p, 1, sk, l), &v[l], &sd);
                            }
                            char key[96];
                            snprintf(key, sizeof key, "profile_%s_%s_%s_%s_w2", tasks[ta],
                                     st ? "realistic" : "theorem", sk ? "dec" : "enc",
                                     p ? "pre" : "post");
                            qv(f2(v[0]), "%s_first", key);
                            qv(f2(v[nl[sk] - 1]), "%s_last", key);
                            qv(range2(v, nl[sk]), "%s_range", key);
                        }
                }
            }
            for (int i = 0; i < 2 * NT * 2 * ML; i++)
                free(c[i].v), free(c[i].sec), free(c[i].seed);
            free(c);
#undef C
        }
        if (tb.nrow) {
            char cap[400], base[64], title[128];
            snprintf(cap, sizeof cap, "Per-layer ||dL/dW1||_F and ||dL/dW2||_F (%s) at "
                     "initialisation, %s setting (Figure 3 a, b of Xiong et al.); layers from 1; "
                     "mean ± sd over seeds.", stat_col, st ? "realistic" : "theorem");
            snprintf(base, sizeof base, "profile_%s", st ? "realistic" : "theorem");
            snprintf(title, sizeof title, "Per-layer profile, %s setting",
                     st ? "realistic" : "theorem");
            write_table(&tb, base, title, cap);
        }
        lnk_table_free(&tb);
    }
}

/* The sweeps' wall times, from their sidecars (wall_seconds of grad_norms'
 * run): a table, and the values the prose quotes.  study_grad.sh runs the
 * width sweep in one lane and the others one after another in a second. */
static void sweep_times(void)
{
    static const char *const sw[] = {"width", "depth", "depth_seq2seq", "profile",
                                     "tie_ablation"};
    static const char *const head[] = {"sweep", "lane", "seconds"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 3, head, "lrr"));
    double lane[2] = {0, 0};
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.meta.json", sw[i]);
        if (!exists(pth(name)))
            continue;
        json_error_t e;
        json_t *m = json_load_file(pth(name), 0, &e);
        json_t *w = m ? json_object_get(m, "wall_seconds") : NULL;
        if (!w || !json_is_number(w))
            fail("%s: no number 'wall_seconds'%s%s", pth(name), m ? "" : ": ", m ? "" : e.text);
        double sec = json_number_value(w);
        json_decref(m);
        int r = lnk_table_new_row(&tb);
        char b[32];
        snprintf(b, sizeof b, "%.0f", sec);
        lnk_table_set(&tb, r, 0, "%s", sw[i]);
        lnk_table_set(&tb, r, 1, "%d", i ? 2 : 1);
        lnk_table_set(&tb, r, 2, "%s", b);
        qv(b, "time_%s_s", sw[i]);
        lane[i ? 1 : 0] += sec;
    }
    if (!tb.nrow) {
        lnk_table_free(&tb);
        return;
    }
    int r = lnk_table_new_row(&tb);
    char b[32];
    snprintf(b, sizeof b, "%.0f", fmax(lane[0], lane[1]));
    lnk_table_set(&tb, r, 0, "all sweeps (the longer lane)");
    lnk_table_set(&tb, r, 2, "%s", b);
    snprintf(b, sizeof b, "%.1f", fmax(lane[0], lane[1]) / 60);
    qv(b, "time_sweeps_min");
    write_table(&tb, "sweep_times", "Wall time of the sweeps",
                "Wall time of each sweep of the last make study-grad (wall_seconds in its "
                "sidecar; one BLAS thread each; lane 1 the width sweep, lane 2 the others one "
                "after another, the two lanes in parallel); provisional: taken on a shared "
                "machine.");
    lnk_table_free(&tb);
}


int main(int argc, char **argv)
{
    study_init("grad_table");
    lnk_prov_args(cli_prov(), argc, argv);
    static struct option lo[] = {{"dir", 1, 0, 'd'}, {"stat", 1, 0, 's'}, {"help", 0, 0, 'h'},
                                 {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'd': dir = optarg; break;
        case 's':
            if (strcmp(optarg, "norm_of_mean") == 0)
                stat_col = "w2_norm_of_mean";
            else if (strcmp(optarg, "mean_norm") == 0)
                stat_col = "w2_mean_norm";
            else
                fail("--stat: expected norm_of_mean or mean_norm, got '%s'", optarg);
            break;
        case 'h':
            printf("usage: grad_table [--dir DIR] [--stat norm_of_mean|mean_norm]\n"
                   "  reads DIR/{depth,depth_seq2seq,width,profile}.csv (+ _hidden.csv) and\n"
                   "  writes the tables (.md, .tex), summary.md and plot data into DIR\n"
                   "  (default results/grad; statistic: norm of the mean gradient over batches)\n");
            return 0;
        default: fail("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    lnk_iso_time(start_iso, sizeof start_iso);
    t_start = lnk_now();
    lnk_afile sa;
    CK(lnk_afile_open(&sa, pth("summary.md")));
    summary = sa.f;
    fprintf(summary, "# Gradient-norm study: tables\n\nGenerated by grad_table from the CSVs in "
            "this directory (statistic: %s).\n\n", stat_col);
    quoted_open(&Q, dir);
    static const char *const sh[] = {"sweep", "series", "fit", "slope ± se", "theory",
                                     "|slope - theory| / se", "points", "chisq/dof",
                                     "P(chisq >= observed)"};
    lnk_table sl;
    CK(lnk_table_init(&sl, 9, sh, "lllrrrrrr"));
    printf("grad_table: slopes (log-log, weighted by the seeds' standard errors)\n");
    lnk_csvdata td, tw, ts;
    sweepdata *dep = calloc(1, sizeof *dep), *wid = calloc(1, sizeof *wid),
              *s2s = calloc(1, sizeof *s2s);
    if (!dep || !wid || !s2s)
        fail("out of memory");
    int hd = load_sweep("depth.csv", 1, NULL, &td, dep);
    int hw = load_sweep("width.csv", 0, NULL, &tw, wid);
    int hs = load_sweep("depth_seq2seq.csv", 1, NULL, &ts, s2s);
    sweepfits fits;
    depth_V = hd ? dep->V : 0;
    if (hd) {
        depth_tables(dep, "depth", "Depth sweep", &sl, &fits);
        summary_csv(dep, "depth_summary.csv", "L", 1);
        depth_gp(dep, &fits, "depth", 0);
        local_slopes(dep, "depth", "Depth sweep", "L");
    }
    if (hs) {
        depth_tables(s2s, "depth_seq2seq", "Depth sweep, seq2seq L-L", &sl, &fits);
        summary_csv(s2s, "depth_seq2seq_summary.csv", "L", 1);
        depth_gp(s2s, &fits, "depth_seq2seq", 1);
    }
    sweepdata *wloss = NULL;
    lnk_csvdata twl;
    if (hw) {
        wloss = calloc(1, sizeof *wloss);
        if (!wloss)
            fail("out of memory");
        load_sweep("width.csv", 0, "loss", &twl, wloss);
        fitres wf[NS];
        width_tables(wid, wloss, &sl, wf);
        summary_csv(wid, "width_summary.csv", "d", 0);
        width_gp(wid, wf);
        local_slopes(wid, "width", "Width sweep", "d");
    }
    if (hw && exists(pth("tie_ablation.csv"))) {
        lnk_csvdata tu, tul;
        sweepdata *un = calloc(1, sizeof *un), *unl = calloc(1, sizeof *unl);
        if (!un || !unl)
            fail("out of memory");
        load_sweep("tie_ablation.csv", 0, NULL, &tu, un);
        load_sweep("tie_ablation.csv", 0, "loss", &tul, unl);
        tie_table(wid, un, wloss, unl);
        free_sweep(un), free_sweep(unl);
        free(un), free(unl);
        lnk_csvdata_free(&tu), lnk_csvdata_free(&tul);
    }
    if (wloss) {
        free_sweep(wloss);
        free(wloss);
        lnk_csvdata_free(&twl);
    }
    if (sl.nrow)
        write_table(&sl, "slopes", "Slopes",
                    "Log-log weighted least-squares slopes of the seed means (weights from the "
                    "seeds' standard errors; standard errors scaled up by sqrt(chisq/dof) when "
                    "above 1) of the last-layer norm against L and d, and of the Post-LN / Pre-LN "
                    "ratio against L, with Theorem 1's exponents; for d, the theory column is the "
                    "log-log slope of d sqrt(ln d) itself over the same d. The last column is the "
                    "probability of a chisq at least as large if the power law held: below 0.01 "
                    "the fit is poor and the local slopes tables show where the exponent "
                    "changes.");
    lnk_table_free(&sl);
    if (hd || hw)
        timing_table(hd ? dep : NULL, hw ? wid : NULL);
    if (exists(pth("depth_hidden.csv"))) {
        lnk_csvdata t;
        CK(lnk_csvdata_read(pth("depth_hidden.csv"), &t));
        study_input(pth("depth_hidden.csv"));
        lemma2(&t);
        lnk_csvdata_free(&t);
        lemma2_gp();
    }
    if (exists(pth("depth_hidden.csv"))) {
        lnk_csvdata t;
        CK(lnk_csvdata_read(pth("depth_hidden.csv"), &t));
        study_input(pth("depth_hidden.csv"));
        final_norm_table(&t);
        lnk_csvdata_free(&t);
    }
    if (exists(pth("width_hidden.csv"))) {
        lnk_csvdata t;
        CK(lnk_csvdata_read(pth("width_hidden.csv"), &t));
        study_input(pth("width_hidden.csv"));
        bounded_table(&t);
        lnk_csvdata_free(&t);
    }
    const char *hsrc = exists(pth("profile_hidden.csv")) ? "profile_hidden.csv" : NULL;
    if (hsrc) {
        lnk_csvdata t;
        CK(lnk_csvdata_read(pth(hsrc), &t));
        study_input(pth(hsrc));
        hidden_table(&t, "profile");
        lnk_csvdata_free(&t);
    }
    if (exists(pth("profile.csv"))) {
        lnk_csvdata t;
        CK(lnk_csvdata_read(pth("profile.csv"), &t));
        study_input(pth("profile.csv"));
        profile(&t);
        lnk_csvdata_free(&t);
    }
    sweep_times();
    quoted_close(&Q);
    CK(lnk_afile_commit(&sa));
    if (hd)
        free_sweep(dep), lnk_csvdata_free(&td);
    if (hw)
        free_sweep(wid), lnk_csvdata_free(&tw);
    if (hs)
        free_sweep(s2s), lnk_csvdata_free(&ts);
    free(dep), free(wid), free(s2s);
    printf("grad_table: wrote the tables and plot data in %s\n", dir);
    return 0;
}
