/* lnkit: CSV (RFC 4180) and metadata sidecars, written through the
 * all-or-nothing output files of lnkit/sys.h (included here, with the
 * whole-file reads, the clock and the BLAS threads).
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
#include "lnkit/sys.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Write NAME.meta.json beside csv_path (atomically): config (may be NULL),
 * extra_json (NULL or a JSON object text whose keys are merged in), start time
 * string and wall seconds.  Nothing (LNK_OK) if csv_path is a device or FIFO. */
int lnk_meta_write(const char *csv_path, const lnk_config *cfg, const char *extra_json,
                   const char *start_iso, double wall_seconds);
/* The sidecar's name: NAME.csv -> NAME.meta.json, anything else + ".meta.json"
 * (malloc'd; NULL if out of memory). */
char *lnk_meta_path(const char *csv_path);

#ifdef __cplusplus
}
#endif
#endif
