/* Files of the subcommands: outputs checked before any work, written as one
 * group (all appear or none), sidecars only beside regular files; the size
 * limit of text inputs.  See include/lnkit/io.h for what -o does with
 * devices, FIFOs and links. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static int check(const char *cmd, const cli_file *out, int n_out, const cli_file *in, int n_in)
{
    /* cmd NULL: the message prefix names the command already */
    char pre[64] = "";
    if (cmd)
        snprintf(pre, sizeof pre, "%s: ", cmd);
    int kind[CLI_MAX_FILES];
    if (n_out > CLI_MAX_FILES)
        return lnk_error(LNK_EINVAL, "%stoo many output files", pre);
    for (int i = 0; i < n_out; i++) {
        kind[i] = LNK_OUT_STREAM;
        if (!out[i].path || cli_is_stdout(out[i].path))
            continue; /* standard output */
        if (lnk_output_check(out[i].path, &kind[i]) != LNK_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            return lnk_error(LNK_EIO, "%s%s %s", pre, out[i].flag, msg);
        }
    }
    for (int i = 0; i < n_out; i++) {
        if (!out[i].path || kind[i] != LNK_OUT_FILE)
            continue; /* two writes to /dev/null are fine */
        for (int j = 0; j < i; j++)
            if (out[j].path && kind[j] == LNK_OUT_FILE && lnk_output_same(out[i].path, out[j].path))
                return lnk_error(LNK_EINVAL, "%s%s %s and %s %s are the same file; each output "
                                 "needs its own", pre, out[j].flag, out[j].path, out[i].flag,
                                 out[i].path);
        for (int j = 0; j < n_in; j++)
            if (in[j].path && lnk_output_same(out[i].path, in[j].path))
                return lnk_error(LNK_EINVAL, "%s%s %s is also an input (%s): an output never "
                                 "replaces an input; choose another name", pre, out[i].flag,
                                 out[i].path, in[j].flag);
    }
    return LNK_OK;
}

void cli_check_outputs(const char *cmd, const cli_file *out, int n_out, const cli_file *in,
                       int n_in)
{
    cli_check(cli_root() ? check(cmd, out, n_out, in, n_in) : LNK_OK);
}

char *cli_sidecar_path(const char *out, const char *given, const char *suffix)
{
    if (!given && cli_is_stdout(out))
        return NULL; /* the sidecar of standard output is none */
    if (given) {
        char *p = strdup(given);
        if (!p)
            cli_die("out of memory");
        return p;
    }
    if (lnk_output_kind(out) == LNK_OUT_STREAM)
        return NULL; /* no NAME.json beside /dev/null */
    return cli_sibling_path(out, suffix);
}

char *cli_meta_path(const char *csv)
{
    if (cli_is_stdout(csv) || lnk_output_kind(csv) == LNK_OUT_STREAM)
        return NULL;
    char *p = lnk_meta_path(csv);
    if (!p)
        cli_die("out of memory");
    return p;
}

void cli_outputs_begin(void)
{
    if (cli_root() && lnk_output_group_begin() != LNK_OK)
        cli_die_lib();
}

void cli_outputs_commit(void)
{
    if (cli_root() && lnk_output_group_commit() != LNK_OK)
        cli_die_lib();
    cli_stdout_flush();
}

void cli_size_arg(const char *opt, const char *s, void *dst)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1024.0; end++; break;
    case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': case 't': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    v *= mul;
    if (errno || end == s || *end || !(v >= 1) || v > 1e15)
        cli_die("%s: expected a size in bytes such as 4096, 512M or 2G, got '%s'", opt, s);
    *(size_t *)dst = (size_t)v;
}
