/* e2e_release.c -- scenario 5: pods deleted, Succeeded or Failed give their GPUs
 * back as soon as the watch reports it (the time is logged; the goal is 2 s, but timings
 * are measured, not asserted: CI machines are noisy), and kube-scheduler then binds the
 * pod that was waiting for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-release"

static void gpu_pod(e2e_cp *cp, const char *name)
{
    json_t *p = e2e_pod(NS, name);
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "12288", "gpupack.io/gpu-core", "60", NULL);
    e2e_pod_create(cp, p);
}

static const char *node_of(e2e_cp *cp, const char *name)
{
    static char node[256];
    json_t *p = e2e_pod_get(cp, NS, name);
    const char *n = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    gp_strlcpy(node, n ? n : "", sizeof node);
    json_decref(p);
    return node;
}

static void wait_bound(e2e_world *w, const char *name, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (!node_of(w->cp, name)[0] && gp_mono_s() < end)
        e2e_sleep(0.1);
    if (!node_of(w->cp, name)[0])
        e2e_gp_log_tail(w->gp, 20);
    ck_assert_msg(node_of(w->cp, name)[0], "pod %s not bound within %.0f s", name, timeout_s);
}

/* How each holder gives its GPU back. */
static const char *const ways[] = {"delete", "Succeeded", "Failed"};

START_TEST(released_gpus_go_to_the_waiter)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_ns_create(w->cp, NS);
    /* one GPU: a second 12 GiB pod fits only after the first one is gone */
    e2e_node_create(w->cp, e2e_node_gpupack("r1", 1, 16384, "L4"));
    gpu_pod(w->cp, "holder-0");
    wait_bound(w, "holder-0", 30);
    for (size_t k = 0; k < GP_ARRAY_LEN(ways); k++) {
        char holder[32], waiter[32];
        snprintf(holder, sizeof holder, "holder-%zu", k);
        snprintf(waiter, sizeof waiter, "holder-%zu", k + 1);
        ck_assert_int_eq(e2e_gp_wait_pod_gpus(w->gp, NS, holder, 1, 10) >= 0, 1);
        gpu_pod(w->cp, waiter);
        char *ev = e2e_wait_pod_event(w->cp, NS, waiter, "FailedScheduling", "largest free GPU has 4096 MiB", 30);
        ck_assert_msg(ev && strstr(ev, "largest free GPU has 4096 MiB"), "%s: %s", waiter, ev ? ev : "(no event)");
        free(ev);
        if (strcmp(ways[k], "delete") == 0)
            e2e_pod_delete(w->cp, NS, holder);
        else
            e2e_pod_set_phase(w->cp, NS, holder, ways[k]);
        double took = e2e_gp_wait_pod_gpus(w->gp, NS, holder, 0, 10);
        e2e_log("MEASURED %s: %s released its GPU in %.3f s (goal < 2 s)", ways[k], holder, took);
        ck_assert_msg(took >= 0, "%s: the GPU of %s was not released within 10 s", ways[k], holder);
        e2e_nudge_scheduler(w->cp);   /* see e2e_nudge_scheduler: kube-scheduler may have retried first */
        wait_bound(w, waiter, 60);
        e2e_log("%s bound to %s after the release", waiter, node_of(w->cp, waiter));
    }
    e2e_verdict v;
    e2e_assert_consistent(w->cp, w->gp, 10, &v);
    ck_assert_int_eq(v.gpu_pods_bound, 1);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(release)
{
    Suite *s = suite_create("e2e release");
    E2E_TEST(s, released_gpus_go_to_the_waiter, 300);
    return s;
}
