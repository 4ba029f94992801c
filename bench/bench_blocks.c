/* bench_blocks: would products for several vectors at once (a block of
 * Hutchinson / Hutch++ / SLQ probes sharing one pass) be faster?  With the
 * primal pass kept, k products differ only in their tangent passes, whose
 * work is GEMMs with the weights (or weight tangents) on one side: for k
 * vectors each becomes one GEMM k times as tall or as wide
 * ([x_1; ..; x_k] W, or x [W'_1 .. W'_k]; the weight-gradient tangents
 * [x'_1 .. x'_k]^T dy and x^T [dy'_1 .. dy'_k]).  This measures exactly that
 * for the linear maps of the configurations (a) and (b): the time of k
 * separate GEMMs against one k-fold GEMM, for k = 2, 4, 8, weighted by how
 * often each shape occurs in a tangent pass (Wq, Wk, Wv, Wo, W1, W2 per
 * block, times 2 forward and 4 reverse products; the output layer).  The
 * attention's per-head GEMMs and the element-wise work gain nothing from it.
 *
 * usage: bench_blocks [--threads N] [--repeat R] [-o FILE] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/lnkit.h"
#include "bench.h"

typedef struct {
    const char *what;
    int M, K, N;  /* C[M,N] = A[M,K] B[K,N] */
    double count; /* occurrences in one tangent pass of config (b)'s 6 blocks */
    int tall;     /* 1: batch by stacking rows (M -> kM), 0: by columns (N -> kN) */
} shape;

static double gemm_time(int M, int K, int N, int reps, double *A, double *B, double *C)
{
    double t[16];
    for (int r = -1; r < reps; r++) {
        double t0 = lnk_now();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A, K, B, N, 0.0, C,
                    N);
        if (r >= 0)
            t[r] = lnk_now() - t0;
    }
    return median(t, reps);
}

typedef struct {
    int threads, repeat;
    const char *out;
} args_t;

static const cli_opt opts[] = {
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1, .max = 16,
     .help = "timed runs of each GEMM (their median is reported)"},
    BENCH_OPT_OUTPUT(args_t, out, "also write a CSV row per configuration and GEMM"),
    {0}};

static void defaults(void *p) { *(args_t *)p = (args_t){2, 7, NULL}; }

static const cli_cmd cmd = {
    .name = "bench_blocks",
    .usage = "[--threads N] [--repeat N] [-o FILE]",
    .about = "The GEMMs of a product at configurations (a) and (b): the time of one, and the\n"
             "gain of stacking k of them into one GEMM.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_blocks");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out); /* -o -: the CSV alone on standard output */
    int reps = a.repeat;
    lnk_set_blas_threads(a.threads);
    FILE *out = a.out ? cli_fopen(a.out, "w") : NULL;
    if (out)
        fprintf(out, "config,gemm,M,K,N,count,threads,kernel,k1_seconds,k2_gain,k4_gain,"
                     "k8_gain\n");
    const int R = 512;
    for (int cfg = 0; cfg < 2; cfg++) {
        int d = cfg ? 256 : 128, f = 4 * d, V = cfg ? 4000 : 1000, L = 6;
        shape sh[] = {
            {"x W  (d x d)", R, d, d, 4.0 * 2 * L, 1},   /* xdot W, stacked rows */
            {"x W' (d x d)", R, d, d, 4.0 * 2 * L, 0},   /* x Wdot, stacked columns */
            {"x W1 (d x f)", R, d, f, 2.0 * L, 1},
            {"x W2 (f x d)", R, f, d, 2.0 * L, 1},
            {"x W' (d x f)", R, d, f, 2.0 * L, 0},
            {"dW' d x R x d", d, R, d, 8.0 * L, 0},      /* x^T [dy'_1 ..] */
            {"dW' d x R x f", d, R, f, 2.0 * L, 0},
            {"dW' f x R x d", f, R, d, 2.0 * L, 0},
            {"out  (d x V)", R, d, V, 3.0, 1},
            {"out' d x R x V", d, R, V, 1.0, 0},
        };
        int ns = (int)(sizeof sh / sizeof sh[0]);
        report("bench_blocks: config (%c) d=%d d_ff=%d V=%d R=%d, %d BLAS threads, kernel %s\n",
               cfg ? 'b' : 'a', d, f, V, R, lnk_blas_threads(), lnk_blas_kernel());
        report("%-16s %6s %6s %6s  %10s %10s %10s %10s\n", "GEMM", "M", "K", "N", "k=1 s",
               "k=2 gain", "k=4 gain", "k=8 gain");
        double w1 = 0, wk[4] = {0, 0, 0, 0};
        for (int i = 0; i < ns; i++) {
            shape *s = &sh[i];
            size_t big = (size_t)8 * (s->M > s->K ? s->M : s->K) * (s->N > s->K ? s->N : s->K);
            double *A = malloc(sizeof(double) * big), *B = malloc(sizeof(double) * big);
            double *C = malloc(sizeof(double) * big);
            for (size_t q = 0; q < big; q++)
                A[q] = B[q] = (double)(q % 7) - 3.0;
            double t1 = gemm_time(s->M, s->K, s->N, reps, A, B, C);
            double gain[4];
            for (int e = 1; e <= 3; e++) {
                int k = 1 << e;
                double tk = s->tall ? gemm_time(k * s->M, s->K, s->N, reps, A, B, C)
                                    : gemm_time(s->M, s->K, k * s->N, reps, A, B, C);
                gain[e] = k * t1 / tk; /* > 1: the block is faster per vector */
                wk[e] += s->count * tk / k;
            }
            w1 += s->count * t1;
            report("%-16s %6d %6d %6d  %10.5f %9.2fx %9.2fx %9.2fx\n", s->what, s->M, s->K, s->N,
                   t1, gain[1], gain[2], gain[3]);
            if (out)
                fprintf(out, "%c,\"%s\",%d,%d,%d,%g,%d,%s,%.6g,%.4f,%.4f,%.4f\n", cfg ? 'b' : 'a',
                        s->what, s->M, s->K, s->N, s->count, lnk_blas_threads(),
                        lnk_blas_kernel(), t1, gain[1], gain[2], gain[3]);
            free(A), free(B), free(C);
        }
        report("weighted over a tangent pass's linear GEMMs: %.4f s per vector alone; with "
               "blocks of 2, 4, 8: %.4f, %.4f, %.4f s (gain %.2fx, %.2fx, %.2fx)\n\n", w1, wk[1],
               wk[2], wk[3], w1 / wk[1], w1 / wk[2], w1 / wk[3]);
    }
    if (out) {
        cli_fclose(out, a.out);
        bench_meta(&cmd, &a, a.out);
    }
    return 0;
}
