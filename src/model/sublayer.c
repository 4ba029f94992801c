/* A unit's sub-layer F (MODEL.md §2): multi-head attention with the optional
 * per-head query/key norm and rotary positions, and the feed-forward map with
 * its activation (ReLU, GELU, SwiGLU); each as a forward, a tangent, a
 * reverse and a reverse-tangent sweep over the layers of src/layers/. */
#include <string.h>
#include "layers/layers.h"
#include "model/pass.h"

/* ============================================================== attention */

/* The per-head query/key norm of the configuration: 0 none, else its center. */
static int qk_on(const lnk_config *c) { return c->qk_norm != LNK_NORM_NONE; }
static int qk_center(const lnk_config *c) { return c->qk_norm == LNK_NORM_LAYERNORM; }

void lnk_attn_unit_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h,
                       const double *kv, const uint8_t *kmask, int Tq, int Tk, double *out)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk, qc = qk_center(c);
    lnk_linear_forward(b->q, h, P(u->wq), P(u->bq), Rq, d, d, 0);
    lnk_linear_forward(b->k, kv, P(u->wk), P(u->bk), Rk, d, d, 0);
    lnk_linear_forward(b->v, kv, P(u->wv), P(u->bv), Rk, d, d, 0);
    if (qk_on(c)) { /* per-head norm over d_k: the [R, d] matrix is a [R*h, d_k] one */
        lnk_norm_forward(b->qn, b->qn, b->qs, b->q, NULL, NULL, Rq * hh, dk, qc, c->eps);
        lnk_norm_forward(b->kn, b->kn, b->ks, b->k, NULL, NULL, Rk * hh, dk, qc, c->eps);
    }
    if (u->rope) {
        const double *cs = p->pr->rope_cos, *sn = p->pr->rope_sin;
        lnk_rope_forward(b->qp, b->qn, cs, sn, Rq, Tq, d, hh);
        lnk_rope_forward(b->kp, b->kn, cs, sn, Rk, Tk, d, hh);
    }
    lnk_attn_forward(b->ctx, b->a, b->qp, b->kp, b->v, kmask, B, Tq, Tk, d, hh, u->causal);
    lnk_linear_forward(out, b->ctx, P(u->wo), P(u->bo), Rq, d, d, 0);
}

void lnk_attn_unit_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                         const double *h, const double *ht, const double *kv, const double *kvt,
                         int Tq, int Tk, double *outt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk, qc = qk_center(c);
    lnk_linear_tangent(t->q, ht, h, P(u->wq), V(u->wq), V(u->bq), Rq, d, d, 0);
    lnk_linear_tangent(t->k, kvt, kv, P(u->wk), V(u->wk), V(u->bk), Rk, d, d, 0);
    lnk_linear_tangent(t->v, kvt, kv, P(u->wv), V(u->wv), V(u->bv), Rk, d, d, 0);
    if (qk_on(c)) {
        lnk_norm_tangent(t->qn, t->qn, t->qs, t->q, b->qn, b->qs, NULL, NULL, NULL, Rq * hh, dk,
                         qc);
        lnk_norm_tangent(t->kn, t->kn, t->ks, t->k, b->kn, b->ks, NULL, NULL, NULL, Rk * hh, dk,
                         qc);
    }
    if (u->rope) {
        const double *cs = p->pr->rope_cos, *sn = p->pr->rope_sin;
        lnk_rope_tangent(t->qp, t->qn, cs, sn, Rq, Tq, d, hh);
        lnk_rope_tangent(t->kp, t->kn, cs, sn, Rk, Tk, d, hh);
    }
    lnk_attn_tangent(t->ctx, t->a, t->qp, t->kp, t->v, b->a, b->qp, b->kp, b->v, B, Tq, Tk, d, hh);
    lnk_linear_tangent(outt, t->ctx, b->ctx, P(u->wo), V(u->wo), V(u->bo), Rq, d, d, 0);
}

/* Reverse through a linear map y = x W + b whose input adjoint goes to dx (accum). */
static void lin_bwd(const pass *p, int wi, int bi, double *dx, const double *dy, const double *x,
                    int R, int in, int out, int accum)
{
    const lnk_model *m = p->m;
    lnk_linear_backward(dx, G(wi), G(bi), dy, x, P(wi), R, in, out, 0, accum);
}

void lnk_attn_unit_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                       const double *h, const double *kv, int Tq, int Tk, const double *dF,
                       double *dh, double *dkv)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk, qc = qk_center(c);
    lin_bwd(p, u->wo, u->bo, g->gctx, dF, b->ctx, Rq, d, d, 0);
    /* the adjoints of the rotated q, k, turned back in place (into those of qn, kn) */
    lnk_attn_backward(g->gqn, g->gkn, g->gv, g->gctx, b->a, b->qp, b->kp, b->v, p->pr->ascr, B,
                      Tq, Tk, d, hh);
    if (u->rope) {
        const double *cs = p->pr->rope_cos, *sn = p->pr->rope_sin;
        lnk_rope_backward(g->gqn, g->gqn, cs, sn, Rq, Tq, d, hh);
        lnk_rope_backward(g->gkn, g->gkn, cs, sn, Rk, Tk, d, hh);
    }
    if (qk_on(c)) {
        lnk_norm_backward(g->gq, NULL, NULL, g->gqn, b->qn, b->qs, NULL, Rq * hh, dk, qc, 0);
        lnk_norm_backward(g->gk, NULL, NULL, g->gkn, b->kn, b->ks, NULL, Rk * hh, dk, qc, 0);
    }
    lin_bwd(p, u->wq, u->bq, dh, g->gq, h, Rq, d, d, 1);
    lin_bwd(p, u->wk, u->bk, dkv, g->gk, kv, Rk, d, d, 1);
    lin_bwd(p, u->wv, u->bv, dkv, g->gv, kv, Rk, d, d, 1);
}

static void lin_bwd_t(const pass *p, int wi, int bi, double *dxt, const double *dyt,
                      const double *dy, const double *x, const double *xt, int R, int in, int out,
                      int accum)
{
    const lnk_model *m = p->m;
    lnk_linear_backward_tangent(dxt, HV(wi), HV(bi), dyt, dy, xt, x, P(wi), V(wi), R, in, out, 0,
                                accum);
}

void lnk_attn_unit_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                         const unit_adj *g, const double *h, const double *ht, const double *kv,
                         const double *kvt, int Tq, int Tk, const double *dF, const double *dFt,
                         double *dht, double *dkvt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    grad_buf *gt = &p->ws->gt;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk, qc = qk_center(c);
    lin_bwd_t(p, u->wo, u->bo, gt->gctx, dFt, dF, b->ctx, t->ctx, Rq, d, d, 0);
    lnk_attn_backward_tangent(gt->gqn, gt->gkn, gt->gv, gt->gctx, g->gctx, t->a, b->a, t->qp,
                              t->kp, t->v, b->qp, b->kp, b->v, gt->ascr, B, Tq, Tk, d, hh);
    if (u->rope) {
        const double *cs = p->pr->rope_cos, *sn = p->pr->rope_sin;
        lnk_rope_backward_tangent(gt->gqn, gt->gqn, cs, sn, Rq, Tq, d, hh);
        lnk_rope_backward_tangent(gt->gkn, gt->gkn, cs, sn, Rk, Tk, d, hh);
    }
    if (qk_on(c)) {
        lnk_norm_backward_tangent(gt->gq, NULL, NULL, gt->gqn, g->gqn, b->qn, t->qn, b->qs, t->qs,
                                  NULL, NULL, Rq * hh, dk, qc, 0);
        lnk_norm_backward_tangent(gt->gk, NULL, NULL, gt->gkn, g->gkn, b->kn, t->kn, b->ks, t->ks,
                                  NULL, NULL, Rk * hh, dk, qc, 0);
    }
    lin_bwd_t(p, u->wq, u->bq, dht, gt->gq, g->gq, h, ht, Rq, d, d, 1);
    lin_bwd_t(p, u->wk, u->bk, dkvt, gt->gk, g->gk, kv, kvt, Rk, d, d, 1);
    lin_bwd_t(p, u->wv, u->bv, dkvt, gt->gv, g->gv, kv, kvt, Rk, d, d, 1);
}

/* ============================================================ feed-forward */

void lnk_ffn_unit_fwd(const pass *p, const lnk_unit *u, unit_buf *b, const double *h, int R,
                      double *out)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    size_t n = (size_t)R * f;
    lnk_linear_forward(b->hpre, h, P(u->w1), P(u->b1), R, d, f, 0);
    switch (m->cfg.activation) {
    case LNK_ACT_RELU: lnk_relu_forward(b->hact, b->hpre, n); break;
    case LNK_ACT_GELU: lnk_gelu_forward(b->hact, b->hd, b->hpre, n); break;
    case LNK_ACT_SWIGLU:
        lnk_linear_forward(b->hgate, h, P(u->w3), P(u->b3), R, d, f, 0);
        lnk_swiglu_forward(b->hact, b->hd, b->hpre, b->hgate, n);
        break;
    }
    lnk_linear_forward(out, b->hact, P(u->w2), P(u->b2), R, f, d, 0);
}

void lnk_ffn_unit_fwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, unit_buf *t,
                        const double *h, const double *ht, int R, double *outt)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    size_t n = (size_t)R * f;
    lnk_linear_tangent(t->hpre, ht, h, P(u->w1), V(u->w1), V(u->b1), R, d, f, 0);
    switch (m->cfg.activation) {
    case LNK_ACT_RELU: lnk_relu_mask(t->hact, t->hpre, b->hpre, n, 0); break;
    case LNK_ACT_GELU: lnk_gelu_tangent(t->hact, b->hd, t->hpre, n); break;
    case LNK_ACT_SWIGLU:
        lnk_linear_tangent(t->hgate, ht, h, P(u->w3), V(u->w3), V(u->b3), R, d, f, 0);
        lnk_swiglu_tangent(t->hact, t->hpre, t->hgate, b->hpre, b->hgate, b->hd, n);
        break;
    }
    lnk_linear_tangent(outt, t->hact, b->hact, P(u->w2), V(u->w2), V(u->b2), R, f, d, 0);
}

void lnk_ffn_unit_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, unit_adj *g,
                      const double *h, int R, const double *dF, double *dh)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    size_t n = (size_t)R * f;
    lin_bwd(p, u->w2, u->b2, g->gh, dF, b->hact, R, f, d, 0);
    switch (m->cfg.activation) {
    case LNK_ACT_RELU: lnk_relu_mask(g->ga, g->gh, b->hpre, n, 0); break; /* ga == gh */
    case LNK_ACT_GELU: lnk_gelu_backward(g->ga, b->hd, g->gh, n); break;
    case LNK_ACT_SWIGLU: lnk_swiglu_backward(g->ga, g->gc, g->gh, b->hpre, b->hgate, b->hd, n); break;
    }
    lin_bwd(p, u->w1, u->b1, dh, g->ga, h, R, d, f, 1);
    if (m->cfg.activation == LNK_ACT_SWIGLU)
        lin_bwd(p, u->w3, u->b3, dh, g->gc, h, R, d, f, 1);
}

void lnk_ffn_unit_bwd_t(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                        const unit_adj *g, const double *h, const double *ht, int R,
                        const double *dF, const double *dFt, double *dht)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    size_t n = (size_t)R * f;
    grad_buf *gt = &p->ws->gt;
    lin_bwd_t(p, u->w2, u->b2, gt->gh, dFt, dF, b->hact, t->hact, R, f, d, 0);
    switch (m->cfg.activation) {
    case LNK_ACT_RELU: lnk_relu_mask(gt->ga, gt->gh, b->hpre, n, 0); break; /* ga == gh */
    case LNK_ACT_GELU:
        lnk_gelu_backward_tangent(gt->ga, gt->gh, g->gh, t->hpre, b->hpre, b->hd, n);
        break;
    case LNK_ACT_SWIGLU:
        lnk_swiglu_backward_tangent(gt->ga, gt->gc, gt->gh, g->gh, t->hpre, t->hgate, b->hpre,
                                    b->hgate, b->hd, n);
        break;
    }
    lin_bwd_t(p, u->w1, u->b1, dht, gt->ga, g->ga, h, ht, R, d, f, 1);
    if (m->cfg.activation == LNK_ACT_SWIGLU)
        lin_bwd_t(p, u->w3, u->b3, dht, gt->gc, g->gc, h, ht, R, d, f, 1);
}
