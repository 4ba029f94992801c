/* lnkit: how much memory this process may use, to refuse work that cannot fit
 * before allocating it (a workspace, a cache).
 *
 * The limit is the smallest of: the machine's physical memory, the cgroup's
 * memory.max (v2) or memory.limit_in_bytes (v1), RLIMIT_AS and RLIMIT_DATA,
 * and the program's own limit (lnk_memory_set_limit: the programs take it
 * from LNK_MEM_LIMIT_MB, MiB, to treat the machine as having that much, e.g.
 * on a machine shared with others; they refuse a bad value). */
#ifndef LNKIT_MEMORY_H
#define LNKIT_MEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The program's limit in bytes (0: none); process-wide. */
void lnk_memory_set_limit(size_t bytes);
/* Bytes this process may allocate at most (see above); SIZE_MAX if unknown. */
size_t lnk_memory_limit(void);
/* Bytes that can be allocated now without pushing other memory out: the
 * kernel's MemAvailable (/proc/meminfo), at most lnk_memory_limit(). */
size_t lnk_memory_available(void);
/* "12.3 GB" style text of a byte count in buf (n >= 16); returns buf. */
const char *lnk_bytes_str(size_t bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
