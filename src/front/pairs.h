/* The seq2seq data set of a parallel corpus (lnkit batch --src, the
 * studies): its options, each declared once here, and the one function that
 * loads it (include/lnkit/corpus.h: corpus -> vocabularies -> pairs ->
 * batches).
 *
 * A program places the options it takes (CLI_OPT_SRC ... CLI_OPT_MAX_TOKENS)
 * on a cli_pairs_opts of its argument struct, in the order its help shows
 * them; name, value, range and (but for --max-line-len and --max-tokens, whose
 * help says what the program does with them) help come from here, so the
 * same name means the same thing in every program. */
#ifndef LNK_FRONT_PAIRS_H
#define LNK_FRONT_PAIRS_H

#include "front/front.h"
#include "front/opt.h"
#include "lnkit/corpus.h"

typedef struct {
    const char *src, *tgt;             /* the texts: line i of tgt translates line i of src */
    const char *vocab_src, *vocab_tgt; /* given vocabularies, or NULL: built from the pairs */
    int joint, min_count, max_vocab;   /* how the vocabularies are built */
    int max_len, truncate, src_eos;    /* lnk_pairs_opts */
    int keep_order;                    /* rows in file order instead of by length */
    long max_tokens;                   /* padded tokens a chunk at most (0: none) */
} cli_pairs_opts;

/* min count 1, no size limit, separate vocabularies, lnk_pairs_opts_default,
 * rows by length, no --max-tokens. */
void cli_pairs_opts_default(cli_pairs_opts *o);

#define CLI_OPT_SRC(T, f, fl, ex)                                                                 \
    {.type = CLI_STR, .name = "src", .arg = "FILE", CLI_AT(T, f.src), .excl = ex,                \
     .flags = CLI_READS | CLI_ID_FILE | (fl),                                                     \
     .help = "the source text of a parallel corpus (task seq2seq)"}
#define CLI_OPT_TGT(T, f)                                                                         \
    {.type = CLI_STR, .name = "tgt", .arg = "FILE", CLI_AT(T, f.tgt),                            \
     .flags = CLI_READS | CLI_ID_FILE,                                                            \
     .help = "its target text: line i translates line i of --src"}
#define CLI_OPT_VOCAB_SRC(T, f)                                                                   \
    {.type = CLI_STR, .name = "vocab-src", .arg = "FILE", CLI_AT(T, f.vocab_src),                \
     .flags = CLI_READS | CLI_ID_FILE,                                                            \
     .help = "corpus: use this source vocabulary (DATA.src.vocab is then not written)"}
#define CLI_OPT_VOCAB_TGT(T, f)                                                                   \
    {.type = CLI_STR, .name = "vocab-tgt", .arg = "FILE", CLI_AT(T, f.vocab_tgt),                \
     .flags = CLI_READS | CLI_ID_FILE,                                                            \
     .help = "corpus: use this target vocabulary (DATA.tgt.vocab is then not written)"}
/* CLI_ID_SET: the record of an output (front/record.h) names those not at their default */
#define CLI_OPT_JOINT_VOCAB(T, f)                                                                 \
    {.type = CLI_FLAG, .name = "joint-vocab", CLI_AT(T, f.joint), .flags = CLI_ID | CLI_ID_SET,   \
     .help = "corpus: one vocabulary from both texts, for both sides"}
#define CLI_OPT_MIN_COUNT(T, f)                                                                   \
    {.type = CLI_INT, .name = "min-count", .arg = "N", CLI_AT(T, f.min_count), .min = 1,         \
     .max = 1 << 30, .flags = CLI_ID | CLI_ID_SET,                                                \
     .help = "minimum token count to enter a vocabulary"}
#define CLI_OPT_MAX_VOCAB(T, f)                                                                   \
    {.type = CLI_INT, .name = "max-vocab", .arg = "N", CLI_AT(T, f.max_vocab), .min = 0,         \
     .max = 1 << 30, .flags = CLI_ID | CLI_ID_SET, .help = "vocabulary size limit, 0: none"}
#define CLI_OPT_MAX_LINE_LEN(T, f, h)                                                             \
    {.type = CLI_INT, .name = "max-line-len", .arg = "N", CLI_AT(T, f.max_len), .min = 0,        \
     .max = 1 << 24, .flags = CLI_ID | CLI_ID_SET, .help = h}
#define CLI_OPT_TRUNCATE(T, f)                                                                    \
    {.type = CLI_FLAG, .name = "truncate", CLI_AT(T, f.truncate), .flags = CLI_ID | CLI_ID_SET,   \
     .help = "corpus: truncate longer pairs to --max-line-len (default: drop them)"}
#define CLI_OPT_SRC_EOS(T, f)                                                                     \
    {.type = CLI_FLAG, .name = "src-eos", CLI_AT(T, f.src_eos), .flags = CLI_ID | CLI_ID_SET,     \
     .help = "corpus: append <eos> to the source rows (fairseq; MODEL.md section 4 has the "     \
             "source tokens alone)"}
#define CLI_OPT_KEEP_ORDER(T, f)                                                                  \
    {.type = CLI_FLAG, .name = "keep-order", CLI_AT(T, f.keep_order),                            \
     .flags = CLI_ID | CLI_ID_SET, .help = "corpus: rows in file order instead of by length"}
/* def: the default as help shows it (NULL: the value's own) */
#define CLI_OPT_MAX_TOKENS(T, f, h, dflt)                                                         \
    {.type = CLI_LONG, .name = "max-tokens", .arg = "N", CLI_AT(T, f.max_tokens), .min = 1,      \
     .max = 1L << 40, .flags = CLI_ID | CLI_ID_SET, .help = h, .def = dflt}

/* The data set. */
typedef struct {
    lnk_corpus c;
    lnk_vocab *vs, *vt; /* the vocabularies, loaded or built */
    lnk_pairs p;        /* the pairs kept, in file order */
    int *order;         /* CLI_PAIRS_ORDER: [p.n] the rows' pairs, by length or file order
                           with keep_order; else NULL */
    lnk_batch *chunks;  /* CLI_PAIRS_CHUNKS: the pairs by length in chunks of at most
                           max_tokens padded tokens (lnk_pairs_batches, which sorts them
                           itself), else NULL */
    int n_chunks;
    size_t padded, max_chunk; /* the chunks' padded tokens, in all and of the largest */
} cli_pairs;

enum { CLI_PAIRS_CHUNKS = 1, CLI_PAIRS_ORDER = 2 };

/* The option combinations refused (one line, exit 2): --tgt missing,
 * --joint-vocab with a given vocabulary, --truncate without --max-line-len. */
void cli_pairs_check(const cli_pairs_opts *o);
/* Read the corpus once (both texts' digests recorded for the sidecars:
 * cli_prov), cut to its first `rows` pairs (rows <= 0 or more than the files
 * have: all; the vocabularies are those of the rows kept), the vocabularies
 * loaded where given and built otherwise, the pairs and, as flags ask, their
 * order (CLI_PAIRS_ORDER) and the chunks of o->max_tokens (CLI_PAIRS_CHUNKS).  Dies on a failure
 * (no pair kept: naming --max-line-len). */
void cli_pairs_load(const cli_pairs_opts *o, int rows, int flags, cli_pairs *D);
void cli_pairs_free(cli_pairs *D);

#endif
