/* Fuzz the safetensors reader and the model-aware loaders (weights,
 * vectors, batches of the three tasks). */
#include "fuzz.h"

static lnk_model *models[3];

static void setup(void)
{
    static const char *task[3] = {"lm", "seq2seq", "cls"};
    for (int i = 0; i < 3; i++) {
        lnk_config c;
        lnk_config_default(&c);
        if (lnk_config_set(&c, "task", task[i]) || lnk_config_set(&c, "d", "4") ||
            lnk_config_set(&c, "h", "2") || lnk_config_set(&c, "L", "1") ||
            lnk_config_set(&c, "V", "6") || lnk_config_set(&c, "d_ff", "4") ||
            lnk_config_finalize(&c) || !(models[i] = lnk_model_alloc(&c)))
            abort();
        lnk_config_clear(&c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (!models[0])
        setup();
    const char *path = fuzz_file(0, data, n);
    lnk_st_file *f = NULL;
    int st = lnk_st_read(path, &f);
    fuzz_check_message();
    FUZZ_ASSERT((st == LNK_OK) == (f != NULL));
    if (st != LNK_OK)
        return 0;
    /* what the reader promises: tensors tile the buffer, numel matches the shape */
    for (int i = 0; i < f->n; i++) {
        size_t numel = 1;
        for (int k = 0; k < f->t[i].ndim; k++)
            numel *= (size_t)f->t[i].shape[k];
        FUZZ_ASSERT(numel == f->t[i].numel);
        FUZZ_ASSERT(lnk_st_get(f, f->t[i].name) == &f->t[i]);
    }
    lnk_st_free(f);
    for (int i = 0; i < 3; i++) {
        lnk_batch b;
        if (lnk_batch_load(path, models[i], &b) == LNK_OK) {
            FUZZ_ASSERT(b.B >= 1);
            lnk_batch_free(&b);
        }
        fuzz_check_message();
        size_t np = lnk_model_n_params(models[i]);
        double *th = malloc(sizeof(double) * np);
        int kind;
        lnk_weights_load(path, models[i], th);
        fuzz_check_message();
        lnk_vector_load(path, models[i], th, &kind);
        fuzz_check_message();
        free(th);
    }
    return 0;
}
