/* Model configuration (docs/MODEL.md §8) as JSON: files and texts in
 * (unknown keys, wrong types, ranges, derived keys recorded as such, the
 * read-only keys n_params / param_order checked), and the resolved
 * configuration out.  See include/lnkit/config.h for the semantics. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/config_keys.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

/* Marks a number too large for jansson, rewritten as a string (load_json). */
#define BIG_MARK '\x01'

/* "a string \"abc\"", "the integer 3", ... for wrong-type messages. */
static const char *describe_json(const json_t *j, char *buf, size_t n)
{
    switch (json_typeof(j)) {
    case JSON_STRING: {
        const char *s = json_string_value(j);
        if (s[0] == BIG_MARK) { /* a number too large for jansson (load_json) */
            snprintf(buf, n, "the number %.40s (out of range)", s + 1);
            break;
        }
        if (strlen(s) > 40)
            snprintf(buf, n, "a string \"%.40s...\"", s);
        else
            snprintf(buf, n, "a string \"%s\"", s);
        break;
    }
    case JSON_INTEGER: snprintf(buf, n, "the integer %lld", (long long)json_integer_value(j)); break;
    case JSON_REAL: snprintf(buf, n, "the real number %.17g", json_real_value(j)); break;
    case JSON_TRUE: snprintf(buf, n, "the boolean true"); break;
    case JSON_FALSE: snprintf(buf, n, "the boolean false"); break;
    case JSON_OBJECT: snprintf(buf, n, "an object"); break;
    case JSON_ARRAY: snprintf(buf, n, "an array"); break;
    default: snprintf(buf, n, "null"); break;
    }
    return buf;
}

static int json_bad(const char *what, int k, const json_t *j, int too_big)
{
    char eb[160], gb[96];
    return lnk_error(LNK_EINVAL, "%s: key '%s': expected %s, got %s", what, lnk_cfg_keys[k].name,
                     lnk_cfg_expected(k, 0, too_big, eb, sizeof eb), describe_json(j, gb, sizeof gb));
}

/* param_order: an array of strings, stored as a malloc'd copy. */
static int json_order(lnk_config *t, const json_t *j, const char *what)
{
    if (!json_is_array(j))
        return json_bad(what, K_PARAM_ORDER, j, 0);
    size_t n = json_array_size(j);
    if (n > INT_MAX)
        return lnk_error(LNK_EINVAL, "%s: key 'param_order': too many names (%zu)", what, n);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return lnk_error(LNK_ENOMEM, "%s: key 'param_order': out of memory", what);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(j, i);
        if (!json_is_string(e) || json_string_value(e)[0] == BIG_MARK) {
            char gb[96];
            lnk_cfg_free_order(names, (int)n);
            return lnk_error(LNK_EINVAL, "%s: key 'param_order': element %zu: expected a string, got %s",
                             what, i, describe_json(e, gb, sizeof gb));
        }
        names[i] = strdup(json_string_value(e));
        if (!names[i]) {
            lnk_cfg_free_order(names, (int)n);
            return lnk_error(LNK_ENOMEM, "%s: key 'param_order': out of memory", what);
        }
    }
    t->file_param_order = names;
    t->file_n_param_order = (int)n;
    return LNK_OK;
}

static int json_value(lnk_config *t, int k, const json_t *j, const char *what);

/* One key of the file into t (a scratch copy of the caller's config); *kk
 * gets the key's index. */
static int json_key(lnk_config *t, const char *name, const json_t *j, const char *what,
                    char **orig_order, int *kk)
{
    int k = lnk_cfg_find_key(name);
    *kk = k;
    if (k < 0) {
        char kb[400], hint[120] = "";
        char norm[64];
        snprintf(norm, sizeof norm, "%s", name);
        for (char *p = norm; *p; p++)
            if (*p == '-')
                *p = '_';
        if (lnk_cfg_find_key(norm) >= 0)
            snprintf(hint, sizeof hint, " (did you mean '%s'?)", norm);
        return lnk_error(LNK_EINVAL, "%s: unknown key '%s'%s; known keys: %s", what, name, hint,
                         lnk_cfg_key_list(kb, sizeof kb));
    }
    if (k == K_PARAM_ORDER) {
        /* drop a param_order set earlier in this call (never the caller's own) */
        if (t->file_param_order != orig_order)
            lnk_cfg_free_order(t->file_param_order, t->file_n_param_order);
        t->file_param_order = NULL;
        t->file_n_param_order = 0;
        return json_is_null(j) ? LNK_OK : json_order(t, j, what);
    }
    int st = json_value(t, k, j, what);
    if (st == LNK_EINVAL && lnk_cfg_side_index(k) >= 0) {
        lnk_cfg_defer_side(t, k); /* reported by finalize if the key applies to the task */
        return LNK_OK;
    }
    return st;
}

/* A value of key k (not param_order) into t. */
static int json_value(lnk_config *t, int k, const json_t *j, const char *what)
{
    value v = {0, 0, 0};
    if (json_is_null(j)) {
        v.reset = 1;
        lnk_cfg_store(t, k, &v);
        return LNK_OK;
    }
    switch (lnk_cfg_keys[k].kind) {
    case KIND_ENUM: {
        if (!json_is_string(j))
            return json_bad(what, k, j, 0);
        const char *s = json_string_value(j);
        v.i = -1;
        for (int i = 0; lnk_cfg_keys[k].names[i]; i++)
            if (strcmp(s, lnk_cfg_keys[k].names[i]) == 0)
                v.i = i;
        break;
    }
    case KIND_INT:
    case KIND_SEED:
    case KIND_NPARAMS:
        if (!json_is_integer(j))
            return json_bad(what, k, j, 0);
        v.i = (long long)json_integer_value(j);
        break;
    case KIND_REAL:
        if (!json_is_number(j))
            return json_bad(what, k, j, 0);
        v.r = json_number_value(j);
        break;
    case KIND_BOOL:
        if (!json_is_boolean(j))
            return json_bad(what, k, j, 0);
        v.i = json_is_true(j);
        break;
    case KIND_ORDER:
        break;
    }
    int too_big;
    if (!lnk_cfg_value_ok(k, &v, &too_big))
        return json_bad(what, k, j, too_big);
    lnk_cfg_store(t, k, &v);
    return LNK_OK;
}

/* The key jansson complained about as a duplicate: its error position is just
 * past the key's closing quote, so walk back to the opening quote. */
static void duplicate_key(const char *text, size_t len, int pos, char *out, size_t n)
{
    out[0] = '\0';
    if (pos < 2 || (size_t)pos > len || text[pos - 1] != '"')
        return;
    int i = pos - 2;
    for (; i >= 0; i--) {
        if (text[i] != '"')
            continue;
        int bs = 0;
        for (int j = i - 1; j >= 0 && text[j] == '\\'; j--)
            bs++;
        if (bs % 2 == 0)
            break;
    }
    if (i < 0)
        return;
    json_t *s = json_loadb(text + i, (size_t)(pos - i), JSON_DECODE_ANY, NULL);
    if (json_is_string(s))
        snprintf(out, n, "%s", json_string_value(s));
    json_decref(s);
}

/* A derived key given in a file with the value it derives from its base key,
 * also given in the file, records the derivation, not a choice: unset it, so
 * that it follows the base when a flag changes that (`--config saved.json
 * --L 12` on a file with "L": 6, "L_dec": 6 builds 12 decoder layers). */
static void follow_bases(lnk_config *t, const int *given)
{
    if (given[K_D_FF] && given[K_D] && (long long)t->d_ff == 4LL * t->d)
        t->d_ff = -1;
    if (given[K_L] && given[K_L_ENC] && t->L_enc == t->L)
        t->L_enc = -1;
    if (given[K_L] && given[K_L_DEC] && t->L_dec == t->L)
        t->L_dec = -1;
    /* n_classes first: it derives from V_src as the file has it */
    int v_src = t->V_src == -1 ? t->V : t->V_src;
    if (given[K_N_CLASSES] && (given[K_V_SRC] || given[K_V]) && t->n_classes == v_src)
        t->n_classes = -1;
    if (given[K_V] && given[K_V_SRC] && t->V_src == t->V)
        t->V_src = -1;
    if (given[K_V] && given[K_V_TGT] && t->V_tgt == t->V)
        t->V_tgt = -1;
    /* DeepNet's constants of a one-stack model, from the depth the file gives */
    int depth = t->task == LNK_TASK_LM ? given[K_L] || given[K_L_DEC]
                : t->task == LNK_TASK_CLS ? given[K_L] || given[K_L_ENC] : 0;
    if (depth && (given[K_DN_ALPHA] || given[K_DN_BETA])) {
        lnk_config u = *t;
        double a, b;
        u.deepnorm_alpha = u.deepnorm_beta = LNK_CFG_UNSET_REAL;
        lnk_config_deepnorm(&u, t->task == LNK_TASK_LM, &a, &b);
        if (given[K_DN_ALPHA] && t->deepnorm_alpha == a)
            t->deepnorm_alpha = LNK_CFG_UNSET_REAL;
        if (given[K_DN_BETA] && t->deepnorm_beta == b)
            t->deepnorm_beta = LNK_CFG_UNSET_REAL;
    }
}

/* n_params / param_order describe the configuration the file was saved with:
 * check their counts against the file's own keys (with the earlier sources),
 * so that a file edited after saving is caught here, naming the key. */
static int check_saved_counts(const lnk_config *t, const char *what)
{
    if (t->file_n_params < 0 && !t->file_param_order)
        return LNK_OK;
    lnk_config f = *t; /* shares file_param_order: never cleared */
    if (lnk_config_finalize(&f) != LNK_OK)
        return LNK_OK; /* not a valid configuration alone: flags may complete it */
    double np, nt;
    lnk_config_size(&f, &np, &nt);
    if (t->file_n_params >= 0 && (double)t->file_n_params != np)
        return lnk_error(LNK_EMISMATCH,
                         "%s: key 'n_params' is %lld but the file's keys give %.0f parameters "
                         "(task %s, norm_pos %s, norm %s, d %d, L_enc %d, L_dec %d): the keys were "
                         "changed after the file was saved; restore them, or remove 'n_params' "
                         "and 'param_order'",
                         what, t->file_n_params, np, lnk_task_name(f.task),
                         lnk_norm_pos_name(f.norm_pos), lnk_norm_type_name(f.norm), f.d, f.L_enc,
                         f.L_dec);
    if (t->file_param_order && (double)t->file_n_param_order != nt)
        return lnk_error(LNK_EMISMATCH,
                         "%s: key 'param_order' lists %d tensors but the file's keys give %.0f: "
                         "the keys were changed after the file was saved; restore them, or "
                         "remove 'n_params' and 'param_order'",
                         what, t->file_n_param_order, nt);
    return LNK_OK;
}

/* jansson refuses numbers beyond 64-bit integers or doubles ("too big
 * integer"), but a key that does not apply to the task must accept any JSON
 * number.  Such a number is out of range for every key: replace it by a
 * string holding BIG_MARK and its text (describe_json names it), and parse
 * again.  *work (malloc'd, or NULL) holds the rewritten text. */
static json_t *load_json(const char *text, size_t len, json_error_t *err, char **work,
                         size_t *work_len)
{
    *work = NULL;
    *work_len = len;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, err);
    for (int tries = 0; !root && json_error_code(err) == json_error_numeric_overflow &&
                        tries < 1000;
         tries++) {
        const char *t = *work ? *work : text;
        size_t n = *work ? *work_len : len, end = (size_t)err->position, start = end;
        while (start > 0 && strchr("0123456789+-.eE", t[start - 1]))
            start--;
        if (end > n || start == end)
            break;
        char *w = malloc(n + 16);
        if (!w)
            break;
        size_t m = (size_t)sprintf(w, "%.*s\"\\u0001%.*s\"", (int)start, t, (int)(end - start),
                                   t + start);
        memcpy(w + m, t + end, n - end);
        free(*work);
        *work = w;
        *work_len = m + n - end;
        root = json_loadb(w, *work_len, JSON_REJECT_DUPLICATES, err);
    }
    return root;
}

static int parse_buf(lnk_config *c, const char *text, size_t len, const char *what)
{
    if (!what)
        what = "config";
    json_error_t err;
    char *work;
    json_t *root = load_json(text, len, &err, &work, &len);
    if (!root) {
        int st;
        if (json_error_code(&err) == json_error_duplicate_key) {
            char key[128];
            duplicate_key(work ? work : text, len, err.position, key, sizeof key);
            st = lnk_error(LNK_EFORMAT, "%s:%d:%d: duplicate key '%s'", what, err.line,
                           err.column, key);
        } else {
            st = lnk_error(LNK_EFORMAT, "%s:%d:%d: invalid JSON: %s", what, err.line, err.column,
                           err.text);
        }
        free(work);
        return st;
    }
    free(work);
    if (!json_is_object(root)) {
        char gb[96];
        int st = lnk_error(LNK_EFORMAT, "%s: expected a JSON object at the top level, got %s",
                           what, describe_json(root, gb, sizeof gb));
        json_decref(root);
        return st;
    }
    /* Work on a copy so that a failure leaves *c as it was. */
    lnk_config t = *c;
    char **orig_order = c->file_param_order;
    const char *name;
    json_t *j;
    int st = LNK_OK;
    int given[K_COUNT] = {0};
    json_object_foreach(root, name, j) {
        int k;
        st = json_key(&t, name, j, what, orig_order, &k);
        if (st != LNK_OK)
            break;
        given[k] = !json_is_null(j);
    }
    json_decref(root);
    if (st == LNK_OK) {
        follow_bases(&t, given);
        st = check_saved_counts(&t, what);
    }
    if (st != LNK_OK) {
        if (t.file_param_order != orig_order)
            lnk_cfg_free_order(t.file_param_order, t.file_n_param_order);
        return st;
    }
    if (t.file_param_order != orig_order)
        lnk_cfg_free_order(c->file_param_order, c->file_n_param_order);
    *c = t;
    return LNK_OK;
}

int lnk_config_parse_json(lnk_config *c, const char *text, const char *what)
{
    if (!text)
        return lnk_error(LNK_EINVAL, "%s: no JSON text", what ? what : "config");
    return parse_buf(c, text, strlen(text), what);
}

int lnk_config_load_json(lnk_config *c, const char *path)
{
    if (!path)
        return lnk_error(LNK_EINVAL, "config: no file name");
    char *buf;
    size_t len;
    int rs = lnk_read_text_file(path, LNK_CONFIG_LIMIT, "configuration", &buf, &len);
    if (rs != LNK_OK)
        return rs;
    int st = parse_buf(c, buf, len, path);
    free(buf);
    return st;
}

/* ----------------------------------------------------------------- output */

/* Fewest significant digits that read back as x exactly, so that 1e-5 is
 * written 1e-5 rather than 1.0000000000000001e-05. */
static int shortest_digits(double x)
{
    char buf[64];
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            return p;
    }
    return 17;
}

/* Derived keys still unset (-1) are written as null, which reads back as unset. */
static json_t *int_or_null(int v) { return v == -1 ? json_null() : json_integer(v); }
static json_t *real_or_null(double v)
{
    return v == LNK_CFG_UNSET_REAL ? json_null() : json_real(v);
}

char *lnk_config_to_json(const lnk_config *c, size_t n_params, const char *const *names,
                         int n_names)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "task", json_string(lnk_task_name(c->task)));
    bad |= json_object_set_new(o, "norm_pos", json_string(lnk_norm_pos_name(c->norm_pos)));
    bad |= json_object_set_new(o, "norm", json_string(lnk_norm_type_name(c->norm)));
    bad |= json_object_set_new(o, "qk_norm", json_string(lnk_norm_type_name(c->qk_norm)));
    bad |= json_object_set_new(o, "d", json_integer(c->d));
    bad |= json_object_set_new(o, "h", json_integer(c->h));
    bad |= json_object_set_new(o, "d_ff", int_or_null(c->d_ff));
    bad |= json_object_set_new(o, "L", json_integer(c->L));
    bad |= json_object_set_new(o, "L_enc", int_or_null(c->L_enc));
    bad |= json_object_set_new(o, "L_dec", int_or_null(c->L_dec));
    bad |= json_object_set_new(o, "V", json_integer(c->V));
    bad |= json_object_set_new(o, "V_src", int_or_null(c->V_src));
    bad |= json_object_set_new(o, "V_tgt", int_or_null(c->V_tgt));
    bad |= json_object_set_new(o, "n_classes", int_or_null(c->n_classes));
    bad |= json_object_set_new(o, "init", json_string(lnk_init_name(c->init)));
    bad |= json_object_set_new(o, "seed", json_integer((json_int_t)c->seed));
    bad |= json_object_set_new(o, "eps", json_real(c->eps));
    bad |= json_object_set_new(o, "tie_output", json_boolean(c->tie_output));
    bad |= json_object_set_new(o, "label_smoothing", json_real(c->label_smoothing));
    bad |= json_object_set_new(o, "activation", json_string(lnk_activation_name(c->activation)));
    bad |= json_object_set_new(o, "pos", json_string(lnk_pos_enc_name(c->pos)));
    bad |= json_object_set_new(o, "bias", json_boolean(c->bias));
    bad |= json_object_set_new(o, "max_len", json_integer(c->max_len));
    bad |= json_object_set_new(o, "mix_ratio", json_real(c->mix_ratio));
    bad |= json_object_set_new(o, "deepnorm_alpha", real_or_null(c->deepnorm_alpha));
    bad |= json_object_set_new(o, "deepnorm_beta", real_or_null(c->deepnorm_beta));
    bad |= json_object_set_new(o, "input_scale", json_real(c->input_scale));
    if (names) {
        bad |= json_object_set_new(o, "n_params", json_integer((json_int_t)n_params));
        json_t *a = json_array();
        for (int i = 0; a && i < n_names; i++)
            bad |= json_array_append_new(a, json_string(names[i] ? names[i] : ""));
        bad |= json_object_set_new(o, "param_order", a);
    }
    /* one precision for every real (jansson's): the fewest digits that read
     * every one back exactly */
    const double reals[] = {c->eps, c->label_smoothing, c->mix_ratio, c->deepnorm_alpha,
                            c->deepnorm_beta, c->input_scale};
    int p = 1;
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        int q = shortest_digits(reals[i]);
        p = q > p ? q : p;
    }
    char *s = bad ? NULL
                  : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(p));
    json_decref(o);
    if (!s)
        return NULL;
    size_t len = strlen(s);
    char *out = malloc(len + 2);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\n';
        out[len + 1] = '\0';
    }
    free(s);
    return out;
}

int lnk_config_save_json(const lnk_config *c, const char *path, size_t n_params,
                         const char *const *names, int n_names)
{
    char *s = lnk_config_to_json(c, n_params, names, n_names);
    if (!s)
        return lnk_error(LNK_ENOMEM, "%s: cannot format the configuration as JSON", path);
    lnk_afile a;
    int st = lnk_afile_open(&a, path);
    if (st != LNK_OK) {
        free(s);
        return st;
    }
    if (fputs(s, a.f) == EOF) {
        int e = errno;
        lnk_afile_abort(&a);
        free(s);
        return lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
    }
    free(s);
    return lnk_afile_commit(&a);
}

/* ------------------------------------------------------------ key docs */

int lnk_config_describe(int i, lnk_config_key_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    int n = 0;
    while (lnk_config_keys[n])
        n++;
    if (i < 0 || i >= n)
        return lnk_error(LNK_EINVAL, "config: no key number %d (there are %d)", i, n);
    const keydef *kd = &lnk_cfg_keys[lnk_cfg_find_key(lnk_config_keys[i])];
    doc->name = kd->name;
    doc->values = kd->kind == KIND_ENUM ? kd->names : NULL;
    doc->arg = kd->arg;
    doc->help = kd->help;
    if (kd->derive) {
        snprintf(doc->def, sizeof doc->def, "%s", kd->derive);
        return LNK_OK;
    }
    /* the default's text from lnk_config_default, as a saved config writes it */
    lnk_config c;
    lnk_config_default(&c);
    char *js = lnk_config_to_json(&c, 0, NULL, 0);
    json_t *o = js ? json_loads(js, 0, NULL) : NULL, *v = o ? json_object_get(o, kd->name) : NULL;
    char *t = v && !json_is_real(v) ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    if (json_is_real(v) && asprintf(&t, "%.*g", shortest_digits(json_real_value(v)),
                                    json_real_value(v)) < 0)
        t = NULL;
    int rc = t ? LNK_OK : lnk_error(LNK_ENOMEM, "config: out of memory");
    if (t) /* strings without their quotes */
        snprintf(doc->def, sizeof doc->def, "%.*s", json_is_string(v) ? (int)strlen(t) - 2 :
                 (int)strlen(t), json_is_string(v) ? t + 1 : t);
    free(t);
    json_decref(o);
    free(js);
    return rc;
}
