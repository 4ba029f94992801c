/* Configuration: docs/MODEL.md §8 defaults, JSON files, flags, checks, round trip,
 * task-dependent keys, derived keys of saved files, size limits. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Fail unless msg contains every one of the NULL-terminated substrings. */
static void assert_msg_has(const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        if (!strstr(msg, s))
            fail_msg("message \"%s\" lacks \"%s\"", msg, s);
    va_end(ap);
}

static void assert_config_equal(const lnk_config *a, const lnk_config *b)
{
    assert_int_equal(a->task, b->task);
    assert_int_equal(a->norm_pos, b->norm_pos);
    assert_int_equal(a->norm, b->norm);
    assert_int_equal(a->qk_norm, b->qk_norm);
    assert_int_equal(a->d, b->d);
    assert_int_equal(a->h, b->h);
    assert_int_equal(a->d_ff, b->d_ff);
    assert_int_equal(a->L, b->L);
    assert_int_equal(a->L_enc, b->L_enc);
    assert_int_equal(a->L_dec, b->L_dec);
    assert_int_equal(a->V, b->V);
    assert_int_equal(a->V_src, b->V_src);
    assert_int_equal(a->V_tgt, b->V_tgt);
    assert_int_equal(a->n_classes, b->n_classes);
    assert_int_equal(a->init, b->init);
    assert_true(a->seed == b->seed);
    assert_true(a->eps == b->eps);  /* bit-exact after the text round trip */
    assert_int_equal(a->tie_output, b->tie_output);
    assert_true(a->label_smoothing == b->label_smoothing);
}

/* "[\"t0\", \"t1\", ...]": a param_order of n names (malloc'd). */
static char *order_json(int n)
{
    char *s = malloc(16 + (size_t)n * 16), *p = s;
    p += sprintf(p, "[");
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s\"t%d\"", i ? ", " : "", i);
    sprintf(p, "]");
    return s;
}

/* The parameter and tensor counts of the finalized config made from kv strings. */
static void counts_of(const char *kv, long long *np, int *nt)
{
    lnk_config c = tu_config(kv, NULL);
    double p, t;
    lnk_config_size(&c, &p, &t);
    *np = (long long)p;
    *nt = (int)t;
}

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
    assert_config_equal(&a, &b);
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
    assert_config_equal(&a, &c);
    assert_true(c.file_n_params == -1);
    free(text);

    /* the defaults round-trip too (eps = 1e-5 exactly) */
    lnk_config d = tu_config(NULL), e;
    text = lnk_config_to_json(&d, 0, NULL, 0);
    assert_non_null(strstr(text, "\"eps\": 1e-5,"));  /* shortest form, not 1.0000000000000001e-05 */
    lnk_config_default(&e);
    assert_int_equal(lnk_config_parse_json(&e, text, "text"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&e), LNK_OK);
    assert_config_equal(&d, &e);
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
    assert_msg_has(lnk_errmsg(), bad, NULL);
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
    counts_of(NULL, &np, &nt);
    char *order = order_json(nt), js[4096];
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
    assert_msg_has(lnk_errmsg(), path, NULL);

    /* a file with a syntax error names the file, line and column */
    const char *p2 = tu_path("syntax.json");
    const char *js = "{\n  \"d\": 16\n  \"h\": 2\n}\n";
    tu_write_file(p2, js, strlen(js));
    assert_int_equal(lnk_config_load_json(&c, p2), LNK_EFORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s:3:", p2);
    assert_msg_has(lnk_errmsg(), want, NULL);

    /* errors in a file name the file and the key */
    js = "{\"h\": \"two\"}";
    tu_write_file(p2, js, strlen(js));
    assert_int_equal(lnk_config_load_json(&c, p2), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), p2, "key 'h'", NULL);
}

/* ------------------------------------------------------------ finalize checks */

static void test_cross_checks(void **state)
{
    (void)state;
    lnk_config c;

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"d\": 15, \"h\": 1}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'d'", "15", "even", NULL);

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"d\": 16, \"h\": 3}", "x"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'d'", "'h'", "d 16", "h 3", NULL);

    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"task\": \"cls\", \"tie_output\": true, \"n_classes\": 10}", "x"),
                     LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "n_classes", "tie_output", "V_src", "10", "32", NULL);

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
    assert_msg_has(lnk_errmsg(), "'d'", NULL);
    lnk_config_default(&c);
    c.label_smoothing = 1.0;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'label_smoothing'", NULL);
    lnk_config_default(&c);
    c.eps = NAN;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'eps'", NULL);
    lnk_config_default(&c);
    c.task = (lnk_task)7;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'task'", NULL);
}

/* ---------------------------------------------------- null, flags, spellings */

static void test_null_keeps_default(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_set(&c, "d", "32"), LNK_OK);
    assert_int_equal(lnk_config_set(&c, "task", "cls"), LNK_OK);
    assert_int_equal(lnk_config_parse_json(&c,
        "{\"d\": null, \"task\": null, \"d_ff\": null, \"eps\": null, \"tie_output\": null,"
        " \"seed\": null, \"n_params\": null, \"param_order\": null}", "n.json"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_int_equal(c.d, 16);
    assert_int_equal(c.task, LNK_TASK_LM);
    assert_int_equal(c.d_ff, 64);
    assert_true(c.eps == 1e-5);
    assert_true(c.file_n_params == -1);
    assert_null(c.file_param_order);

    /* "null" / "default" on the command line */
    assert_int_equal(lnk_config_set(&c, "h", "4"), LNK_OK);
    assert_int_equal(lnk_config_set(&c, "h", "default"), LNK_OK);
    assert_int_equal(c.h, 2);
    assert_int_equal(lnk_config_set(&c, "d_ff", "null"), LNK_OK);
    assert_int_equal(c.d_ff, -1);
}

static void test_flags_override_file(void **state)
{
    (void)state;
    const char *path = tu_path("base.json");
    const char *js = "{\"d\": 32, \"h\": 4, \"norm_pos\": \"pre\", \"eps\": 0}";
    tu_write_file(path, js, strlen(js));
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_load_json(&c, path), LNK_OK);
    assert_int_equal(lnk_config_set(&c, "d", "64"), LNK_OK);
    assert_int_equal(lnk_config_set(&c, "norm-pos", "post"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_int_equal(c.d, 64);
    assert_int_equal(c.h, 4);
    assert_int_equal(c.d_ff, 256);
    assert_int_equal(c.norm_pos, LNK_POS_POST);
    assert_true(c.eps == 0.0);  /* an integer is accepted for a real key */
}

static void test_set_values(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_set(&c, "norm-pos", "pre"), LNK_OK);
    assert_int_equal(c.norm_pos, LNK_POS_PRE);
    assert_int_equal(lnk_config_set(&c, "qk-norm", "rmsnorm"), LNK_OK);
    assert_int_equal(c.qk_norm, LNK_NORM_RMSNORM);
    assert_int_equal(lnk_config_set(&c, "label-smoothing", "0.25"), LNK_OK);
    assert_true(c.label_smoothing == 0.25);
    assert_int_equal(lnk_config_set(&c, "--L-enc", "3"), LNK_OK);
    assert_int_equal(c.L_enc, 3);
    assert_int_equal(lnk_config_set(&c, "tie_output", "1"), LNK_OK);
    assert_int_equal(c.tie_output, 1);
    assert_int_equal(lnk_config_set(&c, "tie-output", "false"), LNK_OK);
    assert_int_equal(c.tie_output, 0);
    assert_int_equal(lnk_config_set(&c, "tie-output", "true"), LNK_OK);
    assert_int_equal(c.tie_output, 1);
    assert_int_equal(lnk_config_set(&c, "seed", "9223372036854775807"), LNK_OK);
    assert_true(c.seed == 9223372036854775807ULL);
    assert_int_equal(lnk_config_set(&c, "eps", "1e-6"), LNK_OK);
    assert_true(c.eps == 1e-6);
    assert_int_equal(lnk_config_set(&c, "init", "xavier_normal"), LNK_OK);
    assert_int_equal(c.init, LNK_INIT_XAVIER_NORMAL);
    assert_int_equal(lnk_config_set(&c, "d", "+8"), LNK_OK);
    assert_int_equal(c.d, 8);
}

/* Fields set by hand between default and finalize (config.h): the same
 * finalized configuration as the text setters, and a bad value refused by
 * finalize naming its key. */
static void test_fields_by_hand(void **state)
{
    (void)state;
    lnk_config a, b;
    lnk_config_default(&a);
    assert_int_equal(lnk_config_set(&a, "task", "seq2seq"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "norm_pos", "pre"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "d", "24"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "h", "3"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "L", "2"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "V_tgt", "40"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "seed", "7"), LNK_OK);
    assert_int_equal(lnk_config_set(&a, "label_smoothing", "0.1"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&a), LNK_OK);
    lnk_config_default(&b);
    b.task = LNK_TASK_SEQ2SEQ;
    b.norm_pos = LNK_POS_PRE;
    b.d = 24;
    b.h = 3;
    b.L = 2;
    b.V_tgt = 40;
    b.seed = 7;
    b.label_smoothing = 0.1;
    assert_int_equal(lnk_config_finalize(&b), LNK_OK);
    char *ja = lnk_config_to_json(&a, 0, NULL, 0), *jb = lnk_config_to_json(&b, 0, NULL, 0);
    assert_non_null(ja);
    assert_non_null(jb);
    assert_string_equal(ja, jb);
    assert_int_equal(b.L_enc, 2);
    assert_int_equal(b.V_src, 32);
    free(ja);
    free(jb);
    lnk_config_default(&b);
    b.d = 1;
    assert_int_equal(lnk_config_finalize(&b), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'d'"));
    lnk_config_clear(&a);
    lnk_config_clear(&b);
}

static void test_set_errors(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value;
        const char *has[3];
    } cases[] = {
        {"d", "abc", {"--d: expected an integer >= 2, got 'abc'"}},
        {"d", "16x", {"--d", "'16x'"}},
        {"d", "", {"--d", "''"}},
        {"d", " 16", {"--d", "' 16'"}},
        {"d", "16.0", {"--d", "integer"}},
        {"d", "1", {"--d", ">= 2", "'1'"}},
        {"d", "99999999999999999999", {"--d", "out of range"}},
        {"d", "3000000000", {"--d", "2147483647"}},
        {"h", "-1", {"--h", ">= 1"}},
        {"seed", "-1", {"--seed", ">= 0"}},
        {"seed", "18446744073709551615", {"--seed", "out of range"}},
        {"eps", "nan", {"--eps", "finite"}},
        {"eps", "inf", {"--eps", "finite"}},
        {"eps", "-1e-5", {"--eps", ">= 0"}},
        {"eps", "1e-3x", {"--eps", "'1e-3x'"}},
        {"label-smoothing", "1", {"--label-smoothing", "< 1"}},
        {"tie-output", "yes", {"--tie-output", "true, false, 1 or 0", "'yes'"}},
        {"task", "LM", {"--task", "lm, seq2seq, cls", "'LM'"}},
        {"norm", "batchnorm", {"--norm", "layernorm, rmsnorm, none"}},
        {"foo", "1", {"--foo", "unknown", "norm_pos"}},
        {"norm_pos_x", "pre", {"--norm_pos_x", "unknown"}},
        {"n-params", "10", {"--n-params", "read-only"}},
        {"param_order", "a", {"--param-order", "read-only"}},
        {"norm_pos", "mid", {"--norm-pos: expected one of post, pre, peri, out, deepnorm, mix, got 'mid'"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lnk_config c;
        lnk_config_default(&c);
        lnk_config before = c;
        lnk_error_clear();
        int st = lnk_config_set(&c, cases[i].key, cases[i].value);
        if (st != LNK_EINVAL)
            fail_msg("--%s '%s': status %d (%s)", cases[i].key, cases[i].value, st, lnk_errmsg());
        for (int k = 0; k < 3 && cases[i].has[k]; k++)
            if (!strstr(lnk_errmsg(), cases[i].has[k]))
                fail_msg("--%s '%s': message \"%s\" lacks \"%s\"", cases[i].key, cases[i].value,
                         lnk_errmsg(), cases[i].has[k]);
        assert_memory_equal(&c, &before, sizeof c);  /* unchanged */
    }
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_set(&c, "d", NULL), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "--d", "missing", NULL);
}

static void test_file_keys_stored(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    long long np;
    int nt;
    counts_of("d=8", &np, &nt);
    char *order = order_json(nt), js[4096];
    snprintf(js, sizeof js, "{\"d\": 8, \"n_params\": %lld, \"param_order\": %s}", np, order);
    assert_int_equal(lnk_config_parse_json(&c, js, "f.json"), LNK_OK);
    assert_true(c.file_n_params == np);
    assert_int_equal(c.file_n_param_order, nt);
    assert_string_equal(c.file_param_order[0], "t0");
    assert_string_equal(c.file_param_order[1], "t1");
    /* a second file replaces them (the old list is freed: see check-asan) */
    order[2] = 'u';
    snprintf(js, sizeof js, "{\"param_order\": %s}", order);
    assert_int_equal(lnk_config_parse_json(&c, js, "g.json"), LNK_OK);
    assert_int_equal(c.file_n_param_order, nt);
    assert_string_equal(c.file_param_order[0], "u0");
    assert_true(c.file_n_params == np);
    free(order);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_int_equal(c.d, 8);
    lnk_config_clear(&c);
    assert_null(c.file_param_order);
    assert_int_equal(c.file_n_param_order, 0);
    assert_true(c.file_n_params == -1);
    lnk_config_clear(&c);  /* twice is safe */
}

/* A config saved with the model's n_params / param_order reloads into the
 * same model; an edited n_params is caught when the file is read. */
static void test_saved_keys_with_model(void **state)
{
    (void)state;
    lnk_config a = tu_config("norm_pos=pre", "d=8", "h=2", "L=1", NULL);
    lnk_model *m = lnk_model_alloc(&a);
    if (!m)
        fail_msg("%s", lnk_errmsg());
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc((size_t)lay->n_tensors * sizeof *names);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    const char *path = tu_path("model.json");
    assert_int_equal(lnk_config_save_json(&a, path, lay->n_params, names, lay->n_tensors), LNK_OK);

    lnk_config b;
    lnk_config_default(&b);
    assert_int_equal(lnk_config_load_json(&b, path), LNK_OK);
    assert_int_equal(lnk_config_finalize(&b), LNK_OK);
    assert_true(b.file_n_params == (long long)lay->n_params);
    assert_int_equal(b.file_n_param_order, lay->n_tensors);
    lnk_model *m2 = lnk_model_alloc(&b);
    if (!m2)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(lnk_model_n_params(m2), lay->n_params);
    lnk_model_free(m2);

    /* the same file with another n_params */
    char *text = tu_read_file(path, NULL);
    char key[64];
    snprintf(key, sizeof key, "\"n_params\": %zu", lay->n_params);
    char *at = strstr(text, key);
    assert_non_null(at);
    at[strlen(key) - 1] = at[strlen(key) - 1] == '9' ? '8' : '9';  /* change the last digit */
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, text, "edited.json"), LNK_EMISMATCH);
    assert_msg_has(lnk_errmsg(), "edited.json", "key 'n_params'", "restore", NULL);
    free(text);

    lnk_config_clear(&c);
    lnk_config_clear(&b);
    free(names);
    lnk_model_free(m);
}


/* ------------------------------------------- task-dependent keys (issue 12) */

static const char *const task_names_t[] = {"lm", "seq2seq", "cls"};

/* A model can be built from c (finalized) and has the closed-form size. */
static void assert_model_builds(const lnk_config *c, const char *what)
{
    lnk_model *m = lnk_model_alloc(c);
    if (!m)
        fail_msg("%s: %s", what, lnk_errmsg());
    double np, nt;
    lnk_config_size(c, &np, &nt);
    assert_true(np == (double)lnk_model_n_params(m));
    assert_true(nt == (double)lnk_model_layout(m)->n_tensors);
    lnk_model_free(m);
}

/* Every task x every key that does not apply to it x JSON values of every
 * kind: accepted and ignored; as flags too; the model builds. */
static void test_inapplicable_keys(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        int applies[3]; /* lm, seq2seq, cls */
    } keys[] = {{"L_enc", {0, 1, 1}},
                {"L_dec", {1, 1, 0}},
                {"V_src", {0, 1, 1}},
                {"V_tgt", {1, 1, 0}},
                {"n_classes", {0, 0, 1}}};
    static const char *const values[] = {"0", "-1", "3", "1e300", "-2.5", "99999999999999999999",
                                         "\"abc\"", "\"\"", "null", "true", "false", "[1, 2]",
                                         "{\"a\": 1}"};
    int n_cases = 0;
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (keys[k].applies[t])
                continue;
            for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                /* the key before and after the task in the object */
                for (int order = 0; order < 2; order++) {
                    char js[256], what[300];
                    if (order == 0)
                        snprintf(js, sizeof js, "{\"task\": \"%s\", \"%s\": %s}", task_names_t[t],
                                 keys[k].key, values[v]);
                    else
                        snprintf(js, sizeof js, "{\"%s\": %s, \"task\": \"%s\"}", keys[k].key,
                                 values[v], task_names_t[t]);
                    snprintf(what, sizeof what, "%s", js);
                    lnk_config c;
                    lnk_config_default(&c);
                    if (lnk_config_parse_json(&c, js, "x.json") != LNK_OK ||
                        lnk_config_finalize(&c) != LNK_OK)
                        fail_msg("%s: %s", what, lnk_errmsg());
                    assert_int_equal(c.task, t);
                    assert_model_builds(&c, what);
                    n_cases++;
                }
            }
            /* as flags, the task given before or after the key */
            static const char *const flag_values[] = {"0", "-1", "abc", "", "1.5"};
            for (size_t v = 0; v < sizeof flag_values / sizeof flag_values[0]; v++) {
                lnk_config c;
                lnk_config_default(&c);
                assert_int_equal(lnk_config_set(&c, keys[k].key, flag_values[v]), LNK_OK);
                assert_int_equal(lnk_config_set(&c, "task", task_names_t[t]), LNK_OK);
                if (lnk_config_finalize(&c) != LNK_OK)
                    fail_msg("--task %s --%s '%s': %s", task_names_t[t], keys[k].key,
                             flag_values[v], lnk_errmsg());
                assert_model_builds(&c, keys[k].key);
                n_cases++;
            }
        }
    assert_int_equal(n_cases, 6 * (13 * 2 + 5));

    /* the same keys where they apply: checked as before, naming the key */
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (!keys[k].applies[t])
                continue;
            static const char *const bad[] = {"0", "\"abc\"", "1.5", "true"};
            for (size_t v = 0; v < sizeof bad / sizeof bad[0]; v++) {
                char js[256], key[40];
                snprintf(js, sizeof js, "{\"%s\": %s, \"task\": \"%s\"}", keys[k].key, bad[v],
                         task_names_t[t]);
                snprintf(key, sizeof key, "key '%s'", keys[k].key);
                lnk_config c;
                lnk_config_default(&c);
                assert_int_equal(lnk_config_parse_json(&c, js, "y.json"), LNK_OK);
                lnk_error_clear();
                if (lnk_config_finalize(&c) != LNK_EINVAL)
                    fail_msg("%s: accepted", js);
                assert_msg_has(lnk_errmsg(), "y.json", key, "expected an integer", NULL);
            }
            /* a flag that changes the task makes a held value count */
            lnk_config c;
            lnk_config_default(&c);
            assert_int_equal(lnk_config_set(&c, "task", t == 0 ? "cls" : "lm"), LNK_OK);
            char js[128];
            snprintf(js, sizeof js, "{\"%s\": 0}", keys[k].key);
            if (keys[k].applies[t == 0 ? 2 : 0]) /* applies to both: nothing to show */
                continue;
            assert_int_equal(lnk_config_parse_json(&c, js, "z.json"), LNK_OK);
            assert_int_equal(lnk_config_finalize(&c), LNK_OK);
            assert_int_equal(lnk_config_set(&c, "task", task_names_t[t]), LNK_OK);
            assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
            assert_msg_has(lnk_errmsg(), "z.json", keys[k].key, NULL);
            /* a valid value given later replaces the held one */
            assert_int_equal(lnk_config_set(&c, keys[k].key, "5"), LNK_OK);
            assert_int_equal(lnk_config_finalize(&c), LNK_OK);
        }

    /* the case of the issue, and fields set by hand */
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c,
        "{\"task\":\"lm\",\"L_enc\":0,\"V_src\":0,\"n_classes\":0}", "i.json"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_model_builds(&c, "issue");
    lnk_config_default(&c);
    c.task = LNK_TASK_CLS;
    c.L_dec = 0;
    c.V_tgt = -7;
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    assert_model_builds(&c, "by hand");
    c.L_enc = 0;
    assert_int_equal(lnk_config_finalize(&c), LNK_EINVAL);
    assert_msg_has(lnk_errmsg(), "'L_enc'", NULL);
}

/* --------------------------------- saved configs: flags re-derive (issue 13) */

/* Save the finalized c as a model's config (with n_params, param_order). */
static void save_with_model(const lnk_config *c, const char *path)
{
    lnk_model *m = lnk_model_alloc(c);
    if (!m)
        fail_msg("%s", lnk_errmsg());
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc((size_t)lay->n_tensors * sizeof *names);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    assert_int_equal(lnk_config_save_json(c, path, lay->n_params, names, lay->n_tensors), LNK_OK);
    free(names);
    lnk_model_free(m);
}

/* load path, then the flags "key=value" (NULL-terminated), finalize. */
static int load_and_set(lnk_config *c, const char *path, ...)
{
    lnk_config_default(c);
    int st = lnk_config_load_json(c, path);
    va_list ap;
    va_start(ap, path);
    for (const char *kv = va_arg(ap, const char *); st == LNK_OK && kv;
         kv = va_arg(ap, const char *)) {
        char key[64];
        const char *eq = strchr(kv, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        st = lnk_config_set(c, key, eq + 1);
    }
    va_end(ap);
    return st == LNK_OK ? lnk_config_finalize(c) : st;
}

static void test_saved_config_flags(void **state)
{
    (void)state;
    const char *path = tu_path("saved6.json");
    lnk_config a = tu_config("norm_pos=pre", "L=6", "d=8", "h=2", "V=20", NULL);
    save_with_model(&a, path);
    lnk_config c;

    /* --L 12 builds 12 layers although the file says L_dec 6 */
    assert_int_equal(load_and_set(&c, path, "L=12", NULL), LNK_OK);
    assert_int_equal(c.L_dec, 12);
    assert_int_equal(c.L_enc, 12);
    lnk_config want = tu_config("norm_pos=pre", "L=12", "d=8", "h=2", "V=20", NULL);
    assert_config_equal(&c, &want);
    assert_model_builds(&c, "--L 12");
    lnk_config_clear(&c);
    /* --d and --V move d_ff, V_tgt (and V_src, n_classes) along */
    assert_int_equal(load_and_set(&c, path, "d=16", "V=40", NULL), LNK_OK);
    assert_int_equal(c.d_ff, 64);
    assert_int_equal(c.V_tgt, 40);
    assert_int_equal(c.n_classes, 40);
    assert_model_builds(&c, "--d 16 --V 40");
    lnk_config_clear(&c);
    /* --norm-pos post on a saved Pre-LN config: the layout follows the flag */
    assert_int_equal(load_and_set(&c, path, "norm-pos=post", NULL), LNK_OK);
    assert_true(c.file_n_params == -1);
    assert_null(c.file_param_order);
    want = tu_config("L=6", "d=8", "h=2", "V=20", NULL);
    assert_config_equal(&c, &want);
    assert_model_builds(&c, "--norm-pos post");
    lnk_config_clear(&c);
    /* no flag: the saved keys stay and are checked by the model */
    assert_int_equal(load_and_set(&c, path, NULL), LNK_OK);
    assert_config_equal(&c, &a);
    assert_true(c.file_n_params >= 0);
    assert_non_null(c.file_param_order);
    assert_model_builds(&c, "no flag");
    lnk_config_clear(&c);

    /* a per-side value that differs from its base is a choice: it stays */
    const char *p2 = tu_path("s2s.json");
    lnk_config b = tu_config("task=seq2seq", "L=6", "L_dec=3", "d=8", "h=2", "V_src=30", NULL);
    save_with_model(&b, p2);
    assert_int_equal(load_and_set(&c, p2, "L=12", "V=50", NULL), LNK_OK);
    assert_int_equal(c.L_enc, 12);
    assert_int_equal(c.L_dec, 3);
    assert_int_equal(c.V_src, 30);
    assert_int_equal(c.V_tgt, 50);
    assert_model_builds(&c, "seq2seq");
    lnk_config_clear(&c);
    /* a per-side key without its base in the file is a choice too */
    const char *p3 = tu_path("dec_only.json");
    tu_write_file(p3, "{\"L_dec\": 2, \"d_ff\": 64}", 24);
    assert_int_equal(load_and_set(&c, p3, "L=4", "d=32", NULL), LNK_OK);
    assert_int_equal(c.L_dec, 2);
    assert_int_equal(c.d_ff, 64);
    lnk_config_clear(&c);

    /* a file edited after saving: the message names the read-only key */
    char *text = tu_read_file(path, NULL);
    char *at = strstr(text, "\"d\": 8");
    assert_non_null(at);
    at[5] = '6'; /* d 6: another shape than n_params says */
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, text, "edited.json"), LNK_EMISMATCH);
    assert_msg_has(lnk_errmsg(), "edited.json", "'n_params'", "d 6", "remove 'n_params' and "
                   "'param_order'", NULL);
    lnk_config_clear(&c);
    free(text);
    lnk_config e;
    lnk_config_default(&e);
    assert_int_equal(lnk_config_parse_json(&e, "{\"param_order\": [\"tgt_emb\"]}", "po.json"),
                     LNK_EMISMATCH);
    assert_msg_has(lnk_errmsg(), "po.json", "'param_order'", "1 tensors", NULL);
    lnk_config_clear(&e);
}

/* ---------------------------------------------- size limits (issue 13, item 6) */

static void test_size_limits(void **state)
{
    (void)state;
    static const struct {
        const char *json, *key;
    } cases[] = {
        {"{\"L\": 1000000}", "key 'L': 1000000"},
        {"{\"task\": \"seq2seq\", \"L\": 1, \"L_enc\": 384384}", "key 'L_enc': 384384"},
        {"{\"task\": \"cls\", \"L_enc\": 70000, \"d\": 2, \"h\": 1, \"d_ff\": 1}", "key 'L_enc'"},
        {"{\"d\": 100000}", "key 'd': 100000"},
        {"{\"d\": 64, \"d_ff\": 2000000000}", "key 'd_ff'"},
        {"{\"V\": 1000000000}", "key 'V': 1000000000"},
        {"{\"task\": \"cls\", \"n_classes\": 2000000000}", "key 'n_classes'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lnk_config c;
        lnk_config_default(&c);
        double t0 = lnk_now();
        assert_int_equal(lnk_config_parse_json(&c, cases[i].json, "big.json"), LNK_OK);
        if (lnk_config_finalize(&c) != LNK_EINVAL)
            fail_msg("%s: accepted", cases[i].json);
        assert_true(lnk_now() - t0 < 0.5); /* closed form: nothing is built */
        assert_msg_has(lnk_errmsg(), cases[i].key, "LNK_MAX_PARAMS", NULL);
    }
    /* a huge key that does not apply to the task costs nothing */
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_parse_json(&c, "{\"task\": \"lm\", \"L_enc\": 384384}", "x"),
                     LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    /* just under the limit is allowed; the closed form is the model's size for
     * every task x position x norm x tie */
    for (int t = 0; t < 3; t++)
        for (int pos = 0; pos < 2; pos++)
            for (int nm = 0; nm < 3; nm++)
                for (int tie = 0; tie < 2; tie++) {
                    char js[256];
                    snprintf(js, sizeof js,
                             "{\"task\": \"%s\", \"norm_pos\": \"%s\", \"norm\": \"%s\", "
                             "\"tie_output\": %s, \"L_enc\": 2, \"L_dec\": 3, \"V_src\": 11, "
                             "\"V_tgt\": 13, \"n_classes\": %d, \"d_ff\": 7}",
                             task_names_t[t], pos ? "pre" : "post",
                             nm == 0 ? "layernorm" : nm == 1 ? "rmsnorm" : "none",
                             tie ? "true" : "false", tie ? 11 : 5);
                    lnk_config_default(&c);
                    assert_int_equal(lnk_config_parse_json(&c, js, "g"), LNK_OK);
                    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
                    assert_model_builds(&c, js);
                }
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
        cmocka_unit_test(test_null_keeps_default),
        cmocka_unit_test(test_flags_override_file),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_fields_by_hand),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_file_keys_stored),
        cmocka_unit_test(test_saved_keys_with_model),
        cmocka_unit_test(test_inapplicable_keys),
        cmocka_unit_test(test_saved_config_flags),
        cmocka_unit_test(test_size_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
