/* The clock, the version and the number of BLAS threads (see
 * include/lnkit/sys.h; output files are in afile.c, whole-file reads in
 * input.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
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

int lnk_iso_time_valid(const char *s)
{
    if (!s)
        return 0;
    const char *pat = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    for (; pat[i]; i++)
        if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
            return 0;
    int y = atoi(s), mo = atoi(s + 5), da = atoi(s + 8), h = atoi(s + 11), mi = atoi(s + 14),
        se = atoi(s + 17);
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || da < 1 || da > days[mo - 1] + (mo == 2 && leap) || h > 23 ||
        mi > 59 || se > 60 || (se == 60 && !(h == 23 && mi == 59)))
        return 0;
    const char *p = s + i;
    if (*p == '.') {
        if (!(p[1] >= '0' && p[1] <= '9'))
            return 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    }
    if (!strcmp(p, "Z"))
        return 1;
    return (p[0] == '+' || p[0] == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
           p[2] <= '9' && p[3] == ':' && p[4] >= '0' && p[4] <= '9' && p[5] >= '0' &&
           p[5] <= '9' && !p[6] && atoi(p + 1) <= 23 && atoi(p + 4) <= 59;
}

int lnk_blas_threads(void) { return openblas_get_num_threads(); }

void lnk_set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
