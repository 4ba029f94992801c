/* The gradient-norm study's points (grad.h): one (configuration, seed)
 * evaluated on the synthetic batches: the gradient norms of its items and the
 * hidden-state statistics. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/stats.h"
#include "front/front.h"
#include "grad.h"

const char *set_name(int s) { return s ? "realistic" : "theorem"; }
const char *pos_name(int p) { return p ? "pre" : "post"; }

pconf make_pconf(const opts *o, int setting, int task, int pos, int L, int d)
{
    pconf p = {0};
    p.setting = setting, p.task = task, p.pos = pos, p.L = L, p.d = d;
    p.h = setting ? o->heads : 1;
    p.dff = setting ? o->ffmult * d : d;
    p.V = o->V, p.B = o->B, p.T = o->T, p.nb = o->nb, p.tie = o->tie;
    p.ls = setting ? o->ls_real : o->ls_theorem;
    p.beps = o->beps;
    snprintf(p.key, sizeof p.key, "%s/%s/%s/L%d/d%d/h%d/ff%d/V%d/B%d/T%d/nb%d/ls%g/tie%d/e%g",
             lnk_task_name((lnk_task)task), set_name(setting), pos_name(pos), L, d, p.h, p.dff,
             p.V, p.B, p.T, p.nb, p.ls, p.tie, p.beps);
    return p;
}

void make_config(const pconf *p, int seed, lnk_config *c)
{
    lnk_config_default(c);
    c->task = (lnk_task)p->task;
    CLI_CK(lnk_config_set(c, "norm_pos", pos_name(p->pos)));
    c->init = p->setting ? LNK_INIT_XAVIER : LNK_INIT_THEOREM;
    c->d = p->d;
    c->h = p->h;
    c->d_ff = p->dff;
    c->L = p->L;
    c->V = p->V;
    c->seed = (uint64_t)seed;
    c->tie_output = p->tie != 0;
    c->label_smoothing = p->ls;
    CLI_CK(lnk_config_finalize(c));
}

static void hl_add(hlist *h, int *idx, const char *stack, int layer, const char *site,
                   const lnk_stats_sq *sq, const lnk_stats_jac *jac)
{
    int i = (*idx)++;
    if (i == h->n) { /* first batch: create the site */
        if (h->n == h->cap) {
            h->cap = h->cap ? 2 * h->cap : 256;
            h->v = realloc(h->v, sizeof(hsite) * h->cap);
            if (!h->v)
                cli_die("out of memory");
        }
        hsite z = {stack, site, layer, jac != NULL, 0, 0, 0, -INFINITY, 0, 0, 0};
        h->v[h->n++] = z;
    }
    hsite *s = &h->v[i];
    s->n += sq->n;
    s->mean += sq->mean;
    s->sd += sq->sd;
    s->max = sq->max > s->max ? sq->max : s->max;
    s->frac += sq->frac_over;
    if (jac) {
        s->jmean += jac->mean;
        s->jmax = jac->max > s->jmax ? jac->max : s->jmax;
    }
}

/* Sites of one stack in a fixed order; the Jacobian goes with the site whose
 * vector is the norm's input (Post-LN: the residual sum; Pre-LN: the unit's input). */
static void hl_stack(hlist *h, int *idx, const char *name, const lnk_stats_stack *s, int post,
                     int has_norm)
{
    for (int l = 0; l < s->L; l++) {
        const lnk_stats_block *b = &s->blk[l];
        hl_add(h, idx, name, l, "in", &b->in, !post && has_norm ? &b->jac[0] : NULL);
        for (int j = 0; j < b->n_units; j++) {
            const lnk_stats_jac *jac = NULL;
            if (has_norm)
                jac = post ? &b->jac[j] : (j + 1 < b->n_units ? &b->jac[j + 1] : NULL);
            hl_add(h, idx, name, l, b->unit[j], &b->res[j], jac);
        }
    }
    hl_add(h, idx, name, s->L, "out", &s->out, s->has_final ? &s->final_jac : NULL);
}

/* Items of a sweep point: last W2 and W1 (depth, width) or every block's
 * tensors and the block group (profile). */
static void make_items(const lnk_model *m, int profile, item **out, int *nout)
{
    const lnk_config *c = lnk_model_config(m);
    int cap = 64, n = 0;
    item *it = cli_alloc(sizeof(item) * cap);
#define ADD(st, l, lab, ...)                                                                      \
    do {                                                                                          \
        if (n == cap)                                                                             \
            it = realloc(it, sizeof(item) * (cap *= 2));                                          \
        if (!it)                                                                                  \
            cli_die("out of memory");                                                                \
        memset(&it[n], 0, sizeof(item));                                                          \
        snprintf(it[n].stack, sizeof it[n].stack, "%s", st);                                      \
        it[n].layer = l;                                                                          \
        snprintf(it[n].label, sizeof it[n].label, "%s", lab);                                     \
        snprintf(it[n].pattern, sizeof it[n].pattern, __VA_ARGS__);                               \
        n++;                                                                                      \
    } while (0)
    int has_dec = c->task != LNK_TASK_CLS, has_enc = c->task != LNK_TASK_LM;
    if (!profile) {
        char w2[LNK_NAME_MAX];
        lnk_stats_last_w2(m, w2, sizeof w2);
        const char *st = has_dec ? "dec" : "enc";
        int l = has_dec ? c->L_dec - 1 : c->L_enc - 1;
        ADD(st, l, "ffn.w2", "%s", w2);
        ADD(st, l, "ffn.w1", "%s.%d.ffn.w1", st, l);
    } else {
        static const char *const at[] = {"wq", "wk", "wv", "wo"};
        for (int s = 0; s < 2; s++) {
            if (!(s ? has_dec : has_enc))
                continue;
            const char *st = s ? "dec" : "enc";
            int L = s ? c->L_dec : c->L_enc, cross = s && has_enc;
            for (int l = 0; l < L; l++) {
                for (int k = 0; k < 4; k++) {
                    char lab[32];
                    snprintf(lab, sizeof lab, "attn.%s", at[k]);
                    ADD(st, l, lab, "%s.%d.%s", st, l, lab);
                }
                if (cross)
                    for (int k = 0; k < 4; k++) {
                        char lab[32];
                        snprintf(lab, sizeof lab, "xattn.%s", at[k]);
                        ADD(st, l, lab, "%s.%d.%s", st, l, lab);
                    }
                ADD(st, l, "ffn.w1", "%s.%d.ffn.w1", st, l);
                ADD(st, l, "ffn.w2", "%s.%d.ffn.w2", st, l);
                ADD(st, l, "block", "%s.%d.*", st, l);
            }
        }
    }
#undef ADD
    const lnk_layout *lay = lnk_model_layout(m);
    for (int i = 0; i < n; i++) {
        it[i].tix = cli_alloc(sizeof(int) * lay->n_tensors);
        for (int t = 0; t < lay->n_tensors; t++)
            if (fnmatch(it[i].pattern, lay->t[t].name, 0) == 0)
                it[i].tix[it[i].nt++] = t;
        if (it[i].nt == 0)
            cli_die("internal: pattern '%s' matches no tensor", it[i].pattern);
    }
    *out = it;
    *nout = n;
}

void run_point(const pconf *p, int seed, int profile, int hidden, pbuf *buf,
                      presult *r)
{
    double t0 = lnk_now();
    lnk_config c;
    make_config(p, seed, &c);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    const lnk_layout *lay = lnk_model_layout(m);
    size_t np = lnk_model_n_params(m);
    if (np > buf->n) {
        free(buf->th);
        free(buf->g);
        buf->th = cli_alloc(sizeof(double) * np);
        buf->g = cli_alloc(sizeof(double) * np);
        buf->n = np;
    }
    double *th = buf->th, *g = buf->g;
    CLI_CK(lnk_model_init_params(m, th));
    memset(r, 0, sizeof *r);
    make_items(m, profile, &r->it, &r->nit);
    /* running sums of the tensors the items need (only those: the full
     * gradient of a wide model is hundreds of MB) */
    int nt = lay->n_tensors;
    size_t *soff = cli_alloc(sizeof(size_t) * nt), ssz = 0;
    for (int t = 0; t < nt; t++)
        soff[t] = (size_t)-1;
    for (int i = 0; i < r->nit; i++)
        for (int k = 0; k < r->it[i].nt; k++) {
            int t = r->it[i].tix[k];
            if (soff[t] == (size_t)-1) {
                soff[t] = ssz;
                ssz += lay->t[t].size;
            }
        }
    double *sum = calloc(ssz ? ssz : 1, sizeof(double));
    if (!sum)
        cli_die("out of memory");
    int len = p->T, S = c.task == LNK_TASK_LM ? 0 : len, Tst = c.task == LNK_TASK_CLS ? 0 : len + 1;
    lnk_workspace *ws = lnk_workspace_alloc(m, p->B, S, Tst, 0);
    if (!ws)
        cli_die_lib();
    int post = p->pos == 0, has_norm = c.norm != LNK_NORM_NONE;
    for (int b = 0; b < p->nb; b++) {
        lnk_batch bt;
        CLI_CK(lnk_batch_synthetic(m, p->B, len, 1000003ull * ((uint64_t)seed + 1) + (uint64_t)b, &bt));
        double loss;
        CLI_CK(lnk_model_eval(ws, th, &bt, &loss, g, NULL));
        lnk_batch_free(&bt);
        r->loss += loss / p->nb;
        double tot = 0;
        for (size_t i = 0; i < np; i++)
            tot += g[i] * g[i];
        r->gnorm += sqrt(tot) / p->nb;
        for (int i = 0; i < r->nit; i++) {
            double v;
            CLI_CK(lnk_stats_group_norm(m, g, r->it[i].pattern, &v, NULL));
            r->it[i].sum_norm += v;
        }
        for (int t = 0; t < nt; t++)
            if (soff[t] != (size_t)-1) {
                const double *gt = g + lay->t[t].offset;
                double *st = sum + soff[t];
                for (size_t k = 0; k < lay->t[t].size; k++)
                    st[k] += gt[k];
            }
        if (!hidden)
            continue;
        lnk_stats_hidden_t hs;
        CLI_CK(lnk_stats_hidden(ws, p->beps, &hs));
        int idx = 0;
        if (hs.enc.L)
            hl_stack(&r->hid, &idx, "enc", &hs.enc, post, has_norm);
        if (hs.dec.L)
            hl_stack(&r->hid, &idx, "dec", &hs.dec, post, has_norm);
        lnk_stats_hidden_free(&hs);
    }
    for (int i = 0; i < r->nit; i++) {
        double s = 0;
        for (int k = 0; k < r->it[i].nt; k++) {
            int t = r->it[i].tix[k];
            const double *st = sum + soff[t];
            for (size_t q = 0; q < lay->t[t].size; q++)
                s += (st[q] / p->nb) * (st[q] / p->nb);
        }
        r->it[i].nom = sqrt(s);
    }
    lnk_workspace_free(ws);
    free(sum);
    free(soff);
    lnk_model_free(m);
    lnk_config_clear(&c);
    r->seconds = lnk_now() - t0;
}

void presult_free(presult *r)
{
    for (int i = 0; i < r->nit; i++)
        free(r->it[i].tix);
    free(r->it);
    free(r->hid.v);
}
