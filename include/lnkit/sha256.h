/* lnkit: SHA-256 (FIPS 180-4), for the checksums of input files in the
 * .meta.json sidecars (docs/MODEL.md §9).
 *
 *   lnk_sha256 s;  lnk_sha256_init(&s);
 *   lnk_sha256_update(&s, data, n);  ...            any number of pieces
 *   lnk_sha256_final(&s, digest);                    32 bytes
 *   lnk_sha256_hex(digest, hex);                     64 hex digits + NUL
 *   lnk_sha256_file(path, hex, &bytes);              a whole file
 *   lnk_digest: the size and SHA-256 of the bytes a reader used, computed
 *   while it read them (provenance of inputs, docs/MODEL.md §9).
 *
 * Plain C, one 64-byte block at a time; tested against
 * the FIPS 180-2 example vectors and sha256sum. */
#ifndef LNKIT_SHA256_H
#define LNKIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t h[8];
    uint64_t bytes;          /* message length so far */
    unsigned char buf[64];   /* pending partial block */
    size_t n_buf;
} lnk_sha256;

void lnk_sha256_init(lnk_sha256 *s);
void lnk_sha256_update(lnk_sha256 *s, const void *data, size_t n);
void lnk_sha256_final(lnk_sha256 *s, unsigned char digest[32]);
/* digest as 64 lower-case hex digits and a NUL. */
void lnk_sha256_hex(const unsigned char digest[32], char hex[65]);
/* SHA-256 of a whole file as hex; *bytes (may be NULL) gets its size.
 * LNK_EIO naming the file if it cannot be read. */
int lnk_sha256_file(const char *path, char hex[65], uint64_t *bytes);

/* What was read of an input: its size and the hex SHA-256 of its bytes. */
typedef struct {
    uint64_t bytes;
    char sha256[65];
} lnk_digest;
/* d from the bytes given to s so far (s is finished: init it again to reuse). */
void lnk_sha256_digest(lnk_sha256 *s, lnk_digest *d);
/* d of n bytes at data. */
void lnk_digest_of(const void *data, size_t n, lnk_digest *d);

#ifdef __cplusplus
}
#endif
#endif
