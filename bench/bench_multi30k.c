/* Memory and time of one Hessian-vector product of the seq2seq model on
 * Multi30k (the reference experiment of issue 6), measured on one chunk and
 * extrapolated to the whole data set.
 *
 * usage: bench_multi30k [--src F] [--tgt F] [--rows N] [--repeat N]
 *                       [--sizes D,H,DFF[,L];...] [--norm-pos post|pre] [--threads N]
 *        bench_multi30k --all [--max-tokens N] [--products K] [--cache-mb MB] [-o F] ...
 *
 * --all: no extrapolation: the data-set Hessian of every pair, in
 * length-sorted chunks of at most --max-tokens padded tokens (default 512,
 * the Multi30k study's), and K (default 2) products H v over all of them,
 * each timed: the first runs every chunk's primal pass (and keeps those the
 * cache budget holds), the later ones reuse the kept passes.  With -o, a
 * row per (size, product).
 *
 * Defaults: data/multi30k/val.{de,en}, separate vocabularies (min
 * count 1), N = 32 pairs (--rows: the first 32 lines of the files), sizes
 * "512,8,2048;512,4,1024" (6-6: Vaswani base and Xiong's IWSLT setting),
 * Post-LN, Xavier init, 1 warm-up and --repeat 2 timed products.
 *
 * For each size: parameters, lnk_hessian_workspace_bytes of the chunk's
 * Hessian, ru_maxrss so far, the median seconds per H v on the chunk; then
 * the linear extrapolation in tokens to all pairs: seconds per H v over the
 * whole set = t_chunk * (all scored tokens / chunk's scored tokens), and also
 * with padded tokens when the set is cut into length-sorted chunks of N
 * pairs (the cost actually paid: padded positions are computed too).  The
 * workspace for a chunk of N pairs is what the chunked data-set Hessian
 * needs (chunks are processed one at a time); add the vectors of the
 * curvature routine (n_params doubles each: theta, v, H v, plus the Lanczos
 * basis in FULL mode, (m+1) n_params doubles). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lnkit/lnkit.h"
#include "bench.h"
#include "front/curv_opts.h"
#include "front/pairs.h"
#include "kit/kit.h"


static double maxrss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}


/* One size of --sizes ("D,H,DFF[,L];..."): the model, its initial weights and a
 * fixed +-1 vector.  Returns 0 at the end of the list; *s moves past it. */
typedef struct {
    lnk_config cfg;
    lnk_model *m;
    size_t n;
    double *th, *v, *hv;
    char name[64];
} size_model;

static int next_size(const char **s, const char *pos, lnk_vocab *vs, lnk_vocab *vt, size_model *z)
{
    if (!*s || !**s)
        return 0;
    int d, h, dff, L = 6, k = 0;
    if (sscanf(*s, "%d,%d,%d%n,%d%n", &d, &h, &dff, &k, &L, &k) < 3) {
        fprintf(stderr, "bench_multi30k: --sizes: expected D,H,DFF[,L];..., got '%s'\n", *s);
        exit(2);
    }
    *s = strchr(*s, ';');
    *s = *s ? *s + 1 : NULL;
    CLI_CK(bench_s2s_config(&z->cfg, pos, d, h, dff, L, lnk_vocab_size(vs), lnk_vocab_size(vt)));
    if (!(z->m = lnk_model_alloc(&z->cfg)))
        cli_die_lib();
    z->n = lnk_model_n_params(z->m);
    z->th = malloc(sizeof(double) * z->n), z->v = malloc(sizeof(double) * z->n);
    z->hv = malloc(sizeof(double) * z->n);
    if (!z->th || !z->v || !z->hv) {
        fprintf(stderr, "bench_multi30k: out of memory (%zu parameters)\n", z->n);
        exit(2);
    }
    CLI_CK(lnk_model_init_params(z->m, z->th));
    for (size_t i = 0; i < z->n; i++)
        z->v[i] = (i * 2654435761u) % 3 ? 1.0 : -1.0;
    snprintf(z->name, sizeof z->name, "%d,%d,%d,%d", d, h, dff, L);
    return 1;
}

static void size_free(size_model *z)
{
    free(z->th), free(z->v), free(z->hv);
    lnk_model_free(z->m);
    lnk_config_clear(&z->cfg);
}

/* --all: products over every pair, chunked as the Multi30k study does. */
static int bench_all(const cli_pairs *D, const char *sizes, const char *pos, size_t max_tokens,
                     int products, long cache_mb, const char *csv)
{
    const lnk_pairs *p = &D->p;
    lnk_vocab *vs = D->vs, *vt = D->vt;
    lnk_batch *chunks = D->chunks;
    int nc = D->n_chunks;
    size_t padded = D->padded;
    FILE *f = csv ? cli_fopen(csv, "w") : NULL;
    if (f)
        fprintf(f, "size,n_params,pairs,chunks,max_tokens,padded_tokens,scored,product,seconds,"
                   "cached_chunks,cache_mb,workspace_mb,maxrss_mb,threads,kernel\n");
    report("bench_multi30k --all: %d pairs, %zu scored tokens, %d chunks of <= %zu padded "
           "tokens (%zu in all); BLAS threads %d, kernel %s\n", p->n, p->n_scored, nc,
           max_tokens, padded, lnk_blas_threads(), lnk_blas_kernel());
    size_model z;
    for (const char *s = sizes; next_size(&s, pos, vs, vt, &z);) {
        lnk_hessian *hs = lnk_hessian_alloc(z.m, z.th, chunks, nc, NULL);
        if (!hs)
            cli_die_lib();
        cli_set_cache(hs, cache_mb);
        lnk_operator op = lnk_hessian_operator(hs);
        for (int k2 = 1; k2 <= products; k2++) {
            double t0 = lnk_now();
            CLI_CK(op.apply(op.ctx, z.v, z.hv));
            double sec = lnk_now() - t0;
            size_t cb;
            int kept = lnk_hessian_cached_chunks(hs, &cb);
            report("%-14s n = %zu: product %d: %.2f s (%d of %d chunks keep their primal pass, "
                   "%.0f MB; workspace %.0f MB; maxrss %.0f MB)\n", z.name, z.n, k2, sec, kept, nc,
                   cb / 1048576.0, lnk_hessian_workspace_bytes(hs) / 1048576.0, maxrss_mb());
            report_flush();
            if (f)
                fprintf(f, "\"%s\",%zu,%d,%d,%zu,%zu,%zu,%d,%.6g,%d,%.1f,%.1f,%.1f,%d,%s\n",
                        z.name, z.n, p->n, nc, max_tokens, padded, p->n_scored, k2, sec, kept,
                        cb / 1048576.0, lnk_hessian_workspace_bytes(hs) / 1048576.0, maxrss_mb(),
                        lnk_blas_threads(), lnk_blas_kernel());
        }
        lnk_hessian_free(hs);
        size_free(&z);
    }
    if (f)
        cli_fclose(f, csv);
    return 0;
}

typedef struct {
    cli_pairs_opts pa; /* --src, --tgt, --max-tokens */
    const char *sizes, *out;
    int rows, repeat, threads, all, products, norm_pos;
    long cache_mb;
} args_t;

static const cli_choice positions[] = {{"post", 0}, {"pre", 1}, {NULL, 0}};
static const cli_opt opts[] = {
    CLI_OPT_SRC(args_t, pa, 0, 0),
    CLI_OPT_TGT(args_t, pa),
    {.type = CLI_INT, .name = "rows", .arg = "N", CLI_AT(args_t, rows), .min = 1, .max = 1 << 24,
     .help = "sentence pairs in the chunk timed (the first N lines)"},
    {.type = CLI_INT, .name = "repeat", .arg = "N", CLI_AT(args_t, repeat), .min = 1,
     .max = 100000, .help = "timed products after a warm-up (their median is reported)"},
    {.type = CLI_STR, .name = "sizes", .arg = "D,H,DFF[,L];...", CLI_AT(args_t, sizes),
     .help = "the seq2seq models: width, heads, feed-forward width and depth, ';' between"},
    {.type = CLI_CHOICE, .name = "norm-pos", CLI_AT(args_t, norm_pos), .ref = positions,
     .help = "Post-LN or Pre-LN blocks"},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(args_t, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {.type = CLI_FLAG, .name = "all", CLI_AT(args_t, all),
     .help = "no extrapolation: products over every pair, in chunks of at most --max-tokens"},
    CLI_OPT_MAX_TOKENS(args_t, pa, "--all: padded tokens per chunk at most", NULL),
    {.type = CLI_INT, .name = "products", .arg = "K", CLI_AT(args_t, products), .min = 1,
     .max = 100000, .help = "--all: products timed, each over all chunks"},
    CLI_OPT_CACHE_MB(args_t, cache_mb, "--all: " CLI_CACHE_MB_HELP),
    BENCH_OPT_OUTPUT(args_t, out, "--all: also write a CSV row per size and product"),
    {0}};

static void defaults(void *p)
{
    args_t *a = p;
    *a = (args_t){.sizes = "512,8,2048;512,4,1024", .rows = 32, .repeat = 2, .products = 2,
                  .cache_mb = -1};
    cli_pairs_opts_default(&a->pa);
    a->pa.src = "data/multi30k/val.de", a->pa.tgt = "data/multi30k/val.en";
    a->pa.max_tokens = 512;
}

static const cli_cmd cmd = {
    .name = "bench_multi30k",
    .usage = "[--src F] [--tgt F] [--rows N] [--repeat N] [--sizes D,H,DFF[,L];...]\n"
             "[--norm-pos post|pre] [--threads N]\n"
             "--all [--max-tokens N] [--products K] [--cache-mb MB] [-o FILE] ...",
    .about = "Memory and time of one H v of the seq2seq model on Multi30k: on one chunk,\n"
             "extrapolated to the whole data set; with --all, over every pair.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

int main(int argc, char **argv)
{
    cli_start(&argc, &argv, "bench_multi30k");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_run_begin();
    report_to_fit(a.out); /* -o -: the CSV alone on standard output */
    const char *src = a.pa.src, *tgt = a.pa.tgt, *sizes = a.sizes;
    const char *pos = a.norm_pos ? "pre" : "post";
    const char *csv = a.out;
    int pairs = a.rows, repeat = a.repeat, threads = a.threads, all = a.all,
        products = a.products;
    long max_tokens = a.pa.max_tokens, cache_mb = a.cache_mb;
    if (threads > 0)
        lnk_set_blas_threads(threads);
    cli_pairs D; /* every pair; vocabularies of them all */
    cli_pairs_load(&a.pa, 0, all ? CLI_PAIRS_CHUNKS : CLI_PAIRS_ORDER, &D);
    const lnk_pairs p = D.p;
    lnk_vocab *vs = D.vs, *vt = D.vt;
    if (pairs > p.n)
        pairs = p.n;
    if (all) {
        int rc = bench_all(&D, sizes, pos, (size_t)max_tokens, products, cache_mb, csv);
        bench_meta(&cmd, &a, csv);
        cli_pairs_free(&D);
        return rc;
    }
    lnk_batch chunk;
    CLI_CK(lnk_pairs_batch(&p, NULL, pairs, &chunk));
    /* the whole set cut into length-sorted chunks of `pairs` rows */
    const int *order = D.order;
    size_t padded_all = 0;
    for (int r0 = 0; r0 < p.n; r0 += pairs) {
        int r1 = r0 + pairs < p.n ? r0 + pairs : p.n;
        lnk_batch b;
        CLI_CK(lnk_pairs_batch(&p, order + r0, r1 - r0, &b));
        padded_all += (size_t)b.B * (size_t)(b.S + b.T - 1); /* encoder + decoder positions */
        lnk_batch_free(&b);
    }
    size_t padded_chunk = (size_t)chunk.B * (size_t)(chunk.S + chunk.T - 1);
    size_t scored_chunk = 0;
    for (int r = 0; r < pairs; r++)
        scored_chunk += (size_t)p.tgt_len[r] - 1;
    report("bench_multi30k: %s / %s: %d pairs, V_src %d, V_tgt %d, %zu scored tokens; chunk = "
           "first %d pairs (src [%d, %d], tgt [%d, %d], %zu scored); BLAS threads %d\n",
           src, tgt, p.n, lnk_vocab_size(vs), lnk_vocab_size(vt), p.n_scored, pairs, chunk.B,
           chunk.S, chunk.B, chunk.T, scored_chunk, lnk_blas_threads());
    report("%-18s %12s %14s %12s %12s %14s %14s\n", "size (d,h,dff,L)", "n_params",
           "workspace_MB", "maxrss_MB", "s_per_Hv", "s_all_scored", "s_all_padded");
    size_model z;
    for (const char *s = sizes; next_size(&s, pos, vs, vt, &z);) {
        lnk_hessian *hs = lnk_hessian_alloc(z.m, z.th, &chunk, 1, NULL);
        if (!hs)
            cli_die_lib();
        /* every product recomputes the chunk's primal pass: the extrapolation to the
         * whole set counts each chunk's full cost */
        CLI_CK(lnk_hessian_set_cache(hs, 0));
        lnk_operator op = lnk_hessian_operator(hs);
        CLI_CK(op.apply(op.ctx, z.v, z.hv)); /* warm-up */
        double *t = malloc(sizeof(double) * repeat);
        for (int r = 0; r < repeat; r++) {
            double t0 = lnk_now();
            CLI_CK(op.apply(op.ctx, z.v, z.hv));
            t[r] = lnk_now() - t0;
        }
        double med = median(t, repeat);
        report("%-18s %12zu %14.1f %12.1f %12.2f %14.1f %14.1f\n", z.name, z.n,
               lnk_hessian_workspace_bytes(hs) / 1048576.0, maxrss_mb(), med,
               med * (double)p.n_scored / (double)scored_chunk,
               med * (double)padded_all / (double)padded_chunk);
        report_flush();
        free(t);
        lnk_hessian_free(hs);
        size_free(&z);
    }
    lnk_batch_free(&chunk);
    cli_pairs_free(&D);
    return 0;
}
