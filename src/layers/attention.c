/* Scaled dot-product attention core over all (batch row, head) pairs:
 * forward, tangent, backward, backward tangent (math in layers.h).
 * Per pair the products are small dgemm calls on strided head slices
 * (leading dimension d), so no head is ever copied out. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "layers/layers.h"

#define GEMM(TA, TB, M, N, K, al, A, lda, Bm, ldb, be, C, ldc)                                    \
    cblas_dgemm(CblasRowMajor, TA, TB, M, N, K, al, A, lda, Bm, ldb, be, C, ldc)
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

void lnk_attn_forward(double *ctx, double *a, const double *q, const double *k, const double *v,
                      const uint8_t *kmask, int B, int Tq, int Tk, int d, int h, int causal)
{
    int dk = d / h;
    double scale = 1.0 / sqrt((double)dk);
    for (int b = 0; b < B; b++) {
        const uint8_t *km = kmask + (size_t)b * Tk;
        for (int j = 0; j < h; j++) {
            const double *qb = q + (size_t)b * Tq * d + j * dk;
            const double *kb = k + (size_t)b * Tk * d + j * dk;
            const double *vb = v + (size_t)b * Tk * d + j * dk;
            double *A = a + ((size_t)b * h + j) * Tq * Tk;
            GEMM(NT, TR, Tq, Tk, dk, scale, qb, d, kb, d, 0.0, A, Tk);
            for (int t = 0; t < Tq; t++) {
                double *row = A + (size_t)t * Tk, mx = -INFINITY, sum = 0;
                int lim = causal ? t + 1 : Tk;
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
            GEMM(NT, NT, Tq, dk, Tk, 1.0, A, Tk, vb, d, 0.0, ctx + (size_t)b * Tq * d + j * dk, d);
        }
    }
}

void lnk_attn_tangent(double *ctxdot, double *adot, const double *qdot, const double *kdot,
                      const double *vdot, const double *a, const double *q, const double *k,
                      const double *v, int B, int Tq, int Tk, int d, int h)
{
    int dk = d / h;
    double scale = 1.0 / sqrt((double)dk);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < h; j++) {
            size_t oq = (size_t)b * Tq * d + j * dk, ok = (size_t)b * Tk * d + j * dk;
            size_t oa = ((size_t)b * h + j) * Tq * Tk;
            const double *A = a + oa;
            double *Ad = adot + oa;
            /* R{S} = (R{q} k^T + q R{k}^T) / sqrt(dk), then R{A} = softmax JVP */
            GEMM(NT, TR, Tq, Tk, dk, scale, qdot + oq, d, k + ok, d, 0.0, Ad, Tk);
            GEMM(NT, TR, Tq, Tk, dk, scale, q + oq, d, kdot + ok, d, 1.0, Ad, Tk);
            softmax_jvp(Ad, A, Tq, Tk);
            GEMM(NT, NT, Tq, dk, Tk, 1.0, Ad, Tk, v + ok, d, 0.0, ctxdot + oq, d);
            GEMM(NT, NT, Tq, dk, Tk, 1.0, A, Tk, vdot + ok, d, 1.0, ctxdot + oq, d);
        }
}

void lnk_attn_backward(double *dq, double *dk, double *dv, const double *dctx, const double *a,
                       const double *q, const double *k, const double *v, double *scratch,
                       int B, int Tq, int Tk, int d, int h)
{
    int dkh = d / h;
    double scale = 1.0 / sqrt((double)dkh);
    double *dS = scratch;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < h; j++) {
            size_t oq = (size_t)b * Tq * d + j * dkh, ok = (size_t)b * Tk * d + j * dkh;
            const double *A = a + ((size_t)b * h + j) * Tq * Tk;
            GEMM(NT, TR, Tq, Tk, dkh, 1.0, dctx + oq, d, v + ok, d, 0.0, dS, Tk); /* dA */
            GEMM(TR, NT, Tk, dkh, Tq, 1.0, A, Tk, dctx + oq, d, 0.0, dv + ok, d);
            softmax_jvp(dS, A, Tq, Tk); /* the softmax Jacobian is symmetric */
            GEMM(NT, NT, Tq, dkh, Tk, scale, dS, Tk, k + ok, d, 0.0, dq + oq, d);
            GEMM(TR, NT, Tk, dkh, Tq, scale, dS, Tk, q + oq, d, 0.0, dk + ok, d);
        }
}

void lnk_attn_backward_tangent(double *dqdot, double *dkdot, double *dvdot,
                               const double *dctxdot, const double *dctx, const double *adot,
                               const double *a, const double *qdot, const double *kdot,
                               const double *vdot, const double *q, const double *k,
                               const double *v, double *scratch, int B, int Tq, int Tk, int d,
                               int h)
{
    int dkh = d / h;
    double scale = 1.0 / sqrt((double)dkh);
    size_t TT = (size_t)Tq * Tk;
    double *dA = scratch, *dAd = scratch + TT;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < h; j++) {
            size_t oq = (size_t)b * Tq * d + j * dkh, ok = (size_t)b * Tk * d + j * dkh;
            size_t oa = ((size_t)b * h + j) * TT;
            const double *A = a + oa, *Ad = adot + oa;
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
