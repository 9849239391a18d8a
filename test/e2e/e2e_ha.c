/* e2e_ha.c -- two gpupack replicas with --leader-elect behind a front that routes to the Pod
 * labelled gpupack.io/leader (the shipped Service, modelled by a TCP forwarder): SIGKILL of the
 * leader while 500 pods arrive, a SIGTERM hand-over, then a leader frozen (SIGSTOP) past its
 * lease; every pod bound once, no GPU over-committed, the frozen leader never binds again, and
 * the time from the kill / the SIGTERM to the new leader's first bind is measured. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ha/lease_kube.h"
#include "lib/yamljson.h"

#define NS "e2e-ha"
#define NODES 36              /* x 4 GPUs x 16 GiB: 576 pods of 4 GiB fit exactly */
#define GPU_MIB 16384
#define POD_MIB "4096"
#define KILL_PODS 500
#define TERM_PODS 60
#define FREEZE_PODS 16        /* the last free slots */
#define READY_POLL_S 1.0      /* endpoints follow labels and readiness with some delay */

/* ------------------------------------------------------------ replicas --- */

/* Replica `id`: its Pod (an API object only, no kubelet; bound, so no scheduler
 * touches it), then gpupack with leader election for that Pod. A synced
 * standby is Ready, so the harness's start (which waits for /readyz) fits. */
static e2e_gp *replica_start(e2e_cp *cp, const char *id)
{
    return e2e_replica_start(cp, id, id, "ha-00");
}

/* Wall time (Unix ns) of the first successful bind in g's log at or after
 * `after`; 0 when none. Log lines start with an RFC 3339 time. */
static int64_t first_bind_after(e2e_gp *g, int64_t after)
{
    size_t len;
    gp_err err;
    char *text = gp_read_file(g->log, 1u << 26, &len, &err);
    int64_t found = 0;
    for (char *line = text; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char ts[40];
        int64_t t;
        if (sscanf(line, "%39s", ts) == 1 && lease_kube_parse_time(ts, &t) == 0 && t >= after &&
            strstr(line, " info ") && strstr(line, " bind ") && strstr(line, " gpus ["))
            found = t;
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return found;
}

/* Successful bind log lines for pod `name` in both logs. */
static int binds_logged(e2e_gp *a, e2e_gp *b, const char *name)
{
    char needle[128];
    snprintf(needle, sizeof needle, " bind " NS "/%s -> ", name);
    int n = 0;
    e2e_gp *gs[] = {a, b};
    for (int i = 0; i < 2; i++) {
        size_t len;
        gp_err err;
        char *text = gp_read_file(gs[i]->log, 1u << 26, &len, &err);
        for (char *p = text; p && (p = strstr(p, needle)); p++) {
            char *eol = strchr(p, '\n');
            char *gpus = strstr(p, " gpus [");
            if (gpus && (!eol || gpus < eol))
                n++;
        }
        free(text);
    }
    return n;
}

/* Creates pods from..to-1, at most per_s a second (0 = as fast as possible). */
static void make_pods(e2e_cp *cp, int from, int to, double per_s)
{
    double t0 = gp_mono_s();
    for (int i = from; i < to; i++) {
        double due = per_s > 0 ? t0 + (i - from) / per_s : 0;
        if (gp_mono_s() < due)
            e2e_sleep(due - gp_mono_s());
        char name[32];
        snprintf(name, sizeof name, "p%04d", i);
        json_t *p = e2e_pod(NS, name);
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", POD_MIB, NULL);
        e2e_pod_create(cp, p);
    }
}

static const char *lease_holder(e2e_cp *cp, char *out, size_t len)
{
    long st = 0;
    json_t *l = e2e_api(cp, "GET", "/apis/coordination.k8s.io/v1/namespaces/gpupack-system/leases/gpupack",
                        NULL, &st);
    gp_lease_rec rec;
    gp_err err;
    out[0] = '\0';
    if (l && lease_kube_decode(l, &rec, &err) == 0)
        gp_strlcpy(out, rec.holder, len);
    json_decref(l);
    return out;
}

/* Starts replica `id` as a standby with a warm map, reachable through front slot `slot`. */
static e2e_gp *standby_join(e2e_cp *cp, e2e_front *f, int slot, const char *id)
{
    e2e_gp *g = replica_start(cp, id);
    e2e_gp_wait_metric(g, "gpupack_cluster_ready", 1, 60);
    e2e_gp_wait_metric(g, "gpupack_leader", 0, 5);
    e2e_front_backend(f, slot, id, g->port);
    return g;
}

/* Names of the Pods labelled leader, comma-separated. */
static const char *labelled(e2e_cp *cp, char *out, size_t len)
{
    json_t *l = e2e_api_ok(cp, "GET",
                           "/api/v1/namespaces/gpupack-system/pods?labelSelector=gpupack.io%2Fleader%3Dtrue",
                           NULL, NULL);
    size_t i, off = 0;
    json_t *p;
    out[0] = '\0';
    json_array_foreach(json_object_get(l, "items"), i, p) {
        const char *n = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        off += (size_t)snprintf(out + off, off < len ? len - off : 0, "%s%s", off ? "," : "", n ? n : "?");
    }
    json_decref(l);
    return out;
}

/* ------------------------------------------------------------- the test --- */

START_TEST(failover_kill_and_handover)
{
    /* kube-scheduler 1.26 parks a pod whose extender call failed (no ready
     * replica) until a cluster event, or for this long (default 5 min): see
     * docs/deploy.md, High availability */
    e2e_cp_opts o = {.scheduler_args = "--pod-max-in-unschedulable-pods-duration=10s"};
    e2e_cp *cp = e2e_cp_up(&o);
    e2e_ns_create(cp, "gpupack-system");
    e2e_ns_create(cp, NS);
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "ha-%02d", i);
        e2e_node_create(cp, e2e_node_gpupack(name, 4, GPU_MIB, "A10"));
    }
    e2e_front *f = e2e_front_start(cp, true);   /* the shipped Service: label + readiness */
    json_t *sched = e2e_sched_config(e2e_front_port(f));
    e2e_cp_scheduler(cp, sched);
    json_decref(sched);

    /* a leads (started first), b stands by with a warm map */
    e2e_gp *a = replica_start(cp, "replica-a");
    e2e_gp_wait_metric(a, "gpupack_leader", 1, 60);
    e2e_front_backend(f, 0, "replica-a", a->port);
    e2e_gp *b = standby_join(cp, f, 1, "replica-b");
    long st = 0;
    free(e2e_gp_get(b, "/readyz", &st));
    ck_assert_int_eq(st, 200);   /* a synced standby is Ready; the label routes */
    char holder[GP_LEADER_ID_MAX];
    ck_assert_str_eq(lease_holder(cp, holder, sizeof holder), "replica-a");
    ck_assert_str_eq(labelled(cp, holder, sizeof holder), "replica-a");

    /* 500 pods arrive; the leader is killed after the first 150 are bound,
     * and the other 300 keep arriving (10/s) across the failover */
    double t0 = gp_mono_s();
    make_pods(cp, 0, 200, 0);
    int bound = e2e_wait_bound(cp, NS, 150, 120);
    ck_assert_int_ge(bound, 150);
    int64_t kill_ns = gp_now_ns();
    double kill_mono = gp_mono_s();
    e2e_gp_kill(a, SIGKILL);
    bound = e2e_wait_bound(cp, NS, 0, 0);
    e2e_log("SIGKILL to the leader with %d pods bound (%.1f s after the first pod)", bound,
            kill_mono - t0);
    make_pods(cp, 200, KILL_PODS, 10);
    bound = e2e_wait_bound(cp, NS, KILL_PODS, 180);
    e2e_log("%d of %d pods bound %.1f s after the kill", bound, KILL_PODS, gp_mono_s() - kill_mono);
    ck_assert_int_eq(bound, KILL_PODS);
    int64_t first = first_bind_after(b, kill_ns);
    ck_assert_msg(first > 0, "replica b never bound");
    double kill_to_bind = (double)(first - kill_ns) / 1e9;
    e2e_log("MEASURED kill -> new leader's first bind: %.2f s (goal < 20 s)", kill_to_bind);
    /* the standby took over because the lease expired (not by accident earlier) */
    ck_assert_int_gt(e2e_gp_log_count(b, "took the lease over from replica-a (expired)"), 0);
    ck_assert_str_eq(lease_holder(cp, holder, sizeof holder), "replica-b");
    ck_assert_str_eq(labelled(cp, holder, sizeof holder), "replica-b");   /* a's label removed */

    e2e_verdict v;
    e2e_assert_consistent(cp, b, 30, &v);
    ck_assert_int_eq(v.gpu_pods_bound, KILL_PODS);
    /* The API server accepts one Binding per pod; the logs show no pod was
     * bound by both replicas (a bind the killed leader completed but had not
     * logged yet shows up in neither) */
    int twice = 0, unlogged = 0;
    for (int i = 0; i < KILL_PODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%04d", i);
        int n = binds_logged(a, b, name);
        twice += n > 1;
        unlogged += n == 0;
    }
    e2e_log("pods whose bind both replicas logged: %d; bound but unlogged (leader killed "
            "between Binding and log line): %d", twice, unlogged);
    ck_assert_int_eq(twice, 0);

    /* a comes back as a standby; SIGTERM to b hands the lease over */
    e2e_gp_stop(a);   /* already killed: frees it */
    a = standby_join(cp, f, 0, "replica-a2");
    int64_t term_ns = gp_now_ns();
    double term_mono = gp_mono_s();
    e2e_gp_kill(b, SIGTERM);
    e2e_log("SIGTERM to the leader took %.2f s to exit", gp_mono_s() - term_mono);
    make_pods(cp, KILL_PODS, KILL_PODS + TERM_PODS, 10);
    bound = e2e_wait_bound(cp, NS, KILL_PODS + TERM_PODS, 120);
    ck_assert_int_eq(bound, KILL_PODS + TERM_PODS);
    first = first_bind_after(a, term_ns);
    ck_assert_msg(first > 0, "replica a2 never bound");
    double term_to_bind = (double)(first - term_ns) / 1e9;
    e2e_log("MEASURED SIGTERM -> new leader's first bind: %.2f s (goal < 3 s)", term_to_bind);
    /* a handover, not an expiry: b released the lease and a2 took the released
     * lease without waiting out the lease duration (timings are logged above,
     * measured in bench/, never asserted: CI machines are noisy) */
    ck_assert_int_gt(e2e_gp_log_count(b, "released the lease"), 0);
    ck_assert_int_gt(e2e_gp_log_count(a, "leads after a released lease"), 0);
    ck_assert_int_eq(e2e_gp_log_count(a, "(expired)"), 0);
    ck_assert_str_eq(labelled(cp, holder, sizeof holder), "replica-a2");
    e2e_assert_consistent(cp, a, 30, &v);
    ck_assert_int_eq(v.gpu_pods_bound, KILL_PODS + TERM_PODS);

    /* fencing for real: the leader freezes (SIGSTOP: a long GC pause, a stuck VM)
     * while pods arrive; the standby takes over; when the old leader wakes up,
     * its clock tells it that it may no longer bind, whatever it was doing */
    e2e_gp_stop(b);   /* already stopped: frees it */
    b = standby_join(cp, f, 1, "replica-b2");
    int64_t stop_ns = gp_now_ns();
    kill(a->pid, SIGSTOP);
    make_pods(cp, KILL_PODS + TERM_PODS, KILL_PODS + TERM_PODS + FREEZE_PODS, 1);
    e2e_gp_wait_metric(b, "gpupack_leader", 1, 30);
    double took_over = gp_mono_s();
    e2e_log("standby took over %.1f s after the leader froze", (double)(gp_now_ns() - stop_ns) / 1e9);
    kill(a->pid, SIGCONT);
    int total = KILL_PODS + TERM_PODS + FREEZE_PODS;
    bound = e2e_wait_bound(cp, NS, total, 120);
    /* kube-scheduler's kept-alive connections to the old leader outlive the
     * label: it answers them with Connection: close once it may not bind */
    e2e_log("MEASURED %d of %d pods bound %.1f s after the takeover; the woken leader refused "
            "%g bind(s) and closed %g verb connection(s)", bound, total, gp_mono_s() - took_over,
            e2e_gp_metric(a, "gpupack_binds_refused_total"),
            e2e_gp_metric(a, "gpupack_http_verb_connections_closed_total"));
    ck_assert_int_eq(bound, total);
    e2e_gp_wait_metric(a, "gpupack_leader", 0, 10);
    ck_assert_int_eq(first_bind_after(a, stop_ns), 0);   /* the frozen leader never bound again */
    for (double end = gp_mono_s() + 15; !e2e_gp_log_count(a, "stopped leading") && gp_mono_s() < end;)
        e2e_sleep(0.2);
    ck_assert_int_gt(e2e_gp_log_count(a, "stopped leading"), 0);
    ck_assert_str_eq(labelled(cp, holder, sizeof holder), "replica-b2");
    e2e_assert_consistent(cp, b, 30, &v);
    ck_assert_int_eq(v.gpu_pods_bound, total);
    e2e_log("after the freeze: %d pods bound once, %d GPUs in use, old leader refused %g bind(s)",
            v.gpu_pods_bound, v.gpus_used, e2e_gp_metric(a, "gpupack_binds_refused_total"));

    e2e_gp_stop(a);
    e2e_gp_stop(b);
    e2e_front_stop(f);
    e2e_cp_down(cp);
}
END_TEST

E2E_SUITE(ha)
{
    Suite *s = suite_create("e2e ha");
    E2E_TEST(s, failover_kill_and_handover, 600);
    return s;
}
