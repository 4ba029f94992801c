/* Helpers of the geometry tests (test_geometry, test_select, test_heat_cells):
 * selectability that fails the test on error, and a small generator of test
 * data independent of GSL. */
#include "testutil.h"
#include "testutil_geom.h"

#include <math.h>

#include "lnkit/geometry.h"

/* Selectability, failing the test on error; outside near-boundary tests every key must
 * be decided by a pre-test or by an LP whose certified bounds settle it. */
int tg_allow_ambiguous = 0;
void tg_sel_ok(const double *K, int n, int d, double tol, int *sel)
{
    lnk_geom_sel_info info;
    if (lnk_geom_selectable(K, n, d, tol, sel, &info) != LNK_OK)
        fail_msg("selectable: %s", lnk_errmsg());
    assert_int_equal(info.n_pretest + info.n_lp, n);
    if (!tg_allow_ambiguous && info.n_ambiguous)
        fail_msg("%d of %d keys (dimension %d) left ambiguous by the LP certificates",
                 info.n_ambiguous, n, d);
}

/* A small deterministic generator for test data (xorshift64*), independent of GSL. */
uint64_t tg_rs;
double tg_urand(void)
{
    tg_rs ^= tg_rs >> 12;
    tg_rs ^= tg_rs << 25;
    tg_rs ^= tg_rs >> 27;
    return (double)((tg_rs * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
double tg_nrand(void)
{
    double u = tg_urand(), v = tg_urand();
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}
