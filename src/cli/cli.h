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
} cli_session;
void cli_open(cli_session *s, const cli_model_opts *mo, const char *weights,
              const char *const *batch, int n_batch, unsigned ws_flags);
/* 1 if the run works on a data set (several files, or several ranks), built
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
 * Dies with "CMD: FLAG PATH: problem" otherwise.  (cli_files, below, with
 * out and in.) */
void cli_check_outputs(const char *cmd, const cli_file *out, int n_out, const cli_file *in,
                       int n_in);

/* Every path a command will read, write, rename or delete, checked against
 * every other one before any work: two outputs (or an output and a file the
 * run deletes) that are the same file, an output that is an input, a path
 * that a glob the run deletes would match, all refused.  The same file: the
 * same device and inode where both exist, else the same name in the same
 * folder (links followed, so ./x, d/../x and a link to x are x). */
enum { CLI_IN = 0, CLI_OUT = 1, CLI_GONE = 2 /* path: a checkpoint; its temporaries go */ };
typedef struct {
    struct cli_path { const char *path, *flag; int role; } *p;
    int n, cap;
    char **own; /* strings made here, freed by cli_files_check */
    int n_own;
} cli_files;
void cli_files_in(cli_files *f, const char *path, const char *flag);
void cli_files_out(cli_files *f, const char *path, const char *flag);
/* An output and its NAME.meta.json sidecar (none beside a device or FIFO);
 * the sidecar alone. */
void cli_files_out_meta(cli_files *f, const char *path, const char *flag);
void cli_files_meta(cli_files *f, const char *path, const char *flag);
/* --checkpoint FILE: FILE, every rank's rows file, the lock file and the
 * temporary files lnk_ckpt_open removes (lnk_ckpt_file). */
void cli_files_checkpoint(cli_files *f, const char *path);
/* Check them all (collective; dies naming the first clash) and free f. */
void cli_files_check(const char *cmd, cli_files *f);
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

/* Exit statuses: 0 done (and converged), 2 bad input or a failure, 3 done
 * but not converged: a command that computes eigenpairs to a tolerance
 * (eigs; blocks' extremes) writes its full results and sidecar as always
 * (converged columns, counts in the sidecar), then prints one warning line
 * (cli_not_converged) and exits 3.  Commands without a convergence test
 * (trace, density) exit 0. */
#define CLI_EXIT_NOT_CONVERGED 3
/* The warning line: n_bad of n_req requested eigenpairs did not converge,
 * the worst residual relative to max|l| (worst_rel) against tol, the
 * Lanczos steps used of the limit, and hint (NULL or a short advice).
 * Rank 0 prints it, even with --quiet; returns CLI_EXIT_NOT_CONVERGED (0 if
 * n_bad is 0). */
int cli_not_converged(const char *cmd, int n_bad, int n_req, double worst_rel, double tol,
                      int steps, int max_steps, const char *hint);

/* Report an unknown option / missing argument from getopt_long and exit 2. */
_Noreturn void cli_bad_option(const char *cmd, int c, char **argv);
#endif
