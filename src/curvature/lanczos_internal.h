/* lnkit internal: the Lanczos steps that lanczos.c (the iteration) takes
 * from lanczos_reorth.c (breakdown restart, partial reorthogonalisation);
 * see include/lnkit/curvature.h. */
#ifndef LNK_CURVATURE_LANCZOS_INTERNAL_H
#define LNK_CURVATURE_LANCZOS_INTERNAL_H

#include "lnkit/curvature.h"

/* A fresh direction after a breakdown into x: a Gaussian vector (stream
 * LNK_STREAM_RESTART + restart count) orthogonalised against the j stored
 * vectors.  1 if it has something left, 0 if not, -1 if no stream. */
int lnk_lz_restart_vector(lnk_lanczos *w, int j, double *x);
/* Simon's thresholds: rounding level eps1, semi-orthogonality delta, and
 * the level eta of the rows reorthogonalised beside a large omega. */
void lnk_lz_pro_levels(const lnk_lanczos *w, double *eps1, double *delta, double *eta);
/* Step j's w = x (norm r, alpha *a so far) after the three-term recurrence:
 * local and partial reorthogonalisation.  Returns ||x|| (NaN if a
 * reduction failed). */
double lnk_lz_partial_reorth(lnk_lanczos *w, int j, double *x, double *a, double r);

#endif
