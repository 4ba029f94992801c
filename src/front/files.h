/* The files of a program (lnkit's commands, the studies, the benchmarks):
 * every path it reads, writes or deletes checked against the others before
 * any work (files.c), outputs written as one group, sidecars only beside
 * regular files, and the result table's conventions (-o FILE, -o -, --json:
 * result.c, docs/cli.md). */
#ifndef LNK_FRONT_FILES_H
#define LNK_FRONT_FILES_H

#include "front/front.h"
#include "front/opt.h"

/* The vocabulary: options several commands take, spelt and explained once. */
#define CLI_OPT_OUTPUT(T, f, fl, what, more)                                                      \
    {.type = CLI_STR, .key = 'o', .name = "output", .arg = "FILE", CLI_AT(T, f),                 \
     .flags = CLI_WRITES | CLI_STDOUT | (fl), .help = what "; -: standard output", .doc = more}
#define CLI_OPT_JSON(T, f) CLI_OPT_JSON_AS(T, f, "the result as JSON on standard output instead of CSV")
/* --json with a help text naming the JSON's shape */
#define CLI_OPT_JSON_AS(T, f, what)                                                               \
    {.type = CLI_FLAG, .name = "json", CLI_AT(T, f), .flags = CLI_STDOUT, .help = what}

/* The result table of a command (result.c, docs/cli.md): its CSV goes to
 * -o (a file, renamed at the group commit; "-": standard output once
 * committed); with --json the same rows are printed as a JSON array of row
 * objects on standard output, instead of the CSV when -o is "-".
 * "-o - --json" is refused by cli_parse (--json is CLI_STDOUT: one output on
 * standard output); cli_result_path: where the command writes the CSV;
 * cli_result_json after cli_outputs_commit. */
const char *cli_result_path(const char *out, int json);
void cli_result_json(void);
/* The JSON value o (taken) on standard output: indented, keys in order,
 * reals to 17 digits; dies if it cannot be written. */
void cli_json_print(json_t *o);
/* The same to f: 0, or -1 if it could not be written. */
int cli_json_fprint(FILE *f, json_t *o);

/* A file named on the command line and the
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

#endif
