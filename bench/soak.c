/* soak.c -- the churn, the front, the slow-API proxy and the invariant checker of bench/soak.sh.
 *
 *   bin/soak setup --kubeconfig F --replicas soak-a,soak-b
 *       namespaces soak and gpupack-system, the PriorityClasses soak-low/-mid/-high, and one
 *       Pod object per gpupack replica (no kubelet: the replicas' --leader-elect-pod)
 *   bin/soak run --kubeconfig F --out DIR --trace-pods CSV --apiserver HOST:PORT
 *                --replica NAME=PORT ... [--ca FILE] [--seed 42] [--rate 8] [--lifetime 450]
 *                [--prefill N] [--bind-bound 120] [--converge-bound 60] [--growth-max 2]
 *                [--safety-only]
 *       listens on 127.0.0.1 for two TCP forwarders: the front (kube-scheduler's extender URL;
 *       every connection goes to the replica whose Pod is labelled gpupack.io/leader=true, as
 *       the shipped Service does) and the proxy between the replicas and kube-apiserver (delays
 *       answers or cuts connections on command); writes their ports to DIR/front.port and
 *       DIR/proxy.port. Then it follows DIR/control (lines "UNIXTIME WORD ARGS", appended by
 *       soak.sh): "go" starts the churn, "fault-start NAME" / "fault-end NAME" bracket a fault,
 *       "slow MS", "partition on|off" drive the proxy, "stop" ends the run. Meanwhile it watches
 *       the pods and nodes (the project's reflector) and checks, all the time, the invariants
 *       docs/reliability.md lists. At "stop": DIR/report.json, DIR/cluster.csv, DIR/proc.csv,
 *       DIR/faults.csv, a summary on stdout (last line); exit 0 only when every invariant held.
 *
 *   bin/soak growth DIR [--growth-max 2]
 *       the growth verdicts again from a finished run's DIR/proc.csv, faults.csv and report.json,
 *       by this build's rule (a run judged by an earlier one, side by side); exit 1 when RSS or
 *       fds grow.
 *
 * PIDs of the replicas come from DIR/pid-NAME and their build ("new"/"old") from DIR/ver-NAME,
 * read at every sample (soak.sh restarts them). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"
#include "lib/strmap.h"
#include "model/gpu.h"
#include "model/k8s_obs.h"
#include "sim/trace.h"
#include "tcpfwd.h"

#define NS "soak"
#define MAX_REPLICAS 2
#define MAX_VIOL_LOGGED 200
#define CHECK_EVERY_S 2.0
#define SAMPLE_EVERY_S 10.0
#define SHAPE_ANN "soak.gpupack.io/shape"
#define ASSUMED_BOUND_S 135.0   /* --assume-ttl 120 s, swept every 30 s, + slack: no bind stays assumed longer */
#define CLAIM_BOUND_S 95.0      /* a preemption claim: victims' grace (0 here, 30 when unknown) + 60 s wait + 5 s */
#define PLAN_SLACK_S 5.0
#define PROC_WARM_S 180.0      /* a process's own warm-up, left out of the growth figures */        /* a preemption past its deadline is ended within the 1-s sweep */

/* ------------------------------------------------------------ options --- */

typedef struct replica {
    char name[64];
    int port;
    /* sampled */
    long pid;
    char ver[16];
    double hist_prev[3][64];   /* per verb: cumulative bucket counts of the last sample */
    long pid_prev;
    long seg_pid;               /* the process and role of its current segment (growth) */
    bool seg_leader;
    int seg;
} replica;

static struct {
    const char *kubeconfig, *out, *trace_pods, *ca, *apiserver, *scheduler;
    uint64_t seed;
    double rate, lifetime, bind_bound, converge_bound, growth_max;
    bool safety_only;             /* exit status from the safety invariants alone (CI) */
    int prefill;
    int nrep;
    replica rep[MAX_REPLICAS];
} opt;

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static gp_kube *client(const char *kubeconfig)
{
    gp_kube_auth auth;
    gp_err err;
    if (!kubeconfig || kubeconfig_load(kubeconfig, NULL, &auth, &err) < 0) {
        fprintf(stderr, "soak: --kubeconfig: %s\n", kubeconfig ? err.msg : "required");
        exit(2);
    }
    gp_kube *k = kube_new(&auth, &err);
    kube_auth_clear(&auth);
    if (!k) {
        fprintf(stderr, "soak: %s\n", err.msg);
        exit(2);
    }
    return k;
}

/* splitmix64: the i-th draw of stream st under the seed (as bench/e2eload.c draws). */
static uint64_t draw(uint64_t st, uint64_t i)
{
    uint64_t z = opt.seed * 0x9E3779B97F4A7C15ull + (st << 48) + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double draw01(uint64_t st, uint64_t i)
{
    return ((double)(draw(st, i) >> 11) + 0.5) / 9007199254740992.0;
}

static double wall_s(void)
{
    return (double)gp_now_ns() / 1e9;
}

/* POST/DELETE that may fail (API server down): 0 when the answer was 2xx or `ok_status`. */
static int api(gp_kube *k, const char *method, const char *path, json_t *body, long ok_status, double timeout_s)
{
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    gp_kube_resp r;
    gp_err err;
    int rc = kube_request(k, method, path, b ? "application/json" : NULL, b, timeout_s, NULL, &r, &err);
    long st = r.status;
    kube_resp_free(&r);
    free(b);
    return rc == 0 && (st / 100 == 2 || st == ok_status) ? 0 : -1;
}

/* -------------------------------------------------------------- setup --- */

static int cmd_setup(int argc, char **argv)
{
    gp_kube *k = client(arg(argc, argv, "--kubeconfig", NULL));
    int rc = 0;
    const char *nss[] = {NS, "gpupack-system"};
    for (int i = 0; i < 2; i++) {
        json_t *o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", nss[i]);
        rc |= api(k, "POST", "/api/v1/namespaces", o, 409, 30);
        json_decref(o);
    }
    const char *pc[] = {"soak-low", "soak-mid", "soak-high"};
    const int pv[] = {100, 1000, 10000};
    for (int i = 0; i < 3; i++) {
        json_t *o = json_pack("{s:s,s:s,s:{s:s},s:i}", "apiVersion", "scheduling.k8s.io/v1", "kind", "PriorityClass",
                              "metadata", "name", pc[i], "value", pv[i]);
        rc |= api(k, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", o, 409, 30);
        json_decref(o);
    }
    char *names = xstrdup(arg(argc, argv, "--replicas", "soak-a,soak-b")), *save = NULL;
    for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        /* bound to a fake node, so no scheduler touches it; gpupack labels the leader's */
        json_t *p = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                              "metadata", "name", n, "namespace", "gpupack-system", "labels",
                              "app.kubernetes.io/name", "gpupack", "spec", "nodeName", "bn-00000", "containers",
                              "name", "gpupack", "image", "gpupack:latest");
        rc |= api(k, "POST", "/api/v1/namespaces/gpupack-system/pods", p, 409, 30);
        json_decref(p);
    }
    free(names);
    kube_free(k);
    if (rc)
        fprintf(stderr, "soak setup: some objects could not be created\n");
    return rc ? 1 : 0;
}

/* ---------------------------------------------------------- forwarders --- */

static tcpfwd front, proxy;

/* ------------------------------------------------------------- model --- */

/* What the annotations say, from the checker's own watch (direct to the API server). */
typedef struct gpu_use {
    int index;
    int64_t mem_total, mem_used;
    int core_used;
} gpu_use;

typedef struct node_m {
    int ngpus;
    gpu_use g[GP_MAX_GPUS_PER_NODE];
    unsigned gen;
} node_m;

typedef enum { SHAPE_CPU, SHAPE_SHARE, SHAPE_WHOLE } shape_kind;

typedef struct pod_m {
    char ns[GP_NAME_MAX], name[GP_NAME_MAX];
    shape_kind kind;
    int64_t mem;                /* SHARE: MiB */
    int core;                   /* SHARE: per-mille */
    int count;                  /* WHOLE: GPUs */
    bool bound, gone;
    char node[GP_NAME_MAX];
    gp_assignment first;        /* the first assignment seen (never changes afterwards) */
    bool has_first;
    int nh;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    char hnode[GP_NAME_MAX];    /* the node the holds are counted on */
    double seen_mono, bound_mono, fit_since;
    bool stuck_reported;
    unsigned gen;
} pod_m;

typedef struct viol {
    double t;
    char what[32];
    char msg[400];
} viol;

static struct {
    pthread_mutex_t mu;
    strmap *nodes, *pods;
    unsigned gen;
    long bound_total, binds_window;
    long overcommit, rebound, badassign, stuck, diverged, ttl, proc;
    viol *v;
    size_t nv, cap;
    double *waits;              /* fit -> bound, seconds, outside faults */
    size_t nwaits, capw;
} M = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void violation(const char *what, long *counter, const char *fmt, ...) GP_PRINTF(3, 4);
static void violation(const char *what, long *counter, const char *fmt, ...)
{
    (*counter)++;
    if (M.nv == M.cap) {
        M.cap = M.cap ? 2 * M.cap : 64;
        M.v = xrealloc(M.v, M.cap * sizeof *M.v);
    }
    viol *v = &M.v[M.nv++];
    v->t = wall_s();
    gp_strlcpy(v->what, what, sizeof v->what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
    if (M.nv <= MAX_VIOL_LOGGED)
        fprintf(stderr, "soak: VIOLATION %s: %s\n", v->what, v->msg);
}

static gpu_use *gpu_of(node_m *n, int index)
{
    for (int i = 0; n && i < n->ngpus; i++)
        if (n->g[i].index == index)
            return &n->g[i];
    return NULL;
}

/* Adds (sign +1) or removes (-1) the pod's holds; checks the GPUs it adds to. */
static void account(pod_m *p, int sign)
{
    node_m *n = strmap_get(M.nodes, p->hnode);
    for (int h = 0; h < p->nh; h++) {
        gpu_use *u = gpu_of(n, p->holds[h].index);
        if (!u) {
            if (sign > 0)
                violation("assignment", &M.badassign, "%s/%s holds GPU %d of %s, which has no such GPU", p->ns,
                          p->name, p->holds[h].index, p->hnode);
            continue;
        }
        u->mem_used += sign * p->holds[h].mem_mib;
        u->core_used += sign * p->holds[h].core;
        if (sign > 0 && (u->mem_used > u->mem_total || u->core_used > GP_CORE_FULL))
            violation("over-commit", &M.overcommit, "GPU %d of %s: %" PRId64 "/%" PRId64 " MiB, %d/%d core after %s/%s",
                      u->index, p->hnode, u->mem_used, u->mem_total, u->core_used, GP_CORE_FULL, p->ns, p->name);
    }
}

static void pod_release(pod_m *p)
{
    if (p->nh)
        account(p, -1);
    p->nh = 0;
}

static void parse_shape(pod_m *p, const json_t *obj)
{
    const char *s = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), SHAPE_ANN));
    long long a = 0, b = 0;
    p->kind = SHAPE_CPU;
    if (s && sscanf(s, "share:%lld:%lld", &a, &b) == 2) {
        p->kind = SHAPE_SHARE;
        p->mem = a;
        p->core = (int)b;
    } else if (s && sscanf(s, "whole:%lld", &a) == 1) {
        p->kind = SHAPE_WHOLE;
        p->count = (int)a;
    }
}

/* The assignment must hold what the pod asked, on distinct GPUs of its own node. */
static void check_assignment(pod_m *p, const gp_pod_view *v)
{
    const gp_assignment *a = &v->assign;
    if (strcmp(a->node, v->node) != 0)
        violation("assignment", &M.badassign, "%s/%s: assignment names node %s, spec.nodeName %s", p->ns, p->name,
                  a->node, v->node);
    int want = p->kind == SHAPE_WHOLE ? p->count : 1;
    for (int c = 0; c < a->nctrs; c++) {
        const gp_ctr_assign *ca = &a->ctrs[c];
        if (ca->ngpus != want)
            violation("assignment", &M.badassign, "%s/%s: container %s got %d GPUs, asked %d", p->ns, p->name,
                      ca->name, ca->ngpus, want);
        for (int i = 0; i < ca->ngpus; i++)
            for (int j = i + 1; j < ca->ngpus; j++)
                if (ca->gpus[i].index == ca->gpus[j].index)
                    violation("assignment", &M.badassign, "%s/%s: GPU %d granted twice", p->ns, p->name,
                              ca->gpus[i].index);
    }
}

static void node_apply(const json_t *obj, bool deleted)
{
    char name[GP_NAME_MAX];
    gp_inventory inv;
    gp_err err;
    if (k8s_obs_node(obj, 1024, name, &inv, &err) < 0)
        return;
    node_m *n = strmap_get(M.nodes, name);
    if (deleted) {
        free(strmap_del(M.nodes, name));
        return;
    }
    if (!n) {
        n = xcalloc(1, sizeof *n);
        strmap_put(M.nodes, name, n);
    }
    n->gen = M.gen;
    if (n->ngpus == 0) {
        n->ngpus = inv.n;
        for (int i = 0; i < inv.n; i++) {
            n->g[i].index = inv.gpus[i].index;
            n->g[i].mem_total = inv.gpus[i].mem_total;
        }
    }
}

static void pod_apply(const json_t *obj, bool deleted)
{
    static gp_pod_view v;       /* the reflector's thread only */
    gp_err err;
    if (k8s_obs_pod(obj, deleted, 1024, &v, &err) < 0)
        return;
    pod_m *p = strmap_get(M.pods, v.uid);
    if (!p) {
        if (v.obs.terminal)
            return;
        p = xcalloc(1, sizeof *p);
        gp_strlcpy(p->ns, v.ns, sizeof p->ns);
        gp_strlcpy(p->name, v.name, sizeof p->name);
        parse_shape(p, obj);
        p->seen_mono = gp_mono_s();
        strmap_put(M.pods, v.uid, p);
    }
    p->gen = M.gen;
    if (v.obs.terminal) {
        pod_release(p);
        p->gone = true;
        free(strmap_del(M.pods, v.uid));
        return;
    }
    bool bound = v.node[0] != '\0';
    if (bound && !p->bound) {
        p->bound = true;
        p->bound_mono = gp_mono_s();
        gp_strlcpy(p->node, v.node, sizeof p->node);
        M.bound_total++;
        M.binds_window++;
    } else if (bound && strcmp(p->node, v.node) != 0) {
        violation("bound-twice", &M.rebound, "%s/%s: bound to %s, now to %s", p->ns, p->name, p->node, v.node);
        gp_strlcpy(p->node, v.node, sizeof p->node);
    }
    if (v.obs.assign) {
        if (!p->has_first) {
            p->first = v.assign;
            p->has_first = true;
            check_assignment(p, &v);
        } else if (!gp_assignment_equal(&p->first, &v.assign)) {
            violation("bound-twice", &M.rebound, "%s/%s: its assignment changed after it was written", p->ns,
                      p->name);
        }
    }
    if (bound && !v.obs.assign && p->kind != SHAPE_CPU && !p->has_first) {
        p->has_first = true;   /* reported once */
        violation("assignment", &M.badassign, "%s/%s: bound to %s without an assignment", p->ns, p->name, v.node);
    }
    pod_release(p);
    if (v.obs.assign && bound) {
        p->nh = gp_assignment_holds(&v.assign, p->holds);
        gp_strlcpy(p->hnode, v.node, sizeof p->hnode);
        account(p, +1);
    }
}

static void ops_begin(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&M.mu);
    M.gen++;
    pthread_mutex_unlock(&M.mu);
}

/* After a LIST: what it did not list is gone. */
static void pods_end(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&M.mu);
    size_t it = 0;
    const char *key;
    pod_m *p;
    char **drop = NULL;
    size_t nd = 0;
    while ((p = strmap_next(M.pods, &it, &key)))
        if (p->gen != M.gen) {
            pod_release(p);
            drop = xrealloc(drop, (nd + 1) * sizeof *drop);
            drop[nd++] = xstrdup(key);
        }
    for (size_t i = 0; i < nd; i++) {
        free(strmap_del(M.pods, drop[i]));
        free(drop[i]);
    }
    free(drop);
    pthread_mutex_unlock(&M.mu);
}

static void nodes_end(void *ud)
{
    (void)ud;
}

static void pods_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    (void)ud;
    (void)listed;
    pthread_mutex_lock(&M.mu);
    pod_apply(obj, type == GP_WATCH_DELETED);
    pthread_mutex_unlock(&M.mu);
}

static void nodes_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    (void)ud;
    (void)listed;
    pthread_mutex_lock(&M.mu);
    node_apply(obj, type == GP_WATCH_DELETED);
    pthread_mutex_unlock(&M.mu);
}

/* ------------------------------------------------------------- churn --- */

/* Pods arrive as a Poisson process at opt.rate a second (after a prefill of
 * opt.prefill at once), each with a shape drawn from the trace, a priority and
 * an exponential lifetime; at the end of its lifetime the soak deletes it,
 * bound or not (a job that ran, or one that gave up waiting). */
typedef struct death {
    double t;
    int i;
} death;

static struct {
    trace_pod *rows;
    size_t nrows;
    int64_t ref_mib;
    atomic_bool go, stop, prefilled;   /* prefilled: every prefill pod created */
    double t_go;
    atomic_long created, deleted, create_fail, delete_fail, cpu_pods, share_pods, whole_pods;
    atomic_long prio[3];
    death *heap;
    size_t nheap, capheap;
} C;

static void heap_push(double t, int i)
{
    if (C.nheap == C.capheap) {
        C.capheap = C.capheap ? 2 * C.capheap : 4096;
        C.heap = xrealloc(C.heap, C.capheap * sizeof *C.heap);
    }
    size_t k = C.nheap++;
    while (k > 0 && C.heap[(k - 1) / 2].t > t) {
        C.heap[k] = C.heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    C.heap[k] = (death){t, i};
}

static death heap_pop(void)
{
    death top = C.heap[0], last = C.heap[--C.nheap];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= C.nheap)
            break;
        if (c + 1 < C.nheap && C.heap[c + 1].t < C.heap[c].t)
            c++;
        if (C.heap[c].t >= last.t)
            break;
        C.heap[k] = C.heap[c];
        k = c;
    }
    if (C.nheap)
        C.heap[k] = last;
    return top;
}

static json_t *make_pod(int i)
{
    const trace_pod *t = &C.rows[draw(2, (uint64_t)i) % C.nrows];
    char name[32], v[32], shape[64];
    snprintf(name, sizeof name, "sp-%07d", i);
    json_t *req = json_object();
    /* a sixteenth of the trace's CPU and memory: the host never decides a fit, GPUs do */
    snprintf(v, sizeof v, "%" PRId64 "m", t->cpu_milli > 16 ? t->cpu_milli / 16 : 1);
    json_object_set_new(req, "cpu", json_string(v));
    if (t->mem_mib >= 16) {
        snprintf(v, sizeof v, "%" PRId64 "Mi", t->mem_mib / 16);
        json_object_set_new(req, "memory", json_string(v));
    }
    json_t *res = json_pack("{s:o}", "requests", req);
    if (t->num_gpu == 0) {
        snprintf(shape, sizeof shape, "cpu");
        atomic_fetch_add(&C.cpu_pods, 1);
    } else if (t->num_gpu == 1 && t->gpu_milli < GP_CORE_FULL) {
        int64_t mem = (t->gpu_milli * C.ref_mib + 999) / 1000;
        int core = (t->gpu_milli + 9) / 10;
        json_t *lim = json_object();
        snprintf(v, sizeof v, "%" PRId64, mem);
        json_object_set_new(lim, "gpupack.io/gpu-mem", json_string(v));
        snprintf(v, sizeof v, "%d", core);
        json_object_set_new(lim, "gpupack.io/gpu-core", json_string(v));
        json_object_set_new(res, "limits", lim);
        snprintf(shape, sizeof shape, "share:%" PRId64 ":%d", mem, core * 10);
        atomic_fetch_add(&C.share_pods, 1);
    } else {
        snprintf(v, sizeof v, "%d", t->num_gpu);
        json_object_set_new(res, "limits", json_pack("{s:s}", "gpupack.io/gpu-count", v));
        snprintf(shape, sizeof shape, "whole:%d", t->num_gpu);
        atomic_fetch_add(&C.whole_pods, 1);
    }
    /* 60 % low, 30 % mid, 10 % high: the higher ones preempt when the cluster is full */
    double u = draw01(3, (uint64_t)i);
    int pr = u < 0.6 ? 0 : u < 0.9 ? 1 : 2;
    static const char *const pcs[] = {"soak-low", "soak-mid", "soak-high"};
    atomic_fetch_add(&C.prio[pr], 1);
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:i,s:[{s:s,s:s,s:o}]}}", "apiVersion", "v1", "kind",
                     "Pod", "metadata", "name", name, "annotations", SHAPE_ANN, shape, "spec", "schedulerName",
                     opt.scheduler, "priorityClassName", pcs[pr], "terminationGracePeriodSeconds", 0,
                     "containers", "name", "main", "image", "registry.invalid/soak:1", "resources", res);
}

static double lifetime(int i)
{
    double l = -log(draw01(5, (uint64_t)i)) * opt.lifetime;
    return l < 20 ? 20 : l > 8 * opt.lifetime ? 8 * opt.lifetime : l;
}

/* The prefill: pods 0..opt.prefill-1 from 4 connections at once. */
static atomic_int prefill_next;
static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;

static void *prefill_thread(void *arg)
{
    gp_kube *k = arg;
    for (;;) {
        int i = atomic_fetch_add(&prefill_next, 1);
        if (i >= opt.prefill || atomic_load(&C.stop))
            return NULL;
        json_t *o = make_pod(i);
        int tries = 0;
        while (api(k, "POST", "/api/v1/namespaces/" NS "/pods", o, 0, 10) < 0 && !atomic_load(&C.stop) && ++tries < 60) {
            atomic_fetch_add(&C.create_fail, 1);
            usleep(500000);
        }
        json_decref(o);
        if (tries >= 60)
            continue;
        atomic_fetch_add(&C.created, 1);
        pthread_mutex_lock(&heap_mu);
        heap_push(gp_mono_s() + lifetime(i), i);
        pthread_mutex_unlock(&heap_mu);
    }
}

static void *churn_thread(void *arg)
{
    gp_kube *k = arg;
    while (!atomic_load(&C.go) && !atomic_load(&C.stop))
        usleep(100000);
    pthread_t pt[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&pt[t], NULL, prefill_thread, k);
    for (int t = 0; t < 4; t++)
        pthread_join(pt[t], NULL);
    atomic_store(&C.prefilled, true);
    double t0 = gp_mono_s();
    double next_arrival = t0;
    int i = opt.prefill, retry_i = -1;
    json_t *pending_obj = NULL;
    while (!atomic_load(&C.stop)) {
        double now = gp_mono_s();
        bool busy = false;
        /* deaths first: they make room */
        while (C.nheap && C.heap[0].t <= now && !atomic_load(&C.stop)) {
            death d = heap_pop();
            char path[128];
            snprintf(path, sizeof path, "/api/v1/namespaces/" NS "/pods/sp-%07d?gracePeriodSeconds=0", d.i);
            if (api(k, "DELETE", path, NULL, 404, 10) == 0) {
                atomic_fetch_add(&C.deleted, 1);
            } else {
                atomic_fetch_add(&C.delete_fail, 1);
                heap_push(now + 2, d.i);
                break;
            }
            busy = true;
        }
        if (now >= next_arrival) {
            if (!pending_obj || retry_i != i) {
                json_decref(pending_obj);
                pending_obj = make_pod(i);
                retry_i = i;
            }
            if (api(k, "POST", "/api/v1/namespaces/" NS "/pods", pending_obj, 0, 10) == 0) {
                atomic_fetch_add(&C.created, 1);
                heap_push(gp_mono_s() + lifetime(i), i);
                json_decref(pending_obj);
                pending_obj = NULL;
                i++;
                next_arrival += -log(draw01(4, (uint64_t)i)) / opt.rate;
            } else {
                atomic_fetch_add(&C.create_fail, 1);
                usleep(500000);   /* the API server is away: the arrivals queue up */
            }
            busy = true;
        }
        if (!busy)
            usleep(20000);
    }
    json_decref(pending_obj);
    return NULL;
}

/* ---------------------------------------------------------- HTTP GETs --- */

typedef struct gbuf {
    char *p;
    size_t n, cap;
} gbuf;

static size_t gbuf_write(char *p, size_t sz, size_t n, void *ud)
{
    gbuf *b = ud;
    size_t len = sz * n;
    if (b->n + len + 1 > b->cap) {
        b->cap = (b->n + len + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

/* GET a replica's path; returns the body (owned) when the answer was 200. */
static char *rep_get(const replica *r, const char *path, size_t *len)
{
    char url[256];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", opt.ca ? "https" : "http", r->port, path);
    CURL *h = curl_easy_init();
    gbuf b = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (opt.ca)
        curl_easy_setopt(h, CURLOPT_CAINFO, opt.ca);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gbuf_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 8000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (status != 200) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

/* ----------------------------------------------------------- faults --- */

#define MAX_FAULTS 256

typedef struct fault {
    char name[64];
    double start, end;          /* wall seconds; end 0 while active */
    double converged;           /* first check after end where every replica equals the annotations */
} fault;

static struct {
    fault f[MAX_FAULTS];
    int n;
    double quiet_since;         /* mono: the last fault's end (clocks of "fits but waits" start here) */
    int active;
    /* The prefill is a burst (rate x lifetime pods in seconds, more GPUs asked
     * than there are): kube-scheduler works through it at its own rate, on the
     * same 2 cores, and pods that fit wait in its queue behind the others. Like
     * a fault, it starts the clocks of "fits but waits" when it ends: at the
     * first check after the last prefill pod was created with no pod that fits
     * left waiting, or FILL_MAX_S after the start, whichever comes first. */
    bool filling;
    double fill_start, fill_end;     /* mono */
} F;
#define FILL_MAX_S 300.0

static double wall_to_mono(double w)
{
    return gp_mono_s() - (wall_s() - w);
}

/* --------------------------------------------------------- checking --- */

/* What preemption holds on a GPU for its preemptor (/inspect's per-GPU
 * `reservations`), keyed "node/index": room the GPU has by the annotations
 * that no other pod may take. The union over the replicas of the last check
 * round (the leader holds them; a standby shows none). */
#define RESV_PER_GPU 8
typedef struct resv {
    int n;
    struct {
        char who[2 * GP_NAME_MAX + 2];   /* ns/name of the preemptor */
        int64_t mem;
        int core;                        /* per-mille */
    } e[RESV_PER_GPU];
} resv;
static strmap *resv_now, *resv_next;     /* main thread only */

static void resv_add(const char *node, int index, const char *ns, const char *name, int64_t mem, double core_pct)
{
    if (!resv_next || !node || !ns || !name)
        return;
    char key[GP_NAME_MAX + 16];
    snprintf(key, sizeof key, "%s/%d", node, index);
    resv *r = strmap_get(resv_next, key);
    if (!r) {
        r = xcalloc(1, sizeof *r);
        strmap_put(resv_next, key, r);
    }
    char who[sizeof r->e[0].who];
    snprintf(who, sizeof who, "%s/%s", ns, name);
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->e[i].who, who) == 0)
            return;   /* the other replica's copy of the same hold */
    if (r->n == RESV_PER_GPU)
        return;
    gp_strlcpy(r->e[r->n].who, who, sizeof r->e[0].who);
    r->e[r->n].mem = mem;
    r->e[r->n].core = (int)(core_pct * 10 + 0.5);
    r->n++;
}

/* What the reservations on node/g hold for pods other than p. */
static void resv_others(const char *node, int g, const pod_m *p, int64_t *mem, int *core)
{
    *mem = 0, *core = 0;
    if (!resv_now || strmap_count(resv_now) == 0)
        return;   /* the usual case: no key to build for each GPU of each pending pod */
    char key[GP_NAME_MAX + 16], who[2 * GP_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s/%d", node, g);
    const resv *r = strmap_get(resv_now, key);
    if (!r)
        return;
    snprintf(who, sizeof who, "%s/%s", p->ns, p->name);
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->e[i].who, who) != 0)
            *mem += r->e[i].mem, *core += r->e[i].core;
}

/* Does a pending pod fit on the GPUs as the annotations leave them, less what
 * preemption holds there for other pods? (Host CPU and memory never decide:
 * pods ask a sixteenth of the trace's.) */
static bool fits(const pod_m *p)
{
    if (p->kind == SHAPE_CPU)
        return true;
    size_t it = 0;
    node_m *n;
    const char *node;
    while ((n = strmap_next(M.nodes, &it, &node))) {
        int idle = 0;
        for (int g = 0; g < n->ngpus; g++) {
            const gpu_use *u = &n->g[g];
            int64_t rmem;
            int rcore;
            resv_others(node, u->index, p, &rmem, &rcore);
            if (p->kind == SHAPE_SHARE && u->mem_total - u->mem_used - rmem >= p->mem &&
                GP_CORE_FULL - u->core_used - rcore >= p->core)
                return true;
            if (u->mem_used == 0 && u->core_used == 0 && rmem == 0 && rcore == 0)
                idle++;
        }
        if (p->kind == SHAPE_WHOLE && idle >= p->count)
            return true;
    }
    return false;
}

static void record_wait(double w)
{
    if (M.nwaits == M.capw) {
        M.capw = M.capw ? 2 * M.capw : 4096;
        M.waits = xrealloc(M.waits, M.capw * sizeof *M.waits);
    }
    M.waits[M.nwaits++] = w;
}

static long pending_now, fit_pending_now;

/* Every pod that fits is bound within opt.bind_bound seconds, counted from
 * when it fits, or the end of the last fault, whichever is later. */
static void check_pending(void)
{
    double now = gp_mono_s();
    long pend = 0, fp = 0;
    size_t it = 0;
    pod_m *p;
    while ((p = strmap_next(M.pods, &it, NULL))) {
        if (p->bound) {
            if (p->fit_since > 0) {
                double from = p->fit_since > F.quiet_since ? p->fit_since : F.quiet_since;
                if (!F.active && !F.filling && p->bound_mono > from)
                    record_wait(p->bound_mono - from);
                p->fit_since = 0;
            }
            continue;
        }
        pend++;
        if (now - p->seen_mono < 2 || !fits(p)) {
            p->fit_since = 0;
            continue;
        }
        fp++;
        if (p->fit_since == 0)
            p->fit_since = now;
        double from = p->fit_since > F.quiet_since ? p->fit_since : F.quiet_since;
        if (!F.active && !F.filling && now - from > opt.bind_bound && !p->stuck_reported) {
            p->stuck_reported = true;
            violation("stuck", &M.stuck, "%s/%s fits (shape %s) but is not bound after %.0f s", p->ns, p->name,
                      p->kind == SHAPE_SHARE ? "share" : p->kind == SHAPE_WHOLE ? "whole" : "cpu", now - from);
        }
    }
    pending_now = pend;
    fit_pending_now = fp;
    if (F.filling && ((atomic_load(&C.prefilled) && fp == 0) || now - F.fill_start >= FILL_MAX_S)) {
        F.filling = false;
        F.fill_end = now;
        if (now > F.quiet_since)
            F.quiet_since = now;
        fprintf(stderr, "soak: the first fill drained after %.1f s%s\n", now - F.fill_start,
                fp ? " (the cap: pods that fit still wait)" : "");
    }
}

/* /inspect against the annotations. Items are "node/gpu/ns/name mem core";
 * a difference counts only when the previous check (CHECK_EVERY_S earlier)
 * saw it too: two watches a few milliseconds apart differ by the pods in
 * between, never by the same pod for seconds. */
typedef struct rep_check {
    strmap *prev;               /* differences of the last check */
    strmap *assumed;            /* "ns/name" -> first seen assumed (mono, boxed) */
    double div_since;           /* mono; 0 = converged */
    double max_div;             /* longest divergence outside faults */
    bool converged;
    long diffs_last;
    int checks, ok_checks;
} rep_check;

static rep_check RC[MAX_REPLICAS];

static void add_key(strmap *m, const char *node, int index, const char *ns, const char *name, int64_t mem, double core)
{
    char key[1200];
    snprintf(key, sizeof key, "%s/%d/%s/%s %" PRId64 " %.1f", node, index, ns, name, mem, core);
    strmap_put(m, key, (void *)1);
}

static void free_boxed(strmap *m)
{
    size_t it = 0;
    void *v;
    while ((v = strmap_next(m, &it, NULL)))
        if (v != (void *)1)
            free(v);
    strmap_free(m);
}

static void check_replica(int r)
{
    replica *rp = &opt.rep[r];
    rep_check *rc = &RC[r];
    double now = gp_mono_s();
    size_t len = 0;
    char *body = rep_get(rp, "/inspect?compact=1", &len);
    json_t *ins = body ? json_loadb(body, len, 0, NULL) : NULL;
    free(body);
    strmap *got = strmap_new(), *diff = strmap_new(), *assumed_now = strmap_new();
    bool ok = ins != NULL;
    if (ins) {
        size_t i, j, k;
        json_t *n, *g, *p;
        json_array_foreach(json_object_get(ins, "nodes"), i, n) {
            const char *node = json_string_value(json_object_get(n, "name"));
            json_array_foreach(json_object_get(n, "gpus"), j, g) {
                int index = (int)json_integer_value(json_object_get(g, "index"));
                json_array_foreach(json_object_get(g, "pods"), k, p) {
                    const char *ns = json_string_value(json_object_get(p, "namespace"));
                    const char *name = json_string_value(json_object_get(p, "name"));
                    const char *state = json_string_value(json_object_get(p, "state"));
                    if (!ns || !name || !node || strcmp(ns, NS) != 0)
                        continue;
                    if (state && strcmp(state, "assumed") == 0) {
                        char id[600];
                        snprintf(id, sizeof id, "%s/%s", ns, name);
                        strmap_put(assumed_now, id, (void *)1);
                        continue;   /* a bind in flight: the annotations follow */
                    }
                    add_key(got, node, index, ns, name, json_integer_value(json_object_get(p, "memMiB")),
                            json_number_value(json_object_get(p, "corePercent")));
                }
                json_t *cl;
                json_array_foreach(json_object_get(g, "reservations"), k, cl) {
                    resv_add(node, index, json_string_value(json_object_get(cl, "namespace")),
                             json_string_value(json_object_get(cl, "name")),
                             json_integer_value(json_object_get(cl, "memMiB")),
                             json_number_value(json_object_get(cl, "corePercent")));
                    json_int_t age = json_integer_value(json_object_get(cl, "ageSeconds"));
                    if (age > CLAIM_BOUND_S)
                        violation("ttl", &M.ttl, "%s: a reservation on GPU %d of %s for %s is %lld s old", rp->name,
                                  index, node, json_string_value(json_object_get(cl, "name")), (long long)age);
                }
            }
        }
        json_t *pl;
        json_array_foreach(json_object_get(ins, "preemptions"), i, pl) {
            json_int_t exp = json_integer_value(json_object_get(pl, "expiresInSeconds"));
            if (exp < -PLAN_SLACK_S)
                violation("ttl", &M.ttl, "%s: preemption for %s is %lld s past its deadline", rp->name,
                          json_string_value(json_object_get(pl, "pod")), (long long)-exp);
        }
        json_decref(ins);
    }
    /* assumed too long: the TTL releases binds that never report */
    size_t it = 0;
    const char *key;
    while (strmap_next(assumed_now, &it, &key)) {
        double *since = strmap_get(rc->assumed, key);
        if (!since) {
            since = xmalloc(sizeof *since);
            *since = now;
            strmap_put(rc->assumed, key, since);
        } else if (*since > 0 && !F.active) {
            /* a Binding whose outcome is unknown stays assumed until a GET settles it, which
             * needs the API server: the clock runs from the end of the last fault */
            double from = *since > F.quiet_since ? *since : F.quiet_since;
            if (now - from > ASSUMED_BOUND_S) {
                violation("ttl", &M.ttl, "%s: %s assumed (bind in flight) for %.0f s outside faults", rp->name, key,
                          now - from);
                *since = -1;   /* once */
            }
        }
    }
    it = 0;
    char **drop = NULL;
    size_t nd = 0;
    while (strmap_next(rc->assumed, &it, &key))
        if (!strmap_get(assumed_now, key)) {
            drop = xrealloc(drop, (nd + 1) * sizeof *drop);
            drop[nd++] = xstrdup(key);
        }
    for (size_t d = 0; d < nd; d++) {
        free(strmap_del(rc->assumed, drop[d]));
        free(drop[d]);
    }
    free(drop);
    strmap_free(assumed_now);
    if (ok) {
        strmap *want = strmap_new();
        pthread_mutex_lock(&M.mu);
        size_t pi = 0;
        pod_m *p;
        while ((p = strmap_next(M.pods, &pi, NULL)))
            for (int h = 0; h < p->nh; h++)
                add_key(want, p->hnode, p->holds[h].index, p->ns, p->name, p->holds[h].mem_mib,
                        p->holds[h].core / 10.0);
        pthread_mutex_unlock(&M.mu);
        it = 0;
        while (strmap_next(want, &it, &key))
            if (!strmap_get(got, key))
                strmap_put(diff, key, (void *)1);
        it = 0;
        while (strmap_next(got, &it, &key))
            if (!strmap_get(want, key))
                strmap_put(diff, key, (void *)1);
        strmap_free(want);
    }
    long persist = 0;
    it = 0;
    while (strmap_next(diff, &it, &key))
        if (rc->prev && strmap_get(rc->prev, key))
            persist++;
    strmap_free(got);
    strmap_free(rc->prev);
    rc->prev = diff;
    rc->diffs_last = persist;
    rc->checks++;
    rc->converged = ok && persist == 0;
    if (rc->converged) {
        rc->ok_checks++;
        rc->div_since = 0;
    } else if (rc->div_since == 0) {
        rc->div_since = now;
    }
    if (!rc->converged && !F.active) {
        double from = rc->div_since > F.quiet_since ? rc->div_since : F.quiet_since;
        double d = now - from;
        if (d > rc->max_div)
            rc->max_div = d;
        if (d > opt.converge_bound && d - CHECK_EVERY_S <= opt.converge_bound)
            violation("diverged", &M.diverged, "%s: /inspect differs from the annotations (%ld items) for %.0f s "
                      "outside any fault%s", rp->name, persist, d, ok ? "" : " (no /inspect answer)");
    }
}

/* ----------------------------------------------------------- samples --- */

static const char *const verbs[3] = {"filter", "prioritize", "bind"};
static const double les[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, INFINITY};
#define NLE (sizeof les / sizeof les[0])

static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return atof(p + n + 1);
    return NAN;
}

static double metric_sum(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    double s = 0;
    bool any = false;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, n) == 0 && (p[n] == ' ' || p[n] == '{')) {
            const char *sp = strchr(p, ' ');
            if (sp) {
                s += atof(sp + 1);
                any = true;
            }
        }
    return any ? s : NAN;
}

/* Cumulative bucket counts of one verb's latency histogram (whatever buckets
 * gpupack has, mapped onto les[] by their upper bound). */
static void hist(const char *text, const char *verb, double *out)
{
    memset(out, 0, NLE * sizeof *out);
    char pre[128];
    snprintf(pre, sizeof pre, "gpupack_request_duration_seconds_bucket{verb=\"%s\",le=\"", verb);
    size_t n = strlen(pre);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, pre, n) != 0)
            continue;
        double le = strncmp(p + n, "+Inf", 4) == 0 ? INFINITY : atof(p + n);
        const char *sp = strchr(p, ' ');
        double v = sp ? atof(sp + 1) : 0;
        for (size_t i = 0; i < NLE; i++)
            if (les[i] >= le) {
                if (v > out[i])
                    out[i] = v;
            }
    }
    /* cumulative counts are monotone: a coarser histogram fills the finer grid from above */
    for (size_t i = NLE - 1; i > 0; i--)
        if (out[i - 1] > out[i])
            out[i - 1] = out[i];
}

static double quantile(const double *cum, double q)
{
    double total = cum[NLE - 1];
    if (total <= 0)
        return NAN;
    double want = q * total, prev_le = 0, prev_n = 0;
    for (size_t i = 0; i < NLE; i++) {
        if (cum[i] >= want) {
            if (isinf(les[i]))
                return prev_le;
            return prev_le + (les[i] - prev_le) * (want - prev_n) / (cum[i] - prev_n > 0 ? cum[i] - prev_n : 1);
        }
        prev_le = les[i];
        prev_n = cum[i];
    }
    return prev_le;
}

static long read_long_file(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

static void read_word_file(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (f) {
        if (!fgets(out, (int)len, f))
            out[0] = '\0';
        out[strcspn(out, "\n")] = '\0';
        fclose(f);
    }
}

typedef struct proc_stat {
    double rss_mib;
    double anon_mib, file_mib;  /* RssAnon: the process's own pages (a leak shows here);
                                 * RssFile: pages of the binary and libraries it has touched,
                                 * which cannot pass what it maps */
    int fds, threads;
} proc_stat;

static bool proc_read(long pid, proc_stat *s)
{
    char path[64], line[256];
    memset(s, 0, sizeof *s);
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return false;
    char state = '?';
    while (fgets(line, sizeof line, f)) {
        double kib;
        int th;
        char st;
        if (sscanf(line, "VmRSS: %lf kB", &kib) == 1)
            s->rss_mib = kib / 1024;
        else if (sscanf(line, "RssAnon: %lf kB", &kib) == 1)
            s->anon_mib = kib / 1024;
        else if (sscanf(line, "RssFile: %lf kB", &kib) == 1)
            s->file_mib = kib / 1024;
        else if (sscanf(line, "Threads: %d", &th) == 1)
            s->threads = th;
        else if (sscanf(line, "State: %c", &st) == 1)
            state = st;
    }
    fclose(f);
    if (state == 'Z')
        return false;
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            s->fds++;
    if (d)
        closedir(d);
    return true;
}

/* One row per replica per sample in proc.csv; one row per sample in cluster.csv. */
typedef struct psample {
    double t;                   /* seconds since go */
    int rep;
    long pid;
    bool is_new;
    int seg;                    /* a process's run in one role: growth() gives each its own warm-up */
    double rss, fds, threads, heap;   /* heap: MiB in use by the allocator (NAN if not served) */
    double anon, file;          /* RssAnon, RssFile (NAN when proc.csv predates them) */
} psample;

static struct {
    psample *s;
    size_t n, cap;
    int nseg;
    FILE *proc, *cluster;
    double last_bound_rate;
} S;

static void sample(double t_rel, double window_s)
{
    double cum[3][NLE];
    memset(cum, 0, sizeof cum);
    for (int r = 0; r < opt.nrep; r++) {
        replica *rp = &opt.rep[r];
        char path[1200];
        snprintf(path, sizeof path, "%s/pid-%s", opt.out, rp->name);
        rp->pid = read_long_file(path);
        snprintf(path, sizeof path, "%s/ver-%s", opt.out, rp->name);
        read_word_file(path, rp->ver, sizeof rp->ver);
        proc_stat ps;
        bool alive = proc_read(rp->pid, &ps);
        char *m = rep_get(rp, "/metrics", NULL);
        double leader = m ? metric(m, "gpupack_leader") : NAN;
        double pb = m ? metric(m, "gpupack_pods{state=\"bound\"}") : NAN;
        double pa = m ? metric(m, "gpupack_pods{state=\"assumed\"}") : NAN;
        double rem = m ? metric(m, "gpupack_pods_remembered") : NAN;
        double res = m ? metric(m, "gpupack_preemption_reservations") : NAN;
        double parked = m ? metric(m, "gpupack_requeue_parked_pods") : NAN;
        double preempt = m ? metric(m, "gpupack_preemptions_total") : NAN;
        double lists = m ? metric_sum(m, "gpupack_lists_total") : NAN;
        double heap = m ? metric(m, "gpupack_heap_bytes{state=\"in_use\"}") / 1048576.0 : NAN;
        double known = m ? metric(m, "gpupack_preemption_pods_known") : NAN;
        for (int v = 0; v < 3 && m; v++) {
            double h[NLE];
            hist(m, verbs[v], h);
            bool reset = rp->pid != rp->pid_prev || h[NLE - 1] < rp->hist_prev[v][NLE - 1];
            for (size_t i = 0; i < NLE; i++) {
                cum[v][i] += reset ? h[i] : h[i] - rp->hist_prev[v][i];
                rp->hist_prev[v][i] = h[i];
            }
        }
        rp->pid_prev = rp->pid;
        free(m);
        fprintf(S.proc, "%.1f,%s,%s,%ld,%d,%.2f,%d,%d,%g,%g,%g,%g,%g,%g,%g,%g,%.2f,%g,%.2f,%.2f\n", t_rel, rp->name,
                rp->ver, rp->pid, alive, ps.rss_mib, ps.fds, ps.threads, leader, pb, pa, rem, res, parked, preempt,
                lists, heap, known, ps.anon_mib, ps.file_mib);
        /* a new segment at the process's start and at each change of role (a
         * scrape that failed keeps the role it had) */
        bool is_leader = isnan(leader) ? rp->seg_leader : leader == 1;
        if (rp->pid != rp->seg_pid || is_leader != rp->seg_leader) {
            rp->seg = ++S.nseg;
            rp->seg_pid = rp->pid;
            rp->seg_leader = is_leader;
        }
        if (alive) {
            if (S.n == S.cap) {
                S.cap = S.cap ? 2 * S.cap : 1024;
                S.s = xrealloc(S.s, S.cap * sizeof *S.s);
            }
            S.s[S.n++] = (psample){t_rel,   r,          rp->pid,    strcmp(rp->ver, "new") == 0,
                                   rp->seg, ps.rss_mib, ps.fds,     ps.threads,
                                   heap,    ps.anon_mib, ps.file_mib};
        }
    }
    pthread_mutex_lock(&M.mu);
    long binds = M.binds_window;
    M.binds_window = 0;
    long npods = (long)strmap_count(M.pods), bound = 0, gpus = 0, gpus_used = 0;
    double core = 0;
    size_t it = 0;
    pod_m *p;
    while ((p = strmap_next(M.pods, &it, NULL)))
        bound += p->bound;
    node_m *nd;
    it = 0;
    while ((nd = strmap_next(M.nodes, &it, NULL)))
        for (int g = 0; g < nd->ngpus; g++) {
            gpus++;
            gpus_used += nd->g[g].mem_used > 0 || nd->g[g].core_used > 0;
            core += nd->g[g].core_used;
        }
    pthread_mutex_unlock(&M.mu);
    fprintf(S.cluster, "%.1f,%ld,%ld,%ld,%.2f,%g,%g,%g,%g,%g,%g,%ld,%ld,%d,%.1f,%.1f\n", t_rel, npods, bound, pending_now,
            window_s > 0 ? binds / window_s : 0, quantile(cum[0], 0.5) * 1000, quantile(cum[0], 0.99) * 1000,
            quantile(cum[2], 0.5) * 1000, quantile(cum[2], 0.99) * 1000, quantile(cum[1], 0.5) * 1000,
            quantile(cum[1], 0.99) * 1000, fit_pending_now, atomic_load(&C.created), F.active,
            gpus ? 100.0 * (double)gpus_used / (double)gpus : 0, gpus ? core / (10.0 * (double)gpus) : 0);
    fflush(S.proc);
    fflush(S.cluster);
}

/* Growth per hour of a /proc figure over the current build's processes:
 * one slope shared by every segment -- a process's run in one role, leader or
 * not -- each with its own level (a pooled within-segment regression). A
 * replica that takes the lead fills the leader's caches (verdicts, pending
 * pods, bind state) then: a step, not a growth, so each segment has its own
 * warm-up. Only samples after the run's warm-up and each segment's first
 * PROC_WARM_S count, only segments with PROC_SPAN_S of such samples, and
 * each minute of those counts once, by its median (10-s samples of one process
 * are not independent; and a minute's median moves neither with the dip of a
 * heap trim nor with the peak of a LIST page, where its mean moved by up to
 * 7 MiB in the 60-minute v1.26 run). Returns %/h of the mean; *ci
 * the 95 % half-width; *npts the minutes used; NAN when no segment lasted
 * long enough. */
#define PROC_SPAN_S 300.0
#define BLOCK_S 60.0

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0); sorts v. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double sval(const psample *y, int what)
{
    return what == 0 ? y->rss : what == 1 ? y->fds : what == 2 ? y->threads : what == 3 ? y->heap
           : what == 4 ? y->anon : y->file;
}

/* Where a segment's samples start to count: PROC_WARM_S after its first
 * sample and after the run's warm-up; with by_round also after the
 * convergence of the first fault of each kind that keeps the processes (the
 * API side: apiserver, compact, scheduler, slow) that the segment lived
 * through. Each such burst sets a high-water mark once (a relist's pages, the
 * bind threads' queues while the API server is slow, the allocator's
 * per-thread caches meeting new sizes); a ratchet would step again at the
 * second fault of a kind, which the fit then sees. */
static double seg_from(double t0, double t1, double warm, bool by_round)
{
    static const char *const kinds[] = {"apiserver", "compact", "scheduler", "slow"};
    double from = t0 + PROC_WARM_S > warm ? t0 + PROC_WARM_S : warm;
    for (size_t k = 0; by_round && k < sizeof kinds / sizeof *kinds; k++)
        for (int i = 0; i < F.n; i++) {
            const fault *f = &F.f[i];
            double s = f->start - C.t_go;
            if (strcmp(f->name, kinds[k]) != 0 || s < t0 || s > t1)
                continue;
            double e = f->converged > 0 ? f->converged - C.t_go : f->end > 0 ? f->end - C.t_go : t1;
            if (e > from)
                from = e;
            break;
        }
    return from;
}

static double growth(int what, double warm, bool by_round, double *ci, size_t *npts, double *mean_out)
{
    /* minute medians per process: (group, t, v) */
    size_t cap = S.n + 1, nb = 0, groups = 0, capk = 0;
    double *bt = xcalloc(cap, sizeof *bt), *bv = xcalloc(cap, sizeof *bv), *kv = NULL;
    size_t *bg = xcalloc(cap, sizeof *bg);
    for (size_t a = 0; a < S.n; a++) {
        const psample *x = &S.s[a];
        bool first = true;
        for (size_t b = 0; b < a && first; b++)
            first = S.s[b].seg != x->seg;
        if (!first || !x->is_new)
            continue;
        double t1 = x->t, last = -1;
        for (size_t b = a; b < S.n; b++)
            if (S.s[b].seg == x->seg)
                t1 = S.s[b].t;
        double from = seg_from(x->t, t1, warm, by_round);
        for (size_t b = a; b < S.n; b++)
            if (S.s[b].seg == x->seg && S.s[b].t >= from)
                last = S.s[b].t;
        if (last < 0 || last - from < PROC_SPAN_S)
            continue;
        size_t g = ++groups;
        double st = 0;
        size_t k = 0;
        int blk = 0;
        for (size_t b = a; b < S.n; b++) {
            const psample *y = &S.s[b];
            if (y->seg != x->seg || y->t < from || isnan(sval(y, what)))
                continue;
            int yb = (int)((y->t - from) / BLOCK_S);
            if (yb != blk && k) {
                bt[nb] = st / (double)k, bv[nb] = median(kv, k), bg[nb++] = g;
                st = 0, k = 0;
            }
            blk = yb;
            if (k == capk)
                kv = xrealloc(kv, (capk = capk ? 2 * capk : 16) * sizeof *kv);
            st += y->t, kv[k++] = sval(y, what);
        }
        if (k)
            bt[nb] = st / (double)k, bv[nb] = median(kv, k), bg[nb++] = g;
    }
    free(kv);
    double sxx = 0, sxy = 0, sum = 0, ss = 0;
    double *mt = xcalloc(groups + 1, sizeof *mt), *mv = xcalloc(groups + 1, sizeof *mv);
    size_t *mk = xcalloc(groups + 1, sizeof *mk);
    for (size_t i = 0; i < nb; i++)
        mt[bg[i]] += bt[i], mv[bg[i]] += bv[i], mk[bg[i]]++;
    for (size_t g = 1; g <= groups; g++)
        if (mk[g])
            mt[g] /= (double)mk[g], mv[g] /= (double)mk[g];
    for (size_t i = 0; i < nb; i++) {
        sxx += (bt[i] - mt[bg[i]]) * (bt[i] - mt[bg[i]]);
        sxy += (bt[i] - mt[bg[i]]) * (bv[i] - mv[bg[i]]);
        sum += bv[i];
    }
    double slope = sxx > 0 ? sxy / sxx : NAN;
    for (size_t i = 0; i < nb && sxx > 0; i++) {
        double e = (bv[i] - mv[bg[i]]) - slope * (bt[i] - mt[bg[i]]);
        ss += e * e;
    }
    double dof = (double)nb - (double)groups - 1;
    double mean = nb ? sum / (double)nb : NAN;
    /* Student's t for small samples (95 %, two-sided), 1.96 from 30 on */
    static const double tq[] = {0, 12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23,
                                2.20, 2.18, 2.16, 2.14, 2.13, 2.12, 2.11, 2.10, 2.09, 2.09};
    double t95 = dof >= 30 ? 1.96 : dof >= 21 ? 2.06 : dof >= 1 ? tq[(int)dof] : NAN;
    double se = dof > 0 && sxx > 0 ? sqrt(ss / dof / sxx) : NAN;
    *npts = nb;
    *mean_out = mean;
    *ci = mean > 0 ? t95 * se * 3600 / mean * 100 : NAN;
    free(bt);
    free(bv);
    free(bg);
    free(mt);
    free(mv);
    free(mk);
    return mean > 0 && dof > 0 ? slope * 3600 / mean * 100 : NAN;
}

/* The growth verdicts of a run: RSS, fds, threads and heap in use by the
 * rule above, RSS and heap also without the fault round. RSS splits into
 * RssAnon and RssFile: reported beside it, not judged. */
#define NGROWTH 6              /* RSS, fds, threads, heap in use, RssAnon, RssFile (sval's order) */
typedef struct growth_verdicts {
    double warm;
    double gr[NGROWTH], ci[NGROWTH], mean[NGROWTH];
    size_t np[NGROWTH];
    const char *verdict[NGROWTH];
    char gtext[NGROWTH][96];
    double gr0[2], ci0[2], mean0[2];   /* RSS, heap: without the fault round */
    size_t np0[2];
} growth_verdicts;

static const char *verdict_of(double gr, double ci)
{
    /* noise: a growth counts when even the low end of its 95 % interval reaches the limit;
     * flat when the high end stays below it; otherwise the run is too short to tell */
    return isnan(gr) || isnan(ci)        ? "unmeasured"
           : gr - ci >= opt.growth_max  ? "GROWS"
           : gr + ci < opt.growth_max   ? "flat"
                                         : "undetermined";
}

static void judge_growth(double t_end, growth_verdicts *g)
{
    memset(g, 0, sizeof *g);
    g->warm = t_end * 0.2 > 120 ? t_end * 0.2 : 120;
    for (int w = 0; w < NGROWTH; w++) {
        g->gr[w] = growth(w, g->warm, true, &g->ci[w], &g->np[w], &g->mean[w]);
        g->verdict[w] = verdict_of(g->gr[w], g->ci[w]);
        bool recorded = false;
        for (size_t i = 0; i < S.n && !recorded; i++)
            recorded = !isnan(sval(&S.s[i], w));
        if (!recorded)
            snprintf(g->gtext[w], sizeof g->gtext[w], "not recorded (a proc.csv older than the figure)");
        else if (isnan(g->gr[w]) || isnan(g->ci[w]))
            snprintf(g->gtext[w], sizeof g->gtext[w], "unmeasured: no process of the current build ran %.0f s past "
                     "the warm-ups", PROC_SPAN_S);
        else
            snprintf(g->gtext[w], sizeof g->gtext[w], "%+.2f %%/h +-%.2f: %s", g->gr[w], g->ci[w], g->verdict[w]);
    }
    for (int w = 0; w < 2; w++)
        g->gr0[w] = growth(w ? 3 : 0, g->warm, false, &g->ci0[w], &g->np0[w], &g->mean0[w]);
}

static void print_growth(const growth_verdicts *g)
{
    printf("growth (95 %% CI) after the run's first %.0f s and each process's first %.0f s in a role (leader or not) "
           "and its first fault of each API-side kind, over %zu process-minutes, "
           "limit %.1f %%/h: RSS %s (mean %.1f MiB); fds %s (mean %.1f); threads %s; heap in use %s "
           "(mean %.1f MiB, not judged: it tells a kept allocation from fragmentation)\n", g->warm, PROC_WARM_S,
           g->np[0], opt.growth_max, g->gtext[0], g->mean[0], g->gtext[1], g->mean[1], g->gtext[2], g->gtext[3],
           g->mean[3]);
    printf("RSS in two parts (not judged): the process's own pages (RssAnon) %s (mean %.1f MiB); pages of the "
           "binary and libraries (RssFile) %s (mean %.1f MiB)\n", g->gtext[4], g->mean[4], g->gtext[5], g->mean[5]);
    printf("growth without the fault round in the warm-up (reported, not judged), over %zu process-minutes: "
           "RSS %+.2f %%/h +-%.2f; heap in use %+.2f %%/h +-%.2f\n", g->np0[0], g->gr0[0], g->ci0[0], g->gr0[1],
           g->ci0[1]);
}

/* bin/soak growth DIR [--growth-max P]: the growth verdicts again from a
 * finished run's proc.csv, faults.csv and report.json (the run's length),
 * by the rule of this build: the figures of runs judged by an earlier rule,
 * side by side with today's. Exit 1 when RSS or fds grow. */
static int cmd_growth(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: soak growth DIR [--growth-max 2]\n");
        return 2;
    }
    const char *dir = argv[2];
    opt.growth_max = 2;
    for (int i = 3; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--growth-max") == 0)
            opt.growth_max = atof(argv[i + 1]);
    char path[1200], line[1024];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_t *rep = json_load_file(path, 0, NULL);
    double t_end = rep ? json_real_value(json_object_get(rep, "minutes")) * 60 : 0;
    json_decref(rep);
    snprintf(path, sizeof path, "%s/faults.csv", dir);
    FILE *ff = fopen(path, "r");
    if (!ff || t_end <= 0) {
        fprintf(stderr, "soak growth: %s has no report.json with the run's minutes, or no faults.csv\n", dir);
        if (ff)
            fclose(ff);
        return 2;
    }
    C.t_go = 0;
    while (fgets(line, sizeof line, ff) && F.n < MAX_FAULTS) {
        double a, b, d, cv;
        char name[64];
        /* t_start,t_end,fault,duration_s,converged_after_s ("nan" when unknown) */
        if (sscanf(line, "%lf,%lf,%63[^,],%lf,%lf", &a, &b, name, &d, &cv) != 5)
            continue;
        fault *f = &F.f[F.n++];
        gp_strlcpy(f->name, name, sizeof f->name);
        f->start = a;
        f->end = isnan(b) ? 0 : b;
        f->converged = isnan(cv) || isnan(b) ? 0 : b + cv;
    }
    fclose(ff);
    snprintf(path, sizeof path, "%s/proc.csv", dir);
    FILE *pf = fopen(path, "r");
    if (!pf) {
        fprintf(stderr, "soak growth: cannot read %s\n", path);
        return 2;
    }
    /* as sample() does: a segment per process and role, a failed scrape keeping the role */
    char names[MAX_REPLICAS][64] = {{0}};
    long seg_pid[MAX_REPLICAS] = {0};
    bool seg_leader[MAX_REPLICAS] = {false};
    int seg[MAX_REPLICAS] = {0}, nrep = 0;
    while (fgets(line, sizeof line, pf)) {
        char *f[24];
        int nf = 0;
        line[strcspn(line, "\n")] = '\0';
        for (char *tok = line, *sep; nf < 24; tok = sep + 1) {
            f[nf++] = tok;
            if (!(sep = strchr(tok, ',')))
                break;
            *sep = '\0';
        }
        if (nf < 17 || strcmp(f[0], "t") == 0)
            continue;
        int r = 0;
        while (r < nrep && strcmp(names[r], f[1]) != 0)
            r++;
        if (r == nrep) {
            if (nrep == MAX_REPLICAS)
                continue;
            gp_strlcpy(names[nrep++], f[1], sizeof names[0]);
        }
        long pid = atol(f[3]);
        double leader = strtod(f[8], NULL);
        bool is_leader = isnan(leader) ? seg_leader[r] : leader == 1;
        if (pid != seg_pid[r] || is_leader != seg_leader[r]) {
            seg[r] = ++S.nseg;
            seg_pid[r] = pid;
            seg_leader[r] = is_leader;
        }
        if (atoi(f[4]) != 1)
            continue;
        if (S.n == S.cap) {
            S.cap = S.cap ? 2 * S.cap : 1024;
            S.s = xrealloc(S.s, S.cap * sizeof *S.s);
        }
        S.s[S.n++] = (psample){strtod(f[0], NULL), r, pid, strcmp(f[2], "new") == 0, seg[r], strtod(f[5], NULL),
                               strtod(f[6], NULL), strtod(f[7], NULL), strtod(f[16], NULL),
                               nf > 19 ? strtod(f[18], NULL) : NAN, nf > 19 ? strtod(f[19], NULL) : NAN};
    }
    fclose(pf);
    growth_verdicts gv;
    judge_growth(t_end, &gv);
    printf("# soak growth %s: %.1f min, %zu samples, %d faults\n", dir, t_end / 60, S.n, F.n);
    print_growth(&gv);
    free(S.s);
    return strcmp(gv.verdict[0], "GROWS") == 0 || strcmp(gv.verdict[1], "GROWS") == 0;
}

/* ------------------------------------------------------------ routing --- */

/* The front's route: the replica whose Pod carries gpupack.io/leader=true
 * (while the API server is away, the last answer stands, as endpoints do). */
static void route(gp_kube *k)
{
    gp_kube_resp resp;
    gp_err err;
    if (kube_request(k, "GET", "/api/v1/namespaces/gpupack-system/pods?labelSelector=gpupack.io%2Fleader%3Dtrue",
                     NULL, NULL, 2, NULL, &resp, &err) < 0 ||
        resp.status != 200) {
        kube_resp_free(&resp);
        return;
    }
    json_t *l = json_loadb(resp.body.data, resp.body.len, 0, NULL);
    kube_resp_free(&resp);
    size_t i;
    json_t *p;
    int port = 0;
    json_array_foreach(json_object_get(l, "items"), i, p) {
        const char *n = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        for (int r = 0; r < opt.nrep && n && !port; r++)
            if (strcmp(opt.rep[r].name, n) == 0)
                port = opt.rep[r].port;
    }
    json_decref(l);
    atomic_store(&front.target, port);
}

static void *route_thread(void *arg)
{
    gp_kube *k = arg;
    while (!atomic_load(&C.stop)) {
        route(k);
        usleep(500000);
    }
    return NULL;
}

/* ------------------------------------------------------------ control --- */

/* New lines of DIR/control since the last call. */
static void control(FILE *f)
{
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        double t = 0;
        char word[64] = "", a1[128] = "";
        if (sscanf(line, "%lf %63s %127s", &t, word, a1) < 2)
            continue;
        if (strcmp(word, "go") == 0) {
            C.t_go = t;
            F.quiet_since = F.fill_start = gp_mono_s();
            F.filling = opt.prefill > 0;
            atomic_store(&C.go, true);
        } else if (strcmp(word, "stop") == 0) {
            atomic_store(&C.stop, true);
        } else if (strcmp(word, "slow") == 0) {
            atomic_store(&proxy.delay_ms, atoi(a1));
        } else if (strcmp(word, "partition") == 0) {
            bool on = strcmp(a1, "on") == 0;
            atomic_store(&proxy.partitioned, on);
            if (on)
                atomic_fetch_add(&proxy.gen, 1);   /* cut what is open */
        } else if (strcmp(word, "fault-start") == 0 && F.n < MAX_FAULTS) {
            fault *x = &F.f[F.n++];
            gp_strlcpy(x->name, a1, sizeof x->name);
            x->start = t;
            F.active++;
            fprintf(stderr, "soak: fault %s\n", a1);
        } else if (strcmp(word, "fault-end") == 0) {
            for (int i = F.n - 1; i >= 0; i--)
                if (F.f[i].end == 0 && strcmp(F.f[i].name, a1) == 0) {
                    F.f[i].end = t;
                    if (F.active > 0)
                        F.active--;
                    double m = wall_to_mono(t);
                    if (m > F.quiet_since)
                        F.quiet_since = m;
                    break;
                }
        }
    }
    clearerr(f);
}

/* ---------------------------------------------------------------- run --- */


static int cmd_run(int argc, char **argv)
{
    opt.kubeconfig = arg(argc, argv, "--kubeconfig", NULL);
    opt.out = arg(argc, argv, "--out", NULL);
    opt.trace_pods = arg(argc, argv, "--trace-pods", NULL);
    opt.ca = arg(argc, argv, "--ca", NULL);
    opt.apiserver = arg(argc, argv, "--apiserver", NULL);
    opt.scheduler = arg(argc, argv, "--scheduler", "gpupack-scheduler");
    opt.seed = strtoull(arg(argc, argv, "--seed", "42"), NULL, 10);
    opt.rate = atof(arg(argc, argv, "--rate", "8"));
    opt.lifetime = atof(arg(argc, argv, "--lifetime", "450"));
    opt.prefill = atoi(arg(argc, argv, "--prefill", "-1"));
    opt.bind_bound = atof(arg(argc, argv, "--bind-bound", "120"));
    opt.converge_bound = atof(arg(argc, argv, "--converge-bound", "60"));
    opt.growth_max = atof(arg(argc, argv, "--growth-max", "2"));
    for (int i = 2; i < argc; i++)
        opt.safety_only = opt.safety_only || strcmp(argv[i], "--safety-only") == 0;
    if (opt.prefill < 0)
        opt.prefill = (int)(opt.rate * opt.lifetime);   /* the steady state from the start */
    for (int i = 2; i + 1 < argc && opt.nrep < MAX_REPLICAS; i++) {
        if (strcmp(argv[i], "--replica") != 0)
            continue;
        replica *r = &opt.rep[opt.nrep++];
        if (sscanf(argv[i + 1], "%63[^=]=%d", r->name, &r->port) != 2) {
            fprintf(stderr, "soak: --replica NAME=PORT\n");
            return 2;
        }
    }
    int ap = 0;
    if (!opt.out || !opt.trace_pods || !opt.apiserver || sscanf(opt.apiserver, "%*[^:]:%d", &ap) != 1 ||
        opt.nrep == 0 || opt.rate <= 0 || opt.lifetime <= 0) {
        fprintf(stderr, "soak run: --kubeconfig, --out, --trace-pods, --apiserver HOST:PORT and --replica are needed\n");
        return 2;
    }
    gp_err err;
    if (trace_load_pods(opt.trace_pods, &C.rows, &C.nrows, &err) < 0 || C.nrows == 0) {
        fprintf(stderr, "soak: %s\n", C.nrows ? err.msg : "no pods in the trace");
        return 2;
    }
    C.ref_mib = 15109;   /* the smallest GPU of the openb trace's nodes (e2eload's reference) */
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    M.nodes = strmap_new();
    M.pods = strmap_new();
    for (int r = 0; r < opt.nrep; r++)
        RC[r].assumed = strmap_new();

    if (tcpfwd_start(&front) != 0) {
        perror("soak: listen");
        return 2;
    }
    atomic_store(&proxy.target, ap);
    if (tcpfwd_start(&proxy) != 0) {
        perror("soak: listen");
        return 2;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/front.port", opt.out);
    FILE *pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%d\n", front.port);
        fclose(pf);
    }
    snprintf(path, sizeof path, "%s/proxy.port", opt.out);
    pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%d\n", proxy.port);
        fclose(pf);
    }

    gp_kube *kw = client(opt.kubeconfig), *kc = client(opt.kubeconfig), *kr = client(opt.kubeconfig);
    gp_reflector_ops nops = {.resync_begin = ops_begin, .resync_end = nodes_end, .apply = nodes_apply};
    /* untrimmed: the soak's own shape annotation is not one gpupack keeps */
    gp_reflector_ops pops = {.resync_begin = ops_begin, .resync_end = pods_end, .apply = pods_apply};
    gp_reflector_config ncfg = {.resource = "nodes", .path = "/api/v1/nodes", .backoff_max_s = 2};
    gp_reflector_config pcfg = {.resource = "pods", .path = "/api/v1/namespaces/" NS "/pods", .backoff_max_s = 2};
    gp_reflector *rn = reflector_new(kw, &ncfg, &nops, NULL);
    gp_reflector *rpods = reflector_new(kw, &pcfg, &pops, NULL);
    reflector_set_gate(rpods, rn);
    if (reflector_start(rn, &err) < 0 || reflector_start(rpods, &err) < 0) {
        fprintf(stderr, "soak: %s\n", err.msg);
        return 2;
    }
    pthread_t churn, router;
    pthread_create(&churn, NULL, churn_thread, kc);
    pthread_create(&router, NULL, route_thread, kr);

    snprintf(path, sizeof path, "%s/control", opt.out);
    FILE *cf = NULL;
    for (int i = 0; i < 100 && !cf; i++) {
        cf = fopen(path, "r");
        if (!cf)
            usleep(100000);
    }
    if (!cf) {
        fprintf(stderr, "soak: %s: cannot read\n", path);
        return 2;
    }
    snprintf(path, sizeof path, "%s/proc.csv", opt.out);
    S.proc = fopen(path, "w");
    snprintf(path, sizeof path, "%s/cluster.csv", opt.out);
    S.cluster = fopen(path, "w");
    if (!S.proc || !S.cluster) {
        fprintf(stderr, "soak: cannot write in %s\n", opt.out);
        return 2;
    }
    fprintf(S.proc, "t,replica,build,pid,alive,rss_mib,fds,threads,leader,pods_bound,pods_assumed,pods_remembered,"
                    "reservations,parked,preemptions,lists,heap_mib,pods_known,rss_anon_mib,rss_file_mib\n");
    fprintf(S.cluster, "t,pods,bound,pending,binds_per_s,filter_p50_ms,filter_p99_ms,bind_p50_ms,bind_p99_ms,"
                       "prioritize_p50_ms,prioritize_p99_ms,fit_pending,created,faults_active,gpus_used_pct,core_used_pct\n");

    double next_check = 0, next_sample = 0, last_sample = 0, t_go_mono = 0;
    while (!atomic_load(&C.stop)) {
        control(cf);
        double now = gp_mono_s();
        if (!atomic_load(&C.go)) {
            usleep(100000);
            continue;
        }
        if (t_go_mono == 0) {
            t_go_mono = now;
            next_check = now + CHECK_EVERY_S;
            next_sample = now;
        }
        /* /proc is read before the checks fetch /inspect: right after an
         * answer of a few MiB, the replica may not have freed it yet, and RSS
         * would swing by as much between samples (seen: 40.5 / 48.8 MiB) */
        if (now >= next_sample) {
            sample(now - t_go_mono, last_sample ? now - last_sample : 0);
            last_sample = now;
            next_sample = now + SAMPLE_EVERY_S;
        }
        if (now >= next_check) {
            next_check = now + CHECK_EVERY_S;
            pthread_mutex_lock(&M.mu);
            check_pending();
            pthread_mutex_unlock(&M.mu);
            bool all = true;
            resv_next = strmap_new();
            for (int r = 0; r < opt.nrep; r++) {
                check_replica(r);
                all = all && RC[r].converged;
            }
            if (resv_now)
                free_boxed(resv_now);
            resv_now = resv_next;
            resv_next = NULL;
            /* the faults that ended and were not yet seen converged */
            double w = wall_s();
            for (int i = 0; i < F.n; i++)
                if (F.f[i].end > 0 && F.f[i].converged == 0 && all && F.active == 0)
                    F.f[i].converged = w;
        }
        usleep(100000);
    }
    double t_end = gp_mono_s() - t_go_mono;
    pthread_join(churn, NULL);
    pthread_join(router, NULL);
    reflector_free(rpods);
    reflector_free(rn);
    tcpfwd_stop(&front);
    tcpfwd_stop(&proxy);

    /* ------------------------------------------------------- report --- */
    snprintf(path, sizeof path, "%s/faults.csv", opt.out);
    FILE *ff = fopen(path, "w");
    double max_conv = 0;
    int unconverged = 0;
    if (ff)
        fprintf(ff, "t_start,t_end,fault,duration_s,converged_after_s\n");
    for (int i = 0; i < F.n; i++) {
        fault *x = &F.f[i];
        double conv = x->converged > 0 ? x->converged - x->end : NAN;
        if (x->end > 0 && x->converged == 0)
            unconverged++;
        if (conv > max_conv)
            max_conv = conv;
        if (ff)
            fprintf(ff, "%.1f,%.1f,%s,%.1f,%.1f\n", x->start - C.t_go, x->end > 0 ? x->end - C.t_go : NAN, x->name,
                    x->end > 0 ? x->end - x->start : NAN, conv);
    }
    if (ff)
        fclose(ff);
    if (unconverged)
        violation("diverged", &M.diverged, "%d fault(s) never converged before the end", unconverged);
    if (max_conv > opt.converge_bound)
        violation("diverged", &M.diverged, "a fault converged after %.0f s (bound %.0f s)", max_conv,
                  opt.converge_bound);
    growth_verdicts gv;
    judge_growth(t_end, &gv);
    for (int w = 0; w < 2; w++)
        if (strcmp(gv.verdict[w], "GROWS") == 0)
            violation("growth", &M.proc, "%s grows %.2f %%/h (95 %% CI +-%.2f) over the current build's processes",
                      w == 0 ? "RSS" : "open fds", gv.gr[w], gv.ci[w]);
    qsort(M.waits, M.nwaits, sizeof *M.waits, cmp_d);
    double w50 = M.nwaits ? M.waits[M.nwaits / 2] : NAN;
    double w99 = M.nwaits ? M.waits[M.nwaits * 99 / 100] : NAN;
    double wmax = M.nwaits ? M.waits[M.nwaits - 1] : NAN;
    double maxdiv = 0;
    for (int r = 0; r < opt.nrep; r++)
        if (RC[r].max_div > maxdiv)
            maxdiv = RC[r].max_div;
    long total = M.overcommit + M.rebound + M.badassign + M.stuck + M.diverged + M.ttl + M.proc;
    /* --safety-only (CI): what no load excuses -- a GPU over capacity, a pod bound twice, a bad
     * assignment -- decides; the time bounds (stuck, diverged, TTL) and growth are reported */
    long unsafe = M.overcommit + M.rebound + M.badassign;

    json_t *rep = json_pack(
        "{s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I},s:I,s:{s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
        "minutes", t_end / 60, "pods_created", (json_int_t)atomic_load(&C.created), "pods_deleted",
        (json_int_t)atomic_load(&C.deleted), "binds_seen", (json_int_t)M.bound_total, "create_failures",
        (json_int_t)atomic_load(&C.create_fail), "delete_failures", (json_int_t)atomic_load(&C.delete_fail),
        "front_connections", (json_int_t)atomic_load(&front.conns), "proxy_connections",
        (json_int_t)atomic_load(&proxy.conns), "shapes", "cpu", (json_int_t)atomic_load(&C.cpu_pods), "share",
        (json_int_t)atomic_load(&C.share_pods), "whole", (json_int_t)atomic_load(&C.whole_pods), "prefill",
        (json_int_t)opt.prefill, "priorities", "low", (json_int_t)atomic_load(&C.prio[0]), "mid",
        (json_int_t)atomic_load(&C.prio[1]), "high", (json_int_t)atomic_load(&C.prio[2]), "violations",
        "overcommit", (json_int_t)M.overcommit, "bound_twice", (json_int_t)M.rebound, "bad_assignment",
        (json_int_t)M.badassign, "stuck", (json_int_t)M.stuck, "diverged", (json_int_t)M.diverged, "ttl",
        (json_int_t)M.ttl, "growth", (json_int_t)M.proc);
    json_object_set_new(rep, "fit_to_bound_s", json_pack("{s:I,s:f,s:f,s:f,s:f}", "n", (json_int_t)M.nwaits, "p50",
                                                         isnan(w50) ? -1 : w50, "p99", isnan(w99) ? -1 : w99,
                                                         "max", isnan(wmax) ? -1 : wmax, "bound", opt.bind_bound));
    double fill_s = F.fill_end > 0 ? F.fill_end - F.fill_start : -1;
    json_object_set_new(rep, "first_fill", json_pack("{s:I,s:f,s:f}", "pods", (json_int_t)opt.prefill, "drained_after_s",
                                                     fill_s, "cap_s", FILL_MAX_S));
    json_object_set_new(rep, "convergence_s", json_pack("{s:i,s:f,s:f,s:f}", "faults", F.n, "max_after_fault",
                                                        max_conv, "max_divergence_outside_faults", maxdiv, "bound",
                                                        opt.converge_bound));
    const char *wn[NGROWTH] = {"rss", "fds", "threads", "heap_in_use", "rss_anon", "rss_file"};
    json_t *g = json_object();
    for (int w = 0; w < NGROWTH; w++)
        json_object_set_new(g, wn[w], json_pack("{s:s,s:f,s:f,s:f,s:I}", "verdict", gv.verdict[w], "pct_per_hour",
                                                isnan(gv.gr[w]) ? 0 : gv.gr[w],
                                                "ci95", isnan(gv.ci[w]) ? -1 : gv.ci[w], "mean",
                                                isnan(gv.mean[w]) ? 0 : gv.mean[w], "samples", (json_int_t)gv.np[w]));
    json_object_set_new(g, "warmup_s", json_real(gv.warm));
    json_object_set_new(g, "without_fault_round",
                        json_pack("{s:f,s:f,s:I,s:f,s:f}", "rss_pct_per_hour", isnan(gv.gr0[0]) ? 0 : gv.gr0[0],
                                  "rss_ci95", isnan(gv.ci0[0]) ? -1 : gv.ci0[0], "samples", (json_int_t)gv.np0[0],
                                  "heap_pct_per_hour", isnan(gv.gr0[1]) ? 0 : gv.gr0[1], "heap_ci95",
                                  isnan(gv.ci0[1]) ? -1 : gv.ci0[1]));
    json_object_set_new(rep, "growth", g);
    json_t *va = json_array();
    for (size_t i = 0; i < M.nv && i < MAX_VIOL_LOGGED; i++)
        json_array_append_new(va, json_pack("{s:f,s:s,s:s}", "t", M.v[i].t - C.t_go, "kind", M.v[i].what, "msg",
                                            M.v[i].msg));
    json_object_set_new(rep, "violation_list", va);
    snprintf(path, sizeof path, "%s/report.json", opt.out);
    json_dump_file(rep, path, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(rep);

    printf("faults: %d, each converged (every replica's /inspect = the annotations) within %.0f s of its end "
           "(bound %.0f s); longest divergence outside faults %.0f s\n", F.n, max_conv, opt.converge_bound, maxdiv);
    if (fill_s >= 0)
        printf("first fill: %d pods at once; drained (no pod that fits left waiting) after %.0f s (cap %.0f s); "
               "the fit -> bound clocks start there\n", opt.prefill, fill_s, FILL_MAX_S);
    else
        printf("first fill: %d pods at once; not drained before the end\n", opt.prefill);
    printf("fit -> bound (outside faults and the first fill): p50 %.1f s, p99 %.1f s, max %.1f s over %zu pods (bound %.0f s)\n", w50, w99,
           wmax, M.nwaits, opt.bind_bound);
    print_growth(&gv);
    printf("soak %s: %.1f min, %ld pods created, %ld binds, %d faults, over-commit %ld, bound twice %ld, bad "
           "assignments %ld, stuck %ld, diverged %ld, TTL %ld, growth %ld (RSS %s, fds %s)\n",
           (opt.safety_only ? unsafe : total) ? "FAIL"
           : total                            ? "PASS (safety invariants; time bounds exceeded)"
                                              : "PASS",
           t_end / 60, atomic_load(&C.created), M.bound_total, F.n, M.overcommit, M.rebound,
           M.badassign, M.stuck, M.diverged, M.ttl, M.proc, gv.gtext[0], gv.gtext[1]);

    fclose(cf);
    fclose(S.proc);
    fclose(S.cluster);
    free(S.s);
    for (int r = 0; r < opt.nrep; r++) {
        strmap_free(RC[r].prev);
        free_boxed(RC[r].assumed);
    }
    if (resv_now)
        free_boxed(resv_now);
    size_t it = 0;
    void *v;
    while ((v = strmap_next(M.pods, &it, NULL)))
        free(v);
    strmap_free(M.pods);
    it = 0;
    while ((v = strmap_next(M.nodes, &it, NULL)))
        free(v);
    strmap_free(M.nodes);
    free(M.v);
    free(M.waits);
    free(C.heap);
    free(C.rows);
    kube_free(kw);
    kube_free(kc);
    kube_free(kr);
    curl_global_cleanup();
    usleep(600000);   /* the forwarders' connection threads see the new generation and end */
    return (opt.safety_only ? unsafe : total) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: soak setup|run|growth [flags] (see the top of bench/soak.c)\n");
        return 2;
    }
    if (strcmp(argv[1], "setup") == 0)
        return cmd_setup(argc, argv);
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc, argv);
    if (strcmp(argv[1], "growth") == 0)
        return cmd_growth(argc, argv);
    fprintf(stderr, "soak: unknown command %s\n", argv[1]);
    return 2;
}
