/* The lnkit program: round trip init -> batch -> eval -> hvp against the
 * library, and bad input: one clear line on stderr, exit 2, no output file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"
#include "lnkit/geometry.h"

/* No file of the directory other than those listed may exist (no temp files). */
static int count_files(const char *dir)
{
    char *out;
    tu_run(&out, "ls -A '%s' | wc -l", dir);
    int n = atoi(out);
    free(out);
    return n;
}

static void setup_files(void)
{
    static int done = 0;
    if (done)
        return;
    done = 1;
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' init --d 16 --h 2 --L 2 --V 40 --seed 5 -o w.safetensors "
                    "&& '%s' batch --synthetic --V 40 --rows 3 --len 7 --rng-seed 2 -o b.safetensors "
                    "&& '%s' batch --synthetic --V 4000 --rows 3 --len 7 -o big.safetensors",
                    tu_tmpdir(), tu_lnkit(), tu_lnkit(), tu_lnkit());
    if (st != 0)
        fail_msg("setup failed (%d): %s", st, out);
    free(out);
}

/* eval's CSV equals the library's numbers for the same files. */
static void test_eval_matches_library(void **s)
{
    (void)s;
    setup_files();
    char *out;
    int st = tu_run(&out, "'%s' eval --config '%s' --weights '%s' --batch '%s' 2>/dev/null",
                    tu_lnkit(), tu_path("w.json"), tu_path("w.safetensors"),
                    tu_path("b.safetensors"));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "quantity,tensor,value\n"));
    double loss_cli = NAN;
    char *p = strstr(out, "\nloss,,");
    assert_non_null(p);
    loss_cli = strtod(p + 7, NULL);
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_load_json(&c, tu_path("w.json")), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n), L;
    assert_int_equal(lnk_weights_load(tu_path("w.safetensors"), m, th), LNK_OK);
    /* init wrote exactly what lnk_model_init_params gives */
    double *th2 = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_init_params(m, th2), LNK_OK);
    assert_memory_equal(th, th2, sizeof(double) * n);
    lnk_batch b;
    assert_int_equal(lnk_batch_load(tu_path("b.safetensors"), m, &b), LNK_OK);
    lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, 0);
    assert_int_equal(lnk_model_eval(ws, th, &b, &L, g, NULL), LNK_OK);
    assert_true(L == loss_cli); /* %.17g round-trips exactly */
    /* every tensor's norm appears with the library's value */
    const lnk_layout *lay = lnk_model_layout(m);
    for (int i = 0; i < lay->n_tensors; i++) {
        char key[96];
        snprintf(key, sizeof key, "\ngrad_norm,%s,", lay->t[i].name);
        char *q = strstr(out, key);
        assert_non_null(q);
        assert_true(strtod(q + strlen(key), NULL) == lnk_tensor_norm(m, g, i));
    }
    free(out);
    /* hvp writes H v in the input layout: flat in, flat out */
    double *v = malloc(sizeof(double) * n), *hv = malloc(sizeof(double) * n);
    tu_randn(v, n, 4);
    assert_int_equal(lnk_vector_save(tu_path("v.safetensors"), m, v, LNK_VEC_FLAT), LNK_OK);
    st = tu_run(&out, "'%s' hvp --config '%s' --weights '%s' --batch '%s' --vector '%s' -o '%s' "
                "--repeat 3", tu_lnkit(), tu_path("w.json"), tu_path("w.safetensors"),
                tu_path("b.safetensors"), tu_path("v.safetensors"), tu_path("hv.safetensors"));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "median"));
    free(out);
    lnk_workspace *wsh = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
    assert_int_equal(lnk_model_hvp(wsh, th, &b, v, hv, NULL, NULL), LNK_OK);
    double *hv2 = malloc(sizeof(double) * n);
    int kind = -1;
    assert_int_equal(lnk_vector_load(tu_path("hv.safetensors"), m, hv2, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_FLAT);
    assert_memory_equal(hv, hv2, sizeof(double) * n);
    free(v);
    free(hv);
    free(hv2);
    free(th);
    free(th2);
    free(g);
    lnk_workspace_free(ws);
    lnk_workspace_free(wsh);
    lnk_batch_free(&b);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Each bad command: exit 2, one line on stderr containing the expected words,
 * nothing on stdout, and no file created in a fresh directory. */
static void test_bad_input(void **s)
{
    (void)s;
    setup_files();
    const char *W = tu_path("w.safetensors"), *Bf = tu_path("b.safetensors"), *C = tu_path("w.json");
    char nanw[600], trunc[600], cfgbad[600], bigb[600];
    snprintf(bigb, sizeof bigb, "%s", tu_path("big.safetensors"));
    /* weights with a NaN: load, poke, save through the container writer */
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(W, &f), LNK_OK);
    ((double *)f->t[1].data)[3] = NAN;
    snprintf(nanw, sizeof nanw, "%s", tu_path("nan.safetensors"));
    assert_int_equal(lnk_st_write(nanw, f->t, f->n, NULL), LNK_OK);
    lnk_st_free(f);
    size_t len;
    char *data = tu_read_file(W, &len);
    snprintf(trunc, sizeof trunc, "%s", tu_path("trunc.safetensors"));
    tu_write_file(trunc, data, len - 9);
    free(data);
    snprintf(cfgbad, sizeof cfgbad, "%s", tu_path("bad.json"));
    tu_write_file(cfgbad, "{\"d\": 16, \"h\": 3}", 17);
    struct {
        const char *args;
        const char *words;
    } cases[] = {
        {"init --d 30 --h 4 -o OUT", "multiple of h"},
        {"init --d -4 -o OUT", "--d"},
        {"init --norm layer -o OUT", "norm"},
        {"init --label-smoothing 1 -o OUT", "--label-smoothing"},
        {"init --norm-pos mid -o OUT", "--norm-pos: expected one of post, pre, peri, out, deepnorm, mix, got 'mid'"},
        {"init --L 1000000 -o OUT", "key 'L': 1000000"},
        {"init --frobnicate 3 -o OUT", "unknown option '--frobnicate'"},
        {"init -o", "needs a value"},
        {"init --config /nonexistent/c.json -o OUT", "/nonexistent/c.json"},
        {"init --config CFGBAD -o OUT", "h"},
        {"frob", "unknown command 'frob'"},
        {"batch --synthetic --V 3 -o OUT", "--V"},
        {"batch --synthetic --rows -2 -o OUT", "--rows"},
        {"batch --text /nonexistent.txt -o OUT", "/nonexistent.txt"},
        {"eval --config CFG --weights /nonexistent.st --batch BATCH", "/nonexistent.st"},
        {"eval --config CFG --weights TRUNC --batch BATCH", "trunc.safetensors"},
        {"eval --config CFG --weights NANW --batch BATCH", "finite"},
        {"eval --config CFG --weights W --batch BATCH --V-tgt 20", "'tgt_emb' has shape [40, 16]"},
        {"eval --weights W --batch BATCH --d 8 --h 2 --L 2 --V 40", "shape"},
        {"eval --config CFG --weights W --batch W", "tensor 'tgt' is missing"},
        {"eval --config CFG --weights W", "--batch"},
        {"eval --config CFG --weights W --batch BIGB", "out of range"},
        {"hvp --config CFG --weights W --batch BATCH --vector BATCH -o OUT", "b.safetensors"},
        {"hvp --config CFG --weights W --batch BATCH --vector W", "-o"},
        {"hvp --config CFG --weights W --batch BATCH --vector NANW -o OUT", "finite"},
        {"hvp --config CFG --weights W --batch BATCH --vector W -o OUT --repeat 0", "--repeat"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[600], cmd[4096], *o = cmd;
        snprintf(dir, sizeof dir, "%s/case%zu", tu_tmpdir(), i);
        mkdir(dir, 0777);
        /* substitute placeholders */
        const char *a = cases[i].args;
        while (*a) {
            const char *rep = NULL;
            size_t k = 0;
            if (!strncmp(a, "OUT", 3)) { rep = "out.safetensors"; k = 3; }
            else if (!strncmp(a, "CFGBAD", 6)) { rep = cfgbad; k = 6; }
            else if (!strncmp(a, "CFG", 3)) { rep = C; k = 3; }
            else if (!strncmp(a, "BATCH", 5)) { rep = Bf; k = 5; }
            else if (!strncmp(a, "BIGB", 4)) { rep = bigb; k = 4; }
            else if (!strncmp(a, "TRUNC", 5)) { rep = trunc; k = 5; }
            else if (!strncmp(a, "NANW", 4)) { rep = nanw; k = 4; }
            else if (!strncmp(a, "W", 1) && (a[1] == ' ' || a[1] == 0)) { rep = W; k = 1; }
            if (rep) {
                o += sprintf(o, "%s", rep);
                a += k;
            } else
                *o++ = *a++;
        }
        *o = 0;
        char *out, *err;
        int st = tu_run(&out, "cd '%s' && '%s' %s 2>/dev/null", dir, tu_lnkit(), cmd);
        int st2 = tu_run(&err, "cd '%s' && '%s' %s 2>&1 >/dev/null", dir, tu_lnkit(), cmd);
        char pre[64]; /* "lnkit CMD: " (the command's own name) */
        snprintf(pre, sizeof pre, "lnkit %.*s: ", (int)strcspn(cases[i].args, " "), cases[i].args);
        if (!strncmp(cases[i].args, "frob", 4))
            snprintf(pre, sizeof pre, "lnkit: ");
        if (st != 2 || st2 != 2 || out[0] != '\0' || !strstr(err, cases[i].words) ||
            (strncmp(err, pre, strlen(pre)) && strncmp(err, "lnkit: ", 7)) ||
            strchr(err, '\n') != err + strlen(err) - 1 ||
            count_files(dir) != 0)
            fail_msg("lnkit %s\n  exit %d, stdout '%s', stderr '%s', files left %d (expected exit 2, "
                     "one line with '%s', nothing else)",
                     cmd, st, out, err, count_files(dir), cases[i].words);
        free(out);
        free(err);
    }
}

/* The configuration contract from the command line (docs/MODEL.md §8): keys
 * that do not apply are ignored, flags override a saved config and its
 * derived keys follow them. */
static void test_config_contract(void **s)
{
    (void)s;
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/contract", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit();
    /* the config initialises and evaluates */
    int st = tu_run(&out, "cd '%s' && printf '%%s' '{\"task\":\"lm\",\"L_enc\":0,\"V_src\":0,"
                    "\"n_classes\":0}' > ic.json && '%s' init --config ic.json -o i.safetensors && "
                    "'%s' batch --synthetic --config ic.json -o ib.safetensors && '%s' eval --config "
                    "ic.json --weights i.safetensors --batch ib.safetensors",
                    dir, L, L, L);
    if (st != 0 || !strstr(out, "\nloss,,"))
        fail_msg("issue config: exit %d: %s", st, out);
    free(out);
    /* --L 12 on a saved 6-layer config builds what --L 12 alone builds, files
     * byte for byte (the saved L_enc/L_dec 6 follow L); so does --norm-pos post
     * on a saved Pre-LN config */
    st = tu_run(&out, "cd '%s' && '%s' init --L 6 --norm-pos pre -o s6.safetensors && "
                "'%s' init --config s6.json --L 12 -o s12.safetensors && "
                "'%s' init --L 12 --norm-pos pre -o f12.safetensors && cmp s12.json f12.json && "
                "cmp s12.safetensors f12.safetensors && grep -q '\"L_dec\": 12' s12.json && "
                "'%s' init --config s6.json --norm-pos post -o p6.safetensors && "
                "'%s' init --L 6 -o f6.safetensors && cmp p6.json f6.json && "
                "cmp p6.safetensors f6.safetensors",
                dir, L, L, L, L, L);
    if (st != 0)
        fail_msg("saved config + flags: exit %d: %s", st, out);
    free(out);
    /* a saved config whose keys were edited: the message names the key */
    st = tu_run(&out, "cd '%s' && sed 's/\"d\": 16/\"d\": 32/' s6.json > e.json && "
                "'%s' init --config e.json -o ex.safetensors", dir, L);
    if (st != 2 || !strstr(out, "e.json: key 'n_params'") || !strstr(out, "remove 'n_params'"))
        fail_msg("edited config: exit %d: %s", st, out);
    free(out);
}


/* Every command takes --quiet and then prints nothing on stderr; without it
 * init, batch and hvp say what they wrote.  batch --help lists --seed once;
 * messages spell flags as --help does. */
static void test_quiet_and_help(void **s)
{
    (void)s;
    setup_files();
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/quiet", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit(), *C = tu_path("w.json"), *W = tu_path("w.safetensors"),
               *B = tu_path("b.safetensors");
    char keys[700];
    snprintf(keys, sizeof keys, "%s/keys.csv", dir);
    tu_write_file(keys, "1,0\n0,1\n0.2,0.2\n", 16);
    const char *cmds[] = {
        "init --d 8 --h 2 --L 1 --V 12 -o q.safetensors",
        "batch --synthetic --config q.json --rows 2 --len 3 -o qb.safetensors",
        "batch --text t.txt -o qt.safetensors",
        "batch --src t.txt --tgt t.txt -o qs.safetensors",
        "eval --config CFG --weights W --batch B",
        "vector --config CFG --random -o v.safetensors",
        "hvp --config CFG --weights W --batch B --vector v.safetensors -o hv.safetensors --repeat 3",
        "eigs --config CFG --weights W --batch B -k 1 -o e.csv",
        "trace --config CFG --weights W --batch B --probes 4",
        "density --config CFG --weights W --batch B --runs 2 --steps 5 --sigma 0.1 -o d.csv",
        "params --config CFG",
        "select --keys KEYS -o sel.csv",
    };
    tu_write_file(tu_path("quiet/t.txt"), "a b c\nb c\n", 10);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char cmd[2000], *o = cmd;
        for (const char *a = cmds[i]; *a;) {
            if (!strncmp(a, "CFG", 3)) { o += sprintf(o, "%s", C); a += 3; }
            else if (!strncmp(a, "KEYS", 4)) { o += sprintf(o, "%s", keys); a += 4; }
            else if (a[0] == 'W' && (a[1] == ' ' || !a[1])) { o += sprintf(o, "%s", W); a += 1; }
            else if (a[0] == 'B' && (a[1] == ' ' || !a[1])) { o += sprintf(o, "%s", B); a += 1; }
            else *o++ = *a++;
        }
        *o = 0;
        int st = tu_run(&out, "cd '%s' && '%s' %s --quiet 2>&1 >/dev/null", dir, L, cmd);
        if (st != 0 || out[0])
            fail_msg("lnkit %s --quiet: exit %d, stderr '%s'", cmd, st, out);
        free(out);
        if (i < 3 || i == 6) { /* these speak when not quiet */
            st = tu_run(&out, "cd '%s' && '%s' %s 2>&1 >/dev/null", dir, L, cmd);
            if (st != 0 || !out[0])
                fail_msg("lnkit %s: exit %d, nothing on stderr", cmd, st);
            free(out);
        }
    }
    /* batch --help: one --seed line */
    assert_int_equal(tu_run(&out, "'%s' batch --help | grep -c '^ *--seed'", L), 0);
    assert_int_equal(atoi(out), 1);
    free(out);
}

/* params -o FILE: what standard output gets, in FILE, with its sidecar
 * (every format). */
static void test_params_output(void **s)
{
    (void)s;
    setup_files();
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/po", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit(), *C = tu_path("w.json");
    int pst = tu_run(&out, "cd '%s' && for f in '' --csv; do rm -f p.out p.out.meta.json "
                     "&& '%s' params --config '%s' $f > p.std && '%s' params --config '%s' $f "
                     "-o p.out -q && cmp p.std p.out && grep -q '\"command\": \"params\"' "
                     "p.out.meta.json || exit 1; done", dir, L, C, L, C);
    if (pst != 0)
        fail_msg("params -o FILE: exit %d: %s", pst, out);
    free(out);
    /* --json is on standard output, as in every command; -o FILE keeps its format */
    pst = tu_run(&out, "cd '%s' && '%s' params --config '%s' > t.std && '%s' params --config '%s' "
                 "--json > j.std && '%s' params --config '%s' --csv --json -o c.out > j2.std && "
                 "cmp j.std j2.std && '%s' params --config '%s' --csv > c.std && cmp c.std c.out && "
                 "'%s' params --config '%s' --json -o t.out > j3.std && cmp t.std t.out && "
                 "cmp j.std j3.std && head -c 1 j.std | grep -q '{'", dir, L, C, L, C, L, C, L, C,
                 L, C);
    if (pst != 0)
        fail_msg("params --json with -o FILE: exit %d: %s", pst, out);
    free(out);
    pst = tu_run(&out, "cd '%s' && '%s' params --config '%s' --json -o -", dir, L, C);
    if (pst != 2 || tu_n_lines(out) != 1)
        fail_msg("params --json -o -: exit %d: %s", pst, out);
    free(out);
}

/* lnkit vector takes exactly one source; --weights/--batch only with
 * --gradient: one line, exit 2. */
static void vector_bad_sources(const char *dir, const char *L, const char *C)
{
    const char *bad[] = {"", "--random --ones", "--gradient", "--ones --weights x",
                         "--rademacher"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out;
        int st = tu_run(&out, "cd '%s' && '%s' vector --config '%s' %s -o bad.safetensors", dir,
                        L, C, bad[i]);
        if (st != 2 || strncmp(out, "lnkit vector: ", 14) || strchr(out, '\n') != out + strlen(out) - 1)
            fail_msg("vector %s: exit %d: %s", bad[i], st, out);
        free(out);
    }
}

/* lnkit params agrees with the library's layout and blocks; lnkit vector
 * makes the vectors it says (reproducible random, ones, the gradient that
 * eval writes), restricted to a block and normalised on request. */
static void test_params_vector(void **s)
{
    (void)s;
    setup_files();
    char dir[600], *out;
    snprintf(dir, sizeof dir, "%s/pv", tu_tmpdir());
    mkdir(dir, 0777);
    const char *L = tu_lnkit(), *C = tu_path("w.json"), *W = tu_path("w.safetensors"),
               *B = tu_path("b.safetensors");
    lnk_config c;
    lnk_config_default(&c);
    assert_int_equal(lnk_config_load_json(&c, C), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    size_t n = lay->n_params;

    /* params --csv: every tensor, its shape, count and offset; the groups' sizes */
    assert_int_equal(tu_run(&out, "'%s' params --config '%s' --csv", L, C), 0);
    char row[200];
    for (int i = 0; i < lay->n_tensors; i++) {
        const lnk_tensor_info *t = &lay->t[i];
        if (t->ndim == 2)
            snprintf(row, sizeof row, "\ntensor,%s,%dx%d,%zu,%zu\n", t->name, t->shape[0],
                     t->shape[1], t->size, t->offset);
        else
            snprintf(row, sizeof row, "\ntensor,%s,%d,%zu,%zu\n", t->name, t->shape[0], t->size,
                     t->offset);
        if (!strstr(out, row))
            fail_msg("params --csv lacks '%s'", row + 1);
    }
    const char *groups[] = {"*", "*.attn.*", "*.ffn.w2", "dec.1.*", "out.w"};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        lnk_block blk;
        assert_int_equal(lnk_block_select(m, groups[g], &blk), LNK_OK);
        snprintf(row, sizeof row, "\ngroup,%s,,%zu,\n", groups[g], blk.n);
        if (!strstr(out, row))
            fail_msg("params --csv lacks '%s'", row + 1);
        lnk_block_free(&blk);
    }
    free(out);
    assert_int_equal(tu_run(&out, "'%s' params --config '%s' --block 'nothing.*'", L, C), 2);
    assert_non_null(strstr(out, "--block"));
    free(out);
    /* vector: random reproducible, ones, block, normalize, gradient = eval's */
    int st = tu_run(&out, "cd '%s' && L='%s' C='%s' W='%s' B='%s' && "
                    "$L vector --config $C --random --rng-seed 3 -o r1.safetensors --quiet && "
                    "$L vector --config $C --random --rng-seed 3 -o r2.safetensors --quiet && "
                    "$L vector --config $C --random --rng-seed 4 -o r3.safetensors --quiet && "
                    "cmp r1.safetensors r2.safetensors && ! cmp -s r1.safetensors r3.safetensors && "
                    "$L vector --config $C --ones --flat -o ones.safetensors --quiet && "
                    "$L vector --config $C --random --rademacher --block '*.ffn.*' --normalize "
                    "-o blk.safetensors --quiet && "
                    "$L vector --config $C --gradient --weights $W --batch $B -o g.safetensors "
                    "--quiet && "
                    "$L eval --config $C --weights $W --batch $B --grad-out ge.safetensors --quiet "
                    ">/dev/null && $L vector --config $C --gradient --weights $W --batch $B "
                    "--batch $B -o g2.safetensors --quiet && $L eval --config $C --weights $W "
                    "--batch $B --batch $B --grad-out ge2.safetensors --quiet >/dev/null && "
                    "for f in g ge g2 ge2; do tail -c %zu $f.safetensors > $f.data; done && "
                    "cmp g.data ge.data && cmp g2.data ge2.data",
                    dir, L, C, W, B, 8 * n); /* the same tensors; records name the command */
    if (st != 0)
        fail_msg("vector commands: exit %d: %s", st, out);
    free(out);
    double *v = malloc(sizeof(double) * n);
    int kind;
    char p[700];
    snprintf(p, sizeof p, "%s/ones.safetensors", dir);
    assert_int_equal(lnk_vector_load(p, m, v, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_FLAT);
    for (size_t i = 0; i < n; i++)
        assert_true(v[i] == 1.0);
    snprintf(p, sizeof p, "%s/r1.safetensors", dir);
    assert_int_equal(lnk_vector_load(p, m, v, &kind), LNK_OK);
    assert_int_equal(kind, LNK_VEC_NAMED);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += v[i] / (double)n;
    for (size_t i = 0; i < n; i++)
        var += (v[i] - mean) * (v[i] - mean) / (double)n;
    /* N(0, 1) entries: mean within 5 standard errors, variance within 10% */
    assert_true(fabs(mean) < 5 / sqrt((double)n));
    assert_true(fabs(var - 1) < 0.1);
    snprintf(p, sizeof p, "%s/blk.safetensors", dir);
    assert_int_equal(lnk_vector_load(p, m, v, &kind), LNK_OK);
    lnk_block blk;
    assert_int_equal(lnk_block_select(m, "*.ffn.*", &blk), LNK_OK);
    double nrm = 0;
    size_t in_block = 0;
    for (int i = 0; i < lay->n_tensors; i++) {
        int sel = 0;
        for (int k = 0; k < blk.n_tensors; k++)
            sel |= blk.tensor[k] == i;
        for (size_t j = 0; j < lay->t[i].size; j++) {
            double x = v[lay->t[i].offset + j];
            if (!sel)
                assert_true(x == 0.0);
            else {
                assert_true(fabs(fabs(x) - 1 / sqrt((double)blk.n)) < 1e-15);
                in_block++;
            }
            nrm += x * x;
        }
    }
    assert_int_equal(in_block, blk.n);
    assert_true(fabs(sqrt(nrm) - 1) < 1e-12);
    lnk_block_free(&blk);
    vector_bad_sources(dir, L, C);
    free(v);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* select -o writes the CSV of stdout and a sidecar; the default --hull-tol is
 * the study's 1e-12 (LNK_GEOM_SEL_TOL). */
static void test_select_output(void **s)
{
    (void)s;
    char dir[600], *a, *b;
    snprintf(dir, sizeof dir, "%s/sel", tu_tmpdir());
    mkdir(dir, 0777);
    tu_write_file(tu_path("sel/k.csv"), "x,y\n1,0\n0,1\n-1,0\n0,-1\n0,0\n", 26);
    const char *L = tu_lnkit();
    assert_int_equal(tu_run(&a, "cd '%s' && '%s' select --keys k.csv 2>/dev/null", dir, L), 0);
    assert_int_equal(tu_run(&b, "cd '%s' && '%s' select --keys k.csv -o s.csv --quiet && cat s.csv "
                            "&& test -s s.meta.json", dir, L), 0);
    assert_string_equal(a, b);
    assert_string_equal(a, "index,selectable\n0,1\n1,1\n2,1\n3,1\n4,0\n");
    free(a);
    free(b);
    assert_int_equal(tu_run(&a, "'%s' select --help", L), 0);
    assert_non_null(strstr(a, "(1e-12)"));
    assert_true(LNK_GEOM_SEL_TOL == 1e-12);
    free(a);
}

/* The progress lines in out (stderr of a run under LNK_TEST_PROGRESS=0, a
 * line at every report): each "PREFIX P% done  E s (about T left)", P never
 * decreasing, the last 100.  Returns their number. */
static int progress_lines(const char *out, const char *prefix)
{
    int n = 0;
    double last = -1;
    for (const char *p = out; *p; n++) {
        const char *nl = strchr(p, '\n');
        char line[300];
        snprintf(line, sizeof line, "%.*s", (int)(nl ? nl - p : (long)strlen(p)), p);
        double pc, e;
        char left[40], close = 0;
        if (strncmp(line, prefix, strlen(prefix)) ||
            sscanf(line + strlen(prefix), "%lf%% done  %lf s (about %39[^)]%c", &pc, &e, left,
                   &close) != 4 || close != ')' || !strstr(left, " left") || pc < last || e < 0)
            fail_msg("not a progress line of '%s' (after %.0f%%): '%s'", prefix, last, line);
        last = pc;
        p = nl ? nl + 1 : p + strlen(p);
    }
    if (n && last != 100)
        fail_msg("%s: the last progress line says %.0f%%, not 100%%", prefix, last);
    return n;
}

/* eval, hvp, vector --gradient and select report their progress (every
 * LNK_TEST_PROGRESS seconds, a test build's setting; 5 s otherwise, so
 * these short runs print nothing), and the results stay the same. */
static void test_progress(void **s)
{
    (void)s;
    setup_files();
    char dir[600], *a, *b;
    snprintf(dir, sizeof dir, "%s/progress", tu_tmpdir());
    mkdir(dir, 0777);
    tu_write_file(tu_path("progress/k.csv"), "1,0\n0,1\n-1,0\n0,-1\n0,0\n", 22);
    const char *L = tu_lnkit(), *C = tu_path("w.json"), *W = tu_path("w.safetensors"),
               *B = tu_path("b.safetensors");
    /* L = 2 lm: 4 units a sweep; eval: a forward and a reverse sweep per
     * chunk, hvp --repeat 2 (pass kept): one primal pass, two tangent ones */
    struct { const char *prefix, *cmd, *result; int lines; } c[] = {
        {"lnkit eval: ", "eval --config %1$s --weights %2$s --batch %3$s --batch %3$s", "cat e.csv",
         16},
        {"lnkit vector: ", "vector --config %1$s --weights %2$s --batch %3$s --gradient "
         "-o g.safetensors", "od -c g.safetensors", 8},
        {"lnkit hvp: ", "hvp --config %1$s --weights %2$s --batch %3$s --vector %2$s --repeat 2 "
         "-o h.safetensors", "od -c h.safetensors", 24},
        {"lnkit select: ", "select --keys k.csv -o sel.csv", "cat sel.csv", 5},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char cmd[1500], fmt[400];
        snprintf(fmt, sizeof fmt, "%s", c[i].cmd);
        snprintf(cmd, sizeof cmd, fmt, C, W, B);
        if (i == 0)
            strcat(cmd, " -o e.csv");
        /* stderr but the timing (and the progress lines) and the result: the same */
        assert_int_equal(tu_run(&a, "cd '%s' && '%s' %s 2>err >/dev/null && "
                                "grep -v median err; %s", dir, L, cmd, c[i].result), 0);
        if (strstr(a, " done  "))
            fail_msg("%s: a progress line in a short run: %s", cmd, a);
        assert_int_equal(tu_run(&b, "cd '%s' && LNK_TEST_PROGRESS=0 '%s' %s 2>err >/dev/null && "
                                "grep -v 'median\\| done  ' err; %s", dir, L, cmd, c[i].result),
                         0);
        assert_string_equal(a, b);
        free(a);
        free(b);
        assert_int_equal(tu_run(&a, "cd '%s' && grep ' done  ' err", dir), 0);
        int n = progress_lines(a, c[i].prefix);
        if (n != c[i].lines)
            fail_msg("%s: %d progress lines, expected %d:\n%s", cmd, n, c[i].lines, a);
        free(a);
    }
    assert_int_equal(tu_run(&a, "LNK_TEST_PROGRESS=soon '%s' select --keys %s/k.csv 2>&1", L,
                            dir), 2);
    assert_string_equal(a, "lnkit select: LNK_TEST_PROGRESS: expected seconds >= 0, got 'soon'\n");
    free(a);
}

/* eigs, trace and density report their first pass over the data (the
 * chunks' primal passes and the first product: 4 sweeps of 4 units a chunk
 * of the L = 2 lm for H v or G v, 5 for F v, G's reverse sweep after H v's)
 * as eval does; a short run, or -q, prints none; the results stay the same. */
static void test_first_pass(void **s)
{
    (void)s;
    setup_files();
    char *a, *b;
    const char *L = tu_lnkit(), *C = tu_path("w.json"), *W = tu_path("w.safetensors"),
               *B = tu_path("b.safetensors"), *d = tu_tmpdir();
    struct { const char *cmd, *args; int lines; } c[] = {
        {"eigs", "-k 1 --max-steps 4", 16},
        {"trace", "--probes 2 --batch %3$s", 32},
        {"density", "--runs 1 --steps 3 --operator ggn", 16},
        {"eigs", "-k 1 --max-steps 4 --operator functional --cache-mb 0", 20},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char args[600], cmd[1500], prefix[80];
        snprintf(args, sizeof args, c[i].args, C, W, B);
        snprintf(cmd, sizeof cmd, "'%s' %s --config %s --weights %s --batch %s %s", L,
                 c[i].cmd, C, W, B, args);
        snprintf(prefix, sizeof prefix, "lnkit %s: first pass over the data: ", c[i].cmd);
        for (int q = 0; q < 3; q++) { /* the hook; none (a short run); the hook and -q */
            assert_int_equal(tu_run(&a, "cd '%s' && %s %s -o fp%d.csv %s 2>fp.err >/dev/null; "
                                    "grep ' done  ' fp.err || true", d, q == 1 ? "" :
                                    "LNK_TEST_PROGRESS=0", cmd, q, q == 2 ? "-q" : ""), 0);
            int n = progress_lines(a, prefix);
            if (n != (q ? 0 : c[i].lines))
                fail_msg("%s: %d progress lines, expected %d:\n%s", cmd, n, q ? 0 : c[i].lines,
                         a);
            free(a);
        }
        assert_int_equal(tu_run(&a, "cd '%s' && cat fp0.csv", d), 0);
        for (int q = 1; q < 3; q++) {
            assert_int_equal(tu_run(&b, "cd '%s' && cat fp%d.csv", d, q), 0);
            assert_string_equal(a, b);
            free(b);
        }
        free(a);
    }
}

/* hvp --repeat N --json: the timings on standard output, under --quiet too;
 * the median over products 2..N when the primal pass is kept. */
static void test_hvp_timing(void **s)
{
    (void)s;
    setup_files();
    const char *L = tu_lnkit(), *C = tu_path("w.json"), *W = tu_path("w.safetensors"),
               *B = tu_path("b.safetensors"), *d = tu_tmpdir();
    char *a;
    const char *kept[] = {"", " --cache-mb 0"};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tu_run(&a, "cd '%s' && '%s' hvp --config %s --weights %s --batch %s "
                                "--vector %s --repeat 3 --json --quiet -o hj.safetensors%s 2>&1",
                                d, L, C, W, B, W, kept[k]), 0);
        const char *want[] = {"{\n  \"products\": 3,\n  \"timed\": ",
                              k ? "\"timed\": 3," : "\"timed\": 2,", "\"median_seconds\": ",
                              "\"min_seconds\": ", "\"max_seconds\": ",
                              k ? "\"primal_pass_kept\": false" : "\"primal_pass_kept\": true",
                              "\"first_seconds\": "};
        for (size_t i = 0; i < sizeof want / sizeof *want; i++)
            if (!strstr(a, want[i]))
                fail_msg("hvp --repeat 3 --json%s: no '%s' in '%s'", kept[k], want[i], a);
        free(a);
    }
    /* one product: timed as it ran, with its primal pass */
    assert_int_equal(tu_run(&a, "cd '%s' && '%s' hvp --config %s --weights %s --batch %s "
                            "--vector %s --json -o hj.safetensors 2>&1", d, L, C, W, B, W), 0);
    assert_non_null(strstr(a, "{\n  \"products\": 1,\n  \"timed\": 1,"));
    free(a);
    assert_int_equal(tu_run(&a, "cd '%s' && '%s' hvp --config %s --weights %s --batch %s "
                            "--vector %s --repeat 2 --json -o - 2>&1 >/dev/null", d, L, C, W, B, W),
                     2);
    assert_non_null(strstr(a, "lnkit hvp: -o - and --json would both write standard output"));
    free(a);
}

static void test_help(void **s)
{
    (void)s;
    const char *cmds[] = {"", "init", "batch", "eval", "hvp", "params", "vector"};
    for (int i = 0; i < 7; i++) {
        char *out;
        int st = tu_run(&out, "'%s' %s --help", tu_lnkit(), cmds[i]);
        assert_int_equal(st, 0);
        assert_non_null(strstr(out, "usage: lnkit"));
        if (i > 0) /* defaults are shown for the config flags */
            assert_non_null(strstr(out, "(layernorm)"));
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_matches_library),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_config_contract),
        cmocka_unit_test(test_quiet_and_help),
        cmocka_unit_test(test_params_vector), cmocka_unit_test(test_params_output),
        cmocka_unit_test(test_select_output),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_first_pass),
        cmocka_unit_test(test_hvp_timing),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
