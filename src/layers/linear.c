/* Linear layer y = x W + b: forward, tangent, backward, backward tangent.
 * Every product is one CBLAS dgemm on the whole [R, in] matrix. */
#include <cblas.h>
#include <string.h>
#include "core/blas_fixed.h"
#include "core/par.h"
#include "layers/layers.h"

/* C[M,N] (beta) += alpha * X[M,in] W  with W [in,out] or, if wt, [out,in]. */
static void xw(double *C, const double *X, const double *W, int M, int in, int out, int wt,
               double beta)
{
    lnk_gemm(CblasNoTrans, wt ? CblasTrans : CblasNoTrans, M, out, in, 1.0, X,
                in, W, wt ? in : out, beta, C, out);
}

/* C[M,in] (beta) += D[M,out] W^T */
static void dwt(double *C, const double *D, const double *W, int M, int in, int out, int wt,
                double beta)
{
    lnk_gemm(CblasNoTrans, wt ? CblasNoTrans : CblasTrans, M, in, out, 1.0, D,
                out, W, wt ? in : out, beta, C, in);
}

/* dW += X^T D  ([in,out]), or for wt: dW += D^T X ([out,in]). */
static void xtd(double *dW, const double *X, const double *D, int M, int in, int out, int wt)
{
    if (wt)
        lnk_gemm(CblasTrans, CblasNoTrans, out, in, M, 1.0, D, out, X, in, 1.0,
                    dW, in);
    else
        lnk_gemm(CblasTrans, CblasNoTrans, in, out, M, 1.0, X, in, D, out, 1.0,
                    dW, out);
}

typedef struct {
    double *y;        /* add_bias: y += b row by row; colsum: db += colsum(dy) */
    const double *b;
    const double *dy;
    int R, out;
} bias_job;

static void add_bias_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const bias_job *J = ctx;
    for (size_t r = lo; r < hi; r++) {
        double *yr = J->y + r * J->out;
        for (int j = 0; j < J->out; j++)
            yr[j] += J->b[j];
    }
}

/* Rows split over the BLAS threads (core/par.h). */
static void add_bias(double *y, const double *b, int R, int out)
{
    if (!b)
        return;
    bias_job J = {y, b, NULL, R, out};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)out), 0, NULL, add_bias_rows, &J);
}

/* db[j] += sum over rows of dy[r][j] for the columns [lo, hi), rows in order. */
static void colsum_cols(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const bias_job *J = ctx;
    double *db = J->y;
    for (int r = 0; r < J->R; r++) {
        const double *dr = J->dy + (size_t)r * J->out;
        for (size_t j = lo; j < hi; j++)
            db[j] += dr[j];
    }
}

/* Columns split over the BLAS threads: each column's sum stays in row order. */
static void colsum_acc(double *db, const double *dy, int R, int out)
{
    bias_job J = {db, NULL, dy, R, out};
    lnk_par_for((size_t)out, lnk_par_grain((size_t)R), 0, NULL, colsum_cols, &J);
}

void lnk_linear_forward(double *y, const double *x, const double *W, const double *b, int R,
                        int in, int out, int wt)
{
    xw(y, x, W, R, in, out, wt, 0.0);
    add_bias(y, b, R, out);
}

void lnk_linear_tangent(double *ydot, const double *xdot, const double *x, const double *W,
                        const double *Wdot, const double *bdot, int R, int in, int out, int wt)
{
    double beta = 0.0;
    if (xdot) {
        xw(ydot, xdot, W, R, in, out, wt, beta);
        beta = 1.0;
    }
    if (Wdot) {
        xw(ydot, x, Wdot, R, in, out, wt, beta);
        beta = 1.0;
    }
    if (beta == 0.0)
        memset(ydot, 0, sizeof(double) * (size_t)R * out);
    add_bias(ydot, bdot, R, out);
}

void lnk_linear_backward(double *dx, double *dW, double *db, const double *dy, const double *x,
                         const double *W, int R, int in, int out, int wt, int accum)
{
    if (dx)
        dwt(dx, dy, W, R, in, out, wt, accum ? 1.0 : 0.0);
    if (dW)
        xtd(dW, x, dy, R, in, out, wt);
    if (db)
        colsum_acc(db, dy, R, out);
}

void lnk_linear_backward_tangent(double *dxdot, double *dWdot, double *dbdot,
                                 const double *dydot, const double *dy, const double *xdot,
                                 const double *x, const double *W, const double *Wdot, int R,
                                 int in, int out, int wt, int accum)
{
    if (dxdot) {
        dwt(dxdot, dydot, W, R, in, out, wt, accum ? 1.0 : 0.0);
        if (Wdot)
            dwt(dxdot, dy, Wdot, R, in, out, wt, 1.0);
    }
    if (dWdot) {
        if (xdot)
            xtd(dWdot, xdot, dy, R, in, out, wt);
        xtd(dWdot, x, dydot, R, in, out, wt);
    }
    if (dbdot)
        colsum_acc(dbdot, dydot, R, out);
}
