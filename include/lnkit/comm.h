/* lnkit: the processes of a job (MPI), with deterministic reductions.
 *
 * Built with `make MPI=1` (mpicc, OpenMPI) these functions wrap
 * MPI_COMM_WORLD; in the default build the job is one process (rank 0 of 1)
 * and every call is trivial, so programs use them unconditionally.
 *
 * Determinism.  A floating-point sum over ranks is always taken in rank order,
 * s = x_0 + x_1 + ... + x_{P-1}, by the rank that owns the result, and then
 * copied: every rank gets the same bits, and a run gives the same bits every
 * time for a given number of ranks (MPI_Allreduce is not used for doubles: its
 * order of summation is unspecified).  Against one process, a sum over ranks
 * differs only by rounding (relative 1e-15 for the model's sums).
 *
 *   lnk_comm_sum            small arrays (dot products): allgather of P*n
 *                           values, each rank sums them in rank order.
 *                           Cost: (P-1) n doubles received per rank.
 *   lnk_comm_reduce_scatter a long vector (gradients, H v): rank r receives
 *                           slice r of every rank's vector (alltoallv) and
 *                           sums them in rank order.  Per rank ~8 n (P-1)/P
 *                           bytes sent and received, memory n doubles.
 *   lnk_comm_allgather      the slices back into the full vector on every
 *                           rank (exact copies).  Same traffic.
 * An ordered allreduce of a long vector is reduce_scatter + allgather, about
 * 16 n (P-1)/P bytes per rank: the bandwidth of a ring allreduce.
 *
 * Failures.  A rank that fails where the others may not (its own shard, its
 * own allocation, its own H v) calls lnk_comm_agree(status) at the next
 * collective point: every rank learns the status of every other, and all
 * return the first failing rank's status with the message
 * "rank R: <its message>".  Programs then print that one line on rank 0 and
 * exit non-zero on every rank.  A rank that dies (killed, exit without
 * MPI_Finalize) is seen by mpirun, which ends the job with a non-zero status.
 *
 * A rank's failure is simulated in tests by the programs, not the library:
 * they wrap their group (process groups below) in a test build
 * (src/front/fault.c, LNK_FAULT).
 */
#ifndef LNKIT_COMM_H
#define LNKIT_COMM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Start (MPI_Init) once per program; later calls do nothing.  LNK_OK or an
 * error status.  lnk_comm_finalize ends it (MPI_Finalize) and is safe to call
 * without init. */
int lnk_comm_init(int *argc, char ***argv);
void lnk_comm_finalize(void);
/* 1 if the library was built with MPI (make MPI=1). */
int lnk_comm_has_mpi(void);
int lnk_comm_rank(void);
int lnk_comm_size(void);

/* Split n items into `parts` contiguous slices as evenly as possible: slice r
 * is [displ[r], displ[r] + count[r]); the first n % parts slices get one more. */
void lnk_comm_split(size_t n, int parts, size_t *count, size_t *displ);

/* x[0..n) <- sum over ranks of x[0..n), in rank order, same bits everywhere. */
int lnk_comm_sum(double *x, size_t n);
/* The same for long n: reduce_scatter + allgather. */
int lnk_comm_sum_long(double *x, size_t n);
/* partial: a full vector on every rank (length sum of count); mine gets
 * slice rank (count[rank] values) of the sum over ranks, in rank order. */
int lnk_comm_reduce_scatter(const double *partial, double *mine, const size_t *count,
                            const size_t *displ);
/* full[displ[r] .. + count[r]) <- rank r's mine, on every rank. */
int lnk_comm_allgather(const double *mine, double *full, const size_t *count, const size_t *displ);
/* bytes from root to every rank. */
int lnk_comm_bcast(void *buf, size_t bytes, int root);
/* Gather a byte string from every rank to root: *all (malloc'd on root, NULL
 * elsewhere) is the concatenation in rank order, len[r] (root, P entries) the
 * lengths.  The caller frees *all. */
int lnk_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *len, int root);

/* Collective: returns LNK_OK if every rank passes LNK_OK, else (on every
 * rank) the first failing rank's status, with lnk_errmsg() = "rank R: msg"
 * (just "msg" in a one-process job). */
int lnk_comm_agree(int status);
/* 1 once lnk_comm_agree has returned a failure on this rank (then it has on
 * every rank: all can end cleanly, MPI_Finalize and exit, without abort). */
int lnk_comm_failed(void);
/* Barrier (for timing). */
int lnk_comm_barrier(void);

/* For a program ending on an error after which the ranks can not agree:
 * with several ranks, end the whole job now with exit status code
 * (MPI_Abort, which does not return); in a one-process job it returns, and
 * the program exits. */
void lnk_comm_abort(int code);

/* Bytes this rank has sent through the functions above (benchmarks). */
double lnk_comm_bytes_sent(void);

/* ------------------------------------------------------- process groups
 * The processes that share one data set, passed in to the code that reduces
 * over them (lnk_dataset in lnkit/hessian.h) instead of read from a global:
 * the group's rank and size and its collectives (the functions above on the
 * job's ranks for lnk_comm_world()).  agree's `point` names the step ("load":
 * a process has taken its shard; "hvp": its part of an H v product), so a
 * wrapper can act there (a test build's programs simulate a rank's failure
 * so: src/front/fault.c). */
typedef struct lnk_procs {
    int rank, size;
    void *ctx;
    int (*allgather)(void *ctx, const double *mine, double *full, const size_t *count,
                     const size_t *displ);
    int (*reduce_scatter)(void *ctx, const double *partial, double *mine, const size_t *count,
                          const size_t *displ);
    int (*sum)(void *ctx, double *x, size_t n);
    int (*sum_long)(void *ctx, double *x, size_t n);
    int (*agree)(void *ctx, int status, const char *point);
} lnk_procs;

/* The job's processes (all ranks; one process without MPI).  After lnk_comm_init. */
const lnk_procs *lnk_comm_world(void);

#ifdef __cplusplus
}
#endif
#endif
