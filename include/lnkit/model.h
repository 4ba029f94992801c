/* lnkit: the transformer of docs/MODEL.md, its loss, exact gradient and exact
 * Hessian-vector product.
 *
 * Parameters live in one flat double vector theta of length n_params, the
 * concatenation of the named tensors of MODEL.md §6 in that order (row-major).
 * Gradients, tangents v and products H v use the same layout.
 *
 * Math.  The loss is L(theta) = (1/N) sum_{scored positions} l_t with
 * l_t = (1-a) CE(label) + a mean_v(-log softmax(z W_out)_v).
 *   - lnk_model_eval: forward pass, then the reverse pass (hand-written
 *     vector-Jacobian products of every sub-layer) giving dL/dtheta.
 *   - lnk_model_hvp: forward-over-reverse (Pearlmutter's R-operator): the forward
 *     pass carries, next to every activation a, its directional derivative
 *     R{a} = d a(theta + s v)/ds at s = 0; the reverse pass carries next to every
 *     adjoint g its R{g}.  R{dL/dtheta} = H v exactly (to rounding): no finite
 *     differences anywhere.  The second-order terms live in the sub-layers'
 *     tangent-of-backward code (src/layers/).
 * Cost: eval with gradient ~ 3 forward passes of GEMM work; hvp ~ 8 (it skips
 * the primal weight gradients unless asked for them), of which the primal
 * pass (forward and the reverse sweep of adjoints, about 2) can be kept for
 * later products at the same weights and batch (lnk_model_hvp_prepare /
 * lnk_model_hvp_apply), leaving ~6.  Memory: every activation of the batch
 * and, for hvp, their tangents and the primal adjoints; O(B h T^2) for the
 * attention maps per attention unit.  Sizes are counted in size_t and a
 * workspace that would exceed the memory this process may use
 * (lnkit/memory.h) is refused before anything large is allocated, with a
 * message naming B, S, T and the bytes.
 *
 * Every placement, activation, position and bias option of MODEL.md §2-3
 * (norm_pos post, pre, peri, out, deepnorm, mix; relu, gelu, swiglu;
 * sinusoidal, learned, rope, none) goes through the same passes: a unit is
 * out = N_post(alpha x + N_out(F(N_in(x)))) (src/model/internal.h); GELU's
 * and SwiGLU's second derivatives and the rotations' transposes live in
 * their layers (src/layers/).
 *
 * Batches (MODEL.md §4): lm reads tgt [B, T+1] (input tgt[:, :-1], labels
 * tgt[:, 1:]); cls reads src [B, S] and labels [B, S]; seq2seq both src and tgt.
 * PAD = 0 keys are masked in every attention and PAD labels are not scored.
 */
#ifndef LNKIT_MODEL_H
#define LNKIT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LNK_PAD 0
#define LNK_UNK 1
#define LNK_BOS 2
#define LNK_EOS 3
#define LNK_NAME_MAX 64

/* One named tensor of the flat parameter vector. */
typedef struct {
    char name[LNK_NAME_MAX];  /* e.g. "dec.0.attn.wq" */
    size_t offset;            /* first element in theta */
    size_t size;              /* number of elements */
    int ndim;                 /* 1 or 2 */
    int shape[2];             /* [in, out] for matrices, [n] for vectors */
} lnk_tensor_info;

typedef struct {
    size_t n_params;
    int n_tensors;
    lnk_tensor_info *t;       /* MODEL.md §6 order; t[i].offset increasing */
} lnk_layout;

typedef struct lnk_model lnk_model;

/* Build the model structure and parameter layout for a finalized config.
 * Checks the config's read-only n_params / param_order if it carries them.
 * Returns NULL on error (message in lnk_errmsg()). */
lnk_model *lnk_model_alloc(const lnk_config *cfg);
void lnk_model_free(lnk_model *m);

const lnk_config *lnk_model_config(const lnk_model *m);
const lnk_layout *lnk_model_layout(const lnk_model *m);
size_t lnk_model_n_params(const lnk_model *m);
/* Index of a tensor by name, or -1. */
int lnk_layout_find(const lnk_layout *lay, const char *name);

/* Progress of the passes run on m, for a caller's progress line (the library
 * never prints): fn(ctx, sweep, done, total) after each unit of each sweep of
 * every pass on m (lnk_model_eval, the H v and G v products, the data sets'
 * and the Hessian operator's passes): sweep is an LNK_SWEEP_* (the GGN's J^T
 * is a REVERSE sweep, its J a TANGENT one), done the units of that sweep
 * finished so far (all stacks together), total the sweep's units.  The
 * numbers computed do not depend on it.  fn NULL (the default): nothing is
 * called, at the cost of one pointer test per unit.  Set it while no pass
 * runs on m; fn is called on the thread that runs the pass. */
enum { LNK_SWEEP_FORWARD, LNK_SWEEP_REVERSE, LNK_SWEEP_TANGENT, LNK_SWEEP_TANGENT_REVERSE };
typedef void (*lnk_pass_progress_fn)(void *ctx, int sweep, int done, int total);
void lnk_model_set_progress(lnk_model *m, lnk_pass_progress_fn fn, void *ctx);

/* Initialise theta (n_params doubles) as MODEL.md §5 with the config's init and seed.
 * Each tensor draws from its own GSL mt19937 stream seeded from (seed, tensor
 * name), so a tensor's values do not depend on which other tensors exist. */
int lnk_model_init_params(const lnk_model *m, double *theta);

/* A batch of token ids.  Arrays are row-major int64; NULL where the task does
 * not use them.  The struct does not own the arrays unless made by lnk_batch_*. */
typedef struct {
    int B;
    int S;            /* src row length (cls, seq2seq); 0 otherwise */
    int T;            /* tgt row length (lm, seq2seq) as stored, i.e. T+1 positions for lm */
    int64_t *src;     /* [B, S] */
    int64_t *tgt;     /* [B, T] */
    int64_t *labels;  /* [B, S] (cls) */
    int owns;         /* 1: lnk_batch_free frees the arrays */
} lnk_batch;

void lnk_batch_free(lnk_batch *b);

/* Validate a batch against the model: the arrays the task needs are present,
 * ids in [0, V) (labels in [0, n_classes) where scored), no row starts with PAD,
 * every row has a scored position.  Errors name the array, row, column and value. */
int lnk_batch_check(const lnk_model *m, const lnk_batch *b);

/* Rows r0..r1-1 of b as a new batch (owning its arrays), with the trailing
 * columns that are <pad> in every one of those rows removed. */
int lnk_batch_slice(const lnk_batch *b, int r0, int r1, lnk_batch *out);

/* Number of scored (predicted, non-PAD) positions of the batch. */
size_t lnk_batch_n_scored(const lnk_model *m, const lnk_batch *b);

/* A synthetic batch: ids uniform in [4, V) from a GSL stream of seed, rows of
 * length len (lm: tgt [B, len+1] starting with BOS; cls: src [B, len], labels
 * uniform in [0, n_classes)).  Deterministic. */
int lnk_batch_synthetic(const lnk_model *m, int B, int len, uint64_t seed, lnk_batch *out);

/* Workspace: every activation, cache and tangent buffer for batches of up to
 * B rows and the given lengths (S for src, T for stored tgt rows).  flags:
 * LNK_WS_HVP also allocates the tangent buffers. */
enum { LNK_WS_HVP = 1 };
typedef struct lnk_workspace lnk_workspace;
lnk_workspace *lnk_workspace_alloc(const lnk_model *m, int B, int S, int T, unsigned flags);
void lnk_workspace_free(lnk_workspace *ws);
/* Bytes held by the workspace. */
size_t lnk_workspace_bytes(const lnk_workspace *ws);
/* Bytes lnk_workspace_alloc(m, B, S, T, flags) would allocate, counted without
 * allocating (SIZE_MAX if the count overflows or the shape is invalid).  A
 * workspace is refused when this exceeds lnk_memory_limit() (lnkit/memory.h)
 * or a row count exceeds the CBLAS int range. */
size_t lnk_workspace_plan(const lnk_model *m, int B, int S, int T, unsigned flags);

/* Loss and (if grad != NULL) its gradient at theta on batch b.
 * grad is overwritten (n_params doubles).  n_scored (may be NULL) receives the
 * number of scored positions, the weight of this batch in a data-set mean.
 * Fails with LNK_ENONFINITE naming the tensor if theta holds NaN/inf, or if the
 * loss is not finite. */
int lnk_model_eval(lnk_workspace *ws, const double *theta, const lnk_batch *b,
                   double *loss, double *grad, size_t *n_scored);

/* Exact Hessian-vector product hv = H(theta) v (n_params doubles each).
 * loss and grad may be NULL; when grad is given it receives the gradient from
 * the same passes.  Requires a workspace made with LNK_WS_HVP.  It is
 * lnk_model_hvp_prepare followed by lnk_model_hvp_apply. */
int lnk_model_hvp(lnk_workspace *ws, const double *theta, const lnk_batch *b,
                  const double *v, double *hv, double *loss, double *grad);

/* Products at fixed weights and batch.  prepare runs the primal pass
 * (forward, loss, the reverse sweep of adjoints; grad if not NULL) of theta on
 * b and keeps it in ws; each apply then runs only the tangent passes for v,
 * about 3/4 of lnk_model_hvp's work, and gives the same bits as
 * lnk_model_hvp(ws, theta, b, v, ...).  theta and b are borrowed: they must
 * not change until the next prepare, eval or hvp on ws, which replaces the
 * kept pass.  apply without a prepared pass is an error. */
int lnk_model_hvp_prepare(lnk_workspace *ws, const double *theta, const lnk_batch *b,
                          double *loss, double *grad);
int lnk_model_hvp_apply(lnk_workspace *ws, const double *v, double *hv);

/* Exact Gauss-Newton product gv = G v, G = J^T H_out J (J: the Jacobian of
 * the logits in theta; H_out: the Hessian of the loss in the logits, per
 * scored row (diag(p) - p p^T) / N, p the softmax; label smoothing adds a
 * term linear in log-softmax with the same Hessian, so H_out does not depend
 * on it).  G is symmetric positive semidefinite; H = G + F, F the functional
 * part (the adjoint-weighted second derivatives of the network).
 * Algorithm: the tangent forward pass to the logits (J v), H_out, then a
 * plain reverse pass with that adjoint (J^T), over the primal pass kept by
 * lnk_model_hvp_prepare (which must come first, as for _apply), in the
 * workspace's tangent scratch: the kept pass is not changed.  If hv is not
 * NULL it also receives H v (the tangent pass, whose R{dL/dlogits} is
 * H_out J v, then the reverse pass: F v = hv - gv at the cost of H v plus one
 * reverse pass).  Cost: G v alone ~ 4 forward passes of GEMM work (2 for J v,
 * 2 for J^T), vs ~6 for lnk_model_hvp_apply.  Accuracy: exact to rounding. */
int lnk_model_ggn_apply(lnk_workspace *ws, const double *v, double *hv, double *gv);
/* prepare then ggn_apply (gv = G v at theta on b; loss may be NULL). */
int lnk_model_ggn(lnk_workspace *ws, const double *theta, const lnk_batch *b, const double *v,
                  double *gv, double *loss);
/* For tests and analyses of the output layer, after lnk_model_hvp_prepare:
 * rows (may be NULL) gets R_out, the positions of the output (B T for lm and
 * seq2seq, B S for cls; unscored ones included), cols (may be NULL) C, the
 * logits' width; prob (if not NULL, R_out x C) the softmax probabilities
 * (rows of unscored positions are 0); jv (if not NULL and v not NULL,
 * R_out x C) the logits' directional derivative J v (the tangent forward
 * pass). */
int lnk_model_output_jvp(lnk_workspace *ws, const double *v, double *jv, double *prob,
                         size_t *rows, int *cols);

/* Check theta for NaN / inf; error names the first tensor and index found. */
int lnk_params_check_finite(const lnk_model *m, const double *theta, const char *what);

/* Frobenius norm of tensor i of the flat vector g (e.g. a gradient): lnk_norm2
 * of its entries. */
double lnk_tensor_norm(const lnk_model *m, const double *g, int i);

/* The Euclidean norm of x[0..n) without overflow or underflow: the plain sum
 * of squares where it is safe (its square root is then exact to rounding),
 * else the entries scaled by a power of two around the largest (as BLAS
 * dnrm2).  Infinite only if the norm exceeds the largest double (or an entry
 * is infinite); NaN if an entry is. */
double lnk_norm2(const double *x, size_t n);

/* Attention units and their activations after lnk_model_eval, read-only
 * (the geometry module reads them through these; src/model/attn_view.c).
 * A unit is one residual sub-layer: blocks are [self-attn, (cross-attn,) ffn]. */
typedef struct {
    int stack;    /* 0 encoder, 1 decoder */
    int unit;     /* index of the unit in its stack */
    int layer;    /* block index l */
    int cross;    /* 1: cross-attention (keys from the encoder output) */
    int causal;
} lnk_attn_unit;

/* The attention units of m (encoder first, then decoder, in order); returns
 * their number, writes at most max of them to out (may be NULL). */
int lnk_model_attn_units(const lnk_model *m, lnk_attn_unit *out, int max);

/* One attention unit's activations in the workspace of the last evaluation
 * (views into it, valid until the next eval, hvp or free).  Rows are
 * row-major with d columns (head j: columns j d/h ..). */
typedef struct {
    int B, Tq, Tk;                /* sequences, query and key positions a sequence */
    const double *norm_in;        /* key side: the input of the norm whose output the
                                     attention reads (a unit with an input norm, as
                                     Pre-LN and Peri-LN: x; otherwise the previous unit's
                                     post norm's input, alpha x + F(x), if it has one
                                     (Post-LN, DeepNorm), else the stream x itself) */
    const double *norm_out;       /* key side: what the attention reads [B*Tk, d] */
    const double *q, *k;          /* Q = X Wq + bq [B*Tq, d], K = X Wk + bk [B*Tk, d] */
    const double *qn, *kn;        /* after the per-head qk_norm (== q, k without it),
                                     before the rotary positions (pos = rope) */
    const double *a;              /* softmax maps [B, h, Tq, Tk] */
    const uint8_t *qpad, *kpad;   /* [B*Tq], [B*Tk]: 1 where the position is <pad> */
} lnk_attn_view;

/* LNK_EINVAL if (stack, unit) is not an attention unit of the workspace's
 * model or the workspace holds no evaluated batch. */
int lnk_workspace_attn(const lnk_workspace *ws, int stack, int unit, lnk_attn_view *v);
/* The model a workspace was made for. */
const lnk_model *lnk_workspace_model(const lnk_workspace *ws);

#ifdef __cplusplus
}
#endif
#endif
