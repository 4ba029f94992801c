/* grad_factorial: the gradient study's headline fits over its settings (issue 17,
 * item 4), summarised from the rows of grad_norms sweeps.
 *
 *   grad_factorial [--dir DIR]        (default results/grad_factorial)
 *
 * Reads every DIR/depth_*.csv and DIR/width_*.csv (grad_norms depth and width
 * rows, one per configuration and seed; studies/scripts/study_grad_factorial.sh
 * writes one pair per vocabulary and output tying) and forms the cells of the
 * factorial from the rows: task x output (tied, untied) x V x setting (theorem,
 * realistic) x statistic (the norm of the mean gradient over the batches,
 * w2_norm_of_mean, or the mean of the per-batch norms, w2_mean_norm).  In each
 * cell four power laws of the last block's ||dL/dW2||_F, each fitted by
 * weighted least squares over the seeds (lnk_fit_power_seeds: the seeds' mean
 * at each x, weights from their standard error, se scaled up by
 * sqrt(chi^2/dof) when the fit is worse than the weights say):
 *   pre_L   Pre-LN slope in L   against -1/2 (Theorem 1: d sqrt(ln d / L))
 *   post_L  Post-LN slope in L  against 0 (Theorem 1: d sqrt(ln d))
 *   post_d  Post-LN exponent in d, against 1/2 (results/grad's headline: the
 *           size of one token's gradient, ||h|| ~ sqrt(d))
 *   pre_d   Pre-LN exponent in d, against the log-log slope of Theorem 1's
 *           d sqrt(ln d) over the same d (an upper bound)
 * and d_diff = pre_d - post_d (se from both fits).  A fit is "consistent"
 * with its reference when |slope - reference| <= 2 se.
 *
 * Writes in DIR: fits.csv (one row per cell, statistic and quantity: slope, se,
 * chi^2/dof, points, range, reference, z) with its .meta.json (the input
 * files with checksums); values.csv (name,value: the numbers results/README.md
 * quotes, formatted as quoted) and claims.csv (claim,value,setting,file: the
 * section's four headline claims with their counts, ranges and quoted cells,
 * for the citation table), both by the kit's study_quoted; factorial.md and
 * factorial.tex (one row per cell and statistic).  values.csv also has, per factor level (cls, lm,
 * tied, untied, V64, ..., theorem, realistic, nom, mn), Q.by.LEVEL: "k of n"
 * fits of quantity Q within 2 se of its reference, Q.range.LEVEL: their
 * slopes' range, and d_diff.steeper.LEVEL: how many have pre_d > post_d by
 * more than 2 se.  A short summary goes to stdout. */
#include <getopt.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/lnkit.h"
#include "kit/analysis.h"
#include "kit/kit.h"
#include "kit/quoted.h"

enum { Q_PRE_L, Q_POST_L, Q_POST_D, Q_PRE_D, NQ };
static const char *const q_name[NQ] = {"pre_L", "post_L", "post_d", "pre_d"};
static const char *const q_text[NQ] = {"Pre-LN slope in L", "Post-LN slope in L",
                                       "Post-LN exponent in d", "Pre-LN exponent in d"};
static const int q_sweep[NQ] = {0, 0, 1, 1}; /* 0 depth, 1 width */
static const int q_pre[NQ] = {1, 0, 0, 1};
enum { NSTAT = 2 };
static const char *const stat_col[NSTAT] = {"w2_norm_of_mean", "w2_mean_norm"};
static const char *const stat_short[NSTAT] = {"nom", "mn"};
static const char *const stat_text[NSTAT] = {"norm of mean", "mean of norms"};

typedef struct {
    char task[16], setting[16];
    int tie, V;
} cellkey;

typedef struct {
    int cell, sweep, pre;
    double x, seed, y[NSTAT];
} obs;

typedef struct {
    lnk_fit f;
    int weighted;
    double xmin, xmax, ref, z;
    int consistent;
} qfit;

static cellkey *cells;
static int ncell;
static obs *ob;
static size_t nob, capob;
static qfit *fit; /* [cell][statistic][quantity] (global: reachable when fail() exits) */
/* the other sweep parameter (depth sweep: d; width sweep: L), one value each */
static int fixed_of[2] = {-1, -1};

static int cell_of(const cellkey *k)
{
    for (int i = 0; i < ncell; i++)
        if (!strcmp(cells[i].task, k->task) && !strcmp(cells[i].setting, k->setting) &&
            cells[i].tie == k->tie && cells[i].V == k->V)
            return i;
    cellkey *c = realloc(cells, sizeof *c * (size_t)(ncell + 1));
    if (!c)
        fail("out of memory");
    cells = c;
    cells[ncell] = *k;
    return ncell++;
}

static void read_sweep(const char *path, int sweep)
{
    study_input(path);
    study_table t;
    CK(lnk_csvdata_read(path, &t.d));
    int c_task = study_table_col(&t, "task"), c_set = study_table_col(&t, "setting"),
        c_tie = study_table_col(&t, "tie_output"), c_V = study_table_col(&t, "V"),
        c_pos = study_table_col(&t, "norm_pos"), c_L = study_table_col(&t, "L"),
        c_d = study_table_col(&t, "d"), c_seed = study_table_col(&t, "seed"), c_y[NSTAT];
    for (int s = 0; s < NSTAT; s++)
        c_y[s] = study_table_col(&t, stat_col[s]);
    for (size_t r = 0; r < t.d.nrow; r++) {
        cellkey k;
        memset(&k, 0, sizeof k);
        snprintf(k.task, sizeof k.task, "%s", study_table_str(&t, r, c_task));
        snprintf(k.setting, sizeof k.setting, "%s", study_table_str(&t, r, c_set));
        k.tie = (int)study_table_num(&t, r, c_tie);
        k.V = (int)study_table_num(&t, r, c_V);
        const char *pos = study_table_str(&t, r, c_pos);
        if (strcmp(pos, "post") && strcmp(pos, "pre"))
            fail("%s: row %zu: norm_pos '%s', expected post or pre", path, r + 2, pos);
        int fixed = (int)study_table_num(&t, r, sweep ? c_L : c_d);
        if (fixed_of[sweep] < 0)
            fixed_of[sweep] = fixed;
        else if (fixed != fixed_of[sweep])
            fail("%s: row %zu: %s = %d, but the %s sweeps so far have %d", path, r + 2,
                 sweep ? "L" : "d", fixed, sweep ? "width" : "depth", fixed_of[sweep]);
        if (nob == capob) {
            capob = capob ? 2 * capob : 1024;
            ob = realloc(ob, sizeof *ob * capob);
            if (!ob)
                fail("out of memory");
        }
        obs *o = &ob[nob++];
        o->cell = cell_of(&k);
        o->sweep = sweep;
        o->pre = !strcmp(pos, "pre");
        o->x = study_table_num(&t, r, sweep ? c_d : c_L);
        o->seed = study_table_num(&t, r, c_seed);
        for (int s = 0; s < NSTAT; s++)
            o->y[s] = study_table_num(&t, r, c_y[s]);
    }
    study_table_free(&t);
}

/* Cells in a fixed order: task, tied before untied, V, theorem before realistic. */
static int cell_cmp(const void *a, const void *b)
{
    const cellkey *x = a, *y = b;
    int c = strcmp(x->task, y->task);
    if (c)
        return c;
    if (x->tie != y->tie)
        return y->tie - x->tie;
    if (x->V != y->V)
        return x->V - y->V;
    return -strcmp(x->setting, y->setting); /* theorem, realistic */
}

/* The distinct values, ascending, of the observations' x in a sweep (0
 * depth, 1 width) or (sweep -1) of their seeds; at most max. */
static int distinct(int sweep, double *v, int max)
{
    int n = 0;
    for (size_t i = 0; i < nob; i++) {
        if (sweep >= 0 && ob[i].sweep != sweep)
            continue;
        double x = sweep >= 0 ? ob[i].x : ob[i].seed;
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= v[j] == x;
        if (!seen && n < max)
            v[n++] = x;
    }
    for (int a = 1; a < n; a++)
        for (int c = a; c > 0 && v[c - 1] > v[c]; c--) {
            double t = v[c];
            v[c] = v[c - 1];
            v[c - 1] = t;
        }
    return n;
}

/* "2, 4, 8": the distinct values as distinct() gives them. */
static void list_of(int sweep, char *b, size_t nb)
{
    double v[64];
    int n = distinct(sweep, v, 64);
    b[0] = '\0';
    for (int j = 0; j < n; j++)
        snprintf(b + strlen(b), nb - strlen(b), "%s%g", j ? ", " : "", v[j]);
}

/* The same list as a sidecar key (whole numbers: depths, widths, seeds). */
static void meta_list(lnk_meta *m, const char *key, int sweep)
{
    double v[64];
    int n = distinct(sweep, v, 64), iv[64];
    for (int j = 0; j < n; j++)
        iv[j] = (int)v[j];
    lnk_meta_ints(m, key, iv, (size_t)n);
}

/* The log-log slope of d sqrt(ln d) over the width sweep's d (equal weights:
 * se_y = y gives every point weight 1). */
static double bound_slope(void)
{
    double x[64], y[64];
    int n = distinct(1, x, 64);
    for (int j = 0; j < n; j++)
        y[j] = x[j] * sqrt(log(x[j]));
    lnk_fit f;
    CK(lnk_fit_power(x, y, y, (size_t)n, &f));
    return f.slope;
}

static void fit_q(int cell, int q, int s, double bslope, qfit *r)
{
    double *x = study_alloc(sizeof(double) * nob), *y = study_alloc(sizeof(double) * nob);
    size_t n = 0;
    for (size_t i = 0; i < nob; i++)
        if (ob[i].cell == cell && ob[i].sweep == q_sweep[q] && ob[i].pre == q_pre[q]) {
            x[n] = ob[i].x;
            y[n] = ob[i].y[s];
            n++;
        }
    const cellkey *k = &cells[cell];
    int st = lnk_fit_power_seeds(x, y, n, &r->f, &r->weighted, &r->xmin, &r->xmax);
    free(x);
    free(y);
    if (st != LNK_OK)
        fail("cell %s, %s output, V = %d, %s, %s: %s: %s", k->task, k->tie ? "tied" : "untied",
             k->V, k->setting, stat_text[s], q_text[q], lnk_errmsg());
    static const double ref[NQ] = {-0.5, 0, 0.5, 0};
    r->ref = q == Q_PRE_D ? bslope : ref[q];
    r->z = (r->f.slope - r->ref) / r->f.se_slope;
    r->consistent = fabs(r->z) <= 2;
}

static int n_seeds(void)
{
    /* the smallest number of seeds at any point */
    int best = -1;
    for (size_t i = 0; i < nob; i++) {
        int k = 0;
        for (size_t j = 0; j < nob; j++)
            k += ob[j].cell == ob[i].cell && ob[j].sweep == ob[i].sweep &&
                 ob[j].pre == ob[i].pre && ob[j].x == ob[i].x;
        if (best < 0 || k < best)
            best = k;
    }
    return best;
}

/* The level of factor f (task, output, V, setting, statistic) of cell c's
 * fits of statistic s, as values.csv names it: cls, untied, V64, theorem, nom. */
enum { NFACTOR = 5 };
static void level_of(int f, int c, int s, char *b, size_t nb)
{
    const cellkey *k = &cells[c];
    switch (f) {
    case 0: snprintf(b, nb, "%s", k->task); break;
    case 1: snprintf(b, nb, "%s", k->tie ? "tied" : "untied"); break;
    case 2: snprintf(b, nb, "V%d", k->V); break;
    case 3: snprintf(b, nb, "%s", k->setting); break;
    default: snprintf(b, nb, "%s", stat_short[s]);
    }
}

/* Over the fits of quantity q (q = NQ: d_diff) whose factor f is at level lv:
 * how many (n), how many within 2 se of their reference (for d_diff: Pre-LN
 * steeper by more than 2 se) (m), and their slopes' range. */
static void level_stat(int q, int f, const char *lv, int *m, int *n, double *lo, double *hi)
{
    *m = *n = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int c = 0; c < ncell; c++)
        for (int s = 0; s < NSTAT; s++) {
            char b[32];
            level_of(f, c, s, b, sizeof b);
            if (strcmp(b, lv))
                continue;
            const qfit *r = &fit[((size_t)c * NSTAT + s) * NQ];
            double sl;
            int flag;
            if (q < NQ) {
                sl = r[q].f.slope;
                flag = r[q].consistent;
            } else {
                sl = r[Q_PRE_D].f.slope - r[Q_POST_D].f.slope;
                flag = sl / hypot(r[Q_PRE_D].f.se_slope, r[Q_POST_D].f.se_slope) > 2;
            }
            (*n)++;
            *m += flag;
            *lo = fmin(*lo, sl);
            *hi = fmax(*hi, sl);
        }
}

/* The fit of quantity q in the cell (task, tie, V, setting), statistic s,
 * as quoted: "slope ± se (se), chi2/dof X". */
static int cell_text(int q, const char *task, int tie, int V, const char *setting, int s,
                     char *b, size_t nb)
{
    for (int c = 0; c < ncell; c++)
        if (!strcmp(cells[c].task, task) && cells[c].tie == tie && cells[c].V == V &&
            !strcmp(cells[c].setting, setting)) {
            const qfit *r = &fit[((size_t)c * NSTAT + s) * NQ + q];
            char pm[64];
            lnk_fmt_pm(pm, sizeof pm, r->f.slope, r->f.se_slope);
            snprintf(b, nb, "%s (se), chi2/dof %.1f", pm,
                     r->f.dof > 0 ? r->f.chisq / r->f.dof : 0.0);
            return 1;
        }
    b[0] = '\0';
    return 0;
}

/* "k of n (slopes lo to hi)" of quantity q at level lv of factor f. */
static void level_text(int q, int f, const char *lv, const char *what, char *b, size_t nb)
{
    int m, n;
    double lo, hi;
    level_stat(q, f, lv, &m, &n, &lo, &hi);
    if (n == 0)
        fail("no fits at level '%s' (the claims quote it)", lv);
    snprintf(b, nb, "%d of %d (%s %.2f to %.2f)", m, n, what, lo, hi);
}

/* The four claims: the quantity, what its fits are called, the test they
 * are counted by, whether the bound's slope is quoted, the cells quoted
 * (no task: none), the claim and its source rows. */
typedef struct {
    const char *task;
    int tie, V;
    const char *setting;
} claim_cell;
typedef struct {
    int q;
    const char *what, *test;
    int bound;
    claim_cell cell[2];
    const char *claim, *files;
} claim_row;
static const claim_row claim_tab[] = {
    {Q_PRE_L, "slopes", "within 2 se of -1/2", 0,
     {{"cls", 1, 256, "theorem"}, {"lm", 0, 64, "theorem"}},
     "Gradient factorial: Pre-LN last-block ||dL/dW2||_F falls as L^(-1/2) with a tied output, "
     "more slowly with an untied one", "depth_V*_*.csv"},
    {Q_POST_L, "slopes", "within 2 se of 0", 0,
     {{"cls", 1, 256, "theorem"}, {"lm", 0, 64, "realistic"}},
     "Gradient factorial: Post-LN last-block ||dL/dW2||_F flat in L in about half the cells, "
     "rising slightly in the others", "depth_V*_*.csv"},
    {Q_POST_D, "exponents", "within 2 se of 1/2", 1, {{NULL, 0, 0, NULL}, {"lm", 0, 64, "theorem"}},
     "Gradient factorial: Post-LN last-block ||dL/dW2||_F grows as d^(1/2) with a tied output "
     "only; untied its exponent is near 1", "width_V*_*.csv"},
    {NQ, "differences", "Pre-LN minus Post-LN exponent above 0 by more than 2 se", 0,
     {{NULL, 0, 0, NULL}, {NULL, 0, 0, NULL}},
     "Gradient factorial: the Pre-LN width exponent exceeds Post-LN's only with a tied output",
     "width_V*_*.csv"},
};

/* claims.csv: the section's four headline claims, each with the counts and
 * ranges of its fits by output tying (the factor that decides them) and the
 * cells the section quotes (grad/'s default cell, cls, tied, V = 256,
 * theorem; the new user's, lm, untied, V = 64), where the rows have them. */
static void write_claims(study_quoted *Q, const char *Ls, const char *ds, int seeds,
                         double bslope)
{
    char tasks[64] = "", Vs[64] = "", setting[2048], v[2048], a[128], b[128];
    for (int c = 0; c < ncell; c++) {
        char t[32];
        snprintf(t, sizeof t, "%s", cells[c].task);
        if (!strstr(tasks, t))
            snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s",
                     tasks[0] ? " and " : "", t);
        snprintf(t, sizeof t, "%d", cells[c].V);
        int seen = 0;
        for (int k = 0; k < c; k++)
            seen |= cells[k].V == cells[c].V;
        if (!seen)
            snprintf(Vs + strlen(Vs), sizeof Vs - strlen(Vs), "%s%s", Vs[0] ? ", " : "", t);
    }
    snprintf(setting, sizeof setting,
             "%s; output tied to the embedding or untied; V = %s; theorem and realistic init "
             "(as grad/); last block, statistics norm of the mean and mean of the norms over "
             "the synthetic batches; depth L = %s at d = %d, width d = %s at L = %d; %d seeds; "
             "weighted least squares over the seed means, within 2 se = consistent",
             tasks, Vs, Ls, fixed_of[0], ds, fixed_of[1], seeds);
    for (size_t i = 0; i < sizeof claim_tab / sizeof claim_tab[0]; i++) {
        const claim_row *k = &claim_tab[i];
        level_text(k->q, 1, "tied", k->what, a, sizeof a);
        level_text(k->q, 1, "untied", k->what, b, sizeof b);
        int n = snprintf(v, sizeof v, "%s: tied output %s, untied %s", k->test, a, b);
        if (k->bound)
            n += snprintf(v + n, sizeof v - (size_t)n,
                          " (d sqrt(ln d) has log-log slope %.2f over the same d)", bslope);
        for (int j = 0; j < 2; j++) {
            char c[128];
            const claim_cell *e = &k->cell[j];
            if (e->task && cell_text(k->q, e->task, e->tie, e->V, e->setting, 0, c, sizeof c))
                n += snprintf(v + n, sizeof v - (size_t)n, "; %s, %s, V = %d, %s %s", e->task,
                              e->tie ? "tied" : "untied", e->V, e->setting, c);
        }
        quoted_claim(Q, k->claim, v, setting, k->files);
    }
}

static void write_text_table(const lnk_table *tb, const char *dir, const char *base,
                             const char *caption)
{
    char path[1200];
    lnk_afile a;
    snprintf(path, sizeof path, "%s/%s.md", dir, base);
    CK(lnk_afile_open(&a, path));
    study_track(&a);
    fprintf(a.f, "%s\n\n", caption);
    CK(lnk_table_write_md(tb, a.f));
    study_untrack(&a);
    CK(lnk_afile_commit(&a));
    snprintf(path, sizeof path, "%s/%s.tex", dir, base);
    CK(lnk_afile_open(&a, path));
    study_track(&a);
    CK(lnk_table_write_tex(tb, a.f, caption, "tab:grad-factorial"));
    study_untrack(&a);
    CK(lnk_afile_commit(&a));
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "grad_factorial");
    const char *dir = "results/grad_factorial";
    static struct option lo[] = {{"dir", 1, 0, 'd'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'd': dir = optarg; break;
        case 'h':
            printf("usage: grad_factorial [--dir DIR]   (default results/grad_factorial)\n"
                   "  reads DIR/depth_*.csv and DIR/width_*.csv (grad_norms rows), writes\n"
                   "  DIR/fits.csv (with .meta.json), DIR/values.csv, DIR/claims.csv,\n"
                   "  DIR/factorial.{md,tex}\n");
            return 0;
        default: fail("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    if (!study_root())
        return 0;
    /* the rows */
    for (int sw = 0; sw < 2; sw++) {
        char pat[1200];
        snprintf(pat, sizeof pat, "%s/%s_*.csv", dir, sw ? "width" : "depth");
        glob_t g;
        int gr = glob(pat, 0, NULL, &g);
        if (gr == GLOB_NOMATCH || (gr == 0 && g.gl_pathc == 0))
            fail("no %s (the grad_norms %s sweeps; studies/scripts/study_grad_factorial.sh)",
                 pat, sw ? "width" : "depth");
        if (gr != 0)
            fail("cannot list %s", pat);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            size_t l = strlen(g.gl_pathv[i]);
            if (l > 11 && !strcmp(g.gl_pathv[i] + l - 11, "_hidden.csv"))
                continue;
            read_sweep(g.gl_pathv[i], sw);
        }
        globfree(&g);
    }
    /* cells in order (observations renumbered) */
    int *perm = study_alloc(sizeof(int) * (size_t)ncell);
    cellkey *sorted = study_alloc(sizeof(cellkey) * (size_t)ncell);
    memcpy(sorted, cells, sizeof(cellkey) * (size_t)ncell);
    qsort(sorted, (size_t)ncell, sizeof(cellkey), cell_cmp);
    for (int i = 0; i < ncell; i++)
        for (int j = 0; j < ncell; j++)
            if (!cell_cmp(&cells[i], &sorted[j]))
                perm[i] = j;
    for (size_t i = 0; i < nob; i++)
        ob[i].cell = perm[ob[i].cell];
    memcpy(cells, sorted, sizeof(cellkey) * (size_t)ncell);
    free(sorted);
    free(perm);

    double bslope = bound_slope();
    fit = study_alloc(sizeof(qfit) * (size_t)ncell * NSTAT * NQ);
#define FIT(c, s, q) fit[((size_t)(c) * NSTAT + (s)) * NQ + (q)]
    for (int c = 0; c < ncell; c++)
        for (int s = 0; s < NSTAT; s++)
            for (int q = 0; q < NQ; q++)
                fit_q(c, q, s, bslope, &FIT(c, s, q));
    int seeds = n_seeds();
    char Ls[256], ds[256];
    list_of(0, Ls, sizeof Ls);
    list_of(1, ds, sizeof ds);
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        die();
    static const char *const stats[] = {"w2_norm_of_mean", "w2_mean_norm"};
    lnk_meta_str(extra, "study", "grad_factorial (issue 17 item 4): fits of grad_norms rows");
    lnk_meta_strs(extra, "statistics", stats, 2);
    lnk_meta_str(extra, "fit", "log-log weighted least squares over the seeds' means, weights "
                               "from sd/sqrt(seeds), se scaled by sqrt(chi2/dof) when > 1 "
                               "(lnk_fit_power_seeds)");
    lnk_meta_str(extra, "consistent", "|slope - reference| <= 2 se");
    meta_list(extra, "depth_Ls", 0);
    lnk_meta_int(extra, "depth_d", fixed_of[0]);
    meta_list(extra, "width_ds", 1);
    lnk_meta_int(extra, "width_L", fixed_of[1]);
    lnk_meta_int(extra, "min_seeds", seeds);
    meta_list(extra, "seeds", -1);
    lnk_meta_real(extra, "reference_pre_d", bslope);
    lnk_meta_str(extra, "input_note", "each input CSV's own .meta.json has its grad_norms "
                                      "parameters");

    /* fits.csv */
    static const char *const fh[] = {"task", "output", "V", "setting", "statistic", "quantity",
                                     "points", "x_min", "x_max", "weighted", "slope", "se",
                                     "chisq_dof", "reference", "z", "consistent"};
    out_csv o;
    csv_open(&o, dir, "fits.csv", fh, (int)(sizeof fh / sizeof fh[0]));
    for (int c = 0; c < ncell; c++)
        for (int s = 0; s < NSTAT; s++)
            for (int q = 0; q < NQ; q++) {
                const qfit *r = &FIT(c, s, q);
                CK(lnk_csv_str(&o.c, cells[c].task));
                CK(lnk_csv_str(&o.c, cells[c].tie ? "tied" : "untied"));
                CK(lnk_csv_int(&o.c, cells[c].V));
                CK(lnk_csv_str(&o.c, cells[c].setting));
                CK(lnk_csv_str(&o.c, stat_col[s]));
                CK(lnk_csv_str(&o.c, q_name[q]));
                CK(lnk_csv_int(&o.c, (long long)r->f.n));
                CK(lnk_csv_double(&o.c, r->xmin));
                CK(lnk_csv_double(&o.c, r->xmax));
                CK(lnk_csv_int(&o.c, r->weighted));
                CK(lnk_csv_double(&o.c, r->f.slope));
                CK(lnk_csv_double(&o.c, r->f.se_slope));
                CK(lnk_csv_double(&o.c, r->f.dof > 0 ? r->f.chisq / r->f.dof : 0.0));
                CK(lnk_csv_double(&o.c, r->ref));
                CK(lnk_csv_double(&o.c, r->z));
                CK(lnk_csv_int(&o.c, r->consistent));
                CK(lnk_csv_end_row(&o.c));
            }
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);

    /* values.csv: the numbers results/README.md quotes */
    study_quoted Q;
    quoted_open(&Q, dir);
    quoted_value(&Q, "depth_Ls", "%s", Ls);
    quoted_value(&Q, "depth_d", "%d", fixed_of[0]);
    quoted_value(&Q, "width_ds", "%s", ds);
    quoted_value(&Q, "width_L", "%d", fixed_of[1]);
    quoted_value(&Q, "seeds", "%d", seeds);
    quoted_value(&Q, "cells", "%d", ncell * NSTAT);
    quoted_value(&Q, "bound_slope", "%.2f", bslope);
    for (int q = 0; q < NQ; q++) {
        int n_all = 0, n_s[NSTAT] = {0};
        double lo_ = INFINITY, hi = -INFINITY;
        for (int c = 0; c < ncell; c++)
            for (int s = 0; s < NSTAT; s++) {
                const qfit *r = &FIT(c, s, q);
                n_all += r->consistent;
                n_s[s] += r->consistent;
                lo_ = fmin(lo_, r->f.slope);
                hi = fmax(hi, r->f.slope);
            }
        char nm[128];
        snprintf(nm, sizeof nm, "%s.n_consistent", q_name[q]);
        quoted_value(&Q, nm, "%d", n_all);
        for (int s = 0; s < NSTAT; s++) {
            snprintf(nm, sizeof nm, "%s.n_consistent.%s", q_name[q], stat_short[s]);
            quoted_value(&Q, nm, "%d", n_s[s]);
        }
        snprintf(nm, sizeof nm, "%s.min", q_name[q]);
        quoted_value(&Q, nm, "%.2f", lo_);
        snprintf(nm, sizeof nm, "%s.max", q_name[q]);
        quoted_value(&Q, nm, "%.2f", hi);
    }
    /* per factor level: how many of its fits are within 2 se, and their range;
     * for d_diff (q = NQ) how many are steeper for Pre-LN by more than 2 se */
    for (int q = 0; q <= NQ; q++)
        for (int f = 0; f < NFACTOR; f++) {
            char lv[8][32];
            int nlv = 0;
            for (int c = 0; c < ncell; c++)
                for (int s = 0; s < NSTAT; s++) {
                    char b[32];
                    level_of(f, c, s, b, sizeof b);
                    int seen = 0;
                    for (int k = 0; k < nlv; k++)
                        seen |= !strcmp(lv[k], b);
                    if (!seen && nlv < 8)
                        snprintf(lv[nlv++], sizeof lv[0], "%s", b);
                }
            for (int k = 0; k < nlv; k++) {
                int n, m;
                double lo_, hi;
                level_stat(q, f, lv[k], &m, &n, &lo_, &hi);
                char nm[320];
                const char *qn = q < NQ ? q_name[q] : "d_diff";
                snprintf(nm, sizeof nm, "%s.%s.%s", qn, q < NQ ? "by" : "steeper", lv[k]);
                quoted_value(&Q, nm, "%d of %d", m, n);
                snprintf(nm, sizeof nm, "%s.range.%s", qn, lv[k]);
                quoted_value(&Q, nm, "%.2f to %.2f", lo_, hi);
            }
        }
    for (int c = 0; c < ncell; c++)
        for (int s = 0; s < NSTAT; s++) {
            char id[96], nm[160], b[64];
            snprintf(id, sizeof id, "%s.%s.V%d.%s.%s", cells[c].task,
                     cells[c].tie ? "tied" : "untied", cells[c].V, cells[c].setting,
                     stat_short[s]);
            for (int q = 0; q < NQ; q++) {
                const qfit *r = &FIT(c, s, q);
                lnk_fmt_pm(b, sizeof b, r->f.slope, r->f.se_slope);
                snprintf(nm, sizeof nm, "%s.%s", q_name[q], id);
                quoted_value(&Q, nm, "%s", b);
                snprintf(nm, sizeof nm, "%s.%s.z", q_name[q], id);
                quoted_value(&Q, nm, "%.1f", r->z);
                snprintf(nm, sizeof nm, "%s.%s.chi2", q_name[q], id);
                quoted_value(&Q, nm, "%.2f", r->f.dof > 0 ? r->f.chisq / r->f.dof : 0.0);
            }
            const qfit *a = &FIT(c, s, Q_PRE_D), *p = &FIT(c, s, Q_POST_D);
            double se = hypot(a->f.se_slope, p->f.se_slope);
            lnk_fmt_pm(b, sizeof b, a->f.slope - p->f.slope, se);
            snprintf(nm, sizeof nm, "d_diff.%s", id);
            quoted_value(&Q, nm, "%s", b);
            snprintf(nm, sizeof nm, "d_diff.%s.z", id);
            quoted_value(&Q, nm, "%.1f", (a->f.slope - p->f.slope) / se);
        }
    write_claims(&Q, Ls, ds, seeds, bslope);
    quoted_close(&Q);

    /* factorial.{md,tex} */
    static const char *const th[] = {"task",  "output", "V", "setting", "statistic",
                                     "Pre-LN slope in L", "Post-LN slope in L",
                                     "Post-LN exponent in d", "Pre-LN exponent in d"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 9, th, "llrllrrrr"));
    for (int c = 0; c < ncell; c++)
        for (int s = 0; s < NSTAT; s++) {
            int r = lnk_table_new_row(&tb);
            if (r < 0)
                die();
            CK(lnk_table_set(&tb, r, 0, "%s", cells[c].task));
            CK(lnk_table_set(&tb, r, 1, "%s", cells[c].tie ? "tied" : "untied"));
            CK(lnk_table_set(&tb, r, 2, "%d", cells[c].V));
            CK(lnk_table_set(&tb, r, 3, "%s", cells[c].setting));
            CK(lnk_table_set(&tb, r, 4, "%s", stat_text[s]));
            for (int q = 0; q < NQ; q++) {
                const qfit *f = &FIT(c, s, q);
                char b[64];
                lnk_fmt_pm(b, sizeof b, f->f.slope, f->f.se_slope);
                CK(lnk_table_set(&tb, r, 5 + q, "%s%s [%.1f]", b, f->consistent ? " *" : "",
                                 f->f.dof > 0 ? f->f.chisq / f->f.dof : 0.0));
            }
        }
    char caption[1024];
    snprintf(caption, sizeof caption,
             "Last block's ||dL/dW2||_F at initialisation (grad_norms, synthetic batches): "
             "log-log slopes +- standard error [chi^2/dof], weighted least squares over %d "
             "seeds. Slopes in L over L = %s at d = %d; exponents in d over d = %s at L = %d. "
             "* marks a fit within 2 se of its reference: -1/2 (Pre-LN in L), 0 (Post-LN in L), "
             "1/2 (Post-LN in d), %.2f (Pre-LN in d: the log-log slope of d sqrt(ln d) over the "
             "same d).",
             seeds, Ls, fixed_of[0], ds, fixed_of[1], bslope);
    write_text_table(&tb, dir, "factorial", caption);
    lnk_table_free(&tb);

    printf("grad_factorial: %d cells x %d statistics from %zu rows (L = %s; d = %s; %d seeds)\n",
           ncell, NSTAT, nob, Ls, ds, seeds);
    for (int q = 0; q < NQ; q++) {
        int n = 0;
        for (int c = 0; c < ncell; c++)
            for (int s = 0; s < NSTAT; s++)
                n += FIT(c, s, q).consistent;
        printf("  %-22s within 2 se of its reference in %d of %d\n", q_text[q], n,
               ncell * NSTAT);
    }
#undef FIT
    free(fit);
    free(cells);
    free(ob);
    return 0;
}
