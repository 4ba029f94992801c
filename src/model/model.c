/* Loss, gradient and exact Hessian-vector product of the model (math in
 * include/lnkit/model.h).  Each unit's primal and tangent code run side by
 * side: first the forward pass with tangents, then the reverse pass with
 * tangents of the adjoints.  The tangent work is skipped for a plain gradient. */
#include <math.h>
#include <string.h>
#include "layers/layers.h"
#include "lnkit/error.h"
#include "model/workspace.h"

/* What one pass computes. */
typedef struct {
    lnk_workspace *ws;
    const lnk_model *m;
    const double *th;   /* theta */
    const double *v;    /* direction (NULL: no tangent work) */
    double *grad;       /* dL/dtheta, accumulated (NULL: skip parameter gradients) */
    double *hv;         /* R{dL/dtheta} = H v, accumulated */
    int B;
} pass;

#define P(i) lnk_tp(m, p->th, (i))
#define V(i) lnk_tp(m, p->v, (i))
#define G(i) lnk_tpw(m, p->grad, (i))
#define HV(i) lnk_tpw(m, p->hv, (i))

static int norm_center(const lnk_config *c) { return c->norm == LNK_NORM_LAYERNORM; }

/* ---------------------------------------------------------------- forward */

/* out = N(x) with the norm's gain g_i / bias b_i (either may be -1). */
static void norm_fwd(const pass *p, norm_buf *nb, norm_buf *nt, const double *x,
                     const double *xt, int gi, int bi, int R)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    if (c->norm == LNK_NORM_NONE)
        return; /* out aliases x */
    lnk_norm_forward(nb->out, nb->xhat, nb->r, x, P(gi), P(bi), R, c->d, norm_center(c), c->eps);
    if (p->v)
        lnk_norm_tangent(nt->out, nt->xhat, nt->r, xt, nb->xhat, nb->r, P(gi), V(gi), V(bi), R,
                         c->d, norm_center(c));
}

/* F of an attention unit: out = MHA(h, kv) (+ its tangent). */
static void attn_fwd(const pass *p, const lnk_unit *u, unit_buf *b, unit_buf *t, const double *h,
                     const double *ht, const double *kv, const double *kvt, const uint8_t *kmask,
                     int Tq, int Tk, double *out, double *outt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    lnk_linear_forward(b->q, h, P(u->wq), P(u->bq), Rq, d, d, 0);
    lnk_linear_forward(b->k, kv, P(u->wk), P(u->bk), Rk, d, d, 0);
    lnk_linear_forward(b->v, kv, P(u->wv), P(u->bv), Rk, d, d, 0);
    if (p->v) {
        lnk_linear_tangent(t->q, ht, h, P(u->wq), V(u->wq), V(u->bq), Rq, d, d, 0);
        lnk_linear_tangent(t->k, kvt, kv, P(u->wk), V(u->wk), V(u->bk), Rk, d, d, 0);
        lnk_linear_tangent(t->v, kvt, kv, P(u->wv), V(u->wv), V(u->bv), Rk, d, d, 0);
    }
    if (qk) { /* per-head norm over d_k: the [R, d] matrix is a [R*h, d_k] one */
        lnk_norm_forward(b->qn, b->qn, b->qr, b->q, NULL, NULL, Rq * hh, dk, qc, c->eps);
        lnk_norm_forward(b->kn, b->kn, b->kr, b->k, NULL, NULL, Rk * hh, dk, qc, c->eps);
        if (p->v) {
            lnk_norm_tangent(t->qn, t->qn, t->qr, t->q, b->qn, b->qr, NULL, NULL, NULL, Rq * hh,
                             dk, qc);
            lnk_norm_tangent(t->kn, t->kn, t->kr, t->k, b->kn, b->kr, NULL, NULL, NULL, Rk * hh,
                             dk, qc);
        }
    }
    lnk_attn_forward(b->ctx, b->a, b->qn, b->kn, b->v, kmask, B, Tq, Tk, d, hh, u->causal);
    lnk_linear_forward(out, b->ctx, P(u->wo), P(u->bo), Rq, d, d, 0);
    if (p->v) {
        lnk_attn_tangent(t->ctx, t->a, t->qn, t->kn, t->v, b->a, b->qn, b->kn, b->v, B, Tq, Tk,
                         d, hh);
        lnk_linear_tangent(outt, t->ctx, b->ctx, P(u->wo), V(u->wo), V(u->bo), Rq, d, d, 0);
    }
}

/* F of a feed-forward unit: out = ReLU(h W1 + b1) W2 + b2. */
static void ffn_fwd(const pass *p, const lnk_unit *u, unit_buf *b, unit_buf *t, const double *h,
                    const double *ht, int R, double *out, double *outt)
{
    const lnk_model *m = p->m;
    int d = m->cfg.d, f = m->cfg.d_ff;
    lnk_linear_forward(b->hpre, h, P(u->w1), P(u->b1), R, d, f, 0);
    lnk_relu_forward(b->hact, b->hpre, (size_t)R * f);
    lnk_linear_forward(out, b->hact, P(u->w2), P(u->b2), R, f, d, 0);
    if (p->v) {
        lnk_linear_tangent(t->hpre, ht, h, P(u->w1), V(u->w1), V(u->b1), R, d, f, 0);
        lnk_relu_mask(t->hact, t->hpre, b->hpre, (size_t)R * f, 0);
        lnk_linear_tangent(outt, t->hact, b->hact, P(u->w2), V(u->w2), V(u->b2), R, f, d, 0);
    }
}

static void add_into(double *y, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* Run one stack forward.  mem/memt: encoder output for cross-attention. */
static void stack_fwd(const pass *p, const lnk_stack *st, stack_buf *sb, int T, const double *mem,
                      const double *memt, const uint8_t *mmask, int Tm)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST, tan = p->v != NULL;
    size_t n = (size_t)R * d;
    lnk_embed_forward(sb->x[0], sb->ids, P(st->emb), R, T, d);
    if (tan)
        lnk_embed_tangent(sb->xt[0], sb->ids, V(st->emb), R, d);
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        unit_buf *b = &sb->u[k], *t = tan ? &sb->ut[k] : NULL;
        const double *x = sb->x[k], *xt = tan ? sb->xt[k] : NULL;
        /* F's input h and where F writes: post: s = x + F(x); pre: x' = x + F(N(x)) */
        const double *h = x, *ht = xt;
        double *out = post ? b->s : sb->x[k + 1], *outt = tan ? (post ? t->s : sb->xt[k + 1]) : NULL;
        if (!post) {
            norm_fwd(p, &b->n, t ? &t->n : NULL, x, xt, u->ng, u->nb, R);
            h = b->n.out;
            ht = t ? t->n.out : NULL;
        }
        if (u->kind == UNIT_FFN)
            ffn_fwd(p, u, b, t, h, ht, R, out, outt);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_fwd(p, u, b, t, h, ht, h, ht, sb->kmask, T, T, out, outt);
        else
            attn_fwd(p, u, b, t, h, ht, mem, memt, mmask, T, Tm, out, outt);
        add_into(out, x, n);
        if (tan)
            add_into(outt, xt, n);
        if (post)
            norm_fwd(p, &b->n, t ? &t->n : NULL, b->s, t ? t->s : NULL, u->ng, u->nb, R);
    }
    if (!post)
        norm_fwd(p, &sb->fin, tan ? &sb->fint : NULL, sb->x[st->n_units],
                 tan ? sb->xt[st->n_units] : NULL, st->fg, st->fb, R);
}

/* ---------------------------------------------------------------- reverse */

/* dx (=|+=) N^T dy for the unit norm (gain gi, bias bi), with tangents.
 * For the norm type none, dx (=|+=) dy. */
static void norm_bwd(const pass *p, const norm_buf *nb, const norm_buf *nt, int gi, int bi,
                     double *dx, double *dxt, const double *dy, const double *dyt, int R,
                     int accum)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    size_t n = (size_t)R * c->d;
    int tan = p->v != NULL;
    if (c->norm == LNK_NORM_NONE) {
        for (size_t i = 0; i < n; i++)
            dx[i] = accum ? dx[i] + dy[i] : dy[i];
        if (tan)
            for (size_t i = 0; i < n; i++)
                dxt[i] = accum ? dxt[i] + dyt[i] : dyt[i];
        return;
    }
    int cen = norm_center(c);
    if (tan)
        lnk_norm_backward_tangent(dxt, HV(gi), HV(bi), dyt, dy, nb->xhat, nt->xhat, nb->r, nt->r,
                                  P(gi), V(gi), R, c->d, cen, accum);
    lnk_norm_backward(dx, G(gi), G(bi), dy, nb->xhat, nb->r, P(gi), R, c->d, cen, accum);
}

/* Reverse through a linear map y = x W + b whose input adjoint goes to dx (accum). */
static void lin_bwd(const pass *p, int wi, int bi, double *dx, double *dxt, const double *dy,
                    const double *dyt, const double *x, const double *xt, int R, int in, int out,
                    int accum)
{
    const lnk_model *m = p->m;
    if (p->v)
        lnk_linear_backward_tangent(dxt, HV(wi), HV(bi), dyt, dy, xt, x, P(wi), V(wi), R, in,
                                    out, 0, accum);
    lnk_linear_backward(dx, G(wi), G(bi), dy, x, P(wi), R, in, out, 0, accum);
}

/* Reverse through F = MHA(h, kv): dF -> dh (accumulated), dkv (accumulated). */
static void attn_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                     const double *h, const double *ht, const double *kv, const double *kvt,
                     int Tq, int Tk, const double *dF, const double *dFt, double *dh, double *dht,
                     double *dkv, double *dkvt)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_workspace *ws = p->ws;
    grad_buf *g = &ws->g, *gt = &ws->gt;
    int d = c->d, hh = c->h, dk = d / hh, B = p->B, Rq = B * Tq, Rk = B * Tk, tan = p->v != NULL;
    int qk = c->qk_norm != LNK_NORM_NONE, qc = c->qk_norm == LNK_NORM_LAYERNORM;
    /* out = ctx Wo + bo */
    lin_bwd(p, u->wo, u->bo, g->gctx, gt->gctx, dF, dFt, b->ctx, t ? t->ctx : NULL, Rq, d, d, 0);
    /* attention core: gctx -> gqn, gkn, gv */
    if (tan)
        lnk_attn_backward_tangent(gt->gqn, gt->gkn, gt->gv, gt->gctx, g->gctx, t->a, b->a, t->qn,
                                  t->kn, t->v, b->qn, b->kn, b->v, gt->ascr, B, Tq, Tk, d, hh);
    lnk_attn_backward(g->gqn, g->gkn, g->gv, g->gctx, b->a, b->qn, b->kn, b->v, g->ascr, B, Tq,
                      Tk, d, hh);
    if (qk) {
        if (tan) {
            lnk_norm_backward_tangent(gt->gq, NULL, NULL, gt->gqn, g->gqn, b->qn, t->qn, b->qr,
                                      t->qr, NULL, NULL, Rq * hh, dk, qc, 0);
            lnk_norm_backward_tangent(gt->gk, NULL, NULL, gt->gkn, g->gkn, b->kn, t->kn, b->kr,
                                      t->kr, NULL, NULL, Rk * hh, dk, qc, 0);
        }
        lnk_norm_backward(g->gq, NULL, NULL, g->gqn, b->qn, b->qr, NULL, Rq * hh, dk, qc, 0);
        lnk_norm_backward(g->gk, NULL, NULL, g->gkn, b->kn, b->kr, NULL, Rk * hh, dk, qc, 0);
    }
    lin_bwd(p, u->wq, u->bq, dh, dht, g->gq, gt->gq, h, ht, Rq, d, d, 1);
    lin_bwd(p, u->wk, u->bk, dkv, dkvt, g->gk, gt->gk, kv, kvt, Rk, d, d, 1);
    lin_bwd(p, u->wv, u->bv, dkv, dkvt, g->gv, gt->gv, kv, kvt, Rk, d, d, 1);
}

/* Reverse through F = FFN(h): dF -> dh (accumulated). */
static void ffn_bwd(const pass *p, const lnk_unit *u, const unit_buf *b, const unit_buf *t,
                    const double *h, const double *ht, int R, const double *dF, const double *dFt,
                    double *dh, double *dht)
{
    const lnk_model *m = p->m;
    lnk_workspace *ws = p->ws;
    int d = m->cfg.d, f = m->cfg.d_ff;
    double *gh = ws->g.gh, *ght = ws->gt.gh;
    size_t n = (size_t)R * f;
    lin_bwd(p, u->w2, u->b2, gh, ght, dF, dFt, b->hact, t ? t->hact : NULL, R, f, d, 0);
    lnk_relu_mask(gh, gh, b->hpre, n, 0);
    if (p->v)
        lnk_relu_mask(ght, ght, b->hpre, n, 0);
    lin_bwd(p, u->w1, u->b1, dh, dht, gh, ght, h, ht, R, d, f, 1);
}

static void copy(double *y, const double *x, size_t n) { memcpy(y, x, n * sizeof(double)); }

/* Reverse through one stack.  On entry ws->g.gy (and gt.gy) hold dL/dz of the
 * stack output; on return the embedding gradient is accumulated and, for a
 * decoder with cross-attention, ws->g.gmem holds dL/d(encoder output). */
static void stack_bwd(const pass *p, const lnk_stack *st, stack_buf *sb, int T, const double *mem,
                      const double *memt, int Tm)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_workspace *ws = p->ws;
    grad_buf *g = &ws->g, *gt = &ws->gt;
    int d = c->d, R = p->B * T, post = c->norm_pos == LNK_POS_POST, tan = p->v != NULL;
    size_t n = (size_t)R * d;
    double *gy = g->gy, *gx = g->gx, *gyt = gt->gy, *gxt = gt->gx;
    if (!post) { /* final norm: gy <- N_final^T gy */
        norm_bwd(p, &sb->fin, tan ? &sb->fint : NULL, st->fg, st->fb, gx, gxt, gy, gyt, R, 0);
        double *tmp = gy; gy = gx; gx = tmp;
        tmp = gyt; gyt = gxt; gxt = tmp;
    }
    for (int k = st->n_units - 1; k >= 0; k--) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &sb->u[k], *t = tan ? &sb->ut[k] : NULL;
        const double *x = sb->x[k], *xt = tan ? sb->xt[k] : NULL;
        const double *h = post ? x : b->n.out, *ht = tan ? (post ? xt : t->n.out) : NULL;
        const double *dF, *dFt;
        double *dh, *dht; /* where dL/dh accumulates */
        if (post) { /* z = N(s), s = x + F(x): gs = N^T gy, gx = gs + F^T gs */
            norm_bwd(p, &b->n, t ? &t->n : NULL, u->ng, u->nb, g->gs, gt->gs, gy, gyt, R, 0);
            copy(gx, g->gs, n);
            if (tan)
                copy(gxt, gt->gs, n);
            dF = g->gs; dFt = gt->gs;
            dh = gx; dht = gxt;
        } else { /* z = x + F(N(x)): gx = gy + N^T (F^T gy) */
            copy(gx, gy, n);
            if (tan)
                copy(gxt, gyt, n);
            memset(g->gs, 0, n * sizeof(double));
            if (tan)
                memset(gt->gs, 0, n * sizeof(double));
            dF = gy; dFt = gyt;
            dh = g->gs; dht = gt->gs;
        }
        if (u->kind == UNIT_FFN)
            ffn_bwd(p, u, b, t, h, ht, R, dF, dFt, dh, dht);
        else if (u->kind == UNIT_SELF_ATTN)
            attn_bwd(p, u, b, t, h, ht, h, ht, T, T, dF, dFt, dh, dht, dh, dht);
        else
            attn_bwd(p, u, b, t, h, ht, mem, memt, T, Tm, dF, dFt, dh, dht, g->gmem, gt->gmem);
        if (!post)
            norm_bwd(p, &b->n, t ? &t->n : NULL, u->ng, u->nb, gx, gxt, g->gs, gt->gs, R, 1);
        double *tmp = gy; gy = gx; gx = tmp;
        tmp = gyt; gyt = gxt; gxt = tmp;
    }
    /* gy now holds dL/d(embedding output) */
    if (p->grad)
        lnk_embed_backward(G(st->emb), sb->ids, gy, R, d);
    if (tan)
        lnk_embed_backward(HV(st->emb), sb->ids, gyt, R, d);
}

/* ------------------------------------------------------------ the passes */

/* Fill the stacks' ids/masks and the labels from the batch (MODEL.md §4). */
static void load_batch(lnk_workspace *ws, const lnk_batch *bt)
{
    const lnk_model *m = ws->m;
    int B = bt->B;
    ws->B = B;
    ws->Tenc = m->has_enc ? bt->S : 0;
    ws->Tdec = m->has_dec ? bt->T - 1 : 0;
    if (m->has_enc)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < bt->S; t++) {
                size_t i = (size_t)b * bt->S + t;
                ws->enc.ids[i] = bt->src[i];
                ws->enc.kmask[i] = bt->src[i] == LNK_PAD;
                if (m->cfg.task == LNK_TASK_CLS)
                    ws->labels[i] = bt->src[i] == LNK_PAD ? -1 : bt->labels[i];
            }
    if (m->has_dec) {
        int T = ws->Tdec;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                size_t i = (size_t)b * T + t;
                int64_t x = bt->tgt[(size_t)b * bt->T + t], y = bt->tgt[(size_t)b * bt->T + t + 1];
                ws->dec.ids[i] = x;
                ws->dec.kmask[i] = x == LNK_PAD;
                ws->labels[i] = y == LNK_PAD ? -1 : y;
            }
    }
}

static int run(lnk_workspace *ws, const double *theta, const lnk_batch *bt, const double *v,
               double *hv, double *loss, double *grad, size_t *n_scored)
{
    const lnk_model *m = ws->m;
    const lnk_config *c = &m->cfg;
    if (bt->B > ws->Bmax || (m->has_enc && bt->S > ws->Smax) || (m->has_dec && bt->T > ws->Tmax))
        return lnk_error(LNK_EINVAL, "batch of B = %d, S = %d, T = %d does not fit the workspace "
                         "(B <= %d, S <= %d, T <= %d)", bt->B, bt->S, bt->T, ws->Bmax, ws->Smax,
                         ws->Tmax);
    if (v && !ws->hvp)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp needs a workspace allocated with LNK_WS_HVP");
    int st = lnk_batch_check(m, bt);
    if (st)
        return st;
    st = lnk_params_check_finite(m, theta, "parameters");
    if (st)
        return st;
    if (v && (st = lnk_params_check_finite(m, v, "vector")))
        return st;
    load_batch(ws, bt);
    size_t np = m->lay.n_params;
    if (grad)
        memset(grad, 0, np * sizeof(double));
    if (hv)
        memset(hv, 0, np * sizeof(double));
    pass p = {ws, m, theta, v, grad, hv, bt->B};
    int d = c->d, B = bt->B, tan = v != NULL;
    /* forward */
    if (m->has_enc)
        stack_fwd(&p, &m->enc, &ws->enc, ws->Tenc, NULL, NULL, NULL, 0);
    const lnk_stack *top = m->has_dec ? &m->dec : &m->enc;
    stack_buf *tb = m->has_dec ? &ws->dec : &ws->enc;
    int T = m->has_dec ? ws->Tdec : ws->Tenc, R = B * T, C = m->n_out;
    if (m->has_dec)
        stack_fwd(&p, &m->dec, &ws->dec, T, m->has_enc ? ws->enc.z : NULL,
                  m->has_enc && tan ? ws->enc.zt : NULL, ws->enc.kmask, ws->Tenc);
    /* output layer and loss */
    int wi = m->out_w >= 0 ? m->out_w : m->out_tied, wt = m->out_w < 0;
    lnk_linear_forward(ws->logits, tb->z, lnk_tp(m, theta, wi), NULL, R, d, C, wt);
    if (tan)
        lnk_linear_tangent(ws->logits_t, tb->zt, tb->z, lnk_tp(m, theta, wi), lnk_tp(m, v, wi), NULL, R, d,
                           C, wt);
    size_t N = 0;
    for (int i = 0; i < R; i++)
        N += ws->labels[i] >= 0;
    double sum = lnk_xent_forward(ws->logits, ws->logits, ws->labels, R, C, c->label_smoothing);
    double L = sum / (double)N, invN = 1.0 / (double)N;
    if (!isfinite(L))
        return lnk_error(LNK_ENONFINITE, "the loss is %g (not finite): check the weights' scale "
                         "and eps", L);
    if (loss)
        *loss = L;
    if (n_scored)
        *n_scored = N;
    if (!grad && !tan)
        return LNK_OK;
    /* reverse: dlogits (and R{dlogits}) then dz */
    if (tan)
        lnk_xent_backward_tangent(ws->logits_t, ws->logits, ws->labels, R, C, invN);
    lnk_xent_backward(ws->logits, ws->logits, ws->labels, R, C, c->label_smoothing, invN);
    if (tan)
        lnk_linear_backward_tangent(ws->gt.gy, hv ? hv + m->lay.t[wi].offset : NULL, NULL,
                                    ws->logits_t, ws->logits, tb->zt, tb->z, lnk_tp(m, theta, wi),
                                    lnk_tp(m, v, wi), R, d, C, wt, 0);
    lnk_linear_backward(ws->g.gy, grad ? grad + m->lay.t[wi].offset : NULL, NULL, ws->logits,
                        tb->z, lnk_tp(m, theta, wi), R, d, C, wt, 0);
    if (m->has_dec && m->has_enc) {
        memset(ws->g.gmem, 0, (size_t)B * ws->Tenc * d * sizeof(double));
        if (tan)
            memset(ws->gt.gmem, 0, (size_t)B * ws->Tenc * d * sizeof(double));
    }
    stack_bwd(&p, top, tb, T, m->has_enc && m->has_dec ? ws->enc.z : NULL,
              m->has_enc && m->has_dec && tan ? ws->enc.zt : NULL, ws->Tenc);
    if (m->has_enc && m->has_dec) {
        copy(ws->g.gy, ws->g.gmem, (size_t)B * ws->Tenc * d);
        if (tan)
            copy(ws->gt.gy, ws->gt.gmem, (size_t)B * ws->Tenc * d);
        stack_bwd(&p, &m->enc, &ws->enc, ws->Tenc, NULL, NULL, 0);
    }
    return LNK_OK;
}

int lnk_model_eval(lnk_workspace *ws, const double *theta, const lnk_batch *b, double *loss,
                   double *grad, size_t *n_scored)
{
    return run(ws, theta, b, NULL, NULL, loss, grad, n_scored);
}

int lnk_model_hvp(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *hv, double *loss, double *grad)
{
    if (!v || !hv)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp: v and hv must not be NULL");
    return run(ws, theta, b, v, hv, loss, grad, NULL);
}
