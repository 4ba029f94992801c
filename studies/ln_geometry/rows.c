/* The geometry study's rows and sidecar keys (geom.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "front/front.h"
#include "geom.h"

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ln_geometry: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

void row(out_csv *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f; f++) {
        switch (*f) {
        case 's': CLI_CK(lnk_csv_str(&o->c, va_arg(ap, const char *))); break;
        case 'i': CLI_CK(lnk_csv_int(&o->c, va_arg(ap, int))); break;
        case 'l': CLI_CK(lnk_csv_int(&o->c, va_arg(ap, long))); break;
        case 'g': CLI_CK(lnk_csv_double(&o->c, va_arg(ap, double))); break;
        case 'G': {
            double v = va_arg(ap, double);
            CLI_CK(isfinite(v) ? lnk_csv_double(&o->c, v) : lnk_csv_str(&o->c, ""));
            break;
        }
        }
    }
    va_end(ap);
    CLI_CK(lnk_csv_end_row(&o->c));
}

lnk_meta *part_meta(const char *part)
{
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    lnk_meta_str(m, "study", "ln_geometry");
    lnk_meta_str(m, "part", part);
    return m;
}
