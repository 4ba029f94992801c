/* safetensors files: the atomic writer (include/lnkit/safetensors.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/st_internal.h"
#include "lnkit/error.h"
#include "lnkit/safetensors.h"
#include "lnkit/sys.h"

/* Little-endian bytes of n 8-byte values. */
static int write_le8(FILE *f, const void *data, size_t n)
{
    if (n == 0)
        return 0;
    if (!LNK_HOST_BE)
        return fwrite(data, 8, n, f) == n ? 0 : -1;
    unsigned char buf[8 * 512];
    const unsigned char *p = data;
    while (n) {
        size_t k = n < 512 ? n : 512;
        memcpy(buf, p, k * 8);
        lnk_st_swap8(buf, k);
        if (fwrite(buf, 8, k, f) != k)
            return -1;
        p += k * 8;
        n -= k;
    }
    return 0;
}

int lnk_st_write(const char *path, const lnk_st_tensor *t, int n, const char *const *metadata)
{
    if (n < 0 || (n > 0 && !t))
        return lnk_error(LNK_EINVAL, "%s: invalid tensor list (n = %d)", path, n);
    int st = LNK_OK;
    char *text = NULL;
    json_t *root = json_object();
    if (!root)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);

    if (metadata) {
        json_t *md = json_object();
        if (!md || json_object_set_new(root, "__metadata__", md) != 0) {
            st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
            goto done;
        }
        for (int i = 0; metadata[i]; i += 2) {
            if (!metadata[i + 1]) {
                st = lnk_error(LNK_EINVAL, "%s: metadata key '" NM "' has no value", path, metadata[i]);
                goto done;
            }
            json_t *s = json_string(metadata[i + 1]);
            if (!s || json_object_set_new(md, metadata[i], s) != 0) {
                st = lnk_error(LNK_EINVAL, "%s: metadata key '" NM "': not valid UTF-8", path, metadata[i]);
                goto done;
            }
        }
    }

    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const lnk_st_tensor *x = &t[i];
        const char *name = x->name ? x->name : "";
        if (!name[0] || strcmp(name, "__metadata__") == 0)
            st = lnk_error(LNK_EINVAL, "%s: tensor %d has an invalid name '" NM "'", path, i, name);
        else if (json_object_get(root, name))
            st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "' appears twice", path, name);
        else if (x->dtype != LNK_DT_F64 && x->dtype != LNK_DT_I64)
            st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "': invalid dtype %d", path, name, (int)x->dtype);
        else if (x->ndim < 0 || x->ndim > LNK_ST_MAXDIM)
            st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "': %d dimensions, expected 0..%d", path, name,
                           x->ndim, LNK_ST_MAXDIM);
        if (st)
            goto done;
        uint64_t numel = 1;
        int has0 = 0, overflow = 0;
        json_t *shape = json_array();
        if (!shape) {
            st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
            goto done;
        }
        for (int k = 0; k < x->ndim; k++) {
            if (x->shape[k] < 0) {
                json_decref(shape);
                st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "': shape[%d] = %lld is negative", path,
                               name, k, (long long)x->shape[k]);
                goto done;
            }
            uint64_t d = (uint64_t)x->shape[k];
            has0 |= d == 0;
            if (d && numel > (uint64_t)(SIZE_MAX / 8) / d)
                overflow = 1;
            numel *= d;
            json_array_append_new(shape, json_integer(x->shape[k]));
        }
        if (has0)
            numel = 0;
        if ((overflow && !has0) || numel != (uint64_t)x->numel || (numel && !x->data)) {
            json_decref(shape);
            char shs[160];
            st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "': numel %zu (data %s) does not match shape %s",
                           path, name, x->numel, x->data ? "given" : "NULL",
                           lnk_st_fmt_shape(shs, sizeof shs, x->shape, x->ndim));
            goto done;
        }
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", lnk_st_dtype_name(x->dtype), "shape", shape,
                              "data_offsets", (json_int_t)at, (json_int_t)(at + numel * 8));
        if (!e || json_object_set_new(root, name, e) != 0) {
            st = lnk_error(LNK_EINVAL, "%s: tensor '" NM "': cannot build the header entry (name not "
                           "valid UTF-8?)", path, name);
            goto done;
        }
        at += numel * 8;
    }

    text = json_dumps(root, JSON_COMPACT);
    if (!text) {
        st = lnk_error(LNK_ENOMEM, "%s: cannot serialise the header", path);
        goto done;
    }
    /* Pad with spaces so that 8 + N is a multiple of 8: the data start aligned. */
    size_t hl = strlen(text), pad = (8 - hl % 8) % 8;
    unsigned char len8[8];
    uint64_t N = hl + pad;
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)(N >> (8 * i));

    lnk_afile a;
    if ((st = lnk_afile_open(&a, path)) != LNK_OK)
        goto done;
    int bad = fwrite(len8, 1, 8, a.f) != 8 || fwrite(text, 1, hl, a.f) != hl;
    for (size_t i = 0; i < pad && !bad; i++)
        bad = fputc(' ', a.f) == EOF;
    for (int i = 0; i < n && !bad; i++)
        bad = write_le8(a.f, t[i].data, t[i].numel) != 0;
    if (bad) {
        int e = errno;
        lnk_afile_abort(&a);
        st = lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
        goto done;
    }
    st = lnk_afile_commit(&a);
done:
    free(text);
    json_decref(root);
    return st;
}
