/* Benchmark of the operator-independent cost of Lanczos at the size of the
 * core's config (b) model (n = 6.8e6 parameters), on a diagonal operator
 * (y_i = d_i x_i: its apply costs next to nothing, so what is timed is the
 * Lanczos vector work that comes on top of every H v).
 *
 * usage: bench_curvature [--n N] [--steps M] [--threads T] [-o FILE]
 *
 * Prints:
 *  - memory of the basis for M steps (FULL: (M+1) n doubles; LIGHT: 4 n);
 *  - the first 10 FULL steps: apply and vector-work seconds per step;
 *  - the reorthogonalisation kernel (lnk_orthogonalize, two passes of
 *    classical Gram-Schmidt = 4 dgemv over the j x n basis) at j = M/8, M/4,
 *    M/2, M (10, 20, 40, 80): median of 3 seconds and the memory rate it reaches (4 j n 8 bytes
 *    read per call);
 *  - the vector work of one LIGHT step (no reorthogonalisation);
 *  - the FULL vector work of a whole M-step run, sum over j = 1..M of a
 *    straight-line fit t(j) = a + b j through the kernel times (the basis
 *    rows beyond 10 hold copies of real Lanczos vectors: dgemv's time does
 *    not depend on the values).
 * Add M times one H v for the total of an M-step run on the Hessian.
 *
 * Programs print and exit; on any lnk_ failure: "bench_curvature: <message>", exit 2.
 * Memory: (M+1) n 8 bytes (4.4 GB at the defaults) plus 6 n 8 bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include "curvature/internal.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"
#include "lnkit/io.h"
#include "bench.h"

typedef struct {
    size_t n;
    double *d;
} diag_op;

static int diag_apply(void *ctx, const double *x, double *y)
{
    const diag_op *g = ctx;
    for (size_t i = 0; i < g->n; i++)
        y[i] = g->d[i] * x[i];
    return LNK_OK;
}


typedef struct {
    double n;
    int steps, threads;
    const char *out;
} args_t;

static const cli_opt opts[] = {
    {.type = CLI_REAL, .name = "n", .arg = "N", CLI_AT(args_t, n), .min = 100, .max = 1e10,
     .help = "the operator's size (6.8e6: config (b)'s parameters)"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(args_t, steps), .min = 10,
     .max = 100000, .help = "Lanczos steps of the run"},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads"},
    BENCH_OPT_OUTPUT(args_t, out, "also write the times as CSV"),
    {0}};

static void defaults(void *p) { *(args_t *)p = (args_t){6800000, 80, 2, NULL}; }

static const cli_cmd cmd = {
    .name = "bench_curvature",
    .usage = "[--n N] [--steps M] [--threads N] [-o FILE]",
    .about = "The operator-independent cost of Lanczos (its vector work) on a diagonal operator\n"
             "of config (b)'s size: full steps, the reorthogonalisation kernel, light steps.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

/* What every timing row holds first (-o: out, or NULL). */
typedef struct {
    FILE *out;
    size_t n;
    int threads;
} rows_t;

/* FULL: ten real steps on a fresh workspace (after its first touch). */
static void full_steps(lnk_lanczos *w, lnk_operator *op, const rows_t *R)
{
    report("\n  FULL step j   apply (s)   vector work (s)\n");
    for (int j = 1; j <= 10; j++) {
        if (lnk_lanczos_step(w, op) != LNK_OK)
            cli_die_lib();
        report("  %11d   %9.4f   %15.4f\n", j, w->last_apply, w->last_orth);
        if (R->out)
            fprintf(R->out, "%zu,%d,full_step,%d,%.6g,\n", R->n, R->threads, j, w->last_orth);
    }
}

/* 2 x CGS against the first js[k] rows of the basis: the median of 3 into
 * tj[k] (x, h: scratch). */
static void reorth_cgs(const lnk_lanczos *w, const int *js, double *tj, double *x, double *h,
                       const rows_t *R)
{
    size_t n = R->n;
    report("\n  reorthogonalisation at step j (2 x CGS = 4 dgemv over j x n)\n");
    report("  %6s   %10s   %8s\n", "j", "median (s)", "GB/s");
    for (int k = 0; k < 4; k++) {
        double t[3];
        for (int rep = 0; rep < 3; rep++) {
            memcpy(x, w->V + 10 * n, n * sizeof(double));
            double a = lnk_now();
            lnk_orthogonalize(w->V, js[k], n, x, h);
            t[rep] = lnk_now() - a;
        }
        qsort(t, 3, sizeof(double), cmp_double);
        tj[k] = t[1];
        double gbs = 4.0 * js[k] * (double)n * 8 / tj[k] / 1e9;
        report("  %6d   %10.4f   %8.2f\n", js[k], tj[k], gbs);
        if (R->out)
            fprintf(R->out, "%zu,%d,reorth,%d,%.6g,%.4g\n", n, R->threads, js[k], tj[k], gbs);
    }
}

/* The blocked kernel of partial reorthogonalisation against the same rows
 * (lnk_cv_reorth: coefficients, then update + next coefficients block by
 * block; 2 reads of the rows when one pass suffices). */
static void reorth_blocked(const lnk_lanczos *w, int M, const int *js, double *x, const rows_t *R)
{
    size_t n = R->n;
    report("\n  blocked Gram-Schmidt with the DGKS test (lnk_cv_reorth) against j rows\n");
    report("  %6s   %10s   %8s   %10s\n", "j", "median (s)", "GB/s", "rows read");
    double *hh = calloc(2 * ((size_t)M + 2) * 2, sizeof(double));
    for (int k = 0; k < 4; k++) {
        double t[3], rows = 0;
        int run[2] = {0, js[k]};
        for (int rep = 0; rep < 3; rep++) {
            /* a vector with a part outside the rows' span, as a Lanczos residual has */
            for (size_t i = 0; i < n; i++)
                x[i] = w->V[10 * n + i] + 1e-3 * (double)((i * 2654435761u) % 2001 - 1000);
            double nrm = cblas_dnrm2((int)n, x, 1), r0 = 0, a = lnk_now();
            lnk_cv_reorth(NULL, w->V, n, run, 1, x, nrm, hh, hh + M + 2, &r0);
            t[rep] = lnk_now() - a;
            rows = r0;
        }
        qsort(t, 3, sizeof(double), cmp_double);
        double gbs = rows * (double)n * 8 / t[1] / 1e9;
        report("  %6d   %10.4f   %8.2f   %10.0f\n", js[k], t[1], gbs, rows);
        if (R->out)
            fprintf(R->out, "%zu,%d,reorth_blocked,%d,%.6g,%.4g\n", n, R->threads, js[k], t[1],
                    gbs);
    }
    free(hh);
}

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_curvature");
    args_t arg;
    cli_parse(&cmd, &arg, argc, argv);
    cli_run_begin();
    report_to_fit(arg.out); /* -o -: the CSV alone on standard output */
    size_t n = (size_t)arg.n;
    int M = arg.steps, threads = arg.threads;
    lnk_set_blas_threads(threads);
    report("bench_curvature: n = %zu, M = %d steps, %d BLAS threads\n", n, M, lnk_blas_threads());
    report("  basis memory: FULL %.3f GB ((M+1) n doubles), LIGHT %.3f GB (4 n doubles)\n",
           lnk_lanczos_bytes(n, M, LNK_LANCZOS_FULL) / 1e9,
           lnk_lanczos_bytes(n, M, LNK_LANCZOS_LIGHT) / 1e9);

    diag_op g = {n, cli_alloc(n * sizeof(double))};
    for (size_t i = 0; i < n; i++)
        g.d[i] = 1.0 + (double)(i % 1000) / 1000.0 + (i % 9973 == 0 ? 5.0 : 0.0);
    lnk_operator op = {n, &g, diag_apply, NULL};

    FILE *out = arg.out ? cli_fopen(arg.out, "w") : NULL;
    if (out)
        fprintf(out, "n,threads,what,j,seconds,gb_per_s\n");
    rows_t R = {out, n, threads};

    double t0 = lnk_now();
    lnk_lanczos *w = lnk_lanczos_alloc(n, M, LNK_LANCZOS_FULL);
    if (!w)
        cli_die_lib();
    /* First touch of the basis (page faults), once per workspace: done here
     * so that the step times below are those of a reused workspace. */
    memset(w->V, 0, ((size_t)M + 1) * n * sizeof(double));
    if (lnk_lanczos_start(w, NULL, 1) != LNK_OK)
        cli_die_lib();
    report("  allocated, first-touched and started in %.2f s\n", lnk_now() - t0);
    full_steps(w, &op, &R);
    /* Rows 11..M: copies of real vectors (dgemv time does not depend on values). */
    for (int r = 11; r <= M; r++)
        memcpy(w->V + (size_t)r * n, w->V + (size_t)(r % 10) * n, n * sizeof(double));

    double *x = cli_alloc(n * sizeof(double)), *h = cli_alloc(2 * ((size_t)M + 1) * sizeof(double));
    int js[4] = {M / 8, M / 4, M / 2, M}; /* 10, 20, 40, 80 at the default */
    double tj[4];
    reorth_cgs(w, js, tj, x, h, &R);
    reorth_blocked(w, M, js, x, &R);
    /* least-squares line t = a + b j through the 4 points */
    double sj = 0, st = 0, sjj = 0, sjt = 0;
    for (int k = 0; k < 4; k++) {
        sj += js[k];
        st += tj[k];
        sjj += (double)js[k] * js[k];
        sjt += js[k] * tj[k];
    }
    double b = (4 * sjt - sj * st) / (4 * sjj - sj * sj), a = (st - b * sj) / 4;
    double total = 0;
    for (int j = 1; j <= M; j++)
        total += a + b * j;
    lnk_lanczos_free(w);

    /* LIGHT: the three-term recurrence only. */
    lnk_lanczos *wl = lnk_lanczos_alloc(n, M, LNK_LANCZOS_LIGHT);
    if (!wl || lnk_lanczos_start(wl, NULL, 1) != LNK_OK)
        cli_die_lib();
    if (lnk_lanczos_run(wl, &op, 10) != LNK_OK)
        cli_die_lib();
    double light = wl->t_orth / wl->steps;
    lnk_lanczos_free(wl);
    if (out) {
        fprintf(out, "%zu,%d,light_step,0,%.6g,\n", n, threads, light);
        fprintf(out, "%zu,%d,full_run_vector_work,%d,%.6g,\n", n, threads, M, total);
        cli_fclose(out, arg.out);
        bench_meta(&cmd, &arg, arg.out);
    }
    report("\n  LIGHT step vector work: %.4f s\n", light);
    report("  FULL %d-step run, vector work (fit %.4f + %.5f j s): %.1f s;  LIGHT: %.1f s\n", M,
           a, b, total, light * M);
    report("  (add %d H v products for the whole run on the Hessian)\n", M);
    report("  total bench time %.1f s\n", lnk_now() - t0);
    free(x), free(h), free(g.d);
    return 0;
}
