/* A checkpointed run of curvature products (front/ckpt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/ckpt.h"
#include "front/progress.h"
#include "lnkit/sha256.h"

const char CLI_CHECKPOINT_DOC[] =
    "The state (the Lanczos coefficients and the partial reorthogonalisation's "
    "estimates, the probes done, the sums so far) is saved atomically every few "
    "products; the rows are appended, so a save costs the new rows only, and in full "
    "mode the Lanczos basis lives in that file (mapped): the disk holds (max-steps + 1) "
    "vectors of the block's size, reserved when the run starts. A resumed run gives "
    "bitwise the output of an uninterrupted one. FILE records what it belongs to (the "
    "resolved configuration, the weights and every batch file by SHA-256, the options "
    "that change numbers, the BLAS kernel, library and threads, the lnkit build): "
    "another run is refused naming the first item that differs.";

#define T cli_ckpt_opts
const cli_opt cli_ckpt_table[] = {
    CLI_OPT_CHECKPOINT(T, path),
    CLI_OPT_CHECKPOINT_EVERY(T, every),
    {.type = CLI_FLAG, .name = "resume-anywhere", CLI_AT(T, resume_anywhere), .flags = CLI_META,
     .needs = "checkpoint",
     .help = "resume a checkpoint written with another BLAS kernel, library, thread count or "
             "lnkit build (the result is then not bitwise an uninterrupted run's; the sidecar "
             "records the change)"},
    {0}};
#undef T

void cli_ckpt_opts_default(cli_ckpt_opts *o)
{
    o->every = 5;
}

/* The checkpoint lock of this process (one run a process): held from the
 * check of the paths to cli_ckpt_unlock, released at exit otherwise (an
 * error's exit: the lock file goes with it). */
static lnk_ckpt_lock *held;

void cli_ckpt_unlock(void)
{
    lnk_ckpt_lock_release(held);
    held = NULL;
}

void cli_ckpt_lock(const char *path, const char *cmd)
{
    cli_check(lnk_ckpt_lock_take(&held, path, cmd));
    atexit(cli_ckpt_unlock);
}

int cli_ckpt_id_config(lnk_ckpt_id *id, const char *name, const lnk_config *c)
{
    char *cj = lnk_config_to_json(c, 0, NULL, 0);
    if (!cj)
        return lnk_error(LNK_ENOMEM, "out of memory");
    lnk_sha256 h;
    unsigned char d[32];
    char hex[65];
    lnk_sha256_init(&h);
    lnk_sha256_update(&h, cj, strlen(cj));
    lnk_sha256_final(&h, d);
    lnk_sha256_hex(d, hex);
    free(cj);
    return lnk_ckpt_id_add(id, name, "%s", hex);
}

void cli_ckpt_start(cli_ckpt_run *r, const lnk_hessian *h, long total, int every)
{
    r->h = h;
    r->total = total;
    r->every = every;
    r->work_t0 = r->last_save_t = lnk_now();
}

void cli_ckpt_open(cli_ckpt_run *r, const cli_ckpt_opts *o, const char *cmd, lnk_ckpt_id *id,
                   int kind, size_t row_len, size_t max_rows, int mapped)
{
    if (!o->path)
        return;
    int rc = lnk_ckpt_id_add_build(id);
    id->resume_anywhere = o->resume_anywhere;
    cli_check(rc);
    cli_check(lnk_ckpt_open(&r->ck, held, o->path, cmd, id, kind, row_len, max_rows, mapped));
    lnk_ckpt_id_free(id);
    r->resumed_from = r->last_saved = lnk_ckpt_products(r->ck);
    const char *moved = lnk_ckpt_moved(r->ck);
    if (*moved && !(r->moved = strdup(moved)))
        cli_die("out of memory");
    if (lnk_ckpt_resumed(r->ck) && *moved)
        cli_say("resumed from %ld products (checkpoint %s) elsewhere (--resume-anywhere): %s; "
                "the result is not bitwise an uninterrupted run's\n", r->resumed_from, o->path,
                moved);
    else if (lnk_ckpt_resumed(r->ck))
        cli_say("resumed from %ld products (checkpoint %s)\n", r->resumed_from, o->path);
    else
        cli_say("checkpoint %s: a new run, saved every %d products\n", o->path, r->every);
}

long cli_ckpt_products(const cli_ckpt_run *r)
{
    return r->resumed_from + lnk_hessian_n_products(r->h);
}

int cli_ckpt_due(cli_ckpt_run *r, int must)
{
    int go = must || cli_ckpt_products(r) - r->last_saved >= r->every ||
             lnk_now() - r->last_save_t >= 600;
    if (lnk_comm_size() > 1) /* rank 0's clock decides for all */
        cli_check(lnk_comm_bcast(&go, sizeof go, 0));
    return go;
}

int cli_ckpt_saved(cli_ckpt_run *r, int rc)
{
    if (rc == LNK_OK) {
        r->last_saved = cli_ckpt_products(r);
        r->last_save_t = lnk_now();
    }
    return rc;
}

int cli_ckpt_save_eigs(void *ctx, const lnk_eigs_state *st, int must)
{
    cli_ckpt_run *r = ctx;
    if (!cli_ckpt_due(r, must))
        return LNK_OK;
    return cli_ckpt_saved(r, lnk_ckpt_save_eigs(r->ck, st, cli_ckpt_products(r)));
}

void cli_ckpt_done(cli_ckpt_run *r)
{
    if (r->ck)
        cli_check(lnk_ckpt_remove(r->ck));
    cli_ckpt_close(r);
}

void cli_ckpt_close(cli_ckpt_run *r)
{
    lnk_ckpt_close(r->ck);
    r->ck = NULL;
    free(r->moved);
    r->moved = NULL;
}

double cli_ckpt_rate(const cli_ckpt_run *r, char *buf, size_t n)
{
    long done = cli_ckpt_products(r), here = lnk_hessian_n_products(r->h);
    double t = lnk_now() - r->work_t0, rate = t > 0 ? here / t * 3600 : 0;
    char from[48] = "", per[32] = "";
    if (r->resumed_from)
        snprintf(from, sizeof from, " (resumed from %ld)", r->resumed_from);
    if (rate > 0)
        snprintf(per, sizeof per, ", %.0f/h", rate);
    snprintf(buf, n, "  | %ld/%ld products%s%s", done, r->total, from, per);
    return rate > 0 && r->total > 0 ? (done < r->total ? (r->total - done) / rate * 3600 : 0) : -1;
}

/* One time left per line: the products' rate when there is one; else the
 * units' own (bound: "at most"); after a resume, none until a product. */
static void left_text(char *buf, size_t n, double by_rate, double by_units, int bound,
                      const cli_ckpt_run *r)
{
    char t[32];
    if (by_rate >= 0 || !r || !r->resumed_from) {
        cli_human_time(by_rate >= 0 ? by_rate : by_units, t, sizeof t);
        snprintf(buf, n, "%s %s left", by_rate < 0 && bound ? "at most" : "about", t);
    } else
        snprintf(buf, n, "time left after the next product");
}

int cli_eigs_progress_fn(void *ctx, const lnk_eigs_progress *p)
{
    cli_eigs_progress *pc = ctx;
    if (p->elapsed - pc->last < pc->every && p->step != p->max_steps)
        return 0;
    pc->last = p->elapsed;
    double eta = p->elapsed / p->step * (p->max_steps - p->step);
    char top[40] = "", bot[40] = "", rate[160];
    if (p->n_top)
        snprintf(top, sizeof top, "  top %.6g", p->top[0]);
    if (p->n_bottom)
        snprintf(bot, sizeof bot, "  bottom %.6g", p->bottom[0]);
    double by_rate = pc->run ? cli_ckpt_rate(pc->run, rate, sizeof rate) : (rate[0] = 0, -1);
    char left[64];
    left_text(left, sizeof left, by_rate, eta, 1, pc->run);
    cli_say("%s%sstep %d/%d%s%s  converged %d/%d  %.1f s (%s)%s\n",
            pc->what ? pc->what : "", pc->what ? ": " : "", p->step, p->max_steps, top, bot,
            p->n_converged, p->n_top + p->n_bottom, p->elapsed, left, rate);
    return 0;
}

int cli_progress_fn(void *ctx, int done, int total, double elapsed)
{
    cli_progress *p = ctx;
    if (elapsed - p->last >= 1.0 || done == total) {
        p->last = elapsed;
        char rate[160] = "", left[64];
        double by_rate = p->run ? cli_ckpt_rate(p->run, rate, sizeof rate) : -1;
        left_text(left, sizeof left, by_rate, elapsed / done * (total - done), 0, p->run);
        cli_say("%s %d/%d  %.1f s (%s)%s\n", p->unit, done, total, elapsed, left, rate);
    }
    return 0;
}
