/* Files of the subcommands: every path a command reads, writes or deletes
 * checked against the others before any work, outputs written as one group
 * (all appear or none), sidecars only beside regular files; the size limit
 * of text inputs.  See include/lnkit/io.h for what -o does with devices,
 * FIFOs and links. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "front/files.h"
#include "front/model.h"
#include "lnkit/checkpoint.h"

static void add(cli_files *f, const char *path, const char *flag, int role)
{
    if (!path || cli_is_stdout(path))
        return; /* none, or standard output/input */
    if (f->n == f->cap) {
        int nc = f->cap ? 2 * f->cap : 16;
        struct cli_path *p = realloc(f->p, sizeof *p * (size_t)nc);
        if (!p)
            cli_die("out of memory");
        f->p = p;
        f->cap = nc;
    }
    f->p[f->n++] = (struct cli_path){path, flag, role};
}

/* s, kept until cli_files_check frees f (NULL stays NULL). */
static char *keep(cli_files *f, char *s)
{
    if (!s)
        return NULL;
    char **o = realloc(f->own, sizeof *o * (size_t)(f->n_own + 1));
    if (!o)
        cli_die("out of memory");
    f->own = o;
    return f->own[f->n_own++] = s;
}

static char *cat(cli_files *f, const char *a, const char *b)
{
    char *s;
    if (asprintf(&s, "%s%s", a, b) < 0)
        cli_die("out of memory");
    return keep(f, s);
}

void cli_files_in(cli_files *f, const char *path, const char *flag) { add(f, path, flag, CLI_IN); }
void cli_files_out(cli_files *f, const char *path, const char *flag) { add(f, path, flag, CLI_OUT); }

void cli_files_meta(cli_files *f, const char *path, const char *flag)
{
    if (path)
        add(f, keep(f, cli_meta_path(path)), cat(f, "the sidecar of ", flag), CLI_OUT);
}

void cli_files_out_meta(cli_files *f, const char *path, const char *flag)
{
    add(f, path, flag, CLI_OUT);
    cli_files_meta(f, path, flag);
}

void cli_files_checkpoint(cli_files *f, const char *path)
{
    if (!path)
        return;
    add(f, path, "--checkpoint", CLI_OUT);
    int P = lnk_comm_size();
    for (int r = 0; r < P; r++) {
        char *rows = keep(f, lnk_ckpt_file(path, LNK_CKPT_ROWS, r, P)), lab[64];
        if (!rows)
            cli_die("out of memory");
        if (P > 1)
            snprintf(lab, sizeof lab, "rank %d's rows file of ", r);
        else
            snprintf(lab, sizeof lab, "the rows file of ");
        add(f, rows, cat(f, lab, "--checkpoint"), CLI_OUT);
    }
    char *lock = keep(f, lnk_ckpt_file(path, LNK_CKPT_LOCK, 0, 1));
    if (!lock)
        cli_die("out of memory");
    add(f, lock, "the lock file of --checkpoint", CLI_OUT);
    add(f, path, "--checkpoint", CLI_GONE);
}

/* The folder (its real path) and the name path leads to, links followed
 * (a dangling link: its target); 0 if the folder does not exist. */
static int where(const char *path, char **dir, char **name)
{
    char *p = strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat sb;
        char t[PATH_MAX];
        ssize_t n;
        if (lstat(p, &sb) != 0 || !S_ISLNK(sb.st_mode) || (n = readlink(p, t, sizeof t - 1)) < 0)
            break;
        t[n] = '\0';
        char *q = NULL, *slash = strrchr(p, '/');
        if (t[0] == '/' || !slash)
            q = strdup(t);
        else if (asprintf(&q, "%.*s/%s", (int)(slash - p), p, t) < 0)
            q = NULL;
        free(p);
        p = q;
    }
    if (!p)
        cli_die("out of memory");
    char *slash = strrchr(p, '/');
    *name = strdup(slash ? slash + 1 : p);
    if (slash == p)
        *dir = strdup("/");
    else {
        if (slash)
            *slash = '\0';
        *dir = realpath(slash ? p : ".", NULL);
    }
    free(p);
    if (!*name)
        cli_die("out of memory");
    return *dir != NULL;
}

/* Would path be removed with the temporary files of checkpoint ck? */
static int temp_of(const char *path, const char *ck)
{
    char *d1, *n1, *d2, *n2;
    int hit = 0, w1 = where(path, &d1, &n1), w2 = where(ck, &d2, &n2);
    if (w1 && w2) {
        char *pat = lnk_ckpt_file(n2, LNK_CKPT_TEMPS, 0, 1);
        if (!pat)
            cli_die("out of memory");
        hit = !strcmp(d1, d2) && fnmatch(pat, n1, 0) == 0;
        free(pat);
    }
    free(d1), free(n1), free(d2), free(n2);
    return hit;
}

static int check(const char *cmd, const cli_files *f)
{
    /* cmd NULL: the message prefix names the command already (cli_die) */
    char pre[64] = "";
    if (cmd)
        snprintf(pre, sizeof pre, "%s: ", cmd);
    int *kind = calloc((size_t)f->n + 1, sizeof *kind);
    if (!kind)
        return lnk_error(LNK_ENOMEM, "out of memory");
    int st = LNK_OK;
    for (int i = 0; !st && i < f->n; i++)
        if (f->p[i].role == CLI_OUT && lnk_output_check(f->p[i].path, &kind[i]) != LNK_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            st = lnk_error(LNK_EIO, "%s%s %s", pre, f->p[i].flag, msg);
        }
    for (int i = 0; !st && i < f->n; i++) {
        const struct cli_path *a = &f->p[i];
        for (int j = 0; !st && j < f->n; j++) {
            const struct cli_path *b = &f->p[j];
            if (a->role == CLI_OUT && kind[i] == LNK_OUT_FILE && b->role == CLI_OUT && j < i &&
                kind[j] == LNK_OUT_FILE && lnk_output_same(a->path, b->path))
                st = lnk_error(LNK_EINVAL, "%s%s %s and %s %s are the same file; each output "
                               "needs its own", pre, b->flag, b->path, a->flag, a->path);
            else if (a->role == CLI_OUT && b->role == CLI_IN && lnk_output_same(a->path, b->path))
                st = lnk_error(LNK_EINVAL, "%s%s %s is also an input (%s): an output never "
                               "replaces an input; choose another name", pre, a->flag, a->path,
                               b->flag);
            else if (a->role == CLI_GONE && b->role != CLI_GONE && temp_of(b->path, a->path))
                st = lnk_error(LNK_EINVAL, "%s%s %s has the name of a temporary file of "
                               "--checkpoint %s, which a run removes when it starts; choose "
                               "another name", pre, b->flag, b->path, a->path);
        }
    }
    free(kind);
    return st;
}

void cli_files_check(const char *cmd, cli_files *f)
{
    int st = cli_root() ? check(cmd, f) : LNK_OK;
    for (int i = 0; i < f->n_own; i++)
        free(f->own[i]);
    free(f->own);
    free(f->p);
    memset(f, 0, sizeof *f);
    cli_check(st);
}

void cli_check_outputs(const char *cmd, const cli_file *out, int n_out, const cli_file *in,
                       int n_in)
{
    cli_files f = {0};
    for (int i = 0; i < n_out; i++)
        cli_files_out(&f, out[i].path, out[i].flag);
    for (int i = 0; i < n_in; i++)
        cli_files_in(&f, in[i].path, in[i].flag);
    cli_files_check(cmd, &f);
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
