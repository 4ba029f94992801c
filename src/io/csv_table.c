/* Reading CSV tables (lnkit/csv_table.h): one pass over a private copy of
 * the text, each field unquoted in place (it only shrinks), so a table is
 * one block of text and two arrays. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/csv_table.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

#define DBL_TEXT "a double: at most 1.7976931348623157e308 in size"

void lnk_csv_read_opts_default(lnk_csv_read_opts *o)
{
    memset(o, 0, sizeof *o);
    o->header = LNK_CSV_HEADER;
    o->what = "CSV file";
}

typedef struct {
    const char *path;
    char *p, *w, *end, *tail; /* read, write, end of text, start of its trailing line ends */
    size_t line;
    char **f;                 /* fields */
    size_t nf, capf;
    size_t *ln;               /* the line of each row */
    size_t nr, capr;
    size_t ncol;              /* 0 until the first row ends */
} parser;

static int grow(void *v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return LNK_OK;
    size_t nc = *cap ? 2 * *cap : 256;
    void *nv = realloc(*(void **)v, nc * size);
    if (!nv)
        return LNK_ENOMEM;
    *(void **)v = nv;
    *cap = nc;
    return LNK_OK;
}

static int eol(const parser *ps, const char *p)
{
    return *p == '\n' || (*p == '\r' && (p + 1 == ps->end || p[1] == '\n'));
}

/* The field at ps->p, unquoted to ps->w; *delim gets ',' or '\n' (a line
 * end or the end of the text). */
static int field(parser *ps, size_t col, int *delim)
{
    char *p = ps->p, *w = ps->w;
    size_t line0 = ps->line;
    if (p < ps->end && *p == '"') {
        for (p++;; *w++ = *p++) {
            if (p == ps->end)
                return lnk_error(LNK_EFORMAT, "%s:%zu: column %zu: unterminated quoted field",
                                 ps->path, line0, col + 1);
            if (*p == '"' && (p + 1 == ps->end || p[1] != '"')) {
                p++;
                break;
            }
            p += *p == '"'; /* "" is one " */
            ps->line += *p == '\n';
        }
        if (p < ps->tail && *p != ',' && !eol(ps, p))
            return lnk_error(LNK_EFORMAT, "%s:%zu: column %zu: '%c' after the closing quote, "
                             "expected ',' or a line end", ps->path, ps->line, col + 1, *p);
    } else {
        while (p < ps->tail && *p != ',' && !eol(ps, p))
            *w++ = *p++;
    }
    if (p >= ps->tail) { /* the last field: the line ends after it are no rows */
        *delim = '\n';
        p = ps->end;
    } else {
        *delim = *p == ',' ? ',' : '\n';
        ps->line += *delim == '\n';
        p += *p == '\r' ? 2 : 1; /* before tail, a line end is "\n" or "\r\n" */
    }
    *w++ = '\0'; /* w <= the delimiter just passed */
    ps->p = p;
    ps->w = w;
    return LNK_OK;
}

/* One row: its fields, their count checked against the first row's. */
static int row(parser *ps)
{
    size_t line = ps->line, n = 0;
    if (eol(ps, ps->p) && ps->ncol != 1)
        return lnk_error(LNK_EFORMAT, "%s:%zu: empty line, expected %s", ps->path, line,
                         ps->ncol ? "a row of fields" : "the first row");
    if (grow(&ps->ln, &ps->capr, ps->nr, sizeof *ps->ln))
        return lnk_error(LNK_ENOMEM, "%s: out of memory", ps->path);
    ps->ln[ps->nr++] = line;
    for (int d = ','; d == ',';) {
        if (grow(&ps->f, &ps->capf, ps->nf, sizeof *ps->f))
            return lnk_error(LNK_ENOMEM, "%s: out of memory", ps->path);
        ps->f[ps->nf++] = ps->w;
        int st = field(ps, n++, &d);
        if (st)
            return st;
        if (ps->ncol && n > ps->ncol)
            break;
    }
    if (!ps->ncol && n > INT_MAX)
        return lnk_error(LNK_EFORMAT, "%s:%zu: more than %d fields", ps->path, line, INT_MAX);
    if (ps->ncol && n != ps->ncol) { /* counted up to one too many */
        int more = n > ps->ncol;
        return lnk_error(LNK_EFORMAT, "%s:%zu: %s%zu field%s, expected %zu as in line %zu",
                         ps->path, line, more ? "more than " : "", more ? ps->ncol : n,
                         n == 1 ? "" : "s", ps->ncol, ps->ln[0]);
    }
    ps->ncol = n;
    return LNK_OK;
}

/* 0: a number; 1: not one; 2: beyond the doubles; 3: nan or inf where refused. */
static int number(const char *s, int finite, double *v)
{
    char *e;
    errno = 0;
    *v = strtod(s, &e);
    while (*e == ' ' || *e == '\t')
        e++;
    if (e == s || *e)
        return 1;
    if (errno == ERANGE && fabs(*v) == HUGE_VAL)
        return 2;
    return finite && !isfinite(*v) ? 3 : 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Header names, each once (sorted pointers to them: O(ncol log ncol)). */
static int unique_names(const lnk_csv_table *t)
{
    char ***v = malloc(sizeof *v * (size_t)t->ncol); /* a column's index is v[i] - head */
    if (!v)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", t->path);
    for (int j = 0; j < t->ncol; j++)
        v[j] = &t->head[j];
    qsort(v, (size_t)t->ncol, sizeof *v, by_name);
    int st = LNK_OK;
    for (int j = 1; j < t->ncol && !st; j++)
        if (!strcmp(*v[j - 1], *v[j])) {
            long a = v[j - 1] - t->head, b = v[j] - t->head; /* qsort may swap them */
            st = lnk_error(LNK_EFORMAT, "%s:%zu: field '%s' (columns %ld and %ld): expected "
                           "each column name once", t->path, t->line_[0], *v[j],
                           1 + (a < b ? a : b), 1 + (a < b ? b : a));
        }
    free(v);
    return st;
}

/* The rows found: header and data as asked. */
static int finish(lnk_csv_table *t, const lnk_csv_read_opts *o, size_t nrec)
{
    int hdr = o->header == LNK_CSV_HEADER;
    if (o->header == LNK_CSV_HEADER_AUTO) {
        double v;
        hdr = 1;
        for (int j = 0; j < t->ncol && hdr; j++)
            hdr = number(t->field_[j], o->finite, &v) != 0;
    }
    t->head = hdr ? t->field_ : NULL;
    t->cell = t->field_ + (hdr ? t->ncol : 0);
    t->line = t->line_ + hdr;
    t->nrow = nrec - (size_t)hdr;
    if (hdr && unique_names(t))
        return LNK_EFORMAT;
    if (t->nrow < o->min_rows)
        return lnk_error(LNK_EFORMAT, "%s: %zu data rows%s, expected at least %zu", t->path,
                         t->nrow, hdr ? " (only a header row)" : "", o->min_rows);
    return LNK_OK;
}

/* Parse text[0..len) (text[len] is writable), which t takes over. */
static int parse_owned(char *text, size_t len, const lnk_csv_read_opts *o, lnk_csv_table *t)
{
    parser ps = {.path = t->path, .p = text, .w = text, .end = text + len, .line = 1};
    t->text_ = text;
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return lnk_error(LNK_EFORMAT, "%s: NUL byte at byte offset %zu, expected text",
                         t->path, (size_t)(nul - text));
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) /* a byte-order mark, as spreadsheets write */
        ps.p = ps.w = text + 3;
    for (ps.tail = ps.end; ps.tail > ps.p && (ps.tail[-1] == '\n' || ps.tail[-1] == '\r');)
        ps.tail--;
    if (ps.tail == ps.p)
        return lnk_error(LNK_EFORMAT, "%s: empty file, expected %s", t->path,
                         o->header == LNK_CSV_HEADER ? "a header row" : "rows");
    int st = LNK_OK;
    while (!st && ps.p < ps.tail)
        st = row(&ps);
    t->field_ = ps.f;
    t->line_ = ps.ln;
    t->ncol = (int)ps.ncol;
    return st ? st : finish(t, o, ps.nr);
}

static int start(const char *path, const lnk_csv_read_opts **o, lnk_csv_read_opts *def,
                 lnk_csv_table *t)
{
    memset(t, 0, sizeof *t);
    if (!*o) {
        lnk_csv_read_opts_default(def);
        *o = def;
    }
    t->finite = (*o)->finite;
    t->path = strdup(path ? path : "CSV");
    return t->path ? LNK_OK : lnk_error(LNK_ENOMEM, "CSV: out of memory");
}

int lnk_csv_table_parse(const char *text, size_t len, const char *path,
                        const lnk_csv_read_opts *o, lnk_csv_table *t)
{
    lnk_csv_read_opts def;
    int st = start(path, &o, &def, t);
    char *copy = st ? NULL : malloc(len + 1);
    if (!st && !copy)
        st = lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", t->path, len + 1);
    if (!st) {
        memcpy(copy, text, len);
        copy[len] = '\0';
        st = parse_owned(copy, len, o, t);
    }
    if (st)
        lnk_csv_table_free(t);
    return st;
}

int lnk_csv_table_read(const char *path, const lnk_csv_read_opts *o, lnk_csv_table *t)
{
    lnk_csv_read_opts def;
    if (!path) {
        memset(t, 0, sizeof *t);
        return lnk_error(LNK_EINVAL, "CSV: no file name");
    }
    int st = start(path, &o, &def, t);
    char *text = NULL;
    size_t len = 0;
    if (!st)
        st = lnk_read_input(path, o->max ? o->max : lnk_input_limit(),
                            o->what ? o->what : "CSV file", &text, &len, &t->digest);
    if (!st)
        st = parse_owned(text, len, o, t);
    if (st)
        lnk_csv_table_free(t);
    return st;
}

void lnk_csv_table_free(lnk_csv_table *t)
{
    free(t->text_);
    free(t->field_);
    free(t->line_);
    free(t->path);
    memset(t, 0, sizeof *t);
}

int lnk_csv_table_col(const lnk_csv_table *t, const char *name)
{
    for (int j = 0; t->head && j < t->ncol; j++)
        if (!strcmp(t->head[j], name))
            return j;
    return -1;
}

int lnk_csv_table_num(const lnk_csv_table *t, size_t row, int col, double *v)
{
    if (row >= t->nrow || col < 0 || col >= t->ncol)
        return lnk_error(LNK_EINVAL, "%s: no field (row %zu, column %d) in %zu x %d", t->path,
                         row, col, t->nrow, t->ncol);
    const char *s = lnk_csv_table_str(t, row, col);
    if (!number(s, t->finite, v))
        return LNK_OK;
    const char *want = t->finite ? "a finite number (" DBL_TEXT ")"
                                 : "a number (" DBL_TEXT ", or nan or inf)";
    if (t->head)
        return lnk_error(LNK_EFORMAT, "%s:%zu: field '%s' (column %d): value '%s': expected %s",
                         t->path, t->line[row], t->head[col], col + 1, s, want);
    return lnk_error(LNK_EFORMAT, "%s:%zu: column %d: value '%s': expected %s", t->path,
                     t->line[row], col + 1, s, want);
}

int lnk_csv_table_matrix(const lnk_csv_table *t, const int *cols, int n, double *x)
{
    if (!cols)
        n = t->ncol;
    for (size_t r = 0; r < t->nrow; r++)
        for (int j = 0; j < n; j++) {
            int st = lnk_csv_table_num(t, r, cols ? cols[j] : j, &x[r * (size_t)n + j]);
            if (st)
                return st;
        }
    return LNK_OK;
}
