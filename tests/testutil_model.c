/* Helpers of the model tests (test_model, test_model_loss,
 * test_model_repro): a model fixture, workspaces, tensors by name, batches
 * with rows of given lengths. */
#include "testutil.h"
#include "testutil_model.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void fx_model(fx *f, lnk_config c)
{
    f->c = c;
    f->m = lnk_model_alloc(&f->c);
    if (!f->m)
        fail_msg("model: %s", lnk_errmsg());
    f->n = lnk_model_n_params(f->m);
    f->th = malloc(sizeof(double) * f->n);
    assert_non_null(f->th);
    assert_int_equal(lnk_model_init_params(f->m, f->th), LNK_OK);
}

void fx_close(fx *f)
{
    lnk_model_free(f->m);
    lnk_config_clear(&f->c);
    free(f->th);
}

lnk_workspace *tm_ws_new(const lnk_model *m, int B, int S, int T, unsigned flags)
{
    lnk_workspace *ws = lnk_workspace_alloc(m, B, S, T, flags);
    if (!ws)
        fail_msg("workspace: %s", lnk_errmsg());
    return ws;
}

/* Tensor by name inside a flat vector (fails the test if absent). */
double *tm_tens(const lnk_model *m, double *x, const char *name, size_t *size)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int i = lnk_layout_find(lay, name);
    if (i < 0)
        fail_msg("tensor '%s' not in the layout", name);
    if (size)
        *size = lay->t[i].size;
    return x + lay->t[i].offset;
}

/* A batch with rows of the given lengths (<pad> after them): src ids uniform in
 * [4, V_src), labels in [0, n_classes), tgt = <bos> then ids in [4, V_tgt). */
void tm_batch_make(const lnk_model *m, lnk_batch *b, int B, int S, const int *slen, int T,
                       const int *tlen, uint64_t seed)
{
    const lnk_config *c = lnk_model_config(m);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed + 7u);
    memset(b, 0, sizeof *b);
    b->B = B;
    b->owns = 1;
    if (c->task != LNK_TASK_LM) {
        b->S = S;
        b->src = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++)
            for (int t = 0; t < slen[i]; t++)
                b->src[i * S + t] = 4 + (int64_t)gsl_rng_uniform_int(r, c->V_src - 4);
    }
    if (c->task == LNK_TASK_CLS) {
        b->labels = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++)
            for (int t = 0; t < slen[i]; t++)
                b->labels[i * S + t] = (int64_t)gsl_rng_uniform_int(r, c->n_classes);
    }
    if (c->task != LNK_TASK_CLS) {
        b->T = T;
        b->tgt = calloc((size_t)B * T, sizeof(int64_t));
        for (int i = 0; i < B; i++) {
            b->tgt[i * T] = LNK_BOS;
            for (int t = 1; t < tlen[i]; t++)
                b->tgt[i * T + t] = 4 + (int64_t)gsl_rng_uniform_int(r, c->V_tgt - 4);
        }
    }
    gsl_rng_free(r);
    if (lnk_batch_check(m, b) != LNK_OK)
        fail_msg("test batch rejected: %s", lnk_errmsg());
}

int tm_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

double tm_maxabs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}
