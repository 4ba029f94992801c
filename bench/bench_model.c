/* Benchmark of lnkit's loss, gradient and Hessian-vector product (task lm,
 * LayerNorm, Post-LN and Pre-LN) against the machine's DGEMM rate; on config
 * b also a row per placement and block part of MODEL.md §2-3 (issue 32):
 * peri, out, deepnorm, mix, and on Pre-LN gelu, swiglu, learned, rope and no
 * positions, bias-free blocks (same d, d_ff; forward, gradient and H v, the
 * median of --variant-repeat runs, 7 by default).
 *
 * usage: bench_model [--threads N] [--repeat N] [--variant-repeat N] [--model a|b|all]
 *                    [-o FILE]
 *
 *   a: d=128 h=4 L=6 d_ff=512  V=1000 B=16 T=32
 *   b: d=256 h=4 L=6 d_ff=1024 V=4000 B=16 T=32
 * T is the number of input positions: the synthetic tgt rows hold T+1 tokens.
 *
 * For each (config, norm_pos): median wall time over --repeat runs (after 2
 * warm-ups) of the forward pass (lnk_model_eval, grad = NULL), the gradient
 * (lnk_model_eval with grad) and one HVP (lnk_model_hvp, grad = NULL); the
 * achieved GFLOP/s from the analytic GEMM flop counts below; the same run's
 * DGEMM rate (cblas_dgemm 2000^3, median of 5 after a warm-up, same threads);
 * lnk_workspace_bytes and the peak resident set size.  With the primal pass
 * kept (lnk_model_hvp_prepare once): H v (lnk_model_hvp_apply), the
 * Gauss-Newton product G v (lnk_model_ggn_apply: tangent forward, H_out,
 * plain reverse) and the functional part's H v and G v together (what
 * F v = H v - G v costs: the tangent pass plus one reverse pass).
 *
 * Programs print and exit; on any lnk_ failure: "bench_model: <message>", exit 2. */
#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "front/front.h"
#include "lnkit/config.h"
#include "lnkit/error.h"
#include "lnkit/io.h"
#include "lnkit/model.h"
#include "bench.h"

#define WARMUP 2

typedef bench_lm_size size_cfg; /* configs a and b: bench.h */

/* A row's model: its label (the CSV's pos column) and keys.  full: every
 * measure (the two base rows); else forward, gradient and H v only. */
typedef struct {
    const char *label, *norm_pos, *activation, *pos, *bias;
    int full;
} variant;

static const variant BASE[] = {
    {"post", "post", "relu", "sinusoidal", "true", 1},
    {"pre", "pre", "relu", "sinusoidal", "true", 1},
};
static const variant PARTS[] = {
    {"peri", "peri", "relu", "sinusoidal", "true", 0},
    {"out", "out", "relu", "sinusoidal", "true", 0},
    {"deepnorm", "deepnorm", "relu", "sinusoidal", "true", 0},
    {"mix", "mix", "relu", "sinusoidal", "true", 0},
    {"pre+gelu", "pre", "gelu", "sinusoidal", "true", 0},
    {"pre+swiglu", "pre", "swiglu", "sinusoidal", "true", 0},
    {"pre+learned", "pre", "relu", "learned", "true", 0},
    {"pre+rope", "pre", "relu", "rope", "true", 0},
    {"pre+nopos", "pre", "relu", "none", "true", 0},
    {"pre+nobias", "pre", "relu", "sinusoidal", "false", 0},
};
#define N_PARTS ((int)(sizeof PARTS / sizeof PARTS[0]))

/* ------------------------------------------------------------ flop counts
 *
 * Only the GEMM flops are counted (2 per multiply-add); norms, softmax, ReLU and
 * the cross-entropy are O(R d) or O(R V) elementwise work and left out.  With
 * R = B*T rows and d_k = d/h, one forward pass costs F = F_lin + F_att:
 *   F_lin = 2 R (4 d^2 + 2 d d_ff) L     Wq, Wk, Wv, Wo and W1, W2 of every block
 *                                        (SwiGLU: 3 d d_ff, its gate W3 too)
 *         + 2 R d V                      the output layer z W_out
 *   F_att = 2 * 2 B h T^2 d_k L          Q K^T and A V per (row, head); lnkit computes
 *                                        the full T x T scores (the causal half is masked
 *                                        after the product), so no factor 1/2.
 * Gradient = forward + reverse.  The reverse pass of a linear map y = x W does
 * dx = dy W^T and dW = x^T dy, each as many flops as x W; the attention core's
 * reverse does dA = dctx V^T, dV = A^T dctx, dQ = dS K, dK = dS^T Q (4 products,
 * 2x its forward).  So grad = F + 2 F_lin + 2 F_att = 3 F.
 * HVP (forward-over-reverse, grad = NULL: the primal dW products are skipped):
 *   forward                                     F_lin +   F_att
 *   tangent forward: xdot W + x Wdot;
 *     attention R{S} (2 products), R{ctx} (2)   2 F_lin + 2 F_att
 *   reverse, primal adjoints dx only;
 *     attention core as in the gradient         1 F_lin + 2 F_att
 *   reverse tangents: R{dx} = R{dy} W^T + dy Wdot^T,
 *     R{dW} = xdot^T dy + x^T R{dy};
 *     attention: dA, R{dA} (2), R{dV} (2),
 *     R{dQ} (2), R{dK} (2) = 9 products          4 F_lin + 4.5 F_att
 *   total                                       8 F_lin + 9.5 F_att
 * (src/model/{stack,sublayer}.c and src/layers/{linear,attention}.c do exactly these
 * calls; the other parts of issue 32 add elementwise work only: norms, GELU,
 * the SwiGLU gate, rotations, position rows.) */
static double flops_lin_v(const size_cfg *s, int glu)
{
    double R = (double)s->B * s->T, d = s->d;
    return 2 * R * (4 * d * d + (2 + glu) * d * s->d_ff) * s->L + 2 * R * d * s->V;
}

static double flops_att(const size_cfg *s)
{
    double dk = (double)s->d / s->h, T = s->T;
    return 2.0 * 2.0 * s->B * s->h * T * T * dk * s->L;
}

/* The counts of a row (glu: SwiGLU's third matrix). */
static double flops_fwd_v(const size_cfg *s, int glu) { return flops_lin_v(s, glu) + flops_att(s); }
static double flops_hvp_v(const size_cfg *s, int glu)
{
    return 8 * flops_lin_v(s, glu) + 9.5 * flops_att(s);
}
static double flops_fwd(const size_cfg *s) { return flops_fwd_v(s, 0); }
static double flops_grad(const size_cfg *s) { return 3 * flops_fwd(s); }
static double flops_hvp(const size_cfg *s) { return flops_hvp_v(s, 0); }

/* ---------------------------------------------------------------- helpers */

static _Noreturn void die_at(const char *what) { cli_die("%s: %s", what, lnk_errmsg()); }

static double maxrss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* ---------------------------------------------------------------- one run */

typedef struct {
    const size_cfg *s;
    const variant *var;
    size_t n_params;
    double loss;
    double fwd_s, grad_s, hvp_s, kept_s; /* kept: H v with the primal pass kept */
    double ggn_s, fun_s;   /* G v, and H v with G v (F v), with the primal pass kept */
    double ws_mb, rss_mb;
    double other;   /* CPU share used by other processes during the timed runs */
} result;

static int glu(const result *x) { return !strcmp(x->var->activation, "swiglu"); }

/* The lm model of size s and variant var (LayerNorm, Xavier, seed 0). */
static lnk_model *make_model(const size_cfg *s, const variant *var, lnk_config *c)
{
    return bench_lm_model(s, var->norm_pos, var->activation, var->pos, var->bias, c);
}

/* The median seconds of `repeat` runs (after WARMUP) of measure kind: 0
 * forward, 1 gradient, 2 H v, and with the primal pass kept 3 H v, 4 G v,
 * 5 H v and G v. */
static double time_kind(int kind, int repeat, double *t, lnk_workspace *ws, const double *th,
                        const lnk_batch *b, const double *v, double *g, double *hv, double *gv,
                        double *loss)
{
    for (int r = -WARMUP; r < repeat; r++) {
        double t0 = lnk_now();
        int st;
        if (kind == 0)
            st = lnk_model_eval(ws, th, b, loss, NULL, NULL);
        else if (kind == 1)
            st = lnk_model_eval(ws, th, b, loss, g, NULL);
        else if (kind == 2)
            st = lnk_model_hvp(ws, th, b, v, hv, loss, NULL);
        else if (kind == 3)
            st = lnk_model_hvp_apply(ws, v, hv);
        else if (kind == 4)
            st = lnk_model_ggn_apply(ws, v, NULL, gv);
        else
            st = lnk_model_ggn_apply(ws, v, hv, gv);
        double dt = lnk_now() - t0;
        if (st)
            die_at(kind == 0 ? "forward" : kind == 1 ? "gradient" : kind < 4 ? "hvp" : "ggn");
        if (r >= 0)
            t[r] = dt;
    }
    return median(t, repeat);
}

static void bench_one(const size_cfg *s, const variant *var, int repeat, result *res)
{
    lnk_config c;
    lnk_model *m = make_model(s, var, &c);
    size_t n = lnk_model_n_params(m);
    double *th = cli_alloc(n * sizeof(double)), *g = cli_alloc(n * sizeof(double));
    double *v = cli_alloc(n * sizeof(double)), *hv = cli_alloc(n * sizeof(double));
    double *gv = cli_alloc(n * sizeof(double));
    if (lnk_model_init_params(m, th))
        die_at("init");
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) {
        lnk_error(LNK_ENOMEM, "gsl_rng_alloc failed");
        die_at("out of memory");
    }
    gsl_rng_set(rng, 12345);
    for (size_t i = 0; i < n; i++)
        v[i] = 2 * gsl_rng_uniform(rng) - 1; /* any fixed direction does */
    gsl_rng_free(rng);
    lnk_batch b;
    if (lnk_batch_synthetic(m, s->B, s->T, 1, &b))
        die_at("batch");
    /* stored tgt rows hold T+1 tokens */
    lnk_workspace *ws = lnk_workspace_alloc(m, s->B, 0, s->T + 1, LNK_WS_HVP);
    if (!ws)
        die_at("workspace");

    double *t = cli_alloc((size_t)repeat * sizeof(double)), loss = 0;
    double *out[6] = {&res->fwd_s, &res->grad_s, &res->hvp_s, &res->kept_s, &res->ggn_s,
                      &res->fun_s};
    cpu_mark mark = cpu_now();
    double wall0 = lnk_now();
    for (int kind = 0; kind < (var->full ? 6 : 3); kind++) {
        if (kind == 3 && lnk_model_hvp_prepare(ws, th, &b, &loss, NULL))
            die_at("hvp_prepare");
        *out[kind] = time_kind(kind, repeat, t, ws, th, &b, v, g, hv, gv, &loss);
    }
    res->other = other_load(mark, lnk_now() - wall0);
    res->s = s;
    res->var = var;
    res->n_params = n;
    res->loss = loss;
    res->ws_mb = lnk_workspace_bytes(ws) / 1048576.0;
    res->rss_mb = maxrss_mb();

    free(t);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    free(th);
    free(g);
    free(v);
    free(hv);
    free(gv);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* ---------------------------------------------------------------- output */

/* A double, or an empty field for a measure the row did not take. */
static int csv_opt(lnk_csv *csv, int have, double v)
{
    return have ? lnk_csv_double(csv, v) : lnk_csv_str(csv, "");
}

/* The row's GFLOP/s of forward, gradient and H v. */
static void rates(const result *x, double *gf, double *gg, double *gh)
{
    double f = flops_fwd_v(x->s, glu(x));
    *gf = f / x->fwd_s / 1e9;
    *gg = 3 * f / x->grad_s / 1e9;
    *gh = flops_hvp_v(x->s, glu(x)) / x->hvp_s / 1e9;
}

static void write_csv(lnk_afile *af, const result *r, int nr, double dgemm)
{
    static const char *const hdr[] = {
        "config", "pos", "fwd_s", "grad_s", "hvp_s", "grad_over_fwd", "hvp_over_grad",
        "fwd_gflops", "grad_gflops", "hvp_gflops", "dgemm_gflops", "grad_frac_peak",
        "hvp_frac_peak", "workspace_mb", "maxrss_mb", "hvp_kept_s", "kept_over_hvp",
        "ggn_kept_s", "ggn_over_kept", "hvp_ggn_kept_s", "hvp_ggn_over_kept", "other_cpu_share",
        "norm_pos", "activation", "pos_enc", "bias", "hvp_gflop"};
    lnk_csv csv;
    if (lnk_csv_begin(&csv, af->f, hdr, (int)(sizeof hdr / sizeof hdr[0])))
        die_at("csv");
    int st = 0;
    for (int i = 0; i < nr && !st; i++) {
        const result *x = &r[i];
        const variant *v = x->var;
        double gf, gg, gh;
        rates(x, &gf, &gg, &gh);
        st = lnk_csv_str(&csv, x->s->name) || lnk_csv_str(&csv, v->label) ||
             lnk_csv_double(&csv, x->fwd_s) || lnk_csv_double(&csv, x->grad_s) ||
             lnk_csv_double(&csv, x->hvp_s) || lnk_csv_double(&csv, x->grad_s / x->fwd_s) ||
             lnk_csv_double(&csv, x->hvp_s / x->grad_s) || lnk_csv_double(&csv, gf) ||
             lnk_csv_double(&csv, gg) || lnk_csv_double(&csv, gh) ||
             lnk_csv_double(&csv, dgemm) || lnk_csv_double(&csv, gg / dgemm) ||
             lnk_csv_double(&csv, gh / dgemm) || lnk_csv_double(&csv, x->ws_mb) ||
             lnk_csv_double(&csv, x->rss_mb) || csv_opt(&csv, v->full, x->kept_s) ||
             csv_opt(&csv, v->full, x->kept_s / x->hvp_s) || csv_opt(&csv, v->full, x->ggn_s) ||
             csv_opt(&csv, v->full, x->ggn_s / x->kept_s) || csv_opt(&csv, v->full, x->fun_s) ||
             csv_opt(&csv, v->full, x->fun_s / x->kept_s) || lnk_csv_double(&csv, x->other) ||
             lnk_csv_str(&csv, v->norm_pos) || lnk_csv_str(&csv, v->activation) ||
             lnk_csv_str(&csv, v->pos) || lnk_csv_str(&csv, v->bias) ||
             lnk_csv_double(&csv, flops_hvp_v(x->s, glu(x)) / 1e9) || lnk_csv_end_row(&csv);
    }
    lnk_csv_free(&csv);
    if (st)
        die_at("csv");
    if (lnk_afile_commit(af))
        die_at("csv");
    cli_stdout_flush();
}

static void print_table(const result *r, int nr, double dgemm)
{
    report("%-3s %-11s %9s %9s %9s %9s %9s %6s %8s %8s %7s %7s %7s %6s %6s %6s %8s %8s %6s "
           "%9s %6s %9s %6s\n",
           "cfg", "pos", "n_params", "fwd_s", "grad_s", "hvp_s", "kept_s", "kept/h", "grad/fwd",
           "hvp/grad", "fwd_GF", "grad_GF", "hvp_GF", "fwd%", "grad%", "hvp%", "ws_MB", "rss_MB",
           "other", "ggn_s", "ggn/k", "hg_s", "hg/k");
    for (int i = 0; i < nr; i++) {
        const result *x = &r[i];
        double gf, gg, gh, nan = x->var->full ? 1 : NAN;
        rates(x, &gf, &gg, &gh);
        report("%-3s %-11s %9zu %9.5f %9.5f %9.5f %9.5f %6.3f %8.2f %8.2f %7.2f %7.2f %7.2f "
               "%5.1f%% %5.1f%% %5.1f%% %8.1f %8.1f %5.0f%% %9.5f %6.3f %9.5f %6.3f\n",
               x->s->name, x->var->label, x->n_params, x->fwd_s, x->grad_s, x->hvp_s,
               nan * x->kept_s, nan * x->kept_s / x->hvp_s, x->grad_s / x->fwd_s,
               x->hvp_s / x->grad_s, gf, gg, gh, 100 * gf / dgemm, 100 * gg / dgemm,
               100 * gh / dgemm, x->ws_mb, x->rss_mb, 100 * x->other, nan * x->ggn_s,
               nan * x->ggn_s / x->kept_s, nan * x->fun_s, nan * x->fun_s / x->kept_s);
    }
    report("(kept_s = H v reusing the primal pass (lnk_model_hvp_apply); GF = GFLOP/s of the "
           "analytic GEMM flops of the full H v;\n %% = fraction of the DGEMM rate; ws_MB = "
           "lnk_workspace_bytes; rss_MB = peak resident set of the process so far;\n"
           " other = CPU share taken by other processes during the row's runs: above a few %%, "
           "the times are not trustworthy;\n ggn_s = G v, hg_s = H v and G v together (F v = "
           "H v - G v), both with the primal pass kept; /k = over kept_s; nan: not measured\n"
           " on the rows of issue 32's parts, whose H v GFLOP = 8 F_lin + 9.5 F_att, F_lin with "
           "SwiGLU's third matrix)\n");
    /* the project's targets */
    int hvp_ok = 1, frac_ok = 1, have_b = 0, parts_ok = 1, have_parts = 0;
    for (int i = 0; i < nr; i++) {
        const result *x = &r[i];
        double gf, gg, gh;
        rates(x, &gf, &gg, &gh);
        if (x->hvp_s > 3 * x->grad_s)
            hvp_ok = 0;
        if (strcmp(x->s->name, "b") == 0 && x->var->full) {
            have_b = 1;
            if (gg < 0.5 * dgemm)
                frac_ok = 0;
        }
        if (!x->var->full) {
            have_parts = 1;
            if (gh < 0.6 * dgemm)
                parts_ok = 0;
        }
    }
    report("target hvp_s <= 3 grad_s (every row): %s\n", hvp_ok ? "met" : "MISSED");
    if (have_b)
        report("target grad >= 50%% of DGEMM rate on b: %s\n", frac_ok ? "met" : "MISSED");
    if (have_parts)
        report("target H v >= 60%% of DGEMM rate on every placement and part row (b): %s\n",
               parts_ok ? "met" : "MISSED");
}

typedef struct {
    int threads, repeat, variant_repeat, model;
    const char *out;
} args_t;

static const cli_opt opts[] = {
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1,
     .max = 100000, .help = "timed runs per measure after 2 warm-ups (their median is reported)"},
    {.type = CLI_INT, .name = "variant-repeat", .arg = "N", CLI_AT(args_t, variant_repeat),
     .min = 1, .max = 100000, .help = "the same for the rows of the placements and parts on b"},
    BENCH_OPT_MODEL(args_t, model, "the configurations: a (d=128, V=1000), b (d=256, V=4000; "
                                   "with the placements' and parts' rows) or both"),
    BENCH_OPT_OUTPUT(args_t, out, "also write the results as CSV (atomically)"),
    {0}};

static void defaults(void *p) { *(args_t *)p = (args_t){0, 10, 7, -1, NULL}; }

static const cli_cmd cmd = {
    .name = "bench_model",
    .usage = "[--threads N] [--repeat N] [--variant-repeat N] [--model a|b|all] [-o FILE]",
    .about = "Loss, gradient and Hessian-vector product (lm, LayerNorm, Post-LN and Pre-LN) on\n"
             "configs (a) and (b), against the machine's DGEMM rate; on (b) also a row per\n"
             "placement and block part of docs/MODEL.md sections 2-3.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_model");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out); /* -o -: the CSV alone on standard output */
    int threads = a.threads, repeat = a.repeat, vrepeat = a.variant_repeat;
    const char *csv = a.out;
    /* the -o file, opened before the (long) runs so that a bad path fails at
     * once; a failure (cli_die) removes its temporary file */
    lnk_afile csv_file = {0};
    if (csv && lnk_afile_open(&csv_file, cli_out(csv, 0)))
        die_at("-o");
    if (threads > 0)
        openblas_set_num_threads(threads);
    report("lnkit %s bench_model: lm, layernorm, B=16 T=32; OpenBLAS threads = %d (%s); "
           "median of %d runs after %d warm-ups\n",
           LNK_VERSION, openblas_get_num_threads(), threads > 0 ? "--threads" : "OpenBLAS default",
           repeat, WARMUP);
    report("OpenBLAS kernel %s (%s)\n", lnk_blas_kernel(), cli_blas_note());

    /* smallest config first and DGEMM last, so that ru_maxrss after a config is
     * (to allocator slack) that config's own peak. */
    result res[BENCH_LM_SIZES * 2 + N_PARTS];
    int nr = 0;
    for (int k = 0; k < BENCH_LM_SIZES; k++) {
        const size_cfg *s = bench_lm_size_at(k);
        if (a.model >= 0 && a.model != k)
            continue;
        report("  %s: d=%d h=%d L=%d d_ff=%d V=%d B=%d T=%d; GFLOP fwd %.3f grad %.3f hvp %.3f\n",
               s->name, s->d, s->h, s->L, s->d_ff, s->V, s->B, s->T, flops_fwd(s) / 1e9,
               flops_grad(s) / 1e9, flops_hvp(s) / 1e9);
        for (int p = 0; p < 2; p++) {
            cli_say("running %s %s ...\n", s->name, BASE[p].label);
            bench_one(s, &BASE[p], repeat, &res[nr++]);
        }
        if (strcmp(s->name, "b"))
            continue;
        report("  %s, SwiGLU: GFLOP fwd %.3f hvp %.3f (the other parts: as above)\n", s->name,
               flops_fwd_v(s, 1) / 1e9, flops_hvp_v(s, 1) / 1e9);
        for (int p = 0; p < N_PARTS; p++) {
            cli_say("running %s %s ...\n", s->name, PARTS[p].label);
            bench_one(s, &PARTS[p], vrepeat, &res[nr++]);
        }
    }
    cpu_mark mark = cpu_now();
    double w0 = lnk_now(), dgemm = dgemm_rate(DGEMM_N);
    double other = other_load(mark, lnk_now() - w0);
    report("DGEMM %dx%dx%d: %.2f GFLOP/s on OpenBLAS kernel %s (median of %d after 1 warm-up; "
           "other processes %.0f%% of the CPUs)\n", DGEMM_N, DGEMM_N, DGEMM_N, dgemm,
           lnk_blas_kernel(), DGEMM_REPEAT, 100 * other);
    print_table(res, nr, dgemm);
    if (csv) {
        write_csv(&csv_file, res, nr, dgemm);
        bench_meta(&cmd, &a, csv);
    }
    return 0;
}
