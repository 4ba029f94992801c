/* lnkit against an independent implementation of docs/MODEL.md: tests/ref_torch.py
 * (PyTorch, float64, written from docs/MODEL.md and the papers alone, package
 * tests/ref/; H v by double backward, G v by a double-backward J v).
 *
 * First the reference's own self-test (tests/test_ref_torch.py: finite
 * differences, dense matrices, torch.nn's modules).  Then, for each
 * configuration (a hand-picked set; every variant of issue 32 alone on each
 * task; the pairwise-covering set of tests/pairwise.conf; the post / pre / mix
 * x relu / gelu models torch.nn expresses): weights from lnk_model_init_params
 * (with gains and biases perturbed so that every tensor matters), a batch with
 * padding, a random v; loss, gradient, H v, G v and F v = H v - G v must agree
 * with the reference to 1e-12 (relative to the largest entry; the loss 1e-13),
 * and, where torch.nn's TransformerEncoderLayer / DecoderLayer express the
 * configuration, loss and gradient also with a model built from those modules.
 * All files are written first and the reference runs once (--jobs): one torch
 * start.  Skipped with a message when Debian's python3-torch is not installed
 * (make deps-torch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const char *PY = "/usr/bin/python3";
enum { MAXKV = 24, MAXCASES = 160 };

static int have_torch(void)
{
    return tu_run(NULL, "%s -c 'import torch, numpy' >/dev/null 2>&1", PY) == 0;
}

static void need_torch(void)
{
    if (!have_torch()) {
        print_message("SKIPPED: Debian's python3-torch is not installed (bash tools/deps.sh "
                      "python3-torch python3-numpy): the cross-implementation check did not run\n");
        skip();
    }
}

/* ------------------------------------------------------------------ cases */

typedef struct {
    char kv[MAXKV][48];
    int nkv;
    char label[48];
} ref_case;

static ref_case CASES[MAXCASES];
static int NCASES;

static ref_case *add_case(const char *label)
{
    if (NCASES == MAXCASES)
        fail_msg("too many cases");
    ref_case *c = &CASES[NCASES++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    return c;
}

static void add_kv(ref_case *c, const char *kv)
{
    if (c->nkv == MAXKV)
        fail_msg("case %s: too many keys", c->label);
    snprintf(c->kv[c->nkv++], sizeof c->kv[0], "%s", kv);
}

/* a case from a NULL-terminated list of "key=value" */
static void add_list(const char *label, const char *const *kv)
{
    ref_case *c = add_case(label);
    for (; *kv; kv++)
        add_kv(c, *kv);
}

/* sizes the reference needs for some keys: a short learned table, a mix with
 * one Post-LN and one Pre-LN layer at L = 2 */
static void add_sizes(ref_case *c)
{
    int learned = 0, mix = 0, has_ratio = 0, has_len = 0;
    for (int i = 0; i < c->nkv; i++) {
        learned |= strcmp(c->kv[i], "pos=learned") == 0;
        mix |= strcmp(c->kv[i], "norm_pos=mix") == 0;
        has_ratio |= strncmp(c->kv[i], "mix_ratio=", 10) == 0;
        has_len |= strncmp(c->kv[i], "max_len=", 8) == 0;
    }
    if (learned && !has_len)
        add_kv(c, "max_len=8");
    if (mix && !has_ratio)
        add_kv(c, "mix_ratio=0.5");
}

static void make_cases(void)
{
    static const char *const hand[][9] = {
        {"task=lm", "norm_pos=post", NULL},
        {"task=lm", "norm_pos=pre", "qk_norm=layernorm", NULL},
        {"task=lm", "norm_pos=pre", "norm=rmsnorm", "qk_norm=rmsnorm", "label_smoothing=0.1",
         NULL},
        {"task=lm", "norm_pos=post", "norm=none", "tie_output=true", NULL},
        {"task=lm", "norm_pos=post", "init=theorem", "h=1", "d_ff=8", NULL},
        {"task=cls", "norm_pos=post", "n_classes=5", "label_smoothing=0.2", NULL},
        {"task=cls", "norm_pos=pre", "norm=rmsnorm", "tie_output=true", NULL},
        {"task=seq2seq", "norm_pos=post", "L_enc=1", "V_src=13", NULL},
        {"task=seq2seq", "norm_pos=pre", "qk_norm=layernorm", "tie_output=true",
         "label_smoothing=0.1", NULL},
        {"task=seq2seq", "norm_pos=pre", "norm=none", "qk_norm=rmsnorm", "init=xavier_normal",
         NULL},
        {"task=seq2seq", "norm_pos=deepnorm", "L_enc=3", "L_dec=2", NULL},
        {"task=seq2seq", "norm_pos=deepnorm", "deepnorm_alpha=1.7", "deepnorm_beta=0.5", NULL},
        {"task=lm", "norm_pos=mix", "L=4", "mix_ratio=0.25", NULL},
        {"task=seq2seq", "norm_pos=mix", "L_enc=3", "L_dec=2", "mix_ratio=0.6", NULL},
        {"task=lm", "norm_pos=mix", "mix_ratio=1", NULL},
        {"task=cls", "pos=rope", "h=1", "qk_norm=layernorm", NULL},
        {"task=lm", "pos=learned", "max_len=6", "input_scale=2", NULL},
        {"task=lm", "pos=none", "d=6", "h=3", NULL},
    };
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        char label[48];
        snprintf(label, sizeof label, "hand%zu", i);
        add_list(label, hand[i]);
    }
    static const char *const variants[][3] = {
        {"norm_pos=peri"}, {"norm_pos=out"}, {"norm_pos=deepnorm"}, {"norm_pos=mix"},
        {"activation=gelu"}, {"activation=swiglu"}, {"pos=learned"}, {"pos=rope"},
        {"pos=none"}, {"bias=false"}, {"input_scale=0.5"},
    };
    static const char *const tasks[] = {"task=lm", "task=cls", "task=seq2seq"};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
            char label[48];
            snprintf(label, sizeof label, "var%d.%zu", t, i);
            ref_case *c = add_case(label);
            add_kv(c, tasks[t]);
            for (int k = 0; k < 3 && variants[i][k]; k++)
                add_kv(c, variants[i][k]);
            add_sizes(c);
        }
    /* the pairwise-covering set (tests/ref/pairwise.py writes the file) */
    FILE *f = fopen("tests/pairwise.conf", "r");
    if (!f)
        fail_msg("tests/pairwise.conf: cannot open (run the tests from the source tree)");
    char line[1024];
    int row = 0;
    while (fgets(line, sizeof line, f)) {
        char label[48];
        snprintf(label, sizeof label, "pair%d", row++);
        ref_case *c = add_case(label);
        for (char *w = strtok(line, " \n"); w; w = strtok(NULL, " \n"))
            add_kv(c, w);
        add_sizes(c);
    }
    fclose(f);
    assert_true(row >= 24);
    /* what torch.nn's layers express: post / pre / mix, relu / gelu, every task */
    static const char *const pl[] = {"norm_pos=post", "norm_pos=pre", "norm_pos=mix"};
    static const char *const act[] = {"activation=relu", "activation=gelu"};
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < 3; p++)
            for (int a = 0; a < 2; a++) {
                char label[48];
                snprintf(label, sizeof label, "nn%d.%d.%d", t, p, a);
                ref_case *c = add_case(label);
                add_kv(c, tasks[t]);
                add_kv(c, pl[p]);
                add_kv(c, act[a]);
                if ((t + p + a) % 2)
                    add_kv(c, "tie_output=true");
                if (p == 2)
                    add_kv(c, "L=3");
                add_sizes(c);
            }
}

/* ------------------------------------------------------------------ one case */

static void make_batch(const lnk_model *m, lnk_batch *b, uint64_t seed)
{
    const lnk_config *c = lnk_model_config(m);
    int B = 3, S = 6, T = 7;
    double r[256];
    tu_randn(r, 256, seed);
    int k = 0;
    memset(b, 0, sizeof *b);
    b->B = B;
    b->owns = 1;
    if (c->task != LNK_TASK_LM) {
        b->S = S;
        b->src = calloc((size_t)B * S, sizeof(int64_t));
        b->labels = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++)
            for (int t = 0; t < S - i; t++) {
                b->src[i * S + t] = 4 + (int64_t)(fabs(r[k++]) * 997) % (c->V_src - 4);
                b->labels[i * S + t] = (int64_t)(fabs(r[k++]) * 991) % c->n_classes;
            }
    }
    if (c->task != LNK_TASK_CLS) {
        b->T = T;
        b->tgt = calloc((size_t)B * T, sizeof(int64_t));
        for (int i = 0; i < B; i++) {
            b->tgt[i * T] = LNK_BOS;
            for (int t = 1; t < T - 2 * i; t++)
                b->tgt[i * T + t] = 4 + (int64_t)(fabs(r[k++]) * 997) % (c->V_tgt - 4);
        }
    }
}

typedef struct {
    size_t n;
    double loss;
    double *g, *hv, *gv; /* lnkit's */
} c_result;

static c_result RES[MAXCASES];

static const char *casefile(int idx, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s%d.%s", what, idx, strcmp(what, "c") ? "safetensors" : "json");
    return tu_path(name);
}

static lnk_config case_config(const ref_case *rc)
{
    lnk_config c;
    lnk_config_default(&c);
    static const char *const base[] = {"d=8", "h=2", "L=2", "V=11", "seed=5"};
    for (size_t i = 0; i < 5 + (size_t)rc->nkv; i++) {
        const char *s = i < 5 ? base[i] : rc->kv[i - 5];
        char key[64];
        const char *eq = strchr(s, '=');
        assert_non_null(eq);
        snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
        if (lnk_config_set(&c, key, eq + 1) != LNK_OK)
            fail_msg("case %s: %s: %s", rc->label, s, lnk_errmsg());
    }
    if (lnk_config_finalize(&c) != LNK_OK)
        fail_msg("case %s: %s", rc->label, lnk_errmsg());
    return c;
}

/* lnkit's loss, gradient, H v and G v on the case; its files for the reference */
static void run_lnkit(int idx)
{
    lnk_config c = case_config(&CASES[idx]);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    c_result *r = &RES[idx];
    r->n = n;
    r->g = malloc(sizeof(double) * n);
    r->hv = malloc(sizeof(double) * n);
    r->gv = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_init_params(m, th), LNK_OK);
    /* perturb every 1-D tensor (gains, biases) so that none is at its init value */
    const lnk_layout *lay = lnk_model_layout(m);
    double *pert = malloc(sizeof(double) * n);
    tu_randn(pert, n, 77 + idx);
    for (int i = 0; i < lay->n_tensors; i++)
        if (lay->t[i].ndim == 1)
            for (size_t j = 0; j < lay->t[i].size; j++)
                th[lay->t[i].offset + j] += 0.1 * pert[lay->t[i].offset + j];
    tu_randn(v, n, 300 + idx);
    lnk_batch b;
    make_batch(m, &b, 500 + idx);
    lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
    assert_non_null(ws);
    assert_int_equal(lnk_model_hvp_prepare(ws, th, &b, &r->loss, r->g), LNK_OK);
    assert_int_equal(lnk_model_ggn_apply(ws, v, r->hv, r->gv), LNK_OK);

    const char **names = malloc(sizeof(char *) * lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    assert_int_equal(lnk_config_save_json(&c, casefile(idx, "c"), n, names, lay->n_tensors),
                     LNK_OK);
    assert_int_equal(lnk_weights_save(casefile(idx, "w"), m, th), LNK_OK);
    assert_int_equal(lnk_batch_save(casefile(idx, "b"), &b), LNK_OK);
    assert_int_equal(lnk_vector_save(casefile(idx, "v"), m, v, LNK_VEC_NAMED), LNK_OK);
    free(names);
    free(pert);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    free(th);
    free(v);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static const double *tensor(const lnk_st_file *f, const char *name, size_t n)
{
    const lnk_st_tensor *t = lnk_st_get(f, name);
    if (!t)
        fail_msg("reference output lacks '%s'", name);
    assert_int_equal(t->dtype, LNK_DT_F64);
    assert_int_equal(t->numel, n);
    return t->data;
}

/* worst errors over all cases, for the summary line */
static double WORST[7];
static int N_NN;
static const char *WORST_AT[7];

static void note(int k, double e, const char *label)
{
    if (e > WORST[k] || !WORST_AT[k]) {
        WORST[k] = e;
        WORST_AT[k] = label;
    }
}

static int compare(int idx)
{
    const ref_case *rc = &CASES[idx];
    c_result *r = &RES[idx];
    size_t n = r->n;
    lnk_st_file *f;
    if (lnk_st_read(casefile(idx, "o"), &f) != LNK_OK)
        fail_msg("case %s: reference output: %s", rc->label, lnk_errmsg());
    double Lr = tensor(f, "loss", 1)[0];
    const double *gr = tensor(f, "grad", n), *hr = tensor(f, "hv", n),
                 *gvr = tensor(f, "gv", n), *fvr = tensor(f, "fv", n);
    double *fv = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        fv[i] = r->hv[i] - r->gv[i];
    double e[7] = {fabs(r->loss - Lr) / fabs(Lr), tu_relerr(r->g, gr, n, 1e-300),
                   tu_relerr(r->hv, hr, n, 1e-300), tu_relerr(r->gv, gvr, n, 1e-300),
                   tu_relerr(fv, fvr, n, 1e-300), -1, -1};
    const lnk_st_tensor *nl = lnk_st_get(f, "nn_loss");
    if (nl) {
        N_NN++;
        e[5] = fabs(r->loss - tensor(f, "nn_loss", 1)[0]) / fabs(Lr);
        e[6] = tu_relerr(r->g, tensor(f, "nn_grad", n), n, 1e-300);
    }
    char line[1024];
    int at = snprintf(line, sizeof line, "%-9s loss %.1e grad %.1e Hv %.1e Gv %.1e Fv %.1e",
                      rc->label, e[0], e[1], e[2], e[3], e[4]);
    if (nl)
        at += snprintf(line + at, sizeof line - at, " | torch.nn loss %.1e grad %.1e", e[5],
                       e[6]);
    at += snprintf(line + at, sizeof line - at, " |");
    for (int i = 0; i < rc->nkv && at < (int)sizeof line - 50; i++)
        at += snprintf(line + at, sizeof line - at, " %s", rc->kv[i]);
    print_message("%s\n", line);
    for (int k = 0; k < 7; k++)
        if (e[k] >= 0)
            note(k, e[k], rc->label);
    int ok = e[0] < 1e-13 && e[1] < 1e-12 && e[2] < 1e-12 && e[3] < 1e-12 && e[4] < 1e-12 &&
             (!nl || (e[5] < 1e-13 && e[6] < 1e-12));
    if (!ok)
        print_message("  ^ FAILS the tolerance (loss 1e-13, vectors 1e-12)\n");
    free(fv);
    lnk_st_free(f);
    return ok;
}

/* ------------------------------------------------------------------ tests */

static void test_reference_selftest(void **s)
{
    (void)s;
    need_torch();
    char *o;
    int st = tu_run(&o, "%s tests/test_ref_torch.py 2>&1 | tail -5", PY);
    int ok = st == 0 && strstr(o, " passed, 0 failed") != NULL;
    print_message("tests/test_ref_torch.py: %s", o);
    free(o);
    assert_true(ok);
}

static void test_against_reference(void **s)
{
    (void)s;
    need_torch();
    make_cases();
    char jobs[600];
    snprintf(jobs, sizeof jobs, "%s", tu_path("jobs.json"));
    FILE *f = fopen(jobs, "w");
    assert_non_null(f);
    fprintf(f, "[\n");
    for (int i = 0; i < NCASES; i++) {
        run_lnkit(i);
        fprintf(f, "%s{\"config\": \"%s\", ", i ? ",\n" : "", casefile(i, "c"));
        fprintf(f, "\"weights\": \"%s\", ", casefile(i, "w"));
        fprintf(f, "\"batch\": \"%s\", ", casefile(i, "b"));
        fprintf(f, "\"vector\": \"%s\", ", casefile(i, "v"));
        fprintf(f, "\"output\": \"%s\", \"ggn\": true, \"nn\": true}", casefile(i, "o"));
    }
    fprintf(f, "\n]\n");
    fclose(f);
    char *o;
    int st = tu_run(&o, "%s tests/ref_torch.py --threads 1 --jobs %s", PY, jobs);
    if (st != 0)
        fail_msg("ref_torch failed (%d): %s", st, o);
    free(o);
    int bad = 0;
    for (int i = 0; i < NCASES; i++)
        bad += !compare(i);
    static const char *const what[7] = {"loss", "grad", "H v", "G v", "F v", "torch.nn loss",
                                        "torch.nn grad"};
    print_message("%d configurations (%d also through torch.nn's modules); worst relative "
                  "error:\n", NCASES, N_NN);
    for (int k = 0; k < 7; k++)
        print_message("  %-14s %.2e (%s)\n", what[k], WORST[k], WORST_AT[k] ? WORST_AT[k] : "-");
    for (int i = 0; i < NCASES; i++) {
        free(RES[i].g);
        free(RES[i].hv);
        free(RES[i].gv);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reference_selftest),
                                       cmocka_unit_test(test_against_reference)};
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
