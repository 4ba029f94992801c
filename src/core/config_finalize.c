/* Model configuration (docs/MODEL.md §8): derived keys, ranges of fields set
 * by hand, cross-key rules and the size limits (lnk_config_finalize), the
 * closed-form parameter count (lnk_config_size) and DeepNet's constants
 * (lnk_config_deepnorm). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/config_keys.h"
#include "lnkit/error.h"

/* Check one field's current value (fields may also be set by hand). */
static int check_field(const lnk_config *c, int k)
{
    const keydef *kd = &lnk_cfg_keys[k];
    value v = lnk_cfg_get(c, k);
    int too_big;
    if (kd->derived && (kd->kind == KIND_REAL ? v.r == LNK_CFG_UNSET_REAL : v.i == -1))
        return LNK_OK;
    if (lnk_cfg_value_ok(k, &v, &too_big))
        return LNK_OK;
    char eb[160];
    if (kd->kind == KIND_REAL)
        return lnk_error(LNK_EINVAL, "config: key '%s': expected %s, got %.17g", kd->name,
                         lnk_cfg_expected(k, 0, 0, eb, sizeof eb), v.r);
    return lnk_error(LNK_EINVAL, "config: key '%s': expected %s, got %lld", kd->name,
                     lnk_cfg_expected(k, 0, too_big, eb, sizeof eb), v.i);
}

/* The field of an int key (-1 for a derived key still unset). */
static int *int_field(lnk_config *c, int k)
{
    switch (k) {
    case K_D: return &c->d;
    case K_H: return &c->h;
    case K_D_FF: return &c->d_ff;
    case K_L: return &c->L;
    case K_L_ENC: return &c->L_enc;
    case K_L_DEC: return &c->L_dec;
    case K_V: return &c->V;
    case K_V_SRC: return &c->V_src;
    case K_V_TGT: return &c->V_tgt;
    case K_N_CLASSES: return &c->n_classes;
    case K_MAX_LEN: return &c->max_len;
    default: return NULL;
    }
}

/* The derived keys still unset take their defaults (d_ff = 4 d, ...);
 * deepnorm_alpha and deepnorm_beta stay unset (per stack: lnk_config_deepnorm). */
static int derive(lnk_config *c)
{
    if (c->d_ff == -1) {
        if (c->d > INT_MAX / 4)
            return lnk_error(LNK_EINVAL, "config: key 'd_ff': default 4 d overflows (d %d)", c->d);
        c->d_ff = 4 * c->d;
    }
    if (c->L_enc == -1)
        c->L_enc = c->L;
    if (c->L_dec == -1)
        c->L_dec = c->L;
    if (c->V_src == -1)
        c->V_src = c->V;
    if (c->V_tgt == -1)
        c->V_tgt = c->V;
    if (c->n_classes == -1)
        c->n_classes = c->V_src;
    return LNK_OK;
}

void lnk_config_deepnorm(const lnk_config *c, int stack, double *alpha, double *beta)
{
    /* depths as finalize resolves them (a field set by hand may still be -1) */
    double N = c->L_enc > 0 ? c->L_enc : c->L, M = c->L_dec > 0 ? c->L_dec : c->L;
    double a, b;
    if (c->task == LNK_TASK_SEQ2SEQ && stack == 0) {
        double x = pow(N, 4) * M;
        a = 0.81 * pow(x, 1.0 / 16);
        b = 0.87 * pow(x, -1.0 / 16);
    } else if (c->task == LNK_TASK_SEQ2SEQ) {
        a = pow(3.0 * M, 0.25);
        b = pow(12.0 * M, -0.25);
    } else {
        double n = c->task == LNK_TASK_CLS ? N : M;
        a = pow(2.0 * n, 0.25);
        b = pow(8.0 * n, -0.25);
    }
    if (alpha)
        *alpha = c->deepnorm_alpha != LNK_CFG_UNSET_REAL ? c->deepnorm_alpha : a;
    if (beta)
        *beta = c->deepnorm_beta != LNK_CFG_UNSET_REAL ? c->deepnorm_beta : b;
}

/* Does the placement end each stack with a final norm (MODEL.md §3)? */
static int has_final(const lnk_config *c)
{
    return c->norm != LNK_NORM_NONE && c->norm_pos != LNK_POS_POST &&
           c->norm_pos != LNK_POS_DEEPNORM;
}

void lnk_config_size(const lnk_config *c, double *n_params, double *n_tensors)
{
    double d = c->d, ff = c->d_ff;
    int ln = c->norm == LNK_NORM_LAYERNORM, rms = c->norm == LNK_NORM_RMSNORM, bias = c->bias;
    int glu = c->activation == LNK_ACT_SWIGLU;
    /* a norm's tensors; peri has two norms per unit */
    double norm = ln ? (bias ? 2 : 1) * d : rms ? d : 0, norm_t = ln ? 1 + bias : rms ? 1 : 0;
    double per_unit = c->norm_pos == LNK_POS_PERI ? 2 : 1;
    double unorm = per_unit * norm, unorm_t = per_unit * norm_t;
    double attn = 4 * d * d + bias * 4 * d, attn_t = 4 + 4 * bias;
    double ffn = (2 + glu) * d * ff + bias * ((1 + glu) * ff + d), ffn_t = (2 + glu) * (1 + bias);
    int final = has_final(c), learned = c->pos == LNK_PE_LEARNED;
    double pos = learned ? (double)c->max_len * d : 0;
    double p = 0, t = 0;
    if (c->task != LNK_TASK_LM) { /* src_emb (src_pos), encoder blocks [attn, ffn], final norm */
        p += (double)c->V_src * d + pos + (double)c->L_enc * (attn + ffn + 2 * unorm) +
             final * norm;
        t += 1 + learned + (double)c->L_enc * (attn_t + ffn_t + 2 * unorm_t) + final * norm_t;
    }
    if (c->task != LNK_TASK_CLS) { /* tgt_emb (tgt_pos), decoder blocks (+ xattn in seq2seq) */
        int x = c->task == LNK_TASK_SEQ2SEQ;
        p += (double)c->V_tgt * d + pos +
             (double)c->L_dec * (attn + ffn + 2 * unorm + x * (attn + unorm)) + final * norm;
        t += 1 + learned + (double)c->L_dec * (attn_t + ffn_t + 2 * unorm_t + x * (attn_t + unorm_t)) +
             final * norm_t;
    }
    if (!c->tie_output) { /* out.w */
        p += d * (c->task == LNK_TASK_CLS ? c->n_classes : c->V_tgt);
        t += 1;
    }
    if (n_params)
        *n_params = p;
    if (n_tensors)
        *n_tensors = t;
}

/* A configuration over the size limits: name the key whose value makes it so
 * (the one whose reset to its default shrinks the model most). */
static int size_error(const lnk_config *raw, double np, double nt)
{
    static const int cand[] = {K_D, K_D_FF, K_L, K_L_ENC, K_L_DEC, K_V, K_V_SRC, K_V_TGT,
                               K_N_CLASSES, K_MAX_LEN};
    lnk_config def;
    lnk_config_default(&def);
    int best = -1;
    double best_size = np + nt;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        int k = cand[i];
        if (!lnk_cfg_applies(raw->task, k))
            continue;
        lnk_config t = *raw;
        *int_field(&t, k) = *int_field(&def, k);
        double p, n;
        if (derive(&t) != LNK_OK)
            continue;
        lnk_config_size(&t, &p, &n);
        if (p + n < best_size) {
            best_size = p + n;
            best = k;
        }
    }
    char who[64] = "config";
    if (best >= 0)
        snprintf(who, sizeof who, "config: key '%s'", lnk_cfg_keys[best].name);
    char val[32] = "";
    if (best >= 0)
        snprintf(val, sizeof val, " %d", *int_field((lnk_config *)raw, best));
    return lnk_error(LNK_EINVAL,
                     "%s:%s gives a model of %.0f parameters in %.0f tensors; the limits are "
                     "%lld parameters (LNK_MAX_PARAMS, 8 GiB per vector) and %ld tensors "
                     "(LNK_MAX_TENSORS)",
                     who, val, np, nt, (long long)LNK_MAX_PARAMS, (long)LNK_MAX_TENSORS);
}

/* The keys' values one by one: ranges, task-dependent keys. */
static int check_fields(lnk_config *c)
{
    int st = check_field(c, K_TASK);
    if (st != LNK_OK)
        return st;
    /* an invalid value of a task-dependent key counts only if the key applies */
    for (int i = 0; i < 5; i++) {
        static const int side_keys[5] = {K_L_ENC, K_L_DEC, K_V_SRC, K_V_TGT, K_N_CLASSES};
        if (c->side_err[i][0] && lnk_cfg_applies(c->task, side_keys[i]))
            return lnk_error(LNK_EINVAL, "%s", c->side_err[i]);
    }
    for (int k = 0; k < K_N_PARAMS; k++) {
        if (k == K_TASK || k == K_SEED)
            continue;
        if (!lnk_cfg_applies(c->task, k)) {
            /* a key that does not apply is ignored: an invalid value set by
             * hand is dropped (the key derives from its base) */
            value v = lnk_cfg_get(c, k);
            int too_big;
            if (v.i != -1 && !lnk_cfg_value_ok(k, &v, &too_big))
                *int_field(c, k) = -1;
            continue;
        }
        if ((st = check_field(c, k)) != LNK_OK)
            return st;
    }
    /* saved files hold the seed as a JSON (signed 64-bit) integer */
    if (c->seed > (uint64_t)INT64_MAX)
        return lnk_error(LNK_EINVAL, "config: key 'seed': expected an integer from 0 to %lld, got %llu",
                         (long long)INT64_MAX, (unsigned long long)c->seed);
    return LNK_OK;
}

/* Rules between keys (MODEL.md §8, "Combinations"). */
static int check_cross(const lnk_config *c)
{
    if (c->pos == LNK_PE_SINUSOIDAL && c->d % 2 != 0)
        return lnk_error(LNK_EINVAL,
                         "config: key 'd': must be even (sinusoidal position table, MODEL.md §2; "
                         "pos learned and none allow an odd d), got %d",
                         c->d);
    if (c->d % c->h != 0)
        return lnk_error(LNK_EINVAL, "config: keys 'd' and 'h': d must be a multiple of h (d %d, h %d)",
                         c->d, c->h);
    if (c->pos == LNK_PE_ROPE && (c->d / c->h) % 2 != 0)
        return lnk_error(LNK_EINVAL,
                         "config: keys 'pos', 'd' and 'h': pos rope rotates pairs of a head's "
                         "columns, so d / h must be even (d %d, h %d: d / h = %d; MODEL.md §2)",
                         c->d, c->h, c->d / c->h);
    if (c->task == LNK_TASK_CLS && c->tie_output && c->n_classes != c->V_src)
        return lnk_error(LNK_EINVAL,
                         "config: keys 'tie_output' and 'n_classes': task cls with tie_output needs "
                         "n_classes == V_src (n_classes %d, V_src %d)",
                         c->n_classes, c->V_src);
    return LNK_OK;
}

int lnk_config_finalize(lnk_config *c)
{
    int st = check_fields(c);
    if (st != LNK_OK)
        return st;
    lnk_config raw = *c; /* before derivation, to name the key of a size error */
    if ((st = derive(c)) != LNK_OK || (st = check_cross(c)) != LNK_OK)
        return st;
    double np, nt;
    lnk_config_size(c, &np, &nt);
    if (np > (double)LNK_MAX_PARAMS || nt > (double)LNK_MAX_TENSORS)
        return size_error(&raw, np, nt);
    return LNK_OK;
}
