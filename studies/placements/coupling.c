/* Parts 3 and 5 of the placement study (place.h): the coupling between
 * groups and the input scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "place.h"

/* The probe stream of source group b (splitmix64 of the seed and b, as the
 * library derives its streams: the values do not depend on what ran before). */
static unsigned long stream_seed(uint64_t seed, int b)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(b + 1) + 0x43524f53ULL; /* "CROS" */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (unsigned long)((z ^ (z >> 31)) & 0xffffffffULL);
}

/* Hutchinson on the rectangular block: with z Rademacher on group b,
 * E ||P_a A P_b z||^2 = ||A_ab||_F^2 (E z z^T = I on b), for every a from
 * one product.  value sqrt(mean), se by the delta method (as lnk_frobenius);
 * steps: probes. */
void pl_cross_frob(pl_ctx *c, lnk_op_kind kind, const int *src, int nsrc)
{
    lnk_operator op = pl_op(c, NULL, kind);
    const lnk_layout *lay = lnk_model_layout(c->m);
    int P = c->num.cross_probes, na = c->G.n;
    double *x = cli_alloc(sizeof(double) * op.n), *y = cli_alloc(sizeof(double) * op.n);
    double *s = cli_alloc(sizeof(double) * (size_t)na * (size_t)P);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        cli_die("out of memory");
    for (int ib = 0; ib < nsrc; ib++) {
        const pl_group *b = &c->G.g[src[ib]];
        gsl_rng_set(rng, stream_seed(c->num.rng, src[ib]));
        for (int p = 0; p < P; p++) {
            memset(x, 0, sizeof(double) * op.n);
            for (int k = 0; k < b->nt; k++) {
                const lnk_tensor_info *t = &lay->t[b->t[k]];
                for (size_t q = 0; q < t->size; q++)
                    x[t->offset + q] = gsl_rng_uniform_int(rng, 2) ? 1.0 : -1.0;
            }
            CLI_CK(op.apply(op.ctx, x, y));
            for (int a = 0; a < na; a++) {
                const pl_group *g = &c->G.g[a];
                double acc = 0;
                for (int k = 0; k < g->nt; k++) {
                    const lnk_tensor_info *t = &lay->t[g->t[k]];
                    for (size_t q = 0; q < t->size; q++)
                        acc += y[t->offset + q] * y[t->offset + q];
                }
                s[(size_t)a * P + p] = acc;
            }
        }
        for (int a = 0; a < na; a++) {
            double m = 0, v = 0;
            for (int p = 0; p < P; p++)
                m += s[(size_t)a * P + p];
            m /= P;
            for (int p = 0; p < P; p++)
                v += (s[(size_t)a * P + p] - m) * (s[(size_t)a * P + p] - m);
            double se2 = P > 1 ? sqrt(v / (P - 1) / P) : NAN, f = sqrt(m);
            pl_row(c, "cross", lnk_op_kind_name(kind), NULL, &c->G.g[a], b->name, f,
                   f > 0 ? se2 / (2 * f) : NAN, NAN, -1, P);
        }
    }
    gsl_rng_free(rng);
    free(x);
    free(y);
    free(s);
}

/* Part 3: ||H_ab||_F of every ordered pair of groups (the diagonal ones
 * included, a = b), the extremes of every group's diagonal block (the
 * block-diagonal approximation's spectrum is their union) and of the full
 * Hessian. */
void pl_part_coupling(pl_ctx *c)
{
    int *src = cli_alloc(sizeof(int) * (size_t)c->G.n);
    for (int i = 0; i < c->G.n; i++)
        src[i] = i;
    pl_cross_frob(c, LNK_OP_HESSIAN, src, c->G.n);
    free(src);
    for (int i = 0; i < c->G.n; i++) {
        pl_op(c, &c->G.g[i], LNK_OP_HESSIAN);
        lnk_eigs_result r;
        pl_eigs(c, LNK_OP_HESSIAN, 1, 0, &r);
        for (int k = 0; k < r.k; k++)
            pl_row(c, "block_eig", "hessian", k < r.n_top ? "top" : "bottom", &c->G.g[i], NULL,
                   r.value[k], NAN, r.residual[k], r.converged[k], r.steps);
        lnk_eigs_result_free(&r);
    }
    pl_op(c, NULL, LNK_OP_HESSIAN);
    lnk_eigs_result r;
    pl_eigs(c, LNK_OP_HESSIAN, 1, 0, &r);
    for (int k = 0; k < r.k; k++)
        pl_row(c, "eig", "hessian", k < r.n_top ? "top" : "bottom", NULL, NULL, r.value[k], NAN,
               r.residual[k], r.converged[k], r.steps);
    lnk_eigs_result_free(&r);
}

/* Part 5: ||A_bb||_F of every group for A = H, G, F at this input scale, and
 * ||A_ab||_F between the first layer's self-attention groups (Q, K, V, O)
 * and every group (Ormaniec et al. derive the self-attention blocks, the
 * diagonal and the query-value ones). */
void pl_part_scale(pl_ctx *c)
{
    static const lnk_op_kind OPS[3] = {LNK_OP_HESSIAN, LNK_OP_GGN, LNK_OP_FUNCTIONAL};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < c->G.n; i++) {
            lnk_operator op = pl_op(c, &c->G.g[i], OPS[k]);
            lnk_frob_result fr;
            CLI_CK(lnk_frobenius(&op, c->num.probes, c->num.rng, &fr));
            pl_row(c, "frob", lnk_op_kind_name(OPS[k]), NULL, &c->G.g[i], NULL, fr.frob,
                   fr.frob_se, NAN, -1, fr.probes);
        }
    int src[4], ns = 0;
    for (int i = 0; i < c->G.n && ns < 4; i++) {
        const pl_group *g = &c->G.g[i];
        if (g->layer == 0 &&
            (!strcmp(g->kind, "Q") || !strcmp(g->kind, "K") || !strcmp(g->kind, "V") ||
             !strcmp(g->kind, "O")))
            src[ns++] = i;
    }
    for (int k = 0; k < 3; k++)
        pl_cross_frob(c, OPS[k], src, ns);
}
