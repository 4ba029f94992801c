/* The result table of a command (docs/cli.md): CSV to -o FILE (or to
 * standard output, -o -), and with --json the same rows as a JSON array of
 * objects on standard output, column names as keys, numbers as numbers, an
 * empty field as null. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/front.h"
#include "front/opt.h"
#include "front/files.h"
#include "lnkit/csv_table.h"
#include "lnkit/model_io.h"

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

/* A CSV table (a header row, then rows) as a JSON array of objects. */
static json_t *csv_json(const lnk_csv_table *t)
{
    json_t *rows = json_array();
    for (size_t r = 0; rows && r < t->nrow; r++) {
        json_t *row = json_object();
        for (int c = 0; c < t->ncol; c++)
            json_object_set_new(row, t->head[c], value(lnk_csv_table_str(t, r, c)));
        json_array_append_new(rows, row);
    }
    return rows;
}

static char *json_path, *json_tmp; /* the CSV that --json prints; a temporary one */

static void remove_json_tmp(void)
{
    if (json_tmp)
        unlink(json_tmp);
}

const char *cli_result_path(const char *out, int json)
{
    if (!json)
        return cli_out(out, 0);
    if (!cli_is_stdout(out))
        return json_path = (char *)out;
    /* --json alone: the CSV goes to a private temporary file, printed as JSON */
    const char *dir = getenv("TMPDIR");
    if (asprintf(&json_tmp, "%s/lnkit-json.XXXXXX", dir && *dir ? dir : "/tmp") < 0)
        cli_die("out of memory");
    int fd = mkstemp(json_tmp);
    if (fd < 0)
        cli_die("--json: cannot create a temporary file: %s", strerror(errno));
    close(fd);
    atexit(remove_json_tmp);
    return json_path = json_tmp;
}

void cli_result_json(void)
{
    if (!json_path || !cli_root())
        return;
    lnk_csv_table t;
    lnk_csv_read_opts o;
    lnk_csv_read_opts_default(&o);
    o.max = (size_t)1 << 40;
    o.what = "result";
    CLI_CK(lnk_csv_table_read(json_path, &o, &t));
    json_t *rows = csv_json(&t);
    lnk_csv_table_free(&t);
    cli_json_print(rows);
}

int cli_json_fprint(FILE *f, json_t *o)
{
    int st = lnk_json_fwrite(f, o);
    if (st == LNK_ENOMEM)
        cli_die_lib();
    return st ? -1 : 0;
}

void cli_json_print(json_t *o)
{
    if (cli_json_fprint(stdout, o) || fflush(stdout) != 0)
        cli_die("could not write to standard output");
}

