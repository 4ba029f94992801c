/* lnkit internal: what the safetensors reader (safetensors.c), writer
 * (st_write.c) and model-aware files (st_model.c) share; see
 * include/lnkit/safetensors.h. */
#ifndef LNK_IO_ST_INTERNAL_H
#define LNK_IO_ST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/safetensors.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LNK_HOST_BE 1
#else
#define LNK_HOST_BE 0
#endif

/* Names can be long and hostile; keep messages within the error buffer. */
#define NM "%.160s"

/* Reverse the bytes of each of n 8-byte values in place. */
void lnk_st_swap8(void *p, size_t n);
/* "F64" or "I64". */
const char *lnk_st_dtype_name(lnk_dtype d);
/* "[4, 4]" (or "[]" for a scalar) into buf. */
const char *lnk_st_fmt_shape(char *buf, size_t n, const int64_t *shape, int ndim);

#endif
