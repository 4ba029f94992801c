/* A small parallel corpus and checks shared by the corpus tests
 * (test_corpus.c, test_corpus_files.c). */
#ifndef LNK_TESTUTIL_CORPUS_H
#define LNK_TESTUTIL_CORPUS_H

#include <stdint.h>
#include "lnkit/corpus.h"

/* The three pairs whose counts the tests work out by hand. */
extern const char *const TU_SMALL_SRC, *const TU_SMALL_TGT;
/* s written to tu_path(name); returns that path. */
const char *tu_write_text(const char *name, const char *s);
/* The small corpus into c (fails on an error). */
void tu_read_small(lnk_corpus *c);
/* Fails unless row[0..n) == want[0..n). */
void tu_assert_row(const int64_t *row, int n, const int64_t *want);

#endif
