/* Provenance of results (docs/MODEL.md §9): SHA-256 against the FIPS 180-2
 * examples and sha256sum, the sidecar's command line, inputs, seeds, commit
 * and versions (library and through lnkit eigs), and lnkit --version. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static void digest_of(const void *data, size_t n, char hex[65])
{
    lnk_sha256 s;
    unsigned char d[32];
    lnk_sha256_init(&s);
    lnk_sha256_update(&s, data, n);
    lnk_sha256_final(&s, d);
    lnk_sha256_hex(d, hex);
}

/* FIPS 180-2, appendix B: one block, two blocks, a million 'a'; and the
 * empty message. */
static void test_fips_vectors(void **state)
{
    (void)state;
    char hex[65];
    digest_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    digest_of(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    digest_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    digest_of(a, 1000000, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* the same million bytes in uneven pieces (partial blocks at every offset) */
    lnk_sha256 s;
    unsigned char d[32];
    char hex2[65];
    lnk_sha256_init(&s);
    for (size_t at = 0, k = 1; at < 1000000; at += k, k = k % 131 + 1)
        lnk_sha256_update(&s, a + at, at + k <= 1000000 ? k : 1000000 - at);
    lnk_sha256_final(&s, d);
    lnk_sha256_hex(d, hex2);
    assert_string_equal(hex2, hex);
    /* lengths around the padding boundary (55, 56, 63, 64, 65 bytes) against sha256sum */
    const size_t lens[] = {55, 56, 63, 64, 65, 119, 120};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        const char *p = tu_path("pad.bin");
        tu_write_file(p, a, lens[i]);
        char *out;
        assert_int_equal(tu_run(&out, "sha256sum '%s'", p), 0);
        uint64_t bytes;
        assert_int_equal(lnk_sha256_file(p, hex, &bytes), LNK_OK);
        assert_true(bytes == lens[i]);
        if (strncmp(out, hex, 64) != 0)
            fail_msg("%zu bytes: %s vs sha256sum %.64s", lens[i], hex, out);
        free(out);
    }
    free(a);
}

/* A 48 MiB file of pseudo-random bytes against sha256sum; and the Multi30k
 * files against the checksums and sizes their SOURCE.md states. */
static void test_large_file(void **state)
{
    (void)state;
    const char *p = tu_path("large.bin");
    size_t n = 48u << 20;
    unsigned char *b = malloc(n);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)(x >> 24);
    }
    tu_write_file(p, b, n);
    free(b);
    char hex[65], *out;
    uint64_t bytes;
    assert_int_equal(lnk_sha256_file(p, hex, &bytes), LNK_OK);
    assert_true(bytes == n);
    assert_int_equal(tu_run(&out, "sha256sum '%s'", p), 0);
    if (strncmp(out, hex, 64) != 0)
        fail_msg("large file: %s vs sha256sum %.64s", hex, out);
    free(out);
    remove(p);

    char *src = tu_read_file("data/multi30k/SOURCE.md", NULL);
    if (!src)
        fail_msg("data/multi30k/SOURCE.md not found: run from the repository's root");
    const char *files[] = {"val.de", "val.en"};
    for (int i = 0; i < 2; i++) {
        char path[64], row[200];
        snprintf(path, sizeof path, "data/multi30k/%s", files[i]);
        assert_int_equal(lnk_sha256_file(path, hex, &bytes), LNK_OK);
        snprintf(row, sizeof row, "| `%s` | 1014 | %llu | `%s` |", files[i],
                 (unsigned long long)bytes, hex);
        if (!strstr(src, row))
            fail_msg("data/multi30k/SOURCE.md lacks the row \"%s\"", row);
    }
    free(src);
    assert_int_equal(lnk_sha256_file(tu_path("no-such-file"), hex, NULL), LNK_EIO);
    assert_non_null(strstr(lnk_errmsg(), "no-such-file"));
}


static void assert_commit_form(const char *c)
{
    assert_non_null(c);
    if (!strcmp(c, "unknown"))
        return;
    size_t n = strspn(c, "0123456789abcdef");
    if (n != 40 || (c[40] && strcmp(c + 40, "-dirty")))
        fail_msg("git commit '%s' is neither 40 hex digits [-dirty] nor 'unknown'", c);
}

/* lnk_meta_write records the command line, the inputs with their
 * checksums, seeds, commit, versions, threads and ranks of the record it is
 * given. */
static void test_sidecar_record(void **state)
{
    (void)state;
    const char *in = tu_path("input.txt");
    tu_write_file(in, "some input\n", 11);
    char *const argv[] = {"prog", "--x", "a b", "", "--y=\"q\"", NULL};
    lnk_prov *p = lnk_prov_alloc();
    assert_non_null(p);
    assert_int_equal(lnk_prov_args(p, 5, argv), LNK_OK);
    assert_int_equal(lnk_prov_input(p, in), LNK_OK);
    assert_int_equal(lnk_prov_input(p, in), LNK_OK); /* recorded once */
    assert_int_equal(lnk_prov_input(p, tu_path("missing.txt")), LNK_EIO);
    assert_int_equal(lnk_prov_seed(p, "rng", 7), LNK_OK);
    assert_int_equal(lnk_prov_seed(p, "init", 3), LNK_OK);
    assert_int_equal(lnk_prov_seed(p, "rng", 9), LNK_OK); /* updated */
    assert_int_equal(lnk_prov_blas_note(p, "auto: kept"), LNK_OK);
    const char *csv = tu_path("rec.csv");
    assert_int_equal(lnk_meta_write(csv, p, NULL, NULL, "2020-01-01T00:00:00Z", 0.5), LNK_OK);
    json_t *j = tu_load_json(tu_path("rec.meta.json"));
    json_t *cl = json_object_get(j, "command_line");
    assert_int_equal(json_array_size(cl), 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_array_get(cl, (size_t)i)), argv[i]);
    assert_null(json_object_get(j, "command_line_bytes_hex")); /* all UTF-8 */
    json_t *ins = json_object_get(j, "inputs");
    assert_int_equal(json_array_size(ins), 1);
    json_t *e = json_array_get(ins, 0);
    assert_string_equal(json_string_value(json_object_get(e, "path")), in);
    assert_int_equal(json_integer_value(json_object_get(e, "bytes")), 11);
    char *out;
    assert_int_equal(tu_run(&out, "sha256sum '%s'", in), 0);
    assert_memory_equal(json_string_value(json_object_get(e, "sha256")), out, 64);
    free(out);
    json_t *sd = json_object_get(j, "named_seeds");
    assert_int_equal(json_integer_value(json_object_get(sd, "rng")), 9);
    assert_int_equal(json_integer_value(json_object_get(sd, "init")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "blas_kernel_choice")),
                        "auto: kept");
    assert_commit_form(json_string_value(json_object_get(j, "git_commit")));
    assert_string_equal(json_string_value(json_object_get(j, "git_commit")), lnk_git_commit());
    json_t *v = json_object_get(j, "versions");
    const char *keys[] = {"lnkit", "compiler", "openblas", "openblas_core", "lapack", "gsl",
                          "glpk", "jansson"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *s = json_string_value(json_object_get(v, keys[i]));
        if (!s || !s[0])
            fail_msg("versions.%s missing", keys[i]);
    }
    assert_string_equal(json_string_value(json_object_get(v, "compiler")), lnk_compiler());
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), lnk_blas_threads());
    assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 1);
    assert_true(json_is_string(json_object_get(j, "cwd")));
    json_decref(j);

    /* a second record is another object: nothing of the first one leaks in */
    lnk_prov *q = lnk_prov_alloc();
    j = (assert_int_equal(lnk_meta_write(csv, q, NULL, NULL, NULL, 0), LNK_OK),
         tu_load_json(tu_path("rec.meta.json")));
    assert_int_equal(json_array_size(json_object_get(j, "command_line")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "inputs")), 0);
    assert_int_equal(json_object_size(json_object_get(j, "named_seeds")), 0);
    json_decref(j);
    /* no record: refused */
    assert_int_equal(lnk_meta_write(csv, NULL, NULL, NULL, NULL, 0), LNK_EINVAL);
    lnk_prov_free(q);

    /* digests a reader computed: the same (path, digest) once; the same path
     * with other bytes (a FIFO given twice) twice, in order; lookup by path */
    lnk_digest d1, d2;
    lnk_digest_of("abc", 3, &d1);
    lnk_digest_of("", 0, &d2);
    assert_int_equal(lnk_prov_input_digest(p, "/dev/fd/63", &d1), LNK_OK);
    assert_int_equal(lnk_prov_input_digest(p, "/dev/fd/63", &d1), LNK_OK);
    assert_int_equal(lnk_prov_input_digest(p, "/dev/fd/63", &d2), LNK_OK);
    assert_string_equal(lnk_prov_input_find(p, "/dev/fd/63")->sha256, d2.sha256);
    assert_null(lnk_prov_input_find(p, "nope"));
    assert_int_equal(lnk_meta_write(csv, p, NULL, NULL, NULL, 0), LNK_OK);
    j = tu_load_json(tu_path("rec.meta.json"));
    ins = json_object_get(j, "inputs");
    assert_int_equal(json_array_size(ins), 3);
    e = json_array_get(ins, 1);
    assert_string_equal(json_string_value(json_object_get(e, "path")), "/dev/fd/63");
    assert_int_equal(json_integer_value(json_object_get(e, "bytes")), 3);
    assert_string_equal(json_string_value(json_object_get(e, "sha256")),
                        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ins, 2), "bytes")), 0);
    json_decref(j);
    lnk_prov_free(p);
    char *vt = lnk_version_text(NULL);
    assert_non_null(strstr(vt, "not chosen by this program"));
    free(vt);
}

/* The program's own keys (lnk_meta): written in order after the standard
 * keys; a key set twice, a standard key, a *_bytes_hex key or a number that
 * is not finite is refused when set, stays in the builder and makes
 * lnk_meta_write fail without writing. */
static void test_sidecar_keys(void **state)
{
    (void)state;
    lnk_prov *p = lnk_prov_alloc();
    lnk_meta *m = lnk_meta_alloc();
    assert_int_equal(lnk_meta_str(m, "command", "eigs"), LNK_OK);
    assert_int_equal(lnk_meta_int(m, "k", 5), LNK_OK);
    assert_int_equal(lnk_meta_real(m, "tol", 1e-6), LNK_OK);
    assert_int_equal(lnk_meta_bool(m, "joint", 1), LNK_OK);
    assert_int_equal(lnk_meta_null(m, "none"), LNK_OK);
    const int iv[] = {1, 2, 3};
    const double rv[] = {0.5, -2};
    const char *const sv[] = {"a", "b\"c"};
    assert_int_equal(lnk_meta_ints(m, "Ls", iv, 3), LNK_OK);
    assert_int_equal(lnk_meta_reals(m, "xs", rv, 2), LNK_OK);
    assert_int_equal(lnk_meta_strs(m, "names", sv, 2), LNK_OK);
    assert_int_equal(lnk_meta_json(m, "nested", json_pack("{s:i}", "a", 1)), LNK_OK);
    assert_int_equal(lnk_meta_parse(m, "{\"from_text\": [1, 2]}", "--extra"), LNK_OK);
    lnk_meta *sub = lnk_meta_alloc();
    assert_int_equal(lnk_meta_str(sub, "later", "x"), LNK_OK);
    assert_int_equal(lnk_meta_add(m, sub), LNK_OK);
    lnk_meta_free(sub);
    assert_int_equal(lnk_meta_status(m), LNK_OK);
    const char *csv = tu_path("keys.csv");
    assert_int_equal(lnk_meta_write(csv, p, NULL, m, NULL, 1), LNK_OK);
    json_t *j = tu_load_json(tu_path("keys.meta.json"));
    const char *order[] = {"command", "k", "tol", "joint", "none", "Ls", "xs", "names", "nested",
                           "from_text", "later"};
    void *it = json_object_iter_at(j, "command");
    assert_non_null(it);
    assert_non_null(json_object_get(j, "wall_seconds")); /* standard keys come first */
    for (size_t i = 0; i < sizeof order / sizeof *order; i++, it = json_object_iter_next(j, it))
        assert_string_equal(json_object_iter_key(it), order[i]);
    assert_true(json_real_value(json_object_get(j, "tol")) == 1e-6);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "names"), 1)),
                        "b\"c");
    json_decref(j);
    /* refusals, each naming the key; the first one stays */
    assert_int_equal(lnk_meta_int(m, "k", 6), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'k' set twice"));
    assert_int_equal(lnk_meta_str(m, "seed", "1"), LNK_EINVAL);
    assert_int_equal(lnk_meta_str(m, "x_bytes_hex", "00"), LNK_EINVAL);
    assert_int_equal(lnk_meta_real(m, "bad", NAN), LNK_ENONFINITE);
    assert_int_equal(lnk_meta_parse(m, "[1]", "--extra"), LNK_EINVAL);
    /* KEY_bytes_hex beside KEY in the form of §9 (a Python script's own keys) */
    lnk_meta *py = lnk_meta_alloc();
    assert_int_equal(lnk_meta_parse(py, "{\"p\": \"caf\\ufffd\", \"p_bytes_hex\": \"636166e9\", "
                                    "\"l\": [\"a\", \"\\ufffd\"], \"l_bytes_hex\": [null, \"e9\"]}", "x"),
                     LNK_OK);
    assert_int_equal(lnk_meta_parse(py, "{\"q_bytes_hex\": \"00\"}", "x"), LNK_EINVAL);
    assert_int_equal(lnk_meta_parse(py, "{\"r\": \"x\", \"r_bytes_hex\": \"zz\"}", "x"),
                     LNK_EINVAL);
    lnk_meta_free(py);
    assert_int_equal(lnk_meta_status(m), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'k' set twice"));
    unlink(tu_path("keys.meta.json"));
    assert_int_equal(lnk_meta_write(csv, p, NULL, m, NULL, 1), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'k' set twice"));
    assert_int_equal(access(tu_path("keys.meta.json"), F_OK), -1); /* nothing written */
    lnk_meta_free(m);
    lnk_prov_free(p);
}

/* The exact bytes of s from a sidecar object: KEY_bytes_hex when present,
 * else the string (docs/MODEL.md §9). */
static char *os_bytes(json_t *o, const char *key)
{
    char hk[64];
    snprintf(hk, sizeof hk, "%s_bytes_hex", key);
    const char *h = json_string_value(json_object_get(o, hk));
    if (!h)
        return strdup(json_string_value(json_object_get(o, key)));
    size_t n = strlen(h) / 2;
    char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned x;
        sscanf(h + 2 * i, "%2x", &x);
        b[i] = (char)x;
    }
    b[n] = 0;
    return b;
}

/* Paths and arguments with quotes, backslashes, newlines, control
 * characters and bytes that are not UTF-8: the sidecar stays valid JSON, the
 * UTF-8 ones are recorded as they are, the others as text with U+FFFD for
 * each stray byte and their exact bytes in hex beside (docs/MODEL.md §9). */
static void test_sidecar_path_form(void **state)
{
    (void)state;
    const char *names[] = {"w\"q.safetensors", "back\\slash", "new\nline\ttab\x01\x1f\x7f",
                           "caf\xc3\xa9 \xe2\x82\xac", "latin1 caf\xe9", "\xff\xfe",
                           "overlong \xc0\xaf", "surrogate \xed\xa0\x80", "cut \xe2\x82"};
    size_t n = sizeof names / sizeof *names;
    lnk_prov *p = lnk_prov_alloc();
    lnk_meta *m = lnk_meta_alloc();
    char *argv[16];
    for (size_t i = 0; i < n; i++) {
        argv[i] = (char *)names[i];
        lnk_digest d;
        lnk_digest_of(names[i], strlen(names[i]), &d);
        assert_int_equal(lnk_prov_input_digest(p, names[i], &d), LNK_OK);
        char key[16];
        snprintf(key, sizeof key, "k%zu", i);
        assert_int_equal(lnk_meta_str(m, key, names[i]), LNK_OK);
    }
    assert_int_equal(lnk_prov_args(p, (int)n, argv), LNK_OK);
    assert_int_equal(lnk_meta_strs(m, "list", names, n), LNK_OK);
    const char *csv = tu_path("form.csv");
    assert_int_equal(lnk_meta_write(csv, p, NULL, m, NULL, 0), LNK_OK);
    json_t *j = tu_load_json(tu_path("form.meta.json"));
    json_t *ins = json_object_get(j, "inputs"), *cl = json_object_get(j, "command_line"),
           *clh = json_object_get(j, "command_line_bytes_hex"),
           *ls = json_object_get(j, "list"), *lsh = json_object_get(j, "list_bytes_hex");
    assert_int_equal(json_array_size(clh), n);
    for (size_t i = 0; i < n; i++) {
        int utf8 = i < 4;
        char key[16];
        snprintf(key, sizeof key, "k%zu", i);
        char *b1 = os_bytes(json_array_get(ins, i), "path"), *b2 = os_bytes(j, key);
        assert_string_equal(b1, names[i]);
        assert_string_equal(b2, names[i]);
        free(b1);
        free(b2);
        const char *t = json_string_value(json_array_get(cl, i));
        if (utf8) {
            assert_string_equal(t, names[i]);
            assert_true(json_is_null(json_array_get(clh, i)));
            assert_true(json_is_null(json_array_get(lsh, i)));
        } else {
            assert_non_null(strstr(t, "\xef\xbf\xbd")); /* U+FFFD */
            assert_true(json_is_string(json_array_get(clh, i)));
        }
        assert_string_equal(json_string_value(json_array_get(ls, i)), t);
    }
    /* Python reads the exact bytes back (studies/summary/sidecar.py, os_string), and
     * writes a path that is not UTF-8 in the same form through lnkit meta (os_form) */
    char *out;
    int st = tu_run(&out, "python3 -c \"import sys, os, json; sys.path.insert(0, 'studies/summary'); "
                    "import sidecar as s; m = json.load(open('%s')); n = len(m['command_line']); "
                    "print(' '.join(os.fsencode(s.os_string(m['inputs'][i], 'path')).hex() + ':' + "
                    "os.fsencode(s.os_string(m, 'command_line', i)).hex() for i in range(n))); "
                    "print(json.dumps(s.os_form({'p': os.fsdecode(b'caf\\\\xe9'), 'q': 'x'}), "
                    "sort_keys=True))\"", tu_path("form.meta.json"));
    if (st != 0)
        fail_msg("python: %s", out);
    char want[4096] = "", *w = want;
    for (size_t i = 0; i < n; i++) {
        char h[256] = "";
        for (const unsigned char *c = (const unsigned char *)names[i]; *c; c++)
            sprintf(h + strlen(h), "%02x", *c);
        w += sprintf(w, "%s%s:%s", i ? " " : "", h, h);
    }
    strcat(want, "\n{\"p\": \"caf\\ufffd\", \"p_bytes_hex\": \"636166e9\", \"q\": \"x\"}\n");
    assert_string_equal(out, want);
    free(out);
    /* one replacement per stray byte: "latin1 caf\xe9" -> "latin1 caf\uFFFD" */
    assert_string_equal(json_string_value(json_array_get(cl, 4)), "latin1 caf\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(j, "k4_bytes_hex")),
                        "6c6174696e3120636166e9");
    json_decref(j);
    lnk_meta_free(m);
    lnk_prov_free(p);
}

/* lnkit eigs: the sidecar holds argv exactly and every input file with the
 * checksum sha256sum gives; --version names the BLAS kernel and threads. */
static void test_cli_sidecar(void **state)
{
    (void)state;
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/cli", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit();
    int st = tu_run(&out, "cd '%s' && '%s' init --d 8 --L 1 --V 12 -o w.safetensors --quiet && "
                    "'%s' batch --synthetic --config w.json --rows 3 --len 5 -o b1.safetensors "
                    "--quiet && '%s' batch --synthetic --config w.json --rows 2 --len 4 "
                    "--rng-seed 5 -o b2.safetensors --quiet && '%s' eigs --config w.json --weights "
                    "w.safetensors --batch b1.safetensors --batch=b2.safetensors -k 2 "
                    "--rng-seed 4 --threads 1 --quiet -o e.csv",
                    dir, L, L, L, L);
    if (st != 0)
        fail_msg("commands failed (%d): %s", st, out);
    assert_string_equal(out, ""); /* --quiet: nothing on stderr */
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/e.meta.json", dir);
    json_t *j = tu_load_json(path);
    const char *argv[] = {L,       "eigs",           "--config",   "w.json",
                          "--weights", "w.safetensors", "--batch", "b1.safetensors",
                          "--batch=b2.safetensors", "-k", "2", "--rng-seed", "4", "--threads", "1",
                          "--quiet", "-o", "e.csv"};
    json_t *cl = json_object_get(j, "command_line");
    assert_int_equal(json_array_size(cl), sizeof argv / sizeof argv[0]);
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++)
        assert_string_equal(json_string_value(json_array_get(cl, i)), argv[i]);
    const char *files[] = {"w.json", "w.safetensors", "b1.safetensors", "b2.safetensors"};
    json_t *ins = json_object_get(j, "inputs");
    assert_int_equal(json_array_size(ins), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *e = json_array_get(ins, i);
        assert_string_equal(json_string_value(json_object_get(e, "path")), files[i]);
        assert_int_equal(tu_run(&out, "cd '%s' && sha256sum %s && stat -c %%s %s", dir, files[i],
                                files[i]), 0);
        assert_memory_equal(json_string_value(json_object_get(e, "sha256")), out, 64);
        assert_int_equal(json_integer_value(json_object_get(e, "bytes")),
                         atoll(strchr(out, '\n') + 1));
        free(out);
    }
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "named_seeds"), "rng")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), 1);
    assert_commit_form(json_string_value(json_object_get(j, "git_commit")));
    json_decref(j);

    assert_int_equal(tu_run(&out, "'%s' --version", L), 0);
    const char *lines[] = {"lnkit " LNK_VERSION "\n", "git commit: ", "compiler: ", "BLAS: OpenBLAS",
                           "BLAS kernel: ", "BLAS threads: ", "LAPACK ", "GSL ", "GLPK ",
                           "jansson "};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(out, lines[i]))
            fail_msg("--version lacks '%s':\n%s", lines[i], out);
    free(out);
}

/* Issue 30, item 11: a weights file named w"q.safetensors (or with a
 * backslash and a newline, or a name that is not UTF-8) made every
 * curvature command do its work and then fail.  Every command that writes a
 * sidecar now writes it, with the name exactly (§9 form). */
static void test_cli_odd_names(void **state)
{
    (void)state;
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/odd", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit();
    assert_int_equal(tu_run(&out, "cd '%s' && '%s' init --d 8 --L 1 --V 12 -o w.safetensors --quiet "
                            "&& '%s' batch --synthetic --config w.json --rows 3 --len 5 -o "
                            "b.safetensors --quiet && printf '1,0\\n0,1\\n-1,0\\n' > k.csv",
                            dir, L, L), 0);
    free(out);
    static const char *const names[] = {"w\"q", "back\\slash\nline", "caf\xe9"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char w[64], b[64], k[64];
        snprintf(w, sizeof w, "%s.safetensors", names[i]);
        snprintf(b, sizeof b, "%s.batch", names[i]);
        snprintf(k, sizeof k, "%s.csv", names[i]);
        char pw[700], pb[700], pk[700];
        snprintf(pw, sizeof pw, "%s/%s", dir, w);
        snprintf(pb, sizeof pb, "%s/%s", dir, b);
        snprintf(pk, sizeof pk, "%s/%s", dir, k);
        size_t n;
        char *x = tu_read_file(tu_path("odd/w.safetensors"), &n);
        tu_write_file(pw, x, n);
        free(x);
        x = tu_read_file(tu_path("odd/b.safetensors"), &n);
        tu_write_file(pb, x, n);
        free(x);
        x = tu_read_file(tu_path("odd/k.csv"), &n);
        tu_write_file(pk, x, n);
        free(x);
        setenv("ODD_W", w, 1), setenv("ODD_B", b, 1), setenv("ODD_K", k, 1);
        const char *runs[] = {"eigs -k 2 -o r.csv", "trace --probes 3 -o r.csv",
                              "density --runs 1 --steps 5 --sigma-fraction 0.05 -o r.csv",
                              "blocks --block '*.wq' --probes 2 --max-steps 64 --runs 1 --steps 5 "
                              "-o r.csv", "select"};
        for (size_t c = 0; c < sizeof runs / sizeof *runs; c++) {
            int sel = !strncmp(runs[c], "select", 6);
            int st = tu_run(&out, "cd '%s' && rm -f r.* && '%s' %s %s --quiet %s", dir, L,
                            runs[c], sel ? "--keys \"$ODD_K\" -o r.csv" : "--config w.json "
                            "--weights \"$ODD_W\" --batch \"$ODD_B\"", "");
            if (st != 0)
                fail_msg("%s with '%s': exit %d: %s", runs[c], names[i], st, out);
            free(out);
            char side[700];
            snprintf(side, sizeof side, "%s/r.meta.json", dir);
            json_t *j = tu_load_json(side);
            json_t *ins = json_object_get(j, "inputs");
            const char *want = sel ? k : w;
            int found = 0;
            for (size_t e = 0; e < json_array_size(ins); e++) {
                char *got = os_bytes(json_array_get(ins, e), "path");
                found |= !strcmp(got, want);
                free(got);
            }
            if (!found)
                fail_msg("%s: the sidecar's inputs lack '%s'", runs[c], want);
            if (!sel) {
                char *got = os_bytes(j, "weights");
                assert_string_equal(got, w);
                free(got);
            }
            json_decref(j);
        }
    }
}

/* The build's commit (Makefile, build/gen/commit.h) is "-dirty" when a
 * source differs from the commit, not when only results/ or prose does: a
 * study run after others rewrote results/ is built from the commit. */
static void test_commit_dirty_rule(void **state)
{
    (void)state;
    char *out;
    if (tu_run(&out, "git rev-parse --is-inside-work-tree 2>/dev/null") != 0) {
        free(out);
        skip();
    }
    free(out);
    const char *d = tu_path("clone");
    /* a plain make in the clone: not the variables of a make that runs this
     * test (check-asan passes BUILD=build-asan down through MAKEFLAGS) */
    const char *mk = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s BUILD=build "
                     "build/gen/commit.h >/dev/null 2>&1 && grep -c -- '-dirty' build/gen/commit.h";
    assert_int_equal(tu_run(&out, "git clone -q . '%s' && cd '%s' && { %s; "
                            "echo x >> results/README.md && %s; "
                            "echo '/* x */' >> src/core/sys.c && %s; }",
                            d, d, mk, mk, mk), 0);
    assert_string_equal(out, "0\n0\n1\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_large_file),
        cmocka_unit_test(test_sidecar_record),
        cmocka_unit_test(test_sidecar_keys),
        cmocka_unit_test(test_sidecar_path_form),
        cmocka_unit_test(test_cli_sidecar),
        cmocka_unit_test(test_cli_odd_names),
        cmocka_unit_test(test_commit_dirty_rule),
    };
    return cmocka_run_group_tests_name("provenance", tests, NULL, NULL);
}
