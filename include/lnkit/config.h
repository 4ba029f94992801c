/* lnkit: model configuration (docs/MODEL.md section 8).
 *
 * A configuration is built in three steps:
 *   lnk_config_default(&c);                 all keys unset (defaults of MODEL.md §8)
 *   lnk_config_load_json(&c, path) and/or lnk_config_set(&c, key, text) for each flag
 *   lnk_config_finalize(&c);                derive defaults (d_ff = 4d, L_enc = L, ...)
 *                                           and check ranges, cross-key rules and size
 * In code, set the fields directly between default and finalize, with their
 * C types (no text round trip):
 *   lnk_config_default(&c);
 *   c.task = LNK_TASK_SEQ2SEQ; c.norm_pos = LNK_POS_PRE; c.d = 64; c.seed = s;
 *   lnk_config_finalize(&c);
 * finalize checks every field as lnk_config_set checks its text (an error
 * names the key: "config: key 'd': expected an integer >= 2, got 3") and
 * derives the dependent keys left at -1.  lnk_config_set is for text (flags,
 * files): it also drops the read-only keys of a loaded file, which a field
 * set by hand after lnk_config_load_json does not (finalize then checks them).
 * Keys that depend on others (d_ff, L_enc, L_dec, V_src, V_tgt, n_classes) hold
 * -1 until finalize; after it every field holds its resolved value, except
 * deepnorm_alpha and deepnorm_beta, whose derived value is per stack: they stay
 * -1 (written null) while unset, and lnk_config_deepnorm gives each stack's.
 *
 * Semantics (MODEL.md §8 states them for users):
 *  - Task-dependent keys.  L_enc, V_src apply to seq2seq and cls; L_dec, V_tgt to
 *    lm and seq2seq; n_classes to cls.  A value of such a key that is not valid
 *    (wrong type, out of range, any JSON value) is held until finalize, which
 *    reports it only if the key applies to the final task: a key that does not
 *    apply is accepted and ignored whatever its value.
 *  - Derived keys in files.  A file that gives a derived key (d_ff, L_enc, L_dec,
 *    V_src, V_tgt, n_classes) with the value it would derive from its base key
 *    given in the same file (d_ff = 4 d, L_enc = L_dec = L, V_src = V_tgt = V,
 *    n_classes = V_src) records a derived key, not a choice: the key stays unset
 *    and follows its base, so `--config saved.json --L 12` builds 12 layers on
 *    every side.  A value that differs from its derivation is kept as set.
 *  - Read-only keys n_params / param_order describe the configuration the file
 *    was saved with.  Loading checks their counts against that configuration
 *    (the file's own keys) and names them if they disagree; lnk_config_set after
 *    a load drops them (a flag changes the configuration, the layout follows it).
 *    Otherwise lnk_model_alloc checks them name by name.
 *  - Size.  finalize refuses a configuration with more than LNK_MAX_PARAMS
 *    parameters or LNK_MAX_TENSORS tensors, computed in closed form before
 *    anything is built, naming the key that makes it so large.
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
/* Norm placements (MODEL.md §3). */
typedef enum {
    LNK_POS_POST = 0, LNK_POS_PRE = 1, LNK_POS_PERI = 2, LNK_POS_OUT = 3, LNK_POS_DEEPNORM = 4,
    LNK_POS_MIX = 5
} lnk_norm_pos;
typedef enum { LNK_NORM_LAYERNORM = 0, LNK_NORM_RMSNORM = 1, LNK_NORM_NONE = 2 } lnk_norm_type;
typedef enum { LNK_INIT_XAVIER = 0, LNK_INIT_XAVIER_NORMAL = 1, LNK_INIT_THEOREM = 2 } lnk_init;
/* Feed-forward activations and position encodings (MODEL.md §2). */
typedef enum { LNK_ACT_RELU = 0, LNK_ACT_GELU = 1, LNK_ACT_SWIGLU = 2 } lnk_activation;
typedef enum { LNK_PE_SINUSOIDAL = 0, LNK_PE_LEARNED = 1, LNK_PE_ROPE = 2, LNK_PE_NONE = 3 } lnk_pos_enc;

typedef struct {
    lnk_task task;           /* "task": lm | seq2seq | cls            default lm */
    lnk_norm_pos norm_pos;   /* "norm_pos": post | pre | peri | out | deepnorm | mix  post */
    lnk_norm_type norm;      /* "norm": layernorm | rmsnorm | none    default layernorm */
    lnk_norm_type qk_norm;   /* "qk_norm": none | layernorm | rmsnorm default none */
    int d, h;                /* width, heads; d % h == 0               16, 2 */
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
    lnk_activation activation; /* "activation": relu | gelu | swiglu    relu */
    lnk_pos_enc pos;         /* "pos": sinusoidal | learned | rope | none  sinusoidal */
    int bias;                /* 0 / 1: biases, LayerNorm shifts        1 */
    int max_len;             /* learned position table rows            512 */
    double mix_ratio;        /* mix: share of Post-LN layers, [0, 1]   0.25 */
    double deepnorm_alpha;   /* deepnorm: residual scale > 0; -1 = DeepNet's (per stack) */
    double deepnorm_beta;    /* deepnorm: init gain > 0; -1 = DeepNet's (per stack) */
    double input_scale;      /* sigma > 0 on the embeddings' output    1 */
    /* Read-only keys found in a file, checked by lnk_model_alloc against the
     * configuration (n_params) and the layout (param_order); -1 / NULL if absent. */
    long long file_n_params;
    char **file_param_order;
    int file_n_param_order;
    /* Messages for invalid values of the task-dependent keys (L_enc, L_dec,
     * V_src, V_tgt, n_classes, in that order; "" if none), reported by
     * finalize only where the key applies to the task. */
    char side_err[5][256];
} lnk_config;

/* Size limits checked by lnk_config_finalize (MODEL.md §8): 2^30 parameters
 * (8 GiB for each vector of them; a curvature run holds several) and 2^20
 * tensors (65536 blocks).  Compile-time constants: a build may raise them. */
#ifndef LNK_MAX_PARAMS
#define LNK_MAX_PARAMS (1LL << 30)
#endif
#ifndef LNK_MAX_TENSORS
#define LNK_MAX_TENSORS (1L << 20)
#endif

/* All keys unset: the defaults of MODEL.md §8 once finalized. */
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
 * (d % h == 0, d even with sinusoidal positions, d / h even with rotary ones,
 * tie_output with cls needs n_classes == V_src) and the size limits. */
int lnk_config_finalize(lnk_config *c);

/* Parameters and tensors of a finalized configuration's model (MODEL.md §6),
 * in closed form (no allocation); the same numbers as lnk_model_n_params and
 * the layout's n_tensors.  As doubles: exact below 2^53, and no overflow for
 * absurd configurations.  Either pointer may be NULL. */
void lnk_config_size(const lnk_config *c, double *n_params, double *n_tensors);

/* Write the finalized configuration as JSON (every key, resolved values; plus
 * n_params and param_order when names != NULL). Atomic (temp file + rename). */
int lnk_config_save_json(const lnk_config *c, const char *path,
                         size_t n_params, const char *const *names, int n_names);

/* The configuration as a JSON text (malloc'd, caller frees), same content as the file. */
char *lnk_config_to_json(const lnk_config *c, size_t n_params,
                         const char *const *names, int n_names);

/* DeepNorm's residual scale alpha and initialisation gain beta of a stack
 * (0 encoder, 1 decoder) of a finalized configuration (MODEL.md §3): the keys
 * when set, else DeepNet's constants for the task and depths.  Defined for
 * every norm_pos (the model uses them only with deepnorm). */
void lnk_config_deepnorm(const lnk_config *c, int stack, double *alpha, double *beta);

/* Names of enum values ("lm", "post", "layernorm", "xavier", ...). */
const char *lnk_task_name(lnk_task t);
const char *lnk_norm_pos_name(lnk_norm_pos p);
const char *lnk_norm_type_name(lnk_norm_type n);
const char *lnk_init_name(lnk_init i);
const char *lnk_activation_name(lnk_activation a);
const char *lnk_pos_enc_name(lnk_pos_enc p);

/* The list of keys (MODEL.md §8 order) for --help texts; NULL-terminated. */
extern const char *const lnk_config_keys[];

/* What a program's help says of key i of lnk_config_keys (every key is also
 * a flag, MODEL.md §8): its name, its values (enum keys: the names,
 * NULL-terminated; else NULL and arg, "N", "X", "true|false"), a short
 * description, and its default as text ("post", "16", "1e-05";
 * a derived key's derivation: "4 d", "V_src").  LNK_EINVAL past the last key. */
typedef struct {
    const char *name;
    const char *const *values;
    const char *arg, *help;
    char def[32];
} lnk_config_key_doc;
int lnk_config_describe(int i, lnk_config_key_doc *doc);

#ifdef __cplusplus
}
#endif
#endif
