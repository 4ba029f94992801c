/* Checkpoints: the files beside FILE and the advisory lock a run holds on
 * FILE for its whole life (include/lnkit/checkpoint.h, "Lock").
 *
 * FILE itself cannot carry the lock: each save replaces it by a rename, and a
 * lock belongs to an inode.  The lock is on FILE.lock, an open file
 * description lock (F_OFD_SETLK; flock where the kernel lacks them), which
 * the kernel drops when the holder closes it or dies, so a killed run never
 * blocks the resume.  The lock file holds one line naming its holder (pid,
 * host, command, start) for the message of a run that is refused.  Removing
 * the lock file while another process waits to lock it would let a third
 * create a new one and two runs hold "the" lock: so a process that locked
 * the file checks that the name still leads to the inode it locked, and
 * tries again if not. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lnkit/checkpoint.h"
#include "lnkit/comm.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

char *lnk_ckpt_file(const char *path, int which, int rank, int ranks)
{
    char *s = NULL;
    int r = -1;
    if (which == LNK_CKPT_ROWS)
        r = ranks > 1 ? asprintf(&s, "%s.basis.%d", path, rank) : asprintf(&s, "%s.basis", path);
    else if (which == LNK_CKPT_LOCK)
        r = asprintf(&s, "%s.lock", path);
    else if (which == LNK_CKPT_TEMPS) { /* lnk_afile's temporary names */
        /* path's own *, ?, [ and \ stand for themselves */
        size_t n = strlen(path);
        s = malloc(2 * n + 16);
        if (!s)
            return NULL;
        char *o = s;
        for (const char *p = path; *p; p++) {
            if (strchr("*?[\\", *p))
                *o++ = '\\';
            *o++ = *p;
        }
        strcpy(o, ".tmp.??????");
        return s;
    }
    return r < 0 ? NULL : s;
}

struct lnk_ckpt_lock {
    char *path;      /* the checkpoint's FILE */
    char *lock_path; /* FILE.lock (rank 0) */
    int fd;          /* the locked file; -1 on ranks other than 0 */
};

/* 0, or the errno of a lock held elsewhere (EAGAIN, EACCES, EWOULDBLOCK) or
 * of a failure. */
static int try_lock(int fd)
{
#ifdef F_OFD_SETLK
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return 0;
    if (errno != EINVAL)
        return errno;
#endif
    return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
}

static int held_elsewhere(int e) { return e == EAGAIN || e == EACCES || e == EWOULDBLOCK; }

/* The holder's line from its lock file ("" if it has not written it yet). */
static void holder(int fd, char *buf, size_t n)
{
    ssize_t r = pread(fd, buf, n - 1, 0);
    buf[r > 0 ? r : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

static int take_here(lnk_ckpt_lock *lk, const char *cmd)
{
    const char *lp = lk->lock_path;
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
        if (fd < 0)
            return lnk_error(LNK_EIO, "%s: checkpoint %s: cannot open its lock file %s: %s", cmd,
                             lk->path, lp, strerror(errno));
        struct stat a, b;
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            close(fd);
            return lnk_error(LNK_EIO, "%s: checkpoint %s: its lock file %s is not a regular "
                             "file", cmd, lk->path, lp);
        }
        int e = try_lock(fd);
        if (held_elsewhere(e)) {
            char who[256];
            holder(fd, who, sizeof who);
            close(fd);
            return lnk_error(LNK_EIO, "%s: checkpoint %s is in use by another run (%s; lock "
                             "file %s): two runs on one checkpoint would corrupt it; wait for "
                             "that run to end, or choose another --checkpoint", cmd, lk->path,
                             *who ? who : "a run that has not recorded itself yet", lp);
        }
        if (e) {
            close(fd);
            return lnk_error(LNK_EIO, "%s: checkpoint %s: cannot lock %s (%s): without a lock "
                             "two runs could share the checkpoint; choose a --checkpoint on a "
                             "file system that supports locks", cmd, lk->path, lp, strerror(e));
        }
        /* the name must still lead to the inode locked (see the top) */
        if (stat(lp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            char host[256] = "?", when[32];
            if (gethostname(host, sizeof host) != 0)
                snprintf(host, sizeof host, "?");
            host[sizeof host - 1] = '\0';
            lnk_iso_time(when, sizeof when);
            char line[512];
            int len = snprintf(line, sizeof line, "pid %ld on host %s, lnkit %s, since %s\n",
                               (long)getpid(), host, cmd, when);
            /* the line is for messages only: a failure to write it is no error */
            if (ftruncate(fd, 0) == 0 && len > 0 && pwrite(fd, line, (size_t)len, 0) < 0)
                errno = 0;
            lk->fd = fd;
            return LNK_OK;
        }
        close(fd);
    }
    return lnk_error(LNK_EIO, "%s: checkpoint %s: its lock file %s keeps being replaced by "
                     "another process", cmd, lk->path, lp);
}

int lnk_ckpt_lock_take(lnk_ckpt_lock **out, const char *path, const char *cmd)
{
    *out = NULL;
    lnk_ckpt_lock *lk = calloc(1, sizeof *lk);
    int rc = LNK_OK;
    if (!lk || !(lk->path = strdup(path)) || !(lk->lock_path = lnk_ckpt_file(path, LNK_CKPT_LOCK,
                                                                               0, 1)))
        rc = lnk_error(LNK_ENOMEM, "%s: out of memory", cmd);
    if (lk)
        lk->fd = -1;
    if (rc == LNK_OK && lnk_comm_rank() == 0)
        rc = take_here(lk, cmd);
    rc = lnk_comm_agree(rc);
    if (rc != LNK_OK) {
        lnk_ckpt_lock_release(lk);
        return rc;
    }
    *out = lk;
    return LNK_OK;
}

const char *lnk_ckpt_lock_path(const lnk_ckpt_lock *lk) { return lk ? lk->path : NULL; }

void lnk_ckpt_lock_release(lnk_ckpt_lock *lk)
{
    if (!lk)
        return;
    if (lk->fd >= 0) {
        /* the lock file goes while locked, and only if it is still ours */
        struct stat a, b;
        if (fstat(lk->fd, &a) == 0 && stat(lk->lock_path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
            unlink(lk->lock_path);
        close(lk->fd);
    }
    free(lk->path);
    free(lk->lock_path);
    free(lk);
}
