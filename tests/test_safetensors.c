/* safetensors: round trips, header padding and a corpus of corrupt files
 * (each a specific corruption of a valid file); the model-aware loaders are
 * test_st_model. */
#include "testutil.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ helpers */

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!contains(lnk_errmsg(), (s)))                                                   \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* A file split into its parts: the header JSON text and the data buffer. */
typedef struct {
    char *hdr;            /* header text as found (with padding), NUL-terminated */
    size_t hlen;
    unsigned char *data;
    size_t dlen;
} raw_file;

static raw_file raw_read(const char *path)
{
    size_t n;
    unsigned char *b = (unsigned char *)tu_read_file(path, &n);
    assert_non_null(b);
    assert_true(n >= 8);
    raw_file r;
    r.hlen = (size_t)le64(b);
    assert_true(r.hlen <= n - 8);
    r.hdr = malloc(r.hlen + 1);
    memcpy(r.hdr, b + 8, r.hlen);
    r.hdr[r.hlen] = '\0';
    r.dlen = n - 8 - r.hlen;
    r.data = malloc(r.dlen + 1);
    memcpy(r.data, b + 8 + r.hlen, r.dlen);
    free(b);
    return r;
}

static void raw_free(raw_file *r)
{
    free(r->hdr);
    free(r->data);
}

/* Assemble length field + header text + data bytes into a file. */
static void raw_write(const char *path, const char *hdr, size_t hlen, const void *data, size_t dlen)
{
    size_t n = 8 + hlen + dlen;
    unsigned char *b = malloc(n + 1);
    put_le64(b, hlen);
    memcpy(b + 8, hdr, hlen);
    if (dlen)
        memcpy(b + 8 + hlen, data, dlen);
    tu_write_file(path, b, n);
    free(b);
}

/* ----------------------------------------------------------- round trips */

static void test_roundtrip(void **state)
{
    (void)state;
    double a[12], scalar[1] = {-0.0}, empty[1];
    int64_t ids[5] = {0, 1, -7, INT64_MAX, INT64_MIN};
    int64_t none[1];
    tu_randn(a, 12, 1);
    a[3] = 4.9e-324;      /* denormal */
    a[4] = -1e308;
    a[5] = NAN;           /* the container writes what it is given */
    lnk_st_tensor t[] = {
        {.name = "mat", .dtype = LNK_DT_F64, .ndim = 2, .shape = {3, 4}, .numel = 12, .data = a},
        {.name = "ids", .dtype = LNK_DT_I64, .ndim = 1, .shape = {5}, .numel = 5, .data = ids},
        {.name = "scalar", .dtype = LNK_DT_F64, .ndim = 0, .numel = 1, .data = scalar},
        {.name = "empty", .dtype = LNK_DT_F64, .ndim = 2, .shape = {0, 3}, .numel = 0, .data = empty},
        {.name = "empty_i", .dtype = LNK_DT_I64, .ndim = 3, .shape = {2, 0, 2}, .numel = 0, .data = none},
        {.name = "dec.0.attn.wq", .dtype = LNK_DT_F64, .ndim = 1, .shape = {2}, .numel = 2, .data = a + 6},
    };
    int n = (int)(sizeof t / sizeof t[0]);
    const char *path = tu_path("rt.safetensors");
    if (lnk_st_write(path, t, n, NULL) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    lnk_st_file *f = NULL;
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(f->n, n);
    assert_string_equal(f->path, path);
    for (int i = 0; i < n; i++) {
        const lnk_st_tensor *x = lnk_st_get(f, t[i].name);
        assert_non_null(x);
        assert_int_equal(x->dtype, t[i].dtype);
        assert_int_equal(x->ndim, t[i].ndim);
        for (int k = 0; k < t[i].ndim; k++)
            assert_int_equal(x->shape[k], t[i].shape[k]);
        assert_int_equal(x->numel, t[i].numel);
        if (t[i].numel)
            assert_memory_equal(x->data, t[i].data, t[i].numel * 8);
    }
    assert_null(lnk_st_get(f, "nope"));
    /* f->t is in offset order, i.e. the order written here */
    for (int i = 0; i < n; i++)
        assert_string_equal(f->t[i].name, t[i].name);
    lnk_st_free(f);

    /* the header, read independently: offsets contiguous in the given order */
    raw_file r = raw_read(path);
    json_error_t e;
    json_t *h = json_loadb(r.hdr, r.hlen, 0, &e);
    assert_non_null(h);
    json_int_t at = 0;
    for (int i = 0; i < n; i++) {
        json_t *x = json_object_get(h, t[i].name);
        assert_non_null(x);
        json_t *off = json_object_get(x, "data_offsets");
        assert_int_equal(json_integer_value(json_array_get(off, 0)), at);
        at += (json_int_t)t[i].numel * 8;
        assert_int_equal(json_integer_value(json_array_get(off, 1)), at);
        assert_int_equal(json_array_size(json_object_get(x, "shape")), t[i].ndim);
    }
    assert_int_equal((size_t)at, r.dlen);
    json_decref(h);
    raw_free(&r);
}

/* Header padded with spaces so that 8 + N is a multiple of 8, for names of
 * every length mod 8. */
static void test_padding(void **state)
{
    (void)state;
    double x[2] = {1.5, -2.5};
    char name[16];
    for (int len = 1; len <= 9; len++) {
        memset(name, 'a', (size_t)len);
        name[len] = '\0';
        lnk_st_tensor t = {.name = name, .dtype = LNK_DT_F64, .ndim = 1, .shape = {2}, .numel = 2, .data = x};
        const char *path = tu_path("pad.safetensors");
        if (lnk_st_write(path, &t, 1, NULL) != LNK_OK)
            fail_msg("%s", lnk_errmsg());
        size_t n;
        unsigned char *b = (unsigned char *)tu_read_file(path, &n);
        uint64_t N = le64(b);
        assert_int_equal((8 + N) % 8, 0);
        assert_int_equal(n, 8 + N + 16);
        /* the JSON ends at its closing brace, then only spaces */
        size_t end = 8 + N;
        while (end > 8 && b[end - 1] == ' ')
            end--;
        assert_int_equal(b[end - 1], '}');
        assert_true(8 + N - end < 8);
        assert_memory_equal(b + 8 + N, x, 16);
        free(b);
        lnk_st_file *f;
        assert_int_equal(lnk_st_read(path, &f), LNK_OK);
        assert_int_equal(f->n, 1);
        lnk_st_free(f);
    }
}

static void test_metadata(void **state)
{
    (void)state;
    double x[1] = {3};
    const char *md[] = {"format", "pt", "note", "a \"quoted\", value\n", NULL};
    lnk_st_tensor t = {.name = "x", .dtype = LNK_DT_F64, .ndim = 1, .shape = {1}, .numel = 1, .data = x};
    const char *path = tu_path("md.safetensors");
    if (lnk_st_write(path, &t, 1, md) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    raw_file r = raw_read(path);
    json_error_t e;
    json_t *h = json_loadb(r.hdr, r.hlen, 0, &e);
    assert_non_null(h);
    json_t *m = json_object_get(h, "__metadata__");
    assert_true(json_is_object(m));
    assert_int_equal(json_object_size(m), 2);
    assert_string_equal(json_string_value(json_object_get(m, "format")), "pt");
    assert_string_equal(json_string_value(json_object_get(m, "note")), md[3]);
    json_decref(h);
    raw_free(&r);
    lnk_st_file *f;
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(f->n, 1);  /* __metadata__ is not a tensor */
    assert_non_null(lnk_st_get(f, "x"));
    lnk_st_free(f);

    const char *odd[] = {"k", NULL};
    assert_int_not_equal(lnk_st_write(tu_path("odd.safetensors"), &t, 1, odd), LNK_OK);
    assert_int_equal(access(tu_path("odd.safetensors"), F_OK), -1);
}

static void test_writer_refuses(void **state)
{
    (void)state;
    double x[4] = {0};
    lnk_st_tensor t[2] = {
        {.name = "a", .dtype = LNK_DT_F64, .ndim = 1, .shape = {4}, .numel = 4, .data = x},
        {.name = "a", .dtype = LNK_DT_F64, .ndim = 1, .shape = {4}, .numel = 4, .data = x},
    };
    const char *path = tu_path("refuse.safetensors");
    assert_int_equal(lnk_st_write(path, t, 2, NULL), LNK_EINVAL);
    assert_msg_has("'a'");
    t[1].name = "b";
    t[1].numel = 3;  /* disagrees with shape [4] */
    assert_int_equal(lnk_st_write(path, t, 2, NULL), LNK_EINVAL);
    assert_msg_has("'b'");
    t[1].numel = 4;
    t[1].shape[0] = -4;
    assert_int_equal(lnk_st_write(path, t, 2, NULL), LNK_EINVAL);
    assert_int_equal(access(path, F_OK), -1);
    t[1].shape[0] = 4;
    assert_int_not_equal(lnk_st_write(tu_path("no/such/dir/x.safetensors"), t, 2, NULL), LNK_OK);
    assert_msg_has("no/such/dir/x.safetensors");
}

/* --------------------------------------------------------- corrupt files */

/* The valid file every corruption starts from:
 *   dec.0.attn.wq F64 [2, 3] at [0, 48], dec.0.attn.bq F64 [3] at [48, 72],
 *   ids I64 [2, 2] at [72, 104]. */
static const char *base_path(void)
{
    static int made = 0;
    const char *path = tu_path("base.safetensors");
    if (!made) {
        double w[6], bq[3];
        int64_t ids[4] = {2, 5, 6, 3};
        tu_randn(w, 6, 7);
        tu_randn(bq, 3, 8);
        lnk_st_tensor t[3] = {
            {.name = "dec.0.attn.wq", .dtype = LNK_DT_F64, .ndim = 2, .shape = {2, 3}, .numel = 6, .data = w},
            {.name = "dec.0.attn.bq", .dtype = LNK_DT_F64, .ndim = 1, .shape = {3}, .numel = 3, .data = bq},
            {.name = "ids", .dtype = LNK_DT_I64, .ndim = 2, .shape = {2, 2}, .numel = 4, .data = ids},
        };
        const char *md[] = {"source", "lnkit test", NULL};
        if (lnk_st_write(path, t, 3, md) != LNK_OK)
            fail_msg("%s", lnk_errmsg());
        made = 1;
    }
    return path;
}

/* A corruption: edits the parsed header (h) and/or the raw parts. */
typedef struct {
    const char *what;
    void (*edit)(json_t *h, raw_file *r, char **text, size_t *tlen, uint64_t *hlen_field,
                 size_t *total);
    const char *expect[3];
} corruption;

#define EDIT(fn) static void fn(json_t *h, raw_file *r, char **text, size_t *tlen, uint64_t *hl, size_t *total)
#define UNUSED_ARGS (void)h, (void)r, (void)text, (void)tlen, (void)hl, (void)total

static json_t *entry(json_t *h, const char *name) { return json_object_get(h, name); }

static void set_offsets(json_t *h, const char *name, long long b, long long e)
{
    json_object_set_new(entry(h, name), "data_offsets", json_pack("[I, I]", (json_int_t)b, (json_int_t)e));
}

/* Replace the header text by s (the data stay). */
static void set_text(char **text, size_t *tlen, const char *s)
{
    free(*text);
    *text = strdup(s);
    *tlen = strlen(s);
}

EDIT(c_empty) { UNUSED_ARGS; *total = 0; }
EDIT(c_seven) { UNUSED_ARGS; *total = 7; }
EDIT(c_len_beyond) { UNUSED_ARGS; *hl = *tlen + r->dlen + 1; }
EDIT(c_len_huge) { UNUSED_ARGS; *hl = (uint64_t)1 << 63; }
EDIT(c_truncated) { UNUSED_ARGS; *total = 8 + *tlen + r->dlen - 8; }
EDIT(c_syntax)
{
    UNUSED_ARGS;
    char *p = strchr(*text, ':');
    *p = ';';
}
EDIT(c_not_object) { UNUSED_ARGS; set_text(text, tlen, "[1, 2, 3]   "); }
EDIT(c_duplicate)
{
    UNUSED_ARGS;
    /* "ids" twice: prepend a copy of its entry to the object text */
    char *e = json_dumps(entry(h, "ids"), JSON_COMPACT);
    char *s = NULL;
    assert_true(asprintf(&s, "{\"ids\":%s,%s", e, *text + 1) > 0);
    set_text(text, tlen, s);
    free(s);
    free(e);
}
EDIT(c_missing_dtype) { UNUSED_ARGS; json_object_del(entry(h, "dec.0.attn.bq"), "dtype"); }
EDIT(c_dtype_q9) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.bq"), "dtype", json_string("Q9")); }
EDIT(c_dtype_f32) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.wq"), "dtype", json_string("F32")); }
EDIT(c_dtype_number) { UNUSED_ARGS; json_object_set_new(entry(h, "ids"), "dtype", json_integer(64)); }
EDIT(c_shape_negative) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.wq"), "shape", json_pack("[i, i]", -2, 3)); }
EDIT(c_shape_string) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.wq"), "shape", json_string("2x3")); }
EDIT(c_shape_real) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.bq"), "shape", json_pack("[f]", 3.0)); }
EDIT(c_shape_ndim)
{
    UNUSED_ARGS;
    json_object_set_new(entry(h, "dec.0.attn.bq"), "shape", json_pack("[i,i,i,i,i,i,i,i,i]", 1, 1, 1, 1, 1, 1, 1, 1, 3));
}
EDIT(c_numel_overflow)
{
    UNUSED_ARGS;
    json_object_set_new(entry(h, "dec.0.attn.bq"), "shape", json_pack("[I, I]", (json_int_t)1 << 40, (json_int_t)1 << 40));
}
EDIT(c_offsets_reversed) { UNUSED_ARGS; set_offsets(h, "dec.0.attn.wq", 48, 0); }
EDIT(c_offsets_one) { UNUSED_ARGS; json_object_set_new(entry(h, "ids"), "data_offsets", json_pack("[i]", 72)); }
EDIT(c_offsets_oob) { UNUSED_ARGS; set_offsets(h, "ids", 80, 112); }
EDIT(c_overlap) { UNUSED_ARGS; set_offsets(h, "dec.0.attn.bq", 40, 64); }
EDIT(c_gap)
{
    UNUSED_ARGS;
    set_offsets(h, "dec.0.attn.bq", 56, 80);
    set_offsets(h, "ids", 80, 112);
    r->dlen += 8;  /* r->data has room: see corrupt_file */
}
EDIT(c_trailing) { UNUSED_ARGS; r->dlen += 8; }
EDIT(c_numel_mismatch) { UNUSED_ARGS; json_object_set_new(entry(h, "dec.0.attn.wq"), "shape", json_pack("[i, i]", 2, 4)); }
EDIT(c_not_utf8)
{
    UNUSED_ARGS;
    char *p = strstr(*text, "attn.wq");
    p[5] = (char)0xFF;
}
EDIT(c_entry_not_object) { UNUSED_ARGS; json_object_set_new(h, "ids", json_integer(3)); }
EDIT(c_extra_key) { UNUSED_ARGS; json_object_set_new(entry(h, "ids"), "stride", json_integer(1)); }
EDIT(c_metadata_number) { UNUSED_ARGS; json_object_set_new(json_object_get(h, "__metadata__"), "epoch", json_integer(3)); }
EDIT(c_zero_header) { UNUSED_ARGS; *hl = 0; }

static const corruption corpus[] = {
    {"empty file", c_empty, {"too short", NULL}},
    {"7-byte file", c_seven, {"7 bytes", "too short", NULL}},
    {"header length beyond file", c_len_beyond, {"header length", "beyond", NULL}},
    {"header length 2^63", c_len_huge, {"9223372036854775808", "beyond", NULL}},
    {"truncated data", c_truncated, {"'ids'", "beyond", NULL}},
    {"JSON syntax error", c_syntax, {"not valid JSON", NULL}},
    {"JSON not an object", c_not_object, {"expected a JSON object", NULL}},
    {"duplicate tensor name", c_duplicate, {"duplicate", "ids", NULL}},
    {"missing dtype", c_missing_dtype, {"'dec.0.attn.bq'", "missing key 'dtype'", NULL}},
    {"unknown dtype Q9", c_dtype_q9, {"'dec.0.attn.bq'", "unknown dtype 'Q9'", NULL}},
    {"dtype F32", c_dtype_f32, {"'dec.0.attn.wq'", "unsupported dtype 'F32', expected F64 or I64", NULL}},
    {"dtype not a string", c_dtype_number, {"'ids'", "dtype", NULL}},
    {"shape negative", c_shape_negative, {"'dec.0.attn.wq'", "shape[0] = -2 is negative", NULL}},
    {"shape not a list", c_shape_string, {"'dec.0.attn.wq'", "shape is a string", NULL}},
    {"shape of reals", c_shape_real, {"'dec.0.attn.bq'", "shape[0] is a real", NULL}},
    {"shape of 9 dims", c_shape_ndim, {"'dec.0.attn.bq'", "9 dimensions", NULL}},
    {"numel overflow", c_numel_overflow, {"'dec.0.attn.bq'", "too many elements", NULL}},
    {"data_offsets reversed", c_offsets_reversed, {"'dec.0.attn.wq'", "[48, 0]", "reversed"}},
    {"data_offsets of one number", c_offsets_one, {"'ids'", "data_offsets", NULL}},
    {"offsets out of bounds", c_offsets_oob, {"'ids'", "[80, 112]", "beyond the data buffer of 104"}},
    {"overlapping tensors", c_overlap, {"'dec.0.attn.bq'", "overlaps", "'dec.0.attn.wq'"}},
    {"gap between tensors", c_gap, {"'dec.0.attn.bq'", "gap of 8 bytes", "'dec.0.attn.wq'"}},
    {"trailing bytes", c_trailing, {"8 trailing bytes", "'ids'", NULL}},
    {"numel*8 != end-begin", c_numel_mismatch,
     {"'dec.0.attn.wq'", "data_offsets [0, 48] hold 48 bytes but shape [2, 4] of F64 needs 64", NULL}},
    {"non-UTF-8 header", c_not_utf8, {"UTF-8", "0xff", NULL}},
    {"entry not an object", c_entry_not_object, {"'ids'", "expected an object", NULL}},
    {"unknown key in entry", c_extra_key, {"'ids'", "'stride'", NULL}},
    {"metadata value not a string", c_metadata_number, {"__metadata__", "'epoch'", NULL}},
    {"header length 0", c_zero_header, {"not valid JSON", NULL}},
};

/* Build the corrupt file for case c from the valid base file. */
static const char *corrupt_file(const corruption *c)
{
    raw_file r = raw_read(base_path());
    json_error_t e;
    json_t *h = json_loadb(r.hdr, r.hlen, 0, &e);
    assert_non_null(h);
    r.data = realloc(r.data, r.dlen + 64);
    memset(r.data + r.dlen, 0, 64);
    char *text = strdup(r.hdr);
    size_t tlen = r.hlen;
    uint64_t hl = UINT64_MAX;     /* UINT64_MAX: the text's length */
    size_t total = SIZE_MAX;      /* SIZE_MAX: the whole file */
    /* header-level edits are made on h, then h replaces the text */
    char *before = json_dumps(h, JSON_COMPACT);
    c->edit(h, &r, &text, &tlen, &hl, &total);
    char *after = json_dumps(h, JSON_COMPACT);
    if (strcmp(before, after) != 0) {
        free(text);
        text = after;
        tlen = strlen(after);
        after = NULL;
    }
    free(before);
    free(after);
    json_decref(h);

    size_t n = 8 + tlen + r.dlen;
    unsigned char *b = malloc(n);
    put_le64(b, hl == UINT64_MAX ? tlen : hl);
    memcpy(b + 8, text, tlen);
    memcpy(b + 8 + tlen, r.data, r.dlen);
    const char *path = tu_path("corrupt.safetensors");
    tu_write_file(path, b, total == SIZE_MAX ? n : total);
    free(b);
    free(text);
    raw_free(&r);
    return path;
}

static void test_corpus(void **state)
{
    (void)state;
    /* the base file itself is valid */
    lnk_st_file *f = NULL;
    if (lnk_st_read(base_path(), &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(f->n, 3);
    lnk_st_free(f);

    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        const corruption *c = &corpus[i];
        const char *path = corrupt_file(c);
        f = (lnk_st_file *)1;
        lnk_error_clear();
        int st = lnk_st_read(path, &f);
        if (st == LNK_OK)
            fail_msg("%s: accepted", c->what);
        assert_null(f);
        if (!contains(lnk_errmsg(), path))
            fail_msg("%s: message \"%s\" does not name the file", c->what, lnk_errmsg());
        for (int k = 0; k < 3 && c->expect[k]; k++)
            if (!contains(lnk_errmsg(), c->expect[k]))
                fail_msg("%s: message \"%s\" lacks \"%s\"", c->what, lnk_errmsg(), c->expect[k]);
    }
}

/* Valid variations the reader must accept: tensors listed in any order in the
 * header, zero-size tensors, no padding, a file with no tensors. */
static void test_reader_accepts(void **state)
{
    (void)state;
    double d[3] = {1, 2, 3};
    const char *path = tu_path("acc.safetensors");
    const char *h1 = "{\"b\":{\"data_offsets\":[8,24],\"shape\":[2],\"dtype\":\"F64\"},"
                     "\"z\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[8,8]},"
                     "\"a\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}";
    raw_write(path, h1, strlen(h1), d, 24);
    lnk_st_file *f;
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(f->n, 3);
    assert_string_equal(f->t[0].name, "a");   /* offset order */
    assert_int_equal(f->t[0].ndim, 0);
    assert_int_equal(f->t[0].numel, 1);
    assert_true(((double *)f->t[0].data)[0] == 1.0);
    assert_true(((double *)lnk_st_get(f, "b")->data)[1] == 3.0);
    assert_int_equal(lnk_st_get(f, "z")->numel, 0);
    lnk_st_free(f);

    raw_write(path, "{}", 2, NULL, 0);
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(f->n, 0);
    lnk_st_free(f);

    assert_int_equal(lnk_st_read(tu_path("does-not-exist.safetensors"), &f), LNK_EIO);
    assert_null(f);
    assert_msg_has("does-not-exist.safetensors");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_padding),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_reader_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
