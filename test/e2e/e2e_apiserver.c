/* e2e_apiserver.c -- scenario 3: kube-apiserver stopped for 30 s mid-run, then
 * started. While it is away gpupack says it serves possibly stale data; pods
 * deleted meanwhile (in etcd, where no watch sees it) are released once it is
 * back; gpupack converges and nothing is over-committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-apiserver"
#define NPODS 40
#define NDELETED 10

static void make_pods(e2e_cp *cp, const char *prefix, int n)
{
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s%02d", prefix, i);
        json_t *p = e2e_pod(NS, name);
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", i % 2 ? "6144" : "10240", "gpupack.io/gpu-core",
                    "20", NULL);
        e2e_pod_create(cp, p);
    }
}

/* /readyz's status and whether its text mentions stale data. */
static bool readyz_stale(e2e_gp *g, long *status)
{
    char *body = e2e_gp_get(g, "/readyz", status);
    bool stale = body && strstr(body, "stale");
    free(body);
    return stale;
}

START_TEST(apiserver_away_30s)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "a%d", i);
        e2e_node_create(cp, e2e_node_gpupack(name, 4, 40960, "A100-SXM4-40GB"));
    }
    make_pods(cp, "p", NPODS);
    ck_assert_int_eq(e2e_wait_bound(cp, NS, NPODS, 60), NPODS);
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);

    double t_stop = gp_mono_s();
    e2e_cp_ctl(cp, "stop-apiserver", "K8S_APISERVER_GRACE=0");
    /* pods deleted while gpupack cannot watch */
    for (int i = 0; i < NDELETED; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        e2e_etcd_delete_pod(cp, NS, name);
    }
    long st = 0;
    bool stale = false;
    while (!stale && gp_mono_s() - t_stop < 25) {
        stale = readyz_stale(w->gp, &st);
        if (!stale)
            e2e_sleep(0.2);
    }
    e2e_log("/readyz while the API server is away: HTTP %ld, %s (after %.1f s)", st,
            stale ? "says stale" : "does NOT say stale", gp_mono_s() - t_stop);
    ck_assert_msg(stale, "/readyz never said stale while the API server was down");
    ck_assert_int_eq(st, 200);   /* still serving from the last known state */
    ck_assert_int_eq((int)e2e_gp_metric(w->gp, "gpupack_cluster_stale"), 1);
    /* the deleted pods still hold their GPUs: gpupack cannot know yet */
    ck_assert_int_eq(e2e_gp_pod_gpus(w->gp, NS, "p00"), 1);
    e2e_sleep(30 - (gp_mono_s() - t_stop));
    e2e_cp_ctl(cp, "start-apiserver", NULL);
    double t_start = gp_mono_s();

    /* converge: not stale, the deleted pods released */
    while ((readyz_stale(w->gp, &st) || st != 200) && gp_mono_s() - t_start < 60)
        e2e_sleep(0.2);
    e2e_log("gpupack fresh again %.1f s after the API server came back", gp_mono_s() - t_start);
    ck_assert_msg(!readyz_stale(w->gp, &st), "still stale 60 s after the API server came back");
    for (int i = 0; i < NDELETED; i++) {
        snprintf(name, sizeof name, "p%02d", i);
        ck_assert_msg(e2e_gp_wait_pod_gpus(w->gp, NS, name, 0, 10) >= 0, "%s still holds GPUs", name);
    }
    /* and it schedules again: new pods take the freed room */
    make_pods(cp, "q", NDELETED);
    ck_assert_int_eq(e2e_wait_bound(cp, NS, NPODS, 90), NPODS);
    e2e_assert_consistent(cp, w->gp, 15, &v);
    ck_assert_int_eq(v.gpu_pods_bound, NPODS);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(apiserver)
{
    Suite *s = suite_create("e2e apiserver");
    E2E_TEST(s, apiserver_away_30s, 300);
    return s;
}
