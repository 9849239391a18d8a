/* e2e_dra.c -- DRA (resource.k8s.io/v1) on the real control plane, with the kit's
 * kube-controller-manager (it makes ResourceClaims from ResourceClaimTemplates and
 * deletes them with their pods): gpupack reads ResourceSlices and ResourceClaims,
 * packs pods whose GPUs come from claims, and never double-books a GPU that DRA
 * and its own inventory both know.
 *
 * GPUs are published as NVIDIA's DRA driver names them (driver gpu.nvidia.com,
 * devices gpu-N, attributes type/uuid/productName, capacity memory) with
 * consumable capacity (allowMultipleAllocations), one pool per node. Every case
 * checks capacity per device from the claims' allocations as the API server
 * holds them, plus the gpupack.io/assignment annotations where gpupack's own
 * pods share a GPU.
 *
 * On a server without resource.k8s.io/v1 (v1.26) the suite checks that gpupack
 * says so once and serves as before. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/k8s_obs.h"
#include "model/quantity.h"

#define NS "e2e-dra"
#define DRIVER "gpu.nvidia.com"
#define GIB 1024L
#define NODES 8
#define GPUS 4
#define PODS 40

/* ------------------------------------------------------------ objects -- */

static void device_class(e2e_cp *cp)
{
    json_t *dc = json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1",
                           "kind", "DeviceClass", "metadata", "name", DRIVER, "spec", "selectors",
                           "cel", "expression",
                           "device.driver == \"" DRIVER "\" && "
                           "device.attributes[\"" DRIVER "\"].type == \"gpu\"");
    json_decref(e2e_api_ok(cp, "POST", "/apis/resource.k8s.io/v1/deviceclasses", NULL, dc));
    json_decref(dc);
}

/* UUIDs of a node's GPUs: the inventory annotation's when it has one, so that
 * both sources name the same GPUs. */
static void uuid_of(const char *node, int i, const json_t *inv, char *out, size_t len)
{
    const char *u = json_string_value(json_object_get(json_array_get(inv, (size_t)i), "uuid"));
    if (u)
        snprintf(out, len, "%s", u);
    else
        snprintf(out, len, "GPU-dra-%s-%d", node, i);
}

/* The ResourceSlice NVIDIA's kubelet plugin would publish for the node. */
static void slice(e2e_cp *cp, const char *node, int ngpus, long gib, const char *product,
                  const json_t *inv)
{
    json_t *devs = json_array();
    for (int i = 0; i < ngpus; i++) {
        char name[32], uuid[96], mem[32];
        snprintf(name, sizeof name, "gpu-%d", i);
        uuid_of(node, i, inv, uuid, sizeof uuid);
        snprintf(mem, sizeof mem, "%ldGi", gib);
        json_array_append_new(
            devs, json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s}},s:{s:{s:s}},s:b}", "name", name,
                            "attributes", "type", "string", "gpu", "uuid", "string", uuid,
                            "productName", "string", product, "capacity", "memory", "value", mem,
                            "allowMultipleAllocations", 1));
    }
    char sname[300];
    snprintf(sname, sizeof sname, "%s-" DRIVER, node);
    json_t *s = json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "apiVersion",
                          "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", sname,
                          "spec", "driver", DRIVER, "nodeName", node, "pool", "name", node,
                          "generation", 1, "resourceSliceCount", 1, "devices", devs);
    json_decref(e2e_api_ok(cp, "POST", "/apis/resource.k8s.io/v1/resourceslices", NULL, s));
    json_decref(s);
}

static void templ(e2e_cp *cp, long gib)
{
    char name[32], mem[32];
    snprintf(name, sizeof name, "gpu-%ldgi", gib);
    snprintf(mem, sizeof mem, "%ldGi", gib);
    json_t *t = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:{s:[{s:s,s:{s:s,s:{s:{s:s}}}}]}}}}",
                          "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaimTemplate",
                          "metadata", "name", name, "spec", "spec", "devices", "requests", "name",
                          "gpu", "exactly", "deviceClassName", DRIVER, "capacity", "requests",
                          "memory", mem);
    json_decref(e2e_api_ok(cp, "POST", "/apis/resource.k8s.io/v1/namespaces/" NS "/resourceclaimtemplates",
                           NULL, t));
    json_decref(t);
}

/* A pod whose one container uses a claim made from template gpu-<gib>gi. */
static json_t *claim_pod(const char *name, long gib, const char *node)
{
    json_t *p = e2e_pod(NS, name);
    char t[32];
    snprintf(t, sizeof t, "gpu-%ldgi", gib);
    json_t *spec = json_object_get(p, "spec");
    json_object_set_new(spec, "resourceClaims",
                        json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimTemplateName", t));
    json_array_append_new(json_object_get(spec, "containers"),
                          json_pack("{s:s,s:s,s:{s:[{s:s}],s:{s:s}}}", "name", "main", "image",
                                    "registry.invalid/e2e:1", "resources", "claims", "name", "gpu",
                                    "requests", "cpu", "10m"));
    if (node)
        e2e_pod_select(p, "kubernetes.io/hostname", node);
    return p;
}

static const char *node_of(e2e_cp *cp, const char *name, char *out, size_t len)
{
    json_t *p = e2e_pod_get(cp, NS, name);
    const char *n = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    snprintf(out, len, "%s", n ? n : "");
    json_decref(p);
    return out;
}

static bool wait_bound(e2e_cp *cp, const char *name, double timeout_s)
{
    char node[256];
    double end = gp_mono_s() + timeout_s;
    while (gp_mono_s() < end) {
        if (node_of(cp, name, node, sizeof node)[0])
            return true;
        e2e_sleep(0.05);
    }
    return false;
}

/* -------------------------------------------------------- the checker -- */

/* What each device holds, from the API server alone: the claims' allocations
 * (consumedCapacity) and gpupack's own pods (their assignment annotations, by
 * the UUID of the inventory GPU they name). */
typedef struct dev_use {
    char node[128], device[32], uuid[96];
    long cap_mib, used_mib;
    int claims, pods;
} dev_use;

typedef struct usage {
    int n;
    dev_use d[128];
} usage;

static long quantity_mib(const char *q)
{
    gp_err err;
    int64_t milli;
    if (!q || quantity_parse_milli(q, &milli, &err) < 0)
        return -1;
    int64_t b = milli / 1000;
    return (long)(b / (1024 * 1024) + (b % (1024 * 1024) ? 1 : 0));
}

static dev_use *find_dev(usage *u, const char *node, const char *device)
{
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->d[i].node, node) == 0 && strcmp(u->d[i].device, device) == 0)
            return &u->d[i];
    return NULL;
}

static void measure(e2e_cp *cp, usage *u)
{
    memset(u, 0, sizeof *u);
    json_t *sl = e2e_api_ok(cp, "GET", "/apis/resource.k8s.io/v1/resourceslices", NULL, NULL);
    size_t i, k;
    json_t *s, *d;
    json_array_foreach(json_object_get(sl, "items"), i, s) {
        const json_t *spec = json_object_get(s, "spec");
        const char *node = json_string_value(json_object_get(spec, "nodeName"));
        json_array_foreach(json_object_get(spec, "devices"), k, d) {
            if (!node || u->n == (int)GP_ARRAY_LEN(u->d))
                continue;
            dev_use *x = &u->d[u->n++];
            snprintf(x->node, sizeof x->node, "%s", node);
            snprintf(x->device, sizeof x->device, "%s", json_string_value(json_object_get(d, "name")));
            const char *uu = json_string_value(json_object_get(
                json_object_get(json_object_get(d, "attributes"), "uuid"), "string"));
            snprintf(x->uuid, sizeof x->uuid, "%s", uu ? uu : "");
            x->cap_mib = quantity_mib(json_string_value(json_object_get(
                json_object_get(json_object_get(d, "capacity"), "memory"), "value")));
        }
    }
    json_decref(sl);
    json_t *cl = e2e_api_ok(cp, "GET", "/apis/resource.k8s.io/v1/namespaces/" NS "/resourceclaims",
                            NULL, NULL);
    json_t *c, *r;
    json_array_foreach(json_object_get(cl, "items"), i, c) {
        json_t *res = json_object_get(
            json_object_get(json_object_get(json_object_get(c, "status"), "allocation"), "devices"),
            "results");
        json_array_foreach(res, k, r) {
            dev_use *x = find_dev(u, json_string_value(json_object_get(r, "pool")),
                                  json_string_value(json_object_get(r, "device")));
            ck_assert_msg(x, "a claim is allocated a device no slice publishes");
            const char *m = json_string_value(
                json_object_get(json_object_get(r, "consumedCapacity"), "memory"));
            x->used_mib += m ? quantity_mib(m) : x->cap_mib;
            x->claims++;
        }
    }
    json_decref(cl);
    /* gpupack's own pods on GPUs DRA also publishes */
    json_t *pods = e2e_pods(cp, NS);
    gp_pod_view *v = xmalloc(sizeof *v);
    json_t *p;
    json_array_foreach(pods, i, p) {
        gp_err err;
        if (k8s_obs_pod(p, false, 1024, v, &err) < 0 || !v->obs.assign || v->obs.terminal)
            continue;
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int nh = gp_assignment_holds(v->obs.assign, holds);
        for (int h = 0; h < nh; h++)
            for (int r2 = 0; r2 < v->obs.nrefs; r2++)
                for (int x = 0; x < u->n; x++)
                    if (v->obs.refs[r2].index == holds[h].index &&
                        strcmp(u->d[x].uuid, v->obs.refs[r2].uuid) == 0) {
                        u->d[x].used_mib += (long)holds[h].mem_mib;
                        u->d[x].pods++;
                    }
    }
    free(v);
    json_decref(pods);
}

/* No device holds more than it has. */
static void assert_within(const usage *u, const char *when)
{
    for (int i = 0; i < u->n; i++)
        ck_assert_msg(u->d[i].used_mib <= u->d[i].cap_mib,
                      "%s: %s/%s (%s) holds %ld of %ld MiB (%d claims, %d gpupack pods)", when,
                      u->d[i].node, u->d[i].device, u->d[i].uuid, u->d[i].used_mib, u->d[i].cap_mib,
                      u->d[i].claims, u->d[i].pods);
}

/* gpupack's /inspect shows, per GPU, what the claims hold as the API server says. */
static void assert_inspect_matches(e2e_gp *g, const usage *u)
{
    long st;
    char *body = e2e_gp_get(g, "/inspect", &st);
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    ck_assert_msg(st == 200 && j, "/inspect: HTTP %ld", st);
    int seen = 0;
    size_t i, k;
    json_t *n, *gpu;
    json_array_foreach(json_object_get(j, "nodes"), i, n) {
        const char *node = json_string_value(json_object_get(n, "name"));
        json_array_foreach(json_object_get(n, "gpus"), k, gpu) {
            json_t *dra = json_object_get(gpu, "dra");
            if (!dra)
                continue;
            const char *dev = json_string_value(json_object_get(dra, "device"));
            const dev_use *x = NULL;
            for (int q = 0; q < u->n && !x; q++)
                if (strcmp(u->d[q].node, node) == 0 && dev && strcmp(u->d[q].device, dev) == 0)
                    x = &u->d[q];
            if (!x || x->pods)   /* a GPU with gpupack pods: its claims part alone is compared */
                continue;
            long by_claims = (long)json_integer_value(
                json_object_get(json_object_get(dra, "memoryMiB"), "usedByClaims"));
            ck_assert_msg(by_claims == x->used_mib,
                          "/inspect says claims hold %ld MiB of %s/%s, the API server %ld", by_claims,
                          node, dev, x->used_mib);
            seen++;
        }
    }
    json_decref(j);
    ck_assert_msg(seen > 0, "/inspect shows no GPU published through DRA");
}

/* Waits until /inspect agrees with the API server (the watch may lag). */
static void wait_inspect(e2e_cp *cp, e2e_gp *g, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    usage *u = xmalloc(sizeof *u);
    for (;;) {
        measure(cp, u);
        long st;
        char *body = e2e_gp_get(g, "/inspect", &st);
        json_t *j = body ? json_loads(body, 0, NULL) : NULL;
        free(body);
        bool same = st == 200 && j != NULL;
        size_t i, k;
        json_t *n, *gpu;
        json_array_foreach(json_object_get(j, "nodes"), i, n) {
            json_array_foreach(json_object_get(n, "gpus"), k, gpu) {
                json_t *dra = json_object_get(gpu, "dra");
                const char *dev = json_string_value(json_object_get(dra, "device"));
                const char *node = json_string_value(json_object_get(n, "name"));
                for (int q = 0; dra && dev && q < u->n; q++)
                    if (strcmp(u->d[q].node, node) == 0 && strcmp(u->d[q].device, dev) == 0 &&
                        u->d[q].pods == 0 &&
                        json_integer_value(json_object_get(json_object_get(dra, "memoryMiB"),
                                                           "usedByClaims")) != u->d[q].used_mib)
                        same = false;
            }
        }
        json_decref(j);
        if (same || gp_mono_s() > end)
            break;
        e2e_sleep(0.2);
    }
    assert_inspect_matches(g, u);
    free(u);
}

/* ------------------------------------------------------------- scenes -- */

static bool dra_served(e2e_cp *cp)
{
    return e2e_k8s_at_least(cp, 1, 34, 0);
}

/* Whether the kit will run a Kubernetes with resource.k8s.io/v1 (K8S_VERSION,
 * default 1.26). The scenes after packs_claims need it; on 1.26 they end at
 * once (packs_claims checks gpupack without the API there) rather than start
 * a control plane each to find out. */
static bool kit_has_dra(const char *scene)
{
    const char *v = getenv("K8S_VERSION");
    bool has = v && *v && strcmp(v, "1.26") != 0;
    if (!has)
        e2e_log("%s: skipped, the kit runs Kubernetes 1.26 (no resource.k8s.io/v1)", scene);
    return has;
}

/* On a server without resource.k8s.io/v1, gpupack says so once and serves. */
static void absent_api(e2e_world *w)
{
    double end = gp_mono_s() + 10;
    while (e2e_gp_log_count(w->gp, "does not serve resource.k8s.io/v1") == 0 && gp_mono_s() < end)
        e2e_sleep(0.1);
    ck_assert_int_eq(e2e_gp_log_count(w->gp, "does not serve resource.k8s.io/v1"), 1);
    ck_assert_int_eq(e2e_gp_log_count(w->gp, "listing and watching ResourceSlices"), 0);
    long st;
    free(e2e_gp_get(w->gp, "/readyz", &st));
    ck_assert_int_eq(st, 200);
    ck_assert(e2e_gp_metric(w->gp, "gpupack_dra_api") == 1);
    e2e_log("%s: no resource.k8s.io/v1, gpupack reads no DRA objects and is ready",
            e2e_k8s_version(w->cp));
}

/* GPUs an online best fit over all GPUs touches, the pods taken in arrival
 * order (each on the fullest GPU it fits, else a new one): what placing one
 * pod at a time can reach without knowing the next. The lower bound
 * (ceil(total / capacity)) needs the arrivals in hindsight. */
static int online_best_fit(const long *sizes, int n, long cap)
{
    long used[NODES * GPUS] = {0};
    int open = 0;
    for (int i = 0; i < n; i++) {
        int best = -1;
        for (int g = 0; g < open; g++)
            if (used[g] + sizes[i] <= cap && (best < 0 || used[g] > used[best]))
                best = g;
        if (best < 0 && open < NODES * GPUS)
            best = open++;
        if (best >= 0)
            used[best] += sizes[i];
    }
    return open;
}

/* A world for a scene: the kit with kube-controller-manager, gpupack and
 * kube-scheduler with the shipped stanza, the test namespace and NVIDIA's
 * DeviceClass. NULL (the world checked and gone) where the API server has no
 * resource.k8s.io/v1. */
static e2e_world *dra_world(void)
{
    e2e_world_opts o = {.cp = {.controller_manager = true}};
    e2e_world *w = e2e_world_up(&o);
    if (!dra_served(w->cp)) {
        absent_api(w);
        e2e_world_down(w);
        return NULL;
    }
    e2e_ns_create(w->cp, NS);
    device_class(w->cp);
    return w;
}

typedef struct pack_result {
    int touched, free_gpus, bound;
    long asked_mib;
} pack_result;

/* PODS pods of seeded sizes 4..20 GiB, created one at a time, each waited for;
 * mid (>= 0): after that many, `mid_fault` runs. */
static void place_all(e2e_cp *cp, const char *prefix, const long *sizes,
                      void (*mid_fault)(void *ud, int at), void *ud, pack_result *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < PODS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", prefix, i);
        e2e_pod_create(cp, claim_pod(name, sizes[i], NULL));
        r->asked_mib += sizes[i] * GIB;
        if (wait_bound(cp, name, 60))
            r->bound++;
        else
            e2e_log("%s did not bind within 60 s", name);
        if (mid_fault)
            mid_fault(ud, i + 1);
    }
    usage *u = xmalloc(sizeof *u);
    measure(cp, u);
    assert_within(u, prefix);
    for (int i = 0; i < u->n; i++) {
        r->touched += u->d[i].used_mib > 0;
        r->free_gpus += u->d[i].used_mib == 0;
    }
    free(u);
}

static void delete_all(e2e_cp *cp, const char *prefix)
{
    for (int i = 0; i < PODS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", prefix, i);
        e2e_pod_delete(cp, NS, name);
    }
    /* the resourceclaim controller deletes the claims it made with their pods */
    double end = gp_mono_s() + 60;
    for (;;) {
        json_t *cl = e2e_api_ok(cp, "GET", "/apis/resource.k8s.io/v1/namespaces/" NS "/resourceclaims",
                                NULL, NULL);
        size_t left = json_array_size(json_object_get(cl, "items"));
        json_decref(cl);
        if (left == 0)
            return;
        ck_assert_msg(gp_mono_s() < end, "%zu ResourceClaims left 60 s after their pods", left);
        e2e_sleep(0.2);
    }
}

typedef struct faults {
    e2e_world *w;
} faults;

static void mid_faults(void *ud, int at)
{
    faults *f = ud;
    if (at == PODS / 2) {
        e2e_log("gpupack SIGKILL and restart with %d claim pods placed", at);
        e2e_gp_kill(f->w->gp, SIGKILL);
        e2e_gp_restart(f->w->gp);
        wait_inspect(f->w->cp, f->w->gp, 20);
    } else if (at == PODS * 3 / 4) {
        e2e_log("API server restart with %d claim pods placed", at);
        e2e_cp_ctl(f->w->cp, "restart-apiserver", NULL);
    }
}

static void no_extender(json_t *cfg, void *ud)
{
    (void)ud;
    json_object_del(cfg, "extenders");
}

/* The scene: 8 nodes x 4 GPUs of 24 GiB, 40 claim pods of 4..20 GiB
 * one by one; kube-scheduler alone, then with gpupack (a gpupack SIGKILL and
 * an API server restart in the middle). */
START_TEST(packs_claims)
{
    e2e_world *w = dra_world();
    if (!w)
        return;
    for (long g = 4; g <= 20; g++)
        templ(w->cp, g);
    for (int n = 0; n < NODES; n++) {
        char name[32];
        snprintf(name, sizeof name, "dra-%d", n);
        e2e_node_create(w->cp, e2e_node_plain(name));
        slice(w->cp, name, GPUS, 24, "NVIDIA L4", NULL);
    }
    long sizes[PODS], total = 0;
    uint64_t x = 42;
    for (int i = 0; i < PODS; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        sizes[i] = 4 + (long)((x >> 33) % 17);   /* 4 .. 20 GiB */
        total += sizes[i];
    }
    int lower = (int)((total + 23) / 24);
    int best_fit = online_best_fit(sizes, PODS, 24);
    /* kube-scheduler alone */
    json_t *cfg = e2e_sched_config(0);
    no_extender(cfg, NULL);
    e2e_cp_scheduler(w->cp, cfg);
    json_decref(cfg);
    pack_result alone, with;
    place_all(w->cp, "alone", sizes, NULL, NULL, &alone);
    delete_all(w->cp, "alone");
    /* with gpupack */
    cfg = e2e_sched_config(w->gp->port);
    e2e_cp_scheduler(w->cp, cfg);
    json_decref(cfg);
    wait_inspect(w->cp, w->gp, 20);
    faults f = {w};
    place_all(w->cp, "gp", sizes, mid_faults, &f, &with);
    wait_inspect(w->cp, w->gp, 20);
    e2e_log("MEASURED DRA packing, %d pods asking %ld GiB on %d GPUs of 24 GiB (lower bound %d "
            "GPUs, online best fit %d): kube-scheduler alone %d bound, %d GPUs touched, %d whole "
            "GPUs free; with gpupack %d bound, %d GPUs touched, %d whole GPUs free",
            PODS, total, NODES * GPUS, lower, best_fit, alone.bound, alone.touched, alone.free_gpus,
            with.bound, with.touched, with.free_gpus);
    ck_assert_int_eq(with.bound, PODS);
    ck_assert_msg(with.touched <= best_fit, "gpupack touched %d GPUs, online best fit %d (lower "
                  "bound %d, kube-scheduler alone %d)", with.touched, best_fit, lower, alone.touched);
    ck_assert_int_ge(e2e_gp_metric(w->gp, "gpupack_dra_claims_allocated"), PODS);
    delete_all(w->cp, "gp");
    e2e_world_down(w);
}
END_TEST

/* A node gpupack knows from its inventory annotation and DRA from a
 * ResourceSlice (same UUIDs): one map, no GPU over capacity either way. */
START_TEST(one_map)
{
    if (!kit_has_dra("one_map"))
        return;
    e2e_world *w = dra_world();
    if (!w)
        return;
    templ(w->cp, 20);
    json_t *node = e2e_node_gpupack("both-0", 2, 24 * GIB, "NVIDIA L4");
    json_error_t je;
    json_t *inv = json_loads(json_string_value(json_object_get(
                                 json_object_get(json_object_get(node, "metadata"), "annotations"),
                                 "gpupack.io/gpus")),
                             0, &je);
    e2e_node_create(w->cp, node);
    slice(w->cp, "both-0", 2, 24, "NVIDIA L4", inv);
    json_decref(inv);
    /* claims take 20 GiB of each GPU */
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "claim-%d", i);
        e2e_pod_create(w->cp, claim_pod(name, 20, "both-0"));
        ck_assert_msg(wait_bound(w->cp, name, 30), "%s did not bind", name);
    }
    wait_inspect(w->cp, w->gp, 20);
    /* a gpupack pod asking 10 GiB finds no room */
    json_t *p = e2e_pod(NS, "own-10g");
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "10240", NULL);
    e2e_pod_select(p, "kubernetes.io/hostname", "both-0");
    e2e_pod_create(w->cp, p);
    char *ev = e2e_wait_pod_event(w->cp, NS, "own-10g", "FailedScheduling", "", 30);
    ck_assert_msg(ev, "no FailedScheduling for own-10g");
    free(ev);
    char n[256];
    ck_assert_str_eq(node_of(w->cp, "own-10g", n, sizeof n), "");
    usage *u = xmalloc(sizeof *u);
    measure(w->cp, u);
    assert_within(u, "claims 2 x 20 GiB, gpupack pod pending");
    /* a claim goes: its GPU takes the gpupack pod */
    e2e_pod_delete(w->cp, NS, "claim-0");
    ck_assert_msg(wait_bound(w->cp, "own-10g", 60), "own-10g did not bind once a claim went");
    measure(w->cp, u);
    assert_within(u, "gpupack pod on the GPU a claim left");
    /* now a claim of 20 GiB: DRA's allocator sees the GPU the gpupack pod holds
     * 10 GiB of as free; gpupack must not let it be given there */
    e2e_pod_create(w->cp, claim_pod("claim-2", 20, "both-0"));
    double end = gp_mono_s() + 8;
    while (gp_mono_s() < end) {
        measure(w->cp, u);
        assert_within(u, "claim pod after the gpupack pod");
        e2e_sleep(0.25);
    }
    ck_assert_str_eq(node_of(w->cp, "claim-2", n, sizeof n), "");
    ev = e2e_pod_event(w->cp, NS, "claim-2", "FailedScheduling");
    e2e_log("claim-2 stays pending: %s", ev ? ev : "(no event)");
    ck_assert_msg(ev && strstr(ev, "over-commit"), "claim-2's FailedScheduling: %s", ev ? ev : "none");
    free(ev);
    /* a gpupack restart rebuilds the one map from the API server */
    e2e_gp_kill(w->gp, SIGKILL);
    e2e_gp_restart(w->gp);
    wait_inspect(w->cp, w->gp, 20);
    measure(w->cp, u);
    assert_within(u, "after a gpupack restart");
    free(u);
    e2e_world_down(w);
}
END_TEST


/* Mixed pools: A100 nodes (4 x 80 GiB) and L4 nodes (4 x 24 GiB), the shares
 * of MIXED_PODS pods (4..20 GiB, fewer than the L4s hold) arriving one by one.
 * The best leaves every A100 whole; gpupack must stay within one of it
 * whichever pool's nodes come first by name. */
#define MIXED_NODES 3
#define MIXED_PODS 20

static int mixed_round(e2e_world *w, const char *a100_prefix, const char *l4_prefix,
                       const char *pod_prefix, const long *sizes)
{
    for (int n = 0; n < MIXED_NODES; n++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", a100_prefix, n);
        e2e_node_create(w->cp, e2e_node_plain(name));
        slice(w->cp, name, GPUS, 80, "NVIDIA A100-SXM4-80GB", NULL);
        snprintf(name, sizeof name, "%s-%d", l4_prefix, n);
        e2e_node_create(w->cp, e2e_node_plain(name));
        slice(w->cp, name, GPUS, 24, "NVIDIA L4", NULL);
    }
    wait_inspect(w->cp, w->gp, 20);
    int bound = 0;
    for (int i = 0; i < MIXED_PODS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", pod_prefix, i);
        e2e_pod_create(w->cp, claim_pod(name, sizes[i], NULL));
        bound += wait_bound(w->cp, name, 60);
    }
    ck_assert_int_eq(bound, MIXED_PODS);
    usage *u = xmalloc(sizeof *u);
    measure(w->cp, u);
    assert_within(u, pod_prefix);
    int whole = 0;
    size_t plen = strlen(a100_prefix);
    for (int i = 0; i < u->n; i++)
        whole += strncmp(u->d[i].node, a100_prefix, plen) == 0 && u->d[i].used_mib == 0;
    free(u);
    for (int i = 0; i < MIXED_PODS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", pod_prefix, i);
        e2e_pod_delete(w->cp, NS, name);
    }
    return whole;
}

START_TEST(mixed_pools)
{
    if (!kit_has_dra("mixed_pools"))
        return;
    e2e_world *w = dra_world();
    if (!w)
        return;
    for (long g = 4; g <= 20; g++)
        templ(w->cp, g);
    long sizes[MIXED_PODS];
    uint64_t x = 7;
    for (int i = 0; i < MIXED_PODS; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        sizes[i] = 4 + (long)((x >> 33) % 17);
    }
    /* the A100 nodes first by name, then the L4 nodes first */
    int a_first = mixed_round(w, "a-a100", "b-l4", "m1", sizes);
    int l_first = mixed_round(w, "d-a100", "c-l4", "m2", sizes);
    e2e_log("MEASURED DRA mixed pools, %d shares of 4..20 GiB on %d A100 (80 GiB) and %d L4 "
            "(24 GiB) GPUs: whole A100s left %d with the A100 nodes first by name, %d with the "
            "L4 nodes first (best %d)", MIXED_PODS, MIXED_NODES * GPUS, MIXED_NODES * GPUS,
            a_first, l_first, MIXED_NODES * GPUS);
    ck_assert_int_ge(a_first, MIXED_NODES * GPUS - 1);
    ck_assert_int_ge(l_first, MIXED_NODES * GPUS - 1);
    e2e_world_down(w);
}
END_TEST

/* Preemption for claims: a node with two 24 GiB GPUs, one held 20 GiB by one
 * low-priority claim pod, the other 10 + 10 GiB by two. A high-priority pod
 * asking 20 GiB fits no device (kube-scheduler's DRA plugin rejects it before
 * any extender is asked, and its own preemption gives up): gpupack evicts the
 * one pod, not the two, and the pod binds once that pod's claim is gone. */
static void priority_class(e2e_cp *cp, const char *name, int value)
{
    json_t *pc = json_pack("{s:s,s:s,s:{s:s},s:i}", "apiVersion", "scheduling.k8s.io/v1", "kind",
                           "PriorityClass", "metadata", "name", name, "value", value);
    json_decref(e2e_api_ok(cp, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", NULL, pc));
    json_decref(pc);
}

static void prio_pod(e2e_cp *cp, const char *name, long gib, const char *pc)
{
    json_t *p = claim_pod(name, gib, "pre-0");
    json_object_set_new(json_object_get(p, "spec"), "priorityClassName", json_string(pc));
    e2e_pod_create(cp, p);
    ck_assert_msg(!strcmp(pc, "dra-high") || wait_bound(cp, name, 30), "%s did not bind", name);
}

START_TEST(preempts_for_claims)
{
    if (!kit_has_dra("preempts_for_claims"))
        return;
    e2e_world *w = dra_world();
    if (!w)
        return;
    templ(w->cp, 10);
    templ(w->cp, 20);
    priority_class(w->cp, "dra-low", 0);
    priority_class(w->cp, "dra-high", 1000);
    e2e_node_create(w->cp, e2e_node_plain("pre-0"));
    slice(w->cp, "pre-0", 2, 24, "NVIDIA L4", NULL);
    wait_inspect(w->cp, w->gp, 20);
    prio_pod(w->cp, "low-a", 20, "dra-low");   /* gpu-0 */
    prio_pod(w->cp, "low-b", 10, "dra-low");   /* gpu-1: gpu-0 has 4 GiB left */
    prio_pod(w->cp, "low-c", 10, "dra-low");   /* gpu-1 */
    usage *u = xmalloc(sizeof *u);
    measure(w->cp, u);
    assert_within(u, "low-priority pods placed");
    prio_pod(w->cp, "high", 20, "dra-high");
    double t0 = gp_mono_s(), end = t0 + 90;
    bool bound = false;
    while (!bound && gp_mono_s() < end) {
        bound = wait_bound(w->cp, "high", 0.5);
        measure(w->cp, u);
        assert_within(u, "during the preemption");
    }
    ck_assert_msg(bound, "the high-priority claim pod did not bind within 90 s");
    e2e_log("MEASURED high-priority claim pod bound %.1f s after it was created", gp_mono_s() - t0);
    json_t *a = e2e_pod_get(w->cp, NS, "low-a"), *b = e2e_pod_get(w->cp, NS, "low-b"),
           *c = e2e_pod_get(w->cp, NS, "low-c");
    ck_assert_msg(!a, "low-a (the one victim) is still there");
    ck_assert_msg(b && c, "low-b or low-c was evicted: two victims where one sufficed");
    json_decref(b);
    json_decref(c);
    ck_assert_int_ge(e2e_gp_metric(w->gp, "gpupack_preemption_victims_total"), 1);
    ck_assert_int_eq(e2e_gp_metric(w->gp, "gpupack_preemption_victims_total"), 1);
    free(u);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(dra)
{
    Suite *s = suite_create("e2e dra");
    E2E_TEST(s, packs_claims, 600);
    E2E_TEST(s, one_map, 300);
    E2E_TEST(s, mixed_pools, 400);
    E2E_TEST(s, preempts_for_claims, 300);
    return s;
}
