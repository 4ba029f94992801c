/* CSV (RFC 4180); the sidecars are in sidecar.c.  Atomic output files,
 * whole-file reads, the clock and BLAS threads are in src/core (sys.h).
 * See include/lnkit/io.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lnkit/config.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

/* ------------------------------------------------------------------------ CSV */

static const char *col_name(const lnk_csv *c, int j)
{
    return (c->names && j >= 0 && j < c->ncol && c->names[j]) ? c->names[j] : "?";
}

/* Separator before the next field; counts the field. */
static int csv_next(lnk_csv *c)
{
    if (c->col >= c->ncol)
        return lnk_error(LNK_EINVAL, "CSV: row has more than %d fields (header has %d columns)",
                         c->ncol, c->ncol);
    if (c->col > 0 && fputc(',', c->f) == EOF)
        return lnk_error(LNK_EIO, "%s: write failed: %s", lnk_output_name(c->f), strerror(errno));
    c->col++;
    return LNK_OK;
}

/* One field, quoted (RFC 4180) only when it holds ',', '"', CR or LF. */
static int csv_put(FILE *f, const char *s)
{
    if (!s)
        s = "";
    int r;
    if (strpbrk(s, ",\"\r\n")) {
        r = fputc('"', f);
        for (const char *p = s; *p && r != EOF; p++)
            r = (*p == '"') ? fputs("\"\"", f) : fputc(*p, f);
        if (r != EOF)
            r = fputc('"', f);
    } else {
        r = fputs(s, f);
    }
    if (r == EOF)
        return lnk_error(LNK_EIO, "%s: write failed: %s", lnk_output_name(f), strerror(errno));
    return LNK_OK;
}

int lnk_csv_begin(lnk_csv *c, FILE *f, const char *const *header, int ncol)
{
    memset(c, 0, sizeof *c);
    if (!f || !header || ncol < 1)
        return lnk_error(LNK_EINVAL, "CSV: need a file and at least one column, got %d", ncol);
    c->names = calloc((size_t)ncol, sizeof *c->names);
    if (!c->names)
        return lnk_error(LNK_ENOMEM, "CSV: out of memory");
    c->f = f;
    c->ncol = ncol;
    for (int j = 0; j < ncol; j++) {
        if (!header[j] || !header[j][0]) {
            lnk_csv_free(c);
            return lnk_error(LNK_EINVAL, "CSV: header column %d has no name", j);
        }
        c->names[j] = strdup(header[j]);
        if (!c->names[j]) {
            lnk_csv_free(c);
            return lnk_error(LNK_ENOMEM, "CSV: out of memory");
        }
    }
    int st = LNK_OK;
    for (int j = 0; j < ncol && st == LNK_OK; j++)
        st = lnk_csv_str(c, header[j]);
    if (st == LNK_OK)
        st = lnk_csv_end_row(c);
    if (st != LNK_OK)
        lnk_csv_free(c);
    return st;
}

int lnk_csv_str(lnk_csv *c, const char *s)
{
    int st = csv_next(c);
    return st ? st : csv_put(c->f, s);
}

int lnk_csv_int(lnk_csv *c, long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    return lnk_csv_str(c, buf);
}

int lnk_csv_double(lnk_csv *c, double v)
{
    if (!isfinite(v))
        return lnk_error(LNK_ENONFINITE, "CSV column '%s': value %g is not finite",
                         col_name(c, c->col), v);
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    /* '.' decimal point whatever LC_NUMERIC says (%g never groups digits). */
    for (char *p = buf; *p; p++)
        if (*p == ',')
            *p = '.';
    return lnk_csv_str(c, buf);
}

int lnk_csv_end_row(lnk_csv *c)
{
    if (c->col != c->ncol)
        return lnk_error(LNK_EINVAL, "CSV: row has %d fields, header has %d columns (next missing: '%s')",
                         c->col, c->ncol, col_name(c, c->col));
    if (fputc('\n', c->f) == EOF)
        return lnk_error(LNK_EIO, "%s: write failed: %s", lnk_output_name(c->f), strerror(errno));
    c->col = 0;
    return LNK_OK;
}

void lnk_csv_free(lnk_csv *c)
{
    if (c->names)
        for (int j = 0; j < c->ncol; j++)
            free(c->names[j]);
    free(c->names);
    c->names = NULL;
    c->ncol = c->col = 0;
    c->f = NULL;
}
