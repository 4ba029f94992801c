/* lnkit batch: write a batch file, from synthetic ids or from text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/text.h"

static void help(void)
{
    printf("usage: lnkit batch --synthetic [--vocab V] [--batch B] [--len T] [--seed S]\n"
           "                   [config flags] -o BATCH.safetensors\n"
           "       lnkit batch --text FILE [--vocab-in VOCAB] [--vocab-out VOCAB]\n"
           "                   [--min-count N] [--max-vocab N] [--max-len N] [--first N]\n"
           "                   [--batch B] -o BATCH.safetensors\n"
           "       lnkit batch --src FILE --tgt FILE ... -o DATA.safetensors   (seq2seq; see\n"
           "                   lnkit batch --src x --help)\n\n"
           "Synthetic: ids uniform in [4, V) (lm: tgt rows <bos> + T ids; cls: src [B, T] and\n"
           "labels uniform in [0, n_classes); seq2seq: src [B, T] and tgt [B, T+1]).\n"
           "Text (task lm): one sequence a line, whitespace-tokenised; row = <bos> ids <eos>,\n"
           "padded with <pad>; vocabulary by frequency, <pad> <unk> <bos> <eos> first.\n\n"
           "  -o, --output FILE      batch file to write                      (required)\n"
           "  --synthetic            synthetic ids\n"
           "  --vocab V              synthetic vocabulary (same as --V)       (32)\n"
           "  --batch B              rows (text: 0 = all lines)               (synthetic 8, text 0)\n"
           "  --len T                synthetic positions per row              (16)\n"
           "  --text FILE            whitespace-tokenised text\n"
           "  --vocab-in FILE        use this vocabulary instead of building one\n"
           "  --vocab-out FILE       where the vocabulary is written          (BATCH.vocab)\n"
           "  --min-count N          minimum token count to enter the vocab   (1)\n"
           "  --max-vocab N          vocabulary size limit, 0 = none          (0)\n"
           "  --max-len N            truncate lines to N tokens, 0 = none     (0)\n"
           "  --first N              first line used (0-based)                (0)\n"
           "  --max-input SIZE       size limit of the text and vocabulary files\n"
           "                         (bytes, or with K, M, G)                 (1G)\n\n");
    cli_print_model_help_seed("seed of the synthetic ids");
}

enum { O_SYN = 1, O_VOCAB, O_BATCH, O_LEN, O_TEXT, O_VIN, O_VOUT, O_MINC, O_MAXV,
       O_MAXLEN, O_FIRST, O_MAXIN };

int cmd_batch(int argc, char **argv)
{
    /* a parallel corpus (--src/--tgt) makes a seq2seq data set: its own command */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--src") || !strncmp(argv[i], "--src=", 6))
            return cmd_batch_s2s(argc, argv);
    struct option opts[112] = {
        {"output", required_argument, NULL, 'o'},   {"help", no_argument, NULL, 'h'},
        {"synthetic", no_argument, NULL, O_SYN},     {"vocab", required_argument, NULL, O_VOCAB},
        {"batch", required_argument, NULL, O_BATCH}, {"len", required_argument, NULL, O_LEN},
        {"text", required_argument, NULL, O_TEXT},   {"vocab-in", required_argument, NULL, O_VIN},
        {"vocab-out", required_argument, NULL, O_VOUT},
        {"min-count", required_argument, NULL, O_MINC},
        {"max-vocab", required_argument, NULL, O_MAXV},
        {"max-len", required_argument, NULL, O_MAXLEN},
        {"first", required_argument, NULL, O_FIRST},
        {"max-input", required_argument, NULL, O_MAXIN}};
    int n = cli_add_model_options(opts, 14);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *out = NULL, *text = NULL, *vin = NULL, *vout = NULL;
    int syn = 0, len = 16, min_count = 1, max_vocab = 0, max_len = 0, first = 0;
    long B = -1;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case 'h': help(); return 0;
        case O_SYN: syn = 1; break;
        case O_VOCAB:
            cli_int("vocab", optarg, 5, 1L << 30);
            mo.set_key[mo.n_set] = "V";
            mo.set_val[mo.n_set++] = optarg;
            break;
        case O_BATCH: B = cli_int("batch", optarg, 0, 1L << 24); break;
        case O_LEN: len = (int)cli_int("len", optarg, 1, 1L << 24); break;
        case O_TEXT: text = optarg; break;
        case O_VIN: vin = optarg; break;
        case O_VOUT: vout = optarg; break;
        case O_MINC: min_count = (int)cli_int("min-count", optarg, 1, 1L << 30); break;
        case O_MAXV: max_vocab = (int)cli_int("max-vocab", optarg, 0, 1L << 30); break;
        case O_MAXLEN: max_len = (int)cli_int("max-len", optarg, 0, 1L << 24); break;
        case O_FIRST: first = (int)cli_int("first", optarg, 0, 1L << 30); break;
        case O_MAXIN: cli_max_input("max-input", optarg); break;
        default: cli_bad_option("batch", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("batch: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("batch: -o BATCH.safetensors is required");
    if (syn == !!text)
        cli_die("batch: give exactly one of --synthetic and --text FILE");
    /* a built vocabulary goes beside -o (none beside a device or FIFO) */
    char *vp = text && !vin ? cli_sidecar_path(out, vout, ".vocab") : NULL;
    cli_file outs[2] = {{out, "-o"}, {vp, vout ? "--vocab-out" : "the vocabulary beside -o"}},
             ins[3] = {{mo.config_path, "--config"}, {text, "--text"}, {vin, "--vocab-in"}};
    cli_check_outputs("batch", outs, 2, ins, 3);
    cli_outputs_begin(); /* the batch and its vocabulary: both or neither */
    lnk_batch b;
    int nv = 0;
    if (syn) {
        if (B == 0)
            cli_die("batch: --batch must be >= 1 for synthetic batches");
        lnk_config c;
        cli_make_config(&mo, &c);
        if ((c.task != LNK_TASK_LM && c.V_src < 5) || (c.task != LNK_TASK_CLS && c.V_tgt < 5))
            cli_die("batch: synthetic ids are drawn from [4, V): V must be at least 5");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        if (lnk_batch_synthetic(m, B < 0 ? 8 : (int)B, len, c.seed, &b) != LNK_OK)
            cli_die_lib();
        lnk_model_free(m);
        lnk_config_clear(&c);
    } else {
        lnk_text t;
        if (lnk_text_read(text, &t) != LNK_OK)
            cli_die_lib();
        lnk_vocab *v = NULL;
        if (vin) {
            if (lnk_vocab_load(vin, &v) != LNK_OK)
                cli_die_lib();
        } else {
            const lnk_text *tx[1] = {&t};
            if (lnk_vocab_build(tx, 1, min_count, max_vocab, &v) != LNK_OK)
                cli_die_lib();
        }
        if (first >= t.n_lines)
            cli_die("batch: --first %d but %s has %d lines", first, text, t.n_lines);
        if (lnk_text_lm_batch(&t, v, first, B < 0 ? 0 : (int)B, max_len, &b) != LNK_OK)
            cli_die_lib();
        if (vp && lnk_vocab_save(v, vp) != LNK_OK)
            cli_die_lib();
        nv = lnk_vocab_size(v);
        lnk_vocab_free(v);
        lnk_text_free(&t);
    }
    if (lnk_batch_save(out, &b) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    /* what was written, once it is */
    if (vp)
        cli_say("lnkit batch: vocabulary of %d tokens -> %s\n", nv, vp);
    if (text)
        cli_say("lnkit batch: use --V %d (or larger) with this batch\n", nv);
    free(vp);
    cli_say("lnkit batch: B = %d%s -> %s\n", b.B, b.tgt ? " (tgt rows)" : " (src rows)",
            out);
    lnk_batch_free(&b);
    return 0;
}
