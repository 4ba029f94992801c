/* lnkit eigs: extremal eigenpairs of the loss Hessian (or a block of it) by Lanczos. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"

static void help(void)
{
    printf("usage: lnkit eigs --config C.json --weights W --batch B [--batch B2 ...] [-k K]\n"
           "                  [--which top|bottom|both] [--tol T] [--max-steps M] -o EIGS.csv\n\n"
           "Extremal eigenvalues of the Hessian of the mean loss over the batches (or of a\n"
           "block of it) by Lanczos (stored basis kept semi-orthogonal by partial\n"
           "reorthogonalisation); residuals ||Hv - lv||\n"
           "computed explicitly.  CSV columns which,index,eigenvalue,residual,converged\n"
           "(index 0 = largest for top, most negative for bottom), plus EIGS.meta.json.\n\n"
           "  -o, --output FILE      CSV to write                               (required)\n"
           "  -k N                   eigenpairs per end                         (5)\n"
           "  --which top|bottom|both                                           (top)\n"
           "  --tol T                stop when every residual bound <= T max|l| (1e-6)\n"
           "  --max-steps M          Lanczos step limit                         (200)\n"
           "  --mode full|light      stored basis, or none with ghost removal\n"
           "                         (memory 4n)                                (full)\n"
           "  --reorth partial|always  full mode: reorthogonalise when the basis\n"
           "                         loses semi-orthogonality, or at every step (partial)\n"
           "  --vectors FILE         also write the eigenvectors (safetensors:\n"
           "                         'values' [k], 'vectors' [k, n_block])      (none)\n"
           "  --mass FILE            also write each eigenvector's mass on every\n"
           "                         tensor of the block (sum of its squared\n"
           "                         entries there; CSV which,index,tensor,n,mass,\n"
           "                         with FILE.meta.json; the masses sum to 1)  (none)\n\n");
    cli_curv_print_help(1);
}

typedef struct {
    int quiet;
    double last;
    cli_curv *s;
} progress_ctx;

static int progress(void *ctx, const lnk_eigs_progress *p)
{
    progress_ctx *pc = ctx;
    if (pc->quiet || !cli_root() || (p->elapsed - pc->last < 1.0 && p->step != p->max_steps))
        return 0;
    pc->last = p->elapsed;
    double eta = p->elapsed / p->step * (p->max_steps - p->step);
    char top[40] = "", bot[40] = "";
    if (p->n_top)
        snprintf(top, sizeof top, "  top %.6g", p->top[0]);
    if (p->n_bottom)
        snprintf(bot, sizeof bot, "  bottom %.6g", p->bottom[0]);
    char rate[160];
    cli_ckpt_rate(pc->s, rate, sizeof rate);
    fprintf(stderr, "eigs: step %d/%d%s%s  converged %d/%d  %.1f s (at most %.0f s left)%s\n",
            p->step, p->max_steps, top, bot, p->n_converged, p->n_top + p->n_bottom, p->elapsed,
            eta, rate);
    return 0;
}

/* --checkpoint: save the state when due (cli_ckpt_due). */
static int save(void *ctx, const lnk_eigs_state *st, int must)
{
    cli_curv *s = ctx;
    if (!cli_ckpt_due(s, must))
        return LNK_OK;
    int rc = lnk_ckpt_save_eigs(s->ck, st, cli_ckpt_products(s));
    if (rc == LNK_OK)
        cli_ckpt_saved(s);
    return rc;
}

enum { O_K = 1, O_WHICH, O_TOL, O_MAXS, O_MODE, O_VEC, O_REORTH, O_MASS };

/* The rule for pairs that did not converge (cli_not_converged): the worst
 * explicit residual of theirs relative to max|l|, and why they may not have
 * (m: the step limit, --max-steps or the operator's size). */
static int not_converged(const lnk_eigs_result *r, const lnk_eigs_opts *eo, int m)
{
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < r->k; i++)
        if (!r->converged[i]) {
            bad++;
            worst = fmax(worst, r->scale > 0 ? r->residual[i] / r->scale : r->residual[i]);
        }
    const char *hint = r->stop == LNK_EIGS_TOL
        ? "their residual bounds met the tolerance, the explicit residuals did not: rounding "
          "in double precision is above it (a larger --tol makes the two agree)"
        : r->steps >= m ? "the step limit was reached (a larger --max-steps may converge them)"
        : NULL;
    return cli_not_converged("eigs", bad, r->k, worst, eo->tol, r->steps, m, hint);
}

int cmd_eigs(int argc, char **argv)
{
    struct option opts[128] = {{"output", required_argument, NULL, 'o'},
                               {"help", no_argument, NULL, 'h'},
                               {"which", required_argument, NULL, O_WHICH},
                               {"tol", required_argument, NULL, O_TOL},
                               {"max-steps", required_argument, NULL, O_MAXS},
                               {"mode", required_argument, NULL, O_MODE},
                               {"vectors", required_argument, NULL, O_VEC},
                               {"mass", required_argument, NULL, O_MASS},
                               {"reorth", required_argument, NULL, O_REORTH}};
    int n = cli_curv_add_options(opts, 9, 1);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_curv_opts co = {0};
    const char *out = NULL, *vec = NULL, *mass = NULL, *which = "top";
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.tol = 1e-6;
    int k = 5, ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:k:", opts, NULL)) != -1) {
        if (cli_curv_option(&co, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case 'k': k = (int)cli_int("k", optarg, 1, 1 << 20); break;
        case O_WHICH:
            if (strcmp(optarg, "top") && strcmp(optarg, "bottom") && strcmp(optarg, "both"))
                cli_die("eigs: --which: expected top, bottom or both, got '%s'", optarg);
            which = optarg;
            break;
        case O_TOL: eo.tol = cli_real("eigs", "tol", optarg, 0); break;
        case O_MAXS: eo.max_steps = (int)cli_int("max-steps", optarg, 1, 1 << 24); break;
        case O_MODE: eo.mode = cli_lanczos_mode("eigs", optarg); break;
        case O_VEC: vec = optarg; break;
        case O_MASS: mass = optarg; break;
        case O_REORTH: eo.reorth = cli_reorth("eigs", optarg); break;
        case 'h': help(); return 0;
        default: cli_bad_option("eigs", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("eigs: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("eigs: -o EIGS.csv is required");
    eo.k_top = strcmp(which, "bottom") ? k : 0;
    eo.k_bottom = strcmp(which, "top") ? k : 0;
    eo.vectors = vec || mass;
    eo.seed = co.rng_seed;
    /* the outputs can be written: checked before the hours of work */
    cli_curv_out outs[3] = {{out, "-o", 1}, {vec, "--vectors", 0}, {mass, "--mass", 1}};
    cli_curv_check_outputs("eigs", &co, outs, 3);
    cli_curv s;
    cli_curv_open(&s, &co);
    if ((size_t)k > s.block_n)
        cli_die("eigs: -k %d is larger than the operator's size %zu", k, s.block_n);
    if (eo.k_top && eo.k_bottom && 2 * (size_t)k > s.block_n)
        cli_die("eigs: -k %d --which both asks for %d eigenpairs, but the %s has %zu: the two "
                "ends would overlap; use -k %zu or less, or --which top|bottom", k, 2 * k,
                co.block ? "block" : "model", s.block_n, s.block_n / 2);
    if (eo.max_steps < eo.k_top + eo.k_bottom && (size_t)eo.max_steps < s.block_n)
        cli_die("eigs: --max-steps %d is smaller than the %d eigenpairs asked for", eo.max_steps,
                eo.k_top + eo.k_bottom);
    /* --checkpoint: what the run belongs to, and the basis in FILE.basis */
    lnk_ckpt_id id = {0};
    cli_check(lnk_ckpt_id_add(&id, "-k", "%d", k) || lnk_ckpt_id_add(&id, "--which", "%s", which) ||
              lnk_ckpt_id_add(&id, "--tol", "%.17g", eo.tol) ||
              lnk_ckpt_id_add(&id, "--max-steps", "%d", eo.max_steps) ||
              lnk_ckpt_id_add(&id, "--mode", "%s", eo.mode == LNK_LANCZOS_FULL ? "full" : "light") ||
              lnk_ckpt_id_add(&id, "--reorth", "%s", eo.reorth == LNK_REORTH_ALWAYS ? "always" :
                              "partial") ? LNK_ENOMEM : LNK_OK);
    int m = (size_t)eo.max_steps < s.block_n ? eo.max_steps : (int)s.block_n;
    int full = eo.mode == LNK_LANCZOS_FULL;
    cli_ckpt_open(&s, &co, &id, LNK_CKPT_EIGS, full ? (size_t)m + 1 : 6, full,
                  m + eo.k_top + eo.k_bottom);
    if (s.ck) {
        eo.basis = lnk_ckpt_basis(s.ck);
        eo.resume = lnk_ckpt_eigs_state(s.ck);
        eo.checkpoint = save;
        eo.checkpoint_ctx = &s;
    }
    progress_ctx pc = {co.quiet, -1e9, &s};
    eo.progress = progress;
    eo.progress_ctx = &pc;
    lnk_eigs_result r;
    if (lnk_eigs(&s.op, &eo, &r) != LNK_OK)
        cli_die_lib();
    for (int i = 0; i < r.k; i++)
        if (!isfinite(r.value[i]) || !isfinite(r.residual[i]))
            cli_die("eigs: eigenpair %d is not finite (value %g, residual %g)", i, r.value[i],
                    r.residual[i]);
    double *Y = r.vectors;
    if ((vec || mass) && lnk_comm_size() > 1) {
        /* the ranks hold slices of the eigenvectors: whole ones for rank 0 */
        int P = lnk_comm_size(), me = lnk_comm_rank();
        size_t *cnt = malloc(sizeof(size_t) * 2 * (size_t)P), *dsp = cnt ? cnt + P : NULL;
        Y = malloc(sizeof(double) * (size_t)(r.k > 0 ? r.k : 1) * s.block_n);
        cli_check(cnt && Y ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for %d vectors of "
                                                "%zu", r.k, s.block_n));
        lnk_comm_split(s.block_n, P, cnt, dsp);
        for (int i = 0; i < r.k; i++)
            cli_check(lnk_comm_allgather(r.vectors + (size_t)i * cnt[me], Y + (size_t)i * s.block_n,
                                         cnt, dsp));
        free(cnt);
    }
    if (!cli_root()) {
        int status = not_converged(&r, &eo, m);
        if (Y != r.vectors)
            free(Y);
        lnk_eigs_result_free(&r);
        cli_ckpt_done(&s);
        cli_curv_close(&s);
        return status;
    }
    /* the CSV, the vectors and the sidecar appear together or not at all */
    cli_outputs_begin();
    int nconv = 0;
    for (int i = 0; i < r.k; i++)
        nconv += r.converged[i];
    if (lnk_eigs_write(out, &r) != LNK_OK)
        cli_die_lib();
    if (vec) {
        lnk_st_tensor t[2] = {{"values", LNK_DT_F64, 1, {r.k}, (size_t)r.k, r.value},
                              {"vectors", LNK_DT_F64, 2, {r.k, (int64_t)s.block_n},
                               (size_t)r.k * s.block_n, Y}};
        const char *meta[] = {"block", co.block ? co.block : "*", NULL};
        if (lnk_st_write(vec, t, 2, meta) != LNK_OK)
            cli_die_lib();
    }
    if (mass && lnk_mass_write(mass, lnk_model_layout(s.m), lnk_hessian_block(s.h), &r, Y,
                               s.block_n) != LNK_OK)
        cli_die_lib();
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
    lnk_meta_int(extra, "k", k);
    lnk_meta_str(extra, "which", which);
    lnk_meta_real(extra, "tol", eo.tol);
    lnk_meta_int(extra, "max_steps", eo.max_steps);
    lnk_meta_str(extra, "mode", eo.mode == LNK_LANCZOS_FULL ? "full" : "light");
    lnk_meta_str(extra, "reorth", eo.reorth == LNK_REORTH_ALWAYS ? "always" : "partial");
    lnk_meta_int(extra, "reorthogonalisations", r.n_reorth);
    lnk_meta_int(extra, "reorth_rows_read", (long long)r.reorth_rows);
    lnk_meta_int(extra, "steps", r.steps);
    lnk_meta_str(extra, "stop", lnk_eigs_stop_name(r.stop));
    lnk_meta_int(extra, "converged", nconv);
    lnk_meta_real(extra, "scale", r.scale);
    cli_curv_meta(&s, &co, out, "eigs", extra);
    if (mass)
        cli_curv_meta(&s, &co, mass, "eigs", extra);
    lnk_meta_free(extra);
    cli_outputs_commit();
    cli_ckpt_done(&s);
    if (!co.quiet)
        fprintf(stderr, "eigs: %d Lanczos steps, stopped by %s, %d/%d converged by their "
                "explicit residual ||Hv - lv|| <= tol max|l| (tol %g), %.2f s -> %s\n", r.steps,
                r.stop == LNK_EIGS_TOL ? "tol (residual bounds)" : lnk_eigs_stop_name(r.stop),
                nconv, r.k, eo.tol, r.elapsed, out);
    int status = not_converged(&r, &eo, m);
    if (Y != r.vectors)
        free(Y);
    lnk_eigs_result_free(&r);
    cli_curv_close(&s);
    return status;
}
