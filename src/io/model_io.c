/* The result files of the model's own queries, one writer each (see
 * include/lnkit/model_io.h): eval's gradient norms, the tensor listing. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnkit/config.h"
#include "lnkit/curvature_io.h"
#include "lnkit/error.h"
#include "lnkit/model_io.h"
#include "lnkit/sys.h"

int lnk_json_fwrite(FILE *f, json_t *o)
{
    char *txt = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                      JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    if (!txt)
        return lnk_error(LNK_ENOMEM, "out of memory for the JSON");
    int bad = fputs(txt, f) == EOF || fputc('\n', f) == EOF;
    free(txt);
    return bad ? lnk_error(LNK_EIO, "could not write the JSON") : LNK_OK;
}

/* ------------------------------------------------------------------ eval */

const char *const lnk_cols_eval[] = {"quantity", "tensor", "value", NULL};

/* One row quantity,tensor,value (value: a count when is_count). */
static int eval_row(lnk_csv *c, const char *quantity, const char *tensor, double value,
                    int is_count)
{
    int st = lnk_csv_str(c, quantity);
    st = st ? st : lnk_csv_str(c, tensor);
    st = st ? st : is_count ? lnk_csv_int(c, (long long)value) : lnk_csv_double(c, value);
    return st ? st : lnk_csv_end_row(c);
}

typedef struct {
    const lnk_layout *lay;
    const lnk_eval_result *r;
} eval_ctx;

static int eval_rows(lnk_csv *c, const void *ctx)
{
    const lnk_layout *lay = ((const eval_ctx *)ctx)->lay;
    const lnk_eval_result *r = ((const eval_ctx *)ctx)->r;
    int st = eval_row(c, "loss", "", r->loss, 0);
    st = st ? st : eval_row(c, "n_scored", "", (double)r->n_scored, 1);
    for (int i = 0; !st && i < lay->n_tensors; i++)
        st = eval_row(c, "grad_norm", lay->t[i].name, r->norm[i], 0);
    return st ? st : eval_row(c, "grad_norm_total", "", r->norm[lay->n_tensors], 0);
}

int lnk_eval_fwrite(FILE *f, const lnk_layout *lay, const lnk_eval_result *r)
{
    eval_ctx x = {lay, r};
    lnk_csv c;
    int st = lnk_csv_begin_keys(&c, f, NULL, lnk_cols_eval);
    st = st ? st : eval_rows(&c, &x);
    lnk_csv_free(&c);
    return st;
}

int lnk_eval_write(const char *path, const lnk_layout *lay, const lnk_eval_result *r)
{
    eval_ctx x = {lay, r};
    return lnk_csv_write(path, NULL, lnk_cols_eval, eval_rows, &x);
}

int lnk_eval_fwrite_json(FILE *f, const lnk_layout *lay, const lnk_eval_result *r)
{
    for (int i = 0; i <= lay->n_tensors; i++)
        if (!isfinite(r->norm[i]))
            return lnk_error(LNK_ENONFINITE, "eval: a gradient norm is not finite");
    if (!isfinite(r->loss))
        return lnk_error(LNK_ENONFINITE, "eval: the loss is not finite");
    json_t *o = json_object(), *gn = json_object();
    int bad = !o || !gn;
    bad |= json_object_set_new(o, "loss", json_real(r->loss));
    bad |= json_object_set_new(o, "n_scored", json_integer((json_int_t)r->n_scored));
    for (int i = 0; i < lay->n_tensors; i++)
        bad |= json_object_set_new(gn, lay->t[i].name, json_real(r->norm[i]));
    bad |= json_object_set_new(o, "grad_norms", gn);
    bad |= json_object_set_new(o, "grad_norm_total", json_real(r->norm[lay->n_tensors]));
    if (bad) {
        json_decref(o);
        return lnk_error(LNK_ENOMEM, "out of memory for the JSON");
    }
    return lnk_json_fwrite(f, o);
}

/* --------------------------------------------------------------- listing */

/* The groups worth naming (see the header); those selecting nothing go. */
static int make_groups(lnk_listing *l)
{
    const lnk_config *c = lnk_model_config(l->m);
    static const char *const fixed[] = {"*", "*_emb", "*.attn.*", "*.xattn.*", "*.ffn.*",
                                        "*.ffn.w2", "*.norm*", "*final_norm.*", "out.w"};
    int nf = (int)(sizeof fixed / sizeof fixed[0]), cap = nf + c->L_enc + c->L_dec;
    l->group = calloc((size_t)cap, sizeof *l->group);
    l->gb = calloc((size_t)cap, sizeof *l->gb);
    if (!l->group || !l->gb)
        return lnk_error(LNK_ENOMEM, "out of memory for the groups");
    for (int i = 0; i < cap; i++) {
        int enc = c->task != LNK_TASK_LM, k = i - nf, bad;
        if (k < 0)
            bad = !(l->group[l->n_groups] = strdup(fixed[i]));
        else if (k < c->L_enc)
            bad = enc ? asprintf(&l->group[l->n_groups], "enc.%d.*", k) < 0 : 0;
        else
            bad = c->task != LNK_TASK_CLS
                      ? asprintf(&l->group[l->n_groups], "dec.%d.*", k - c->L_enc) < 0 : 0;
        if (bad)
            return lnk_error(LNK_ENOMEM, "out of memory for the groups");
        char **g = &l->group[l->n_groups];
        if (*g && lnk_block_select(l->m, *g, &l->gb[l->n_groups]) == LNK_OK)
            l->n_groups++;
        else
            free(*g), *g = NULL;
    }
    lnk_error_clear(); /* the patterns that matched nothing */
    return LNK_OK;
}

int lnk_listing_make(const lnk_model *m, const char *block, lnk_listing *l)
{
    memset(l, 0, sizeof *l);
    l->m = m;
    l->block = block;
    int st = lnk_block_select(m, block, &l->sel);
    st = st || block ? st : make_groups(l);
    if (st)
        lnk_listing_free(l);
    return st;
}

void lnk_listing_free(lnk_listing *l)
{
    for (int i = 0; i < l->n_groups; i++) {
        lnk_block_free(&l->gb[i]);
        free(l->group[i]);
    }
    free(l->group);
    free(l->gb);
    lnk_block_free(&l->sel);
    memset(l, 0, sizeof *l);
}

static void shape_text(const lnk_tensor_info *t, char *buf, size_t n, int csv)
{
    if (t->ndim == 2)
        snprintf(buf, n, csv ? "%dx%d" : "[%d, %d]", t->shape[0], t->shape[1]);
    else
        snprintf(buf, n, csv ? "%d" : "[%d]", t->shape[0]);
}

static json_t *listing_json(const lnk_listing *l)
{
    const lnk_layout *lay = lnk_model_layout(l->m);
    json_t *o = json_object(), *ts = json_array(), *gs = json_array();
    json_object_set_new(o, "task", json_string(lnk_task_name(lnk_model_config(l->m)->task)));
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
        json_t *e = json_object();
        json_object_set_new(e, "pattern", json_string(l->group[i]));
        json_object_set_new(e, "tensors", json_integer(l->gb[i].n_tensors));
        json_object_set_new(e, "count", json_integer((json_int_t)l->gb[i].n));
        json_array_append_new(gs, e);
    }
    json_object_set_new(o, "tensors", ts);
    json_object_set_new(o, "groups", gs);
    return o;
}

/* One row kind,name,shape,count,offset (offset < 0: empty). */
static int listing_row(lnk_csv *f, const char *kind, const char *name, const char *shape,
                       size_t count, long long offset)
{
    int st = lnk_csv_str(f, kind);
    st = st ? st : lnk_csv_str(f, name);
    st = st ? st : lnk_csv_str(f, shape);
    st = st ? st : lnk_csv_int(f, (long long)count);
    st = st ? st : offset < 0 ? lnk_csv_str(f, "") : lnk_csv_int(f, offset);
    return st ? st : lnk_csv_end_row(f);
}

static int listing_csv(FILE *out, const lnk_listing *l)
{
    static const char *const hdr[] = {"kind", "name", "shape", "count", "offset"};
    const lnk_layout *lay = lnk_model_layout(l->m);
    char shape[48];
    lnk_csv f;
    int st = lnk_csv_begin(&f, out, hdr, 5);
    for (int k = 0; !st && k < l->sel.n_tensors; k++) {
        const lnk_tensor_info *t = &lay->t[l->sel.tensor[k]];
        shape_text(t, shape, sizeof shape, 1);
        st = listing_row(&f, "tensor", t->name, shape, t->size, (long long)t->offset);
    }
    for (int i = 0; !st && i < l->n_groups; i++)
        st = listing_row(&f, "group", l->group[i], "", l->gb[i].n, -1);
    lnk_csv_free(&f);
    return st;
}

static int listing_table(FILE *f, const lnk_listing *l)
{
    const lnk_config *c = lnk_model_config(l->m);
    const lnk_layout *lay = lnk_model_layout(l->m);
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
            fprintf(f, "  %-20s %8d %12zu\n", l->group[i], l->gb[i].n_tensors, l->gb[i].n);
    }
    return ferror(f) ? lnk_error(LNK_EIO, "could not write the listing") : LNK_OK;
}

int lnk_listing_fwrite(FILE *f, const lnk_listing *l, lnk_listing_format fmt)
{
    if (fmt == LNK_LISTING_JSON) {
        json_t *o = listing_json(l);
        return o ? lnk_json_fwrite(f, o) : lnk_error(LNK_ENOMEM, "out of memory for the JSON");
    }
    return fmt == LNK_LISTING_CSV ? listing_csv(f, l) : listing_table(f, l);
}

int lnk_listing_write(const char *path, const lnk_listing *l, lnk_listing_format fmt)
{
    lnk_afile a;
    int st = lnk_afile_open(&a, path);
    if (st != LNK_OK)
        return st;
    if ((st = lnk_listing_fwrite(a.f, l, fmt)) != LNK_OK || (st = lnk_afile_commit(&a)) != LNK_OK)
        lnk_afile_abort(&a);
    return st;
}
