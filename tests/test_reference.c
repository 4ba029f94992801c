/* lnkit against an independent implementation of docs/MODEL.md: tests/ref_torch.py
 * (PyTorch, float64, written from docs/MODEL.md alone; H v by double backward).
 * For each configuration: weights from lnk_model_init_params (with gains and
 * biases perturbed so that every tensor matters), a batch with padding, a
 * random v; loss, gradient and H v must agree to rounding.  Skipped with a
 * message when Debian's python3-torch is not installed (make deps-torch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const char *PY = "/usr/bin/python3";

static int have_torch(void)
{
    return tu_run(NULL, "%s -c 'import torch, numpy' >/dev/null 2>&1", PY) == 0;
}

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

static const double *tensor(const lnk_st_file *f, const char *name, size_t n)
{
    const lnk_st_tensor *t = lnk_st_get(f, name);
    if (!t)
        fail_msg("reference output lacks '%s'", name);
    assert_int_equal(t->dtype, LNK_DT_F64);
    assert_int_equal(t->numel, n);
    return t->data;
}

static void compare(const char *const *kv, int nkv, int idx)
{
    char *args[16];
    for (int i = 0; i < 16; i++)
        args[i] = NULL;
    for (int i = 0; i < nkv; i++)
        args[i] = (char *)kv[i];
    lnk_config c = tu_config("d=8", "h=2", "L=2", "V=11", "seed=5", args[0], args[1], args[2],
                             args[3], args[4], args[5], args[6], args[7], NULL);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *g = malloc(sizeof(double) * n), *hv = malloc(sizeof(double) * n), L;
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
    assert_int_equal(lnk_model_hvp(ws, th, &b, v, hv, &L, g), LNK_OK);

    char name[64];
    snprintf(name, sizeof name, "c%d", idx);
    char cfg[600], w[600], bt[600], vec[600], out[600];
    snprintf(cfg, sizeof cfg, "%s", tu_path("c.json"));
    snprintf(w, sizeof w, "%s", tu_path("w.safetensors"));
    snprintf(bt, sizeof bt, "%s", tu_path("b.safetensors"));
    snprintf(vec, sizeof vec, "%s", tu_path("v.safetensors"));
    snprintf(out, sizeof out, "%s", tu_path("ref.safetensors"));
    const char **names = malloc(sizeof(char *) * lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    assert_int_equal(lnk_config_save_json(&c, cfg, n, names, lay->n_tensors), LNK_OK);
    assert_int_equal(lnk_weights_save(w, m, th), LNK_OK);
    assert_int_equal(lnk_batch_save(bt, &b), LNK_OK);
    assert_int_equal(lnk_vector_save(vec, m, v, LNK_VEC_NAMED), LNK_OK);
    char *o;
    int st = tu_run(&o, "%s tests/ref_torch.py --threads 1 --config %s --weights %s --batch %s "
                    "--vector %s -o %s", PY, cfg, w, bt, vec, out);
    if (st != 0)
        fail_msg("ref_torch failed (%d): %s", st, o);
    free(o);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(out, &f), LNK_OK);
    double Lr = tensor(f, "loss", 1)[0];
    const double *gr = tensor(f, "grad", n), *hr = tensor(f, "hv", n);
    double el = fabs(L - Lr) / fabs(Lr), eg = tu_relerr(g, gr, n, 1e-300),
           eh = tu_relerr(hv, hr, n, 1e-300);
    print_message("rel. diff: loss %.2e  grad %.2e  H v %.2e  for", el, eg, eh);
    for (int i = 0; i < nkv; i++)
        print_message("  %s", kv[i]);
    print_message("\n");
    assert_true(el < 1e-13);
    assert_true(eg < 1e-11);
    assert_true(eh < 1e-11);
    lnk_st_free(f);
    free(names);
    free(pert);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    free(th);
    free(v);
    free(g);
    free(hv);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void test_against_reference(void **s)
{
    (void)s;
    if (!have_torch()) {
        print_message("SKIPPED: Debian's python3-torch is not installed (bash tools/deps.sh "
                      "python3-torch python3-numpy): the cross-implementation check did not run\n");
        skip();
    }
    static const char *const cases[][8] = {
        {"task=lm", "norm_pos=post"},
        {"task=lm", "norm_pos=pre", "qk_norm=layernorm"},
        {"task=lm", "norm_pos=pre", "norm=rmsnorm", "qk_norm=rmsnorm", "label_smoothing=0.1"},
        {"task=lm", "norm_pos=post", "norm=none", "tie_output=true"},
        {"task=lm", "norm_pos=post", "init=theorem", "h=1", "d_ff=8"},
        {"task=cls", "norm_pos=post", "n_classes=5", "label_smoothing=0.2"},
        {"task=cls", "norm_pos=pre", "norm=rmsnorm", "tie_output=true"},
        {"task=seq2seq", "norm_pos=post", "L_enc=1", "V_src=13"},
        {"task=seq2seq", "norm_pos=pre", "qk_norm=layernorm", "tie_output=true",
         "label_smoothing=0.1"},
        {"task=seq2seq", "norm_pos=pre", "norm=none", "qk_norm=rmsnorm", "init=xavier_normal"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int nkv = 0;
        while (nkv < 8 && cases[i][nkv])
            nkv++;
        compare(cases[i], nkv, (int)i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_reference)};
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
