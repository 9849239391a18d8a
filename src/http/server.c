/* server.c -- the HTTP front: libmicrohttpd daemon, bounded bodies, route table. */
#include "http/server.h"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack/clusterview.h"
#include "sched/explain.h"
#include "sched/inspect.h"
#include "lib/jsoncost.h"
#include "lib/jsonw.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "http/srvreq.h"
#include "http/tlsfront.h"
#include "http/ui_page.h"
#include "sched/webhook.h"
#include "lib/yamljson.h"

/* The /metrics page: a few hundred bytes per node (gpupack_node_gpu_memory_mib)
 * over the largest clusters stays far below this. */
#define METRICS_PAGE_MAX (256u << 20)

typedef enum {
    V_FILTER, V_PRIORITIZE, V_BIND, V_HEALTHZ, V_READYZ, V_METRICS, V_INSPECT, V_MUTATE, V_UI,
    V_EXPLAIN, V_PREEMPT, V_COUNT
} verb;

static const char *const verb_names[V_COUNT] = {"filter",  "prioritize", "bind",
                                                "healthz", "readyz",     "metrics",
                                                "inspect", "mutate",     "ui",
                                                "explain", "preempt"};

/* Client certificate chains verified already: kube-scheduler's extender client
 * keeps at most two idle connections (Go's default) and opens a new one, with
 * a full handshake, for most binds that overlap; verifying the same chain
 * against --client-ca again on each costs as much as the handshake itself. A
 * chain whose exact bytes verified before is trusted again while every
 * certificate in it is within its validity period (the CA set never changes
 * while serving). Only successes are kept. */
#define TRUSTED_CHAINS 8

typedef struct trusted_chain {
    unsigned char digest[32];   /* SHA-256 over the chain's DER certificates */
    time_t not_before, not_after;
    double used;                /* monotonic seconds; 0 = free slot */
} trusted_chain;

/* Which listener serves a route: the extender's, the webhook's, or both. */
enum { L_MAIN = 1, L_WEBHOOK = 2, L_BOTH = 3 };

struct gp_server {
    struct MHD_Daemon *d;
    gp_extender *e;
    gp_cluster *c;
    gp_server_hooks hooks;
    char prefix[256];
    size_t max_body;
    int port;
    char *tls_cert, *tls_key, *client_ca;
    bool show_uids;
    size_t max_inflight;
    atomic_size_t inflight;               /* bytes reserved by requests in flight */
    const gp_resource_names *webhook;   /* non-NULL: the webhook listener */
    gp_histo latency[V_COUNT];
    atomic_ulong by_code[V_COUNT][6];     /* 1xx..5xx, index 0 unused */
    atomic_ulong not_found, too_large, busy;
    atomic_ulong connections;             /* accepted (TLS handshakes when TLS is on) */
    atomic_ulong proto_connections[2];    /* by srv_proto */
    atomic_ulong h2_events[SRV_H2_COUNT];
    gp_tlsfront *front;                   /* TLS with ALPN (HTTP/2), or NULL: libmicrohttpd's TLS */
    atomic_ulong verb_closes;             /* verb answers that closed their connection */
    atomic_ullong body_in[V_COUNT], body_out[V_COUNT];   /* bytes, by verb */
    atomic_ulong refused[2];              /* no client certificate, untrusted one */
    pthread_mutex_t trust_mu;
    trusted_chain trusted[TRUSTED_CHAINS];
    atomic_ulong chain_checks[2];         /* verified in full, found among trusted */
    atomic_llong refused_logged_s;        /* last refusal logged (monotonic s) */
    /* binds answered from bind threads: a suspended connection each */
    pthread_mutex_t bind_mu;
    pthread_cond_t bind_cv;
    size_t binds_suspended;     /* queued and not answered yet */
    bool stopping;
};

/* Per-connection state of a libmicrohttpd connection (TLS client verification
 * is done once per connection). */
typedef struct conn_state {
    gp_server *server;
    int auth;           /* SRV_AUTH_*: not checked yet, trusted, or the refusal */
} conn_state;

/* One request (srvreq.h); freed by srvreq_free only. */
struct gp_req {
    gp_server *s;
    int route;          /* index into routes, or -1 */
    gp_buf body;
    bool too_large;
    bool busy;          /* the in-flight memory budget was full */
    size_t held;        /* bytes reserved from s->inflight; released at the end */
    double start;
    char *path;         /* the path as asked (owned) */
    char *query;        /* what followed '?', or NULL (owned) */
    struct MHD_Connection *conn;   /* libmicrohttpd's: arguments are looked up there */
    /* async bind (under the server's bind_mu) */
    void (*resume)(void *ud);
    void *resume_ud;
    bool bind_queued, bind_answered, suspended;
    int bind_status;
    char *bind_out;
    const char *location;   /* a redirect's Location (static text) */
    bool answered;          /* libmicrohttpd: the answer is queued; the rest is drained */
};
typedef gp_req req_state;

typedef int (*handler_fn)(gp_server *s, req_state *rs, const char *tail, char **out,
                          const char **ctype);

typedef struct route {
    const char *method;
    const char *path;       /* exact, or a prefix when it ends with '/' (but "/" is exact) */
    bool under_prefix;      /* the extender verbs follow --url-prefix */
    bool authenticated;     /* needs a trusted client certificate when --client-ca is set */
    verb v;
    handler_fn fn;
    int listeners;          /* L_MAIN, L_WEBHOOK or both */
} route;

/* ------------------------------------------------------------ helpers -- */

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s)
        abort();
    return s;
}

/* {"Error": msg}. msg may carry what a client sent (a path, a method), cut
 * by a bounded %.Ns: it is made valid UTF-8 first, or jansson would refuse
 * it (an HTTP/1.1 GET /%ff stopped gpupack so before; found by fuzz_h2). */
static char *error_json(const char *msg)
{
    char *m = gp_utf8_scrub(xstrdup(msg));
    char *s = dump(json_pack("{s:s}", "Error", m));
    free(m);
    return s;
}

typedef int (*verb_fn)(gp_extender *, const char *, size_t, char **);

static int run_verb(gp_server *s, verb_fn fn, req_state *rs, char **out)
{
    return fn(s->e, rs->body.data ? rs->body.data : "", rs->body.len, out);
}

/* Whether the request's query has `key` (as key=value or a bare key); its
 * value, percent-decoding left out (gpupack's arguments are plain words), goes
 * to buf when given. */
static bool req_arg(req_state *rs, const char *key, char *buf, size_t len)
{
    const char *v = NULL;
    size_t vl = 0;
    if (rs->conn) {
        v = MHD_lookup_connection_value(rs->conn, MHD_GET_ARGUMENT_KIND, key);
        vl = v ? strlen(v) : 0;
    } else if (rs->query) {
        size_t kl = strlen(key);
        for (const char *p = rs->query; *p && !v;) {
            const char *end = strchr(p, '&');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            if (n >= kl && strncmp(p, key, kl) == 0 && (n == kl || p[kl] == '=')) {
                v = n == kl ? "" : p + kl + 1;
                vl = n == kl ? 0 : n - kl - 1;
            }
            p += n + (end ? 1 : 0);
        }
    }
    if (v && buf && len)
        snprintf(buf, len, "%.*s", (int)vl, v);
    return v != NULL;
}

/* ----------------------------------------------------------- handlers -- */

static int h_filter(gp_server *s, req_state *rs, const char *tail, char **out,
                    const char **ct)
{
    return run_verb(s, extender_filter, rs, out);
}

static int h_prioritize(gp_server *s, req_state *rs, const char *tail, char **out,
                        const char **ct)
{
    return run_verb(s, extender_prioritize, rs, out);
}

static int h_preempt(gp_server *s, req_state *rs, const char *tail, char **out,
                     const char **ct)
{
    return run_verb(s, extender_preempt, rs, out);
}

/* A bind thread's answer: kept for the request, whose carrier is told
 * (resume) if it is waiting already; it then calls srvreq_end again. */
static void bind_answered(void *ud, int status, char *out)
{
    req_state *rs = ud;
    gp_server *s = rs->s;
    pthread_mutex_lock(&s->bind_mu);
    rs->bind_status = status;
    rs->bind_out = out;
    rs->bind_answered = true;
    if (rs->suspended) {
        rs->suspended = false;
        rs->resume(rs->resume_ud);
    }
    s->binds_suspended--;
    pthread_cond_broadcast(&s->bind_cv);
    pthread_mutex_unlock(&s->bind_mu);   /* rs may be freed once this is released */
}

/* Binds never hold a listener thread while the API server answers: the
 * request waits (a libmicrohttpd connection is suspended, an HTTP/2 stream just
 * stays open) and bind_answered resumes it. Returns the status when the answer
 * is here already, 0 when the request waits. */
static int h_bind(gp_server *s, req_state *rs, const char *tail, char **out,
                  const char **ct)
{
    pthread_mutex_lock(&s->bind_mu);
    if (rs->bind_answered) {   /* resumed: the answer is in */
        *out = rs->bind_out;
        rs->bind_out = NULL;
        pthread_mutex_unlock(&s->bind_mu);
        return rs->bind_status;
    }
    if (s->stopping) {
        pthread_mutex_unlock(&s->bind_mu);
        *out = error_json("gpupack is shutting down; bind not attempted");
        return 503;
    }
    s->binds_suspended++;
    pthread_mutex_unlock(&s->bind_mu);
    int status = extender_bind_start(s->e, rs->body.data ? rs->body.data : "", rs->body.len,
                                     bind_answered, rs, out);
    pthread_mutex_lock(&s->bind_mu);
    if (status) {
        s->binds_suspended--;   /* answered at once: no callback comes */
        pthread_cond_broadcast(&s->bind_cv);
    } else if (rs->bind_answered) {
        *out = rs->bind_out;     /* the bind thread was quicker than us */
        rs->bind_out = NULL;
        status = rs->bind_status;
    } else {
        rs->bind_queued = true;
        rs->suspended = true;
        if (rs->conn)
            MHD_suspend_connection(rs->conn);
    }
    pthread_mutex_unlock(&s->bind_mu);
    return status;
}

static int h_healthz(gp_server *s, req_state *rs, const char *tail, char **out,
                     const char **ct)
{
    *ct = "text/plain; charset=utf-8";
    *out = xstrdup("ok\n");
    return 200;
}

static int h_readyz(gp_server *s, req_state *rs, const char *tail, char **out,
                    const char **ct)
{
    char detail[256] = "";
    bool ready = s->hooks.ready ? s->hooks.ready(s->hooks.ud, detail, sizeof detail) : true;
    *ct = "text/plain; charset=utf-8";
    *out = xasprintf("%s%s%s\n", ready ? "ok" : "not ready", detail[0] ? ": " : "", detail);
    return ready ? 200 : 503;
}

/* The listener's own families (metrics_fn). */
static void server_metrics(void *ud, gp_buf *out)
{
    gp_server *s = ud;
    char labels[64];
    metrics_header(out, "gpupack_http_requests_total", "counter",
                   "HTTP requests by route and status class.");
    for (int v = 0; v < V_COUNT; v++)
        for (int k = 1; k < 6; k++) {
            unsigned long n = atomic_load(&s->by_code[v][k]);
            snprintf(labels, sizeof labels, "route=\"%s\",code=\"%dxx\"", verb_names[v], k);
            if (n)
                metrics_u(out, "gpupack_http_requests_total", labels, n);
        }
    metrics_u(out, "gpupack_http_requests_total", "route=\"unknown\",code=\"4xx\"",
              atomic_load(&s->not_found));
    metrics_header(out, "gpupack_http_request_too_large_total", "counter",
                   "Requests refused with 413 (body over the limit).");
    metrics_u(out, "gpupack_http_request_too_large_total", NULL, atomic_load(&s->too_large));
    metrics_header(out, "gpupack_http_busy_total", "counter",
                   "Requests refused with 503: the in-flight memory budget was full.");
    metrics_u(out, "gpupack_http_busy_total", NULL, atomic_load(&s->busy));
    metrics_header(out, "gpupack_http_inflight_bytes", "gauge",
                   "Memory reserved by requests in flight (bodies, estimated decoding).");
    metrics_u(out, "gpupack_http_inflight_bytes", NULL, atomic_load(&s->inflight));
    metrics_header(out, "gpupack_http_unauthenticated_total", "counter",
                   "Verb calls refused for want of a trusted client certificate.");
    metrics_u(out, "gpupack_http_unauthenticated_total", "reason=\"no_certificate\"",
              atomic_load(&s->refused[0]));
    metrics_u(out, "gpupack_http_unauthenticated_total", "reason=\"untrusted\"",
              atomic_load(&s->refused[1]));
    metrics_header(out, "gpupack_http_connections_total", "counter",
                   "Connections accepted (each a TLS handshake when TLS is on); keep-alive "
                   "clients reuse them.");
    metrics_u(out, "gpupack_http_connections_total", NULL, atomic_load(&s->connections));
    metrics_header(out, "gpupack_http_connections_by_protocol_total", "counter",
                   "Connections by the protocol they settled on: http/1.1, or h2 (HTTP/2, "
                   "negotiated through TLS ALPN; one connection carries every call of a client).");
    metrics_u(out, "gpupack_http_connections_by_protocol_total", "protocol=\"http/1.1\"",
              atomic_load(&s->proto_connections[SRV_PROTO_H1]));
    metrics_u(out, "gpupack_http_connections_by_protocol_total", "protocol=\"h2\"",
              atomic_load(&s->proto_connections[SRV_PROTO_H2]));
    static const char *const h2_event_names[SRV_H2_COUNT] = {
        "stream", "stalled", "refused", "protocol_error", "goaway_not_leader", "thread_started"};
    metrics_header(out, "gpupack_http2_events_total", "counter",
                   "HTTP/2 and TLS-front events: requests (streams) answered; connections or "
                   "requests ended for stalling past their time limit; connections refused at "
                   "the connection limit; protocol errors; GOAWAYs sent because this replica "
                   "does not lead; threads started to serve connections (kept and reused).");
    for (int e = 0; e < SRV_H2_COUNT; e++) {
        snprintf(labels, sizeof labels, "event=\"%s\"", h2_event_names[e]);
        metrics_u(out, "gpupack_http2_events_total", labels, atomic_load(&s->h2_events[e]));
    }
    metrics_header(out, "gpupack_http_verb_connections_closed_total", "counter",
                   "Verb answers sent with Connection: close because this replica does not lead "
                   "(or may not bind yet): the caller reconnects through the Service.");
    metrics_u(out, "gpupack_http_verb_connections_closed_total", NULL,
              atomic_load(&s->verb_closes));
    metrics_header(out, "gpupack_http_client_chain_checks_total", "counter",
                   "Client certificate chains checked against --client-ca: verified in full, or "
                   "the same chain verified before (cached).");
    metrics_u(out, "gpupack_http_client_chain_checks_total", "result=\"verified\"",
              atomic_load(&s->chain_checks[0]));
    metrics_u(out, "gpupack_http_client_chain_checks_total", "result=\"cached\"",
              atomic_load(&s->chain_checks[1]));
    metrics_header(out, "gpupack_http_request_bytes_total", "counter",
                   "Request body bytes received, by verb.");
    for (int v = 0; v < V_COUNT; v++) {
        snprintf(labels, sizeof labels, "verb=\"%s\"", verb_names[v]);
        metrics_u(out, "gpupack_http_request_bytes_total", labels, atomic_load(&s->body_in[v]));
    }
    metrics_header(out, "gpupack_http_response_bytes_total", "counter",
                   "Response body bytes sent, by verb.");
    for (int v = 0; v < V_COUNT; v++) {
        snprintf(labels, sizeof labels, "verb=\"%s\"", verb_names[v]);
        metrics_u(out, "gpupack_http_response_bytes_total", labels, atomic_load(&s->body_out[v]));
    }
    metrics_header(out, "gpupack_request_duration_seconds", "histogram",
                   "Time to answer a request, by verb.");
    for (int v = 0; v < V_COUNT; v++) {
        snprintf(labels, sizeof labels, "verb=\"%s\"", verb_names[v]);
        metrics_render_histo(out, "gpupack_request_duration_seconds", labels, &s->latency[v]);
    }
}

/* The page: the listener's families, then the modules it serves (extender,
 * store), then the writers main listed (hooks.metrics). */
static int h_metrics(gp_server *s, req_state *rs, const char *tail, char **out,
                     const char **ct)
{
    gp_buf b;
    gp_buf_init(&b, METRICS_PAGE_MAX);
    server_metrics(s, &b);
    extender_metrics(s->e, &b);
    clusterview_store_metrics(s->c, &b);
    metrics_write(s->hooks.metrics, &b);
    if (gp_buf_failed(&b)) {
        gp_buf_free(&b);
        LOG_ERROR("/metrics: the page exceeds %u bytes", METRICS_PAGE_MAX);
        *out = error_json("the metrics page exceeds its size limit");
        return 500;
    }
    *ct = "text/plain; version=0.0.4; charset=utf-8";
    *out = b.data ? b.data : xstrdup("");
    return 200;
}

/* ?format=text answers: what print writes about j, as text/plain. */
static void render_text(void (*print)(FILE *, const json_t *), const json_t *j, char **out,
                        const char **ct)
{
    size_t len;
    FILE *f = open_memstream(out, &len);
    if (!f)
        abort();
    print(f, j);
    fclose(f);
    *ct = "text/plain; charset=utf-8";
}

/* /inspect's summary and the hooks' extra keys (preemption, consolidation):
 * the whole-cluster answer only. Owned json, or NULL. */
static json_t *inspect_extra(gp_server *s)
{
    json_t *x = json_object();
    clusterview cv;
    clusterview_of_cluster(s->c, NULL, &cv);
    json_object_set_new(x, "summary", clusterview_json(&cv));
    if (s->hooks.inspect) {
        json_t *extra = s->hooks.inspect(s->hooks.ud);
        if (json_is_object(extra))
            json_object_update(x, extra);
        json_decref(extra);
    }
    return x;
}

/* Pod uids are what a forged bind needs: /inspect is for operators, so it
 * leaves them out unless --show-pod-uids. */
static int h_inspect(gp_server *s, req_state *rs, const char *tail, char **out,
                     const char **ct)
{
    const char *node = tail && *tail ? tail : NULL;
    if (node && strlen(node) >= GP_NAME_MAX) {
        *out = error_json("node name too long");
        return 400;
    }
    gp_buf b;
    gp_buf_init(&b, CLUSTER_INSPECT_MAX);
    if (cluster_inspect_write(s->c, node, s->show_uids, &b) != 0) {
        gp_buf_free(&b);
        char msg[GP_NAME_MAX + 64];
        snprintf(msg, sizeof msg, "node %s is not known to gpupack", node);
        *out = error_json(msg);
        return 404;
    }
    json_t *extra = node ? NULL : inspect_extra(s);
    /* ?compact=1: no indentation (the /ui page reads 5,000-node answers),
     * sent as written; ?format=text: gpupack inspect's table (kubectl
     * gpupack inspect); else indented */
    bool compact = req_arg(rs, "compact", NULL, 0);
    char fmt[16];
    bool text = req_arg(rs, "format", fmt, sizeof fmt) && strcmp(fmt, "text") == 0;
    if (compact && !text && extra && !gp_buf_failed(&b)) {
        b.len--;   /* the closing brace: the extra keys go inside */
        const char *k;
        json_t *v;
        json_object_foreach(extra, k, v) {
            jsonw_raw(&b, ",");
            jsonw_str(&b, k);
            jsonw_raw(&b, ":");
            jsonw_value(&b, v);
        }
        jsonw_raw(&b, "}");
    }
    int status = 200;
    if (gp_buf_failed(&b)) {
        LOG_ERROR("/inspect: the answer exceeds %u bytes", (unsigned)CLUSTER_INSPECT_MAX);
        *out = error_json("the /inspect answer exceeds its size limit");
        status = 500;
    } else if (compact && !text) {
        *out = b.data;   /* handed over */
        b.data = NULL;
    } else {
        json_t *j = json_loadb(b.data, b.len, 0, NULL);
        if (!j) {
            *out = error_json("/inspect: internal error (see the log)");
            LOG_ERROR("/inspect: the JSON written does not parse");
            status = 500;
        } else {
            if (extra)
                json_object_update(j, extra);
            if (text)
                render_text(inspect_print_table, j, out, ct);
            else
                *out = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            json_decref(j);
        }
    }
    json_decref(extra);
    gp_buf_free(&b);
    return status;
}

/* GET /: the operator's page. "ui" is relative, so the redirect also works
 * through a proxy that serves gpupack under a path (kubectl proxy, the API
 * server's service proxy). */
static int h_root(gp_server *s, req_state *rs, const char *tail, char **out,
                  const char **ct)
{
    rs->location = "ui";
    *ct = "text/plain; charset=utf-8";
    *out = xstrdup("see /ui\n");
    return 302;
}

static int h_ui(gp_server *s, req_state *rs, const char *tail, char **out,
                const char **ct)
{
    size_t len;
    const char *page = ui_page_html(&len);
    *ct = "text/html; charset=utf-8";
    *out = xstrndup(page, len);
    return 200;
}

/* POST /explain with a Pod: why it fits no node ([?format=text] for people). */
static int h_explain(gp_server *s, req_state *rs, const char *tail, char **out,
                     const char **ct)
{
    json_error_t je;
    json_t *pod = json_loadb(rs->body.data ? rs->body.data : "", rs->body.len, 0, &je);
    if (!json_is_object(pod)) {
        json_decref(pod);
        *out = error_json("the body must be a Pod object (kubectl get pod NAME -o json)");
        return 400;
    }
    gp_err err;
    json_t *ex = explain_pod(s->e, s->c, pod, &err);
    json_decref(pod);
    if (!ex) {
        *out = error_json(err.msg);
        return 422;
    }
    char fmt[16];
    if (req_arg(rs, "format", fmt, sizeof fmt) && strcmp(fmt, "text") == 0) {
        render_text(explain_print, ex, out, ct);
    } else {
        *out = dump(ex);
        ex = NULL;
    }
    json_decref(ex);
    return 200;
}

static int h_mutate(gp_server *s, req_state *rs, const char *tail, char **out,
                    const char **ct)
{
    return webhook_review(rs->body.data ? rs->body.data : "", rs->body.len, s->webhook, out);
}

static const route routes[] = {
    /* every route that changes state is authenticated; probes and read-only
     * views stay open (kubelet probes present no client certificate) */
    {"POST", "filter", true, true, V_FILTER, h_filter, L_MAIN},
    {"POST", "prioritize", true, true, V_PRIORITIZE, h_prioritize, L_MAIN},
    {"POST", "bind", true, true, V_BIND, h_bind, L_MAIN},
    {"POST", "preempt", true, true, V_PREEMPT, h_preempt, L_MAIN},
    {"GET", "/healthz", false, false, V_HEALTHZ, h_healthz, L_BOTH},
    {"GET", "/readyz", false, false, V_READYZ, h_readyz, L_MAIN},
    {"GET", "/metrics", false, false, V_METRICS, h_metrics, L_MAIN},
    {"GET", "/inspect", false, false, V_INSPECT, h_inspect, L_MAIN},
    {"GET", "/inspect/", false, false, V_INSPECT, h_inspect, L_MAIN},
    {"POST", "/mutate", false, false, V_MUTATE, h_mutate, L_WEBHOOK},
    {"GET", "/ui", false, false, V_UI, h_ui, L_MAIN},
    {"GET", "/", false, false, V_UI, h_root, L_MAIN},   /* counted with /ui */
    {"POST", "/explain", false, false, V_EXPLAIN, h_explain, L_MAIN},   /* read-only */
};

static bool is_prefix_route(const route *r)
{
    size_t n = strlen(r->path);
    return n > 1 && r->path[n - 1] == '/';
}

/* Finds the route for a path; *tail gets what follows a prefix route. Returns
 * the index or -1; *method_ok tells whether some route has this path with
 * another method. */
static int match_route(const gp_server *s, const char *method, const char *url, const char **tail,
                       bool *path_known)
{
    *path_known = false;
    *tail = NULL;
    for (size_t i = 0; i < GP_ARRAY_LEN(routes); i++) {
        const route *r = &routes[i];
        const char *p = url;
        if (!(r->listeners & (s->webhook ? L_WEBHOOK : L_MAIN)))
            continue;
        if (r->under_prefix) {
            size_t pl = strlen(s->prefix);
            if (strncmp(p, s->prefix, pl) != 0 || p[pl] != '/')
                continue;
            p += pl + 1;
            if (strcmp(p, r->path) != 0)
                continue;
        } else {
            size_t rl = strlen(r->path);
            if (is_prefix_route(r)) {
                if (strncmp(p, r->path, rl) != 0)
                    continue;
                *tail = p + rl;
            } else if (strcmp(p, r->path) != 0) {
                continue;
            }
        }
        *path_known = true;
        if (strcmp(method, r->method) == 0)
            return (int)i;
    }
    return -1;
}

/* ------------------------------------------------------------ counters -- */

/* Whether the answer to a verb closes its connection: a replica that does not
 * lead sends kube-scheduler back through the Service (hooks.keep_verb_connection). */
static bool close_verb_connection(gp_server *s, verb v)
{
    if (v != V_FILTER && v != V_PRIORITIZE && v != V_BIND && v != V_PREEMPT)
        return false;
    if (!s->hooks.keep_verb_connection || s->hooks.keep_verb_connection(s->hooks.ud))
        return false;
    atomic_fetch_add(&s->verb_closes, 1);
    return true;
}

static void count(gp_server *s, int ri, int status, double start)
{
    int k = status / 100;
    if (ri < 0) {
        atomic_fetch_add(&s->not_found, 1);
        return;
    }
    verb v = routes[ri].v;
    if (k >= 1 && k <= 5)
        atomic_fetch_add(&s->by_code[v][k], 1);
    metrics_observe(&s->latency[v], gp_mono_s() - start);
}

void srv_count_connection(gp_server *s, srv_proto p)
{
    atomic_fetch_add(&s->connections, 1);
    atomic_fetch_add(&s->proto_connections[p], 1);
}

void srv_count_h2(gp_server *s, srv_h2_event e)
{
    atomic_fetch_add(&s->h2_events[e], 1);
}

/* ------------------------------------------------- client certificates -- */

/* SHA-256 over the chain (each certificate's length and DER bytes). */
static int chain_digest(const gnutls_datum_t *certs, unsigned n, unsigned char out[32])
{
    gnutls_hash_hd_t h;
    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        unsigned char len[4] = {(unsigned char)(certs[i].size >> 24), (unsigned char)(certs[i].size >> 16),
                                (unsigned char)(certs[i].size >> 8), (unsigned char)certs[i].size};
        if (gnutls_hash(h, len, sizeof len) < 0 || gnutls_hash(h, certs[i].data, certs[i].size) < 0) {
            gnutls_hash_deinit(h, out);
            return -1;
        }
    }
    gnutls_hash_deinit(h, out);
    return 0;
}

/* The period in which every certificate of the chain is valid; -1 when one
 * does not parse. */
static int chain_validity(const gnutls_datum_t *certs, unsigned n, time_t *nb, time_t *na)
{
    *nb = 0;
    *na = (time_t)INT64_MAX;
    for (unsigned i = 0; i < n; i++) {
        gnutls_x509_crt_t c;
        if (gnutls_x509_crt_init(&c) < 0)
            return -1;
        int rc = gnutls_x509_crt_import(c, &certs[i], GNUTLS_X509_FMT_DER);
        time_t a = gnutls_x509_crt_get_activation_time(c), e = gnutls_x509_crt_get_expiration_time(c);
        gnutls_x509_crt_deinit(c);
        if (rc < 0 || a == (time_t)-1 || e == (time_t)-1)
            return -1;
        if (a > *nb)
            *nb = a;
        if (e < *na)
            *na = e;
    }
    return 0;
}

/* Verifies the TLS peer's certificate chain against --client-ca (the trust
 * the session's credentials carry): validity period, signatures, CA flags.
 * The handshake itself already proved the peer holds the certificate's key. */
int srv_verify_session(gp_server *s, gnutls_session_t ses)
{
    if (!ses)
        return SRV_AUTH_NO_CERT;
    unsigned int n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(ses, &n);
    if (!certs || n == 0)
        return SRV_AUTH_NO_CERT;
    unsigned char dg[32];
    bool digested = chain_digest(certs, n, dg) == 0;
    time_t now = time(NULL);
    if (digested) {
        bool hit = false;
        pthread_mutex_lock(&s->trust_mu);
        for (int i = 0; i < TRUSTED_CHAINS && !hit; i++) {
            trusted_chain *t = &s->trusted[i];
            if (t->used > 0 && memcmp(t->digest, dg, sizeof dg) == 0 && now >= t->not_before &&
                now < t->not_after) {
                t->used = gp_mono_s();
                hit = true;
            }
        }
        pthread_mutex_unlock(&s->trust_mu);
        if (hit) {
            atomic_fetch_add(&s->chain_checks[1], 1);
            return SRV_AUTH_OK;
        }
    }
    atomic_fetch_add(&s->chain_checks[0], 1);
    unsigned int status = 0;
    if (gnutls_certificate_verify_peers2(ses, &status) != GNUTLS_E_SUCCESS || status != 0)
        return SRV_AUTH_UNTRUSTED;
    time_t nb, na;
    if (digested && chain_validity(certs, n, &nb, &na) == 0) {
        pthread_mutex_lock(&s->trust_mu);
        trusted_chain *slot = &s->trusted[0];
        for (int i = 1; i < TRUSTED_CHAINS; i++)
            if (s->trusted[i].used < slot->used)
                slot = &s->trusted[i];
        memcpy(slot->digest, dg, sizeof dg);
        slot->not_before = nb;
        slot->not_after = na;
        slot->used = gp_mono_s();
        pthread_mutex_unlock(&s->trust_mu);
    }
    return SRV_AUTH_OK;
}

/* ------------------------------------------------------ memory budget -- */

/* Reserves n more bytes of the in-flight budget for rs; false when full. */
static bool reserve(gp_server *s, req_state *rs, size_t n)
{
    size_t cur = atomic_load(&s->inflight);
    do {
        if (n > s->max_inflight || cur > s->max_inflight - n)
            return false;
    } while (!atomic_compare_exchange_weak(&s->inflight, &cur, cur + n));
    rs->held += n;
    return true;
}

/* Makes rs hold at least `want` bytes. */
static bool hold_at_least(gp_server *s, req_state *rs, size_t want)
{
    return want <= rs->held || reserve(s, rs, want - rs->held);
}

static void release(gp_server *s, req_state *rs)
{
    atomic_fetch_sub(&s->inflight, rs->held);
    rs->held = 0;
}

/* ------------------------------------------------------------ requests -- */

static int answer(gp_answer *a, int status, char *body)
{
    *a = (gp_answer){.status = status, .body = body, .ctype = "application/json"};
    return 0;
}

/* Answers a verb call without a trusted client certificate; logs at most one
 * line per 10 s (a scanner must not flood the log). */
static int refuse_client(req_state *rs, const gp_peer *peer, int auth, gp_answer *a)
{
    gp_server *s = rs->s;
    bool none = auth == SRV_AUTH_NO_CERT;
    unsigned long n = atomic_fetch_add(&s->refused[none ? 0 : 1], 1) + 1;
    long long now = (long long)gp_mono_s(), last = atomic_load(&s->refused_logged_s);
    if (now - last >= 10 && atomic_compare_exchange_strong(&s->refused_logged_s, &last, now)) {
        char addr[INET6_ADDRSTRLEN + 8] = "?";
        if (peer->addr)
            peer->addr(peer->ud, addr, sizeof addr);
        LOG_WARN("refused %.100s from %s: %s (%lu such refusals so far)", rs->path, addr,
                 none ? "no client certificate" : "client certificate not signed by --client-ca",
                 n);
    }
    int status = none ? 401 : 403;
    count(s, rs->route, status, rs->start);
    return answer(a, status,
                  error_json(none ? "this route needs a TLS client certificate signed by "
                                    "gpupack's --client-ca (kube-scheduler: tlsConfig certFile/keyFile)"
                                  : "the TLS client certificate is not trusted: not signed by "
                                    "gpupack's --client-ca, expired, or not yet valid"));
}

/* 413 when the request alone needs more than the whole budget, else 503 (retry). */
static int refuse_memory(req_state *rs, size_t need, gp_answer *a)
{
    gp_server *s = rs->s;
    char msg[256];
    int status;
    if (need > s->max_inflight) {
        status = 413;
        atomic_fetch_add(&s->too_large, 1);
        snprintf(msg, sizeof msg,
                 "request would need about %zu KiB of memory to decode, more than the %zu KiB "
                 "all requests in flight may hold (--max-inflight)",
                 need >> 10, s->max_inflight >> 10);
    } else {
        status = 503;
        atomic_fetch_add(&s->busy, 1);
        snprintf(msg, sizeof msg,
                 "server busy: requests in flight hold the memory budget (--max-inflight %zu KiB); "
                 "retry",
                 s->max_inflight >> 10);
    }
    gp_buf_free(&rs->body);
    release(s, rs);
    count(s, rs->route, status, rs->start);
    return answer(a, status, error_json(msg));
}

static int refuse_size(req_state *rs, gp_answer *a)
{
    gp_server *s = rs->s;
    atomic_fetch_add(&s->too_large, 1);
    count(s, rs->route, 413, rs->start);
    char msg[128];
    snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes", s->max_body);
    return answer(a, 413, error_json(msg));
}

gp_req *srvreq_new(gp_server *s, void (*resume)(void *ud), void *ud)
{
    req_state *rs = xcalloc(1, sizeof *rs);
    rs->s = s;
    rs->start = gp_mono_s();
    rs->resume = resume;
    rs->resume_ud = ud;
    rs->route = -1;
    gp_buf_init(&rs->body, s->max_body);
    return rs;
}

int srvreq_begin(gp_req *rs, const char *method, const char *path, const char *query,
                 const char *content_length, const gp_peer *peer, gp_answer *a)
{
    gp_server *s = rs->s;
    const char *tail;
    bool known;
    rs->path = xstrdup(path);
    rs->query = query ? xstrdup(query) : NULL;
    rs->route = match_route(s, method, path, &tail, &known);
    if (rs->route < 0) {
        count(s, -1, 404, rs->start);
        char msg[700];
        if (known) {
            snprintf(msg, sizeof msg, "method %.16s is not allowed on %.200s", method, path);
            answer(a, 405, error_json(msg));
            a->allow = strcmp(method, "GET") == 0 ? "POST" : "GET";
            return 0;
        }
        if (s->webhook)
            snprintf(msg, sizeof msg,
                     "no route %.16s %.200s; the webhook listener serves POST /mutate and "
                     "GET /healthz", method, path);
        else
            snprintf(msg, sizeof msg,
                     "no route %.16s %.200s; routes: POST %.60s/filter, %.60s/prioritize, "
                     "%.60s/bind, %.60s/preempt; GET /healthz, /readyz, /metrics, "
                     "/inspect[/NODE], /ui; POST /explain",
                     method, path, s->prefix, s->prefix, s->prefix, s->prefix);
        return answer(a, 404, error_json(msg));
    }
    if (routes[rs->route].authenticated && s->client_ca) {
        int auth = peer->auth ? peer->auth(peer->ud) : SRV_AUTH_NO_CERT;
        if (auth != SRV_AUTH_OK)
            return refuse_client(rs, peer, auth, a);
    }
    unsigned long long clen = content_length ? strtoull(content_length, NULL, 10) : 0;
    if (clen > s->max_body) {
        rs->too_large = true;
        return refuse_size(rs, a);
    }
    /* the body buffer grows by doubling: hold twice its size */
    if (clen && !hold_at_least(s, rs, 2 * (size_t)clen + 512))
        return refuse_memory(rs, 2 * (size_t)clen + 512, a);
    return 1;
}

void srvreq_data(gp_req *rs, const void *p, size_t n)
{
    gp_server *s = rs->s;
    if (rs->too_large || rs->busy || rs->route < 0)
        return;   /* drained; the answer goes out once the body is read */
    if (!hold_at_least(s, rs, 2 * (rs->body.len + n) + 512)) {
        rs->busy = true;
        gp_buf_free(&rs->body);
        return;
    }
    if (gp_buf_append(&rs->body, p, n)) {
        rs->too_large = true;
        gp_buf_free(&rs->body);
    }
}

int srvreq_end(gp_req *rs, gp_answer *a)
{
    gp_server *s = rs->s;
    if (rs->busy)
        return refuse_memory(rs, 0, a), 1;
    if (rs->too_large)
        return refuse_size(rs, a), 1;
    const route *r = &routes[rs->route];
    if (r->method[0] == 'P' && !rs->bind_queued) {   /* count before decoding: refuse what would not fit */
        size_t need = rs->body.len <= 4096 ? jsoncost_bound(rs->body.len)
                                           : jsoncost_estimate(rs->body.data, rs->body.len);
        need += rs->body.cap;
        if (!hold_at_least(s, rs, need))
            return refuse_memory(rs, need, a), 1;
    }
    const char *tail = NULL;
    if (is_prefix_route(r))
        tail = rs->path + strlen(r->path);
    char *out = NULL;
    const char *ctype = "application/json";
    int status = r->fn(s, rs, tail, &out, &ctype);
    if (status == 0)
        return 0;   /* waits: answered when a bind thread resumes it */
    atomic_fetch_add(&s->body_in[r->v], rs->body.len);
    atomic_fetch_add(&s->body_out[r->v], out ? strlen(out) : 0);
    count(s, rs->route, status, rs->start);
    *a = (gp_answer){.status = status, .body = out ? out : xstrdup(""), .ctype = ctype,
                     .location = rs->location, .close = close_verb_connection(s, r->v)};
    return 1;
}

void srvreq_free(gp_req *rs)
{
    if (!rs)
        return;
    gp_server *s = rs->s;
    /* bind_answered may still hold the lock right after resuming us */
    pthread_mutex_lock(&s->bind_mu);
    pthread_mutex_unlock(&s->bind_mu);
    release(s, rs);
    gp_buf_free(&rs->body);
    free(rs->bind_out);
    free(rs->path);
    free(rs->query);
    free(rs);
}

/* ------------------------------------------------------------ MHD glue -- */

static enum MHD_Result mhd_send(struct MHD_Connection *conn, gp_answer *a)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(a->body), a->body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->ctype);
    if (a->close)   /* libmicrohttpd closes the connection once this answer is sent */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (a->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, a->allow);
    if (a->status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (a->status == 401)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Mutual-TLS realm=\"gpupack\"");
    if (a->location)
        MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, a->location);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned int)a->status, r);
    MHD_destroy_response(r);
    return ret;
}

static conn_state *mhd_conn_state(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* SRV_AUTH_*, checked once per connection (no renegotiation): by libmicrohttpd's
 * TLS session, or as the TLS front found it (a connection it handed over). */
static int mhd_auth(void *ud)
{
    struct MHD_Connection *conn = ud;
    conn_state *cs = mhd_conn_state(conn);
    if (cs && cs->auth != SRV_AUTH_UNKNOWN)
        return cs->auth;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    int a = SRV_AUTH_NO_CERT;
    if (ci && ci->tls_session && cs && cs->server)
        a = srv_verify_session(cs->server, (gnutls_session_t)ci->tls_session);
    if (cs)
        cs->auth = a;
    return a;
}

void srv_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
    snprintf(buf, len, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
}

static void mhd_addr(void *ud, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(ud, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    srv_addr_text(ci ? ci->client_addr : NULL, buf, len);
}

static void mhd_resume(void *ud)
{
    MHD_resume_connection(ud);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    gp_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_state *cs = xcalloc(1, sizeof *cs);
        cs->server = s;
        if (s->front) {   /* handed over by the TLS front, which checked the certificate */
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            cs->auth = ci ? tlsfront_auth_of(s->front, ci->connect_fd) : SRV_AUTH_NO_CERT;
        } else {
            srv_count_connection(s, SRV_PROTO_H1);
        }
        *socket_context = cs;
    } else {
        free(*socket_context);
        *socket_context = NULL;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    gp_server *s = cls;
    req_state *rs = *con_cls;
    gp_answer a;
    if (!rs) {
        rs = srvreq_new(s, mhd_resume, conn);
        rs->conn = conn;
        *con_cls = rs;
        gp_peer peer = {.auth = mhd_auth, .addr = mhd_addr, .ud = conn};
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (!srvreq_begin(rs, method, url, NULL, cl, &peer, &a)) {
            rs->answered = true;
            return mhd_send(conn, &a);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rs->answered)
            srvreq_data(rs, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (rs->answered)
        return MHD_YES;   /* answered at the start */
    if (!srvreq_end(rs, &a))
        return MHD_YES;   /* suspended: answered when a bind thread resumes it */
    return mhd_send(conn, &a);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    srvreq_free(*con_cls);
    *con_cls = NULL;
}

/* ------------------------------------------------------------ startup -- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss, gp_err *err)
{
    memset(ss, 0, sizeof *ss);
    char host[128] = "";
    const char *colon = strrchr(listen, ':');
    if (!colon)
        return gp_fail(err, "--listen %s: expected HOST:PORT", listen);
    size_t hl = (size_t)(colon - listen);
    if (hl >= sizeof host)
        return gp_fail(err, "--listen %s: host too long", listen);
    memcpy(host, listen, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || colon[1] == '\0' || port < 0 || port > 65535)
        return gp_fail(err, "--listen %s: bad port", listen);
    if (host[0] == '[') {
        size_t l = strlen(host);
        if (l < 2 || host[l - 1] != ']')
            return gp_fail(err, "--listen %s: bad IPv6 address", listen);
        host[l - 1] = '\0';
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
            return gp_fail(err, "--listen %s: bad IPv6 address", listen);
        return 0;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    if (host[0] == '\0')
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
        return gp_fail(err, "--listen %s: bad IPv4 address (use an address, not a name)", listen);
    return 0;
}

gp_server *server_start(const gp_server_config *cfg, gp_extender *e, gp_cluster *c,
                        const gp_server_hooks *hooks, gp_err *err)
{
    struct sockaddr_storage ss;
    if (parse_listen(cfg->listen ? cfg->listen : "127.0.0.1:8765", &ss, err))
        return NULL;
    gp_server *s = xcalloc(1, sizeof *s);
    s->e = e;
    s->c = c;
    pthread_mutex_init(&s->bind_mu, NULL);
    pthread_cond_init(&s->bind_cv, NULL);
    pthread_mutex_init(&s->trust_mu, NULL);
    s->webhook = cfg->webhook;
    if (hooks)
        s->hooks = *hooks;
    s->max_body = cfg->max_body ? cfg->max_body : GP_MAX_BODY_DEFAULT;
    s->max_inflight = cfg->max_inflight ? cfg->max_inflight : GP_MAX_INFLIGHT_DEFAULT;
    s->show_uids = cfg->show_uids;
    const char *prefix = cfg->url_prefix ? cfg->url_prefix : "";
    /* normalise: leading slash, no trailing slash ("" = root) */
    size_t pl = strlen(prefix);
    while (pl && prefix[pl - 1] == '/')
        pl--;
    while (pl && *prefix == '/') {
        prefix++;
        pl--;
    }
    if (pl >= sizeof s->prefix - 2) {
        gp_fail(err, "--url-prefix too long");
        free(s);
        return NULL;
    }
    if (pl)
        snprintf(s->prefix, sizeof s->prefix, "/%.*s", (int)pl, prefix);

    /* ITC: the polling threads are woken at stop, not at their next timeout.
     * poll(), not epoll: with epoll, libmicrohttpd 0.9.75 keeps a connection
     * whose TLS handshake waits for the client in its ready list, so the
     * polling thread spins (epoll_wait with timeout 0, then a 5-byte recv that
     * fails with EAGAIN) until the client's next flight arrives. Under
     * kube-scheduler's new connection for about every second pod, that spin was
     * half of gpupack's CPU (bench/results/scale.md, "The change").
     * gpupack serves a handful of connections, so poll's cost per call is small. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned threads = cfg->threads ? cfg->threads : 2;
    bool tls = cfg->tls_cert || cfg->tls_key;
    bool front = tls && !cfg->no_http2;
    if (tls) {
        if (!cfg->tls_cert || !cfg->tls_key) {
            gp_fail(err, "TLS needs both --tls-cert and --tls-key");
            goto fail;
        }
        s->tls_cert = gp_read_file(cfg->tls_cert, 1 << 20, NULL, err);
        s->tls_key = s->tls_cert ? gp_read_file(cfg->tls_key, 1 << 20, NULL, err) : NULL;
        if (!s->tls_key)
            goto fail;
        /* with the front, libmicrohttpd serves plain HTTP/1.1 on the socket
         * pairs the front hands it, and listens on nothing itself */
        flags |= front ? MHD_USE_NO_LISTEN_SOCKET : MHD_USE_TLS;
    }
    if (cfg->client_ca) {
        if (!tls) {
            gp_fail(err, "--client-ca needs TLS: give --tls-cert and --tls-key too");
            goto fail;
        }
        /* with a trust set, libmicrohttpd asks every client for a certificate;
         * the verbs then require one that verifies (client_auth) */
        s->client_ca = gp_read_file(cfg->client_ca, 1 << 20, NULL, err);
        if (!s->client_ca)
            goto fail;
    } else if (!cfg->webhook) {
        LOG_WARN("the verbs (filter, prioritize, bind) are not authenticated: anyone who reaches "
                 "%s can place pods; give --client-ca (with --tls-cert/--tls-key)",
                 cfg->listen ? cfg->listen : "the port");
    }
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        front ? NULL : (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)GP_MAX_CONNECTIONS, MHD_OPTION_HTTPS_MEM_CERT, tls && !front ? s->tls_cert : NULL,
        MHD_OPTION_HTTPS_MEM_KEY, tls && !front ? s->tls_key : NULL, MHD_OPTION_HTTPS_MEM_TRUST,
        front ? NULL : s->client_ca, MHD_OPTION_END);
    if (!s->d) {
        gp_fail(err, "cannot listen on %s (address in use, or not an address of this host?)",
                cfg->listen);
        goto fail;
    }
    if (front) {
        tlsfront_config fc = {.addr = (struct sockaddr *)&ss,
                              .addrlen = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                                  : sizeof(struct sockaddr_in),
                              .cert_pem = s->tls_cert, .key_pem = s->tls_key,
                              .ca_pem = s->client_ca, .max_connections = GP_MAX_CONNECTIONS,
                              .handshake_s = cfg->handshake_s, .idle_s = cfg->h2_idle_s,
                              .request_s = cfg->h2_request_s};
        gp_err ferr;
        s->front = tlsfront_start(s, s->d, &fc, &ferr);
        if (!s->front) {
            MHD_stop_daemon(s->d);
            gp_fail(err, "%s: %s", cfg->listen ? cfg->listen : "127.0.0.1:8765", ferr.msg);
            goto fail;
        }
        s->port = tlsfront_port(s->front);
        return s;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return s;
fail:
    free(s->tls_cert);
    free(s->tls_key);
    free(s->client_ca);
    pthread_cond_destroy(&s->bind_cv);
    pthread_mutex_destroy(&s->bind_mu);
    pthread_mutex_destroy(&s->trust_mu);
    free(s);
    return NULL;
}

int server_port(const gp_server *s)
{
    return s->port;
}

void server_stop(gp_server *s)
{
    if (!s)
        return;
    /* binds in flight finish (each API call is bounded) and are answered
     * before the daemon goes: MHD must not stop with suspended connections */
    pthread_mutex_lock(&s->bind_mu);
    s->stopping = true;
    while (s->binds_suspended > 0)
        pthread_cond_wait(&s->bind_cv, &s->bind_mu);
    pthread_mutex_unlock(&s->bind_mu);
    tlsfront_stop(s->front);   /* first: the connections it handed over end with it */
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->tls_cert);
    free(s->tls_key);
    free(s->client_ca);
    pthread_cond_destroy(&s->bind_cv);
    pthread_mutex_destroy(&s->bind_mu);
    pthread_mutex_destroy(&s->trust_mu);
    free(s);
}
