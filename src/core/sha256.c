/* SHA-256 (FIPS 180-4).  See include/lnkit/sha256.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lnkit/error.h"
#include "lnkit/sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* One 64-byte block into the state. */
static void block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] +
                      w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void lnk_sha256_init(lnk_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->n_buf = 0;
}

void lnk_sha256_update(lnk_sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->bytes += n;
    if (s->n_buf) { /* complete the pending block first */
        size_t k = 64 - s->n_buf < n ? 64 - s->n_buf : n;
        memcpy(s->buf + s->n_buf, p, k);
        s->n_buf += k, p += k, n -= k;
        if (s->n_buf < 64)
            return;
        block(s->h, s->buf);
        s->n_buf = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        block(s->h, p);
    memcpy(s->buf, p, n);
    s->n_buf = n;
}

void lnk_sha256_final(lnk_sha256 *s, unsigned char digest[32])
{
    uint64_t bits = s->bytes * 8;
    /* 0x80, zeros up to 56 mod 64, then the length in bits, big-endian */
    static const unsigned char pad[64] = {0x80};
    size_t k = s->n_buf < 56 ? 56 - s->n_buf : 120 - s->n_buf;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    lnk_sha256_update(s, pad, k);
    lnk_sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            digest[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

void lnk_sha256_hex(const unsigned char digest[32], char hex[65])
{
    static const char d[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = d[digest[i] >> 4];
        hex[2 * i + 1] = d[digest[i] & 15];
    }
    hex[64] = '\0';
}

int lnk_sha256_file(const char *path, char hex[65], uint64_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lnk_error(LNK_EIO, "%s: cannot open: %s", path, strerror(errno));
    lnk_sha256 s;
    lnk_sha256_init(&s);
    static _Thread_local unsigned char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        lnk_sha256_update(&s, buf, k);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return lnk_error(LNK_EIO, "%s: read error", path);
    unsigned char dg[32];
    if (bytes)
        *bytes = s.bytes;
    lnk_sha256_final(&s, dg);
    lnk_sha256_hex(dg, hex);
    return LNK_OK;
}

void lnk_sha256_digest(lnk_sha256 *s, lnk_digest *d)
{
    unsigned char dg[32];
    d->bytes = s->bytes;
    lnk_sha256_final(s, dg);
    lnk_sha256_hex(dg, d->sha256);
}

void lnk_digest_of(const void *data, size_t n, lnk_digest *d)
{
    lnk_sha256 s;
    lnk_sha256_init(&s);
    lnk_sha256_update(&s, data, n);
    lnk_sha256_digest(&s, d);
}
