/* Configuration: docs/MODEL.md §8 defaults, JSON files, round trip, bad JSON
 * input, finalize checks.  Flags, task-dependent keys, derived keys of saved
 * files and size limits are test_config_keys; helpers in
 * tests/testutil_config.c. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "testutil_config.h"

/* ---------------------------------------------------------------- defaults */

static void test_defaults(void **state)
{
    (void)state;
    lnk_config c = tu_config(NULL);
    assert_int_equal(c.task, LNK_TASK_LM);
    assert_int_equal(c.norm_pos, LNK_POS_POST);
    assert_int_equal(c.norm, LNK_NORM_LAYERNORM);
    assert_int_equal(c.qk_norm, LNK_NORM_NONE);
    assert_int_equal(c.d, 16);
    assert_int_equal(c.h, 2);
    assert_int_equal(c.d_ff, 64);  /* 4 d */
    assert_int_equal(c.L, 2);
    assert_int_equal(c.L_enc, 2);
    assert_int_equal(c.L_dec, 2);
    assert_int_equal(c.V, 32);
    assert_int_equal(c.V_src, 32);
    assert_int_equal(c.V_tgt, 32);
    assert_int_equal(c.n_classes, 32);
    assert_int_equal(c.init, LNK_INIT_XAVIER);
    assert_true(c.seed == 0);
    assert_true(c.eps == 1e-5);
    assert_int_equal(c.tie_output, 0);
    assert_true(c.label_smoothing == 0.0);
    assert_true(c.file_n_params == -1);
    assert_null(c.file_param_order);

    /* before finalize the derived keys are unset */
    lnk_config u;
    lnk_config_default(&u);
    assert_int_equal(u.d_ff, -1);
    assert_int_equal(u.L_enc, -1);
    assert_int_equal(u.L_dec, -1);
    assert_int_equal(u.V_src, -1);
    assert_int_equal(u.V_tgt, -1);
    assert_int_equal(u.n_classes, -1);
    lnk_config_clear(&u);
}

static void test_derived(void **state)
{
    (void)state;
    lnk_config c = tu_config("d=8", "h=4", "L=3", "V=50", NULL);
    assert_int_equal(c.d_ff, 32);
    assert_int_equal(c.L_enc, 3);
    assert_int_equal(c.L_dec, 3);
    assert_int_equal(c.V_src, 50);
    assert_int_equal(c.V_tgt, 50);
    assert_int_equal(c.n_classes, 50);

    /* explicit values win; n_classes follows V_src */
    c = tu_config("task=cls", "d_ff=10", "L_enc=5", "V_src=40", "V=60", NULL);
    assert_int_equal(c.task, LNK_TASK_CLS);
    assert_int_equal(c.d_ff, 10);
    assert_int_equal(c.L_enc, 5);
    assert_int_equal(c.L_dec, 2);
    assert_int_equal(c.V_src, 40);
    assert_int_equal(c.V_tgt, 60);
    assert_int_equal(c.n_classes, 40);

    /* cls + tie_output: n_classes defaults to V_src, which is what it needs */
    c = tu_config("task=cls", "tie_output=true", "V=20", NULL);
    assert_int_equal(c.n_classes, 20);
    assert_int_equal(c.tie_output, 1);

    /* keys that do not apply are accepted and ignored */
    c = tu_config("task=lm", "V_src=7", "L_enc=9", "n_classes=3", NULL);
    assert_int_equal(c.task, LNK_TASK_LM);
    c = tu_config("task=lm", "V_src=0", "L_enc=abc", "n_classes=-1", NULL);
    assert_int_equal(c.task, LNK_TASK_LM);

    /* finalize twice is harmless */
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_int_equal(c.d_ff, 64);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(lnk_task_name(LNK_TASK_LM), "lm");
    assert_string_equal(lnk_task_name(LNK_TASK_SEQ2SEQ), "seq2seq");
    assert_string_equal(lnk_task_name(LNK_TASK_CLS), "cls");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_POST), "post");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_PRE), "pre");
    assert_string_equal(lnk_norm_type_name(LNK_NORM_LAYERNORM), "layernorm");
    assert_string_equal(lnk_norm_type_name(LNK_NORM_RMSNORM), "rmsnorm");
    assert_string_equal(lnk_norm_type_name(LNK_NORM_NONE), "none");
    assert_string_equal(lnk_init_name(LNK_INIT_XAVIER), "xavier");
    assert_string_equal(lnk_init_name(LNK_INIT_XAVIER_NORMAL), "xavier_normal");
    assert_string_equal(lnk_init_name(LNK_INIT_THEOREM), "theorem");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_PERI), "peri");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_OUT), "out");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_DEEPNORM), "deepnorm");
    assert_string_equal(lnk_norm_pos_name(LNK_POS_MIX), "mix");
    assert_string_equal(lnk_activation_name(LNK_ACT_SWIGLU), "swiglu");
    assert_string_equal(lnk_pos_enc_name(LNK_PE_ROPE), "rope");

    static const char *const spec[] = {"task", "norm_pos", "norm", "qk_norm", "d", "h", "d_ff",
                                       "L", "L_enc", "L_dec", "V", "V_src", "V_tgt", "n_classes",
                                       "init", "seed", "eps", "tie_output", "label_smoothing",
                                       "activation", "pos", "bias", "max_len", "mix_ratio",
                                       "deepnorm_alpha", "deepnorm_beta", "input_scale"};
    int n = 0;
    while (lnk_config_keys[n])
        n++;
    assert_int_equal(n, 27);
    lnk_config c;
    lnk_config_default(&c);
    for (int i = 0; i < n; i++) {
        assert_string_equal(lnk_config_keys[i], spec[i]);
        /* every listed key is settable */
        assert_int_equal(lnk_config_set(&c, lnk_config_keys[i], "default"), LNK_OK);
    }
}

/* ------------------------------------------------------------- round trip */

static lnk_config unusual_config(void)
{
    return tu_config("task=seq2seq", "norm_pos=pre", "norm=rmsnorm", "qk_norm=layernorm", "d=24",
                     "h=3", "d_ff=50", "L=3", "L_enc=1", "L_dec=4", "V=100", "V_src=90",
                     "V_tgt=80", "n_classes=7", "init=theorem", "seed=9007199254740993",
                     "eps=1.2345678901234567e-7", "tie_output=true", "label_smoothing=0.1", NULL);
}

static void test_round_trip(void **state)
{
    (void)state;
    lnk_config a = unusual_config();
    assert_true(a.seed == 9007199254740993ULL);  /* 2^53 + 1: not a double */
    /* n_params and param_order as the model has them (loading checks their counts) */
    lnk_model *m = lnk_model_alloc(&a);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc(sizeof(char *) * (size_t)lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    const int nn = lay->n_tensors;
    const size_t np = lay->n_params;
    const char *path = tu_path("rt.json");
    assert_int_equal(lnk_config_save_json(&a, path, np, names, nn), LNK_OK);

    lnk_config b;
    lnk_config_default(&b);
    assert_int_equal(lnk_config_load_json(&b, path), LNK_OK);
    assert_int_equal(lnk_config_finalize(&b), LNK_OK);
    tcf_assert_config_equal(&a, &b);
    assert_true(b.file_n_params == (long long)np);
    assert_int_equal(b.file_n_param_order, nn);
    for (int i = 0; i < nn; i++)
        assert_string_equal(b.file_param_order[i], names[i]);

    /* the file is what lnk_config_to_json gives, keys in MODEL.md §8 order, enums by name */
    char *file = tu_read_file(path, NULL);
    char *text = lnk_config_to_json(&a, np, names, nn);
    assert_non_null(file);
    assert_non_null(text);
    assert_string_equal(file, text);
    const char *order[] = {"\"task\": \"seq2seq\"", "\"norm_pos\": \"pre\"", "\"norm\": \"rmsnorm\"",
                           "\"qk_norm\": \"layernorm\"", "\"d\": 24", "\"h\": 3", "\"d_ff\": 50",
                           "\"L\": 3", "\"L_enc\": 1", "\"L_dec\": 4", "\"V\": 100",
                           "\"V_src\": 90", "\"V_tgt\": 80", "\"n_classes\": 7",
                           "\"init\": \"theorem\"", "\"seed\": 9007199254740993", "\"eps\":",
                           "\"tie_output\": true", "\"label_smoothing\": 0.1",
                           "\"n_params\": ", "\"param_order\": ["};
    const char *prev = file;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *p = strstr(file, order[i]);
        if (!p || p < prev)
            fail_msg("'%s' missing or out of order in:\n%s", order[i], file);
        prev = p;
    }
    assert_non_null(strstr(file, "\n  \"d\": 24,\n"));  /* indented by 2 */
    free(file);
    free(text);
    free(names);
    lnk_model_free(m);
    lnk_config_clear(&b);
    assert_null(b.file_param_order);

    /* without names there is no n_params / param_order */
    text = lnk_config_to_json(&a, 0, NULL, 0);
    assert_null(strstr(text, "n_params"));
    assert_null(strstr(text, "param_order"));
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, text, "text"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    tcf_assert_config_equal(&a, &c);
    assert_true(c.file_n_params == -1);
    free(text);

    /* the defaults round-trip too (eps = 1e-5 exactly) */
    lnk_config d = tu_config(NULL), e;
    text = lnk_config_to_json(&d, 0, NULL, 0);
    assert_non_null(strstr(text, "\"eps\": 1e-5,"));  /* shortest form, not 1.0000000000000001e-05 */
    lnk_config_default(&e);
    assert_int_equal(lnk_config_parse_json(&e, text, "text"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&e), LNK_OK);
    tcf_assert_config_equal(&d, &e);
    free(text);

    /* an unfinalized config writes its unset keys as null, read back as unset */
    lnk_config u, v;
    lnk_config_default(&u);
    assert_int_equal(lnk_config_set(&u, "d", "8"), LNK_OK);
    text = lnk_config_to_json(&u, 0, NULL, 0);
    assert_non_null(strstr(text, "\"d_ff\": null"));
    lnk_config_default(&v);
    assert_int_equal(lnk_config_parse_json(&v, text, "text"), LNK_OK);
    assert_int_equal(v.d_ff, -1);
    assert_int_equal(lnk_config_finalize(&v), LNK_OK);
    assert_int_equal(v.d_ff, 32);
    free(text);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_save_atomic(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tu_path("savedir"));
    char *out = NULL;
    assert_int_equal(tu_run(&out, "mkdir -p '%s'", dir), 0);
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/c.json", dir);
    tu_write_file(path, "old", 3);
    lnk_config c = tu_config("d=32", NULL);
    assert_int_equal(lnk_config_save_json(&c, path, 0, NULL, 0), LNK_OK);
    assert_int_equal(count_entries(dir), 1);  /* no temporary left behind */
    lnk_config b;
    lnk_config_default(&b);
    assert_int_equal(lnk_config_load_json(&b, path), LNK_OK);
    assert_int_equal(b.d, 32);

    /* unwritable place: an error naming the path, nothing created */
    char bad[700];
    snprintf(bad, sizeof bad, "%s/no/such/dir/c.json", dir);
    assert_int_not_equal(lnk_config_save_json(&c, bad, 0, NULL, 0), LNK_OK);
    tcf_assert_msg_has(lnk_errmsg(), bad, NULL);
    assert_int_equal(count_entries(dir), 1);
}

/* ----------------------------------------------------------- bad JSON input */

typedef struct {
    const char *json;
    int status;
    const char *has[5];  /* substrings the message must contain */
} bad_case;

static void test_bad_json(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"{\"foo\": 1}", LNK_EINVAL, {"bad.json", "unknown key 'foo'", "norm_pos"}},
        {"{\"norm-pos\": \"pre\"}", LNK_EINVAL, {"'norm-pos'", "did you mean 'norm_pos'"}},
        {"{\"d\": \"abc\"}", LNK_EINVAL, {"bad.json", "key 'd'", "string", "\"abc\"", "an integer >= 2"}},
        {"{\"d\": 16.5}", LNK_EINVAL, {"key 'd'", "real number", "16.5", "integer"}},
        {"{\"d\": 16.0}", LNK_EINVAL, {"key 'd'", "real number", "integer"}},
        {"{\"d\": true}", LNK_EINVAL, {"key 'd'", "boolean", "integer"}},
        {"{\"task\": 3}", LNK_EINVAL, {"key 'task'", "integer 3", "lm", "seq2seq", "cls"}},
        {"{\"task\": \"gpt\"}", LNK_EINVAL, {"key 'task'", "\"gpt\"", "lm, seq2seq, cls"}},
        {"{\"norm\": \"LayerNorm\"}", LNK_EINVAL, {"key 'norm'", "layernorm, rmsnorm, none"}},
        {"{\"init\": [1]}", LNK_EINVAL, {"key 'init'", "array", "xavier_normal"}},
        {"{\"tie_output\": 1}", LNK_EINVAL, {"key 'tie_output'", "integer 1", "true or false"}},
        {"{\"tie_output\": \"true\"}", LNK_EINVAL, {"key 'tie_output'", "string"}},
        {"{\"d\": 0}", LNK_EINVAL, {"key 'd'", ">= 2", "0"}},
        {"{\"d\": -4}", LNK_EINVAL, {"key 'd'", "-4"}},
        {"{\"d\": 3000000000}", LNK_EINVAL, {"key 'd'", "3000000000", "2147483647"}},
        {"{\"h\": 0}", LNK_EINVAL, {"key 'h'", ">= 1"}},
        {"{\"d_ff\": 0}", LNK_EINVAL, {"key 'd_ff'", ">= 1"}},
        {"{\"L\": 0}", LNK_EINVAL, {"key 'L'", ">= 1"}},
        {"{\"L_dec\": -1}", LNK_EINVAL, {"key 'L_dec'", ">= 1"}},
        {"{\"V\": 3}", LNK_EINVAL, {"key 'V'", ">= 4"}},
        {"{\"V_tgt\": 2}", LNK_EINVAL, {"key 'V_tgt'", ">= 4"}},
        {"{\"task\": \"cls\", \"n_classes\": 0}", LNK_EINVAL, {"key 'n_classes'", ">= 1"}},
        {"{\"seed\": -1}", LNK_EINVAL, {"key 'seed'", ">= 0"}},
        {"{\"seed\": 1.5}", LNK_EINVAL, {"key 'seed'", "real"}},
        {"{\"eps\": -1}", LNK_EINVAL, {"key 'eps'", ">= 0", "-1"}},
        {"{\"eps\": \"1e-5\"}", LNK_EINVAL, {"key 'eps'", "string"}},
        {"{\"label_smoothing\": 1}", LNK_EINVAL, {"key 'label_smoothing'", "< 1"}},
        {"{\"label_smoothing\": -0.1}", LNK_EINVAL, {"key 'label_smoothing'", ">= 0"}},
        {"{\"n_params\": \"x\"}", LNK_EINVAL, {"key 'n_params'", "string"}},
        {"{\"n_params\": -2}", LNK_EINVAL, {"key 'n_params'"}},
        {"{\"param_order\": \"a\"}", LNK_EINVAL, {"key 'param_order'", "array of strings"}},
        {"{\"param_order\": [\"a\", 3]}", LNK_EINVAL, {"key 'param_order'", "element 1", "integer 3"}},
        {"{\"d\": 16, \"d\": 32}", LNK_EFORMAT, {"bad.json", "duplicate key 'd'"}},
        {"{\"label_smoothing\": 0, \"h\": 2, \"label_smoothing\": 0.1}", LNK_EFORMAT,
         {"duplicate key 'label_smoothing'"}},
        {"[1, 2]", LNK_EFORMAT, {"bad.json", "object", "array"}},
        {"{\"d\": 16,}", LNK_EFORMAT, {"bad.json:1:"}},
        {"{\"d\": 16\n \"h\": 2}", LNK_EFORMAT, {"bad.json:2:"}},
        {"", LNK_EFORMAT, {"bad.json"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lnk_config c;
        lnk_config_default(&c);
        lnk_error_clear();
        int st = lnk_config_parse_json(&c, cases[i].json, "bad.json");
        if (st == LNK_OK) /* task-dependent keys are judged when the task is known */
            st = lnk_config_finalize(&c);
        if (st != cases[i].status)
            fail_msg("%s: status %d, expected %d (%s)", cases[i].json, st, cases[i].status,
                     lnk_errmsg());
        for (int k = 0; k < 5 && cases[i].has[k]; k++)
            if (!strstr(lnk_errmsg(), cases[i].has[k]))
                fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].json, lnk_errmsg(),
                         cases[i].has[k]);
        lnk_config_clear(&c);
    }
}

static void test_failed_parse_leaves_config(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    long long np;
    int nt;
    tcf_counts_of(NULL, &np, &nt);
    char *order = tcf_order_json(nt), js[4096];
    snprintf(js, sizeof js, "{\"param_order\": %s, \"n_params\": %lld}", order, np);
    assert_int_equal(lnk_config_parse_json(&c, js, "a"), LNK_OK);
    /* valid keys before the bad one must not be applied */
    assert_int_equal(lnk_config_parse_json(&c, "{\"h\": 4, \"param_order\": [\"y\", \"z\"], \"d\": 0}", "b"),
                     LNK_EINVAL);
    assert_int_equal(c.h, 2);
    assert_int_equal(c.file_n_param_order, nt);
    assert_string_equal(c.file_param_order[0], "t0");
    assert_true(c.file_n_params == np);
    lnk_config_clear(&c);
    free(order);
}

static void test_missing_file(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    const char *path = tu_path("does-not-exist.json");
    assert_int_equal(lnk_config_load_json(&c, path), LNK_EIO);
    tcf_assert_msg_has(lnk_errmsg(), path, NULL);

    /* a file with a syntax error names the file, line and column */
    const char *p2 = tu_path("syntax.json");
    const char *js = "{\n  \"d\": 16\n  \"h\": 2\n}\n";
    tu_write_file(p2, js, strlen(js));
    assert_int_equal(lnk_config_load_json(&c, p2), LNK_EFORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s:3:", p2);
    tcf_assert_msg_has(lnk_errmsg(), want, NULL);

    /* errors in a file name the file and the key */
    js = "{\"h\": \"two\"}";
    tu_write_file(p2, js, strlen(js));
    assert_int_equal(lnk_config_load_json(&c, p2), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), p2, "key 'h'", NULL);
}

/* ------------------------------------------------------------ finalize checks */

static void test_cross_checks(void **state)
{
    (void)state;
    lnk_config c;

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"d\": 15, \"h\": 1}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'d'", "15", "even", NULL);

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"d\": 16, \"h\": 3}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'d'", "'h'", "d 16", "h 3", NULL);

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"task\": \"cls\", \"tie_output\": true, \"n_classes\": 10}", "x"),
                     LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "n_classes", "tie_output", "V_src", "10", "32", NULL);

    /* the same n_classes is fine without tie_output, or outside cls */
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"task\": \"cls\", \"n_classes\": 10}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_int_equal(c.n_classes, 10);
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"tie_output\": true, \"n_classes\": 10}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);

    /* fields set by hand are range-checked too */
    lnk_config_default(&c);
    c.d = 0;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'d'", NULL);
    lnk_config_default(&c);
    c.label_smoothing = 1.0;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'label_smoothing'", NULL);
    lnk_config_default(&c);
    c.eps = NAN;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'eps'", NULL);
    lnk_config_default(&c);
    c.task = (lnk_task)7;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "'task'", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_derived),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_save_atomic),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_failed_parse_leaves_config),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_cross_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
