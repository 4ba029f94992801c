/* Data-parallel H v and Lanczos over MPI ranks (make bench-mpi runs it with
 * 1 rank x 2 threads and 2 ranks x 1 thread through tools/bench_mpi.sh).
 *
 * usage: [mpirun -np P] bench_mpi [--src F] [--tgt F] [--rows N]
 *            [--size D,H,DFF[,L]] [--max-tokens N] [--repeat N] [--steps N]
 *            [--threads N] [-o FILE]
 *
 * A seq2seq model (6-6 unless --size gives L) on Multi30k (default data/multi30k/
 * val.{de,en}, all pairs; synthetic pairs if the files are absent), Post-LN,
 * Xavier, at a size this machine can afford (default d 64, h 4, d_ff 256),
 * the data set cut into length-sorted chunks of at most --max-tokens padded
 * tokens and sharded over the ranks by scored tokens.  Measured, median of
 * --repeat after a warm-up:
 *   t_hvp    seconds per distributed H v (all ranks, barrier to barrier);
 *   t_comm   seconds of its communication alone: allgather of x plus the
 *            ordered reduce-scatter of H v, 8 n bytes each way;
 *   bytes    bytes sent per H v, summed over ranks (and per rank);
 *   t_step   seconds per FULL Lanczos step (--steps steps), with t_orth
 *            the distributed reorthogonalisation part;
 *   basis_MB the Lanczos basis per rank for 80 steps (81 n / P doubles);
 *   imbalance the largest shard over the mean, in scored tokens and in
 *            padded positions (B (S + T) of its chunks: what is computed).
 * One line of CSV per run (rank 0) to -o (appended; the header row first when
 * the file is new or empty, so that runs build one table) and a table line
 * on stdout (on stderr with -o -: the CSV alone on stdout).  --rows keeps
 * the vocabularies of all pairs, unlike a study's first-N --rows (docs/cli.md):
 * the committed timings' model size depends on it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lnkit/lnkit.h"
#include "bench.h"

/* The CSV's columns (one row per run; tools/bench_mpi.sh reads them). */
#define CSV_HEADER                                                                                \
    "data,pairs,scored_tokens,chunks,d,d_ff,n_params,ranks,threads,t_hvp_s,t_comm_s,"             \
    "bytes_per_hvp,t_step_s,t_orth_s,basis_MB_80_steps,imbalance_scored,imbalance_padded\n"


/* A synthetic parallel corpus when Multi30k is absent: n lines of 8-20
 * tokens from a 400-word vocabulary. */
static void synth(const char *path, int n, unsigned seed)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_mpi: cannot write %s\n", path);
        lnk_comm_abort(2), exit(2);
    }
    unsigned s = seed;
    for (int i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        int len = 8 + (int)((s >> 16) % 13);
        for (int k = 0; k < len; k++) {
            s = s * 1103515245u + 12345u;
            fprintf(f, "%sw%u", k ? " " : "", (s >> 16) % 400);
        }
        fputc('\n', f);
    }
    fclose(f);
}

typedef struct {
    const char *src, *tgt, *size, *out;
    int rows, repeat, steps, threads;
    long max_tokens;
} args_t;

static const cli_opt opts[] = {
    {.type = CLI_STR, .name = "src", .arg = "FILE", CLI_AT(args_t, src), .flags = CLI_READS,
     .help = "source text (synthetic pairs when it is absent)"},
    {.type = CLI_STR, .name = "tgt", .arg = "FILE", CLI_AT(args_t, tgt), .flags = CLI_READS,
     .help = "target text"},
    {.type = CLI_INT, .name = "rows", .arg = "N", CLI_AT(args_t, rows), .min = 0, .max = 1 << 24,
     .help = "sentence pairs used, the first N, 0: all (the vocabularies stay those of all pairs, "
             "unlike a study's --rows)"},
    {.type = CLI_STR, .name = "size", .arg = "D,H,DFF[,L]", CLI_AT(args_t, size),
     .help = "width, heads, feed-forward width and depth of the seq2seq model"},
    {.type = CLI_LONG, .name = "max-tokens", .arg = "N", CLI_AT(args_t, max_tokens), .min = 16,
     .max = 1L << 40, .help = "padded tokens per chunk at most"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1,
     .max = 100000, .help = "timed products after a warm-up (their median is reported)"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(args_t, steps), .min = 2,
     .max = 100000, .help = "Lanczos steps timed"},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    BENCH_OPT_OUTPUT(args_t, out, "append a CSV row of the run (after the header row if FILE is "
                                  "new or empty)"),
    {0}};

static void defaults(void *p)
{
    *(args_t *)p = (args_t){.src = "data/multi30k/val.de", .tgt = "data/multi30k/val.en",
                            .size = "64,4,256,6", .repeat = 5, .steps = 20, .max_tokens = 2048};
}

static const cli_cmd cmd = {
    .name = "bench_mpi",
    .usage = "[--src F] [--tgt F] [--rows N] [--size D,H,DFF[,L]] [--max-tokens N]\n"
             "[--repeat N] [--steps M] [--threads N] [-o FILE]   (under mpirun -np P)",
    .about = "Data-parallel H v and Lanczos over the ranks of an MPI job: a seq2seq model (6-6\n"
             "unless --size gives L) on Multi30k, the data set in length-sorted chunks sharded by\n"
             "scored tokens.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

/* The pairs (Multi30k, or synthetic pairs when --src is absent) cut into
 * chunks of at most --max-tokens padded tokens. */
typedef struct {
    const char *data; /* "multi30k" or "synthetic" */
    lnk_corpus c;
    lnk_vocab *vs, *vt;
    lnk_pairs p;
    lnk_batch *chunks;
    int n_chunks;
} pairs_t;

static void load_pairs(const args_t *a, int me, pairs_t *D)
{
    const char *src = a->src, *tgt = a->tgt;
    char sp[64], tp[64];
    D->data = "multi30k";
    FILE *probe = fopen(src, "r");
    if (probe) {
        fclose(probe);
    } else {
        /* every rank writes its own copy: no shared file system assumed */
        snprintf(sp, sizeof sp, "/tmp/lnk_bench_mpi_%d_%d.src", (int)getpid(), me);
        snprintf(tp, sizeof tp, "/tmp/lnk_bench_mpi_%d_%d.tgt", (int)getpid(), me);
        synth(sp, 1000, 1);
        synth(tp, 1000, 2);
        src = sp, tgt = tp, D->data = "synthetic";
    }
    CLI_CK(lnk_corpus_read(src, tgt, &D->c));
    if (!strcmp(D->data, "synthetic"))
        remove(sp), remove(tp);
    CLI_CK(lnk_corpus_vocabs(&D->c, 0, 1, 0, &D->vs, &D->vt));
    CLI_CK(lnk_pairs_make(&D->c, D->vs, D->vt, NULL, &D->p));
    if (a->rows > 0 && a->rows < D->p.n)
        D->p.n = a->rows; /* the first N pairs (the arrays keep their size) */
    CLI_CK(lnk_pairs_batches(&D->p, (size_t)a->max_tokens, &D->chunks, &D->n_chunks));
}

static void pairs_free(pairs_t *D)
{
    lnk_batches_free(D->chunks, D->n_chunks);
    lnk_pairs_free(&D->p);
    lnk_vocab_free(D->vs);
    lnk_vocab_free(D->vt);
    lnk_corpus_free(&D->c);
}

/* Load balance: the largest shard (ranks r's chunks first[r] .. first[r+1])
 * against the mean, in scored tokens (N in all) and in padded positions
 * (what the GEMMs actually compute). */
static void balance(lnk_model *m, const lnk_batch *chunks, const int *first, int P, size_t N,
                    double *imb_sc, double *imb_pad)
{
    double max_sc = 0, max_pad = 0, all_pad = 0;
    for (int r = 0; r < P; r++) {
        double sc = 0, pad = 0;
        for (int k = first[r]; k < first[r + 1]; k++) {
            sc += (double)lnk_batch_n_scored(m, &chunks[k]);
            pad += (double)chunks[k].B * (chunks[k].S + chunks[k].T);
        }
        max_sc = sc > max_sc ? sc : max_sc;
        max_pad = pad > max_pad ? pad : max_pad;
        all_pad += pad;
    }
    *imb_sc = max_sc * P / (double)N, *imb_pad = max_pad * P / all_pad;
}

/* What is measured (see the top of the file). */
typedef struct {
    double t_hvp, t_comm, bytes, bytes_rank, t_step, t_orth;
} timing;

/* H v on this rank's slice (cnt entries from off of n): the median of
 * `repeat` products after a warm-up, the bytes sent per product, and the
 * communication of a product alone. */
static void time_hvp(lnk_operator *op, size_t off, size_t cnt, size_t n, int P, int repeat,
                     timing *T)
{
    double *x = malloc(sizeof(double) * cnt), *y = malloc(sizeof(double) * cnt);
    double *full = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * (size_t)repeat);
    double *tc = malloc(sizeof(double) * (size_t)repeat);
    size_t *ct = malloc(sizeof(size_t) * 2 * (size_t)P);
    if (!x || !y || !full || !t || !tc || !ct) {
        lnk_error(LNK_ENOMEM, "out of memory");
        cli_die_lib();
    }
    for (size_t i = 0; i < cnt; i++)
        x[i] = ((off + i) * 2654435761u) % 3 ? 1.0 : -1.0;
    CLI_CK(op->apply(op->ctx, x, y)); /* warm-up */
    double b0 = lnk_comm_bytes_sent();
    for (int r = 0; r < repeat; r++) {
        CLI_CK(lnk_comm_barrier());
        double t0 = lnk_now();
        CLI_CK(op->apply(op->ctx, x, y));
        CLI_CK(lnk_comm_barrier());
        t[r] = lnk_now() - t0;
    }
    T->bytes_rank = (lnk_comm_bytes_sent() - b0) / repeat, T->bytes = T->bytes_rank;
    CLI_CK(lnk_comm_sum(&T->bytes, 1));
    /* the communication of an apply alone */
    lnk_comm_split(n, P, ct, ct + P);
    for (int r = 0; r < repeat; r++) {
        CLI_CK(lnk_comm_barrier());
        double t0 = lnk_now();
        CLI_CK(lnk_comm_allgather(x, full, ct, ct + P));
        CLI_CK(lnk_comm_reduce_scatter(full, y, ct, ct + P));
        CLI_CK(lnk_comm_barrier());
        tc[r] = lnk_now() - t0;
    }
    T->t_hvp = median(t, repeat), T->t_comm = median(tc, repeat);
    free(x), free(y), free(full), free(t), free(tc), free(ct);
}

/* Lanczos, FULL reorthogonalisation on slices: seconds per step and of its
 * reorthogonalisation. */
static void time_lanczos(lnk_operator *op, size_t cnt, int steps, timing *T)
{
    lnk_lanczos *lz = lnk_lanczos_alloc(cnt, steps, LNK_LANCZOS_FULL);
    if (!lz)
        cli_die_lib();
    CLI_CK(lnk_lanczos_distribute(lz, op->group));
    CLI_CK(lnk_lanczos_start(lz, NULL, 7));
    CLI_CK(lnk_comm_barrier());
    double t0 = lnk_now();
    CLI_CK(lnk_lanczos_run(lz, op, steps));
    CLI_CK(lnk_comm_barrier());
    T->t_step = (lnk_now() - t0) / lz->steps, T->t_orth = lz->t_orth / lz->steps;
    lnk_lanczos_free(lz);
}

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_mpi");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out);
    cli_setup_done();
    int P = lnk_comm_size(), me = lnk_comm_rank();
    const char *size = a.size, *csv = a.out;
    if (a.threads > 0)
        lnk_set_blas_threads(a.threads);
    int d, h, dff, L = 6;
    if (sscanf(size, "%d,%d,%d,%d", &d, &h, &dff, &L) < 3)
        cli_die("--size: expected D,H,DFF[,L], got '%s'", size);
    pairs_t D;
    load_pairs(&a, me, &D);
    lnk_config cfg;
    CLI_CK(bench_s2s_config(&cfg, "post", d, h, dff, L, lnk_vocab_size(D.vs),
                            lnk_vocab_size(D.vt)));
    lnk_model *m = lnk_model_alloc(&cfg);
    if (!m)
        cli_die_lib();
    size_t n = lnk_model_n_params(m);
    lnk_dataset ds; /* takes the chunks over; chunks[] stays readable for the balance below */
    lnk_dataset_init(&ds);
    CLI_CK(lnk_dataset_add_chunks(&ds, m, D.chunks, D.n_chunks));
    size_t N = ds.n_scored;
    int *first = malloc(sizeof(int) * ((size_t)P + 1));
    double *th = malloc(sizeof(double) * n);
    if (!first || !th) {
        lnk_error(LNK_ENOMEM, "out of memory (%zu parameters)", n);
        cli_die_lib();
    }
    CLI_CK(lnk_model_init_params(m, th));
    CLI_CK(lnk_shard_chunks(m, D.chunks, D.n_chunks, P, first));
    size_t mine_tokens = 0;
    for (int k = first[me]; k < first[me + 1]; k++)
        mine_tokens += lnk_batch_n_scored(m, &D.chunks[k]);
    double imb_sc, imb_pad;
    balance(m, D.chunks, first, P, N, &imb_sc, &imb_pad);
    CLI_CK(lnk_dataset_shard(&ds, m, lnk_comm_world()));
    lnk_hessian *hs = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    if (!hs)
        cli_die_lib();
    lnk_operator op = lnk_hessian_operator(hs);
    size_t off, cnt;
    lnk_hessian_slice(hs, &off, &cnt);
    timing T;
    time_hvp(&op, off, cnt, n, P, a.repeat, &T);
    time_lanczos(&op, cnt, a.steps, &T);
    double basis_mb = 81.0 * (double)cnt * 8 / 1048576.0;
    if (me == 0) {
        report("bench_mpi: %s, %d pairs, %d chunks (<= %ld padded tokens), %zu scored tokens "
               "(rank 0: %zu), %d-%d d %d h %d d_ff %d, %zu parameters\n", D.data, D.p.n,
               D.n_chunks, a.max_tokens, N, mine_tokens, cfg.L_enc, cfg.L_dec, d, h, dff, n);
        report("%5s %7s %9s %9s %12s %12s %9s %9s %9s %9s\n", "ranks", "threads", "t_hvp_s",
               "t_comm_s", "MB_per_hvp", "MB_per_rank", "t_step_s", "t_orth_s", "basis_MB",
               "imbalance");
        report("%5d %7d %9.4f %9.5f %12.2f %12.2f %9.4f %9.5f %9.1f %9.3f\n", P,
               lnk_blas_threads(), T.t_hvp, T.t_comm, T.bytes / 1e6, T.bytes_rank / 1e6,
               T.t_step, T.t_orth, basis_mb, imb_pad);
        if (csv) {
            FILE *f = cli_fopen(csv, "a");
            struct stat st; /* a new or empty file (or a stream) starts with the header row */
            if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
                fputs(CSV_HEADER, f);
            fprintf(f, "%s,%d,%zu,%d,%d,%d,%zu,%d,%d,%.6f,%.6f,%.0f,%.6f,%.6f,%.3f,%.4f,%.4f\n",
                    D.data, D.p.n, N, D.n_chunks, d, dff, n, P, lnk_blas_threads(), T.t_hvp,
                    T.t_comm, T.bytes, T.t_step, T.t_orth, basis_mb, imb_sc, imb_pad);
            cli_fclose(f, csv);
            bench_meta(&cmd, &a, csv); /* the run that appended the last row */
        }
    }
    free(first), free(th);
    lnk_hessian_free(hs);
    lnk_model_free(m);
    lnk_config_clear(&cfg);
    lnk_dataset_free(&ds);
    pairs_free(&D);
    lnk_comm_finalize();
    return 0;
}
