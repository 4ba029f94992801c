/* A library that keeps its promises (include/lnkit/error.h: it never prints
 * and never exits; issue 31): the library reads no environment variable and
 * neither exits nor executes a program; the programs' start-up
 * (src/front/start.c) reads the user's settings, refuses a bad one with one
 * line and exit 2, and passes them in; the test hooks exist in test builds
 * only. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lnkit/fault.h"
#include "lnkit/memory.h"
#include "testutil.h"

/* build/tests/test_start -> build (the build directory of this program). */
static const char *build_dir(void)
{
    static char b[PATH_MAX];
    if (!b[0]) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        assert_true(n > 0);
        exe[n] = 0;
        snprintf(b, sizeof b, "%s", dirname(dirname(exe)));
    }
    return b;
}

/* The symbols an archive's objects take from elsewhere (nm -u). */
static char *undefined_of(const char *archive)
{
    char *out;
    if (tu_run(&out, "nm -u '%s' | awk '{print $NF}' | sort -u", archive) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static int has_symbol(const char *list, const char *sym)
{
    size_t n = strlen(sym);
    for (const char *p = list; (p = strstr(p, sym)); p += n)
        if ((p == list || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Neither the library that make builds nor its test build calls getenv,
 * secure_getenv, exit, _exit, abort or an exec function; the plain library
 * has no fault injection (lnk_fault_set), the test build has. */
static void test_library_symbols(void **state)
{
    (void)state;
    char lib[PATH_MAX + 32], tlib[PATH_MAX + 32];
    snprintf(lib, sizeof lib, "%s/liblnkit.a", build_dir());
    snprintf(tlib, sizeof tlib, "%s/testing/liblnkit.a", build_dir());
    if (access(lib, R_OK) != 0) {
        print_message("skipped: %s not built\n", lib);
        skip();
    }
    static const char *const banned[] = {"getenv", "secure_getenv", "exit", "_exit", "_Exit",
                                         "abort", "execv", "execve", "execvp", "execl",
                                         "system", "popen", NULL};
    const char *libs[] = {lib, tlib};
    for (int k = 0; k < 2; k++) {
        char *u = undefined_of(libs[k]);
        assert_non_null(u);
        for (int i = 0; banned[i]; i++)
            if (has_symbol(u, banned[i]))
                fail_msg("%s calls %s", libs[k], banned[i]);
        free(u);
    }
    char *out;
    assert_int_equal(tu_run(&out, "nm -g --defined-only '%s' | grep -c ' T lnk_fault_set$'", lib),
                     1); /* grep: no line */
    assert_string_equal(out, "0\n");
    free(out);
    assert_int_equal(tu_run(&out, "nm -g --defined-only '%s' | grep -c ' T lnk_fault_set$'", tlib),
                     0);
    assert_string_equal(out, "1\n");
    free(out);
}

/* LNK_MEM_LIMIT_MB: a bad value is one line naming it and exit 2 (it was
 * ignored); a good one is passed in (lnk_memory_set_limit) and bounds the
 * limit. */
static void test_mem_limit(void **state)
{
    (void)state;
    static const char *const bad[] = {"abc", "-1", "0", "1.5", "+5", " 5", "5 ", "0x10",
                                      "99999999999999999999", "5MB"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out;
        int st = tu_run(&out, "LNK_MEM_LIMIT_MB='%s' '%s' params --d 8 --L 1 --V 12 2>&1 "
                        ">/dev/null", bad[i], tu_lnkit());
        if (st != 2 || /* the command named, as every message does */
            !strstr(out, "lnkit params: LNK_MEM_LIMIT_MB: expected a whole number of MiB") ||
            strchr(out, '\n') != out + strlen(out) - 1)
            fail_msg("LNK_MEM_LIMIT_MB='%s': exit %d, '%s'", bad[i], st, out);
        free(out);
    }
    char *out;
    /* empty: not set */
    assert_int_equal(tu_run(&out, "LNK_MEM_LIMIT_MB= '%s' params --d 8 --L 1 --V 12 >/dev/null",
                            tu_lnkit()), 0);
    free(out);
    assert_int_equal(tu_run(&out, "LNK_MEM_LIMIT_MB=2048 '%s' params --d 8 --L 1 --V 12 "
                            ">/dev/null", tu_lnkit()), 0);
    free(out);
    /* the library's own setter */
    size_t before = lnk_memory_limit();
    lnk_memory_set_limit((size_t)3 << 20);
    assert_true(lnk_memory_limit() <= (size_t)3 << 20);
    lnk_memory_set_limit(0);
    assert_true(lnk_memory_limit() == before);
}

/* The test hooks of a test build refuse a spec they cannot read (they were
 * ignored), and lnk_fault_set does. */
static void test_hooks(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"LNK_OUTPUT_FAULT", "write:ENOSPACE:5"}, {"LNK_OUTPUT_FAULT", "nowhere:term"},
        {"LNK_OUTPUT_FAULT", "write:EIO:-3"},     {"LNK_CKPT_FAULT", "rows"},
        {"LNK_CKPT_FAULT", "rows:0"},             {"LNK_CKPT_FAULT", "basis:2"},
        {"LNK_FAULT", "1:hvp:explode"},           {"LNK_FAULT", "x"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out;
        int st = tu_run(&out, "%s='%s' '%s' params --d 8 --L 1 --V 12 2>&1 >/dev/null",
                        bad[i][0], bad[i][1], tu_lnkit());
        char want[64];
        snprintf(want, sizeof want, "lnkit params: %s: ", bad[i][0]); /* the command named */
        if (st != 2 || !strstr(out, want))
            fail_msg("%s='%s': exit %d, '%s'", bad[i][0], bad[i][1], st, out);
        free(out);
    }
    assert_int_equal(lnk_fault_set(LNK_FAULT_OUTPUT, "write:EIO"), LNK_OK);
    assert_int_equal(lnk_fault_set(LNK_FAULT_OUTPUT, NULL), LNK_OK);
    assert_int_equal(lnk_fault_set(LNK_FAULT_CKPT, "file:2"), LNK_OK);
    assert_int_equal(lnk_fault_set(LNK_FAULT_CKPT, ""), LNK_OK);
    assert_int_equal(lnk_fault_set(LNK_FAULT_CKPT, "file:"), LNK_EINVAL);
    assert_int_equal(lnk_fault_set(99, "x"), LNK_EINVAL);
}

/* The output fault through the API, in this process: a write of more than
 * B bytes fails with ENOSPC and leaves nothing behind. */
static void test_output_fault_api(void **state)
{
    (void)state;
    const char *p = tu_path("full.txt");
    assert_int_equal(lnk_fault_set(LNK_FAULT_OUTPUT, "write:ENOSPC:10"), LNK_OK);
    lnk_afile a;
    assert_int_equal(lnk_afile_open(&a, p), LNK_OK);
    fputs("0123456789abcdef", a.f);
    assert_int_equal(lnk_afile_commit(&a), LNK_EIO);
    assert_non_null(strstr(lnk_errmsg(), "No space left"));
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(lnk_fault_set(LNK_FAULT_OUTPUT, NULL), LNK_OK);
    assert_int_equal(lnk_afile_open(&a, p), LNK_OK);
    fputs("0123456789abcdef", a.f);
    assert_int_equal(lnk_afile_commit(&a), LNK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_symbols),
        cmocka_unit_test(test_mem_limit),
        cmocka_unit_test(test_hooks),
        cmocka_unit_test(test_output_fault_api),
    };
    return cmocka_run_group_tests_name("start", tests, NULL, NULL);
}
