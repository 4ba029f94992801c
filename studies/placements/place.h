/* The placement study's driver (studies/placements.c): one point (a model
 * configuration: placement, norm, activation, positions, bias, L, d, seed,
 * task, input scale) and one part of issue 34 per run, its raw rows in one
 * CSV with its sidecar.  The parts:
 *   extremes  top and bottom eigenvalues of H, G, F with residuals (G's
 *             bottom is 0 wherever rank G <= the bound written beside it is
 *             below n, so only its top is computed), Hutchinson traces with
 *             their standard errors, and the mass of H's two extreme
 *             eigenvectors on every group (parts.c)
 *   anatomy   ||H_bb||_F of every group, the SLQ spectra of the weight
 *             blocks and their Jensen-Shannon distances by kind pair, JS0
 *             (parts.c)
 *   grad      the loss and ||dL/dtheta_b|| of every group (parts.c)
 *   coupling  ||H_ab||_F of every ordered pair of groups, each group's
 *             extremes (the block-diagonal approximation) and the full
 *             Hessian's (coupling.c)
 *   scale     ||A_bb||_F of every group for A = H, G, F and the cross norms
 *             of the first layer's attention groups (coupling.c)
 *   m30k      the extremes of one operator on a Multi30k data set, with a
 *             checkpoint that a killed run resumes from (placements.c)
 * A group is a set of tensors of one layer (groups.c): the weight matrices
 * one a group (Q, K, V, O, XQ.., FFN1, FFN3, FFN2), the layer's norms
 * (norm) and its biases (bias); and emb (embeddings and position tables),
 * final (final norms), out.  The groups partition the parameters. */
#ifndef LNK_STUDY_PLACE_H
#define LNK_STUDY_PLACE_H

#include <stdint.h>
#include "lnkit/blockstats.h"
#include "lnkit/hessian.h"
#include "kit/kit.h"

typedef struct {
    char name[48];            /* "dec.3.Q", "emb", "out" */
    char kind[8];             /* Q K V O XQ XK XV XO FFN1 FFN3 FFN2 norm bias emb final out */
    char side[4];             /* enc, dec, or "" */
    int layer;                /* -1 outside the layers */
    int weight;               /* 1: a weight matrix (or emb, out): an anatomy block */
    int nt, *t;               /* its tensors (layout indices, increasing) */
    size_t n;                 /* coordinates */
    char *pat;                /* the tensors' names, comma-separated (lnk_block_select) */
} pl_group;

typedef struct {
    int n;
    pl_group *g;
} pl_groups;

void pl_groups_make(const lnk_model *m, pl_groups *G);
void pl_groups_free(pl_groups *G);

/* Numerical settings of a run (the sidecar records them all). */
typedef struct {
    int probes;               /* Hutchinson probes per Frobenius norm */
    int trace_probes;         /* Hutchinson probes per trace */
    int eig_steps;            /* Lanczos steps per extreme run */
    double tol;               /* residual <= tol max|l| */
    int slq_runs, slq_steps;  /* anatomy's block spectra */
    double sigma_frac;        /* JS kernel width / common node range */
    int cross_probes;         /* coupling: probes per source group */
    uint64_t rng;             /* Lanczos start, probes */
} pl_num;

/* What a part works on. */
typedef struct {
    const lnk_model *m;
    const double *theta;
    const lnk_dataset *ds;
    lnk_hessian *h;           /* over ds at theta, whole model, kind hessian */
    pl_groups G;
    pl_num num;
    out_csv *o;
    int quiet;
} pl_ctx;

/* One row: measure, operator, which, block (a group or kind), block_b, value,
 * se, residual, converged (-1: empty), steps (-1: empty).  Absent numbers
 * (NAN) are empty fields. */
void pl_row(pl_ctx *c, const char *measure, const char *op, const char *which,
            const pl_group *a, const char *block_b, double value, double se, double residual,
            int converged, int steps);
#define PL_NCOL 13
extern const char *const PL_HDR[PL_NCOL];

/* The extremes of the whole or a block operator (k_bottom 0 or 1), vectors
 * optional (then r->vectors). */
void pl_eigs(pl_ctx *c, lnk_op_kind kind, int bottom, int vectors, lnk_eigs_result *r);
/* Restrict c->h to a group (NULL: the whole model) and set its operator kind. */
lnk_operator pl_op(pl_ctx *c, const pl_group *g, lnk_op_kind kind);

void pl_part_extremes(pl_ctx *c);
void pl_part_anatomy(pl_ctx *c);
void pl_part_grad(pl_ctx *c);
void pl_part_coupling(pl_ctx *c);
void pl_part_scale(pl_ctx *c);
/* ||P_a A P_b||_F for every group a, b in src[0..nsrc) (A = the whole
 * operator of kind): Hutchinson with Rademacher z on b, one product a probe,
 * every a from the same product. */
void pl_cross_frob(pl_ctx *c, lnk_op_kind kind, const int *src, int nsrc);

#endif
