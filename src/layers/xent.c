/* Softmax cross-entropy with label smoothing (PyTorch's convention: the
 * smoothing term is the mean of -log p over all C columns).  Rows with a
 * negative label are not scored and get zero adjoints. */
#include <math.h>
#include <string.h>
#include "core/par.h"
#include "layers/layers.h"

double lnk_xent_forward(double *p, const double *logits, const int64_t *labels, int R, int C,
                        double a)
{
    double total = 0;
    for (int r = 0; r < R; r++) {
        const double *l = logits + (size_t)r * C;
        double *pr = p + (size_t)r * C;
        if (labels[r] < 0) {
            memset(pr, 0, sizeof(double) * C);
            continue;
        }
        /* p may alias logits: read everything needed from l before writing p */
        double mx = l[0], sum = 0, lsum = 0, ly = l[labels[r]];
        for (int c = 1; c < C; c++)
            if (l[c] > mx)
                mx = l[c];
        for (int c = 0; c < C; c++) {
            lsum += l[c];
            pr[c] = exp(l[c] - mx);
            sum += pr[c];
        }
        double lse = mx + log(sum), inv = 1.0 / sum;
        for (int c = 0; c < C; c++)
            pr[c] *= inv;
        total += (1.0 - a) * (lse - ly) + a * (lse - lsum / C);
    }
    return total;
}

void lnk_xent_backward(double *dlogits, const double *p, const int64_t *labels, int R, int C,
                       double a, double invN)
{
    double u = a / C;
    for (int r = 0; r < R; r++) {
        const double *pr = p + (size_t)r * C;
        double *dr = dlogits + (size_t)r * C;
        if (labels[r] < 0) {
            memset(dr, 0, sizeof(double) * C);
            continue;
        }
        for (int c = 0; c < C; c++)
            dr[c] = (pr[c] - u) * invN;
        dr[labels[r]] -= (1.0 - a) * invN;
    }
}

typedef struct {
    double *x;
    const double *p;
    const int64_t *labels;
    int C;
    double invN;
} xent_job;

/* Rows are independent: split over the BLAS threads (core/par.h). */
static void backward_tangent_rows(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const xent_job *J = ctx;
    int C = J->C;
    for (size_t r = lo; r < hi; r++) {
        const double *pr = J->p + r * C;
        double *x = J->x + r * C;
        if (J->labels[r] < 0) {
            memset(x, 0, sizeof(double) * C);
            continue;
        }
        double s = 0;
        for (int c = 0; c < C; c++)
            s += pr[c] * x[c];
        for (int c = 0; c < C; c++)
            x[c] = pr[c] * (x[c] - s) * J->invN;
    }
}

void lnk_xent_backward_tangent(double *ldot, const double *p, const int64_t *labels, int R, int C,
                               double invN)
{
    xent_job J = {ldot, p, labels, C, invN};
    lnk_par_for((size_t)R, lnk_par_grain((size_t)C), 0, NULL, backward_tangent_rows, &J);
}
