/* Workspace sizes (issue 13, item 5): counted in size_t without overflow,
 * the plan equals what is allocated, and a workspace larger than the memory
 * the process may use is refused up front with a message naming the sizes.
 * The reproducers: one sequence of 65536 tokens (Tq * Tq overflowed an int;
 * the maps alone need 69 GB) and one of 16384 tokens (11 GB for a gradient,
 * refused here under LNK_MEM_LIMIT_MB=8192, as on an 8 GB machine). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/memory.h"
#include "testutil.h"

/* The plan equals the bytes allocated, for every task and option. */
static void test_plan_equals_alloc(void **s)
{
    (void)s;
    const char *cfg[][4] = {
        {"task=lm", "norm_pos=post", "qk_norm=none", "tie_output=false"},
        {"task=lm", "norm_pos=pre", "qk_norm=layernorm", "tie_output=true"},
        {"task=lm", "norm_pos=pre", "qk_norm=none", "norm=none"},
        {"task=seq2seq", "norm_pos=post", "qk_norm=rmsnorm", "tie_output=false"},
        {"task=seq2seq", "norm_pos=pre", "qk_norm=none", "norm=rmsnorm"},
        {"task=cls", "norm_pos=pre", "qk_norm=layernorm", "tie_output=false"},
    };
    for (int i = 0; i < 6; i++) {
        lnk_config c = tu_config(cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3], "d=12", "h=3",
                                 "L=2", "V=17", NULL);
        lnk_model *m = lnk_model_alloc(&c);
        assert_non_null(m);
        for (unsigned fl = 0; fl <= LNK_WS_HVP; fl += LNK_WS_HVP) {
            size_t plan = lnk_workspace_plan(m, 3, 5, 7, fl);
            lnk_workspace *ws = lnk_workspace_alloc(m, 3, 5, 7, fl);
            assert_non_null(ws);
            assert_int_equal(plan, lnk_workspace_bytes(ws));
            lnk_workspace_free(ws);
        }
        /* H v keeps the primal adjoints and the tangents: more than a gradient's */
        assert_true(lnk_workspace_plan(m, 3, 5, 7, LNK_WS_HVP) >
                    lnk_workspace_plan(m, 3, 5, 7, 0));
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
}

/* A workspace refused, with a one-line message holding the given pieces. */
static void expect_refused(lnk_model *m, int B, int S, int T, unsigned fl,
                           const char *const *parts)
{
    lnk_error_clear();
    lnk_workspace *ws = lnk_workspace_alloc(m, B, S, T, fl);
    if (ws)
        fail_msg("workspace B = %d, S = %d, T = %d was allocated", B, S, T);
    print_message("%s\n", lnk_errmsg());
    assert_non_null(strstr(lnk_errmsg(), "workspace: "));
    for (int i = 0; parts[i]; i++)
        if (!strstr(lnk_errmsg(), parts[i]))
            fail_msg("message lacks '%s': %s", parts[i], lnk_errmsg());
    assert_null(strchr(lnk_errmsg(), '\n'));
}

static void test_long_sequences(void **s)
{
    (void)s;
    lnk_config c = tu_config("task=lm", NULL); /* MODEL.md defaults: d 16, h 2, L 2 */
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    /* 65536 tokens in one row: 65535 positions; 2 maps of 65535^2 doubles each */
    size_t plan = lnk_workspace_plan(m, 1, 0, 65536, 0);
    assert_true(plan > (size_t)2 * 2 * 65535 * 65535 * 8);
    if (lnk_memory_limit() > plan) {
        print_message("this machine has %zu bytes: the 65536 case fits\n", lnk_memory_limit());
        skip();
    }
    const char *p65[] = {"B = 1", "T = 65536", "1 x 2 x 65535 x 65535 doubles", "GB", NULL};
    expect_refused(m, 1, 0, 65536, 0, p65);
    expect_refused(m, 1, 0, 65536, LNK_WS_HVP, p65);
    /* the data-set Hessian refuses it too, naming the sizes */
    lnk_batch b;
    assert_int_equal(lnk_batch_synthetic(m, 1, 65535, 3, &b), LNK_OK);
    assert_int_equal(b.T, 65536);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    assert_null(lnk_hessian_alloc(m, th, &b, 1, NULL));
    assert_non_null(strstr(lnk_errmsg(), "T = 65536 needs"));
    lnk_batch_free(&b);
    /* 16384 tokens: about 11 GB for a gradient; refused on an "8 GB machine" */
    lnk_memory_set_limit((size_t)8192 * 1048576); /* what LNK_MEM_LIMIT_MB=8192 sets */
    assert_int_equal(lnk_memory_limit() <= (size_t)8192 * 1048576, 1);
    plan = lnk_workspace_plan(m, 1, 0, 16384, 0);
    assert_true(plan > (size_t)8192 * 1048576);
    const char *p16[] = {"T = 16384", "1 x 2 x 16383 x 16383 doubles", "8.6 GB", NULL};
    expect_refused(m, 1, 0, 16384, 0, p16);
    expect_refused(m, 1, 0, 16384, LNK_WS_HVP, p16);
    lnk_memory_set_limit(0);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Counts that overflow size_t saturate; rows beyond int are refused. */
static void test_overflow(void **s)
{
    (void)s;
    lnk_config c = tu_config("task=seq2seq", "h=4", "d=16", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    assert_int_equal(lnk_workspace_plan(m, INT_MAX, INT_MAX, INT_MAX, LNK_WS_HVP), SIZE_MAX);
    const char *pmax[] = {"more than", "EB", NULL};
    /* rows B x T x h = 2^31 - 1 x ... : the CBLAS int range */
    const char *prow[] = {"exceeds 2147483647 rows", NULL};
    expect_refused(m, 40000, 65536, 10, 0, prow);
    lnk_model_free(m);
    lnk_config_clear(&c);
    c = tu_config("task=lm", "h=1", "d=2", "d_ff=2", "L=1", NULL);
    m = lnk_model_alloc(&c);
    /* a plan saturates rather than wrapping: 2^30 rows of 2^30 positions */
    assert_int_equal(lnk_workspace_plan(m, 1 << 30, 0, 1 << 30, 0), SIZE_MAX);
    expect_refused(m, 1, 0, INT_MAX, 0, pmax);
    lnk_model_free(m);
    lnk_config_clear(&c);
    /* invalid shapes plan to SIZE_MAX */
    c = tu_config("task=lm", NULL);
    m = lnk_model_alloc(&c);
    assert_int_equal(lnk_workspace_plan(m, 0, 0, 5, 0), SIZE_MAX);
    assert_int_equal(lnk_workspace_plan(m, 1, 0, 1, 0), SIZE_MAX);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* The reproducers through lnkit: exit 2, one line naming the sizes, no output. */
static void test_cli(void **s)
{
    (void)s;
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' init -o w.safetensors && '%s' batch --synthetic "
                    "--rows 1 --len 65535 -o long.safetensors && '%s' batch --synthetic "
                    "--rows 1 --len 16383 -o l16.safetensors", tu_tmpdir(), tu_lnkit(),
                    tu_lnkit(), tu_lnkit());
    assert_int_equal(st, 0);
    free(out);
    const char *cmds[] = {"eval", "hvp --vector w.safetensors -o hv.safetensors",
                          "eigs -k 1 -o e.csv"};
    for (int i = 0; i < 3; i++) {
        if (lnk_memory_limit() > (size_t)200e9)
            break; /* a machine with room for 65536 tokens */
        st = tu_run(&out, "cd '%s' && '%s' %s --config w.json --weights w.safetensors --batch "
                    "long.safetensors", tu_tmpdir(), tu_lnkit(), cmds[i]);
        print_message("%s: %s", cmds[i], out);
        assert_int_equal(st, 2);
        assert_int_equal(strncmp(out, "lnkit", 5), 0); /* "lnkit eval: ..." */
        assert_non_null(strstr(out, "T = 65536 needs"));
        assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out)); /* one line */
        free(out);
        st = tu_run(&out, "cd '%s' && LNK_MEM_LIMIT_MB=8192 '%s' %s --config w.json --weights "
                    "w.safetensors --batch l16.safetensors", tu_tmpdir(), tu_lnkit(), cmds[i]);
        assert_int_equal(st, 2);
        assert_non_null(strstr(out, "T = 16384 needs"));
        free(out);
    }
    st = tu_run(&out, "cd '%s' && ls hv.safetensors e.csv 2>/dev/null | wc -l", tu_tmpdir());
    assert_int_equal(atoi(out), 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_equals_alloc),
        cmocka_unit_test(test_long_sequences),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
