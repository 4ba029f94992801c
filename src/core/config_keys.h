/* The configuration keys' table and checker, shared by the three parts of the
 * configuration module (internal to src/core):
 *   config.c           the table, defaults, values, flags (lnk_config_set)
 *   config_finalize.c  derived keys, cross-key rules, sizes (lnk_config_finalize)
 *   config_json.c      JSON files in and out
 * Every key goes through the one table (lnk_cfg_keys) and the one checker
 * (lnk_cfg_value_ok), so a JSON value, a flag and a field set by hand obey the
 * same ranges and give the same wording in messages. */
#ifndef LNK_CONFIG_KEYS_H
#define LNK_CONFIG_KEYS_H

#include <stddef.h>
#include "lnkit/config.h"

enum {
    K_TASK, K_NORM_POS, K_NORM, K_QK_NORM, K_D, K_H, K_D_FF, K_L, K_L_ENC, K_L_DEC,
    K_V, K_V_SRC, K_V_TGT, K_N_CLASSES, K_INIT, K_SEED, K_EPS, K_TIE, K_LS,
    K_ACT, K_POSENC, K_BIAS, K_MAX_LEN, K_MIX, K_DN_ALPHA, K_DN_BETA, K_INPUT_SCALE,
    K_N_PARAMS, K_PARAM_ORDER, K_COUNT
};

typedef enum { KIND_ENUM, KIND_INT, KIND_SEED, KIND_REAL, KIND_BOOL, KIND_NPARAMS, KIND_ORDER } kind_t;

/* Ranges of the real keys. */
typedef enum {
    REAL_NONNEG,    /* finite, >= 0 (eps) */
    REAL_UNIT_OPEN, /* 0 <= x < 1 (label_smoothing) */
    REAL_UNIT,      /* 0 <= x <= 1 (mix_ratio) */
    REAL_POS        /* finite, > 0 (deepnorm_alpha, deepnorm_beta, input_scale) */
} real_range;

typedef struct {
    const char *name;
    kind_t kind;
    const char *const *names;  /* KIND_ENUM: value names, index = enum value */
    long long min;             /* KIND_INT: smallest allowed value */
    int derived;               /* -1 = unset until finalize (d_ff, L_enc, ...) */
    const char *arg, *help;    /* for the flags' help: the value's name, one line */
    const char *derive;        /* derived keys: their default, as MODEL.md §8 gives it */
    real_range range;          /* KIND_REAL */
} keydef;

extern const keydef lnk_cfg_keys[K_COUNT];

/* A value of one key: reset (null / "default"), an integer (enums, ints,
 * seed, bool, n_params) or a double. */
typedef struct {
    int reset;
    long long i;
    double r;
} value;

/* The task-dependent keys (L_enc, L_dec, V_src, V_tgt, n_classes): index in
 * lnk_config.side_err, or -1. */
int lnk_cfg_side_index(int k);
/* Does key k apply to the task? */
int lnk_cfg_applies(lnk_task task, int k);
/* Keep the last error as key k's deferred message (a task-dependent key) and
 * leave the key unset. */
void lnk_cfg_defer_side(lnk_config *c, int k);
/* What key k accepts, for messages (flag = 1: command-line wording). */
const char *lnk_cfg_expected(int k, int flag, int too_big, char *buf, size_t n);
/* Is v an allowed value of key k?  *too_big: an integer beyond the field. */
int lnk_cfg_value_ok(int k, const value *v, int *too_big);
/* Key k's field of c as a value (param_order: none). */
value lnk_cfg_get(const lnk_config *c, int k);
/* Store a checked value (or, reset, the key's default) into c. */
void lnk_cfg_store(lnk_config *c, int k, const value *v);
int lnk_cfg_find_key(const char *name);
/* "task, norm_pos, ..." for unknown-key messages. */
const char *lnk_cfg_key_list(char *buf, size_t n);
void lnk_cfg_free_order(char **names, int n);
/* A derived real key (deepnorm_alpha, deepnorm_beta) still unset. */
#define LNK_CFG_UNSET_REAL (-1.0)

#endif
