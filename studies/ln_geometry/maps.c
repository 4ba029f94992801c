/* The geometry study's part maps (geom.h): attention maps at layer 2 of an
 * encoder with full-width LN, per-head LN and per-head RMSNorm (qk_norm):
 * entropy and stripe statistics of every layer and head, and the layer-2
 * maps of one sequence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/geometry.h"
#include "front/front.h"
#include "geom.h"

/* the encoder: B sequences, width D, H heads, NL layers; the maps are LAYER's */
enum { B = 16, D = 64, H = 4, NL = 4, LAYER = 2 };
static const char *const qks[3] = {"none", "layernorm", "rmsnorm"};
static const char *const vname[3] = {"fullLN", "headLN", "headRMS"};

/* The encoder's batch and its vocabulary: the real text if there is one,
 * else a synthetic batch.  Returns 1 for the text. */
static int maps_data(const study *S, lnk_batch *cb, int *V)
{
    dataset ds;
    int have_text = load_text(S, B, 30, &ds);
    if (have_text) {
        /* encoder input = the lm row (<bos> .. <eos> <pad>..); labels = the ids */
        *V = ds.V;
        cb->B = ds.lm.B;
        cb->S = ds.lm.T;
        cb->src = xmalloc(sizeof(int64_t) * cb->B * cb->S);
        cb->labels = xmalloc(sizeof(int64_t) * cb->B * cb->S);
        memcpy(cb->src, ds.lm.tgt, sizeof(int64_t) * cb->B * cb->S);
        memcpy(cb->labels, ds.lm.tgt, sizeof(int64_t) * cb->B * cb->S);
        cb->owns = 1;
        lnk_batch_free(&ds.lm);
    } else {
        *V = 500;
        lnk_config c = make_cfg("cls", D, H, NL, *V, "pre", "none");
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        CLI_CK(lnk_batch_synthetic(m, B, 24, S->seed + 2000, cb));
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    return have_text;
}

/* The sequence the pictures show (the longest), its length in *len. */
static int longest(const lnk_batch *cb, int *len)
{
    int show = 0, showlen = 0;
    for (int b = 0; b < cb->B; b++) {
        int n = 0;
        while (n < cb->S && cb->src[(size_t)b * cb->S + n] != LNK_PAD)
            n++;
        if (n > showlen) {
            showlen = n;
            show = b;
        }
    }
    *len = showlen;
    return show;
}

/* The uniform attention's entropy and column mass, from the padding pattern. */
static void uniform_refs(const lnk_batch *cb, double *ent_u, double *col_u)
{
    double e = 0, cu = 0;
    int rows = 0;
    for (int b = 0; b < cb->B; b++) {
        int n = 0;
        for (int t = 0; t < cb->S; t++)
            n += cb->src[(size_t)b * cb->S + t] != LNK_PAD;
        e += n * log((double)n);
        rows += n;
        cu += 1.0 / n / cb->B;
    }
    *ent_u = e / rows;
    *col_u = cu;
}

/* attn_map_layer2_VARIANT.csv: the maps of the unit's heads on sequence show
 * (its first n positions), recomputed from the workspace's rows. */
static void write_map(const study *S, lnk_workspace *ws, const lnk_geom_unit *unit,
                      const lnk_config *c, int iv, int show, int n)
{
    const double *Q, *K;
    int Bq, T;
    CLI_CK(lnk_geom_unit_rows(ws, unit, LNK_GEOM_QUERIES_QK, &Q, &Bq, &T, NULL));
    CLI_CK(lnk_geom_unit_rows(ws, unit, LNK_GEOM_KEYS_QK, &K, &Bq, &T, NULL));
    char name[128];
    snprintf(name, sizeof name, "attn_map_layer2_%s.csv", vname[iv]);
    static const char *const mh[] = {"head", "query", "key", "weight", "sequence"};
    out_csv om;
    csv_open(&om, S->out, name, mh, 5);
    int dk = D / H;
    double *z = xmalloc(sizeof(double) * n);
    for (int j = 0; j < H; j++)
        for (int t = 0; t < n; t++) {
            double mx = -INFINITY, s = 0;
            for (int u = 0; u < n; u++) {
                double a = 0;
                for (int e = 0; e < dk; e++)
                    a += Q[((size_t)show * T + t) * D + j * dk + e] *
                         K[((size_t)show * T + u) * D + j * dk + e];
                z[u] = a / sqrt((double)dk);
                mx = fmax(mx, z[u]);
            }
            for (int u = 0; u < n; u++)
                s += (z[u] = exp(z[u] - mx));
            for (int u = 0; u < n; u++)
                row(&om, "iiigi", j, t, u, z[u] / s, show);
        }
    free(z);
    lnk_meta *extra = part_meta("maps");
    lnk_meta_int(extra, "layer", LAYER);
    lnk_meta_int(extra, "sequence", show);
    lnk_meta_int(extra, "tokens", n);
    csv_close(&om, c, extra, NULL, 0);
    lnk_meta_free(extra);
}

/* What every variant's rows share. */
typedef struct {
    const study *S;
    const lnk_batch *cb;
    int V, have_text, show, showlen;
    double ent_u, col_u;
} maps_run;

/* Variant iv: its rows of attn_stats.csv (o) and its layer-2 map; the last
 * variant closes o. */
static void maps_variant(const maps_run *r, out_csv *o, int iv)
{
    const lnk_batch *cb = r->cb;
    lnk_config c = make_cfg("cls", D, H, NL, r->V, "pre", qks[iv]);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    double *th = xmalloc(sizeof(double) * lnk_model_n_params(m)), loss;
    CLI_CK(lnk_model_init_params(m, th));
    lnk_workspace *ws = lnk_workspace_alloc(m, cb->B, cb->S, 0, 0);
    if (!ws)
        cli_die_lib();
    CLI_CK(lnk_model_eval(ws, th, cb, &loss, NULL, NULL));
    lnk_geom_attn_stat *as;
    int nas;
    CLI_CK(lnk_geom_model_attn(ws, &as, &nas));
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < nas; i++) {
            const lnk_geom_attn_stat *a = &as[i];
            if (a->u.layer != l)
                continue;
            row(o, "ssiigggggggsii", vname[iv], qks[iv], l, a->head, a->ent_mean, a->ent_min,
                r->ent_u, a->col_mass, a->col_mass_max, r->col_u, a->logit_max,
                r->have_text ? "text" : "synthetic", cb->B, (int)D);
        }
    }
    free(as);
    lnk_geom_unit us[16];
    int nu = lnk_geom_attn_units(ws, us, 16);
    for (int iu = 0; iu < nu; iu++)
        if (us[iu].layer == LAYER)
            write_map(r->S, ws, &us[iu], &c, iv, r->show, r->showlen);
    lnk_workspace_free(ws);
    free(th);
    lnk_model_free(m);
    if (iv == 2) {
        lnk_meta *extra = part_meta("maps");
        lnk_meta_int(extra, "B", cb->B);
        lnk_meta_str(extra, "data", r->have_text ? r->S->text : "synthetic");
        lnk_meta_str(extra, "varied", "qk_norm in {none, layernorm, rmsnorm}");
        csv_close(o, &c, extra, NULL, 0);
        lnk_meta_free(extra);
    }
    lnk_config_clear(&c);
}

void part_maps(study *S)
{
    lnk_batch cb = {0};
    maps_run r = {.S = S, .cb = &cb};
    r.have_text = maps_data(S, &cb, &r.V);
    r.show = longest(&cb, &r.showlen);
    static const char *const hdr[] = {"variant", "qk_norm", "layer", "head", "ent_mean",
                                      "ent_min", "ent_uniform", "col_mass", "col_mass_max",
                                      "col_mass_uniform", "logit_max", "data", "sequences",
                                      "d"};
    out_csv o;
    csv_open(&o, S->out, "attn_stats.csv", hdr, 14);
    uniform_refs(&cb, &r.ent_u, &r.col_u);
    for (int iv = 0; iv < 3; iv++)
        maps_variant(&r, &o, iv);
    lnk_batch_free(&cb);
    printf("attention maps: done\n");
}
