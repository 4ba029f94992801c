/* Densities of spectra (lnkit density and blocks; the placement study's JS
 * distances): the kernel width's options, declared once, and the densities
 * of several SLQ spectra on one common grid with the Jensen-Shannon
 * distance between every two (docs/MODEL.md section 7). */
#ifndef LNK_FRONT_DENSITY_H
#define LNK_FRONT_DENSITY_H

#include "front/curv_opts.h"
#include "front/front.h"
#include "front/opt.h"
#include "lnkit/curvature.h"

/* The kernel width of a density: one of --sigma S, --sigma-variance V,
 * --sigma-kappa K, --sigma-fraction F (the default, CLI_SIGMA_FRACTION of
 * the nodes' range; a program that declares only the last has it alone),
 * and --grid-per-sigma (4). */
typedef struct {
    double sigma, variance, kappa, fraction, per;
} cli_sigma_opts;
extern const cli_opt cli_sigma_table[];
#define CLI_SIGMA(T, f)                                                                           \
    {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_sigma_table,                                    \
     .help = "Kernel width (one of the four; docs/MODEL.md section 7)"}
void cli_sigma_defaults(cli_sigma_opts *o);
/* The width for nodes in [lo, hi] after m Lanczos steps, its option's name
 * ("sigma-fraction", ...) and value in *which, *value; checked (cli_check_sigma). */
double cli_sigma(const cli_sigma_opts *o, double lo, double hi, int m, const char **which,
                 double *value, size_t max_points);
/* The check of a kernel width sigma for nodes in [lo, hi] before its grid
 * is made: the grid's ends and spacing representable (sigma not so large
 * that they overflow), at most max_points points (sigma not too small).
 * Dies naming sigma, the nodes' range and the limit. */
void cli_check_sigma(double sigma, double lo, double hi, double per, size_t max_points);

/* The densities of the spectra r[0 .. nb) on one grid covering all their
 * nodes, with the width of sg over their common range (cli_sigma; m: the
 * Lanczos steps of a run, max_grid: the grid's points at most), each checked
 * to integrate to 1 (names[i] in the message; names may be NULL), and the
 * Jensen-Shannon distance (natural log) between every two: js[i nb + j] =
 * js[j nb + i].  phi: NULL, or nb pointers that receive the densities
 * (malloc'd, g->npts values each).  Dies on a failure. */
typedef struct {
    double sigma, value, worst; /* value: of the option that chose sigma; worst |integral - 1| */
    const char *option;         /* "sigma-fraction", ... */
    double *t;                  /* the grid (malloc'd), npts points */
    size_t npts;
} cli_grid;
void cli_densities(const lnk_slq_result *const *r, const char *const *names, int nb,
                   const cli_sigma_opts *sg, int m, size_t max_grid, double **phi, double *js,
                   cli_grid *g);

#endif
