/* lnkit: fault injection, in test builds only.
 *
 * The tests simulate what cannot be made to happen on demand: a disk that
 * fills at byte B, a rename that fails, a signal at an exact point of an
 * output file's life, a process killed inside a checkpoint save.  The points
 * where these happen are compiled only with -DLNK_TESTING: the test programs
 * and the lnkit and studies they run ($(BUILD)/testing/, see the Makefile);
 * the library that `make` builds and `make install` installs has none of
 * them and no lnk_fault_set.
 *
 *   LNK_FAULT_OUTPUT  spec POINT:ACTION[:N] (src/core/afile.c):
 *     write:ENOSPC:B (or EIO, EFBIG)  writes to output files fail with that
 *                    error once B bytes have been written in all
 *     write:term:B   SIGTERM once B bytes have been written
 *     create:term:N  SIGTERM right after the N-th temporary file is created
 *     synced:term    SIGTERM when a group's files are written and synced,
 *                    before the first rename
 *     rename:term:N  SIGTERM after the N-th rename of a group commit
 *     rename:EIO:N   the N-th rename of a group commit fails (roll-back)
 *     N counts from 1 (default 1), B from 0 (default 0).
 *   LNK_FAULT_CKPT    spec rows:N | file:N (src/io/checkpoint.c): SIGKILL in
 *     the N-th save of a checkpoint once its rows are on disk, before FILE is
 *     written (rows), or once FILE's temporary file is written, before the
 *     rename (file).  Rank 0 only.
 *
 * A test build's programs take the specs from the environment variables
 * LNK_OUTPUT_FAULT and LNK_CKPT_FAULT at start-up (src/front/start.c); a
 * rank's failure in an MPI job (LNK_FAULT) is simulated by the programs
 * themselves, outside the library (src/front/fault.c). */
#ifndef LNKIT_FAULT_H
#define LNKIT_FAULT_H

#ifdef __cplusplus
extern "C" {
#endif

enum { LNK_FAULT_OUTPUT = 1, LNK_FAULT_CKPT = 2 };

#ifdef LNK_TESTING
/* Arm the faults of kind (spec NULL or "": none).  LNK_EINVAL naming the
 * spec if it is not one of the forms above. */
int lnk_fault_set(int kind, const char *spec);
#endif

#ifdef __cplusplus
}
#endif
#endif
