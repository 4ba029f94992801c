/* Scaled dot-product attention core over all (batch row, head) pairs:
 * forward, tangent, backward, backward tangent (math in layers.h).
 * Per pair the products are small dgemm calls on strided head slices
 * (leading dimension d), so no head is ever copied out.  Pairs are
 * independent (each writes its own head slices and attention matrix) and
 * are split over the BLAS threads (core/par.h); the small GEMMs then run
 * one a thread, as OpenBLAS runs them on one thread anyway. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "core/blas_fixed.h"
#include "core/par.h"
#include "layers/layers.h"

/* The arguments of one call, for its pair parts. */
typedef struct {
    double *ctx, *a;                              /* forward / tangent outputs */
    double *dq, *dk, *dv;                         /* backward (tangent) outputs */
    const double *q, *k, *v, *qd, *kd, *vd;       /* primal and tangent inputs */
    const double *A, *Ad, *dctx, *dctxd;          /* primal / tangent attention, adjoints */
    const uint8_t *kmask;
    int h, Tq, Tk, d, causal;
} attn_job;

/* Pairs a part takes at least: some thousands of multiply-adds. */
static size_t pair_grain(int Tq, int Tk, int d, int h)
{
    return lnk_par_grain((size_t)Tq * (size_t)Tk * (size_t)(d / h) / 8);
}

#define GEMM(TA, TB, M, N, K, al, A, lda, Bm, ldb, be, C, ldc)                                    \
    cblas_dgemm(CblasRowMajor, TA, TB, M, N, K, al, A, lda, Bm, ldb, be, C, ldc)
/* The (batch, head) pairs on the pool with OpenBLAS on one thread inside,
 * so that a pair's GEMMs round the same on every thread count
 * (core/blas_fixed.h). */
static void pairs_for(size_t n, size_t grain, size_t scratch_n, double *scratch, lnk_par_fn fn,
                      void *ctx)
{
    int t = lnk_blas1_begin();
    lnk_par_for_threads(t, n, grain, scratch_n, scratch, fn, ctx);
    lnk_blas1_end(t);
}

#define NT CblasNoTrans
#define TR CblasTrans

/* In place: x <- A o (x - rowsum(A o x)), row by row (the softmax Jacobian applied to x). */
static void softmax_jvp(double *x, const double *A, int Tq, int Tk)
{
    for (int t = 0; t < Tq; t++) {
        double *xr = x + (size_t)t * Tk;
        const double *ar = A + (size_t)t * Tk;
        double s = 0;
        for (int u = 0; u < Tk; u++)
            s += ar[u] * xr[u];
        for (int u = 0; u < Tk; u++)
            xr[u] = ar[u] * (xr[u] - s);
    }
}

static void forward_pairs(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const attn_job *J = ctx;
    int h = J->h, Tq = J->Tq, Tk = J->Tk, d = J->d, dk = d / h;
    double scale = 1.0 / sqrt((double)dk);
    for (size_t p = lo; p < hi; p++) {
        int b = (int)(p / (size_t)h), j = (int)(p % (size_t)h);
        const uint8_t *km = J->kmask + (size_t)b * Tk;
        const double *qb = J->q + (size_t)b * Tq * d + j * dk;
        const double *kb = J->k + (size_t)b * Tk * d + j * dk;
        const double *vb = J->v + (size_t)b * Tk * d + j * dk;
        double *A = J->a + p * Tq * Tk;
        GEMM(NT, TR, Tq, Tk, dk, scale, qb, d, kb, d, 0.0, A, Tk);
        for (int t = 0; t < Tq; t++) {
            double *row = A + (size_t)t * Tk, mx = -INFINITY, sum = 0;
            int lim = J->causal ? t + 1 : Tk;
            for (int u = 0; u < lim; u++)
                if (!km[u] && row[u] > mx)
                    mx = row[u];
            for (int u = 0; u < Tk; u++) {
                double e = (u < lim && !km[u]) ? exp(row[u] - mx) : 0.0;
                row[u] = e;
                sum += e;
            }
            double inv = 1.0 / sum;
            for (int u = 0; u < Tk; u++)
                row[u] *= inv;
        }
        GEMM(NT, NT, Tq, dk, Tk, 1.0, A, Tk, vb, d, 0.0, J->ctx + (size_t)b * Tq * d + j * dk, d);
    }
}

void lnk_attn_forward(double *ctx, double *a, const double *q, const double *k, const double *v,
                      const uint8_t *kmask, int B, int Tq, int Tk, int d, int h, int causal)
{
    attn_job J = {.ctx = ctx, .a = a, .q = q, .k = k, .v = v, .kmask = kmask, .h = h, .Tq = Tq,
                  .Tk = Tk, .d = d, .causal = causal};
    pairs_for((size_t)B * h, pair_grain(Tq, Tk, d, h), 0, NULL, forward_pairs, &J);
}

static void tangent_pairs(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const attn_job *J = ctx;
    int h = J->h, Tq = J->Tq, Tk = J->Tk, d = J->d, dk = d / h;
    double scale = 1.0 / sqrt((double)dk);
    for (size_t p = lo; p < hi; p++) {
        int b = (int)(p / (size_t)h), j = (int)(p % (size_t)h);
        size_t oq = (size_t)b * Tq * d + j * dk, ok = (size_t)b * Tk * d + j * dk;
        size_t oa = p * Tq * Tk;
        const double *A = J->A + oa;
        double *Ad = J->a + oa;
        /* R{S} = (R{q} k^T + q R{k}^T) / sqrt(dk), then R{A} = softmax JVP */
        GEMM(NT, TR, Tq, Tk, dk, scale, J->qd + oq, d, J->k + ok, d, 0.0, Ad, Tk);
        GEMM(NT, TR, Tq, Tk, dk, scale, J->q + oq, d, J->kd + ok, d, 1.0, Ad, Tk);
        softmax_jvp(Ad, A, Tq, Tk);
        GEMM(NT, NT, Tq, dk, Tk, 1.0, Ad, Tk, J->v + ok, d, 0.0, J->ctx + oq, d);
        GEMM(NT, NT, Tq, dk, Tk, 1.0, A, Tk, J->vd + ok, d, 1.0, J->ctx + oq, d);
    }
}

void lnk_attn_tangent(double *ctxdot, double *adot, const double *qdot, const double *kdot,
                      const double *vdot, const double *a, const double *q, const double *k,
                      const double *v, int B, int Tq, int Tk, int d, int h)
{
    attn_job J = {.ctx = ctxdot, .a = adot, .qd = qdot, .kd = kdot, .vd = vdot, .A = a, .q = q,
                  .k = k, .v = v, .h = h, .Tq = Tq, .Tk = Tk, .d = d};
    pairs_for((size_t)B * h, pair_grain(Tq, Tk, d, h), 0, NULL, tangent_pairs, &J);
}

static void backward_pairs(void *ctx, size_t lo, size_t hi, double *dS)
{
    const attn_job *J = ctx;
    int h = J->h, Tq = J->Tq, Tk = J->Tk, d = J->d, dkh = d / h;
    double scale = 1.0 / sqrt((double)dkh);
    for (size_t p = lo; p < hi; p++) {
        int b = (int)(p / (size_t)h), j = (int)(p % (size_t)h);
        size_t oq = (size_t)b * Tq * d + j * dkh, ok = (size_t)b * Tk * d + j * dkh;
        const double *A = J->A + p * Tq * Tk;
        GEMM(NT, TR, Tq, Tk, dkh, 1.0, J->dctx + oq, d, J->v + ok, d, 0.0, dS, Tk); /* dA */
        GEMM(TR, NT, Tk, dkh, Tq, 1.0, A, Tk, J->dctx + oq, d, 0.0, J->dv + ok, d);
        softmax_jvp(dS, A, Tq, Tk); /* the softmax Jacobian is symmetric */
        GEMM(NT, NT, Tq, dkh, Tk, scale, dS, Tk, J->k + ok, d, 0.0, J->dq + oq, d);
        GEMM(TR, NT, Tk, dkh, Tq, scale, dS, Tk, J->q + oq, d, 0.0, J->dk + ok, d);
    }
}

void lnk_attn_backward(double *dq, double *dk, double *dv, const double *dctx, const double *a,
                       const double *q, const double *k, const double *v, double *scratch,
                       int B, int Tq, int Tk, int d, int h)
{
    attn_job J = {.dq = dq, .dk = dk, .dv = dv, .dctx = dctx, .A = a, .q = q, .k = k, .v = v,
                  .h = h, .Tq = Tq, .Tk = Tk, .d = d};
    pairs_for((size_t)B * h, pair_grain(Tq, Tk, d, h), (size_t)Tq * Tk, scratch,
                backward_pairs, &J);
}

static void backward_tangent_pairs(void *ctx, size_t lo, size_t hi, double *scratch)
{
    const attn_job *J = ctx;
    int h = J->h, Tq = J->Tq, Tk = J->Tk, d = J->d, dkh = d / h;
    double scale = 1.0 / sqrt((double)dkh);
    size_t TT = (size_t)Tq * Tk;
    double *dA = scratch, *dAd = scratch + TT;
    const double *dctx = J->dctx, *dctxdot = J->dctxd, *q = J->q, *k = J->k, *v = J->v;
    const double *qdot = J->qd, *kdot = J->kd, *vdot = J->vd;
    double *dqdot = J->dq, *dkdot = J->dk, *dvdot = J->dv;
    for (size_t p = lo; p < hi; p++) {
        int b = (int)(p / (size_t)h), j = (int)(p % (size_t)h);
        size_t oq = (size_t)b * Tq * d + j * dkh, ok = (size_t)b * Tk * d + j * dkh;
        size_t oa = p * TT;
        const double *A = J->A + oa, *Ad = J->Ad + oa;
        GEMM(NT, TR, Tq, Tk, dkh, 1.0, dctx + oq, d, v + ok, d, 0.0, dA, Tk);
        GEMM(NT, TR, Tq, Tk, dkh, 1.0, dctxdot + oq, d, v + ok, d, 0.0, dAd, Tk);
        GEMM(NT, TR, Tq, Tk, dkh, 1.0, dctx + oq, d, vdot + ok, d, 1.0, dAd, Tk);
        /* R{dv} = R{A}^T dctx + A^T R{dctx} */
        GEMM(TR, NT, Tk, dkh, Tq, 1.0, Ad, Tk, dctx + oq, d, 0.0, dvdot + ok, d);
        GEMM(TR, NT, Tk, dkh, Tq, 1.0, A, Tk, dctxdot + oq, d, 1.0, dvdot + ok, d);
        /* dS = A o (dA - c), R{dS} = R{A} o (dA - c) + A o (R{dA} - R{c}) */
        for (int t = 0; t < Tq; t++) {
            const double *ar = A + (size_t)t * Tk, *adr = Ad + (size_t)t * Tk;
            double *x = dA + (size_t)t * Tk, *xd = dAd + (size_t)t * Tk;
            double c = 0, cd = 0;
            for (int u = 0; u < Tk; u++) {
                c += ar[u] * x[u];
                cd += adr[u] * x[u] + ar[u] * xd[u];
            }
            for (int u = 0; u < Tk; u++) {
                double dS = ar[u] * (x[u] - c);
                xd[u] = adr[u] * (x[u] - c) + ar[u] * (xd[u] - cd);
                x[u] = dS;
            }
        }
        /* R{dq} = (R{dS} k + dS R{k}) s,  R{dk} = (R{dS}^T q + dS^T R{q}) s */
        GEMM(NT, NT, Tq, dkh, Tk, scale, dAd, Tk, k + ok, d, 0.0, dqdot + oq, d);
        GEMM(NT, NT, Tq, dkh, Tk, scale, dA, Tk, kdot + ok, d, 1.0, dqdot + oq, d);
        GEMM(TR, NT, Tk, dkh, Tq, scale, dAd, Tk, q + oq, d, 0.0, dkdot + ok, d);
        GEMM(TR, NT, Tk, dkh, Tq, scale, dA, Tk, qdot + oq, d, 1.0, dkdot + ok, d);
    }
}

void lnk_attn_backward_tangent(double *dqdot, double *dkdot, double *dvdot,
                               const double *dctxdot, const double *dctx, const double *adot,
                               const double *a, const double *qdot, const double *kdot,
                               const double *vdot, const double *q, const double *k,
                               const double *v, double *scratch, int B, int Tq, int Tk, int d,
                               int h)
{
    attn_job J = {.dq = dqdot, .dk = dkdot, .dv = dvdot, .dctxd = dctxdot, .dctx = dctx,
                  .Ad = adot, .A = a, .qd = qdot, .kd = kdot, .vd = vdot, .q = q, .k = k,
                  .v = v, .h = h, .Tq = Tq, .Tk = Tk, .d = d};
    pairs_for((size_t)B * h, pair_grain(Tq, Tk, d, h), 2 * (size_t)Tq * Tk, scratch,
                backward_tangent_pairs, &J);
}
