/* CSV (RFC 4180) and the NAME.meta.json sidecar.  Atomic output files,
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

#include <jansson.h>

#include "lnkit/config.h"
#include "lnkit/error.h"
#include "lnkit/io.h"
#include "io/provenance_json.h"

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

/* ------------------------------------------------------------- meta sidecar */

char *lnk_meta_path(const char *csv_path)
{
    size_t n = strlen(csv_path);
    if (n >= 4 && strcmp(csv_path + n - 4, ".csv") == 0)
        n -= 4;
    char *p = NULL;
    if (asprintf(&p, "%.*s.meta.json", (int)n, csv_path) < 0)
        return NULL;
    return p;
}

/* json_object_set_new that reports allocation failure. */
static int jset(json_t *o, const char *k, json_t *v)
{
    return (v && json_object_set_new(o, k, v) == 0) ? 0 : -1;
}

int lnk_meta_write(const char *csv_path, const lnk_config *cfg, const char *extra_json,
                   const char *start_iso, double wall_seconds)
{
    if (!csv_path || !csv_path[0])
        return lnk_error(LNK_EINVAL, "meta: empty output path");
    /* beside a device or FIFO (-o /dev/null) there is no place for a sidecar */
    if (lnk_output_kind(csv_path) == LNK_OUT_STREAM)
        return LNK_OK;
    char *path = lnk_meta_path(csv_path);
    if (!path)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", csv_path);
    int st = LNK_OK;
    json_t *root = json_object(), *extra = NULL;
    json_error_t jerr;
    if (!root) {
        st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
        goto done;
    }

    json_t *jcfg = json_null(), *jseed = json_null();
    if (cfg) {
        char *text = lnk_config_to_json(cfg, 0, NULL, 0);
        if (!text) {
            /* keep the config module's message, name the file */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            st = lnk_error(LNK_EINVAL, "%s: cannot serialise the configuration: %s", path, msg);
            goto done;
        }
        jcfg = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        free(text);
        if (!jcfg) {
            st = lnk_error(LNK_EINVAL, "%s: configuration JSON does not parse: %s", path, jerr.text);
            goto done;
        }
        /* seeds above 2^63-1 do not fit a JSON integer of jansson: write them as text */
        jseed = cfg->seed <= (uint64_t)LLONG_MAX ? json_integer((json_int_t)cfg->seed) : NULL;
        if (!jseed) {
            char s[32];
            snprintf(s, sizeof s, "%llu", (unsigned long long)cfg->seed);
            jseed = json_string(s);
        }
    }
    if (!isfinite(wall_seconds)) {
        json_decref(jcfg);
        json_decref(jseed);
        st = lnk_error(LNK_ENONFINITE, "%s: key 'wall_seconds': %g is not finite", path, wall_seconds);
        goto done;
    }
    int bad = jset(root, "config", jcfg) | jset(root, "seed", jseed);
    /* command line, inputs with checksums, seeds, git commit, versions,
     * threads, ranks: one record for every sidecar (provenance.c) */
    bad |= lnk_prov_json(root);
    bad |= jset(root, "start_time", start_iso ? json_string(start_iso) : json_null()) |
           jset(root, "wall_seconds", json_real(wall_seconds));
    if (bad) {
        st = lnk_error(LNK_ENOMEM, "%s: cannot build the JSON (out of memory or bad UTF-8 in start time)", path);
        goto done;
    }

    if (extra_json) {
        extra = json_loads(extra_json, JSON_REJECT_DUPLICATES, &jerr);
        if (!extra) {
            st = lnk_error(LNK_EINVAL, "%s: extra metadata is not valid JSON: %s (line %d, column %d)",
                           path, jerr.text, jerr.line, jerr.column);
            goto done;
        }
        if (!json_is_object(extra)) {
            st = lnk_error(LNK_EINVAL, "%s: extra metadata must be a JSON object", path);
            goto done;
        }
        const char *k;
        json_t *v;
        json_object_foreach(extra, k, v) {
            /* the standard keys are the point of the sidecar: never overwrite them */
            if (json_object_get(root, k)) {
                st = lnk_error(LNK_EINVAL, "%s: extra metadata key '%s' clashes with a standard key", path, k);
                goto done;
            }
            if (json_object_set(root, k, v) != 0) {
                st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
                goto done;
            }
        }
    }

    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    if (!text) {
        st = lnk_error(LNK_ENOMEM, "%s: cannot serialise the JSON", path);
        goto done;
    }
    lnk_afile a;
    st = lnk_afile_open(&a, path);
    if (st == LNK_OK) {
        if (fputs(text, a.f) == EOF || fputc('\n', a.f) == EOF) {
            int e = errno;
            lnk_afile_abort(&a);
            st = lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
        } else {
            st = lnk_afile_commit(&a);
        }
    }
    free(text);
done:
    json_decref(extra);
    json_decref(root);
    free(path);
    return st;
}
