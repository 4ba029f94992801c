/* lnkit model workspace: every activation, cache, adjoint and tangent buffer.
 * Internal to src/model.
 *
 * Two parts.  The primal state of a batch (lnk_primal): the forward
 * activations and caches, the softmax probabilities, and, in a workspace for
 * H v, the adjoints of the primal reverse pass that the tangent reverse pass
 * reads; it stays valid for products at the same weights and batch.  The
 * tangent part (the R{.} copies and the reverse pass's tangent scratch) is
 * the workspace's own and serves any primal state of the same model whose
 * sizes fit it (the Hessian keeps one primal state per cached chunk). */
#ifndef LNK_WORKSPACE_H
#define LNK_WORKSPACE_H

#include "model/internal.h"

/* A row norm's cache: xhat [R,n], r [R] (tangent copy: R{xhat}, R{r}) and the
 * norm's output (an alias of its input when the slot is the identity). */
typedef struct {
    double *xhat, *r, *out;
} norm_buf;

/* One unit's activations (the tangent copy holds R{.} of each), for
 * out = N_post(alpha x + N_out(F(N_in(x)))) (model/internal.h). */
typedef struct {
    norm_buf nin, nout, npost;                  /* nin.out: F's input h (x without N_in) */
    double *s;                                  /* Post-LN-like: alpha x + F, N_post's input */
    double *f;                                  /* with N_out: F's output, N_out's input */
    double *q, *k, *v;                          /* attention projections */
    double *qn, *kn, *qs, *ks;                  /* after qk-norm (== q, k without it); its 1/sigma */
    double *qp, *kp;                            /* after the rotary positions (== qn, kn without) */
    double *a, *ctx;                            /* maps [B,h,Tq,Tk], concat_j A_j V_j */
    double *hpre, *hgate, *hact;                /* ffn: x W1 + b1, (SwiGLU) x W3 + b3, act */
    double *hd;                                 /* primal: GELU'(hpre) or SwiGLU's sigmoid(hpre) */
} unit_buf;

/* One unit's primal adjoints, as the tangent reverse pass reads them.  In a
 * workspace without LNK_WS_HVP they alias shared scratch (gy alternates
 * between two buffers), as nothing reads them after the unit. */
typedef struct {
    double *gy;                                 /* dL/d(unit output) */
    double *gs;                                 /* with N_post: N_post^T gy, dL/ds */
    double *gf;                                 /* with N_out: dL/d(F's output) */
    double *gn;                                 /* with N_in: dL/d(N_in's output), F^T of F's */
    double *gctx, *gq, *gk, *gv, *gqn, *gkn;    /* attention (gqn, gkn == gq, gk without qk-norm) */
    double *gh;                                 /* ffn: dL/d(act) (ReLU: after the mask) */
    double *ga, *gc;                            /* dL/dhpre (== gh for ReLU), dL/dhgate */
} unit_adj;

/* A stack's activations (primal or tangent). */
typedef struct {
    unit_buf *u;                                /* [n_units] */
    double **x;                                 /* residual stream: x[k] input of unit k */
    norm_buf fin;                               /* final norm */
    double *z;                                  /* stack output */
} stack_act;

typedef struct {
    int n_units;
    stack_act a;
    unit_adj *g;                                /* [n_units] primal adjoints */
    double *gz;                                 /* dL/dz (== g[n-1].gy without a final norm) */
    double *gemb;                               /* dL/d(embedding output) */
    int64_t *ids;                               /* [B*T] token ids of the stack's input */
    uint8_t *kmask;                             /* [B*T] 1 where the input is <pad> */
} stack_buf;

/* Allocations of one part, with the byte count (a plan counts only). */
typedef struct {
    void **p;
    int n, cap;
    size_t bytes;                               /* saturates at SIZE_MAX */
    int oom, plan;
} ws_arena;

/* The primal state of a batch of up to Bmax rows, Smax src and Tmax stored
 * tgt columns. */
typedef struct lnk_primal {
    ws_arena mem;
    int Bmax, Smax, Tmax, adj;                  /* adj: keeps the adjoints (H v) */
    stack_buf enc, dec;
    int64_t *labels;                            /* [B*Tout], -1 = not scored */
    double *prob;                               /* [R_out, C] logits, then softmax probabilities */
    double *dlogits;                            /* [R_out, C] dL/dlogits (== prob without adj) */
    double *ascr;                               /* attention scratch of the primal reverse */
    double *rope_cos, *rope_sin;                /* [Tq, d_k/2] rotary angles (pos = rope) */
    /* what it holds */
    int valid;                                  /* forward and reverse done for theta, batch */
    const double *theta;
    const lnk_batch *batch;
    int B, Tenc, Tdec;
    size_t N;                                   /* scored positions */
    double loss;
} lnk_primal;

/* Tangent reverse-pass scratch, shared by all units. */
typedef struct {
    double *gy, *gx;                            /* stream adjoints */
    double *gs, *gf, *gn;                       /* the seams of the unit's norms and F */
    double *gctx, *gq, *gk, *gv, *gqn, *gkn;    /* attention adjoints */
    double *gh, *ga, *gc;                       /* ffn hidden adjoints (ga == gh for ReLU) */
    double *gmem;                               /* adjoint of the encoder output (seq2seq) */
    double *ascr;                               /* attention per-head scratch */
} grad_buf;

struct lnk_workspace {
    const lnk_model *m;
    int Bmax, Smax, Tmax, hvp;
    ws_arena mem;                               /* the tangent part */
    lnk_primal *own;                            /* the workspace's own primal state */
    lnk_primal *pr;                             /* the one in use (own, or a cache's) */
    stack_act enct, dect;                       /* tangent activations */
    double *logits_t;                           /* [R_out, C] */
    grad_buf gt;
};

/* A primal state for batches up to B x S x T of m; adj: with the adjoints of
 * the reverse pass (needed for H v).  NULL with a message if it does not fit
 * in memory (lnk_memory_limit) or cannot be allocated. */
lnk_primal *lnk_primal_alloc(const lnk_model *m, int B, int S, int T, int adj);
void lnk_primal_free(lnk_primal *p);
/* Bytes lnk_primal_alloc would take (SIZE_MAX on overflow). */
size_t lnk_primal_bytes(const lnk_model *m, int B, int S, int T, int adj);
/* Run the next passes of ws on pr (NULL: its own).  pr's sizes must fit ws's. */
void lnk_workspace_use(lnk_workspace *ws, lnk_primal *pr);

#endif
