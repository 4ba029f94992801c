/* anatomy: the anatomy of the loss curvature at initialisation (issue 17):
 * Post-LN vs Pre-LN (and RMSNorm, per-head qk_norm), for the lm task on a
 * synthetic batch and the seq2seq task on the first pairs of Multi30k, over
 * depth and width with seeds.  For every point (task, norm position, norm,
 * qk_norm, L, d, seed):
 *   - the largest and smallest eigenvalue of the Hessian H, its Gauss-Newton
 *     part G = J^T H_out J and its functional part F = H - G (Lanczos, with
 *     explicit residuals), and the mass of each unit eigenvector on every
 *     named tensor (sum of its squared entries there; the masses sum to 1);
 *   - ||A_bb||_F (Hutchinson on ||A_bb z||^2, with its standard error) of the
 *     diagonal block of every weight matrix of every layer (Q, K, V, O, the
 *     two FFN matrices; the cross-attention's too), for A = H, G and F;
 *   - the SLQ density of the Hessian's diagonal block of each weight kind
 *     (all layers of one side together: emb, Q, K, V, O, FFN1, FFN2, out)
 *     and the Jensen-Shannon distance between every two of them, on a common
 *     grid with sigma = --sigma-fraction of the common node range (natural
 *     log: distances in [0, sqrt(ln 2)]); and the same between the spectra
 *     each divided by its block's largest |SLQ node| (js_scaled: shapes
 *     only, scale removed).
 * Files in OUT/ (CSV, each with its .meta.json sidecar):
 *   extremes.csv   key,operator,which,eigenvalue,residual,converged,steps,scale
 *   mass.csv       key,operator,which,tensor,mass
 *   blocknorms.csv key,block,side,layer,kind,n,operator,frob,frob_se
 *   js.csv         key,block_a,block_b,js_distance,sigma,js_scaled,sigma_scaled
 * where key = task,norm_pos,norm,qk_norm,L,d,seed,n_params.  The summary
 * (tables, figures, claims) is made from these files by python3 -m
 * studies.summary anatomy DIR; studies/scripts/study_anatomy.sh runs both.
 * Every Lanczos and probe stream uses seed --rng-seed (0), as `lnkit eigs`,
 * so an extreme here is the one `lnkit eigs -k 1 --which both --tol T
 * --max-steps M --operator OP` gives on the same weights and batch.
 *
 * --resume (the long runs: studies/scripts/study_anatomy.sh --full) continues
 * the four CSVs in OUT: a point (key columns task ... seed) whose rows are in
 * js.csv, the file written last, is done and skipped; the others are
 * computed, their rows appended after the kept ones (the kit's resumable
 * sweep CSVs, csv_resume) and the files rewritten atomically with their
 * sidecars after every point (every round of P points under mpirun, the j-th
 * point still to do on rank j % P).  Rows of a point that a kill cut off
 * between the files (in extremes.csv but not yet in js.csv) are dropped first
 * and the point is computed again.  The settings that are not key columns
 * (h, the data, tol, Lanczos steps, probes, SLQ runs and steps, sigma
 * fraction, rng seed) must be those of OUT/extremes.meta.json, else the run
 * fails naming the first that differs: rows of two settings never mix.
 *
 * This file: the options and the sweep over the points; the points, the
 * files and the measurements of a point are in studies/anatomy/ (anatomy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/curv_opts.h"
#include "front/front.h"
#include "front/progress.h"
#include "anatomy/anatomy.h"

typedef struct {
    opts_t o;
    cli_ints lm_L, lm_d, s2s_L, s2s_d;
    int no_variants;
} args_t;

#define O args_t
#define INTS(nm, f, lo, hi, h) {.type = CLI_INTS, .name = nm, .arg = "LIST", CLI_AT(O, f), \
                                .min = lo, .max = hi, .help = h}
#define INT(nm, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .arg = a, CLI_AT(O, f), \
                                  .min = lo, .max = hi, .help = h}
/* a renamed option: its old name (opt.h) */
#define INT_WAS(nm, old, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .was = old, .arg = a, \
                                           CLI_AT(O, f), .min = lo, .max = hi, .help = h}
static const cli_opt opts[] = {
    STUDY_OPT_OUT(O, o.out, "DIR", 0, NULL, "output directory"),
    INTS("lm-L", lm_L, 1, 256, "lm depths at d = --lm-d-ref ('': none)"),
    INTS("lm-d", lm_d, 2, 4096, "lm widths at L = --lm-L-ref ('': none)"),
    INT("lm-L-ref", "N", o.lm_refL, 1, 256, "the lm reference point's depth"),
    INT("lm-d-ref", "N", o.lm_refd, 2, 4096, "the lm reference point's width"),
    INTS("s2s-L", s2s_L, 1, 256, "seq2seq depths, L_enc = L_dec ('': none)"),
    INTS("s2s-d", s2s_d, 2, 4096, "seq2seq widths at L = --s2s-L-ref ('': none)"),
    INT("s2s-L-ref", "N", o.s2s_refL, 1, 256, "the seq2seq reference point's depth"),
    INT("s2s-d-ref", "N", o.s2s_refd, 2, 4096, "the seq2seq reference point's width"),
    {.type = CLI_FLAG, .name = "no-variants", CLI_AT(O, no_variants),
     .help = "no RMSNorm or qk_norm points (lm reference only)"},
    INT("h", "N", o.h, 1, 256, "heads"),
    INT("V", "N", o.V, 5, 1 << 24, "lm: vocabulary"),
    INT("rows", "N", o.B, 1, 1 << 20, "lm: rows of the synthetic batch"),
    INT("len", "T", o.T, 1, 1 << 20, "lm: positions per row"),
    CLI_OPT_SRC(O, o.pa, 0, 0),
    CLI_OPT_TGT(O, o.pa),
    INT_WAS("s2s-rows", "pairs", "N", o.pairs, 1, 1 << 24, "seq2seq: the first N sentence pairs"),
    INT("seeds", "N", o.seeds, 1, 1000, "initialisation seeds 0..N-1"),
    INT("probes", "N", o.probes, 2, 1 << 20, "Hutchinson probes per block norm"),
    CLI_OPT_TOL(O, o.tol, 0, "residual tolerance of the extremes, relative to max|l|"),
    INT_WAS("max-steps", "eig-steps", "M", o.eig_steps, 2, 100000,
            "Lanczos step limit of the extremes"),
    INT("runs", "N", o.runs, 1, 10000, "SLQ start vectors per kind block"),
    INT("steps", "M", o.steps, 2, 100000, "SLQ Lanczos steps per run"),
    CLI_OPT_SIGMA_FRACTION(O, o.sigma_frac, 0, "the JS densities' kernel width: sigma = F "
                           "(the common range of the nodes)"),
    CLI_OPT_RNG_SEED(O, o.rng, 0, CLI_RNG_SEED_HELP),
    {.type = CLI_FLAG, .name = "resume", CLI_AT(O, o.resume),
     .help = "continue the CSVs in --out: skip their points, append the others (the settings "
             "must be the same)"},
    {0}};
#undef INT
#undef INT_WAS
#undef INTS
#undef O

static void defaults(void *p)
{
    args_t *a = p;
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    a->o = (opts_t){.out = "results/anatomy", .h = 4, .V = 64, .B = 4, .T = 16, .seeds = 3,
                    .pairs = 12, .lm_refL = 4, .lm_refd = 32,
                    .s2s_refL = 2, .s2s_refd = 16, .variants = 1, .probes = 6, .eig_steps = 300,
                    .runs = 2, .steps = 24, .tol = eo.tol, .sigma_frac = CLI_SIGMA_FRACTION,
                    .rng = 0};
    cli_pairs_opts_default(&a->o.pa);
    a->o.pa.src = "data/multi30k/val.de", a->o.pa.tgt = "data/multi30k/val.en";
    a->o.pa.max_tokens = 1 << 20; /* one chunk */
    a->lm_L = (cli_ints){4, {1, 2, 4, 8}};
    a->lm_d = (cli_ints){3, {16, 32, 64}};
    a->s2s_L = (cli_ints){4, {1, 2, 4, 6}};
    a->s2s_d = (cli_ints){3, {8, 16, 32}};
}

static const cli_cmd cmd = {
    .name = "anatomy",
    .usage = "[--out DIR] [--lm-L LIST] [--lm-d LIST] [--s2s-L LIST] [--s2s-d LIST] [--seeds N]\n"
             "[--resume] ...",
    .about = "The curvature's anatomy against depth and width: the extremes of H, G and F with\n"
             "their eigenvectors' mass per tensor, block norms and JS distances, per point\n"
             "(task, norm position, norm, depth, width, seed).  The summary: python3 -m\n"
             "studies.summary anatomy DIR.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

/* A list option into the study's list (at most MAXLIST values). */
static void copy_list(const char *name, const cli_ints *from, ilist *to)
{
    if (from->n > MAXLIST)
        cli_die("--%s: at most %d values, got %d", name, MAXLIST, from->n);
    to->n = from->n;
    memcpy(to->v, from->v, sizeof(int) * (size_t)from->n);
}

/* The run: its points, data and the sidecars' common part. */
typedef struct {
    opts_t o;
    point_t *P;
    int np;
    cli_pairs D;             /* the seq2seq data, when a point needs it */
    lnk_config base;         /* the sidecars' config: the first point's */
    char start[32], s2s_data[1200];
    double t0;
    long *todo, ntodo;       /* the points still to do (all of them without --resume) */
    keyset done;
} run_t;

/* The options into the run's settings and its points. */
static void setup(run_t *R, int argc, char **argv)
{
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    opts_t *o = &R->o;
    *o = a.o;
    o->quiet = cli_quiet;
    o->variants = !a.no_variants;
    copy_list("lm-L", &a.lm_L, &o->lm_L);
    copy_list("lm-d", &a.lm_d, &o->lm_d);
    copy_list("s2s-L", &a.s2s_L, &o->s2s_L);
    copy_list("s2s-d", &a.s2s_d, &o->s2s_d);
    R->np = make_points(o, &R->P);
    if (R->np == 0)
        cli_die("no points: every sweep list is empty");
    for (int i = 0; i < R->np; i++)
        if (R->P[i].d % o->h || R->P[i].d % 2)
            cli_die("d = %d must be even and a multiple of --h %d", R->P[i].d, o->h);
}

/* The seq2seq data (when a point needs it), the base config and the data's
 * description for the sidecars. */
static void load_data(run_t *R)
{
    const opts_t *o = &R->o;
    int any_s2s = 0;
    for (int i = 0; i < R->np; i++)
        any_s2s |= R->P[i].task == LNK_TASK_SEQ2SEQ;
    if (any_s2s)
        cli_pairs_load(&o->pa, o->pairs, CLI_PAIRS_CHUNKS, &R->D);
    lnk_iso_time(R->start, sizeof R->start);
    R->t0 = lnk_now();
    point_t p0 = R->P[0];
    make_config(&R->base, o, &R->D, &p0);
    snprintf(R->s2s_data, sizeof R->s2s_data, "none (no seq2seq points)");
    if (any_s2s)
        snprintf(R->s2s_data, sizeof R->s2s_data, "first %d pairs of %s / %s (%d kept, V_src %d, "
                 "V_tgt %d), one chunk", o->pairs, o->pa.src, o->pa.tgt, R->D.p.n,
                 lnk_vocab_size(R->D.vs), lnk_vocab_size(R->D.vt));
}

/* The points still to do: with --resume, those not in OUT/js.csv (the
 * other files' rows of the others dropped first). */
static void todo_points(run_t *R)
{
    const opts_t *o = &R->o;
    make_dir(o->out);
    if (o->resume) {
        done_points(o->out, &R->done);
        drop_partial(o->out, "extremes.csv", &R->done);
        drop_partial(o->out, "mass.csv", &R->done);
        drop_partial(o->out, "blocknorms.csv", &R->done);
        CLI_CK(lnk_comm_barrier());
    }
    R->todo = cli_alloc(sizeof(long) * (size_t)R->np);
    R->ntodo = 0;
    for (long i = 0; i < R->np; i++) {
        char k[96];
        point_key(&R->P[i], k, sizeof k);
        if (!o->resume || !keyset_has(&R->done, k))
            R->todo[R->ntodo++] = i;
    }
}

/* Rewrite (last: close) the four files with the sidecars' counts after
 * `computed` points. */
static void save(run_t *R, files_t *F, long computed, int last)
{
    lnk_meta *extra = settings(&R->o, R->np, R->s2s_data, computed, R->np - R->ntodo);
    out_csv *f[4] = {&F->ext, &F->mass, &F->bn, &F->js};
    for (int i = 0; i < 4; i++)
        if (last)
            csv_close(f[i], &R->base, extra, R->start, R->t0);
        else
            csv_flush(f[i], &R->base, extra, R->start, R->t0);
    lnk_meta_free(extra);
}

/* The points to do, the j-th on rank j % P (kit/kit.h). */
static void sweep_points(run_t *R, files_t *F)
{
    const opts_t *o = &R->o;
    for (long j = 0; j < R->ntodo; j++) {
        long i = R->todo[j];
        const point_t *p = &R->P[i];
        if (study_mine(j)) {
            csv_point(&F->ext, j);
            csv_point(&F->mass, j);
            csv_point(&F->bn, j);
            csv_point(&F->js, j);
            double ts = lnk_now();
            run_point(o, p, &R->D, F);
            char left[48]; /* of this run's points, j + 1 done (rank by rank) */
            cli_time_left(left, sizeof left, lnk_now() - R->t0, (double)j + 1, (double)R->ntodo);
            if (!o->quiet && study_root())
                fprintf(stderr, "anatomy: %ld/%d %s %s %s qk=%s L=%d d=%d seed %d: %.1f s (%.0f s "
                        "so far, %s)\n", i + 1, R->np, lnk_task_name((lnk_task)p->task),
                        p->pre ? "pre" : "post", lnk_norm_type_name((lnk_norm_type)p->norm),
                        lnk_norm_type_name((lnk_norm_type)p->qk), p->L, p->d, p->seed,
                        lnk_now() - ts, lnk_now() - R->t0, left);
        }
        /* --resume: a checkpoint after every round of P points (js.csv last:
         * a point is done when its rows are there) */
        if (o->resume && (j + 1) % study_ranks() == 0 && j + 1 < R->ntodo)
            save(R, F, j + 1, 0);
    }
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "anatomy");
    run_t R = {0};
    setup(&R, argc, argv);
    const opts_t *o = &R.o;
    load_data(&R);
    todo_points(&R);
    if (o->resume) {
        lnk_meta *extra = settings(o, R.np, R.s2s_data, 0, R.np - R.ntodo);
        check_settings(o->out, extra);
        lnk_meta_free(extra);
    }
    files_t F;
    open_files(&F, o->out, o->resume);
    if (o->resume && !o->quiet && study_root())
        fprintf(stderr, "anatomy: resuming %s: %ld of %d points done, %ld to compute\n", o->out,
                (long)R.np - R.ntodo, R.np, R.ntodo);
    sweep_points(&R, &F);
    save(&R, &F, R.ntodo, 1);
    if (!o->quiet && study_root())
        fprintf(stderr, "anatomy: %ld points computed, %ld skipped, in %.0f s -> "
                "%s/{extremes,mass,blocknorms,js}.csv\n", R.ntodo, (long)R.np - R.ntodo,
                lnk_now() - R.t0, o->out);
    free(R.todo);
    free(R.done.k);
    lnk_config_clear(&R.base);
    cli_pairs_free(&R.D);
    free(R.P);
    return 0;
}
