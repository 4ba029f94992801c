/* lnkit model workspace: every activation, cache, adjoint and tangent buffer.
 * Internal to src/model. */
#ifndef LNK_WORKSPACE_H
#define LNK_WORKSPACE_H

#include "model/internal.h"

/* A row norm's cache: xhat [R,n], r [R] (tangent copy: R{xhat}, R{r}) and the
 * norm's output (an alias of its input when the norm type is none). */
typedef struct {
    double *xhat, *r, *out;
} norm_buf;

/* One unit's activations (the tangent copy holds R{.} of each). */
typedef struct {
    norm_buf n;
    double *s;                                  /* post: x + F(x), the norm's input */
    double *q, *k, *v;                          /* attention projections */
    double *qn, *kn, *qr, *kr;                  /* after qk-norm (== q, k without it); its 1/sigma */
    double *a, *ctx;                            /* maps [B,h,Tq,Tk], concat_j A_j V_j */
    double *hpre, *hact;                        /* ffn hidden before / after ReLU */
} unit_buf;

typedef struct {
    int n_units;
    unit_buf *u, *ut;                           /* primal, tangent */
    double **x, **xt;                           /* residual stream: x[k] input of unit k */
    norm_buf fin, fint;                         /* final norm (Pre-LN) */
    double *z, *zt;                             /* stack output */
    int64_t *ids;                               /* [B*T] token ids of the stack's input */
    uint8_t *kmask;                             /* [B*T] 1 where the input is <pad> */
} stack_buf;

/* Scratch for the reverse pass (shared by all units; tangent copies in *t). */
typedef struct {
    double *gy, *gx, *gs;                       /* stream adjoints and the norm/F seam */
    double *gctx, *gq, *gk, *gv, *gqn, *gkn;    /* attention adjoints */
    double *gh;                                 /* ffn hidden adjoint */
    double *gmem;                               /* adjoint of the encoder output (seq2seq) */
    double *ascr;                               /* attention per-head scratch */
} grad_buf;

struct lnk_workspace {
    const lnk_model *m;
    int Bmax, Smax, Tmax, hvp;
    size_t bytes;
    void **allocs;
    int n_allocs, cap_allocs;
    int oom;                                    /* an allocation failed */
    stack_buf enc, dec;
    int64_t *labels;                            /* [B*Tout], -1 = not scored */
    double *logits, *logits_t;                  /* [R_out, C]: probabilities after the loss */
    grad_buf g, gt;
    /* the batch being processed */
    int B, Tenc, Tdec;
};

#endif
