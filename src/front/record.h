/* The record a program's safetensors output carries inside it (docs/MODEL.md
 * §9, "The embedded record"), so that a file copied without its .meta.json
 * sidecar still says how it was made: one key of the header's __metadata__,
 * CLI_RECORD_KEY, whose value is compact JSON
 *   {"producer": "lnkit VERSION", "git_commit": C, "command": "lnkit eigs",
 *    "content": what the tensors are, "identity": {ITEM: VALUE, ...},
 *    "seeds": {"init": N, ...}}
 * identity: what the numbers depend on, in the order and the words of a
 * checkpoint's identity (cli_opts_id: the options declared CLI_ID, the input
 * files of CLI_ID_FILE options by their SHA-256, the configuration by the
 * SHA-256 of its resolved keys), of the options only those given, numbers as
 * --help shows them; seeds: the program's named seeds (lnk_prov_seed) that
 * made the tensors: "rng" where a stream was drawn, "init" in lnkit init's
 * record only (the configuration's seed key is in its checksum either way).
 * Nothing of the run's circumstances (times, threads, the working directory,
 * paths, the command line): one seed gives the same bytes on every run and
 * every thread count.  The library writes the metadata it
 * is given (lnk_st_write, lnk_*_save_meta) and keeps none. */
#ifndef LNK_FRONT_RECORD_H
#define LNK_FRONT_RECORD_H

#include "front/opt.h"
#include "lnkit/checkpoint.h"
#include "lnkit/config.h"

#define CLI_RECORD_KEY "lnkit"

/* id += the configuration's SHA-256 (c NULL: none), then the CLI_ID items of
 * table (its groups too) at args; or die. */
void cli_record_id(lnk_ckpt_id *id, const lnk_config *c, const cli_opt *table, const void *args);
/* The record's text (malloc'd; the caller frees), or die.  cmd: "lnkit eigs";
 * content: a phrase naming the tensors. */
char *cli_record(const char *cmd, const char *content, const lnk_ckpt_id *id);
/* The metadata list {CLI_RECORD_KEY, record, NULL} for lnk_*_save_meta, the
 * record built from cli_record_id(c, table, args); free with cli_record_free. */
typedef struct {
    const char *md[3];
    char *text;
} cli_record_md;
const char *const *cli_record_table(cli_record_md *r, const char *cmd, const char *content,
                                    const lnk_config *c, const cli_opt *table, const void *args);
void cli_record_free(cli_record_md *r);

#endif
