/* Progress lines and time left (front/progress.h). */
#include <stdio.h>
#include <stdlib.h>

#include "front/front.h"
#include "front/progress.h"
#include "lnkit/hessian.h"

const double cli_sweep_cost[4] = {1, 1.2, 2.6, 4.8};

void cli_human_time(double sec, char *buf, size_t n)
{
    if (sec < 120)
        snprintf(buf, n, "%.0f s", sec);
    else if (sec < 7200)
        snprintf(buf, n, "%.0f min", sec / 60);
    else
        snprintf(buf, n, "%.1f h", sec / 3600);
}

void cli_time_left(char *buf, size_t n, double elapsed, double done, double total)
{
    char t[32] = "?";
    if (done > 0)
        cli_human_time(done < total ? elapsed / done * (total - done) : 0, t, sizeof t);
    snprintf(buf, n, "about %s left", t);
}

void cli_meter_start(cli_meter *pr, double total)
{
    *pr = (cli_meter){.every = 5, .t0 = lnk_now(), .total = total};
#ifdef LNK_TESTING
    const char *s = getenv("LNK_TEST_PROGRESS");
    char *end;
    double e = s && *s ? strtod(s, &end) : -1;
    if (s && *s && (*end || !(e >= 0)))
        cli_die("LNK_TEST_PROGRESS: expected seconds >= 0, got '%s'", s);
    if (e >= 0)
        pr->every = e;
#endif
    pr->last = pr->t0;
}

void cli_meter_add(cli_meter *pr, double work)
{
    pr->done += work;
    double now = lnk_now(), e = now - pr->t0;
    if (now - pr->last < pr->every || cli_quiet)
        return;
    pr->last = now;
    char left[48];
    cli_time_left(left, sizeof left, e, pr->done, pr->total);
    double pc = pr->total > 0 ? 100 * pr->done / pr->total : 0;
    cli_say("%s%s%.0f%% done  %.1f s (%s)\n", pr->what ? pr->what : "", pr->what ? ": " : "",
            pc < 100 ? pc : 100, e, left);
}

static void pass_tick(void *ctx, int sweep, int done, int total)
{
    (void)done;
    cli_meter_add(ctx, cli_sweep_cost[sweep] / total);
}

void cli_meter_model(cli_meter *pr, lnk_model *m, double total)
{
    cli_meter_start(pr, total);
    pr->m = m;
    lnk_model_set_progress(m, pass_tick, pr);
}

void cli_meter_end(cli_meter *pr)
{
    if (pr->m)
        lnk_model_set_progress(pr->m, NULL, NULL);
    pr->m = NULL;
}

double cli_product_cost(int kind)
{
    double r = cli_sweep_cost[LNK_SWEEP_REVERSE];
    return kind == LNK_OP_GGN ? cli_sweep_cost[LNK_SWEEP_TANGENT] + r
                              : CLI_PASS_TANGENT + (kind == LNK_OP_FUNCTIONAL ? r : 0);
}

static int first_apply(void *ctx, const double *x, double *y)
{
    cli_first_meter *f = ctx;
    if (!(f->cost > 0))
        return f->in.apply(f->in.ctx, x, y);
    cli_meter pr;
    cli_meter_model(&pr, f->m, f->cost);
    pr.what = "first pass over the data";
    int st = f->in.apply(f->in.ctx, x, y);
    cli_meter_end(&pr);
    f->cost = 0;
    return st;
}

lnk_operator cli_meter_first(cli_first_meter *f, lnk_operator in, lnk_model *m, double cost)
{
    *f = (cli_first_meter){in, m, cost};
    return (lnk_operator){in.n, f, first_apply, in.group};
}
