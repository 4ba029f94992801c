/* The gradient-norm study's sweep (grad.h): its resumable CSVs, the rows
 * of a point, the seeds of a configuration spread over the ranks, and the
 * checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "grad.h"

const char *const sweep_name[3] = {"depth", "width", "profile"};

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        cli_die("out of memory");
    return p;
}

/* ----------------------------------------------------------- the sweep */

static const char *const H_POINT[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "V", "B", "T", "batches",
    "label_smoothing", "tie_output", "seed", "loss", "w2_mean_norm", "w2_norm_of_mean",
    "w1_mean_norm", "w1_norm_of_mean", "grad_mean_norm", "seconds"};
static const char *const H_PROFILE[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "V", "B", "T", "batches",
    "label_smoothing", "tie_output", "seed", "loss", "stack", "layer", "tensor", "mean_norm",
    "norm_of_mean"};
static const char *const H_HIDDEN[] = {
    "key", "setting", "task", "norm_pos", "L", "d", "h", "d_ff", "seed", "stack", "layer", "site",
    "n_tokens",
    "sq_mean", "sq_sd", "sq_max", "frac_over", "bound_eps", "jac_mean", "jac_max"};
#define NCOL(a) ((int)(sizeof a / sizeof a[0]))

static void conf_cells(lnk_csv *r, const pconf *p, int seed)
{
    CLI_CK(lnk_csv_str(r, p->key));
    CLI_CK(lnk_csv_str(r, set_name(p->setting)));
    CLI_CK(lnk_csv_str(r, lnk_task_name((lnk_task)p->task)));
    CLI_CK(lnk_csv_str(r, pos_name(p->pos)));
    CLI_CK(lnk_csv_int(r, p->L));
    CLI_CK(lnk_csv_int(r, p->d));
    CLI_CK(lnk_csv_int(r, p->h));
    CLI_CK(lnk_csv_int(r, p->dff));
    CLI_CK(lnk_csv_int(r, p->V));
    CLI_CK(lnk_csv_int(r, p->B));
    CLI_CK(lnk_csv_int(r, p->T));
    CLI_CK(lnk_csv_int(r, p->nb));
    CLI_CK(lnk_csv_double(r, p->ls));
    CLI_CK(lnk_csv_int(r, p->tie));
    CLI_CK(lnk_csv_int(r, seed));
}

/* Point pt's rows: main (one, or one per item for a profile) and hidden
 * (hid NULL: none). */
static void add_rows(out_csv *main, out_csv *hid, long pt, const pconf *p, int seed, int profile,
                     const presult *r)
{
    lnk_csv *c = &main->c;
    csv_point(main, pt);
    if (!profile) {
        conf_cells(c, p, seed);
        CLI_CK(lnk_csv_double(c, r->loss));
        for (int i = 0; i < 2; i++) { /* w2, w1 */
            CLI_CK(lnk_csv_double(c, r->it[i].sum_norm / p->nb));
            CLI_CK(lnk_csv_double(c, r->it[i].nom));
        }
        CLI_CK(lnk_csv_double(c, r->gnorm));
        CLI_CK(lnk_csv_double(c, r->seconds));
        CLI_CK(lnk_csv_end_row(c));
    } else
        for (int i = 0; i < r->nit; i++) {
            conf_cells(c, p, seed);
            CLI_CK(lnk_csv_double(c, r->loss));
            CLI_CK(lnk_csv_str(c, r->it[i].stack));
            CLI_CK(lnk_csv_int(c, r->it[i].layer));
            CLI_CK(lnk_csv_str(c, r->it[i].label));
            CLI_CK(lnk_csv_double(c, r->it[i].sum_norm / p->nb));
            CLI_CK(lnk_csv_double(c, r->it[i].nom));
            CLI_CK(lnk_csv_end_row(c));
        }
    if (!hid)
        return;
    c = &hid->c;
    csv_point(hid, pt);
    for (int i = 0; i < r->hid.n; i++) {
        const hsite *s = &r->hid.v[i];
        CLI_CK(lnk_csv_str(c, p->key));
        CLI_CK(lnk_csv_str(c, set_name(p->setting)));
        CLI_CK(lnk_csv_str(c, lnk_task_name((lnk_task)p->task)));
        CLI_CK(lnk_csv_str(c, pos_name(p->pos)));
        CLI_CK(lnk_csv_int(c, p->L));
        CLI_CK(lnk_csv_int(c, p->d));
        CLI_CK(lnk_csv_int(c, p->h));
        CLI_CK(lnk_csv_int(c, p->dff));
        CLI_CK(lnk_csv_int(c, seed));
        CLI_CK(lnk_csv_str(c, s->stack));
        CLI_CK(lnk_csv_int(c, s->layer));
        CLI_CK(lnk_csv_str(c, s->site));
        CLI_CK(lnk_csv_int(c, (long long)s->n));
        CLI_CK(lnk_csv_double(c, s->mean / p->nb));
        CLI_CK(lnk_csv_double(c, s->sd / p->nb));
        CLI_CK(lnk_csv_double(c, s->max));
        CLI_CK(lnk_csv_double(c, s->frac / p->nb));
        CLI_CK(lnk_csv_double(c, p->beps));
        if (s->has_jac && isfinite(s->jmax)) {
            CLI_CK(lnk_csv_double(c, s->jmean / p->nb));
            CLI_CK(lnk_csv_double(c, s->jmax));
        } else {
            CLI_CK(lnk_csv_str(c, ""));
            CLI_CK(lnk_csv_str(c, ""));
        }
        CLI_CK(lnk_csv_end_row(c));
    }
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keys_build(keyset *k, const study_table *t)
{
    size_t n = t->d.nrow;
    k->v = cli_alloc(sizeof(char *) * (n ? n : 1));
    k->n = 0;
    if (!n)
        return;
    int ks = study_table_col(t, "key"), ss = study_table_col(t, "seed");
    for (size_t i = 0; i < n; i++) {
        char *s = NULL;
        if (asprintf(&s, "%s#%s", study_table_str(t, i, ks), study_table_str(t, i, ss)) < 0)
            cli_die("out of memory");
        k->v[k->n++] = s;
    }
    qsort(k->v, k->n, sizeof(char *), cmpstr);
}

static int keys_has(const keyset *k, const char *key, int seed)
{
    char buf[300];
    snprintf(buf, sizeof buf, "%s#%d", key, seed);
    const char *p = buf;
    return bsearch(&p, k->v, k->n, sizeof(char *), cmpstr) != NULL;
}
/* The sidecars' own keys (lnk_meta_free them). */
static lnk_meta *sweep_extra(const sweep *s)
{
    const opts *o = s->o;
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    char study[64];
    snprintf(study, sizeof study, "grad_norms %s", sweep_name[o->sweep]);
    lnk_meta_str(m, "study", study);
    lnk_meta_str(m, "paper", "Xiong et al. 2020, Theorem 1, Lemma 2, Figure 3");
    lnk_meta_str(m, "data", "synthetic batches, ids uniform in [4, V), batch b of seed s from "
                            "stream 1000003 (s + 1) + b");
    lnk_meta_ints(m, "Ls", o->Ls, (size_t)o->nL);
    lnk_meta_ints(m, "ds", o->ds, (size_t)o->nd);
    lnk_meta_int(m, "L", o->L);
    lnk_meta_int(m, "d", o->d);
    lnk_meta_int(m, "seeds", o->seeds);
    lnk_meta_int(m, "seed0", o->seed0);
    lnk_meta_int(m, "batches", o->nb);
    lnk_meta_int(m, "B", o->B);
    lnk_meta_int(m, "T", o->T);
    lnk_meta_int(m, "V", o->V);
    lnk_meta_int(m, "realistic_heads", o->heads);
    lnk_meta_int(m, "realistic_ff_mult", o->ffmult);
    lnk_meta_real(m, "label_smoothing_theorem", o->ls_theorem);
    lnk_meta_real(m, "label_smoothing_realistic", o->ls_real);
    lnk_meta_bool(m, "tie_output", o->tie);
    lnk_meta_real(m, "bound_eps", o->beps);
    lnk_meta_bool(m, "hidden_statistics", !o->no_hidden);
    lnk_meta_int(m, "points_computed_this_run", s->computed);
    lnk_meta_int(m, "points_skipped_this_run", s->skipped);
    lnk_meta_str(m, "config_note", "config is the first point computed; every row's key column "
                                   "holds its own configuration");
    return m;
}

/* Collective: the rows of the points done so far to rank 0, which rewrites
 * the CSVs and their sidecars if they have new rows (last: csv_close). */
void checkpoint(sweep *s, int last)
{
    lnk_meta *extra = sweep_extra(s);
    const lnk_config *c = s->have_base ? &s->base : NULL;
    if (last) {
        csv_close(&s->main, c, extra, s->start, s->t0);
        if (!s->o->no_hidden)
            csv_close(&s->hid, c, extra, s->start, s->t0);
    } else {
        csv_flush(&s->main, c, extra, s->start, s->t0);
        if (!s->o->no_hidden)
            csv_flush(&s->hid, c, extra, s->start, s->t0);
    }
    lnk_meta_free(extra);
    s->last_ckpt = lnk_now();
}

/* After every point to compute (on every rank): at the end of each round of
 * P points, rank 0 decides whether a checkpoint is due (every point in a
 * one-process run, as before). */
static void point_done(sweep *s)
{
    s->npend++;
    if (s->npend % study_ranks())
        return;
    int now = study_root() && lnk_now() - s->last_ckpt > s->o->checkpoint;
    CLI_CK(lnk_comm_bcast(&now, sizeof now, 0));
    if (now)
        checkpoint(s, 0);
}

void run_conf(sweep *s, const pconf *p, int idx, int total)
{
    const opts *o = s->o;
    /* a configuration met before in this run (a value given twice) has all
     * its seeds done */
    int seen = 0;
    for (int i = 0; i < s->nconf && !seen; i++)
        seen = strcmp(s->confs[i], p->key) == 0;
    if (!seen) {
        char **c = realloc(s->confs, sizeof(char *) * (size_t)(s->nconf + 1));
        if (!c)
            cli_die("out of memory");
        s->confs = c;
        s->confs[s->nconf++] = xstrdup(p->key);
    }
    int done = 0, todo = 0;
    double t0 = lnk_now(), w2 = 0;
    for (int k = 0; k < o->seeds; k++) {
        int seed = o->seed0 + k;
        if (seen || keys_has(&s->old, p->key, seed)) {
            s->skipped++;
            continue;
        }
        todo++;
        long j = s->npend;
        if (!s->have_base) {
            make_config(p, seed, &s->base);
            s->have_base = 1;
        }
        if (study_mine(j)) {
            presult r;
            run_point(p, seed, o->sweep == SW_PROFILE, !o->no_hidden, &s->buf, &r);
            add_rows(&s->main, o->no_hidden ? NULL : &s->hid, j, p, seed,
                     o->sweep == SW_PROFILE, &r);
            /* last W2 (depth, width) or the top block's W2 (profile) for the progress line */
            for (int i = r.nit - 1; i >= 0; i--)
                if (strcmp(r.it[i].label, "ffn.w2") == 0) {
                    w2 += r.it[i].nom;
                    break;
                }
            if (o->verbose && study_root())
                fprintf(stderr, "  %s seed %d: loss %.4f, %.2f s\n", p->key, seed, r.loss,
                        r.seconds);
            presult_free(&r);
            done++;
        }
        s->computed++;
        point_done(s);
    }
    if (!study_root())
        return;
    if (todo && study_ranks() == 1)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds in %.2f s, mean ||dL/dW2(last)|| %.5g "
                "(total %.1f s)\n", sweep_name[o->sweep], idx, total, p->key, done,
                lnk_now() - t0, w2 / done, lnk_now() - s->t0);
    else if (todo && done)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds over %d ranks, %d on rank 0 in %.2f s, mean "
                "||dL/dW2(last)|| %.5g (total %.1f s)\n", sweep_name[o->sweep], idx, total,
                p->key, todo, study_ranks(), done, lnk_now() - t0, w2 / done, lnk_now() - s->t0);
    else if (todo)
        fprintf(stderr, "[%s %d/%d] %s: %d seeds on the other ranks (total %.1f s)\n",
                sweep_name[o->sweep], idx, total, p->key, todo, lnk_now() - s->t0);
    else
        fprintf(stderr, "[%s %d/%d] %s: all %d seeds already in the CSV, skipped\n",
                sweep_name[o->sweep], idx, total, p->key, o->seeds);
}

size_t sweep_open(sweep *s)
{
    int prof = s->o->sweep == SW_PROFILE;
    study_table old;
    size_t n_old = csv_resume(&s->main, s->path, prof ? H_PROFILE : H_POINT,
                              prof ? NCOL(H_PROFILE) : NCOL(H_POINT), &old);
    if (!s->o->no_hidden)
        csv_resume(&s->hid, s->hpath, H_HIDDEN, NCOL(H_HIDDEN), NULL);
    keys_build(&s->old, &old);
    study_table_free(&old);
    return n_old;
}

void sweep_free(sweep *s)
{
    for (size_t i = 0; i < s->old.n; i++)
        free(s->old.v[i]);
    free(s->old.v);
    for (int i = 0; i < s->nconf; i++)
        free(s->confs[i]);
    free(s->confs);
    free(s->buf.th);
    free(s->buf.g);
    if (s->have_base)
        lnk_config_clear(&s->base);
}
