/* The seq2seq data set of a study (kit.h: study_pairs_load). */
#include <string.h>
#include "lnkit/lnkit.h"
#include "front/front.h"
#include "kit.h"

void study_pairs_load(study_pairs *D, const char *src, const char *tgt, int rows,
                      int max_tokens)
{
    lnk_corpus c;
    CLI_CK(lnk_corpus_read(src, tgt, &c));
    study_input_read(src, &c.src.digest);
    study_input_read(tgt, &c.tgt.digest);
    /* the vocabularies are those of the rows kept, not of the whole files */
    if (rows > 0 && rows < c.src.n_lines)
        c.src.n_lines = c.tgt.n_lines = rows;
    lnk_vocab *vs, *vt;
    CLI_CK(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt));
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    lnk_pairs p;
    CLI_CK(lnk_pairs_make(&c, vs, vt, &po, &p));
    memset(D, 0, sizeof *D);
    CLI_CK(lnk_pairs_batches(&p, (size_t)max_tokens, &D->chunks, &D->n_chunks));
    D->V_src = lnk_vocab_size(vs);
    D->V_tgt = lnk_vocab_size(vt);
    D->n_pairs = p.n;
    D->n_scored = p.n_scored;
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

void study_pairs_free(study_pairs *D)
{
    if (D->chunks)
        lnk_batches_free(D->chunks, D->n_chunks);
    memset(D, 0, sizeof *D);
}
