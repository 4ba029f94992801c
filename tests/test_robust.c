/* Robustness (issue "no silent wrong answers, outputs all-or-nothing,
 * bounded inputs, one-line messages"): every reproducer of the issue, run
 * through the lnkit program on a tiny model (helpers: tests/testutil_robust.c).
 *
 *  - devices and FIFOs as -o are written in place, never replaced, and get
 *    no sidecar; links are followed; read-only files are not replaced;
 *  - a command's outputs appear together or not at all: test_robust_atomic;
 *  - inputs read whole are bounded (size limits, NUL bytes, /dev/zero-like
 *    devices and FIFOs);
 *  - every message is one line (control characters escaped);
 *  - eigs' two ends never overlap, density's two outputs differ, the eigs
 *    summary does not contradict itself;
 *  - a data file of another task is refused;
 *  - output folders are checked before any work. */
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

static int file_kind(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return 0;
    return S_ISCHR(sb.st_mode) ? 'c' : S_ISFIFO(sb.st_mode) ? 'p' : S_ISLNK(sb.st_mode) ? 'l'
         : S_ISREG(sb.st_mode) ? 'f' : '?';
}

/* A character device node of our own (never /dev): 0 if we may not make one. */
static int make_dev(const char *path, int minor)
{
    unlink(path);
    return mknod(path, S_IFCHR | 0666, makedev(1, minor)) == 0;
}

/* ------------------------------------------------------ 7. one-line messages */

static void test_escape(void **s)
{
    (void)s;
    char buf[256], again[256];
    const char *in = "key 'd\n_ff' \t\r \x1b[31mred\x7f \xff \xc2\x9b caf\xc3\xa9 back\\slash";
    lnk_escape(buf, sizeof buf, in);
    assert_string_equal(buf, "key 'd\\n_ff' \\t\\r \\x1b[31mred\\x7f \\xff \\u009b caf\xc3\xa9 back\\slash");
    lnk_escape(again, sizeof again, buf);
    assert_string_equal(again, buf); /* idempotent: quoting a message does not escape it twice */
    /* lnk_error itself escapes, and truncates long messages on a character boundary */
    char big[3000];
    for (int i = 0; i < 2999; i++)
        big[i] = i % 3 ? 'a' : '\n';
    big[2999] = '\0';
    lnk_error(LNK_EINVAL, "%s", big);
    const char *m = lnk_errmsg();
    assert_null(strchr(m, '\n'));
    assert_true(strlen(m) < 1024);
    assert_string_equal(m + strlen(m) - 3, "...");
    char euro[1100];
    memset(euro, 'x', sizeof euro);
    for (int i = 1000; i + 3 < 1099; i += 3)
        memcpy(euro + i, "\xe2\x82\xac", 3);
    euro[1099] = '\0';
    lnk_error(LNK_EINVAL, "%s", euro);
    m = lnk_errmsg();
    size_t n = strlen(m);
    assert_string_equal(m + n - 3, "...");
    /* what is kept before "..." is whole characters */
    assert_true((unsigned char)m[n - 4] == 'x' || (unsigned char)m[n - 4] == 0xac);
}

static void test_messages_one_line(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("msg");
    char p[600];
    snprintf(p, sizeof p, "%s/k.json", d);
    tu_write_file(p, "{\"d\\n_ff\": 4}", 13);
    snprintf(p, sizeof p, "%s/v.json", d);
    tu_write_file(p, "{\"norm\": \"\\u001b[31mred\\n\"}", 27);
    /* weights whose tensor name holds a newline and an escape sequence */
    double x = 1;
    lnk_st_tensor t = {.name = "a\nb\x1b[2J", .dtype = LNK_DT_F64, .ndim = 1, .shape = {1},
                       .numel = 1, .data = &x};
    snprintf(p, sizeof p, "%s/t.safetensors", d);
    assert_int_equal(lnk_st_write(p, &t, 1, NULL), LNK_OK);
    struct {
        const char *cmd, *word;
    } cases[] = {
        {"init --config k.json -o x.safetensors", "'d\\n_ff'"},
        {"init --config v.json -o x.safetensors", "\\x1b[31mred\\n"},
        {"eval --config @CFG --weights t.safetensors --batch @B", "'a\\nb\\x1b[2J'"},
        {"init --d 4 --h 2 --L 1 --V 6 -o 'a\nb/x'", "a\\nb"},
        {"frob$(printf '\\033')[31m", "frob\\x1b[31m"},
        {"init --norm \"$(printf 'x\\ny')\" -o x.safetensors", "x\\ny"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        tr_expect_error(d, cases[i].word, "LNKIT %s", cases[i].cmd);
}

/* ------------------------------------------- 1. devices, FIFOs, links as -o */

static void test_device_outputs(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("dev");
    char full[600], null[600], *out;
    snprintf(full, sizeof full, "%s/full", d);
    snprintf(null, sizeof null, "%s/null", d);
    if (!make_dev(full, 7) || !make_dev(null, 3)) {
        printf("      (not allowed to make device nodes: device cases skipped)\n");
        return;
    }
    /* /dev/full: ENOSPC is exit 2; the node stays; no full.json beside it */
    tr_expect_error(d, "full: write failed: No space left on device",
                 "LNKIT init --d 4 --h 2 --L 1 --V 6 --d-ff 4 -o full");
    assert_int_equal(file_kind(full), 'c');
    tr_assert_entries(d, "full null ", "init -o full");
    /* hvp --repeat -o null: the usual timing run; the node stays a device */
    int st = tu_run(&out, "cd '%s' && '%s' hvp %s --vector '%s' --repeat 3 -o null 2>&1", d,
                    tu_lnkit(), tr_model_args, tr_W);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "median"));
    free(out);
    assert_int_equal(file_kind(null), 'c');
    /* eigs, trace, density, batch, init into null: exit 0, nothing created beside it */
    const char *cmds[] = {"eigs MODEL -k 2 --quiet --vectors null -o null",
                          "trace MODEL --probes 4 --quiet -o null",
                          "density MODEL --runs 1 --steps 5 --sigma 0.1 --quiet --nodes null -o null",
                          "batch --synthetic --V 6 -o null",
                          "init --d 4 --h 2 --L 1 --V 6 -o null"};
    for (int i = 0; i < 5; i++) {
        char cmd[4096];
        tr_expand(cmd, sizeof cmd, cmds[i]);
        st = tu_run(&out, "cd '%s' && '%s' %s 2>&1 >/dev/null", d, tu_lnkit(), cmd);
        if (st != 0)
            fail_msg("%s: exit %d: %s", cmd, st, out);
        free(out);
        assert_int_equal(file_kind(null), 'c');
        tr_assert_entries(d, "full null ", cmd);
    }
    /* an explicit --config-out beside a device output is written */
    st = tu_run(&out, "cd '%s' && '%s' init --d 4 --h 2 --L 1 --V 6 -o null --config-out c.json 2>&1",
                d, tu_lnkit());
    assert_int_equal(st, 0);
    free(out);
    tr_assert_entries(d, "c.json full null ", "init -o null --config-out c.json");
    /* eigs into full: exit 2 naming the file, the node stays */
    tr_expect_error(d, "full: write failed: No space left on device", "LNKIT eigs MODEL -k 2 --quiet -o full");
    assert_int_equal(file_kind(full), 'c');
    /* a block device is refused */
    char blk[600];
    snprintf(blk, sizeof blk, "%s/blk", d);
    if (mknod(blk, S_IFBLK | 0600, makedev(7, 200)) == 0) {
        tr_expect_error(d, "is a block device", "LNKIT init --d 4 --h 2 --L 1 --V 6 -o blk");
        unlink(blk);
    }
}

static void test_fifo_outputs(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("fifo");
    char fifo[600], *out;
    snprintf(fifo, sizeof fifo, "%s/f", d);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    /* a reader on the FIFO: the CSV goes through it, the FIFO stays, no f.meta.json */
    int st = tu_run(&out, "cd '%s' && (cat f > got.csv &) && '%s' eigs %s -k 2 --quiet -o f && "
                    "sleep 0.2 && cat got.csv", d, tu_lnkit(), tr_model_args);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "which,index,eigenvalue,residual,converged\ntop,0,"));
    free(out);
    assert_int_equal(file_kind(fifo), 'p');
    tr_assert_entries(d, "f got.csv ", "eigs -o FIFO");
    /* a reader that goes away: the writer ends (SIGPIPE or EPIPE), the FIFO stays */
    st = tu_run(&out, "cd '%s' && (head -c 1 f > /dev/null &) && '%s' batch --synthetic --V 6 "
                "--rows 2000 --len 50 -o f", d, tu_lnkit());
    assert_true(st != 0);
    free(out);
    assert_int_equal(file_kind(fifo), 'p');
    tr_assert_entries(d, "f got.csv ", "batch -o FIFO, reader gone");
}

static void test_symlink_outputs(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("link");
    char *out;
    /* a link to a file in another folder: the link stays, the target is replaced */
    int st = tu_run(&out, "cd '%s' && mkdir t && echo old > t/x.csv && ln -s t/x.csv l.csv && "
                    "'%s' eigs %s -k 2 --quiet -o l.csv && readlink l.csv && head -1 t/x.csv && "
                    "ls t", d, tu_lnkit(), tr_model_args);
    if (st)
        fail_msg("%s", out);
    assert_string_equal(out, "t/x.csv\nwhich,index,eigenvalue,residual,converged\nx.csv\n");
    free(out);
    /* the sidecar follows the name given (l.meta.json beside the link) */
    tr_assert_entries(d, "l.csv l.meta.json t ", "eigs -o link");
    /* a dangling link: its target is created */
    st = tu_run(&out, "cd '%s' && ln -s t/new.csv n.csv && '%s' trace %s --probes 4 --quiet -o n.csv "
                ">/dev/null && readlink n.csv && head -1 t/new.csv", d, tu_lnkit(), tr_model_args);
    if (st)
        fail_msg("%s", out);
    assert_string_equal(out, "t/new.csv\nmethod,probes,trace,stderr\n");
    free(out);
    assert_int_equal(tr_has_temp(d), 0);
}

static void test_read_only_not_replaced(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("ro");
    char *out;
    int st = tu_run(&out, "cd '%s' && echo keep > e.csv && chmod 444 e.csv && '%s' eigs %s -k 2 "
                    "--quiet -o e.csv 2>&1; echo \"rc=$?\"; cat e.csv", d, tu_lnkit(), tr_model_args);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "read-only"));
    assert_non_null(strstr(out, "rc=2\nkeep\n"));
    free(out);
    /* a writable file keeps its mode when replaced */
    st = tu_run(&out, "cd '%s' && echo x > m.csv && chmod 640 m.csv && '%s' eigs %s -k 2 --quiet "
                "-o m.csv && stat -c %%a m.csv", d, tu_lnkit(), tr_model_args);
    assert_int_equal(st, 0);
    assert_string_equal(out, "640\n");
    free(out);
}

/* ------------------------------------------------------ 4. bounded inputs */

static void test_bounded_inputs(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("bound");
    char zero[600], urand[600];
    snprintf(zero, sizeof zero, "%s/zero", d);
    snprintf(urand, sizeof urand, "%s/urandom", d);
    /* our own /dev/zero and /dev/urandom nodes (read only), else the system's */
    const char *Z = make_dev(zero, 5) ? "zero" : "/dev/zero";
    const char *U = make_dev(urand, 9) ? "urandom" : "/dev/urandom";
    tu_write_file(tu_path("bound/x.txt"), "a b\n", 4);
    struct {
        char cmd[1024];
        const char *word;
    } c[8];
    int n = 0;
    snprintf(c[n].cmd, 1024, "eval --config %s --weights '%s' --batch '%s'", Z, tr_W, tr_B);
    c[n++].word = "NUL byte at byte offset 0";
    snprintf(c[n].cmd, 1024, "batch --src %s --tgt x.txt -o o.safetensors", Z);
    c[n++].word = "NUL byte at byte offset 0";
    snprintf(c[n].cmd, 1024, "batch --text %s -o o.safetensors", U);
    c[n++].word = "urandom";
    snprintf(c[n].cmd, 1024, "batch --text x.txt --vocab-in %s -o o.safetensors", Z);
    c[n++].word = "NUL byte";
    /* a device as a safetensors file: read as a stream, its 8 zero bytes an empty header */
    snprintf(c[n].cmd, 1024, "eval --config '%s' --weights %s --batch '%s'", tr_CFG, Z, tr_B);
    c[n++].word = "header is not valid JSON";
    snprintf(c[n].cmd, 1024, "select --keys %s", Z);
    c[n++].word = "NUL byte";
    /* (each within 20 s: a read that grew without bound would not end) */
    for (int i = 0; i < n; i++)
        tr_expect_error(d, c[i].word, "timeout 20 LNKIT %s", c[i].cmd);
    /* a NUL byte in a text: its offset */
    tu_write_file(tu_path("bound/nul.txt"), "a b\nc \0d\n", 9);
    tr_expect_error(d, "nul.txt: not a text file: NUL byte at byte offset 6 (line 2)",
                 "LNKIT batch --text nul.txt -o o.safetensors");
    /* size limits: a regular file above it is refused unread, naming the limit */
    tr_expect_error(d, "configuration of 17000000 bytes (16.21 MiB) is larger than the limit of "
                 "16777216 bytes (16 MiB)", "head -c 17000000 /dev/zero | tr '\\0' ' ' > big.json "
                 "&& LNKIT init --config big.json -o o.safetensors");
    tr_expect_error(d, "is larger than the limit of 4096 bytes", "yes 'a b c' | head -c 5000 > t.txt && "
                 "LNKIT batch --text t.txt --max-input 4K -o o.safetensors");
    /* below 1 KiB a size is said once ('21 bytes', not '21 bytes (21 bytes)') */
    tr_expect_error(d, "text input of 37 bytes is larger than the limit of 21 bytes; ",
                 "printf 'hello world this is a test\\nmore text\\n' > s.txt && "
                 "LNKIT batch --text s.txt --max-input 21 -o o.safetensors");
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' batch --text t.txt --max-input 8K -o o.safetensors 2>&1", d,
                    tu_lnkit());
    assert_int_equal(st, 0);
    free(out);
    /* a FIFO (process substitution) is read up to the limit */
    tr_expect_error(d, "stopped reading it (a FIFO)", "rm -f p && mkfifo p && (yes 'a b c' > p &) && "
                 "timeout 20 LNKIT batch --text p --max-input 64K -o o2.safetensors");
    tr_expect_error(d, "--max-input", "LNKIT batch --text x.txt --max-input 12Q -o o.safetensors");
    assert_int_equal(tr_has_temp(d), 0);
}

/* ------------------------------------------------------------- 8. small */

static void test_eigs_ends_and_summary(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("ends");
    char *out;
    tr_expect_error(d, "-k 100 --which both asks for 200 eigenpairs, but the model has 184",
                 "LNKIT eigs MODEL -k 100 --which both --quiet -o e.csv");
    tr_assert_entries(d, "", "2k > n");
    /* 2k = n: all 184 eigenvalues, each once */
    int st = tu_run(&out, "cd '%s' && '%s' eigs %s -k 92 --which both --quiet -o e.csv && "
                "tail -n +2 e.csv | cut -d, -f1 | sort | uniq -c && awk -F, 'NR > 1 && $1 == \"top\" "
                "{ if (t == \"\" || $3 < t) t = $3 } NR > 1 && $1 == \"bottom\" { if (b == \"\" || "
                "$3 > b) b = $3 } END { print (t >= b) ? \"disjoint\" : \"overlap\" }' e.csv", d,
                tu_lnkit(), tr_model_args);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "92 bottom\n"));
    assert_non_null(strstr(out, "92 top\n"));
    assert_non_null(strstr(out, "\ndisjoint\n"));
    free(out);
    /* tol below rounding: stopped by the residual bounds, not by the explicit
     * residuals; the warning says so instead of "stopped by tol, 0/k converged",
     * and the status is 3 (not converged) */
    st = tu_run(&out, "cd '%s' && '%s' eigs %s -k 5 --which both --tol 1e-17 -o t.csv > log "
                "2>&1; echo \"exit $?\"; grep -v 'step ' log", d, tu_lnkit(), tr_model_args);
    assert_int_equal(st, 0);
    json_t *m = json_load_file(tu_path("ends/t.meta.json"), 0, NULL);
    assert_non_null(m);
    const char *stop = json_string_value(json_object_get(m, "stop"));
    int conv = (int)json_integer_value(json_object_get(m, "converged"));
    if (!strcmp(stop, "tol") && conv < 10)
        assert_non_null(strstr(out, "their residual bounds met the tolerance, the explicit "
                               "residuals did not"));
    assert_non_null(strstr(out, conv < 10 ? "exit 3\n" : "exit 0\n"));
    assert_non_null(strstr(out, "converged by their explicit residual"));
    json_decref(m);
    free(out);
}

static void test_density_outputs(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("dens");
#define DENSITY "LNKIT density MODEL --runs 1 --steps 5 --sigma 0.1 --quiet"
    tr_expect_error(d, "-o X and --nodes X are the same file", DENSITY " --nodes X -o X");
    tr_expect_error(d, "are the same file", "ln -s X Y && " DENSITY " --nodes Y -o X");
    tr_expect_error(d, "the sidecar of -o d.meta.json are the same file",
                 DENSITY " --nodes d.meta.json -o d.csv");
    tr_assert_entries(d, "Y ", "same file");
    /* a write failure names the file (not "CSV: write failed") */
    tr_expect_error(d, "d.csv: write failed: Input/output error",
                 "LNK_OUTPUT_FAULT=write:EIO:10 " DENSITY " -o d.csv");
#undef DENSITY
    tr_assert_entries(d, "Y ", "write failure");
}

/* ------------------------------------------------- 9. data of another task */

static void test_task_mismatch(void **s)
{
    (void)s;
    tr_setup_model();
    tr_write_corpus();
    const char *d = tr_fresh("task");
    tr_expect_error(d, "m.safetensors: the file is a seq2seq data file (metadata task 'seq2seq') but "
                 "the model's task is lm", "LNKIT batch --src @/corpus.de --tgt @/corpus.en "
                 "-o m.safetensors 2>/dev/null && LNKIT eval --config @CFG --weights @W --batch m.safetensors");
    /* the same for eigs and a synthetic seq2seq batch */
    tr_expect_error(d, "seq2seq data file", "LNKIT batch --synthetic --task seq2seq --V 6 -o s.safetensors "
                 "2>/dev/null && LNKIT eigs --config @CFG --weights @W --batch s.safetensors -o e.csv");
    /* a cls model on lm data */
    lnk_config cc = tu_config("task=cls", "d=4", "h=2", "L=1", "V=6", "d_ff=4", NULL);
    lnk_model *mc = lnk_model_alloc(&cc);
    lnk_batch bc;
    assert_int_equal(lnk_batch_load(tr_B, mc, &bc), LNK_EMISMATCH);
    if (!strstr(lnk_errmsg(), "lm data file") || !strstr(lnk_errmsg(), "task is cls"))
        fail_msg("%s", lnk_errmsg());
    lnk_model_free(mc);
    lnk_config_clear(&cc);
    /* a file without task metadata (another writer): judged by its tensors */
    lnk_config c = tu_config("d=4", "h=2", "L=1", "V=6", "d_ff=4", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    int64_t ids[6] = {2, 4, 5, 4, 5, 3};
    lnk_st_tensor t[2] = {{.name = "src", .dtype = LNK_DT_I64, .ndim = 2, .shape = {1, 6},
                           .numel = 6, .data = ids},
                          {.name = "tgt", .dtype = LNK_DT_I64, .ndim = 2, .shape = {1, 6},
                           .numel = 6, .data = ids}};
    const char *p = tu_path("task/nometa.safetensors");
    assert_int_equal(lnk_st_write(p, t, 2, NULL), LNK_OK);
    lnk_batch b;
    assert_int_equal(lnk_batch_load(p, m, &b), LNK_EMISMATCH);
    if (!strstr(lnk_errmsg(), "looks like a seq2seq data file") || !strstr(lnk_errmsg(), "task lm"))
        fail_msg("%s", lnk_errmsg());
    /* lm data written by lnk_batch_save records its task and loads */
    lnk_batch lb = {.B = 1, .T = 6, .tgt = ids};
    assert_int_equal(lnk_batch_save(p, &lb), LNK_OK);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(p, &f), LNK_OK);
    assert_string_equal(lnk_st_meta(f, "task"), "lm");
    lnk_st_free(f);
    assert_int_equal(lnk_batch_load(p, m, &b), LNK_OK);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* ------------------------------------------- 10. output folders checked first */

static void test_outputs_checked_first(void **s)
{
    (void)s;
    tr_setup_model();
    const char *d = tr_fresh("first");
    /* the weights do not exist either: the output's message comes first, so
     * nothing was read or computed before it */
#define M "--config @CFG --weights nosuch.safetensors --batch @B"
    const char *cmds[] = {
        "eigs " M " -o nodir/x.csv", "trace " M " -o nodir/x.csv",
        "density " M " --sigma 1 -o nodir/x.csv", "density " M " --sigma 1 -o x.csv --nodes nodir/n.csv",
        "eigs " M " -o x.csv --vectors nodir/v.safetensors", "hvp " M " --vector @W -o nodir/x.st",
        "eval " M " --grad-out nodir/g.st", "init --d 4 --h 2 -o nodir/w.safetensors",
        "init --d 4 --h 2 -o w.safetensors --config-out nodir/w.json",
        "batch --synthetic -o nodir/b.st", "batch --text nosuch.txt -o nodir/b.st",
        "batch --text nosuch.txt -o b.st --vocab-out nodir/v", "batch --src a --tgt b -o nodir/m.st",
    };
#undef M
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        tr_expect_error(d, "folder 'nodir' does not exist", "LNKIT %s", cmds[i]);
        tr_assert_entries(d, "", cmds[i]);
    }
    /* an output that is an input is refused; the input stays */
    char *out;
    tu_write_file(tu_path("first/c.txt"), "a b\n", 4);
    int st = tu_run(&out, "cd '%s' && '%s' batch --text c.txt -o c.txt 2>&1; cat c.txt", d, tu_lnkit());
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "-o c.txt is also an input (--text)"));
    assert_non_null(strstr(out, "\na b\n"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_messages_one_line),
        cmocka_unit_test(test_device_outputs),
        cmocka_unit_test(test_fifo_outputs),
        cmocka_unit_test(test_symlink_outputs),
        cmocka_unit_test(test_read_only_not_replaced),
        cmocka_unit_test(test_bounded_inputs),
        cmocka_unit_test(test_eigs_ends_and_summary),
        cmocka_unit_test(test_density_outputs),
        cmocka_unit_test(test_task_mismatch),
        cmocka_unit_test(test_outputs_checked_first),
    };
    return cmocka_run_group_tests_name("robust", tests, NULL, NULL);
}
