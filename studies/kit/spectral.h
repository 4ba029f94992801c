/* The spectral part of the Hessian studies (hessian_spectrum, multi30k_hessian):
 * for one model, weights and data set, the extremal eigenvalues (Lanczos), the
 * trace (Hutchinson), the SLQ nodes and the top eigenvalue of each parameter
 * block; its rows in the four CSVs; and, from those files, the pooled SLQ
 * density of Post-LN and Pre-LN (lnk_slq_pool_density).
 *
 * Files (columns; eigs, trace, slq_nodes and density are the formats of
 * lnkit/curvature_io.h, written by its writers, after the key columns):
 *   eigs.csv      norm_pos,seed,which,index,eigenvalue,residual,converged
 *   trace.csv     norm_pos,seed,method,probes,trace,stderr
 *   blocks.csv    norm_pos,seed,block,layer,kind,top_eigenvalue,residual,converged
 *                 (long form: norm_pos,seed,block,side,layer,kind,n_params,
 *                  top_eigenvalue,residual,converged,steps)
 *   slq_nodes.csv norm_pos,seed,run,index,node,weight
 *   density.csv   norm_pos,t,density */
#ifndef LNK_STUDY_SPECTRAL_H
#define LNK_STUDY_SPECTRAL_H

#include "kit.h"

typedef struct {
    int k;                /* top-k and bottom-k eigenvalues */
    double eig_tol;
    int eig_steps;
    int probes;           /* Hutchinson probes */
    int runs, steps;      /* SLQ */
    double block_tol;
    int block_steps;
} spec_opts;

/* A parameter block: glob patterns (lnk_block_select) and its labels. */
typedef struct {
    char pat[64], side[4], kind[16];
    int layer;
} spec_block;

/* One point's results. */
typedef struct {
    lnk_eigs_result er;
    lnk_trace_result tr;
    lnk_slq_result slq;
    double *btop, *bres;
    int *bconv, *bsteps;
    size_t *bn;
    long hvp;             /* H v products in all */
    double sec_eigs, sec_trace, sec_slq, sec_blocks;
    size_t ws_bytes;      /* the whole Hessian's workspace */
} spec_point;

/* Compute a point: the whole Hessian of ds at th (eigs, trace, SLQ with seed),
 * then each block's top eigenvalue.  Fails the study on an error. */
void spec_run(const lnk_model *m, const double *th, const lnk_dataset *ds, const spec_opts *o,
              const spec_block *blk, int nblk, uint64_t seed, spec_point *p);
void spec_point_free(spec_point *p);

/* The four CSVs of the spectral part. */
typedef struct {
    out_csv eigs, trace, blocks, nodes;
    int long_blocks;      /* blocks.csv in its long form */
} spec_files;

/* csv_sweep (sweep = 1) or csv_open the four files in dir. */
void spec_files_open(spec_files *f, const char *dir, int long_blocks, int sweep);
/* csv_point(i) on the four files. */
void spec_files_point(spec_files *f, long i);
/* One point's rows. */
void spec_rows(spec_files *f, const char *norm_pos, int seed, const spec_point *p,
               const spec_block *blk, int nblk);
/* csv_close the four files (collective for a sweep). */
void spec_files_close(spec_files *f, const lnk_config *c, const lnk_meta *extra,
                      const char *start, double t0);

/* ------------------------------------------------------ summaries from files */

/* The SLQ results of dir/slq_nodes.csv, one per (norm_pos, seed) in file
 * order: *n of them in a malloc'd array (free each with lnk_slq_result_free),
 * pre[i] (malloc'd) 1 for Pre-LN. */
void spec_read_slq(const char *dir, lnk_slq_result **r, int **pre, int *n);

/* dir/density.csv: for each norm position the pooled density of its results
 * (lnk_slq_pool_density), with one sigma for both (Papyan's kappa on the
 * union of the node ranges, lnk_sigma_from_kappa with m = steps) on one grid
 * (pad LNK_SLQ_PAD, 4 points a sigma); the sidecar adds sigma, kappa and the
 * two integrals to extra's keys.  Returns sigma; integ gets the
 * integrals (post, pre).  Rank 0 only. */
double spec_write_density(const char *dir, const lnk_slq_result *r, const int *pre, int n,
                          double kappa, int steps, const lnk_config *c, const lnk_meta *extra,
                          const char *start, double t0, double integ[2]);

/* ------------------------------------------------------ Post / Pre comparisons */

/* A Post-LN / Pre-LN comparison over the seeds where both values converged
 * (the CSVs' converged flags): the seed means and sds of each variant over
 * those seeds, the ratio of the means and the range of the per-seed ratios;
 * n = 0 when no seed has both. */
typedef struct {
    int n;                  /* seeds compared */
    double post, post_sd, pre, pre_sd, ratio, rmin, rmax;
    int n_post_conv, n_pre_conv;
} spec_cmp;

/* post[s * stride], pre[s * stride] for s < S; pc, qc their converged flags
 * (same stride; NULL: all count as converged). */
spec_cmp spec_compare(const double *post, const int *pc, const double *pre, const int *qc,
                      int S, int stride);
/* A table row: name | Post mean ± sd | Pre | ratio of means | per-seed range |
 * "n of S" (a table of 6 columns); "-" where no seed has both. */
void spec_cmp_row(lnk_table *t, const char *name, const spec_cmp *c, int S);

#endif
