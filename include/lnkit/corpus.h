/* lnkit: parallel corpora for the seq2seq task (MODEL.md §4): two whitespace-
 * tokenised text files, vocabularies, id rows, and batches by token count.
 *
 * Files.  Line i of the source file translates line i of the target file.
 * Each file is read by lnk_text_read (text.h), which rejects invalid UTF-8,
 * NUL bytes (not a text file) and empty lines with file, line and byte
 * offset; lnk_corpus_read adds the check that both files have the same
 * number of lines (the message names both files and both counts).
 *
 * Rows (the reading of MODEL.md §4).  The decoder reads <bos> y_1 .. y_n and
 * predicts y_1 .. y_n <eos>, so the stored tgt row is
 *     tgt = <bos> ids(target line) <eos>          (n + 2 ids).
 * MODEL.md §4 says only "the encoder reads the source": the src row is the source
 * tokens themselves,
 *     src = ids(source line)                      (m ids; no <bos>, no <eos>),
 * which is also what lnk_batch_synthetic makes for seq2seq.  fairseq appends
 * <eos> to the source; opts.src_eos = 1 does the same (off by default).
 * A literal "<pad>" token in the text is an error (id 0 is padding); the other
 * specials written literally ("<unk>", ...) map to their own ids.
 *
 * Length limit.  max_len (0 = none) counts sentence tokens, without <bos> and
 * <eos>.  A pair with a side longer than max_len is dropped (default) or, with
 * truncate = 1, that side keeps its first max_len tokens (tgt then still ends
 * with <eos>).  n_dropped / n_truncated say how many.
 *
 * Padded size and batches by token count.  A batch of B pairs padded to src
 * rows of S ids and tgt rows of T ids costs B * max(S, T) "padded tokens"
 * (fairseq's max_tokens convention).  lnk_pairs_batches sorts the pairs by
 * length (key: max(S, T), then T, then S, then line number: a total order, so
 * the result is deterministic) and cuts the sorted list greedily into
 * consecutive batches whose padded size stays <= max_tokens.  Each batch is
 * padded with <pad> to its own longest rows: together they are the chunks of
 * a data set (hessian.h), whose token-weighted mean loss equals the loss of
 * all pairs in one batch.
 *
 * The data-set file (lnk_pairs_save, what lnkit batch --src --tgt writes):
 * safetensors with src [B, S] and tgt [B, T] (int64) and the string metadata
 * task=seq2seq, src_file, tgt_file, pairs, dropped, truncated, n_scored,
 * V_src, V_tgt, vocab_src, vocab_tgt (the vocabulary files, "" if none),
 * joint_vocab and src_eos (true/false), order (file or length), and
 * chunk_rows when a --max-tokens chunk size was found.
 */
#ifndef LNKIT_CORPUS_H
#define LNKIT_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/model.h"
#include "lnkit/text.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    lnk_text src, tgt;   /* the same n_lines */
} lnk_corpus;

int lnk_corpus_read(const char *src_path, const char *tgt_path, lnk_corpus *out);
void lnk_corpus_free(lnk_corpus *c);

/* Vocabularies by frequency (text.h rules: min_count, max_size 0 = no limit).
 * joint = 0: the source vocabulary from the source text, the target one from
 * the target text.  joint = 1: one vocabulary from both texts (source first,
 * for first-appearance ties), returned as two equal, separately owned objects
 * (free each with lnk_vocab_free). */
int lnk_corpus_vocabs(const lnk_corpus *c, int joint, int min_count, int max_size,
                      lnk_vocab **vsrc, lnk_vocab **vtgt);

typedef struct {
    int max_len;     /* sentence tokens per side, 0 = no limit     default 0 */
    int truncate;    /* 0: drop longer pairs; 1: truncate them      default 0 */
    int src_eos;     /* 1: append <eos> to the src row              default 0 */
} lnk_pairs_opts;
void lnk_pairs_opts_default(lnk_pairs_opts *o);

/* The kept pairs as id rows (no padding), in file order. */
typedef struct {
    int n;                 /* pairs kept */
    int n_lines;           /* pairs in the corpus */
    int n_dropped;         /* dropped by max_len */
    int n_truncated;       /* kept but truncated (either side) */
    int *line;             /* [n] 0-based line number of pair i in the files */
    int *src_len;          /* [n] src row length (tokens, + 1 with src_eos) */
    int *tgt_len;          /* [n] tgt row length (tokens + 2) */
    int64_t **src, **tgt;  /* [n] rows, pointing into pool */
    int64_t *pool;
    size_t src_tokens, tgt_tokens;   /* sentence tokens kept (no specials added) */
    size_t src_unk, tgt_unk;         /* of which mapped to <unk> */
    size_t n_scored;       /* predicted positions: sum of (tgt_len - 1) */
} lnk_pairs;

int lnk_pairs_make(const lnk_corpus *c, const lnk_vocab *vsrc, const lnk_vocab *vtgt,
                   const lnk_pairs_opts *o, lnk_pairs *out);
void lnk_pairs_free(lnk_pairs *p);

/* order[0..p->n) = the pair indices in the length order described above. */
int lnk_pairs_order(const lnk_pairs *p, int *order);

/* Pairs idx[0..n) (idx NULL: pairs 0..n-1) as one batch (src [n, S], tgt
 * [n, T]) padded with <pad> to the longest rows.  The batch owns its arrays. */
int lnk_pairs_batch(const lnk_pairs *p, const int *idx, int n, lnk_batch *out);

/* B * max(S, T) of a batch (its padded size in the sense above). */
size_t lnk_pairs_padded(const lnk_batch *b);

/* Batches by token count: every pair exactly once, sorted, each batch's
 * padded size <= max_tokens.  A pair that alone exceeds max_tokens is an
 * error naming its line.  *chunks (malloc'd, *n_chunks entries) is freed with
 * lnk_batches_free. */
int lnk_pairs_batches(const lnk_pairs *p, size_t max_tokens, lnk_batch **chunks, int *n_chunks);
void lnk_batches_free(lnk_batch *chunks, int n_chunks);

/* For a file holding the pairs in the order order[0..n) (NULL: file order):
 * the largest R such that cutting it into consecutive chunks of R rows (what
 * the CLI's --chunk R does, each chunk trimmed of all-<pad> columns) keeps
 * every chunk's padded size <= max_tokens; 0 if some pair alone exceeds it. */
int lnk_pairs_chunk_rows(const lnk_pairs *p, const int *order, size_t max_tokens);

/* How a data-set file of pairs was made, recorded in its metadata. */
typedef struct {
    const char *src_file, *tgt_file;   /* the corpus */
    const char *vocab_src, *vocab_tgt; /* the vocabulary files; NULL: none */
    int V_src, V_tgt;                  /* the vocabularies' sizes */
    int joint_vocab, src_eos;          /* the options that made the rows */
    int file_order;                    /* 1: rows in file order, 0: by length */
    int chunk_rows;                    /* > 0: the chunk size found for a token limit */
    const char *const *metadata;       /* NULL, or further keys: key, value, ..., NULL (a
                                        * program's record: docs/MODEL.md §9) */
} lnk_pairs_file;
/* b (made of p by lnk_pairs_batch) to path as the data-set file above. */
int lnk_pairs_save(const char *path, const lnk_pairs *p, const lnk_batch *b,
                   const lnk_pairs_file *how);

#ifdef __cplusplus
}
#endif
#endif
