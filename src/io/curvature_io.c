/* The result files of the curvature and geometry routines, one writer each
 * (see include/lnkit/curvature_io.h).  The routines themselves write no
 * files. */
#include <stddef.h>
#include <string.h>

#include "lnkit/curvature_io.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

const char *const lnk_cols_eigs[] = {"which", "index", "eigenvalue", "residual", "converged",
                                     NULL};
const char *const lnk_cols_trace[] = {"method", "probes", "trace", "stderr", NULL};
const char *const lnk_cols_slq_nodes[] = {"run", "index", "node", "weight", NULL};
const char *const lnk_cols_density[] = {"t", "density", NULL};
const char *const lnk_cols_mass[] = {"which", "index", "tensor", "n", "mass", NULL};
const char *const lnk_cols_blockstat[] = {
    "block", "type", "n", "operator", "probes", "frob", "frob_se", "frob2", "frob2_se", "top",
    "top_residual", "top_converged", "bottom", "bottom_residual", "bottom_converged",
    "eig_steps", "node_min", "node_max", "applies", NULL};
const char *const lnk_cols_js[] = {"block_a", "block_b", "js_distance", NULL};
const char *const lnk_cols_select[] = {"index", "selectable", NULL};

enum { MAX_COLS = 64 };

int lnk_csv_names(const lnk_csv_keys *k, const char *const *cols, const char **names, int max)
{
    int n = 0, nk = k ? k->n : 0;
    for (int i = 0; i < nk; i++, n++)
        if (n < max)
            names[n] = k->name[i];
    for (int i = 0; cols[i]; i++, n++)
        if (n < max)
            names[n] = cols[i];
    if (n > max) {
        lnk_error(LNK_EINVAL, "CSV: %d columns, more than %d", n, max);
        return -1;
    }
    return n;
}

int lnk_csv_begin_keys(lnk_csv *c, FILE *f, const lnk_csv_keys *k, const char *const *cols)
{
    const char *names[MAX_COLS];
    int n = lnk_csv_names(k, cols, names, MAX_COLS);
    if (n < 0) {
        memset(c, 0, sizeof *c);
        return LNK_EINVAL;
    }
    return lnk_csv_begin(c, f, names, n);
}

/* The keys' values at the start of a row. */
static int keys(lnk_csv *c, const lnk_csv_keys *k)
{
    int st = LNK_OK;
    for (int i = 0; k && i < k->n && st == LNK_OK; i++)
        st = lnk_csv_str(c, k->value[i]);
    return st;
}

int lnk_eigs_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_eigs_result *r)
{
    int st = LNK_OK;
    for (int i = 0; i < r->k && st == LNK_OK; i++) {
        int top = i < r->n_top;
        st = keys(c, k);
        st = st ? st : lnk_csv_str(c, top ? "top" : "bottom");
        st = st ? st : lnk_csv_int(c, top ? i : i - r->n_top);
        st = st ? st : lnk_csv_double(c, r->value[i]);
        st = st ? st : lnk_csv_double(c, r->residual[i]);
        st = st ? st : lnk_csv_int(c, r->converged[i]);
        st = st ? st : lnk_csv_end_row(c);
    }
    return st;
}

int lnk_trace_rows(lnk_csv *c, const lnk_csv_keys *k, const char *method,
                   const lnk_trace_result *r)
{
    int st = keys(c, k);
    st = st ? st : lnk_csv_str(c, method);
    st = st ? st : lnk_csv_int(c, r->probes);
    st = st ? st : lnk_csv_double(c, r->trace);
    st = st ? st : lnk_csv_double(c, r->std_error);
    return st ? st : lnk_csv_end_row(c);
}

int lnk_slq_nodes_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_slq_result *r)
{
    int st = LNK_OK;
    for (int v = 0; v < r->runs && st == LNK_OK; v++)
        for (int i = r->offset[v]; i < r->offset[v + 1] && st == LNK_OK; i++) {
            st = keys(c, k);
            st = st ? st : lnk_csv_int(c, v);
            st = st ? st : lnk_csv_int(c, i - r->offset[v]);
            st = st ? st : lnk_csv_double(c, r->node[i]);
            st = st ? st : lnk_csv_double(c, r->weight[i]);
            st = st ? st : lnk_csv_end_row(c);
        }
    return st;
}

int lnk_density_rows(lnk_csv *c, const lnk_csv_keys *k, const double *t, const double *phi,
                     size_t npts)
{
    int st = LNK_OK;
    for (size_t p = 0; p < npts && st == LNK_OK; p++) {
        st = keys(c, k);
        st = st ? st : lnk_csv_double(c, t[p]);
        st = st ? st : lnk_csv_double(c, phi[p]);
        st = st ? st : lnk_csv_end_row(c);
    }
    return st;
}

int lnk_mass_rows(lnk_csv *c, const lnk_csv_keys *k, const lnk_layout *lay, const lnk_block *b,
                  const lnk_eigs_result *r, const double *Y, size_t n)
{
    int st = LNK_OK;
    for (int i = 0; i < r->k && st == LNK_OK; i++) {
        int top = i < r->n_top;
        size_t off = 0;
        for (int j = 0; j < b->n_tensors && st == LNK_OK; j++) {
            const lnk_tensor_info *t = &lay->t[b->tensor[j]];
            double s = 0;
            for (size_t q = 0; q < t->size; q++)
                s += Y[(size_t)i * n + off + q] * Y[(size_t)i * n + off + q];
            off += t->size;
            st = keys(c, k);
            st = st ? st : lnk_csv_str(c, top ? "top" : "bottom");
            st = st ? st : lnk_csv_int(c, top ? i : i - r->n_top);
            st = st ? st : lnk_csv_str(c, t->name);
            st = st ? st : lnk_csv_int(c, (long long)t->size);
            st = st ? st : lnk_csv_double(c, s);
            st = st ? st : lnk_csv_end_row(c);
        }
    }
    return st;
}

int lnk_blockstat_rows(lnk_csv *c, const lnk_csv_keys *k, const char *name, const char *type,
                       const char *op, int probes, const lnk_blockstat *s)
{
    int st = keys(c, k);
    st = st ? st : lnk_csv_str(c, name);
    st = st ? st : lnk_csv_str(c, type);
    st = st ? st : lnk_csv_int(c, (long long)s->n);
    st = st ? st : lnk_csv_str(c, op);
    st = st ? st : lnk_csv_int(c, probes);
    const double v[] = {s->frob.frob, s->frob.frob_se, s->frob.frob2, s->frob.frob2_se, s->top,
                        s->top_residual};
    for (int i = 0; i < 6 && !st; i++)
        st = lnk_csv_double(c, v[i]);
    st = st ? st : lnk_csv_int(c, s->top_converged);
    st = st ? st : lnk_csv_double(c, s->bottom);
    st = st ? st : lnk_csv_double(c, s->bottom_residual);
    st = st ? st : lnk_csv_int(c, s->bottom_converged);
    st = st ? st : lnk_csv_int(c, s->eig_steps);
    st = st ? st : lnk_csv_double(c, s->slq.node_min);
    st = st ? st : lnk_csv_double(c, s->slq.node_max);
    st = st ? st : lnk_csv_int(c, s->n_applies);
    return st ? st : lnk_csv_end_row(c);
}

int lnk_js_rows(lnk_csv *c, const lnk_csv_keys *k, const char *const *names, int nb,
                const double *js)
{
    int st = LNK_OK;
    for (int i = 0; i < nb && st == LNK_OK; i++)
        for (int j = i + 1; j < nb && st == LNK_OK; j++) {
            st = keys(c, k);
            st = st ? st : lnk_csv_str(c, names[i]);
            st = st ? st : lnk_csv_str(c, names[j]);
            st = st ? st : lnk_csv_double(c, js[(size_t)i * nb + j]);
            st = st ? st : lnk_csv_end_row(c);
        }
    return st;
}

int lnk_select_rows(lnk_csv *c, const lnk_csv_keys *k, const int *selectable, int n)
{
    int st = LNK_OK;
    for (int i = 0; i < n && st == LNK_OK; i++) {
        st = keys(c, k);
        st = st ? st : lnk_csv_int(c, i);
        st = st ? st : lnk_csv_int(c, selectable[i]);
        st = st ? st : lnk_csv_end_row(c);
    }
    return st;
}

/* ------------------------------------------------------------ whole files */

int lnk_csv_write(const char *path, const lnk_csv_keys *k, const char *const *cols,
                  int (*rows)(lnk_csv *c, const void *ctx), const void *ctx)
{
    lnk_afile a;
    int st = lnk_afile_open(&a, path);
    if (st != LNK_OK)
        return st;
    lnk_csv c;
    if ((st = lnk_csv_begin_keys(&c, a.f, k, cols)) == LNK_OK) {
        st = rows(&c, ctx);
        lnk_csv_free(&c);
    }
    if (st != LNK_OK) {
        lnk_afile_abort(&a);
        return st;
    }
    return lnk_afile_commit(&a);
}

static int eigs_file(lnk_csv *c, const void *r) { return lnk_eigs_rows(c, NULL, r); }

int lnk_eigs_write(const char *path, const lnk_eigs_result *r)
{
    return lnk_csv_write(path, NULL, lnk_cols_eigs, eigs_file, r);
}

static int nodes_file(lnk_csv *c, const void *r) { return lnk_slq_nodes_rows(c, NULL, r); }

int lnk_slq_write_nodes(const lnk_slq_result *r, const char *path)
{
    if (!r || r->runs < 1 || !r->offset || !r->node || !r->weight)
        return lnk_error(LNK_EINVAL, "slq_write_nodes: empty or NULL SLQ result");
    return lnk_csv_write(path, NULL, lnk_cols_slq_nodes, nodes_file, r);
}

typedef struct {
    const double *t, *phi;
    size_t npts;
} density_ctx;

static int density_file(lnk_csv *c, const void *ctx)
{
    const density_ctx *d = ctx;
    return lnk_density_rows(c, NULL, d->t, d->phi, d->npts);
}

int lnk_density_write(const char *path, const double *t, const double *phi, size_t npts)
{
    density_ctx d = {t, phi, npts};
    return lnk_csv_write(path, NULL, lnk_cols_density, density_file, &d);
}

typedef struct {
    const lnk_layout *lay;
    const lnk_block *b;
    const lnk_eigs_result *r;
    const double *Y;
    size_t n;
} mass_ctx;

static int mass_file(lnk_csv *c, const void *ctx)
{
    const mass_ctx *m = ctx;
    return lnk_mass_rows(c, NULL, m->lay, m->b, m->r, m->Y, m->n);
}

int lnk_mass_write(const char *path, const lnk_layout *lay, const lnk_block *b,
                   const lnk_eigs_result *r, const double *Y, size_t n)
{
    mass_ctx m = {lay, b, r, Y, n};
    return lnk_csv_write(path, NULL, lnk_cols_mass, mass_file, &m);
}

typedef struct {
    const int *sel;
    int n;
} select_ctx;

static int select_file(lnk_csv *c, const void *ctx)
{
    const select_ctx *s = ctx;
    return lnk_select_rows(c, NULL, s->sel, s->n);
}

int lnk_select_write(const char *path, const int *selectable, int n)
{
    select_ctx s = {selectable, n};
    return lnk_csv_write(path, NULL, lnk_cols_select, select_file, &s);
}

int lnk_trace_fwrite(FILE *f, const char *method, const lnk_trace_result *r)
{
    lnk_csv c;
    int st = lnk_csv_begin_keys(&c, f, NULL, lnk_cols_trace);
    if (st != LNK_OK)
        return st;
    st = lnk_trace_rows(&c, NULL, method, r);
    lnk_csv_free(&c);
    return st;
}
