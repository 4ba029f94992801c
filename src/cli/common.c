/* Shared by the lnkit commands: the model with its weights, the data set of
 * the --batch files, a session of model, weights and batch (eval, hvp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/provenance.h"
#include "front/progress.h"

lnk_model *cli_model_new(const cli_model_opts *mo, lnk_config *c)
{
    cli_make_config(mo, c);
    lnk_model *m = lnk_model_alloc(c);
    if (!m)
        cli_die_lib();
    return m;
}

void cli_files_model(cli_files *f, const cli_model_opts *mo, const char *weights,
                     const char *const *batch, int n_batch)
{
    cli_files_in(f, mo->config_path, "--config");
    cli_files_in(f, weights, "--weights");
    for (int i = 0; i < n_batch; i++)
        cli_files_in(f, batch[i], "--batch");
}

void cli_load_model(const cli_model_opts *mo, const char *weights, lnk_config *c, lnk_model **m,
                    double **theta)
{
    *m = cli_model_new(mo, c);
    size_t np = lnk_model_n_params(*m);
    *theta = malloc(sizeof(double) * np);
    cli_check(*theta ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for %zu parameters", np));
    cli_check(cli_load_weights(weights, *m, *theta));
}

void cli_load_data(lnk_dataset *ds, const lnk_model *m, const char *const *batch, int n_batch,
                   int chunk_rows)
{
    lnk_dataset_init(ds);
    for (int i = 0; i < n_batch; i++) {
        lnk_batch file;
        cli_check(cli_load_batch(batch[i], m, &file));
        cli_check(lnk_dataset_add_rows(ds, m, &file, cli_chunk_rows(file.B, chunk_rows)));
        lnk_batch_free(&file);
    }
    cli_check(lnk_dataset_shard(ds, m, cli_procs()));
}

void cli_open(cli_session *s, const cli_model_opts *mo, const char *weights,
              const char *const *batch, int n_batch, int chunk_rows, unsigned ws_flags)
{
    memset(s, 0, sizeof *s);
    s->chunk_rows = chunk_rows;
    if (!weights)
        cli_die("--weights FILE is required");
    if (!n_batch)
        cli_die("--batch FILE is required (repeat it for a data set of several files)");
    s->batch = batch;
    s->n_batch = n_batch;
    cli_load_model(mo, weights, &s->c, &s->m, &s->theta);
    if (cli_dataset(s))
        return; /* a data set: cli_shard reads the files */
    cli_check(cli_load_batch(batch[0], s->m, &s->b));
    s->ws = lnk_workspace_alloc(s->m, s->b.B, s->b.S, s->b.T, ws_flags);
    if (!s->ws)
        cli_die_lib();
}

int cli_dataset(const cli_session *s)
{
    return s->n_batch > 1 || lnk_comm_size() > 1 || s->chunk_rows;
}

void cli_add_batch(const char **batch, int *n_batch, const char *path)
{
    if (*n_batch == CLI_MAX_BATCH)
        cli_die("at most %d --batch files", CLI_MAX_BATCH);
    batch[(*n_batch)++] = path;
}

int cli_chunk_rows(int B, int chunk_rows)
{
    int P = lnk_comm_size();
    if (chunk_rows)
        return chunk_rows;
    return P > 1 ? (B + 4 * P - 1) / (4 * P) : B;
}

void cli_shard(cli_session *s, lnk_dataset *ds)
{
    cli_load_data(ds, s->m, s->batch, s->n_batch, s->chunk_rows);
}

void cli_gradient(cli_session *s, double *loss, double *g, size_t *n_scored)
{
    cli_meter pr;
    if (!cli_dataset(s)) {
        s->n_chunks = 1;
        cli_meter_model(&pr, s->m, CLI_PASS_PRIMAL);
        if (lnk_model_eval(s->ws, s->theta, &s->b, loss, g, n_scored) != LNK_OK)
            cli_die_lib();
    } else {
        lnk_dataset ds;
        cli_shard(s, &ds);
        *n_scored = ds.n_scored;
        s->n_chunks = ds.n_total;
        cli_setup_done();
        cli_meter_model(&pr, s->m, ds.n_chunks * CLI_PASS_PRIMAL);
        if (lnk_dataset_loss(s->m, s->theta, &ds, loss, g) != LNK_OK)
            cli_die_lib();
        lnk_dataset_free(&ds);
    }
    cli_meter_end(&pr);
    if (lnk_params_check_finite(s->m, g, "gradient") != LNK_OK)
        cli_die_lib();
}

void cli_close(cli_session *s)
{
    lnk_workspace_free(s->ws);
    lnk_batch_free(&s->b);
    free(s->theta);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}
