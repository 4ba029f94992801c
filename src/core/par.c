/* The pool behind lnk_par_for (see src/core/par.h): workers 1..nworkers
 * sleep on a condition variable until the generation counter moves, claim
 * their part of the job and run it; the caller, done with part 0, runs the
 * parts no worker has claimed yet (a worker not scheduled on a loaded
 * machine does not hold the job up), then waits for the parts under way.
 * Which thread runs a part does not change its bits. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/par.h"

#define PAR_MAX 64

static struct {
    pthread_mutex_t job;  /* held by the caller of a parallel job */
    pthread_mutex_t m;    /* guards gen, completed, nparts */
    pthread_cond_t go, done;
    unsigned long gen;    /* jobs dispatched */
    unsigned long born[PAR_MAX]; /* gen when worker k was started */
    int nworkers, atfork;
    int nparts, completed; /* parts of the job; parts 1.. done */
    atomic_int claimed[PAR_MAX]; /* part k taken (by worker k or the caller) */
    lnk_par_fn fn;
    void *ctx;
    size_t n;
    double *scr[PAR_MAX];
    size_t scr_n[PAR_MAX];
} P = {.job = PTHREAD_MUTEX_INITIALIZER, .m = PTHREAD_MUTEX_INITIALIZER,
       .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void run_part(int k)
{
    size_t lo = P.n * (size_t)k / (size_t)P.nparts, hi = P.n * (size_t)(k + 1) / (size_t)P.nparts;
    if (hi > lo)
        P.fn(P.ctx, lo, hi, P.scr[k]);
}

/* Part k >= 1, claimed: run it and count it done. */
static void run_claimed(int k)
{
    run_part(k);
    pthread_mutex_lock(&P.m);
    if (++P.completed == P.nparts - 1)
        pthread_cond_signal(&P.done);
    pthread_mutex_unlock(&P.m);
}

static void *worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    pthread_mutex_lock(&P.m);
    unsigned long seen = P.born[k];
    for (;;) {
        while (P.gen == seen)
            pthread_cond_wait(&P.go, &P.m);
        seen = P.gen;
        pthread_mutex_unlock(&P.m);
        /* a claim succeeds only for a part of the job in progress (the
         * caller resets the flags after it has written the job) */
        if (!atomic_exchange(&P.claimed[k], 1))
            run_claimed(k);
        pthread_mutex_lock(&P.m);
    }
    return NULL;
}

/* A forked child has none of the parent's workers: start afresh. */
static void after_fork_child(void)
{
    pthread_mutex_init(&P.job, NULL);
    pthread_mutex_init(&P.m, NULL);
    pthread_cond_init(&P.go, NULL);
    pthread_cond_init(&P.done, NULL);
    P.nworkers = 0;
}

void lnk_par_for(size_t n, size_t grain, size_t scratch_n, double *scratch0, lnk_par_fn fn,
                 void *ctx)
{
    lnk_par_for_threads(openblas_get_num_threads(), n, grain, scratch_n, scratch0, fn, ctx);
}

void lnk_par_for_threads(int want, size_t n, size_t grain, size_t scratch_n, double *scratch0,
                         lnk_par_fn fn, void *ctx)
{
    size_t most = grain ? n / grain : n;
    if (want > PAR_MAX)
        want = PAR_MAX;
    if ((size_t)want > most)
        want = (int)most;
    if (want <= 1 || pthread_mutex_trylock(&P.job) != 0) {
        fn(ctx, 0, n, scratch0);
        return;
    }
    if (!P.atfork)
        P.atfork = pthread_atfork(NULL, NULL, after_fork_child) == 0;
    while (P.nworkers < want - 1) {
        pthread_t t;
        int k = P.nworkers + 1;
        pthread_mutex_lock(&P.m);
        P.born[k] = P.gen;
        pthread_mutex_unlock(&P.m);
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)k) != 0)
            break;
        pthread_detach(t);
        P.nworkers = k;
    }
    int np = want < P.nworkers + 1 ? want : P.nworkers + 1;
    for (int k = 1; k < np; k++)
        if (scratch_n > P.scr_n[k]) {
            double *s = realloc(P.scr[k], scratch_n * sizeof(double));
            if (!s) {
                np = k;
                break;
            }
            P.scr[k] = s;
            P.scr_n[k] = scratch_n;
        }
    if (np <= 1) {
        pthread_mutex_unlock(&P.job);
        fn(ctx, 0, n, scratch0);
        return;
    }
    P.scr[0] = scratch0;
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    pthread_mutex_lock(&P.m);
    P.nparts = np;
    P.completed = 0;
    pthread_mutex_unlock(&P.m);
    for (int k = 1; k < PAR_MAX; k++)
        atomic_store(&P.claimed[k], k < np ? 0 : 1);
    pthread_mutex_lock(&P.m);
    P.gen++;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.m);
    run_part(0);
    for (int k = 1; k < np; k++)
        if (!atomic_exchange(&P.claimed[k], 1))
            run_claimed(k);
    pthread_mutex_lock(&P.m);
    while (P.completed < np - 1)
        pthread_cond_wait(&P.done, &P.m);
    pthread_mutex_unlock(&P.m);
    pthread_mutex_unlock(&P.job);
}
