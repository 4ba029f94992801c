/* One writer of sidecars (docs/MODEL.md §9): `lnkit meta` and the Python
 * scripts over it (studies/summary/sidecar.py: the summaries, bench_meta.py)
 * write every provenance key that the C writer (lnk_meta_write, the commands
 * and the C studies) writes, with input checksums equal to sha256sum's; bad
 * input is one line and exit 2 and replaces nothing; the committed sidecars
 * under results/ carry the provenance. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char lnkit[PATH_MAX];


/* The keys the C writer puts in every sidecar: lnk_meta_write's own record,
 * with no extra keys. */
static json_t *c_record(void)
{
    lnk_prov *p = lnk_prov_alloc();
    const char *csv = tu_path("std.csv");
    tu_write_file(csv, "a\n1\n", 4);
    assert_int_equal(lnk_meta_write(csv, p, NULL, NULL, "2026-01-01T00:00:00Z", 0.25), LNK_OK);
    lnk_prov_free(p);
    return tu_load_json(tu_path("std.meta.json"));
}

/* Every key of std is in j, with the same JSON type (null may stand for an
 * object in config/seed, which only a run with a model configuration has);
 * versions has the same members. */
static void assert_has_record(json_t *j, json_t *std, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach(std, k, v) {
        json_t *w = json_object_get(j, k);
        if (!w)
            fail_msg("%s: provenance key '%s' missing", what, k);
        int nullable = !strcmp(k, "config") || !strcmp(k, "seed");
        if (json_typeof(w) != json_typeof(v) && !(nullable && (json_is_null(w) || json_is_null(v))) &&
            !(json_is_number(w) && json_is_number(v)))
            fail_msg("%s: key '%s' has another JSON type than the C writer's", what, k);
    }
    json_t *va = json_object_get(std, "versions"), *vb = json_object_get(j, "versions");
    json_object_foreach(va, k, v) if (!json_is_string(json_object_get(vb, k)))
        fail_msg("%s: versions.%s missing", what, k);
    /* An MPI build's writer adds the MPI library's version (docs/MODEL.md §9). */
    json_object_foreach(vb, k, v) if (!json_object_get(va, k) && strcmp(k, "mpi"))
        fail_msg("%s: versions.%s is not one of the C writer's", what, k);
}

/* Each input's size and SHA-256 against stat and sha256sum (paths relative to dir). */
static void assert_inputs_checksummed(json_t *j, const char *dir, size_t min_n)
{
    json_t *ins = json_object_get(j, "inputs"), *e;
    size_t i;
    assert_true(json_array_size(ins) >= min_n);
    json_array_foreach(ins, i, e) {
        const char *p = json_string_value(json_object_get(e, "path"));
        char *out;
        assert_int_equal(tu_run(&out, "cd '%s' && sha256sum '%s' && stat -c %%s '%s'", dir, p, p), 0);
        if (strncmp(json_string_value(json_object_get(e, "sha256")), out, 64))
            fail_msg("input %s: sha256 %s, sha256sum %.64s", p,
                     json_string_value(json_object_get(e, "sha256")), out);
        assert_int_equal(json_integer_value(json_object_get(e, "bytes")), atoll(strchr(out, '\n') + 1));
        free(out);
    }
}

static int setup(void **state)
{
    (void)state;
    if (!realpath(tu_lnkit(), lnkit))
        fail_msg("%s: no lnkit program (make all)", tu_lnkit());
    return 0;
}

/* The Python path, as the summary of results/multi30k_full runs it (on a
 * copy): each CSV's sidecar has the C writer's record and the C study's
 * provenance keys, the summary's code and every file read as inputs with
 * sha256sum's checksums, its own command line, 1 thread, 1 rank, and its own keys. */
static void test_python_summariser(void **state)
{
    (void)state;
    json_t *std = c_record();
    char *out, cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *copy = tu_path("m30");
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    int st = tu_run(&out, "rm -rf '%s' && cp -r results/multi30k_full '%s' && cd '%s' && rm -f "
                    "trend_points.meta.json values.meta.json claims.meta.json && "
                    "cd '%s' && LNKIT='%s' %s -m studies.summary multi30k_full '%s' >/dev/null",
                    copy, copy, copy, cwd, lnkit, py, copy);
    if (st)
        fail_msg("summary failed (%d): %s", st, out);
    free(out);
    /* the tables do not depend on the sidecars */
    assert_int_equal(tu_run(&out, "cmp results/multi30k_full/values.csv '%s/values.csv'", copy), 0);
    free(out);
    /* a C study's sidecar (ln_geometry) and a command's (lnkit eigs) have the record too */
    json_t *cs = tu_load_json("results/geometry/heads_stats.meta.json");
    assert_has_record(cs, std, "results/geometry/heads_stats.meta.json (C study)");
    const char *names[] = {"trend_points", "values", "claims"};
    for (int i = 0; i < 3; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s.meta.json", copy, names[i]);
        json_t *j = tu_load_json(p);
        assert_has_record(j, std, p);
        /* the same provenance keys as the C study's sidecar, whatever it adds */
        const char *k;
        json_t *v;
        json_object_foreach(std, k, v) assert_non_null(json_object_get(cs, k));
        assert_string_equal(json_string_value(json_object_get(j, "git_commit")), lnk_git_commit());
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "versions"),
                                                              "compiler")), lnk_compiler());
        json_t *cl = json_object_get(j, "command_line");
        const char *want[] = {"python3", "-m", "studies.summary", "multi30k_full", copy};
        assert_int_equal(json_array_size(cl), 5);
        for (int a = 0; a < 5; a++)
            assert_string_equal(json_string_value(json_array_get(cl, a)), want[a]);
        assert_string_equal(json_string_value(json_object_get(j, "cwd")), cwd);
        assert_int_equal(json_integer_value(json_object_get(j, "threads")), 1);
        assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 1);
        assert_true(json_real_value(json_object_get(j, "wall_seconds")) >= 0);
        assert_int_equal(strlen(json_string_value(json_object_get(j, "start_time"))), 20);
        assert_string_equal(json_string_value(json_object_get(j, "study")), "multi30k_full");
        assert_non_null(json_string_value(json_object_get(j, "python")));
        json_t *ins = json_object_get(j, "inputs");
        assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 0), "path")),
                            "studies/summary/stats.py");
        /* the code (stats, writer, m30k_full), then each run's CSV (26 + 2 checks) and runs.csv */
        assert_inputs_checksummed(j, cwd, 3 + 29);
        json_decref(j);
    }
    json_decref(cs);
    json_decref(std);
}

/* bench/bench_meta.py: the benchmark's command line split as the shell
 * would, its threads, ranks and wall time, its parameters. */
static void test_bench_meta(void **state)
{
    (void)state;
    json_t *std = c_record();
    const char *csv = tu_path("bench_x.csv");
    const char *rows = "config,fwd_s\na,0.5\nb,1.5\n";
    tu_write_file(csv, rows, strlen(rows));
    char *out;
    int st = tu_run(&out, "python3 bench/bench_meta.py '%s' --command \"bash tools/bench.sh 'my build'\" "
                    "--start 2026-11-23T20:00:00Z --seconds 12.5 --threads 2 --ranks 3 --lnkit '%s' "
                    "--param configs=a,b --param repeat=7", csv, lnkit);
    if (st)
        fail_msg("bench_meta failed (%d): %s", st, out);
    assert_string_equal(out, "");
    free(out);
    json_t *j = tu_load_json(tu_path("bench_x.meta.json"));
    assert_has_record(j, std, "bench_x.meta.json");
    const char *cl[] = {"bash", "tools/bench.sh", "my build"};
    assert_int_equal(json_array_size(json_object_get(j, "command_line")), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_array_get(json_object_get(j, "command_line"), i)), cl[i]);
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 3);
    assert_true(json_real_value(json_object_get(j, "wall_seconds")) == 12.5);
    assert_string_equal(json_string_value(json_object_get(j, "start_time")), "2026-11-23T20:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(j, "rows")), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "parameters"), "configs")), "a,b");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "parameters"), "repeat")), 7);
    json_decref(j);
    json_decref(std);
}

/* lnkit meta records exactly what it is given. */
static void test_meta_record(void **state)
{
    (void)state;
    char dir[PATH_MAX], *out;
    snprintf(dir, sizeof dir, "%s/rec", tu_tmpdir());
    mkdir(dir, 0777);
    int st = tu_run(&out, "cd '%s' && printf 'x,y\\n1,2\\n' > r.csv && head -c 100000 /dev/urandom > "
                    "in.bin && echo text > 'in 2.txt' && '%s' init --d 8 --L 1 --V 12 --seed 11 -o "
                    "w.safetensors --quiet && echo '{\"what\": \"rows\", \"n\": [1, 2]}' | '%s' meta -o "
                    "r.csv --start 2026-11-23T20:00:00.5+01:00 --seconds 0 --input in.bin --input "
                    "'in 2.txt' --named-seed rng=18446744073709551615 --named-seed init=3 --threads 4 --ranks 2 "
                    "--config w.json --extra-file - --quiet -- prog --flag 'a b' ''",
                    dir, lnkit, lnkit);
    if (st)
        fail_msg("lnkit meta failed (%d): %s", st, out);
    assert_string_equal(out, "");
    free(out);
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/r.meta.json", dir);
    json_t *j = tu_load_json(p), *std = c_record();
    assert_has_record(j, std, "lnkit meta");
    const char *cl[] = {"prog", "--flag", "a b", ""};
    json_t *c = json_object_get(j, "command_line");
    assert_int_equal(json_array_size(c), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_array_get(c, i)), cl[i]);
    assert_string_equal(json_string_value(json_object_get(j, "cwd")), dir);
    /* --config first (read when given), then the inputs in order */
    json_t *ins = json_object_get(j, "inputs");
    assert_int_equal(json_array_size(ins), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 0), "path")), "w.json");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 1), "path")), "in.bin");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ins, 2), "path")), "in 2.txt");
    assert_inputs_checksummed(j, dir, 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "config"), "d")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "seed")), 11);
    json_t *sd = json_object_get(j, "named_seeds");
    assert_int_equal(json_integer_value(json_object_get(sd, "init")), 3); /* --named-seed after --config */
    assert_true(json_real_value(json_object_get(sd, "rng")) == 18446744073709551615.0);
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 2);
    assert_string_equal(json_string_value(json_object_get(j, "start_time")), "2026-11-23T20:00:00.5+01:00");
    assert_true(json_real_value(json_object_get(j, "wall_seconds")) == 0);
    assert_string_equal(json_string_value(json_object_get(j, "what")), "rows");
    assert_int_equal(json_array_size(json_object_get(j, "n")), 2);
    json_decref(j);
    json_decref(std);
}

/* Bad input: one line "lnkit meta: ..." naming the problem, exit 2, and
 * the sidecar (or whatever stands at its name) as it was. */
static void test_meta_bad_input(void **state)
{
    (void)state;
    char dir[PATH_MAX], *out;
    snprintf(dir, sizeof dir, "%s/bad", tu_tmpdir());
    mkdir(dir, 0777);
    assert_int_equal(tu_run(&out, "cd '%s' && printf 'x\\n1\\n' > r.csv && echo keep > r.meta.json && "
                            "mkdir folder.csv && mkfifo fifo.csv && touch f.csv && mkfifo f.meta.json && "
                            "touch d.csv && mkdir d.meta.json && touch ro.csv && echo keep > "
                            "ro.meta.json && chmod 444 ro.meta.json && mkfifo pipe.in", dir), 0);
    free(out);
    static const struct {
        const char *args, *says, *kept; /* kept: the file at the sidecar's name after */
    } cases[] = {
        {"-o r.csv --input missing.txt", "missing.txt", "r.meta.json"},
        {"-o r.csv --input pipe.in", "pipe.in: is a FIFO", "r.meta.json"},
        {"-o r.csv --input r.meta.json", "is also an input", "r.meta.json"},
        {"-o nothere.csv", "nothere.csv: No such file", NULL},
        {"-o folder.csv", "folder.csv: is a folder", NULL},
        {"-o fifo.csv", "fifo.csv: is a FIFO", NULL},
        {"-o f.csv", "f.meta.json: is a FIFO", NULL},
        {"-o d.csv", "d.meta.json", NULL},
        {"-o ro.csv", "read-only", "ro.meta.json"},
        {"-o r.csv --extra '{\"git_commit\": \"x\"}'", "'git_commit' clashes", "r.meta.json"},
        {"-o r.csv --extra '[1]'", "must be a JSON object", "r.meta.json"},
        {"-o r.csv --extra '{'", "not valid JSON", "r.meta.json"},
        {"-o r.csv --extra-file nothere.json", "nothere.json", "r.meta.json"},
        {"-o r.csv --named-seed rng", "--named-seed: expected NAME=N", "r.meta.json"},
        {"-o r.csv --named-seed rng=-1", "--named-seed: expected NAME=N", "r.meta.json"},
        {"-o r.csv --named-seed a=1 --named-seed a=2", "given twice", "r.meta.json"},
        {"-o r.csv --config nothere.json", "nothere.json", "r.meta.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = tu_run(&out, "cd '%s' && '%s' meta %s --start 2026-11-23T20:00:00Z --seconds 1 -- "
                        "prog >/dev/null; echo \"rc=$?\"", dir, lnkit, cases[i].args);
        assert_int_equal(st, 0);
        const char *nl = strchr(out, '\n');
        if (strncmp(out, "lnkit meta: ", 12) || !nl || strcmp(nl + 1, "rc=2\n") ||
            !strstr(out, cases[i].says))
            fail_msg("lnkit meta %s: expected one line naming '%s' and exit 2, got:\n%s",
                     cases[i].args, cases[i].says, out);
        free(out);
        if (cases[i].kept) {
            assert_int_equal(tu_run(&out, "cat '%s/%s'", dir, cases[i].kept), 0);
            assert_string_equal(out, "keep\n");
            free(out);
        }
    }
    /* the time, seconds and command line are required and checked */
    static const char *const more[][2] = {
        {"-o r.csv --start 2026-13-01T00:00:00Z --seconds 1 -- p", "--start"},
        {"-o r.csv --start yesterday --seconds 1 -- p", "--start"},
        {"-o r.csv --start 2026-11-23T20:00:00Z --seconds -1 -- p", "--seconds"},
        {"-o r.csv --start 2026-11-23T20:00:00Z --seconds nan -- p", "--seconds"},
        {"-o r.csv --seconds 1 -- p", "--start TIME is required"},
        {"-o r.csv --start 2026-11-23T20:00:00Z --seconds 1", "no command line"},
        {"-o r.csv --start 2026-11-23T20:00:00Z --seconds 1 --", "no command line"},
        {"-o r.csv stray --start 2026-11-23T20:00:00Z --seconds 1 -- p", "unexpected argument"},
        {"--start 2026-11-23T20:00:00Z --seconds 1 -- p", "-o FILE is required"},
        {"-o r.csv --threads 0 --start 2026-11-23T20:00:00Z --seconds 1 -- p", "--threads"},
        {"-o r.csv --ranks x --start 2026-11-23T20:00:00Z --seconds 1 -- p", "--ranks"},
        {"-o r.csv --bogus --start 2026-11-23T20:00:00Z --seconds 1 -- p", "--bogus"},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        assert_int_equal(tu_run(&out, "cd '%s' && '%s' meta %s >/dev/null; echo \"rc=$?\"", dir,
                                lnkit, more[i][0]), 0);
        const char *nl = strchr(out, '\n');
        if (strncmp(out, "lnkit meta: ", 12) || !nl || strcmp(nl + 1, "rc=2\n") ||
            !strstr(out, more[i][1]))
            fail_msg("lnkit meta %s: expected one line naming '%s' and exit 2, got:\n%s",
                     more[i][0], more[i][1], out);
        free(out);
    }
    assert_int_equal(tu_run(&out, "cd '%s' && cat r.meta.json && test -p f.meta.json && "
                            "test -d d.meta.json && ls -a | grep -c tmp", dir), 1);
    assert_string_equal(out, "keep\n0\n"); /* nothing replaced, no temporary file left */
    free(out);

    /* through Python: the script ends with lnkit's line and status 2 */
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(tu_run(&out, "cd '%s' && python3 '%s/bench/bench_meta.py' ro.csv --command x "
                            "--start 2026-11-23T20:00:00Z --seconds 1 --lnkit '%s' 2>&1 >/dev/null; "
                            "echo \"rc=$?\"; cat ro.meta.json", dir, cwd, lnkit), 0);
    const char *say = "bench_meta.py: ro.csv: sidecar not written: lnkit meta: ";
    if (strncmp(out, say, strlen(say)) ||
        !strstr(out, "read-only") || !strstr(out, "\nrc=2\nkeep\n"))
        fail_msg("bench_meta.py, read-only sidecar: %s", out);
    free(out);
}

/* Every committed sidecar under results/ has the C writer's record. */
static void test_committed_sidecars(void **state)
{
    (void)state;
    json_t *std = c_record();
    char *out;
    assert_int_equal(tu_run(&out, "find results -name '*.meta.json' | sort"), 0);
    int n = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), n++) {
        json_t *j = tu_load_json(line);
        assert_has_record(j, std, line);
        if (json_array_size(json_object_get(j, "command_line")) == 0)
            fail_msg("%s: empty command line", line);
        json_decref(j);
    }
    free(out);
    assert_true(n >= 30); /* anatomy (7 + 8), multi30k_full (4 + runs), geometry, grad, ... */
    json_decref(std);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_summariser),
        cmocka_unit_test(test_bench_meta),
        cmocka_unit_test(test_meta_record),
        cmocka_unit_test(test_meta_bad_input),
        cmocka_unit_test(test_committed_sidecars),
    };
    return cmocka_run_group_tests_name("meta", tests, setup, NULL);
}
