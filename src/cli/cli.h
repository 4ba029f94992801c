/* lnkit command-line program: shared pieces of the subcommands.  Start,
 * messages and options declared once: the front end (front/front.h,
 * front/opt.h), which the studies and benchmarks share. */
#ifndef LNK_CLI_H
#define LNK_CLI_H

#include "front/front.h"
#include "front/opt.h"
#include "front/files.h"
#include "front/model.h"
#include "lnkit/lnkit.h"

/* A command of lnkit: its name, what runs it, its declaration (options,
 * help, defaults); lnkit_commands ends with {NULL}. */
typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const cli_cmd *cmd;
} lnkit_command;
extern const lnkit_command lnkit_commands[];

int cmd_init(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_batch_s2s(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_hvp(int argc, char **argv);
int cmd_eigs(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_density(int argc, char **argv);
int cmd_select(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_vector(int argc, char **argv);
int cmd_blocks(int argc, char **argv);
int cmd_meta(int argc, char **argv);

/* Everything eval/hvp need: config, model, weights, batches, workspace.
 * Repeated --batch files are one data set (docs/MODEL.md section 4: the
 * token-weighted mean of their losses), as in the curvature commands. */
#define CLI_MAX_BATCH 64
typedef struct {
    lnk_config c;
    lnk_model *m;
    double *theta;
    const char *const *batch; /* the --batch files */
    int n_batch;
    lnk_batch b;        /* the one file of a one-file, one-process run */
    lnk_workspace *ws;  /* its workspace */
    int chunk_rows;     /* --chunk (0: whole files) */
    int n_chunks;       /* the chunks of the whole job, set by cli_gradient */
} cli_session;
/* The configuration (cli_make_config) and its model, or die. */
lnk_model *cli_model_new(const cli_model_opts *mo, lnk_config *c);
/* The inputs of a model run, for cli_files_check: --config, --weights,
 * every --batch (NULL ones are not used). */
void cli_files_model(cli_files *f, const cli_model_opts *mo, const char *weights,
                     const char *const *batch, int n_batch);
/* The configuration (cli_make_config), the model and its weights, or die. */
void cli_load_model(const cli_model_opts *mo, const char *weights, lnk_config *c, lnk_model **m,
                    double **theta);
/* The data set of the files' rows in chunks (cli_chunk_rows), sharded over
 * the job (token-balanced, cli_procs()). */
void cli_load_data(lnk_dataset *ds, const lnk_model *m, const char *const *batch, int n_batch,
                   int chunk_rows);
void cli_open(cli_session *s, const cli_model_opts *mo, const char *weights,
              const char *const *batch, int n_batch, int chunk_rows, unsigned ws_flags);
/* 1 if the run works on a data set (several files, several ranks or --chunk), built
 * by cli_shard; 0 for one file in one process (s->b, s->ws). */
int cli_dataset(const cli_session *s);
/* The data set of the files' rows in chunks (one a file in one process, 4 P
 * a file with several ranks), sharded over the job (token-balanced; over
 * cli_procs()).  cli_open allocates no workspace then. */
void cli_shard(cli_session *s, lnk_dataset *ds);
/* Rows per chunk of a file of B rows: chunk_rows if set, else the whole file
 * in one process, or 4 P pieces with several ranks (so that the
 * token-balanced shards can be even). */
int cli_chunk_rows(int B, int chunk_rows);
/* --batch FILE once more (at most CLI_MAX_BATCH), or die. */
void cli_add_batch(const char **batch, int *n_batch, const char *path);
/* The mean loss over the session's files, its gradient g [n_params], finite
 * (or die), and the scored tokens, with the run's progress: one file in one
 * process through s->ws, else the data set sharded over the job (cli_shard). */
void cli_gradient(cli_session *s, double *loss, double *g, size_t *n_scored);
/* Frees what cli_open made (also a session holding only c and m). */
void cli_close(cli_session *s);
#endif
