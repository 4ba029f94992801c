/* lnkit: checkpoints of long curvature runs (lnkit eigs|trace|density
 * --checkpoint FILE): the states of lnk_eigs, lnk_trace and lnk_slq
 * (curvature.h, "Checkpoints") saved to files and read back, so that a run
 * started again continues with bitwise the result of an uninterrupted one.
 *
 * Files.  FILE holds what the run belongs to (its identity: named text items,
 * e.g. the SHA-256 of the weights and the options that change numbers) and the
 * routine's state (scalars and arrays, doubles bit for bit), in a tagged
 * binary format closed by the SHA-256 of the rest; it is replaced atomically
 * (lnk_afile: temporary file, fsync, rename).  Vectors of length n (this
 * process's slice) live in a rows file beside it, FILE.basis (one process) or
 * FILE.basis.R (rank R of several), row i at byte 8 n i, and FILE records
 * which rows are valid with a 64-bit checksum of each, so a save costs the new
 * rows only:
 *   mapped (the FULL Lanczos basis): the file, preallocated to max_rows rows
 *     (a fresh run refuses a file system with less free space, and one that
 *     cannot reserve them leaves neither file behind), is mapped shared and the routine builds its basis in it
 *     (lnk_ckpt_basis); a save syncs the rows added since the last one
 *     (msync) and checksums them.  Memory stays bounded: the kernel keeps as
 *     much of the basis in its page cache as fits and reads the rest back.
 *   written (Hutch++'s sketch and Q, LIGHT mode's three vectors): a save
 *     writes the rows it has not written yet (pwrite, fdatasync); rows an old
 *     state refers to are never overwritten (LIGHT: two slots in turn).
 * A save writes the rows first and FILE last, so FILE always describes rows
 * that are on disk.  Under MPI every rank syncs its own rows file, rank 0
 * gathers the checksums and writes FILE, and all agree on the outcome.
 *
 * Opening.  No FILE: a fresh run (an initial FILE with the identity alone is
 * written at once; a rows file without its FILE is refused, not replaced).
 * FILE present: its SHA-256, format and identity are checked (one line naming
 * the first item that differs: "eigs: checkpoint ck: written for --tol
 * 1e-08, this run has --tol 1e-06"), then this process's valid rows against
 * their checksums; the state is then what lnk_ckpt_*_state return.  A
 * finished run removes FILE and its rows files (lnk_ckpt_remove).
 *
 * Environment.  Besides what the run is (its options and inputs: id items),
 * the identity holds what fixes its rounding (env items: the BLAS kernel,
 * its thread count, the library build).  A resume where an env item differs
 * is refused, naming both values, unless id->resume_anywhere: then it goes
 * on, and lnk_ckpt_moved says what changed (kept across later resumes), for
 * the result's record.  The MPI rank count is always fixed (each rank's rows
 * are its slice).
 *
 * Lock.  A run holds its checkpoint for its whole life: an advisory lock on
 * FILE.lock (an open file description lock, which the kernel drops when the
 * holder ends, however it ends: a killed run never blocks the resume), taken
 * by rank 0 before the checkpoint is read or any of its files is touched.
 * Another run on the same FILE is refused at once, with a message naming the
 * holder (pid, host, command, start: the line the holder wrote into
 * FILE.lock).  The lock file is removed when the lock is released; a run
 * that ends by a signal or an error may leave it behind, unlocked, and the
 * next run takes it over.
 */
#ifndef LNKIT_CHECKPOINT_H
#define LNKIT_CHECKPOINT_H

#include <stddef.h>
#include "lnkit/curvature.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a checkpoint belongs to: items (name, value), compared as text. */
typedef struct {
    int n, cap;
    char **name, **value;
    unsigned char *env;  /* per item: 1 for an item of the environment (see above) */
    int resume_anywhere; /* 1: env items may differ on resume (lnk_ckpt_moved) */
} lnk_ckpt_id;
/* Add an item of the run (value printf-style); LNK_ENOMEM on failure. */
int lnk_ckpt_id_add(lnk_ckpt_id *id, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add an item of the environment (what fixes the rounding). */
int lnk_ckpt_id_add_env(lnk_ckpt_id *id, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add the environment items that fix the rounding, so that a resume
 * elsewhere is refused (or recorded under resume_anywhere): the BLAS kernel
 * and library (their kernels differ in the order of their sums), the BLAS
 * thread count (threaded kernels split sums by it) and the lnkit build. */
int lnk_ckpt_id_add_build(lnk_ckpt_id *id);
/* Add the SHA-256 of a file's bytes as the value of name (LNK_EIO naming it). */
int lnk_ckpt_id_add_file(lnk_ckpt_id *id, const char *name, const char *path);
void lnk_ckpt_id_free(lnk_ckpt_id *id);

enum { LNK_CKPT_EIGS = 1, LNK_CKPT_TRACE = 2, LNK_CKPT_SLQ = 3 };

typedef struct lnk_ckpt lnk_ckpt;

/* The files a checkpoint at path writes or removes besides path, for callers
 * that check a run's paths before it starts: LNK_CKPT_ROWS the rows file of
 * rank (of ranks), LNK_CKPT_LOCK the lock file, LNK_CKPT_TEMPS a glob pattern
 * (glob(3), fnmatch(3): path's own *, ?, [ and \ escaped) of the temporary
 * files (of a save cut by a kill) that lnk_ckpt_open removes.  malloc'd; NULL if out of memory. */
enum { LNK_CKPT_ROWS = 1, LNK_CKPT_LOCK = 2, LNK_CKPT_TEMPS = 3 };
char *lnk_ckpt_file(const char *path, int which, int rank, int ranks);

/* The lock (see above).  lnk_ckpt_lock_take: collective under MPI (rank 0
 * locks; every rank gets a handle and the same status); LNK_EIO naming the
 * holder if another run holds it.  cmd names the command in messages.
 * lnk_ckpt_lock_release: rank 0 removes the lock file and unlocks; NULL is
 * fine. */
typedef struct lnk_ckpt_lock lnk_ckpt_lock;
int lnk_ckpt_lock_take(lnk_ckpt_lock **out, const char *path, const char *cmd);
void lnk_ckpt_lock_release(lnk_ckpt_lock *lk);
/* The checkpoint's path the lock was taken for. */
const char *lnk_ckpt_lock_path(const lnk_ckpt_lock *lk);

/* Open (or start) the checkpoint at path for a run of kind with identity
 * id.  lock: the caller's lock on path (lnk_ckpt_lock_take; held until after
 * lnk_ckpt_close), or NULL: lnk_ckpt_open takes it and lnk_ckpt_close
 * releases it.  row_len: doubles per row (this process's slice, n); max_rows: rows
 * the rows file may hold; mapped: 1 to map a rows file of max_rows rows for
 * a FULL Lanczos basis (then lnk_ckpt_basis), 0 for written rows.  cmd names
 * the command in messages.  Collective under MPI; the caller must make
 * every rank agree on the status (a rank's rows may be bad alone).  *out is
 * NULL on error. */
int lnk_ckpt_open(lnk_ckpt **out, lnk_ckpt_lock *lock, const char *path, const char *cmd,
                  const lnk_ckpt_id *id, int kind, size_t row_len, size_t max_rows, int mapped);
/* The mapped rows (max_rows x row_len doubles), or NULL. */
double *lnk_ckpt_basis(lnk_ckpt *ck);
/* 1 if a state was read (a resumed run), and its operator applications. */
int lnk_ckpt_resumed(const lnk_ckpt *ck);
long lnk_ckpt_products(const lnk_ckpt *ck);
/* What the environment items of a resumed run changed, "NAME: THERE -> HERE"
 * joined by "; " over this and earlier resumes ("" if nothing). */
const char *lnk_ckpt_moved(const lnk_ckpt *ck);
/* The state read back (NULL for a fresh run or another kind); valid until
 * lnk_ckpt_close. */
const lnk_eigs_state *lnk_ckpt_eigs_state(const lnk_ckpt *ck);
const lnk_trace_state *lnk_ckpt_trace_state(const lnk_ckpt *ck);
const lnk_slq_state *lnk_ckpt_slq_state(const lnk_ckpt *ck);
/* Save a state (collective under MPI).  products: operator applications of
 * the whole run so far (recorded; lnk_ckpt_products on resume). */
int lnk_ckpt_save_eigs(lnk_ckpt *ck, const lnk_eigs_state *st, long products);
int lnk_ckpt_save_trace(lnk_ckpt *ck, const lnk_trace_state *st, long products);
int lnk_ckpt_save_slq(lnk_ckpt *ck, const lnk_slq_state *st, long products);
/* The run is complete and its outputs written: remove the rows files, then
 * FILE (collective: every rank waits for rank 0 to come here). */
int lnk_ckpt_remove(lnk_ckpt *ck);
void lnk_ckpt_close(lnk_ckpt *ck);
/* Bytes the rows file of rank `rank` takes, for messages and plans. */
size_t lnk_ckpt_rows_bytes(size_t row_len, size_t max_rows);

#ifdef __cplusplus
}
#endif
#endif
