#include "testutil.h"
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
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

void tu_run_script(const char *name)
{
    char rel[PATH_MAX], script[PATH_MAX];
    snprintf(rel, sizeof rel, "tests/%s", name);
    /* a script that is not there is a broken test, not one to skip */
    if (!realpath(rel, script))
        fail_msg("%s: %s (run from the repository's top directory)", rel, strerror(errno));
    char *out;
    int st = tu_run(&out, "bash '%s' '%s'", script, tu_lnkit());
    printf("%s", out);
    /* the last line that starts with "tests: " */
    const char *t = NULL;
    for (const char *p = out; p; p = strchr(p, '\n')) {
        p += *p == '\n';
        if (!strncmp(p, "tests: ", 7))
            t = p;
    }
    long pass = -1, failed = -1, skipped = -1;
    int n = t ? sscanf(t, "tests: %ld passed, %ld failed, %ld skipped", &pass, &failed, &skipped)
              : 0;
    free(out);
    if (n != 3)
        fail_msg("%s: exit status %d, no line 'tests: N passed, N failed, N skipped'", name, st);
    print_message("%s: %ld passed, %ld failed, %ld skipped, exit status %d\n", name, pass, failed,
                  skipped, st);
    if (failed != 0 || pass < 1 || st != 0)
        fail_msg("%s: %ld passed, %ld failed, exit status %d", name, pass, failed, st);
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

/* ---------------------------------------------------------------- variants */

/* The options of MODEL.md §2-§4 and their values, as the pairwise set covers them. */
static const char *const VF_KEY[] = {"norm_pos", "norm", "qk_norm", "activation", "pos",
                                     "bias", "task", "tie_output", "init", "label_smoothing"};
static const char *const VF_VAL[][6] = {
    {"post", "pre", "peri", "out", "deepnorm", "mix"},
    {"layernorm", "rmsnorm", "none"},
    {"none", "layernorm", "rmsnorm"},
    {"relu", "gelu", "swiglu"},
    {"sinusoidal", "learned", "rope", "none"},
    {"true", "false"},
    {"lm", "cls", "seq2seq"},
    {"false", "true"},
    {"xavier", "xavier_normal", "theorem"},
    {"0", "0.1"},
};
static const int VF_N[] = {6, 3, 3, 3, 4, 2, 3, 2, 3, 2};
#define VF_F 10

/* Pairs (f1, a; f2, b) covered by the rows so far: cov[f1][f2][a][b]. */
typedef struct {
    unsigned char cov[VF_F][VF_F][6][6];
} pair_cov;

static int new_pairs(const pair_cov *pc, const int *row)
{
    int n = 0;
    for (int f = 0; f < VF_F; f++)
        for (int g = f + 1; g < VF_F; g++)
            n += !pc->cov[f][g][row[f]][row[g]];
    return n;
}

static int uncovered(const pair_cov *pc, int *f1, int *a1, int *f2, int *a2)
{
    for (int f = 0; f < VF_F; f++)
        for (int g = f + 1; g < VF_F; g++)
            for (int a = 0; a < VF_N[f]; a++)
                for (int b = 0; b < VF_N[g]; b++)
                    if (!pc->cov[f][g][a][b]) {
                        *f1 = f, *a1 = a, *f2 = g, *a2 = b;
                        return 1;
                    }
    return 0;
}

/* Greedy pairwise rows (AETG-like, deterministic): each row starts from the
 * first uncovered pair and sets the other factors, in a pseudo-random order,
 * to the value that covers most new pairs; the best of 30 tries is kept. */
static int pairwise_rows(int rows[][VF_F], int max)
{
    static pair_cov pc;
    memset(&pc, 0, sizeof pc);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    int n = 0, f1, a1, f2, a2;
    while (n < max && uncovered(&pc, &f1, &a1, &f2, &a2)) {
        int best[VF_F], bn = -1;
        for (int tr = 0; tr < 30; tr++) {
            int row[VF_F], order[VF_F];
            for (int f = 0; f < VF_F; f++)
                row[f] = -1, order[f] = f;
            for (int f = VF_F - 1; f > 0; f--) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                int j = (int)((s >> 33) % (uint64_t)(f + 1)), t = order[f];
                order[f] = order[j], order[j] = t;
            }
            row[f1] = a1, row[f2] = a2;
            for (int oi = 0; oi < VF_F; oi++) {
                int f = order[oi], bv = 0, bc = -1;
                if (row[f] >= 0)
                    continue;
                for (int v = 0; v < VF_N[f]; v++) {
                    row[f] = v;
                    int cnt = 0; /* new pairs with the factors set so far */
                    for (int g = 0; g < VF_F; g++)
                        if (g != f && row[g] >= 0)
                            cnt += f < g ? !pc.cov[f][g][v][row[g]] : !pc.cov[g][f][row[g]][v];
                    if (cnt > bc)
                        bc = cnt, bv = v;
                }
                row[f] = bv;
            }
            int c = new_pairs(&pc, row);
            if (c > bn) {
                bn = c;
                memcpy(best, row, sizeof best);
            }
        }
        memcpy(rows[n++], best, sizeof best);
        for (int f = 0; f < VF_F; f++)
            for (int g = f + 1; g < VF_F; g++)
                pc.cov[f][g][best[f]][best[g]] = 1;
    }
    return n;
}

static void variant_set(tu_variant *v, const char *key, const char *val)
{
    for (int i = 0; i < v->n; i++) {
        const char *eq = strchr(v->kv[i], '=');
        if (eq && (size_t)(eq - v->kv[i]) == strlen(key) && !strncmp(v->kv[i], key, strlen(key))) {
            snprintf(v->kv[i], sizeof v->kv[i], "%s=%s", key, val);
            return;
        }
    }
    assert_true(v->n < TU_VARIANT_KEYS);
    snprintf(v->kv[v->n++], sizeof v->kv[0], "%s=%s", key, val);
}

/* The fixed keys of a variant of mix (half of the layers Post-LN) and learned
 * positions (a short table); then its label from its keys. */
static void variant_finish(tu_variant *v)
{
    int mix = 0, learned = 0;
    for (int i = 0; i < v->n; i++) {
        mix |= !strcmp(v->kv[i], "norm_pos=mix");
        learned |= !strcmp(v->kv[i], "pos=learned");
    }
    if (mix && !v->mix_set)
        variant_set(v, "mix_ratio", "0.5");
    if (learned)
        variant_set(v, "max_len", "9");
    char label[sizeof v->label]; /* built apart: kv and label are one object's members */
    size_t len = 0;
    label[0] = '\0';
    for (int i = 0; i < v->n && len + 1 < sizeof label; i++)
        len += (size_t)snprintf(label + len, sizeof label - len, "%s%s", i ? " " : "", v->kv[i]);
    snprintf(v->label, sizeof v->label, "%s", v->n ? label : "defaults");
}

int tu_variants(tu_variant *out, int max, int *n_single)
{
    /* each part against the defaults (the default itself first) */
    static const char *const single[][2] = {
        {NULL, NULL},
        {"norm_pos=peri", NULL},          {"norm_pos=out", NULL},
        {"norm_pos=deepnorm", NULL},      {"norm_pos=mix", NULL},
        {"norm_pos=mix", "mix_ratio=1"},  {"norm_pos=mix", "mix_ratio=0"},
        {"norm_pos=deepnorm", "deepnorm_alpha=1.7"},
        {"activation=gelu", NULL},        {"activation=swiglu", NULL},
        {"pos=learned", NULL},            {"pos=rope", NULL},
        {"pos=none", NULL},               {"bias=false", NULL},
        {"input_scale=0.5", NULL},        {"norm_pos=pre", "input_scale=3"},
    };
    int n = 0, ns = (int)(sizeof single / sizeof single[0]);
    for (int i = 0; i < ns && n < max; i++, n++) {
        tu_variant *v = &out[n];
        memset(v, 0, sizeof *v);
        for (int k = 0; k < 2; k++)
            if (single[i][k]) {
                v->mix_set |= !strncmp(single[i][k], "mix_ratio", 9);
                snprintf(v->kv[v->n++], sizeof v->kv[0], "%s", single[i][k]);
            }
        variant_finish(v);
    }
    if (n_single)
        *n_single = n;
    int rows[64][VF_F];
    int nr = pairwise_rows(rows, 64);
    for (int r = 0; r < nr && n < max; r++, n++) {
        tu_variant *v = &out[n];
        memset(v, 0, sizeof *v);
        for (int f = 0; f < VF_F; f++)
            variant_set(v, VF_KEY[f], VF_VAL[f][rows[r][f]]);
        variant_finish(v);
    }
    return n;
}

int tu_variants_pairs_covered(const tu_variant *v, int n)
{
    int missing = 0;
    for (int f = 0; f < VF_F; f++)
        for (int g = f + 1; g < VF_F; g++)
            for (int a = 0; a < VF_N[f]; a++)
                for (int b = 0; b < VF_N[g]; b++) {
                    char ka[64], kb[64];
                    snprintf(ka, sizeof ka, "%s=%s", VF_KEY[f], VF_VAL[f][a]);
                    snprintf(kb, sizeof kb, "%s=%s", VF_KEY[g], VF_VAL[g][b]);
                    int hit = 0;
                    for (int i = 0; i < n && !hit; i++) {
                        int ha = 0, hb = 0;
                        for (int k = 0; k < v[i].n; k++)
                            ha |= !strcmp(v[i].kv[k], ka), hb |= !strcmp(v[i].kv[k], kb);
                        hit = ha && hb;
                    }
                    missing += !hit;
                }
    return missing;
}

lnk_config tu_variant_config(const tu_variant *v, const char *const *extra)
{
    lnk_config c;
    lnk_config_default(&c);
    for (int i = 0; extra && extra[i]; i++) {
        char key[64];
        const char *eq = strchr(extra[i], '=');
        assert_non_null(eq);
        snprintf(key, sizeof key, "%.*s", (int)(eq - extra[i]), extra[i]);
        if (lnk_config_set(&c, key, eq + 1) != LNK_OK)
            fail_msg("config %s: %s", extra[i], lnk_errmsg());
    }
    for (int i = 0; i < v->n; i++) {
        char key[64];
        const char *eq = strchr(v->kv[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - v->kv[i]), v->kv[i]);
        if (lnk_config_set(&c, key, eq + 1) != LNK_OK)
            fail_msg("variant %s: %s", v->label, lnk_errmsg());
    }
    if (lnk_config_finalize(&c) != LNK_OK)
        fail_msg("variant %s: %s", v->label, lnk_errmsg());
    return c;
}

void tu_build_dir(char *build, size_t n)
{
    snprintf(build, n, "%s", tu_lnkit());
    char *slash = strstr(build, "/bin/lnkit");
    if (!slash)
        skip();
    *slash = 0;
    size_t lb = strlen(build);
    if (lb > 8 && !strcmp(build + lb - 8, "/testing"))
        build[lb - 8] = 0;
}

int tu_n_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}
