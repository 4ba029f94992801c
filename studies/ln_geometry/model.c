/* The geometry study's part model (geom.h): in Pre-/Post-LN language models
 * at initialisation, on synthetic and real text, the unselectable keys per
 * layer and head along x -> N(x) -> N(x) Wk_j -> qk-norm, the hull-membership
 * checks of the affine maps, and |cos(x, 1)| of the norms' inputs. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/geometry.h"
#include "front/front.h"
#include "geom.h"

/* Per-head stages: keys of head j computed from a version of the norm's input. */
enum { ST_X, ST_P, ST_S, ST_N, ST_QK, NST };
static const char *const st_name[NST] = {"x Wk_j", "P(x) Wk_j", "S(x) Wk_j", "N(x) Wk_j",
                                         "qknorm(N(x) Wk_j)"};
static const char *const st_short[NST] = {"x_wk", "center_x_wk", "scale_x_wk", "keys",
                                          "keys_qk"};

typedef struct {
    long keys[NST], uns[NST];
} headacc;

static void sel_set(const double *K, int n, int d, int *sel)
{
    CLI_CK(lnk_geom_selectable(K, n, d, 0, sel, NULL));
}

/* Y [m, d] = X [m, d] W [d, d] + b */
static void affine(const double *X, const double *W, const double *b, double *Y, int m, int d)
{
    for (int i = 0; i < m; i++)
        for (int o = 0; o < d; o++)
            Y[(size_t)i * d + o] = b ? b[o] : 0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, d, 1.0, X, d, W, d, 1.0, Y, d);
}

static void slice(const double *X, double *Y, int m, int d, int j, int dk)
{
    for (int i = 0; i < m; i++)
        memcpy(Y + (size_t)i * dk, X + (size_t)i * d + (size_t)j * dk, sizeof(double) * dk);
}

/* One model variant (its rows' first columns). */
typedef struct {
    const dataset *dsx;
    int d, h, L;
    const char *pos, *qk;
} variant;

/* One attention unit's rows over the batch (B sequences of T positions, row
 * width d): the norm's input and output, the keys before and after qk-norm,
 * and the key map Wk, bk. */
typedef struct {
    const double *xin, *xout, *Kf, *KQ, *wk, *bk;
    int d, h, dk, T, qkn;
} unit_rows;

/* Scratch of one sequence's keys: T rows of width d. */
typedef struct {
    double *X, *NX, *V1, *V2, *Sl;
    int *sx, *snx, *s1, *idx;
} scratch;

/* A unit's counts over the batch's sequences. */
typedef struct {
    headacc acc[64];
    long full_keys, full_unx, full_unn;
    long mis_n, mis_x, viol_n, viol_x, nkeys;
    double cs[4]; /* sums of |cos(., 1)|: x, N(x), K_j, qk-normed K_j */
    int nsets;
} unit_acc;

/* |cos(., 1)| of the sequence's keys (positions idx of row bb). */
static void seq_cos(const unit_rows *u, const int *idx, int mkeys, int bb, unit_acc *a)
{
    int d = u->d, h = u->h, dk = u->dk;
    for (int i = 0; i < mkeys; i++) {
        size_t r = ((size_t)bb * u->T + idx[i]) * d;
        a->cs[0] += fabs(lnk_geom_cos_ones(u->xin + r, d));
        a->cs[1] += fabs(lnk_geom_cos_ones(u->xout + r, d));
        for (int j = 0; j < h; j++) {
            a->cs[2] += fabs(lnk_geom_cos_ones(u->Kf + r + (size_t)j * dk, dk)) / h;
            a->cs[3] += fabs(lnk_geom_cos_ones(u->KQ + r + (size_t)j * dk, dk)) / h;
        }
    }
}

/* Full width: x and N(x), and their images under the (invertible) Wk. */
static void seq_full(const unit_rows *u, scratch *w, int mkeys, int bb, unit_acc *a)
{
    int d = u->d;
    for (int i = 0; i < mkeys; i++) {
        memcpy(w->X + (size_t)i * d, u->xin + ((size_t)bb * u->T + w->idx[i]) * d,
               sizeof(double) * d);
        memcpy(w->NX + (size_t)i * d, u->xout + ((size_t)bb * u->T + w->idx[i]) * d,
               sizeof(double) * d);
    }
    sel_set(w->X, mkeys, d, w->sx);
    sel_set(w->NX, mkeys, d, w->snx);
    affine(w->X, u->wk, u->bk, w->V1, mkeys, d);
    sel_set(w->V1, mkeys, d, w->s1);
    for (int i = 0; i < mkeys; i++) {
        a->mis_x += w->s1[i] != w->sx[i];
        a->full_unx += !w->sx[i];
        a->full_unn += !w->snx[i];
    }
    a->full_keys += mkeys;
    for (int i = 0; i < mkeys; i++) /* the model's keys, rows of this sequence */
        memcpy(w->V2 + (size_t)i * d, u->Kf + ((size_t)bb * u->T + w->idx[i]) * d,
               sizeof(double) * d);
    sel_set(w->V2, mkeys, d, w->s1);
    for (int i = 0; i < mkeys; i++)
        a->mis_n += w->s1[i] != w->snx[i];
}

/* Per head: the keys of head j from x, P(x), S(x), N(x), and after qk-norm
 * (after seq_full, whose V1, V2, sx and snx it reads). */
static void seq_heads(const unit_rows *u, scratch *w, int mkeys, int bb, unit_acc *a)
{
    int d = u->d, h = u->h, dk = u->dk;
    for (int stg = 0; stg < NST; stg++) {
        if (stg == ST_QK && !u->qkn)
            continue;
        const double *src = w->V2;
        if (stg == ST_X) {
            src = w->V1; /* x Wk + bk */
        } else if (stg == ST_P || stg == ST_S) {
            CLI_CK(lnk_geom_apply(stg == ST_P ? LNK_GEOM_CENTER : LNK_GEOM_SCALE, w->X, w->Sl,
                                  mkeys, d, 1, 0.0));
            affine(w->Sl, u->wk, u->bk, w->NX, mkeys, d); /* NX reused as scratch */
            src = w->NX;
        } else if (stg == ST_QK) {
            for (int i = 0; i < mkeys; i++)
                memcpy(w->Sl + (size_t)i * d, u->KQ + ((size_t)bb * u->T + w->idx[i]) * d,
                       sizeof(double) * d);
            src = w->Sl;
        }
        for (int j = 0; j < h; j++) {
            double *hk = xmalloc(sizeof(double) * mkeys * dk);
            slice(src, hk, mkeys, d, j, dk);
            int *sh = xmalloc(sizeof(int) * mkeys);
            sel_set(hk, mkeys, dk, sh);
            for (int i = 0; i < mkeys; i++) {
                a->acc[j].uns[stg] += !sh[i];
                /* an affine image of a hull point is a hull point: unselectable
                 * before Wk_j stays unselectable after it */
                if (stg == ST_X)
                    a->viol_x += !w->sx[i] && sh[i];
                if (stg == ST_N)
                    a->viol_n += !w->snx[i] && sh[i];
            }
            a->acc[j].keys[stg] += mkeys;
            free(hk);
            free(sh);
        }
    }
}

/* A unit's counts over the B sequences (pad: the padded positions). */
static void unit_counts(const unit_rows *u, const uint8_t *pad, int B, scratch *w, unit_acc *a)
{
    memset(a, 0, sizeof *a);
    for (int bb = 0; bb < B; bb++) {
        int mkeys = 0;
        for (int t = 0; t < u->T; t++)
            if (!pad[(size_t)bb * u->T + t])
                w->idx[mkeys++] = t;
        if (mkeys < 2)
            continue;
        a->nsets++;
        a->nkeys += mkeys;
        seq_cos(u, w->idx, mkeys, bb, a);
        seq_full(u, w, mkeys, bb, a);
        seq_heads(u, w, mkeys, bb, a);
    }
}

/* Layer l's rows: full width, then per head (model_select.csv), the cosines
 * (model_cos.csv) and the affine checks (model_affine.csv). */
static void unit_write(out_csv *o, out_csv *oa, out_csv *oc, const variant *v, int l, int qkn,
                       const unit_acc *a)
{
    const char *dn = v->dsx->name, *pos = v->pos, *qk = v->qk;
    int d = v->d, h = v->h, L = v->L;
    row(o, "ssiiissssilll", dn, pos, d, h, L, qk, "all", "x", "x (full width)", l,
        (long)a->nsets, a->full_keys, a->full_unx);
    row(o, "ssiiissssilll", dn, pos, d, h, L, qk, "all", "norm_out", "N(x) (full width)", l,
        (long)a->nsets, a->full_keys, a->full_unn);
    for (int stg = 0; stg < NST; stg++) {
        for (int j = 0; j < h; j++) {
            if (stg == ST_QK && !qkn)
                continue;
            char hb[16];
            snprintf(hb, sizeof hb, "%d", j);
            row(o, "ssiiissssilll", dn, pos, d, h, L, qk, hb, st_short[stg], st_name[stg], l,
                (long)a->nsets, a->acc[j].keys[stg], a->acc[j].uns[stg]);
        }
    }
    long nkeys = a->nkeys;
    row(oc, "ssiiisigggg", dn, pos, d, h, L, qk, l, a->cs[0] / nkeys, a->cs[1] / nkeys,
        a->cs[2] / nkeys, a->cs[3] / nkeys);
    row(oa, "ssiiisisll", dn, pos, d, h, L, qk, l, "x vs x Wk (full width): mismatches", nkeys,
        a->mis_x);
    row(oa, "ssiiisisll", dn, pos, d, h, L, qk, l, "N(x) vs N(x) Wk (full width): mismatches",
        nkeys, a->mis_n);
    row(oa, "ssiiisisll", dn, pos, d, h, L, qk, l, "unselectable in x but selectable in x Wk_j",
        nkeys * h, a->viol_x);
    row(oa, "ssiiisisll", dn, pos, d, h, L, qk, l,
        "unselectable in N(x) but selectable in N(x) Wk_j", nkeys * h, a->viol_n);
    if (a->mis_x || a->mis_n || a->viol_x || a->viol_n)
        printf("  affine check FAILED: %s %s d=%d qk=%s layer %d: %ld %ld %ld %ld\n", dn, pos, d,
               qk, l, a->mis_x, a->mis_n, a->viol_x, a->viol_n);
}

static void scratch_alloc(scratch *w, int T, int d)
{
    w->X = xmalloc(sizeof(double) * T * d);
    w->NX = xmalloc(sizeof(double) * T * d);
    w->V1 = xmalloc(sizeof(double) * T * d);
    w->V2 = xmalloc(sizeof(double) * T * d);
    w->Sl = xmalloc(sizeof(double) * T * d);
    w->sx = xmalloc(sizeof(int) * T);
    w->snx = xmalloc(sizeof(int) * T);
    w->s1 = xmalloc(sizeof(int) * T);
    w->idx = xmalloc(sizeof(int) * T);
}

static void scratch_free(scratch *w)
{
    free(w->X);
    free(w->NX);
    free(w->V1);
    free(w->V2);
    free(w->Sl);
    free(w->sx);
    free(w->snx);
    free(w->s1);
    free(w->idx);
}

/* One model variant: rows of model_select.csv, model_affine.csv and model_cos.csv. */
static void model_variant(out_csv *o, out_csv *oa, out_csv *oc, const variant *v)
{
    int d = v->d, h = v->h;
    lnk_config c = make_cfg("lm", d, h, v->L, v->dsx->V, v->pos, v->qk);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    double *th = xmalloc(sizeof(double) * lnk_model_n_params(m));
    CLI_CK(lnk_model_init_params(m, th));
    const lnk_batch *b = &v->dsx->lm;
    lnk_workspace *ws = lnk_workspace_alloc(m, b->B, 0, b->T, 0);
    if (!ws)
        cli_die_lib();
    double loss;
    CLI_CK(lnk_model_eval(ws, th, b, &loss, NULL, NULL));
    lnk_geom_unit us[64];
    int nu = lnk_geom_attn_units(ws, us, 64), qkn = strcmp(v->qk, "none") != 0;
    scratch w;
    scratch_alloc(&w, b->T, d);
    for (int iu = 0; iu < nu; iu++) {
        const lnk_geom_unit *un = &us[iu];
        int l = un->layer, B, T;
        unit_rows u = {.d = d, .h = h, .dk = d / h, .qkn = qkn};
        const uint8_t *pad;
        CLI_CK(lnk_geom_unit_rows(ws, un, LNK_GEOM_NORM_IN, &u.xin, &B, &T, &pad));
        CLI_CK(lnk_geom_unit_rows(ws, un, LNK_GEOM_NORM_OUT, &u.xout, &B, &T, NULL));
        CLI_CK(lnk_geom_unit_rows(ws, un, LNK_GEOM_KEYS, &u.Kf, &B, &T, NULL));
        CLI_CK(lnk_geom_unit_rows(ws, un, LNK_GEOM_KEYS_QK, &u.KQ, &B, &T, NULL));
        u.T = T;
        u.wk = tensor(m, th, "dec.%d.attn.wk", l);
        u.bk = tensor(m, th, "dec.%d.attn.bk", l);
        unit_acc a;
        unit_counts(&u, pad, B, &w, &a);
        unit_write(o, oa, oc, v, l, qkn, &a);
    }
    scratch_free(&w);
    lnk_workspace_free(ws);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

void part_model(study *S)
{
    static const char *const hdr[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "head",
                                      "stage", "stage_name", "layer", "sequences", "keys",
                                      "unselectable"};
    static const char *const ha[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "layer",
                                     "check", "keys", "count"};
    static const char *const hc[] = {"data", "norm_pos", "d", "h", "L", "qk_norm", "layer",
                                     "mean_abs_cos_norm_in", "mean_abs_cos_norm_out",
                                     "mean_abs_cos_keys_head", "mean_abs_cos_keys_qk_head"};
    out_csv o, oa, oc;
    csv_open(&o, S->out, "model_select.csv", hdr, 13);
    csv_open(&oa, S->out, "model_affine.csv", ha, 10);
    csv_open(&oc, S->out, "model_cos.csv", hc, 11);
    enum { B = 32, LEN = 24, L = 4 };
    dataset dsv[2];
    int nds = 1;
    /* synthetic: lm batch of ids uniform in [4, 500) through a throwaway model */
    {
        lnk_config c = make_cfg("lm", 8, 4, 1, 500, "pre", "none");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        CLI_CK(lnk_batch_synthetic(m, B, LEN, S->seed + 1000, &dsv[0].lm));
        dsv[0].V = 500;
        dsv[0].name = "synthetic";
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    nds += load_text(S, B, 30, &dsv[1]);
    static const int cfgs[3][2] = {{8, 4}, {64, 4}, {512, 8}};
    static const char *const poss[2] = {"pre", "post"};
    static const char *const qks[3] = {"none", "layernorm", "rmsnorm"};
    for (int di = 0; di < nds; di++)
        for (int ic = 0; ic < 3; ic++)
            for (int ip = 0; ip < 2; ip++)
                for (int iq = 0; iq < 3; iq++)
                    model_variant(&o, &oa, &oc,
                                  &(variant){&dsv[di], cfgs[ic][0], cfgs[ic][1], L, poss[ip],
                                             qks[iq]});
    lnk_meta *extra = part_meta("model");
    lnk_meta_int(extra, "B", B);
    lnk_meta_int(extra, "synthetic_len", LEN);
    lnk_meta_str(extra, "text", nds > 1 ? S->text : "");
    lnk_meta_str(extra, "init", "xavier");
    lnk_meta_int(extra, "model_seed", 0);
    lnk_meta_real(extra, "tol", LNK_GEOM_SEL_TOL);
    lnk_meta_int(extra, "synthetic_batch_seed", (long long)(S->seed + 1000));
    lnk_meta_str(extra, "varied", "data in {synthetic, text}, (d, h) in {(8, 4), (64, 4), "
                                  "(512, 8)}, norm_pos in {pre, post}, qk_norm in {none, "
                                  "layernorm, rmsnorm}");
    lnk_meta_str(extra, "config_note", "config is the first variant; every row holds its own "
                                       "(data, norm_pos, d, h, L, qk_norm)");
    lnk_config base = make_cfg("lm", cfgs[0][0], cfgs[0][1], L, dsv[0].V, poss[0], qks[0]);
    csv_close(&o, &base, extra, NULL, 0);
    csv_close(&oa, &base, extra, NULL, 0);
    csv_close(&oc, &base, extra, NULL, 0);
    lnk_config_clear(&base);
    lnk_meta_free(extra);
    for (int di = 0; di < nds; di++)
        lnk_batch_free(&dsv[di].lm);
    printf("model activations: done (%d data sets)\n", nds);
}
