/* e2eload.c -- load generator for bench/e2e.sh: creates nodes and pods on a real
 * API server from many keep-alive connections at once, watches the pods get
 * bound and reports throughput, create->bound latency and GPUs used.
 *
 *   bin/e2eload sched-config --shipped manifests/base/scheduler-config.yaml --port P --qps Q [--no-extender]
 *                            [--tls-dir DIR]   (an HTTPS stanza: DIR's client.crt/.key and ca.crt)
 *   bin/e2eload nodes --kubeconfig F --count N [--gpus 4 --gpu-gib 16] [--threads 16]
 *   bin/e2eload pods  --kubeconfig F --ns NS --count P --scheduler NAME --profile aliyun|cpu
 *                     [--gib 4] [--threads 16] [--timeout 900]
 * `pods` prints one JSON line of figures. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpu.h"
#include "model/k8s_obs.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "schedrw.h"
#include "lib/strmap.h"
#include "kube/watchstream.h"

typedef struct opts {
    const char *kubeconfig, *ns, *scheduler, *profile, *shipped, *tls_dir;
    int count, threads, gpus, gpu_gib, gib, port, qps;
    double timeout;
    bool no_extender;
} opts;

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static bool flag(int argc, char **argv, const char *name)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

static gp_kube *client(const char *kubeconfig)
{
    gp_kube_auth auth;
    gp_err err;
    if (!kubeconfig || kubeconfig_load(kubeconfig, NULL, &auth, &err) < 0) {
        fprintf(stderr, "e2eload: --kubeconfig: %s\n", kubeconfig ? err.msg : "required");
        exit(2);
    }
    gp_kube *k = kube_new(&auth, &err);
    kube_auth_clear(&auth);
    if (!k) {
        fprintf(stderr, "e2eload: %s\n", err.msg);
        exit(2);
    }
    return k;
}

/* ------------------------------------------------------------ create --- */

typedef json_t *(*make_fn)(const opts *o, int i);

typedef struct creator {
    gp_kube *k;
    const opts *o;
    const char *path;
    make_fn make;
    atomic_int next, failed;
    double *t_sent, *t_done;        /* per object, monotonic seconds */
} creator;

static void *create_worker(void *arg)
{
    creator *c = arg;
    for (;;) {
        int i = atomic_fetch_add(&c->next, 1);
        if (i >= c->o->count)
            return NULL;
        json_t *obj = c->make(c->o, i);
        char *body = json_dumps(obj, JSON_COMPACT);
        json_decref(obj);
        gp_kube_resp r;
        gp_err err;
        for (int attempt = 0; attempt < 5; attempt++) {
            c->t_sent[i] = gp_mono_s();
            int rc = kube_request(c->k, "POST", c->path, "application/json", body, 60, NULL, &r, &err);
            long st = r.status;
            kube_resp_free(&r);
            if (rc == 0 && st / 100 == 2) {
                c->t_done[i] = gp_mono_s();
                break;
            }
            if (attempt == 4) {
                fprintf(stderr, "e2eload: POST %s #%d: %s (HTTP %ld)\n", c->path, i, rc ? err.msg : "", st);
                atomic_fetch_add(&c->failed, 1);
            }
        }
        free(body);
    }
}

/* Creates o->count objects over o->threads connections; returns seconds taken. */
static double create_all(creator *c)
{
    int n = c->o->threads > 0 ? c->o->threads : 16;
    pthread_t th[256];
    if (n > 256)
        n = 256;
    double t0 = gp_mono_s();
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, create_worker, c);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return gp_mono_s() - t0;
}

static json_t *make_node(const opts *o, int i)
{
    char name[32], cnt[16], mem[16];
    snprintf(name, sizeof name, "bn-%05d", i);
    json_t *cap = json_pack("{s:s,s:s,s:s}", "cpu", "64", "memory", "256Gi", "pods", "110");
    if (o->gpus > 0) {
        snprintf(cnt, sizeof cnt, "%d", o->gpus);
        snprintf(mem, sizeof mem, "%d", o->gpus * o->gpu_gib);
        json_object_set_new(cap, "aliyun.com/gpu-count", json_string(cnt));
        json_object_set_new(cap, "aliyun.com/gpu-mem", json_string(mem));
    }
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:O,s:o,s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind",
                     "Node", "metadata", "name", name, "labels", "kubernetes.io/hostname", name, "status",
                     "capacity", cap, "allocatable", cap, "conditions", "type", "Ready", "status", "True");
}

static json_t *make_pod(const opts *o, int i)
{
    char name[32], gib[16];
    snprintf(name, sizeof name, "bp-%06d", i);
    snprintf(gib, sizeof gib, "%d", o->gib);
    json_t *lim = json_pack("{s:s}", "cpu", "100m");
    if (strcmp(o->profile, "aliyun") == 0)
        json_object_set_new(lim, "aliyun.com/gpu-mem", json_string(gib));
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:i,s:[{s:s,s:s,s:{s:o,s:{s:s}}}]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", name, "spec", "schedulerName", o->scheduler,
                     "terminationGracePeriodSeconds", 0, "containers", "name", "main", "image",
                     "registry.invalid/bench:1", "resources", "limits", lim, "requests", "cpu", "100m");
}

/* ------------------------------------------------------------- watch --- */

typedef struct watcher {
    gp_kube *k;
    const opts *o;
    char rv[64];                    /* last resourceVersion seen: where a re-watch resumes */
    int rewatches;
    gp_kube_cancel *cancel;
    gp_watchstream *ws;
    double *t_bound;
    atomic_int bound;
} watcher;

static int on_line(void *ud, const char *line, size_t len)
{
    watcher *w = ud;
    gp_watch_event ev;
    gp_err err;
    if (watchstream_event_parse(line, len, &ev, &err) < 0)
        return 0;
    if (ev.rv[0])
        gp_strlcpy(w->rv, ev.rv, sizeof w->rv);
    const char *name = json_string_value(json_object_get(json_object_get(ev.object, "metadata"), "name"));
    const char *node = json_string_value(json_object_get(json_object_get(ev.object, "spec"), "nodeName"));
    int i;
    if (name && node && *node && sscanf(name, "bp-%d", &i) == 1 && i >= 0 && i < w->o->count &&
        w->t_bound[i] == 0) {
        w->t_bound[i] = gp_mono_s();
        atomic_fetch_add(&w->bound, 1);
    }
    watchstream_event_clear(&ev);
    return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
    watcher *w = ud;
    gp_err err;
    return watchstream_feed(w->ws, p, n, &err);
}

/* Watches the namespace's pods until cancelled; the API server may end a
 * watch early (a slow reader on a loaded machine): resume from the last
 * resourceVersion seen, so that no bind is missed. */
static void *watch_thread(void *arg)
{
    watcher *w = arg;
    while (!kube_cancel_fired(w->cancel)) {
        char *path = xasprintf("/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d",
                               w->o->ns, w->rv, (int)w->o->timeout + 30);
        long st;
        gp_buf eb;
        gp_err err;
        watchstream_reset(w->ws);
        int rc = kube_stream(w->k, path, 60, w->o->timeout + 60, w->cancel, NULL, on_data, w, &st, &eb, &err);
        free(path);
        gp_buf_free(&eb);
        if (kube_cancel_fired(w->cancel))
            break;
        w->rewatches++;
        fprintf(stderr, "e2eload: watch ended (%s, HTTP %ld); resuming from %s\n", rc < 0 ? err.msg : "by the server",
                st, w->rv);
        kube_cancel_sleep(w->cancel, 0.2);
    }
    return NULL;
}

/* ----------------------------------------------------------- figures --- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GPUs the namespace's pods hold (distinct node/index), from their annotations. */
static int gpus_used(gp_kube *k, const char *ns)
{
    char *path = xasprintf("/api/v1/namespaces/%s/pods", ns);
    gp_kube_resp r;
    gp_err err;
    int n = -1;
    if (kube_request(k, "GET", path, NULL, NULL, 120, NULL, &r, &err) == 0 && r.status == 200) {
        json_t *l = json_loadb(r.body.data, r.body.len, 0, NULL);
        strmap *seen = strmap_new();
        gp_pod_view *v = xmalloc(sizeof *v);
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(l, "items"), i, p) {
            if (k8s_obs_pod(p, false, 1024, v, &err) < 0 || !v->obs.assign)
                continue;
            gp_hold holds[GP_MAX_GPUS_PER_NODE];
            int nh = gp_assignment_holds(&v->assign, holds);
            for (int h = 0; h < nh; h++) {
                char key[GP_NAME_MAX + 16];
                snprintf(key, sizeof key, "%s/%d", v->node, holds[h].index);
                strmap_put(seen, key, seen);
            }
        }
        n = (int)strmap_count(seen);
        free(v);
        strmap_free(seen);
        json_decref(l);
    }
    kube_resp_free(&r);
    free(path);
    return n;
}

static int cmd_pods(const opts *o)
{
    gp_kube *k = client(o->kubeconfig);
    gp_kube_resp r;
    gp_err err;
    /* namespace, then the resourceVersion to watch from */
    json_t *nsobj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", o->ns);
    char *body = json_dumps(nsobj, JSON_COMPACT);
    json_decref(nsobj);
    if (kube_request(k, "POST", "/api/v1/namespaces", "application/json", body, 30, NULL, &r, &err) < 0) {
        fprintf(stderr, "e2eload: namespace: %s\n", err.msg);
        return 1;
    }
    kube_resp_free(&r);
    free(body);
    char *lpath = xasprintf("/api/v1/namespaces/%s/pods?limit=1", o->ns);
    if (kube_request(k, "GET", lpath, NULL, NULL, 30, NULL, &r, &err) < 0 || r.status != 200) {
        fprintf(stderr, "e2eload: list: %s\n", err.msg);
        return 1;
    }
    json_t *l = json_loadb(r.body.data, r.body.len, 0, NULL);
    const char *rv = json_string_value(json_object_get(json_object_get(l, "metadata"), "resourceVersion"));
    watcher w = {.k = k, .o = o};
    gp_strlcpy(w.rv, rv ? rv : "0", sizeof w.rv);
    json_decref(l);
    kube_resp_free(&r);
    free(lpath);
    w.cancel = kube_cancel_new();
    w.ws = watchstream_new(GP_WATCH_LINE_MAX, on_line, &w);
    w.t_bound = xcalloc((size_t)o->count, sizeof(double));
    pthread_t wt;
    pthread_create(&wt, NULL, watch_thread, &w);

    char *ppath = xasprintf("/api/v1/namespaces/%s/pods", o->ns);
    creator c = {.k = k, .o = o, .path = ppath, .make = make_pod};
    c.t_sent = xcalloc((size_t)o->count, sizeof(double));
    c.t_done = xcalloc((size_t)o->count, sizeof(double));
    double t0 = gp_mono_s();
    double create_s = create_all(&c);
    while (atomic_load(&w.bound) < o->count - atomic_load(&c.failed) && gp_mono_s() - t0 < o->timeout)
        kube_cancel_sleep(w.cancel, 0.05);
    kube_cancel_fire(w.cancel);
    pthread_join(wt, NULL);

    double first = 1e300, last = 0;
    double *lat = xcalloc((size_t)o->count, sizeof(double));
    int nl = 0;
    for (int i = 0; i < o->count; i++) {
        if (c.t_sent[i] > 0 && c.t_sent[i] < first)
            first = c.t_sent[i];
        if (w.t_bound[i] > last)
            last = w.t_bound[i];
        if (w.t_bound[i] > 0 && c.t_done[i] > 0)
            lat[nl++] = (w.t_bound[i] - c.t_done[i]) * 1000;
    }
    qsort(lat, (size_t)nl, sizeof *lat, cmp_d);
    int bound = atomic_load(&w.bound);
    int used = strcmp(o->profile, "aliyun") == 0 ? gpus_used(k, o->ns) : 0;
    int perfect = strcmp(o->profile, "aliyun") == 0 ? (o->count * o->gib + o->gpu_gib - 1) / o->gpu_gib : 0;
    printf("{\"pods\":%d,\"created\":%d,\"create_s\":%.2f,\"create_per_s\":%.0f,\"bound\":%d,"
           "\"first_create_to_last_bind_s\":%.2f,\"pods_per_s\":%.1f,\"p50_ms\":%.0f,\"p99_ms\":%.0f,"
           "\"gpus_used\":%d,\"gpus_perfect\":%d,\"rewatches\":%d}\n",
           o->count, o->count - atomic_load(&c.failed), create_s, o->count / create_s, bound,
           bound ? last - first : 0, bound ? bound / (last - first) : 0, nl ? lat[nl / 2] : 0,
           nl ? lat[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1] : 0, used, perfect, w.rewatches);
    free(lat);
    free(c.t_sent);
    free(c.t_done);
    free(ppath);
    free(w.t_bound);
    watchstream_free(w.ws);
    kube_cancel_free(w.cancel);
    kube_free(k);
    return bound == o->count ? 0 : 1;
}

static int cmd_nodes(const opts *o)
{
    gp_kube *k = client(o->kubeconfig);
    creator c = {.k = k, .o = o, .path = "/api/v1/nodes", .make = make_node};
    c.t_sent = xcalloc((size_t)o->count, sizeof(double));
    c.t_done = xcalloc((size_t)o->count, sizeof(double));
    double s = create_all(&c);
    fprintf(stderr, "e2eload: %d nodes in %.1f s (%.0f/s), %d failed\n", o->count, s, o->count / s,
            atomic_load(&c.failed));
    free(c.t_sent);
    free(c.t_done);
    kube_free(k);
    return atomic_load(&c.failed) ? 1 : 0;
}

static int cmd_sched_config(const opts *o)
{
    gp_err err;
    json_t *cfg = schedrw_load(o->shipped, &err);
    if (!cfg) {
        fprintf(stderr, "e2eload: %s\n", err.msg);
        return 1;
    }
    schedrw_rewrite(cfg, o->port);
    if (o->tls_dir)
        schedrw_tls(cfg, o->tls_dir);
    if (o->no_extender)
        json_object_del(cfg, "extenders");
    json_t *cc = json_object_get(cfg, "clientConnection");
    json_object_set_new(cc, "qps", json_integer(o->qps));
    json_object_set_new(cc, "burst", json_integer(o->qps * 2));
    json_dumpf(cfg, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(cfg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: e2eload sched-config|nodes|pods [flags] (see the top of bench/e2eload.c)\n");
        return 2;
    }
    opts o = {
        .kubeconfig = arg(argc, argv, "--kubeconfig", NULL),
        .ns = arg(argc, argv, "--ns", "bench"),
        .scheduler = arg(argc, argv, "--scheduler", "default-scheduler"),
        .profile = arg(argc, argv, "--profile", "aliyun"),
        .shipped = arg(argc, argv, "--shipped", "manifests/base/scheduler-config.yaml"),
        .count = atoi(arg(argc, argv, "--count", "100")),
        .threads = atoi(arg(argc, argv, "--threads", "16")),
        .gpus = atoi(arg(argc, argv, "--gpus", "4")),
        .gpu_gib = atoi(arg(argc, argv, "--gpu-gib", "16")),
        .gib = atoi(arg(argc, argv, "--gib", "4")),
        .port = atoi(arg(argc, argv, "--port", "0")),
        .qps = atoi(arg(argc, argv, "--qps", "50")),
        .timeout = atof(arg(argc, argv, "--timeout", "900")),
        .no_extender = flag(argc, argv, "--no-extender"),
        .tls_dir = arg(argc, argv, "--tls-dir", NULL),
    };
    if (o.count <= 0 || o.gib <= 0 || o.gpu_gib <= 0) {
        fprintf(stderr, "e2eload: --count, --gib and --gpu-gib must be positive\n");
        return 2;
    }
    if (strcmp(argv[1], "sched-config") == 0)
        return cmd_sched_config(&o);
    if (strcmp(argv[1], "nodes") == 0)
        return cmd_nodes(&o);
    if (strcmp(argv[1], "pods") == 0)
        return cmd_pods(&o);
    fprintf(stderr, "e2eload: unknown command %s\n", argv[1]);
    return 2;
}
