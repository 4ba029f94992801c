/* The processes of a job: MPI_COMM_WORLD with ordered (deterministic)
 * reductions, or a one-process job without MPI (see include/lnkit/comm.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/comm.h"
#include "lnkit/error.h"
#ifdef LNK_MPI
#include <mpi.h>
#endif

static double bytes_sent;

void lnk_comm_split(size_t n, int parts, size_t *count, size_t *displ)
{
    size_t base = n / (size_t)parts, extra = n % (size_t)parts, o = 0;
    for (int r = 0; r < parts; r++) {
        count[r] = base + ((size_t)r < extra);
        displ[r] = o;
        o += count[r];
    }
}

double lnk_comm_bytes_sent(void) { return bytes_sent; }

#ifndef LNK_MPI

int lnk_comm_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return LNK_OK;
}
void lnk_comm_finalize(void) {}
int lnk_comm_has_mpi(void) { return 0; }
int lnk_comm_rank(void) { return 0; }
int lnk_comm_size(void) { return 1; }
int lnk_comm_sum(double *x, size_t n) { (void)x, (void)n; return LNK_OK; }
int lnk_comm_sum_long(double *x, size_t n) { (void)x, (void)n; return LNK_OK; }
int lnk_comm_reduce_scatter(const double *partial, double *mine, const size_t *count,
                            const size_t *displ)
{
    if (mine != partial + displ[0])
        memmove(mine, partial + displ[0], count[0] * sizeof(double));
    return LNK_OK;
}
int lnk_comm_allgather(const double *mine, double *full, const size_t *count, const size_t *displ)
{
    if (full + displ[0] != mine)
        memmove(full + displ[0], mine, count[0] * sizeof(double));
    return LNK_OK;
}
int lnk_comm_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; return LNK_OK; }
int lnk_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *len, int root)
{
    (void)root;
    *all = malloc(n ? n : 1);
    if (!*all)
        return lnk_error(LNK_ENOMEM, "out of memory gathering %zu bytes", n);
    memcpy(*all, mine, n);
    len[0] = n;
    return LNK_OK;
}
int lnk_comm_agree(int status) { return status; }
int lnk_comm_failed(void) { return 0; }
void lnk_comm_abort(int code) { (void)code; }
int lnk_comm_barrier(void) { return LNK_OK; }

#else /* LNK_MPI */

static int started, failed_together;

int lnk_comm_failed(void) { return failed_together; }

static int mpi_fail(int code, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, s, &len);
    return lnk_error(LNK_EIO, "MPI: %s failed: %s", what, s);
}
#define CHECK_MPI(call, what)                                                                     \
    do {                                                                                          \
        int mpi_rc_ = (call);                                                                     \
        if (mpi_rc_ != MPI_SUCCESS)                                                               \
            return mpi_fail(mpi_rc_, what);                                                       \
    } while (0)

int lnk_comm_init(int *argc, char ***argv)
{
    int flag = 0;
    MPI_Initialized(&flag);
    if (flag)
        return LNK_OK;
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return lnk_error(LNK_EIO, "MPI_Init failed");
    /* errors come back as codes, reported by lnk_error, not aborts */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    started = 1;
    return LNK_OK;
}

void lnk_comm_finalize(void)
{
    int flag = 0, done = 0;
    MPI_Initialized(&flag);
    MPI_Finalized(&done);
    if (flag && !done && started)
        MPI_Finalize();
}

int lnk_comm_has_mpi(void) { return 1; }

static int initialized(void)
{
    int flag = 0, done = 0;
    MPI_Initialized(&flag);
    MPI_Finalized(&done);
    return flag && !done;
}

int lnk_comm_rank(void)
{
    int r = 0;
    if (initialized())
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int lnk_comm_size(void)
{
    int s = 1;
    if (initialized())
        MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

/* MPI counts are int: long vectors are sent as several messages of at most
 * this many doubles. */
#define SEG ((size_t)1 << 26)

int lnk_comm_sum(double *x, size_t n)
{
    int P = lnk_comm_size();
    if (P == 1 || n == 0)
        return LNK_OK;
    if (n > 4096)
        return lnk_comm_sum_long(x, n);
    double *all = malloc(sizeof(double) * n * (size_t)P);
    if (!all)
        return lnk_error(LNK_ENOMEM, "out of memory for a sum over %d ranks", P);
    int rc = MPI_Allgather(x, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(rc, "allgather (sum)");
    }
    bytes_sent += 8.0 * (double)n * (P - 1);
    for (size_t i = 0; i < n; i++) {
        double s = all[i];
        for (int r = 1; r < P; r++)
            s += all[(size_t)r * n + i];
        x[i] = s;
    }
    free(all);
    return LNK_OK;
}

/* Post nonblocking sends (send = 1) or receives of count doubles with peer,
 * in segments of at most SEG (MPI counts are int); req[*nr...] gets them. */
static int post(int send, double *buf, size_t count, int peer, int tag, MPI_Request *req, int *nr)
{
    for (size_t o = 0; o < count; o += SEG) {
        int k = (int)(count - o < SEG ? count - o : SEG);
        int rc = send ? MPI_Isend(buf + o, k, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &req[(*nr)++])
                      : MPI_Irecv(buf + o, k, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &req[(*nr)++]);
        if (rc != MPI_SUCCESS)
            return rc;
        if (send)
            bytes_sent += 8.0 * k;
    }
    return MPI_SUCCESS;
}

/* Room for the requests of one exchange: a receive and a send per peer. */
static MPI_Request *requests(const size_t *count, int P, size_t nm)
{
    size_t nseg = (size_t)P * (nm / SEG + 1);
    for (int r = 0; r < P; r++)
        nseg += count[r] / SEG + 1;
    return malloc(sizeof(MPI_Request) * nseg);
}

int lnk_comm_reduce_scatter(const double *partial, double *mine, const size_t *count,
                            const size_t *displ)
{
    int P = lnk_comm_size(), me = lnk_comm_rank();
    size_t nm = count[me];
    if (P == 1) {
        if (mine != partial + displ[0])
            memmove(mine, partial + displ[0], nm * sizeof(double));
        return LNK_OK;
    }
    /* Every rank's slice `me` into row r of recv (send slice r to rank r),
     * then the rows added in rank order. */
    double *recv = malloc(sizeof(double) * (nm ? nm : 1) * (size_t)P);
    MPI_Request *req = requests(count, P, nm);
    if (!recv || !req) {
        free(recv), free(req);
        return lnk_error(LNK_ENOMEM, "out of memory for a reduce-scatter over %d ranks", P);
    }
    memcpy(recv + (size_t)me * nm, partial + displ[me], nm * sizeof(double));
    int nr = 0, rc = MPI_SUCCESS;
    for (int r = 0; r < P && rc == MPI_SUCCESS; r++)
        if (r != me)
            rc = post(0, recv + (size_t)r * nm, nm, r, 71, req, &nr);
    for (int r = 0; r < P && rc == MPI_SUCCESS; r++)
        if (r != me) /* MPI_Isend does not write its buffer */
            rc = post(1, (double *)partial + displ[r], count[r], r, 71, req, &nr);
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(recv), free(req);
        return mpi_fail(rc, "reduce-scatter");
    }
    for (size_t i = 0; i < nm; i++) {
        double s = recv[i];
        for (int r = 1; r < P; r++)
            s += recv[(size_t)r * nm + i];
        mine[i] = s;
    }
    free(recv), free(req);
    return LNK_OK;
}

int lnk_comm_allgather(const double *mine, double *full, const size_t *count, const size_t *displ)
{
    int P = lnk_comm_size(), me = lnk_comm_rank();
    if (full + displ[me] != mine)
        memmove(full + displ[me], mine, count[me] * sizeof(double));
    if (P == 1)
        return LNK_OK;
    MPI_Request *req = requests(count, P, count[me]);
    if (!req)
        return lnk_error(LNK_ENOMEM, "out of memory for an allgather over %d ranks", P);
    int nr = 0, rc = MPI_SUCCESS;
    for (int r = 0; r < P && rc == MPI_SUCCESS; r++)
        if (r != me) {
            rc = post(0, full + displ[r], count[r], r, 72, req, &nr);
            if (rc == MPI_SUCCESS)
                rc = post(1, full + displ[me], count[me], r, 72, req, &nr);
        }
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
    free(req);
    return rc == MPI_SUCCESS ? LNK_OK : mpi_fail(rc, "allgather");
}

int lnk_comm_sum_long(double *x, size_t n)
{
    int P = lnk_comm_size();
    if (P == 1 || n == 0)
        return LNK_OK;
    size_t *count = malloc(sizeof(size_t) * 2 * (size_t)P);
    double *mine = malloc(sizeof(double) * (n / (size_t)P + 1));
    if (!count || !mine) {
        free(count), free(mine);
        return lnk_error(LNK_ENOMEM, "out of memory for a sum over %d ranks", P);
    }
    size_t *displ = count + P;
    lnk_comm_split(n, P, count, displ);
    int rc = lnk_comm_reduce_scatter(x, mine, count, displ);
    if (!rc)
        rc = lnk_comm_allgather(mine, x, count, displ);
    free(count), free(mine);
    return rc;
}

int lnk_comm_bcast(void *buf, size_t bytes, int root)
{
    if (lnk_comm_size() == 1)
        return LNK_OK;
    for (size_t o = 0; o < bytes; o += SEG) {
        size_t k = bytes - o < SEG ? bytes - o : SEG;
        CHECK_MPI(MPI_Bcast((char *)buf + o, (int)k, MPI_BYTE, root, MPI_COMM_WORLD), "bcast");
    }
    return LNK_OK;
}

int lnk_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *len, int root)
{
    int P = lnk_comm_size(), me = lnk_comm_rank();
    *all = NULL;
    /* too many bytes: -1, so that root refuses for all (none may leave early) */
    int ni = n > INT_MAX ? -1 : (int)n, *lens = malloc(sizeof(int) * 2 * (size_t)P);
    if (!lens)
        return lnk_error(LNK_ENOMEM, "out of memory gathering over %d ranks", P);
    int rc = MPI_Gather(&ni, 1, MPI_INT, lens, 1, MPI_INT, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(lens);
        return mpi_fail(rc, "gather (lengths)");
    }
    int *disp = lens + P;
    long total = 0;
    /* root says whether it can take them all (every rank is in this call:
     * all return the same failure, none is left waiting in the gather) */
    int ok[2] = {1, 0};
    if (me == root) {
        for (int r = 0; r < P; r++) {
            disp[r] = (int)total;
            total += lens[r] < 0 ? (long)INT_MAX + 1 : lens[r];
            len[r] = lens[r] < 0 ? 0 : (size_t)lens[r];
        }
        if (total > INT_MAX)
            ok[0] = 0, ok[1] = 1;
        else if (!(*all = malloc((size_t)total + 1)))
            ok[0] = 0, ok[1] = 2;
    }
    rc = MPI_Bcast(ok, 2, MPI_INT, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || !ok[0]) {
        free(lens);
        free(*all);
        *all = NULL;
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "gather (status)");
        if (ok[1] == 1)
            return lnk_error(LNK_EINVAL, "gather: more than %d bytes in all", INT_MAX);
        return lnk_error(LNK_ENOMEM, "gather: rank %d is out of memory for the bytes of all "
                         "ranks", root);
    }
    rc = MPI_Gatherv(mine, ni, MPI_BYTE, *all, lens, disp, MPI_BYTE, root, MPI_COMM_WORLD);
    bytes_sent += me == root ? 0 : (double)n;
    free(lens);
    if (rc != MPI_SUCCESS) {
        free(*all);
        *all = NULL;
        return mpi_fail(rc, "gather");
    }
    return LNK_OK;
}

int lnk_comm_agree(int status)
{
    int P = lnk_comm_size();
    if (P == 1)
        return status;
    int *all = malloc(sizeof(int) * (size_t)P);
    if (!all)
        return lnk_error(LNK_ENOMEM, "out of memory");
    int rc = MPI_Allgather(&status, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(rc, "allgather (status)");
    }
    int first = -1, nfail = 0;
    for (int r = 0; r < P; r++)
        if (all[r] != LNK_OK) {
            nfail++;
            if (first < 0)
                first = r;
        }
    int st = first < 0 ? LNK_OK : all[first];
    free(all);
    if (first < 0)
        return LNK_OK;
    failed_together = 1;
    /* Every rank's message, to everyone.  The same failure on every rank (a
     * bad file all read) is reported as in one process; otherwise the first
     * failing rank names itself. */
    enum { ML = 512 };
    char *msgs = calloc((size_t)P + 1, ML), *mine = msgs ? msgs + (size_t)P * ML : NULL;
    if (!msgs)
        return lnk_error(st, "rank %d failed (and out of memory for its message)", first);
    if (status != LNK_OK)
        snprintf(mine, ML, "%s", lnk_errmsg());
    rc = MPI_Allgather(mine, ML, MPI_CHAR, msgs, ML, MPI_CHAR, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(msgs);
        return mpi_fail(rc, "allgather (messages)");
    }
    int same = nfail == P;
    for (int r = 1; r < P && same; r++)
        same = !strncmp(msgs, msgs + (size_t)r * ML, ML);
    char msg[ML];
    memcpy(msg, msgs + (size_t)first * ML, ML);
    msg[ML - 1] = 0;
    free(msgs);
    if (same)
        return lnk_error(st, "%s", msg);
    return lnk_error(st, "rank %d: %s", first, msg);
}

void lnk_comm_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
    if (initialized() && lnk_comm_size() > 1)
        MPI_Abort(MPI_COMM_WORLD, code);
}

int lnk_comm_barrier(void)
{
    if (lnk_comm_size() > 1)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD), "barrier");
    return LNK_OK;
}

#endif
