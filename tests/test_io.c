/* Output files: atomic writes, CSV (RFC 4180, %.17g), time helpers and the
 * NAME.meta.json sidecar. */
#include "testutil.h"
#include <dirent.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* A fresh empty directory inside the test's temporary directory. */
static const char *fresh_dir(const char *name)
{
    const char *d = tu_path(name);
    assert_int_equal(mkdir(d, 0700), 0);
    return d;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static char *join(const char *dir, const char *name)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

/* ------------------------------------------------------------------ afile */

static void test_afile_abort(void **state)
{
    (void)state;
    const char *dir = fresh_dir("abort");
    char *path = join(dir, "out.txt");
    lnk_afile a;
    assert_int_equal(lnk_afile_open(&a, path), LNK_OK);
    assert_non_null(a.f);
    assert_int_equal(count_entries(dir), 1);     /* the temporary file exists meanwhile */
    assert_int_equal(access(path, F_OK), -1);    /* but not the final name */
    fputs("partial", a.f);
    lnk_afile_abort(&a);
    assert_int_equal(count_entries(dir), 0);
    lnk_afile_abort(&a);                          /* twice is safe */
    assert_int_equal(count_entries(dir), 0);
    free(path);
}

static void test_afile_commit(void **state)
{
    (void)state;
    const char *dir = fresh_dir("commit");
    char *path = join(dir, "out.txt");
    tu_write_file(path, "old content", 11);
    lnk_afile a;
    assert_int_equal(lnk_afile_open(&a, path), LNK_OK);
    fputs("new\ncontent\n", a.f);
    /* the old file stays in place until the commit */
    char *s = tu_read_file(path, NULL);
    assert_string_equal(s, "old content");
    free(s);
    if (lnk_afile_commit(&a) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    s = tu_read_file(path, NULL);
    assert_string_equal(s, "new\ncontent\n");
    free(s);
    assert_int_equal(count_entries(dir), 1);
    /* ordinary permissions, not mkstemp's 0600 */
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    mode_t u = umask(022);
    umask(u);
    assert_int_equal(sb.st_mode & 0777, 0666 & ~u);
    lnk_afile_abort(&a);                          /* after commit: harmless */
    assert_int_equal(access(path, F_OK), 0);
    free(path);
}

static void test_afile_failures(void **state)
{
    (void)state;
    lnk_afile a;
    const char *missing = tu_path("no-such-dir/out.csv");
    assert_int_equal(lnk_afile_open(&a, missing), LNK_EIO);
    assert_msg_has("no-such-dir/out.csv");
    assert_null(a.f);
    lnk_afile_abort(&a);                          /* safe on a failed open */

    /* the final name is a folder: refused at once, nothing created */
    const char *dir = fresh_dir("renamefail");
    char *target = join(dir, "target");
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(lnk_afile_open(&a, target), LNK_EIO);
    assert_msg_has(target);
    assert_msg_has("is a folder");
    assert_int_equal(count_entries(dir), 1);      /* only the directory */
    /* rename fails (the name became a non-empty folder meanwhile): no temp file left */
    char *target2 = join(dir, "target2");
    assert_int_equal(lnk_afile_open(&a, target2), LNK_OK);
    fputs("data", a.f);
    assert_int_equal(mkdir(target2, 0700), 0);
    char *inner = join(target2, "x");
    tu_write_file(inner, "x", 1);
    assert_int_equal(lnk_afile_commit(&a), LNK_EIO);
    assert_msg_has(target2);
    assert_int_equal(count_entries(dir), 2);      /* only the two folders */
    assert_null(a.f);
    lnk_afile_abort(&a);
    free(inner);
    free(target);
    free(target2);
}

/* -------------------------------------------------------------------- CSV */

static char *csv_to_string(void (*fill)(lnk_csv *c), const char *const *hdr, int ncol)
{
    const char *path = tu_path("t.csv");
    lnk_afile a;
    assert_int_equal(lnk_afile_open(&a, path), LNK_OK);
    lnk_csv c;
    assert_int_equal(lnk_csv_begin(&c, a.f, hdr, ncol), LNK_OK);
    fill(&c);
    lnk_csv_free(&c);
    assert_int_equal(lnk_afile_commit(&a), LNK_OK);
    return tu_read_file(path, NULL);
}

static void fill_quoting(lnk_csv *c)
{
    assert_int_equal(lnk_csv_str(c, "plain"), LNK_OK);
    assert_int_equal(lnk_csv_str(c, "a,b \"c\"\nd"), LNK_OK);
    assert_int_equal(lnk_csv_int(c, -42), LNK_OK);
    assert_int_equal(lnk_csv_end_row(c), LNK_OK);
    assert_int_equal(lnk_csv_str(c, ""), LNK_OK);
    assert_int_equal(lnk_csv_str(c, "x\r"), LNK_OK);
    assert_int_equal(lnk_csv_double(c, 0.5), LNK_OK);
    assert_int_equal(lnk_csv_end_row(c), LNK_OK);
}

static void test_csv_quoting(void **state)
{
    (void)state;
    const char *hdr[] = {"name", "note, with comma", "n"};
    char *s = csv_to_string(fill_quoting, hdr, 3);
    /* RFC 4180: quote fields with , " CR LF; double the quotes inside */
    assert_string_equal(s, "name,\"note, with comma\",n\n"
                           "plain,\"a,b \"\"c\"\"\nd\",-42\n"
                           ",\"x\r\",0.5\n");
    free(s);
}

static const double samples[] = {0.1, 1.0 / 3.0, -2.0 / 7.0, 1e-310, 4.9e-324, DBL_MAX, -DBL_MIN,
                                 -0.0, 123456789012345680.0, 6.02214076e23, 1.0000000000000002};
#define NS (int)(sizeof samples / sizeof samples[0])

static void fill_doubles(lnk_csv *c)
{
    for (int i = 0; i < NS; i++) {
        assert_int_equal(lnk_csv_int(c, i), LNK_OK);
        assert_int_equal(lnk_csv_double(c, samples[i]), LNK_OK);
        assert_int_equal(lnk_csv_end_row(c), LNK_OK);
    }
}

static void test_csv_doubles_roundtrip(void **state)
{
    (void)state;
    const char *hdr[] = {"i", "x"};
    char *s = csv_to_string(fill_doubles, hdr, 2);
    char *line = strtok(s, "\n");
    assert_string_equal(line, "i,x");
    for (int i = 0; i < NS; i++) {
        line = strtok(NULL, "\n");
        assert_non_null(line);
        char *comma = strchr(line, ',');
        assert_non_null(comma);
        assert_int_equal(atoi(line), i);
        char *end;
        double back = strtod(comma + 1, &end);
        assert_int_equal(*end, '\0');
        assert_memory_equal(&back, &samples[i], sizeof back);  /* same bits */
    }
    assert_null(strtok(NULL, "\n"));
    free(s);
}

static void test_csv_refusals(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    const char *hdr[] = {"step", "loss", "grad_norm"};
    lnk_csv c;
    assert_int_equal(lnk_csv_begin(&c, f, hdr, 3), LNK_OK);
    assert_int_equal(lnk_csv_int(&c, 1), LNK_OK);
    assert_int_equal(lnk_csv_double(&c, NAN), LNK_ENONFINITE);
    assert_msg_has("'loss'");
    assert_int_equal(lnk_csv_double(&c, 1.0), LNK_OK);
    assert_int_equal(lnk_csv_double(&c, -INFINITY), LNK_ENONFINITE);
    assert_msg_has("'grad_norm'");
    /* two fields of three */
    assert_int_equal(lnk_csv_end_row(&c), LNK_EINVAL);
    assert_msg_has("2 fields");
    assert_int_equal(lnk_csv_double(&c, 2.0), LNK_OK);
    assert_int_equal(lnk_csv_str(&c, "extra"), LNK_EINVAL);  /* a fourth */
    assert_int_equal(lnk_csv_end_row(&c), LNK_OK);
    lnk_csv_free(&c);
    const char *none[] = {NULL};
    assert_int_equal(lnk_csv_begin(&c, f, none, 0), LNK_EINVAL);
    fclose(f);
}

/* --------------------------------------------------------- time, threads */

static void test_time(void **state)
{
    (void)state;
    double t0 = lnk_now();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    double t1 = lnk_now();
    assert_true(t1 - t0 >= 0.0015 && t1 - t0 < 5.0);

    char buf[32];
    time_t before = time(NULL);
    lnk_iso_time(buf, sizeof buf);
    time_t after = time(NULL);
    assert_int_equal(strlen(buf), 20);
    struct tm tm = {0};
    char *end = strptime(buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    assert_non_null(end);
    assert_int_equal(*end, '\0');
    time_t back = timegm(&tm);
    assert_true(back >= before - 1 && back <= after + 1);
    assert_true(lnk_iso_time_valid(buf)); /* what lnk_iso_time writes is accepted */
}

/* lnk_iso_time_valid: the calendar (leap years by the Gregorian rule), the
 * fields' ranges, the leap second at 23:59 only, the zone forms. */
static void test_iso_time_valid(void **state)
{
    (void)state;
    static const char *const good[] = {
        "2026-01-31T12:00:00Z", "2024-02-29T00:00:00Z", "2000-02-29T23:59:59Z",
        "2016-12-31T23:59:60Z", "2026-06-30T01:02:03.5+01:00", "2026-06-30T01:02:03.123-23:59",
        "1999-12-31T00:00:00+00:00"};
    static const char *const bad[] = {
        "2023-02-29T12:00:00Z", "1900-02-29T12:00:00Z", "2026-04-31T12:00:00Z",
        "2026-13-01T12:00:00Z", "2026-00-10T12:00:00Z", "2026-01-00T12:00:00Z",
        "2026-01-31T24:00:00Z", "2026-01-31T12:60:00Z", "2026-01-31T12:00:60Z",
        "2026-01-31T12:00:00", "2026-01-31 12:00:00Z", "2026-01-31T12:00:00.Z",
        "2026-01-31T12:00:00+24:00", "2026-01-31T12:00:00+01:60", "2026-01-31T12:00:00+0100",
        "2026-01-31T12:00:00Zx", "26-01-31T12:00:00Z", ""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!lnk_iso_time_valid(good[i]))
            fail_msg("'%s' refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (lnk_iso_time_valid(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
    assert_false(lnk_iso_time_valid(NULL));
}

static void test_threads(void **state)
{
    (void)state;
    int n0 = lnk_blas_threads();
    assert_true(n0 >= 1);
    lnk_set_blas_threads(1);
    assert_int_equal(lnk_blas_threads(), 1);
    lnk_set_blas_threads(0);                      /* clamped to 1 */
    assert_int_equal(lnk_blas_threads(), 1);
    lnk_set_blas_threads(n0);
    assert_int_equal(lnk_blas_threads(), n0);
}

/* ------------------------------------------------------------------- meta */

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!j)
        fail_msg("%s: %s", path, e.text);
    return j;
}

static void test_meta(void **state)
{
    (void)state;
    const char *dir = fresh_dir("meta");
    lnk_config cfg = tu_config("d=8", "h=2", "L=1", "V=12", "seed=77", NULL);
    char *csv = join(dir, "run.csv");
    char iso[32];
    lnk_iso_time(iso, sizeof iso);
    lnk_prov *p = lnk_prov_alloc();
    lnk_meta *x = lnk_meta_alloc();
    lnk_meta_str(x, "study", "spectrum");
    lnk_meta_int(x, "n_probes", 3);
    if (lnk_meta_write(csv, p, &cfg, x, iso, 1.25) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    char *side = join(dir, "run.meta.json");
    json_t *j = load_json(side);
    assert_int_equal(count_entries(dir), 1);      /* the sidecar only, no temp file */

    json_t *c = json_object_get(j, "config");
    assert_true(json_is_object(c));
    assert_int_equal(json_integer_value(json_object_get(c, "d")), 8);
    assert_int_equal(json_integer_value(json_object_get(c, "L")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "seed")), 77);
    json_t *v = json_object_get(j, "versions");
    assert_string_equal(json_string_value(json_object_get(v, "lnkit")), LNK_VERSION);
    assert_string_equal(json_string_value(json_object_get(v, "jansson")), JANSSON_VERSION);
    assert_true(json_is_string(json_object_get(v, "openblas")));
    assert_true(json_is_string(json_object_get(v, "gsl")));
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), lnk_blas_threads());
    assert_string_equal(json_string_value(json_object_get(j, "start_time")), iso);
    assert_true(json_real_value(json_object_get(j, "wall_seconds")) == 1.25);
    assert_string_equal(json_string_value(json_object_get(j, "study")), "spectrum");
    assert_int_equal(json_integer_value(json_object_get(j, "n_probes")), 3);
    json_decref(j);

    /* a name without .csv gets the suffix appended; no config: null */
    char *other = join(dir, "out.txt");
    assert_int_equal(lnk_meta_write(other, p, NULL, NULL, iso, 0.0), LNK_OK);
    char *oside = join(dir, "out.txt.meta.json");
    j = load_json(oside);
    assert_true(json_is_null(json_object_get(j, "config")));
    assert_non_null(json_object_get(j, "versions"));
    json_decref(j);

    /* bad extras are refused and leave the old sidecar alone */
    lnk_meta *bad = lnk_meta_alloc();
    assert_int_equal(lnk_meta_parse(bad, "{not json", "extra"), LNK_EINVAL);
    assert_int_equal(lnk_meta_write(csv, p, &cfg, bad, iso, 1.0), LNK_EINVAL);
    lnk_meta_free(bad);
    bad = lnk_meta_alloc();
    assert_int_equal(lnk_meta_parse(bad, "[1, 2]", "extra"), LNK_EINVAL);
    assert_int_equal(lnk_meta_write(csv, p, &cfg, bad, iso, 1.0), LNK_EINVAL);
    lnk_meta_free(bad);
    bad = lnk_meta_alloc();
    assert_int_equal(lnk_meta_int(bad, "seed", 5), LNK_EINVAL);
    assert_int_equal(lnk_meta_write(csv, p, &cfg, bad, iso, 1.0), LNK_EINVAL);
    assert_msg_has("'seed'");
    lnk_meta_free(bad);
    assert_int_equal(lnk_meta_write(csv, p, &cfg, x, iso, NAN), LNK_ENONFINITE);
    assert_int_equal(lnk_meta_write(csv, p, &cfg, x, "2026-02-30T00:00:00Z", 1.0), LNK_EINVAL);
    assert_msg_has("start_time");
    j = load_json(side);
    assert_string_equal(json_string_value(json_object_get(j, "study")), "spectrum");
    json_decref(j);
    assert_int_equal(count_entries(dir), 2);

    lnk_meta_free(x);
    lnk_prov_free(p);
    free(csv);
    free(side);
    free(other);
    free(oside);
    lnk_config_clear(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_afile_abort),
        cmocka_unit_test(test_afile_commit),
        cmocka_unit_test(test_afile_failures),
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_csv_doubles_roundtrip),
        cmocka_unit_test(test_csv_refusals),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_iso_time_valid),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
