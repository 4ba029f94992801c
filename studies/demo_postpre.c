/* demo_postpre: the default job of `make demo`.
 *
 * Post-LN vs Pre-LN at initialisation on built-in synthetic data (lm task):
 * the loss and the gradient Frobenius norm of every block's W1, W2 and
 * attention matrices, over several seeds.  Writes
 *   OUT/postpre_loss.csv    norm_pos,seed,loss,n_scored,grad_norm_total
 *   OUT/postpre_layers.csv  norm_pos,seed,layer,tensor,grad_norm
 * each with its .meta.json; `python3 -m studies.summary demo OUT` (make demo
 * runs it) summarises them.  (Xiong et al. 2020, Figure 3: Post-LN's W2
 * gradient grows toward the output while Pre-LN's stays flat; at this small
 * size, on random tokens, neither shows it: see results/README.md.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/lnkit.h"
#include "kit/kit.h"

typedef struct {
    const char *out;
    int seeds, d, L, rows, len, V;
} args_t;

static const cli_opt opts[] = {
    STUDY_OPT_OUT(args_t, out, "DIR", 0, NULL, "output directory"),
    {.type = CLI_INT, .name = "seeds", .arg = "N", CLI_AT(args_t, seeds), .min = 1, .max = 1000,
     .help = "seeds 0..N-1 per variant"},
    {.type = CLI_INT, .name = "d", .arg = "N", CLI_AT(args_t, d), .min = 8, .max = 4096,
     .help = "width, a multiple of 8 (h = 4, d_ff = 4 d)"},
    {.type = CLI_INT, .name = "L", .arg = "N", CLI_AT(args_t, L), .min = 1, .max = 256,
     .help = "depth"},
    {.type = CLI_INT, .name = "rows", .arg = "N", CLI_AT(args_t, rows), .min = 1, .max = 4096,
     .help = "sequences per batch"},
    {.type = CLI_INT, .name = "len", .arg = "T", CLI_AT(args_t, len), .min = 1, .max = 4096,
     .help = "positions per sequence"},
    {.type = CLI_INT, .name = "V", .arg = "N", CLI_AT(args_t, V), .min = 5, .max = 1 << 24,
     .help = "vocabulary"},
    {0}};

static void defaults(void *p)
{
    *(args_t *)p = (args_t){"results/demo", 5, 64, 6, 16, 32, 500};
}

static const cli_cmd cmd = {
    .name = "demo_postpre",
    .usage = "[--out DIR] [--seeds N] [--d N] [--L N] [--rows N] [--len T] [--V N]",
    .about = "Post-LN vs Pre-LN at initialisation on synthetic lm data: the loss and every\n"
             "block's gradient norms over seeds.  The summary: python3 -m studies.summary demo\n"
             "DIR.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "demo_postpre");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    const char *out = a.out;
    int seeds = a.seeds, d = a.d, L = a.L, B = a.rows, T = a.len, V = a.V;
    if (d % 8)
        cli_die("--d must be a multiple of 8 (h = 4, d even), got %d", d);
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
            CLI_CK(lnk_config_finalize(&c));
            if (pos == 0 && s == 0)
                base = c;
            long pt = (long)pos * seeds + s;
            if (!study_mine(pt))
                continue;
            csv_point(&fl, pt);
            csv_point(&fy, pt);
            lnk_model *m = lnk_model_alloc(&c);
            if (!m)
                cli_die_lib();
            size_t np = lnk_model_n_params(m), nsc;
            double *th = malloc(sizeof(double) * np), *g = malloc(sizeof(double) * np), loss;
            lnk_batch b;
            CLI_CK(lnk_model_init_params(m, th));
            CLI_CK(lnk_batch_synthetic(m, B, T, 1000 + (uint64_t)s, &b));
            lnk_workspace *ws = lnk_workspace_alloc(m, B, 0, T + 1, 0);
            if (!ws)
                cli_die_lib();
            CLI_CK(lnk_model_eval(ws, th, &b, &loss, g, &nsc));
            double tot = 0;
            for (size_t i = 0; i < np; i++)
                tot += g[i] * g[i];
            const char *pn = pos ? "pre" : "post";
            CLI_CK(lnk_csv_str(cl, pn));
            CLI_CK(lnk_csv_int(cl, s));
            CLI_CK(lnk_csv_double(cl, loss));
            CLI_CK(lnk_csv_int(cl, (long long)nsc));
            CLI_CK(lnk_csv_double(cl, sqrt(tot)));
            CLI_CK(lnk_csv_end_row(cl));
            const lnk_layout *lay = lnk_model_layout(m);
            for (int l = 0; l < L; l++)
                for (size_t k = 0; k < sizeof tens / sizeof tens[0]; k++) {
                    char nm[LNK_NAME_MAX];
                    snprintf(nm, sizeof nm, "dec.%d.%s", l, tens[k]);
                    int i = lnk_layout_find(lay, nm);
                    double gn = lnk_tensor_norm(m, g, i);
                    CLI_CK(lnk_csv_str(cy, pn));
                    CLI_CK(lnk_csv_int(cy, s));
                    CLI_CK(lnk_csv_int(cy, l));
                    CLI_CK(lnk_csv_str(cy, tens[k]));
                    CLI_CK(lnk_csv_double(cy, gn));
                    CLI_CK(lnk_csv_end_row(cy));
                }
            lnk_workspace_free(ws);
            lnk_batch_free(&b);
            free(th);
            free(g);
            lnk_model_free(m);
        }
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
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
    cli_say("wrote %s and %s (with .meta.json) in %.2f s\n", p_loss, p_lay, wall);
    return 0;
}
