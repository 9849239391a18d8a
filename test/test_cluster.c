/* test_cluster.c -- the store: assume / forget / observe / resync / expire, and races. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/cluster.h"
#include "testutil.h"

static gp_cluster *cluster_with(int nodes, int gpus, int64_t mem)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, gpus, mem, "A100");
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        cluster_upsert_node(c, name, &inv);
    }
    return c;
}

static int64_t node_mem_used(gp_cluster *c, const char *name)
{
    int64_t used = 0;
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, name);
    for (int i = 0; n && i < n->ngpus; i++)
        used += n->gpus[i].mem_used;
    cluster_unlock(c);
    return used;
}

START_TEST(assume_forget_and_idempotence)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    gp_pod_req r;
    tu_req(&r, "u1", 1, 4096, 300);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a, again;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "default", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(node_mem_used(c, "n0"), 4096);
    /* same pod, same node: the same answer, nothing added */
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "default", GP_POD_ASSUMED, &again, &err), 0);
    ck_assert_int_eq(again.ctrs[0].gpus[0].index, a.ctrs[0].gpus[0].index);
    ck_assert_int_eq(node_mem_used(c, "n0"), 4096);
    /* another node for the same pod is refused */
    ck_assert_int_eq(cluster_place_and_assume(c, "n9", &r, &o, 0, "default", GP_POD_ASSUMED, &again, &err), -1);
    ck_assert_msg(strstr(err.msg, "already holds GPUs on node n0"), "%s", err.msg);
    cluster_forget(c, "u1");
    ck_assert_int_eq(node_mem_used(c, "n0"), 0);
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "u1", &a, &st), -1);
    /* unknown node */
    ck_assert_int_eq(cluster_place_and_assume(c, "nope", &r, &o, 0, "default", GP_POD_ASSUMED, &a, &err), -1);
    ck_assert_msg(strstr(err.msg, "not known"), "%s", err.msg);
    cluster_free(c);
}
END_TEST

START_TEST(forget_spares_a_completed_bind)
{
    gp_cluster *c = cluster_with(1, 1, 16384);
    gp_pod_req r;
    tu_req(&r, "u1", 1, 4096, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    cluster_bind_outcome(c, "u1", GP_BIND_BOUND);
    cluster_forget(c, "u1");   /* a failed retry must not undo the first bind */
    ck_assert_int_eq(node_mem_used(c, "n0"), 4096);
    cluster_free(c);
}
END_TEST

START_TEST(observe_confirms_and_releases)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    gp_pod_req r;
    tu_req(&r, "u1", 1, 4096, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    /* watch: annotated but not bound yet -> stays assumed */
    gp_pod_obs obs = {.uid = "u1", .ns = "default", .name = "pod-u1", .node_name = "", .assign = &a};
    cluster_pod_observed(c, &obs);
    gp_pod_state st;
    gp_assignment got;
    ck_assert_int_eq(cluster_pod_get(c, "u1", &got, &st), 0);
    ck_assert_int_eq(st, GP_POD_ASSUMED);
    /* bound: confirmed, counted once */
    obs.node_name = "n0";
    cluster_pod_observed(c, &obs);
    ck_assert_int_eq(cluster_pod_get(c, "u1", &got, &st), 0);
    ck_assert_int_eq(st, GP_POD_BOUND);
    ck_assert_int_eq(node_mem_used(c, "n0"), 4096);
    /* the annotations are the truth: another GPU and size */
    gp_assignment other = a;
    other.ctrs[0].gpus[0].index = a.ctrs[0].gpus[0].index == 0 ? 1 : 0;
    other.ctrs[0].gpus[0].mem_mib = 2048;
    obs.assign = &other;
    cluster_pod_observed(c, &obs);
    ck_assert_int_eq(node_mem_used(c, "n0"), 2048);
    /* terminal releases */
    obs.terminal = true;
    cluster_pod_observed(c, &obs);
    ck_assert_int_eq(node_mem_used(c, "n0"), 0);
    ck_assert_int_eq(cluster_pod_get(c, "u1", &got, &st), -1);
    cluster_free(c);
}
END_TEST

static void host_used(gp_cluster *c, const char *name, int64_t *cpu, int64_t *mem)
{
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, name);
    *cpu = n ? n->cpu_used_milli : -1;
    *mem = n ? n->host_mem_used_mib : -1;
    cluster_unlock(c);
}

/* Every pod's CPU and memory count on its node (GPU pods and pods without
 * GPUs alike), so strategies that weigh host resources see them. */
START_TEST(host_resources_of_every_pod)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    inv.cpu_alloc_milli = 8000;
    inv.mem_alloc_mib = 32768;
    cluster_upsert_node(c, "n0", &inv);
    int64_t cpu, mem;
    cluster_rdlock(c);
    ck_assert_int_eq(cluster_rd_node(c, "n0")->cpu_alloc_milli, 8000);
    ck_assert_int_eq(cluster_rd_node(c, "n0")->host_mem_alloc_mib, 32768);
    cluster_unlock(c);
    /* a pod bound by someone else, no gpupack annotations */
    gp_pod_obs obs = {.uid = "h1", .ns = "d", .name = "h1", .node_name = "n0", .cpu_milli = 2000,
                      .mem_mib = 1024};
    cluster_pod_observed(c, &obs);
    cluster_pod_observed(c, &obs);   /* seen again: counted once */
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 2000);
    ck_assert_int_eq(mem, 1024);
    gp_cluster_stats s;
    cluster_stats(c, &s);
    ck_assert_int_eq(s.pods_bound, 0);   /* not a GPU pod */
    /* its requests change (resize): followed */
    obs.cpu_milli = 3000;
    cluster_pod_observed(c, &obs);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 3000);
    /* a pod without GPUs placed by bind: assumed, kept while pending, then bound */
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    gp_strlcpy(r.uid, "h2", sizeof r.uid);
    gp_strlcpy(r.ns, "d", sizeof r.ns);
    gp_strlcpy(r.name, "h2", sizeof r.name);
    r.cpu_milli = 500;
    r.host_mem_mib = 256;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(a.nctrs, 0);
    gp_pod_obs pend = {.uid = "h2", .ns = "d", .name = "h2", .node_name = "", .cpu_milli = 500,
                       .mem_mib = 256};
    cluster_pod_observed(c, &pend);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 3500);
    pend.node_name = "n0";
    cluster_pod_observed(c, &pend);
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "h2", &a, &st), 0);
    ck_assert_int_eq(st, GP_POD_BOUND);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 3500);
    ck_assert_int_eq(mem, 1280);
    /* a GPU pod's host requests count too */
    gp_pod_req g;
    tu_req(&g, "g1", 1, 4096, 0);
    g.cpu_milli = 1000;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &g, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 4500);
    /* a new allocatable keeps what is used */
    inv.cpu_alloc_milli = 16000;
    cluster_upsert_node(c, "n0", &inv);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 4500);
    /* terminal pods release */
    obs.terminal = true;
    cluster_pod_observed(c, &obs);
    pend.terminal = true;
    cluster_pod_observed(c, &pend);
    host_used(c, "n0", &cpu, &mem);
    ck_assert_int_eq(cpu, 1000);
    ck_assert_int_eq(mem, 0);
    cluster_free(c);
}
END_TEST

/* Reservations lapse on their own TTL; bound binds and plain assumptions
 * follow the assume TTL. No clock games: TTL 0 has lapsed by the sweep. */
START_TEST(reservations_lapse)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req r1, r2, r3;
    tu_req(&r1, "r1", 1, 4096, 0);
    tu_req(&r2, "r2", 1, 4096, 0);
    tu_req(&r3, "r3", 1, 4096, 0);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_reserve(c, "n0", &r1, &o, 0, "p", 0, &a, &err), 0);
    ck_assert_int_eq(cluster_reserve(c, "n0", &r2, &o, 0, "p", 1e6, &a, &err), 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r3, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(node_mem_used(c, "n0"), 3 * 4096);
    /* reserving again replaces, never adds */
    ck_assert_int_eq(cluster_reserve(c, "n0", &r2, &o, 0, "p", 1e6, &a, &err), 0);
    ck_assert_int_eq(node_mem_used(c, "n0"), 3 * 4096);
    /* a pod being bound is not reserved over */
    ck_assert_int_eq(cluster_reserve(c, "n0", &r3, &o, 0, "p", 1e6, &a, &err), -1);
    ck_assert_int_eq(cluster_expire_assumed(c, 1e6), 1);   /* r1 only */
    ck_assert_int_eq(node_mem_used(c, "n0"), 2 * 4096);
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "r1", &a, &st), -1);
    ck_assert_int_eq(cluster_pod_get(c, "r2", &a, &st), 0);
    /* the bind takes r2 over: from now on it follows the assume TTL */
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r2, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(node_mem_used(c, "n0"), 2 * 4096);
    ck_assert_int_eq(cluster_expire_assumed(c, 1e6), 0);
    ck_assert_int_eq(cluster_expire_assumed(c, -1), 2);     /* r2, r3 past a negative TTL */
    ck_assert_int_eq(node_mem_used(c, "n0"), 0);
    cluster_free(c);
}
END_TEST

START_TEST(pods_before_their_node_and_inventory_changes)
{
    gp_cluster *c = cluster_new();
    gp_assignment a = {.nctrs = 1};
    gp_strlcpy(a.node, "late", sizeof a.node);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){3, 1000, 100};
    gp_pod_obs obs = {.uid = "u", .ns = "ns", .name = "p", .node_name = "late", .assign = &a};
    cluster_pod_observed(c, &obs);
    gp_inventory inv;
    tu_inventory(&inv, 2, 16384, "A100");
    cluster_upsert_node(c, "late", &inv);
    ck_assert_int_eq(node_mem_used(c, "late"), 0);      /* GPU 3 does not exist yet */
    tu_inventory(&inv, 4, 16384, "A100");
    cluster_upsert_node(c, "late", &inv);
    ck_assert_int_eq(node_mem_used(c, "late"), 1000);   /* now it does */
    cluster_upsert_node(c, "late", &inv);               /* heartbeat: unchanged */
    ck_assert_int_eq(node_mem_used(c, "late"), 1000);
    cluster_free(c);
}
END_TEST

START_TEST(resync_removes_unseen)
{
    gp_cluster *c = cluster_with(3, 1, 16384);
    gp_pod_req r;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a1, a2;
    gp_err err;
    tu_req(&r, "bound", 1, 1000, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_BOUND, &a1, &err), 0);
    tu_req(&r, "assumed", 1, 1000, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_ASSUMED, &a2, &err), 0);
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    cluster_nodes_resync_begin(c);
    cluster_upsert_node(c, "n0", &inv);
    cluster_upsert_node(c, "n2", &inv);
    cluster_nodes_resync_end(c);
    cluster_rdlock(c);
    ck_assert_uint_eq(cluster_rd_node_count(c), 2);
    ck_assert_ptr_null(cluster_rd_node(c, "n1"));
    cluster_unlock(c);
    /* a pod relist that does not mention the bound pod releases it; the
     * assumed one waits for its TTL */
    cluster_pods_resync_begin(c);
    cluster_pods_resync_end(c);
    gp_pod_state st;
    gp_assignment got;
    ck_assert_int_eq(cluster_pod_get(c, "bound", &got, &st), -1);
    ck_assert_int_eq(cluster_pod_get(c, "assumed", &got, &st), 0);
    ck_assert_int_eq(cluster_expire_assumed(c, 3600), 0);
    ck_assert_int_eq(cluster_expire_assumed(c, -1), 1);
    ck_assert_int_eq(node_mem_used(c, "n0"), 0);
    cluster_free(c);
}
END_TEST

START_TEST(ns_gpus_and_inspect)
{
    gp_cluster *c = cluster_with(1, 4, 16384);
    gp_pod_req r;
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("spread");
    gp_assignment a;
    gp_err err;
    tu_req(&r, "a", 2, 1000, 0);
    gp_strlcpy(r.ns, "team", sizeof r.ns);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_BOUND, &a, &err), 0);
    tu_req(&r, "b", 1, 1000, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_BOUND, &a, &err), 0);
    cluster_rdlock(c);
    ck_assert_int_eq(cluster_rd_ns_gpus(c, "n0", "team"), 2);
    ck_assert_int_eq(cluster_rd_ns_gpus(c, "n0", "default"), 1);
    ck_assert_int_eq(cluster_rd_ns_gpus(c, "n0", "other"), 0);
    cluster_unlock(c);
    json_t *j = cluster_inspect(c, NULL);
    json_t *gpus = json_object_get(json_array_get(json_object_get(j, "nodes"), 0), "gpus");
    ck_assert_uint_eq(json_array_size(gpus), 4);
    int pods = 0;
    for (size_t i = 0; i < 4; i++)
        pods += (int)json_array_size(json_object_get(json_array_get(gpus, i), "pods"));
    ck_assert_int_eq(pods, 3);   /* pod a on two GPUs, pod b on one */
    json_decref(j);
    ck_assert_ptr_null(cluster_inspect(c, "missing"));
    cluster_free(c);
}
END_TEST

static int64_t gpu_used(gp_cluster *c, const char *node, int index)
{
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, node);
    int pos = n ? gp_node_gpu_pos(n, index) : -1;
    int64_t used = pos >= 0 ? n->gpus[pos].mem_used : -1;
    cluster_unlock(c);
    return used;
}

/* The store keeps an assignment in a compact form (the node's name apart,
 * only the grants used, UUIDs at their length): what comes out is what went
 * in, for a pod of several containers on a node whose name has the longest
 * length a name may have, and its UUIDs still place its holds. */
START_TEST(stored_assignment_round_trips)
{
    char node[GP_NAME_MAX];
    memset(node, 'n', GP_NAME_MAX - 1);
    node[GP_NAME_MAX - 1] = '\0';
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 4, 16384, "A100");
    for (int i = 0; i < 4; i++)   /* indices and UUIDs in opposite orders */
        snprintf(inv.gpus[i].uuid, sizeof inv.gpus[i].uuid, "GPU-%d-%0*d", 3 - i, 60, i);
    cluster_upsert_node(c, node, &inv);

    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, node, sizeof a.node);
    a.nctrs = 3;
    gp_strlcpy(a.ctrs[0].name, "init", sizeof a.ctrs[0].name);
    a.ctrs[0].init = true;
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){3, 8192, 500};
    gp_strlcpy(a.ctrs[1].name, "main", sizeof a.ctrs[1].name);
    a.ctrs[1].ngpus = 2;
    a.ctrs[1].gpus[0] = (gp_gpu_grant){0, 4096, 250};
    a.ctrs[1].gpus[1] = (gp_gpu_grant){1, 4096, 250};
    gp_strlcpy(a.ctrs[2].name, "side", sizeof a.ctrs[2].name);
    a.ctrs[2].ngpus = 1;
    a.ctrs[2].gpus[0] = (gp_gpu_grant){0, 1024, 0};
    gp_gpu_ref refs[3];
    int idx[3] = {0, 1, 3};
    for (int i = 0; i < 3; i++) {
        refs[i].index = idx[i];
        gp_strlcpy(refs[i].uuid, inv.gpus[idx[i]].uuid, sizeof refs[i].uuid);
    }
    gp_pod_obs obs = {.uid = "multi", .ns = "default", .name = "multi", .node_name = node,
                      .assign = &a, .refs = refs, .nrefs = 3};
    cluster_pod_observed(c, &obs);

    gp_assignment got;
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "multi", &got, &st), 0);
    ck_assert_int_eq(st, GP_POD_BOUND);
    ck_assert_str_eq(got.node, node);
    ck_assert(gp_assignment_equal(&got, &a));
    ck_assert_int_eq(memcmp(&got, &a, sizeof a), 0);   /* unused grants zeroed on both sides */
    ck_assert_int_eq(cluster_bind_claim(c, "multi", &a), 0);
    gp_assignment other = a;
    other.ctrs[2].gpus[0].mem_mib = 2048;
    ck_assert_int_eq(cluster_bind_claim(c, "multi", &other), -1);
    ck_assert_int_eq(gpu_used(c, node, 0), 5120);   /* main + side add up */
    ck_assert_int_eq(gpu_used(c, node, 1), 4096);
    ck_assert_int_eq(gpu_used(c, node, 3), 8192);   /* the init container alone */

    /* the GPUs re-indexed: the holds follow the full-length UUIDs */
    for (int i = 0; i < 4; i++)
        inv.gpus[i].index = 3 - i;
    cluster_upsert_node(c, node, &inv);
    ck_assert_int_eq(gpu_used(c, node, 3), 5120);
    ck_assert_int_eq(gpu_used(c, node, 2), 4096);
    ck_assert_int_eq(gpu_used(c, node, 0), 8192);
    ck_assert_int_eq(gpu_used(c, node, 1), 0);
    gp_cluster_stats cs;
    cluster_stats(c, &cs);
    ck_assert_uint_eq(cs.pods_gpu_missing, 0);
    cluster_free(c);
}
END_TEST

/* A node's GPUs are re-indexed (reboot) and one is replaced: holds follow
 * the UUID the assignment recorded, and a hold whose GPU is gone is
 * reported, not laid on whatever GPU now has that index. */
START_TEST(holds_follow_gpu_uuids)
{
    gp_cluster *c = cluster_with(1, 2, 16384);   /* n0: index 0 = GPU-0, 1 = GPU-1 */
    gp_pod_req r;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    tu_req(&r, "bound", 1, 4096, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    int idx = a.ctrs[0].gpus[0].index;
    char uuid[32];
    snprintf(uuid, sizeof uuid, "GPU-%d", idx);
    /* the same pod seen bound through the watch, its annotation naming the UUID */
    gp_gpu_ref ref = {idx, ""};
    gp_strlcpy(ref.uuid, uuid, sizeof ref.uuid);
    gp_pod_obs obs = {.uid = "bound", .ns = "default", .name = "bound", .node_name = "n0",
                      .assign = &a, .refs = &ref, .nrefs = 1};
    cluster_pod_observed(c, &obs);
    ck_assert_int_eq(gpu_used(c, "n0", idx), 4096);

    /* reboot: the two GPUs swap indices */
    gp_inventory inv;
    tu_inventory(&inv, 2, 16384, "A100");
    gp_strlcpy(inv.gpus[0].uuid, "GPU-1", sizeof inv.gpus[0].uuid);
    gp_strlcpy(inv.gpus[1].uuid, "GPU-0", sizeof inv.gpus[1].uuid);
    cluster_upsert_node(c, "n0", &inv);
    ck_assert_int_eq(gpu_used(c, "n0", 1 - idx), 4096);
    ck_assert_int_eq(gpu_used(c, "n0", idx), 0);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_uint_eq(st.pods_gpu_missing, 0);

    /* the pod's GPU is replaced: nothing held anywhere, and it is reported */
    tu_inventory(&inv, 2, 16384, "A100");
    gp_strlcpy(inv.gpus[0].uuid, "GPU-new-a", sizeof inv.gpus[0].uuid);
    gp_strlcpy(inv.gpus[1].uuid, "GPU-new-b", sizeof inv.gpus[1].uuid);
    cluster_upsert_node(c, "n0", &inv);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 0);
    ck_assert_int_eq(gpu_used(c, "n0", 1), 0);
    cluster_stats(c, &st);
    ck_assert_uint_eq(st.pods_gpu_missing, 1);
    json_t *j = cluster_inspect(c, "n0");
    json_t *missing = json_object_get(json_object_get(j, "node"), "missingGPUs");
    ck_assert_uint_eq(json_array_size(missing), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(missing, 0), "uuid")), uuid);
    json_decref(j);

    /* it comes back (under yet another index): held again */
    tu_inventory(&inv, 3, 16384, "A100");
    gp_strlcpy(inv.gpus[2].uuid, uuid, sizeof inv.gpus[2].uuid);
    gp_strlcpy(inv.gpus[idx].uuid, "GPU-x", sizeof inv.gpus[idx].uuid);
    cluster_upsert_node(c, "n0", &inv);
    ck_assert_int_eq(gpu_used(c, "n0", 2), 4096);
    cluster_stats(c, &st);
    ck_assert_uint_eq(st.pods_gpu_missing, 0);
    ck_assert_int_eq(st.mem_used, 4096);
    cluster_free(c);
}
END_TEST

/* Whether any object in j has the key `key` (at any depth). */
static bool has_key(const json_t *j, const char *key)
{
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
            if (strcmp(k, key) == 0 || has_key(v, key))
                return true;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            if (has_key(v, key))
                return true;
    }
    return false;
}

/* Deletes the key `key` from every object in j. */
static void drop_key(json_t *j, const char *key)
{
    if (json_is_object(j)) {
        json_object_del(j, key);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
            drop_key(v, key);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            drop_key(v, key);
    }
}

static json_t *inspect_text(gp_cluster *c, const char *node, bool uids)
{
    gp_buf b;
    gp_buf_init(&b, CLUSTER_INSPECT_MAX);
    if (cluster_inspect_write(c, node, uids, &b) != 0) {
        gp_buf_free(&b);
        return NULL;
    }
    ck_assert(!gp_buf_failed(&b));
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, 0, &je);
    ck_assert_msg(j != NULL, "%s at %d: %.200s", je.text, je.position, b.data);
    gp_buf_free(&b);
    return j;
}

/* /inspect is written as text, not built as a tree: it parses, names are
 * escaped, shares that are not whole percents keep their tenths, a
 * preemptor's reservation shows on its GPU, and without uids no "uid" key is
 * left anywhere while the rest is the same. */
START_TEST(inspect_text_escapes_and_hides_uids)
{
    gp_cluster *c = cluster_with(2, 2, 16384);
    gp_pod_req r;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    tu_req(&r, "u-a", 1, 4096, 333);
    gp_strlcpy(r.name, "we\"ird\\name\n\x01", sizeof r.name);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &r, &o, 0, "pol\"icy", GP_POD_ASSUMED, &a, &err), 0);
    gp_claim cl;
    memset(&cl, 0, sizeof cl);
    gp_strlcpy(cl.uid, "u-pre", sizeof cl.uid);
    gp_strlcpy(cl.ns, "ml", sizeof cl.ns);
    gp_strlcpy(cl.name, "urgent", sizeof cl.name);
    cl.priority = 1000;
    gp_strlcpy(cl.a.node, "n1", sizeof cl.a.node);
    cl.a.nctrs = 1;
    gp_strlcpy(cl.a.ctrs[0].name, "main", sizeof cl.a.ctrs[0].name);
    cl.a.ctrs[0].ngpus = 1;
    cl.a.ctrs[0].gpus[0] = (gp_gpu_grant){1, 8192, 500};
    ck_assert_int_eq(cluster_claim(c, &cl, &err), 0);

    json_t *j = inspect_text(c, NULL, true);
    json_t *nodes = json_object_get(j, "nodes");
    ck_assert_uint_eq(json_array_size(nodes), 2);
    json_t *n0 = json_array_get(nodes, 0), *n1 = json_array_get(nodes, 1);
    ck_assert_str_eq(json_string_value(json_object_get(n0, "name")), "n0");
    json_t *g = json_array_get(json_object_get(n0, "gpus"), a.ctrs[0].gpus[0].index);
    json_t *pod = json_array_get(json_object_get(g, "pods"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(pod, "name")), "we\"ird\\name\n\x01");
    ck_assert_str_eq(json_string_value(json_object_get(pod, "policy")), "pol\"icy");
    ck_assert_str_eq(json_string_value(json_object_get(pod, "uid")), "u-a");
    ck_assert_str_eq(json_string_value(json_object_get(pod, "state")), "assumed");
    ck_assert_int_eq(json_integer_value(json_object_get(pod, "memMiB")), 4096);
    ck_assert(json_is_real(json_object_get(pod, "corePercent")));
    ck_assert_double_eq_tol(json_real_value(json_object_get(pod, "corePercent")), 33.3, 1e-9);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(g, "memoryMiB"), "used")), 4096);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(g, "corePercent"), "total")), 100);
    json_t *res = json_object_get(json_array_get(json_object_get(n1, "gpus"), 1), "reservations");
    ck_assert_uint_eq(json_array_size(res), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(res, 0), "name")), "urgent");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(res, 0), "corePercent")), 50);
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(n1, "gpus"), 0), "reservations"));
    ck_assert(has_key(j, "uid"));

    json_t *hidden = inspect_text(c, NULL, false);
    ck_assert(!has_key(hidden, "uid"));
    drop_key(j, "uid");
    drop_key(j, "ageSeconds");   /* a clock */
    drop_key(hidden, "ageSeconds");
    ck_assert(json_equal(j, hidden));
    json_decref(j);
    json_decref(hidden);

    /* one node; an unknown one writes nothing */
    j = inspect_text(c, "n1", false);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "node"), "name")), "n1");
    json_decref(j);
    gp_buf b;
    gp_buf_init(&b, 64);
    ck_assert_int_eq(cluster_inspect_write(c, "nope", true, &b), -1);
    ck_assert_uint_eq(b.len, 0);
    gp_buf_free(&b);
    cluster_free(c);
}
END_TEST

/* --------------------------------------------------------- concurrency -- */

#define RACE_THREADS 8
#define RACE_PODS 400

typedef struct race {
    gp_cluster *c;
    int id;
    int placed;
} race;

static void *binder_thread(void *arg)
{
    race *r = arg;
    gp_place_opts o;
    placement_default_opts(&o);
    for (int i = 0; i < RACE_PODS; i++) {
        char uid[32], node[16];
        snprintf(uid, sizeof uid, "t%d-p%d", r->id, i);
        snprintf(node, sizeof node, "n%d", i % 4);
        gp_pod_req req;
        tu_req(&req, uid, 1 + (i % 2), 3000 + (i % 7) * 500, (i % 3) * 100);
        gp_assignment a;
        gp_err err;
        if (cluster_place_and_assume(r->c, node, &req, &o, 0, "p", GP_POD_ASSUMED, &a, &err) == 0) {
            r->placed++;
            if (i % 3 == 0) {
                cluster_forget(r->c, uid);      /* a failed API call */
            } else if (i % 3 == 1) {
                gp_pod_obs obs = {.uid = uid, .ns = "default", .name = uid, .node_name = node,
                                  .assign = &a};
                cluster_pod_observed(r->c, &obs);   /* watch confirms ... */
                obs.terminal = (i % 2) == 0;        /* ... and some finish */
                cluster_pod_observed(r->c, &obs);
            }
        }
        /* readers interleave */
        gp_cluster_stats st;
        cluster_stats(r->c, &st);
    }
    return NULL;
}

/* --------------------------------------------------- truth wins (issue 21) -- */

/* A pod bound on GPU index `gpu` of n0 with `mem` MiB, as the watch or a LIST shows it. */
static void observe_bound(gp_cluster *c, const char *uid, int gpu, int64_t mem)
{
    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, "n0", sizeof a.node);
    a.nctrs = 1;
    gp_strlcpy(a.ctrs[0].name, "main", sizeof a.ctrs[0].name);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0].index = gpu;
    a.ctrs[0].gpus[0].mem_mib = mem;
    gp_pod_obs obs = {.uid = uid, .ns = "default", .name = uid, .node_name = "n0", .assign = &a};
    cluster_pod_observed(c, &obs);
}

/* A filter-time reservation made while gpupack's map lacked the pods a
 * previous process had bound (GPU 0 looked free) must not be taken over by
 * the bind once the LIST shows GPU 0 full: it is released and the bind
 * places the pod afresh. (Before: the bind took the reservation over without
 * a check and GPU 0 held 32768 of 16384 MiB.) */
START_TEST(listed_truth_releases_a_conflicting_reservation)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req x;
    tu_req(&x, "x", 1, 16384, 0);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_reserve(c, "n0", &x, &o, 0, "p", 1e6, &a, &err), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    cluster_pods_resync_begin(c);
    observe_bound(c, "y", 0, 16384);   /* bound by the previous process */
    cluster_pods_resync_end(c);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 16384);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 16384);
    ck_assert_int_eq(gpu_used(c, "n0", 1), 16384);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.released_reservations, 1);
    ck_assert_int_eq(st.gpus_over, 0);
    cluster_free(c);
}
END_TEST

/* A bind's assumption whose Binding is not out yet, on a GPU the watch then
 * shows full: released, and the bind thread's claim fails (nothing posted). */
START_TEST(watched_truth_revokes_an_unsent_assumption)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req x;
    tu_req(&x, "x", 1, 16384, 0);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    observe_bound(c, "y", 0, 16384);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 16384);
    ck_assert_int_eq(cluster_bind_claim(c, "x", &a), -1);
    gp_pod_state ps;
    gp_assignment got;
    ck_assert_int_eq(cluster_pod_get(c, "x", &got, &ps), -1);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.released_assumptions, 1);
    ck_assert_int_eq(st.truth.over_capacity, 0);
    /* a claimed (posted) one is never released: its Binding may land */
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(cluster_bind_claim(c, "x", &a), 0);
    observe_bound(c, "z", 1, 8192);
    ck_assert_int_eq(gpu_used(c, "n0", 1), 16384 + 8192);
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.kept_in_flight, 1);
    ck_assert_int_eq(st.gpus_over, 1);
    cluster_free(c);
}
END_TEST

/* The residual window: a Binding that landed after gpupack had released its
 * GPUs (the settling GET saw the pod unbound) and another pod got them. The
 * annotations are followed over capacity; that is counted once, queued as a
 * notice naming the pod, shown in /inspect, and nothing more is placed on
 * that GPU -- whatever the request's shape -- until it is within capacity. */
START_TEST(over_capacity_is_followed_reported_and_fenced)
{
    gp_cluster *c = cluster_with(1, 2, 16384);
    observe_bound(c, "z", 0, 12288);      /* got the GPU meanwhile */
    observe_bound(c, "late", 0, 8192);    /* the late Binding */
    ck_assert_int_eq(gpu_used(c, "n0", 0), 20480);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_int_eq(st.gpus_over, 1);
    ck_assert_int_eq(st.truth.over_capacity, 1);
    gp_over_notice n[4];
    ck_assert_int_eq(cluster_take_over_notices(c, n, 4), 1);
    ck_assert_str_eq(n[0].node, "n0");
    ck_assert_int_eq(n[0].index, 0);
    ck_assert_int_eq(n[0].mem_used, 20480);
    ck_assert_str_eq(n[0].name, "late");
    ck_assert_int_eq(cluster_take_over_notices(c, n, 4), 0);
    observe_bound(c, "late", 0, 8192);    /* seen again: no new transition */
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.over_capacity, 1);
    json_t *ins = cluster_inspect(c, "n0");
    json_t *g0 = json_array_get(json_object_get(json_object_get(ins, "node"), "gpus"), 0);
    json_t *g1 = json_array_get(json_object_get(json_object_get(ins, "node"), "gpus"), 1);
    ck_assert(json_is_true(json_object_get(g0, "overCapacity")));
    ck_assert_ptr_null(json_object_get(g1, "overCapacity"));
    json_decref(ins);
    /* nothing lands on GPU 0: memory only, compute only, whole GPU */
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req shapes[3];
    tu_req(&shapes[0], "m", 1, 1, 0);
    tu_req(&shapes[1], "k", 1, 0, 100);
    tu_req(&shapes[2], "w", 1, 0, 0);
    shapes[2].ctrs[0].mem_ppm = GP_PPM_FULL;
    shapes[2].ctrs[0].ask = GP_ASK_WHOLE;
    shapes[2].ctrs[0].core = GP_CORE_FULL;
    for (int i = 0; i < 3; i++) {
        gp_assignment a;
        gp_err err;
        ck_assert_int_eq(cluster_place_and_assume(c, "n0", &shapes[i], &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
        ck_assert_msg(a.ctrs[0].gpus[0].index == 1, "shape %d placed on GPU %d", i, a.ctrs[0].gpus[0].index);
        cluster_forget(c, shapes[i].uid);
    }
    /* back within capacity once a pod leaves: offered again */
    gp_pod_obs gone = {.uid = "z", .ns = "default", .name = "z", .terminal = true};
    cluster_pod_observed(c, &gone);
    cluster_stats(c, &st);
    ck_assert_int_eq(st.gpus_over, 0);
    gp_assignment a;
    gp_err err;
    tu_req(&shapes[0], "m2", 1, 8192, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &shapes[0], &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    /* going over again is a new transition: counted and reported again (the
     * unposted assumption m2 is released first, the late pod stays) */
    observe_bound(c, "late2", 0, 12288);
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.released_assumptions, 1);
    ck_assert_int_eq(st.truth.over_capacity, 2);
    ck_assert_int_eq(cluster_take_over_notices(c, n, 4), 1);
    ck_assert_str_eq(n[0].name, "late2");
    cluster_free(c);
}
END_TEST

/* A bind whose Binding's answer was lost (UNKNOWN) is retried by
 * kube-scheduler on the same node: the retry reuses the held GPUs and posts
 * again. A settling GET that started before the retry's Binding landed sees
 * the pod unbound; that answer is about the lost attempt and must not release
 * the GPUs the retry's Binding is landing on (seen in e2e_chaos: the GPU then
 * went to other pods and held 32768 of 24576 MiB). */
START_TEST(a_settle_about_an_older_attempt_releases_nothing)
{
    gp_cluster *c = cluster_with(1, 1, 16384);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req x;
    tu_req(&x, "x", 1, 8192, 0);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(cluster_bind_claim(c, "x", &a), 0);
    cluster_bind_outcome(c, "x", GP_BIND_UNKNOWN);
    gp_unsettled u[4];
    ck_assert_uint_eq(cluster_unsettled(c, 0, u, 4), 1);   /* the GET starts ... */
    /* ... kube-scheduler's retry reuses the GPUs and posts again ... */
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(cluster_bind_claim(c, "x", &a), 0);
    /* ... the GET saw the pod unbound: about the lost attempt only */
    cluster_settle(c, &u[0], GP_BIND_REFUSED);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 8192);
    cluster_bind_outcome(c, "x", GP_BIND_BOUND);   /* the retry landed */
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "x", &a, &st), 0);
    ck_assert_uint_eq(cluster_unsettled(c, 0, u, 4), 0);
    /* a settle about the current attempt still decides */
    tu_req(&x, "y", 1, 4096, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "n0", &x, &o, 0, "p", GP_POD_ASSUMED, &a, &err), 0);
    ck_assert_int_eq(cluster_bind_claim(c, "y", &a), 0);
    cluster_bind_outcome(c, "y", GP_BIND_UNKNOWN);
    ck_assert_uint_eq(cluster_unsettled(c, 0, u, 4), 1);
    cluster_settle(c, &u[0], GP_BIND_REFUSED);
    ck_assert_int_eq(gpu_used(c, "n0", 0), 8192);
    cluster_free(c);
}
END_TEST

START_TEST(concurrent_binds_never_overcommit)
{
    gp_cluster *c = cluster_with(4, 4, 16384);
    pthread_t th[RACE_THREADS];
    race rs[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        rs[i] = (race){c, i, 0};
        pthread_create(&th[i], NULL, binder_thread, &rs[i]);
    }
    int placed = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(th[i], NULL);
        placed += rs[i].placed;
    }
    ck_assert_int_gt(placed, 0);
    cluster_rdlock(c);
    size_t it = 0;
    const gp_node *n;
    while ((n = cluster_rd_node_at(c, &it))) {
        for (int g = 0; g < n->ngpus; g++) {
            ck_assert_int_le(n->gpus[g].mem_used, n->gpus[g].info.mem_total);
            ck_assert_int_le(n->gpus[g].core_used, n->gpus[g].info.core_total);
            ck_assert_int_ge(n->gpus[g].mem_used, 0);
            ck_assert_int_ge(n->gpus[g].pods, 0);
        }
    }
    cluster_unlock(c);
    /* releasing everything returns every counter to zero: nothing leaked */
    cluster_pods_resync_begin(c);
    cluster_pods_resync_end(c);
    cluster_expire_assumed(c, -1);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_int_eq(st.mem_used, 0);
    ck_assert_int_eq(st.core_used, 0);
    ck_assert_uint_eq(st.pods_bound + st.pods_assumed, 0);
    cluster_free(c);
}
END_TEST

Suite *suite_cluster(void);
Suite *suite_cluster(void)
{
    Suite *s = suite_create("cluster");
    TCase *t = tcase_create("store");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, assume_forget_and_idempotence);
    tcase_add_test(t, holds_follow_gpu_uuids);
    tcase_add_test(t, stored_assignment_round_trips);
    tcase_add_test(t, inspect_text_escapes_and_hides_uids);
    tcase_add_test(t, forget_spares_a_completed_bind);
    tcase_add_test(t, observe_confirms_and_releases);
    tcase_add_test(t, host_resources_of_every_pod);
    tcase_add_test(t, reservations_lapse);
    tcase_add_test(t, pods_before_their_node_and_inventory_changes);
    tcase_add_test(t, resync_removes_unseen);
    tcase_add_test(t, ns_gpus_and_inspect);
    tcase_add_test(t, concurrent_binds_never_overcommit);
    tcase_add_test(t, listed_truth_releases_a_conflicting_reservation);
    tcase_add_test(t, watched_truth_revokes_an_unsent_assumption);
    tcase_add_test(t, over_capacity_is_followed_reported_and_fenced);
    tcase_add_test(t, a_settle_about_an_older_attempt_releases_nothing);
    suite_add_tcase(s, t);
    return s;
}
