/* Output files (include/lnkit/sys.h): the list of temporary files that
 * exist now, removed on fatal signals and at exit, and the critical sections
 * that keep the list and the renames whole.  afile.c writes the files. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/output_internal.h"
#include "lnkit/sys.h"

/* Temporary files that exist now: removed by a fatal signal (SIGTERM,
 * SIGINT, SIGHUP, SIGPIPE) and at exit.  Every change of this list and every
 * rename phase happens in a critical section: the calling thread blocks the
 * fatal signals, and `busy` tells a handler running in another thread (the
 * process has BLAS threads) to wait.  The handler sets `dying` first and a
 * critical section that sees it does nothing, so (sequentially consistent
 * atomics) either the handler sees the section and waits for it, or the
 * section sees the handler: a temporary file cannot be created without being
 * on the list when the handler reads it. */
static char *_Atomic live[LIVE_MAX];
static atomic_int busy, dying; /* dying: 0, or why */
enum { DYING_SIGNAL = 1, DYING_EXIT = 2 };
static const int fatal_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE};
#define N_FATAL 4

static void fatal_set(sigset_t *s)
{
    sigemptyset(s);
    for (int k = 0; k < N_FATAL; k++)
        sigaddset(s, fatal_sigs[k]);
}

int lnk_out_crit_enter(sigset_t *old)
{
    sigset_t s;
    fatal_set(&s);
    pthread_sigmask(SIG_BLOCK, &s, old);
    atomic_fetch_add(&busy, 1);
    int d = atomic_load(&dying);
    if (d) {
        atomic_fetch_sub(&busy, 1);
        pthread_sigmask(SIG_SETMASK, old, NULL);
        /* a fatal signal is being handled in another thread, which ends the
         * process in a moment: wait for it rather than report an error */
        struct timespec ts = {0, 1000000};
        for (int k = 0; d == DYING_SIGNAL && k < 10000; k++)
            nanosleep(&ts, NULL);
        return -1;
    }
    return 0;
}

void lnk_out_crit_leave(const sigset_t *old)
{
    atomic_fetch_sub(&busy, 1);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The process that listed the files: a child made by fork() that exits or
 * is signalled must not remove its parent's temporary files. */
static pid_t owner;

static void remove_live(void)
{
    if (getpid() != owner)
        return;
    for (int i = 0; i < LIVE_MAX; i++) {
        char *p = atomic_load(&live[i]);
        if (p)
            unlink(p);
    }
}

static void on_fatal_signal(int sig)
{
    int e = errno;
    atomic_store(&dying, DYING_SIGNAL);
    /* a critical section in another thread lasts microseconds; wait at most 5 s */
    struct timespec ts = {0, 100000};
    for (int k = 0; k < 50000 && atomic_load(&busy) > 0; k++)
        nanosleep(&ts, NULL);
    remove_live();
    signal(sig, SIG_DFL);
    errno = e;
    raise(sig);
}

static void at_exit(void)
{
    atomic_store(&dying, DYING_EXIT);
    remove_live();
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
    owner = getpid();
    sigset_t block;
    fatal_set(&block);
    for (int k = 0; k < N_FATAL; k++) {
        struct sigaction old, sa;
        /* leave alone a signal that is ignored or that the program handles */
        if (sigaction(fatal_sigs[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_mask = block;
        sigaction(fatal_sigs[k], &sa, NULL);
    }
    atexit(at_exit);
}

void lnk_output_init(void) { pthread_once(&init_once, init); }

/* Put p on the list (critical section held); -1 if full. */
int lnk_out_live_add(char *p)
{
    for (int i = 0; i < LIVE_MAX; i++) {
        char *expect = NULL;
        if (atomic_compare_exchange_strong(&live[i], &expect, p))
            return 0;
    }
    return -1;
}

void lnk_out_live_drop(const char *p)
{
    for (int i = 0; i < LIVE_MAX; i++)
        if (atomic_load(&live[i]) == p)
            atomic_store(&live[i], NULL);
}

/* Take a temporary file off the list, removing it (unlink_it) or not (it
 * was renamed), and free its name.  While the process is terminating the
 * name stays listed and allocated: the handler or the exit clean-up reads
 * it, so it must never be freed while listed. */
void lnk_out_tmp_release(char *p, int unlink_it)
{
    sigset_t old;
    if (!p || lnk_out_crit_enter(&old) != 0)
        return;
    if (unlink_it)
        unlink(p);
    lnk_out_live_drop(p);
    lnk_out_crit_leave(&old);
    free(p);
}

/* Every listed file removed and taken off the list (lnk_output_abort_all). */
void lnk_out_live_remove_all(void)
{
    sigset_t old;
    if (lnk_out_crit_enter(&old) != 0)
        return;
    for (int i = 0; i < LIVE_MAX; i++) {
        char *p = atomic_load(&live[i]);
        if (p) {
            unlink(p);
            atomic_store(&live[i], NULL);
        }
    }
    lnk_out_crit_leave(&old);
}
