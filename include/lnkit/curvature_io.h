/* lnkit: the result files of the curvature and geometry routines (they
 * compute; this I/O module writes).  Each result file has one writer here,
 * which lnkit's commands, the studies (and Python, through the library) use,
 * so that a file means the same wherever it comes from (CSV as docs/MODEL.md
 * §9: header row, %.17g doubles, through lnk_csv).
 *
 * A file holds the rows of one result (a command's output), or of several
 * (a study's rows for every point): then key columns come first, the same
 * values on every row of one result (norm_pos, seed; blocks: the block).
 * For each format: its columns after the keys (NULL-terminated), and a row
 * writer, *_rows(c, keys, result...), that writes one result's rows (the
 * keys' values first) to a CSV begun with lnk_csv_begin_keys (or whose
 * header the caller made of lnk_csv_names).  The *_write functions write a
 * whole file of one result without keys, atomically (lnk_afile: in an output
 * group, renamed at the group's commit).
 *
 *   format        columns                                      rows
 *   eigs          which,index,eigenvalue,residual,converged    one per eigenpair: the
 *                                                              top ones (index 0, 1, ..),
 *                                                              then the bottom ones
 *   trace         method,probes,trace,stderr                   one
 *   slq nodes     run,index,node,weight                        one per node of every run
 *   density       t,density                                    one per grid point
 *   mass          which,index,tensor,n,mass                    one per eigenpair and tensor
 *                                                              of the block: the squared
 *                                                              norm of the unit vector's
 *                                                              entries on it (sum 1)
 *   blockstat     block,type,n,operator,probes,frob,frob_se,   one per block
 *                 frob2,frob2_se,top,top_residual,
 *                 top_converged,bottom,bottom_residual,
 *                 bottom_converged,eig_steps,node_min,
 *                 node_max,applies
 *   js            block_a,block_b,js_distance                  one per pair of blocks
 *   select        index,selectable                             one per key
 */
#ifndef LNKIT_CURVATURE_IO_H
#define LNKIT_CURVATURE_IO_H

#include <stddef.h>
#include <stdio.h>
#include "lnkit/blockstats.h"
#include "lnkit/curvature.h"
#include "lnkit/hessian.h"
#include "lnkit/io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Key columns before a result's own: n names (the header) and this result's
 * n values.  NULL or n = 0: none. */
typedef struct {
    int n;
    const char *const *name;
    const char *const *value;
} lnk_csv_keys;

extern const char *const lnk_cols_eigs[], *const lnk_cols_trace[], *const lnk_cols_slq_nodes[],
    *const lnk_cols_density[], *const lnk_cols_mass[], *const lnk_cols_blockstat[],
    *const lnk_cols_js[], *const lnk_cols_select[];

/* The header of a file with keys k: k's names, then cols; into names (room
 * for max), returning the count, or -1 (LNK_EINVAL) if it does not fit. */
int lnk_csv_names(const lnk_csv_keys *k, const char *const *cols, const char **names, int max);
/* lnk_csv_begin on f with that header. */
int lnk_csv_begin_keys(lnk_csv *c, FILE *f, const lnk_csv_keys *k, const char *const *cols);

int lnk_eigs_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_eigs_result *r);
int lnk_trace_rows(lnk_csv *c, const lnk_csv_keys *k, const char *method,
                   const lnk_trace_result *r);
int lnk_slq_nodes_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_slq_result *r);
int lnk_density_rows(lnk_csv *c, const lnk_csv_keys *k, const double *t, const double *phi,
                     size_t npts);
/* Y: the k unit eigenvectors of r, rows of n entries on block b of m's layout. */
int lnk_mass_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_layout *lay, const lnk_block *b,
                  const lnk_eigs_result *r, const double *Y, size_t n);
/* One block's statistics: its name, type ("tensor", "group"), the operator's name and the
 * Hutchinson probes asked for. */
int lnk_blockstat_rows(lnk_csv *c, const lnk_csv_keys *k, const char *name, const char *type,
                       const char *op, int probes, const lnk_blockstat *s);
/* Every pair i < j of nb blocks: js[i nb + j]. */
int lnk_js_rows(lnk_csv *c, const lnk_csv_keys *k, const char *const *names, int nb,
                const double *js);
int lnk_select_rows(lnk_csv *c, const lnk_csv_keys *k, const int *selectable, int n);

/* A whole CSV file at path, atomically: the header (k's names, may be NULL,
 * then cols), then rows(c, ctx) writes the rows. */
int lnk_csv_write(const char *path, const lnk_csv_keys *k, const char *const *cols,
                  int (*rows)(lnk_csv *c, const void *ctx), const void *ctx);
/* Files of one result. */
int lnk_eigs_write(const char *path, const lnk_eigs_result *r);
int lnk_slq_write_nodes(const lnk_slq_result *r, const char *path);
int lnk_density_write(const char *path, const double *t, const double *phi, size_t npts);
int lnk_mass_write(const char *path, const lnk_layout *lay, const lnk_block *b,
                   const lnk_eigs_result *r, const double *Y, size_t n);
int lnk_select_write(const char *path, const int *selectable, int n);
/* The trace file to an open stream f (a file's, or standard output). */
int lnk_trace_fwrite(FILE *f, const char *method, const lnk_trace_result *r);

#ifdef __cplusplus
}
#endif
#endif
