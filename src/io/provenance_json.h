/* Internal: the provenance record as members of a sidecar's JSON object
 * (lnk_meta_write, output.c).  See include/lnkit/provenance.h. */
#ifndef LNK_IO_PROVENANCE_JSON_H
#define LNK_IO_PROVENANCE_JSON_H
#include <jansson.h>
/* Add command_line, cwd, inputs, seeds, git_commit, versions, threads and
 * ranks to root; 0 on success, -1 if out of memory. */
int lnk_prov_json(json_t *root);
#endif
