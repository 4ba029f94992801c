/* lnkit: statistics of one forward/backward pass for the gradient-norm study
 * (Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture",
 * Theorem 1, Lemmas 2 and 3).
 *
 * Hidden states.  After lnk_model_eval(ws, ...) the workspace holds every
 * activation of the batch; lnk_stats_hidden reads them (no extra pass) and
 * summarises, over the non-<pad> tokens of each stack, Z/d = ||x||^2/d at the
 * residual-stream points the paper names, per block l (from 0):
 *   site "in"   the block input x_l                     (x^{post}_l, x^{pre}_l)
 *   site "attn" after the self-attention residual add:   Post-LN x + MHA(x), the
 *               norm's input (x^{post,2}_l); Pre-LN x + MHA(N(x)) (x^{pre,3}_l)
 *   site "xattn" after the cross-attention residual add (seq2seq decoder only)
 *   site "ffn"  after the FFN residual add: Post-LN x^{post,3} + FFN, the norm's
 *               input (x^{post,5}_l); Pre-LN x^{pre}_{l+1}
 * plus each unit's norm output, and per stack the output side: Post-LN the
 * stack output z, Pre-LN x^{pre}_{L+1} (the final norm's input) and the final
 * norm's output.  (The paper numbers layers from 1: its x^{pre}_l is site "in"
 * of block l-1 here, and x^{pre}_{L+1} the stack's "out".)
 *
 * Other placements (MODEL.md §3): "res" is the unit's residual sum (N_post's
 * input where the unit has one, else its output), the unit's norm is its
 * N_post, else its N_in, else its N_out (Peri-LN: the input norm), and
 * has_final is set wherever the stack ends with a final norm.
 *
 * For every norm, the spectral norm of its Jacobian at its input x, Lemma 3:
 * ||J_LN(x)||_2 = sqrt(d)/||x - mean(x) 1|| (LayerNorm; RMSNorm: sqrt(d)/||x||),
 * i.e. the eps = 0 value; with eps the exact value is 1/sqrt(var + eps), smaller
 * by the factor sqrt(var/(var + eps)).  Summarised as mean and max over tokens.
 *
 * Empirical (eps, delta)-boundedness (the paper's Theorem 1 assumption on
 * Z = ||x||^2): the fraction of tokens with (Z - EZ)/EZ > eps, EZ estimated by
 * the mean of Z over the batch's tokens at that site.
 *
 * Gradient norms.  Per tensor by name and per group of tensors whose names
 * match a glob pattern (fnmatch(3), e.g. "dec.*.ffn.w2" or "enc.3.*"): the
 * Frobenius norm of the concatenation.
 */
#ifndef LNKIT_STATS_H
#define LNKIT_STATS_H

#include <stddef.h>
#include "lnkit/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Summary of Z/d = ||x||^2/d over n tokens. */
typedef struct {
    size_t n;            /* tokens summarised (0: the site does not exist) */
    double mean, sd;     /* sd: over tokens (n - 1 denominator; 0 for n = 1) */
    double min, max;
    double frac_over;    /* fraction of tokens with (Z - mean Z)/mean Z > eps */
} lnk_stats_sq;

/* Lemma 3 Jacobian spectral norm at a norm's input, over the same tokens. */
typedef struct {
    double mean, max;    /* 0 when there is no norm (norm = none) */
} lnk_stats_jac;

enum { LNK_STATS_MAX_UNITS = 3 };

typedef struct {
    int n_units;                                 /* 2 ([attn, ffn]) or 3 ([attn, xattn, ffn]) */
    const char *unit[LNK_STATS_MAX_UNITS];       /* "attn", "xattn", "ffn" */
    lnk_stats_sq in;                             /* block input x_l */
    lnk_stats_sq res[LNK_STATS_MAX_UNITS];       /* after unit j's residual add */
    lnk_stats_sq norm_out[LNK_STATS_MAX_UNITS];  /* unit j's norm output */
    lnk_stats_jac jac[LNK_STATS_MAX_UNITS];      /* unit j's norm at its input */
} lnk_stats_block;

typedef struct {
    int L;                      /* 0: the model has no such stack */
    lnk_stats_block *blk;       /* [L] */
    lnk_stats_sq out;           /* Post-LN: z (= last norm output); Pre-LN: x^{pre}_{L+1} */
    int has_final;              /* Pre-LN with a norm: the final norm */
    lnk_stats_sq final_out;
    lnk_stats_jac final_jac;
} lnk_stats_stack;

typedef struct {
    double eps;                 /* threshold used for frac_over */
    int post;                   /* 1: Post-LN, 0: Pre-LN */
    int d;
    lnk_stats_stack enc, dec;
} lnk_stats_hidden_t;

/* Hidden-state statistics of the batch last evaluated in ws (by lnk_model_eval
 * or lnk_model_hvp).  eps > 0 is the boundedness threshold.  out is filled
 * (free with lnk_stats_hidden_free).  Errors: eps not positive or out of
 * memory. */
int lnk_stats_hidden(const lnk_workspace *ws, double eps, lnk_stats_hidden_t *out);
void lnk_stats_hidden_free(lnk_stats_hidden_t *h);

/* Summaries of one [R, d] matrix of row vectors, only the rows with
 * skip[row] == 0 (skip may be NULL): sq of Z/d and, if jac != NULL, the Lemma 3
 * Jacobian norm (center = 1 LayerNorm, 0 RMSNorm).  A row with ||x - mu|| = 0
 * has an infinite Jacobian norm; it is counted as such (max = inf). */
void lnk_stats_rows(const double *x, const unsigned char *skip, int R, int d, double eps,
                    lnk_stats_sq *sq, lnk_stats_jac *jac, int center);

/* Frobenius norm of the tensor named name in the flat vector g; LNK_EINVAL
 * naming the tensor if the layout has none. */
int lnk_stats_tensor_norm(const lnk_model *m, const double *g, const char *name, double *norm);
/* Frobenius norms of a gradient g (what lnkit eval reports): of each tensor
 * (norm[0 .. n_tensors), layout order) and of all of g (norm[n_tensors]),
 * without overflow (lnk_norm2).  LNK_ENONFINITE naming the first norm that
 * exceeds the range of doubles. */
int lnk_stats_grad_norms(const lnk_model *m, const double *g, double *norm);

/* Frobenius norm of all tensors whose names match the glob pattern; *n_match
 * (may be NULL) gets their number.  No match is an error naming the pattern. */
int lnk_stats_group_norm(const lnk_model *m, const double *g, const char *pattern, double *norm,
                         int *n_match);

/* Name of the theorem's W^{2,L}: the last block's ffn.w2 of the top stack
 * (decoder when there is one), in buf. */
void lnk_stats_last_w2(const lnk_model *m, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
