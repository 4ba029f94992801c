/* safetensors: round trips, header padding, a corpus of corrupt files (each a
 * specific corruption of a valid file) and the model-aware loaders. */
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

/* ------------------------------------------------------- model-aware files */

typedef struct {
    lnk_config cfg;
    lnk_model *m;
    double *theta;
    size_t n;
} fixture;

static int setup_model(void **state)
{
    fixture *x = calloc(1, sizeof *x);
    x->cfg = tu_config("d=8", "h=2", "L=1", "V=12", NULL);
    x->m = lnk_model_alloc(&x->cfg);
    if (!x->m)
        fail_msg("%s", lnk_errmsg());
    x->n = lnk_model_n_params(x->m);
    x->theta = malloc(x->n * sizeof(double));
    tu_randn(x->theta, x->n, 3);
    *state = x;
    return 0;
}

static int teardown_model(void **state)
{
    fixture *x = *state;
    lnk_model_free(x->m);
    lnk_config_clear(&x->cfg);
    free(x->theta);
    free(x);
    return 0;
}

/* Re-write the tensors of file path into out, changed by fn (may drop or alter). */
typedef int (*rewrite_fn)(lnk_st_tensor *t, int n, void *ctx);
static void rewrite(const char *path, const char *out, rewrite_fn fn, void *ctx)
{
    lnk_st_file *f;
    if (lnk_st_read(path, &f) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    lnk_st_tensor *t = calloc((size_t)f->n + 1, sizeof *t);
    memcpy(t, f->t, (size_t)f->n * sizeof *t);
    int n = fn(t, f->n, ctx);
    if (lnk_st_write(out, t, n, NULL) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    free(t);
    lnk_st_free(f);
}

static int rw_reverse(lnk_st_tensor *t, int n, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < n / 2; i++) {
        lnk_st_tensor s = t[i];
        t[i] = t[n - 1 - i];
        t[n - 1 - i] = s;
    }
    return n;
}

static int rw_drop(lnk_st_tensor *t, int n, void *ctx)
{
    int k = *(int *)ctx;
    memmove(t + k, t + k + 1, (size_t)(n - k - 1) * sizeof *t);
    return n - 1;
}

static int rw_extra(lnk_st_tensor *t, int n, void *ctx)
{
    (void)ctx;
    static double z[4];
    t[n] = (lnk_st_tensor){.name = "enc.0.attn.wq", .dtype = LNK_DT_F64, .ndim = 2, .shape = {2, 2}, .numel = 4, .data = z};
    return n + 1;
}

static int rw_transpose(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0) {
            int64_t s = t[i].shape[0];
            t[i].shape[0] = t[i].shape[1];
            t[i].shape[1] = s;
        }
    return n;
}

static int rw_as_i64(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0)
            t[i].dtype = LNK_DT_I64;
    return n;
}

static int rw_nan5(lnk_st_tensor *t, int n, void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, (const char *)ctx) == 0)
            ((double *)t[i].data)[5] = NAN;
    return n;
}

static void test_weights_roundtrip(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    const char *path = tu_path("w.safetensors");
    if (lnk_weights_save(path, x->m, x->theta) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    double *back = calloc(x->n, sizeof *back);
    if (lnk_weights_load(path, x->m, back) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_memory_equal(back, x->theta, x->n * sizeof *back);

    /* written in MODEL.md §6 order with the layout's shapes */
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(path, &f), LNK_OK);
    assert_int_equal(f->n, lay->n_tensors);
    for (int k = 0; k < lay->n_tensors; k++) {
        assert_string_equal(f->t[k].name, lay->t[k].name);
        assert_int_equal(f->t[k].dtype, LNK_DT_F64);
        assert_int_equal(f->t[k].ndim, lay->t[k].ndim);
        for (int j = 0; j < lay->t[k].ndim; j++)
            assert_int_equal(f->t[k].shape[j], lay->t[k].shape[j]);
    }
    lnk_st_free(f);

    /* physical order carries no meaning */
    const char *rev = tu_path("w_rev.safetensors");
    rewrite(path, rev, rw_reverse, NULL);
    memset(back, 0, x->n * sizeof *back);
    if (lnk_weights_load(rev, x->m, back) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_memory_equal(back, x->theta, x->n * sizeof *back);
    free(back);
}

static void test_weights_mismatch(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    const char *path = tu_path("wm.safetensors"), *bad = tu_path("wm_bad.safetensors");
    assert_int_equal(lnk_weights_save(path, x->m, x->theta), LNK_OK);
    double *back = malloc(x->n * sizeof *back);
    int wq = lnk_layout_find(lay, "dec.0.attn.wq");
    assert_true(wq >= 0);
    assert_int_equal(lay->t[wq].ndim, 2);

    int k = 1;
    rewrite(path, bad, rw_drop, &k);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has(lay->t[1].name);
    assert_msg_has("missing");

    rewrite(path, bad, rw_extra, NULL);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'enc.0.attn.wq'");
    assert_msg_has("not a parameter of this configuration");

    /* a non-square matrix, so that its transpose differs */
    int ff = lnk_layout_find(lay, "dec.0.ffn.w1");
    assert_true(ff >= 0);
    char sh[2][64];
    snprintf(sh[0], 64, "[%d, %d]", lay->t[ff].shape[1], lay->t[ff].shape[0]);
    snprintf(sh[1], 64, "[%d, %d]", lay->t[ff].shape[0], lay->t[ff].shape[1]);
    rewrite(path, bad, rw_transpose, (void *)"dec.0.ffn.w1");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'dec.0.ffn.w1'");
    assert_msg_has(sh[0]);
    assert_msg_has(sh[1]);

    rewrite(path, bad, rw_as_i64, (void *)"dec.0.attn.wq");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("I64");

    /* theta is untouched by a failed load */
    tu_randn(back, x->n, 99);
    double *copy = malloc(x->n * sizeof *copy);
    memcpy(copy, back, x->n * sizeof *copy);
    rewrite(path, bad, rw_nan5, (void *)"dec.0.attn.wq");
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_ENONFINITE);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("element 5");
    assert_memory_equal(back, copy, x->n * sizeof *copy);

    /* the saver refuses non-finite values and leaves no file */
    memcpy(copy, x->theta, x->n * sizeof *copy);
    copy[lay->t[wq].offset + 3] = INFINITY;
    const char *nf = tu_path("w_inf.safetensors");
    assert_int_equal(lnk_weights_save(nf, x->m, copy), LNK_ENONFINITE);
    assert_msg_has("'dec.0.attn.wq'");
    assert_msg_has("element 3");
    assert_int_equal(access(nf, F_OK), -1);

    /* a weights file of another configuration */
    lnk_config c2 = tu_config("d=8", "h=2", "L=2", "V=12", NULL);
    lnk_model *m2 = lnk_model_alloc(&c2);
    assert_non_null(m2);
    double *t2 = calloc(lnk_model_n_params(m2), sizeof *t2);
    assert_int_equal(lnk_weights_save(bad, m2, t2), LNK_OK);
    assert_int_equal(lnk_weights_load(bad, x->m, back), LNK_EMISMATCH);
    assert_msg_has("dec.1.");
    free(t2);
    lnk_model_free(m2);
    lnk_config_clear(&c2);
    free(copy);
    free(back);
}

static void test_vectors(void **state)
{
    fixture *x = *state;
    const lnk_layout *lay = lnk_model_layout(x->m);
    double *back = malloc(x->n * sizeof *back);
    int kind = -1;

    const char *flat = tu_path("v_flat.safetensors");
    assert_int_equal(lnk_vector_save(flat, x->m, x->theta, LNK_VEC_FLAT), LNK_OK);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(flat, &f), LNK_OK);
    assert_int_equal(f->n, 1);
    assert_string_equal(f->t[0].name, "v");
    assert_int_equal(f->t[0].ndim, 1);
    assert_int_equal(f->t[0].shape[0], (int64_t)x->n);
    lnk_st_free(f);
    assert_int_equal(lnk_vector_load(flat, x->m, back, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_FLAT);
    assert_memory_equal(back, x->theta, x->n * sizeof *back);

    const char *named = tu_path("v_named.safetensors");
    assert_int_equal(lnk_vector_save(named, x->m, x->theta, LNK_VEC_NAMED), LNK_OK);
    memset(back, 0, x->n * sizeof *back);
    assert_int_equal(lnk_vector_load(named, x->m, back, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_NAMED);
    assert_memory_equal(back, x->theta, x->n * sizeof *back);
    assert_int_equal(lnk_vector_load(named, x->m, back, NULL), LNK_OK);

    /* a vector of the wrong length */
    lnk_st_tensor t = {.name = "v", .dtype = LNK_DT_F64, .ndim = 1, .shape = {(int64_t)x->n - 1},
                       .numel = x->n - 1, .data = x->theta};
    const char *bad = tu_path("v_bad.safetensors");
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_vector_load(bad, x->m, back, &kind), LNK_EMISMATCH);
    assert_msg_has("'v'");
    char want[64];
    snprintf(want, sizeof want, "[%zu]", x->n);
    assert_msg_has(want);

    /* NaN in a flat vector: named by flat index and by tensor */
    double *v = malloc(x->n * sizeof *v);
    memcpy(v, x->theta, x->n * sizeof *v);
    size_t at = lay->t[2].offset + 1;
    v[at] = NAN;
    assert_int_equal(lnk_vector_save(bad, x->m, v, LNK_VEC_FLAT), LNK_ENONFINITE);
    assert_msg_has(lay->t[2].name);
    t.shape[0] = (int64_t)x->n;
    t.numel = x->n;
    t.data = v;
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_vector_load(bad, x->m, back, &kind), LNK_ENONFINITE);
    char el[64];
    snprintf(el, sizeof el, "element %zu", at);
    assert_msg_has(el);
    assert_msg_has(lay->t[2].name);
    assert_int_equal(lnk_vector_save(bad, x->m, x->theta, 7), LNK_EINVAL);
    free(v);
    free(back);
}

static void test_batches(void **state)
{
    fixture *x = *state;
    lnk_batch b, c;
    assert_int_equal(lnk_batch_synthetic(x->m, 3, 5, 11, &b), LNK_OK);
    const char *path = tu_path("b.safetensors");
    if (lnk_batch_save(path, &b) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    if (lnk_batch_load(path, x->m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, b.B);
    assert_int_equal(c.T, b.T);
    assert_int_equal(c.owns, 1);
    assert_null(c.src);
    assert_memory_equal(c.tgt, b.tgt, (size_t)b.B * (size_t)b.T * sizeof(int64_t));
    lnk_batch_free(&c);

    /* tgt stored as F64 */
    double *dt = malloc((size_t)b.B * (size_t)b.T * sizeof *dt);
    for (int i = 0; i < b.B * b.T; i++)
        dt[i] = (double)b.tgt[i];
    lnk_st_tensor t = {.name = "tgt", .dtype = LNK_DT_F64, .ndim = 2, .shape = {b.B, b.T},
                       .numel = (size_t)b.B * (size_t)b.T, .data = dt};
    const char *bad = tu_path("b_bad.safetensors");
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");
    assert_msg_has("F64");
    free(dt);

    /* no tgt at all (an lm needs it); a batch tensor the task does not use means
     * a data file of another task: refused, naming both tasks */
    t = (lnk_st_tensor){.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.T},
                        .numel = (size_t)b.B * (size_t)b.T, .data = b.tgt};
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");
    assert_msg_has("missing");
    lnk_st_tensor two[2] = {t, t};
    two[1].name = "tgt";
    assert_int_equal(lnk_st_write(bad, two, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'src'");
    assert_msg_has("seq2seq");
    assert_msg_has("task lm");
    assert_null(c.tgt);

    /* 1-D tgt */
    t.name = "tgt";
    t.ndim = 1;
    t.shape[0] = (int64_t)t.numel;
    assert_int_equal(lnk_st_write(bad, &t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(bad, x->m, &c), LNK_EMISMATCH);
    assert_msg_has("'tgt'");

    /* an id out of range: lnk_batch_check's message, prefixed by the file */
    b.tgt[1] = 12;
    assert_int_equal(lnk_batch_save(bad, &b), LNK_OK);
    assert_int_not_equal(lnk_batch_load(bad, x->m, &c), LNK_OK);
    assert_msg_has("b_bad.safetensors");
    assert_null(c.tgt);
    lnk_batch_free(&b);
}

static void test_batches_cls_seq2seq(void **state)
{
    (void)state;
    lnk_config cc = tu_config("task=cls", "d=8", "h=2", "L=1", "V=12", NULL);
    lnk_model *m = lnk_model_alloc(&cc);
    assert_non_null(m);
    lnk_batch b, c;
    assert_int_equal(lnk_batch_synthetic(m, 2, 4, 5, &b), LNK_OK);
    const char *path = tu_path("cls.safetensors");
    assert_int_equal(lnk_batch_save(path, &b), LNK_OK);
    if (lnk_batch_load(path, m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, 2);
    assert_int_equal(c.S, b.S);
    assert_memory_equal(c.src, b.src, (size_t)b.B * (size_t)b.S * sizeof(int64_t));
    assert_memory_equal(c.labels, b.labels, (size_t)b.B * (size_t)b.S * sizeof(int64_t));
    lnk_batch_free(&c);

    /* labels of another shape than src */
    lnk_st_tensor t[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.S}, .numel = (size_t)(b.B * b.S), .data = b.src},
        {.name = "labels", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B * b.S, 1}, .numel = (size_t)(b.B * b.S), .data = b.labels},
    };
    assert_int_equal(lnk_st_write(path, t, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("'labels'");
    /* labels missing */
    assert_int_equal(lnk_st_write(path, t, 1, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("'labels'");
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&cc);

    /* seq2seq: src and tgt must agree on B */
    lnk_config cs = tu_config("task=seq2seq", "d=8", "h=2", "L=1", "V=12", NULL);
    m = lnk_model_alloc(&cs);
    assert_non_null(m);
    int64_t src[6] = {2, 5, 6, 2, 7, 8}, tgt[4] = {2, 9, 2, 3};
    lnk_st_tensor s2[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {2, 3}, .numel = 6, .data = src},
        {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {1, 4}, .numel = 4, .data = tgt},
    };
    assert_int_equal(lnk_st_write(path, s2, 2, NULL), LNK_OK);
    assert_int_equal(lnk_batch_load(path, m, &c), LNK_EMISMATCH);
    assert_msg_has("rows");
    s2[1].shape[0] = 2;
    s2[1].shape[1] = 2;
    assert_int_equal(lnk_st_write(path, s2, 2, NULL), LNK_OK);
    if (lnk_batch_load(path, m, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    assert_int_equal(c.B, 2);
    assert_int_equal(c.S, 3);
    assert_int_equal(c.T, 2);
    assert_memory_equal(c.src, src, sizeof src);
    assert_memory_equal(c.tgt, tgt, sizeof tgt);
    lnk_batch_free(&c);
    lnk_model_free(m);
    lnk_config_clear(&cs);
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
        cmocka_unit_test_setup_teardown(test_weights_roundtrip, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_weights_mismatch, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_vectors, setup_model, teardown_model),
        cmocka_unit_test_setup_teardown(test_batches, setup_model, teardown_model),
        cmocka_unit_test(test_batches_cls_seq2seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
