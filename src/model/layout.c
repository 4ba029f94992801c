/* The model's structure and its flat parameter layout (MODEL.md §6): the
 * units of every stack with their norms and tensors, in the order of §6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "model/internal.h"

typedef struct {
    lnk_layout *lay;
    int cap;
    const lnk_config *c;
    int oom;
} builder;

static int add(builder *b, const char *name, int ndim, int s0, int s1)
{
    lnk_layout *l = b->lay;
    if (l->n_tensors == b->cap) {
        int nc = b->cap ? 2 * b->cap : 64;
        lnk_tensor_info *t = realloc(l->t, sizeof *t * nc);
        if (!t) {
            b->oom = 1;
            return -1;
        }
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

/* Tensor "<pre>.<l>.<suf>" (a bias only with bias = true: -1 otherwise). */
static int addl(builder *b, int ndim, int s0, int s1, const char *pre, int l, const char *suf)
{
    char name[LNK_NAME_MAX];
    snprintf(name, sizeof name, "%s.%d.%s", pre, l, suf);
    return add(b, name, ndim, s0, s1);
}

static int addb(builder *b, int n, const char *pre, int l, const char *suf)
{
    return b->c->bias ? addl(b, 1, n, 0, pre, l, suf) : -1;
}

/* Norm tensors "<pre>.<l>.<nn>.{g,b}" as the norm type (and bias) has them;
 * with the norm type none the slot stays the identity. */
static void add_norm(builder *b, const char *pre, int l, const char *nn, lnk_norm_ref *r)
{
    const lnk_config *c = b->c;
    r->on = 0;
    r->g = r->b = -1;
    if (c->norm == LNK_NORM_NONE)
        return;
    char s[32];
    r->on = 1;
    snprintf(s, sizeof s, "%s.g", nn);
    r->g = addl(b, 1, c->d, 0, pre, l, s);
    if (c->norm == LNK_NORM_LAYERNORM && c->bias) {
        snprintf(s, sizeof s, "%s.b", nn);
        r->b = addl(b, 1, c->d, 0, pre, l, s);
    }
}

static void add_attn(builder *b, const char *pre, int l, const char *an, lnk_unit *u)
{
    int d = b->c->d;
    int *w[8] = {&u->wq, &u->bq, &u->wk, &u->bk, &u->wv, &u->bv, &u->wo, &u->bo};
    const char *nm[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
    for (int i = 0; i < 8; i++) {
        char s[32];
        snprintf(s, sizeof s, "%s.%s", an, nm[i]);
        *w[i] = i % 2 == 0 ? addl(b, 2, d, d, pre, l, s) : addb(b, d, pre, l, s);
    }
}

static void add_ffn(builder *b, const char *pre, int l, lnk_unit *u)
{
    const lnk_config *c = b->c;
    u->w1 = addl(b, 2, c->d, c->d_ff, pre, l, "ffn.w1");
    u->b1 = addb(b, c->d_ff, pre, l, "ffn.b1");
    u->w3 = u->b3 = -1;
    if (c->activation == LNK_ACT_SWIGLU) {
        u->w3 = addl(b, 2, c->d, c->d_ff, pre, l, "ffn.w3");
        u->b3 = addb(b, c->d_ff, pre, l, "ffn.b3");
    }
    u->w2 = addl(b, 2, c->d_ff, c->d, pre, l, "ffn.w2");
    u->b2 = addb(b, c->d, pre, l, "ffn.b2");
}

/* The unit's norms (MODEL.md §3, §6): "normK" (N_post or N_in), then
 * "normK_out" (N_out). */
static void add_unit_norms(builder *b, const char *pre, int l, const char *nn, int post,
                           lnk_unit *u)
{
    lnk_norm_pos np = b->c->norm_pos;
    u->nin = u->nout = u->npost = (lnk_norm_ref){0, -1, -1};
    u->post = post;
    if (np != LNK_POS_OUT)
        add_norm(b, pre, l, nn, post ? &u->npost : &u->nin);
    if (np == LNK_POS_PERI || np == LNK_POS_OUT) {
        char s[32];
        snprintf(s, sizeof s, "%s_out", nn);
        add_norm(b, pre, l, s, &u->nout);
    }
}

/* Is layer l of a stack of L layers Post-LN-like (MODEL.md §3)? */
static int layer_post(const lnk_config *c, int l, int L)
{
    switch (c->norm_pos) {
    case LNK_POS_POST:
    case LNK_POS_DEEPNORM: return 1;
    case LNK_POS_MIX: return l < (int)floor(c->mix_ratio * (double)L);
    default: return 0;
    }
}

static int build_stack(builder *b, const char *pre, int L, int causal, int cross, int which,
                       lnk_stack *s)
{
    const lnk_config *c = b->c;
    int per = cross ? 3 : 2;
    s->L = L;
    s->causal = causal;
    s->n_units = L * per;
    s->u = calloc((size_t)s->n_units, sizeof *s->u);
    if (!s->u)
        return LNK_ENOMEM;
    lnk_config_deepnorm(c, which, &s->alpha, &s->beta);
    double alpha = c->norm_pos == LNK_POS_DEEPNORM ? s->alpha : 1.0;
    for (int l = 0; l < L; l++) {
        lnk_unit *ua = &s->u[l * per], *ux = cross ? &s->u[l * per + 1] : NULL,
                 *uf = &s->u[l * per + per - 1];
        int post = layer_post(c, l, L);
        ua->kind = UNIT_SELF_ATTN;
        ua->causal = causal;
        ua->rope = c->pos == LNK_PE_ROPE;
        add_attn(b, pre, l, "attn", ua);
        add_unit_norms(b, pre, l, "norm1", post, ua);
        if (ux) {
            ux->kind = UNIT_CROSS_ATTN;
            add_attn(b, pre, l, "xattn", ux);
            add_unit_norms(b, pre, l, "norm2", post, ux);
        }
        uf->kind = UNIT_FFN;
        add_ffn(b, pre, l, uf);
        add_unit_norms(b, pre, l, cross ? "norm3" : "norm2", post, uf);
        for (int k = l * per; k < (l + 1) * per; k++) {
            s->u[k].block = l;
            s->u[k].alpha = alpha;
        }
    }
    s->fg = s->fb = -1;
    if (lnk_has_final_norm(c)) {
        char nm[LNK_NAME_MAX];
        snprintf(nm, sizeof nm, "%s.final_norm.g", pre);
        s->fg = add(b, nm, 1, c->d, 0);
        if (c->norm == LNK_NORM_LAYERNORM && c->bias) {
            snprintf(nm, sizeof nm, "%s.final_norm.b", pre);
            s->fb = add(b, nm, 1, c->d, 0);
        }
    }
    return LNK_OK;
}

/* The read-only keys of a loaded file (cfg: the caller's configuration, which
 * holds them) against the layout (MODEL.md §8). */
static int check_file_keys(const lnk_config *c, const lnk_model *m)
{
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

/* An embedding and, with pos = learned, its position table right after it. */
static void add_embedding(builder *b, const char *name, const char *pos, int V, lnk_stack *s)
{
    const lnk_config *c = b->c;
    s->emb = add(b, name, 2, V, c->d);
    s->pos = c->pos == LNK_PE_LEARNED ? add(b, pos, 2, c->max_len, c->d) : -1;
}

static int valid(const lnk_config *c)
{
    return c->d_ff >= 1 && c->L_enc >= 1 && c->L_dec >= 1 && c->V_src >= 1 && c->V_tgt >= 1 &&
           c->n_classes >= 1 && c->d >= 2 && c->h >= 1 && c->d % c->h == 0 &&
           c->max_len >= 1 && (c->pos != LNK_PE_SINUSOIDAL || c->d % 2 == 0) &&
           (c->pos != LNK_PE_ROPE || (c->d / c->h) % 2 == 0);
}

lnk_model *lnk_model_alloc(const lnk_config *cfg)
{
    lnk_model *m = calloc(1, sizeof *m);
    if (!m) {
        lnk_error(LNK_ENOMEM, "out of memory allocating the model");
        return NULL;
    }
    m->cfg = *cfg;
    m->cfg.file_param_order = NULL; /* not owned: checked below from cfg */
    const lnk_config *c = cfg;
    if (!valid(c)) {
        lnk_error(LNK_EINVAL, "lnk_model_alloc: configuration not finalized or invalid "
                              "(call lnk_config_finalize first)");
        free(m);
        return NULL;
    }
    builder b = {&m->lay, 0, c, 0};
    m->has_enc = c->task != LNK_TASK_LM;
    m->has_dec = c->task != LNK_TASK_CLS;
    m->enc.emb = m->dec.emb = m->enc.pos = m->dec.pos = -1;
    m->enc.fg = m->enc.fb = m->dec.fg = m->dec.fb = -1;
    if (m->has_enc)
        add_embedding(&b, "src_emb", "src_pos", c->V_src, &m->enc);
    if (m->has_dec)
        add_embedding(&b, "tgt_emb", "tgt_pos", c->V_tgt, &m->dec);
    int st = LNK_OK;
    if (m->has_enc)
        st = build_stack(&b, "enc", c->L_enc, 0, 0, 0, &m->enc);
    if (st == LNK_OK && m->has_dec)
        st = build_stack(&b, "dec", c->L_dec, 1, c->task == LNK_TASK_SEQ2SEQ, 1, &m->dec);
    m->n_out = c->task == LNK_TASK_CLS ? c->n_classes : c->V_tgt;
    m->out_w = m->out_tied = -1;
    if (c->tie_output)
        m->out_tied = c->task == LNK_TASK_CLS ? m->enc.emb : m->dec.emb;
    else if (st == LNK_OK)
        m->out_w = add(&b, "out.w", 2, c->d, m->n_out);
    if (c->tie_output && c->task == LNK_TASK_CLS && c->n_classes != c->V_src) {
        lnk_error(LNK_EINVAL, "config: tie_output with task cls needs n_classes (%d) == V (%d)",
                  c->n_classes, c->V_src);
        lnk_model_free(m);
        return NULL;
    }
    if (st != LNK_OK || !m->lay.t || b.oom) {
        lnk_error(LNK_ENOMEM, "out of memory building the parameter layout");
        lnk_model_free(m);
        return NULL;
    }
    if (check_file_keys(cfg, m) != LNK_OK) {
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

void lnk_model_set_progress(lnk_model *m, lnk_pass_progress_fn fn, void *ctx)
{
    m->progress = fn;
    m->progress_ctx = ctx;
}

int lnk_layout_find(const lnk_layout *lay, const char *name)
{
    for (int i = 0; i < lay->n_tensors; i++)
        if (strcmp(lay->t[i].name, name) == 0)
            return i;
    return -1;
}
