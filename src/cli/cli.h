/* lnkit command-line program: shared pieces of the subcommands.  Start,
 * messages and options declared once: the front end (front/front.h,
 * front/opt.h), which the studies and benchmarks share. */
#ifndef LNK_CLI_H
#define LNK_CLI_H

#include "front/front.h"
#include "front/opt.h"
#include "lnkit/lnkit.h"

/* A command of lnkit: its name, what runs it, its declaration (options,
 * help, defaults); lnkit_commands ends with {NULL}. */
typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const cli_cmd *cmd;
} lnkit_command;
extern const lnkit_command lnkit_commands[];

/* Options every model command shares: --config, the configuration keys as
 * flags (the library's table: lnk_config_describe), --threads. */
typedef struct {
    const char *config_path;
    cli_config_flags keys;
    int threads;       /* 0 = OpenBLAS default */
} cli_model_opts;
extern const cli_opt cli_model_table[];
#define CLI_MODEL(T, f)                                                                           \
    {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_model_table,                                     \
     .help = "Model configuration (docs/MODEL.md section 8)", .doc = CLI_MODEL_DOC}
#define CLI_MODEL_DOC                                                                             \
    "Flags override --config, in the order given; a saved configuration's per-side keys "       \
    "derived from L, V and d follow flags on those keys (--config saved.json --L 12 builds 12 " \
    "layers on every side). Keys of sides the task does not have (--L-enc, --V-src for lm; "    \
    "--L-dec, --V-tgt for cls; --n-classes outside cls) are accepted and ignored. Every key "   \
    "may be spelt with _ or -."

/* The vocabulary: options several commands take, spelt and explained once. */
#define CLI_OPT_OUTPUT(T, f, fl, what, more)                                                      \
    {.type = CLI_STR, .key = 'o', .name = "output", .arg = "FILE", CLI_AT(T, f),                 \
     .flags = CLI_WRITES | (fl), .help = what "; -: standard output", .doc = more}
#define CLI_OPT_JSON(T, f)                                                                        \
    {.type = CLI_FLAG, .name = "json", CLI_AT(T, f),                                             \
     .help = "the result as JSON on standard output instead of CSV"}

/* The result table of a command (result.c, docs/cli.md): its CSV goes to
 * -o (a file, renamed at the group commit; "-": standard output once
 * committed); with --json the same rows are printed as a JSON array of row
 * objects on standard output, instead of the CSV when -o is "-".
 * cli_result_check first (refuses "-o - --json", both on standard output);
 * cli_result_path: where the command writes the CSV; cli_result_json after
 * cli_outputs_commit. */
void cli_result_check(const char *out, int json);
const char *cli_result_path(const char *out, int json);
void cli_result_json(void);

/* Build the finalized config: file first, then the flags in order. */
void cli_make_config(const cli_model_opts *mo, lnk_config *c);

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
/* --max-input SIZE (4096, 512M, 2G): a size in bytes into the size_t at dst. */
cli_call_fn cli_size_arg;

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
 * Rank 0 prints it (cli_warn), even with --quiet; returns CLI_EXIT_NOT_CONVERGED (0 if
 * n_bad is 0). */
int cli_not_converged(int n_bad, int n_req, double worst_rel, double tol, int steps,
                      int max_steps, const char *hint);
#endif
