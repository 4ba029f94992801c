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
 *   summary.md    mean +- sd over seeds and the Post/Pre ratios
 *   density.gp    gnuplot script -> density.png (log density axis)
 * every CSV with its .meta.json.  Data: synthetic lm batches by default, or
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
           "  --quiet          no progress on stderr\n");
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
    const lnk_text *tx[1] = {&t};
    CK(lnk_vocab_build(tx, 1, 1, o->V, &v));
    CK(lnk_text_lm_batch(&t, v, 0, o->B, o->T, b));
    lnk_vocab_free(v);
    lnk_text_free(&t);
}

static double mean(const double *x, int n) { return gsl_stats_mean(x, 1, (size_t)n); }
static double sd(const double *x, int n) { return n > 1 ? gsl_stats_sd(x, 1, (size_t)n) : 0.0; }

/* The point (pre * S + seed) of row r. */
static int point_of(const study_table *t, size_t r, int cp, int cs, int S)
{
    int pre = !strcmp(study_table_str(t, r, cp), "pre");
    double s = study_table_num(t, r, cs);
    if (!(s >= 0 && s < S))
        fail("%s: row %zu: seed %g outside 0..%d", t->d.what, r + 2, s, S - 1);
    return pre * S + (int)s;
}

/* From the files: per point i = pre * S + s the top and bottom eigenvalue
 * (index 0 of each; NaN if none), the trace and the blocks' top eigenvalues
 * (blocks.csv in block order), each in a malloc'd array. */
static void read_points(const char *dir, int S, int nblk, double **top, double **bot,
                        double **trc, double **btop)
{
    *top = malloc(sizeof(double) * 2 * (size_t)S);
    *bot = malloc(sizeof(double) * 2 * (size_t)S);
    *trc = malloc(sizeof(double) * 2 * (size_t)S);
    *btop = malloc(sizeof(double) * 2 * (size_t)S * (size_t)nblk);
    int *nb = calloc(2 * (size_t)S, sizeof(int));
    if (!*top || !*bot || !*trc || !*btop || !nb)
        fail("out of memory");
    for (int i = 0; i < 2 * S; i++)
        (*top)[i] = (*bot)[i] = NAN;
    study_table t;
    study_table_read(&t, dir, "eigs.csv");
    int cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    int cw = study_table_col(&t, "which"), ci = study_table_col(&t, "index");
    int cv = study_table_col(&t, "eigenvalue");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int i = point_of(&t, r, cp, cs, S);
        if (study_table_num(&t, r, ci) == 0)
            (strcmp(study_table_str(&t, r, cw), "top") ? *bot : *top)[i] =
                study_table_num(&t, r, cv);
    }
    study_table_free(&t);
    study_table_read(&t, dir, "trace.csv");
    cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    cv = study_table_col(&t, "trace");
    for (size_t r = 0; r < t.d.nrow; r++)
        (*trc)[point_of(&t, r, cp, cs, S)] = study_table_num(&t, r, cv);
    study_table_free(&t);
    study_table_read(&t, dir, "blocks.csv");
    cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    cv = study_table_col(&t, "top_eigenvalue");
    for (size_t r = 0; r < t.d.nrow; r++) {
        int i = point_of(&t, r, cp, cs, S);
        if (nb[i] == nblk)
            fail("%s: more than %d blocks for a point", t.d.what, nblk);
        (*btop)[(size_t)i * nblk + nb[i]++] = study_table_num(&t, r, cv);
    }
    study_table_free(&t);
    free(nb);
}

/* summary.md from the files: mean +- sd over seeds and the Post/Pre ratios of
 * the extremal eigenvalues, the trace and every block's top eigenvalue. */
static void write_summary(const opts_t *o, const spec_block *blk, int nblk, double sigma,
                          const double integ[2])
{
    int S = o->seeds;
    double *top, *bot, *trc, *btop;
    read_points(o->out, S, nblk, &top, &bot, &trc, &btop);

    /* summary table */
    char md[1100];
    snprintf(md, sizeof md, "%s/summary.md", o->out);
    lnk_afile am;
    CK(lnk_afile_open(&am, md));
    FILE *f = am.f;
    fprintf(f, "# Hessian at initialisation: Post-LN vs Pre-LN\n\n"
               "lm, d = %d, h = %d, d_ff = %d, L = %d, V = %d, Xavier; data: %s (B = %d, T = %d); "
               "%d seeds (mean +- sd over seeds).\n\n",
            o->d, o->h, 4 * o->d, o->L, o->V, o->text ? o->text : "synthetic", o->B, o->T, S);
    fprintf(f, "| quantity | Post-LN | Pre-LN | Post / Pre |\n|---|---|---|---|\n");
    const char *qn[3] = {"top eigenvalue", "bottom eigenvalue", "trace (Hutchinson)"};
    double *qv[3] = {top, bot, trc};
    for (int q = 0; q < 3; q++)
        fprintf(f, "| %s | %.4g +- %.2g | %.4g +- %.2g | %.3g |\n", qn[q], mean(qv[q], S),
                sd(qv[q], S), mean(qv[q] + S, S), sd(qv[q] + S, S),
                mean(qv[q], S) / mean(qv[q] + S, S));
    fprintf(f, "\nTop eigenvalue of each block (the Hessian restricted to the block's "
               "parameters):\n\n| block | Post-LN | Pre-LN | Post / Pre |\n|---|---|---|---|\n");
    double *tmp = malloc(sizeof(double) * 2 * S);
    for (int k = 0; k < nblk; k++) {
        for (int pre = 0; pre < 2; pre++)
            for (int s = 0; s < S; s++)
                tmp[pre * S + s] = btop[(pre * S + s) * nblk + k];
        fprintf(f, "| `%s` | %.4g +- %.2g | %.4g +- %.2g | %.3g |\n", blk[k].pat, mean(tmp, S),
                sd(tmp, S), mean(tmp + S, S), sd(tmp + S, S), mean(tmp, S) / mean(tmp + S, S));
    }
    fprintf(f, "\nSpectral density: `density.csv` / `density.png` (sigma = %.4g, Papyan kappa = "
               "%g; integrals %.9f and %.9f).\n", sigma, o->kappa, integ[0], integ[1]);
    CK(lnk_afile_commit(&am));
    free(top);
    free(bot);
    free(trc);
    free(btop);
    free(tmp);
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "hessian_spectrum");
    opts_t o = {"results/hessian", NULL, 32, 4, 4, 200, 8, 24, 3, 5, 100, 10, 80, 60, 0, 3.0};
    static struct option lo[] = {
        {"out", 1, 0, 'o'},    {"d", 1, 0, 'd'},       {"h", 1, 0, 'H'},     {"L", 1, 0, 'L'},
        {"V", 1, 0, 'V'},      {"batch", 1, 0, 'B'},   {"len", 1, 0, 'T'},   {"text", 1, 0, 'x'},
        {"seeds", 1, 0, 's'},  {"k", 1, 0, 'k'},       {"probes", 1, 0, 'p'}, {"runs", 1, 0, 'r'},
        {"steps", 1, 0, 'm'},  {"block-steps", 1, 0, 'b'}, {"kappa", 1, 0, 'K'},
        {"quiet", 0, 0, 'q'},  {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
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
        case 'h': usage(); return 0;
        default:
            fail("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
        }
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
    char extra[1024];
    snprintf(extra, sizeof extra,
             "{\"study\": \"hessian_spectrum\", \"data\": \"%s\", \"B\": %d, \"T\": %d, "
             "\"seeds\": %d, \"k\": %d, \"probes\": %d, \"slq_runs\": %d, \"slq_steps\": %d, "
             "\"block_steps\": %d, \"varied\": \"norm_pos in {post, pre}, seed in 0..%d\"}",
             o.text ? o.text : "synthetic lm batch, ids uniform in [4, V), batch seed 1234", o.B,
             o.T, S, o.k, o.probes, o.runs, o.steps, o.block_steps, S - 1);
    spec_files_close(&F, &base, extra, start, t0);
    if (!study_root()) /* rank 0 summarises from the files */
        return 0;

    /* density: nodes of all seeds pooled per variant, one sigma for both */
    lnk_slq_result *slq;
    int *slq_pre, nslq;
    spec_read_slq(o.out, &slq, &slq_pre, &nslq);
    double integ[2];
    double sigma = spec_write_density(o.out, slq, slq_pre, nslq, o.kappa, o.steps, &base, extra,
                                      start, t0, integ);
    for (int i = 0; i < nslq; i++)
        lnk_slq_result_free(&slq[i]);
    free(slq);
    free(slq_pre);
    /* gnuplot script for the two densities on a log axis */
    char title[256];
    snprintf(title, sizeof title, "Hessian spectral density at initialisation (lm, d=%d, L=%d, "
             "%d seeds, SLQ %dx%d, sigma=%.3g)", o.d, o.L, S, o.runs, o.steps, sigma);
    study_density_gp(o.out, title);
    write_summary(&o, blk, nblk, sigma, integ);
    if (!o.quiet)
        fprintf(stderr, "hessian_spectrum: wrote %s/{eigs,trace,blocks,slq_nodes,density}.csv, "
                "summary.md, density.gp in %.1f s\n", o.out, lnk_now() - t0);
    free(blk);
    return 0;
}
