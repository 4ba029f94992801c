/* Shared helpers of the study programs (each study is one .c file):
 * errors that name the program and remove unfinished outputs, flag parsing,
 * output directories.  Call study_init(name) first in main. */
#ifndef LNK_STUDY_H
#define LNK_STUDY_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lnkit/lnkit.h"

static const char *study_name = "study";
/* Output files being written: removed if the study fails. */
static lnk_afile *study_files[32];
static int study_n_files;

static inline void study_init(const char *name) { study_name = name; }

static inline void study_track(lnk_afile *a)
{
    if (study_n_files < 32)
        study_files[study_n_files++] = a;
}

static inline void study_untrack(lnk_afile *a)
{
    for (int i = 0; i < study_n_files; i++)
        if (study_files[i] == a)
            study_files[i] = study_files[--study_n_files];
}

/* "NAME: message" on stderr, remove unfinished outputs, exit 2. */
static inline _Noreturn __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", study_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    for (int i = 0; i < study_n_files; i++)
        lnk_afile_abort(study_files[i]);
    exit(2);
}

/* Fail with the library's last message. */
static inline _Noreturn void die(void) { fail("%s", lnk_errmsg()); }

#define CK(x)                                                                                     \
    do {                                                                                          \
        if ((x) != LNK_OK)                                                                        \
            die();                                                                                \
    } while (0)

/* Integer flag value in [min, max] or fail naming the flag. */
static inline long arg_int(const char *name, const char *s, long min, long max)
{
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (*s == '\0' || *e || errno || v < min || v > max)
        fail("--%s: expected an integer in [%ld, %ld], got '%s'", name, min, max, s);
    return v;
}

/* Finite number flag value in [min, max] or fail naming the flag. */
static inline double arg_num(const char *name, const char *s, double min, double max)
{
    char *e;
    double v = strtod(s, &e);
    if (*s == '\0' || *e || !isfinite(v) || v < min || v > max)
        fail("--%s: expected a number in [%g, %g], got '%s'", name, min, max, s);
    return v;
}

/* mkdir -p dir, or fail. */
static inline void make_dir(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (strlen(dir) > 1000 || strchr(dir, '\'') || system(cmd) != 0)
        fail("cannot create directory '%s'", dir);
}

/* A study's CSV output: written to a temporary file (removed if the study
 * fails), committed with its .meta.json sidecar by study_csv_close. */
typedef struct {
    lnk_afile a;
    lnk_csv c;
    char path[1024];
} out_csv;

static inline void csv_open(out_csv *o, const char *dir, const char *name,
                            const char *const *hdr, int n)
{
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    CK(lnk_afile_open(&o->a, o->path));
    study_track(&o->a);
    CK(lnk_csv_begin(&o->c, o->a.f, hdr, n));
}

static inline void csv_close(out_csv *o, const lnk_config *c, const char *extra,
                             const char *start, double t0)
{
    lnk_csv_free(&o->c);
    study_untrack(&o->a);
    CK(lnk_afile_commit(&o->a));
    CK(lnk_meta_write(o->path, c, extra, start, lnk_now() - t0));
}

#endif
