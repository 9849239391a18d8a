/* e2e_bypass.c -- scenario 6: a pod created with spec.nodeName already set (no
 * scheduler, no bind) that asks gpupack resources is accounted on its node's GPUs
 * (even when that over-commits), logged once and counted in a metric; the capacity
 * it holds is not handed out again, and it is released when deleted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-bypass"

static void bypass_pod(e2e_cp *cp, const char *name, const char *node, const char *mem)
{
    json_t *p = e2e_pod(NS, name);
    json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", mem, NULL);
    e2e_pod_create(cp, p);
}

static void sched_pod(e2e_cp *cp, const char *name, const char *mem)
{
    json_t *p = e2e_pod(NS, name);
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", mem, NULL);
    e2e_pod_create(cp, p);
}

static json_t *inspect_gpu0(e2e_gp *g, const char *node)
{
    char path[128];
    snprintf(path, sizeof path, "/inspect/%s", node);
    long st;
    char *body = e2e_gp_get(g, path, &st);
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    ck_assert_msg(st == 200 && j, "/inspect/%s: HTTP %ld", node, st);
    json_t *gpu = json_incref(json_array_get(json_object_get(json_object_get(j, "node"), "gpus"), 0));
    json_decref(j);
    return gpu;
}

START_TEST(bound_without_scheduler_is_accounted)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    e2e_node_create(cp, e2e_node_gpupack("b1", 1, 16384, "L4"));
    e2e_node_create(cp, e2e_node_gpupack("b2", 1, 16384, "L4"));

    /* a scheduled pod takes 8 GiB of a GPU (b1 or b2: call that one "full", the other "free") */
    sched_pod(cp, "a", "8192");
    ck_assert_int_eq(e2e_wait_bound(cp, NS, 1, 30), 1);
    json_t *pa = e2e_pod_get(cp, NS, "a");
    char full[64], free_node[64];
    gp_strlcpy(full, json_string_value(json_object_get(json_object_get(pa, "spec"), "nodeName")), sizeof full);
    json_decref(pa);
    gp_strlcpy(free_node, strcmp(full, "b1") == 0 ? "b2" : "b1", sizeof free_node);

    /* bypass 1: 10 GiB more on that node -- over-commits; bypass 2: 12 GiB on the other */
    bypass_pod(cp, "byp-over", full, "10240");
    bypass_pod(cp, "byp-fits", free_node, "12288");
    ck_assert_msg(e2e_gp_wait_pod_gpus(w->gp, NS, "byp-over", 1, 10) >= 0, "byp-over not accounted");
    ck_assert_msg(e2e_gp_wait_pod_gpus(w->gp, NS, "byp-fits", 1, 10) >= 0, "byp-fits not accounted");
    json_t *g = inspect_gpu0(w->gp, full);
    json_int_t used = json_integer_value(json_object_get(json_object_get(g, "memoryMiB"), "used"));
    json_decref(g);
    ck_assert_int_eq(used, 8192 + 10240);   /* the over-commit shows */
    ck_assert_int_eq((int)e2e_gp_metric(w->gp, "gpupack_pods_bypassed_total"), 2);

    /* the capacity is not handed out twice: 6 GiB would fit next to "a" if byp-over
     * were ignored, and the other node has 4 GiB left */
    sched_pod(cp, "c", "6144");
    char *ev = e2e_wait_pod_event(cp, NS, "c", "FailedScheduling", "largest free GPU has 0 MiB", 30);
    ck_assert_msg(ev && strstr(ev, "largest free GPU has 0 MiB") && strstr(ev, "largest free GPU has 4096 MiB"),
                  "c: %s", ev ? ev : "(no event)");
    free(ev);

    /* later updates of a bypass pod neither warn nor count again */
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "touched", "yes");
    json_decref(e2e_api_ok(cp, "PATCH", "/api/v1/namespaces/" NS "/pods/byp-over",
                           "application/merge-patch+json", patch));
    json_decref(patch);
    e2e_sleep(1);
    ck_assert_int_eq(e2e_gp_log_count(w->gp, "pod " NS "/byp-over is bound to"), 1);
    ck_assert_int_eq(e2e_gp_log_count(w->gp, "OVER-COMMITS"), 1);
    ck_assert_int_eq((int)e2e_gp_metric(w->gp, "gpupack_pods_bypassed_total"), 2);
    ck_assert_int_eq(e2e_gp_pod_gpus(w->gp, NS, "byp-over"), 1);

    /* deleting the bypass pod releases it, and c gets its room */
    e2e_pod_delete(cp, NS, "byp-over");
    ck_assert_msg(e2e_gp_wait_pod_gpus(w->gp, NS, "byp-over", 0, 2) >= 0, "byp-over still held");
    e2e_nudge_scheduler(cp);   /* its last retry may have raced gpupack's view of the delete */
    ck_assert_int_eq(e2e_wait_bound(cp, NS, 3, 60), 3);   /* a, byp-fits, c */

    /* the rest agrees with the API server; byp-fits is gpupack's own record */
    e2e_verdict v;
    e2e_assert_consistent_with(cp, w->gp, 10, E2E_ALLOW_BYPASS, &v);
    ck_assert_int_eq(v.bypassed, 1);
    ck_assert_int_eq(v.gpu_pods_bound, 2);
    /* without the allowance the checker calls such a pod out */
    e2e_verify(cp, w->gp, &v);
    ck_assert_msg(v.problems > 0 && strstr(v.report, "byp-fits is bound to") &&
                      strstr(v.report, "without a GPU assignment"),
                  "checker missed the bypass pod: %s", v.report);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(bypass)
{
    Suite *s = suite_create("e2e bypass");
    E2E_TEST(s, bound_without_scheduler_is_accounted, 240);
    return s;
}
