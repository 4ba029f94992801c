/* The parts of the LayerNorm geometry study (studies/ln_geometry.c, the
 * driver: its options and the order of the parts).  Each part writes its
 * CSVs with their sidecars into the study's output directory. */
#ifndef STUDIES_LN_GEOMETRY_GEOM_H
#define STUDIES_LN_GEOMETRY_GEOM_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/lnkit.h"
#include "kit/kit.h"

typedef struct {
    const char *out;     /* output directory */
    int runs, nstep, nmax, dmax;
    uint64_t seed;
    const char *text;    /* real-text file, or NULL */
} study;

/* The parts (one file each, but random/ortho/heads share keys.c). */
void part_random(study *S);  /* heatmap.csv */
void part_ortho(study *S);   /* orthogonality.csv */
void part_heads(study *S);   /* heads_stats.csv, heads_select.csv */
void part_model(study *S);   /* model_select.csv, model_affine.csv, model_cos.csv */
void part_maps(study *S);    /* attn_stats.csv, attn_map_layer2_*.csv */
void part_counts(study *S);  /* norm_counts.csv */

/* rows.c: what every part writes with. */
void *xmalloc(size_t n);
/* One CSV row from a format: s string, i int, l long, g double, G double or empty
 * when not finite (e.g. "no such key" as INFINITY). */
void row(out_csv *o, const char *fmt, ...);
/* A part's sidecar keys: the study and the part first (lnk_meta_free them). */
lnk_meta *part_meta(const char *part);

/* data.c: the model-based parts' data and models. */
typedef struct {
    const char *name;  /* "synthetic" or "text" */
    lnk_batch lm;      /* lm batch: tgt [B, T] */
    int V;
} dataset;

/* The real-text data set, or 0 if the file is absent (message printed). */
int load_text(const study *S, int B, int max_len, dataset *ds);
lnk_config make_cfg(const char *task, int d, int h, int L, int V, const char *pos,
                    const char *qk);
/* The values of tensor fmt (with layer l) in th. */
const double *tensor(const lnk_model *m, const double *th, const char *fmt, int l);

#endif
