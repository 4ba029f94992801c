/* Checkpoints of long curvature runs: the states of lnk_eigs, lnk_trace and
 * lnk_slq to a file and back, vectors in a rows file beside it.  See
 * include/lnkit/checkpoint.h; the identity is ckpt_id.c, reading FILE back
 * ckpt_read.c, the lock ckpt_lock.c. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/ckpt_internal.h"
#include "lnkit/checkpoint.h"
#include "lnkit/comm.h"
#include "lnkit/error.h"
#include "lnkit/io.h"
#include "lnkit/sha256.h"
#include "lnkit/sys.h"

/* Test builds only (include/lnkit/fault.h): LNK_FAULT_CKPT "rows:N" sends
 * SIGKILL to the process in its N-th save once the rows are on disk, before
 * FILE is written; "file:N" once FILE's temporary file is written, before
 * the rename.  Rank 0 only. */
#ifdef LNK_TESTING
#include "core/fault_internal.h"
static struct {
    char point[8]; /* "rows", "file" or "" */
    long n, hits;
} ck_fault;

int lnk_fault_ckpt_set(const char *spec)
{
    memset(&ck_fault, 0, sizeof ck_fault);
    if (!spec || !*spec)
        return LNK_OK;
    char pt[8] = "", rest = 0;
    long n = 0;
    if (sscanf(spec, "%7[a-z]:%ld%c", pt, &n, &rest) != 2 || n < 1 ||
        (strcmp(pt, "rows") && strcmp(pt, "file")))
        return lnk_error(LNK_EINVAL, "checkpoint fault '%s': expected rows:N or file:N, N >= 1",
                         spec);
    snprintf(ck_fault.point, sizeof ck_fault.point, "%s", pt);
    ck_fault.n = n;
    return LNK_OK;
}

static void fault(const char *point)
{
    if (strcmp(ck_fault.point, point) || lnk_comm_rank() != 0)
        return;
    if (++ck_fault.hits == ck_fault.n)
        raise(SIGKILL);
}
#else
static inline void fault(const char *point) { (void)point; }
#endif

/* ------------------------------------------------------ record format
 * MAGIC, then records (u32 name length, name, u8 type, u64 count, count
 * values: int64, double or bytes), then TRAILER and the SHA-256 of all that
 * precedes it.  Native byte order (a checkpoint stays on its machine). */

typedef struct {
    char *p;
    size_t n, cap;
    int err;
} wbuf;

static void put(wbuf *b, const void *x, size_t k)
{
    if (b->err || k == 0)
        return;
    if (b->n + k > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + k)
            nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) {
            b->err = 1;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, x, k);
    b->n += k;
}

static void rec(wbuf *b, const char *name, int type, uint64_t count, const void *data)
{
    uint32_t ln = (uint32_t)strlen(name);
    uint8_t t = (uint8_t)type;
    put(b, &ln, 4);
    put(b, name, ln);
    put(b, &t, 1);
    put(b, &count, 8);
    put(b, data, count * (type == T_STR ? 1 : 8));
}

static void rec_i(wbuf *b, const char *name, int64_t v) { rec(b, name, T_INT, 1, &v); }
static void rec_d(wbuf *b, const char *name, double v) { rec(b, name, T_DBL, 1, &v); }
static void rec_s(wbuf *b, const char *name, const char *s) { rec(b, name, T_STR, strlen(s), s); }
static void rec_ints(wbuf *b, const char *name, const int *x, size_t k)
{
    int64_t *t = malloc(8 * (k ? k : 1));
    if (!t) {
        b->err = 1;
        return;
    }
    for (size_t i = 0; i < k; i++)
        t[i] = x[i];
    rec(b, name, T_INT, k, t);
    free(t);
}

/* ---------------------------------------------------------- rows, checksums */

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* A 64-bit checksum of a row (xxHash64's round function on 4 lanes): it
 * runs at memory speed and finds a changed or zeroed row, not an adversary. */
uint64_t lnk_ck_row_hash(const double *x, size_t n)
{
    const uint64_t P1 = 11400714785074694791ull, P2 = 14029467366897019727ull;
    uint64_t a[4] = {P1 + P2, P2, 0, (uint64_t)0 - P1};
    const unsigned char *p = (const unsigned char *)x;
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + 8 * (i + l), 8);
            a[l] = rotl(a[l] + w * P2, 31) * P1;
        }
    for (; i < n; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        a[0] = rotl(a[0] + w * P2, 31) * P1;
    }
    uint64_t h = rotl(a[0], 1) + rotl(a[1], 7) + rotl(a[2], 12) + rotl(a[3], 18) + n;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= 1609587929392839161ull;
    return h ^ (h >> 32);
}

size_t lnk_ckpt_rows_bytes(size_t row_len, size_t max_rows) { return 8 * row_len * max_rows; }

int lnk_ck_need_hash(lnk_ckpt *ck)
{
    if (ck->hash)
        return LNK_OK;
    ck->hash = calloc(ck->max_rows ? ck->max_rows : 1, sizeof(uint64_t));
    return ck->hash ? LNK_OK : lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
}

int lnk_ck_open_rows(lnk_ckpt *ck, int create)
{
    if (ck->fd >= 0)
        return LNK_OK;
    ck->fd = open(ck->rows_path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (ck->fd < 0)
        return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: cannot open: %s", ck->cmd,
                         ck->rows_path, strerror(errno));
    struct stat sb;
    if (fstat(ck->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return lnk_error(LNK_EIO, "%s: checkpoint rows file %s is not a regular file", ck->cmd,
                         ck->rows_path);
    if (!ck->mapped)
        return LNK_OK;
    size_t bytes = lnk_ckpt_rows_bytes(ck->row_len, ck->max_rows);
    if (ck->resumed && (size_t)sb.st_size != bytes)
        return lnk_error(LNK_EFORMAT, "%s: checkpoint rows file %s has %lld bytes, expected %zu "
                         "(truncated?); remove %s and it to start again", ck->cmd, ck->rows_path,
                         (long long)sb.st_size, bytes, ck->path);
    if ((size_t)sb.st_size != bytes) {
        /* all the space now: a full disk must fail here, not as SIGBUS in a store */
        if (ftruncate(ck->fd, 0) != 0)
            return lnk_error(LNK_EIO, "%s: %s: %s", ck->cmd, ck->rows_path, strerror(errno));
        /* asked first: a reservation that fails fills the disk on its way (and
         * every other program's writes with it) before it gives up */
        struct statvfs fs;
        if (fstatvfs(ck->fd, &fs) == 0 && (double)fs.f_bavail * fs.f_frsize < (double)bytes)
            return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: the basis needs %.3g GB (%zu "
                             "rows of %zu values), its file system has %.3g GB free: fewer rows "
                             "(eigs --max-steps) or a --checkpoint on a larger disk", ck->cmd,
                             ck->rows_path, bytes / 1e9, ck->max_rows, ck->row_len,
                             (double)fs.f_bavail * fs.f_frsize / 1e9);
        int e = posix_fallocate(ck->fd, 0, (off_t)bytes);
        if (e) /* only a fresh run gets here; lnk_ckpt_open removes its files */
            return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: cannot reserve %.3g GB for "
                             "the basis (%zu rows of %zu values): %s", ck->cmd, ck->rows_path,
                             bytes / 1e9, ck->max_rows, ck->row_len, strerror(e));
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ck->fd, 0);
    if (m == MAP_FAILED)
        return lnk_error(LNK_EIO, "%s: cannot map checkpoint rows file %s (%zu bytes): %s",
                         ck->cmd, ck->rows_path, bytes, strerror(errno));
    ck->map = m;
    ck->map_bytes = bytes;
    return LNK_OK;
}

/* Mapped rows [ck->synced, valid) to disk and their checksums. */
static int sync_mapped(lnk_ckpt *ck, size_t valid)
{
    if (valid < ck->synced)
        ck->synced = 0; /* a new run rewrites the basis from row 0 (lnk_slq) */
    if (valid <= ck->synced)
        return LNK_OK;
    int rc = lnk_ck_need_hash(ck);
    if (rc != LNK_OK)
        return rc;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), lo = ck->synced * ck->row_len * 8;
    size_t hi = valid * ck->row_len * 8;
    lo -= lo % pg;
    if (msync((char *)ck->map + lo, hi - lo, MS_SYNC) != 0)
        return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: cannot sync rows %zu..%zu: %s",
                         ck->cmd, ck->rows_path, ck->synced, valid, strerror(errno));
    for (size_t i = ck->synced; i < valid; i++)
        ck->hash[i] = lnk_ck_row_hash(ck->map + i * ck->row_len, ck->row_len);
    ck->synced = valid;
    return LNK_OK;
}

/* Write count rows (data) at file row first, checksum them, fdatasync. */
static int write_rows(lnk_ckpt *ck, size_t first, size_t count, const double *data)
{
    int rc = lnk_ck_need_hash(ck);
    if (rc == LNK_OK)
        rc = lnk_ck_open_rows(ck, 1);
    if (rc != LNK_OK)
        return rc;
    size_t rb = 8 * ck->row_len;
    for (size_t i = 0; i < count; i++) {
        const char *p = (const char *)(data + i * ck->row_len);
        off_t off = (off_t)((first + i) * rb);
        for (size_t done = 0; done < rb;) {
            ssize_t w = pwrite(ck->fd, p + done, rb - done, off + (off_t)done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: write failed: %s",
                                 ck->cmd, ck->rows_path, w < 0 ? strerror(errno) : "no space");
            done += (size_t)w;
        }
        ck->hash[first + i] = lnk_ck_row_hash(data + i * ck->row_len, ck->row_len);
    }
    if (count && fdatasync(ck->fd) != 0)
        return lnk_error(LNK_EIO, "%s: checkpoint rows file %s: sync failed: %s", ck->cmd,
                         ck->rows_path, strerror(errno));
    return LNK_OK;
}

/* ------------------------------------------------------------- saving */

static void put_id(wbuf *b, const lnk_ckpt *ck)
{
    put(b, MAGIC, strlen(MAGIC));
    rec_i(b, "kind", ck->kind);
    rec_i(b, "ranks", ck->size);
    for (int i = 0; i < ck->id.n; i++) {
        char *nm;
        if (asprintf(&nm, "%s:%s", ck->id.env[i] ? "env" : "id", ck->id.name[i]) < 0) {
            b->err = 1;
            return;
        }
        rec_s(b, nm, ck->id.value[i]);
        free(nm);
    }
    if (ck->moved && *ck->moved)
        rec_s(b, "moved", ck->moved);
}

/* Close b (trailer) and write it to ck->path atomically (rank 0); state: a
 * save (not the initial file). */
static int write_file(lnk_ckpt *ck, wbuf *b, int state)
{
    put(b, TRAILER, strlen(TRAILER));
    if (b->err)
        return lnk_error(LNK_ENOMEM, "%s: out of memory writing checkpoint %s", ck->cmd, ck->path);
    lnk_sha256 s;
    unsigned char d[32];
    lnk_sha256_init(&s);
    lnk_sha256_update(&s, b->p, b->n);
    lnk_sha256_final(&s, d);
    put(b, d, 32);
    if (b->err)
        return lnk_error(LNK_ENOMEM, "%s: out of memory writing checkpoint %s", ck->cmd, ck->path);
    lnk_afile af;
    int rc = lnk_afile_open(&af, ck->path);
    if (rc != LNK_OK)
        return rc;
    if (fwrite(b->p, 1, b->n, af.f) != b->n) {
        lnk_afile_abort(&af);
        return lnk_error(LNK_EIO, "%s: cannot write checkpoint %s", ck->cmd, ck->path);
    }
    if (state) {
        fflush(af.f);
        fault("file");
    }
    return lnk_afile_commit(&af);
}

/* The common end of a save: checksums of rows [first, first + count) of
 * every rank to rank 0, which writes FILE; all ranks agree on the outcome.
 * rc: this rank's status so far (its rows written and synced or not). */
static int finish(lnk_ckpt *ck, wbuf *b, int rc, size_t first, size_t count, long products,
                  double elapsed)
{
    /* every rank's checksums, as bytes, in rank order */
    char *all = NULL;
    size_t *len = calloc((size_t)ck->size, sizeof(size_t));
    if (!len && rc == LNK_OK)
        rc = lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
    rc = lnk_comm_agree(rc);
    if (rc == LNK_OK)
        rc = lnk_comm_gather_bytes(ck->hash ? (const char *)(ck->hash + first) : "",
                                   ck->hash ? 8 * count : 0, &all, len, 0);
    if (rc == LNK_OK && ck->rank == 0) {
        size_t tot = 0;
        for (int r = 0; r < ck->size; r++)
            tot += len[r];
        if (tot != 8 * count * (size_t)ck->size)
            rc = lnk_error(LNK_EINVAL, "%s: checkpoint: the ranks' row checksums differ in "
                           "number", ck->cmd);
        rec_i(b, "products", products);
        rec_d(b, "elapsed", elapsed);
        rec_i(b, "rows.first", (int64_t)first);
        rec_i(b, "rows.count", (int64_t)count);
        rec(b, "rows.hash", T_INT, count * (size_t)ck->size, all ? all : "");
        fault("rows");
        if (rc == LNK_OK)
            rc = write_file(ck, b, 1);
    }
    free(all);
    free(len);
    free(b->p);
    rc = lnk_comm_agree(rc);
    if (rc == LNK_OK)
        ck->products = products;
    return rc;
}

static void put_lanczos(wbuf *b, const lnk_lanczos_state *l)
{
    rec_i(b, "lz.mode", l->mode);
    rec_i(b, "lz.max_steps", l->max_steps);
    rec_i(b, "lz.steps", l->steps);
    rec_i(b, "lz.done", l->done);
    rec_i(b, "lz.invariant", l->invariant);
    rec_i(b, "lz.n_restarts", l->n_restarts);
    rec_i(b, "lz.n_reorth", l->n_reorth);
    rec_i(b, "lz.force", l->force);
    rec_i(b, "lz.n_ivl", l->n_ivl);
    rec_i(b, "lz.n_applies", l->n_applies);
    rec_i(b, "lz.seed", (int64_t)l->seed);
    rec_d(b, "lz.tnorm", l->tnorm);
    rec_d(b, "lz.reorth_rows", l->reorth_rows);
    size_t m = (size_t)l->max_steps;
    rec(b, "lz.alpha", T_DBL, m, l->alpha);
    rec(b, "lz.beta", T_DBL, m, l->beta);
    if (l->mode == LNK_LANCZOS_FULL) {
        rec(b, "lz.om", T_DBL, m + 1, l->om);
        rec(b, "lz.om_prev", T_DBL, m + 1, l->om_prev);
        rec_ints(b, "lz.ivl", l->ivl, 2 * (m + 1));
    }
}

/* The rows of a Lanczos state: FULL the mapped basis rows 0..steps; LIGHT
 * its three vectors, written to the slot the last state does not use. */
static int lanczos_rows(lnk_ckpt *ck, const lnk_lanczos_state *l, size_t *first, size_t *count)
{
    if (l->mode == LNK_LANCZOS_FULL) {
        *first = 0;
        *count = l->steps > 0 ? (size_t)l->steps + 1 : 0;
        return sync_mapped(ck, *count);
    }
    *count = l->steps > 0 ? 3 : 0;
    *first = 0;
    if (!*count)
        return LNK_OK;
    ck->slot = !ck->slot;
    *first = 3 * (size_t)ck->slot;
    const double *v[3] = {l->v0, l->vprev, l->vcur};
    for (int i = 0; i < 3; i++) {
        int rc = write_rows(ck, *first + (size_t)i, 1, v[i]);
        if (rc != LNK_OK)
            return rc;
    }
    return LNK_OK;
}

int lnk_ckpt_save_eigs(lnk_ckpt *ck, const lnk_eigs_state *st, long products)
{
    wbuf b = {0};
    size_t first = 0, count = 0;
    int rc = lanczos_rows(ck, &st->lanczos, &first, &count);
    if (ck->rank == 0) {
        put_id(&b, ck);
        put_lanczos(&b, &st->lanczos);
        rec_i(&b, "eigs.n_resid", st->n_resid);
        rec(&b, "eigs.resid", T_DBL, (size_t)st->n_resid, st->resid);
    }
    return finish(ck, &b, rc, first, count, products, st->elapsed);
}

int lnk_ckpt_save_trace(lnk_ckpt *ck, const lnk_trace_state *st, long products)
{
    wbuf b = {0};
    size_t first = 0, count = (size_t)st->n_rows;
    int rc = LNK_OK;
    if (st->phase == 0) { /* the sketch columns so far: the new ones */
        if ((size_t)st->n_rows > ck->written)
            rc = write_rows(ck, ck->written, (size_t)st->n_rows - ck->written,
                            st->rows + ck->written * ck->row_len);
        if (rc == LNK_OK)
            ck->written = (size_t)st->n_rows;
    } else { /* Q, once, after the sketch's rows */
        first = (size_t)st->n_rows;
        if (!ck->q_saved)
            rc = write_rows(ck, first, count, st->rows);
        ck->q_saved = rc == LNK_OK;
    }
    if (ck->rank == 0) {
        put_id(&b, ck);
        rec_i(&b, "tr.applies", st->applies);
        rec_i(&b, "tr.phase", st->phase);
        rec_i(&b, "tr.index", st->index);
        rec_i(&b, "tr.n_rows", st->n_rows);
        rec_d(&b, "tr.partial", st->partial);
        rec(&b, "tr.samples", T_DBL, (size_t)st->n_samples, st->samples);
    }
    return finish(ck, &b, rc, first, count, products, st->elapsed);
}

int lnk_ckpt_save_slq(lnk_ckpt *ck, const lnk_slq_state *st, long products)
{
    wbuf b = {0};
    size_t first = 0, count = 0;
    int rc = lanczos_rows(ck, &st->lanczos, &first, &count);
    if (ck->rank == 0) {
        put_id(&b, ck);
        rec_i(&b, "slq.run", st->run);
        rec_i(&b, "slq.steps_done", st->steps_done);
        rec_i(&b, "slq.n_applies", st->n_applies);
        rec_ints(&b, "slq.offset", st->offset, (size_t)st->run + 1);
        size_t nn = (size_t)st->offset[st->run];
        rec(&b, "slq.node", T_DBL, nn, st->node);
        rec(&b, "slq.weight", T_DBL, nn, st->weight);
        rec_ints(&b, "slq.steps", st->steps, (size_t)st->run);
        rec_ints(&b, "slq.invariant", st->invariant, (size_t)st->run);
        if (st->lanczos.steps > 0)
            put_lanczos(&b, &st->lanczos);
    }
    return finish(ck, &b, rc, first, count, products, st->elapsed);
}

/* ------------------------------------------------------------ open, close */

int lnk_ckpt_open(lnk_ckpt **out, lnk_ckpt_lock *lock, const char *path, const char *cmd,
                  const lnk_ckpt_id *id, int kind, size_t row_len, size_t max_rows, int mapped)
{
    *out = NULL;
    if (lock && strcmp(lnk_ckpt_lock_path(lock), path))
        return lnk_error(LNK_EINVAL, "%s: checkpoint %s: the lock given is %s's", cmd, path,
                         lnk_ckpt_lock_path(lock));
    lnk_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", cmd);
    ck->fd = -1;
    ck->kind = kind;
    ck->rank = lnk_comm_rank();
    ck->size = lnk_comm_size();
    ck->row_len = row_len;
    ck->max_rows = max_rows;
    ck->mapped = mapped;
    int rc = LNK_OK, fresh = 0;
    ck->path = strdup(path);
    ck->cmd = strdup(cmd);
    if (!ck->path || !ck->cmd ||
        !(ck->rows_path = lnk_ckpt_file(path, LNK_CKPT_ROWS, ck->rank, ck->size)))
        rc = lnk_error(LNK_ENOMEM, "%s: out of memory", cmd);
    ck->id.resume_anywhere = id->resume_anywhere;
    for (int i = 0; rc == LNK_OK && i < id->n; i++)
        rc = (id->env[i] ? lnk_ckpt_id_add_env : lnk_ckpt_id_add)(&ck->id, id->name[i], "%s",
                                                                   id->value[i]);
    /* the lock before any of the checkpoint's files is read or touched */
    if (rc == LNK_OK && !lock)
        rc = lnk_ckpt_lock_take(&ck->own_lock, path, cmd);
    if (rc != LNK_OK) {
        lnk_ckpt_close(ck);
        return rc;
    }
    /* what a save cut by a kill left: FILE's temporary files (lnk_afile's names) */
    char *pat = lnk_ckpt_file(path, LNK_CKPT_TEMPS, 0, 1);
    glob_t g;
    if (ck->rank == 0 && pat && glob(pat, GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
    free(pat);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            rc = lnk_error(LNK_EIO, "%s: --checkpoint %s is not a regular file", cmd, path);
        else {
            FILE *f = fopen(path, "rb");
            ck->len = (size_t)sb.st_size;
            ck->buf = malloc(ck->len ? ck->len : 1);
            rc = LNK_OK;
            if (!f)
                rc = lnk_error(LNK_EIO, "%s: checkpoint %s: cannot open: %s", cmd, path,
                               strerror(errno));
            else if (!ck->buf)
                rc = lnk_error(LNK_ENOMEM, "%s: out of memory for checkpoint %s", cmd, path);
            else if (fread(ck->buf, 1, ck->len, f) != ck->len)
                rc = lnk_ck_bad(ck, "it could not be read whole");
            if (f)
                fclose(f);
            if (rc == LNK_OK)
                rc = lnk_ck_parse(ck);
            if (rc == LNK_OK)
                rc = lnk_ck_read_state(ck);
        }
    } else if (errno != ENOENT) {
        rc = lnk_error(LNK_EIO, "%s: --checkpoint %s: %s", cmd, path, strerror(errno));
    } else {
        /* a fresh run: no orphan rows file may be replaced; FILE first */
        fresh = 1;
        if (access(ck->rows_path, F_OK) == 0)
            rc = lnk_error(LNK_EIO, "%s: %s exists but its checkpoint %s does not: remove it "
                           "or choose another --checkpoint", cmd, ck->rows_path, path);
        rc = lnk_comm_agree(rc);
        if (rc == LNK_OK && ck->rank == 0) {
            wbuf b = {0};
            put_id(&b, ck);
            rc = write_file(ck, &b, 0);
            free(b.p);
        }
        rc = lnk_comm_agree(rc);
    }
    if (rc == LNK_OK && mapped) {
        rc = lnk_ck_open_rows(ck, 1);
        if (fresh) {
            /* a fresh run that cannot hold its basis leaves neither file behind
             * (both are its own: an orphan rows file was refused above) */
            int all = lnk_comm_agree(rc);
            if (all != LNK_OK) {
                unlink(ck->rows_path);
                if (ck->rank == 0)
                    unlink(path);
                rc = all;
            }
        }
    }
    if (rc != LNK_OK) {
        lnk_ckpt_close(ck);
        return rc;
    }
    *out = ck;
    return LNK_OK;
}

double *lnk_ckpt_basis(lnk_ckpt *ck) { return ck ? ck->map : NULL; }
int lnk_ckpt_resumed(const lnk_ckpt *ck) { return ck && ck->resumed; }
long lnk_ckpt_products(const lnk_ckpt *ck) { return ck ? ck->products : 0; }
const char *lnk_ckpt_moved(const lnk_ckpt *ck) { return ck && ck->moved ? ck->moved : ""; }

const lnk_eigs_state *lnk_ckpt_eigs_state(const lnk_ckpt *ck)
{
    return ck && ck->resumed && ck->kind == LNK_CKPT_EIGS ? &ck->es : NULL;
}

const lnk_trace_state *lnk_ckpt_trace_state(const lnk_ckpt *ck)
{
    return ck && ck->resumed && ck->kind == LNK_CKPT_TRACE ? &ck->ts : NULL;
}

const lnk_slq_state *lnk_ckpt_slq_state(const lnk_ckpt *ck)
{
    return ck && ck->resumed && ck->kind == LNK_CKPT_SLQ ? &ck->ss : NULL;
}

int lnk_ckpt_remove(lnk_ckpt *ck)
{
    /* rank 0 comes here once the outputs are committed: only then may rows go */
    int rc = lnk_comm_agree(LNK_OK);
    if (rc == LNK_OK && unlink(ck->rows_path) != 0 && errno != ENOENT)
        rc = lnk_error(LNK_EIO, "%s: cannot remove %s: %s", ck->cmd, ck->rows_path,
                       strerror(errno));
    rc = lnk_comm_agree(rc);
    if (rc == LNK_OK && ck->rank == 0 && unlink(ck->path) != 0 && errno != ENOENT)
        rc = lnk_error(LNK_EIO, "%s: cannot remove checkpoint %s: %s", ck->cmd, ck->path,
                       strerror(errno));
    return lnk_comm_agree(rc);
}

void lnk_ckpt_close(lnk_ckpt *ck)
{
    if (!ck)
        return;
    if (ck->map)
        munmap(ck->map, ck->map_bytes);
    if (ck->fd >= 0)
        close(ck->fd);
    lnk_ck_free_lanczos(&ck->es.lanczos);
    lnk_ck_free_lanczos(&ck->ss.lanczos);
    free((void *)ck->es.resid);
    free((void *)ck->ts.samples);
    free((void *)ck->ss.node);
    free((void *)ck->ss.weight);
    free(ck->ivl), free(ck->offset), free(ck->steps), free(ck->inv);
    free(ck->rows);
    free(ck->hash);
    free(ck->buf);
    free(ck->r);
    free(ck->moved);
    lnk_ckpt_lock_release(ck->own_lock);
    lnk_ckpt_id_free(&ck->id);
    free(ck->path), free(ck->rows_path), free(ck->cmd);
    free(ck);
}
