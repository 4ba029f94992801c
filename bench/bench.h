/* Shared helpers of the benchmarks: medians of timings and the Multi30k
 * seq2seq configuration (bench_multi30k, bench_mpi).  Start, messages and
 * options: the front end (front/front.h, front/opt.h); outputs: the study
 * kit (kit/kit.h). */
#ifndef LNK_BENCH_H
#define LNK_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "front/opt.h"
#include "lnkit/lnkit.h"
#include "kit/kit.h"

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The report's stream: standard output, or standard error when -o is '-'
 * (report_to_fit(out), called before the first line), so that standard
 * output carries the CSV alone. */
static inline FILE **report_stream(void)
{
    static FILE *f;
    return &f;
}
static inline void report_to_fit(const char *out)
{
    *report_stream() = out && !strcmp(out, "-") ? stderr : stdout;
}
#define report(...) fprintf(*report_stream() ? *report_stream() : stdout, __VA_ARGS__)
#define report_flush() fflush(*report_stream() ? *report_stream() : stdout)

/* -o FILE, declared once for the benchmarks: what they write there, then
 * the '-' convention (bench_mpi's row is appended: its own text). */
#define BENCH_OPT_OUTPUT(T, f, what)                                                              \
    {.type = CLI_STR, .key = 'o', .name = "output", .arg = "FILE", CLI_AT(T, f),                 \
     .flags = CLI_WRITES | CLI_STDOUT, .help = what "; -: standard output (the report then on " \
                                     "standard error)"}

/* The sidecar of -o FILE, FILE.meta.json (cli_meta_write, the writer of
 * every result's sidecar): the standard record (command line, git commit,
 * versions, BLAS kernel and threads, start time, wall seconds) and every
 * option of cmd as the run had it; none for -o - or beside a device or FIFO
 * (lnk_meta_write).  cli_run_begin() when the run starts (after
 * cli_parse), bench_meta once -o FILE is written. */
static inline void bench_meta(const cli_cmd *cmd, const void *args, const char *out)
{
    if (!out || cli_is_stdout(out))
        return;
    json_t *x = json_object();
    if (!x || cli_opts_meta_all(cmd->opts, args, 1, x))
        cli_die("out of memory for the sidecar of %s", out);
    json_object_del(x, "threads"); /* the standard key: the BLAS threads the run had */
    cli_run_meta(out, NULL, x);
}

/* Median of t[0..n) (sorts t). */
static inline double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The L-L seq2seq model of the Multi30k experiment (Xavier init): a
 * finalized config, or a status with lnk_errmsg. */
static inline int bench_s2s_config(lnk_config *c, const char *norm_pos, int d, int h, int d_ff,
                                   int L, int V_src, int V_tgt)
{
    lnk_config_default(c);
    c->task = LNK_TASK_SEQ2SEQ;
    int st = lnk_config_set(c, "norm_pos", norm_pos);
    c->d = d;
    c->h = h;
    c->d_ff = d_ff;
    c->L = L;
    c->V_src = V_src;
    c->V_tgt = V_tgt;
    return st ? st : lnk_config_finalize(c);
}

#endif
