/* The model options every program that builds a model from the command line
 * shares (--config, the configuration keys as flags, --threads), and its
 * inputs read once with their digests recorded for the sidecars. */
#ifndef LNK_FRONT_MODEL_H
#define LNK_FRONT_MODEL_H

#include "front/front.h"
#include "front/opt.h"

/* Options every model command shares: --config, the configuration keys as
 * flags (the library's table: lnk_config_describe), --threads. */
typedef struct {
    const char *config_path;
    cli_config_flags keys;
    int threads;       /* 0 = OpenBLAS default */
} cli_model_opts;
extern const cli_opt cli_model_table[];
#define CLI_MODEL(T, f)                                                                           \
    {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_model_table,                                     \
     .help = "Model configuration (docs/MODEL.md section 8)", .doc = CLI_MODEL_DOC}
#define CLI_MODEL_DOC                                                                             \
    "Flags override --config, in the order given; a saved configuration's per-side keys "       \
    "derived from L, V and d follow flags on those keys (--config saved.json --L 12 builds 12 " \
    "layers on every side). Keys of sides the task does not have (--L-enc, --V-src for lm; "    \
    "--L-dec, --V-tgt for cls; --n-classes outside cls) are accepted and ignored. Every key "   \
    "may be spelt with _ or -."

/* --operator's names (lnkit/hessian.h: lnk_op_kind). */
extern const cli_choice cli_operators[];

/* Build the finalized config: file first, then the flags in order. */
void cli_make_config(const cli_model_opts *mo, lnk_config *c);

/* path with a trailing ".safetensors" (if any) replaced by suffix; malloc'd, dies on OOM. */
char *cli_sibling_path(const char *path, const char *suffix);

/* Inputs, each read once (a FIFO or /dev/fd/N too), its size and SHA-256
 * recorded for the sidecars (cli_prov): weights, batches and vectors
 * (safetensors.h), whole text files (lnk_read_input; *text malloc'd).  The
 * library's status (for cli_check under mpirun). */
int cli_load_weights(const char *path, const lnk_model *m, double *theta);
int cli_load_batch(const char *path, const lnk_model *m, lnk_batch *b);
int cli_load_vector(const char *path, const lnk_model *m, double *v, int *layout_kind);
int cli_read_input(const char *path, size_t max, const char *what, char **text);


#endif
