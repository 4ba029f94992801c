/* The anatomy study's files (anatomy.h): the four CSVs, their key columns
 * and sidecar keys, and what --resume reads back from them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/front.h"
#include "anatomy.h"

static const char *const KEY[NKEY] = {"task", "norm_pos", "norm", "qk_norm",
                                      "L",    "d",        "seed", "n_params"};

void open_files(files_t *F, const char *dir, int resume)
{
    const char *he[NKEY + 7], *hm[NKEY + 4], *hb[NKEY + 8], *hj[NKEY + 6];
    for (int i = 0; i < NKEY; i++)
        he[i] = hm[i] = hb[i] = hj[i] = KEY[i];
    const char *e[] = {"operator", "which", "eigenvalue", "residual", "converged", "steps",
                       "scale"};
    const char *m[] = {"operator", "which", "tensor", "mass"};
    const char *b[] = {"block", "side", "layer", "kind", "n", "operator", "frob", "frob_se"};
    const char *j[] = {"block_a", "block_b", "js_distance", "sigma", "js_scaled",
                       "sigma_scaled"};
    memcpy(he + NKEY, e, sizeof e);
    memcpy(hm + NKEY, m, sizeof m);
    memcpy(hb + NKEY, b, sizeof b);
    memcpy(hj + NKEY, j, sizeof j);
    if (!resume) {
        csv_sweep(&F->ext, dir, "extremes.csv", he, NKEY + 7);
        csv_sweep(&F->mass, dir, "mass.csv", hm, NKEY + 4);
        csv_sweep(&F->bn, dir, "blocknorms.csv", hb, NKEY + 8);
        csv_sweep(&F->js, dir, "js.csv", hj, NKEY + 6);
        return;
    }
    char p[1100];
    snprintf(p, sizeof p, "%s/extremes.csv", dir);
    csv_resume(&F->ext, p, he, NKEY + 7, NULL);
    snprintf(p, sizeof p, "%s/mass.csv", dir);
    csv_resume(&F->mass, p, hm, NKEY + 4, NULL);
    snprintf(p, sizeof p, "%s/blocknorms.csv", dir);
    csv_resume(&F->bn, p, hb, NKEY + 8, NULL);
    snprintf(p, sizeof p, "%s/js.csv", dir);
    csv_resume(&F->js, p, hj, NKEY + 6, NULL);
}

/* ------------------------------------------------------------ resuming */

/* A point's key as its rows hold it: task,norm_pos,norm,qk_norm,L,d,seed. */
void point_key(const point_t *p, char *k, size_t n)
{
    snprintf(k, n, "%s,%s,%s,%s,%d,%d,%d", lnk_task_name((lnk_task)p->task),
             p->pre ? "pre" : "post", lnk_norm_type_name((lnk_norm_type)p->norm),
             lnk_norm_type_name((lnk_norm_type)p->qk), p->L, p->d, p->seed);
}

static void row_key(const lnk_csv_table *t, size_t r, char *k, size_t n)
{
    k[0] = '\0';
    for (int j = 0; j < NKEY - 1; j++)
        snprintf(k + strlen(k), n - strlen(k), "%s%s", j ? "," : "", lnk_csv_table_str(t, r, j));
}

int keyset_has(const keyset *s, const char *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->k[i], k))
            return 1;
    return 0;
}

/* The points done: the keys of DIR/js.csv (empty if there is none). */
void done_points(const char *dir, keyset *s)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/js.csv", dir);
    s->k = NULL;
    s->n = 0;
    if (access(p, F_OK) != 0)
        return;
    lnk_csv_table t;
    CLI_CK(lnk_csv_table_read(p, NULL, &t));
    s->k = cli_alloc(sizeof *s->k * (t.nrow + 1));
    for (size_t r = 0; r < t.nrow; r++) {
        char k[96];
        row_key(&t, r, k, sizeof k);
        if (!keyset_has(s, k))
            snprintf(s->k[s->n++], sizeof *s->k, "%s", k);
    }
    lnk_csv_table_free(&t);
}

/* Rank 0: drop from DIR/NAME the rows of points not done (a run killed
 * between its files), rewriting it atomically; then every rank goes on. */
void drop_partial(const char *dir, const char *name, const keyset *done)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (!study_root() || access(p, F_OK) != 0)
        return;
    lnk_csv_table t;
    CLI_CK(lnk_csv_table_read(p, NULL, &t));
    size_t drop = 0;
    char k[96];
    for (size_t r = 0; r < t.nrow; r++) {
        row_key(&t, r, k, sizeof k);
        drop += !keyset_has(done, k);
    }
    if (drop) {
        lnk_afile a;
        lnk_csv c;
        CLI_CK(lnk_afile_open(&a, p));
        CLI_CK(lnk_csv_begin(&c, a.f, (const char *const *)t.head, t.ncol));
        for (size_t r = 0; r < t.nrow; r++) {
            row_key(&t, r, k, sizeof k);
            if (!keyset_has(done, k))
                continue;
            for (int j = 0; j < t.ncol; j++)
                CLI_CK(lnk_csv_str(&c, lnk_csv_table_str(&t, r, j)));
            CLI_CK(lnk_csv_end_row(&c));
        }
        lnk_csv_free(&c);
        CLI_CK(lnk_afile_commit(&a));
        fprintf(stderr, "anatomy: %s: dropped %zu rows of points not in js.csv (a run cut off "
                "between its files); they are computed again\n", p, drop);
    }
    lnk_csv_table_free(&t);
}

/* The sidecars' own keys: the settings of this run and its counts. */
lnk_meta *settings(const opts_t *o, int np, const char *s2s_data, long computed,
                          long skipped)
{
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    char lm[160];
    snprintf(lm, sizeof lm, "synthetic lm batch B = %d, T = %d, V = %d, ids uniform in [4, V), "
             "batch seed 1234", o->B, o->T, o->V);
    int lm_ref[2] = {o->lm_refL, o->lm_refd}, s2s_ref[2] = {o->s2s_refL, o->s2s_refd};
    lnk_meta_str(m, "study", "anatomy");
    lnk_meta_int(m, "points", np);
    lnk_meta_int(m, "seeds", o->seeds);
    lnk_meta_int(m, "h", o->h);
    lnk_meta_str(m, "lm_data", lm);
    lnk_meta_str(m, "s2s_data", s2s_data);
    lnk_meta_ints(m, "lm_ref", lm_ref, 2);
    lnk_meta_ints(m, "s2s_ref", s2s_ref, 2);
    lnk_meta_real(m, "tol", o->tol);
    lnk_meta_int(m, "eig_steps", o->eig_steps);
    lnk_meta_int(m, "probes", o->probes);
    lnk_meta_int(m, "slq_runs", o->runs);
    lnk_meta_int(m, "slq_steps", o->steps);
    lnk_meta_real(m, "sigma_fraction", o->sigma_frac);
    lnk_meta_int(m, "rng_seed", (long long)o->rng);
    lnk_meta_str(m, "js_log", "natural");
    lnk_meta_str(m, "varied", "task, norm_pos, norm, qk_norm, L, d, seed (the key columns)");
    lnk_meta_bool(m, "resumed", o->resume);
    lnk_meta_int(m, "points_computed_this_run", computed);
    lnk_meta_int(m, "points_skipped_this_run", skipped);
    return m;
}

/* The settings of this run (extra, the sidecars' keys) must be those of
 * DIR/extremes.meta.json where the CSVs exist. */
void check_settings(const char *dir, const lnk_meta *extra)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/js.csv", dir);
    if (access(p, F_OK) != 0)
        return;
    json_t *old = study_sidecar(dir, "extremes");
    CLI_CK(lnk_meta_status(extra));
    const json_t *now = lnk_meta_object(extra);
    static const char *const keys[] = {"h", "lm_data", "s2s_data", "tol", "eig_steps", "probes",
                                       "slq_runs", "slq_steps", "sigma_fraction", "rng_seed",
                                       "lm_ref", "s2s_ref"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *a = json_object_get(old, keys[i]), *b = json_object_get(now, keys[i]);
        if (!a || !json_equal(a, b)) {
            char *ta = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL,
                 *tb = json_dumps(b, JSON_ENCODE_ANY);
            cli_die("--resume: %s/extremes.meta.json has %s = %s, this run %s; resume with the "
                 "same settings or choose another --out", dir, keys[i], ta ? ta : "(none)",
                 tb ? tb : "?");
        }
    }
    json_decref(old);
}

void key_row(lnk_csv *c, const point_t *p, size_t n_params)
{
    CLI_CK(lnk_csv_str(c, lnk_task_name((lnk_task)p->task)));
    CLI_CK(lnk_csv_str(c, p->pre ? "pre" : "post"));
    CLI_CK(lnk_csv_str(c, lnk_norm_type_name((lnk_norm_type)p->norm)));
    CLI_CK(lnk_csv_str(c, lnk_norm_type_name((lnk_norm_type)p->qk)));
    CLI_CK(lnk_csv_int(c, p->L));
    CLI_CK(lnk_csv_int(c, p->d));
    CLI_CK(lnk_csv_int(c, p->seed));
    CLI_CK(lnk_csv_int(c, (long long)n_params));
}
