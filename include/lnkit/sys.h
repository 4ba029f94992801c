/* lnkit: system helpers that every floor above the core uses: output files
 * that appear whole or not at all, whole-file reads of text inputs with size
 * limits, the clock, the version and the number of BLAS threads.
 * (lnkit/io.h includes this header: CSV writing and sidecars are there.)
 *
 * Outputs (lnk_afile).  Where -o PATH leads decides how it is written:
 *   - a regular file, or a name that does not exist yet: written to a
 *     temporary file PATH.tmp.XXXXXX beside it, flushed and fsync'd, then
 *     renamed over PATH, so PATH is the old file or the complete new one,
 *     never a part.  A replaced file keeps its permission bits; a read-only
 *     file (no write bit, or not writable by this user) is refused, not
 *     replaced.
 *   - a character device or a FIFO (/dev/null, a named pipe, /dev/stdout on
 *     a pipe or terminal): written in place, never created, truncated or
 *     replaced; a write error is reported (ENOSPC on /dev/full).  No sidecar
 *     is written beside it (lnk_meta_write skips it; there is no NAME.json
 *     for /dev/null).
 *   - a symbolic link: followed.  The link stays, the file it leads to is
 *     written as above (a dangling link: its target is created).
 *   - a folder, a block device or a socket: refused.
 *
 * Group commit.  The outputs of one command (a CSV, its sidecar, vectors,
 * vocabularies) appear together or not at all: between
 * lnk_output_group_begin() and lnk_output_group_commit(), lnk_afile_commit
 * writes and syncs the temporary file but defers its rename; the group
 * commit renames them all in one critical section (no fatal signal can cut
 * it; each rename replaces a file by exchanging it, so a failed rename puts
 * the old files back); lnk_output_group_abort(), a failure, exit() or a fatal
 * signal removes them all.  (Devices and FIFOs are written as they come:
 * what went to them cannot be taken back.)
 *
 * Signals.  Temporary files are removed if the process ends by SIGTERM,
 * SIGINT, SIGHUP or SIGPIPE (the handlers, installed by lnk_output_init, at
 * the latest with the first output file, leave a signal alone that the
 * program ignores or handles itself) and by exit().  A temporary file is
 * created and listed in one critical section, so none can escape the
 * clean-up.  SIGKILL cannot be caught: it leaves PATH.tmp.XXXXXX files.
 *
 * Inputs read whole (text: configurations, texts, vocabularies, CSV) have a
 * size limit: a regular file above it is refused before it is read, a FIFO
 * or device is read up to it, and a NUL byte stops the read at once with its
 * byte offset.  Configurations: LNK_CONFIG_LIMIT (16 MiB); the others:
 * lnk_input_limit(), 1 GiB unless set (lnkit batch --max-input SIZE).
 * Safetensors files are read in order, a tensor at a time: their header is
 * at most LNK_ST_HEADER_LIMIT bytes and every tensor lies within the file
 * (safetensors.h).  Every input is read once (lnk_input below): a FIFO or
 * process substitution works as a regular file does, and the size and
 * SHA-256 a sidecar records are those of the bytes used.
 */
#ifndef LNKIT_SYS_H
#define LNKIT_SYS_H

#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include "lnkit/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LNK_VERSION "0.1.0"
/* LNK_VERSION of the library linked (may differ from the header's). */
const char *lnk_version(void);

typedef struct {
    FILE *f;       /* write here */
    char *path;    /* the name given */
    char *tmp;     /* temporary name (NULL for a device or FIFO) */
    char *final;   /* the regular file renamed over (links followed) */
    int stream;    /* 1: a device or FIFO, written in place */
    int fd;
    void *ck;
} lnk_afile;

/* Open path for writing (see above); checks it first (lnk_output_check). */
int lnk_afile_open(lnk_afile *a, const char *path);
/* Flush, sync, close and rename over path (in a group: rename at the group
 * commit); on any error remove the temporary file.  The message names path. */
int lnk_afile_commit(lnk_afile *a);
/* Close and remove the temporary file (safe to call twice or after commit). */
void lnk_afile_abort(lnk_afile *a);

/* Group commit of several outputs (see above).  One group at a time. */
int lnk_output_group_begin(void);
int lnk_output_group_commit(void);
void lnk_output_group_abort(void);
/* Remove every temporary file of this process now (before exiting on an error). */
void lnk_output_abort_all(void);
/* Install the signal handlers and the clean-up at exit (programs call it at
 * start-up; lnk_afile_open calls it too).  Idempotent. */
void lnk_output_init(void);

enum { LNK_OUT_FILE = 0, LNK_OUT_STREAM = 1 };
/* Could path be written as an output?  Checked without creating anything:
 * its folder exists and is writable, it is not a folder, block device,
 * socket or read-only file.  *kind (may be NULL): LNK_OUT_FILE or
 * LNK_OUT_STREAM.  The message names the path and the problem. */
int lnk_output_check(const char *path, int *kind);
/* LNK_OUT_STREAM if path is now a character device or FIFO, else LNK_OUT_FILE. */
int lnk_output_kind(const char *path);
/* 1 if the two paths lead to the same file (existing: same inode; new: same
 * folder and name). */
int lnk_output_same(const char *a, const char *b);
/* The path of an open lnk_afile's FILE* ("standard output" for stdout), for messages. */
const char *lnk_output_name(const FILE *f);

/* Size limits of inputs read whole (see above). */
#define LNK_CONFIG_LIMIT ((size_t)16 << 20)
#define LNK_INPUT_LIMIT_DEFAULT ((size_t)1 << 30)
size_t lnk_input_limit(void);
/* Set the limit of texts, vocabularies and CSV inputs (0: the default). */
void lnk_set_input_limit(size_t bytes);
/* An input read once, in order, from its start: a regular file, a FIFO, a
 * pipe (/dev/fd/N of process substitution) or a device; its bytes are
 * hashed as they come, so the digest (lnk_input_close) is the size and
 * SHA-256 of the bytes the reader used (provenance.h).  lnk_input_open
 * refuses a folder, and under mpirun (several ranks, each reading its
 * inputs) anything but a regular file; what names the kind of file in
 * messages ("safetensors file").  lnk_input_read reads up to n bytes (fewer
 * only at the end); lnk_input_read_alloc reads up to n bytes into a new
 * buffer with room for n + 1 (a NUL), which for a stream grows with the
 * bytes that come (a size read from a header bounds nothing there).
 * Errors name the file. */
typedef struct {
    int fd;
    const char *path;
    int regular;       /* 1: a regular file, size is its size */
    uint64_t size;
    const char *kind;  /* "a file", "a FIFO", "a device" */
    lnk_sha256 sha;
} lnk_input;
int lnk_input_open(lnk_input *in, const char *path, const char *what);
int lnk_input_read(lnk_input *in, void *buf, size_t n, size_t *got);
int lnk_input_read_alloc(lnk_input *in, size_t n, void **buf, size_t *got);
/* Close; d (may be NULL) gets the digest of the bytes read. */
void lnk_input_close(lnk_input *in, lnk_digest *d);

/* Read a whole text file of at most max bytes into a malloc'd buffer (caller
 * frees), NUL-terminated; *len (may be NULL) gets its length and *d (may be
 * NULL) the size and SHA-256 of the bytes read.  A NUL byte in the file is
 * an error (its byte offset and line).  what names the kind of file in
 * messages ("configuration").  Errors name the file. */
int lnk_read_input(const char *path, size_t max, const char *what, char **buf, size_t *len,
                   lnk_digest *d);
/* lnk_read_input without the digest. */
int lnk_read_text_file(const char *path, size_t max, const char *what, char **buf, size_t *len);
/* lnk_read_input with lnk_input_limit() and no digest. */
int lnk_read_file(const char *path, char **buf, size_t *len);

/* Wall-clock seconds since an arbitrary origin (monotonic). */
double lnk_now(void);

/* Current UTC time as ISO 8601 in buf (at least 32 bytes). */
void lnk_iso_time(char *buf, size_t n);
/* 1 if s is an ISO 8601 time YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM) of
 * the calendar (the month's days, 29 February in leap years only; fields in
 * range, second 60 a leap second at 23:59 only), as a sidecar's start_time
 * must be; 0 if not (or NULL). */
int lnk_iso_time_valid(const char *s);

/* Number of BLAS threads in use. */
int lnk_blas_threads(void);
/* Set the number of BLAS threads (n >= 1). */
void lnk_set_blas_threads(int n);

#ifdef __cplusplus
}
#endif
#endif
