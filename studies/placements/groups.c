/* The groups of a model's tensors (place.h), from their MODEL.md §6 names,
 * and the rows every part writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "place.h"

const char *const PL_HDR[PL_NCOL] = {"measure", "operator", "which", "block", "kind",
                                     "layer",   "n",        "block_b", "value", "se",
                                     "residual", "converged", "steps"};

/* A tensor's group: kind, side and layer from its name. */
static void classify(const char *name, char *kind, char *side, int *layer, int *weight)
{
    static const struct {
        const char *suffix, *kind;
    } W[] = {{"attn.wq", "Q"},   {"attn.wk", "K"},   {"attn.wv", "V"},   {"attn.wo", "O"},
             {"xattn.wq", "XQ"}, {"xattn.wk", "XK"}, {"xattn.wv", "XV"}, {"xattn.wo", "XO"},
             {"ffn.w1", "FFN1"}, {"ffn.w3", "FFN3"}, {"ffn.w2", "FFN2"}};
    side[0] = '\0';
    *layer = -1;
    *weight = 0;
    if (!strcmp(name, "out.w")) {
        strcpy(kind, "out");
        *weight = 1;
        return;
    }
    if (strstr(name, "_emb") || strstr(name, "_pos")) {
        strcpy(kind, "emb");
        *weight = !strcmp(name, "src_emb") || !strcmp(name, "tgt_emb");
        return;
    }
    snprintf(side, 4, "%.3s", name);
    if (strstr(name, ".final_norm.")) {
        strcpy(kind, "final");
        return;
    }
    char *e;
    *layer = (int)strtol(name + 4, &e, 10);
    const char *rest = e + 1; /* after "dec.3." */
    for (size_t i = 0; i < sizeof W / sizeof *W; i++)
        if (!strcmp(rest, W[i].suffix)) {
            strcpy(kind, W[i].kind);
            *weight = 1;
            return;
        }
    strcpy(kind, !strncmp(rest, "norm", 4) ? "norm" : "bias");
}

void pl_groups_make(const lnk_model *m, pl_groups *G)
{
    const lnk_layout *lay = lnk_model_layout(m);
    G->n = 0;
    G->g = cli_alloc(sizeof *G->g * (size_t)lay->n_tensors);
    for (int i = 0; i < lay->n_tensors; i++) {
        char kind[8], side[4], name[48];
        int layer, weight;
        classify(lay->t[i].name, kind, side, &layer, &weight);
        if (layer >= 0)
            snprintf(name, sizeof name, "%s.%d.%s", side, layer, kind);
        else if (side[0])
            snprintf(name, sizeof name, "%s.%s", side, kind);
        else
            snprintf(name, sizeof name, "%s", kind);
        pl_group *g = NULL;
        for (int j = 0; j < G->n && !g; j++)
            if (!strcmp(G->g[j].name, name))
                g = &G->g[j];
        if (!g) {
            g = &G->g[G->n++];
            memset(g, 0, sizeof *g);
            snprintf(g->name, sizeof g->name, "%s", name);
            snprintf(g->kind, sizeof g->kind, "%s", kind);
            snprintf(g->side, sizeof g->side, "%s", side);
            g->layer = layer;
            g->t = cli_alloc(sizeof(int) * (size_t)lay->n_tensors);
            g->pat = cli_alloc(1);
            g->pat[0] = '\0';
        }
        g->weight |= weight;
        g->t[g->nt++] = i;
        g->n += lay->t[i].size;
        size_t len = strlen(g->pat) + strlen(lay->t[i].name) + 2;
        char *p = cli_alloc(len);
        snprintf(p, len, "%s%s%s", g->pat, g->pat[0] ? "," : "", lay->t[i].name);
        free(g->pat);
        g->pat = p;
    }
}

void pl_groups_free(pl_groups *G)
{
    for (int i = 0; i < G->n; i++) {
        free(G->g[i].t);
        free(G->g[i].pat);
    }
    free(G->g);
    G->g = NULL;
    G->n = 0;
}

void pl_row(pl_ctx *c, const char *measure, const char *op, const char *which,
            const pl_group *a, const char *block_b, double value, double se, double residual,
            int converged, int steps)
{
    lnk_csv *w = &c->o->c;
    CLI_CK(lnk_csv_str(w, measure));
    CLI_CK(lnk_csv_str(w, op ? op : ""));
    CLI_CK(lnk_csv_str(w, which ? which : ""));
    CLI_CK(lnk_csv_str(w, a ? a->name : ""));
    CLI_CK(lnk_csv_str(w, a ? a->kind : ""));
    if (a && a->layer >= 0)
        CLI_CK(lnk_csv_int(w, a->layer));
    else
        CLI_CK(lnk_csv_str(w, ""));
    if (a)
        CLI_CK(lnk_csv_int(w, (long long)a->n));
    else
        CLI_CK(lnk_csv_str(w, ""));
    CLI_CK(lnk_csv_str(w, block_b ? block_b : ""));
    if (!isfinite(value))
        cli_die("%s %s %s: the value is not finite (%g)", measure, op ? op : "",
             a ? a->name : "", value);
    CLI_CK(lnk_csv_double(w, value));
    csv_num_or_empty(c->o, se, isfinite(se));
    csv_num_or_empty(c->o, residual, isfinite(residual));
    csv_num_or_empty(c->o, converged, converged >= 0);
    csv_num_or_empty(c->o, steps, steps >= 0);
    CLI_CK(lnk_csv_end_row(w));
}

lnk_operator pl_op(pl_ctx *c, const pl_group *g, lnk_op_kind kind)
{
    CLI_CK(lnk_hessian_set_block(c->h, g ? g->pat : NULL));
    CLI_CK(lnk_hessian_set_kind(c->h, kind));
    return lnk_hessian_operator(c->h);
}

void pl_eigs(pl_ctx *c, lnk_op_kind kind, int bottom, int vectors, lnk_eigs_result *r)
{
    lnk_operator op = lnk_hessian_operator(c->h);
    CLI_CK(lnk_hessian_set_kind(c->h, kind));
    op = lnk_hessian_operator(c->h);
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = 1;
    eo.k_bottom = bottom && op.n > 1 ? 1 : 0;
    eo.tol = c->num.tol;
    eo.max_steps = c->num.eig_steps;
    eo.vectors = vectors;
    eo.seed = c->num.rng;
    CLI_CK(lnk_eigs(&op, &eo, r));
}
