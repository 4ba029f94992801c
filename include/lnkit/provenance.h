/* lnkit: provenance of a run: what every .meta.json sidecar records beside
 * its results so that they can be rerun and checked (docs/MODEL.md §9), and
 * what `lnkit --version` prints.
 *
 * A program records its command line once (lnk_prov_args), and its input
 * files (lnk_prov_input: path, size, SHA-256 of the bytes, when it reads
 * them) and named seeds (lnk_prov_seed) as it goes.  lnk_meta_write (io.h),
 * the one writer of sidecars for the commands and the studies, adds to each:
 *   "command_line"  [argv[0], argv[1], ...], exactly as given
 *   "cwd"           the working directory the paths are relative to
 *   "inputs"        [{"path", "bytes", "sha256"}, ...] in the order recorded
 *   "named_seeds"   {"name": value, ...} (a study may add its own "seeds")
 *   "git_commit"    the commit the library was built from, with "-dirty" if
 *                   tracked files differed from it, "unknown" without git
 *   "versions"      {"lnkit", "compiler", "openblas", "openblas_core",
 *                    "lapack", "gsl", "glpk", "jansson"[, "mpi"]}
 *   "threads"       BLAS threads, "ranks" MPI ranks (1 without MPI)
 * The record is one per process (a program is one run) and is not
 * thread-safe: fill it from the main thread.
 */
#ifndef LNKIT_PROVENANCE_H
#define LNKIT_PROVENANCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Record the command line (copied). */
void lnk_prov_args(int argc, char *const *argv);
/* Record an input file: its size and SHA-256 now (a path recorded before is
 * not read again).  LNK_EIO naming the file if it cannot be read. */
int lnk_prov_input(const char *path);
/* Record a named seed ("init", "rng", ...); a name recorded again is updated. */
void lnk_prov_seed(const char *name, uint64_t value);
/* The threads and ranks to record instead of this process's BLAS threads and
 * MPI ranks (0: this process's), for a sidecar written on behalf of another
 * program (lnkit meta). */
void lnk_prov_counts(int threads, int ranks);
/* Forget everything recorded. */
void lnk_prov_clear(void);

/* The commit the library was built from ("<40 hex>[-dirty]" or "unknown"). */
const char *lnk_git_commit(void);
/* The compiler that built the library ("gcc 12.2.0", "clang ..."). */
const char *lnk_compiler(void);
/* Several lines: version, commit, compiler, BLAS library, its kernel and
 * threads, LAPACK, GSL, GLPK, jansson (and MPI); malloc'd, caller frees. */
char *lnk_version_text(void);

#ifdef __cplusplus
}
#endif
#endif
