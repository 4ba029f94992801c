/* The model's passes, internal to src/model (math in include/lnkit/model.h):
 *   sublayer.c  a unit's sub-layer F (attention, FFN): forward, tangent,
 *               reverse and reverse tangent
 *   stack.c     the units composed with their norms and residuals
 *               (model/internal.h), the embedding and the final norm, for a
 *               whole stack, in the same four sweeps
 *   model.c     the passes over the stacks, the output layer and the loss
 *   ggn.c       the Gauss-Newton product over the same sweeps
 * A "pass" names what one sweep reads and writes. */
#ifndef LNK_MODEL_PASS_H
#define LNK_MODEL_PASS_H

#include "lnkit/hessian.h"
#include "model/workspace.h"

/* What one pass computes. */
typedef struct {
    lnk_workspace *ws;
    const lnk_model *m;
    lnk_primal *pr;
    const double *th;   /* theta */
    const double *v;    /* direction (tangent pass) */
    double *grad;       /* dL/dtheta, accumulated (NULL: skip parameter gradients) */
    double *hv;         /* R{dL/dtheta} = H v, accumulated (tangent pass) */
    int B;
} pass;

#define P(i) lnk_tp(m, p->th, (i))
#define V(i) lnk_tp(m, p->v, (i))
#define G(i) lnk_tpw(m, p->grad, (i))
#define HV(i) lnk_tpw(m, p->hv, (i))

/* ---- sub-layers F (sublayer.c).  h: F's input (the query side), kv: the
 * key/value side (h itself for self-attention), T positions of the query
 * side (the rotary positions' rows), Tk of the key side; out: F's output;
 * the reverse sweeps accumulate dL/dh into dh (and dL/dkv into dkv). */
void lnk_attn_unit_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h,
                       const double *kv, const uint8_t *kmask, int Tq, int Tk, double *out);
void lnk_ffn_unit_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h, int R,
                      double *out);
void lnk_attn_unit_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                         const double *h, const double *ht, const double *kv, const double *kvt,
                         int Tq, int Tk, double *outt);
void lnk_ffn_unit_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                        const double *h, const double *ht, int R, double *outt);
void lnk_attn_unit_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                       const double *h, const double *kv, int Tq, int Tk, const double *dF,
                       double *dh, double *dkv);
void lnk_ffn_unit_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                      const double *h, int R, const double *dF, double *dh);
void lnk_attn_unit_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                         const unit_adj *g, const double *h, const double *ht, const double *kv,
                         const double *kvt, int Tq, int Tk, const double *dF, const double *dFt,
                         double *dht, double *dkvt);
void lnk_ffn_unit_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                        const unit_adj *g, const double *h, const double *ht, int R,
                        const double *dF, const double *dFt, double *dht);

/* ---- stacks (stack.c).  mem, memt: the encoder output and its tangent for
 * cross-attention (Tm positions, mmask its pads). */
/* Forward of one stack (sp: its primal state). */
void lnk_stack_fwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T, const double *mem,
                   const uint8_t *mmask, int Tm);
/* A span of the forward sweep, per stack: the level from which the tangent
 * pass computes (0: the embeddings on, everything; k + 1: from unit k on;
 * n_units + 1: the final norm; n_units + 2: nothing of the stack).  A
 * product whose v is zero below the span, and of which only the span's
 * tensors are read, skips the rest: every tangent below is zero, and no
 * tensor below is read.  lnk_model_span gives a block's. */
typedef struct {
    int enc, dec;
} lnk_span;
static const lnk_span lnk_span_all = {0, 0}; /* everything: a full product */
void lnk_model_span(const lnk_model *m, const lnk_block *b, lnk_span *out);
/* Tangents of one stack's activations into ta, from level from on (the
 * tangent entering it zero; above n_units + 1, the stack's output's zero). */
void lnk_stack_fwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp, stack_act *ta,
                     int T, const double *mem, const double *memt, int Tm, int from);
/* Reverse through one stack.  On entry sp->gz holds dL/dz; every unit's
 * adjoints are kept in sp->g, the embedding's gradient accumulated (with
 * p->grad) and, for a decoder with cross-attention, gmem accumulates
 * dL/d(encoder output). */
void lnk_stack_bwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T, const double *mem,
                   int Tm, double *gmem, int from);
/* R{} of one stack's reverse sweep.  On entry ws->gt.gy holds R{dL/dz}; H v
 * gets the stack's parameters' part and gmemt accumulates R{dL/d(encoder
 * output)} for a decoder with cross-attention. */
void lnk_stack_bwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp, const stack_act *ta,
                     int T, const double *mem, const double *memt, int Tm, double *gmemt,
                     int from);

/* ---- passes (model.c), for ggn.c. */
/* What the primal state of a workspace holds. */
enum { PRIMAL_NONE = 0, PRIMAL_FORWARD = 1, PRIMAL_FULL = 2 };
/* The output layer's weight tensor and whether it is used transposed (tied). */
int lnk_model_out_weight(const lnk_model *m, int *wt);
/* The tangent pass: hv = H v from the full primal state in use; with a span
 * (NULL: everything), v must be zero below it and only the span's tensors
 * of hv are computed (the others are left 0). */
int lnk_model_tangent_pass(lnk_workspace *ws, const double *v, double *hv, const lnk_span *span);
/* lnk_model_ggn_apply over a span, as lnk_model_tangent_pass. */
int lnk_model_ggn_apply_span(lnk_workspace *ws, const double *v, double *hv, double *gv,
                             const lnk_span *span);

#endif
