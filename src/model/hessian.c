/* The loss Hessian as an operator: data-set sums over chunks, parameter
 * blocks selected by glob patterns (see include/lnkit/hessian.h). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/comm.h"
#include "lnkit/error.h"
#include "lnkit/hessian.h"
#include "lnkit/memory.h"
#include "model/pass.h"

int lnk_block_select(const lnk_model *m, const char *patterns, lnk_block *out)
{
    const lnk_layout *lay = lnk_model_layout(m);
    memset(out, 0, sizeof *out);
    out->tensor = malloc(sizeof(int) * (size_t)lay->n_tensors);
    char *pat = strdup(patterns && *patterns ? patterns : "*");
    if (!out->tensor || !pat) {
        free(out->tensor);
        free(pat);
        return lnk_error(LNK_ENOMEM, "out of memory selecting a block");
    }
    char *sel = calloc((size_t)lay->n_tensors, 1);
    int st = LNK_OK;
    char *save = NULL;
    for (char *p = strtok_r(pat, ",", &save); p && !st; p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ')
            p++;
        int hit = 0;
        for (int i = 0; i < lay->n_tensors; i++)
            if (fnmatch(p, lay->t[i].name, 0) == 0)
                sel[i] = 1, hit = 1;
        if (!hit) {
            /* list the available names in the message (truncated if very long) */
            char names[700];
            size_t len = 0;
            for (int i = 0; i < lay->n_tensors && len + 80 < sizeof names; i++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                        lay->t[i].name);
            if (len + 80 >= sizeof names)
                snprintf(names + len, sizeof names - len, ", ... (%d tensors)", lay->n_tensors);
            st = lnk_error(LNK_EINVAL, "block pattern '%s' matches no tensor; the tensors are: %s",
                           p, names);
        }
    }
    for (int i = 0; i < lay->n_tensors && !st; i++)
        if (sel[i]) {
            out->tensor[out->n_tensors++] = i;
            out->n += lay->t[i].size;
        }
    free(sel);
    free(pat);
    if (st)
        lnk_block_free(out);
    return st;
}

void lnk_block_free(lnk_block *b)
{
    free(b->tensor);
    memset(b, 0, sizeof *b);
}

void lnk_block_gather(const lnk_model *m, const lnk_block *b, const double *full, double *part)
{
    const lnk_layout *lay = lnk_model_layout(m);
    size_t o = 0;
    for (int k = 0; k < b->n_tensors; k++) {
        const lnk_tensor_info *t = &lay->t[b->tensor[k]];
        memcpy(part + o, full + t->offset, sizeof(double) * t->size);
        o += t->size;
    }
}

void lnk_block_scatter(const lnk_model *m, const lnk_block *b, const double *part, double *full)
{
    const lnk_layout *lay = lnk_model_layout(m);
    size_t o = 0;
    for (int k = 0; k < b->n_tensors; k++) {
        const lnk_tensor_info *t = &lay->t[b->tensor[k]];
        memcpy(full + t->offset, part + o, sizeof(double) * t->size);
        o += t->size;
    }
}

/* Re-raise the last error with a chunk prefix (the message is copied first:
 * lnk_error must not format its own buffer into itself). */
static int chunk_error(int st, int c)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    return lnk_error(st, "data set chunk %d: %s", c, msg);
}

struct lnk_hessian {
    const lnk_model *m;
    const double *theta;
    const lnk_batch *chunks;
    int n_chunks;
    double *weight;       /* N_c / N */
    lnk_block block;
    lnk_span span;        /* the block's span: the tangent pass skips what is below */
    int full;             /* the block is every parameter: no gather/scatter */
    lnk_workspace *ws;
    double *v, *hv, *acc; /* full-size buffers */
    long n_products;
    /* data parallel over a process group (lnk_hessian_alloc_dataset) */
    int dist;
    const lnk_procs *procs;
    lnk_group group;
    size_t *count, *displ; /* block slices of the ranks */
    double *xb, *yb;       /* whole block vectors */
    /* the primal passes kept between products (see lnk_hessian_set_cache) */
    size_t cache_budget;   /* bytes, or LNK_HESSIAN_CACHE_AUTO */
    int cache_planned;     /* decided at the first product */
    lnk_primal **store;    /* [n_chunks]: the chunk's own primal state, or NULL (shares ws's) */
    int own_holds;         /* chunk whose pass ws's own primal state holds, -1: none */
    int reuse;             /* 0: recompute every pass (budget 0) */
    int n_cached;
    size_t cache_bytes;
    /* which operator (lnk_hessian_set_kind) and, for F, a full-size buffer for G v */
    lnk_op_kind kind;
    double *gbuf;
};

/* A workspace large enough for every chunk. */
static lnk_workspace *ws_for(const lnk_model *m, const lnk_batch *chunks, int n, unsigned flags)
{
    int B = 1, S = 0, T = 0;
    for (int c = 0; c < n; c++) {
        B = chunks[c].B > B ? chunks[c].B : B;
        S = chunks[c].S > S ? chunks[c].S : S;
        T = chunks[c].T > T ? chunks[c].T : T;
    }
    return lnk_workspace_alloc(m, B, S, T, flags);
}

/* Check the chunks and compute their weights N_c / N.  N is their own
 * total, or given (n_given > 0) when they are one rank's shard of a larger
 * data set (a shard may be empty). */
static int weights(const lnk_model *m, const lnk_batch *chunks, int n, double *w, size_t *total,
                   size_t n_given)
{
    if (n < 1 && !n_given)
        return lnk_error(LNK_EINVAL, "data set: no chunks");
    size_t N = 0;
    for (int c = 0; c < n; c++) {
        int st = lnk_batch_check(m, &chunks[c]);
        if (st)
            return n > 1 || n_given ? chunk_error(st, c) : st;
        size_t nc = lnk_batch_n_scored(m, &chunks[c]);
        if (w)
            w[c] = (double)nc;
        N += nc;
    }
    if (n_given)
        N = n_given;
    if (w)
        for (int c = 0; c < n; c++)
            w[c] /= (double)N;
    if (total)
        *total = N;
    return LNK_OK;
}

/* Which chunks keep their primal pass, decided at the first product: with a
 * budget of B bytes (auto: half of the memory available now, over the job's
 * ranks), chunks in order get a primal state of their own while the sum of
 * their sizes fits in B; the others share the workspace's, whose pass is then
 * recomputed in every product unless only one chunk uses it.  A single chunk
 * always keeps its pass in the workspace (no extra memory) unless B is 0. */
static void plan_cache(lnk_hessian *h)
{
    h->cache_planned = 1;
    h->own_holds = -1;
    size_t budget = h->cache_budget;
    if (budget == LNK_HESSIAN_CACHE_AUTO) /* ranks may share the machine: each its share */
        budget = lnk_memory_available() / 2 / (size_t)lnk_comm_size();
    h->reuse = budget > 0;
    if (!h->reuse || h->n_chunks < 2) {
        h->n_cached = h->reuse ? h->n_chunks : 0;
        return;
    }
    h->store = calloc((size_t)h->n_chunks, sizeof *h->store);
    if (!h->store)
        return; /* no cache: every pass recomputed, same results */
    int shared = h->n_chunks;
    for (int c = 0; c < h->n_chunks; c++) {
        const lnk_batch *b = &h->chunks[c];
        size_t need = lnk_primal_bytes(h->m, b->B, b->S, b->T, 1);
        if (need > budget - h->cache_bytes || shared == 1)
            continue;
        h->store[c] = lnk_primal_alloc(h->m, b->B, b->S, b->T, 1);
        if (!h->store[c])
            break; /* out of memory after all: keep what we have */
        h->cache_bytes += need;
        shared--;
    }
    lnk_error_clear();
    h->n_cached = h->n_chunks - shared + (shared == 1);
}

/* dst = A v for the prepared chunk, A = H, G or F = H - G (h->kind). */
static int kind_apply(lnk_hessian *h, const double *v, double *dst)
{
    if (h->kind == LNK_OP_GGN)
        return lnk_model_ggn_apply_span(h->ws, v, NULL, dst, &h->span);
    if (h->kind == LNK_OP_HESSIAN)
        return lnk_model_tangent_pass(h->ws, v, dst, &h->span);
    int st = lnk_model_ggn_apply_span(h->ws, v, dst, h->gbuf, &h->span);
    size_t np = lnk_model_n_params(h->m);
    for (size_t i = 0; i < np && !st; i++)
        dst[i] -= h->gbuf[i];
    return st;
}

/* dst = H_c v for chunk c, reusing its kept primal pass when there is one. */
static int chunk_hvp(lnk_hessian *h, int c, const double *v, double *dst)
{
    lnk_primal *pr = h->store ? h->store[c] : NULL;
    lnk_workspace_use(h->ws, pr);
    int st = LNK_OK;
    if (pr ? !pr->valid : !(h->reuse && h->own_holds == c)) {
        if (!pr)
            h->own_holds = -1;
        st = lnk_model_hvp_prepare(h->ws, h->theta, &h->chunks[c], NULL, NULL);
        if (!st && !pr)
            h->own_holds = c;
    }
    if (!st)
        st = kind_apply(h, v, dst);
    lnk_workspace_use(h->ws, NULL);
    return st;
}

/* y = sum_c w_c H_c x on this process's chunks, whole block vectors. */
static int local_apply(lnk_hessian *h, const double *x, double *y)
{
    const lnk_model *m = h->m;
    size_t np = lnk_model_n_params(m);
    const double *v = x;
    if (!h->full) {
        memset(h->v, 0, sizeof(double) * np);
        lnk_block_scatter(m, &h->block, x, h->v);
        v = h->v;
    }
    /* one chunk of the whole data set, full block: write straight into y */
    int weighted = h->n_chunks > 1 || h->dist;
    double *out = (h->full && !weighted) ? y : h->acc;
    if (h->n_chunks == 0)
        memset(out, 0, sizeof(double) * np);
    if (!h->cache_planned)
        plan_cache(h);
    for (int c = 0; c < h->n_chunks; c++) {
        double *dst = weighted ? h->hv : out;
        int st = chunk_hvp(h, c, v, dst);
        if (st)
            return h->n_chunks > 1 ? chunk_error(st, c) : st;
        if (weighted) {
            double w = h->weight[c];
            if (c == 0)
                for (size_t i = 0; i < np; i++)
                    out[i] = w * dst[i];
            else
                for (size_t i = 0; i < np; i++)
                    out[i] += w * dst[i];
        }
    }
    if (out == y)
        return LNK_OK;
    if (h->full)
        memcpy(y, out, sizeof(double) * np);
    else
        lnk_block_gather(m, &h->block, out, y);
    return LNK_OK;
}

static int apply(void *ctx, const double *x, double *y)
{
    lnk_hessian *h = ctx;
    if (!h->dist) {
        int st = local_apply(h, x, y);
        h->n_products += st == LNK_OK;
        return st;
    }
    /* x is this rank's slice: the whole vector first, then the partial sum
     * of this rank's chunks, then its slice of the rank-ordered sum.  Every
     * rank learns of any rank's failure before the reduction (no hang). */
    const lnk_procs *g = h->procs;
    int st = g->allgather(g->ctx, x, h->xb, h->count, h->displ);
    if (st == LNK_OK)
        st = local_apply(h, h->xb, h->yb);
    st = g->agree(g->ctx, st, "hvp");
    if (st == LNK_OK)
        st = g->reduce_scatter(g->ctx, h->yb, y, h->count, h->displ);
    h->n_products += st == LNK_OK;
    return st;
}

/* What lnk_hessian_alloc and alloc_group share: weights (over
 * n_total tokens, 0: the chunks' own), block, checks, workspace, buffers. */
static int init(lnk_hessian *h, const lnk_model *m, const double *theta, const lnk_batch *chunks,
                int n_chunks, const char *patterns, size_t n_total)
{
    h->m = m;
    h->cache_budget = LNK_HESSIAN_CACHE_AUTO;
    h->own_holds = -1;
    h->theta = theta;
    h->chunks = chunks;
    h->n_chunks = n_chunks;
    size_t np = lnk_model_n_params(m);
    h->weight = malloc(sizeof(double) * (size_t)(n_chunks > 0 ? n_chunks : 1));
    if (!h->weight)
        return lnk_error(LNK_ENOMEM, "out of memory");
    int st = weights(m, chunks, n_chunks, h->weight, NULL, n_total);
    if (!st)
        st = lnk_block_select(m, patterns, &h->block);
    if (!st)
        st = lnk_params_check_finite(m, theta, "parameters");
    if (st)
        return st;
    h->full = h->block.n == np;
    lnk_model_span(m, &h->block, &h->span);
    h->ws = n_chunks ? ws_for(m, chunks, n_chunks, LNK_WS_HVP) : NULL;
    if (n_chunks && !h->ws)
        return LNK_ENOMEM; /* the workspace's message */
    h->v = malloc(sizeof(double) * np);
    h->hv = malloc(sizeof(double) * np);
    h->acc = malloc(sizeof(double) * np);
    if (!h->v || !h->hv || !h->acc)
        return lnk_error(LNK_ENOMEM, "out of memory for the Hessian operator (%zu parameters)", np);
    return LNK_OK;
}

lnk_hessian *lnk_hessian_alloc(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                               int n_chunks, const char *patterns)
{
    lnk_hessian *h = calloc(1, sizeof *h);
    if (!h) {
        lnk_error(LNK_ENOMEM, "out of memory");
        return NULL;
    }
    if (init(h, m, theta, chunks, n_chunks, patterns, 0) != LNK_OK) {
        lnk_hessian_free(h);
        return NULL;
    }
    return h;
}

void lnk_hessian_free(lnk_hessian *h)
{
    if (!h)
        return;
    for (int c = 0; h->store && c < h->n_chunks; c++)
        lnk_primal_free(h->store[c]);
    free(h->store);
    lnk_workspace_free(h->ws);
    lnk_block_free(&h->block);
    free(h->weight);
    free(h->v);
    free(h->hv);
    free(h->acc);
    free(h->gbuf);
    free(h->count);
    free(h->xb);
    free(h->yb);
    free(h);
}

lnk_operator lnk_hessian_operator(lnk_hessian *h)
{
    lnk_operator op = {h->block.n, h, apply, NULL};
    if (h->dist) {
        op.n = h->count[h->group.rank];
        op.group = &h->group;
    }
    return op;
}

void lnk_hessian_slice(const lnk_hessian *h, size_t *offset, size_t *count)
{
    *offset = h->dist ? h->displ[h->group.rank] : 0;
    *count = h->dist ? h->count[h->group.rank] : h->block.n;
}

int lnk_hessian_apply_full(lnk_hessian *h, const double *x, double *y)
{
    if (!h->dist)
        return apply(h, x, y);
    int me = h->group.rank;
    int st = apply(h, x + h->displ[me], y + h->displ[me]);
    if (st == LNK_OK)
        st = h->procs->allgather(h->procs->ctx, y + h->displ[me], y, h->count, h->displ);
    return st;
}

const lnk_block *lnk_hessian_block(const lnk_hessian *h) { return &h->block; }
long lnk_hessian_n_products(const lnk_hessian *h) { return h->n_products; }
size_t lnk_hessian_workspace_bytes(const lnk_hessian *h)
{
    return (h->ws ? lnk_workspace_bytes(h->ws) : 0) + h->cache_bytes +
           (3 + (h->gbuf != NULL)) * sizeof(double) * lnk_model_n_params(h->m);
}

int lnk_hessian_set_block(lnk_hessian *h, const char *patterns)
{
    lnk_block nb;
    int sel = lnk_block_select(h->m, patterns, &nb), st = sel;
    double *xb = NULL, *yb = NULL;
    if (!st && h->dist) {
        int P = h->group.size;
        if ((size_t)P > nb.n)
            st = lnk_error(LNK_EINVAL, "block of %zu parameters over %d ranks: fewer than one "
                           "per rank", nb.n, P);
        xb = st ? NULL : malloc(sizeof(double) * nb.n);
        yb = st ? NULL : malloc(sizeof(double) * nb.n);
        if (!st && (!xb || !yb))
            st = lnk_error(LNK_ENOMEM, "out of memory for a block of %zu parameters", nb.n);
    }
    if (h->dist)
        st = lnk_comm_agree(st);
    if (st) {
        if (!sel) /* a failed select has freed its own */
            lnk_block_free(&nb);
        free(xb);
        free(yb);
        return st;
    }
    lnk_block_free(&h->block);
    h->block = nb;
    h->full = nb.n == lnk_model_n_params(h->m);
    lnk_model_span(h->m, &h->block, &h->span);
    if (h->dist) {
        free(h->xb);
        free(h->yb);
        h->xb = xb;
        h->yb = yb;
        lnk_comm_split(nb.n, h->group.size, h->count, h->displ);
        h->group.n_global = nb.n;
        h->group.offset = h->displ[h->group.rank];
    }
    return LNK_OK;
}

int lnk_hessian_set_kind(lnk_hessian *h, lnk_op_kind kind)
{
    if (kind != LNK_OP_HESSIAN && kind != LNK_OP_GGN && kind != LNK_OP_FUNCTIONAL)
        return lnk_error(LNK_EINVAL, "hessian: unknown operator kind %d", (int)kind);
    if (kind == LNK_OP_FUNCTIONAL && !h->gbuf) {
        size_t np = lnk_model_n_params(h->m);
        h->gbuf = malloc(sizeof(double) * np);
        if (!h->gbuf)
            return lnk_error(LNK_ENOMEM, "out of memory for the functional part's buffer (%zu "
                             "parameters)", np);
    }
    h->kind = kind;
    return LNK_OK;
}

lnk_op_kind lnk_hessian_kind(const lnk_hessian *h) { return h->kind; }

static const char *const kind_names[] = {"hessian", "ggn", "functional"};

const char *lnk_op_kind_name(lnk_op_kind kind)
{
    return (unsigned)kind < 3 ? kind_names[kind] : "unknown";
}

int lnk_op_kind_parse(const char *s, lnk_op_kind *kind)
{
    for (int k = 0; k < 3; k++)
        if (s && !strcmp(s, kind_names[k])) {
            *kind = (lnk_op_kind)k;
            return LNK_OK;
        }
    return lnk_error(LNK_EINVAL, "operator '%s': expected hessian, ggn or functional",
                     s ? s : "(null)");
}

int lnk_hessian_set_cache(lnk_hessian *h, size_t bytes)
{
    if (h->cache_planned)
        return lnk_error(LNK_EINVAL, "hessian: the cache is set before the first product");
    h->cache_budget = bytes;
    return LNK_OK;
}

int lnk_hessian_cached_chunks(const lnk_hessian *h, size_t *bytes)
{
    if (bytes)
        *bytes = h->cache_bytes;
    return h->n_cached;
}

/* Sum over the chunks of (N_c / N) (L_c, grad_c), N their own token total or
 * n_given (a shard; it may hold no chunk, then the sums are 0). */
static int eval_chunks(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                       int n_chunks, size_t n_given, double *loss, double *grad, size_t *n_scored)
{
    size_t np = lnk_model_n_params(m), N;
    double *w = malloc(sizeof(double) * (size_t)(n_chunks > 0 ? n_chunks : 1));
    if (!w)
        return lnk_error(LNK_ENOMEM, "out of memory");
    int st = weights(m, chunks, n_chunks, w, &N, n_given);
    lnk_workspace *ws = st || !n_chunks ? NULL : ws_for(m, chunks, n_chunks, 0);
    double *g = grad ? malloc(sizeof(double) * np) : NULL;
    if (!st && ((n_chunks && !ws) || (grad && !g)))
        st = (n_chunks && !ws) ? LNK_ENOMEM : lnk_error(LNK_ENOMEM, "out of memory");
    double L = 0;
    if (!st && grad && !n_chunks)
        memset(grad, 0, sizeof(double) * np);
    for (int c = 0; c < n_chunks && !st; c++) {
        double Lc;
        st = lnk_model_eval(ws, theta, &chunks[c], &Lc, g, NULL);
        if (st) {
            st = n_chunks > 1 || n_given ? chunk_error(st, c) : st;
            break;
        }
        L += w[c] * Lc;
        if (grad)
            for (size_t i = 0; i < np; i++)
                grad[i] = c ? grad[i] + w[c] * g[i] : w[c] * g[i];
    }
    if (!st) {
        if (loss)
            *loss = L;
        if (n_scored)
            *n_scored = N;
    }
    free(g);
    free(w);
    lnk_workspace_free(ws);
    return st;
}

int lnk_dataset_eval(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                     int n_chunks, double *loss, double *grad, size_t *n_scored)
{
    return eval_chunks(m, theta, chunks, n_chunks, 0, loss, grad, n_scored);
}

/* ======================================================== data parallel */

int lnk_shard_chunks(const lnk_model *m, const lnk_batch *chunks, int n_chunks, int parts,
                     int *first)
{
    if (parts < 1 || n_chunks < 0)
        return lnk_error(LNK_EINVAL, "shard: %d chunks over %d parts", n_chunks, parts);
    double *cum = malloc(sizeof(double) * ((size_t)n_chunks + 1));
    if (!cum)
        return lnk_error(LNK_ENOMEM, "out of memory");
    cum[0] = 0;
    for (int c = 0; c < n_chunks; c++)
        cum[c + 1] = cum[c] + (double)lnk_batch_n_scored(m, &chunks[c]);
    double N = cum[n_chunks];
    first[0] = 0;
    for (int r = 1; r < parts; r++) {
        double target = N * r / parts;
        int c = first[r - 1];
        while (c < n_chunks && cum[c + 1] <= target)
            c++;
        /* cum[c] <= target < cum[c+1]: cut before or after chunk c */
        if (c < n_chunks && cum[c + 1] - target < target - cum[c])
            c++;
        first[r] = c;
    }
    first[parts] = n_chunks;
    free(cum);
    return LNK_OK;
}

static int group_sum(void *ctx, double *x, int count)
{
    const lnk_procs *g = ((const lnk_hessian *)ctx)->procs;
    return g->sum(g->ctx, x, (size_t)count);
}

/* The Hessian over a group g: this process's chunks of a data set of n_total
 * scored tokens.  Collective. */
static lnk_hessian *alloc_group(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                                int n_chunks, size_t n_total, const char *patterns,
                                const lnk_procs *g)
{
    int P = g ? g->size : 1, me = g ? g->rank : 0;
    if (P == 1)
        return lnk_hessian_alloc(m, theta, chunks, n_chunks, patterns);
    lnk_hessian *h = calloc(1, sizeof *h);
    int st = h ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory");
    if (!st && n_total == 0)
        st = lnk_error(LNK_EINVAL, "data set: no scored tokens");
    if (!st)
        st = init(h, m, theta, chunks, n_chunks, patterns, n_total);
    if (!st) {
        h->dist = 1;
        h->procs = g;
        h->count = malloc(sizeof(size_t) * 2 * (size_t)P);
        h->xb = malloc(sizeof(double) * h->block.n);
        h->yb = malloc(sizeof(double) * h->block.n);
        if (!h->count || !h->xb || !h->yb)
            st = lnk_error(LNK_ENOMEM, "out of memory for the Hessian operator (%zu parameters)",
                           lnk_model_n_params(m));
    }
    if (!st) {
        h->displ = h->count + P;
        lnk_comm_split(h->block.n, P, h->count, h->displ);
        if (h->count[P - 1] == 0)
            st = lnk_error(LNK_EINVAL, "block of %zu parameters over %d ranks: fewer than one "
                           "per rank", h->block.n, P);
        h->group = (lnk_group){me, P, h->block.n, h->displ[me], group_sum, h};
    }
    st = g->agree(g->ctx, st, "load");
    if (st) {
        lnk_hessian_free(h);
        return NULL;
    }
    return h;
}

lnk_hessian *lnk_hessian_alloc_dataset(const lnk_model *m, const double *theta,
                                       const lnk_dataset *ds, const char *patterns)
{
    return alloc_group(m, theta, ds->chunks, ds->n_chunks, ds->n_scored, patterns, ds->procs);
}

/* Mean loss and gradient over a group g's chunks (see lnk_dataset_loss). */
static int eval_group(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                      int n_chunks, size_t n_total, const lnk_procs *g, double *loss,
                      double *grad)
{
    if (!g || g->size == 1)
        return lnk_dataset_eval(m, theta, chunks, n_chunks, loss, grad, NULL);
    size_t np = lnk_model_n_params(m);
    int st = n_total ? LNK_OK : lnk_error(LNK_EINVAL, "data set: no scored tokens");
    double L = 0;
    if (!st)
        st = eval_chunks(m, theta, chunks, n_chunks, n_total, &L, grad, NULL);
    st = g->agree(g->ctx, st, "load");
    if (!st)
        st = g->sum(g->ctx, &L, 1);
    if (!st)
        st = g->sum_long(g->ctx, grad, np);
    if (!st)
        *loss = L;
    return st;
}

int lnk_dataset_loss(const lnk_model *m, const double *theta, const lnk_dataset *ds,
                     double *loss, double *grad)
{
    return eval_group(m, theta, ds->chunks, ds->n_chunks, ds->n_scored, ds->procs, loss, grad);
}
