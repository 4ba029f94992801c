/* Loss, gradient and exact Hessian-vector product of the model (math in
 * include/lnkit/model.h).
 *
 * Two passes over the units, each a forward and a reverse sweep
 * (model/pass.h: stack.c composes the units, sublayer.c their F):
 *   the primal pass: forward activations, the loss, and the reverse sweep of
 *     adjoints (with the parameter gradient when asked for); it runs once per
 *     (weights, batch) and its results stay in the workspace's primal state;
 *   the tangent pass (H v only): R{.} of every activation forward, then R{.}
 *     of every adjoint backward, reading the primal state, which it never
 *     writes.
 * lnk_model_hvp is the primal pass then the tangent pass; products at the
 * same weights and batch repeat only the tangent pass (lnk_model_hvp_apply),
 * with the same bits. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "layers/layers.h"
#include "lnkit/error.h"
#include "model/pass.h"

static void copy(double *y, const double *x, size_t n) { memcpy(y, x, n * sizeof(double)); }

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

int lnk_model_out_weight(const lnk_model *m, int *wt)
{
    *wt = m->out_w < 0;
    return m->out_w >= 0 ? m->out_w : m->out_tied;
}

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
        lnk_stack_fwd(&p, &m->enc, &pr->enc, pr->Tenc, NULL, NULL, 0);
    const lnk_stack *top = m->has_dec ? &m->dec : &m->enc;
    stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = B * T, C = m->n_out, wt;
    int s2s = m->has_enc && m->has_dec;
    if (m->has_dec)
        lnk_stack_fwd(&p, &m->dec, &pr->dec, T, m->has_enc ? pr->enc.a.z : NULL, pr->enc.kmask,
                  pr->Tenc);
    /* output layer and loss: prob holds the logits, then the probabilities */
    int wi = lnk_model_out_weight(m, &wt);
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
    lnk_stack_bwd(&p, top, tp, T, s2s ? pr->enc.a.z : NULL, pr->Tenc, s2s ? pr->enc.gz : NULL, 0);
    if (s2s)
        lnk_stack_bwd(&p, &m->enc, &pr->enc, pr->Tenc, NULL, 0, NULL, 0);
    pr->valid = PRIMAL_FULL;
    return LNK_OK;
}

/* Level of tensor i's first use in stack st (lnk_span), or INT_MAX. */
static int first_use(const lnk_stack *st, int i)
{
    if (i < 0)
        return INT_MAX;
    if (i == st->emb || i == st->pos)
        return 0;
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        const int t[] = {u->wq, u->bq, u->wk, u->bk, u->wv, u->bv, u->wo, u->bo,
                         u->w1, u->b1, u->w3, u->b3, u->w2, u->b2,
                         u->nin.g, u->nin.b, u->nout.g, u->nout.b, u->npost.g, u->npost.b};
        for (size_t j = 0; j < sizeof t / sizeof t[0]; j++)
            if (t[j] == i)
                return k + 1;
    }
    if (i == st->fg || i == st->fb)
        return st->n_units + 1;
    return INT_MAX;
}

void lnk_model_span(const lnk_model *m, const lnk_block *b, lnk_span *out)
{
    /* the forward sweep: the encoder's levels, then the decoder's, then the output layer */
    int ne = m->has_enc ? m->enc.n_units : -2, nd = m->has_dec ? m->dec.n_units : -2;
    long first = LONG_MAX, dec0 = ne + 2L;
    for (int k = 0; k < b->n_tensors; k++) {
        int i = b->tensor[k], le = m->has_enc ? first_use(&m->enc, i) : INT_MAX;
        int ld = m->has_dec ? first_use(&m->dec, i) : INT_MAX;
        long g = le != INT_MAX ? le : ld != INT_MAX ? dec0 + ld : dec0 + nd + 2L;
        first = g < first ? g : first; /* a tensor of neither stack: the output layer's */
    }
    if (first == LONG_MAX) /* no tensor: nothing to skip */
        first = 0;
    out->enc = first < dec0 ? (int)first : ne + 2;
    out->dec = first < dec0 ? 0 : (int)(first - dec0);
}

int lnk_model_tangent_pass(lnk_workspace *ws, const double *v, double *hv, const lnk_span *span)
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
    if (!span)
        span = &lnk_span_all;
    if (m->has_enc)
        lnk_stack_fwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0, span->enc);
    if (m->has_dec)
        lnk_stack_fwd_t(&p, &m->dec, &pr->dec, &ws->dect, T, m->has_enc ? pr->enc.a.z : NULL,
                        m->has_enc ? ws->enct.z : NULL, pr->Tenc, span->dec);
    int wi = lnk_model_out_weight(m, &wt);
    const double *W = lnk_tp(m, pr->theta, wi), *Wd = lnk_tp(m, v, wi);
    lnk_linear_tangent(ws->logits_t, tt->z, tp->a.z, W, Wd, NULL, R, d, C, wt);
    lnk_xent_backward_tangent(ws->logits_t, pr->prob, pr->labels, R, C, invN);
    lnk_linear_backward_tangent(ws->gt.gy, hv + m->lay.t[wi].offset, NULL, ws->logits_t,
                                pr->dlogits, tt->z, tp->a.z, W, Wd, R, d, C, wt, 0);
    if (s2s)
        memset(ws->gt.gmem, 0, (size_t)B * pr->Tenc * d * sizeof(double));
    lnk_stack_bwd_t(&p, top, tp, tt, T, s2s ? pr->enc.a.z : NULL, s2s ? ws->enct.z : NULL, pr->Tenc,
                    ws->gt.gmem, top == &m->dec ? span->dec : span->enc);
    if (s2s && span->enc <= m->enc.n_units + 1) {
        copy(ws->gt.gy, ws->gt.gmem, (size_t)B * pr->Tenc * d);
        lnk_stack_bwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0, NULL,
                        span->enc);
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
    return lnk_model_tangent_pass(ws, v, hv, NULL);
}

int lnk_model_hvp(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *hv, double *loss, double *grad)
{
    if (!v || !hv)
        return lnk_error(LNK_EINVAL, "lnk_model_hvp: v and hv must not be NULL");
    int st = lnk_model_hvp_prepare(ws, theta, b, loss, grad);
    return st ? st : lnk_model_tangent_pass(ws, v, hv, NULL);
}

