/* Attention-map statistics (row entropy, the largest column mass or "vertical
 * stripe", the largest logit) and access to a model's key-side activations
 * after lnk_model_eval, for the selectability of its keys. */
#include <math.h>
#include <stdlib.h>
#include "lnkit/error.h"
#include "lnkit/geometry.h"

double lnk_geom_entropy(const double *p, int n)
{
    double h = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0)
            h -= p[i] * log(p[i]);
    return h;
}

int lnk_geom_map_stats(const double *A, int Tq, int Tk, const uint8_t *qpad,
                       lnk_geom_map_stat *st)
{
    if (Tq < 1 || Tk < 1)
        return lnk_error(LNK_EINVAL, "attention map %d x %d: need at least one row and column",
                         Tq, Tk);
    double *col = calloc((size_t)Tk, sizeof(double));
    if (!col)
        return lnk_error(LNK_ENOMEM, "attention map statistics: out of memory");
    int nr = 0;
    double es = 0, emin = INFINITY;
    for (int t = 0; t < Tq; t++) {
        if (qpad && qpad[t])
            continue;
        const double *row = A + (size_t)t * Tk;
        double e = lnk_geom_entropy(row, Tk);
        es += e;
        emin = fmin(emin, e);
        for (int j = 0; j < Tk; j++)
            col[j] += row[j];
        nr++;
    }
    if (nr == 0) {
        free(col);
        return lnk_error(LNK_EINVAL, "attention map %d x %d: every query row is padding", Tq, Tk);
    }
    st->n_rows = nr;
    st->ent_mean = es / nr;
    st->ent_min = emin;
    st->col_argmax = 0;
    for (int j = 1; j < Tk; j++)
        if (col[j] > col[st->col_argmax])
            st->col_argmax = j;
    st->col_mass = col[st->col_argmax] / nr;
    free(col);
    return LNK_OK;
}

int lnk_geom_attn_units(const lnk_workspace *ws, lnk_geom_unit *out, int max)
{
    return lnk_model_attn_units(lnk_workspace_model(ws), out, max);
}

int lnk_geom_unit_rows(const lnk_workspace *ws, const lnk_geom_unit *u, lnk_geom_stage stage,
                       const double **rows, int *B, int *T, const uint8_t **pad)
{
    lnk_attn_view v;
    int st = lnk_workspace_attn(ws, u->stack, u->unit, &v);
    if (st)
        return st;
    const double *r = NULL;
    int key_side = 1;
    switch (stage) {
    case LNK_GEOM_NORM_IN: r = v.norm_in; break;
    case LNK_GEOM_NORM_OUT: r = v.norm_out; break;
    case LNK_GEOM_KEYS: r = v.k; break;
    case LNK_GEOM_KEYS_QK: r = v.kn; break;
    case LNK_GEOM_QUERIES: r = v.q; key_side = 0; break;
    case LNK_GEOM_QUERIES_QK: r = v.qn; key_side = 0; break;
    default: return lnk_error(LNK_EINVAL, "geometry: unknown activation stage %d", (int)stage);
    }
    *rows = r;
    *B = v.B;
    *T = key_side ? v.Tk : v.Tq;
    if (pad)
        *pad = key_side ? v.kpad : v.qpad;
    return LNK_OK;
}

int lnk_geom_model_attn(const lnk_workspace *ws, lnk_geom_attn_stat **out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    const lnk_config *cfg = lnk_model_config(lnk_workspace_model(ws));
    int nu = lnk_geom_attn_units(ws, NULL, 0), h = cfg->h, d = cfg->d, dk = d / h;
    lnk_geom_unit *units = malloc(sizeof *units * (nu ? nu : 1));
    lnk_geom_attn_stat *res = malloc(sizeof *res * (size_t)(nu ? nu : 1) * h);
    if (!units || !res) {
        free(units);
        free(res);
        return lnk_error(LNK_ENOMEM, "attention statistics: out of memory");
    }
    lnk_geom_attn_units(ws, units, nu);
    double scale = 1.0 / sqrt((double)dk);
    int st = LNK_OK;
    for (int iu = 0; iu < nu && !st; iu++) {
        const lnk_geom_unit *u = &units[iu];
        lnk_attn_view v;
        if (lnk_workspace_attn(ws, u->stack, u->unit, &v) != LNK_OK) {
            /* the units are the model's own: only an unevaluated workspace fails */
            st = lnk_error(LNK_EINVAL,
                           "attention statistics: the workspace holds no evaluated batch");
            break;
        }
        const uint8_t *qpad = v.qpad, *kpad = v.kpad;
        int B = v.B, Tq = v.Tq, Tk = v.Tk;
        for (int j = 0; j < h && !st; j++) {
            lnk_geom_attn_stat *r = &res[(size_t)iu * h + j];
            r->u = *u;
            r->head = j;
            r->ent_min = INFINITY;
            r->col_mass = 0;
            r->col_mass_max = 0;
            r->logit_max = -INFINITY;
            double es = 0;
            long nrows = 0;
            int nseq = 0;
            for (int b = 0; b < B; b++) {
                const double *A = v.a + ((size_t)b * h + j) * Tq * Tk;
                lnk_geom_map_stat ms;
                int any = 0;
                for (int t = 0; t < Tq; t++)
                    any |= !qpad[(size_t)b * Tq + t];
                if (!any)
                    continue;
                st = lnk_geom_map_stats(A, Tq, Tk, qpad + (size_t)b * Tq, &ms);
                if (st)
                    break;
                es += ms.ent_mean * ms.n_rows;
                nrows += ms.n_rows;
                r->ent_min = fmin(r->ent_min, ms.ent_min);
                r->col_mass += ms.col_mass;
                r->col_mass_max = fmax(r->col_mass_max, ms.col_mass);
                nseq++;
                for (int t = 0; t < Tq; t++) {
                    if (qpad[(size_t)b * Tq + t])
                        continue;
                    const double *q = v.qn + ((size_t)b * Tq + t) * d + (size_t)j * dk;
                    int lim = u->causal ? t + 1 : Tk;
                    for (int s = 0; s < lim; s++) {
                        if (kpad[(size_t)b * Tk + s])
                            continue;
                        const double *k = v.kn + ((size_t)b * Tk + s) * d + (size_t)j * dk;
                        double z = 0;
                        for (int c = 0; c < dk; c++)
                            z += q[c] * k[c];
                        r->logit_max = fmax(r->logit_max, z * scale);
                    }
                }
            }
            if (!st && nseq == 0)
                st = lnk_error(LNK_EINVAL, "attention statistics: every query row is padding");
            if (!st) {
                r->ent_mean = es / nrows;
                r->col_mass /= nseq;
            }
        }
    }
    free(units);
    if (st) {
        free(res);
        return st;
    }
    *out = res;
    *n_out = nu * h;
    return LNK_OK;
}
