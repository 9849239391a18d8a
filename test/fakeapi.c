/* fakeapi.c -- a fake Kubernetes API server for tests (libmicrohttpd on 127.0.0.1, port 0). */
#include "fakeapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"

#define FAKE_BODY_MAX (4u << 20)

typedef struct event {
    long rv;
    bool pod;             /* else node */
    char *line;           /* the whole event line with '\n' */
} event;

typedef struct rule {
    char *method, *match;
    int status;           /* 0: delay only */
    int delay_ms;
    int remaining;
    bool after;           /* the request takes effect, then `status` is answered */
    int gather, arrived;  /* gather > 0: each is held until `gather` have arrived
                           * (delay_ms the longest wait) */
} rule;

typedef struct snapshot {
    int id;
    long rv;
    json_t *items;        /* array */
    bool pod;
} snapshot;

struct gp_fakeapi {
    struct MHD_Daemon *d;
    int port;
    const char *cert_pem, *key_pem;   /* HTTPS (the caller's); NULL: HTTP */
    char url[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *token;
    long rv;
    json_t *nodes;        /* name -> object (no kind/apiVersion) */
    json_t *pods;         /* ns/name -> object */
    event *events;
    size_t nevents, capevents;
    rule *rules;
    size_t nrules;
    snapshot *snaps;
    size_t nsnaps;
    int next_snap;
    long expired_rv;      /* watches from an RV below this get ERROR 410 */
    int cut_gen, end_gen, bookmark_gen, stall_gen;
    bool cut_mid;
    bool corrupt_next[2];   /* [pod]: record the next event cut in half */
    bool stopping;
    int open_pods, open_nodes;
    int delaying;         /* requests held by a delay rule right now */
    gp_fake_req *reqs;
    size_t nreqs, capreqs;
    long uid_seq;
    char version[64];     /* gitVersion /version answers */
    bool binding_uid;     /* pods/binding checks metadata.uid */
};

/* ---------------------------------------------------------------------- */

static char *compact(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static json_t *with_kind(const json_t *obj, bool pod)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(pod ? "Pod" : "Node"));
    json_object_set_new(o, "apiVersion", json_string("v1"));
    json_object_update(o, (json_t *)obj);
    return o;
}

static json_t *status_json(int code, const char *reason, const char *msg)
{
    return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                     "metadata", "status", code < 300 ? "Success" : "Failure", "message", msg,
                     "reason", reason, "code", code);
}

/* Appends an event (caller holds mu) and wakes the watchers. */
static void add_event(gp_fakeapi *f, const char *type, const json_t *obj, bool pod)
{
    json_t *o = with_kind(obj, pod);
    json_t *ev = json_pack("{s:s,s:o}", "type", type, "object", o);
    char *s = compact(ev);
    json_decref(ev);
    if (f->nevents == f->capevents) {
        f->capevents = f->capevents ? 2 * f->capevents : 64;
        f->events = xrealloc(f->events, f->capevents * sizeof *f->events);
    }
    if (f->corrupt_next[pod]) {
        f->corrupt_next[pod] = false;
        s[strlen(s) / 2] = '\0';
    }
    f->events[f->nevents++] = (event){.rv = f->rv, .pod = pod, .line = xasprintf("%s\n", s)};
    free(s);
    pthread_cond_broadcast(&f->cv);
}

static void stamp(gp_fakeapi *f, json_t *obj)
{
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
        md = json_object();
        json_object_set_new(obj, "metadata", md);
    }
    f->rv++;
    char rv[32];
    snprintf(rv, sizeof rv, "%ld", f->rv);
    json_object_set_new(md, "resourceVersion", json_string(rv));
    if (!json_object_get(md, "uid")) {
        char uid[64];
        snprintf(uid, sizeof uid, "fa4e0000-0000-4000-8000-%012ld", ++f->uid_seq);
        json_object_set_new(md, "uid", json_string(uid));
    }
    if (!json_object_get(md, "creationTimestamp"))
        json_object_set_new(md, "creationTimestamp", json_string("2026-11-21T05:38:51Z"));
}

static const char *md_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static char *pod_key(const char *ns, const char *name)
{
    return xasprintf("%s/%s", ns, name);
}

void fakeapi_put_node(gp_fakeapi *f, json_t *node)
{
    pthread_mutex_lock(&f->mu);
    const char *name = md_str(node, "name");
    bool exists = json_object_get(f->nodes, name) != NULL;
    stamp(f, node);
    json_object_set(f->nodes, name, node);
    add_event(f, exists ? "MODIFIED" : "ADDED", node, false);
    pthread_mutex_unlock(&f->mu);
    json_decref(node);
}

void fakeapi_put_pod(gp_fakeapi *f, json_t *pod)
{
    pthread_mutex_lock(&f->mu);
    json_t *md = json_object_get(pod, "metadata");
    if (!md_str(pod, "namespace"))
        json_object_set_new(md, "namespace", json_string("default"));
    char *key = pod_key(md_str(pod, "namespace"), md_str(pod, "name"));
    bool exists = json_object_get(f->pods, key) != NULL;
    stamp(f, pod);
    json_object_set(f->pods, key, pod);
    add_event(f, exists ? "MODIFIED" : "ADDED", pod, true);
    free(key);
    pthread_mutex_unlock(&f->mu);
    json_decref(pod);
}

static int delete_obj(gp_fakeapi *f, json_t *map, const char *key, bool pod)
{
    json_t *o = json_object_get(map, key);
    if (!o)
        return -1;
    json_incref(o);
    json_object_del(map, key);
    stamp(f, o);
    add_event(f, "DELETED", o, pod);
    json_decref(o);
    return 0;
}

int fakeapi_delete_node(gp_fakeapi *f, const char *name)
{
    pthread_mutex_lock(&f->mu);
    int rc = delete_obj(f, f->nodes, name, false);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int fakeapi_delete_pod(gp_fakeapi *f, const char *ns, const char *name)
{
    char *key = pod_key(ns, name);
    pthread_mutex_lock(&f->mu);
    int rc = delete_obj(f, f->pods, key, true);
    pthread_mutex_unlock(&f->mu);
    free(key);
    return rc;
}

int fakeapi_set_pod_phase(gp_fakeapi *f, const char *ns, const char *name, const char *phase)
{
    char *key = pod_key(ns, name);
    pthread_mutex_lock(&f->mu);
    json_t *p = json_object_get(f->pods, key);
    int rc = -1;
    if (p) {
        json_t *st = json_object_get(p, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(p, "status", st);
        }
        json_object_set_new(st, "phase", json_string(phase));
        stamp(f, p);
        add_event(f, "MODIFIED", p, true);
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    free(key);
    return rc;
}

json_t *fakeapi_get_pod(gp_fakeapi *f, const char *ns, const char *name)
{
    char *key = pod_key(ns, name);
    pthread_mutex_lock(&f->mu);
    json_t *p = json_deep_copy(json_object_get(f->pods, key));
    pthread_mutex_unlock(&f->mu);
    free(key);
    return p;
}

long fakeapi_rv(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    long rv = f->rv;
    pthread_mutex_unlock(&f->mu);
    return rv;
}

/* ---------------------------------------------------------------------- */

static void add_rule(gp_fakeapi *f, const char *method, const char *match, int status, int delay_ms,
                     int count, bool after)
{
    pthread_mutex_lock(&f->mu);
    f->rules = xrealloc(f->rules, (f->nrules + 1) * sizeof *f->rules);
    f->rules[f->nrules++] = (rule){.method = xstrdup(method), .match = xstrdup(match),
                                   .status = status, .delay_ms = delay_ms, .remaining = count,
                                   .after = after};
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_fail(gp_fakeapi *f, const char *method, const char *match, int status, int count)
{
    add_rule(f, method, match, status, 0, count, false);
}

void fakeapi_fail_after(gp_fakeapi *f, const char *method, const char *match, int status, int count)
{
    add_rule(f, method, match, status, 0, count, true);
}

int fakeapi_delaying(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->delaying;
    pthread_mutex_unlock(&f->mu);
    return n;
}

void fakeapi_stall_watches(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    f->stall_gen++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_delay(gp_fakeapi *f, const char *method, const char *match, int delay_ms, int count)
{
    add_rule(f, method, match, 0, delay_ms, count, false);
}

void fakeapi_gather(gp_fakeapi *f, const char *method, const char *match, int count, int max_ms)
{
    add_rule(f, method, match, 0, max_ms, count, false);
    pthread_mutex_lock(&f->mu);
    f->rules[f->nrules - 1].gather = count;
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_cut_watches(gp_fakeapi *f, bool mid_event)
{
    pthread_mutex_lock(&f->mu);
    f->cut_gen++;
    f->cut_mid = mid_event;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_end_watches(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    f->end_gen++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_expire(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    f->expired_rv = f->rv;
    for (size_t i = 0; i < f->nsnaps; i++)
        json_decref(f->snaps[i].items);
    f->nsnaps = 0;
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_inject_raw(gp_fakeapi *f, bool pod, const char *line)
{
    pthread_mutex_lock(&f->mu);
    f->rv++;
    if (f->nevents == f->capevents) {
        f->capevents = f->capevents ? 2 * f->capevents : 64;
        f->events = xrealloc(f->events, f->capevents * sizeof *f->events);
    }
    f->events[f->nevents++] = (event){.rv = f->rv, .pod = pod, .line = xstrdup(line)};
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_corrupt_next(gp_fakeapi *f, bool pod)
{
    pthread_mutex_lock(&f->mu);
    f->corrupt_next[pod] = true;
    pthread_mutex_unlock(&f->mu);
}

void fakeapi_bookmark(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    f->bookmark_gen++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int fakeapi_open_watches(gp_fakeapi *f, const char *resource)
{
    pthread_mutex_lock(&f->mu);
    int n = !resource ? f->open_pods + f->open_nodes
                      : strcmp(resource, "pods") == 0 ? f->open_pods : f->open_nodes;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int fakeapi_wait_watches(gp_fakeapi *f, const char *resource, int n, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    int c;
    while ((c = fakeapi_open_watches(f, resource)) < n && gp_mono_s() < end)
        usleep(5000);
    return c;
}

/* ---------------------------------------------------------------------- */

void fakeapi_req_clear(gp_fake_req *r)
{
    if (!r)
        return;
    free(r->method);
    free(r->url);
    free(r->content_type);
    free(r->auth);
    free(r->body);
    memset(r, 0, sizeof *r);
}

size_t fakeapi_request_count(gp_fakeapi *f)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->nreqs;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int fakeapi_request(gp_fakeapi *f, size_t i, gp_fake_req *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&f->mu);
    int rc = -1;
    if (i < f->nreqs) {
        const gp_fake_req *r = &f->reqs[i];
        out->method = xstrdup(r->method);
        out->url = xstrdup(r->url);
        out->content_type = xstrdup(r->content_type);
        out->auth = xstrdup(r->auth);
        out->body = xstrdup(r->body);
        out->status = r->status;
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int fakeapi_count(gp_fakeapi *f, const char *method, const char *match)
{
    pthread_mutex_lock(&f->mu);
    int n = 0;
    for (size_t i = 0; i < f->nreqs; i++)
        if ((!method || strcmp(f->reqs[i].method, method) == 0) &&
            (!match || strstr(f->reqs[i].url, match)))
            n++;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int fakeapi_wait_count(gp_fakeapi *f, const char *method, const char *match, int n, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    int c;
    while ((c = fakeapi_count(f, method, match)) < n && gp_mono_s() < end)
        usleep(10000);
    return c;
}

/* ---------------------------------------------------------------------- */
/* request handling */

typedef struct conn {
    gp_buf body;
    bool overflow;
} conn;

typedef struct watcher {
    gp_fakeapi *f;
    bool pod;
    long rv;                 /* events after this are sent */
    size_t next;             /* index into events to scan from */
    bool bookmarks;
    double deadline;         /* 0 = none */
    int cut_gen, end_gen, bookmark_gen, stall_gen;
    bool stalled;            /* half-open: sends nothing more, never ends by itself */
    char *pending;           /* bytes of the current line not yet sent */
    size_t pending_off, pending_len;
    bool die_after_pending;  /* cut once pending is out */
    bool end_after_pending;  /* end properly once pending is out */
} watcher;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    gp_buf *b = cls;
    if (gp_buf_printf(b, "%c%s%s%s", b->len ? '&' : '?', key, value ? "=" : "", value ? value : "") < 0)
        return MHD_NO;
    return MHD_YES;
}

static const char *reason_for(int code);

/* A "fail after" rule: the request took effect, the client gets this status
 * instead of the real answer (one handler call per thread at a time). */
static _Thread_local int answer_override;

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *body)
{
    if (answer_override) {
        json_decref(body);
        status = answer_override;
        answer_override = 0;
        body = status_json(status, reason_for(status), "fake apiserver: injected failure after the write");
    }
    char *s = compact(body);
    json_decref(body);
    char *withnl = xasprintf("%s\n", s);
    free(s);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(withnl), withnl, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-cache, private");
    MHD_add_response_header(r, "Audit-Id", "00000000-0000-4000-8000-fa4e00000000");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static const char *reason_for(int code)
{
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 415: return "UnsupportedMediaType";
    case 429: return "TooManyRequests";
    case 504: return "Timeout";
    default: return "InternalError";
    }
}

static enum MHD_Result send_status(struct MHD_Connection *c, int code, const char *msg)
{
    return send_json(c, code, status_json(code, reason_for(code), msg));
}

static long arg_long(struct MHD_Connection *c, const char *key, long dflt)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
    if (!v || !*v)
        return dflt;
    return strtol(v, NULL, 10);
}

/* Sorted copy of the current objects of one kind (caller holds mu). */
static json_t *sorted_items(gp_fakeapi *f, bool pod)
{
    json_t *map = pod ? f->pods : f->nodes;
    size_t n = json_object_size(map);
    const char **keys = xcalloc(n ? n : 1, sizeof *keys);
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v) keys[i++] = k;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
            const char *t = keys[b];
            keys[b] = keys[b - 1];
            keys[b - 1] = t;
        }
    json_t *arr = json_array();
    for (i = 0; i < n; i++)
        json_array_append_new(arr, json_deep_copy(json_object_get(map, keys[i])));
    free(keys);
    return arr;
}

static enum MHD_Result do_list(gp_fakeapi *f, struct MHD_Connection *c, bool pod)
{
    long limit = arg_long(c, "limit", 0);
    const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
    pthread_mutex_lock(&f->mu);
    json_t *items;
    long rv;
    size_t off = 0;
    int snap_id = -1;
    if (cont && *cont) {
        int id = -1;
        long o = -1;
        if (sscanf(cont, "fake-continue-%d-%ld", &id, &o) != 2) {
            pthread_mutex_unlock(&f->mu);
            return send_status(c, 400, "invalid continue token");
        }
        snapshot *s = NULL;
        for (size_t i = 0; i < f->nsnaps; i++)
            if (f->snaps[i].id == id)
                s = &f->snaps[i];
        if (!s) {
            pthread_mutex_unlock(&f->mu);
            return send_status(c, 410, "The provided continue parameter is too old to display a "
                                       "consistent list result. You can start a new list without "
                                       "the continue parameter.");
        }
        items = json_incref(s->items);
        rv = s->rv;
        off = (size_t)o;
        snap_id = id;
    } else {
        items = sorted_items(f, pod);
        rv = f->rv;
    }
    size_t total = json_array_size(items);
    size_t end = total;
    if (limit > 0 && off + (size_t)limit < total) {
        end = off + (size_t)limit;
        if (snap_id < 0) {
            f->snaps = xrealloc(f->snaps, (f->nsnaps + 1) * sizeof *f->snaps);
            snap_id = ++f->next_snap;
            f->snaps[f->nsnaps++] = (snapshot){.id = snap_id, .rv = rv, .items = json_incref(items), .pod = pod};
        }
    }
    pthread_mutex_unlock(&f->mu);
    json_t *page = json_array();
    for (size_t i = off; i < end && i < total; i++)
        json_array_append(page, json_array_get(items, i));
    char rvs[32];
    snprintf(rvs, sizeof rvs, "%ld", rv);
    json_t *md = json_pack("{s:s}", "resourceVersion", rvs);
    if (end < total) {
        char *tok = xasprintf("fake-continue-%d-%zu", snap_id, end);
        json_object_set_new(md, "continue", json_string(tok));
        json_object_set_new(md, "remainingItemCount", json_integer((json_int_t)(total - end)));
        free(tok);
    }
    json_decref(items);
    json_t *list = json_pack("{s:s,s:s,s:o,s:o}", "kind", pod ? "PodList" : "NodeList", "apiVersion",
                             "v1", "metadata", md, "items", page);
    return send_json(c, 200, list);
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    watcher *w = cls;
    gp_fakeapi *f = w->f;
    pthread_mutex_lock(&f->mu);
    ssize_t ret = 0;
    for (;;) {
        if (f->stopping) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (w->stall_gen != f->stall_gen)
            w->stalled = true;
        if (w->stalled) {
            pthread_cond_wait(&f->cv, &f->mu);
            continue;
        }
        if (w->pending_len > w->pending_off) {
            size_t n = w->pending_len - w->pending_off;
            if (n > max)
                n = max;
            memcpy(buf, w->pending + w->pending_off, n);
            w->pending_off += n;
            ret = (ssize_t)n;
            break;
        }
        if (w->die_after_pending) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (w->end_after_pending || w->end_gen != f->end_gen ||
            (w->deadline > 0 && gp_mono_s() >= w->deadline)) {
            ret = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        /* next event of our kind after w->rv */
        const event *next = NULL;
        while (w->next < f->nevents) {
            const event *e = &f->events[w->next];
            if (e->pod == w->pod && e->rv > w->rv) {
                next = e;
                break;
            }
            w->next++;
        }
        if (w->cut_gen != f->cut_gen) {
            w->cut_gen = f->cut_gen;
            if (!f->cut_mid) {
                ret = MHD_CONTENT_READER_END_WITH_ERROR;
                break;
            }
            const char *line = next ? next->line
                                    : "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}}\n";
            free(w->pending);
            w->pending = xstrdup(line);
            w->pending_len = strlen(line) / 2;
            w->pending_off = 0;
            w->die_after_pending = true;
            continue;
        }
        if (next) {
            free(w->pending);
            w->pending = xstrdup(next->line);
            w->pending_len = strlen(next->line);
            w->pending_off = 0;
            w->rv = next->rv;
            w->next++;
            continue;
        }
        if (w->bookmark_gen != f->bookmark_gen) {
            w->bookmark_gen = f->bookmark_gen;
            if (w->bookmarks) {
                long brv = 0;
                for (size_t i = f->nevents; i > 0; i--)
                    if (f->events[i - 1].pod == w->pod) {
                        brv = f->events[i - 1].rv;
                        break;
                    }
                if (brv > w->rv) {
                    free(w->pending);
                    w->pending = xasprintf(
                        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"v1\","
                        "\"metadata\":{\"resourceVersion\":\"%ld\",\"creationTimestamp\":null},"
                        "\"spec\":{%s},\"status\":{}}}\n",
                        w->pod ? "Pod" : "Node", brv, w->pod ? "\"containers\":null" : "");
                    w->pending_len = strlen(w->pending);
                    w->pending_off = 0;
                    w->rv = brv;
                    continue;
                }
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    }
    pthread_mutex_unlock(&f->mu);
    return ret;
}

static void watch_done(void *cls)
{
    watcher *w = cls;
    pthread_mutex_lock(&w->f->mu);
    if (w->pod)
        w->f->open_pods--;
    else
        w->f->open_nodes--;
    pthread_mutex_unlock(&w->f->mu);
    free(w->pending);
    free(w);
}

static enum MHD_Result do_watch(gp_fakeapi *f, struct MHD_Connection *c, bool pod)
{
    const char *rvs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
    const char *bm = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "allowWatchBookmarks");
    long timeout = arg_long(c, "timeoutSeconds", 0);
    watcher *w = xcalloc(1, sizeof *w);
    w->f = f;
    w->pod = pod;
    w->bookmarks = bm && strcmp(bm, "true") == 0;
    if (timeout > 0)
        w->deadline = gp_mono_s() + (double)timeout;
    pthread_mutex_lock(&f->mu);
    w->cut_gen = f->cut_gen;
    w->end_gen = f->end_gen;
    w->bookmark_gen = f->bookmark_gen;
    w->stall_gen = f->stall_gen;
    long start = rvs && *rvs ? strtol(rvs, NULL, 10) : 0;
    if (start == 0) {
        /* no resourceVersion: synthetic ADDED for the current state first */
        json_t *items = sorted_items(f, pod);
        gp_buf b;
        gp_buf_init(&b, 64u << 20);
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            json_t *o = with_kind(it, pod);
            json_t *ev = json_pack("{s:s,s:o}", "type", "ADDED", "object", o);
            char *s = compact(ev);
            json_decref(ev);
            if (gp_buf_printf(&b, "%s\n", s) < 0) {
                /* the fake's own state never gets this big */
            }
            free(s);
        }
        json_decref(items);
        w->pending = b.data;
        w->pending_len = b.len;
        w->rv = f->rv;
    } else if (start < f->expired_rv) {
        char msg[128];
        snprintf(msg, sizeof msg, "too old resource version: %ld (%ld)", start, f->expired_rv);
        json_t *st = status_json(410, "Expired", msg);
        json_t *ev = json_pack("{s:s,s:o}", "type", "ERROR", "object", st);
        char *s = compact(ev);
        json_decref(ev);
        w->pending = xasprintf("%s\n", s);
        free(s);
        w->pending_len = strlen(w->pending);
        w->end_after_pending = true;
        w->rv = start;
    } else {
        w->rv = start;
    }
    if (pod)
        f->open_pods++;
    else
        f->open_nodes++;
    pthread_mutex_unlock(&f->mu);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, watch_read, w, watch_done);
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-cache, private");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* RFC 7386 merge patch of patch onto target (in place). */
static void merge_patch(json_t *target, const json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (json_is_null(v)) {
            json_object_del(target, k);
        } else if (json_is_object(v)) {
            json_t *t = json_object_get(target, k);
            if (!json_is_object(t)) {
                t = json_object();
                json_object_set_new(target, k, t);
            }
            merge_patch(t, v);
        } else {
            json_object_set(target, k, v);
        }
    }
}

/* A strategic merge patch as the API server applies it to a pod's
 * status.conditions: a list merged by "type" (the patch's entries replace
 * or extend the named ones, fields merged); everything else as merge_patch. */
static void strategic_patch(json_t *target, const json_t *patch)
{
    json_t *pc = json_object_get(json_object_get(patch, "status"), "conditions");
    if (!json_is_array(pc)) {
        merge_patch(target, patch);
        return;
    }
    json_t *rest = json_deep_copy(patch);
    json_object_del(json_object_get(rest, "status"), "conditions");
    merge_patch(target, rest);
    json_decref(rest);
    json_t *st = json_object_get(target, "status");
    if (!json_is_object(st))
        json_object_set_new(target, "status", st = json_object());
    json_t *tc = json_object_get(st, "conditions");
    if (!json_is_array(tc))
        json_object_set_new(st, "conditions", tc = json_array());
    size_t i, k;
    json_t *c, *t;
    json_array_foreach(pc, i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        json_t *found = NULL;
        json_array_foreach(tc, k, t)
            if (type && json_equal(json_object_get(t, "type"), json_object_get(c, "type")))
                found = t;
        if (found)
            merge_patch(found, c);
        else
            json_array_append(tc, c);
    }
}

static enum MHD_Result do_patch(gp_fakeapi *f, struct MHD_Connection *c, const char *ns,
                                const char *name, bool status_only, const char *body)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (!ct || (strcmp(ct, "application/merge-patch+json") != 0 &&
                strcmp(ct, "application/strategic-merge-patch+json") != 0))
        return send_status(c, 415, "the body of the request was in an unknown format - accepted "
                                   "media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml");
    json_t *patch = json_loads(body, 0, NULL);
    if (!json_is_object(patch)) {
        json_decref(patch);
        return send_status(c, 400, "error decoding patch: invalid JSON");
    }
    char *key = pod_key(ns, name);
    pthread_mutex_lock(&f->mu);
    json_t *p = json_object_get(f->pods, key);
    free(key);
    if (!p) {
        pthread_mutex_unlock(&f->mu);
        json_decref(patch);
        char msg[300];
        snprintf(msg, sizeof msg, "pods \"%s\" not found", name);
        return send_status(c, 404, msg);
    }
    const char *want_rv = md_str(patch, "resourceVersion");
    if (want_rv && strcmp(want_rv, md_str(p, "resourceVersion")) != 0) {
        pthread_mutex_unlock(&f->mu);
        json_decref(patch);
        char msg[400];
        snprintf(msg, sizeof msg, "Operation cannot be fulfilled on pods \"%s\": the object has been "
                                  "modified; please apply your changes to the latest version and try again", name);
        return send_status(c, 409, msg);
    }
    const char *want_uid = md_str(patch, "uid");
    if (want_uid && strcmp(want_uid, md_str(p, "uid") ? md_str(p, "uid") : "") != 0) {
        pthread_mutex_unlock(&f->mu);
        char msg[400];
        snprintf(msg, sizeof msg, "Pod \"%s\" is invalid: metadata.uid: Invalid value: \"%.64s\": "
                                  "field is immutable", name, want_uid);
        json_decref(patch);
        return send_status(c, 422, msg);
    }
    json_t *before = json_deep_copy(p);
    json_t *md = json_object_get(patch, "metadata");
    if (json_is_object(md))
        json_object_del(md, "resourceVersion");
    if (status_only) {   /* the status subresource writes the status alone */
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(patch, tmp, k, v)
            if (strcmp(k, "status") != 0)
                json_object_del(patch, k);
    }
    if (strcmp(ct, "application/strategic-merge-patch+json") == 0)
        strategic_patch(p, patch);
    else
        merge_patch(p, patch);
    if (!json_equal(before, p)) {
        stamp(f, p);
        add_event(f, "MODIFIED", p, true);
    }
    json_t *out = with_kind(p, true);
    pthread_mutex_unlock(&f->mu);
    json_decref(before);
    json_decref(patch);
    return send_json(c, 200, out);
}

static enum MHD_Result do_binding(gp_fakeapi *f, struct MHD_Connection *c, const char *ns,
                                  const char *name, const char *body)
{
    json_t *b = json_loads(body, 0, NULL);
    const char *bname = md_str(b, "name");
    const char *target = json_string_value(json_object_get(json_object_get(b, "target"), "name"));
    char msg[1024];
    if (!json_is_object(b) || !target) {
        json_decref(b);
        return send_status(c, 400, "Binding: target.name is required");
    }
    if (bname && strcmp(bname, name) != 0) {
        json_decref(b);
        return send_status(c, 400, "Binding name does not match the pod name in the URL");
    }
    char *key = pod_key(ns, name);
    pthread_mutex_lock(&f->mu);
    json_t *p = json_object_get(f->pods, key);
    free(key);
    enum MHD_Result ret;
    if (!p) {
        snprintf(msg, sizeof msg, "pods \"%s\" not found", name);
        pthread_mutex_unlock(&f->mu);
        ret = send_status(c, 404, msg);
    } else {
        json_t *spec = json_object_get(p, "spec");
        const char *cur = json_string_value(json_object_get(spec, "nodeName"));
        /* as kube-apiserver: metadata.uid of a created object is wiped, so only
         * metadata.resourceVersion is a precondition */
        const char *want_rv = md_str(b, "resourceVersion");
        const char *have_rv = md_str(p, "resourceVersion");
        const char *want_uid = md_str(b, "uid"), *have_uid = md_str(p, "uid");
        json_t *ann = json_object_get(json_object_get(b, "metadata"), "annotations");
        if (f->binding_uid && want_uid && *want_uid && (!have_uid || strcmp(want_uid, have_uid) != 0)) {
            snprintf(msg, sizeof msg, "Operation cannot be fulfilled on pods \"%s\": StorageError: "
                                      "invalid object, Precondition failed: UID in precondition: %.64s, "
                                      "UID in object meta: %.64s", name, want_uid, have_uid ? have_uid : "");
            pthread_mutex_unlock(&f->mu);
            ret = send_status(c, 409, msg);
        } else if (want_rv && *want_rv && (!have_rv || strcmp(want_rv, have_rv) != 0)) {
            snprintf(msg, sizeof msg, "Operation cannot be fulfilled on pods \"%s\": the object has "
                                      "been modified; please apply your changes to the latest "
                                      "version and try again", name);
            pthread_mutex_unlock(&f->mu);
            ret = send_status(c, 409, msg);
        } else if (cur && *cur) {
            snprintf(msg, sizeof msg, "Operation cannot be fulfilled on pods/binding \"%s\": pod %s "
                                      "is already assigned to node \"%s\"", name, name, cur);
            pthread_mutex_unlock(&f->mu);
            ret = send_status(c, 409, msg);
        } else {
            if (!json_is_object(spec)) {
                spec = json_object();
                json_object_set_new(p, "spec", spec);
            }
            json_object_set_new(spec, "nodeName", json_string(target));
            if (json_is_object(ann)) {
                /* as the apiserver: the Binding's annotations land on the pod in the same write */
                json_t *md = json_object_get(p, "metadata");
                json_t *pa = json_object_get(md, "annotations");
                if (!json_is_object(pa)) {
                    pa = json_object();
                    json_object_set_new(md, "annotations", pa);
                }
                json_object_update(pa, ann);
            }
            json_t *st = json_object_get(p, "status");
            if (!json_is_object(st)) {
                st = json_object();
                json_object_set_new(p, "status", st);
            }
            json_object_set_new(st, "conditions",
                                json_pack("[{s:s,s:s}]", "type", "PodScheduled", "status", "True"));
            stamp(f, p);
            add_event(f, "MODIFIED", p, true);
            pthread_mutex_unlock(&f->mu);
            ret = send_json(c, 201, json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion",
                                              "v1", "metadata", "status", "Success", "code", 201));
        }
    }
    json_decref(b);
    return ret;
}

static void record(gp_fakeapi *f, const char *method, const char *url, struct MHD_Connection *c,
                   const char *body, int status)
{
    pthread_mutex_lock(&f->mu);
    if (f->nreqs == f->capreqs) {
        f->capreqs = f->capreqs ? 2 * f->capreqs : 64;
        f->reqs = xrealloc(f->reqs, f->capreqs * sizeof *f->reqs);
    }
    f->reqs[f->nreqs++] = (gp_fake_req){
        .method = xstrdup(method),
        .url = xstrdup(url),
        .content_type = xstrdup(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type")),
        .auth = xstrdup(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")),
        .body = xstrdup(body),
        .status = status,
    };
    pthread_mutex_unlock(&f->mu);
}

/* Splits "/api/v1/namespaces/NS/pods/NAME[/binding]". */
/* .../namespaces/NS/pods/NAME[/binding|/status]: *binding, *status say which. */
static int pod_path(const char *path, char *ns, char *name, bool *binding, bool *status)
{
    const char *p = path + strlen("/api/v1/namespaces/");
    const char *s1 = strchr(p, '/');
    if (!s1 || strncmp(s1, "/pods/", 6) != 0 || (size_t)(s1 - p) >= 254)
        return -1;
    memcpy(ns, p, (size_t)(s1 - p));
    ns[s1 - p] = '\0';
    const char *n = s1 + 6;
    const char *s2 = strchr(n, '/');
    size_t nl = s2 ? (size_t)(s2 - n) : strlen(n);
    if (nl == 0 || nl >= 254)
        return -1;
    memcpy(name, n, nl);
    name[nl] = '\0';
    *binding = s2 && strcmp(s2, "/binding") == 0;
    *status = s2 && strcmp(s2, "/status") == 0;
    if (s2 && !*binding && !*status)
        return -1;
    return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *path,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    gp_fakeapi *f = cls;
    conn *st = *con_cls;
    if (!st) {
        st = xcalloc(1, sizeof *st);
        gp_buf_init(&st->body, FAKE_BODY_MAX);
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_size) {
        if (gp_buf_append(&st->body, upload, *upload_size) < 0)
            st->overflow = true;
        *upload_size = 0;
        return MHD_YES;
    }
    const char *body = st->body.data ? st->body.data : "";
    gp_buf q;
    gp_buf_init(&q, 64 * 1024);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
    char *url = xasprintf("%s%s", path, q.data ? q.data : "");
    gp_buf_free(&q);

    /* injected faults and delays */
    int fail = 0, delay = 0, fail_after = 0;
    size_t gathered = SIZE_MAX;   /* the gather rule this request counts in */
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nrules; i++) {
        rule *r = &f->rules[i];
        if (r->remaining > 0 && strcmp(r->method, method) == 0 && strstr(url, r->match)) {
            r->remaining--;
            if (r->after)
                fail_after = r->status;
            else
                fail = r->status;
            delay = r->delay_ms;
            if (r->gather > 0) {
                r->arrived++;
                gathered = i;
                pthread_cond_broadcast(&f->cv);
            }
            break;
        }
    }
    bool auth_ok = true;
    if (f->token) {
        const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        auth_ok = a && strncmp(a, "Bearer ", 7) == 0 && strcmp(a + 7, f->token) == 0;
    }
    if (delay > 0)
        f->delaying++;
    pthread_mutex_unlock(&f->mu);
    if (delay > 0 && gathered != SIZE_MAX) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += delay / 1000;
        ts.tv_nsec += (long)(delay % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&f->mu);
        while (f->rules[gathered].arrived < f->rules[gathered].gather &&
               pthread_cond_timedwait(&f->cv, &f->mu, &ts) == 0)
            ;
        f->delaying--;
        pthread_mutex_unlock(&f->mu);
    } else if (delay > 0) {
        usleep((useconds_t)delay * 1000);
        pthread_mutex_lock(&f->mu);
        f->delaying--;
        pthread_mutex_unlock(&f->mu);
    }
    answer_override = fail_after;

    enum MHD_Result ret;
    int status = 200;
    char ns[256], name[256];
    bool binding = false, status_sub = false;
    bool watch = false;
    const char *wv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    watch = wv && (strcmp(wv, "1") == 0 || strcmp(wv, "true") == 0);
    if (!auth_ok) {
        status = 401;
        ret = send_status(c, 401, "Unauthorized");
    } else if (fail) {
        status = fail;
        ret = send_status(c, fail, "fake apiserver: injected failure");
    } else if (st->overflow) {
        status = 413;
        ret = send_status(c, 413, "request entity too large");
    } else if (strcmp(method, "GET") == 0 && strcmp(path, "/version") == 0) {
        pthread_mutex_lock(&f->mu);
        json_t *v = json_pack("{s:s,s:s,s:s}", "major", "1", "minor", "", "gitVersion", f->version);
        int minor = 0;
        if (sscanf(f->version, "v1.%d", &minor) == 1) {
            char m[16];
            snprintf(m, sizeof m, "%d", minor);
            json_object_set_new(v, "minor", json_string(m));
        }
        pthread_mutex_unlock(&f->mu);
        ret = send_json(c, 200, v);
    } else if (strcmp(method, "GET") == 0 && strcmp(path, "/api/v1/nodes") == 0) {
        ret = watch ? do_watch(f, c, false) : do_list(f, c, false);
    } else if (strcmp(method, "GET") == 0 && strcmp(path, "/api/v1/pods") == 0) {
        ret = watch ? do_watch(f, c, true) : do_list(f, c, true);
    } else if (strncmp(path, "/api/v1/namespaces/", 19) == 0 && pod_path(path, ns, name, &binding, &status_sub) == 0) {
        if (binding && strcmp(method, "POST") == 0) {
            status = 201;
            ret = do_binding(f, c, ns, name, body);
        } else if (!binding && strcmp(method, "PATCH") == 0) {
            ret = do_patch(f, c, ns, name, status_sub, body);
        } else if (!binding && strcmp(method, "GET") == 0) {
            json_t *p = fakeapi_get_pod(f, ns, name);
            if (p) {
                json_t *o = with_kind(p, true);
                json_decref(p);
                ret = send_json(c, 200, o);
            } else {
                char msg[300];
                snprintf(msg, sizeof msg, "pods \"%s\" not found", name);
                status = 404;
                ret = send_status(c, 404, msg);
            }
        } else {
            status = 405;
            ret = send_status(c, 405, "method not allowed");
        }
    } else {
        status = 404;
        ret = send_status(c, 404, "the server could not find the requested resource");
    }
    if (fail_after)
        status = fail_after;
    answer_override = 0;
    record(f, method, url, c, body, status);
    free(url);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    conn *st = *con_cls;
    if (st) {
        gp_buf_free(&st->body);
        free(st);
        *con_cls = NULL;
    }
}

void fakeapi_set_version(gp_fakeapi *f, const char *git_version, bool binding_checks_uid)
{
    pthread_mutex_lock(&f->mu);
    gp_strlcpy(f->version, git_version, sizeof f->version);
    f->binding_uid = binding_checks_uid;
    pthread_mutex_unlock(&f->mu);
}

/* The daemon on 127.0.0.1:port (0: a free one), HTTP or HTTPS as f says. */
static struct MHD_Daemon *daemon_start(gp_fakeapi *f, int port)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const struct sockaddr_in *sa = &addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    if (f->cert_pem)
        return MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handle, f, MHD_OPTION_SOCK_ADDR,
                                (const struct sockaddr *)sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                                f, MHD_OPTION_HTTPS_MEM_CERT, f->cert_pem,
                                MHD_OPTION_HTTPS_MEM_KEY, f->key_pem, MHD_OPTION_END);
    return MHD_start_daemon(flags, 0, NULL, NULL, handle, f, MHD_OPTION_SOCK_ADDR,
                            (const struct sockaddr *)sa, MHD_OPTION_NOTIFY_COMPLETED, completed, f,
                            MHD_OPTION_END);
}

gp_fakeapi *fakeapi_start(void)
{
    return fakeapi_start_tls(NULL, NULL);
}

gp_fakeapi *fakeapi_start_tls(const char *cert_pem, const char *key_pem)
{
    gp_fakeapi *f = xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->nodes = json_object();
    f->pods = json_object();
    f->rv = 100;
    gp_strlcpy(f->version, "v1.26.0", sizeof f->version);
    f->cert_pem = cert_pem && key_pem ? cert_pem : NULL;
    f->key_pem = cert_pem && key_pem ? key_pem : NULL;
    f->d = daemon_start(f, 0);
    if (!f->d) {
        fakeapi_stop(f);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    f->port = info ? info->port : 0;
    snprintf(f->url, sizeof f->url, "%s://127.0.0.1:%d", f->cert_pem ? "https" : "http", f->port);
    return f;
}

int fakeapi_restart(gp_fakeapi *f, int down_ms)
{
    pthread_mutex_lock(&f->mu);
    f->stopping = true;   /* open watches end */
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    MHD_stop_daemon(f->d);   /* and every connection with them */
    f->d = NULL;
    if (down_ms > 0)
        usleep((useconds_t)down_ms * 1000);
    pthread_mutex_lock(&f->mu);
    f->stopping = false;
    pthread_mutex_unlock(&f->mu);
    for (int i = 0; i < 50 && !f->d; i++) {   /* the port may take a moment to be free again */
        f->d = daemon_start(f, f->port);
        if (!f->d)
            usleep(100000);
    }
    return f->d ? 0 : -1;
}

void fakeapi_stop(gp_fakeapi *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (f->d)
        MHD_stop_daemon(f->d);
    for (size_t i = 0; i < f->nevents; i++)
        free(f->events[i].line);
    free(f->events);
    for (size_t i = 0; i < f->nrules; i++) {
        free(f->rules[i].method);
        free(f->rules[i].match);
    }
    free(f->rules);
    for (size_t i = 0; i < f->nsnaps; i++)
        json_decref(f->snaps[i].items);
    free(f->snaps);
    for (size_t i = 0; i < f->nreqs; i++)
        fakeapi_req_clear(&f->reqs[i]);
    free(f->reqs);
    json_decref(f->nodes);
    json_decref(f->pods);
    free(f->token);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

int fakeapi_port(const gp_fakeapi *f)
{
    return f->port;
}

const char *fakeapi_url(const gp_fakeapi *f)
{
    return f->url;
}

void fakeapi_set_token(gp_fakeapi *f, const char *token)
{
    pthread_mutex_lock(&f->mu);
    free(f->token);
    f->token = xstrdup(token);
    pthread_mutex_unlock(&f->mu);
}
