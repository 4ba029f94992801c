/* lnkit meta: the .meta.json sidecar of a result another program wrote (a
 * Python summariser, a benchmark script), by the same writer as the
 * commands' and the studies' sidecars (lnk_meta_write, docs/MODEL.md §9): the
 * same provenance keys, the same atomic write.  What only the other program
 * knows (its command line, inputs, seeds, threads, ranks, start and wall
 * time, its own fields) comes in as options; the rest (git commit, compiler,
 * library versions, BLAS kernel) is this build's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"

#define MAX_INPUTS (CLI_MAX_FILES - 1)

static void help(void)
{
    printf("usage: lnkit meta -o FILE --start TIME --seconds S [--input F ...]\n"
           "                  [--seed NAME=N ...] [--threads N] [--ranks N]\n"
           "                  [--config C.json] [--extra JSON | --extra-file F] -- COMMAND ...\n\n"
           "Write FILE's sidecar (NAME.csv -> NAME.meta.json, other names + .meta.json) for a\n"
           "result that another program wrote, with the keys every lnkit sidecar has\n"
           "(docs/MODEL.md section 9): COMMAND ... as the command line, the working folder,\n"
           "the inputs with size and SHA-256, the seeds, the git commit this lnkit was built\n"
           "from, the compiler and library versions, the BLAS kernel, threads, ranks, start\n"
           "and wall time; then the extra JSON object's keys.  Written to a temporary file\n"
           "and renamed: an error leaves any existing sidecar as it was.\n\n"
           "  -o, --output FILE      the result file (an existing regular file) whose\n"
           "                         sidecar to write (required)\n"
           "  --start TIME           when the run started, ISO 8601 UTC such as\n"
           "                         2026-01-31T12:00:00Z (required)\n"
           "  --seconds S            its wall time in seconds, >= 0 (required)\n"
           "  --input FILE           an input of the run (repeat; regular files)\n"
           "  --seed NAME=N          a named seed of the run (repeat; N in 0..2^64-1)\n"
           "  --threads N            the run's threads (1)\n"
           "  --ranks N              the run's MPI ranks (1)\n"
           "  --config C.json        the run's model configuration (key config, seed;\n"
           "                         recorded as an input)\n"
           "  --extra JSON           a JSON object whose keys are added (none may be a\n"
           "                         standard key)\n"
           "  --extra-file F         the same, read from file F ('-': standard input)\n"
           "  --quiet                nothing on stderr but errors\n\n"
           "Everything after '--' is the recorded command line, word for word (required).\n");
}

/* YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM), a date of the calendar (the
 * month's days, 29 February in leap years only), fields in range (second 60:
 * a leap second, at 23:59 only). */
static int iso_time_ok(const char *s)
{
    const char *pat = "dddd-dd-ddTdd:dd:dd";
    size_t i = 0;
    for (; pat[i]; i++)
        if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
            return 0;
    int y = atoi(s), mo = atoi(s + 5), da = atoi(s + 8), h = atoi(s + 11), mi = atoi(s + 14),
        se = atoi(s + 17);
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || da < 1 || da > days[mo - 1] + (mo == 2 && leap) || h > 23 ||
        mi > 59 || se > 60 || (se == 60 && !(h == 23 && mi == 59)))
        return 0;
    const char *p = s + i;
    if (*p == '.') {
        if (!(p[1] >= '0' && p[1] <= '9'))
            return 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    }
    if (!strcmp(p, "Z"))
        return 1;
    return (p[0] == '+' || p[0] == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
           p[2] <= '9' && p[3] == ':' && p[4] >= '0' && p[4] <= '9' && p[5] >= '0' &&
           p[5] <= '9' && !p[6] && atoi(p + 1) <= 23 && atoi(p + 4) <= 59;
}

static char *read_stream(FILE *f)
{
    size_t n = 0, cap = 4096;
    char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - 1 - n, f);
        if (ferror(f)) {
            free(b);
            return NULL;
        }
        if (feof(f))
            break;
        char *t = cap < ((size_t)1 << 30) ? realloc(b, cap *= 2) : NULL;
        if (!t)
            free(b);
        b = t;
    }
    if (b)
        b[n] = '\0';
    return b;
}

/* A regular file, or die naming the option and the problem. */
static void need_regular(const char *opt, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        cli_die("meta: %s %s: %s", opt, path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        cli_die("meta: %s %s: is a folder, expected a regular file", opt, path);
    if (!S_ISREG(st.st_mode))
        cli_die("meta: %s %s: is a FIFO, device or socket, expected a regular file", opt, path);
}

int cmd_meta(int argc, char **argv)
{
    /* the recorded command line starts after the first "--" */
    int dd = 1;
    while (dd < argc && strcmp(argv[dd], "--"))
        dd++;
    enum { O_START = 1, O_SECONDS, O_INPUT, O_SEED, O_THREADS, O_RANKS, O_CONFIG, O_EXTRA,
           O_EXTRA_FILE, O_QUIET };
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"start", required_argument, NULL, O_START},
                                         {"seconds", required_argument, NULL, O_SECONDS},
                                         {"input", required_argument, NULL, O_INPUT},
                                         {"seed", required_argument, NULL, O_SEED},
                                         {"threads", required_argument, NULL, O_THREADS},
                                         {"ranks", required_argument, NULL, O_RANKS},
                                         {"config", required_argument, NULL, O_CONFIG},
                                         {"extra", required_argument, NULL, O_EXTRA},
                                         {"extra-file", required_argument, NULL, O_EXTRA_FILE},
                                         {"quiet", no_argument, NULL, O_QUIET},
                                         {"help", no_argument, NULL, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL, *start = NULL, *seconds = NULL, *extra = NULL, *extra_file = NULL;
    const char *inputs[MAX_INPUTS], *seed_args[64];
    int n_in = 0, n_seed = 0, threads = 1, ranks = 1, ch;
    cli_model_opts mo = {0};
    opterr = 0;
    while ((ch = getopt_long(dd, argv, ":ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case O_START: start = optarg; break;
        case O_SECONDS: seconds = optarg; break;
        case O_INPUT:
            if (n_in == MAX_INPUTS)
                cli_die("meta: more than %d --input files", MAX_INPUTS);
            inputs[n_in++] = optarg;
            break;
        case O_SEED:
            if (n_seed == 64)
                cli_die("meta: more than 64 --seed values");
            seed_args[n_seed++] = optarg;
            break;
        case O_THREADS: threads = (int)cli_int("threads", optarg, 1, 1 << 20); break;
        case O_RANKS: ranks = (int)cli_int("ranks", optarg, 1, 1 << 24); break;
        case O_CONFIG: mo.config_path = optarg; break;
        case O_EXTRA: extra = optarg; break;
        case O_EXTRA_FILE: extra_file = optarg; break;
        case O_QUIET: cli_quiet = 1; break;
        case 'h': help(); return 0;
        default: cli_bad_option("meta", ch, argv);
        }
    }
    if (optind < dd)
        cli_die("meta: unexpected argument '%s' (the recorded command line goes after '--')",
                argv[optind]);
    if (dd >= argc - 1)
        cli_die("meta: no command line to record: give it after '--'");
    if (!out)
        cli_die("meta: -o FILE is required (the result whose sidecar to write)");
    if (!start || !seconds)
        cli_die("meta: --start and --seconds are required (the run's start and wall time)");
    if (!iso_time_ok(start))
        cli_die("meta: --start: expected an ISO 8601 time of the calendar such as "
                "2026-01-31T12:00:00Z, got '%s'", start);
    double wall = cli_real("meta", "seconds", seconds, 0);
    if (extra && extra_file)
        cli_die("meta: give at most one of --extra and --extra-file");

    /* the result exists and is a file; its sidecar can be written and is
     * neither a folder, a FIFO, a device nor one of the inputs */
    need_regular("-o", out);
    char *side = lnk_meta_path(out);
    if (!side)
        cli_die("out of memory");
    int kind;
    if (lnk_output_check(side, &kind) != LNK_OK)
        cli_die("meta: sidecar of -o %s", lnk_errmsg());
    if (kind != LNK_OUT_FILE)
        cli_die("meta: sidecar of -o %s: is a FIFO or device, expected a regular file or a new "
                "name (not replaced)", side);
    cli_files f = {0};
    cli_files_out(&f, side, "the sidecar of -o");
    cli_files_in(&f, out, "-o");
    for (int i = 0; i < n_in; i++)
        cli_files_in(&f, inputs[i], "--input");
    cli_files_in(&f, mo.config_path, "--config");
    if (extra_file && strcmp(extra_file, "-"))
        cli_files_in(&f, extra_file, "--extra-file");
    cli_files_check("meta", &f);

    char *extra_text = NULL;
    if (extra_file) {
        if (!strcmp(extra_file, "-")) {
            if (!(extra_text = read_stream(stdin)))
                cli_die("meta: --extra-file -: cannot read standard input");
        } else {
            need_regular("--extra-file", extra_file);
            size_t len;
            if (lnk_read_file(extra_file, &extra_text, &len) != LNK_OK)
                cli_die("meta: --extra-file %s", lnk_errmsg());
        }
        extra = extra_text;
    }

    /* the record: the other program's command line, inputs, seeds, counts */
    lnk_prov *p = cli_prov();
    if (lnk_prov_args(p, argc - dd - 1, argv + dd + 1) != LNK_OK)
        cli_die_lib();
    lnk_prov_counts(p, threads, ranks);
    lnk_config c, *cfg = NULL;
    if (mo.config_path) {
        need_regular("--config", mo.config_path);
        cli_make_config(&mo, &c); /* records it as an input, and the "init" seed */
        cfg = &c;
    }
    for (int i = 0; i < n_in; i++) {
        need_regular("--input", inputs[i]);
        if (lnk_prov_input(p, inputs[i]) != LNK_OK)
            cli_die("meta: --input %s", lnk_errmsg());
    }
    for (int i = 0; i < n_seed; i++) {
        const char *eq = strchr(seed_args[i], '=');
        char *end;
        errno = 0;
        unsigned long long v = eq ? strtoull(eq + 1, &end, 10) : 0;
        if (!eq || eq == seed_args[i] || !eq[1] || *end || errno || eq[1] == '-')
            cli_die("meta: --seed: expected NAME=N with N in 0..2^64-1, got '%s'", seed_args[i]);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - seed_args[i]), seed_args[i]);
        for (int j = 0; j < i; j++) /* one value a name: a second would replace the first */
            if (!strncmp(seed_args[j], seed_args[i], (size_t)(eq - seed_args[i]) + 1))
                cli_die("meta: --seed %s: the seed '%s' is given twice (%s and %s); each named "
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
        cli_die("meta: %s", lnk_errmsg());
    cli_say("lnkit meta: wrote %s\n", side);
    if (cfg)
        lnk_config_clear(cfg);
    free(extra_text);
    free(side);
    return 0;
}
