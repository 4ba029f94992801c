/* lnkit blocks: statistics of the diagonal blocks of the Hessian (or of its
 * Gauss-Newton or functional part): one block per named tensor and per
 * --group, each with its Frobenius norm (Hutchinson), extreme eigenvalues and
 * SLQ density; the Jensen-Shannon distances between the densities on a
 * common grid (include/lnkit/blockstats.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "lnkit/blockstats.h"

#define MAX_GROUPS 64
#define MAX_GRID 5000000

static void help(void)
{
    printf("usage: lnkit blocks --config C.json --weights W --batch B [--batch B2 ...]\n"
           "                    [--group GLOBS ...] [--operator hessian|ggn|functional]\n"
           "                    -o BLOCKS.csv [--pairs PAIRS.csv] [--density DENSITY.csv]\n\n"
           "Statistics of diagonal blocks A_bb of the curvature operator A (the Hessian, its\n"
           "Gauss-Newton part or its functional part; --operator): one block per named tensor\n"
           "(those matched by --block, all by default) and one per --group.  For each: the\n"
           "Frobenius norm ||A_bb||_F by Hutchinson on ||A_bb z||^2 (Rademacher z) with its\n"
           "standard error, the largest and smallest eigenvalue (Lanczos) with residuals,\n"
           "and the SLQ density on a grid common to all blocks; for each pair of blocks the\n"
           "Jensen-Shannon distance between their densities (natural log: 0 for identical,\n"
           "sqrt(ln 2) = 0.8326 for disjoint densities).\n"
           "BLOCKS.csv: block,type,n,operator,probes,frob,frob_se,frob2,frob2_se,top,\n"
           "top_residual,top_converged,bottom,bottom_residual,bottom_converged,eig_steps,\n"
           "node_min,node_max,applies.  PAIRS.csv: block_a,block_b,js_distance.\n"
           "DENSITY.csv: block,t,density.  Each with a .meta.json sidecar.\n"
           "An extreme is converged when its residual <= tol max|l| (the block's); in a\n"
           "block that is zero to rounding (max|l| < 1e-10 of the largest block's, e.g. an\n"
           "attention key bias) when it is <= tol times the largest block's max|l|.\n"
           "Extremes that did not converge: a warning and exit status 3.\n\n"
           "  -o, --output FILE      block statistics CSV                       (required)\n"
           "  --pairs FILE           Jensen-Shannon distances between blocks    (none)\n"
           "  --density FILE         the block densities on the common grid     (none)\n"
           "  --group GLOBS          a block of the tensors matched by the\n"
           "                         comma-separated globs, e.g. '*.attn.wq' or\n"
           "                         'dec.3.*'; repeat for several              (none)\n"
           "  --no-tensors           no per-tensor blocks: only the groups\n"
           "  --probes N             Hutchinson probes for ||A_bb||_F           (30)\n"
           "  --eig-steps M          Lanczos step limit for the extremes        (100)\n"
           "  --tol T                residual tolerance of the extremes,\n"
           "                         relative to the block's max|l|             (1e-6)\n"
           "  --runs N               SLQ start vectors per block                (4)\n"
           "  --steps M              SLQ Lanczos steps per run                  (40)\n"
           "  --sigma S              kernel standard deviation (eigenvalue units)\n"
           "  --sigma-fraction F     sigma = F * the common range of the nodes  (0.01)\n"
           "  --grid-per-sigma P     grid points per sigma, 1 to 1e6            (4)\n\n");
    cli_curv_print_help(0);
}

static double num(const char *opt, const char *s) { return cli_real("blocks", opt, s, 1); }

enum { O_PAIRS = 1, O_DENSITY, O_GROUP, O_NOTENS, O_PROBES, O_EIGSTEPS, O_TOL, O_RUNS, O_STEPS,
       O_SIG, O_SIGF, O_GRID };

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

/* A block that is zero to rounding (an attention key bias, which softmax
 * ignores: its H, G and F are 0) has extremes of the size of rounding,
 * whose residuals no tolerance relative to themselves can pass.  Its
 * extremes count as converged when the block's max|l| is below ZERO_REL of
 * the largest block's, S, and their residuals are within tol S: they are 0
 * to what the products resolve. */
#define ZERO_REL 1e-10
static void zero_blocks(block_row *b, int nb, double tol)
{
    double S = 0;
    for (int i = 0; i < nb; i++)
        S = fmax(S, fmax(fabs(b[i].st.top), fabs(b[i].st.bottom)));
    for (int i = 0; i < nb; i++) {
        lnk_blockstat *st = &b[i].st;
        if (fmax(fabs(st->top), fabs(st->bottom)) > ZERO_REL * S)
            continue;
        st->top_converged |= st->top_residual <= tol * S;
        st->bottom_converged |= st->bottom_residual <= tol * S;
    }
}

/* Extremes that did not converge, over every block: their count, the worst
 * residual relative to its block's max|l|, the most steps a block took. */
static int not_converged(const block_row *b, int nb, double *worst, int *steps)
{
    int bad = 0;
    *worst = 0;
    *steps = 0;
    for (int i = 0; i < nb; i++) {
        const lnk_blockstat *st = &b[i].st;
        double scale = fmax(fabs(st->top), fabs(st->bottom));
        *steps = st->eig_steps > *steps ? st->eig_steps : *steps;
        const double res[2] = {st->top_residual, st->bottom_residual};
        const int conv[2] = {st->top_converged, st->bottom_converged};
        for (int e = 0; e < 2; e++)
            if (!conv[e]) {
                bad++;
                *worst = fmax(*worst, scale > 0 ? res[e] / scale : res[e]);
            }
    }
    return bad;
}

int cmd_blocks(int argc, char **argv)
{
    struct option opts[128] = {{"output", required_argument, NULL, 'o'},
                               {"help", no_argument, NULL, 'h'},
                               {"pairs", required_argument, NULL, O_PAIRS},
                               {"density", required_argument, NULL, O_DENSITY},
                               {"group", required_argument, NULL, O_GROUP},
                               {"no-tensors", no_argument, NULL, O_NOTENS},
                               {"probes", required_argument, NULL, O_PROBES},
                               {"eig-steps", required_argument, NULL, O_EIGSTEPS},
                               {"tol", required_argument, NULL, O_TOL},
                               {"runs", required_argument, NULL, O_RUNS},
                               {"steps", required_argument, NULL, O_STEPS},
                               {"sigma", required_argument, NULL, O_SIG},
                               {"sigma-fraction", required_argument, NULL, O_SIGF},
                               {"grid-per-sigma", required_argument, NULL, O_GRID}};
    int n = cli_curv_add_options(opts, 14, 0);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_curv_opts co = {0};
    const char *out = NULL, *pairs = NULL, *dens = NULL, *groups[MAX_GROUPS];
    int n_groups = 0, tensors = 1, ch, sig_kind = 0;
    double sval = 0.01, per = 4;
    lnk_blockstat_opts bo;
    lnk_blockstat_opts_default(&bo);
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_curv_option(&co, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case O_PAIRS: pairs = optarg; break;
        case O_DENSITY: dens = optarg; break;
        case O_GROUP:
            if (n_groups == MAX_GROUPS)
                cli_die("blocks: at most %d --group options", MAX_GROUPS);
            if (!*optarg)
                cli_die("blocks: --group: expected comma-separated globs, got ''");
            for (int g = 0; g < n_groups; g++) /* its rows are told apart by their names */
                if (!strcmp(groups[g], optarg))
                    cli_die("blocks: --group '%s' is given twice: each group once (its rows in "
                            "the outputs are named by its globs)", optarg);
            groups[n_groups++] = optarg;
            break;
        case O_NOTENS: tensors = 0; break;
        case O_PROBES: bo.probes = (int)cli_int("probes", optarg, 2, 1 << 20); break;
        case O_EIGSTEPS: bo.eig_steps = (int)cli_int("eig-steps", optarg, 2, 1 << 20); break;
        case O_TOL: bo.eig_tol = cli_real("blocks", "tol", optarg, 0); break;
        case O_RUNS: bo.slq_runs = (int)cli_int("runs", optarg, 1, 1 << 20); break;
        case O_STEPS: bo.slq_steps = (int)cli_int("steps", optarg, 1, 1 << 20); break;
        case O_SIG: case O_SIGF:
            if (sig_kind)
                cli_die("blocks: give only one of --sigma, --sigma-fraction");
            sig_kind = ch;
            sval = num(ch == O_SIG ? "sigma" : "sigma-fraction", optarg);
            break;
        case O_GRID: per = cli_grid_per_sigma("blocks", optarg); break;
        case 'h': help(); return 0;
        default: cli_bad_option("blocks", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("blocks: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("blocks: -o BLOCKS.csv is required");
    if (!tensors && !n_groups)
        cli_die("blocks: --no-tensors without --group leaves no block");
    if (!sig_kind)
        sig_kind = O_SIGF;
    bo.seed = co.rng_seed;
    cli_curv_out outs[3] = {{out, "-o", 1}, {pairs, "--pairs", 1}, {dens, "--density", 1}};
    cli_curv_check_outputs("blocks", &co, outs, 3);
    /* the model, the data set and the operator once; then the operator is
     * restricted to each block in turn (lnk_hessian_set_block: the kept
     * primal passes serve every block).  --block selects the per-tensor
     * blocks, not the groups' tensors. */
    const char *tensor_pat = co.block;
    co.block = NULL;
    cli_curv s;
    cli_curv_open(&s, &co);
    co.block = tensor_pat;
    const lnk_layout *lay = lnk_model_layout(s.m);
    lnk_block sel = {0};
    if (tensors)
        cli_check(lnk_block_select(s.m, tensor_pat, &sel));
    int nb = sel.n_tensors + n_groups;
    block_row *b = calloc((size_t)nb, sizeof *b);
    cli_check(b ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    for (int i = 0; i < nb; i++) {
        const char *nm = i < sel.n_tensors ? lay->t[sel.tensor[i]].name : groups[i - sel.n_tensors];
        b[i].name = strdup(nm);
        b[i].type = i < sel.n_tensors ? "tensor" : "group";
        cli_check(b[i].name ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
        /* every group's globs are checked before the work starts */
        lnk_block g;
        int st = i < sel.n_tensors ? LNK_OK : lnk_block_select(s.m, nm, &g);
        if (st) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            cli_check(lnk_error(st, "blocks: --group '%s': %s", nm, msg));
        }
        if (i >= sel.n_tensors)
            lnk_block_free(&g);
    }
    double t0 = lnk_now();
    for (int i = 0; i < nb; i++) {
        if (lnk_hessian_set_block(s.h, b[i].name) != LNK_OK) /* agreed over the ranks */
            cli_die_lib();
        lnk_operator op = lnk_hessian_operator(s.h);
        int st = lnk_blockstat_compute(&op, &bo, &b[i].st);
        if (st) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            cli_check(lnk_error(st, "blocks: block '%s': %s", b[i].name, msg));
        }
        if (!co.quiet && cli_root())
            fprintf(stderr, "blocks: %d/%d %s (%zu): ||A||_F %.6g +- %.2g, eigenvalues [%.6g, "
                    "%.6g]  %.1f s\n", i + 1, nb, b[i].name, b[i].st.n, b[i].st.frob.frob,
                    b[i].st.frob.frob_se, b[i].st.bottom, b[i].st.top, lnk_now() - t0);
    }
    zero_blocks(b, nb, bo.eig_tol);
    double worst_res;
    int max_steps, n_bad = not_converged(b, nb, &worst_res, &max_steps);
    long products = lnk_hessian_n_products(s.h);
    /* the densities on one grid, and the distances between them */
    const lnk_slq_result **r = malloc(sizeof *r * (size_t)nb);
    double *js = calloc((size_t)nb * nb, sizeof(double)), *t = NULL, sigma = sval;
    cli_check(r && js ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < nb; i++) {
        r[i] = &b[i].st.slq;
        lo = fmin(lo, r[i]->node_min);
        hi = fmax(hi, r[i]->node_max);
    }
    if (sig_kind == O_SIGF && lnk_sigma_from_fraction(sval, lo, hi, &sigma) != LNK_OK)
        cli_die("blocks: --sigma-fraction %g of the nodes' range [%g, %g] gives no width: give "
                "--sigma S", sval, lo, hi);
    size_t npts = 0;
    cli_check_sigma("blocks", sigma, lo, hi, per, MAX_GRID);
    if (lnk_slq_grid_common(r, nb, sigma, LNK_SLQ_PAD, per, MAX_GRID, &t, &npts) != LNK_OK)
        cli_die_lib();
    double worst = 0;
    for (int i = 0; i < nb; i++) {
        b[i].phi = malloc(sizeof(double) * npts);
        cli_check(b[i].phi ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for a grid of %zu",
                                                npts));
        if (lnk_slq_density(r[i], sigma, t, npts, b[i].phi) != LNK_OK)
            cli_die_lib();
        double integral = lnk_trapezoid(t, b[i].phi, npts);
        worst = fmax(worst, fabs(integral - 1));
        if (!(fabs(integral - 1) < 1e-6))
            cli_die("blocks: the density of block '%s' integrates to %.12g, not 1 (grid of %zu "
                    "points): this is a bug, please report it", b[i].name, integral, npts);
    }
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            double d;
            if (lnk_js_distance(t, b[i].phi, b[j].phi, npts, &d) != LNK_OK)
                cli_die_lib();
            js[(size_t)i * nb + j] = js[(size_t)j * nb + i] = d;
        }
    if (cli_root()) {
        const char *opname = lnk_op_kind_name(co.op_kind);
        cli_outputs_begin(); /* every CSV and sidecar, or none */
        tables x = {b, nb, opname, bo.probes, js, t, npts};
        if (lnk_csv_write(out, NULL, lnk_cols_blockstat, rows_blocks, &x) != LNK_OK ||
            (pairs && lnk_csv_write(pairs, NULL, lnk_cols_js, rows_pairs, &x) != LNK_OK) ||
            (dens && lnk_csv_write(dens, &BLOCK_KEYS, lnk_cols_density, rows_density, &x) != LNK_OK))
            cli_die_lib();
        lnk_meta *extra = lnk_meta_alloc();
        if (!extra)
            cli_die_lib();
        lnk_meta_int(extra, "blocks", nb);
        lnk_meta_int(extra, "tensor_blocks", sel.n_tensors);
        lnk_meta_str(extra, "tensors_pattern", tensor_pat ? tensor_pat : "*");
        lnk_meta_int(extra, "groups", n_groups);
        lnk_meta_int(extra, "probes", bo.probes);
        lnk_meta_int(extra, "eig_steps", bo.eig_steps);
        lnk_meta_real(extra, "tol", bo.eig_tol);
        lnk_meta_int(extra, "runs", bo.slq_runs);
        lnk_meta_int(extra, "steps", bo.slq_steps);
        lnk_meta_real(extra, "sigma", sigma);
        lnk_meta_str(extra, "sigma_option", sig_kind == O_SIG ? "sigma" : "sigma-fraction");
        lnk_meta_real(extra, "sigma_value", sval);
        lnk_meta_int(extra, "grid_points", (long long)npts);
        lnk_meta_real(extra, "grid_min", t[0]);
        lnk_meta_real(extra, "grid_max", t[npts - 1]);
        lnk_meta_real(extra, "max_integral_error", worst);
        lnk_meta_str(extra, "js_log", "natural");
        lnk_meta_int(extra, "block_products", products);
        lnk_meta_int(extra, "extremes", 2 * nb);
        lnk_meta_int(extra, "converged", 2 * nb - n_bad);
        lnk_meta_str(extra, "pairs_file", pairs ? pairs : "");
        lnk_meta_str(extra, "density_file", dens ? dens : "");
        cli_curv_meta(&s, &co, out, "blocks", extra);
        if (pairs)
            cli_curv_meta(&s, &co, pairs, "blocks", extra);
        if (dens)
            cli_curv_meta(&s, &co, dens, "blocks", extra);
        lnk_meta_free(extra);
        cli_outputs_commit();
        if (!co.quiet)
            fprintf(stderr, "blocks: %d blocks (%s), %ld products, sigma %.6g, %zu grid points, "
                    "%.2f s -> %s\n", nb, opname, products, sigma, npts, lnk_now() - t0, out);
    }
    /* the rule for extremes that did not converge (cli_not_converged) */
    int status = cli_not_converged("blocks", n_bad, 2 * nb, worst_res, bo.eig_tol, max_steps,
                                   bo.eig_steps, max_steps >= bo.eig_steps ? "the step limit was "
                                   "reached (a larger --eig-steps may converge them)" : NULL);
    for (int i = 0; i < nb; i++) {
        free(b[i].name);
        free(b[i].phi);
        lnk_blockstat_free(&b[i].st);
    }
    free(b);
    free(r);
    free(js);
    free(t);
    lnk_block_free(&sel);
    cli_curv_close(&s);
    return status;
}
