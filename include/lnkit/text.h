/* lnkit: whitespace-tokenised text, vocabularies and batches made from text.
 *
 * Text files: UTF-8, one sequence a line, tokens separated by spaces or tabs
 * ('\n' or "\r\n" line ends).  Rejected with a message naming file, line and
 * byte offset: invalid UTF-8, a NUL byte (a file that is not text), an empty
 * line (after trimming), and for parallel files mismatched line counts.
 *
 * Vocabulary: ids 0..3 are <pad> <unk> <bos> <eos>; then every token with count
 * >= min_count, by decreasing count, ties by first appearance in the text;
 * at most max_size entries in all (0 = no limit).  Tokens not in it map to <unk>.
 * Vocabulary file: one token a line, id = line number (0-based), the four
 * specials first; reloading gives the same ids.
 */
#ifndef LNKIT_TEXT_H
#define LNKIT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/model.h"
#include "lnkit/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tokenised text file: n_lines lines, line i has len[i] tokens tok[i][0..len[i]);
 * digest: the size and SHA-256 of the bytes read (provenance.h). */
typedef struct {
    int n_lines;
    int *len;
    char ***tok;
    char *path;
    lnk_digest digest;
} lnk_text;

int lnk_text_read(const char *path, lnk_text *out);
void lnk_text_free(lnk_text *t);

typedef struct lnk_vocab lnk_vocab;

/* Build from one or more texts. */
int lnk_vocab_build(const lnk_text *const *texts, int n_texts, int min_count, int max_size,
                    lnk_vocab **out);
int lnk_vocab_load(const char *path, lnk_vocab **out);
/* The size and SHA-256 of the bytes a loaded vocabulary was read from (for a
 * program's provenance record, lnk_prov_input_digest), NULL for a built one. */
const lnk_digest *lnk_vocab_digest(const lnk_vocab *v);
int lnk_vocab_save(const lnk_vocab *v, const char *path);   /* atomic */
void lnk_vocab_free(lnk_vocab *v);
int lnk_vocab_size(const lnk_vocab *v);
/* Id of a token (LNK_UNK if absent) and token of an id (NULL if out of range). */
int64_t lnk_vocab_id(const lnk_vocab *v, const char *token);
const char *lnk_vocab_token(const lnk_vocab *v, int64_t id);

/* lm batch from text: row i = <bos> ids(line i) <eos>, padded with <pad> to the
 * longest row; lines longer than max_len tokens (0 = no limit) are truncated to
 * max_len tokens before <eos> is appended.  Lines first..first+B-1 (B <= 0: all
 * from first).  The batch owns its arrays. */
int lnk_text_lm_batch(const lnk_text *t, const lnk_vocab *v, int first, int B, int max_len,
                      lnk_batch *out);

#ifdef __cplusplus
}
#endif
#endif
