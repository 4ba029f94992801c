/* Workspace allocation: every buffer of the forward, reverse and tangent
 * passes for batches up to B x S (source) and B x T (stored target rows). */
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "model/workspace.h"

static void *wsalloc(lnk_workspace *ws, size_t n_elems, size_t elem)
{
    if (n_elems == 0)
        n_elems = 1;
    if (ws->n_allocs == ws->cap_allocs) {
        int nc = ws->cap_allocs ? 2 * ws->cap_allocs : 256;
        void **a = realloc(ws->allocs, sizeof *a * nc);
        if (!a) {
            ws->oom = 1;
            return NULL;
        }
        ws->allocs = a;
        ws->cap_allocs = nc;
    }
    void *p = calloc(n_elems, elem);
    if (!p)
        ws->oom = 1;
    else {
        ws->allocs[ws->n_allocs++] = p;
        ws->bytes += n_elems * elem;
    }
    return p;
}

#define D(n) ((double *)wsalloc(ws, (size_t)(n), sizeof(double)))

/* One set of unit buffers (primal or tangent) for a stack. */
static int alloc_stack_set(lnk_workspace *ws, const lnk_stack *st, int B, int T, int Tm,
                           unit_buf *u, double **x, norm_buf *fin, double **z)
{
    const lnk_config *c = &ws->m->cfg;
    int d = c->d, h = c->h, post = c->norm_pos == LNK_POS_POST, nn = c->norm != LNK_NORM_NONE;
    int qk = c->qk_norm != LNK_NORM_NONE;
    size_t R = (size_t)B * T, Rm = (size_t)B * Tm;
    x[0] = D(R * d);
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *un = &st->u[k];
        unit_buf *b = &u[k];
        memset(b, 0, sizeof *b);
        if (un->kind == UNIT_FFN) {
            b->hpre = D(R * c->d_ff);
            b->hact = D(R * c->d_ff);
        } else {
            size_t Rk = un->kind == UNIT_CROSS_ATTN ? Rm : R;
            int Tk = un->kind == UNIT_CROSS_ATTN ? Tm : T;
            b->q = D(R * d);
            b->k = D(Rk * d);
            b->v = D(Rk * d);
            b->qn = qk ? D(R * d) : b->q;
            b->kn = qk ? D(Rk * d) : b->k;
            b->qr = qk ? D(R * h) : NULL;
            b->kr = qk ? D(Rk * h) : NULL;
            b->a = D((size_t)B * h * T * Tk);
            b->ctx = D(R * d);
        }
        if (nn) {
            b->n.xhat = D(R * d);
            b->n.r = D(R);
        }
        if (post) {
            b->s = D(R * d);
            b->n.out = nn ? D(R * d) : b->s;
            x[k + 1] = b->n.out;
        } else {
            b->n.out = nn ? D(R * d) : x[k];
            x[k + 1] = D(R * d);
        }
    }
    if (!post && nn) {
        fin->xhat = D(R * d);
        fin->r = D(R);
        fin->out = D(R * d);
        *z = fin->out;
    } else {
        *z = x[st->n_units];
    }
    return LNK_OK;
}

static int alloc_stack(lnk_workspace *ws, const lnk_stack *st, stack_buf *sb, int B, int T,
                       int Tm)
{
    sb->n_units = st->n_units;
    sb->u = wsalloc(ws, (size_t)st->n_units, sizeof(unit_buf));
    sb->x = wsalloc(ws, (size_t)st->n_units + 1, sizeof(double *));
    sb->ids = wsalloc(ws, (size_t)B * T, sizeof(int64_t));
    sb->kmask = wsalloc(ws, (size_t)B * T, sizeof(uint8_t));
    if (!sb->u || !sb->x || !sb->ids || !sb->kmask)
        return LNK_ENOMEM;
    alloc_stack_set(ws, st, B, T, Tm, sb->u, sb->x, &sb->fin, &sb->z);
    if (ws->hvp) {
        sb->ut = wsalloc(ws, (size_t)st->n_units, sizeof(unit_buf));
        sb->xt = wsalloc(ws, (size_t)st->n_units + 1, sizeof(double *));
        if (!sb->ut || !sb->xt)
            return LNK_ENOMEM;
        alloc_stack_set(ws, st, B, T, Tm, sb->ut, sb->xt, &sb->fint, &sb->zt);
    }
    return LNK_OK;
}

static void alloc_grad(lnk_workspace *ws, grad_buf *g, size_t R, size_t Rm, int TT)
{
    const lnk_config *c = &ws->m->cfg;
    int d = c->d, qk = c->qk_norm != LNK_NORM_NONE;
    size_t Rk = R > Rm ? R : Rm;
    g->gy = D(R * d);
    g->gx = D(R * d);
    g->gs = D(R * d);
    g->gctx = D(R * d);
    g->gq = D(R * d);
    g->gk = D(Rk * d);
    g->gv = D(Rk * d);
    g->gqn = qk ? D(R * d) : g->gq;
    g->gkn = qk ? D(Rk * d) : g->gk;
    g->gh = D(R * c->d_ff);
    g->gmem = Rm ? D(Rm * d) : NULL;
    g->ascr = D((size_t)4 * TT);
}

void lnk_workspace_free(lnk_workspace *ws)
{
    if (!ws)
        return;
    for (int i = 0; i < ws->n_allocs; i++)
        free(ws->allocs[i]);
    free(ws->allocs);
    free(ws);
}

size_t lnk_workspace_bytes(const lnk_workspace *ws) { return ws->bytes; }

lnk_workspace *lnk_workspace_alloc(const lnk_model *m, int B, int S, int T, unsigned flags)
{
    int Tenc = m->has_enc ? S : 0, Tdec = m->has_dec ? T - 1 : 0;
    if (B < 1 || (m->has_enc && S < 1) || (m->has_dec && T < 2)) {
        lnk_error(LNK_EINVAL, "workspace: B = %d, S = %d, T = %d: need B >= 1%s%s", B, S, T,
                  m->has_enc ? ", S >= 1" : "", m->has_dec ? ", T >= 2 (stored target rows)" : "");
        return NULL;
    }
    lnk_workspace *ws = calloc(1, sizeof *ws);
    if (!ws) {
        lnk_error(LNK_ENOMEM, "out of memory allocating the workspace");
        return NULL;
    }
    ws->m = m;
    ws->Bmax = B;
    ws->Smax = S;
    ws->Tmax = T;
    ws->hvp = (flags & LNK_WS_HVP) != 0;
    int st = LNK_OK;
    if (m->has_enc)
        st = alloc_stack(ws, &m->enc, &ws->enc, B, Tenc, 0);
    if (!st && m->has_dec)
        st = alloc_stack(ws, &m->dec, &ws->dec, B, Tdec, Tenc);
    size_t Rout = (size_t)B * (m->has_dec ? Tdec : Tenc);
    size_t R = (size_t)B * (Tenc > Tdec ? Tenc : Tdec), Rm = (size_t)B * (m->has_dec ? Tenc : 0);
    int Tq = Tenc > Tdec ? Tenc : Tdec;
    ws->labels = wsalloc(ws, Rout, sizeof(int64_t));
    ws->logits = D(Rout * m->n_out);
    alloc_grad(ws, &ws->g, R, Rm, Tq * Tq);
    if (ws->hvp) {
        ws->logits_t = D(Rout * m->n_out);
        alloc_grad(ws, &ws->gt, R, Rm, Tq * Tq);
    }
    /* every pointer above comes from wsalloc: any NULL means out of memory */
    if (st || ws->oom) {
        lnk_workspace_free(ws);
        lnk_error(LNK_ENOMEM, "out of memory allocating the workspace (B = %d, S = %d, T = %d)",
                  B, S, T);
        return NULL;
    }
    return ws;
}
