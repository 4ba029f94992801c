/* lnkit batch --src FILE --tgt FILE: a seq2seq data-set file from a parallel
 * corpus (front/pairs.h: cli_pairs_load), plus its vocabulary files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/batch.h"
#include "front/record.h"

/* What was written, and the flags a model for it needs. */
static void s2s_report(const batch_args *a, const cli_pairs *D, const char *vsp,
                       const char *vtp, const lnk_batch *b, int chunk)
{
    const lnk_pairs *p = &D->p;
    cli_say("%d pairs of %d", p->n, p->n_lines);
    if (a->pa.max_len)
        cli_say(" (%d dropped, %d truncated by --max-line-len %d)", p->n_dropped,
                p->n_truncated, a->pa.max_len);
    cli_say("; src [%d, %d], tgt [%d, %d], %zu + %zu tokens (%zu + %zu <unk>), %zu "
            "scored positions -> %s\n", b->B, b->S, b->B, b->T, p->src_tokens, p->tgt_tokens,
            p->src_unk, p->tgt_unk, p->n_scored,
            cli_dest(a->out));
    if (!a->pa.vocab_src)
        cli_say("source vocabulary of %d tokens -> %s\n", lnk_vocab_size(D->vs), cli_dest(vsp));
    if (!a->pa.vocab_tgt)
        cli_say("target vocabulary of %d tokens -> %s\n", lnk_vocab_size(D->vt), cli_dest(vtp));
    cli_say("use --task seq2seq --V-src %d --V-tgt %d (or larger)\n",
            lnk_vocab_size(D->vs), lnk_vocab_size(D->vt));
    if (chunk > 0)
        cli_say("--chunk %d keeps every chunk within --max-tokens %ld\n",
                chunk, a->pa.max_tokens);
}

int cli_batch_s2s(const batch_args *a, const cli_opt *opts)
{
    const cli_pairs_opts *o = &a->pa;
    long max_tokens = o->max_tokens;
    cli_pairs_check(o);
    /* vocabularies beside the output, unless given (none beside a device or FIFO) */
    char *vsp = o->vocab_src ? NULL : cli_sidecar_path(a->out, NULL, ".src.vocab");
    char *vtp = o->vocab_tgt ? NULL : cli_sidecar_path(a->out, NULL, ".tgt.vocab");
    const char *out = cli_out(a->out, 1);
    cli_file outs[3] = {{out, "-o"}, {vsp, "the source vocabulary beside -o"},
                        {vtp, "the target vocabulary beside -o"}},
             ins[4] = {{o->src, "--src"}, {o->tgt, "--tgt"}, {o->vocab_src, "--vocab-src"},
                       {o->vocab_tgt, "--vocab-tgt"}};
    cli_check_outputs(NULL, outs, 3, ins, 4);

    cli_pairs D;
    cli_pairs_load(o, 0, CLI_PAIRS_ORDER, &D);
    const lnk_pairs *p = &D.p;
    lnk_batch b;
    CLI_CK(lnk_pairs_batch(p, D.order, p->n, &b));
    int chunk = max_tokens ? lnk_pairs_chunk_rows(p, D.order, (size_t)max_tokens) : -1;
    for (int i = 0; chunk == 0 && i < p->n; i++) {
        int S = p->src_len[i], T = p->tgt_len[i], l = S > T ? S : T;
        if (l > max_tokens)
            cli_die("--max-tokens %ld: the pair on line %d alone has padded size %d "
                    "(max(S, T) with src %d, tgt %d ids); raise --max-tokens or set --max-line-len",
                    max_tokens, p->line[i] + 1, l, S, T);
    }

    /* the data set and its vocabularies: all or none */
    cli_outputs_begin();
    if (vsp)
        CLI_CK(lnk_vocab_save(D.vs, vsp));
    if (vtp)
        CLI_CK(lnk_vocab_save(D.vt, vtp));
    cli_record_md rec;
    lnk_pairs_file how = {o->src, o->tgt, o->vocab_src ? o->vocab_src : vsp,
                          o->vocab_tgt ? o->vocab_tgt : vtp, lnk_vocab_size(D.vs),
                          lnk_vocab_size(D.vt), o->joint, o->src_eos, o->keep_order, chunk,
                          cli_record_table(&rec, "lnkit batch", "the pairs of --src and --tgt "
                                           "as token ids", NULL, opts, a)};
    CLI_CK(lnk_pairs_save(out, p, &b, &how));
    cli_record_free(&rec);
    cli_outputs_commit();

    s2s_report(a, &D, vsp, vtp, &b, chunk);
    free(vsp);
    free(vtp);
    lnk_batch_free(&b);
    cli_pairs_free(&D);
    return 0;
}
