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
    static const char *const he[] = {"norm_pos", "seed", "which", "index", "eigenvalue",
                                     "residual", "converged"};
    static const char *const ht[] = {"norm_pos", "seed", "method", "probes", "trace", "stderr"};
    static const char *const hb[] = {"norm_pos", "seed", "block", "layer", "kind",
                                     "top_eigenvalue", "residual", "converged"};
    static const char *const hn[] = {"norm_pos", "seed", "run", "index", "node", "weight"};
    /* points (norm_pos, seed), i = pre * S + s, spread over the ranks of an
     * MPI job (kit/kit.h): rank 0 writes the rows in point order and computes
     * the density and the summary from every point's numbers */
    out_csv fe, ft, fb, fn;
    csv_sweep(&fe, o.out, "eigs.csv", he, 7);
    csv_sweep(&ft, o.out, "trace.csv", ht, 6);
    csv_sweep(&fb, o.out, "blocks.csv", hb, 8);
    csv_sweep(&fn, o.out, "slq_nodes.csv", hn, 6);

    /* per variant and seed: top[0], bottom[0], trace; SLQ results kept for the density */
    int S = o.seeds;
    double *top = calloc((size_t)2 * S, sizeof(double)), *bot = calloc((size_t)2 * S, sizeof(double));
    double *trc = calloc((size_t)2 * S, sizeof(double));
    lnk_slq_result *slq = calloc((size_t)2 * S, sizeof *slq);
    /* blocks: embeddings, per layer attention and ffn, output */
    int nblk = 2 * o.L + 2;
    char (*bname)[64] = calloc((size_t)nblk, 64), (*bkind)[16] = calloc((size_t)nblk, 16);
    int *blayer = calloc((size_t)nblk, sizeof(int));
    double *btop = calloc((size_t)2 * S * nblk, sizeof(double));
    snprintf(bname[0], 64, "tgt_emb");
    snprintf(bkind[0], 16, "embedding");
    blayer[0] = -1;
    for (int l = 0; l < o.L; l++) {
        snprintf(bname[1 + 2 * l], 64, "dec.%d.attn.*", l);
        snprintf(bkind[1 + 2 * l], 16, "attention");
        snprintf(bname[2 + 2 * l], 64, "dec.%d.ffn.*", l);
        snprintf(bkind[2 + 2 * l], 16, "ffn");
        blayer[1 + 2 * l] = blayer[2 + 2 * l] = l;
    }
    snprintf(bname[nblk - 1], 64, "out.w");
    snprintf(bkind[nblk - 1], 16, "output");
    blayer[nblk - 1] = o.L;
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
            csv_point(&fe, pt);
            csv_point(&ft, pt);
            csv_point(&fb, pt);
            csv_point(&fn, pt);
            lnk_model *m = lnk_model_alloc(&c);
            if (!m)
                die();
            double *th = malloc(sizeof(double) * lnk_model_n_params(m));
            CK(lnk_model_init_params(m, th));
            lnk_batch b;
            make_batch(m, &o, &b);
            lnk_hessian *h = lnk_hessian_alloc(m, th, &b, 1, NULL);
            if (!h)
                die();
            lnk_operator op = lnk_hessian_operator(h);
            double ts = lnk_now();
            /* extremal eigenpairs */
            lnk_eigs_opts eo;
            lnk_eigs_opts_default(&eo);
            eo.k_top = eo.k_bottom = o.k;
            eo.tol = 1e-8;
            eo.max_steps = 300;
            eo.seed = (uint64_t)s;
            lnk_eigs_result er;
            CK(lnk_eigs(&op, &eo, &er));
            for (int i = 0; i < er.k; i++) {
                int t = i < er.n_top;
                CK(lnk_csv_str(&fe.c, pn));
                CK(lnk_csv_int(&fe.c, s));
                CK(lnk_csv_str(&fe.c, t ? "top" : "bottom"));
                CK(lnk_csv_int(&fe.c, t ? i : i - er.n_top));
                CK(lnk_csv_double(&fe.c, er.value[i]));
                CK(lnk_csv_double(&fe.c, er.residual[i]));
                CK(lnk_csv_int(&fe.c, er.converged[i]));
                CK(lnk_csv_end_row(&fe.c));
            }
            top[pre * S + s] = er.n_top ? er.value[0] : NAN;
            bot[pre * S + s] = er.n_bottom ? er.value[er.n_top] : NAN;
            lnk_eigs_result_free(&er);
            /* trace */
            lnk_trace_opts to;
            lnk_trace_opts_default(&to);
            to.probes = o.probes;
            to.seed = (uint64_t)s;
            lnk_trace_result tr;
            CK(lnk_trace(&op, &to, &tr));
            CK(lnk_csv_str(&ft.c, pn));
            CK(lnk_csv_int(&ft.c, s));
            CK(lnk_csv_str(&ft.c, lnk_trace_method_name(to.method)));
            CK(lnk_csv_int(&ft.c, tr.probes));
            CK(lnk_csv_double(&ft.c, tr.trace));
            CK(lnk_csv_double(&ft.c, tr.std_error));
            CK(lnk_csv_end_row(&ft.c));
            trc[pre * S + s] = tr.trace;
            /* SLQ */
            lnk_slq_opts so;
            lnk_slq_opts_default(&so);
            so.runs = o.runs;
            so.steps = o.steps;
            so.seed = (uint64_t)s;
            lnk_slq_result *sr = &slq[pre * S + s];
            CK(lnk_slq(&op, &so, sr));
            for (int r = 0; r < sr->runs; r++)
                for (int i = sr->offset[r]; i < sr->offset[r + 1]; i++) {
                    CK(lnk_csv_str(&fn.c, pn));
                    CK(lnk_csv_int(&fn.c, s));
                    CK(lnk_csv_int(&fn.c, r));
                    CK(lnk_csv_int(&fn.c, i - sr->offset[r]));
                    CK(lnk_csv_double(&fn.c, sr->node[i]));
                    CK(lnk_csv_double(&fn.c, sr->weight[i]));
                    CK(lnk_csv_end_row(&fn.c));
                }
            lnk_hessian_free(h);
            /* block top eigenvalues */
            for (int k = 0; k < nblk; k++) {
                lnk_hessian *hb2 = lnk_hessian_alloc(m, th, &b, 1, bname[k]);
                if (!hb2)
                    die();
                lnk_operator bop = lnk_hessian_operator(hb2);
                lnk_eigs_opts bo;
                lnk_eigs_opts_default(&bo);
                bo.k_top = 1;
                bo.tol = 1e-6;
                bo.max_steps = o.block_steps;
                bo.seed = (uint64_t)s;
                lnk_eigs_result br;
                CK(lnk_eigs(&bop, &bo, &br));
                CK(lnk_csv_str(&fb.c, pn));
                CK(lnk_csv_int(&fb.c, s));
                CK(lnk_csv_str(&fb.c, bname[k]));
                CK(lnk_csv_int(&fb.c, blayer[k]));
                CK(lnk_csv_str(&fb.c, bkind[k]));
                CK(lnk_csv_double(&fb.c, br.value[0]));
                CK(lnk_csv_double(&fb.c, br.residual[0]));
                CK(lnk_csv_int(&fb.c, br.converged[0]));
                CK(lnk_csv_end_row(&fb.c));
                btop[(pre * S + s) * nblk + k] = br.value[0];
                lnk_eigs_result_free(&br);
                lnk_hessian_free(hb2);
            }
            if (!o.quiet && study_root())
                fprintf(stderr, "hessian_spectrum: %s seed %d: top %.6g bottom %.6g trace %.6g "
                        "(%.1f s; %.0f s so far)\n", pn, s, top[pre * S + s], bot[pre * S + s],
                        trc[pre * S + s], lnk_now() - ts, lnk_now() - t0);
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
    csv_close(&fe, &base, extra, start, t0);
    csv_close(&ft, &base, extra, start, t0);
    csv_close(&fb, &base, extra, start, t0);
    csv_close(&fn, &base, extra, start, t0);
    /* every point's numbers to rank 0 */
    study_buf *pb = calloc((size_t)2 * S, sizeof *pb);
    for (int i = 0; i < 2 * S; i++)
        if (study_mine(i)) {
            SBUF_PUT(&pb[i], top[i]);
            SBUF_PUT(&pb[i], bot[i]);
            SBUF_PUT(&pb[i], trc[i]);
            sbuf_put(&pb[i], btop + (size_t)i * nblk, sizeof(double) * (size_t)nblk);
            study_put_slq(&pb[i], &slq[i]);
        }
    study_gather_points(0, 2L * S, pb);
    for (int i = 0; i < 2 * S; i++) {
        if (study_root() && !study_mine(i)) {
            study_rd rd = {pb[i].p, pb[i].n, 0};
            SRD_GET(&rd, top[i]);
            SRD_GET(&rd, bot[i]);
            SRD_GET(&rd, trc[i]);
            srd_get(&rd, btop + (size_t)i * nblk, sizeof(double) * (size_t)nblk);
            study_get_slq(&rd, &slq[i]);
        }
        sbuf_free(&pb[i]);
    }
    free(pb);
    if (!study_root()) /* rank 0 writes the rest */
        return 0;

    /* density: nodes of all seeds pooled per variant, one sigma for both (kappa on the
     * union of the node ranges), one grid */
    double lo_ = INFINITY, hi_ = -INFINITY;
    for (int i = 0; i < 2 * S; i++) {
        lo_ = fmin(lo_, slq[i].node_min);
        hi_ = fmax(hi_, slq[i].node_max);
    }
    double sigma;
    CK(lnk_sigma_from_kappa(o.kappa, o.steps, 0.05, lo_, hi_, &sigma));
    size_t np = lnk_slq_grid_size(&slq[0], sigma, LNK_SLQ_PAD, 4);
    np = (size_t)ceil((hi_ - lo_ + 2 * LNK_SLQ_PAD * sigma) / (sigma / 4)) + 1;
    double *t = malloc(sizeof(double) * np), *phi = malloc(sizeof(double) * np),
           *acc = malloc(sizeof(double) * np * 2);
    for (size_t p = 0; p < np; p++)
        t[p] = lo_ - LNK_SLQ_PAD * sigma + (hi_ - lo_ + 2 * LNK_SLQ_PAD * sigma) * p / (np - 1);
    double integ[2];
    for (int pre = 0; pre < 2; pre++) {
        for (size_t p = 0; p < np; p++)
            acc[pre * np + p] = 0;
        for (int s = 0; s < S; s++) {
            CK(lnk_slq_density(&slq[pre * S + s], sigma, t, np, phi));
            for (size_t p = 0; p < np; p++)
                acc[pre * np + p] += phi[p] / S;
        }
        integ[pre] = lnk_trapezoid(t, acc + pre * np, np);
    }
    static const char *const hd[] = {"norm_pos", "t", "density"};
    out_csv fd;
    csv_open(&fd, o.out, "density.csv", hd, 3);
    for (int pre = 0; pre < 2; pre++)
        for (size_t p = 0; p < np; p++) {
            CK(lnk_csv_str(&fd.c, pre ? "pre" : "post"));
            CK(lnk_csv_double(&fd.c, t[p]));
            CK(lnk_csv_double(&fd.c, acc[pre * np + p]));
            CK(lnk_csv_end_row(&fd.c));
        }
    char extra2[1400];
    snprintf(extra2, sizeof extra2 - 1, "%.*s, \"sigma\": %.17g, \"kappa\": %.17g, "
             "\"integral_post\": %.17g, \"integral_pre\": %.17g}", (int)strlen(extra) - 1, extra,
             sigma, o.kappa, integ[0], integ[1]);
    csv_close(&fd, &base, extra2, start, t0);

    /* gnuplot script for the two densities on a log axis */
    char title[256];
    snprintf(title, sizeof title, "Hessian spectral density at initialisation (lm, d=%d, L=%d, "
             "%d seeds, SLQ %dx%d, sigma=%.3g)", o.d, o.L, S, o.runs, o.steps, sigma);
    study_density_gp(o.out, title);

    /* summary table */
    char md[1100];
    snprintf(md, sizeof md, "%s/summary.md", o.out);
    lnk_afile am;
    CK(lnk_afile_open(&am, md));
    FILE *f = am.f;
    fprintf(f, "# Hessian at initialisation: Post-LN vs Pre-LN\n\n"
               "lm, d = %d, h = %d, d_ff = %d, L = %d, V = %d, Xavier; data: %s (B = %d, T = %d); "
               "%d seeds (mean +- sd over seeds).\n\n",
            o.d, o.h, 4 * o.d, o.L, o.V, o.text ? o.text : "synthetic", o.B, o.T, S);
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
        fprintf(f, "| `%s` | %.4g +- %.2g | %.4g +- %.2g | %.3g |\n", bname[k], mean(tmp, S),
                sd(tmp, S), mean(tmp + S, S), sd(tmp + S, S), mean(tmp, S) / mean(tmp + S, S));
    }
    fprintf(f, "\nSpectral density: `density.csv` / `density.png` (sigma = %.4g, Papyan kappa = "
               "%g; integrals %.9f and %.9f).\n", sigma, o.kappa, integ[0], integ[1]);
    CK(lnk_afile_commit(&am));
    if (!o.quiet)
        fprintf(stderr, "hessian_spectrum: wrote %s/{eigs,trace,blocks,slq_nodes,density}.csv, "
                "summary.md, density.gp in %.1f s\n", o.out, lnk_now() - t0);
    for (int i = 0; i < 2 * S; i++)
        lnk_slq_result_free(&slq[i]);
    free(slq);
    free(top);
    free(bot);
    free(trc);
    free(btop);
    free(bname);
    free(bkind);
    free(blayer);
    free(t);
    free(phi);
    free(acc);
    free(tmp);
    return 0;
}
