/* Shared plumbing of the curvature commands (eigs, trace, density): the
 * model, the data set as chunks of rows of one or more batch files, the
 * Hessian operator on a block, progress lines and the metadata sidecar. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "lnkit/provenance.h"
#include "lnkit/sha256.h"

const cli_choice cli_lanczos_modes[] = {{"full", LNK_LANCZOS_FULL}, {"light", LNK_LANCZOS_LIGHT},
                                        {NULL, 0}};
const cli_choice cli_reorths[] = {{"partial", LNK_REORTH_PARTIAL}, {"always", LNK_REORTH_ALWAYS},
                                  {NULL, 0}};

#define T cli_curv_opts
const cli_opt cli_data_table[] = {
    {.type = CLI_STR, .name = "weights", .arg = "FILE", CLI_AT(T, weights), .help = "weights",
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE | CLI_META},
    {.type = CLI_LIST, .name = "batch", .arg = "FILE", CLI_AT(T, batch), .count = offsetof(T, n_batch),
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE,
     .help = "batch file; repeat for a data set of several (the mean loss over all their scored "
             "tokens)"},
    {0}};

const cli_opt cli_curv_table[] = {
    {.type = CLI_INT, .name = "chunk", .arg = "N", CLI_AT(T, chunk_rows), .min = 1, .max = 1 << 24,
     .flags = CLI_ID, .def = "whole files; under mpirun 4 P pieces",
     .help = "rows per chunk: the data-set operator is the token-weighted sum over chunks, "
             "exactly"},
    {.type = CLI_STR, .name = "block", .arg = "PATTERNS", CLI_AT(T, block), .unset = "*",
     .flags = CLI_ID | CLI_META, .def = "all parameters",
     .help = "the operator restricted to the tensors matched by these comma-separated globs, "
             "e.g. 'dec.5.ffn.w2' or '*.attn.*' (lnkit params lists names and groups)"},
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(T, rng_seed), .max = 0x7fffffff,
     .flags = CLI_ID | CLI_META, .help = "seed of the start vectors and probes"},
    {0}};

const cli_opt cli_op_table[] = {
    {.type = CLI_CHOICE, .name = "operator", CLI_AT(T, op_kind), .ref = cli_operators,
     .flags = CLI_ID | CLI_ID_SET | CLI_META,
     .help = "the curvature operator: the loss Hessian H, its Gauss-Newton part G = J^T H_out J "
             "(positive semidefinite), or the functional part F = H - G",
     .doc = "J is the Jacobian of the logits, H_out the Hessian of the loss in the logits. G v "
            "is a tangent forward pass, H_out and a plain reverse pass (about 2/3 of the work of "
            "H v); F v is H v minus G v. All are data-set means over the chunks, restricted to "
            "the block, exact to rounding."},
    {.type = CLI_LONG, .name = "cache-mb", .arg = "MB", CLI_AT(T, cache_mb), .max = 1L << 40,
     .def = "half the available memory",
     .help = "memory for keeping the chunks' primal passes between products (the same bits; "
             "0: recompute them every product)"},
    {0}};

const cli_opt cli_ckpt_table[] = {
    {.type = CLI_STR, .name = "checkpoint", .arg = "FILE", CLI_AT(T, checkpoint),
     .flags = CLI_WRITES,
     .help = "save the run's state to FILE (vectors in its rows file) and continue from it when "
             "started again with the same arguments; removed when the run completes; a second "
             "run on it is refused while this one holds it",
     .doc = "The state (the Lanczos coefficients and the partial reorthogonalisation's "
            "estimates, the probes done, the sums so far) is saved atomically every few "
            "products; the rows are appended, so a save costs the new rows only, and in full "
            "mode the Lanczos basis lives in that file (mapped): the disk holds (max-steps + 1) "
            "vectors of the block's size, reserved when the run starts. A resumed run gives "
            "bitwise the output of an uninterrupted one. FILE records what it belongs to (the "
            "resolved configuration, the weights and every batch file by SHA-256, the options "
            "that change numbers, the BLAS kernel, library and threads, the lnkit build): "
            "another run is refused naming the first item that differs."},
    {.type = CLI_INT, .name = "checkpoint-every", .arg = "N", CLI_AT(T, checkpoint_every),
     .min = 1, .max = 1 << 30, .help = "products between saves (a save also after 10 minutes)"},
    {.type = CLI_FLAG, .name = "resume-anywhere", CLI_AT(T, resume_anywhere), .flags = CLI_META,
     .help = "resume a checkpoint written with another BLAS kernel, library, thread count or "
             "lnkit build (the result is then not bitwise an uninterrupted run's; the sidecar "
             "records the change)"},
    {0}};
#undef T

#define T cli_sigma_opts
const cli_opt cli_sigma_table[] = {
    {.type = CLI_REAL, .name = "sigma", .arg = "S", CLI_AT(T, sigma), .max = HUGE_VAL,
     .flags = CLI_GT, .excl = 2, .def = "none", .help = "kernel standard deviation (eigenvalue "
     "units)"},
    {.type = CLI_REAL, .name = "sigma-variance", .arg = "V", CLI_AT(T, variance), .max = HUGE_VAL,
     .flags = CLI_GT, .excl = 2, .def = "none",
     .help = "PyHessian, google spectral-density: kernel variance V max(1, range of the nodes)"},
    {.type = CLI_REAL, .name = "sigma-kappa", .arg = "K", CLI_AT(T, kappa), .min = 1,
     .max = HUGE_VAL, .flags = CLI_GT, .excl = 2, .def = "none",
     .help = "Papyan 2020: sigma = 1.1 range / ((m - 1) sqrt(8 ln K)), K > 1"},
    {.type = CLI_REAL, .name = "sigma-fraction", .arg = "F", CLI_AT(T, fraction),
     .max = HUGE_VAL, .flags = CLI_GT, .excl = 2, .help = "sigma = F (range of the nodes)"},
    {.type = CLI_REAL, .name = "grid-per-sigma", .arg = "P", CLI_AT(T, per), .min = 1, .max = 1e6,
     .help = "grid points per sigma (below 1 the trapezoid rule cannot integrate a kernel to "
             "1e-6)"},
    {0}};
#undef T

void cli_sigma_defaults(cli_sigma_opts *o)
{
    o->fraction = 0.01;
    o->per = 4;
}

double cli_sigma(const cli_sigma_opts *o, double lo, double hi, int m, const char **which,
                 double *value, size_t max_points)
{
    double sigma = o->sigma;
    int st = LNK_OK;
    if (cli_given("sigma"))
        *which = "sigma", *value = o->sigma;
    else if (cli_given("sigma-variance"))
        *which = "sigma-variance", *value = o->variance,
        st = lnk_sigma_from_variance(o->variance, lo, hi, &sigma);
    else if (cli_given("sigma-kappa"))
        *which = "sigma-kappa", *value = o->kappa,
        st = lnk_sigma_from_kappa(o->kappa, m, 0.05, lo, hi, &sigma);
    else
        *which = "sigma-fraction", *value = o->fraction,
        st = lnk_sigma_from_fraction(o->fraction, lo, hi, &sigma);
    if (st)
        cli_die("--%s %g for nodes in [%g, %g]: %s; give --sigma S", *which, *value, lo, hi,
                lnk_errmsg());
    cli_check_sigma(sigma, lo, hi, o->per, max_points);
    return sigma;
}

void cli_curv_defaults(cli_curv_opts *o)
{
    o->cache_mb = -1;
    o->op_kind = LNK_OP_HESSIAN;
    o->checkpoint_every = 5;
}

/* The checkpoint lock of this process (one command a process): held from
 * the check of the paths to cli_curv_close, released at exit otherwise (an
 * error's exit: the lock file goes with it). */
static lnk_ckpt_lock *held;
static void drop_lock(void)
{
    lnk_ckpt_lock_release(held);
    held = NULL;
}

static void check_outputs(const char *cmd, const cli_curv_opts *o, const cli_curv_out *outs,
                          int n)
{
    cli_files f = {0};
    for (int i = 0; i < n; i++)
        cli_files_out(&f, outs[i].path, outs[i].flag);
    for (int i = 0; i < n; i++)
        if (outs[i].sidecar)
            cli_files_meta(&f, outs[i].path, outs[i].flag);
    cli_files_checkpoint(&f, o->checkpoint);
    cli_files_model(&f, &o->mo, o->weights, o->batch, o->n_batch);
    cli_files_check(NULL, &f);
    if (o->checkpoint) {
        cli_check(lnk_ckpt_lock_take(&held, o->checkpoint, cmd));
        atexit(drop_lock);
    }
}

void cli_curv_open(cli_curv *s, const cli_curv_opts *o, const char *cmd, const cli_opt *own,
                   const void *args, const cli_curv_out *outs, int n_outs)
{
    check_outputs(cmd, o, outs, n_outs);
    memset(s, 0, sizeof *s);
    s->cmd = cmd;
    s->o = o;
    s->own = own;
    s->args = args;
    lnk_iso_time(s->start, sizeof s->start);
    s->t0 = lnk_now();
    int P = lnk_comm_size();
    cli_load_model(&o->mo, o->weights, &s->c, &s->m, &s->theta);
    size_t np = lnk_model_n_params(s->m);
    /* the inputs read once, recorded (path, size, SHA-256) with the seed for the sidecar */
    if (lnk_prov_seed(cli_prov(), "rng", o->rng_seed) != LNK_OK)
        cli_die_lib();
    cli_load_data(&s->ds, s->m, o->batch, o->n_batch, o->chunk_rows);
    s->chunks = s->ds.chunks;
    s->n_chunks = s->ds.n_total;
    s->n_own = s->ds.n_chunks;
    s->first_own = s->ds.first;
    s->n_scored = s->ds.n_scored;
    s->h = lnk_hessian_alloc_dataset(s->m, s->theta, &s->ds, o->block);
    if (!s->h)
        cli_die_lib();
    cli_set_cache(s->h, o->cache_mb);
    cli_check(lnk_hessian_set_kind(s->h, o->op_kind));
    s->op = lnk_hessian_operator(s->h);
    s->block_n = lnk_hessian_block(s->h)->n;
    /* the sidecar's record built once before the work: what could make it
     * fail (the configuration's JSON, memory) shows now, not after hours */
    char *text = NULL;
    cli_check(lnk_meta_text(cli_prov(), &s->c, NULL, s->start, 0, &text));
    free(text);
    cli_setup_done();
    /* what the run works on: the block actually selected, named */
    const lnk_block *b = lnk_hessian_block(s->h);
    if (o->block)
        cli_say("block '%s' of the %zu parameters: %zu parameters in %d tensor(s); ", o->block,
                np, s->block_n, b->n_tensors);
    else
        cli_say("the whole model: %zu parameters in %d tensors; ", np, b->n_tensors);
    cli_say("%d chunk(s), %zu scored tokens", s->n_chunks, s->n_scored);
    if (P > 1)
        cli_say(", %d ranks (rank 0: %d chunk(s), %zu of the block)", P, s->n_own, s->op.n);
    cli_say("\n");
}

void cli_curv_close(cli_curv *s)
{
    lnk_ckpt_close(s->ck); /* a run that failed after its checkpoint opened */
    s->ck = NULL;
    drop_lock();
    free(s->moved);
    lnk_hessian_free(s->h);
    lnk_dataset_free(&s->ds);
    free(s->theta);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}

void cli_curv_done(cli_curv *s)
{
    cli_ckpt_done(s);
    cli_curv_close(s);
}

void cli_curv_meta(cli_curv *s, const char *path, json_t *results)
{
    if (!cli_root() || !path || cli_is_stdout(path)) { /* none beside standard output */
        json_decref(results);
        return;
    }
    const cli_curv_opts *o = s->o;
    json_t *x = json_pack("{s:s}", "command", s->cmd);
    int bad = !x || cli_opts_meta(s->own, s->args, 0, x) ||
              cli_opts_meta(cli_data_table, o, 0, x) || cli_opts_meta(cli_curv_table, o, 0, x) ||
              cli_opts_meta(cli_op_table, o, 0, x) || cli_opts_meta(cli_ckpt_table, o, 0, x);
    /* a resume elsewhere (--resume-anywhere) is recorded with what changed */
    json_t *run = json_pack("{s:I, s:i, s:I, s:I, s:I, s:I, s:s, s:i}",
                            "block_size", (json_int_t)s->block_n, "chunks", s->n_chunks,
                            "n_scored", (json_int_t)s->n_scored,
                            "hvp_products", (json_int_t)lnk_hessian_n_products(s->h),
                            "products_total", (json_int_t)cli_ckpt_products(s),
                            "resumed_from", (json_int_t)s->resumed_from,
                            "resumed_elsewhere", s->moved ? s->moved : "",
                            "cached_chunks", lnk_hessian_cached_chunks(s->h, NULL));
    bad = bad || !run || json_object_update(x, run);
    json_decref(run);
    bad = bad || (results && json_object_update(x, results));
    json_decref(results);
    if (bad)
        cli_die("out of memory for the sidecar of %s", path);
    cli_meta_write(path, &s->c, x, s->start, lnk_now() - s->t0);
}

int cli_progress_fn(void *ctx, int done, int total, double elapsed)
{
    cli_progress *p = ctx;
    if (elapsed - p->last >= 1.0 || done == total) {
        p->last = elapsed;
        char rate[160] = "";
        if (p->s)
            cli_ckpt_rate(p->s, rate, sizeof rate);
        cli_say("%s %d/%d  %.1f s (about %.0f s left)%s\n", p->unit, done, total, elapsed,
                elapsed / done * (total - done), rate);
    }
    return 0;
}

void cli_check_sigma(double sigma, double lo, double hi, double per,
                     size_t max_points)
{
    /* the grid's span and its points, as lnk_slq_grid_size counts them, in
     * doubles: t_p = a + (b - a) p / (N - 1) must not overflow, nor the
     * kernels' normalisation 1 / (runs sigma sqrt(2 pi)) underflow */
    double span = hi - lo + 2 * LNK_SLQ_PAD * sigma, pts = span / (sigma / per) + 2;
    if (sigma > 0 && !(pts <= (double)max_points) && sigma < 1)
        cli_die("sigma %g gives a grid of %.3g points for nodes in [%g, %g] (at most %zu): "
                "choose a larger sigma or a smaller --grid-per-sigma", sigma, pts, lo, hi,
                max_points);
    if (!(sigma > 0) || !isfinite(span) || !(span * pts <= 0x1p1020) ||
        !(1.0 / (sigma * sqrt(2 * M_PI)) > 1e-300) || !(pts <= (double)max_points))
        cli_die("sigma %g is too large for a grid of the density: its ends (the nodes' "
                "range [%g, %g] +- %g sigma) and spacing would leave the range of doubles; use a "
                "sigma below %.3g", sigma, lo, hi, LNK_SLQ_PAD,
                fmin(0x1p1020 / ((2 * LNK_SLQ_PAD) * (2 * LNK_SLQ_PAD * per + 2)) / 2,
                     1e300 / sqrt(2 * M_PI)));
}

void cli_set_cache(lnk_hessian *h, long mb)
{
    if (mb >= 0 && lnk_hessian_set_cache(h, (size_t)mb * 1048576) != LNK_OK)
        cli_die_lib();
}

/* ------------------------------------------------------------ --checkpoint */

void cli_ckpt_open(cli_curv *s, int kind, size_t max_rows, int mapped, long total)
{
    const cli_curv_opts *o = s->o;
    s->total = total;
    s->every = o->checkpoint_every;
    s->work_t0 = s->last_save_t = lnk_now();
    if (!o->checkpoint)
        return;
    /* what the run belongs to: the numbers it computes depend on these; the
     * command's own options first (the order of checkpoints written before) */
    lnk_ckpt_id id0 = {0}, *id = &id0;
    cli_check(cli_opts_id(s->own, s->args, 0, id));
    char *cj = lnk_config_to_json(&s->c, 0, NULL, 0);
    cli_check(cj ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    lnk_sha256 h;
    unsigned char d[32];
    char hex[65];
    lnk_sha256_init(&h);
    lnk_sha256_update(&h, cj, strlen(cj));
    lnk_sha256_final(&h, d);
    lnk_sha256_hex(d, hex);
    free(cj);
    int rc = lnk_ckpt_id_add(id, "the configuration (SHA-256 of its resolved keys)", "%s", hex);
    /* the shared options' (cli_curv_table: the weights and batches by SHA-256,
     * --chunk, --block, --rng-seed; --operator when not the Hessian, so that
     * checkpoints written before it existed stay valid) */
    rc = rc ? rc : cli_opts_id(cli_data_table, o, 0, id);
    rc = rc ? rc : cli_opts_id(cli_curv_table, o, 0, id);
    rc = rc ? rc : cli_opts_id(cli_op_table, o, 0, id);
    rc = rc ? rc : lnk_ckpt_id_add_build(id);
    id->resume_anywhere = o->resume_anywhere;
    cli_check(rc);
    rc = lnk_ckpt_open(&s->ck, held, o->checkpoint, s->cmd, id, kind, s->op.n, max_rows, mapped);
    cli_check(rc);
    lnk_ckpt_id_free(id);
    s->resumed_from = s->last_saved = lnk_ckpt_products(s->ck);
    if (*lnk_ckpt_moved(s->ck) && !(s->moved = strdup(lnk_ckpt_moved(s->ck))))
        cli_die("out of memory");
    if (lnk_ckpt_resumed(s->ck) && *lnk_ckpt_moved(s->ck))
        cli_say("resumed from %ld products (checkpoint %s) elsewhere (--resume-anywhere): %s; "
                "the result is not bitwise an uninterrupted run's\n", s->resumed_from,
                o->checkpoint, lnk_ckpt_moved(s->ck));
    else if (lnk_ckpt_resumed(s->ck))
        cli_say("resumed from %ld products (checkpoint %s)\n", s->resumed_from, o->checkpoint);
    else
        cli_say("checkpoint %s: a new run, saved every %d products\n", o->checkpoint, s->every);
}

long cli_ckpt_products(const cli_curv *s) { return s->resumed_from + lnk_hessian_n_products(s->h); }

int cli_ckpt_due(cli_curv *s, int must)
{
    int go = must || cli_ckpt_products(s) - s->last_saved >= s->every ||
             lnk_now() - s->last_save_t >= 600;
    if (lnk_comm_size() > 1) /* rank 0's clock decides for all */
        cli_check(lnk_comm_bcast(&go, sizeof go, 0));
    return go;
}

int cli_ckpt_saved(cli_curv *s, int rc)
{
    if (rc == LNK_OK) {
        s->last_saved = cli_ckpt_products(s);
        s->last_save_t = lnk_now();
    }
    return rc;
}

void cli_ckpt_done(cli_curv *s)
{
    if (!s->ck)
        return;
    cli_check(lnk_ckpt_remove(s->ck));
    lnk_ckpt_close(s->ck);
    s->ck = NULL;
}

static void human_time(double sec, char *buf, size_t n)
{
    if (sec < 120)
        snprintf(buf, n, "%.0f s", sec);
    else if (sec < 7200)
        snprintf(buf, n, "%.0f min", sec / 60);
    else
        snprintf(buf, n, "%.1f h", sec / 3600);
}

void cli_ckpt_rate(const cli_curv *s, char *buf, size_t n)
{
    long done = cli_ckpt_products(s), here = lnk_hessian_n_products(s->h);
    double t = lnk_now() - s->work_t0, rate = t > 0 ? here / t * 3600 : 0;
    char left[32] = "?", from[48] = "";
    if (rate > 0 && s->total > 0)
        human_time(done < s->total ? (s->total - done) / rate * 3600 : 0, left, sizeof left);
    if (s->resumed_from)
        snprintf(from, sizeof from, " (resumed from %ld)", s->resumed_from);
    snprintf(buf, n, "  | %ld/%ld products%s, %.0f/h, about %s left", done, s->total, from, rate,
             left);
}
