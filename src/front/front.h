/* The front end of the programs (lnkit, the studies, the benchmarks): their
 * start and their messages; options are in front/opt.h.  Above the library:
 * the library never prints and never exits, the programs do it here.
 *
 * Messages.  Every line a program writes on standard error starts with its
 * name, "lnkit eigs: " for lnkit's commands (cli_parse sets it), the
 * study's or benchmark's name otherwise: errors (cli_die: one line, exit
 * status 2, nothing half-written left behind), warnings (cli_warn:
 * "NAME: warning: ..."), and notes and progress (cli_say: nothing with
 * --quiet, and only from rank 0 of an MPI job).
 *
 * Under mpirun (lnkit/comm.h) errors print once (rank 0, or the failing
 * rank naming itself) and end the job with status 2.  While a program sets
 * up (until cli_setup_done) every rank's next collective step is an
 * agreement (cli_check), so a rank that fails joins it and all end cleanly;
 * after it, a rank failing alone ends the job (lnk_comm_abort). */
#ifndef LNK_FRONT_H
#define LNK_FRONT_H

#include "lnkit/lnkit.h"

/* First in main: the BLAS kernel (may re-execute the program), the removal
 * of unfinished outputs at exit and on fatal signals, the MPI job, the
 * command line for the sidecars; prog names the program in messages until
 * cli_parse names the command. */
void cli_start(int *argc, char ***argv, const char *prog);

/* The name messages start with. */
void cli_set_name(const char *name);
const char *cli_name(void);

/* "NAME: message" on standard error and exit 2 (see above for MPI). */
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_die with the library's last message. */
_Noreturn void cli_die_lib(void);
#define CLI_CK(x)                                                                                 \
    do {                                                                                          \
        if ((x) != LNK_OK)                                                                        \
            cli_die_lib();                                                                        \
    } while (0)
/* "NAME: warning: message" (rank 0; also with --quiet). */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Notes and progress: "NAME: " at the start of each line; nothing with
 * --quiet or on ranks other than 0. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* --quiet (every program takes it: cli_parse). */
extern int cli_quiet;

/* Collective: if any rank's status is not LNK_OK every rank dies with its
 * message ("rank R: ..." when they differ). */
void cli_check(int status);
/* 1 on rank 0, the rank that writes outputs and speaks. */
int cli_root(void);
/* The end of the set-up phase (see above). */
void cli_setup_done(void);

/* "-o -" (docs/cli.md): the path a writer should write for an output named
 * path: path itself, or for "-" a temporary file whose bytes go to standard
 * output at cli_stdout_flush (binary: refused when standard output is a
 * terminal).  The sidecar of standard output is none. */
int cli_is_stdout(const char *path);
const char *cli_out(const char *path, int binary);
/* After the outputs are committed: "-"'s bytes to standard output. */
void cli_stdout_flush(void);

/* A benchmark's plain output: "-" is standard output, any other path opened
 * with fopen (mode "w" or "a"), or die naming it; closed (flushed) by
 * cli_fclose, which dies if a write failed. */
FILE *cli_fopen(const char *path, const char *mode);
void cli_fclose(FILE *f, const char *path);

/* The sidecar of path (lnk_meta_write): the program's keys in extra (an
 * object, taken; NULL: none), or die.  Rank 0 only. */
#include <jansson.h>
void cli_meta_write(const char *path, const lnk_config *cfg, json_t *extra, const char *start,
                    double seconds);

/* malloc(n) or die "out of memory". */
void *cli_alloc(size_t n);

#endif
