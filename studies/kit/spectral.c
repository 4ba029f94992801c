/* The spectral part of the Hessian studies (see spectral.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "spectral.h"
#include "quoted.h"

void spec_run(const lnk_model *m, const double *th, const lnk_dataset *ds, const spec_opts *o,
              const spec_block *blk, int nblk, uint64_t seed, spec_point *p)
{
    memset(p, 0, sizeof *p);
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, ds, NULL);
    if (!h)
        die();
    p->ws_bytes = lnk_hessian_workspace_bytes(h);
    lnk_operator op = lnk_hessian_operator(h);
    double t = lnk_now();
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = eo.k_bottom = o->k;
    eo.tol = o->eig_tol;
    eo.max_steps = o->eig_steps;
    eo.seed = seed;
    CK(lnk_eigs(&op, &eo, &p->er));
    p->sec_eigs = lnk_now() - t;
    t = lnk_now();
    lnk_trace_opts to;
    lnk_trace_opts_default(&to);
    to.probes = o->probes;
    to.seed = seed;
    CK(lnk_trace(&op, &to, &p->tr));
    p->sec_trace = lnk_now() - t;
    t = lnk_now();
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    so.runs = o->runs;
    so.steps = o->steps;
    so.seed = seed;
    CK(lnk_slq(&op, &so, &p->slq));
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
        fail("out of memory");
    for (int k = 0; k < nblk; k++) {
        lnk_hessian *hb = lnk_hessian_alloc_dataset(m, th, ds, blk[k].pat);
        if (!hb)
            die();
        lnk_operator bop = lnk_hessian_operator(hb);
        lnk_eigs_opts bo;
        lnk_eigs_opts_default(&bo);
        bo.k_top = 1;
        bo.tol = o->block_tol;
        bo.max_steps = o->block_steps;
        bo.seed = seed;
        lnk_eigs_result br;
        CK(lnk_eigs(&bop, &bo, &br));
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
    CK(lnk_eigs_rows(&f->eigs.c, &key, &p->er));
    CK(lnk_trace_rows(&f->trace.c, &key, lnk_trace_method_name(LNK_TRACE_HUTCHINSON), &p->tr));
    lnk_csv *c = &f->blocks.c;
    for (int k = 0; k < nblk; k++) {
        CK(lnk_csv_str(c, pn));
        CK(lnk_csv_int(c, seed));
        CK(lnk_csv_str(c, blk[k].pat));
        if (f->long_blocks)
            CK(lnk_csv_str(c, blk[k].side));
        CK(lnk_csv_int(c, blk[k].layer));
        CK(lnk_csv_str(c, blk[k].kind));
        if (f->long_blocks)
            CK(lnk_csv_int(c, (long long)p->bn[k]));
        CK(lnk_csv_double(c, p->btop[k]));
        CK(lnk_csv_double(c, p->bres[k]));
        CK(lnk_csv_int(c, p->bconv[k]));
        if (f->long_blocks)
            CK(lnk_csv_int(c, p->bsteps[k]));
        CK(lnk_csv_end_row(c));
    }
    CK(lnk_slq_nodes_rows(&f->nodes.c, &key, &p->slq));
}

void spec_files_close(spec_files *f, const lnk_config *c, const lnk_meta *extra,
                      const char *start, double t0)
{
    csv_close(&f->eigs, c, extra, start, t0);
    csv_close(&f->trace, c, extra, start, t0);
    csv_close(&f->blocks, c, extra, start, t0);
    csv_close(&f->nodes, c, extra, start, t0);
}

/* ------------------------------------------------------ summaries from files */

void spec_read_slq(const char *dir, lnk_slq_result **out, int **pre_out, int *n_out)
{
    study_table t;
    study_table_read(&t, dir, "slq_nodes.csv");
    int cp = study_table_col(&t, "norm_pos"), cs = study_table_col(&t, "seed");
    int cr = study_table_col(&t, "run"), cn = study_table_col(&t, "node");
    int cw = study_table_col(&t, "weight");
    size_t nr = t.d.nrow;
    lnk_slq_result *r = calloc(nr ? nr : 1, sizeof *r);
    int *pre = calloc(nr ? nr : 1, sizeof *pre), n = 0;
    if (!r || !pre)
        fail("out of memory");
    for (size_t i = 0; i < nr;) {
        /* one result: the rows of one (norm_pos, seed), run after run */
        size_t j = i;
        const char *pn = study_table_str(&t, i, cp), *sd = study_table_str(&t, i, cs);
        while (j < nr && !strcmp(study_table_str(&t, j, cp), pn) &&
               !strcmp(study_table_str(&t, j, cs), sd))
            j++;
        lnk_slq_result *s = &r[n];
        size_t nn = j - i;
        int runs = (int)study_table_num(&t, j - 1, cr) + 1;
        s->runs = runs;
        s->offset = calloc((size_t)runs + 1, sizeof(int));
        s->node = malloc(sizeof(double) * nn);
        s->weight = malloc(sizeof(double) * nn);
        if (!s->offset || !s->node || !s->weight)
            fail("out of memory");
        s->node_min = INFINITY;
        s->node_max = -INFINITY;
        for (size_t k = 0; k < nn; k++) {
            int run = (int)study_table_num(&t, i + k, cr);
            if (run < 0 || run >= runs || (k > 0 && run < (int)study_table_num(&t, i + k - 1, cr)))
                fail("%s: row %zu: run %d out of order", t.d.what, i + k + 2, run);
            s->offset[run + 1] = (int)k + 1;
            s->node[k] = study_table_num(&t, i + k, cn);
            s->weight[k] = study_table_num(&t, i + k, cw);
            s->node_min = fmin(s->node_min, s->node[k]);
            s->node_max = fmax(s->node_max, s->node[k]);
        }
        for (int v = 1; v <= runs; v++) /* a run without nodes: none in this file */
            if (s->offset[v] < s->offset[v - 1])
                s->offset[v] = s->offset[v - 1];
        pre[n++] = !strcmp(pn, "pre");
        i = j;
    }
    study_table_free(&t);
    *out = r;
    *pre_out = pre;
    *n_out = n;
}

double spec_write_density(const char *dir, const lnk_slq_result *r, const int *pre, int n,
                          double kappa, int steps, const lnk_config *c, const lnk_meta *extra,
                          const char *start, double t0, double integ[2])
{
    const lnk_slq_result **all = malloc(sizeof *all * (size_t)(n ? n : 1));
    const lnk_slq_result **side = malloc(sizeof *side * (size_t)(n ? n : 1));
    if (!all || !side)
        fail("out of memory");
    for (int i = 0; i < n; i++)
        all[i] = &r[i];
    double lo, hi, sigma, *t;
    size_t np;
    CK(lnk_slq_pool_grid(all, n, 0, 0, 0, &lo, &hi, &t, &np));
    CK(lnk_sigma_from_kappa(kappa, steps, 0.05, lo, hi, &sigma));
    CK(lnk_slq_pool_grid(all, n, sigma, LNK_SLQ_PAD, 4, NULL, NULL, &t, &np));
    double *acc = malloc(sizeof(double) * np * 2);
    if (!acc)
        fail("out of memory");
    for (int p = 0; p < 2; p++) {
        int ns = 0;
        for (int i = 0; i < n; i++)
            if (pre[i] == p)
                side[ns++] = &r[i];
        CK(lnk_slq_pool_density(side, ns, sigma, t, np, acc + p * np));
        integ[p] = lnk_trapezoid(t, acc + p * np, np);
    }
    /* the density format (lnkit/curvature_io.h) after the key norm_pos */
    const lnk_csv_keys kn = {1, KEYS, NULL};
    const char *hd[8];
    int nd = lnk_csv_names(&kn, lnk_cols_density, hd, 8);
    out_csv fd;
    csv_open(&fd, dir, "density.csv", hd, nd);
    for (int p = 0; p < 2; p++) {
        const char *v[] = {p ? "pre" : "post"};
        const lnk_csv_keys key = {1, KEYS, v};
        CK(lnk_density_rows(&fd.c, &key, t, acc + p * np, np));
    }
    lnk_meta *x = lnk_meta_alloc();
    if (!x)
        die();
    if (extra)
        lnk_meta_add(x, extra);
    lnk_meta_real(x, "sigma", sigma);
    lnk_meta_real(x, "kappa", kappa);
    lnk_meta_real(x, "integral_post", integ[0]);
    lnk_meta_real(x, "integral_pre", integ[1]);
    csv_close(&fd, c, x, start, t0);
    lnk_meta_free(x);
    free(acc);
    free(t);
    free(all);
    free(side);
    return sigma;
}

/* ------------------------------------------------------ Post / Pre comparisons */

spec_cmp spec_compare(const double *post, const int *pc, const double *pre, const int *qc,
                      int S, int stride)
{
    spec_cmp c = {0};
    double *a = study_alloc(sizeof(double) * (size_t)S), *b = study_alloc(sizeof(double) * (size_t)S);
    c.rmin = INFINITY, c.rmax = -INFINITY;
    for (int s = 0; s < S; s++) {
        int okp = !pc || pc[s * stride], okq = !qc || qc[s * stride];
        c.n_post_conv += okp;
        c.n_pre_conv += okq;
        if (!okp || !okq)
            continue;
        a[c.n] = post[s * stride];
        b[c.n] = pre[s * stride];
        double r = a[c.n] / b[c.n];
        c.rmin = fmin(c.rmin, r), c.rmax = fmax(c.rmax, r);
        c.n++;
    }
    if (c.n) {
        lnk_mean_sd(a, 1, (size_t)c.n, &c.post, &c.post_sd);
        lnk_mean_sd(b, 1, (size_t)c.n, &c.pre, &c.pre_sd);
        c.ratio = c.post / c.pre;
    }
    free(a), free(b);
    return c;
}

void spec_cmp_row(lnk_table *t, const char *name, const spec_cmp *c, int S)
{
    int r = lnk_table_new_row(t);
    if (r < 0)
        die();
    CK(lnk_table_set(t, r, 0, "%s", name));
    if (!c->n) {
        for (int k = 1; k < 5; k++)
            CK(lnk_table_set(t, r, k, "-"));
    } else {
        table_set_pm(t, r, 1, c->post, c->post_sd);
        table_set_pm(t, r, 2, c->pre, c->pre_sd);
        CK(lnk_table_set(t, r, 3, "%.2f", c->ratio));
        CK(lnk_table_set(t, r, 4, "%.2f .. %.2f", c->rmin, c->rmax));
    }
    CK(lnk_table_set(t, r, 5, "%d of %d", c->n, S));
}
