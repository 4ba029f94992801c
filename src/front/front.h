/* The front end of the programs (lnkit, the studies, the benchmarks), above
 * the library: their start, their provenance record and, in test builds,
 * the simulated failures of a rank.  The library never reads the
 * environment, prints, exits or executes a program; the programs do it here.
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

/* The start of every program (start.c): first thing in main.  The user's
 * settings from the environment, checked (a bad value: "PROG: message",
 * exit 2) and passed to the library, which reads none: LNK_MEM_LIMIT_MB
 * (lnkit/memory.h), LNK_BLAS_KERNEL and OPENBLAS_CORETYPE (lnkit/blas.h:
 * the program restarts itself on a better OpenBLAS kernel, so nothing may
 * come before this call); in a test build the test hooks (lnkit/fault.h,
 * LNK_FAULT below).  Then the clean-up of unfinished outputs
 * (lnk_output_init), the MPI job (lnk_comm_init) and the program's
 * provenance record with its command line.  cli_start_env: the settings, the
 * BLAS kernel and the record only (programs that never run under mpirun). */
void cli_start(int *argc, char ***argv, const char *prog);
void cli_start_env(const char *prog);
/* The program's provenance record (lnkit/provenance.h) for its sidecars,
 * and the note on its BLAS kernel choice (--version). */
lnk_prov *cli_prov(void);
const char *cli_blas_note(void);
/* The job's processes (lnk_comm_world), wrapped in a test build so that
 * LNK_FAULT="RANK:POINT:KIND[:N]" fails rank RANK at its N-th "load" or
 * "hvp" (fault.c); cli_fault(point): 1 if this rank fails at point now
 * (kinds exit and kill do not return), never outside a test build. */
const lnk_procs *cli_procs(void);
int cli_fault(const char *point);
#ifdef LNK_TESTING
int cli_fault_set(const char *spec);
#endif

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
/* Where an output went, for the notes' "-> WHERE": path, "standard output"
 * for "-", and for NULL (a file beside -o not written) where it is not. */
const char *cli_dest(const char *path);
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
/* The run's clock, for the sidecars of a command's or a benchmark's
 * results: cli_run_begin() when the run starts (after cli_parse);
 * cli_run_meta writes path's sidecar (cli_meta_write) with that start and
 * the wall time since. */
void cli_run_begin(void);
void cli_run_meta(const char *path, const lnk_config *cfg, json_t *extra);
/* The start time cli_run_begin took (ISO 8601). */
const char *cli_run_start(void);

/* malloc(n) or die "out of memory". */
void *cli_alloc(size_t n);

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
