/* A stack's units composed with their norms and residuals (MODEL.md §3):
 *   out = N_post(alpha x + N_out(F(N_in(x))))
 * with the embedding before the first unit and the final norm after the
 * last, in four sweeps: forward, tangent forward, reverse, reverse tangent.
 * The reverse of one unit, from gy = dL/d(out):
 *   gs = N_post^T gy (or gy);  dL/dx = alpha gs + N_in^T (F^T (N_out^T gs)),
 * where an absent norm is the identity.  Post-LN and Pre-LN units do the
 * operations of the two-placement code this replaced, in its order, so the
 * defaults keep their bits. */
#include <string.h>
#include "layers/layers.h"
#include "model/pass.h"

static int norm_center(const lnk_config *c) { return c->norm == LNK_NORM_LAYERNORM; }

static void copy(double *y, const double *x, size_t n) { memcpy(y, x, n * sizeof(double)); }

/* y += alpha x (alpha = 1: y += x, no product). */
static void add_res(double *y, const double *x, double alpha, size_t n)
{
    if (alpha == 1.0)
        for (size_t i = 0; i < n; i++)
            y[i] += x[i];
    else
        for (size_t i = 0; i < n; i++)
            y[i] += alpha * x[i];
}

/* y = g + alpha x. */
static void sum_res(double *y, const double *g, const double *x, double alpha, size_t n)
{
    if (alpha == 1.0)
        for (size_t i = 0; i < n; i++)
            y[i] = g[i] + x[i];
    else
        for (size_t i = 0; i < n; i++)
            y[i] = g[i] + alpha * x[i];
}

/* y = alpha x. */
static void scale_copy(double *y, const double *x, double alpha, size_t n)
{
    if (alpha == 1.0)
        copy(y, x, n);
    else
        for (size_t i = 0; i < n; i++)
            y[i] = alpha * x[i];
}

/* ================================================================= norms */

/* nb->out = N(x) for a norm slot that is on. */
static void norm_fwd(const pass *p, const lnk_norm_ref *r, norm_buf *nb, const double *x, int R)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_norm_forward(nb->out, nb->xhat, nb->r, x, P(r->g), P(r->b), R, c->d, norm_center(c),
                     c->eps);
}

static void norm_fwd_t(const pass *p, const lnk_norm_ref *r, const norm_buf *nb, norm_buf *nt,
                       const double *xt, int R)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_norm_tangent(nt->out, nt->xhat, nt->r, xt, nb->xhat, nb->r, P(r->g), V(r->g), V(r->b), R,
                     c->d, norm_center(c));
}

/* dx (=|+=) N^T dy. */
static void norm_bwd(const pass *p, const lnk_norm_ref *r, const norm_buf *nb, double *dx,
                     const double *dy, int R, int accum)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_norm_backward(dx, G(r->g), G(r->b), dy, nb->xhat, nb->r, P(r->g), R, c->d,
                      norm_center(c), accum);
}

/* R{dx} (=|+=) R{N^T dy} (dy: the primal adjoint). */
static void norm_bwd_t(const pass *p, const lnk_norm_ref *r, const norm_buf *nb,
                       const norm_buf *nt, double *dxt, const double *dyt, const double *dy, int R,
                       int accum)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    lnk_norm_backward_tangent(dxt, HV(r->g), HV(r->b), dyt, dy, nb->xhat, nt->xhat, nb->r, nt->r,
                              P(r->g), V(r->g), R, c->d, norm_center(c), accum);
}

static lnk_norm_ref final_ref(const lnk_stack *st) { return (lnk_norm_ref){1, st->fg, st->fb}; }

static int sinusoidal(const lnk_config *c) { return c->pos == LNK_PE_SINUSOIDAL; }

/* lnk_model_set_progress's call after unit k of st in a sweep: forward
 * sweeps run the encoder first, reverse ones the decoder first. */
static void tick(const pass *p, const lnk_stack *st, int sweep, int k)
{
    const lnk_model *m = p->m;
    int ne = m->has_enc ? m->enc.n_units : 0, nd = m->has_dec ? m->dec.n_units : 0;
    int fwd = sweep == LNK_SWEEP_FORWARD || sweep == LNK_SWEEP_TANGENT;
    int done = fwd ? (st == &m->dec ? ne : 0) + k + 1 : (st == &m->enc ? nd : 0) + st->n_units - k;
    m->progress(m->progress_ctx, sweep, done, ne + nd);
}
#define TICK(sweep)                    \
    do {                               \
        if (p->m->progress)            \
            tick(p, st, (sweep), k);   \
    } while (0)

/* =============================================================== forward */

void lnk_stack_fwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T, const double *mem,
                   const uint8_t *mmask, int Tm)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T;
    size_t n = (size_t)R * d;
    stack_act *s = &sp->a;
    lnk_embed_forward(s->x[0], sp->ids, P(st->emb), P(st->pos), R, T, d, sinusoidal(c),
                      c->input_scale);
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        unit_buf *b = &s->u[k];
        const double *x = s->x[k], *h = b->nin.out; /* h aliases x without N_in */
        if (u->nin.on)
            norm_fwd(p, &u->nin, &b->nin, x, R);
        double *tgt = u->post ? b->s : s->x[k + 1]; /* alpha x + N_out(F) */
        double *out = u->nout.on ? b->f : tgt;     /* where F writes */
        if (u->kind == UNIT_FFN)
            lnk_ffn_unit_fwd(p, u, b, h, R, out);
        else if (u->kind == UNIT_SELF_ATTN)
            lnk_attn_unit_fwd(p, u, b, h, h, sp->kmask, T, T, out);
        else
            lnk_attn_unit_fwd(p, u, b, h, mem, mmask, T, Tm, out);
        if (u->nout.on) {
            norm_fwd(p, &u->nout, &b->nout, b->f, R);
            sum_res(tgt, b->nout.out, x, u->alpha, n);
        } else {
            add_res(tgt, x, u->alpha, n);
        }
        if (u->npost.on) /* its output is x[k + 1] */
            norm_fwd(p, &u->npost, &b->npost, b->s, R);
        TICK(LNK_SWEEP_FORWARD);
    }
    if (st->fg >= 0) {
        lnk_norm_ref fr = final_ref(st);
        norm_fwd(p, &fr, &s->fin, s->x[st->n_units], R);
    }
}

/* The lowest unit a span's level from reaches (lnk_span: 0 and 1 both unit 0). */
static int span_unit(int from) { return from > 0 ? from - 1 : 0; }

void lnk_stack_fwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp, stack_act *ta,
                     int T, const double *mem, const double *memt, int Tm, int from)
{
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    /* below the span every tangent is zero (v is, and so is what enters) */
    if (from > st->n_units + 1) {
        memset(ta->z, 0, n * sizeof(double));
        return;
    }
    if (from > 0)
        memset(ta->x[from - 1], 0, n * sizeof(double));
    else
        lnk_embed_tangent(ta->x[0], sp->ids, V(st->emb), V(st->pos), R, T, d, sinusoidal(c),
                          c->input_scale);
    for (int k = span_unit(from); k < st->n_units; k++) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k];
        unit_buf *t = &ta->u[k];
        const double *xt = ta->x[k], *h = b->nin.out, *ht = t->nin.out;
        if (u->nin.on)
            norm_fwd_t(p, &u->nin, &b->nin, &t->nin, xt, R);
        double *tgtt = u->post ? t->s : ta->x[k + 1];
        double *outt = u->nout.on ? t->f : tgtt;
        if (u->kind == UNIT_FFN)
            lnk_ffn_unit_fwd_t(p, u, b, t, h, ht, R, outt);
        else if (u->kind == UNIT_SELF_ATTN)
            lnk_attn_unit_fwd_t(p, u, b, t, h, ht, h, ht, T, T, outt);
        else
            lnk_attn_unit_fwd_t(p, u, b, t, h, ht, mem, memt, T, Tm, outt);
        if (u->nout.on) {
            norm_fwd_t(p, &u->nout, &b->nout, &t->nout, t->f, R);
            sum_res(tgtt, t->nout.out, xt, u->alpha, n);
        } else {
            add_res(tgtt, xt, u->alpha, n);
        }
        if (u->npost.on)
            norm_fwd_t(p, &u->npost, &b->npost, &t->npost, t->s, R);
        TICK(LNK_SWEEP_TANGENT);
    }
    if (st->fg >= 0) {
        lnk_norm_ref fr = final_ref(st);
        norm_fwd_t(p, &fr, &s->fin, &ta->fin, ta->x[st->n_units], R);
    }
}

/* =============================================================== reverse */

void lnk_stack_bwd(const pass *p, const lnk_stack *st, stack_buf *sp, int T, const double *mem,
                   int Tm, double *gmem, int from)
{
    if (from > st->n_units + 1)
        return; /* no tensor of the span in this stack */
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    int d = c->d, R = p->B * T, n_u = st->n_units;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    if (st->fg >= 0) { /* gy <- N_final^T dL/dz */
        lnk_norm_ref fr = final_ref(st);
        norm_bwd(p, &fr, &s->fin, sp->g[n_u - 1].gy, sp->gz, R, 0);
    }
    for (int k = n_u - 1; k >= span_unit(from); k--) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k];
        unit_adj *g = &sp->g[k];
        double *gin = k ? sp->g[k - 1].gy : sp->gemb; /* dL/d(unit input) */
        const double *h = b->nin.out, *gs = g->gy, *dF;
        if (u->npost.on) {
            norm_bwd(p, &u->npost, &b->npost, g->gs, g->gy, R, 0);
            gs = g->gs;
        }
        scale_copy(gin, gs, u->alpha, n);
        dF = gs;
        if (u->nout.on) {
            norm_bwd(p, &u->nout, &b->nout, g->gf, gs, R, 0);
            dF = g->gf;
        }
        double *dh = gin; /* where dL/dh accumulates */
        if (u->nin.on) {
            memset(g->gn, 0, n * sizeof(double));
            dh = g->gn;
        }
        if (u->kind == UNIT_FFN)
            lnk_ffn_unit_bwd(p, u, b, g, h, R, dF, dh);
        else if (u->kind == UNIT_SELF_ATTN)
            lnk_attn_unit_bwd(p, u, b, g, h, h, T, T, dF, dh, dh);
        else
            lnk_attn_unit_bwd(p, u, b, g, h, mem, T, Tm, dF, dh, gmem);
        if (u->nin.on)
            norm_bwd(p, &u->nin, &b->nin, gin, g->gn, R, 1);
        TICK(LNK_SWEEP_REVERSE);
    }
    if (p->grad && from <= 0)
        lnk_embed_backward(G(st->emb), G(st->pos), sp->ids, sp->gemb, R, T, d, sinusoidal(c),
                           c->input_scale);
}

void lnk_stack_bwd_t(const pass *p, const lnk_stack *st, const stack_buf *sp, const stack_act *ta,
                     int T, const double *mem, const double *memt, int Tm, double *gmemt, int from)
{
    if (from > st->n_units + 1)
        return; /* no tensor of the span in this stack */
    const lnk_model *m = p->m;
    const lnk_config *c = &m->cfg;
    grad_buf *gt = &p->ws->gt;
    int d = c->d, R = p->B * T, n_u = st->n_units;
    size_t n = (size_t)R * d;
    const stack_act *s = &sp->a;
    double *gyt = gt->gy, *gxt = gt->gx, *tmp;
    if (st->fg >= 0) {
        lnk_norm_ref fr = final_ref(st);
        norm_bwd_t(p, &fr, &s->fin, &ta->fin, gxt, gyt, sp->gz, R, 0);
        tmp = gyt, gyt = gxt, gxt = tmp;
    }
    for (int k = n_u - 1; k >= span_unit(from); k--) {
        const lnk_unit *u = &st->u[k];
        const unit_buf *b = &s->u[k], *t = &ta->u[k];
        const unit_adj *g = &sp->g[k];
        const double *h = b->nin.out, *ht = t->nin.out;
        const double *gs = g->gy, *gst = gyt, *dF, *dFt;
        if (u->npost.on) {
            norm_bwd_t(p, &u->npost, &b->npost, &t->npost, gt->gs, gyt, g->gy, R, 0);
            gs = g->gs, gst = gt->gs;
        }
        scale_copy(gxt, gst, u->alpha, n);
        dF = gs, dFt = gst;
        if (u->nout.on) {
            norm_bwd_t(p, &u->nout, &b->nout, &t->nout, gt->gf, gst, gs, R, 0);
            dF = g->gf, dFt = gt->gf;
        }
        double *dht = gxt;
        if (u->nin.on) {
            memset(gt->gn, 0, n * sizeof(double));
            dht = gt->gn;
        }
        if (u->kind == UNIT_FFN)
            lnk_ffn_unit_bwd_t(p, u, b, t, g, h, ht, R, dF, dFt, dht);
        else if (u->kind == UNIT_SELF_ATTN)
            lnk_attn_unit_bwd_t(p, u, b, t, g, h, ht, h, ht, T, T, dF, dFt, dht, dht);
        else
            lnk_attn_unit_bwd_t(p, u, b, t, g, h, ht, mem, memt, T, Tm, dF, dFt, dht, gmemt);
        if (u->nin.on)
            norm_bwd_t(p, &u->nin, &b->nin, &t->nin, gxt, gt->gn, g->gn, R, 1);
        tmp = gyt, gyt = gxt, gxt = tmp;
        TICK(LNK_SWEEP_TANGENT_REVERSE);
    }
    if (from <= 0)
        lnk_embed_backward(HV(st->emb), HV(st->pos), sp->ids, gyt, R, T, d, sinusoidal(c),
                           c->input_scale);
}
