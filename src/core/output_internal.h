/* lnkit internal: what the output files' parts share -- afile.c (writing,
 * renames, group commits), output_live.c (the list of temporary files and
 * its critical sections) and output_target.c (where a path leads); see
 * include/lnkit/sys.h. */
#ifndef LNK_CORE_OUTPUT_INTERNAL_H
#define LNK_CORE_OUTPUT_INTERNAL_H

#include <signal.h>
#include <sys/types.h>

/* Temporary files (and open outputs) at most at one time. */
#define LIVE_MAX 256

/* A critical section: the fatal signals blocked in this thread, a handler
 * in another thread kept waiting.  -1 (nothing entered) if the process is
 * terminating. */
int lnk_out_crit_enter(sigset_t *old);
void lnk_out_crit_leave(const sigset_t *old);
/* Put p on the list (critical section held); -1 if full. */
int lnk_out_live_add(char *p);
/* Take p off the list (critical section held). */
void lnk_out_live_drop(const char *p);
/* Take a temporary file off the list, removing it (unlink_it) or not (it
 * was renamed), and free its name (kept while the process terminates). */
void lnk_out_tmp_release(char *p, int unlink_it);
/* Every listed file removed and taken off the list. */
void lnk_out_live_remove_all(void);

/* Where a path leads: a regular file (existing or to be created) that is
 * replaced by rename, or a device or FIFO written in place.  Symbolic links
 * are followed: the link stays, the file it leads to is written. */
typedef struct {
    int kind;      /* LNK_OUT_FILE or LNK_OUT_STREAM */
    int exists;
    mode_t mode;   /* of an existing regular file */
    char *final;   /* the regular file's path after following links (malloc'd) */
} lnk_out_target;
/* path's target into *t, or an error naming what path is instead. */
int lnk_out_resolve(const char *path, lnk_out_target *t);
/* The folder of a path ("." if none), malloc'd. */
char *lnk_out_dir_of(const char *p);

#endif
