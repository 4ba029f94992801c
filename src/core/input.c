/* Whole-file reads of text inputs with a size limit (see include/lnkit/sys.h):
 * configurations, texts, vocabularies, CSV.  A regular file larger than the
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

/* "1.5 GiB" style, for messages. */
static const char *human(char *buf, size_t n, double bytes)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.4g %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

static int line_at(const char *buf, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += buf[i] == '\n';
    return line;
}

int lnk_read_text_file(const char *path, size_t max, const char *what, char **out,
                       size_t *out_len)
{
    *out = NULL;
    if (!what)
        what = "file";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return lnk_error(LNK_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return lnk_error(LNK_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    char h1[32], h2[32];
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return lnk_error(LNK_EIO, "%s: is a folder, expected a %s", path, what);
    }
    if (S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > max) {
        close(fd);
        return lnk_error(LNK_EFORMAT, "%s: %s of %lld bytes (%s) is larger than the limit of %zu "
                         "bytes (%s)%s", path, what, (long long)sb.st_size,
                         human(h1, sizeof h1, (double)sb.st_size), max,
                         human(h2, sizeof h2, (double)max),
                         max == lnk_input_limit() ? "; lnkit batch --max-input raises it" : "");
    }
    /* a regular file in one read (room for its NUL and for growth to show) */
    size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size + 2 : 1 << 16, len = 0;
    if (cap > max + 2)
        cap = max + 2;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return lnk_error(LNK_ENOMEM, "%s: out of memory for %zu bytes", path, cap);
    }
    int st = LNK_OK;
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
        ssize_t k = read(fd, buf + len, cap - 1 - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            st = lnk_error(LNK_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (k == 0)
            break;
        const char *z = memchr(buf + len, '\0', (size_t)k);
        if (z) {
            size_t off = (size_t)(z - buf);
            st = lnk_error(LNK_EFORMAT, "%s: not a text file: NUL byte at byte offset %zu "
                           "(line %d)", path, off, line_at(buf, off));
            break;
        }
        len += (size_t)k;
    }
    close(fd);
    if (st == LNK_OK && len > max)
        st = lnk_error(LNK_EFORMAT, "%s: %s is larger than the limit of %zu bytes (%s); stopped "
                       "reading it (%s)%s", path, what, max, human(h2, sizeof h2, (double)max),
                       S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ? "a device"
                                                                             : "it grew",
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

int lnk_read_file(const char *path, char **out, size_t *out_len)
{
    return lnk_read_text_file(path, lnk_input_limit(), "text input", out, out_len);
}
