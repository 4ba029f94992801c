/* lnkit: the result files of the model's own queries (what lnkit eval and
 * lnkit params print): one writer each, which lnkit's commands use and
 * anything linking the library can (the studies; Python through the shared
 * library), so that a file means the same wherever it comes from.  CSV as
 * docs/MODEL.md §9 (header row, %.17g doubles, through lnk_csv); JSON
 * indented by 2, keys in order, reals to 17 digits, a newline at the end
 * (lnk_json_fwrite).
 *
 *   result    format  content
 *   eval      CSV     quantity,tensor,value: loss, n_scored (a count), then
 *                     grad_norm per tensor (MODEL.md §6 order), grad_norm_total
 *             JSON    {loss, n_scored, grad_norms {tensor: value}, grad_norm_total}
 *   listing   table   a title line (task, norm placement and type, counts;
 *                     the block's), the tensors (index, name, shape, count,
 *                     offset), then the groups (pattern, tensors, count)
 *             CSV     kind,name,shape,count,offset: a row per tensor (shape
 *                     RxC or N), then one per group (shape and offset empty)
 *             JSON    {task, n_params, n_tensors, [block, block_params,]
 *                     tensors [{index, name, shape, count, offset}],
 *                     groups [{pattern, tensors, count}]}
 *
 * The *_fwrite functions write to an open stream; the *_write ones a whole
 * file atomically (lnk_afile: in an output group, renamed at its commit).
 * Every value must be finite: a NaN or infinity is refused (LNK_ENONFINITE)
 * before the file is committed. */
#ifndef LNKIT_MODEL_IO_H
#define LNKIT_MODEL_IO_H

#include <stddef.h>
#include <stdio.h>
#include "lnkit/hessian.h"
#include "lnkit/io.h"
#include "lnkit/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The JSON value o (taken: its reference is dropped) to f as above.
 * LNK_ENOMEM if it cannot be formatted, LNK_EIO if it cannot be written. */
int lnk_json_fwrite(FILE *f, struct json_t *o);

/* eval's result on the layout lay: the loss over n_scored scored tokens, the
 * gradient's Frobenius norm on each tensor (norm[0 .. lay->n_tensors)) and
 * over all parameters (norm[lay->n_tensors]). */
typedef struct {
    double loss;
    size_t n_scored;
    const double *norm;
} lnk_eval_result;
extern const char *const lnk_cols_eval[];
int lnk_eval_fwrite(FILE *f, const lnk_layout *lay, const lnk_eval_result *r);
int lnk_eval_write(const char *path, const lnk_layout *lay, const lnk_eval_result *r);
int lnk_eval_fwrite_json(FILE *f, const lnk_layout *lay, const lnk_eval_result *r);

/* The listing of a model's tensors (the block's, or all) and, for the whole
 * model, the groups worth naming for a block selection: the whole model,
 * embeddings, each kind of sub-layer across blocks, W2 of every FFN (Xiong
 * et al.'s W^{2,l}), the norms, the final norms, the output layer, then each
 * block of each stack; groups that select nothing in this model are left
 * out.  Made by lnk_listing_make (the block's patterns as lnk_block_select:
 * an error there is its status and message), freed by lnk_listing_free. */
typedef struct {
    const lnk_model *m;
    const char *block;   /* the patterns; NULL: the whole model, with groups */
    lnk_block sel;       /* the tensors listed */
    int n_groups;
    char **group;        /* [n_groups] patterns */
    lnk_block *gb;       /* [n_groups] what each selects */
} lnk_listing;
typedef enum { LNK_LISTING_TABLE, LNK_LISTING_CSV, LNK_LISTING_JSON } lnk_listing_format;
int lnk_listing_make(const lnk_model *m, const char *block, lnk_listing *l);
void lnk_listing_free(lnk_listing *l);
int lnk_listing_fwrite(FILE *f, const lnk_listing *l, lnk_listing_format fmt);
int lnk_listing_write(const char *path, const lnk_listing *l, lnk_listing_format fmt);

#ifdef __cplusplus
}
#endif
#endif
