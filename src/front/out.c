/* "-o -": a result on standard output (front.h).  The writers of the
 * library write files (through a temporary name, renamed when complete), so
 * "-" gets a temporary file whose bytes are copied to standard output once
 * the outputs are committed: nothing reaches standard output from a run
 * that fails, and no file named "-" is made. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/front.h"

static char *tmp; /* the file that stands for "-" */

static void remove_tmp(void)
{
    if (tmp)
        unlink(tmp);
    free(tmp);
    tmp = NULL;
}

int cli_is_stdout(const char *path) { return path && !strcmp(path, "-"); }

const char *cli_dest(const char *path)
{
    return !path ? "(none beside standard output, a device or a FIFO)"
                 : cli_is_stdout(path) ? "standard output" : path;
}

const char *cli_out(const char *path, int binary)
{
    if (!cli_is_stdout(path))
        return path;
    if (binary && isatty(STDOUT_FILENO))
        cli_die("-o -: standard output is a terminal and the output is binary (safetensors): "
                "redirect it, or name a file");
    if (tmp)
        cli_die("-: only one output can go to standard output");
    const char *dir = getenv("TMPDIR");
    if (asprintf(&tmp, "%s/lnkit-stdout.XXXXXX", dir && *dir ? dir : "/tmp") < 0)
        cli_die("out of memory");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        tmp = NULL;
        cli_die("-o -: cannot create a temporary file for standard output: %s", strerror(e));
    }
    close(fd);
    atexit(remove_tmp);
    return tmp;
}

void cli_stdout_flush(void)
{
    if (!tmp || !cli_root())
        return;
    FILE *f = fopen(tmp, "rb");
    if (!f)
        cli_die("-o -: cannot read back %s: %s", tmp, strerror(errno));
    char buf[1 << 16];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, f)) > 0)
        bad = fwrite(buf, 1, n, stdout) != n;
    bad |= ferror(f) | fflush(stdout);
    fclose(f);
    remove_tmp();
    if (bad)
        cli_die("-o -: could not write to standard output");
}

void cli_meta_write(const char *path, const lnk_config *cfg, json_t *extra, const char *start,
                    double seconds)
{
    if (!cli_root()) {
        json_decref(extra);
        return;
    }
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die("out of memory for the sidecar of %s", path);
    if (extra)
        lnk_meta_add_object(m, extra); /* a failure stays in m: lnk_meta_write returns it */
    json_decref(extra);
    int st = lnk_meta_write(path, cli_prov(), cfg, m, start, seconds);
    lnk_meta_free(m);
    CLI_CK(st);
}

static struct {
    char start[32];
    double t0;
} run_clock;

void cli_run_begin(void)
{
    lnk_iso_time(run_clock.start, sizeof run_clock.start);
    run_clock.t0 = lnk_now();
}

const char *cli_run_start(void)
{
    return run_clock.start;
}

void cli_run_meta(const char *path, const lnk_config *cfg, json_t *extra)
{
    cli_meta_write(path, cfg, extra, run_clock.start, lnk_now() - run_clock.t0);
}

FILE *cli_fopen(const char *path, const char *mode)
{
    if (cli_is_stdout(path))
        return stdout;
    FILE *f = fopen(path, mode);
    if (!f)
        cli_die("%s: cannot open for writing: %s", path, strerror(errno));
    return f;
}

void cli_fclose(FILE *f, const char *path)
{
    int bad = f == stdout ? fflush(f) : fclose(f);
    if (bad)
        cli_die("%s: write failed", cli_is_stdout(path) ? "standard output" : path);
}
