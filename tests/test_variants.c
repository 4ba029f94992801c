/* The placements and block parts of issue 32 as the model builds them, against
 * docs/MODEL.md §3, §5, §6 and §8 (the derivative checks of every variant are
 * in test_derivatives, test_hessian and test_ggn):
 *   1. tensor names and order of §6, written out here from the text;
 *   2. lnk_config_size (closed form) equals the layout for every variant;
 *   3. mix_ratio 0 is Pre-LN bit for bit (loss, gradient, H v); the layers of
 *      mix split at floor(rho L);
 *   4. DeepNet's constants (numbers computed by hand) and DeepNorm's init: beta
 *      times the Post-LN init on Wv, Wo, W1, W2 (W3), 1 elsewhere, Wo = I under
 *      theorem; learned position tables N(0, 0.02^2);
 *   5. the refused combinations, key errors, max_len, odd d, param_order
 *      (issue 30 item 12), saved files with the new keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "model/internal.h"

/* The layout's names against a list. */
static void check_names(const char *const *kv, const char *const *want)
{
    lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    int n = 0;
    while (want[n])
        n++;
    for (int i = 0; i < lay->n_tensors && i < n; i++)
        if (strcmp(lay->t[i].name, want[i]))
            fail_msg("%s ...: tensor %d is '%s', MODEL.md §6 says '%s'", kv[0], i,
                     lay->t[i].name, want[i]);
    assert_int_equal(lay->n_tensors, n);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

#define ATTN(p) p "wq", p "bq", p "wk", p "bk", p "wv", p "bv", p "wo", p "bo"
#define FFN(p) p "w1", p "b1", p "w2", p "b2"

static void test_names(void **s)
{
    (void)s;
    const char *peri[] = {"norm_pos=peri", "L=1", NULL};
    const char *peri_w[] = {"tgt_emb", ATTN("dec.0.attn."), "dec.0.norm1.g", "dec.0.norm1.b",
                            "dec.0.norm1_out.g", "dec.0.norm1_out.b", FFN("dec.0.ffn."),
                            "dec.0.norm2.g", "dec.0.norm2.b", "dec.0.norm2_out.g",
                            "dec.0.norm2_out.b", "dec.final_norm.g", "dec.final_norm.b",
                            "out.w", NULL};
    check_names(peri, peri_w);
    const char *out[] = {"norm_pos=out", "L=1", "norm=rmsnorm", "task=cls", NULL};
    const char *out_w[] = {"src_emb", ATTN("enc.0.attn."), "enc.0.norm1_out.g",
                           FFN("enc.0.ffn."), "enc.0.norm2_out.g", "enc.final_norm.g", "out.w",
                           NULL};
    check_names(out, out_w);
    const char *glu[] = {"activation=swiglu", "pos=learned", "bias=false", "L=1", NULL};
    const char *glu_w[] = {"tgt_emb", "tgt_pos", "dec.0.attn.wq", "dec.0.attn.wk",
                           "dec.0.attn.wv", "dec.0.attn.wo", "dec.0.norm1.g", "dec.0.ffn.w1",
                           "dec.0.ffn.w3", "dec.0.ffn.w2", "dec.0.norm2.g", "out.w", NULL};
    check_names(glu, glu_w);
    const char *s2s[] = {"task=seq2seq", "norm_pos=peri", "L=1", "pos=learned",
                         "activation=swiglu", "tie_output=true", NULL};
    const char *s2s_w[] = {"src_emb", "src_pos", "tgt_emb", "tgt_pos", ATTN("enc.0.attn."),
                           "enc.0.norm1.g", "enc.0.norm1.b", "enc.0.norm1_out.g",
                           "enc.0.norm1_out.b", "enc.0.ffn.w1", "enc.0.ffn.b1", "enc.0.ffn.w3",
                           "enc.0.ffn.b3", "enc.0.ffn.w2", "enc.0.ffn.b2", "enc.0.norm2.g",
                           "enc.0.norm2.b", "enc.0.norm2_out.g", "enc.0.norm2_out.b",
                           "enc.final_norm.g", "enc.final_norm.b", ATTN("dec.0.attn."),
                           "dec.0.norm1.g", "dec.0.norm1.b", "dec.0.norm1_out.g",
                           "dec.0.norm1_out.b", ATTN("dec.0.xattn."), "dec.0.norm2.g",
                           "dec.0.norm2.b", "dec.0.norm2_out.g", "dec.0.norm2_out.b",
                           "dec.0.ffn.w1", "dec.0.ffn.b1", "dec.0.ffn.w3", "dec.0.ffn.b3",
                           "dec.0.ffn.w2", "dec.0.ffn.b2", "dec.0.norm3.g", "dec.0.norm3.b",
                           "dec.0.norm3_out.g", "dec.0.norm3_out.b", "dec.final_norm.g",
                           "dec.final_norm.b", NULL};
    check_names(s2s, s2s_w);
    /* deepnorm and mix: today's names (mix: and a final norm; deepnorm: none) */
    const char *dn[] = {"norm_pos=deepnorm", "L=1", "norm=none", NULL};
    const char *dn_w[] = {"tgt_emb", ATTN("dec.0.attn."), FFN("dec.0.ffn."), "out.w", NULL};
    check_names(dn, dn_w);
    const char *mix[] = {"norm_pos=mix", "L=1", "mix_ratio=1", "bias=false", NULL};
    const char *mix_w[] = {"tgt_emb", "dec.0.attn.wq", "dec.0.attn.wk", "dec.0.attn.wv",
                           "dec.0.attn.wo", "dec.0.norm1.g", "dec.0.ffn.w1", "dec.0.ffn.w2",
                           "dec.0.norm2.g", "dec.final_norm.g", "out.w", NULL};
    check_names(mix, mix_w);
}

static void test_sizes(void **s)
{
    (void)s;
    tu_variant v[96];
    int n = tu_variants(v, 96, NULL);
    const char *sz[][5] = {{"d=8", "h=2", "L=3", "d_ff=5", NULL},
                           {"d=6", "h=3", "L_enc=2", "L_dec=1", NULL}};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            if (strstr(v[i].label, "pos=rope") && k == 1)
                continue; /* d / h = 2 is fine, but keep the sizes simple */
            lnk_config c = tu_variant_config(&v[i], sz[k]);
            lnk_model *m = lnk_model_alloc(&c);
            assert_non_null(m);
            double np, nt;
            lnk_config_size(&c, &np, &nt);
            if (np != (double)lnk_model_n_params(m) ||
                nt != (double)lnk_model_layout(m)->n_tensors)
                fail_msg("%s: closed form %.0f params %.0f tensors, layout %zu, %d", v[i].label,
                         np, nt, lnk_model_n_params(m), lnk_model_layout(m)->n_tensors);
            lnk_model_free(m);
            lnk_config_clear(&c);
        }
}

/* Loss, gradient and H v of a configuration at its init on tu_rows. */
static void eval_all(const char *const *kv, double *L, double **g, double **hv, size_t *n)
{
    lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    *n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * *n), *v = malloc(sizeof(double) * *n);
    *g = malloc(sizeof(double) * *n);
    *hv = malloc(sizeof(double) * *n);
    lnk_model_init_params(m, th);
    tu_randn(v, *n, 9);
    lnk_batch b;
    tu_rows(m, &b, 0, 4, 7, 8);
    lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
    assert_int_equal(lnk_model_hvp(ws, th, &b, v, *hv, L, *g), LNK_OK);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    free(th);
    free(v);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void test_mix(void **s)
{
    (void)s;
    const char *tasks[] = {"task=lm", "task=cls", "task=seq2seq"};
    for (int t = 0; t < 3; t++) {
        const char *pre[] = {tasks[t], "norm_pos=pre", "d=8", "L=3", "qk_norm=rmsnorm", NULL};
        const char *mix[] = {tasks[t], "norm_pos=mix", "mix_ratio=0", "d=8", "L=3",
                             "qk_norm=rmsnorm", NULL};
        double La, Lb, *ga, *gb, *ha, *hb;
        size_t na, nb;
        eval_all(pre, &La, &ga, &ha, &na);
        eval_all(mix, &Lb, &gb, &hb, &nb);
        assert_int_equal(na, nb);
        assert_true(La == Lb);
        assert_memory_equal(ga, gb, na * sizeof(double));
        assert_memory_equal(ha, hb, na * sizeof(double));
        free(ga), free(gb), free(ha), free(hb);
    }
    /* floor(rho L) Post-LN layers from the first, per stack */
    const char *kv[] = {"task=seq2seq", "norm_pos=mix", "mix_ratio=0.3", "L_enc=7", "L_dec=3",
                        NULL};
    lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
    lnk_model *m = lnk_model_alloc(&c);
    for (int k = 0; k < m->enc.n_units; k++) /* floor(2.1) = 2 */
        assert_int_equal(m->enc.u[k].post && m->enc.u[k].npost.on, m->enc.u[k].block < 2);
    for (int k = 0; k < m->dec.n_units; k++) { /* floor(0.9) = 0 */
        assert_false(m->dec.u[k].post);
        assert_true(m->dec.u[k].nin.on);
    }
    assert_true(m->enc.fg >= 0 && m->dec.fg >= 0);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static double tensor_at(const lnk_model *m, const double *th, const char *name, size_t k)
{
    int i = lnk_layout_find(lnk_model_layout(m), name);
    if (i < 0)
        fail_msg("no tensor %s", name);
    return th[lnk_model_layout(m)->t[i].offset + k];
}

static void test_deepnorm(void **s)
{
    (void)s;
    /* DeepNet's constants, computed by hand from §3 */
    struct { const char *task, *L1, *L2; double a[2], b[2]; } K[] = {
        {"task=lm", "L=6", "L=6", {0, 1.8612097182041991}, {0, 0.37991784282579627}},
        {"task=cls", "L=1", "L=1", {1.189207115002721, 0}, {0.5946035575013605, 0}},
        {"task=seq2seq", "L_enc=6", "L_dec=3", {1.3578222153480923, 1.7320508075688772},
         {0.5189928342859986, 0.408248290463863}},
    };
    for (int i = 0; i < 3; i++) {
        const char *kv[] = {K[i].task, K[i].L1, K[i].L2, "norm_pos=deepnorm", NULL};
        lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
        for (int st = 0; st < 2; st++) {
            if (K[i].a[st] == 0)
                continue;
            double a, b;
            lnk_config_deepnorm(&c, st, &a, &b);
            assert_true(fabs(a - K[i].a[st]) <= 1e-15 * a && fabs(b - K[i].b[st]) <= 1e-15 * b);
        }
        assert_true(c.deepnorm_alpha == -1 && c.deepnorm_beta == -1);
        lnk_config_clear(&c);
    }
    /* beta times the Post-LN init on Wv, Wo, W1, W3, W2 (each stack its own) */
    const char *inits[] = {"init=xavier", "init=xavier_normal", "init=theorem"};
    for (int ii = 0; ii < 3; ii++) {
        const char *post[] = {"task=seq2seq", "L_enc=2", "L_dec=3", "activation=swiglu",
                              inits[ii], NULL};
        const char *dn[] = {"task=seq2seq", "L_enc=2", "L_dec=3", "activation=swiglu",
                            inits[ii], "norm_pos=deepnorm", NULL};
        lnk_config cp = tu_variant_config(&(tu_variant){0}, post);
        lnk_config cd = tu_variant_config(&(tu_variant){0}, dn);
        lnk_model *mp = lnk_model_alloc(&cp), *md = lnk_model_alloc(&cd);
        const lnk_layout *lay = lnk_model_layout(mp);
        assert_int_equal(lay->n_tensors, lnk_model_layout(md)->n_tensors);
        size_t n = lnk_model_n_params(mp);
        double *tp = malloc(sizeof(double) * n), *td = malloc(sizeof(double) * n);
        lnk_model_init_params(mp, tp);
        lnk_model_init_params(md, td);
        double be = md->enc.beta, bd = md->dec.beta;
        for (int t = 0; t < lay->n_tensors; t++) {
            const char *nm = lay->t[t].name;
            size_t l = strlen(nm);
            int sc = (strstr(nm, "attn.wv") || strstr(nm, "attn.wo") || strstr(nm, "ffn.w")) &&
                     !(ii == 2 && !strcmp(nm + l - 3, ".wo"));
            double beta = sc ? (nm[0] == 'e' ? be : bd) : 1.0;
            for (size_t k = 0; k < lay->t[t].size; k++) {
                double a = tp[lay->t[t].offset + k], b = td[lay->t[t].offset + k];
                if (fabs(b - beta * a) > 1e-15 * fabs(a))
                    fail_msg("%s %s[%zu]: deepnorm %g, post %g, beta %g", inits[ii], nm, k, b,
                             a, beta);
            }
        }
        if (ii == 2) /* theorem: Wo = I stays */
            assert_true(tensor_at(md, td, "dec.1.xattn.wo", 0) == 1.0);
        free(tp), free(td);
        lnk_model_free(mp), lnk_model_free(md);
        lnk_config_clear(&cp), lnk_config_clear(&cd);
    }
}

static void test_learned_init(void **s)
{
    (void)s;
    const char *kv[] = {"pos=learned", "d=32", "max_len=300", "init=theorem", NULL};
    lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
    lnk_model *m = lnk_model_alloc(&c);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    const lnk_tensor_info *t = &lnk_model_layout(m)->t[lnk_layout_find(lnk_model_layout(m),
                                                                        "tgt_pos")];
    assert_int_equal(t->shape[0], 300);
    double s1 = 0, s2 = 0, N = (double)t->size;
    for (size_t k = 0; k < t->size; k++)
        s1 += th[t->offset + k], s2 += th[t->offset + k] * th[t->offset + k];
    double var = s2 / N - (s1 / N) * (s1 / N), se = 0.02 * 0.02 * sqrt(2.0 / N);
    /* N = 9600 draws: the variance within 5 standard errors of 0.02^2, the mean of 0 */
    assert_true(fabs(var - 0.0004) < 5 * se);
    assert_true(fabs(s1 / N) < 5 * 0.02 / sqrt(N));
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* The error of a finalize on kv, which must name each of the strings of want. */
static void refused(const char *const *kv, const char *w1, const char *w2)
{
    lnk_config c;
    lnk_config_default(&c);
    int st = LNK_OK;
    for (int i = 0; kv[i] && st == LNK_OK; i++) {
        char key[64];
        const char *eq = strchr(kv[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv[i]), kv[i]);
        st = lnk_config_set(&c, key, eq + 1);
    }
    if (st == LNK_OK)
        st = lnk_config_finalize(&c);
    if (st == LNK_OK)
        fail_msg("%s ...: accepted", kv[0]);
    const char *msg = lnk_errmsg();
    if (!strstr(msg, w1) || (w2 && !strstr(msg, w2)))
        fail_msg("%s ...: message \"%s\" lacks \"%s\" / \"%s\"", kv[0], msg, w1, w2 ? w2 : "");
    lnk_config_clear(&c);
}

static void test_config_rules(void **s)
{
    (void)s;
    refused((const char *[]){"pos=rope", "d=6", "h=2", NULL}, "'pos'", "d / h = 3");
    refused((const char *[]){"d=7", "h=1", NULL}, "key 'd'", "even");
    refused((const char *[]){"mix_ratio=1.5", NULL}, "--mix-ratio", "from 0 to 1");
    refused((const char *[]){"input_scale=0", NULL}, "--input-scale", "> 0");
    refused((const char *[]){"deepnorm_beta=-1", NULL}, "--deepnorm-beta", "> 0");
    refused((const char *[]){"activation=silu", NULL}, "--activation", "swiglu");
    refused((const char *[]){"pos=alibi", NULL}, "--pos", "rope");
    refused((const char *[]){"max_len=0", NULL}, "--max-len", ">= 1");
    refused((const char *[]){"bias=maybe", NULL}, "--bias", "true");
    /* odd d with learned or no positions runs */
    const char *odd[] = {"d=5", "h=1", "pos=learned", "norm_pos=peri", NULL};
    double L, *g, *hv;
    size_t n;
    eval_all(odd, &L, &g, &hv, &n);
    assert_true(isfinite(L));
    free(g), free(hv);
    /* a batch longer than max_len */
    const char *kv[] = {"pos=learned", "max_len=6", NULL};
    lnk_config c = tu_variant_config(&(tu_variant){0}, kv);
    lnk_model *m = lnk_model_alloc(&c);
    lnk_batch b;
    tu_rows(m, &b, 0, 2, 7, 8); /* the decoder reads 7 positions */
    assert_int_equal(lnk_batch_check(m, &b), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "max_len = 6"));
    lnk_batch_free(&b);
    tu_rows(m, &b, 0, 2, 7, 7);
    assert_int_equal(lnk_batch_check(m, &b), LNK_OK);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* param_order is checked name by name (MODEL.md §8; it was cleared before). */
static void test_param_order(void **s)
{
    (void)s;
    lnk_config c = tu_config("L=1", NULL);
    double np, nt;
    lnk_config_size(&c, &np, &nt);
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "{\"L\": 1, \"param_order\": [");
    for (int i = 0; i < (int)nt; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\"made_up_%d\"", i ? ", " : "", i);
    snprintf(text + len, sizeof text - len, "]}");
    lnk_config f;
    lnk_config_default(&f);
    assert_int_equal(lnk_config_parse_json(&f, text, "invented.json"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&f), LNK_OK);
    assert_null(lnk_model_alloc(&f));
    assert_non_null(strstr(lnk_errmsg(), "'param_order': entry 0 is 'made_up_0'"));
    lnk_config_clear(&f);
    /* the true names pass */
    lnk_model *m = lnk_model_alloc(&c);
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc(sizeof(char *) * lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    char *js = lnk_config_to_json(&c, lay->n_params, names, lay->n_tensors);
    lnk_config_default(&f);
    assert_int_equal(lnk_config_parse_json(&f, js, "saved.json"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&f), LNK_OK);
    lnk_model *m2 = lnk_model_alloc(&f);
    assert_non_null(m2);
    lnk_model_free(m2);
    free(js);
    free(names);
    lnk_model_free(m);
    lnk_config_clear(&f);
    lnk_config_clear(&c);
}

/* Saved files: every new key, DeepNorm's derived keys as null, read back. */
static void test_saved(void **s)
{
    (void)s;
    lnk_config c = tu_config("norm_pos=deepnorm", "activation=swiglu", "pos=rope", "bias=false",
                             "max_len=77", "mix_ratio=0.75", "input_scale=0.3", "d=8", NULL);
    char *js = lnk_config_to_json(&c, 0, NULL, 0);
    assert_non_null(strstr(js, "\"deepnorm_alpha\": null"));
    assert_non_null(strstr(js, "\"activation\": \"swiglu\""));
    assert_non_null(strstr(js, "\"bias\": false"));
    lnk_config r;
    lnk_config_default(&r);
    assert_int_equal(lnk_config_parse_json(&r, js, "saved"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&r), LNK_OK);
    assert_true(r.norm_pos == LNK_POS_DEEPNORM && r.activation == LNK_ACT_SWIGLU &&
                r.pos == LNK_PE_ROPE && !r.bias && r.max_len == 77 && r.mix_ratio == 0.75 &&
                r.input_scale == 0.3 && r.deepnorm_alpha == -1 && r.deepnorm_beta == -1);
    free(js);
    /* a set DeepNorm key is kept; one equal to DeepNet's value for the file's L follows L */
    lnk_config d;
    lnk_config_default(&d);
    assert_int_equal(lnk_config_parse_json(&d, "{\"norm_pos\": \"deepnorm\", \"L\": 2, "
                                               "\"deepnorm_alpha\": 1.4142135623730951, "
                                               "\"deepnorm_beta\": 0.25}", "f"), LNK_OK);
    assert_int_equal(lnk_config_set(&d, "L", "6"), LNK_OK);
    assert_int_equal(lnk_config_finalize(&d), LNK_OK);
    double a, b;
    lnk_config_deepnorm(&d, 1, &a, &b);
    assert_true(fabs(a - 1.8612097182041991) <= 1e-15 && b == 0.25);
    lnk_config_clear(&d);
    lnk_config_clear(&r);
    lnk_config_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),       cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_mix),         cmocka_unit_test(test_deepnorm),
        cmocka_unit_test(test_learned_init), cmocka_unit_test(test_config_rules),
        cmocka_unit_test(test_param_order), cmocka_unit_test(test_saved),
    };
    return cmocka_run_group_tests_name("variants", tests, NULL, NULL);
}
