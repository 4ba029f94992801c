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
 * every CSV with its .meta.json.  The summary (density, tables, claims) is
 * made from those files alone: python3 -m studies.summary hessian OUT.
 * Data: synthetic lm batches by default, or
 * --text FILE (one sequence a line, lm task). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "lnkit/lnkit.h"
#include "lnkit/text.h"
#include "kit/kit.h"
#include "kit/spectral.h"
#include "front/progress.h"


typedef struct {
    const char *out, *text;
    int d, h, L, V, B, T, seeds, k, probes, runs, steps, block_steps, quiet;
    int max_len; /* --text: tokens a line at most (0: no limit) */
} opts_t;

#define O opts_t
static const cli_opt opts[] = {
    STUDY_OPT_OUT(O, out, "DIR", 0, NULL, "output directory"),
    {.type = CLI_INT, .name = "d", .arg = "N", CLI_AT(O, d), .min = 2, .max = 4096,
     .help = "width (lm, layernorm, xavier)"},
    {.type = CLI_INT, .name = "h", .arg = "N", CLI_AT(O, h), .min = 1, .max = 256,
     .help = "heads"},
    {.type = CLI_INT, .name = "L", .arg = "N", CLI_AT(O, L), .min = 1, .max = 256,
     .help = "depth"},
    {.type = CLI_INT, .name = "V", .arg = "N", CLI_AT(O, V), .min = 5, .max = 1 << 24,
     .help = "vocabulary"},
    {.type = CLI_INT, .name = "rows", .arg = "N", CLI_AT(O, B), .min = 1, .max = 1 << 20,
     .help = "rows of the batch (of --text: its first lines)"},
    {.type = CLI_INT, .name = "len", .arg = "T", CLI_AT(O, T), .min = 1, .max = 1 << 20,
     .help = "positions per row (synthetic)"},
    {.type = CLI_STR, .name = "text", .arg = "FILE", CLI_AT(O, text), .flags = CLI_READS,
     .help = "an lm batch from this text instead of synthetic ids", .def = "synthetic"},
    {.type = CLI_INT, .name = "max-line-len", .arg = "N", CLI_AT(O, max_len), .min = 0,
     .max = 1 << 20, .needs = "text", .help = "--text: truncate lines to N tokens; 0: no limit"},
    {.type = CLI_INT, .name = "seeds", .arg = "N", CLI_AT(O, seeds), .min = 1, .max = 1000,
     .help = "initialisation seeds 0..N-1"},
    {.type = CLI_INT, .key = 'k', .name = "k", .arg = "N", CLI_AT(O, k), .min = 1, .max = 1000,
     .help = "eigenpairs per end"},
    {.type = CLI_INT, .name = "probes", .arg = "N", CLI_AT(O, probes), .min = 2, .max = 1 << 20,
     .help = "Hutchinson probes for the trace"},
    {.type = CLI_INT, .name = "runs", .arg = "N", CLI_AT(O, runs), .min = 1, .max = 10000,
     .help = "SLQ start vectors"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(O, steps), .min = 2, .max = 100000,
     .help = "SLQ Lanczos steps per run"},
    {.type = CLI_INT, .name = "block-steps", .arg = "M", CLI_AT(O, block_steps), .min = 2,
     .max = 100000, .help = "Lanczos step limit of the blocks' top eigenvalues"},
    {0}};
#undef O

static void defaults(void *p)
{
    *(opts_t *)p = (opts_t){"results/hessian", NULL, 32, 4, 4, 200, 8, 24, 3, 5, 100, 10, 80, 60, 0,
                            24};
}

static const cli_cmd cmd = {
    .name = "hessian_spectrum",
    .usage = "[--out DIR] [--d N] [--h N] [--L N] [--V N] [--rows N] [--len T]\n"
             "[--text FILE [--max-line-len N]] [--seeds N] [-k N] [--probes N] [--runs N]\n"
             "[--steps M] [--block-steps M]",
    .about = "Post-LN vs Pre-LN Hessian spectra at initialisation: extreme eigenvalues, trace,\n"
             "SLQ density and every block's top eigenvalue, per norm position and seed.  The\n"
             "summary: python3 -m studies.summary hessian OUT.",
    .opts = opts, .size = sizeof(opts_t), .defaults = defaults};

static void make_config(lnk_config *c, const opts_t *o, int pre, int seed)
{
    lnk_config_default(c);
    c->norm_pos = pre ? LNK_POS_PRE : LNK_POS_POST;
    c->d = o->d;
    c->h = o->h;
    c->L = o->L;
    c->V = o->V;
    c->seed = (uint64_t)seed;
    CLI_CK(lnk_config_finalize(c));
}

static void make_batch(const lnk_model *m, const opts_t *o, lnk_batch *b)
{
    if (!o->text) {
        CLI_CK(lnk_batch_synthetic(m, o->B, o->T, 1234, b));
        return;
    }
    lnk_text t;
    lnk_vocab *v;
    CLI_CK(lnk_text_read(o->text, &t));
    study_input_read(o->text, &t.digest);
    const lnk_text *tx[1] = {&t};
    CLI_CK(lnk_vocab_build(tx, 1, 1, o->V, &v));
    CLI_CK(lnk_text_lm_batch(&t, v, 0, o->B, o->max_len, b));
    lnk_vocab_free(v);
    lnk_text_free(&t);
}


int main(int argc, char **argv)
{
    study_start(&argc, &argv, "hessian_spectrum");
    opts_t o;
    cli_parse(&cmd, &o, argc, argv);
    cli_setup_done();
    if (o.text && cli_given("len")) { /* --len was the lines' limit with --text */
        if (cli_given("max-line-len"))
            cli_die("--len is for synthetic rows; with --text give --max-line-len alone");
        cli_warn("--len with --text is now --max-line-len (the old use goes in the next release)");
        o.max_len = o.T;
    }
    o.quiet = cli_quiet;
    if (o.d % o.h || o.d % 2)
        cli_die("--d %d must be even and a multiple of --h %d", o.d, o.h);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    make_dir(o.out);
    /* points (norm_pos, seed), i = pre * S + s, spread over the ranks of an
     * MPI job (kit/kit.h): the rows go to the sweep CSVs in point order */
    spec_files F;
    spec_files_open(&F, o.out, 0, 1);
    int S = o.seeds;
    /* blocks: embeddings, per layer attention and ffn, output */
    int nblk = 2 * o.L + 2;
    spec_block *blk = calloc((size_t)nblk, sizeof *blk);
    if (!blk)
        cli_die("out of memory");
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
                cli_die_lib();
            double *th = malloc(sizeof(double) * lnk_model_n_params(m));
            CLI_CK(lnk_model_init_params(m, th));
            lnk_batch b;
            make_batch(m, &o, &b);
            lnk_dataset ds = {&b, 1, 1, 0, lnk_batch_n_scored(m, &b), NULL};
            double ts = lnk_now();
            spec_point P;
            spec_run(m, th, &ds, &so, blk, nblk, (uint64_t)s, &P);
            spec_rows(&F, pn, s, &P, blk, nblk);
            char left[48]; /* the points run in order, rank by rank: pt + 1 done */
            cli_time_left(left, sizeof left, lnk_now() - t0, (double)pt + 1, 2.0 * S);
            if (!o.quiet && study_root())
                fprintf(stderr, "hessian_spectrum: %s seed %d: top %.6g bottom %.6g trace %.6g "
                        "(%.1f s; %.0f s so far, point %ld/%d, %s)\n", pn, s,
                        P.er.n_top ? P.er.value[0] : NAN,
                        P.er.n_bottom ? P.er.value[P.er.n_top] : NAN, P.tr.trace,
                        lnk_now() - ts, lnk_now() - t0, pt + 1, 2 * S, left);
            spec_point_free(&P);
            lnk_batch_free(&b);
            free(th);
            lnk_model_free(m);
        }
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
    char varied[64];
    snprintf(varied, sizeof varied, "norm_pos in {post, pre}, seed in 0..%d", S - 1);
    lnk_meta_str(extra, "study", "hessian_spectrum");
    lnk_meta_str(extra, "data", o.text ? o.text : "synthetic lm batch, ids uniform in [4, V), "
                                                  "batch seed 1234");
    lnk_meta_int(extra, "B", o.B);
    lnk_meta_int(extra, "T", o.text ? o.max_len : o.T); /* the key as before the split */
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
    if (study_root() && !o.quiet)
        fprintf(stderr, "hessian_spectrum: wrote %s/{eigs,trace,blocks,slq_nodes}.csv in %.1f s "
                "(the summary: python3 -m studies.summary hessian %s)\n", o.out,
                lnk_now() - t0, o.out);
    free(blk);
    return 0;
}
