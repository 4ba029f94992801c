/* The geometry study's part counts (geom.h): how many normalisation
 * statistics a LayerNorm computes in well-known models. */
#include <stdio.h>
#include <string.h>
#include "front/front.h"
#include "geom.h"

void part_counts(study *S)
{
    typedef struct {
        const char *name, *task, *pos;
        int B, T, d, h, L, Ldec;
    } cc;
    static const cc cfg[] = {
        {"GPT-2 small", "lm", "pre", 12, 1024, 768, 12, 12, 0},
        {"GPT-2 medium", "lm", "pre", 12, 1024, 1024, 16, 24, 0},
        {"BERT-base (no embedding LN)", "cls", "post", 12, 512, 768, 12, 12, 0},
        {"Transformer base, enc 6 + dec 6", "seq2seq", "post", 12, 1024, 512, 8, 6, 6},
        {"Brody et al. small GPT-2", "lm", "pre", 12, 1024, 8, 4, 4, 0},
    };
    static const char *const hdr[] = {
        "model", "task", "norm_pos", "B", "T", "d", "h", "L", "norms_per_block",
        "norms_per_model", "tokens_per_batch", "stats_per_norm_fullwidth",
        "stats_per_norm_perhead", "stats_per_block_fullwidth", "stats_per_block_perhead",
        "stats_per_model_fullwidth", "stats_per_model_perhead", "qknorm_stats_per_model"};
    out_csv o;
    csv_open(&o, S->out, "norm_counts.csv", hdr, 18);
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        const cc *k = &cfg[i];
        /* count the norms of the architecture from a small model of the same shape */
        lnk_config c;
        lnk_config_default(&c);
        CLI_CK(lnk_config_set(&c, "task", k->task));
        CLI_CK(lnk_config_set(&c, "norm_pos", k->pos));
        c.d = 8;
        c.h = 2;
        if (k->Ldec) {
            c.L_enc = k->L;
            c.L_dec = k->Ldec;
        } else {
            c.L = k->L;
        }
        CLI_CK(lnk_config_finalize(&c));
        lnk_model *m = lnk_model_alloc(&c);
        if (!m)
            cli_die_lib();
        const lnk_layout *lay = lnk_model_layout(m);
        long norms = 0, attn = 0;
        for (int t = 0; t < lay->n_tensors; t++) {
            const char *nm = lay->t[t].name;
            size_t n = strlen(nm);
            if (strstr(nm, "norm") && n > 2 && !strcmp(nm + n - 2, ".g"))
                norms++;
            if (n > 3 && !strcmp(nm + n - 3, ".wq"))
                attn++;
        }
        lnk_model_free(m);
        lnk_config_clear(&c);
        long blocks = k->L + k->Ldec;
        long tok = (long)k->B * k->T;
        /* per block: the norms of an encoder block (2) or decoder block (2 or 3); the
         * model total comes from the layout */
        long npb = k->Ldec ? 3 : 2;
        long full = tok, head = tok * k->h;
        row(&o, "sssiiiiillllllllll", k->name, k->task, k->pos, k->B, k->T, k->d, k->h,
            (int)blocks, npb, norms, tok, full, head, npb * full, npb * head, norms * full,
            norms * head, attn * 2 * head);
    }
    lnk_meta *extra = part_meta("counts");
    lnk_meta_str(extra, "unit", "(mean, variance) pairs; RMSNorm computes one mean square per pair");
    csv_close(&o, NULL, extra, NULL, 0);
    lnk_meta_free(extra);
    printf("counts: done\n");
}
