/* Helpers of the configuration tests (test_config, test_config_keys). */
#include "testutil.h"
#include "testutil_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fail unless msg contains every one of the NULL-terminated substrings. */
void tcf_assert_msg_has(const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        if (!strstr(msg, s))
            fail_msg("message \"%s\" lacks \"%s\"", msg, s);
    va_end(ap);
}

void tcf_assert_config_equal(const lnk_config *a, const lnk_config *b)
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
char *tcf_order_json(int n)
{
    char *s = malloc(16 + (size_t)n * 16), *p = s;
    p += sprintf(p, "[");
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s\"t%d\"", i ? ", " : "", i);
    sprintf(p, "]");
    return s;
}

/* The parameter and tensor counts of the finalized config made from kv strings. */
void tcf_counts_of(const char *kv, long long *np, int *nt)
{
    lnk_config c = tu_config(kv, NULL);
    double p, t;
    lnk_config_size(&c, &p, &t);
    *np = (long long)p;
    *nt = (int)t;
}
