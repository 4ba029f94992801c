/* lnkit params: what a model is made of: its tensors in the flat order of
 * docs/MODEL.md §6 (shape, count, offset) and the parameter groups that
 * --block accepts, from a configuration alone (no weights needed). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

typedef struct {
    cli_model_opts mo;
    const char *block, *out;
    int csv, json;
} params_args;

static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(params_args, out, 0, "the listing (table, --csv or --json) (+ FILE.meta.json)",
                   NULL),
    {.type = CLI_STR, .name = "block", .arg = "PATTERNS", CLI_AT(params_args, block),
     .flags = CLI_META, .unset = "",
     .help = "list only this block: comma-separated globs on tensor names, e.g. '*.attn.*' or "
             "'dec.5.*'", .def = "all parameters"},
    {.type = CLI_FLAG, .name = "csv", CLI_AT(params_args, csv), .excl = 1, .flags = CLI_META,
     .help = "CSV kind,name,shape,count,offset (kind tensor or group) instead of the table"},
    {.type = CLI_FLAG, .name = "json", CLI_AT(params_args, json), .excl = 1, .flags = CLI_META,
     .help = "JSON {n_params, n_tensors, tensors, groups} instead of the table"},
    CLI_MODEL(params_args, mo),
    {0}};

static void defaults(void *p) { ((params_args *)p)->out = "-"; }

const cli_cmd cmd_params_decl = {
    .name = "lnkit params",
    .summary = "the model's tensors: shapes, counts, offsets, --block groups",
    .usage = "[--config C.json] [config flags] [--block PATTERNS] [--csv | --json] [-o FILE]",
    .about = "List the model's tensors in the flat order of the parameter vector (docs/MODEL.md\n"
             "section 6): index, name, shape, count and offset in the vector; then the groups\n"
             "that --block of eigs/trace/density accepts (comma-separated shell globs on the\n"
             "names; '*' also matches dots), each with its tensor and parameter counts.  With\n"
             "--block, only the tensors of that block are listed, with the block's size.",
    .opts = opts,
    .size = sizeof(params_args),
    .defaults = defaults,
    .example = "--config CONFIG -o OUT",
};

/* The groups worth naming: the whole model, each block of each stack, each
 * kind of sub-layer across blocks, W2 (Xiong et al.'s W^{2,l}), embeddings,
 * final norms and the output layer.  Patterns matching nothing are skipped. */
static int make_groups(const lnk_model *m, char ***out)
{
    const lnk_config *c = lnk_model_config(m);
    int cap = 16 + c->L_enc + c->L_dec, n = 0;
    char **g = calloc((size_t)cap, sizeof *g);
    if (!g)
        cli_die("out of memory");
    static const char *const fixed[] = {"*", "*_emb", "*.attn.*", "*.xattn.*", "*.ffn.*",
                                        "*.ffn.w2", "*.norm*", "*final_norm.*", "out.w"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        g[n++] = strdup(fixed[i]);
    if (c->task != LNK_TASK_LM)
        for (int l = 0; l < c->L_enc; l++)
            if (asprintf(&g[n++], "enc.%d.*", l) < 0)
                cli_die("out of memory");
    if (c->task != LNK_TASK_CLS)
        for (int l = 0; l < c->L_dec; l++)
            if (asprintf(&g[n++], "dec.%d.*", l) < 0)
                cli_die("out of memory");
    *out = g;
    return n;
}

static void shape_text(const lnk_tensor_info *t, char *buf, size_t n, int csv)
{
    if (t->ndim == 2)
        snprintf(buf, n, csv ? "%dx%d" : "[%d, %d]", t->shape[0], t->shape[1]);
    else
        snprintf(buf, n, csv ? "%d" : "[%d]", t->shape[0]);
}

/* One row kind,name,shape,count,offset of --csv (offset < 0: empty). */
static int csv_row(lnk_csv *f, const char *kind, const char *name, const char *shape,
                   size_t count, long long offset)
{
    int st = lnk_csv_str(f, kind);
    st = st ? st : lnk_csv_str(f, name);
    st = st ? st : lnk_csv_str(f, shape);
    st = st ? st : lnk_csv_int(f, (long long)count);
    st = st ? st : offset < 0 ? lnk_csv_str(f, "") : lnk_csv_int(f, offset);
    return st ? st : lnk_csv_end_row(f);
}

/* What is listed: the model, the block selected, the groups that exist. */
typedef struct {
    const lnk_config *c;
    const lnk_layout *lay;
    const char *block;
    lnk_block sel, *gb;
    char **groups;
    int n_groups, *ok;
} listing;

static json_t *list_json(const listing *l)
{
    const lnk_layout *lay = l->lay;
    json_t *o = json_object(), *ts = json_array(), *gs = json_array();
    json_object_set_new(o, "task", json_string(lnk_task_name(l->c->task)));
    json_object_set_new(o, "n_params", json_integer((json_int_t)lay->n_params));
    json_object_set_new(o, "n_tensors", json_integer(lay->n_tensors));
    if (l->block) {
        json_object_set_new(o, "block", json_string(l->block));
        json_object_set_new(o, "block_params", json_integer((json_int_t)l->sel.n));
    }
    for (int k = 0; k < l->sel.n_tensors; k++) {
        const lnk_tensor_info *t = &lay->t[l->sel.tensor[k]];
        json_t *e = json_object(), *sh = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(sh, json_integer(t->shape[d]));
        json_object_set_new(e, "index", json_integer(l->sel.tensor[k]));
        json_object_set_new(e, "name", json_string(t->name));
        json_object_set_new(e, "shape", sh);
        json_object_set_new(e, "count", json_integer((json_int_t)t->size));
        json_object_set_new(e, "offset", json_integer((json_int_t)t->offset));
        json_array_append_new(ts, e);
    }
    for (int i = 0; i < l->n_groups; i++) {
        if (!l->ok[i])
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "pattern", json_string(l->groups[i]));
        json_object_set_new(e, "tensors", json_integer(l->gb[i].n_tensors));
        json_object_set_new(e, "count", json_integer((json_int_t)l->gb[i].n));
        json_array_append_new(gs, e);
    }
    json_object_set_new(o, "tensors", ts);
    json_object_set_new(o, "groups", gs);
    return o;
}

static int list_csv(FILE *out, const listing *l)
{
    static const char *const hdr[] = {"kind", "name", "shape", "count", "offset"};
    char shape[48];
    lnk_csv f;
    int st = lnk_csv_begin(&f, out, hdr, 5);
    for (int k = 0; !st && k < l->sel.n_tensors; k++) {
        const lnk_tensor_info *t = &l->lay->t[l->sel.tensor[k]];
        shape_text(t, shape, sizeof shape, 1);
        st = csv_row(&f, "tensor", t->name, shape, t->size, (long long)t->offset);
    }
    for (int i = 0; !st && i < l->n_groups; i++)
        if (l->ok[i])
            st = csv_row(&f, "group", l->groups[i], "", l->gb[i].n, -1);
    lnk_csv_free(&f);
    return st;
}

static void list_table(FILE *f, const listing *l)
{
    const lnk_config *c = l->c;
    const lnk_layout *lay = l->lay;
    char shape[48];
    fprintf(f, "%s model (%s, %s): %zu parameters in %d tensors", lnk_task_name(c->task),
            lnk_norm_pos_name(c->norm_pos), lnk_norm_type_name(c->norm), lay->n_params,
            lay->n_tensors);
    if (l->block)
        fprintf(f, "; block '%s': %zu parameters in %d tensors", l->block, l->sel.n,
                l->sel.n_tensors);
    fprintf(f, "\n\n%5s  %-24s %-14s %12s %12s\n", "index", "tensor", "shape", "count", "offset");
    for (int k = 0; k < l->sel.n_tensors; k++) {
        const lnk_tensor_info *t = &lay->t[l->sel.tensor[k]];
        shape_text(t, shape, sizeof shape, 0);
        fprintf(f, "%5d  %-24s %-14s %12zu %12zu\n", l->sel.tensor[k], t->name, shape, t->size,
                t->offset);
    }
    if (l->n_groups) {
        fprintf(f, "\nGroups for --block (comma-separated globs on the names above):\n");
        fprintf(f, "  %-20s %8s %12s\n", "pattern", "tensors", "count");
        for (int i = 0; i < l->n_groups; i++)
            if (l->ok[i])
                fprintf(f, "  %-20s %8d %12zu\n", l->groups[i], l->gb[i].n_tensors, l->gb[i].n);
    }
}

/* The listing to -o (a file through a temporary name, or standard output),
 * with a sidecar beside a file. */
static void write_listing(const params_args *a, const listing *l, const char *start, double t0)
{
    cli_outputs_begin();
    lnk_afile af;
    CLI_CK(lnk_afile_open(&af, cli_out(a->out, 0)));
    int bad = a->json ? cli_json_fprint(af.f, list_json(l)) : a->csv ? list_csv(af.f, l) : 0;
    if (!a->json && !a->csv)
        list_table(af.f, l);
    if (bad || ferror(af.f) || lnk_afile_commit(&af) != LNK_OK) {
        lnk_afile_abort(&af);
        cli_die("-o %s: could not write the listing", a->out);
    }
    if (!cli_is_stdout(a->out)) {
        json_t *x = json_pack("{s:s}", "command", "params");
        CLI_CK(x ? cli_opts_meta(opts, a, 0, x) : LNK_ENOMEM);
        cli_meta_write(a->out, l->c, x, start, lnk_now() - t0);
    }
    cli_outputs_commit();
}

int cmd_params(int argc, char **argv)
{
    params_args a;
    cli_parse(&cmd_params_decl, &a, argc, argv);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    cli_files f = {0};
    cli_files_out_meta(&f, a.out, "-o");
    cli_files_model(&f, &a.mo, NULL, NULL, 0);
    cli_files_check(NULL, &f);
    lnk_config c;
    lnk_model *m = cli_model_new(&a.mo, &c);
    listing l = {.c = &c, .lay = lnk_model_layout(m), .block = a.block};
    if (lnk_block_select(m, a.block, &l.sel) != LNK_OK)
        cli_die("--block: %s", lnk_errmsg());
    l.n_groups = a.block ? 0 : make_groups(m, &l.groups);
    l.gb = calloc((size_t)l.n_groups + 1, sizeof *l.gb);
    l.ok = calloc((size_t)l.n_groups + 1, sizeof *l.ok);
    if (!l.gb || !l.ok)
        cli_die("out of memory");
    for (int i = 0; i < l.n_groups; i++)
        l.ok[i] = lnk_block_select(m, l.groups[i], &l.gb[i]) == LNK_OK;
    lnk_error_clear();
    write_listing(&a, &l, start, t0);
    for (int i = 0; i < l.n_groups; i++) {
        if (l.ok[i])
            lnk_block_free(&l.gb[i]);
        free(l.groups[i]);
    }
    free(l.groups);
    free(l.gb);
    free(l.ok);
    lnk_block_free(&l.sel);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
