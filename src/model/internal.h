/* lnkit model internals: the model as stacks of residual units.
 *
 * A block is a list of units; a unit is one residual sub-layer F (self-
 * attention, cross-attention or feed-forward) with up to three norms
 * (MODEL.md §3):
 *   out = N_post(alpha x + N_out(F(N_in(x))))
 * each N the identity or a norm with its own parameters:
 *   post: N_post          pre: N_in          peri: N_in, N_out
 *   out: N_out            deepnorm: N_post, alpha      mix: post or pre by layer
 * With the norm type none every N is the identity.  Encoder block = [self-
 * attn, ffn]; decoder block = [causal self-attn, (cross-attn,) ffn].  A stack
 * is its units in order plus, for pre, peri, out and mix, a final norm.
 * Parameter tensors are referred to by their index in the layout (-1: absent).
 */
#ifndef LNK_MODEL_INTERNAL_H
#define LNK_MODEL_INTERNAL_H

#include "lnkit/model.h"

typedef enum { UNIT_SELF_ATTN, UNIT_CROSS_ATTN, UNIT_FFN } unit_kind;

/* One norm slot of a unit: on (the slot is a norm, not the identity: its
 * placement has it and the norm type is not none), gain and bias tensors. */
typedef struct {
    int on, g, b;
} lnk_norm_ref;

typedef struct {
    unit_kind kind;
    int causal;
    int block;                                 /* block index l */
    int wq, bq, wk, bk, wv, bv, wo, bo;        /* attention tensors */
    int w1, b1, w3, b3, w2, b2;                /* ffn tensors (w3, b3: SwiGLU's gate) */
    int post;                                  /* the unit's placement is Post-LN-like
                                                  (post, deepnorm, a Post-LN layer of mix) */
    lnk_norm_ref nin, nout, npost;             /* N_in, N_out, N_post */
    double alpha;                              /* residual scale (DeepNorm), else 1 */
    int rope;                                  /* rotary positions on q and k */
} lnk_unit;

typedef struct {
    int n_units;
    lnk_unit *u;
    int L;
    int emb;                                   /* embedding tensor */
    int pos;                                   /* learned position table, -1 if none */
    int fg, fb;                                /* final norm, -1 if absent */
    int causal;
    double alpha, beta;                        /* DeepNorm's constants of the stack */
} lnk_stack;

struct lnk_model {
    lnk_config cfg;
    lnk_layout lay;
    lnk_stack enc, dec;                        /* n_units == 0 when absent */
    int out_w;                                 /* out.w, or -1 when tied */
    int out_tied;                              /* tensor used as W_out^T when tied */
    int n_out;                                 /* output classes C */
    int has_enc, has_dec;
    lnk_pass_progress_fn progress;             /* lnk_model_set_progress (NULL: none) */
    void *progress_ctx;
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

/* Does a stack of the configuration end with a final norm (MODEL.md §3)? */
static inline int lnk_has_final_norm(const lnk_config *c)
{
    return c->norm != LNK_NORM_NONE && c->norm_pos != LNK_POS_POST &&
           c->norm_pos != LNK_POS_DEEPNORM;
}

#endif
