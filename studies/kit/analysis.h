/* The study kit's analysis helpers (the studies and their tests use them): power-law
 * fits, mean and sd over seeds, Markdown / LaTeX tables, and a CSV reader for
 * the studies' own files (RFC 4180, as written by lnk_csv).
 */
#ifndef LNK_STUDY_ANALYSIS_H
#define LNK_STUDY_ANALYSIS_H

#include <stdio.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ power-law fit
 * y = A x^b fitted as ln y = ln A + b ln x by least squares (GSL).
 *  - se_y == NULL: ordinary least squares (gsl_fit_linear); the standard errors
 *    come from the residual scatter (needs n >= 3).
 *  - se_y given (standard errors of the y_i, e.g. sd/sqrt(seeds)): weighted
 *    least squares (gsl_fit_wlinear) with weights 1/var(ln y_i) = (y_i/se_i)^2
 *    (delta method); GSL's covariance trusts the weights, so when the fit is
 *    worse than they say (chisq/dof > 1) the standard errors are multiplied by
 *    sqrt(chisq/dof) (reported in scale) — never made smaller.
 * Every x_i, y_i must be > 0 and every se_i > 0 (errors name the index). */
typedef struct {
    size_t n;
    double slope, se_slope;          /* b and its standard error */
    double intercept, se_intercept;  /* ln A and its standard error */
    double cov;                      /* cov(ln A, b), scaled as the se's */
    double chisq;                    /* weighted (or plain) residual sum of squares */
    int dof;                         /* n - 2 */
    double scale;                    /* factor applied to the GSL standard errors */
} lnk_fit;

int lnk_fit_power(const double *x, const double *y, const double *se_y, size_t n, lnk_fit *f);
/* The goodness of a weighted fit: P(chi^2_dof >= chisq), the probability of a
 * fit at least this poor if the model and the standard errors were right
 * (gsl_cdf_chisq_Q); 1 when dof <= 0.  Below 0.01 the power law does not
 * describe the points within their errors: say so and show local slopes. */
double lnk_fit_pvalue(const lnk_fit *f);

/* The same over repeated observations (x_i, y_i), i < n (one per seed):
 * grouped by equal x, each group's mean fitted with se_y = sd / sqrt(k) (k
 * observations, sample sd) -- weighted least squares as above.  If any group
 * has one observation or sd 0 the fit is unweighted (needs 3 groups);
 * *weighted (may be NULL) says which.  x_min, x_max (may be NULL): the range
 * of x fitted.  f->n is the number of groups. */
int lnk_fit_power_seeds(const double *x, const double *y, size_t n, lnk_fit *f, int *weighted,
                        double *x_min, double *x_max);

/* Mean and sample standard deviation (n - 1 denominator; 0 when n == 1) of
 * x[0], x[stride], ... (n values, n >= 1), by gsl_stats. */
void lnk_mean_sd(const double *x, size_t stride, size_t n, double *mean, double *sd);

/* "mean ± sd" with the sd to 2 significant digits and the mean to the same
 * decimal place (e.g. 1.2346 ± 0.0123 -> "1.235 ± 0.012"); sd == 0 or not
 * finite prints the mean alone with 4 significant digits; magnitudes below 1e-3
 * or from 1e5 use %.3g ± %.2g. */
void lnk_fmt_pm(char *buf, size_t n, double mean, double sd);

/* ------------------------------------------------------------------ tables
 * A small in-memory table of text cells (UTF-8).  The writers escape what
 * their format needs: Markdown '|' -> "\|"; LaTeX the specials
 * \ & % $ # _ { } ~ ^ | and the sign "±" -> "$\pm$".  Alignment per column:
 * 'l' or 'r'. */
typedef struct {
    int ncol;
    int nrow, cap;
    char **head;     /* [ncol] */
    char *align;     /* [ncol] */
    char **cell;     /* [nrow * ncol]; NULL prints as empty */
} lnk_table;

int lnk_table_init(lnk_table *t, int ncol, const char *const *head, const char *align);
void lnk_table_free(lnk_table *t);
/* Append an empty row; returns its index, or -1 (out of memory, message set). */
int lnk_table_new_row(lnk_table *t);
/* Set cell (row, col) from a printf format. */
int lnk_table_set(lnk_table *t, int row, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* | a | b |\n|:--|--:|\n| x | 1 |\n ... */
int lnk_table_write_md(const lnk_table *t, FILE *f);
/* \begin{tabular}{lr} \toprule head \midrule rows \bottomrule \end{tabular};
 * with a caption (and label, may be NULL) inside a table float. */
int lnk_table_write_tex(const lnk_table *t, FILE *f, const char *caption, const char *label);

/* ------------------------------------------------------------ CSV reading
 * A whole CSV file in memory: header and rows of text fields.  Quoted fields
 * ("a,b", "say ""hi""", embedded newlines), \n or \r\n line ends; every row
 * must have as many fields as the header (errors name the file and line). */
typedef struct {
    char *what;      /* file name, for messages */
    int ncol;
    size_t nrow;
    char **head;     /* [ncol] */
    char **cell;     /* [nrow * ncol] */
} lnk_csvdata;

int lnk_csvdata_read(const char *path, lnk_csvdata *t);
/* The same from text (what = name used in messages). */
int lnk_csvdata_parse(const char *text, const char *what, lnk_csvdata *t);
void lnk_csvdata_free(lnk_csvdata *t);
/* Column index by name, or -1. */
int lnk_csvdata_col(const lnk_csvdata *t, const char *name);
static inline const char *lnk_csvdata_str(const lnk_csvdata *t, size_t row, int col)
{
    return t->cell[row * (size_t)t->ncol + (size_t)col];
}
/* Field as a double; LNK_EFORMAT naming row and column if it is not a number
 * (an empty field is not one). */
int lnk_csvdata_num(const lnk_csvdata *t, size_t row, int col, double *v);

#ifdef __cplusplus
}
#endif
#endif
