/* lnkit: the loss Hessian of a model as a symmetric operator.
 *
 * Data as a sum.  A data set is a list of chunks (batches).  The loss of the
 * data set is the mean over all its scored tokens,
 *     L = sum_c N_c L_c / sum_c N_c,
 * with L_c the mean loss of chunk c and N_c its number of scored tokens, so
 * its gradient and Hessian are the same N_c-weighted means of the chunks'.
 * Chunks are processed one at a time in one workspace sized for the largest,
 * so memory is bounded by a chunk, not by the data set.  Uneven chunks give
 * the exact mean.  Cost: one H v costs one HVP pass per chunk.
 *
 * Kept primal passes.  The weights and the chunks are fixed for the life of
 * the operator, so each chunk's primal pass (forward activations,
 * normalisation statistics, softmax outputs, the adjoints of the reverse
 * sweep) is the same in every product.  Where memory allows it is computed
 * once and kept, and each later product runs only the tangent passes (about
 * 3/4 of the work; lnk_model_hvp_prepare / _apply).  The results are the same
 * bits as recomputing it.  lnk_hessian_set_cache sets the memory for this:
 * chunks in order keep their pass while their primal states fit in it; the
 * rest share the workspace's and recompute theirs per product (unless only
 * one does).  A single chunk keeps its pass in the workspace at no extra cost.
 *
 * Blocks.  A block is the set of tensors (MODEL.md §6 names) matched by any of a
 * comma-separated list of shell glob patterns (fnmatch: "dec.5.ffn.w2",
 * "*.attn.*", "dec.3.*").  The block Hessian is H restricted to those
 * coordinates, H_BB = P^T H P with P the coordinate injection; its operator
 * acts on vectors of the block's size (the tensors concatenated in MODEL.md §6 order).
 * Its H v starts the tangent pass at the block's lowest tensor in the forward
 * sweep and ends the reverse one there (below it the tangents are zero and
 * nothing is read): a block in layer l of L runs (L - l) / L of the layers'
 * work, plus the output layer and the loss, which every product runs (0.08
 * of a full product at V = 1000, 0.17 at V = 4000: bench/bench_span.c); the
 * bits are the full product's, restricted.  G v and F v likewise.
 */
#ifndef LNKIT_HESSIAN_H
#define LNKIT_HESSIAN_H

#include <stddef.h>
#include "lnkit/comm.h"
#include "lnkit/curvature.h"
#include "lnkit/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parameter block: the selected tensors' indices in the layout. */
typedef struct {
    int n_tensors;
    int *tensor;          /* indices into the layout, increasing */
    size_t n;             /* number of coordinates */
} lnk_block;

/* Select by comma-separated glob patterns (NULL or "" or "*": every tensor).
 * A pattern that matches nothing is an error whose message lists the names. */
int lnk_block_select(const lnk_model *m, const char *patterns, lnk_block *out);
void lnk_block_free(lnk_block *b);
/* Copy the block's coordinates of a full vector out (gather) / into a full vector (scatter;
 * the other coordinates are left as they are). */
void lnk_block_gather(const lnk_model *m, const lnk_block *b, const double *full, double *part);
void lnk_block_scatter(const lnk_model *m, const lnk_block *b, const double *part, double *full);

typedef struct lnk_hessian lnk_hessian;

/* Which curvature operator an lnk_hessian applies (lnk_hessian_set_kind):
 *   LNK_OP_HESSIAN     H v, the exact Hessian (lnk_model_hvp_apply);
 *   LNK_OP_GGN         G v, the Gauss-Newton part J^T H_out J (symmetric PSD;
 *                      lnk_model_ggn_apply: tangent forward, H_out, plain
 *                      reverse; ~2/3 of an H v's work);
 *   LNK_OP_FUNCTIONAL  F v = H v - G v, the functional part (one H v plus one
 *                      reverse pass, sharing the tangent forward pass).
 * All three are data-set means over the chunks, restricted to the block, and
 * reuse the kept primal passes; exact to rounding (tests/test_ggn.c: G + F =
 * H to 1e-12, G = the dense J^T H_out J to 1e-10). */
typedef enum { LNK_OP_HESSIAN = 0, LNK_OP_GGN = 1, LNK_OP_FUNCTIONAL = 2 } lnk_op_kind;
/* "hessian", "ggn", "functional" (parse: LNK_EINVAL naming the bad word). */
const char *lnk_op_kind_name(lnk_op_kind kind);
int lnk_op_kind_parse(const char *s, lnk_op_kind *kind);

/* The Hessian of the mean loss over the chunks at theta, restricted to the
 * block selected by patterns (NULL: all parameters).  theta and the chunks
 * are borrowed: they must outlive the object and not change (products reuse
 * their primal passes).  Checks every chunk. */
lnk_hessian *lnk_hessian_alloc(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                               int n_chunks, const char *patterns);
void lnk_hessian_free(lnk_hessian *h);

/* The operator y = H_BB x (n = block size). */
lnk_operator lnk_hessian_operator(lnk_hessian *h);
const lnk_block *lnk_hessian_block(const lnk_hessian *h);
/* Number of products (H v, G v or F v, lnk_hessian_set_kind) applied so far. */
long lnk_hessian_n_products(const lnk_hessian *h);
/* Bytes of the workspace, the kept primal passes and 3 full vectors. */
size_t lnk_hessian_workspace_bytes(const lnk_hessian *h);

/* The operator applied from now on (default LNK_OP_HESSIAN); may be changed
 * between products (the kept primal passes serve all three).  The
 * functional part takes one more full-size vector. */
int lnk_hessian_set_kind(lnk_hessian *h, lnk_op_kind kind);
lnk_op_kind lnk_hessian_kind(const lnk_hessian *h);

/* Restrict the operator to another block (patterns as lnk_hessian_alloc),
 * keeping the workspace and the kept primal passes: a sweep over blocks
 * (lnkit blocks) computes each chunk's primal pass once.  Operators taken
 * before (lnk_hessian_operator) are stale: take it again.  On error the
 * block is unchanged.  Collective for a sharded operator (the new block is
 * split over the ranks; every rank must pass the same patterns). */
int lnk_hessian_set_block(lnk_hessian *h, const char *patterns);

/* Memory (bytes) for the kept primal passes of the chunks (see above):
 * LNK_HESSIAN_CACHE_AUTO (the default) is half the memory available at the
 * first product (lnk_memory_available), divided by the job's number of ranks
 * (they may share a machine); 0 recomputes every pass.  Only before
 * the first product (else LNK_EINVAL). */
#define LNK_HESSIAN_CACHE_AUTO ((size_t)-1)
int lnk_hessian_set_cache(lnk_hessian *h, size_t bytes);
/* After the first product: the number of this process's chunks whose primal
 * pass is kept, and (bytes, may be NULL) the extra memory they take. */
int lnk_hessian_cached_chunks(const lnk_hessian *h, size_t *bytes);

/* Mean loss and (if grad != NULL) its gradient over the chunks, full vector.
 * n_scored (may be NULL) gets the total number of scored tokens. */
int lnk_dataset_eval(const lnk_model *m, const double *theta, const lnk_batch *chunks,
                     int n_chunks, double *loss, double *grad, size_t *n_scored);

/* ============================================ data parallel (MPI, comm.h)
 *
 * Every rank holds theta and a shard of the chunks; the mean loss, its
 * gradient and H v are the token-weighted sums over the ranks' partial sums,
 * reduced in rank order (lnk_comm_reduce_scatter: the same bits on every
 * rank, every run, for a given number of ranks).  Against one process the
 * result differs only by rounding (tests: 1e-12 relative).
 *
 * Sharding: contiguous runs of chunks balanced by scored tokens.  rank r
 * gets chunks [first[r], first[r+1]) (first has parts+1 entries); the cuts
 * are the prefix-sum points nearest to r N / parts.  Ranks may get no chunk
 * when there are fewer chunks than ranks. */
int lnk_shard_chunks(const lnk_model *m, const lnk_batch *chunks, int n_chunks, int parts,
                     int *first);

/* y = H_BB x for whole block vectors (length block n) on every rank
 * (collective; for lnkit hvp and tests). */
int lnk_hessian_apply_full(lnk_hessian *h, const double *x, double *y);
/* This rank's slice of block vectors: [offset, offset + count). */
void lnk_hessian_slice(const lnk_hessian *h, size_t *offset, size_t *count);

/* ================================================================ data sets
 *
 * A data set: its chunks, the scored-token count of the whole set and, when
 * a process group shares it, the shard this process holds (contiguous chunks
 * balanced by scored tokens, lnk_shard_chunks) and the group, which the
 * Hessian and the loss then reduce over.  Built in steps:
 *   lnk_dataset_init(&ds);
 *   lnk_dataset_add_rows(&ds, m, &batch, rows)     batches cut into chunks of rows
 *   lnk_dataset_add_chunks(&ds, m, chunks, n)      or ready chunks (lnk_pairs_batches)
 *   lnk_dataset_shard(&ds, m, lnk_comm_world())    optional: keep this process's shard
 *   lnk_hessian_alloc_dataset(m, theta, &ds, patterns), lnk_dataset_loss(...)
 *   lnk_dataset_free(&ds);
 * Without lnk_dataset_shard (procs NULL) every process holds all chunks and
 * works alone.  The chunks are owned by the data set; the Hessian borrows them.
 * A view of chunks held elsewhere may also be written as a struct literal
 * {chunks, n, n, 0, n_scored, NULL}: it is never passed to lnk_dataset_free. */
typedef struct {
    lnk_batch *chunks;       /* the chunks held: all, or this process's shard */
    int n_chunks;            /* chunks held */
    int n_total;             /* chunks of the whole data set */
    int first;               /* data-set index of chunks[0] */
    size_t n_scored;         /* scored tokens of the whole data set */
    const lnk_procs *procs;  /* the group sharing it; NULL: this process alone */
} lnk_dataset;

void lnk_dataset_init(lnk_dataset *ds);
/* Append b's rows as chunks of `rows` rows (0: one chunk; the last may be
 * shorter), each a copy (lnk_batch_slice).  The chunks are checked against
 * the model where they are used (Hessian, loss). */
int lnk_dataset_add_rows(lnk_dataset *ds, const lnk_model *m, const lnk_batch *b, int rows);
/* Append chunks[0..n), taking over their arrays: afterwards chunks[i] own
 * nothing (lnk_batches_free(chunks, n) frees only the array). */
int lnk_dataset_add_chunks(lnk_dataset *ds, const lnk_model *m, lnk_batch *chunks, int n);
/* Keep g->rank's shard of the chunks (the others are freed) and share the
 * data set with g.  Once, after the chunks are added. */
int lnk_dataset_shard(lnk_dataset *ds, const lnk_model *m, const lnk_procs *g);
void lnk_dataset_free(lnk_dataset *ds);

/* The Hessian over the data set.  Without a group of more than one process
 * it is lnk_hessian_alloc.  Over ds->procs of P > 1 processes (collective),
 * each holding its shard of chunks (n_chunks >= 0), the operator works on
 * slices of the block vector (lnk_comm_split over the ranks; op.group set,
 * see "Distributed vectors" in curvature.h): an apply allgathers x (8 n
 * bytes), runs this rank's chunks, and reduce-scatters the sum (8 n bytes),
 * n the block size; memory per rank: the model workspace + 4 block-size
 * vectors.  A failure on any rank (fault, allocation, non-finite) makes the
 * apply fail on every rank with "rank R: ..." (lnk_comm_agree), never a
 * hang. */
lnk_hessian *lnk_hessian_alloc_dataset(const lnk_model *m, const double *theta,
                                       const lnk_dataset *ds, const char *patterns);
/* Mean loss and (grad != NULL) gradient, full, on every process of the group
 * (collective when ds->procs has more than one process). */
int lnk_dataset_loss(const lnk_model *m, const double *theta, const lnk_dataset *ds,
                     double *loss, double *grad);

#ifdef __cplusplus
}
#endif
#endif
