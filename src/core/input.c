/* Inputs, read once (see include/lnkit/sys.h): lnk_input, which hashes the
 * bytes as they come (their size and SHA-256 for the provenance record), and
 * whole-file reads of text inputs with a size limit: configurations, texts,
 * vocabularies, CSV.  A regular file larger than the
 * limit is refused before it is read; anything else (a FIFO, a device,
 * process substitution) is read up to the limit.  A NUL byte stops the read
 * at once: no text input holds one, and /dev/zero would otherwise fill
 * memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lnkit/comm.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

static _Atomic size_t input_limit = LNK_INPUT_LIMIT_DEFAULT;

size_t lnk_input_limit(void) { return atomic_load(&input_limit); }

void lnk_set_input_limit(size_t bytes)
{
    if (bytes > SIZE_MAX / 4)
        bytes = SIZE_MAX / 4;
    atomic_store(&input_limit, bytes ? bytes : LNK_INPUT_LIMIT_DEFAULT);
}

/* "21 bytes", "17000000 bytes (16.21 MiB)": a size for messages, in the
 * larger unit only where it says more. */
static const char *size_text(char *buf, size_t n, unsigned long long size)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)size;
    int u = 0;
    while (x >= 1024 && u < 4) {
        x /= 1024;
        u++;
    }
    if (u)
        snprintf(buf, n, "%llu bytes (%.4g %s)", size, x, unit[u]);
    else
        snprintf(buf, n, "%llu bytes", size);
    return buf;
}

static int line_at(const char *buf, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += buf[i] == '\n';
    return line;
}

/* ------------------------------------------------------------ lnk_input */

int lnk_input_open(lnk_input *in, const char *path, const char *what)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    in->path = path;
    if (!what)
        what = "file";
    /* under mpirun every rank reads its inputs: a FIFO or pipe has one reader */
    struct stat sb;
    if (lnk_comm_size() > 1 && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) &&
        !S_ISDIR(sb.st_mode))
        return lnk_error(LNK_EIO, "%s: is %s; under mpirun every rank reads its inputs, so a %s "
                         "must be a regular file", path, S_ISFIFO(sb.st_mode) ? "a FIFO or pipe"
                         : "not a regular file", what);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return lnk_error(LNK_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return lnk_error(LNK_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return lnk_error(LNK_EIO, "%s: is a folder, expected a %s", path, what);
    }
    in->fd = fd;
    in->regular = S_ISREG(sb.st_mode);
    in->size = in->regular ? (uint64_t)sb.st_size : 0;
    in->kind = S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ? "a device" : "a file";
    lnk_sha256_init(&in->sha);
    return LNK_OK;
}

int lnk_input_read(lnk_input *in, void *buf, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = read(in->fd, (char *)buf + done, n - done);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            *got = done;
            return lnk_error(LNK_EIO, "%s: read error: %s", in->path, strerror(errno));
        }
        if (k == 0)
            break;
        lnk_sha256_update(&in->sha, (char *)buf + done, (size_t)k);
        done += (size_t)k;
    }
    *got = done;
    return LNK_OK;
}

int lnk_input_read_alloc(lnk_input *in, size_t n, void **out, size_t *got)
{
    *out = NULL;
    *got = 0;
    /* a regular file's size bounds n (checked by the caller): one allocation;
     * a stream grows its buffer with the bytes that come */
    size_t cap = in->regular || n < ((size_t)1 << 20) ? n : (size_t)1 << 20, have = 0;
    char *b = malloc(cap + 1);
    if (!b)
        return lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", in->path, cap + 1);
    for (;;) {
        size_t k;
        int st = lnk_input_read(in, b + have, cap - have, &k);
        if (st != LNK_OK) {
            free(b);
            return st;
        }
        have += k;
        if (have < cap || cap == n)
            break;
        size_t nc = cap > n / 2 ? n : 2 * cap;
        char *t = realloc(b, nc + 1);
        if (!t) {
            free(b);
            return lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", in->path, nc + 1);
        }
        b = t;
        cap = nc;
    }
    *out = b;
    *got = have;
    return LNK_OK;
}

void lnk_input_close(lnk_input *in, lnk_digest *d)
{
    if (d)
        lnk_sha256_digest(&in->sha, d);
    if (in->fd >= 0)
        close(in->fd);
    in->fd = -1;
}

/* ------------------------------------------------------- whole-file reads */

int lnk_read_input(const char *path, size_t max, const char *what, char **out, size_t *out_len,
                   lnk_digest *digest)
{
    *out = NULL;
    if (!what)
        what = "file";
    lnk_input in;
    int st = lnk_input_open(&in, path, what);
    if (st != LNK_OK)
        return st;
    char h1[64], h2[64];
    if (in.regular && in.size > max) {
        lnk_input_close(&in, NULL);
        return lnk_error(LNK_EFORMAT, "%s: %s of %s is larger than the limit of %s%s", path, what,
                         size_text(h1, sizeof h1, (unsigned long long)in.size),
                         size_text(h2, sizeof h2, max),
                         max == lnk_input_limit() ? "; lnkit batch --max-input raises it" : "");
    }
    /* a regular file in one read (room for its NUL and for growth to show) */
    size_t cap = in.regular ? (size_t)in.size + 2 : 1 << 16, len = 0;
    if (cap > max + 2)
        cap = max + 2;
    char *buf = malloc(cap);
    if (!buf) {
        lnk_input_close(&in, NULL);
        return lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", path, cap);
    }
    for (;;) {
        if (len + 1 == cap) {
            if (len > max) /* read one byte more than the limit: too large */
                break;
            size_t nc = cap > max / 2 ? max + 2 : 2 * cap;
            char *nb = realloc(buf, nc);
            if (!nb) {
                st = lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", path, nc);
                break;
            }
            buf = nb;
            cap = nc;
        }
        /* one read(2) at a time: a NUL stops the read at once (/dev/zero) */
        size_t k;
        ssize_t r = read(in.fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            st = lnk_error(LNK_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        k = (size_t)r;
        lnk_sha256_update(&in.sha, buf + len, k);
        const char *z = memchr(buf + len, '\0', k);
        if (z) {
            size_t off = (size_t)(z - buf);
            st = lnk_error(LNK_EFORMAT, "%s: not a text file: NUL byte at byte offset %zu "
                           "(line %d)", path, off, line_at(buf, off));
            break;
        }
        len += k;
    }
    int fifo = !strcmp(in.kind, "a FIFO"), dev = !strcmp(in.kind, "a device");
    lnk_input_close(&in, digest);
    if (st == LNK_OK && len > max)
        st = lnk_error(LNK_EFORMAT, "%s: %s is larger than the limit of %s; stopped reading it "
                       "(%s)%s", path, what, size_text(h2, sizeof h2, max),
                       fifo ? "a FIFO" : dev ? "a device" : "it grew",
                       max == lnk_input_limit() ? "; lnkit batch --max-input raises it" : "");
    if (st != LNK_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    if (out_len)
        *out_len = len;
    return LNK_OK;
}

int lnk_read_text_file(const char *path, size_t max, const char *what, char **out,
                       size_t *out_len)
{
    return lnk_read_input(path, max, what, out, out_len, NULL);
}

int lnk_read_file(const char *path, char **out, size_t *out_len)
{
    return lnk_read_input(path, lnk_input_limit(), "text input", out, out_len, NULL);
}
