/* The Gauss-Newton product G v = J^T H_out J v (include/lnkit/model.h) over
 * the model's sweeps (model/pass.h): the tangent forward pass gives J v at the
 * logits (ws->logits_t), H_out is the xent's backward tangent (the Hessian of
 * the loss in the logits: (diag p - p p^T) / N per scored row; label
 * smoothing only adds a term linear in log-softmax, whose Hessian is the
 * same), and J^T is the plain reverse pass (lnk_stack_bwd) of that adjoint
 * over the kept primal activations.  The reverse pass runs in the tangent
 * scratch (ws->gt), so the primal state's adjoints, which H v reads, are
 * untouched. */
#include <stdlib.h>
#include <string.h>
#include "layers/layers.h"
#include "lnkit/error.h"
#include "model/pass.h"

static void copy(double *y, const double *x, size_t n) { memcpy(y, x, n * sizeof(double)); }

/* A view of the primal stack sp whose adjoints live in ws->gt: the unit
 * outputs' adjoints alternate between gt.gy and gt.gx, every other adjoint
 * is the shared scratch, dL/dz is gt.gctx when a final norm sits between
 * (consumed by the final norm before any unit uses gctx), else the last
 * unit's.  g has room for sp->n_units. */
static void scratch_view(lnk_workspace *ws, const stack_buf *sp, stack_buf *sb, unit_adj *g)
{
    grad_buf *gt = &ws->gt;
    int n = sp->n_units, fin = sp->g[n - 1].gy != sp->gz;
    double *buf[2] = {gt->gy, gt->gx};
    *sb = *sp;
    for (int k = 0; k < n; k++)
        g[k] = (unit_adj){buf[k & 1], gt->gs, gt->gf, gt->gn, gt->gctx, gt->gq, gt->gk, gt->gv,
                          gt->gqn, gt->gkn, gt->gh, gt->ga, gt->gc};
    sb->g = g;
    sb->gz = fin ? gt->gctx : g[n - 1].gy;
    sb->gemb = buf[1];
}

/* out = J^T u with u = ws->logits_t (the logits' adjoint), by the plain
 * reverse pass over the primal state in use; out is overwritten. */
static int ggn_reverse(lnk_workspace *ws, double *out, const lnk_span *span)
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
    int wi = lnk_model_out_weight(m, &wt);
    lnk_linear_backward(sb.gz, out + m->lay.t[wi].offset, NULL, ws->logits_t, tp->a.z,
                        lnk_tp(m, pr->theta, wi), R, d, C, wt, 0);
    if (s2s)
        memset(ws->gt.gmem, 0, (size_t)B * pr->Tenc * d * sizeof(double));
    lnk_stack_bwd(&p, top, &sb, T, s2s ? pr->enc.a.z : NULL, pr->Tenc, s2s ? ws->gt.gmem : NULL,
                  top == &m->dec ? span->dec : span->enc);
    if (s2s && span->enc <= m->enc.n_units + 1) {
        scratch_view(ws, &pr->enc, &sb, g);
        copy(sb.gz, ws->gt.gmem, (size_t)B * pr->Tenc * d);
        lnk_stack_bwd(&p, &m->enc, &sb, pr->Tenc, NULL, 0, NULL, span->enc);
    }
    free(g);
    return LNK_OK;
}

/* The tangent forward pass to the logits (ws->logits_t = J v), then, if
 * hout, H_out: ws->logits_t = H_out J v. */
static void ggn_forward(lnk_workspace *ws, const double *v, int hout, const lnk_span *span)
{
    const lnk_model *m = ws->m;
    lnk_primal *pr = ws->pr;
    pass p = {ws, m, pr, pr->theta, v, NULL, NULL, pr->B};
    int d = m->cfg.d, wt;
    const stack_buf *tp = m->has_dec ? &pr->dec : &pr->enc;
    stack_act *tt = m->has_dec ? &ws->dect : &ws->enct;
    int T = m->has_dec ? pr->Tdec : pr->Tenc, R = pr->B * T, C = m->n_out;
    if (m->has_enc)
        lnk_stack_fwd_t(&p, &m->enc, &pr->enc, &ws->enct, pr->Tenc, NULL, NULL, 0, span->enc);
    if (m->has_dec)
        lnk_stack_fwd_t(&p, &m->dec, &pr->dec, &ws->dect, T, m->has_enc ? pr->enc.a.z : NULL,
                        m->has_enc ? ws->enct.z : NULL, pr->Tenc, span->dec);
    int wi = lnk_model_out_weight(m, &wt);
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
        ggn_forward(ws, v, 0, &lnk_span_all);
        copy(jv, ws->logits_t, R * C);
    }
    if (prob)
        copy(prob, pr->prob, R * C);
    return LNK_OK;
}

int lnk_model_ggn_apply_span(lnk_workspace *ws, const double *v, double *hv, double *gv,
                             const lnk_span *span)
{
    if (!v || !gv)
        return lnk_error(LNK_EINVAL, "lnk_model_ggn_apply: v and gv must not be NULL");
    if (!span)
        span = &lnk_span_all;
    if (hv) { /* H v leaves H_out J v in logits_t (R{dL/dlogits}), read-only since */
        int st = lnk_model_tangent_pass(ws, v, hv, span);
        return st ? st : ggn_reverse(ws, gv, span);
    }
    int st = prepared(ws, v, "lnk_model_ggn_apply");
    if (st)
        return st;
    ggn_forward(ws, v, 1, span);
    return ggn_reverse(ws, gv, span);
}

int lnk_model_ggn_apply(lnk_workspace *ws, const double *v, double *hv, double *gv)
{
    return lnk_model_ggn_apply_span(ws, v, hv, gv, NULL);
}

int lnk_model_ggn(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *gv, double *loss)
{
    if (!v || !gv)
        return lnk_error(LNK_EINVAL, "lnk_model_ggn: v and gv must not be NULL");
    int st = lnk_model_hvp_prepare(ws, theta, b, loss, NULL);
    return st ? st : lnk_model_ggn_apply(ws, v, NULL, gv);
}
