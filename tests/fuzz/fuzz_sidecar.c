/* Fuzz the sidecar writer (lnk_meta_write, include/lnkit/io.h) with
 * arbitrary bytes where a sidecar records strings the system gives: the
 * fuzzer's bytes, cut at NUL bytes, are an input's path, the command line's
 * arguments, a key's string, a list of strings and the result file's name.
 * Whatever they are, the sidecar must be written, parse as JSON (jansson)
 * and give every string back byte for byte by the rule of docs/MODEL.md §9
 * (the string itself when it is UTF-8, else KEY_bytes_hex), and the text
 * beside the exact bytes is the string with U+FFFD for each stray byte. */
#include <sys/stat.h>
#include <jansson.h>
#include "fuzz.h"

/* The exact bytes of a recorded string (malloc'd). */
static char *exact(json_t *text, json_t *hex)
{
    if (!hex || json_is_null(hex)) {
        FUZZ_ASSERT(json_is_string(text));
        return strdup(json_string_value(text));
    }
    FUZZ_ASSERT(json_is_string(hex));
    const char *h = json_string_value(hex);
    size_t n = strlen(h) / 2;
    FUZZ_ASSERT(strlen(h) == 2 * n);
    char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned x;
        FUZZ_ASSERT(sscanf(h + 2 * i, "%2x", &x) == 1);
        b[i] = (char)x;
    }
    b[n] = 0;
    return b;
}

/* The recorded form of s is right: exact bytes back; the text is s when s
 * is UTF-8 (no hex then), else s with stray bytes as U+FFFD. */
static void check(json_t *text, json_t *hex, const char *s)
{
    char *b = exact(text, hex);
    FUZZ_ASSERT(strcmp(b, s) == 0);
    free(b);
    const char *t = json_string_value(text);
    FUZZ_ASSERT(t != NULL);
    if (!hex || json_is_null(hex))
        FUZZ_ASSERT(strcmp(t, s) == 0);
    else
        FUZZ_ASSERT(strstr(t, "\xef\xbf\xbd") != NULL && strlen(t) >= strlen(s));
}

/* Every string of s[0..k) recorded right in the sidecar j. */
static void check_all(json_t *j, char **s, int k)
{
    json_t *in = json_array_get(json_object_get(j, "inputs"), 0);
    check(json_object_get(in, "path"), json_object_get(in, "path_bytes_hex"), s[0]);
    FUZZ_ASSERT(json_integer_value(json_object_get(in, "bytes")) == (json_int_t)strlen(s[0]));
    check(json_object_get(j, "weights"), json_object_get(j, "weights_bytes_hex"), s[0]);
    json_t *cl = json_object_get(j, "command_line");
    json_t *clh = json_object_get(j, "command_line_bytes_hex");
    json_t *fl = json_object_get(j, "files"), *flh = json_object_get(j, "files_bytes_hex");
    FUZZ_ASSERT(json_array_size(cl) == (size_t)k && json_array_size(fl) == (size_t)k);
    for (int i = 0; i < k; i++) {
        check(json_array_get(cl, (size_t)i), clh ? json_array_get(clh, (size_t)i) : NULL, s[i]);
        check(json_array_get(fl, (size_t)i), flh ? json_array_get(flh, (size_t)i) : NULL, s[i]);
    }
    FUZZ_ASSERT(json_is_string(json_object_get(j, "start_time")));
    check(json_object_get(j, "blas_kernel_choice"),
          json_object_get(j, "blas_kernel_choice_bytes_hex"), s[k - 1]);
}

static char dir[64];
static void remove_dir(void) { rmdir(dir); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    static long runs;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/lnk_fuzz_sidecar.%d", (int)getpid());
        mkdir(dir, 0700);
        atexit(remove_dir);
    }
    /* the strings: the input cut at NUL bytes (at most 8) */
    char *buf = malloc(n + 1), *s[8];
    memcpy(buf, data, n);
    buf[n] = 0;
    int k = 0;
    for (size_t a = 0; k < 8;) {
        s[k++] = buf + a;
        a += strlen(buf + a) + 1;
        if (a > n)
            break;
    }
    lnk_prov *p = lnk_prov_alloc();
    lnk_meta *m = lnk_meta_alloc();
    FUZZ_ASSERT(p && m);
    lnk_digest d;
    lnk_digest_of(s[0], strlen(s[0]), &d);
    FUZZ_ASSERT(lnk_prov_input_digest(p, s[0], &d) == LNK_OK);
    FUZZ_ASSERT(lnk_prov_args(p, k, s) == LNK_OK);
    FUZZ_ASSERT(lnk_prov_blas_note(p, s[k - 1]) == LNK_OK);
    FUZZ_ASSERT(lnk_meta_str(m, "weights", s[0]) == LNK_OK);
    FUZZ_ASSERT(lnk_meta_strs(m, "files", (const char *const *)s, (size_t)k) == LNK_OK);
    /* the text in memory, every time */
    char *text = NULL;
    FUZZ_ASSERT(lnk_meta_text(p, NULL, m, s[1 % k], 1.5, &text) == LNK_OK);
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    FUZZ_ASSERT(j != NULL);
    check_all(j, s, k);
    free(text);
    /* the file (written and synced: slow), one run in 16: the result's name
     * is the last string as a file name in dir ('/' cannot be in one) */
    if (runs++ % 16 == 0) {
        char name[4200];
        snprintf(name, sizeof name, "%s/r%.4000s", dir, s[k - 1]);
        for (char *q = name + strlen(dir) + 1; *q; q++)
            if (*q == '/')
                *q = '_';
        int st = lnk_meta_write(name, p, NULL, m, s[1 % k], 1.5);
        fuzz_check_message();
        /* only a name too long for the file system may fail (with .meta.json.tmp.XXXXXX) */
        FUZZ_ASSERT(st == LNK_OK || strlen(s[k - 1]) > 200);
        if (st == LNK_OK) {
            char *side = lnk_meta_path(name);
            json_t *f = json_load_file(side, JSON_REJECT_DUPLICATES, &e);
            FUZZ_ASSERT(f != NULL);
            check_all(f, s, k);
            /* the file is the text (its folder aside, which is this process's) */
            json_object_del(f, "cwd"), json_object_del(j, "cwd");
            json_object_del(f, "cwd_bytes_hex"), json_object_del(j, "cwd_bytes_hex");
            FUZZ_ASSERT(json_equal(f, j));
            json_decref(f);
            unlink(side);
            free(side);
        }
    }
    json_decref(j);
    lnk_meta_free(m);
    lnk_prov_free(p);
    free(buf);
    return 0;
}
