/* lnkit internal: the checkpoint module's record format and state, shared by
 * checkpoint.c (identity, rows files, saving, opening) and ckpt_read.c
 * (parsing FILE and reading a state back); see include/lnkit/checkpoint.h. */
#ifndef LNK_IO_CKPT_INTERNAL_H
#define LNK_IO_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/checkpoint.h"

#define MAGIC "LNKCKPT1"
#define TRAILER "END!"
enum { T_INT = 'i', T_DBL = 'd', T_STR = 's' };

/* A record of FILE, read back: its name, type, count and bytes (unaligned). */
typedef struct {
    const char *name;
    uint32_t ln;
    int type;
    uint64_t count;
    const char *data;
} lnk_ck_record;

/* An open checkpoint (lnk_ckpt_open). */
struct lnk_ckpt {
    char *path, *rows_path, *cmd;
    int kind, rank, size, mapped, resumed;
    lnk_ckpt_id id;
    lnk_ckpt_lock *own_lock; /* the lock lnk_ckpt_open took (NULL: the caller's) */
    char *moved;            /* lnk_ckpt_moved */
    size_t row_len, max_rows;
    int fd;                 /* rows file, -1 until needed */
    double *map;
    size_t map_bytes;
    uint64_t *hash;         /* checksum of each file row written/synced */
    size_t synced;          /* mapped: rows [0, synced) synced and checksummed */
    size_t written;         /* written: rows [0, written) of the sketch on disk */
    int q_saved, slot;      /* trace: Q on disk; LIGHT: the slot of the last save */
    long products;
    /* read back */
    char *buf;
    size_t len;
    lnk_ck_record *r;
    int nr;
    double *rows;           /* written rows read back */
    int *ivl, *offset, *steps, *inv;
    lnk_eigs_state es;
    lnk_trace_state ts;
    lnk_slq_state ss;
};

/* "CMD: checkpoint FILE is corrupt or not a lnkit checkpoint (what); ..." */
int lnk_ck_bad(const lnk_ckpt *ck, const char *what);
/* FILE's bytes (ck->buf, ck->len) into records (ck->r), its SHA-256 checked. */
int lnk_ck_parse(lnk_ckpt *ck);
/* The identity checked, then the state and this rank's rows read back. */
int lnk_ck_read_state(lnk_ckpt *ck);
void lnk_ck_free_lanczos(lnk_lanczos_state *l);
/* Rows: a row's 64-bit checksum; the checksums' array; the rows file opened
 * (created, and for a mapped basis reserved and mapped). */
uint64_t lnk_ck_row_hash(const double *x, size_t n);
int lnk_ck_need_hash(lnk_ckpt *ck);
int lnk_ck_open_rows(lnk_ckpt *ck, int create);

#endif
