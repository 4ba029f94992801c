/* Repeated --batch has one meaning in every command (issue 30, item 5:
 * `eval` and `hvp` used the last file alone): the files are one data set,
 * the token-weighted mean loss over all their scored tokens (docs/MODEL.md
 * section 4).  Generated from the program itself: every command of `lnkit
 * --help` whose --help takes "--batch FILE" is run on two files and on one
 * file holding the rows of both (padded to the longer rows), and its numbers
 * must agree to rounding (a command without a comparison in the table below
 * fails the test).  The files differ in length, so the padding and the
 * token weights matter. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[512];
static lnk_config cfg;
static lnk_model *model;

/* a and b, rows stacked, each array padded with PAD to the longer rows. */
static void concat(const lnk_batch *a, const lnk_batch *b, lnk_batch *o)
{
    memset(o, 0, sizeof *o);
    o->B = a->B + b->B;
    o->S = a->S > b->S ? a->S : b->S;
    o->T = a->T > b->T ? a->T : b->T;
    o->owns = 1;
    int64_t **dst[3] = {&o->src, &o->tgt, &o->labels};
    int64_t *const sa[3] = {a->src, a->tgt, a->labels}, *const sb[3] = {b->src, b->tgt, b->labels};
    const int w[3] = {o->S, o->T, o->S}, wa[3] = {a->S, a->T, a->S}, wb[3] = {b->S, b->T, b->S};
    for (int k = 0; k < 3; k++) {
        if (!sa[k])
            continue;
        int64_t *x = calloc((size_t)o->B * w[k], sizeof *x); /* LNK_PAD is 0 */
        assert_non_null(x);
        for (int r = 0; r < a->B; r++)
            memcpy(x + (size_t)r * w[k], sa[k] + (size_t)r * wa[k], sizeof *x * wa[k]);
        for (int r = 0; r < b->B; r++)
            memcpy(x + (size_t)(a->B + r) * w[k], sb[k] + (size_t)r * wb[k], sizeof *x * wb[k]);
        *dst[k] = x;
    }
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", tu_path("batch"));
    char *out;
    int st = tu_run(&out, "mkdir -p '%s' && cd '%s' && L='%s' && "
                    "$L init --d 8 --h 2 --L 2 --V 12 --seed 4 -o w.safetensors && "
                    "$L batch --synthetic --config w.json --rows 3 --len 9 --rng-seed 1 -o b1.safetensors && "
                    "$L batch --synthetic --config w.json --rows 2 --len 6 --rng-seed 2 -o b2.safetensors && "
                    "$L vector --config w.json --random --rng-seed 3 -o v.safetensors",
                    dir, dir, tu_lnkit());
    if (st)
        fail_msg("set-up: %s", out);
    free(out);
    char p[700];
    snprintf(p, sizeof p, "%s/w.json", dir);
    lnk_config_default(&cfg);
    assert_int_equal(lnk_config_load_json(&cfg, p), LNK_OK);
    assert_int_equal(lnk_config_finalize(&cfg), LNK_OK);
    model = lnk_model_alloc(&cfg);
    assert_non_null(model);
    lnk_batch a, b, ab;
    snprintf(p, sizeof p, "%s/b1.safetensors", dir);
    assert_int_equal(lnk_batch_load(p, model, &a), LNK_OK);
    snprintf(p, sizeof p, "%s/b2.safetensors", dir);
    assert_int_equal(lnk_batch_load(p, model, &b), LNK_OK);
    assert_true(a.T != b.T);
    concat(&a, &b, &ab);
    snprintf(p, sizeof p, "%s/b12.safetensors", dir);
    assert_int_equal(lnk_batch_save(p, &ab), LNK_OK);
    lnk_batch_free(&a), lnk_batch_free(&b), lnk_batch_free(&ab);
}

/* The numbers of column col of a CSV file, or of a vector file (col NULL). */
static double *numbers(const char *file, const char *col, size_t *n)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (!col) {
        double *v = malloc(sizeof(double) * lnk_model_n_params(model));
        int layout;
        assert_int_equal(lnk_vector_load(p, model, v, &layout), LNK_OK);
        *n = lnk_model_n_params(model);
        return v;
    }
    size_t len;
    char *txt = tu_read_file(p, &len), *save = NULL;
    double *v = malloc(sizeof(double) * (len + 1));
    int c = -1, k = 0;
    *n = 0;
    for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save), k++) {
        char *f = line, *end;
        for (int j = 0; f; j++) {
            end = strchr(f, ',');
            if (end)
                *end = '\0';
            if (k == 0 && !strcmp(f, col))
                c = j;
            else if (k > 0 && j == c && *f)
                v[(*n)++] = strtod(f, NULL);
            f = end ? end + 1 : NULL;
        }
        if (k == 0 && c < 0)
            fail_msg("%s: no column %s", file, col);
    }
    free(txt);
    return v;
}

typedef struct {
    const char *cmd;    /* the command */
    const char *args;   /* its other arguments; OUT is the output's name */
    const char *out;    /* where its numbers are: a file name, with the CSV column */
    const char *cols[3];
    double tol;         /* max |a - b| / max |b| */
} comparison;

static const comparison CMP[] = {
    {"eval", "> OUT.csv", "OUT.csv", {"value"}, 1e-12},
    {"hvp", "--vector v.safetensors -o OUT.safetensors", "OUT.safetensors", {NULL}, 1e-11},
    {"vector", "--gradient -o OUT.safetensors", "OUT.safetensors", {NULL}, 1e-11},
    {"eigs", "-k 2 --which both --tol 1e-10 -o OUT.csv", "OUT.csv", {"eigenvalue"}, 1e-8},
    {"trace", "--probes 20 -o OUT.csv", "OUT.csv", {"trace"}, 1e-10},
    {"density", "--runs 2 --steps 10 --sigma 0.2 -o OUT.csv", "OUT.csv", {"density"}, 1e-6},
    {"blocks", "--block out.w --probes 10 --max-steps 40 --tol 1e-10 --runs 1 --steps 6 "
               "-o OUT.csv", "OUT.csv", {"frob", "top", "bottom"}, 1e-7},
};

static void compare(const comparison *c)
{
    const char *files[2] = {"--batch b1.safetensors --batch b2.safetensors",
                            "--batch b12.safetensors"};
    char *out, args[2][400];
    for (int k = 0; k < 2; k++) {
        char *o = args[k];
        snprintf(o, sizeof args[k], "%s", c->args);
        char *at = strstr(o, "OUT");
        assert_non_null(at);
        memmove(at + 4, at + 3, strlen(at + 3) + 1); /* OUT -> OUT1 / OUT2 */
        at[3] = (char)('1' + k);
        int st = tu_run(&out, "cd '%s' && '%s' %s --config w.json --weights w.safetensors %s "
                        "--quiet %s", dir, tu_lnkit(), c->cmd, files[k], o);
        if (st != 0 && st != 3)
            fail_msg("%s with %s: exit %d: %s", c->cmd, files[k], st, out);
        free(out);
    }
    /* every column against the largest number of all compared (blocks: an
     * extreme near 0 against the block's scale) */
    size_t n1[3], n2[3];
    double *a[3] = {NULL}, *b[3] = {NULL}, scale = 1e-300;
    int nc = 0;
    for (; nc < 3 && (nc == 0 || c->cols[nc]); nc++) {
        char f1[64], f2[64];
        snprintf(f1, sizeof f1, "%s", c->out);
        snprintf(f2, sizeof f2, "%s", c->out);
        memmove(f1 + 4, f1 + 3, strlen(f1 + 3) + 1), f1[3] = '1';
        memmove(f2 + 4, f2 + 3, strlen(f2 + 3) + 1), f2[3] = '2';
        a[nc] = numbers(f1, c->cols[nc], &n1[nc]);
        b[nc] = numbers(f2, c->cols[nc], &n2[nc]);
        assert_int_equal(n1[nc], n2[nc]);
        assert_true(n1[nc] > 0);
        for (size_t i = 0; i < n2[nc]; i++)
            scale = fmax(scale, fabs(b[nc][i]));
    }
    for (int j = 0; j < nc; j++) {
        double err = tu_relerr(a[j], b[j], n1[j], scale);
        printf("# %s: two files = one file holding both: %zu %s to %.2g (tolerance %g)\n",
               c->cmd, n1[j], c->cols[j] ? c->cols[j] : "entries", err, c->tol);
        if (!(err <= c->tol))
            fail_msg("%s: %s differ by %g between two --batch files and one holding both", c->cmd,
                     c->cols[j] ? c->cols[j] : "entries", err);
        free(a[j]), free(b[j]);
    }
}

static void test_every_command(void **s)
{
    (void)s;
    setup();
    char *list;
    tu_run(&list, "'%s' --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 { print $1 }' | "
           "tr '\\n' ' '", tu_lnkit());
    int n_batch = 0, n_cmd = 0;
    char *save, *cmd = strtok_r(list, " ", &save);
    for (; cmd; cmd = strtok_r(NULL, " ", &save)) {
        if (!strcmp(cmd, "Commands:"))
            continue;
        n_cmd++;
        char *h;
        tu_run(&h, "'%s' %s --help | grep -cE -- '^ +--batch FILE'", tu_lnkit(), cmd);
        int takes = atoi(h) > 0;
        free(h);
        if (!takes)
            continue;
        n_batch++;
        const comparison *c = NULL;
        for (size_t i = 0; i < sizeof CMP / sizeof CMP[0]; i++)
            if (!strcmp(CMP[i].cmd, cmd))
                c = &CMP[i];
        if (!c)
            fail_msg("lnkit %s takes --batch FILE but this test has no comparison for it", cmd);
        compare(c);
    }
    free(list);
    printf("# %d of %d commands take --batch FILE\n", n_batch, n_cmd);
    assert_int_equal(n_batch, (int)(sizeof CMP / sizeof CMP[0]));
    lnk_model_free(model);
    lnk_config_clear(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_command)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
