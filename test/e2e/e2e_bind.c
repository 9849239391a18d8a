/* e2e_bind.c -- bind against the real API server: one Binding carries the
 * annotations and the resourceVersion and uid preconditions; a stale uid writes
 * nothing, whether the server checks the Binding's uid (1.26.4+, 1.27+) or wipes it
 * (1.25.0-1.26.3: then the resourceVersion is the guard); a frozen API server (a
 * silent, half-open watch and a Binding whose answer is lost) is reported in
 * /readyz and settles without over-committing. */
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
    char *body = xasprintf("{\"PodName\":\"%s\",\"PodNamespace\":\"" NS "\",\"PodUID\":\"%s\","
                           "\"Node\":\"%s\"}", name, uid, node);
    long status;
    /* the shipped urlPrefix has no path: the verbs are at the root */
    char *answer = e2e_gp_post(g, "/bind", body, &status);
    ck_assert_msg(answer && status == 200, "bind answered HTTP %ld: %.200s", status,
                  answer ? answer : "(no answer)");
    json_t *j = json_loads(answer, 0, NULL);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "Error")));
    char *e = xstrdup(json_string_value(json_object_get(j, "Error")));
    json_decref(j);
    free(answer);
    free(body);
    return e;
}

/* Whether kube-apiserver checks a Binding's metadata.uid: it wiped the uid of
 * every created object, Bindings included, from 1.25.0 until the fix reached
 * 1.26.4 and 1.27.0 (kubernetes PRs 110646, 116550, 116763). The test's own
 * table, independent of gpupack's (apiversion.c). */
static bool apiserver_checks_binding_uid(const e2e_cp *cp)
{
    return !e2e_k8s_at_least(cp, 1, 25, 0) || e2e_k8s_at_least(cp, 1, 26, 4);
}

static json_t *binding(const char *name, const char *uid, const char *rv, const char *node)
{
    json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                          "Binding", "metadata", "name", name, "namespace", NS, "target", "kind",
                          "Node", "name", node);
    json_t *md = json_object_get(b, "metadata");
    if (uid)
        json_object_set_new(md, "uid", json_string(uid));
    if (rv)
        json_object_set_new(md, "resourceVersion", json_string(rv));
    return b;
}

static long post_binding(e2e_cp *cp, const char *name, json_t *b)
{
    char *path = xasprintf("/api/v1/namespaces/" NS "/pods/%s/binding", name);
    long st = 0;
    json_decref(e2e_api(cp, "POST", path, b, &st));
    json_decref(b);
    free(path);
    return st;
}

/* The pod is unbound and carries no annotation `key`: a refused Binding wrote nothing. */
static void assert_untouched(e2e_cp *cp, const char *name, const char *key)
{
    json_t *now = e2e_pod_get(cp, NS, name);
    ck_assert_msg(!ann_of(now, key), "%s carries %s", name, key);
    ck_assert_msg(!node_of(now), "%s is bound to %s", name, node_of(now));
    json_decref(now);
}

static const char *rv_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "metadata"), "resourceVersion"));
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

    /* The API server itself. A Binding whose metadata.uid is not the pod's, with
     * no resourceVersion, and then with the pod's current one (a re-created pod
     * whose resourceVersion happens to pass): refused where the uid is checked,
     * bound where it is wiped -- there the resourceVersion is the only guard. */
    bool checks_uid = apiserver_checks_binding_uid(cp);
    static const char *const wrong = "00000000-0000-0000-0000-000000000000";
    unscheduled_pod(cp, "nouid", "1024");
    unscheduled_pod(cp, "rvpass", "1024");
    json_t *rp = e2e_pod_get(cp, NS, "rvpass");
    long st_nouid = post_binding(cp, "nouid", binding("nouid", wrong, NULL, "n1"));
    long st_rvpass = post_binding(cp, "rvpass", binding("rvpass", wrong, rv_of(rp), "n1"));
    json_decref(rp);
    e2e_log("%s: Binding with a wrong uid: HTTP %ld (no resourceVersion), %ld (current "
            "resourceVersion)", e2e_k8s_version(cp), st_nouid, st_rvpass);
    static const char *const names[] = {"nouid", "rvpass"};
    for (size_t i = 0; i < 2; i++) {
        json_t *now = e2e_pod_get(cp, NS, names[i]);
        if (checks_uid)
            ck_assert_msg(!node_of(now), "%s bound despite the wrong uid", names[i]);
        else
            ck_assert_str_eq(node_of(now), "n1");
        json_decref(now);
        e2e_pod_delete(cp, NS, names[i]);
    }
    ck_assert_int_eq(st_nouid, checks_uid ? 409 : 201);
    ck_assert_int_eq(st_rvpass, checks_uid ? 409 : 201);
    /* a stale metadata.resourceVersion is refused everywhere (a re-created pod has
     * another one), and the annotations land with spec.nodeName in one write */
    json_t *b, *ans;
    long st = 0;
    unscheduled_pod(cp, "raw", "1024");
    json_t *pod = e2e_pod_get(cp, NS, "raw");
    b = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                  "Binding", "metadata", "name", "raw", "namespace", NS, "resourceVersion", "1",
                  "annotations", "e2e/probe", "x", "target", "kind", "Node", "name", "n1");
    ans = e2e_api(cp, "POST", "/api/v1/namespaces/" NS "/pods/raw/binding", b, &st);
    json_decref(ans);
    ck_assert_int_eq(st, 409);
    assert_untouched(cp, "raw", "e2e/probe");
    json_t *now;
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
    assert_untouched(cp, "again", "gpupack.io/assignment");
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 15, &v);
    e2e_world_down(w);
}
END_TEST

/* gpupack knows a pod only from a filter call whose Pod carries no
 * resourceVersion; the pod is deleted and re-created under its name; kube-
 * scheduler's bind names the old uid. The Binding may not land on the new pod:
 * where the server checks the uid it refuses the Binding (409); where it wipes
 * the uid gpupack sends no Binding at all (it reads the pod first and sees
 * another uid) -- a Binding without preconditions would bind the new pod. */
START_TEST(recreated_pod_without_resource_version)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    e2e_node_create(cp, e2e_node_gpupack("n1", 1, 16384, "A10"));
    unscheduled_pod(cp, "norv", "4096");
    wait_noted(w->gp);
    json_t *old = e2e_pod_get(cp, NS, "norv");
    char *old_uid = xstrdup(uid_of(old));
    /* the filter call kube-scheduler would make, minus metadata.resourceVersion */
    json_object_del(json_object_get(old, "metadata"), "resourceVersion");
    json_t *args = json_pack("{s:O,s:[s]}", "Pod", old, "NodeNames", "n1");
    char *body = json_dumps(args, JSON_COMPACT);
    long status;
    char *answer = e2e_gp_post(w->gp, "/filter", body, &status);
    ck_assert_msg(status == 200 && answer && strstr(answer, "\"n1\""), "filter: HTTP %ld %.300s",
                  status, answer ? answer : "");
    free(answer);
    free(body);
    json_decref(args);
    json_decref(old);
    e2e_pod_delete(cp, NS, "norv");
    unscheduled_pod(cp, "norv", "4096");
    wait_noted(w->gp);
    char *e = gp_bind(w->gp, "norv", old_uid, "n1");
    e2e_log("%s: bind of the old uid: %s", e2e_k8s_version(cp), e);
    ck_assert_msg(strstr(e, "refused"), "%s", e);
    if (apiserver_checks_binding_uid(cp))
        ck_assert_msg(strstr(e, "409") && strstr(e, "uid"), "%s", e);
    else
        ck_assert_msg(strstr(e, "not sent") && strstr(e, "uid"), "%s", e);
    free(e);
    free(old_uid);
    assert_untouched(cp, "norv", "gpupack.io/assignment");
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
    E2E_TEST(s, recreated_pod_without_resource_version, 120);
    E2E_TEST(s, frozen_apiserver_unknown_outcome_and_stall, 240);
    return s;
}
