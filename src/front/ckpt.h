/* A checkpointed run of curvature products (lnkit eigs, trace, density; the
 * placement study's --part eigs): --checkpoint and --checkpoint-every
 * declared once, the lock, the identity's shared items, the save rule and
 * the rate and time left of the progress lines.  The library's checkpoint
 * (lnkit/checkpoint.h) holds the state; this is the programs' side of it. */
#ifndef LNK_FRONT_CKPT_H
#define LNK_FRONT_CKPT_H

#include "front/front.h"
#include "front/opt.h"
#include "lnkit/checkpoint.h"
#include "lnkit/curvature.h"
#include "lnkit/hessian.h"

/* --checkpoint FILE, --checkpoint-every N (5), --resume-anywhere. */
typedef struct {
    const char *path;   /* NULL: no checkpoint */
    int every;          /* products between saves */
    int resume_anywhere;
} cli_ckpt_opts;
void cli_ckpt_opts_default(cli_ckpt_opts *o);
#define CLI_OPT_CHECKPOINT(T, f)                                                                  \
    {.type = CLI_STR, .name = "checkpoint", .arg = "FILE", CLI_AT(T, f), .flags = CLI_WRITES,    \
     .help = "save the run's state to FILE (vectors in its rows file) and continue from it when " \
             "started again with the same arguments; removed when the run completes; a second " \
             "run on it is refused while this one holds it",                                     \
     .doc = CLI_CHECKPOINT_DOC}
#define CLI_OPT_CHECKPOINT_EVERY(T, f)                                                            \
    {.type = CLI_INT, .name = "checkpoint-every", .arg = "N", CLI_AT(T, f), .min = 1,            \
     .max = 1 << 30, .needs = "checkpoint",                                                     \
     .help = "products between saves (a save also after 10 minutes)"}
extern const char CLI_CHECKPOINT_DOC[];
/* The three as a group (fields of a cli_ckpt_opts). */
extern const cli_opt cli_ckpt_table[];
#define CLI_CKPT(T, f)                                                                            \
    {.type = CLI_GROUP, CLI_AT(T, f), .ref = cli_ckpt_table, .help = "Checkpoints"}

/* The run: its checkpoint (NULL without --checkpoint) and its products. */
typedef struct {
    lnk_ckpt *ck;
    const lnk_hessian *h; /* counts this process's products */
    int every;
    long resumed_from;  /* products of the state resumed from (0: a fresh run) */
    char *moved;        /* --resume-anywhere: what changed (lnk_ckpt_moved), or NULL */
    long last_saved;    /* products at the last save */
    double last_save_t, work_t0; /* lnk_now() at the last save, at the start of the work */
    long total;         /* products the run takes at most (for the estimate) */
} cli_ckpt_run;

/* The lock on path (lnk_ckpt_lock_take, collective), taken before the
 * work and held until cli_ckpt_unlock or the end of the process; cmd names
 * the command in messages.  cli_ckpt_open uses it (without it,
 * lnk_ckpt_open takes its own). */
void cli_ckpt_lock(const char *path, const char *cmd);
void cli_ckpt_unlock(void);
/* The name of that item in the programs' checkpoints and records (the
 * placements study's checkpoints keep their own, older one). */
#define CLI_ID_CONFIG "the configuration (SHA-256 of its resolved keys)"
/* The identity item name = the SHA-256 of c's resolved keys (its JSON). */
int cli_ckpt_id_config(lnk_ckpt_id *id, const char *name, const lnk_config *c);

/* The work starts: products of h, at most total of them (the estimate). */
void cli_ckpt_start(cli_ckpt_run *r, const lnk_hessian *h, long total, int every);
/* With o->path: the build's items appended to id (lnk_ckpt_id_add_build:
 * what fixes the rounding), the checkpoint opened (resumed or begun) for
 * kind (see lnk_ckpt_open), id freed, and a line on what happened.  Dies
 * on a mismatch or a bad file (collective).  Nothing without o->path. */
void cli_ckpt_open(cli_ckpt_run *r, const cli_ckpt_opts *o, const char *cmd, lnk_ckpt_id *id,
                   int kind, size_t row_len, size_t max_rows, int mapped);
/* Products of the whole run so far (resumed ones included). */
long cli_ckpt_products(const cli_ckpt_run *r);
/* 1 if a save is due now (every N products, 10 minutes, or must); the same
 * answer on every rank.  cli_ckpt_saved records a save whose status is rc
 * (when LNK_OK) and returns rc. */
int cli_ckpt_due(cli_ckpt_run *r, int must);
int cli_ckpt_saved(cli_ckpt_run *r, int rc);
/* The lnk_eigs_opts.checkpoint callback (ctx: the cli_ckpt_run). */
int cli_ckpt_save_eigs(void *ctx, const lnk_eigs_state *st, int must);
/* The run is complete and its outputs committed: remove the checkpoint
 * (every rank calls it).  cli_ckpt_close: close it, left on disk (a run that
 * failed); both free r's own memory. */
void cli_ckpt_done(cli_ckpt_run *r);
void cli_ckpt_close(cli_ckpt_run *r);
/* "  | P/T products (resumed from R), X/h" for progress lines; returns the
 * seconds left at that rate (every product counted, a first pass's too), or
 * -1 before this process has made a product. */
double cli_ckpt_rate(const cli_ckpt_run *r, char *buf, size_t n);

/* The progress line of a Lanczos eigenvalue run (lnk_eigs_opts.progress;
 * ctx: a cli_eigs_progress): "[what: ]step s/M  top t  bottom b  converged
 * c/k  elapsed (at most ... left)" and the run's rate, at most once every
 * `every` seconds and at the last step. */
typedef struct {
    const char *what;   /* NULL, or a prefix naming the run */
    double every, last;
    const cli_ckpt_run *run;
} cli_eigs_progress;
int cli_eigs_progress_fn(void *ctx, const lnk_eigs_progress *p);
/* The progress line of a run of units (lnk_trace's probes, lnk_slq's steps;
 * ctx: a cli_progress): "UNIT done/total  elapsed (about T left)" and the
 * run's rate, at most once a second and at the last unit. */
typedef struct {
    const char *unit;
    double last;
    const cli_ckpt_run *run; /* NULL, or the run whose products and rate are shown */
} cli_progress;
int cli_progress_fn(void *ctx, int done, int total, double elapsed);

#endif
