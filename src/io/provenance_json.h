/* Internal: the provenance record as members of a sidecar's JSON object
 * (lnk_meta_write, sidecar.c), and the form in which a sidecar records a
 * string the system gave (a path, an argument): docs/MODEL.md §9.  See
 * include/lnkit/provenance.h and include/lnkit/io.h. */
#ifndef LNK_IO_PROVENANCE_JSON_H
#define LNK_IO_PROVENANCE_JSON_H
#include <jansson.h>
#include "lnkit/provenance.h"

/* Add command_line, cwd, inputs, named_seeds, git_commit, versions,
 * blas_kernel, blas_kernel_choice, threads and ranks to root; LNK_OK or
 * LNK_ENOMEM (with its message). */
int lnk_prov_json(const lnk_prov *p, json_t *root);
/* The named seeds {"name": value, ...} (NULL if out of memory). */
json_t *lnk_prov_seeds_json(const lnk_prov *p);

/* 1 if the n bytes at s are UTF-8 as RFC 3629 defines it (no overlong forms,
 * no surrogates, nothing above U+10FFFF): what JSON strings can hold. */
int lnk_utf8_valid(const char *s, size_t n);
/* A JSON string of s as docs/MODEL.md §9 records it: s itself if it is
 * UTF-8, else s with each byte that is not part of a UTF-8 sequence replaced
 * by U+FFFD.  NULL if out of memory. */
json_t *lnk_json_os_text(const char *s);
/* The hex of s's bytes when s is not UTF-8 (the exact form beside the text),
 * else json null.  NULL if out of memory. */
json_t *lnk_json_os_hex(const char *s);
/* obj[key] = lnk_json_os_text(s), and obj[key + "_bytes_hex"] = its hex when
 * s is not UTF-8.  -1 if out of memory. */
int lnk_json_set_os(json_t *obj, const char *key, const char *s);
#endif
