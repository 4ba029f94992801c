/* lnkit hvp: exact Hessian-vector product on a batch. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/curv.h"
#include "front/progress.h"
#include "front/record.h"

typedef struct {
    cli_curv_opts co;
    const char *vector, *out;
    int repeat, json;
} hvp_args;

#define T hvp_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, CLI_REQ, "where H v is written, in the layout of --vector", NULL),
    {.type = CLI_STR, .name = "vector", .arg = "FILE", CLI_AT(T, vector),
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE,
     .help = "the vector v: one tensor 'v' [n_params] or the named tensors (lnkit vector)"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(T, repeat), .min = 1, .max = 1000000,
     .help = "compute the product N times (the same bits each time) and print the median "
             "seconds per product: over products 2..N when the primal pass is kept (the "
             "first, which also runs it, printed apart), over all N when it is recomputed "
             "(--cache-mb 0, or a data set whose passes are not all kept) or N = 1"},
    CLI_OPT_JSON_AS(T, json, "the timings of --repeat as JSON {products, timed, median_seconds, min_seconds, "
             "max_seconds, primal_pass_kept, first_seconds} on standard output, under --quiet "
             "too (timed: the products the median is over)"),
    CLI_DATA(T, co), CLI_BLOCK(T, co), CLI_OP(T, co), CLI_MODEL(T, co.mo),
    {0}};
#undef T

static void defaults(void *p)
{
    hvp_args *a = p;
    cli_curv_defaults(&a->co);
    a->repeat = 1;
}

const cli_cmd cmd_hvp_decl = {
    .name = "lnkit hvp",
    .summary = "exact Hessian-vector product H v (or G v, F v) on a batch",
    .usage = "--config C.json --weights W.safetensors --batch B.safetensors [--batch B2 ...]\n"
             "--vector V.safetensors -o HV.safetensors [--block PATTERNS] [--chunk N]\n"
             "[--repeat N] [--json] [config flags]",
    .about = "Write H v, the exact product of the loss Hessian (the mean over the batches' scored\n"
             "tokens) with v (forward-over-reverse), or G v, F v, in the layout of the input\n"
             "vector.  With --block, the product A_bb v_b of the block with v's block part:\n"
             "v is read whole (lnkit vector --block writes it, 0 outside the block; its other\n"
             "entries are not used) and the output is whole, A_bb v_b in the block, 0 elsewhere\n"
             "(Python's m.hvp(data, v_b, block=...) returns A_bb v_b alone).",
    .opts = opts,
    .size = sizeof(hvp_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH --vector VECTOR -o OUT",
};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --repeat's timings t[repeat] (sorted here): a note, or JSON with --json.
 * With the pass kept, the first product also ran it: the others are timed
 * (a single product is timed as it ran). */
static void timings(double *t, int repeat, int keep, int json)
{
    int skip = keep && repeat > 1, k = repeat - skip;
    double *tk = t + skip, first = t[0];
    qsort(tk, (size_t)k, sizeof *t, cmp);
    double med = k % 2 ? tk[k / 2] : 0.5 * (tk[k / 2 - 1] + tk[k / 2]);
    if (json) {
        cli_json_print(json_pack("{s:i, s:i, s:f, s:f, s:f, s:b, s:f}", "products", repeat,
                                 "timed", k, "median_seconds", med, "min_seconds", tk[0],
                                 "max_seconds", tk[k - 1], "primal_pass_kept", keep,
                                 "first_seconds", first));
        return;
    }
    cli_say("median %.6f s per product over %d (min %.6f, max %.6f)", med, k, tk[0], tk[k - 1]);
    if (keep)
        cli_say(", primal pass kept (the first product, with it: %.6f s)\n", first);
    else
        cli_say(", primal pass recomputed in each\n");
}

int cmd_hvp(int argc, char **argv)
{
    hvp_args a;
    cli_parse(&cmd_hvp_decl, &a, argc, argv);
    const cli_curv_opts *co = &a.co;
    const char *wpath = co->weights, *const *bpath = co->batch, *vpath = a.vector;
    const char *out = cli_out(a.out, 1);
    int repeat = a.repeat, n_batch = co->n_batch, cache_set = co->cache_mb >= 0;
    long cache_mb = co->cache_mb;
    lnk_op_kind kind = co->op_kind;
    cli_model_opts mo = co->mo;
    cli_files f = {0};
    cli_files_out(&f, out, "-o");
    cli_files_model(&f, &mo, wpath, bpath, n_batch);
    cli_files_in(&f, vpath, "--vector");
    cli_files_check(NULL, &f);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, n_batch, 0, LNK_WS_HVP);
    size_t np = lnk_model_n_params(s.m);
    double *v = malloc(sizeof(double) * np), *hv = malloc(sizeof(double) * np);
    double *t = malloc(sizeof(double) * repeat);
    double *gv = kind == LNK_OP_FUNCTIONAL ? malloc(sizeof(double) * np) : NULL;
    if (!v || !hv || !t || (kind == LNK_OP_FUNCTIONAL && !gv))
        cli_die("out of memory");
    int layout;
    cli_check(cli_load_vector(vpath, s.m, v, &layout));
    lnk_hessian *h = NULL;
    lnk_dataset ds;
    lnk_dataset_init(&ds);
    if (cli_dataset(&s) || co->block || co->chunk_rows) { /* the data-set operator */
        lnk_workspace_free(s.ws), s.ws = NULL, lnk_batch_free(&s.b); /* one file's, if read */
        cli_load_data(&ds, s.m, bpath, n_batch, co->chunk_rows);
        h = lnk_hessian_alloc_dataset(s.m, s.theta, &ds, co->block);
        if (!h)
            cli_die_lib();
        cli_set_cache(h, cache_mb);
        cli_check(lnk_hessian_set_kind(h, kind));
        cli_setup_done();
    }
    /* one batch in one process: its primal pass is kept in the workspace at no
     * extra memory, unless --cache-mb 0 */
    int keep = !cache_set || cache_mb > 0;
    /* the plan: one primal pass per chunk and product until the first
     * product tells how many the operator keeps */
    double tangent = cli_product_cost(kind), n_chunks = h ? ds.n_chunks : 1;
    double primals = h || !keep ? repeat * n_chunks : 1;
    cli_meter pr;
    cli_meter_model(&pr, s.m, primals * CLI_PASS_PRIMAL + repeat * n_chunks * tangent);
    /* --block: the products on v's block part (x, y: block vectors) */
    const lnk_block *blk = co->block ? lnk_hessian_block(h) : NULL;
    double *x = blk ? malloc(sizeof(double) * (2 * blk->n + 1)) : v, *y = blk ? x + blk->n : hv;
    if (!x)
        cli_die("out of memory");
    if (blk)
        lnk_block_gather(s.m, blk, v, x);
    for (int i = 0; i < repeat; i++) {
        double t0 = lnk_now();
        int st = LNK_OK;
        if (h)
            st = lnk_hessian_apply_full(h, x, y);
        else if (kind == LNK_OP_HESSIAN && !keep)
            st = lnk_model_hvp(s.ws, s.theta, &s.b, v, hv, NULL, NULL);
        else if (((i > 0 && keep) ||
                  (st = lnk_model_hvp_prepare(s.ws, s.theta, &s.b, NULL, NULL)) == 0)) {
            if (kind == LNK_OP_HESSIAN)
                st = lnk_model_hvp_apply(s.ws, v, hv);
            else if (kind == LNK_OP_GGN)
                st = lnk_model_ggn_apply(s.ws, v, NULL, hv);
            else if ((st = lnk_model_ggn_apply(s.ws, v, hv, gv)) == LNK_OK)
                for (size_t j = 0; j < np; j++)
                    hv[j] -= gv[j];
        }
        if (st != LNK_OK)
            cli_die_lib();
        t[i] = lnk_now() - t0;
        if (h && i == 0) /* the primal passes the other products will run */
            pr.total = pr.done + (repeat - 1) * (n_chunks * tangent +
                       (n_chunks - lnk_hessian_cached_chunks(h, NULL)) * CLI_PASS_PRIMAL);
    }
    cli_meter_end(&pr);
    if (blk) {
        memset(hv, 0, sizeof(double) * np);
        lnk_block_scatter(s.m, blk, y, hv);
        free(x);
    }
    if (h)
        keep = lnk_hessian_cached_chunks(h, NULL) == ds.n_chunks && ds.n_chunks > 0;
    lnk_hessian_free(h);
    lnk_dataset_free(&ds);
    if (lnk_params_check_finite(s.m, hv, kind == LNK_OP_HESSIAN ? "H v" : kind == LNK_OP_GGN ?
                                "G v" : "F v") != LNK_OK)
        cli_die_lib();
    if (!cli_root()) {
        free(v), free(hv), free(t), free(gv);
        cli_close(&s);
        return 0;
    }
    char what[96];
    snprintf(what, sizeof what, "the product of the %s with the vector of --vector",
             lnk_op_kind_name(kind));
    cli_record_md rec;
    cli_outputs_begin();
    if (lnk_vector_save_meta(out, s.m, hv, layout, cli_record_table(&rec, "lnkit hvp", what, &s.c,
                                                                    opts, &a)) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_record_free(&rec);
    if (repeat > 1 || a.json)
        timings(t, repeat, keep, a.json);
    cli_say("%s v, %zu entries -> %s\n", cli_op_letter(kind), np, cli_dest(a.out));
    free(v);
    free(hv);
    free(t);
    free(gv);
    cli_close(&s);
    return 0;
}
