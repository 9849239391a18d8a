/* main.c -- gpupack: flags -> config; signals; start and stop order. No logic. */
#include <curl/curl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack/cluster.h"
#include "pack/clusterfile.h"
#include "act/bindpipe.h"
#include "act/events.h"
#include "cli/explain_cli.h"
#include "sched/extender.h"
#include "cli/inspect_cli.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "ha/leader.h"
#include "ha/leader_label.h"
#include "ha/lease_kube.h"
#include "act/live.h"
#include "act/pdb_feed.h"
#include "sched/preempt.h"
#include "act/preempt_act.h"
#include "lib/flags.h"
#include "lib/log.h"
#include "model/podreq.h"
#include "policy/policy_store.h"
#include "http/server.h"
#include "sim/sim.h"

/* The release this tree is heading for. A build from a git checkout says
 * more: the Makefile passes `git describe` of a release tag
 * (GPUPACK_GIT_VERSION) or the commit (GPUPACK_GIT_COMMIT); a tarball
 * without .git says this. */
#define GPUPACK_BASE_VERSION "0.1.0"
#if defined(GPUPACK_GIT_VERSION)
#define GPUPACK_VERSION GPUPACK_GIT_VERSION
#elif defined(GPUPACK_GIT_COMMIT)
#define GPUPACK_VERSION GPUPACK_BASE_VERSION "+g" GPUPACK_GIT_COMMIT
#else
#define GPUPACK_VERSION GPUPACK_BASE_VERSION
#endif

#define GP_HEAP_MMAP_THRESHOLD (128 * 1024)   /* bytes: a block this large gets its own mapping */
#define GP_HEAP_TRIM_THRESHOLD (1024 * 1024)  /* bytes free at a heap's top before it shrinks */

typedef struct serve_opts {
    const char *cluster_file, *kubeconfig, *listen, *url_prefix, *policies_dir;
    const char *tls_cert, *tls_key, *client_ca;
    const char *webhook_listen, *webhook_cert, *webhook_key;
    size_t max_body, max_inflight;
    bool show_uids;
    bool http2;
    unsigned threads;
    double assume_ttl, watch_stall;
    unsigned bind_threads;
    int64_t aliyun_unit_mib;
    gp_events_level bind_events;
    bool leader_elect;
    const char *lease_ns, *lease_name, *identity, *leader_pod;
    double lease_duration, renew_deadline, retry_period, takeover_quiet;
} serve_opts;

static int set_log_level(void *base, const char *v, gp_err *err)
{
    gp_log_level l;
    if (gp_log_parse_level(v, &l))
        return gp_fail(err, "debug, info, warn or error, not \"%s\"", v);
    gp_log_set_level(l);
    return 0;
}

static int set_aliyun_unit(void *base, const char *v, gp_err *err)
{
    serve_opts *o = base;
    if (strcmp(v, "GiB") == 0)
        o->aliyun_unit_mib = 1024;
    else if (strcmp(v, "MiB") == 0)
        o->aliyun_unit_mib = 1;
    else
        return gp_fail(err, "GiB or MiB, not \"%s\"", v);
    return 0;
}

static int set_bind_events(void *base, const char *v, gp_err *err)
{
    serve_opts *o = base;
    if (events_level_parse(v, &o->bind_events))
        return gp_fail(err, "all, gpu or failures, not \"%s\"", v);
    return 0;
}

#define O(field) offsetof(serve_opts, field)
#define DUR(name, field, help) GP_FLAG(name, FLAG_DURATION, O(field), "D", help, .max = 3600)
static const gp_flag serve_flags[] = {
    GP_FLAG("--cluster", FLAG_STR, O(cluster_file), "FILE",
     "embedded mode: nodes (and pods) from a YAML/JSON List, no API server"),
    GP_FLAG("--kubeconfig", FLAG_STR, O(kubeconfig), "FILE",
     "live mode with this kubeconfig (default: in-cluster service account)"),
    GP_FLAG("--listen", FLAG_STR, O(listen), "HOST:PORT", "address to serve on (default 127.0.0.1:8765)"),
    GP_FLAG("--url-prefix", FLAG_STR, O(url_prefix), "P",
     "serve filter/prioritize/bind under P/ (match the urlPrefix)"),
    GP_FLAG("--policies", FLAG_STR, O(policies_dir), "DIR",
     "packing policy files (*.yaml), reloaded when they change"),
    GP_FLAG("--tls-cert", FLAG_STR, O(tls_cert), "FILE", "serve HTTPS with this certificate (PEM)"),
    GP_FLAG("--tls-key", FLAG_STR, O(tls_key), "FILE", "... and this key"),
    GP_FLAG("--client-ca", FLAG_STR, O(client_ca), "FILE",
     "filter/prioritize/bind need a client certificate signed by\n"
     "this CA (PEM; needs TLS); probes, /metrics, /inspect stay open"),
    GP_FLAG("--http2", FLAG_BOOL_ARG, O(http2), "true|false",
     "with TLS, offer HTTP/2 (ALPN h2) beside HTTP/1.1: kube-scheduler\n"
     "then sends every call over one connection (default true)"),
    GP_FLAG("--show-pod-uids", FLAG_BOOL_ARG, O(show_uids), "true|false",
     "/inspect shows pod uids (default false)"),
    GP_FLAG("--webhook-listen", FLAG_STR, O(webhook_listen), "HOST:PORT",
     "also serve the mutating admission webhook (HTTPS, POST /mutate;\n"
     "needs --webhook-cert and --webhook-key); bind then refuses GPU\n"
     "pods the webhook did not mutate"),
    GP_FLAG("--webhook-cert", FLAG_STR, O(webhook_cert), "FILE", "the webhook's certificate (PEM)"),
    GP_FLAG("--webhook-key", FLAG_STR, O(webhook_key), "FILE", "the webhook's key (PEM)"),
    GP_FLAG("--max-body", FLAG_SIZE, O(max_body), "BYTES",
     "largest request body accepted (default 4 MiB)", .min = 1),
    GP_FLAG("--max-inflight", FLAG_SIZE, O(max_inflight), "BYTES",
     "memory all requests in flight may hold, bodies and decoding\n"
     "(default 32 MiB; past it 503, or 413 for a request that never fits)",
     .min = 1),
    GP_FLAG("--threads", FLAG_UINT, O(threads), "N", "HTTP worker threads (default 2)", .min = 1, .max = 64),
    GP_FLAG("--assume-ttl", FLAG_DOUBLE, O(assume_ttl), "SEC",
     "live mode: release GPUs of a bind that never reported (default 120)", .min_open = true),
    GP_FLAG("--watch-stall", FLAG_DOUBLE, O(watch_stall), "SEC",
     "live mode: restart a watch silent this long (default 90)", .min_open = true),
    GP_FLAG("--bind-threads", FLAG_UINT, O(bind_threads), "N",
     "live mode: Bindings posted at once, off the HTTP threads (default 16)", .min = 1, .max = 64),
    GP_FLAG("--aliyun-unit", FLAG_FN, 0, "GiB|MiB",
     "unit of aliyun.com/gpu-mem on nodes and pods (default GiB)", .fn = set_aliyun_unit),
    GP_FLAG("--bind-events", FLAG_FN, 0, "all|gpu|failures",
     "live mode: which binds leave an Event on the pod (default\n"
     "failures; gpu adds GPUsAssigned for every pod that holds GPUs,\n"
     "all also the binds of pods without GPUs)", .fn = set_bind_events),
    GP_FLAG("--log-level", FLAG_FN, 0, "L", "debug, info, warn, error (default info)", .fn = set_log_level),
    GP_FLAG("--leader-elect", FLAG_BOOL, O(leader_elect), NULL,
     "run as one of several replicas: only the Lease holder binds"),
    DUR("--leader-elect-lease-duration", lease_duration, "(default 15s)"),
    DUR("--leader-elect-renew-deadline", renew_deadline, "(default 10s)"),
    DUR("--leader-elect-retry-period", retry_period, "(default 2s)"),
    DUR("--leader-elect-takeover-quiet", takeover_quiet,
        "no bind this long after taking over (default 1s)"),
    GP_FLAG("--leader-elect-resource-namespace", FLAG_STR, O(lease_ns), "NS", "(default gpupack-system)"),
    GP_FLAG("--leader-elect-resource-name", FLAG_STR, O(lease_name), "NAME", "the Lease (default gpupack)"),
    GP_FLAG("--leader-elect-identity", FLAG_STR, O(identity), "ID", "(default HOSTNAME_RANDOM)"),
    GP_FLAG("--leader-elect-pod", FLAG_STR, O(leader_pod), "NS/NAME",
     "this replica's Pod: the leader labels it gpupack.io/leader=true\n"
     "(the Service selects it; standbys stay Ready). Without it a\n"
     "standby reports not ready on /readyz instead"),
};
#undef DUR
#undef O

static const gp_command serve_cmd = {
    "gpupack serve", "[flags]",
    "Runs the extender: filter, prioritize and bind for kube-scheduler, /inspect, /metrics, /ui.",
    serve_flags, GP_ARRAY_LEN(serve_flags), NULL, 0};

/* Returns FLAGS_OK, FLAGS_HELP or FLAGS_ERROR (flags.h). */
static int parse_serve(int argc, char **argv, serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:8765";
    o->http2 = true;
    o->assume_ttl = 120;
    o->watch_stall = 90;
    o->aliyun_unit_mib = 1024;
    o->bind_events = GP_EVENTS_FAILURES;   /* docs/scale.md: an Event per bind is not free */
    o->lease_ns = "gpupack-system";
    o->lease_name = "gpupack";
    int rc = flags_parse(&serve_cmd, argc, argv, o, NULL, NULL);
    if (rc != FLAGS_OK)
        return rc;
    if (o->cluster_file && o->kubeconfig)
        return flags_error(&serve_cmd, "--cluster and --kubeconfig exclude each other");
    if (o->cluster_file && o->leader_elect)
        return flags_error(&serve_cmd, "--leader-elect needs live mode (not --cluster)");
    if (o->webhook_listen && (!o->webhook_cert || !o->webhook_key))
        return flags_error(&serve_cmd, "--webhook-listen needs --webhook-cert and --webhook-key: "
                                       "the API server calls webhooks over HTTPS only");
    return FLAGS_OK;
}

/* ------------------------------------------------------------- hooks -- */

typedef struct app {
    gp_live *live;
    gp_events *events;          /* live mode: Events on bound pods */
    gp_bindpipe *binds;         /* live mode: a decided bind carried out */
    policy_store *policies;     /* NULL: the built-in default policy */
    gp_leader *leader;          /* NULL: no leader election, this replica binds */
    gp_lease_kube *lease;
    gp_leader_label *label;     /* NULL: standbys say not ready instead */
    gp_metrics metrics;         /* the writers /metrics renders (wire_metrics) */
    gp_preempt *preempt;        /* live mode: priorities and preemption */
    gp_preempt_act *preempt_act;   /* ... its API calls and Events */
    gp_pdb_feed *pdbs;          /* live mode: the budgets preemption honours */
} app;

static void label_hook(void *ud, bool leading)
{
    leader_label_sync(ud, leading);
}

/* The requeue nudges only while this replica may bind (the pipe's gate). */
static bool may_bind_hook(void *ud)
{
    return bindpipe_may_bind(ud, NULL, NULL, 0);
}

/* The extender decides only from a map that is the API server's truth. */
static bool serving_hook(void *ud, char *why, size_t len)
{
    app *a = ud;
    return live_serving(a->live, why, len);
}

/* GPUs over capacity become Warning Events on the pod concerned. */
static void warn_hook(void *ud, const char *ns, const char *name, const char *uid,
                      const char *reason, const char *msg)
{
    app *a = ud;
    events_pod(a->events, ns, name, uid, true, reason, msg);
}

/* Verb connections stay open only to a replica that binds. kube-scheduler keeps
 * its extender connections alive, and a Service (kube-proxy) leaves established
 * connections where they were when the leader label moved: without this, a
 * frozen leader that wakes up fenced keeps getting binds over them and refuses
 * each one, for as long as kube-scheduler reuses them (seen in e2e_ha). */
static bool keep_verb_connection_hook(void *ud)
{
    app *a = ud;
    return !a->leader || leader_may_bind(a->leader, NULL);
}

static bool ready_hook(void *ud, char *detail, size_t len)
{
    app *a = ud;
    if (!a->live) {
        snprintf(detail, len, "embedded cluster");
        return true;
    }
    char wait[400];
    if (!live_serving(a->live, wait, sizeof wait)) {
        /* the verbs refuse meanwhile: a Service routes elsewhere */
        snprintf(detail, len, "waiting for the API server's state: %s", wait);
        return false;
    }
    if (a->leader && !a->label) {
        /* standbys are not ready, so the Service sends every verb to the leader */
        gp_leader_status st;
        leader_status(a->leader, &st);
        if (!st.may_bind) {
            if (st.leading)
                snprintf(detail, len, "leader %s, not binding yet (takeover quiet period or renew late)",
                         st.identity);
            else
                snprintf(detail, len, "standby %s: %s leads", st.identity,
                         st.holder[0] ? st.holder : "nobody");
            return false;
        }
    }
    char why[200] = "";
    if (live_stale(a->live, why, sizeof why))
        snprintf(detail, len, "serving possibly stale data: %s", why);
    return true;
}

/* /metrics: after the listener's, the extender's and the store's families,
 * each module's own writer, in this order. */
static void wire_metrics(app *a)
{
    metrics_init(&a->metrics);
    metrics_add(&a->metrics, live_metrics, a->live);
    metrics_add(&a->metrics, events_metrics, a->events);
    metrics_add(&a->metrics, preempt_metrics, a->preempt);
    if (a->live)   /* every API client of the process */
        metrics_add(&a->metrics, kube_metrics, NULL);
    if (a->binds)
        metrics_add(&a->metrics, bindpipe_metrics, a->binds);
    if (a->leader)
        metrics_add(&a->metrics, leader_metrics, a->leader);
    if (a->policies)
        metrics_add(&a->metrics, policy_store_metrics, a->policies);
}

/* The events sender gets its own API client, with the credentials live uses. */
static gp_events *start_events(const char *kubeconfig, gp_cluster *c, gp_err *err)
{
    gp_kube_auth auth = {0};
    int rc = kubeconfig && *kubeconfig ? kubeconfig_load(kubeconfig, NULL, &auth, err)
                                       : kube_auth_incluster(NULL, &auth, err);
    gp_events *ev = rc ? NULL : events_new(&auth, c, err);
    kube_auth_clear(&auth);
    return ev;
}

static json_t *inspect_hook(void *ud)
{
    app *a = ud;
    json_t *o = a->policies ? json_pack("{s:o}", "policies", policy_store_inspect(a->policies))
                            : json_pack("{s:{s:s}}", "policies", "active", "built-in default");
    if (a->leader)
        json_object_set_new(o, "leader", leader_inspect(a->leader));
    if (a->preempt)
        json_object_update_new(o, preempt_inspect(a->preempt));
    return o;
}

static void print_try_it(const serve_opts *o, int port)
{
    const char *colon = strrchr(o->listen, ':');
    int hl = colon ? (int)(colon - o->listen) : 0;
    char host[128];
    snprintf(host, sizeof host, "%.*s", hl, o->listen);
    if (!host[0] || strcmp(host, "0.0.0.0") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    char url[200], curl[PATH_MAX + 40];
    snprintf(url, sizeof url, "%s://%s:%d", o->tls_cert ? "https" : "http", host, port);
    /* with TLS the hints make curl trust the serving certificate itself (a
     * try-out's is self-signed; curl also takes a CA-issued one as the anchor) */
    if (o->tls_cert)
        snprintf(curl, sizeof curl, "curl -s --cacert %s", o->tls_cert);
    else
        snprintf(curl, sizeof curl, "curl -s");
    fprintf(stderr, "\ngpupack is serving the embedded cluster on %s -- try it:\n", url);
    fprintf(stderr, "  %s %s/inspect\n", curl, url);
    if (o->client_ca)
        fprintf(stderr, "  (filter, prioritize and bind need a client certificate signed by %s:\n"
                        "   add --cert FILE --key FILE to these)\n", o->client_ca);
    fprintf(stderr,
            "  %s -XPOST %s/filter -d @examples/filter-request.json\n"
            "  %s -XPOST %s/prioritize -d @examples/filter-request.json\n"
            "  %s -XPOST %s/bind -d @examples/bind-request.json\n",
            curl, url, curl, url, curl, url);
    fprintf(stderr, "  bin/gpupack inspect --server %s%s%s\n", url, o->tls_cert ? " --cacert " : "",
            o->tls_cert ? o->tls_cert : "");
    fprintf(stderr, "Ctrl-C stops it.\n\n");
}

/* Leader election over the Lease; binds wait for it (the bind pipe's gate). */
static int start_leader(const serve_opts *o, app *a, gp_err *err)
{
    char id[GP_LEADER_ID_MAX];
    if (o->identity)
        gp_strlcpy(id, o->identity, sizeof id);
    else
        leader_identity(id, sizeof id);
    double renew = o->renew_deadline > 0 ? o->renew_deadline : 10;
    /* each Lease call may take half the renew deadline (as kube-scheduler's client) */
    a->lease = lease_kube_new(live_kube(a->live), o->lease_ns, o->lease_name, renew / 2);
    gp_leader_config lc = {id, o->lease_duration, o->renew_deadline, o->retry_period,
                           o->takeover_quiet, NULL, NULL};
    if (o->leader_pod) {
        const char *slash = strchr(o->leader_pod, '/');
        if (!slash || slash == o->leader_pod || !slash[1] || strchr(slash + 1, '/') ||
            slash - o->leader_pod >= GP_NAME_MAX || strlen(slash + 1) >= GP_NAME_MAX)
            return gp_fail(err, "--leader-elect-pod: want NAMESPACE/NAME, got \"%.200s\"", o->leader_pod);
        char ns[GP_NAME_MAX];
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - o->leader_pod), o->leader_pod);
        a->label = leader_label_new(live_kube(a->live), ns, slash + 1, renew / 2);
        lc.on_step = label_hook;
        lc.on_step_ud = a->label;
    }
    gp_lease_store st = lease_kube_store(a->lease);
    a->leader = leader_new(&lc, &st, NULL, err);
    if (!a->leader)
        return -1;
    LOG_INFO("leader election on lease %s/%s as %s", o->lease_ns, o->lease_name, id);
    return leader_start(a->leader, err);
}

/* The store's source: the cluster file (embedded mode), or the API server
 * through live mode with its events sender, the bind path and, with
 * --leader-elect, the election. Fills the extender's binder. */
static int start_source(const serve_opts *o, app *a, gp_cluster *c, gp_extender_config *ecfg,
                        gp_err *err)
{
    if (o->cluster_file) {
        gp_clusterfile_stats st;
        if (clusterfile_load(c, o->cluster_file, o->aliyun_unit_mib, &st, err))
            return -1;
        LOG_INFO("embedded cluster %s: %d node%s, %d GPU%s, %d pod%s holding GPUs",
                 o->cluster_file, st.nodes, gp_s(st.nodes), st.gpus, gp_s(st.gpus), st.pods,
                 gp_s(st.pods));
        gp_heap_trim();   /* give the parsed file's memory back before serving */
        return 0;
    }
    gp_live_config lc = {.kubeconfig = o->kubeconfig, .assume_ttl_s = o->assume_ttl,
                         .watch_stall_s = o->watch_stall, .aliyun_unit_mib = o->aliyun_unit_mib};
    a->live = live_new(&lc, c, err);
    if (!a->live)
        return -1;
    a->events = start_events(o->kubeconfig, c, err);
    if (!a->events) {
        char msg[sizeof err->msg];
        gp_strlcpy(msg, err->msg, sizeof msg);
        return gp_fail(err, "events: %s", msg);
    }
    events_set_level(a->events, o->bind_events);
    ecfg->serving = serving_hook;
    ecfg->serving_ud = a;
    live_dra_hooks(a->live, ecfg);
    live_requeue_hooks(a->live, ecfg);
    live_set_warn(a->live, (gp_live_warn){warn_hook, a});
    ecfg->bind_threads = (int)o->bind_threads;
    a->preempt_act = preempt_act_new(a->live, a->events);
    gp_preempt_config pc = {.io = preempt_act_io(a->preempt_act)};
    a->preempt = preempt_new(c, &pc);
    ecfg->preempt = preempt_hooks(a->preempt);
    live_set_pod_observer(a->live, preempt_act_observer(a->preempt));
    if (o->leader_elect && start_leader(o, a, err))
        return -1;
    gp_bindpipe_config bc = {.c = c, .live = a->live, .leader = a->leader, .events = a->events};
    a->binds = bindpipe_new(&bc);
    ecfg->binder = bindpipe_binder();
    ecfg->binder_ud = a->binds;
    live_set_bind_gate(a->live, (gp_live_gate){may_bind_hook, a->binds});
    return 0;
}

/* The extender's listener, and the admission webhook's when asked. */
static int start_listeners(const serve_opts *o, app *a, gp_extender *e, gp_cluster *c,
                           const gp_resource_names *wnames, gp_server **s, gp_server **ws,
                           gp_err *err)
{
    gp_server_config scfg = {.listen = o->listen,       .url_prefix = o->url_prefix,
                             .max_body = o->max_body,   .tls_cert = o->tls_cert,
                             .tls_key = o->tls_key,     .threads = o->threads,
                             .client_ca = o->client_ca, .max_inflight = o->max_inflight,
                             .show_uids = o->show_uids, .no_http2 = !o->http2};
    wire_metrics(a);
    gp_server_hooks hooks = {a, ready_hook, &a->metrics, inspect_hook, keep_verb_connection_hook};
    *s = server_start(&scfg, e, c, &hooks, err);
    if (!*s)
        return -1;
    /* "(port N)" right after the address: scripts and tests read the port from it */
    LOG_INFO("gpupack " GPUPACK_VERSION " listening on %s (port %d)%s%s; %s", o->listen,
             server_port(*s), o->url_prefix ? ", verbs under " : "",
             o->url_prefix ? o->url_prefix : "",
             !o->tls_cert ? "HTTP/1.1" : o->http2 ? "HTTPS: HTTP/2 and HTTP/1.1" : "HTTPS: HTTP/1.1");
    if (!o->webhook_listen)
        return 0;
    gp_server_config wcfg = {.listen = o->webhook_listen, .max_body = o->max_body,
                             .tls_cert = o->webhook_cert, .tls_key = o->webhook_key,
                             .threads = 1, .max_inflight = o->max_inflight,
                             .webhook = wnames, .no_http2 = !o->http2};
    *ws = server_start(&wcfg, e, c, NULL, err);
    if (!*ws) {
        char msg[sizeof err->msg];
        gp_strlcpy(msg, err->msg, sizeof msg);
        return gp_fail(err, "webhook: %s", msg);
    }
    LOG_INFO("admission webhook: POST https://%s/mutate, bound to port %d", o->webhook_listen,
             server_port(*ws));
    return 0;
}

/* Stop order: no request in flight, then the Lease handed over (no bind can
 * follow), then the watchers, then the rest. Everything accepts NULL. */
static void stop_all(app *a, gp_server *s, gp_server *ws, gp_extender *e, gp_cluster *c)
{
    gp_err err;
    server_stop(ws);
    server_stop(s);
    /* the bind threads use the leader's fencing and the watch's client: they end
     * before either goes (a SIGTERM during slow binds crashed here, test_live) */
    extender_stop_binds(e);
    if (a->leader) {
        leader_stop(a->leader);
        if (a->label)   /* the Service stops routing here before the next leader labels itself */
            leader_label_sync(a->label, false);
        if (leader_release(a->leader, &err))
            LOG_WARN("leader election: could not release the lease (it expires instead): %s",
                     err.msg);
    }
    leader_free(a->leader);
    lease_kube_free(a->lease);
    leader_label_free(a->label);
    pdb_feed_stop(a->pdbs);     /* the feed and the worker's API calls use live's client */
    preempt_stop(a->preempt);
    live_free(a->live);
    preempt_free(a->preempt);
    preempt_act_free(a->preempt_act);
    events_free(a->events);
    extender_free(e);   /* its bind threads end first: they run the pipe */
    bindpipe_free(a->binds);
    policy_store_free(a->policies);
    cluster_free(c);
}

static int cmd_serve(int argc, char **argv)
{
    serve_opts o;
    int prc = parse_serve(argc, argv, &o);
    if (prc != FLAGS_OK)
        return prc == FLAGS_HELP ? 0 : 2;
    /* glibc gives each thread that allocates (HTTP, bind, watch, Events) its own
     * arena, up to 8 per core, and each keeps what it freed: two arenas held
     * 6 MiB less than that at 5,000 nodes and 20,000 pods (bench/results/scale.md).
     * One arena: malloc_trim shrinks only the main arena's top, so a thread
     * arena kept what a burst (the binds and pending pods that pile up while an
     * API server restarts) left there, a step of RSS that stayed (bin/churnmem:
     * 25.37 -> 28.52 MiB at one restart with two arenas, 25.75 -> 25.82 with
     * one; docs/reliability.md). It costs the verbs little: 5 % of the rate of
     * 16 concurrent filters, none for one client (bench/malloc-ab.sh). The
     * environment variable still wins. */
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 1);
    /* Blocks from 128 KiB up (an /inspect answer, a LIST page, a large filter
     * answer) are mapped for themselves and unmapped when freed. glibc starts
     * so, but raises the threshold to the largest such block freed (up to
     * 32 MiB) and the trim threshold with it: from then on those blocks come
     * from the arenas, whose free space the allocator hands out again and
     * again, faulting it back in. A fixed value keeps the resident size near
     * what is in use (docs/reliability.md, the 60-minute soaks). */
    if (!getenv("MALLOC_MMAP_THRESHOLD_"))
        mallopt(M_MMAP_THRESHOLD, GP_HEAP_MMAP_THRESHOLD);
    /* A heap's top shrinks only past 1 MiB free. At 128 KiB, a 5,000-node
     * filter whose blocks (names, verdicts, memo tables: ~450 KiB) happened
     * to lie at its thread arena's top gave them back at every request
     * (four madvise calls) and faulted them in again at the next: three
     * times the CPU per request, in one process out of three or four,
     * depending on where its first blocks landed. Live mode still hands
     * every free page back once a minute (malloc_trim ignores the threshold). */
    if (!getenv("MALLOC_TRIM_THRESHOLD_"))
        mallopt(M_TRIM_THRESHOLD, GP_HEAP_TRIM_THRESHOLD);
    /* signals go to sigwait below, never to the worker threads */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    int rc = 1;
    gp_err err;
    app a = {0};
    gp_cluster *c = cluster_new();
    gp_extender *e = NULL;
    gp_server *s = NULL, *ws = NULL;
    gp_extender_config ecfg = {0};
    gp_resource_names wnames;
    podreq_default_names(&wnames);
    wnames.aliyun_unit_mib = o.aliyun_unit_mib;
    ecfg.webhook_names = o.webhook_listen ? &wnames : NULL;
    if (start_source(&o, &a, c, &ecfg, &err)) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
    if (o.policies_dir) {
        if (policy_store_open(o.policies_dir, &a.policies, &err) ||
            policy_store_start(a.policies, 0, &err)) {
            LOG_ERROR("--policies %s: %s", o.policies_dir, err.msg);
            goto out;
        }
        ecfg.policies = policy_store_current;
        ecfg.policies_ud = a.policies;
    }
    e = extender_new(c, &ecfg);
    if ((a.preempt && preempt_start(a.preempt, e, true, &err)) ||
        (a.preempt && !(a.pdbs = pdb_feed_start(live_kube(a.live), a.preempt, &err))) ||
        (a.live && live_start(a.live, e, &err)) ||
        start_listeners(&o, &a, e, c, &wnames, &s, &ws, &err)) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
    if (o.cluster_file)
        print_try_it(&o, server_port(s));
    int sig = 0;
    for (;;) {
        sigwait(&sigs, &sig);
        if (sig != SIGHUP)
            break;
        if (a.policies && policy_store_reload(a.policies, &err))
            LOG_WARN("SIGHUP: policy reload rejected: %s", err.msg);
    }
    LOG_INFO("signal %d: shutting down", sig);
    rc = 0;
out:
    stop_all(&a, s, ws, e, c);
    curl_global_cleanup();
    return rc;
}

static const gp_command version_cmd = {"gpupack version", NULL, "Prints the version.",
                                       NULL, 0, NULL, 0};

static int cmd_version(int argc, char **argv)
{
    int rc = flags_parse(&version_cmd, argc, argv, NULL, NULL, NULL);
    if (rc != FLAGS_OK)
        return rc == FLAGS_HELP ? 0 : 2;
    printf("gpupack %s\n", GPUPACK_VERSION);
    return 0;
}

static int cmd_inspect(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = inspect_main(argc, argv);
    curl_global_cleanup();
    return rc;
}

static int cmd_explain(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = explain_main(argc, argv);
    curl_global_cleanup();
    return rc;
}

static int cmd_policy(int argc, char **argv)
{
    return policy_check_main(argc, argv);
}

static int cmd_simulate(int argc, char **argv)
{
    return sim_main(argc, argv);
}

static const struct command {
    const char *name, *synopsis, *summary;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {"serve", "[flags]", "run the extender", cmd_serve},
    {"inspect", "[flags] [NODE]", "per-node, per-GPU allocation table", cmd_inspect},
    {"explain", "NAMESPACE/POD [flags]", "why a pending pod fits no node, and what would help",
     cmd_explain},
    {"policy", "check FILE|DIR...", "validate policy files (exit 1 on errors)", cmd_policy},
    {"simulate", "--nodes N.csv --pods P.csv [flags]", "replay a trace through the placement code",
     cmd_simulate},
    {"version", "", "print the version (also --version, -V)", cmd_version},
};

static void usage(FILE *f)
{
    fprintf(f, "gpupack %s -- a kube-scheduler extender that packs pods onto shared GPUs\n\n",
            GPUPACK_VERSION);
    fprintf(f, "usage:\n");
    for (size_t i = 0; i < GP_ARRAY_LEN(commands); i++) {
        char head[96];
        snprintf(head, sizeof head, "gpupack %s %s", commands[i].name, commands[i].synopsis);
        if (strlen(head) < 44)
            fprintf(f, "  %-44s %s\n", head, commands[i].summary);
        else
            fprintf(f, "  %s\n  %-44s %s\n", head, "", commands[i].summary);
    }
    fprintf(f, "\n'gpupack COMMAND --help' shows a command's flags.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        cmd = "version";
    for (size_t i = 0; i < GP_ARRAY_LEN(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gpupack: unknown command %s\ntry 'gpupack --help'\n", argv[1]);
    return 2;
}
