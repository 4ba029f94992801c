/* Fuzz the parallel corpus reader and what follows it: vocabularies, pairs,
 * ordering, batches by token count.  Input: 2 bytes of options, 2 bytes the
 * length of the source part, the source file, the target file. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n < 4)
        return 0;
    unsigned opt = data[0] | (unsigned)data[1] << 8;
    size_t ls = data[2] | (size_t)data[3] << 8;
    data += 4, n -= 4;
    if (ls > n)
        ls = n;
    const char *src = fuzz_file(0, data, ls), *tgt = fuzz_file(1, data + ls, n - ls);
    lnk_corpus c;
    int st = lnk_corpus_read(src, tgt, &c);
    fuzz_check_message();
    if (st != LNK_OK)
        return 0;
    FUZZ_ASSERT(c.src.n_lines == c.tgt.n_lines);
    lnk_vocab *vs, *vt;
    if (lnk_corpus_vocabs(&c, opt & 1, 1 + (opt >> 1) % 2, (opt >> 2) % 2 ? 6 : 0, &vs, &vt) == LNK_OK) {
        lnk_pairs_opts po;
        lnk_pairs_opts_default(&po);
        po.max_len = (opt >> 3) % 8;
        po.truncate = (opt >> 6) & 1;
        po.src_eos = (opt >> 7) & 1;
        lnk_pairs p;
        if (lnk_pairs_make(&c, vs, vt, &po, &p) == LNK_OK) {
            FUZZ_ASSERT(p.n + p.n_dropped == p.n_lines);
            if (p.n > 0) {
                int *order = malloc(sizeof(int) * (size_t)p.n);
                FUZZ_ASSERT(lnk_pairs_order(&p, order) == LNK_OK);
                lnk_batch b;
                if (lnk_pairs_batch(&p, order, p.n, &b) == LNK_OK)
                    lnk_batch_free(&b);
                size_t max_tokens = 1 + (opt >> 8) % 64;
                int rows = lnk_pairs_chunk_rows(&p, order, max_tokens);
                FUZZ_ASSERT(rows >= 0 && rows <= p.n);
                lnk_batch *ch;
                int nch;
                if (lnk_pairs_batches(&p, max_tokens, &ch, &nch) == LNK_OK) {
                    int rows_total = 0;
                    for (int i = 0; i < nch; i++) {
                        FUZZ_ASSERT(lnk_pairs_padded(&ch[i]) <= max_tokens);
                        rows_total += ch[i].B;
                    }
                    FUZZ_ASSERT(rows_total == p.n);
                    lnk_batches_free(ch, nch);
                }
                free(order);
            }
            lnk_pairs_free(&p);
        }
        fuzz_check_message();
        lnk_vocab_free(vs);
        lnk_vocab_free(vt);
    }
    lnk_corpus_free(&c);
    return 0;
}
