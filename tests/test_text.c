/* Text files, vocabularies and lm batches (include/lnkit/text.h).
 * Expected ids are worked out by hand in the comments next to them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "testutil_config.h"
#include "testutil_corpus.h"
#include "lnkit/text.h"

/* Line 2 has a tab, extra blanks and a CRLF end; line 3 has no final newline
 * in the variant without line 4; "<unk>" in the text is the special itself.
 *   counts:  zebra 3, apple 2, kiwi 2, café 2, mango 1, naïve 1
 *   first appearance: zebra apple mango kiwi café naïve
 *   => ids  zebra 4, apple 5, kiwi 6, café 7, mango 8, naïve 9   (size 10)  */
static const char *corpus =
    "zebra apple zebra\n"
    "  mango\tapple  kiwi \r\n"
    "kiwi zebra <unk>\n"
    "caf\xc3\xa9 na\xc3\xafve caf\xc3\xa9";

static void read_corpus(lnk_text *t)
{
    const char *p = tu_write_text("corpus.txt", corpus);
    if (lnk_text_read(p, t) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
}

static void test_read(void **state)
{
    (void)state;
    lnk_text t;
    read_corpus(&t);
    assert_int_equal(t.n_lines, 4);
    const int len[] = {3, 3, 3, 3};
    const char *tok[4][3] = {{"zebra", "apple", "zebra"},
                             {"mango", "apple", "kiwi"},
                             {"kiwi", "zebra", "<unk>"},
                             {"caf\xc3\xa9", "na\xc3\xafve", "caf\xc3\xa9"}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t.len[i], len[i]);
        for (int j = 0; j < len[i]; j++)
            assert_string_equal(t.tok[i][j], tok[i][j]);
    }
    assert_non_null(strstr(t.path, "corpus.txt"));
    lnk_text_free(&t);
    assert_null(t.tok);
    lnk_text_free(&t);  /* twice is safe */

    /* a 4-byte character (U+1F600) is valid UTF-8 */
    const char *p = tu_write_text("emoji.txt", "a \xf0\x9f\x98\x80 b\n");
    assert_int_equal(lnk_text_read(p, &t), LNK_OK);
    assert_int_equal(t.len[0], 3);
    assert_string_equal(t.tok[0][1], "\xf0\x9f\x98\x80");
    lnk_text_free(&t);

    /* a leading byte order mark is not part of the first token */
    p = tu_write_text("bom.txt", "\xef\xbb\xbfhello world\n");
    assert_int_equal(lnk_text_read(p, &t), LNK_OK);
    assert_int_equal(t.n_lines, 1);
    assert_string_equal(t.tok[0][0], "hello");
    lnk_text_free(&t);
    p = tu_write_text("bom.vocab", "\xef\xbb\xbf<pad>\n<unk>\n<bos>\n<eos>\nhello\n");
    lnk_vocab *v;
    assert_int_equal(lnk_vocab_load(p, &v), LNK_OK);
    assert_int_equal(lnk_vocab_id(v, "hello"), 4);
    lnk_vocab_free(v);
    /* ... but a BOM alone is still an empty file */
    p = tu_write_text("bomonly.txt", "\xef\xbb\xbf");
    assert_int_equal(lnk_text_read(p, &t), LNK_EFORMAT);
    tcf_assert_msg_has(lnk_errmsg(), "empty file", NULL);
}

static void test_vocab_build(void **state)
{
    (void)state;
    lnk_text t;
    read_corpus(&t);
    const lnk_text *ts[] = {&t};
    lnk_vocab *v;
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 0, &v), LNK_OK);
    const char *want[] = {"<pad>", "<unk>", "<bos>", "<eos>", "zebra", "apple",
                          "kiwi", "caf\xc3\xa9", "mango", "na\xc3\xafve"};
    assert_int_equal(lnk_vocab_size(v), 10);
    for (int i = 0; i < 10; i++) {
        assert_string_equal(lnk_vocab_token(v, i), want[i]);
        assert_int_equal(lnk_vocab_id(v, want[i]), i);
    }
    assert_null(lnk_vocab_token(v, 10));
    assert_null(lnk_vocab_token(v, -1));
    assert_int_equal(lnk_vocab_id(v, "pear"), LNK_UNK);
    assert_int_equal(lnk_vocab_id(v, "zebr"), LNK_UNK);
    assert_int_equal(lnk_vocab_id(v, ""), LNK_UNK);
    lnk_vocab_free(v);

    /* min_count 2: mango and naïve (count 1) drop out */
    assert_int_equal(lnk_vocab_build(ts, 1, 2, 0, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), 8);
    assert_int_equal(lnk_vocab_id(v, "caf\xc3\xa9"), 7);
    assert_int_equal(lnk_vocab_id(v, "mango"), LNK_UNK);
    lnk_vocab_free(v);

    /* min_count 3: only zebra */
    assert_int_equal(lnk_vocab_build(ts, 1, 3, 0, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), 5);
    assert_string_equal(lnk_vocab_token(v, 4), "zebra");
    lnk_vocab_free(v);

    /* max_size counts the specials: 6 = 4 + zebra, apple */
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 6, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), 6);
    assert_int_equal(lnk_vocab_id(v, "apple"), 5);
    assert_int_equal(lnk_vocab_id(v, "kiwi"), LNK_UNK);
    lnk_vocab_free(v);
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 4, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), 4);
    lnk_vocab_free(v);
    /* a limit above the corpus size changes nothing */
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 1000, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), 10);
    lnk_vocab_free(v);

    /* bad arguments */
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 3, &v), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "max_size", NULL);
    assert_int_equal(lnk_vocab_build(ts, 1, -1, 0, &v), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "min_count", NULL);

    /* two texts: counts add up, first appearance runs through text 1 then 2.
     *   text 2 = "mango mango mango pear": mango 4, zebra 3, apple 2, kiwi 2,
     *   café 2, naïve 1, pear 1  => mango 4, zebra 5, apple 6, kiwi 7, café 8,
     *   naïve 9, pear 10 */
    lnk_text t2;
    const char *p2 = tu_write_text("t2.txt", "mango mango\nmango pear\n");
    assert_int_equal(lnk_text_read(p2, &t2), LNK_OK);
    const lnk_text *both[] = {&t, &t2};
    assert_int_equal(lnk_vocab_build(both, 2, 1, 0, &v), LNK_OK);
    const char *want2[] = {"mango", "zebra", "apple", "kiwi", "caf\xc3\xa9", "na\xc3\xafve", "pear"};
    assert_int_equal(lnk_vocab_size(v), 11);
    for (int i = 0; i < 7; i++)
        assert_string_equal(lnk_vocab_token(v, 4 + i), want2[i]);
    lnk_vocab_free(v);
    lnk_text_free(&t2);
    lnk_text_free(&t);
}

/* Many distinct tokens: exercises table growth; each token's id is checked. */
static void test_vocab_large(void **state)
{
    (void)state;
    const int n = 20000;
    /* token w<k> appears (k % 3) + 1 times; rows of 10 tokens */
    size_t cap = (size_t)n * 3 * 8 + 16, len = 0;
    char *s = malloc(cap);
    int col = 0;
    for (int rep = 3; rep >= 1; rep--)
        for (int k = 0; k < n; k++)
            if (k % 3 + 1 >= rep) {
                len += (size_t)sprintf(s + len, "w%d%c", k, ++col % 10 ? ' ' : '\n');
            }
    s[len++] = '\n';
    const char *p = tu_path("large.txt");
    tu_write_file(p, s, len);
    free(s);
    lnk_text t;
    assert_int_equal(lnk_text_read(p, &t), LNK_OK);
    const lnk_text *ts[] = {&t};
    lnk_vocab *v;
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 0, &v), LNK_OK);
    assert_int_equal(lnk_vocab_size(v), n + 4);
    /* First written: every k with k%3 == 2 (count 3) in increasing k, then
     * k%3 == 1 (count 2), then k%3 == 0 (count 1). */
    int n2 = 0, n1 = 0;
    for (int k = 0; k < n; k++) {
        n2 += k % 3 == 2;
        n1 += k % 3 == 1;
    }
    int r2 = 0, r1 = 0, r0 = 0;
    for (int k = 0; k < n; k++) {
        char w[16];
        snprintf(w, sizeof w, "w%d", k);
        int64_t want = k % 3 == 2 ? 4 + r2++ : k % 3 == 1 ? 4 + n2 + r1++ : 4 + n2 + n1 + r0++;
        if (lnk_vocab_id(v, w) != want)
            fail_msg("%s: id %lld, expected %lld", w, (long long)lnk_vocab_id(v, w), (long long)want);
    }
    lnk_vocab_free(v);
    lnk_text_free(&t);
}

static void test_vocab_file(void **state)
{
    (void)state;
    lnk_text t;
    read_corpus(&t);
    const lnk_text *ts[] = {&t};
    lnk_vocab *v, *w;
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 0, &v), LNK_OK);
    const char *p = tu_path("vocab.txt");
    assert_int_equal(lnk_vocab_save(v, p), LNK_OK);
    char *file = tu_read_file(p, NULL);
    assert_string_equal(file, "<pad>\n<unk>\n<bos>\n<eos>\nzebra\napple\nkiwi\ncaf\xc3\xa9\nmango\n"
                              "na\xc3\xafve\n");
    free(file);
    assert_int_equal(lnk_vocab_load(p, &w), LNK_OK);
    assert_int_equal(lnk_vocab_size(w), lnk_vocab_size(v));
    for (int i = 0; i < lnk_vocab_size(v); i++) {
        assert_string_equal(lnk_vocab_token(w, i), lnk_vocab_token(v, i));
        assert_int_equal(lnk_vocab_id(w, lnk_vocab_token(v, i)), i);
    }
    lnk_vocab_free(w);
    lnk_vocab_free(v);
    lnk_text_free(&t);

    /* CRLF and a missing final newline are fine */
    p = tu_write_text("crlf.vocab", "<pad>\r\n<unk>\r\n<bos>\r\n<eos>\r\nx\r\ny");
    assert_int_equal(lnk_vocab_load(p, &w), LNK_OK);
    assert_int_equal(lnk_vocab_size(w), 6);
    assert_int_equal(lnk_vocab_id(w, "x"), 4);
    assert_int_equal(lnk_vocab_id(w, "y"), 5);
    lnk_vocab_free(w);

    /* saving into a missing directory fails and names the path */
    assert_int_equal(lnk_vocab_load(tu_path("crlf.vocab"), &w), LNK_OK);
    const char *bad = tu_path("no/such/dir/v.txt");
    assert_int_not_equal(lnk_vocab_save(w, bad), LNK_OK);
    tcf_assert_msg_has(lnk_errmsg(), bad, NULL);
    lnk_vocab_free(w);
}

static void test_vocab_file_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *has[3];
    } cases[] = {
        {"<unk>\n<pad>\n<bos>\n<eos>\nx\n", {":1:", "<pad>"}},
        {"<pad>\n<unk>\n<eos>\n<bos>\n", {":3:", "<bos>"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\nx\n\ny\n", {":6:", "empty line"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\nx\n\r\n", {":6:", "empty line"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\nx\ny\nx\n", {":7:", "duplicate", "line 5"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\n<unk>\n", {":5:", "duplicate", "line 2"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\na b\n", {":5:", "whitespace"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\na\tb\n", {":5:", "whitespace"}},
        {"<pad>\n<unk>\n", {"2 lines"}},
        {"", {"0 lines"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\n\xff\n", {"invalid UTF-8", "byte offset 24"}},
        {"<pad>\n<unk>\n<bos>\n<eos>\na\0b\n", {"not a text file", "byte offset 25"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = tu_path("bad.vocab");
        /* the NUL case needs an explicit length */
        size_t n = strlen(cases[i].text);
        if (strstr(cases[i].has[0], "not a text"))
            n = strlen(cases[i].text) + 3;
        tu_write_file(p, cases[i].text, n);
        lnk_vocab *v = (lnk_vocab *)&v;
        int st = lnk_vocab_load(p, &v);
        if (st == LNK_OK)
            fail_msg("case %zu accepted", i);
        assert_null(v);
        tcf_assert_msg_has(lnk_errmsg(), "bad.vocab", NULL);
        for (int k = 0; k < 3 && cases[i].has[k]; k++)
            if (!strstr(lnk_errmsg(), cases[i].has[k]))
                fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, lnk_errmsg(), cases[i].has[k]);
    }
    lnk_vocab *v;
    assert_int_equal(lnk_vocab_load(tu_path("missing.vocab"), &v), LNK_EIO);
    tcf_assert_msg_has(lnk_errmsg(), "missing.vocab", NULL);
}

static void test_text_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;  /* 0: strlen */
        const char *has[3];
    } cases[] = {
        /* Latin-1 é (0xE9) at offset 8 + 3 = 11, on line 2 */
        {"ok line\ncaf\xe9 au lait\n", 0, {"invalid UTF-8", "byte offset 11", "line 2"}},
        {"a \x80 b\n", 0, {"invalid UTF-8", "byte offset 2", "line 1"}},
        {"ab\xc0\xaf\n", 0, {"invalid UTF-8", "byte offset 2"}},          /* overlong '/' */
        {"x\n\xed\xa0\x80\n", 0, {"invalid UTF-8", "byte offset 2"}},      /* surrogate */
        {"x \xf4\x90\x80\x80\n", 0, {"invalid UTF-8", "byte offset 2"}},  /* > U+10FFFF */
        {"abc\xe2\x82", 0, {"invalid UTF-8", "byte offset 3"}},            /* truncated */
        {"abc\n\0def\n", 9, {"not a text file", "NUL", "byte offset 4"}},
        {"a b\n\nc\n", 0, {":2:", "empty line"}},
        {"a b\n \t\r\nc\n", 0, {":2:", "empty line"}},
        {"a b\r\n\r\n", 0, {":2:", "empty line"}},
        {"", 0, {"empty file"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = tu_path("bad.txt");
        tu_write_file(p, cases[i].text, cases[i].len ? cases[i].len : strlen(cases[i].text));
        lnk_text t;
        int st = lnk_text_read(p, &t);
        if (st == LNK_OK)
            fail_msg("case %zu accepted", i);
        assert_int_equal(st, LNK_EFORMAT);
        assert_null(t.tok);
        tcf_assert_msg_has(lnk_errmsg(), "bad.txt", NULL);
        for (int k = 0; k < 3 && cases[i].has[k]; k++)
            if (!strstr(lnk_errmsg(), cases[i].has[k]))
                fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, lnk_errmsg(), cases[i].has[k]);
    }
    lnk_text t;
    assert_int_equal(lnk_text_read(tu_path("missing.txt"), &t), LNK_EIO);
    tcf_assert_msg_has(lnk_errmsg(), "missing.txt", NULL);
}

/* ------------------------------------------------------------- lm batches */

static void assert_rows(const lnk_batch *b, int B, int T, const int64_t *want)
{
    assert_int_equal(b->B, B);
    assert_int_equal(b->T, T);
    assert_int_equal(b->S, 0);
    assert_null(b->src);
    assert_null(b->labels);
    assert_non_null(b->tgt);
    assert_int_equal(b->owns, 1);
    for (int i = 0; i < B * T; i++)
        if (b->tgt[i] != want[i])
            fail_msg("tgt[%d][%d] = %lld, expected %lld", i / T, i % T, (long long)b->tgt[i],
                     (long long)want[i]);
}

static void test_lm_batch(void **state)
{
    (void)state;
    lnk_text t, u;
    read_corpus(&t);
    const lnk_text *ts[] = {&t};
    lnk_vocab *v;
    /* zebra 4, apple 5, kiwi 6, café 7, mango 8, naïve 9 */
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 0, &v), LNK_OK);
    const char *p = tu_write_text("lm.txt", "zebra apple\nkiwi pear\nzebra zebra apple kiwi mango\n");
    assert_int_equal(lnk_text_read(p, &u), LNK_OK);

    lnk_batch b;
    assert_int_equal(lnk_text_lm_batch(&u, v, 0, 3, 0, &b), LNK_OK);
    const int64_t all[] = {2, 4, 5, 3, 0, 0, 0,
                           2, 6, 1, 3, 0, 0, 0,   /* pear -> <unk> */
                           2, 4, 4, 5, 6, 8, 3};
    assert_rows(&b, 3, 7, all);
    lnk_batch_free(&b);

    /* B <= 0: every line from first */
    assert_int_equal(lnk_text_lm_batch(&u, v, 0, 0, 0, &b), LNK_OK);
    assert_rows(&b, 3, 7, all);
    lnk_batch_free(&b);
    assert_int_equal(lnk_text_lm_batch(&u, v, 1, -1, 0, &b), LNK_OK);
    assert_rows(&b, 2, 7, all + 7);
    lnk_batch_free(&b);

    /* a sub-range pads to its own longest row */
    assert_int_equal(lnk_text_lm_batch(&u, v, 0, 2, 0, &b), LNK_OK);
    /* rows 0, 1 are both 4 long: T = 4, no padding */
    const int64_t first2[] = {2, 4, 5, 3,
                              2, 6, 1, 3};
    assert_rows(&b, 2, 4, first2);
    lnk_batch_free(&b);

    /* max_len 2: lines cut to 2 tokens before <eos> */
    assert_int_equal(lnk_text_lm_batch(&u, v, 0, 3, 2, &b), LNK_OK);
    const int64_t cut[] = {2, 4, 5, 3,
                           2, 6, 1, 3,
                           2, 4, 4, 3};
    assert_rows(&b, 3, 4, cut);
    lnk_batch_free(&b);
    /* max_len 1 */
    assert_int_equal(lnk_text_lm_batch(&u, v, 2, 1, 1, &b), LNK_OK);
    const int64_t one[] = {2, 4, 3};
    assert_rows(&b, 1, 3, one);
    lnk_batch_free(&b);

    /* errors */
    assert_int_equal(lnk_text_lm_batch(&u, v, 3, 1, 0, &b), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "lm.txt", "first line 3", NULL);
    assert_null(b.tgt);
    assert_int_equal(lnk_text_lm_batch(&u, v, 1, 3, 0, &b), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "lm.txt", "3 lines", NULL);
    assert_int_equal(lnk_text_lm_batch(&u, v, -1, 1, 0, &b), LNK_EINVAL);
    assert_int_equal(lnk_text_lm_batch(&u, v, 0, 1, -1, &b), LNK_EINVAL);
    tcf_assert_msg_has(lnk_errmsg(), "max_len", NULL);
    lnk_text_free(&u);

    /* a literal <pad> in the text would end the sequence: refused with its line */
    p = tu_write_text("pad.txt", "zebra\nzebra <pad> apple\n");
    assert_int_equal(lnk_text_read(p, &u), LNK_OK);
    assert_int_not_equal(lnk_text_lm_batch(&u, v, 0, 0, 0, &b), LNK_OK);
    tcf_assert_msg_has(lnk_errmsg(), "pad.txt:2", "<pad>", NULL);
    lnk_text_free(&u);

    lnk_vocab_free(v);
    lnk_text_free(&t);
}

/* The batch is what the model expects of an lm batch. */
static void test_lm_batch_model(void **state)
{
    (void)state;
    lnk_text t;
    read_corpus(&t);
    const lnk_text *ts[] = {&t};
    lnk_vocab *v;
    assert_int_equal(lnk_vocab_build(ts, 1, 1, 0, &v), LNK_OK);
    char V[16];
    snprintf(V, sizeof V, "V=%d", lnk_vocab_size(v));
    lnk_config c = tu_config(V, NULL);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        fail_msg("%s", lnk_errmsg());
    lnk_batch b;
    assert_int_equal(lnk_text_lm_batch(&t, v, 0, 0, 0, &b), LNK_OK);
    if (lnk_batch_check(m, &b) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    /* 4 lines of 3 tokens: 3 tokens + <eos> scored each */
    assert_int_equal(lnk_batch_n_scored(m, &b), 16);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_vocab_free(v);
    lnk_text_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_vocab_build),
        cmocka_unit_test(test_vocab_large),
        cmocka_unit_test(test_vocab_file),
        cmocka_unit_test(test_vocab_file_bad),
        cmocka_unit_test(test_text_bad),
        cmocka_unit_test(test_lm_batch),
        cmocka_unit_test(test_lm_batch_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
