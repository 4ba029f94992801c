/* grad_norms: the gradient-norm study of Xiong et al. 2020 (Theorem 1, Lemma 2,
 * Figure 3) at initialisation, on synthetic batches.
 *
 *   grad_norms depth   [options]   last-layer ||dL/dW2||_F against the depth L
 *   grad_norms width   [options]   the same against the width d
 *   grad_norms profile [options]   every block's W1, W2, attention weights (and the
 *                                  whole block) of an L-layer model (cls, and the
 *                                  L-L seq2seq model), Figure 3 (a, b)
 *
 * Each point (configuration, seed) initialises the model with that seed and
 * evaluates the gradient on n_batches synthetic batches (ids uniform in [4, V),
 * batch b of seed s drawn from stream 1000003 (s + 1) + b, so Post-LN and Pre-LN
 * and both settings see the same tokens).  Two statistics over the batches:
 * the mean of the per-batch norms ||g_b||_F and the norm of the mean gradient
 * ||mean_b g_b||_F (the one of the paper's Figure 3).  From the same passes,
 * the hidden-state statistics of lnkit/stats.h (||x||^2/d at every residual
 * point, Lemma 3's Jacobian norm, the (eps, delta)-boundedness fraction).
 *
 * Settings: theorem = init theorem (Wq = Wk = 0, Wo = I, Xavier-normal), h = 1,
 * d_ff = d, no label smoothing; realistic = Xavier-uniform, h = --heads (4),
 * d_ff = --ff-mult (4) x d, label smoothing 0.1.  Output weights tied to the
 * embedding as in the paper (--untied for a separate out.w).
 *
 * Output: OUT (default results/grad/SWEEP.csv) and OUT with _hidden before
 * .csv (unless --no-hidden), each with its .meta.json.  Resume: a point whose (key, seed) is already
 * in OUT is not recomputed; new rows are appended and the files rewritten
 * atomically (every --checkpoint seconds and at the end); when nothing is new
 * the files are left untouched.  Progress goes to stderr.
 *
 * The rows go to resumable sweep CSVs of the kit (csv_resume: the old rows
 * kept verbatim, the new points' rows after them).  Under mpirun (make MPI=1)
 * the points still to compute are spread over the ranks, the j-th on rank
 * j % P (kit/kit.h); at the end of each round of P points rank 0 decides
 * whether a checkpoint is due, and csv_flush gathers the rows of the points
 * done so far and writes them in point order: the files of a one-process run
 * (the seconds column aside). */
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/lnkit.h"
#include "kit/csvread.h"
#include "lnkit/stats.h"
#include "kit/kit.h"


static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        cli_die("out of memory");
    return p;
}

/* ----------------------------------------------------------- options */

enum { SW_DEPTH, SW_WIDTH, SW_PROFILE };
static const char *sweep_name[] = {"depth", "width", "profile"};

typedef struct {
    int sweep;
    const char *out;
    int Ls[64], nL, ds[64], nd;
    int L, d;
    int settings[2], nset;   /* 0 theorem, 1 realistic */
    int pos[2], npos;        /* 0 post, 1 pre */
    int tasks[3], ntask;     /* lnk_task */
    int seeds, seed0, nb, B, T, V, heads, ffmult, tie, threads;
    double ls_theorem, ls_real, beps, checkpoint;
    int verbose, no_hidden;
} opts;

/* The options (their lists into cli_ints, then into opts).  The sweep, the
 * first word, sets the defaults that differ between sweeps. */
typedef struct {
    opts o;
    cli_ints Ls, ds, tasks, settings, pos;
    double ls;
    int untied;
} args_t;

static int sweep_arg = -1; /* for defaults() */

static const cli_choice taskw[] = {{"lm", LNK_TASK_LM}, {"seq2seq", LNK_TASK_SEQ2SEQ},
                                   {"cls", LNK_TASK_CLS}, {NULL, 0}},
                        setw[] = {{"theorem", 0}, {"realistic", 1}, {NULL, 0}},
                        posw[] = {{"post", 0}, {"pre", 1}, {NULL, 0}};

#define O args_t
#define INT(nm, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .arg = a, CLI_AT(O, f), \
                                  .min = lo, .max = hi, .help = h}
static const cli_opt opts_table[] = {
    {.type = CLI_STR, .name = "out", .arg = "FILE", CLI_AT(O, o.out), .flags = CLI_WRITES,
     .def = "results/grad/SWEEP.csv",
     .help = "CSV to write or resume; hidden-state statistics go to FILE with _hidden before "
             ".csv"},
    {.type = CLI_INTS, .name = "Ls", .arg = "LIST", CLI_AT(O, Ls), .min = 1, .max = 1024,
     .help = "depth: the depths"},
    {.type = CLI_INTS, .name = "ds", .arg = "LIST", CLI_AT(O, ds), .min = 8, .max = 8192,
     .help = "width: the widths"},
    INT("d", "N", o.d, 8, 8192, "depth, profile: the width"),
    INT("L", "N", o.L, 1, 1024, "width, profile: the depth"),
    {.type = CLI_WORDS, .name = "task", CLI_AT(O, tasks), .ref = taskw,
     .help = "the tasks (seq2seq: L encoder and L decoder blocks)"},
    {.type = CLI_WORDS, .name = "settings", CLI_AT(O, settings), .ref = setw,
     .help = "the settings"},
    {.type = CLI_WORDS, .name = "norm-pos", CLI_AT(O, pos), .ref = posw,
     .help = "the norm positions"},
    INT("seeds", "N", o.seeds, 1, 100000, "seeds per point, from --seed0"),
    INT("seed0", "N", o.seed0, 0, 1 << 30, "the first seed"),
    INT("batches", "N", o.nb, 1, 100000, "batches per seed"),
    INT("rows", "N", o.B, 1, 1 << 16, "sequences per batch"),
    INT("len", "T", o.T, 1, 1 << 16, "positions per sequence"),
    INT("V", "N", o.V, 5, 1 << 24, "vocabulary"),
    INT("h", "N", o.heads, 1, 4096, "realistic: heads"),
    INT("ff-mult", "N", o.ffmult, 1, 64, "realistic: d_ff = N d"),
    {.type = CLI_REAL, .name = "label-smoothing", .arg = "A", CLI_AT(O, ls), .max = 0.999,
     .def = "theorem 0, realistic 0.1", .help = "label smoothing of both settings"},
    {.type = CLI_FLAG, .name = "untied", CLI_AT(O, untied),
     .help = "a separate output matrix out.w (default: tied to the embedding)"},
    {.type = CLI_REAL, .name = "bound-eps", .arg = "E", CLI_AT(O, o.beps), .min = 1e-12,
     .max = 1e12, .help = "threshold of the (eps, delta)-boundedness fraction"},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(O, o.threads), .min = 1, .max = 1024,
     .def = "OpenBLAS's default", .help = "BLAS threads"},
    {.type = CLI_REAL, .name = "save-every", .arg = "S", CLI_AT(O, o.checkpoint), .max = 1e9,
     .help = "seconds between rewrites of the CSVs"},
    {.type = CLI_FLAG, .name = "no-hidden", CLI_AT(O, o.no_hidden),
     .help = "skip the hidden-state statistics and their CSV"},
    {.type = CLI_FLAG, .name = "verbose", CLI_AT(O, o.verbose), .help = "a progress line per seed"},
    {0}};
#undef INT
#undef O

static void defaults(void *p)
{
    args_t *a = p;
    opts *o = &a->o;
    int sw = sweep_arg < 0 ? SW_DEPTH : sweep_arg;
    a->Ls = (cli_ints){11, {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48}};
    a->ds = (cli_ints){6, {32, 64, 128, 256, 512, 1024}};
    o->L = sw == SW_PROFILE ? 6 : 4;
    o->d = sw == SW_PROFILE ? 128 : 64;
    a->settings = (cli_ints){2, {0, 1}};
    a->pos = (cli_ints){2, {0, 1}};
    a->tasks = sw == SW_PROFILE ? (cli_ints){2, {LNK_TASK_CLS, LNK_TASK_SEQ2SEQ}}
                                : (cli_ints){1, {LNK_TASK_CLS}};
    o->seeds = 10, o->nb = 4, o->T = 16, o->V = 256, o->heads = 4, o->ffmult = 4;
    o->B = sw == SW_WIDTH ? 4 : 8;
    o->beps = 0.1, o->checkpoint = 30;
}

static const cli_cmd cmd = {
    .name = "grad_norms",
    .usage = "depth|width|profile [options]",
    .about = "Per-layer gradient norms of Post-LN and Pre-LN transformers at initialisation\n"
             "(Xiong et al. 2020, Theorem 1) against depth, width or along the layers, over\n"
             "seeds and batches; resumable.",
    .opts = opts_table, .size = sizeof(args_t), .defaults = defaults};

/* A list option into the study's array (non-empty, at most max values). */
static int copy_list(const char *name, const cli_ints *from, int *to, int max)
{
    if (from->n == 0 || from->n > max)
        cli_die("--%s: expected 1 to %d values, got %d", name, max, from->n);
    memcpy(to, from->v, sizeof(int) * (size_t)from->n);
    return from->n;
}

static void parse(opts *o, int argc, char **argv)
{
    for (int i = 0; i < 3 && argc > 1; i++)
        if (strcmp(argv[1], sweep_name[i]) == 0)
            sweep_arg = i;
    if (sweep_arg < 0 && argc > 1 && argv[1][0] != '-')
        cli_die("unknown sweep '%s': expected depth, width or profile (see --help)", argv[1]);
    args_t a;
    cli_parse(&cmd, &a, argc - (sweep_arg >= 0), argv + (sweep_arg >= 0));
    cli_setup_done();
    if (sweep_arg < 0)
        cli_die("the sweep is missing: depth, width or profile, then the options");
    *o = a.o;
    o->sweep = sweep_arg;
    o->nL = copy_list("Ls", &a.Ls, o->Ls, 64);
    o->nd = copy_list("ds", &a.ds, o->ds, 64);
    o->ntask = copy_list("task", &a.tasks, o->tasks, 3);
    o->nset = copy_list("settings", &a.settings, o->settings, 2);
    o->npos = copy_list("norm-pos", &a.pos, o->pos, 2);
    o->tie = !a.untied;
    o->ls_theorem = cli_given("label-smoothing") ? a.ls : 0;
    o->ls_real = cli_given("label-smoothing") ? a.ls : 0.1;
}

/* ----------------------------------------------------------- one point */

typedef struct {
    int setting, task, pos, L, d, h, dff, V, B, T, nb, tie;
    double ls, beps;
    char key[256];
} pconf;

static const char *set_name(int s) { return s ? "realistic" : "theorem"; }
static const char *pos_name(int p) { return p ? "pre" : "post"; }

static pconf make_pconf(const opts *o, int setting, int task, int pos, int L, int d)
{
    pconf p = {0};
    p.setting = setting, p.task = task, p.pos = pos, p.L = L, p.d = d;
    p.h = setting ? o->heads : 1;
    p.dff = setting ? o->ffmult * d : d;
    p.V = o->V, p.B = o->B, p.T = o->T, p.nb = o->nb, p.tie = o->tie;
    p.ls = setting ? o->ls_real : o->ls_theorem;
    p.beps = o->beps;
    snprintf(p.key, sizeof p.key, "%s/%s/%s/L%d/d%d/h%d/ff%d/V%d/B%d/T%d/nb%d/ls%g/tie%d/e%g",
             lnk_task_name((lnk_task)task), set_name(setting), pos_name(pos), L, d, p.h, p.dff,
             p.V, p.B, p.T, p.nb, p.ls, p.tie, p.beps);
    return p;
}

static void make_config(const pconf *p, int seed, lnk_config *c)
{
    lnk_config_default(c);
    c->task = (lnk_task)p->task;
    CLI_CK(lnk_config_set(c, "norm_pos", pos_name(p->pos)));
    c->init = p->setting ? LNK_INIT_XAVIER : LNK_INIT_THEOREM;
    c->d = p->d;
    c->h = p->h;
    c->d_ff = p->dff;
    c->L = p->L;
    c->V = p->V;
    c->seed = (uint64_t)seed;
    c->tie_output = p->tie != 0;
    c->label_smoothing = p->ls;
    CLI_CK(lnk_config_finalize(c));
}

/* A gradient statistic over the batches: a tensor or a glob group. */
typedef struct {
    char stack[4];
    int layer;
    char label[32];      /* "ffn.w2", "block", ... */
    char pattern[96];
    int *tix, nt;        /* matching tensors */
    double sum_norm;     /* sum over batches of ||g_b|| */
    double nom;          /* ||mean_b g_b|| (after the batches) */
} item;

/* Hidden-state accumulator of one site over the batches. */
typedef struct {
    const char *stack, *site;
    int layer, has_jac;
    size_t n;
    double mean, sd, max, frac, jmean, jmax;
} hsite;

typedef struct {
    hsite *v;
    int n, cap;
} hlist;

static void hl_add(hlist *h, int *idx, const char *stack, int layer, const char *site,
                   const lnk_stats_sq *sq, const lnk_stats_jac *jac)
{
    int i = (*idx)++;
    if (i == h->n) { /* first batch: create the site */
        if (h->n == h->cap) {
            h->cap = h->cap ? 2 * h->cap : 256;
            h->v = realloc(h->v, sizeof(hsite) * h->cap);
            if (!h->v)
                cli_die("out of memory");
        }
        hsite z = {stack, site, layer, jac != NULL, 0, 0, 0, -INFINITY, 0, 0, 0};
        h->v[h->n++] = z;
    }
    hsite *s = &h->v[i];
    s->n += sq->n;
    s->mean += sq->mean;
    s->sd += sq->sd;
    s->max = sq->max > s->max ? sq->max : s->max;
    s->frac += sq->frac_over;
    if (jac) {
        s->jmean += jac->mean;
        s->jmax = jac->max > s->jmax ? jac->max : s->jmax;
    }
}

/* Sites of one stack in a fixed order; the Jacobian goes with the site whose
 * vector is the norm's input (Post-LN: the residual sum; Pre-LN: the unit's input). */
static void hl_stack(hlist *h, int *idx, const char *name, const lnk_stats_stack *s, int post,
                     int has_norm)
{
    for (int l = 0; l < s->L; l++) {
        const lnk_stats_block *b = &s->blk[l];
        hl_add(h, idx, name, l, "in", &b->in, !post && has_norm ? &b->jac[0] : NULL);
        for (int j = 0; j < b->n_units; j++) {
            const lnk_stats_jac *jac = NULL;
            if (has_norm)
                jac = post ? &b->jac[j] : (j + 1 < b->n_units ? &b->jac[j + 1] : NULL);
            hl_add(h, idx, name, l, b->unit[j], &b->res[j], jac);
        }
    }
    hl_add(h, idx, name, s->L, "out", &s->out, s->has_final ? &s->final_jac : NULL);
}

typedef struct {
    double loss, gnorm, seconds;
    item *it;
    int nit;
    hlist hid;
} presult;

/* Items of a sweep point: last W2 and W1 (depth, width) or every block's
 * tensors and the block group (profile). */
static void make_items(const lnk_model *m, int profile, item **out, int *nout)
{
    const lnk_config *c = lnk_model_config(m);
    int cap = 64, n = 0;
    item *it = cli_alloc(sizeof(item) * cap);
#define ADD(st, l, lab, ...)                                                                      \
    do {                                                                                          \
        if (n == cap)                                                                             \
            it = realloc(it, sizeof(item) * (cap *= 2));                                          \
        if (!it)                                                                                  \
            cli_die("out of memory");                                                                \
        memset(&it[n], 0, sizeof(item));                                                          \
        snprintf(it[n].stack, sizeof it[n].stack, "%s", st);                                      \
        it[n].layer = l;                                                                          \
        snprintf(it[n].label, sizeof it[n].label, "%s", lab);                                     \
        snprintf(it[n].pattern, sizeof it[n].pattern, __VA_ARGS__);                               \
        n++;                                                                                      \
    } while (0)
    int has_dec = c->task != LNK_TASK_CLS, has_enc = c->task != LNK_TASK_LM;
    if (!profile) {
        char w2[LNK_NAME_MAX];
        lnk_stats_last_w2(m, w2, sizeof w2);
        const char *st = has_dec ? "dec" : "enc";
        int l = has_dec ? c->L_dec - 1 : c->L_enc - 1;
        ADD(st, l, "ffn.w2", "%s", w2);
        ADD(st, l, "ffn.w1", "%s.%d.ffn.w1", st, l);
    } else {
        static const char *const at[] = {"wq", "wk", "wv", "wo"};
        for (int s = 0; s < 2; s++) {
            if (!(s ? has_dec : has_enc))
                continue;
            const char *st = s ? "dec" : "enc";
            int L = s ? c->L_dec : c->L_enc, cross = s && has_enc;
            for (int l = 0; l < L; l++) {
                for (int k = 0; k < 4; k++) {
                    char lab[32];
                    snprintf(lab, sizeof lab, "attn.%s", at[k]);
                    ADD(st, l, lab, "%s.%d.%s", st, l, lab);
                }
                if (cross)
                    for (int k = 0; k < 4; k++) {
                        char lab[32];
                        snprintf(lab, sizeof lab, "xattn.%s", at[k]);
                        ADD(st, l, lab, "%s.%d.%s", st, l, lab);
                    }
                ADD(st, l, "ffn.w1", "%s.%d.ffn.w1", st, l);
                ADD(st, l, "ffn.w2", "%s.%d.ffn.w2", st, l);
                ADD(st, l, "block", "%s.%d.*", st, l);
            }
        }
    }
#undef ADD
    const lnk_layout *lay = lnk_model_layout(m);
    for (int i = 0; i < n; i++) {
        it[i].tix = cli_alloc(sizeof(int) * lay->n_tensors);
        for (int t = 0; t < lay->n_tensors; t++)
            if (fnmatch(it[i].pattern, lay->t[t].name, 0) == 0)
                it[i].tix[it[i].nt++] = t;
        if (it[i].nt == 0)
            cli_die("internal: pattern '%s' matches no tensor", it[i].pattern);
    }
    *out = it;
    *nout = n;
}

/* Parameter and gradient buffers kept from point to point: fresh 100 MB
 * arrays for every seed would cost their page faults again each time. */
typedef struct {
    double *th, *g;
    size_t n;
} pbuf;

static void run_point(const pconf *p, int seed, int profile, int hidden, pbuf *buf,
                      presult *r)
{
    double t0 = lnk_now();
    lnk_config c;
    make_config(p, seed, &c);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    const lnk_layout *lay = lnk_model_layout(m);
    size_t np = lnk_model_n_params(m);
    if (np > buf->n) {
        free(buf->th);
        free(buf->g);
        buf->th = cli_alloc(sizeof(double) * np);
        buf->g = cli_alloc(sizeof(double) * np);
        buf->n = np;
    }
    double *th = buf->th, *g = buf->g;
    CLI_CK(lnk_model_init_params(m, th));
    memset(r, 0, sizeof *r);
    make_items(m, profile, &r->it, &r->nit);
    /* running sums of the tensors the items need (only those: the full
     * gradient of a wide model is hundreds of MB) */
    int nt = lay->n_tensors;
    size_t *soff = cli_alloc(sizeof(size_t) * nt), ssz = 0;
    for (int t = 0; t < nt; t++)
        soff[t] = (size_t)-1;
    for (int i = 0; i < r->nit; i++)
        for (int k = 0; k < r->it[i].nt; k++) {
            int t = r->it[i].tix[k];
            if (soff[t] == (size_t)-1) {
                soff[t] = ssz;
                ssz += lay->t[t].size;
            }
        }
    double *sum = calloc(ssz ? ssz : 1, sizeof(double));
    if (!sum)
        cli_die("out of memory");
    int len = p->T, S = c.task == LNK_TASK_LM ? 0 : len, Tst = c.task == LNK_TASK_CLS ? 0 : len + 1;
    lnk_workspace *ws = lnk_workspace_alloc(m, p->B, S, Tst, 0);
    if (!ws)
        cli_die_lib();
    int post = p->pos == 0, has_norm = c.norm != LNK_NORM_NONE;
    for (int b = 0; b < p->nb; b++) {
        lnk_batch bt;
        CLI_CK(lnk_batch_synthetic(m, p->B, len, 1000003ull * ((uint64_t)seed + 1) + (uint64_t)b, &bt));
        double loss;
        CLI_CK(lnk_model_eval(ws, th, &bt, &loss, g, NULL));
        lnk_batch_free(&bt);
        r->loss += loss / p->nb;
        double tot = 0;
        for (size_t i = 0; i < np; i++)
            tot += g[i] * g[i];
        r->gnorm += sqrt(tot) / p->nb;
        for (int i = 0; i < r->nit; i++) {
            double v;
            CLI_CK(lnk_stats_group_norm(m, g, r->it[i].pattern, &v, NULL));
            r->it[i].sum_norm += v;
        }
        for (int t = 0; t < nt; t++)
            if (soff[t] != (size_t)-1) {
                const double *gt = g + lay->t[t].offset;
                double *st = sum + soff[t];
                for (size_t k = 0; k < lay->t[t].size; k++)
                    st[k] += gt[k];
            }
        if (!hidden)
            continue;
        lnk_stats_hidden_t hs;
        CLI_CK(lnk_stats_hidden(ws, p->beps, &hs));
        int idx = 0;
        if (hs.enc.L)
            hl_stack(&r->hid, &idx, "enc", &hs.enc, post, has_norm);
        if (hs.dec.L)
            hl_stack(&r->hid, &idx, "dec", &hs.dec, post, has_norm);
        lnk_stats_hidden_free(&hs);
    }
    for (int i = 0; i < r->nit; i++) {
        double s = 0;
        for (int k = 0; k < r->it[i].nt; k++) {
            int t = r->it[i].tix[k];
            const double *st = sum + soff[t];
            for (size_t q = 0; q < lay->t[t].size; q++)
                s += (st[q] / p->nb) * (st[q] / p->nb);
        }
        r->it[i].nom = sqrt(s);
    }
    lnk_workspace_free(ws);
    free(sum);
    free(soff);
    lnk_model_free(m);
    lnk_config_clear(&c);
    r->seconds = lnk_now() - t0;
}

static void presult_free(presult *r)
{
    for (int i = 0; i < r->nit; i++)
        free(r->it[i].tix);
    free(r->it);
    free(r->hid.v);
}

/* ----------------------------------------------------------- the sweep */

static const char *const H_POINT[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "V", "B", "T", "batches",
    "label_smoothing", "tie_output", "seed", "loss", "w2_mean_norm", "w2_norm_of_mean",
    "w1_mean_norm", "w1_norm_of_mean", "grad_mean_norm", "seconds"};
static const char *const H_PROFILE[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "V", "B", "T", "batches",
    "label_smoothing", "tie_output", "seed", "loss", "stack", "layer", "tensor", "mean_norm",
    "norm_of_mean"};
static const char *const H_HIDDEN[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "seed", "stack", "layer", "site",
    "n_tokens",
    "sq_mean", "sq_sd", "sq_max", "frac_over", "bound_eps", "jac_mean", "jac_max"};
#define NCOL(a) ((int)(sizeof a / sizeof a[0]))

static void conf_cells(lnk_csv *r, const pconf *p, int seed)
{
    CLI_CK(lnk_csv_str(r, p->key));
    CLI_CK(lnk_csv_str(r, set_name(p->setting)));
    CLI_CK(lnk_csv_str(r, lnk_task_name((lnk_task)p->task)));
    CLI_CK(lnk_csv_str(r, pos_name(p->pos)));
    CLI_CK(lnk_csv_int(r, p->L));
    CLI_CK(lnk_csv_int(r, p->d));
    CLI_CK(lnk_csv_int(r, p->h));
    CLI_CK(lnk_csv_int(r, p->dff));
    CLI_CK(lnk_csv_int(r, p->V));
    CLI_CK(lnk_csv_int(r, p->B));
    CLI_CK(lnk_csv_int(r, p->T));
    CLI_CK(lnk_csv_int(r, p->nb));
    CLI_CK(lnk_csv_double(r, p->ls));
    CLI_CK(lnk_csv_int(r, p->tie));
    CLI_CK(lnk_csv_int(r, seed));
}

/* Point pt's rows: main (one, or one per item for a profile) and hidden
 * (hid NULL: none). */
static void add_rows(out_csv *main, out_csv *hid, long pt, const pconf *p, int seed, int profile,
                     const presult *r)
{
    lnk_csv *c = &main->c;
    csv_point(main, pt);
    if (!profile) {
        conf_cells(c, p, seed);
        CLI_CK(lnk_csv_double(c, r->loss));
        for (int i = 0; i < 2; i++) { /* w2, w1 */
            CLI_CK(lnk_csv_double(c, r->it[i].sum_norm / p->nb));
            CLI_CK(lnk_csv_double(c, r->it[i].nom));
        }
        CLI_CK(lnk_csv_double(c, r->gnorm));
        CLI_CK(lnk_csv_double(c, r->seconds));
        CLI_CK(lnk_csv_end_row(c));
    } else
        for (int i = 0; i < r->nit; i++) {
            conf_cells(c, p, seed);
            CLI_CK(lnk_csv_double(c, r->loss));
            CLI_CK(lnk_csv_str(c, r->it[i].stack));
            CLI_CK(lnk_csv_int(c, r->it[i].layer));
            CLI_CK(lnk_csv_str(c, r->it[i].label));
            CLI_CK(lnk_csv_double(c, r->it[i].sum_norm / p->nb));
            CLI_CK(lnk_csv_double(c, r->it[i].nom));
            CLI_CK(lnk_csv_end_row(c));
        }
    if (!hid)
        return;
    c = &hid->c;
    csv_point(hid, pt);
    for (int i = 0; i < r->hid.n; i++) {
        const hsite *s = &r->hid.v[i];
        CLI_CK(lnk_csv_str(c, p->key));
        CLI_CK(lnk_csv_str(c, set_name(p->setting)));
        CLI_CK(lnk_csv_str(c, lnk_task_name((lnk_task)p->task)));
        CLI_CK(lnk_csv_str(c, pos_name(p->pos)));
        CLI_CK(lnk_csv_int(c, p->L));
        CLI_CK(lnk_csv_int(c, p->d));
        CLI_CK(lnk_csv_int(c, p->h));
        CLI_CK(lnk_csv_int(c, p->dff));
        CLI_CK(lnk_csv_int(c, seed));
        CLI_CK(lnk_csv_str(c, s->stack));
        CLI_CK(lnk_csv_int(c, s->layer));
        CLI_CK(lnk_csv_str(c, s->site));
        CLI_CK(lnk_csv_int(c, (long long)s->n));
        CLI_CK(lnk_csv_double(c, s->mean / p->nb));
        CLI_CK(lnk_csv_double(c, s->sd / p->nb));
        CLI_CK(lnk_csv_double(c, s->max));
        CLI_CK(lnk_csv_double(c, s->frac / p->nb));
        CLI_CK(lnk_csv_double(c, p->beps));
        if (s->has_jac && isfinite(s->jmax)) {
            CLI_CK(lnk_csv_double(c, s->jmean / p->nb));
            CLI_CK(lnk_csv_double(c, s->jmax));
        } else {
            CLI_CK(lnk_csv_str(c, ""));
            CLI_CK(lnk_csv_str(c, ""));
        }
        CLI_CK(lnk_csv_end_row(c));
    }
}

/* Sorted "key#seed" strings of the points already in the main CSV. */
typedef struct {
    char **v;
    size_t n;
} keyset;

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keys_build(keyset *k, const study_table *t)
{
    size_t n = t->d.nrow;
    k->v = cli_alloc(sizeof(char *) * (n ? n : 1));
    k->n = 0;
    if (!n)
        return;
    int ks = study_table_col(t, "key"), ss = study_table_col(t, "seed");
    for (size_t i = 0; i < n; i++) {
        char *s = NULL;
        if (asprintf(&s, "%s#%s", study_table_str(t, i, ks), study_table_str(t, i, ss)) < 0)
            cli_die("out of memory");
        k->v[k->n++] = s;
    }
    qsort(k->v, k->n, sizeof(char *), cmpstr);
}

static int keys_has(const keyset *k, const char *key, int seed)
{
    char buf[300];
    snprintf(buf, sizeof buf, "%s#%d", key, seed);
    const char *p = buf;
    return bsearch(&p, k->v, k->n, sizeof(char *), cmpstr) != NULL;
}

typedef struct {
    const opts *o;
    const char *path, *hpath;
    out_csv main, hid;     /* hid: unless --no-hidden */
    lnk_config base;
    int have_base;
    char start[32];
    double t0, last_ckpt;
    int computed, skipped;
    /* Points to compute (not in the CSV when the run began), numbered j = 0, 1, ...
     * in loop order; point j is rank j % P's (kit/kit.h), its rows those of
     * csv_point(j).  npend: points done so far. */
    keyset old;            /* (key, seed) of the rows read from the CSV */
    char **confs;          /* keys of the configurations met so far */
    int nconf;
    long npend;
    pbuf buf;              /* run_point's parameter and gradient buffers */
} sweep;

/* The sidecars' own keys (lnk_meta_free them). */
static lnk_meta *sweep_extra(const sweep *s)
{
    const opts *o = s->o;
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    char study[64];
    snprintf(study, sizeof study, "grad_norms %s", sweep_name[o->sweep]);
    lnk_meta_str(m, "study", study);
    lnk_meta_str(m, "paper", "Xiong et al. 2020, Theorem 1, Lemma 2, Figure 3");
    lnk_meta_str(m, "data", "synthetic batches, ids uniform in [4, V), batch b of seed s from "
                            "stream 1000003 (s + 1) + b");
    lnk_meta_ints(m, "Ls", o->Ls, (size_t)o->nL);
    lnk_meta_ints(m, "ds", o->ds, (size_t)o->nd);
    lnk_meta_int(m, "L", o->L);
    lnk_meta_int(m, "d", o->d);
    lnk_meta_int(m, "seeds", o->seeds);
    lnk_meta_int(m, "seed0", o->seed0);
    lnk_meta_int(m, "batches", o->nb);
    lnk_meta_int(m, "B", o->B);
    lnk_meta_int(m, "T", o->T);
    lnk_meta_int(m, "V", o->V);
    lnk_meta_int(m, "realistic_heads", o->heads);
    lnk_meta_int(m, "realistic_ff_mult", o->ffmult);
    lnk_meta_real(m, "label_smoothing_theorem", o->ls_theorem);
    lnk_meta_real(m, "label_smoothing_realistic", o->ls_real);
    lnk_meta_bool(m, "tie_output", o->tie);
    lnk_meta_real(m, "bound_eps", o->beps);
    lnk_meta_bool(m, "hidden_statistics", !o->no_hidden);
    lnk_meta_int(m, "points_computed_this_run", s->computed);
    lnk_meta_int(m, "points_skipped_this_run", s->skipped);
    lnk_meta_str(m, "config_note", "config is the first point computed; every row's key column "
                                   "holds its own configuration");
    return m;
}

/* Collective: the rows of the points done so far to rank 0, which rewrites
 * the CSVs and their sidecars if they have new rows (last: csv_close). */
static void checkpoint(sweep *s, int last)
{
    lnk_meta *extra = sweep_extra(s);
    const lnk_config *c = s->have_base ? &s->base : NULL;
    if (last) {
        csv_close(&s->main, c, extra, s->start, s->t0);
        if (!s->o->no_hidden)
            csv_close(&s->hid, c, extra, s->start, s->t0);
    } else {
        csv_flush(&s->main, c, extra, s->start, s->t0);
        if (!s->o->no_hidden)
            csv_flush(&s->hid, c, extra, s->start, s->t0);
    }
    lnk_meta_free(extra);
    s->last_ckpt = lnk_now();
}

/* After every point to compute (on every rank): at the end of each round of
 * P points, rank 0 decides whether a checkpoint is due (every point in a
 * one-process run, as before). */
static void point_done(sweep *s)
{
    s->npend++;
    if (s->npend % study_ranks())
        return;
    int now = study_root() && lnk_now() - s->last_ckpt > s->o->checkpoint;
    CLI_CK(lnk_comm_bcast(&now, sizeof now, 0));
    if (now)
        checkpoint(s, 0);
}

static void run_conf(sweep *s, const pconf *p, int idx, int total)
{
    const opts *o = s->o;
    /* a configuration met before in this run (a value given twice) has all
     * its seeds done */
    int seen = 0;
    for (int i = 0; i < s->nconf && !seen; i++)
        seen = strcmp(s->confs[i], p->key) == 0;
    if (!seen) {
        char **c = realloc(s->confs, sizeof(char *) * (size_t)(s->nconf + 1));
        if (!c)
            cli_die("out of memory");
        s->confs = c;
        s->confs[s->nconf++] = xstrdup(p->key);
    }
    int done = 0, todo = 0;
    double t0 = lnk_now(), w2 = 0;
    for (int k = 0; k < o->seeds; k++) {
        int seed = o->seed0 + k;
        if (seen || keys_has(&s->old, p->key, seed)) {
            s->skipped++;
            continue;
        }
        todo++;
        long j = s->npend;
        if (!s->have_base) {
            make_config(p, seed, &s->base);
            s->have_base = 1;
        }
        if (study_mine(j)) {
            presult r;
            run_point(p, seed, o->sweep == SW_PROFILE, !o->no_hidden, &s->buf, &r);
            add_rows(&s->main, o->no_hidden ? NULL : &s->hid, j, p, seed,
                     o->sweep == SW_PROFILE, &r);
            /* last W2 (depth, width) or the top block's W2 (profile) for the progress line */
            for (int i = r.nit - 1; i >= 0; i--)
                if (strcmp(r.it[i].label, "ffn.w2") == 0) {
                    w2 += r.it[i].nom;
                    break;
                }
            if (o->verbose && study_root())
                fprintf(stderr, "  %s seed %d: loss %.4f, %.2f s\n", p->key, seed, r.loss,
                        r.seconds);
            presult_free(&r);
            done++;
        }
        s->computed++;
        point_done(s);
    }
    if (!study_root())
        return;
    if (todo && study_ranks() == 1)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds in %.2f s, mean ||dL/dW2(last)|| %.5g "
                "(total %.1f s)\n", sweep_name[o->sweep], idx, total, p->key, done,
                lnk_now() - t0, w2 / done, lnk_now() - s->t0);
    else if (todo && done)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds over %d ranks, %d on rank 0 in %.2f s, mean "
                "||dL/dW2(last)|| %.5g (total %.1f s)\n", sweep_name[o->sweep], idx, total,
                p->key, todo, study_ranks(), done, lnk_now() - t0, w2 / done, lnk_now() - s->t0);
    else if (todo)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds on the other ranks (total %.1f s)\n",
                sweep_name[o->sweep], idx, total, p->key, todo, lnk_now() - s->t0);
    else
        fprintf(stderr, "[%s %d/%d] %s: all %d seeds already in the CSV, skipped\n",
                sweep_name[o->sweep], idx, total, p->key, o->seeds);
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "grad_norms");
    opts o;
    parse(&o, argc, argv);
    if (o.threads)
        lnk_set_blas_threads(o.threads);
    char path[1024], hpath[1100], dflt[256];
    snprintf(dflt, sizeof dflt, "results/grad/%s.csv", sweep_name[o.sweep]);
    snprintf(path, sizeof path, "%s", o.out ? o.out : dflt);
    size_t pl = strlen(path);
    if (pl < 5 || strcmp(path + pl - 4, ".csv") != 0)
        cli_die("--out '%s': expected a file name ending in .csv", path);
    snprintf(hpath, sizeof hpath, "%.*s_hidden.csv", (int)(pl - 4), path);
    /* the directory must exist or be creatable */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        make_dir(dir);
    }
    sweep s;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.path = path;
    s.hpath = hpath;
    int prof = o.sweep == SW_PROFILE;
    study_table old;
    size_t n_old = csv_resume(&s.main, path, prof ? H_PROFILE : H_POINT,
                              prof ? NCOL(H_PROFILE) : NCOL(H_POINT), &old);
    if (!o.no_hidden)
        csv_resume(&s.hid, hpath, H_HIDDEN, NCOL(H_HIDDEN), NULL);
    keys_build(&s.old, &old);
    study_table_free(&old);
    if (n_old && study_root())
        fprintf(stderr, "grad_norms %s: resuming %s (%zu rows)\n", sweep_name[o.sweep], path,
                n_old);
    lnk_iso_time(s.start, sizeof s.start);
    s.t0 = s.last_ckpt = lnk_now();
    int total = 0, idx = 0;
    int nvar = o.sweep == SW_DEPTH ? o.nL : o.sweep == SW_WIDTH ? o.nd : 1;
    total = o.ntask * o.nset * o.npos * nvar;
    for (int ti = 0; ti < o.ntask; ti++)
        for (int si = 0; si < o.nset; si++)
            for (int pi = 0; pi < o.npos; pi++)
                for (int v = 0; v < nvar; v++) {
                    int L = o.sweep == SW_DEPTH ? o.Ls[v] : o.L;
                    int d = o.sweep == SW_WIDTH ? o.ds[v] : o.d;
                    int h = o.settings[si] ? o.heads : 1;
                    if (d % h || d % 2)
                        cli_die("d = %d is not a multiple of the heads (%d) or not even", d, h);
                    pconf p = make_pconf(&o, o.settings[si], o.tasks[ti], o.pos[pi], L, d);
                    run_conf(&s, &p, ++idx, total);
                }
    checkpoint(&s, 1);
    if (study_root()) {
        fprintf(stderr, "grad_norms %s: computed %d points, skipped %d already in %s (%.1f s)\n",
                sweep_name[o.sweep], s.computed, s.skipped, path, lnk_now() - s.t0);
    }
    for (size_t i = 0; i < s.old.n; i++)
        free(s.old.v[i]);
    free(s.old.v);
    for (int i = 0; i < s.nconf; i++)
        free(s.confs[i]);
    free(s.confs);
    free(s.buf.th);
    free(s.buf.g);
    if (s.have_base)
        lnk_config_clear(&s.base);
    return 0;
}
