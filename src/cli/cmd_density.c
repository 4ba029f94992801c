/* lnkit density: spectral density of the loss Hessian by stochastic Lanczos quadrature. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "lnkit/curvature_io.h"

typedef struct {
    cli_curv_opts co;
    lnk_slq_opts so;
    cli_sigma_opts sg;
    const char *out, *nodes;
    int json;
} density_args;

static const cli_choice starts[] = {{"rademacher", LNK_SLQ_RADEMACHER},
                                    {"gaussian", LNK_SLQ_GAUSSIAN}, {NULL, 0}};

#define T density_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, 0, "the density, CSV t,density (+ FILE.meta.json)", NULL),
    CLI_OPT_JSON(T, json),
    {.type = CLI_STR, .name = "nodes", .arg = "FILE", CLI_AT(T, nodes), .unset = "",
     .flags = CLI_WRITES | CLI_STDOUT | CLI_META, .meta = "nodes_file",
     .help = "also write every run's nodes and weights: CSV run,index,node,weight "
             "(+ FILE.meta.json); -: standard output"},
    {.type = CLI_INT, .name = "runs", .arg = "N", CLI_AT(T, so.runs), .min = 1, .max = 1 << 20,
     .flags = CLI_ID | CLI_META, .help = "start vectors n_v"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(T, so.steps), .min = 1, .max = 1 << 20,
     .flags = CLI_ID | CLI_META, .help = "Lanczos steps per run m"},
    {.type = CLI_CHOICE, .name = "start-vectors", CLI_AT(T, so.start), .ref = starts,
     .flags = CLI_ID | CLI_META, .meta = "start", .help = "the start vectors' entries"},
    CLI_LANCZOS(T, so.mode, so.reorth),
    CLI_SIGMA(T, sg), CLI_CURV(T, co, cli_curv_density), CLI_CKPT(T, co.ck), CLI_MODEL(T, co.mo),
    {0}};
#undef T

static void defaults(void *p)
{
    density_args *a = p;
    cli_curv_defaults(&a->co);
    lnk_slq_opts_default(&a->so);
    cli_sigma_defaults(&a->sg);
    a->out = "-";
}

const cli_cmd cmd_density_decl = {
    .name = "lnkit density",
    .summary = "Hessian spectral density (stochastic Lanczos quadrature)",
    .usage = "--config C.json --weights W --batch B [--runs N] [--steps M]\n"
             "[--sigma S | --sigma-variance V | --sigma-kappa K | --sigma-fraction F]\n"
             "[-o DENSITY.csv] [--nodes NODES.csv] [--json]",
    .about = "The spectral density (docs/MODEL.md section 7) of the Hessian (or of a block, or\n"
             "of G or F): N runs of M Lanczos steps from unit random vectors; nodes = Ritz\n"
             "values, weights = squared first components; phi(t) = (1/N) sum tau N(t; lambda,\n"
             "sigma^2) on a grid covering every node +- 6 sigma.",
    .opts = opts,
    .size = sizeof(density_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH --runs 2 --steps 5 -o OUT",
};

/* --checkpoint: save the state when due (cli_ckpt_due). */
static int save(void *ctx, const lnk_slq_state *st, int must)
{
    cli_ckpt_run *r = ctx;
    if (!cli_ckpt_due(r, must))
        return LNK_OK;
    return cli_ckpt_saved(r, lnk_ckpt_save_slq(r->ck, st, cli_ckpt_products(r)));
}

int cmd_density(int argc, char **argv)
{
    density_args a;
    cli_parse(&cmd_density_decl, &a, argc, argv);
    cli_curv_opts *co = &a.co;
    lnk_slq_opts so = a.so;
    const char *out = a.out, *nodes = a.nodes;
    so.seed = co->rng_seed;
    cli_curv_out outs[2] = {{out, "-o", 1}, {nodes, "--nodes", 1}};
    cli_curv s;
    cli_progress prog = {"step", -1e9, &s.run};
    so.progress = cli_progress_fn;
    so.progress_ctx = &prog;
    cli_curv_open(&s, co, "density", opts, &a, outs, 2);
    cli_curv_say(&s);
    /* --checkpoint: one run's basis in FILE.basis (the kernel width only
     * shapes the output: not in the checkpoint's identity) */
    int m = (size_t)so.steps < s.block_n ? so.steps : (int)s.block_n;
    int full = so.mode == LNK_LANCZOS_FULL;
    cli_curv_ckpt(&s, LNK_CKPT_SLQ, full ? (size_t)m + 1 : 6, full, (long)so.runs * m);
    if (s.run.ck) {
        so.basis = lnk_ckpt_basis(s.run.ck);
        so.resume = lnk_ckpt_slq_state(s.run.ck);
        so.checkpoint = save;
        so.checkpoint_ctx = &s.run;
    }
    lnk_slq_result r;
    if (lnk_slq(&s.op, &so, &r) != LNK_OK)
        cli_die_lib();
    if (!cli_root()) {
        lnk_slq_result_free(&r);
        cli_curv_done(&s);
        return 0;
    }
    const char *sigma_option;
    double sigma_value, per = a.sg.per;
    double sigma = cli_sigma(&a.sg, r.node_min, r.node_max, so.steps, &sigma_option,
                             &sigma_value, 50000000);
    size_t np = lnk_slq_grid_size(&r, sigma, LNK_SLQ_PAD, per);
    if (np < 2)
        np = 2;
    double *t = malloc(sizeof(double) * np), *phi = malloc(sizeof(double) * np);
    if (!t || !phi)
        cli_die("out of memory for a grid of %zu points", np);
    if (lnk_slq_grid(&r, sigma, LNK_SLQ_PAD, np, t) != LNK_OK ||
        lnk_slq_density(&r, sigma, t, np, phi) != LNK_OK)
        cli_die_lib();
    double integral = lnk_trapezoid(t, phi, np);
    if (!(fabs(integral - 1) < 1e-6))
        cli_die("the density integrates to %.12g, not 1 (grid of %zu points): this is "
                "a bug, please report it", integral, np);
    cli_outputs_begin(); /* density, nodes and sidecar: all or none */
    if (lnk_density_write(cli_result_path(out, a.json), t, phi, np) != LNK_OK)
        cli_die_lib();
    if (nodes && lnk_slq_write_nodes(&r, cli_out(nodes, 0)) != LNK_OK)
        cli_die_lib();
    json_t *res = json_pack("{s:f, s:s, s:f, s:I, s:f, s:f, s:f}", "sigma", sigma,
                            "sigma_option", sigma_option, "sigma_value", sigma_value,
                            "grid_points", (json_int_t)np, "integral", integral,
                            "node_min", r.node_min, "node_max", r.node_max);
    cli_curv_meta(&s, out, json_incref(res));
    cli_curv_meta(&s, nodes, res);
    cli_outputs_commit();
    cli_result_json();
    cli_ckpt_done(&s.run);
    cli_say("%d runs x %d steps, nodes in [%.6g, %.6g], sigma %.6g, %zu grid points, integral "
            "%.12f -> %s\n", so.runs, so.steps, r.node_min, r.node_max, sigma, np, integral,
            cli_dest(out));
    free(t);
    free(phi);
    lnk_slq_result_free(&r);
    cli_curv_close(&s);
    return 0;
}
