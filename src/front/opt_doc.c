/* Documentation from the option tables (opt.h): --help and the OPTIONS
 * section of the man pages. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "front/opt_int.h"

/* -q, --quiet (every program's; front/msg.c: cli_say is silent, cli_warn and
 * cli_die are not), in --help and the man pages alike. */
#define CLI_QUIET_HELP "no notes or progress: nothing on standard error but errors and warnings"

#define COL 26   /* where help text starts */
#define WIDTH 79

/* The value's name: o->arg, or the choices "a|b|c". */
static const char *arg_text(const cli_opt *o, char *buf, size_t n)
{
    if (o->type == CLI_FLAG)
        return NULL;
    if (o->arg || (o->type != CLI_CHOICE && o->type != CLI_WORDS))
        return o->arg;
    size_t len = 0;
    for (const cli_choice *c = o->ref; c->name && len < n; c++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", c == o->ref ? "" : "|", c->name);
    if (o->type == CLI_WORDS && len < n) /* a list of them */
        snprintf(buf + len, n - len, ",...");
    return buf;
}

/* The default as help shows it, or NULL for none. */
static const char *def_text(const cli_opt *o, const void *base, char *buf, size_t n)
{
    if ((o->flags & CLI_REQ) && !o->excl)
        return "required";
    if (o->def)
        return o->def;
    switch (o->type) {
    case CLI_FLAG: case CLI_CALL: case CLI_CONFIG: return NULL;
    case CLI_LIST: return "none";
    case CLI_STR: case CLI_INTS: case CLI_WORDS: {
        const char *v = cli_opt_text(o, base, buf, n);
        return v && *v ? v : "none";
    }
    default: return cli_opt_text(o, base, buf, n);
    }
}

/* ------------------------------------------------------------------ help */

/* words of text, wrapped from column col to WIDTH; the first line starts
 * at column *at (already written) */
static void wrap(FILE *f, const char *text, int col, int at)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (at > col && at + 1 + (int)w > WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, w, f);
        at += (int)w;
        p += w;
    }
    fputc('\n', f);
}

static void help_line(FILE *f, const char *left, const char *help, const char *def)
{
    int at = fprintf(f, "  %s", left);
    if (at > COL - 2) {
        fputc('\n', f);
        at = 0;
    }
    fprintf(f, "%*s", COL - at, "");
    char *t = NULL;
    if (asprintf(&t, "%s%s%s%s", help ? help : "", def ? " (" : "", def ? def : "",
                 def ? ")" : "") < 0)
        return;
    wrap(f, t, COL, COL);
    free(t);
}

static void print_opts(const cli_flat *fl, int n, FILE *f);

void cli_help(const cli_cmd *cmd, const void *args, FILE *f)
{
    static cli_flat fl[CLI_MAX_OPTS];
    int n = cli_flatten(cmd->opts, (void *)args, fl, CLI_MAX_OPTS);
    int indent = (int)strlen("usage: ") + (int)strlen(cmd->name) + 1;
    fprintf(f, "usage: %s ", cmd->name);
    for (const char *u = cmd->usage; *u;) {
        size_t len = strcspn(u, "\n");
        fprintf(f, "%.*s\n", (int)len, u);
        u += len;
        if (*u == '\n' && *++u)
            fprintf(f, "%*s", indent, "");
    }
    fprintf(f, "\n%s\n", cmd->about);
    if (n && !fl[0].heading)
        fprintf(f, "\nOptions:\n");
    print_opts(fl, n, f);
    fprintf(f, "\nGeneral:\n");
    help_line(f, "-q, --quiet", CLI_QUIET_HELP, NULL);
    help_line(f, "-h, --help", "this help", NULL);
}

void cli_help_opts(const cli_opt *table, const void *args, FILE *f)
{
    static cli_flat fl[CLI_MAX_OPTS];
    print_opts(fl, cli_flatten(table, (void *)args, fl, CLI_MAX_OPTS), f);
}

static void print_opts(const cli_flat *fl, int n, FILE *f)
{
    for (int i = 0; i < n; i++) {
        const cli_opt *o = fl[i].o;
        char left[400], ab[160], db[512];
        if (fl[i].heading) { /* a group without a heading continues the one before */
            if (o->help)
                fprintf(f, "\n%s:\n", o->help);
            continue;
        }
        const char *a = arg_text(o, ab, sizeof ab);
        snprintf(left, sizeof left, "%s%c%s--%s%s%s", o->key ? "-" : "", o->key ? o->key : ' ',
                 o->key ? ", " : "", o->name, a ? " " : "", a ? a : "");
        help_line(f, o->key ? left : left + 1, o->help, def_text(o, fl[i].base, db, sizeof db));
    }
}

/* ------------------------------------------------------------------ roff */

/* text for roff: '-' as \-, '\' as \e, no line starting with '.' or '\''. */
static void roff_text(FILE *f, const char *s, int sentence)
{
    if (sentence && islower((unsigned char)*s)) {
        fputc(toupper((unsigned char)*s), f);
        s++;
    }
    for (; *s; s++) {
        if (*s == '-')
            fputs("\\-", f);
        else if (*s == '\\')
            fputs("\\e", f);
        else
            fputc(*s, f);
    }
}

static void roff_tag(FILE *f, const cli_opt *o, const char *arg)
{
    if (o->key)
        fprintf(f, "\\fB\\-%c\\fR, ", o->key);
    fputs("\\fB\\-\\-", f);
    roff_text(f, o->name, 0);
    fputs("\\fR", f);
    if (arg && strchr(arg, '|')) { /* choices, each in bold */
        fputs(" ", f);
        for (const char *p = arg; *p;) {
            size_t len = strcspn(p, "|");
            fprintf(f, "\\fB%.*s\\fR%s", (int)len, p, p[len] ? "|" : "");
            p += len + (p[len] != 0);
        }
    } else if (arg) {
        fputs(" \\fI", f);
        roff_text(f, arg, 0);
        fputs("\\fR", f);
    }
    fputc('\n', f);
}

static void roff_item(FILE *f, const cli_opt *o, const char *arg, const char *help,
                      const char *def)
{
    fputs(".TP\n", f);
    roff_tag(f, o, arg);
    fputs("\\&", f);
    roff_text(f, help, 1);
    if (def) {
        fputs(" (", f);
        roff_text(f, def, 0);
        fputc(')', f);
    }
    fputs(".\n", f);
    if (o->doc) {
        roff_text(f, o->doc, 0);
        fputc('\n', f);
    }
    if (o->was) {
        fputs("Formerly \\fB\\-\\-", f);
        roff_text(f, o->was, 0);
        fputs("\\fR, still accepted with a warning until the next release.\n", f);
    }
}

void cli_doc_roff(const cli_cmd *cmd, const void *args, FILE *f)
{
    static cli_flat fl[CLI_MAX_OPTS];
    int n = cli_flatten(cmd->opts, (void *)args, fl, CLI_MAX_OPTS);
    fputs(".SH OPTIONS\n", f);
    for (int i = 0; i < n; i++) {
        const cli_opt *o = fl[i].o;
        char ab[160], db[512];
        if (fl[i].heading && !o->help)
            continue;
        if (fl[i].heading) {
            fputs(".SS ", f);
            roff_text(f, o->help, 0);
            fputc('\n', f);
            if (o->doc) {
                roff_text(f, o->doc, 0);
                fputc('\n', f);
            }
            continue;
        }
        roff_item(f, o, arg_text(o, ab, sizeof ab), o->help,
                  def_text(o, fl[i].base, db, sizeof db));
    }
    fputs(".SS General\n", f);
    static const cli_opt quiet = {.type = CLI_FLAG, .key = 'q', .name = "quiet"},
                         help = {.type = CLI_FLAG, .key = 'h', .name = "help"};
    roff_item(f, &quiet, NULL, CLI_QUIET_HELP, NULL);
    roff_item(f, &help, NULL, "the options, their values and defaults", NULL);
}

void cli_doc_synopsis(const cli_cmd *cmd, FILE *f)
{
    fputs(".SH SYNOPSIS\n.nf\n\\fB", f);
    roff_text(f, cmd->name, 0);
    fputs("\\fR ", f);
    for (const char *u = cmd->usage; *u; u++) {
        if (*u == '\n')
            fputs(u[1] ? "\n    " : "", f);
        else if (*u == '-' || *u == '\\')
            fputs(*u == '-' ? "\\-" : "\\e", f);
        else
            fputc(*u, f);
    }
    fputs("\n.fi\n", f);
}
