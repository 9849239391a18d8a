/* e2e_bind.c -- bind against the real API server: one Binding carries the
 * annotations and a resourceVersion precondition; a stale uid writes nothing; a frozen
 * API server (a silent, half-open watch and a Binding whose answer is lost)
 * is reported in /readyz and settles without over-committing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NS "e2e-bind"

static const char *ann_of(const json_t *pod, const char *key)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(pod, "metadata"),
                                                             "annotations"), key));
}

static const char *uid_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
}

static const char *node_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
}

/* A GPU pod that no scheduler serves: only the test binds it. */
static void unscheduled_pod(e2e_cp *cp, const char *name, const char *mem)
{
    json_t *p = e2e_pod(NS, name);
    json_object_set_new(json_object_get(p, "spec"), "schedulerName", json_string("e2e-nobody"));
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", mem, NULL);
    e2e_pod_create(cp, p);
}

/* POST /bind to gpupack as kube-scheduler would; returns Error (owned). */
static char *gp_bind(e2e_gp *g, const char *name, const char *uid, const char *node)
{
    gp_kube_auth a = {.server = g->url};
    gp_err err;
    gp_kube *k = kube_new(&a, &err);
    ck_assert_ptr_nonnull(k);
    char *body = xasprintf("{\"PodName\":\"%s\",\"PodNamespace\":\"" NS "\",\"PodUID\":\"%s\","
                           "\"Node\":\"%s\"}", name, uid, node);
    gp_kube_resp r;
    /* the shipped urlPrefix has no path: the verbs are at the root */
    ck_assert_msg(kube_request(k, "POST", "/bind", "application/json", body, 30, NULL, &r, &err) == 0,
                  "%s", err.msg);
    ck_assert_msg(r.status == 200, "bind answered HTTP %ld: %.200s", r.status,
                  r.body.data ? r.body.data : "");
    json_t *j = json_loadb(r.body.data, r.body.len, 0, NULL);
    char *e = xstrdup(json_string_value(json_object_get(j, "Error")));
    ck_assert_ptr_nonnull(e);
    json_decref(j);
    kube_resp_free(&r);
    free(body);
    kube_free(k);
    return e;
}

/* Gives gpupack's pod watch time to deliver pods just created (it takes
 * milliseconds on loopback; bind refuses pods it has not seen). */
static void wait_noted(e2e_gp *g)
{
    (void)g;
    e2e_sleep(1.5);
}

START_TEST(binding_carries_annotations_and_uid)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    e2e_node_create(cp, e2e_node_gpupack("n1", 2, 16384, "A10"));

    /* The API server itself. kube-apiserver wipes metadata.uid of a created
     * object, a Binding included: a wrong uid is NOT refused ... */
    unscheduled_pod(cp, "nouid", "1024");
    json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                          "Binding", "metadata", "name", "nouid", "namespace", NS, "uid",
                          "00000000-0000-0000-0000-000000000000", "target", "kind", "Node", "name",
                          "n1");
    long st = 0;
    json_t *ans = e2e_api(cp, "POST", "/api/v1/namespaces/" NS "/pods/nouid/binding", b, &st);
    json_decref(ans);
    json_decref(b);
    ck_assert_int_eq(st, 201);
    e2e_pod_delete(cp, NS, "nouid");
    /* ... but metadata.resourceVersion is a precondition (a re-created pod has
     * another one), and the annotations land with spec.nodeName in one write */
    unscheduled_pod(cp, "raw", "1024");
    json_t *pod = e2e_pod_get(cp, NS, "raw");
    b = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                  "Binding", "metadata", "name", "raw", "namespace", NS, "resourceVersion", "1",
                  "annotations", "e2e/probe", "x", "target", "kind", "Node", "name", "n1");
    ans = e2e_api(cp, "POST", "/api/v1/namespaces/" NS "/pods/raw/binding", b, &st);
    json_decref(ans);
    ck_assert_int_eq(st, 409);
    json_t *now = e2e_pod_get(cp, NS, "raw");
    ck_assert_ptr_null(ann_of(now, "e2e/probe"));
    ck_assert_ptr_null(node_of(now));
    json_decref(now);
    json_object_set_new(json_object_get(b, "metadata"), "resourceVersion",
                        json_string(json_string_value(json_object_get(json_object_get(pod, "metadata"), "resourceVersion"))));
    ans = e2e_api(cp, "POST", "/api/v1/namespaces/" NS "/pods/raw/binding", b, &st);
    json_decref(ans);
    ck_assert_int_eq(st, 201);
    now = e2e_pod_get(cp, NS, "raw");
    ck_assert_str_eq(ann_of(now, "e2e/probe"), "x");
    ck_assert_str_eq(node_of(now), "n1");
    json_decref(now);
    json_decref(b);
    json_decref(pod);
    e2e_pod_delete(cp, NS, "raw");

    /* through kube-scheduler: one Binding, annotations on the pod */
    json_t *p = e2e_pod(NS, "sched");
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "4096", NULL);
    e2e_pod_create(cp, p);
    ck_assert_int_eq(e2e_wait_bound(cp, NS, 1, 30), 1);
    now = e2e_pod_get(cp, NS, "sched");
    ck_assert_ptr_nonnull(ann_of(now, "gpupack.io/assignment"));
    ck_assert_ptr_nonnull(ann_of(now, "gpupack.io/visible-devices"));
    json_decref(now);

    /* kube-scheduler's stale uid after a delete + re-create: refused, nothing written */
    unscheduled_pod(cp, "again", "4096");
    wait_noted(w->gp);
    json_t *old = e2e_pod_get(cp, NS, "again");
    char *old_uid = xstrdup(uid_of(old));
    json_decref(old);
    e2e_pod_delete(cp, NS, "again");
    unscheduled_pod(cp, "again", "4096");
    char *e = gp_bind(w->gp, "again", old_uid, "n1");
    ck_assert_msg(strstr(e, "refused") && strstr(e, "409"), "%s", e);
    free(e);
    free(old_uid);
    now = e2e_pod_get(cp, NS, "again");
    ck_assert_ptr_null(ann_of(now, "gpupack.io/assignment"));
    ck_assert_ptr_null(node_of(now));
    json_decref(now);
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 15, &v);
    e2e_world_down(w);
}
END_TEST

static pid_t apiserver_pid(e2e_cp *cp)
{
    char path[600];
    snprintf(path, sizeof path, "%s/run/kube-apiserver.pid", cp->dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    long pid = 0;
    ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    ck_assert_int_gt(pid, 1);
    return (pid_t)pid;
}

static bool readyz_says(e2e_gp *g, const char *needle, double timeout_s)
{
    for (double t = 0; t < timeout_s; t += 0.1) {
        long st = 0;
        char *b = e2e_gp_get(g, "/readyz", &st);
        bool yes = b && strstr(b, needle);
        free(b);
        if (yes)
            return true;
        e2e_sleep(0.1);
    }
    return false;
}

/* The API server freezes (SIGSTOP: connections stay open, nothing moves):
 * a Binding sent then gets no answer (outcome unknown, the GPUs stay held),
 * the silent watch is declared stalled and /readyz says so; after SIGCONT
 * everything settles to what the API server holds. */
START_TEST(frozen_apiserver_unknown_outcome_and_stall)
{
    e2e_cp *cp = e2e_cp_up(NULL);
    static const char *const flags[] = {"--watch-stall", "6", NULL};
    e2e_gp *g = e2e_gp_start(cp, flags);
    e2e_ns_create(cp, NS);
    e2e_node_create(cp, e2e_node_gpupack("n1", 1, 16384, "A10"));
    unscheduled_pod(cp, "u1", "10000");
    unscheduled_pod(cp, "u2", "10000");
    wait_noted(g);
    json_t *p1 = e2e_pod_get(cp, NS, "u1"), *p2 = e2e_pod_get(cp, NS, "u2");
    pid_t api = apiserver_pid(cp);
    e2e_log("freezing kube-apiserver (pid %ld)", (long)api);
    ck_assert_int_eq(kill(api, SIGSTOP), 0);
    char *e1 = gp_bind(g, "u1", uid_of(p1), "n1");    /* times out: unknown */
    char *e2 = gp_bind(g, "u2", uid_of(p2), "n1");    /* u1's GPU is still held */
    bool stale = readyz_says(g, "stale", 20);
    ck_assert_int_eq(kill(api, SIGCONT), 0);
    e2e_log("kube-apiserver thawed");
    ck_assert_msg(strstr(e1, "unknown"), "u1: %s", e1);
    ck_assert_msg(strstr(e2, "no longer fits"), "u2: %s", e2);
    ck_assert_msg(stale, "/readyz never reported the silent watch");
    free(e1);
    free(e2);
    json_decref(p1);
    json_decref(p2);
    ck_assert(readyz_says(g, "ok\n", 30));
    /* u1 either landed (then bound with its GPUs) or was released: never twice */
    e2e_verdict v;
    e2e_assert_consistent(cp, g, 30, &v);
    e2e_log("u1 %s", v.gpu_pods_bound ? "landed" : "did not land");
    e2e_gp_stop(g);
    e2e_cp_down(cp);
}
END_TEST

E2E_SUITE(bind)
{
    Suite *s = suite_create("e2e bind");
    E2E_TEST(s, binding_carries_annotations_and_uid, 180);
    E2E_TEST(s, frozen_apiserver_unknown_outcome_and_stall, 240);
    return s;
}
