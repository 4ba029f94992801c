/* The study kit's CSV reader (studies/kit/csvread.h), with which a resumed sweep
 * reads back its own rows: quoted fields, CRLF, embedded newlines, errors that
 * name the file, line and column, and a round trip through lnk_csv. */
#include "testutil.h"
#include <string.h>
#include "kit/csvread.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

static void test_csv_reader(void **state)
{
    (void)state;
    study_csvdata t;
    const char *text = "a,b,c\r\n1,\"x,y\",\"say \"\"hi\"\"\"\r\n2,,\"two\nlines\"\n";
    assert_int_equal(study_csvdata_parse(text, "mem.csv", &t), LNK_OK);
    assert_int_equal(t.ncol, 3);
    assert_int_equal((int)t.nrow, 2);
    assert_string_equal(t.head[2], "c");
    assert_string_equal(study_csvdata_str(&t, 0, 1), "x,y");
    assert_string_equal(study_csvdata_str(&t, 0, 2), "say \"hi\"");
    assert_string_equal(study_csvdata_str(&t, 1, 1), "");
    assert_string_equal(study_csvdata_str(&t, 1, 2), "two\nlines");
    assert_int_equal(study_csvdata_col(&t, "b"), 1);
    assert_int_equal(study_csvdata_col(&t, "z"), -1);
    double v;
    assert_int_equal(study_csvdata_num(&t, 1, 0, &v), LNK_OK);
    assert_true(v == 2.0);
    assert_int_equal(study_csvdata_num(&t, 1, 1, &v), LNK_EFORMAT);
    assert_msg_has("mem.csv: data row 2, column 'b'");
    study_csvdata_free(&t);
    /* header only: no rows */
    assert_int_equal(study_csvdata_parse("x,y\n", "h.csv", &t), LNK_OK);
    assert_int_equal((int)t.nrow, 0);
    study_csvdata_free(&t);
    /* a text that ends just after a ',' (found by the fuzzer: the record leaked) */
    assert_int_equal(study_csvdata_parse("a,b\n1,", "end.csv", &t), LNK_OK);
    assert_int_equal(t.nrow, 1);
    assert_string_equal(study_csvdata_str(&t, 0, 1), "");
    study_csvdata_free(&t);
    assert_int_equal(study_csvdata_parse("a,b\n1,2,", "end.csv", &t), LNK_EFORMAT);
    assert_int_equal(study_csvdata_parse("a,b\n1,2\n3\n", "bad.csv", &t), LNK_EFORMAT);
    assert_msg_has("bad.csv: line 3: 1 fields, the header has 2");
    assert_int_equal(study_csvdata_parse("a,b\n1,\"open\n", "q.csv", &t), LNK_EFORMAT);
    assert_msg_has("unterminated");
    assert_int_equal(study_csvdata_parse("", "e.csv", &t), LNK_EFORMAT);
    assert_int_equal(study_csvdata_read(tu_path("missing.csv"), &t), LNK_EIO);
    /* a file round trip through lnk_csv */
    const char *p = tu_path("rt.csv");
    lnk_afile a;
    lnk_csv c;
    static const char *const h[] = {"k", "v"};
    assert_int_equal(lnk_afile_open(&a, p), LNK_OK);
    assert_int_equal(lnk_csv_begin(&c, a.f, h, 2), LNK_OK);
    lnk_csv_str(&c, "a,\"b\"");
    lnk_csv_double(&c, 0.1);
    lnk_csv_end_row(&c);
    lnk_csv_free(&c);
    assert_int_equal(lnk_afile_commit(&a), LNK_OK);
    assert_int_equal(study_csvdata_read(p, &t), LNK_OK);
    assert_string_equal(study_csvdata_str(&t, 0, 0), "a,\"b\"");
    assert_int_equal(study_csvdata_num(&t, 0, 1, &v), LNK_OK);
    assert_true(v == 0.1);
    study_csvdata_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_csv_reader)};
    return cmocka_run_group_tests_name("csvread", tests, NULL, NULL);
}
