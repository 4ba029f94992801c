/* lnkit: reading CSV tables (the reader beside lnk_csv, the writer of io.h).
 *
 * Accepts RFC 4180 text as lnk_csv writes it, and what spreadsheets and
 * hands write: fields separated by ',', quoted with '"' when they hold ',',
 * '"' ("" inside) or line ends; line ends "\n" or "\r\n" (a lone "\r" is
 * text, except at the very end); a UTF-8 byte-order mark at the start is
 * skipped; the final line end may be missing; blank lines at the end are
 * ignored (so a one-column table's empty last field must be quoted, "").
 * Fields are kept as written (unquoted; no blanks stripped).
 *
 * Refused with LNK_EFORMAT and one line "FILE:LINE: ..." naming the field,
 * value and what was expected: an empty file (nothing but a byte-order mark
 * and line ends), a NUL byte, a blank line inside (in a table of one column
 * it is a row with one empty field, as lnk_csv writes one), a row with more
 * or fewer fields than the first, an unterminated quote, text after a
 * closing quote, a header naming a column twice, fewer data rows than
 * asked for.
 *
 * Numbers (lnk_csv_table_num): strtod in the C locale's syntax, the whole
 * field, blanks (spaces, tabs) around it allowed; %.17g text reads back to
 * the same double.  Refused: an empty field, other text, a magnitude beyond
 * the largest double (1e400); with finite set also nan and inf text.
 * Accepted: a nonzero literal below the smallest double (1e-400 reads as 0,
 * 1e-320 as the subnormal), as strtod rounds it.
 *
 * Cost: one pass over the text, O(bytes); memory: the text once plus a
 * pointer a field and a line number a row.  Limits: the file's size
 * (max, else lnk_input_limit()), at most INT_MAX columns; no limit on
 * the length of a line or field.  A file is read once from its start (a
 * FIFO or pipe too): digest holds the size and SHA-256 of the bytes read,
 * for the provenance record (provenance.h).
 */
#ifndef LNKIT_CSV_TABLE_H
#define LNKIT_CSV_TABLE_H

#include <stddef.h>
#include "lnkit/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LNK_CSV_HEADER = 0,     /* the first row names the columns */
    LNK_CSV_NO_HEADER = 1,  /* every row is data */
    LNK_CSV_HEADER_AUTO = 2 /* the first row names the columns iff none of its fields is a number */
};

typedef struct {
    int header;       /* LNK_CSV_HEADER (default), LNK_CSV_NO_HEADER or LNK_CSV_HEADER_AUTO */
    size_t min_rows;  /* data rows required (default 0: a header alone is a table) */
    int finite;       /* 1: nan and inf text are not numbers (default 0) */
    size_t max;       /* largest file read, bytes (default 0: lnk_input_limit()) */
    const char *what; /* the kind of file in messages (default "CSV file") */
} lnk_csv_read_opts;

void lnk_csv_read_opts_default(lnk_csv_read_opts *o);

typedef struct {
    char *path;        /* the file's name in messages */
    int ncol;
    size_t nrow;       /* data rows */
    char **head;       /* [ncol] column names; NULL if the table has no header row */
    char **cell;       /* [nrow * ncol] fields, row by row */
    size_t *line;      /* [nrow] the line each data row starts on (from 1) */
    int finite;        /* from the options, for lnk_csv_table_num */
    lnk_digest digest; /* of the bytes read (lnk_csv_table_read) */
    char *text_;       /* storage */
    char **field_;
    size_t *line_;
} lnk_csv_table;

/* Read the file at path (o NULL: the defaults).  On failure t is empty. */
int lnk_csv_table_read(const char *path, const lnk_csv_read_opts *o, lnk_csv_table *t);
/* The same from len bytes of text (path: the name in messages). */
int lnk_csv_table_parse(const char *text, size_t len, const char *path,
                        const lnk_csv_read_opts *o, lnk_csv_table *t);
void lnk_csv_table_free(lnk_csv_table *t);

/* The column named name, or -1 (also without a header row). */
int lnk_csv_table_col(const lnk_csv_table *t, const char *name);
static inline const char *lnk_csv_table_str(const lnk_csv_table *t, size_t row, int col)
{
    return t->cell[row * (size_t)t->ncol + (size_t)col];
}
/* A field as a number (above); LNK_EINVAL for a row or column out of range. */
int lnk_csv_table_num(const lnk_csv_table *t, size_t row, int col, double *v);
/* Columns cols[0..n) (cols NULL: all, n = ncol) of every row as numbers,
 * row by row into x [nrow * n]; the first field that is not one fails. */
int lnk_csv_table_matrix(const lnk_csv_table *t, const int *cols, int n, double *x);

#ifdef __cplusplus
}
#endif
#endif
