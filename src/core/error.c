/* Status codes and the thread-local error message (see include/lnkit/error.h). */
#include <stdarg.h>
#include <stdio.h>
#include "lnkit/error.h"

static _Thread_local char errbuf[1024];
static lnk_error_handler_t *handler = NULL;

int lnk_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
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
