/* lnkit sub-layers: forward, backward (vector-Jacobian product) and tangent
 * (Pearlmutter's R-operator) kernels on plain row-major arrays.
 *
 * Conventions, as in karpathy/llm.c: sizes are passed explicitly, nothing
 * allocates, nothing prints.  A "dot" suffix is the tangent R{.} of a quantity
 * in direction v; "d" prefixes adjoints dL/d(.).
 *   *_forward           primal values and the caches the backward needs
 *   *_tangent           R{} of the forward outputs (and of caches the
 *                       backward tangent needs), from the input and parameter tangents
 *   *_backward          adjoints of inputs; parameter gradients accumulated (+=)
 *   *_backward_tangent  R{} of the backward outputs: the second-order terms
 * Parameter-gradient pointers may be NULL to skip that work (HVP without grad).
 * Input-adjoint outputs are assigned (accum = 0) or added (accum = 1).
 */
#ifndef LNK_LAYERS_H
#define LNK_LAYERS_H

#include <stddef.h>
#include <stdint.h>

/* ---- linear: y[R,out] = x[R,in] W + b.  W is stored [in,out], or [out,in]
 * when wt = 1 (the tied output layer uses the embedding E [V,d] as W^T). b may be NULL. */
void lnk_linear_forward(double *y, const double *x, const double *W, const double *b,
                        int R, int in, int out, int wt);
/* ydot = xdot W + x Wdot + bdot  (xdot, Wdot, bdot may be NULL = zero). */
void lnk_linear_tangent(double *ydot, const double *xdot, const double *x, const double *W,
                        const double *Wdot, const double *bdot, int R, int in, int out, int wt);
/* dx (=|+=) dy W^T; dW += x^T dy; db += colsum(dy).  dx, dW, db may be NULL. */
void lnk_linear_backward(double *dx, double *dW, double *db, const double *dy, const double *x,
                         const double *W, int R, int in, int out, int wt, int accum);
/* R{dx} (=|+=) dydot W^T + dy Wdot^T;  R{dW} += xdot^T dy + x^T dydot;  R{db} += colsum(dydot). */
void lnk_linear_backward_tangent(double *dxdot, double *dWdot, double *dbdot,
                                 const double *dydot, const double *dy, const double *xdot,
                                 const double *x, const double *W, const double *Wdot,
                                 int R, int in, int out, int wt, int accum);

/* ---- row norm over rows of length n: xhat = (x - c mean(x)) r,
 * r = 1/sqrt(mean((x - c mean x)^2) + eps); y = g xhat + b (g, b may be NULL = 1, 0).
 * center = 1: LayerNorm, 0: RMSNorm.  With u = mean(xhat xdot):
 *   R{r} = -r^2 u,  R{xhat} = r (xdot - c mean(xdot) - xhat u),
 *   dx = r (dxh - c mean(dxh) - xhat mean(xhat dxh)),  dxh = dy g,
 *   R{dx} = (R{r}/r) dx + r (R{dxh} - c mean(R{dxh}) - R{xhat} a - xhat R{a}),
 *   a = mean(xhat dxh),  R{a} = mean(R{xhat} dxh + xhat R{dxh}),  R{dxh} = R{dy} g + dy R{g}. */
void lnk_norm_forward(double *y, double *xhat, double *r, const double *x, const double *g,
                      const double *b, int R, int n, int center, double eps);
void lnk_norm_tangent(double *ydot, double *xhatdot, double *rdot, const double *xdot,
                      const double *xhat, const double *r, const double *g, const double *gdot,
                      const double *bdot, int R, int n, int center);
void lnk_norm_backward(double *dx, double *dg, double *db, const double *dy, const double *xhat,
                       const double *r, const double *g, int R, int n, int center, int accum);
void lnk_norm_backward_tangent(double *dxdot, double *dgdot, double *dbdot, const double *dydot,
                               const double *dy, const double *xhat, const double *xhatdot,
                               const double *r, const double *rdot, const double *g,
                               const double *gdot, int R, int n, int center, int accum);

/* ---- GELU (exact, erf), elementwise on n entries.  d1 = GELU'(x), written by the
 * forward, is the diagonal Jacobian the tangent (ydot = d1 xdot) and the
 * backward (dx = d1 dy) apply; R{dx} = d1 R{dy} + GELU''(x) xdot dy,
 * GELU''(x) = phi(x) (2 - x^2). */
void lnk_gelu_forward(double *y, double *d1, const double *x, size_t n);
void lnk_gelu_tangent(double *ydot, const double *d1, const double *xdot, size_t n);
void lnk_gelu_backward(double *dx, const double *d1, const double *dy, size_t n);
void lnk_gelu_backward_tangent(double *dxdot, const double *dydot, const double *dy,
                               const double *xdot, const double *x, const double *d1, size_t n);

/* ---- SwiGLU's gate u = SiLU(a) c, elementwise on n entries; s = sigmoid(a),
 * written by the forward, serves the other three (math in swiglu.c). */
void lnk_swiglu_forward(double *u, double *s, const double *a, const double *c, size_t n);
void lnk_swiglu_tangent(double *udot, const double *adot, const double *cdot, const double *a,
                        const double *c, const double *s, size_t n);
/* da, dc assigned. */
void lnk_swiglu_backward(double *da, double *dc, const double *du, const double *a,
                         const double *c, const double *s, size_t n);
void lnk_swiglu_backward_tangent(double *dadot, double *dcdot, const double *dudot,
                                 const double *du, const double *adot, const double *cdot,
                                 const double *a, const double *c, const double *s, size_t n);

/* ---- rotary positions on [R, d] rows of h heads, row r at position r % T,
 * pairs (2i, 2i+1) of each head turned by t theta_i, theta_i = 10000^(-2i/d_k).
 * cs, sn [T', d_k/2] (T' >= T): cos and sin of the angles (lnk_rope_table).
 * Linear and parameter-free: tangent = forward map, backward = its transpose,
 * backward tangent = backward map.  In place allowed (y == x). */
void lnk_rope_table(double *cs, double *sn, int T, int dk);
void lnk_rope_forward(double *y, const double *x, const double *cs, const double *sn, int R,
                      int T, int d, int h);
void lnk_rope_tangent(double *ydot, const double *xdot, const double *cs, const double *sn, int R,
                      int T, int d, int h);
void lnk_rope_backward(double *dx, const double *dy, const double *cs, const double *sn, int R,
                       int T, int d, int h);
void lnk_rope_backward_tangent(double *dxdot, const double *dydot, const double *cs,
                               const double *sn, int R, int T, int d, int h);

/* ---- ReLU, elementwise on n entries (second derivative 0 almost everywhere). */
void lnk_relu_forward(double *y, const double *x, size_t n);
/* ydot = xdot [x > 0]; also the backward (dx = dy [x > 0]) and its tangent. */
void lnk_relu_mask(double *y, const double *dotx, const double *x, size_t n, int accum);

/* ---- scaled dot-product attention core, all heads and batch rows at once.
 * q [B*Tq, d], k, v [B*Tk, d]; head j uses columns j*dk..(j+1)*dk-1.
 * A[b,j] = softmax(q_j k_j^T / sqrt(dk) + M) with M = -inf where kmask[b*Tk+s]
 * (PAD keys) or, if causal, s > t.  ctx_j = A v_j.  a holds [B, h, Tq, Tk].
 * Every query row must keep at least one key (guaranteed: rows never start with PAD).
 *   R{A} = A o (R{S} - rowsum(A o R{S})),  R{S} = (R{q} k^T + q R{k}^T)/sqrt(dk)
 *   dA = dctx v^T, dv = A^T dctx, dS = A o (dA - rowsum(A o dA)),
 *   dq = dS k / sqrt(dk), dk = dS^T q / sqrt(dk);
 *   R{dS} = R{A} o (dA - c) + A o (R{dA} - R{c}),  c = rowsum(A o dA).
 * scratch: 4 * Tq * Tk doubles. */
void lnk_attn_forward(double *ctx, double *a, const double *q, const double *k, const double *v,
                      const uint8_t *kmask, int B, int Tq, int Tk, int d, int h, int causal);
void lnk_attn_tangent(double *ctxdot, double *adot, const double *qdot, const double *kdot,
                      const double *vdot, const double *a, const double *q, const double *k,
                      const double *v, int B, int Tq, int Tk, int d, int h);
/* dq, dk, dv assigned (not accumulated). */
void lnk_attn_backward(double *dq, double *dk, double *dv, const double *dctx, const double *a,
                       const double *q, const double *k, const double *v, double *scratch,
                       int B, int Tq, int Tk, int d, int h);
void lnk_attn_backward_tangent(double *dqdot, double *dkdot, double *dvdot,
                               const double *dctxdot, const double *dctx, const double *adot,
                               const double *a, const double *qdot, const double *kdot,
                               const double *vdot, const double *q, const double *k,
                               const double *v, double *scratch, int B, int Tq, int Tk, int d,
                               int h);

/* ---- embedding: e[r] = sigma (c E[ids[r]] + P_t), t = r % T; sinusoidal = 1:
 * c = sqrt(d) and P_t the sinusoidal table (P unused), else c = 1 and P_t the
 * row t of P ([T', d], NULL: none).  Linear in (E, P). */
void lnk_embed_forward(double *e, const int64_t *ids, const double *E, const double *P, int R,
                       int T, int d, int sinusoidal, double sigma);
void lnk_embed_tangent(double *edot, const int64_t *ids, const double *Edot, const double *Pdot,
                       int R, int T, int d, int sinusoidal, double sigma);
/* dE[ids[r]] += sigma c de[r]; dP[t] += sigma de[r] (either may be NULL); the same
 * map serves the backward tangent. */
void lnk_embed_backward(double *dE, double *dP, const int64_t *ids, const double *de, int R, int T,
                        int d, int sinusoidal, double sigma);

/* ---- softmax cross-entropy with label smoothing a over C classes.
 * Rows with label < 0 are not scored.  On return p holds softmax(logits) and
 * the function returns sum over scored rows of (1-a) CE + a mean_c(-log p_c)
 * (divide by N outside).  dlogits = (p - q)/N where q = (1-a) onehot + a/C.
 *   R{p} = p o (R{l} - rowsum(p o R{l})), R{dlogits} = R{p}/N. */
double lnk_xent_forward(double *p, const double *logits, const int64_t *labels, int R, int C,
                        double a);
/* dlogits may alias p. */
void lnk_xent_backward(double *dlogits, const double *p, const int64_t *labels, int R, int C,
                       double a, double invN);
/* In place: ldot (R{logits}) becomes R{dlogits}. */
void lnk_xent_backward_tangent(double *ldot, const double *p, const int64_t *labels, int R, int C,
                               double invN);

#endif
