/* Model-aware safetensors files: weights, vectors and batches checked
 * against a model's layout (MODEL.md §6, §8; include/lnkit/safetensors.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/st_internal.h"
#include "lnkit/error.h"
#include "lnkit/model.h"
#include "lnkit/safetensors.h"

/* Prefix the current message with the path (the message may be read while
 * formatting the new one, so copy it first). */
static int with_path(int st, const char *path)
{
    char msg[900];
    snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    return lnk_error(st, "%s: %s", path, msg);
}

static int check_finite(const char *what, const char *name, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return lnk_error(LNK_ENONFINITE, "%s: tensor '" NM "': element %zu is %g (not finite)",
                             what, name, i, x[i]);
    return LNK_OK;
}

/* Does st tensor x have the layout tensor's dtype and shape?  Error if not. */
static int check_like(const char *path, const lnk_st_tensor *x, const lnk_tensor_info *ti)
{
    if (x->dtype != LNK_DT_F64)
        return lnk_error(LNK_EMISMATCH, "%s: tensor '" NM "' has dtype %s, expected F64", path,
                         x->name, lnk_st_dtype_name(x->dtype));
    int64_t want[2] = {ti->shape[0], ti->shape[1]};
    int same = x->ndim == ti->ndim;
    for (int k = 0; same && k < ti->ndim; k++)
        same = x->shape[k] == want[k];
    if (!same) {
        char a[160], b[64];
        return lnk_error(LNK_EMISMATCH, "%s: tensor '" NM "' has shape %s, this configuration needs %s",
                         path, x->name, lnk_st_fmt_shape(a, sizeof a, x->shape, x->ndim),
                         lnk_st_fmt_shape(b, sizeof b, want, ti->ndim));
    }
    return LNK_OK;
}

/* The named tensors of the layout: validate everything first, then copy, so
 * theta is untouched on error. */
static int load_named(const char *path, const lnk_st_file *f, const lnk_model *m, double *theta)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int st;
    for (int i = 0; i < f->n; i++) {
        const lnk_st_tensor *x = &f->t[i];
        int k = lnk_layout_find(lay, x->name);
        if (k < 0)
            return lnk_error(LNK_EMISMATCH, "%s: tensor '" NM "' is not a parameter of this "
                             "configuration (task %s, %d tensors expected)", path, x->name,
                             lnk_task_name(lnk_model_config(m)->task), lay->n_tensors);
        if ((st = check_like(path, x, &lay->t[k])) != LNK_OK)
            return st;
        if ((st = check_finite(path, x->name, x->data, x->numel)) != LNK_OK)
            return st;
    }
    for (int k = 0; k < lay->n_tensors; k++)
        if (!lnk_st_get(f, lay->t[k].name))
            return lnk_error(LNK_EMISMATCH, "%s: tensor '" NM "' is missing (this configuration "
                             "needs %d tensors, the file has %d)", path, lay->t[k].name,
                             lay->n_tensors, f->n);
    for (int i = 0; i < f->n; i++) {
        const lnk_tensor_info *ti = &lay->t[lnk_layout_find(lay, f->t[i].name)];
        memcpy(theta + ti->offset, f->t[i].data, ti->size * sizeof *theta);
    }
    return LNK_OK;
}

/* Write theta as the named tensors of the layout (MODEL.md §6 order). */
static int save_named(const char *path, const lnk_model *m, const double *theta, const char *what,
                      const char *const *metadata)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int st;
    char pre[600];
    snprintf(pre, sizeof pre, "%s: cannot save %s", path, what);
    for (int k = 0; k < lay->n_tensors; k++)
        if ((st = check_finite(pre, lay->t[k].name, theta + lay->t[k].offset, lay->t[k].size)))
            return st;
    lnk_st_tensor *t = calloc(lay->n_tensors ? (size_t)lay->n_tensors : 1, sizeof *t);
    if (!t)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    for (int k = 0; k < lay->n_tensors; k++) {
        const lnk_tensor_info *ti = &lay->t[k];
        t[k].name = (char *)ti->name;
        t[k].dtype = LNK_DT_F64;
        t[k].ndim = ti->ndim;
        for (int j = 0; j < ti->ndim; j++)
            t[k].shape[j] = ti->shape[j];
        t[k].numel = ti->size;
        t[k].data = (void *)(theta + ti->offset);
    }
    st = lnk_st_write(path, t, lay->n_tensors, metadata);
    free(t);
    return st;
}

int lnk_weights_from_st(const lnk_st_file *f, const lnk_model *m, double *theta)
{
    return load_named(f->path, f, m, theta);
}

int lnk_weights_load(const char *path, const lnk_model *m, double *theta)
{
    lnk_st_file *f;
    int st = lnk_st_read(path, &f);
    if (st != LNK_OK)
        return st;
    st = lnk_weights_from_st(f, m, theta);
    lnk_st_free(f);
    return st;
}

int lnk_weights_save(const char *path, const lnk_model *m, const double *theta)
{
    return lnk_weights_save_meta(path, m, theta, NULL);
}

int lnk_weights_save_meta(const char *path, const lnk_model *m, const double *theta,
                          const char *const *metadata)
{
    return save_named(path, m, theta, "weights", metadata);
}

int lnk_model_config_save(const char *path, const lnk_model *m)
{
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc(sizeof *names * (size_t)lay->n_tensors);
    if (!names)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    int st = lnk_config_save_json(lnk_model_config(m), path, lay->n_params, names,
                                  lay->n_tensors);
    free(names);
    return st;
}

/* The layout tensor holding flat index i, for messages. */
static const char *tensor_of(const lnk_layout *lay, size_t i, size_t *local)
{
    for (int k = 0; k < lay->n_tensors; k++)
        if (i >= lay->t[k].offset && i < lay->t[k].offset + lay->t[k].size) {
            *local = i - lay->t[k].offset;
            return lay->t[k].name;
        }
    *local = i;
    return "?";
}

int lnk_vector_load(const char *path, const lnk_model *m, double *v, int *layout_kind)
{
    lnk_st_file *f;
    int st = lnk_st_read(path, &f);
    if (st != LNK_OK)
        return st;
    st = lnk_vector_from_st(f, m, v, layout_kind);
    lnk_st_free(f);
    return st;
}

int lnk_vector_from_st(const lnk_st_file *f, const lnk_model *m, double *v, int *layout_kind)
{
    const char *path = f->path;
    int st = LNK_OK;
    const lnk_layout *lay = lnk_model_layout(m);
    size_t np = lnk_model_n_params(m);
    if (f->n == 1 && strcmp(f->t[0].name, "v") == 0) {
        const lnk_st_tensor *x = &f->t[0];
        char a[160];
        if (x->dtype != LNK_DT_F64)
            st = lnk_error(LNK_EMISMATCH, "%s: tensor 'v' has dtype %s, expected F64", path,
                           lnk_st_dtype_name(x->dtype));
        else if (x->ndim != 1 || (uint64_t)x->shape[0] != (uint64_t)np)
            st = lnk_error(LNK_EMISMATCH, "%s: tensor 'v' has shape %s, expected [%zu] (the number "
                           "of parameters of this configuration)", path,
                           lnk_st_fmt_shape(a, sizeof a, x->shape, x->ndim), np);
        else {
            const double *d = x->data;
            for (size_t i = 0; i < np && st == LNK_OK; i++)
                if (!isfinite(d[i])) {
                    size_t j;
                    const char *nm = tensor_of(lay, i, &j);
                    st = lnk_error(LNK_ENONFINITE, "%s: tensor 'v': element %zu (tensor '" NM
                                   "' element %zu) is %g (not finite)", path, i, nm, j, d[i]);
                }
            if (st == LNK_OK) {
                memcpy(v, d, np * sizeof *v);
                if (layout_kind)
                    *layout_kind = LNK_VEC_FLAT;
            }
        }
    } else {
        st = load_named(path, f, m, v);
        if (st == LNK_OK && layout_kind)
            *layout_kind = LNK_VEC_NAMED;
    }
    return st;
}

int lnk_vector_save(const char *path, const lnk_model *m, const double *v, int layout_kind)
{
    return lnk_vector_save_meta(path, m, v, layout_kind, NULL);
}

int lnk_vector_save_meta(const char *path, const lnk_model *m, const double *v, int layout_kind,
                         const char *const *metadata)
{
    if (layout_kind == LNK_VEC_NAMED)
        return save_named(path, m, v, "vector", metadata);
    if (layout_kind != LNK_VEC_FLAT)
        return lnk_error(LNK_EINVAL, "%s: unknown vector layout %d (expected flat or named)", path,
                         layout_kind);
    const lnk_layout *lay = lnk_model_layout(m);
    size_t np = lnk_model_n_params(m);
    for (size_t i = 0; i < np; i++)
        if (!isfinite(v[i])) {
            size_t j;
            const char *nm = tensor_of(lay, i, &j);
            return lnk_error(LNK_ENONFINITE, "%s: cannot save vector: element %zu (tensor '" NM
                             "' element %zu) is %g (not finite)", path, i, nm, j, v[i]);
        }
    lnk_st_tensor t = {.name = "v", .dtype = LNK_DT_F64, .ndim = 1,
                       .shape = {(int64_t)np}, .numel = np, .data = (void *)v};
    return lnk_st_write(path, &t, 1, metadata);
}

/* One I64 2-D batch array: present, right dtype, rows and row length in int range. */
static int batch_tensor(const char *path, const lnk_st_file *f, const char *name, const char *task,
                        lnk_st_tensor **out)
{
    *out = NULL;
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0)
            *out = &f->t[i];
    const lnk_st_tensor *x = *out;
    char a[160];
    if (!x)
        return lnk_error(LNK_EMISMATCH, "%s: tensor '%s' is missing (task %s needs it)", path, name, task);
    if (x->dtype != LNK_DT_I64)
        return lnk_error(LNK_EMISMATCH, "%s: tensor '%s' has dtype %s, expected I64 (token ids)",
                         path, name, lnk_st_dtype_name(x->dtype));
    if (x->ndim != 2)
        return lnk_error(LNK_EMISMATCH, "%s: tensor '%s' has shape %s, expected 2 dimensions [B, len]",
                         path, name, lnk_st_fmt_shape(a, sizeof a, x->shape, x->ndim));
    if (x->shape[0] < 1 || x->shape[1] < 1 || x->shape[0] > INT_MAX || x->shape[1] > INT_MAX)
        return lnk_error(LNK_EMISMATCH, "%s: tensor '%s' has shape %s, expected at least one row "
                         "and one column (and fewer than 2^31)", path, name,
                         lnk_st_fmt_shape(a, sizeof a, x->shape, x->ndim));
    return LNK_OK;
}

int lnk_batch_load(const char *path, const lnk_model *m, lnk_batch *b)
{
    memset(b, 0, sizeof *b);
    lnk_st_file *f;
    int st = lnk_st_read(path, &f);
    if (st != LNK_OK)
        return st;
    st = lnk_batch_from_st(f, m, b);
    lnk_st_free(f);
    return st;
}

int lnk_batch_from_st(lnk_st_file *f, const lnk_model *m, lnk_batch *b)
{
    memset(b, 0, sizeof *b);
    const char *path = f->path;
    int st = LNK_OK;
    lnk_task task = lnk_model_config(m)->task;
    const char *tn = lnk_task_name(task);
    int need_src = task == LNK_TASK_CLS || task == LNK_TASK_SEQ2SEQ;
    int need_tgt = task == LNK_TASK_LM || task == LNK_TASK_SEQ2SEQ;
    int need_lab = task == LNK_TASK_CLS;
    lnk_st_tensor *src = NULL, *tgt = NULL, *lab = NULL;
    char a[160], c[160];
    /* A data file made for another task gives an answer to another question
     * (an lm scoring only the tgt rows of a seq2seq data set): refused. */
    const char *ft = lnk_st_meta(f, "task");
    if (ft) {
        if (strcmp(ft, "lm") && strcmp(ft, "seq2seq") && strcmp(ft, "cls")) {
            st = lnk_error(LNK_EMISMATCH, "%s: metadata 'task' is '" NM "', expected lm, seq2seq "
                           "or cls", path, ft);
            goto done;
        }
        if (strcmp(ft, tn)) {
            st = lnk_error(LNK_EMISMATCH, "%s: the file is a %s data file (metadata task '%s') but "
                           "the model's task is %s: use a %s model (--task %s) or a %s data file",
                           path, ft, ft, tn, ft, ft, tn);
            goto done;
        }
    }
    if (need_src && (st = batch_tensor(path, f, "src", tn, &src)))
        goto done;
    if (need_tgt && (st = batch_tensor(path, f, "tgt", tn, &tgt)))
        goto done;
    if (need_lab && (st = batch_tensor(path, f, "labels", tn, &lab)))
        goto done;
    if (!ft) {
        static const char *const role[3] = {"src", "tgt", "labels"};
        int used[3] = {need_src, need_tgt, need_lab};
        for (int r = 0; r < 3; r++)
            if (!used[r] && lnk_st_get(f, role[r])) {
                int has_s = lnk_st_get(f, "src") != NULL, has_t = lnk_st_get(f, "tgt") != NULL;
                const char *looks = lnk_st_get(f, "labels") ? "cls" : has_s && has_t ? "seq2seq"
                                    : has_t ? "lm" : "cls";
                st = lnk_error(LNK_EMISMATCH, "%s: the file has a tensor '%s', which the model's "
                               "task %s does not use: it looks like a %s data file; use a %s model "
                               "(--task %s) or a %s data file", path, role[r], tn, looks, looks,
                               looks, tn);
                goto done;
            }
    }
    if (src && tgt && src->shape[0] != tgt->shape[0]) {
        st = lnk_error(LNK_EMISMATCH, "%s: tensors 'src' and 'tgt' have %lld and %lld rows; the batch "
                       "size B must agree", path, (long long)src->shape[0], (long long)tgt->shape[0]);
        goto done;
    }
    if (src && lab && (src->shape[0] != lab->shape[0] || src->shape[1] != lab->shape[1])) {
        st = lnk_error(LNK_EMISMATCH, "%s: tensor 'labels' has shape %s, expected the shape %s of 'src'",
                       path, lnk_st_fmt_shape(a, sizeof a, lab->shape, 2), lnk_st_fmt_shape(c, sizeof c, src->shape, 2));
        goto done;
    }
    /* Take the arrays over from the file. */
    lnk_st_tensor *any = src ? src : tgt;
    b->B = (int)any->shape[0];
    b->owns = 1;
    if (src) {
        b->S = (int)src->shape[1];
        b->src = src->data;
        src->data = NULL;
    }
    if (tgt) {
        b->T = (int)tgt->shape[1];
        b->tgt = tgt->data;
        tgt->data = NULL;
    }
    if (lab) {
        b->labels = lab->data;
        lab->data = NULL;
    }
    if ((st = lnk_batch_check(m, b)) != LNK_OK) {
        st = with_path(st, path);
        lnk_batch_free(b);
        memset(b, 0, sizeof *b);
    }
done:
    return st;
}

int lnk_batch_save(const char *path, const lnk_batch *b)
{
    return lnk_batch_save_meta(path, b, NULL);
}

int lnk_batch_save_meta(const char *path, const lnk_batch *b, const char *const *metadata)
{
    if (b->B < 0 || b->S < 0 || b->T < 0)
        return lnk_error(LNK_EINVAL, "%s: batch has negative sizes B=%d S=%d T=%d", path, b->B, b->S, b->T);
    lnk_st_tensor t[3];
    int n = 0;
    const char *names[3] = {"src", "tgt", "labels"};
    int64_t *arr[3] = {b->src, b->tgt, b->labels};
    int len[3] = {b->S, b->T, b->S};
    for (int i = 0; i < 3; i++) {
        if (!arr[i])
            continue;
        t[n] = (lnk_st_tensor){.name = (char *)names[i], .dtype = LNK_DT_I64, .ndim = 2,
                               .shape = {b->B, len[i]}, .numel = (size_t)b->B * (size_t)len[i],
                               .data = arr[i]};
        n++;
    }
    if (n == 0)
        return lnk_error(LNK_EINVAL, "%s: batch has no src, tgt or labels array", path);
    /* the task the arrays make, for the loader's check */
    size_t k = 0;
    while (metadata && metadata[k] && metadata[k + 1])
        k += 2;
    const char **meta = malloc(sizeof *meta * (k + 3));
    if (!meta)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    meta[0] = "task";
    meta[1] = b->labels ? "cls" : b->src && b->tgt ? "seq2seq" : b->tgt ? "lm" : "cls";
    for (size_t i = 0; i < k; i++)
        meta[2 + i] = metadata[i];
    meta[2 + k] = NULL;
    int st = lnk_st_write(path, t, n, meta);
    free(meta);
    return st;
}
