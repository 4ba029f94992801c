/* lnkit batch --src FILE --tgt FILE: a seq2seq data-set file from a parallel
 * corpus (include/lnkit/corpus.h), plus its vocabulary files.  cmd_batch
 * hands over to cmd_batch_s2s when --src is among its arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/corpus.h"

static void help(void)
{
    printf("usage: lnkit batch --src FILE --tgt FILE [--vocab-src F] [--vocab-tgt F | "
           "--joint-vocab]\n"
           "                   [--min-count N] [--max-vocab N] [--max-len N] [--truncate]\n"
           "                   [--src-eos] [--keep-order] [--max-tokens N] -o DATA.safetensors\n\n"
           "A seq2seq data set from a parallel corpus: line i of --src translates line i of\n"
           "--tgt (whitespace-tokenised UTF-8, one sentence a line, the same line count).\n"
           "Writes ONE file with src [B, S] (the source ids; with --src-eos also <eos>) and\n"
           "tgt [B, T] (<bos> target ids <eos>) for all pairs, padded with <pad> to the\n"
           "longest; eval/eigs/trace/density cut it into chunks with --chunk ROWS (the\n"
           "data-set loss is the token-weighted mean over the chunks).  Rows are sorted by\n"
           "length (max(S, T), then T, then S, then line: deterministic) so that chunks of\n"
           "consecutive rows carry little padding; --keep-order keeps the file order.\n"
           "Vocabularies are written beside the output as DATA.src.vocab and DATA.tgt.vocab\n"
           "(a side given with --vocab-src/--vocab-tgt is not rewritten).\n\n"
           "  -o, --output FILE      data-set file to write                       (required)\n"
           "  --src FILE, --tgt FILE source and target text                       (required)\n"
           "  --vocab-src FILE       use this source vocabulary instead of building one\n"
           "  --vocab-tgt FILE       use this target vocabulary instead of building one\n"
           "  --joint-vocab          one vocabulary from both texts, for both sides\n"
           "  --min-count N          minimum token count to enter a vocabulary    (1)\n"
           "  --max-vocab N          vocabulary size limit, 0 = none              (0)\n"
           "  --max-len N            sentence tokens per side, 0 = no limit       (0)\n"
           "  --truncate             truncate longer pairs to --max-len (default: drop them)\n"
           "  --src-eos              append <eos> to the source rows (fairseq); MODEL.md §4 has\n"
           "                         the source tokens alone (default)\n"
           "  --keep-order           rows in file order instead of by length\n"
           "  --max-tokens N         print (and record in the file's metadata) the largest\n"
           "                         --chunk ROWS whose chunks all hold at most N padded\n"
           "                         tokens, B x max(S, T)\n"
           "  --max-input SIZE       size limit of each text and vocabulary file\n"
           "                         (bytes, or with K, M, G)                     (1G)\n"
           "  --quiet                nothing on stderr but errors\n");
}

enum { O_SRC = 1, O_TGT, O_VSRC, O_VTGT, O_JOINT, O_MINC, O_MAXV, O_MAXLEN, O_TRUNC, O_SEOS,
       O_KEEP, O_MAXTOK, O_MAXIN, O_QUIET };

int cmd_batch_s2s(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},     {"help", no_argument, NULL, 'h'},
        {"src", required_argument, NULL, O_SRC},       {"tgt", required_argument, NULL, O_TGT},
        {"vocab-src", required_argument, NULL, O_VSRC},
        {"vocab-tgt", required_argument, NULL, O_VTGT},
        {"joint-vocab", no_argument, NULL, O_JOINT},
        {"min-count", required_argument, NULL, O_MINC},
        {"max-vocab", required_argument, NULL, O_MAXV},
        {"max-len", required_argument, NULL, O_MAXLEN}, {"truncate", no_argument, NULL, O_TRUNC},
        {"src-eos", no_argument, NULL, O_SEOS},        {"keep-order", no_argument, NULL, O_KEEP},
        {"max-tokens", required_argument, NULL, O_MAXTOK},
        {"max-input", required_argument, NULL, O_MAXIN},
        {"quiet", no_argument, NULL, O_QUIET},         {0, 0, 0, 0}};
    const char *out = NULL, *src = NULL, *tgt = NULL, *vsrc_in = NULL, *vtgt_in = NULL;
    int joint = 0, min_count = 1, max_vocab = 0, keep = 0;
    long max_tokens = 0;
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 'h': help(); return 0;
        case O_SRC: src = optarg; break;
        case O_TGT: tgt = optarg; break;
        case O_VSRC: vsrc_in = optarg; break;
        case O_VTGT: vtgt_in = optarg; break;
        case O_JOINT: joint = 1; break;
        case O_MINC: min_count = (int)cli_int("min-count", optarg, 1, 1L << 30); break;
        case O_MAXV: max_vocab = (int)cli_int("max-vocab", optarg, 0, 1L << 30); break;
        case O_MAXLEN: po.max_len = (int)cli_int("max-len", optarg, 0, 1L << 24); break;
        case O_TRUNC: po.truncate = 1; break;
        case O_SEOS: po.src_eos = 1; break;
        case O_KEEP: keep = 1; break;
        case O_MAXTOK: max_tokens = cli_int("max-tokens", optarg, 1, 1L << 40); break;
        case O_MAXIN: cli_max_input("max-input", optarg); break;
        case O_QUIET: cli_quiet = 1; break;
        default: cli_bad_option("batch", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("batch: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("batch: -o DATA.safetensors is required");
    if (!src || !tgt)
        cli_die("batch: a parallel corpus needs both --src FILE and --tgt FILE");
    if (joint && (vsrc_in || vtgt_in))
        cli_die("batch: --joint-vocab builds the vocabulary; it cannot be combined with "
                "--vocab-src/--vocab-tgt");
    if (po.truncate && po.max_len == 0)
        cli_die("batch: --truncate needs --max-len N");
    /* vocabularies beside the output, unless given (none beside a device or FIFO) */
    char *vsp = vsrc_in ? NULL : cli_sidecar_path(out, NULL, ".src.vocab");
    char *vtp = vtgt_in ? NULL : cli_sidecar_path(out, NULL, ".tgt.vocab");
    cli_file outs[3] = {{out, "-o"}, {vsp, "the source vocabulary beside -o"},
                        {vtp, "the target vocabulary beside -o"}},
             ins[4] = {{src, "--src"}, {tgt, "--tgt"}, {vsrc_in, "--vocab-src"},
                       {vtgt_in, "--vocab-tgt"}};
    cli_check_outputs("batch", outs, 3, ins, 4);

    lnk_corpus c;
    if (lnk_corpus_read(src, tgt, &c) != LNK_OK)
        cli_die_lib();
    lnk_vocab *vs = NULL, *vt = NULL;
    if (vsrc_in && lnk_vocab_load(vsrc_in, &vs) != LNK_OK)
        cli_die_lib();
    if (vtgt_in && lnk_vocab_load(vtgt_in, &vt) != LNK_OK)
        cli_die_lib();
    if (!vs || !vt) {
        lnk_vocab *bs, *bt;
        if (lnk_corpus_vocabs(&c, joint, min_count, max_vocab, &bs, &bt) != LNK_OK)
            cli_die_lib();
        if (vs)
            lnk_vocab_free(bs);
        else
            vs = bs;
        if (vt)
            lnk_vocab_free(bt);
        else
            vt = bt;
    }
    lnk_pairs p;
    if (lnk_pairs_make(&c, vs, vt, &po, &p) != LNK_OK)
        cli_die_lib();
    if (p.n == 0)
        cli_die("batch: every one of the %d pairs is longer than --max-len %d; nothing to write",
                p.n_lines, po.max_len);
    int *order = malloc(sizeof(int) * p.n);
    if (!order)
        cli_die("out of memory");
    if (keep)
        for (int i = 0; i < p.n; i++)
            order[i] = i;
    else if (lnk_pairs_order(&p, order) != LNK_OK)
        cli_die_lib();
    lnk_batch b;
    if (lnk_pairs_batch(&p, order, p.n, &b) != LNK_OK)
        cli_die_lib();
    int chunk = max_tokens ? lnk_pairs_chunk_rows(&p, order, (size_t)max_tokens) : -1;
    for (int i = 0; chunk == 0 && i < p.n; i++) {
        int S = p.src_len[i], T = p.tgt_len[i], l = S > T ? S : T;
        if (l > max_tokens)
            cli_die("batch: --max-tokens %ld: the pair on line %d alone has padded size %d "
                    "(max(S, T) with src %d, tgt %d ids); raise --max-tokens or set --max-len",
                    max_tokens, p.line[i] + 1, l, S, T);
    }

    /* the data set and its vocabularies: all or none */
    cli_outputs_begin();
    if (vsp && lnk_vocab_save(vs, vsp) != LNK_OK)
        cli_die_lib();
    if (vtp && lnk_vocab_save(vt, vtp) != LNK_OK)
        cli_die_lib();

    char n_pairs[24], n_drop[24], n_trunc[24], vsz[24], vtz[24], nsc[24], chk[24];
    snprintf(n_pairs, sizeof n_pairs, "%d", p.n);
    snprintf(n_drop, sizeof n_drop, "%d", p.n_dropped);
    snprintf(n_trunc, sizeof n_trunc, "%d", p.n_truncated);
    snprintf(vsz, sizeof vsz, "%d", lnk_vocab_size(vs));
    snprintf(vtz, sizeof vtz, "%d", lnk_vocab_size(vt));
    snprintf(nsc, sizeof nsc, "%zu", p.n_scored);
    snprintf(chk, sizeof chk, "%d", chunk);
    const char *meta[40];
    int k = 0;
#define KV(key, val)                                                                              \
    do {                                                                                          \
        meta[k++] = key;                                                                          \
        meta[k++] = val;                                                                          \
    } while (0)
    KV("task", "seq2seq");
    KV("src_file", src);
    KV("tgt_file", tgt);
    KV("pairs", n_pairs);
    KV("dropped", n_drop);
    KV("truncated", n_trunc);
    KV("n_scored", nsc);
    KV("V_src", vsz);
    KV("V_tgt", vtz);
    KV("vocab_src", vsrc_in ? vsrc_in : vsp ? vsp : "");
    KV("vocab_tgt", vtgt_in ? vtgt_in : vtp ? vtp : "");
    KV("joint_vocab", joint ? "true" : "false");
    KV("src_eos", po.src_eos ? "true" : "false");
    KV("order", keep ? "file" : "length");
    if (chunk > 0)
        KV("chunk_rows", chk);
    meta[k] = NULL;
#undef KV
    lnk_st_tensor t[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.S},
         .numel = (size_t)b.B * b.S, .data = b.src},
        {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b.B, b.T},
         .numel = (size_t)b.B * b.T, .data = b.tgt}};
    if (lnk_st_write(out, t, 2, meta) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();

    cli_say("lnkit batch: %d pairs of %d", p.n, p.n_lines);
    if (po.max_len)
        cli_say(" (%d dropped, %d truncated by --max-len %d)", p.n_dropped,
                p.n_truncated, po.max_len);
    cli_say("; src [%d, %d], tgt [%d, %d], %zu + %zu tokens (%zu + %zu <unk>), %zu "
            "scored positions -> %s\n", b.B, b.S, b.B, b.T, p.src_tokens, p.tgt_tokens,
            p.src_unk, p.tgt_unk, p.n_scored, out);
    if (vsp)
        cli_say("lnkit batch: source vocabulary of %d tokens -> %s\n",
                lnk_vocab_size(vs), vsp);
    if (vtp)
        cli_say("lnkit batch: target vocabulary of %d tokens -> %s\n",
                lnk_vocab_size(vt), vtp);
    cli_say("lnkit batch: use --task seq2seq --V-src %d --V-tgt %d (or larger)\n",
            lnk_vocab_size(vs), lnk_vocab_size(vt));
    if (chunk > 0)
        cli_say("lnkit batch: --chunk %d keeps every chunk within --max-tokens %ld\n",
                chunk, max_tokens);
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
