/* Options shared by the lnkit subcommands: the configuration as a file and as flags. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "lnkit/provenance.h"

static int setup = 1;
int cli_quiet = 0;

void cli_say(const char *fmt, ...)
{
    if (cli_quiet || !cli_root())
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
void cli_setup_done(void) { setup = 0; }

void cli_die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* nothing half-written stays behind (the temporary files of this rank) */
    lnk_output_abort_all();
    /* one line: control characters of names and values escaped (lnk_error) */
    lnk_error(LNK_EINVAL, "%s", msg);
    snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    int rank = lnk_comm_rank();
    if (lnk_comm_size() == 1) {
        fprintf(stderr, "lnkit: %s\n", msg);
        exit(2);
    }
    /* Several ranks.  While setting up (flags, files, shards) every rank's
     * next collective step is an agreement (cli_check), so a failing rank
     * joins it here: all learn of the failure ("rank R: ..." if it is not
     * the same everywhere), rank 0 prints it once, and all end cleanly. */
    if (setup && !lnk_comm_failed()) {
        lnk_error(LNK_EINVAL, "%s", msg);
        lnk_comm_agree(LNK_EINVAL);
        snprintf(msg, sizeof msg, "%s", lnk_errmsg());
    }
    if (lnk_comm_failed()) {
        if (rank == 0)
            fprintf(stderr, "lnkit: %s\n", msg);
        lnk_comm_finalize();
        exit(2);
    }
    /* A rank failing alone outside an agreement: it names itself (after a
     * pause that lets rank 0 win if all fail alike) and ends the job. */
    if (rank == 0) {
        fprintf(stderr, "lnkit: %s\n", msg);
    } else {
        usleep(300000);
        fprintf(stderr, "lnkit: rank %d: %s\n", rank, msg);
    }
    lnk_comm_abort(2);
    exit(2);
}

int cli_not_converged(const char *cmd, int n_bad, int n_req, double worst_rel, double tol,
                      int steps, int max_steps, const char *hint)
{
    if (n_bad <= 0)
        return 0;
    if (cli_root())
        fprintf(stderr, "lnkit: %s: warning: %d of %d requested eigenpairs did not converge "
                "(worst residual %.3g max|l|, tolerance %.3g; %d of %d Lanczos steps used)%s%s; "
                "the results are written, with converged = 0 for them; exit status %d\n", cmd,
                n_bad, n_req, worst_rel, tol, steps, max_steps, hint ? ": " : "",
                hint ? hint : "", CLI_EXIT_NOT_CONVERGED);
    return CLI_EXIT_NOT_CONVERGED;
}

void cli_check(int status)
{
    if (lnk_comm_agree(status) != LNK_OK)
        cli_die_lib();
}

int cli_root(void) { return lnk_comm_rank() == 0; }

void cli_die_lib(void) { cli_die("%s", lnk_errmsg()); }

long cli_int(const char *opt, const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        cli_die("%s%s: expected an integer in [%ld, %ld], got '%s'", opt[1] ? "--" : "-", opt,
                min, max, s);
    return v;
}

double cli_real(const char *cmd, const char *opt, const char *s, int strict)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s || !isfinite(v) || (strict ? !(v > 0) : !(v >= 0)))
        cli_die("%s: --%s: expected a finite number %s 0, got '%s'", cmd, opt, strict ? ">" : ">=",
                s);
    return v;
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

/* Flag spellings: the key itself and, where it has '_', the same with '-'. */
static char names[2][32][32];

int cli_add_model_options(struct option *opts, int n)
{
    int k = 0;
    for (int i = 0; lnk_config_keys[i]; i++, k++) {
        snprintf(names[0][i], 32, "%s", lnk_config_keys[i]);
        opts[n++] = (struct option){names[0][i], required_argument, NULL, CLI_KEY_BASE + i};
        if (strchr(lnk_config_keys[i], '_')) {
            snprintf(names[1][i], 32, "%s", lnk_config_keys[i]);
            for (char *p = names[1][i]; *p; p++)
                if (*p == '_')
                    *p = '-';
            opts[n++] = (struct option){names[1][i], required_argument, NULL, CLI_KEY_BASE + i};
        }
    }
    opts[n++] = (struct option){"config", required_argument, NULL, CLI_KEY_BASE - 1};
    opts[n++] = (struct option){"threads", required_argument, NULL, CLI_KEY_BASE - 2};
    opts[n++] = (struct option){"quiet", no_argument, NULL, CLI_KEY_BASE - 3};
    return n;
}

int cli_model_option(cli_model_opts *mo, int val, const char *arg)
{
    if (val == CLI_KEY_BASE - 1) {
        mo->config_path = arg;
        return 1;
    }
    if (val == CLI_KEY_BASE - 2) {
        mo->threads = (int)cli_int("threads", arg, 1, 1024);
        return 1;
    }
    if (val == CLI_KEY_BASE - 3) {
        cli_quiet = 1;
        return 1;
    }
    if (val >= CLI_KEY_BASE && val < CLI_KEY_BASE + 64) {
        if (mo->n_set == 64)
            cli_die("too many configuration flags");
        mo->set_key[mo->n_set] = lnk_config_keys[val - CLI_KEY_BASE];
        mo->set_val[mo->n_set++] = arg;
        return 1;
    }
    return 0;
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
    for (int i = 0; i < mo->n_set; i++)
        if (lnk_config_set(c, mo->set_key[i], mo->set_val[i]) != LNK_OK)
            cli_die_lib();
    if (lnk_config_finalize(c) != LNK_OK)
        cli_die_lib();
    if (lnk_prov_seed(cli_prov(), "init", c->seed) != LNK_OK)
        cli_die_lib();
    if (mo->threads > 0)
        lnk_set_blas_threads(mo->threads);
}

void cli_print_model_help(void) { cli_print_model_help_seed("initialisation seed"); }

void cli_print_model_help_seed(const char *seed_help)
{
    printf("Model configuration (docs/MODEL.md section 8; flags override --config, and\n"
           "the per-side keys a saved config derived from L, V, d follow those flags):\n"
           "  --config FILE          configuration JSON                       (none)\n"
           "  --task lm|seq2seq|cls                                           (lm)\n"
           "  --norm-pos post|pre|peri|out|deepnorm|mix  norm placement       (post)\n"
           "  --norm layernorm|rmsnorm|none                                   (layernorm)\n"
           "  --qk-norm none|layernorm|rmsnorm   per-head key/query norm      (none)\n"
           "  --d N, --h N           width, heads (d %% h == 0; d even with sinusoidal) (16, 2)\n"
           "  --d-ff N               feed-forward width                       (4 d)\n"
           "  --L N                  depth; --L-enc, --L-dec per side         (2)\n"
           "  --V N                  vocabulary; --V-src, --V-tgt per side    (32)\n"
           "  --n-classes N          cls output classes                       (V)\n"
           "  --init xavier|xavier_normal|theorem                             (xavier)\n"
           "  --seed N               %-40s (0)\n"
           "  --eps X                norm epsilon                             (1e-5)\n"
           "  --tie-output true|false                                         (false)\n"
           "  --label-smoothing A    0 <= A < 1                               (0)\n"
           "  --activation relu|gelu|swiglu   feed-forward activation         (relu)\n"
           "  --pos sinusoidal|learned|rope|none   positions                  (sinusoidal)\n"
           "  --bias true|false      biases and LayerNorm shifts              (true)\n"
           "  --max-len N            rows of the learned position tables      (512)\n"
           "  --mix-ratio R          mix: share of Post-LN layers, 0..1       (0.25)\n"
           "  --deepnorm-alpha A, --deepnorm-beta B   deepnorm's constants    (DeepNet's)\n"
           "  --input-scale S        scale of the embeddings' output, > 0     (1)\n"
           "  --threads N            BLAS threads                             (OpenBLAS default)\n"
           "  --quiet                nothing on stderr but errors and warnings\n"
           "Keys of sides the task does not have (--L-enc, --V-src for lm; --L-dec, --V-tgt\n"
           "for cls; --n-classes outside cls) are accepted and ignored.\n",
           seed_help);
}

void cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        cli_die("%s: option '%s' needs a value (see lnkit %s --help)", cmd, arg, cmd);
    cli_die("%s: unknown option '%s' (see lnkit %s --help)", cmd, arg, cmd);
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
