/* lnkit CLI: shared pieces of the curvature commands (eigs, trace, density). */
#ifndef LNK_CLI_CURV_H
#define LNK_CLI_CURV_H

#include "cli/cli.h"
#include "lnkit/curvature.h"
#include "lnkit/hessian.h"

#define CLI_MAX_BATCH 64
enum { CURV_WEIGHTS = 700, CURV_BATCH, CURV_CHUNK, CURV_BLOCK, CURV_RNG, CURV_QUIET, CURV_CACHE };

typedef struct {
    cli_model_opts mo;
    const char *weights;
    const char *batch[CLI_MAX_BATCH];
    int n_batch;
    int chunk_rows;     /* 0 = one chunk per file */
    const char *block;  /* NULL = all parameters */
    uint64_t rng_seed;
    int quiet;
    long cache_mb;      /* --cache-mb: MB for the kept primal passes; -1 (default): auto */
    int cache_set;
} cli_curv_opts;

typedef struct {
    lnk_config c;
    lnk_model *m;
    double *theta;
    lnk_dataset ds;     /* the data set; the fields below are views of it */
    lnk_batch *chunks;  /* this rank's chunks (all in a one-process run) */
    int n_chunks;       /* chunks of the whole data set */
    int n_own, first_own; /* this rank's: chunks[0 .. n_own) are data-set chunks first_own.. */
    size_t n_scored;    /* scored tokens of the whole data set */
    size_t block_n;     /* block size (op.n is this rank's slice of it) */
    lnk_hessian *h;
    lnk_operator op;
    double t0;
    char start[32];
} cli_curv;

/* Add the shared options (and the model options) to opts; returns the new count. */
int cli_curv_add_options(struct option *opts, int n);
int cli_curv_option(cli_curv_opts *o, int val, const char *arg);
void cli_curv_print_help(void);
void cli_curv_open(cli_curv *s, const cli_curv_opts *o);
void cli_curv_close(cli_curv *s);
/* Progress of a long run on stderr, at most once a second: "WHAT: UNIT done/total,
 * elapsed, time left".  Use with lnk_progress_fn (ctx = a cli_progress). */
typedef struct {
    const char *what, *unit;
    double last;
} cli_progress;
int cli_progress_fn(void *ctx, int done, int total, double elapsed);

/* The kept primal passes of --cache-mb (see lnk_hessian_set_cache) for h. */
void cli_set_cache(lnk_hessian *h, int set, long mb);
/* --cache-mb's value, or die. */
long cli_cache_mb(const char *arg);

/* The value of --reorth partial|always, or die naming cmd. */
int cli_reorth(const char *cmd, const char *arg);

/* The value of --mode full|light, or die naming cmd. */
int cli_lanczos_mode(const char *cmd, const char *arg);

/* The input files of o (config, weights, batches) into in[]; returns the count. */
int cli_curv_inputs(const cli_curv_opts *o, cli_file *in);

/* NAME.meta.json beside csv_path; extra_fields: NULL or '"k": v, ...' JSON members. */
void cli_curv_meta(cli_curv *s, const cli_curv_opts *o, const char *csv_path, const char *cmd,
                   const char *extra_fields);

#endif
