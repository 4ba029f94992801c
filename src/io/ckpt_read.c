/* Checkpoints: FILE parsed into records and a saved state read back, this
 * rank's rows checked against their checksums (include/lnkit/checkpoint.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ckpt_internal.h"
#include "lnkit/error.h"
#include "lnkit/sha256.h"

int lnk_ck_bad(const lnk_ckpt *ck, const char *what)
{
    return lnk_error(LNK_EFORMAT, "%s: checkpoint %s is corrupt or not a lnkit checkpoint (%s); "
                     "remove it to start again", ck->cmd, ck->path, what);
}

int lnk_ck_parse(lnk_ckpt *ck)
{
    size_t n = ck->len, ml = strlen(MAGIC), tl = strlen(TRAILER) + 32;
    if (n < ml + tl || memcmp(ck->buf, MAGIC, ml))
        return lnk_ck_bad(ck, n < ml + tl ? "too short" : "no lnkit checkpoint header");
    if (memcmp(ck->buf + n - tl, TRAILER, strlen(TRAILER)))
        return lnk_ck_bad(ck, "truncated: no end mark");
    lnk_sha256 s;
    unsigned char d[32];
    lnk_sha256_init(&s);
    lnk_sha256_update(&s, ck->buf, n - 32);
    lnk_sha256_final(&s, d);
    if (memcmp(d, ck->buf + n - 32, 32))
        return lnk_ck_bad(ck, "its SHA-256 does not match its contents");
    size_t at = ml, end = n - tl;
    int cap = 0;
    while (at < end) {
        lnk_ck_record r;
        uint8_t t;
        if (end - at < 4)
            return lnk_ck_bad(ck, "a record is cut short");
        memcpy(&r.ln, ck->buf + at, 4);
        at += 4;
        if (r.ln > end - at || end - at - r.ln < 9)
            return lnk_ck_bad(ck, "a record is cut short");
        r.name = ck->buf + at;
        at += r.ln;
        memcpy(&t, ck->buf + at, 1);
        memcpy(&r.count, ck->buf + at + 1, 8);
        at += 9;
        r.type = t;
        size_t es = t == T_STR ? 1 : 8;
        if ((t != T_INT && t != T_DBL && t != T_STR) || r.count > (end - at) / es)
            return lnk_ck_bad(ck, "a record has a bad type or length");
        r.data = ck->buf + at;
        at += r.count * es;
        if (ck->nr == cap) {
            cap = cap ? 2 * cap : 64;
            lnk_ck_record *p = realloc(ck->r, sizeof *p * (size_t)cap);
            if (!p)
                return lnk_error(LNK_ENOMEM, "%s: out of memory reading checkpoint %s", ck->cmd,
                                 ck->path);
            ck->r = p;
        }
        ck->r[ck->nr++] = r;
    }
    return LNK_OK;
}

static const lnk_ck_record *find(const lnk_ckpt *ck, const char *name, int type)
{
    for (int i = 0; i < ck->nr; i++)
        if (ck->r[i].ln == strlen(name) && !memcmp(ck->r[i].name, name, ck->r[i].ln))
            return ck->r[i].type == type ? &ck->r[i] : NULL;
    return NULL;
}

/* Typed reads; any missing or malformed record makes *ok 0. */
static int64_t get_i(const lnk_ckpt *ck, const char *name, int *ok)
{
    const lnk_ck_record *r = find(ck, name, T_INT);
    int64_t v = 0;
    if (r && r->count == 1)
        memcpy(&v, r->data, 8);
    else
        *ok = 0;
    return v;
}

static double get_d(const lnk_ckpt *ck, const char *name, int *ok)
{
    const lnk_ck_record *r = find(ck, name, T_DBL);
    double v = 0;
    if (r && r->count == 1)
        memcpy(&v, r->data, 8);
    else
        *ok = 0;
    return v;
}

/* An array of exactly count doubles, copied into a malloc'd buffer kept in
 * the file buffer's place (the records are unaligned). */
static double *get_da(const lnk_ckpt *ck, const char *name, size_t count, int *ok)
{
    const lnk_ck_record *r = find(ck, name, T_DBL);
    if (!r || r->count != count) {
        *ok = 0;
        return NULL;
    }
    double *x = malloc(8 * (count ? count : 1));
    if (!x) {
        *ok = 0;
        return NULL;
    }
    memcpy(x, r->data, 8 * count);
    return x;
}

static int *get_ia(const lnk_ckpt *ck, const char *name, size_t count, int *ok)
{
    const lnk_ck_record *r = find(ck, name, T_INT);
    if (!r || r->count != count) {
        *ok = 0;
        return NULL;
    }
    int *x = malloc(sizeof(int) * (count ? count : 1));
    if (!x) {
        *ok = 0;
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        int64_t v;
        memcpy(&v, r->data + 8 * i, 8);
        if (v < -2147483647 || v > 2147483647)
            *ok = 0;
        x[i] = (int)v;
    }
    return x;
}

/* ------------------------------------------------------------- reading */

static int get_lanczos(lnk_ckpt *ck, lnk_lanczos_state *l, int *ok)
{
    l->mode = (int)get_i(ck, "lz.mode", ok);
    l->max_steps = (int)get_i(ck, "lz.max_steps", ok);
    l->steps = (int)get_i(ck, "lz.steps", ok);
    l->done = (int)get_i(ck, "lz.done", ok);
    l->invariant = (int)get_i(ck, "lz.invariant", ok);
    l->n_restarts = (int)get_i(ck, "lz.n_restarts", ok);
    l->n_reorth = (int)get_i(ck, "lz.n_reorth", ok);
    l->force = (int)get_i(ck, "lz.force", ok);
    l->n_ivl = (int)get_i(ck, "lz.n_ivl", ok);
    l->n_applies = (long)get_i(ck, "lz.n_applies", ok);
    l->seed = (uint64_t)get_i(ck, "lz.seed", ok);
    l->tnorm = get_d(ck, "lz.tnorm", ok);
    l->reorth_rows = get_d(ck, "lz.reorth_rows", ok);
    if (!*ok || l->max_steps < 1 || l->max_steps > (1 << 26) || l->steps < 1 ||
        l->steps > l->max_steps || (l->mode != LNK_LANCZOS_FULL && l->mode != LNK_LANCZOS_LIGHT))
        return *ok = 0;
    size_t m = (size_t)l->max_steps;
    l->alpha = get_da(ck, "lz.alpha", m, ok);
    l->beta = get_da(ck, "lz.beta", m, ok);
    if (l->mode == LNK_LANCZOS_FULL) {
        l->om = get_da(ck, "lz.om", m + 1, ok);
        l->om_prev = get_da(ck, "lz.om_prev", m + 1, ok);
        l->ivl = ck->ivl = get_ia(ck, "lz.ivl", 2 * (m + 1), ok);
    }
    return *ok;
}

void lnk_ck_free_lanczos(lnk_lanczos_state *l)
{
    free((void *)l->alpha), free((void *)l->beta), free((void *)l->om), free((void *)l->om_prev);
}

/* This rank's rows [first, first + count) against the recorded checksums;
 * written rows are read into ck->rows. */
static int check_rows(lnk_ckpt *ck, size_t first, size_t count, const uint64_t *h)
{
    if (!count)
        return LNK_OK;
    if (first + count > ck->max_rows)
        return lnk_ck_bad(ck, "its rows lie outside the rows file");
    int rc = lnk_ck_open_rows(ck, 0);
    if (rc != LNK_OK)
        return rc;
    size_t rb = 8 * ck->row_len;
    if (!ck->mapped) {
        ck->rows = malloc(rb * count);
        if (!ck->rows)
            return lnk_error(LNK_ENOMEM, "%s: out of memory for %zu checkpoint rows", ck->cmd,
                             count);
        for (size_t done = 0; done < rb * count;) {
            ssize_t r = pread(ck->fd, (char *)ck->rows + done, rb * count - done,
                              (off_t)(first * rb + done));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return lnk_error(LNK_EFORMAT, "%s: checkpoint rows file %s is too short "
                                 "(truncated?); remove %s and it to start again", ck->cmd,
                                 ck->rows_path, ck->path);
            done += (size_t)r;
        }
    }
    for (size_t i = 0; i < count; i++) {
        const double *x = ck->mapped ? ck->map + (first + i) * ck->row_len
                                     : ck->rows + i * ck->row_len;
        if (lnk_ck_row_hash(x, ck->row_len) != h[i])
            return lnk_error(LNK_EFORMAT, "%s: checkpoint rows file %s: row %zu does not match "
                             "its checksum (corrupt, or another run's); remove %s and it to "
                             "start again", ck->cmd, ck->rows_path, first + i, ck->path);
    }
    int r2 = lnk_ck_need_hash(ck);
    if (r2 != LNK_OK)
        return r2;
    memcpy(ck->hash + first, h, 8 * count);
    return LNK_OK;
}

/* Append "NAME: THERE -> HERE" to ck->moved. */
static int note_moved(lnk_ckpt *ck, const char *name, const lnk_ck_record *r,
                      const char *here)
{
    char *m = NULL;
    int n = asprintf(&m, "%s%s%s: %.*s -> %s", ck->moved ? ck->moved : "",
                     ck->moved && *ck->moved ? "; " : "", name,
                     r ? (int)(r->count > 200 ? 200 : r->count) : 6, r ? r->data : "absent",
                     here);
    if (n < 0)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
    free(ck->moved);
    ck->moved = m;
    return LNK_OK;
}

/* The identity of FILE against this run's: the run's items must all agree;
 * the environment's too, unless resume_anywhere (then ck->moved says what
 * changed, after what earlier resumes recorded).  state: FILE holds a
 * state (not only the initial identity). */
static int check_id(lnk_ckpt *ck, int state)
{
    const lnk_ck_record *prior = find(ck, "moved", T_STR);
    if (prior && !(ck->moved = strndup(prior->data, prior->count)))
        return lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
    int n_here[2] = {0, 0}, n_there[2] = {0, 0};
    for (int i = 0; i < ck->id.n; i++) {
        int env = ck->id.env[i];
        n_here[env]++;
        char *nm;
        if (asprintf(&nm, "%s:%s", env ? "env" : "id", ck->id.name[i]) < 0)
            return lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
        const lnk_ck_record *r = find(ck, nm, T_STR);
        free(nm);
        const char *v = ck->id.value[i];
        if ((r && r->count == strlen(v) && !memcmp(r->data, v, r->count)) || (env && !state))
            continue;
        int show = r ? (int)(r->count > 80 ? 80 : r->count) : 6;
        if (!env)
            return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s belongs to a different run: "
                             "%s is %.*s there, %s here", ck->cmd, ck->path, ck->id.name[i],
                             show, r ? r->data : "absent", v);
        if (!ck->id.resume_anywhere)
            return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s was written with %s %.*s, this "
                             "run has %s: a resumed run gives bitwise the result of an "
                             "uninterrupted one only with what fixed its rounding; resume "
                             "with the same, or allow the change explicitly (lnkit: "
                             "--resume-anywhere; the sidecar records it)", ck->cmd, ck->path,
                             ck->id.name[i], show, r ? r->data : "absent", v);
        int rc = note_moved(ck, ck->id.name[i], r, v);
        if (rc != LNK_OK)
            return rc;
    }
    for (int i = 0; i < ck->nr; i++) {
        n_there[0] += ck->r[i].ln > 3 && !memcmp(ck->r[i].name, "id:", 3);
        n_there[1] += ck->r[i].ln > 4 && !memcmp(ck->r[i].name, "env:", 4);
    }
    if (n_there[0] != n_here[0])
        return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s belongs to a different run: it "
                         "records %d items of what it belongs to, this run %d", ck->cmd,
                         ck->path, n_there[0], n_here[0]);
    if (n_there[1] != n_here[1] && state && !ck->id.resume_anywhere)
        return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s records %d items of what fixes its "
                         "rounding, this run %d (written by another lnkit version?); resume "
                         "with that version, or allow it explicitly (lnkit: --resume-anywhere)",
                         ck->cmd, ck->path, n_there[1], n_here[1]);
    return LNK_OK;
}

int lnk_ck_read_state(lnk_ckpt *ck)
{
    int ok = 1;
    /* identity first: a different run is named, not reported as corrupt */
    int64_t kind = get_i(ck, "kind", &ok), ranks = get_i(ck, "ranks", &ok);
    if (!ok)
        return lnk_ck_bad(ck, "no kind or ranks record");
    static const char *const kn[] = {"", "eigs", "trace", "density"};
    if (kind != ck->kind)
        return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s belongs to a different run: it was "
                         "written by lnkit %s, this is lnkit %s", ck->cmd, ck->path,
                         kind >= 1 && kind <= 3 ? kn[kind] : "?", kn[ck->kind]);
    if (ranks != ck->size)
        return lnk_error(LNK_EMISMATCH, "%s: checkpoint %s belongs to a different run: it was "
                         "written by %lld MPI rank(s), this run has %d; resume with the same "
                         "number", ck->cmd, ck->path, (long long)ranks, ck->size);
    /* the initial file of a run that saved no state: nothing to resume, so
     * what fixes the rounding may have changed */
    int state = find(ck, "products", T_INT) != NULL;
    int rc = check_id(ck, state);
    if (rc != LNK_OK)
        return rc;
    if (!state)
        return LNK_OK; /* the initial file of a run that saved no state yet */
    ck->products = (long)get_i(ck, "products", &ok);
    double elapsed = get_d(ck, "elapsed", &ok);
    int64_t first = get_i(ck, "rows.first", &ok), count = get_i(ck, "rows.count", &ok);
    const lnk_ck_record *hr = find(ck, "rows.hash", T_INT);
    if (!ok || !hr || first < 0 || count < 0 || (uint64_t)count > ck->max_rows ||
        hr->count != (uint64_t)count * (uint64_t)ck->size)
        return lnk_ck_bad(ck, "its rows record is malformed");
    uint64_t *h = malloc(8 * ((size_t)count + 1));
    if (!h)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", ck->cmd);
    memcpy(h, hr->data + 8 * (size_t)count * (size_t)ck->rank, 8 * (size_t)count);
    ck->resumed = 1;
    rc = check_rows(ck, (size_t)first, (size_t)count, h);
    free(h);
    if (rc != LNK_OK)
        return rc;
    if (ck->kind == LNK_CKPT_EIGS) {
        lnk_eigs_state *s = &ck->es;
        get_lanczos(ck, &s->lanczos, &ok);
        s->n_resid = (int)get_i(ck, "eigs.n_resid", &ok);
        if (ok && (s->n_resid < 0 || s->n_resid > (1 << 22)))
            ok = 0;
        s->resid = ok ? get_da(ck, "eigs.resid", (size_t)s->n_resid, &ok) : NULL;
        s->elapsed = elapsed;
        if (ok && s->lanczos.mode == LNK_LANCZOS_FULL &&
            (size_t)count != (size_t)s->lanczos.steps + 1)
            ok = 0;
        if (ok && ck->mapped != (s->lanczos.mode == LNK_LANCZOS_FULL))
            ok = 0;
    } else if (ck->kind == LNK_CKPT_TRACE) {
        lnk_trace_state *s = &ck->ts;
        s->applies = (int)get_i(ck, "tr.applies", &ok);
        s->phase = (int)get_i(ck, "tr.phase", &ok);
        s->index = (int)get_i(ck, "tr.index", &ok);
        s->n_rows = (int)get_i(ck, "tr.n_rows", &ok);
        s->partial = get_d(ck, "tr.partial", &ok);
        const lnk_ck_record *r = find(ck, "tr.samples", T_DBL);
        s->n_samples = r ? (int)r->count : 0;
        ok = ok && r && r->count < (1u << 30) && s->n_rows == count;
        s->samples = ok ? get_da(ck, "tr.samples", (size_t)s->n_samples, &ok) : NULL;
        s->rows = ck->rows;
        s->elapsed = elapsed;
        if (ok && s->phase == 0)
            ck->written = (size_t)count;
        else if (ok)
            ck->q_saved = 1;
    } else {
        lnk_slq_state *s = &ck->ss;
        s->run = (int)get_i(ck, "slq.run", &ok);
        s->steps_done = (int)get_i(ck, "slq.steps_done", &ok);
        s->n_applies = (long)get_i(ck, "slq.n_applies", &ok);
        if (ok && (s->run < 0 || s->run > (1 << 20)))
            ok = 0;
        s->offset = ck->offset = ok ? get_ia(ck, "slq.offset", (size_t)s->run + 1, &ok) : NULL;
        size_t nn = ok && s->offset[s->run] >= 0 ? (size_t)s->offset[s->run] : 0;
        for (int v = 0; ok && v < s->run; v++)
            if (s->offset[v + 1] <= s->offset[v])
                ok = 0;
        s->node = ok ? get_da(ck, "slq.node", nn, &ok) : NULL;
        s->weight = ok ? get_da(ck, "slq.weight", nn, &ok) : NULL;
        s->steps = ck->steps = ok ? get_ia(ck, "slq.steps", (size_t)s->run, &ok) : NULL;
        s->invariant = ck->inv = ok ? get_ia(ck, "slq.invariant", (size_t)s->run, &ok) : NULL;
        if (ok && find(ck, "lz.steps", T_INT))
            get_lanczos(ck, &s->lanczos, &ok);
        s->elapsed = elapsed;
        if (ok && s->lanczos.steps > 0 && s->lanczos.mode == LNK_LANCZOS_FULL &&
            (size_t)count != (size_t)s->lanczos.steps + 1)
            ok = 0;
    }
    lnk_lanczos_state *l = ck->kind == LNK_CKPT_EIGS ? &ck->es.lanczos
                         : ck->kind == LNK_CKPT_SLQ ? &ck->ss.lanczos : NULL;
    if (ok && l && l->steps > 0 && l->mode == LNK_LANCZOS_LIGHT) {
        if (count != 3 || !ck->rows)
            ok = 0;
        else {
            l->v0 = ck->rows;
            l->vprev = ck->rows + ck->row_len;
            l->vcur = ck->rows + 2 * ck->row_len;
            ck->slot = first == 3;
        }
    }
    if (!ok)
        return lnk_ck_bad(ck, "its state records are missing or inconsistent");
    return LNK_OK;
}
