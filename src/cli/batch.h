/* lnkit batch: its arguments, shared by the synthetic and text batches
 * (cmd_batch.c) and the parallel corpus (cmd_batch_s2s.c). */
#ifndef LNK_CLI_BATCH_H
#define LNK_CLI_BATCH_H

#include "cli/cli.h"
#include "front/pairs.h"

typedef struct {
    cli_model_opts mo;
    const char *out;
    int synthetic;
    const char *text;
    cli_pairs_opts pa; /* --src, --tgt and the corpus's options; text: min-count, max-vocab,
                          max-line-len */
    long rows;           /* -1: the mode's default */
    int len;
    uint64_t rng_seed;
    const char *vocab_in, *vocab_out;
    int first;
    size_t max_input;
} batch_args;

/* The data set of a parallel corpus (--src, --tgt); opts: lnkit batch's
 * options, for the record the file embeds (front/record.h). */
int cli_batch_s2s(const batch_args *a, const cli_opt *opts);

#endif
