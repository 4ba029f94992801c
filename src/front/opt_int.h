/* Inside the option layer (opt.c, opt_doc.c, opt_rec.c): a table flattened. */
#ifndef LNK_FRONT_OPT_INT_H
#define LNK_FRONT_OPT_INT_H

#include "front/opt.h"

#define CLI_MAX_OPTS 256

/* An option of a flattened table, with the base address of its values; key
 * >= 0: configuration key number key; heading: a group's heading. */
typedef struct {
    const cli_opt *o;
    char *base;
    int key;
    int heading;
} cli_flat;

/* The options of t (groups expanded, their headings kept) into f. */
int cli_flatten(const cli_opt *t, void *base, cli_flat *f, int cap);
/* The '_' spelling of configuration key i, when it differs from its name. */
const char *cli_config_alias(int i);
/* The default of a field of the last cli_parse's arguments, or NULL. */
const void *cli_default_of(const void *field);

/* LNK_TEST_OPTIONS (for tests/test_cli_programs.c): 0 unset or empty, 1
 * "table", 2 "values"; any other value is refused (cli_die). */
int cli_test_options(void);
/* "table": each option of f, one a line (name, type, value, choices, old
 * name, help, min); "values", once the values are parsed: each option's
 * name, identity name, sidecar key and value.  Both exit 0. */
_Noreturn void cli_dump_table(const cli_flat *f, int n);
_Noreturn void cli_dump_values(const cli_flat *f, int n);

#endif
