/* Helpers of the robustness tests (test_robust, test_robust_atomic): the
 * tiny model, fresh folders and their listings, one-line messages, and
 * commands with the model's files in them run to an expected error. */
#include "testutil.h"
#include "testutil_robust.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *tr_W, *tr_B, *tr_CFG; /* the tiny model: 184 parameters */
char tr_model_args[2048];

void tr_setup_model(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *d = tu_path("m");
    mkdir(d, 0755);
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' init --d 4 --h 2 --L 1 --V 6 --d-ff 4 -o w.safetensors && "
                    "'%s' batch --synthetic --V 6 --rows 2 --len 5 -o b.safetensors", d,
                    tu_lnkit(), tu_lnkit());
    if (st)
        fail_msg("setup: %s", out);
    free(out);
    static char w[600], b[600], c[600];
    snprintf(w, sizeof w, "%s/w.safetensors", d);
    snprintf(b, sizeof b, "%s/b.safetensors", d);
    snprintf(c, sizeof c, "%s/w.json", d);
    tr_W = w, tr_B = b, tr_CFG = c;
    snprintf(tr_model_args, sizeof tr_model_args, "--config '%s' --weights '%s' --batch '%s'", tr_CFG, tr_W, tr_B);
}

/* A fresh empty folder in the test's temporary folder. */
const char *tr_fresh(const char *name)
{
    const char *d = tu_path(name);
    char *out;
    tu_run(&out, "rm -rf '%s' && mkdir -p '%s'", d, d);
    free(out);
    return d;
}

/* The folder's entries, sorted, space-separated (malloc'd). */
char *tr_entries(const char *dir)
{
    char *out;
    tu_run(&out, "ls -A '%s' | sort | tr '\\n' ' '", dir);
    return out;
}

int tr_has_temp(const char *dir)
{
    char *e = tr_entries(dir);
    int t = strstr(e, ".tmp.") != NULL;
    free(e);
    return t;
}

void tr_assert_entries(const char *dir, const char *want, const char *what)
{
    char *e = tr_entries(dir);
    if (strcmp(e, want))
        fail_msg("%s: folder holds '%s', expected '%s'", what, e, want);
    free(e);
}

/* stderr must be exactly one line starting "lnkit CMD: " (or "lnkit: " before
 * a command is known) and containing word. */
void tr_assert_one_line(const char *err, const char *word, const char *what)
{
    size_t n = strlen(err), cmd = strncmp(err, "lnkit ", 6) ? 0 : strspn(err + 6, "abcdefghijklmnopqrstuvwxyz");
    int prefix = !strncmp(err, "lnkit: ", 7) || (cmd && !strncmp(err + 6 + cmd, ": ", 2));
    if (!prefix || n == 0 || err[n - 1] != '\n' || strchr(err, '\n') != err + n - 1 ||
        (word && !strstr(err, word)))
        fail_msg("%s: expected one line 'lnkit CMD: ...%s...', got '%s'", what, word ? word : "", err);
    for (const char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\n')
            fail_msg("%s: control character 0x%02x in the message '%s'", what, *p, err);
}

/* cmd with MODEL replaced by the model flags, @CFG, @W, @B by the model's
 * files (quoted) and @/ by the test's folder. */
void tr_expand(char *buf, size_t n, const char *cmd)
{
    size_t w = 0;
    char q[700];
    for (const char *a = cmd; *a && w + 1 < n;) {
        const char *rep = NULL;
        static const char *const tok[3] = {"@CFG", "@W", "@B"};
        const char *file[3] = {tr_CFG, tr_W, tr_B};
        for (int k = 0; k < 3 && !rep; k++)
            if (!strncmp(a, tok[k], strlen(tok[k]))) {
                snprintf(q, sizeof q, "'%s'", file[k]);
                rep = q;
                a += strlen(tok[k]);
            }
        if (rep)
            ;
        else if (!strncmp(a, "LNKIT", 5)) {
            snprintf(q, sizeof q, "'%s'", tu_lnkit());
            rep = q;
            a += 5;
        } else if (!strncmp(a, "MODEL", 5))
            rep = tr_model_args, a += 5;
        else if (*a == '@')
            rep = tu_tmpdir(), a++;
        if (rep)
            w += (size_t)snprintf(buf + w, n - w, "%s", rep);
        else
            buf[w++] = *a++;
    }
    buf[w < n ? w : n - 1] = '\0';
}

/* The shell command (printf format; expand's tokens: LNKIT, MODEL, @CFG, @W,
 * @B, @/) run in dir must exit 2 with one line on stderr containing word. */
void tr_expect_error(const char *dir, const char *word, const char *fmt, ...)
{
    char *raw, cmd[8192], *err;
    va_list ap;
    va_start(ap, fmt);
    assert_true(vasprintf(&raw, fmt, ap) >= 0);
    va_end(ap);
    tr_expand(cmd, sizeof cmd, raw);
    int st = tu_run(&err, "cd '%s' && %s 2>&1 >/dev/null", dir, cmd);
    if (st != 2)
        fail_msg("%s: exit %d, expected 2 (%s)", raw, st, err);
    tr_assert_one_line(err, word, raw);
    free(err);
    free(raw);
}

void tr_write_corpus(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s", tu_path("corpus.en"));
    const char *en = "a man rides a horse .\ntwo dogs play in the snow .\na woman reads a book .\n";
    tu_write_file(p, en, strlen(en));
    snprintf(p, sizeof p, "%s", tu_path("corpus.de"));
    const char *de = "ein mann reitet ein pferd .\nzwei hunde spielen im schnee .\n"
                     "eine frau liest ein buch .\n";
    tu_write_file(p, de, strlen(de));
}
