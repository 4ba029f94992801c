/* lnkit density: spectral density of the loss Hessian by stochastic Lanczos quadrature. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "lnkit/curvature_io.h"

static void help(void)
{
    printf("usage: lnkit density --config C.json --weights W --batch B [--runs N] [--steps M]\n"
           "                     (--sigma S | --sigma-variance V | --sigma-kappa K |\n"
           "                      --sigma-fraction F) -o DENSITY.csv [--nodes NODES.csv]\n\n"
           "Spectral density (docs/MODEL.md section 7) of the Hessian (or a block): N runs of M\n"
           "Lanczos steps from unit random vectors; nodes = Ritz values, weights = squared\n"
           "first components; phi(t) = (1/N) sum tau N(t; lambda, sigma^2) on a grid covering\n"
           "all nodes +- 6 sigma.  DENSITY.csv: t,density; NODES.csv: run,index,node,weight.\n\n"
           "  -o, --output FILE      density CSV (+ .meta.json)                 (required)\n"
           "  --nodes FILE           raw nodes and weights of every run         (none)\n"
           "  --runs N               start vectors n_v                          (10)\n"
           "  --steps M              Lanczos steps per run m                    (80)\n"
           "  --start rademacher|gaussian                                       (rademacher)\n"
           "  --mode full|light      reorthogonalisation                        (full)\n"
           "  --reorth partial|always  full mode: reorthogonalise when the basis\n"
           "                         loses semi-orthogonality, or at every step (partial)\n"
           "  --sigma S              kernel standard deviation (eigenvalue units)\n"
           "  --sigma-variance V     PyHessian / google spectral-density: kernel variance\n"
           "                         V * max(1, range of the nodes)\n"
           "  --sigma-kappa K        Papyan 2020: sigma = 1.1 range / ((m-1) sqrt(8 ln K))\n"
           "  --sigma-fraction F     sigma = F * range of the nodes\n"
           "  --grid-per-sigma P     grid points per sigma, 1 to 1e6            (4)\n\n");
    cli_curv_print_help(1);
}

static double num(const char *opt, const char *s) { return cli_real("density", opt, s, 1); }

/* --checkpoint: save the state when due (cli_ckpt_due). */
static int save(void *ctx, const lnk_slq_state *st, int must)
{
    cli_curv *s = ctx;
    if (!cli_ckpt_due(s, must))
        return LNK_OK;
    int rc = lnk_ckpt_save_slq(s->ck, st, cli_ckpt_products(s));
    if (rc == LNK_OK)
        cli_ckpt_saved(s);
    return rc;
}

enum { O_NODES = 1, O_RUNS, O_STEPS, O_START, O_MODE, O_SIG, O_SIGV, O_SIGK, O_SIGF, O_GRID,
       O_REORTH };

int cmd_density(int argc, char **argv)
{
    struct option opts[128] = {{"output", required_argument, NULL, 'o'},
                               {"help", no_argument, NULL, 'h'},
                               {"nodes", required_argument, NULL, O_NODES},
                               {"runs", required_argument, NULL, O_RUNS},
                               {"steps", required_argument, NULL, O_STEPS},
                               {"start", required_argument, NULL, O_START},
                               {"mode", required_argument, NULL, O_MODE},
                               {"sigma", required_argument, NULL, O_SIG},
                               {"sigma-variance", required_argument, NULL, O_SIGV},
                               {"sigma-kappa", required_argument, NULL, O_SIGK},
                               {"sigma-fraction", required_argument, NULL, O_SIGF},
                               {"grid-per-sigma", required_argument, NULL, O_GRID},
                               {"reorth", required_argument, NULL, O_REORTH}};
    int n = cli_curv_add_options(opts, 13, 1);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_curv_opts co = {0};
    const char *out = NULL, *nodes = NULL;
    int kind = 0, ch; /* which sigma convention: O_SIG.. */
    double sval = 0, per = 4;
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_curv_option(&co, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case O_NODES: nodes = optarg; break;
        case O_RUNS: so.runs = (int)cli_int("runs", optarg, 1, 1 << 20); break;
        case O_STEPS: so.steps = (int)cli_int("steps", optarg, 1, 1 << 20); break;
        case O_START:
            if (!strcmp(optarg, "rademacher"))
                so.start = LNK_SLQ_RADEMACHER;
            else if (!strcmp(optarg, "gaussian"))
                so.start = LNK_SLQ_GAUSSIAN;
            else
                cli_die("density: --start: expected rademacher or gaussian, got '%s'", optarg);
            break;
        case O_MODE: so.mode = cli_lanczos_mode("density", optarg); break;
        case O_REORTH: so.reorth = cli_reorth("density", optarg); break;
        case O_SIG: case O_SIGV: case O_SIGF:
            if (kind)
                cli_die("density: give only one of --sigma, --sigma-variance, --sigma-kappa, "
                        "--sigma-fraction");
            kind = ch;
            sval = num(opts[ch == O_SIG ? 7 : ch == O_SIGV ? 8 : 10].name, optarg);
            break;
        case O_SIGK:
            if (kind)
                cli_die("density: give only one of --sigma, --sigma-variance, --sigma-kappa, "
                        "--sigma-fraction");
            kind = ch;
            sval = num("sigma-kappa", optarg);
            if (sval <= 1)
                cli_die("density: --sigma-kappa: expected a number > 1, got '%s'", optarg);
            break;
        case O_GRID: per = cli_grid_per_sigma("density", optarg); break;
        case 'h': help(); return 0;
        default: cli_bad_option("density", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("density: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("density: -o DENSITY.csv is required");
    if (!kind)
        cli_die("density: the kernel width is required: --sigma S (or --sigma-variance, "
                "--sigma-kappa, --sigma-fraction)");
    so.seed = co.rng_seed;
    cli_curv_out outs[2] = {{out, "-o", 1}, {nodes, "--nodes", 0}};
    cli_curv_check_outputs("density", &co, outs, 2);
    cli_curv s;
    cli_progress prog = {"density", "step", -1e9, &s};
    if (!co.quiet) {
        so.progress = cli_progress_fn;
        so.progress_ctx = &prog;
    }
    cli_curv_open(&s, &co);
    /* --checkpoint: what the run belongs to (the kernel width only shapes the
     * output: not part of it); one run's basis in FILE.basis */
    lnk_ckpt_id id = {0};
    cli_check(lnk_ckpt_id_add(&id, "--runs", "%d", so.runs) ||
              lnk_ckpt_id_add(&id, "--steps", "%d", so.steps) ||
              lnk_ckpt_id_add(&id, "--start", "%s", so.start == LNK_SLQ_GAUSSIAN ? "gaussian" :
                              "rademacher") ||
              lnk_ckpt_id_add(&id, "--mode", "%s", so.mode == LNK_LANCZOS_FULL ? "full" : "light") ||
              lnk_ckpt_id_add(&id, "--reorth", "%s", so.reorth == LNK_REORTH_ALWAYS ? "always" :
                              "partial") ? LNK_ENOMEM : LNK_OK);
    int m = (size_t)so.steps < s.block_n ? so.steps : (int)s.block_n;
    int full = so.mode == LNK_LANCZOS_FULL;
    cli_ckpt_open(&s, &co, &id, LNK_CKPT_SLQ, full ? (size_t)m + 1 : 6, full, (long)so.runs * m);
    if (s.ck) {
        so.basis = lnk_ckpt_basis(s.ck);
        so.resume = lnk_ckpt_slq_state(s.ck);
        so.checkpoint = save;
        so.checkpoint_ctx = &s;
    }
    lnk_slq_result r;
    if (lnk_slq(&s.op, &so, &r) != LNK_OK)
        cli_die_lib();
    if (!cli_root()) {
        lnk_slq_result_free(&r);
        cli_ckpt_done(&s);
        cli_curv_close(&s);
        return 0;
    }
    double sigma = sval;
    int st = LNK_OK;
    if (kind == O_SIGV)
        st = lnk_sigma_from_variance(sval, r.node_min, r.node_max, &sigma);
    else if (kind == O_SIGK)
        st = lnk_sigma_from_kappa(sval, so.steps, 0.05, r.node_min, r.node_max, &sigma);
    else if (kind == O_SIGF)
        st = lnk_sigma_from_fraction(sval, r.node_min, r.node_max, &sigma);
    if (st)
        cli_die_lib();
    cli_check_sigma("density", sigma, r.node_min, r.node_max, per, 50000000);
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
        cli_die("density: the density integrates to %.12g, not 1 (grid of %zu points): this is "
                "a bug, please report it", integral, np);
    cli_outputs_begin(); /* density, nodes and sidecar: all or none */
    if (lnk_density_write(out, t, phi, np) != LNK_OK)
        cli_die_lib();
    if (nodes && lnk_slq_write_nodes(&r, nodes) != LNK_OK)
        cli_die_lib();
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
    lnk_meta_int(extra, "runs", so.runs);
    lnk_meta_int(extra, "steps", so.steps);
    lnk_meta_str(extra, "start", so.start == LNK_SLQ_GAUSSIAN ? "gaussian" : "rademacher");
    lnk_meta_str(extra, "mode", so.mode == LNK_LANCZOS_FULL ? "full" : "light");
    lnk_meta_str(extra, "reorth", so.reorth == LNK_REORTH_ALWAYS ? "always" : "partial");
    lnk_meta_real(extra, "sigma", sigma);
    lnk_meta_str(extra, "sigma_option", kind == O_SIG ? "sigma" : kind == O_SIGV ? "sigma-variance"
                                        : kind == O_SIGK ? "sigma-kappa" : "sigma-fraction");
    lnk_meta_real(extra, "sigma_value", sval);
    lnk_meta_int(extra, "grid_points", (long long)np);
    lnk_meta_real(extra, "integral", integral);
    lnk_meta_real(extra, "node_min", r.node_min);
    lnk_meta_real(extra, "node_max", r.node_max);
    lnk_meta_str(extra, "nodes_file", nodes ? nodes : "");
    cli_curv_meta(&s, &co, out, "density", extra);
    lnk_meta_free(extra);
    cli_outputs_commit();
    cli_ckpt_done(&s);
    if (!co.quiet)
        fprintf(stderr, "density: %d runs x %d steps, nodes in [%.6g, %.6g], sigma %.6g, %zu grid "
                "points, integral %.12f -> %s\n", so.runs, so.steps, r.node_min, r.node_max, sigma,
                np, integral, out);
    free(t);
    free(phi);
    lnk_slq_result_free(&r);
    cli_curv_close(&s);
    return 0;
}
