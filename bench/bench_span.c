/* Benchmark of block products: what a block's H v and G v cost against the
 * full product of their kind, now that they skip the work below the block
 * (include/lnkit/hessian.h, "Blocks").
 *
 * usage: bench_span [--threads N] [--repeat N] [--model a|b|all] [-o FILE]
 *
 * Configs a and b of bench_model (bench/bench.h: lm, LayerNorm, Xavier,
 * seed 0, B=16 T=32, the synthetic batch of seed 1), Post-LN and Pre-LN.
 * One operator per model (lnk_hessian_alloc on the one batch; a first
 * product keeps its primal pass), then for each kind (H v, G v) and each
 * block (lnk_hessian_set_block, lnk_hessian_operator): the median wall time
 * of --repeat products after one warm-up each.  The blocks take turns
 * product by product (round-robin), so that a change of the machine's load
 * during a kind's runs falls on all its blocks alike.  The blocks:
 *   *                   the full parameter vector (over_full = 1)
 *   *_emb               the embeddings (the bottom of the forward sweep)
 *   dec.0.ffn.w2        layer 0's FFN output matrix
 *   dec.L/2.ffn.w2      the middle layer's
 *   dec.L-1.ffn.w2      the last layer's
 *   dec.final_norm.*    the final norm (Pre-LN; Post-LN has none: a row
 *                       with no timing and the reason in its note)
 *   out.w               the output weight (a tied output has none: likewise)
 * over_full is a row's seconds over its kind's full product's; expected is
 * hessian.h's statement, (L - l) / L for a block whose lowest tensor is in
 * layer l (1 for the embeddings and the full vector, below layer 0; blank
 * for the final norm and the output layer, above layer L - 1: "almost
 * nothing"), the same for both kinds.  Also the same run's DGEMM rate
 * (bench.h) and the CPU share other processes took during each model's
 * runs.
 *
 * Programs print and exit; on any lnk_ failure: "bench_span: <message>", exit 2. */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/front.h"
#include "lnkit/error.h"
#include "lnkit/hessian.h"
#include "lnkit/io.h"
#include "lnkit/model.h"
#include "bench.h"

#define MAX_BLOCKS 7
#define N_KINDS 2

static const lnk_op_kind KINDS[N_KINDS] = {LNK_OP_HESSIAN, LNK_OP_GGN};
static const char *const NORM_POS[] = {"post", "pre"};

static _Noreturn void die_at(const char *what) { cli_die("%s: %s", what, lnk_errmsg()); }

/* One row: a block of one model under one kind.  seconds NAN: not timed
 * (note says why); expected NAN: blank. */
typedef struct {
    const bench_lm_size *s;
    const char *norm_pos;
    lnk_op_kind kind;
    char block[LNK_NAME_MAX];
    size_t n;
    int layer;
    double seconds, over_full, expected, other;
    const char *note;
} row;

/* The blocks of model m (L layers) as rows: pattern, layer of its lowest
 * tensor (-1 below layer 0, L above the last), expected fraction, or a
 * note when the model has no such tensor. */
static int make_blocks(const lnk_model *m, int L, row *r)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int nb = 0, mid = L / 2;
    struct { const char *fmt; int layer; const char *need, *why; } spec[MAX_BLOCKS] = {
        {"*", -1, NULL, NULL},
        {"*_emb", -1, NULL, NULL},
        {"dec.%d.ffn.w2", 0, NULL, NULL},
        {"dec.%d.ffn.w2", mid, NULL, NULL},
        {"dec.%d.ffn.w2", L - 1, NULL, NULL},
        {"dec.final_norm.*", L, "dec.final_norm.g", "no final norm in this placement"},
        {"out.w", L, "out.w", "tied output: the output weight is the embedding"}};
    for (int i = 0; i < MAX_BLOCKS; i++, nb++) {
        row *x = &r[nb];
        snprintf(x->block, sizeof x->block, spec[i].fmt, spec[i].layer);
        x->layer = spec[i].layer;
        x->expected = x->layer < L ? (double)(L - (x->layer < 0 ? 0 : x->layer)) / L : NAN;
        x->note = spec[i].need && lnk_layout_find(lay, spec[i].need) < 0 ? spec[i].why : NULL;
        lnk_block b;
        x->n = 0;
        if (!x->note) {
            if (lnk_block_select(m, x->block, &b))
                die_at("block");
            x->n = b.n;
            lnk_block_free(&b);
        }
    }
    return nb;
}

/* The median seconds of `repeat` products (after one warm-up each) of every
 * timed block of r[0..nb) under the operator's current kind, round-robin:
 * x = the first coordinates of v (any fixed direction does), y of v's
 * length; t holds nb * repeat times. */
static void time_blocks(lnk_hessian *h, row *r, int nb, int repeat, const double *v, double *y,
                        double *t)
{
    for (int k = -1; k < repeat; k++) /* k = -1: the warm-ups */
        for (int i = 0; i < nb; i++) {
            if (r[i].note)
                continue;
            if (lnk_hessian_set_block(h, r[i].block))
                die_at("set_block");
            lnk_operator op = lnk_hessian_operator(h);
            if ((size_t)op.n != r[i].n)
                cli_die("block %s: the operator has %zu coordinates, the selection %zu",
                        r[i].block, (size_t)op.n, r[i].n);
            double t0 = lnk_now();
            int st = op.apply(op.ctx, v, y);
            double dt = lnk_now() - t0;
            if (st)
                die_at(lnk_op_kind_name(r[i].kind));
            if (k >= 0)
                t[(size_t)i * repeat + k] = dt;
        }
    for (int i = 0; i < nb; i++)
        r[i].seconds = r[i].note ? NAN : median(t + (size_t)i * repeat, repeat);
    for (int i = 0; i < nb; i++)
        r[i].over_full = r[i].seconds / r[0].seconds;
}

/* The rows of one model (size s, placement norm_pos): N_KINDS * MAX_BLOCKS. */
static int bench_one(const bench_lm_size *s, const char *norm_pos, int repeat, row *out)
{
    lnk_config c;
    lnk_model *m = bench_lm_model(s, norm_pos, "relu", "sinusoidal", "true", &c);
    size_t n = lnk_model_n_params(m);
    double *th = cli_alloc(n * sizeof(double)), *v = cli_alloc(n * sizeof(double));
    double *y = cli_alloc(n * sizeof(double));
    double *t = cli_alloc((size_t)MAX_BLOCKS * repeat * sizeof(double));
    if (lnk_model_init_params(m, th))
        die_at("init");
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) {
        lnk_error(LNK_ENOMEM, "gsl_rng_alloc failed");
        die_at("out of memory");
    }
    gsl_rng_set(rng, 12345);
    for (size_t i = 0; i < n; i++)
        v[i] = 2 * gsl_rng_uniform(rng) - 1;
    gsl_rng_free(rng);
    lnk_batch b;
    if (lnk_batch_synthetic(m, s->B, s->T, 1, &b))
        die_at("batch");
    lnk_hessian *h = lnk_hessian_alloc(m, th, &b, 1, NULL);
    if (!h)
        die_at("hessian");
    lnk_operator op = lnk_hessian_operator(h);
    if (op.apply(op.ctx, v, y)) /* the primal pass, kept from here on */
        die_at("hessian");

    int nr = 0;
    cpu_mark mark = cpu_now();
    double wall0 = lnk_now();
    for (int k = 0; k < N_KINDS; k++) {
        row *r = out + nr;
        int nb = make_blocks(m, s->L, r);
        if (lnk_hessian_set_kind(h, KINDS[k]))
            die_at("set_kind");
        for (int i = 0; i < nb; i++) {
            r[i].s = s;
            r[i].norm_pos = norm_pos;
            r[i].kind = KINDS[k];
        }
        time_blocks(h, r, nb, repeat, v, y, t);
        nr += nb;
    }
    double other = other_load(mark, lnk_now() - wall0);
    for (int i = 0; i < nr; i++)
        out[i].other = other;

    lnk_hessian_free(h);
    lnk_batch_free(&b);
    free(t);
    free(th);
    free(v);
    free(y);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return nr;
}

/* ---------------------------------------------------------------- output */

/* A double, or an empty field where NAN stands for none. */
static int csv_opt(lnk_csv *csv, double v)
{
    return isnan(v) ? lnk_csv_str(csv, "") : lnk_csv_double(csv, v);
}

static void write_csv(lnk_afile *af, const row *r, int nr, int repeat, double dgemm)
{
    static const char *const hdr[] = {
        "config", "norm_pos", "kind", "block", "block_params", "layer", "L", "seconds",
        "over_full", "expected", "repeats", "threads", "dgemm_gflops", "other_cpu_share", "note"};
    lnk_csv csv;
    if (lnk_csv_begin(&csv, af->f, hdr, (int)(sizeof hdr / sizeof hdr[0])))
        die_at("csv");
    int st = 0, threads = openblas_get_num_threads();
    for (int i = 0; i < nr && !st; i++) {
        const row *x = &r[i];
        st = lnk_csv_str(&csv, x->s->name) || lnk_csv_str(&csv, x->norm_pos) ||
             lnk_csv_str(&csv, lnk_op_kind_name(x->kind)) || lnk_csv_str(&csv, x->block) ||
             (x->note ? lnk_csv_str(&csv, "") : lnk_csv_int(&csv, (long long)x->n)) ||
             lnk_csv_int(&csv, x->layer) ||
             lnk_csv_int(&csv, x->s->L) || csv_opt(&csv, x->seconds) ||
             csv_opt(&csv, x->over_full) || csv_opt(&csv, x->expected) ||
             lnk_csv_int(&csv, x->note ? 0 : repeat) || lnk_csv_int(&csv, threads) ||
             lnk_csv_double(&csv, dgemm) || lnk_csv_double(&csv, x->other) ||
             lnk_csv_str(&csv, x->note ? x->note : "") || lnk_csv_end_row(&csv);
    }
    lnk_csv_free(&csv);
    if (st)
        die_at("csv");
    if (lnk_afile_commit(af))
        die_at("csv");
    cli_stdout_flush();
}

static void print_table(const row *r, int nr)
{
    report("%-3s %-4s %-10s %-17s %9s %5s %10s %9s %8s %6s\n", "cfg", "pos", "kind", "block",
           "params", "layer", "seconds", "over_full", "expected", "other");
    for (int i = 0; i < nr; i++) {
        const row *x = &r[i];
        if (x->note) {
            report("%-3s %-4s %-10s %-17s %9s %5d  (%s)\n", x->s->name, x->norm_pos,
                   lnk_op_kind_name(x->kind), x->block, "-", x->layer, x->note);
            continue;
        }
        report("%-3s %-4s %-10s %-17s %9zu %5d %10.5f %9.3f %8.3f %5.0f%%\n", x->s->name,
               x->norm_pos, lnk_op_kind_name(x->kind), x->block, x->n, x->layer, x->seconds,
               x->over_full, x->expected, 100 * x->other);
    }
    report("(layer: of the block's lowest tensor, -1 below layer 0, L above the last; "
           "over_full = seconds over the same kind's full product;\n expected = (L - l) / L "
           "(hessian.h), nan where not stated; other = CPU share taken by other "
           "processes\n during the model's runs: above a few %%, the times are not "
           "trustworthy)\n");
}

typedef struct {
    int threads, repeat, model;
    const char *out;
} args_t;

static const cli_opt opts[] = {
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1,
     .max = 100000, .help = "timed products per block and kind after 1 warm-up (their median "
                            "is reported)"},
    BENCH_OPT_MODEL(args_t, model, "the configurations of bench_model: a (d=128, V=1000), "
                                   "b (d=256, V=4000) or both"),
    BENCH_OPT_OUTPUT(args_t, out, "also write the results as CSV (atomically)"),
    {0}};

static void defaults(void *p) { *(args_t *)p = (args_t){0, 7, -1, NULL}; }

static const cli_cmd cmd = {
    .name = "bench_span",
    .usage = "[--threads N] [--repeat N] [--model a|b|all] [-o FILE]",
    .about = "Block products against the full one (lm, LayerNorm, Post-LN and Pre-LN, configs\n"
             "(a) and (b) of bench_model): H v and G v restricted to the embeddings, layer 0's,\n"
             "the middle and the last layer's ffn.w2, the final norm and the output weight, with\n"
             "the primal pass kept; a block's product skips the work below it (lnkit/hessian.h).",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_span");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out); /* -o -: the CSV alone on standard output */
    lnk_afile csv_file = {0}; /* opened first: a bad path fails before the runs */
    if (a.out && lnk_afile_open(&csv_file, cli_out(a.out, 0)))
        die_at("-o");
    if (a.threads > 0)
        openblas_set_num_threads(a.threads);
    report("lnkit %s bench_span: lm, layernorm, B=16 T=32; OpenBLAS threads = %d (%s); "
           "median of %d products after 1 warm-up, blocks round-robin\n",
           LNK_VERSION, openblas_get_num_threads(), a.threads > 0 ? "--threads" : "OpenBLAS default",
           a.repeat);
    report("OpenBLAS kernel %s (%s)\n", lnk_blas_kernel(), cli_blas_note());

    row res[BENCH_LM_SIZES * 2 * N_KINDS * MAX_BLOCKS];
    int nr = 0;
    for (int k = 0; k < BENCH_LM_SIZES; k++) {
        const bench_lm_size *s = bench_lm_size_at(k);
        if (a.model >= 0 && a.model != k)
            continue;
        report("  %s: d=%d h=%d L=%d d_ff=%d V=%d B=%d T=%d\n", s->name, s->d, s->h, s->L,
               s->d_ff, s->V, s->B, s->T);
        for (int p = 0; p < 2; p++) {
            cli_say("running %s %s ...\n", s->name, NORM_POS[p]);
            nr += bench_one(s, NORM_POS[p], a.repeat, res + nr);
        }
    }
    cpu_mark mark = cpu_now();
    double w0 = lnk_now(), dgemm = dgemm_rate(DGEMM_N);
    double other = other_load(mark, lnk_now() - w0);
    report("DGEMM %dx%dx%d: %.2f GFLOP/s (median of %d after 1 warm-up; other processes %.0f%% "
           "of the CPUs)\n", DGEMM_N, DGEMM_N, DGEMM_N, dgemm, DGEMM_REPEAT, 100 * other);
    print_table(res, nr);
    if (a.out) {
        write_csv(&csv_file, res, nr, a.repeat, dgemm);
        bench_meta(&cmd, &a, a.out);
    }
    return 0;
}
