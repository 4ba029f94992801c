/* lnkit: status codes and error reporting (GSL style).
 *
 * Every library function that can fail returns an int status: LNK_OK (0) on
 * success, one of the codes below otherwise.  Before returning a failure the
 * function records a one-line message naming the problem (file, field, value,
 * what was expected) with lnk_error(); programs print lnk_errmsg() and exit 2.
 * The library itself never prints and never exits.
 *
 * A message is always one line: lnk_error escapes control characters
 * (newline as \n, tab as \t, CR as \r, other C0 controls, DEL and invalid
 * UTF-8 bytes as \xHH, C1 controls as \u0080..\u009f), so a key, value,
 * file or tensor name that holds them cannot split the message or send
 * escape codes to a terminal.  A message longer than the buffer (1023
 * bytes) ends with "...".
 *
 * The message buffer is thread-local.  An optional handler (lnk_set_error_handler)
 * is called with every recorded error, e.g. to abort in a debugger.
 */
#ifndef LNKIT_ERROR_H
#define LNKIT_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LNK_OK = 0,
    LNK_EINVAL = 1,   /* invalid argument, option or configuration value */
    LNK_ENOMEM = 2,   /* allocation failed */
    LNK_EIO = 3,      /* file could not be opened, read or written */
    LNK_EFORMAT = 4,  /* malformed file (safetensors, JSON, text, CSV) */
    LNK_EMISMATCH = 5,/* file does not match the configuration (names, shapes, dtypes) */
    LNK_ENONFINITE = 6/* NaN or infinity in an input or a result */
};

typedef void lnk_error_handler_t(int status, const char *message);

/* Record a formatted message for status and return status (so callers can
 * write `return lnk_error(LNK_EINVAL, "...", ...)`). */
int lnk_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copy src into dst (capacity cap, NUL-terminated) with the escaping above;
 * returns the length written.  Idempotent: escaping twice changes nothing. */
size_t lnk_escape(char *dst, size_t cap, const char *src);

/* The last recorded message of this thread ("" if none). */
const char *lnk_errmsg(void);

/* A short name for a status code ("invalid argument", ...). */
const char *lnk_strerror(int status);

/* Clear the recorded message. */
void lnk_error_clear(void);

/* Install a handler called on every lnk_error(); returns the previous one.
 * NULL (the default) means: only record the message. */
lnk_error_handler_t *lnk_set_error_handler(lnk_error_handler_t *handler);

#ifdef __cplusplus
}
#endif
#endif
