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

#define T cli_curv_opts
const cli_opt cli_data_table[] = {
    {.type = CLI_STR, .name = "weights", .arg = "FILE", CLI_AT(T, weights), .help = "weights",
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE | CLI_META},
    {.type = CLI_LIST, .name = "batch", .arg = "FILE", CLI_AT(T, batch), .count = offsetof(T, n_batch),
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE,
     .help = "batch file; repeat for a data set of several (the mean loss over all their scored "
             "tokens)"},
    {0}};

/* --chunk and --block, declared here once for the curvature commands
 * (cli_curv_table, in their order of checkpoint identity) and hvp
 * (cli_block_table) */
#define OPT_CHUNK CLI_OPT_CHUNK(T, chunk_rows, CLI_ID)
#define OPT_BLOCK                                                                                 \
    {.type = CLI_STR, .name = "block", .arg = "PATTERNS", CLI_AT(T, block), .unset = "*",        \
     .flags = CLI_ID | CLI_META, .def = "all parameters",                                        \
     .help = "the operator restricted to the tensors matched by these comma-separated globs, "  \
             "e.g. 'dec.5.ffn.w2' or '*.attn.*' (lnkit params lists names and groups)"}
/* Each command's --rng-seed help says what it seeds; cli_curv_table (any help)
 * makes the identity and the sidecar. */
#define CURV_TABLE(help)                                                                          \
    {OPT_CHUNK, OPT_BLOCK, CLI_OPT_RNG_SEED(T, rng_seed, CLI_ID | CLI_META, help), {0}}
const cli_opt cli_curv_table[] = CURV_TABLE(CLI_RNG_SEED_HELP);
const cli_opt cli_curv_eigs[] = CURV_TABLE("seed of the Lanczos start vector (and of restarts)");
const cli_opt cli_curv_trace[] = CURV_TABLE("seed of the probes");
const cli_opt cli_curv_density[] = CURV_TABLE("seed of the SLQ start vectors");
const cli_opt cli_curv_blocks[] = CURV_TABLE("seed of the probes and the Lanczos start vectors");
const cli_opt cli_block_table[] = {OPT_CHUNK, OPT_BLOCK, {0}};

const cli_opt cli_op_table[] = {
    CLI_OPT_OPERATOR(T, op_kind, CLI_ID | CLI_ID_SET | CLI_META),
    CLI_OPT_CACHE_MB(T, cache_mb, CLI_CACHE_MB_HELP),
    {0}};
#undef T

void cli_curv_defaults(cli_curv_opts *o)
{
    o->cache_mb = -1;
    o->op_kind = LNK_OP_HESSIAN;
    cli_ckpt_opts_default(&o->ck);
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
    cli_files_checkpoint(&f, o->ck.path);
    cli_files_model(&f, &o->mo, o->weights, o->batch, o->n_batch);
    cli_files_check(NULL, &f);
    if (o->ck.path)
        cli_ckpt_lock(o->ck.path, cmd);
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
    cli_run_begin();
    cli_load_model(&o->mo, o->weights, &s->c, &s->m, &s->theta);
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
    s->op = cli_meter_first(&s->first, lnk_hessian_operator(s->h), s->m,
                            s->n_own * (CLI_PASS_PRIMAL + cli_product_cost(o->op_kind)));
    s->block_n = lnk_hessian_block(s->h)->n;
    cli_ckpt_start(&s->run, s->h, 0, o->ck.every); /* the products, for blocks too */
    /* the sidecar's record built once before the work: what could make it
     * fail (the configuration's JSON, memory) shows now, not after hours */
    char *text = NULL;
    cli_check(lnk_meta_text(cli_prov(), &s->c, NULL, cli_run_start(), 0, &text));
    free(text);
    s->block = o->block;
    cli_setup_done();
}

void cli_curv_say(const cli_curv *s)
{
    /* what the run works on: the block actually selected, named */
    const lnk_block *b = lnk_hessian_block(s->h);
    size_t np = lnk_model_n_params(s->m);
    int P = lnk_comm_size();
    if (s->block)
        cli_say("block '%s' of the %zu parameters: %zu parameters in %d tensor(s); ", s->block,
                np, s->block_n, b->n_tensors);
    else
        cli_say("%s: %zu parameters in %d tensors; ", s->o->in_blocks ? "the model (its blocks "
                "below)" : "the whole model", np, b->n_tensors);
    cli_say("%d chunk(s), %zu scored tokens", s->n_chunks, s->n_scored);
    if (P > 1)
        cli_say(", %d ranks (rank 0: %d chunk(s), %zu of the block)", P, s->n_own, s->op.n);
    cli_say("\n");
}

void cli_curv_close(cli_curv *s)
{
    cli_ckpt_close(&s->run); /* a run that failed after its checkpoint opened */
    cli_ckpt_unlock();
    lnk_hessian_free(s->h);
    lnk_dataset_free(&s->ds);
    free(s->theta);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}

void cli_curv_done(cli_curv *s)
{
    cli_ckpt_done(&s->run);
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
              cli_opts_meta(cli_op_table, o, 0, x) || cli_opts_meta(cli_ckpt_table, &o->ck, 0, x);
    /* a resume elsewhere (--resume-anywhere) is recorded with what changed */
    json_t *run = json_pack("{s:I, s:i, s:I, s:I, s:I, s:I, s:s, s:i}",
                            "block_size", (json_int_t)s->block_n, "chunks", s->n_chunks,
                            "n_scored", (json_int_t)s->n_scored,
                            "hvp_products", (json_int_t)lnk_hessian_n_products(s->h),
                            "products_total", (json_int_t)cli_ckpt_products(&s->run),
                            "resumed_from", (json_int_t)s->run.resumed_from,
                            "resumed_elsewhere", s->run.moved ? s->run.moved : "",
                            "cached_chunks", lnk_hessian_cached_chunks(s->h, NULL));
    bad = bad || !run || json_object_update(x, run);
    json_decref(run);
    bad = bad || (results && json_object_update(x, results));
    json_decref(results);
    if (bad)
        cli_die("out of memory for the sidecar of %s", path);
    cli_run_meta(path, &s->c, x);
}

/* ------------------------------------------------------------ --checkpoint */

void cli_curv_ckpt(cli_curv *s, int kind, size_t max_rows, int mapped, long total)
{
    const cli_curv_opts *o = s->o;
    cli_ckpt_start(&s->run, s->h, total, o->ck.every);
    if (!o->ck.path)
        return;
    lnk_ckpt_id id = {0};
    cli_check(cli_curv_id(s, &id));
    cli_ckpt_open(&s->run, &o->ck, s->cmd, &id, kind, s->op.n, max_rows, mapped);
}

int cli_curv_id(const cli_curv *s, lnk_ckpt_id *id)
{
    /* what the run belongs to: the numbers it computes depend on these; the
     * command's own options first (the order of checkpoints written before) */
    const cli_curv_opts *o = s->o;
    int rc = cli_opts_id(s->own, s->args, 0, id);
    rc = rc ? rc : cli_ckpt_id_config(id, CLI_ID_CONFIG, &s->c);
    /* the shared options' (the weights and batches by SHA-256, --chunk,
     * --block, --rng-seed; --operator when not the Hessian, so that
     * checkpoints written before it existed stay valid) */
    rc = rc ? rc : cli_opts_id(cli_data_table, o, 0, id);
    rc = rc ? rc : cli_opts_id(cli_curv_table, o, 0, id);
    rc = rc ? rc : cli_opts_id(cli_op_table, o, 0, id);
    return rc;
}
