/* Helpers shared by the test programs (cmocka). */
#ifndef LNK_TESTUTIL_H
#define LNK_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include "lnkit/lnkit.h"

/* Make a finalized config from "key=value" strings (NULL-terminated), failing the test on error. */
lnk_config tu_config(const char *kv, ...);
/* Fill x[0..n) with N(0,1) values from a fixed stream of seed. */
void tu_randn(double *x, size_t n, uint64_t seed);
double tu_dot(const double *a, const double *b, size_t n);
double tu_norm(const double *a, size_t n);
/* max_i |a_i - b_i| / max(max_i |b_i|, floor) */
double tu_relerr(const double *a, const double *b, size_t n, double floor);
/* Rows r0..r1-1 of a synthetic batch for m's task (src, labels and/or tgt):
 * row r is T - (3 r) mod (T - 2) tokens long (S for the source), padded after;
 * the same rows whatever r0 and r1 cut them into (b->owns = 1). */
void tu_rows(const lnk_model *m, lnk_batch *b, int r0, int r1, int S, int T);
/* A temporary directory for the test program (made once, removed at exit). */
const char *tu_tmpdir(void);
/* Path inside tu_tmpdir() (static buffer ring of 8). */
const char *tu_path(const char *name);
/* Write bytes to a file. */
void tu_write_file(const char *path, const void *data, size_t n);
/* Read a whole file (malloc'd, NUL-terminated); *n gets its length. */
char *tu_read_file(const char *path, size_t *n);
/* Run a shell command, capture stdout+stderr into *out (malloc'd); return exit status. */
int tu_run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The lnkit binary (env LNK_BIN, default bin/lnkit). */
const char *tu_lnkit(void);
/* The build directory of the lnkit under test (build/, not build/testing/)
 * into build; skips the test when lnkit is not in one. */
void tu_build_dir(char *build, size_t n);
/* The number of newlines in s. */
int tu_n_lines(const char *s);
/* A test that is a shell script: bash tests/NAME LNKIT, its output printed.
 * The script ends with "tests: N passed, N failed, N skipped"; the test fails
 * unless it exits 0 with that line, no test failed and one passed at least
 * (a script cut short has no such line).  Fails, naming tests/NAME, where
 * that is not a file: a missing script is a broken test (test programs run
 * from the repository's top directory). */
void tu_run_script(const char *name);
/* Load a JSON file, failing the test with the parser's message on error. */
json_t *tu_load_json(const char *path);
/* The model variants every derivative test runs on (issue 32), made in one
 * place: first each part against the defaults (the defaults, each placement,
 * mix_ratio 0 and 1, a DeepNorm alpha, each activation, each position, bias
 * false, input_scale), then a pairwise-covering set of norm_pos x norm x
 * qk_norm x activation x pos x bias x task x tie_output x init x
 * label_smoothing (greedy, deterministic; mix gets mix_ratio 0.5 so that a
 * stack of 2 layers has one of each kind, learned positions max_len 9).
 * Returns the count (<= max); *n_single gets the count of the first part. */
#define TU_VARIANT_KEYS 14
typedef struct {
    char label[320];
    char kv[TU_VARIANT_KEYS][40];  /* "key=value" */
    int n, mix_set;
} tu_variant;
int tu_variants(tu_variant *out, int max, int *n_single);
/* Pairs of option values that no variant of v[0..n) has (0: pairwise-covering). */
int tu_variants_pairs_covered(const tu_variant *v, int n);
/* The finalized configuration of a variant, after the "key=value" strings of
 * extra (NULL-terminated; sizes: d, h, L, ...), failing the test on error. */
lnk_config tu_variant_config(const tu_variant *v, const char *const *extra);
#endif
