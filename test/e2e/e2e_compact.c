/* e2e_compact.c -- scenario 4: etcd compacted while gpupack's watches run (the API
 * server without watch cache, so watches are served by etcd): when the watch comes
 * back from an older resourceVersion it gets 410 Gone, gpupack lists again and
 * converges, releasing the pods deleted while it was not watching. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-compact"
#define NPODS 30

START_TEST(compaction_410_relists)
{
    e2e_world_opts o = {.cp = {.no_watch_cache = true}};
    e2e_world *w = e2e_world_up(&o);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    char name[32];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "c%d", i);
        e2e_node_create(cp, e2e_node_gfd(name, 4, 24576, "NVIDIA-L4"));
    }
    for (int i = 0; i < NPODS; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        json_t *p = e2e_pod(NS, name);
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "8192", NULL);
        e2e_pod_create(cp, p);
    }
    ck_assert_int_eq(e2e_wait_bound(cp, NS, NPODS, 60), NPODS);
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    double expired0 = e2e_gp_metric(w->gp, "gpupack_watches_total{resource=\"pods\",result=\"expired\"}");
    double lists0 = e2e_gp_metric(w->gp, "gpupack_lists_total{resource=\"pods\",result=\"ok\"}");

    /* writes gpupack's pod watch does not see, then compaction past them */
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "e2e-compact-%d", i);
        json_t *cm = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", name);
        json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces/" NS "/configmaps", NULL, cm));
        json_decref(cm);
    }
    e2e_cp_ctl(cp, "compact-etcd", NULL);
    /* the open watch is not cut by compaction; the API server going away cuts it,
     * and pods deleted meanwhile are only learnt by listing again */
    e2e_cp_ctl(cp, "stop-apiserver", "K8S_APISERVER_GRACE=0");
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        e2e_etcd_delete_pod(cp, NS, name);
    }
    e2e_cp_ctl(cp, "start-apiserver", NULL);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        ck_assert_msg(e2e_gp_wait_pod_gpus(w->gp, NS, name, 0, 60) >= 0, "%s still holds GPUs", name);
    }
    double expired = e2e_gp_metric(w->gp, "gpupack_watches_total{resource=\"pods\",result=\"expired\"}");
    double lists = e2e_gp_metric(w->gp, "gpupack_lists_total{resource=\"pods\",result=\"ok\"}");
    e2e_log("pods watch expired %.0f -> %.0f, lists %.0f -> %.0f", expired0, expired, lists0, lists);
    ck_assert_msg(expired > expired0, "no 410 seen by the pods watch");
    ck_assert_msg(lists > lists0, "pods not listed again after the 410");
    ck_assert_int_ge(e2e_gp_log_count(w->gp, "410"), 1);
    e2e_assert_consistent(cp, w->gp, 15, &v);
    ck_assert_int_eq(v.gpu_pods_bound, NPODS - 5);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(compact)
{
    Suite *s = suite_create("e2e compact");
    E2E_TEST(s, compaction_410_relists, 300);
    return s;
}
