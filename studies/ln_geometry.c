/* ln_geometry: the LayerNorm geometry study (`make study-geometry`; issue 5).
 *
 * Brody, Alon, Yahav 2023 ("On the Expressivity Role of LayerNorm in Transformers'
 * Attention") and the objections raised against it, checked part by part:
 *   random   selectability heat maps over (n, d) for random keys, Gaussian and with a
 *            common offset and anisotropic scales, under none / projection P / scaling S
 *            (RMS, eps 0) / LayerNorm = S(P):                 heatmap.csv
 *   ortho    |cos(k, 1)| and the angle to the line of 1 against d up to 512, with
 *            the spread over key sets (the fit is the summary's): orthogonality.csv
 *   heads    d = 512 (and 16, 64), h in {1..16}: per-head slice mean and norm spread
 *            after a full-width LN, a per-head LN, a per-head RMSNorm; per-head
 *            selectability:                             heads_stats.csv, heads_select.csv
 *   model    Pre-/Post-LN language models at initialisation on synthetic and real text:
 *            unselectable keys per layer and head along x -> N(x) -> N(x) Wk_j -> qk-norm,
 *            the hull-membership checks of the affine maps, and |cos(x, 1)| of the
 *            norms' inputs:            model_select.csv, model_affine.csv, model_cos.csv
 *   maps     attention maps at layer 2 of an encoder with full-width LN, per-head LN and
 *            per-head RMSNorm (qk_norm): entropy and stripe statistics of every layer and
 *            head, and the layer-2 maps of one sequence:  attn_stats.csv, attn_map_*.csv
 *   counts   how many normalisation statistics a LayerNorm computes:  norm_counts.csv
 * Every CSV gets a .meta.json.  This program writes the raw rows only; its summary
 * (tables, figures, claims) is made from the files by python3 -m studies.summary
 * geometry DIR, and studies/scripts/study_geometry.sh runs both.
 *
 * This file: the options and the order of the parts; the parts are in
 * studies/ln_geometry/ (geom.h). */
#include <stdio.h>
#include "front/curv_opts.h"
#include "front/front.h"
#include "ln_geometry/geom.h"

/* ------------------------------------------------------------------- main */

typedef struct {
    study S;
    cli_ints parts;
} args_t;

enum { P_RANDOM, P_ORTHO, P_HEADS, P_MODEL, P_MAPS, P_COUNTS };
static const cli_choice part_names[] = {{"random", P_RANDOM}, {"ortho", P_ORTHO},
                                        {"heads", P_HEADS}, {"model", P_MODEL},
                                        {"maps", P_MAPS}, {"counts", P_COUNTS}, {NULL, 0}};

static const cli_opt opts[] = {
    STUDY_OPT_OUT(args_t, S.out, "DIR", 0, NULL, "output directory"),
    {.type = CLI_WORDS, .name = "parts", .was = "part", CLI_AT(args_t, parts), .ref = part_names,
     .help = "the parts to run"},
    {.type = CLI_INT, .name = "trials", .was = "runs", .arg = "N", CLI_AT(args_t, S.runs),
     .min = 1, .max = 100000, .help = "random key sets per heat-map cell"},
    {.type = CLI_INT, .name = "n-step", .arg = "S", CLI_AT(args_t, S.nstep), .min = 1, .max = 60,
     .help = "heat-map n = 3, 3+S, ..., n-max"},
    {.type = CLI_INT, .name = "n-max", .arg = "N", CLI_AT(args_t, S.nmax), .min = 3, .max = 200,
     .help = "the largest n"},
    {.type = CLI_INT, .name = "d-max", .arg = "D", CLI_AT(args_t, S.dmax), .min = 3, .max = 64,
     .help = "heat-map d = 3..D"},
    {.type = CLI_STR, .name = "text", .arg = "FILE", CLI_AT(args_t, S.text), .flags = CLI_READS,
     .help = "real text, one sentence a line"},
    CLI_OPT_RNG_SEED(args_t, S.seed, 0, "seed of the random keys (the parts' seeds derive from "
                     "it)"),
    {0}};

static void defaults(void *p)
{
    args_t *a = p;
    a->S = (study){"results/geometry", 100, 1, 60, 15, 0, "data/multi30k/val.en"};
    for (int k = 0; k < 6; k++)
        a->parts.v[a->parts.n++] = k;
}

static const cli_cmd cmd = {
    .name = "ln_geometry",
    .usage = "[--out DIR] [--parts P[,P..]] [--trials N] [--n-step S] [--n-max N] [--d-max D]\n"
             "[--text FILE] [--rng-seed N]",
    .about = "LayerNorm geometry (Brody et al. 2023): selectable keys by exact LP, orthogonality\n"
             "to the all-ones vector, per-head statistics, attention maps.  The summary:\n"
             "python3 -m studies.summary geometry DIR.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "ln_geometry");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    study S = a.S;
    if ((S.nmax - 3) / S.nstep + 2 > 64)
        cli_die("--n-max, --n-step: too many n values (at most 62)");
    static const char *const known[] = {"random", "ortho", "heads", "model", "maps", "counts"};
    int want[6] = {0};
    for (int i = 0; i < a.parts.n; i++)
        want[a.parts.v[i]] = 1;
    /* Under mpirun the study is not spread over the ranks: rank 0 does all the
     * work and writes the outputs once, the others are done. */
    if (!study_root())
        return 0;
    make_dir(S.out);
    lnk_set_blas_threads(1);
    /* every seed the parts derive from --rng-seed, in every sidecar */
    CLI_CK(lnk_prov_seed(cli_prov(), "heatmap_key_seed", S.seed));
    CLI_CK(lnk_prov_seed(cli_prov(), "heads_stats_key_seed", S.seed + 5));
    CLI_CK(lnk_prov_seed(cli_prov(), "heads_select_key_seed", S.seed + 9));
    CLI_CK(lnk_prov_seed(cli_prov(), "orthogonality_key_seed", S.seed + 17));
    CLI_CK(lnk_prov_seed(cli_prov(), "model_synthetic_batch_seed", S.seed + 1000));
    CLI_CK(lnk_prov_seed(cli_prov(), "maps_synthetic_batch_seed", S.seed + 2000));
    CLI_CK(lnk_prov_seed(cli_prov(), "model_init_seed", 0));
    double t0 = lnk_now();
    void (*fn[6])(study *) = {part_random, part_ortho, part_heads, part_model, part_maps,
                              part_counts};
    for (int k = 0; k < 6; k++)
        if (want[k]) {
            double t = lnk_now();
            fn[k](&S);
            printf("  part %s: %.1f s\n", known[k], lnk_now() - t);
        }
    printf("wrote the CSVs under %s in %.1f s (the summary: python3 -m studies.summary geometry "
           "%s)\n",
           S.out, lnk_now() - t0, S.out);
    return 0;
}
