/* Every path a command writes, renames or deletes, against every other one
 * and against its inputs (issue 30, item 3: `eigs -o ck.basis --checkpoint
 * ck` deleted its own output).  Generated from a table of the commands'
 * path slots: an option, and what the command derives from its value (the
 * option's own file, a sidecar NAME.meta.json, a config or vocabulary beside
 * it, a checkpoint's rows file, lock file or temporaries).  For every pair
 * of slots of a command, at least one of them written or deleted, the two
 * option values are chosen so that the two slots lead to one file, clash.*:
 * the run must be refused with exit 2 and one line naming the clash, before
 * any work: the folder's files unchanged (an existing clash file byte for
 * byte, a missing one still missing, nothing new).  Pairs of written slots
 * run twice: with the file absent and with it planted.  The table is checked
 * against every command's --help: an option that takes a file and has no
 * slot fails the test. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a slot's file is, given its option's value V. */
enum { X_ID, X_META, X_JSON, X_VOCAB, X_SRCV, X_TGTV, X_ROWS, X_LOCK, X_TEMP };
static const char *const SUFFIX[] = {"", ".meta.json", ".json", ".vocab", ".src.vocab",
                                     ".tgt.vocab", ".basis", ".lock", ".tmp.abcdef"};
/* The value of the option for which the slot's file is T = clash + suffix
 * (the inverse of the derivations: lnk_meta_path, cli_sibling_path,
 * lnk_ckpt_file). */
static void preimage(int x, const char *t, char *v, size_t n)
{
    size_t lt = strlen(t), ls = strlen(SUFFIX[x]);
    const char *ext = x == X_META ? ".csv" : x == X_JSON || x == X_VOCAB || x == X_SRCV ||
                      x == X_TGTV ? ".safetensors" : "";
    snprintf(v, n, "%.*s%s", (int)(lt - ls), t, ext);
}

typedef struct {
    const char *opt; /* the option (several slots may share it) */
    int x;           /* X_* */
    int in;          /* 1: an input */
    const char *src; /* a file of the base folder the option's file must hold, or NULL */
} slot;

typedef struct {
    const char *name;
    const char *fixed;        /* arguments that name no file */
    const char *opts[12][2];  /* option, base value (in the base folder, or a new name) */
    slot s[16];
} command;

#define M "--config", "w.json"}, {"--weights", "w.safetensors"}, {"--batch", "b.safetensors"
#define MS {"--config", X_ID, 1, "w.json"}, {"--weights", X_ID, 1, "w.safetensors"}, \
           {"--batch", X_ID, 1, "b.safetensors"}
#define CK(o) {o, X_ID, 0, NULL}, {o, X_ROWS, 0, NULL}, {o, X_LOCK, 0, NULL}, {o, X_TEMP, 0, NULL}
#define CSV(o) {o, X_ID, 0, NULL}, {o, X_META, 0, NULL}
static const command CMDS[] = {
    {"init", "init --d 4 --h 2 --L 1 --V 6 --d-ff 4",
     {{"--config", "w.json"}, {"-o", "o.safetensors"}},
     {{"--config", X_ID, 1, "w.json"}, {"-o", X_ID, 0, NULL}, {"-o", X_JSON, 0, NULL}}},
    {"init --config-out", "init --d 4 --h 2 --L 1 --V 6 --d-ff 4",
     {{"--config", "w.json"}, {"-o", "o.safetensors"}, {"--config-out", "oc.json"}},
     {{"--config", X_ID, 1, "w.json"}, {"-o", X_ID, 0, NULL}, {"--config-out", X_ID, 0, NULL}}},
    {"batch --synthetic", "batch --synthetic --rows 2 --len 5",
     {{"--config", "w.json"}, {"-o", "o.safetensors"}},
     {{"--config", X_ID, 1, "w.json"}, {"-o", X_ID, 0, NULL}}},
    {"batch --text", "batch", {{"--text", "corpus.txt"}, {"-o", "o.safetensors"}},
     {{"--text", X_ID, 1, "corpus.txt"}, {"-o", X_ID, 0, NULL}, {"-o", X_VOCAB, 0, NULL}}},
    {"batch --vocab-out", "batch",
     {{"--text", "corpus.txt"}, {"-o", "o.safetensors"}, {"--vocab-out", "ov.vocab"}},
     {{"--text", X_ID, 1, "corpus.txt"}, {"-o", X_ID, 0, NULL}, {"--vocab-out", X_ID, 0, NULL}}},
    {"batch --vocab-in", "batch",
     {{"--text", "corpus.txt"}, {"-o", "o.safetensors"}, {"--vocab-in", "corpus.vocab"}},
     {{"--text", X_ID, 1, "corpus.txt"}, {"-o", X_ID, 0, NULL},
      {"--vocab-in", X_ID, 1, "corpus.vocab"}}},
    {"batch --src", "batch", {{"--src", "s.txt"}, {"--tgt", "t.txt"}, {"-o", "o.safetensors"}},
     {{"--src", X_ID, 1, "s.txt"}, {"--tgt", X_ID, 1, "t.txt"}, {"-o", X_ID, 0, NULL},
      {"-o", X_SRCV, 0, NULL}, {"-o", X_TGTV, 0, NULL}}},
    {"batch --vocab-src", "batch",
     {{"--src", "s.txt"}, {"--tgt", "t.txt"}, {"-o", "o.safetensors"},
      {"--vocab-src", "p.src.vocab"}, {"--vocab-tgt", "p.tgt.vocab"}},
     {{"--src", X_ID, 1, "s.txt"}, {"--tgt", X_ID, 1, "t.txt"}, {"-o", X_ID, 0, NULL},
      {"--vocab-src", X_ID, 1, "p.src.vocab"}, {"--vocab-tgt", X_ID, 1, "p.tgt.vocab"}}},
    {"eval", "eval", {{M}, {"-o", "ev.csv"}, {"--grad-out", "g.safetensors"}},
     {MS, CSV("-o"), {"--grad-out", X_ID, 0, NULL}}},
    {"hvp", "hvp", {{M}, {"--vector", "v.safetensors"}, {"-o", "hv.safetensors"}},
     {MS, {"--vector", X_ID, 1, "v.safetensors"}, {"-o", X_ID, 0, NULL}}},
    {"vector", "vector --gradient", {{M}, {"-o", "o.safetensors"}}, {MS, {"-o", X_ID, 0, NULL}}},
    {"eigs", "eigs -k 1 --max-steps 8",
     {{M}, {"-o", "e.csv"}, {"--vectors", "ev.safetensors"}, {"--mass", "em.csv"},
      {"--checkpoint", "ck"}},
     {MS, CSV("-o"), {"--vectors", X_ID, 0, NULL}, CSV("--mass"), CK("--checkpoint")}},
    {"trace", "trace --probes 4", {{M}, {"-o", "t.csv"}, {"--checkpoint", "ck"}},
     {MS, CSV("-o"), CK("--checkpoint")}},
    {"density", "density --runs 1 --steps 4 --sigma 0.1",
     {{M}, {"-o", "d.csv"}, {"--nodes", "n.csv"}, {"--checkpoint", "ck"}},
     {MS, CSV("-o"), CSV("--nodes"), CK("--checkpoint")}},
    {"blocks", "blocks --probes 2 --max-steps 4 --runs 1 --steps 4 --block out.w",
     {{M}, {"-o", "bl.csv"}, {"--pairs", "p.csv"}, {"--density", "bd.csv"}},
     {MS, CSV("-o"), CSV("--pairs"), CSV("--density")}},
    {"select", "select", {{"--keys", "keys.csv"}, {"-o", "s.csv"}},
     {{"--keys", X_ID, 1, "keys.csv"}, CSV("-o")}},
    {"meta", "meta --start 2026-01-31T12:00:00Z --seconds 1",
     {{"-o", "r.csv"}, {"--input", "i.txt"}, {"--config", "w.json"}, {"--extra-file", "x.json"}},
     {{"-o", X_ID, 1, "r.csv"}, {"-o", X_META, 0, NULL}, {"--input", X_ID, 1, "i.txt"},
      {"--config", X_ID, 1, "w.json"}, {"--extra-file", X_ID, 1, "x.json"}}},
};
#define N_CMDS ((int)(sizeof CMDS / sizeof CMDS[0]))

static int n_slots(const command *c)
{
    int n = 0;
    while (n < 16 && c->s[n].opt)
        n++;
    return n;
}

static char base_dir[512], case_dir[512];

static void setup_base(void)
{
    const char *d = tu_path("base");
    char *out;
    int st = tu_run(&out, "mkdir -p '%s' && cd '%s' && L='%s' && "
                    "$L init --d 4 --h 2 --L 1 --V 6 --d-ff 4 -o w.safetensors && "
                    "$L batch --synthetic --config w.json --rows 2 --len 5 -o b.safetensors && "
                    "$L vector --config w.json --ones -o v.safetensors && "
                    "printf 'a b c\\nb c d\\n' > corpus.txt && "
                    "$L batch --text corpus.txt -o c.safetensors --vocab-out corpus.vocab && "
                    "printf 'x y\\ny z\\n' > s.txt && printf 'u v\\nv w\\n' > t.txt && "
                    "$L batch --src s.txt --tgt t.txt -o p.safetensors && "
                    "printf '1,0\\n0,1\\n-1,0\\n' > keys.csv && printf 'a,b\\n1,2\\n' > r.csv && "
                    "printf 'input\\n' > i.txt && printf '{\"k\": 1}' > x.json && "
                    "rm -f c.safetensors p.safetensors", d, d, tu_lnkit());
    if (st)
        fail_msg("set-up: %s", out);
    free(out);
    snprintf(base_dir, sizeof base_dir, "%s", d);
    snprintf(case_dir, sizeof case_dir, "%s", tu_path("case"));
}

/* A fresh case folder: a copy of the base folder. */
static const char *fresh_case(void)
{
    const char *d = case_dir;
    char *out;
    if (tu_run(&out, "rm -rf '%s' && cp -r '%s' '%s'", d, base_dir, d))
        fail_msg("copy: %s", out);
    free(out);
    return d;
}

static char *listing(const char *dir)
{
    char *out;
    tu_run(&out, "cd '%s' && for f in $(ls -A | sort); do printf '%%s ' \"$f\"; "
           "sha256sum < \"$f\" | cut -c1-16; done", dir);
    return out;
}

/* Run c with slots a and b leading to one file; planted: the file exists
 * (for an input, it is that input).  Returns 1 if the case applies. */
static int run_pair(const command *c, const slot *a, const slot *b, int planted, int *n_run)
{
    if (!strcmp(a->opt, b->opt))
        return 0; /* one option: its derived files never meet */
    const char *sa = SUFFIX[a->x], *sb = SUFFIX[b->x];
    size_t la = strlen(sa), lb = strlen(sb);
    const char *longer = la >= lb ? sa : sb, *shorter = la >= lb ? sb : sa;
    size_t ll = strlen(longer), ls = strlen(shorter);
    if (strcmp(longer + ll - ls, shorter))
        return 0; /* no file is both */
    char T[64], va[96], vb[96];
    snprintf(T, sizeof T, "clash%s", longer);
    preimage(a->x, T, va, sizeof va);
    preimage(b->x, T, vb, sizeof vb);
    const char *dir = fresh_case();
    /* the files the two options must name (the inputs' contents), then the clash file */
    const char *opt[2] = {a->opt, b->opt}, *val[2] = {va, vb};
    char *out, p[600];
    for (int k = 0; k < 2; k++)
        for (const slot *q = c->s; q < c->s + 16 && q->opt; q++)
            if (!strcmp(q->opt, opt[k]) && q->src) {
                if (tu_run(&out, "cp '%s/%s' '%s/%s'", dir, q->src, dir, val[k]))
                    fail_msg("cp: %s", out);
                free(out);
                break;
            }
    snprintf(p, sizeof p, "%s/%s", dir, T);
    if (planted && access(p, F_OK) != 0)
        tu_write_file(p, "precious bytes\n", 15);
    char args[2048] = "";
    size_t o = 0;
    for (int i = 0; i < 12 && c->opts[i][0]; i++) {
        const char *v = !strcmp(c->opts[i][0], a->opt) ? va : !strcmp(c->opts[i][0], b->opt) ? vb
                                                                                         : c->opts[i][1];
        o += (size_t)snprintf(args + o, sizeof args - o, " %s '%s'", c->opts[i][0], v);
    }
    char *before = listing(dir);
    int st = tu_run(&out, "cd '%s' && '%s' %s%s%s 2>&1", dir, tu_lnkit(), c->fixed, args,
                    strcmp(c->name, "meta") ? "" : " -- a command");
    char *after = listing(dir);
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    if (st != 2 || lines != 1 ||
        !(strstr(out, "are the same file") || strstr(out, "is also an input") ||
          strstr(out, "temporary file of --checkpoint")) ||
        !strstr(out, a->opt) || !strstr(out, b->opt) || strcmp(before, after))
        fail_msg("%s: %s %s (%s) and %s %s (%s) both %s, %s: exit %d:\n%s\nfiles before: %s\n"
                 "after: %s", c->name, a->opt, va, sa[0] ? sa : "itself", b->opt, vb,
                 sb[0] ? sb : "itself", T, planted ? "existing" : "absent", st, out, before,
                 after);
    free(out);
    free(before);
    free(after);
    (*n_run)++;
    return 1;
}

static void test_pairs(void **s)
{
    (void)s;
    setup_base();
    int total = 0;
    for (int c = 0; c < N_CMDS; c++) {
        const command *cmd = &CMDS[c];
        int n = n_slots(cmd), runs = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                const slot *a = &cmd->s[i], *b = &cmd->s[j];
                if (a->in && b->in)
                    continue; /* two inputs may be one file */
                if (a->in) { /* the written one first */
                    const slot *t = a;
                    a = b, b = t;
                }
                run_pair(cmd, a, b, 1, &runs);
                if (!b->in)
                    run_pair(cmd, a, b, 0, &runs);
            }
        printf("# %s: %d clashing pairs refused\n", cmd->name, runs);
        assert_true(runs > 0);
        total += runs;
    }
    printf("# %d cases over %d command forms\n", total, N_CMDS);
}

/* Every option that takes a file (per --help) has a slot. */
static void test_table_complete(void **s)
{
    (void)s;
    static const char *const helps[][2] = {
        {"init", "init"}, {"batch", "batch"}, {"batch --src", "batch --src x"}, {"eval", "eval"},
        {"hvp", "hvp"}, {"vector", "vector"}, {"eigs", "eigs"}, {"trace", "trace"},
        {"density", "density"}, {"blocks", "blocks"}, {"select", "select"}, {"meta", "meta"}};
    for (size_t h = 0; h < sizeof helps / sizeof helps[0]; h++) {
        char *out;
        /* the options whose value is a file: "--opt FILE", "-o, --output FILE", "--src FILE,",
         * "--extra-file F" */
        tu_run(&out, "'%s' %s --help | grep -oE -- '(-o, --output|--[a-z-]+) FILE\\b|--[a-z-]*file F\\b' | "
               "sed 's/-o, --output/-o/; s/ .*//' | sort -u | tr '\\n' ' '", tu_lnkit(),
               helps[h][1]);
        char *save, *opt = strtok_r(out, " ", &save);
        int n = 0;
        for (; opt; opt = strtok_r(NULL, " ", &save), n++) {
            int found = 0;
            size_t w = strcspn(helps[h][0], " ");
            for (int c = 0; c < N_CMDS && !found; c++)
                if (!strncmp(CMDS[c].name, helps[h][0], w) && strchr(" ", CMDS[c].name[w]))
                    for (int k = 0; k < n_slots(&CMDS[c]) && !found; k++)
                        found = !strcmp(CMDS[c].s[k].opt, opt);
            if (!found)
                fail_msg("%s --help: %s takes a file but has no slot in this test's table",
                         helps[h][1], opt);
        }
        assert_true(n > 0);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_table_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
