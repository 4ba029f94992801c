/* The curvature-anatomy study's points, files and measurements
 * (studies/anatomy.c, the driver: its options and the sweep over the
 * points). */
#ifndef STUDIES_ANATOMY_ANATOMY_H
#define STUDIES_ANATOMY_ANATOMY_H

#include <stddef.h>
#include <stdint.h>
#include "front/pairs.h"
#include "lnkit/lnkit.h"
#include "kit/kit.h"

#define MAXLIST 16

typedef struct {
    int n, v[MAXLIST];
} ilist;

typedef struct {
    const char *out;
    cli_pairs_opts pa; /* --src, --tgt; one chunk (max_tokens 2^20) */
    int h, V, B, T, seeds, pairs;
    ilist lm_L, lm_d, s2s_L, s2s_d;
    int lm_refL, lm_refd, s2s_refL, s2s_refd, variants;
    int probes, eig_steps, runs, steps, quiet, resume;
    double tol, sigma_frac;
    uint64_t rng;
} opts_t;

typedef struct {
    int task, pre, norm, qk, L, d, seed;
} point_t;

/* ------------------------------------------------------------ points.c */

/* Every point once, in a fixed order: task, configuration, norm position, seed. */
int make_points(const opts_t *o, point_t **out);
/* The seq2seq data (D: the first --s2s-rows pairs of --src/--tgt, cli_pairs_load)
 * gives a seq2seq point its vocabulary sizes. */
void make_config(lnk_config *c, const opts_t *o, const cli_pairs *D, const point_t *p);

/* ------------------------------------------------------------ files.c */

/* the key columns: task,norm_pos,norm,qk_norm,L,d,seed,n_params */
#define NKEY 8

typedef struct {
    out_csv ext, mass, bn, js;
} files_t;

typedef struct {
    char (*k)[96];
    size_t n;
} keyset;

void open_files(files_t *F, const char *dir, int resume);
/* A point's key as its rows hold it: task,norm_pos,norm,qk_norm,L,d,seed. */
void point_key(const point_t *p, char *k, size_t n);
int keyset_has(const keyset *s, const char *k);
/* The points done: the keys of DIR/js.csv (empty if there is none). */
void done_points(const char *dir, keyset *s);
/* Rank 0: drop from DIR/NAME the rows of points not done (a run killed
 * between its files), rewriting it atomically; then every rank goes on. */
void drop_partial(const char *dir, const char *name, const keyset *done);
/* The sidecars' own keys: the settings of this run and its counts. */
lnk_meta *settings(const opts_t *o, int np, const char *s2s_data, long computed, long skipped);
/* The settings of this run (extra, the sidecars' keys) must be those of
 * DIR/extremes.meta.json where the CSVs exist. */
void check_settings(const char *dir, const lnk_meta *extra);
/* The key columns of point p's row. */
void key_row(lnk_csv *c, const point_t *p, size_t n_params);

/* ------------------------------------------------------------ point.c */

/* Point p's rows in the four files: extremes and masses, block norms, JS. */
void run_point(const opts_t *o, const point_t *p, const cli_pairs *D, files_t *F);

#endif
