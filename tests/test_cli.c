/* The lnkit program: round trip init -> batch -> eval -> hvp against the
 * library, and bad input: one clear line on stderr, exit 2, no output file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"

/* No file of the directory other than those listed may exist (no temp files). */
static int count_files(const char *dir)
{
    char *out;
    tu_run(&out, "ls -A '%s' | wc -l", dir);
    int n = atoi(out);
    free(out);
    return n;
}

static void setup_files(void)
{
    static int done = 0;
    if (done)
        return;
    done = 1;
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' init --d 16 --h 2 --L 2 --V 40 --seed 5 -o w.safetensors "
                    "&& '%s' batch --synthetic --vocab 40 --batch 3 --len 7 --seed 2 -o b.safetensors "
                    "&& '%s' batch --synthetic --vocab 4000 --batch 3 --len 7 -o big.safetensors",
                    tu_tmpdir(), tu_lnkit(), tu_lnkit(), tu_lnkit());
    if (st != 0)
        fail_msg("setup failed (%d): %s", st, out);
    free(out);
}

/* eval's CSV equals the library's numbers for the same files. */
static void test_eval_matches_library(void **s)
{
    (void)s;
    setup_files();
    char *out;
    int st = tu_run(&out, "'%s' eval --config '%s' --weights '%s' --batch '%s' 2>/dev/null",
                    tu_lnkit(), tu_path("w.json"), tu_path("w.safetensors"),
                    tu_path("b.safetensors"));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "quantity,tensor,value\n"));
    double loss_cli = NAN;
    char *p = strstr(out, "\nloss,,");
    assert_non_null(p);
    loss_cli = strtod(p + 7, NULL);
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_load_json(&c, tu_path("w.json")), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n), L;
    assert_int_equal(lnk_weights_load(tu_path("w.safetensors"), m, th), LNK_OK);
    /* init wrote exactly what lnk_model_init_params gives */
    double *th2 = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_init_params(m, th2), LNK_OK);
    assert_memory_equal(th, th2, sizeof(double) * n);
    lnk_batch b;
    assert_int_equal(lnk_batch_load(tu_path("b.safetensors"), m, &b), LNK_OK);
    lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, 0);
    assert_int_equal(lnk_model_eval(ws, th, &b, &L, g, NULL), LNK_OK);
    assert_true(L == loss_cli); /* %.17g round-trips exactly */
    /* every tensor's norm appears with the library's value */
    const lnk_layout *lay = lnk_model_layout(m);
    for (int i = 0; i < lay->n_tensors; i++) {
        char key[96];
        snprintf(key, sizeof key, "\ngrad_norm,%s,", lay->t[i].name);
        char *q = strstr(out, key);
        assert_non_null(q);
        assert_true(strtod(q + strlen(key), NULL) == lnk_tensor_norm(m, g, i));
    }
    free(out);
    /* hvp writes H v in the input layout: flat in, flat out */
    double *v = malloc(sizeof(double) * n), *hv = malloc(sizeof(double) * n);
    tu_randn(v, n, 4);
    assert_int_equal(lnk_vector_save(tu_path("v.safetensors"), m, v, LNK_VEC_FLAT), LNK_OK);
    st = tu_run(&out, "'%s' hvp --config '%s' --weights '%s' --batch '%s' --vector '%s' -o '%s' "
                "--repeat 3", tu_lnkit(), tu_path("w.json"), tu_path("w.safetensors"),
                tu_path("b.safetensors"), tu_path("v.safetensors"), tu_path("hv.safetensors"));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "median"));
    free(out);
    lnk_workspace *wsh = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
    assert_int_equal(lnk_model_hvp(wsh, th, &b, v, hv, NULL, NULL), LNK_OK);
    double *hv2 = malloc(sizeof(double) * n);
    int kind = -1;
    assert_int_equal(lnk_vector_load(tu_path("hv.safetensors"), m, hv2, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_FLAT);
    assert_memory_equal(hv, hv2, sizeof(double) * n);
    free(v);
    free(hv);
    free(hv2);
    free(th);
    free(th2);
    free(g);
    lnk_workspace_free(ws);
    lnk_workspace_free(wsh);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Each bad command: exit 2, one line on stderr containing the expected words,
 * nothing on stdout, and no file created in a fresh directory. */
static void test_bad_input(void **s)
{
    (void)s;
    setup_files();
    const char *W = tu_path("w.safetensors"), *Bf = tu_path("b.safetensors"), *C = tu_path("w.json");
    char nanw[600], trunc[600], cfgbad[600], bigb[600];
    snprintf(bigb, sizeof bigb, "%s", tu_path("big.safetensors"));
    /* weights with a NaN: load, poke, save through the container writer */
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(W, &f), LNK_OK);
    ((double *)f->t[1].data)[3] = NAN;
    snprintf(nanw, sizeof nanw, "%s", tu_path("nan.safetensors"));
    assert_int_equal(lnk_st_write(nanw, f->t, f->n, NULL), LNK_OK);
    lnk_st_free(f);
    size_t len;
    char *data = tu_read_file(W, &len);
    snprintf(trunc, sizeof trunc, "%s", tu_path("trunc.safetensors"));
    tu_write_file(trunc, data, len - 9);
    free(data);
    snprintf(cfgbad, sizeof cfgbad, "%s", tu_path("bad.json"));
    tu_write_file(cfgbad, "{\"d\": 16, \"h\": 3}", 17);
    struct {
        const char *args;
        const char *words;
    } cases[] = {
        {"init --d 30 --h 4 -o OUT", "multiple of h"},
        {"init --d -4 -o OUT", "--d"},
        {"init --norm layer -o OUT", "norm"},
        {"init --label-smoothing 1 -o OUT", "--label-smoothing"},
        {"init --norm-pos mid -o OUT", "--norm-pos: expected one of post, pre, got 'mid'"},
        {"init --L 1000000 -o OUT", "key 'L': 1000000"},
        {"init --frobnicate 3 -o OUT", "unknown option '--frobnicate'"},
        {"init -o", "needs a value"},
        {"init --config /nonexistent/c.json -o OUT", "/nonexistent/c.json"},
        {"init --config CFGBAD -o OUT", "h"},
        {"frob", "unknown command 'frob'"},
        {"batch --synthetic --vocab 3 -o OUT", "--vocab"},
        {"batch --synthetic --batch -2 -o OUT", "--batch"},
        {"batch --text /nonexistent.txt -o OUT", "/nonexistent.txt"},
        {"eval --config CFG --weights /nonexistent.st --batch BATCH", "/nonexistent.st"},
        {"eval --config CFG --weights TRUNC --batch BATCH", "trunc.safetensors"},
        {"eval --config CFG --weights NANW --batch BATCH", "finite"},
        {"eval --config CFG --weights W --batch BATCH --V-tgt 20", "'tgt_emb' has shape [40, 16]"},
        {"eval --weights W --batch BATCH --d 8 --h 2 --L 2 --V 40", "shape"},
        {"eval --config CFG --weights W --batch W", "tensor 'tgt' is missing"},
        {"eval --config CFG --weights W", "--batch"},
        {"eval --config CFG --weights W --batch BIGB", "out of range"},
        {"hvp --config CFG --weights W --batch BATCH --vector BATCH -o OUT", "b.safetensors"},
        {"hvp --config CFG --weights W --batch BATCH --vector W", "-o"},
        {"hvp --config CFG --weights W --batch BATCH --vector NANW -o OUT", "finite"},
        {"hvp --config CFG --weights W --batch BATCH --vector W -o OUT --repeat 0", "--repeat"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[600], cmd[4096], *o = cmd;
        snprintf(dir, sizeof dir, "%s/case%zu", tu_tmpdir(), i);
        mkdir(dir, 0777);
        /* substitute placeholders */
        const char *a = cases[i].args;
        while (*a) {
            const char *rep = NULL;
            size_t k = 0;
            if (!strncmp(a, "OUT", 3)) { rep = "out.safetensors"; k = 3; }
            else if (!strncmp(a, "CFGBAD", 6)) { rep = cfgbad; k = 6; }
            else if (!strncmp(a, "CFG", 3)) { rep = C; k = 3; }
            else if (!strncmp(a, "BATCH", 5)) { rep = Bf; k = 5; }
            else if (!strncmp(a, "BIGB", 4)) { rep = bigb; k = 4; }
            else if (!strncmp(a, "TRUNC", 5)) { rep = trunc; k = 5; }
            else if (!strncmp(a, "NANW", 4)) { rep = nanw; k = 4; }
            else if (!strncmp(a, "W", 1) && (a[1] == ' ' || a[1] == 0)) { rep = W; k = 1; }
            if (rep) {
                o += sprintf(o, "%s", rep);
                a += k;
            } else
                *o++ = *a++;
        }
        *o = 0;
        char *out, *err;
        int st = tu_run(&out, "cd '%s' && '%s' %s 2>/dev/null", dir, tu_lnkit(), cmd);
        int st2 = tu_run(&err, "cd '%s' && '%s' %s 2>&1 >/dev/null", dir, tu_lnkit(), cmd);
        if (st != 2 || st2 != 2 || out[0] != '\0' || !strstr(err, cases[i].words) ||
            strncmp(err, "lnkit: ", 7) != 0 || strchr(err, '\n') != err + strlen(err) - 1 ||
            count_files(dir) != 0)
            fail_msg("lnkit %s\n  exit %d, stdout '%s', stderr '%s', files left %d (expected exit 2, "
                     "one line with '%s', nothing else)",
                     cmd, st, out, err, count_files(dir), cases[i].words);
        free(out);
        free(err);
    }
}

/* The configuration contract from the command line (docs/MODEL.md §8): keys
 * that do not apply are ignored, flags override a saved config and its
 * derived keys follow them. */
static void test_config_contract(void **s)
{
    (void)s;
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/contract", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit();
    /* the config initialises and evaluates */
    int st = tu_run(&out, "cd '%s' && printf '%%s' '{\"task\":\"lm\",\"L_enc\":0,\"V_src\":0,"
                    "\"n_classes\":0}' > i.json && '%s' init --config i.json -o i.safetensors && "
                    "'%s' batch --synthetic --config i.json -o ib.safetensors && '%s' eval --config "
                    "i.json --weights i.safetensors --batch ib.safetensors",
                    dir, L, L, L);
    if (st != 0 || !strstr(out, "\nloss,,"))
        fail_msg("issue config: exit %d: %s", st, out);
    free(out);
    /* --L 12 on a saved 6-layer config builds what --L 12 alone builds, files
     * byte for byte (the saved L_enc/L_dec 6 follow L); so does --norm-pos post
     * on a saved Pre-LN config */
    st = tu_run(&out, "cd '%s' && '%s' init --L 6 --norm-pos pre -o s6.safetensors && "
                "'%s' init --config s6.json --L 12 -o s12.safetensors && "
                "'%s' init --L 12 --norm-pos pre -o f12.safetensors && cmp s12.json f12.json && "
                "cmp s12.safetensors f12.safetensors && grep -q '\"L_dec\": 12' s12.json && "
                "'%s' init --config s6.json --norm-pos post -o p6.safetensors && "
                "'%s' init --L 6 -o f6.safetensors && cmp p6.json f6.json && "
                "cmp p6.safetensors f6.safetensors",
                dir, L, L, L, L, L);
    if (st != 0)
        fail_msg("saved config + flags: exit %d: %s", st, out);
    free(out);
    /* a saved config whose keys were edited: the message names the key */
    st = tu_run(&out, "cd '%s' && sed 's/\"d\": 16/\"d\": 32/' s6.json > e.json && "
                "'%s' init --config e.json -o e.safetensors", dir, L);
    if (st != 2 || !strstr(out, "e.json: key 'n_params'") || !strstr(out, "remove 'n_params'"))
        fail_msg("edited config: exit %d: %s", st, out);
    free(out);
}

static void test_help(void **s)
{
    (void)s;
    const char *cmds[] = {"", "init", "batch", "eval", "hvp"};
    for (int i = 0; i < 5; i++) {
        char *out;
        int st = tu_run(&out, "'%s' %s --help", tu_lnkit(), cmds[i]);
        assert_int_equal(st, 0);
        assert_non_null(strstr(out, "usage: lnkit"));
        if (i > 0) /* defaults are shown for the config flags */
            assert_non_null(strstr(out, "(layernorm)"));
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_matches_library),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_config_contract),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
