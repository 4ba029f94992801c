/* The anatomy study's measurements of one point (anatomy.h): the extremes
 * of H, G and F with their eigenvectors' mass per tensor, the block norms,
 * and the Jensen-Shannon distances between the kind blocks' densities. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/blockstats.h"
#include "lnkit/hessian.h"
#include "front/density.h"
#include "front/front.h"
#include "anatomy.h"

/* ------------------------------------------------------------ blocks */

/* Weight kinds of a layer: the side's sublayers' weight matrices. */
typedef struct {
    const char *side, *sub, *w, *kind;
} wkind;
static const wkind LM_KINDS[] = {
    {"dec", "attn", "wq", "Q"}, {"dec", "attn", "wk", "K"},   {"dec", "attn", "wv", "V"},
    {"dec", "attn", "wo", "O"}, {"dec", "ffn", "w1", "FFN1"}, {"dec", "ffn", "w2", "FFN2"}};
static const wkind S2S_KINDS[] = {
    {"enc", "attn", "wq", "Q"},   {"enc", "attn", "wk", "K"},   {"enc", "attn", "wv", "V"},
    {"enc", "attn", "wo", "O"},   {"enc", "ffn", "w1", "FFN1"}, {"enc", "ffn", "w2", "FFN2"},
    {"dec", "attn", "wq", "Q"},   {"dec", "attn", "wk", "K"},   {"dec", "attn", "wv", "V"},
    {"dec", "attn", "wo", "O"},   {"dec", "xattn", "wq", "XQ"}, {"dec", "xattn", "wk", "XK"},
    {"dec", "xattn", "wv", "XV"}, {"dec", "xattn", "wo", "XO"}, {"dec", "ffn", "w1", "FFN1"},
    {"dec", "ffn", "w2", "FFN2"}};

static const lnk_op_kind OPS[3] = {LNK_OP_HESSIAN, LNK_OP_GGN, LNK_OP_FUNCTIONAL};

/* The extremes of H, G and F and their eigenvectors' mass per tensor. */
static void point_extremes(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F,
                           const lnk_layout *lay)
{
    /* extremes of H, G, F and their eigenvectors' mass per tensor */
    for (int k = 0; k < 3; k++) {
        CLI_CK(lnk_hessian_set_kind(h, OPS[k]));
        lnk_operator op = lnk_hessian_operator(h);
        lnk_eigs_opts eo;
        lnk_eigs_opts_default(&eo);
        eo.k_top = eo.k_bottom = 1;
        eo.tol = o->tol;
        eo.max_steps = o->eig_steps;
        eo.vectors = 1;
        eo.seed = o->rng;
        lnk_eigs_result r;
        CLI_CK(lnk_eigs(&op, &eo, &r));
        const char *opn = lnk_op_kind_name(OPS[k]);
        for (int i = 0; i < r.k; i++) {
            const char *which = i < r.n_top ? "top" : "bottom";
            lnk_csv *e = &F->ext.c;
            key_row(e, p, np);
            CLI_CK(lnk_csv_str(e, opn));
            CLI_CK(lnk_csv_str(e, which));
            CLI_CK(lnk_csv_double(e, r.value[i]));
            CLI_CK(lnk_csv_double(e, r.residual[i]));
            CLI_CK(lnk_csv_int(e, r.converged[i]));
            CLI_CK(lnk_csv_int(e, r.steps));
            CLI_CK(lnk_csv_double(e, r.scale));
            CLI_CK(lnk_csv_end_row(e));
            const double *v = r.vectors + (size_t)i * np;
            for (int t = 0; t < lay->n_tensors; t++) {
                double s = 0;
                for (size_t q = 0; q < lay->t[t].size; q++)
                    s += v[lay->t[t].offset + q] * v[lay->t[t].offset + q];
                lnk_csv *mc = &F->mass.c;
                key_row(mc, p, np);
                CLI_CK(lnk_csv_str(mc, opn));
                CLI_CK(lnk_csv_str(mc, which));
                CLI_CK(lnk_csv_str(mc, lay->t[t].name));
                CLI_CK(lnk_csv_double(mc, s));
                CLI_CK(lnk_csv_end_row(mc));
            }
        }
        lnk_eigs_result_free(&r);
    }

}

/* ||A_bb||_F of every layer's weight matrices, A = H, G, F. */
static void point_blocknorms(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F)
{
    int s2s = p->task == LNK_TASK_SEQ2SEQ;
    const wkind *K = s2s ? S2S_KINDS : LM_KINDS;
    int nk = s2s ? (int)(sizeof S2S_KINDS / sizeof *K) : (int)(sizeof LM_KINDS / sizeof *K);
    /* ||A_bb||_F of every layer's weight matrices, A = H, G, F */
    for (int k = 0; k < nk; k++)
        for (int l = 0; l < p->L; l++) {
            char pat[64];
            snprintf(pat, sizeof pat, "%s.%d.%s.%s", K[k].side, l, K[k].sub, K[k].w);
            CLI_CK(lnk_hessian_set_block(h, pat));
            for (int q = 0; q < 3; q++) {
                CLI_CK(lnk_hessian_set_kind(h, OPS[q]));
                lnk_operator op = lnk_hessian_operator(h);
                lnk_frob_result fr;
                CLI_CK(lnk_frobenius(&op, o->probes, o->rng, &fr));
                lnk_csv *bc = &F->bn.c;
                key_row(bc, p, np);
                CLI_CK(lnk_csv_str(bc, pat));
                CLI_CK(lnk_csv_str(bc, K[k].side));
                CLI_CK(lnk_csv_int(bc, l));
                CLI_CK(lnk_csv_str(bc, K[k].kind));
                CLI_CK(lnk_csv_int(bc, (long long)op.n));
                CLI_CK(lnk_csv_str(bc, lnk_op_kind_name(OPS[q])));
                CLI_CK(lnk_csv_double(bc, fr.frob));
                CLI_CK(lnk_csv_double(bc, fr.frob_se));
                CLI_CK(lnk_csv_end_row(bc));
            }
        }

}

/* SLQ of the Hessian's kind blocks (all layers of a side together), and the
 * Jensen-Shannon distances between their densities. */
static void point_js(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F)
{
    int s2s = p->task == LNK_TASK_SEQ2SEQ;
    const wkind *K = s2s ? S2S_KINDS : LM_KINDS;
    int nk = s2s ? (int)(sizeof S2S_KINDS / sizeof *K) : (int)(sizeof LM_KINDS / sizeof *K);
    int nj = nk + (s2s ? 3 : 2);
    char (*jn)[64] = cli_alloc(sizeof *jn * (size_t)nj);
    lnk_slq_result *sr = cli_alloc(sizeof *sr * (size_t)nj);
    int a = 0;
    snprintf(jn[a++], 64, s2s ? "src_emb" : "tgt_emb");
    if (s2s)
        snprintf(jn[a++], 64, "tgt_emb");
    for (int k = 0; k < nk; k++)
        snprintf(jn[a++], 64, "%s.*.%s.%s", K[k].side, K[k].sub, K[k].w);
    snprintf(jn[a++], 64, "out.w");
    CLI_CK(lnk_hessian_set_kind(h, LNK_OP_HESSIAN));
    for (int i = 0; i < nj; i++) {
        CLI_CK(lnk_hessian_set_block(h, jn[i]));
        lnk_operator op = lnk_hessian_operator(h);
        lnk_slq_opts so;
        lnk_slq_opts_default(&so);
        so.runs = o->runs;
        so.steps = o->steps;
        so.seed = o->rng;
        CLI_CK(lnk_slq(&op, &so, &sr[i]));
    }
    /* the distances between the densities as they are (one kernel, sigma a
     * fraction of the common node range), then between the densities of the
     * spectra each divided by its block's largest |node| (shapes only, in
     * [-1, 1]; Zhang et al. compare block spectra normalised by their scale) */
    double *js = cli_alloc(sizeof(double) * 2 * (size_t)nj * (size_t)nj), sig[2];
    const lnk_slq_result **rp = cli_alloc(sizeof *rp * (size_t)nj);
    const char **names = cli_alloc(sizeof *names * (size_t)nj);
    for (int i = 0; i < nj; i++)
        rp[i] = &sr[i], names[i] = jn[i];
    cli_sigma_opts sg;
    cli_sigma_defaults(&sg);
    sg.fraction = o->sigma_frac;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            for (int i = 0; i < nj; i++) {
                double sc = fmax(fabs(sr[i].node_min), fabs(sr[i].node_max));
                if (!(sc > 0))
                    cli_die("block %s: every SLQ node is 0", jn[i]);
                for (int q = 0; q < sr[i].offset[sr[i].runs]; q++)
                    sr[i].node[q] /= sc;
                sr[i].node_min /= sc;
                sr[i].node_max /= sc;
            }
        cli_grid g;
        cli_densities(rp, names, nj, &sg, o->steps, 5000000, NULL, js + (size_t)pass * nj * nj,
                      &g);
        sig[pass] = g.sigma;
        free(g.t);
    }
    for (int i = 0; i < nj; i++)
        for (int j = i + 1; j < nj; j++) {
            lnk_csv *jc = &F->js.c;
            key_row(jc, p, np);
            CLI_CK(lnk_csv_str(jc, jn[i]));
            CLI_CK(lnk_csv_str(jc, jn[j]));
            CLI_CK(lnk_csv_double(jc, js[(size_t)i * nj + j]));
            CLI_CK(lnk_csv_double(jc, sig[0]));
            CLI_CK(lnk_csv_double(jc, js[((size_t)nj + i) * nj + j]));
            CLI_CK(lnk_csv_double(jc, sig[1]));
            CLI_CK(lnk_csv_end_row(jc));
        }
    for (int i = 0; i < nj; i++)
        lnk_slq_result_free(&sr[i]);
    free(sr);
    free(rp);
    free(names);
    free(jn);
    free(js);
}

void run_point(const opts_t *o, const point_t *p, const cli_pairs *D, files_t *F)
{
    lnk_config c;
    make_config(&c, o, D, p);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    size_t np = lnk_model_n_params(m);
    const lnk_layout *lay = lnk_model_layout(m);
    double *th = cli_alloc(sizeof(double) * np);
    CLI_CK(lnk_model_init_params(m, th));
    lnk_batch b = {0};
    lnk_dataset ds;
    if (p->task == LNK_TASK_LM) {
        CLI_CK(lnk_batch_synthetic(m, o->B, o->T, 1234, &b));
        ds = (lnk_dataset){&b, 1, 1, 0, lnk_batch_n_scored(m, &b), NULL};
    } else
        ds = (lnk_dataset){D->chunks, D->n_chunks, D->n_chunks, 0, D->p.n_scored, NULL};
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    if (!h)
        cli_die_lib();

    point_extremes(o, p, h, np, F, lay);
    point_blocknorms(o, p, h, np, F);
    point_js(o, p, h, np, F);
    lnk_hessian_free(h);
    if (p->task == LNK_TASK_LM)
        lnk_batch_free(&b);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}
