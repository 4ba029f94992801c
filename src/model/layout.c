/* The model's structure and its flat parameter layout (MODEL.md §6), and the
 * seeded initialisation (MODEL.md §5). */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "model/internal.h"

typedef struct {
    lnk_layout *lay;
    int cap;
} builder;

static int add(builder *b, const char *name, int ndim, int s0, int s1)
{
    lnk_layout *l = b->lay;
    if (l->n_tensors == b->cap) {
        int nc = b->cap ? 2 * b->cap : 64;
        lnk_tensor_info *t = realloc(l->t, sizeof *t * nc);
        if (!t)
            return -1;
        l->t = t;
        b->cap = nc;
    }
    lnk_tensor_info *t = &l->t[l->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = s0;
    t->shape[1] = ndim == 2 ? s1 : 0;
    t->size = (size_t)s0 * (ndim == 2 ? (size_t)s1 : 1);
    t->offset = l->n_params;
    l->n_params += t->size;
    return l->n_tensors++;
}

static int addf(builder *b, int ndim, int s0, int s1, const char *fmt, const char *pre, int l,
                const char *suf)
{
    char name[LNK_NAME_MAX];
    snprintf(name, sizeof name, fmt, pre, l, suf);
    return add(b, name, ndim, s0, s1);
}

/* Norm tensors "<pre>.<l>.<norm>.{g,b}" as the norm type has them. */
static void add_norm(builder *b, const lnk_config *c, const char *pre, int l, const char *nn,
                     int *g, int *bb)
{
    *g = *bb = -1;
    if (c->norm == LNK_NORM_NONE)
        return;
    char s[32];
    snprintf(s, sizeof s, "%s.g", nn);
    *g = addf(b, 1, c->d, 0, "%s.%d.%s", pre, l, s);
    if (c->norm == LNK_NORM_LAYERNORM) {
        snprintf(s, sizeof s, "%s.b", nn);
        *bb = addf(b, 1, c->d, 0, "%s.%d.%s", pre, l, s);
    }
}

static void add_attn(builder *b, const lnk_config *c, const char *pre, int l, const char *an,
                     lnk_unit *u)
{
    int d = c->d;
    int *w[8] = {&u->wq, &u->bq, &u->wk, &u->bk, &u->wv, &u->bv, &u->wo, &u->bo};
    const char *nm[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
    for (int i = 0; i < 8; i++) {
        char s[32];
        snprintf(s, sizeof s, "%s.%s", an, nm[i]);
        *w[i] = addf(b, (i % 2 == 0) ? 2 : 1, d, d, "%s.%d.%s", pre, l, s);
    }
}

static void add_ffn(builder *b, const lnk_config *c, const char *pre, int l, lnk_unit *u)
{
    u->w1 = addf(b, 2, c->d, c->d_ff, "%s.%d.%s", pre, l, "ffn.w1");
    u->b1 = addf(b, 1, c->d_ff, 0, "%s.%d.%s", pre, l, "ffn.b1");
    u->w2 = addf(b, 2, c->d_ff, c->d, "%s.%d.%s", pre, l, "ffn.w2");
    u->b2 = addf(b, 1, c->d, 0, "%s.%d.%s", pre, l, "ffn.b2");
}

static int build_stack(builder *b, const lnk_config *c, const char *pre, int L, int causal,
                       int cross, lnk_stack *s)
{
    int per = cross ? 3 : 2;
    s->L = L;
    s->causal = causal;
    s->n_units = L * per;
    s->u = calloc((size_t)s->n_units, sizeof *s->u);
    if (!s->u)
        return LNK_ENOMEM;
    for (int l = 0; l < L; l++) {
        lnk_unit *ua = &s->u[l * per], *ux = cross ? &s->u[l * per + 1] : NULL,
                 *uf = &s->u[l * per + per - 1];
        memset(ua, 0, sizeof *ua);
        ua->kind = UNIT_SELF_ATTN;
        ua->causal = causal;
        ua->block = l;
        add_attn(b, c, pre, l, "attn", ua);
        add_norm(b, c, pre, l, "norm1", &ua->ng, &ua->nb);
        if (ux) {
            ux->kind = UNIT_CROSS_ATTN;
            ux->block = l;
            add_attn(b, c, pre, l, "xattn", ux);
            add_norm(b, c, pre, l, "norm2", &ux->ng, &ux->nb);
        }
        uf->kind = UNIT_FFN;
        uf->block = l;
        add_ffn(b, c, pre, l, uf);
        add_norm(b, c, pre, l, cross ? "norm3" : "norm2", &uf->ng, &uf->nb);
    }
    s->fg = s->fb = -1;
    if (c->norm_pos == LNK_POS_PRE && c->norm != LNK_NORM_NONE) {
        char nm[LNK_NAME_MAX];
        snprintf(nm, sizeof nm, "%s.final_norm.g", pre);
        s->fg = add(b, nm, 1, c->d, 0);
        if (c->norm == LNK_NORM_LAYERNORM) {
            snprintf(nm, sizeof nm, "%s.final_norm.b", pre);
            s->fb = add(b, nm, 1, c->d, 0);
        }
    }
    return LNK_OK;
}

static int check_file_keys(const lnk_model *m)
{
    const lnk_config *c = &m->cfg;
    if (c->file_n_params >= 0 && (size_t)c->file_n_params != m->lay.n_params)
        return lnk_error(LNK_EMISMATCH,
                         "config key 'n_params': the file says %lld but this configuration "
                         "has %zu parameters",
                         c->file_n_params, m->lay.n_params);
    if (c->file_param_order) {
        if (c->file_n_param_order != m->lay.n_tensors)
            return lnk_error(LNK_EMISMATCH,
                             "config key 'param_order': the file lists %d tensors but this "
                             "configuration has %d",
                             c->file_n_param_order, m->lay.n_tensors);
        for (int i = 0; i < m->lay.n_tensors; i++)
            if (strcmp(c->file_param_order[i], m->lay.t[i].name) != 0)
                return lnk_error(LNK_EMISMATCH,
                                 "config key 'param_order': entry %d is '%s' but this "
                                 "configuration has '%s' there",
                                 i, c->file_param_order[i], m->lay.t[i].name);
    }
    return LNK_OK;
}

lnk_model *lnk_model_alloc(const lnk_config *cfg)
{
    lnk_model *m = calloc(1, sizeof *m);
    if (!m) {
        lnk_error(LNK_ENOMEM, "out of memory allocating the model");
        return NULL;
    }
    m->cfg = *cfg;
    m->cfg.file_param_order = NULL; /* not owned */
    const lnk_config *c = cfg;
    if (c->d_ff < 1 || c->L_enc < 1 || c->L_dec < 1 || c->V_src < 1 || c->V_tgt < 1 ||
        c->n_classes < 1 || c->d < 2 || c->h < 1 || c->d % c->h || c->d % 2) {
        lnk_error(LNK_EINVAL, "lnk_model_alloc: configuration not finalized or invalid "
                              "(call lnk_config_finalize first)");
        free(m);
        return NULL;
    }
    builder b = {&m->lay, 0};
    int d = c->d;
    m->has_enc = c->task != LNK_TASK_LM;
    m->has_dec = c->task != LNK_TASK_CLS;
    m->enc.emb = m->dec.emb = -1;
    m->enc.fg = m->enc.fb = m->dec.fg = m->dec.fb = -1;
    if (m->has_enc)
        m->enc.emb = add(&b, "src_emb", 2, c->V_src, d);
    if (m->has_dec)
        m->dec.emb = add(&b, "tgt_emb", 2, c->V_tgt, d);
    int st = LNK_OK;
    if (m->has_enc)
        st = build_stack(&b, c, "enc", c->L_enc, 0, 0, &m->enc);
    if (st == LNK_OK && m->has_dec)
        st = build_stack(&b, c, "dec", c->L_dec, 1, c->task == LNK_TASK_SEQ2SEQ, &m->dec);
    m->n_out = c->task == LNK_TASK_CLS ? c->n_classes : c->V_tgt;
    m->out_w = m->out_tied = -1;
    if (c->tie_output)
        m->out_tied = c->task == LNK_TASK_CLS ? m->enc.emb : m->dec.emb;
    else if (st == LNK_OK)
        m->out_w = add(&b, "out.w", 2, d, m->n_out);
    if (c->tie_output && c->task == LNK_TASK_CLS && c->n_classes != c->V_src) {
        lnk_error(LNK_EINVAL, "config: tie_output with task cls needs n_classes (%d) == V (%d)",
                  c->n_classes, c->V_src);
        lnk_model_free(m);
        return NULL;
    }
    if (st != LNK_OK || !m->lay.t) {
        lnk_error(LNK_ENOMEM, "out of memory building the parameter layout");
        lnk_model_free(m);
        return NULL;
    }
    if (check_file_keys(m) != LNK_OK) {
        lnk_model_free(m);
        return NULL;
    }
    return m;
}

void lnk_model_free(lnk_model *m)
{
    if (!m)
        return;
    free(m->lay.t);
    free(m->enc.u);
    free(m->dec.u);
    free(m);
}

const lnk_config *lnk_model_config(const lnk_model *m) { return &m->cfg; }
const lnk_layout *lnk_model_layout(const lnk_model *m) { return &m->lay; }
size_t lnk_model_n_params(const lnk_model *m) { return m->lay.n_params; }

int lnk_layout_find(const lnk_layout *lay, const char *name)
{
    for (int i = 0; i < lay->n_tensors; i++)
        if (strcmp(lay->t[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- initialisation ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int lnk_model_init_params(const lnk_model *m, double *theta)
{
    const lnk_config *c = &m->cfg;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return lnk_error(LNK_ENOMEM, "out of memory allocating the random number generator");
    for (int i = 0; i < m->lay.n_tensors; i++) {
        const lnk_tensor_info *t = &m->lay.t[i];
        double *x = theta + t->offset;
        /* Each tensor has its own stream: seed = mix(seed, name). mt19937 maps
         * seed 0 to its default seed, so a mixed value is never 0 in practice. */
        unsigned long s = (unsigned long)splitmix64(c->seed ^ fnv1a(t->name));
        gsl_rng_set(r, s ? s : 1);
        int is_emb = strcmp(t->name, "src_emb") == 0 || strcmp(t->name, "tgt_emb") == 0;
        int is_gain = ends_with(t->name, ".g");
        if (t->ndim == 1) {
            for (size_t k = 0; k < t->size; k++)
                x[k] = is_gain ? 1.0 : 0.0;
            continue;
        }
        if (is_emb) {
            double sd = sqrt(1.0 / c->d);
            for (size_t k = 0; k < t->size; k++)
                x[k] = gsl_ran_gaussian(r, sd);
            continue;
        }
        int in = t->shape[0], out = t->shape[1];
        int attn = strstr(t->name, "attn.") != NULL; /* attn.* and xattn.* */
        if (c->init == LNK_INIT_THEOREM && attn &&
            (ends_with(t->name, ".wq") || ends_with(t->name, ".wk"))) {
            memset(x, 0, sizeof(double) * t->size);
        } else if (c->init == LNK_INIT_THEOREM && attn && ends_with(t->name, ".wo")) {
            memset(x, 0, sizeof(double) * t->size);
            for (int k = 0; k < in && k < out; k++)
                x[(size_t)k * out + k] = 1.0;
        } else if (c->init == LNK_INIT_XAVIER) {
            double a = sqrt(6.0 / (in + out));
            for (size_t k = 0; k < t->size; k++)
                x[k] = a * (2.0 * gsl_rng_uniform(r) - 1.0);
        } else { /* xavier_normal, and theorem's other matrices */
            double sd = sqrt(2.0 / (in + out));
            for (size_t k = 0; k < t->size; k++)
                x[k] = gsl_ran_gaussian(r, sd);
        }
    }
    gsl_rng_free(r);
    return LNK_OK;
}

int lnk_params_check_finite(const lnk_model *m, const double *theta, const char *what)
{
    for (int i = 0; i < m->lay.n_tensors; i++) {
        const lnk_tensor_info *t = &m->lay.t[i];
        for (size_t k = 0; k < t->size; k++)
            if (!isfinite(theta[t->offset + k]))
                return lnk_error(LNK_ENONFINITE, "%s: tensor '%s' element %zu is %g (expected a "
                                 "finite number)", what, t->name, k, theta[t->offset + k]);
    }
    return LNK_OK;
}

double lnk_tensor_norm(const lnk_model *m, const double *g, int i)
{
    const lnk_tensor_info *t = &m->lay.t[i];
    return lnk_norm2(g + t->offset, t->size);
}
