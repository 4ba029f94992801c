/* hessian_spectrum: Post-LN vs Pre-LN Hessian spectra at initialisation.
 *
 * For each norm position and seed (same data for both): top-k and bottom-k
 * eigenvalues with residuals (Lanczos), the trace (Hutchinson), the SLQ
 * spectral density, and the top eigenvalue of every block (per layer and
 * weight type, embeddings, output).  Writes into OUT/:
 *   eigs.csv      norm_pos,seed,which,index,eigenvalue,residual,converged
 *   trace.csv     norm_pos,seed,method,probes,trace,stderr
 *   blocks.csv    norm_pos,seed,block,layer,kind,top_eigenvalue,residual,converged
 *   slq_nodes.csv norm_pos,seed,run,index,node,weight
 *   density.csv   norm_pos,t,density  (nodes of all seeds pooled; one sigma for both)
 *   summary.md    the tables extremes, per_seed, blocks_table (also .md, .tex):
 *                 mean ± sd over seeds and the Post/Pre ratios over the seeds
 *                 where both values converged
 *   values.csv, claims.csv   the numbers results/README.md quotes, the claims
 *   density.gp    gnuplot script -> density.png (log density axis)
 * every CSV with its .meta.json.  The summarising step reads only the raw
 * CSVs (eigs, trace, blocks, slq_nodes, and the settings in eigs.meta.json);
 * --summarise DIR runs it alone.  Data: synthetic lm batches by default, or
 * --text FILE (one sequence a line, lm task). */
#include <getopt.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "lnkit/lnkit.h"
#include "lnkit/text.h"
#include "kit/kit.h"
#include "kit/spectral.h"
#include "kit/quoted.h"


typedef struct {
    const char *out, *text;
    int d, h, L, V, B, T, seeds, k, probes, runs, steps, block_steps, quiet;
    double kappa;
} opts_t;

static void usage(void)
{
    printf("usage: hessian_spectrum [options]\n"
           "  --out DIR        output directory                          (results/hessian)\n"
           "  --d N --h N --L N --V N   model (lm, layernorm, xavier)    (32, 4, 4, 200)\n"
           "  --batch B --len T          synthetic batch                 (8, 24)\n"
           "  --text FILE      lm batch from text instead (first B lines, at most T tokens)\n"
           "  --seeds N        initialisation seeds 0..N-1               (3)\n"
           "  --k N            top-k and bottom-k eigenvalues            (5)\n"
           "  --probes N       Hutchinson probes for the trace           (100)\n"
           "  --runs N --steps M         SLQ start vectors and steps     (10, 80)\n"
           "  --block-steps M  Lanczos step limit for block top eigenvalues (60)\n"
           "  --kappa K        SLQ kernel width, Papyan's kappa          (3)\n"
           "  --quiet          no progress on stderr\n"
           "  --summarise DIR  only the summarising step, from the raw CSVs in DIR (eigs, trace,\n"
           "                   blocks, slq_nodes and eigs.meta.json): density.csv, summary.md,\n"
           "                   tables, values.csv, claims.csv, density.gp (with --kappa)\n");
}

static void make_config(lnk_config *c, const opts_t *o, int pre, int seed)
{
    lnk_config_default(c);
    c->norm_pos = pre ? LNK_POS_PRE : LNK_POS_POST;
    c->d = o->d;
    c->h = o->h;
    c->L = o->L;
    c->V = o->V;
    c->seed = (uint64_t)seed;
    CK(lnk_config_finalize(c));
}

static void make_batch(const lnk_model *m, const opts_t *o, lnk_batch *b)
{
    if (!o->text) {
        CK(lnk_batch_synthetic(m, o->B, o->T, 1234, b));
        return;
    }
    lnk_text t;
    lnk_vocab *v;
    CK(lnk_text_read(o->text, &t));
    study_input_read(o->text, &t.digest);
    const lnk_text *tx[1] = {&t};
    CK(lnk_vocab_build(tx, 1, 1, o->V, &v));
    CK(lnk_text_lm_batch(&t, v, 0, o->B, o->T, b));
    lnk_vocab_free(v);
    lnk_text_free(&t);
}


/* The point (pre * S + seed) of row r. */
static int point_of(const study_table *t, size_t r, int cp, int cs, int S)
{
    int pre = !strcmp(study_table_str(t, r, cp), "pre");
    double s = study_table_num(t, r, cs);
    if (!(s >= 0 && s < S))
        fail("%s: row %zu: seed %g outside 0..%d", t->d.what, r + 2, s, S - 1);
    return pre * S + (int)s;
}

/* What the summary reads back from the raw CSVs, per point i = pre * S + s:
 * the top and bottom eigenvalue (index 0 of each; NaN if none) with their
 * convergence, the trace and its standard error, every block's top
 * eigenvalue with its convergence (blocks in file order, names in blk). */
typedef struct {
    int S, nblk;
    double *top, *bot, *trc, *tse, *btop;
    int *topc, *botc, *bconv;
    char (*blk)[64];
} points_t;

static void read_points(const char *dir, int S, points_t *P)
{
    P->S = S;
    size_t n2 = 2 * (size_t)S;
    P->top = study_alloc(sizeof(double) * n2);
    P->bot = study_alloc(sizeof(double) * n2);
    P->trc = study_alloc(sizeof(double) * n2);
    P->tse = study_alloc(sizeof(double) * n2);
    P->topc = calloc(n2, sizeof(int));
    P->botc = calloc(n2, sizeof(int));
    if (!P->topc || !P->botc)
        fail("out of memory");
    for (size_t i = 0; i < n2; i++)
        P->top[i] = P->bot[i] = P->trc[i] = P->tse[i] = NAN;
    study_table t;
    study_table_read(&t, dir, "eigs.csv");
    int cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    int cw = study_table_col(&t, "which"), ci = study_table_col(&t, "index");
    int cv = study_table_col(&t, "eigenvalue"), cc = study_table_col(&t, "converged");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int i = point_of(&t, r, cp, cs, S), top = !strcmp(study_table_str(&t, r, cw), "top");
        if (study_table_num(&t, r, ci) == 0) {
            (top ? P->top : P->bot)[i] = study_table_num(&t, r, cv);
            (top ? P->topc : P->botc)[i] = study_table_num(&t, r, cc) != 0;
        }
    }
    study_table_free(&t);
    study_table_read(&t, dir, "trace.csv");
    cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    cv = study_table_col(&t, "trace");
    int ce = study_table_col(&t, "stderr");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int i = point_of(&t, r, cp, cs, S);
        P->trc[i] = study_table_num(&t, r, cv);
        P->tse[i] = study_table_num(&t, r, ce);
    }
    study_table_free(&t);
    study_table_read(&t, dir, "blocks.csv");
    cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    cv = study_table_col(&t, "top_eigenvalue");
    cc = study_table_col(&t, "converged");
    int cb = study_table_col(&t, "block");
    if (t.d.nrow % n2)
        fail("%s: %zu rows, not a multiple of the %zu points", t.d.what, t.d.nrow, n2);
    int nblk = (int)(t.d.nrow / n2);
    P->nblk = nblk;
    P->btop = study_alloc(sizeof(double) * n2 * (size_t)nblk);
    P->bconv = calloc(n2 * (size_t)nblk, sizeof(int));
    P->blk = calloc((size_t)nblk, sizeof *P->blk);
    int *nb = calloc(n2, sizeof(int));
    if (!P->bconv || !P->blk || !nb)
        fail("out of memory");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int i = point_of(&t, r, cp, cs, S);
        if (nb[i] == nblk)
            fail("%s: more than %d blocks for a point", t.d.what, nblk);
        const char *name = study_table_str(&t, r, cb);
        if (i == 0)
            snprintf(P->blk[nb[i]], 64, "%s", name);
        else if (strcmp(P->blk[nb[i]], name))
            fail("%s: row %zu: block '%s' where the first point has '%s'", t.d.what, r + 2, name,
                 P->blk[nb[i]]);
        P->btop[(size_t)i * nblk + nb[i]] = study_table_num(&t, r, cv);
        P->bconv[(size_t)i * nblk + nb[i]++] = study_table_num(&t, r, cc) != 0;
    }
    study_table_free(&t);
    free(nb);
}

static void points_free(points_t *P)
{
    free(P->top), free(P->bot), free(P->trc), free(P->tse), free(P->btop);
    free(P->topc), free(P->botc), free(P->bconv), free(P->blk);
}

/* The summarising step, from the raw CSVs of dir alone (eigs, trace, blocks,
 * slq_nodes and the settings in eigs.meta.json): density.csv, density.gp,
 * the tables (extremes, per_seed, blocks_table; .md and .tex), summary.md,
 * values.csv and claims.csv.  Comparisons use only values that converged
 * (the CSVs' converged flags) for both variants of a seed. */
static void summarise(const char *dir, double kappa)
{
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    static const char *const raw[] = {"eigs", "trace", "blocks", "slq_nodes"};
    for (int k = 0; k < 4; k++) {
        char p[1100];
        snprintf(p, sizeof p, "%s/%s.csv", dir, raw[k]);
        study_input(p);
    }
    json_t *side = study_sidecar(dir, "eigs");
    char what[1100];
    snprintf(what, sizeof what, "%s/eigs.meta.json", dir);
    const json_t *cfg = json_object_get(side, "config");
    if (!cfg)
        fail("%s: no member 'config'", what);
    int d = (int)sidecar_int(cfg, "d", what), h = (int)sidecar_int(cfg, "h", what);
    int d_ff = (int)sidecar_int(cfg, "d_ff", what), L = (int)sidecar_int(cfg, "L", what);
    int V = (int)sidecar_int(cfg, "V", what), S = (int)sidecar_int(side, "seeds", what);
    int B = (int)sidecar_int(side, "B", what), T = (int)sidecar_int(side, "T", what);
    int steps = (int)sidecar_int(side, "slq_steps", what);
    int runs = (int)sidecar_int(side, "slq_runs", what), k = (int)sidecar_int(side, "k", what);
    int probes = (int)sidecar_int(side, "probes", what);
    int bsteps = (int)sidecar_int(side, "block_steps", what);
    double etol = sidecar_num(side, "eig_tol", what), btol = sidecar_num(side, "block_tol", what);
    const char *data = sidecar_str(side, "data", what);
    lnk_meta *extra = summary_extra("hessian_spectrum --summarise", side, NULL);

    /* density: nodes of all seeds pooled per variant, one sigma for both */
    lnk_slq_result *slq;
    int *slq_pre, nslq;
    spec_read_slq(dir, &slq, &slq_pre, &nslq);
    double integ[2], lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int i = 0; i < nslq; i++) {
        lo[slq_pre[i]] = fmin(lo[slq_pre[i]], slq[i].node_min);
        hi[slq_pre[i]] = fmax(hi[slq_pre[i]], slq[i].node_max);
    }
    double sigma = spec_write_density(dir, slq, slq_pre, nslq, kappa, steps, NULL, extra, start,
                                      t0, integ);
    for (int i = 0; i < nslq; i++)
        lnk_slq_result_free(&slq[i]);
    free(slq);
    free(slq_pre);
    char title[256];
    snprintf(title, sizeof title, "Hessian spectral density at initialisation (lm, d=%d, L=%d, "
             "%d seeds, SLQ %dx%d, sigma=%.3g)", d, L, S, runs, steps, sigma);
    study_density_gp(dir, title);

    points_t P;
    read_points(dir, S, &P);
    char md[1100];
    snprintf(md, sizeof md, "%s/summary.md", dir);
    lnk_afile am;
    CK(lnk_afile_open(&am, md));
    study_track(&am);
    FILE *f = am.f;
    char setting[256];
    snprintf(setting, sizeof setting, "lm, d = %d, h = %d, d_ff = %d, L = %d, V = %d, Xavier, "
             "%s, B = %d, T = %d, %d seeds", d, h, d_ff, L, V,
             strncmp(data, "synthetic", 9) ? data : "synthetic batch", B, T, S);
    fprintf(f, "# Hessian at initialisation: Post-LN vs Pre-LN\n\n"
               "%s; data: %s.  Mean ± sd over the seeds compared; a Post / Pre comparison uses "
               "only seeds where both variants' values converged (top-%d / bottom-%d "
               "eigenvalues: residual <= %g x the largest |Ritz value| of the run; blocks: %g, "
               "at most %d Lanczos steps).\n\n",
            setting, data, k, k, etol, btol, bsteps);
    static const char *const hx[] = {"quantity", "Post-LN", "Pre-LN", "Post / Pre (means)",
                                     "Post / Pre per seed", "seeds compared"};
    lnk_table tx;
    CK(lnk_table_init(&tx, 6, hx, "lrrrrr"));
    spec_cmp ctop = spec_compare(P.top, P.topc, P.top + S, P.topc + S, S, 1);
    spec_cmp cbot = spec_compare(P.bot, P.botc, P.bot + S, P.botc + S, S, 1);
    spec_cmp ctr = spec_compare(P.trc, NULL, P.trc + S, NULL, S, 1);
    spec_cmp_row(&tx, "top eigenvalue", &ctop, S);
    spec_cmp_row(&tx, "bottom eigenvalue", &cbot, S);
    spec_cmp_row(&tx, "trace (Hutchinson)", &ctr, S);
    int r = lnk_table_new_row(&tx);
    CK(lnk_table_set(&tx, r, 0, "SLQ nodes, smallest"));
    CK(lnk_table_set(&tx, r, 1, "%.3g", lo[0]));
    CK(lnk_table_set(&tx, r, 2, "%.3g", lo[1]));
    CK(lnk_table_set(&tx, r, 3, "%.2f", lo[0] / lo[1]));
    CK(lnk_table_set(&tx, r, 5, "pooled"));
    r = lnk_table_new_row(&tx);
    CK(lnk_table_set(&tx, r, 0, "SLQ nodes, largest"));
    CK(lnk_table_set(&tx, r, 1, "%.3g", hi[0]));
    CK(lnk_table_set(&tx, r, 2, "%.3g", hi[1]));
    CK(lnk_table_set(&tx, r, 3, "%.2f", hi[0] / hi[1]));
    CK(lnk_table_set(&tx, r, 5, "pooled"));
    study_write_table(dir, "extremes", &tx,
                "Extremal eigenvalues, trace and the reach of the spectral density (the "
                "smallest and largest SLQ node over all runs and seeds: where density.png's "
                "tails end).", f);
    lnk_table_free(&tx);

    static const char *const hs[] = {"seed", "top, Post-LN", "top, Pre-LN", "Post / Pre",
                                     "bottom, Post-LN", "bottom, Pre-LN", "Post / Pre",
                                     "trace ± se, Post-LN", "trace ± se, Pre-LN"};
    lnk_table ts;
    CK(lnk_table_init(&ts, 9, hs, "rrrrrrrrr"));
    for (int s = 0; s < S; s++) {
        r = lnk_table_new_row(&ts);
        CK(lnk_table_set(&ts, r, 0, "%d", s));
        CK(lnk_table_set(&ts, r, 1, "%#.3g%s", P.top[s], P.topc[s] ? "" : " (not converged)"));
        CK(lnk_table_set(&ts, r, 2, "%#.3g%s", P.top[S + s],
                         P.topc[S + s] ? "" : " (not converged)"));
        CK(lnk_table_set(&ts, r, 3, "%.2f", P.top[s] / P.top[S + s]));
        CK(lnk_table_set(&ts, r, 4, "%#.3g%s", P.bot[s], P.botc[s] ? "" : " (not converged)"));
        CK(lnk_table_set(&ts, r, 5, "%#.3g%s", P.bot[S + s],
                         P.botc[S + s] ? "" : " (not converged)"));
        CK(lnk_table_set(&ts, r, 6, "%.2f", P.bot[s] / P.bot[S + s]));
        table_set_pm(&ts, r, 7, P.trc[s], P.tse[s]);
        table_set_pm(&ts, r, 8, P.trc[S + s], P.tse[S + s]);
    }
    study_write_table(dir, "per_seed", &ts, "Every seed (the same seed gives both variants the same "
                "weights).", f);
    lnk_table_free(&ts);

    int nb = P.nblk;
    static const char *const hb[] = {"block", "Post-LN", "Pre-LN", "Post / Pre (means)",
                                     "Post / Pre per seed", "seeds compared"};
    lnk_table tb;
    CK(lnk_table_init(&tb, 6, hb, "lrrrrr"));
    spec_cmp *cb = study_alloc(sizeof(spec_cmp) * (size_t)nb);
    int nconv[2] = {0, 0};
    for (int b = 0; b < nb; b++) {
        for (int s = 0; s < 2 * S; s++)
            nconv[s >= S] += P.bconv[s * nb + b];
        cb[b] = spec_compare(P.btop + b, P.bconv + b, P.btop + (size_t)S * nb + b,
                        P.bconv + (size_t)S * nb + b, S, nb);
        char name[80];
        snprintf(name, sizeof name, "`%s`", P.blk[b]);
        spec_cmp_row(&tb, name, &cb[b], S);
    }
    char cap[512];
    snprintf(cap, sizeof cap, "Top eigenvalue of each block (the Hessian restricted to the "
             "block's parameters); %d of %d (Post-LN) and %d of %d (Pre-LN) block values "
             "converged.", nconv[0], S * nb, nconv[1], S * nb);
    study_write_table(dir, "blocks_table", &tb, cap, f);
    lnk_table_free(&tb);
    fprintf(f, "Trace: Hutchinson, %d Rademacher probes (standard errors in the per-seed "
               "table).  Spectral density: `density.csv` / `density.png` (SLQ %d x %d per "
               "seed, nodes of the %d seeds pooled, one Gaussian kernel for both, sigma = %.3g "
               "from Papyan's kappa = %g; integrals %.9f and %.9f).\n",
            probes, runs, steps, S, sigma, kappa, integ[0], integ[1]);
    study_untrack(&am);
    CK(lnk_afile_commit(&am));

    /* the numbers the READMEs quote, and the headline claims */
    study_quoted q;
    quoted_open(&q, dir);
    char b1[96], b2[96], v[512];
    const spec_cmp *cq[3] = {&ctop, &cbot, &ctr};
    const char *qn[3] = {"top", "bottom", "trace"};
    for (int i = 0; i < 3; i++) {
        lnk_fmt_pm(b1, sizeof b1, cq[i]->post, cq[i]->post_sd);
        lnk_fmt_pm(b2, sizeof b2, cq[i]->pre, cq[i]->pre_sd);
        snprintf(v, sizeof v, "%s_post", qn[i]);
        quoted_value(&q, v, "%s", b1);
        snprintf(v, sizeof v, "%s_pre", qn[i]);
        quoted_value(&q, v, "%s", b2);
        snprintf(v, sizeof v, "%s_ratio", qn[i]);
        quoted_value(&q, v, "%.2f", cq[i]->ratio);
        snprintf(v, sizeof v, "%s_ratio_range", qn[i]);
        quoted_value(&q, v, "%.2f-%.2f", cq[i]->rmin, cq[i]->rmax);
        snprintf(v, sizeof v, "%s_seeds", qn[i]);
        quoted_value(&q, v, "%d", cq[i]->n);
    }
    int nabove = 0;
    for (int s = 0; s < S; s++)
        nabove += P.topc[s] && P.topc[S + s] && P.top[s] > P.top[S + s];
    quoted_value(&q, "top_post_above", "%d", nabove);
    quoted_value(&q, "top_post_min", "%.2g", gsl_stats_min(P.top, 1, (size_t)S));
    quoted_value(&q, "top_post_max", "%.3g", gsl_stats_max(P.top, 1, (size_t)S));
    quoted_value(&q, "tail_neg_post", "%.3g", lo[0]);
    quoted_value(&q, "tail_neg_pre", "%.3g", lo[1]);
    quoted_value(&q, "tail_pos_post", "%.3g", hi[0]);
    quoted_value(&q, "tail_pos_pre", "%.3g", hi[1]);
    quoted_value(&q, "tail_neg_ratio", "%.1f", lo[0] / lo[1]);
    quoted_value(&q, "tail_pos_ratio", "%.1f", hi[0] / hi[1]);
    /* blocks by kind: the range of the ratios of the means, and per seed */
    static const char *const kinds[] = {"attn", "ffn", "emb"};
    double bmin = INFINITY, bmax = -INFINITY, smin = INFINITY;
    int ncmp = 0, nbig = 0;
    for (int kk = 0; kk < 3; kk++) {
        double lo_ = INFINITY, hi_ = -INFINITY;
        for (int b = 0; b < nb; b++) {
            int is = kk == 2 ? !strstr(P.blk[b], ".attn") && !strstr(P.blk[b], ".ffn")
                             : strstr(P.blk[b], kk ? ".ffn" : ".attn") != NULL;
            if (!is || !cb[b].n)
                continue;
            lo_ = fmin(lo_, cb[b].ratio), hi_ = fmax(hi_, cb[b].ratio);
        }
        char a1[32], a2[32];
        snprintf(a1, sizeof a1, "%.1f", lo_);
        snprintf(a2, sizeof a2, "%.1f", hi_);
        snprintf(v, sizeof v, "block_ratio_%s", kinds[kk]);
        if (strcmp(a1, a2))
            quoted_value(&q, v, "%s-%s", a1, a2);
        else
            quoted_value(&q, v, "%s", a1);
    }
    for (int b = 0; b < nb; b++) {
        if (!cb[b].n)
            continue;
        bmin = fmin(bmin, cb[b].ratio), bmax = fmax(bmax, cb[b].ratio);
        smin = fmin(smin, cb[b].rmin);
        for (int s = 0; s < S; s++)
            if (P.bconv[s * nb + b] && P.bconv[(S + s) * nb + b]) {
                ncmp++;
                nbig += P.btop[s * nb + b] > P.btop[(S + s) * nb + b];
            }
    }
    quoted_value(&q, "block_ratio_min", "%.1f", bmin);
    quoted_value(&q, "block_ratio_max", "%.1f", bmax);
    quoted_value(&q, "block_seed_ratio_min", "%.2f", smin);
    quoted_value(&q, "block_pairs_compared", "%d", ncmp);
    quoted_value(&q, "block_pairs_post_larger", "%d", nbig);
    { /* every eigenvalue's convergence, not only the extremes compared */
        study_table te;
        study_table_read(&te, dir, "eigs.csv");
        int cc = study_table_col(&te, "converged"), ne = 0;
        for (size_t i = 0; i < te.d.nrow; i++)
            ne += study_table_num(&te, i, cc) != 0;
        quoted_value(&q, "eig_conv", "%d of %zu", ne, te.d.nrow);
        study_table_free(&te);
    }
    quoted_value(&q, "block_conv_all", "%d of %d", nconv[0] + nconv[1], 2 * S * nb);
    quoted_value(&q, "block_conv_post", "%d of %d", nconv[0], S * nb);
    quoted_value(&q, "block_conv_pre", "%d of %d", nconv[1], S * nb);
    quoted_value(&q, "sigma", "%.3g", sigma);
    /* claims */
    snprintf(v, sizeof v, "%s against %s (Post / Pre %.2f, per seed %.2f-%.2f; %d of %d seeds, "
             "converged to %g)", (lnk_fmt_pm(b1, sizeof b1, ctop.post, ctop.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, ctop.pre, ctop.pre_sd), b2), ctop.ratio, ctop.rmin,
             ctop.rmax, ctop.n, S, etol);
    quoted_claim(&q, "Hessian top eigenvalue at init, Post-LN vs Pre-LN (mean ± sd over seeds)",
                 v, setting, "eigs.csv");
    snprintf(v, sizeof v, "%s against %s (Post / Pre %.2f, per seed %.2f-%.2f; %d of %d seeds)",
             (lnk_fmt_pm(b1, sizeof b1, cbot.post, cbot.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, cbot.pre, cbot.pre_sd), b2), cbot.ratio, cbot.rmin,
             cbot.rmax, cbot.n, S);
    quoted_claim(&q, "Hessian bottom eigenvalue at init, Post-LN vs Pre-LN", v, setting,
                 "eigs.csv");
    snprintf(v, sizeof v, "%s against %s (Post / Pre %.2f, per seed %.2f-%.2f)",
             (lnk_fmt_pm(b1, sizeof b1, ctr.post, ctr.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, ctr.pre, ctr.pre_sd), b2), ctr.ratio, ctr.rmin,
             ctr.rmax);
    quoted_claim(&q, "Hessian trace at init (Hutchinson), Post-LN vs Pre-LN", v, setting,
                 "trace.csv");
    snprintf(v, sizeof v, "Post / Pre of the seed means %.1f-%.1f over %d blocks (per seed >= "
             "%.2f; %d of %d (block, seed) pairs converged for both)", bmin, bmax, nb, smin,
             ncmp, S * nb);
    quoted_claim(&q, "Per-block top eigenvalue larger under Post-LN", v, setting,
                 "blocks.csv");
    snprintf(v, sizeof v, "smallest node %.3g vs %.3g (%.1fx), largest %.3g vs %.3g (%.1fx)",
             lo[0], lo[1], lo[0] / lo[1], hi[0], hi[1], hi[0] / hi[1]);
    quoted_claim(&q, "SLQ spectral density reach, Post-LN vs Pre-LN", v, setting,
                 "slq_nodes.csv");
    quoted_close(&q);
    free(cb);
    points_free(&P);
    lnk_meta_free(extra);
    json_decref(side);
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "hessian_spectrum");
    opts_t o = {"results/hessian", NULL, 32, 4, 4, 200, 8, 24, 3, 5, 100, 10, 80, 60, 0, 3.0};
    const char *summarise_dir = NULL;
    static struct option lo[] = {
        {"out", 1, 0, 'o'},    {"d", 1, 0, 'd'},       {"h", 1, 0, 'H'},     {"L", 1, 0, 'L'},
        {"V", 1, 0, 'V'},      {"batch", 1, 0, 'B'},   {"len", 1, 0, 'T'},   {"text", 1, 0, 'x'},
        {"seeds", 1, 0, 's'},  {"k", 1, 0, 'k'},       {"probes", 1, 0, 'p'}, {"runs", 1, 0, 'r'},
        {"steps", 1, 0, 'm'},  {"block-steps", 1, 0, 'b'}, {"kappa", 1, 0, 'K'},
        {"quiet", 0, 0, 'q'},  {"help", 0, 0, 'h'},    {"summarise", 1, 0, 'S'},
        {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'o': o.out = optarg; break;
        case 'd': o.d = (int)arg_int("d", optarg, 2, 4096); break;
        case 'H': o.h = (int)arg_int("h", optarg, 1, 256); break;
        case 'L': o.L = (int)arg_int("L", optarg, 1, 256); break;
        case 'V': o.V = (int)arg_int("V", optarg, 5, 1 << 24); break;
        case 'B': o.B = (int)arg_int("batch", optarg, 1, 1 << 20); break;
        case 'T': o.T = (int)arg_int("len", optarg, 1, 1 << 20); break;
        case 'x': o.text = optarg; break;
        case 's': o.seeds = (int)arg_int("seeds", optarg, 1, 1000); break;
        case 'k': o.k = (int)arg_int("k", optarg, 1, 1000); break;
        case 'p': o.probes = (int)arg_int("probes", optarg, 2, 1 << 20); break;
        case 'r': o.runs = (int)arg_int("runs", optarg, 1, 10000); break;
        case 'm': o.steps = (int)arg_int("steps", optarg, 2, 100000); break;
        case 'b': o.block_steps = (int)arg_int("block-steps", optarg, 2, 100000); break;
        case 'K':
            o.kappa = arg_num("kappa", optarg, 1 + 1e-9, 1e300);
            break;
        case 'q': o.quiet = 1; break;
        case 'S': summarise_dir = optarg; break;
        case 'h': usage(); return 0;
        default:
            fail("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    if (summarise_dir) { /* the summarising step alone, from the raw CSVs of a run */
        if (study_root())
            summarise(summarise_dir, o.kappa);
        return 0;
    }
    if (o.d % o.h || o.d % 2)
        fail("--d %d must be even and a multiple of --h %d", o.d, o.h);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    make_dir(o.out);
    /* points (norm_pos, seed), i = pre * S + s, spread over the ranks of an
     * MPI job (kit/kit.h): the rows go to the sweep CSVs in point order; rank
     * 0 then computes the density and the summary from those files */
    spec_files F;
    spec_files_open(&F, o.out, 0, 1);
    int S = o.seeds;
    /* blocks: embeddings, per layer attention and ffn, output */
    int nblk = 2 * o.L + 2;
    spec_block *blk = calloc((size_t)nblk, sizeof *blk);
    if (!blk)
        fail("out of memory");
    blk[0] = (spec_block){"tgt_emb", "dec", "embedding", -1};
    for (int l = 0; l < o.L; l++) {
        blk[1 + 2 * l] = (spec_block){"", "dec", "attention", l};
        snprintf(blk[1 + 2 * l].pat, 64, "dec.%d.attn.*", l);
        blk[2 + 2 * l] = (spec_block){"", "dec", "ffn", l};
        snprintf(blk[2 + 2 * l].pat, 64, "dec.%d.ffn.*", l);
    }
    blk[nblk - 1] = (spec_block){"out.w", "dec", "output", o.L};
    spec_opts so = {o.k, 1e-8, 300, o.probes, o.runs, o.steps, 1e-6, o.block_steps};
    lnk_config base = {0};
    for (int pre = 0; pre < 2; pre++)
        for (int s = 0; s < S; s++) {
            const char *pn = pre ? "pre" : "post";
            lnk_config c;
            make_config(&c, &o, pre, s);
            if (pre == 0 && s == 0)
                base = c;
            long pt = (long)pre * S + s;
            if (!study_mine(pt))
                continue;
            spec_files_point(&F, pt);
            lnk_model *m = lnk_model_alloc(&c);
            if (!m)
                die();
            double *th = malloc(sizeof(double) * lnk_model_n_params(m));
            CK(lnk_model_init_params(m, th));
            lnk_batch b;
            make_batch(m, &o, &b);
            lnk_dataset ds = {&b, 1, 1, 0, lnk_batch_n_scored(m, &b), NULL};
            double ts = lnk_now();
            spec_point P;
            spec_run(m, th, &ds, &so, blk, nblk, (uint64_t)s, &P);
            spec_rows(&F, pn, s, &P, blk, nblk);
            if (!o.quiet && study_root())
                fprintf(stderr, "hessian_spectrum: %s seed %d: top %.6g bottom %.6g trace %.6g "
                        "(%.1f s; %.0f s so far)\n", pn, s,
                        P.er.n_top ? P.er.value[0] : NAN,
                        P.er.n_bottom ? P.er.value[P.er.n_top] : NAN, P.tr.trace,
                        lnk_now() - ts, lnk_now() - t0);
            spec_point_free(&P);
            lnk_batch_free(&b);
            free(th);
            lnk_model_free(m);
        }
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        die();
    char varied[64];
    snprintf(varied, sizeof varied, "norm_pos in {post, pre}, seed in 0..%d", S - 1);
    lnk_meta_str(extra, "study", "hessian_spectrum");
    lnk_meta_str(extra, "data", o.text ? o.text : "synthetic lm batch, ids uniform in [4, V), "
                                                  "batch seed 1234");
    lnk_meta_int(extra, "B", o.B);
    lnk_meta_int(extra, "T", o.T);
    lnk_meta_int(extra, "seeds", S);
    lnk_meta_int(extra, "k", o.k);
    lnk_meta_int(extra, "probes", o.probes);
    lnk_meta_int(extra, "slq_runs", o.runs);
    lnk_meta_int(extra, "slq_steps", o.steps);
    lnk_meta_int(extra, "block_steps", o.block_steps);
    lnk_meta_real(extra, "eig_tol", so.eig_tol);
    lnk_meta_real(extra, "block_tol", so.block_tol);
    lnk_meta_str(extra, "varied", varied);
    spec_files_close(&F, &base, extra, start, t0);
    lnk_meta_free(extra);
    if (!study_root()) /* rank 0 summarises from the files */
        return 0;

    summarise(o.out, o.kappa);
    if (!o.quiet)
        fprintf(stderr, "hessian_spectrum: wrote %s/{eigs,trace,blocks,slq_nodes,density}.csv, "
                "summary.md, tables, values.csv, claims.csv, density.gp in %.1f s\n", o.out,
                lnk_now() - t0);
    free(blk);
    return 0;
}
