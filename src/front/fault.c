/* A rank's failure in an MPI job, simulated for the tests by the programs
 * (the library has no such hook): test builds only (LNK_TESTING).
 *
 * LNK_FAULT="RANK:POINT:KIND[:N]" makes rank RANK fail the N-th time
 * (default 1) it reaches the named point: "load" (taking its shard of the
 * data set), "hvp" (an H v product of the distributed Hessian), both seen
 * through the group cli_procs() wraps, or "sweep" (a study rank handing over
 * its points, cli_fault).  KIND is "error" (a simulated out of memory or
 * unreadable shard, reported as an error), "exit" (_exit(3) without
 * MPI_Finalize, as a crashed process), "kill" (SIGKILL, as the kernel's
 * OOM killer) or "stop" (SIGSTOP: the rank stays where it is, holding what it
 * holds, until a test sends SIGCONT or kills it).  In other builds cli_procs() is the job's group and
 * cli_fault() never fires. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front/front.h"

#ifndef LNK_TESTING

const lnk_procs *cli_procs(void) { return lnk_comm_world(); }
int cli_fault(const char *point) { return (void)point, 0; }

#else

static struct {
    int on, rank, nth;
    char point[32], kind[16];
    int hits;
} spec;

int cli_fault_set(const char *s)
{
    memset(&spec, 0, sizeof spec);
    if (!s || !*s)
        return LNK_OK;
    char rest = 0;
    spec.nth = 1;
    int got = sscanf(s, "%d:%31[^:]:%15[^:]:%d%c", &spec.rank, spec.point, spec.kind, &spec.nth,
                     &rest);
    if (got < 3 || got > 4 || spec.rank < 0 || spec.nth < 1 ||
        (strcmp(spec.kind, "error") && strcmp(spec.kind, "exit") && strcmp(spec.kind, "kill") &&
         strcmp(spec.kind, "stop")))
        return lnk_error(LNK_EINVAL, "'%s': expected RANK:POINT:KIND[:N] with KIND error, exit, "
                         "kill or stop", s);
    spec.on = 1;
    return LNK_OK;
}

int cli_fault(const char *point)
{
    if (!spec.on || spec.rank != lnk_comm_rank() || strcmp(spec.point, point) ||
        ++spec.hits != spec.nth)
        return 0;
    if (!strcmp(spec.kind, "exit")) {
        fprintf(stderr, "lnkit: rank %d: LNK_FAULT: exiting at %s without finalize\n", spec.rank,
                point);
        _exit(3);
    }
    if (!strcmp(spec.kind, "kill")) {
        fprintf(stderr, "lnkit: rank %d: LNK_FAULT: killed (SIGKILL) at %s\n", spec.rank, point);
        raise(SIGKILL);
    }
    if (!strcmp(spec.kind, "stop")) { /* then on as if nothing happened */
        raise(SIGSTOP);
        return 0;
    }
    return 1;
}

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

/* The simulated failures of LNK_FAULT, at the point where the
 * process would report its own status to the others. */
static int f_agree(void *ctx, int status, const char *point)
{
    const lnk_procs *g = ctx;
    if (point && !strcmp(point, "hvp"))
        hvp_seen++;
    if (status == LNK_OK && point && cli_fault(point)) {
        if (!strcmp(point, "hvp"))
            status = lnk_error(LNK_ENOMEM, "out of memory in H v product %ld (simulated by "
                               "LNK_FAULT)", hvp_seen);
        else
            status = lnk_error(LNK_EIO, "cannot load its shard of the data set (simulated by "
                               "LNK_FAULT)");
    }
    return g->agree(g->ctx, status, point);
}

const lnk_procs *cli_procs(void)
{
    const lnk_procs *g = lnk_comm_world();
    if (!spec.on)
        return g;
    faulty = (lnk_procs){g->rank,   g->size,    (void *)g, f_allgather, f_reduce_scatter,
                         f_sum,     f_sum_long, f_agree};
    return &faulty;
}
#endif
