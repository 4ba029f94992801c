/* Shared helpers of the benchmarks: medians of timings, the machine's DGEMM
 * rate and the CPU share of other processes, the lm configurations a and b
 * (bench_model, bench_span) and the Multi30k seq2seq configuration
 * (bench_multi30k, bench_mpi).  Start, messages and options: the front end
 * (front/front.h, front/opt.h); outputs: the study kit (kit/kit.h). */
#ifndef LNK_BENCH_H
#define LNK_BENCH_H

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
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

/* Share of the CPUs used by other processes between cpu_now() and other_load():
 * busy time of the whole machine (/proc/stat) minus this process's own
 * (getrusage).  A benchmark is only meaningful when this stays near 0. */
typedef struct { double sys_busy, own; } cpu_mark;

static inline double own_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static inline double sys_busy(void)
{
    unsigned long long u = 0, n = 0, s = 0, idle = 0, io = 0, irq = 0, sirq = 0, st = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &n, &s, &idle, &io, &irq,
               &sirq, &st) != 8)
        u = n = s = irq = sirq = st = 0;
    fclose(f);
    return (double)(u + n + s + irq + sirq + st) / (double)sysconf(_SC_CLK_TCK);
}

static inline cpu_mark cpu_now(void) { return (cpu_mark){sys_busy(), own_cpu()}; }

/* Fraction of the machine's CPUs used by others between a and now, over wall seconds. */
static inline double other_load(cpu_mark a, double wall)
{
    cpu_mark b = cpu_now();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double x = ((b.sys_busy - a.sys_busy) - (b.own - a.own)) / (wall * (ncpu > 0 ? ncpu : 1));
    return x < 0 ? 0 : x;
}

/* The DGEMM reference: C = A B of DGEMM_N^3 doubles, median of DGEMM_REPEAT
 * runs after a warm-up, on the BLAS threads in force. */
#define DGEMM_N 2000
#define DGEMM_REPEAT 5

/* Median GFLOP/s of C = A B with n x n x n doubles. */
static inline double dgemm_rate(int n)
{
    size_t nn = (size_t)n * n;
    double *A = cli_alloc(nn * sizeof(double)), *Bm = cli_alloc(nn * sizeof(double));
    double *C = cli_alloc(nn * sizeof(double));
    for (size_t i = 0; i < nn; i++) {
        A[i] = (double)(i % 17) / 17.0 - 0.5;
        Bm[i] = (double)(i % 13) / 13.0 - 0.5;
        C[i] = 0;
    }
    double t[DGEMM_REPEAT];
    for (int r = -1; r < DGEMM_REPEAT; r++) { /* r = -1: warm-up */
        double t0 = lnk_now();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, Bm, n, 0.0, C,
                    n);
        if (r >= 0)
            t[r] = lnk_now() - t0;
    }
    free(A);
    free(Bm);
    free(C);
    return 2.0 * n * (double)n * n / median(t, DGEMM_REPEAT) / 1e9;
}

/* The lm configurations of bench_model and bench_span (T: input positions;
 * the synthetic tgt rows hold T+1 tokens):
 *   a: d=128 h=4 L=6 d_ff=512  V=1000 B=16 T=32
 *   b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32 */
typedef struct {
    const char *name;
    int d, h, L, d_ff, V, B, T;
} bench_lm_size;

#define BENCH_LM_SIZES 2
static inline const bench_lm_size *bench_lm_size_at(int k)
{
    static const bench_lm_size sizes[BENCH_LM_SIZES] = {
        {"a", 128, 4, 6, 512, 1000, 16, 32},
        {"b", 256, 4, 6, 1024, 4000, 16, 32},
    };
    return &sizes[k];
}

/* --model: one of the sizes by name (its index), or all of them (-1). */
static const cli_choice bench_lm_models[] = {{"a", 0}, {"b", 1}, {"all", -1}, {NULL, 0}};
#define BENCH_OPT_MODEL(T, f, what)                                                               \
    {.type = CLI_CHOICE, .name = "model", CLI_AT(T, f), .ref = bench_lm_models, .help = what}

/* The lm model of size s (LayerNorm, Xavier, seed 0) with the given
 * norm_pos, activation, pos and bias keys; c gets its finalized config.
 * A failure ends the program ("PROG: config: ...", exit 2). */
static inline lnk_model *bench_lm_model(const bench_lm_size *s, const char *norm_pos,
                                        const char *activation, const char *pos,
                                        const char *bias, lnk_config *c)
{
    char buf[32];
    lnk_config_default(c);
    struct { const char *k; int v; } ints[] = {
        {"d", s->d}, {"h", s->h}, {"L", s->L}, {"d_ff", s->d_ff}, {"V", s->V},
        {"max_len", s->T}};
    if (lnk_config_set(c, "task", "lm") || lnk_config_set(c, "norm", "layernorm") ||
        lnk_config_set(c, "norm_pos", norm_pos) || lnk_config_set(c, "activation", activation) ||
        lnk_config_set(c, "pos", pos) || lnk_config_set(c, "bias", bias))
        cli_die("config: %s", lnk_errmsg());
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        snprintf(buf, sizeof buf, "%d", ints[i].v);
        if (lnk_config_set(c, ints[i].k, buf))
            cli_die("config: %s", lnk_errmsg());
    }
    if (lnk_config_finalize(c))
        cli_die("config: %s", lnk_errmsg());
    lnk_model *m = lnk_model_alloc(c);
    if (!m)
        cli_die("model: %s", lnk_errmsg());
    return m;
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
