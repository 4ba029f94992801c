/* The CSV reader (include/lnkit/csv_table.h), used by lnkit select, --json
 * and the studies: RFC 4180 quoting, CRLF, a byte-order mark, a missing
 * final newline, numbers with strtod's semantics and a bitwise round trip
 * through lnk_csv's %.17g, and every malformed input refused with a status
 * and one line naming the file, line, field, value and what was expected:
 * empty file, header only, ragged rows, text, nan/inf, overflow, NUL bytes,
 * blank lines, duplicate names; long lines and a FIFO read once. */
#include "testutil.h"
#include <float.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lnkit/csv_table.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
        if (strchr(lnk_errmsg(), '\n'))                                                     \
            fail_msg("message \"%s\" is not one line", lnk_errmsg());                       \
    } while (0)

/* Parse text with the header mode h (finite: nan/inf refused); the status. */
static int parse_h(const char *text, int h, int finite, lnk_csv_table *t)
{
    lnk_csv_read_opts o;
    lnk_csv_read_opts_default(&o);
    o.header = h;
    o.finite = finite;
    return lnk_csv_table_parse(text, strlen(text), "f.csv", &o, t);
}

static int parse(const char *text, lnk_csv_table *t)
{
    return parse_h(text, LNK_CSV_HEADER, 0, t);
}

/* text must fail with status st and a message holding msg. */
static void refused(const char *text, int h, int finite, int st, const char *msg)
{
    lnk_csv_table t;
    if (parse_h(text, h, finite, &t) != st)
        fail_msg("'%s': status not %d (message '%s')", text, st, lnk_errmsg());
    assert_msg_has(msg);
    assert_null(t.cell); /* emptied on failure */
}

static void test_quoting(void **state)
{
    (void)state;
    lnk_csv_table t;
    const char *text = "a,b,c\r\n1,\"x,y\",\"say \"\"hi\"\"\"\r\n2,,\"two\nlines\"\n";
    assert_int_equal(parse(text, &t), LNK_OK);
    assert_int_equal(t.ncol, 3);
    assert_int_equal((int)t.nrow, 2);
    assert_string_equal(t.head[2], "c");
    assert_string_equal(lnk_csv_table_str(&t, 0, 1), "x,y");
    assert_string_equal(lnk_csv_table_str(&t, 0, 2), "say \"hi\"");
    assert_string_equal(lnk_csv_table_str(&t, 1, 1), "");
    assert_string_equal(lnk_csv_table_str(&t, 1, 2), "two\nlines");
    assert_int_equal((int)t.line[0], 2);
    assert_int_equal((int)t.line[1], 3);
    assert_int_equal(lnk_csv_table_col(&t, "b"), 1);
    assert_int_equal(lnk_csv_table_col(&t, "z"), -1);
    double v;
    assert_int_equal(lnk_csv_table_num(&t, 1, 0, &v), LNK_OK);
    assert_true(v == 2.0);
    assert_int_equal(lnk_csv_table_num(&t, 1, 1, &v), LNK_EFORMAT);
    assert_msg_has("f.csv:3: field 'b' (column 2): value '': expected a number");
    assert_int_equal(lnk_csv_table_num(&t, 2, 0, &v), LNK_EINVAL);
    assert_int_equal(lnk_csv_table_num(&t, 0, 3, &v), LNK_EINVAL);
    lnk_csv_table_free(&t);
    /* a row after an embedded newline: messages give its own line */
    assert_int_equal(parse("a,b\n\"x\ny\",1\nz,oops\n", &t), LNK_OK);
    assert_int_equal(lnk_csv_table_num(&t, 1, 1, &v), LNK_EFORMAT);
    assert_msg_has("f.csv:4: field 'b' (column 2): value 'oops'");
    lnk_csv_table_free(&t);
    /* the text ends just after a ',': the last field is empty */
    assert_int_equal(parse("a,b\n1,", &t), LNK_OK);
    assert_int_equal((int)t.nrow, 1);
    assert_string_equal(lnk_csv_table_str(&t, 0, 1), "");
    lnk_csv_table_free(&t);
    refused("a,b\n1,\"open\n", LNK_CSV_HEADER, 0, LNK_EFORMAT,
            "f.csv:2: column 2: unterminated quoted field");
    refused("a,b\n\"x\"y,1\n", LNK_CSV_HEADER, 0, LNK_EFORMAT,
            "f.csv:2: column 1: 'y' after the closing quote");
}

/* Line ends, byte-order mark, final newline, blank lines, ragged rows. */
static void test_shape(void **state)
{
    (void)state;
    const char *same[] = {"x,y\n1,2\n3,4\n", "x,y\r\n1,2\r\n3,4\r\n", "\xEF\xBB\xBFx,y\n1,2\n3,4",
                          "x,y\n1,2\n3,4\r", "x,y\n1,2\n3,4\n\n\r\n\n"};
    for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
        lnk_csv_table t;
        if (parse(same[k], &t) != LNK_OK)
            fail_msg("case %zu: %s", k, lnk_errmsg());
        assert_int_equal(t.ncol, 2);
        assert_int_equal((int)t.nrow, 2);
        assert_string_equal(t.head[0], "x");
        assert_string_equal(lnk_csv_table_str(&t, 1, 1), "4");
        lnk_csv_table_free(&t);
    }
    /* a lone CR inside a line is text, not a line end */
    lnk_csv_table t;
    assert_int_equal(parse("x\n1\r2\n", &t), LNK_OK);
    assert_string_equal(lnk_csv_table_str(&t, 0, 0), "1\r2");
    lnk_csv_table_free(&t);
    /* one column: a blank line is a row with an empty field (lnk_csv writes one so) */
    assert_int_equal(parse("a\n\n1\n", &t), LNK_OK);
    assert_int_equal((int)t.nrow, 2);
    assert_string_equal(lnk_csv_table_str(&t, 0, 0), "");
    lnk_csv_table_free(&t);
    /* a header alone is a table, unless rows are required */
    assert_int_equal(parse("x,y\n", &t), LNK_OK);
    assert_int_equal((int)t.nrow, 0);
    lnk_csv_table_free(&t);
    lnk_csv_read_opts o;
    lnk_csv_read_opts_default(&o);
    o.min_rows = 1;
    assert_int_equal(lnk_csv_table_parse("x,y\n", 4, "h.csv", &o, &t), LNK_EFORMAT);
    assert_msg_has("h.csv: 0 data rows (only a header row), expected at least 1");
    const char *empty[] = {"", "\xEF\xBB\xBF", "\n", "\r\n\n"};
    for (size_t k = 0; k < sizeof empty / sizeof *empty; k++)
        refused(empty[k], LNK_CSV_HEADER, 0, LNK_EFORMAT,
                "f.csv: empty file, expected a header row");
    refused("x,y\n1,2\n\n3,4\n", LNK_CSV_HEADER, 0, LNK_EFORMAT, "f.csv:3: empty line");
    refused("\nx,y\n", LNK_CSV_HEADER, 0, LNK_EFORMAT, "f.csv:1: empty line");
    refused("x,y\n1,2\n3\n", LNK_CSV_HEADER, 0, LNK_EFORMAT,
            "f.csv:3: 1 field, expected 2 as in line 1");
    refused("x,y\n1,2,3\n", LNK_CSV_HEADER, 0, LNK_EFORMAT,
            "f.csv:2: more than 2 fields, expected 2 as in line 1");
    refused("a,b\n1,2,", LNK_CSV_HEADER, 0, LNK_EFORMAT, "f.csv:2: more than 2 fields");
    /* a NUL byte in text given by length */
    assert_int_equal(lnk_csv_table_parse("x,y\n1\0,2\n", 9, "n.csv", NULL, &t), LNK_EFORMAT);
    assert_msg_has("n.csv: NUL byte at byte offset 5");
    /* duplicate column names: found whatever their order */
    refused("a,b,c,b\n1,2,3,4\n", LNK_CSV_HEADER, 0, LNK_EFORMAT,
            "f.csv:1: field 'b' (columns 2 and 4): expected each column name once");
    assert_int_equal(parse_h("1,1\n", LNK_CSV_NO_HEADER, 0, &t), LNK_OK); /* data may repeat */
    lnk_csv_table_free(&t);
}

/* Numbers: strtod's, the whole field; what is refused and what accepted. */
static void test_numbers(void **state)
{
    (void)state;
    lnk_csv_table t;
    assert_int_equal(parse("v\n 1.5\t\n0x1p-3\n1e-320\n-1e-400\n1e-400\n-0\n", &t), LNK_OK);
    double want[] = {1.5, 0.125, strtod("1e-320", NULL), -0.0, 0.0, -0.0}, v;
    for (size_t r = 0; r < 6; r++) {
        assert_int_equal(lnk_csv_table_num(&t, r, 0, &v), LNK_OK);
        assert_memory_equal(&v, &want[r], sizeof v); /* bitwise: the sign of 0 too */
    }
    assert_true(want[2] > 0 && want[2] < DBL_MIN); /* the subnormal, not 0 */
    lnk_csv_table_free(&t);
    const char *bad[] = {"", "x", "1.5x", "1 2", "1,5", "--1", "0x", "1e400", "-1e400"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char text[64], val[64];
        snprintf(text, sizeof text, "v\n\"%s\"\n", bad[k]);
        assert_int_equal(parse(text, &t), LNK_OK);
        if (lnk_csv_table_num(&t, 0, 0, &v) != LNK_EFORMAT)
            fail_msg("'%s' read as %g", bad[k], v);
        snprintf(val, sizeof val, "f.csv:2: field 'v' (column 1): value '%s': expected a number",
                 bad[k]);
        assert_msg_has(val);
        lnk_csv_table_free(&t);
    }
    /* nan and inf: numbers unless finite is asked for */
    const char *nonfinite[] = {"nan", "inf", "-Infinity", "NAN(1)"};
    for (size_t k = 0; k < 4; k++) {
        char text[64];
        snprintf(text, sizeof text, "1\n%s\n", nonfinite[k]);
        assert_int_equal(parse_h(text, LNK_CSV_NO_HEADER, 0, &t), LNK_OK);
        assert_int_equal(lnk_csv_table_num(&t, 1, 0, &v), LNK_OK);
        assert_false(isfinite(v));
        lnk_csv_table_free(&t);
        assert_int_equal(parse_h(text, LNK_CSV_NO_HEADER, 1, &t), LNK_OK);
        assert_int_equal(lnk_csv_table_num(&t, 1, 0, &v), LNK_EFORMAT);
        assert_msg_has("f.csv:2: column 1: value '");
        assert_msg_has("': expected a finite number (a double: at most 1.7976931348623157e308");
        lnk_csv_table_free(&t);
    }
}

/* Every double lnk_csv writes (%.17g) reads back bitwise. */
static void test_round_trip(void **state)
{
    (void)state;
    enum { N = 2000 };
    static double x[N], y[N];
    tu_randn(x, N, 5);
    for (int i = 0; i < N; i++) /* magnitudes from 1e-300 to 1e300 */
        x[i] = ldexp(x[i], (i * 1997) % 2000 - 1000);
    const double edge[] = {DBL_MAX, -DBL_MAX, DBL_MIN, 4.9406564584124654e-324, -0.0, 0.1, 1.0 / 3};
    memcpy(x, edge, sizeof edge);
    const char *p = tu_path("rt.csv");
    lnk_afile a;
    lnk_csv c;
    static const char *const h[] = {"k", "v"};
    assert_int_equal(lnk_afile_open(&a, p), LNK_OK);
    assert_int_equal(lnk_csv_begin(&c, a.f, h, 2), LNK_OK);
    for (int i = 0; i < N; i++) {
        lnk_csv_str(&c, i ? "a,\"b\"" : "");
        lnk_csv_double(&c, x[i]);
        lnk_csv_end_row(&c);
    }
    lnk_csv_free(&c);
    assert_int_equal(lnk_afile_commit(&a), LNK_OK);
    lnk_csv_table t;
    assert_int_equal(lnk_csv_table_read(p, NULL, &t), LNK_OK);
    assert_int_equal((int)t.nrow, N);
    assert_string_equal(lnk_csv_table_str(&t, 1, 0), "a,\"b\"");
    assert_string_equal(lnk_csv_table_str(&t, 0, 0), "");
    int col = lnk_csv_table_col(&t, "v");
    assert_int_equal(lnk_csv_table_matrix(&t, &col, 1, y), LNK_OK);
    assert_memory_equal(x, y, sizeof x);
    /* its digest: the size and SHA-256 of the file's bytes */
    size_t n;
    char *bytes = tu_read_file(p, &n);
    lnk_digest d;
    lnk_digest_of(bytes, n, &d);
    assert_true(d.bytes == n && t.digest.bytes == n);
    assert_string_equal(d.sha256, t.digest.sha256);
    free(bytes);
    lnk_csv_table_free(&t);
}

/* Header detection and columns chosen by name (lnkit select's keys). */
static void test_auto_header(void **state)
{
    (void)state;
    lnk_csv_table t;
    double K[6];
    assert_int_equal(parse_h("1,2,3\n4,5,6\n", LNK_CSV_HEADER_AUTO, 1, &t), LNK_OK);
    assert_null(t.head);
    assert_int_equal((int)t.nrow, 2);
    assert_int_equal(lnk_csv_table_matrix(&t, NULL, 0, K), LNK_OK);
    assert_true(K[0] == 1 && K[5] == 6);
    lnk_csv_table_free(&t);
    assert_int_equal(parse_h("a, b,c\n1,2,3\n4,5,6\n", LNK_CSV_HEADER_AUTO, 1, &t), LNK_OK);
    assert_non_null(t.head);
    assert_int_equal((int)t.nrow, 2);
    int cols[2] = {lnk_csv_table_col(&t, "c"), lnk_csv_table_col(&t, "a")};
    assert_int_equal(cols[0], 2);
    assert_int_equal(lnk_csv_table_matrix(&t, cols, 2, K), LNK_OK);
    assert_true(K[0] == 3 && K[1] == 1 && K[2] == 6 && K[3] == 4);
    lnk_csv_table_free(&t);
    /* nan text is no number when finite is asked for: a header row */
    assert_int_equal(parse_h("nan,inf\n1,2\n", LNK_CSV_HEADER_AUTO, 1, &t), LNK_OK);
    assert_string_equal(t.head[1], "inf");
    lnk_csv_table_free(&t);
    /* a first row that mixes names and numbers is data: the name is refused */
    assert_int_equal(parse_h("x,2\n3,4\n", LNK_CSV_HEADER_AUTO, 1, &t), LNK_OK);
    assert_int_equal(lnk_csv_table_matrix(&t, NULL, 0, K), LNK_EFORMAT);
    assert_msg_has("f.csv:1: column 1: value 'x': expected a finite number");
    lnk_csv_table_free(&t);
}

/* Long lines and fields; a file over the size limit; a missing file. */
static void test_long(void **state)
{
    (void)state;
    enum { C = 200000, F = 4 << 20 };
    char *text = malloc((size_t)2 * C * 8 + F + 64), *w = text;
    assert_non_null(text);
    for (int j = 0; j < C; j++)
        w += sprintf(w, "%sc%d", j ? "," : "", j);
    *w++ = '\n';
    for (int j = 0; j < C; j++)
        w += sprintf(w, "%s%d", j ? "," : "", j);
    *w++ = '\n';
    lnk_csv_table t;
    assert_int_equal(lnk_csv_table_parse(text, (size_t)(w - text), "wide.csv", NULL, &t), LNK_OK);
    assert_int_equal(t.ncol, C);
    assert_int_equal(lnk_csv_table_col(&t, "c199999"), C - 1);
    double v;
    assert_int_equal(lnk_csv_table_num(&t, 0, C - 1, &v), LNK_OK);
    assert_true(v == C - 1);
    lnk_csv_table_free(&t);
    /* one field of 4 MiB; its message is still one line */
    w = text + sprintf(text, "v\n");
    memset(w, '7', F);
    w[F / 2] = 'x';
    w += F;
    assert_int_equal(lnk_csv_table_parse(text, (size_t)(w - text), "long.csv", NULL, &t), LNK_OK);
    assert_int_equal((int)strlen(lnk_csv_table_str(&t, 0, 0)), F);
    assert_int_equal(lnk_csv_table_num(&t, 0, 0, &v), LNK_EFORMAT);
    assert_msg_has("long.csv:2: field 'v' (column 1): value '7777");
    assert_true(strlen(lnk_errmsg()) < 1100);
    lnk_csv_table_free(&t);
    free(text);
    tu_write_file(tu_path("big.csv"), "x\n1\n2\n3\n", 8);
    lnk_csv_read_opts o;
    lnk_csv_read_opts_default(&o);
    o.max = 5;
    o.what = "keys file";
    assert_int_equal(lnk_csv_table_read(tu_path("big.csv"), &o, &t), LNK_EFORMAT);
    assert_msg_has("keys file of 8 bytes");
    assert_int_equal(lnk_csv_table_read(tu_path("missing.csv"), NULL, &t), LNK_EIO);
    assert_msg_has("missing.csv");
    tu_write_file(tu_path("nul.csv"), "x\n1\0\n", 5);
    assert_int_equal(lnk_csv_table_read(tu_path("nul.csv"), NULL, &t), LNK_EFORMAT);
    assert_msg_has("NUL byte at byte offset 3");
}

/* A FIFO is read once, as it comes; the digest is of the bytes read. */
static void test_fifo(void **state)
{
    (void)state;
    const char *p = tu_path("keys.fifo"), *text = "a,b\r\n0.1,2\r\n3,4";
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(p, "w");
        for (const char *c = text; f && *c; c++) { /* a byte at a time */
            fputc(*c, f);
            fflush(f);
        }
        _exit(f && fclose(f) == 0 ? 0 : 1);
    }
    lnk_csv_table t;
    int st = lnk_csv_table_read(p, NULL, &t);
    int ws;
    waitpid(pid, &ws, 0);
    assert_int_equal(st, LNK_OK);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    double v;
    assert_int_equal(lnk_csv_table_num(&t, 0, 0, &v), LNK_OK);
    assert_true(v == 0.1);
    assert_string_equal(lnk_csv_table_str(&t, 1, 1), "4");
    lnk_digest d;
    lnk_digest_of(text, strlen(text), &d);
    assert_true(t.digest.bytes == strlen(text));
    assert_string_equal(d.sha256, t.digest.sha256);
    lnk_csv_table_free(&t);
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoting),     cmocka_unit_test(test_shape),
        cmocka_unit_test(test_numbers),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_auto_header), cmocka_unit_test(test_long),
        cmocka_unit_test(test_fifo),
    };
    return cmocka_run_group_tests_name("csvread", tests, NULL, NULL);
}
