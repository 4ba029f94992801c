/* Loss, gradient and exact Hessian-vector product of the model (math in
 * include/lnkit/model.h).
 *
 * Two passes over the units, each a forward and a reverse sweep:
 *   the primal pass: forward activations, the loss, and the reverse sweep of
 *     adjoints (with the parameter gradient when asked for); it runs once per
 *     (weights, batch) and its results stay in the workspace's primal state;
 *   the tangent pass (H v only): R{.} of every activation forward, then R{.}
 *     of every adjoint backward, reading the primal state, which it never
 *     writes.
 * lnk_model_hvp is the primal pass then the tangent pass; products at the
 * same weights and batch repeat only the tangent pass (lnk_model_hvp_apply),
 * with the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "layers/layers.h"
#include "lnkit/error.h"
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

static int norm_center(const lnk_config *c) { return c->norm == LNK_NORM_LAYERNORM; }

static void add_into(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

static void copy(double *y, const double *x, size_t n) { memcpy(y, x, n * sizeof(double)); }

/* ========================================================== primal forward */

/* out = N(x) with the norm's gain g_i / bias b_i (either may be -1). */
static void norm_fwd(const pass *p, norm_buf *nb, const double *x, int gi, int bi, int R)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    if (c->norm == LNK_NORM_NONE)
        return; /* out aliases x */
    lnk_norm_forward(nb->out, nb->xhat, nb->r, x, P(gi), P(bi), R, c->d, norm_center(c), c->eps);
}

/* F of an attention unit: out = MHA(h, kv). */
static void attn_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h,
                     const double *kv, const uint8_t *kmask, int Tq, int Tk, double *out)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    lnk_linear_forward(b->q, h, P(u->wq), P(u->bq), Rq, d, d, 0);
    lnk_linear_forward(b->k, kv, P(u->wk), P(u->bk), Rk, d, d, 0);
    lnk_linear_forward(b->v, kv, P(u->wv), P(u->bv), Rk, d, d, 0);
    if (qk) { /* per-head norm over d_k: the [R, d] matrix is a [R*h, d_k] one */
        lnk_norm_forward(b->qn, b->qn, b->qr, b->q, NULL, NULL, Rq * hh, dk, qc, c->eps);
        lnk_norm_forward(b->kn, b->kn, b->kr, b->k, NULL, NULL, Rk * hh, dk, qc, c->eps);
    }
    lnk_attn_forward(b->ctx, b->a, b->qn, b->kn, b->v, kmask, B, Tq, Tk, d, hh, u->causal);
    lnk_linear_forward(out, b->ctx, P(u->wo), P(u->bo), Rq, d, d, 0);
}

/* F of a feed-forward unit: out = ReLU(h W1 + b1) W2 + b2. */
static void ffn_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h, int R,
                    double *out)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    lnk_linear_forward(b->hpre, h, P(u->w1), P(u->b1), R, d, f, 0);
    lnk_relu_forward(b->hact, b->hpre, (size_t)R * f);
    lnk_linear_forward(out, b->hact, P(u->w2), P(u->b2), R, f, d, 0);
}

/* Run one stack forward.  mem: encoder output for cross-attention. */
static void stack_fwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T,
                      const double *mem, const uint8_t *mmask, int Tm)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST;
    size_t n = (size_t)R * d;
    stack_act *s = &sp->a;
    lnk_embed_forward(s->x[0], sp->ids, P(st->emb), R, T, d);
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        unit_buf *b = &s->u[k];
        const double *x = s->x[k], *h = x;
        /* F's input h and where F writes: post: s = x + F(x); pre: x' = x + F(N(x)) */
        double *out = post ? b->s : s->x[k + 1];
        if (!post) {
            norm_fwd(p, &b->n, x, u->ng, u->nb, R);
            h = b->n.out;
        }
        if (u->kind == UNIT_FFN)
            ffn_fwd(p, u, b, h, R, out);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_fwd(p, u, b, h, h, sp->kmask, T, T, out);
        else
            attn_fwd(p, u, b, h, mem, mmask, T, Tm, out);
        add_into(out, x, n);
        if (post)
            norm_fwd(p, &b->n, b->s, u->ng, u->nb, R);
    }
    if (!post)
        norm_fwd(p, &s->fin, s->x[st->n_units], st->fg, st->fb, R);
}

/* ========================================================= tangent forward */

static void norm_fwd_t(const pass *p, const norm_buf *nb, norm_buf *nt, const double *xt, int gi,
                       int bi, int R)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    if (c->norm == LNK_NORM_NONE)
        return;
    lnk_norm_tangent(nt->out, nt->xhat, nt->r, xt, nb->xhat, nb->r, P(gi), V(gi), V(bi), R, c->d,
                     norm_center(c));
}

static void attn_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                       const double *h, const double *ht, const double *kv, const double *kvt,
                       int Tq, int Tk, double *outt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    lnk_linear_tangent(t->q, ht, h, P(u->wq), V(u->wq), V(u->bq), Rq, d, d, 0);
    lnk_linear_tangent(t->k, kvt, kv, P(u->wk), V(u->wk), V(u->bk), Rk, d, d, 0);
    lnk_linear_tangent(t->v, kvt, kv, P(u->wv), V(u->wv), V(u->bv), Rk, d, d, 0);
    if (qk) {
        lnk_norm_tangent(t->qn, t->qn, t->qr, t->q, b->qn, b->qr, NULL, NULL, NULL, Rq * hh, dk,
                         qc);
        lnk_norm_tangent(t->kn, t->kn, t->kr, t->k, b->kn, b->kr, NULL, NULL, NULL, Rk * hh, dk,
                         qc);
    }
    lnk_attn_tangent(t->ctx, t->a, t->qn, t->kn, t->v, b->a, b->qn, b->kn, b->v, B, Tq, Tk, d, hh);
    lnk_linear_tangent(outt, t->ctx, b->ctx, P(u->wo), V(u->wo), V(u->bo), Rq, d, d, 0);
}

static void ffn_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                      const double *h, const double *ht, int R, double *outt)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    lnk_linear_tangent(t->hpre, ht, h, P(u->w1), V(u->w1), V(u->b1), R, d, f, 0);
    lnk_relu_mask(t->hact, t->hpre, b->hpre, (size_t)R * f, 0);
    lnk_linear_tangent(outt, t->hact, b->hact, P(u->w2), V(u->w2), V(u->b2), R, f, d, 0);
}

/* Tangents of one stack's activations (sp: its primal state; mem, memt: the
 * encoder output and its tangent for cross-attention). */
static void stack_fwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp,
                        stack_act *ta, int T, const double *mem, const double *memt, int Tm)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    lnk_embed_tangent(ta->x[0], sp->ids, V(st->emb), R, d);
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k];
        unit_buf *t = &ta->u[k];
        const double *x = s->x[k], *xt = ta->x[k], *h = x, *ht = xt;
        double *outt = post ? t->s : ta->x[k + 1];
        if (!post) {
            norm_fwd_t(p, &b->n, &t->n, xt, u->ng, u->nb, R);
            h = b->n.out;
            ht = t->n.out;
        }
        if (u->kind == UNIT_FFN)
            ffn_fwd_t(p, u, b, t, h, ht, R, outt);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_fwd_t(p, u, b, t, h, ht, h, ht, T, T, outt);
        else
            attn_fwd_t(p, u, b, t, h, ht, mem, memt, T, Tm, outt);
        add_into(outt, xt, n);
        if (post)
            norm_fwd_t(p, &b->n, &t->n, t->s, u->ng, u->nb, R);
    }
    if (!post)
        norm_fwd_t(p, &s->fin, &ta->fin, ta->x[st->n_units], st->fg, st->fb, R);
}

/* ========================================================== primal reverse */

/* dx (=|+=) N^T dy for the norm (gain gi, bias bi); for the norm type none,
 * dx (=|+=) dy. */
static void norm_bwd(const pass *p, const norm_buf *nb, int gi, int bi, double *dx,
                     const double *dy, int R, int accum)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    size_t n = (size_t)R * c->d;
    if (c->norm == LNK_NORM_NONE) {
        for (size_t i = 0; i < n; i++)
            dx[i] = accum ? dx[i] + dy[i] : dy[i];
        return;
    }
    lnk_norm_backward(dx, G(gi), G(bi), dy, nb->xhat, nb->r, P(gi), R, c->d, norm_center(c),
                      accum);
}

/* Reverse through a linear map y = x W + b whose input adjoint goes to dx (accum). */
static void lin_bwd(const pass *p, int wi, int bi, double *dx, const double *dy, const double *x,
                    int R, int in, int out, int accum)
{
    const lnk_model *m = p->m;
    lnk_linear_backward(dx, G(wi), G(bi), dy, x, P(wi), R, in, out, 0, accum);
}

/* Reverse through F = MHA(h, kv): dF -> the unit's adjoints g, dh and dkv
 * (accumulated). */
static void attn_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                     const double *h, const double *kv, int Tq, int Tk, const double *dF,
                     double *dh, double *dkv)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    lin_bwd(p, u->wo, u->bo, g->gctx, dF, b->ctx, Rq, d, d, 0);
    lnk_attn_backward(g->gqn, g->gkn, g->gv, g->gctx, b->a, b->qn, b->kn, b->v, p->pr->ascr, B, Tq,
                      Tk, d, hh);
    if (qk) {
        lnk_norm_backward(g->gq, NULL, NULL, g->gqn, b->qn, b->qr, NULL, Rq * hh, dk, qc, 0);
        lnk_norm_backward(g->gk, NULL, NULL, g->gkn, b->kn, b->kr, NULL, Rk * hh, dk, qc, 0);
    }
    lin_bwd(p, u->wq, u->bq, dh, g->gq, h, Rq, d, d, 1);
    lin_bwd(p, u->wk, u->bk, dkv, g->gk, kv, Rk, d, d, 1);
    lin_bwd(p, u->wv, u->bv, dkv, g->gv, kv, Rk, d, d, 1);
}

/* Reverse through F = FFN(h): dF -> g->gh and dh (accumulated). */
static void ffn_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                    const double *h, int R, const double *dF, double *dh)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    lin_bwd(p, u->w2, u->b2, g->gh, dF, b->hact, R, f, d, 0);
    lnk_relu_mask(g->gh, g->gh, b->hpre, (size_t)R * f, 0);
    lin_bwd(p, u->w1, u->b1, dh, g->gh, h, R, d, f, 1);
}

/* Reverse through one stack.  On entry sp->gz holds dL/dz of the stack
 * output; every unit's adjoints are kept in sp->g, the embedding gradient is
 * accumulated and, for a decoder with cross-attention, gmem (the encoder's
 * gz) accumulates dL/d(encoder output). */
static void stack_bwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T,
                      const double *mem, int Tm, double *gmem)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST, n_u = st->n_units;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    if (sp->g[n_u - 1].gy != sp->gz) /* Pre-LN final norm: gy <- N_final^T dL/dz */
        norm_bwd(p, &s->fin, st->fg, st->fb, sp->g[n_u - 1].gy, sp->gz, R, 0);
    for (int k = n_u - 1; k >= 0; k--) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k];
        unit_adj *g = &sp->g[k];
        double *gin = k ? sp->g[k - 1].gy : sp->gemb; /* dL/d(unit input) */
        const double *x = s->x[k], *h = post ? x : b->n.out, *dF;
        double *dh; /* where dL/dh accumulates */
        if (post) { /* z = N(s), s = x + F(x): gs = N^T gy, gin = gs + F^T gs */
            norm_bwd(p, &b->n, u->ng, u->nb, g->gs, g->gy, R, 0);
            copy(gin, g->gs, n);
            dF = g->gs;
            dh = gin;
        } else { /* z = x + F(N(x)): gin = gy + N^T (F^T gy), gs = F^T gy */
            copy(gin, g->gy, n);
            memset(g->gs, 0, n * sizeof(double));
            dF = g->gy;
            dh = g->gs;
        }
        if (u->kind == UNIT_FFN)
            ffn_bwd(p, u, b, g, h, R, dF, dh);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_bwd(p, u, b, g, h, h, T, T, dF, dh, dh);
        else
            attn_bwd(p, u, b, g, h, mem, T, Tm, dF, dh, gmem);
        if (!post)
            norm_bwd(p, &b->n, u->ng, u->nb, gin, g->gs, R, 1);
    }
    if (p->grad)
        lnk_embed_backward(G(st->emb), sp->ids, sp->gemb, R, d);
}

/* ========================================================= tangent reverse */

/* R{dx} (=|+=) R{N^T dy} (dy: the primal adjoint). */
static void norm_bwd_t(const pass *p, const norm_buf *nb, const norm_buf *nt, int gi, int bi,
                       double *dxt, const double *dyt, const double *dy, int R, int accum)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    size_t n = (size_t)R * c->d;
    if (c->norm == LNK_NORM_NONE) {
        for (size_t i = 0; i < n; i++)
            dxt[i] = accum ? dxt[i] + dyt[i] : dyt[i];
        return;
    }
    lnk_norm_backward_tangent(dxt, HV(gi), HV(bi), dyt, dy, nb->xhat, nt->xhat, nb->r, nt->r,
                              P(gi), V(gi), R, c->d, norm_center(c), accum);
}

static void lin_bwd_t(const pass *p, int wi, int bi, double *dxt, const double *dyt,
                      const double *dy, const double *x, const double *xt, int R, int in, int out,
                      int accum)
{
    const lnk_model *m = p->m;
    lnk_linear_backward_tangent(dxt, HV(wi), HV(bi), dyt, dy, xt, x, P(wi), V(wi), R, in, out, 0,
                                accum);
}

static void attn_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                       const unit_adj *g, const double *h, const double *ht, const double *kv,
                       const double *kvt, int Tq, int Tk, const double *dF, const double *dFt,
                       double *dht, double *dkvt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    grad_buf *gt = &p->ws->gt;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    lin_bwd_t(p, u->wo, u->bo, gt->gctx, dFt, dF, b->ctx, t->ctx, Rq, d, d, 0);
    lnk_attn_backward_tangent(gt->gqn, gt->gkn, gt->gv, gt->gctx, g->gctx, t->a, b->a, t->qn,
                              t->kn, t->v, b->qn, b->kn, b->v, gt->ascr, B, Tq, Tk, d, hh);
    if (qk) {
        lnk_norm_backward_tangent(gt->gq, NULL, NULL, gt->gqn, g->gqn, b->qn, t->qn, b->qr, t->qr,
                                  NULL, NULL, Rq * hh, dk, qc, 0);
        lnk_norm_backward_tangent(gt->gk, NULL, NULL, gt->gkn, g->gkn, b->kn, t->kn, b->kr, t->kr,
                                  NULL, NULL, Rk * hh, dk, qc, 0);
    }
    lin_bwd_t(p, u->wq, u->bq, dht, gt->gq, g->gq, h, ht, Rq, d, d, 1);
    lin_bwd_t(p, u->wk, u->bk, dkvt, gt->gk, g->gk, kv, kvt, Rk, d, d, 1);
    lin_bwd_t(p, u->wv, u->bv, dkvt, gt->gv, g->gv, kv, kvt, Rk, d, d, 1);
}

static void ffn_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                      const unit_adj *g, const double *h, const double *ht, int R,
                      const double *dF, const double *dFt, double *dht)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    double *ght = p->ws->gt.gh;
    lin_bwd_t(p, u->w2, u->b2, ght, dFt, dF, b->hact, t->hact, R, f, d, 0);
    lnk_relu_mask(ght, ght, b->hpre, (size_t)R * f, 0);
    lin_bwd_t(p, u->w1, u->b1, dht, ght, g->gh, h, ht, R, d, f, 1);
}

/* R{} of one stack's reverse sweep.  On entry ws->gt.gy holds R{dL/dz}; on
 * return H v holds the stack's parameters' part and, for a decoder with
 * cross-attention, gmemt has accumulated R{dL/d(encoder output)}. */
static void stack_bwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp,
                        const stack_act *ta, int T, const double *mem, const double *memt, int Tm,
                        double *gmemt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    grad_buf *gt = &p->ws->gt;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST, n_u = st->n_units;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    double *gyt = gt->gy, *gxt = gt->gx, *tmp;
    if (sp->g[n_u - 1].gy != sp->gz) {
        norm_bwd_t(p, &s->fin, &ta->fin, st->fg, st->fb, gxt, gyt, sp->gz, R, 0);
        tmp = gyt, gyt = gxt, gxt = tmp;
    }
    for (int k = n_u - 1; k >= 0; k--) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k], *t = &ta->u[k];
        const unit_adj *g = &sp->g[k];
        const double *x = s->x[k], *xt = ta->x[k];
        const double *h = post ? x : b->n.out, *ht = post ? xt : t->n.out, *dF, *dFt;
        double *dht;
        if (post) {
            norm_bwd_t(p, &b->n, &t->n, u->ng, u->nb, gt->gs, gyt, g->gy, R, 0);
            copy(gxt, gt->gs, n);
            dF = g->gs, dFt = gt->gs;
            dht = gxt;
        } else {
            copy(gxt, gyt, n);
            memset(gt->gs, 0, n * sizeof(double));
            dF = g->gy, dFt = gyt;
            dht = gt->gs;
        }
        if (u->kind == UNIT_FFN)
            ffn_bwd_t(p, u, b, t, g, h, ht, R, dF, dFt, dht);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_bwd_t(p, u, b, t, g, h, ht, h, ht, T, T, dF, dFt, dht, dht);
        else
            attn_bwd_t(p, u, b, t, g, h, ht, mem, memt, T, Tm, dF, dFt, dht, gmemt);
        if (!post)
            norm_bwd_t(p, &b->n, &t->n, u->ng, u->nb, gxt, gt->gs, g->gs, R, 1);
        tmp = gyt, gyt = gxt, gxt = tmp;
    }
    lnk_embed_backward(HV(st->emb), sp->ids, gyt, R, d);
}

/* ============================================================ the passes */

/* Fill the primal state's ids/masks and the labels from the batch (MODEL.md §4). */
static void load_batch(lnk_primal *pr, const lnk_model *m, const lnk_batch *bt)
{
    int B = bt->B;
    pr->B = B;
    pr->Tenc = m->has_enc ? bt->S : 0;
    pr->Tdec = m->has_dec ? bt->T - 1 : 0;
    if (m->has_enc)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < bt->S; t++) {
                size_t i = (size_t)b * bt->S + t;
                pr->enc.ids[i] = bt->src[i];
                pr->enc.kmask[i] = bt->src[i] == LNK_PAD;
                if (m->cfg.task == LNK_TASK_CLS)
                    pr->labels[i] = bt->src[i] == LNK_PAD ? -1 : bt->labels[i];
            }
    if (m->has_dec) {
        int T = pr->Tdec;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                size_t i = (size_t)b * T + t;
                int64_t x = bt->tgt[(size_t)b * bt->T + t], y = bt->tgt[(size_t)b * bt->T + t + 1];
                pr->dec.ids[i] = x;
                pr->dec.kmask[i] = x == LNK_PAD;
                pr->labels[i] = y == LNK_PAD ? -1 : y;
            }
    }
}

/* The output layer's weight tensor and whether it is used transposed (tied). */
static int out_weight(const lnk_model *m, int *wt)
{
    *wt = m->out_w < 0;
    return m->out_w >= 0 ? m->out_w : m->out_tied;
}

enum { PRIMAL_NONE = 0, PRIMAL_FORWARD = 1, PRIMAL_FULL = 2 };

/* The primal pass of theta on bt in ws's primal state: forward and loss;
 * then, if reverse, the adjoints (and grad if not NULL). */
static int primal_pass(lnk_workspace *ws, const double *theta, const lnk_batch *bt, int reverse,
                       double *grad)
{
    const lnk_model *m = ws->m;
    const lnk_config *c = &m->cfg;
    lnk_primal *pr = ws->pr;
    if (bt->B > pr->Bmax || (m->has_enc && bt->S > pr->Smax) || (m->has_dec && bt->T > pr->Tmax))
        return lnk_error(LNK_EINVAL, "batch of B = %d, S = %d, T = %d does not fit the workspace "
                         "(B <= %d, S <= %d, T <= %d)", bt->B, bt->S, bt->T, pr->Bmax, pr->Smax,
                         pr->Tmax);
    pr->valid = PRIMAL_NONE;
    int st = lnk_batch_check(m, bt);
    if (st)
        return st;
    if ((st = lnk_params_check_finite(m, theta, "parameters")))
        return st;
    load_batch(pr, m, bt);
    if (grad)
        memset(grad, 0, m->lay.n_params * sizeof(double));
    pass p = {ws, m, pr, theta, NULL, grad, NULL, bt->B};
    int d = c->d, B = bt->B;
    if (m->has_enc)
        stack_fwd(&p, &m->enc, &pr->enc, pr->Tenc, NULL, NULL, 0);
    const lnk_stack *top = m->has_dec ? &m->dec : &m->enc;
    stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = B * T, C = m->n_out, wt;
    int s2s = m->has_enc && m->has_dec;
    if (m->has_dec)
        stack_fwd(&p, &m->dec, &pr->dec, T, m->has_enc ? pr->enc.a.z : NULL, pr->enc.kmask,
                  pr->Tenc);
    /* output layer and loss: prob holds the logits, then the probabilities */
    int wi = out_weight(m, &wt);
    lnk_linear_forward(pr->prob, tp->a.z, lnk_tp(m, theta, wi), NULL, R, d, C, wt);
    size_t N = 0;
    for (int i = 0; i < R; i++)
        N += pr->labels[i] >= 0;
    double sum = lnk_xent_forward(pr->prob, pr->prob, pr->labels, R, C, c->label_smoothing);
    double L = sum / (double)N, invN = 1.0 / (double)N;
    if (!isfinite(L))
        return lnk_error(LNK_ENONFINITE, "the loss is %g (not finite): check the weights' scale "
                         "and eps", L);
    pr->loss = L;
    pr->N = N;
    pr->theta = theta;
    pr->batch = bt;
    pr->valid = PRIMAL_FORWARD;
    if (!reverse)
        return LNK_OK;
    lnk_xent_backward(pr->dlogits, pr->prob, pr->labels, R, C, c->label_smoothing, invN);
    lnk_linear_backward(tp->gz, grad ? grad + m->lay.t[wi].offset : NULL, NULL, pr->dlogits,
                        tp->a.z, lnk_tp(m, theta, wi), R, d, C, wt, 0);
    if (s2s)
        memset(pr->enc.gz, 0, (size_t)B * pr->Tenc * d * sizeof(double));
    stack_bwd(&p, top, tp, T, s2s ? pr->enc.a.z : NULL, pr->Tenc, s2s ? pr->enc.gz : NULL);
    if (s2s)
        stack_bwd(&p, &m->enc, &pr->enc, pr->Tenc, NULL, 0, NULL);
    pr->valid = PRIMAL_FULL;
    return LNK_OK;
}

/* The tangent pass: hv = H v from the full primal state in use. */
static int tangent_pass(lnk_workspace *ws, const double *v, double *hv)
{
    const lnk_model *m = ws->m;
    const lnk_config *c = &m->cfg;
    lnk_primal *pr = ws->pr;
    if (!ws->hvp || !pr->adj)
        return lnk_error(LNK_EINVAL, "H v needs a workspace allocated with LNK_WS_HVP");
    if (pr->valid != PRIMAL_FULL)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp_apply: no primal pass to reuse (call "
                         "lnk_model_hvp_prepare first)");
    int st = lnk_params_check_finite(m, v, "vector");
    if (st)
        return st;
    memset(hv, 0, m->lay.n_params * sizeof(double));
    pass p = {ws, m, pr, pr->theta, v, NULL, hv, pr->B};
    int d = c->d, B = pr->B, wt, s2s = m->has_enc && m->has_dec;
    const lnk_stack *top = m->has_dec ? &m->dec : &m->enc;
    const stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    stack_act *tt = m->has_dec ? &ws->dect : &ws->enct;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = B * T, C = m->n_out;
    double invN = 1.0 / (double)pr->N;
    if (m->has_enc)
        stack_fwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0);
    if (m->has_dec)
        stack_fwd_t(&p, &m->dec, &pr->dec, &ws->dect, T, m->has_enc ? pr->enc.a.z : NULL,
                    m->has_enc ? ws->enct.z : NULL, pr->Tenc);
    int wi = out_weight(m, &wt);
    const double *W = lnk_tp(m, pr->theta, wi), *Wd = lnk_tp(m, v, wi);
    lnk_linear_tangent(ws->logits_t, tt->z, tp->a.z, W, Wd, NULL, R, d, C, wt);
    lnk_xent_backward_tangent(ws->logits_t, pr->prob, pr->labels, R, C, invN);
    lnk_linear_backward_tangent(ws->gt.gy, hv + m->lay.t[wi].offset, NULL, ws->logits_t,
                                pr->dlogits, tt->z, tp->a.z, W, Wd, R, d, C, wt, 0);
    if (s2s)
        memset(ws->gt.gmem, 0, (size_t)B * pr->Tenc * d * sizeof(double));
    stack_bwd_t(&p, top, tp, tt, T, s2s ? pr->enc.a.z : NULL, s2s ? ws->enct.z : NULL, pr->Tenc,
                ws->gt.gmem);
    if (s2s) {
        copy(ws->gt.gy, ws->gt.gmem, (size_t)B * pr->Tenc * d);
        stack_bwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0, NULL);
    }
    return LNK_OK;
}

int lnk_model_eval(lnk_workspace *ws, const double *theta, const lnk_batch *b, double *loss,
                   double *grad, size_t *n_scored)
{
    int st = primal_pass(ws, theta, b, grad != NULL, grad);
    if (st)
        return st;
    if (loss)
        *loss = ws->pr->loss;
    if (n_scored)
        *n_scored = ws->pr->N;
    return LNK_OK;
}

int lnk_model_hvp_prepare(lnk_workspace *ws, const double *theta, const lnk_batch *b,
                          double *loss, double *grad)
{
    if (!ws->hvp)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp needs a workspace allocated with LNK_WS_HVP");
    int st = primal_pass(ws, theta, b, 1, grad);
    if (!st && loss)
        *loss = ws->pr->loss;
    return st;
}

int lnk_model_hvp_apply(lnk_workspace *ws, const double *v, double *hv)
{
    if (!v || !hv)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp: v and hv must not be NULL");
    return tangent_pass(ws, v, hv);
}

int lnk_model_hvp(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *hv, double *loss, double *grad)
{
    if (!v || !hv)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp: v and hv must not be NULL");
    int st = lnk_model_hvp_prepare(ws, theta, b, loss, grad);
    return st ? st : tangent_pass(ws, v, hv);
}

/* ================================================== Gauss-Newton product
 *
 * G v = J^T H_out J v: the tangent forward pass gives J v at the logits
 * (ws->logits_t), H_out is the xent's backward tangent (the Hessian of the
 * loss in the logits: (diag p - p p^T) / N per scored row; label smoothing
 * only adds a term linear in log-softmax, whose Hessian is the same), and
 * J^T is the plain reverse pass (stack_bwd) of that adjoint over the kept
 * primal activations.  The reverse pass runs in the tangent scratch
 * (ws->gt), so the primal state's adjoints, which H v reads, are untouched. */

/* A view of the primal stack sp whose adjoints live in ws->gt: the unit
 * outputs' adjoints alternate between gt.gy and gt.gx, every other adjoint
 * is the shared scratch, dL/dz is gt.gs when a final norm sits between
 * (Pre-LN), else the last unit's.  g has room for sp->n_units. */
static void scratch_view(lnk_workspace *ws, const stack_buf *sp, stack_buf *sb, unit_adj *g)
{
    grad_buf *gt = &ws->gt;
    int n = sp->n_units, fin = sp->g[n - 1].gy != sp->gz;
    double *buf[2] = {gt->gy, gt->gx};
    *sb = *sp;
    for (int k = 0; k < n; k++)
        g[k] = (unit_adj){buf[k & 1], gt->gs, gt->gctx, gt->gq, gt->gk, gt->gv, gt->gqn, gt->gkn,
                          gt->gh};
    sb->g = g;
    sb->gz = fin ? gt->gs : g[n - 1].gy;
    sb->gemb = buf[1];
}

/* out = J^T u with u = ws->logits_t (the logits' adjoint), by the plain
 * reverse pass over the primal state in use; out is overwritten. */
static int ggn_reverse(lnk_workspace *ws, double *out)
{
    const lnk_model *m = ws->m;
    const lnk_config *c = &m->cfg;
    lnk_primal *pr = ws->pr;
    int n_u = m->enc.n_units > m->dec.n_units ? m->enc.n_units : m->dec.n_units;
    unit_adj *g = malloc(sizeof *g * (size_t)(n_u > 0 ? n_u : 1));
    if (!g)
        return lnk_error(LNK_ENOMEM, "out of memory in G v");
    memset(out, 0, m->lay.n_params * sizeof(double));
    pass p = {ws, m, pr, pr->theta, NULL, out, NULL, pr->B};
    int d = c->d, B = pr->B, wt, s2s = m->has_enc && m->has_dec;
    const lnk_stack *top = m->has_dec ? &m->dec : &m->enc;
    const stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = B * T, C = m->n_out;
    stack_buf sb;
    scratch_view(ws, tp, &sb, g);
    int wi = out_weight(m, &wt);
    lnk_linear_backward(sb.gz, out + m->lay.t[wi].offset, NULL, ws->logits_t, tp->a.z,
                        lnk_tp(m, pr->theta, wi), R, d, C, wt, 0);
    if (s2s)
        memset(ws->gt.gmem, 0, (size_t)B * pr->Tenc * d * sizeof(double));
    stack_bwd(&p, top, &sb, T, s2s ? pr->enc.a.z : NULL, pr->Tenc, s2s ? ws->gt.gmem : NULL);
    if (s2s) {
        scratch_view(ws, &pr->enc, &sb, g);
        copy(sb.gz, ws->gt.gmem, (size_t)B * pr->Tenc * d);
        stack_bwd(&p, &m->enc, &sb, pr->Tenc, NULL, 0, NULL);
    }
    free(g);
    return LNK_OK;
}

/* The tangent forward pass to the logits (ws->logits_t = J v), then, if
 * hout, H_out: ws->logits_t = H_out J v. */
static void ggn_forward(lnk_workspace *ws, const double *v, int hout)
{
    const lnk_model *m = ws->m;
    lnk_primal *pr = ws->pr;
    pass p = {ws, m, pr, pr->theta, v, NULL, NULL, pr->B};
    int d = m->cfg.d, wt;
    const stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    stack_act *tt = m->has_dec ? &ws->dect : &ws->enct;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = pr->B * T, C = m->n_out;
    if (m->has_enc)
        stack_fwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0);
    if (m->has_dec)
        stack_fwd_t(&p, &m->dec, &pr->dec, &ws->dect, T, m->has_enc ? pr->enc.a.z : NULL,
                    m->has_enc ? ws->enct.z : NULL, pr->Tenc);
    int wi = out_weight(m, &wt);
    lnk_linear_tangent(ws->logits_t, tt->z, tp->a.z, lnk_tp(m, pr->theta, wi), lnk_tp(m, v, wi),
                       NULL, R, d, C, wt);
    if (hout)
        lnk_xent_backward_tangent(ws->logits_t, pr->prob, pr->labels, R, C, 1.0 / (double)pr->N);
}

/* The kept primal pass's usable for a product, and v finite. */
static int prepared(lnk_workspace *ws, const double *v, const char *who)
{
    if (!ws->hvp || !ws->pr->adj)
        return lnk_error(LNK_EINVAL, "%s needs a workspace allocated with LNK_WS_HVP", who);
    if (ws->pr->valid != PRIMAL_FULL)
        return lnk_error(LNK_EINVAL, "%s: no primal pass to reuse (call lnk_model_hvp_prepare "
                         "first)", who);
    return v ? lnk_params_check_finite(ws->m, v, "vector") : LNK_OK;
}

int lnk_model_output_jvp(lnk_workspace *ws, const double *v, double *jv, double *prob,
                         size_t *rows, int *cols)
{
    int st = prepared(ws, v, "lnk_model_output_jvp");
    if (st)
        return st;
    const lnk_model *m = ws->m;
    lnk_primal *pr = ws->pr;
    size_t R = (size_t)pr->B * (size_t)(m->has_dec ? pr->Tdec : pr->Tenc), C = (size_t)m->n_out;
    if (rows)
        *rows = R;
    if (cols)
        *cols = m->n_out;
    if (jv && v) {
        ggn_forward(ws, v, 0);
        copy(jv, ws->logits_t, R * C);
    }
    if (prob)
        copy(prob, pr->prob, R * C);
    return LNK_OK;
}

int lnk_model_ggn_apply(lnk_workspace *ws, const double *v, double *hv, double *gv)
{
    if (!v || !gv)
        return lnk_error(LNK_EINVAL, "lnk_model_ggn_apply: v and gv must not be NULL");
    if (hv) { /* H v leaves H_out J v in logits_t (R{dL/dlogits}), read-only since */
        int st = tangent_pass(ws, v, hv);
        return st ? st : ggn_reverse(ws, gv);
    }
    int st = prepared(ws, v, "lnk_model_ggn_apply");
    if (st)
        return st;
    ggn_forward(ws, v, 1);
    return ggn_reverse(ws, gv);
}

int lnk_model_ggn(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *gv, double *loss)
{
    if (!v || !gv)
        return lnk_error(LNK_EINVAL, "lnk_model_ggn: v and gv must not be NULL");
    int st = lnk_model_hvp_prepare(ws, theta, b, loss, NULL);
    return st ? st : lnk_model_ggn_apply(ws, v, NULL, gv);
}
