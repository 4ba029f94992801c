/* The geometry study's model-based parts: their data and models (geom.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "front/front.h"
#include "lnkit/text.h"
#include "geom.h"

int load_text(const study *S, int B, int max_len, dataset *ds)
{
    struct stat sb;
    if (!S->text || stat(S->text, &sb) != 0) {
        printf("real text: %s not found, skipping the text runs\n", S->text ? S->text : "(none)");
        return 0;
    }
    lnk_text t;
    lnk_vocab *v;
    CLI_CK(lnk_text_read(S->text, &t));
    study_input_read(S->text, &t.digest);
    const lnk_text *tp = &t;
    CLI_CK(lnk_vocab_build(&tp, 1, 1, 0, &v));
    CLI_CK(lnk_text_lm_batch(&t, v, 0, B, max_len, &ds->lm));
    ds->V = lnk_vocab_size(v);
    ds->name = "text";
    lnk_vocab_free(v);
    lnk_text_free(&t);
    return 1;
}

lnk_config make_cfg(const char *task, int d, int h, int L, int V, const char *pos,
                    const char *qk)
{
    lnk_config c;
    lnk_config_default(&c);
    CLI_CK(lnk_config_set(&c, "task", task));
    c.d = d;
    c.h = h;
    c.L = L;
    c.V = V;
    CLI_CK(lnk_config_set(&c, "norm_pos", pos));
    CLI_CK(lnk_config_set(&c, "qk_norm", qk));
    CLI_CK(lnk_config_finalize(&c));
    return c;
}

const double *tensor(const lnk_model *m, const double *th, const char *fmt, int l)
{
    char name[LNK_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    int i = lnk_layout_find(lnk_model_layout(m), name);
    if (i < 0) {
        fprintf(stderr, "ln_geometry: no tensor %s\n", name);
        exit(2);
    }
    return th + lnk_model_layout(m)->t[i].offset;
}
