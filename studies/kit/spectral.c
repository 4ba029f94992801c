/* The spectral part of the Hessian studies (see spectral.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "spectral.h"

void spec_run(const lnk_model *m, const double *th, const lnk_dataset *ds, const spec_opts *o,
              const spec_block *blk, int nblk, uint64_t seed, spec_point *p)
{
    memset(p, 0, sizeof *p);
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, ds, NULL);
    if (!h)
        cli_die_lib();
    p->ws_bytes = lnk_hessian_workspace_bytes(h);
    lnk_operator op = lnk_hessian_operator(h);
    double t = lnk_now();
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = eo.k_bottom = o->k;
    eo.tol = o->eig_tol;
    eo.max_steps = o->eig_steps;
    eo.seed = seed;
    CLI_CK(lnk_eigs(&op, &eo, &p->er));
    p->sec_eigs = lnk_now() - t;
    t = lnk_now();
    lnk_trace_opts to;
    lnk_trace_opts_default(&to);
    to.probes = o->probes;
    to.seed = seed;
    CLI_CK(lnk_trace(&op, &to, &p->tr));
    p->sec_trace = lnk_now() - t;
    t = lnk_now();
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    so.runs = o->runs;
    so.steps = o->steps;
    so.seed = seed;
    CLI_CK(lnk_slq(&op, &so, &p->slq));
    p->sec_slq = lnk_now() - t;
    p->hvp = lnk_hessian_n_products(h);
    lnk_hessian_free(h);
    t = lnk_now();
    p->btop = calloc((size_t)nblk + 1, sizeof(double));
    p->bres = calloc((size_t)nblk + 1, sizeof(double));
    p->bconv = calloc((size_t)nblk + 1, sizeof(int));
    p->bsteps = calloc((size_t)nblk + 1, sizeof(int));
    p->bn = calloc((size_t)nblk + 1, sizeof(size_t));
    if (!p->btop || !p->bres || !p->bconv || !p->bsteps || !p->bn)
        cli_die("out of memory");
    for (int k = 0; k < nblk; k++) {
        lnk_hessian *hb = lnk_hessian_alloc_dataset(m, th, ds, blk[k].pat);
        if (!hb)
            cli_die_lib();
        lnk_operator bop = lnk_hessian_operator(hb);
        lnk_eigs_opts bo;
        lnk_eigs_opts_default(&bo);
        bo.k_top = 1;
        bo.tol = o->block_tol;
        bo.max_steps = o->block_steps;
        bo.seed = seed;
        lnk_eigs_result br;
        CLI_CK(lnk_eigs(&bop, &bo, &br));
        p->btop[k] = br.value[0];
        p->bres[k] = br.residual[0];
        p->bconv[k] = br.converged[0];
        p->bsteps[k] = br.steps;
        p->bn[k] = bop.n;
        p->hvp += lnk_hessian_n_products(hb);
        lnk_eigs_result_free(&br);
        lnk_hessian_free(hb);
    }
    p->sec_blocks = lnk_now() - t;
}

void spec_point_free(spec_point *p)
{
    lnk_eigs_result_free(&p->er);
    lnk_slq_result_free(&p->slq);
    free(p->btop);
    free(p->bres);
    free(p->bconv);
    free(p->bsteps);
    free(p->bn);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ rows */

/* The key columns of the files: a point is (norm_pos, seed). */
static const char *const KEYS[] = {"norm_pos", "seed"};
static const lnk_csv_keys KEY_NAMES = {2, KEYS, NULL};

void spec_files_open(spec_files *f, const char *dir, int long_blocks, int sweep)
{
    /* the formats of the one writer of each (lnkit/curvature_io.h), after the keys */
    const char *he[16], *ht[16], *hn[16];
    int ne = lnk_csv_names(&KEY_NAMES, lnk_cols_eigs, he, 16),
        nt = lnk_csv_names(&KEY_NAMES, lnk_cols_trace, ht, 16),
        nn = lnk_csv_names(&KEY_NAMES, lnk_cols_slq_nodes, hn, 16);
    static const char *const hb[] = {"norm_pos", "seed", "block", "layer", "kind",
                                     "top_eigenvalue", "residual", "converged"};
    static const char *const hbl[] = {"norm_pos", "seed",      "block", "side",     "layer",
                                      "kind",     "n_params",  "top_eigenvalue", "residual",
                                      "converged", "steps"};
    void (*open)(out_csv *, const char *, const char *, const char *const *, int) =
        sweep ? csv_sweep : csv_open;
    f->long_blocks = long_blocks;
    open(&f->eigs, dir, "eigs.csv", he, ne);
    open(&f->trace, dir, "trace.csv", ht, nt);
    if (long_blocks)
        open(&f->blocks, dir, "blocks.csv", hbl, 11);
    else
        open(&f->blocks, dir, "blocks.csv", hb, 8);
    open(&f->nodes, dir, "slq_nodes.csv", hn, nn);
}

void spec_files_point(spec_files *f, long i)
{
    csv_point(&f->eigs, i);
    csv_point(&f->trace, i);
    csv_point(&f->blocks, i);
    csv_point(&f->nodes, i);
}

void spec_rows(spec_files *f, const char *pn, int seed, const spec_point *p,
               const spec_block *blk, int nblk)
{
    char sd[24];
    snprintf(sd, sizeof sd, "%d", seed);
    const char *kv[] = {pn, sd};
    lnk_csv_keys key = {2, KEYS, kv};
    CLI_CK(lnk_eigs_rows(&f->eigs.c, &key, &p->er));
    CLI_CK(lnk_trace_rows(&f->trace.c, &key, lnk_trace_method_name(LNK_TRACE_HUTCHINSON), &p->tr));
    lnk_csv *c = &f->blocks.c;
    for (int k = 0; k < nblk; k++) {
        CLI_CK(lnk_csv_str(c, pn));
        CLI_CK(lnk_csv_int(c, seed));
        CLI_CK(lnk_csv_str(c, blk[k].pat));
        if (f->long_blocks)
            CLI_CK(lnk_csv_str(c, blk[k].side));
        CLI_CK(lnk_csv_int(c, blk[k].layer));
        CLI_CK(lnk_csv_str(c, blk[k].kind));
        if (f->long_blocks)
            CLI_CK(lnk_csv_int(c, (long long)p->bn[k]));
        CLI_CK(lnk_csv_double(c, p->btop[k]));
        CLI_CK(lnk_csv_double(c, p->bres[k]));
        CLI_CK(lnk_csv_int(c, p->bconv[k]));
        if (f->long_blocks)
            CLI_CK(lnk_csv_int(c, p->bsteps[k]));
        CLI_CK(lnk_csv_end_row(c));
    }
    CLI_CK(lnk_slq_nodes_rows(&f->nodes.c, &key, &p->slq));
}

void spec_files_close(spec_files *f, const lnk_config *c, const lnk_meta *extra,
                      const char *start, double t0)
{
    csv_close(&f->eigs, c, extra, start, t0);
    csv_close(&f->trace, c, extra, start, t0);
    csv_close(&f->blocks, c, extra, start, t0);
    csv_close(&f->nodes, c, extra, start, t0);
}
