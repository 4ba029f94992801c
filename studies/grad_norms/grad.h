/* The gradient-norm study's points and sweep (studies/grad_norms.c, the
 * driver: its options and the loop over the configurations). */
#ifndef STUDIES_GRAD_NORMS_GRAD_H
#define STUDIES_GRAD_NORMS_GRAD_H

#include <stddef.h>
#include "lnkit/lnkit.h"
#include "kit/kit.h"

enum { SW_DEPTH, SW_WIDTH, SW_PROFILE };
extern const char *const sweep_name[3];

typedef struct {
    int sweep;
    const char *out;
    int Ls[64], nL, ds[64], nd;
    int L, d;
    int settings[2], nset;   /* 0 theorem, 1 realistic */
    int pos[2], npos;        /* 0 post, 1 pre */
    int tasks[3], ntask;     /* lnk_task */
    int seeds, seed0, nb, B, T, V, heads, ffmult, tie, threads;
    double ls_theorem, ls_real, beps, checkpoint;
    int verbose, no_hidden;
} opts;

/* ----------------------------------------------------------- one point (point.c) */

typedef struct {
    int setting, task, pos, L, d, h, dff, V, B, T, nb, tie;
    double ls, beps;
    char key[256];
} pconf;

const char *set_name(int s);
const char *pos_name(int p);
pconf make_pconf(const opts *o, int setting, int task, int pos, int L, int d);
void make_config(const pconf *p, int seed, lnk_config *c);

/* A gradient statistic over the batches: a tensor or a glob group. */
typedef struct {
    char stack[4];
    int layer;
    char label[32];      /* "ffn.w2", "block", ... */
    char pattern[96];
    int *tix, nt;        /* matching tensors */
    double sum_norm;     /* sum over batches of ||g_b|| */
    double nom;          /* ||mean_b g_b|| (after the batches) */
} item;

/* Hidden-state accumulator of one site over the batches. */
typedef struct {
    const char *stack, *site;
    int layer, has_jac;
    size_t n;
    double mean, sd, max, frac, jmean, jmax;
} hsite;

typedef struct {
    hsite *v;
    int n, cap;
} hlist;

typedef struct {
    double loss, gnorm, seconds;
    item *it;
    int nit;
    hlist hid;
} presult;

/* Parameter and gradient buffers kept from point to point: fresh 100 MB
 * arrays for every seed would cost their page faults again each time. */
typedef struct {
    double *th, *g;
    size_t n;
} pbuf;

/* Point (p, seed): the loss, the gradient statistics of its items and (hidden)
 * the hidden-state statistics over the batches; presult_free the result. */
void run_point(const pconf *p, int seed, int profile, int hidden, pbuf *buf, presult *r);
void presult_free(presult *r);

/* ----------------------------------------------------------- the sweep (sweep.c) */

/* Sorted "key#seed" strings of the points already in the main CSV. */
typedef struct {
    char **v;
    size_t n;
} keyset;

typedef struct {
    const opts *o;
    const char *path, *hpath;
    out_csv main, hid;     /* hid: unless --no-hidden */
    lnk_config base;
    int have_base;
    char start[32];
    double t0, last_ckpt;
    int computed, skipped;
    /* Points to compute (not in the CSV when the run began), numbered j = 0, 1, ...
     * in loop order; point j is rank j % P's (kit/kit.h), its rows those of
     * csv_point(j).  npend: points done so far. */
    keyset old;            /* (key, seed) of the rows read from the CSV */
    char **confs;          /* keys of the configurations met so far */
    int nconf;
    long npend;
    pbuf buf;              /* run_point's parameter and gradient buffers */
} sweep;

/* Open (or resume: -> the points already there) the sweep's CSVs s->path and,
 * unless --no-hidden, s->hpath; returns the rows kept. */
size_t sweep_open(sweep *s);
/* The seeds of configuration p (idx of total, for the progress line). */
void run_conf(sweep *s, const pconf *p, int idx, int total);
/* Collective: the rows of the points done so far to rank 0, which rewrites
 * the CSVs and their sidecars if they have new rows (last: csv_close). */
void checkpoint(sweep *s, int last);
void sweep_free(sweep *s);

#endif
