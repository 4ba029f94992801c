/* The spectral part of the Hessian studies (hessian_spectrum, multi30k_hessian):
 * for one model, weights and data set, the extremal eigenvalues (Lanczos), the
 * trace (Hutchinson), the SLQ nodes and the top eigenvalue of each parameter
 * block; its rows in the four CSVs (their summary, the pooled SLQ density
 * among it, is studies/summary/spectra.py's).
 *
 * Files (columns; eigs, trace, slq_nodes and density are the formats of
 * lnkit/curvature_io.h, written by its writers, after the key columns):
 *   eigs.csv      norm_pos,seed,which,index,eigenvalue,residual,converged
 *   trace.csv     norm_pos,seed,method,probes,trace,stderr
 *   blocks.csv    norm_pos,seed,block,layer,kind,top_eigenvalue,residual,converged
 *                 (long form: norm_pos,seed,block,side,layer,kind,n_params,
 *                  top_eigenvalue,residual,converged,steps)
 *   slq_nodes.csv norm_pos,seed,run,index,node,weight */
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

#endif
