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

int cli_curv_add_options(struct option *opts, int n, int ckpt)
{
    opts[n++] = (struct option){"weights", required_argument, NULL, CURV_WEIGHTS};
    opts[n++] = (struct option){"batch", required_argument, NULL, CURV_BATCH};
    opts[n++] = (struct option){"chunk", required_argument, NULL, CURV_CHUNK};
    opts[n++] = (struct option){"block", required_argument, NULL, CURV_BLOCK};
    opts[n++] = (struct option){"rng-seed", required_argument, NULL, CURV_RNG};
    opts[n++] = (struct option){"quiet", no_argument, NULL, CURV_QUIET};
    opts[n++] = (struct option){"cache-mb", required_argument, NULL, CURV_CACHE};
    if (ckpt) {
        opts[n++] = (struct option){"checkpoint", required_argument, NULL, CURV_CKPT};
        opts[n++] = (struct option){"checkpoint-every", required_argument, NULL, CURV_CKPT_EVERY};
        opts[n++] = (struct option){"resume-anywhere", no_argument, NULL, CURV_ANYWHERE};
    }
    opts[n++] = (struct option){"operator", required_argument, NULL, CURV_OPERATOR};
    return cli_add_model_options(opts, n);
}

int cli_curv_option(cli_curv_opts *o, int val, const char *arg)
{
    if (cli_model_option(&o->mo, val, arg))
        return 1;
    switch (val) {
    case CURV_WEIGHTS: o->weights = arg; return 1;
    case CURV_BATCH: cli_add_batch(o->batch, &o->n_batch, arg); return 1;
    case CURV_CHUNK: o->chunk_rows = (int)cli_int("chunk", arg, 1, 1L << 24); return 1;
    case CURV_BLOCK: o->block = arg; return 1;
    case CURV_RNG: o->rng_seed = (uint64_t)cli_int("rng-seed", arg, 0, 0x7fffffffL); return 1;
    case CURV_QUIET: o->quiet = cli_quiet = 1; return 1;
    case CURV_CACHE: o->cache_mb = cli_cache_mb(arg), o->cache_set = 1; return 1;
    case CURV_CKPT: o->checkpoint = arg; return 1;
    case CURV_CKPT_EVERY:
        o->checkpoint_every = (int)cli_int("checkpoint-every", arg, 1, 1 << 30);
        return 1;
    case CURV_ANYWHERE: o->resume_anywhere = 1; return 1;
    case CURV_OPERATOR: o->op_kind = cli_op_kind(NULL, arg); return 1;
    }
    return 0;
}

void cli_curv_print_help(int ckpt)
{
    printf("Model, data and block:\n"
           "  --weights FILE         weights                                    (required)\n"
           "  --batch FILE           batch file; repeat for a data set of several (required)\n"
           "  --chunk N              rows per chunk: the data-set Hessian is the\n"
           "                         token-weighted sum over chunks             (whole files)\n"
           "  --block PATTERNS       comma-separated globs on tensor names, e.g.\n"
           "                         'dec.5.ffn.w2' or '*.attn.*'               (all parameters)\n"
           "  --rng-seed N           seed of the start vectors / probes         (0)\n"
           "  --quiet                no progress on stderr\n"
           "  --cache-mb MB          memory for keeping the chunks' primal passes\n"
           "                         between products (same results; 0: recompute\n"
           "                         them every product)       (half the available memory)\n"
           "  --operator hessian|ggn|functional\n"
           "                         H, its Gauss-Newton part G = J^T H_out J, or\n"
           "                         the functional part F = H - G              (hessian)\n");
    if (ckpt)
        printf("  --checkpoint FILE      save the run's state to FILE (vectors in FILE.basis)\n"
               "                         and continue from it when started again with the\n"
               "                         same arguments; removed when the run completes.\n"
               "                         The run holds it (FILE.lock): a second run on it\n"
               "                         is refused                                 (none)\n"
               "  --checkpoint-every N   products between saves (and at most 10 minutes) (5)\n"
               "  --resume-anywhere      resume a checkpoint written with another BLAS\n"
               "                         kernel, library, thread count or lnkit build (the\n"
               "                         result is then not bitwise an uninterrupted\n"
               "                         run's; the sidecar records the change)     (refused)\n");
    printf("\n");
    cli_print_model_help();
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

void cli_curv_check_outputs(const char *cmd, const cli_curv_opts *o, const cli_curv_out *outs,
                            int n)
{
    cli_files f = {0};
    for (int i = 0; i < n; i++)
        cli_files_out(&f, outs[i].path, outs[i].flag);
    for (int i = 0; i < n; i++)
        if (outs[i].sidecar)
            cli_files_meta(&f, outs[i].path, outs[i].flag);
    cli_files_checkpoint(&f, o->checkpoint);
    cli_files_in(&f, o->mo.config_path, "--config");
    cli_files_in(&f, o->weights, "--weights");
    for (int i = 0; i < o->n_batch; i++)
        cli_files_in(&f, o->batch[i], "--batch");
    cli_files_check(cmd, &f);
    if (o->checkpoint) {
        cli_check(lnk_ckpt_lock_take(&held, o->checkpoint, cmd));
        atexit(drop_lock);
    }
}

void cli_curv_open(cli_curv *s, const cli_curv_opts *o)
{
    memset(s, 0, sizeof *s);
    lnk_iso_time(s->start, sizeof s->start);
    s->t0 = lnk_now();
    if (!o->weights)
        cli_die("--weights FILE is required");
    if (!o->n_batch)
        cli_die("--batch FILE is required (repeat it for several files)");
    int P = lnk_comm_size();
    cli_make_config(&o->mo, &s->c);
    s->m = lnk_model_alloc(&s->c);
    if (!s->m)
        cli_die_lib();
    size_t np = lnk_model_n_params(s->m);
    s->theta = malloc(sizeof(double) * np);
    cli_check(s->theta ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for %zu parameters", np));
    /* inputs read once, recorded (path, size, SHA-256) with the seed for the sidecar */
    cli_check(cli_load_weights(o->weights, s->m, s->theta));
    if (lnk_prov_seed(cli_prov(), "rng", o->rng_seed) != LNK_OK)
        cli_die_lib();
    lnk_dataset_init(&s->ds);
    for (int i = 0; i < o->n_batch; i++) {
        lnk_batch file;
        cli_check(cli_load_batch(o->batch[i], s->m, &file));
        cli_check(lnk_dataset_add_rows(&s->ds, s->m, &file, cli_chunk_rows(file.B, o->chunk_rows)));
        lnk_batch_free(&file);
    }
    cli_check(lnk_dataset_shard(&s->ds, s->m, cli_procs()));
    s->chunks = s->ds.chunks;
    s->n_chunks = s->ds.n_total;
    s->n_own = s->ds.n_chunks;
    s->first_own = s->ds.first;
    s->n_scored = s->ds.n_scored;
    s->h = lnk_hessian_alloc_dataset(s->m, s->theta, &s->ds, o->block);
    if (!s->h)
        cli_die_lib();
    cli_set_cache(s->h, o->cache_set, o->cache_mb);
    cli_check(lnk_hessian_set_kind(s->h, o->op_kind));
    s->op = lnk_hessian_operator(s->h);
    s->block_n = lnk_hessian_block(s->h)->n;
    /* the sidecar's record built once before the work: what could make it
     * fail (the configuration's JSON, memory) shows now, not after hours */
    char *text = NULL;
    cli_check(lnk_meta_text(cli_prov(), &s->c, NULL, s->start, 0, &text));
    free(text);
    cli_setup_done();
    if (!o->quiet && cli_root()) {
        fprintf(stderr, "lnkit: %zu parameters, block of %zu (%d tensors), %d chunk(s), %zu "
                "scored tokens", np, s->block_n, lnk_hessian_block(s->h)->n_tensors,
                s->n_chunks, s->n_scored);
        if (P > 1)
            fprintf(stderr, ", %d ranks (rank 0: %d chunk(s), %zu of the block)", P, s->n_own,
                    s->op.n);
        fputc('\n', stderr);
    }
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

void cli_curv_meta(cli_curv *s, const cli_curv_opts *o, const char *csv_path, const char *cmd,
                   const lnk_meta *fields)
{
    if (!cli_root())
        return;
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    lnk_meta_str(m, "command", cmd);
    lnk_meta_str(m, "weights", o->weights);
    lnk_meta_str(m, "block", o->block ? o->block : "*");
    lnk_meta_int(m, "block_size", (long long)s->block_n);
    lnk_meta_int(m, "chunks", s->n_chunks);
    lnk_meta_int(m, "n_scored", (long long)s->n_scored);
    lnk_meta_int(m, "rng_seed", (long long)o->rng_seed);
    lnk_meta_int(m, "hvp_products", lnk_hessian_n_products(s->h));
    lnk_meta_int(m, "products_total", cli_ckpt_products(s));
    lnk_meta_int(m, "resumed_from", s->resumed_from);
    /* a resume elsewhere (--resume-anywhere) is recorded with what changed */
    lnk_meta_bool(m, "resume_anywhere", o->resume_anywhere);
    lnk_meta_str(m, "resumed_elsewhere", s->moved ? s->moved : "");
    lnk_meta_int(m, "cached_chunks", lnk_hessian_cached_chunks(s->h, NULL));
    lnk_meta_str(m, "operator", lnk_op_kind_name(o->op_kind));
    if (fields)
        lnk_meta_add(m, fields);
    int st = lnk_meta_write(csv_path, cli_prov(), &s->c, m, s->start, lnk_now() - s->t0);
    lnk_meta_free(m);
    if (st != LNK_OK)
        cli_die_lib();
}

int cli_progress_fn(void *ctx, int done, int total, double elapsed)
{
    cli_progress *p = ctx;
    if (!cli_root())
        return 0;
    if (elapsed - p->last >= 1.0 || done == total) {
        p->last = elapsed;
        char rate[160] = "";
        if (p->s)
            cli_ckpt_rate(p->s, rate, sizeof rate);
        fprintf(stderr, "%s: %s %d/%d  %.1f s (about %.0f s left)%s\n", p->what, p->unit, done,
                total, elapsed, elapsed / done * (total - done), rate);
    }
    return 0;
}

double cli_grid_per_sigma(const char *cmd, const char *arg)
{
    double v = cli_real(cmd, "grid-per-sigma", arg, 1);
    if (!(v >= 1 && v <= 1e6))
        cli_die("%s: --grid-per-sigma: expected a number from 1 to 1e6 (below 1 point per sigma "
                "the grid cannot integrate a kernel to 1e-6), got '%s'", cmd, arg);
    return v;
}

void cli_check_sigma(const char *cmd, double sigma, double lo, double hi, double per,
                     size_t max_points)
{
    /* the grid's span and its points, as lnk_slq_grid_size counts them, in
     * doubles: t_p = a + (b - a) p / (N - 1) must not overflow, nor the
     * kernels' normalisation 1 / (runs sigma sqrt(2 pi)) underflow */
    double span = hi - lo + 2 * LNK_SLQ_PAD * sigma, pts = span / (sigma / per) + 2;
    if (sigma > 0 && !(pts <= (double)max_points) && sigma < 1)
        cli_die("%s: sigma %g gives a grid of %.3g points for nodes in [%g, %g] (at most %zu): "
                "choose a larger sigma or a smaller --grid-per-sigma", cmd, sigma, pts, lo, hi,
                max_points);
    if (!(sigma > 0) || !isfinite(span) || !(span * pts <= 0x1p1020) ||
        !(1.0 / (sigma * sqrt(2 * M_PI)) > 1e-300) || !(pts <= (double)max_points))
        cli_die("%s: sigma %g is too large for a grid of the density: its ends (the nodes' "
                "range [%g, %g] +- %g sigma) and spacing would leave the range of doubles; use a "
                "sigma below %.3g", cmd, sigma, lo, hi, LNK_SLQ_PAD,
                fmin(0x1p1020 / ((2 * LNK_SLQ_PAD) * (2 * LNK_SLQ_PAD * per + 2)) / 2,
                     1e300 / sqrt(2 * M_PI)));
}

long cli_cache_mb(const char *arg) { return cli_int("cache-mb", arg, 0, 1L << 40); }

void cli_set_cache(lnk_hessian *h, int set, long mb)
{
    if (set && lnk_hessian_set_cache(h, (size_t)mb * 1048576) != LNK_OK)
        cli_die_lib();
}

lnk_op_kind cli_op_kind(const char *cmd, const char *arg)
{
    lnk_op_kind k = LNK_OP_HESSIAN;
    if (lnk_op_kind_parse(arg, &k) != LNK_OK)
        cli_die("%s%s--operator: expected hessian, ggn or functional, got '%s'", cmd ? cmd : "",
                cmd ? ": " : "", arg);
    return k;
}

int cli_reorth(const char *cmd, const char *arg)
{
    if (!strcmp(arg, "partial"))
        return LNK_REORTH_PARTIAL;
    if (!strcmp(arg, "always"))
        return LNK_REORTH_ALWAYS;
    cli_die("%s: --reorth: expected partial or always, got '%s'", cmd, arg);
}

int cli_lanczos_mode(const char *cmd, const char *arg)
{
    if (!strcmp(arg, "full"))
        return LNK_LANCZOS_FULL;
    if (!strcmp(arg, "light"))
        return LNK_LANCZOS_LIGHT;
    cli_die("%s: --mode: expected full or light, got '%s'", cmd, arg);
}

/* ------------------------------------------------------------ --checkpoint */

/* The SHA-256 of an input as it was read (cli_load_*). */
static const char *input_sha(const char *path)
{
    const lnk_digest *d = lnk_prov_input_find(cli_prov(), path);
    return d ? d->sha256 : "(not read)";
}

void cli_ckpt_open(cli_curv *s, const cli_curv_opts *o, lnk_ckpt_id *id, int kind,
                   size_t max_rows, int mapped, long total)
{
    static const char *const names[] = {"", "eigs", "trace", "density"};
    s->cmd = names[kind];
    s->total = total;
    s->every = o->checkpoint_every > 0 ? o->checkpoint_every : 5;
    s->work_t0 = s->last_save_t = lnk_now();
    if (!o->checkpoint) {
        lnk_ckpt_id_free(id);
        return;
    }
    /* what the run belongs to: the numbers it computes depend on these */
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
    /* the files as they were read (their digests in the record: not read again) */
    rc = rc ? rc : lnk_ckpt_id_add(id, "--weights (SHA-256)", "%s", input_sha(o->weights));
    rc = rc ? rc : lnk_ckpt_id_add(id, "the number of --batch files", "%d", o->n_batch);
    for (int i = 0; !rc && i < o->n_batch; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "--batch file %d (SHA-256)", i + 1);
        rc = lnk_ckpt_id_add(id, nm, "%s", input_sha(o->batch[i]));
    }
    rc = rc ? rc : lnk_ckpt_id_add(id, "--chunk", "%d", o->chunk_rows);
    rc = rc ? rc : lnk_ckpt_id_add(id, "--block", "%s", o->block ? o->block : "*");
    rc = rc ? rc : lnk_ckpt_id_add(id, "--rng-seed", "%llu", (unsigned long long)o->rng_seed);
    /* the Hessian's checkpoints name no operator (those written before --operator
     * existed stay valid); G and F name theirs */
    if (o->op_kind != LNK_OP_HESSIAN)
        rc = rc ? rc : lnk_ckpt_id_add(id, "--operator", "%s", lnk_op_kind_name(o->op_kind));
    rc = rc ? rc : lnk_ckpt_id_add_build(id);
    id->resume_anywhere = o->resume_anywhere;
    cli_check(rc);
    rc = lnk_ckpt_open(&s->ck, held, o->checkpoint, s->cmd, id, kind, s->op.n, max_rows, mapped);
    cli_check(rc);
    lnk_ckpt_id_free(id);
    s->resumed_from = s->last_saved = lnk_ckpt_products(s->ck);
    if (*lnk_ckpt_moved(s->ck) && !(s->moved = strdup(lnk_ckpt_moved(s->ck))))
        cli_die("out of memory");
    if (!o->quiet && cli_root()) {
        if (lnk_ckpt_resumed(s->ck) && *lnk_ckpt_moved(s->ck))
            fprintf(stderr, "%s: resumed from %ld products (checkpoint %s) elsewhere "
                    "(--resume-anywhere): %s; the result is not bitwise an uninterrupted run's\n",
                    s->cmd, s->resumed_from, o->checkpoint, lnk_ckpt_moved(s->ck));
        else if (lnk_ckpt_resumed(s->ck))
            fprintf(stderr, "%s: resumed from %ld products (checkpoint %s)\n", s->cmd,
                    s->resumed_from, o->checkpoint);
        else
            fprintf(stderr, "%s: checkpoint %s: a new run, saved every %d products\n", s->cmd,
                    o->checkpoint, s->every);
    }
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

void cli_ckpt_saved(cli_curv *s)
{
    s->last_saved = cli_ckpt_products(s);
    s->last_save_t = lnk_now();
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
