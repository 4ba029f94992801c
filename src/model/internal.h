/* lnkit model internals: the model as stacks of residual units.
 *
 * A block is a list of units; a unit is one residual sub-layer F (self-
 * attention, cross-attention or feed-forward) with its norm N:
 *   Post-LN: out = N(x + F(x))        Pre-LN: out = x + F(N(x))
 * Encoder block = [self-attn, ffn]; decoder block = [causal self-attn,
 * (cross-attn,) ffn].  A stack is its units in order plus, for Pre-LN, a
 * final norm.  Parameter tensors are referred to by their index in the layout.
 */
#ifndef LNK_MODEL_INTERNAL_H
#define LNK_MODEL_INTERNAL_H

#include "lnkit/model.h"

typedef enum { UNIT_SELF_ATTN, UNIT_CROSS_ATTN, UNIT_FFN } unit_kind;

typedef struct {
    unit_kind kind;
    int causal;
    int block;                                 /* block index l */
    int wq, bq, wk, bk, wv, bv, wo, bo;        /* attention tensors */
    int w1, b1, w2, b2;                        /* ffn tensors */
    int ng, nb;                                /* norm gain / bias, -1 if absent */
} lnk_unit;

typedef struct {
    int n_units;
    lnk_unit *u;
    int L;
    int emb;                                   /* embedding tensor */
    int fg, fb;                                /* final norm (Pre-LN), -1 if absent */
    int causal;
} lnk_stack;

struct lnk_model {
    lnk_config cfg;
    lnk_layout lay;
    lnk_stack enc, dec;                        /* n_units == 0 when absent */
    int out_w;                                 /* out.w, or -1 when tied */
    int out_tied;                              /* tensor used as W_out^T when tied */
    int n_out;                                 /* output classes C */
    int has_enc, has_dec;
};

/* Pointer to tensor i inside a flat vector (NULL for i < 0 or x NULL). */
static inline const double *lnk_tp(const lnk_model *m, const double *x, int i)
{
    return (i < 0 || !x) ? (const double *)0 : x + m->lay.t[i].offset;
}
static inline double *lnk_tpw(const lnk_model *m, double *x, int i)
{
    return (i < 0 || !x) ? (double *)0 : x + m->lay.t[i].offset;
}

#endif
