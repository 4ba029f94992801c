/* multi30k_hessian: the reference experiment of issue 6 — Post-LN vs Pre-LN
 * encoder-decoder transformers at Xavier initialisation on Multi30k
 * (German -> English validation pairs): the Hessian of the mean loss over the
 * data set, and Xiong et al.'s Figure 3 gradient norms on the same data.
 *
 * Data.  --src/--tgt (default data/multi30k/val.{de,en}, relative to
 * the repository), the first --sentences pairs (0 = all 1014), vocabularies
 * built from those pairs (separate by default; --joint-vocab), rows as in
 * include/lnkit/corpus.h (src = source tokens, tgt = <bos> y <eos>), cut into
 * length-sorted chunks of at most --max-tokens padded tokens: the data-set
 * loss, gradient and H v are the exact token-weighted means over the chunks.
 *
 * Spectral part, for norm_pos in {post, pre} and seeds 0..S-1 (task seq2seq,
 * L-L, LayerNorm, Xavier; the same data for all):
 *   eigs.csv      norm_pos,seed,which,index,eigenvalue,residual,converged
 *   trace.csv     norm_pos,seed,method,probes,trace,stderr
 *   blocks.csv    norm_pos,seed,block,side,layer,kind,n_params,top_eigenvalue,residual,
 *                 converged,steps
 *   slq_nodes.csv norm_pos,seed,run,index,node,weight
 *   density.csv   norm_pos,t,density   (nodes of all seeds pooled; one sigma for both)
 * Blocks: src_emb, tgt_emb, out.w, and per layer l enc.l.attn, enc.l.ffn,
 * dec.l.attn (causal self-attention), dec.l.xattn (cross-attention), dec.l.ffn.
 *
 * Gradient part (Xiong et al. 2020, Figure 3), for every depth of --depths
 * (L-L models), norm_pos and seeds 0..G-1: the data-set gradient at init and
 *   grad.csv      norm_pos,seed,L,side,layer,tensor,grad_norm   (ffn.w1, ffn.w2 of every
 *                 encoder and decoder layer; Figure 3 a/b = the rows of L = --L, c/d =
 *                 the decoder's last layer w2 over L)
 *   jobs.csv      job,kind,norm_pos,seed,L,loss,hvp,seconds   (every job: its loss at init,
 *                 H v products and time)
 * These are the raw rows (under MPI each rank writes its jobs' rows, gathered
 * in job order); grad_profile.csv, grad_depth.csv, density.csv and summary.md
 * are computed from them.  Then summary.md (Post/Pre ratios with the spread over seeds), density.gp
 * (gnuplot -> density.png, log density axis) and grad.gp (-> grad.png).
 * Every CSV has its .meta.json.  The (variant, seed) jobs run in --jobs
 * threads (one BLAS thread each); results do not depend on the scheduling.
 *
 * Size.  The reference experiment (6-6, d = 512, h = 8, d_ff = 2048, all 1014
 * pairs) costs ~13 TFLOP per H v, minutes per product here, so the defaults
 * are a reduced configuration that runs in ~15 minutes on 2 cores: d = 32,
 * h = 4, d_ff = 64 (= 2d, the ratio of Xiong et al.'s IWSLT model), 6-6, the
 * first 200 pairs, 3 seeds, top/bottom-3 eigenvalues (<= 40 Lanczos steps),
 * trace with 30 probes, SLQ 4 x 40, block top eigenvalues with <= 10 Lanczos
 * steps (lower bounds; residuals in blocks.csv).  Every one of these is a
 * flag (bench/bench_multi30k measures the full-size cost per H v). */
#include <getopt.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lnkit/corpus.h"
#include "lnkit/lnkit.h"
#include "kit/kit.h"
#include "kit/spectral.h"

typedef struct {
    const char *out, *src, *tgt, *depths_str;
    int d, h, d_ff, L, sentences, min_count, max_vocab, joint, max_len, max_tokens;
    int seeds, grad_seeds, k, eig_steps, probes, runs, steps, block_steps, jobs, quiet;
    int do_spec, do_grad;
    double kappa, eig_tol, block_tol;
    int depths[32], n_depths;
} opts_t;

static void usage(void)
{
    printf(
        "usage: multi30k_hessian [options]\n"
        "  --src F --tgt F   parallel text   (data/multi30k/val.de, val.en)\n"
        "  --out DIR         output directory                         (results/multi30k)\n"
        "  --sentences N     first N pairs, 0 = all                   (200)\n"
        "  --min-count N     vocabulary minimum count                 (1)\n"
        "  --max-vocab N     vocabulary size limit per side, 0 = none (0)\n"
        "  --joint-vocab     one vocabulary for both sides\n"
        "  --max-len N       drop pairs with a side longer, 0 = none  (0)\n"
        "  --max-tokens N    padded tokens per chunk                  (512)\n"
        "  --d N --h N --d-ff N --L N   model (L-L seq2seq, LayerNorm, Xavier) (32, 4, 64, 6)\n"
        "  --seeds N         initialisation seeds 0..N-1 (spectra)    (3)\n"
        "  --k N             top-k and bottom-k eigenvalues           (3)\n"
        "  --eig-steps M     Lanczos step limit for them              (40)\n"
        "  --eig-tol T       their relative residual tolerance        (1e-6)\n"
        "  --probes N        Hutchinson probes for the trace          (30)\n"
        "  --runs N --steps M           SLQ start vectors and steps   (4, 40)\n"
        "  --block-steps M   Lanczos step limit, block top eigenvalue (10)\n"
        "  --block-tol T     its relative residual tolerance          (1e-3)\n"
        "  --kappa K         SLQ kernel width, Papyan's kappa         (3)\n"
        "  --depths LIST     L of the last-W2 sweep (Figure 3 c/d)    (6,8,10,12,14)\n"
        "  --grad-seeds N    seeds for the gradient norms             (6)\n"
        "  --parts LIST      spectrum,grad                            (spectrum,grad)\n"
        "  --jobs N          worker threads (one BLAS thread each)    (2)\n"
        "  --quiet           no progress on stderr\n");
}

static double arg_pos(const char *name, const char *s, double min)
{
    char *e;
    double v = strtod(s, &e);
    if (*s == '\0' || *e || !isfinite(v) || !(v > min))
        fail("--%s: expected a number > %g, got '%s'", name, min, s);
    return v;
}

/* ------------------------------------------------------------ data */

typedef struct {
    lnk_batch *chunks;
    int n_chunks, V_src, V_tgt, n_pairs, n_dropped;
    size_t n_scored, src_tokens, tgt_tokens, padded, max_chunk;
} data_t;

/* The data set of every job: a view of D's chunks (borrowed; each rank runs
 * whole jobs, so no process group). */
static lnk_dataset dataset_of(const data_t *D)
{
    return (lnk_dataset){D->chunks, D->n_chunks, D->n_chunks, 0, D->n_scored, NULL};
}

static void load_data(const opts_t *o, data_t *D)
{
    lnk_corpus c;
    CK(lnk_corpus_read(o->src, o->tgt, &c));
    study_input(o->src);
    study_input(o->tgt);
    if (o->sentences > 0 && o->sentences < c.src.n_lines) /* a prefix: the texts are freed by */
        c.src.n_lines = c.tgt.n_lines = o->sentences;     /* their pools, not per line */
    lnk_vocab *vs, *vt;
    CK(lnk_corpus_vocabs(&c, o->joint, o->min_count, o->max_vocab, &vs, &vt));
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    po.max_len = o->max_len;
    lnk_pairs p;
    CK(lnk_pairs_make(&c, vs, vt, &po, &p));
    CK(lnk_pairs_batches(&p, (size_t)o->max_tokens, &D->chunks, &D->n_chunks));
    D->V_src = lnk_vocab_size(vs);
    D->V_tgt = lnk_vocab_size(vt);
    D->n_pairs = p.n;
    D->n_dropped = p.n_dropped;
    D->n_scored = p.n_scored;
    D->src_tokens = p.src_tokens;
    D->tgt_tokens = p.tgt_tokens;
    D->padded = D->max_chunk = 0;
    for (int i = 0; i < D->n_chunks; i++) {
        size_t s = lnk_pairs_padded(&D->chunks[i]);
        D->padded += s;
        D->max_chunk = s > D->max_chunk ? s : D->max_chunk;
    }
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

static void make_config(lnk_config *c, const opts_t *o, const data_t *D, int pre, int L,
                        int seed)
{
    lnk_config_default(c);
    c->task = LNK_TASK_SEQ2SEQ;
    c->norm_pos = pre ? LNK_POS_PRE : LNK_POS_POST;
    c->d = o->d;
    c->h = o->h;
    c->d_ff = o->d_ff;
    c->L = L;
    c->V_src = D->V_src;
    c->V_tgt = D->V_tgt;
    c->seed = (uint64_t)seed;
    CK(lnk_config_finalize(c));
}

/* ------------------------------------------------------------ blocks */

typedef spec_block block_t;

static int make_blocks(int L, block_t *b)
{
    int n = 0;
    b[n++] = (block_t){"src_emb", "enc", "embedding", -1};
    for (int l = 0; l < L; l++) {
        b[n] = (block_t){"", "enc", "self_attn", l};
        snprintf(b[n++].pat, 64, "enc.%d.attn.*", l);
        b[n] = (block_t){"", "enc", "ffn", l};
        snprintf(b[n++].pat, 64, "enc.%d.ffn.*", l);
    }
    b[n++] = (block_t){"tgt_emb", "dec", "embedding", -1};
    for (int l = 0; l < L; l++) {
        b[n] = (block_t){"", "dec", "self_attn", l};
        snprintf(b[n++].pat, 64, "dec.%d.attn.*", l);
        b[n] = (block_t){"", "dec", "cross_attn", l};
        snprintf(b[n++].pat, 64, "dec.%d.xattn.*", l);
        b[n] = (block_t){"", "dec", "ffn", l};
        snprintf(b[n++].pat, 64, "dec.%d.ffn.*", l);
    }
    b[n++] = (block_t){"out.w", "dec", "output", L};
    return n;
}

/* ------------------------------------------------------------ jobs */

typedef struct {
    int pre, seed;
    double loss;
    spec_point P;   /* eigs, trace, SLQ, blocks (kit/spectral.h) */
    double sec;
} spec_job;

typedef struct {
    int pre, seed, L;
    double loss;
    double *w1, *w2;   /* [2L]: encoder layers 0..L-1, then decoder layers */
    double sec;
} grad_job;

typedef struct {
    const opts_t *o;
    const data_t *D;
    int nblk;
    const block_t *blk;
    spec_job *spec;
    int n_spec;
    grad_job *grad;
    int n_grad;
    int next;
    pthread_mutex_t mu;
    double t0;
} sched_t;

static void run_spec(sched_t *S, spec_job *J)
{
    const opts_t *o = S->o;
    const data_t *D = S->D;
    double ts = lnk_now();
    lnk_config c;
    make_config(&c, o, D, J->pre, o->L, J->seed);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        die();
    double *th = malloc(sizeof(double) * lnk_model_n_params(m));
    CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(D);
    CK(lnk_dataset_loss(m, th, &ds, &J->loss, NULL));
    spec_opts so = {o->k, o->eig_tol, o->eig_steps, o->probes, o->runs, o->steps, o->block_tol,
                    o->block_steps};
    spec_run(m, th, &ds, &so, S->blk, S->nblk, (uint64_t)J->seed, &J->P);
    J->sec = lnk_now() - ts;
    if (!o->quiet && study_root())
        fprintf(stderr,
                "multi30k_hessian: %s seed %d: loss %.4f top %.5g bottom %.5g trace %.5g; %ld H v "
                "in %.0f s (eigs %.0f, trace %.0f, slq %.0f, blocks %.0f; %.2f s/Hv); %.0f s so "
                "far\n",
                J->pre ? "pre " : "post", J->seed, J->loss,
                J->P.er.n_top ? J->P.er.value[0] : NAN,
                J->P.er.n_bottom ? J->P.er.value[J->P.er.n_top] : NAN, J->P.tr.trace, J->P.hvp,
                J->sec,
                J->P.sec_eigs, J->P.sec_trace, J->P.sec_slq, J->P.sec_blocks, J->sec / J->P.hvp,
                lnk_now() - S->t0);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void run_grad(sched_t *S, grad_job *J)
{
    const opts_t *o = S->o;
    double ts = lnk_now();
    lnk_config c;
    make_config(&c, o, S->D, J->pre, J->L, J->seed);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        die();
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
    CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(S->D);
    CK(lnk_dataset_loss(m, th, &ds, &J->loss, g));
    const lnk_layout *lay = lnk_model_layout(m);
    J->w1 = malloc(sizeof(double) * 2 * J->L);
    J->w2 = malloc(sizeof(double) * 2 * J->L);
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < J->L; l++) {
            char nm[64];
            snprintf(nm, sizeof nm, "%s.%d.ffn.w1", s ? "dec" : "enc", l);
            J->w1[s * J->L + l] = lnk_tensor_norm(m, g, lnk_layout_find(lay, nm));
            snprintf(nm, sizeof nm, "%s.%d.ffn.w2", s ? "dec" : "enc", l);
            J->w2[s * J->L + l] = lnk_tensor_norm(m, g, lnk_layout_find(lay, nm));
        }
    J->sec = lnk_now() - ts;
    if (!o->quiet && study_root())
        fprintf(stderr, "multi30k_hessian: grad %d-%d %s seed %d: loss %.4f, last W2 %.4g (%.1f s)\n",
                J->L, J->L, J->pre ? "pre " : "post", J->seed, J->loss, J->w2[2 * J->L - 1],
                J->sec);
    free(th);
    free(g);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void *worker(void *arg)
{
    sched_t *S = arg;
    lnk_set_blas_threads(1);
    for (;;) {
        pthread_mutex_lock(&S->mu);
        int j = S->next++;
        pthread_mutex_unlock(&S->mu);
        if (j < S->n_spec + S->n_grad && !study_mine(j))
            continue; /* another rank's job (MPI) */
        if (j < S->n_spec)
            run_spec(S, &S->spec[j]);
        else if (j < S->n_spec + S->n_grad)
            run_grad(S, &S->grad[j - S->n_spec]);
        else
            return NULL;
    }
}

static const char *pname(int pre) { return pre ? "pre" : "post"; }

/* Collective: every rank writes the raw rows of its own jobs (job j ran on
 * rank j % P) as the points of sweep CSVs, gathered to rank 0 in job order:
 * eigs, trace, blocks, slq_nodes (the spectral jobs), grad.csv (the gradient
 * jobs) and jobs.csv (each job's loss, products and time). */
static void write_rows(const opts_t *o, sched_t *S, const lnk_config *base, const char *extra,
                       const char *start, double t0)
{
    spec_files F;
    if (o->do_spec)
        spec_files_open(&F, o->out, 1, 1);
    static const char *const hg[] = {"norm_pos", "seed", "L", "side", "layer", "tensor",
                                     "grad_norm"};
    static const char *const hj[] = {"job", "kind", "norm_pos", "seed", "L", "loss", "hvp",
                                     "seconds"};
    out_csv fg, fj;
    if (o->do_grad)
        csv_sweep(&fg, o->out, "grad.csv", hg, 7);
    csv_sweep(&fj, o->out, "jobs.csv", hj, 8);
    for (int j = 0; j < S->n_spec + S->n_grad; j++) {
        if (!study_mine(j))
            continue;
        csv_point(&fj, j);
        CK(lnk_csv_int(&fj.c, j));
        if (j < S->n_spec) {
            spec_job *J = &S->spec[j];
            spec_files_point(&F, j);
            spec_rows(&F, pname(J->pre), J->seed, &J->P, S->blk, S->nblk);
            CK(lnk_csv_str(&fj.c, "spectrum"));
            CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CK(lnk_csv_int(&fj.c, J->seed));
            CK(lnk_csv_int(&fj.c, o->L));
            CK(lnk_csv_double(&fj.c, J->loss));
            CK(lnk_csv_int(&fj.c, J->P.hvp));
            CK(lnk_csv_double(&fj.c, J->sec));
        } else {
            grad_job *J = &S->grad[j - S->n_spec];
            csv_point(&fg, j);
            for (int s = 0; s < 2; s++)
                for (int l = 0; l < J->L; l++)
                    for (int w = 0; w < 2; w++) {
                        CK(lnk_csv_str(&fg.c, pname(J->pre)));
                        CK(lnk_csv_int(&fg.c, J->seed));
                        CK(lnk_csv_int(&fg.c, J->L));
                        CK(lnk_csv_str(&fg.c, s ? "dec" : "enc"));
                        CK(lnk_csv_int(&fg.c, l));
                        CK(lnk_csv_str(&fg.c, w ? "ffn.w2" : "ffn.w1"));
                        CK(lnk_csv_double(&fg.c, (w ? J->w2 : J->w1)[s * J->L + l]));
                        CK(lnk_csv_end_row(&fg.c));
                    }
            CK(lnk_csv_str(&fj.c, "grad"));
            CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CK(lnk_csv_int(&fj.c, J->seed));
            CK(lnk_csv_int(&fj.c, J->L));
            CK(lnk_csv_double(&fj.c, J->loss));
            CK(lnk_csv_int(&fj.c, 0));
            CK(lnk_csv_double(&fj.c, J->sec));
        }
        CK(lnk_csv_end_row(&fj.c));
    }
    if (o->do_spec)
        spec_files_close(&F, base, extra, start, t0);
    if (o->do_grad)
        csv_close(&fg, base, extra, start, t0);
    csv_close(&fj, base, extra, start, t0);
}

/* Rank 0, from the files: the rows of the next job (norm_pos, seed; and L
 * when cl >= 0) starting at row *r; returns their count and moves *r past
 * them.  Fails if the file does not hold them there. */
static size_t job_rows(const study_table *t, size_t *r, int pre, int seed, int cl, int L)
{
    int cp = study_table_col(t, "norm_pos"), cs = study_table_col(t, "seed");
    size_t r0 = *r;
    while (*r < t->d.nrow && !strcmp(study_table_str(t, *r, cp), pname(pre)) &&
           study_table_num(t, *r, cs) == seed && (cl < 0 || study_table_num(t, *r, cl) == L))
        (*r)++;
    if (*r == r0)
        fail("%s: row %zu: expected the rows of %s seed %d", t->d.what, r0 + 2, pname(pre), seed);
    return *r - r0;
}

/* Rank 0: every job's numbers that the summaries need, read back from the
 * files that write_rows wrote (numbers round-trip exactly: %.17g). */
static void read_jobs(const opts_t *o, sched_t *S)
{
    study_table te, tt, tb, tg, tj;
    study_table_read(&tj, o->out, "jobs.csv");
    int jl = study_table_col(&tj, "loss"), jh = study_table_col(&tj, "hvp");
    int js = study_table_col(&tj, "seconds");
    if (tj.d.nrow != (size_t)(S->n_spec + S->n_grad))
        fail("%s: %zu rows, expected %d jobs", tj.d.what, tj.d.nrow, S->n_spec + S->n_grad);
    if (o->do_spec) {
        study_table_read(&te, o->out, "eigs.csv");
        study_table_read(&tt, o->out, "trace.csv");
        study_table_read(&tb, o->out, "blocks.csv");
        int ew = study_table_col(&te, "which"), ev = study_table_col(&te, "eigenvalue");
        int er = study_table_col(&te, "residual"), ec = study_table_col(&te, "converged");
        int tp = study_table_col(&tt, "probes"), tv = study_table_col(&tt, "trace");
        int ts = study_table_col(&tt, "stderr");
        int bn = study_table_col(&tb, "n_params"), bv = study_table_col(&tb, "top_eigenvalue");
        int br = study_table_col(&tb, "residual"), bc = study_table_col(&tb, "converged");
        int bs = study_table_col(&tb, "steps");
        size_t re = 0, rt = 0, rb = 0;
        for (int j = 0; j < S->n_spec; j++) {
            spec_job *J = &S->spec[j];
            spec_point *P = &J->P;
            spec_point_free(P); /* rank 0's own jobs: replaced by what the files say */
            size_t r0 = re, k = job_rows(&te, &re, J->pre, J->seed, -1, 0);
            P->er.k = (int)k;
            P->er.value = study_alloc(sizeof(double) * k);
            P->er.residual = study_alloc(sizeof(double) * k);
            P->er.converged = study_alloc(sizeof(int) * k);
            for (size_t i = 0; i < k; i++) {
                P->er.n_top += !strcmp(study_table_str(&te, r0 + i, ew), "top");
                P->er.value[i] = study_table_num(&te, r0 + i, ev);
                P->er.residual[i] = study_table_num(&te, r0 + i, er);
                P->er.converged[i] = (int)study_table_num(&te, r0 + i, ec);
            }
            P->er.n_bottom = P->er.k - P->er.n_top;
            r0 = rt;
            job_rows(&tt, &rt, J->pre, J->seed, -1, 0);
            P->tr.probes = (int)study_table_num(&tt, r0, tp);
            P->tr.trace = study_table_num(&tt, r0, tv);
            P->tr.std_error = study_table_num(&tt, r0, ts);
            r0 = rb;
            if (job_rows(&tb, &rb, J->pre, J->seed, -1, 0) != (size_t)S->nblk)
                fail("%s: %s seed %d: expected %d blocks", tb.d.what, pname(J->pre), J->seed,
                     S->nblk);
            P->btop = study_alloc(sizeof(double) * S->nblk);
            P->bres = study_alloc(sizeof(double) * S->nblk);
            P->bconv = study_alloc(sizeof(int) * S->nblk);
            P->bsteps = study_alloc(sizeof(int) * S->nblk);
            P->bn = study_alloc(sizeof(size_t) * S->nblk);
            for (int b = 0; b < S->nblk; b++) {
                P->bn[b] = (size_t)study_table_num(&tb, r0 + b, bn);
                P->btop[b] = study_table_num(&tb, r0 + b, bv);
                P->bres[b] = study_table_num(&tb, r0 + b, br);
                P->bconv[b] = (int)study_table_num(&tb, r0 + b, bc);
                P->bsteps[b] = (int)study_table_num(&tb, r0 + b, bs);
            }
            J->loss = study_table_num(&tj, (size_t)j, jl);
            P->hvp = (long)study_table_num(&tj, (size_t)j, jh);
            J->sec = study_table_num(&tj, (size_t)j, js);
        }
        study_table_free(&te);
        study_table_free(&tt);
        study_table_free(&tb);
    }
    if (o->do_grad) {
        study_table_read(&tg, o->out, "grad.csv");
        int gL = study_table_col(&tg, "L"), gv = study_table_col(&tg, "grad_norm");
        size_t rg = 0;
        for (int j = 0; j < S->n_grad; j++) {
            grad_job *J = &S->grad[j];
            size_t r0 = rg;
            if (job_rows(&tg, &rg, J->pre, J->seed, gL, J->L) != (size_t)4 * J->L)
                fail("%s: %s seed %d L %d: expected %d rows", tg.d.what, pname(J->pre), J->seed,
                     J->L, 4 * J->L);
            free(J->w1);
            free(J->w2);
            J->w1 = study_alloc(sizeof(double) * 2 * (size_t)J->L);
            J->w2 = study_alloc(sizeof(double) * 2 * (size_t)J->L);
            for (int i = 0; i < 4 * J->L; i++) /* side, layer, then W1, W2 */
                ((i & 1) ? J->w2 : J->w1)[i / 2] = study_table_num(&tg, r0 + (size_t)i, gv);
            J->loss = study_table_num(&tj, (size_t)(S->n_spec + j), jl);
            J->sec = study_table_num(&tj, (size_t)(S->n_spec + j), js);
        }
        study_table_free(&tg);
    }
    study_table_free(&tj);
}

/* ------------------------------------------------------------ output */

static double mean(const double *x, int n) { return gsl_stats_mean(x, 1, (size_t)n); }
static double sd(const double *x, int n) { return n > 1 ? gsl_stats_sd(x, 1, (size_t)n) : 0.0; }
static double minv(const double *x, int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        m = fmin(m, x[i]);
    return m;
}
static double maxv(const double *x, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = fmax(m, x[i]);
    return m;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}


/* "| name | post mean +- sd | pre mean +- sd | ratio of means | per-seed ratios min..max |" */
static void ratio_row(FILE *f, const char *name, const double *post, const double *pre, int n)
{
    double r[1000];
    for (int i = 0; i < n && i < 1000; i++)
        r[i] = post[i] / pre[i];
    fprintf(f, "| %s | %.4g +- %.2g | %.4g +- %.2g | %.3g | %.3g .. %.3g |\n", name,
            mean(post, n), sd(post, n), mean(pre, n), sd(pre, n), mean(post, n) / mean(pre, n),
            minv(r, n), maxv(r, n));
}

/* Density of each variant (nodes of all its seeds pooled), one sigma and one
 * grid, from slq_nodes.csv. */
static double write_density(const opts_t *o, const lnk_config *base, const char *extra,
                            const char *start, double t0, double integ[2])
{
    lnk_slq_result *r;
    int *pre, n;
    spec_read_slq(o->out, &r, &pre, &n);
    double sigma = spec_write_density(o->out, r, pre, n, o->kappa, o->steps, base, extra, start,
                                      t0, integ);
    for (int i = 0; i < n; i++)
        lnk_slq_result_free(&r[i]);
    free(r);
    free(pre);
    return sigma;
}

/* grad job of (L, pre, seed), or NULL */
static grad_job *find_grad(sched_t *S, int L, int pre, int seed)
{
    for (int j = 0; j < S->n_grad; j++)
        if (S->grad[j].L == L && S->grad[j].pre == pre && S->grad[j].seed == seed)
            return &S->grad[j];
    return NULL;
}

/* mean and sd over the grad seeds of w (0: W1, 1: W2) at (L, pre, side, layer) */
static void grad_stat(sched_t *S, int L, int pre, int side, int layer, int w, double *m,
                      double *s)
{
    int G = S->o->grad_seeds;
    double *v = calloc((size_t)G, sizeof(double));
    for (int k = 0; k < G; k++) {
        grad_job *J = find_grad(S, L, pre, k);
        v[k] = (w ? J->w2 : J->w1)[side * L + layer];
    }
    *m = mean(v, G);
    *s = sd(v, G);
    free(v);
}

/* From the jobs read back from grad.csv (every seed): grad_profile.csv (seed
 * means per layer of the --L model: Figure 3 a/b) and grad_depth.csv (seed
 * means of the last decoder W2 over depth: Figure 3 c/d). */
static void write_grad(const opts_t *o, sched_t *S, const lnk_config *base, const char *extra,
                       const char *start, double t0)
{
    /* one row per layer, one column per series (plots read columns) */
    static const char *const hp[] = {"x", "side", "layer", "post_w1", "post_w1_sd", "post_w2",
                                     "post_w2_sd", "pre_w1", "pre_w1_sd", "pre_w2",
                                     "pre_w2_sd"};
    out_csv fp;
    csv_open(&fp, o->out, "grad_profile.csv", hp, 11);
    int L = o->L;
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < L; l++) {
            CK(lnk_csv_int(&fp.c, s * L + l + 1));
            CK(lnk_csv_str(&fp.c, s ? "dec" : "enc"));
            CK(lnk_csv_int(&fp.c, l));
            for (int pre = 0; pre < 2; pre++)
                for (int w = 0; w < 2; w++) {
                    double m, sdv;
                    grad_stat(S, L, pre, s, l, w, &m, &sdv);
                    CK(lnk_csv_double(&fp.c, m));
                    CK(lnk_csv_double(&fp.c, sdv));
                }
            CK(lnk_csv_end_row(&fp.c));
        }
    csv_close(&fp, base, extra, start, t0);
    static const char *const hd[] = {"L", "post_last_w2", "post_sd", "pre_last_w2", "pre_sd"};
    out_csv fd;
    csv_open(&fd, o->out, "grad_depth.csv", hd, 5);
    for (int i = 0; i < o->n_depths; i++) {
        int Ld = o->depths[i];
        CK(lnk_csv_int(&fd.c, Ld));
        for (int pre = 0; pre < 2; pre++) {
            double m, sdv;
            grad_stat(S, Ld, pre, 1, Ld - 1, 1, &m, &sdv);
            CK(lnk_csv_double(&fd.c, m));
            CK(lnk_csv_double(&fd.c, sdv));
        }
        CK(lnk_csv_end_row(&fd.c));
    }
    csv_close(&fd, base, extra, start, t0);
}

/* summary.md, the Hessian part: the quantities of every seed, convergence,
 * the blocks by group and one by one, the density and the cost. */
static void summary_spec(FILE *f, const opts_t *o, sched_t *S, const data_t *D, double sigma,
                         const double integ[2])
{
    int NS = o->seeds;
    double *q[4][2];
    for (int a = 0; a < 4; a++)
        for (int pre = 0; pre < 2; pre++)
            q[a][pre] = calloc((size_t)NS, sizeof(double));
    long hvp = 0;
    double sec = 0;
    for (int j = 0; j < S->n_spec; j++) {
        spec_job *J = &S->spec[j];
        q[0][J->pre][J->seed] = J->P.er.n_top ? J->P.er.value[0] : NAN;
        q[1][J->pre][J->seed] = J->P.er.n_bottom ? J->P.er.value[J->P.er.n_top] : NAN;
        q[2][J->pre][J->seed] = J->P.tr.trace;
        q[3][J->pre][J->seed] = J->loss;
        hvp += J->P.hvp;
        sec += J->sec;
    }
    fprintf(f, "## Hessian of the data-set loss\n\n%d seeds (0..%d; the same seed gives both "
               "variants the same weights), mean +- sd over seeds; the last column is the "
               "range over seeds of the per-seed ratio Post / Pre.\n\n"
               "| quantity | Post-LN | Pre-LN | Post / Pre (means) | Post / Pre per seed |\n"
               "|---|---|---|---|---|\n",
            NS, NS - 1);
    const char *qn[4] = {"top eigenvalue", "bottom eigenvalue", "trace (Hutchinson)",
                         "loss at init"};
    for (int a = 0; a < 4; a++)
        ratio_row(f, qn[a], q[a][0], q[a][1], NS);
    double tse[2] = {0, 0};
    int nconv[2] = {0, 0}, ntot[2] = {0, 0};
    for (int j = 0; j < S->n_spec; j++) {
        spec_job *J = &S->spec[j];
        tse[J->pre] = fmax(tse[J->pre], J->P.tr.std_error);
        for (int i = 0; i < J->P.er.k; i++) {
            nconv[J->pre] += J->P.er.converged[i];
            ntot[J->pre]++;
        }
    }
    fprintf(f, "\nTop-%d / bottom-%d eigenvalues (`eigs.csv`, at most %d Lanczos steps, "
               "relative tolerance %g): %d of %d (Post-LN) and %d of %d (Pre-LN) converged; "
               "residuals in the CSV.  Trace: %d Rademacher probes, largest standard error "
               "%.3g (Post-LN), %.3g (Pre-LN).\n\n",
            o->k, o->k, o->eig_steps, o->eig_tol, nconv[0], ntot[0], nconv[1], ntot[1],
            o->probes, tse[0], tse[1]);
    /* groups: max over layers of the per-block top eigenvalue (mean over seeds) */
    int nb = S->nblk;
    double *bm = calloc((size_t)2 * nb, sizeof(double)), *bs = calloc((size_t)2 * nb, sizeof(double));
    double *tmp = malloc(sizeof(double) * NS);
    int bconv = 0, nrel = 0;
    double *rel = malloc(sizeof(double) * 2 * NS * nb);
    for (int j = 0; j < S->n_spec; j++)
        for (int k = 0; k < nb; k++)
            rel[nrel++] = S->spec[j].P.bres[k] / fabs(S->spec[j].P.btop[k]);
    qsort(rel, (size_t)nrel, sizeof *rel, cmp_double);
    for (int pre = 0; pre < 2; pre++)
        for (int k = 0; k < nb; k++) {
            int n = 0;
            for (int j = 0; j < S->n_spec; j++)
                if (S->spec[j].pre == pre) {
                    tmp[n++] = S->spec[j].P.btop[k];
                    bconv += S->spec[j].P.bconv[k];
                }
            bm[pre * nb + k] = mean(tmp, n);
            bs[pre * nb + k] = sd(tmp, n);
        }
    static const char *const groups[][3] = {
        {"enc", "embedding", "source embedding `src_emb`"},
        {"enc", "self_attn", "encoder self-attention"},
        {"enc", "ffn", "encoder FFN"},
        {"dec", "embedding", "target embedding `tgt_emb`"},
        {"dec", "self_attn", "decoder self-attention (causal)"},
        {"dec", "cross_attn", "decoder cross-attention"},
        {"dec", "ffn", "decoder FFN"},
        {"dec", "output", "output `out.w`"}};
    fprintf(f, "### Blocks\n\nTop eigenvalue of the Hessian restricted to each block (at "
               "most %d Lanczos steps; %d of %d block runs reached the relative residual "
               "%g; residual / value: median %.3g, largest %.3g.  A Ritz value is a lower "
               "bound on the block's top eigenvalue, and some eigenvalue lies within the "
               "residual of it).  By group, the largest over layers of the seed-mean (and "
               "its layer):\n\n"
               "| group | Post-LN | layer | Pre-LN | layer | Post / Pre |\n"
               "|---|---|---|---|---|---|\n",
            o->block_steps, bconv, 2 * NS * nb, o->block_tol, rel[nrel / 2], rel[nrel - 1]);
    free(rel);
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        double best[2] = {-INFINITY, -INFINITY};
        int bl[2] = {-1, -1};
        for (int pre = 0; pre < 2; pre++)
            for (int k = 0; k < nb; k++)
                if (!strcmp(S->blk[k].side, groups[g][0]) &&
                    !strcmp(S->blk[k].kind, groups[g][1]) && bm[pre * nb + k] > best[pre]) {
                    best[pre] = bm[pre * nb + k];
                    bl[pre] = S->blk[k].layer;
                }
        fprintf(f, "| %s | %.4g | %d | %.4g | %d | %.3g |\n", groups[g][2], best[0], bl[0],
                best[1], bl[1], best[0] / best[1]);
    }
    fprintf(f, "\nEvery block (mean +- sd over seeds):\n\n"
               "| block | parameters | Post-LN | Pre-LN | Post / Pre |\n|---|---|---|---|---|\n");
    for (int k = 0; k < nb; k++)
        fprintf(f, "| `%s` | %zu | %.4g +- %.2g | %.4g +- %.2g | %.3g |\n", S->blk[k].pat,
                S->spec[0].P.bn[k], bm[k], bs[k], bm[nb + k], bs[nb + k], bm[k] / bm[nb + k]);
    fprintf(f, "\nSpectral density: `density.csv` / `density.png` (SLQ %d x %d per seed, "
               "nodes of the %d seeds pooled; Gaussian kernel sigma = %.4g from Papyan's "
               "kappa = %g; integrals %.6f and %.6f).\n\n",
            o->runs, o->steps, NS, sigma, o->kappa, integ[0], integ[1]);
    fprintf(f, "Cost: %ld Hessian-vector products over the %d chunks in %.0f s of job time "
               "(%.2f s per product, one BLAS thread per job, %d jobs in parallel).\n\n",
            hvp, D->n_chunks, sec, sec / (double)hvp, o->jobs);
    free(bm);
    free(bs);
    free(tmp);
    for (int a = 0; a < 4; a++)
        for (int pre = 0; pre < 2; pre++)
            free(q[a][pre]);
}

/* summary.md, the gradient part (Xiong et al. Figure 3). */
static void summary_grad(FILE *f, const opts_t *o, sched_t *S)
{
    int G = o->grad_seeds;
    double *v[2];
    v[0] = malloc(sizeof(double) * G);
    v[1] = malloc(sizeof(double) * G);
    int L = o->L;
    if (find_grad(S, L, 0, 0)) {
        fprintf(f, "## Gradient norms at initialisation (Xiong et al. 2020, Figure 3)\n\n"
                   "`||dL/dW||_F` of the data-set loss, mean +- sd over %d seeds.  (a, b): "
                   "every layer of the %d-%d model:\n\n"
                   "| layer | Post-LN W1 | Post-LN W2 | Pre-LN W1 | Pre-LN W2 |\n"
                   "|---|---|---|---|---|\n",
                G, L, L);
        for (int s = 0; s < 2; s++)
            for (int l = 0; l < L; l++) {
                fprintf(f, "| %s %d |", s ? "dec" : "enc", l);
                for (int pre = 0; pre < 2; pre++)
                    for (int w = 0; w < 2; w++) {
                        int n = 0;
                        for (int sd_ = 0; sd_ < G; sd_++) {
                            grad_job *J = find_grad(S, L, pre, sd_);
                            v[0][n++] = (w ? J->w2 : J->w1)[s * L + l];
                        }
                        fprintf(f, " %.4g +- %.2g |", mean(v[0], n), sd(v[0], n));
                    }
                fprintf(f, "\n");
            }
    }
    fprintf(f, "\n(c, d): `W2` of the last decoder layer against depth (L-L models):\n\n"
               "| L | Post-LN | Pre-LN | Post / Pre |\n|---|---|---|---|\n");
    for (int i = 0; i < o->n_depths; i++) {
        int Ld = o->depths[i];
        for (int pre = 0; pre < 2; pre++)
            for (int s = 0; s < G; s++)
                v[pre][s] = find_grad(S, Ld, pre, s)->w2[2 * Ld - 1];
        fprintf(f, "| %d | %.4g +- %.2g | %.4g +- %.2g | %.3g |\n", Ld, mean(v[0], G),
                sd(v[0], G), mean(v[1], G), sd(v[1], G), mean(v[0], G) / mean(v[1], G));
    }
    fprintf(f, "\nPlot: `grad.png` (from `grad.gp`).\n\n");
    free(v[0]);
    free(v[1]);
}

static void write_summary(const opts_t *o, sched_t *S, const data_t *D, double sigma,
                          const double integ[2], double wall)
{
    char md[1100];
    snprintf(md, sizeof md, "%s/summary.md", o->out);
    lnk_afile am;
    CK(lnk_afile_open(&am, md));
    FILE *f = am.f;
    fprintf(f, "# Multi30k: Post-LN vs Pre-LN encoder-decoder at initialisation\n\n"
               "seq2seq %d-%d, d = %d, h = %d, d_ff = %d, LayerNorm, Xavier; data: the first %d "
               "pairs of %s -> %s (%d kept, %d dropped by length), V_src = %d, V_tgt = %d%s, "
               "%zu source and %zu target tokens, %zu scored positions, %d chunks of <= %d "
               "padded tokens (%zu in all).\n\n",
            o->L, o->L, o->d, o->h, o->d_ff, o->sentences ? o->sentences : D->n_pairs, o->src,
            o->tgt, D->n_pairs, D->n_dropped, D->V_src, D->V_tgt, o->joint ? " (joint)" : "",
            D->src_tokens, D->tgt_tokens, D->n_scored, D->n_chunks, o->max_tokens, D->padded);
    if (o->do_spec)
        summary_spec(f, o, S, D, sigma, integ);
    if (o->do_grad)
        summary_grad(f, o, S);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(f, "Wall time %.0f s; peak resident memory %.0f MB.\n", wall, ru.ru_maxrss / 1024.0);
    CK(lnk_afile_commit(&am));
}

static void write_gp(const opts_t *o, double sigma)
{
    char gp[1100];
    lnk_afile ag;
    if (o->do_spec) {
        char title[256];
        snprintf(title, sizeof title, "Hessian spectral density at init, Multi30k seq2seq "
                 "%d-%d, d=%d, %d seeds, SLQ %dx%d, sigma=%.3g", o->L, o->L, o->d, o->seeds,
                 o->runs, o->steps, sigma);
        study_density_gp(o->out, title);
    }
    if (o->do_grad) {
        /* Figure 3: seed means with their sd as error bars */
        snprintf(gp, sizeof gp, "%s/grad.gp", o->out);
        CK(lnk_afile_open(&ag, gp));
        fprintf(ag.f,
                "# gnuplot script: Xiong et al. Figure 3 on Multi30k (grad_profile.csv, "
                "grad_depth.csv)\n"
                "set terminal pngcairo size 1350,430 noenhanced\n"
                "set output 'grad.png'\n"
                "set datafile separator ','\n"
                "set multiplot layout 1,3\n"
                "set xlabel 'layer (encoder 1..%d, decoder %d..%d)'\n"
                "set ylabel '||dL/dW||_F (mean +- sd over %d seeds)'\n"
                "set key top left\n"
                "set xrange [0.5:%d.5]\n"
                "set title '(a, b) W1, %d-%d model'\n"
                "plot 'grad_profile.csv' every ::1 using 1:4:5 with yerrorlines lw 2 title "
                "'Post-LN', '' every ::1 using 1:8:9 with yerrorlines lw 2 title 'Pre-LN'\n"
                "set title '(a, b) W2, %d-%d model'\n"
                "plot 'grad_profile.csv' every ::1 using 1:6:7 with yerrorlines lw 2 title "
                "'Post-LN', '' every ::1 using 1:10:11 with yerrorlines lw 2 title 'Pre-LN'\n"
                "set title '(c, d) W2 of the last decoder layer'\n"
                "set xlabel 'L (L-L model)'\nset autoscale x\nset offsets 0.5, 0.5, 0, 0\n"
                "plot 'grad_depth.csv' every ::1 using 1:2:3 with yerrorlines lw 2 title "
                "'Post-LN', '' every ::1 using 1:4:5 with yerrorlines lw 2 title 'Pre-LN'\n"
                "unset multiplot\n",
                o->L, o->L + 1, 2 * o->L, o->grad_seeds, 2 * o->L, o->L, o->L, o->L, o->L);
        CK(lnk_afile_commit(&ag));
    }
}

/* ------------------------------------------------------------ main */

static void parse_depths(opts_t *o, const char *s)
{
    o->n_depths = 0;
    for (const char *p = s; *p;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 1 || v > 256 || o->n_depths == 32 || (*e && *e != ','))
            fail("--depths: expected a list like 6,8,10, got '%s'", s);
        o->depths[o->n_depths++] = (int)v;
        p = *e ? e + 1 : e;
    }
    if (o->n_depths == 0)
        fail("--depths: empty list");
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "multi30k_hessian");
    opts_t o = {.out = "results/multi30k",
                .src = "data/multi30k/val.de",
                .tgt = "data/multi30k/val.en",
                .depths_str = "6,8,10,12,14",
                .d = 32, .h = 4, .d_ff = 64, .L = 6, .sentences = 200, .min_count = 1,
                .max_vocab = 0, .joint = 0, .max_len = 0, .max_tokens = 512,
                .seeds = 3, .grad_seeds = 6, .k = 3, .eig_steps = 40, .probes = 30, .runs = 4,
                .steps = 40, .block_steps = 10, .jobs = 2, .quiet = 0, .do_spec = 1,
                .do_grad = 1, .kappa = 3.0, .eig_tol = 1e-6, .block_tol = 1e-3};
    enum { O_SRC = 256, O_TGT, O_SENT, O_MINC, O_MAXV, O_JOINT, O_MAXLEN, O_MAXTOK, O_DFF,
           O_EIGSTEPS, O_EIGTOL, O_BSTEPS, O_BTOL, O_DEPTHS, O_GSEEDS, O_PARTS, O_JOBS };
    static struct option lo[] = {
        {"out", 1, 0, 'o'},          {"src", 1, 0, O_SRC},          {"tgt", 1, 0, O_TGT},
        {"sentences", 1, 0, O_SENT}, {"min-count", 1, 0, O_MINC},   {"max-vocab", 1, 0, O_MAXV},
        {"joint-vocab", 0, 0, O_JOINT}, {"max-len", 1, 0, O_MAXLEN},
        {"max-tokens", 1, 0, O_MAXTOK}, {"d", 1, 0, 'd'},           {"h", 1, 0, 'H'},
        {"d-ff", 1, 0, O_DFF},       {"L", 1, 0, 'L'},              {"seeds", 1, 0, 's'},
        {"k", 1, 0, 'k'},            {"eig-steps", 1, 0, O_EIGSTEPS}, {"eig-tol", 1, 0, O_EIGTOL},
        {"probes", 1, 0, 'p'},       {"runs", 1, 0, 'r'},           {"steps", 1, 0, 'm'},
        {"block-steps", 1, 0, O_BSTEPS}, {"block-tol", 1, 0, O_BTOL}, {"kappa", 1, 0, 'K'},
        {"depths", 1, 0, O_DEPTHS},  {"grad-seeds", 1, 0, O_GSEEDS}, {"parts", 1, 0, O_PARTS},
        {"jobs", 1, 0, O_JOBS},      {"quiet", 0, 0, 'q'},          {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'o': o.out = optarg; break;
        case O_SRC: o.src = optarg; break;
        case O_TGT: o.tgt = optarg; break;
        case O_SENT: o.sentences = (int)arg_int("sentences", optarg, 0, 1 << 24); break;
        case O_MINC: o.min_count = (int)arg_int("min-count", optarg, 1, 1 << 24); break;
        case O_MAXV: o.max_vocab = (int)arg_int("max-vocab", optarg, 0, 1 << 24); break;
        case O_JOINT: o.joint = 1; break;
        case O_MAXLEN: o.max_len = (int)arg_int("max-len", optarg, 0, 1 << 20); break;
        case O_MAXTOK: o.max_tokens = (int)arg_int("max-tokens", optarg, 2, 1 << 30); break;
        case 'd': o.d = (int)arg_int("d", optarg, 2, 8192); break;
        case 'H': o.h = (int)arg_int("h", optarg, 1, 1024); break;
        case O_DFF: o.d_ff = (int)arg_int("d-ff", optarg, 1, 1 << 20); break;
        case 'L': o.L = (int)arg_int("L", optarg, 1, 256); break;
        case 's': o.seeds = (int)arg_int("seeds", optarg, 1, 1000); break;
        case 'k': o.k = (int)arg_int("k", optarg, 1, 1000); break;
        case O_EIGSTEPS: o.eig_steps = (int)arg_int("eig-steps", optarg, 2, 100000); break;
        case O_EIGTOL: o.eig_tol = arg_pos("eig-tol", optarg, 0); break;
        case 'p': o.probes = (int)arg_int("probes", optarg, 2, 1 << 20); break;
        case 'r': o.runs = (int)arg_int("runs", optarg, 1, 10000); break;
        case 'm': o.steps = (int)arg_int("steps", optarg, 2, 100000); break;
        case O_BSTEPS: o.block_steps = (int)arg_int("block-steps", optarg, 1, 100000); break;
        case O_BTOL: o.block_tol = arg_pos("block-tol", optarg, 0); break;
        case 'K': o.kappa = arg_pos("kappa", optarg, 1); break;
        case O_DEPTHS: o.depths_str = optarg; break;
        case O_GSEEDS: o.grad_seeds = (int)arg_int("grad-seeds", optarg, 1, 1000); break;
        case O_PARTS:
            o.do_spec = strstr(optarg, "spectrum") != NULL;
            o.do_grad = strstr(optarg, "grad") != NULL;
            if (!o.do_spec && !o.do_grad)
                fail("--parts: expected spectrum and/or grad, got '%s'", optarg);
            break;
        case O_JOBS: o.jobs = (int)arg_int("jobs", optarg, 1, 64); break;
        case 'q': o.quiet = 1; break;
        case 'h': usage(); return 0;
        default:
            fail("unknown option or missing value '%s' (--help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    if (o.d % o.h || o.d % 2)
        fail("--d %d must be even and a multiple of --h %d", o.d, o.h);
    parse_depths(&o, o.depths_str);
    char start[32], cmd[1200];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", o.out);
    if (study_root() && system(cmd) != 0) /* only rank 0 writes files */
        fail("cannot create '%s'", o.out);
    data_t D;
    load_data(&o, &D);
    if (!o.quiet && study_root())
        fprintf(stderr, "multi30k_hessian: %d pairs (%d dropped), V_src %d, V_tgt %d, %zu scored "
                "positions, %d chunks (largest %zu padded tokens, %zu in all)\n",
                D.n_pairs, D.n_dropped, D.V_src, D.V_tgt, D.n_scored, D.n_chunks, D.max_chunk,
                D.padded);

    sched_t S = {.o = &o, .D = &D, .t0 = t0};
    pthread_mutex_init(&S.mu, NULL);
    block_t *blk = calloc((size_t)(5 * o.L + 3), sizeof *blk);
    S.nblk = make_blocks(o.L, blk);
    S.blk = blk;
    if (o.do_spec) {
        S.n_spec = 2 * o.seeds;
        S.spec = calloc((size_t)S.n_spec, sizeof *S.spec);
        for (int j = 0; j < S.n_spec; j++) {
            S.spec[j].pre = j / o.seeds;
            S.spec[j].seed = j % o.seeds;
        }
    }
    if (o.do_grad) {
        /* the --L model (Figure 3 a/b) and the depth sweep (c/d), largest first */
        int Ls[33], nL = 0;
        Ls[nL++] = o.L;
        for (int i = 0; i < o.n_depths; i++) {
            int dup = 0;
            for (int j = 0; j < nL; j++)
                dup |= Ls[j] == o.depths[i];
            if (!dup)
                Ls[nL++] = o.depths[i];
        }
        S.grad = calloc((size_t)nL * 2 * o.grad_seeds, sizeof *S.grad);
        for (int i = 0; i < nL; i++)
            for (int pre = 0; pre < 2; pre++)
                for (int s = 0; s < o.grad_seeds; s++)
                    S.grad[S.n_grad++] = (grad_job){.pre = pre, .seed = s, .L = Ls[i]};
    }
    int nth = o.jobs;
    pthread_t th[64];
    for (int i = 0; i < nth; i++)
        if (pthread_create(&th[i], NULL, worker, &S) != 0)
            fail("cannot start thread %d", i);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);

    lnk_config base;
    make_config(&base, &o, &D, 0, o.L, 0);
    char extra[2048];
    snprintf(extra, sizeof extra,
             "{\"study\": \"multi30k_hessian\", \"src\": \"%s\", \"tgt\": \"%s\", "
             "\"sentences\": %d, \"pairs\": %d, \"dropped\": %d, \"max_len\": %d, "
             "\"min_count\": %d, \"max_vocab\": %d, \"joint_vocab\": %s, \"src_eos\": false, "
             "\"n_scored\": %zu, \"chunks\": %d, \"max_tokens\": %d, \"padded_tokens\": %zu, "
             "\"seeds\": %d, \"k\": %d, \"eig_steps\": %d, \"eig_tol\": %g, \"probes\": %d, "
             "\"slq_runs\": %d, \"slq_steps\": %d, \"block_steps\": %d, \"block_tol\": %g, "
             "\"grad_seeds\": %d, \"depths\": \"%s\", \"jobs\": %d, "
             "\"varied\": \"norm_pos in {post, pre}, seed; L for grad.csv\"}",
             o.src, o.tgt, o.sentences, D.n_pairs, D.n_dropped, o.max_len, o.min_count,
             o.max_vocab, o.joint ? "true" : "false", D.n_scored, D.n_chunks, o.max_tokens,
             D.padded, o.seeds, o.k, o.eig_steps, o.eig_tol, o.probes, o.runs, o.steps,
             o.block_steps, o.block_tol, o.grad_seeds, o.depths_str, o.jobs);
    /* MPI: job j ran on rank j % P; the rows of every job to rank 0, which
     * summarises from the files */
    write_rows(&o, &S, &base, extra, start, t0);
    if (!study_root())
        return 0;
    read_jobs(&o, &S);
    double sigma = 0, integ[2] = {0, 0};
    if (o.do_spec)
        sigma = write_density(&o, &base, extra, start, t0, integ);
    if (o.do_grad)
        write_grad(&o, &S, &base, extra, start, t0);
    write_gp(&o, sigma);
    write_summary(&o, &S, &D, sigma, integ, lnk_now() - t0);
    if (!o.quiet)
        fprintf(stderr, "multi30k_hessian: wrote %s/ in %.0f s\n", o.out, lnk_now() - t0);
    for (int j = 0; j < S.n_spec; j++) {
        spec_job *J = &S.spec[j];
        spec_point_free(&J->P);
    }
    for (int j = 0; j < S.n_grad; j++) {
        free(S.grad[j].w1);
        free(S.grad[j].w2);
    }
    free(S.spec);
    free(S.grad);
    free(blk);
    lnk_batches_free(D.chunks, D.n_chunks);
    lnk_config_clear(&base);
    return 0;
}
