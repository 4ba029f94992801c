/* Parallel corpora for seq2seq: reading, vocabularies, id rows, batches by
 * token count.  See include/lnkit/corpus.h for the conventions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnkit/corpus.h"
#include "lnkit/error.h"
#include "lnkit/safetensors.h"

int lnk_corpus_read(const char *src_path, const char *tgt_path, lnk_corpus *out)
{
    memset(out, 0, sizeof *out);
    int st = lnk_text_read(src_path, &out->src);
    if (st != LNK_OK)
        return st;
    if ((st = lnk_text_read(tgt_path, &out->tgt)) != LNK_OK) {
        lnk_text_free(&out->src);
        return st;
    }
    if (out->src.n_lines != out->tgt.n_lines) {
        st = lnk_error(LNK_EFORMAT,
                       "parallel corpus: %s has %d lines but %s has %d lines (line i of the "
                       "source must translate line i of the target)",
                       src_path, out->src.n_lines, tgt_path, out->tgt.n_lines);
        lnk_corpus_free(out);
        return st;
    }
    return LNK_OK;
}

void lnk_corpus_free(lnk_corpus *c)
{
    if (!c)
        return;
    lnk_text_free(&c->src);
    lnk_text_free(&c->tgt);
}

int lnk_corpus_vocabs(const lnk_corpus *c, int joint, int min_count, int max_size,
                      lnk_vocab **vsrc, lnk_vocab **vtgt)
{
    *vsrc = *vtgt = NULL;
    if (!c)
        return lnk_error(LNK_EINVAL, "corpus vocabularies: no corpus");
    const lnk_text *both[2] = {&c->src, &c->tgt};
    int n = joint ? 2 : 1;  /* joint: both texts for each; else source / target alone */
    int st = lnk_vocab_build(both, n, min_count, max_size, vsrc);
    if (st != LNK_OK)
        return st;
    st = lnk_vocab_build(joint ? both : both + 1, n, min_count, max_size, vtgt);
    if (st != LNK_OK) {
        lnk_vocab_free(*vsrc);
        *vsrc = NULL;
    }
    return st;
}

void lnk_pairs_opts_default(lnk_pairs_opts *o)
{
    o->max_len = 0;
    o->truncate = 0;
    o->src_eos = 0;
}

void lnk_pairs_free(lnk_pairs *p)
{
    if (!p)
        return;
    free(p->line);
    free(p->src_len);
    free(p->tgt_len);
    free(p->src);
    free(p->tgt);
    free(p->pool);
    memset(p, 0, sizeof *p);
}

/* ids of line i of t (n tokens) into row; counts <unk>s.  A literal <pad>
 * would turn into padding: refused. */
static int map_line(const lnk_text *t, const lnk_vocab *v, int i, int n, int64_t *row,
                    size_t *unk)
{
    for (int j = 0; j < n; j++) {
        int64_t id = lnk_vocab_id(v, t->tok[i][j]);
        if (id == LNK_PAD)
            return lnk_error(LNK_EFORMAT,
                             "%s:%d: token %d is '<pad>', which is reserved for padding",
                             t->path ? t->path : "text", i + 1, j + 1);
        *unk += id == LNK_UNK;
        row[j] = id;
    }
    return LNK_OK;
}

int lnk_pairs_make(const lnk_corpus *c, const lnk_vocab *vsrc, const lnk_vocab *vtgt,
                   const lnk_pairs_opts *o, lnk_pairs *out)
{
    memset(out, 0, sizeof *out);
    lnk_pairs_opts def;
    if (!o) {
        lnk_pairs_opts_default(&def);
        o = &def;
    }
    if (!c || !vsrc || !vtgt)
        return lnk_error(LNK_EINVAL, "corpus pairs: no corpus or no vocabulary");
    if (o->max_len < 0)
        return lnk_error(LNK_EINVAL, "corpus pairs: max_len must be >= 0 (0 = no limit), got %d",
                         o->max_len);
    if (c->src.n_lines != c->tgt.n_lines)
        return lnk_error(LNK_EINVAL, "corpus pairs: %d source lines but %d target lines",
                         c->src.n_lines, c->tgt.n_lines);
    int N = c->src.n_lines, ml = o->max_len, se = o->src_eos ? 1 : 0;
    /* first pass: which pairs are kept and their lengths */
    out->n_lines = N;
    out->line = malloc(sizeof(int) * (N ? N : 1));
    out->src_len = malloc(sizeof(int) * (N ? N : 1));
    out->tgt_len = malloc(sizeof(int) * (N ? N : 1));
    out->src = malloc(sizeof(int64_t *) * (N ? N : 1));
    out->tgt = malloc(sizeof(int64_t *) * (N ? N : 1));
    if (!out->line || !out->src_len || !out->tgt_len || !out->src || !out->tgt) {
        lnk_pairs_free(out);
        return lnk_error(LNK_ENOMEM, "corpus pairs: out of memory");
    }
    size_t total = 0;
    int n = 0;
    for (int i = 0; i < N; i++) {
        int a = c->src.len[i], b = c->tgt.len[i];
        if (ml > 0 && (a > ml || b > ml)) {
            if (!o->truncate) {
                out->n_dropped++;
                continue;
            }
            out->n_truncated++;
            a = a > ml ? ml : a;
            b = b > ml ? ml : b;
        }
        if (a > INT_MAX - 2 || b > INT_MAX - 2) {
            lnk_pairs_free(out);
            return lnk_error(LNK_EINVAL, "%s:%d: line too long", c->src.path, i + 1);
        }
        out->line[n] = i;
        out->src_len[n] = a + se;
        out->tgt_len[n] = b + 2;
        total += (size_t)(a + se) + (size_t)(b + 2);
        n++;
    }
    out->n = n;
    out->pool = malloc(sizeof(int64_t) * (total ? total : 1));
    if (!out->pool) {
        lnk_pairs_free(out);
        return lnk_error(LNK_ENOMEM, "corpus pairs: out of memory (%zu ids)", total);
    }
    int64_t *w = out->pool;
    for (int k = 0; k < n; k++) {
        int i = out->line[k], a = out->src_len[k] - se, b = out->tgt_len[k] - 2;
        out->src[k] = w;
        int st = map_line(&c->src, vsrc, i, a, w, &out->src_unk);
        if (se)
            w[a] = LNK_EOS;
        w += out->src_len[k];
        out->tgt[k] = w;
        w[0] = LNK_BOS;
        if (st == LNK_OK)
            st = map_line(&c->tgt, vtgt, i, b, w + 1, &out->tgt_unk);
        if (st != LNK_OK) {
            lnk_pairs_free(out);
            return st;
        }
        w[b + 1] = LNK_EOS;
        w += out->tgt_len[k];
        out->src_tokens += (size_t)a;
        out->tgt_tokens += (size_t)b;
        out->n_scored += (size_t)(b + 1);
    }
    return LNK_OK;
}

/* ------------------------------------------------------------ ordering */

static int max2(int a, int b) { return a > b ? a : b; }

/* qsort_r (glibc): the pairs come as the context, so concurrent calls are safe. */
static int by_length(const void *pa, const void *pb, void *ctx)
{
    const lnk_pairs *p = ctx;
    int a = *(const int *)pa, b = *(const int *)pb;
    int ka = max2(p->src_len[a], p->tgt_len[a]), kb = max2(p->src_len[b], p->tgt_len[b]);
    if (ka != kb)
        return ka < kb ? -1 : 1;
    if (p->tgt_len[a] != p->tgt_len[b])
        return p->tgt_len[a] < p->tgt_len[b] ? -1 : 1;
    if (p->src_len[a] != p->src_len[b])
        return p->src_len[a] < p->src_len[b] ? -1 : 1;
    return (a > b) - (a < b);  /* pair index = file order: a total order */
}

int lnk_pairs_order(const lnk_pairs *p, int *order)
{
    if (!p || !order)
        return lnk_error(LNK_EINVAL, "pairs order: no pairs or no output");
    for (int i = 0; i < p->n; i++)
        order[i] = i;
    qsort_r(order, (size_t)p->n, sizeof *order, by_length, (void *)p);
    return LNK_OK;
}

/* ------------------------------------------------------------- batches */

int lnk_pairs_batch(const lnk_pairs *p, const int *idx, int n, lnk_batch *out)
{
    memset(out, 0, sizeof *out);
    if (!p || n < 1 || n > p->n)
        return lnk_error(LNK_EINVAL, "pairs batch: %d rows requested, %d pairs available", n,
                         p ? p->n : 0);
    int S = 1, T = 2;
    for (int r = 0; r < n; r++) {
        int k = idx ? idx[r] : r;
        if (k < 0 || k >= p->n)
            return lnk_error(LNK_EINVAL, "pairs batch: index %d at row %d out of range [0, %d)",
                             k, r, p->n);
        S = max2(S, p->src_len[k]);
        T = max2(T, p->tgt_len[k]);
    }
    int64_t *src = calloc((size_t)n * S, sizeof *src), *tgt = calloc((size_t)n * T, sizeof *tgt);
    if (!src || !tgt) {
        free(src);
        free(tgt);
        return lnk_error(LNK_ENOMEM, "pairs batch of %d rows (S %d, T %d): out of memory", n, S,
                         T);
    }
    for (int r = 0; r < n; r++) {
        int k = idx ? idx[r] : r;
        memcpy(src + (size_t)r * S, p->src[k], sizeof *src * p->src_len[k]);
        memcpy(tgt + (size_t)r * T, p->tgt[k], sizeof *tgt * p->tgt_len[k]);
    }
    *out = (lnk_batch){.B = n, .S = S, .T = T, .src = src, .tgt = tgt, .owns = 1};
    return LNK_OK;
}

size_t lnk_pairs_padded(const lnk_batch *b)
{
    return b ? (size_t)b->B * (size_t)max2(b->S, b->T) : 0;
}

void lnk_batches_free(lnk_batch *chunks, int n_chunks)
{
    if (!chunks)
        return;
    for (int i = 0; i < n_chunks; i++)
        lnk_batch_free(&chunks[i]);
    free(chunks);
}

static int too_long(const lnk_pairs *p, int k, size_t max_tokens)
{
    return lnk_error(LNK_EINVAL,
                     "batches by token count: the pair on line %d has padded size %d "
                     "(src %d, tgt %d ids), more than max_tokens %zu",
                     p->line[k] + 1, max2(p->src_len[k], p->tgt_len[k]), p->src_len[k],
                     p->tgt_len[k], max_tokens);
}

int lnk_pairs_batches(const lnk_pairs *p, size_t max_tokens, lnk_batch **chunks, int *n_chunks)
{
    *chunks = NULL;
    *n_chunks = 0;
    if (!p || p->n < 1)
        return lnk_error(LNK_EINVAL, "batches by token count: no pairs");
    if (max_tokens < 1)
        return lnk_error(LNK_EINVAL, "batches by token count: max_tokens must be >= 1");
    int *order = malloc(sizeof(int) * p->n);
    int *start = malloc(sizeof(int) * (p->n + 1));
    if (!order || !start) {
        free(order);
        free(start);
        return lnk_error(LNK_ENOMEM, "batches by token count: out of memory");
    }
    lnk_pairs_order(p, order);
    /* greedy cut: extend the batch while B * max(S, T) stays <= max_tokens */
    int nb = 0, B = 0, len = 0, st = LNK_OK;
    for (int r = 0; r < p->n && st == LNK_OK; r++) {
        int k = order[r], l = max2(p->src_len[k], p->tgt_len[k]);
        if ((size_t)l > max_tokens) {
            st = too_long(p, k, max_tokens);
            break;
        }
        int nl = max2(len, l);
        if (B > 0 && (size_t)(B + 1) * (size_t)nl > max_tokens) {
            B = 0;
            nl = l;
        }
        if (B == 0)
            start[nb++] = r;
        B++;
        len = nl;
    }
    start[nb] = p->n;
    lnk_batch *c = NULL;
    if (st == LNK_OK && !(c = calloc((size_t)nb, sizeof *c)))
        st = lnk_error(LNK_ENOMEM, "batches by token count: out of memory");
    for (int i = 0; st == LNK_OK && i < nb; i++)
        if ((st = lnk_pairs_batch(p, order + start[i], start[i + 1] - start[i], &c[i])) != LNK_OK) {
            lnk_batches_free(c, i);
            c = NULL;
        }
    free(order);
    free(start);
    if (st != LNK_OK)
        return st;
    *chunks = c;
    *n_chunks = nb;
    return LNK_OK;
}

int lnk_pairs_chunk_rows(const lnk_pairs *p, const int *order, size_t max_tokens)
{
    if (!p || p->n < 1)
        return 0;
    int best = 0;
    for (int R = 1; R <= p->n; R++) {
        int ok = 1;
        for (int r0 = 0; ok && r0 < p->n; r0 += R) {
            int r1 = r0 + R < p->n ? r0 + R : p->n, len = 0;
            for (int r = r0; r < r1; r++) {
                int k = order ? order[r] : r;
                len = max2(len, max2(p->src_len[k], p->tgt_len[k]));
            }
            ok = (size_t)(r1 - r0) * (size_t)len <= max_tokens;
        }
        if (ok)
            best = R;
        else if ((size_t)R > max_tokens)
            break;  /* R rows of at least one id each already exceed it */
    }
    return best;
}

int lnk_pairs_save(const char *path, const lnk_pairs *p, const lnk_batch *b,
                   const lnk_pairs_file *how)
{
    char num[7][24];
    snprintf(num[0], sizeof num[0], "%d", p->n);
    snprintf(num[1], sizeof num[1], "%d", p->n_dropped);
    snprintf(num[2], sizeof num[2], "%d", p->n_truncated);
    snprintf(num[3], sizeof num[3], "%zu", p->n_scored);
    snprintf(num[4], sizeof num[4], "%d", how->V_src);
    snprintf(num[5], sizeof num[5], "%d", how->V_tgt);
    snprintf(num[6], sizeof num[6], "%d", how->chunk_rows);
    const char *meta[] = {
        "task", "seq2seq", "src_file", how->src_file, "tgt_file", how->tgt_file,
        "pairs", num[0], "dropped", num[1], "truncated", num[2], "n_scored", num[3],
        "V_src", num[4], "V_tgt", num[5],
        "vocab_src", how->vocab_src ? how->vocab_src : "",
        "vocab_tgt", how->vocab_tgt ? how->vocab_tgt : "",
        "joint_vocab", how->joint_vocab ? "true" : "false",
        "src_eos", how->src_eos ? "true" : "false",
        "order", how->file_order ? "file" : "length",
        how->chunk_rows > 0 ? "chunk_rows" : NULL, num[6], NULL, NULL, NULL, NULL, NULL};
    /* the caller's keys after the data set's (at most two pairs: the room above) */
    size_t k = how->chunk_rows > 0 ? 30 : 28, i = 0;
    for (; how->metadata && how->metadata[i] && how->metadata[i + 1]; i += 2, k += 2) {
        if (k + 2 >= sizeof meta / sizeof meta[0])
            return lnk_error(LNK_EINVAL, "%s: more metadata than the data-set file holds", path);
        meta[k] = how->metadata[i];
        meta[k + 1] = how->metadata[i + 1];
    }
    meta[k] = NULL;
    lnk_st_tensor t[2] = {
        {.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b->B, b->S},
         .numel = (size_t)b->B * b->S, .data = b->src},
        {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {b->B, b->T},
         .numel = (size_t)b->B * b->T, .data = b->tgt}};
    return lnk_st_write(path, t, 2, meta);
}
