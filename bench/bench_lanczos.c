/* bench_lanczos: Lanczos steps on the model Hessian of the core's config (b)
 * (lm, d=256, h=4, L=6, d_ff=1024, V=4000, B=16, T=32, Post-LN) against the
 * product alone.
 *
 * First the product alone: the median of --repeat H v through the Hessian
 * operator (primal pass kept, as Lanczos uses it).  Then --steps Lanczos
 * steps (FULL mode; --reorth partial, the default, or always): the time of
 * steps 1, 10, 20, 40, 80 split into H v and vector work, and the mean over
 * the last 20 steps (where the basis is largest) as a ratio to the product
 * alone, the target being <= 1.15; reorthogonalisations and basis rows read.
 *
 * --prefault: when new basis rows are faulted in (lnk_lanczos.prefault):
 * ahead (default: a helper thread, row j+2 during step j's product), step
 * (row j+1 before the product, on the caller) or none (the product's first
 * write): to tell how much of the product's slowdown inside the loop the
 * helper causes.
 *
 * --pretouch: write the whole basis before the first step (its time
 * reported apart, not in the steps): the steps then run on memory the guest
 * already holds, which tells the host's first-touch cost of each new row (a
 * VM's, see bench/PROFILE.md) from the rest of the step.
 *
 * usage: bench_lanczos [--threads N] [--steps M] [--norm-pos post|pre]
 *                      [--reorth partial|always] [--prefault ahead|step|none]
 *                      [--repeat R] [--pretouch] [-o FILE] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "lnkit/lnkit.h"
#include "bench.h"
#include "front/curv_opts.h"

/* Median seconds of `repeat` products y = A x. */
static double product_alone(const lnk_operator *op, const double *x, double *y, int repeat)
{
    double *t = malloc(sizeof(double) * (size_t)repeat);
    if (!t)
        cli_die_lib();
    for (int r = 0; r < repeat; r++) {
        double t0 = lnk_now();
        if (op->apply(op->ctx, x, y))
            cli_die_lib();
        t[r] = lnk_now() - t0;
    }
    double med = median(t, repeat);
    free(t);
    return med;
}

typedef struct {
    int threads, steps, repeat, reorth, prefault, pretouch, norm_pos;
    const char *out;
} args_t;

static const cli_choice prefaults[] = {{"ahead", LNK_PREFAULT_AHEAD}, {"step", LNK_PREFAULT_STEP},
                                       {"none", LNK_PREFAULT_NONE}, {NULL, 0}};
static const cli_choice positions[] = {{"post", 0}, {"pre", 1}, {NULL, 0}};

static const cli_opt opts[] = {
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(args_t, steps), .min = 21,
     .max = 100000, .help = "Lanczos steps"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1,
     .max = 1000, .help = "products timed alone (their median is the reference)"},
    {.type = CLI_CHOICE, .name = "norm-pos", CLI_AT(args_t, norm_pos), .ref = positions,
     .help = "Post-LN or Pre-LN blocks"},
    CLI_OPT_REORTH(args_t, reorth, 0),
    {.type = CLI_CHOICE, .name = "prefault", CLI_AT(args_t, prefault), .ref = prefaults,
     .help = "when new basis rows are faulted in: a helper thread ahead, before each product, "
             "or by the product's first write"},
    {.type = CLI_FLAG, .name = "pretouch", CLI_AT(args_t, pretouch),
     .help = "write the whole basis before the first step (timed apart)"},
    BENCH_OPT_OUTPUT(args_t, out, "also write the results as one CSV row"),
    {0}};

static void defaults(void *p)
{
    *(args_t *)p = (args_t){.steps = 80, .repeat = 5, .reorth = LNK_REORTH_PARTIAL,
                            .prefault = LNK_PREFAULT_AHEAD};
}

static const cli_cmd cmd = {
    .name = "bench_lanczos",
    .usage = "[--threads N] [--steps M] [--norm-pos post|pre] [--reorth partial|always]\n"
             "[--prefault ahead|step|none] [--repeat N] [--pretouch] [-o FILE]",
    .about = "Lanczos steps on the Hessian of config (b) against the product alone: the steps'\n"
             "time split into H v and vector work, and the mean of the last 20 steps over the\n"
             "product alone (target <= 1.15).",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_lanczos");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out); /* -o -: the CSV alone on standard output */
    int steps = a.steps, repeat = a.repeat, reorth = a.reorth, prefault = a.prefault;
    int pretouch = a.pretouch;
    const char *pf_name[] = {"ahead", "step", "none"}, *pos = a.norm_pos ? "pre" : "post";
    if (a.threads)
        lnk_set_blas_threads(a.threads);
    lnk_config c;
    lnk_config_default(&c);
    const char *kv[][2] = {{"d", "256"}, {"h", "4"}, {"L", "6"}, {"d_ff", "1024"}, {"V", "4000"},
                           {"norm_pos", pos}};
    for (int i = 0; i < 6; i++)
        if (lnk_config_set(&c, kv[i][0], kv[i][1]))
            cli_die_lib();
    if (lnk_config_finalize(&c))
        cli_die_lib();
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *x = malloc(sizeof(double) * n);
    double *y = malloc(sizeof(double) * n);
    lnk_batch b;
    if (!th || !x || !y || lnk_model_init_params(m, th) || lnk_batch_synthetic(m, 16, 32, 1, &b))
        cli_die_lib();
    lnk_hessian *h = lnk_hessian_alloc(m, th, &b, 1, NULL);
    if (!h)
        cli_die_lib();
    lnk_operator op = lnk_hessian_operator(h);
    report("bench_lanczos: lm d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 %s-LN, n = %zu, BLAS "
           "threads %d, kernel %s, %s reorthogonalisation, prefault %s\n", pos, n,
           lnk_blas_threads(), lnk_blas_kernel(),
           reorth == LNK_REORTH_PARTIAL ? "partial" : "full (always)", pf_name[prefault]);
    /* the product alone (the first one also runs the primal pass) */
    for (size_t i = 0; i < n; i++)
        x[i] = (double)((i * 2654435761u) % 2001) / 1000.0 - 1.0;
    if (op.apply(op.ctx, x, y))
        cli_die_lib();
    double alone = product_alone(&op, x, y, repeat);
    lnk_lanczos *w = lnk_lanczos_alloc(n, steps, LNK_LANCZOS_FULL);
    if (!w)
        cli_die_lib();
    w->reorth = reorth;
    w->prefault = prefault;
    double t_pre = lnk_now();
    if (pretouch)
        memset(w->V, 0, sizeof(double) * (size_t)(steps + 1) * n); /* rows 0..m */
    t_pre = lnk_now() - t_pre;
    if (lnk_lanczos_start(w, NULL, 0))
        cli_die_lib();
    report("H v alone (primal pass kept): median %.4f s of %d\n", alone, repeat);
    if (pretouch)
        report("basis written before the run (--pretouch): %.2f s, not in the steps\n", t_pre);
    report("basis memory: %.1f MB for %d steps ((m+1) n doubles); Hessian workspace %.1f MB\n",
           lnk_lanczos_bytes(n, steps, LNK_LANCZOS_FULL) / 1e6, steps,
           lnk_hessian_workspace_bytes(h) / 1e6);
    report("%6s %10s %10s %10s %8s\n", "step", "hvp_s", "vector_s", "step_s", "vector%");
    double t0 = lnk_now(), tail_apply = 0, tail_orth = 0, tail_touch = 0;
    int tail0 = steps - 20;
    for (int j = 1; j <= steps && !w->done; j++) {
        if (lnk_lanczos_step(w, &op))
            cli_die_lib();
        if (j > tail0)
            tail_apply += w->last_apply, tail_orth += w->last_orth, tail_touch += w->last_touch;
        if (j == 1 || j == 10 || j == 20 || j == 40 || j == steps || j % 80 == 0)
            report("%6d %10.4f %10.4f %10.4f %7.1f%%\n", j, w->last_apply, w->last_orth,
                   w->last_apply + w->last_orth,
                   100 * w->last_orth / (w->last_apply + w->last_orth));
    }
    double tot = lnk_now() - t0;
    /* the product alone again, after the run: the machine may have changed */
    double after = product_alone(&op, x, y, repeat);
    alone = 0.5 * (alone + after);
    double step_tail = (tail_apply + tail_orth) / 20, apply_tail = tail_apply / 20;
    report("%d steps: %.2f s in all (H v %.2f s, vector work %.2f s); %d reorthogonalisations, "
           "%.0f basis rows read (full reorthogonalisation: %.0f)\n", w->steps, tot, w->t_apply,
           w->t_orth, w->n_reorth, w->reorth_rows, 4.0 * w->steps * (w->steps + 1) / 2);
    report("H v alone after the run: median %.4f s; the mean of before and after is the "
           "reference below\n", after);
    report("steps %d..%d: mean step %.4f s = %.3f x the product alone (target <= 1.15); H v "
           "inside the loop %.4f s (%.3f x alone), vector work %.4f s a step, of which %.4f s "
           "faulting in new basis rows outside the product (a helper thread does it during "
           "the product; this is what it left)\n", tail0 + 1, steps, step_tail,
           step_tail / alone, apply_tail, apply_tail / alone, tail_orth / 20, tail_touch / 20);
    if (a.out) {
        FILE *f = cli_fopen(a.out, "w");
        fprintf(f, "reorth,threads,kernel,steps,hv_alone_s,tail_step_s,tail_hv_s,tail_vector_s,"
                   "tail_first_touch_s,step_over_hv,n_reorth,reorth_rows,total_s,prefault,pretouch,"
                   "pretouch_s\n");
        fprintf(f, "%s,%d,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.4f,%d,%.0f,%.3f,%s,%d,%.3f\n",
                reorth == LNK_REORTH_PARTIAL ? "partial" : "always", lnk_blas_threads(),
                lnk_blas_kernel(), w->steps, alone, step_tail, apply_tail, tail_orth / 20,
                tail_touch / 20, step_tail / alone, w->n_reorth, w->reorth_rows, tot,
                pf_name[prefault], pretouch, pretouch ? t_pre : 0.0);
        cli_fclose(f, a.out);
        bench_meta(&cmd, &a, a.out);
    }
    lnk_lanczos_free(w);
    lnk_hessian_free(h);
    lnk_batch_free(&b);
    free(th), free(x), free(y);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
