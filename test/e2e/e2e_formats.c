/* e2e_formats.c -- pods written for other GPU-sharing systems (Run:ai/KAI, HAMi, Volcano
 * vGPU, TKE gpu-manager) scheduled through kube-scheduler and gpupack on the real control
 * plane, as those systems define them: fractions resolved on the GPU each pod got
 * (heterogeneous nodes), the scheduler names those pods carry (a kube-scheduler profile of
 * that name), the annotations HAMi's and Volcano's device plugins read, refusals that name
 * the key and the value, reasons in the pod's own terms; the checker then rebuilds the
 * allocation from the API server alone and compares it with /inspect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* A profile named `ud` beside the shipped one, with the same plugins: pods carrying
 * that schedulerName (kai-scheduler, volcano) reach this kube-scheduler, whose
 * extenders (gpupack) apply to every profile. docs/migrating.md ships this edit. */
static void add_profile(json_t *cfg, void *ud)
{
    json_t *profiles = json_object_get(cfg, "profiles");
    json_t *p = json_deep_copy(json_array_get(profiles, 0));
    json_object_set_new(p, "schedulerName", json_string(ud));
    json_array_append_new(profiles, p);
}

static json_t *pod_for(const char *ns, const char *name, const char *scheduler)
{
    json_t *p = e2e_pod(ns, name);
    if (scheduler)
        json_object_set_new(json_object_get(p, "spec"), "schedulerName", json_string(scheduler));
    return p;
}

/* One GPU a container holds, from the bound pod's gpupack.io/assignment. */
typedef struct held {
    char ctr[64];
    bool init;
    int index;
    long mem;
    double core;
    char uuid[96];
} held;

/* Every GPU of every container of ns/name (at most max); the pod's node into node. */
static int holdings(e2e_cp *cp, const char *ns, const char *name, held *out, int max,
                    char node[64], json_t **annotations)
{
    json_t *pod = e2e_pod_get(cp, ns, name);
    ck_assert_msg(pod != NULL, "pod %s/%s is gone", ns, name);
    const char *n = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    snprintf(node, 64, "%s", n ? n : "");
    json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    const char *text = json_string_value(json_object_get(ann, "gpupack.io/assignment"));
    ck_assert_msg(text != NULL, "pod %s/%s has no gpupack.io/assignment", ns, name);
    json_t *a = json_loads(text, 0, NULL);
    int k = 0;
    size_t i, j;
    json_t *c, *g;
    json_array_foreach(json_object_get(a, "containers"), i, c) {
        json_array_foreach(json_object_get(c, "gpus"), j, g) {
            if (k == max)
                break;
            held *h = &out[k++];
            snprintf(h->ctr, sizeof h->ctr, "%s", json_string_value(json_object_get(c, "name")));
            h->init = json_is_true(json_object_get(c, "init"));
            h->index = (int)json_integer_value(json_object_get(g, "index"));
            h->mem = (long)json_integer_value(json_object_get(g, "memMiB"));
            h->core = json_number_value(json_object_get(g, "core"));
            const char *u = json_string_value(json_object_get(g, "uuid"));
            snprintf(h->uuid, sizeof h->uuid, "%s", u ? u : "");
        }
    }
    json_decref(a);
    if (annotations)
        *annotations = json_incref(ann);
    json_decref(pod);
    return k;
}

/* The pod holds `want` GPUs, each with mem MiB and core percent, on node. */
static void expect_held(e2e_cp *cp, const char *ns, const char *name, const char *node, int want,
                        long mem, double core)
{
    held h[16];
    char on[64];
    int n = holdings(cp, ns, name, h, 16, on, NULL);
    e2e_log("%s on %s: %d GPU(s), first %ld MiB, %.0f %% compute", name, on, n, n ? h[0].mem : 0,
            n ? h[0].core : 0);
    ck_assert_msg(n == want, "%s holds %d GPUs, want %d", name, n, want);
    if (node)
        ck_assert_msg(strcmp(on, node) == 0, "%s is on %s, want %s", name, on, node);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(h[i].mem == mem, "%s holds %ld MiB of GPU %d, want %ld", name, h[i].mem,
                      h[i].index, mem);
        ck_assert_msg(h[i].core == core, "%s holds %.1f %% of GPU %d, want %.1f", name, h[i].core,
                      h[i].index, core);
    }
}

static void expect_refused(e2e_cp *cp, const char *ns, const char *name, const char *needle)
{
    char *msg = e2e_wait_pod_event(cp, ns, name, "FailedScheduling", needle, 60);
    e2e_log("%s: %s", name, msg ? msg : "(no event)");
    ck_assert_msg(msg != NULL, "%s: no FailedScheduling event saying \"%s\"", name, needle);
    free(msg);
    json_t *p = e2e_pod_get(cp, ns, name);
    ck_assert_ptr_null(json_object_get(json_object_get(p, "spec"), "nodeName"));
    json_decref(p);
}

/* ----------------------------------------------------------------- KAI -- */

#define KNS "e2e-formats-kai"

static json_t *kai_pod(const char *name, const char *node)
{
    json_t *p = pod_for(KNS, name, "kai-scheduler");
    json_object_set_new(json_object_get(p, "metadata"), "labels",
                        json_pack("{s:s}", "kai.scheduler/queue", "default-queue"));
    if (node)
        e2e_pod_select(p, "kubernetes.io/hostname", node);
    return p;
}

START_TEST(kai_fractions)
{
    e2e_world_opts o = {.edit_sched = add_profile, .ud = "kai-scheduler"};
    e2e_world *w = e2e_world_up(&o);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, KNS);
    e2e_node_create(cp, e2e_node_gpupack("kai-a100", 2, 81920, "A100-SXM4-80GB"));
    e2e_node_create(cp, e2e_node_gpupack("kai-t4", 1, 15360, "T4"));

    /* KAI docs/gpu-sharing/gpu-sharing.yaml on both kinds of GPU */
    static const char *const halves[][2] = {{"half-a100", "kai-a100"}, {"half-t4", "kai-t4"},
                                            {"half-t4-b", "kai-t4"}};
    for (size_t i = 0; i < GP_ARRAY_LEN(halves); i++) {
        json_t *p = kai_pod(halves[i][0], halves[i][1]);
        e2e_pod_annotate(p, "gpu-fraction", "0.5");
        e2e_pod_ctr(p, "gpu-workload", false, NULL);
        e2e_pod_create(cp, p);
    }
    json_t *p = kai_pod("memory", "kai-a100");   /* gpu-memory.yaml */
    e2e_pod_annotate(p, "gpu-memory", "2000");
    e2e_pod_ctr(p, "gpu-workload", false, NULL);
    e2e_pod_create(cp, p);
    p = kai_pod("multi", "kai-a100");            /* gpu-fraction-num-devices */
    e2e_pod_annotate(p, "gpu-fraction", "0.25");
    e2e_pod_annotate(p, "gpu-fraction-num-devices", "2");
    e2e_pod_ctr(p, "gpu-workload", false, NULL);
    e2e_pod_create(cp, p);
    p = kai_pod("init", "kai-a100");             /* gpu-sharing-init-container.yaml */
    e2e_pod_annotate(p, "gpu-fraction", "0.25");
    e2e_pod_annotate(p, "gpu-fraction-container-name", "gpu-init");
    e2e_pod_ctr(p, "gpu-init", true, NULL);
    e2e_pod_ctr(p, "main-app", false, NULL);
    e2e_pod_create(cp, p);
    int bound = e2e_wait_bound(cp, KNS, 6, 90);
    ck_assert_int_eq(bound, 6);

    expect_held(cp, KNS, "half-a100", "kai-a100", 1, 40960, 0);   /* 0.5 of 80 GiB */
    expect_held(cp, KNS, "half-t4", "kai-t4", 1, 7680, 0);        /* 0.5 of 15 GiB */
    expect_held(cp, KNS, "half-t4-b", "kai-t4", 1, 7680, 0);
    expect_held(cp, KNS, "memory", "kai-a100", 1, 2000, 0);
    expect_held(cp, KNS, "multi", "kai-a100", 2, 20480, 0);
    held h[4];
    char node[64];
    ck_assert_int_eq(holdings(cp, KNS, "init", h, 4, node, NULL), 1);
    ck_assert_str_eq(h[0].ctr, "gpu-init");
    ck_assert(h[0].init);
    ck_assert_int_eq(h[0].mem, 20480);

    /* the T4 is full: a third half is refused in the pod's own terms */
    p = kai_pod("half-t4-c", "kai-t4");
    e2e_pod_annotate(p, "gpu-fraction", "0.5");
    e2e_pod_ctr(p, "gpu-workload", false, NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, KNS, "half-t4-c",
                   "gpu-fraction 0.5 of a T4 (7680 MiB) does not fit: largest free 0 MiB");
    /* a fraction outside (0, 1] */
    p = kai_pod("too-much", NULL);
    e2e_pod_annotate(p, "gpu-fraction", "1.5");
    e2e_pod_ctr(p, "gpu-workload", false, NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, KNS, "too-much", "annotation gpu-fraction: 1.5 is outside (0, 1]");

    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    ck_assert_int_eq(v.gpu_pods_bound, 6);
    e2e_world_down(w);
}
END_TEST

/* ---------------------------------------------------------------- HAMi -- */

#define HNS "e2e-formats-hami"

/* A node registered by HAMi's device plugin, which also advertises nvidia.com/gpu
 * (deviceSplitCount 10 per GPU): the cluster where HAMi's plugin is kept. */
static json_t *hami_node(const char *name, int gpus)
{
    json_t *n = e2e_node_hami(name, gpus, 32768, "NVIDIA-Tesla V100-PCIE-32GB");
    char split[16];
    snprintf(split, sizeof split, "%d", gpus * 10);
    json_object_set_new(json_object_get(json_object_get(n, "status"), "capacity"), "nvidia.com/gpu",
                        json_string(split));
    return n;
}

START_TEST(hami_resources)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, HNS);
    e2e_node_create(cp, hami_node("hami-a", 2));
    e2e_node_create(cp, hami_node("hami-b", 1));

    json_t *p = pod_for(HNS, "default-use", NULL);   /* examples/nvidia/default_use.yaml */
    e2e_pod_select(p, "kubernetes.io/hostname", "hami-a");
    e2e_pod_ctr(p, "ubuntu-container", false, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000",
                "nvidia.com/gpucores", "30", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(HNS, "memory-fraction", NULL);     /* use_memory_fraction.yaml, no cores */
    e2e_pod_select(p, "kubernetes.io/hostname", "hami-a");
    e2e_pod_ctr(p, "ubuntu-container", false, "nvidia.com/gpu", "2",
                "nvidia.com/gpumem-percentage", "50", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(HNS, "exclusive", NULL);           /* use_exclusive_card.yaml, one card */
    e2e_pod_select(p, "kubernetes.io/hostname", "hami-b");
    e2e_pod_ctr(p, "ubuntu-container", false, "nvidia.com/gpu", "1",
                "nvidia.com/gpumem-percentage", "100", "nvidia.com/gpucores", "100", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(HNS, "whole-by-plugin", NULL);     /* use_as_normal.yaml: the device plugin's */
    e2e_pod_ctr(p, "ubuntu-container", false, "nvidia.com/gpu", "1", NULL);
    e2e_pod_create(cp, p);
    ck_assert_int_eq(e2e_wait_bound(cp, HNS, 4, 90), 4);

    expect_held(cp, HNS, "default-use", "hami-a", 1, 3000, 30);
    expect_held(cp, HNS, "memory-fraction", "hami-a", 2, 16384, 0);
    expect_held(cp, HNS, "exclusive", "hami-b", 1, 32768, 100);
    json_t *plain = e2e_pod_get(cp, HNS, "whole-by-plugin");
    ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(plain, "metadata"),
                                                       "annotations"), "gpupack.io/assignment"));
    json_decref(plain);
    e2e_log("whole-by-plugin bound without gpupack's GPUs: nvidia.com/gpu alone is the plugin's");

    /* what HAMi's device plugin reads (pkg/device-plugin/.../plugin/util.go) */
    held h[2];
    char node[64];
    json_t *ann;
    ck_assert_int_eq(holdings(cp, HNS, "default-use", h, 2, node, &ann), 1);
    char want[160];
    snprintf(want, sizeof want, "%s,NVIDIA,3000,30:;", h[0].uuid);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-to-allocate")),
                     want);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-allocated")), want);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-node")), "hami-a");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/bind-phase")), "allocating");
    ck_assert_ptr_nonnull(json_object_get(ann, "hami.io/bind-time"));
    json_decref(ann);

    /* the exclusive card takes no other pod; a GPU type no node has is refused */
    p = pod_for(HNS, "joins-exclusive", NULL);
    e2e_pod_select(p, "kubernetes.io/hostname", "hami-b");
    e2e_pod_ctr(p, "c", false, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "100", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, HNS, "joins-exclusive", "largest free 0 MiB");
    p = pod_for(HNS, "wrong-type", NULL);
    e2e_pod_annotate(p, "nvidia.com/use-gputype", "A100");
    e2e_pod_ctr(p, "c", false, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "100", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, HNS, "wrong-type", "no healthy GPU of a type nvidia.com/use-gputype \"A100\" allows (node has");
    p = pod_for(HNS, "bad-percentage", NULL);
    e2e_pod_ctr(p, "c", false, "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, HNS, "bad-percentage", "nvidia.com/gpumem-percentage is 150");

    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    ck_assert_int_eq(v.gpu_pods_bound, 3);
    e2e_world_down(w);
}
END_TEST

/* ------------------------------------------------------------- Volcano -- */

#define VNS "e2e-formats-volcano"

START_TEST(volcano_vgpu)
{
    e2e_world_opts o = {.edit_sched = add_profile, .ud = "volcano"};
    e2e_world *w = e2e_world_up(&o);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, VNS);
    e2e_node_create(cp, e2e_node_gpupack("vol-v100", 2, 32768, "V100-SXM2-32GB"));

    /* docs/user-guide/how_to_use_volcano_vgpu.md, "HAMI-core Usage" */
    json_t *p = pod_for(VNS, "hami-pod", "volcano");
    e2e_pod_annotate(p, "volcano.sh/vgpu-mode", "hami-core");
    e2e_pod_ctr(p, "cuda-container", false, "volcano.sh/vgpu-number", "1",
                "volcano.sh/vgpu-cores", "50", "volcano.sh/vgpu-memory", "3000", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(VNS, "percentage", "volcano");
    e2e_pod_ctr(p, "c", false, "volcano.sh/vgpu-number", "2",
                "volcano.sh/vgpu-memory-percentage", "25", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(VNS, "sidecar-first", "volcano");
    e2e_pod_ctr(p, "log", false, NULL);
    e2e_pod_ctr(p, "c", false, "volcano.sh/vgpu-memory", "1024", NULL);
    e2e_pod_create(cp, p);
    ck_assert_int_eq(e2e_wait_bound(cp, VNS, 3, 90), 3);

    expect_held(cp, VNS, "hami-pod", "vol-v100", 1, 3000, 50);
    expect_held(cp, VNS, "percentage", "vol-v100", 2, 8192, 0);
    expect_held(cp, VNS, "sidecar-first", "vol-v100", 1, 1024, 0);

    /* what volcano-vgpu-device-plugin reads (pkg/util/util.go: entry i is spec.containers[i]) */
    held h[2];
    char node[64], want[160];
    json_t *ann;
    ck_assert_int_eq(holdings(cp, VNS, "hami-pod", h, 2, node, &ann), 1);
    snprintf(want, sizeof want, "%s,NVIDIA,3000,50:", h[0].uuid);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/vgpu-ids-new")), want);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/devices-to-allocate")), want);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/vgpu-node")), "vol-v100");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/bind-phase")), "allocating");
    json_decref(ann);
    ck_assert_int_eq(holdings(cp, VNS, "sidecar-first", h, 2, node, &ann), 1);
    snprintf(want, sizeof want, ";%s,NVIDIA,1024,0:", h[0].uuid);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/vgpu-ids-new")), want);
    json_decref(ann);

    p = pod_for(VNS, "zero-percent", "volcano");
    e2e_pod_ctr(p, "c", false, "volcano.sh/vgpu-number", "1",
                "volcano.sh/vgpu-memory-percentage", "0", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, VNS, "zero-percent", "volcano.sh/vgpu-memory-percentage is 0");

    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    ck_assert_int_eq(v.gpu_pods_bound, 3);
    e2e_world_down(w);
}
END_TEST

/* ----------------------------------------------------------------- TKE -- */

#define TNS "e2e-formats-tke"

START_TEST(tke_vcuda)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, TNS);
    e2e_node_create(cp, e2e_node_gfd("tke-t4", 2, 15360, "Tesla-T4"));

    /* gpu-manager README.md, "Pod template example" */
    json_t *p = pod_for(TNS, "vcuda", NULL);
    e2e_pod_annotate(p, "tencent.com/vcuda-core-limit", "50");
    e2e_pod_ctr(p, "nvidia", false, "tencent.com/vcuda-core", "50", "tencent.com/vcuda-memory",
                "30", NULL);
    e2e_pod_create(cp, p);
    p = pod_for(TNS, "one-card", NULL);
    e2e_pod_ctr(p, "nvidia", false, "tencent.com/vcuda-core", "100", NULL);
    e2e_pod_create(cp, p);
    ck_assert_int_eq(e2e_wait_bound(cp, TNS, 2, 90), 2);
    expect_held(cp, TNS, "vcuda", "tke-t4", 1, 7680, 50);       /* 30 x 256 MiB */
    expect_held(cp, TNS, "one-card", "tke-t4", 1, 15360, 100);   /* a whole T4 */

    p = pod_for(TNS, "card-and-a-half", NULL);
    e2e_pod_ctr(p, "nvidia", false, "tencent.com/vcuda-core", "150", "tencent.com/vcuda-memory",
                "10", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, TNS, "card-and-a-half", "tencent.com/vcuda-core is 150; above 100 it must "
                                               "be a multiple of 100");
    p = pod_for(TNS, "too-big", NULL);
    e2e_pod_ctr(p, "nvidia", false, "tencent.com/vcuda-core", "10", "tencent.com/vcuda-memory",
                "40", NULL);
    e2e_pod_create(cp, p);
    expect_refused(cp, TNS, "too-big", "tencent.com/vcuda-memory 40 (10240 MiB) does not fit");

    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    ck_assert_int_eq(v.gpu_pods_bound, 2);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(formats)
{
    Suite *s = suite_create("e2e formats");
    E2E_TEST(s, kai_fractions, 240);
    E2E_TEST(s, hami_resources, 240);
    E2E_TEST(s, volcano_vgpu, 240);
    E2E_TEST(s, tke_vcuda, 240);
    return s;
}
