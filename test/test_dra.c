/* test_dra.c -- DRA objects captured from kube-apiserver v1.36 (ResourceSlices, DeviceClasses,
 * ResourceClaims, pods' claims) -> gpupack's structs; the CEL gpupack reads; every bound
 * exceeded, malformed members and quantities, garbage. */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/dra.h"
#include "model/k8s_obs.h"
#include "testutil.h"

#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)

static json_t *load(const char *file)
{
    char rel[256];
    snprintf(rel, sizeof rel, "dra/%s", file);
    return tu_load_json(tu_captured(rel));
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    ck_assert_msg(j != NULL, "bad test JSON: %s: %s", je.text, text);
    return j;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* ---------------------------------------------------------- drivers --- */

START_TEST(default_drivers)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    ck_assert_int_eq(t.n, 2);
    const gp_dra_driver *nv = dra_driver_find(&t, "gpu.nvidia.com");
    ck_assert_ptr_nonnull(nv);
    ck_assert_str_eq(nv->type_attr, "type");
    ck_assert_str_eq(nv->type_value, "gpu");
    ck_assert_str_eq(nv->uuid_attr, "uuid");
    ck_assert_str_eq(nv->model_attr, "productName");
    ck_assert_str_eq(nv->mem_capacity, "memory");
    ck_assert_str_eq(nv->core_capacity, "");
    const gp_dra_driver *hami = dra_driver_find(&t, "hami-core-gpu.project-hami.io");
    ck_assert_ptr_nonnull(hami);
    ck_assert_str_eq(hami->type_value, "hami-gpu");
    ck_assert_str_eq(hami->core_capacity, "cores");
    ck_assert_int_eq(hami->core_full, 100);
    ck_assert_ptr_null(dra_driver_find(&t, "net.example.com"));
    ck_assert_ptr_null(dra_driver_find(&t, NULL));
    ck_assert_ptr_null(dra_driver_find(NULL, "gpu.nvidia.com"));
    t.n = 99;   /* a corrupt count reads no further than the table */
    ck_assert_ptr_nonnull(dra_driver_find(&t, "gpu.nvidia.com"));
}
END_TEST

/* ---------------------------------------------------- ResourceSlice --- */

typedef struct {
    const char *name;
    bool gpu;
    const char *uuid, *model;
    int64_t mem_mib;
    int core;
    bool multi;
    int ncons;
    const char *node;
    int64_t def, min, max, step;   /* the memory requestPolicy, MiB */
} dev_want;

typedef struct {
    const char *file;
    const char *name, *driver, *pool, *node;
    bool all_nodes;
    int64_t generation;
    int pool_slices, ndevices, nshared;
    dev_want dev[4];
} slice_case;

#define A100_80 "NVIDIA A100-SXM4-80GB"
#define A100_40 "NVIDIA A100-PCIE-40GB"
#define NV_GPU(i)                                                                                   \
    {"gpu-" #i, true, "GPU-4a3f9c2e-1b7d-4e8a-9f0c-00000000000" #i, A100_80, 81559, 1000, true, 0, \
     "", 1024, 1024, 0, 256}
static const slice_case slices[] = {
    /* NVIDIA-style, 4 GPUs of 81559Mi with consumable memory: allowMultipleAllocations and a
     * requestPolicy (default 1Gi, min 1Gi, step 256Mi) */
    {"slice-nvidia-4gpu.json", "gpu-node-1-gpu.nvidia.com-abcde", "gpu.nvidia.com", "gpu-node-1",
     "gpu-node-1", false, 1, 1, 4, 0, {NV_GPU(0), NV_GPU(1), NV_GPU(2), NV_GPU(3)}},
    /* MIG-style partitionable devices: the full GPU and two 3g.20gb MIG devices consume
     * counters of a set published in another slice of the pool (the API keeps sharedCounters
     * and devices in separate slices); MIG devices are not GPUs by NVIDIA's type rule */
    {"slice-mig-devices.json", "gpu-node-2-gpu.nvidia.com-fghij", "gpu.nvidia.com", "gpu-node-2",
     "gpu-node-2", false, 3, 2, 3, 0,
     {{"gpu-0", true, "GPU-8c1d2e3f-0000-4000-8000-000000000000", A100_40, 40960, 1000, false, 1,
       "", 0, 0, 0, 0},
      {"gpu-0-mig-9-0-4", false, "", A100_40, 19968, 1000, false, 1, "", 0, 0, 0, 0},
      {"gpu-0-mig-9-4-4", false, "", A100_40, 19968, 1000, false, 1, "", 0, 0, 0, 0}}},
    {"slice-mig-counters.json", "gpu-node-2-gpu.nvidia.com-counters", "gpu.nvidia.com",
     "gpu-node-2", "gpu-node-2", false, 3, 2, 0, 1, {{0}}},
    /* HAMi: qualified attribute and capacity names ("hami-core-gpu.project-hami.io/type",
     * ".../cores"), cores 100 of 100 -> 1000 per-mille, memory 15Gi with a policy */
    {"slice-hami.json", "gpu-node-3-hami-core-gpu.project-hami.io-klmno",
     "hami-core-gpu.project-hami.io", "gpu-node-3", "gpu-node-3", false, 1, 1, 1, 0,
     {{"hami-gpu-0", true, "GPU-0b5e6f70-1111-4111-8111-111111111111", "Tesla T4", 15360, 1000,
       true, 0, "", 15360, 1, 15360, 1}}},
    /* a driver the table does not know: kept, not a GPU (although its "type" is "gpu") */
    {"slice-net-allnodes.json", "fabric-net.example.com-pqrst", "net.example.com", "fabric", "",
     true, 7, 1, 1, 0, {{"nic-0", false, "", "", 0, 1000, false, 0, "", 0, 0, 0, 0}}},
    {"slice-net-nodeselector.json", "rack-1-net.example.com-uvwxy", "net.example.com", "rack-1",
     "", true, 1, 1, 1, 0, {{"switch-0", false, "", "", 0, 1000, false, 0, "", 0, 0, 0, 0}}},
    /* perDeviceNodeSelection, and "gpu.nvidia.com/uuid", "gpu.nvidia.com/memory" qualified */
    {"slice-per-device.json", "per-device-gpu.nvidia.com-zzzzz", "gpu.nvidia.com", "remote-gpus",
     "", false, 1, 1, 2, 0,
     {{"gpu-0", true, "GPU-ffffffff-2222-4222-8222-222222222222", "NVIDIA H100 80GB HBM3", 81559,
       1000, false, 0, "gpu-node-2", 0, 0, 0, 0},
      {"gpu-1", true, "", "", 81920, 1000, false, 0, "", 0, 0, 0, 0}}},
};

START_TEST(captured_slices)
{
    const slice_case *c = &slices[_i];
    gp_dra_drivers t;
    dra_default_drivers(&t);
    json_t *j = load(c->file);
    gp_dra_slice s;
    gp_err err = {{0}};
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s: %s", c->file, err.msg);
    ck_assert_str_eq(s.name, c->name);
    ck_assert_int_eq(strlen(s.uid), 36);
    ck_assert(s.rv[0]);
    ck_assert_str_eq(s.driver, c->driver);
    ck_assert_str_eq(s.pool, c->pool);
    ck_assert_str_eq(s.node, c->node);
    ck_assert_int_eq(s.all_nodes, c->all_nodes);
    ck_assert_int_eq(s.pool_generation, c->generation);
    ck_assert_int_eq(s.pool_slices, c->pool_slices);
    ck_assert_int_eq(s.ndevices, c->ndevices);
    ck_assert_int_eq(s.nshared, c->nshared);
    for (int i = 0; i < s.ndevices; i++) {
        const gp_dra_device *d = &s.devices[i];
        const dev_want *w = &c->dev[i];
        ck_assert_str_eq(d->name, w->name);
        ck_assert_msg(d->gpu == w->gpu, "%s %s: gpu %d", c->file, d->name, d->gpu);
        ck_assert_str_eq(d->uuid, w->uuid);
        ck_assert_str_eq(d->model, w->model);
        ck_assert_int_eq(d->mem_mib, w->mem_mib);
        ck_assert_int_eq(d->core, w->core);
        ck_assert_int_eq(d->multi, w->multi);
        ck_assert_int_eq(d->ncons, w->ncons);
        ck_assert_str_eq(d->node, w->node);
        ck_assert_int_eq(d->mem_default_mib, w->def);
        ck_assert_int_eq(d->mem_min_mib, w->min);
        ck_assert_int_eq(d->mem_max_mib, w->max);
        ck_assert_int_eq(d->mem_step_mib, w->step);
        ck_assert_int_eq(d->nvalues, 0);
    }
    dra_slice_free(&s);
    ck_assert(all_zero(&s, sizeof s));
    dra_slice_free(&s);   /* twice: a freed slice is a zeroed one */
    json_decref(j);
}
END_TEST

/* The counters of the MIG pool: amounts in their own unit (bytes for memory). */
START_TEST(mig_counters)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    gp_err err = {{0}};
    gp_dra_slice s;
    json_t *j = load("slice-mig-counters.json");
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    json_decref(j);
    const gp_dra_counter_set *cs = &s.shared[0];
    ck_assert_str_eq(cs->name, "gpu-0-counter-set");
    ck_assert_int_eq(cs->n, 10);
    ck_assert_str_eq(cs->c[0].name, "memory");
    ck_assert_int_eq(cs->c[0].value, 40 * GIB);
    ck_assert_str_eq(cs->c[1].name, "memory-slice-0");
    ck_assert_int_eq(cs->c[1].value, 1);
    ck_assert_str_eq(cs->c[9].name, "multiprocessors");
    ck_assert_int_eq(cs->c[9].value, 98);
    dra_slice_free(&s);

    j = load("slice-mig-devices.json");
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    json_decref(j);
    ck_assert_str_eq(s.devices[0].cons[0].name, "gpu-0-counter-set");
    ck_assert_int_eq(s.devices[0].cons[0].n, 10);
    const gp_dra_counter_set *mig = &s.devices[2].cons[0];
    ck_assert_str_eq(mig->name, "gpu-0-counter-set");
    ck_assert_int_eq(mig->n, 6);
    ck_assert_str_eq(mig->c[0].name, "memory");
    ck_assert_int_eq(mig->c[0].value, 19968 * MIB);
    ck_assert_str_eq(mig->c[1].name, "memory-slice-4");
    ck_assert_str_eq(mig->c[5].name, "multiprocessors");
    ck_assert_int_eq(mig->c[5].value, 42);
    dra_slice_free(&s);
}
END_TEST

/* Forms the captures do not show: validValues (sorted), quantities as JSON numbers, rounding
 * (capacity and max down, the rest up), saturation, a table whose names are qualified. */
START_TEST(slice_forms)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    gp_err err = {{0}};
    gp_dra_slice s;
    json_t *j = parse(
        "{\"metadata\":{\"name\":\"s\",\"uid\":\"u\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
        "\"devices\":[{\"name\":\"a\",\"attributes\":{\"type\":{\"string\":\"gpu\"}},"
        "\"capacity\":{\"memory\":{\"value\":\"1572863Ki\",\"requestPolicy\":{\"default\":1,"
        "\"validRange\":{\"min\":\"1.5Mi\",\"max\":\"2047Ki\",\"step\":\"1Ki\"},"
        "\"validValues\":[\"8Gi\",\"1Gi\",\"4Gi\",\"2Gi\"]}}}},"
        "{\"name\":\"b\",\"attributes\":{\"type\":{\"int\":1},\"uuid\":{\"bool\":true}},"
        "\"capacity\":{\"memory\":{\"value\":\"16Ei\"}},"
        "\"consumesCounters\":[{\"counterSet\":\"x\",\"counters\":{\"m\":{\"value\":\"99Ei\"},"
        "\"n\":{\"value\":7}}}]}]}}");
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    const gp_dra_device *a = &s.devices[0], *b = &s.devices[1];
    ck_assert(a->gpu);
    ck_assert_int_eq(a->mem_mib, 1535);          /* 1535.99 MiB, down */
    ck_assert_int_eq(a->mem_default_mib, 1);     /* 1 byte, up */
    ck_assert_int_eq(a->mem_min_mib, 2);
    ck_assert_int_eq(a->mem_max_mib, 1);
    ck_assert_int_eq(a->mem_step_mib, 1);
    ck_assert_int_eq(a->nvalues, 4);
    ck_assert_int_eq(a->mem_values_mib[0], 1024);
    ck_assert_int_eq(a->mem_values_mib[1], 2048);
    ck_assert_int_eq(a->mem_values_mib[2], 4096);
    ck_assert_int_eq(a->mem_values_mib[3], 8192);
    ck_assert(!b->gpu);                          /* "type" is an int: not the string "gpu" */
    ck_assert_str_eq(b->uuid, "");               /* a bool attribute is no UUID */
    ck_assert_int_eq(b->mem_mib, INT64_MAX / MIB);   /* 16Ei saturates */
    ck_assert_int_eq(b->cons[0].c[0].value, INT64_MAX);
    ck_assert_int_eq(b->cons[0].c[1].value, 7);
    dra_slice_free(&s);

    /* a policy's table may name attributes qualified; the slice writes them plain */
    gp_dra_drivers q = {.n = 1};
    q.d[0] = t.d[0];
    strcpy(q.d[0].uuid_attr, "gpu.nvidia.com/uuid");
    strcpy(q.d[0].type_attr, "");                /* every device a GPU */
    json_decref(j);
    j = parse("{\"metadata\":{\"name\":\"s\",\"uid\":\"u\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
              "\"devices\":[{\"name\":\"a\",\"attributes\":{\"type\":{\"string\":\"mig\"},"
              "\"uuid\":{\"string\":\"GPU-1\"}}}]}}");
    ck_assert_msg(dra_slice_decode(j, &q, &s, &err) == 0, "%s", err.msg);
    ck_assert(s.devices[0].gpu);
    ck_assert_str_eq(s.devices[0].uuid, "GPU-1");
    ck_assert_int_eq(s.devices[0].mem_mib, 0);   /* no memory capacity published */
    dra_slice_free(&s);
    /* no table at all: every driver unknown */
    ck_assert(dra_slice_decode(j, NULL, &s, &err) == 0);
    ck_assert(!s.devices[0].gpu);
    ck_assert_str_eq(s.devices[0].uuid, "");
    dra_slice_free(&s);
    json_decref(j);

    /* HAMi cores: 30 of 100 -> 300 per-mille */
    j = parse("{\"metadata\":{\"name\":\"s\",\"uid\":\"u\"},\"spec\":{\"driver\":"
              "\"hami-core-gpu.project-hami.io\",\"devices\":[{\"name\":\"a\",\"capacity\":"
              "{\"cores\":{\"value\":\"30\"}}}]}}");
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.devices[0].core, 300);
    dra_slice_free(&s);
    json_decref(j);
}
END_TEST

/* -------------------------------------------------------- DeviceClass --- */

typedef struct {
    const char *file;
    const char *name, *driver, *attr, *value;
    bool other;
    const char *ext;
} class_case;

static const class_case classes[] = {
    {"class-gpu.json", "gpu.nvidia.com", "gpu.nvidia.com", "gpu.nvidia.com/type", "gpu", false, ""},
    {"class-mig.json", "mig.nvidia.com", "gpu.nvidia.com", "gpu.nvidia.com/type", "mig", false, ""},
    {"class-any-nvidia.json", "any-nvidia", "gpu.nvidia.com", "", "", false, "example.com/gpu"},
    {"class-hami.json", "hami-core-gpu.project-hami.io", "hami-core-gpu.project-hami.io",
     "hami-core-gpu.project-hami.io/type", "hami-gpu", false, "nvidia.com/gpu"},
};

START_TEST(captured_classes)
{
    const class_case *c = &classes[_i];
    json_t *j = load(c->file);
    gp_dra_class k;
    gp_err err = {{0}};
    ck_assert_msg(dra_class_decode(j, &k, &err) == 0, "%s: %s", c->file, err.msg);
    ck_assert_str_eq(k.name, c->name);
    ck_assert_str_eq(k.driver, c->driver);
    ck_assert_str_eq(k.attr, c->attr);
    ck_assert_str_eq(k.attr_value, c->value);
    ck_assert_int_eq(k.other_selectors, c->other);
    ck_assert_str_eq(k.extended_resource, c->ext);
    json_decref(j);
}
END_TEST

typedef struct {
    const char *selectors;   /* the spec.selectors list, as JSON */
    const char *driver, *attr, *value;
    bool other;
} cel_case;

#define CEL(e) "[{\"cel\":{\"expression\":\"" e "\"}}]"
static const cel_case cels[] = {
    {CEL("device.driver == \\\"gpu.nvidia.com\\\""), "gpu.nvidia.com", "", "", false},
    {CEL("device.driver==\\\"gpu.nvidia.com\\\""), "gpu.nvidia.com", "", "", false},
    {CEL("'gpu.nvidia.com' == device.driver"), "gpu.nvidia.com", "", "", false},
    {CEL("  \\n device.driver  ==  'a'\\t "), "a", "", "", false},
    {CEL("((device.driver == 'a'))"), "a", "", "", false},
    /* the driver test and a string-attribute test, either order, with parentheses */
    {CEL("device.attributes['a'].type == 'gpu' && device.driver == 'a'"), "a", "a/type", "gpu",
     false},
    {CEL("(device.driver == 'a') && ('gpu' == device.attributes[\\\"a\\\"].type)"), "a",
     "a/type", "gpu", false},
    {CEL("device.driver == 'a' && (device.driver == 'a' && device.attributes['a'].type == 'x')"),
     "a", "a/type", "x", false},
    /* anything else is other; the driver test still counts as a top-level conjunct */
    {CEL("device.driver == 'a' && device.capacity['a'].memory.compareTo(quantity('80Gi')) >= 0"),
     "a", "", "", true},
    {CEL("device.driver == 'a' && device.attributes['a'].index == 0"), "a", "", "", true},
    {CEL("device.driver == 'a' && device.attributes['a'].type == 'gpu' && "
         "device.attributes['a'].type == 'mig'"),
     "a", "a/type", "gpu", true},
    {CEL("device.driver == 'a' &&"), "a", "", "", true},
    /* not a conjunction of tests: no driver */
    {CEL("device.driver == 'a' || device.driver == 'b'"), "", "", "", true},
    {CEL("device.driver == 'a' && x || y"), "", "", "", true},
    {CEL("device.driver == 'a' ? true : false"), "", "", "", true},
    {CEL("!(device.driver == 'a')"), "", "", "", true},
    {CEL("device.driver != 'a'"), "", "", "", true},
    {CEL("device.driver == 'a' == true"), "", "", "", true},
    {CEL("device.driver == 'a\\\\'b'"), "", "", "", true},
    {CEL("device.driver == '''a'''"), "", "", "", true},
    {CEL("device.driver == 'a"), "", "", "", true},
    {CEL("(device.driver == 'a'"), "", "", "", true},
    {CEL("device.driver == 'a')"), "", "", "", true},
    {CEL("device . driver == 'a'"), "", "", "", true},
    {CEL("device.driver == 'a' && device.driver == 'b'"), "", "", "", true},   /* nothing passes */
    {CEL("(((((((((((((((((((device.driver == 'a')))))))))))))))))))"), "", "", "", true},
    {CEL(""), "", "", "", true},
    {CEL("&& && &&"), "", "", "", true},
    {CEL("device.attributes['a'].9 == 'x'"), "", "", "", true},
    {CEL("device.attributes['a']['type'] == 'x'"), "", "", "", true},
    {CEL("device.attributes['a'].type == device.driver"), "", "", "", true},
    /* several selectors: ANDed */
    {"[{\"cel\":{\"expression\":\"device.driver == 'a'\"}},"
     "{\"cel\":{\"expression\":\"device.attributes['a'].type == 'gpu'\"}}]",
     "a", "a/type", "gpu", false},
    {"[{\"cel\":{\"expression\":\"device.driver == 'a'\"}},"
     "{\"cel\":{\"expression\":\"device.driver == 'b'\"}}]",
     "", "", "", true},
    {"[]", "", "", "", false},
    {"null", "", "", "", false},
    {"[{}]", "", "", "", true},                                      /* a selector kind unknown */
    {"[{\"cel\":null}]", "", "", "", true},
};

START_TEST(cel_forms)
{
    const cel_case *c = &cels[_i];
    char text[2048];
    snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"k\"},\"spec\":{\"selectors\":%s}}",
             c->selectors);
    json_t *j = parse(text);
    gp_dra_class k;
    gp_err err = {{0}};
    ck_assert_msg(dra_class_decode(j, &k, &err) == 0, "%s: %s", c->selectors, err.msg);
    ck_assert_msg(strcmp(k.driver, c->driver) == 0, "%s: driver \"%s\"", c->selectors, k.driver);
    ck_assert_msg(strcmp(k.attr, c->attr) == 0, "%s: attr \"%s\"", c->selectors, k.attr);
    ck_assert_msg(strcmp(k.attr_value, c->value) == 0, "%s: value \"%s\"", c->selectors,
                  k.attr_value);
    ck_assert_msg(k.other_selectors == c->other, "%s: other %d", c->selectors, k.other_selectors);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------ ResourceClaim --- */

typedef struct {
    const char *file;
    const char *ns, *name, *uid;
    bool deleting;
    /* requests[0] */
    const char *req, *cls;
    bool all;
    int count;
    bool admin, selectors;
    int nalts, ncap;
    const char *cap_name;
    int64_t cap;
    /* the allocation, results[0] */
    const char *node;
    int nres;
    const char *res_request, *res_device;
    bool res_admin;
    int res_ncap;
    const char *res_cap_name;
    int64_t res_cap;
    bool share_id;
    const char *pod, *pod_uid;
} claim_case;

static const claim_case claims[] = {
    /* a pod's template claim: 40Gi of a GPU's memory, consumed */
    {"claim-from-template.json", "default", "train-0-gpu-q6qsj",
     "52afd4c7-afd8-473a-b2a3-224927f9dec5", false, "gpu", "gpu.nvidia.com", false, 1, false,
     false, 0, 1, "memory", 40 * GIB, "gpu-node-1", 1, "gpu", "gpu-0", false, 1, "memory",
     40 * GIB, true, "train-0", "73ad8bc0-3632-4510-95ae-a8d12edf6af7"},
    /* firstAvailable: the first alternative is the request (selectors, 20Gi); the allocator took
     * the second ("gpu/any"), which consumed the device's default 1Gi. Being deleted while
     * reserved. */
    {"claim-first-available-deleting.json", "default", "shared-gpu",
     "dbaa69dc-707b-4e36-82d1-cb1661f443a6", true, "gpu", "gpu.nvidia.com", false, 1, false, true,
     2, 1, "memory", 20 * GIB, "gpu-node-1", 1, "gpu/any", "gpu-0", false, 1, "memory", GIB, true,
     "train-0", "73ad8bc0-3632-4510-95ae-a8d12edf6af7"},
    /* All with adminAccess: every GPU of the node, holding nothing (the allocator still writes
     * the default consumedCapacity) */
    {"claim-admin-all.json", "ops", "monitor-all", "eeb881a7-7f5d-4831-8ce1-f0f5811248b8", false,
     "all-gpus", "gpu.nvidia.com", true, 0, true, false, 0, 0, "", 0, "gpu-node-1", 4, "all-gpus",
     "gpu-0", true, 1, "memory", GIB, true, "monitor", "4717009e-436e-4e27-a42c-3657462d8bf4"},
    /* HAMi: memory and a qualified cores capacity */
    {"claim-hami-share.json", "default", "hami-share", "e0668d16-7b7b-4843-b4c9-6e9a4db1b18e",
     false, "vgpu", "hami-core-gpu.project-hami.io", false, 1, false, false, 0, 2,
     "hami-core-gpu.project-hami.io/cores", 30, "gpu-node-3", 1, "vgpu", "hami-gpu-0", false, 2,
     "hami-core-gpu.project-hami.io/cores", 30, true, "hami-pod",
     "0162fb45-5d46-4b0b-8405-e747caa5f8d0"},
    /* a MIG device: exclusive, no consumedCapacity */
    {"claim-mig.json", "default", "mig-half", "2aba7db2-3895-4fd4-961a-a7bc90b8b9cd", false, "mig",
     "mig.nvidia.com", false, 1, false, false, 0, 0, "", 0, "gpu-node-2", 1, "mig",
     "gpu-0-mig-9-0-4", false, 0, "", 0, false, "mig-pod", "467bfaab-ade9-4e3f-aa75-b032b7ccbe61"},
};

START_TEST(captured_claims)
{
    const claim_case *c = &claims[_i];
    json_t *j = load(c->file);
    gp_dra_claim k;
    gp_err err = {{0}};
    ck_assert_msg(dra_claim_decode(j, &k, &err) == 0, "%s: %s", c->file, err.msg);
    ck_assert_str_eq(k.ns, c->ns);
    ck_assert_str_eq(k.name, c->name);
    ck_assert_str_eq(k.uid, c->uid);
    ck_assert(k.rv[0]);
    ck_assert_int_eq(k.deleting, c->deleting);
    ck_assert_int_eq(k.nreq, 1);
    const gp_dra_request *q = &k.req[0];
    ck_assert_str_eq(q->name, c->req);
    ck_assert_str_eq(q->cls, c->cls);
    ck_assert_int_eq(q->all, c->all);
    ck_assert_int_eq(q->count, c->count);
    ck_assert_int_eq(q->admin, c->admin);
    ck_assert_int_eq(q->selectors, c->selectors);
    ck_assert_int_eq(q->nalts, c->nalts);
    ck_assert_int_eq(q->ncap, c->ncap);
    if (c->ncap) {
        ck_assert_str_eq(q->cap[0].name, c->cap_name);
        ck_assert_int_eq(q->cap[0].value, c->cap);
    }
    ck_assert(k.allocated);
    ck_assert_str_eq(k.node, c->node);
    ck_assert_int_eq(k.nres, c->nres);
    const gp_dra_result *r = &k.res[0];
    ck_assert_str_eq(r->request, c->res_request);
    ck_assert_str_eq(r->device, c->res_device);
    ck_assert_str_eq(r->driver, strncmp(c->cls, "hami", 4) == 0 ? "hami-core-gpu.project-hami.io"
                                                                 : "gpu.nvidia.com");
    ck_assert_str_eq(r->pool, c->node);   /* the drivers name their pools after the node */
    ck_assert_int_eq(r->admin, c->res_admin);
    ck_assert_int_eq(r->ncap, c->res_ncap);
    if (c->res_ncap) {
        ck_assert_str_eq(r->cap[0].name, c->res_cap_name);
        ck_assert_int_eq(r->cap[0].value, c->res_cap);
    }
    ck_assert_int_eq(strlen(r->share_id), c->share_id ? 36 : 0);
    ck_assert_int_eq(k.nreserved, 1);
    ck_assert_int_eq(k.nreserved_pods, 1);
    ck_assert_str_eq(k.reserved[0].name, c->pod);
    ck_assert_str_eq(k.reserved[0].uid, c->pod_uid);
    if (c->res_ncap == 2)
        ck_assert_int_eq(r->cap[1].value, 4 * GIB);
    for (int i = 1; i < k.nres; i++)   /* All: the four GPUs of the node */
        ck_assert_int_eq(k.res[i].device[4], '0' + i);
    dra_claim_free(&k);
    ck_assert(all_zero(&k, sizeof k));
    dra_claim_free(&k);
    json_decref(j);
}
END_TEST

/* Forms the captures do not show: not allocated; reservedFor of other resources; node
 * selectors by hostname, of several terms or nodes; defaults. */
typedef struct {
    const char *json;
    bool allocated;
    const char *node;
    int nreserved, npods;
    const char *ns;
} claim_form;

#define CLAIM(status) \
    "{\"metadata\":{\"name\":\"c\",\"uid\":\"u\"},\"spec\":{\"devices\":{\"requests\":[]}}," \
    "\"status\":" status "}"
#define TERMS(t) "{\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":" t "}}}"
#define MF(n) "{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"" n "\"]}"
#define HN(n) "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"" n "\"]}"
static const claim_form claim_forms[] = {
    {CLAIM("{}"), false, "", 0, 0, "default"},
    {CLAIM("null"), false, "", 0, 0, "default"},
    {"{\"metadata\":{\"name\":\"c\",\"uid\":\"u\",\"namespace\":\"ml\"}}", false, "", 0, 0, "ml"},
    {CLAIM("{\"allocation\":{}}"), true, "", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[" MF("n1") "]}]")), true, "n1", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchExpressions\":[" HN("n2") "]}]")), true, "n2", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[" MF("n1") "],\"matchExpressions\":[" HN("n1") "]}]")), true,
     "n1", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[" MF("n1") "],\"matchExpressions\":[" HN("n2") "]}]")), true,
     "", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[" MF("n1") "]},{\"matchFields\":[" MF("n2") "]}]")), true, "",
     0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                 "\"values\":[\"n1\",\"n2\"]}]}]")),
     true, "", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
                 "\"values\":[\"n1\"]}]}]")),
     true, "", 0, 0, "default"},
    {CLAIM(TERMS("{\"odd\":1}")), true, "", 0, 0, "default"},
    {CLAIM(TERMS("[{\"matchFields\":7}]")), true, "", 0, 0, "default"},
    {CLAIM("{\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"1\"},"
           "{\"apiGroup\":\"\",\"resource\":\"pods\",\"name\":\"q\",\"uid\":\"2\"},"
           "{\"apiGroup\":\"batch\",\"resource\":\"jobs\",\"name\":\"j\",\"uid\":\"3\"},"
           "{\"apiGroup\":\"example.com\",\"resource\":\"pods\",\"name\":\"x\",\"uid\":\"4\"}]}"),
     false, "", 4, 2, "default"},
};

START_TEST(claim_shapes)
{
    const claim_form *c = &claim_forms[_i];
    json_t *j = parse(c->json);
    gp_dra_claim k;
    gp_err err = {{0}};
    ck_assert_msg(dra_claim_decode(j, &k, &err) == 0, "%s: %s", c->json, err.msg);
    ck_assert_int_eq(k.allocated, c->allocated);
    ck_assert_msg(strcmp(k.node, c->node) == 0, "%s: node \"%s\"", c->json, k.node);
    ck_assert_int_eq(k.nreserved, c->nreserved);
    ck_assert_int_eq(k.nreserved_pods, c->npods);
    ck_assert_str_eq(k.ns, c->ns);
    ck_assert(!k.deleting);
    if (c->npods) {
        ck_assert_str_eq(k.reserved[0].name, "p");
        ck_assert_str_eq(k.reserved[1].uid, "2");
    }
    dra_claim_free(&k);
    json_decref(j);
}
END_TEST

/* exactly's defaults, firstAvailable's alternatives, capacity requests as numbers, All. */
START_TEST(request_forms)
{
    json_t *j = parse(
        "{\"metadata\":{\"name\":\"c\",\"uid\":\"u\",\"deletionTimestamp\":null},"
        "\"spec\":{\"devices\":{\"requests\":["
        "{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"k\"}},"
        "{\"name\":\"b\",\"exactly\":{\"deviceClassName\":\"k\",\"count\":3,\"selectors\":[],"
        "\"capacity\":{\"requests\":{\"memory\":1073741824,\"x\":\"99Ei\"}}}},"
        "{\"name\":\"c\",\"exactly\":{\"deviceClassName\":\"k\",\"allocationMode\":\"All\","
        "\"count\":5}},"
        "{\"name\":\"d\",\"firstAvailable\":[{\"name\":\"one\",\"deviceClassName\":\"k1\","
        "\"count\":2},{\"name\":\"two\",\"deviceClassName\":\"k2\",\"adminAccess\":true}]}]}}}");
    gp_dra_claim k;
    gp_err err = {{0}};
    ck_assert_msg(dra_claim_decode(j, &k, &err) == 0, "%s", err.msg);
    ck_assert(!k.deleting);                      /* a null deletionTimestamp */
    ck_assert(!k.allocated);
    ck_assert_int_eq(k.nreq, 4);
    ck_assert_int_eq(k.req[0].count, 1);
    ck_assert(!k.req[0].all);
    ck_assert_int_eq(k.req[0].nalts, 0);
    ck_assert_int_eq(k.req[1].count, 3);
    ck_assert(!k.req[1].selectors);              /* an empty list */
    ck_assert_int_eq(k.req[1].ncap, 2);
    ck_assert_int_eq(k.req[1].cap[0].value, GIB);
    ck_assert_int_eq(k.req[1].cap[1].value, INT64_MAX);
    ck_assert(k.req[2].all);
    ck_assert_int_eq(k.req[2].count, 0);
    ck_assert_str_eq(k.req[3].cls, "k1");
    ck_assert_int_eq(k.req[3].count, 2);
    ck_assert(!k.req[3].admin);                  /* the second alternative's, not kept */
    ck_assert_int_eq(k.req[3].nalts, 2);
    dra_claim_free(&k);
    json_decref(j);
}
END_TEST

/* ----------------------------------------------------- a pod's claims --- */

typedef struct {
    const char *json;   /* a file under dra/ when it ends in .json */
    int n;
    struct {
        const char *name, *claim;
        bool tmpl;
    } c[3];
} pod_case;

static const pod_case pods[] = {
    {"pod-train-0.json", 2, {{"gpu", "train-0-gpu-q6qsj", true}, {"shared", "shared-gpu", false}}},
    {"pod-hami.json", 1, {{"vgpu", "hami-share", false}}},
    /* the controller has not made the template's claim yet; one it decided not to make */
    {"{\"spec\":{\"resourceClaims\":[{\"name\":\"a\",\"resourceClaimTemplateName\":\"t\"},"
     "{\"name\":\"b\",\"resourceClaimTemplateName\":\"t\"}]},"
     "\"status\":{\"resourceClaimStatuses\":[{\"name\":\"b\"},{\"name\":\"x\","
     "\"resourceClaimName\":\"other\"}]}}",
     2, {{"a", "", true}, {"b", "", true}}},
    {"{\"spec\":{\"containers\":[]}}", 0, {{0}}},
    {"{}", 0, {{0}}},
    {"{\"spec\":{\"resourceClaims\":null},\"status\":null}", 0, {{0}}},
};

START_TEST(pod_claims)
{
    const pod_case *c = &pods[_i];
    size_t len = strlen(c->json);
    json_t *j = len > 5 && strcmp(c->json + len - 5, ".json") == 0 ? load(c->json)
                                                                    : parse(c->json);
    gp_dra_pod_claims pc;
    gp_err err = {{0}};
    ck_assert_msg(dra_pod_claims(j, &pc, &err) == 0, "%s: %s", c->json, err.msg);
    ck_assert_int_eq(pc.n, c->n);
    for (int i = 0; i < pc.n; i++) {
        ck_assert_str_eq(pc.c[i].name, c->c[i].name);
        ck_assert_str_eq(pc.c[i].claim, c->c[i].claim);
        ck_assert_int_eq(pc.c[i].from_template, c->c[i].tmpl);
    }
    /* the reduced copy the store keeps (k8s_obs_pod_keep) holds all dra_pod_claims reads */
    json_t *t = k8s_obs_trim_pod(j);
    gp_dra_pod_claims trimmed;
    ck_assert_msg(dra_pod_claims(t, &trimmed, &err) == 0, "%s trimmed: %s", c->json, err.msg);
    ck_assert(memcmp(&pc, &trimmed, sizeof pc) == 0);
    json_decref(t);
    json_decref(j);
}
END_TEST

/* ------------------------------------------ bounds and malformed members --- */

/* A captured object with one member replaced: `path` (dot-separated, numbers index lists)
 * gets `json`, or a list of `count` copies of it, or an object of `count` members k0, k1...
 * holding it, or a string of `count` 'x'. Decoding must fail with a message containing msg,
 * leaving the struct zeroed. */
typedef enum { VALUE, LIST, MEMBERS, LONG_STR } fill;

typedef enum { SLICE, CLASS, CLAIM, POD } kind;

typedef struct {
    kind k;
    const char *file, *path;
    fill f;
    int count;
    const char *json;
    const char *msg;
} bad_case;

#define NV "slice-nvidia-4gpu.json"
#define MIGC "slice-mig-counters.json"
#define MIGD "slice-mig-devices.json"
#define HAMI "slice-hami.json"
#define TPL "claim-from-template.json"
#define FA "claim-first-available-deleting.json"
#define ADM "claim-admin-all.json"
#define GPUCLS "class-gpu.json"
#define POD0 "pod-train-0.json"
#define DEV0 "{\"name\":\"d\"}"
#define SET0 "{\"name\":\"s\",\"counters\":{}}"
#define CNT0 "{\"value\":\"1\"}"
#define REQ0 "{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"k\"}}"
#define RES0 "{\"request\":\"r\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x\"}"
#define REF0 "{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u\"}"
#define ALT0 "{\"name\":\"a\",\"deviceClassName\":\"k\"}"
#define PC0 "{\"name\":\"a\",\"resourceClaimName\":\"c\"}"
static const bad_case bad[] = {
    /* every bound, one past it */
    {SLICE, NV, "spec.devices", LIST, 129, DEV0, "spec.devices: 129 entries, more than 128"},
    {SLICE, MIGC, "spec.sharedCounters", LIST, 9, SET0, "spec.sharedCounters: 9 entries, more than 8"},
    {SLICE, MIGC, "spec.sharedCounters.0.counters", MEMBERS, 33, CNT0,
     "spec.sharedCounters[0].counters: 33 entries, more than 32"},
    {SLICE, MIGD, "spec.devices.0.consumesCounters", LIST, 9, "{\"counterSet\":\"s\"}",
     "spec.devices[0].consumesCounters: 9 entries, more than 8"},
    {SLICE, MIGD, "spec.devices.1.consumesCounters.0.counters", MEMBERS, 33, CNT0,
     "spec.devices[1].consumesCounters[0].counters: 33 entries"},
    {SLICE, NV, "spec.devices.3.capacity.memory.requestPolicy.validValues", LIST, 17, "\"1Gi\"",
     "requestPolicy.validValues: 17 entries, more than 16"},
    {CLAIM, TPL, "spec.devices.requests", LIST, 33, REQ0,
     "spec.devices.requests: 33 entries, more than 32"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.capacity.requests", MEMBERS, 5, "\"1\"",
     "spec.devices.requests[0].exactly.capacity.requests: 5 entries, more than 4"},
    {CLAIM, FA, "spec.devices.requests.0.firstAvailable", LIST, 9, ALT0,
     "spec.devices.requests[0].firstAvailable: 9 entries, more than 8"},
    {CLAIM, FA, "spec.devices.requests.0.firstAvailable.0.count", VALUE, 0, "65",
     "firstAvailable[0].count: must be an integer from 1 to 64"},
    {CLAIM, ADM, "status.allocation.devices.results", LIST, 65, RES0,
     "status.allocation.devices.results: 65 entries, more than 64"},
    {CLAIM, TPL, "status.allocation.devices.results.0.consumedCapacity", MEMBERS, 5, "\"1\"",
     "results[0].consumedCapacity: 5 entries, more than 4"},
    {CLAIM, TPL, "status.reservedFor", LIST, 257, REF0, "status.reservedFor: 257 entries, more than 256"},
    {POD, POD0, "spec.resourceClaims", LIST, 33, PC0, "spec.resourceClaims: 33 entries, more than 32"},
    {POD, POD0, "status.resourceClaimStatuses", LIST, 33, "{\"name\":\"x\"}",
     "status.resourceClaimStatuses: 33 entries"},
    {CLASS, GPUCLS, "spec.selectors", LIST, 33, "{\"cel\":{\"expression\":\"true\"}}",
     "spec.selectors: 33 entries, more than 32"},
    {CLAIM, FA, "spec.devices.requests.0.firstAvailable.0.selectors", LIST, 33,
     "{\"cel\":{\"expression\":\"true\"}}", "firstAvailable[0].selectors: 33 entries, more than 32"},
    {CLASS, GPUCLS, "spec.selectors.0.cel.expression", LONG_STR, 10241, NULL,
     "spec.selectors[0].cel.expression: 10241 characters, more than 10240"},
    /* strings one past their field */
    {SLICE, NV, "metadata.name", LONG_STR, 254, NULL, "metadata.name: 254 characters, more than 253"},
    {SLICE, NV, "metadata.uid", LONG_STR, 64, NULL, "metadata.uid: 64 characters, more than 63"},
    {SLICE, NV, "metadata.resourceVersion", LONG_STR, 32, NULL, "metadata.resourceVersion: 32"},
    {SLICE, NV, "spec.driver", LONG_STR, 64, NULL, "spec.driver: 64 characters, more than 63"},
    {SLICE, NV, "spec.pool.name", LONG_STR, 254, NULL, "spec.pool.name: 254 characters"},
    {SLICE, NV, "spec.nodeName", LONG_STR, 254, NULL, "spec.nodeName: 254 characters"},
    {SLICE, NV, "spec.devices.2.name", LONG_STR, 64, NULL, "spec.devices[2].name: 64 characters"},
    {SLICE, NV, "spec.devices.2.attributes.uuid.string", LONG_STR, 96, NULL,
     "spec.devices[2].attributes[\"uuid\"].string: 96 characters, more than 95"},
    {SLICE, NV, "spec.devices.2.attributes.productName.string", LONG_STR, 64, NULL,
     "attributes[\"productName\"].string: 64 characters, more than 63"},
    {SLICE, "slice-per-device.json", "spec.devices.0.nodeName", LONG_STR, 254, NULL,
     "spec.devices[0].nodeName: 254 characters"},
    {SLICE, MIGC, "spec.sharedCounters.0.name", LONG_STR, 64, NULL, "spec.sharedCounters[0].name: 64"},
    {SLICE, MIGC, "spec.sharedCounters.0.counters", MEMBERS, 1, "{\"value\":1}", NULL},   /* ok */
    {CLAIM, TPL, "metadata.namespace", LONG_STR, 254, NULL, "metadata.namespace: 254"},
    {CLAIM, TPL, "spec.devices.requests.0.name", LONG_STR, 64, NULL, "requests[0].name: 64"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.deviceClassName", LONG_STR, 254, NULL,
     "requests[0].exactly.deviceClassName: 254"},
    {CLAIM, TPL, "status.allocation.devices.results.0.request", LONG_STR, 128, NULL,
     "results[0].request: 128 characters, more than 127"},
    {CLAIM, TPL, "status.allocation.devices.results.0.driver", LONG_STR, 64, NULL, "results[0].driver: 64"},
    {CLAIM, TPL, "status.allocation.devices.results.0.pool", LONG_STR, 254, NULL, "results[0].pool: 254"},
    {CLAIM, TPL, "status.allocation.devices.results.0.device", LONG_STR, 64, NULL, "results[0].device: 64"},
    {CLAIM, TPL, "status.allocation.devices.results.0.shareID", LONG_STR, 64, NULL, "results[0].shareID: 64"},
    {CLAIM, TPL, "status.allocation.nodeSelector.nodeSelectorTerms.0.matchFields.0.values.0",
     LONG_STR, 254, NULL, "status.allocation.nodeSelector: node name of 254 characters"},
    {CLAIM, TPL, "status.reservedFor.0.uid", LONG_STR, 64, NULL, "status.reservedFor[0].uid: 64"},
    {CLAIM, TPL, "status.reservedFor.0.name", LONG_STR, 254, NULL, "status.reservedFor[0].name: 254"},
    {CLASS, GPUCLS, "metadata.name", LONG_STR, 254, NULL, "DeviceClass: metadata.name: 254"},
    {CLASS, GPUCLS, "spec.extendedResourceName", LONG_STR, 254, NULL, "spec.extendedResourceName: 254"},
    {CLASS, GPUCLS, "spec.selectors.0.cel.expression", VALUE, 0,
     "\"device.driver == 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'\"",
     "expression: driver \"aaaa"},
    {CLASS, GPUCLS, "spec.selectors.0.cel.expression", VALUE, 0,
     "\"device.attributes['a'].type == 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'\"",
     "has 64 characters, more than 63"},
    {POD, POD0, "spec.resourceClaims.0.name", LONG_STR, 64, NULL, "spec.resourceClaims[0].name: 64"},
    {POD, POD0, "spec.resourceClaims.1.resourceClaimName", LONG_STR, 254, NULL,
     "resourceClaims[1].resourceClaimName: 254"},
    {POD, POD0, "status.resourceClaimStatuses.0.resourceClaimName", LONG_STR, 254, NULL,
     "status.resourceClaimStatuses[0].resourceClaimName: 254"},
    /* counter and capacity names */
    {SLICE, MIGC, "spec.sharedCounters.0.counters", VALUE, 0,
     "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":{\"value\":1}}",
     "has 64 characters, more than 63"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.capacity.requests", VALUE, 0,
     "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":\"1\"}",
     "capacity.requests: name \"aaaa"},
    /* malformed quantities */
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "\"80Gx\"",
     "spec.devices[1].capacity[\"memory\"].value: quantity \"80Gx\" has an unknown suffix"},
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "\"-1Gi\"",
     "capacity[\"memory\"].value: negative quantity"},
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "12.5",
     "capacity[\"memory\"].value: must be a quantity string"},
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "null",
     "capacity[\"memory\"].value: missing"},
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "\"\"", "empty quantity"},
    {SLICE, NV, "spec.devices.1.capacity.memory.value", VALUE, 0, "\"1e41\"", "out of range"},
    {SLICE, NV, "spec.devices.1.capacity.memory.requestPolicy.default", VALUE, 0, "\"x\"",
     "requestPolicy.default: quantity \"x\" has no digits"},
    {SLICE, NV, "spec.devices.1.capacity.memory.requestPolicy.validRange.step", VALUE, 0, "true",
     "requestPolicy.validRange.step: must be a quantity string"},
    {SLICE, NV, "spec.devices.1.capacity.memory.requestPolicy.validValues", VALUE, 0, "[\"1Gi\",\"?\"]",
     "requestPolicy.validValues[1]: quantity \"?\""},
    {SLICE, HAMI, "spec.devices.0.capacity.hami-core-gpu", VALUE, 0, "0", NULL},   /* ok: unread */
    {SLICE, MIGC, "spec.sharedCounters.0.counters.memory.value", VALUE, 0, "\"1.2.3\"",
     "counters[\"memory\"].value: quantity \"1.2.3\""},
    {SLICE, MIGD, "spec.devices.2.consumesCounters.0.counters.memory", VALUE, 0, "{\"value\":-5}",
     "counters[\"memory\"].value: negative quantity"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.capacity.requests.memory", VALUE, 0, "\"40GB\"",
     "capacity.requests[\"memory\"]: quantity \"40GB\""},
    {CLAIM, TPL, "status.allocation.devices.results.0.consumedCapacity.memory", VALUE, 0, "[]",
     "consumedCapacity[\"memory\"]: must be a quantity string"},
    /* wrong types and shapes */
    {SLICE, NV, "spec.devices", VALUE, 0, "{}", "spec.devices: must be a list"},
    {SLICE, NV, "spec.devices.0", VALUE, 0, "\"gpu-0\"", "spec.devices[0]: must be an object"},
    {SLICE, NV, "spec.devices.0.name", VALUE, 0, "7", "spec.devices[0].name: must be a string"},
    {SLICE, NV, "spec.devices.0.name", VALUE, 0, "\"\"", "spec.devices[0].name: missing"},
    {SLICE, NV, "spec.devices.0.allowMultipleAllocations", VALUE, 0, "\"yes\"",
     "allowMultipleAllocations: must be true or false"},
    {SLICE, NV, "spec.devices.0.attributes", VALUE, 0, "[]", "spec.devices[0].attributes: must be an object"},
    {SLICE, NV, "spec.devices.0.attributes.type", VALUE, 0, "\"gpu\"",
     "spec.devices[0].attributes[\"type\"]: must be an object"},
    {SLICE, NV, "spec.devices.0.attributes.uuid.string", VALUE, 0, "5",
     "attributes[\"uuid\"].string: must be a string"},
    {SLICE, NV, "spec.devices.0.capacity.memory", VALUE, 0, "\"80Gi\"",
     "spec.devices[0].capacity[\"memory\"]: must be an object"},
    {SLICE, NV, "spec.devices.0.capacity.memory.requestPolicy", VALUE, 0, "[]", "requestPolicy: must be an object"},
    {SLICE, HAMI, "spec.devices.0.capacity", VALUE, 0, "{\"cores\":{\"value\":\"101\"}}",
     "spec.devices[0].capacity[\"cores\"].value: 101 is more than a whole GPU (100)"},
    {SLICE, NV, "spec.pool.generation", VALUE, 0, "-1", "spec.pool.generation: must be an integer"},
    {SLICE, NV, "spec.pool.generation", VALUE, 0, "\"1\"", "spec.pool.generation: must be an integer"},
    {SLICE, NV, "spec.pool.resourceSliceCount", VALUE, 0, "4294967296", "resourceSliceCount"},
    {SLICE, NV, "spec.pool", VALUE, 0, "\"p\"", "spec.pool: must be an object"},
    {SLICE, NV, "spec.allNodes", VALUE, 0, "1", "spec.allNodes: must be true or false"},
    {SLICE, NV, "spec.nodeSelector", VALUE, 0, "[]", "spec.nodeSelector: must be an object"},
    {SLICE, NV, "spec.driver", VALUE, 0, "null", "spec.driver: missing"},
    {SLICE, NV, "spec", VALUE, 0, "null", "spec.driver: missing"},
    {SLICE, NV, "metadata.uid", VALUE, 0, "null", "ResourceSlice: metadata.uid: missing"},
    {SLICE, NV, "metadata", VALUE, 0, "[]", "ResourceSlice: metadata: must be an object"},
    {SLICE, MIGC, "spec.sharedCounters.0", VALUE, 0, "[]", "spec.sharedCounters[0]: must be an object"},
    {SLICE, MIGC, "spec.sharedCounters.0.name", VALUE, 0, "null", "spec.sharedCounters[0].name: missing"},
    {SLICE, MIGC, "spec.sharedCounters.0.counters.memory", VALUE, 0, "\"1\"",
     "counters[\"memory\"]: must be an object"},
    {SLICE, MIGD, "spec.devices.0.consumesCounters.0.counterSet", VALUE, 0, "null",
     "consumesCounters[0].counterSet: missing"},
    {CLAIM, TPL, "metadata.uid", VALUE, 0, "\"\"", "ResourceClaim: metadata.uid: missing"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly", VALUE, 0, "null", "neither exactly nor firstAvailable"},
    {CLAIM, TPL, "spec.devices.requests.0.firstAvailable", VALUE, 0, "[" ALT0 "]",
     "both exactly and firstAvailable"},
    {CLAIM, FA, "spec.devices.requests.0.firstAvailable", VALUE, 0, "[]",
     "neither exactly nor firstAvailable"},
    {CLAIM, FA, "spec.devices.requests.0.firstAvailable.1", VALUE, 0, "{\"name\":\"b\"}",
     "firstAvailable[1].deviceClassName: missing"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.allocationMode", VALUE, 0, "\"Some\"",
     "allocationMode: \"Some\" is neither ExactCount nor All"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.count", VALUE, 0, "0", "count: must be an integer from 1"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.count", VALUE, 0, "1.0", "count: must be an integer"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.adminAccess", VALUE, 0, "\"true\"",
     "adminAccess: must be true or false"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.selectors", VALUE, 0, "{}", "selectors: must be a list"},
    {CLAIM, TPL, "spec.devices.requests.0.exactly.capacity", VALUE, 0, "[]", "exactly.capacity: must be an object"},
    {CLAIM, TPL, "spec.devices.requests.0", VALUE, 0, "null", "requests[0]: must be an object"},
    {CLAIM, TPL, "status.allocation", VALUE, 0, "true", "status.allocation: must be an object"},
    {CLAIM, TPL, "status.allocation.devices.results.0.device", VALUE, 0, "null", "results[0].device: missing"},
    {CLAIM, TPL, "status.allocation.devices.results.0", VALUE, 0, "1", "results[0]: must be an object"},
    {CLAIM, TPL, "status.reservedFor.0", VALUE, 0, "\"train-0\"", "status.reservedFor[0]: must be an object"},
    {CLAIM, TPL, "status.reservedFor.0.uid", VALUE, 0, "1", "status.reservedFor[0].uid: must be a string"},
    {CLAIM, TPL, "status", VALUE, 0, "[]", "status: must be an object"},
    {CLASS, GPUCLS, "spec.selectors.0.cel.expression", VALUE, 0, "1", "expression: must be a string"},
    {CLASS, GPUCLS, "spec.selectors.0", VALUE, 0, "\"x\"", "spec.selectors[0]: must be an object"},
    {CLASS, GPUCLS, "spec.selectors.0.cel", VALUE, 0, "[]", "spec.selectors[0].cel: must be an object"},
    {CLASS, GPUCLS, "metadata.name", VALUE, 0, "null", "DeviceClass: metadata.name: missing"},
    {POD, POD0, "spec.resourceClaims.0.resourceClaimName", VALUE, 0, "\"c\"",
     "needs one of resourceClaimName and resourceClaimTemplateName"},
    {POD, POD0, "spec.resourceClaims.1.resourceClaimName", VALUE, 0, "null",
     "needs one of resourceClaimName and resourceClaimTemplateName"},
    {POD, POD0, "spec.resourceClaims.0.name", VALUE, 0, "null", "spec.resourceClaims[0].name: missing"},
    {POD, POD0, "spec.resourceClaims.0", VALUE, 0, "[]", "Pod default/train-0: spec.resourceClaims[0]: must be an object"},
    {POD, POD0, "status.resourceClaimStatuses.0", VALUE, 0, "7", "status.resourceClaimStatuses[0]: must be an object"},
    {POD, POD0, "status.resourceClaimStatuses.0.resourceClaimName", VALUE, 0, "false",
     "resourceClaimStatuses[0].resourceClaimName: must be a string"},
    {POD, POD0, "spec.resourceClaims", VALUE, 0, "{}", "spec.resourceClaims: must be a list"},
};

/* Sets the member at a dot-separated path (numbers index lists). Steals v. */
static void set_path(json_t *root, const char *path, json_t *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = root;
    char *save = NULL, *tok = strtok_r(buf, ".", &save);
    while (tok) {
        char *next = strtok_r(NULL, ".", &save);
        if (json_is_array(cur)) {
            size_t i = strtoul(tok, NULL, 10);
            ck_assert_msg(i < json_array_size(cur), "%s: no [%zu]", path, i);
            if (!next) {
                json_array_set_new(cur, i, v);
                return;
            }
            cur = json_array_get(cur, i);
        } else {
            ck_assert_msg(json_is_object(cur), "%s: %s is not in an object", path, tok);
            if (!next) {
                json_object_set_new(cur, tok, v);
                return;
            }
            cur = json_object_get(cur, tok);
        }
        tok = next;
    }
}

static json_t *fill_value(const bad_case *c)
{
    if (c->f == LONG_STR) {
        char *s = malloc((size_t)c->count + 1);
        memset(s, 'x', (size_t)c->count);
        s[c->count] = '\0';
        json_t *v = json_string(s);
        free(s);
        return v;
    }
    json_t *one = parse(c->json);
    if (c->f == VALUE)
        return one;
    json_t *v = c->f == LIST ? json_array() : json_object();
    for (int i = 0; i < c->count; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        if (c->f == LIST)
            json_array_append_new(v, json_deep_copy(one));
        else
            json_object_set_new(v, key, json_deep_copy(one));
    }
    json_decref(one);
    return v;
}

/* Decodes j as kind k: the return code; on failure the output must be all zero. */
static int decode_as(kind k, const json_t *j, gp_err *err)
{
    gp_dra_drivers t;
    dra_default_drivers(&t);
    int rc;
    switch (k) {
    case SLICE: {
        gp_dra_slice s;
        rc = dra_slice_decode(j, &t, &s, err);
        ck_assert(rc == 0 || all_zero(&s, sizeof s));
        dra_slice_free(&s);
        break;
    }
    case CLASS: {
        gp_dra_class c;
        rc = dra_class_decode(j, &c, err);
        ck_assert(rc == 0 || all_zero(&c, sizeof c));
        break;
    }
    case CLAIM: {
        gp_dra_claim c;
        rc = dra_claim_decode(j, &c, err);
        ck_assert(rc == 0 || all_zero(&c, sizeof c));
        dra_claim_free(&c);
        break;
    }
    default: {
        gp_dra_pod_claims pc;
        rc = dra_pod_claims(j, &pc, err);
        ck_assert(rc == 0 || all_zero(&pc, sizeof pc));
        break;
    }
    }
    return rc;
}

START_TEST(malformed)
{
    const bad_case *c = &bad[_i];
    json_t *j = load(c->file);
    gp_err err = {{0}};
    ck_assert_msg(decode_as(c->k, j, &err) == 0, "%s unchanged: %s", c->file, err.msg);
    set_path(j, c->path, fill_value(c));
    int rc = decode_as(c->k, j, &err);
    if (!c->msg) {
        ck_assert_msg(rc == 0, "%s %s: %s", c->file, c->path, err.msg);
    } else {
        ck_assert_msg(rc == -1, "%s %s: accepted", c->file, c->path);
        ck_assert_msg(strstr(err.msg, c->msg) != NULL, "%s %s: message \"%s\" lacks \"%s\"",
                      c->file, c->path, err.msg, c->msg);
    }
    /* a NULL error sink is allowed */
    ck_assert_int_eq(decode_as(c->k, j, NULL), rc);
    json_decref(j);
}
END_TEST

/* At the bound itself every list and string is accepted. */
START_TEST(at_the_bounds)
{
    json_t *j = load(NV);
    gp_err err = {{0}};
    json_t *devs = json_array();
    for (int i = 0; i < GP_DRA_DEVICES_MAX; i++) {
        json_t *d = json_deep_copy(json_array_get(json_object_get(json_object_get(j, "spec"),
                                                                   "devices"), (size_t)(i % 4)));
        char name[GP_DRA_NAME_MAX];
        snprintf(name, sizeof name, "%0*d", GP_DRA_NAME_MAX - 1, i);
        json_object_set_new(d, "name", json_string(name));
        json_array_append_new(devs, d);
    }
    set_path(j, "spec.devices", devs);
    gp_dra_drivers t;
    dra_default_drivers(&t);
    gp_dra_slice s;
    ck_assert_msg(dra_slice_decode(j, &t, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.ndevices, GP_DRA_DEVICES_MAX);
    ck_assert_int_eq(strlen(s.devices[127].name), GP_DRA_NAME_MAX - 1);
    ck_assert_int_eq(s.devices[127].mem_mib, 81559);
    dra_slice_free(&s);
    json_decref(j);

    j = load(TPL);
    json_t *refs = json_array();
    for (int i = 0; i < GP_DRA_RESERVED_MAX; i++)
        json_array_append_new(refs, json_pack("{s:s, s:s, s:s}", "resource", i % 2 ? "pods" : "x",
                                              "name", "p", "uid", "u"));
    set_path(j, "status.reservedFor", refs);
    gp_dra_claim k;
    ck_assert_msg(dra_claim_decode(j, &k, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(k.nreserved, GP_DRA_RESERVED_MAX);
    ck_assert_int_eq(k.nreserved_pods, GP_DRA_RESERVED_MAX / 2);
    dra_claim_free(&k);
    json_decref(j);

    j = load(POD0);
    json_t *pcs = json_array();
    for (int i = 0; i < GP_DRA_POD_CLAIMS_MAX; i++)
        json_array_append_new(pcs, json_pack("{s:s, s:s}", "name", "a", "resourceClaimName", "c"));
    set_path(j, "spec.resourceClaims", pcs);
    gp_dra_pod_claims pc;
    ck_assert_msg(dra_pod_claims(j, &pc, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(pc.n, GP_DRA_POD_CLAIMS_MAX);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------ garbage --- */

static const char *const garbage[] = {
    "null", "true", "42", "-1.5e300", "\"ResourceSlice\"", "[]", "[{}]", "{}",
    "{\"metadata\":null}", "{\"metadata\":7}", "{\"metadata\":{\"name\":[],\"uid\":{}}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":7,\"status\":7}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"driver\":\"d\",\"devices\":[null,1]}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"devices\":{\"requests\":[[]]}}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
    "\"((((((((\"}}]}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"resourceClaims\":[1]},\"status\":"
    "{\"resourceClaimStatuses\":[null]}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"status\":{\"allocation\":{\"devices\":"
    "{\"results\":{}}}}}",
    "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"devices\":"
    "[{\"name\":\"a\",\"capacity\":{\"memory\":{\"value\":9223372036854775807}},\"attributes\":"
    "{\"type\":{\"string\":null}}}]}}",
};

/* Every decoder takes any JSON: 0 or -1 with a message, the output zeroed on failure, free
 * callable after either. */
START_TEST(garbage_in)
{
    json_t *j = parse(garbage[_i]);
    for (kind k = SLICE; k <= POD; k++) {
        gp_err err = {{0}};
        int rc = decode_as(k, j, &err);
        ck_assert_msg(rc == 0 || rc == -1, "%s: %d", garbage[_i], rc);
        ck_assert_msg(rc == 0 || err.msg[0], "%s: -1 without a message", garbage[_i]);
    }
    json_decref(j);
    /* and the decoders take NULL */
    gp_err err = {{0}};
    for (kind k = SLICE; k <= POD; k++)
        ck_assert_int_eq(decode_as(k, NULL, &err), -1);
}
END_TEST

START_TEST(free_zeroed)
{
    gp_dra_slice s;
    gp_dra_claim c;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    dra_slice_free(&s);
    dra_claim_free(&c);
    dra_slice_free(NULL);
    dra_claim_free(NULL);
}
END_TEST

Suite *suite_dra(void);
Suite *suite_dra(void)
{
    Suite *s = suite_create("dra");
    TCase *t = tcase_create("decode");
    tcase_add_test(t, default_drivers);
    tcase_add_loop_test(t, captured_slices, 0, (int)GP_ARRAY_LEN(slices));
    tcase_add_test(t, mig_counters);
    tcase_add_test(t, slice_forms);
    tcase_add_loop_test(t, captured_classes, 0, (int)GP_ARRAY_LEN(classes));
    tcase_add_loop_test(t, cel_forms, 0, (int)GP_ARRAY_LEN(cels));
    tcase_add_loop_test(t, captured_claims, 0, (int)GP_ARRAY_LEN(claims));
    tcase_add_loop_test(t, claim_shapes, 0, (int)GP_ARRAY_LEN(claim_forms));
    tcase_add_test(t, request_forms);
    tcase_add_loop_test(t, pod_claims, 0, (int)GP_ARRAY_LEN(pods));
    tcase_add_loop_test(t, malformed, 0, (int)GP_ARRAY_LEN(bad));
    tcase_add_test(t, at_the_bounds);
    tcase_add_loop_test(t, garbage_in, 0, (int)GP_ARRAY_LEN(garbage));
    tcase_add_test(t, free_zeroed);
    suite_add_tcase(s, t);
    return s;
}
