/* Helpers of the robustness tests (testutil_robust.c). */
#ifndef LNK_TESTUTIL_ROBUST_H
#define LNK_TESTUTIL_ROBUST_H

#include <stddef.h>

/* The tiny model (184 parameters), made once by tr_setup_model: its
 * weights, batch and config files, and the three flags naming them. */
extern const char *tr_W, *tr_B, *tr_CFG;
extern char tr_model_args[2048];
void tr_setup_model(void);

/* A fresh empty folder in the test's temporary folder. */
const char *tr_fresh(const char *name);
/* The folder's entries, sorted, space-separated (malloc'd). */
char *tr_entries(const char *dir);
/* Does the folder hold a temporary file (".tmp.")? */
int tr_has_temp(const char *dir);
/* Fail unless the folder's entries are want. */
void tr_assert_entries(const char *dir, const char *want, const char *what);
/* stderr must be exactly one line starting "lnkit CMD: " (or "lnkit: " before
 * a command is known) and containing word. */
void tr_assert_one_line(const char *err, const char *word, const char *what);
/* cmd with MODEL replaced by the model flags, @CFG, @W, @B by the model's
 * files (quoted), LNKIT by the program and @/ by the test's folder. */
void tr_expand(char *buf, size_t n, const char *cmd);
/* The shell command (printf format; tr_expand's tokens) run in dir must
 * exit 2 with one line on stderr containing word. */
void tr_expect_error(const char *dir, const char *word, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* corpus.en and corpus.de (three parallel lines) in the test's folder. */
void tr_write_corpus(void);

#endif
