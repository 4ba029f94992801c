/* The NAME.meta.json sidecar: the program's own keys (lnk_meta), the form of
 * strings the system gives (docs/MODEL.md §9) and the one writer,
 * lnk_meta_write.  See include/lnkit/io.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/provenance_json.h"
#include "lnkit/config.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

/* ------------------------------------------------- strings of the system */

/* Length of the UTF-8 sequence at s (n bytes left), 0 if none starts there:
 * RFC 3629's table, so overlong forms, surrogates and code points above
 * U+10FFFF are not sequences. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return k;
}

int lnk_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq(u + i, n - i)))
            return 0;
    return 1;
}

json_t *lnk_json_os_text(const char *s)
{
    size_t n = strlen(s);
    if (lnk_utf8_valid(s, n))
        return json_stringn(s, n);
    /* each stray byte becomes U+FFFD (3 bytes) */
    char *t = malloc(3 * n + 1);
    if (!t)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0, k; i < n; i += k) {
        k = utf8_seq(u + i, n - i);
        if (k) {
            memcpy(t + o, s + i, k);
            o += k;
        } else {
            memcpy(t + o, "\xEF\xBF\xBD", 3);
            o += 3;
            k = 1;
        }
    }
    json_t *j = json_stringn(t, o);
    free(t);
    return j;
}

json_t *lnk_json_os_hex(const char *s)
{
    size_t n = strlen(s);
    if (lnk_utf8_valid(s, n))
        return json_null();
    static const char d[] = "0123456789abcdef";
    char *h = malloc(2 * n + 1);
    if (!h)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        h[2 * i] = d[(unsigned char)s[i] >> 4];
        h[2 * i + 1] = d[(unsigned char)s[i] & 15];
    }
    json_t *j = json_stringn(h, 2 * n);
    free(h);
    return j;
}

int lnk_json_set_os(json_t *obj, const char *key, const char *s)
{
    json_t *t = lnk_json_os_text(s);
    if (!t || json_object_set_new(obj, key, t) != 0)
        return -1;
    json_t *h = lnk_json_os_hex(s);
    if (!h)
        return -1;
    if (json_is_null(h))
        return 0;
    char *k = NULL;
    if (asprintf(&k, "%s_bytes_hex", key) < 0) {
        json_decref(h);
        return -1;
    }
    int r = json_object_set_new(obj, k, h);
    free(k);
    return r ? -1 : 0;
}

/* ------------------------------------------------------ the program's keys */

struct lnk_meta {
    json_t *o;
    int st;          /* the first failure */
    char msg[512];   /* its message */
};

static const char *const STANDARD[] = {
    "config", "seed", "command_line", "cwd", "inputs", "named_seeds", "git_commit", "versions",
    "blas_kernel", "blas_kernel_choice", "threads", "ranks", "start_time", "wall_seconds", NULL};

lnk_meta *lnk_meta_alloc(void)
{
    lnk_meta *m = calloc(1, sizeof *m);
    if (m && !(m->o = json_object())) {
        free(m);
        m = NULL;
    }
    if (!m)
        lnk_error(LNK_ENOMEM, "sidecar keys: out of memory");
    return m;
}

void lnk_meta_free(lnk_meta *m)
{
    if (!m)
        return;
    json_decref(m->o);
    free(m);
}

const json_t *lnk_meta_object(const lnk_meta *m) { return m->o; }

int lnk_meta_status(const lnk_meta *m)
{
    if (m->st != LNK_OK)
        lnk_error(m->st, "%s", m->msg);
    return m->st;
}

/* Record a failure (the first one stays) and return it. */
static int failed(lnk_meta *m, int st)
{
    if (m->st == LNK_OK) {
        m->st = st;
        snprintf(m->msg, sizeof m->msg, "%s", lnk_errmsg());
    }
    return st;
}

/* May key be set in m? */
static int key_ok(lnk_meta *m, const char *key)
{
    if (!key || !key[0] || !lnk_utf8_valid(key, strlen(key)))
        return failed(m, lnk_error(LNK_EINVAL, "sidecar key '%s': empty or not UTF-8",
                                   key ? key : ""));
    for (int i = 0; STANDARD[i]; i++)
        if (!strcmp(key, STANDARD[i]))
            return failed(m, lnk_error(LNK_EINVAL, "sidecar key '%s' clashes with a standard "
                                       "key (docs/MODEL.md section 9)", key));
    size_t n = strlen(key), s = strlen("_bytes_hex");
    if (n >= s && !strcmp(key + n - s, "_bytes_hex"))
        return failed(m, lnk_error(LNK_EINVAL, "sidecar key '%s': names ending in _bytes_hex "
                                   "hold the exact bytes of a string (docs/MODEL.md section 9)",
                                   key));
    if (json_object_get(m->o, key))
        return failed(m, lnk_error(LNK_EINVAL, "sidecar key '%s' set twice", key));
    return LNK_OK;
}

/* m[key] = v (taken over). */
static int put(lnk_meta *m, const char *key, json_t *v)
{
    int st = key_ok(m, key);
    if (st != LNK_OK) {
        json_decref(v);
        return st;
    }
    if (!v || json_object_set_new(m->o, key, v) != 0)
        return failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", key));
    return LNK_OK;
}

int lnk_meta_str(lnk_meta *m, const char *key, const char *s)
{
    int st = key_ok(m, key);
    if (st != LNK_OK)
        return st;
    if (lnk_json_set_os(m->o, key, s ? s : "") != 0)
        return failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", key));
    return LNK_OK;
}

int lnk_meta_int(lnk_meta *m, const char *key, long long v)
{
    return put(m, key, json_integer((json_int_t)v));
}

int lnk_meta_real(lnk_meta *m, const char *key, double v)
{
    if (!isfinite(v))
        return failed(m, lnk_error(LNK_ENONFINITE, "sidecar key '%s': %g is not finite", key, v));
    return put(m, key, json_real(v));
}

int lnk_meta_bool(lnk_meta *m, const char *key, int v) { return put(m, key, json_boolean(v)); }

int lnk_meta_null(lnk_meta *m, const char *key) { return put(m, key, json_null()); }

int lnk_meta_ints(lnk_meta *m, const char *key, const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer(v[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return put(m, key, a);
}

int lnk_meta_reals(lnk_meta *m, const char *key, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return failed(m, lnk_error(LNK_ENONFINITE, "sidecar key '%s': element %zu, %g, is "
                                       "not finite", key, i, v[i]));
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real(v[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return put(m, key, a);
}

int lnk_meta_strs(lnk_meta *m, const char *key, const char *const *s, size_t n)
{
    /* an element that is not UTF-8: its text, and the hex of every element
     * (null for the UTF-8 ones) in KEY_bytes_hex, as command_line */
    json_t *a = json_array(), *h = json_array();
    int bad = !a || !h, exact = 1;
    for (size_t i = 0; !bad && i < n; i++) {
        json_t *x = lnk_json_os_hex(s[i] ? s[i] : "");
        exact &= x && json_is_null(x);
        bad |= json_array_append_new(a, lnk_json_os_text(s[i] ? s[i] : "")) |
               json_array_append_new(h, x);
    }
    if (bad) {
        json_decref(a);
        json_decref(h);
        return failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", key));
    }
    int st = put(m, key, a);
    if (st != LNK_OK || exact) {
        json_decref(h);
        return st;
    }
    char *k = NULL;
    if (asprintf(&k, "%s_bytes_hex", key) < 0 || json_object_set_new(m->o, k, h) != 0)
        st = failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", key));
    free(k);
    return st;
}

int lnk_meta_json(lnk_meta *m, const char *key, json_t *v)
{
    if (v && json_is_real(v) && !isfinite(json_real_value(v))) {
        json_decref(v);
        return failed(m, lnk_error(LNK_ENONFINITE, "sidecar key '%s': not finite", key));
    }
    return put(m, key, v);
}

int lnk_meta_add(lnk_meta *m, const lnk_meta *from)
{
    if (from->st != LNK_OK)
        return failed(m, lnk_error(from->st, "%s", from->msg));
    const char *k;
    json_t *v;
    json_object_foreach(from->o, k, v) {
        if (json_object_get(m->o, k))
            return failed(m, lnk_error(LNK_EINVAL, "sidecar key '%s' set twice", k));
        if (json_object_set(m->o, k, v) != 0)
            return failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", k));
    }
    return LNK_OK;
}

/* A string of an even number of lower-case hex digits. */
static int is_hex(const json_t *v)
{
    const char *h = json_string_value(v);
    if (!h || strlen(h) % 2)
        return 0;
    return strspn(h, "0123456789abcdef") == strlen(h);
}

/* In an object a program made (lnkit meta --extra: a Python script's own
 * keys), KEY_bytes_hex is the exact-bytes form of KEY's string (or of each
 * string of KEY's array, null where the string is UTF-8), as lnk_meta_str
 * writes it: accepted beside KEY, after it. */
static int hex_sibling_ok(lnk_meta *m, const char *k, const json_t *v)
{
    size_t n = strlen(k), s = strlen("_bytes_hex");
    char base[256];
    if (n <= s || n - s >= sizeof base || strcmp(k + n - s, "_bytes_hex"))
        return 0;
    snprintf(base, sizeof base, "%.*s", (int)(n - s), k);
    const json_t *b = json_object_get(m->o, base);
    if (json_is_string(b))
        return is_hex(v);
    if (!json_is_array(b) || !json_is_array(v) || json_array_size(b) != json_array_size(v))
        return 0;
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_null(json_array_get(v, i)) && !is_hex(json_array_get(v, i)))
            return 0;
    return 1;
}

int lnk_meta_add_object(lnk_meta *m, const json_t *obj)
{
    if (!json_is_object(obj))
        return failed(m, lnk_error(LNK_EINVAL, "sidecar keys: not a JSON object"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (hex_sibling_ok(m, k, v) && !json_object_get(m->o, k)) {
            if (json_object_set(m->o, k, v) != 0)
                return failed(m, lnk_error(LNK_ENOMEM, "sidecar key '%s': out of memory", k));
            continue;
        }
        int st = put(m, k, json_incref(v));
        if (st != LNK_OK)
            return st;
    }
    return LNK_OK;
}

int lnk_meta_parse(lnk_meta *m, const char *text, const char *what)
{
    json_error_t e;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!o)
        return failed(m, lnk_error(LNK_EINVAL, "%s: not valid JSON: %s (line %d, column %d)",
                                   what, e.text, e.line, e.column));
    int st = json_is_object(o) ? lnk_meta_add_object(m, o)
                               : failed(m, lnk_error(LNK_EINVAL, "%s: must be a JSON object",
                                                     what));
    json_decref(o);
    return st;
}

/* ------------------------------------------------------------- the writer */

char *lnk_meta_path(const char *csv_path)
{
    size_t n = strlen(csv_path);
    if (n >= 4 && strcmp(csv_path + n - 4, ".csv") == 0)
        n -= 4;
    char *p = NULL;
    if (asprintf(&p, "%.*s.meta.json", (int)n, csv_path) < 0)
        return NULL;
    return p;
}

/* json_object_set_new that reports allocation failure. */
static int jset(json_t *o, const char *k, json_t *v)
{
    return (v && json_object_set_new(o, k, v) == 0) ? 0 : -1;
}

/* "config" and "seed" of cfg (null without one). */
static int config_json(json_t *root, const lnk_config *cfg, const char *path)
{
    json_t *jcfg = json_null(), *jseed = json_null();
    if (cfg) {
        char *text = lnk_config_to_json(cfg, 0, NULL, 0);
        if (!text) {
            /* keep the config module's message, name the file */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", lnk_errmsg());
            return lnk_error(LNK_EINVAL, "%s: cannot serialise the configuration: %s", path, msg);
        }
        json_error_t jerr;
        jcfg = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        free(text);
        if (!jcfg)
            return lnk_error(LNK_EINVAL, "%s: configuration JSON does not parse: %s", path,
                             jerr.text);
        /* seeds above 2^63-1 do not fit a JSON integer of jansson: write them as text */
        if (cfg->seed <= (uint64_t)LLONG_MAX) {
            jseed = json_integer((json_int_t)cfg->seed);
        } else {
            char s[32];
            snprintf(s, sizeof s, "%llu", (unsigned long long)cfg->seed);
            jseed = json_string(s);
        }
    }
    if (jset(root, "config", jcfg) | jset(root, "seed", jseed))
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    return LNK_OK;
}

/* The whole sidecar as JSON text (malloc'd) into *text; path names it in messages. */
static int build(const char *path, const lnk_prov *p, const lnk_config *cfg,
                 const lnk_meta *extra, const char *start_iso, double wall_seconds, char **text)
{
    *text = NULL;
    if (!p)
        return lnk_error(LNK_EINVAL, "%s: no provenance record", path);
    if (!isfinite(wall_seconds))
        return lnk_error(LNK_ENONFINITE, "%s: key 'wall_seconds': %g is not finite", path,
                         wall_seconds);
    if (start_iso && !lnk_iso_time_valid(start_iso))
        return lnk_error(LNK_EINVAL, "%s: key 'start_time': '%s' is not an ISO 8601 time such "
                         "as 2026-01-31T12:00:00Z", path, start_iso);
    if (extra && extra->st != LNK_OK)
        return lnk_error(extra->st, "%s: %s", path, extra->msg);
    json_t *root = json_object();
    if (!root)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    int st = config_json(root, cfg, path);
    /* command line, inputs with checksums, seeds, git commit, versions,
     * BLAS kernel, threads, ranks: one record for every sidecar */
    if (st == LNK_OK)
        st = lnk_prov_json(p, root);
    if (st == LNK_OK &&
        (jset(root, "start_time", start_iso ? lnk_json_os_text(start_iso) : json_null()) |
         jset(root, "wall_seconds", json_real(wall_seconds))))
        st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
    const char *k;
    json_t *v;
    if (st == LNK_OK && extra)
        json_object_foreach(extra->o, k, v) {
            /* the standard keys are the point of the sidecar: never overwritten */
            if (json_object_get(root, k)) {
                st = lnk_error(LNK_EINVAL, "%s: key '%s' clashes with a standard key", path, k);
                break;
            }
            if (json_object_set(root, k, v) != 0) {
                st = lnk_error(LNK_ENOMEM, "%s: out of memory", path);
                break;
            }
        }
    if (st == LNK_OK && !(*text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17))))
        st = lnk_error(LNK_ENOMEM, "%s: cannot serialise the JSON", path);
    json_decref(root);
    return st;
}

int lnk_meta_text(const lnk_prov *p, const lnk_config *cfg, const lnk_meta *extra,
                  const char *start_iso, double wall_seconds, char **text)
{
    return build("sidecar", p, cfg, extra, start_iso, wall_seconds, text);
}

int lnk_meta_write(const char *csv_path, const lnk_prov *p, const lnk_config *cfg,
                   const lnk_meta *extra, const char *start_iso, double wall_seconds)
{
    if (!csv_path || !csv_path[0])
        return lnk_error(LNK_EINVAL, "meta: empty output path");
    /* beside a device or FIFO (-o /dev/null) there is no place for a sidecar */
    if (lnk_output_kind(csv_path) == LNK_OUT_STREAM)
        return LNK_OK;
    char *path = lnk_meta_path(csv_path), *text = NULL;
    if (!path)
        return lnk_error(LNK_ENOMEM, "%s: out of memory", csv_path);
    int st = build(path, p, cfg, extra, start_iso, wall_seconds, &text);
    lnk_afile a;
    if (st == LNK_OK && (st = lnk_afile_open(&a, path)) == LNK_OK) {
        if (fputs(text, a.f) == EOF || fputc('\n', a.f) == EOF) {
            int e = errno;
            lnk_afile_abort(&a);
            st = lnk_error(LNK_EIO, "%s: write failed: %s", path, strerror(e));
        } else {
            st = lnk_afile_commit(&a);
        }
    }
    free(text);
    free(path);
    return st;
}
