/* Fuzz the text reader, the vocabulary builder and lm batches from text. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    lnk_text t;
    int st = lnk_text_read(fuzz_file(0, data, n), &t);
    fuzz_check_message();
    if (st != LNK_OK)
        return 0;
    FUZZ_ASSERT(t.n_lines >= 1);
    const lnk_text *tx[1] = {&t};
    lnk_vocab *v = NULL;
    int min_count = n ? 1 + data[0] % 3 : 1, max_size = n > 1 ? (data[1] % 2 ? 0 : 4 + data[1] % 20) : 0;
    if (lnk_vocab_build(tx, 1, min_count, max_size, &v) == LNK_OK) {
        FUZZ_ASSERT(lnk_vocab_size(v) >= 4 && (max_size == 0 || lnk_vocab_size(v) <= max_size));
        int longest = 0;
        for (int i = 0; i < t.n_lines; i++)
            longest = t.len[i] > longest ? t.len[i] : longest;
        for (int max_len = 0; max_len < 9; max_len += 8) {
            /* a padded batch of n_lines x (longest + 2) ids is what was asked
             * for: keep it within the fuzzer's memory */
            int T = (max_len && max_len < longest ? max_len : longest) + 2;
            if ((size_t)t.n_lines * (size_t)T > ((size_t)1 << 22))
                continue;
            lnk_batch b;
            if (lnk_text_lm_batch(&t, v, 0, 0, max_len, &b) == LNK_OK) {
                FUZZ_ASSERT(b.B == t.n_lines && b.T >= 2);
                for (size_t i = 0; i < (size_t)b.B * b.T; i++)
                    FUZZ_ASSERT(b.tgt[i] >= 0 && b.tgt[i] < lnk_vocab_size(v));
                lnk_batch_free(&b);
            }
            fuzz_check_message();
        }
        lnk_vocab_free(v);
    }
    lnk_text_free(&t);
    return 0;
}
