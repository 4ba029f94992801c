/* The OpenBLAS kernel at start-up: CPU detection and the (pure) decision;
 * the program restarts itself (see include/lnkit/blas.h). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "lnkit/blas.h"
#include "lnkit/error.h"

void lnk_cpu_detect(lnk_cpu_features *f)
{
    memset(f, 0, sizeof *f);
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (!osxsave)
        return; /* the OS does not save the AVX registers */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    int os_avx = (lo & 0x6) == 0x6, os_avx512 = (lo & 0xe6) == 0xe6;
    f->avx = avx && os_avx;
    f->fma = fma && os_avx;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return;
    f->avx2 = ((b >> 5) & 1) && os_avx;
    f->avx512f = ((b >> 16) & 1) && os_avx512;
    f->avx512dq = ((b >> 17) & 1) && os_avx512;
    f->avx512bw = ((b >> 30) & 1) && os_avx512;
    f->avx512vl = ((b >> 31) & 1) && os_avx512;
#endif
}

const char *lnk_blas_best_kernel(const lnk_cpu_features *f)
{
    int avx2 = f->avx && f->avx2 && f->fma;
    /* not "Cooperlake" for BF16 CPUs: OpenBLAS 0.3.21's OPENBLAS_CORETYPE does
     * not accept that name ("Core not found"), and its double-precision
     * kernels are SkylakeX's */
    if (avx2 && f->avx512f && f->avx512dq && f->avx512bw && f->avx512vl)
        return "SkylakeX";
    if (avx2)
        return "Haswell";
    if (f->avx)
        return "Sandybridge";
    return NULL;
}

/* OpenBLAS 0.3.x x86-64 core names by vector class. */
static const struct {
    const char *name;
    int cls;
} KERNELS[] = {
    {"SapphireRapids", 3}, {"Cooperlake", 3}, {"SkylakeX", 3},
    {"Haswell", 2}, {"Zen", 2},
    {"Sandybridge", 1}, {"Bulldozer", 1}, {"Piledriver", 1}, {"Steamroller", 1},
    {"Excavator", 1},
    {"Katmai", 0}, {"Coppermine", 0}, {"Northwood", 0}, {"Prescott", 0}, {"Banias", 0},
    {"Atom", 0}, {"Core2", 0}, {"Penryn", 0}, {"Dunnington", 0}, {"Nehalem", 0},
    {"Athlon", 0}, {"Opteron", 0}, {"Opteron_SSE3", 0}, {"Barcelona", 0}, {"Nano", 0},
    {"Bobcat", 0},
};

int lnk_blas_kernel_class(const char *name, const char **canon)
{
    if (canon)
        *canon = NULL;
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (!strcasecmp(name, KERNELS[i].name)) {
            if (canon)
                *canon = KERNELS[i].name;
            return KERNELS[i].cls;
        }
    return -1;
}

static const char *const CLASS_NAME[] = {"SSE", "AVX", "AVX2", "AVX-512"};

int lnk_blas_decide(const lnk_cpu_features *f, const char *loaded, int dynamic,
                    const char *user_coretype, const char *setting, const char *reexeced,
                    const char **switch_to, char *note, int n)
{
    *switch_to = NULL;
    if (!loaded || !*loaded)
        loaded = "unknown";
    const char *best = lnk_blas_best_kernel(f);
    int cpu_cls = best ? lnk_blas_kernel_class(best, NULL) : 0;
    int cls = lnk_blas_kernel_class(loaded, NULL);
    int keep = 0, named = 0;
    if (setting && *setting && strcasecmp(setting, "auto")) {
        if (!strcasecmp(setting, "keep"))
            keep = 1;
        else {
            const char *canon;
            int want = lnk_blas_kernel_class(setting, &canon);
            if (want < 0) {
                char list[400] = "";
                for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                             i ? ", " : "", KERNELS[i].name);
                snprintf(note, (size_t)n, "LNK_BLAS_KERNEL=%s: unknown", setting);
                return lnk_error(LNK_EINVAL, "LNK_BLAS_KERNEL=%s: unknown OpenBLAS kernel; "
                                 "expected auto, keep or one of %s", setting, list);
            }
            if (want > cpu_cls) {
                snprintf(note, (size_t)n, "LNK_BLAS_KERNEL=%s: not supported", setting);
                return lnk_error(LNK_EINVAL, "LNK_BLAS_KERNEL=%s needs %s, which this CPU (or "
                                 "its OS) lacks; its best kernel is %s", setting,
                                 CLASS_NAME[want], best ? best : "an SSE one");
            }
            named = 1;
            best = canon;
        }
    }
    if (reexeced) {
        char who[64];
        snprintf(who, sizeof who, named ? "LNK_BLAS_KERNEL=%s" : "auto", setting);
        if (user_coretype && strcasecmp(user_coretype, loaded))
            snprintf(note, (size_t)n, "%s: OpenBLAS chose %s; lnkit re-executed with "
                     "OPENBLAS_CORETYPE=%s, but OpenBLAS loaded %s", who, reexeced,
                     user_coretype, loaded);
        else
            snprintf(note, (size_t)n, "%s: OpenBLAS chose %s; lnkit re-executed on %s", who,
                     reexeced, loaded);
        return LNK_OK;
    }
    if (user_coretype && *user_coretype) {
        snprintf(note, (size_t)n, "OPENBLAS_CORETYPE=%s set in the environment: kept %s",
                 user_coretype, loaded);
        return LNK_OK;
    }
    if (keep) {
        snprintf(note, (size_t)n, "LNK_BLAS_KERNEL=keep: kept OpenBLAS's choice %s", loaded);
        return LNK_OK;
    }
    if (!dynamic) {
        snprintf(note, (size_t)n, "OpenBLAS built without DYNAMIC_ARCH: kept %s", loaded);
        return LNK_OK;
    }
    if (named) {
        if (!strcasecmp(best, loaded))
            snprintf(note, (size_t)n, "LNK_BLAS_KERNEL=%s: OpenBLAS chose it already", best);
        else
            *switch_to = best;
        return LNK_OK;
    }
    if (cls < 0) {
        snprintf(note, (size_t)n, "auto: OpenBLAS chose %s (a kernel lnkit does not know): "
                 "kept", loaded);
        return LNK_OK;
    }
    if (!best || cls >= cpu_cls) {
        snprintf(note, (size_t)n, "auto: OpenBLAS chose %s, which uses the CPU's %s: kept",
                 loaded, CLASS_NAME[cls < cpu_cls ? cls : cpu_cls]);
        return LNK_OK;
    }
    *switch_to = best;
    return LNK_OK;
}

const char *lnk_blas_kernel(void)
{
    const char *k = openblas_get_corename();
    return k ? k : "unknown";
}

static int dynamic_arch(void)
{
    const char *c = openblas_get_config();
    return c && strstr(c, "DYNAMIC_ARCH") != NULL;
}

int lnk_blas_choose(const char *setting, const char *user_coretype, const char *reexeced,
                    const char **switch_to, char *note, int n)
{
    lnk_cpu_features f;
    lnk_cpu_detect(&f);
    return lnk_blas_decide(&f, lnk_blas_kernel(), dynamic_arch(), user_coretype, setting,
                           reexeced, switch_to, note, n);
}

const char *lnk_blas_advice(const char *setting, const char *user_coretype)
{
    const char *to = NULL;
    char note[256];
    if (lnk_blas_choose(setting, user_coretype, NULL, &to, note, sizeof note) != LNK_OK)
        return NULL;
    return to;
}
