/* lnkit batch: write a batch file, from synthetic ids, from text, or from a
 * parallel corpus (cmd_batch_s2s.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/batch.h"
#include "front/record.h"
#include "lnkit/provenance.h"
#include "lnkit/text.h"

#define T batch_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, CLI_REQ, "batch (or data-set) file to write (safetensors)", NULL),
    {.type = CLI_FLAG, .name = "synthetic", CLI_AT(T, synthetic), .excl = 1,
     .flags = CLI_REQ | CLI_ID,
     .help = "synthetic ids, uniform in [4, V)"},
    {.type = CLI_STR, .name = "text", .arg = "FILE", CLI_AT(T, text), .excl = 1,
     .flags = CLI_REQ | CLI_READS | CLI_ID_FILE, .help = "a whitespace-tokenised text (task lm), a sequence a line"},
    CLI_OPT_SRC(T, pa, CLI_REQ, 1),
    CLI_OPT_TGT(T, pa),
    {.type = CLI_LONG, .name = "rows", .arg = "N", CLI_AT(T, rows), .min = 0, .max = 1 << 24,
     .flags = CLI_ID | CLI_ID_SET, .help = "rows; with --text 0 means all lines", .def = "synthetic 8, text 0"},
    {.type = CLI_INT, .name = "len", .arg = "T", CLI_AT(T, len), .min = 1, .max = 1 << 24,
     .flags = CLI_ID, .help = "synthetic: positions per row"},
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(T, rng_seed), .max = 0x7fffffff,
     .flags = CLI_ID, .help = "synthetic: seed of the ids"},
    {.type = CLI_STR, .name = "vocab-in", .arg = "FILE", CLI_AT(T, vocab_in),
     .flags = CLI_READS | CLI_ID_FILE,
     .help = "text: use this vocabulary instead of building one"},
    {.type = CLI_STR, .name = "vocab-out", .arg = "FILE", CLI_AT(T, vocab_out),
     .flags = CLI_WRITES | CLI_STDOUT,
     .help = "text: where the built vocabulary is written; -: standard output",
     .def = "BATCH.vocab; none beside standard output, a device or a FIFO"},
    CLI_OPT_VOCAB_SRC(T, pa),
    CLI_OPT_VOCAB_TGT(T, pa),
    CLI_OPT_JOINT_VOCAB(T, pa),
    CLI_OPT_MIN_COUNT(T, pa),
    CLI_OPT_MAX_VOCAB(T, pa),
    CLI_OPT_MAX_LINE_LEN(T, pa, "text: truncate lines to N tokens; corpus: sentence tokens per "
                                "side; 0: no limit"),
    {.type = CLI_INT, .name = "first", .arg = "N", CLI_AT(T, first), .min = 0, .max = 1 << 30,
     .flags = CLI_ID | CLI_ID_SET, .help = "text: the first line used, from 0"},
    CLI_OPT_TRUNCATE(T, pa),
    CLI_OPT_SRC_EOS(T, pa),
    CLI_OPT_KEEP_ORDER(T, pa),
    CLI_OPT_MAX_TOKENS(T, pa, "corpus: print (and record in the file's metadata) the largest "
                              "--chunk whose chunks all hold at most N padded tokens, B x max(S, "
                              "T)", "none"),
    {.type = CLI_CALL, .name = "max-input", .arg = "SIZE", CLI_AT(T, max_input),
     .ref = cli_size_arg, .def = "1G",
     .help = "size limit of each text and vocabulary file read: bytes, or with K, M, G",
     .doc = "A larger regular file is refused before it is read; a FIFO or device is read up to "
            "the limit. A NUL byte stops the read with its byte offset."},
    CLI_MODEL(T, mo),
    {0}};
#undef T

static void defaults(void *p)
{
    batch_args *a = p;
    cli_pairs_opts_default(&a->pa);
    a->rows = -1;
    a->len = 16;
}

const cli_cmd cmd_batch_decl = {
    .name = "lnkit batch",
    .summary = "make a batch file: synthetic ids, a text, or a parallel corpus",
    .usage = "--synthetic [--rows B] [--len T] [--rng-seed N] [config flags] -o BATCH.safetensors\n"
             "--text FILE [--vocab-in VOCAB] [--vocab-out VOCAB] [--rows B] ... -o BATCH.safetensors\n"
             "--src FILE --tgt FILE [--vocab-src F] [--vocab-tgt F | --joint-vocab] ...\n"
             "-o DATA.safetensors",
    .about = "Synthetic: ids uniform in [4, V) (lm: tgt rows <bos> + T ids; cls: src [B, T] and\n"
             "labels uniform in [0, n_classes); seq2seq: src [B, T] and tgt [B, T+1]).\n"
             "Text (task lm): one sequence a line, whitespace-tokenised; row = <bos> ids <eos>,\n"
             "padded with <pad>; vocabulary by frequency, <pad> <unk> <bos> <eos> first.\n"
             "Parallel corpus (task seq2seq): line i of --src translates line i of --tgt; ONE\n"
             "file with src [B, S] and tgt [B, T] (<bos> target ids <eos>) for all pairs, rows\n"
             "sorted by length (max(S, T), then T, S, line) so that chunks of consecutive rows\n"
             "(--chunk of the curvature commands) carry little padding; the vocabularies go\n"
             "beside it as DATA.src.vocab and DATA.tgt.vocab.",
    .opts = opts,
    .size = sizeof(batch_args),
    .defaults = defaults,
    .example = "--synthetic --V 12 --rows 2 --len 3 -o OUT",
};

/* Options of one mode only: refused with another (never ignored). */
enum { SYN = 1, TEXT = 2, S2S = 4 };
static void check_mode(const batch_args *a, int mode)
{
    static const struct {
        const char *name;
        int modes;
    } only[] = {{"len", SYN}, {"rng-seed", SYN}, {"rows", SYN | TEXT}, {"first", TEXT},
                {"vocab-in", TEXT}, {"vocab-out", TEXT}, {"tgt", S2S}, {"vocab-src", S2S},
                {"vocab-tgt", S2S}, {"joint-vocab", S2S}, {"truncate", S2S}, {"src-eos", S2S},
                {"keep-order", S2S}, {"max-tokens", S2S}, {"min-count", TEXT | S2S},
                {"max-vocab", TEXT | S2S}, {"max-line-len", TEXT | S2S}, {"max-input", TEXT | S2S},
                {"config", SYN}, {"threads", SYN}};
    static const char *const mname[] = {"", "--synthetic", "--text", "", "--src"};
    for (size_t i = 0; i < sizeof only / sizeof only[0]; i++)
        if (cli_given(only[i].name) && !(only[i].modes & mode))
            cli_die("--%s does not go with %s", only[i].name, mname[mode]);
    for (int i = 0; i < a->mo.keys.n; i++)
        if (!strcmp(a->mo.keys.key[i], "seed"))
            cli_die("--seed is the model's initialisation seed; the seed of synthetic ids is "
                    "--rng-seed");
    if (mode != SYN && a->mo.keys.n)
        cli_die("--%s: configuration keys go with --synthetic (a text makes an lm batch, a "
                "corpus a seq2seq one)", a->mo.keys.key[0]);
}

int cmd_batch(int argc, char **argv)
{
    batch_args a;
    cli_parse(&cmd_batch_decl, &a, argc, argv);
    int mode = a.synthetic ? SYN : a.text ? TEXT : S2S;
    check_mode(&a, mode);
    if (a.max_input)
        lnk_set_input_limit(a.max_input);
    if (mode == S2S)
        return cli_batch_s2s(&a, opts);
    /* a built vocabulary goes beside -o (none beside standard output, a device or a FIFO) */
    char *vp = a.text && !a.vocab_in ? cli_sidecar_path(a.out, a.vocab_out, ".vocab") : NULL;
    const char *out = cli_out(a.out, 1);
    cli_file outs[2] = {{out, "-o"}, {vp, a.vocab_out ? "--vocab-out" : "the vocabulary beside -o"}},
             ins[3] = {{a.mo.config_path, "--config"}, {a.text, "--text"}, {a.vocab_in, "--vocab-in"}};
    cli_check_outputs(NULL, outs, 2, ins, 3);
    cli_outputs_begin(); /* the batch and its vocabulary: both or neither */
    lnk_batch b;
    int nv = 0;
    cli_record_md rec;
    const char *const *md;
    if (a.synthetic) {
        if (a.rows == 0)
            cli_die("--rows must be >= 1 for synthetic batches");
        lnk_config c;
        cli_make_config(&a.mo, &c);
        if ((c.task != LNK_TASK_LM && c.V_src < 5) || (c.task != LNK_TASK_CLS && c.V_tgt < 5))
            cli_die("synthetic ids are drawn from [4, V): --V must be at least 5");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        CLI_CK(lnk_batch_synthetic(m, a.rows < 0 ? 8 : (int)a.rows, a.len, a.rng_seed,
                                   &b));
        lnk_model_free(m);
        CLI_CK(lnk_prov_seed(cli_prov(), "rng", a.rng_seed)); /* for the record */
        md = cli_record_table(&rec, "lnkit batch", "synthetic ids", &c, opts, &a);
        lnk_config_clear(&c);
    } else {
        lnk_text t;
        CLI_CK(lnk_text_read(a.text, &t));
        CLI_CK(lnk_prov_input_digest(cli_prov(), a.text, &t.digest));
        lnk_vocab *v = NULL;
        const lnk_text *tx[1] = {&t};
        CLI_CK(a.vocab_in ? lnk_vocab_load(a.vocab_in, &v)
                          : lnk_vocab_build(tx, 1, a.pa.min_count, a.pa.max_vocab, &v));
        if (a.vocab_in)
            CLI_CK(lnk_prov_input_digest(cli_prov(), a.vocab_in, lnk_vocab_digest(v)));
        md = cli_record_table(&rec, "lnkit batch", "the lines of --text as token ids", NULL, opts,
                              &a);
        if (a.first >= t.n_lines)
            cli_die("--first %d but %s has %d lines", a.first, a.text, t.n_lines);
        CLI_CK(lnk_text_lm_batch(&t, v, a.first, a.rows < 0 ? 0 : (int)a.rows, a.pa.max_len,
                                   &b));
        if (vp)
            CLI_CK(lnk_vocab_save(v, cli_out(vp, 0)));
        nv = lnk_vocab_size(v);
        lnk_vocab_free(v);
        lnk_text_free(&t);
    }
    CLI_CK(lnk_batch_save_meta(out, &b, md));
    cli_outputs_commit();
    cli_record_free(&rec);
    /* what was written, once it is */
    if (a.text && !a.vocab_in)
        cli_say("vocabulary of %d tokens -> %s\n", nv, cli_dest(vp));
    if (a.text)
        cli_say("use --V %d (or larger) with this batch\n", nv);
    free(vp);
    /* the arrays written, by the names the file gives them (lm: tgt alone) */
    if (b.src)
        cli_say("src%s [%d, %d]%s", b.labels ? " and labels" : "", b.B, b.S, b.tgt ? ", " : "");
    if (b.tgt)
        cli_say("tgt [%d, %d]", b.B, b.T);
    cli_say(" -> %s\n", cli_dest(a.out));
    lnk_batch_free(&b);
    return 0;
}
