/* The study kit (see kit.h): errors that name the program and remove
 * unfinished outputs, output directories, CSV outputs with
 * their sidecars, sweeps over the ranks of an MPI job, and the density plot
 * script.  One copy, compiled once, for every study and benchmark. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lnkit/lnkit.h"
#include "lnkit/comm.h"
#include "front/front.h"
#include "kit.h"

/* The program's start (front/front.h: the BLAS kernel, the MPI job, the
 * command line for the sidecars).  Until the study calls cli_setup_done
 * (after its options: every rank parses the same ones, so a bad one is
 * agreed and printed once), a failure is agreed between the ranks; after
 * it, a rank that fails alone ends the job (cli_die). */
void study_start(int *argc, char ***argv, const char *name)
{
    cli_start(argc, argv, name);
}

/* 1 on rank 0 (the one that writes files and prints). */
int study_root(void) { return lnk_comm_rank() == 0; }
int study_ranks(void) { return lnk_comm_size(); }
/* 1 if sweep point i is this rank's. */
int study_mine(long i) { return i % lnk_comm_size() == lnk_comm_rank(); }

/* Record an input file (path, size, SHA-256) for the sidecars, or fail. */
void study_input(const char *path)
{
    if (lnk_prov_input(cli_prov(), path) != LNK_OK)
        cli_die_lib();
}

void study_input_read(const char *path, const lnk_digest *d)
{
    if (lnk_prov_input_digest(cli_prov(), path, d) != LNK_OK)
        cli_die_lib();
}

/* The folders make_dir created, outermost first: at exit those still empty
 * are removed, so a run that fails before writing its results leaves no
 * folder behind ("nothing half-written"); a folder that existed before is
 * never touched. */
static char *made[64];
static int n_made;

static void remove_empty_made(void)
{
    lnk_output_abort_all(); /* this rank's temporary files first (none after a commit) */
    for (int i = n_made - 1; i >= 0; i--)
        rmdir(made[i]); /* fails, as it should, on a folder with files in it */
}

/* mkdir -p dir, or fail (rank 0 only: the other ranks write no files). */
void make_dir(const char *dir)
{
    if (!study_root())
        return;
    if (!*dir)
        cli_die("an empty folder name");
    char *p = strdup(dir);
    if (!p)
        cli_die("out of memory");
    for (char *s = p + 1;; s++) { /* each prefix ending at a '/', then the whole */
        if (*s && *s != '/')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) == 0) {
            if (n_made == 0)
                atexit(remove_empty_made);
            if (n_made < (int)(sizeof made / sizeof *made) && !(made[n_made] = strdup(p)))
                cli_die("out of memory");
            n_made += n_made < (int)(sizeof made / sizeof *made);
        } else if (errno != EEXIST) {
            cli_die("cannot create directory '%s': %s", p, strerror(errno));
        }
        *s = c;
        if (!c)
            break;
    }
    free(p);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        cli_die("cannot create directory '%s': %s", dir,
                stat(dir, &st) != 0 ? strerror(errno) : "a file of that name exists");
}

/* ------------------------------------------------------------ byte buffers
 * Per-point results travel between ranks as byte strings. */

void sbuf_put(study_buf *b, const void *x, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q)
            cli_die("out of memory (%zu bytes)", c);
        b->p = q;
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, x, n);
    b->n += n;
}

void sbuf_free(study_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}


void srd_get(study_rd *r, void *x, size_t n)
{
    if (n > r->n - r->at)
        cli_die("internal: short message between ranks");
    if (n)
        memcpy(x, r->p + r->at, n);
    r->at += n;
}

/* n items of sz bytes into a new malloc'd array (NULL if n is 0). */
void *srd_array(study_rd *r, size_t n, size_t sz)
{
    if (n == 0)
        return NULL;
    if (sz && n > (r->n - r->at) / sz)
        cli_die("internal: short message between ranks");
    void *x = malloc(n * sz);
    if (!x)
        cli_die("out of memory (%zu bytes)", n * sz);
    srd_get(r, x, n * sz);
    return x;
}

/* LNK_FAULT="R:sweep:KIND" (test builds, src/front/fault.c): rank R fails here. */
static void study_fault(void)
{
    if (cli_fault("sweep"))
        cli_die("cannot hand over its points (simulated by LNK_FAULT)");
}

/* ------------------------------------------------------------ CSV outputs
 * A study's CSV output: the rows are kept in memory and written at
 * csv_close through a temporary file (opened at csv_open on rank 0, so an
 * unwritable path fails before the work; removed if the study fails),
 * committed with its .meta.json sidecar.
 *   csv_open   rows of rank 0 only (tables rank 0 computes);
 *   csv_sweep  rows of every rank: call csv_point(o, i) before the rows of
 *              point i; csv_close (collective) writes the header and the
 *              points' rows in point order (rows before the first csv_point
 *              are rank 0's, after the header). */


static void csv_begin_(out_csv *o, const char *path, const char *const *hdr, int n, int sweep)
{
    memset(o, 0, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    o->sweep = sweep;
    lnk_iso_time(o->start, sizeof o->start);
    o->t0 = lnk_now();
    if (study_root()) {
        CLI_CK(lnk_afile_open(&o->a, o->path));
    }
    o->mem = open_memstream(&o->buf, &o->len);
    if (!o->mem)
        cli_die("%s: out of memory", o->path);
    CLI_CK(lnk_csv_begin(&o->c, o->mem, hdr, n));
}

void csv_open(out_csv *o, const char *dir, const char *name,
                            const char *const *hdr, int n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    csv_begin_(o, path, hdr, n, 0);
}

void csv_sweep(out_csv *o, const char *dir, const char *name,
                             const char *const *hdr, int n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    csv_begin_(o, path, hdr, n, 1);
}

void csv_num_or_empty(out_csv *o, double v, int present)
{
    CLI_CK(present && isfinite(v) ? lnk_csv_double(&o->c, v) : lnk_csv_str(&o->c, ""));
}

/* The rows that follow are point i's. */
void csv_point(out_csv *o, long i)
{
    if (o->nseg == o->capseg) {
        o->capseg = o->capseg ? 2 * o->capseg : 16;
        o->seg = realloc(o->seg, sizeof *o->seg * (size_t)o->capseg);
        if (!o->seg)
            cli_die("out of memory");
    }
    off_t at = ftello(o->mem);
    if (at < 0)
        cli_die("%s: %s", o->path, strerror(errno));
    o->seg[o->nseg++] = (study_seg){i, (size_t)at};
}

typedef struct {
    long point;
    int rank, k;
    const char *p;
    size_t n;
} study_piece;

static int study_piece_cmp(const void *a, const void *b)
{
    const study_piece *x = a, *y = b;
    if (x->point != y->point)
        return x->point < y->point ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* Rank 0: append to *to the rows written since the last hand-over -- its
 * own outside any point, then every rank's rows of the points since, in
 * point order (collective for a sweep).  Every rank then counts its buffer
 * as handed over. */
static void csv_take(out_csv *o, study_buf *to)
{
    if (fflush(o->mem) != 0)
        cli_die("%s: out of memory", o->path);
    size_t head = o->nseg ? o->seg[0].start : o->len;
    char *all = NULL;
    size_t *len = NULL;
    study_piece *pc = NULL;
    int npc = 0;
    if (o->sweep) {
        study_fault();
        /* this rank's pieces: point, length, bytes */
        study_buf mine = {0};
        for (int k = 0; k < o->nseg; k++) {
            int64_t pt = o->seg[k].point;
            size_t end = k + 1 < o->nseg ? o->seg[k + 1].start : o->len;
            uint64_t n = end - o->seg[k].start;
            SBUF_PUT(&mine, pt);
            SBUF_PUT(&mine, n);
            sbuf_put(&mine, o->buf + o->seg[k].start, n);
        }
        len = malloc(sizeof(size_t) * (size_t)study_ranks());
        if (!len)
            cli_die("out of memory");
        CLI_CK(lnk_comm_gather_bytes(mine.p ? mine.p : "", mine.n, &all, len, 0));
        sbuf_free(&mine);
        if (study_root()) {
            size_t off = 0, cap = 0;
            for (int r = 0; r < study_ranks(); r++) {
                study_rd rd = {all + off, len[r], 0};
                for (int k = 0; rd.at < rd.n; k++) {
                    int64_t pt;
                    uint64_t n;
                    SRD_GET(&rd, pt);
                    SRD_GET(&rd, n);
                    if (n > rd.n - rd.at)
                        cli_die("internal: short message between ranks");
                    if ((size_t)npc == cap) {
                        cap = cap ? 2 * cap : 64;
                        pc = realloc(pc, sizeof *pc * cap);
                        if (!pc)
                            cli_die("out of memory");
                    }
                    pc[npc++] = (study_piece){(long)pt, r, k, rd.p + rd.at, (size_t)n};
                    rd.at += n;
                }
                off += len[r];
            }
            if (npc)
                qsort(pc, (size_t)npc, sizeof *pc, study_piece_cmp);
        }
    }
    if (study_root()) {
        sbuf_put(to, o->buf + o->sent, head - o->sent);
        for (int k = 0; k < npc; k++)
            sbuf_put(to, pc[k].p, pc[k].n);
    }
    free(all);
    free(len);
    free(pc);
    o->sent = o->len;
    o->nseg = 0;
}

/* Rank 0: the bytes into the temporary file, committed, and the sidecar. */
static void csv_commit(out_csv *o, const study_buf *b, const lnk_config *c,
                       const lnk_meta *extra, const char *start, double t0)
{
    if (b->n && fwrite(b->p, 1, b->n, o->a.f) != b->n)
        cli_die("%s: write failed: %s", o->path, strerror(errno));
    CLI_CK(lnk_afile_commit(&o->a));
    if (!start) {
        start = o->start;
        t0 = o->t0;
    }
    CLI_CK(lnk_meta_write(o->path, cli_prov(), c, extra, start, lnk_now() - t0));
}

void csv_flush(out_csv *o, const lnk_config *c, const lnk_meta *extra, const char *start,
               double t0)
{
    if (!o->resume)
        cli_die("internal: csv_flush on %s, which is not resumable", o->path);
    size_t before = o->file.n;
    csv_take(o, &o->file);
    if (!study_root() || o->file.n == before)
        return;
    csv_commit(o, &o->file, c, extra, start, t0);
    /* the next flush writes through a new temporary file */
    CLI_CK(lnk_afile_open(&o->a, o->path));
}

static void csv_release(out_csv *o)
{
    lnk_csv_free(&o->c);
    fclose(o->mem);
    free(o->buf);
    free(o->seg);
    sbuf_free(&o->file);
    o->mem = NULL, o->buf = NULL, o->seg = NULL;
}

void csv_close(out_csv *o, const lnk_config *c, const lnk_meta *extra, const char *start,
               double t0)
{
    if (o->resume) {
        csv_flush(o, c, extra, start, t0);
        if (study_root()) { /* the temporary file of a next flush, unused */
            lnk_afile_abort(&o->a);
        }
        csv_release(o);
        return;
    }
    study_buf b = {0};
    csv_take(o, &b);
    if (study_root())
        csv_commit(o, &b, c, extra, start, t0);
    sbuf_free(&b);
    csv_release(o);
}

size_t csv_resume(out_csv *o, const char *path, const char *const *hdr, int n,
                  study_table *old)
{
    csv_begin_(o, path, hdr, n, 1);
    o->resume = 1;
    lnk_csv_table t;
    memset(&t, 0, sizeof t);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        CLI_CK(lnk_csv_table_read(path, NULL, &t));
        int same = t.ncol == n;
        for (int j = 0; same && j < n; j++)
            same = strcmp(t.head[j], hdr[j]) == 0;
        if (!same)
            cli_die("%s: its columns differ from this program's (column 1: '%s'); move it away or "
                 "choose another --out", path, t.ncol ? t.head[0] : "");
        if (study_root())
            for (size_t i = 0; i < t.nrow; i++) {
                for (int j = 0; j < n; j++)
                    CLI_CK(lnk_csv_str(&o->c, lnk_csv_table_str(&t, i, j)));
                CLI_CK(lnk_csv_end_row(&o->c));
            }
    }
    if (fflush(o->mem) != 0)
        cli_die("%s: out of memory", o->path);
    /* header and kept rows: the file as it is (or would be, empty) */
    if (study_root())
        sbuf_put(&o->file, o->buf, o->len);
    o->sent = o->len;
    size_t nrow = t.nrow;
    if (old)
        old->d = t;
    else
        lnk_csv_table_free(&t);
    return nrow;
}

/* DIR/NAME.meta.json as a JSON object, or fail naming it. */
json_t *study_sidecar(const char *dir, const char *name)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s.meta.json", dir, name);
    json_error_t e;
    json_t *o = json_load_file(p, 0, &e);
    if (!o || !json_is_object(o))
        cli_die("%s: %s", p, o ? "expected a JSON object" : e.text);
    return o;
}

/* ------------------------------------------------- reading the rows back */

int study_table_col(const study_table *t, const char *name)
{
    int j = lnk_csv_table_col(&t->d, name);
    if (j < 0)
        cli_die("%s: no column '%s'", t->d.path, name);
    return j;
}

const char *study_table_str(const study_table *t, size_t row, int col)
{
    return lnk_csv_table_str(&t->d, row, col);
}

void study_table_free(study_table *t) { lnk_csv_table_free(&t->d); }
