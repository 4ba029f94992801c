/* Parallel corpora (include/lnkit/corpus.h): reading, vocabularies, id rows,
 * batches by token count; and, on a 20-pair slice of Multi30k, the chunked
 * data-set Hessian, the decoder's causal mask and the cross-attention's
 * source padding.  Expected values are worked out by hand in the comments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "testutil_config.h"
#include "testutil_corpus.h"
#include "lnkit/corpus.h"
#include "lnkit/safetensors.h"
#include "model/workspace.h"

static void test_vocab_roundtrip(void **state)
{
    (void)state;
    lnk_corpus c;
    tu_read_small(&c);
    assert_int_equal(c.src.n_lines, 3);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt), LNK_OK);
    assert_int_equal(lnk_vocab_size(vs), 9);
    assert_int_equal(lnk_vocab_size(vt), 9);
    assert_int_equal(lnk_vocab_id(vs, "der"), 4);
    assert_int_equal(lnk_vocab_id(vs, "hund"), 5);
    assert_int_equal(lnk_vocab_id(vs, "schl\xc3\xa4" "ft"), 8);
    assert_int_equal(lnk_vocab_id(vs, "the"), LNK_UNK); /* separate: no target words */
    assert_int_equal(lnk_vocab_id(vt, "the"), 4);
    assert_int_equal(lnk_vocab_id(vt, "sleeps"), 8);
    /* save and reload: every id the same */
    const char *ps = tu_path("small.src.vocab"), *pt = tu_path("small.tgt.vocab");
    assert_int_equal(lnk_vocab_save(vs, ps), LNK_OK);
    assert_int_equal(lnk_vocab_save(vt, pt), LNK_OK);
    lnk_vocab *ls, *lt;
    assert_int_equal(lnk_vocab_load(ps, &ls), LNK_OK);
    assert_int_equal(lnk_vocab_load(pt, &lt), LNK_OK);
    assert_int_equal(lnk_vocab_size(ls), lnk_vocab_size(vs));
    assert_int_equal(lnk_vocab_size(lt), lnk_vocab_size(vt));
    for (int i = 0; i < lnk_vocab_size(vs); i++) {
        assert_string_equal(lnk_vocab_token(ls, i), lnk_vocab_token(vs, i));
        assert_int_equal(lnk_vocab_id(ls, lnk_vocab_token(vs, i)), i);
    }
    for (int i = 0; i < lnk_vocab_size(vt); i++)
        assert_int_equal(lnk_vocab_id(lt, lnk_vocab_token(vt, i)), i);
    /* joint: 4 + 5 + 5 tokens, source words first on count ties; both sides equal.
     * counts: der 3, hund 3, the 3, dog 2, then the count-1 words by first appearance. */
    lnk_vocab *js, *jt;
    assert_int_equal(lnk_corpus_vocabs(&c, 1, 1, 0, &js, &jt), LNK_OK);
    assert_int_equal(lnk_vocab_size(js), 14);
    assert_int_equal(lnk_vocab_size(jt), 14);
    assert_int_equal(lnk_vocab_id(js, "der"), 4);
    assert_int_equal(lnk_vocab_id(js, "hund"), 5);
    assert_int_equal(lnk_vocab_id(js, "the"), 6);
    assert_int_equal(lnk_vocab_id(js, "dog"), 7);
    for (int i = 0; i < 14; i++)
        assert_string_equal(lnk_vocab_token(js, i), lnk_vocab_token(jt, i));
    /* min count 2: only der, hund (source) */
    lnk_vocab *ms, *mt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 2, 0, &ms, &mt), LNK_OK);
    assert_int_equal(lnk_vocab_size(ms), 6);
    assert_int_equal(lnk_vocab_id(ms, "katze"), LNK_UNK);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_vocab_free(ls);
    lnk_vocab_free(lt);
    lnk_vocab_free(js);
    lnk_vocab_free(jt);
    lnk_vocab_free(ms);
    lnk_vocab_free(mt);
    lnk_corpus_free(&c);
}

static void test_rows_and_counts(void **state)
{
    (void)state;
    lnk_corpus c;
    tu_read_small(&c);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 2, 0, &vs, &vt), LNK_OK); /* der hund / the dog */
    lnk_pairs p;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, NULL, &p), LNK_OK);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.n_dropped, 0);
    /* tokens 3 + 5 + 1 = 9 source, 3 + 3 + 2 = 8 target; scored 4 + 4 + 3 = 11 */
    assert_int_equal(p.src_tokens, 9);
    assert_int_equal(p.tgt_tokens, 8);
    assert_int_equal(p.n_scored, 11);
    assert_int_equal(p.src_unk, 3);  /* läuft katze schläft */
    assert_int_equal(p.tgt_unk, 3);  /* runs cat sleeps */
    int sl[3] = {3, 5, 1}, tl[3] = {5, 5, 4};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(p.src_len[i], sl[i]);
        assert_int_equal(p.tgt_len[i], tl[i]);
        assert_int_equal(p.line[i], i);
    }
    /* der=4 hund=5, the=4 dog=5 */
    tu_assert_row(p.src[1], 5, (int64_t[]){4, 1, 1, 4, 5});
    tu_assert_row(p.tgt[0], 5, (int64_t[]){LNK_BOS, 4, 5, 1, LNK_EOS});
    tu_assert_row(p.tgt[2], 4, (int64_t[]){LNK_BOS, 4, 5, LNK_EOS});
    lnk_pairs_free(&p);

    /* src_eos appends <eos>; max_len 2 drops pairs 0 and 1 (3 and 5 source tokens) */
    lnk_pairs_opts o;
    lnk_pairs_opts_default(&o);
    o.src_eos = 1;
    o.max_len = 2;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, &o, &p), LNK_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.n_dropped, 2);
    assert_int_equal(p.line[0], 2);
    tu_assert_row(p.src[0], 2, (int64_t[]){5, LNK_EOS});
    assert_int_equal(p.n_scored, 3);
    lnk_pairs_free(&p);
    /* truncate instead: line 1 keeps "der katze" / "the cat" */
    o.src_eos = 0;
    o.truncate = 1;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, &o, &p), LNK_OK);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.n_truncated, 2);
    assert_int_equal(p.src_tokens, 2 + 2 + 1);
    tu_assert_row(p.src[1], 2, (int64_t[]){4, 1});
    tu_assert_row(p.tgt[1], 4, (int64_t[]){LNK_BOS, 4, 1, LNK_EOS});
    /* one padded batch of the three pairs: S 2, T 4, zeros after each row */
    lnk_batch b;
    assert_int_equal(lnk_pairs_batch(&p, NULL, 3, &b), LNK_OK);
    assert_int_equal(b.S, 2);
    assert_int_equal(b.T, 4);
    tu_assert_row(b.src + 4, 2, (int64_t[]){5, LNK_PAD});
    assert_int_equal(lnk_pairs_padded(&b), 12);
    lnk_batch_free(&b);
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

/* A corpus of n lines whose line i starts with the unique token "wI" (source)
 * / "eI" (target) followed by a pseudo-random number of filler tokens. */
static void make_varied(int n, lnk_corpus *c)
{
    size_t cap = (size_t)n * 200;
    char *s = malloc(cap), *t = malloc(cap);
    size_t a = 0, b = 0;
    unsigned x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        int ls = (int)((x >> 16) % 14), lt = (int)((x >> 8) % 11);
        a += (size_t)sprintf(s + a, "w%d", i);
        for (int j = 0; j < ls; j++)
            a += (size_t)sprintf(s + a, " x%d", j % 5);
        s[a++] = '\n';
        b += (size_t)sprintf(t + b, "e%d", i);
        for (int j = 0; j < lt; j++)
            b += (size_t)sprintf(t + b, " y%d", j % 4);
        t[b++] = '\n';
    }
    s[a] = t[b] = '\0';
    const char *ps = tu_write_text("varied.src", s), *pt = tu_write_text("varied.tgt", t);
    free(s);
    free(t);
    if (lnk_corpus_read(ps, pt, c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
}

static int key(const lnk_pairs *p, int k)
{
    return p->src_len[k] > p->tgt_len[k] ? p->src_len[k] : p->tgt_len[k];
}

static void test_batches_by_tokens(void **state)
{
    (void)state;
    const int n = 57;
    lnk_corpus c;
    make_varied(n, &c);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt), LNK_OK);
    lnk_pairs p;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, NULL, &p), LNK_OK);
    int *order = malloc(sizeof(int) * n);
    assert_int_equal(lnk_pairs_order(&p, order), LNK_OK);
    for (int r = 1; r < n; r++)
        assert_true(key(&p, order[r - 1]) <= key(&p, order[r]));
    const size_t maxt[] = {16, 40, 100, 1000};
    for (size_t q = 0; q < sizeof maxt / sizeof maxt[0]; q++) {
        lnk_batch *ch, *ch2;
        int nc, nc2;
        assert_int_equal(lnk_pairs_batches(&p, maxt[q], &ch, &nc), LNK_OK);
        int *seen = calloc((size_t)n, sizeof(int));
        size_t scored = 0;
        for (int i = 0; i < nc; i++) {
            assert_true(lnk_pairs_padded(&ch[i]) <= maxt[q]);
            for (int r = 0; r < ch[i].B; r++) {
                /* the row's first source token names its line */
                const char *w = lnk_vocab_token(vs, ch[i].src[(size_t)r * ch[i].S]);
                assert_non_null(w);
                assert_int_equal(w[0], 'w');
                int line = atoi(w + 1);
                assert_in_range(line, 0, n - 1);
                seen[line]++;
                /* the target row is that line's: its first word is eLINE */
                char e[16];
                snprintf(e, sizeof e, "e%d", line);
                assert_int_equal(ch[i].tgt[(size_t)r * ch[i].T + 1], lnk_vocab_id(vt, e));
                for (int t = 1; t < ch[i].T; t++)
                    scored += ch[i].tgt[(size_t)r * ch[i].T + t] != LNK_PAD;
            }
        }
        for (int i = 0; i < n; i++)
            assert_int_equal(seen[i], 1);
        assert_int_equal(scored, p.n_scored);
        if (maxt[q] >= 1000)
            assert_int_equal(nc, 1);
        else
            assert_true(nc > 1);
        /* deterministic: a second call gives the same batches */
        assert_int_equal(lnk_pairs_batches(&p, maxt[q], &ch2, &nc2), LNK_OK);
        assert_int_equal(nc2, nc);
        for (int i = 0; i < nc; i++) {
            assert_int_equal(ch2[i].B, ch[i].B);
            assert_int_equal(ch2[i].S, ch[i].S);
            assert_int_equal(ch2[i].T, ch[i].T);
            assert_memory_equal(ch2[i].src, ch[i].src, sizeof(int64_t) * ch[i].B * ch[i].S);
            assert_memory_equal(ch2[i].tgt, ch[i].tgt, sizeof(int64_t) * ch[i].B * ch[i].T);
        }
        /* --chunk R of the length-sorted file: R keeps all chunks within max_tokens,
         * every larger R breaks it */
        int R = lnk_pairs_chunk_rows(&p, order, maxt[q]);
        assert_true(R >= 1);
        lnk_batch all;
        assert_int_equal(lnk_pairs_batch(&p, order, n, &all), LNK_OK);
        for (int R2 = R; R2 <= n && R2 <= R + 3; R2++) {
            size_t worst = 0;
            for (int r0 = 0; r0 < n; r0 += R2) {
                lnk_batch sl;
                assert_int_equal(lnk_batch_slice(&all, r0, r0 + R2 < n ? r0 + R2 : n, &sl),
                                 LNK_OK);
                size_t ps = lnk_pairs_padded(&sl);
                worst = ps > worst ? ps : worst;
                lnk_batch_free(&sl);
            }
            if (R2 == R)
                assert_true(worst <= maxt[q]);
            else
                assert_true(worst > maxt[q]);
        }
        lnk_batch_free(&all);
        lnk_batches_free(ch, nc);
        lnk_batches_free(ch2, nc2);
        free(seen);
    }
    /* a pair longer than max_tokens is an error naming its line: the first of the
     * longest ones in the length order */
    int longest = order[n - 1];
    for (int r = n - 1; r >= 0 && key(&p, order[r]) == key(&p, order[n - 1]); r--)
        longest = order[r];
    lnk_batch *ch;
    int nc;
    assert_int_equal(lnk_pairs_batches(&p, (size_t)key(&p, longest) - 1, &ch, &nc), LNK_EINVAL);
    char ln[32];
    snprintf(ln, sizeof ln, "line %d", p.line[longest] + 1);
    tcf_assert_msg_has(lnk_errmsg(), ln, "max_tokens", NULL);
    assert_int_equal(lnk_pairs_chunk_rows(&p, order, (size_t)key(&p, longest) - 1), 0);
    free(order);
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

static void expect_read_error(const char *src, size_t ns, const char *tgt, size_t nt,
                              const char *want1, const char *want2)
{
    const char *ps = tu_path("bad.src"), *pt = tu_path("bad.tgt");
    tu_write_file(ps, src, ns);
    tu_write_file(pt, tgt, nt);
    lnk_corpus c;
    assert_int_equal(lnk_corpus_read(ps, pt, &c), LNK_EFORMAT);
    tcf_assert_msg_has(lnk_errmsg(), want1, want2, NULL);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *ok = "a b\nc\n";
    char m[256];
    /* mismatched line counts: both files and both counts */
    expect_read_error(ok, strlen(ok), "x\ny\nz\n", 6, "has 2 lines", "has 3 lines");
    tcf_assert_msg_has(lnk_errmsg(), tu_path("bad.src"), tu_path("bad.tgt"), NULL);
    /* empty line (blank after trimming) in the target, line 2 */
    snprintf(m, sizeof m, "%s:2: empty line", tu_path("bad.tgt"));
    expect_read_error(ok, strlen(ok), "x\n  \t\n", 6, m, "byte offset 2");
    /* invalid UTF-8 (a lone continuation byte) in the source, line 2, offset 4 */
    expect_read_error("a b\n\x80\n", 6, ok, strlen(ok), "invalid UTF-8", "byte offset 4");
    tcf_assert_msg_has(lnk_errmsg(), tu_path("bad.src"), "line 2", NULL);
    /* NUL byte: not a text file */
    expect_read_error("a b\nc\0d\n", 8, ok, strlen(ok), "not a text file", "NUL byte");
    tcf_assert_msg_has(lnk_errmsg(), tu_path("bad.src"), "byte offset 5", NULL);
    /* a literal <pad> token would become padding */
    const char *ps = tu_write_text("pad.src", "a <pad>\nb\n"), *pt = tu_write_text("pad.tgt", ok);
    lnk_corpus c;
    assert_int_equal(lnk_corpus_read(ps, pt, &c), LNK_OK);
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt), LNK_OK);
    lnk_pairs p;
    assert_int_equal(lnk_pairs_make(&c, vs, vt, NULL, &p), LNK_EFORMAT);
    snprintf(m, sizeof m, "%s:1: token 2 is '<pad>'", ps);
    tcf_assert_msg_has(lnk_errmsg(), m, NULL);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

/* ------------------------------------------------------------ Multi30k slice */

static char data_src[1024], data_tgt[1024];

/* The Multi30k validation set shipped in the repository (data/multi30k,
 * see its SOURCE.md); the tests run from the repository's root. */
static void find_data(void)
{
    snprintf(data_src, sizeof data_src, "data/multi30k/val.de");
    snprintf(data_tgt, sizeof data_tgt, "data/multi30k/val.en");
    if (access(data_src, R_OK) != 0 || access(data_tgt, R_OK) != 0)
        fail_msg("data/multi30k/val.{de,en} not found: run the tests from the repository's root "
                 "(make test)");
}

typedef struct {
    lnk_pairs p;
    lnk_model *m;
    double *th;
    size_t n;
} slice;

/* The first 20 pairs, a tiny seq2seq model sized to their vocabularies. */
static void slice_open(slice *s, const char *norm_pos)
{
    find_data();
    lnk_corpus c;
    if (lnk_corpus_read(data_src, data_tgt, &c) != LNK_OK)
        fail_msg("%s", lnk_errmsg());
    c.src.n_lines = c.tgt.n_lines = 20;
    lnk_vocab *vs, *vt;
    assert_int_equal(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt), LNK_OK);
    assert_int_equal(lnk_pairs_make(&c, vs, vt, NULL, &s->p), LNK_OK);
    assert_int_equal(s->p.n, 20);
    char vsrc[16], vtgt[16];
    snprintf(vsrc, sizeof vsrc, "%d", lnk_vocab_size(vs));
    snprintf(vtgt, sizeof vtgt, "%d", lnk_vocab_size(vt));
    lnk_config cfg;
    lnk_config_default(&cfg);
    const char *kv[][2] = {{"task", "seq2seq"}, {"norm_pos", norm_pos}, {"d", "8"}, {"h", "2"},
                           {"d_ff", "12"}, {"L", "2"}, {"V_src", vsrc}, {"V_tgt", vtgt},
                           {"seed", "3"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        assert_int_equal(lnk_config_set(&cfg, kv[i][0], kv[i][1]), LNK_OK);
    assert_int_equal(lnk_config_finalize(&cfg), LNK_OK);
    s->m = lnk_model_alloc(&cfg);
    assert_non_null(s->m);
    s->n = lnk_model_n_params(s->m);
    s->th = malloc(sizeof(double) * s->n);
    assert_int_equal(lnk_model_init_params(s->m, s->th), LNK_OK);
    lnk_config_clear(&cfg);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

static void slice_close(slice *s)
{
    free(s->th);
    lnk_model_free(s->m);
    lnk_pairs_free(&s->p);
}

static void test_chunked_hvp(void **state)
{
    (void)state;
    slice s;
    slice_open(&s, "post");
    lnk_batch one, *ch;
    int nc;
    assert_int_equal(lnk_pairs_batch(&s.p, NULL, s.p.n, &one), LNK_OK);
    assert_int_equal(lnk_pairs_batches(&s.p, 60, &ch, &nc), LNK_OK);
    assert_true(nc >= 4);
    double *v = malloc(sizeof(double) * s.n), *h1 = malloc(sizeof(double) * s.n),
           *h2 = malloc(sizeof(double) * s.n), *g1 = malloc(sizeof(double) * s.n),
           *g2 = malloc(sizeof(double) * s.n);
    tu_randn(v, s.n, 7);
    lnk_hessian *H1 = lnk_hessian_alloc(s.m, s.th, &one, 1, NULL);
    lnk_hessian *H2 = lnk_hessian_alloc(s.m, s.th, ch, nc, NULL);
    assert_non_null(H1);
    assert_non_null(H2);
    lnk_operator o1 = lnk_hessian_operator(H1), o2 = lnk_hessian_operator(H2);
    assert_int_equal(o1.apply(o1.ctx, v, h1), LNK_OK);
    assert_int_equal(o2.apply(o2.ctx, v, h2), LNK_OK);
    double e = tu_relerr(h2, h1, s.n, 0);
    print_message("chunked H v (%d chunks) vs one chunk: relative error %.3g\n", nc, e);
    assert_true(tu_norm(h1, s.n) > 0);
    assert_true(e <= 1e-12);
    /* loss and gradient too */
    double l1, l2;
    size_t n1, n2;
    assert_int_equal(lnk_dataset_eval(s.m, s.th, &one, 1, &l1, g1, &n1), LNK_OK);
    assert_int_equal(lnk_dataset_eval(s.m, s.th, ch, nc, &l2, g2, &n2), LNK_OK);
    assert_int_equal(n1, s.p.n_scored);
    assert_int_equal(n2, s.p.n_scored);
    assert_true(fabs(l1 - l2) <= 1e-12 * fabs(l1));
    assert_true(tu_relerr(g2, g1, s.n, 0) <= 1e-12);
    lnk_hessian_free(H1);
    lnk_hessian_free(H2);
    free(v);
    free(h1);
    free(h2);
    free(g1);
    free(g2);
    lnk_batch_free(&one);
    lnk_batches_free(ch, nc);
    slice_close(&s);
}

/* Loss with the probabilities of every decoder position (copied out of the workspace). */
static double eval_probs(lnk_workspace *ws, const double *th, const lnk_batch *b, double *probs,
                         size_t np)
{
    double loss;
    assert_int_equal(lnk_model_eval(ws, th, b, &loss, NULL, NULL), LNK_OK);
    memcpy(probs, ws->pr->prob, sizeof(double) * np);
    return loss;
}

static void test_causal_mask(void **state)
{
    (void)state;
    slice s;
    slice_open(&s, "pre");
    lnk_batch b;
    assert_int_equal(lnk_pairs_batch(&s.p, NULL, s.p.n, &b), LNK_OK);
    const lnk_model *m = s.m;
    const lnk_config *cfg = lnk_model_config(m);
    int B = b.B, T = b.T - 1, C = cfg->V_tgt, h = cfg->h;
    size_t np = (size_t)B * T * C;
    /* row r: its last target word y_n (tgt[r, n], n = tgt_len - 2) is replaced */
    int r = 5, n = s.p.tgt_len[r] - 2;
    assert_true(n >= 3);
    lnk_workspace *ws = lnk_workspace_alloc(m, B, b.S, b.T, 0);
    assert_non_null(ws);
    double *p0 = malloc(sizeof(double) * np), *p1 = malloc(sizeof(double) * np);
    int nu = m->dec.n_units;
    double **a0 = malloc(sizeof(double *) * nu);
    double l0 = eval_probs(ws, s.th, &b, p0, np);
    size_t na = (size_t)B * h * T * T;
    for (int k = 0; k < nu; k++) {
        size_t sz = m->dec.u[k].kind == UNIT_CROSS_ATTN ? (size_t)B * h * T * b.S : na;
        a0[k] = NULL;
        if (m->dec.u[k].kind != UNIT_FFN) {
            a0[k] = malloc(sizeof(double) * sz);
            memcpy(a0[k], ws->pr->dec.a.u[k].a, sizeof(double) * sz);
        }
    }
    int64_t *y = &b.tgt[(size_t)r * b.T + n];
    *y = *y == 4 ? 5 : 4;
    double l1 = eval_probs(ws, s.th, &b, p1, np);
    assert_true(l1 != l0);
    /* positions t < n of row r (decoder inputs <bos> y_1 .. y_{n-1}) and every
     * position of the other rows: probabilities bitwise unchanged */
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++) {
            size_t off = ((size_t)bb * T + t) * C;
            int same = memcmp(p0 + off, p1 + off, sizeof(double) * C) == 0;
            if (bb != r || t < n)
                assert_true(same);
            else if (t == n)
                assert_false(same); /* the changed input itself */
        }
    /* per-position losses: unchanged before position n - 1 (whose label is y_n) */
    for (int t = 0; t < n - 1; t++) {
        int64_t lab = b.tgt[(size_t)r * b.T + t + 1];
        size_t i = ((size_t)r * T + t) * C + (size_t)lab;
        assert_true(p0[i] == p1[i]);
    }
    /* attention rows of queries t < n: bitwise unchanged in every decoder attention */
    for (int k = 0; k < nu; k++) {
        if (!a0[k])
            continue;
        int Tk = m->dec.u[k].kind == UNIT_CROSS_ATTN ? b.S : T;
        for (int j = 0; j < h; j++)
            for (int t = 0; t < T; t++) {
                size_t off = (((size_t)r * h + j) * T + t) * Tk;
                int same =
                    memcmp(a0[k] + off, ws->pr->dec.a.u[k].a + off, sizeof(double) * Tk) == 0;
                if (t < n)
                    assert_true(same);
            }
        free(a0[k]);
    }
    free(a0);
    free(p0);
    free(p1);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    slice_close(&s);
}

static void test_source_padding(void **state)
{
    (void)state;
    slice s;
    slice_open(&s, "post");
    lnk_batch b, bp;
    assert_int_equal(lnk_pairs_batch(&s.p, NULL, s.p.n, &b), LNK_OK);
    /* the same batch with two more <pad> columns on the source */
    bp = b;
    bp.S = b.S + 2;
    bp.src = calloc((size_t)b.B * bp.S, sizeof(int64_t));
    bp.tgt = malloc(sizeof(int64_t) * b.B * b.T);
    memcpy(bp.tgt, b.tgt, sizeof(int64_t) * b.B * b.T);
    for (int r = 0; r < b.B; r++)
        memcpy(bp.src + (size_t)r * bp.S, b.src + (size_t)r * b.S, sizeof(int64_t) * b.S);
    double *v = malloc(sizeof(double) * s.n), *g0 = malloc(sizeof(double) * s.n),
           *g1 = malloc(sizeof(double) * s.n), *h0 = malloc(sizeof(double) * s.n),
           *h1 = malloc(sizeof(double) * s.n);
    tu_randn(v, s.n, 11);
    lnk_workspace *ws = lnk_workspace_alloc(s.m, b.B, bp.S, b.T, LNK_WS_HVP);
    assert_non_null(ws);
    double l0, l1;
    assert_int_equal(lnk_model_hvp(ws, s.th, &b, v, h0, &l0, g0), LNK_OK);
    assert_int_equal(lnk_model_hvp(ws, s.th, &bp, v, h1, &l1, g1), LNK_OK);
    print_message("source padding: loss %.17g vs %.17g, gradient %.3g, H v %.3g relative\n", l0,
                  l1, tu_relerr(g1, g0, s.n, 0), tu_relerr(h1, h0, s.n, 0));
    assert_true(fabs(l1 - l0) <= 1e-12 * fabs(l0));
    assert_true(tu_norm(g0, s.n) > 0 && tu_norm(h0, s.n) > 0);
    assert_true(tu_relerr(g1, g0, s.n, 0) <= 1e-12);
    assert_true(tu_relerr(h1, h0, s.n, 0) <= 1e-12);
    /* and a real source token there instead of <pad> does change the loss */
    for (int r = 0; r < b.B; r++)
        bp.src[(size_t)r * bp.S + b.S] = 4;
    assert_int_equal(lnk_model_eval(ws, s.th, &bp, &l1, NULL, NULL), LNK_OK);
    assert_true(fabs(l1 - l0) > 1e-9 * fabs(l0));
    lnk_workspace_free(ws);
    free(v);
    free(g0);
    free(g1);
    free(h0);
    free(h1);
    free(bp.src);
    free(bp.tgt);
    lnk_batch_free(&b);
    slice_close(&s);
}

/* lnkit batch --src --tgt. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_roundtrip),   cmocka_unit_test(test_rows_and_counts),
        cmocka_unit_test(test_batches_by_tokens), cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_chunked_hvp),       cmocka_unit_test(test_causal_mask),
        cmocka_unit_test(test_source_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
