/* Configuration keys (docs/MODEL.md §8): null keeps the default, flags over
 * files, spellings, task-dependent keys, saved configs whose flags re-derive
 * their derived keys, size limits; helpers in tests/testutil_config.c. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "testutil_config.h"

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
    tcf_assert_msg_has(lnk_errmsg(), "--d", "missing", NULL);
}

static void test_file_keys_stored(void **state)
{
    (void)state;
    lnk_config c;
    lnk_config_default(&c);
    long long np;
    int nt;
    tcf_counts_of("d=8", &np, &nt);
    char *order = tcf_order_json(nt), js[4096];
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
    tcf_assert_msg_has(lnk_errmsg(), "edited.json", "key 'n_params'", "restore", NULL);
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
                tcf_assert_msg_has(lnk_errmsg(), "y.json", key, "expected an integer", NULL);
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
            tcf_assert_msg_has(lnk_errmsg(), "z.json", keys[k].key, NULL);
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
    tcf_assert_msg_has(lnk_errmsg(), "'L_enc'", NULL);
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
    tcf_assert_config_equal(&c, &want);
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
    tcf_assert_config_equal(&c, &want);
    assert_model_builds(&c, "--norm-pos post");
    lnk_config_clear(&c);
    /* no flag: the saved keys stay and are checked by the model */
    assert_int_equal(load_and_set(&c, path, NULL), LNK_OK);
    tcf_assert_config_equal(&c, &a);
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
    tcf_assert_msg_has(lnk_errmsg(), "edited.json", "'n_params'", "d 6", "remove 'n_params' and "
                   "'param_order'", NULL);
    lnk_config_clear(&c);
    free(text);
    lnk_config e;
    lnk_config_default(&e);
    assert_int_equal(lnk_config_parse_json(&e, "{\"param_order\": [\"tgt_emb\"]}", "po.json"),
                     LNK_EMISMATCH);
    tcf_assert_msg_has(lnk_errmsg(), "po.json", "'param_order'", "1 tensors", NULL);
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
        tcf_assert_msg_has(lnk_errmsg(), cases[i].key, "LNK_MAX_PARAMS", NULL);
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
