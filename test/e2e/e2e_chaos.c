/* e2e_chaos.c -- faults in a storm of binds. 1,200 GPU pods of mixed sizes (2-24 GiB, one in
 * ten on two GPUs) are bound by a real kube-scheduler as fast as it goes on 150 nodes of four
 * 24 GiB GPUs while gpupack is SIGKILLed and restarted with binds in flight (twice), the API
 * server is killed for 30 s, and pods are deleted: behind the API server's back during the
 * outage (etcd), through it afterwards. The verbs are reached with no readiness gate:
 * kube-scheduler's urlPrefix is gpupack itself (chaos_direct), or a front that routes by the
 * leader label alone to two replicas whose leader is killed in the same storm (chaos_ha).
 * Passes when no GPU is over-committed by the annotations, every pod that fits is bound,
 * /inspect equals the annotations on every replica and no pod is left undecided. Each run
 * logs its figures on one line starting "CHAOS". */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-chaos"
#define NODES 150
#define GPUS 4
#define GPU_MIB 24576
#define NPODS 1200            /* GPU pods created */
#define KILL1_AT 150          /* bound pods when gpupack is first killed */
#define OUTAGE_AT 450         /* bound pods when the API server is killed */
#define KILL2_AFTER 100       /* pods bound after the outage when gpupack is killed again */
#define OUTAGE_S 30.0
#define DEL_ETCD 40           /* bound pods deleted in etcd during the outage */
#define DEL_API 60            /* bound pods deleted through the API server after it */
#define SETTLE_MAX_S 240.0    /* after the last fault */

/* ------------------------------------------------------------- pods --- */

/* Pod i's shape, fixed by i: one GPU of 2..24 GiB (mostly small), or, one in
 * ten, two GPUs of 4, 8 or 12 GiB each. About 75 % of the GPU memory is asked
 * for in all, less what is deleted. */
static void shape(int i, int *gib, int *count)
{
    uint32_t h = (uint32_t)i * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    if (i % 10 == 7) {
        static const int two[] = {4, 8, 12};
        *count = 2;
        *gib = two[h % 3];
        return;
    }
    static const int menu[] = {2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 8, 8, 8, 12, 12, 16, 16, 20, 24, 24};
    *count = 1;
    *gib = menu[h % GP_ARRAY_LEN(menu)];
}

static json_t *chaos_pod(int i)
{
    char name[32], mem[32], cnt[8];
    int gib, count;
    shape(i, &gib, &count);
    snprintf(name, sizeof name, "c%04d", i);
    snprintf(mem, sizeof mem, "%d", gib * 1024);
    snprintf(cnt, sizeof cnt, "%d", count);
    json_t *p = e2e_pod(NS, name);
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", mem, "gpupack.io/gpu-count", cnt, NULL);
    json_t *spec = json_object_get(p, "spec");
    json_object_del(spec, "initContainers");
    return p;
}

/* Creates pods [from, to) from a thread of its own, as fast as the API
 * server takes them; retries while it is unreachable. No Check calls here. */
typedef struct creator {
    e2e_cp *cp;
    int from, to;
    atomic_int made;
    pthread_t th;
} creator;

static void *create_pods(void *arg)
{
    creator *c = arg;
    for (int i = c->from; i < c->to; i++) {
        json_t *p = chaos_pod(i);
        char *body = json_dumps(p, JSON_COMPACT);
        json_decref(p);
        for (double end = gp_mono_s() + 120; gp_mono_s() < end;) {
            gp_kube_resp r;
            gp_err err;
            int rc = kube_request(c->cp->kube, "POST", "/api/v1/namespaces/" NS "/pods",
                                  "application/json", body, 10, NULL, &r, &err);
            long st = rc < 0 ? 0 : r.status;
            kube_resp_free(&r);
            if (st == 201 || st == 409)
                break;
            e2e_sleep(0.2);
        }
        free(body);
        atomic_fetch_add(&c->made, 1);
    }
    return NULL;
}

static creator *creator_start(e2e_cp *cp, int from, int to)
{
    creator *c = xcalloc(1, sizeof *c);
    c->cp = cp;
    c->from = from;
    c->to = to;
    (void)e2e_scheduler_name();   /* read the shipped file here, not in the thread */
    ck_assert(pthread_create(&c->th, NULL, create_pods, c) == 0);
    return c;
}

static void creator_join(creator *c)
{
    pthread_join(c->th, NULL);
    free(c);
}

/* Bound pods of the namespace (names into `names` when non-NULL), -1 when the
 * API server does not answer. */
static int bound_pods(e2e_cp *cp, json_t *names)
{
    long st = 0;
    json_t *l = e2e_api(cp, "GET", "/api/v1/namespaces/" NS "/pods", NULL, &st);
    if (st != 200) {
        json_decref(l);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p) {
        const char *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (!node || !*node)
            continue;
        n++;
        if (names)
            json_array_append_new(names, json_string(json_string_value(
                                             json_object_get(json_object_get(p, "metadata"), "name"))));
    }
    json_decref(l);
    return n;
}

static int wait_bound_at_least(e2e_cp *cp, int want, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    int n = 0;
    while ((n = bound_pods(cp, NULL)) < want && gp_mono_s() < end)
        e2e_sleep(0.5);
    return n;
}

/* ------------------------------------------------------------ gpupack --- */

/* What a scenario does to "gpupack" when the storm kills it: one process, or
 * the replica that leads. */
typedef struct target {
    e2e_gp *gp[2];
    int n;
    int restarts;
    double last_ready;        /* monotonic time the last restarted process was ready */
} target;

/* The replica that leads (the only one without leader election). */
static int leader_of(target *t)
{
    if (t->n == 1)
        return 0;
    for (double end = gp_mono_s() + 40; gp_mono_s() < end; e2e_sleep(0.2))
        for (int i = 0; i < t->n; i++)
            if (e2e_gp_metric(t->gp[i], "gpupack_leader") == 1)
                return i;
    ck_abort_msg("no replica leads");
    return 0;
}

/* SIGKILL, 2 s of absence (kube-scheduler meets a dead extender), then the
 * same flags on the same port; a replica comes back under a new identity, as
 * a restarted container of the same Pod does. */
static void kill_and_restart(target *t, const char *why)
{
    int i = leader_of(t);
    e2e_gp *g = t->gp[i];
    e2e_gp_kill(g, SIGKILL);
    e2e_log("SIGKILL gpupack %s (%s)", g->url, why);
    e2e_sleep(2);
    t->restarts++;
    for (size_t k = 0; g->argv[k] && g->argv[k + 1]; k++)
        if (strcmp(g->argv[k], "--leader-elect-identity") == 0) {
            char *id = xasprintf("%.40s-r%d", g->argv[k + 1], t->restarts);
            free(g->argv[k + 1]);
            g->argv[k + 1] = id;
        }
    e2e_gp_restart(g);
    t->last_ready = gp_mono_s();
}

/* ---------------------------------------------------------- the storm --- */

/* Deletes `n` of the bound pods in `names`, spread over the list: in etcd
 * (the API server is down) or through the API server. */
static int delete_some(e2e_cp *cp, json_t *names, int n, bool etcd)
{
    size_t total = json_array_size(names);
    int done = 0;
    for (int k = 0; k < n && total > 0; k++) {
        const char *name = json_string_value(json_array_get(names, (size_t)k * total / (size_t)n));
        if (etcd) {
            e2e_etcd_delete_pod(cp, NS, name);
        } else {
            char *path = xasprintf("/api/v1/namespaces/" NS "/pods/%s?gracePeriodSeconds=0", name);
            long st = 0;
            json_decref(e2e_api(cp, "DELETE", path, NULL, &st));
            free(path);
            if (st != 200 && st != 202)
                continue;
        }
        done++;
    }
    return done;
}

/* The storm, then the verdict. kube-scheduler must already point at t. */
static void storm(e2e_cp *cp, target *t, const char *scenario)
{
    double t0 = gp_mono_s();

    /* every pod is created as fast as the API server takes them (the creator
     * waits out the outage); gpupack is killed while it binds */
    creator *c = creator_start(cp, 0, NPODS);
    int bound = wait_bound_at_least(cp, KILL1_AT, 180);
    ck_assert_int_ge(bound, KILL1_AT);
    kill_and_restart(t, "first kill, binds in flight");
    bound = wait_bound_at_least(cp, OUTAGE_AT, 180);
    ck_assert_int_ge(bound, OUTAGE_AT);

    /* the API server crashes for OUTAGE_S with binds in flight; pods vanish
     * from etcd meanwhile */
    json_t *names = json_array();
    bound = bound_pods(cp, names);
    double down = gp_mono_s();
    e2e_cp_ctl(cp, "stop-apiserver", "K8S_APISERVER_GRACE=0");
    int del_etcd = delete_some(cp, names, DEL_ETCD, true);
    json_decref(names);
    e2e_sleep(OUTAGE_S - (gp_mono_s() - down) > 0 ? OUTAGE_S - (gp_mono_s() - down) : 0);
    e2e_cp_ctl(cp, "start-apiserver", NULL);
    e2e_log("API server down %.1f s with %d pods bound; %d of them deleted in etcd meanwhile",
            gp_mono_s() - down, bound, del_etcd);

    /* deletions through the API server, and gpupack killed again */
    names = json_array();
    int before = bound_pods(cp, names);
    int del_api = delete_some(cp, names, DEL_API, false);
    json_decref(names);
    bound = wait_bound_at_least(cp, before - del_api + KILL2_AFTER, 180);
    kill_and_restart(t, "second kill, binds in flight");
    creator_join(c);
    double last_fault = t->last_ready;

    /* settle: every pod bound, or pending because it fits nowhere the
     * annotations leave room. No e2e_nudge_scheduler: where kube-scheduler
     * parks the pods gpupack refused while it restarted or relisted (v1.26.0),
     * gpupack itself must get them retried (its requeue nudges). */
    int total = NPODS - del_etcd - del_api;
    int fit = 0;
    char report[4096];
    double settled = -1;
    while (gp_mono_s() - last_fault < SETTLE_MAX_S) {
        fit = e2e_pending_that_fit(cp, NS, report, sizeof report);
        if (fit == 0) {
            settled = gp_mono_s() - last_fault;
            break;
        }
        e2e_sleep(1);
    }
    double nudges = 0;
    for (int i = 0; i < t->n; i++) {
        double n = e2e_gp_metric(t->gp[i], "gpupack_requeue_nudges_total{result=\"sent\"}");
        nudges += n > 0 ? n : 0;
    }
    /* /inspect of every replica against the annotations, given time to catch up */
    int differ = 0;
    e2e_verdict v;
    for (int i = 0; i < t->n; i++) {
        for (double end = gp_mono_s() + 30;;) {
            e2e_verify(cp, t->gp[i], &v);
            if (v.inspect_gpus_differ == 0 || gp_mono_s() > end)
                break;
            e2e_sleep(1);
        }
        differ += v.inspect_gpus_differ;
    }
    e2e_verify(cp, NULL, &v);
    e2e_log("CHAOS %s k8s %s: over-committed GPUs %d, pods bound %d of %d (%d deleted), pending "
            "that fit %d, /inspect differs from the annotations on %d GPUs, settled %s%.1f s "
            "after the last restart, gpupack's requeue nudges %.0f (the last process), wall %.1f s",
            scenario, e2e_k8s_version(cp), v.gpus_over, v.gpu_pods_bound, total,
            del_etcd + del_api, fit, differ, settled < 0 ? "NOT (gave up) " : "",
            settled < 0 ? SETTLE_MAX_S : settled, nudges, gp_mono_s() - t0);
    ck_assert_msg(v.gpus_over == 0, "%d GPUs over-committed by the annotations:\n%s", v.gpus_over,
                  v.report);
    ck_assert_msg(fit == 0, "%d pods pending that fit:\n%s", fit, report);
    for (int i = 0; i < t->n; i++)
        e2e_assert_consistent(cp, t->gp[i], 30, &v);
    ck_assert_int_eq(v.gpu_pods_bound, bound_pods(cp, NULL));
}

static void make_nodes(e2e_cp *cp)
{
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "x%03d", i);
        e2e_node_create(cp, e2e_node_gpupack(name, GPUS, GPU_MIB, "L4-24GB"));
    }
}

/* kube-scheduler as fast as it goes: its client's default 50 QPS would
 * throttle its own writes (events, status) long before gpupack's binds. */
static void fast_scheduler(json_t *cfg, void *ud)
{
    json_t *cc = json_object_get(cfg, "clientConnection");
    json_object_set_new(cc, "qps", json_integer(300));
    json_object_set_new(cc, "burst", json_integer(600));
}

/* ------------------------------------------------------------- tests --- */

START_TEST(chaos_direct)
{
    e2e_world_opts o = {.edit_sched = fast_scheduler};
    e2e_world *w = e2e_world_up(&o);
    e2e_ns_create(w->cp, NS);
    make_nodes(w->cp);
    target t = {.gp = {w->gp}, .n = 1};
    storm(w->cp, &t, "direct");
    e2e_world_down(w);
}
END_TEST

START_TEST(chaos_ha)
{
    e2e_cp *cp = e2e_cp_up(NULL);
    e2e_ns_create(cp, "gpupack-system");
    e2e_ns_create(cp, NS);
    make_nodes(cp);
    /* no readiness gate: verbs go to the Pod labelled leader whatever it says */
    e2e_front *f = e2e_front_start(cp, false);
    target t = {.n = 2};
    t.gp[0] = e2e_replica_start(cp, "replica-a", "replica-a", "x000");
    e2e_gp_wait_metric(t.gp[0], "gpupack_leader", 1, 60);   /* replica-a leads */
    e2e_front_backend(f, 0, "replica-a", t.gp[0]->port);
    t.gp[1] = e2e_replica_start(cp, "replica-b", "replica-b", "x000");
    e2e_front_backend(f, 1, "replica-b", t.gp[1]->port);
    json_t *cfg = e2e_sched_config(e2e_front_port(f));
    fast_scheduler(cfg, NULL);
    e2e_cp_scheduler(cp, cfg);
    json_decref(cfg);
    storm(cp, &t, "ha");
    e2e_gp_stop(t.gp[0]);
    e2e_gp_stop(t.gp[1]);
    e2e_front_stop(f);
    e2e_cp_down(cp);
}
END_TEST

E2E_SUITE(chaos)
{
    Suite *s = suite_create("e2e chaos");
    E2E_TEST(s, chaos_direct, 900);
    E2E_TEST(s, chaos_ha, 900);
    return s;
}
