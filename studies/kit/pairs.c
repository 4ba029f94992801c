/* The seq2seq data set of a study (kit.h: study_pairs_load). */
#include <string.h>
#include "kit.h"

void study_pairs_load(study_pairs *D, const cli_pairs_opts *o, int rows)
{
    cli_pairs P;
    cli_pairs_load(o, rows, CLI_PAIRS_CHUNKS, &P);
    *D = (study_pairs){.chunks = P.chunks, .n_chunks = P.n_chunks, .V_src = lnk_vocab_size(P.vs),
                       .V_tgt = lnk_vocab_size(P.vt), .n_pairs = P.p.n, .n_scored = P.p.n_scored};
    P.chunks = NULL; /* handed over */
    cli_pairs_free(&P);
}

void study_pairs_free(study_pairs *D)
{
    if (D->chunks)
        lnk_batches_free(D->chunks, D->n_chunks);
    memset(D, 0, sizeof *D);
}
