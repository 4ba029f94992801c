/* lnkit: provenance of a run: what every .meta.json sidecar records beside
 * its results so that they can be rerun and checked (docs/MODEL.md §9), and
 * what `lnkit --version` prints.
 *
 * The record is an object the program owns and passes to the sidecar writer
 * (lnk_meta_write, io.h); the library keeps none of it.  A program allocates
 * one (lnk_prov_alloc), records its command line once (lnk_prov_args), its
 * inputs as it reads them (lnk_prov_input_digest: the size and SHA-256 its
 * reader computed from the bytes it used, so that an input is read once --
 * a FIFO or /dev/fd/N included), its named seeds (lnk_prov_seed) and the
 * BLAS kernel choice of its start-up (lnk_prov_blas_note), and frees it at
 * the end.  lnk_meta_write adds to each sidecar:
 *   "command_line"  [argv[0], argv[1], ...], exactly as given
 *   "cwd"           the working directory the paths are relative to
 *   "inputs"        [{"path", "bytes", "sha256"}, ...] in the order recorded
 *   "named_seeds"   {"name": value, ...} (a study may add its own "seeds")
 *   "git_commit"    the commit the library was built from, with "-dirty" if
 *                   tracked files differed from it, "unknown" without git
 *   "versions"      {"lnkit", "compiler", "openblas", "openblas_core",
 *                    "lapack", "gsl", "glpk", "jansson"[, "mpi"]}
 *   "blas_kernel", "blas_kernel_choice"  the kernel OpenBLAS runs and the
 *                   note of the program's choice (lnk_blas_choose, blas.h)
 *   "threads"       BLAS threads, "ranks" MPI ranks (1 without MPI)
 * Paths and arguments are recorded in the form of docs/MODEL.md §9: as they
 * are when they are UTF-8, else with their exact bytes in hex beside them.
 *
 * Errors: LNK_ENOMEM (the message names the path or seed), LNK_EIO for an
 * input that cannot be read.  One object per thread. */
#ifndef LNKIT_PROVENANCE_H
#define LNKIT_PROVENANCE_H

#include <stdint.h>
#include "lnkit/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lnk_prov lnk_prov;

/* An empty record (NULL with lnk_error if out of memory); free with lnk_prov_free. */
lnk_prov *lnk_prov_alloc(void);
void lnk_prov_free(lnk_prov *p);

/* Record the command line (copied; replaces one recorded before). */
int lnk_prov_args(lnk_prov *p, int argc, char *const *argv);
/* Record an input the program read: d is what its reader computed from the
 * bytes it used (lnk_read_text_file, lnk_st_read, ...).  The same path with
 * the same digest is recorded once; with another digest (a file that changed
 * between two reads, a FIFO given twice) each is recorded. */
int lnk_prov_input_digest(lnk_prov *p, const char *path, const lnk_digest *d);
/* Record an input used only through its checksum (lnkit meta --input): it is
 * read here, once, to hash it.  LNK_EIO naming the file if it cannot be read. */
int lnk_prov_input(lnk_prov *p, const char *path);
/* The digest recorded last for path, or NULL. */
const lnk_digest *lnk_prov_input_find(const lnk_prov *p, const char *path);
/* Record a named seed ("init", "rng", ...); a name recorded again is updated
 * (the record holds the value the run used last). */
int lnk_prov_seed(lnk_prov *p, const char *name, uint64_t value);
/* The threads and ranks to record instead of this process's BLAS threads and
 * MPI ranks (0: this process's), for a sidecar written on behalf of another
 * program (lnkit meta). */
void lnk_prov_counts(lnk_prov *p, int threads, int ranks);
/* The note of the start-up's BLAS kernel choice (lnk_blas_choose; copied). */
int lnk_prov_blas_note(lnk_prov *p, const char *note);

/* The commit the library was built from ("<40 hex>[-dirty]" or "unknown"). */
const char *lnk_git_commit(void);
/* The compiler that built the library ("gcc 12.2.0", "clang ..."). */
const char *lnk_compiler(void);
/* Several lines: version, commit, compiler, BLAS library, its kernel (with
 * blas_note, the program's choice, or NULL) and threads, LAPACK, GSL, GLPK,
 * jansson (and MPI); malloc'd, caller frees. */
char *lnk_version_text(const char *blas_note);

#ifdef __cplusplus
}
#endif
#endif
