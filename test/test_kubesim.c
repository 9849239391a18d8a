/* test_kubesim.c -- kube-scheduler v1.26's arithmetic (kubesim) and the
 * KubeSchedulerConfiguration reader (schedcfg), against numbers computed by
 * hand from the formulas in pkg/scheduler (docs/simulator.md cites them). */
#include <check.h>
#include <string.h>

#include "sim/kubesim.h"
#include "sim/schedcfg.h"

/* numFeasibleNodesToFind: adaptive = 50 - n/125 percent (at least 5), never
 * below 100 nodes; clusters under 100 nodes are searched whole. */
static const struct {
    int pct, nall, want;
} feasible_cases[] = {
    {0, 50, 50},       /* under minFeasibleNodesToFind: every node */
    {0, 99, 99},
    {0, 100, 100},     /* 49 % of 100 = 49 -> raised to 100 */
    {0, 200, 100},     /* 49 % = 98 -> 100 */
    {0, 1213, 497},    /* 50 - 9 = 41 % -> 497 (the openb cluster) */
    {0, 3000, 780},    /* 50 - 24 = 26 % */
    {0, 5000, 500},    /* 50 - 40 = 10 % */
    {0, 10000, 500},   /* 50 - 80 < 5 -> 5 % */
    {100, 1213, 1213}, /* what the shipped configuration asks */
    {30, 200, 100},    /* 60 -> 100 */
    {10, 5000, 500},
};

START_TEST(num_feasible)
{
    int i = _i;
    ck_assert_int_eq(kubesim_num_feasible(feasible_cases[i].pct, feasible_cases[i].nall),
                     feasible_cases[i].want);
}
END_TEST

START_TEST(per_resource_scores)
{
    ck_assert_int_eq(kubesim_least_requested(1000, 4000), 75);
    ck_assert_int_eq(kubesim_least_requested(1, 3), 66);      /* integer division */
    ck_assert_int_eq(kubesim_least_requested(5000, 4000), 0); /* over-requested */
    ck_assert_int_eq(kubesim_least_requested(1, 0), 0);
    ck_assert_int_eq(kubesim_most_requested(1000, 4000), 25);
    ck_assert_int_eq(kubesim_most_requested(2, 3), 66);
    ck_assert_int_eq(kubesim_most_requested(5000, 4000), 100); /* capped at capacity */
    ck_assert_int_eq(kubesim_most_requested(1, 0), 0);
}
END_TEST

START_TEST(fit_strategies)
{
    schedcfg c;
    schedcfg_defaults(&c);
    /* cpu 1000 of 4000, memory 500 of 1000 */
    int64_t req[2] = {1000, 500}, alloc[2] = {4000, 1000};
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc), 62);   /* (75 + 50) / 2 */
    c.fit_res[0].weight = 2;
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc), 66);   /* (150 + 50) / 3 */
    c.fit_res[0].weight = 1;
    c.strategy = SCHEDCFG_MOST_ALLOCATED;
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc), 37);   /* (25 + 50) / 2 */
    /* a resource the node lacks (allocatable 0) is left out */
    int64_t alloc1[2] = {4000, 0};
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc1), 25);
    /* RequestedToCapacityRatio, shape (0,0) (100,10): linear, scaled x10 */
    c.strategy = SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO;
    c.nshape = 2;
    c.shape_util[0] = 0, c.shape_score[0] = 0;
    c.shape_util[1] = 100, c.shape_score[1] = 10;
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc), 38);   /* round((25 + 50) / 2) */
    /* bin-packing shape (0,10) (100,0): low utilisation scores high */
    c.shape_score[0] = 10, c.shape_score[1] = 0;
    ck_assert_int_eq(kubesim_fit_score(&c, req, alloc), 63);   /* round((75 + 50) / 2) */
    /* zero-scored resources drop out of the mean */
    int64_t full[2] = {4000, 500};
    ck_assert_int_eq(kubesim_fit_score(&c, full, alloc), 50);
}
END_TEST

START_TEST(shape_points)
{
    schedcfg c;
    schedcfg_defaults(&c);
    c.nshape = 3;
    c.shape_util[0] = 20, c.shape_score[0] = 2;
    c.shape_util[1] = 60, c.shape_score[1] = 10;
    c.shape_util[2] = 80, c.shape_score[2] = 0;
    ck_assert_int_eq(kubesim_shape_at(&c, 0), 20);    /* before the first point */
    ck_assert_int_eq(kubesim_shape_at(&c, 20), 20);
    ck_assert_int_eq(kubesim_shape_at(&c, 40), 60);   /* 20 + 80 x 20 / 40 */
    ck_assert_int_eq(kubesim_shape_at(&c, 70), 50);   /* 100 - 100 x 10 / 20 */
    ck_assert_int_eq(kubesim_shape_at(&c, 95), 0);    /* after the last */
}
END_TEST

START_TEST(balanced)
{
    int64_t req[2] = {1000, 500}, alloc[2] = {4000, 1000};
    ck_assert_int_eq(kubesim_balanced_score(req, alloc, 2), 87);   /* (1 - |.25-.5|/2) x 100 */
    int64_t same[2] = {2000, 500};
    ck_assert_int_eq(kubesim_balanced_score(same, alloc, 2), 100);
    int64_t over[2] = {8000, 0};
    ck_assert_int_eq(kubesim_balanced_score(over, alloc, 2), 50);  /* fraction capped at 1 */
    /* three resources: fractions .2 .4 .6, std sqrt(.08/3) = .1633 -> 83 */
    int64_t r3[3] = {2, 4, 6}, a3[3] = {10, 10, 10};
    ck_assert_int_eq(kubesim_balanced_score(r3, a3, 3), 83);
    int64_t a1[2] = {4000, 0};
    ck_assert_int_eq(kubesim_balanced_score(req, a1, 2), 100);     /* one resource: std 0 */
}
END_TEST

START_TEST(extender_scaling)
{
    /* score x weight x (MaxNodeScore 100 / MaxExtenderPriority 10) */
    ck_assert_int_eq(kubesim_extender_score(7, 5), 350);
    ck_assert_int_eq(kubesim_extender_score(10, 1), 100);
    ck_assert_int_eq(kubesim_extender_score(0, 20), 0);
    ck_assert_int_eq(kubesim_extender_score(1, 20), 200);
}
END_TEST

START_TEST(interest_and_ignored)
{
    schedcfg c;
    schedcfg_defaults(&c);
    const char *gpu[] = {"gpupack.io/gpu-mem", "cpu"};
    ck_assert(kubesim_interested(&c, NULL, 0));   /* no managedResources: every pod */
    ck_assert(kubesim_checks_resource(&c, "gpupack.io/gpu-mem"));
    c.nmanaged = 1;
    gp_strlcpy(c.managed[0].name, "gpupack.io/gpu-mem", SCHEDCFG_NAME_MAX);
    ck_assert(!kubesim_interested(&c, NULL, 0));  /* a CPU-only pod */
    ck_assert(kubesim_interested(&c, gpu, 2));
    ck_assert(!kubesim_interested(&c, gpu + 1, 1));
    ck_assert(kubesim_checks_resource(&c, "gpupack.io/gpu-mem"));   /* not ignoredByScheduler */
    c.managed[0].ignored_by_scheduler = true;
    ck_assert(!kubesim_checks_resource(&c, "gpupack.io/gpu-mem"));
    ck_assert(kubesim_checks_resource(&c, "gpupack.io/gpu-core"));
    c.nignored_groups = 1;
    gp_strlcpy(c.ignored_groups[0], "gpupack.io", SCHEDCFG_NAME_MAX);
    ck_assert(!kubesim_checks_resource(&c, "gpupack.io/gpu-core"));
    ck_assert(kubesim_checks_resource(&c, "gpupack.iox/gpu-core"));
    ck_assert(kubesim_checks_resource(&c, "nvidia.com/gpu"));
    c.nignored = 1;
    gp_strlcpy(c.ignored[0], "nvidia.com/gpu", SCHEDCFG_NAME_MAX);
    ck_assert(!kubesim_checks_resource(&c, "nvidia.com/gpu"));
}
END_TEST

/* ----------------------------------------------------------- schedcfg -- */

START_TEST(shipped_config)
{
    schedcfg c;
    gp_err err;
    ck_assert_msg(schedcfg_load("manifests/base/scheduler-config.yaml", &c, &err) == 0, "%s", err.msg);
    ck_assert(c.has_extender);
    ck_assert(c.ext_filter && c.ext_prioritize && c.ext_bind);
    /* the shipped deployment: every pod through gpupack, kube-scheduler's
     * adaptive node sample (measured better than 100 %), gpupack's resources
     * left to gpupack */
    ck_assert_int_eq(c.nmanaged, 0);
    ck_assert_int_eq(c.pct, 0);
    ck_assert(!kubesim_checks_resource(&c, "gpupack.io/gpu-mem"));
    ck_assert(!kubesim_checks_resource(&c, "gpupack.io/gpu-count"));
    ck_assert(!kubesim_checks_resource(&c, "gpupack.io/gpu-core"));
    ck_assert(!kubesim_checks_resource(&c, "aliyun.com/gpu-mem"));
    /* one extender point outweighs every varying plugin score (<= 200) */
    ck_assert_int_gt(kubesim_extender_score(1, c.ext_weight), 200);
}
END_TEST

static const char full_cfg[] =
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n"
    "percentageOfNodesToScore: 30\n"
    "profiles:\n"
    "- schedulerName: s\n"
    "  percentageOfNodesToScore: 70\n"
    "  plugins:\n"
    "    multiPoint:\n"
    "      disabled: [{name: NodeResourcesBalancedAllocation}]\n"
    "    score:\n"
    "      enabled: [{name: NodeResourcesFit, weight: 4}]\n"
    "  pluginConfig:\n"
    "  - name: NodeResourcesFit\n"
    "    args:\n"
    "      ignoredResources: [example.com/a]\n"
    "      scoringStrategy:\n"
    "        type: RequestedToCapacityRatio\n"
    "        resources: [{name: cpu, weight: 3}, {name: memory}]\n"
    "        requestedToCapacityRatio:\n"
    "          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]\n"
    "extenders:\n"
    "- urlPrefix: http://x\n"
    "  filterVerb: filter\n"
    "  weight: 3\n"
    "  managedResources: [{name: gpupack.io/gpu-mem, ignoredByScheduler: true}, {name: b}]\n";

START_TEST(full_config)
{
    schedcfg c;
    gp_err err;
    ck_assert_msg(schedcfg_parse(full_cfg, strlen(full_cfg), &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.pct, 70);   /* the profile's wins */
    ck_assert_int_eq(c.w_bal, 0);
    ck_assert_int_eq(c.w_fit, 4);
    ck_assert_int_eq(c.strategy, SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO);
    ck_assert_int_eq(c.nfit_res, 2);
    ck_assert_int_eq(c.fit_res[0].weight, 3);
    ck_assert_int_eq(c.fit_res[1].weight, 1);   /* absent -> 1 */
    ck_assert_int_eq(c.nshape, 2);
    ck_assert_int_eq(c.shape_score[1], 10);
    ck_assert(!kubesim_checks_resource(&c, "example.com/a"));
    ck_assert(c.ext_filter && !c.ext_prioritize && !c.ext_bind);
    ck_assert_int_eq(c.ext_weight, 3);
    ck_assert_int_eq(c.nmanaged, 2);
    ck_assert(c.managed[0].ignored_by_scheduler && !c.managed[1].ignored_by_scheduler);
}
END_TEST

START_TEST(defaults_without_profiles)
{
    static const char y[] = "apiVersion: kubescheduler.config.k8s.io/v1\n"
                            "kind: KubeSchedulerConfiguration\n";
    schedcfg c;
    gp_err err;
    ck_assert_int_eq(schedcfg_parse(y, strlen(y), &c, &err), 0);
    ck_assert_int_eq(c.pct, 0);
    ck_assert_int_eq(c.w_fit, 1);
    ck_assert_int_eq(c.w_bal, 1);
    ck_assert_int_eq(c.strategy, SCHEDCFG_LEAST_ALLOCATED);
    ck_assert(!c.has_extender);
}
END_TEST

static const struct {
    const char *yaml, *want;
} bad_cfgs[] = {
    {"apiVersion: v1\nkind: Pod\n", "apiVersion/kind"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "percentageOfNodesToScore: 101\n",
     "percentageOfNodesToScore"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
     "{type: Fancy}}}]}]\n",
     "Fancy"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
     "{type: RequestedToCapacityRatio}}}]}]\n",
     "shape"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "extenders: [{prioritizeVerb: p}]\n",
     "weight"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "extenders: [{managedResources: [{name: a, ignoredByScheduler: yes please}]}]\n",
     "ignoredByScheduler"},
    {"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
     "extenders: [{}, {}]\n",
     "one extender"},
    {"{unclosed", ""},
};

START_TEST(bad_config)
{
    int i = _i;
    schedcfg c;
    gp_err err;
    ck_assert_int_eq(schedcfg_parse(bad_cfgs[i].yaml, strlen(bad_cfgs[i].yaml), &c, &err), -1);
    ck_assert_msg(strstr(err.msg, bad_cfgs[i].want) != NULL, "%s", err.msg);
}
END_TEST

Suite *suite_kubesim(void);
Suite *suite_kubesim(void)
{
    Suite *s = suite_create("kubesim");
    TCase *tc = tcase_create("arithmetic");
    tcase_add_loop_test(tc, num_feasible, 0, (int)(sizeof feasible_cases / sizeof feasible_cases[0]));
    tcase_add_test(tc, per_resource_scores);
    tcase_add_test(tc, fit_strategies);
    tcase_add_test(tc, shape_points);
    tcase_add_test(tc, balanced);
    tcase_add_test(tc, extender_scaling);
    tcase_add_test(tc, interest_and_ignored);
    suite_add_tcase(s, tc);
    tc = tcase_create("schedcfg");
    tcase_add_test(tc, shipped_config);
    tcase_add_test(tc, full_config);
    tcase_add_test(tc, defaults_without_profiles);
    tcase_add_loop_test(tc, bad_config, 0, (int)(sizeof bad_cfgs / sizeof bad_cfgs[0]));
    suite_add_tcase(s, tc);
    return s;
}
