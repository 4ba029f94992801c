/* Per-layer hidden-state statistics read from the workspace after a pass, and
 * per-tensor / per-group gradient norms (include/lnkit/stats.h). */
#include <float.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "lnkit/stats.h"
#include "model/workspace.h"

void lnk_stats_rows(const double *x, const unsigned char *skip, int R, int d, double eps,
                    lnk_stats_sq *sq, lnk_stats_jac *jac, int center)
{
    memset(sq, 0, sizeof *sq);
    if (jac)
        memset(jac, 0, sizeof *jac);
    size_t n = 0;
    double s = 0, mn = INFINITY, mx = -INFINITY, js = 0, jm = 0;
    for (int r = 0; r < R; r++) {
        if (skip && skip[r])
            continue;
        const double *xr = x + (size_t)r * d;
        double z = 0;
        for (int i = 0; i < d; i++)
            z += xr[i] * xr[i];
        z /= d;
        n++;
        s += z;
        mn = z < mn ? z : mn;
        mx = z > mx ? z : mx;
        if (jac) { /* sqrt(d)/||x - mu 1||: centred sum of squares in a second pass */
            double mu = 0, c2 = 0;
            if (center) {
                for (int i = 0; i < d; i++)
                    mu += xr[i];
                mu /= d;
            }
            for (int i = 0; i < d; i++)
                c2 += (xr[i] - mu) * (xr[i] - mu);
            double jv = sqrt((double)d / c2); /* inf for a constant row */
            js += jv;
            jm = jv > jm ? jv : jm;
        }
    }
    if (n == 0)
        return;
    double mean = s / (double)n;
    sq->n = n;
    sq->mean = mean;
    /* sd from the centred sum (second pass) to avoid cancellation */
    double c = 0;
    size_t over = 0;
    for (int r = 0; r < R; r++) {
        if (skip && skip[r])
            continue;
        const double *xr = x + (size_t)r * d;
        double z = 0;
        for (int i = 0; i < d; i++)
            z += xr[i] * xr[i];
        z /= d;
        c += (z - mean) * (z - mean);
        over += (z - mean) / mean > eps;
    }
    sq->sd = n > 1 ? sqrt(c / (double)(n - 1)) : 0.0;
    sq->min = mn;
    sq->max = mx;
    sq->frac_over = (double)over / (double)n;
    if (jac) {
        jac->mean = js / (double)n;
        jac->max = jm;
    }
}

static const char *unit_name(unit_kind k)
{
    return k == UNIT_SELF_ATTN ? "attn" : k == UNIT_CROSS_ATTN ? "xattn" : "ffn";
}

/* One unit's statistics: the residual sum, and its main norm (N_post, else
 * N_in, else N_out): the Jacobian at its input and its output. */
static void unit_stats(const lnk_unit *un, const unit_buf *u, const double *x_in,
                       const double *x_out, const unsigned char *skip, int R, int d, double eps,
                       int cen, lnk_stats_block *b, int j)
{
    const double *res = un->post ? u->s : x_out;
    /* the residual sum is N_post's input: one pass gives both */
    lnk_stats_rows(res, skip, R, d, eps, &b->res[j], un->npost.on ? &b->jac[j] : NULL, cen);
    const double *out = un->post ? u->s : u->nin.out; /* no norm: the stream */
    lnk_stats_sq tmp;
    if (un->npost.on) {
        out = u->npost.out;
    } else if (un->nin.on) {
        lnk_stats_rows(x_in, skip, R, d, eps, &tmp, &b->jac[j], cen);
        out = u->nin.out;
    } else if (un->nout.on) {
        lnk_stats_rows(u->f, skip, R, d, eps, &tmp, &b->jac[j], cen);
        out = u->nout.out;
    }
    lnk_stats_rows(out, skip, R, d, eps, &b->norm_out[j], NULL, cen);
}

static int stack_stats(const lnk_workspace *ws, const lnk_stack *st, const stack_buf *sb, int T,
                       double eps, lnk_stats_stack *out)
{
    const lnk_config *c = &ws->m->cfg;
    int d = c->d, R = ws->pr->B * T, cen = c->norm == LNK_NORM_LAYERNORM;
    const unsigned char *skip = sb->kmask;
    memset(out, 0, sizeof *out);
    if (st->n_units == 0)
        return LNK_OK;
    out->L = st->L;
    out->blk = calloc((size_t)st->L, sizeof *out->blk);
    if (!out->blk)
        return lnk_error(LNK_ENOMEM, "stats: out of memory for %d blocks", st->L);
    int per = st->n_units / st->L;
    for (int l = 0; l < st->L; l++) {
        lnk_stats_block *b = &out->blk[l];
        int k0 = l * per;
        b->n_units = per;
        lnk_stats_rows(sb->a.x[k0], skip, R, d, eps, &b->in, NULL, cen);
        for (int j = 0; j < per; j++) {
            int k = k0 + j;
            b->unit[j] = unit_name(st->u[k].kind);
            unit_stats(&st->u[k], &sb->a.u[k], sb->a.x[k], sb->a.x[k + 1], skip, R, d, eps, cen,
                       b, j);
        }
    }
    const double *xo = sb->a.x[st->n_units];
    int fin = st->fg >= 0;
    lnk_stats_rows(xo, skip, R, d, eps, &out->out, fin ? &out->final_jac : NULL, cen);
    if (fin) {
        out->has_final = 1;
        lnk_stats_rows(sb->a.fin.out, skip, R, d, eps, &out->final_out, NULL, cen);
    }
    return LNK_OK;
}

int lnk_stats_hidden(const lnk_workspace *ws, double eps, lnk_stats_hidden_t *out)
{
    memset(out, 0, sizeof *out);
    if (!(eps > 0))
        return lnk_error(LNK_EINVAL, "stats: boundedness threshold eps = %g, expected > 0", eps);
    if (!ws->pr->valid)
        return lnk_error(LNK_EINVAL, "stats: the workspace holds no evaluated batch (call "
                         "lnk_model_eval first)");
    const lnk_model *m = ws->m;
    out->eps = eps;
    out->post = m->cfg.norm_pos == LNK_POS_POST;
    out->d = m->cfg.d;
    int st = LNK_OK;
    if (m->has_enc)
        st = stack_stats(ws, &m->enc, &ws->pr->enc, ws->pr->Tenc, eps, &out->enc);
    if (!st && m->has_dec)
        st = stack_stats(ws, &m->dec, &ws->pr->dec, ws->pr->Tdec, eps, &out->dec);
    if (st)
        lnk_stats_hidden_free(out);
    return st;
}

void lnk_stats_hidden_free(lnk_stats_hidden_t *h)
{
    if (!h)
        return;
    free(h->enc.blk);
    free(h->dec.blk);
    h->enc.blk = h->dec.blk = NULL;
}

int lnk_stats_tensor_norm(const lnk_model *m, const double *g, const char *name, double *norm)
{
    int i = lnk_layout_find(lnk_model_layout(m), name);
    if (i < 0)
        return lnk_error(LNK_EINVAL, "stats: no tensor '%s' in the model's layout", name);
    *norm = lnk_tensor_norm(m, g, i);
    return LNK_OK;
}

int lnk_stats_grad_norms(const lnk_model *m, const double *g, double *norm)
{
    const lnk_layout *lay = lnk_model_layout(m);
    for (int i = 0; i < lay->n_tensors; i++)
        norm[i] = lnk_tensor_norm(m, g, i);
    norm[lay->n_tensors] = lnk_norm2(g, lay->n_params);
    for (int i = 0; i <= lay->n_tensors; i++)
        if (!isfinite(norm[i]))
            return lnk_error(LNK_ENONFINITE, "the gradient's norm %s%s exceeds the range of "
                             "doubles (%g)", i < lay->n_tensors ? "on " : "over all parameters",
                             i < lay->n_tensors ? lay->t[i].name : "", norm[i]);
    return LNK_OK;
}

double lnk_norm2(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i] * x[i];
    /* safe: no square overflowed, and those that underflowed are below the
     * sum's rounding (every norm lnkit has committed comes from here) */
    if (s >= 0x1p-900 && s <= DBL_MAX)
        return sqrt(s);
    if (isnan(s))
        return s;
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        mx = fmax(mx, fabs(x[i]));
    if (mx == 0 || isinf(mx))
        return mx;
    int e = ilogb(mx);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        double y = ldexp(x[i], -e);
        t += y * y;
    }
    return ldexp(sqrt(t), e);
}

int lnk_stats_group_norm(const lnk_model *m, const double *g, const char *pattern, double *norm,
                         int *n_match)
{
    const lnk_layout *lay = lnk_model_layout(m);
    double *v = malloc(sizeof(double) * (size_t)(lay->n_tensors + 1));
    if (!v)
        return lnk_error(LNK_ENOMEM, "stats: out of memory");
    int k = 0;
    for (int i = 0; i < lay->n_tensors; i++)
        if (fnmatch(pattern, lay->t[i].name, 0) == 0)
            v[k++] = lnk_tensor_norm(m, g, i);
    if (n_match)
        *n_match = k;
    if (k == 0) {
        free(v);
        return lnk_error(LNK_EINVAL, "stats: group pattern '%s' matches no tensor of the layout "
                         "(names look like 'dec.0.ffn.w2')", pattern);
    }
    *norm = lnk_norm2(v, (size_t)k); /* the tensors' norms' norm, without overflow */
    free(v);
    return LNK_OK;
}

void lnk_stats_last_w2(const lnk_model *m, char *buf, size_t n)
{
    const lnk_config *c = &m->cfg;
    if (m->has_dec)
        snprintf(buf, n, "dec.%d.ffn.w2", c->L_dec - 1);
    else
        snprintf(buf, n, "enc.%d.ffn.w2", c->L_enc - 1);
}
