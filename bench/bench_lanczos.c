/* bench_lanczos: one Lanczos step on the model Hessian, split into the H v
 * product and the full reorthogonalisation, for the core's config (b)
 * (lm, d=256, h=4, L=6, d_ff=1024, V=4000, B=16, T=32, Post-LN): the time of
 * steps 1, 10, 20, 40, 80, the total for 80 steps and the basis memory.
 * usage: bench_lanczos [--threads N] [--steps M] [--norm-pos post|pre] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "lnkit/lnkit.h"

static void die(void)
{
    fprintf(stderr, "bench_lanczos: %s\n", lnk_errmsg());
    exit(2);
}

int main(int argc, char **argv)
{
    if (lnk_blas_setup() != LNK_OK) { /* the best OpenBLAS kernel (may re-exec) */
        fprintf(stderr, "bench_lanczos: %s\n", lnk_errmsg());
        return 2;
    }
    int threads = 0, steps = 80;
    const char *pos = "post";
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--steps"))
            steps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--norm-pos"))
            pos = argv[++i];
        else {
            fprintf(stderr, "usage: bench_lanczos [--threads N] [--steps M] [--norm-pos post|pre]\n");
            return 2;
        }
    }
    if (steps < 1 || threads < 0) {
        fprintf(stderr, "bench_lanczos: --steps must be >= 1 and --threads >= 0\n");
        return 2;
    }
    if (threads)
        lnk_set_blas_threads(threads);
    lnk_config c;
    lnk_config_default(&c);
    const char *kv[][2] = {{"d", "256"}, {"h", "4"}, {"L", "6"}, {"d_ff", "1024"}, {"V", "4000"},
                           {"norm_pos", pos}};
    for (int i = 0; i < 6; i++)
        if (lnk_config_set(&c, kv[i][0], kv[i][1]))
            die();
    if (lnk_config_finalize(&c))
        die();
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        die();
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n);
    lnk_batch b;
    if (lnk_model_init_params(m, th) || lnk_batch_synthetic(m, 16, 32, 1, &b))
        die();
    lnk_hessian *h = lnk_hessian_alloc(m, th, &b, 1, NULL);
    if (!h)
        die();
    lnk_operator op = lnk_hessian_operator(h);
    lnk_lanczos *w = lnk_lanczos_alloc(n, steps, LNK_LANCZOS_FULL);
    if (!w || lnk_lanczos_start(w, NULL, 0))
        die();
    printf("bench_lanczos: lm d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 %s-LN, n = %zu, "
           "BLAS threads %d, full reorthogonalisation\n", pos, n, lnk_blas_threads());
    printf("basis memory: %.1f MB for %d steps ((m+1) n doubles); workspace %.1f MB\n",
           lnk_lanczos_bytes(n, steps, LNK_LANCZOS_FULL) / 1e6, steps,
           lnk_hessian_workspace_bytes(h) / 1e6);
    printf("%6s %10s %10s %10s %8s\n", "step", "hvp_s", "reorth_s", "step_s", "reorth%");
    double t0 = lnk_now();
    for (int j = 1; j <= steps && !w->done; j++) {
        if (lnk_lanczos_step(w, &op))
            die();
        if (j == 1 || j == 10 || j == 20 || j == 40 || j == steps || j % 80 == 0)
            printf("%6d %10.4f %10.4f %10.4f %7.1f%%\n", j, w->last_apply, w->last_orth,
                   w->last_apply + w->last_orth,
                   100 * w->last_orth / (w->last_apply + w->last_orth));
    }
    double tot = lnk_now() - t0;
    printf("%d steps: %.2f s in all (H v %.2f s, reorthogonalisation and vector work %.2f s)\n",
           w->steps, tot, w->t_apply, w->t_orth);
    lnk_lanczos_free(w);
    lnk_hessian_free(h);
    lnk_batch_free(&b);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
