/* Helpers of the geometry tests (testutil_geom.c). */
#ifndef LNK_TESTUTIL_GEOM_H
#define LNK_TESTUTIL_GEOM_H

#include <stdint.h>

/* Selectability (lnk_geom_selectable), failing the test on error; unless
 * tg_allow_ambiguous is set (near-boundary tests), every key must be decided
 * by a pre-test or by an LP whose certified bounds settle it. */
extern int tg_allow_ambiguous;
void tg_sel_ok(const double *K, int n, int d, double tol, int *sel);

/* A small deterministic generator for test data (xorshift64*), independent
 * of GSL: its state tg_rs (every test seeds it), uniform in [0, 1) and
 * standard normal (Box-Muller). */
extern uint64_t tg_rs;
double tg_urand(void);
double tg_nrand(void);

#endif
