/* events.c -- Kubernetes Events on bound pods: text, correlation, sending. */
#include "act/events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/timefmt.h"

#define EVENTS_BURST 25.0                 /* client-go: spam filter burst ... */
#define EVENTS_REFILL_S 300.0             /* ... and one token per 5 minutes */
#define EVENTS_SIMILAR_MAX 10             /* distinct messages before combining */
#define EVENTS_WINDOW_NS (INT64_C(600) * 1000000000)   /* 10 minutes */
#define EVENTS_KEYS_MAX 4096              /* remembered keys per table (LRU) */
#define EVENTS_QUEUE_MAX 1000             /* pending sends; more are dropped */
#define EVENTS_POD_NAME_MAX 200           /* room for ".<hex>" in Event names */

/* ---------------------------------------------------------------- text -- */

void events_describe_bind(const gp_assignment *a, const gp_node *node, const char *policy,
                          char *out, size_t len)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    size_t off = (size_t)snprintf(out, len, "assigned GPU%s ", nh == 1 ? "" : "s");
    for (int i = 0; i < nh && off < len; i++) {
        int pos = node ? gp_node_gpu_pos(node, holds[i].index) : -1;
        const char *model = pos >= 0 && node->gpus[pos].info.model ? gp_model_name(node->gpus[pos].info.model)
                                                                   : "unknown model";
        off += (size_t)snprintf(out + off, len - off, "%s%d (%s, %lld MiB, %d %%)",
                                i ? ", " : "", holds[i].index, model,
                                (long long)holds[i].mem_mib, holds[i].core / 10);
    }
    if (off < len)
        snprintf(out + off, len - off, " on %s, policy %s", a->node,
                 policy && *policy ? policy : "default");
}

/* ---------------------------------------------------------- correlator -- */

typedef struct seen {
    uint64_t key;               /* 0 = free slot */
    int64_t last_ns;            /* last occurrence */
    double tokens;              /* bucket tables */
    int count;                  /* event tables: occurrences so far */
    int64_t first_ns;
    /* similar tables: distinct message hashes seen in the window */
    uint64_t msgs[EVENTS_SIMILAR_MAX];
    int nmsgs;
} seen;

/* The Event an event-table slot created (kept apart: only that table needs
 * names, and three tables of 4,096 slots with them took 8 MB). */
typedef struct evname {
    char ns[GP_NAME_MAX];
    char name[GP_NAME_MAX];
} evname;

typedef struct table {
    seen *s;
    evname *names;              /* the events table only; NULL for the others */
    size_t n;
} table;

struct events_agg {
    char *component, *instance;
    table buckets, similar, events;
};

static uint64_t hash_str(uint64_t h, const char *s)
{
    h = gp_fnv1a(h, s ? s : "", strlen(s ? s : "") + 1);
    return h ? h : 1;
}

/* The slot of key, or a free / least recently used one (reset) for it. */
static seen *lookup(table *t, uint64_t key, bool *found)
{
    seen *lru = &t->s[0];
    for (size_t i = 0; i < t->n; i++) {
        if (t->s[i].key == key) {
            *found = true;
            return &t->s[i];
        }
        if (t->s[i].key == 0 || t->s[i].last_ns < lru->last_ns)
            lru = &t->s[i];
        if (t->s[i].key == 0)
            break;
    }
    memset(lru, 0, sizeof *lru);
    if (t->names)
        memset(&t->names[lru - t->s], 0, sizeof *t->names);
    lru->key = key;
    *found = false;
    return lru;
}

static void table_init(table *t, bool names)
{
    t->n = EVENTS_KEYS_MAX;
    /* filled one slot per new key: resident from the start (util.h) */
    t->s = xcalloc_resident(t->n, sizeof *t->s);
    t->names = names ? xcalloc_resident(t->n, sizeof *t->names) : NULL;
}

events_agg *events_agg_new(const char *component, const char *instance)
{
    events_agg *a = xcalloc(1, sizeof *a);
    a->component = xstrdup(component);
    a->instance = xstrdup(instance);
    table_init(&a->buckets, false);
    table_init(&a->similar, false);
    table_init(&a->events, true);
    return a;
}

void events_agg_free(events_agg *a)
{
    if (!a)
        return;
    free(a->buckets.s);
    free(a->similar.s);
    free(a->events.s);
    free(a->events.names);
    free(a->component);
    free(a->instance);
    free(a);
}

static json_t *event_object(const events_agg *a, const events_occurrence *o, const char *name,
                            const char *msg, int64_t now_ns)
{
    char ts[32];
    gp_rfc3339_format(now_ns, ts, sizeof ts);
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s},"
                     "s:s,s:s,s:s,s:s,s:i}",
                     "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                     o->ns, "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace", o->ns,
                     "name", o->pod, "uid", o->uid ? o->uid : "", "reason", o->reason, "message",
                     msg, "type", o->type, "source", "component", a->component,
                     "reportingComponent", a->component, "reportingInstance", a->instance,
                     "firstTimestamp", ts, "lastTimestamp", ts, "count", 1);
}

void events_agg_record(events_agg *a, const events_occurrence *o, int64_t now_ns,
                       events_send *out)
{
    memset(out, 0, sizeof *out);
    gp_strlcpy(out->ns, o->ns, sizeof out->ns);
    uint64_t obj = hash_str(hash_str(hash_str(GP_FNV_OFFSET, a->component), o->ns), o->pod);
    obj = hash_str(obj, o->uid);
    /* 1. spam filter: a token bucket per involved object */
    bool found;
    seen *b = lookup(&a->buckets, obj, &found);
    if (!found) {
        b->tokens = EVENTS_BURST;
    } else {
        b->tokens += (double)(now_ns - b->last_ns) / 1e9 / EVENTS_REFILL_S;
        if (b->tokens > EVENTS_BURST)
            b->tokens = EVENTS_BURST;
    }
    b->last_ns = now_ns;
    if (b->tokens < 1.0) {
        out->action = EVENTS_DROP;
        return;
    }
    b->tokens -= 1.0;
    /* 2. similar events: many messages for one (object, type, reason) */
    uint64_t sim = hash_str(hash_str(obj, o->type), o->reason);
    uint64_t mh = hash_str(GP_FNV_OFFSET, o->message);
    seen *s = lookup(&a->similar, sim, &found);
    if (found && now_ns - s->first_ns > EVENTS_WINDOW_NS) {
        memset(s, 0, sizeof *s);
        s->key = sim;
        found = false;
    }
    if (!found)
        s->first_ns = now_ns;
    s->last_ns = now_ns;
    bool known = false;
    for (int i = 0; i < s->nmsgs; i++)
        known |= s->msgs[i] == mh;
    if (!known && s->nmsgs < EVENTS_SIMILAR_MAX)
        s->msgs[s->nmsgs++] = mh;
    /* once EVENTS_SIMILAR_MAX variants are seen, one combined event counts them all */
    char msg[EVENTS_MSG_MAX];
    bool combine = s->nmsgs >= EVENTS_SIMILAR_MAX;
    snprintf(msg, sizeof msg, "%s%s", combine ? "(combined from similar events): " : "",
             o->message);
    gp_utf8_scrub(msg);   /* cut inside a character above or by whoever bounded it: JSON needs UTF-8 */
    uint64_t ekey = hash_str(sim, combine ? "\x01combined" : o->message);
    /* 3. repeats of one event: count them on the Event already created */
    seen *e = lookup(&a->events, ekey, &found);
    evname *en = &a->events.names[e - a->events.s];
    if (found && now_ns - e->last_ns > EVENTS_WINDOW_NS)
        found = false;
    e->last_ns = now_ns;
    if (found) {
        e->count++;
        char ts[32];
        gp_rfc3339_format(now_ns, ts, sizeof ts);
        out->action = EVENTS_PATCH;
        gp_strlcpy(out->name, en->name, sizeof out->name);
        out->body = json_pack("{s:i,s:s,s:s}", "count", e->count, "lastTimestamp", ts, "message",
                              msg);
        return;
    }
    e->key = ekey;
    e->count = 1;
    e->first_ns = now_ns;
    gp_strlcpy(en->ns, o->ns, sizeof en->ns);
    snprintf(en->name, sizeof en->name, "%.*s.%llx", EVENTS_POD_NAME_MAX, o->pod,
             (unsigned long long)now_ns);
    out->action = EVENTS_CREATE;
    gp_strlcpy(out->name, en->name, sizeof out->name);
    out->body = event_object(a, o, en->name, msg, now_ns);
}

void events_agg_forget(events_agg *a, const char *ns, const char *name)
{
    for (size_t i = 0; i < a->events.n; i++)
        if (a->events.s[i].key && strcmp(a->events.names[i].name, name) == 0 &&
            strcmp(a->events.names[i].ns, ns) == 0) {
            memset(&a->events.s[i], 0, sizeof a->events.s[i]);
            memset(&a->events.names[i], 0, sizeof a->events.names[i]);
        }
}

/* -------------------------------------------------------------- sender -- */

typedef struct occ {
    char ns[GP_NAME_MAX], pod[GP_NAME_MAX], uid[GP_UID_MAX];
    bool ok;                    /* Normal, else Warning */
    char reason[64];            /* "" = the bind reasons (GPUsAssigned / GPUBindFailed) */
    char msg[EVENTS_MSG_MAX];
    int64_t at_ns;
} occ;

struct gp_events {
    gp_kube *k;
    gp_kube_cancel *cancel;     /* fired at stop: a request in flight ends at once */
    gp_cluster *c;
    events_agg *agg;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    occ *q;
    size_t head, len;
    bool stop;
    gp_events_level level;
    atomic_ulong sent, aggregated, dropped, failed;
};

static void *events_thread(void *arg);

gp_events *events_new(const gp_kube_auth *auth, gp_cluster *c, gp_err *err)
{
    gp_kube *k = kube_new(auth, err);
    if (!k)
        return NULL;
    gp_events *ev = xcalloc(1, sizeof *ev);
    ev->k = k;
    ev->cancel = kube_cancel_new();
    ev->c = c;
    char host[256] = "gpupack";
    if (gethostname(host, sizeof host - 1) != 0)
        gp_strlcpy(host, "gpupack", sizeof host);
    ev->agg = events_agg_new("gpupack", host);
    ev->q = xcalloc_resident(EVENTS_QUEUE_MAX, sizeof *ev->q);   /* a ring: util.h */
    pthread_mutex_init(&ev->mu, NULL);
    pthread_cond_init(&ev->cv, NULL);
    if (pthread_create(&ev->th, NULL, events_thread, ev) != 0) {
        gp_fail(err, "events: cannot start the sender thread");
        events_agg_free(ev->agg);
        free(ev->q);
        kube_cancel_free(ev->cancel);
        kube_free(k);
        free(ev);
        return NULL;
    }
    return ev;
}

static void send_one(gp_events *ev, const occ *o)
{
    const char *reason = o->reason[0] ? o->reason : o->ok ? EVENTS_REASON_OK : EVENTS_REASON_FAILED;
    events_occurrence x = {o->ns, o->pod, o->uid, o->ok ? "Normal" : "Warning", reason, o->msg};
    events_send s;
    events_agg_record(ev->agg, &x, o->at_ns, &s);
    if (s.action == EVENTS_DROP) {
        atomic_fetch_add(&ev->dropped, 1);
        return;
    }
    char *ns = kube_escape(s.ns), *name = kube_escape(s.name);
    for (int attempt = 0; attempt < 2; attempt++) {
        char *body = json_dumps(s.body, JSON_COMPACT);
        char *path = s.action == EVENTS_CREATE
                         ? xasprintf("/api/v1/namespaces/%s/events", ns)
                         : xasprintf("/api/v1/namespaces/%s/events/%s", ns, name);
        gp_kube_resp r;
        gp_err err;
        long status = kube_call(ev->k, s.action == EVENTS_CREATE ? "POST" : "PATCH", path,
                                s.action == EVENTS_CREATE ? "application/json"
                                                          : "application/merge-patch+json",
                                body, 10, ev->cancel, NULL, &r, &err);
        kube_resp_free(&r);
        free(path);
        free(body);
        if (status >= 200 && status < 300) {
            atomic_fetch_add(s.action == EVENTS_CREATE ? &ev->sent : &ev->aggregated, 1);
            break;
        }
        if (s.action == EVENTS_PATCH && status == 404 && attempt == 0) {
            /* the Event expired on the server: create it anew */
            events_agg_forget(ev->agg, s.ns, s.name);
            json_decref(s.body);
            events_agg_record(ev->agg, &x, o->at_ns, &s);
            if (s.action == EVENTS_CREATE)
                continue;
        }
        atomic_fetch_add(&ev->failed, 1);
        LOG_WARN("event on pod %s/%s not recorded: %s", o->ns, o->pod, err.msg);
        break;
    }
    free(ns);
    free(name);
    json_decref(s.body);
}

static void *events_thread(void *arg)
{
    gp_events *ev = arg;
    gp_thread_set_name("events");
    occ *o = xmalloc(sizeof *o);
    pthread_mutex_lock(&ev->mu);
    for (;;) {
        while (!ev->stop && ev->len == 0)
            pthread_cond_wait(&ev->cv, &ev->mu);
        if (ev->stop)
            break;
        *o = ev->q[ev->head];
        ev->head = (ev->head + 1) % EVENTS_QUEUE_MAX;
        ev->len--;
        pthread_mutex_unlock(&ev->mu);
        send_one(ev, o);
        pthread_mutex_lock(&ev->mu);
    }
    pthread_mutex_unlock(&ev->mu);
    free(o);
    return NULL;
}

void events_free(gp_events *ev)
{
    if (!ev)
        return;
    pthread_mutex_lock(&ev->mu);
    ev->stop = true;
    pthread_cond_signal(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
    kube_cancel_fire(ev->cancel);
    pthread_join(ev->th, NULL);
    kube_cancel_free(ev->cancel);
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    events_agg_free(ev->agg);
    kube_free(ev->k);
    free(ev->q);
    free(ev);
}

/* Queues one occurrence; a full queue drops it. */
static void enqueue(gp_events *ev, const occ *o)
{
    pthread_mutex_lock(&ev->mu);
    if (ev->len == EVENTS_QUEUE_MAX) {
        atomic_fetch_add(&ev->dropped, 1);
    } else {
        ev->q[(ev->head + ev->len) % EVENTS_QUEUE_MAX] = *o;
        ev->len++;
        pthread_cond_signal(&ev->cv);
    }
    pthread_mutex_unlock(&ev->mu);
}

void events_pod(gp_events *ev, const char *ns, const char *pod, const char *uid, bool warning,
                const char *reason, const char *msg)
{
    if (!ev || !ns || !pod || !reason || !msg)
        return;
    occ *o = xcalloc(1, sizeof *o);
    gp_strlcpy(o->ns, ns, sizeof o->ns);
    gp_strlcpy(o->pod, pod, sizeof o->pod);
    gp_strlcpy(o->uid, uid ? uid : "", sizeof o->uid);
    o->ok = !warning;
    gp_strlcpy(o->reason, reason, sizeof o->reason);
    gp_strlcpy(o->msg, msg, sizeof o->msg);
    o->at_ns = gp_now_ns();
    enqueue(ev, o);
    free(o);
}

int events_level_parse(const char *s, gp_events_level *out)
{
    static const char *const names[] = {[GP_EVENTS_ALL] = "all", [GP_EVENTS_GPU] = "gpu",
                                        [GP_EVENTS_FAILURES] = "failures"};
    for (size_t i = 0; i < GP_ARRAY_LEN(names); i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (gp_events_level)i;
            return 0;
        }
    return -1;
}

void events_set_level(gp_events *ev, gp_events_level level)
{
    if (ev)
        ev->level = level;
}

void events_bind_result(gp_events *ev, const gp_bind_call *call, bool ok, const char *why)
{
    if (!ev || !call)
        return;
    if (ok && (ev->level == GP_EVENTS_FAILURES || (ev->level == GP_EVENTS_GPU && !call->assign)))
        return;
    occ o;
    memset(&o, 0, sizeof o);
    gp_strlcpy(o.ns, call->ns, sizeof o.ns);
    gp_strlcpy(o.pod, call->name, sizeof o.pod);
    gp_strlcpy(o.uid, call->uid ? call->uid : "", sizeof o.uid);
    o.ok = ok;
    o.at_ns = gp_now_ns();
    if (ok && call->assign) {
        cluster_rdlock(ev->c);
        events_describe_bind(call->assign, cluster_rd_node(ev->c, call->node), call->policy, o.msg,
                             sizeof o.msg);
        cluster_unlock(ev->c);
    } else if (ok) {
        snprintf(o.msg, sizeof o.msg, "bound to %s", call->node);
    } else {
        snprintf(o.msg, sizeof o.msg, "binding to %s failed: %s", call->node,
                 why && *why ? why : "unknown error");
    }
    enqueue(ev, &o);
}

void events_metrics(void *events, gp_buf *out)
{
    gp_events *ev = events;
    if (!ev)
        return;
    metrics_header(out, "gpupack_events_total", "counter",
                   "Kubernetes Events on pods (binds, preemptions): created, counted on an existing Event "
                   "(aggregated), dropped by the rate limit or a full queue, failed.");
    metrics_u(out, "gpupack_events_total", "result=\"created\"", atomic_load(&ev->sent));
    metrics_u(out, "gpupack_events_total", "result=\"aggregated\"", atomic_load(&ev->aggregated));
    metrics_u(out, "gpupack_events_total", "result=\"dropped\"", atomic_load(&ev->dropped));
    metrics_u(out, "gpupack_events_total", "result=\"failed\"", atomic_load(&ev->failed));
}
