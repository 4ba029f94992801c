/* Inputs are read once (issue 30, item 7): every input option of every
 * command given as a FIFO and as /dev/fd/N gives the regular file's result,
 * with the size and SHA-256 of the bytes used in the sidecar
 * (tests/test_inputs.sh, generated from its table of commands and inputs);
 * and the readers' digests against sha256sum. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* lnk_read_input's digest: the size and SHA-256 of the bytes read. */
static void test_text_digest(void **state)
{
    (void)state;
    const char *p = tu_path("t.txt");
    tu_write_file(p, "hello\nworld\n", 12);
    char *buf, *out;
    size_t len;
    lnk_digest d;
    assert_int_equal(lnk_read_input(p, 1000, "text", &buf, &len, &d), LNK_OK);
    assert_int_equal(d.bytes, 12);
    assert_int_equal(tu_run(&out, "sha256sum '%s'", p), 0);
    assert_memory_equal(d.sha256, out, 64);
    free(out);
    free(buf);
    /* from a pipe: the bytes that came through it */
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "printf 'abc' | cat");
    FILE *f = popen(cmd, "r");
    char fdp[64];
    snprintf(fdp, sizeof fdp, "/dev/fd/%d", fileno(f));
    assert_int_equal(lnk_read_input(fdp, 1000, "text", &buf, &len, &d), LNK_OK);
    pclose(f);
    assert_int_equal(d.bytes, 3);
    assert_string_equal(d.sha256,
                        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    free(buf);
}

/* lnk_st_read of path's bytes through a pipe (cat PATH | ...): the status. */
static int st_read_pipe(const char *path, lnk_st_file **f)
{
    char cmd[PATH_MAX + 16], fdp[64];
    snprintf(cmd, sizeof cmd, "cat '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    snprintf(fdp, sizeof fdp, "/dev/fd/%d", fileno(p));
    int st = lnk_st_read(fdp, f);
    pclose(p);
    return st;
}

/* A safetensors file of n F64 values 0, 1, ... (header as writers pad it),
 * followed by extra bytes; claim: the element count the header states. */
static void write_st(const char *path, long long claim, int n, const char *extra)
{
    char hdr[256];
    int h = snprintf(hdr, sizeof hdr, "{\"v\":{\"dtype\":\"F64\",\"shape\":[%lld],"
                     "\"data_offsets\":[0,%lld]}}", claim, claim * 8);
    while (h % 8)
        hdr[h++] = ' ';
    size_t total = 8 + (size_t)h + 8 * (size_t)n + strlen(extra);
    unsigned char *b = malloc(total);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, hdr, (size_t)h);
    for (int i = 0; i < n; i++) {
        double x = i;
        memcpy(b + 8 + h + 8 * i, &x, 8);
    }
    memcpy(b + 8 + h + 8 * n, extra, strlen(extra));
    tu_write_file(path, b, total);
    free(b);
}

/* Safetensors from a stream: the same tensors and digest as from the file;
 * a stream cut short, one with bytes after the last tensor and one whose
 * header claims more than memory allows are refused in one line (the last
 * without allocating it). */
static void test_st_stream(void **state)
{
    (void)state;
    const char *p = tu_path("s.safetensors");
    write_st(p, 5, 5, "");
    lnk_st_file *a, *b;
    assert_int_equal(lnk_st_read(p, &a), LNK_OK);
    assert_int_equal(st_read_pipe(p, &b), LNK_OK);
    assert_int_equal(b->n, 1);
    assert_memory_equal(a->t[0].data, b->t[0].data, 5 * 8);
    assert_int_equal(a->digest.bytes, b->digest.bytes);
    assert_string_equal(a->digest.sha256, b->digest.sha256);
    char *out;
    assert_int_equal(tu_run(&out, "sha256sum '%s'", p), 0);
    assert_memory_equal(b->digest.sha256, out, 64);
    free(out);
    lnk_st_free(a);
    lnk_st_free(b);
    write_st(p, 5, 4, "");
    assert_int_equal(st_read_pipe(p, &b), LNK_EFORMAT);
    assert_non_null(strstr(lnk_errmsg(), "the stream ended"));
    write_st(p, 5, 5, "junk");
    assert_int_equal(st_read_pipe(p, &b), LNK_EFORMAT);
    assert_non_null(strstr(lnk_errmsg(), "trailing bytes after the last tensor 'v'"));
    write_st(p, (long long)1 << 56, 2, "");
    assert_int_equal(st_read_pipe(p, &b), LNK_ENOMEM);
    assert_non_null(strstr(lnk_errmsg(), "more than the"));
    assert_int_equal(lnk_st_read(p, &b), LNK_EFORMAT); /* the file: beyond its end */
}

/* The commands, every input option, FIFO and /dev/fd/N. */
static void test_cli_inputs(void **state)
{
    (void)state;
    tu_run_script("test_inputs.sh");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_digest),
        cmocka_unit_test(test_st_stream),
        cmocka_unit_test(test_cli_inputs),
    };
    return cmocka_run_group_tests_name("inputs", tests, NULL, NULL);
}
