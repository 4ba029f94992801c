/* What a study's prose quotes, written by its summarising step beside its
 * tables (tools/quotes.py, tools/check_summaries.sh):
 *   values.csv  name,value              every number the READMEs quote, formatted
 *                                       exactly as quoted (<!--q:STUDY.NAME-->)
 *   claims.csv  claim,value,setting,file one row per headline claim: its value
 *                                       with spread, the setting, the source CSV
 *                                       (its name in the directory of claims.csv,
 *                                       so that the files do not depend on where
 *                                       the step ran)
 * and the summarising step's reading of its inputs: the sidecar of a raw CSV
 * (its configuration and settings) and, for every raw CSV read, its SHA-256 in
 * the summaries' own sidecars (study_input).  Deterministic: no times. */
#ifndef LNK_STUDY_QUOTED_H
#define LNK_STUDY_QUOTED_H

#include <jansson.h>
#include "kit.h"

typedef struct {
    lnk_afile va, ca;
    lnk_csv v, c;
} study_quoted;

/* Open DIR/values.csv and DIR/claims.csv (written at quoted_close). */
void quoted_open(study_quoted *q, const char *dir);
/* One value: NAME and its text from a printf format. */
void quoted_value(study_quoted *q, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* One claim row. */
void quoted_claim(study_quoted *q, const char *claim, const char *value, const char *setting,
                  const char *file);
void quoted_close(study_quoted *q);

/* The sidecar DIR/NAME.meta.json of DIR/NAME.csv (name without ".csv"), or
 * fail naming it.  json_decref when done. */
json_t *study_sidecar(const char *dir, const char *name);
/* Member KEY of object O (or of O's "config" object when cfg): an integer, a
 * number or a string, or fail naming the file (what) and the key. */
long sidecar_int(const json_t *o, const char *key, const char *what);
double sidecar_num(const json_t *o, const char *key, const char *what);
const char *sidecar_str(const json_t *o, const char *key, const char *what);
/* The own keys of a summary's sidecars: {"study": study, "summarises": dir's
 * raw CSVs, "input_parameters": the raw sidecar without its run's times,
 * versions, command line and threads (those of this run are the sidecar's
 * own)} plus the members of more (an object, may be NULL).  lnk_meta_free it. */
lnk_meta *summary_extra(const char *study, const json_t *raw, const json_t *more);

/* Cell (row, col) = lnk_fmt_pm(m, sd). */
void table_set_pm(lnk_table *t, int row, int col, double m, double sd);
/* DIR/BASE.md and DIR/BASE.tex (with the caption) of table t; and, when
 * summary is not NULL, the caption and the Markdown table appended to it. */
void study_write_table(const char *dir, const char *base, const lnk_table *t,
                       const char *caption, FILE *summary);

/* Median of x[0..n-1] (sorts x): the middle value, or the mean of the two
 * middle values for even n. */
double study_median(double *x, int n);

#endif
