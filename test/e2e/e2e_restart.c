/* e2e_restart.c -- scenario 2: gpupack SIGKILLed while kube-scheduler is binding,
 * pods created while it is down, then restarted: every pod ends up bound exactly
 * once without any help from the test, nothing is over-committed, and the
 * restarted gpupack's map equals a fresh rebuild from the API server.
 *
 * What parks pods differs by version, and so does what gpupack must do:
 * kube-scheduler 1.26 keeps the pods it tried while gpupack was down
 * (SchedulerError) and the GPU pods it found no node for (node events never
 * wake them: its pre-check counts gpupack.io/gpu-mem against the nodes'
 * allocatable) until a cluster event or 5 minutes; gpupack nudges them when it
 * serves again (requeue.h). 1.36 retries them by itself: gpupack sends nothing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/strmap.h"

#define NS "e2e-restart"
#define NPODS 160
#define NLATE 12        /* pods created while gpupack is down */
#define BIND_S 60       /* all bound within this of the restart: well below the 300 s flush */

static json_t *pod_i(int i)
{
    char name[32];
    snprintf(name, sizeof name, i < NPODS ? "r%03d" : "late%02d", i < NPODS ? i : i - NPODS);
    json_t *p = e2e_pod(NS, name);
    static const char *const mem[] = {"2048", "4096", "6144", "10240"};
    static const char *const core[] = {"5", "10", "15", "25"};
    if (i % 7 == 3)
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "8192", "gpupack.io/gpu-count", "2", NULL);
    else
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", mem[i % 4], "gpupack.io/gpu-core", core[i % 4], NULL);
    return p;
}

/* Scheduled events per pod: a pod bound twice would show two. */
static void assert_scheduled_once(e2e_cp *cp)
{
    json_t *l = e2e_api_ok(cp, "GET", "/api/v1/namespaces/" NS "/events?fieldSelector=reason%3DScheduled",
                           NULL, NULL);
    strmap *seen = strmap_new();
    size_t i;
    json_t *ev;
    int twice = 0;
    json_array_foreach(json_object_get(l, "items"), i, ev) {
        const char *pod = json_string_value(json_object_get(json_object_get(ev, "involvedObject"), "name"));
        if (!pod)
            continue;
        if (strmap_get(seen, pod)) {
            e2e_log("pod %s has more than one Scheduled event", pod);
            twice++;
        }
        strmap_put(seen, pod, seen);
    }
    e2e_log("Scheduled events for %zu pods", strmap_count(seen));
    strmap_free(seen);
    json_decref(l);
    ck_assert_int_eq(twice, 0);
}

/* The reason of pod's PodScheduled condition ("" when none); owned. */
static char *sched_reason(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *r = json_string_value(json_object_get(c, "reason"));
        if (t && strcmp(t, "PodScheduled") == 0)
            return xstrdup(r ? r : "");
    }
    return xstrdup("");
}

/* Waits until kube-scheduler has tried every late pod against the dead
 * extender (PodScheduled False, SchedulerError); returns how many did. */
static int wait_late_failed(e2e_cp *cp, double timeout_s)
{
    int n = 0;
    for (double t0 = gp_mono_s(); gp_mono_s() - t0 < timeout_s; e2e_sleep(0.2)) {
        json_t *l = e2e_pods(cp, NS);
        size_t i;
        json_t *p;
        n = 0;
        json_array_foreach(l, i, p) {
            const char *name = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
            char *r = sched_reason(p);
            n += name && strncmp(name, "late", 4) == 0 && strcmp(r, "SchedulerError") == 0;
            free(r);
        }
        json_decref(l);
        if (n == NLATE)
            break;
    }
    return n;
}

START_TEST(sigkill_mid_run)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    char name[32];
    /* pods first, nodes then: binding starts only once every pod exists, so the
     * kill below lands mid-run however fast gpupack binds */
    for (int i = 0; i < NPODS; i++)
        e2e_pod_create(cp, pod_i(i));
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "k%d", i);
        e2e_node_create(cp, e2e_node_gpupack(name, 8, 81920, "A100-SXM4-80GB"));
    }
    /* kill while binds are going on */
    int before = e2e_wait_bound(cp, NS, NPODS / 4, 60);
    e2e_gp_kill(w->gp, SIGKILL);
    int at_kill = e2e_wait_bound(cp, NS, 0, 0);
    e2e_log("gpupack SIGKILLed with %d (then %d) of %d pods bound", before, at_kill, NPODS);
    ck_assert_msg(at_kill < NPODS, "every pod was bound before the kill: the run was too short");
    /* pods arriving meanwhile: kube-scheduler tries them against the dead extender */
    for (int i = NPODS; i < NPODS + NLATE; i++)
        e2e_pod_create(cp, pod_i(i));
    int failed = wait_late_failed(cp, 30);
    e2e_log("%d of %d pods created during the outage failed with SchedulerError", failed, NLATE);
    ck_assert_int_eq(failed, NLATE);
    double t_restart = gp_mono_s();
    e2e_gp_restart(w->gp);
    /* no e2e_nudge_scheduler: gpupack itself must get every parked pod retried */
    int bound = e2e_wait_bound(cp, NS, NPODS + NLATE, BIND_S);
    double took = gp_mono_s() - t_restart;
    double sent = e2e_gp_metric(w->gp, "gpupack_requeue_nudges_total{result=\"sent\"}");
    double regained = e2e_gp_metric(w->gp, "gpupack_requeue_triggers_total{trigger=\"regained\"}");
    double nb = 0;
    for (int i = 0; i < 20 && nb < sent; i++, e2e_sleep(0.1))   /* gpupack's watch may trail */
        nb = e2e_gp_metric(w->gp, "gpupack_requeue_bind_seconds_count{trigger=\"regained\"}");
    double sum = e2e_gp_metric(w->gp, "gpupack_requeue_bind_seconds_sum{trigger=\"regained\"}");
    e2e_log("%s: %d of %d pods bound %.1f s after the restart; %.0f nudges sent, %.0f nudged pods "
            "bound, %.1f s on average from regaining service", e2e_k8s_version(cp), bound,
            NPODS + NLATE, took, sent, nb, nb > 0 ? sum / nb : 0.0);
    ck_assert_msg(bound == NPODS + NLATE, "%d pods still pending %d s after gpupack came back",
                  NPODS + NLATE - bound, BIND_S);
    if (e2e_k8s_at_least(cp, 1, 33, 0)) {
        /* kube-scheduler retries errors (1.29+) and wakes GPU pods on node events (1.32+) */
        ck_assert_msg(sent == 0 && regained == 0, "%.0f nudges sent on %s", sent, e2e_k8s_version(cp));
    } else {
        /* 1.26: the late pods (SchedulerError) and the GPU pods parked before the nodes came
         * were nudged, at most once each; nudged pods were bound (a pod kube-scheduler
         * retried by itself meanwhile may be bound before its nudge is counted) */
        ck_assert_msg(regained == 1, "nudge triggers: %.0f", regained);
        ck_assert_msg(sent >= 1 && sent <= NPODS + NLATE, "%.0f nudges sent", sent);
        ck_assert_msg(nb >= 1 && nb <= sent, "%.0f of %.0f nudged pods seen bound", nb, sent);
    }
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 15, &v);
    ck_assert_int_eq(v.gpu_pods_bound, NPODS + NLATE);
    assert_scheduled_once(cp);
    /* a second restart rebuilds the same map from the annotations alone */
    e2e_gp_restart(w->gp);
    e2e_assert_consistent(cp, w->gp, 15, &v);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(restart)
{
    Suite *s = suite_create("e2e restart");
    E2E_TEST(s, sigkill_mid_run, 300);
    return s;
}
