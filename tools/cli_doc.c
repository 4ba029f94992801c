/* cli_doc CMD: the OPTIONS section (roff) of lnkit-CMD(1), generated from
 * the command's option table (src/front/opt.h); tools/manpage.awk puts it
 * in place of the line '.\" @OPTIONS@' of man/lnkit-CMD.1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cli_doc COMMAND\n");
        return 2;
    }
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (strcmp(c->name, argv[1]) || !c->cmd->opts)
            continue;
        void *args = calloc(1, c->cmd->size);
        if (!args)
            return 2;
        if (c->cmd->defaults)
            c->cmd->defaults(args);
        cli_doc_roff(c->cmd, args, stdout);
        free(args);
        return fflush(stdout) ? 2 : 0;
    }
    fprintf(stderr, "cli_doc: no command '%s' with an option table\n", argv[1]);
    return 2;
}
