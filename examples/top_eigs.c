/* top_eigs: the largest eigenvalues of the loss Hessian of one batch, with
 * lnkit's C API (after `make install`):
 *
 *   cc top_eigs.c $(pkg-config --cflags --libs lnkit) -o top_eigs
 *   ./top_eigs w.json w.safetensors b.safetensors [K]
 *
 * It loads a configuration and the weights, builds the Hessian operator of
 * the batch (docs/MODEL.md §7: exact H v products, no matrix is formed) and
 * runs Lanczos for the K (default 3) largest eigenvalues, printing
 * "index,eigenvalue,residual" (CSV) as `lnkit eigs -k K` computes them. */
#include <stdio.h>
#include <stdlib.h>

#include <lnkit/lnkit.h>

/* Print the library's message for a failed step and exit 2 (lnkit's
 * convention: one line naming the file, key or tensor). */
static void check(int status)
{
    if (status != LNK_OK) {
        fprintf(stderr, "top_eigs: %s\n", lnk_errmsg());
        exit(2);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: top_eigs CONFIG.json WEIGHTS.safetensors BATCH.safetensors [K]\n");
        return 2;
    }
    int k = argc == 5 ? atoi(argv[4]) : 3;

    /* the configuration: defaults, the file, then derived keys and checks */
    lnk_config cfg;
    lnk_config_default(&cfg);
    check(lnk_config_load_json(&cfg, argv[1]));
    check(lnk_config_finalize(&cfg));

    /* the model (its parameter layout) and the weights, a flat vector */
    lnk_model *m = lnk_model_alloc(&cfg);
    if (!m)
        check(LNK_EINVAL);
    size_t n = lnk_model_n_params(m);
    double *theta = malloc(n * sizeof *theta);
    if (!theta)
        check(lnk_error(LNK_ENOMEM, "out of memory for %zu parameters", n));
    check(lnk_weights_load(argv[2], m, theta));

    /* one batch is a data set of one chunk; NULL block = all parameters */
    lnk_batch b;
    check(lnk_batch_load(argv[3], m, &b));
    lnk_hessian *h = lnk_hessian_alloc(m, theta, &b, 1, NULL);
    if (!h)
        check(LNK_EINVAL);
    lnk_operator op = lnk_hessian_operator(h);

    /* Lanczos with the library's defaults (a stored basis kept
     * semi-orthogonal by partial reorthogonalisation, LNK_REORTH_PARTIAL;
     * o.reorth = LNK_REORTH_ALWAYS reorthogonalises at every step), residuals
     * computed explicitly; the same settings as `lnkit eigs -k K --tol 1e-10` */
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = k;
    o.k_bottom = 0;
    o.tol = 1e-10;
    lnk_eigs_result r;
    check(lnk_eigs(&op, &o, &r));

    printf("index,eigenvalue,residual\n");
    for (int i = 0; i < r.n_top; i++)
        printf("%d,%.17g,%.3g\n", i, r.value[i], r.residual[i]);
    fprintf(stderr, "top_eigs: %zu parameters, %d Lanczos steps, %ld H v products\n", n, r.steps,
            lnk_hessian_n_products(h));

    lnk_eigs_result_free(&r);
    lnk_hessian_free(h);
    lnk_batch_free(&b);
    free(theta);
    lnk_model_free(m);
    lnk_config_clear(&cfg);
    return 0;
}
