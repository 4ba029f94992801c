/* Progress lines of long work other than a Lanczos run (the model's passes
 * of lnkit eval, hvp and vector --gradient, lnkit select's keys) and the
 * time left of the studies' points, as eigs prints its own (front/ckpt.h).
 *
 * A run plans its work in units of its own choosing (for the model's passes:
 * forward sweeps, cli_sweep_cost), reports what it has done, and
 * cli_meter prints "NAME: [WHAT: ]P% done  E s (about L left)" (cli_say; WHAT:
 * the item at work, a field the run may change between reports) at most
 * once every `every` seconds (5) and never before `every` seconds: a short
 * run prints nothing.  The estimate is the rate so far, done / elapsed.
 * Test builds (LNK_TESTING): LNK_TEST_PROGRESS=S sets `every` to S seconds
 * (0: at every report), so a test can see the lines of a short run. */
#ifndef LNK_FRONT_PROGRESS_H
#define LNK_FRONT_PROGRESS_H

#include <stddef.h>
#include "lnkit/curvature.h"
#include "lnkit/model.h"

typedef struct {
    double every, t0, last;
    double total, done;   /* work planned and done */
    lnk_model *m;         /* the model whose passes report, or NULL */
    const char *what;     /* the item at work, or NULL */
} cli_meter;

/* The cost of one sweep of each LNK_SWEEP_* kind, in forward sweeps (the
 * output layer's share counted in the sweep after it): the reverse sweep,
 * the tangent one and the tangent reverse one cost about 1.2, 2.6 and 4.8
 * forward sweeps (measured on an lm, d = 256, h = 8, L = 6, V = 4000, a
 * batch of 16 x 128). */
extern const double cli_sweep_cost[4];
/* A primal pass with its reverse sweep, a tangent pass with its reverse
 * sweep: the plans' units for the model's passes. */
#define CLI_PASS_PRIMAL (cli_sweep_cost[LNK_SWEEP_FORWARD] + cli_sweep_cost[LNK_SWEEP_REVERSE])
#define CLI_PASS_TANGENT \
    (cli_sweep_cost[LNK_SWEEP_TANGENT] + cli_sweep_cost[LNK_SWEEP_TANGENT_REVERSE])

/* One product's sweeps past the primal pass, in forward sweeps, for an
 * operator of kind (an lnk_op_kind): H v's tangent pass, G v's tangent
 * and plain reverse sweeps, F v's both (model/ggn.c). */
double cli_product_cost(int kind);

/* Start pr for `total` units of work, now. */
void cli_meter_start(cli_meter *pr, double total);
/* `work` more units done: a line if one is due. */
void cli_meter_add(cli_meter *pr, double work);
/* Start pr for `total` units of the model's passes and report them
 * (lnk_model_set_progress); cli_meter_end removes the hook. */
void cli_meter_model(cli_meter *pr, lnk_model *m, double total);
void cli_meter_end(cli_meter *pr);

/* The first product of an operator on m's passes metered: a long first pass
 * over the data (its primal passes, kept for the later products) says how
 * far it is, as cli_meter does, as "first pass over the data"; cost: its
 * units (the chunks' primal passes and the product's sweeps).  The products
 * are in's, untouched; the later ones are not metered.  f must outlive the
 * operator returned. */
typedef struct {
    lnk_operator in;
    lnk_model *m;
    double cost; /* 0 once the first product ran */
} cli_first_meter;
lnk_operator cli_meter_first(cli_first_meter *f, lnk_operator in, lnk_model *m, double cost);

/* "40 s", "12 min", "3.5 h". */
void cli_human_time(double sec, char *buf, size_t n);
/* "about T left" after `elapsed` seconds for done of total units ("about ?
 * left" before any). */
void cli_time_left(char *buf, size_t n, double elapsed, double done, double total);

#endif
