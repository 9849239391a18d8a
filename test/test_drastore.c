/* test_drastore.c -- DRA objects into per-node views and the GPU map: the
 * allocator's device order, what allocated claims hold (consumable capacity,
 * exclusive devices, partitions), relists, a pod's claims as a request, and
 * the store merging DRA GPUs with an inventory by UUID. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dra.h"
#include "pack/cluster.h"
#include "pack/drastore.h"
#include "pack/placement.h"
#include "testutil.h"

#define GIB "Gi"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_msg(j, "test JSON: %s", je.text);
    return j;
}

/* A ResourceSlice of NVIDIA's driver on `node`, pool `pool`, with devices
 * gpu-<first>.. of `gib` GiB each, shared by capacity when multi. */
static json_t *slice_json(const char *name, const char *node, const char *pool, int gen, int first,
                          int n, int gib, bool multi)
{
    json_t *devs = json_array();
    for (int i = first; i < first + n; i++) {
        char dn[32], uuid[64], mem[32];
        snprintf(dn, sizeof dn, "gpu-%d", i);
        snprintf(uuid, sizeof uuid, "GPU-%s-%d", node, i);
        snprintf(mem, sizeof mem, "%d" GIB, gib);
        json_array_append_new(devs, json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s}},s:{s:{s:s}},s:b}",
                                              "name", dn, "attributes", "type", "string", "gpu",
                                              "uuid", "string", uuid, "productName", "string",
                                              "NVIDIA L4", "capacity", "memory", "value", mem,
                                              "allowMultipleAllocations", multi));
    }
    return json_pack("{s:{s:s,s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "metadata", "name", name,
                     "uid", name, "spec", "driver", "gpu.nvidia.com", "nodeName", node, "pool",
                     "name", pool, "generation", gen, "resourceSliceCount", 1, "devices", devs);
}

static void put_slice(gp_drastore *ds, json_t *j)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    gp_dra_slice s;
    memset(&s, 0, sizeof s);
    gp_err err;
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    drastore_put_slice(ds, &s);
    dra_slice_free(&s);
    json_decref(j);
}

/* A claim of namespace ns asking `gib` of one device of class gpu.nvidia.com;
 * allocated on `node`, device `device` of pool `pool` when device != NULL
 * (consumed: gib recorded as consumedCapacity), reserved for pod uid. */
static json_t *claim_at(const char *uid, const char *name, int gib, const char *node,
                        const char *pool, const char *device, bool consumed, const char *pod_uid)
{
    char mem[32];
    snprintf(mem, sizeof mem, "%d" GIB, gib);
    json_t *c = json_pack("{s:{s:s,s:s,s:s},s:{s:{s:[{s:s,s:{s:s,s:{s:{s:s}}}}]}}}", "metadata",
                          "name", name, "namespace", "ns", "uid", uid, "spec", "devices",
                          "requests", "name", "gpu", "exactly", "deviceClassName", "gpu.nvidia.com",
                          "capacity", "requests", "memory", mem);
    if (device) {
        json_t *res = json_pack("{s:s,s:s,s:s,s:s}", "request", "gpu", "driver", "gpu.nvidia.com",
                                "pool", pool, "device", device);
        if (consumed) {
            json_object_set_new(res, "shareID", json_string("0b6c1f6e-0000-4000-8000-000000000001"));
            json_object_set_new(res, "consumedCapacity", json_pack("{s:s}", "memory", mem));
        }
        json_t *st = json_pack("{s:{s:{s:[o]},s:{s:[{s:[{s:s,s:s,s:[s]}]}]}},s:[{s:s,s:s,s:s}]}",
                               "allocation", "devices", "results", res, "nodeSelector",
                               "nodeSelectorTerms", "matchFields", "key", "metadata.name",
                               "operator", "In", "values", node, "reservedFor", "resource", "pods",
                               "name", "p", "uid", pod_uid ? pod_uid : "pod-uid");
        json_object_set_new(c, "status", st);
    }
    return c;
}

static json_t *claim_json(const char *uid, const char *name, int gib, const char *node,
                          const char *device, const char *pod_uid)
{
    return claim_at(uid, name, gib, node, node, device, true, pod_uid);
}

/* Returns drastore_put_claim's answer: an allocation gone with the change. */
static bool put_claim(gp_drastore *ds, json_t *j)
{
    gp_dra_claim c;
    memset(&c, 0, sizeof c);
    gp_err err;
    ck_assert_msg(dra_claim_decode(j, &c, &err) == 0, "%s", err.msg);
    bool freed = drastore_put_claim(ds, &c);
    dra_claim_free(&c);
    json_decref(j);
    return freed;
}

static void put_class(gp_drastore *ds)
{
    json_t *j = parse("{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":"
                      "{\"expression\":\"device.driver == 'gpu.nvidia.com' && "
                      "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}]}}");
    gp_dra_class cl;
    memset(&cl, 0, sizeof cl);
    gp_err err;
    ck_assert_msg(dra_class_decode(j, &cl, &err) == 0, "%s", err.msg);
    drastore_put_class(ds, &cl);
    json_decref(j);
}

static gp_drastore *store(void)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    gp_drastore *ds = drastore_new(&t);
    put_class(ds);
    return ds;
}

/* ------------------------------------------------------------- views -- */

/* Pools by driver then name, slices of a pool by name, devices as listed;
 * an older generation of a pool is not offered. */
START_TEST(view_follows_the_allocators_order)
{
    gp_drastore *ds = store();
    put_slice(ds, slice_json("z-slice", "n1", "n1", 1, 2, 2, 24, true));   /* gpu-2, gpu-3 */
    put_slice(ds, slice_json("a-slice", "n1", "n1", 1, 0, 2, 24, true));   /* gpu-0, gpu-1 */
    put_slice(ds, slice_json("old", "n1", "n1", 0, 7, 1, 24, true));       /* stale generation */
    put_slice(ds, slice_json("other", "n2", "n2", 1, 0, 4, 24, true));
    gp_dra_node_view v;
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.ngpus, 4);
    for (int i = 0; i < 4; i++) {
        char want[16];
        snprintf(want, sizeof want, "gpu-%d", i);
        ck_assert_str_eq(v.gpus[i].device, want);
        ck_assert_int_eq(v.gpus[i].dra.order, i + 1);
        ck_assert_int_eq(v.gpus[i].dra.mem_total, 24576);
        ck_assert(v.gpus[i].dra.multi);
    }
    ck_assert_str_eq(v.gpus[0].uuid, "GPU-n1-0");
    cluster_dra_view_free(&v);
    drastore_free(ds);
}
END_TEST

/* Allocated claims: consumedCapacity on shared devices, the whole of an
 * exclusive one; the claim and its pod are listed per GPU. */
START_TEST(claims_hold_what_they_consumed)
{
    gp_drastore *ds = store();
    put_slice(ds, slice_json("s1", "n1", "n1", 1, 0, 2, 24, true));
    put_slice(ds, slice_json("s2", "n1", "n1-x", 1, 0, 1, 24, false));   /* exclusive pool */
    put_claim(ds, claim_json("c1", "one", 10, "n1", "gpu-0", "pod-1"));
    put_claim(ds, claim_json("c2", "two", 4, "n1", "gpu-0", "pod-2"));
    put_claim(ds, claim_json("c3", "pending", 8, NULL, NULL, NULL));
    /* exclusive: no consumedCapacity; the pool is named otherwise than the node */
    json_t *ex = claim_at("c4", "excl", 1, "n1", "n1-x", "gpu-0", false, "pod-4");
    put_claim(ds, ex);
    gp_dra_node_view v;
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.ngpus, 3);
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 14 * 1024);
    ck_assert_int_eq(v.gpus[0].dra.claims, 2);
    ck_assert_int_eq(v.gpus[1].dra.mem_used, 0);
    ck_assert_str_eq(v.gpus[2].pool, "n1-x");
    ck_assert_int_eq(v.gpus[2].dra.mem_used, 24576);
    ck_assert_int_eq(v.gpus[2].core_used, GP_CORE_FULL);
    ck_assert_int_eq(v.nholders, 3);
    bool seen = false;
    for (int i = 0; i < v.nholders; i++)
        if (strcmp(v.holders[i].claim, "one") == 0) {
            ck_assert_str_eq(v.holders[i].pod_uid, "pod-1");
            ck_assert_int_eq(v.holders[i].gpu, 0);
            ck_assert_int_eq(v.holders[i].mem_mib, 10240);
            seen = true;
        }
    ck_assert(seen);
    cluster_dra_view_free(&v);
    /* the claim goes: so does what it held, and the store says devices are free */
    ck_assert(drastore_del_claim(ds, "c1"));
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 4096);
    cluster_dra_view_free(&v);
    /* the same allocation again frees nothing; its deallocation does; an
     * unallocated claim's deletion does not */
    ck_assert(!put_claim(ds, claim_json("c2", "two", 4, "n1", "gpu-0", "pod-2")));
    ck_assert(put_claim(ds, claim_json("c2", "two", 4, NULL, NULL, NULL)));
    ck_assert(!drastore_del_claim(ds, "c3"));
    ck_assert(!drastore_del_claim(ds, "nobody"));
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 0);
    cluster_dra_view_free(&v);
    drastore_free(ds);
}
END_TEST

/* A relist drops what it did not show. */
START_TEST(relist_reconciles)
{
    gp_drastore *ds = store();
    put_slice(ds, slice_json("s1", "n1", "n1", 1, 0, 2, 24, true));
    put_claim(ds, claim_json("c1", "one", 10, "n1", "gpu-0", "pod-1"));
    drastore_resync_begin(ds, GP_DRA_CLAIMS);
    drastore_resync_end(ds, GP_DRA_CLAIMS);   /* the LIST had no claims */
    gp_dra_node_view v;
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 0);
    cluster_dra_view_free(&v);
    drastore_resync_begin(ds, GP_DRA_SLICES);
    put_slice(ds, slice_json("s2", "n1", "n1", 2, 4, 1, 48, true));
    drastore_resync_end(ds, GP_DRA_SLICES);
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.ngpus, 1);
    ck_assert_str_eq(v.gpus[0].device, "gpu-4");
    ck_assert_int_eq(v.gpus[0].dra.mem_total, 48 * 1024);
    cluster_dra_view_free(&v);
    gp_drastore_stats st;
    drastore_stats(ds, &st);
    ck_assert_int_eq(st.slices, 1);
    ck_assert_int_eq(st.claims, 0);
    drastore_free(ds);
}
END_TEST

/* ------------------------------------------------------ pod requests -- */

START_TEST(pod_claims_become_a_request)
{
    gp_drastore *ds = store();
    put_slice(ds, slice_json("s1", "n1", "n1", 1, 0, 2, 24, true));
    put_claim(ds, claim_json("c1", "p-gpu-x1", 10, NULL, NULL, NULL));
    put_claim(ds, claim_json("c2", "done", 4, "n1", "gpu-0", "pod-2"));
    json_t *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u\"},"
                        "\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
                        "\"t\"},{\"name\":\"old\",\"resourceClaimName\":\"done\"}]},\"status\":{"
                        "\"resourceClaimStatuses\":[{\"name\":\"gpu\",\"resourceClaimName\":"
                        "\"p-gpu-x1\"}]}}");
    gp_dra_pod_claims pc;
    gp_err err;
    ck_assert_msg(dra_pod_claims(pod, &pc, &err) == 0, "%s", err.msg);
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(drastore_pod_request(ds, &pc, "ns", &r, &err), 0);
    ck_assert(r.dra);
    ck_assert_int_eq(r.nctrs, 1);   /* the allocated claim adds nothing */
    ck_assert_int_eq(r.ctrs[0].count, 1);
    ck_assert_int_eq(r.ctrs[0].mem_mib, 10240);
    ck_assert_int_eq(r.ctrs[0].ask, GP_ASK_MIB);
    /* a claim not seen yet: not predicted, said why */
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(drastore_pod_request(ds, &pc, "other-ns", &r, &err), 1);
    ck_assert(strstr(err.msg, "not seen"));
    ck_assert_int_eq(r.nctrs, 0);
    json_decref(pod);
    /* a class gpupack does not know as GPUs: nothing to predict */
    json_t *c = claim_json("c9", "nic", 1, NULL, NULL, NULL);
    json_object_set_new(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
                                                            c, "spec"), "devices"), "requests"), 0),
                                        "exactly"),
                        "deviceClassName", json_string("nic.example.com"));
    put_claim(ds, c);
    pod = parse("{\"metadata\":{\"name\":\"q\",\"namespace\":\"ns\",\"uid\":\"v\"},\"spec\":"
                "{\"resourceClaims\":[{\"name\":\"n\",\"resourceClaimName\":\"nic\"}]}}");
    ck_assert_int_eq(dra_pod_claims(pod, &pc, &err), 0);
    memset(&r, 0, sizeof r);
    ck_assert_int_eq(drastore_pod_request(ds, &pc, "ns", &r, &err), 0);
    ck_assert_int_eq(r.nctrs, 0);
    ck_assert(!r.dra);
    json_decref(pod);
    drastore_free(ds);
}
END_TEST

/* ----------------------------------------------------- the one map --- */

/* A node known from an inventory and from DRA: GPUs matched by UUID are one
 * GPU; the claims' use counts there; a DRA GPU the inventory lacks is added
 * for claims only. */
START_TEST(one_map_by_uuid)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 2, 24576, "L4");
    gp_strlcpy(inv.gpus[0].uuid, "GPU-n1-0", sizeof inv.gpus[0].uuid);
    gp_strlcpy(inv.gpus[1].uuid, "GPU-n1-1", sizeof inv.gpus[1].uuid);
    cluster_upsert_node(c, "n1", &inv);
    gp_drastore *ds = store();
    put_slice(ds, slice_json("s1", "n1", "n1", 1, 0, 3, 24, true));   /* gpu-2 unknown to inv */
    put_claim(ds, claim_json("c1", "one", 20, "n1", "gpu-1", "pod-1"));
    ck_assert_int_eq(drastore_flush(ds, c), 1);
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, "n1");
    ck_assert_int_eq(n->ngpus, 3);
    ck_assert_int_eq(n->gpus[1].mem_used, 20480);
    ck_assert_int_eq(n->gpus[1].dra.order, 2);
    ck_assert(!n->gpus[1].dra.only);
    ck_assert(n->gpus[2].dra.only);
    ck_assert_int_eq(n->gpus[2].info.index, 2);
    cluster_unlock(c);
    /* gpupack's own pod asking 10 GiB no longer fits GPU 1 */
    gp_pod_req r;
    tu_req(&r, "own", 1, 10240, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("binpack");
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n1", &r, &o, 0, "default", GP_POD_BOUND, &a, &err),
                     0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    /* an inventory change keeps the DRA use */
    cluster_upsert_node(c, "n1", &inv);
    cluster_rdlock(c);
    n = cluster_rd_node(c, "n1");
    ck_assert_int_eq(n->gpus[1].mem_used, 20480);
    ck_assert_int_eq(n->gpus[0].mem_used, 10240);
    cluster_unlock(c);
    /* a claim allocated on top of gpupack's pod: over capacity, reported */
    put_claim(ds, claim_json("c2", "late", 20, "n1", "gpu-0", "pod-2"));
    drastore_flush(ds, c);
    gp_over_notice note[4];
    ck_assert_int_eq(cluster_take_over_notices(c, note, 4), 1);
    ck_assert_int_eq(note[0].index, 0);
    ck_assert_int_eq(note[0].dra_claims, 1);
    ck_assert_int_eq(note[0].dra_mem, 20480);
    ck_assert_str_eq(note[0].uid, "own");
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_int_eq(st.truth.dra_conflicts, 1);
    ck_assert_int_eq(st.dra_gpus, 3);
    json_t *ins = cluster_inspect(c, "n1");
    json_t *g0 = json_array_get(json_object_get(json_object_get(ins, "node"), "gpus"), 0);
    ck_assert(json_is_true(json_object_get(g0, "overCapacity")));
    json_t *claims = json_object_get(json_object_get(g0, "dra"), "claims");
    ck_assert_int_eq(json_array_size(claims), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(claims, 0), "claim")), "late");
    json_decref(ins);
    drastore_free(ds);
    cluster_free(c);
}
END_TEST

/* A claim pod gpupack assumed on the predicted GPU holds it until its claims
 * show up allocated, then the claims count instead (never both, never none). */
START_TEST(predicted_hold_gives_way_to_the_claim)
{
    gp_cluster *c = cluster_new();
    gp_inventory none;
    memset(&none, 0, sizeof none);
    cluster_upsert_node(c, "n1", &none);
    gp_drastore *ds = store();
    put_slice(ds, slice_json("s1", "n1", "n1", 1, 0, 2, 24, true));
    drastore_flush(ds, c);
    gp_pod_req r;
    tu_req(&r, "pod-1", 1, 10240, 0);
    r.dra = true;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(c, "n1", &r, &o, 0, "default", GP_POD_ASSUMED, &a, &err),
                     0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, "n1");
    ck_assert_int_eq(n->gpus[0].mem_used, 10240);
    ck_assert_int_eq(n->gpus[0].dra.mem_used, 10240);   /* the allocator holds it in flight */
    cluster_unlock(c);
    /* the next claim pod is predicted on what is left */
    gp_pod_req r2;
    tu_req(&r2, "pod-2", 1, 20480, 0);
    r2.dra = true;
    gp_fit_fail why;
    cluster_rdlock(c);
    ck_assert_int_eq(placement_fit(cluster_rd_node(c, "n1"), &r2, &o, &a, &why), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    cluster_unlock(c);
    /* the claim shows up allocated on gpu-0 for pod-1 */
    put_claim(ds, claim_json("c1", "one", 10, "n1", "gpu-0", "pod-1"));
    drastore_flush(ds, c);
    cluster_rdlock(c);
    n = cluster_rd_node(c, "n1");
    ck_assert_int_eq(n->gpus[0].mem_used, 10240);
    ck_assert_int_eq(n->gpus[0].dra.mem_used, 10240);
    ck_assert_int_eq(n->gpus[0].dra.claims, 1);
    cluster_unlock(c);
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "pod-1", &a, &st), 0);
    ck_assert_int_eq(a.nctrs, 0);   /* host-only now: its claims hold the GPU */
    drastore_free(ds);
    cluster_free(c);
}
END_TEST


/* Partitionable devices (NVIDIA's dynamic MIG): a GPU and its MIG devices
 * consume one counter set; an allocated MIG device makes the whole GPU
 * unavailable to the allocator and holds its counters' memory there. */
START_TEST(partitions_hold_their_gpu)
{
    gp_drastore *ds = store();
    json_t *j = parse(
        "{\"metadata\":{\"name\":\"mig\",\"uid\":\"mig\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
        "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":2},"
        "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"},"
        "\"uuid\":{\"string\":\"GPU-a\"}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}},"
        "\"consumesCounters\":[{\"counterSet\":\"gpu-0-counter-set\",\"counters\":{\"memory\":"
        "{\"value\":\"80Gi\"}}}]},{\"name\":\"gpu-0-mig-1g\",\"attributes\":{\"type\":{\"string\":"
        "\"mig\"}},\"capacity\":{\"memory\":{\"value\":\"10Gi\"}},\"consumesCounters\":[{"
        "\"counterSet\":\"gpu-0-counter-set\",\"counters\":{\"memory\":{\"value\":\"10Gi\"}}}]}]}}");
    put_slice(ds, j);
    gp_dra_node_view v;
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.ngpus, 1);   /* the MIG device is no GPU of the map */
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 0);
    cluster_dra_view_free(&v);
    put_claim(ds, claim_at("c1", "mig-claim", 10, "n1", "n1", "gpu-0-mig-1g", false, "pod-1"));
    drastore_node_view(ds, "n1", &v);
    ck_assert_int_eq(v.gpus[0].dra.mem_used, 10240);
    ck_assert_int_ge(v.gpus[0].dra.claims, 1);
    ck_assert_int_eq(v.gpus[0].core_used, GP_CORE_FULL);
    cluster_dra_view_free(&v);
    /* a whole-GPU claim is then predicted nowhere on the node */
    gp_cluster *c = cluster_new();
    gp_inventory none;
    memset(&none, 0, sizeof none);
    cluster_upsert_node(c, "n1", &none);
    drastore_flush(ds, c);
    gp_pod_req r;
    tu_req(&r, "whole", 1, 0, 0);
    r.ctrs[0].ask = GP_ASK_WHOLE;
    r.ctrs[0].mem_ppm = GP_PPM_FULL;
    r.dra = true;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    cluster_rdlock(c);
    ck_assert_int_eq(placement_fit(cluster_rd_node(c, "n1"), &r, &o, &a, &why), -1);
    cluster_unlock(c);
    cluster_free(c);
    drastore_free(ds);
}
END_TEST

Suite *suite_drastore(void);
Suite *suite_drastore(void)
{
    Suite *s = suite_create("drastore");
    TCase *t = tcase_create("core");
    tcase_add_test(t, view_follows_the_allocators_order);
    tcase_add_test(t, claims_hold_what_they_consumed);
    tcase_add_test(t, relist_reconciles);
    tcase_add_test(t, pod_claims_become_a_request);
    tcase_add_test(t, one_map_by_uuid);
    tcase_add_test(t, predicted_hold_gives_way_to_the_claim);
    tcase_add_test(t, partitions_hold_their_gpu);
    suite_add_tcase(s, t);
    return s;
}
