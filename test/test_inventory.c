/* test_inventory.c -- Node JSON -> GPUs from the four sources (captured nodes + HAMi fixtures), precedence, and every malformed form. */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "model/inventory.h"
#include "lib/util.h"

#define FIX "test/fixtures/decode/"

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *v = json_load_file(path, 0, &je);
    ck_assert_msg(v != NULL, "%s: %s", path, je.text);
    return v;
}

typedef struct {
    int index;
    const char *uuid;
    const char *model;
    int64_t mem;
    int core;
    bool healthy;
} gpu_want;

typedef struct {
    const char *file;
    int64_t unit;
    const char *name;
    const char *source;
    int n;
    gpu_want gpus[4];
} fixture_case;

#define A100 "A100-SXM4-40GB"
#define V100 "NVIDIA-Tesla V100-PCIE-32GB"
static const fixture_case fixtures[] = {
    {FIX "node-gpupack.json", 1024, "node-gpupack", "gpupack", 4,
     {{0, "GPU-aaaaaaaa-0000-4000-8000-000000000000", A100, 40960, 1000, true},
      {1, "GPU-aaaaaaaa-0001-4000-8000-000000000001", A100, 40960, 1000, true},
      {2, "GPU-aaaaaaaa-0002-4000-8000-000000000002", A100, 40960, 1000, true},
      {3, "GPU-aaaaaaaa-0003-4000-8000-000000000003", A100, 40960, 1000, false}}},
    {FIX "node-nfd.json", 1024, "node-nfd", "gfd", 4,
     {{0, "", "Tesla-T4", 16384, 1000, true},
      {1, "", "Tesla-T4", 16384, 1000, true},
      {2, "", "Tesla-T4", 16384, 1000, true},
      {3, "", "Tesla-T4", 16384, 1000, true}}},
    /* capacity aliyun.com/gpu-count "2", aliyun.com/gpu-mem "32" (GiB) */
    {FIX "node-aliyun.json", 1024, "node-aliyun", "aliyun", 2,
     {{0, "", "", 16384, 1000, true}, {1, "", "", 16384, 1000, true}}},
    {FIX "node-aliyun.json", 1, "node-aliyun", "aliyun", 2,
     {{0, "", "", 16, 1000, true}, {1, "", "", 16, 1000, true}}},
    {FIX "node-aliyun.json", 0, "node-aliyun", "aliyun", 2,   /* 0 = default GiB */
     {{0, "", "", 16384, 1000, true}, {1, "", "", 16384, 1000, true}}},
    /* unsorted indices, devcore 50 -> 500, devcore 0 -> whole GPU, health false */
    {FIX "node-hami.json", 1024, "node-hami", "hami", 3,
     {{0, "GPU-7e570000-0000-4000-8000-000000000000", V100, 32768, 1000, true},
      {1, "GPU-7e570000-0001-4000-8000-000000000001", V100, 32768, 500, false},
      {2, "GPU-7e570000-0002-4000-8000-000000000002", "NVIDIA-Tesla T4", 15360, 1000, true}}},
    /* no "index": position in the array; no "health": healthy */
    {FIX "node-hami-noindex.json", 1024, "node-hami-noindex", "hami", 2,
     {{0, "GPU-1", "NVIDIA-A10", 24576, 1000, true}, {1, "GPU-2", "NVIDIA-A10", 24576, 1000, true}}},
};

static void check_gpus(const char *what, const gp_inventory *inv, const char *source, int n,
                       const gpu_want *w)
{
    ck_assert_msg(strcmp(inv->source, source) == 0, "%s: source \"%s\", want \"%s\"", what,
                  inv->source, source);
    ck_assert_msg(inv->n == n, "%s: %d GPUs, want %d", what, inv->n, n);
    for (int i = 0; i < n; i++) {
        const gp_gpu_info *g = &inv->gpus[i];
        ck_assert_msg(g->index == w[i].index, "%s: gpus[%d].index %d", what, i, g->index);
        ck_assert_msg(strcmp(g->uuid, w[i].uuid) == 0, "%s: gpus[%d].uuid %s", what, i, g->uuid);
        ck_assert_msg(strcmp(gp_model_name(g->model), w[i].model) == 0, "%s: gpus[%d].model %s", what, i,
                      gp_model_name(g->model));
        ck_assert_msg(g->mem_total == w[i].mem, "%s: gpus[%d].mem %lld", what, i,
                      (long long)g->mem_total);
        ck_assert_msg(g->core_total == w[i].core, "%s: gpus[%d].core %d", what, i, g->core_total);
        ck_assert_msg(g->healthy == w[i].healthy, "%s: gpus[%d].healthy", what, i);
    }
}

START_TEST(captured_nodes)
{
    const fixture_case *c = &fixtures[_i];
    json_t *node = load_json(c->file);
    gp_inventory inv;
    gp_err err = {{0}};
    ck_assert_msg(inventory_decode(node, c->unit, &inv, &err) == 0, "%s: %s", c->file, err.msg);
    check_gpus(c->file, &inv, c->source, c->n, c->gpus);
    ck_assert_str_eq(inventory_node_name(node), c->name);
    json_decref(node);
}
END_TEST

/* The captured NodeList decodes item by item, each from its own source. */
START_TEST(captured_list)
{
    json_t *list = load_json(FIX "nodes-list.json");
    const json_t *items = json_object_get(list, "items");
    ck_assert_uint_eq(json_array_size(items), 3);
    int total = 0, seen = 0;
    size_t i;
    json_t *node;
    json_array_foreach(items, i, node) {
        gp_inventory inv;
        gp_err err;
        ck_assert(inventory_decode(node, 1024, &inv, &err) == 0);
        const char *name = inventory_node_name(node);
        const char *want = strcmp(name, "node-gpupack") == 0 ? "gpupack"
                           : strcmp(name, "node-nfd") == 0   ? "gfd"
                                                             : "aliyun";
        ck_assert_str_eq(inv.source, want);
        total += inv.n;
        seen++;
    }
    ck_assert_int_eq(seen, 3);
    ck_assert_int_eq(total, 4 + 4 + 2);
    json_decref(list);
}
END_TEST

/* ------------------------------------------------------- inline nodes -- */

/* Sources, first found wins: gpupack > hami > gfd > aliyun. */
#define ANN_GPUPACK "\"gpupack.io/gpus\":\"[{\\\"index\\\":5,\\\"memoryMiB\\\":1000}]\""
#define ANN_HAMI "\"hami.io/node-nvidia-register\":\"[{\\\"index\\\":6,\\\"devmem\\\":2000}]\""
#define LBL_GFD "\"nvidia.com/gpu.count\":\"1\",\"nvidia.com/gpu.memory\":\"3000\""
#define CAP_ALIYUN "\"aliyun.com/gpu-count\":\"1\",\"aliyun.com/gpu-mem\":\"4\""

typedef struct {
    const char *json;
    const char *source;
    int n;
    int index0;
    int64_t mem0;
} order_case;

static const order_case order_cases[] = {
    {"{\"metadata\":{\"annotations\":{" ANN_GPUPACK "," ANN_HAMI "},\"labels\":{" LBL_GFD
     "}},\"status\":{\"capacity\":{" CAP_ALIYUN "}}}", "gpupack", 1, 5, 1000},
    {"{\"metadata\":{\"annotations\":{" ANN_HAMI "},\"labels\":{" LBL_GFD
     "}},\"status\":{\"capacity\":{" CAP_ALIYUN "}}}", "hami", 1, 6, 2000},
    {"{\"metadata\":{\"labels\":{" LBL_GFD "}},\"status\":{\"capacity\":{" CAP_ALIYUN "}}}",
     "gfd", 1, 0, 3000},
    {"{\"metadata\":{},\"status\":{\"capacity\":{" CAP_ALIYUN "}}}", "aliyun", 1, 0, 4096},
    /* GFD needs count and memory; one alone is not a source */
    {"{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":\"1\"}},\"status\":{\"capacity\":{"
     CAP_ALIYUN "}}}", "aliyun", 1, 0, 4096},
    {"{\"metadata\":{\"labels\":{\"nvidia.com/gpu.memory\":\"3000\"}}}", "", 0, 0, 0},
    /* aliyun needs both capacities */
    {"{\"status\":{\"capacity\":{\"aliyun.com/gpu-mem\":\"4\"}}}", "", 0, 0, 0},
    {"{\"metadata\":{\"name\":\"cpu\"},\"status\":{\"capacity\":{\"cpu\":\"16\"}}}", "", 0, 0, 0},
    {"{}", "", 0, 0, 0},
    /* zero GPUs is a valid answer from a present source */
    {"{\"metadata\":{\"annotations\":{\"gpupack.io/gpus\":\"[]\"}}}", "gpupack", 0, 0, 0},
    {"{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":\"0\",\"nvidia.com/gpu.memory\":\"1\"}}}",
     "gfd", 0, 0, 0},
    /* the optional "core" of the gpupack form: percent -> per-mille */
    {"{\"metadata\":{\"annotations\":{\"gpupack.io/gpus\":\"[{\\\"index\\\":0,\\\"memoryMiB\\\":"
     "8,\\\"core\\\":40,\\\"healthy\\\":false}]\"}}}", "gpupack", 1, 0, 8},
    /* GFD memory as a quantity */
    {"{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":\"2\",\"nvidia.com/gpu.memory\":\"16Ki\"}}}",
     "gfd", 2, 0, 16384},
};

START_TEST(source_order)
{
    const order_case *c = &order_cases[_i];
    json_error_t je;
    json_t *node = json_loads(c->json, 0, &je);
    ck_assert_msg(node != NULL, "case %d: %s", _i, je.text);
    gp_inventory inv;
    gp_err err = {{0}};
    ck_assert_msg(inventory_decode(node, 1024, &inv, &err) == 0, "case %d: %s", _i, err.msg);
    ck_assert_msg(strcmp(inv.source, c->source) == 0, "case %d: source %s", _i, inv.source);
    ck_assert_int_eq(inv.n, c->n);
    if (c->n) {
        ck_assert_int_eq(inv.gpus[0].index, c->index0);
        ck_assert_int_eq(inv.gpus[0].mem_total, c->mem0);
    }
    json_decref(node);
}
END_TEST

START_TEST(gpupack_core_and_health)
{
    json_t *node = json_loads(order_cases[11].json, 0, NULL);
    gp_inventory inv;
    gp_err err;
    ck_assert(inventory_decode(node, 1024, &inv, &err) == 0);
    ck_assert_int_eq(inv.gpus[0].core_total, 400);
    ck_assert(!inv.gpus[0].healthy);
    json_decref(node);
}
END_TEST

/* --------------------------------------------------------- malformed -- */

typedef struct {
    const char *json;
    const char *msg;   /* the error names the field */
} bad_case;

#define GP_NODE(arr) "{\"metadata\":{\"annotations\":{\"gpupack.io/gpus\":" arr "}}}"
#define HAMI_NODE(arr) "{\"metadata\":{\"annotations\":{\"hami.io/node-nvidia-register\":" arr "}}}"
#define GFD_NODE(cnt, mem) \
    "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.count\":" cnt ",\"nvidia.com/gpu.memory\":" mem "}}}"
#define ALI_NODE(cnt, mem) \
    "{\"status\":{\"capacity\":{\"aliyun.com/gpu-count\":" cnt ",\"aliyun.com/gpu-mem\":" mem "}}}"
#define G1(extra) "\"[{\\\"index\\\":0,\\\"memoryMiB\\\":1024" extra "}]\""
#define H1(extra) "\"[{\\\"index\\\":0,\\\"devmem\\\":1024" extra "}]\""

static const bad_case bad_cases[] = {
    {"[]", "Node"},
    {"\"node\"", "Node"},
    /* gpupack.io/gpus */
    {GP_NODE("42"), "annotation gpupack.io/gpus: must be a string"},
    {GP_NODE("\"[{\""), "annotation gpupack.io/gpus: invalid JSON"},
    {GP_NODE("\"\""), "annotation gpupack.io/gpus: invalid JSON"},
    {GP_NODE("\"{}\""), "annotation gpupack.io/gpus: must be a JSON array"},
    {GP_NODE("\"[1]\""), "gpupack.io/gpus[0]: must be an object"},
    {GP_NODE("\"[{\\\"memoryMiB\\\":1024}]\""), "gpupack.io/gpus[0].index"},
    {GP_NODE("\"[{\\\"index\\\":-1,\\\"memoryMiB\\\":1024}]\""), "gpupack.io/gpus[0].index"},
    {GP_NODE("\"[{\\\"index\\\":4097,\\\"memoryMiB\\\":1024}]\""), "gpupack.io/gpus[0].index"},
    {GP_NODE("\"[{\\\"index\\\":99999999999999,\\\"memoryMiB\\\":1024}]\""), "[0].index"},
    {GP_NODE("\"[{\\\"index\\\":\\\"0\\\",\\\"memoryMiB\\\":1024}]\""), "[0].index"},
    {GP_NODE("\"[{\\\"index\\\":1.0,\\\"memoryMiB\\\":1024}]\""), "[0].index"},
    {GP_NODE("\"[{\\\"index\\\":0}]\""), "gpupack.io/gpus[0].memoryMiB"},
    {GP_NODE("\"[{\\\"index\\\":0,\\\"memoryMiB\\\":0}]\""), "[0].memoryMiB"},
    {GP_NODE("\"[{\\\"index\\\":0,\\\"memoryMiB\\\":17592186044417}]\""), "[0].memoryMiB"},
    {GP_NODE("\"[{\\\"index\\\":0,\\\"memoryMiB\\\":\\\"40Gi\\\"}]\""), "[0].memoryMiB"},
    {GP_NODE(G1(",\\\"core\\\":0")), "[0].core"},
    {GP_NODE(G1(",\\\"core\\\":101")), "[0].core"},
    {GP_NODE(G1(",\\\"core\\\":null")), "[0].core"},
    {GP_NODE(G1(",\\\"uuid\\\":7")), "[0].uuid"},
    {GP_NODE(G1(",\\\"uuid\\\":\\\"GPU-0123456789012345678901234567890123456789012345678901234567890"
                "12345678901234567890123456789ABCDEFGHIJ\\\"")), "[0].uuid"},
    {GP_NODE(G1(",\\\"model\\\":[]")), "[0].model"},
    {GP_NODE(G1(",\\\"model\\\":\\\"A100-SXM4-40GB-0123456789012345678901234567890123456789012345"
                "6789\\\"")), "[0].model"},
    {GP_NODE(G1(",\\\"healthy\\\":\\\"yes\\\"")), "[0].healthy"},
    {GP_NODE(G1(",\\\"healthy\\\":1")), "[0].healthy"},
    {GP_NODE("\"[{\\\"index\\\":0,\\\"memoryMiB\\\":1},{\\\"index\\\":0,\\\"memoryMiB\\\":2}]\""),
     "GPU index 0 appears twice"},
    {GP_NODE("\"[{\\\"index\\\":0,\\\"index\\\":1,\\\"memoryMiB\\\":1}]\""), "invalid JSON"},
    /* HAMi */
    {HAMI_NODE("true"), "annotation hami.io/node-nvidia-register: must be a string"},
    {HAMI_NODE("\"GPU-1,10,32768,100,NVIDIA-Tesla V100,0,true:\""),
     "hami.io/node-nvidia-register: invalid JSON"},
    {HAMI_NODE("\"{\\\"devmem\\\":1}\""), "hami.io/node-nvidia-register: must be a JSON array"},
    {HAMI_NODE("\"[null]\""), "hami.io/node-nvidia-register[0]: must be an object"},
    {HAMI_NODE("\"[{\\\"index\\\":0}]\""), "hami.io/node-nvidia-register[0].devmem"},
    {HAMI_NODE("\"[{\\\"index\\\":0,\\\"devmem\\\":-32768}]\""), "[0].devmem"},
    {HAMI_NODE("\"[{\\\"index\\\":0,\\\"devmem\\\":32768.5}]\""), "[0].devmem"},
    {HAMI_NODE(H1(",\\\"devcore\\\":101")), "[0].devcore"},
    {HAMI_NODE(H1(",\\\"devcore\\\":-1")), "[0].devcore"},
    {HAMI_NODE("\"[{\\\"index\\\":5000,\\\"devmem\\\":1}]\""), "[0].index"},
    {HAMI_NODE(H1(",\\\"id\\\":7")), "[0].id"},
    {HAMI_NODE(H1(",\\\"type\\\":{}")), "[0].type"},
    {HAMI_NODE(H1(",\\\"health\\\":\\\"true\\\"")), "[0].health"},
    {HAMI_NODE("\"[{\\\"index\\\":1,\\\"devmem\\\":1},{\\\"devmem\\\":1}]\""),
     "GPU index 1 appears twice"},
    /* GPU feature discovery labels */
    {GFD_NODE("\"abc\"", "\"16384\""), "label nvidia.com/gpu.count"},
    {GFD_NODE("\"1.5\"", "\"16384\""), "label nvidia.com/gpu.count"},
    {GFD_NODE("\"-1\"", "\"16384\""), "label nvidia.com/gpu.count"},
    {GFD_NODE("\"65\"", "\"16384\""), "label nvidia.com/gpu.count"},
    {GFD_NODE("4", "\"16384\""), "label nvidia.com/gpu.count: must be a string"},
    {GFD_NODE("\"4\"", "\"0\""), "label nvidia.com/gpu.memory"},
    {GFD_NODE("\"4\"", "\"\""), "label nvidia.com/gpu.memory"},
    {GFD_NODE("\"4\"", "16384"), "label nvidia.com/gpu.memory: must be a string"},
    {GFD_NODE("\"4\"", "\"9999999999999999999Ki\""), "label nvidia.com/gpu.memory"},
    {GFD_NODE("\"4\"", "\"17592186044417\""), "label nvidia.com/gpu.memory"},
    /* aliyun capacity */
    {ALI_NODE("\"x\"", "\"32\""), "capacity aliyun.com/gpu-count"},
    {ALI_NODE("\"2\"", "\"32.5\""), "capacity aliyun.com/gpu-mem"},
    {ALI_NODE("2", "\"32\""), "capacity aliyun.com/gpu-count"},
    {ALI_NODE("\"2\"", "\"1\""), "capacity aliyun.com/gpu-mem"},   /* half a GiB each */
    {ALI_NODE("\"1\"", "\"16777216\""), "capacity aliyun.com/gpu-mem"},   /* 16 Mi GiB */
    {ALI_NODE("\"100\"", "\"32\""), "capacity aliyun.com/gpu-count"},
    /* a malformed first source does not fall back to the next one */
    {"{\"metadata\":{\"annotations\":{\"gpupack.io/gpus\":\"oops\"},\"labels\":{" LBL_GFD "}}}",
     "annotation gpupack.io/gpus"},
};

/* Host resources from status.allocatable (0 when absent or malformed; never
 * an error: the GPU inventory does not depend on them). */
START_TEST(allocatable_host_resources)
{
    static const struct {
        const char *json;
        int64_t cpu, mem;
    } cases[] = {
        {"{\"status\":{\"allocatable\":{\"cpu\":\"3500m\",\"memory\":\"16Gi\"}}}", 3500, 16384},
        {"{\"status\":{\"allocatable\":{\"cpu\":\"96\",\"memory\":\"785738Mi\"}}}", 96000, 785738},
        {"{\"status\":{\"allocatable\":{\"cpu\":\"lots\",\"memory\":12}}}", 0, 0},
        {"{\"status\":{\"capacity\":{\"cpu\":\"8\"}}}", 0, 0},
        {"{}", 0, 0},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        json_error_t je;
        json_t *node = json_loads(cases[i].json, 0, &je);
        ck_assert_msg(node != NULL, "%s", je.text);
        gp_inventory inv;
        gp_err err;
        ck_assert_int_eq(inventory_decode(node, 1024, &inv, &err), 0);
        ck_assert_int_eq(inv.cpu_alloc_milli, cases[i].cpu);
        ck_assert_int_eq(inv.mem_alloc_mib, cases[i].mem);
        json_decref(node);
    }
}
END_TEST

START_TEST(malformed)
{
    const bad_case *c = &bad_cases[_i];
    json_error_t je;
    json_t *node = json_loads(c->json, JSON_DECODE_ANY, &je);
    ck_assert_msg(node != NULL, "case %d: %s", _i, je.text);
    gp_inventory inv;
    memset(&inv, 0x5a, sizeof inv);
    gp_err err = {{0}};
    ck_assert_msg(inventory_decode(node, 1024, &inv, &err) == -1, "case %d accepted: %s", _i,
                  c->json);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, c->msg);
    ck_assert_int_eq(inv.n, 0);
    ck_assert_str_eq(inv.source, "");
    json_decref(node);
}
END_TEST

/* 64 GPUs are the limit; 65 are rejected, by count, in both JSON sources. */
static char *gpus_array(int n, const char *memkey)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    ck_assert(gp_buf_append(&b, "[", 1) == 0);
    for (int i = 0; i < n; i++)
        ck_assert(gp_buf_printf(&b, "%s{\"index\":%d,\"%s\":1024}", i ? "," : "", i, memkey) == 0);
    ck_assert(gp_buf_append(&b, "]", 1) == 0);
    return b.data;
}

START_TEST(gpu_count_limit)
{
    static const char *const keys[][2] = {{"gpupack.io/gpus", "memoryMiB"},
                                          {"hami.io/node-nvidia-register", "devmem"}};
    for (size_t k = 0; k < GP_ARRAY_LEN(keys); k++) {
        for (int n = GP_MAX_GPUS_PER_NODE; n <= GP_MAX_GPUS_PER_NODE + 1; n++) {
            char *arr = gpus_array(n, keys[k][1]);
            json_t *node = json_pack("{s{s{ss}}}", "metadata", "annotations", keys[k][0], arr);
            gp_inventory inv;
            gp_err err = {{0}};
            int rc = inventory_decode(node, 1024, &inv, &err);
            if (n == GP_MAX_GPUS_PER_NODE) {
                ck_assert_msg(rc == 0, "%s: %s", keys[k][0], err.msg);
                ck_assert_int_eq(inv.n, n);
                ck_assert_int_eq(inv.gpus[n - 1].index, n - 1);
            } else {
                ck_assert_int_eq(rc, -1);
                ck_assert_msg(strstr(err.msg, keys[k][0]) && strstr(err.msg, "more than 64"), "%s",
                              err.msg);
            }
            json_decref(node);
            free(arr);
        }
    }
}
END_TEST

START_TEST(node_name)
{
    json_t *a = json_loads("{\"metadata\":{\"name\":7}}", 0, NULL);
    ck_assert_ptr_null(inventory_node_name(a));
    ck_assert_ptr_null(inventory_node_name(NULL));
    json_decref(a);
}
END_TEST

Suite *suite_inventory(void);
Suite *suite_inventory(void)
{
    Suite *s = suite_create("inventory");
    TCase *t = tcase_create("decode");
    tcase_add_loop_test(t, captured_nodes, 0, (int)GP_ARRAY_LEN(fixtures));
    tcase_add_test(t, captured_list);
    tcase_add_loop_test(t, source_order, 0, (int)GP_ARRAY_LEN(order_cases));
    tcase_add_test(t, gpupack_core_and_health);
    tcase_add_loop_test(t, malformed, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(t, gpu_count_limit);
    tcase_add_test(t, node_name);
    tcase_add_test(t, allocatable_host_resources);
    suite_add_tcase(s, t);
    return s;
}
