/* e2e_basic.c -- scenario 1: kube-scheduler with the shipped extender stanza binds
 * ≥ 200 pods of mixed shapes onto nodes of all four inventory sources; a pod that
 * fits nowhere gets a FailedScheduling event carrying gpupack's reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-basic"
#define NPODS 200

/* The cluster: 56 GPUs, every inventory source, one node without GPUs. */
static void make_nodes(e2e_cp *cp)
{
    char name[64];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "gp-a100-%d", i);
        e2e_node_create(cp, e2e_node_gpupack(name, 8, 81920, "A100-SXM4-80GB"));
    }
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "hami-v100-%d", i);
        e2e_node_create(cp, e2e_node_hami(name, 4, 32768, "NVIDIA-Tesla V100-PCIE-32GB"));
        snprintf(name, sizeof name, "gfd-t4-%d", i);
        e2e_node_create(cp, e2e_node_gfd(name, 4, 15360, "Tesla-T4"));
        snprintf(name, sizeof name, "aliyun-%d", i);
        e2e_node_create(cp, e2e_node_aliyun(name, 4, 64));
    }
    e2e_node_create(cp, e2e_node_plain("cpu-0"));
}

/* Pod i of the mix (shapes cycle by tens). The packing policy fills the busiest
 * nodes first, so every shape that could go anywhere is kept to the large A100s
 * except three small ones: the model-constrained pods must always find room on
 * the small GPUs (the T4s and V100s hold 260 of their 504 GiB at most). */
static json_t *shaped_pod(int i)
{
    char name[64];
    snprintf(name, sizeof name, "p%03d", i);
    json_t *p = e2e_pod(NS, name);
    const char *mem = "gpupack.io/gpu-mem", *core = "gpupack.io/gpu-core", *cnt = "gpupack.io/gpu-count";
    if (i % 20 == 19) {   /* a whole GPU (of the large kind: small GPUs are for the T4 pods) */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "A100");
        e2e_pod_ctr(p, "main", false, cnt, "1", NULL);
        return p;
    }
    switch (i % 10) {
    case 0:   /* a share: memory and compute */
        e2e_pod_ctr(p, "main", false, mem, "2048", core, "10", NULL);
        break;
    case 1:   /* memory only, on the large GPUs */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "A100");
        e2e_pod_ctr(p, "main", false, mem, "4096", NULL);
        break;
    case 2:   /* multi-GPU */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "A100");
        e2e_pod_ctr(p, "main", false, mem, "8192", cnt, "2", core, "20", NULL);
        break;
    case 3:   /* two GPU containers */
        e2e_pod_ctr(p, "a", false, mem, "1024", core, "5", NULL);
        e2e_pod_ctr(p, "b", false, mem, "3072", NULL);
        break;
    case 4:   /* an init container larger than the main one */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "A100");
        e2e_pod_ctr(p, "setup", true, mem, "6144", core, "30", NULL);
        e2e_pod_ctr(p, "main", false, mem, "2048", core, "10", NULL);
        break;
    case 5:   /* model constraint: T4 only */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "T4");
        e2e_pod_ctr(p, "main", false, mem, "1024", NULL);
        break;
    case 6:   /* model constraint: a list */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "V100|A10");
        e2e_pod_ctr(p, "main", false, mem, "4096", core, "10", NULL);
        break;
    case 7:   /* the aliyun gpushare profile (GiB), on the gpushare nodes */
        e2e_pod_select(p, "gpushare", "true");
        e2e_pod_ctr(p, "main", false, "aliyun.com/gpu-mem", "2", NULL);
        break;
    case 8:   /* a GPU container next to a CPU-only sidecar */
        e2e_pod_annotate(p, "gpupack.io/gpu-model", "A100");
        e2e_pod_ctr(p, "main", false, mem, "3072", core, "15", NULL);
        e2e_pod_ctr(p, "sidecar", false, NULL);
        break;
    default:  /* no GPU at all, through the same scheduler profile */
        e2e_pod_ctr(p, "main", false, NULL);
        break;
    }
    return p;
}

START_TEST(mixed_pods_all_sources)
{
    e2e_world *w = e2e_world_up(NULL);
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    make_nodes(cp);
    double t = gp_mono_s();
    for (int i = 0; i < NPODS; i++)
        e2e_pod_create(cp, shaped_pod(i));
    e2e_log("%d pods created in %.1f s", NPODS, gp_mono_s() - t);

    /* one pod that fits nowhere: larger than every GPU */
    json_t *big = e2e_pod(NS, "too-big");
    e2e_pod_ctr(big, "main", false, "gpupack.io/gpu-mem", "200000", NULL);
    e2e_pod_create(cp, big);

    int bound = e2e_wait_bound(cp, NS, NPODS, 90);
    e2e_log("%d of %d pods bound after %.1f s", bound, NPODS, gp_mono_s() - t);
    if (bound != NPODS)
        e2e_gp_log_tail(w->gp, 30);
    ck_assert_int_eq(bound, NPODS);

    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 10, &v);
    /* every GPU pod of the mix holds GPUs: all but the CPU-only ones (i % 10 == 9,
     * half of which are whole-GPU pods instead) */
    ck_assert_int_eq(v.gpu_pods_bound, NPODS - NPODS / 20);

    /* the inventory sources all served pods */
    static const char *const prefixes[] = {"gp-a100-", "hami-v100-", "gfd-t4-", "aliyun-"};
    json_t *pods = e2e_pods(cp, NS);
    for (size_t k = 0; k < GP_ARRAY_LEN(prefixes); k++) {
        int on = 0;
        size_t i;
        json_t *p;
        json_array_foreach(pods, i, p) {
            const char *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
            const json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");
            if (node && strncmp(node, prefixes[k], strlen(prefixes[k])) == 0 &&
                json_object_get(ann, "gpupack.io/assignment"))
                on++;
        }
        e2e_log("GPU pods on %s* nodes: %d", prefixes[k], on);
        ck_assert_msg(on > 0, "no GPU pod landed on a %s* node", prefixes[k]);
    }
    json_decref(pods);

    /* T4-only pods are on T4 nodes (the checker checks models; make sure some exist) */
    json_t *p5 = e2e_pod_get(cp, NS, "p005");
    ck_assert_ptr_nonnull(p5);
    const char *n5 = json_string_value(json_object_get(json_object_get(p5, "spec"), "nodeName"));
    ck_assert_msg(n5 && strncmp(n5, "gfd-t4-", 7) == 0, "T4 pod on %s", n5 ? n5 : "(none)");
    json_decref(p5);

    /* the aliyun profile wrote the gpushare device plugin's annotations */
    json_t *p7 = e2e_pod_get(cp, NS, "p007");
    const json_t *a7 = json_object_get(json_object_get(p7, "metadata"), "annotations");
    ck_assert_ptr_nonnull(json_object_get(a7, "ALIYUN_COM_GPU_MEM_IDX"));
    ck_assert_str_eq(json_string_value(json_object_get(a7, "ALIYUN_COM_GPU_MEM_POD")), "2");
    json_decref(p7);

    /* the pod that fits nowhere: pending, with gpupack's reasons in the event */
    char *msg = e2e_wait_pod_event(cp, NS, "too-big", "FailedScheduling", "needs 200000 MiB", 30);
    e2e_log("FailedScheduling: %s", msg ? msg : "(none)");
    ck_assert_msg(msg && strstr(msg, "needs 200000 MiB per GPU"), "event: %s", msg ? msg : "(none)");
    ck_assert_msg(strstr(msg, "node has no GPUs known to gpupack"), "event: %s", msg);
    free(msg);
    json_t *tb = e2e_pod_get(cp, NS, "too-big");
    ck_assert_ptr_null(json_object_get(json_object_get(tb, "spec"), "nodeName"));
    json_decref(tb);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(basic)
{
    Suite *s = suite_create("e2e basic");
    E2E_TEST(s, mixed_pods_all_sources, 300);
    return s;
}
