/* test_sim.c -- the simulator on a tiny hand-computed trace (test/fixtures/sim/).
 *
 * Nodes: n0 = 2 x G2, 8 cores; n1 = 1 x G2, 4 cores. Capacity 3000 milli.
 * Pods in file order (no shuffle, no inflation), best-fit node and GPU:
 *   p0 1 x 1000, 1 core -> n1 (leaves nothing free; n0 would leave 1 GPU)
 *   p1 1 x 500          -> n0 GPU 0
 *   p2 1 x 500 (G2)     -> n0 GPU 0 (exactly fills it)
 *   p3 CPU-only 3 cores -> n1 (uses up its CPU; n0 has an idle GPU)
 *   p4 2 x 1000         -> fails: n0 has one free GPU, n1 none
 * End: 2000 of 3000 allocated, 1 GPU unallocated, arrived 4000/3000.
 * Fragmentation at the end: only n0 has idle share (GPU 1, 1000); of the
 * shapes (by GPU demand, with CPU) only the 2-GPU one (weight 2/6) cannot be
 * hosted -> 1000 x 1/3 of 1000 idle = 33.3 %. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "lib/yamljson.h"

#define FIX "test/fixtures/sim/"

static trace_node *nodes;
static trace_pod *pods;
static size_t nn, np;
static gp_shapes shapes;

static void setup(void)
{
    gp_err err;
    ck_assert_int_eq(trace_load_nodes(FIX "nodes.csv", &nodes, &nn, &err), 0);
    ck_assert_int_eq(trace_load_pods(FIX "pods.csv", &pods, &np, &err), 0);
    trace_shapes(pods, np, 1.0, true, true, &shapes);
}

static void teardown(void)
{
    free(nodes);
    free(pods);
}

static sim_config base_config(void)
{
    sim_config c;
    memset(&c, 0, sizeof c);
    c.nodes = nodes;
    c.nnodes = nn;
    c.pods = pods;
    c.npods = np;
    placement_default_opts(&c.place);
    c.place.node = placement_node_strategy("best-fit");
    c.place.gpu = placement_gpu_strategy("best-fit");
    c.place.shapes = &shapes;
    c.shapes = &shapes;
    c.mode = SIM_MODE_FILTER;
    c.weight = 1;
    c.cache = true;
    return c;
}

START_TEST(hand_computed_arrivals)
{
    sim_config c = base_config();
    for (int cache = 0; cache < 2; cache++) {
        c.cache = cache;
        sim_result r;
        gp_err err;
        ck_assert_int_eq(sim_run(&c, 42, &r, &err), 0);
        ck_assert_int_eq(r.pods, 5);
        ck_assert_double_eq_tol(r.end.alloc, 2.0 / 3.0, 1e-9);
        ck_assert_double_eq_tol(r.end.arrived, 4.0 / 3.0, 1e-9);
        ck_assert_double_eq_tol(r.unalloc_gpus, 1.0, 1e-9);
        ck_assert_int_eq(r.failed_total, 1);
        ck_assert_int_eq(r.failed[TRACE_KIND_GPU2], 1);
        ck_assert_int_eq(r.arrived[TRACE_KIND_SHARE], 2);
        ck_assert_double_eq_tol(r.end.frag, 1.0 / 3.0, 1e-9);
        /* steps: 10..30 % reached by p0 (alloc 1/3), 40/50 % by p1 (1/2),
         * 60 % by p2 (2/3), 70..130 % by p4 (2/3) */
        ck_assert_int_eq(r.nsteps, 13);
        ck_assert_double_eq_tol(r.step[2].alloc, 1.0 / 3.0, 1e-9);
        ck_assert_double_eq_tol(r.step[4].alloc, 0.5, 1e-9);
        ck_assert_double_eq_tol(r.step[5].alloc, 2.0 / 3.0, 1e-9);
        ck_assert_double_eq_tol(r.step[12].alloc, 2.0 / 3.0, 1e-9);
    }
}
END_TEST

START_TEST(hand_computed_departures)
{
    /* by time: p0 n1, p1 n0, p2 n0, p2 leaves at 30, p3 n1, p4 fails (at
     * that moment 1500 of 3000 are allocated); everything leaves at 100 */
    sim_config c = base_config();
    c.departures = true;
    sim_result r;
    gp_err err;
    ck_assert_int_eq(sim_run(&c, 1, &r, &err), 0);
    ck_assert_int_eq(r.nsteps, 13);
    ck_assert_double_eq_tol(r.step[5].alloc, 2.0 / 3.0, 1e-9);
    ck_assert_double_eq_tol(r.step[12].alloc, 0.5, 1e-9);
    ck_assert_double_eq_tol(r.end.alloc, 0.0, 1e-9);
    ck_assert_int_eq(r.failed_total, 1);
    ck_assert_int_eq(r.failed[TRACE_KIND_GPU2], 1);
}
END_TEST

START_TEST(inflation_reaches_the_target_and_seeds_repeat)
{
    sim_config c = base_config();
    c.shuffle = true;
    c.inflate = 2.0;   /* 6000 milli of requests on 3000 of capacity */
    sim_result a, b;
    gp_err err;
    ck_assert_int_eq(sim_run(&c, 7, &a, &err), 0);
    ck_assert_int_eq(sim_run(&c, 7, &b, &err), 0);
    ck_assert_double_eq_tol(a.end.alloc, b.end.alloc, 1e-12);
    ck_assert_int_eq(a.pods, b.pods);
    ck_assert(a.end.arrived <= 2.0 + 1e-9);
    ck_assert(a.end.arrived > 2.0 - 2.0 / 3.0);   /* within one largest pod of the target */
    ck_assert(a.end.alloc <= 1.0 + 1e-9);
    /* prioritize mode and kube-placed CPU pods run too */
    c.mode = SIM_MODE_PRIORITIZE;
    c.cpu_pods = SIM_CPU_PODS_KUBE;
    ck_assert_int_eq(sim_run(&c, 7, &a, &err), 0);
    ck_assert(a.end.alloc > 0);
}
END_TEST

START_TEST(departures_need_times)
{
    sim_config c = base_config();
    trace_pod p = pods[0];
    p.has_times = false;
    c.pods = &p;
    c.npods = 1;
    c.departures = true;
    sim_result r;
    gp_err err;
    ck_assert_int_eq(sim_run(&c, 1, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, "creation_time") != NULL, "%s", err.msg);
}
END_TEST

/* Kube mode on the hand-computed trace: with the shipped kind of
 * configuration (gpupack sees every pod and every node, filter mode) the
 * result is the one gpupack reaches alone (hand_computed_arrivals); with
 * gpupack's resources neither ignored nor advertised, kube-scheduler's
 * NodeResourcesFit rejects every GPU pod before gpupack is asked. */
static const char shipped_like[] =
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n"
    "percentageOfNodesToScore: 100\n"
    "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {ignoredResourceGroups: "
    "[gpupack.io]}}]}]\n"
    "extenders: [{filterVerb: filter, prioritizeVerb: prioritize, weight: 25}]\n";
static const char not_ignored[] =
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n"
    "extenders: [{filterVerb: filter, prioritizeVerb: prioritize, weight: 5, "
    "managedResources: [{name: gpupack.io/gpu-mem}]}]\n";

START_TEST(kube_mode_as_configured)
{
    schedcfg k;
    gp_err err;
    ck_assert_msg(schedcfg_parse(shipped_like, strlen(shipped_like), &k, &err) == 0, "%s", err.msg);
    sim_config c = base_config();
    c.kube = &k;
    c.extender_cpu = true;
    for (int cache = 0; cache < 2; cache++) {
        c.cache = cache;
        sim_result r;
        ck_assert_int_eq(sim_run(&c, 42, &r, &err), 0);
        ck_assert_double_eq_tol(r.end.alloc, 2.0 / 3.0, 1e-9);
        ck_assert_int_eq(r.failed_total, 1);
        ck_assert_int_eq(r.failed[TRACE_KIND_GPU2], 1);
    }
    ck_assert_int_eq(schedcfg_parse(not_ignored, strlen(not_ignored), &k, &err), 0);
    sim_result r;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), 0);
    ck_assert_double_eq_tol(r.end.alloc, 0.0, 1e-9);
    ck_assert_int_eq(r.failed_total, 4);                  /* every GPU pod */
    ck_assert_int_eq(r.failed[TRACE_KIND_CPU], 0);        /* the CPU-only pod binds */
}
END_TEST

START_TEST(default_weight_is_the_manifests)
{
    /* prioritize mode must model the extender weight the manifests ship */
    gp_err err;
    json_t *cfg = yamljson_load_file("manifests/base/scheduler-config.yaml", &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    json_t *doc = json_array_get(cfg, 0);   /* the stream's documents */
    json_t *w = json_object_get(json_array_get(json_object_get(doc, "extenders"), 0), "weight");
    ck_assert(json_is_integer(w));
    ck_assert_int_eq(json_integer_value(w), SIM_DEFAULT_WEIGHT);
    json_decref(cfg);
}
END_TEST

Suite *suite_sim(void);
Suite *suite_sim(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, hand_computed_arrivals);
    tcase_add_test(tc, hand_computed_departures);
    tcase_add_test(tc, inflation_reaches_the_target_and_seeds_repeat);
    tcase_add_test(tc, departures_need_times);
    tcase_add_test(tc, default_weight_is_the_manifests);
    tcase_add_test(tc, kube_mode_as_configured);
    suite_add_tcase(s, tc);
    return s;
}
