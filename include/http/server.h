/* server.h -- the HTTP front: the route table, bounded bodies, HTTP/1.1
 * (libmicrohttpd) and, with TLS, HTTP/2 (tlsfront.h, h2.h). */
#ifndef GP_SERVER_H
#define GP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "model/podreq.h"
#include "lib/metrics.h"
#include "lib/util.h"

/* 4 MiB: with nodeCacheCapable (node names only) a 5,000-node filter body is
 * about 100 KiB plus the pod; clusters sending full Nodes raise it. */
#define GP_MAX_BODY_DEFAULT (4u << 20)
/* Memory all requests in flight may hold together: bodies as they arrive, then
 * the estimated cost of decoding them (jsoncost.h). Past it: 503, or 413 for
 * a request that could never fit. */
#define GP_MAX_INFLIGHT_DEFAULT (32u << 20)
/* Open connections at most (each costs a libmicrohttpd buffer, and TLS state). */
#define GP_MAX_CONNECTIONS 256

typedef struct gp_server_config {
    const char *listen;         /* "HOST:PORT", "[V6]:PORT" or ":PORT"; port 0 = any */
    const char *url_prefix;     /* verbs live under it; "" or NULL = root */
    size_t max_body;            /* request bodies past this get 413 */
    const char *tls_cert;       /* PEM files; both or neither */
    const char *tls_key;
    unsigned threads;           /* worker threads; 0 = 2 */
    /* PEM file of the CA(s) whose client certificates may call the verbs
     * (filter, prioritize, bind); needs TLS. NULL: the verbs are open (logged). */
    const char *client_ca;
    size_t max_inflight;        /* see GP_MAX_INFLIGHT_DEFAULT; 0 = default */
    bool show_uids;             /* /inspect shows pod uids (hidden by default) */
    /* Non-NULL: this listener is the admission webhook (POST /mutate and
     * GET /healthz only; give it TLS, the API server calls webhooks over
     * HTTPS); the names say which resources ask gpupack (borrowed). */
    const gp_resource_names *webhook;
    /* With TLS, gpupack does the handshake itself and offers HTTP/2 (ALPN h2)
     * beside HTTP/1.1; true keeps libmicrohttpd's own TLS (HTTP/1.1 only). */
    bool no_http2;
    /* HTTP/2 connections: idle time before a GOAWAY, and the time a request
     * may take to arrive (0 = 60 s each; tests shorten them). */
    unsigned h2_idle_s, h2_request_s;
    unsigned handshake_s;       /* a TLS handshake must end within (0 = 10 s; HTTP/2 on) */
} gp_server_config;

/* Hooks the server calls from its threads (all optional). */
typedef struct gp_server_hooks {
    void *ud;
    /* /readyz: ready or not, with a line of detail (e.g. "stale: watch down 12s"). */
    bool (*ready)(void *ud, char *detail, size_t len);
    /* /metrics: the writers of the other modules, rendered after the
     * listener's, the extender's and the store's own families (borrowed;
     * NULL = none). */
    const gp_metrics *metrics;
    /* /inspect: returns an owned object merged into the answer (e.g. policies). */
    json_t *(*inspect)(void *ud);
    /* Asked as each verb (filter, prioritize, bind, preempt) is answered: false
     * when this replica should not keep the caller's connection -- it does not
     * lead (or may not bind right now). The answer then carries `Connection:
     * close`, so the caller's next call opens a new connection, which the
     * Service routes to the leader; a kept-alive connection would go on
     * reaching this replica whatever the endpoints say. NULL: always keep. */
    bool (*keep_verb_connection)(void *ud);
} gp_server_hooks;

typedef struct gp_server gp_server;

/* Starts listening; borrows e, c and hooks (they must outlive the server). */
gp_server *server_start(const gp_server_config *cfg, gp_extender *e, gp_cluster *c,
                        const gp_server_hooks *hooks, gp_err *err);
/* The bound port (useful with port 0). */
int server_port(const gp_server *s);
/* Stops the daemon (waits for requests in flight) and frees; accepts NULL. */
void server_stop(gp_server *s);

#endif
