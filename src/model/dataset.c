/* Data sets of chunks, their scored tokens and the shard of a process group
 * (see "data sets" in include/lnkit/hessian.h). */
#include <stdlib.h>
#include <string.h>
#include "lnkit/error.h"
#include "lnkit/hessian.h"

void lnk_dataset_init(lnk_dataset *ds) { memset(ds, 0, sizeof *ds); }

static int grow(lnk_dataset *ds, int more)
{
    if (ds->procs)
        return lnk_error(LNK_EINVAL, "data set: chunks added after it was sharded");
    int n = ds->n_chunks + more > 0 ? ds->n_chunks + more : 1;
    lnk_batch *c = realloc(ds->chunks, sizeof *c * (size_t)n);
    if (!c)
        return lnk_error(LNK_ENOMEM, "data set: out of memory for %d chunks", ds->n_chunks + more);
    ds->chunks = c;
    return LNK_OK;
}

/* Count a chunk just appended. */
static void count(lnk_dataset *ds, const lnk_model *m)
{
    ds->n_scored += lnk_batch_n_scored(m, &ds->chunks[ds->n_chunks]);
    ds->n_chunks++;
    ds->n_total++;
}

int lnk_dataset_add_rows(lnk_dataset *ds, const lnk_model *m, const lnk_batch *b, int rows)
{
    if (rows < 0)
        return lnk_error(LNK_EINVAL, "data set: %d rows per chunk; expected >= 0", rows);
    int per = rows ? rows : b->B;
    int st = grow(ds, (b->B + per - 1) / per);
    for (int r = 0; r < b->B && !st; r += per) {
        int r1 = r + per < b->B ? r + per : b->B;
        st = lnk_batch_slice(b, r, r1, &ds->chunks[ds->n_chunks]);
        if (!st)
            count(ds, m);
    }
    return st;
}

int lnk_dataset_add_chunks(lnk_dataset *ds, const lnk_model *m, lnk_batch *chunks, int n)
{
    int st = grow(ds, n);
    for (int c = 0; c < n && !st; c++) {
        ds->chunks[ds->n_chunks] = chunks[c];
        chunks[c].owns = 0;
        count(ds, m);
    }
    return st;
}

int lnk_dataset_shard(lnk_dataset *ds, const lnk_model *m, const lnk_procs *g)
{
    if (ds->procs)
        return lnk_error(LNK_EINVAL, "data set: sharded twice");
    int P = g->size, me = g->rank, n = ds->n_chunks;
    int *first = malloc(sizeof(int) * ((size_t)P + 1));
    if (!first)
        return lnk_error(LNK_ENOMEM, "out of memory");
    int st = lnk_shard_chunks(m, ds->chunks, n, P, first);
    if (!st) {
        int own = first[me + 1] - first[me];
        for (int c = 0; c < n; c++)
            if (c < first[me] || c >= first[me + 1])
                lnk_batch_free(&ds->chunks[c]);
        memmove(ds->chunks, ds->chunks + first[me], sizeof *ds->chunks * (size_t)own);
        ds->n_chunks = own;
        ds->first = first[me];
        ds->procs = g;
    }
    free(first);
    return st;
}

void lnk_dataset_free(lnk_dataset *ds)
{
    for (int c = 0; c < ds->n_chunks; c++)
        lnk_batch_free(&ds->chunks[c]);
    free(ds->chunks);
    memset(ds, 0, sizeof *ds);
}
