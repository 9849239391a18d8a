/* watchstream.c -- bounded newline splitter and event decoder for watch streams. */
#include "kube/watchstream.h"

#include <string.h>

#include "lib/jsonscan.h"

struct gp_watchstream {
    gp_buf line;          /* the incomplete line so far */
    size_t line_max;
    gp_ws_line_fn fn;
    void *ud;
};

gp_watchstream *watchstream_new(size_t line_max, gp_ws_line_fn fn, void *ud)
{
    gp_watchstream *w = xcalloc(1, sizeof *w);
    gp_buf_init(&w->line, line_max);
    w->line_max = line_max;
    w->fn = fn;
    w->ud = ud;
    return w;
}

void watchstream_free(gp_watchstream *w)
{
    if (!w)
        return;
    gp_buf_free(&w->line);
    free(w);
}

size_t watchstream_pending(const gp_watchstream *w)
{
    return w->line.len;
}

void watchstream_reset(gp_watchstream *w)
{
    gp_buf_reset(&w->line);
}

/* Hands the complete line held in w->line to the callback, dropping a '\r'.
 * Lines always pass through w->line: its capacity is reused, so a stream
 * costs no allocation per event once warm. */
static int emit(gp_watchstream *w, gp_err *err)
{
    size_t len = w->line.len;
    if (len > 0 && w->line.data[len - 1] == '\r')
        w->line.data[--len] = '\0';
    int rc = len ? w->fn(w->ud, w->line.data, len) : 0;
    gp_buf_reset(&w->line);
    if (rc != 0)
        return gp_fail(err, "stopped by callback");
    return 0;
}

int watchstream_feed(gp_watchstream *w, const char *p, size_t n, gp_err *err)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (gp_buf_append(&w->line, p, take) < 0) {
            gp_buf_reset(&w->line);
            return gp_fail(err, "watch event line exceeds %zu bytes", w->line_max);
        }
        if (!nl)
            return 0;
        if (emit(w, err) < 0)
            return -1;
        p += take + 1;
        n -= take + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */

static const struct {
    const char *name;
    gp_watch_type type;
} event_types[] = {
    {"ADDED", GP_WATCH_ADDED},       {"MODIFIED", GP_WATCH_MODIFIED},
    {"DELETED", GP_WATCH_DELETED},   {"BOOKMARK", GP_WATCH_BOOKMARK},
    {"ERROR", GP_WATCH_ERROR},
};

const char *watchstream_type_name(gp_watch_type t)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(event_types); i++)
        if (event_types[i].type == t)
            return event_types[i].name;
    return "?";
}

static void copy_str(char *dst, size_t size, const json_t *v)
{
    const char *s = json_string_value(v);
    gp_strlcpy(dst, s ? s : "", size);
}

/* An ADDED, MODIFIED or DELETED event with its object reduced to `keep`, or
 * NULL: the scanner declined (anything doubtful), or the event is a bookmark
 * or an error, whose object is not what keep describes. */
static json_t *load_kept(const char *line, size_t len, const gp_keep *keep)
{
    const gp_keep ev_keep[] = {{.key = "type"}, {.key = "object", .sub = keep}, {0}};
    json_t *root;
    if (jscan_load_reduced(line, line + len, ev_keep, JSON_REJECT_DUPLICATES, &root) < 0)
        return NULL;
    const char *type = json_string_value(json_object_get(root, "type"));
    if (type && (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
                 strcmp(type, "DELETED") == 0))
        return root;
    json_decref(root);
    return NULL;
}

int watchstream_event_parse(const char *line, size_t len, gp_watch_event *ev, gp_err *err)
{
    return watchstream_event_parse_kept(line, len, NULL, ev, err);
}

int watchstream_event_parse_kept(const char *line, size_t len, const gp_keep *keep,
                                 gp_watch_event *ev, gp_err *err)
{
    memset(ev, 0, sizeof *ev);
    json_error_t jerr;
    json_t *root = keep ? load_kept(line, len, keep) : NULL;
    if (!root)
        root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = -1;
    if (!root) {
        gp_fail(err, "bad JSON in watch event at column %d: %s", jerr.column, jerr.text);
        goto out;
    }
    if (!json_is_object(root)) {
        gp_fail(err, "watch event is not a JSON object");
        goto out;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    if (!type) {
        gp_fail(err, "watch event has no \"type\"");
        goto out;
    }
    size_t i;
    for (i = 0; i < GP_ARRAY_LEN(event_types); i++)
        if (strcmp(type, event_types[i].name) == 0)
            break;
    if (i == GP_ARRAY_LEN(event_types)) {
        gp_fail(err, "unknown watch event type \"%.64s\"", type);
        goto out;
    }
    json_t *obj = json_object_get(root, "object");
    if (!json_is_object(obj)) {
        gp_fail(err, "%s watch event has no \"object\"", type);
        goto out;
    }
    ev->type = event_types[i].type;
    ev->object = json_incref(obj);
    copy_str(ev->rv, sizeof ev->rv,
             json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (ev->type == GP_WATCH_ERROR) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        ev->code = (code > 0 && code < 1000) ? (int)code : 0;
        copy_str(ev->reason, sizeof ev->reason, json_object_get(obj, "reason"));
        copy_str(ev->message, sizeof ev->message, json_object_get(obj, "message"));
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

void watchstream_event_clear(gp_watch_event *ev)
{
    if (!ev)
        return;
    json_decref(ev->object);
    ev->object = NULL;
}
