/* The clock, the version and the number of BLAS threads (see
 * include/lnkit/sys.h; output files are in afile.c, whole-file reads in
 * input.c). */
#include <stddef.h>
#include <time.h>

#include <cblas.h>

#include "lnkit/sys.h"

const char *lnk_version(void) { return LNK_VERSION; }

double lnk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void lnk_iso_time(char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        buf[0] = '\0';
}

int lnk_blas_threads(void) { return openblas_get_num_threads(); }

void lnk_set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
