/* Provenance of results (docs/MODEL.md §9): SHA-256 against the FIPS 180-2
 * examples and sha256sum, the sidecar's command line, inputs, seeds, commit
 * and versions (library and through lnkit eigs), and lnkit --version. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
 * checksums, seeds, commit, versions, threads and ranks. */
static void test_sidecar_record(void **state)
{
    (void)state;
    const char *in = tu_path("input.txt");
    tu_write_file(in, "some input\n", 11);
    char *const argv[] = {"prog", "--x", "a b", "", "--y=\"q\"", NULL};
    lnk_prov_clear();
    lnk_prov_args(5, argv);
    assert_int_equal(lnk_prov_input(in), LNK_OK);
    assert_int_equal(lnk_prov_input(in), LNK_OK); /* recorded once */
    assert_int_equal(lnk_prov_input(tu_path("missing.txt")), LNK_EIO);
    lnk_prov_seed("rng", 7);
    lnk_prov_seed("init", 3);
    lnk_prov_seed("rng", 9);
    const char *csv = tu_path("rec.csv");
    assert_int_equal(lnk_meta_write(csv, NULL, NULL, "2020-01-01T00:00:00Z", 0.5), LNK_OK);
    json_t *j = tu_load_json(tu_path("rec.meta.json"));
    json_t *cl = json_object_get(j, "command_line");
    assert_int_equal(json_array_size(cl), 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_array_get(cl, (size_t)i)), argv[i]);
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
    lnk_prov_clear();
    j = (assert_int_equal(lnk_meta_write(csv, NULL, NULL, NULL, 0), LNK_OK),
         tu_load_json(tu_path("rec.meta.json")));
    assert_int_equal(json_array_size(json_object_get(j, "command_line")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "inputs")), 0);
    json_decref(j);
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
        cmocka_unit_test(test_cli_sidecar),
        cmocka_unit_test(test_commit_dirty_rule),
    };
    return cmocka_run_group_tests_name("provenance", tests, NULL, NULL);
}
