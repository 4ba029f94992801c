/* Fuzz the configuration reader (JSON file) and the checks after it; a
 * configuration that passes is written back and must read back the same. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    lnk_config c;
    lnk_config_default(&c);
    int st = lnk_config_load_json(&c, fuzz_file(0, data, n));
    fuzz_check_message();
    if (st == LNK_OK) {
        st = lnk_config_finalize(&c);
        fuzz_check_message();
    }
    if (st == LNK_OK) {
        char *text = lnk_config_to_json(&c, 0, NULL, 0);
        FUZZ_ASSERT(text != NULL);
        lnk_config back;
        lnk_config_default(&back);
        FUZZ_ASSERT(lnk_config_parse_json(&back, text, "round trip") == LNK_OK);
        FUZZ_ASSERT(lnk_config_finalize(&back) == LNK_OK);
        char *again = lnk_config_to_json(&back, 0, NULL, 0);
        FUZZ_ASSERT(again && strcmp(text, again) == 0);
        free(text);
        free(again);
        lnk_config_clear(&back);
    }
    lnk_config_clear(&c);
    return 0;
}
