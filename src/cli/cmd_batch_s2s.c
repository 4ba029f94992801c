/* lnkit batch --src FILE --tgt FILE: a seq2seq data-set file from a parallel
 * corpus (include/lnkit/corpus.h), plus its vocabulary files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/batch.h"
#include "lnkit/corpus.h"

/* The vocabularies: loaded where given, built from the corpus otherwise. */
static void s2s_vocabs(const batch_args *a, lnk_corpus *c, lnk_vocab **vs, lnk_vocab **vt)
{
    if (a->vocab_src && lnk_vocab_load(a->vocab_src, vs) != LNK_OK)
        cli_die_lib();
    if (a->vocab_tgt && lnk_vocab_load(a->vocab_tgt, vt) != LNK_OK)
        cli_die_lib();
    if (!*vs || !*vt) {
        lnk_vocab *bs, *bt;
        CLI_CK(lnk_corpus_vocabs(c, a->joint, a->min_count, a->max_vocab, &bs, &bt));
        if (*vs)
            lnk_vocab_free(bs);
        else
            *vs = bs;
        if (*vt)
            lnk_vocab_free(bt);
        else
            *vt = bt;
    }
}

/* The data set's file, its facts in the safetensors metadata. */
static void s2s_write(const batch_args *a, const char *out, const lnk_pairs *p,
                      const lnk_pairs_opts *po, lnk_vocab *vs, lnk_vocab *vt, const char *vsp,
                      const char *vtp, const lnk_batch *b, int chunk)
{
    char n_pairs[24], n_drop[24], n_trunc[24], vsz[24], vtz[24], nsc[24], chk[24];
    snprintf(n_pairs, sizeof n_pairs, "%d", p->n);
    snprintf(n_drop, sizeof n_drop, "%d", p->n_dropped);
    snprintf(n_trunc, sizeof n_trunc, "%d", p->n_truncated);
    snprintf(vsz, sizeof vsz, "%d", lnk_vocab_size(vs));
    snprintf(vtz, sizeof vtz, "%d", lnk_vocab_size(vt));
    snprintf(nsc, sizeof nsc, "%zu", p->n_scored);
    snprintf(chk, sizeof chk, "%d", chunk);
    const char *meta[40];
    int k = 0;
#define KV(key, val)                                                                              \
    do {                                                                                          \
        meta[k++] = key;                                                                          \
        meta[k++] = val;                                                                          \
    } while (0)
    KV("task", "seq2seq");
    KV("src_file", a->src);
    KV("tgt_file", a->tgt);
    KV("pairs", n_pairs);
    KV("dropped", n_drop);
    KV("truncated", n_trunc);
    KV("n_scored", nsc);
    KV("V_src", vsz);
    KV("V_tgt", vtz);
    KV("vocab_src", a->vocab_src ? a->vocab_src : vsp ? vsp : "");
    KV("vocab_tgt", a->vocab_tgt ? a->vocab_tgt : vtp ? vtp : "");
    KV("joint_vocab", a->joint ? "true" : "false");
    KV("src_eos", po->src_eos ? "true" : "false");
    KV("order", a->keep_order ? "file" : "length");
    if (chunk > 0)
        KV("chunk_rows", chk);
    meta[k] = NULL;
#undef KV
    lnk_st_tensor t[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b->B, b->S},
         .numel = (size_t)b->B * b->S, .data = b->src},
        {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b->B, b->T},
         .numel = (size_t)b->B * b->T, .data = b->tgt}};
    CLI_CK(lnk_st_write(out, t, 2, meta));
}

/* What was written, and the flags a model for it needs. */
static void s2s_report(const batch_args *a, const lnk_pairs *p, const lnk_pairs_opts *po,
                       lnk_vocab *vs, lnk_vocab *vt, const char *vsp, const char *vtp,
                       const lnk_batch *b, int chunk)
{
    cli_say("%d pairs of %d", p->n, p->n_lines);
    if (po->max_len)
        cli_say(" (%d dropped, %d truncated by --max-line-len %d)", p->n_dropped,
                p->n_truncated, po->max_len);
    cli_say("; src [%d, %d], tgt [%d, %d], %zu + %zu tokens (%zu + %zu <unk>), %zu "
            "scored positions -> %s\n", b->B, b->S, b->B, b->T, p->src_tokens, p->tgt_tokens,
            p->src_unk, p->tgt_unk, p->n_scored,
            cli_is_stdout(a->out) ? "standard output" : a->out);
    if (vsp)
        cli_say("source vocabulary of %d tokens -> %s\n",
                lnk_vocab_size(vs), vsp);
    if (vtp)
        cli_say("target vocabulary of %d tokens -> %s\n",
                lnk_vocab_size(vt), vtp);
    cli_say("use --task seq2seq --V-src %d --V-tgt %d (or larger)\n",
            lnk_vocab_size(vs), lnk_vocab_size(vt));
    if (chunk > 0)
        cli_say("--chunk %d keeps every chunk within --max-tokens %ld\n",
                chunk, a->max_tokens);
}

int cli_batch_s2s(const batch_args *a)
{
    const char *src = a->src, *tgt = a->tgt, *vsrc_in = a->vocab_src, *vtgt_in = a->vocab_tgt;
    int joint = a->joint, keep = a->keep_order;
    long max_tokens = a->max_tokens;
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    po.max_len = a->max_len;
    po.truncate = a->truncate;
    po.src_eos = a->src_eos;
    if (!tgt)
        cli_die("a parallel corpus needs both --src FILE and --tgt FILE");
    if (joint && (vsrc_in || vtgt_in))
        cli_die("--joint-vocab builds the vocabulary; it cannot be combined with "
                "--vocab-src/--vocab-tgt");
    if (po.truncate && po.max_len == 0)
        cli_die("--truncate needs --max-line-len N");
    /* vocabularies beside the output, unless given (none beside a device or FIFO) */
    char *vsp = vsrc_in ? NULL : cli_sidecar_path(a->out, NULL, ".src.vocab");
    char *vtp = vtgt_in ? NULL : cli_sidecar_path(a->out, NULL, ".tgt.vocab");
    const char *out = cli_out(a->out, 1);
    cli_file outs[3] = {{out, "-o"}, {vsp, "the source vocabulary beside -o"},
                        {vtp, "the target vocabulary beside -o"}},
             ins[4] = {{src, "--src"}, {tgt, "--tgt"}, {vsrc_in, "--vocab-src"},
                       {vtgt_in, "--vocab-tgt"}};
    cli_check_outputs(NULL, outs, 3, ins, 4);

    lnk_corpus c;
    CLI_CK(lnk_corpus_read(src, tgt, &c));
    lnk_vocab *vs = NULL, *vt = NULL;
    s2s_vocabs(a, &c, &vs, &vt);
    lnk_pairs p;
    CLI_CK(lnk_pairs_make(&c, vs, vt, &po, &p));
    if (p.n == 0)
        cli_die("every one of the %d pairs is longer than --max-line-len %d; nothing to write",
                p.n_lines, po.max_len);
    int *order = cli_alloc(sizeof(int) * p.n);
    if (keep)
        for (int i = 0; i < p.n; i++)
            order[i] = i;
    else if (lnk_pairs_order(&p, order) != LNK_OK)
        cli_die_lib();
    lnk_batch b;
    CLI_CK(lnk_pairs_batch(&p, order, p.n, &b));
    int chunk = max_tokens ? lnk_pairs_chunk_rows(&p, order, (size_t)max_tokens) : -1;
    for (int i = 0; chunk == 0 && i < p.n; i++) {
        int S = p.src_len[i], T = p.tgt_len[i], l = S > T ? S : T;
        if (l > max_tokens)
            cli_die("--max-tokens %ld: the pair on line %d alone has padded size %d "
                    "(max(S, T) with src %d, tgt %d ids); raise --max-tokens or set --max-line-len",
                    max_tokens, p.line[i] + 1, l, S, T);
    }

    /* the data set and its vocabularies: all or none */
    cli_outputs_begin();
    if (vsp && lnk_vocab_save(vs, vsp) != LNK_OK)
        cli_die_lib();
    if (vtp && lnk_vocab_save(vt, vtp) != LNK_OK)
        cli_die_lib();

    s2s_write(a, out, &p, &po, vs, vt, vsp, vtp, &b, chunk);
    cli_outputs_commit();

    s2s_report(a, &p, &po, vs, vt, vsp, vtp, &b, chunk);
    free(vsp);
    free(vtp);
    free(order);
    lnk_batch_free(&b);
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
    return 0;
}
