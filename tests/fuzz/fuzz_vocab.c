/* Fuzz the vocabulary reader: a vocabulary that loads maps every id to its
 * token and back. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    lnk_vocab *v = NULL;
    int st = lnk_vocab_load(fuzz_file(0, data, n), &v);
    fuzz_check_message();
    FUZZ_ASSERT((st == LNK_OK) == (v != NULL));
    if (st != LNK_OK)
        return 0;
    FUZZ_ASSERT(lnk_vocab_size(v) >= 4);
    for (int i = 0; i < lnk_vocab_size(v); i++)
        FUZZ_ASSERT(lnk_vocab_id(v, lnk_vocab_token(v, i)) == i);
    lnk_vocab_free(v);
    return 0;
}
