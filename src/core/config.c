/* Model configuration (docs/MODEL.md §8): defaults, JSON files, command-line
 * flags, derived keys, task-dependent keys, size limits and checks.  See
 * include/lnkit/config.h for the semantics.
 *
 * Every key goes through one table (keys[]) and one checker (value_ok), so
 * a JSON value, a flag and a field set by hand obey the same ranges and give
 * the same wording in messages. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lnkit/config.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

enum {
    K_TASK, K_NORM_POS, K_NORM, K_QK_NORM, K_D, K_H, K_D_FF, K_L, K_L_ENC, K_L_DEC,
    K_V, K_V_SRC, K_V_TGT, K_N_CLASSES, K_INIT, K_SEED, K_EPS, K_TIE, K_LS,
    K_N_PARAMS, K_PARAM_ORDER, K_COUNT
};

typedef enum { KIND_ENUM, KIND_INT, KIND_SEED, KIND_REAL, KIND_BOOL, KIND_NPARAMS, KIND_ORDER } kind_t;

static const char *const task_names[] = {"lm", "seq2seq", "cls", NULL};
static const char *const pos_names[] = {"post", "pre", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", "none", NULL};
static const char *const init_names[] = {"xavier", "xavier_normal", "theorem", NULL};

typedef struct {
    const char *name;
    kind_t kind;
    const char *const *names;  /* KIND_ENUM: value names, index = enum value */
    long long min;             /* KIND_INT: smallest allowed value */
    int derived;               /* -1 = unset until finalize (d_ff, L_enc, ...) */
    const char *arg, *help;    /* for the flags' help (lnk_config_describe) */
    const char *derive;        /* derived keys: their default, as MODEL.md §8 gives it */
} keydef;

static const keydef keys[K_COUNT] = {
    [K_TASK] = {"task", KIND_ENUM, task_names, 0, 0, NULL, "the task", NULL},
    [K_NORM_POS] = {"norm_pos", KIND_ENUM, pos_names, 0, 0, NULL, "Post-LN or Pre-LN blocks", NULL},
    [K_NORM] = {"norm", KIND_ENUM, norm_names, 0, 0, NULL, "the blocks' norms", NULL},
    [K_QK_NORM] = {"qk_norm", KIND_ENUM, norm_names, 0, 0, NULL, "per-head key/query norm", NULL},
    [K_D] = {"d", KIND_INT, NULL, 2, 0, "N", "width (even, a multiple of h)", NULL},
    [K_H] = {"h", KIND_INT, NULL, 1, 0, "N", "attention heads", NULL},
    [K_D_FF] = {"d_ff", KIND_INT, NULL, 1, 1, "N", "feed-forward width", "4 d"},
    [K_L] = {"L", KIND_INT, NULL, 1, 0, "N", "depth of every side", NULL},
    [K_L_ENC] = {"L_enc", KIND_INT, NULL, 1, 1, "N", "encoder depth (seq2seq, cls)", "L"},
    [K_L_DEC] = {"L_dec", KIND_INT, NULL, 1, 1, "N", "decoder depth (lm, seq2seq)", "L"},
    /* ids 0..3 are the specials <pad> <unk> <bos> <eos> */
    [K_V] = {"V", KIND_INT, NULL, 4, 0, "N", "vocabulary of every side (ids 0..3: the specials)",
             NULL},
    [K_V_SRC] = {"V_src", KIND_INT, NULL, 4, 1, "N", "source vocabulary (seq2seq, cls)", "V"},
    [K_V_TGT] = {"V_tgt", KIND_INT, NULL, 4, 1, "N", "target vocabulary (lm, seq2seq)", "V"},
    [K_N_CLASSES] = {"n_classes", KIND_INT, NULL, 1, 1, "N", "output classes (cls)", "V_src"},
    [K_INIT] = {"init", KIND_ENUM, init_names, 0, 0, NULL,
                "initialisation (docs/MODEL.md section 5)", NULL},
    [K_SEED] = {"seed", KIND_SEED, NULL, 0, 0, "N", "initialisation seed", NULL},
    [K_EPS] = {"eps", KIND_REAL, NULL, 0, 0, "X", "norm epsilon, >= 0", NULL},
    [K_TIE] = {"tie_output", KIND_BOOL, NULL, 0, 0, "true|false",
               "output layer tied to the target embedding", NULL},
    [K_LS] = {"label_smoothing", KIND_REAL, NULL, 0, 0, "A", "label smoothing, 0 <= A < 1", NULL},
    [K_N_PARAMS] = {"n_params", KIND_NPARAMS, NULL, 0, 0, NULL, NULL, NULL},
    [K_PARAM_ORDER] = {"param_order", KIND_ORDER, NULL, 0, 0, NULL, NULL, NULL},
};

const char *const lnk_config_keys[] = {
    "task", "norm_pos", "norm", "qk_norm", "d", "h", "d_ff", "L", "L_enc", "L_dec",
    "V", "V_src", "V_tgt", "n_classes", "init", "seed", "eps", "tie_output",
    "label_smoothing", NULL};

/* The task-dependent keys, in the order of lnk_config.side_err. */
static const int side_keys[5] = {K_L_ENC, K_L_DEC, K_V_SRC, K_V_TGT, K_N_CLASSES};

/* Index of k in side_keys, or -1. */
static int side_index(int k)
{
    for (int i = 0; i < 5; i++)
        if (side_keys[i] == k)
            return i;
    return -1;
}

/* Does key k apply to the task?  The encoder keys (L_enc, V_src) to seq2seq
 * and cls, the decoder keys (L_dec, V_tgt) to lm and seq2seq, n_classes to
 * cls; every other key to every task. */
static int applies(lnk_task task, int k)
{
    switch (k) {
    case K_L_ENC:
    case K_V_SRC: return task != LNK_TASK_LM;
    case K_L_DEC:
    case K_V_TGT: return task != LNK_TASK_CLS;
    case K_N_CLASSES: return task == LNK_TASK_CLS;
    default: return 1;
    }
}

/* An invalid value of a task-dependent key: keep the message (the last
 * recorded error) for finalize and leave the key unset. */
static void defer_side(lnk_config *c, int k)
{
    int i = side_index(k);
    if (i < 0)
        return;
    snprintf(c->side_err[i], sizeof c->side_err[0], "%s", lnk_errmsg());
    lnk_error_clear();
    switch (k) {
    case K_L_ENC: c->L_enc = -1; break;
    case K_L_DEC: c->L_dec = -1; break;
    case K_V_SRC: c->V_src = -1; break;
    case K_V_TGT: c->V_tgt = -1; break;
    default: c->n_classes = -1; break;
    }
}

/* ------------------------------------------------------------------ names */

static const char *enum_name(const char *const *names, int n, int v)
{
    return (v >= 0 && v < n) ? names[v] : "(invalid)";
}
const char *lnk_task_name(lnk_task t) { return enum_name(task_names, 3, (int)t); }
const char *lnk_norm_pos_name(lnk_norm_pos p) { return enum_name(pos_names, 2, (int)p); }
const char *lnk_norm_type_name(lnk_norm_type n) { return enum_name(norm_names, 3, (int)n); }
const char *lnk_init_name(lnk_init i) { return enum_name(init_names, 3, (int)i); }

static int n_names(const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    return n;
}

/* ------------------------------------------------------------ defaults */

void lnk_config_default(lnk_config *c)
{
    memset(c, 0, sizeof *c);
    c->task = LNK_TASK_LM;
    c->norm_pos = LNK_POS_POST;
    c->norm = LNK_NORM_LAYERNORM;
    c->qk_norm = LNK_NORM_NONE;
    c->d = 16;
    c->h = 2;
    c->d_ff = -1;
    c->L = 2;
    c->L_enc = c->L_dec = -1;
    c->V = 32;
    c->V_src = c->V_tgt = -1;
    c->n_classes = -1;
    c->init = LNK_INIT_XAVIER;
    c->seed = 0;
    c->eps = 1e-5;
    c->tie_output = 0;
    c->label_smoothing = 0;
    c->file_n_params = -1;
    c->file_param_order = NULL;
    c->file_n_param_order = 0;
}

static void free_order(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void lnk_config_clear(lnk_config *c)
{
    free_order(c->file_param_order, c->file_n_param_order);
    c->file_param_order = NULL;
    c->file_n_param_order = 0;
    c->file_n_params = -1;
}

/* --------------------------------------------------------- values, ranges */

/* A parsed value of one key: reset (null / "default"), an integer (enums,
 * ints, seed, bool, n_params) or a double. */
typedef struct {
    int reset;
    long long i;
    double r;
} value;

/* What a key accepts, for messages; flag = 1 for command-line wording. */
static const char *expected(int k, int flag, char *buf, size_t n)
{
    const keydef *kd = &keys[k];
    switch (kd->kind) {
    case KIND_ENUM: {
        size_t len = (size_t)snprintf(buf, n, "one of");
        for (int i = 0; kd->names[i] && len < n; i++)
            len += (size_t)snprintf(buf + len, n - len, "%s %s", i ? "," : "", kd->names[i]);
        return buf;
    }
    case KIND_INT:
        snprintf(buf, n, "an integer >= %lld", kd->min);
        return buf;
    case KIND_SEED:
    case KIND_NPARAMS:
        return "an integer >= 0";
    case KIND_REAL:
        return k == K_EPS ? "a finite number >= 0" : "a number >= 0 and < 1";
    case KIND_BOOL:
        return flag ? "true, false, 1 or 0" : "true or false";
    case KIND_ORDER:
        return "an array of strings";
    }
    return "?";
}

/* Is v an allowed value of key k?  *too_big is set for integers that do not
 * fit the field, so the message can give the upper bound. */
static int value_ok(int k, const value *v, int *too_big)
{
    const keydef *kd = &keys[k];
    *too_big = 0;
    switch (kd->kind) {
    case KIND_ENUM:
        return v->i >= 0 && v->i < n_names(kd->names);
    case KIND_INT:
        if (v->i > INT_MAX) {
            *too_big = 1;
            return 0;
        }
        return v->i >= kd->min;
    case KIND_SEED:
    case KIND_NPARAMS:
        return v->i >= 0;
    case KIND_REAL:
        if (!isfinite(v->r) || v->r < 0)
            return 0;
        return k == K_EPS || v->r < 1;
    case KIND_BOOL:
        return v->i == 0 || v->i == 1;
    case KIND_ORDER:
        return 1;
    }
    return 0;
}

static const char *expected_v(int k, int flag, int too_big, char *buf, size_t n)
{
    if (too_big) {
        snprintf(buf, n, "an integer from %lld to %d", keys[k].min, INT_MAX);
        return buf;
    }
    return expected(k, flag, buf, n);
}

/* Store a checked value (or the key's default) into c. */
static void store(lnk_config *c, int k, const value *v)
{
    int side = side_index(k);
    if (side >= 0)
        c->side_err[side][0] = '\0'; /* a new value replaces an invalid one */
    if (v->reset) {
        lnk_config def;
        lnk_config_default(&def);
        value dv = {0, 0, 0};
        switch (k) {
        case K_TASK: dv.i = def.task; break;
        case K_NORM_POS: dv.i = def.norm_pos; break;
        case K_NORM: dv.i = def.norm; break;
        case K_QK_NORM: dv.i = def.qk_norm; break;
        case K_D: dv.i = def.d; break;
        case K_H: dv.i = def.h; break;
        case K_D_FF: dv.i = def.d_ff; break;
        case K_L: dv.i = def.L; break;
        case K_L_ENC: dv.i = def.L_enc; break;
        case K_L_DEC: dv.i = def.L_dec; break;
        case K_V: dv.i = def.V; break;
        case K_V_SRC: dv.i = def.V_src; break;
        case K_V_TGT: dv.i = def.V_tgt; break;
        case K_N_CLASSES: dv.i = def.n_classes; break;
        case K_INIT: dv.i = def.init; break;
        case K_SEED: dv.i = (long long)def.seed; break;
        case K_EPS: dv.r = def.eps; break;
        case K_TIE: dv.i = def.tie_output; break;
        case K_LS: dv.r = def.label_smoothing; break;
        case K_N_PARAMS: dv.i = def.file_n_params; break;
        default: break;
        }
        v = &dv;
        store(c, k, v);
        return;
    }
    switch (k) {
    case K_TASK: c->task = (lnk_task)v->i; break;
    case K_NORM_POS: c->norm_pos = (lnk_norm_pos)v->i; break;
    case K_NORM: c->norm = (lnk_norm_type)v->i; break;
    case K_QK_NORM: c->qk_norm = (lnk_norm_type)v->i; break;
    case K_D: c->d = (int)v->i; break;
    case K_H: c->h = (int)v->i; break;
    case K_D_FF: c->d_ff = (int)v->i; break;
    case K_L: c->L = (int)v->i; break;
    case K_L_ENC: c->L_enc = (int)v->i; break;
    case K_L_DEC: c->L_dec = (int)v->i; break;
    case K_V: c->V = (int)v->i; break;
    case K_V_SRC: c->V_src = (int)v->i; break;
    case K_V_TGT: c->V_tgt = (int)v->i; break;
    case K_N_CLASSES: c->n_classes = (int)v->i; break;
    case K_INIT: c->init = (lnk_init)v->i; break;
    case K_SEED: c->seed = (uint64_t)v->i; break;
    case K_EPS: c->eps = v->r; break;
    case K_TIE: c->tie_output = (int)v->i; break;
    case K_LS: c->label_smoothing = v->r; break;
    case K_N_PARAMS: c->file_n_params = v->i; break;
    default: break;
    }
}

static int find_key(const char *name)
{
    for (int k = 0; k < K_COUNT; k++)
        if (strcmp(keys[k].name, name) == 0)
            return k;
    return -1;
}

/* "task, norm_pos, ..." for unknown-key messages. */
static const char *key_list(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; lnk_config_keys[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", lnk_config_keys[i]);
    return buf;
}

/* ------------------------------------------------------------------ JSON */

/* Marks a number too large for jansson, rewritten as a string (load_json). */
#define BIG_MARK '\x01'

/* "a string \"abc\"", "the integer 3", ... for wrong-type messages. */
static const char *describe_json(const json_t *j, char *buf, size_t n)
{
    switch (json_typeof(j)) {
    case JSON_STRING: {
        const char *s = json_string_value(j);
        if (s[0] == BIG_MARK) { /* a number too large for jansson (load_json) */
            snprintf(buf, n, "the number %.40s (out of range)", s + 1);
            break;
        }
        if (strlen(s) > 40)
            snprintf(buf, n, "a string \"%.40s...\"", s);
        else
            snprintf(buf, n, "a string \"%s\"", s);
        break;
    }
    case JSON_INTEGER: snprintf(buf, n, "the integer %lld", (long long)json_integer_value(j)); break;
    case JSON_REAL: snprintf(buf, n, "the real number %.17g", json_real_value(j)); break;
    case JSON_TRUE: snprintf(buf, n, "the boolean true"); break;
    case JSON_FALSE: snprintf(buf, n, "the boolean false"); break;
    case JSON_OBJECT: snprintf(buf, n, "an object"); break;
    case JSON_ARRAY: snprintf(buf, n, "an array"); break;
    default: snprintf(buf, n, "null"); break;
    }
    return buf;
}

static int json_bad(const char *what, int k, const json_t *j, int too_big)
{
    char eb[160], gb[96];
    return lnk_error(LNK_EINVAL, "%s: key '%s': expected %s, got %s", what, keys[k].name,
                     expected_v(k, 0, too_big, eb, sizeof eb), describe_json(j, gb, sizeof gb));
}

/* param_order: an array of strings, stored as a malloc'd copy. */
static int json_order(lnk_config *t, const json_t *j, const char *what)
{
    if (!json_is_array(j))
        return json_bad(what, K_PARAM_ORDER, j, 0);
    size_t n = json_array_size(j);
    if (n > INT_MAX)
        return lnk_error(LNK_EINVAL, "%s: key 'param_order': too many names (%zu)", what, n);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return lnk_error(LNK_ENOMEM, "%s: key 'param_order': out of memory", what);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(j, i);
        if (!json_is_string(e) || json_string_value(e)[0] == BIG_MARK) {
            char gb[96];
            free_order(names, (int)n);
            return lnk_error(LNK_EINVAL, "%s: key 'param_order': element %zu: expected a string, got %s",
                             what, i, describe_json(e, gb, sizeof gb));
        }
        names[i] = strdup(json_string_value(e));
        if (!names[i]) {
            free_order(names, (int)n);
            return lnk_error(LNK_ENOMEM, "%s: key 'param_order': out of memory", what);
        }
    }
    t->file_param_order = names;
    t->file_n_param_order = (int)n;
    return LNK_OK;
}

static int json_value(lnk_config *t, int k, const json_t *j, const char *what);

/* One key of the file into t (a scratch copy of the caller's config); *kk
 * gets the key's index. */
static int json_key(lnk_config *t, const char *name, const json_t *j, const char *what,
                    char **orig_order, int *kk)
{
    int k = find_key(name);
    *kk = k;
    if (k < 0) {
        char kb[400], hint[120] = "";
        char norm[64];
        snprintf(norm, sizeof norm, "%s", name);
        for (char *p = norm; *p; p++)
            if (*p == '-')
                *p = '_';
        if (find_key(norm) >= 0)
            snprintf(hint, sizeof hint, " (did you mean '%s'?)", norm);
        return lnk_error(LNK_EINVAL, "%s: unknown key '%s'%s; known keys: %s", what, name, hint,
                         key_list(kb, sizeof kb));
    }
    if (k == K_PARAM_ORDER) {
        /* drop a param_order set earlier in this call (never the caller's own) */
        if (t->file_param_order != orig_order)
            free_order(t->file_param_order, t->file_n_param_order);
        t->file_param_order = NULL;
        t->file_n_param_order = 0;
        return json_is_null(j) ? LNK_OK : json_order(t, j, what);
    }
    int st = json_value(t, k, j, what);
    if (st == LNK_EINVAL && side_index(k) >= 0) {
        defer_side(t, k); /* reported by finalize if the key applies to the task */
        return LNK_OK;
    }
    return st;
}

/* A value of key k (not param_order) into t. */
static int json_value(lnk_config *t, int k, const json_t *j, const char *what)
{
    value v = {0, 0, 0};
    if (json_is_null(j)) {
        v.reset = 1;
        store(t, k, &v);
        return LNK_OK;
    }
    switch (keys[k].kind) {
    case KIND_ENUM: {
        if (!json_is_string(j))
            return json_bad(what, k, j, 0);
        const char *s = json_string_value(j);
        v.i = -1;
        for (int i = 0; keys[k].names[i]; i++)
            if (strcmp(s, keys[k].names[i]) == 0)
                v.i = i;
        break;
    }
    case KIND_INT:
    case KIND_SEED:
    case KIND_NPARAMS:
        if (!json_is_integer(j))
            return json_bad(what, k, j, 0);
        v.i = (long long)json_integer_value(j);
        break;
    case KIND_REAL:
        if (!json_is_number(j))
            return json_bad(what, k, j, 0);
        v.r = json_number_value(j);
        break;
    case KIND_BOOL:
        if (!json_is_boolean(j))
            return json_bad(what, k, j, 0);
        v.i = json_is_true(j);
        break;
    case KIND_ORDER:
        break;
    }
    int too_big;
    if (!value_ok(k, &v, &too_big))
        return json_bad(what, k, j, too_big);
    store(t, k, &v);
    return LNK_OK;
}

/* The key jansson complained about as a duplicate: its error position is just
 * past the key's closing quote, so walk back to the opening quote. */
static void duplicate_key(const char *text, size_t len, int pos, char *out, size_t n)
{
    out[0] = '\0';
    if (pos < 2 || (size_t)pos > len || text[pos - 1] != '"')
        return;
    int i = pos - 2;
    for (; i >= 0; i--) {
        if (text[i] != '"')
            continue;
        int bs = 0;
        for (int j = i - 1; j >= 0 && text[j] == '\\'; j--)
            bs++;
        if (bs % 2 == 0)
            break;
    }
    if (i < 0)
        return;
    json_t *s = json_loadb(text + i, (size_t)(pos - i), JSON_DECODE_ANY, NULL);
    if (json_is_string(s))
        snprintf(out, n, "%s", json_string_value(s));
    json_decref(s);
}

/* A derived key given in a file with the value it derives from its base key,
 * also given in the file, records the derivation, not a choice: unset it, so
 * that it follows the base when a flag changes that (`--config saved.json
 * --L 12` on a file with "L": 6, "L_dec": 6 builds 12 decoder layers). */
static void follow_bases(lnk_config *t, const int *given)
{
    if (given[K_D_FF] && given[K_D] && (long long)t->d_ff == 4LL * t->d)
        t->d_ff = -1;
    if (given[K_L] && given[K_L_ENC] && t->L_enc == t->L)
        t->L_enc = -1;
    if (given[K_L] && given[K_L_DEC] && t->L_dec == t->L)
        t->L_dec = -1;
    /* n_classes first: it derives from V_src as the file has it */
    int v_src = t->V_src == -1 ? t->V : t->V_src;
    if (given[K_N_CLASSES] && (given[K_V_SRC] || given[K_V]) && t->n_classes == v_src)
        t->n_classes = -1;
    if (given[K_V] && given[K_V_SRC] && t->V_src == t->V)
        t->V_src = -1;
    if (given[K_V] && given[K_V_TGT] && t->V_tgt == t->V)
        t->V_tgt = -1;
}

/* n_params / param_order describe the configuration the file was saved with:
 * check their counts against the file's own keys (with the earlier sources),
 * so that a file edited after saving is caught here, naming the key. */
static int check_saved_counts(const lnk_config *t, const char *what)
{
    if (t->file_n_params < 0 && !t->file_param_order)
        return LNK_OK;
    lnk_config f = *t; /* shares file_param_order: never cleared */
    if (lnk_config_finalize(&f) != LNK_OK)
        return LNK_OK; /* not a valid configuration alone: flags may complete it */
    double np, nt;
    lnk_config_size(&f, &np, &nt);
    if (t->file_n_params >= 0 && (double)t->file_n_params != np)
        return lnk_error(LNK_EMISMATCH,
                         "%s: key 'n_params' is %lld but the file's keys give %.0f parameters "
                         "(task %s, norm_pos %s, norm %s, d %d, L_enc %d, L_dec %d): the keys were "
                         "changed after the file was saved; restore them, or remove 'n_params' "
                         "and 'param_order'",
                         what, t->file_n_params, np, lnk_task_name(f.task),
                         lnk_norm_pos_name(f.norm_pos), lnk_norm_type_name(f.norm), f.d, f.L_enc,
                         f.L_dec);
    if (t->file_param_order && (double)t->file_n_param_order != nt)
        return lnk_error(LNK_EMISMATCH,
                         "%s: key 'param_order' lists %d tensors but the file's keys give %.0f: "
                         "the keys were changed after the file was saved; restore them, or "
                         "remove 'n_params' and 'param_order'",
                         what, t->file_n_param_order, nt);
    return LNK_OK;
}

/* jansson refuses numbers beyond 64-bit integers or doubles ("too big
 * integer"), but a key that does not apply to the task must accept any JSON
 * number.  Such a number is out of range for every key: replace it by a
 * string holding BIG_MARK and its text (describe_json names it), and parse
 * again.  *work (malloc'd, or NULL) holds the rewritten text. */
static json_t *load_json(const char *text, size_t len, json_error_t *err, char **work,
                         size_t *work_len)
{
    *work = NULL;
    *work_len = len;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, err);
    for (int tries = 0; !root && json_error_code(err) == json_error_numeric_overflow &&
                        tries < 1000;
         tries++) {
        const char *t = *work ? *work : text;
        size_t n = *work ? *work_len : len, end = (size_t)err->position, start = end;
        while (start > 0 && strchr("0123456789+-.eE", t[start - 1]))
            start--;
        if (end > n || start == end)
            break;
        char *w = malloc(n + 16);
        if (!w)
            break;
        size_t m = (size_t)sprintf(w, "%.*s\"\\u0001%.*s\"", (int)start, t, (int)(end - start),
                                   t + start);
        memcpy(w + m, t + end, n - end);
        free(*work);
        *work = w;
        *work_len = m + n - end;
        root = json_loadb(w, *work_len, JSON_REJECT_DUPLICATES, err);
    }
    return root;
}

static int parse_buf(lnk_config *c, const char *text, size_t len, const char *what)
{
    if (!what)
        what = "config";
    json_error_t err;
    char *work;
    json_t *root = load_json(text, len, &err, &work, &len);
    if (!root) {
        int st;
        if (json_error_code(&err) == json_error_duplicate_key) {
            char key[128];
            duplicate_key(work ? work : text, len, err.position, key, sizeof key);
            st = lnk_error(LNK_EFORMAT, "%s:%d:%d: duplicate key '%s'", what, err.line,
                           err.column, key);
        } else {
            st = lnk_error(LNK_EFORMAT, "%s:%d:%d: invalid JSON: %s", what, err.line, err.column,
                           err.text);
        }
        free(work);
        return st;
    }
    free(work);
    if (!json_is_object(root)) {
        char gb[96];
        int st = lnk_error(LNK_EFORMAT, "%s: expected a JSON object at the top level, got %s",
                           what, describe_json(root, gb, sizeof gb));
        json_decref(root);
        return st;
    }
    /* Work on a copy so that a failure leaves *c as it was. */
    lnk_config t = *c;
    char **orig_order = c->file_param_order;
    const char *name;
    json_t *j;
    int st = LNK_OK;
    int given[K_COUNT] = {0};
    json_object_foreach(root, name, j) {
        int k;
        st = json_key(&t, name, j, what, orig_order, &k);
        if (st != LNK_OK)
            break;
        given[k] = !json_is_null(j);
    }
    json_decref(root);
    if (st == LNK_OK) {
        follow_bases(&t, given);
        st = check_saved_counts(&t, what);
    }
    if (st != LNK_OK) {
        if (t.file_param_order != orig_order)
            free_order(t.file_param_order, t.file_n_param_order);
        return st;
    }
    if (t.file_param_order != orig_order)
        free_order(c->file_param_order, c->file_n_param_order);
    *c = t;
    return LNK_OK;
}

int lnk_config_parse_json(lnk_config *c, const char *text, const char *what)
{
    if (!text)
        return lnk_error(LNK_EINVAL, "%s: no JSON text", what ? what : "config");
    return parse_buf(c, text, strlen(text), what);
}

int lnk_config_load_json(lnk_config *c, const char *path)
{
    if (!path)
        return lnk_error(LNK_EINVAL, "config: no file name");
    char *buf;
    size_t len;
    int rs = lnk_read_text_file(path, LNK_CONFIG_LIMIT, "configuration", &buf, &len);
    if (rs != LNK_OK)
        return rs;
    int st = parse_buf(c, buf, len, path);
    free(buf);
    return st;
}

/* ----------------------------------------------------------- flags (text) */

static int parse_ll(const char *s, long long *out, int *overflow)
{
    *overflow = 0;
    if (!*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0')
        return 0;
    if (errno == ERANGE) {
        *overflow = 1;
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_double(const char *s, double *out)
{
    /* strtod would skip leading blanks; a flag value has none */
    if (!*s || *s == ' ' || *s == '\t' || *s == '\n')
        return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* A flag changes the configuration a file was saved with: its n_params and
 * param_order (checked against that configuration when it was loaded) no
 * longer describe the layout, which follows the new keys. */
static void drop_saved_keys(lnk_config *c)
{
    free_order(c->file_param_order, c->file_n_param_order);
    c->file_param_order = NULL;
    c->file_n_param_order = 0;
    c->file_n_params = -1;
}

int lnk_config_set(lnk_config *c, const char *key, const char *text)
{
    if (!key)
        return lnk_error(LNK_EINVAL, "config: no key given");
    const char *flag = key;
    while (*flag == '-' && flag - key < 2)
        flag++;
    char name[64];
    if (strlen(flag) >= sizeof name)
        return lnk_error(LNK_EINVAL, "--%.60s...: unknown option", flag);
    snprintf(name, sizeof name, "%s", flag);
    for (char *p = name; *p; p++)
        if (*p == '-')
            *p = '_';
    int k = find_key(name);
    if (k < 0) {
        char kb[400];
        return lnk_error(LNK_EINVAL, "--%s: unknown option; configuration keys: %s", flag,
                         key_list(kb, sizeof kb));
    }
    /* messages name the flag as --help spells it (--norm-pos, not --norm_pos) */
    char spelled[64];
    snprintf(spelled, sizeof spelled, "%s", keys[k].name);
    for (char *p = spelled; *p; p++)
        if (*p == '_')
            *p = '-';
    flag = spelled;
    if (k == K_N_PARAMS || k == K_PARAM_ORDER)
        return lnk_error(LNK_EINVAL,
                         "--%s: read-only key: it is written into saved configuration files and "
                         "can only come from a file",
                         flag);
    char eb[160];
    if (!text)
        return lnk_error(LNK_EINVAL, "--%s: missing value (expected %s)", flag,
                         expected(k, 1, eb, sizeof eb));
    value v = {0, 0, 0};
    if (strcmp(text, "null") == 0 || strcmp(text, "default") == 0) {
        v.reset = 1;
        drop_saved_keys(c);
        store(c, k, &v);
        return LNK_OK;
    }
    int ok = 0, overflow = 0;
    switch (keys[k].kind) {
    case KIND_ENUM:
        for (int i = 0; keys[k].names[i]; i++)
            if (strcmp(text, keys[k].names[i]) == 0) {
                v.i = i;
                ok = 1;
            }
        break;
    case KIND_INT:
    case KIND_SEED:
    case KIND_NPARAMS:
        ok = parse_ll(text, &v.i, &overflow);
        break;
    case KIND_REAL:
        ok = parse_double(text, &v.r);
        break;
    case KIND_BOOL:
        if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0) {
            v.i = 1;
            ok = 1;
        } else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0) {
            v.i = 0;
            ok = 1;
        }
        break;
    case KIND_ORDER:
        break;
    }
    int too_big = 0;
    if (ok)
        ok = value_ok(k, &v, &too_big);
    if (!ok) {
        int st = lnk_error(LNK_EINVAL, "--%s: expected %s, got '%s'%s", flag,
                           expected_v(k, 1, too_big, eb, sizeof eb), text,
                           overflow ? " (out of range)" : "");
        if (side_index(k) < 0)
            return st;
        drop_saved_keys(c);
        defer_side(c, k); /* reported by finalize if the key applies to the task */
        return LNK_OK;
    }
    drop_saved_keys(c);
    store(c, k, &v);
    return LNK_OK;
}

/* -------------------------------------------------------------- finalize */

/* Check one field's current value (fields may also be set by hand). */
static int check_field(int k, long long i, double r)
{
    value v = {0, i, r};
    int too_big;
    if (keys[k].derived && i == -1)
        return LNK_OK;
    if (value_ok(k, &v, &too_big))
        return LNK_OK;
    char eb[160];
    if (keys[k].kind == KIND_REAL)
        return lnk_error(LNK_EINVAL, "config: key '%s': expected %s, got %.17g", keys[k].name,
                         expected(k, 0, eb, sizeof eb), r);
    return lnk_error(LNK_EINVAL, "config: key '%s': expected %s, got %lld", keys[k].name,
                     expected_v(k, 0, too_big, eb, sizeof eb), i);
}

/* The field of an int key (-1 for a derived key still unset). */
static int *int_field(lnk_config *c, int k)
{
    switch (k) {
    case K_D: return &c->d;
    case K_H: return &c->h;
    case K_D_FF: return &c->d_ff;
    case K_L: return &c->L;
    case K_L_ENC: return &c->L_enc;
    case K_L_DEC: return &c->L_dec;
    case K_V: return &c->V;
    case K_V_SRC: return &c->V_src;
    case K_V_TGT: return &c->V_tgt;
    case K_N_CLASSES: return &c->n_classes;
    default: return NULL;
    }
}

/* The derived keys still unset take their defaults (d_ff = 4 d, ...). */
static int derive(lnk_config *c)
{
    if (c->d_ff == -1) {
        if (c->d > INT_MAX / 4)
            return lnk_error(LNK_EINVAL, "config: key 'd_ff': default 4 d overflows (d %d)", c->d);
        c->d_ff = 4 * c->d;
    }
    if (c->L_enc == -1)
        c->L_enc = c->L;
    if (c->L_dec == -1)
        c->L_dec = c->L;
    if (c->V_src == -1)
        c->V_src = c->V;
    if (c->V_tgt == -1)
        c->V_tgt = c->V;
    if (c->n_classes == -1)
        c->n_classes = c->V_src;
    return LNK_OK;
}

void lnk_config_size(const lnk_config *c, double *n_params, double *n_tensors)
{
    double d = c->d, ff = c->d_ff;
    int ln = c->norm == LNK_NORM_LAYERNORM, rms = c->norm == LNK_NORM_RMSNORM;
    double norm = ln ? 2 * d : rms ? d : 0, norm_t = ln ? 2 : rms ? 1 : 0;
    double attn = 4 * d * d + 4 * d, ffn = 2 * d * ff + ff + d;
    int final = c->norm_pos == LNK_POS_PRE && c->norm != LNK_NORM_NONE;
    double p = 0, t = 0;
    if (c->task != LNK_TASK_LM) { /* src_emb, encoder blocks [attn, norm1, ffn, norm2] */
        p += (double)c->V_src * d + (double)c->L_enc * (attn + ffn + 2 * norm) + final * norm;
        t += 1 + (double)c->L_enc * (8 + 4 + 2 * norm_t) + final * norm_t;
    }
    if (c->task != LNK_TASK_CLS) { /* tgt_emb, decoder blocks (+ xattn, norm3 in seq2seq) */
        int x = c->task == LNK_TASK_SEQ2SEQ;
        p += (double)c->V_tgt * d +
             (double)c->L_dec * (attn + ffn + 2 * norm + x * (attn + norm)) + final * norm;
        t += 1 + (double)c->L_dec * (8 + 4 + 2 * norm_t + x * (8 + norm_t)) + final * norm_t;
    }
    if (!c->tie_output) { /* out.w */
        p += d * (c->task == LNK_TASK_CLS ? c->n_classes : c->V_tgt);
        t += 1;
    }
    if (n_params)
        *n_params = p;
    if (n_tensors)
        *n_tensors = t;
}

/* A configuration over the size limits: name the key whose value makes it so
 * (the one whose reset to its default shrinks the model most). */
static int size_error(const lnk_config *raw, double np, double nt)
{
    static const int cand[] = {K_D, K_D_FF, K_L, K_L_ENC, K_L_DEC, K_V, K_V_SRC, K_V_TGT,
                               K_N_CLASSES};
    lnk_config def;
    lnk_config_default(&def);
    int best = -1;
    double best_size = np + nt;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        int k = cand[i];
        if (!applies(raw->task, k))
            continue;
        lnk_config t = *raw;
        *int_field(&t, k) = *int_field(&def, k);
        double p, n;
        if (derive(&t) != LNK_OK)
            continue;
        lnk_config_size(&t, &p, &n);
        if (p + n < best_size) {
            best_size = p + n;
            best = k;
        }
    }
    char who[64] = "config";
    if (best >= 0)
        snprintf(who, sizeof who, "config: key '%s'", keys[best].name);
    char val[32] = "";
    if (best >= 0)
        snprintf(val, sizeof val, " %d", *int_field((lnk_config *)raw, best));
    return lnk_error(LNK_EINVAL,
                     "%s:%s gives a model of %.0f parameters in %.0f tensors; the limits are "
                     "%lld parameters (LNK_MAX_PARAMS, 8 GiB per vector) and %ld tensors "
                     "(LNK_MAX_TENSORS)",
                     who, val, np, nt, (long long)LNK_MAX_PARAMS, (long)LNK_MAX_TENSORS);
}

int lnk_config_finalize(lnk_config *c)
{
    int st = check_field(K_TASK, (long long)c->task, 0);
    if (st != LNK_OK)
        return st;
    /* an invalid value of a task-dependent key counts only if the key applies */
    for (int i = 0; i < 5; i++)
        if (c->side_err[i][0] && applies(c->task, side_keys[i]))
            return lnk_error(LNK_EINVAL, "%s", c->side_err[i]);
    const struct { int k; long long i; double r; } f[] = {
        {K_NORM_POS, (long long)c->norm_pos, 0},
        {K_NORM, (long long)c->norm, 0},   {K_QK_NORM, (long long)c->qk_norm, 0},
        {K_D, c->d, 0},                    {K_H, c->h, 0},
        {K_D_FF, c->d_ff, 0},              {K_L, c->L, 0},
        {K_L_ENC, c->L_enc, 0},            {K_L_DEC, c->L_dec, 0},
        {K_V, c->V, 0},                    {K_V_SRC, c->V_src, 0},
        {K_V_TGT, c->V_tgt, 0},            {K_N_CLASSES, c->n_classes, 0},
        {K_INIT, (long long)c->init, 0},   {K_TIE, c->tie_output, 0},
        {K_EPS, 0, c->eps},                {K_LS, 0, c->label_smoothing},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!applies(c->task, f[i].k)) {
            /* a key that does not apply is ignored: an invalid value set by
             * hand is dropped (the key derives from its base) */
            value v = {0, f[i].i, 0};
            int too_big;
            if (f[i].i != -1 && !value_ok(f[i].k, &v, &too_big))
                *int_field(c, f[i].k) = -1;
            continue;
        }
        st = check_field(f[i].k, f[i].i, f[i].r);
        if (st != LNK_OK)
            return st;
    }
    /* saved files hold the seed as a JSON (signed 64-bit) integer */
    if (c->seed > (uint64_t)INT64_MAX)
        return lnk_error(LNK_EINVAL, "config: key 'seed': expected an integer from 0 to %lld, got %llu",
                         (long long)INT64_MAX, (unsigned long long)c->seed);

    lnk_config raw = *c; /* before derivation, to name the key of a size error */
    st = derive(c);
    if (st != LNK_OK)
        return st;

    if (c->d % 2 != 0)
        return lnk_error(LNK_EINVAL,
                         "config: key 'd': must be even (sinusoidal position table, MODEL.md §2), got %d",
                         c->d);
    if (c->d % c->h != 0)
        return lnk_error(LNK_EINVAL, "config: keys 'd' and 'h': d must be a multiple of h (d %d, h %d)",
                         c->d, c->h);
    if (c->task == LNK_TASK_CLS && c->tie_output && c->n_classes != c->V_src)
        return lnk_error(LNK_EINVAL,
                         "config: keys 'tie_output' and 'n_classes': task cls with tie_output needs "
                         "n_classes == V_src (n_classes %d, V_src %d)",
                         c->n_classes, c->V_src);
    double np, nt;
    lnk_config_size(c, &np, &nt);
    if (np > (double)LNK_MAX_PARAMS || nt > (double)LNK_MAX_TENSORS)
        return size_error(&raw, np, nt);
    return LNK_OK;
}

/* ----------------------------------------------------------------- output */

/* Fewest significant digits that read back as x exactly, so that 1e-5 is
 * written 1e-5 rather than 1.0000000000000001e-05. */
static int shortest_digits(double x)
{
    char buf[64];
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            return p;
    }
    return 17;
}

/* Derived keys still unset (-1) are written as null, which reads back as unset. */
static json_t *int_or_null(int v) { return v == -1 ? json_null() : json_integer(v); }

char *lnk_config_to_json(const lnk_config *c, size_t n_params, const char *const *names,
                         int n_names)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "task", json_string(lnk_task_name(c->task)));
    bad |= json_object_set_new(o, "norm_pos", json_string(lnk_norm_pos_name(c->norm_pos)));
    bad |= json_object_set_new(o, "norm", json_string(lnk_norm_type_name(c->norm)));
    bad |= json_object_set_new(o, "qk_norm", json_string(lnk_norm_type_name(c->qk_norm)));
    bad |= json_object_set_new(o, "d", json_integer(c->d));
    bad |= json_object_set_new(o, "h", json_integer(c->h));
    bad |= json_object_set_new(o, "d_ff", int_or_null(c->d_ff));
    bad |= json_object_set_new(o, "L", json_integer(c->L));
    bad |= json_object_set_new(o, "L_enc", int_or_null(c->L_enc));
    bad |= json_object_set_new(o, "L_dec", int_or_null(c->L_dec));
    bad |= json_object_set_new(o, "V", json_integer(c->V));
    bad |= json_object_set_new(o, "V_src", int_or_null(c->V_src));
    bad |= json_object_set_new(o, "V_tgt", int_or_null(c->V_tgt));
    bad |= json_object_set_new(o, "n_classes", int_or_null(c->n_classes));
    bad |= json_object_set_new(o, "init", json_string(lnk_init_name(c->init)));
    bad |= json_object_set_new(o, "seed", json_integer((json_int_t)c->seed));
    bad |= json_object_set_new(o, "eps", json_real(c->eps));
    bad |= json_object_set_new(o, "tie_output", json_boolean(c->tie_output));
    bad |= json_object_set_new(o, "label_smoothing", json_real(c->label_smoothing));
    if (names) {
        bad |= json_object_set_new(o, "n_params", json_integer((json_int_t)n_params));
        json_t *a = json_array();
        for (int i = 0; a && i < n_names; i++)
            bad |= json_array_append_new(a, json_string(names[i] ? names[i] : ""));
        bad |= json_object_set_new(o, "param_order", a);
    }
    int p = shortest_digits(c->eps);
    int q = shortest_digits(c->label_smoothing);
    char *s = bad ? NULL
                  : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                      JSON_REAL_PRECISION(p > q ? p : q));
    json_decref(o);
    if (!s)
        return NULL;
    size_t len = strlen(s);
    char *out = malloc(len + 2);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\n';
        out[len + 1] = '\0';
    }
    free(s);
    return out;
}

/* ------------------------------------------------------------ key docs */

int lnk_config_describe(int i, lnk_config_key_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    int n = 0;
    while (lnk_config_keys[n])
        n++;
    if (i < 0 || i >= n)
        return lnk_error(LNK_EINVAL, "config: no key number %d (there are %d)", i, n);
    const keydef *kd = &keys[find_key(lnk_config_keys[i])];
    doc->name = kd->name;
    doc->values = kd->kind == KIND_ENUM ? kd->names : NULL;
    doc->arg = kd->arg;
    doc->help = kd->help;
    if (kd->derive) {
        snprintf(doc->def, sizeof doc->def, "%s", kd->derive);
        return LNK_OK;
    }
    /* the default's text from lnk_config_default, as a saved config writes it */
    lnk_config c;
    lnk_config_default(&c);
    char *js = lnk_config_to_json(&c, 0, NULL, 0);
    json_t *o = js ? json_loads(js, 0, NULL) : NULL, *v = o ? json_object_get(o, kd->name) : NULL;
    char *t = v && !json_is_real(v) ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    if (json_is_real(v) && asprintf(&t, "%.*g", shortest_digits(json_real_value(v)),
                                    json_real_value(v)) < 0)
        t = NULL;
    int rc = t ? LNK_OK : lnk_error(LNK_ENOMEM, "config: out of memory");
    if (t) /* strings without their quotes */
        snprintf(doc->def, sizeof doc->def, "%.*s", json_is_string(v) ? (int)strlen(t) - 2 :
                 (int)strlen(t), json_is_string(v) ? t + 1 : t);
    free(t);
    json_decref(o);
    free(js);
    return rc;
}


int lnk_config_save_json(const lnk_config *c, const char *path, size_t n_params,
                         const char *const *names, int n_names)
{
    char *s = lnk_config_to_json(c, n_params, names, n_names);
    if (!s)
        return lnk_error(LNK_ENOMEM, "%s: cannot format the configuration as JSON", path);
    lnk_afile a;
    int st = lnk_afile_open(&a, path);
    if (st != LNK_OK) {
        free(s);
        return st;
    }
    if (fputs(s, a.f) == EOF) {
        int e = errno;
        lnk_afile_abort(&a);
        free(s);
        return lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
    }
    free(s);
    return lnk_afile_commit(&a);
}
