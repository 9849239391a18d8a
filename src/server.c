/* server.c -- the HTTP front: libmicrohttpd daemon, bounded bodies, route table. */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterview.h"
#include "explain.h"
#include "inspect_cli.h"
#include "log.h"
#include "metrics.h"
#include "ui_page.h"
#include "webhook.h"
#include "yamljson.h"

typedef enum {
    V_FILTER, V_PRIORITIZE, V_BIND, V_HEALTHZ, V_READYZ, V_METRICS, V_INSPECT, V_MUTATE, V_UI,
    V_EXPLAIN, V_COUNT
} verb;

static const char *const verb_names[V_COUNT] = {"filter",  "prioritize", "bind",
                                                "healthz", "readyz",     "metrics",
                                                "inspect", "mutate",     "ui",
                                                "explain"};

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
    char *tls_cert, *tls_key;
    const gp_resource_names *webhook;   /* non-NULL: the webhook listener */
    gp_histo latency[V_COUNT];
    atomic_ulong by_code[V_COUNT][6];     /* 1xx..5xx, index 0 unused */
    atomic_ulong not_found, too_large;
};

/* Per-request state; freed in the completion callback only. */
typedef struct req_state {
    int route;          /* index into routes, or -1 */
    gp_buf body;
    bool too_large;
    double start;
} req_state;

typedef int (*handler_fn)(gp_server *s, struct MHD_Connection *conn, req_state *rs,
                          const char *tail, char **out, const char **ctype);

typedef struct route {
    const char *method;
    const char *path;       /* exact, or a prefix when it ends with '/' */
    bool under_prefix;      /* the extender verbs follow --url-prefix */
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

static char *error_json(const char *msg)
{
    return dump(json_pack("{s:s}", "Error", msg));
}

typedef int (*verb_fn)(gp_extender *, const char *, size_t, char **);

static int run_verb(gp_server *s, verb_fn fn, req_state *rs, char **out)
{
    return fn(s->e, rs->body.data ? rs->body.data : "", rs->body.len, out);
}

/* ----------------------------------------------------------- handlers -- */

static int h_filter(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                    char **out, const char **ct)
{
    return run_verb(s, extender_filter, rs, out);
}

static int h_prioritize(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                        char **out, const char **ct)
{
    return run_verb(s, extender_prioritize, rs, out);
}

static int h_bind(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                  char **out, const char **ct)
{
    return run_verb(s, extender_bind, rs, out);
}

static int h_healthz(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                     char **out, const char **ct)
{
    *ct = "text/plain; charset=utf-8";
    *out = xstrdup("ok\n");
    return 200;
}

static int h_readyz(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                    char **out, const char **ct)
{
    char detail[256] = "";
    bool ready = s->hooks.ready ? s->hooks.ready(s->hooks.ud, detail, sizeof detail) : true;
    *ct = "text/plain; charset=utf-8";
    *out = xasprintf("%s%s%s\n", ready ? "ok" : "not ready", detail[0] ? ": " : "", detail);
    return ready ? 200 : 503;
}

static int h_metrics(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                     char **out, const char **ct)
{
    gp_buf b;
    gp_buf_init(&b, SIZE_MAX / 2);
    metrics_header(&b, "gpupack_http_requests_total", "counter",
                   "HTTP requests by route and status class.");
    for (int v = 0; v < V_COUNT; v++)
        for (int k = 1; k < 6; k++) {
            unsigned long n = atomic_load(&s->by_code[v][k]);
            if (n)
                (void)!gp_buf_printf(&b, "gpupack_http_requests_total{route=\"%s\",code=\"%dxx\"} %lu\n",
                                     verb_names[v], k, n);
        }
    (void)!gp_buf_printf(&b, "gpupack_http_requests_total{route=\"unknown\",code=\"4xx\"} %lu\n",
                         atomic_load(&s->not_found));
    metrics_header(&b, "gpupack_http_request_too_large_total", "counter",
                   "Requests refused with 413 (body over the limit).");
    (void)!gp_buf_printf(&b, "gpupack_http_request_too_large_total %lu\n",
                         atomic_load(&s->too_large));
    metrics_header(&b, "gpupack_request_duration_seconds", "histogram",
                   "Time to answer a request, by verb.");
    for (int v = 0; v < V_COUNT; v++) {
        char labels[48];
        snprintf(labels, sizeof labels, "verb=\"%s\"", verb_names[v]);
        metrics_render_histo(&b, "gpupack_request_duration_seconds", labels, &s->latency[v]);
    }
    gp_extender_stats es;
    extender_stats(s->e, &es);
    metrics_header(&b, "gpupack_bind_errors_total", "counter", "Binds that returned an Error.");
    (void)!gp_buf_printf(&b, "gpupack_bind_errors_total %lu\n", es.bind_errors);
    metrics_header(&b, "gpupack_bad_requests_total", "counter", "Requests answered with 400.");
    (void)!gp_buf_printf(&b, "gpupack_bad_requests_total %lu\n", es.bad_requests);
    gp_cluster_stats cs;
    cluster_stats(s->c, &cs);
    metrics_header(&b, "gpupack_nodes", "gauge", "Nodes in the store.");
    (void)!gp_buf_printf(&b, "gpupack_nodes %zu\n", cs.nodes);
    metrics_header(&b, "gpupack_gpus", "gauge", "GPUs in the store.");
    (void)!gp_buf_printf(&b, "gpupack_gpus %zu\n", cs.gpus);
    metrics_header(&b, "gpupack_pods", "gauge", "Pods holding GPUs, by state.");
    (void)!gp_buf_printf(&b, "gpupack_pods{state=\"bound\"} %zu\ngpupack_pods{state=\"assumed\"} %zu\n",
                         cs.pods_bound, cs.pods_assumed);
    metrics_header(&b, "gpupack_gpu_memory_mib", "gauge", "GPU memory of healthy GPUs.");
    (void)!gp_buf_printf(&b, "gpupack_gpu_memory_mib{kind=\"total\"} %lld\ngpupack_gpu_memory_mib{kind=\"used\"} %lld\n",
                         (long long)cs.mem_total, (long long)cs.mem_used);
    metrics_header(&b, "gpupack_gpu_core_percent", "gauge",
                   "GPU compute of healthy GPUs, in percent of one GPU.");
    (void)!gp_buf_printf(&b, "gpupack_gpu_core_percent{kind=\"total\"} %.1f\ngpupack_gpu_core_percent{kind=\"used\"} %.1f\n",
                         cs.core_total / 10.0, cs.core_used / 10.0);
    clusterview cv;
    clusterview_of_cluster(s->c, NULL, &cv);
    clusterview_metrics(&cv, &b);
    clusterview_node_metrics(s->c, &b);
    if (s->hooks.metrics)
        s->hooks.metrics(s->hooks.ud, &b);
    *ct = "text/plain; version=0.0.4; charset=utf-8";
    *out = b.data ? b.data : xstrdup("");
    return 200;
}

static int h_inspect(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                     char **out, const char **ct)
{
    const char *node = tail && *tail ? tail : NULL;
    if (node && strlen(node) >= GP_NAME_MAX) {
        *out = error_json("node name too long");
        return 400;
    }
    json_t *j = cluster_inspect(s->c, node);
    if (!j) {
        char msg[GP_NAME_MAX + 64];
        snprintf(msg, sizeof msg, "node %s is not known to gpupack", node);
        *out = error_json(msg);
        return 404;
    }
    if (!node) {
        clusterview cv;
        clusterview_of_cluster(s->c, NULL, &cv);
        json_object_set_new(j, "summary", clusterview_json(&cv));
    }
    if (!node && s->hooks.inspect) {
        json_t *extra = s->hooks.inspect(s->hooks.ud);
        if (json_is_object(extra))
            json_object_update(j, extra);
        json_decref(extra);
    }
    /* ?compact=1: no indentation (the /ui page reads 5,000-node answers);
     * ?format=text: gpupack inspect's table (kubectl gpupack inspect) */
    bool compact = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "compact") != NULL;
    const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (fmt && strcmp(fmt, "text") == 0) {
        size_t len;
        FILE *f = open_memstream(out, &len);
        if (!f)
            abort();
        inspect_print_table(f, j);
        fclose(f);
        *ct = "text/plain; charset=utf-8";
    } else {
        *out = json_dumps(j, compact ? JSON_COMPACT : JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    }
    json_decref(j);
    return 200;
}

static int h_ui(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                char **out, const char **ct)
{
    size_t len;
    const char *page = ui_page_html(&len);
    *ct = "text/html; charset=utf-8";
    *out = xstrndup(page, len);
    return 200;
}

/* POST /explain with a Pod: why it fits no node ([?format=text] for people). */
static int h_explain(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                     char **out, const char **ct)
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
    const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (fmt && strcmp(fmt, "text") == 0) {
        size_t len;
        FILE *f = open_memstream(out, &len);
        if (!f)
            abort();
        explain_print(f, ex);
        fclose(f);
        *ct = "text/plain; charset=utf-8";
    } else {
        *out = dump(ex);
        ex = NULL;
    }
    json_decref(ex);
    return 200;
}

static int h_mutate(gp_server *s, struct MHD_Connection *c, req_state *rs, const char *tail,
                    char **out, const char **ct)
{
    return webhook_review(rs->body.data ? rs->body.data : "", rs->body.len, s->webhook, out);
}

static const route routes[] = {
    {"POST", "filter", true, V_FILTER, h_filter, L_MAIN},
    {"POST", "prioritize", true, V_PRIORITIZE, h_prioritize, L_MAIN},
    {"POST", "bind", true, V_BIND, h_bind, L_MAIN},
    {"GET", "/healthz", false, V_HEALTHZ, h_healthz, L_BOTH},
    {"GET", "/readyz", false, V_READYZ, h_readyz, L_MAIN},
    {"GET", "/metrics", false, V_METRICS, h_metrics, L_MAIN},
    {"GET", "/inspect", false, V_INSPECT, h_inspect, L_MAIN},
    {"GET", "/inspect/", false, V_INSPECT, h_inspect, L_MAIN},
    {"POST", "/mutate", false, V_MUTATE, h_mutate, L_WEBHOOK},
    {"GET", "/ui", false, V_UI, h_ui, L_MAIN},
    {"POST", "/explain", false, V_EXPLAIN, h_explain, L_MAIN},
};

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
            if (r->path[rl - 1] == '/') {
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

/* ------------------------------------------------------------ MHD glue -- */

static enum MHD_Result respond(struct MHD_Connection *conn, int status, char *body,
                               const char *ctype, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned int)status, r);
    MHD_destroy_response(r);
    return ret;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    gp_server *s = cls;
    req_state *rs = *con_cls;
    if (!rs) {
        rs = xcalloc(1, sizeof *rs);
        rs->start = gp_mono_s();
        gp_buf_init(&rs->body, s->max_body);
        *con_cls = rs;
        const char *tail;
        bool known;
        rs->route = match_route(s, method, url, &tail, &known);
        if (rs->route < 0) {
            count(s, -1, 404, rs->start);
            char msg[700];
            if (known) {
                snprintf(msg, sizeof msg, "method %.16s is not allowed on %.200s", method, url);
                return respond(conn, 405, error_json(msg), "application/json",
                               strcmp(method, "GET") == 0 ? "POST" : "GET");
            }
            if (s->webhook)
                snprintf(msg, sizeof msg,
                         "no route %.16s %.200s; the webhook listener serves POST /mutate and "
                         "GET /healthz", method, url);
            else
                snprintf(msg, sizeof msg,
                         "no route %.16s %.200s; routes: POST %.60s/filter, %.60s/prioritize, "
                         "%.60s/bind; GET /healthz, /readyz, /metrics, /inspect[/NODE], /ui; "
                         "POST /explain",
                         method, url, s->prefix, s->prefix, s->prefix);
            return respond(conn, 404, error_json(msg), "application/json", NULL);
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->max_body) {
            rs->too_large = true;
            atomic_fetch_add(&s->too_large, 1);
            count(s, rs->route, 413, rs->start);
            char msg[128];
            snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes",
                     s->max_body);
            return respond(conn, 413, error_json(msg), "application/json", NULL);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rs->too_large && gp_buf_append(&rs->body, upload, *upload_size)) {
            rs->too_large = true;
            gp_buf_free(&rs->body);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (rs->too_large) {
        atomic_fetch_add(&s->too_large, 1);
        count(s, rs->route, 413, rs->start);
        char msg[128];
        snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes", s->max_body);
        return respond(conn, 413, error_json(msg), "application/json", NULL);
    }
    const route *r = &routes[rs->route];
    const char *tail = NULL;
    if (r->path[strlen(r->path) - 1] == '/')
        tail = url + strlen(r->path);
    char *out = NULL;
    const char *ctype = "application/json";
    int status = r->fn(s, conn, rs, tail, &out, &ctype);
    count(s, rs->route, status, rs->start);
    return respond(conn, status, out, ctype, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    req_state *rs = *con_cls;
    if (rs) {
        gp_buf_free(&rs->body);
        free(rs);
        *con_cls = NULL;
    }
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
    s->webhook = cfg->webhook;
    if (hooks)
        s->hooks = *hooks;
    s->max_body = cfg->max_body ? cfg->max_body : GP_MAX_BODY_DEFAULT;
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

    /* ITC: the polling threads are woken at stop, not at their next timeout */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned threads = cfg->threads ? cfg->threads : 2;
    bool tls = cfg->tls_cert || cfg->tls_key;
    if (tls) {
        if (!cfg->tls_cert || !cfg->tls_key) {
            gp_fail(err, "TLS needs both --tls-cert and --tls-key");
            goto fail;
        }
        s->tls_cert = gp_read_file(cfg->tls_cert, 1 << 20, NULL, err);
        s->tls_key = s->tls_cert ? gp_read_file(cfg->tls_key, 1 << 20, NULL, err) : NULL;
        if (!s->tls_key)
            goto fail;
        flags |= MHD_USE_TLS;
    }
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
        MHD_OPTION_HTTPS_MEM_CERT, tls ? s->tls_cert : NULL, MHD_OPTION_HTTPS_MEM_KEY,
        tls ? s->tls_key : NULL, MHD_OPTION_END);
    if (!s->d) {
        gp_fail(err, "cannot listen on %s (address in use, or not an address of this host?)",
                cfg->listen);
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return s;
fail:
    free(s->tls_cert);
    free(s->tls_key);
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
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->tls_cert);
    free(s->tls_key);
    free(s);
}
