/* A checkpoint's identity (include/lnkit/checkpoint.h): the named items a
 * resumed run must match -- settings, input digests, and the environment
 * items that fix the rounding (BLAS kernel, library, threads, lnkit build). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include "lnkit/blas.h"
#include "lnkit/checkpoint.h"
#include "lnkit/error.h"
#include "lnkit/provenance.h"
#include "lnkit/sha256.h"
#include "lnkit/sys.h"

static int id_vadd(lnk_ckpt_id *id, int env, const char *name, const char *fmt, va_list ap)
{
    if (id->n == id->cap) {
        int nc = id->cap ? 2 * id->cap : 16;
        char **a = realloc(id->name, sizeof *a * (size_t)nc);
        if (a)
            id->name = a;
        char **b = a ? realloc(id->value, sizeof *b * (size_t)nc) : NULL;
        if (b)
            id->value = b;
        unsigned char *e = b ? realloc(id->env, (size_t)nc) : NULL;
        if (!e)
            return lnk_error(LNK_ENOMEM, "checkpoint: out of memory");
        id->env = e;
        id->cap = nc;
    }
    char *v = NULL;
    int r = vasprintf(&v, fmt, ap);
    char *nm = strdup(name);
    if (r < 0 || !nm) {
        free(nm);
        if (r >= 0)
            free(v);
        return lnk_error(LNK_ENOMEM, "checkpoint: out of memory");
    }
    id->name[id->n] = nm;
    id->env[id->n] = (unsigned char)env;
    id->value[id->n++] = v;
    return LNK_OK;
}

int lnk_ckpt_id_add(lnk_ckpt_id *id, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = id_vadd(id, 0, name, fmt, ap);
    va_end(ap);
    return rc;
}

int lnk_ckpt_id_add_env(lnk_ckpt_id *id, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = id_vadd(id, 1, name, fmt, ap);
    va_end(ap);
    return rc;
}

/* OpenBLAS's version and build options, without the kernel in use (which
 * DYNAMIC_ARCH builds append; it is an item of its own). */
static void blas_library(char *buf, size_t n)
{
    const char *c = openblas_get_config(), *k = lnk_blas_kernel();
    snprintf(buf, n, "%s", c ? c : "unknown");
    char *at = strstr(buf, k);
    size_t lk = strlen(k);
    if (*k && at && at > buf && at[-1] == ' ' && (at[lk] == ' ' || !at[lk]))
        memmove(at - 1, at + lk, strlen(at + lk) + 1);
}

int lnk_ckpt_id_add_build(lnk_ckpt_id *id)
{
    char blas[256];
    blas_library(blas, sizeof blas);
    int rc = lnk_ckpt_id_add_env(id, "the BLAS kernel", "%s", lnk_blas_kernel());
    rc = rc ? rc : lnk_ckpt_id_add_env(id, "the BLAS library", "%s", blas);
    rc = rc ? rc : lnk_ckpt_id_add_env(id, "the BLAS thread count (--threads)", "%d",
                                       lnk_blas_threads());
    return rc ? rc : lnk_ckpt_id_add_env(id, "the lnkit build", "%s %s", LNK_VERSION,
                                         lnk_git_commit());
}

int lnk_ckpt_id_add_file(lnk_ckpt_id *id, const char *name, const char *path)
{
    char hex[65];
    int rc = lnk_sha256_file(path, hex, NULL);
    return rc != LNK_OK ? rc : lnk_ckpt_id_add(id, name, "%s", hex);
}

void lnk_ckpt_id_free(lnk_ckpt_id *id)
{
    for (int i = 0; i < id->n; i++)
        free(id->name[i]), free(id->value[i]);
    free(id->name);
    free(id->value);
    free(id->env);
    memset(id, 0, sizeof *id);
}
