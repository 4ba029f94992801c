#include "testutil.h"
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

lnk_config tu_config(const char *kv, ...)
{
    lnk_config c;
    lnk_config_default(&c);
    va_list ap;
    va_start(ap, kv);
    for (const char *s = kv; s; s = va_arg(ap, const char *)) {
        char key[64];
        const char *eq = strchr(s, '=');
        assert_non_null(eq);
        snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
        if (lnk_config_set(&c, key, eq + 1) != LNK_OK)
            fail_msg("config %s: %s", s, lnk_errmsg());
    }
    va_end(ap);
    if (lnk_config_finalize(&c) != LNK_OK)
        fail_msg("config: %s", lnk_errmsg());
    return c;
}

void tu_randn(double *x, size_t n, uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed + 12345u);
    for (size_t i = 0; i < n; i++)
        x[i] = gsl_ran_gaussian(r, 1.0);
    gsl_rng_free(r);
}

double tu_dot(const double *a, const double *b, size_t n)
{
    long double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (long double)a[i] * b[i];
    return (double)s;
}

double tu_norm(const double *a, size_t n) { return sqrt(tu_dot(a, a, n)); }

double tu_relerr(const double *a, const double *b, size_t n, double floor)
{
    double md = 0, mb = floor;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (d > md || isnan(d))
            md = isnan(d) ? INFINITY : d;
        if (fabs(b[i]) > mb)
            mb = fabs(b[i]);
    }
    return md / mb;
}

static char tmpdir[256];
static void rm_tmpdir(void)
{
    if (tmpdir[0] && !getenv("LNK_KEEP_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) { /* nothing to do */ }
    }
}

const char *tu_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/lnktest.XXXXXX");
        if (!mkdtemp(tmpdir))
            fail_msg("mkdtemp failed");
        atexit(rm_tmpdir);
    }
    return tmpdir;
}

const char *tu_path(const char *name)
{
    static char buf[8][512];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tu_tmpdir(), name);
    return buf[k];
}

void tu_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

char *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    if (n)
        *n = (size_t)len;
    return buf;
}

int tu_run(char **out, const char *fmt, ...)
{
    char *cmd = NULL, *full = NULL;
    va_list ap;
    va_start(ap, fmt);
    assert_true(vasprintf(&cmd, fmt, ap) >= 0);
    va_end(ap);
    assert_true(asprintf(&full, "(%s) 2>&1", cmd) >= 0);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += k;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    int st = pclose(p);
    free(cmd);
    free(full);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

const char *tu_lnkit(void)
{
    const char *b = getenv("LNK_BIN");
    return b ? b : "bin/lnkit";
}

static int tu_row_len(int r, int T) { return T - (r * 3) % (T - 2); }

void tu_rows(const lnk_model *m, lnk_batch *b, int r0, int r1, int S, int T)
{
    const lnk_config *c = lnk_model_config(m);
    memset(b, 0, sizeof *b);
    b->B = r1 - r0;
    b->owns = 1;
    if (c->task != LNK_TASK_LM) {
        b->S = S;
        b->src = calloc((size_t)b->B * S, sizeof(int64_t));
        b->labels = calloc((size_t)b->B * S, sizeof(int64_t));
    }
    if (c->task != LNK_TASK_CLS) {
        b->T = T;
        b->tgt = calloc((size_t)b->B * T, sizeof(int64_t));
    }
    for (int r = r0; r < r1; r++) {
        int i = r - r0;
        for (int t = 0; b->src && t < tu_row_len(r, S); t++) {
            b->src[i * S + t] = 4 + (r * 7 + t * 5) % (c->V_src - 4);
            b->labels[i * S + t] = (r + 3 * t) % c->n_classes;
        }
        if (b->tgt) {
            b->tgt[i * T] = LNK_BOS;
            for (int t = 1; t < tu_row_len(r, T); t++)
                b->tgt[i * T + t] = 4 + (r * 11 + t * 3) % (c->V_tgt - 4);
        }
    }
}

json_t *tu_load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fail_msg("%s: %s", path, e.text);
    return j;
}
