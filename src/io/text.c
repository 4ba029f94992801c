/* Whitespace-tokenised text files, vocabularies, and lm batches made from text.
 * See include/lnkit/text.h.
 *
 * Tokens are separated by the ASCII blanks " \t\r\v\f" (so a "\r\n" line end
 * needs no special case); anything else, Unicode spaces included, belongs to a
 * token.  A leading UTF-8 byte order mark is skipped.  Strings are looked up
 * in a small open-addressing hash table (linear probing, FNV-1a), O(1) on
 * average. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnkit/error.h"
#include "lnkit/io.h"
#include "lnkit/model.h"
#include "lnkit/text.h"

static const char *const specials[4] = {"<pad>", "<unk>", "<bos>", "<eos>"};

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static int special_id(const char *s)
{
    if (s[0] != '<')
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(s, specials[i]) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------ hash table */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Slots hold indices into the caller's (str, hash) arrays; -1 = empty.
 * The table is kept at most half full. */
typedef struct {
    int *slot;
    size_t mask;
} htab;

static int ht_alloc(htab *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    t->slot = malloc(cap * sizeof *t->slot);
    if (!t->slot)
        return LNK_ENOMEM;
    memset(t->slot, 0xff, cap * sizeof *t->slot);
    t->mask = cap - 1;
    return LNK_OK;
}

/* Index of s, or -1 with *pos = the empty slot where it would go. */
static int ht_find(const htab *t, const char *const *str, const uint64_t *hash, const char *s,
                   uint64_t h, size_t *pos)
{
    size_t i = (size_t)h & t->mask;
    for (;;) {
        int k = t->slot[i];
        if (k < 0) {
            *pos = i;
            return -1;
        }
        if (hash[k] == h && strcmp(str[k], s) == 0)
            return k;
        i = (i + 1) & t->mask;
    }
}

/* Rebuild with room for n entries (indices 0..n_used-1 reinserted). */
static int ht_grow(htab *t, const uint64_t *hash, int n_used, size_t n)
{
    htab nt;
    if (ht_alloc(&nt, n) != LNK_OK)
        return LNK_ENOMEM;
    for (int k = 0; k < n_used; k++) {
        size_t i = (size_t)hash[k] & nt.mask;
        while (nt.slot[i] >= 0)
            i = (i + 1) & nt.mask;
        nt.slot[i] = k;
    }
    free(t->slot);
    *t = nt;
    return LNK_OK;
}

/* ------------------------------------------------------------ file reading */


static int line_of(const char *buf, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += buf[i] == '\n';
    return line;
}

/* Offset of the first byte that does not start a well-formed UTF-8 character
 * (overlong forms, surrogates and code points above U+10FFFF are ill-formed,
 * as in Unicode table 3-7), or n if the whole buffer is valid. */
static size_t utf8_invalid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        unsigned lo = 0x80, hi = 0xBF;
        int more;
        if (c >= 0xC2 && c <= 0xDF)
            more = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else
            return i;
        if ((size_t)more >= n - i)  /* truncated at the end */
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (int j = 2; j <= more; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return i;
        i += (size_t)more + 1;
    }
    return n;
}

/* A text file must be UTF-8 without NUL bytes. */
static int check_text(const char *path, const char *buf, size_t len)
{
    const char *z = memchr(buf, '\0', len);
    if (z) {
        size_t off = (size_t)(z - buf);
        return lnk_error(LNK_EFORMAT, "%s: not a text file: NUL byte at byte offset %zu (line %d)",
                         path, off, line_of(buf, off));
    }
    size_t bad = utf8_invalid((const unsigned char *)buf, len);
    if (bad < len)
        return lnk_error(LNK_EFORMAT, "%s: invalid UTF-8 at byte offset %zu (line %d): byte 0x%02X",
                         path, bad, line_of(buf, bad), (unsigned char)buf[bad]);
    return LNK_OK;
}

/* A UTF-8 byte order mark (some editors write one) is skipped rather than
 * glued to the first token; offsets in messages stay file offsets. */
static size_t bom_len(const char *buf, size_t len)
{
    return (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
}

/* ------------------------------------------------------------------ text */

void lnk_text_free(lnk_text *t)
{
    if (!t)
        return;
    if (t->tok && t->n_lines > 0 && t->tok[0]) {
        free(t->tok[0][0]);  /* the token pool: the first token starts it */
        free(t->tok[0]);     /* all token pointers, one array */
    }
    free(t->tok);
    free(t->len);
    free(t->path);
    memset(t, 0, sizeof *t);
}

/* A whole file that must be text (check_text): NUL-terminated, caller frees;
 * d (may be NULL): its digest. */
static int read_text(const char *path, char **buf, size_t *len, lnk_digest *d)
{
    int st = lnk_read_input(path, lnk_input_limit(), "text input", buf, len, d);
    if (st == LNK_OK && (st = check_text(path, *buf, *len)) != LNK_OK)
        free(*buf);
    return st;
}

int lnk_text_read(const char *path, lnk_text *out)
{
    memset(out, 0, sizeof *out);
    if (!path)
        return lnk_error(LNK_EINVAL, "text: no file name");
    char *buf;
    size_t len;
    lnk_digest dg;
    int st = read_text(path, &buf, &len, &dg);
    if (st != LNK_OK)
        return st;
    size_t start = bom_len(buf, len);
    if (len == start) {
        free(buf);
        return lnk_error(LNK_EFORMAT, "%s: empty file (expected one sequence a line)", path);
    }

    /* Pass 1: count lines and tokens, reject empty lines. */
    size_t n_lines = 0, n_tok = 0;
    for (size_t a = start; a < len;) {
        const char *nl = memchr(buf + a, '\n', len - a);
        size_t b = nl ? (size_t)(nl - buf) : len;
        size_t nt = 0;
        for (size_t i = a; i < b;) {
            while (i < b && is_blank(buf[i]))
                i++;
            if (i == b)
                break;
            nt++;
            while (i < b && !is_blank(buf[i]))
                i++;
        }
        n_lines++;
        if (nt == 0) {
            free(buf);
            return lnk_error(LNK_EFORMAT, "%s:%zu: empty line (byte offset %zu); every line must "
                             "hold a sequence of at least one token", path, n_lines, a);
        }
        if (nt > INT_MAX || n_lines > INT_MAX) {
            free(buf);
            return lnk_error(LNK_EFORMAT, "%s:%zu: too many tokens or lines", path, n_lines);
        }
        n_tok += nt;
        a = b + 1;
    }

    /* Pass 2: copy the tokens, NUL-terminated, into one pool. */
    char *pool = malloc(len + 1);
    char **all = malloc(n_tok * sizeof *all);
    out->len = malloc(n_lines * sizeof *out->len);
    out->tok = malloc(n_lines * sizeof *out->tok);
    out->path = strdup(path);
    if (!pool || !all || !out->len || !out->tok || !out->path) {
        free(pool);
        free(all);
        free(out->len);
        free(out->tok);
        free(out->path);
        free(buf);
        memset(out, 0, sizeof *out);
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    }
    size_t w = 0, kt = 0;
    int line = 0;
    for (size_t a = start; a < len;) {
        const char *nl = memchr(buf + a, '\n', len - a);
        size_t b = nl ? (size_t)(nl - buf) : len;
        out->tok[line] = all + kt;
        out->len[line] = 0;
        for (size_t i = a; i < b;) {
            while (i < b && is_blank(buf[i]))
                i++;
            if (i == b)
                break;
            size_t s = i;
            while (i < b && !is_blank(buf[i]))
                i++;
            memcpy(pool + w, buf + s, i - s);
            pool[w + (i - s)] = '\0';
            all[kt++] = pool + w;
            w += i - s + 1;
            out->len[line]++;
        }
        line++;
        a = b + 1;
    }
    free(buf);
    out->n_lines = line;
    out->digest = dg;
    return LNK_OK;
}

/* ------------------------------------------------------------ vocabulary */

struct lnk_vocab {
    int n;
    char **tok;      /* tok[id], pointing into pool */
    char *pool;
    uint64_t *hash;  /* hash[id] */
    htab ht;
    int loaded;      /* read from a file (lnk_vocab_load), whose bytes digest holds */
    lnk_digest digest;
};

void lnk_vocab_free(lnk_vocab *v)
{
    if (!v)
        return;
    free(v->tok);
    free(v->pool);
    free(v->hash);
    free(v->ht.slot);
    free(v);
}

int lnk_vocab_size(const lnk_vocab *v) { return v ? v->n : 0; }

int64_t lnk_vocab_id(const lnk_vocab *v, const char *token)
{
    if (!v || !token)
        return LNK_UNK;
    size_t pos;
    int k = ht_find(&v->ht, (const char *const *)v->tok, v->hash, token, fnv1a(token), &pos);
    return k < 0 ? LNK_UNK : k;
}

const char *lnk_vocab_token(const lnk_vocab *v, int64_t id)
{
    return (v && id >= 0 && id < v->n) ? v->tok[id] : NULL;
}

/* A vocabulary holding copies of words[0..n) as ids 0..n-1 (caller has
 * checked that they are distinct). */
static int vocab_make(const char *const *words, int n, lnk_vocab **out)
{
    *out = NULL;
    lnk_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return lnk_error(LNK_ENOMEM, "vocabulary: out of memory");
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += strlen(words[i]) + 1;
    v->n = n;
    v->tok = malloc((size_t)n * sizeof *v->tok);
    v->hash = malloc((size_t)n * sizeof *v->hash);
    v->pool = malloc(total ? total : 1);
    if (!v->tok || !v->hash || !v->pool || ht_alloc(&v->ht, (size_t)n) != LNK_OK) {
        lnk_vocab_free(v);
        return lnk_error(LNK_ENOMEM, "vocabulary: out of memory");
    }
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(words[i]);
        memcpy(v->pool + w, words[i], l + 1);
        v->tok[i] = v->pool + w;
        w += l + 1;
        v->hash[i] = fnv1a(v->tok[i]);
        size_t pos;
        if (ht_find(&v->ht, (const char *const *)v->tok, v->hash, v->tok[i], v->hash[i], &pos) < 0)
            v->ht.slot[pos] = i;
    }
    *out = v;
    return LNK_OK;
}

/* Distinct tokens in order of first appearance with their counts. */
typedef struct {
    int n, cap;
    const char **str;
    uint64_t *hash;
    long long *count;
    htab ht;
} counter;

static void counter_free(counter *c)
{
    free(c->str);
    free(c->hash);
    free(c->count);
    free(c->ht.slot);
}

static int counter_add(counter *c, const char *s)
{
    uint64_t h = fnv1a(s);
    size_t pos;
    int k = ht_find(&c->ht, c->str, c->hash, s, h, &pos);
    if (k >= 0) {
        c->count[k]++;
        return LNK_OK;
    }
    if (c->n == c->cap) {
        if (c->cap > INT_MAX / 2)
            return LNK_ENOMEM;
        int nc = c->cap ? 2 * c->cap : 1024;
        const char **ns = realloc(c->str, (size_t)nc * sizeof *ns);
        if (ns)
            c->str = ns;
        uint64_t *nh = realloc(c->hash, (size_t)nc * sizeof *nh);
        if (nh)
            c->hash = nh;
        long long *nn = realloc(c->count, (size_t)nc * sizeof *nn);
        if (nn)
            c->count = nn;
        if (!ns || !nh || !nn)
            return LNK_ENOMEM;
        c->cap = nc;
    }
    if (2 * ((size_t)c->n + 1) + 2 > c->ht.mask + 1) {
        if (ht_grow(&c->ht, c->hash, c->n, 2 * ((size_t)c->n + 1)) != LNK_OK)
            return LNK_ENOMEM;
        ht_find(&c->ht, c->str, c->hash, s, h, &pos);
    }
    c->str[c->n] = s;
    c->hash[c->n] = h;
    c->count[c->n] = 1;
    c->ht.slot[pos] = c->n;
    c->n++;
    return LNK_OK;
}

/* Sort order: decreasing count, ties by first appearance (= counter index). */
typedef struct {
    long long count;
    int idx;
} ranked;
static int by_count(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

int lnk_vocab_build(const lnk_text *const *texts, int n_texts, int min_count, int max_size,
                    lnk_vocab **out)
{
    *out = NULL;
    if (min_count < 0)
        return lnk_error(LNK_EINVAL, "vocabulary: min_count must be >= 0, got %d", min_count);
    if (max_size < 0 || (max_size > 0 && max_size < 4))
        return lnk_error(LNK_EINVAL,
                         "vocabulary: max_size must be 0 (no limit) or >= 4 (the specials "
                         "<pad> <unk> <bos> <eos>), got %d", max_size);
    if (n_texts < 0 || (n_texts > 0 && !texts))
        return lnk_error(LNK_EINVAL, "vocabulary: no texts given");
    counter c = {0};
    if (ht_alloc(&c.ht, 1024) != LNK_OK)
        return lnk_error(LNK_ENOMEM, "vocabulary: out of memory");
    for (int t = 0; t < n_texts; t++) {
        const lnk_text *x = texts[t];
        if (!x) {
            counter_free(&c);
            return lnk_error(LNK_EINVAL, "vocabulary: text %d is NULL", t);
        }
        for (int i = 0; i < x->n_lines; i++)
            for (int j = 0; j < x->len[i]; j++) {
                /* a literal <unk> (as in PTB) etc. is the special itself */
                if (special_id(x->tok[i][j]) >= 0)
                    continue;
                if (counter_add(&c, x->tok[i][j]) != LNK_OK) {
                    counter_free(&c);
                    return lnk_error(LNK_ENOMEM, "vocabulary: out of memory");
                }
            }
    }
    ranked *order = malloc(((size_t)c.n + 1) * sizeof *order);
    const char **words = malloc(((size_t)c.n + 4) * sizeof *words);
    if (!order || !words) {
        free(order);
        free(words);
        counter_free(&c);
        return lnk_error(LNK_ENOMEM, "vocabulary: out of memory");
    }
    int m = 0;
    for (int k = 0; k < c.n; k++)
        if (c.count[k] >= min_count)
            order[m++] = (ranked){c.count[k], k};
    qsort(order, (size_t)m, sizeof *order, by_count);
    int n = 0;
    for (int i = 0; i < 4; i++)
        words[n++] = specials[i];
    for (int i = 0; i < m && (max_size == 0 || n < max_size); i++)
        words[n++] = c.str[order[i].idx];
    int st = vocab_make(words, n, out);
    free(order);
    free(words);
    counter_free(&c);
    return st;
}

int lnk_vocab_load(const char *path, lnk_vocab **out)
{
    *out = NULL;
    if (!path)
        return lnk_error(LNK_EINVAL, "vocabulary: no file name");
    char *buf;
    size_t len;
    lnk_digest d;
    int st = read_text(path, &buf, &len, &d);
    if (st != LNK_OK)
        return st;
    /* Split into lines in place; a "\r\n" end loses its '\r'. */
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++)
        n_lines += buf[i] == '\n';
    if (len > 0 && buf[len - 1] != '\n')
        n_lines++;
    const char **words = malloc((n_lines + 1) * sizeof *words);
    if (!words) {
        free(buf);
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    }
    int n = 0;
    for (size_t a = bom_len(buf, len); a < len;) {
        char *nl = memchr(buf + a, '\n', len - a);
        size_t b = nl ? (size_t)(nl - buf) : len;
        if (b > a && buf[b - 1] == '\r')
            buf[b - 1] = '\0';
        buf[b] = '\0';
        words[n++] = buf + a;
        a = b + 1;
    }
    st = LNK_OK;
    if (n > INT_MAX - 1)
        st = lnk_error(LNK_EFORMAT, "%s: too many lines", path);
    for (int i = 0; i < n && st == LNK_OK; i++) {
        const char *w = words[i];
        if (!w[0])
            st = lnk_error(LNK_EFORMAT, "%s:%d: empty line (expected one token a line)", path,
                           i + 1);
        else if (i < 4 && strcmp(w, specials[i]) != 0)
            st = lnk_error(LNK_EFORMAT,
                           "%s:%d: expected '%s' (the first four lines must be <pad> <unk> <bos> "
                           "<eos>), got '%s'", path, i + 1, specials[i], w);
        else
            for (const char *p = w; *p; p++)
                if (is_blank(*p)) {
                    st = lnk_error(LNK_EFORMAT,
                                   "%s:%d: token '%s' contains whitespace (byte %d of the line)",
                                   path, i + 1, w, (int)(p - w) + 1);
                    break;
                }
    }
    if (st == LNK_OK && n < 4)
        st = lnk_error(LNK_EFORMAT,
                       "%s: %d lines; a vocabulary starts with the 4 lines <pad> <unk> <bos> <eos>",
                       path, n);
    lnk_vocab *v = NULL;
    if (st == LNK_OK)
        st = vocab_make(words, n, &v);
    if (st == LNK_OK) {
        /* duplicates: a token whose id (first occurrence) is not its line */
        for (int i = 0; i < n; i++) {
            int64_t id = lnk_vocab_id(v, v->tok[i]);
            if (id != i) {
                st = lnk_error(LNK_EFORMAT, "%s:%d: duplicate token '%s' (first on line %lld)",
                               path, i + 1, v->tok[i], (long long)id + 1);
                lnk_vocab_free(v);
                v = NULL;
                break;
            }
        }
    }
    free(words);
    free(buf);
    if (v) {
        v->loaded = 1;
        v->digest = d;
    }
    *out = v;
    return st;
}

const lnk_digest *lnk_vocab_digest(const lnk_vocab *v)
{
    return v && v->loaded ? &v->digest : NULL;
}

int lnk_vocab_save(const lnk_vocab *v, const char *path)
{
    if (!v)
        return lnk_error(LNK_EINVAL, "%s: no vocabulary to save", path ? path : "vocabulary");
    lnk_afile a;
    int st = lnk_afile_open(&a, path);
    if (st != LNK_OK)
        return st;
    for (int i = 0; i < v->n; i++)
        if (fputs(v->tok[i], a.f) == EOF || fputc('\n', a.f) == EOF) {
            int e = errno;
            lnk_afile_abort(&a);
            return lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
        }
    return lnk_afile_commit(&a);
}

/* --------------------------------------------------------------- batches */

int lnk_text_lm_batch(const lnk_text *t, const lnk_vocab *v, int first, int B, int max_len,
                      lnk_batch *out)
{
    memset(out, 0, sizeof *out);
    if (!t || !v)
        return lnk_error(LNK_EINVAL, "lm batch: no text or no vocabulary");
    const char *path = t->path ? t->path : "text";
    if (first < 0 || first >= t->n_lines)
        return lnk_error(LNK_EINVAL, "%s: lm batch: first line %d out of range (the text has %d lines)",
                         path, first, t->n_lines);
    if (B <= 0)
        B = t->n_lines - first;
    if (B > t->n_lines - first)
        return lnk_error(LNK_EINVAL,
                         "%s: lm batch: lines %d..%d requested, the text has %d lines (B %d)",
                         path, first, first + B - 1, t->n_lines, B);
    if (max_len < 0)
        return lnk_error(LNK_EINVAL, "%s: lm batch: max_len must be >= 0 (0 = no limit), got %d",
                         path, max_len);
    int T = 0;
    for (int i = 0; i < B; i++) {
        int n = t->len[first + i];
        if (max_len > 0 && n > max_len)
            n = max_len;
        if (n > INT_MAX - 2)
            return lnk_error(LNK_EINVAL, "%s:%d: line too long", path, first + i + 1);
        if (n + 2 > T)
            T = n + 2;
    }
    if ((size_t)B > SIZE_MAX / sizeof(int64_t) / (size_t)T)
        return lnk_error(LNK_ENOMEM, "%s: lm batch of %d x %d ids: too large", path, B, T);
    int64_t *tgt = calloc((size_t)B * (size_t)T, sizeof *tgt);  /* zeros = <pad> */
    if (!tgt)
        return lnk_error(LNK_ENOMEM, "%s: lm batch of %d x %d ids: out of memory", path, B, T);
    for (int i = 0; i < B; i++) {
        int line = first + i, n = t->len[line];
        if (max_len > 0 && n > max_len)
            n = max_len;
        int64_t *row = tgt + (size_t)i * (size_t)T;
        row[0] = LNK_BOS;
        for (int j = 0; j < n; j++) {
            int64_t id = lnk_vocab_id(v, t->tok[line][j]);
            if (id == LNK_PAD) {
                free(tgt);
                return lnk_error(LNK_EFORMAT,
                                 "%s:%d: token %d is '<pad>', which is reserved for padding", path,
                                 line + 1, j + 1);
            }
            row[1 + j] = id;
        }
        row[1 + n] = LNK_EOS;
    }
    out->B = B;
    out->S = 0;
    out->T = T;
    out->src = NULL;
    out->tgt = tgt;
    out->labels = NULL;
    out->owns = 1;
    return LNK_OK;
}
