/* test_k8s_obs.c -- pod / node objects (captured and fixture) -> store observations. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "model/heldrec.h"
#include "model/k8s_obs.h"
#include "model/podprio.h"
#include "model/podreq.h"
#include "livetest.h"

#define FIX "test/fixtures/live/"

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j != NULL, "%s: %s", path, e.text);
    return j;
}

static json_t *load_captured(const char *rel)
{
    char *p = livetest_captured(rel);
    json_t *j = load_json(p);
    free(p);
    return j;
}

/* The nth (1-based) event object of a captured watch stream. */
static json_t *watch_object(const char *rel, int nth)
{
    size_t len;
    char *p = livetest_captured(rel);
    char *data = livetest_read(p, &len);
    ck_assert_ptr_nonnull(data);
    free(p);
    char *save = NULL, *line = strtok_r(data, "\n", &save);
    for (int i = 1; i < nth && line; i++)
        line = strtok_r(NULL, "\n", &save);
    ck_assert_ptr_nonnull(line);
    json_t *ev = json_loads(line, 0, NULL);
    json_t *obj = json_incref(json_object_get(ev, "object"));
    json_decref(ev);
    free(data);
    return obj;
}

START_TEST(bound_with_assignment)
{
    json_t *pod = load_json(FIX "pod-bound-assigned.json");
    gp_pod_view v;
    gp_err err;
    ck_assert_msg(k8s_obs_pod(pod, false, 1024, &v, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(v.obs.uid, "11111111-1111-4111-8111-111111111111");
    ck_assert_str_eq(v.obs.ns, "ml");
    ck_assert_str_eq(v.obs.name, "train-1");
    ck_assert_str_eq(v.obs.node_name, "node-gpupack");
    ck_assert(!v.obs.terminal);
    ck_assert(!v.pending);
    ck_assert(v.wants_gpu);
    ck_assert_ptr_eq(v.obs.assign, &v.assign);
    ck_assert_str_eq(v.assign.node, "node-gpupack");
    ck_assert_int_eq(v.assign.nctrs, 1);
    ck_assert_int_eq(v.assign.ctrs[0].ngpus, 1);
    ck_assert_int_eq(v.assign.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(v.assign.ctrs[0].gpus[0].mem_mib, 4096);
    ck_assert_str_eq(v.obs.policy, "default");
    ck_assert_str_eq(v.assign_err, "");
    /* deleted: terminal whatever the phase */
    ck_assert(k8s_obs_pod(pod, true, 1024, &v, &err) == 0);
    ck_assert(v.obs.terminal);
    json_decref(pod);
}
END_TEST

START_TEST(aliyun_succeeded)
{
    json_t *pod = load_json(FIX "pod-aliyun-bound.json");
    gp_pod_view v;
    gp_err err;
    ck_assert_msg(k8s_obs_pod(pod, false, 1024, &v, &err) == 0, "%s", err.msg);
    ck_assert(v.obs.terminal);          /* phase Succeeded */
    ck_assert_ptr_nonnull(v.obs.assign);
    ck_assert_str_eq(v.assign.node, "node-aliyun");
    ck_assert_int_eq(v.assign.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(v.assign.ctrs[0].gpus[0].mem_mib, 4096);   /* 4 GiB */
    json_decref(pod);
}
END_TEST

START_TEST(bad_assignment_is_reported_not_fatal)
{
    json_t *pod = load_json(FIX "pod-bad-assignment.json");
    gp_pod_view v;
    gp_err err;
    ck_assert(k8s_obs_pod(pod, false, 1024, &v, &err) == 0);
    ck_assert_ptr_null(v.obs.assign);
    ck_assert(v.assign_err[0] != '\0');
    json_decref(pod);
}
END_TEST

/* Real captured pods: pending, bound without assignment, bookmark. */
START_TEST(captured_pods)
{
    gp_pod_view v;
    gp_err err;
    json_t *added = watch_object("wire/watch/pods-watch.jsonl", 1);      /* unbound */
    ck_assert(k8s_obs_pod(added, false, 1024, &v, &err) == 0);
    ck_assert(v.pending);
    ck_assert(v.wants_gpu);
    ck_assert_str_eq(v.obs.node_name, "");
    ck_assert_ptr_null(v.obs.assign);
    json_decref(added);
    json_t *bound = watch_object("wire/watch/pods-watch.jsonl", 3);      /* bound */
    ck_assert(k8s_obs_pod(bound, false, 1024, &v, &err) == 0);
    ck_assert(!v.pending);
    ck_assert_str_eq(v.obs.node_name, "node-gpupack");
    json_decref(bound);
    json_t *terminating = watch_object("wire/watch/pods-watch.jsonl", 12); /* deletionTimestamp */
    ck_assert(k8s_obs_pod(terminating, false, 1024, &v, &err) == 0);
    ck_assert(!v.pending);
    ck_assert(!v.obs.terminal);
    json_decref(terminating);
    json_t *bm = watch_object("wire/watch/pods-watch.jsonl", 14);        /* BOOKMARK */
    ck_assert(k8s_obs_pod(bm, false, 1024, &v, &err) == -1);
    json_decref(bm);
    json_t *multi = load_captured("wire/pods/get-gpu-pod-multi.json");
    ck_assert(k8s_obs_pod(multi, false, 1024, &v, &err) == 0);
    ck_assert_str_eq(v.obs.node_name, "node-aliyun");
    ck_assert(v.wants_gpu);
    json_decref(multi);
    json_t *cpu = load_captured("wire/pods/create-cpu-pod.json");
    ck_assert(k8s_obs_pod(cpu, false, 1024, &v, &err) == 0);
    ck_assert(!v.wants_gpu);
    json_decref(cpu);
}
END_TEST

START_TEST(captured_nodes)
{
    char name[GP_NAME_MAX];
    gp_inventory inv;
    gp_err err;
    json_t *n = load_captured("wire/nodes/get-node-gpupack.json");
    ck_assert_msg(k8s_obs_node(n, 1024, name, &inv, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(name, "node-gpupack");
    ck_assert_int_eq(inv.n, 4);
    ck_assert_str_eq(inv.source, "gpupack");
    ck_assert(!inv.gpus[3].healthy);
    json_t *t = k8s_obs_trim_node(n);
    gp_inventory inv2;
    ck_assert(k8s_obs_node(t, 1024, name, &inv2, &err) == 0);
    ck_assert_int_eq(inv2.n, 4);
    ck_assert(memcmp(&inv, &inv2, sizeof inv) == 0);   /* trimming loses nothing needed */
    ck_assert_ptr_null(json_object_get(json_object_get(t, "metadata"), "managedFields"));
    json_decref(t);
    json_decref(n);

    n = load_captured("wire/nodes/create-node-aliyun.json");
    ck_assert(k8s_obs_node(n, 1024, name, &inv, &err) == 0);
    ck_assert_str_eq(name, "node-aliyun");
    ck_assert_int_eq(inv.n, 2);
    ck_assert_int_eq(inv.gpus[0].mem_total, 16384);
    json_decref(n);

    n = load_captured("wire/nodes/create-node-nfd.json");
    ck_assert(k8s_obs_node(n, 1024, name, &inv, &err) == 0);
    ck_assert_int_eq(inv.n, 4);
    ck_assert_str_eq(inv.source, "gfd");
    json_decref(n);

    n = load_json(FIX "node-bad-inventory.json");
    ck_assert_int_eq(k8s_obs_node(n, 1024, name, &inv, &err), 1);
    ck_assert_str_eq(name, "node-broken");
    ck_assert_int_eq(inv.n, 0);
    json_decref(n);

    json_t *bm = watch_object("wire/watch/nodes-watch.jsonl", 5);   /* BOOKMARK */
    ck_assert_int_eq(k8s_obs_node(bm, 1024, name, &inv, &err), -1);
    json_decref(bm);
}
END_TEST

START_TEST(trim_pod_keeps_what_decoding_needs)
{
    json_t *pod = load_json(FIX "pod-bound-assigned.json");
    /* what preemption reads, set on the fixture */
    json_t *spec = json_object_get(pod, "spec"), *md = json_object_get(pod, "metadata");
    json_object_set_new(spec, "priority", json_integer(1000));
    json_object_set_new(spec, "preemptionPolicy", json_string("Never"));
    json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(45));
    json_object_set_new(md, "creationTimestamp", json_string("2025-11-21T05:00:00Z"));
    json_object_set_new(md, "deletionTimestamp", json_string("2025-11-21T06:00:00Z"));
    json_object_set_new(json_object_get(pod, "status"), "startTime", json_string("2025-11-21T05:00:03Z"));
    json_object_set_new(json_object_get(pod, "status"), "nominatedNodeName", json_string("node-x"));
    json_t *t = k8s_obs_trim_pod(pod);
    gp_pod_view a, b;
    gp_err err;
    ck_assert(k8s_obs_pod(pod, false, 1024, &a, &err) == 0);
    ck_assert(k8s_obs_pod(t, false, 1024, &b, &err) == 0);
    ck_assert(memcmp(&a.assign, &b.assign, sizeof a.assign) == 0);
    ck_assert_str_eq(a.node, b.node);
    ck_assert_int_eq(a.obs.terminal, b.obs.terminal);
    ck_assert_int_eq(a.wants_gpu, b.wants_gpu);
    /* and what preemption reads: priority, times, nomination, labels */
    gp_pod_prio pa, pb;
    podprio_decode(pod, &pa);
    podprio_decode(t, &pb);
    ck_assert(memcmp(&pa, &pb, sizeof pa) == 0);
    ck_assert(pb.priority == 1000 && pb.never && pb.grace_s == 45 && pb.deletion_ns > 0 &&
              pb.start_ns > 0 && strcmp(pb.nominated, "node-x") == 0);
    char la[GP_LABELS_MAX] = "", lb[GP_LABELS_MAX] = "";
    ck_assert(podprio_labels(pod, la, sizeof la) && podprio_labels(t, lb, sizeof lb));
    ck_assert(memcmp(la, lb, sizeof la) == 0);
    const json_t *ann = json_object_get(json_object_get(t, "metadata"), "annotations");
    ck_assert_ptr_null(json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration"));
    ck_assert_ptr_nonnull(json_object_get(ann, "gpupack.io/assignment"));
    ck_assert_ptr_null(json_object_get(json_object_get(t, "metadata"), "managedFields"));
    const json_t *c0 = json_array_get(json_object_get(json_object_get(t, "spec"), "containers"), 0);
    ck_assert_ptr_null(json_object_get(c0, "image"));
    ck_assert_ptr_nonnull(json_object_get(c0, "resources"));
    char *s1 = json_dumps(pod, JSON_COMPACT), *s2 = json_dumps(t, JSON_COMPACT);
    ck_assert_uint_lt(strlen(s2), strlen(s1));
    free(s1);
    free(s2);
    json_decref(t);
    json_decref(pod);
}
END_TEST

/* Pods of the other systems' formats are seen as GPU pods by the watch (so
 * one bound without gpupack is accounted), and their trimmed copy decodes
 * the same. */
START_TEST(other_formats_want_gpus)
{
    static const char *const pods[] = {
        "{\"metadata\":{\"name\":\"k\",\"uid\":\"u\",\"annotations\":{\"gpu-fraction\":"
        "\"0.5\",\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"}},\"spec\":"
        "{\"nodeName\":\"n\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
        "{\"metadata\":{\"name\":\"t\",\"uid\":\"u\"},\"spec\":{\"nodeName\":\"n\","
        "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
        "\"tencent.com/vcuda-core\":50,\"tencent.com/vcuda-memory\":4}}}]}}",
        "{\"metadata\":{\"name\":\"h\",\"uid\":\"u\",\"annotations\":{"
        "\"nvidia.com/use-gputype\":\"A100\"}},\"spec\":{\"nodeName\":\"n\",\"containers\":"
        "[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpumem\":100}}}]}}",
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(pods); i++) {
        json_t *pod = json_loads(pods[i], 0, NULL);
        ck_assert_ptr_nonnull(pod);
        gp_pod_view v;
        gp_err err;
        ck_assert(k8s_obs_pod(pod, false, 1024, &v, &err) == 0);
        ck_assert_msg(v.wants_gpu, "pod %zu", i);
        json_t *t = k8s_obs_trim_pod(pod);
        gp_resource_names n;
        podreq_default_names(&n);
        gp_pod_req a, b;
        ck_assert_int_eq(podreq_decode(pod, &n, &a, &err), 0);
        ck_assert_int_eq(podreq_decode(t, &n, &b, &err), 0);
        ck_assert_int_eq(a.nctrs, 1);
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
        const json_t *ann = json_object_get(json_object_get(t, "metadata"), "annotations");
        ck_assert_ptr_null(json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration"));
        json_decref(t);
        json_decref(pod);
    }
}
END_TEST

START_TEST(garbage_objects)
{
    static const char *const bad[] = {"[]", "{}", "{\"metadata\":[]}", "{\"metadata\":{\"name\":1}}",
                                      "{\"metadata\":{\"name\":\"x\"}}", "\"str\""};
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
        json_t *j = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        gp_pod_view v;
        char name[GP_NAME_MAX];
        gp_inventory inv;
        gp_err err;
        ck_assert(k8s_obs_pod(j, false, 1024, &v, &err) == -1);
        if (i != 4)
            ck_assert(k8s_obs_node(j, 1024, name, &inv, &err) == -1);
        json_t *t1 = k8s_obs_trim_pod(j), *t2 = k8s_obs_trim_node(j);
        json_decref(t1);
        json_decref(t2);
        json_decref(j);
    }
}
END_TEST

/* Of the conditions, the trim keeps an unbound pod's PodScheduled without its
 * message, and consolidation's record of held places with its message, on a
 * bound pod too (the replacements' places outlive the waiting pod's bind). */
START_TEST(trim_pod_conditions)
{
    for (int bound = 0; bound < 2; bound++) {
        json_t *pod = json_pack("{s:{s:s,s:s},s:{s:s},s:{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s},"
                                "{s:s,s:s,s:s,s:s}]}}",
                                "metadata", "name", "p", "uid", "u", "spec", "nodeName", bound ? "n1" : "",
                                "status", "conditions", "type", "PodScheduled", "status", "False", "reason",
                                "Unschedulable", "message", "0/300 nodes are available: lots of words",
                                "type", "Ready", "status", "False", "message", "not yet",
                                "type", GP_HELD_PLACES_CONDITION, "status", "True", "reason",
                                "ConsolidationPlan", "message", "{\"v\":1}");
        json_t *t = k8s_obs_trim_pod(pod);
        const json_t *cs = json_object_get(json_object_get(t, "status"), "conditions");
        ck_assert_int_eq(json_array_size(cs), bound ? 1 : 2);
        const json_t *held = json_array_get(cs, bound ? 0 : 1);
        ck_assert_str_eq(json_string_value(json_object_get(held, "type")), GP_HELD_PLACES_CONDITION);
        ck_assert_str_eq(json_string_value(json_object_get(held, "message")), "{\"v\":1}");
        if (!bound) {
            const json_t *ps = json_array_get(cs, 0);
            ck_assert_str_eq(json_string_value(json_object_get(ps, "reason")), "Unschedulable");
            ck_assert_ptr_null(json_object_get(ps, "message"));
        }
        json_decref(t);
        json_decref(pod);
    }
}
END_TEST

/* A pod's controller (consolidation moves only what a controller recreates):
 * the ownerReference with controller: true, kept by the trim. */
START_TEST(pod_owner)
{
    json_t *pod = json_loads(
        "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\",\"ownerReferences\":["
        "{\"kind\":\"Node\",\"uid\":\"n-1\",\"name\":\"x\"},"
        "{\"kind\":\"ReplicaSet\",\"uid\":\"rs-1\",\"name\":\"web-1\",\"controller\":true,"
        "\"apiVersion\":\"apps/v1\",\"blockOwnerDeletion\":true}]},\"spec\":{}}", 0, NULL);
    ck_assert_ptr_nonnull(pod);
    gp_pod_owner o;
    podprio_owner(pod, &o);
    ck_assert_str_eq(o.kind, "ReplicaSet");
    ck_assert_str_eq(o.uid, "rs-1");
    json_t *t = k8s_obs_trim_pod(pod);
    podprio_owner(t, &o);
    ck_assert_str_eq(o.uid, "rs-1");   /* kept by the trim */
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(json_object_get(t, "metadata"),
                                                                      "ownerReferences"), 1),
                                       "blockOwnerDeletion"));
    json_decref(t);
    json_decref(pod);
    const char *none[] = {
        "{\"metadata\":{}}",
        "{\"metadata\":{\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"uid\":\"r\"}]}}",
        "{\"metadata\":{\"ownerReferences\":{\"kind\":\"ReplicaSet\"}}}",
        "{\"metadata\":{\"ownerReferences\":[{\"kind\":7,\"uid\":\"r\",\"controller\":true}]}}",
        "{\"metadata\":{\"ownerReferences\":[{\"kind\":\"AVeryLongKindNameThatDoesNotFitTheField\","
        "\"uid\":\"r\",\"controller\":true}]}}",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        pod = json_loads(none[i], 0, NULL);
        ck_assert_ptr_nonnull(pod);
        podprio_owner(pod, &o);
        ck_assert_msg(o.kind[0] == '\0' && o.uid[0] == '\0', "case %zu: %s/%s", i, o.kind, o.uid);
        json_decref(pod);
    }
}
END_TEST

Suite *suite_k8s_obs(void);
Suite *suite_k8s_obs(void)
{
    Suite *s = suite_create("k8s_obs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, bound_with_assignment);
    tcase_add_test(tc, aliyun_succeeded);
    tcase_add_test(tc, bad_assignment_is_reported_not_fatal);
    tcase_add_test(tc, captured_pods);
    tcase_add_test(tc, captured_nodes);
    tcase_add_test(tc, trim_pod_keeps_what_decoding_needs);
    tcase_add_test(tc, other_formats_want_gpus);
    tcase_add_test(tc, garbage_objects);
    tcase_add_test(tc, pod_owner);
    tcase_add_test(tc, trim_pod_conditions);
    suite_add_tcase(s, tc);
    return s;
}
