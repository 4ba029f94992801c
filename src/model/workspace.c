/* Workspace allocation: every buffer of the forward, reverse and tangent
 * passes for batches up to B x S (source) and B x T (stored target rows).
 *
 * Sizes are counted in size_t with saturating products, first as a plan (no
 * large allocation), and a workspace that would not fit in the memory this
 * process may use (lnkit/memory.h) is refused with a message naming the
 * sizes before anything large is allocated. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "lnkit/memory.h"
#include "layers/layers.h"
#include "model/workspace.h"

/* a b, or SIZE_MAX if it overflows (SIZE_MAX stays SIZE_MAX). */
static size_t mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

/* Count n elements of elem bytes; allocate them unless planning (big) - the
 * small structural arrays (meta) are allocated in a plan too. */
static void *aalloc(ws_arena *a, size_t n, size_t elem, int big)
{
    if (n == 0)
        n = 1;
    size_t b = mul(n, elem);
    a->bytes = add(a->bytes, b);
    if ((a->plan && big) || a->oom)
        return NULL;
    if (a->n == a->cap) {
        int nc = a->cap ? 2 * a->cap : 256;
        void **p = realloc(a->p, sizeof *p * (size_t)nc);
        if (!p) {
            a->oom = 1;
            return NULL;
        }
        a->p = p;
        a->cap = nc;
    }
    void *p = b == SIZE_MAX ? NULL : calloc(n, elem);
    if (!p)
        a->oom = 1;
    else
        a->p[a->n++] = p;
    return p;
}

static void arena_free(ws_arena *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
    memset(a, 0, sizeof *a);
}

#define D(a, n) ((double *)aalloc((a), (n), sizeof(double), 1))
#define META(a, n, T) ((T *)aalloc((a), (n), sizeof(T), 0))
/* a plan fills structural arrays only; the pointers they hold stay NULL */
#define META_OK(a, p) ((p) || (a)->oom)

/* A norm slot's cache (and its output, unless out is given: an alias). */
static void build_norm(ws_arena *a, const lnk_norm_ref *r, size_t R, size_t d, double *out,
                       norm_buf *nb)
{
    if (!r->on)
        return;
    nb->xhat = D(a, mul(R, d));
    nb->r = D(a, R);
    nb->out = out ? out : D(a, mul(R, d));
}

/* A unit's attention buffers (tan: the tangent copy). */
static void build_attn_act(ws_arena *a, const lnk_config *c, const lnk_unit *un, size_t B,
                           size_t T, size_t Tm, unit_buf *b)
{
    size_t d = (size_t)c->d, h = (size_t)c->h, R = mul(B, T);
    int qk = c->qk_norm != LNK_NORM_NONE, cross = un->kind == UNIT_CROSS_ATTN;
    size_t Rk = cross ? mul(B, Tm) : R, Tk = cross ? Tm : T;
    b->q = D(a, mul(R, d));
    b->k = D(a, mul(Rk, d));
    b->v = D(a, mul(Rk, d));
    b->qn = qk ? D(a, mul(R, d)) : b->q;
    b->kn = qk ? D(a, mul(Rk, d)) : b->k;
    b->qs = qk ? D(a, mul(R, h)) : NULL;
    b->ks = qk ? D(a, mul(Rk, h)) : NULL;
    b->qp = un->rope ? D(a, mul(R, d)) : b->qn;
    b->kp = un->rope ? D(a, mul(Rk, d)) : b->kn;
    b->a = D(a, mul(mul(mul(B, h), T), Tk));
    b->ctx = D(a, mul(R, d));
}

/* A unit's FFN buffers; the activation's cache hd only in the primal copy. */
static void build_ffn_act(ws_arena *a, const lnk_config *c, size_t R, int tan, unit_buf *b)
{
    size_t n = mul(R, (size_t)c->d_ff);
    b->hpre = D(a, n);
    b->hgate = c->activation == LNK_ACT_SWIGLU ? D(a, n) : NULL;
    b->hact = D(a, n);
    b->hd = !tan && c->activation != LNK_ACT_RELU ? D(a, n) : NULL;
}

/* One set of activation buffers (primal, or tangent: tan) for a stack of B
 * rows of T positions attending to a memory of Tm positions. */
static int build_act(ws_arena *a, const lnk_model *m, const lnk_stack *st, size_t B, size_t T,
                     size_t Tm, int tan, stack_act *s)
{
    const lnk_config *c = &m->cfg;
    size_t d = (size_t)c->d, R = mul(B, T);
    s->u = META(a, (size_t)st->n_units, unit_buf);
    s->x = META(a, (size_t)st->n_units + 1, double *);
    if (!s->u || !s->x)
        return LNK_ENOMEM;
    s->x[0] = D(a, mul(R, d));
    for (int k = 0; k < st->n_units; k++) {
        const lnk_unit *un = &st->u[k];
        unit_buf *b = &s->u[k];
        if (un->kind == UNIT_FFN)
            build_ffn_act(a, c, R, tan, b);
        else
            build_attn_act(a, c, un, B, T, Tm, b);
        build_norm(a, &un->nin, R, d, NULL, &b->nin);
        if (!un->nin.on)
            b->nin.out = s->x[k];
        if (un->nout.on) {
            b->f = D(a, mul(R, d));
            build_norm(a, &un->nout, R, d, NULL, &b->nout);
        }
        if (un->post) {
            b->s = D(a, mul(R, d));
            build_norm(a, &un->npost, R, d, NULL, &b->npost);
            s->x[k + 1] = un->npost.on ? b->npost.out : b->s;
        } else {
            s->x[k + 1] = D(a, mul(R, d));
        }
    }
    if (st->fg >= 0) {
        lnk_norm_ref fr = {1, st->fg, st->fb};
        build_norm(a, &fr, R, d, NULL, &s->fin);
        s->z = s->fin.out;
    } else {
        s->z = s->x[st->n_units];
    }
    return LNK_OK;
}

/* Attention adjoints: gctx, gq of R rows, gk, gv of Rk rows, and gqn, gkn
 * with qk-norm (else aliases of gq, gk). */
static void build_attn_adj(ws_arena *a, size_t R, size_t Rk, size_t d, int qk, double **gctx,
                           double **gq, double **gk, double **gv, double **gqn, double **gkn)
{
    *gctx = D(a, mul(R, d));
    *gq = D(a, mul(R, d));
    *gk = D(a, mul(Rk, d));
    *gv = D(a, mul(Rk, d));
    *gqn = qk ? D(a, mul(R, d)) : *gq;
    *gkn = qk ? D(a, mul(Rk, d)) : *gk;
}

/* FFN adjoints of R rows: gh, and ga (an alias of gh for ReLU), gc (SwiGLU). */
static void build_ffn_adj(ws_arena *a, const lnk_config *c, size_t R, double **gh, double **ga,
                          double **gc)
{
    size_t n = mul(R, (size_t)c->d_ff);
    *gh = D(a, n);
    *ga = c->activation == LNK_ACT_RELU ? *gh : D(a, n);
    *gc = c->activation == LNK_ACT_SWIGLU ? D(a, n) : NULL;
}

/* The unit seams' adjoints gs, gf, gn of R rows, where the unit has the norm. */
static void build_seams(ws_arena *a, const lnk_unit *un, size_t R, size_t d, double **gs,
                        double **gf, double **gn)
{
    *gs = un->npost.on ? D(a, mul(R, d)) : NULL;
    *gf = un->nout.on ? D(a, mul(R, d)) : NULL;
    *gn = un->nin.on ? D(a, mul(R, d)) : NULL;
}

/* Which seams (gs: N_post, gf: N_out, gn: N_in) some unit of m has. */
static void seams_used(const lnk_model *m, int *s, int *f, int *n)
{
    *s = *f = *n = 0;
    const lnk_stack *st[2] = {&m->enc, &m->dec};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < st[i]->n_units; k++) {
            *s |= st[i]->u[k].npost.on;
            *f |= st[i]->u[k].nout.on;
            *n |= st[i]->u[k].nin.on;
        }
}

/* Shared seam scratch of R rows: the seams some unit has. */
static void build_shared_seams(ws_arena *a, const lnk_model *m, size_t R, size_t d, double **gs,
                               double **gf, double **gn)
{
    int s, f, n;
    seams_used(m, &s, &f, &n);
    *gs = s ? D(a, mul(R, d)) : NULL;
    *gf = f ? D(a, mul(R, d)) : NULL;
    *gn = n ? D(a, mul(R, d)) : NULL;
}

/* Shared adjoint scratch of a primal state without the adjoint store. */
typedef struct {
    double *gy[2], *gs, *gf, *gn, *gctx, *gq, *gk, *gv, *gqn, *gkn, *gh, *ga, *gc;
} adj_scratch;

/* A stack's primal state: activations, ids, mask and the unit adjoints (own
 * buffers with adj, else aliases of sc).  gz: dL/dz, given (the encoder of a
 * seq2seq model: the decoder's cross-attention adjoint) or allocated. */
static int build_primal_stack(ws_arena *a, const lnk_model *m, const lnk_stack *st,
                              stack_buf *sp, size_t B, size_t T, size_t Tm, int adj,
                              const adj_scratch *sc)
{
    const lnk_config *c = &m->cfg;
    size_t d = (size_t)c->d, R = mul(B, T);
    int qk = c->qk_norm != LNK_NORM_NONE, fin = st->fg >= 0;
    sp->n_units = st->n_units;
    int st_ = build_act(a, m, st, B, T, Tm, 0, &sp->a);
    sp->ids = (int64_t *)aalloc(a, R, sizeof(int64_t), 1);
    sp->kmask = (uint8_t *)aalloc(a, R, sizeof(uint8_t), 1);
    sp->g = META(a, (size_t)st->n_units, unit_adj);
    if (st_ || !META_OK(a, sp->g))
        return LNK_ENOMEM;
    if (!sp->gz)
        sp->gz = D(a, mul(R, d));
    int n = st->n_units, alt = 0;
    for (int k = n - 1; k >= 0; k--) {
        unit_adj *g = &sp->g[k];
        const lnk_unit *un = &st->u[k];
        if (k == n - 1 && !fin)
            g->gy = sp->gz;
        else if (adj)
            g->gy = D(a, mul(R, d));
        else
            g->gy = sc->gy[alt++ % 2];
        if (!adj) {
            g->gs = sc->gs, g->gf = sc->gf, g->gn = sc->gn;
            g->gctx = sc->gctx, g->gq = sc->gq, g->gk = sc->gk, g->gv = sc->gv;
            g->gqn = sc->gqn, g->gkn = sc->gkn, g->gh = sc->gh, g->ga = sc->ga, g->gc = sc->gc;
            continue;
        }
        build_seams(a, un, R, d, &g->gs, &g->gf, &g->gn);
        if (un->kind == UNIT_FFN) {
            build_ffn_adj(a, c, R, &g->gh, &g->ga, &g->gc);
        } else {
            size_t Rkv = un->kind == UNIT_CROSS_ATTN ? mul(B, Tm) : R;
            build_attn_adj(a, R, Rkv, d, qk, &g->gctx, &g->gq, &g->gk, &g->gv, &g->gqn, &g->gkn);
        }
    }
    sp->gemb = adj ? D(a, mul(R, d)) : sc->gy[alt % 2];
    return LNK_OK;
}

/* The passes' sizes for batches of B rows, S src and T stored tgt columns:
 * positions per stack, rows of the widest stack (R), of the encoder memory
 * seen by the decoder (Rm), the larger of the two (Rk), of the output (Rout). */
typedef struct {
    size_t Tenc, Tdec, Tq, R, Rm, Rk, Rout;
} ws_dims;

static ws_dims dims_of(const lnk_model *m, size_t B, size_t S, size_t T)
{
    ws_dims z;
    z.Tenc = m->has_enc ? S : 0;
    z.Tdec = m->has_dec ? T - 1 : 0;
    z.Tq = z.Tenc > z.Tdec ? z.Tenc : z.Tdec;
    z.R = mul(B, z.Tq);
    z.Rm = mul(B, m->has_dec ? z.Tenc : 0);
    z.Rk = z.R > z.Rm ? z.R : z.Rm;
    z.Rout = mul(B, m->has_dec ? z.Tdec : z.Tenc);
    return z;
}

/* Build (or plan) a primal state into p (p->mem.plan set for a plan). */
static int build_primal(lnk_primal *p, const lnk_model *m, size_t B, size_t S, size_t T)
{
    ws_arena *a = &p->mem;
    const lnk_config *c = &m->cfg;
    ws_dims z = dims_of(m, B, S, T);
    size_t d = (size_t)c->d, Tenc = z.Tenc, Tdec = z.Tdec, R = z.R, Rk = z.Rk;
    adj_scratch sc;
    memset(&sc, 0, sizeof sc);
    if (!p->adj) {
        int qk = c->qk_norm != LNK_NORM_NONE;
        sc.gy[0] = D(a, mul(R, d));
        sc.gy[1] = D(a, mul(R, d));
        build_shared_seams(a, m, R, d, &sc.gs, &sc.gf, &sc.gn);
        build_attn_adj(a, R, Rk, d, qk, &sc.gctx, &sc.gq, &sc.gk, &sc.gv, &sc.gqn, &sc.gkn);
        build_ffn_adj(a, c, R, &sc.gh, &sc.ga, &sc.gc);
    }
    int st = LNK_OK;
    if (m->has_enc)
        st = build_primal_stack(a, m, &m->enc, &p->enc, B, Tenc, 0, p->adj, &sc);
    /* the encoder's dL/dz (its own buffer, never scratch) collects the decoder's
     * cross-attention adjoints while the decoder's units run */
    if (!st && m->has_dec)
        st = build_primal_stack(a, m, &m->dec, &p->dec, B, Tdec, Tenc, p->adj, &sc);
    p->labels = (int64_t *)aalloc(a, z.Rout, sizeof(int64_t), 1);
    p->prob = D(a, mul(z.Rout, (size_t)m->n_out));
    p->dlogits = p->adj ? D(a, mul(z.Rout, (size_t)m->n_out)) : p->prob;
    p->ascr = D(a, mul(z.Tq, z.Tq));
    if (c->pos == LNK_PE_ROPE) {
        size_t half = (size_t)(c->d / c->h / 2);
        p->rope_cos = D(a, mul(z.Tq, half));
        p->rope_sin = D(a, mul(z.Tq, half));
    }
    return st;
}

/* The check that every int row count of the passes fits CBLAS's int. */
static int rows_fit(const lnk_model *m, size_t B, size_t S, size_t T)
{
    return mul(dims_of(m, B, S, T).R, (size_t)m->cfg.h) <= INT_MAX;
}

static int check_shape(const lnk_model *m, int B, int S, int T)
{
    if (B < 1 || (m->has_enc && S < 1) || (m->has_dec && T < 2))
        return lnk_error(LNK_EINVAL, "workspace: B = %d, S = %d, T = %d: need B >= 1%s%s", B, S,
                         T, m->has_enc ? ", S >= 1" : "",
                         m->has_dec ? ", T >= 2 (stored target rows)" : "");
    return LNK_OK;
}

/* The refusal of a workspace of `bytes` that does not fit, naming the sizes
 * and the largest part (the attention maps, B h Tq Tk doubles each). */
static int too_big(const lnk_model *m, int B, int S, int T, size_t bytes, size_t limit,
                   int rows)
{
    const lnk_config *c = &m->cfg;
    size_t Tq = dims_of(m, (size_t)B, (size_t)S, (size_t)T).Tq;
    char b1[48], b2[48], b3[48];
    size_t map = mul(mul(mul((size_t)B, (size_t)c->h), Tq), Tq);
    if (rows)
        return lnk_error(LNK_EINVAL, "workspace: B = %d, S = %d, T = %d: B x %zu positions x h "
                         "= %d heads exceeds %d rows (the CBLAS int range)", B, S, T, Tq, c->h,
                         INT_MAX);
    return lnk_error(LNK_ENOMEM, "workspace: B = %d, S = %d, T = %d needs %s (an attention map "
                     "is B x h x %zu x %zu positions = %d x %d x %zu x %zu doubles = %s), more "
                     "than the %s this process may use (the machine's memory, or "
                     "LNK_MEM_LIMIT_MB); use shorter rows or fewer rows per chunk", B, S, T,
                     lnk_bytes_str(bytes, b1, sizeof b1), Tq, Tq, B, c->h, Tq, Tq,
                     lnk_bytes_str(mul(map, 8), b2, sizeof b2),
                     lnk_bytes_str(limit, b3, sizeof b3));
}

static size_t plan_primal(const lnk_model *m, int B, int S, int T, int adj)
{
    lnk_primal p;
    memset(&p, 0, sizeof p);
    p.adj = adj;
    p.mem.plan = 1;
    int st = build_primal(&p, m, (size_t)B, (size_t)S, (size_t)T);
    size_t bytes = st || p.mem.oom ? SIZE_MAX : p.mem.bytes;
    arena_free(&p.mem);
    return bytes;
}

size_t lnk_primal_bytes(const lnk_model *m, int B, int S, int T, int adj)
{
    if (check_shape(m, B, S, T))
        return SIZE_MAX;
    return plan_primal(m, B, S, T, adj);
}

void lnk_primal_free(lnk_primal *p)
{
    if (!p)
        return;
    arena_free(&p->mem);
    free(p);
}

static lnk_primal *primal_make(const lnk_model *m, int B, int S, int T, int adj)
{
    lnk_primal *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->Bmax = B, p->Smax = S, p->Tmax = T, p->adj = adj;
    if (build_primal(p, m, (size_t)B, (size_t)S, (size_t)T) || p->mem.oom) {
        lnk_primal_free(p);
        return NULL;
    }
    if (p->rope_cos) /* the angles of every position the passes can see */
        lnk_rope_table(p->rope_cos, p->rope_sin,
                       (int)dims_of(m, (size_t)B, (size_t)S, (size_t)T).Tq,
                       m->cfg.d / m->cfg.h);
    return p;
}

lnk_primal *lnk_primal_alloc(const lnk_model *m, int B, int S, int T, int adj)
{
    if (check_shape(m, B, S, T))
        return NULL;
    size_t bytes = plan_primal(m, B, S, T, adj), limit = lnk_memory_limit();
    int rows = !rows_fit(m, (size_t)B, (size_t)S, (size_t)T);
    if (rows || bytes > limit) {
        too_big(m, B, S, T, bytes, limit, rows);
        return NULL;
    }
    lnk_primal *p = primal_make(m, B, S, T, adj);
    if (!p)
        lnk_error(LNK_ENOMEM, "out of memory allocating a workspace of %zu bytes (B = %d, S = "
                  "%d, T = %d)", bytes, B, S, T);
    return p;
}

/* The tangent part of a workspace (build or plan). */
static int build_tangent(lnk_workspace *ws, size_t B, size_t S, size_t T)
{
    const lnk_model *m = ws->m;
    ws_arena *a = &ws->mem;
    const lnk_config *c = &m->cfg;
    ws_dims z = dims_of(m, B, S, T);
    size_t d = (size_t)c->d, R = z.R, Rm = z.Rm;
    int qk = c->qk_norm != LNK_NORM_NONE;
    int st = LNK_OK;
    if (m->has_enc)
        st = build_act(a, m, &m->enc, B, z.Tenc, 0, 1, &ws->enct);
    if (!st && m->has_dec)
        st = build_act(a, m, &m->dec, B, z.Tdec, z.Tenc, 1, &ws->dect);
    ws->logits_t = D(a, mul(z.Rout, (size_t)m->n_out));
    grad_buf *g = &ws->gt;
    g->gy = D(a, mul(R, d));
    g->gx = D(a, mul(R, d));
    build_shared_seams(a, m, R, d, &g->gs, &g->gf, &g->gn);
    build_attn_adj(a, R, z.Rk, d, qk, &g->gctx, &g->gq, &g->gk, &g->gv, &g->gqn, &g->gkn);
    build_ffn_adj(a, c, R, &g->gh, &g->ga, &g->gc);
    g->gmem = Rm ? D(a, mul(Rm, d)) : NULL;
    g->ascr = D(a, mul(2, mul(z.Tq, z.Tq)));
    return st;
}

void lnk_workspace_free(lnk_workspace *ws)
{
    if (!ws)
        return;
    lnk_primal_free(ws->own);
    arena_free(&ws->mem);
    free(ws);
}

size_t lnk_workspace_bytes(const lnk_workspace *ws)
{
    return ws->mem.bytes + (ws->own ? ws->own->mem.bytes : 0);
}

void lnk_workspace_use(lnk_workspace *ws, lnk_primal *pr) { ws->pr = pr ? pr : ws->own; }

/* Bytes of both parts of a workspace (the tangent part only with hvp). */
static size_t plan_workspace(const lnk_model *m, int B, int S, int T, int hvp)
{
    size_t bytes = plan_primal(m, B, S, T, hvp);
    if (hvp) {
        lnk_workspace w;
        memset(&w, 0, sizeof w);
        w.m = m;
        w.mem.plan = 1;
        int st = build_tangent(&w, (size_t)B, (size_t)S, (size_t)T);
        bytes = st || w.mem.oom ? SIZE_MAX : add(bytes, w.mem.bytes);
        arena_free(&w.mem);
    }
    return bytes;
}

size_t lnk_workspace_plan(const lnk_model *m, int B, int S, int T, unsigned flags)
{
    if (check_shape(m, B, S, T))
        return SIZE_MAX;
    return plan_workspace(m, B, S, T, (flags & LNK_WS_HVP) != 0);
}

lnk_workspace *lnk_workspace_alloc(const lnk_model *m, int B, int S, int T, unsigned flags)
{
    if (check_shape(m, B, S, T))
        return NULL;
    int hvp = (flags & LNK_WS_HVP) != 0;
    /* plan both parts, refuse what cannot fit, then allocate */
    size_t bytes = plan_workspace(m, B, S, T, hvp), limit = lnk_memory_limit();
    int rows = !rows_fit(m, (size_t)B, (size_t)S, (size_t)T);
    if (rows || bytes > limit) {
        too_big(m, B, S, T, bytes, limit, rows);
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
    ws->hvp = hvp;
    ws->own = primal_make(m, B, S, T, hvp);
    if (ws->own && hvp && (build_tangent(ws, (size_t)B, (size_t)S, (size_t)T) || ws->mem.oom)) {
        lnk_primal_free(ws->own);
        ws->own = NULL;
    }
    if (!ws->own) {
        lnk_workspace_free(ws);
        lnk_error(LNK_ENOMEM, "out of memory allocating the workspace (B = %d, S = %d, T = %d, "
                  "%zu bytes)", B, S, T, bytes);
        return NULL;
    }
    ws->pr = ws->own;
    return ws;
}
