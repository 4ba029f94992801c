/* Parts 1, 2 and 4 of the placement study (place.h): extremes and traces,
 * anatomy, gradients. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/density.h"
#include "place.h"

static const lnk_op_kind OPS[3] = {LNK_OP_HESSIAN, LNK_OP_GGN, LNK_OP_FUNCTIONAL};

/* The eigenvector's squared entries summed over each group's tensors. */
static void mass_rows(pl_ctx *c, const char *which, const double *v)
{
    const lnk_layout *lay = lnk_model_layout(c->m);
    for (int i = 0; i < c->G.n; i++) {
        const pl_group *g = &c->G.g[i];
        double s = 0;
        for (int k = 0; k < g->nt; k++) {
            const lnk_tensor_info *t = &lay->t[g->t[k]];
            for (size_t q = 0; q < t->size; q++)
                s += v[t->offset + q] * v[t->offset + q];
        }
        pl_row(c, "mass", "hessian", which, g, NULL, s, NAN, NAN, -1, -1);
    }
}

/* Part 1.  G = J^T H_out J is positive semidefinite of rank at most
 * (scored positions) x (classes - 1) (the softmax Hessian of a row has rank
 * C - 1); that bound is written (measure g_rank_bound) and where it is below n
 * G's bottom eigenvalue is exactly 0 and is not computed. */
void pl_part_extremes(pl_ctx *c)
{
    const lnk_config *cf = lnk_model_config(c->m);
    size_t n = lnk_model_n_params(c->m);
    int C = cf->task == LNK_TASK_CLS ? cf->n_classes : cf->V_tgt;
    double rank = (double)c->ds->n_scored * (C - 1);
    pl_row(c, "g_rank_bound", "ggn", NULL, NULL, NULL, rank, NAN, NAN, -1, -1);
    pl_op(c, NULL, LNK_OP_HESSIAN);
    for (int k = 0; k < 3; k++) {
        int bottom = OPS[k] != LNK_OP_GGN || rank >= (double)n;
        lnk_eigs_result r;
        pl_eigs(c, OPS[k], bottom, OPS[k] == LNK_OP_HESSIAN, &r);
        for (int i = 0; i < r.k; i++) {
            const char *which = i < r.n_top ? "top" : "bottom";
            pl_row(c, "eig", lnk_op_kind_name(OPS[k]), which, NULL, NULL, r.value[i], NAN,
                   r.residual[i], r.converged[i], r.steps);
            if (r.vectors)
                mass_rows(c, which, r.vectors + (size_t)i * n);
        }
        lnk_eigs_result_free(&r);
    }
    for (int k = 0; k < 3; k++) {
        lnk_operator op = pl_op(c, NULL, OPS[k]);
        lnk_trace_opts to;
        lnk_trace_opts_default(&to);
        to.probes = c->num.trace_probes;
        to.seed = c->num.rng;
        lnk_trace_result tr;
        CLI_CK(lnk_trace(&op, &to, &tr));
        pl_row(c, "trace", lnk_op_kind_name(OPS[k]), NULL, NULL, NULL, tr.trace, tr.std_error,
               NAN, -1, tr.probes);
    }
}

/* JS distances between the SLQ densities r[0..nb) on one grid (sigma a
 * fraction of the common node range: cli_densities); d[i * nb + j]. */
static void js_matrix(const lnk_slq_result *r, int nb, double frac, double *d, double *sigma)
{
    cli_sigma_opts sg;
    cli_sigma_defaults(&sg);
    sg.fraction = frac;
    const lnk_slq_result **rp = cli_alloc(sizeof *rp * (size_t)nb);
    for (int i = 0; i < nb; i++)
        rp[i] = &r[i];
    cli_grid g;
    cli_densities(rp, NULL, nb, &sg, 0, 5000000, NULL, d, &g);
    *sigma = g.sigma;
    free(g.t);
    free(rp);
}

/* The JS rows of one matrix: the mean over the block pairs of each kind pair
 * (se: their sd / sqrt(count), steps: the count; a kind with itself: pairs of
 * layers), JS0, the mean over all pairs (Zhang et al. 2024), and the kernel
 * width. */
static void js_rows(pl_ctx *c, const char *which, const int *blk, int nb, const double *d,
                    double sigma)
{
    const pl_group *g = c->G.g;
    const char **kinds = cli_alloc(sizeof *kinds * (size_t)nb);
    int nk = 0;
    for (int i = 0; i < nb; i++) {
        int seen = 0;
        for (int k = 0; k < nk && !seen; k++)
            seen = !strcmp(kinds[k], g[blk[i]].kind);
        if (!seen)
            kinds[nk++] = g[blk[i]].kind;
    }
    for (int ka = 0; ka <= nk; ka++)
        for (int kb = ka; kb < nk || (ka == nk && kb == nk); kb++) {
            double s = 0, q = 0;
            long cnt = 0;
            for (int i = 0; i < nb; i++)
                for (int j = i + 1; j < nb; j++) {
                    const char *ki = g[blk[i]].kind, *kj = g[blk[j]].kind;
                    int all = ka == nk; /* the last round: every pair (JS0) */
                    if (!all && !((!strcmp(ki, kinds[ka]) && !strcmp(kj, kinds[kb])) ||
                                  (!strcmp(ki, kinds[kb]) && !strcmp(kj, kinds[ka]))))
                        continue;
                    double v = d[(size_t)i * nb + j];
                    s += v, q += v * v, cnt++;
                }
            if (!cnt)
                continue;
            double m = s / cnt, sd = cnt > 1 ? sqrt(fmax(0, (q - cnt * m * m) / (cnt - 1))) : NAN;
            if (ka == nk) {
                pl_row(c, "js0", "hessian", which, NULL, NULL, m, sd / sqrt((double)cnt), NAN,
                       -1, (int)cnt);
                break;
            }
            pl_group ga = {0};
            snprintf(ga.name, sizeof ga.name, "%s", kinds[ka]);
            snprintf(ga.kind, sizeof ga.kind, "%s", kinds[ka]);
            ga.layer = -1;
            pl_row(c, "js", "hessian", which, &ga, kinds[kb], m, sd / sqrt((double)cnt), NAN, -1,
                   (int)cnt);
        }
    pl_row(c, "js_sigma", "hessian", which, NULL, NULL, sigma, NAN, NAN, -1, -1);
    free(kinds);
}

/* Part 2: ||H_bb||_F of every group; the SLQ spectra of the weight blocks
 * (one block a weight matrix of a layer, the embeddings, the output), their
 * JS distances as they are ("raw") and each divided by its block's largest
 * |node| ("scaled": shapes only, as Zhang et al. compare blocks). */
void pl_part_anatomy(pl_ctx *c)
{
    for (int i = 0; i < c->G.n; i++) {
        lnk_operator op = pl_op(c, &c->G.g[i], LNK_OP_HESSIAN);
        lnk_frob_result fr;
        CLI_CK(lnk_frobenius(&op, c->num.probes, c->num.rng, &fr));
        pl_row(c, "frob", "hessian", NULL, &c->G.g[i], NULL, fr.frob, fr.frob_se, NAN, -1,
               fr.probes);
    }
    int *blk = cli_alloc(sizeof(int) * (size_t)c->G.n), nb = 0;
    for (int i = 0; i < c->G.n; i++)
        if (c->G.g[i].weight)
            blk[nb++] = i;
    lnk_slq_result *r = cli_alloc(sizeof *r * (size_t)nb);
    for (int i = 0; i < nb; i++) {
        lnk_operator op = pl_op(c, &c->G.g[blk[i]], LNK_OP_HESSIAN);
        lnk_slq_opts so;
        lnk_slq_opts_default(&so);
        so.runs = c->num.slq_runs;
        so.steps = c->num.slq_steps;
        so.seed = c->num.rng;
        CLI_CK(lnk_slq(&op, &so, &r[i]));
    }
    double *d = cli_alloc(sizeof(double) * (size_t)nb * (size_t)nb), sigma;
    js_matrix(r, nb, c->num.sigma_frac, d, &sigma);
    js_rows(c, "raw", blk, nb, d, sigma);
    for (int i = 0; i < nb; i++) {
        double sc = fmax(fabs(r[i].node_min), fabs(r[i].node_max));
        if (!(sc > 0))
            cli_die("block %s: every SLQ node is 0", c->G.g[blk[i]].name);
        for (int q = 0; q < r[i].offset[r[i].runs]; q++)
            r[i].node[q] /= sc;
        r[i].node_min /= sc;
        r[i].node_max /= sc;
    }
    js_matrix(r, nb, c->num.sigma_frac, d, &sigma);
    js_rows(c, "scaled", blk, nb, d, sigma);
    for (int i = 0; i < nb; i++)
        lnk_slq_result_free(&r[i]);
    free(r);
    free(d);
    free(blk);
}

/* Part 4: the loss and the gradient's norm on every group (the Xiong et al.
 * quantity is the last layer's FFN2 row). */
void pl_part_grad(pl_ctx *c)
{
    size_t n = lnk_model_n_params(c->m);
    double loss, *g = cli_alloc(sizeof(double) * n);
    CLI_CK(lnk_dataset_loss(c->m, c->theta, c->ds, &loss, g));
    pl_row(c, "loss", NULL, NULL, NULL, NULL, loss, NAN, NAN, -1, -1);
    for (int i = 0; i < c->G.n; i++) {
        double s = 0;
        for (int k = 0; k < c->G.g[i].nt; k++) {
            double t = lnk_tensor_norm(c->m, g, c->G.g[i].t[k]);
            s += t * t;
        }
        pl_row(c, "grad", NULL, NULL, &c->G.g[i], NULL, sqrt(s), NAN, NAN, -1, -1);
    }
    free(g);
}
