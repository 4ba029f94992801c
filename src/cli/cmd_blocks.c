/* lnkit blocks: statistics of the diagonal blocks of the Hessian (or of its
 * Gauss-Newton or functional part): one block per named tensor and per
 * --group, each with its Frobenius norm (Hutchinson), extreme eigenvalues and
 * SLQ density; the Jensen-Shannon distances between the densities on a
 * common grid (include/lnkit/blockstats.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "front/progress.h"
#include "lnkit/blockstats.h"

#define MAX_GROUPS 64
#define MAX_GRID 5000000

typedef struct {
    cli_curv_opts co;
    lnk_blockstat_opts bo;
    cli_sigma_opts sg;
    const char *out, *pairs, *dens, *groups[MAX_GROUPS];
    int n_groups, no_tensors, json;
} blocks_args;

#define T blocks_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, 0, "the block statistics, CSV block,type,n,operator,probes,frob,"
                   "frob_se,frob2,frob2_se,top,top_residual,top_converged,bottom,"
                   "bottom_residual,bottom_converged,eig_steps,node_min,node_max,applies "
                   "(+ FILE.meta.json)", NULL),
    CLI_OPT_JSON(T, json),
    {.type = CLI_STR, .name = "pairs", .arg = "FILE", CLI_AT(T, pairs), .unset = "",
     .flags = CLI_WRITES | CLI_STDOUT | CLI_META, .meta = "pairs_file",
     .help = "also write the Jensen-Shannon distances between the blocks' densities: CSV "
             "block_a,block_b,js_distance (+ FILE.meta.json)"},
    {.type = CLI_STR, .name = "density", .arg = "FILE", CLI_AT(T, dens), .unset = "",
     .flags = CLI_WRITES | CLI_STDOUT | CLI_META, .meta = "density_file",
     .help = "also write the blocks' densities on the common grid: CSV block,t,density "
             "(+ FILE.meta.json)"},
    {.type = CLI_LIST, .name = "group", .arg = "GLOBS", CLI_AT(T, groups),
     .count = offsetof(T, n_groups),
     .help = "a block of the tensors matched by these comma-separated globs, e.g. '*.attn.wq' "
             "or 'dec.3.*'; repeat for several, each once"},
    {.type = CLI_FLAG, .name = "no-tensors", CLI_AT(T, no_tensors),
     .help = "no per-tensor blocks: only the groups"},
    {.type = CLI_INT, .name = "probes", .arg = "N", CLI_AT(T, bo.probes), .min = 2, .max = 1 << 20,
     .flags = CLI_META, .help = "Hutchinson probes for ||A_bb||_F"},
    {.type = CLI_INT, .name = "max-steps", .was = "eig-steps", .arg = "M",
     CLI_AT(T, bo.eig_steps), .min = 2, .max = 1 << 20, .flags = CLI_META,
     .help = "Lanczos step limit for the extremes"},
    CLI_OPT_TOL(T, bo.eig_tol, CLI_META, "residual tolerance of the extremes, relative to the "
                "block's max|l|"),
    {.type = CLI_INT, .name = "runs", .arg = "N", CLI_AT(T, bo.slq_runs), .min = 1,
     .max = 1 << 20, .flags = CLI_META, .help = "SLQ start vectors per block"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(T, bo.slq_steps), .min = 1,
     .max = 1 << 20, .flags = CLI_META, .help = "SLQ Lanczos steps per run"},
    CLI_SIGMA(T, sg), CLI_CURV(T, co, cli_curv_blocks), CLI_MODEL(T, co.mo),
    {0}};
#undef T

static void defaults(void *p)
{
    blocks_args *a = p;
    cli_curv_defaults(&a->co);
    lnk_blockstat_opts_default(&a->bo);
    cli_sigma_defaults(&a->sg);
    a->out = "-";
}

const cli_cmd cmd_blocks_decl = {
    .name = "lnkit blocks",
    .summary = "per-tensor / group blocks: ||A_bb||_F, extremes, densities, JS",
    .usage = "--config C.json --weights W --batch B [--batch B2 ...] [--group GLOBS ...]\n"
             "[--operator hessian|ggn|functional] [-o BLOCKS.csv] [--pairs PAIRS.csv]\n"
             "[--density DENSITY.csv]",
    .about = "Statistics of diagonal blocks A_bb of the curvature operator A (the Hessian, its\n"
             "Gauss-Newton part or its functional part): one block per named tensor (those\n"
             "matched by --block, all by default) and one per --group.  For each: the\n"
             "Frobenius norm ||A_bb||_F by Hutchinson on ||A_bb z||^2 with its standard error,\n"
             "the largest and smallest eigenvalue (Lanczos) with residuals, and the SLQ density\n"
             "on a grid common to all blocks; for each pair of blocks the Jensen-Shannon\n"
             "distance between their densities (natural log: 0 for identical, sqrt(ln 2) =\n"
             "0.8326 for disjoint densities).  An extreme is converged when its residual <=\n"
             "tol max|l| (the block's; in a block that is zero to rounding, such as an\n"
             "attention key bias, the largest block's); otherwise a warning and exit status 3.",
    .opts = opts,
    .size = sizeof(blocks_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH --block 'dec.0.attn.*' "
               "--probes 2 --max-steps 40 --runs 1 --steps 4 -o OUT",
};

typedef struct {
    char *name;          /* the tensor's name or the group's globs */
    const char *type;    /* "tensor" or "group" */
    lnk_blockstat st;
    double *phi;         /* density on the common grid */
} block_row;

/* What the three CSVs are written from. */
typedef struct {
    const block_row *b;
    int nb;
    const char *op;
    int probes;
    const double *js, *t; /* pairs: js [nb x nb]; density: the grid t */
    size_t npts;
} tables;

/* The rows of -o: one per block (lnk_blockstat_rows). */
static int rows_blocks(lnk_csv *c, const void *ctx)
{
    const tables *x = ctx;
    int st = LNK_OK;
    for (int i = 0; !st && i < x->nb; i++)
        st = lnk_blockstat_rows(c, NULL, x->b[i].name, x->b[i].type, x->op, x->probes,
                                &x->b[i].st);
    return st;
}

/* The rows of --pairs: every pair of blocks once (lnk_js_rows). */
static int rows_pairs(lnk_csv *c, const void *ctx)
{
    const tables *x = ctx;
    const char **names = malloc(sizeof *names * (size_t)(x->nb ? x->nb : 1));
    if (!names)
        return lnk_error(LNK_ENOMEM, "out of memory");
    for (int i = 0; i < x->nb; i++)
        names[i] = x->b[i].name;
    int st = lnk_js_rows(c, NULL, names, x->nb, x->js);
    free(names);
    return st;
}

/* --density: the density format with the block as key column */
static const char *const BLOCK_KEY[] = {"block"};
static const lnk_csv_keys BLOCK_KEYS = {1, BLOCK_KEY, NULL};

/* The rows of --density: every block's density on the common grid. */
static int rows_density(lnk_csv *c, const void *ctx)
{
    const tables *x = ctx;
    int st = LNK_OK;
    for (int i = 0; !st && i < x->nb; i++) {
        const char *v[] = {x->b[i].name};
        lnk_csv_keys k = {1, BLOCK_KEY, v};
        st = lnk_density_rows(c, &k, x->t, x->b[i].phi, x->npts);
    }
    return st;
}

/* A failure st of the library on block or group NAME: its message prefixed
 * by "WHAT 'NAME': " (cli_check: every rank ends). */
static void check_named(int st, const char *what, const char *name)
{
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", lnk_errmsg());
        cli_check(lnk_error(st, "%s '%s': %s", what, name, msg));
    }
}

/* The blocks: the tensors of sel, then the groups (their globs checked
 * before the work starts). */
static block_row *make_rows(const lnk_model *m, const lnk_block *sel, const char *const *groups,
                            int n_groups)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int nb = sel->n_tensors + n_groups;
    block_row *b = calloc((size_t)nb, sizeof *b);
    cli_check(b ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    for (int i = 0; i < nb; i++) {
        int tensor = i < sel->n_tensors;
        const char *nm = tensor ? lay->t[sel->tensor[i]].name : groups[i - sel->n_tensors];
        b[i].name = strdup(nm);
        b[i].type = tensor ? "tensor" : "group";
        cli_check(b[i].name ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
        lnk_block g;
        check_named(tensor ? LNK_OK : lnk_block_select(m, nm, &g), "--group", nm);
        if (!tensor)
            lnk_block_free(&g);
    }
    return b;
}

/* The blocks' densities on one grid (its width: --sigma... over all their
 * nodes), checked to integrate to 1, and the distances between them (js,
 * nb x nb): cli_densities. */
static void densities(block_row *b, int nb, const cli_sigma_opts *sg, int steps, double *js,
                      cli_grid *g)
{
    const lnk_slq_result **r = malloc(sizeof *r * (size_t)nb);
    const char **names = malloc(sizeof *names * (size_t)nb);
    double **phi = malloc(sizeof *phi * (size_t)nb);
    cli_check(r && names && phi ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    for (int i = 0; i < nb; i++)
        r[i] = &b[i].st.slq, names[i] = b[i].name;
    cli_densities(r, names, nb, sg, steps, MAX_GRID, phi, js, g);
    for (int i = 0; i < nb; i++)
        b[i].phi = phi[i];
    free(r);
    free(names);
    free(phi);
}

/* Progress inside a block: the block's operator wrapped, each product
 * reported to the run's meter (cli_meter: planned at most `per_block` products
 * a block); the products themselves are the wrapped operator's, untouched. */
typedef struct {
    lnk_operator in;
    cli_meter pr;
} counted_op;

static int counted_apply(void *ctx, const double *x, double *y)
{
    counted_op *c = ctx;
    int st = c->in.apply(c->in.ctx, x, y);
    cli_meter_add(&c->pr, 1);
    return st;
}

/* What the run works on and may take (n_tensors < 0: --no-tensors), and
 * for G why its blocks' bottom extremes may take every step. */
static void say_plan(int nb, int n_tensors, const char *tensor_pat, int n_groups, long per_block,
                     int op_kind, int eig_steps)
{
    if (n_tensors >= 0)
        cli_say("%d block%s: %d tensor(s)%s%s%s and %d group(s)", nb, nb == 1 ? "" : "s",
                n_tensors, tensor_pat ? " matched by --block '" : "", tensor_pat ? tensor_pat : "",
                tensor_pat ? "'" : "", n_groups);
    else
        cli_say("%d block%s: %d group(s), no tensor blocks (--no-tensors%s%s%s)", nb,
                nb == 1 ? "" : "s", n_groups, tensor_pat ? "; --block '" : "",
                tensor_pat ? tensor_pat : "",
                tensor_pat ? "' selects none" : "");
    cli_say("; at most %ld products (%ld a block)\n", per_block * nb, per_block);
    if (op_kind == LNK_OP_GGN)
        cli_say_ggn_bottom(NULL, 1, eig_steps, "--max-steps");
}

/* Each block's statistics in turn (its operator counted: the progress
 * inside it), a line after each. */
static void compute_blocks(lnk_hessian *h, block_row *b, int nb, const lnk_blockstat_opts *bo,
                           long per_block, double t0)
{
    counted_op cop;
    cli_meter_start(&cop.pr, (double)per_block * nb);
    char what[600];
    for (int i = 0; i < nb; i++) {
        if (lnk_hessian_set_block(h, b[i].name) != LNK_OK) /* agreed over the ranks */
            cli_die_lib();
        cop.in = lnk_hessian_operator(h);
        snprintf(what, sizeof what, "block %d/%d %s", i + 1, nb, b[i].name);
        cop.pr.what = what, cop.pr.done = (double)i * per_block; /* a block may end early */
        lnk_operator op = {cop.in.n, &cop, counted_apply, cop.in.group};
        check_named(lnk_blockstat_compute(&op, bo, &b[i].st), "block", b[i].name);
        double el = lnk_now() - t0, left = el / (i + 1) * (nb - i - 1);
        cli_say("%d/%d %s (%zu): ||A||_F %.6g +- %.2g, eigenvalues [%.6g, %.6g]  %.1f s, about "
                "%.0f s left\n", i + 1, nb, b[i].name, b[i].st.n, b[i].st.frob.frob,
                b[i].st.frob.frob_se, b[i].st.bottom, b[i].st.top, el, left);
    }
}

int cmd_blocks(int argc, char **argv)
{
    blocks_args a;
    cli_parse(&cmd_blocks_decl, &a, argc, argv);
    cli_curv_opts *co = &a.co;
    lnk_blockstat_opts bo = a.bo;
    const char *out = a.out, *pairs = a.pairs, *dens = a.dens, *const *groups = a.groups;
    int n_groups = a.n_groups, tensors = !a.no_tensors;
    for (int g = 0; g < n_groups; g++) { /* its rows are told apart by their names */
        if (!*groups[g])
            cli_die("--group: expected comma-separated globs, got ''");
        for (int h = 0; h < g; h++)
            if (!strcmp(groups[h], groups[g]))
                cli_die("--group '%s' is given twice: each group once (its rows in the outputs "
                        "are named by its globs)", groups[g]);
    }
    if (!tensors && !n_groups)
        cli_die("--no-tensors without --group leaves no block");
    bo.seed = co->rng_seed;
    cli_curv_out outs[3] = {{out, "-o", 1}, {pairs, "--pairs", 1}, {dens, "--density", 1}};
    /* the model, the data set and the operator once; then the operator is
     * restricted to each block in turn (lnk_hessian_set_block: the kept
     * primal passes serve every block).  --block selects the per-tensor
     * blocks, not the groups' tensors. */
    const char *tensor_pat = co->block;
    co->block = NULL;
    co->in_blocks = 1;
    cli_curv s;
    cli_curv_open(&s, co, "blocks", opts, &a, outs, 3);
    co->block = tensor_pat;
    lnk_block sel = {0};
    if (tensors)
        cli_check(lnk_block_select(s.m, tensor_pat, &sel));
    int nb = sel.n_tensors + n_groups;
    block_row *b = make_rows(s.m, &sel, groups, n_groups);
    cli_curv_say(&s); /* after the globs' check: a refused run is one line */
    /* what the run works on and how long it may take: every block costs at most
     * probes + max-steps + 2 + runs x steps products */
    long per_block = bo.probes + bo.eig_steps + 2 + (long)bo.slq_runs * bo.slq_steps;
    say_plan(nb, tensors ? sel.n_tensors : -1, tensor_pat, n_groups, per_block, co->op_kind,
             bo.eig_steps);
    double t0 = lnk_now();
    compute_blocks(s.h, b, nb, &bo, per_block, t0);
    lnk_blockstat **st = malloc(sizeof *st * (size_t)nb);
    cli_check(st ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    for (int i = 0; i < nb; i++)
        st[i] = &b[i].st;
    lnk_blockstat_settle(st, nb, bo.eig_tol); /* blocks zero to rounding */
    double worst_res;
    int max_steps, n_bad = lnk_blockstat_unconverged((const lnk_blockstat *const *)st, nb,
                                                     &worst_res, &max_steps);
    char hint[1024]; /* why, if some did not converge */
    lnk_blockstat_why((const lnk_blockstat *const *)st, nb, co->op_kind == LNK_OP_GGN,
                      bo.eig_steps, &(lnk_blockstat_names){"--max-steps", "--tol",
                      "--group or more tensors"}, hint, sizeof hint);
    free(st);
    long products = lnk_hessian_n_products(s.h);
    double *js = calloc((size_t)nb * nb, sizeof(double));
    cli_check(js ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    cli_grid g;
    densities(b, nb, &a.sg, bo.slq_steps, js, &g);
    const double *t = g.t;
    size_t npts = g.npts;
    if (cli_root()) {
        const char *opname = lnk_op_kind_name(co->op_kind);
        cli_outputs_begin(); /* every CSV and sidecar, or none */
        tables x = {b, nb, opname, bo.probes, js, t, npts};
        if (lnk_csv_write(cli_result_path(out, a.json), NULL, lnk_cols_blockstat, rows_blocks,
                          &x) != LNK_OK ||
            (pairs && lnk_csv_write(cli_out(pairs, 0), NULL, lnk_cols_js, rows_pairs, &x)) ||
            (dens && lnk_csv_write(cli_out(dens, 0), &BLOCK_KEYS, lnk_cols_density,
                                   rows_density, &x)))
            cli_die_lib();
        json_t *res = json_pack("{s:i, s:i, s:s, s:i, s:f, s:s, s:f, s:I, s:f, s:f, s:f, s:s, "
                                "s:I, s:i, s:i}", "blocks", nb, "tensor_blocks", sel.n_tensors,
                                "tensors_pattern", tensor_pat ? tensor_pat : "*", "groups",
                                n_groups, "sigma", g.sigma, "sigma_option", g.option,
                                "sigma_value", g.value, "grid_points", (json_int_t)npts,
                                "grid_min", t[0], "grid_max", t[npts - 1],
                                "max_integral_error", g.worst, "js_log", "natural",
                                "block_products", (json_int_t)products, "extremes", 2 * nb,
                                "converged", 2 * nb - n_bad);
        cli_curv_meta(&s, out, json_incref(res));
        cli_curv_meta(&s, pairs, json_incref(res));
        cli_curv_meta(&s, dens, res);
        cli_outputs_commit();
        cli_result_json();
        cli_say("%d block%s (%s), %ld products, sigma %.6g, %zu grid points, %.2f s -> %s\n", nb,
                nb == 1 ? "" : "s", opname, products, g.sigma, npts, lnk_now() - t0, cli_dest(out));
    }
    /* the rule for extremes that did not converge (cli_not_converged) */
    int status = cli_not_converged(n_bad, 2 * nb, worst_res, bo.eig_tol, max_steps, bo.eig_steps,
                                   *hint ? hint : NULL);
    for (int i = 0; i < nb; i++) {
        free(b[i].name);
        free(b[i].phi);
        lnk_blockstat_free(&b[i].st);
    }
    free(b);
    free(js);
    free(g.t);
    lnk_block_free(&sel);
    cli_curv_close(&s);
    return status;
}
