/* The record embedded in safetensors outputs (record.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/ckpt.h"
#include "front/front.h"
#include "front/record.h"
#include "io/provenance_json.h" /* the named seeds; a string the system gave */
#include "lnkit/provenance.h"

void cli_record_id(lnk_ckpt_id *id, const lnk_config *c, const cli_opt *table, const void *args)
{
    int rc = c ? cli_ckpt_id_config(id, CLI_ID_CONFIG, c) : LNK_OK;
    rc = rc ? rc : cli_opts_id(table, args, 1, id);
    CLI_CK(rc);
}

static int jset(json_t *o, const char *k, json_t *v)
{
    return (v && json_object_set_new(o, k, v) == 0) ? 0 : -1;
}

/* A number as --help shows it (%g), with as many digits as it takes to read
 * back the same double ("1e-06", not the identity's "9.9999999999999995e-07"). */
static const char *shortest(const char *text, char num[32])
{
    char *end;
    double x = strtod(text, &end);
    if (*end)
        return text;
    for (int p = 6; p <= 17; p++) {
        snprintf(num, 32, "%.*g", p, x);
        if (strtod(num, NULL) == x)
            break;
    }
    return num;
}

char *cli_record(const char *cmd, const char *content, const lnk_ckpt_id *id)
{
    json_t *r = json_object(), *ident = json_object();
    int bad = !r || !ident;
    bad |= !r || jset(r, "producer", json_sprintf("lnkit %s", LNK_VERSION)) |
                     jset(r, "git_commit", json_string(lnk_git_commit())) |
                     jset(r, "command", json_string(cmd)) |
                     jset(r, "content", lnk_json_os_text(content));
    for (int i = 0; !bad && i < id->n; i++) {
        /* the options given, not the defaults (those of the producer's version): the one
         * rule for every command, and an option a mode refuses is never given; a
         * checkpoint's identity (cli_opts_id) keeps its own items unchanged */
        int given = 1;
        const cli_opt *o = cli_opt_of_id(id->name[i], &given);
        if (!given || (!strncmp(id->name[i], "the number of ", 14) &&
                       !strcmp(id->value[i], "0"))) /* a list not given */
            continue;
        char num[32];
        const char *v = o && o->type == CLI_REAL ? shortest(id->value[i], num) : id->value[i];
        bad |= jset(ident, id->name[i], lnk_json_os_text(v));
    }
    if (r)
        bad |= jset(r, "identity", ident); /* ident taken, even on failure */
    else
        json_decref(ident);
    /* the seeds that made the tensors: "init" only where the weights are made
     * from it (lnkit init); the others read them from --weights or use none */
    json_t *seeds = cli_prov() ? lnk_prov_seeds_json(cli_prov()) : json_object();
    if (seeds && strcmp(cmd, "lnkit init") != 0)
        json_object_del(seeds, "init");
    bad |= !r || jset(r, "seeds", seeds);
    char *text = bad ? NULL : json_dumps(r, JSON_COMPACT);
    json_decref(r);
    if (!text)
        cli_die("out of memory for the record of the output");
    return text;
}

const char *const *cli_record_table(cli_record_md *r, const char *cmd, const char *content,
                                    const lnk_config *c, const cli_opt *table, const void *args)
{
    lnk_ckpt_id id = {0};
    cli_record_id(&id, c, table, args);
    r->text = cli_record(cmd, content, &id);
    lnk_ckpt_id_free(&id);
    r->md[0] = CLI_RECORD_KEY;
    r->md[1] = r->text;
    r->md[2] = NULL;
    return r->md;
}

void cli_record_free(cli_record_md *r)
{
    free(r->text);
    r->text = NULL;
}
