/* lnkit: CSV (RFC 4180) and metadata sidecars, written through the
 * all-or-nothing output files of lnkit/sys.h (included here, with the
 * whole-file reads, the clock and the BLAS threads).
 *
 * CSV (MODEL.md §9): header row, one observation a row, '.' decimal point, doubles
 * as %.17g, fields quoted only when they contain ',', '"' or a newline.
 * A non-finite double is refused (LNK_ENONFINITE naming the column).
 *
 * Metadata sidecar NAME.meta.json (docs/MODEL.md §9): full configuration,
 * seed, the provenance record (lnkit/provenance.h: command line, inputs with
 * their checksums, seeds, commit, library versions, BLAS kernel, threads,
 * ranks), start time (ISO 8601 UTC) and wall time in seconds, then the
 * program's own keys (lnk_meta below).
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

/* ------------------------------------------------------------ sidecars
 * A sidecar's own keys: what the program adds to the standard record (its
 * options, counts of its work), built through these calls -- never as JSON
 * text -- in the order they are set, and written after the standard keys.
 * A string is recorded in the form of docs/MODEL.md §9 (as it is when it is
 * UTF-8, else with its exact bytes in KEY_bytes_hex beside it), so no path
 * or argument can make a sidecar fail.  Every call returns a status; the
 * first failure also stays in m (lnk_meta_status) and lnk_meta_write
 * returns it, so a program may check once.  Failures: LNK_ENOMEM; LNK_EINVAL
 * for a key set twice, a standard key (config, seed, command_line, cwd,
 * inputs, named_seeds, git_commit, versions, blas_kernel, blas_kernel_choice,
 * threads, ranks, start_time, wall_seconds), a key ending in "_bytes_hex" or
 * a key that is not UTF-8; LNK_ENONFINITE for a NaN or infinite number. */
typedef struct lnk_meta lnk_meta;
struct json_t; /* jansson's */

lnk_meta *lnk_meta_alloc(void);
void lnk_meta_free(lnk_meta *m);
int lnk_meta_str(lnk_meta *m, const char *key, const char *s);
int lnk_meta_int(lnk_meta *m, const char *key, long long v);
int lnk_meta_real(lnk_meta *m, const char *key, double v);
int lnk_meta_bool(lnk_meta *m, const char *key, int v);
int lnk_meta_null(lnk_meta *m, const char *key);
int lnk_meta_ints(lnk_meta *m, const char *key, const int *v, size_t n);
int lnk_meta_reals(lnk_meta *m, const char *key, const double *v, size_t n);
int lnk_meta_strs(lnk_meta *m, const char *key, const char *const *s, size_t n);
/* Any JSON value (jansson), e.g. one built from an option table; v is
 * taken over (decref'd on failure too). */
int lnk_meta_json(lnk_meta *m, const char *key, struct json_t *v);
/* Every key of from (with its exact-bytes siblings), in its order. */
int lnk_meta_add(lnk_meta *m, const lnk_meta *from);
/* Every member of the JSON object obj, in its order (obj is not taken over);
 * a member KEY_bytes_hex after KEY is taken as KEY's exact bytes when it
 * has their form (hex; for an array, an array of hex or null). */
int lnk_meta_add_object(lnk_meta *m, const struct json_t *obj);
/* Every member of a JSON object given as text (lnkit meta --extra: text a
 * user wrote); what names it in messages.  LNK_EINVAL if it does not parse
 * or is not an object. */
int lnk_meta_parse(lnk_meta *m, const char *text, const char *what);
/* LNK_OK, or the first failure of the calls above. */
int lnk_meta_status(const lnk_meta *m);
/* The keys as a JSON object (jansson; owned by m, valid until its next call). */
const struct json_t *lnk_meta_object(const lnk_meta *m);

/* Write NAME.meta.json beside csv_path (atomically): the configuration cfg
 * (may be NULL: "config" and "seed" null), the provenance record p (required,
 * provenance.h), the start time (NULL, or an ISO 8601 time that
 * lnk_iso_time_valid accepts; LNK_EINVAL otherwise) and wall seconds, then
 * extra's keys (may be NULL).  Nothing (LNK_OK) if csv_path is a device or
 * FIFO. */
struct lnk_prov;
int lnk_meta_write(const char *csv_path, const struct lnk_prov *p, const lnk_config *cfg,
                   const lnk_meta *extra, const char *start_iso, double wall_seconds);
/* The text lnk_meta_write writes (malloc'd into *text), without writing it:
 * a program can build its sidecar before its work to see that it can. */
int lnk_meta_text(const struct lnk_prov *p, const lnk_config *cfg, const lnk_meta *extra,
                  const char *start_iso, double wall_seconds, char **text);
/* The sidecar's name: NAME.csv -> NAME.meta.json, anything else + ".meta.json"
 * (malloc'd; NULL if out of memory). */
char *lnk_meta_path(const char *csv_path);

#ifdef __cplusplus
}
#endif
#endif
