/* Densities of spectra on a common grid (front/density.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "front/density.h"

#define T cli_sigma_opts
const cli_opt cli_sigma_table[] = {
    {.type = CLI_REAL, .name = "sigma", .arg = "S", CLI_AT(T, sigma), .max = HUGE_VAL,
     .flags = CLI_GT, .excl = 2, .def = "none", .help = "kernel standard deviation (eigenvalue "
     "units)"},
    {.type = CLI_REAL, .name = "sigma-variance", .arg = "V", CLI_AT(T, variance), .max = HUGE_VAL,
     .flags = CLI_GT, .excl = 2, .def = "none",
     .help = "PyHessian, google spectral-density: kernel variance V max(1, range of the nodes)"},
    {.type = CLI_REAL, .name = "sigma-kappa", .arg = "K", CLI_AT(T, kappa), .min = 1,
     .max = HUGE_VAL, .flags = CLI_GT, .excl = 2, .def = "none",
     .help = "Papyan 2020: sigma = 1.1 range / ((m - 1) sqrt(8 ln K)), K > 1"},
    CLI_OPT_SIGMA_FRACTION(T, fraction, 2, "sigma = F (range of the nodes)"),
    {.type = CLI_REAL, .name = "grid-per-sigma", .arg = "P", CLI_AT(T, per), .min = 1, .max = 1e6,
     .help = "grid points per sigma (below 1 the trapezoid rule cannot integrate a kernel to "
             "1e-6)"},
    {0}};
#undef T

void cli_sigma_defaults(cli_sigma_opts *o)
{
    o->fraction = CLI_SIGMA_FRACTION;
    o->per = 4;
}

/* What to try when no width came from *which: --sigma where the program
 * takes it; else a --sigma-fraction that lands in the range of doubles
 * (none helps nodes that are all equal). */
static const char *sigma_hint(const char *which, double value, double lo, double hi)
{
    if (cli_declared("sigma"))
        return "; give --sigma S";
    if (strcmp(which, "sigma-fraction") || !(hi > lo) || !isfinite(hi - lo))
        return "";
    return isfinite(value * (hi - lo)) ? "; give a larger --sigma-fraction"
                                       : "; give a smaller --sigma-fraction";
}

double cli_sigma(const cli_sigma_opts *o, double lo, double hi, int m, const char **which,
                 double *value, size_t max_points)
{
    double sigma = o->sigma;
    int st = LNK_OK;
    if (cli_given("sigma"))
        *which = "sigma", *value = o->sigma;
    else if (cli_given("sigma-variance"))
        *which = "sigma-variance", *value = o->variance,
        st = lnk_sigma_from_variance(o->variance, lo, hi, &sigma);
    else if (cli_given("sigma-kappa"))
        *which = "sigma-kappa", *value = o->kappa,
        st = lnk_sigma_from_kappa(o->kappa, m, 0.05, lo, hi, &sigma);
    else
        *which = "sigma-fraction", *value = o->fraction,
        st = lnk_sigma_from_fraction(o->fraction, lo, hi, &sigma);
    if (st && lo == hi)
        cli_die("--%s %g for nodes in [%g, %g]: the nodes are all equal, their range 0 gives "
                "no kernel width%s", *which, *value, lo, hi, sigma_hint(*which, *value, lo, hi));
    if (st)
        cli_die("--%s %g: %s%s", *which, *value, lnk_errmsg(), /* the message names the range */
                sigma_hint(*which, *value, lo, hi));
    cli_check_sigma(sigma, lo, hi, o->per, max_points);
    return sigma;
}

void cli_check_sigma(double sigma, double lo, double hi, double per, size_t max_points)
{
    /* the grid's span and its points, as lnk_slq_grid_size counts them, in
     * doubles: t_p = a + (b - a) p / (N - 1) must not overflow, nor the
     * kernels' normalisation 1 / (runs sigma sqrt(2 pi)) underflow */
    double span = hi - lo + 2 * LNK_SLQ_PAD * sigma, pts = span / (sigma / per) + 2;
    if (sigma > 0 && !(pts <= (double)max_points) && sigma < 1)
        cli_die("sigma %g gives a grid of %.3g points for nodes in [%g, %g] (at most %zu): "
                "choose a larger sigma or a smaller --grid-per-sigma", sigma, pts, lo, hi,
                max_points);
    if (!(sigma > 0) || !isfinite(span) || !(span * pts <= 0x1p1020) ||
        !(1.0 / (sigma * sqrt(2 * M_PI)) > 1e-300) || !(pts <= (double)max_points))
        cli_die("sigma %g is too large for a grid of the density: its ends (the nodes' "
                "range [%g, %g] +- %g sigma) and spacing would leave the range of doubles; use a "
                "sigma below %.3g", sigma, lo, hi, LNK_SLQ_PAD,
                fmin(0x1p1020 / ((2 * LNK_SLQ_PAD) * (2 * LNK_SLQ_PAD * per + 2)) / 2,
                     1e300 / sqrt(2 * M_PI)));
}

void cli_densities(const lnk_slq_result *const *r, const char *const *names, int nb,
                   const cli_sigma_opts *sg, int m, size_t max_grid, double **phi, double *js,
                   cli_grid *g)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < nb; i++) {
        lo = fmin(lo, r[i]->node_min);
        hi = fmax(hi, r[i]->node_max);
    }
    g->sigma = cli_sigma(sg, lo, hi, m, &g->option, &g->value, max_grid);
    g->t = NULL;
    g->npts = 0;
    g->worst = 0;
    if (lnk_slq_grid_common(r, nb, g->sigma, LNK_SLQ_PAD, sg->per, max_grid, &g->t, &g->npts))
        cli_die_lib();
    size_t npts = g->npts;
    double **d = phi ? phi : malloc(sizeof *d * (size_t)(nb ? nb : 1));
    cli_check(d ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory"));
    for (int i = 0; i < nb; i++) {
        d[i] = malloc(sizeof(double) * npts);
        cli_check(d[i] ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for a grid of %zu",
                                            npts));
        if (lnk_slq_density(r[i], g->sigma, g->t, npts, d[i]) != LNK_OK)
            cli_die_lib();
        double integral = lnk_trapezoid(g->t, d[i], npts);
        g->worst = fmax(g->worst, fabs(integral - 1));
        if (!(fabs(integral - 1) < 1e-6))
            cli_die("the density of block '%s' integrates to %.12g, not 1 (grid of %zu "
                    "points): this is a bug, please report it", names ? names[i] : "?",
                    integral, npts);
    }
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            double dist;
            if (lnk_js_distance(g->t, d[i], d[j], npts, &dist) != LNK_OK)
                cli_die_lib();
            js[(size_t)i * nb + j] = js[(size_t)j * nb + i] = dist;
        }
    if (!phi) {
        for (int i = 0; i < nb; i++)
            free(d[i]);
        free(d);
    }
}
