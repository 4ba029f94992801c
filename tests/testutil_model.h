/* Helpers of the model tests (testutil_model.c). */
#ifndef LNK_TESTUTIL_MODEL_H
#define LNK_TESTUTIL_MODEL_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "lnkit/model.h"

static const double U = DBL_EPSILON / 2; /* unit roundoff */

/* A model fixture: finalized config, model, initialised theta. */
typedef struct {
    lnk_config c;
    lnk_model *m;
    size_t n;
    double *th;
} fx;

/* FX_OPEN(&f, "key=value", ...): finalized config, model, initialised theta. */
#define FX_OPEN(f, ...) fx_model((f), tu_config(__VA_ARGS__, NULL))
void fx_model(fx *f, lnk_config c);
void fx_close(fx *f);

/* lnk_workspace_alloc, failing the test if it fails. */
lnk_workspace *tm_ws_new(const lnk_model *m, int B, int S, int T, unsigned flags);
/* Tensor by name inside a flat vector (fails the test if absent). */
double *tm_tens(const lnk_model *m, double *x, const char *name, size_t *size);
/* A batch with rows of the given lengths (<pad> after them): src ids uniform in
 * [4, V_src), labels in [0, n_classes), tgt = <bos> then ids in [4, V_tgt). */
void tm_batch_make(const lnk_model *m, lnk_batch *b, int B, int S, const int *slen, int T,
                   const int *tlen, uint64_t seed);
/* Does s end with suf? */
int tm_ends_with(const char *s, const char *suf);
/* max |x_i|. */
double tm_maxabs(const double *x, size_t n);

#endif
