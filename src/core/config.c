/* Model configuration (docs/MODEL.md §8): the keys' table, defaults, values
 * and command-line flags.  See include/lnkit/config.h for the semantics and
 * src/core/config_keys.h for the module's parts (finalize, JSON). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_keys.h"
#include "lnkit/error.h"

static const char *const task_names[] = {"lm", "seq2seq", "cls", NULL};
static const char *const pos_names[] = {"post", "pre", "peri", "out", "deepnorm", "mix", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", "none", NULL};
static const char *const init_names[] = {"xavier", "xavier_normal", "theorem", NULL};
static const char *const act_names[] = {"relu", "gelu", "swiglu", NULL};
static const char *const pe_names[] = {"sinusoidal", "learned", "rope", "none", NULL};

const keydef lnk_cfg_keys[K_COUNT] = {
    [K_TASK] = {"task", KIND_ENUM, task_names, 0, 0, NULL, "the task", NULL, 0},
    [K_NORM_POS] = {"norm_pos", KIND_ENUM, pos_names, 0, 0, NULL,
                    "where the norms sit (docs/MODEL.md section 3)", NULL, 0},
    [K_NORM] = {"norm", KIND_ENUM, norm_names, 0, 0, NULL, "the blocks' norms", NULL, 0},
    [K_QK_NORM] = {"qk_norm", KIND_ENUM, norm_names, 0, 0, NULL, "per-head key/query norm", NULL,
                   0},
    [K_D] = {"d", KIND_INT, NULL, 2, 0, "N", "width (a multiple of h; even with sinusoidal)",
             NULL, 0},
    [K_H] = {"h", KIND_INT, NULL, 1, 0, "N", "attention heads", NULL, 0},
    [K_D_FF] = {"d_ff", KIND_INT, NULL, 1, 1, "N", "feed-forward width", "4 d", 0},
    [K_L] = {"L", KIND_INT, NULL, 1, 0, "N", "depth of every side", NULL, 0},
    [K_L_ENC] = {"L_enc", KIND_INT, NULL, 1, 1, "N", "encoder depth (seq2seq, cls)", "L", 0},
    [K_L_DEC] = {"L_dec", KIND_INT, NULL, 1, 1, "N", "decoder depth (lm, seq2seq)", "L", 0},
    /* ids 0..3 are the specials <pad> <unk> <bos> <eos> */
    [K_V] = {"V", KIND_INT, NULL, 4, 0, "N", "vocabulary of every side (ids 0..3: the specials)",
             NULL, 0},
    [K_V_SRC] = {"V_src", KIND_INT, NULL, 4, 1, "N", "source vocabulary (seq2seq, cls)", "V", 0},
    [K_V_TGT] = {"V_tgt", KIND_INT, NULL, 4, 1, "N", "target vocabulary (lm, seq2seq)", "V", 0},
    [K_N_CLASSES] = {"n_classes", KIND_INT, NULL, 1, 1, "N", "output classes (cls)", "V_src", 0},
    [K_INIT] = {"init", KIND_ENUM, init_names, 0, 0, NULL,
                "initialisation (docs/MODEL.md section 5)", NULL, 0},
    [K_SEED] = {"seed", KIND_SEED, NULL, 0, 0, "N", "initialisation seed", NULL, 0},
    [K_EPS] = {"eps", KIND_REAL, NULL, 0, 0, "X", "norm epsilon, >= 0", NULL, REAL_NONNEG},
    [K_TIE] = {"tie_output", KIND_BOOL, NULL, 0, 0, "true|false",
               "output layer tied to the target embedding", NULL, 0},
    [K_LS] = {"label_smoothing", KIND_REAL, NULL, 0, 0, "A", "label smoothing, 0 <= A < 1", NULL,
              REAL_UNIT_OPEN},
    [K_ACT] = {"activation", KIND_ENUM, act_names, 0, 0, NULL,
               "feed-forward activation (gelu: exact; swiglu: gate ffn.w3)", NULL, 0},
    [K_POSENC] = {"pos", KIND_ENUM, pe_names, 0, 0, NULL,
                  "positions (rope: d / h even; sinusoidal: d even)", NULL, 0},
    [K_BIAS] = {"bias", KIND_BOOL, NULL, 0, 0, "true|false",
                "biases of attention and FFN, LayerNorm's shift", NULL, 0},
    [K_MAX_LEN] = {"max_len", KIND_INT, NULL, 1, 0, "N", "rows of the learned position tables",
                   NULL, 0},
    [K_MIX] = {"mix_ratio", KIND_REAL, NULL, 0, 0, "R",
               "mix: share of Post-LN layers of each stack, 0 <= R <= 1", NULL, REAL_UNIT},
    [K_DN_ALPHA] = {"deepnorm_alpha", KIND_REAL, NULL, 0, 1, "A",
                    "deepnorm: residual scale on every stack, > 0", "DeepNet's", REAL_POS},
    [K_DN_BETA] = {"deepnorm_beta", KIND_REAL, NULL, 0, 1, "B",
                   "deepnorm: gain of Wv, Wo and the FFN's init on every stack, > 0",
                   "DeepNet's", REAL_POS},
    [K_INPUT_SCALE] = {"input_scale", KIND_REAL, NULL, 0, 0, "S",
                       "scale of the embeddings' output, > 0", NULL, REAL_POS},
    [K_N_PARAMS] = {"n_params", KIND_NPARAMS, NULL, 0, 0, NULL, NULL, NULL, 0},
    [K_PARAM_ORDER] = {"param_order", KIND_ORDER, NULL, 0, 0, NULL, NULL, NULL, 0},
};

const char *const lnk_config_keys[] = {
    "task", "norm_pos", "norm", "qk_norm", "d", "h", "d_ff", "L", "L_enc", "L_dec",
    "V", "V_src", "V_tgt", "n_classes", "init", "seed", "eps", "tie_output",
    "label_smoothing", "activation", "pos", "bias", "max_len", "mix_ratio", "deepnorm_alpha",
    "deepnorm_beta", "input_scale", NULL};

/* The task-dependent keys, in the order of lnk_config.side_err. */
static const int side_keys[5] = {K_L_ENC, K_L_DEC, K_V_SRC, K_V_TGT, K_N_CLASSES};

int lnk_cfg_side_index(int k)
{
    for (int i = 0; i < 5; i++)
        if (side_keys[i] == k)
            return i;
    return -1;
}

/* The encoder keys (L_enc, V_src) apply to seq2seq and cls, the decoder keys
 * (L_dec, V_tgt) to lm and seq2seq, n_classes to cls; every other key to
 * every task. */
int lnk_cfg_applies(lnk_task task, int k)
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

void lnk_cfg_defer_side(lnk_config *c, int k)
{
    int i = lnk_cfg_side_index(k);
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

static int n_names(const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    return n;
}

static const char *enum_name(const char *const *names, int v)
{
    return (v >= 0 && v < n_names(names)) ? names[v] : "(invalid)";
}
const char *lnk_task_name(lnk_task t) { return enum_name(task_names, (int)t); }
const char *lnk_norm_pos_name(lnk_norm_pos p) { return enum_name(pos_names, (int)p); }
const char *lnk_norm_type_name(lnk_norm_type n) { return enum_name(norm_names, (int)n); }
const char *lnk_init_name(lnk_init i) { return enum_name(init_names, (int)i); }
const char *lnk_activation_name(lnk_activation a) { return enum_name(act_names, (int)a); }
const char *lnk_pos_enc_name(lnk_pos_enc p) { return enum_name(pe_names, (int)p); }

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
    c->activation = LNK_ACT_RELU;
    c->pos = LNK_PE_SINUSOIDAL;
    c->bias = 1;
    c->max_len = 512;
    c->mix_ratio = 0.25;
    c->deepnorm_alpha = LNK_CFG_UNSET_REAL;
    c->deepnorm_beta = LNK_CFG_UNSET_REAL;
    c->input_scale = 1.0;
    c->file_n_params = -1;
    c->file_param_order = NULL;
    c->file_n_param_order = 0;
}

void lnk_cfg_free_order(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void lnk_config_clear(lnk_config *c)
{
    lnk_cfg_free_order(c->file_param_order, c->file_n_param_order);
    c->file_param_order = NULL;
    c->file_n_param_order = 0;
    c->file_n_params = -1;
}

/* --------------------------------------------------------- values, ranges */

static const char *expected_real(real_range r)
{
    switch (r) {
    case REAL_NONNEG: return "a finite number >= 0";
    case REAL_UNIT_OPEN: return "a number >= 0 and < 1";
    case REAL_UNIT: return "a number from 0 to 1";
    case REAL_POS: return "a finite number > 0";
    }
    return "a number";
}

const char *lnk_cfg_expected(int k, int flag, int too_big, char *buf, size_t n)
{
    const keydef *kd = &lnk_cfg_keys[k];
    if (too_big) {
        snprintf(buf, n, "an integer from %lld to %d", kd->min, INT_MAX);
        return buf;
    }
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
        return expected_real(kd->range);
    case KIND_BOOL:
        return flag ? "true, false, 1 or 0" : "true or false";
    case KIND_ORDER:
        return "an array of strings";
    }
    return "?";
}

static int real_ok(real_range r, double x)
{
    if (!isfinite(x))
        return 0;
    switch (r) {
    case REAL_NONNEG: return x >= 0;
    case REAL_UNIT_OPEN: return x >= 0 && x < 1;
    case REAL_UNIT: return x >= 0 && x <= 1;
    case REAL_POS: return x > 0;
    }
    return 0;
}

int lnk_cfg_value_ok(int k, const value *v, int *too_big)
{
    const keydef *kd = &lnk_cfg_keys[k];
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
        return real_ok(kd->range, v->r);
    case KIND_BOOL:
        return v->i == 0 || v->i == 1;
    case KIND_ORDER:
        return 1;
    }
    return 0;
}

value lnk_cfg_get(const lnk_config *c, int k)
{
    value v = {0, 0, 0};
    switch (k) {
    case K_TASK: v.i = c->task; break;
    case K_NORM_POS: v.i = c->norm_pos; break;
    case K_NORM: v.i = c->norm; break;
    case K_QK_NORM: v.i = c->qk_norm; break;
    case K_D: v.i = c->d; break;
    case K_H: v.i = c->h; break;
    case K_D_FF: v.i = c->d_ff; break;
    case K_L: v.i = c->L; break;
    case K_L_ENC: v.i = c->L_enc; break;
    case K_L_DEC: v.i = c->L_dec; break;
    case K_V: v.i = c->V; break;
    case K_V_SRC: v.i = c->V_src; break;
    case K_V_TGT: v.i = c->V_tgt; break;
    case K_N_CLASSES: v.i = c->n_classes; break;
    case K_INIT: v.i = c->init; break;
    case K_SEED: v.i = (long long)c->seed; break;
    case K_EPS: v.r = c->eps; break;
    case K_TIE: v.i = c->tie_output; break;
    case K_LS: v.r = c->label_smoothing; break;
    case K_ACT: v.i = c->activation; break;
    case K_POSENC: v.i = c->pos; break;
    case K_BIAS: v.i = c->bias; break;
    case K_MAX_LEN: v.i = c->max_len; break;
    case K_MIX: v.r = c->mix_ratio; break;
    case K_DN_ALPHA: v.r = c->deepnorm_alpha; break;
    case K_DN_BETA: v.r = c->deepnorm_beta; break;
    case K_INPUT_SCALE: v.r = c->input_scale; break;
    case K_N_PARAMS: v.i = c->file_n_params; break;
    default: break;
    }
    return v;
}

void lnk_cfg_store(lnk_config *c, int k, const value *v)
{
    int side = lnk_cfg_side_index(k);
    if (side >= 0)
        c->side_err[side][0] = '\0'; /* a new value replaces an invalid one */
    if (v->reset) {
        lnk_config def;
        lnk_config_default(&def);
        value dv = lnk_cfg_get(&def, k);
        lnk_cfg_store(c, k, &dv);
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
    case K_ACT: c->activation = (lnk_activation)v->i; break;
    case K_POSENC: c->pos = (lnk_pos_enc)v->i; break;
    case K_BIAS: c->bias = (int)v->i; break;
    case K_MAX_LEN: c->max_len = (int)v->i; break;
    case K_MIX: c->mix_ratio = v->r; break;
    case K_DN_ALPHA: c->deepnorm_alpha = v->r; break;
    case K_DN_BETA: c->deepnorm_beta = v->r; break;
    case K_INPUT_SCALE: c->input_scale = v->r; break;
    case K_N_PARAMS: c->file_n_params = v->i; break;
    default: break;
    }
}

int lnk_cfg_find_key(const char *name)
{
    for (int k = 0; k < K_COUNT; k++)
        if (strcmp(lnk_cfg_keys[k].name, name) == 0)
            return k;
    return -1;
}

const char *lnk_cfg_key_list(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; lnk_config_keys[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", lnk_config_keys[i]);
    return buf;
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
    lnk_cfg_free_order(c->file_param_order, c->file_n_param_order);
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
    int k = lnk_cfg_find_key(name);
    if (k < 0) {
        char kb[400];
        return lnk_error(LNK_EINVAL, "--%s: unknown option; configuration keys: %s", flag,
                         lnk_cfg_key_list(kb, sizeof kb));
    }
    /* messages name the flag as --help spells it (--norm-pos, not --norm_pos) */
    char spelled[64];
    snprintf(spelled, sizeof spelled, "%s", lnk_cfg_keys[k].name);
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
                         lnk_cfg_expected(k, 1, 0, eb, sizeof eb));
    value v = {0, 0, 0};
    if (strcmp(text, "null") == 0 || strcmp(text, "default") == 0) {
        v.reset = 1;
        drop_saved_keys(c);
        lnk_cfg_store(c, k, &v);
        return LNK_OK;
    }
    int ok = 0, overflow = 0;
    switch (lnk_cfg_keys[k].kind) {
    case KIND_ENUM:
        for (int i = 0; lnk_cfg_keys[k].names[i]; i++)
            if (strcmp(text, lnk_cfg_keys[k].names[i]) == 0) {
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
        ok = lnk_cfg_value_ok(k, &v, &too_big);
    if (!ok) {
        int st = lnk_error(LNK_EINVAL, "--%s: expected %s, got '%s'%s", flag,
                           lnk_cfg_expected(k, 1, too_big, eb, sizeof eb), text,
                           overflow ? " (out of range)" : "");
        if (lnk_cfg_side_index(k) < 0)
            return st;
        drop_saved_keys(c);
        lnk_cfg_defer_side(c, k); /* reported by finalize if the key applies to the task */
        return LNK_OK;
    }
    drop_saved_keys(c);
    lnk_cfg_store(c, k, &v);
    return LNK_OK;
}

