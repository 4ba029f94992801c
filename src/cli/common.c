/* Shared by the lnkit commands: the model options (the configuration as a
 * file and as flags), the inputs recorded for the sidecars, a session of
 * model, weights and batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/provenance.h"

const cli_opt cli_model_table[] = {
    {.type = CLI_STR, .name = "config", .arg = "FILE", CLI_AT(cli_model_opts, config_path),
     .flags = CLI_READS, .help = "configuration file (JSON)"},
    {.type = CLI_CONFIG, CLI_AT(cli_model_opts, keys)},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(cli_model_opts, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {0}};

int cli_not_converged(int n_bad, int n_req, double worst_rel, double tol, int steps,
                      int max_steps, const char *hint)
{
    if (n_bad <= 0)
        return 0;
    cli_warn("%d of %d requested eigenpairs did not converge (worst residual %.3g max|l|, "
             "tolerance %.3g; %d of %d Lanczos steps used)%s%s; the results are written, with "
             "converged = 0 for them; exit status %d", n_bad, n_req, worst_rel, tol, steps,
             max_steps, hint ? ": " : "", hint ? hint : "", CLI_EXIT_NOT_CONVERGED);
    return CLI_EXIT_NOT_CONVERGED;
}

/* A safetensors input read once, its digest recorded (cli_prov). */
static int st_load(const char *path, lnk_st_file **f)
{
    int st = lnk_st_read(path, f);
    if (st == LNK_OK && (st = lnk_prov_input_digest(cli_prov(), path, &(*f)->digest)) != LNK_OK) {
        lnk_st_free(*f);
        *f = NULL;
    }
    return st;
}

int cli_load_weights(const char *path, const lnk_model *m, double *theta)
{
    lnk_st_file *f;
    int st = st_load(path, &f);
    if (st == LNK_OK) {
        st = lnk_weights_from_st(f, m, theta);
        lnk_st_free(f);
    }
    return st;
}

int cli_load_batch(const char *path, const lnk_model *m, lnk_batch *b)
{
    lnk_st_file *f;
    int st = st_load(path, &f);
    if (st == LNK_OK) {
        st = lnk_batch_from_st(f, m, b);
        lnk_st_free(f);
    }
    return st;
}

int cli_load_vector(const char *path, const lnk_model *m, double *v, int *layout_kind)
{
    lnk_st_file *f;
    int st = st_load(path, &f);
    if (st == LNK_OK) {
        st = lnk_vector_from_st(f, m, v, layout_kind);
        lnk_st_free(f);
    }
    return st;
}

int cli_read_input(const char *path, size_t max, const char *what, char **text)
{
    lnk_digest d;
    int st = lnk_read_input(path, max, what, text, NULL, &d);
    if (st == LNK_OK && (st = lnk_prov_input_digest(cli_prov(), path, &d)) != LNK_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

char *cli_sibling_path(const char *path, const char *suffix)
{
    size_t L = strlen(path), ls = strlen(".safetensors");
    size_t base = (L > ls && !strcmp(path + L - ls, ".safetensors")) ? L - ls : L;
    char *p = malloc(base + strlen(suffix) + 1);
    if (!p)
        cli_die("out of memory");
    memcpy(p, path, base);
    strcpy(p + base, suffix);
    return p;
}

void cli_make_config(const cli_model_opts *mo, lnk_config *c)
{
    lnk_config_default(c);
    if (mo->config_path) { /* read once, recorded with its digest */
        char *text;
        if (cli_read_input(mo->config_path, LNK_CONFIG_LIMIT, "configuration", &text) != LNK_OK)
            cli_die_lib();
        int st = lnk_config_parse_json(c, text, mo->config_path);
        free(text);
        if (st != LNK_OK)
            cli_die_lib();
    }
    for (int i = 0; i < mo->keys.n; i++)
        if (lnk_config_set(c, mo->keys.key[i], mo->keys.val[i]) != LNK_OK)
            cli_die_lib();
    if (lnk_config_finalize(c) != LNK_OK)
        cli_die_lib();
    if (lnk_prov_seed(cli_prov(), "init", c->seed) != LNK_OK)
        cli_die_lib();
    if (mo->threads > 0)
        lnk_set_blas_threads(mo->threads);
}

void cli_open(cli_session *s, const cli_model_opts *mo, const char *weights,
              const char *const *batch, int n_batch, unsigned ws_flags)
{
    memset(s, 0, sizeof *s);
    if (!weights)
        cli_die("--weights FILE is required");
    if (!n_batch)
        cli_die("--batch FILE is required (repeat it for a data set of several files)");
    s->batch = batch;
    s->n_batch = n_batch;
    cli_make_config(mo, &s->c);
    s->m = lnk_model_alloc(&s->c);
    if (!s->m)
        cli_die_lib();
    s->theta = malloc(sizeof(double) * lnk_model_n_params(s->m));
    cli_check(s->theta ? LNK_OK : lnk_error(LNK_ENOMEM, "out of memory for %zu parameters",
                                            lnk_model_n_params(s->m)));
    cli_check(cli_load_weights(weights, s->m, s->theta));
    if (cli_dataset(s))
        return; /* a data set: cli_shard reads the files */
    cli_check(cli_load_batch(batch[0], s->m, &s->b));
    s->ws = lnk_workspace_alloc(s->m, s->b.B, s->b.S, s->b.T, ws_flags);
    if (!s->ws)
        cli_die_lib();
}

int cli_dataset(const cli_session *s) { return s->n_batch > 1 || lnk_comm_size() > 1; }

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
    lnk_dataset_init(ds);
    for (int i = 0; i < s->n_batch; i++) {
        lnk_batch file;
        cli_check(cli_load_batch(s->batch[i], s->m, &file));
        cli_check(lnk_dataset_add_rows(ds, s->m, &file, cli_chunk_rows(file.B, 0)));
        lnk_batch_free(&file);
    }
    cli_check(lnk_dataset_shard(ds, s->m, cli_procs()));
}

void cli_close(cli_session *s)
{
    lnk_workspace_free(s->ws);
    lnk_batch_free(&s->b);
    free(s->theta);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}
