/* The study kit: what every study program (one .c file each) shares,
 * compiled once (studies/kit/kit.c; bench/ uses it too):
 * output directories, CSV outputs, and sweeps spread over the ranks of an MPI
 * job.  Call study_start(&argc, &argv, name) first in main.  The rest is the
 * front end's, as for lnkit's commands (src/front): flags declared in an
 * option table and parsed by cli_parse (front/opt.h; then cli_setup_done()),
 * one error path (cli_die, cli_die_lib, CLI_CK), one CSV writer (out_csv: csv_open or
 * csv_sweep, the lnk_csv_* calls on o.c, csv_close with the sidecar).  The
 * programs compute and write rows; their summaries (tables, fits, figures,
 * claims) are studies/summary's, from the files.
 *
 * Sweeps (make MPI=1; include/lnkit/comm.h; in the default build the job is
 * one process and all of this is trivial).  A study numbers its points
 * (configuration x seed) 0, 1, ... in the order of its single-process loop;
 * point i belongs to rank i % P (study_mine), so each is computed once.
 * Rows of a sweep CSV (csv_sweep) are kept in memory, grouped by point
 * (csv_point); csv_close gathers them to rank 0, which writes them in point
 * order: the file of a one-process run, byte for byte (timing columns aside).
 * A resumable sweep CSV (csv_resume,
 * grad_norms) keeps the rows of the file it resumes and gathers the new
 * points' rows at every csv_flush, the same way.  Only rank 0
 * creates directories and files and prints progress; after the last gather
 * the other ranks are done (study_root() is 0) and return from main.
 *
 * Failures.  cli_die() prints "NAME: message" on rank 0 (a failure every rank
 * shares, such as a bad flag, is printed once); a rank other than 0 that
 * fails on its own prints "NAME: rank R: message" and ends the job
 * (lnk_comm_abort: mpirun ends the other ranks, whose unfinished temporary
 * files are removed).  Exit status 2, no partial output.  Tests inject such
 * a failure with LNK_FAULT="R:sweep:error" (or ":exit", comm.h): rank R
 * fails where it hands its points over (csv_close or csv_flush of a sweep
 * CSV). */
#ifndef LNK_STUDY_KIT_H
#define LNK_STUDY_KIT_H

#include <stddef.h>
#include <stdio.h>
#include "front/front.h"
#include "front/opt.h"
#include "lnkit/lnkit.h"
#include <jansson.h>

/* -o, --out: a study's result, declared once for every study: a folder
 * (arg "DIR") of CSVs with their sidecars, or one CSV a later run resumes
 * ("FILE", "FILE.csv": fl has CLI_RESUMED); never standard output (no
 * CLI_STDOUT: the front end refuses '-', saying why).  dflt: the default as
 * help shows it (NULL: none). */
#define STUDY_OPT_OUT(T, f, arg_, fl, dflt, what)                                                \
    {.type = CLI_STR, .key = 'o', .name = "out", .arg = arg_, CLI_AT(T, f),                     \
     .flags = CLI_WRITES | (fl), .def = dflt, .help = what}

/* ------------------------------------------------------------ the program */
/* The program's start (cli_start: settings, BLAS kernel, MPI job, provenance). */
void study_start(int *argc, char ***argv, const char *name);
/* 1 on rank 0 (the one that writes files and prints). */
int study_root(void);
/* The number of ranks of the job. */
int study_ranks(void);
/* 1 if sweep point i is this rank's. */
int study_mine(long i);

/* ------------------------------------------------------------------ errors
 * The front end's (front/front.h): cli_die, cli_die_lib, CLI_CK, cli_alloc;
 * an unfinished output (lnk_afile, the CSVs below) is removed by them. */
/* Record an input file (path, size, SHA-256) for the sidecars, or fail:
 * study_input reads it to hash it; study_input_read records the digest its
 * reader computed as it read it (read once: lnk_text's, lnk_st_file's). */
void study_input(const char *path);
void study_input_read(const char *path, const lnk_digest *d);
/* mkdir -p dir, or fail (rank 0 only: the other ranks write no files).  The
 * folders it creates are removed at exit if still empty: a study that fails
 * before writing its results leaves no folder it made behind. */
void make_dir(const char *dir);

/* ------------------------------------------------------------ byte buffers
 * Per-point results travel between ranks as byte strings. */
typedef struct {
    char *p;
    size_t n, cap;
} study_buf;
void sbuf_put(study_buf *b, const void *x, size_t n);
#define SBUF_PUT(b, v) sbuf_put((b), &(v), sizeof(v))
void sbuf_free(study_buf *b);

typedef struct {
    const char *p;
    size_t n, at;
} study_rd;
void srd_get(study_rd *r, void *x, size_t n);
#define SRD_GET(r, v) srd_get((r), &(v), sizeof(v))
/* n items of sz bytes into a new malloc'd array (NULL if n is 0). */
void *srd_array(study_rd *r, size_t n, size_t sz);

/* ------------------------------------------------------------ CSV outputs
 * A study's CSV output: the rows are kept in memory and written at
 * csv_close through a temporary file (opened at csv_open on rank 0, so an
 * unwritable path fails before the work; removed if the study fails),
 * committed with its .meta.json sidecar.
 *   csv_open   rows of rank 0 only (tables rank 0 computes);
 *   csv_sweep  rows of every rank: call csv_point(o, i) before the rows of
 *              point i; csv_close (collective) writes the header and the
 *              points' rows in point order (rows before the first csv_point
 *              are rank 0's, after the header);
 *   csv_resume a sweep CSV that continues the file at path (see below). */
typedef struct {
    long point;
    size_t start;
} study_seg;

typedef struct {
    lnk_afile a;
    lnk_csv c;
    char path[1024];
    FILE *mem;
    char *buf;
    size_t len;
    int sweep;
    study_seg *seg;
    int nseg, capseg;
    char start[32];   /* when it was opened (ISO 8601), and lnk_now() then */
    double t0;
    size_t sent;      /* bytes of buf already handed over (csv_flush) */
    int resume;       /* a csv_resume output */
    study_buf file;   /* rank 0, resumable: the file's bytes so far */
} out_csv;

void csv_open(out_csv *o, const char *dir, const char *name, const char *const *hdr, int n);
void csv_sweep(out_csv *o, const char *dir, const char *name, const char *const *hdr, int n);
/* The rows that follow are point i's. */
void csv_point(out_csv *o, long i);
/* A number, or an empty field when absent (present 0) or not finite. */
void csv_num_or_empty(out_csv *o, double v, int present);
/* Collective for a sweep.  Writes the file and NAME.meta.json (config c,
 * the sidecar's own keys extra (lnkit/io.h; may be NULL), start time, wall
 * time since t0; start NULL: the file's own,
 * from csv_open to csv_close) on rank 0. */
void csv_close(out_csv *o, const lnk_config *c, const lnk_meta *extra, const char *start,
               double t0);

/* ------------------------------------------------- reading the rows back
 * A study CSV read whole (lnk_csv_table), for a resumed run that reads back
 * the rows it wrote, columns by name (a missing one fails the study naming
 * the file). */
typedef struct {
    lnk_csv_table d;
} study_table;
int study_table_col(const study_table *t, const char *name);
const char *study_table_str(const study_table *t, size_t row, int col);
void study_table_free(study_table *t);

/* A resumable sweep CSV (a study that skips the points already done): if the
 * file at path exists, its header must be hdr (else fail naming the file) and
 * its rows are kept verbatim at the top; the rows of new points follow (as
 * csv_sweep: csv_point, the lnk_csv_* calls on o.c).  Every rank reads the
 * file; old (may be NULL) gets its rows (nrow 0 when there is no file; free
 * with study_table_free).  Returns the number of rows kept. */
size_t csv_resume(out_csv *o, const char *path, const char *const *hdr, int n,
                  study_table *old);
/* Collective (a checkpoint): the rows of the points written since the last
 * flush, gathered to rank 0 in point order and appended to the file, which is
 * rewritten atomically with its sidecar (arguments as csv_close) -- only if
 * there are new rows: a run that adds nothing leaves the file and its sidecar
 * untouched.  csv_close of a resumable CSV is a last csv_flush. */
void csv_flush(out_csv *o, const lnk_config *c, const lnk_meta *extra, const char *start,
               double t0);

/* DIR/NAME.meta.json (the sidecar of DIR/NAME.csv) as a JSON object, or fail
 * naming it (a resumed run checks its settings against it).  json_decref it. */
json_t *study_sidecar(const char *dir, const char *name);

#endif
