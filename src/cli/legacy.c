/* The hand parsing of the commands that do not use cli_parse yet (eigs,
 * trace, density, blocks, eval, hvp): removed when they do. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

long cli_int(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        cli_die("%s%s: expected an integer in [%ld, %ld], got '%s'", opt[1] ? "--" : "-", opt,
                min, max, s);
    return v;
}

double cli_real(const char *cmd, const char *opt, const char *s, int strict)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s || !isfinite(v) || (strict ? !(v > 0) : !(v >= 0)))
        cli_die("%s: --%s: expected a finite number %s 0, got '%s'", cmd, opt, strict ? ">" : ">=",
                s);
    return v;
}

/* Flag spellings: the key itself and, where it has '_', the same with '-'. */
static char names[2][32][32];

int cli_add_model_options(struct option *opts, int n)
{
    int k = 0;
    for (int i = 0; lnk_config_keys[i]; i++, k++) {
        snprintf(names[0][i], 32, "%s", lnk_config_keys[i]);
        opts[n++] = (struct option){names[0][i], required_argument, NULL, CLI_KEY_BASE + i};
        if (strchr(lnk_config_keys[i], '_')) {
            snprintf(names[1][i], 32, "%s", lnk_config_keys[i]);
            for (char *p = names[1][i]; *p; p++)
                if (*p == '_')
                    *p = '-';
            opts[n++] = (struct option){names[1][i], required_argument, NULL, CLI_KEY_BASE + i};
        }
    }
    opts[n++] = (struct option){"config", required_argument, NULL, CLI_KEY_BASE - 1};
    opts[n++] = (struct option){"threads", required_argument, NULL, CLI_KEY_BASE - 2};
    opts[n++] = (struct option){"quiet", no_argument, NULL, CLI_KEY_BASE - 3};
    return n;
}

int cli_model_option(cli_model_opts *mo, int val, const char *arg)
{
    if (val == CLI_KEY_BASE - 1) {
        mo->config_path = arg;
        return 1;
    }
    if (val == CLI_KEY_BASE - 2) {
        mo->threads = (int)cli_int("threads", arg, 1, 1024);
        return 1;
    }
    if (val == CLI_KEY_BASE - 3) {
        cli_quiet = 1;
        return 1;
    }
    if (val >= CLI_KEY_BASE && val < CLI_KEY_BASE + 64) {
        if (mo->keys.n == CLI_MAX_CONFIG_FLAGS)
            cli_die("too many configuration flags");
        mo->keys.key[mo->keys.n] = lnk_config_keys[val - CLI_KEY_BASE];
        mo->keys.val[mo->keys.n++] = arg;
        return 1;
    }
    return 0;
}

void cli_print_model_help(void)
{
    cli_model_opts mo = {0};
    cli_help_opts(cli_model_table, &mo, stdout);
    printf("  --quiet                 nothing on standard error but errors\n");
}

void cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        cli_die("%s: option '%s' needs a value (see lnkit %s --help)", cmd, arg, cmd);
    cli_die("%s: unknown option '%s' (see lnkit %s --help)", cmd, arg, cmd);
}
