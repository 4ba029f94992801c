/* lnkit: output files: atomic writes, CSV (RFC 4180) and metadata sidecars.
 *
 * Every file the toolkit writes goes through lnk_afile: it is written to a
 * temporary file beside the target and renamed over it only when complete, so
 * a failure never leaves a partly written file under the final name.
 *
 * CSV (MODEL.md §9): header row, one observation a row, '.' decimal point, doubles
 * as %.17g, fields quoted only when they contain ',', '"' or a newline.
 * A non-finite double is refused (LNK_ENONFINITE naming the column).
 *
 * Metadata sidecar NAME.meta.json: full configuration, seed, library versions
 * (lnkit, OpenBLAS, GSL, jansson), thread count, start time (ISO 8601 UTC) and
 * wall time in seconds, plus caller-given extras.
 */
#ifndef LNKIT_IO_H
#define LNKIT_IO_H

#include <stdio.h>
#include <stddef.h>
#include "lnkit/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LNK_VERSION "0.1.0"

typedef struct {
    FILE *f;
    char *path;   /* final name */
    char *tmp;    /* temporary name */
} lnk_afile;

/* Open a temporary file beside path for writing. */
int lnk_afile_open(lnk_afile *a, const char *path);
/* Flush, close and rename over path; on any error remove the temporary file. */
int lnk_afile_commit(lnk_afile *a);
/* Close and remove the temporary file (safe to call twice or after commit). */
void lnk_afile_abort(lnk_afile *a);

/* CSV writer on top of lnk_afile (or any FILE*, e.g. stdout). */
typedef struct {
    FILE *f;
    int ncol;
    int col;          /* next column of the current row */
    char **names;     /* column names, for error messages */
} lnk_csv;

int lnk_csv_begin(lnk_csv *c, FILE *f, const char *const *header, int ncol);
int lnk_csv_str(lnk_csv *c, const char *s);
int lnk_csv_int(lnk_csv *c, long long v);
int lnk_csv_double(lnk_csv *c, double v);   /* %.17g; refuses NaN/inf */
int lnk_csv_end_row(lnk_csv *c);            /* checks the row has ncol fields */
void lnk_csv_free(lnk_csv *c);

/* Read a whole file into a malloc'd buffer (caller frees), NUL-terminated;
 * *len (may be NULL) gets its length without the NUL.  Errors name the file. */
int lnk_read_file(const char *path, char **buf, size_t *len);

/* Wall-clock seconds since an arbitrary origin (monotonic). */
double lnk_now(void);

/* Current UTC time as ISO 8601 in buf (at least 32 bytes). */
void lnk_iso_time(char *buf, size_t n);

/* Number of BLAS threads in use. */
int lnk_blas_threads(void);
/* Set the number of BLAS threads (n >= 1). */
void lnk_set_blas_threads(int n);

/* Write NAME.meta.json beside csv_path (atomically): config (may be NULL),
 * extra_json (NULL or a JSON object text whose keys are merged in), start time
 * string and wall seconds. */
int lnk_meta_write(const char *csv_path, const lnk_config *cfg, const char *extra_json,
                   const char *start_iso, double wall_seconds);

#ifdef __cplusplus
}
#endif
#endif
