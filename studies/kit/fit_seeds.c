/* A power-law fit over repeated observations (seeds): group by x, weight
 * each group's mean by its standard error (studies/kit/analysis.h). */
#include <math.h>
#include <stdlib.h>
#include "analysis.h"
#include "lnkit/error.h"

static int cmp_x(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int lnk_fit_power_seeds(const double *x, const double *y, size_t n, lnk_fit *f, int *weighted,
                        double *x_min, double *x_max)
{
    /* (x, y) pairs sorted by x (stable order within a group does not matter:
     * only the group's mean and sd enter) */
    double *p = malloc(sizeof(double) * 2 * (n ? n : 1));
    double *gx = malloc(sizeof(double) * (n ? n : 1)), *gy = malloc(sizeof(double) * (n ? n : 1));
    double *gs = malloc(sizeof(double) * (n ? n : 1));
    if (!p || !gx || !gy || !gs) {
        free(p), free(gx), free(gy), free(gs);
        return lnk_error(LNK_ENOMEM, "power fit: out of memory for %zu observations", n);
    }
    for (size_t i = 0; i < n; i++)
        p[2 * i] = x[i], p[2 * i + 1] = y[i];
    qsort(p, n, 2 * sizeof(double), cmp_x);
    size_t ng = 0;
    int w = 1;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && p[2 * j] == p[2 * i])
            j++;
        double m, sd;
        lnk_mean_sd(p + 2 * i + 1, 2, j - i, &m, &sd);
        gx[ng] = p[2 * i];
        gy[ng] = m;
        gs[ng] = sd / sqrt((double)(j - i));
        w &= j - i > 1 && sd > 0;
        ng++;
        i = j;
    }
    int st = lnk_fit_power(gx, gy, w ? gs : NULL, ng, f);
    if (!st) {
        if (weighted)
            *weighted = w;
        if (x_min)
            *x_min = gx[0];
        if (x_max)
            *x_max = gx[ng - 1];
    }
    free(p), free(gx), free(gy), free(gs);
    return st;
}
