/* lnkit command-line program: shared pieces of the subcommands. */
#ifndef LNK_CLI_H
#define LNK_CLI_H

#include <getopt.h>
#include "lnkit/lnkit.h"

#include "front/front.h"

/* Exit with "lnkit: <message>" on stderr and status 2. */
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit with the library's last message. */
_Noreturn void cli_die_lib(void);
/* Under mpirun (lnkit/comm.h): errors print once (rank 0, or the failing
 * rank naming itself) and end the job with status 2.  cli_check(status) is
 * collective: if any rank's status is not LNK_OK every rank dies with
 * "rank R: <its message>" (for steps where ranks can fail alone: reading
 * files, allocating, computing).  cli_root(): 1 on rank 0, which alone
 * writes outputs and progress. */
void cli_check(int status);
int cli_root(void);
/* The end of the set-up phase (see cli_die in common.c): after it, errors
 * come from agreed collective steps or end the job by abort. */
void cli_setup_done(void);

/* Options every model command shares: --config and the config keys as flags. */
typedef struct {
    const char *config_path;
    int n_set;
    const char *set_key[64];
    const char *set_val[64];
    int threads;       /* 0 = OpenBLAS default */
} cli_model_opts;

/* --quiet: nothing on stderr but errors.  Every command accepts it; notes
 * (what was written, hints) go through cli_say, which respects it. */
extern int cli_quiet;
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Append the long options of the config keys (--d, --norm-pos, --norm_pos, ...)
 * and --config/--threads/--quiet to opts (which must have room); returns the new count.
 * Their getopt values are >= CLI_KEY_BASE. */
#define CLI_KEY_BASE 1000
int cli_add_model_options(struct option *opts, int n);
/* Handle a getopt value from those options; returns 1 if it was one. */
int cli_model_option(cli_model_opts *mo, int val, const char *arg);
/* Build the finalized config: file first, then the flags in order. */
void cli_make_config(const cli_model_opts *mo, lnk_config *c);
/* Print the config flags with their defaults (for --help). */
void cli_print_model_help(void);
/* The same, with seed_help as the meaning of --seed (batch: the synthetic ids' seed). */
void cli_print_model_help_seed(const char *seed_help);

/* path with a trailing ".safetensors" (if any) replaced by suffix; malloc'd, dies on OOM. */
char *cli_sibling_path(const char *path, const char *suffix);

/* Inputs, each read once (a FIFO or /dev/fd/N too), its size and SHA-256
 * recorded for the sidecars (cli_prov): weights, batches and vectors
 * (safetensors.h), whole text files (lnk_read_input; *text malloc'd).  The
 * library's status (for cli_check under mpirun). */
int cli_load_weights(const char *path, const lnk_model *m, double *theta);
int cli_load_batch(const char *path, const lnk_model *m, lnk_batch *b);
int cli_load_vector(const char *path, const lnk_model *m, double *v, int *layout_kind);
int cli_read_input(const char *path, size_t max, const char *what, char **text);

/* Parse a positive integer option value or die naming the option. */
long cli_int(const char *opt, const char *s, long min, long max);

/* Parse a finite real option value, > 0 (strict) or >= 0, or die:
 * "CMD: --OPT: expected a finite number > 0, got 'S'". */
double cli_real(const char *cmd, const char *opt, const char *s, int strict);

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



/* Everything eval/hvp need: config, model, weights, batch, workspace. */
typedef struct {
    lnk_config c;
    lnk_model *m;
    double *theta;
    lnk_batch b;
    lnk_workspace *ws;
} cli_session;
void cli_open(cli_session *s, const cli_model_opts *mo, const char *weights, const char *batch,
              unsigned ws_flags);
/* Several ranks: the data set of s->b's rows in 4 P chunks, sharded over the
 * job (token-balanced; over cli_procs()).  cli_open allocates no
 * workspace then. */
void cli_shard(cli_session *s, lnk_dataset *ds);
/* Rows per chunk of a file of B rows: chunk_rows if set, else the whole file
 * in one process, or 4 P pieces with several ranks (so that the
 * token-balanced shards can be even). */
int cli_chunk_rows(int B, int chunk_rows);
void cli_close(cli_session *s);
/* Files (files.c).  A file named on the command line and the
 * option that named it, for messages. */
#define CLI_MAX_FILES 80
typedef struct {
    const char *path; /* NULL: not used */
    const char *flag; /* "-o", "--vectors", "sidecar of -o", ... */
} cli_file;
/* Before any work (collective): every output can be written (its folder
 * exists and is writable; not a folder, block device or read-only file),
 * the outputs that are files are distinct, and none is one of the inputs.
 * Dies with "CMD: FLAG PATH: problem" otherwise. */
void cli_check_outputs(const char *cmd, const cli_file *out, int n_out, const cli_file *in,
                       int n_in);
/* A sidecar's path: given (if not NULL), else out's name with suffix
 * (cli_sibling_path); NULL when out is a device or FIFO (no sidecar beside
 * /dev/null).  malloc'd. */
char *cli_sidecar_path(const char *out, const char *given, const char *suffix);
/* NAME.meta.json of a CSV output (NULL for a device or FIFO), malloc'd. */
char *cli_meta_path(const char *csv);
/* Group commit of the command's outputs (rank 0): all appear or none. */
void cli_outputs_begin(void);
void cli_outputs_commit(void);
/* --max-input SIZE (4096, 512M, 2G): the size limit of text inputs. */
void cli_max_input(const char *opt, const char *s);

/* Report an unknown option / missing argument from getopt_long and exit 2. */
_Noreturn void cli_bad_option(const char *cmd, int c, char **argv);
#endif
