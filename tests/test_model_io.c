/* The result files of the model's own queries (include/lnkit/model_io.h):
 * eval's CSV and JSON on a layout made here, with the text written out by
 * hand; the tensor listing of lm, seq2seq and cls models checked against the
 * layout (names, shapes, offsets) and against groups counted here by name
 * prefix; non-finite values and bad patterns refused. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "lnkit/model_io.h"

/* What fn wrote to a file, as a string (malloc'd); *st its status. */
static char *written(int (*fn)(FILE *, const void *), const void *ctx, int *st)
{
    const char *path = tu_path("written.txt");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    *st = fn(f, ctx);
    assert_int_equal(fclose(f), 0);
    size_t n;
    return tu_read_file(path, &n);
}

typedef struct {
    const lnk_layout *lay;
    const lnk_eval_result *r;
    int json;
} eval_call;

static int eval_fn(FILE *f, const void *ctx)
{
    const eval_call *c = ctx;
    return c->json ? lnk_eval_fwrite_json(f, c->lay, c->r) : lnk_eval_fwrite(f, c->lay, c->r);
}

static void test_eval(void **state)
{
    (void)state;
    lnk_tensor_info t[2] = {{.name = "w.a"}, {.name = "w.b"}};
    lnk_layout lay = {.n_params = 6, .n_tensors = 2, .t = t};
    double norm[3] = {0.25, 2, 3};
    lnk_eval_result r = {1.5, 7, norm};
    eval_call c = {&lay, &r, 0};
    int st;
    char *txt = written(eval_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    assert_string_equal(txt, "quantity,tensor,value\nloss,,1.5\nn_scored,,7\n"
                             "grad_norm,w.a,0.25\ngrad_norm,w.b,2\ngrad_norm_total,,3\n");
    free(txt);
    c.json = 1;
    txt = written(eval_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    assert_string_equal(txt, "{\n  \"loss\": 1.5,\n  \"n_scored\": 7,\n  \"grad_norms\": {\n"
                             "    \"w.a\": 0.25,\n    \"w.b\": 2.0\n  },\n"
                             "  \"grad_norm_total\": 3.0\n}\n");
    free(txt);
    /* the whole file, atomically: the same bytes as the stream writer */
    const char *path = tu_path("eval.csv");
    assert_int_equal(lnk_eval_write(path, &lay, &r), LNK_OK);
    size_t n;
    txt = tu_read_file(path, &n);
    assert_true(strncmp(txt, "quantity,tensor,value\nloss,,1.5\n", 32) == 0);
    free(txt);
    /* a non-finite value is refused, the file left as it was */
    norm[1] = NAN;
    assert_int_equal(lnk_eval_write(path, &lay, &r), LNK_ENONFINITE);
    txt = tu_read_file(path, &n);
    assert_true(strstr(txt, "grad_norm,w.b,2\n") != NULL);
    free(txt);
    txt = written(eval_fn, &c, &st);
    assert_int_equal(st, LNK_ENONFINITE);
    assert_string_equal(txt, "");
    free(txt);
    norm[1] = 2;
    r.loss = INFINITY;
    txt = written(eval_fn, &c, &st);
    assert_int_equal(st, LNK_ENONFINITE);
    free(txt);
}

typedef struct {
    const lnk_listing *l;
    lnk_listing_format fmt;
} listing_call;

static int listing_fn(FILE *f, const void *ctx)
{
    const listing_call *c = ctx;
    return lnk_listing_fwrite(f, c->l, c->fmt);
}

/* Parameters of the tensors whose names start with prefix (and contain
 * infix, if not NULL). */
static size_t count_named(const lnk_layout *lay, const char *prefix, const char *infix,
                          int *n_tensors)
{
    size_t n = 0;
    *n_tensors = 0;
    for (int i = 0; i < lay->n_tensors; i++)
        if (!strncmp(lay->t[i].name, prefix, strlen(prefix)) &&
            (!infix || strstr(lay->t[i].name, infix)))
            n += lay->t[i].size, ++*n_tensors;
    return n;
}

/* The group named pattern in the JSON listing, or NULL. */
static json_t *group(json_t *j, const char *pattern)
{
    json_t *g;
    size_t i;
    json_array_foreach(json_object_get(j, "groups"), i, g)
        if (!strcmp(json_string_value(json_object_get(g, "pattern")), pattern))
            return g;
    return NULL;
}

static void check_group(json_t *j, const lnk_layout *lay, const char *pattern,
                        const char *prefix, const char *infix)
{
    int nt;
    size_t n = count_named(lay, prefix, infix, &nt);
    json_t *g = group(j, pattern);
    if (!nt) {
        if (g)
            fail_msg("group %s listed but selects nothing", pattern);
        return;
    }
    if (!g)
        fail_msg("group %s missing", pattern);
    assert_int_equal(json_integer_value(json_object_get(g, "count")), n);
    assert_int_equal(json_integer_value(json_object_get(g, "tensors")), nt);
}

static void check_listing(lnk_config cfg)
{
    lnk_model *m = lnk_model_alloc(&cfg);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    lnk_listing l;
    assert_int_equal(lnk_listing_make(m, NULL, &l), LNK_OK);
    /* JSON: every tensor with its index, shape and offset; the groups */
    listing_call c = {&l, LNK_LISTING_JSON};
    int st;
    char *txt = written(listing_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    json_error_t e;
    json_t *j = json_loads(txt, 0, &e);
    free(txt);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "task")), lnk_task_name(cfg.task));
    assert_int_equal(json_integer_value(json_object_get(j, "n_params")), lay->n_params);
    json_t *ts = json_object_get(j, "tensors");
    assert_int_equal(json_array_size(ts), lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++) {
        json_t *x = json_array_get(ts, i), *sh = json_object_get(x, "shape");
        assert_int_equal(json_integer_value(json_object_get(x, "index")), i);
        assert_string_equal(json_string_value(json_object_get(x, "name")), lay->t[i].name);
        assert_int_equal(json_integer_value(json_object_get(x, "offset")), lay->t[i].offset);
        assert_int_equal(json_array_size(sh), lay->t[i].ndim);
        size_t prod = 1;
        for (int d = 0; d < lay->t[i].ndim; d++)
            prod *= (size_t)json_integer_value(json_array_get(sh, d));
        assert_int_equal(prod, lay->t[i].size);
    }
    check_group(j, lay, "*", "", NULL);
    check_group(j, lay, "*.xattn.*", "dec.", ".xattn.");
    check_group(j, lay, "*.ffn.w2", "", ".ffn.w2");
    for (int b = 0; b < 3; b++) {
        char pat[32], pre[32];
        snprintf(pat, sizeof pat, "enc.%d.*", b), snprintf(pre, sizeof pre, "enc.%d.", b);
        check_group(j, lay, pat, pre, NULL);
        snprintf(pat, sizeof pat, "dec.%d.*", b), snprintf(pre, sizeof pre, "dec.%d.", b);
        check_group(j, lay, pat, pre, NULL);
    }
    json_decref(j);
    /* CSV: a row per tensor, then one per group */
    c.fmt = LNK_LISTING_CSV;
    txt = written(listing_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    assert_int_equal(tu_n_lines(txt), 1 + lay->n_tensors + l.n_groups);
    char row[160], shape[32];
    const lnk_tensor_info *t0 = &lay->t[0];
    if (t0->ndim == 2)
        snprintf(shape, sizeof shape, "%dx%d", t0->shape[0], t0->shape[1]);
    else
        snprintf(shape, sizeof shape, "%d", t0->shape[0]);
    snprintf(row, sizeof row, "\ntensor,%s,%s,%zu,0\n", t0->name, shape, t0->size);
    assert_true(strncmp(txt, "kind,name,shape,count,offset", 28) == 0);
    if (!strstr(txt, row))
        fail_msg("CSV lacks '%s'", row + 1);
    snprintf(row, sizeof row, "\ngroup,*,,%zu,\n", lay->n_params);
    if (!strstr(txt, row))
        fail_msg("CSV lacks '%s'", row + 1);
    free(txt);
    /* the table's title */
    c.fmt = LNK_LISTING_TABLE;
    txt = written(listing_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    snprintf(row, sizeof row, "%s model (%s, %s): %zu parameters in %d tensors\n",
             lnk_task_name(cfg.task), lnk_norm_pos_name(cfg.norm_pos),
             lnk_norm_type_name(cfg.norm), lay->n_params, lay->n_tensors);
    assert_true(strncmp(txt, row, strlen(row)) == 0);
    free(txt);
    lnk_listing_free(&l);
    lnk_model_free(m);
    lnk_config_clear(&cfg);
}

static void test_listing(void **state)
{
    (void)state;
    check_listing(tu_config("d=8", "h=2", "L=2", "V=12", NULL));
    check_listing(tu_config("task=seq2seq", "d=8", "h=2", "L=2", "V=12", NULL));
    check_listing(tu_config("task=cls", "d=8", "h=2", "L=3", "V=12", NULL));
}

/* --block: only the block's tensors and its size, no groups; a pattern that
 * matches nothing is refused with the message naming it. */
static void test_listing_block(void **state)
{
    (void)state;
    lnk_config cfg = tu_config("d=8", "h=2", "L=2", "V=12", NULL);
    lnk_model *m = lnk_model_alloc(&cfg);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    lnk_listing l;
    assert_int_equal(lnk_listing_make(m, "dec.1.*", &l), LNK_OK);
    assert_int_equal(l.n_groups, 0);
    listing_call c = {&l, LNK_LISTING_CSV};
    int st, nt;
    size_t n = count_named(lay, "dec.1.", NULL, &nt);
    char *txt = written(listing_fn, &c, &st);
    assert_int_equal(st, LNK_OK);
    assert_int_equal(tu_n_lines(txt), 1 + nt);
    free(txt);
    c.fmt = LNK_LISTING_TABLE;
    txt = written(listing_fn, &c, &st);
    char want[128];
    snprintf(want, sizeof want, "; block 'dec.1.*': %zu parameters in %d tensors\n", n, nt);
    if (!strstr(txt, want))
        fail_msg("table lacks '%s'", want);
    free(txt);
    lnk_listing_free(&l);
    assert_int_equal(lnk_listing_make(m, "nothing.*", &l), LNK_EINVAL);
    if (!strstr(lnk_errmsg(), "nothing.*"))
        fail_msg("message '%s' lacks the pattern", lnk_errmsg());
    lnk_model_free(m);
    lnk_config_clear(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_listing_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
