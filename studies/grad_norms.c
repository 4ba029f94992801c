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
 * (the seconds column aside).
 *
 * This file: the options and the loop over the configurations; a point and
 * the sweep's files are in studies/grad_norms/ (grad.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "grad_norms/grad.h"

/* ----------------------------------------------------------- options */

/* The options (their lists into cli_ints, then into opts).  The sweep, the
 * first word, sets the defaults that differ between sweeps: one command a
 * sweep, the same options (cmds[]). */
typedef struct {
    opts o;
    cli_ints Ls, ds, tasks, settings, pos;
    double ls;
    int untied;
} args_t;

static const cli_choice taskw[] = {{"lm", LNK_TASK_LM}, {"seq2seq", LNK_TASK_SEQ2SEQ},
                                   {"cls", LNK_TASK_CLS}, {NULL, 0}},
                        setw[] = {{"theorem", 0}, {"realistic", 1}, {NULL, 0}},
                        posw[] = {{"post", 0}, {"pre", 1}, {NULL, 0}};

#define O args_t
#define INT(nm, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .arg = a, CLI_AT(O, f), \
                                  .min = lo, .max = hi, .help = h}
static const cli_opt opts_table[] = {
    STUDY_OPT_OUT(O, o.out, "FILE", CLI_RESUMED, "results/grad/SWEEP.csv",
                  "CSV to write or resume; hidden-state statistics go to FILE with _hidden "
                  "before .csv"),
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

static void defaults_of(args_t *a, int sw)
{
    opts *o = &a->o;
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

static void defaults_depth(void *p) { defaults_of(p, SW_DEPTH); }
static void defaults_width(void *p) { defaults_of(p, SW_WIDTH); }
static void defaults_profile(void *p) { defaults_of(p, SW_PROFILE); }

#define GRAD_CMD(dflt)                                                                         \
    {.name = "grad_norms",                                                                     \
     .usage = "depth|width|profile [options]",                                                 \
     .about = "Per-layer gradient norms of Post-LN and Pre-LN transformers at initialisation\n" \
              "(Xiong et al. 2020, Theorem 1) against depth, width or along the layers, over\n" \
              "seeds and batches; resumable.",                                                 \
     .opts = opts_table, .size = sizeof(args_t), .defaults = dflt}
/* indexed by the sweep (SW_*) */
static const cli_cmd cmds[3] = {GRAD_CMD(defaults_depth), GRAD_CMD(defaults_width),
                                GRAD_CMD(defaults_profile)};
#undef GRAD_CMD

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
    int sweep = -1;
    for (int i = 0; i < 3 && argc > 1; i++)
        if (strcmp(argv[1], sweep_name[i]) == 0)
            sweep = i;
    if (sweep < 0 && argc > 1 && argv[1][0] != '-')
        cli_die("unknown sweep '%s': expected depth, width or profile (see --help)", argv[1]);
    args_t a;
    /* without a sweep (--help): the depth sweep's defaults */
    cli_parse(&cmds[sweep < 0 ? SW_DEPTH : sweep], &a, argc - (sweep >= 0), argv + (sweep >= 0));
    cli_setup_done();
    if (sweep < 0)
        cli_die("the sweep is missing: depth, width or profile, then the options");
    *o = a.o;
    o->sweep = sweep;
    o->nL = copy_list("Ls", &a.Ls, o->Ls, 64);
    o->nd = copy_list("ds", &a.ds, o->ds, 64);
    o->ntask = copy_list("task", &a.tasks, o->tasks, 3);
    o->nset = copy_list("settings", &a.settings, o->settings, 2);
    o->npos = copy_list("norm-pos", &a.pos, o->pos, 2);
    o->tie = !a.untied;
    o->ls_theorem = cli_given("label-smoothing") ? a.ls : 0;
    o->ls_real = cli_given("label-smoothing") ? a.ls : 0.1;
}

/* The output CSVs: --out (default results/grad/SWEEP.csv) and the hidden
 * statistics' FILE_hidden.csv; the folder made if needed. */
static void out_paths(const opts *o, char *path, size_t np, char *hpath, size_t nh)
{
    char dflt[256];
    snprintf(dflt, sizeof dflt, "results/grad/%s.csv", sweep_name[o->sweep]);
    snprintf(path, np, "%s", o->out ? o->out : dflt);
    size_t pl = strlen(path);
    if (pl < 5 || strcmp(path + pl - 4, ".csv") != 0)
        cli_die("--out '%s': expected a file name ending in .csv", path);
    snprintf(hpath, nh, "%.*s_hidden.csv", (int)(pl - 4), path);
    /* the directory must exist or be creatable */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        make_dir(dir);
    }
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "grad_norms");
    opts o;
    parse(&o, argc, argv);
    if (o.threads)
        lnk_set_blas_threads(o.threads);
    char path[1024], hpath[1100];
    out_paths(&o, path, sizeof path, hpath, sizeof hpath);
    sweep s;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.path = path;
    s.hpath = hpath;
    size_t n_old = sweep_open(&s);
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
    sweep_free(&s);
    return 0;
}
