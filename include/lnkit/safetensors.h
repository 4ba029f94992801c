/* lnkit: safetensors files (weights, batches, vectors).
 *
 * Format: 8 bytes little-endian u64 N, then N bytes of JSON header
 *   {"NAME": {"dtype": "F64"|"I64", "shape": [..], "data_offsets": [begin, end]}, ...,
 *    "__metadata__": {"k": "v", ...}}
 * (padded with spaces to a multiple of 8 bytes by writers), then the data
 * buffer; offsets are relative to the buffer start.
 *
 * The reader validates everything and names the tensor and the problem:
 * file shorter than 8 bytes, N beyond the end of the file, header not UTF-8
 * JSON or not an object, duplicate names, entry not an object, unknown or
 * unsupported dtype, shape not a list of non-negative integers, data_offsets
 * not two integers with begin <= end, end - begin != numel * itemsize, offsets
 * beyond the buffer, tensors overlapping or leaving gaps, buffer longer than
 * the tensors.  Data are little-endian.
 * The writer writes to a temporary file in the same directory and renames it,
 * so no partial file is ever left under the final name.
 */
#ifndef LNKIT_SAFETENSORS_H
#define LNKIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/model.h"
#include "lnkit/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { LNK_DT_F64 = 0, LNK_DT_I64 = 1 } lnk_dtype;

#define LNK_ST_MAXDIM 8

typedef struct {
    char *name;
    lnk_dtype dtype;
    int ndim;
    int64_t shape[LNK_ST_MAXDIM];
    size_t numel;
    void *data;        /* double* or int64_t*, numel elements */
} lnk_st_tensor;

typedef struct {
    int n;
    lnk_st_tensor *t;  /* in the order of their data offsets */
    char *path;
    int n_meta;        /* "__metadata__": n_meta keys meta[2i], values meta[2i+1] */
    char **meta;
    lnk_digest digest; /* size and SHA-256 of the bytes read (provenance.h) */
} lnk_st_file;

/* The header is at most LNK_ST_HEADER_LIMIT bytes (as the reference
 * implementation).  The file is read once, in order (lnk_input, sys.h): a
 * regular file, whose size bounds everything read and is checked first, or
 * a stream (a FIFO, a pipe such as bash's <(...)), whose tensors are read as
 * they come (memory grows with the bytes received, not with the sizes its
 * header claims) and which must end after the last tensor. */
#define LNK_ST_HEADER_LIMIT 100000000

/* Read and validate a file.  On error *out is NULL. */
int lnk_st_read(const char *path, lnk_st_file **out);
void lnk_st_free(lnk_st_file *f);
/* Tensor by name or NULL. */
const lnk_st_tensor *lnk_st_get(const lnk_st_file *f, const char *name);
/* Metadata value of key or NULL. */
const char *lnk_st_meta(const lnk_st_file *f, const char *key);

/* Write n tensors (in the given order, data contiguous), atomically.
 * metadata: NULL or a NULL-terminated list of key, value, key, value, ... strings. */
int lnk_st_write(const char *path, const lnk_st_tensor *t, int n, const char *const *metadata);

/* Model-aware helpers.
 * Weights: every tensor of the layout must be present with dtype F64 and the
 * expected shape, all values finite; a tensor the layout lacks is an error
 * (it means the file was made for another configuration). */
int lnk_weights_load(const char *path, const lnk_model *m, double *theta);
/* The same from a file read by lnk_st_read (messages name f->path), for a
 * program that records the file's digest (f->digest); also the vector and
 * batch loaders below.  lnk_batch_from_st takes the arrays over from f. */
int lnk_weights_from_st(const lnk_st_file *f, const lnk_model *m, double *theta);
int lnk_weights_save(const char *path, const lnk_model *m, const double *theta);
/* The *_save_meta writers add the caller's metadata (as lnk_st_write's;
 * NULL: none) to the header: a program's record of how the file was made
 * (docs/MODEL.md §9, the embedded record).  The readers ignore keys they do
 * not use, so files with or without them load alike. */
int lnk_weights_save_meta(const char *path, const lnk_model *m, const double *theta,
                          const char *const *metadata);
/* The configuration file beside the weights: m's configuration as
 * lnk_config_save_json writes it, with n_params and param_order (the
 * layout's tensor names), as lnkit init writes it. */
int lnk_model_config_save(const char *path, const lnk_model *m);

/* Vectors (MODEL.md §8): either one tensor "v" of shape [n_params] (layout
 * LNK_VEC_FLAT) or the named tensors of the layout (LNK_VEC_NAMED). */
enum { LNK_VEC_FLAT = 0, LNK_VEC_NAMED = 1 };
int lnk_vector_load(const char *path, const lnk_model *m, double *v, int *layout_kind);
int lnk_vector_from_st(const lnk_st_file *f, const lnk_model *m, double *v, int *layout_kind);
int lnk_vector_save(const char *path, const lnk_model *m, const double *v, int layout_kind);
int lnk_vector_save_meta(const char *path, const lnk_model *m, const double *v, int layout_kind,
                         const char *const *metadata);

/* Batches: "src", "tgt" (I64 [B, len]) and "labels" (I64 [B, S]) as the task
 * needs; checked with lnk_batch_check.  The writer records the task its
 * arrays make (labels: cls; src and tgt: seq2seq; tgt: lm) in the metadata
 * as "task".  The loader refuses a file made for another task than the
 * model's, naming both: by its metadata "task", or (files without it) by a
 * batch array that the model's task does not use (src or labels for lm,
 * tgt for cls, labels for seq2seq). */
int lnk_batch_load(const char *path, const lnk_model *m, lnk_batch *b);
int lnk_batch_from_st(lnk_st_file *f, const lnk_model *m, lnk_batch *b);
int lnk_batch_save(const char *path, const lnk_batch *b);
/* "task" first, then the caller's metadata. */
int lnk_batch_save_meta(const char *path, const lnk_batch *b, const char *const *metadata);

#ifdef __cplusplus
}
#endif
#endif
