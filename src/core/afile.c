/* Output files that appear whole or not at all (see include/lnkit/sys.h):
 * temporary file + rename for regular files, in-place writes for devices
 * and FIFOs, group commits for the several outputs of one command, and the
 * fault points of test builds (LNK_TESTING).  Where a path leads is
 * output_target.c; the list of temporary files, removed on fatal signals
 * and at exit, is output_live.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/output_internal.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

/* ------------------------------------------------------------- fault hook */

/* Test builds only (-DLNK_TESTING, include/lnkit/fault.h): LNK_FAULT_OUTPUT's
 * spec POINT:ACTION[:N]
 *   write:ENOSPC:B  (or EIO, EFBIG)  writes to output files fail with that
 *                   error once B bytes have been written in all
 *   create:term:N   SIGTERM to the process right after the N-th temporary
 *                   file is created (inside the creation's critical section)
 *   write:term:B    SIGTERM once B bytes have been written
 *   synced:term     SIGTERM when a group's files are written and synced,
 *                   before the first rename
 *   rename:term:N   SIGTERM after the N-th rename of a group commit
 *   rename:EIO:N    the N-th rename of a group commit fails (roll-back)
 * N counts from 1 (default 1), B from 0 (default 0).  The signal stands for
 * one arriving from outside at that exact point. */
enum { FP_NONE, FP_CREATE, FP_WRITE, FP_SYNCED, FP_RENAME };
#ifdef LNK_TESTING
#include "core/fault_internal.h"
static struct {
    int point;
    int err;        /* errno to fail with, or 0 = send SIGTERM */
    long long n;    /* hit number or byte budget */
    long long hits; /* hits so far / bytes so far */
} fault;

int lnk_fault_output_set(const char *s)
{
    memset(&fault, 0, sizeof fault);
    if (!s || !*s)
        return LNK_OK;
    char point[16] = "", action[16] = "", rest = 0;
    long long n = -1;
    int got = sscanf(s, "%15[a-z]:%15[A-Za-z]:%lld%c", point, action, &n, &rest);
    static const char *const pts[] = {"", "create", "write", "synced", "rename"};
    for (int i = 1; i < 5; i++)
        if (!strcmp(point, pts[i]))
            fault.point = i;
    static const struct { const char *name; int err; } acts[] = {
        {"term", 0}, {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EFBIG", EFBIG}};
    int act = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(action, acts[i].name))
            act = i;
    if (got < 2 || got > 3 || (got == 3 && n < 0) || !fault.point || act < 0) {
        memset(&fault, 0, sizeof fault);
        return lnk_error(LNK_EINVAL, "output fault '%s': expected POINT:ACTION[:N] with POINT "
                         "create, write, synced or rename and ACTION term, ENOSPC, EIO or "
                         "EFBIG", s);
    }
    fault.err = acts[act].err;
    fault.n = n >= 0 ? n : (fault.point == FP_WRITE ? 0 : 1);
    return LNK_OK;
}

/* At a counted point: 1 if the fault fires now (a signal is sent here). */
static int fault_hit(int point)
{
    if (fault.point != point || ++fault.hits != fault.n)
        return 0;
    if (fault.err == 0)
        kill(getpid(), SIGTERM);
    return 1;
}
#else
static inline int fault_hit(int point) { return (void)point, 0; }
#endif

/* ---------------------------------------------- open output files by FILE* */

/* For messages of writers that see only the FILE* (the CSV writer). */
typedef struct {
    FILE *f;
    char *path;
} named;
static named open_files[LIVE_MAX];
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static void name_add(FILE *f, char *path)
{
    pthread_mutex_lock(&open_lock);
    for (int i = 0; i < LIVE_MAX; i++)
        if (!open_files[i].f) {
            open_files[i] = (named){f, path};
            break;
        }
    pthread_mutex_unlock(&open_lock);
}

static void name_drop(FILE *f)
{
    pthread_mutex_lock(&open_lock);
    for (int i = 0; i < LIVE_MAX; i++)
        if (open_files[i].f == f)
            open_files[i] = (named){NULL, NULL};
    pthread_mutex_unlock(&open_lock);
}

const char *lnk_output_name(const FILE *f)
{
    if (f == stdout)
        return "standard output";
    const char *p = NULL;
    pthread_mutex_lock(&open_lock);
    for (int i = 0; i < LIVE_MAX && !p; i++)
        if (f && open_files[i].f == f)
            p = open_files[i].path;
    pthread_mutex_unlock(&open_lock);
    return p ? p : "output file";
}

/* ------------------------------------------------------------ write cookie */

/* The FILE* of an output writes through this cookie: write(2) on the file
 * descriptor, the first error kept for the message, and the fault hook. */
typedef struct {
    int fd;
    int err;
} cookie;

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
    cookie *k = c;
    size_t done = 0;
    while (done < n) {
        size_t want = n - done;
#ifdef LNK_TESTING
        if (fault.point == FP_WRITE) {
            long long left = fault.n - fault.hits;
            if (left <= 0) {
                if (fault.err) {
                    k->err = errno = fault.err;
                    return (ssize_t)done;
                }
                if (fault.hits == fault.n) { /* once */
                    fault.hits++;
                    kill(getpid(), SIGTERM);
                }
            } else if ((long long)want > left)
                want = (size_t)left;
        }
#endif
        ssize_t w = write(k->fd, buf + done, want);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            k->err = errno;
            return (ssize_t)done; /* 0 = error for stdio */
        }
        if (w == 0) {
            k->err = errno = EIO;
            return (ssize_t)done;
        }
        done += (size_t)w;
#ifdef LNK_TESTING
        if (fault.point == FP_WRITE && fault.hits < fault.n)
            fault.hits += w;
#endif
    }
    return (ssize_t)done;
}

static int ck_close(void *c)
{
    cookie *k = c;
    int r = 0;
    if (k->fd >= 0 && close(k->fd) != 0 && errno != EINTR) {
        k->err = k->err ? k->err : errno;
        r = -1;
    }
    free(k);
    return r;
}

/* ------------------------------------------------------------------- afile */

/* mkstemp creates files with mode 0600; a new file gets the mode an ordinary
 * fopen would give it (0666 & ~umask), a replaced file keeps its own. */
static mode_t new_file_mode(void)
{
    static atomic_int known;
    static mode_t mode = 0644;
    if (!atomic_load(&known)) {
        mode_t u = umask(022);
        umask(u);
        mode = 0666 & ~u;
        atomic_store(&known, 1);
    }
    return mode;
}

static int afile_fail(lnk_afile *a, int st)
{
    free(a->path);
    free(a->tmp);
    free(a->final);
    memset(a, 0, sizeof *a);
    return st;
}

int lnk_afile_open(lnk_afile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    lnk_output_init();
    lnk_out_target t;
    int st = lnk_out_resolve(path, &t);
    if (st != LNK_OK)
        return st;
    a->path = strdup(path);
    a->final = t.final;
    if (!a->path)
        return afile_fail(a, lnk_error(LNK_ENOMEM, "%s: out of memory", path));
    int fd = -1;
    if (t.kind == LNK_OUT_STREAM) {
        /* a device or FIFO: written in place, never created, truncated or replaced */
        fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return afile_fail(a, lnk_error(LNK_EIO, "%s: cannot open for writing: %s", path,
                                           strerror(errno)));
        struct stat sb;
        if (fstat(fd, &sb) != 0 || !(S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode))) {
            close(fd); /* it changed under us: do not write into a regular file in place */
            return afile_fail(a, lnk_error(LNK_EIO, "%s: changed while being opened; try again",
                                           path));
        }
        a->stream = 1;
    } else {
        if (asprintf(&a->tmp, "%s.tmp.XXXXXX", a->final) < 0) {
            a->tmp = NULL;
            return afile_fail(a, lnk_error(LNK_ENOMEM, "%s: out of memory", path));
        }
        /* created and listed in one critical section: a signal cannot come between */
        sigset_t old;
        if (lnk_out_crit_enter(&old) != 0)
            return afile_fail(a, lnk_error(LNK_EIO, "%s: the process is terminating", path));
        int e = 0;
        if (lnk_out_live_add(a->tmp) != 0)
            e = EMFILE;
        else if ((fd = mkostemp(a->tmp, O_CLOEXEC)) < 0) {
            e = errno;
            lnk_out_live_drop(a->tmp);
        } else
            fault_hit(FP_CREATE);
        lnk_out_crit_leave(&old);
        if (fd < 0)
            return afile_fail(a, lnk_error(LNK_EIO, "%s: cannot create a temporary file in its "
                                           "folder: %s", path, strerror(e)));
        if (fchmod(fd, t.exists ? t.mode : new_file_mode()) != 0) { /* keep 0600 */ }
    }
    cookie *ck = malloc(sizeof *ck);
    cookie_io_functions_t io = {NULL, ck_write, NULL, ck_close};
    FILE *f = ck ? fopencookie(ck, "w", io) : NULL;
    if (!f) {
        free(ck);
        close(fd);
        lnk_out_tmp_release(a->tmp, 1);
        a->tmp = NULL;
        return afile_fail(a, lnk_error(LNK_ENOMEM, "%s: out of memory", path));
    }
    *ck = (cookie){fd, 0};
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    a->f = f;
    a->fd = fd;
    a->ck = ck;
    name_add(f, a->path);
    return LNK_OK;
}

/* ------------------------------------------------------------- group commit */

/* A group: files written and synced, waiting for their renames. */
typedef struct {
    char *tmp, *final, *path;
    int how; /* after the rename: see rename_one */
} pending;
static struct {
    int active, n, cap;
    pending *p;
} grp;
static pthread_mutex_t grp_lock = PTHREAD_MUTEX_INITIALIZER;

int lnk_output_group_begin(void)
{
    lnk_output_init();
    pthread_mutex_lock(&grp_lock);
    int was = grp.active;
    grp.active = 1;
    pthread_mutex_unlock(&grp_lock);
    return was ? lnk_error(LNK_EINVAL, "output group: a group is already open") : LNK_OK;
}

/* Close the FILE, keep the first error; 0 if all went well. */
static int close_file(lnk_afile *a, int *err)
{
    cookie *ck = a->ck;
    errno = 0;
    int bad = fflush(a->f) != 0 || ferror(a->f);
    *err = ck->err ? ck->err : errno ? errno : EIO;
    if (!bad && !a->stream && fsync(a->fd) != 0) {
        bad = 1;
        *err = errno;
    }
    name_drop(a->f);
    ck->fd = -1; /* closed here, where its error can be seen */
    if (close(a->fd) != 0 && !bad && errno != EINTR) {
        bad = 1;
        *err = errno;
    }
    fclose(a->f);
    a->f = NULL;
    a->ck = NULL;
    return bad;
}

static void afile_release(lnk_afile *a)
{
    free(a->path);
    free(a->tmp);
    free(a->final);
    memset(a, 0, sizeof *a);
}

/* The folder of path synced (a rename is durable once its folder is). */
static void sync_dir(const char *path)
{
    char *d = lnk_out_dir_of(path);
    int fd = d ? open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        if (fsync(fd) != 0) { /* not every file system can: not an error */ }
        close(fd);
    }
    free(d);
}

enum { HOW_NEW = 1, HOW_SWAPPED, HOW_PLAIN };

/* Rename tmp over final so that it can be undone: onto a new name without
 * replacing, or exchanged with the existing file (whose old content then
 * sits under tmp); a plain rename where the file system has neither. */
static int rename_one(const char *tmp, const char *final, int *how)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0) {
        *how = HOW_NEW;
        return 0;
    }
    if (errno == EEXIST) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            *how = HOW_SWAPPED;
            return 0;
        }
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
    *how = HOW_PLAIN;
    return rename(tmp, final);
}

static void group_free(void)
{
    for (int i = 0; i < grp.n; i++) {
        free(grp.p[i].tmp);
        free(grp.p[i].final);
        free(grp.p[i].path);
    }
    free(grp.p);
    grp.p = NULL;
    grp.n = grp.cap = 0;
    grp.active = 0;
}

void lnk_output_group_abort(void)
{
    pthread_mutex_lock(&grp_lock);
    for (int i = 0; i < grp.n; i++) {
        lnk_out_tmp_release(grp.p[i].tmp, 1);
        grp.p[i].tmp = NULL;
    }
    group_free();
    pthread_mutex_unlock(&grp_lock);
}

int lnk_output_group_commit(void)
{
    pthread_mutex_lock(&grp_lock);
    if (!grp.active) {
        pthread_mutex_unlock(&grp_lock);
        return lnk_error(LNK_EINVAL, "output group: no group is open");
    }
    fault_hit(FP_SYNCED);
    sigset_t old;
    if (lnk_out_crit_enter(&old) != 0) {
        for (int i = 0; i < grp.n; i++)
            grp.p[i].tmp = NULL; /* still listed: the signal handler removes them */
        group_free();
        pthread_mutex_unlock(&grp_lock);
        return lnk_error(LNK_EIO, "output group: the process is terminating");
    }
    /* The renames: one critical section, so a signal cannot cut the group. */
    int st = LNK_OK, k;
    for (k = 0; k < grp.n; k++) {
        pending *p = &grp.p[k];
        int fire = 0, fail = 0, e = 0;
#ifdef LNK_TESTING
        fire = fault.point == FP_RENAME && ++fault.hits == fault.n;
        if (fire && fault.err) { /* test: this rename fails */
            fail = 1;
            e = fault.err;
        } else
#endif
        if (rename_one(p->tmp, p->final, &p->how) != 0) {
            fail = 1;
            e = errno;
        }
        if (fail) {
            st = lnk_error(LNK_EIO, "%s: cannot rename %s to it: %s (none of this command's %d "
                           "output files was written)", p->path, p->tmp, strerror(e), grp.n);
            break;
        }
        if (fire) /* test: a signal in the middle of the renames */
            kill(getpid(), SIGTERM);
    }
    if (st != LNK_OK) {
        /* undo the renames done, newest first: the old files come back */
        for (int i = k - 1; i >= 0; i--) {
            pending *p = &grp.p[i];
            if (p->how == HOW_SWAPPED)
                renameat2(AT_FDCWD, p->tmp, AT_FDCWD, p->final, RENAME_EXCHANGE);
            else
                unlink(p->final);
        }
        for (int i = 0; i < grp.n; i++)
            unlink(grp.p[i].tmp);
    } else {
        for (int i = 0; i < grp.n; i++)
            if (grp.p[i].how == HOW_SWAPPED)
                unlink(grp.p[i].tmp); /* the replaced content */
    }
    for (int i = 0; i < grp.n; i++)
        lnk_out_live_drop(grp.p[i].tmp);
    lnk_out_crit_leave(&old);
    if (st == LNK_OK)
        for (int i = 0; i < grp.n; i++)
            sync_dir(grp.p[i].final);
    group_free();
    pthread_mutex_unlock(&grp_lock);
    return st;
}

/* ----------------------------------------------------------- commit, abort */

int lnk_afile_commit(lnk_afile *a)
{
    if (!a->f || !a->path)
        return lnk_error(LNK_EINVAL, "%s: file is not open", a->path ? a->path : "output file");
    int e;
    if (close_file(a, &e)) {
        int st = lnk_error(LNK_EIO, "%s: write failed: %s", a->path, strerror(e));
        lnk_out_tmp_release(a->tmp, 1);
        a->tmp = NULL;
        afile_release(a);
        return st;
    }
    if (a->stream) {
        afile_release(a);
        return LNK_OK;
    }
    pthread_mutex_lock(&grp_lock);
    if (grp.active) {
        /* in a group: the rename waits for lnk_output_group_commit */
        if (grp.n == grp.cap) {
            int nc = grp.cap ? 2 * grp.cap : 8;
            pending *np = realloc(grp.p, sizeof *np * (size_t)nc);
            if (!np) {
                pthread_mutex_unlock(&grp_lock);
                lnk_out_tmp_release(a->tmp, 1);
                a->tmp = NULL;
                int st = lnk_error(LNK_ENOMEM, "%s: out of memory", a->path);
                afile_release(a);
                return st;
            }
            grp.p = np;
            grp.cap = nc;
        }
        grp.p[grp.n++] = (pending){a->tmp, a->final, a->path, 0};
        a->tmp = a->final = a->path = NULL; /* the group owns them now (still listed) */
        pthread_mutex_unlock(&grp_lock);
        afile_release(a);
        return LNK_OK;
    }
    pthread_mutex_unlock(&grp_lock);
    sigset_t old;
    int st = LNK_OK;
    if (lnk_out_crit_enter(&old) != 0) {
        st = lnk_error(LNK_EIO, "%s: the process is terminating", a->path);
        a->tmp = NULL; /* still listed: the signal handler removes it */
    } else {
        if (rename(a->tmp, a->final) != 0) {
            e = errno;
            st = lnk_error(LNK_EIO, "%s: cannot rename %s to it: %s", a->path, a->tmp, strerror(e));
            unlink(a->tmp);
        }
        lnk_out_live_drop(a->tmp);
        lnk_out_crit_leave(&old);
        if (st == LNK_OK)
            sync_dir(a->final);
    }
    afile_release(a);
    return st;
}

void lnk_afile_abort(lnk_afile *a)
{
    if (a->f) {
        name_drop(a->f);
        __fpurge(a->f); /* nothing more reaches a device or FIFO */
        fclose(a->f);
    }
    lnk_out_tmp_release(a->tmp, 1);
    a->tmp = NULL;
    afile_release(a);
}

void lnk_output_abort_all(void)
{
    lnk_output_group_abort();
    lnk_out_live_remove_all();
}
