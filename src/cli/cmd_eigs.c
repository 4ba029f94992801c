/* lnkit eigs: extremal eigenpairs of the loss Hessian (or a block of it) by Lanczos. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"
#include "front/record.h"

typedef struct {
    cli_curv_opts co;
    lnk_eigs_opts eo;
    int k, which, json;
    const char *out, *vec, *mass;
} eigs_args;

enum { TOP = 1, BOTTOM = 2, BOTH = 3 };
static const cli_choice ends[] = {{"top", TOP}, {"bottom", BOTTOM}, {"both", BOTH}, {NULL, 0}};

#define T eigs_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, 0, "the CSV which,index,eigenvalue,residual,converged "
                   "(+ FILE.meta.json)", NULL),
    CLI_OPT_JSON(T, json),
    {.type = CLI_INT, .key = 'k', .name = "k", .arg = "N", CLI_AT(T, k), .min = 1, .max = 1 << 20,
     .flags = CLI_ID | CLI_META, .help = "eigenpairs per end"},
    {.type = CLI_CHOICE, .name = "which", CLI_AT(T, which), .ref = ends, .flags = CLI_ID | CLI_META,
     .help = "which end of the spectrum (index 0: the largest for top, the most negative for "
             "bottom)"},
    CLI_OPT_TOL(T, eo.tol, CLI_ID | CLI_META, "stop when every residual bound is at most T max|l|"),
    {.type = CLI_INT, .name = "max-steps", .arg = "M", CLI_AT(T, eo.max_steps), .min = 1,
     .max = 1 << 24, .flags = CLI_ID | CLI_META, .help = "Lanczos step limit"},
    CLI_LANCZOS(T, eo.mode, eo.reorth),
    {.type = CLI_STR, .name = "vectors", .arg = "FILE", CLI_AT(T, vec),
     .flags = CLI_WRITES | CLI_STDOUT | CLI_BINARY,
     .help = "also write the eigenvectors: safetensors 'values' [k], 'vectors' [k, n_block]; "
             "-: standard output"},
    {.type = CLI_STR, .name = "mass", .arg = "FILE", CLI_AT(T, mass),
     .flags = CLI_WRITES | CLI_STDOUT,
     .help = "also write each eigenvector's mass on every tensor of the block (the sum of its "
             "squared entries there; they sum to 1): CSV which,index,tensor,n,mass "
             "(+ FILE.meta.json); -: standard output"},
    CLI_CURV(T, co, cli_curv_eigs), CLI_CKPT(T, co.ck), CLI_MODEL(T, co.mo),
    {0}};
#undef T

static void defaults(void *p)
{
    eigs_args *a = p;
    cli_curv_defaults(&a->co);
    lnk_eigs_opts_default(&a->eo);
    a->k = a->eo.k_top;
    a->which = TOP;
    a->out = "-";
}

const cli_cmd cmd_eigs_decl = {
    .name = "lnkit eigs",
    .summary = "extremal eigenvalues of the Hessian (or G, F), with residuals (Lanczos)",
    .usage = "--config C.json --weights W --batch B [--batch B2 ...] [-k K]\n"
             "[--which top|bottom|both] [--tol T] [--max-steps M] [-o EIGS.csv] [--json]",
    .about = "Extremal eigenvalues of the Hessian of the mean loss over the batches (or of a\n"
             "block of it, or of its Gauss-Newton or functional part) by Lanczos with a stored\n"
             "basis kept semi-orthogonal; the residuals ||A v - l v|| computed explicitly.\n"
             "Exit status 3 when requested pairs did not converge (results written).",
    .opts = opts,
    .size = sizeof(eigs_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH -k 2 --max-steps 30 -o OUT",
};

/* The record --vectors embeds (front/record.h). */
static char *eigs_record(const cli_curv *s, int which)
{
    char what[200];
    snprintf(what, sizeof what, "'values': eigenvalues of the %s at the %s end%s; 'vectors': "
             "their unit eigenvectors, one a row", lnk_op_kind_name((lnk_op_kind)s->o->op_kind),
             which == BOTH ? "top and bottom" : which == TOP ? "top" : "bottom",
             which == BOTH ? "s" : "");
    lnk_ckpt_id id = {0};
    CLI_CK(cli_curv_id(s, &id));
    char *rec = cli_record("lnkit eigs", what, &id);
    lnk_ckpt_id_free(&id);
    return rec;
}

/* The rule for pairs that did not converge (cli_not_converged): the worst
 * explicit residual of theirs relative to max|l|, and why they may not have
 * (m: the step limit, --max-steps or the operator's size; an invariant
 * subspace, where more steps cannot help; G's bottom end: its cluster at 0). */
static int not_converged(const lnk_eigs_result *r, const lnk_eigs_opts *eo, int m, int op)
{
    int bad = 0, bad_top = 0;
    double worst = 0;
    for (int i = 0; i < r->k; i++)
        if (!r->converged[i]) {
            bad++;
            bad_top += i < r->n_top;
            worst = fmax(worst, r->scale > 0 ? r->residual[i] / r->scale : r->residual[i]);
        }
    /* m below --max-steps: m is the operator's size, the most steps there are */
    int all_dims = r->steps >= m && m < eo->max_steps;
    char why[512];
    if (r->stop == LNK_EIGS_INVARIANT)
        snprintf(why, sizeof why, "the run stopped at an invariant subspace (%s), so more steps "
                 "cannot help: its Ritz values are exact but for rounding, and the rounding of "
                 "the products is above the tolerance relative to max|l| = %.3g (an operator "
                 "that is 0, or nearly, in these directions gives this; a larger --tol accepts "
                 "them)", all_dims ? "its Krylov space is every direction of the operator"
                 : "its Krylov space stopped growing", r->scale);
    else if (all_dims && eo->mode == LNK_LANCZOS_LIGHT)
        snprintf(why, sizeof why, "the run took as many steps as the operator has dimensions "
                 "(%d), so more steps cannot help; light mode keeps no basis, so orthogonality "
                 "may be lost by then (--mode full may converge them)", m);
    const char *psd = "G's bottom eigenvalues are a cluster at 0 (G is positive semidefinite) "
        "that Lanczos resolves slowly; each bottom value v bounds G's corresponding smallest "
        "eigenvalue to [0, v]";
    const char *limit = "the step limit was reached (a larger --max-steps may converge them)";
    const char *hint = r->stop == LNK_EIGS_TOL
        ? "their residual bounds met the tolerance, the explicit residuals did not: rounding "
          "in double precision is above it (a larger --tol makes the two agree)"
        : r->stop == LNK_EIGS_INVARIANT || (all_dims && eo->mode == LNK_LANCZOS_LIGHT) ? why
        : op == LNK_OP_GGN && bad > bad_top ? psd
        : r->steps >= m ? limit : NULL;
    /* both ends of G unconverged: each end its own reason */
    if (hint == psd && bad_top && r->steps >= m) {
        snprintf(why, sizeof why, "the top pairs: %s; the bottom pairs: %s", limit, psd);
        hint = why;
    }
    return cli_not_converged(bad, r->k, worst, eo->tol, r->steps, m, hint);
}

int cmd_eigs(int argc, char **argv)
{
    eigs_args a;
    cli_parse(&cmd_eigs_decl, &a, argc, argv);
    cli_curv_opts *co = &a.co;
    lnk_eigs_opts eo = a.eo;
    const char *out = a.out, *vec = a.vec, *mass = a.mass;
    int k = a.k;
    eo.k_top = a.which & TOP ? k : 0;
    eo.k_bottom = a.which & BOTTOM ? k : 0;
    eo.vectors = vec || mass;
    eo.seed = co->rng_seed;
    /* the outputs can be written: checked before the hours of work */
    cli_curv_out outs[3] = {{out, "-o", 1}, {vec, "--vectors", 0}, {mass, "--mass", 1}};
    cli_curv s;
    cli_curv_open(&s, co, "eigs", opts, &a, outs, 3);
    if ((size_t)k > s.block_n)
        cli_die("-k %d is larger than the operator's size %zu", k, s.block_n);
    if (eo.k_top && eo.k_bottom && 2 * (size_t)k > s.block_n)
        cli_die("-k %d --which both asks for %d eigenpairs, but the %s has %zu: the two ends "
                "would overlap; use -k %zu or less, or --which top|bottom", k, 2 * k,
                co->block ? "block" : "model", s.block_n, s.block_n / 2);
    if (eo.max_steps < eo.k_top + eo.k_bottom && (size_t)eo.max_steps < s.block_n)
        cli_die("--max-steps %d is smaller than the %d eigenpairs asked for", eo.max_steps,
                eo.k_top + eo.k_bottom);
    cli_curv_say(&s);
    /* --checkpoint: the basis in FILE.basis */
    int m = (size_t)eo.max_steps < s.block_n ? eo.max_steps : (int)s.block_n;
    int full = eo.mode == LNK_LANCZOS_FULL;
    cli_curv_ckpt(&s, LNK_CKPT_EIGS, full ? (size_t)m + 1 : 6, full,
                  m + eo.k_top + eo.k_bottom);
    if (s.run.ck) {
        eo.basis = lnk_ckpt_basis(s.run.ck);
        eo.resume = lnk_ckpt_eigs_state(s.run.ck);
        eo.checkpoint = cli_ckpt_save_eigs;
        eo.checkpoint_ctx = &s.run;
    }
    if (co->op_kind == LNK_OP_GGN && eo.k_bottom)
        cli_say_ggn_bottom(a.which == BOTH ? "--which both" : "--which bottom", 0, eo.max_steps,
                           "--max-steps");
    cli_eigs_progress pc = {NULL, 1.0, -1e9, &s.run};
    eo.progress = cli_eigs_progress_fn;
    eo.progress_ctx = &pc;
    lnk_eigs_result r;
    if (lnk_eigs(&s.op, &eo, &r) != LNK_OK)
        cli_die_lib();
    for (int i = 0; i < r.k; i++)
        if (!isfinite(r.value[i]) || !isfinite(r.residual[i]))
            cli_die("eigenpair %d is not finite (value %g, residual %g)", i, r.value[i],
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
        int status = not_converged(&r, &eo, m, co->op_kind);
        if (Y != r.vectors)
            free(Y);
        lnk_eigs_result_free(&r);
        cli_curv_done(&s);
        return status;
    }
    /* the CSV, the vectors and the sidecar appear together or not at all */
    cli_outputs_begin();
    int nconv = 0;
    for (int i = 0; i < r.k; i++)
        nconv += r.converged[i];
    if (lnk_eigs_write(cli_result_path(out, a.json), &r) != LNK_OK)
        cli_die_lib();
    if (vec) {
        lnk_st_tensor t[2] = {{"values", LNK_DT_F64, 1, {r.k}, (size_t)r.k, r.value},
                              {"vectors", LNK_DT_F64, 2, {r.k, (int64_t)s.block_n},
                               (size_t)r.k * s.block_n, Y}};
        char *rec = eigs_record(&s, a.which);
        const char *meta[] = {"block", co->block ? co->block : "*", CLI_RECORD_KEY, rec, NULL};
        if (lnk_st_write(cli_out(vec, 1), t, 2, meta) != LNK_OK)
            cli_die_lib();
        free(rec);
    }
    if (mass && lnk_mass_write(cli_out(mass, 0), lnk_model_layout(s.m), lnk_hessian_block(s.h), &r, Y,
                               s.block_n) != LNK_OK)
        cli_die_lib();
    json_t *res = json_pack("{s:i, s:f, s:i, s:s, s:i, s:f}", "reorthogonalisations", r.n_reorth,
                            "reorth_rows_read", r.reorth_rows, "steps", r.steps,
                            "stop", lnk_eigs_stop_name(r.stop), "converged", nconv,
                            "scale", r.scale);
    cli_curv_meta(&s, out, json_incref(res));
    cli_curv_meta(&s, mass, res);
    cli_outputs_commit();
    cli_result_json();
    cli_ckpt_done(&s.run);
    cli_say("%d Lanczos steps, stopped by %s, %d/%d converged by their explicit residual "
            "||%sv - lv|| <= tol max|l| (--tol %g), %.2f s -> %s\n", r.steps,
            r.stop == LNK_EIGS_TOL ? "--tol (residual bounds)" : r.stop == LNK_EIGS_MAXSTEPS
            ? "--max-steps" : lnk_eigs_stop_name(r.stop), nconv, r.k, cli_op_letter(co->op_kind),
            eo.tol, r.elapsed, cli_dest(out));
    int status = not_converged(&r, &eo, m, co->op_kind);
    if (Y != r.vectors)
        free(Y);
    lnk_eigs_result_free(&r);
    cli_curv_close(&s);
    return status;
}
