/* A minimal RFC 4180 CSV reader for the studies' own files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "csvread.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

typedef struct {
    char **v;
    size_t n, cap;
} strvec;

static int push(strvec *s, char *x)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        char **v = realloc(s->v, sizeof(char *) * nc);
        if (!v)
            return LNK_ENOMEM;
        s->v = v;
        s->cap = nc;
    }
    s->v[s->n++] = x;
    return LNK_OK;
}

/* Parse one field starting at *p; advance past it (not past its delimiter).
 * Returns the malloc'd text or NULL (out of memory / unterminated quote in *bad). */
static char *field(const char **pp, int *bad)
{
    const char *p = *pp;
    size_t cap = 32, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    int quoted = *p == '"';
    if (quoted)
        p++;
    for (;;) {
        char c = *p;
        if (quoted) {
            if (c == '\0') {
                *bad = 1;
                break;
            }
            if (c == '"') {
                if (p[1] == '"')
                    p++; /* "" -> " */
                else {
                    p++;
                    break;
                }
            }
        } else if (c == ',' || c == '\n' || c == '\0' || (c == '\r' && p[1] == '\n'))
            break;
        if (len + 2 > cap) {
            char *o = realloc(out, cap *= 2);
            if (!o) {
                free(out);
                return NULL;
            }
            out = o;
        }
        out[len++] = *p++;
    }
    out[len] = '\0';
    *pp = p;
    return out;
}

int study_csvdata_parse(const char *text, const char *what, study_csvdata *t)
{
    memset(t, 0, sizeof *t);
    t->what = strdup(what ? what : "CSV");
    if (!t->what)
        return lnk_error(LNK_ENOMEM, "out of memory");
    strvec all = {0};
    const char *p = text;
    size_t line = 1, row = 0, nf = 0;
    int st = LNK_OK;
    if (*p == '\0')
        st = lnk_error(LNK_EFORMAT, "%s: empty file, expected a header row", t->what);
    while (!st && *p) {
        int bad = 0;
        const char *start = p;
        char *f = field(&p, &bad);
        if (!f) {
            st = lnk_error(LNK_ENOMEM, "%s: out of memory", t->what);
            break;
        }
        if (bad) {
            free(f);
            st = lnk_error(LNK_EFORMAT, "%s: line %zu: unterminated quoted field", t->what, line);
            break;
        }
        for (const char *q = start; q < p; q++)
            line += *q == '\n';
        if (push(&all, f)) {
            free(f);
            st = lnk_error(LNK_ENOMEM, "%s: out of memory", t->what);
            break;
        }
        nf++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p && *p != '\n' && *p != '\r') {
            st = lnk_error(LNK_EFORMAT, "%s: line %zu: unexpected character '%c' after a quoted "
                           "field", t->what, line, *p);
            break;
        }
        /* end of a record */
        if (row == 0)
            t->ncol = (int)nf;
        else if ((int)nf != t->ncol) {
            st = lnk_error(LNK_EFORMAT, "%s: line %zu: %zu fields, the header has %d", t->what,
                           line, nf, t->ncol);
            break;
        }
        row++;
        nf = 0;
        if (*p == '\r')
            p++;
        if (*p == '\n') {
            p++;
            line++;
        }
    }
    if (!st && nf > 0) {
        /* the text ends just after a ',': the record's last field is empty */
        char *f = strdup("");
        if (!f || push(&all, f)) {
            free(f);
            st = lnk_error(LNK_ENOMEM, "%s: out of memory", t->what);
        } else {
            nf++;
            if (row == 0)
                t->ncol = (int)nf;
            if ((int)nf != t->ncol)
                st = lnk_error(LNK_EFORMAT, "%s: line %zu: %zu fields, the header has %d",
                               t->what, line, nf, t->ncol);
            else
                row++;
        }
    }
    if (st) {
        for (size_t i = 0; i < all.n; i++)
            free(all.v[i]);
        free(all.v);
        free(t->what);
        memset(t, 0, sizeof *t);
        return st;
    }
    t->nrow = row - 1;
    t->head = all.v;
    t->cell = all.v + t->ncol;
    return LNK_OK;
}

int study_csvdata_read(const char *path, study_csvdata *t)
{
    char *buf;
    memset(t, 0, sizeof *t);
    int st = lnk_read_file(path, &buf, NULL);
    if (st)
        return st;
    st = study_csvdata_parse(buf, path, t);
    free(buf);
    return st;
}

void study_csvdata_free(study_csvdata *t)
{
    if (t->head) {
        size_t n = (size_t)t->ncol * (t->nrow + 1);
        for (size_t i = 0; i < n; i++)
            free(t->head[i]);
        free(t->head);
    }
    free(t->what);
    memset(t, 0, sizeof *t);
}

int study_csvdata_col(const study_csvdata *t, const char *name)
{
    for (int j = 0; j < t->ncol; j++)
        if (strcmp(t->head[j], name) == 0)
            return j;
    return -1;
}

int study_csvdata_num(const study_csvdata *t, size_t row, int col, double *v)
{
    if (row >= t->nrow || col < 0 || col >= t->ncol)
        return lnk_error(LNK_EINVAL, "%s: no field (row %zu, column %d) in %zu x %d", t->what, row,
                         col, t->nrow, t->ncol);
    const char *s = study_csvdata_str(t, row, col);
    char *e;
    errno = 0;
    double x = strtod(s, &e);
    if (*s == '\0' || *e != '\0' || (errno == ERANGE && fabs(x) == HUGE_VAL))
        return lnk_error(LNK_EFORMAT, "%s: data row %zu, column '%s': expected a number, got "
                         "\"%s\"", t->what, row + 1, t->head[col], s);
    *v = x;
    return LNK_OK;
}
