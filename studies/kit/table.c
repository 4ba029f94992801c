/* In-memory text tables and their Markdown and LaTeX (booktabs) writers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis.h"
#include "lnkit/error.h"

int lnk_table_init(lnk_table *t, int ncol, const char *const *head, const char *align)
{
    memset(t, 0, sizeof *t);
    if (ncol < 1)
        return lnk_error(LNK_EINVAL, "table: %d columns, expected >= 1", ncol);
    t->ncol = ncol;
    t->head = calloc((size_t)ncol, sizeof(char *));
    t->align = calloc((size_t)ncol, 1);
    if (!t->head || !t->align) {
        lnk_table_free(t);
        return lnk_error(LNK_ENOMEM, "table: out of memory");
    }
    for (int j = 0; j < ncol; j++) {
        char a = align ? align[j] : 'l';
        if (a != 'l' && a != 'r') {
            lnk_table_free(t);
            return lnk_error(LNK_EINVAL, "table: column %d alignment '%c', expected 'l' or 'r'",
                             j, a);
        }
        t->align[j] = a;
        t->head[j] = strdup(head[j] ? head[j] : "");
        if (!t->head[j]) {
            lnk_table_free(t);
            return lnk_error(LNK_ENOMEM, "table: out of memory");
        }
    }
    return LNK_OK;
}

void lnk_table_free(lnk_table *t)
{
    if (t->head)
        for (int j = 0; j < t->ncol; j++)
            free(t->head[j]);
    if (t->cell)
        for (size_t i = 0; i < (size_t)t->nrow * t->ncol; i++)
            free(t->cell[i]);
    free(t->head);
    free(t->align);
    free(t->cell);
    memset(t, 0, sizeof *t);
}

int lnk_table_new_row(lnk_table *t)
{
    if (t->nrow == t->cap) {
        int nc = t->cap ? 2 * t->cap : 16;
        char **c = realloc(t->cell, sizeof(char *) * (size_t)nc * t->ncol);
        if (!c) {
            lnk_error(LNK_ENOMEM, "table: out of memory for %d rows", nc);
            return -1;
        }
        t->cell = c;
        t->cap = nc;
    }
    memset(t->cell + (size_t)t->nrow * t->ncol, 0, sizeof(char *) * t->ncol);
    return t->nrow++;
}

int lnk_table_set(lnk_table *t, int row, int col, const char *fmt, ...)
{
    if (row < 0 || row >= t->nrow || col < 0 || col >= t->ncol)
        return lnk_error(LNK_EINVAL, "table: cell (%d, %d) outside %d x %d", row, col, t->nrow,
                         t->ncol);
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (k < 0)
        return lnk_error(LNK_ENOMEM, "table: out of memory");
    char **c = &t->cell[(size_t)row * t->ncol + col];
    free(*c);
    *c = s;
    return LNK_OK;
}

static const char *cell(const lnk_table *t, int i, int j)
{
    const char *s = t->cell[(size_t)i * t->ncol + j];
    return s ? s : "";
}

static int put_md(FILE *f, const char *s)
{
    for (; *s; s++)
        if ((*s == '|' ? fputs("\\|", f) : fputc(*s, f)) == EOF)
            return EOF;
    return 0;
}

static int md_row(FILE *f, const lnk_table *t, int i)
{
    int r = 0;
    for (int j = 0; j < t->ncol && r != EOF; j++) {
        r = fputs(j ? " | " : "| ", f);
        if (r != EOF)
            r = put_md(f, i < 0 ? t->head[j] : cell(t, i, j));
    }
    return r == EOF ? EOF : fputs(" |\n", f);
}

int lnk_table_write_md(const lnk_table *t, FILE *f)
{
    int r = md_row(f, t, -1);
    for (int j = 0; j < t->ncol && r != EOF; j++)
        r = fputs(t->align[j] == 'r' ? "|--:" : "|:--", f);
    if (r != EOF)
        r = fputs("|\n", f);
    for (int i = 0; i < t->nrow && r != EOF; i++)
        r = md_row(f, t, i);
    if (r == EOF)
        return lnk_error(LNK_EIO, "table: Markdown write failed: %s", strerror(errno));
    return LNK_OK;
}

static int put_tex(FILE *f, const char *s)
{
    for (; *s; s++) {
        const char *e = NULL;
        switch (*s) {
        case '\\': e = "\\textbackslash{}"; break;
        case '&': e = "\\&"; break;
        case '%': e = "\\%"; break;
        case '$': e = "\\$"; break;
        case '#': e = "\\#"; break;
        case '_': e = "\\_"; break;
        case '{': e = "\\{"; break;
        case '}': e = "\\}"; break;
        case '~': e = "\\textasciitilde{}"; break;
        case '^': e = "\\textasciicircum{}"; break;
        case '|': e = "\\textbar{}"; break;
        default: break;
        }
        if (!e && (unsigned char)s[0] == 0xC2 && (unsigned char)s[1] == 0xB1) { /* U+00B1 ± */
            e = "$\\pm$";
            s++;
        }
        if ((e ? fputs(e, f) : fputc(*s, f)) == EOF)
            return EOF;
    }
    return 0;
}

static int tex_row(FILE *f, const lnk_table *t, int i)
{
    int r = 0;
    for (int j = 0; j < t->ncol && r != EOF; j++) {
        if (j)
            r = fputs(" & ", f);
        if (r != EOF)
            r = put_tex(f, i < 0 ? t->head[j] : cell(t, i, j));
    }
    return r == EOF ? EOF : fputs(" \\\\\n", f);
}

int lnk_table_write_tex(const lnk_table *t, FILE *f, const char *caption, const char *label)
{
    int r = 0;
    if (caption)
        r = fputs("\\begin{table}[ht]\n\\centering\n", f);
    if (r != EOF)
        r = fputs("\\begin{tabular}{", f);
    for (int j = 0; j < t->ncol && r != EOF; j++)
        r = fputc(t->align[j], f);
    if (r != EOF)
        r = fputs("}\n\\toprule\n", f);
    if (r != EOF)
        r = tex_row(f, t, -1);
    if (r != EOF)
        r = fputs("\\midrule\n", f);
    for (int i = 0; i < t->nrow && r != EOF; i++)
        r = tex_row(f, t, i);
    if (r != EOF)
        r = fputs("\\bottomrule\n\\end{tabular}\n", f);
    if (caption && r != EOF) {
        r = fputs("\\caption{", f);
        if (r != EOF)
            r = put_tex(f, caption);
        if (r != EOF)
            r = fputs("}\n", f);
        if (label && r != EOF)
            r = fprintf(f, "\\label{%s}\n", label) < 0 ? EOF : 0;
        if (r != EOF)
            r = fputs("\\end{table}\n", f);
    }
    if (r == EOF)
        return lnk_error(LNK_EIO, "table: LaTeX write failed: %s", strerror(errno));
    return LNK_OK;
}
