/* A block's product skips what lies below the block in the forward sweep
 * (model/pass.h, lnk_span): the tangents there are zero and no tensor there
 * is read.  The skipped work must not change a bit: for every model variant
 * (tu_variants: each placement, activation, positions, biases, norm, task,
 * tying) and every tensor alone, a tensor kind over all layers, and a pair
 * of tensors far apart, H_BB v equals the full product of v put in the block
 * (zeros elsewhere), gathered, byte for byte; G and F likewise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "testutil.h"

/* The block operator's product against the full one's, bitwise; returns the
 * number of coordinates that differ. */
static size_t compare(const lnk_model *m, lnk_hessian *full, lnk_hessian *hb, const char *pat,
                      lnk_op_kind kind, uint64_t seed, size_t *zero)
{
    assert_int_equal(lnk_hessian_set_block(hb, pat), LNK_OK);
    assert_int_equal(lnk_hessian_set_kind(hb, kind), LNK_OK);
    assert_int_equal(lnk_hessian_set_kind(full, kind), LNK_OK);
    lnk_operator B = lnk_hessian_operator(hb), F = lnk_hessian_operator(full);
    const lnk_block *blk = lnk_hessian_block(hb);
    double *x = malloc(sizeof(double) * B.n), *y = malloc(sizeof(double) * B.n);
    double *xf = calloc(F.n, sizeof(double)), *yf = malloc(sizeof(double) * F.n);
    double *ref = malloc(sizeof(double) * B.n);
    tu_randn(x, B.n, seed);
    lnk_block_scatter(m, blk, x, xf);
    assert_int_equal(B.apply(B.ctx, x, y), LNK_OK);
    assert_int_equal(F.apply(F.ctx, xf, yf), LNK_OK);
    lnk_block_gather(m, blk, yf, ref);
    size_t bad = 0, nz = 0;
    for (size_t i = 0; i < B.n; i++) {
        bad += memcmp(&y[i], &ref[i], sizeof(double)) != 0;
        nz += ref[i] != 0;
    }
    if (bad)
        print_message("  block '%s' (kind %d): %zu of %zu coordinates differ\n", pat, (int)kind,
                      bad, B.n);
    if (nz == 0) /* all zero tells little (F of the output weight is 0): counted, and F v is
                    also compared on the kinds below, whose products are not 0 */
        (*zero)++;
    free(x);
    free(y);
    free(xf);
    free(yf);
    free(ref);
    return bad;
}

static const lnk_op_kind KINDS[3] = {LNK_OP_HESSIAN, LNK_OP_GGN, LNK_OP_FUNCTIONAL};

static void test_block_products_bitwise(void **s)
{
    (void)s;
    tu_variant v[96];
    int ns, nv = tu_variants(v, 96, &ns);
    static const char *const sizes[] = {"d=8", "h=2", "L=3", "d_ff=8", "V=9", "seed=3", NULL};
    static const char *const kinds[] = {"*.ffn.w2", "*.attn.wq", "*norm*", "*.b*"};
    size_t products = 0, bad = 0, zero = 0;
    for (int i = 0; i < nv; i++) {
        lnk_config c = tu_variant_config(&v[i], sizes);
        lnk_model *m = lnk_model_alloc(&c);
        assert_non_null(m);
        size_t n = lnk_model_n_params(m);
        double *th = malloc(sizeof(double) * n);
        lnk_model_init_params(m, th);
        /* the weights off their initial values, so that no tensor is 0 or 1 */
        double *r = malloc(sizeof(double) * n);
        tu_randn(r, n, 900 + i);
        for (size_t q = 0; q < n; q++)
            th[q] += 0.1 * r[q];
        free(r);
        lnk_batch b;
        tu_rows(m, &b, 0, 3, 6, 7);
        lnk_hessian *full = lnk_hessian_alloc(m, th, &b, 1, NULL);
        lnk_hessian *hb = lnk_hessian_alloc(m, th, &b, 1, NULL);
        assert_non_null(full);
        assert_non_null(hb);
        const lnk_layout *lay = lnk_model_layout(m);
        for (int t = 0; t < lay->n_tensors; t++)
            for (int op = 0; op < 3; op++, products++)
                bad += compare(m, full, hb, lay->t[t].name, KINDS[op], 10 * i + t, &zero);
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            lnk_block probe;
            if (lnk_block_select(m, kinds[k], &probe) != LNK_OK) {
                lnk_error_clear(); /* this variant has no such tensor (bias=false, norm=none) */
                continue;
            }
            lnk_block_free(&probe);
            for (int op = 0; op < 3; op++, products++)
                bad += compare(m, full, hb, kinds[k], KINDS[op], 7 * i + (int)k, &zero);
        }
        /* two tensors far apart: the first layer's and the last's */
        char pair[2 * LNK_NAME_MAX + 2];
        snprintf(pair, sizeof pair, "%s,%s", lay->t[lay->n_tensors / 3].name,
                 lay->t[lay->n_tensors - 1].name);
        bad += compare(m, full, hb, pair, LNK_OP_HESSIAN, 3 * i, &zero);
        products++;
        lnk_hessian_free(hb);
        lnk_hessian_free(full);
        lnk_batch_free(&b);
        free(th);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    print_message("%d variants, %zu block products (%zu of them all zero): %zu coordinates "
                  "differ from the full product's\n", nv, products, zero, bad);
    assert_int_equal(bad, 0);
    assert_true(zero < products / 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_products_bitwise),
    };
    return cmocka_run_group_tests_name("span", tests, NULL, NULL);
}
