/* The anatomy study's points and their data (anatomy.h). */
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "anatomy.h"

static int add_point(point_t *P, int n, point_t p)
{
    for (int i = 0; i < n; i++)
        if (!memcmp(&P[i], &p, sizeof p))
            return n;
    P[n] = p;
    return n + 1;
}

int make_points(const opts_t *o, point_t **out)
{
    int cap = 2 * o->seeds * (o->lm_L.n + o->lm_d.n + o->s2s_L.n + o->s2s_d.n + 4) + 8;
    point_t *P = calloc((size_t)cap, sizeof *P);
    if (!P)
        cli_die("out of memory");
    int n = 0;
    for (int task = 0; task < 2; task++) {
        const ilist *Ls = task ? &o->s2s_L : &o->lm_L, *ds = task ? &o->s2s_d : &o->lm_d;
        int refL = task ? o->s2s_refL : o->lm_refL, refd = task ? o->s2s_refd : o->lm_refd;
        /* configurations (L, d, norm, qk) */
        int cfg[4 * MAXLIST + 4][4], nc = 0;
        for (int i = 0; i < Ls->n; i++)
            cfg[nc][0] = Ls->v[i], cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
        for (int i = 0; i < ds->n; i++)
            cfg[nc][0] = refL, cfg[nc][1] = ds->v[i], cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
        if (!task && o->variants && Ls->n + ds->n > 0) {
            cfg[nc][0] = refL, cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_RMSNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
            cfg[nc][0] = refL, cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_LAYERNORM;
        }
        for (int k = 0; k < nc; k++)
            for (int pre = 0; pre < 2; pre++)
                for (int s = 0; s < o->seeds; s++)
                    n = add_point(P, n, (point_t){task ? LNK_TASK_SEQ2SEQ : LNK_TASK_LM, pre,
                                                  cfg[k][2], cfg[k][3], cfg[k][0], cfg[k][1], s});
    }
    *out = P;
    return n;
}

void make_config(lnk_config *c, const opts_t *o, const cli_pairs *D, const point_t *p)
{
    lnk_config_default(c);
    c->task = (lnk_task)p->task;
    c->norm_pos = p->pre ? LNK_POS_PRE : LNK_POS_POST;
    c->norm = (lnk_norm_type)p->norm;
    c->qk_norm = (lnk_norm_type)p->qk;
    c->d = p->d;
    c->h = o->h;
    c->L = p->L;
    c->V = o->V;
    if (p->task == LNK_TASK_SEQ2SEQ) {
        c->V = c->V_src = lnk_vocab_size(D->vs);
        c->V_tgt = lnk_vocab_size(D->vt);
    }
    c->seed = (uint64_t)p->seed;
    CLI_CK(lnk_config_finalize(c));
}
