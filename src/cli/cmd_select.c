/* lnkit select: which keys of a set are selectable (docs/MODEL.md §7): some
 * query makes the key the strict argmax of q.k, i.e. it lies outside the convex
 * hull of the other keys.  Reads keys from CSV, optionally normalises them. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include "cli/cli.h"
#include "front/progress.h"
#include "lnkit/csv_table.h"
#include "lnkit/geometry.h"

typedef struct {
    const char *keys, *out;
    int norm, json;
    double eps, tol;
} select_args;

static const cli_choice norms[] = {{"none", LNK_GEOM_NONE}, {"center", LNK_GEOM_CENTER},
                                   {"scale", LNK_GEOM_SCALE}, {"layernorm", LNK_GEOM_LAYERNORM},
                                   {"rmsnorm", LNK_GEOM_RMSNORM}, {NULL, 0}};

#define T select_args
static const cli_opt opts[] = {
    {.type = CLI_STR, .name = "keys", .arg = "FILE", CLI_AT(T, keys), .flags = CLI_REQ | CLI_READS,
     .help = "the keys, CSV: one key a row, comma-separated numbers, an optional header row"},
    CLI_OPT_OUTPUT(T, out, CLI_META, "the CSV index,selectable (+ FILE.meta.json)", NULL),
    CLI_OPT_JSON(T, json),
    {.type = CLI_CHOICE, .name = "key-norm", CLI_AT(T, norm), .ref = norms, .flags = CLI_META,
     .meta = "norm",
     .help = "applied to each key: none, center (x - mean), scale (sqrt(d) x/||x||), layernorm, "
             "rmsnorm (no gain or bias)"},
    {.type = CLI_REAL, .name = "key-eps", .arg = "E", CLI_AT(T, eps), .min = 0, .max = HUGE_VAL,
     .flags = CLI_META, .meta = "eps", .help = "epsilon of --key-norm layernorm and rmsnorm"},
    {.type = CLI_REAL, .name = "hull-tol", .was = "tol", .arg = "T", CLI_AT(T, tol), .min = 0,
     .max = HUGE_VAL,
     .flags = CLI_GT | CLI_META,
     .help = "relative l1 distance to the hull of the other keys above which a key counts as "
             "selectable"},
    {0}};

static void defaults(void *p)
{
    select_args *a = p;
    a->out = "-";
    a->norm = LNK_GEOM_NONE;
    a->eps = 1e-5;
    a->tol = LNK_GEOM_SEL_TOL;
}

const cli_cmd cmd_select_decl = {
    .name = "lnkit select",
    .summary = "which keys are selectable by some query (convex hull, exact LP)",
    .usage = "--keys K.csv [--key-norm none|center|scale|layernorm|rmsnorm] [--key-eps E]\n"
             "[--hull-tol T] [-o SEL.csv] [--json]",
    .about = "Read keys from K.csv, apply --key-norm to each key, and write CSV index,selectable:\n"
             "index from 0, selectable 1 if some query q makes the key the strict argmax of\n"
             "q.k (it lies outside the convex hull of the other keys), 0 if not (duplicate\n"
             "keys are unselectable).  Decided by a linear program.  With --json, the rows as\n"
             "a JSON array on standard output.",
    .opts = opts,
    .size = sizeof(select_args),
    .defaults = defaults,
    .example = "--keys KEYS -o OUT",
};

/* The keys: *K [n, d] malloc'd; read once, recorded with its digest.  The
 * first row is a header if none of its fields is a number. */
static void read_keys(const char *path, double **K, int *n, int *d)
{
    lnk_csv_read_opts o;
    lnk_csv_read_opts_default(&o);
    o.header = LNK_CSV_HEADER_AUTO;
    o.min_rows = 1;
    o.finite = 1;
    o.what = "keys file";
    lnk_csv_table t;
    if (lnk_csv_table_read(path, &o, &t) != LNK_OK ||
        lnk_prov_input_digest(cli_prov(), path, &t.digest) != LNK_OK)
        cli_die_lib();
    if (t.nrow > INT_MAX)
        cli_die("%s: %zu keys, at most %d", path, t.nrow, INT_MAX);
    *K = cli_alloc(sizeof(double) * t.nrow * (size_t)t.ncol);
    if (lnk_csv_table_matrix(&t, NULL, t.ncol, *K) != LNK_OK)
        cli_die_lib();
    *n = (int)t.nrow;
    *d = t.ncol;
    lnk_csv_table_free(&t);
}

/* The rows index,selectable (lnk_select_fwrite, their one writer) at path. */
static int write_rows(const char *path, const int *sel, int n)
{
    lnk_afile af;
    int st = lnk_afile_open(&af, path);
    if (st)
        return st;
    if ((st = lnk_select_fwrite(af.f, sel, n)) != LNK_OK || (st = lnk_afile_commit(&af)) != LNK_OK)
        lnk_afile_abort(&af);
    return st;
}

/* lnk_geom_progress_fn: one key more of the run's cli_meter. */
static void key_done(void *ctx, int done, int total)
{
    (void)done, (void)total;
    cli_meter_add(ctx, 1);
}

int cmd_select(int argc, char **argv)
{
    select_args a;
    cli_parse(&cmd_select_decl, &a, argc, argv);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    char *meta = cli_meta_path(a.out);
    cli_file outs[2] = {{a.out, "-o"}, {meta, "the sidecar of -o"}}, ins[1] = {{a.keys, "--keys"}};
    cli_check_outputs(NULL, outs, 2, ins, 1);
    double *K;
    int n, d;
    read_keys(a.keys, &K, &n, &d);
    CLI_CK(lnk_geom_apply(a.norm, K, K, n, d, 1, a.eps));
    int *sel = cli_alloc(sizeof(int) * (size_t)n), n_sel = 0;
    cli_meter pr;
    cli_meter_start(&pr, n);
    if (lnk_geom_selectable_progress(K, n, d, a.tol, sel, NULL, key_done, &pr) != LNK_OK)
        cli_die("%s: %s", a.keys, lnk_errmsg());
    for (int i = 0; i < n; i++)
        n_sel += sel[i];
    cli_outputs_begin(); /* the CSV and its sidecar: both or neither */
    CLI_CK(write_rows(cli_result_path(a.out, a.json), sel, n));
    if (meta) {
        json_t *x = json_pack("{s:s}", "command", "select");
        CLI_CK(cli_opts_meta(opts, &a, 1, x));
        json_object_set_new(x, "keys", json_integer(n));
        json_object_set_new(x, "dim", json_integer(d));
        json_object_set_new(x, "selectable", json_integer(n_sel));
        cli_meta_write(a.out, NULL, x, start, lnk_now() - t0);
    }
    cli_outputs_commit();
    cli_result_json();
    if (meta)
        cli_say("%d of %d keys selectable -> %s\n", n_sel, n, a.out);
    free(meta);
    free(sel);
    free(K);
    return 0;
}
