/* The front end of the programs (lnkit, the studies, the benchmarks), above
 * the library: their start, their provenance record and, in test builds,
 * the simulated failures of a rank.  The library never reads the
 * environment, prints, exits or executes a program; the programs do it here. */
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

#endif
