/* The study kit's CSV reader, for the studies' own files (RFC 4180, as written
 * by lnk_csv): a resumed sweep reads back the rows it wrote.  The summaries
 * read their CSVs in Python (studies/summary).  Kit-only: studies and their
 * tests link it, the library does not export it. */
#ifndef LNK_STUDY_CSVREAD_H
#define LNK_STUDY_CSVREAD_H

#include <stddef.h>

/* A whole CSV file in memory: header and rows of text fields.  Quoted fields
 * ("a,b", "say ""hi""", embedded newlines), \n or \r\n line ends; every row
 * must have as many fields as the header (errors name the file and line). */
typedef struct {
    char *what;      /* file name, for messages */
    int ncol;
    size_t nrow;
    char **head;     /* [ncol] */
    char **cell;     /* [nrow * ncol] */
} study_csvdata;

int study_csvdata_read(const char *path, study_csvdata *t);
/* The same from text (what = name used in messages). */
int study_csvdata_parse(const char *text, const char *what, study_csvdata *t);
void study_csvdata_free(study_csvdata *t);
/* Column index by name, or -1. */
int study_csvdata_col(const study_csvdata *t, const char *name);
static inline const char *study_csvdata_str(const study_csvdata *t, size_t row, int col)
{
    return t->cell[row * (size_t)t->ncol + (size_t)col];
}
/* Field as a double; LNK_EFORMAT naming row and column if it is not a number
 * (an empty field is not one). */
int study_csvdata_num(const study_csvdata *t, size_t row, int col, double *v);

#endif
