/* The options of curvature runs that lnkit's commands, the studies and the
 * benchmarks share, each declared once (name, value, range, help): the
 * Lanczos tolerance, the seed of the start vectors and probes, the operator,
 * the memory for the kept primal passes, the Lanczos mode and
 * reorthogonalisation, a density's kernel width as a fraction of the nodes'
 * range.  Entries for a program's table (opt.h), at field f of its argument
 * struct T; fl: its CLI_ID / CLI_META flags; help, where a program says
 * what the value applies to in its own words. */
#ifndef LNK_FRONT_CURV_OPTS_H
#define LNK_FRONT_CURV_OPTS_H

#include <math.h>
#include "front/front.h"
#include "front/model.h"
#include "front/opt.h"
#include "lnkit/hessian.h"

/* --tol T (double, >= 0; lnk_eigs_opts_default: 1e-6): an eigenpair is
 * converged when its residual is at most T max|l|. */
#define CLI_OPT_TOL(T, f, fl, h)                                                                  \
    {.type = CLI_REAL, .name = "tol", .arg = "T", CLI_AT(T, f), .max = HUGE_VAL, .flags = (fl),  \
     .help = h}
/* --chunk N (int, 1 .. 2^24; 0: whole files, under mpirun 4 P pieces of each,
 * cli_chunk_rows): the rows of each --batch file in chunks of N; fl: CLI_ID
 * (checkpoints), CLI_ID | CLI_ID_SET (a record that names it only if given).  The data set's loss, gradient and products are the
 * token-weighted sums over the chunks: the same numbers but for rounding. */
#define CLI_OPT_CHUNK(T, f, fl)                                                                   \
    {.type = CLI_INT, .name = "chunk", .arg = "N", CLI_AT(T, f), .min = 1, .max = 1 << 24,       \
     .flags = (fl), .def = "whole files; under mpirun 4 P pieces",                             \
     .help = "rows per chunk: the data set's loss, gradient and operator are the token-weighted " \
             "sums over the chunks, exactly"}
/* --rng-seed N (uint64_t, 0 .. 2^31 - 1; 0): the seed of the run's random
 * streams (Lanczos start vectors, probes). */
#define CLI_OPT_RNG_SEED(T, f, fl, h)                                                             \
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(T, f), .max = 0x7fffffff,           \
     .flags = (fl), .help = h}
#define CLI_RNG_SEED_HELP "seed of the start vectors and probes"
/* --operator hessian|ggn|functional (int, an lnk_op_kind; LNK_OP_HESSIAN). */
#define CLI_OPT_OPERATOR(T, f, fl)                                                                \
    {.type = CLI_CHOICE, .name = "operator", CLI_AT(T, f), .ref = cli_operators, .flags = (fl),  \
     .help = "the curvature operator: the loss Hessian H, its Gauss-Newton part G = J^T H_out J " \
             "(positive semidefinite), or the functional part F = H - G",                        \
     .doc = "J is the Jacobian of the logits, H_out the Hessian of the loss in the logits. G v " \
            "is a tangent forward pass, H_out and a plain reverse pass (about 2/3 of the work " \
            "of H v); F v is H v minus G v. All are data-set means over the chunks, restricted " \
            "to the block, exact to rounding."}
/* Before a run of G (--operator ggn) that asks for bottom eigenvalues (given:
 * the options that asked, e.g. "--which both"; NULL: none but --operator):
 * G is positive semidefinite, so its bottom end (or each block G_bb's, with
 * blocks) is >= 0 and usually a cluster at 0 that Lanczos resolves slowly,
 * and may take every one of the `steps` steps of option steps_opt: said
 * before the run, not after the steps in silence. */
void cli_say_ggn_bottom(const char *given, int blocks, int steps, const char *steps_opt);
/* The operator's letter in messages (docs/MODEL.md): "H", "G" or "F". */
const char *cli_op_letter(int op_kind);
/* --cache-mb MB (long, >= 0; -1: the library's budget, half the available
 * memory): cli_set_cache. */
#define CLI_OPT_CACHE_MB(T, f, h)                                                                 \
    {.type = CLI_LONG, .name = "cache-mb", .arg = "MB", CLI_AT(T, f), .max = 1L << 40,           \
     .def = "half the available memory", .help = h}
#define CLI_CACHE_MB_HELP                                                                         \
    "memory for keeping the chunks' primal passes between products (the same bits; 0: "         \
    "recompute them every product)"
/* The kept primal passes of --cache-mb (lnk_hessian_set_cache) for h, or
 * die; nothing for mb < 0 (the default: the library's budget). */
void cli_set_cache(lnk_hessian *h, long mb);
/* --mode full|light, --reorth partial|always (lnk_lanczos_mode,
 * lnk_reorth); light mode keeps no basis, so --reorth given with it is
 * refused (the default still fills the field: sidecars unchanged). */
extern const cli_choice cli_lanczos_modes[], cli_reorths[];
#define CLI_OPT_MODE(T, f, fl)                                                                    \
    {.type = CLI_CHOICE, .name = "mode", CLI_AT(T, f), .ref = cli_lanczos_modes, .flags = (fl),  \
     .help = "a stored basis, or none with ghost removal (memory 4 n)"}
#define CLI_OPT_REORTH(T, f, fl)                                                                  \
    {.type = CLI_CHOICE, .name = "reorth", CLI_AT(T, f), .ref = cli_reorths, .flags = (fl),      \
     .needs = "mode=full",                                                                       \
     .help = "full mode: reorthogonalise the basis when it loses semi-orthogonality (Simon's "   \
             "omega recurrence), or at every step"}
#define CLI_LANCZOS(T, mode, reorth)                                                              \
    CLI_OPT_MODE(T, mode, CLI_ID | CLI_META), CLI_OPT_REORTH(T, reorth, CLI_ID | CLI_META)
/* --sigma-fraction F (double, > 0; CLI_SIGMA_FRACTION): a density's kernel
 * width sigma = F (the nodes' range) (lnk_sigma_from_fraction); ex: its
 * exclusion group among the widths, or 0. */
#define CLI_OPT_SIGMA_FRACTION(T, f, ex, h)                                                       \
    {.type = CLI_REAL, .name = "sigma-fraction", .arg = "F", CLI_AT(T, f), .max = HUGE_VAL,      \
     .flags = CLI_GT, .excl = (ex), .help = h}
#define CLI_SIGMA_FRACTION 0.01

#endif
