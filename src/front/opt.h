/* Options declared once: the front end of lnkit's commands, the studies and
 * the benchmarks (programs only, above the library; docs/cli.md has the
 * conventions).
 *
 * A program describes each option it takes by one entry of a table
 * (git's parse-options.h; Redis's config.c: one entry per setting serves
 * parsing, showing and recording it).  From the table come
 *   cli_parse      the command line into the program's argument struct: the
 *                  one call of getopt_long; a bad value is one line
 *                  "PROG: --opt: expected ..., got '...'" and exit 2;
 *   --help         every option the program takes, and no other, with its
 *                  value, help and default.  The default shown is the
 *                  struct's value before parsing: a program fills its struct
 *                  from the library's *_opts_default, so a default has one
 *                  source;
 *   cli_doc_roff   the OPTIONS section of its man page (tools/cli_doc.c);
 *                  cli_doc_synopsis its SYNOPSIS, from the usage --help shows;
 *   cli_opts_id    the options a checkpoint's identity holds (CLI_ID);
 *   cli_opts_meta  the options a result's sidecar records (CLI_META).
 * Tables share entries through groups (CLI_GROUP): the model configuration
 * (CLI_CONFIG: every key of the library's configuration table, as a flag
 * spelt with '-' or '_'; lnk_config_describe), the data options of the
 * curvature commands.  Every program also takes -h/--help and -q/--quiet.
 *
 * Standard output is one stream: an output given as '-' where its option
 * is not CLI_STDOUT is refused (no file named '-' is ever made), and at
 * most one output may go to standard output, a CLI_STDOUT flag (--json)
 * counting as one in place of an output left at its default '-'.  An input
 * given as '-' is refused where its option is not CLI_STDIN (/dev/stdin
 * reads standard input wherever a file is read).
 *
 * A renamed option declares its old name (.was): the old name parses as the
 * new one, with one warning line ("--eig-steps is now --max-steps"), and
 * what the option records (identity, sidecar key) keeps the old name.  Both
 * names in one command line are refused (one line naming both).
 *
 * Long names are matched whole: getopt_long's unique prefixes (--max for
 * --max-steps) are refused, naming the options the prefix begins by their
 * current names, so that adding an option never changes what an old command
 * line means.  A value option given twice keeps the last; a
 * CLI_LIST option collects every value in order. */
#ifndef LNK_FRONT_OPT_H
#define LNK_FRONT_OPT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lnkit/checkpoint.h"

typedef enum {
    CLI_END = 0,
    CLI_FLAG,   /* no value: int set to 1 */
    CLI_INT,    /* int in [min, max] */
    CLI_LONG,   /* long in [min, max] */
    CLI_U64,    /* uint64_t in [min, max] */
    CLI_REAL,   /* double in [min, max] (CLI_GT: > min) */
    CLI_STR,    /* const char *: a file name, a pattern */
    CLI_CHOICE, /* int: the value of one of ref's cli_choice names */
    CLI_LIST,   /* repeatable text: const char *[N] at off, its count (int) at count */
    CLI_CALL,   /* ref: a cli_call_fn that parses the text (dies on a bad one) */
    CLI_GROUP,  /* ref: another table, whose offsets start at off (NULL: a heading alone) */
    CLI_CONFIG, /* every configuration key as a flag, into a cli_config_flags */
    CLI_INTS,   /* comma-separated integers in [min, max] (none: ''), into a cli_ints */
    CLI_WORDS,  /* comma-separated names of ref's choices, their values into a cli_ints */
} cli_type;

enum {
    CLI_REQ = 1 << 0,     /* required (in an exclusion group: exactly one of it) */
    CLI_GT = 1 << 1,      /* numbers: > min instead of >= min */
    CLI_ID = 1 << 2,      /* belongs to a checkpoint's identity (the value) */
    CLI_ID_FILE = 1 << 3, /* ... by the SHA-256 of the file(s) it names */
    CLI_ID_SET = 1 << 4,  /* ... only when it differs from the default */
    CLI_META = 1 << 5,    /* recorded in the sidecar (key: .meta, or the name with '_') */
    CLI_WRITES = 1 << 6,  /* names an output file ('-' refused unless CLI_STDOUT) */
    CLI_READS = 1 << 7,   /* names an input file */
    CLI_STDOUT = 1 << 8,  /* CLI_WRITES: '-' is standard output; a flag: it prints the result
                             on standard output (--json) */
    CLI_BINARY = 1 << 9,  /* CLI_STDOUT: binary, so '-' is refused when standard output is a
                             terminal */
    CLI_STDIN = 1 << 10,  /* CLI_READS: '-' is standard input (else refused: /dev/stdin) */
    CLI_RESUMED = 1 << 11, /* CLI_WRITES: a file a later run reads back and extends (the
                              reason '-' is refused) */
};

typedef struct {
    const char *name;
    int value;
} cli_choice;

typedef void cli_call_fn(const char *opt, const char *arg, void *dst);

typedef struct cli_opt {
    cli_type type;
    char key;               /* short name ('o', 'k') or 0 */
    const char *name;       /* long name without "--" */
    const char *arg;        /* the value's name in help: "FILE", "N" (choices show theirs) */
    size_t off, size;       /* the value's place in the argument struct (CLI_AT) */
    size_t count;           /* CLI_LIST: offset of its int count */
    unsigned flags;
    double min, max;        /* numbers: the range */
    const void *ref;        /* CLI_CHOICE: cli_choice[] ending {NULL}; CLI_GROUP: cli_opt[];
                               CLI_CALL: cli_call_fn * */
    int excl;               /* > 0: at most one option of this number (CLI_REQ: exactly one) */
    const char *help;       /* one line or two for --help; a group's heading */
    const char *doc;        /* more for the man page (NULL: help alone) */
    const char *def;        /* the default as help shows it, when not the value's own */
    const char *unset;      /* CLI_STR: what identity and sidecar record when not given */
    const char *meta;       /* sidecar key, when not the name with '_' for '-' */
    const char *was;        /* the option's name before a rename: still parsed as this option
                               for one release, with a warning; a checkpoint's identity and
                               the sidecar key keep it, so old checkpoints resume and old and
                               new sidecars read alike; --help shows only the new name */
    const char *needs;      /* "NAME": applies only when --NAME is given; "NAME=V": only when
                               --NAME's value (given or default) is V; given otherwise, it is
                               refused (never ignored); ignored where --NAME is not declared */
} cli_opt;

#define CLI_AT(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)

/* A list value (CLI_INTS, CLI_WORDS). */
#define CLI_MAX_INTS 64
typedef struct {
    int n;
    int v[CLI_MAX_INTS];
} cli_ints;

/* The configuration keys given as flags, in order (lnk_config_set them in
 * turn after --config: cli_make_config). */
#define CLI_MAX_CONFIG_FLAGS 64
typedef struct {
    int n;
    const char *key[CLI_MAX_CONFIG_FLAGS], *val[CLI_MAX_CONFIG_FLAGS];
} cli_config_flags;

typedef struct {
    const char *name;     /* in messages and help: "lnkit eigs", "hessian_spectrum" */
    const char *summary;  /* one line: lnkit --help's list, the man page's NAME */
    const char *usage;    /* synopsis after the name; lines separated by '\n' */
    const char *about;    /* --help's description */
    const cli_opt *opts;
    size_t size;          /* sizeof the argument struct */
    const char *example;  /* the arguments of a short complete run (tests, docs) */
    int rest;             /* 1: the words after "--" are the program's (cli_parse returns
                             their index) */
    void (*defaults)(void *args); /* fills the defaults (after zeroing; NULL: zeros) */
} cli_cmd;

/* Parse argv[1 .. argc) into args, first zeroed and given the defaults
 * (cmd->defaults).  Sets the
 * message prefix (cli_die) to cmd->name.  -h/--help: prints the help on
 * standard output and exits 0.  Returns the index of the first word after
 * "--" for cmd->rest, else argc. */
int cli_parse(const cli_cmd *cmd, void *args, int argc, char **argv);
/* 1 if the last cli_parse saw option name (long name), else 0. */
int cli_given(const char *name);
/* 1 if the command of the last cli_parse declares option name (long name;
 * groups included), else 0: a shared message names only options the
 * running program takes. */
int cli_declared(const char *name);
/* The option of the parsed table whose identity item is named item ("-k",
 * "--tol"), and in *given whether it was given; NULL for other items (files,
 * lists, the configuration). */
const cli_opt *cli_opt_of_id(const char *item, int *given);
/* The option's spelling in messages: "--tol", "-o". */
const char *cli_opt_flag(const cli_opt *o, char *buf, size_t n);
/* The option's name in what it records (a checkpoint's identity, "--tol";
 * the sidecar key, "tol"): its old name when renamed (.was), so a
 * checkpoint made before the rename resumes and sidecars keep their keys. */
const char *cli_opt_id_name(const cli_opt *o, char *buf, size_t n);
const char *cli_opt_meta_key(const cli_opt *o, char *buf, size_t n);

/* --help of cmd with the defaults of args, to f. */
void cli_help(const cli_cmd *cmd, const void *args, FILE *f);
/* The options of table alone (group headings, no General), for help. */
void cli_help_opts(const cli_opt *table, const void *args, FILE *f);
/* The OPTIONS section of cmd's man page (roff), with the defaults of args. */
void cli_doc_roff(const cli_cmd *cmd, const void *args, FILE *f);
/* The SYNOPSIS section of cmd's man page (roff): its name and usage, the
 * usage lines as --help shows them. */
void cli_doc_synopsis(const cli_cmd *cmd, FILE *f);

/* Call fn for every option of table (groups flattened, in order), with the
 * base address of its values; stops and returns what fn returns when not 0. */
typedef int cli_each_fn(const cli_opt *o, void *base, void *ctx);
int cli_opts_each(const cli_opt *table, void *args, int groups, cli_each_fn *fn, void *ctx);

/* Add the CLI_ID options of table (with groups: theirs too) to id, in table
 * order: "--tol" = "1e-06" (numbers: every digit); a CLI_ID_FILE option: its
 * file's SHA-256; a list: its count, then each.  A CLI_ID_SET option only
 * when its value is not the default.  Status of lnk_ckpt_id_add. */
int cli_opts_id(const cli_opt *table, const void *args, int groups, lnk_ckpt_id *id);
/* Set the CLI_META options of table into obj: integers, reals, choices and
 * strings by their text, flags as booleans, lists as arrays. */
int cli_opts_meta(const cli_opt *table, const void *args, int groups, json_t *obj);
/* The same for every option of table but the outputs (CLI_WRITES): a
 * benchmark records all its settings. */
int cli_opts_meta_all(const cli_opt *table, const void *args, int groups, json_t *obj);

/* The value of option o (at base) as text: "5", "1e-06", "top", the string
 * or o->unset; buf for numbers. */
const char *cli_opt_text(const cli_opt *o, const void *base, char *buf, size_t n);

#endif
