/* The memory this process may use (see include/lnkit/memory.h). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "lnkit/memory.h"

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static _Atomic size_t user_limit; /* lnk_memory_set_limit; 0: none */

void lnk_memory_set_limit(size_t bytes) { atomic_store(&user_limit, bytes); }

/* A number of bytes from the first line of a file ("max" or junk: SIZE_MAX). */
static size_t file_bytes(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return SIZE_MAX;
    unsigned long long v;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok && v < SIZE_MAX ? (size_t)v : SIZE_MAX;
}

size_t lnk_memory_limit(void)
{
    size_t lim = SIZE_MAX;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0)
        lim = (size_t)pages * (size_t)psz;
    lim = min_sz(lim, file_bytes("/sys/fs/cgroup/memory.max"));
    lim = min_sz(lim, file_bytes("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lim = min_sz(lim, (size_t)rl.rlim_cur);
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lim = min_sz(lim, (size_t)rl.rlim_cur);
    size_t user = atomic_load(&user_limit);
    return user ? min_sz(lim, user) : lim;
}

size_t lnk_memory_available(void)
{
    size_t avail = SIZE_MAX;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (size_t)kb * 1024;
                break;
            }
        fclose(f);
    }
    return min_sz(avail, lnk_memory_limit());
}

const char *lnk_bytes_str(size_t bytes, char *buf, size_t n)
{
    if (bytes == SIZE_MAX)
        snprintf(buf, n, "more than %.3g EB", (double)SIZE_MAX / 1e18);
    else if (bytes >= 1000000000)
        snprintf(buf, n, "%.1f GB", bytes / 1e9);
    else
        snprintf(buf, n, "%.1f MB", bytes / 1e6);
    return buf;
}
