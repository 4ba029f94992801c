/* The seeded initialisation of the parameters (MODEL.md §5): one GSL mt19937
 * stream per tensor, seeded from (seed, tensor name), so that a tensor's
 * values do not depend on which other tensors exist. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>
#include "lnkit/error.h"
#include "model/internal.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* DeepNorm's gain of a matrix: beta of its stack for the value and output
 * projections of every attention and the FFN matrices, else 1 (MODEL.md §5). */
static double deepnorm_gain(const lnk_model *m, const char *name)
{
    if (m->cfg.norm_pos != LNK_POS_DEEPNORM)
        return 1.0;
    int attn = strstr(name, "attn.") != NULL; /* attn.* and xattn.* */
    int scaled = (attn && (ends_with(name, ".wv") || ends_with(name, ".wo"))) ||
                 ends_with(name, ".ffn.w1") || ends_with(name, ".ffn.w2") ||
                 ends_with(name, ".ffn.w3");
    if (!scaled)
        return 1.0;
    return strncmp(name, "enc.", 4) == 0 ? m->enc.beta : m->dec.beta;
}

/* One matrix W [in, out] drawn as the init says (not an embedding). */
static void init_matrix(const lnk_model *m, const lnk_tensor_info *t, gsl_rng *r, double *x)
{
    const lnk_config *c = &m->cfg;
    int in = t->shape[0], out = t->shape[1];
    int attn = strstr(t->name, "attn.") != NULL;
    double gain = deepnorm_gain(m, t->name);
    if (c->init == LNK_INIT_THEOREM && attn &&
        (ends_with(t->name, ".wq") || ends_with(t->name, ".wk"))) {
        memset(x, 0, sizeof(double) * t->size);
        return;
    }
    if (c->init == LNK_INIT_THEOREM && attn && ends_with(t->name, ".wo")) {
        memset(x, 0, sizeof(double) * t->size); /* Wo = I, DeepNorm's beta or not */
        for (int k = 0; k < in && k < out; k++)
            x[(size_t)k * out + k] = 1.0;
        return;
    }
    if (c->init == LNK_INIT_XAVIER) {
        double a = sqrt(6.0 / (in + out));
        for (size_t k = 0; k < t->size; k++)
            x[k] = a * (2.0 * gsl_rng_uniform(r) - 1.0);
    } else { /* xavier_normal, and theorem's other matrices */
        double sd = sqrt(2.0 / (in + out));
        for (size_t k = 0; k < t->size; k++)
            x[k] = gsl_ran_gaussian(r, sd);
    }
    if (gain != 1.0)
        for (size_t k = 0; k < t->size; k++)
            x[k] *= gain;
}

int lnk_model_init_params(const lnk_model *m, double *theta)
{
    const lnk_config *c = &m->cfg;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return lnk_error(LNK_ENOMEM, "out of memory allocating the random number generator");
    for (int i = 0; i < m->lay.n_tensors; i++) {
        const lnk_tensor_info *t = &m->lay.t[i];
        double *x = theta + t->offset;
        /* Each tensor has its own stream: seed = mix(seed, name). mt19937 maps
         * seed 0 to its default seed, so a mixed value is never 0 in practice. */
        unsigned long s = (unsigned long)splitmix64(c->seed ^ fnv1a(t->name));
        gsl_rng_set(r, s ? s : 1);
        int is_emb = strcmp(t->name, "src_emb") == 0 || strcmp(t->name, "tgt_emb") == 0;
        int is_pos = strcmp(t->name, "src_pos") == 0 || strcmp(t->name, "tgt_pos") == 0;
        if (t->ndim == 1) {
            double v = ends_with(t->name, ".g") ? 1.0 : 0.0;
            for (size_t k = 0; k < t->size; k++)
                x[k] = v;
        } else if (is_emb || is_pos) {
            double sd = is_emb ? sqrt(1.0 / c->d) : 0.02;
            for (size_t k = 0; k < t->size; k++)
                x[k] = gsl_ran_gaussian(r, sd);
        } else {
            init_matrix(m, t, r, x);
        }
    }
    gsl_rng_free(r);
    return LNK_OK;
}

int lnk_params_check_finite(const lnk_model *m, const double *theta, const char *what)
{
    for (int i = 0; i < m->lay.n_tensors; i++) {
        const lnk_tensor_info *t = &m->lay.t[i];
        for (size_t k = 0; k < t->size; k++)
            if (!isfinite(theta[t->offset + k]))
                return lnk_error(LNK_ENONFINITE, "%s: tensor '%s' element %zu is %g (expected a "
                                 "finite number)", what, t->name, k, theta[t->offset + k]);
    }
    return LNK_OK;
}

double lnk_tensor_norm(const lnk_model *m, const double *g, int i)
{
    const lnk_tensor_info *t = &m->lay.t[i];
    return lnk_norm2(g + t->offset, t->size);
}
