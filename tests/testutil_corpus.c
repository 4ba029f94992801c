/* The small parallel corpus of the corpus tests (testutil_corpus.h). */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "testutil_corpus.h"

const char *tu_write_text(const char *name, const char *s)
{
    const char *p = tu_path(name);
    tu_write_file(p, s, strlen(s));
    return p;
}

/* source counts: der 3, hund 3, läuft 1, katze 1, schläft 1 (ties by first
 * appearance) => der 4, hund 5, läuft 6, katze 7, schläft 8.
 * target counts: the 3, dog 2, runs 1, cat 1, sleeps 1 => the 4, dog 5, runs 6,
 * cat 7, sleeps 8. */
const char *const TU_SMALL_SRC = "der hund l\xc3\xa4uft\n"
                                 "der katze schl\xc3\xa4" "ft der hund\n"
                                 "hund\n";
const char *const TU_SMALL_TGT = "the dog runs\n"
                                 "the cat sleeps\n"
                                 "the dog\n";

void tu_read_small(lnk_corpus *c)
{
    const char *s = tu_write_text("small.src", TU_SMALL_SRC),
               *t = tu_write_text("small.tgt", TU_SMALL_TGT);
    if (lnk_corpus_read(s, t, c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
}

void tu_assert_row(const int64_t *row, int n, const int64_t *want)
{
    for (int i = 0; i < n; i++)
        if (row[i] != want[i])
            fail_msg("row[%d] = %lld, expected %lld", i, (long long)row[i], (long long)want[i]);
}
