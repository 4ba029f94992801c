/* Batches: validation against the model (MODEL.md §4), scored-token counts and
 * deterministic synthetic batches. */
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "model/internal.h"

void lnk_batch_free(lnk_batch *b)
{
    if (b && b->owns) {
        free(b->src);
        free(b->tgt);
        free(b->labels);
    }
    if (b)
        memset(b, 0, sizeof *b);
}

static int check_ids(const char *what, const int64_t *x, int B, int n, int64_t V)
{
    for (int b = 0; b < B; b++) {
        if (x[(size_t)b * n] == LNK_PAD)
            return lnk_error(LNK_EINVAL, "batch: %s row %d starts with <pad> (id 0): a sequence "
                             "must start with a token", what, b);
        for (int t = 0; t < n; t++) {
            int64_t v = x[(size_t)b * n + t];
            if (v < 0 || v >= V)
                return lnk_error(LNK_EINVAL, "batch: %s[%d, %d] = %lld is out of range "
                                 "(expected a token id in [0, %lld))", what, b, t, (long long)v,
                                 (long long)V);
        }
    }
    return LNK_OK;
}

/* Learned positions: a sequence of n positions needs n rows of the table. */
static int check_len(const lnk_config *c, const char *what, int n, const char *how)
{
    if (c->pos == LNK_PE_LEARNED && n > c->max_len)
        return lnk_error(LNK_EINVAL, "batch: %s has %d positions%s but the learned position "
                         "tables have max_len = %d rows (config key 'max_len')", what, n, how,
                         c->max_len);
    return LNK_OK;
}

int lnk_batch_check(const lnk_model *m, const lnk_batch *b)
{
    const lnk_config *c = &m->cfg;
    if (b->B < 1)
        return lnk_error(LNK_EINVAL, "batch: B = %d, expected at least one row", b->B);
    int st = LNK_OK;
    if (m->has_enc && b->src && (st = check_len(c, "src", b->S, "")))
        return st;
    if (m->has_dec && b->tgt &&
        (st = check_len(c, "tgt", b->T - 1, " (the decoder reads tgt[:, :-1])")))
        return st;
    if (m->has_enc) {
        if (!b->src || b->S < 1)
            return lnk_error(LNK_EINVAL, "batch: task %s needs a 'src' array with at least one "
                             "column", lnk_task_name(c->task));
        int st = check_ids("src", b->src, b->B, b->S, c->V_src);
        if (st)
            return st;
    }
    if (m->has_dec) {
        if (!b->tgt || b->T < 2)
            return lnk_error(LNK_EINVAL, "batch: task %s needs a 'tgt' array with at least two "
                             "columns (input and prediction), got %d", lnk_task_name(c->task),
                             b->tgt ? b->T : 0);
        int st = check_ids("tgt", b->tgt, b->B, b->T, c->V_tgt);
        if (st)
            return st;
        for (int r = 0; r < b->B; r++) {
            int any = 0;
            for (int t = 1; t < b->T; t++)
                any |= b->tgt[(size_t)r * b->T + t] != LNK_PAD;
            if (!any)
                return lnk_error(LNK_EINVAL, "batch: tgt row %d has no scored position (every "
                                 "token after the first is <pad>)", r);
        }
    }
    if (c->task == LNK_TASK_CLS) {
        if (!b->labels)
            return lnk_error(LNK_EINVAL, "batch: task cls needs a 'labels' array");
        for (int r = 0; r < b->B; r++)
            for (int t = 0; t < b->S; t++) {
                size_t i = (size_t)r * b->S + t;
                if (b->src[i] == LNK_PAD)
                    continue;
                if (b->labels[i] < 0 || b->labels[i] >= c->n_classes)
                    return lnk_error(LNK_EINVAL, "batch: labels[%d, %d] = %lld is out of range "
                                     "(expected a class in [0, %d))", r, t,
                                     (long long)b->labels[i], c->n_classes);
            }
    }
    return LNK_OK;
}

size_t lnk_batch_n_scored(const lnk_model *m, const lnk_batch *b)
{
    size_t n = 0;
    if (m->cfg.task == LNK_TASK_CLS) {
        for (size_t i = 0; i < (size_t)b->B * b->S; i++)
            n += b->src[i] != LNK_PAD;
    } else {
        for (int r = 0; r < b->B; r++)
            for (int t = 1; t < b->T; t++)
                n += b->tgt[(size_t)r * b->T + t] != LNK_PAD;
    }
    return n;
}

int lnk_batch_synthetic(const lnk_model *m, int B, int len, uint64_t seed, lnk_batch *out)
{
    const lnk_config *c = &m->cfg;
    memset(out, 0, sizeof *out);
    if (B < 1 || len < 1 || len == INT_MAX)
        return lnk_error(LNK_EINVAL, "synthetic batch: B = %d and len = %d must be >= 1 (and "
                         "len < %d)", B, len, INT_MAX);
    size_t BL = (size_t)B * (size_t)len;
    if ((m->has_enc && c->V_src < 5) || (m->has_dec && c->V_tgt < 5))
        return lnk_error(LNK_EINVAL, "synthetic batch: ids are drawn from [4, V), so V must be "
                         "at least 5");
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return lnk_error(LNK_ENOMEM, "out of memory");
    gsl_rng_set(r, (unsigned long)(seed * 2654435761u + 1u));
    out->B = B;
    out->owns = 1;
    int st = LNK_OK;
    if (m->has_enc) {
        out->S = len;
        out->src = malloc(sizeof(int64_t) * BL);
        if (!out->src)
            st = LNK_ENOMEM;
        for (size_t i = 0; !st && i < BL; i++)
            out->src[i] = 4 + (int64_t)gsl_rng_uniform_int(r, (unsigned long)(c->V_src - 4));
    }
    if (!st && c->task == LNK_TASK_CLS) {
        out->labels = malloc(sizeof(int64_t) * BL);
        if (!out->labels)
            st = LNK_ENOMEM;
        for (size_t i = 0; !st && i < BL; i++)
            out->labels[i] = (int64_t)gsl_rng_uniform_int(r, (unsigned long)c->n_classes);
    }
    if (!st && m->has_dec) {
        int T = len + 1;
        out->T = T;
        out->tgt = malloc(sizeof(int64_t) * (size_t)B * (size_t)T);
        if (!out->tgt)
            st = LNK_ENOMEM;
        for (int b = 0; !st && b < B; b++) {
            out->tgt[(size_t)b * T] = LNK_BOS;
            for (int t = 1; t < T; t++)
                out->tgt[(size_t)b * T + t] =
                    4 + (int64_t)gsl_rng_uniform_int(r, (unsigned long)(c->V_tgt - 4));
        }
    }
    gsl_rng_free(r);
    if (st) {
        lnk_batch_free(out);
        return lnk_error(LNK_ENOMEM, "out of memory making a synthetic batch");
    }
    return LNK_OK;
}

/* Copy rows r0..r1-1 of x [*, n] keeping the first k columns. */
static int64_t *rows(const int64_t *x, int n, int r0, int r1, int k)
{
    int64_t *y = malloc(sizeof(int64_t) * (size_t)(r1 - r0) * (size_t)k);
    if (y)
        for (int r = r0; r < r1; r++)
            memcpy(y + (size_t)(r - r0) * k, x + (size_t)r * n, sizeof(int64_t) * k);
    return y;
}

/* Columns up to the last one that is not <pad> in some row of r0..r1-1. */
static int used_cols(const int64_t *x, int n, int r0, int r1)
{
    int k = 1;
    for (int r = r0; r < r1; r++)
        for (int t = n - 1; t >= k; t--)
            if (x[(size_t)r * n + t] != LNK_PAD) {
                k = t + 1;
                break;
            }
    return k;
}

int lnk_batch_slice(const lnk_batch *b, int r0, int r1, lnk_batch *out)
{
    memset(out, 0, sizeof *out);
    if (r0 < 0 || r1 > b->B || r0 >= r1)
        return lnk_error(LNK_EINVAL, "batch slice: rows [%d, %d) not inside [0, %d)", r0, r1, b->B);
    out->B = r1 - r0;
    out->owns = 1;
    int st = LNK_OK;
    if (b->src) {
        out->S = used_cols(b->src, b->S, r0, r1);
        out->src = rows(b->src, b->S, r0, r1, out->S);
        st |= !out->src;
        if (b->labels) {
            out->labels = rows(b->labels, b->S, r0, r1, out->S);
            st |= !out->labels;
        }
    }
    if (b->tgt) {
        out->T = used_cols(b->tgt, b->T, r0, r1);
        if (out->T < 2 && b->T >= 2)
            out->T = 2; /* keep the shape valid; lnk_batch_check reports the empty row */
        out->tgt = rows(b->tgt, b->T, r0, r1, out->T);
        st |= !out->tgt;
    }
    if (st) {
        lnk_batch_free(out);
        return lnk_error(LNK_ENOMEM, "out of memory slicing a batch");
    }
    return LNK_OK;
}
