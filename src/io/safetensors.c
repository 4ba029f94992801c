/* safetensors files: the validating reader (header parsing, offsets, data)
 * and the file's accessors; the writer is st_write.c, the model-aware
 * helpers for weights, vectors and batches (MODEL.md §6, §8) st_model.c.
 * See include/lnkit/safetensors.h for the format and the checks. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "io/st_internal.h"
#include "lnkit/error.h"
#include "lnkit/io.h"
#include "lnkit/memory.h"
#include "lnkit/safetensors.h"

void lnk_st_swap8(void *p, size_t n)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++, b += 8)
        for (int k = 0; k < 4; k++) {
            unsigned char t = b[k];
            b[k] = b[7 - k];
            b[7 - k] = t;
        }
}

const char *lnk_st_dtype_name(lnk_dtype d) { return d == LNK_DT_F64 ? "F64" : "I64"; }

const char *lnk_st_fmt_shape(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* Offset of the first byte that is not valid UTF-8 (overlongs, surrogates and
 * code points above U+10FFFF are invalid), or -1 if all is valid. */
static long utf8_bad(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cp, min;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return (long)i;
        if (i + len > n)
            return (long)i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return (long)i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return (long)i;
        i += len;
    }
    return -1;
}

void lnk_st_free(lnk_st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        free(f->t[i].name);
        free(f->t[i].data);
    }
    free(f->t);
    for (int i = 0; i < 2 * f->n_meta; i++)
        free(f->meta[i]);
    free(f->meta);
    free(f->path);
    free(f);
}

const lnk_st_tensor *lnk_st_get(const lnk_st_file *f, const char *name)
{
    for (int i = 0; f && i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}

const char *lnk_st_meta(const lnk_st_file *f, const char *key)
{
    for (int i = 0; f && key && i < f->n_meta; i++)
        if (strcmp(f->meta[2 * i], key) == 0)
            return f->meta[2 * i + 1];
    return NULL;
}

/* ------------------------------------------------------------------ reading */

/* A header entry before the data are read. */
typedef struct {
    uint64_t begin, end;
} span;

/* A JSON value that is a non-negative integer. */
static int json_nonneg(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Fill t (name, dtype, shape, numel) and s (offsets) from one header entry.
 * buflen is the size of the data buffer. */
static int parse_entry(const char *path, const char *name, json_t *e, uint64_t buflen,
                       lnk_st_tensor *t, span *s)
{
    if (!json_is_object(e))
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': entry is %s, expected an object "
                         "with dtype, shape and data_offsets", path, name, json_kind(e));
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) {
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
            return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': unknown key '%.60s' (expected "
                             "exactly dtype, shape, data_offsets)", path, name, k);
    }
    static const char *const need[3] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(e, need[i]))
            return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': missing key '%s'", path, name, need[i]);

    /* dtype */
    json_t *dt = json_object_get(e, "dtype");
    if (!json_is_string(dt))
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': dtype is %s, expected a string "
                         "\"F64\" or \"I64\"", path, name, json_kind(dt));
    const char *ds = json_string_value(dt);
    if (strcmp(ds, "F64") == 0)
        t->dtype = LNK_DT_F64;
    else if (strcmp(ds, "I64") == 0)
        t->dtype = LNK_DT_I64;
    else {
        static const char *const known[] = {"BOOL", "U8", "I8", "U16", "I16", "F16", "BF16",
                                            "U32", "I32", "F32", "U64", "F8_E4M3", "F8_E5M2",
                                            "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", NULL};
        int isknown = 0;
        for (int i = 0; known[i]; i++)
            isknown |= strcmp(ds, known[i]) == 0;
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': %s dtype '%.40s', expected F64 or I64",
                         path, name, isknown ? "unsupported" : "unknown", ds);
    }

    /* shape */
    json_t *sh = json_object_get(e, "shape");
    if (!json_is_array(sh))
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': shape is %s, expected a list of "
                         "non-negative integers", path, name, json_kind(sh));
    size_t nd = json_array_size(sh);
    if (nd > LNK_ST_MAXDIM)
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': shape has %zu dimensions, at most %d "
                         "supported", path, name, nd, LNK_ST_MAXDIM);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    int overflow = 0;
    for (size_t i = 0; i < nd; i++) {
        uint64_t d;
        json_t *x = json_array_get(sh, i);
        if (!json_nonneg(x, &d)) {
            if (json_is_integer(x))
                return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': shape[%zu] = %lld is negative",
                                 path, name, i, (long long)json_integer_value(x));
            return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': shape[%zu] is %s, expected a "
                             "non-negative integer", path, name, i, json_kind(x));
        }
        t->shape[i] = (int64_t)d;
        if (d && numel > (uint64_t)(SIZE_MAX / 8) / d)
            overflow = 1; /* keep going: a later 0 makes it empty */
        numel *= d;
    }
    char shs[160];
    int has0 = 0;
    for (size_t i = 0; i < nd; i++)
        has0 |= t->shape[i] == 0;
    if (has0)
        numel = 0;
    else if (overflow)
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': shape %s has too many elements",
                         path, name, lnk_st_fmt_shape(shs, sizeof shs, t->shape, t->ndim));
    t->numel = (size_t)numel;

    /* data_offsets */
    json_t *off = json_object_get(e, "data_offsets");
    if (!json_is_array(off) || json_array_size(off) != 2 ||
        !json_nonneg(json_array_get(off, 0), &s->begin) ||
        !json_nonneg(json_array_get(off, 1), &s->end))
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': data_offsets must be a list of two "
                         "non-negative integers [begin, end]", path, name);
    if (s->begin > s->end)
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': data_offsets [%llu, %llu] are reversed "
                         "(begin > end)", path, name, (unsigned long long)s->begin,
                         (unsigned long long)s->end);
    uint64_t need_bytes = numel * 8;
    if (s->end - s->begin != need_bytes)
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': data_offsets [%llu, %llu] hold %llu bytes "
                         "but shape %s of %s needs %llu", path, name, (unsigned long long)s->begin,
                         (unsigned long long)s->end, (unsigned long long)(s->end - s->begin),
                         lnk_st_fmt_shape(shs, sizeof shs, t->shape, t->ndim), lnk_st_dtype_name(t->dtype),
                         (unsigned long long)need_bytes);
    if (s->end > buflen)
        return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "': data_offsets [%llu, %llu] go beyond the "
                         "data buffer of %llu bytes (file truncated?)", path, name, (unsigned long long)s->begin,
                         (unsigned long long)s->end, (unsigned long long)buflen);
    return LNK_OK;
}

static int check_metadata(const char *path, json_t *md)
{
    if (!json_is_object(md))
        return lnk_error(LNK_EFORMAT, "%s: '__metadata__' is %s, expected an object of strings",
                         path, json_kind(md));
    const char *k;
    json_t *v;
    json_object_foreach(md, k, v) {
        if (!json_is_string(v))
            return lnk_error(LNK_EFORMAT, "%s: '__metadata__' key '" NM "' is %s, expected a string",
                             path, k, json_kind(v));
    }
    return LNK_OK;
}

/* Sort tensors by data offset (ties: the empty one first). */
typedef struct {
    lnk_st_tensor t;
    span s;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->s.begin != y->s.begin)
        return x->s.begin < y->s.begin ? -1 : 1;
    if (x->s.end != y->s.end)
        return x->s.end < y->s.end ? -1 : 1;
    return 0;
}

/* The 8-byte length and the header's bytes (NUL-terminated, UTF-8 checked)
 * into *hdr (malloc'd), its length into *hlen. */
static int read_header(lnk_input *in, const char *path, char **hdr, uint64_t *hlen)
{
    *hdr = NULL;
    /* a stream's size is known at its end: the checks against it come then */
    uint64_t fsize = in->regular ? in->size : UINT64_MAX;
    if (in->regular && fsize < 8)
        return lnk_error(LNK_EFORMAT, "%s: file is %llu bytes, too short for the 8-byte header "
                         "length", path, (unsigned long long)fsize);
    unsigned char len8[8];
    size_t got;
    int st = lnk_input_read(in, len8, 8, &got);
    if (st != LNK_OK)
        return st;
    if (got != 8)
        return in->regular ? lnk_error(LNK_EIO, "%s: short read of the header length", path)
                           : lnk_error(LNK_EFORMAT, "%s: %s of %zu bytes, too short for the "
                                       "8-byte header length", path, in->kind, got);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | len8[i];
    if (n > fsize - 8)
        return lnk_error(LNK_EFORMAT, "%s: header length %llu goes beyond the end of the file "
                         "(%llu bytes after the length field)", path, (unsigned long long)n,
                         (unsigned long long)(fsize - 8));
    if (n > LNK_ST_HEADER_LIMIT)
        return lnk_error(LNK_EFORMAT, "%s: header length %llu is larger than the limit of %d "
                         "bytes", path, (unsigned long long)n, LNK_ST_HEADER_LIMIT);
    void *hv;
    if ((st = lnk_input_read_alloc(in, (size_t)n, &hv, &got)) != LNK_OK)
        return st;
    char *h = hv;
    if (got < n) {
        free(h);
        return in->regular ? lnk_error(LNK_EIO, "%s: short read of the %llu-byte header", path,
                                       (unsigned long long)n)
                           : lnk_error(LNK_EFORMAT, "%s: header length %llu goes beyond the end "
                                       "of %s (%zu bytes after the length field)", path,
                                       (unsigned long long)n, in->kind, got);
    }
    h[n] = '\0';
    long bad = utf8_bad((const unsigned char *)h, (size_t)n);
    if (bad >= 0) {
        st = lnk_error(LNK_EFORMAT, "%s: header is not valid UTF-8 (byte 0x%02x at header offset "
                       "%ld)", path, (unsigned char)h[bad], bad);
        free(h);
        return st;
    }
    *hdr = h;
    *hlen = n;
    return LNK_OK;
}

/* The header's JSON into *root and its tensors into ent (calloc'd, *n of
 * them named; buflen bounds their offsets). */
static int parse_header(const char *path, const char *hdr, uint64_t hlen, uint64_t buflen,
                        json_t **root, entry **ent, int *n)
{
    /* Trailing spaces (the writers' padding) are accepted as JSON whitespace. */
    json_error_t jerr;
    *root = json_loadb(hdr, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!*root) {
        if (json_error_code(&jerr) == json_error_duplicate_key)
            return lnk_error(LNK_EFORMAT, "%s: duplicate tensor name in the header: %s (line %d, "
                             "column %d)", path, jerr.text, jerr.line, jerr.column);
        return lnk_error(LNK_EFORMAT, "%s: header is not valid JSON: %s (line %d, column %d)",
                         path, jerr.text, jerr.line, jerr.column);
    }
    if (!json_is_object(*root))
        return lnk_error(LNK_EFORMAT, "%s: header is %s, expected a JSON object", path,
                         json_kind(*root));
    size_t nkeys = json_object_size(*root);
    entry *e = *ent = calloc(nkeys ? nkeys : 1, sizeof *e);
    if (!e)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    const char *key;
    json_t *val;
    int st;
    json_object_foreach(*root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((st = check_metadata(path, val)) != LNK_OK)
                return st;
            continue;
        }
        if ((st = parse_entry(path, key, val, buflen, &e[*n].t, &e[*n].s)) != LNK_OK)
            return st;
        if (!(e[*n].t.name = strdup(key)))
            return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
        (*n)++;
    }
    if (*n > INT_MAX - 1)
        return lnk_error(LNK_EFORMAT, "%s: too many tensors", path);
    return LNK_OK;
}

/* Sorted by offset, the tensors must tile [0, buflen) exactly (a stream's
 * end is checked after its data); *at: the bytes they cover. */
static int check_tiling(const char *path, entry *ent, int n, uint64_t buflen, int regular,
                        uint64_t *at)
{
    qsort(ent, (size_t)n, sizeof *ent, cmp_entry);
    uint64_t a = 0;
    for (int i = 0; i < n; i++) {
        if (ent[i].s.begin < a)
            return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "' (data_offsets [%llu, %llu]) "
                             "overlaps tensor '" NM "' (ending at %llu)", path, ent[i].t.name,
                             (unsigned long long)ent[i].s.begin, (unsigned long long)ent[i].s.end,
                             ent[i - 1].t.name, (unsigned long long)a);
        if (ent[i].s.begin > a)
            return lnk_error(LNK_EFORMAT, "%s: tensor '" NM "' starts at data offset %llu, "
                             "leaving a gap of %llu bytes after %s%s%s", path, ent[i].t.name,
                             (unsigned long long)ent[i].s.begin,
                             (unsigned long long)(ent[i].s.begin - a),
                             i ? "tensor '" : "the start of the buffer",
                             i ? ent[i - 1].t.name : "", i ? "'" : "");
        a = ent[i].s.end;
    }
    *at = a;
    if (regular && a != buflen)
        return lnk_error(LNK_EFORMAT, "%s: %llu trailing bytes after the last tensor%s" NM "%s "
                         "(data buffer is %llu bytes, tensors cover %llu)", path,
                         (unsigned long long)(buflen - a), n ? " '" : "",
                         n ? ent[n - 1].t.name : "", n ? "'" : "", (unsigned long long)buflen,
                         (unsigned long long)a);
    /* A stream's tensors are bounded by nothing but its header: they must
     * fit this process's memory (a regular file's are bounded by its size). */
    if (!regular && a > lnk_memory_available()) {
        char h[32];
        return lnk_error(LNK_ENOMEM, "%s: the tensors of its header need %llu bytes, more than "
                         "the %s this process may use", path, (unsigned long long)a,
                         lnk_bytes_str(lnk_memory_available(), h, sizeof h));
    }
    return LNK_OK;
}

/* The tensors' data, contiguous in offset order, read in sequence; a stream
 * must end after the last one. */
static int read_data(lnk_input *in, const char *path, entry *ent, int n, uint64_t at)
{
    size_t got;
    int st;
    for (int i = 0; i < n; i++) {
        size_t bytes = ent[i].t.numel * 8;
        if ((st = lnk_input_read_alloc(in, bytes, &ent[i].t.data, &got)) != LNK_OK) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            return lnk_error(st, "%s (tensor '" NM "')", msg, ent[i].t.name);
        }
        if (got != bytes)
            return lnk_error(in->regular ? LNK_EIO : LNK_EFORMAT, "%s: tensor '" NM "': short "
                             "read of %zu bytes (%s)", path, ent[i].t.name, bytes,
                             in->regular ? "file shrank" : "the stream ended");
        if (LNK_HOST_BE)
            lnk_st_swap8(ent[i].t.data, ent[i].t.numel);
    }
    if (in->regular)
        return LNK_OK;
    unsigned char extra;
    if ((st = lnk_input_read(in, &extra, 1, &got)) != LNK_OK)
        return st;
    if (got)
        return lnk_error(LNK_EFORMAT, "%s: trailing bytes after the last tensor%s" NM "%s "
                         "(tensors cover %llu bytes of data)", path, n ? " '" : "",
                         n ? ent[n - 1].t.name : "", n ? "'" : "", (unsigned long long)at);
    return LNK_OK;
}

/* The file of the n tensors of ent (taken over: *n becomes 0) and the
 * header's metadata. */
static int make_file(const char *path, const json_t *root, entry *ent, int *n, lnk_st_file **out)
{
    lnk_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path)) || !(f->t = calloc(*n ? (size_t)*n : 1, sizeof *f->t))) {
        lnk_st_free(f);
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    }
    const json_t *md = json_object_get(root, "__metadata__");
    if (md && json_object_size(md) > 0) {
        if (!(f->meta = calloc(2 * json_object_size(md), sizeof *f->meta))) {
            lnk_st_free(f);
            return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
        }
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)md, key, val) {
            int i = f->n_meta;
            f->meta[2 * i] = strdup(key);
            f->meta[2 * i + 1] = strdup(json_string_value(val));
            f->n_meta++;
            if (!f->meta[2 * i] || !f->meta[2 * i + 1]) {
                lnk_st_free(f);
                return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
            }
        }
    }
    for (int i = 0; i < *n; i++)
        f->t[i] = ent[i].t;
    f->n = *n;
    *n = 0; /* ownership moved to f */
    *out = f;
    return LNK_OK;
}

int lnk_st_read(const char *path, lnk_st_file **out)
{
    *out = NULL;
    char *hdr = NULL;
    json_t *root = NULL;
    entry *ent = NULL;
    int n = 0;
    uint64_t hlen = 0, at = 0;
    /* read once, in order (a FIFO or pipe too), hashing as it goes: the
     * digest is that of the bytes used (provenance.h) */
    lnk_input in;
    int st = lnk_input_open(&in, path, "safetensors file");
    if (st != LNK_OK)
        return st;
    st = read_header(&in, path, &hdr, &hlen);
    uint64_t buflen = in.regular ? in.size - 8 - hlen : UINT64_MAX;
    if (st == LNK_OK)
        st = parse_header(path, hdr, hlen, buflen, &root, &ent, &n);
    if (st == LNK_OK)
        st = check_tiling(path, ent, n, buflen, in.regular, &at);
    if (st == LNK_OK)
        st = read_data(&in, path, ent, n, at);
    if (st == LNK_OK && (st = make_file(path, root, ent, &n, out)) == LNK_OK)
        lnk_input_close(&in, &(*out)->digest);
    if (ent) {
        /* parse_entry may have failed after filling ent[n] without a name: n counts named ones */
        for (int i = 0; i < n; i++) {
            free(ent[i].t.name);
            free(ent[i].t.data);
        }
        free(ent);
    }
    json_decref(root);
    free(hdr);
    lnk_input_close(&in, NULL);
    return st;
}
