/* yamljson.c -- YAML (or JSON) text -> jansson values, with bounds. */
#include "lib/yamljson.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/strmap.h"

/* An anchored value and the height of its tree, so an alias can be refused
 * when it would nest deeper than the limit wherever it is used. */
typedef struct anchor_ent {
    json_t *v;
    int height;
} anchor_ent;

typedef struct ctx {
    yaml_parser_t p;
    strmap *anchors;      /* name -> anchor (owned, released at the end) */
    size_t nodes;
    size_t alias_bytes;   /* string bytes copied by alias expansion */
    gp_err *err;
} ctx;

static json_t *fail_at(ctx *x, const yaml_mark_t *m, const char *what)
{
    gp_fail(x->err, "%zu:%zu: %s", m->line + 1, m->column + 1, what);
    return NULL;
}

static bool is_int(const char *s, json_int_t *out)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!*p)
        return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool is_float(const char *s, double *out)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    bool digit = false, dot = false;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digit = true;
        else if (*p == '.' && !dot)
            dot = true;
        else if ((*p == 'e' || *p == 'E') && digit)
            break;
        else
            return false;
    }
    if (!digit)
        return false;
    char *end;
    *out = strtod(s, &end);
    return *end == '\0';
}

static json_t *scalar(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || ev->data.scalar.tag) {
        json_t *s = json_stringn(v, len);   /* NULL for invalid UTF-8 */
        return s ? s : json_string("");
    }
    if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
        strcmp(v, "NULL") == 0)
        return json_null();
    if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "TRUE") == 0)
        return json_true();
    if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0)
        return json_false();
    json_int_t i;
    if (is_int(v, &i))
        return json_integer(i);
    double d;
    if (is_float(v, &d))
        return json_real(d);
    json_t *s = json_stringn(v, len);
    return s ? s : json_string("");
}

static json_t *node(ctx *x, yaml_event_t *ev, int depth);

static int height(const json_t *v)
{
    int h = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            int ch = height(c);
            if (ch > h)
                h = ch;
        }
        return h + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            int ch = height(c);
            if (ch > h)
                h = ch;
        }
        return h + 1;
    }
    return 0;
}

static void anchor_free(anchor_ent *a)
{
    if (a) {
        json_decref(a->v);
        free(a);
    }
}

static void remember_anchor(ctx *x, const yaml_char_t *name, json_t *v)
{
    if (!name || !v)
        return;
    anchor_ent *a = xmalloc(sizeof *a);
    a->v = json_incref(v);
    a->height = height(v);
    anchor_free(strmap_put(x->anchors, (const char *)name, a));
}

/* Consumes events until the end of the collection that `ev` started. */
static json_t *collection(ctx *x, yaml_event_t *start, int depth)
{
    bool is_map = start->type == YAML_MAPPING_START_EVENT;
    json_t *out = is_map ? json_object() : json_array();
    yaml_char_t *anchor = is_map ? start->data.mapping_start.anchor
                                 : start->data.sequence_start.anchor;
    char *anchor_copy = anchor ? xstrdup((const char *)anchor) : NULL;
    json_t *merges = json_array();   /* `<<` sources, applied after the explicit keys */
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&x->p, &ev)) {
            fail_at(x, &x->p.problem_mark, x->p.problem ? x->p.problem : "YAML syntax error");
            goto bad;
        }
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (!is_map) {
            json_t *v = node(x, &ev, depth + 1);
            yaml_event_delete(&ev);
            if (!v)
                goto bad;
            json_array_append_new(out, v);
            continue;
        }
        yaml_mark_t km = ev.start_mark;
        json_t *k = node(x, &ev, depth + 1);
        yaml_event_delete(&ev);
        if (!k)
            goto bad;
        if (!json_is_string(k)) {
            /* keys like 1 or true: keep their text */
            char *txt = json_dumps(k, JSON_ENCODE_ANY);
            json_decref(k);
            k = json_string(txt ? txt : "");
            free(txt);
        }
        yaml_event_t vev;
        if (!yaml_parser_parse(&x->p, &vev)) {
            json_decref(k);
            fail_at(x, &x->p.problem_mark, x->p.problem ? x->p.problem : "YAML syntax error");
            goto bad;
        }
        json_t *v = node(x, &vev, depth + 1);
        yaml_event_delete(&vev);
        if (!v) {
            json_decref(k);
            goto bad;
        }
        if (strcmp(json_string_value(k), "<<") == 0 && (json_is_object(v) || json_is_array(v))) {
            json_array_append_new(merges, v);   /* merge key: explicit keys win */
        } else if (json_object_get(out, json_string_value(k))) {
            json_decref(k);
            json_decref(v);
            fail_at(x, &km, "duplicate mapping key");
            goto bad;
        } else {
            json_object_set_new(out, json_string_value(k), v);
        }
        json_decref(k);
    }
    /* earlier merge sources win over later ones, explicit keys over all */
    size_t mi;
    json_t *m;
    json_array_foreach(merges, mi, m) {
        if (json_is_object(m)) {
            json_object_update_missing(out, m);
            continue;
        }
        size_t j;
        json_t *e;
        json_array_foreach(m, j, e) {
            if (json_is_object(e))
                json_object_update_missing(out, e);
        }
    }
    json_decref(merges);
    remember_anchor(x, (yaml_char_t *)anchor_copy, out);
    free(anchor_copy);
    return out;
bad:
    json_decref(merges);
    free(anchor_copy);
    json_decref(out);
    return NULL;
}

/* Nodes and string bytes of a tree (what an alias copy costs). */
static void count_tree(const json_t *v, size_t *nodes, size_t *bytes)
{
    (*nodes)++;
    if (json_is_string(v)) {
        *bytes += json_string_length(v);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            *bytes += strlen(k);
            count_tree(c, nodes, bytes);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) count_tree(c, nodes, bytes);
    }
}

static json_t *node(ctx *x, yaml_event_t *ev, int depth)
{
    if (depth > YAMLJSON_MAX_DEPTH)
        return fail_at(x, &ev->start_mark, "nesting deeper than 64 levels");
    if (++x->nodes > YAMLJSON_MAX_NODES)
        return fail_at(x, &ev->start_mark, "document too large");
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        json_t *v = scalar(ev);
        remember_anchor(x, ev->data.scalar.anchor, v);
        return v;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        return collection(x, ev, depth);
    case YAML_ALIAS_EVENT: {
        anchor_ent *a = strmap_get(x->anchors, (const char *)ev->data.alias.anchor);
        if (!a)
            return fail_at(x, &ev->start_mark, "alias to an unknown anchor");
        if (depth + a->height > YAMLJSON_MAX_DEPTH)
            return fail_at(x, &ev->start_mark, "alias nests deeper than 64 levels");
        count_tree(a->v, &x->nodes, &x->alias_bytes);
        if (x->nodes > YAMLJSON_MAX_NODES || x->alias_bytes > YAMLJSON_MAX_FILE)
            return fail_at(x, &ev->start_mark, "aliases expand past the size limit");
        json_t *copy = json_deep_copy(a->v);
        if (!copy)
            return fail_at(x, &ev->start_mark, "cannot copy the aliased value");
        return copy;
    }
    default:
        return fail_at(x, &ev->start_mark, "unexpected YAML event");
    }
}

json_t *yamljson_parse(const char *text, size_t len, gp_err *err)
{
    ctx x = {.err = err};
    if (!yaml_parser_initialize(&x.p)) {
        gp_fail(err, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_string(&x.p, (const unsigned char *)text, len);
    x.anchors = strmap_new();
    json_t *docs = json_array();
    bool ok = false;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&x.p, &ev)) {
            fail_at(&x, &x.p.problem_mark, x.p.problem ? x.p.problem : "YAML syntax error");
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            ok = true;
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT ||
            t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        json_t *v = node(&x, &ev, 0);
        yaml_event_delete(&ev);
        if (!v)
            break;
        json_array_append_new(docs, v);
    }
    size_t it = 0;
    anchor_ent *a;
    while ((a = strmap_next(x.anchors, &it, NULL)))
        anchor_free(a);
    strmap_free(x.anchors);
    yaml_parser_delete(&x.p);
    if (!ok) {
        json_decref(docs);
        return NULL;
    }
    return docs;
}

json_t *yamljson_load_file(const char *path, gp_err *err)
{
    size_t len;
    char *text = gp_read_file(path, YAMLJSON_MAX_FILE, &len, err);
    if (!text)
        return NULL;
    gp_err e;
    json_t *docs = yamljson_parse(text, len, &e);
    free(text);
    if (!docs)
        gp_fail(err, "%s:%s", path, e.msg);
    return docs;
}
