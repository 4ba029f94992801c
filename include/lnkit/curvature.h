/* lnkit: curvature of a symmetric operator: Lanczos, extremal eigenpairs,
 * trace estimation, spectral density by stochastic Lanczos quadrature.
 *
 * The routines see only an operator y = A x on n-vectors (lnk_operator), so
 * they are tested on plain matrices and reused for the model's Hessian, a
 * block of it, or a data-set sum (see include/lnkit/hessian.h). */
#ifndef LNKIT_CURVATURE_H
#define LNKIT_CURVATURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A symmetric linear operator.  apply writes y = A x (x and y do not alias)
 * and returns LNK_OK or an error status (with lnk_error's message). */
typedef struct {
    size_t n;
    void *ctx;
    int (*apply)(void *ctx, const double *x, double *y);
} lnk_operator;

/* ... the rest of the curvature API is declared below (helper-owned). */

#ifdef __cplusplus
}
#endif
#endif
