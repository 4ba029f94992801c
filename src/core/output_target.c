/* Output targets (include/lnkit/sys.h): where an output path leads -- a
 * regular file replaced by rename, or a device or FIFO written in place --
 * checked before anything is written; afile.c writes the files. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/output_internal.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m) ? "a folder" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISFIFO(m) ? "a FIFO" : "not a regular file";
}

/* The path a chain of symbolic links ends at (the last one may be dangling). */
static char *follow_links(const char *path)
{
    char *p = strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat sb;
        if (lstat(p, &sb) != 0 || !S_ISLNK(sb.st_mode))
            return p;
        char buf[PATH_MAX];
        ssize_t n = readlink(p, buf, sizeof buf - 1);
        if (n < 0)
            return p;
        buf[n] = '\0';
        char *next = NULL;
        if (buf[0] == '/')
            next = strdup(buf);
        else {
            const char *slash = strrchr(p, '/');
            int dl = slash ? (int)(slash - p + 1) : 0;
            if (asprintf(&next, "%.*s%s", dl, p, buf) < 0)
                next = NULL;
        }
        free(p);
        p = next;
    }
    return p;
}

/* The folder of a path ("." if none), malloc'd. */
char *lnk_out_dir_of(const char *p)
{
    const char *slash = strrchr(p, '/');
    if (!slash)
        return strdup(".");
    if (slash == p)
        return strdup("/");
    return strndup(p, (size_t)(slash - p));
}

int lnk_out_resolve(const char *path, lnk_out_target *t)
{
    memset(t, 0, sizeof *t);
    if (!path || !path[0])
        return lnk_error(LNK_EINVAL, "output file: empty path");
    struct stat sb;
    if (stat(path, &sb) == 0) {
        t->exists = 1;
        if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
            t->kind = LNK_OUT_STREAM;
            if (access(path, W_OK) != 0)
                return lnk_error(LNK_EIO, "%s: cannot write to this %s: %s", path,
                                 kind_name(sb.st_mode) + 2, strerror(errno));
            return LNK_OK;
        }
        if (!S_ISREG(sb.st_mode))
            return lnk_error(LNK_EIO, "%s: is %s; an output must be a regular file, a character "
                             "device or a FIFO", path, kind_name(sb.st_mode));
        /* a file we may not write is not ours to replace (root may write
         * anything: the mode says whether it was meant to be kept) */
        if ((sb.st_mode & 0222) == 0 || access(path, W_OK) != 0)
            return lnk_error(LNK_EIO, "%s: exists and is read-only (mode %04o): not replaced "
                             "(remove it or make it writable)", path,
                             (unsigned)(sb.st_mode & 07777));
        t->mode = sb.st_mode & 07777;
        t->final = realpath(path, NULL); /* also right for /dev/stdout, /proc/self/fd/N */
    } else if (errno == ENOENT) {
        t->final = follow_links(path);
    } else if (errno == ENOTDIR) {
        return lnk_error(LNK_EIO, "%s: a component of the path is not a folder", path);
    } else {
        return lnk_error(LNK_EIO, "%s: %s", path, strerror(errno));
    }
    if (!t->final)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    t->kind = LNK_OUT_FILE;
    char *dir = lnk_out_dir_of(t->final);
    int st = LNK_OK;
    if (!dir)
        st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    else if (stat(dir, &sb) != 0)
        st = lnk_error(LNK_EIO, "%s: folder '%s' %s", path, dir,
                       errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = lnk_error(LNK_EIO, "%s: '%s' is not a folder", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        st = lnk_error(LNK_EIO, "%s: cannot create files in folder '%s': %s", path, dir,
                       strerror(errno));
    free(dir);
    if (st != LNK_OK) {
        free(t->final);
        t->final = NULL;
    }
    return st;
}

int lnk_output_check(const char *path, int *kind)
{
    lnk_out_target t;
    int st = lnk_out_resolve(path, &t);
    if (st == LNK_OK && kind)
        *kind = t.kind;
    free(t.final);
    return st;
}

int lnk_output_kind(const char *path)
{
    struct stat sb;
    if (path && stat(path, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)))
        return LNK_OUT_STREAM;
    return LNK_OUT_FILE;
}

int lnk_output_same(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb)
        return 0;
    /* neither exists yet: the same folder and the same name */
    char *fa = follow_links(a), *fb = follow_links(b);
    int same = 0;
    if (fa && fb) {
        char *da = lnk_out_dir_of(fa), *db = lnk_out_dir_of(fb);
        const char *na = strrchr(fa, '/'), *nb = strrchr(fb, '/');
        na = na ? na + 1 : fa;
        nb = nb ? nb + 1 : fb;
        struct stat xa, xb;
        same = da && db && !strcmp(na, nb) && stat(da, &xa) == 0 && stat(db, &xb) == 0 &&
               xa.st_dev == xb.st_dev && xa.st_ino == xb.st_ino;
        free(da);
        free(db);
    }
    free(fa);
    free(fb);
    return same;
}
