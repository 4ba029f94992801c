/* values.csv and claims.csv of a summarising step, and its reading of the raw
 * rows' sidecars (see quoted.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "quoted.h"

void quoted_open(study_quoted *q, const char *dir)
{
    static const char *const hv[] = {"name", "value"};
    static const char *const hc[] = {"claim", "value", "setting", "file"};
    char p[1100];
    snprintf(p, sizeof p, "%s/values.csv", dir);
    CK(lnk_afile_open(&q->va, p));
    study_track(&q->va);
    snprintf(p, sizeof p, "%s/claims.csv", dir);
    CK(lnk_afile_open(&q->ca, p));
    study_track(&q->ca);
    CK(lnk_csv_begin(&q->v, q->va.f, hv, 2));
    CK(lnk_csv_begin(&q->c, q->ca.f, hc, 4));
}

void quoted_value(study_quoted *q, const char *name, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    CK(lnk_csv_str(&q->v, name));
    CK(lnk_csv_str(&q->v, buf));
    CK(lnk_csv_end_row(&q->v));
}

void quoted_claim(study_quoted *q, const char *claim, const char *value, const char *setting,
                  const char *file)
{
    CK(lnk_csv_str(&q->c, claim));
    CK(lnk_csv_str(&q->c, value));
    CK(lnk_csv_str(&q->c, setting));
    CK(lnk_csv_str(&q->c, file));
    CK(lnk_csv_end_row(&q->c));
}

void quoted_close(study_quoted *q)
{
    lnk_csv_free(&q->v);
    lnk_csv_free(&q->c);
    study_untrack(&q->va);
    study_untrack(&q->ca);
    CK(lnk_afile_commit(&q->va));
    CK(lnk_afile_commit(&q->ca));
}

json_t *study_sidecar(const char *dir, const char *name)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s.meta.json", dir, name);
    json_error_t e;
    json_t *o = json_load_file(p, 0, &e);
    if (!o || !json_is_object(o))
        fail("%s: %s", p, o ? "expected a JSON object" : e.text);
    return o;
}

static const json_t *member(const json_t *o, const char *key, const char *what)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        fail("%s: no member '%s'", what, key);
    return v;
}

long sidecar_int(const json_t *o, const char *key, const char *what)
{
    const json_t *v = member(o, key, what);
    if (!json_is_integer(v))
        fail("%s: '%s' is not an integer", what, key);
    return (long)json_integer_value(v);
}

double sidecar_num(const json_t *o, const char *key, const char *what)
{
    const json_t *v = member(o, key, what);
    if (!json_is_number(v))
        fail("%s: '%s' is not a number", what, key);
    return json_number_value(v);
}

const char *sidecar_str(const json_t *o, const char *key, const char *what)
{
    const json_t *v = member(o, key, what);
    if (!json_is_string(v))
        fail("%s: '%s' is not a string", what, key);
    return json_string_value(v);
}

lnk_meta *summary_extra(const char *study, const json_t *raw, const json_t *more)
{
    json_t *in = json_deep_copy(raw);
    static const char *const drop[] = {"versions", "start_time", "wall_seconds", "threads",
                                       "ranks", "command_line", "cwd", "blas_kernel",
                                       "blas_kernel_choice", "inputs", "git_commit", "jobs",
                                       "command_line_bytes_hex", "cwd_bytes_hex",
                                       "blas_kernel_choice_bytes_hex"};
    for (size_t k = 0; in && k < sizeof drop / sizeof drop[0]; k++)
        json_object_del(in, drop[k]);
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        die();
    lnk_meta_str(m, "study", study);
    lnk_meta_json(m, "input_parameters", in ? in : json_null());
    if (more)
        lnk_meta_add_object(m, more);
    CK(lnk_meta_status(m));
    return m;
}

void table_set_pm(lnk_table *t, int row, int col, double m, double sd)
{
    char b[96];
    lnk_fmt_pm(b, sizeof b, m, sd);
    CK(lnk_table_set(t, row, col, "%s", b));
}

void study_write_table(const char *dir, const char *base, const lnk_table *t,
                       const char *caption, FILE *summary)
{
    char p[1100];
    lnk_afile a;
    snprintf(p, sizeof p, "%s/%s.md", dir, base);
    CK(lnk_afile_open(&a, p));
    CK(lnk_table_write_md(t, a.f));
    CK(lnk_afile_commit(&a));
    snprintf(p, sizeof p, "%s/%s.tex", dir, base);
    CK(lnk_afile_open(&a, p));
    CK(lnk_table_write_tex(t, a.f, caption, NULL));
    CK(lnk_afile_commit(&a));
    if (summary) {
        fprintf(summary, "%s\n\n", caption);
        CK(lnk_table_write_md(t, summary));
        fputc('\n', summary);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double study_median(double *x, int n)
{
    if (n <= 0)
        return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_d);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

