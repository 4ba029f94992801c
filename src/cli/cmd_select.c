/* lnkit select: which keys of a set are selectable (docs/MODEL.md §7): some
 * query makes the key the strict argmax of q.k, i.e. it lies outside the convex
 * hull of the other keys.  Reads keys from CSV, optionally normalises them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/geometry.h"

static void help(void)
{
    printf("usage: lnkit select --keys K.csv [--norm none|center|scale|layernorm|rmsnorm]\n"
           "                    [--eps E] [--tol T] [-o SEL.csv]\n\n"
           "Read keys from K.csv (one key a row, comma-separated numbers, an optional\n"
           "header row), apply the norm to each key, and write CSV index,selectable to\n"
           "standard output (or to SEL.csv, with SEL.meta.json): index from 0,\n"
           "selectable 1 if some query q makes the key\n"
           "the strict argmax of q.k (it lies outside the convex hull of the other keys),\n"
           "0 if not (duplicate keys are unselectable).  Decided by a linear program.\n\n"
           "  --keys FILE     keys, CSV                                     (required)\n"
           "  --norm NAME     none, center (x - mean), scale (sqrt(d) x/||x||),\n"
           "                  layernorm, rmsnorm (no gain or bias)          (none)\n"
           "  --eps E         epsilon of layernorm and rmsnorm              (1e-5)\n"
           "  --tol T         relative l1 distance to the hull of the other keys above\n"
           "                  which a key counts as selectable              (%g)\n"
           "  -o, --output FILE  write the CSV here (+ .meta.json) instead of stdout\n"
           "  --quiet         nothing on stderr but errors\n",
           LNK_GEOM_SEL_TOL);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* A finite number filling the whole field.  strtod's ERANGE on underflow (a
 * subnormal such as 1e-320, or a value rounded to 0) is no error: the value is
 * finite and exact to the precision doubles have there. */
static int parse_num(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s != '\0' && *end == '\0' && isfinite(*v);
}

/* Split line (modified in place) at commas into at most max fields; returns the count. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (n < max)
            f[n] = trim(p);
        n++;
        if (!c)
            break;
        p = c + 1;
    }
    return n;
}

/* Read the keys: *K [n, d] malloc'd. */
static void read_keys(const char *path, double **K, int *n_out, int *d_out)
{
    char *buf;
    if (cli_read_input(path, lnk_input_limit(), "keys file", &buf) != LNK_OK)
        cli_die_lib();
    int cap = 64, n = 0, d = -1;
    double *k = NULL;
    char **f = NULL;
    /* lines; trailing empty lines (and a final newline) are allowed */
    char *p = buf;
    if (!strncmp(p, "\xEF\xBB\xBF", 3)) /* a UTF-8 byte-order mark, as spreadsheets write */
        p += 3;
    size_t total = strlen(buf);
    while (total > 0 && (buf[total - 1] == '\n' || buf[total - 1] == '\r'))
        buf[--total] = '\0';
    if (total == (size_t)(p - buf))
        cli_die("%s: no keys (the file is empty)", path);
    int line_no = 0;
    while (p) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        line_no++;
        char *line = p;
        p = nl ? nl + 1 : NULL;
        if (*trim(line) == '\0')
            cli_die("%s: row %d is empty", path, line_no);
        int nf = 1;
        for (const char *c = line; *c; c++)
            nf += *c == ',';
        if (d < 0) {
            d = nf;
            f = malloc(sizeof(char *) * (size_t)d);
            k = malloc(sizeof(double) * (size_t)cap * d);
            if (!f || !k)
                cli_die("out of memory");
        }
        if (nf != d)
            cli_die("%s: row %d has %d fields, expected %d (as in row 1)", path, line_no, nf, d);
        split(line, f, d);
        if (line_no == 1) {
            /* a header: no field of the first row is a number */
            int numeric = 0;
            double v;
            for (int c = 0; c < d; c++)
                numeric += parse_num(f[c], &v);
            if (numeric == 0)
                continue;
        }
        if (n == cap) {
            cap *= 2;
            k = realloc(k, sizeof(double) * (size_t)cap * d);
            if (!k)
                cli_die("out of memory");
        }
        for (int c = 0; c < d; c++)
            if (!parse_num(f[c], &k[(size_t)n * d + c]))
                cli_die("%s: row %d, column %d: '%s' is not a finite number (a double: at "
                        "most 1.7976931348623157e308 in size)", path, line_no, c + 1, f[c]);
        n++;
    }
    free(f);
    free(buf);
    if (n < 1)
        cli_die("%s: no keys (only a header row)", path);
    *K = k;
    *n_out = n;
    *d_out = d;
}

static double parse_pos(const char *opt, const char *s, int allow_zero)
{
    double v;
    if (!parse_num(s, &v) || v < 0 || (!allow_zero && v == 0))
        cli_die("--%s: expected a %s number, got '%s'", opt, allow_zero ? "non-negative" : "positive",
                s);
    return v;
}

int cmd_select(int argc, char **argv)
{
    static struct option opts[] = {{"keys", required_argument, NULL, 'k'},
                                   {"norm", required_argument, NULL, 'n'},
                                   {"eps", required_argument, NULL, 'e'},
                                   {"tol", required_argument, NULL, 't'},
                                   {"output", required_argument, NULL, 'o'},
                                   {"quiet", no_argument, NULL, 'q'},
                                   {"help", no_argument, NULL, 'h'},
                                   {0, 0, 0, 0}};
    const char *kpath = NULL, *out = NULL;
    const char *norm_name = "none";
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    lnk_geom_norm norm = LNK_GEOM_NONE;
    double eps = 1e-5, tol = LNK_GEOM_SEL_TOL;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'k': kpath = optarg; break;
        case 'n':
            if (lnk_geom_norm_parse(optarg, &norm) != LNK_OK)
                cli_die("select: --%s", lnk_errmsg());
            norm_name = optarg;
            break;
        case 'o': out = optarg; break;
        case 'q': cli_quiet = 1; break;
        case 'e': eps = parse_pos("eps", optarg, 1); break;
        case 't': tol = parse_pos("tol", optarg, 0); break;
        case 'h': help(); return 0;
        default: cli_bad_option("select", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("select: unexpected argument '%s'", argv[optind]);
    if (!kpath)
        cli_die("select: --keys K.csv is required (see lnkit select --help)");
    char *meta = out ? cli_meta_path(out) : NULL;
    cli_file outs[2] = {{out, "-o"}, {meta, "the sidecar of -o"}}, ins[1] = {{kpath, "--keys"}};
    cli_check_outputs("select", outs, 2, ins, 1);
    free(meta);
    double *K;
    int n, d;
    read_keys(kpath, &K, &n, &d);
    if (lnk_geom_apply(norm, K, K, n, d, 1, eps) != LNK_OK)
        cli_die_lib();
    int *sel = malloc(sizeof(int) * (size_t)n);
    if (!sel)
        cli_die("out of memory");
    if (lnk_geom_selectable(K, n, d, tol, sel, NULL) != LNK_OK)
        cli_die("%s: %s", kpath, lnk_errmsg());
    lnk_afile af;
    if (out)
        cli_outputs_begin(); /* the CSV and its sidecar: both or neither */
    if (out && lnk_afile_open(&af, out) != LNK_OK)
        cli_die_lib();
    int st = lnk_select_fwrite(out ? af.f : stdout, sel, n), n_sel = 0;
    for (int i = 0; i < n; i++)
        n_sel += sel[i];
    if (out) {
        if (st || lnk_afile_commit(&af) != LNK_OK) {
            lnk_afile_abort(&af);
            cli_die_lib();
        }
        lnk_meta *extra = lnk_meta_alloc();
        if (!extra)
            cli_die_lib();
        lnk_meta_str(extra, "command", "select");
        lnk_meta_str(extra, "norm", norm_name);
        lnk_meta_real(extra, "eps", eps);
        lnk_meta_real(extra, "tol", tol);
        lnk_meta_int(extra, "keys", n);
        lnk_meta_int(extra, "dim", d);
        lnk_meta_int(extra, "selectable", n_sel);
        st = lnk_meta_write(out, cli_prov(), NULL, extra, start, lnk_now() - t0);
        lnk_meta_free(extra);
        if (st != LNK_OK)
            cli_die_lib();
        cli_outputs_commit();
        cli_say("select: %d of %d keys selectable -> %s\n", n_sel, n, out);
    } else {
        if (st)
            cli_die_lib();
        if (fflush(stdout) != 0)
            cli_die("select: could not write to standard output");
    }
    free(sel);
    free(K);
    return 0;
}
