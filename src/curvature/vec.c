/* Vector kernels of the curvature routines on local slices, with the dot
 * products summed over a group for distributed operators (see "Distributed
 * vectors" in include/lnkit/curvature.h).  Without a group they are the
 * plain CBLAS calls. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "curvature/internal.h"
#include "core/blas_fixed.h"
#include "core/par.h"
#include "lnkit/error.h"
#include "lnkit/curvature.h"

static int gsum(const lnk_group *g, double *x, int count)
{
    return g->sum(g->ctx, x, count);
}

double lnk_cv_dot(const lnk_group *g, size_t n, const double *x, const double *y)
{
    double d = lnk_dot(n, x, y);
    if (g && gsum(g, &d, 1) != 0)
        return NAN;
    return d;
}

double lnk_cv_nrm2(const lnk_group *g, size_t n, const double *x)
{
    if (!g)
        return cblas_dnrm2((int)n, x, 1);
    /* sum of squares: a distributed norm can not use dnrm2's scaling, and
     * the model's vectors are far from overflow */
    return sqrt(lnk_cv_dot(g, n, x, x));
}

/* Classical Gram-Schmidt twice ("twice is enough", Giraud et al. 2005):
 * each pass is two memory-bound dgemv over the k x n basis, the
 * coefficients summed over the group between them. */
double lnk_cv_orthogonalize(const lnk_group *g, const double *V, int k, size_t n, double *x,
                            double *h)
{
    int ni = (int)n;
    if (k <= 0)
        return lnk_cv_nrm2(g, n, x);
    for (int pass = 0; pass < 2; pass++) {
        double *c = h + pass * k;
        lnk_gemv(CblasNoTrans, k, ni, 1.0, V, ni, x, 1, 0.0, c, 1);
        if (g && gsum(g, c, k) != 0)
            return NAN;
        lnk_gemv(CblasTrans, k, ni, -1.0, V, ni, c, 1, 1.0, x, 1);
    }
    for (int i = 0; i < k; i++)
        h[i] += h[k + i];
    return lnk_cv_nrm2(g, n, x);
}

double lnk_orthogonalize(const double *V, int k, size_t n, double *x, double *h)
{
    return lnk_cv_orthogonalize(NULL, V, k, n, x, h);
}

/* Column block of the fused update: about this many bytes of basis rows (an
 * L2 cache; 256 KB to 16 MB measured within 10% at n = 6.8 M, j = 80). */
#define REORTH_BLOCK_BYTES (1024 * 1024)

/* Blocks a group of the fused update handles at once: their shares of
 * V_I x and ||x||^2 wait in part[block][K + 1] to be added in block order. */
#define REORTH_GROUP 256

typedef struct {
    const double *V;
    size_t n, nb;
    const int *runs;
    int nruns, K;
    double *x;
    const double *c;
    double *part;
    size_t blk0;
} reorth_job;

/* Blocks blk0 + [lo, hi) of a pass, each on its own columns: x -= V_I^T c,
 * then the block's V_I x and ||x||^2 into its row of part.  The same calls
 * (one BLAS thread) as one loop over the blocks made, and the shares are
 * added in block order after, so the bits do not depend on the threads. */
static void reorth_blocks(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const reorth_job *J = ctx;
    int ni = (int)J->n;
    for (size_t k = lo; k < hi; k++) {
        size_t c0 = (J->blk0 + k) * J->nb;
        int b = (int)(c0 + J->nb <= J->n ? J->nb : J->n - c0);
        double *p = J->part + k * (size_t)(J->K + 1);
        for (int r = 0, o = 0; r < J->nruns; o += J->runs[2 * r + 1] - J->runs[2 * r], r++)
            cblas_dgemv(CblasRowMajor, CblasTrans, J->runs[2 * r + 1] - J->runs[2 * r], b, -1.0,
                        J->V + (size_t)J->runs[2 * r] * J->n + c0, ni, J->c + o, 1, 1.0,
                        J->x + c0, 1);
        memset(p, 0, sizeof(double) * (size_t)J->K);
        for (int r = 0, o = 0; r < J->nruns; o += J->runs[2 * r + 1] - J->runs[2 * r], r++)
            cblas_dgemv(CblasRowMajor, CblasNoTrans, J->runs[2 * r + 1] - J->runs[2 * r], b, 1.0,
                        J->V + (size_t)J->runs[2 * r] * J->n + c0, ni, J->x + c0, 1, 1.0, p + o,
                        1);
        p[J->K] = cblas_ddot(b, J->x + c0, 1, J->x + c0, 1);
    }
}

double lnk_cv_reorth(const lnk_group *g, const double *V, size_t n, const int *runs, int nruns,
                     double *x, double nrm, double *h, double *work, double *rows_read)
{
    int K = 0;
    for (int r = 0; r < nruns; r++)
        K += runs[2 * r + 1] - runs[2 * r];
    if (K == 0)
        return nrm;
    double *c = work, *cn = work + K + 1; /* packed coefficients, run after run (+ ||x||^2) */
    int ni = (int)n;
    /* c = V_I x */
    for (int r = 0, o = 0; r < nruns; o += runs[2 * r + 1] - runs[2 * r], r++)
        lnk_gemv(CblasNoTrans, runs[2 * r + 1] - runs[2 * r], ni, 1.0,
                    V + (size_t)runs[2 * r] * n, ni, x, 1, 0.0, c + o, 1);
    if (g && gsum(g, c, K) != 0)
        return NAN;
    double reads = K;
    size_t nb = REORTH_BLOCK_BYTES / (sizeof(double) * (size_t)K);
    nb = nb < 256 ? 256 : nb > n ? n : nb;
    size_t nblk = (n + nb - 1) / nb;
    double *part = malloc(sizeof(double) * (size_t)REORTH_GROUP * (size_t)(K + 1));
    if (!part)
        return NAN;
    reorth_job J = {V, n, nb, runs, nruns, K, x, NULL, part, 0};
    for (int pass = 1;; pass++) {
        /* x -= V_I^T c and cn = V_I x, ||x||^2, block by block: the blocks of
         * a group on the pool, their shares of cn added in block order */
        memset(cn, 0, sizeof(double) * (size_t)(K + 1));
        J.c = c;
        for (size_t g0 = 0; g0 < nblk; g0 += REORTH_GROUP) {
            size_t ng = nblk - g0 < REORTH_GROUP ? nblk - g0 : REORTH_GROUP;
            J.blk0 = g0;
            int t = lnk_blas1_begin();
            lnk_par_for_threads(t, ng, 1, 0, NULL, reorth_blocks, &J);
            lnk_blas1_end(t);
            for (size_t k = 0; k < ng; k++)
                for (int i = 0; i <= K; i++)
                    cn[i] += part[k * (size_t)(K + 1) + i];
        }
        reads += K;
        if (g && gsum(g, cn, K + 1) != 0) {
            free(part);
            return NAN;
        }
        for (int r = 0, o = 0; r < nruns; r++)
            for (int i = runs[2 * r]; i < runs[2 * r + 1]; i++, o++)
                h[i] += c[o];
        double nn = sqrt(cn[K]);
        /* DGKS: another pass only if this one removed much of x */
        if (nn >= M_SQRT1_2 * nrm || pass == 3) {
            nrm = nn;
            break;
        }
        nrm = nn;
        double *t = c;
        c = cn, cn = t;
    }
    free(part);
    if (rows_read)
        *rows_read += reads;
    return nrm;
}

void lnk_cv_normalise_sign(const lnk_group *g, double *y, size_t n)
{
    int ni = (int)n;
    double nrm = lnk_cv_nrm2(g, n, y);
    if (nrm > 0)
        cblas_dscal(ni, 1.0 / nrm, y, 1);
    int i = (int)cblas_idamax(ni, y, 1);
    double sign = y[i] < 0 ? -1.0 : 1.0;
    if (g) {
        /* every member's largest |y| and its sign, in slot rank of a
         * size-long array (zeros elsewhere: the sum is exact); the first
         * member holding the global maximum decides, as idamax would */
        double *slot = calloc(2 * (size_t)g->size, sizeof(double));
        if (!slot) {
            for (size_t t = 0; t < n; t++)
                y[t] = NAN;
            return;
        }
        slot[2 * g->rank] = fabs(y[i]);
        slot[2 * g->rank + 1] = sign;
        if (gsum(g, slot, 2 * g->size) != 0)
            sign = NAN;
        else {
            int best = 0;
            for (int r = 1; r < g->size; r++)
                if (slot[2 * r] > slot[2 * best])
                    best = r;
            sign = slot[2 * best + 1];
        }
        free(slot);
    }
    if (sign != 1.0)
        cblas_dscal(ni, sign, y, 1);
}

int lnk_cv_check_same(const lnk_group *g, const double *x, size_t n, const char *what)
{
    if (!g || g->size == 1)
        return 0;
    /* FNV-1a of the bytes, as two 32-bit halves: exact in doubles */
    uint64_t hsh = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof(double); i++)
        hsh = (hsh ^ b[i]) * 0x100000001b3ull;
    double *slot = calloc(2 * (size_t)g->size, sizeof(double));
    if (!slot)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", what);
    slot[2 * g->rank] = (double)(hsh >> 32);
    slot[2 * g->rank + 1] = (double)(hsh & 0xffffffffu);
    int st = gsum(g, slot, 2 * g->size);
    for (int r = 1; r < g->size && !st; r++)
        if (slot[2 * r] != slot[0] || slot[2 * r + 1] != slot[1])
            st = lnk_error(LNK_EINVAL, "%s: rank %d's tridiagonal differs from rank 0's: the "
                           "group's sums are not deterministic", what, r);
    free(slot);
    return st;
}
