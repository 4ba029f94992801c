/* Fuzz the CSV reader (lnkit/csv_table.h): the bytes as a file with the
 * defaults (the studies' and --json's reading), then as text in memory (NUL
 * bytes reach the parser) in every header mode, with and without finite
 * numbers (lnkit select's reading).  A table read has the shape its header
 * says, and every field converts or fails with a message. */
#include <math.h>
#include "fuzz.h"

static void check(const lnk_csv_table *t, int mode, int finite)
{
    FUZZ_ASSERT(t->ncol >= 1 && t->path && t->cell);
    FUZZ_ASSERT(mode == LNK_CSV_HEADER_AUTO || (t->head != NULL) == (mode == LNK_CSV_HEADER));
    for (size_t r = 0; r < t->nrow; r++) {
        FUZZ_ASSERT(t->line[r] >= 1 && (r == 0 || t->line[r] > t->line[r - 1]));
        for (int c = 0; c < t->ncol; c++) {
            double v;
            FUZZ_ASSERT(lnk_csv_table_str(t, r, c) != NULL);
            int st = lnk_csv_table_num(t, r, c, &v);
            FUZZ_ASSERT(st == LNK_OK || st == LNK_EFORMAT);
            FUZZ_ASSERT(st != LNK_OK || !finite || isfinite(v));
            fuzz_check_message();
        }
    }
    for (int c = 0; t->head && c < t->ncol; c++)
        FUZZ_ASSERT(lnk_csv_table_col(t, t->head[c]) == c); /* names are unique */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    lnk_csv_table t;
    int st = lnk_csv_table_read(fuzz_file(0, data, n), NULL, &t);
    fuzz_check_message();
    if (st == LNK_OK) {
        check(&t, LNK_CSV_HEADER, 0);
        lnk_csv_table_free(&t);
    }
    for (int mode = 0; mode < 3; mode++) {
        lnk_csv_read_opts o;
        lnk_csv_read_opts_default(&o);
        o.header = mode;
        o.finite = mode != LNK_CSV_HEADER;
        o.min_rows = mode == LNK_CSV_HEADER_AUTO;
        st = lnk_csv_table_parse((const char *)data, n, "fuzz.csv", &o, &t);
        fuzz_check_message();
        FUZZ_ASSERT(st == LNK_OK || st == LNK_EFORMAT);
        if (st != LNK_OK)
            continue;
        check(&t, mode, o.finite);
        FUZZ_ASSERT(t.nrow >= o.min_rows);
        lnk_csv_table_free(&t);
    }
    return 0;
}
