/* Fuzz the CSV reader of the analysis module (results files). */
#include "fuzz.h"
#include "kit/csvread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    study_csvdata t;
    int st = study_csvdata_read(fuzz_file(0, data, n), &t);
    fuzz_check_message();
    if (st != LNK_OK)
        return 0;
    for (size_t r = 0; r < t.nrow; r++)
        for (int c = 0; c < t.ncol; c++) {
            double v;
            FUZZ_ASSERT(study_csvdata_str(&t, r, c) != NULL);
            study_csvdata_num(&t, r, c, &v);
        }
    study_csvdata_free(&t);
    return 0;
}
