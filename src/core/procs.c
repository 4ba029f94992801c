/* Process groups (see "process groups" in include/lnkit/comm.h): the job's
 * ranks as an lnk_procs, so that the Hessian and data-set code only call the
 * group (a program may wrap it: src/front/fault.c). */
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
