/* Status codes and the thread-local error message (see include/lnkit/error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lnkit/error.h"

static _Thread_local char errbuf[1024];
static lnk_error_handler_t *handler = NULL;

/* Length of the well-formed UTF-8 character at s (of at most n bytes), 0 if
 * it is not one (overlongs, surrogates, above U+10FFFF, truncated). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t more;
    if (c >= 0xC2 && c <= 0xDF)
        more = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        more = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        more = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (more >= n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j <= more; j++)
        if (s[j] < 0x80 || s[j] > 0xBF)
            return 0;
    return more + 1;
}

size_t lnk_escape(char *dst, size_t cap, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t n = strlen(src), w = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        char tmp[8];
        size_t k, adv;
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x7F) {
            tmp[0] = (char)c;
            k = 1;
            adv = 1;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            tmp[0] = '\\';
            tmp[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            k = 2;
            adv = 1;
        } else if (c < 0x80) { /* other C0 controls and DEL */
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
            adv = 1;
        } else if ((adv = utf8_char(s + i, n - i)) == 0) { /* not UTF-8: the byte */
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
            adv = 1;
        } else if (adv == 2 && c == 0xC2 && s[i + 1] < 0xA0) { /* C1 controls U+0080..U+009F */
            k = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)s[i + 1]);
        } else {
            memcpy(tmp, s + i, adv);
            k = adv;
        }
        if (w + k + 1 > cap) { /* truncate at a character boundary, say so */
            while (w > 0 && w + 4 > cap)
                w--;
            while (w > 0 && (((unsigned char)dst[w] & 0xC0) == 0x80))
                w--;
            if (w + 4 <= cap) {
                memcpy(dst + w, "...", 3);
                w += 3;
            }
            break;
        }
        memcpy(dst + w, tmp, k);
        w += k;
        i += adv;
    }
    dst[w] = '\0';
    return w;
}

int lnk_error(int status, const char *fmt, ...)
{
    /* Format first, then escape: file names, keys, values and tensor names
     * that hold control characters or invalid UTF-8 cannot split the
     * message over lines or reach the terminal as escape codes.  The
     * escaping is idempotent (a backslash stays a backslash), so messages
     * that quote other messages are not escaped twice. */
    char raw[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    lnk_escape(errbuf, sizeof errbuf, raw);
    if (handler)
        handler(status, errbuf);
    return status;
}

const char *lnk_errmsg(void) { return errbuf; }

void lnk_error_clear(void) { errbuf[0] = '\0'; }

const char *lnk_strerror(int status)
{
    switch (status) {
    case LNK_OK: return "success";
    case LNK_EINVAL: return "invalid argument";
    case LNK_ENOMEM: return "out of memory";
    case LNK_EIO: return "input/output error";
    case LNK_EFORMAT: return "malformed file";
    case LNK_EMISMATCH: return "file does not match the configuration";
    case LNK_ENONFINITE: return "non-finite number";
    default: return "unknown error";
    }
}

lnk_error_handler_t *lnk_set_error_handler(lnk_error_handler_t *h)
{
    lnk_error_handler_t *old = handler;
    handler = h;
    return old;
}
