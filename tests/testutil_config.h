/* Helpers of the configuration tests (testutil_config.c). */
#ifndef LNK_TESTUTIL_CONFIG_H
#define LNK_TESTUTIL_CONFIG_H

#include "lnkit/config.h"

/* Fail unless msg contains every one of the NULL-terminated substrings. */
void tcf_assert_msg_has(const char *msg, ...);
/* Every key of a and b equal (reals bit-exact). */
void tcf_assert_config_equal(const lnk_config *a, const lnk_config *b);
/* "[\"t0\", \"t1\", ...]": a param_order of n names (malloc'd). */
char *tcf_order_json(int n);
/* The parameter and tensor counts of the finalized config made from kv strings. */
void tcf_counts_of(const char *kv, long long *np, int *nt);

#endif
