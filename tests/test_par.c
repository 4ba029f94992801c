/* The layers' element-wise loops on the BLAS threads (src/core/par.h):
 * lnk_par_for covers every item once, in parts on distinct threads with
 * their own scratch; and every layer kernel it serves gives bitwise the same
 * output on 1, 2 and 3 threads, on sizes where the loops are split (the
 * small attention GEMMs run on one thread in OpenBLAS, so the whole kernel
 * is compared).  And the Lanczos basis rows faulted in ahead by a helper
 * thread leave the run as it was (bitwise against a basis given already
 * written). */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "core/par.h"
#include "layers/layers.h"

static int saved_threads = -1;

static int restore_threads(void **state)
{
    (void)state;
    if (saved_threads > 0)
        openblas_set_num_threads(saved_threads);
    return 0;
}

/* ------------------------------------------------------------ lnk_par_for */

typedef struct {
    int *hits;
    pthread_t caller, tid[8];
    size_t lo[8];
    double *scr[8];
    int parts, wait;   /* wait: the parts expected on workers */
    atomic_int others; /* parts started on a thread other than the caller */
    pthread_mutex_t m;
} cover_job;

static void cover(void *ctx, size_t lo, size_t hi, double *scratch)
{
    cover_job *J = ctx;
    if (!pthread_equal(pthread_self(), J->caller))
        atomic_fetch_add(&J->others, 1);
    if (lo == 0 && J->wait) {
        /* part 0 (on the caller) waits, up to 5 s, for the other parts to
         * start on workers: the caller cannot take them meanwhile */
        for (int i = 0; i < 5000 && atomic_load(&J->others) < J->wait; i++)
            usleep(1000);
    }
    for (size_t i = lo; i < hi; i++)
        J->hits[i]++;
    for (size_t i = 0; i < 100; i++) /* the scratch is there, and writable */
        scratch[i] = (double)i;
    pthread_mutex_lock(&J->m);
    if (J->parts < 8) {
        J->tid[J->parts] = pthread_self();
        J->lo[J->parts] = lo;
        J->scr[J->parts] = scratch;
    }
    J->parts++;
    pthread_mutex_unlock(&J->m);
}

static void test_par_for(void **state)
{
    (void)state;
    saved_threads = openblas_get_num_threads();
    size_t n = 1000;
    int *hits = calloc(n, sizeof(int));
    double scr0[100];
    for (int th = 1; th <= 3; th++) {
        openblas_set_num_threads(th);
        if (openblas_get_num_threads() != th) {
            print_message("OpenBLAS gives %d thread(s), not %d\n", openblas_get_num_threads(), th);
            continue;
        }
        for (size_t grain = 1; grain <= 1000; grain *= 10) {
            memset(hits, 0, n * sizeof(int));
            int want = (size_t)th <= n / grain ? th : (int)(n / grain);
            cover_job J = {.hits = hits, .caller = pthread_self(), .wait = want - 1};
            atomic_init(&J.others, 0);
            pthread_mutex_init(&J.m, NULL);
            lnk_par_for(n, grain, 100, scr0, cover, &J);
            pthread_mutex_destroy(&J.m);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(hits[i], 1);
            assert_int_equal(J.parts, want < 1 ? 1 : want);
            /* part 0 on the caller with its scratch; while it ran, the
             * others on workers, each with its own scratch */
            assert_int_equal(atomic_load(&J.others), J.parts - 1);
            for (int p = 0; p < J.parts; p++) {
                int first = J.lo[p] == 0;
                assert_int_equal(pthread_equal(J.tid[p], pthread_self()) != 0, first);
                assert_int_equal(J.scr[p] == scr0, first);
                for (int q = 0; q < p; q++)
                    assert_true(J.scr[q] != J.scr[p]);
            }
        }
    }
    restore_threads(NULL);
    free(hits);
}

/* ------------------------------------------------------ layers, bitwise */

enum { B = 12, T = 33, D = 64, H = 4, F = 256, C = 300, R = B * T };

/* One run of every served kernel into out (fixed order), on th threads. */
static size_t run_layers(int th, double *out, const double *in, const int64_t *lab,
                         const uint8_t *km)
{
    openblas_set_num_threads(th);
    size_t o = 0, RD = (size_t)R * D, RF = (size_t)R * F, RC = (size_t)R * C;
    size_t AA = (size_t)B * H * T * T;
    const double *x = in, *xd = in + RD, *dy = in + 2 * RD, *dyd = in + 3 * RD;
    const double *g = in + 4 * RD, *gd = g + D, *bb = gd + D, *bd = bb + D;
    const double *q = in, *k = in + RD, *v = in + 2 * RD;
    const double *big = in + 5 * RD; /* R F or R C values */
    double *y = out + o, *xh = y + RD, *r = xh + RD;
    lnk_norm_forward(y, xh, r, x, g, bb, R, D, 1, 1e-5);
    o += 2 * RD + R;
    double *ydt = out + o, *xhd = ydt + RD, *rd = xhd + RD;
    lnk_norm_tangent(ydt, xhd, rd, xd, xh, r, g, gd, bd, R, D, 1);
    o += 2 * RD + R;
    double *dx = out + o, *dg = dx + RD, *db = dg + D;
    memcpy(dx, x, RD * sizeof(double)); /* accum = 1 onto something */
    memset(dg, 0, 2 * D * sizeof(double));
    lnk_norm_backward(dx, dg, db, dy, xh, r, g, R, D, 1, 1);
    o += RD + 2 * D;
    double *dxt = out + o, *dgt = dxt + RD, *dbt = dgt + D;
    memset(dgt, 0, 2 * D * sizeof(double));
    lnk_norm_backward_tangent(dxt, dgt, dbt, dyd, dy, xh, xhd, r, rd, g, gd, R, D, 1, 0);
    o += RD + 2 * D;
    /* attention */
    double *ctx = out + o, *a = ctx + RD;
    lnk_attn_forward(ctx, a, q, k, v, km, B, T, T, D, H, 1);
    o += RD + AA;
    double *ctxd = out + o, *ad = ctxd + RD;
    lnk_attn_tangent(ctxd, ad, xd, dy, dyd, a, q, k, v, B, T, T, D, H);
    o += RD + AA;
    double scratch[2 * T * T];
    double *dq = out + o, *dk = dq + RD, *dv = dk + RD;
    lnk_attn_backward(dq, dk, dv, dy, a, q, k, v, scratch, B, T, T, D, H);
    o += 3 * RD;
    double *dqd = out + o, *dkd = dqd + RD, *dvd = dkd + RD;
    lnk_attn_backward_tangent(dqd, dkd, dvd, dyd, dy, ad, a, xd, dy, dyd, q, k, v, scratch, B, T,
                              T, D, H);
    o += 3 * RD;
    /* relu */
    double *ry = out + o, *rm = ry + RF;
    lnk_relu_forward(ry, big, RF);
    memcpy(rm, big + RF, RF * sizeof(double));
    lnk_relu_mask(rm, big + 2 * RF, big, RF, 1);
    o += 2 * RF;
    /* cross-entropy backward tangent (p: softmax rows of big) */
    double *p = out + o, *lt = p + RC;
    lnk_xent_forward(p, big, lab, R, C, 0.1);
    memcpy(lt, big + RC, RC * sizeof(double));
    lnk_xent_backward_tangent(lt, p, lab, R, C, 1.0 / R);
    o += 2 * RC;
    /* linear: bias add (forward) and bias gradient (backward), W [D, F]; not
     * dW: OpenBLAS's own x^T dy GEMM differs in the last bit between 1 and 2
     * threads at this shape, and x W with 3 threads: W = 0 here, so that
     * what is compared is the bias add */
    double *ly = out + o, *dbl = ly + RF;
    double *W0 = calloc((size_t)D * F, sizeof(double));
    assert_non_null(W0);
    lnk_linear_forward(ly, x, W0, big + (size_t)D * F, R, D, F, 0);
    free(W0);
    memset(dbl, 0, F * sizeof(double));
    lnk_linear_backward(NULL, NULL, dbl, big + RF, x, big, R, D, F, 0, 0);
    o += RF + F;
    return o;
}

static void test_layers_bitwise(void **state)
{
    (void)state;
    saved_threads = openblas_get_num_threads();
    openblas_set_num_threads(2);
    if (openblas_get_num_threads() < 2) {
        print_message("OpenBLAS gives %d thread(s) only\n", openblas_get_num_threads());
        skip();
    }
    size_t RD = (size_t)R * D, nin = 5 * RD + 3 * (size_t)R * (F > C ? F : C) * 2;
    double *in = malloc(nin * sizeof(double));
    tu_randn(in, nin, 7);
    int64_t lab[R];
    uint8_t km[B * T];
    for (int i = 0; i < R; i++)
        lab[i] = i % 7 == 3 ? -1 : (i * 37) % C;
    for (int i = 0; i < B * T; i++)
        km[i] = i % T > T - 1 - (i / T); /* row b masks its last b keys */
    size_t nout = 40 * RD + 8 * (size_t)R * (F > C ? F : C);
    double *out[3];
    size_t used[3];
    for (int t = 0; t < 3; t++) {
        out[t] = calloc(nout, sizeof(double));
        used[t] = run_layers(t + 1, out[t], in, lab, km);
        assert_true(used[t] <= nout);
    }
    restore_threads(NULL);
    for (int t = 1; t < 3; t++) {
        assert_int_equal(used[t], used[0]);
        size_t first = used[0];
        for (size_t i = 0; i < used[0]; i++)
            if (memcmp(&out[t][i], &out[0][i], sizeof(double))) {
                first = i;
                break;
            }
        if (first < used[0])
            fail_msg("%d threads: output %zu of %zu differs from 1 thread's (%.17g vs %.17g)",
                     t + 1, first, used[0], out[t][first], out[0][first]);
    }
    print_message("layer kernels on 1, 2, 3 threads: %zu outputs bitwise equal\n", used[0]);
    for (int t = 0; t < 3; t++)
        free(out[t]);
    free(in);
}

/* -------------------------------------------------- Lanczos, rows ahead */

typedef struct {
    size_t n;
    double *d;
} diag_op;

static int diag_apply(void *ctx, const double *x, double *y)
{
    const diag_op *g = ctx;
    for (size_t i = 0; i < g->n; i++)
        y[i] = g->d[i] * x[i];
    return LNK_OK;
}

static void test_lanczos_prefault(void **state)
{
    (void)state;
    size_t n = 3 * 4096 + 77; /* rows of ~24 pages, not page-aligned */
    int m = 12;
    diag_op D0 = {n, malloc(n * sizeof(double))};
    for (size_t i = 0; i < n; i++)
        D0.d[i] = 1.0 + (double)(i % 101) / 7.0 + (i < 5 ? 40.0 * (double)i : 0.0);
    lnk_operator op = {.n = n, .apply = diag_apply, .ctx = &D0};
    double *given = malloc((size_t)(m + 1) * n * sizeof(double));
    memset(given, 0, (size_t)(m + 1) * n * sizeof(double)); /* all of it written already */
    lnk_lanczos *a = lnk_lanczos_alloc(n, m, LNK_LANCZOS_FULL);
    lnk_lanczos *b = lnk_lanczos_alloc_basis(n, m, LNK_LANCZOS_FULL, given);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(lnk_lanczos_start(a, NULL, 3), LNK_OK);
    assert_int_equal(lnk_lanczos_start(b, NULL, 3), LNK_OK);
    for (int j = 0; j < m; j++) {
        assert_int_equal(lnk_lanczos_step(a, &op), LNK_OK);
        assert_int_equal(lnk_lanczos_step(b, &op), LNK_OK);
        /* the row after the next one was faulted in during the product */
        assert_int_equal(a->touched, j + 2 <= m ? j + 2 : j + 1);
    }
    assert_memory_equal(a->alpha, b->alpha, (size_t)m * sizeof(double));
    assert_memory_equal(a->beta, b->beta, (size_t)m * sizeof(double));
    assert_memory_equal(a->V, b->V, (size_t)(m + 1) * n * sizeof(double));
    lnk_lanczos_free(a);
    lnk_lanczos_free(b);
    free(given);
    free(D0.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_par_for, restore_threads),
        cmocka_unit_test_teardown(test_layers_bitwise, restore_threads),
        cmocka_unit_test(test_lanczos_prefault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
