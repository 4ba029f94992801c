/* Robustness: a command's outputs appear together or not at all, run through
 * the lnkit program on a tiny model (helpers: tests/testutil_robust.c):
 * injected disk-full (LNK_OUTPUT_FAULT=write:ENOSPC:B) at every byte
 * boundary of every file, a real full tmpfs (as root), failed renames rolled
 * back, SIGTERM at each phase (temporary file created, writing, synced,
 * renaming) and at random times. */
#include "testutil.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "testutil_robust.h"

/* ----------------------------------------------- 2. all or nothing: disk full */

typedef struct {
    const char *name;
    const char *cmd;   /* run in the folder; MODEL = the model flags */
    const char *files; /* what a success leaves (sorted, space-separated) */
} group_case;

static const group_case groups[] = {
    {"eigs", "eigs MODEL -k 2 --which both --quiet --vectors v.safetensors -o e.csv",
     "e.csv e.meta.json v.safetensors "},
    {"trace", "trace MODEL --probes 4 --quiet -o t.csv", "t.csv t.meta.json "},
    {"density", "density MODEL --runs 2 --steps 6 --sigma 0.5 --quiet --nodes n.csv -o d.csv",
     "d.csv d.meta.json n.csv n.meta.json "},
    {"init", "init --d 4 --h 2 --L 1 --V 6 -o w.safetensors", "w.json w.safetensors "},
    {"batch --text", "batch --text @/corpus.en -o b.safetensors", "b.safetensors b.vocab "},
    {"batch --src --tgt", "batch --src @/corpus.de --tgt @/corpus.en -o m.safetensors",
     "m.safetensors m.src.vocab m.tgt.vocab "},
};

/* Bytes a successful run writes (the sum of its files' sizes). */
static long total_bytes(const char *dir)
{
    char *out;
    tu_run(&out, "cat '%s'/* | wc -c", dir);
    long n = atol(out);
    free(out);
    return n;
}

/* Old versions of the files, to see that a failure leaves them alone. */
static void plant_old(const char *dir, const char *files)
{
    char names[512], *save, *tok;
    snprintf(names, sizeof names, "%s", files);
    for (tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char p[900];
        snprintf(p, sizeof p, "%s/%s", dir, tok);
        tu_write_file(p, "old\n", 4);
    }
}

static int all_old(const char *dir, const char *files)
{
    char names[512], *save, *tok;
    snprintf(names, sizeof names, "%s", files);
    for (tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char p[900];
        snprintf(p, sizeof p, "%s/%s", dir, tok);
        char *c = tu_read_file(p, NULL);
        int ok = c && !strcmp(c, "old\n");
        free(c);
        if (!ok)
            return 0;
    }
    return 1;
}

static void test_disk_full_injected(void **s)
{
    (void)s;
    tr_setup_model();
    tr_write_corpus();
    int runs = 0;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        char cmd[4096], *out;
        tr_expand(cmd, sizeof cmd, groups[g].cmd);
        const char *d = tr_fresh("full");
        int st = tu_run(&out, "cd '%s' && '%s' %s 2>&1 >/dev/null", d, tu_lnkit(), cmd);
        if (st)
            fail_msg("%s: %s", groups[g].name, out);
        free(out);
        tr_assert_entries(d, groups[g].files, groups[g].name);
        long total = total_bytes(d);
        /* the disk fills after B bytes, for B across every file of the group
         * (step so that each file is hit at its start, inside and at its end);
         * a .meta.json holds times whose length varies by a few bytes */
        int meta = strstr(groups[g].files, "meta.json") != NULL;
        long slack = meta ? 64 : 0, step = total / 23 + 1;
        for (long b = 0; b <= total + slack; b += (b < 3 || b > total - slack - 3) ? 1 : step) {
            if (b >= total - slack && b < total + slack)
                continue;
            for (int old = 0; old < 2; old++) {
                d = tr_fresh("full");
                if (old)
                    plant_old(d, groups[g].files);
                st = tu_run(&out, "cd '%s' && LNK_OUTPUT_FAULT=write:ENOSPC:%ld '%s' %s 2>&1 >/dev/null",
                            d, b, tu_lnkit(), cmd);
                runs++;
                if (b < total - slack) {
                    if (st != 2)
                        fail_msg("%s, disk full after %ld of %ld bytes: exit %d (%s)",
                                 groups[g].name, b, total, st, out);
                    tr_assert_one_line(out, "No space left on device", groups[g].name);
                    if (old) {
                        tr_assert_entries(d, groups[g].files, groups[g].name);
                        if (!all_old(d, groups[g].files))
                            fail_msg("%s, disk full after %ld bytes: an old file was replaced",
                                     groups[g].name, b);
                    } else
                        tr_assert_entries(d, "", groups[g].name);
                } else if (st != 0)
                    fail_msg("%s with room for %ld bytes (%ld needed): exit %d (%s)", groups[g].name,
                             b, total, st, out);
                free(out);
            }
        }
    }
    printf("      %d runs with the disk full at every phase: nothing partial left, old files kept\n",
           runs);
}

static void test_disk_full_tmpfs(void **s)
{
    (void)s;
    tr_setup_model();
    tr_write_corpus();
    const char *mnt = tr_fresh("tmpfs");
    /* two pages: room for two small files, not three */
    if (geteuid() != 0 || mount("lnktest", mnt, "tmpfs", 0, "size=8k") != 0) {
        printf("      (cannot mount a tmpfs: not root) skipped\n");
        skip();
    }
    int bad = 0;
    char msg[4096] = "";
    const int three[] = {0, 2, 5}; /* the groups of three files */
    for (int k = 0; k < 3 && !bad; k++) {
        const group_case *g = &groups[three[k]];
        char cmd[4096], *out;
        tr_expand(cmd, sizeof cmd, g->cmd);
        /* the corpus paths are relative to the test's folder */
        tu_run(&out, "cd '%s' && mkdir -p sub && cd sub && '%s' %s 2>&1 >/dev/null; "
               "echo \"rc=$?\"; ls -A", mnt, tu_lnkit(), cmd);
        char want[64];
        snprintf(want, sizeof want, "rc=2\n");
        if (!strstr(out, "No space left on device") || strncmp(strstr(out, "rc="), want, 5) ||
            strcmp(strstr(out, "rc=") + 5, "")) {
            bad = 1;
            snprintf(msg, sizeof msg, "%s on a full tmpfs: %s", g->name, out);
        }
        free(out);
        tu_run(&out, "rm -rf '%s'/sub", mnt);
        free(out);
    }
    umount(mnt);
    if (bad)
        fail_msg("%s", msg);
}

/* A rename of the group fails (after others succeeded): they are undone, the
 * old files come back. */
static void test_rename_rollback(void **s)
{
    (void)s;
    tr_setup_model();
    char cmd[4096], *out;
    tr_expand(cmd, sizeof cmd, groups[0].cmd);
    for (int n = 1; n <= 3; n++)
        for (int old = 0; old < 2; old++) {
            const char *d = tr_fresh("rollback");
            if (old)
                plant_old(d, groups[0].files);
            int st = tu_run(&out, "cd '%s' && LNK_OUTPUT_FAULT=rename:EIO:%d '%s' %s 2>&1 >/dev/null",
                            d, n, tu_lnkit(), cmd);
            assert_int_equal(st, 2);
            tr_assert_one_line(out, "none of this command's 3 output files was written", "rename fails");
            free(out);
            if (old) {
                tr_assert_entries(d, groups[0].files, "rename fails");
                assert_true(all_old(d, groups[0].files));
            } else
                tr_assert_entries(d, "", "rename fails");
        }
}

/* ----------------------------------------------------- 2, 3. fatal signals */

/* The files of a run in dir are complete: each as large as in the reference
 * run ref (a .meta.json, whose times vary, is valid JSON instead). */
static int complete(const char *dir, const char *ref, const char *files)
{
    char names[512], *save, *tok;
    snprintf(names, sizeof names, "%s", files);
    for (tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char p[900], q[900];
        snprintf(p, sizeof p, "%s/%s", dir, tok);
        snprintf(q, sizeof q, "%s/%s", ref, tok);
        struct stat a, b;
        if (strstr(tok, ".meta.json")) {
            json_t *j = json_load_file(p, 0, NULL);
            if (!j)
                return 0;
            json_decref(j);
        } else if (stat(p, &a) != 0 || stat(q, &b) != 0 || a.st_size != b.st_size)
            return 0;
    }
    return 1;
}

static int run_signal(const char *dir, const char *fault, const char *cmd, char **out)
{
    return tu_run(out, "cd '%s' && LNK_OUTPUT_FAULT=%s '%s' %s >/dev/null 2>&1; echo $?", dir, fault,
                  tu_lnkit(), cmd);
}

static void test_sigterm_each_phase(void **s)
{
    (void)s;
    tr_setup_model();
    tr_write_corpus();
    int runs = 0;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        char cmd[4096], *out;
        tr_expand(cmd, sizeof cmd, groups[g].cmd);
        int nfiles = 0;
        for (const char *p = groups[g].files; *p; p++)
            nfiles += *p == ' ';
        const char *ref = tr_fresh("sigref");
        tu_run(&out, "cd '%s' && '%s' %s >/dev/null 2>&1", ref, tu_lnkit(), cmd);
        free(out);
        long total = total_bytes(ref);
        const char *d;
        char faults[32][48];
        int nf = 0;
        for (int i = 1; i <= nfiles; i++)
            snprintf(faults[nf++], 48, "create:term:%d", i);
        for (int i = 0; i < 5; i++)
            snprintf(faults[nf++], 48, "write:term:%ld", total * i / 5);
        snprintf(faults[nf++], 48, "synced:term");
        for (int i = 1; i <= nfiles; i++)
            snprintf(faults[nf++], 48, "rename:term:%d", i);
        for (int f = 0; f < nf; f++)
            for (int old = 0; old < 2; old++) {
                d = tr_fresh("sig");
                if (old)
                    plant_old(d, groups[g].files);
                run_signal(d, faults[f], cmd, &out);
                runs++;
                int renaming = !strncmp(faults[f], "rename", 6);
                /* killed by SIGTERM (143); during the renames the signal waits for them */
                if (strcmp(out, "143\n"))
                    fail_msg("%s, %s: exit %s", groups[g].name, faults[f], out);
                free(out);
                if (renaming) {
                    tr_assert_entries(d, groups[g].files, faults[f]);
                    if (!complete(d, ref, groups[g].files))
                        fail_msg("%s, %s: the files are not complete", groups[g].name, faults[f]);
                } else if (old) {
                    tr_assert_entries(d, groups[g].files, faults[f]);
                    assert_true(all_old(d, groups[g].files));
                } else
                    tr_assert_entries(d, "", faults[f]);
            }
    }
    printf("      %d runs with SIGTERM at every phase: all outputs or none, no temporary file\n",
           runs);
}

/* The race of the issue: SIGTERM just as a temporary file is created, many
 * tries; and SIGTERM from outside at random times. */
static void test_sigterm_race(void **s)
{
    (void)s;
    tr_setup_model();
    char cmd[4096], *out;
    tr_expand(cmd, sizeof cmd, groups[0].cmd);
    const char *d = tr_fresh("race");
    for (int i = 0; i < 60; i++) {
        char f[32];
        snprintf(f, sizeof f, "create:term:%d", 1 + i % 3);
        run_signal(d, f, cmd, &out);
        assert_string_equal(out, "143\n");
        free(out);
        tr_assert_entries(d, "", "SIGTERM as a temporary file is created");
    }
    /* from outside, at times spread over the run (about 30-60 ms) */
    int killed = 0;
    for (int i = 0; i < 40; i++) {
        d = tr_fresh("race");
        tu_run(&out, "cd '%s' && ('%s' %s >/dev/null 2>&1 & p=$!; sleep 0.0%02d; kill -TERM $p "
               "2>/dev/null; wait $p; echo $?)", d, tu_lnkit(), cmd, (i * 7) % 60);
        /* (the shell may say "Terminated" when the signal comes before the exec) */
        int k = strlen(out) >= 4 && !strcmp(out + strlen(out) - 4, "143\n");
        killed += k;
        if (!k) {
            char *e = tr_entries(d);
            if (strcmp(out, "0\n") || strcmp(e, groups[0].files))
                fail_msg("SIGTERM at %d ms: exit '%s', left '%s'", (i * 7) % 60, out, e);
            free(e);
        }
        else {
            char *e = tr_entries(d);
            if (strcmp(e, "") && strcmp(e, groups[0].files))
                fail_msg("SIGTERM at %d ms left '%s'", (i * 7) % 60, e);
            free(e);
        }
        free(out);
    }
    printf("      60 signals inside the creation's critical section, %d of 40 from outside "
           "mid-run: no temporary file left\n", killed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disk_full_injected),
        cmocka_unit_test(test_disk_full_tmpfs),
        cmocka_unit_test(test_rename_rollback),
        cmocka_unit_test(test_sigterm_each_phase),
        cmocka_unit_test(test_sigterm_race),
    };
    return cmocka_run_group_tests_name("robust_atomic", tests, NULL, NULL);
}
