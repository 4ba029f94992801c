/* The model options and the inputs read once (front/model.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/model.h"
#include "lnkit/provenance.h"

const cli_choice cli_operators[] = {{"hessian", LNK_OP_HESSIAN}, {"ggn", LNK_OP_GGN},
                                    {"functional", LNK_OP_FUNCTIONAL}, {NULL, 0}};

const cli_opt cli_model_table[] = {
    {.type = CLI_STR, .name = "config", .arg = "FILE", CLI_AT(cli_model_opts, config_path),
     .flags = CLI_READS, .help = "configuration file (JSON)"},
    {.type = CLI_CONFIG, CLI_AT(cli_model_opts, keys)},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(cli_model_opts, threads), .min = 1,
     .max = 1024, .help = "BLAS threads", .def = "OpenBLAS's default"},
    {0}};

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

