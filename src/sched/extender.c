/* extender.c -- kube-scheduler extender verbs: decoded request -> decision. */
#include "sched/extender.h"

#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/annotations.h"
#include "model/formats.h"
#include "model/k8s_obs.h"
#include "model/podenv.h"
#include "lib/extargs.h"
#include "lib/jsonw.h"
#include "lib/cpus.h"
#include "lib/keycache.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "model/podreq.h"
#include "lib/strmap.h"
#include "lib/workq.h"

#define MAX_NODES_PER_REQUEST 100000
#define EVAL_MAX_WORKERS 4
#define EVAL_PARALLEL_MIN 1024    /* below this many nodes one thread is faster */
#define EVAL_CHUNK 128            /* nodes a thread takes at a time from a shared list */
#define MAX_ANSWER_BYTES (256u << 20)   /* an answer past this is a bug, not a request */
#define FIT_CACHE_SLOTS (1u << 18)      /* 4 MiB once full: 5,000 node states x ~40 pod shapes */
#define SCORE_MEMO_SLOTS (1u << 15)     /* 512 KiB: two entries per node state and policy */

typedef struct pending {
    /* The pod as bind reads it: after a filter, its tree as the filter
     * decoded it (shared, never changed) until PENDING_TREES newer filtered
     * pods came, then a trimmed copy as compact JSON text (a tenth of the
     * tree's memory, and 20,000 pods may wait); from the watch, the text at
     * once. A bind mostly follows its filter within milliseconds: it then
     * takes the tree as it is, where it used to parse text that the filter
     * had written. */
    json_t *tree;       /* or NULL, and then: */
    char *pod;
    size_t len;
    struct pending *tprev, *tnext;   /* among those with a tree, oldest first */
    double at;          /* monotonic seconds */
    double gone_at;     /* the watch showed it deleted then (0 = not) */
} pending;

#define PENDING_TREES 64   /* a bind follows its filter: about as many pods as binds in flight */

struct gp_extender {
    gp_cluster *c;
    gp_extender_config cfg;
    gp_policy_set *fallback;    /* used when cfg.policies is NULL */
    pthread_mutex_t mu;         /* guards pending */
    strmap *pending;            /* uid -> pending */
    pending trees;              /* the list of those with a tree (a sentinel) */
    size_t ntrees;
    double list_began;          /* when the pod LIST being applied asked its first page (0: none) */
    double pending_swept;       /* when pending_sweep_locked last scanned */
    atomic_ulong n_filter, n_prioritize, n_bind, n_bind_errors, n_bad;
    atomic_ulong n_dra_unpredicted;   /* pods whose claims could not be predicted */
    atomic_ulong n_unready[4];  /* see gp_extender_stats */
    atomic_bool refusing;       /* the last serving() said no (logged once per spell) */
    int eval_threads;           /* threads evaluating one large node list, the request's own included */
    pthread_mutex_t helpers_mu; /* guards starting the helpers */
    _Atomic(gp_workq *) helpers; /* eval_threads - 1 threads that help with it, started by the
                                  * first large list (NULL: not yet, or none) */
    bool helpers_failed;        /* they could not be started: the request's thread alone */
    gp_workq *binds;            /* live mode: Bindings run here, off the HTTP threads */
    gp_keycache *fits;          /* (node state, pod shape, policy) -> score of a fit */
    gp_keycache *scores;        /* (node state, policy) -> its look-ahead as it is (placement.h) */
};

gp_extender *extender_new(gp_cluster *c, const gp_extender_config *cfg)
{
    gp_extender *e = xcalloc(1, sizeof *e);
    e->c = c;
    if (cfg)
        e->cfg = *cfg;
    if (!e->cfg.pending_max)
        e->cfg.pending_max = 10000;
    if (e->cfg.pending_ttl_s <= 0)
        e->cfg.pending_ttl_s = 600;
    if (e->cfg.pending_gone_s <= 0)
        e->cfg.pending_gone_s = 60;
    if (!e->cfg.policies)
        e->fallback = policy_set_default();
    pthread_mutex_init(&e->mu, NULL);
    e->pending = strmap_new();
    e->fits = keycache_new(FIT_CACHE_SLOTS);
    e->scores = keycache_new(SCORE_MEMO_SLOTS);
    /* the CPUs a container's limit allows, not the node's: cpus.h */
    long cpus = e->cfg.eval_threads > 0 ? e->cfg.eval_threads : gp_cpus_usable();
    e->eval_threads = cpus < 1 ? 1 : cpus > EVAL_MAX_WORKERS ? EVAL_MAX_WORKERS : (int)cpus;
    pthread_mutex_init(&e->helpers_mu, NULL);
    atomic_init(&e->helpers, NULL);
    if (e->cfg.binder) {
        gp_err err;
        e->binds = workq_new(e->cfg.bind_threads > 0 ? e->cfg.bind_threads : 16, "bind threads",
                             &err);
        if (!e->binds)
            abort();   /* no thread at all: the process cannot serve */
    }
    return e;
}

static void tree_unlink(gp_extender *e, pending *p)
{
    if (!p->tnext)
        return;
    p->tprev->tnext = p->tnext;
    p->tnext->tprev = p->tprev;
    p->tprev = p->tnext = NULL;
    e->ntrees--;
}

/* Under e->mu. */
static void pending_free(gp_extender *e, pending *p)
{
    if (p) {
        tree_unlink(e, p);
        json_decref(p->tree);
        free(p->pod);
        free(p);
    }
}

/* The oldest tree becomes text (e->mu held): at most PENDING_TREES stay. */
static void pending_to_text(gp_extender *e, pending *p)
{
    tree_unlink(e, p);
    json_t *t = k8s_obs_trim_pod(p->tree);
    p->pod = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    if (!p->pod)
        abort();   /* out of memory: jansson's only failure on a valid tree */
    p->len = strlen(p->pod);
    json_decref(p->tree);
    p->tree = NULL;
}

void extender_stop_binds(gp_extender *e)
{
    if (!e || !e->binds)
        return;
    gp_workq *q = e->binds;
    workq_free(q);   /* finishes the binds in flight first */
    e->binds = NULL;
}

void extender_free(gp_extender *e)
{
    if (!e)
        return;
    workq_free(e->binds);   /* finishes the binds in flight first */
    workq_free(atomic_load(&e->helpers));
    pthread_mutex_destroy(&e->helpers_mu);
    size_t it = 0;
    pending *p;
    while ((p = strmap_next(e->pending, &it, NULL)))
        pending_free(e, p);
    strmap_free(e->pending);
    keycache_free(e->fits);
    keycache_free(e->scores);
    pthread_mutex_destroy(&e->mu);
    policy_set_unref(e->fallback);
    free(e);
}

void extender_stats(gp_extender *e, gp_extender_stats *out)
{
    out->filter = atomic_load(&e->n_filter);
    out->prioritize = atomic_load(&e->n_prioritize);
    out->bind = atomic_load(&e->n_bind);
    out->bind_errors = atomic_load(&e->n_bind_errors);
    out->bad_requests = atomic_load(&e->n_bad);
    for (int v = 0; v < 4; v++)
        out->unready[v] = atomic_load(&e->n_unready[v]);
    keycache_stats(e->fits, &out->fit_cache_hits, &out->fit_cache_misses);
    keycache_stats(e->scores, &out->score_memo_hits, &out->score_memo_misses);
    pthread_mutex_lock(&e->mu);
    out->remembered = strmap_count(e->pending);
    pthread_mutex_unlock(&e->mu);
}

void extender_metrics(void *extender, gp_buf *out)
{
    gp_extender_stats es;
    extender_stats(extender, &es);
    metrics_header(out, "gpupack_bind_errors_total", "counter", "Binds that returned an Error.");
    metrics_u(out, "gpupack_bind_errors_total", NULL, es.bind_errors);
    metrics_header(out, "gpupack_bad_requests_total", "counter", "Requests answered with 400.");
    metrics_u(out, "gpupack_bad_requests_total", NULL, es.bad_requests);
    metrics_header(out, "gpupack_verbs_unready_total", "counter",
                   "Verb calls answered with an error because gpupack's map was not the API "
                   "server's yet (nodes or pods not listed, or a relist not applied).");
    static const char *const verbs[] = {"verb=\"filter\"", "verb=\"prioritize\"", "verb=\"bind\"",
                                        "verb=\"preempt\""};
    for (int v = 0; v < 4; v++)
        metrics_u(out, "gpupack_verbs_unready_total", verbs[v], es.unready[v]);
    metrics_header(out, "gpupack_fit_cache_total", "counter",
                   "Node evaluations of filter and prioritize looked up in the cache of verdicts "
                   "(a node state, pod shape and policy seen before), by result.");
    metrics_u(out, "gpupack_fit_cache_total", "result=\"hit\"", es.fit_cache_hits);
    metrics_u(out, "gpupack_fit_cache_total", "result=\"miss\"", es.fit_cache_misses);
    metrics_header(out, "gpupack_score_memo_total", "counter",
                   "Look-ups of what a node's score owes to its state alone (the look-ahead of the "
                   "node as it is), kept by node state and policy across requests, by result; two "
                   "per evaluation that scores a fit.");
    metrics_u(out, "gpupack_score_memo_total", "result=\"hit\"", es.score_memo_hits);
    metrics_u(out, "gpupack_score_memo_total", "result=\"miss\"", es.score_memo_misses);
    metrics_header(out, "gpupack_pods_remembered", "gauge",
                   "Pending pods whose request is kept for their bind (until bound, at most "
                   "10,000 for 10 minutes).");
    metrics_u(out, "gpupack_pods_remembered", NULL, es.remembered);
}

static gp_policy_set *policies_get(gp_extender *e)
{
    if (e->cfg.policies)
        return e->cfg.policies(e->cfg.policies_ud);
    policy_set_ref(e->fallback);
    return e->fallback;
}

/* {"Error": msg} as owned text. */
static char *error_body(const char *msg)
{
    gp_buf b;
    gp_buf_init(&b, MAX_ANSWER_BYTES);
    jsonw_raw(&b, "{\"Error\":");
    jsonw_str(&b, msg);
    jsonw_raw(&b, "}");
    if (gp_buf_failed(&b))
        abort();
    return b.data;
}

static int bad_request(gp_extender *e, char **out, const char *fmt, ...) GP_PRINTF(3, 4);
static int bad_request(gp_extender *e, char **out, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&e->n_bad, 1);
    *out = error_body(msg);
    return 400;
}

/* The verbs whose refusals while not serving are counted. */
enum { VERB_FILTER, VERB_PRIORITIZE, VERB_BIND, VERB_PREEMPT };

/* Whether the map may decide now; if not, *msg says why (for the Error). */
static bool serving(gp_extender *e, int verb, char *msg, size_t len)
{
    char why[400] = "";
    if (!e->cfg.serving || e->cfg.serving(e->cfg.serving_ud, why, sizeof why)) {
        if (atomic_exchange(&e->refusing, false))
            LOG_INFO("the verbs decide again: gpupack's map is the API server's");
        return true;
    }
    if (!atomic_exchange(&e->refusing, true))
        LOG_WARN("the verbs decide nothing until gpupack's map is the API server's (%s): filter "
                 "and bind answer an Error, prioritize 503; kube-scheduler retries", why);
    atomic_fetch_add(&e->n_unready[verb], 1);
    snprintf(msg, len, "gpupack is not ready: its map is not the API server's yet (%s); nothing "
                       "was decided, kube-scheduler retries the pod", why);
    return false;
}

/* ------------------------------------------------------ pending pods -- */

/* Makes room when the map is full: drops the expired entries and the oldest
 * quarter of the rest in two passes, so that a full map costs one scan per
 * pending_max / 4 new pods rather than one per pod. */
static void pending_evict_locked(gp_extender *e, double now)
{
    double oldest = now, newest = 0;
    size_t it = 0;
    pending *p;
    while ((p = strmap_next(e->pending, &it, NULL))) {
        if (p->at < oldest)
            oldest = p->at;
        if (p->at > newest)
            newest = p->at;
    }
    double cut = oldest + (newest - oldest) / 4;   /* at least the oldest goes */
    if (now - e->cfg.pending_ttl_s > cut)
        cut = now - e->cfg.pending_ttl_s;
    const char *keys[64];
    pending *victims[64];
    for (;;) {
        size_t n = 0;
        const char *k;
        it = 0;
        while (n < GP_ARRAY_LEN(victims) && (p = strmap_next(e->pending, &it, &k))) {
            if (p->at <= cut) {
                victims[n] = p;
                keys[n++] = k;
            }
        }
        for (size_t i = 0; i < n; i++) {
            char key[GP_UID_MAX];
            gp_strlcpy(key, keys[i], sizeof key);
            strmap_del(e->pending, key);
            pending_free(e, victims[i]);
        }
        if (n < GP_ARRAY_LEN(victims))
            return;
    }
}

typedef struct stale_ctx {
    gp_extender *e;
    double now, ttl_s, gone_s;
} stale_ctx;

static bool pending_stale(const char *uid, void *val, void *ud)
{
    (void)uid;
    pending *p = val;
    const stale_ctx *x = ud;
    if (!(p->gone_at > 0 && x->now - p->gone_at >= x->gone_s) && x->now - p->at < x->ttl_s)
        return false;
    pending_free(x->e, p);
    return true;
}

/* Drops the requests of pods deleted pending_gone_s ago and of those nothing
 * refreshed for pending_ttl_s; a scan at most every PENDING_SWEEP_S. */
#define PENDING_SWEEP_S 30.0
static void pending_sweep_locked(gp_extender *e, double now)
{
    double every = e->cfg.pending_gone_s < PENDING_SWEEP_S ? e->cfg.pending_gone_s : PENDING_SWEEP_S;
    if (now - e->pending_swept < every)
        return;
    e->pending_swept = now;
    stale_ctx x = {e, now, e->cfg.pending_ttl_s, e->cfg.pending_gone_s};
    strmap_drop_if(e->pending, pending_stale, &x);
}

/* Remembers the pod for its bind. From a filter (`filtered`: pod is what the
 * scanner keeps of a pod, extargs.h, and nobody changes it) it is kept as it
 * is, the bind coming next; a pod the watch shows pending may wait long for
 * its filter, and goes to text at once. */
static void remember(gp_extender *e, const json_t *pod, bool filtered, const char *uid)
{
    if (!uid || !*uid || strlen(uid) >= GP_UID_MAX)
        return;
    pending *p = xcalloc(1, sizeof *p);
    if (filtered) {
        p->tree = json_incref((json_t *)pod);
    } else {
        json_t *t = k8s_obs_trim_pod(pod);   /* what bind reads, as the scanner keeps it */
        p->pod = json_dumps(t, JSON_COMPACT);
        json_decref(t);
        if (!p->pod)
            abort();   /* out of memory: jansson's only failure on a valid tree */
        p->len = strlen(p->pod);
    }
    p->at = gp_mono_s();
    pthread_mutex_lock(&e->mu);
    pending_sweep_locked(e, p->at);
    if (strmap_count(e->pending) >= e->cfg.pending_max)
        pending_evict_locked(e, p->at);
    const pending *old = strmap_get(e->pending, uid);
    if (old)
        p->gone_at = old->gone_at;   /* a filter after its deletion: it stays gone */
    pending_free(e, strmap_put(e->pending, uid, p));
    if (p->tree) {
        if (!e->trees.tnext)
            e->trees.tprev = e->trees.tnext = &e->trees;
        p->tprev = e->trees.tprev;   /* newest last */
        p->tnext = &e->trees;
        e->trees.tprev->tnext = p;
        e->trees.tprev = p;
        if (++e->ntrees > PENDING_TREES)
            pending_to_text(e, e->trees.tnext);
    }
    pthread_mutex_unlock(&e->mu);
}

/* The pod remembered for uid (owned), or NULL. A tree is shared: read it,
 * never change it. */
static json_t *recall(gp_extender *e, const char *uid)
{
    char *text = NULL;
    size_t len = 0;
    json_t *pod = NULL;
    pthread_mutex_lock(&e->mu);
    pending *p = strmap_get(e->pending, uid);
    if (p && p->tree) {
        pod = json_incref(p->tree);
    } else if (p) {
        text = xmalloc(p->len + 1);
        memcpy(text, p->pod, p->len + 1);
        len = p->len;
    }
    pthread_mutex_unlock(&e->mu);
    if (text)
        pod = json_loadb(text, len, 0, NULL);
    free(text);
    return pod;
}

void extender_note_pod(gp_extender *e, const json_t *pod)
{
    const char *uid = pod_uid(pod);
    if (uid)
        remember(e, pod, false, uid);
}

void extender_forget_pod(gp_extender *e, const char *uid)
{
    if (!uid || !*uid)
        return;
    pthread_mutex_lock(&e->mu);
    pending_free(e, strmap_del(e->pending, uid));
    pthread_mutex_unlock(&e->mu);
}

void extender_pod_gone(gp_extender *e, const char *uid)
{
    if (!uid || !*uid)
        return;
    double now = gp_mono_s();
    pthread_mutex_lock(&e->mu);
    pending *p = strmap_get(e->pending, uid);
    if (p && p->gone_at == 0)
        p->gone_at = now;
    pending_sweep_locked(e, now);
    pthread_mutex_unlock(&e->mu);
}

static bool pending_unlisted(const char *uid, void *val, void *ud)
{
    (void)uid;
    pending *p = val;
    gp_extender *e = ud;
    if (p->at >= e->list_began)
        return false;
    pending_free(e, p);
    return true;
}

void extender_pods_listing(gp_extender *e, bool end, double since)
{
    pthread_mutex_lock(&e->mu);
    if (!end) {
        e->list_began = since > 0 ? since : gp_mono_s();
    } else {
        if (e->list_began > 0)   /* the LIST remembered every pending pod afresh */
            strmap_drop_if(e->pending, pending_unlisted, e);
        e->list_began = 0;
    }
    pthread_mutex_unlock(&e->mu);
}

/* ------------------------------------------------------ request parts -- */

gp_policy_set *extender_policies(gp_extender *e)
{
    return policies_get(e);
}

/* The pod's request under the policy that governs it. Returns 0, or -1 with
 * a message (the pod cannot be scheduled by gpupack as it stands). */
int extender_pod_request(gp_extender *e, const gp_pod *pod, gp_policy_set *set, gp_pod_req *req,
                         gp_policy_view *view, gp_err *err)
{
    if (policy_select(set, pod->ns, pod->labels, pod->policy[0] ? pod->policy : NULL, time(NULL),
                      view, err))
        return -1;
    if (podreq_of(pod, &view->names, req, err))
        return -1;
    gp_err why;
    if (req->nctrs == 0 && e->cfg.dra_request &&
        e->cfg.dra_request(e->cfg.dra_ud, pod->json, req, &why) == 1) {
        atomic_fetch_add(&e->n_dra_unpredicted, 1);
        LOG_DEBUG("pod %s/%s: its claims are served without GPU packing: %s", req->ns, req->name,
                  why.msg);
    }
    return 0;
}

int extender_pod_request_json(gp_extender *e, const json_t *pod, gp_policy_set *set,
                              gp_pod_req *req, gp_policy_view *view, gp_err *err)
{
    gp_pod p;
    if (pod_decode(pod, &p, err))
        return -1;
    return extender_pod_request(e, &p, set, req, view, err);
}

/* The nodes of a request: names from NodeNames, or from
 * Nodes.items[].metadata.name (then items are echoed back). */
typedef struct node_list {
    const char **names;     /* n pointers, into the request's storage */
    bool own_names;         /* the array (not the strings) is ours to free */
    const json_t *items;    /* Nodes.items (NULL when empty) */
    bool nodes_mode;        /* the request sent Nodes: answer with Nodes */
    size_t n;
} node_list;

static const char *node_list_name(const node_list *nl, size_t i)
{
    return nl->names[i];
}

/* A decoded ExtenderArgs: by the fast scanner when the body is in the plain
 * form, else by jansson; the rest of the code does not care which. */
typedef struct verb_args {
    json_t *root;           /* jansson path: the whole body */
    gp_extargs fast;        /* fast path */
    const json_t *pod;
    node_list nl;
} verb_args;

static void verb_args_free(verb_args *va)
{
    if (va->nl.own_names)
        free(va->nl.names);
    extargs_free(&va->fast);
    json_decref(va->root);
}

static int node_list_from(verb_args *va, const json_t *names, const json_t *nodes, char *msg,
                          size_t len)
{
    node_list *nl = &va->nl;
    if (va->fast.has_names) {
        nl->names = va->fast.names;
        nl->n = va->fast.nnames;
    } else if (names && !json_is_null(names)) {
        if (!json_is_array(names)) {
            snprintf(msg, len, "NodeNames must be an array of node names");
            return -1;
        }
        nl->n = json_array_size(names);
    } else if (nodes && !json_is_null(nodes)) {
        const json_t *items = json_object_get(nodes, "items");
        if (!json_is_object(nodes) || !(json_is_array(items) || json_is_null(items) || !items)) {
            snprintf(msg, len, "Nodes must be a NodeList object with an items array");
            return -1;
        }
        nl->items = json_is_array(items) ? items : NULL;
        nl->n = nl->items ? json_array_size(items) : 0;
        nl->nodes_mode = true;
    } else {
        snprintf(msg, len, "request has neither NodeNames nor Nodes");
        return -1;
    }
    if (nl->n > MAX_NODES_PER_REQUEST) {
        snprintf(msg, len, "more than %d nodes in one request", MAX_NODES_PER_REQUEST);
        return -1;
    }
    if (!nl->names) {
        nl->names = xmalloc((nl->n ? nl->n : 1) * sizeof *nl->names);
        nl->own_names = true;
        for (size_t i = 0; i < nl->n; i++) {
            const json_t *v = nl->nodes_mode ? json_object_get(json_object_get(json_array_get(nl->items, i),
                                                                          "metadata"),
                                                          "name")
                                        : json_array_get(names, i);
            nl->names[i] = json_string_value(v);   /* NULL when not a string */
        }
    }
    for (size_t i = 0; i < nl->n; i++) {
        const char *v = nl->names[i];
        size_t l = v ? strlen(v) : 0;
        if (l == 0 || l >= GP_NAME_MAX) {
            snprintf(msg, len, "%s[%zu] is not a node name", nl->nodes_mode ? "Nodes.items" : "NodeNames",
                     i);
            return -1;
        }
    }
    return 0;
}

/* Decodes a filter/prioritize body. Returns 0, or 400 with *out set. */
static int verb_args_decode(gp_extender *e, const char *body, size_t len, verb_args *va, char **out)
{
    memset(va, 0, sizeof *va);
    const json_t *names = NULL, *nodes = NULL;
    if (extargs_scan(body, len, MAX_NODES_PER_REQUEST, k8s_obs_pod_keep, &va->fast) == 0) {
        va->pod = va->fast.pod;
        nodes = va->fast.nodes;
    } else {
        json_error_t je;
        va->root = json_loadb(body, len, 0, &je);
        if (!va->root)
            return bad_request(e, out, "request body is not valid JSON (line %d, column %d): %s",
                               je.line, je.column, je.text);
        if (!json_is_object(va->root))
            return bad_request(e, out, "request body must be a JSON object");
        va->pod = json_object_get(va->root, "Pod");
        names = json_object_get(va->root, "NodeNames");
        nodes = json_object_get(va->root, "Nodes");
    }
    if (!json_is_object(va->pod))
        return bad_request(e, out, "Pod must be a Pod object");
    char msg[256];
    if (node_list_from(va, names, nodes, msg, sizeof msg))
        return bad_request(e, out, "%s", msg);
    return 0;
}

static int parse_args(gp_extender *e, const char *body, size_t len, json_t **args, char **out)
{
    json_error_t je;
    *args = json_loadb(body, len, 0, &je);
    if (!*args)
        return bad_request(e, out, "request body is not valid JSON (line %d, column %d): %s",
                           je.line, je.column, je.text);
    if (!json_is_object(*args)) {
        json_decref(*args);
        *args = NULL;
        return bad_request(e, out, "request body must be a JSON object");
    }
    return 0;
}

/* Evaluates every node for the pod under the read lock. Reasons for nodes
 * that do not fit go to one arena (a few per request), not into per-node
 * fixed buffers: per-node state stays small for 5,000-node requests. */
typedef struct verdict {
    bool fits;
    bool unresolvable;
    unsigned char arena;    /* which worker's arena holds the reason */
    unsigned reason;        /* offset into that arena */
    double raw;             /* node score, when asked for */
    bool unknown;           /* host-only pod, node not in the store: passes, unranked */
    bool reason_pending;    /* a failure from the fit cache: its reason is worked out
                             * again only if the answer lists it */
} verdict;

typedef struct verdicts {
    verdict *v;
    gp_buf reasons[EVAL_MAX_WORKERS];   /* one per worker: no shared writes */
} verdicts;

static void verdicts_init(verdicts *vs, size_t n)
{
    vs->v = xmalloc((n ? n : 1) * sizeof *vs->v);
    for (int w = 0; w < EVAL_MAX_WORKERS; w++) {
        gp_buf_init(&vs->reasons[w], (size_t)1 << 30);
        gp_buf_append(&vs->reasons[w], "", 1);   /* offset 0 = "" */
    }
}

static void verdicts_free(verdicts *vs)
{
    free(vs->v);
    for (int w = 0; w < EVAL_MAX_WORKERS; w++)
        gp_buf_free(&vs->reasons[w]);
}

static void set_reason_w(verdicts *vs, int arena, size_t i, const char *fmt, ...) GP_PRINTF(4, 5);
static void set_reason_w(verdicts *vs, int arena, size_t i, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof msg)
        n = sizeof msg - 1;
    gp_buf *b = &vs->reasons[arena];
    size_t off = b->len;
    if (off > 0xffffffffu || gp_buf_append(b, msg, (size_t)n + 1))
        off = 0;
    vs->v[i].arena = (unsigned char)arena;
    vs->v[i].reason = (unsigned)off;
}

#define set_reason(vs, i, ...) set_reason_w(vs, 0, i, __VA_ARGS__)

static const char *reason_of(const verdicts *vs, size_t i)
{
    return vs->reasons[vs->v[i].arena].data + vs->v[i].reason;
}

/* One evaluation of a node list: what every thread taking part reads. */
typedef struct eval_job {
    gp_extender *e;
    const gp_pod_req *req;
    const gp_policy_view *view;
    const gp_place_opts *place;   /* view->place with the extender's score memo */
    const node_list *nl;
    bool want_scores;
    verdicts *vs;
    uint64_t shape;         /* fit_shape_key(); 0: verdicts are not cached */
    bool memo_ok;           /* a verdict depends on the node's state alone: shared by state */
} eval_job;

/* Verdicts outlive their request. kube-scheduler asks about the same few pod
 * shapes over and over (in the openb trace 20 shapes make 76 % of pods), and
 * between two filters only the nodes a pod was bound to or reserved on change
 * state. So a verdict (fits with its score, or fails, resolvably or not) is
 * cached under (the node's state fingerprint, which the store keeps, the pod's
 * shape, the policy's placement settings); a changed node has a new
 * fingerprint and misses. A failure's reason is not kept: it is worked out
 * again when the answer lists it. The key covers every field placement reads:
 * the asserts below stop a new field from being left out silently. */
#define FIT_FAILS INFINITY                 /* cached value of a failure ... */
#define FIT_NEVER (-INFINITY)              /* ... and of an unresolvable one */
_Static_assert(sizeof(gp_ctr_req) == 96, "a new gp_ctr_req field: add it to fit_shape_key");
/* (gp_pod_req.owner is not read by placement: the held places it selects
 * change the node view, whose fingerprint the key has) */
_Static_assert(sizeof(gp_pod_req) == 3232, "a new gp_pod_req field: add it to fit_shape_key");
_Static_assert(sizeof(gp_place_opts) == 320, "a new gp_place_opts field: add it to place_opts_key");
_Static_assert(sizeof(gp_shape) == 280, "a new gp_shape field: add it to fit_shape_key");

static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * GP_FNV_PRIME;
}

static uint64_t mix_double(uint64_t h, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return mix(h, bits);
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    return gp_fnv1a(h, s, strlen(s) + 1);
}

/* The policy's placement settings, into h (o->memo is not a setting). */
static uint64_t place_opts_key(uint64_t h, const gp_place_opts *o)
{
    /* strategies are static tables: their addresses name them */
    h = mix(mix(h, (uint64_t)(uintptr_t)o->gpu), (uint64_t)(uintptr_t)o->node);
    h = mix(mix(h, (uint64_t)o->reserve_mem_mib), (uint64_t)o->max_pods_per_gpu);
    h = mix_str(mix_double(mix_double(h, o->w_mem), o->w_core), o->models);
    h = mix(h, o->shapes != NULL);
    for (int k = 0; o->shapes && k < o->shapes->n; k++) {
        const gp_shape *m = &o->shapes->s[k];
        h = mix(mix(mix_double(mix(mix(h, (uint64_t)m->count), (uint64_t)m->core), m->weight),
                    (uint64_t)m->cpu_milli),
                k);
        h = mix_str(h, m->models);
    }
    return h ? h : 1;
}

/* What placement and scoring read of the request and the policy (not the
 * pod's identity: names only appear in reasons, which are not cached). */
/* priority is left out: it only selects the preemption claims a node is seen
 * through, and such a node carries the fingerprint of the state it shows. */
/* policy: place_opts_key() of the policy view, hashed once per request */
static uint64_t fit_shape_key(const gp_pod_req *req, uint64_t policy, bool scores)
{
    uint64_t h = mix(GP_FNV_OFFSET, scores);
    h = mix(mix(mix(h, (uint64_t)req->profile), (uint64_t)req->nctrs), req->dra);
    for (int i = 0; i < req->nctrs; i++) {
        const gp_ctr_req *c = &req->ctrs[i];
        h = mix(mix(mix(mix(mix(mix(h, c->init), (uint64_t)c->count), (uint64_t)c->mem_mib),
                        (uint64_t)c->mem_ppm),
                    (uint64_t)c->core),
                c->ask);
    }
    h = mix_str(mix_str(mix_str(h, req->models), req->type_use), req->type_nouse);
    h = mix(mix(h, (uint64_t)req->cpu_milli), (uint64_t)req->host_mem_mib);
    h = mix(h, policy);
    return h ? h : 1;
}

static uint64_t fit_key(uint64_t shape, uint64_t state)
{
    uint64_t h = mix(mix(GP_FNV_OFFSET, shape), state);
    h ^= h >> 29;   /* keycache indexes by the low bits */
    return h ? h : 1;
}

/* Within one request, nodes in the same state get the same verdict: a
 * small table from state to the first such node's verdict (state compared in
 * full, the hash only finds candidates). Clusters are mostly made of a few
 * kinds of machine, many of them empty or full. */
#define MEMO_SLOTS 4096

typedef struct memo_slot {
    uint64_t hash;
    const gp_node *rep;
    uint32_t idx;           /* whose verdict to copy */
    uint32_t stamp;         /* the use it was written in; any other: empty */
} memo_slot;

/* Each thread keeps one table and stamps its entries with the use they were
 * written in, so that a request starts from an empty table without clearing
 * 96 KiB (a calloc per request was 1.4 % of gpupack's CPU in a 1,000-node
 * scale run: the memset, and page faults when the block came fresh). */
typedef struct memo_table {
    uint32_t stamp;         /* this use's; entries of earlier uses are stale */
    memo_slot s[MEMO_SLOTS];
} memo_table;

static pthread_key_t memo_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;

static void memo_key_make(void)
{
    if (pthread_key_create(&memo_key, free) != 0)
        abort();
}

/* The calling thread's table, emptied for a new use (freed with the thread). */
static memo_table *memo_take(void)
{
    pthread_once(&memo_once, memo_key_make);
    memo_table *t = pthread_getspecific(memo_key);
    if (!t) {
        t = xcalloc(1, sizeof *t);
        if (pthread_setspecific(memo_key, t) != 0)
            abort();
    }
    if (++t->stamp == 0) {   /* wrapped: stamp 0 could match an old entry */
        memset(t->s, 0, sizeof t->s);
        t->stamp = 1;
    }
    return t;
}

/* kept: the store maintains node->state_hash; equal fingerprints are then
 * taken as equal states without reading the GPUs again (a 64-bit collision
 * among a few thousand states is ~1e-12 likely, and bind re-checks the fit
 * under the store's lock, so it could not over-commit a GPU). */
static size_t memo_find(const memo_table *t, const gp_node *node, uint64_t h, bool kept, bool *found)
{
    const memo_slot *m = t->s;
    size_t i = h & (MEMO_SLOTS - 1);
    for (size_t probes = 0; probes < 16; probes++, i = (i + 1) & (MEMO_SLOTS - 1)) {
        if (m[i].stamp != t->stamp) {
            *found = false;
            return i;
        }
        if (m[i].hash == h && (kept || placement_same_state(m[i].rep, node))) {
            *found = true;
            return i;
        }
    }
    *found = false;
    return MEMO_SLOTS;   /* crowded: evaluate without memo */
}

/* Evaluates nodes [from, to) with reasons in arena `arena`, a memo of this
 * thread's verdicts by node state (NULL: none) and a scratch node. The
 * request's thread holds the store's read lock meanwhile. */
/* How far ahead the loop asks for a node's map slot, and for its first line
 * (cluster.h): a few nodes' work covers a wait for memory. */
#define PREFETCH_SLOT 8
#define PREFETCH_NODE 4

static void eval_nodes(const eval_job *j, int arena, memo_table *memo, gp_node *scratch, size_t from, size_t to)
{
    const gp_policy_view *view = j->view;
    const gp_pod_req *req = j->req;
    const gp_cluster *c = j->e->c;
    unsigned long hits = 0, misses = 0;   /* counted once for the chunk: keycache.h */
    uint64_t hs[EVAL_CHUNK];
    _Static_assert(PREFETCH_NODE < PREFETCH_SLOT, "a node's line is asked for after its slot");
    for (size_t i = from; i < to; i++)
        hs[i - from] = cluster_node_hash(node_list_name(j->nl, i));
    for (size_t i = from; i < to && i < from + PREFETCH_SLOT; i++)
        cluster_rd_prefetch(c, hs[i - from], 0);
    for (size_t i = from; i < to; i++) {
        if (i + PREFETCH_SLOT < to)
            cluster_rd_prefetch(c, hs[i + PREFETCH_SLOT - from], 0);
        if (i + PREFETCH_NODE < to)
            cluster_rd_prefetch(c, hs[i + PREFETCH_NODE - from], 1);
        const char *name = node_list_name(j->nl, i);
        const gp_node *node = cluster_rd_node_for_hashed(c, name, hs[i - from], req, scratch);
        verdict *v = &j->vs->v[i];
        *v = (verdict){0};
        if (!node && req->nctrs == 0) {
            v->fits = v->unknown = true;   /* nothing of gpupack's to check there */
            continue;
        }
        if (!node) {
            v->unresolvable = true;
            set_reason_w(j->vs, arena, i, "node is not known to gpupack (no GPU inventory seen)");
            continue;
        }
        size_t slot = MEMO_SLOTS;
        uint64_t h = 0;
        if (memo) {
            bool found;
            bool kept = node->state_hash != 0;
            h = kept ? node->state_hash : placement_state_hash(node);
            slot = memo_find(memo, node, h, kept, &found);
            if (found) {
                *v = j->vs->v[memo->s[slot].idx];
                continue;
            }
        }
        /* only states the store fingerprints: a node built elsewhere may change unseen */
        uint64_t key = j->shape && node->state_hash ? fit_key(j->shape, node->state_hash) : 0;
        double cached;
        if (key && keycache_lookup(j->e->fits, key, &cached)) {
            hits++;
            if (isfinite(cached)) {
                v->fits = true;
                v->raw = cached;
            } else {
                v->unresolvable = cached < 0;
                v->reason_pending = true;
            }
            if (slot < MEMO_SLOTS)
                memo->s[slot] = (memo_slot){h, node, (uint32_t)i, memo->stamp};
            continue;
        }
        if (key)
            misses++;
        gp_assignment a;
        gp_fit_fail why;
        if (placement_fit(node, req, j->place, &a, &why)) {
            v->unresolvable = why.unresolvable;
            set_reason_w(j->vs, arena, i, "%s", why.reason);
        } else {
            char why_ns[200];
            if (cluster_rd_ns_share_check(j->e->c, node, req->ns, &a, view->ns_share_cap, why_ns,
                                          sizeof why_ns))
                set_reason_w(j->vs, arena, i, "%s (policy %.60s)", why_ns, view->name);
            else
                v->fits = true;
        }
        if (v->fits && j->want_scores)
            v->raw = placement_node_score(node, req, &a, j->place);
        if (key)
            keycache_put(j->e->fits, key, v->fits ? v->raw : v->unresolvable ? FIT_NEVER : FIT_FAILS);
        if (slot < MEMO_SLOTS && node != scratch)   /* scratch is reused: never a memo entry */
            memo->s[slot] = (memo_slot){h, node, (uint32_t)i, memo->stamp};
    }
    keycache_tally(j->e->fits, hits, misses);
}

/* One thread's part: chunks of EVAL_CHUNK nodes taken from *next until the
 * list is done. */
static void eval_part(const eval_job *j, int arena, atomic_size_t *next)
{
    size_t n = j->nl->n, from;
    memo_table *memo = j->memo_ok && n > 8 ? memo_take() : NULL;
    /* a node with preemption claims is seen through a copy that counts them */
    gp_node *scratch = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
    while ((from = atomic_fetch_add(next, EVAL_CHUNK)) < n)
        eval_nodes(j, arena, memo, scratch, from, from + EVAL_CHUNK < n ? from + EVAL_CHUNK : n);
    free(scratch);
}

/* A large list is shared with the helper threads by chunks. A helper works
 * only once a thread of the pool and a CPU take it up: the request's thread
 * never waits for one that has not started (a thread created per request,
 * as before, had to be scheduled before the request could end), only for the
 * chunk a started one is in. Freed by the last of the request's thread and
 * the helpers it queued: a helper that starts after the request is done
 * finds no job and only lets go. */
typedef struct eval_share {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const eval_job *job;        /* NULL once the request's thread is done */
    atomic_size_t next;         /* the first node no thread has taken */
    int refs;                   /* the request's thread + helpers not finished */
    int busy;                   /* helpers evaluating */
    int arenas;                 /* reason arenas handed to helpers (0 is the request's) */
} eval_share;

static void share_release(eval_share *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool last = --sh->refs == 0;
    pthread_mutex_unlock(&sh->mu);
    if (last) {
        pthread_cond_destroy(&sh->cv);
        pthread_mutex_destroy(&sh->mu);
        free(sh);
    }
}

static void eval_help(void *arg)
{
    eval_share *sh = arg;
    pthread_mutex_lock(&sh->mu);
    const eval_job *j = sh->job;
    int arena = 0;
    if (j && sh->arenas + 1 < EVAL_MAX_WORKERS) {
        arena = ++sh->arenas;
        sh->busy++;
    } else {
        j = NULL;
    }
    pthread_mutex_unlock(&sh->mu);
    if (j) {
        eval_part(j, arena, &sh->next);
        pthread_mutex_lock(&sh->mu);
        if (--sh->busy == 0)
            pthread_cond_signal(&sh->cv);
        pthread_mutex_unlock(&sh->mu);
    }
    share_release(sh);
}

/* Which failures the answer lists with their reason: none (prioritize), all
 * (filter of a prioritize-mode policy), or the unresolvable ones and, when no
 * node passes, all (filter when the policy picks the node). */
typedef enum { REASONS_NONE, REASONS_ALL, REASONS_IF_NONE_FITS } reasons_mode;

/* Works out the reasons of cached failures the answer lists (the caller holds
 * the store's read lock, as during the evaluation). */
static void fill_reasons(gp_extender *e, const gp_pod_req *req, const gp_policy_view *view,
                         const node_list *nl, reasons_mode mode, verdicts *vs)
{
    bool any = false;
    for (size_t i = 0; i < nl->n && !any; i++)
        any = vs->v[i].fits && !vs->v[i].unknown;
    bool resolvable = mode == REASONS_ALL || (mode == REASONS_IF_NONE_FITS && !any);
    for (size_t i = 0; i < nl->n && mode != REASONS_NONE; i++) {
        verdict *v = &vs->v[i];
        if (!v->reason_pending || !(v->unresolvable || resolvable))
            continue;
        const gp_node *node = cluster_rd_node(e->c, node_list_name(nl, i));
        gp_assignment a;
        gp_fit_fail why;
        if (node && placement_fit(node, req, &view->place, &a, &why))
            set_reason(vs, i, "%s", why.reason);
        else   /* only a 64-bit fingerprint collision could bring this */
            set_reason(vs, i, "node state changed during the evaluation; kube-scheduler retries");
        v->reason_pending = false;
    }
}

/* The threads that help the request's own with a large node list, started
 * by the first such list: a store that never sees one (most clusters, and
 * every short-lived extender of the tests) runs no thread for it. NULL when
 * there is no helper to have. */
static gp_workq *eval_helpers(gp_extender *e)
{
    gp_workq *q = atomic_load_explicit(&e->helpers, memory_order_acquire);
    if (q || e->eval_threads <= 1)
        return q;
    pthread_mutex_lock(&e->helpers_mu);
    q = atomic_load_explicit(&e->helpers, memory_order_relaxed);
    if (!q && !e->helpers_failed) {
        gp_err err;
        q = workq_new(e->eval_threads - 1, "filter helpers", &err);
        if (q)
            atomic_store_explicit(&e->helpers, q, memory_order_release);
        else {
            LOG_WARN("%s: large node lists are evaluated by the request's thread alone", err.msg);
            e->helpers_failed = true;
        }
    }
    pthread_mutex_unlock(&e->helpers_mu);
    return q;
}

/* Evaluates every node for the pod under the read lock; large lists are
 * shared with the helper threads by chunks (the store is read-only
 * meanwhile, and every thread writes the verdicts of its own chunks and its
 * own reason arena). */
static void evaluate(gp_extender *e, const gp_pod_req *req, const gp_policy_view *view,
                     const node_list *nl, bool want_scores, reasons_mode reasons, verdicts *vs)
{
    /* a verdict may be shared when it depends on the node's state alone */
    bool memo_ok = view->ns_share_cap <= 0 && !(view->place.gpu && view->place.gpu->per_node);
    /* CPU-only pods too: their fit and score read the node's CPU and memory,
     * which its fingerprint covers (in a 5,000-node filter of trace pods they
     * were the slowest requests: every node evaluated again each time) */
    uint64_t policy = place_opts_key(GP_FNV_OFFSET, &view->place);
    uint64_t shape = memo_ok ? fit_shape_key(req, policy, want_scores) : 0;
    gp_score_memo memo = {e->scores, policy};
    gp_place_opts place = view->place;
    place.memo = &memo;
    eval_job job = {e, req, view, &place, nl, want_scores, vs, shape, memo_ok};
    gp_workq *helpers = nl->n >= EVAL_PARALLEL_MIN ? eval_helpers(e) : NULL;
    cluster_rdlock(e->c);
    if (helpers) {
        eval_share *sh = xcalloc(1, sizeof *sh);
        pthread_mutex_init(&sh->mu, NULL);
        pthread_cond_init(&sh->cv, NULL);
        sh->job = &job;
        atomic_init(&sh->next, 0);
        sh->refs = e->eval_threads;
        for (int w = 1; w < e->eval_threads; w++)
            workq_push(helpers, eval_help, sh);
        eval_part(&job, 0, &sh->next);
        pthread_mutex_lock(&sh->mu);
        sh->job = NULL;   /* helpers that start from now on find nothing to do */
        while (sh->busy)
            pthread_cond_wait(&sh->cv, &sh->mu);
        pthread_mutex_unlock(&sh->mu);
        share_release(sh);
    } else {
        atomic_size_t next;
        atomic_init(&next, 0);
        eval_part(&job, 0, &next);
    }
    fill_reasons(e, req, view, nl, reasons, vs);
    cluster_unlock(e->c);
}

/* --------------------------------------------------------------- verbs -- */

/* The filter answer, written directly: 5,000-node answers are built per
 * request, and an object tree plus serialisation cost more than the fitting.
 * failed: list the nodes that failed for a reason that may pass (FailedNodes);
 * unresolvable ones are always listed (preemption skips those nodes). */
static char *filter_answer(const node_list *nl, const verdicts *vs, bool failed)
{
    gp_buf b;
    gp_buf_init(&b, MAX_ANSWER_BYTES);
    if (!nl->nodes_mode) {
        jsonw_raw(&b, "{\"NodeNames\":[");
        bool first = true;
        for (size_t i = 0; i < nl->n; i++) {
            if (!vs->v[i].fits)
                continue;
            if (!first)
                jsonw_raw(&b, ",");
            jsonw_str(&b, node_list_name(nl, i));
            first = false;
        }
        jsonw_raw(&b, "],\"Nodes\":null");
    } else {
        jsonw_raw(&b, "{\"Nodes\":{\"metadata\":{},\"items\":[");
        bool first = true;
        for (size_t i = 0; i < nl->n; i++) {
            if (!vs->v[i].fits)
                continue;
            if (!first)
                jsonw_raw(&b, ",");
            jsonw_value(&b, json_array_get(nl->items, i));
            first = false;
        }
        jsonw_raw(&b, "]},\"NodeNames\":null");
    }
    for (int pass = 0; pass < 2; pass++) {
        jsonw_raw(&b, pass ? ",\"FailedAndUnresolvableNodes\":{" : ",\"FailedNodes\":{");
        bool first = true;
        for (size_t i = 0; i < nl->n && (failed || pass == 1); i++) {
            if (vs->v[i].fits || vs->v[i].unresolvable != (pass == 1))
                continue;
            if (!first)
                jsonw_raw(&b, ",");
            jsonw_str(&b, node_list_name(nl, i));
            jsonw_raw(&b, ":");
            jsonw_str(&b, reason_of(vs, i));
            first = false;
        }
        jsonw_raw(&b, "}");
    }
    jsonw_raw(&b, ",\"Error\":\"\"}");
    if (gp_buf_failed(&b))
        abort();   /* MAX_ANSWER_BYTES is far above any answer MAX_NODES_PER_REQUEST allows */
    return b.data;
}

typedef enum { ASSESSED, BAD_POD } assess_result;

/* The half filter and prioritize share: the pod's request under the policy
 * that governs it, remembered for bind, and every node evaluated (with node
 * scores when `scores` or the policy decides in filter). The policy set is
 * released before returning: only the view's plain fields (name,
 * decide_in_filter) may be read afterwards. */
/* No node fits a pod that asks GPUs: preemption may start or be under way;
 * its word replaces the reason of one node. */
static void offer_preemption(gp_extender *e, const verb_args *va, const gp_pod *pod,
                             const gp_pod_req *req, const gp_policy_view *view,
                             gp_policy_set *set, verdicts *vs)
{
    const node_list *nl = &va->nl;
    for (size_t i = 0; i < nl->n; i++)
        if (vs->v[i].fits)
            return;
    bool *unres = xmalloc((nl->n ? nl->n : 1) * sizeof *unres);
    for (size_t i = 0; i < nl->n; i++)
        unres[i] = vs->v[i].unresolvable;
    char reason[300];
    long at = e->cfg.preempt.nofit(e->cfg.preempt.ud, pod, req, view, set, nl->names, unres,
                                   nl->n, reason, sizeof reason);
    if (at >= 0 && (size_t)at < nl->n) {
        vs->v[at].unresolvable = false;
        set_reason(vs, (size_t)at, "%s", reason);
    }
    free(unres);
}

/* The pod of one verb call, decoded once (model/pod.h): its request under the
 * policy that governs it, and the policy set the view points into (referenced
 * until pod_done). */
typedef struct verb_pod {
    gp_pod pod;
    gp_policy_set *set;
    gp_policy_view view;
    gp_pod_req req;
} verb_pod;

static void pod_done(verb_pod *vp)
{
    policy_set_unref(vp->set);
    vp->set = NULL;
}

static assess_result assess(gp_extender *e, const verb_args *va, bool scores, bool may_preempt,
                            verdicts *vs, verb_pod *vp, gp_err *err)
{
    for (size_t i = 0; i < va->nl.n; i++)
        vs->v[i] = (verdict){0};
    vp->set = policies_get(e);
    gp_policy_view *view = &vp->view;
    if (pod_decode(va->pod, &vp->pod, err) ||
        extender_pod_request(e, &vp->pod, vp->set, &vp->req, view, err))
        return BAD_POD;
    /* pods without GPU containers too: where their CPU and memory go
     * decides what GPU pods can still use (fragmentation-aware policies
     * weigh it; docs/simulator.md) */
    remember(e, va->pod, va->fast.pod != NULL, vp->req.uid);
    if (!scores)
        cluster_unreserve(e->c, vp->req.uid);   /* filter decides afresh */
    reasons_mode reasons = scores                    ? REASONS_NONE
                           : view->decide_in_filter ? REASONS_IF_NONE_FITS
                                                    : REASONS_ALL;
    evaluate(e, &vp->req, view, &va->nl, scores || view->decide_in_filter, reasons, vs);
    if (may_preempt && e->cfg.preempt.nofit && vp->req.nctrs > 0)
        offer_preemption(e, va, &vp->pod, &vp->req, view, vp->set, vs);
    return ASSESSED;
}

/* nodeDecision: filter, some nodes tied best: keep the first of them in
 * kube-scheduler's order (it starts each search where the last one stopped)
 * and reserve the pod's GPUs and CPU there at once, so the next pod's filter
 * sees them before this pod's bind arrives (kube-scheduler binds
 * asynchronously). If no reservation can be made (a bind raced us), every
 * tied node stays and bind re-checks the fit. */
static void reserve_one(gp_extender *e, const verb_pod *vp, const node_list *nl, verdicts *vs)
{
    gp_err err;
    size_t chosen = nl->n;
    for (size_t i = 0; i < nl->n && chosen == nl->n; i++) {
        gp_assignment a;
        if (vs->v[i].fits && !vs->v[i].unknown &&
            cluster_reserve(e->c, node_list_name(nl, i), &vp->req, &vp->view.place,
                            vp->view.ns_share_cap, vp->view.name, GP_RESERVE_TTL_S, &a, &err) == 0)
            chosen = i;
    }
    /* no reason: once a node passes, the answer lists none (filter_answer) */
    for (size_t i = 0; chosen < nl->n && i < nl->n; i++)
        if (i != chosen)
            vs->v[i].fits = false;
}

static int filter_run(gp_extender *e, const char *body, size_t len, bool may_preempt, char **out)
{
    atomic_fetch_add(&e->n_filter, 1);
    char msg[600];
    if (!serving(e, VERB_FILTER, msg, sizeof msg)) {
        /* the extender protocol's error: kube-scheduler fails this attempt
         * and shows the message in the pod's FailedScheduling event */
        *out = error_body(msg);
        return 200;
    }
    verb_args va;
    int status = verb_args_decode(e, body, len, &va, out);
    if (status)
        goto done;
    const node_list *nl = &va.nl;
    verb_pod *vp = xmalloc(sizeof *vp);
    gp_err err;
    verdicts vs;
    verdicts_init(&vs, nl->n);
    verdict *v = vs.v;
    bool failed = true;
    assess_result r = assess(e, &va, false, may_preempt, &vs, vp, &err);
    if (r == BAD_POD) {
        /* the pod cannot be scheduled as it stands: say why on every node */
        for (size_t i = 0; i < nl->n; i++) {
            v[i].unresolvable = true;
            set_reason(&vs, i, "%s", err.msg);
        }
    } else if (r == ASSESSED && vp->view.decide_in_filter) {
        double best = 0;
        bool any = false;
        for (size_t i = 0; i < nl->n; i++)
            if (v[i].fits && !v[i].unknown && (!any || v[i].raw > best)) {
                best = v[i].raw;
                any = true;
            }
        for (size_t i = 0; i < nl->n; i++)   /* no reason: one node passes, none is listed */
            if (v[i].fits && any && (v[i].unknown || v[i].raw < best - 1e-12))
                v[i].fits = false;
        if (any)
            reserve_one(e, vp, nl, &vs);
        /* gpupack chose: kube-scheduler reads the reasons of the other nodes only
         * when none passes (its diagnosis of an unschedulable pod), and a
         * 5,000-node cluster would send it hundreds per pod to decode */
        failed = !any;
    }
    if (r == ASSESSED && may_preempt && vp->req.nctrs > 0 && e->cfg.refused) {
        bool none = true;
        for (size_t i = 0; i < nl->n && none; i++)
            none = !v[i].fits;
        if (none)
            e->cfg.refused(e->cfg.refused_ud, vp->req.uid, vp->req.ns, vp->req.name);
    }
    *out = filter_answer(nl, &vs, failed);
    verdicts_free(&vs);
    pod_done(vp);
    free(vp);
    status = 200;
done:
    verb_args_free(&va);
    return status;
}

int extender_filter(gp_extender *e, const char *body, size_t len, char **out)
{
    return filter_run(e, body, len, true, out);
}

int extender_filter_readonly(gp_extender *e, const char *body, size_t len, char **out)
{
    return filter_run(e, body, len, false, out);
}

/* The victims kube-scheduler proposed, echoed as MetaVictims (by UID): its
 * ordinary preemption, for pods gpupack has nothing to add to. */
char *extender_preempt_echo(const json_t *args)
{
    json_t *res = json_object();
    const char *node;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(args, "NodeNameToMetaVictims"), node, v)
        json_object_set(res, node, v);
    json_object_foreach((json_t *)json_object_get(args, "NodeNameToVictims"), node, v) {
        json_t *pods = json_array();
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(v, "Pods"), i, p) {
            const char *uid = pod_uid(p);
            if (uid)
                json_array_append_new(pods, json_pack("{s:s}", "UID", uid));
        }
        json_t *n = json_object_get(v, "NumPDBViolations");
        json_object_set_new(res, node, json_pack("{s:o,s:I}", "Pods", pods, "NumPDBViolations",
                                                 json_integer_value(n)));
    }
    json_t *ans = json_pack("{s:o}", "NodeNameToMetaVictims", res);
    char *s = json_dumps(ans, JSON_COMPACT);
    json_decref(ans);
    if (!s)
        abort();
    return s;
}

json_t *extender_preempt_status(gp_extender *e, const json_t *pod)
{
    return e->cfg.preempt.status ? e->cfg.preempt.status(e->cfg.preempt.ud, pod) : NULL;
}

int extender_preempt(gp_extender *e, const char *body, size_t len, char **out)
{
    char msg[600];
    if (!serving(e, VERB_PREEMPT, msg, sizeof msg)) {
        /* victims chosen from a map that is not the API server's could be the
         * wrong pods: kube-scheduler's preemption fails this time and retries */
        *out = error_body(msg);
        return 503;
    }
    json_t *args;
    int status = parse_args(e, body, len, &args, out);
    if (status)
        return status;
    const json_t *meta = json_object_get(args, "NodeNameToMetaVictims");
    const json_t *full = json_object_get(args, "NodeNameToVictims");
    if (!json_is_object(json_object_get(args, "Pod")) || (meta && !json_is_object(meta) && !json_is_null(meta)) ||
        (full && !json_is_object(full) && !json_is_null(full)))
        status = bad_request(e, out, "preempt needs Pod and NodeNameToMetaVictims or "
                                     "NodeNameToVictims objects");
    else if (e->cfg.preempt.process)
        status = e->cfg.preempt.process(e->cfg.preempt.ud, args, out);
    else {
        *out = extender_preempt_echo(args);
        status = 200;
    }
    json_decref(args);
    return status;
}

int extender_prioritize(gp_extender *e, const char *body, size_t len, char **out)
{
    atomic_fetch_add(&e->n_prioritize, 1);
    char msg[600];
    if (!serving(e, VERB_PRIORITIZE, msg, sizeof msg)) {
        *out = error_body(msg);   /* a HostPriorityList has no Error: the status says it */
        return 503;
    }
    verb_args va;
    int status = verb_args_decode(e, body, len, &va, out);
    if (status)
        goto done;
    const node_list *nl = &va.nl;
    verb_pod *vp = xmalloc(sizeof *vp);
    gp_err err;
    verdicts vs;
    verdicts_init(&vs, nl->n);
    verdict *v = vs.v;
    int *scores = xcalloc(nl->n ? nl->n : 1, sizeof *scores);
    if (assess(e, &va, true, false, &vs, vp, &err) == ASSESSED) {
        /* normalise over the nodes that fit; the others score 0 */
        double *raw = xcalloc(nl->n ? nl->n : 1, sizeof *raw);
        int *sc = xcalloc(nl->n ? nl->n : 1, sizeof *sc);
        size_t k = 0;
        for (size_t i = 0; i < nl->n; i++)
            if (v[i].fits && !v[i].unknown)
                raw[k++] = v[i].raw;
        placement_normalize(raw, (int)k, sc);
        k = 0;
        for (size_t i = 0; i < nl->n; i++)
            scores[i] = v[i].fits && !v[i].unknown ? sc[k++] : 0;
        free(raw);
        free(sc);
    }
    gp_buf b;
    gp_buf_init(&b, MAX_ANSWER_BYTES);
    jsonw_raw(&b, "[");
    for (size_t i = 0; i < nl->n; i++) {
        char score[32];
        snprintf(score, sizeof score, ",\"Score\":%d}", scores[i]);
        jsonw_raw(&b, i ? ",{\"Host\":" : "{\"Host\":");
        jsonw_str(&b, node_list_name(nl, i));
        jsonw_raw(&b, score);
    }
    jsonw_raw(&b, "]");
    if (gp_buf_failed(&b))
        abort();   /* see filter_answer */
    verdicts_free(&vs);
    pod_done(vp);
    free(vp);
    free(scores);
    *out = b.data;
    status = 200;
done:
    verb_args_free(&va);
    return status;
}

static int bind_field(const json_t *args, const char *key, size_t max, const char **out)
{
    const json_t *v = json_object_get(args, key);
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= max)
        return -1;
    *out = json_string_value(v);
    return 0;
}

/* One bind waiting on the API server (owned by the bind thread once queued). */
typedef struct bind_job {
    gp_extender *e;
    char ns[GP_NAME_MAX], name[GP_NAME_MAX], uid[GP_UID_MAX], node[GP_NAME_MAX];
    char policy[GP_NAME_MAX];
    char rv[64];            /* "" = unknown */
    json_t *ann;
    gp_bind_done_fn done;
    void *ud;
    bool host_only;         /* the pod asks no GPUs: a plain Binding */
    json_t *dra_pod;        /* its GPUs come from ResourceClaims: the pod (a plain Binding) */
    gp_assignment a;        /* last member: a queued job keeps only a.nctrs containers */
} bind_job;

/* The bytes of a job whose assignment has nctrs containers. A full one is
 * 7.6 KB, nearly all of it containers a pod does not have; binds wait in the
 * queue by the hundreds when the API server is slower than kube-scheduler (a
 * heap profile at 5,000 nodes x 20,000 pods: 3.9 MB of queued jobs at the
 * peak), so a queued job is cut to its containers. */
static size_t bind_job_size(int nctrs)
{
    int n = nctrs < 0 ? 0 : nctrs > GP_MAX_CTRS ? GP_MAX_CTRS : nctrs;
    return offsetof(bind_job, a) + offsetof(gp_assignment, ctrs) + (size_t)n * sizeof(gp_ctr_assign);
}

/* A job that is not handed to a bind thread (refused, or nothing to post). */
static void bind_job_free(bind_job *j)
{
    json_decref(j->ann);
    json_decref(j->dra_pod);
    free(j);
}

static void log_bound(const char *ns, const char *name, const char *node, const gp_assignment *a,
                      const char *policy)
{
    char gpus[256];
    size_t off = 0;
    gpus[0] = '\0';
    for (int c = 0; c < a->nctrs && off < sizeof gpus - 32; c++)
        for (int g = 0; g < a->ctrs[c].ngpus && off < sizeof gpus - 32; g++)
            off += (size_t)snprintf(gpus + off, sizeof gpus - off, "%s%.20s:%d", off ? " " : "",
                                    a->ctrs[c].name, a->ctrs[c].gpus[g].index);
    /* the pending request stays until its TTL: a retried bind is idempotent */
    LOG_INFO("bind %s/%s -> %s gpus [%s] policy %s", ns, name, node, gpus, policy);
}

static char *bind_failed(gp_extender *e, const char *ns, const char *name, const char *node,
                         const char *msg)
{
    atomic_fetch_add(&e->n_bind_errors, 1);
    LOG_WARN("bind %s/%s -> %s: %s", ns, name, node, msg);
    return error_body(msg);
}

/* On a bind thread: the bind carried out (act/bindpipe: gate, claim, Binding,
 * outcome into the store, Event), then the answer. */
static void bind_run(void *arg)
{
    bind_job *j = arg;
    gp_extender *e = j->e;
    gp_assignment a;   /* whole again: the job kept its containers only */
    memset(&a, 0, sizeof a);
    memcpy(&a, &j->a, bind_job_size(j->a.nctrs) - offsetof(bind_job, a));
    gp_bind_call call = {j->ns, j->name, j->uid, j->node, j->rv[0] ? j->rv : NULL, j->ann,
                         j->host_only || j->dra_pod ? NULL : &a, j->policy, j->dra_pod};
    gp_err err;
    gp_bind_outcome o = e->cfg.binder(e->cfg.binder_ud, &call, &err);
    char *out;
    if (o == GP_BIND_BOUND) {
        log_bound(j->ns, j->name, j->node, &a, j->policy);
        out = error_body("");
    } else {
        /* kube-scheduler forgets the pod on any Error and retries it unless
         * its informer already shows it bound: right for UNKNOWN too, since
         * the GPUs stay assumed here until a GET or the watch settles it */
        char msg[1200];
        snprintf(msg, sizeof msg, "binding pod %.200s/%.200s to %.200s %s: %.600s", j->ns, j->name,
                 j->node, o == GP_BIND_REFUSED ? "refused" : "outcome unknown (GPUs kept until settled)",
                 err.msg);
        out = bind_failed(e, j->ns, j->name, j->node, msg);
    }
    json_decref(j->ann);
    json_decref(j->dra_pod);
    gp_bind_done_fn done = j->done;
    void *ud = j->ud;
    free(j);
    done(ud, 200, out);
}

int extender_bind_start(gp_extender *e, const char *body, size_t len, gp_bind_done_fn done,
                        void *ud, char **out)
{
    atomic_fetch_add(&e->n_bind, 1);
    json_t *args;
    int status = parse_args(e, body, len, &args, out);
    if (status)
        return status;
    const char *name, *ns, *uid, *node;
    if (bind_field(args, "PodName", GP_NAME_MAX, &name) ||
        bind_field(args, "PodNamespace", GP_NAME_MAX, &ns) ||
        bind_field(args, "PodUID", GP_UID_MAX, &uid) || bind_field(args, "Node", GP_NAME_MAX, &node)) {
        status = bad_request(e, out,
                             "bind needs PodName, PodNamespace, PodUID and Node as non-empty strings");
        goto done;
    }
    status = 200;
    char msg[1200];
    msg[0] = '\0';
    if (!serving(e, VERB_BIND, msg, sizeof msg)) {
        *out = bind_failed(e, ns, name, node, msg);   /* nothing assumed, nothing posted */
        goto done;
    }
    json_t *pod = recall(e, uid);
    gp_policy_set *set = policies_get(e);
    gp_pod_req req;
    gp_policy_view view;
    gp_err err;
    gp_pod *pd = xcalloc(1, sizeof *pd);   /* rv "" unless decoded */
    bind_job *j = xcalloc(1, sizeof *j);
    bool bound_there = false;   /* a retried bind of a pod the watch showed bound there */
    if (!pod) {
        /* its request is forgotten once the watch shows it bound, or a
         * relist no longer shows it (live.c); a pod deleted under the watch
         * is kept until then, or until the map is full: the Binding's
         * preconditions refuse a stale uid (e2e_bind) */
        gp_assignment *held = xmalloc(sizeof *held);
        gp_pod_state ps;
        bound_there = cluster_pod_get(e->c, uid, held, &ps) == 0 && ps == GP_POD_BOUND &&
                      strcmp(held->node, node) == 0;
        free(held);
        if (!bound_there)
            snprintf(msg, sizeof msg,
                     "gpupack has not seen pod %.200s/%.200s (uid %s) in a filter call or the watch",
                     ns, name, uid);
    } else if (pod_decode(pod, pd, &err) || extender_pod_request(e, pd, set, &req, &view, &err)) {
        snprintf(msg, sizeof msg, "pod %.200s/%.200s: %.500s", ns, name, err.msg);
    } else if (req.nctrs == 0) {
        /* a pod that asks no GPUs: its CPU and memory are recorded on the node
         * (when gpupack knows the node) so the next decisions see them, then a
         * plain Binding (no annotations) goes out like any other */
        j->host_only = true;
        j->ann = json_object();   /* no annotations to write: a plain Binding */
        if (cluster_place_and_assume(e->c, node, &req, &view.place, 0, view.name,
                                     e->binds ? GP_POD_ASSUMED : GP_POD_BOUND, &j->a, &err))
            j->a.nctrs = 0;   /* a node gpupack does not know: nothing to record */
    } else if (req.dra) {
        /* GPUs from ResourceClaims: the allocator's predicted choice is held
         * until the claims show up allocated; a plain Binding, no annotations */
        j->ann = json_object();
        j->dra_pod = json_incref(pod);
        if (cluster_place_and_assume(e->c, node, &req, &view.place, view.ns_share_cap, view.name,
                                     e->binds ? GP_POD_ASSUMED : GP_POD_BOUND, &j->a, &err))
            j->a.nctrs = 0;   /* its claims may be allocated already: they count then */
    } else if (e->cfg.webhook_names && podenv_check(pod, e->cfg.webhook_names, &err)) {
        snprintf(msg, sizeof msg, "pod %.200s/%.200s: %.500s", ns, name, err.msg);
    } else if (cluster_place_and_assume(e->c, node, &req, &view.place, view.ns_share_cap, view.name,
                                        e->binds ? GP_POD_ASSUMED : GP_POD_BOUND, &j->a, &err)) {
        snprintf(msg, sizeof msg, "%s", err.msg);
    } else if (e->binds) {
        cluster_rdlock(e->c);
        const gp_node *n = cluster_rd_node(e->c, node);
        if (n) {
            int64_t now = gp_now_ns();
            j->ann = annotations_build(&j->a, n, req.profile, view.names.aliyun_unit_mib,
                                       view.name, now);
            annotations_add_containers(j->ann, pod, &j->a, n, &view.names);
            formats_plugin_annotations(j->ann, pod, req.profile, &j->a, n, now);
        }
        cluster_unlock(e->c);
        if (!j->ann) {
            cluster_forget(e->c, uid);
            snprintf(msg, sizeof msg, "node %.200s disappeared during bind", node);
        }
    }
    policy_set_unref(set);
    if (msg[0]) {
        *out = bind_failed(e, ns, name, node, msg);
        bind_job_free(j);
    } else if (bound_there) {
        *out = error_body("");
        bind_job_free(j);
    } else if (!e->binds) {
        log_bound(ns, name, node, &j->a, view.name);
        *out = error_body("");
        bind_job_free(j);   /* embedded: no Binding goes out, its annotations neither */
    } else {
        j->e = e;
        gp_strlcpy(j->ns, ns, sizeof j->ns);
        gp_strlcpy(j->name, name, sizeof j->name);
        gp_strlcpy(j->uid, uid, sizeof j->uid);
        gp_strlcpy(j->node, node, sizeof j->node);
        gp_strlcpy(j->policy, view.name, sizeof j->policy);
        gp_strlcpy(j->rv, pd->rv, sizeof j->rv);
        j->done = done;
        j->ud = ud;
        j = xrealloc(j, bind_job_size(j->a.nctrs));   /* smaller: realloc keeps the bytes kept */
        workq_push(e->binds, bind_run, j);
        status = 0;
    }
    free(pd);
    json_decref(pod);
done:
    json_decref(args);
    return status;
}

/* extender_bind's rendezvous with the bind thread. */
typedef struct bind_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int status;
    char *out;
} bind_wait;

static void bind_wait_done(void *ud, int status, char *out)
{
    bind_wait *w = ud;
    pthread_mutex_lock(&w->mu);
    w->status = status;
    w->out = out;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int extender_bind(gp_extender *e, const char *body, size_t len, char **out)
{
    bind_wait w = {.done = false};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    int status = extender_bind_start(e, body, len, bind_wait_done, &w, out);
    if (status == 0) {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        status = w.status;
        *out = w.out;
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return status;
}
