/* What the option tables record (opt.h): a checkpoint's identity and a
 * sidecar's program keys. */
#include <jansson.h>
#include <string.h>
#include "front/front.h"
#include "front/opt_int.h"
#include "lnkit/provenance.h"
#include "io/provenance_json.h" /* the sidecar form of a string the system gave */

typedef struct {
    lnk_ckpt_id *id;
    json_t *obj;
    int rc;
    int all; /* cli_opts_meta_all */
} rec;

/* A file of the identity by its SHA-256: the digest recorded when the
 * program read it (cli_prov: read once), else read here to hash it. */
static int id_file(lnk_ckpt_id *id, const char *name, const char *path)
{
    const lnk_digest *d = cli_prov() ? lnk_prov_input_find(cli_prov(), path) : NULL;
    return d ? lnk_ckpt_id_add(id, name, "%s", d->sha256) : lnk_ckpt_id_add_file(id, name, path);
}

static int id_one(const cli_opt *o, void *base, void *ctx)
{
    rec *r = ctx;
    if (!(o->flags & (CLI_ID | CLI_ID_FILE)))
        return 0;
    char f[64], b[512], nm[96];
    const char *p = (const char *)base + o->off;
    cli_opt_id_name(o, f, sizeof f);
    if (o->type == CLI_LIST) {
        int n = *(const int *)((const char *)base + o->count);
        snprintf(nm, sizeof nm, "the number of %s %s", f, o->flags & CLI_ID_FILE ? "files" :
                 "values");
        r->rc = lnk_ckpt_id_add(r->id, nm, "%d", n);
        for (int i = 0; !r->rc && i < n; i++) {
            const char *v = ((const char *const *)p)[i];
            if (o->flags & CLI_ID_FILE) {
                snprintf(nm, sizeof nm, "%s file %d (SHA-256)", f, i + 1);
                r->rc = id_file(r->id, nm, v);
            } else {
                snprintf(nm, sizeof nm, "%s %d", f, i + 1);
                r->rc = lnk_ckpt_id_add(r->id, nm, "%s", v);
            }
        }
        return r->rc;
    }
    if (o->flags & CLI_ID_FILE) {
        const char *v = *(const char *const *)p;
        snprintf(nm, sizeof nm, "%s (SHA-256)", f);
        return r->rc = v ? id_file(r->id, nm, v) : LNK_OK;
    }
    const void *d = cli_default_of(p);
    char db[512];
    const char *v = cli_opt_text(o, base, b, sizeof b);
    const char *dv = d ? cli_opt_text(o, (const char *)d - o->off, db, sizeof db) : NULL;
    if ((o->flags & CLI_ID_SET) && d && !strcmp(v ? v : "", dv ? dv : ""))
        return 0; /* the default: recorded by its absence, as before the option existed */
    if (o->type == CLI_REAL) /* every digit */
        return r->rc = lnk_ckpt_id_add(r->id, f, "%.17g", *(const double *)p);
    return r->rc = lnk_ckpt_id_add(r->id, f, "%s", v ? v : "");
}

int cli_opts_id(const cli_opt *table, const void *args, int groups, lnk_ckpt_id *id)
{
    rec r = {id, NULL, LNK_OK, 0};
    cli_opts_each(table, (void *)args, groups, id_one, &r);
    return r.rc;
}

static int meta_one(const cli_opt *o, void *base, void *ctx)
{
    rec *r = ctx;
    if (!(o->flags & CLI_META) && !(r->all && !(o->flags & CLI_WRITES)))
        return 0;
    char key[64];
    cli_opt_meta_key(o, key, sizeof key);
    const char *p = (const char *)base + o->off;
    json_t *v = NULL;
    switch (o->type) {
    case CLI_FLAG: v = json_boolean(*(const int *)p); break;
    case CLI_INT: v = json_integer(*(const int *)p); break;
    case CLI_LONG: v = json_integer(*(const long *)p); break;
    case CLI_U64: v = json_integer((json_int_t) * (const uint64_t *)p); break;
    case CLI_REAL: v = json_real(*(const double *)p); break;
    case CLI_INTS: case CLI_WORDS: {
        const cli_ints *l = (const cli_ints *)p;
        v = json_array();
        for (int i = 0; v && i < l->n; i++) {
            const char *w = NULL;
            for (const cli_choice *c = o->type == CLI_WORDS ? o->ref : NULL; c && c->name; c++)
                if (c->value == l->v[i])
                    w = c->name;
            json_array_append_new(v, w ? json_string(w) : json_integer(l->v[i]));
        }
        break;
    }
    case CLI_LIST: { /* names as the system gave them: docs/MODEL.md section 9's form */
        v = json_array();
        json_t *hex = json_array();
        int n = *(const int *)((const char *)base + o->count), raw = 0;
        for (int i = 0; v && hex && i < n; i++) {
            const char *t = ((const char *const *)p)[i];
            json_t *h = lnk_json_os_hex(t);
            raw |= h && !json_is_null(h);
            if (json_array_append_new(v, lnk_json_os_text(t)) || json_array_append_new(hex, h))
                json_decref(v), v = NULL;
        }
        char hk[80];
        snprintf(hk, sizeof hk, "%s_bytes_hex", key);
        if (v && hex && raw) {
            if (json_object_set_new(r->obj, key, v) || json_object_set_new(r->obj, hk, hex))
                r->rc = lnk_error(LNK_ENOMEM, "out of memory for the sidecar");
            return r->rc;
        }
        json_decref(hex);
        break;
    }
    default: {
        char b[64];
        const char *t = cli_opt_text(o, base, b, sizeof b);
        if (t && o->type == CLI_STR) { /* a path or a pattern: section 9's form */
            if (lnk_json_set_os(r->obj, key, t))
                r->rc = lnk_error(LNK_ENOMEM, "out of memory for the sidecar");
            return r->rc;
        }
        v = t ? json_string(t) : json_null();
    }
    }
    if (!v || json_object_set_new(r->obj, key, v))
        r->rc = lnk_error(LNK_ENOMEM, "out of memory for the sidecar");
    return r->rc;
}

int cli_opts_meta(const cli_opt *table, const void *args, int groups, json_t *obj)
{
    rec r = {NULL, obj, LNK_OK, 0};
    cli_opts_each(table, (void *)args, groups, meta_one, &r);
    return r.rc;
}

int cli_opts_meta_all(const cli_opt *table, const void *args, int groups, json_t *obj)
{
    rec r = {NULL, obj, LNK_OK, 1};
    cli_opts_each(table, (void *)args, groups, meta_one, &r);
    return r.rc;
}
