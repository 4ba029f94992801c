/* lnkit meta: the .meta.json sidecar of a result another program wrote (a
 * Python summariser, a benchmark script), by the same writer as the
 * commands' and the studies' sidecars (lnk_meta_write, docs/MODEL.md §9): the
 * same provenance keys, the same atomic write.  What only the other program
 * knows (its command line, inputs, seeds, threads, ranks, start and wall
 * time, its own fields) comes in as options; the rest (git commit, compiler,
 * library versions, BLAS kernel) is this build's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"

#define MAX_INPUTS (CLI_MAX_FILES - 1)

typedef struct {
    const char *out, *start, *config, *extra, *extra_file;
    double seconds;
    const char *inputs[MAX_INPUTS], *seeds[64];
    int n_in, n_seed, threads, ranks;
} meta_args;

#define T meta_args
static const cli_opt opts[] = {
    {.type = CLI_STR, .key = 'o', .name = "output", .arg = "FILE", CLI_AT(T, out),
     .flags = CLI_REQ | CLI_READS,
     .help = "the result (an existing regular file) whose sidecar to write: NAME.csv -> "
             "NAME.meta.json, other names + .meta.json"},
    {.type = CLI_STR, .name = "start", .arg = "TIME", CLI_AT(T, start), .flags = CLI_REQ,
     .help = "when the run started, ISO 8601 such as 2026-01-31T12:00:00Z"},
    {.type = CLI_REAL, .name = "seconds", .arg = "S", CLI_AT(T, seconds), .flags = CLI_REQ,
     .min = 0, .max = HUGE_VAL, .help = "the run's wall time in seconds"},
    {.type = CLI_LIST, .name = "input", .arg = "FILE", CLI_AT(T, inputs),
     .count = offsetof(T, n_in), .flags = CLI_READS,
     .help = "an input of the run, a regular file; repeat for more (recorded in order with its "
             "size and SHA-256)"},
    {.type = CLI_LIST, .name = "named-seed", .arg = "NAME=N", CLI_AT(T, seeds),
     .count = offsetof(T, n_seed), .help = "a named seed of the run, N from 0 to 2^64-1; repeat "
     "for more, each name once"},
    {.type = CLI_INT, .name = "threads", .arg = "N", CLI_AT(T, threads), .min = 1,
     .max = 1 << 20, .help = "the run's BLAS threads"},
    {.type = CLI_INT, .name = "ranks", .arg = "N", CLI_AT(T, ranks), .min = 1, .max = 1 << 24,
     .help = "the run's MPI ranks"},
    {.type = CLI_STR, .name = "config", .arg = "FILE", CLI_AT(T, config), .flags = CLI_READS,
     .help = "the run's model configuration (recorded as the keys config and seed, an input, "
             "and the seed init)"},
    {.type = CLI_STR, .name = "extra", .arg = "JSON", CLI_AT(T, extra), .excl = 1,
     .help = "a JSON object whose keys are added (none may be a standard key)"},
    {.type = CLI_STR, .name = "extra-file", .arg = "FILE", CLI_AT(T, extra_file), .excl = 1,
     .flags = CLI_READS | CLI_STDIN, .help = "the same, read from FILE (-: standard input)"},
    {0}};

static void defaults(void *p)
{
    meta_args *a = p;
    a->threads = a->ranks = 1;
}

const cli_cmd cmd_meta_decl = {
    .name = "lnkit meta",
    .summary = "the .meta.json sidecar of a result another program wrote",
    .usage = "-o FILE --start TIME --seconds S [--input F ...] [--named-seed NAME=N ...]\n"
             "[--threads N] [--ranks N] [--config C.json] [--extra JSON | --extra-file F]\n"
             "-- COMMAND ...",
    .about = "Write FILE's sidecar for a result that another program wrote, with the keys every\n"
             "lnkit sidecar has (docs/MODEL.md section 9): COMMAND ... (everything after '--',\n"
             "word for word; required) as the command line, the working folder, the inputs\n"
             "with size and SHA-256, the seeds, the git commit this lnkit was built from, the\n"
             "compiler and library versions, the BLAS kernel, threads, ranks, start and wall\n"
             "time; then the extra JSON object's keys.  Written to a temporary file and\n"
             "renamed: an error leaves any existing sidecar as it was.",
    .opts = opts,
    .size = sizeof(meta_args),
    .defaults = defaults,
    .rest = 1,
};

/* A regular file, or die naming the option and the problem. */
static void need_regular(const char *opt, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        cli_die("%s %s: %s", opt, path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        cli_die("%s %s: is a folder, expected a regular file", opt, path);
    if (!S_ISREG(st.st_mode))
        cli_die("%s %s: is a FIFO, device or socket, expected a regular file", opt, path);
}

int cmd_meta(int argc, char **argv)
{
    meta_args a;
    int dd = cli_parse(&cmd_meta_decl, &a, argc, argv) - 1; /* the "--" */
    const char *out = a.out, *start = a.start, *extra = a.extra, *extra_file = a.extra_file;
    const char *const *inputs = a.inputs, *const *seed_args = a.seeds;
    int n_in = a.n_in, n_seed = a.n_seed;
    cli_model_opts mo = {.config_path = a.config};
    if (dd >= argc - 1)
        cli_die("no command line to record: give it after '--'");
    if (!lnk_iso_time_valid(start))
        cli_die("--start: expected an ISO 8601 time of the calendar such as "
                "2026-01-31T12:00:00Z, got '%s'", start);
    double wall = a.seconds;

    /* the result exists and is a file; its sidecar can be written and is
     * neither a folder, a FIFO, a device nor one of the inputs */
    need_regular("-o", out);
    char *side = lnk_meta_path(out);
    if (!side)
        cli_die("out of memory");
    int kind;
    if (lnk_output_check(side, &kind) != LNK_OK)
        cli_die("sidecar of -o %s", lnk_errmsg());
    if (kind != LNK_OUT_FILE)
        cli_die("sidecar of -o %s: is a FIFO or device, expected a regular file or a new "
                "name (not replaced)", side);
    cli_files f = {0};
    cli_files_out(&f, side, "the sidecar of -o");
    cli_files_in(&f, out, "-o");
    for (int i = 0; i < n_in; i++)
        cli_files_in(&f, inputs[i], "--input");
    cli_files_in(&f, mo.config_path, "--config");
    if (extra_file && strcmp(extra_file, "-"))
        cli_files_in(&f, extra_file, "--extra-file");
    cli_files_check(NULL, &f);

    char *extra_text = NULL; /* -: standard input, read by the library's reader */
    if (extra_file) {
        int std_in = !strcmp(extra_file, "-");
        if (!std_in)
            need_regular("--extra-file", extra_file);
        if (lnk_read_file(std_in ? "/dev/stdin" : extra_file, &extra_text, NULL) != LNK_OK)
            cli_die("--extra-file %s%s", std_in ? "-: " : "", lnk_errmsg());
        extra = extra_text;
    }

    /* the record: the other program's command line, inputs, seeds, counts */
    lnk_prov *p = cli_prov();
    if (lnk_prov_args(p, argc - dd - 1, argv + dd + 1) != LNK_OK)
        cli_die_lib();
    lnk_prov_counts(p, a.threads, a.ranks);
    lnk_config c, *cfg = NULL;
    if (mo.config_path) {
        need_regular("--config", mo.config_path);
        cli_make_config(&mo, &c); /* records it as an input, and the "init" seed */
        cfg = &c;
    }
    for (int i = 0; i < n_in; i++) {
        need_regular("--input", inputs[i]);
        if (lnk_prov_input(p, inputs[i]) != LNK_OK)
            cli_die("--input %s", lnk_errmsg());
    }
    for (int i = 0; i < n_seed; i++) {
        const char *eq = strchr(seed_args[i], '=');
        char *end;
        errno = 0;
        unsigned long long v = eq ? strtoull(eq + 1, &end, 10) : 0;
        if (!eq || eq == seed_args[i] || !eq[1] || *end || errno || eq[1] == '-')
            cli_die("--named-seed: expected NAME=N with N in 0..2^64-1, got '%s'", seed_args[i]);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - seed_args[i]), seed_args[i]);
        for (int j = 0; j < i; j++) /* one value a name: a second would replace the first */
            if (!strncmp(seed_args[j], seed_args[i], (size_t)(eq - seed_args[i]) + 1))
                cli_die("--named-seed %s: the seed '%s' is given twice (%s and %s); each named "
                        "seed once", seed_args[i], name, seed_args[j], seed_args[i]);
        if (lnk_prov_seed(p, name, v) != LNK_OK)
            cli_die_lib();
    }
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    if (extra)
        lnk_meta_parse(m, extra, extra_file ? "--extra-file" : "--extra");
    int st = lnk_meta_write(out, p, cfg, m, start, wall);
    lnk_meta_free(m);
    if (st != LNK_OK)
        cli_die("%s", lnk_errmsg());
    cli_say("wrote %s\n", side);
    if (cfg)
        lnk_config_clear(cfg);
    free(extra_text);
    free(side);
    return 0;
}
