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
#include "sched/events.h"
#include "cli/explain_cli.h"
#include "sched/extender.h"
#include "cli/inspect_cli.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "ha/leader.h"
#include "ha/leader_label.h"
#include "ha/lease_kube.h"
#include "sched/live.h"
#include "lib/log.h"
#include "model/podreq.h"
#include "policy/policy_store.h"
#include "http/server.h"
#include "sim/sim.h"

#define GPUPACK_VERSION "0.1.0"

typedef struct serve_opts {
    const char *cluster_file, *kubeconfig, *listen, *url_prefix, *policies_dir;
    const char *tls_cert, *tls_key, *client_ca;
    const char *webhook_listen, *webhook_cert, *webhook_key;
    size_t max_body, max_inflight;
    bool show_uids;
    unsigned threads;
    double assume_ttl, watch_stall;
    unsigned bind_threads;
    int64_t aliyun_unit_mib;
    gp_events_level bind_events;
    bool leader_elect;
    const char *lease_ns, *lease_name, *identity, *leader_pod;
    double lease_duration, renew_deadline, retry_period, takeover_quiet;
} serve_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "gpupack " GPUPACK_VERSION " -- a kube-scheduler extender that packs pods onto shared GPUs\n"
            "\n"
            "usage:\n"
            "  gpupack serve [flags]          run the extender\n"
            "  gpupack inspect [--server URL] [--json] [NODE]\n"
            "                                 per-node, per-GPU allocation table\n"
            "  gpupack explain NAMESPACE/POD [--server URL | --cluster FILE [--policies DIR]]\n"
            "                [--pod FILE|-] [--kubeconfig FILE] [--json]\n"
            "                                 why a pending pod fits no node, and what would help\n"
            "  gpupack policy check FILE|DIR...  validate policy files (exit 1 on errors)\n"
            "  gpupack simulate --nodes N.csv --pods P.csv --policy FILE [--seeds 42..51] ...\n"
            "                                 replay a trace through the placement code\n"
            "  gpupack version\n"
            "\n"
            "serve flags:\n"
            "  --cluster FILE       embedded mode: nodes (and pods) from a YAML/JSON List, no API server\n"
            "  --kubeconfig FILE    live mode with this kubeconfig (default: in-cluster service account)\n"
            "  --listen HOST:PORT   address to serve on (default 127.0.0.1:8765)\n"
            "  --url-prefix P       serve filter/prioritize/bind under P/ (match the urlPrefix)\n"
            "  --policies DIR       packing policy files (*.yaml), reloaded when they change\n"
            "  --tls-cert FILE --tls-key FILE   serve HTTPS\n"
            "  --client-ca FILE     filter/prioritize/bind need a client certificate signed by\n"
            "                       this CA (PEM; needs TLS); probes, /metrics, /inspect stay open\n"
            "  --show-pod-uids true|false  /inspect shows pod uids (default false)\n"
            "  --webhook-listen HOST:PORT --webhook-cert FILE --webhook-key FILE\n"
            "                       also serve the mutating admission webhook (HTTPS, POST /mutate);\n"
            "                       bind then refuses GPU pods the webhook did not mutate\n"
            "  --max-body BYTES     largest request body accepted (default %u)\n"
            "  --max-inflight BYTES memory all requests in flight may hold, bodies and decoding\n"
            "                       (default %u; past it 503, or 413 for a request that never fits)\n"
            "  --threads N          HTTP worker threads (default 2)\n"
            "  --assume-ttl SEC     live mode: release GPUs of a bind that never reported (default 120)\n"
            "  --watch-stall SEC    live mode: restart a watch silent this long (default 90)\n"
            "  --bind-threads N     live mode: Bindings posted at once, off the HTTP threads (default 16)\n"
            "  --aliyun-unit GiB|MiB  unit of aliyun.com/gpu-mem on nodes and pods (default GiB)\n"
            "  --bind-events all|gpu|failures  live mode: which binds leave an Event on the pod\n"
            "                       (default gpu: a pod without GPUs gets kube-scheduler's\n"
            "                       Scheduled only, which says the same)\n"
            "  --log-level L        debug, info, warn, error (default info)\n"
            "  --leader-elect       run as one of several replicas: only the Lease holder binds\n"
            "  --leader-elect-lease-duration D   (default 15s)\n"
            "  --leader-elect-renew-deadline D   (default 10s)\n"
            "  --leader-elect-retry-period D     (default 2s)\n"
            "  --leader-elect-takeover-quiet D   no bind this long after taking over (default 1s)\n"
            "  --leader-elect-resource-namespace NS  (default gpupack-system)\n"
            "  --leader-elect-resource-name NAME     the Lease (default gpupack)\n"
            "  --leader-elect-identity ID   (default HOSTNAME_RANDOM)\n"
            "  --leader-elect-pod NS/NAME   this replica's Pod: the leader labels it gpupack.io/leader=true\n"
            "                       (the Service selects it; standbys stay Ready). Without it a\n"
            "                       standby reports not ready on /readyz instead\n",
            GP_MAX_BODY_DEFAULT, GP_MAX_INFLIGHT_DEFAULT);
}

typedef struct flag {
    const char *name;
    int kind;          /* 0 string, 1 size, 2 uint, 3 double, 4 duration (15s, 500ms, 1m), 5 bool */
    size_t off;
} flag;

#define F(n, k, field) {n, k, offsetof(serve_opts, field)}
static const flag flags[] = {
    F("--cluster", 0, cluster_file),   F("--kubeconfig", 0, kubeconfig),
    F("--listen", 0, listen),          F("--url-prefix", 0, url_prefix),
    F("--policies", 0, policies_dir),  F("--tls-cert", 0, tls_cert),
    F("--tls-key", 0, tls_key),        F("--max-body", 1, max_body),
    F("--threads", 2, threads),        F("--assume-ttl", 3, assume_ttl),
    F("--watch-stall", 3, watch_stall), F("--bind-threads", 2, bind_threads),
    F("--client-ca", 0, client_ca),    F("--max-inflight", 1, max_inflight),
    F("--show-pod-uids", 5, show_uids),
    F("--webhook-listen", 0, webhook_listen), F("--webhook-cert", 0, webhook_cert),
    F("--webhook-key", 0, webhook_key),
    F("--leader-elect-lease-duration", 4, lease_duration),
    F("--leader-elect-renew-deadline", 4, renew_deadline),
    F("--leader-elect-retry-period", 4, retry_period),
    F("--leader-elect-takeover-quiet", 4, takeover_quiet),
    F("--leader-elect-resource-namespace", 0, lease_ns),
    F("--leader-elect-resource-name", 0, lease_name),
    F("--leader-elect-identity", 0, identity),
    F("--leader-elect-pod", 0, leader_pod),
};
#undef F

static int parse_serve(int argc, char **argv, serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:8765";
    o->assume_ttl = 120;
    o->watch_stall = 90;
    o->aliyun_unit_mib = 1024;
    o->bind_events = GP_EVENTS_GPU;
    o->lease_ns = "gpupack-system";
    o->lease_name = "gpupack";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        /* the one boolean flag: --leader-elect[=true|false] */
        if (strcmp(a, "--leader-elect") == 0 || strcmp(a, "--leader-elect=true") == 0 ||
            strcmp(a, "--leader-elect=false") == 0) {
            o->leader_elect = strcmp(a, "--leader-elect=false") != 0;
            continue;
        }
        /* --flag value, or --flag=value */
        char name[64];
        const char *v;
        const char *eq = strchr(a, '=');
        if (eq && strncmp(a, "--", 2) == 0) {
            if ((size_t)(eq - a) >= sizeof name) {
                fprintf(stderr, "gpupack serve: unknown flag %s (see gpupack serve --help)\n", a);
                return -1;
            }
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpupack serve: %s needs a value (or is unknown)\n", a);
                return -1;
            }
            gp_strlcpy(name, a, sizeof name);
            v = argv[++i];
        }
        a = name;
        if (strcmp(a, "--log-level") == 0) {
            gp_log_level l;
            if (gp_log_parse_level(v, &l)) {
                fprintf(stderr, "gpupack serve: --log-level: debug, info, warn or error\n");
                return -1;
            }
            gp_log_set_level(l);
            continue;
        }
        if (strcmp(a, "--bind-events") == 0) {
            if (events_level_parse(v, &o->bind_events)) {
                fprintf(stderr, "gpupack serve: --bind-events: all, gpu or failures\n");
                return -1;
            }
            continue;
        }
        if (strcmp(a, "--aliyun-unit") == 0) {
            if (strcmp(v, "GiB") == 0)
                o->aliyun_unit_mib = 1024;
            else if (strcmp(v, "MiB") == 0)
                o->aliyun_unit_mib = 1;
            else {
                fprintf(stderr, "gpupack serve: --aliyun-unit: GiB or MiB\n");
                return -1;
            }
            continue;
        }
        const flag *f = NULL;
        for (size_t k = 0; k < GP_ARRAY_LEN(flags); k++)
            if (strcmp(a, flags[k].name) == 0)
                f = &flags[k];
        if (!f) {
            fprintf(stderr, "gpupack serve: unknown flag %s (see gpupack serve --help)\n", a);
            return -1;
        }
        char *field = (char *)o + f->off, *end;
        switch (f->kind) {
        case 0:
            *(const char **)field = v;
            break;
        case 1:
        case 2: {
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || !*v || n == 0 || (f->kind == 2 && n > 64)) {
                fprintf(stderr, "gpupack serve: %s: %s is not a valid number\n", a, v);
                return -1;
            }
            if (f->kind == 1)
                *(size_t *)field = (size_t)n;
            else
                *(unsigned *)field = (unsigned)n;
            break;
        }
        case 4: {
            double d = strtod(v, &end);
            double unit = strcmp(end, "ms") == 0 ? 0.001 : strcmp(end, "m") == 0 ? 60 : 1;
            if ((*end && strcmp(end, "s") != 0 && unit == 1) || end == v || !(d > 0) || d * unit > 3600) {
                fprintf(stderr, "gpupack serve: %s: %s is not a duration such as 15s or 500ms\n", a, v);
                return -1;
            }
            *(double *)field = d * unit;
            break;
        }
        case 5:
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
                fprintf(stderr, "gpupack serve: %s: true or false\n", a);
                return -1;
            }
            *(bool *)field = v[0] == 't';
            break;
        default: {
            double d = strtod(v, &end);
            if (*end || !*v || d <= 0) {
                fprintf(stderr, "gpupack serve: %s: %s is not a positive number\n", a, v);
                return -1;
            }
            *(double *)field = d;
        }
        }
    }
    if (o->cluster_file && o->kubeconfig) {
        fprintf(stderr, "gpupack serve: --cluster and --kubeconfig exclude each other\n");
        return -1;
    }
    if (o->cluster_file && o->leader_elect) {
        fprintf(stderr, "gpupack serve: --leader-elect needs live mode (not --cluster)\n");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- hooks -- */

typedef struct app {
    gp_live *live;
    gp_events *events;          /* live mode: Events on bound pods */
    gp_binder_fn binder;        /* live mode: the binder the events hook wraps */
    void *binder_ud;
    policy_store *policies;     /* NULL: the built-in default policy */
    gp_leader *leader;          /* NULL: no leader election, this replica binds */
    gp_lease_kube *lease;
    gp_leader_label *label;     /* NULL: standbys say not ready instead */
} app;

static void label_hook(void *ud, bool leading)
{
    leader_label_sync(ud, leading);
}

/* Only a leader with a complete map binds (live.c asks before every bind). */
static bool bind_gate(void *ud, double *budget_s)
{
    app *a = ud;
    return live_ready(a->live) && leader_may_bind(a->leader, budget_s);
}

static bool ready_hook(void *ud, char *detail, size_t len)
{
    app *a = ud;
    if (!a->live) {
        snprintf(detail, len, "embedded cluster");
        return true;
    }
    if (!live_ready(a->live)) {
        snprintf(detail, len, "waiting for the first full list of nodes and pods");
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

static void metrics_hook(void *ud, gp_buf *out)
{
    app *a = ud;
    int stale = 0, ready = 1;
    if (a->live) {
        char why[8];
        stale = live_stale(a->live, why, sizeof why);
        ready = live_ready(a->live);
    }
    (void)!gp_buf_printf(out,
                         "# HELP gpupack_cluster_ready 1 once the first full list was applied.\n"
                         "# TYPE gpupack_cluster_ready gauge\ngpupack_cluster_ready %d\n"
                         "# HELP gpupack_cluster_stale 1 while the API server watch is down.\n"
                         "# TYPE gpupack_cluster_stale gauge\ngpupack_cluster_stale %d\n",
                         ready, stale);
    if (a->live) {
        gp_live_stats ls;
        live_stats(a->live, &ls);
        const struct {
            const char *res;
            const gp_reflector_stats *st;
        } rs[] = {{"nodes", &ls.nodes}, {"pods", &ls.pods}};
        (void)!gp_buf_printf(out, "# HELP gpupack_watch_events_total Watch events applied, by resource and kind.\n"
                                  "# TYPE gpupack_watch_events_total counter\n");
        for (size_t i = 0; i < GP_ARRAY_LEN(rs); i++)
            (void)!gp_buf_printf(out,
                                 "gpupack_watch_events_total{resource=\"%s\",kind=\"event\"} %lu\n"
                                 "gpupack_watch_events_total{resource=\"%s\",kind=\"bookmark\"} %lu\n"
                                 "gpupack_watch_events_total{resource=\"%s\",kind=\"malformed\"} %lu\n",
                                 rs[i].res, rs[i].st->events, rs[i].res, rs[i].st->bookmarks,
                                 rs[i].res, rs[i].st->bad_events);
        (void)!gp_buf_printf(out, "# HELP gpupack_lists_total Full LISTs, by resource and outcome.\n"
                                  "# TYPE gpupack_lists_total counter\n");
        for (size_t i = 0; i < GP_ARRAY_LEN(rs); i++)
            (void)!gp_buf_printf(out,
                                 "gpupack_lists_total{resource=\"%s\",result=\"ok\"} %lu\n"
                                 "gpupack_lists_total{resource=\"%s\",result=\"failed\"} %lu\n",
                                 rs[i].res, rs[i].st->lists, rs[i].res, rs[i].st->list_failures);
        (void)!gp_buf_printf(out, "# HELP gpupack_list_page_shrinks_total LIST pages asked again with half the limit (too large).\n"
                                  "# TYPE gpupack_list_page_shrinks_total counter\n");
        for (size_t i = 0; i < GP_ARRAY_LEN(rs); i++)
            (void)!gp_buf_printf(out, "gpupack_list_page_shrinks_total{resource=\"%s\"} %lu\n",
                                 rs[i].res, rs[i].st->page_shrinks);
        (void)!gp_buf_printf(out, "# HELP gpupack_watches_total Watch requests, by resource and outcome.\n"
                                  "# TYPE gpupack_watches_total counter\n");
        for (size_t i = 0; i < GP_ARRAY_LEN(rs); i++)
            (void)!gp_buf_printf(out,
                                 "gpupack_watches_total{resource=\"%s\",result=\"ok\"} %lu\n"
                                 "gpupack_watches_total{resource=\"%s\",result=\"failed\"} %lu\n"
                                 "gpupack_watches_total{resource=\"%s\",result=\"expired\"} %lu\n",
                                 rs[i].res, rs[i].st->watches, rs[i].res, rs[i].st->watch_failures,
                                 rs[i].res, rs[i].st->expired);
        (void)!gp_buf_printf(out,
                             "# HELP gpupack_api_binds_total Bindings posted to the API server, by outcome.\n"
                             "# TYPE gpupack_api_binds_total counter\n"
                             "gpupack_api_binds_total{result=\"bound\"} %lu\n"
                             "gpupack_api_binds_total{result=\"refused\"} %lu\n"
                             "gpupack_api_binds_total{result=\"unknown\"} %lu\n"
                             "# HELP gpupack_binds_settled_total Unknown bind outcomes settled by a GET, by what the GET showed.\n"
                             "# TYPE gpupack_binds_settled_total counter\n"
                             "gpupack_binds_settled_total{result=\"bound\"} %lu\n"
                             "gpupack_binds_settled_total{result=\"released\"} %lu\n"
                             "# HELP gpupack_assumed_expired_total Assumed pods released because their bind never reported.\n"
                             "# TYPE gpupack_assumed_expired_total counter\n"
                             "gpupack_assumed_expired_total %lu\n",
                             ls.bound, ls.refused, ls.unknown, ls.settled_bound,
                             ls.settled_released, ls.assumed_expired);
        (void)!gp_buf_printf(out,
                             "# HELP gpupack_pods_bypassed_total Pods found bound without gpupack's bind that ask its resources, accounted on their node.\n"
                             "# TYPE gpupack_pods_bypassed_total counter\n"
                             "gpupack_pods_bypassed_total %lu\n",
                             ls.bypassed);
        live_metrics(a->live, out);
    }
    events_metrics(a->events, out);
    if (a->live)
        kube_metrics(out);
    if (a->leader) {
        gp_live_stats ls;
        live_stats(a->live, &ls);
        leader_metrics(a->leader, out);
        (void)!gp_buf_printf(out,
                             "# HELP gpupack_binds_refused_total Binds refused because this replica does not lead.\n"
                             "# TYPE gpupack_binds_refused_total counter\ngpupack_binds_refused_total %lu\n",
                             ls.binds_refused);
    }
    if (a->policies)
        (void)!policy_store_metrics(a->policies, out);
}

/* The bind path's one events hook: the binder's outcome becomes an Event. */
static gp_bind_outcome bind_with_events(void *ud, const gp_bind_call *call, gp_err *err)
{
    app *a = ud;
    gp_bind_outcome o = a->binder(a->binder_ud, call, err);
    events_bind_result(a->events, call, o == GP_BIND_BOUND, o == GP_BIND_BOUND ? NULL : err->msg);
    return o;
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
    return o;
}

static void print_try_it(const char *listen, int port)
{
    const char *colon = strrchr(listen, ':');
    int hl = colon ? (int)(colon - listen) : 0;
    char host[128];
    snprintf(host, sizeof host, "%.*s", hl, listen);
    if (!host[0] || strcmp(host, "0.0.0.0") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    fprintf(stderr,
            "\ngpupack is serving the embedded cluster on http://%s:%d -- try it:\n"
            "  curl -s http://%s:%d/inspect\n"
            "  curl -s -XPOST http://%s:%d/filter -d @examples/filter-request.json\n"
            "  curl -s -XPOST http://%s:%d/prioritize -d @examples/filter-request.json\n"
            "  curl -s -XPOST http://%s:%d/bind -d @examples/bind-request.json\n"
            "  bin/gpupack inspect --server http://%s:%d\n"
            "Ctrl-C stops it.\n\n",
            host, port, host, port, host, port, host, port, host, port, host, port);
}

/* Leader election over the Lease; binds wait for it (bind_gate). */
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
    gp_live_gate gate = {bind_gate, a};
    live_set_bind_gate(a->live, gate);
    LOG_INFO("leader election on lease %s/%s as %s", o->lease_ns, o->lease_name, id);
    return leader_start(a->leader, err);
}

static int cmd_serve(int argc, char **argv)
{
    serve_opts o;
    if (parse_serve(argc, argv, &o))
        return 2;
    /* glibc gives each thread that allocates (HTTP, bind, watch, Events) its own
     * arena, up to 8 per core, and each keeps what it freed: two arenas held
     * 6 MiB less at 5,000 nodes and 20,000 pods (bench/results/scale.md). The
     * environment variable still wins. */
    if (!getenv("MALLOC_ARENA_MAX"))
        mallopt(M_ARENA_MAX, 2);
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
    if (o.webhook_listen && (!o.webhook_cert || !o.webhook_key)) {
        LOG_ERROR("--webhook-listen needs --webhook-cert and --webhook-key: the API server calls "
                  "webhooks over HTTPS only");
        goto out;
    }
    ecfg.webhook_names = o.webhook_listen ? &wnames : NULL;

    if (o.cluster_file) {
        gp_clusterfile_stats st;
        if (clusterfile_load(c, o.cluster_file, o.aliyun_unit_mib, &st, &err)) {
            LOG_ERROR("%s", err.msg);
            goto out;
        }
        LOG_INFO("embedded cluster %s: %d nodes, %d GPUs, %d pods holding GPUs", o.cluster_file,
                 st.nodes, st.gpus, st.pods);
        malloc_trim(0);   /* give the parsed file's memory back before serving */
    } else {
        gp_live_config lc = {.kubeconfig = o.kubeconfig, .assume_ttl_s = o.assume_ttl,
                             .watch_stall_s = o.watch_stall, .aliyun_unit_mib = o.aliyun_unit_mib};
        a.live = live_new(&lc, c, &err);
        if (!a.live) {
            LOG_ERROR("%s", err.msg);
            goto out;
        }
        a.binder = live_binder();
        a.binder_ud = a.live;
        a.events = start_events(o.kubeconfig, c, &err);
        if (!a.events) {
            LOG_ERROR("events: %s", err.msg);
            goto out;
        }
        events_set_level(a.events, o.bind_events);
        ecfg.binder = bind_with_events;
        ecfg.binder_ud = &a;
        ecfg.bind_threads = (int)o.bind_threads;
        if (o.leader_elect && start_leader(&o, &a, &err)) {
            LOG_ERROR("%s", err.msg);
            goto out;
        }
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
    if (a.live && live_start(a.live, e, &err)) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
    gp_server_config scfg = {.listen = o.listen,       .url_prefix = o.url_prefix,
                             .max_body = o.max_body,   .tls_cert = o.tls_cert,
                             .tls_key = o.tls_key,     .threads = o.threads,
                             .client_ca = o.client_ca, .max_inflight = o.max_inflight,
                             .show_uids = o.show_uids};
    gp_server_hooks hooks = {&a, ready_hook, metrics_hook, inspect_hook};
    s = server_start(&scfg, e, c, &hooks, &err);
    if (!s) {
        LOG_ERROR("%s", err.msg);
        goto out;
    }
    LOG_INFO("gpupack " GPUPACK_VERSION " listening on %s (port %d)%s%s", o.listen, server_port(s),
             o.url_prefix ? ", verbs under " : "", o.url_prefix ? o.url_prefix : "");
    if (o.webhook_listen) {
        gp_server_config wcfg = {.listen = o.webhook_listen, .max_body = o.max_body,
                                 .tls_cert = o.webhook_cert, .tls_key = o.webhook_key,
                                 .threads = 1, .max_inflight = o.max_inflight,
                                 .webhook = &wnames};
        ws = server_start(&wcfg, e, c, NULL, &err);
        if (!ws) {
            LOG_ERROR("webhook: %s", err.msg);
            goto out;
        }
        LOG_INFO("admission webhook: POST https://%s/mutate, bound to port %d", o.webhook_listen,
                 server_port(ws));
    }
    if (o.cluster_file)
        print_try_it(o.listen, server_port(s));
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
    server_stop(ws);
    server_stop(s);       /* no request in flight after this */
    if (a.leader) {       /* then hand the Lease over: no bind can follow */
        leader_stop(a.leader);
        if (a.label)      /* the Service stops routing here before the next leader labels itself */
            leader_label_sync(a.label, false);
        if (leader_release(a.leader, &err))
            LOG_WARN("leader election: could not release the lease (it expires instead): %s", err.msg);
    }
    leader_free(a.leader);
    lease_kube_free(a.lease);
    leader_label_free(a.label);
    live_free(a.live);    /* then the watchers */
    events_free(a.events);
    extender_free(e);
    policy_store_free(a.policies);
    cluster_free(c);
    curl_global_cleanup();
    return rc;
}

static int cmd_version(int argc, char **argv)
{
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
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {"serve", cmd_serve},
    {"inspect", cmd_inspect},
    {"explain", cmd_explain},
    {"policy", cmd_policy},
    {"simulate", cmd_simulate},
    {"version", cmd_version},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < GP_ARRAY_LEN(commands); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gpupack: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return 2;
}
