/* Curvature of real (small) models: Lanczos top/bottom-5 against LAPACK dsyevr
 * on the dense Hessian built from H e_i, for the whole model and for a block;
 * Hutchinson / Hutch++ traces within 4 standard errors of the exact trace;
 * the CLI's eigs / trace / density on the same model, and their bad input. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "lnkit/provenance.h"
#include "lnkit/sha256.h"
#include "testutil.h"

typedef struct {
    lnk_config c;
    lnk_model *m;
    double *th;
    lnk_batch b;
} small;

static void small_open(small *s, const char *task, const char *pos)
{
    char t[32], p[32];
    snprintf(t, sizeof t, "task=%s", task);
    snprintf(p, sizeof p, "norm_pos=%s", pos);
    s->c = tu_config(t, p, "d=8", "h=2", "L=2", "d_ff=16", "V=13", "seed=2", NULL);
    s->m = lnk_model_alloc(&s->c);
    assert_non_null(s->m);
    s->th = malloc(sizeof(double) * lnk_model_n_params(s->m));
    assert_int_equal(lnk_model_init_params(s->m, s->th), LNK_OK);
    assert_int_equal(lnk_batch_synthetic(s->m, 4, 6, 9, &s->b), LNK_OK);
}

static void small_close(small *s)
{
    lnk_batch_free(&s->b);
    free(s->th);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}

/* Dense matrix of an operator (columns = A e_j) and its eigenvalues (ascending). */
static double *dense_eigs(const lnk_operator *op, double *trace)
{
    size_t n = op->n;
    double *A = malloc(sizeof(double) * n * n), *e = calloc(n, sizeof(double));
    for (size_t j = 0; j < n; j++) {
        e[j] = 1;
        assert_int_equal(op->apply(op->ctx, e, A + j * n), LNK_OK);
        e[j] = 0;
    }
    *trace = 0;
    for (size_t i = 0; i < n; i++)
        *trace += A[i * n + i];
    double *w = malloc(sizeof(double) * n), *Z = NULL;
    lapack_int m, *isuppz = malloc(sizeof(lapack_int) * 2 * n);
    int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'N', 'A', 'U', (lapack_int)n, A, (lapack_int)n, 0,
                              0, 0, 0, 0.0, &m, w, Z, 1, isuppz);
    assert_int_equal(info, 0);
    assert_int_equal(m, (lapack_int)n);
    free(A);
    free(e);
    free(isuppz);
    return w;
}

/* top-5 and bottom-5 by lnk_eigs against dsyevr: 1e-8 relative. */
static void compare_extremes(const lnk_operator *op, const char *what)
{
    double tr;
    double *w = dense_eigs(op, &tr);
    size_t n = op->n;
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 5;
    o.k_bottom = 5;
    o.tol = 1e-10;
    o.max_steps = (int)n;
    o.seed = 3;
    lnk_eigs_result r;
    assert_int_equal(lnk_eigs(op, &o, &r), LNK_OK);
    assert_int_equal(r.n_top, 5);
    assert_int_equal(r.n_bottom, 5);
    double worst = 0;
    for (int i = 0; i < 5; i++) {
        double et = fabs(r.value[i] - w[n - 1 - i]) / fabs(w[n - 1 - i]);
        double eb = fabs(r.value[5 + i] - w[i]) / fabs(w[i]);
        worst = fmax(worst, fmax(et, eb));
        assert_true(r.converged[i] && r.converged[5 + i]);
    }
    /* full reorthogonalisation at every step: the same pairs to 1e-10 of ||H|| */
    lnk_eigs_result f;
    o.reorth = LNK_REORTH_ALWAYS;
    assert_int_equal(lnk_eigs(op, &o, &f), LNK_OK);
    assert_int_equal(f.k, r.k);
    double dv = 0, dr = 0;
    for (int i = 0; i < r.k; i++) {
        dv = fmax(dv, fabs(r.value[i] - f.value[i]) / f.scale);
        dr = fmax(dr, fabs(r.residual[i] - f.residual[i]) / f.scale);
    }
    print_message("%s: n = %zu, top %.6g .. bottom %.6g, Lanczos %d steps (%s), max rel. error "
                  "%.2e vs dsyevr; partial vs full reorthogonalisation: values %.1e, residuals "
                  "%.1e of ||H||, basis rows read %.0f vs %.0f\n", what, n, w[n - 1], w[0],
                  r.steps, lnk_eigs_stop_name(r.stop), worst, dv, dr, r.reorth_rows,
                  f.reorth_rows);
    assert_true(worst <= 1e-8);
    assert_true(dv <= 1e-10 && dr <= 1e-10);
    assert_true(r.reorth_rows < f.reorth_rows);
    lnk_eigs_result_free(&f);
    lnk_eigs_result_free(&r);
    free(w);
}

static void test_eigs_vs_dense(void **s)
{
    (void)s;
    const char *tasks[] = {"lm", "cls", "seq2seq"};
    const char *poss[] = {"post", "pre"};
    for (int it = 0; it < 3; it++)
        for (int ip = 0; ip < 2; ip++) {
            small sm;
            small_open(&sm, tasks[it], poss[ip]);
            lnk_hessian *h = lnk_hessian_alloc(sm.m, sm.th, &sm.b, 1, NULL);
            assert_non_null(h);
            lnk_operator op = lnk_hessian_operator(h);
            char what[64];
            snprintf(what, sizeof what, "%s %s", tasks[it], poss[ip]);
            compare_extremes(&op, what);
            lnk_hessian_free(h);
            /* a block: every attention tensor */
            h = lnk_hessian_alloc(sm.m, sm.th, &sm.b, 1, "*.attn.*");
            op = lnk_hessian_operator(h);
            snprintf(what, sizeof what, "%s %s block *.attn.*", tasks[it], poss[ip]);
            compare_extremes(&op, what);
            lnk_hessian_free(h);
            small_close(&sm);
        }
}

/* Traces within 4 standard errors of the exact trace, for 10 fixed seeds. */
static void test_trace_vs_exact(void **s)
{
    (void)s;
    small sm;
    small_open(&sm, "lm", "post");
    lnk_hessian *h = lnk_hessian_alloc(sm.m, sm.th, &sm.b, 1, NULL);
    lnk_operator op = lnk_hessian_operator(h);
    double tr;
    free(dense_eigs(&op, &tr));
    for (int method = 0; method < 2; method++)
        for (uint64_t seed = 0; seed < 10; seed++) {
            lnk_trace_opts o;
            lnk_trace_opts_default(&o);
            o.method = method;
            o.probes = 60;
            o.seed = seed;
            lnk_trace_result r;
            assert_int_equal(lnk_trace(&op, &o, &r), LNK_OK);
            if (!(fabs(r.trace - tr) <= 4 * r.std_error))
                fail_msg("%s seed %d: %.6g +- %.3g, exact %.6g", lnk_trace_method_name(method),
                         (int)seed, r.trace, r.std_error, tr);
            if (seed == 0)
                print_message("%s, 60 products: %.6g +- %.3g (exact trace %.6g)\n",
                              lnk_trace_method_name(method), r.trace, r.std_error, tr);
        }
    lnk_hessian_free(h);
    small_close(&sm);
}

static void test_cli(void **s)
{
    (void)s;
    char *out;
    const char *L = tu_lnkit();
    int st = tu_run(&out, "cd '%s' && '%s' init --d 8 --h 2 --L 1 --V 13 -o w.safetensors && "
                    "'%s' batch --synthetic --V 13 --rows 4 --len 6 -o b.safetensors",
                    tu_tmpdir(), L, L);
    assert_int_equal(st, 0);
    free(out);
    const char *common = "--config w.json --weights w.safetensors --batch b.safetensors";
    /* eigs, with two chunks: the CSV has 3 top + 3 bottom rows, all converged */
    st = tu_run(&out, "cd '%s' && '%s' eigs %s --chunk 2 -k 3 --which both --tol 1e-9 -o e.csv "
                "--vectors v.safetensors --quiet", tu_tmpdir(), L, common);
    assert_int_equal(st, 0);
    free(out);
    char *csv = tu_read_file(tu_path("e.csv"), NULL);
    assert_non_null(csv);
    assert_true(strncmp(csv, "which,index,eigenvalue,residual,converged\n", 42) == 0);
    int rows = 0, conv = 0;
    for (char *p = strchr(csv, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        rows++;
        char *e = strchr(p + 1, '\n');
        conv += e && e[-1] == '1';
    }
    assert_int_equal(rows, 6);
    assert_int_equal(conv, 6);
    free(csv);
    char *meta = tu_read_file(tu_path("e.meta.json"), NULL);
    assert_non_null(meta);
    assert_non_null(strstr(meta, "\"chunks\": 2"));
    free(meta);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(tu_path("v.safetensors"), &f), LNK_OK);
    assert_non_null(lnk_st_get(f, "vectors"));
    lnk_st_free(f);
    /* trace --json and density */
    st = tu_run(&out, "cd '%s' && '%s' trace %s --probes 20 --json --quiet", tu_tmpdir(), L, common);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "\"trace\""));
    assert_non_null(strstr(out, "\"stderr\""));
    assert_non_null(strstr(out, "\"probes\": 20"));
    free(out);
    st = tu_run(&out, "cd '%s' && '%s' density %s --runs 2 --steps 20 --sigma 0.1 -o d.csv "
                "--nodes n.csv --quiet", tu_tmpdir(), L, common);
    assert_int_equal(st, 0);
    free(out);
    char *dmeta = tu_read_file(tu_path("d.meta.json"), NULL);
    assert_non_null(dmeta);
    assert_non_null(strstr(dmeta, "\"integral\""));
    /* --nodes has its sidecar too, the same record as -o's */
    json_t *nm = tu_load_json(tu_path("n.meta.json")), *dm0 = json_loads(dmeta, 0, NULL);
    assert_non_null(nm);
    assert_string_equal(json_string_value(json_object_get(nm, "command")), "density");
    assert_string_equal(json_string_value(json_object_get(nm, "nodes_file")), "n.csv");
    assert_true(json_equal(json_object_get(nm, "integral"), json_object_get(dm0, "integral")));
    assert_true(json_equal(json_object_get(nm, "inputs"), json_object_get(dm0, "inputs")));
    json_decref(nm), json_decref(dm0);
    free(dmeta);
    /* without a width: --sigma-fraction 0.01, as blocks and Python (one default) */
    st = tu_run(&out, "cd '%s' && '%s' density %s --runs 2 --steps 20 -o d2.csv --quiet",
                tu_tmpdir(), L, common);
    assert_int_equal(st, 0);
    free(out);
    json_t *dm = tu_load_json(tu_path("d2.meta.json"));
    assert_string_equal(json_string_value(json_object_get(dm, "sigma_option")), "sigma-fraction");
    assert_true(json_real_value(json_object_get(dm, "sigma_value")) == 0.01);
    json_decref(dm);
    /* bad input: exit 2, the named problem, no output file */
    struct {
        const char *args, *words;
    } bad[] = {
        {"eigs %s -k 100000 -o x.csv", "larger than the operator"},
        {"eigs %s -k 5 --which both --max-steps 4 -o x.csv", "--max-steps"},
        {"eigs %s --which sideways -o x.csv", "--which"},
        {"eigs %s --block 'dec.9.*' -o x.csv", "dec.0.ffn.w2"},
        {"density %s --sigma 0 -o x.csv", "--sigma"},
        {"density %s --sigma -1 -o x.csv", "--sigma"},
        {"density %s --sigma 0.1 --sigma-fraction 0.01 -o x.csv", "only one"},
        {"density %s --sigma-kappa 1 -o x.csv", "--sigma-kappa"},
        {"trace %s --probes 1", "--probes"},
        {"trace %s --method exact", "--method"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, bad[i].args, common);
        char *err;
        st = tu_run(&err, "cd '%s' && rm -f x.csv && '%s' %s --quiet 2>&1 >/dev/null; s=$?; "
                    "test ! -e x.csv || echo LEFT-FILE; exit $s", tu_tmpdir(), L, args);
        if (st != 2 || !strstr(err, bad[i].words) || strstr(err, "LEFT-FILE"))
            fail_msg("lnkit %s: exit %d, stderr '%s' (expected exit 2 and '%s')", args, st, err,
                     bad[i].words);
        free(err);
    }
}

/* The record a safetensors output embeds (docs/MODEL.md section 9): parsed
 * from the file f of folder rec, its command and producer; NULL-free. */
static json_t *record_of(const char *file, const char *command)
{
    char p[700];
    snprintf(p, sizeof p, "%s/rec/%s", tu_tmpdir(), file);
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(p, &f), LNK_OK);
    const char *text = lnk_st_meta(f, "lnkit");
    if (!text)
        fail_msg("%s: no 'lnkit' key in __metadata__", file);
    json_error_t e;
    json_t *r = json_loads(text, 0, &e);
    if (!r)
        fail_msg("%s: the record is not JSON: %s", file, e.text);
    lnk_st_free(f);
    assert_string_equal(json_string_value(json_object_get(r, "command")), command);
    char prod[64];
    snprintf(prod, sizeof prod, "lnkit %s", LNK_VERSION);
    assert_string_equal(json_string_value(json_object_get(r, "producer")), prod);
    assert_string_equal(json_string_value(json_object_get(r, "git_commit")), lnk_git_commit());
    assert_non_null(json_string_value(json_object_get(r, "content")));
    return r;
}

/* identity item name of record r, or "" */
static const char *ident(const json_t *r, const char *name)
{
    const char *v = json_string_value(json_object_get(json_object_get(r, "identity"), name));
    return v ? v : "";
}

static void sha_of(const char *file, char hex[65])
{
    char p[700];
    uint64_t n;
    snprintf(p, sizeof p, "%s/rec/%s", tu_tmpdir(), file);
    assert_int_equal(lnk_sha256_file(p, hex, &n), LNK_OK);
}

/* hvp reads a vector with no or foreign metadata and refuses, in one line,
 * one whose record is not a string (the header written here from r.safetensors
 * of test_embedded_record's folder). */
static void check_vector_metadata(const char *L)
{
    char *out;
    int st;
    const char *bad[][2] = {{"", "0"},
                            {"\"__metadata__\":{\"lnkit\":\"not json {\",\"x\":\"y\"},", "0"},
                            {"\"__metadata__\":{\"lnkit\":3},", "2"}};
    for (int i = 0; i < 3; i++) {
        st = tu_run(&out, "cd '%s/rec' && python3 -c '\nimport json, struct, sys\n"
                    "b = open(\"r.safetensors\", \"rb\").read()\n"
                    "n = struct.unpack(\"<Q\", b[:8])[0]\n"
                    "h = json.loads(b[8:8 + n]); h.pop(\"__metadata__\")\n"
                    "t = (\"{\" + sys.argv[1] +\n"
                    "     json.dumps(h, separators=(\",\", \":\"))[1:]).encode()\n"
                    "t += b\" \" * ((8 - len(t) %% 8) %% 8)\n"
                    "open(\"f.safetensors\", \"wb\").write(\n"
                    "    struct.pack(\"<Q\", len(t)) + t + b[8 + n:])' '%s' && "
                    "'%s' hvp --config w.json --weights w.safetensors --batch b.safetensors "
                    "--vector f.safetensors -q -o fh.safetensors 2>&1; echo \"exit $?\"",
                    tu_tmpdir(), bad[i][0], L);
        char want[16];
        snprintf(want, sizeof want, "exit %s\n", bad[i][1]);
        int refused = bad[i][1][0] == '2';
        if (st != 0 || !strstr(out, want) ||
            (refused && (tu_n_lines(out) != 2 || !strstr(out, "__metadata__"))))
            fail_msg("vector with metadata '%s': expected %s, got: %s", bad[i][0], want, out);
        free(out);
    }
}

/* eigs --vectors, eval --grad-out, hvp -o, vector -o and init -o carry the
 * record: it parses and names the command, the commit, the configuration's
 * and the inputs' SHA-256 and the seeds; the files are the same bytes on two
 * runs and on 1 and 2 threads; hvp reads a vector with foreign or no
 * metadata, and refuses one whose metadata value is not a string in one line. */
static void test_embedded_record(void **s)
{
    (void)s;
    char *out;
    const char *L = tu_lnkit();
    int st = tu_run(&out, "mkdir -p '%s/rec' && cd '%s/rec' && L='%s' && "
                    "$L init --d 8 --h 2 --L 1 --V 13 --seed 5 -q -o w.safetensors && "
                    "$L batch --synthetic --V 13 --rows 4 --len 6 -q -o b.safetensors && "
                    "M='--config w.json --weights w.safetensors --batch b.safetensors -q' && "
                    "$L init --config w.json -q -o w2.safetensors --config-out w2.json && "
                    "cmp w.safetensors w2.safetensors && "
                    "$L vector --config w.json --random --rng-seed 3 -q -o r.safetensors && "
                    /* run 1 and 3 on 1 thread, run 2 on 2 */
                    "for t in 1 2 3; do n=$(( t == 2 ? 2 : 1 )); export OPENBLAS_NUM_THREADS=$n; "
                    "$L eigs $M -k 2 --rng-seed 11 --tol 1e-6 --threads $n -o e.csv "
                    "--vectors v$t.safetensors && "
                    "$L eval $M --threads $n -o /dev/null --grad-out g$t.safetensors && "
                    "$L hvp $M --threads $n --vector r.safetensors -o h$t.safetensors && "
                    "$L vector --config w.json --random --rng-seed 3 -q -o r$t.safetensors && "
                    "cmp r.safetensors r$t.safetensors || exit 1; done && "
                    "for x in v g h; do for t in 2 3; do cmp ${x}1.safetensors ${x}$t.safetensors "
                    "|| exit 1; done; done && "
                    "$L vector $M --gradient --block 'dec.0.*' -o vg.safetensors && "
                    "$L hvp $M --vector r.safetensors --block 'dec.0.*' -o hb.safetensors",
                    tu_tmpdir(), tu_tmpdir(), L);
    if (st != 0)
        fail_msg("runs: exit %d: %s", st, out);
    free(out);

    /* what the records say, checked against the inputs themselves */
    char wsha[65], bsha[65], rsha[65];
    sha_of("w.safetensors", wsha);
    sha_of("b.safetensors", bsha);
    sha_of("r.safetensors", rsha);
    lnk_config c;
    lnk_config_default(&c);
    char cp[700];
    snprintf(cp, sizeof cp, "%s/rec/w.json", tu_tmpdir());
    assert_int_equal(lnk_config_load_json(&c, cp), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    char *cj = lnk_config_to_json(&c, 0, NULL, 0), csha[65];
    unsigned char d[32];
    lnk_sha256 h;
    lnk_sha256_init(&h);
    lnk_sha256_update(&h, cj, strlen(cj));
    lnk_sha256_final(&h, d);
    lnk_sha256_hex(d, csha);
    free(cj);
    lnk_config_clear(&c);
    /* docs/MODEL.md s9's rule, from the file's text: w.json up to its n_params, closed */
    size_t wn;
    char *wj = tu_read_file(cp, &wn), *cut = strstr(wj, ",\n  \"n_params\"");
    assert_non_null(cut);
    strcpy(cut, "\n}\n");
    char tsha[65];
    lnk_sha256_init(&h);
    lnk_sha256_update(&h, wj, strlen(wj));
    lnk_sha256_final(&h, d);
    lnk_sha256_hex(d, tsha);
    free(wj);
    assert_string_equal(tsha, csha);
    const char *cfg = "the configuration (SHA-256 of its resolved keys)";
    json_t *rw = record_of("w.safetensors", "lnkit init"),
           *rv = record_of("v1.safetensors", "lnkit eigs"),
           *rg = record_of("g1.safetensors", "lnkit eval"),
           *rh = record_of("h1.safetensors", "lnkit hvp"),
           *rr = record_of("r.safetensors", "lnkit vector");
    json_t *all[] = {rw, rv, rg, rh, rr};
    for (int i = 0; i < 5; i++) {
        assert_string_equal(ident(all[i], cfg), csha);
        /* "init" only where it made the tensors: the others read --weights or use none */
        json_t *seeds = json_object_get(all[i], "seeds"), *init = json_object_get(seeds, "init");
        if (i == 0)
            assert_int_equal(json_integer_value(init), 5);
        else
            assert_null(init);
        /* nothing of the run's circumstances */
        const char *text = json_dumps(all[i], 0);
        assert_null(strstr(text, "thread"));
        assert_null(strstr(text, tu_tmpdir()));
        assert_null(strstr(text, ".safetensors"));
        free((void *)text);
    }
    for (int i = 1; i < 4; i++) {
        assert_string_equal(ident(all[i], "--weights (SHA-256)"), wsha);
        assert_string_equal(ident(all[i], "the number of --batch files"), "1");
        assert_string_equal(ident(all[i], "--batch file 1 (SHA-256)"), bsha);
    }
    assert_string_equal(ident(rv, "-k"), "2");
    /* the options given, numbers as --help shows them; defaults by their absence */
    assert_null(json_object_get(json_object_get(rv, "identity"), "--which"));
    assert_null(json_object_get(json_object_get(rv, "identity"), "--chunk"));
    assert_null(json_object_get(json_object_get(rh, "identity"), "--block"));
    assert_string_equal(ident(rv, "--tol"), "1e-06");
    assert_string_equal(ident(rv, "--rng-seed"), "11");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rv, "seeds"), "rng")), 11);
    assert_string_equal(ident(rh, "--vector (SHA-256)"), rsha);
    assert_string_equal(ident(rr, "--random"), "true");
    assert_string_equal(ident(rr, "--rng-seed"), "3");
    assert_null(json_object_get(json_object_get(rr, "identity"), "the number of --batch files"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rr, "seeds"), "rng")), 3);
    for (int i = 1; i < 4; i++) /* eigs draws start vectors; eval and hvp draw nothing */
        assert_int_equal(json_object_size(json_object_get(all[i], "seeds")), i == 1);
    for (int i = 0; i < 5; i++)
        json_decref(all[i]);
    /* --gradient refuses --rng-seed, so its record has none; --block alike in vector and hvp */
    json_t *rvg = record_of("vg.safetensors", "lnkit vector"),
           *rhb = record_of("hb.safetensors", "lnkit hvp");
    assert_null(json_object_get(json_object_get(rvg, "identity"), "--rng-seed"));
    assert_null(json_object_get(json_object_get(rvg, "identity"), "--random"));
    assert_string_equal(ident(rvg, "--block"), "dec.0.*");
    assert_string_equal(ident(rhb, "--block"), "dec.0.*");
    json_decref(rvg), json_decref(rhb);

    check_vector_metadata(L);
}

/* lnkit batch's files carry the record too: the synthetic ids' configuration
 * and seed, the text's and vocabulary's SHA-256, the corpus's beside the
 * data set's own metadata (task, counts). */
static void test_embedded_record_batch(void **s)
{
    (void)s;
    char *out;
    int st = tu_run(&out, "mkdir -p '%s/rec' && cd '%s/rec' && L='%s' && "
                    "printf 'a b c\\nd e a\\nb b\\n' > t.txt && printf 'x y\\nz x\\nw\\n' > u.txt && "
                    "$L batch --synthetic --V 13 --rows 3 --len 5 --rng-seed 7 -q -o bs.safetensors && "
                    "$L batch --text t.txt -q -o bt.safetensors --vocab-out t.vocab && "
                    "$L batch --text t.txt --vocab-in t.vocab --first 1 -q -o bt2.safetensors && "
                    "$L batch --src t.txt --tgt u.txt --keep-order -q -o bp.safetensors",
                    tu_tmpdir(), tu_tmpdir(), tu_lnkit());
    if (st != 0)
        fail_msg("batch runs: exit %d: %s", st, out);
    free(out);
    char tsha[65], usha[65], vsha[65];
    sha_of("t.txt", tsha);
    sha_of("u.txt", usha);
    sha_of("t.vocab", vsha);
    json_t *rs = record_of("bs.safetensors", "lnkit batch"),
           *rt = record_of("bt2.safetensors", "lnkit batch"),
           *rp = record_of("bp.safetensors", "lnkit batch");
    assert_string_equal(ident(rs, "--rng-seed"), "7");
    json_t *ss = json_object_get(rs, "seeds"); /* the ids' seed, not the unused init one */
    assert_int_equal(json_integer_value(json_object_get(ss, "rng")), 7);
    assert_int_equal(json_object_size(ss), 1);
    assert_int_equal(json_object_size(json_object_get(rt, "seeds")), 0); /* draws nothing */
    /* options --text and --src refuse are not in their records */
    for (int i = 0; i < 2; i++) {
        json_t *id = json_object_get(i ? rp : rt, "identity");
        assert_null(json_object_get(id, "--len"));
        assert_null(json_object_get(id, "--rng-seed"));
    }
    assert_int_equal(json_object_size(json_object_get(rp, "seeds")), 0);
    assert_string_equal(ident(rs, "--rows"), "3");
    assert_string_equal(ident(rs, "--len"), "5");
    assert_int_equal(strlen(ident(rs, "the configuration (SHA-256 of its resolved keys)")), 64);
    assert_string_equal(ident(rt, "--text (SHA-256)"), tsha);
    assert_string_equal(ident(rt, "--vocab-in (SHA-256)"), vsha);
    assert_string_equal(ident(rt, "--first"), "1");
    assert_string_equal(ident(rp, "--src (SHA-256)"), tsha);
    assert_string_equal(ident(rp, "--tgt (SHA-256)"), usha);
    assert_string_equal(ident(rp, "--keep-order"), "true");
    assert_string_equal(ident(rp, "--joint-vocab"), ""); /* at its default: not named */
    json_decref(rs), json_decref(rt), json_decref(rp);
    /* the data set's own metadata stays */
    char p[700];
    snprintf(p, sizeof p, "%s/rec/bp.safetensors", tu_tmpdir());
    lnk_st_file *f;
    assert_int_equal(lnk_st_read(p, &f), LNK_OK);
    assert_string_equal(lnk_st_meta(f, "task"), "seq2seq");
    assert_string_equal(lnk_st_meta(f, "pairs"), "3");
    /* its own keys name the files as the command line spelled them (docs/MODEL.md s9) */
    assert_string_equal(lnk_st_meta(f, "src_file"), "t.txt");
    assert_string_equal(lnk_st_meta(f, "vocab_tgt"), "bp.tgt.vocab");
    lnk_st_free(f);
}

/* eval and vector --gradient with --chunk: the data set's loss and gradient
 * as token-weighted sums over chunks of rows, equal to the whole file's to
 * rounding (rel 1e-12), for chunks of 1, 3 and 7 (= the file) rows. */
static void test_chunked_gradient(void **s)
{
    (void)s;
    char *out, d[600];
    const char *L = tu_lnkit();
    snprintf(d, sizeof d, "%s/chunk", tu_tmpdir());
    int st = tu_run(&out, "mkdir -p '%s' && cd '%s' && '%s' init --d 8 --h 2 --L 1 --V 13 "
                    "-o w.safetensors -q && '%s' batch --synthetic --V 13 --rows 7 --len 6 -o "
                    "b.safetensors -q && '%s' vector --config w.json --gradient --weights "
                    "w.safetensors --batch b.safetensors -o g.safetensors -q", d, d, L, L, L);
    assert_int_equal(st, 0);
    free(out);
    lnk_config c;
    char p[700];
    snprintf(p, sizeof p, "%s/w.json", d);
    lnk_config_default(&c);
    assert_int_equal(lnk_config_load_json(&c, p), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    lnk_model *m = lnk_model_alloc(&c);
    int lay;
    size_t n = lnk_model_n_params(m);
    double *g = malloc(sizeof(double) * n), *gc = malloc(sizeof(double) * n), ref[3], gmax = 0;
    snprintf(p, sizeof p, "%s/g.safetensors", d);
    assert_int_equal(lnk_vector_load(p, m, g, &lay), LNK_OK);
    for (size_t i = 0; i < n; i++)
        gmax = fmax(gmax, fabs(g[i]));
    const char *cs[] = {"", "--chunk 1", "--chunk 3", "--chunk 7"};
    for (int k = 0; k < 4; k++) {
        st = tu_run(&out, "cd '%s' && '%s' eval --config w.json --weights w.safetensors --batch "
                    "b.safetensors %s --json -q && '%s' vector --config w.json --gradient "
                    "--weights w.safetensors --batch b.safetensors %s -o gc.safetensors -q", d,
                    L, cs[k], L, cs[k]);
        json_t *j = st == 0 ? json_loads(out, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
        if (!j)
            fail_msg("eval/vector %s: exit %d: %s", cs[k], st, out);
        double v[3] = {json_real_value(json_object_get(j, "loss")),
                       (double)json_integer_value(json_object_get(j, "n_scored")),
                       json_real_value(json_object_get(j, "grad_norm_total"))};
        for (int q = 0; q < 3; q++) {
            if (!k)
                ref[q] = v[q];
            else if (!(fabs(v[q] - ref[q]) <= 1e-12 * fabs(ref[q])) || !(ref[q] > 0))
                fail_msg("eval %s: %.17g, without --chunk %.17g", cs[k], v[q], ref[q]);
        }
        json_decref(j);
        free(out);
        snprintf(p, sizeof p, "%s/gc.safetensors", d);
        assert_int_equal(lnk_vector_load(p, m, gc, &lay), LNK_OK);
        for (size_t i = 0; i < n; i++)
            if (!(fabs(gc[i] - g[i]) <= 1e-12 * gmax))
                fail_msg("vector --gradient %s: entry %zu %.17g, without %.17g", cs[k], i, gc[i],
                         g[i]);
    }
    /* eval's sidecar records the data set's pieces as "chunks", as eigs's
     * does: 7 rows in chunks of 3 are 3 chunks a file; whole files one each */
    static const struct { const char *opts; int chunks; } sc[] = {
        {"", 1}, {"--chunk 3", 3}, {"--batch b.safetensors", 2},
        {"--batch b.safetensors --chunk 3", 6}};
    for (int k = 0; k < 4; k++) {
        st = tu_run(&out, "cd '%s' && '%s' eval --config w.json --weights w.safetensors --batch "
                    "b.safetensors %s -o e.csv -q && { '%s' eigs --config w.json --weights "
                    "w.safetensors --batch b.safetensors %s -k 1 --max-steps 3 -o x.csv -q "
                    "2>/dev/null; test $? -le 3; }", d, L, sc[k].opts, L, sc[k].opts);
        if (st != 0)
            fail_msg("eval/eigs %s: exit %d: %s", sc[k].opts, st, out);
        free(out);
        const char *f[2] = {"e.meta.json", "x.meta.json"};
        for (int q = 0; q < 2; q++) {
            snprintf(p, sizeof p, "%s/%s", d, f[q]);
            json_t *j = json_load_file(p, 0, NULL);
            json_t *v = j ? json_object_get(j, "chunks") : NULL;
            if (!json_is_integer(v) || json_integer_value(v) != sc[k].chunks)
                fail_msg("%s of %s: \"chunks\" %s, expected %d", f[q], sc[k].opts,
                         v ? "not that" : "missing", sc[k].chunks);
            json_decref(j);
        }
    }
    free(g), free(gc);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eigs_vs_dense),
        cmocka_unit_test(test_trace_vs_exact),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_embedded_record),
        cmocka_unit_test(test_embedded_record_batch),
        cmocka_unit_test(test_chunked_gradient),
    };
    return cmocka_run_group_tests_name("curvature on models", tests, NULL, NULL);
}
