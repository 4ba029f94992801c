/* Process groups (see "process groups" in include/lnkit/comm.h): the job's
 * ranks as an lnk_procs, and the wrapper that carries the LNK_FAULT test
 * hook, so that the Hessian and data-set code only call the group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnkit/comm.h"
#include "lnkit/error.h"

static int w_allgather(void *ctx, const double *mine, double *full, const size_t *count,
                       const size_t *displ)
{
    (void)ctx;
    return lnk_comm_allgather(mine, full, count, displ);
}

static int w_reduce_scatter(void *ctx, const double *partial, double *mine, const size_t *count,
                            const size_t *displ)
{
    (void)ctx;
    return lnk_comm_reduce_scatter(partial, mine, count, displ);
}

static int w_sum(void *ctx, double *x, size_t n)
{
    (void)ctx;
    return lnk_comm_sum(x, n);
}

static int w_sum_long(void *ctx, double *x, size_t n)
{
    (void)ctx;
    return lnk_comm_sum_long(x, n);
}

static int w_agree(void *ctx, int status, const char *point)
{
    (void)ctx, (void)point;
    return lnk_comm_agree(status);
}

static lnk_procs world = {0, 1, NULL, w_allgather, w_reduce_scatter, w_sum, w_sum_long, w_agree};

const lnk_procs *lnk_comm_world(void)
{
    world.rank = lnk_comm_rank();
    world.size = lnk_comm_size();
    return &world;
}

/* ---------------------------------------------------------- LNK_FAULT */

static lnk_procs faulty;
static long hvp_seen; /* H v products this process has reached */

static int f_allgather(void *ctx, const double *mine, double *full, const size_t *count,
                       const size_t *displ)
{
    const lnk_procs *g = ctx;
    return g->allgather(g->ctx, mine, full, count, displ);
}

static int f_reduce_scatter(void *ctx, const double *partial, double *mine, const size_t *count,
                            const size_t *displ)
{
    const lnk_procs *g = ctx;
    return g->reduce_scatter(g->ctx, partial, mine, count, displ);
}

static int f_sum(void *ctx, double *x, size_t n)
{
    const lnk_procs *g = ctx;
    return g->sum(g->ctx, x, n);
}

static int f_sum_long(void *ctx, double *x, size_t n)
{
    const lnk_procs *g = ctx;
    return g->sum_long(g->ctx, x, n);
}

/* The simulated failures of comm.h's fault injection, at the point where the
 * process would report its own status to the others. */
static int f_agree(void *ctx, int status, const char *point)
{
    const lnk_procs *g = ctx;
    if (point && !strcmp(point, "hvp"))
        hvp_seen++;
    if (status == LNK_OK && point && lnk_comm_fault(point)) {
        if (!strcmp(point, "hvp"))
            status = lnk_error(LNK_ENOMEM, "out of memory in H v product %ld (simulated by "
                               "LNK_FAULT)", hvp_seen);
        else
            status = lnk_error(LNK_EIO, "cannot load its shard of the data set (simulated by "
                               "LNK_FAULT)");
    }
    return g->agree(g->ctx, status, point);
}

const lnk_procs *lnk_comm_faulty(const lnk_procs *g)
{
    const char *spec = getenv("LNK_FAULT");
    if (!spec || !*spec)
        return g;
    faulty = (lnk_procs){g->rank,   g->size,  (void *)g, f_allgather, f_reduce_scatter,
                         f_sum,     f_sum_long, f_agree};
    return &faulty;
}
