/* lnkit CLI: shared pieces of the curvature commands (eigs, trace, density). */
#ifndef LNK_CLI_CURV_H
#define LNK_CLI_CURV_H

#include "cli/cli.h"
#include "front/ckpt.h"
#include "front/curv_opts.h"
#include "front/progress.h"
#include "front/density.h"
#include "lnkit/checkpoint.h"
#include "lnkit/curvature.h"
#include "lnkit/hessian.h"

/* The options every curvature command shares (cli_curv_table: the data, the
 * block, the operator; front/ckpt.h's cli_ckpt_table: checkpoints of resumable
 * runs), declared once with their identity and sidecar roles. */
typedef struct {
    cli_model_opts mo;
    const char *weights;
    const char *batch[CLI_MAX_BATCH];
    int n_batch;
    int chunk_rows;     /* 0 = one chunk per file */
    const char *block;  /* NULL = all parameters */
    uint64_t rng_seed;
    long cache_mb;      /* --cache-mb: MB for the kept primal passes; -1 (default): auto */
    int op_kind;        /* --operator: an lnk_op_kind (LNK_OP_HESSIAN) */
    cli_ckpt_opts ck;   /* --checkpoint FILE (or NULL), --checkpoint-every, --resume-anywhere */
    int in_blocks;      /* the operator is restricted to blocks after the open (lnkit
                         * blocks): the header names the model, not "the whole model" */
} cli_curv_opts;
extern const cli_opt cli_data_table[], cli_block_table[], cli_curv_table[], cli_op_table[];
extern const cli_opt cli_curv_eigs[], cli_curv_trace[], cli_curv_density[], cli_curv_blocks[];
/* --weights, --batch; --chunk, --block (cli_block_table: hvp's too), --rng-seed;
 * --operator, --cache-mb. */
#define CLI_DATA(T, f)                                                                            \
    {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_data_table, .help = "Model, data and block"}
#define CLI_OP(T, f) {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_op_table}
#define CLI_BLOCK(T, f) {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_block_table}
/* curv: cli_curv_table with the command's --rng-seed help (cli_curv_eigs, ...) */
#define CLI_CURV(T, f, curv)                                                                      \
    CLI_DATA(T, f), {.type = CLI_GROUP, CLI_AT(T, f), .ref = curv}, CLI_OP(T, f)
void cli_curv_defaults(cli_curv_opts *o);

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
    const char *cmd;        /* "eigs", ...: the sidecar's command and the checkpoint's */
    const cli_curv_opts *o; /* the shared options; the command's own: own (its table), args */
    const cli_opt *own;
    const void *args;
    cli_ckpt_run run;   /* --checkpoint (cli_curv_ckpt) and the products */
    const char *block;  /* --block as the operator was made with it (NULL: the whole model) */
    cli_first_meter first; /* op's first product, metered (front/progress.h) */
} cli_curv;

/* An output of a curvature command: its path (NULL: not asked for), the
 * option that named it, and whether a sidecar goes beside it. */
typedef struct {
    const char *path, *flag;
    int sidecar;
} cli_curv_out;
/* The run of command cmd (its options: own, the table, at args; the shared
 * ones, o), writing outs[0 .. n_outs), or die.  Before the hours of work
 * (cli_files_check): the outputs, the sidecars of those that have one,
 * --checkpoint and its files, against each other and the inputs of o
 * (config, weights, batches); then, with --checkpoint, its lock taken
 * (cli_ckpt_lock: another run on it is refused now), held until
 * cli_curv_close or the end of the process.  Then the model, the data set
 * and the operator. */
void cli_curv_open(cli_curv *s, const cli_curv_opts *o, const char *cmd, const cli_opt *own,
                   const void *args, const cli_curv_out *outs, int n_outs);
/* The line on what the run works on (the block selected, by name and size;
 * the chunks, the scored tokens, the ranks).  A command says it after its own
 * checks of the operator (-k against its size, --group's globs), so that a
 * refused run is one line. */
void cli_curv_say(const cli_curv *s);
void cli_curv_close(cli_curv *s);
/* The run is complete: cli_ckpt_done of its run, then cli_curv_close. */
void cli_curv_done(cli_curv *s);
/* The work starts (cli_ckpt_start: total, the run's products at most);
 * with --checkpoint, the identity items of the command's own options
 * (those of its table marked CLI_ID), then those every curvature run shares
 * (configuration, weights, batches, chunk, block, seed, operator; the
 * build's: cli_ckpt_open), and the checkpoint opened (resumed or begun) for
 * kind with rows of the operator's slice (max_rows, mapped: see
 * lnk_ckpt_open).  Dies on a mismatch or a bad file.  Nothing more without
 * --checkpoint (s->run.ck stays NULL). */
void cli_curv_ckpt(cli_curv *s, int kind, size_t max_rows, int mapped, long total);
/* The items of that identity but the build's, added to id (the record a
 * binary output embeds: front/record.h); status of lnk_ckpt_id_add. */
int cli_curv_id(const cli_curv *s, lnk_ckpt_id *id);

/* NAME.meta.json beside path: the command, its options (its own, then the
 * shared ones) as the tables record them, the run's sizes and products, then
 * the keys of results (an object, taken; NULL: none). */
void cli_curv_meta(cli_curv *s, const char *path, json_t *results);

#endif
