/* Options declared once (opt.h): the tables flattened, the command line
 * parsed (the one call of getopt_long in the programs), values checked. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "front/front.h"
#include "front/opt.h"
#include "front/opt_int.h"

/* ------------------------------------------------------------ flattening */

static cli_opt cfg_opts[64];         /* the configuration keys as options */
static char cfg_names[2][64][32];    /* their spellings: '-', and '_' where it differs */
static char cfg_args[64][64];        /* enum keys: "lm|seq2seq|cls" */
static lnk_config_key_doc cfg_docs[64];
static int n_cfg = -1;

/* The configuration keys as options (lnk_config_describe), once. */
static void config_opts(void)
{
    if (n_cfg >= 0)
        return;
    n_cfg = 0;
    lnk_config_key_doc d;
    while (n_cfg < 64 && lnk_config_describe(n_cfg, &d) == LNK_OK) {
        int i = n_cfg++;
        cfg_docs[i] = d;
        snprintf(cfg_names[0][i], 32, "%s", d.name);
        snprintf(cfg_names[1][i], 32, "%s", d.name);
        for (char *p = cfg_names[0][i]; *p; p++)
            if (*p == '_')
                *p = '-';
        size_t len = 0;
        for (int v = 0; d.values && d.values[v] && len < 63; v++)
            len += (size_t)snprintf(cfg_args[i] + len, 64 - len, "%s%s", v ? "|" : "", d.values[v]);
        cfg_opts[i] = (cli_opt){.type = CLI_CONFIG, .name = cfg_names[0][i],
                                .arg = d.values ? cfg_args[i] : d.arg, .help = cfg_docs[i].help,
                                .def = cfg_docs[i].def};
    }
    lnk_error_clear();
}

const char *cli_config_alias(int i)
{
    config_opts();
    return i >= 0 && i < n_cfg && strcmp(cfg_names[0][i], cfg_names[1][i]) ? cfg_names[1][i]
                                                                            : NULL;
}

static int flatten_into(const cli_opt *t, char *base, cli_flat *f, int n, int cap)
{
    for (; t->type != CLI_END; t++) {
        if (t->type == CLI_GROUP) {
            if (n < cap) /* the heading, for help (a group without a table: only that) */
                f[n++] = (cli_flat){t, base, -1, 1};
            if (t->ref)
                n = flatten_into(t->ref, base + t->off, f, n, cap);
        } else if (t->type == CLI_CONFIG) {
            config_opts();
            for (int k = 0; k < n_cfg && n < cap; k++)
                f[n++] = (cli_flat){&cfg_opts[k], base + t->off, k, 0};
        } else if (n < cap) {
            f[n++] = (cli_flat){t, base, -1, 0};
        }
    }
    return n;
}

int cli_flatten(const cli_opt *t, void *base, cli_flat *f, int cap)
{
    int n = flatten_into(t, base, f, 0, cap);
    if (n >= cap) {
        fprintf(stderr, "%s: internal: more than %d options\n", cli_name(), cap);
        exit(2);
    }
    return n;
}

int cli_opts_each(const cli_opt *table, void *args, int groups, cli_each_fn *fn, void *ctx)
{
    for (const cli_opt *t = table; t->type != CLI_END; t++) {
        int rc = 0;
        if (t->type == CLI_GROUP)
            rc = groups && t->ref ? cli_opts_each(t->ref, (char *)args + t->off, groups, fn, ctx)
                                  : 0;
        else
            rc = fn(t, args, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

const char *cli_opt_flag(const cli_opt *o, char *buf, size_t n)
{
    if (o->key)
        snprintf(buf, n, "-%c", o->key);
    else
        snprintf(buf, n, "--%s", o->name);
    return buf;
}

const char *cli_opt_id_name(const cli_opt *o, char *buf, size_t n)
{
    if (o->was)
        snprintf(buf, n, "--%s", o->was);
    else
        cli_opt_flag(o, buf, n);
    return buf;
}

const char *cli_opt_meta_key(const cli_opt *o, char *buf, size_t n)
{
    snprintf(buf, n, "%s", o->meta ? o->meta : o->was ? o->was : o->name);
    for (char *k = buf; *k; k++)
        if (*k == '-')
            *k = '_';
    return buf;
}

/* ---------------------------------------------------------------- values */

const char *cli_opt_text(const cli_opt *o, const void *base, char *buf, size_t n)
{
    const char *p = (const char *)base + o->off;
    switch (o->type) {
    case CLI_FLAG: return *(const int *)p ? "true" : "false";
    case CLI_INT: snprintf(buf, n, "%d", *(const int *)p); return buf;
    case CLI_LONG: snprintf(buf, n, "%ld", *(const long *)p); return buf;
    case CLI_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)p); return buf;
    case CLI_REAL: snprintf(buf, n, "%g", *(const double *)p); return buf;
    case CLI_STR: return *(const char *const *)p ? *(const char *const *)p : o->unset;
    case CLI_CHOICE:
        for (const cli_choice *c = o->ref; c->name; c++)
            if (c->value == *(const int *)p)
                return c->name;
        return "?";
    case CLI_INTS: case CLI_WORDS: {
        const cli_ints *l = (const cli_ints *)p;
        size_t k = 0;
        buf[0] = 0;
        for (int i = 0; i < l->n && k < n; i++) {
            const char *w = NULL;
            for (const cli_choice *c = o->type == CLI_WORDS ? o->ref : NULL; c && c->name; c++)
                if (c->value == l->v[i])
                    w = c->name;
            k += w ? (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", w)
                   : (size_t)snprintf(buf + k, n - k, "%s%d", i ? "," : "", l->v[i]);
        }
        return buf;
    }
    default: return NULL;
    }
}

/* The size a field of this type must have (0: any). */
static size_t type_size(cli_type t)
{
    switch (t) {
    case CLI_FLAG: case CLI_INT: case CLI_CHOICE: return sizeof(int);
    case CLI_LONG: return sizeof(long);
    case CLI_U64: return sizeof(uint64_t);
    case CLI_REAL: return sizeof(double);
    case CLI_STR: return sizeof(const char *);
    case CLI_CONFIG: return sizeof(cli_config_flags);
    case CLI_INTS: case CLI_WORDS: return sizeof(cli_ints);
    default: return 0;
    }
}

/* "an integer from 1 to 1048576", "a number > 0" */
static const char *expected(const cli_opt *o, char *buf, size_t n)
{
    int integer = o->type == CLI_INT || o->type == CLI_LONG || o->type == CLI_U64;
    const char *what = integer ? "an integer" : "a number";
    int hi = o->max > o->min && o->max < (integer ? 9.2e18 : HUGE_VAL);
    if (hi && !(o->flags & CLI_GT))
        snprintf(buf, n, "%s from %.15g to %.15g", what, o->min, o->max);
    else if (hi)
        snprintf(buf, n, "%s > %.15g and <= %.15g", what, o->min, o->max);
    else
        snprintf(buf, n, "%s %s %.15g", integer ? "an integer" : "a finite number",
                 o->flags & CLI_GT ? ">" : ">=", o->min);
    return buf;
}

static _Noreturn void bad_value(const cli_opt *o, const char *arg)
{
    char f[64], e[128];
    cli_die("%s: expected %s, got '%s'", cli_opt_flag(o, f, sizeof f), expected(o, e, sizeof e),
            arg);
}

static int in_range(const cli_opt *o, double v)
{
    return (o->flags & CLI_GT ? v > o->min : v >= o->min) && (!(o->max > o->min) || v <= o->max);
}

/* "a,b,c" into l: integers in [min, max], or names of o's choices. */
static void set_list(const cli_opt *o, const char *arg, cli_ints *l)
{
    char f[64], item[64];
    l->n = 0;
    for (const char *p = arg; *p;) {
        size_t len = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        if (l->n == CLI_MAX_INTS)
            cli_die("%s: at most %d values, got '%s'", cli_opt_flag(o, f, sizeof f),
                    CLI_MAX_INTS, arg);
        int ok = 0;
        if (o->type == CLI_WORDS) {
            for (const cli_choice *c = o->ref; c->name && !ok; c++)
                if (!strcmp(c->name, item))
                    l->v[l->n] = c->value, ok = 1;
        } else {
            char *end;
            errno = 0;
            long v = strtol(item, &end, 10);
            ok = !errno && end != item && !*end && in_range(o, (double)v);
            l->v[l->n] = (int)v;
        }
        if (!ok) {
            char e[128] = "";
            if (o->type == CLI_INTS)
                expected(o, e, sizeof e);
            else
                for (const cli_choice *c = o->ref; c->name; c++)
                    snprintf(e + strlen(e), sizeof e - strlen(e), "%s%s", c == o->ref ? "" : ", ",
                             c->name);
            cli_die("%s: expected comma-separated %s%s, got '%s'", cli_opt_flag(o, f, sizeof f),
                    o->type == CLI_INTS ? "values, each " : "names of ", e, arg);
        }
        l->n++;
        p += len + (p[len] == ',');
    }
}

static void set_value(const cli_flat *fl, const char *arg)
{
    const cli_opt *o = fl->o;
    char *p = fl->base + o->off, *end, f[64];
    errno = 0;
    switch (o->type) {
    case CLI_FLAG: *(int *)p = 1; return;
    case CLI_INT: case CLI_LONG: {
        long long v = strtoll(arg, &end, 10);
        if (errno || end == arg || *end || !in_range(o, (double)v))
            bad_value(o, arg);
        if (o->type == CLI_INT)
            *(int *)p = (int)v;
        else
            *(long *)p = (long)v;
        return;
    }
    case CLI_U64: {
        unsigned long long v = strtoull(arg, &end, 10);
        if (errno || end == arg || *end || strchr(arg, '-') || !in_range(o, (double)v))
            bad_value(o, arg);
        *(uint64_t *)p = (uint64_t)v;
        return;
    }
    case CLI_REAL: {
        double v = strtod(arg, &end);
        if (end == arg || *end || !isfinite(v) || !in_range(o, v))
            bad_value(o, arg);
        *(double *)p = v;
        return;
    }
    case CLI_STR:
        if (!*arg && (o->flags & (CLI_READS | CLI_WRITES)))
            cli_die("%s: expected a file name, got ''", cli_opt_flag(o, f, sizeof f));
        *(const char **)p = arg;
        return;
    case CLI_CHOICE: {
        char names[256] = "";
        size_t len = 0;
        for (const cli_choice *c = o->ref; c->name; c++) {
            if (!strcmp(c->name, arg)) {
                *(int *)p = c->value;
                return;
            }
            len += (size_t)snprintf(names + len, len < sizeof names ? sizeof names - len : 0,
                                    "%s%s", c == o->ref ? "" : ", ", c->name);
        }
        cli_die("%s: expected one of %s, got '%s'", cli_opt_flag(o, f, sizeof f), names, arg);
    }
    case CLI_LIST: {
        int *count = (int *)(fl->base + o->count);
        if ((size_t)*count >= o->size / sizeof(char *))
            cli_die("%s: at most %zu of them", cli_opt_flag(o, f, sizeof f),
                    o->size / sizeof(char *));
        if (!*arg && (o->flags & (CLI_READS | CLI_WRITES)))
            cli_die("%s: expected a file name, got ''", cli_opt_flag(o, f, sizeof f));
        ((const char **)p)[(*count)++] = arg;
        return;
    }
    case CLI_CALL: ((cli_call_fn *)o->ref)(cli_opt_flag(o, f, sizeof f), arg, p); return;
    case CLI_INTS: case CLI_WORDS: set_list(o, arg, (cli_ints *)p); return;
    case CLI_CONFIG: {
        cli_config_flags *c = (cli_config_flags *)p;
        if (c->n == CLI_MAX_CONFIG_FLAGS)
            cli_die("more than %d configuration flags", CLI_MAX_CONFIG_FLAGS);
        c->key[c->n] = cfg_docs[fl->key].name;
        c->val[c->n++] = arg;
        return;
    }
    default: return;
    }
}

/* ---------------------------------------------------------------- parsing */

/* The last parse: its options, which were given, and the defaults. */
static cli_flat flat[CLI_MAX_OPTS];
static int n_flat;
static unsigned char given[CLI_MAX_OPTS];
static char *parsed_args, *defaults;
static size_t parsed_size;

int cli_given(const char *name)
{
    for (int i = 0; i < n_flat; i++)
        if (!flat[i].heading && flat[i].o->name && !strcmp(flat[i].o->name, name))
            return given[i];
    return 0;
}

const cli_opt *cli_opt_of_id(const char *item, int *given_out)
{
    char f[96];
    for (int i = 0; i < n_flat; i++)
        if (!flat[i].heading && flat[i].o->name &&
            !strcmp(cli_opt_id_name(flat[i].o, f, sizeof f), item)) {
            *given_out = given[i];
            return flat[i].o;
        }
    return NULL;
}

int cli_declared(const char *name)
{
    for (int i = 0; i < n_flat; i++)
        if (!flat[i].heading && flat[i].o->name && !strcmp(flat[i].o->name, name))
            return 1;
    return 0;
}

const void *cli_default_of(const void *field)
{
    const char *p = field;
    if (!defaults || p < parsed_args || p >= parsed_args + parsed_size)
        return NULL;
    return defaults + (p - parsed_args);
}

/* An option given that does not apply (o->needs unmet) is refused, naming
 * both options. */
static void check_needs(const cli_opt *o)
{
    const char *eq = strchr(o->needs, '=');
    size_t len = eq ? (size_t)(eq - o->needs) : strlen(o->needs);
    char f[64], g[64], buf[64];
    for (int j = 0; j < n_flat; j++) {
        const cli_opt *n = flat[j].o;
        if (flat[j].heading || !n->name || strlen(n->name) != len ||
            strncmp(n->name, o->needs, len))
            continue;
        if (!eq && !given[j])
            cli_die("%s applies only with %s%s%s, which is not given",
                    cli_opt_flag(o, f, sizeof f), cli_opt_flag(n, g, sizeof g), n->arg ? " " : "",
                    n->arg ? n->arg : "");
        const char *v = eq ? cli_opt_text(n, flat[j].base, buf, sizeof buf) : NULL;
        if (eq && (!v || strcmp(v, eq + 1)))
            cli_die("%s applies only with %s %s, not %s %s", cli_opt_flag(o, f, sizeof f),
                    cli_opt_flag(n, g, sizeof g), eq + 1, g, v ? v : "?");
        return;
    }
}

/* Exclusion groups, required options and options that do not apply, after
 * the values. */
static void check_given(void)
{
    char f[64], list[512];
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        if (flat[i].heading)
            continue;
        if (o->needs && given[i])
            check_needs(o);
        if (o->excl) {
            int n = 0, first = 1, req = 0;
            size_t len = 0;
            for (int j = 0; j < n_flat; j++)
                if (!flat[j].heading && flat[j].o->excl == o->excl) {
                    if (j < i)
                        first = 0;
                    n += given[j];
                    req |= flat[j].o->flags & CLI_REQ;
                    len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
                                            "%s%s", len ? ", " : "",
                                            cli_opt_flag(flat[j].o, f, sizeof f));
                }
            if (first && n > 1)
                cli_die("give only one of %s", list);
            if (first && req && n == 0)
                cli_die("give one of %s", list);
        } else if ((o->flags & CLI_REQ) && !given[i]) {
            cli_die("%s%s%s is required", cli_opt_flag(o, f, sizeof f), o->arg ? " " : "",
                    o->arg ? o->arg : "");
        }
    }
}

/* A table's own mistakes, before any value: a field of the wrong size, a
 * name or short name declared twice (a group's key and a command's own
 * option of the same name would hide one another). */
static void check_table(const cli_cmd *cmd)
{
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        for (int j = 0; j < n_flat && !flat[i].heading; j++) {
            const cli_opt *p = flat[j].o;
            if (j != i && !flat[j].heading &&
                ((j < i && (!strcmp(p->name, o->name) || (o->key && p->key == o->key))) ||
                 (o->was && (!strcmp(p->name, o->was) || (p->was && !strcmp(p->was, o->was)))))) {
                fprintf(stderr, "%s: internal: option --%s declared twice\n", cmd->name,
                        o->was && j > i ? o->was : o->name);
                exit(2);
            }
        }
        size_t want = type_size(o->type);
        if (!flat[i].heading && want && o->size != want && o->type != CLI_CONFIG) {
            fprintf(stderr, "%s: internal: option --%s has a field of %zu bytes, not %zu\n",
                    cmd->name, o->name, o->size, want);
            exit(2);
        }
    }
}

/* "-o -", "-o - (the default)", "--json": the i-th option as a writer of
 * standard output. */
static const char *stdout_name(int i, char *buf, size_t n)
{
    char f[64];
    cli_opt_flag(flat[i].o, f, sizeof f);
    if (flat[i].o->type == CLI_FLAG)
        snprintf(buf, n, "%s", f);
    else
        snprintf(buf, n, "%s -%s", f, given[i] ? "" : " (its default)");
    return buf;
}

/* An input given as '-' where standard input is not read (opt.h). */
static void check_stdin(const cli_flat *fl)
{
    const cli_opt *o = fl->o;
    char f[64];
    if (!(o->flags & CLI_READS) || (o->flags & CLI_STDIN))
        return;
    int n = o->type == CLI_LIST ? *(const int *)(fl->base + o->count) : o->type == CLI_STR;
    const char *const *v = (const char *const *)(fl->base + o->off);
    for (int k = 0; k < n; k++)
        if (v[k] && !strcmp(v[k], "-")) {
            cli_opt_flag(o, f, sizeof f);
            if (o->key == 'o') /* lnkit meta: -o names the result whose sidecar is written */
                cli_die("-o -: -o names an existing result file here, not standard output; give "
                        "its name");
            cli_die("%s -: standard input is not read here; give a file name, or /dev/stdin", f);
        }
}

/* Standard output is one stream (opt.h): '-' only where declared, and one
 * output on it at most. */
static void check_stdout(void)
{
    int w[CLI_MAX_OPTS], n = 0, flags = 0, file = -1;
    char f[64], a[96], b[96];
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        const char *p = flat[i].base + o->off;
        if (!flat[i].heading)
            check_stdin(&flat[i]);
        if (flat[i].heading || !(o->flags & (CLI_STDOUT | CLI_WRITES)))
            continue;
        if (o->type == CLI_FLAG) {
            if (*(const int *)p)
                w[n++] = i, flags++;
            continue;
        }
        const char *v = o->type == CLI_STR ? *(const char *const *)p : NULL;
        if (!v || strcmp(v, "-"))
            continue;
        int dir = o->arg && !strcmp(o->arg, "DIR");
        if (!(o->flags & CLI_STDOUT))
            cli_die("%s -: %s; give a %s name", cli_opt_flag(o, f, sizeof f),
                    dir ? "the results are a folder of files, which standard output cannot be"
                    : o->flags & CLI_RESUMED
                        ? "the file is read back and extended when a run resumes, which "
                          "standard output cannot be"
                        : "standard output is not offered for this output",
                    dir ? "folder" : "file");
        if ((o->flags & CLI_BINARY) && isatty(STDOUT_FILENO))
            cli_die("%s -: standard output is a terminal and the output is binary "
                    "(safetensors): redirect it, or name a file", cli_opt_flag(o, f, sizeof f));
        w[n++] = i;
    }
    /* a flag printing the result stands for an output left at its default '-' */
    int k = 0;
    for (int j = 0; j < n; j++)
        if (given[w[j]] || flat[w[j]].o->type == CLI_FLAG || !flags)
            w[k++] = w[j];
    for (int j = 0; j < k && file < 0; j++)
        if (flat[w[j]].o->type != CLI_FLAG && !given[w[j]])
            file = w[j]; /* the one to name a file: one left at its default, */
    for (int j = 0; j < k && file < 0; j++)
        if (flat[w[j]].o->type != CLI_FLAG)
            file = w[j]; /* else the first */
    if (k > 1)
        cli_die("%s and %s would both write standard output, which takes one output: give %s a "
                "file name", stdout_name(w[0], a, sizeof a), stdout_name(w[1], b, sizeof b),
                cli_opt_flag(flat[file].o, f, sizeof f));
}

/* A long name not given whole ("--max" for --max-steps; opt.h): refused
 * with the current names of the options it could begin, an old name (.was)
 * standing for its option's new one.  Returns when t (the text after "--",
 * up to '=') is a whole name, or begins none. */
static void check_prefix(const char *t, const struct option *lo)
{
    size_t len = strcspn(t, "="), at = 0;
    char names[512] = "";
    int seen[CLI_MAX_OPTS + 2], n = 0;
    if (!len)
        return;
    for (const struct option *l = lo; l->name; l++)
        if (strlen(l->name) == len && !strncmp(l->name, t, len))
            return;
    for (const struct option *l = lo; l->name; l++) {
        int v = l->val >= 256 ? l->val - 256 : l->val == 'h' ? n_flat : n_flat + 1, dup = 0;
        if (strncmp(l->name, t, len))
            continue;
        for (int k = 0; k < n; k++)
            dup |= seen[k] == v;
        if (dup)
            continue;
        seen[n++] = v;
        if (at < sizeof names)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s--%s", n > 1 ? ", " : "",
                                   v < n_flat ? flat[v].o->name : v == n_flat ? "help" : "quiet");
    }
    if (n)
        cli_die("'--%.*s': give the option's whole name, %s%s", (int)len, t,
                n > 1 ? "one of " : "", names);
}

int cli_parse(const cli_cmd *cmd, void *args, int argc, char **argv)
{
    cli_set_name(cmd->name);
    memset(args, 0, cmd->size);
    if (cmd->defaults)
        cmd->defaults(args);
    free(defaults);
    defaults = cli_alloc(cmd->size);
    memcpy(defaults, args, cmd->size);
    parsed_args = args;
    parsed_size = cmd->size;
    n_flat = cli_flatten(cmd->opts, args, flat, CLI_MAX_OPTS);
    memset(given, 0, sizeof given);
    check_table(cmd);
    /* getopt's tables: long names (and the '_' spellings of configuration
     * keys) map to 256 + the option's index; short names are themselves */
    struct option *lo = cli_alloc(sizeof *lo * (3 * (size_t)n_flat + 3));
    unsigned char *old = cli_alloc((size_t)n_flat + 1); /* 1: by its old name, 2: new, 3: both */
    memset(old, 0, (size_t)n_flat + 1);
    char shorts[2 * CLI_MAX_OPTS + 8] = "+:hq";
    int nl = 0, ns = 4, help = 0;
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        if (flat[i].heading)
            continue;
        int has = o->type == CLI_FLAG ? no_argument : required_argument;
        lo[nl++] = (struct option){o->name, has, NULL, 256 + i};
        if (o->was) /* the old name, for one release (opt.h) */
            lo[nl++] = (struct option){o->was, has, NULL, 256 + i};
        const char *alias = flat[i].key >= 0 ? cli_config_alias(flat[i].key) : NULL;
        if (alias)
            lo[nl++] = (struct option){alias, has, NULL, 256 + i};
        if (o->key) {
            shorts[ns++] = o->key;
            if (has)
                shorts[ns++] = ':';
        }
    }
    lo[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[nl++] = (struct option){"quiet", no_argument, NULL, 'q'};
    lo[nl] = (struct option){0, 0, 0, 0};
    shorts[ns] = 0;
    /* first every option and its text, then (unless --help) the values */
    int *which = cli_alloc(sizeof(int) * (size_t)argc);
    const char **text = cli_alloc(sizeof(char *) * (size_t)argc);
    int n = 0, ch, li;
    opterr = 0;
    optind = 0; /* a fresh scan */
    for (;;) {
        int at = optind ? optind : 1;
        li = -1;
        if ((ch = getopt_long(argc, argv, shorts, lo, &li)) == -1)
            break;
        if (ch == '?' || ch == ':') {
            char sh[3] = {'-', (char)optopt, 0};
            const char *a = optopt > 0 && optopt < 256 ? sh : argv[optind - 1];
            if (!strncmp(a, "--", 2))
                check_prefix(a + 2, lo);
            if (ch == ':')
                cli_die("option '%s' needs a value (see %s --help)", a, cmd->name);
            cli_die("unknown option '%.*s' (see %s --help)", (int)strcspn(a, "="), a, cmd->name);
        }
        int was = 0; /* given by its old name */
        if (li >= 0) { /* a long name must be given whole */
            check_prefix(argv[at] + 2, lo);
            was = ch >= 256 && flat[ch - 256].o->was && !strcmp(lo[li].name, flat[ch - 256].o->was);
        }
        if (ch == 'h')
            help = 1;
        else if (ch == 'q')
            cli_quiet = 1;
        else {
            int i = ch >= 256 ? ch - 256 : -1;
            for (int j = 0; i < 0 && j < n_flat; j++)
                if (!flat[j].heading && flat[j].o->key == ch)
                    i = j;
            old[i] |= was ? 1 : 2;
            which[n] = i;
            text[n++] = optarg;
        }
    }
    free(lo);
    int test = cli_test_options();
    if (test == 1)
        cli_dump_table(flat, n_flat);
    if (help) {
        cli_help(cmd, defaults, stdout);
        exit(fflush(stdout) ? 2 : 0);
    }
    int rest = argc;
    if (optind < argc) {
        if (cmd->rest && optind > 1 && !strcmp(argv[optind - 1], "--"))
            rest = optind;
        else
            cli_die("unexpected argument '%s' (see %s --help)", argv[optind], cmd->name);
    }
    for (int i = 0; i < n_flat; i++) { /* after the scan: -q may come later */
        const cli_opt *o = flat[i].o;
        if (old[i] == 3) /* both names: a mistake, as Python's keywords (lnkit.Error) */
            cli_die("--%s and --%s are one option (--%s is its old name); give --%s once", o->was,
                    o->name, o->was, o->name);
        if (old[i] == 1)
            cli_warn("--%s is now --%s (the old name goes in the next release)", o->was, o->name);
    }
    free(old);
    for (int k = 0; k < n; k++) {
        set_value(&flat[which[k]], text[k]);
        given[which[k]] = 1;
    }
    if (test == 2)
        cli_dump_values(flat, n_flat);
    free(which);
    free(text);
    check_stdout(); /* first: "--text -" is told about '-', not about --synthetic */
    check_given();
    return rest;
}
