/* lnkit: model configuration (SPEC.md section 8).
 *
 * A configuration is built in three steps:
 *   lnk_config_default(&c);                 all keys unset (defaults of SPEC §8)
 *   lnk_config_load_json(&c, path) and/or lnk_config_set(&c, key, text) for each flag
 *   lnk_config_finalize(&c);                derive defaults (d_ff = 4d, L_enc = L, ...)
 *                                           and check ranges and cross-key rules
 * Keys that depend on others (d_ff, L_enc, L_dec, V_src, V_tgt, n_classes) hold
 * -1 until finalize; after it every field holds its resolved value.
 *
 * Errors name the key (and the file), e.g.
 *   "config.json: key 'd': expected an integer >= 2, got \"abc\"".
 */
#ifndef LNKIT_CONFIG_H
#define LNKIT_CONFIG_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { LNK_TASK_LM = 0, LNK_TASK_SEQ2SEQ = 1, LNK_TASK_CLS = 2 } lnk_task;
typedef enum { LNK_POS_POST = 0, LNK_POS_PRE = 1 } lnk_norm_pos;
typedef enum { LNK_NORM_LAYERNORM = 0, LNK_NORM_RMSNORM = 1, LNK_NORM_NONE = 2 } lnk_norm_type;
typedef enum { LNK_INIT_XAVIER = 0, LNK_INIT_XAVIER_NORMAL = 1, LNK_INIT_THEOREM = 2 } lnk_init;

typedef struct {
    lnk_task task;           /* "task": lm | seq2seq | cls            default lm */
    lnk_norm_pos norm_pos;   /* "norm_pos": post | pre                default post */
    lnk_norm_type norm;      /* "norm": layernorm | rmsnorm | none    default layernorm */
    lnk_norm_type qk_norm;   /* "qk_norm": none | layernorm | rmsnorm default none */
    int d, h;                /* width, heads; d % h == 0, d even       16, 2 */
    int d_ff;                /* feed-forward width                     4 d */
    int L;                   /* depth                                  2 */
    int L_enc, L_dec;        /* per-side depth                         L */
    int V;                   /* vocabulary                             32 */
    int V_src, V_tgt;        /* per-side vocabulary                    V */
    int n_classes;           /* cls output classes                     V_src */
    lnk_init init;           /* "init": xavier | xavier_normal | theorem */
    uint64_t seed;           /* initialisation seed                    0 */
    double eps;              /* norm epsilon                           1e-5 */
    int tie_output;          /* 0 / 1                                  0 */
    double label_smoothing;  /* 0 <= a < 1                             0 */
    /* Read-only keys found in a file, checked by lnk_model_alloc against the
     * configuration (n_params) and the layout (param_order); -1 / NULL if absent. */
    long long file_n_params;
    char **file_param_order;
    int file_n_param_order;
} lnk_config;

/* All keys unset: the defaults of SPEC §8 once finalized. */
void lnk_config_default(lnk_config *c);

/* Release memory owned by c (file_param_order). Safe on a defaulted config. */
void lnk_config_clear(lnk_config *c);

/* Read a JSON object from path and set every key it has (null = default).
 * Unknown keys, wrong types and out-of-range values are errors naming the key. */
int lnk_config_load_json(lnk_config *c, const char *path);

/* The same from a string (what = name used in messages). */
int lnk_config_parse_json(lnk_config *c, const char *text, const char *what);

/* Set one key from its text form, as given on the command line ("--d 256",
 * "--norm-pos pre"): key may use '-' or '_'.  Returns LNK_EINVAL naming the
 * key for an unknown key or a bad value. */
int lnk_config_set(lnk_config *c, const char *key, const char *value);

/* Derive the dependent defaults and check ranges and cross-key rules
 * (d % h == 0, d even, tie_output with cls needs n_classes == V_src, ...). */
int lnk_config_finalize(lnk_config *c);

/* Write the finalized configuration as JSON (every key, resolved values; plus
 * n_params and param_order when names != NULL). Atomic (temp file + rename). */
int lnk_config_save_json(const lnk_config *c, const char *path,
                         size_t n_params, const char *const *names, int n_names);

/* The configuration as a JSON text (malloc'd, caller frees), same content as the file. */
char *lnk_config_to_json(const lnk_config *c, size_t n_params,
                         const char *const *names, int n_names);

/* Names of enum values ("lm", "post", "layernorm", "xavier", ...). */
const char *lnk_task_name(lnk_task t);
const char *lnk_norm_pos_name(lnk_norm_pos p);
const char *lnk_norm_type_name(lnk_norm_type n);
const char *lnk_init_name(lnk_init i);

/* The list of keys (SPEC §8 order) for --help texts; NULL-terminated. */
extern const char *const lnk_config_keys[];

#ifdef __cplusplus
}
#endif
#endif
