/* libFuzzer targets for lnkit's readers (make fuzz; see tools/fuzz.sh).
 * Each target hands the fuzzer's bytes to a reader as a file: an in-memory
 * file (memfd, a regular file) opened by its /proc/self/fd path, so the
 * readers run exactly as on disk, without touching the disk. */
#ifndef LNK_FUZZ_H
#define LNK_FUZZ_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lnkit/lnkit.h"

/* A path whose content is data[0..n): slot 0, 1, ... are separate files. */
static inline const char *fuzz_file(int slot, const uint8_t *data, size_t n)
{
    static int fd[4] = {-1, -1, -1, -1};
    static char path[4][64];
    if (fd[slot] < 0) {
        fd[slot] = memfd_create("lnkfuzz", 0);
        if (fd[slot] < 0)
            abort();
        snprintf(path[slot], sizeof path[slot], "/proc/self/fd/%d", fd[slot]);
    }
    if (ftruncate(fd[slot], 0) != 0 || (n && pwrite(fd[slot], data, n, 0) != (ssize_t)n))
        abort();
    return path[slot];
}

/* A property that must hold whatever the input: a finding if not. */
#define FUZZ_ASSERT(c)                                                                            \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "fuzz: property failed: %s (%s:%d); last message: %s\n", #c,         \
                    __FILE__, __LINE__, lnk_errmsg());                                            \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* Every recorded message is one line of printable text. */
static inline void fuzz_check_message(void)
{
    for (const unsigned char *p = (const unsigned char *)lnk_errmsg(); *p; p++)
        FUZZ_ASSERT(*p >= 0x20 && *p != 0x7f);
}
#endif
