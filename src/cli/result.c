/* The result table of a command (docs/cli.md): CSV to -o FILE (or to
 * standard output, -o -), and with --json the same rows as a JSON array of
 * objects on standard output, column names as keys, numbers as numbers, an
 * empty field as null. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

/* The next field of CSV text at *p (lnk_csv's quoting); *end: 1 at the end
 * of a row.  The field, unquoted, in buf. */
static int next_field(const char **p, char *buf, size_t n, int *end)
{
    const char *s = *p;
    size_t k = 0;
    if (*s == '"') {
        for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
            if (*s == '"')
                s++;
            if (k + 1 < n)
                buf[k++] = *s;
        }
        if (*s == '"')
            s++;
    } else {
        for (; *s && *s != ',' && *s != '\n'; s++)
            if (k + 1 < n)
                buf[k++] = *s;
    }
    buf[k] = 0;
    *end = *s != ',';
    *p = *s ? s + 1 : s;
    return LNK_OK;
}

static json_t *value(const char *t)
{
    char *e;
    if (!*t)
        return json_null();
    long long i = strtoll(t, &e, 10);
    if (!*e)
        return json_integer(i);
    double d = strtod(t, &e);
    return *e ? json_string(t) : json_real(d);
}

/* CSV text (a header row, then rows) as a JSON array of objects. */
static json_t *csv_json(const char *csv)
{
    char names[64][64], field[4096];
    int nc = 0, end = 0;
    const char *p = csv;
    while (!end && *p && nc < 64)
        next_field(&p, names[nc++], sizeof names[0], &end);
    json_t *rows = json_array();
    while (rows && *p) {
        json_t *row = json_object();
        end = 0;
        for (int c = 0; !end && *p; c++) {
            next_field(&p, field, sizeof field, &end);
            if (c < nc)
                json_object_set_new(row, names[c], value(field));
        }
        json_array_append_new(rows, row);
    }
    return rows;
}

void cli_result(const char *out, int json, cli_csv_fn *write, const void *ctx)
{
    if (!cli_root())
        return;
    if (!json || !cli_is_stdout(out)) { /* the CSV, to its file or to standard output */
        lnk_afile af;
        CLI_CK(lnk_afile_open(&af, cli_out(out, 0)));
        int st = write(af.f, ctx);
        if (st || (st = lnk_afile_commit(&af)) != LNK_OK) {
            lnk_afile_abort(&af);
            cli_die_lib();
        }
    }
    if (json) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m)
            cli_die("out of memory");
        int st = write(m, ctx);
        fclose(m);
        if (st) {
            free(buf);
            cli_die_lib();
        }
        json_t *rows = csv_json(buf);
        free(buf);
        char *txt = rows ? json_dumps(rows, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                                JSON_REAL_PRECISION(17)) : NULL;
        json_decref(rows);
        if (!txt)
            cli_die("out of memory");
        puts(txt);
        free(txt);
        if (fflush(stdout))
            cli_die("could not write to standard output");
    }
}

void cli_result_check(const char *out, int json)
{
    if (json && cli_is_stdout(out) && cli_given("output"))
        cli_die("-o - and --json would both write standard output: give -o FILE for the CSV, or "
                "leave -o out");
}
