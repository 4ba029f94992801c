/* The files of parallel corpora: lnkit batch --src/--tgt, and the data-set
 * file that lnk_pairs_save writes (include/lnkit/corpus.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "testutil_config.h"
#include "testutil_corpus.h"
#include "lnkit/corpus.h"
#include "lnkit/safetensors.h"

static void test_cli_batch(void **state)
{
    (void)state;
    const char *ps = tu_write_text("cli.src", TU_SMALL_SRC),
               *pt = tu_write_text("cli.tgt", TU_SMALL_TGT);
    const char *out = tu_path("cli.safetensors");
    char *o = NULL;
    int st = tu_run(&o, "%s batch --src %s --tgt %s --min-count 2 --max-tokens 10 -o %s",
                    tu_lnkit(), ps, pt, out);
    assert_int_equal(st, 0);
    /* the hint: every pair has max(S, T) = 5 or 4 (see test_rows_and_counts); sorted
     * rows are line 2 (S 1, T 4), then lines 0 and 1 (key 5): --chunk 2 has chunks of
     * 2 x 5 = 10 and 1 x 5; --chunk 3 would be 3 x 5 = 15 > 10 */
    tcf_assert_msg_has(o, "--chunk 2 ", "--V-src 6 --V-tgt 6", NULL);
    free(o);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_vocab_load(tu_path("cli.src.vocab"), &vs), LNK_OK);
    assert_int_equal(lnk_vocab_load(tu_path("cli.tgt.vocab"), &vt), LNK_OK);
    assert_int_equal(lnk_vocab_id(vs, "hund"), 5);
    assert_int_equal(lnk_vocab_id(vt, "dog"), 5);
    lnk_config cfg = tu_config("task=seq2seq", "V_src=6", "V_tgt=6", "d=4", "h=1", "L=1", NULL);
    lnk_model *m = lnk_model_alloc(&cfg);
    assert_non_null(m);
    lnk_batch b;
    assert_int_equal(lnk_batch_load(out, m, &b), LNK_OK);
    assert_int_equal(b.B, 3);
    assert_int_equal(b.S, 5);
    assert_int_equal(b.T, 5);
    tu_assert_row(b.src, 5, (int64_t[]){5, 0, 0, 0, 0});                 /* line 2: hund */
    tu_assert_row(b.tgt, 5, (int64_t[]){LNK_BOS, 4, 5, LNK_EOS, 0});     /* the dog */
    tu_assert_row(b.src + 5, 5, (int64_t[]){4, 5, 1, 0, 0});             /* line 0 */
    tu_assert_row(b.src + 10, 5, (int64_t[]){4, 1, 1, 4, 5});            /* line 1 */
    assert_int_equal(lnk_batch_n_scored(m, &b), 11);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&cfg);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    /* mismatched line counts: exit 2 with the library's message */
    const char *p3 = tu_write_text("cli3.tgt", "a\nb\n");
    st = tu_run(&o, "%s batch --src %s --tgt %s -o %s", tu_lnkit(), ps, p3, out);
    assert_int_equal(st, 2);
    tcf_assert_msg_has(o, "lnkit batch: parallel corpus:", "has 3 lines", "has 2 lines", NULL);
    free(o);
}

/* The data-set file (lnk_pairs_save): the arrays as made, and the metadata
 * keys of corpus.h with the values counted in test_rows_and_counts. */
static void test_pairs_save(void **state)
{
    (void)state;
    lnk_corpus c;
    tu_read_small(&c);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 2, 0, &vs, &vt), LNK_OK);
    lnk_pairs p;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, NULL, &p), LNK_OK);
    lnk_batch b;
    assert_int_equal(lnk_pairs_batch(&p, NULL, p.n, &b), LNK_OK);
    const char *out = tu_path("saved.safetensors");
    lnk_pairs_file how = {"a.src", "a.tgt", "v.src", NULL, 6, 7, 0, 1, 1, 0, NULL};
    assert_int_equal(lnk_pairs_save(out, &p, &b, &how), LNK_OK);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(out, &f), LNK_OK);
    static const char *const kv[] = {"task", "seq2seq", "src_file", "a.src", "tgt_file",
                                     "a.tgt", "pairs", "3", "dropped", "0", "truncated", "0",
                                     "n_scored", "11", "V_src", "6", "V_tgt", "7", "vocab_src",
                                     "v.src", "vocab_tgt", "", "joint_vocab", "false",
                                     "src_eos", "true", "order", "file", NULL};
    for (int i = 0; kv[i]; i += 2) {
        const char *v = lnk_st_meta(f, kv[i]);
        if (!v || strcmp(v, kv[i + 1]))
            fail_msg("metadata %s = %s, expected %s", kv[i], v ? v : "(none)", kv[i + 1]);
    }
    assert_null(lnk_st_meta(f, "chunk_rows")); /* none found: not recorded */
    const lnk_st_tensor *src = lnk_st_get(f, "src"), *tgt = lnk_st_get(f, "tgt");
    assert_non_null(src);
    assert_non_null(tgt);
    assert_int_equal(src->shape[0], 3);
    assert_int_equal(src->shape[1], 5);
    tu_assert_row((const int64_t *)src->data + 5, 5, (int64_t[]){4, 1, 1, 4, 5}); /* line 1 */
    tu_assert_row((const int64_t *)tgt->data, 5, (int64_t[]){LNK_BOS, 4, 5, 1, LNK_EOS});
    lnk_st_free(f);
    how.chunk_rows = 2;
    assert_int_equal(lnk_pairs_save(out, &p, &b, &how), LNK_OK);
    assert_int_equal(lnk_st_read(out, &f), LNK_OK);
    assert_string_equal(lnk_st_meta(f, "chunk_rows"), "2");
    lnk_st_free(f);
    /* the caller's keys (a program's record) after the data set's; two pairs at most */
    const char *md[] = {"lnkit", "{}", "x", "y", NULL, NULL, NULL};
    how.metadata = md;
    assert_int_equal(lnk_pairs_save(out, &p, &b, &how), LNK_OK);
    assert_int_equal(lnk_st_read(out, &f), LNK_OK);
    assert_string_equal(lnk_st_meta(f, "lnkit"), "{}");
    assert_string_equal(lnk_st_meta(f, "x"), "y");
    assert_string_equal(lnk_st_meta(f, "task"), "seq2seq");
    lnk_st_free(f);
    md[4] = "z", md[5] = "w";
    assert_int_equal(lnk_pairs_save(out, &p, &b, &how), LNK_EINVAL);
    lnk_batch_free(&b);
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_batch),
        cmocka_unit_test(test_pairs_save),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
