/* demo_postpre: the default job of `make demo`.
 *
 * Post-LN vs Pre-LN at initialisation on built-in synthetic data (lm task):
 * the loss and the gradient Frobenius norm of every block's W1, W2 and
 * attention matrices, over several seeds.  Writes
 *   OUT/postpre_loss.csv    norm_pos,seed,loss,n_scored,grad_norm_total
 *   OUT/postpre_layers.csv  norm_pos,seed,layer,tensor,grad_norm
 * each with its .meta.json, then summarises them (the summarising step, which
 * `demo_postpre --summarise DIR` runs alone on a directory of those rows):
 *   OUT/postpre_summary.md  the loss and every block's ||dL/dW2||_F, mean ± sd over seeds
 *   OUT/values.csv          the numbers results/README.md quotes (tools/quotes.py)
 *   OUT/claims.csv          the headline claims with their spread and setting
 * and prints the per-layer table.  (Xiong et al. 2020, Figure 3: Post-LN's W2
 * gradient grows toward the output while Pre-LN's stays flat; at this small
 * size, on random tokens, neither shows it: see results/README.md.) */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/lnkit.h"
#include "kit/kit.h"
#include "kit/quoted.h"

static void usage(void)
{
    printf("usage: demo_postpre [--out DIR] [--seeds N] [--d N] [--L N] [--batch B] [--len T]\n"
           "  --out DIR    output directory                (results/demo)\n"
           "  --seeds N    seeds 0..N-1 per variant         (5)\n"
           "  --d N        width (h = 4, d_ff = 4d)         (64)\n"
           "  --L N        depth                            (6)\n"
           "  --batch B    sequences per batch              (16)\n"
           "  --len T      positions per sequence           (32)\n"
           "  --V N        vocabulary                       (500)\n"
           "  --summarise DIR  only the summarising step, on DIR's postpre_*.csv\n");
}

/* mean ± sd of v[0..n-1] as text */
static const char *pmtext(const double *v, int n)
{
    static char buf[4][64];
    static int k;
    k = (k + 1) % 4;
    double m, sd;
    lnk_mean_sd(v, 1, (size_t)n, &m, &sd);
    lnk_fmt_pm(buf[k], sizeof buf[k], m, sd);
    return buf[k];
}

/* The summarising step: reads DIR/postpre_loss.csv, DIR/postpre_layers.csv
 * and the configuration in their sidecar; writes DIR/postpre_summary.md,
 * values.csv and claims.csv (deterministic: no times or paths). */
static void summarise(const char *dir)
{
    json_t *side = study_sidecar(dir, "postpre_loss");
    const json_t *cfg = json_object_get(side, "config");
    if (!cfg || !json_is_object(cfg))
        fail("%s/postpre_loss.meta.json: no object 'config'", dir);
    const char *what = "postpre_loss.meta.json";
    int V = (int)sidecar_int(cfg, "V", what), d = (int)sidecar_int(cfg, "d", what),
        L = (int)sidecar_int(cfg, "L", what), h = (int)sidecar_int(cfg, "h", what);
    int B = (int)sidecar_int(side, "B", what), T = (int)sidecar_int(side, "T", what);
    const char *init = sidecar_str(cfg, "init", what), *task = sidecar_str(cfg, "task", what);
    char path[1200];
    snprintf(path, sizeof path, "%s/postpre_loss.csv", dir);
    study_input(path);
    snprintf(path, sizeof path, "%s/postpre_layers.csv", dir);
    study_input(path);
    study_table tl, ty;
    study_table_read(&tl, dir, "postpre_loss.csv");
    study_table_read(&ty, dir, "postpre_layers.csv");
    int lp = study_table_col(&tl, "norm_pos"), ll = study_table_col(&tl, "loss");
    int yp = study_table_col(&ty, "norm_pos"), yl = study_table_col(&ty, "layer"),
        yt = study_table_col(&ty, "tensor"), yg = study_table_col(&ty, "grad_norm");
    size_t nl = tl.d.nrow;
    double *loss[2], *w2[2];
    int nloss[2] = {0, 0}, nw2[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        loss[p] = study_alloc(sizeof(double) * (nl + 1));
        w2[p] = study_alloc(sizeof(double) * (ty.d.nrow + 1));
    }
    for (size_t r = 0; r < nl; r++) {
        int p = !strcmp(study_table_str(&tl, r, lp), "pre");
        loss[p][nloss[p]++] = study_table_num(&tl, r, ll);
    }
    /* W2 norms grouped by layer: w2[p][layer * seeds + k] */
    int seeds = nloss[0];
    if (seeds < 1 || nloss[1] != seeds)
        fail("%s/postpre_loss.csv: %d Post-LN and %d Pre-LN rows, expected the same number > 0",
             dir, nloss[0], nloss[1]);
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < L * seeds; i++)
            w2[p][i] = NAN;
    int *cnt = calloc((size_t)2 * L, sizeof(int));
    if (!cnt)
        fail("out of memory");
    for (size_t r = 0; r < ty.d.nrow; r++) {
        if (strcmp(study_table_str(&ty, r, yt), "ffn.w2") != 0)
            continue;
        int p = !strcmp(study_table_str(&ty, r, yp), "pre"), l = (int)study_table_num(&ty, r, yl);
        if (l < 0 || l >= L || cnt[p * L + l] >= seeds)
            fail("%s/postpre_layers.csv: data row %zu: layer %d or one ffn.w2 row too many",
                 dir, r + 1, l);
        w2[p][l * seeds + cnt[p * L + l]++] = study_table_num(&ty, r, yg);
        nw2[p]++;
    }
    for (int i = 0; i < 2 * L; i++)
        if (cnt[i] != seeds)
            fail("%s/postpre_layers.csv: %d ffn.w2 rows for %s layer %d, expected %d", dir,
                 cnt[i], i / L ? "pre" : "post", i % L, seeds);
    free(cnt);

    study_quoted q;
    quoted_open(&q, dir);
    char b[128], setting[300];
    double lnV = log((double)V), lo = INFINITY, hi = -INFINITY;
    snprintf(setting, sizeof setting, "%s, %s init, d = %d, h = %d, L = %d, V = %d, output "
             "%s, synthetic batches B = %d, T = %d (ids uniform in [4, V)), %d seeds", task,
             init, d, h, L, V, json_is_true(json_object_get(cfg, "tie_output")) ? "tied to the "
             "embedding" : "untied", B, T, seeds);
    for (int p = 0; p < 2; p++) {
        const char *pn = p ? "pre" : "post";
        quoted_value(&q, p ? "loss_pre" : "loss_post", "%s", pmtext(loss[p], seeds));
        for (int k = 0; k < seeds; k++)
            lo = fmin(lo, loss[p][k]), hi = fmax(hi, loss[p][k]);
        double m1[256], mL[256], lm[4096];
        for (int k = 0; k < seeds && k < 256; k++)
            m1[k] = w2[p][k], mL[k] = w2[p][(L - 1) * seeds + k];
        int ns = seeds < 256 ? seeds : 256;
        for (int l = 0; l < L && l < 4096; l++) {
            double sd;
            lnk_mean_sd(w2[p] + l * seeds, 1, (size_t)seeds, &lm[l], &sd);
        }
        char key[64];
        snprintf(key, sizeof key, "w2_%s_first", pn);
        quoted_value(&q, key, "%s", pmtext(m1, ns));
        snprintf(key, sizeof key, "w2_%s_last", pn);
        quoted_value(&q, key, "%s", pmtext(mL, ns));
        double mlo = INFINITY, mhi = -INFINITY;
        for (int l = 0; l < L; l++)
            mlo = fmin(mlo, lm[l]), mhi = fmax(mhi, lm[l]);
        snprintf(key, sizeof key, "w2_%s_range", pn);
        quoted_value(&q, key, "%.3f-%.3f", mlo, mhi);
        snprintf(key, sizeof key, "w2_%s_last_over_first", pn);
        quoted_value(&q, key, "%.2f", lm[L - 1] / lm[0]);
    }
    quoted_value(&q, "lnV", "%.3f", lnV);
    quoted_value(&q, "loss_range", "%.2f-%.2f", lo, hi);
    quoted_value(&q, "loss_min", "%.2f", lo);
    quoted_value(&q, "inv_sqrt_L", "%.2f", 1 / sqrt((double)L));
    snprintf(b, sizeof b, "Post-LN %s, Pre-LN %s (mean ± sd); every run %.2f-%.2f, above ln V = "
             "%.3f", pmtext(loss[0], seeds), pmtext(loss[1], seeds), lo, hi, lnV);
    quoted_claim(&q, "Demo: loss at initialisation against ln V (uniform prediction)", b,
                 setting, "postpre_loss.csv");
    {
        double a0[256], aL[256], c0[256], cL[256];
        int ns = seeds < 256 ? seeds : 256;
        for (int k = 0; k < ns; k++)
            a0[k] = w2[0][k], aL[k] = w2[0][(L - 1) * seeds + k], c0[k] = w2[1][k],
            cL[k] = w2[1][(L - 1) * seeds + k];
        char v[300];
        snprintf(v, sizeof v, "Post-LN block 1 %s, block %d %s; Pre-LN block 1 %s, block %d %s "
                 "(mean ± sd)", pmtext(a0, ns), L, pmtext(aL, ns), pmtext(c0, ns), L,
                 pmtext(cL, ns));
        quoted_claim(&q, "Demo: ||dL/dW2||_F of the first and last block", v, setting,
                     "postpre_layers.csv");
    }
    quoted_close(&q);

    /* postpre_summary.md */
    static const char *const hl[] = {"norm", "loss", "min", "max", "ln V"};
    lnk_table t1, t2;
    CK(lnk_table_init(&t1, 5, hl, "lrrrr"));
    for (int p = 0; p < 2; p++) {
        double mn = INFINITY, mx = -INFINITY;
        for (int k = 0; k < seeds; k++)
            mn = fmin(mn, loss[p][k]), mx = fmax(mx, loss[p][k]);
        int r = lnk_table_new_row(&t1);
        lnk_table_set(&t1, r, 0, "%s", p ? "Pre-LN" : "Post-LN");
        lnk_table_set(&t1, r, 1, "%s", pmtext(loss[p], seeds));
        lnk_table_set(&t1, r, 2, "%.3f", mn);
        lnk_table_set(&t1, r, 3, "%.3f", mx);
        lnk_table_set(&t1, r, 4, "%.3f", lnV);
    }
    static const char *const hw[] = {"block", "Post-LN ||dL/dW2||_F", "Pre-LN ||dL/dW2||_F"};
    CK(lnk_table_init(&t2, 3, hw, "rrr"));
    for (int l = 0; l < L; l++) {
        int r = lnk_table_new_row(&t2);
        lnk_table_set(&t2, r, 0, "%d", l + 1);
        for (int p = 0; p < 2; p++)
            lnk_table_set(&t2, r, 1 + p, "%s", pmtext(w2[p] + l * seeds, seeds));
    }
    snprintf(path, sizeof path, "%s/postpre_summary.md", dir);
    lnk_afile a;
    CK(lnk_afile_open(&a, path));
    study_track(&a);
    fprintf(a.f, "# Post-LN vs Pre-LN at initialisation (the demo)\n\n%s.\n\nLoss per variant, "
            "mean ± sd over seeds, and its range over the seeds; ln V is the loss of a uniform "
            "prediction.\n\n", setting);
    CK(lnk_table_write_md(&t1, a.f));
    fprintf(a.f, "\n||dL/dW2||_F of every block's FFN output matrix (blocks from 1), mean ± sd "
            "over seeds.\n\n");
    CK(lnk_table_write_md(&t2, a.f));
    study_untrack(&a);
    CK(lnk_afile_commit(&a));
    printf("Post-LN vs Pre-LN at initialisation: %s\n", setting);
    printf("loss: Post-LN %s, Pre-LN %s (ln V = %.3f)\n", pmtext(loss[0], seeds),
           pmtext(loss[1], seeds), lnV);
    printf("||dL/dW2||_F per block, mean ± sd over seeds:\n  block   Post-LN          Pre-LN\n");
    for (int l = 0; l < L; l++) {
        printf("  %5d   %-16s", l + 1, pmtext(w2[0] + l * seeds, seeds));
        printf(" %s\n", pmtext(w2[1] + l * seeds, seeds));
    }
    lnk_table_free(&t1);
    lnk_table_free(&t2);
    for (int p = 0; p < 2; p++)
        free(loss[p]), free(w2[p]);
    study_table_free(&tl);
    study_table_free(&ty);
    json_decref(side);
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "demo_postpre");
    const char *out = "results/demo";
    int seeds = 5, d = 64, L = 6, B = 16, T = 32, V = 500;
    const char *summ_dir = NULL;
    static struct option opts[] = {{"out", required_argument, 0, 'o'},
                                   {"seeds", required_argument, 0, 's'},
                                   {"d", required_argument, 0, 'd'},
                                   {"L", required_argument, 0, 'L'},
                                   {"batch", required_argument, 0, 'B'},
                                   {"len", required_argument, 0, 'T'},
                                   {"V", required_argument, 0, 'V'},
                                   {"summarise", required_argument, 0, 'S'},
                                   {"help", no_argument, 0, 'h'},
                                   {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 's': seeds = (int)arg_int("seeds", optarg, 1, 1000); break;
        case 'd': d = (int)arg_int("d", optarg, 4, 4096); break;
        case 'L': L = (int)arg_int("L", optarg, 1, 256); break;
        case 'B': B = (int)arg_int("batch", optarg, 1, 4096); break;
        case 'T': T = (int)arg_int("len", optarg, 1, 4096); break;
        case 'V': V = (int)arg_int("V", optarg, 5, 1 << 24); break;
        case 'S': summ_dir = optarg; break;
        case 'h': usage(); return 0;
        default: fail("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s' (see --help)", argv[optind]);
    if (summ_dir) {
        if (study_root())
            summarise(summ_dir);
        return 0;
    }
    if (d % 8)
        fail("--d must be a multiple of 8 (h = 4, d even), got %d", d);
    char start[32], p_loss[1024], p_lay[1024];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    make_dir(out);
    snprintf(p_loss, sizeof p_loss, "%s/postpre_loss.csv", out);
    snprintf(p_lay, sizeof p_lay, "%s/postpre_layers.csv", out);
    static const char *const hl[] = {"norm_pos", "seed", "loss", "n_scored", "grad_norm_total"};
    static const char *const hy[] = {"norm_pos", "seed", "layer", "tensor", "grad_norm"};
    /* points (norm_pos, seed), i = pos * seeds + s, spread over the ranks of
     * an MPI job (kit/kit.h); rank 0 writes the rows in point order */
    out_csv fl, fy;
    csv_sweep(&fl, out, "postpre_loss.csv", hl, 5);
    csv_sweep(&fy, out, "postpre_layers.csv", hy, 5);
    lnk_csv *const cl = &fl.c, *const cy = &fy.c;
    static const char *const tens[] = {"attn.wq", "attn.wk", "attn.wv", "attn.wo", "ffn.w1",
                                       "ffn.w2"};
    lnk_config c = {0}, base = {0}; /* base: the first point's config, for the metadata */
    for (int pos = 0; pos < 2; pos++)
        for (int s = 0; s < seeds; s++) {
            lnk_config_default(&c);
            c.norm_pos = pos ? LNK_POS_PRE : LNK_POS_POST;
            c.d = d;
            c.h = 4;
            c.L = L;
            c.V = V;
            c.seed = (uint64_t)s;
            CK(lnk_config_finalize(&c));
            if (pos == 0 && s == 0)
                base = c;
            long pt = (long)pos * seeds + s;
            if (!study_mine(pt))
                continue;
            csv_point(&fl, pt);
            csv_point(&fy, pt);
            lnk_model *m = lnk_model_alloc(&c);
            if (!m)
                die();
            size_t np = lnk_model_n_params(m), nsc;
            double *th = malloc(sizeof(double) * np), *g = malloc(sizeof(double) * np), loss;
            lnk_batch b;
            CK(lnk_model_init_params(m, th));
            CK(lnk_batch_synthetic(m, B, T, 1000 + (uint64_t)s, &b));
            lnk_workspace *ws = lnk_workspace_alloc(m, B, 0, T + 1, 0);
            if (!ws)
                die();
            CK(lnk_model_eval(ws, th, &b, &loss, g, &nsc));
            double tot = 0;
            for (size_t i = 0; i < np; i++)
                tot += g[i] * g[i];
            const char *pn = pos ? "pre" : "post";
            CK(lnk_csv_str(cl, pn));
            CK(lnk_csv_int(cl, s));
            CK(lnk_csv_double(cl, loss));
            CK(lnk_csv_int(cl, (long long)nsc));
            CK(lnk_csv_double(cl, sqrt(tot)));
            CK(lnk_csv_end_row(cl));
            const lnk_layout *lay = lnk_model_layout(m);
            for (int l = 0; l < L; l++)
                for (size_t k = 0; k < sizeof tens / sizeof tens[0]; k++) {
                    char nm[LNK_NAME_MAX];
                    snprintf(nm, sizeof nm, "dec.%d.%s", l, tens[k]);
                    int i = lnk_layout_find(lay, nm);
                    double gn = lnk_tensor_norm(m, g, i);
                    CK(lnk_csv_str(cy, pn));
                    CK(lnk_csv_int(cy, s));
                    CK(lnk_csv_int(cy, l));
                    CK(lnk_csv_str(cy, tens[k]));
                    CK(lnk_csv_double(cy, gn));
                    CK(lnk_csv_end_row(cy));
                }
            lnk_workspace_free(ws);
            lnk_batch_free(&b);
            free(th);
            free(g);
            lnk_model_free(m);
        }
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        die();
    char varied[64];
    snprintf(varied, sizeof varied, "norm_pos in {post, pre}, seed in 0..%d", seeds - 1);
    lnk_meta_str(extra, "study", "demo_postpre");
    lnk_meta_str(extra, "data",
                 "synthetic lm batches, ids uniform in [4, V), batch seed 1000 + seed");
    lnk_meta_int(extra, "seeds", seeds);
    lnk_meta_int(extra, "B", B);
    lnk_meta_int(extra, "T", T);
    lnk_meta_str(extra, "varied", varied);
    csv_close(&fl, &base, extra, start, t0);
    csv_close(&fy, &base, extra, start, t0);
    lnk_meta_free(extra);
    double wall = lnk_now() - t0;
    if (!study_root())
        return 0; /* rank 0 summarises, from the files */
    summarise(out);
    printf("wrote %s and %s (with .meta.json) in %.2f s, and their summary\n", p_loss, p_lay,
           wall);
    return 0;
}
