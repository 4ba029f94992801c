/* The OpenBLAS kernel at start-up (include/lnkit/blas.h): the decision on
 * made-up CPUs and kernel names, and the re-exec end to end, with a weaker
 * kernel forced through OPENBLAS_CORETYPE and LNK_BLAS_TEST_FALLBACK=1 (which
 * makes lnkit take it for OpenBLAS's own fallback, as on a CPU OpenBLAS does
 * not recognise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const lnk_cpu_features AVX512 = {1, 1, 1, 1, 1, 1, 1};
static const lnk_cpu_features AVX2 = {1, 1, 1, 0, 0, 0, 0};
static const lnk_cpu_features AVX = {1, 0, 0, 0, 0, 0, 0};
static const lnk_cpu_features SSE = {0, 0, 0, 0, 0, 0, 0};
/* AVX-512 F without VL/BW (Knights Landing): not enough for SkylakeX */
static const lnk_cpu_features KNL = {1, 1, 1, 1, 0, 0, 0};

/* The kernel lnk_blas_decide switches to ("" = stays); fails on an error. */
static const char *decide(const lnk_cpu_features *f, const char *loaded, int dynamic,
                          const char *user, const char *setting, const char *re, char *note)
{
    const char *to = (const char *)1;
    int st = lnk_blas_decide(f, loaded, dynamic, user, setting, re, &to, note, 256);
    if (st != LNK_OK)
        fail_msg("lnk_blas_decide: %s", lnk_errmsg());
    return to ? to : "";
}

static void test_best_kernel(void **s)
{
    (void)s;
    assert_string_equal(lnk_blas_best_kernel(&AVX512), "SkylakeX");
    assert_string_equal(lnk_blas_best_kernel(&AVX2), "Haswell");
    assert_string_equal(lnk_blas_best_kernel(&KNL), "Haswell");
    assert_string_equal(lnk_blas_best_kernel(&AVX), "Sandybridge");
    assert_null(lnk_blas_best_kernel(&SSE));
    /* AVX2 without FMA is only an AVX machine for OpenBLAS's Haswell kernel */
    lnk_cpu_features nofma = AVX2;
    nofma.fma = 0;
    assert_string_equal(lnk_blas_best_kernel(&nofma), "Sandybridge");
    const char *canon;
    assert_int_equal(lnk_blas_kernel_class("cooperlake", &canon), 3);
    assert_string_equal(canon, "Cooperlake");
    assert_int_equal(lnk_blas_kernel_class("SKYLAKEX", NULL), 3);
    assert_int_equal(lnk_blas_kernel_class("Zen", NULL), 2);
    assert_int_equal(lnk_blas_kernel_class("Haswell", NULL), 2);
    assert_int_equal(lnk_blas_kernel_class("Piledriver", NULL), 1);
    assert_int_equal(lnk_blas_kernel_class("Prescott", NULL), 0);
    assert_int_equal(lnk_blas_kernel_class("Zen5", &canon), -1);
    assert_null(canon);
    assert_int_equal(lnk_blas_kernel_class(NULL, NULL), -1);
}

static void test_decide_auto(void **s)
{
    (void)s;
    char note[256];
    /* the machine: an AVX-512 CPU that OpenBLAS 0.3.21 runs on Haswell */
    assert_string_equal(decide(&AVX512, "Haswell", 1, NULL, NULL, NULL, note), "SkylakeX");
    assert_string_equal(decide(&AVX512, "Zen", 1, NULL, "auto", NULL, note), "SkylakeX");
    assert_string_equal(decide(&AVX512, "Prescott", 1, NULL, "", NULL, note), "SkylakeX");
    /* this machine: OpenBLAS picks Cooperlake itself; SkylakeX is as good */
    assert_string_equal(decide(&AVX512, "Cooperlake", 1, NULL, NULL, NULL, note), "");
    assert_non_null(strstr(note, "kept"));
    assert_string_equal(decide(&AVX512, "SkylakeX", 1, NULL, NULL, NULL, note), "");
    /* AVX2 machines */
    assert_string_equal(decide(&AVX2, "Haswell", 1, NULL, NULL, NULL, note), "");
    assert_string_equal(decide(&AVX2, "Zen", 1, NULL, NULL, NULL, note), "");
    assert_string_equal(decide(&AVX2, "Sandybridge", 1, NULL, NULL, NULL, note), "Haswell");
    assert_string_equal(decide(&AVX2, "Nehalem", 1, NULL, NULL, NULL, note), "Haswell");
    assert_string_equal(decide(&KNL, "Haswell", 1, NULL, NULL, NULL, note), "");
    /* an OpenBLAS kernel above what detection sees is not downgraded */
    assert_string_equal(decide(&AVX2, "SkylakeX", 1, NULL, NULL, NULL, note), "");
    assert_string_equal(decide(&AVX, "Nehalem", 1, NULL, NULL, NULL, note), "Sandybridge");
    assert_string_equal(decide(&SSE, "Nehalem", 1, NULL, NULL, NULL, note), "");
    /* names lnkit does not know are left alone */
    assert_string_equal(decide(&AVX512, "Zen5", 1, NULL, NULL, NULL, note), "");
    assert_non_null(strstr(note, "does not know"));
    assert_string_equal(decide(&AVX512, NULL, 1, NULL, NULL, NULL, note), "");
    /* OpenBLAS without DYNAMIC_ARCH ignores OPENBLAS_CORETYPE */
    assert_string_equal(decide(&AVX512, "Haswell", 0, NULL, NULL, NULL, note), "");
    assert_non_null(strstr(note, "DYNAMIC_ARCH"));
}

static void test_decide_overrides(void **s)
{
    (void)s;
    char note[256];
    /* the user's OPENBLAS_CORETYPE always wins, whatever LNK_BLAS_KERNEL says */
    assert_string_equal(decide(&AVX512, "Haswell", 1, "Haswell", NULL, NULL, note), "");
    assert_non_null(strstr(note, "OPENBLAS_CORETYPE=Haswell"));
    assert_string_equal(decide(&AVX512, "Haswell", 1, "Haswell", "SkylakeX", NULL, note), "");
    /* keep */
    assert_string_equal(decide(&AVX512, "Haswell", 1, NULL, "keep", NULL, note), "");
    assert_non_null(strstr(note, "keep"));
    assert_string_equal(decide(&AVX512, "Haswell", 1, NULL, "KEEP", NULL, note), "");
    /* a named kernel, any spelling; a weaker one is allowed */
    assert_string_equal(decide(&AVX512, "Haswell", 1, NULL, "skylakex", NULL, note), "SkylakeX");
    assert_string_equal(decide(&AVX512, "Cooperlake", 1, NULL, "haswell", NULL, note), "Haswell");
    assert_string_equal(decide(&AVX512, "Haswell", 1, NULL, "Haswell", NULL, note), "");
    assert_non_null(strstr(note, "already"));
    /* after the re-exec: never again (the guard), whatever is loaded */
    assert_string_equal(decide(&AVX512, "SkylakeX", 1, "SkylakeX", NULL, "Haswell", note), "");
    assert_non_null(strstr(note, "re-executed on SkylakeX"));
    assert_string_equal(decide(&AVX512, "Haswell", 1, "Cooperlake", NULL, "Haswell", note), "");
    assert_non_null(strstr(note, "but OpenBLAS loaded Haswell"));
    /* errors: unknown name, a kernel the CPU cannot run */
    const char *to;
    assert_int_equal(lnk_blas_decide(&AVX512, "Haswell", 1, NULL, "skylake", NULL, &to, note,
                                     256), LNK_EINVAL);
    assert_null(to);
    assert_non_null(strstr(lnk_errmsg(), "LNK_BLAS_KERNEL=skylake"));
    assert_non_null(strstr(lnk_errmsg(), "SkylakeX"));
    assert_int_equal(lnk_blas_decide(&AVX2, "Haswell", 1, NULL, "SkylakeX", NULL, &to, note, 256),
                     LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "AVX-512"));
    assert_int_equal(lnk_blas_decide(&SSE, "Nehalem", 1, NULL, "Sandybridge", NULL, &to, note,
                                     256), LNK_EINVAL);
}

/* How often s occurs in text. */
static int count(const char *text, const char *s)
{
    int k = 0;
    for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
        k++;
    return k;
}

/* This machine's best kernel and a weaker one to force (NULL: none). */
static const char *weaker(const char **best)
{
    lnk_cpu_features f;
    lnk_cpu_detect(&f);
    *best = lnk_blas_best_kernel(&f);
    if (!*best)
        return NULL;
    int c = lnk_blas_kernel_class(*best, NULL);
    return c == 3 ? "Haswell" : c == 2 ? "Sandybridge" : "Nehalem";
}

static void test_reexec(void **s)
{
    (void)s;
    const char *best, *weak = weaker(&best);
    if (!weak) {
        print_message("no AVX on this CPU: nothing to switch to\n");
        skip();
    }
    char *out, pat[96];
    /* the fallback: OpenBLAS loads the weaker kernel, lnkit re-executes once on the best */
    int st = tu_run(&out, "OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=%s LNK_BLAS_TEST_FALLBACK=1 "
                    "LNK_BLAS_KERNEL= '%s' --version", weak, tu_lnkit());
    print_message("%s", out);
    assert_int_equal(st, 0);
    snprintf(pat, sizeof pat, "Core: %s\n", weak);
    assert_int_equal(count(out, pat), 1);
    snprintf(pat, sizeof pat, "Core: %s\n", best);
    assert_int_equal(count(out, pat), 1);
    assert_int_equal(count(out, "Core: "), 2); /* two loads: one re-exec */
    assert_int_equal(count(out, "lnkit " LNK_VERSION "\n"), 1);
    snprintf(pat, sizeof pat, "BLAS kernel: %s (auto: OpenBLAS chose %s; lnkit re-executed "
             "on %s)", best, weak, best);
    assert_non_null(strstr(out, pat));
    free(out);

    /* the same weak kernel as the user's own choice: kept, no re-exec */
    st = tu_run(&out, "OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=%s LNK_BLAS_KERNEL= '%s' --version",
                weak, tu_lnkit());
    assert_int_equal(st, 0);
    assert_int_equal(count(out, "Core: "), 1);
    snprintf(pat, sizeof pat, "BLAS kernel: %s (OPENBLAS_CORETYPE=%s", weak, weak);
    assert_non_null(strstr(out, pat));
    free(out);

    /* LNK_BLAS_KERNEL=keep keeps the fallback */
    st = tu_run(&out, "OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=%s LNK_BLAS_TEST_FALLBACK=1 "
                "LNK_BLAS_KERNEL=keep '%s' --version", weak, tu_lnkit());
    assert_int_equal(st, 0);
    assert_int_equal(count(out, "Core: "), 1);
    free(out);

    /* a kernel OpenBLAS 0.3.21 does not accept by name (Cooperlake): it loads
     * something else after the re-exec, and the guard stops a second one */
    if (lnk_blas_kernel_class(best, NULL) == 3) {
        st = tu_run(&out, "OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=%s LNK_BLAS_TEST_FALLBACK=1 "
                    "LNK_BLAS_KERNEL=Cooperlake '%s' --version", weak, tu_lnkit());
        assert_int_equal(st, 0);
        assert_int_equal(count(out, "lnkit " LNK_VERSION "\n"), 1);
        assert_true(count(out, "Core: ") == 2);
        free(out);
    }

    /* a whole command after the re-exec: arguments (with spaces) pass unchanged */
    st = tu_run(&out, "mkdir -p '%s/a b' && OPENBLAS_CORETYPE=%s LNK_BLAS_TEST_FALLBACK=1 "
                "LNK_BLAS_KERNEL= '%s' batch --synthetic --V 40 --rows 3 --len 5 --rng-seed 7 "
                "-o '%s/a b/x.safetensors' && '%s' batch --synthetic --V 40 --rows 3 "
                "--len 5 --rng-seed 7 -o '%s/a b/y.safetensors' && cmp '%s/a b/x.safetensors' "
                "'%s/a b/y.safetensors'", tu_tmpdir(), weak, tu_lnkit(), tu_tmpdir(),
                tu_lnkit(), tu_tmpdir(), tu_tmpdir(), tu_tmpdir());
    assert_int_equal(st, 0);
    free(out);

    /* a bad LNK_BLAS_KERNEL: one line, exit 2 */
    st = tu_run(&out, "LNK_BLAS_KERNEL=skylake '%s' --version", tu_lnkit());
    assert_int_equal(st, 2);
    assert_int_equal(count(out, "\n"), 1);
    assert_non_null(strstr(out, "lnkit: LNK_BLAS_KERNEL=skylake: unknown OpenBLAS kernel"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_kernel),
        cmocka_unit_test(test_decide_auto),
        cmocka_unit_test(test_decide_overrides),
        cmocka_unit_test(test_reexec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
