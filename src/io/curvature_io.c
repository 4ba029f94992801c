/* CSV files of curvature results: the nodes and weights of an SLQ run and a
 * density on a grid (see include/lnkit/curvature_io.h).  The curvature
 * routines themselves write no files. */
#include <stddef.h>

#include "lnkit/curvature_io.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

/* path written whole or not at all: the header, then rows(c, ctx). */
static int write_csv(const char *path, const char *const *hdr, int ncol,
                     int (*rows)(lnk_csv *c, const void *ctx), const void *ctx)
{
    lnk_afile a;
    int rc = lnk_afile_open(&a, path);
    if (rc != LNK_OK)
        return rc;
    lnk_csv c;
    if ((rc = lnk_csv_begin(&c, a.f, hdr, ncol)) == LNK_OK) {
        rc = rows(&c, ctx);
        lnk_csv_free(&c);
    }
    if (rc != LNK_OK) {
        lnk_afile_abort(&a);
        return rc;
    }
    return lnk_afile_commit(&a);
}

static int node_rows(lnk_csv *c, const void *ctx)
{
    const lnk_slq_result *r = ctx;
    int rc = LNK_OK;
    for (int v = 0; v < r->runs && rc == LNK_OK; v++)
        for (int i = r->offset[v]; i < r->offset[v + 1] && rc == LNK_OK; i++)
            if ((rc = lnk_csv_int(c, v)) == LNK_OK &&
                (rc = lnk_csv_int(c, i - r->offset[v])) == LNK_OK &&
                (rc = lnk_csv_double(c, r->node[i])) == LNK_OK &&
                (rc = lnk_csv_double(c, r->weight[i])) == LNK_OK)
                rc = lnk_csv_end_row(c);
    return rc;
}

int lnk_slq_write_nodes(const lnk_slq_result *r, const char *path)
{
    if (!r || r->runs < 1 || !r->offset || !r->node || !r->weight)
        return lnk_error(LNK_EINVAL, "slq_write_nodes: empty or NULL SLQ result");
    static const char *const hdr[] = {"run", "index", "node", "weight"};
    return write_csv(path, hdr, 4, node_rows, r);
}

typedef struct {
    const double *t, *phi;
    size_t npts;
} density_rows_ctx;

static int density_rows(lnk_csv *c, const void *ctx)
{
    const density_rows_ctx *d = ctx;
    int rc = LNK_OK;
    for (size_t p = 0; p < d->npts && rc == LNK_OK; p++)
        if ((rc = lnk_csv_double(c, d->t[p])) == LNK_OK &&
            (rc = lnk_csv_double(c, d->phi[p])) == LNK_OK)
            rc = lnk_csv_end_row(c);
    return rc;
}

int lnk_density_write(const char *path, const double *t, const double *phi, size_t npts)
{
    static const char *const hdr[] = {"t", "density"};
    density_rows_ctx d = {t, phi, npts};
    return write_csv(path, hdr, 2, density_rows, &d);
}
