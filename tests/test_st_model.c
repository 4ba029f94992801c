/* Model-aware safetensors files (src/io/st_model.c): weights, vectors and
 * batches saved and loaded against a model's layout, and every mismatch
 * refused with a message naming it. */
#include "testutil.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* ------------------------------------------------------- model-aware files */

typedef struct {
    lnk_config cfg;
    lnk_model *m;
    double *theta;
    size_t n;
} fixture;

static int setup_model(void **state)
{
    fixture *x = calloc(1, sizeof *x);
    x->cfg = tu_config("d=8", "h=2", "L=1", "V=12", NULL);
    x->m = lnk_model_alloc(&x->cfg);
    if (!x->m)
        fail_msg("%s", lnk_errmsg());
    x->n = lnk_model_n_params(x->m);
    x->theta = malloc(x->n * sizeof(double));
    tu_randn(x->theta, x->n, 3);
    *state = x;
    return 0;
}

static int teardown_model(void **state)
{
    fixture *x = *state;
    lnk_model_free(x->m);
    lnk_config_clear(&x->cfg);
    free(x->theta);
    free(x);
    return 0;
}

/* Re-write the tensors of file path into out, changed by fn (may drop or alter). */
typedef int (*rewrite_fn)(lnk_st_tensor *t, int n, void *ctx);
static void rewrite(const char *path, const char *out, rewrite_fn fn, void *ctx)
{
    lnk_st_file *f;
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    lnk_st_tensor *t = calloc((size_t)f->n + 1, sizeof *t);
    memcpy(t, f->t, (size_t)f->n * sizeof *t);
    int n = fn(t, f->n, ctx);
    if (lnk_st_write(out, t, n, NULL) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    free(t);
    lnk_st_free(f);
}

static int rw_reverse(lnk_st_tensor *t, int n, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < n / 2; i++) {
        lnk_st_tensor s = t[i];
        t[i] = t[n - 1 - i];
        t[n - 1 - i] = s;
    }
    return n;
}

static int rw_drop(lnk_st_tensor *t, int n, void *ctx)
{
    int k = *(int *)ctx;
    memmove(t + k, t + k + 1, (size_t)(n - k - 1) * sizeof *t);
    return n - 1;
}

static int rw_extra(lnk_st_tensor *t, int n, void *ctx)
{
    (void)ctx;
    static double z[4];
    t[n] = (lnk_st_tensor){.name = "enc.0.attn.wq", .dtype = LNK_DT_F64, .ndim = 2, .shape = {2, 2}, .numel = 4, .data = z};
    return n + 1;
}

static int rw_transpose(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0) {
            int64_t s = t[i].shape[0];
            t[i].shape[0] = t[i].shape[1];
            t[i].shape[1] = s;
        }
    return n;
}

static int rw_as_i64(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0)
            t[i].dtype = LNK_DT_I64;
    return n;
}

static int rw_nan5(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0)
            ((double *)t[i].data)[5] = NAN;
    return n;
}

static void test_weights_roundtrip(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    const char *path = tu_path("w.safetensors");
    if (lnk_weights_save(path, x->m, x->theta) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    double *back = calloc(x->n, sizeof *back);
    if (lnk_weights_load(path, x->m, back) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_memory_equal(back, x->theta, x->n * sizeof *back);

    /* written in MODEL.md §6 order with the layout's shapes */
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(path, &f), LNK_OK);
    assert_int_equal(f->n, lay->n_tensors);
    for (int k = 0; k < lay->n_tensors; k++) {
        assert_string_equal(f->t[k].name, lay->t[k].name);
        assert_int_equal(f->t[k].dtype, LNK_DT_F64);
        assert_int_equal(f->t[k].ndim, lay->t[k].ndim);
        for (int j = 0; j < lay->t[k].ndim; j++)
            assert_int_equal(f->t[k].shape[j], lay->t[k].shape[j]);
    }
    lnk_st_free(f);

    /* the configuration beside them: n_params and param_order, the layout's
     * names in order; read back, it makes the same layout */
    const char *cpath = tu_path("w.json");
    assert_int_equal(lnk_model_config_save(cpath, x->m), LNK_OK);
    json_t *j = tu_load_json(cpath), *order = json_object_get(j, "param_order");
    assert_int_equal(json_integer_value(json_object_get(j, "n_params")), lay->n_params);
    assert_int_equal(json_array_size(order), lay->n_tensors);
    for (int k = 0; k < lay->n_tensors; k++)
        assert_string_equal(json_string_value(json_array_get(order, k)), lay->t[k].name);
    json_decref(j);
    lnk_config c2;
    lnk_config_default(&c2);
    assert_int_equal(lnk_config_load_json(&c2, cpath), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c2), LNK_OK);
    lnk_model *m2 = lnk_model_alloc(&c2);
    assert_non_null(m2);
    assert_int_equal(lnk_model_n_params(m2), lay->n_params);
    lnk_model_free(m2);
    lnk_config_clear(&c2);

    /* physical order carries no meaning */
    const char *rev = tu_path("w_rev.safetensors");
    rewrite(path, rev, rw_reverse, NULL);
    memset(back, 0, x->n * sizeof *back);
    if (lnk_weights_load(rev, x->m, back) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_memory_equal(back, x->theta, x->n * sizeof *back);
    free(back);
}

static void test_weights_mismatch(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    const char *path = tu_path("wm.safetensors"), *bad = tu_path("wm_bad.safetensors");
    assert_int_equal(lnk_weights_save(path, x->m, x->theta), LNK_OK);
    double *back = malloc(x->n * sizeof *back);
    int wq = lnk_layout_find(lay, "dec.0.attn.wq");
    assert_true(wq >= 0);
    assert_int_equal(lay->t[wq].ndim, 2);

    int k = 1;
    rewrite(path, bad, rw_drop, &k);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has(lay->t[1].name);
    assert_msg_has("missing");

    rewrite(path, bad, rw_extra, NULL);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'enc.0.attn.wq'");
    assert_msg_has("not a parameter of this configuration");

    /* a non-square matrix, so that its transpose differs */
    int ff = lnk_layout_find(lay, "dec.0.ffn.w1");
    assert_true(ff >= 0);
    char sh[2][64];
    snprintf(sh[0], 64, "[%d, %d]", lay->t[ff].shape[1], lay->t[ff].shape[0]);
    snprintf(sh[1], 64, "[%d, %d]", lay->t[ff].shape[0], lay->t[ff].shape[1]);
    rewrite(path, bad, rw_transpose, (void *)"dec.0.ffn.w1");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'dec.0.ffn.w1'");
    assert_msg_has(sh[0]);
    assert_msg_has(sh[1]);

    rewrite(path, bad, rw_as_i64, (void *)"dec.0.attn.wq");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("I64");

    /* theta is untouched by a failed load */
    tu_randn(back, x->n, 99);
    double *copy = malloc(x->n * sizeof *copy);
    memcpy(copy, back, x->n * sizeof *copy);
    rewrite(path, bad, rw_nan5, (void *)"dec.0.attn.wq");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_ENONFINITE);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("element 5");
    assert_memory_equal(back, copy, x->n * sizeof *copy);

    /* the saver refuses non-finite values and leaves no file */
    memcpy(copy, x->theta, x->n * sizeof *copy);
    copy[lay->t[wq].offset + 3] = INFINITY;
    const char *nf = tu_path("w_inf.safetensors");
    assert_int_equal(lnk_weights_save(nf, x->m, copy), LNK_ENONFINITE);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("element 3");
    assert_int_equal(access(nf, F_OK), -1);

    /* a weights file of another configuration */
    lnk_config c2 = tu_config("d=8", "h=2", "L=2", "V=12", NULL);
    lnk_model *m2 = lnk_model_alloc(&c2);
    assert_non_null(m2);
    double *t2 = calloc(lnk_model_n_params(m2), sizeof *t2);
    assert_int_equal(lnk_weights_save(bad, m2, t2), LNK_OK);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("dec.1.");
    free(t2);
    lnk_model_free(m2);
    lnk_config_clear(&c2);
    free(copy);
    free(back);
}

static void test_vectors(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    double *back = malloc(x->n * sizeof *back);
    int kind = -1;

    const char *flat = tu_path("v_flat.safetensors");
    assert_int_equal(lnk_vector_save(flat, x->m, x->theta, LNK_VEC_FLAT), LNK_OK);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(flat, &f), LNK_OK);
    assert_int_equal(f->n, 1);
    assert_string_equal(f->t[0].name, "v");
    assert_int_equal(f->t[0].ndim, 1);
    assert_int_equal(f->t[0].shape[0], (int64_t)x->n);
    lnk_st_free(f);
    assert_int_equal(lnk_vector_load(flat, x->m, back, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_FLAT);
    assert_memory_equal(back, x->theta, x->n * sizeof *back);

    const char *named = tu_path("v_named.safetensors");
    assert_int_equal(lnk_vector_save(named, x->m, x->theta, LNK_VEC_NAMED), LNK_OK);
    memset(back, 0, x->n * sizeof *back);
    assert_int_equal(lnk_vector_load(named, x->m, back, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_NAMED);
    assert_memory_equal(back, x->theta, x->n * sizeof *back);
    assert_int_equal(lnk_vector_load(named, x->m, back, NULL), LNK_OK);

    /* a vector of the wrong length */
    lnk_st_tensor t = {.name = "v", .dtype = LNK_DT_F64, .ndim = 1, .shape = {(int64_t)x->n - 1},
                       .numel = x->n - 1, .data = x->theta};
    const char *bad = tu_path("v_bad.safetensors");
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_vector_load(bad, x->m, back, &kind), LNK_EMISMATCH);
    assert_msg_has("'v'");
    char want[64];
    snprintf(want, sizeof want, "[%zu]", x->n);
    assert_msg_has(want);

    /* NaN in a flat vector: named by flat index and by tensor */
    double *v = malloc(x->n * sizeof *v);
    memcpy(v, x->theta, x->n * sizeof *v);
    size_t at = lay->t[2].offset + 1;
    v[at] = NAN;
    assert_int_equal(lnk_vector_save(bad, x->m, v, LNK_VEC_FLAT), LNK_ENONFINITE);
    assert_msg_has(lay->t[2].name);
    t.shape[0] = (int64_t)x->n;
    t.numel = x->n;
    t.data = v;
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_vector_load(bad, x->m, back, &kind), LNK_ENONFINITE);
    char el[64];
    snprintf(el, sizeof el, "element %zu", at);
    assert_msg_has(el);
    assert_msg_has(lay->t[2].name);
    assert_int_equal(lnk_vector_save(bad, x->m, x->theta, 7), LNK_EINVAL);
    free(v);
    free(back);
}

static void test_batches(void **state)
{
    fixture *x = *state;
    lnk_batch b, c;
    assert_int_equal(lnk_batch_synthetic(x->m, 3, 5, 11, &b), LNK_OK);
    const char *path = tu_path("b.safetensors");
    if (lnk_batch_save(path, &b) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    if (lnk_batch_load(path, x->m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, b.B);
    assert_int_equal(c.T, b.T);
    assert_int_equal(c.owns, 1);
    assert_null(c.src);
    assert_memory_equal(c.tgt, b.tgt, (size_t)b.B * (size_t)b.T * sizeof(int64_t));
    lnk_batch_free(&c);

    /* tgt stored as F64 */
    double *dt = malloc((size_t)b.B * (size_t)b.T * sizeof *dt);
    for (int i = 0; i < b.B * b.T; i++)
        dt[i] = (double)b.tgt[i];
    lnk_st_tensor t = {.name = "tgt", .dtype = LNK_DT_F64, .ndim = 2, .shape = {b.B, b.T},
                       .numel = (size_t)b.B * (size_t)b.T, .data = dt};
    const char *bad = tu_path("b_bad.safetensors");
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");
    assert_msg_has("F64");
    free(dt);

    /* no tgt at all (an lm needs it); a batch tensor the task does not use means
     * a data file of another task: refused, naming both tasks */
    t = (lnk_st_tensor){.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.T},
                        .numel = (size_t)b.B * (size_t)b.T, .data = b.tgt};
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");
    assert_msg_has("missing");
    lnk_st_tensor two[2] = {t, t};
    two[1].name = "tgt";
    assert_int_equal(lnk_st_write(bad, two, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'src'");
    assert_msg_has("seq2seq");
    assert_msg_has("task lm");
    assert_null(c.tgt);

    /* 1-D tgt */
    t.name = "tgt";
    t.ndim = 1;
    t.shape[0] = (int64_t)t.numel;
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");

    /* an id out of range: lnk_batch_check's message, prefixed by the file */
    b.tgt[1] = 12;
    assert_int_equal(lnk_batch_save(bad, &b), LNK_OK);
    assert_int_not_equal(lnk_batch_load(bad, x->m, &c), LNK_OK);
    assert_msg_has("b_bad.safetensors");
    assert_null(c.tgt);
    lnk_batch_free(&b);
}

static void test_batches_cls_seq2seq(void **state)
{
    (void)state;
    lnk_config cc = tu_config("task=cls", "d=8", "h=2", "L=1", "V=12", NULL);
    lnk_model *m = lnk_model_alloc(&cc);
    assert_non_null(m);
    lnk_batch b, c;
    assert_int_equal(lnk_batch_synthetic(m, 2, 4, 5, &b), LNK_OK);
    const char *path = tu_path("cls.safetensors");
    assert_int_equal(lnk_batch_save(path, &b), LNK_OK);
    if (lnk_batch_load(path, m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, 2);
    assert_int_equal(c.S, b.S);
    assert_memory_equal(c.src, b.src, (size_t)b.B * (size_t)b.S * sizeof(int64_t));
    assert_memory_equal(c.labels, b.labels, (size_t)b.B * (size_t)b.S * sizeof(int64_t));
    lnk_batch_free(&c);

    /* labels of another shape than src */
    lnk_st_tensor t[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.S}, .numel = (size_t)(b.B * b.S), .data = b.src},
        {.name = "labels", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B * b.S, 1}, .numel = (size_t)(b.B * b.S), .data = b.labels},
    };
    assert_int_equal(lnk_st_write(path, t, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("'labels'");
    /* labels missing */
    assert_int_equal(lnk_st_write(path, t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("'labels'");
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&cc);

    /* seq2seq: src and tgt must agree on B */
    lnk_config cs = tu_config("task=seq2seq", "d=8", "h=2", "L=1", "V=12", NULL);
    m = lnk_model_alloc(&cs);
    assert_non_null(m);
    int64_t src[6] = {2, 5, 6, 2, 7, 8}, tgt[4] = {2, 9, 2, 3};
    lnk_st_tensor s2[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {2, 3}, .numel = 6, .data = src},
        {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {1, 4}, .numel = 4, .data = tgt},
    };
    assert_int_equal(lnk_st_write(path, s2, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("rows");
    s2[1].shape[0] = 2;
    s2[1].shape[1] = 2;
    assert_int_equal(lnk_st_write(path, s2, 2, NULL), LNK_OK);
    if (lnk_batch_load(path, m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, 2);
    assert_int_equal(c.S, 3);
    assert_int_equal(c.T, 2);
    assert_memory_equal(c.src, src, sizeof src);
    assert_memory_equal(c.tgt, tgt, sizeof tgt);
    lnk_batch_free(&c);
    lnk_model_free(m);
    lnk_config_clear(&cs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_weights_roundtrip, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_weights_mismatch, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_vectors, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_batches, setup_model, teardown_model),
        cmocka_unit_test(test_batches_cls_seq2seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
