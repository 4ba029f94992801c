/* The seq2seq data set of a parallel corpus (front/pairs.h). */
#include <stdlib.h>
#include <string.h>
#include "front/pairs.h"

void cli_pairs_opts_default(cli_pairs_opts *o)
{
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    *o = (cli_pairs_opts){.min_count = 1, .max_len = po.max_len, .truncate = po.truncate,
                          .src_eos = po.src_eos};
}

void cli_pairs_check(const cli_pairs_opts *o)
{
    if (!o->tgt)
        cli_die("a parallel corpus needs both --src FILE and --tgt FILE");
    if (o->joint && (o->vocab_src || o->vocab_tgt))
        cli_die("--joint-vocab builds the vocabulary; it cannot be combined with "
                "--vocab-src/--vocab-tgt");
    if (o->truncate && o->max_len == 0)
        cli_die("--truncate needs --max-line-len N");
}

/* The vocabularies: loaded where given, built from the corpus otherwise. */
static void load_vocabs(const cli_pairs_opts *o, cli_pairs *D)
{
    if (o->vocab_src)
        CLI_CK(lnk_vocab_load(o->vocab_src, &D->vs));
    if (o->vocab_src)
        CLI_CK(lnk_prov_input_digest(cli_prov(), o->vocab_src, lnk_vocab_digest(D->vs)));
    if (o->vocab_tgt)
        CLI_CK(lnk_vocab_load(o->vocab_tgt, &D->vt));
    if (o->vocab_tgt)
        CLI_CK(lnk_prov_input_digest(cli_prov(), o->vocab_tgt, lnk_vocab_digest(D->vt)));
    if (D->vs && D->vt)
        return;
    lnk_vocab *bs, *bt;
    CLI_CK(lnk_corpus_vocabs(&D->c, o->joint, o->min_count, o->max_vocab, &bs, &bt));
    if (D->vs)
        lnk_vocab_free(bs);
    else
        D->vs = bs;
    if (D->vt)
        lnk_vocab_free(bt);
    else
        D->vt = bt;
}

void cli_pairs_load(const cli_pairs_opts *o, int rows, int flags, cli_pairs *D)
{
    cli_pairs_check(o);
    memset(D, 0, sizeof *D);
    CLI_CK(lnk_corpus_read(o->src, o->tgt, &D->c));
    CLI_CK(lnk_prov_input_digest(cli_prov(), o->src, &D->c.src.digest));
    CLI_CK(lnk_prov_input_digest(cli_prov(), o->tgt, &D->c.tgt.digest));
    /* a prefix: the texts are freed by their pools, not per line */
    if (rows > 0 && rows < D->c.src.n_lines)
        D->c.src.n_lines = D->c.tgt.n_lines = rows;
    load_vocabs(o, D);
    lnk_pairs_opts po = {.max_len = o->max_len, .truncate = o->truncate, .src_eos = o->src_eos};
    CLI_CK(lnk_pairs_make(&D->c, D->vs, D->vt, &po, &D->p));
    if (D->p.n == 0)
        cli_die("every one of the %d pairs is longer than --max-line-len %d; nothing to write",
                D->p.n_lines, o->max_len);
    if (flags & CLI_PAIRS_ORDER) {
        D->order = cli_alloc(sizeof(int) * D->p.n);
        if (o->keep_order)
            for (int i = 0; i < D->p.n; i++)
                D->order[i] = i;
        else
            CLI_CK(lnk_pairs_order(&D->p, D->order));
    }
    if (!(flags & CLI_PAIRS_CHUNKS))
        return;
    CLI_CK(lnk_pairs_batches(&D->p, (size_t)o->max_tokens, &D->chunks, &D->n_chunks));
    for (int i = 0; i < D->n_chunks; i++) {
        size_t s = lnk_pairs_padded(&D->chunks[i]);
        D->padded += s;
        D->max_chunk = s > D->max_chunk ? s : D->max_chunk;
    }
}

void cli_pairs_free(cli_pairs *D)
{
    if (D->chunks)
        lnk_batches_free(D->chunks, D->n_chunks);
    free(D->order);
    lnk_pairs_free(&D->p);
    lnk_vocab_free(D->vs);
    lnk_vocab_free(D->vt);
    lnk_corpus_free(&D->c);
    memset(D, 0, sizeof *D);
}
