/* test_annotations.c -- assignment <-> pod annotations: what bind writes (both profiles), round trips, malformed annotations. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "lib/util.h"

static json_t *squote_json(const char *s)
{
    char *t = xstrdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t je;
    json_t *v = json_loads(t, JSON_DECODE_ANY, &je);
    ck_assert_msg(v != NULL, "bad test JSON %s: %s", t, je.text);
    free(t);
    return v;
}

/* node-gpupack as captured: 4 x A100 40 GiB with UUIDs; GPU 5 has no UUID. */
static gp_node *test_node(void)
{
    gp_node *n = xcalloc(1, sizeof *n);
    gp_strlcpy(n->name, "node-gpupack", sizeof n->name);
    static const int idx[] = {0, 1, 2, 3, 5};
    for (int i = 0; i < 5; i++) {
        gp_gpu_info *g = &n->gpus[i].info;
        g->index = idx[i];
        if (idx[i] != 5)
            snprintf(g->uuid, sizeof g->uuid, "GPU-aaaaaaaa-000%d-4000-8000-00000000000%d", idx[i],
                     idx[i]);
        g->mem_total = idx[i] == 5 ? 16384 : 40960;
        g->core_total = 1000;
        g->healthy = true;
    }
    n->ngpus = 5;
    return n;
}

typedef struct {
    const char *name;
    bool init;
    int ngpus;
    gp_gpu_grant gpus[3];
} ctr_spec;

typedef struct {
    const char *what;
    gp_profile profile;
    int nctrs;
    ctr_spec ctrs[3];
    const char *assignment;   /* gpupack.io/assignment, as JSON */
    const char *visible;
    const char *ali_idx, *ali_pod, *ali_dev;   /* NULL: no aliyun keys */
} build_case;

#define U(i) "GPU-aaaaaaaa-000" #i "-4000-8000-00000000000" #i
static const build_case build_cases[] = {
    {"one container", GP_PROFILE_NATIVE, 1, {{"main", false, 1, {{2, 4096, 300}}}},
     "{\"node\":\"node-gpupack\",\"containers\":[{\"name\":\"main\",\"gpus\":[{\"index\":2,\"uuid\":\""
     U(2) "\",\"memMiB\":4096,\"core\":30}]}]}",
     U(2), NULL, NULL, NULL},
    /* gpu-pod-multi placed: init flag, a GPU without UUID, devices in index order */
    {"multi", GP_PROFILE_NATIVE, 3,
     {{"trainer", false, 2, {{5, 2048, 0}, {1, 2048, 0}}},
      {"sidecar", false, 1, {{1, 0, 300}}},
      {"init-weights", true, 1, {{0, 1024, 0}}}},
     "{\"node\":\"node-gpupack\",\"containers\":[{\"name\":\"trainer\",\"gpus\":[{\"index\":5,"
     "\"memMiB\":2048,\"core\":0},{\"index\":1,\"uuid\":\"" U(1) "\",\"memMiB\":2048,\"core\":0}]},"
     "{\"name\":\"sidecar\",\"gpus\":[{\"index\":1,\"uuid\":\"" U(1) "\",\"memMiB\":0,\"core\":30}]},"
     "{\"name\":\"init-weights\",\"init\":true,\"gpus\":[{\"index\":0,\"uuid\":\"" U(0)
     "\",\"memMiB\":1024,\"core\":0}]}]}",
     U(0) "," U(1) ",5", NULL, NULL, NULL},
    /* per-mille that is not a whole percent is written as a fraction */
    {"fractional core", GP_PROFILE_NATIVE, 1, {{"c", false, 1, {{3, 100, 333}}}},
     "{\"node\":\"node-gpupack\",\"containers\":[{\"name\":\"c\",\"gpus\":[{\"index\":3,\"uuid\":\""
     U(3) "\",\"memMiB\":100,\"core\":33.3}]}]}",
     U(3), NULL, NULL, NULL},
    /* aliyun: 4 GiB on GPU 1 of 40 GiB */
    {"aliyun", GP_PROFILE_ALIYUN, 1, {{"", false, 1, {{1, 4096, 0}}}},
     "{\"node\":\"node-gpupack\",\"containers\":[{\"name\":\"\",\"gpus\":[{\"index\":1,\"uuid\":\""
     U(1) "\",\"memMiB\":4096,\"core\":0}]}]}",
     U(1), "1", "4", "40"},
    {"aliyun, GPU without uuid", GP_PROFILE_ALIYUN, 1, {{"a", false, 1, {{5, 8192, 0}}}},
     "{\"node\":\"node-gpupack\",\"containers\":[{\"name\":\"a\",\"gpus\":[{\"index\":5,"
     "\"memMiB\":8192,\"core\":0}]}]}",
     "5", "5", "8", "16"},
};

static void fill(gp_assignment *a, const char *node, int nctrs, const ctr_spec *ctrs)
{
    memset(a, 0, sizeof *a);
    gp_strlcpy(a->node, node, sizeof a->node);
    a->nctrs = nctrs;
    for (int i = 0; i < nctrs; i++) {
        gp_strlcpy(a->ctrs[i].name, ctrs[i].name, sizeof a->ctrs[i].name);
        a->ctrs[i].init = ctrs[i].init;
        a->ctrs[i].ngpus = ctrs[i].ngpus;
        memcpy(a->ctrs[i].gpus, ctrs[i].gpus, sizeof ctrs[i].gpus);
    }
}

/* Same JSON value (key order and number spelling aside). */
static void assert_json_eq(const char *got, const char *want)
{
    ck_assert_ptr_nonnull(got);
    json_t *g = json_loads(got, 0, NULL), *w = json_loads(want, 0, NULL);
    ck_assert_msg(g && w && json_equal(g, w), "got %s\nwant %s", got, want);
    json_decref(g);
    json_decref(w);
}

static const char *ann_str(const json_t *ann, const char *key)
{
    return json_string_value(json_object_get(ann, key));
}

static void assert_same(const gp_assignment *x, const gp_assignment *y, const char *what)
{
    ck_assert_str_eq(x->node, y->node);
    ck_assert_int_eq(x->nctrs, y->nctrs);
    for (int c = 0; c < x->nctrs; c++) {
        ck_assert_str_eq(x->ctrs[c].name, y->ctrs[c].name);
        ck_assert_msg(x->ctrs[c].init == y->ctrs[c].init, "%s: ctr %d init", what, c);
        ck_assert_int_eq(x->ctrs[c].ngpus, y->ctrs[c].ngpus);
        for (int g = 0; g < x->ctrs[c].ngpus; g++) {
            const gp_gpu_grant *p = &x->ctrs[c].gpus[g], *q = &y->ctrs[c].gpus[g];
            ck_assert_msg(p->index == q->index && p->mem_mib == q->mem_mib && p->core == q->core,
                          "%s: ctr %d gpu %d: %d/%lld/%d vs %d/%lld/%d", what, c, g, p->index,
                          (long long)p->mem_mib, p->core, q->index, (long long)q->mem_mib,
                          q->core);
        }
    }
}

START_TEST(build_and_round_trip)
{
    const build_case *c = &build_cases[_i];
    gp_node *node = test_node();
    gp_assignment a;
    fill(&a, "node-gpupack", c->nctrs, c->ctrs);
    json_t *ann = annotations_build(&a, node, c->profile, 1024, "inference", 1763706000123456789);
    ck_assert_ptr_nonnull(ann);
    assert_json_eq(ann_str(ann, GP_ANN_ASSIGNMENT), c->assignment);
    char *alone = annotations_assignment_json(&a, node);
    assert_json_eq(alone, c->assignment);
    free(alone);
    ck_assert_str_eq(ann_str(ann, GP_ANN_VISIBLE), c->visible);
    ck_assert_str_eq(ann_str(ann, GP_ANN_ASSUME_TIME), "1763706000123456789");
    ck_assert_str_eq(ann_str(ann, GP_ANN_POLICY_USED), "inference");
    if (c->ali_idx) {
        ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_IDX), c->ali_idx);
        ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_POD), c->ali_pod);
        ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_DEV), c->ali_dev);
        ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_ASSIGNED), "false");
        ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_ASSUME_TIME), "1763706000123456789");
        ck_assert_uint_eq(json_object_size(ann), 9);
    } else {
        ck_assert_ptr_null(json_object_get(ann, GP_ANN_ALIYUN_IDX));
        ck_assert_uint_eq(json_object_size(ann), 4);
    }
    /* round trip through the gpupack key */
    gp_assignment back;
    gp_err err = {{0}};
    ck_assert_msg(annotations_decode(ann, "ignored", 1024, &back, &err) == 1, "%s", err.msg);
    assert_same(&a, &back, c->what);
    /* the aliyun keys alone restore one GPU with the memory in GiB */
    if (c->ali_idx) {
        json_object_del(ann, GP_ANN_ASSIGNMENT);
        ck_assert_msg(annotations_decode(ann, "node-from-spec", 1024, &back, &err) == 1, "%s",
                      err.msg);
        ck_assert_str_eq(back.node, "node-from-spec");
        ck_assert_int_eq(back.nctrs, 1);
        ck_assert_int_eq(back.ctrs[0].ngpus, 1);
        ck_assert_int_eq(back.ctrs[0].gpus[0].index, a.ctrs[0].gpus[0].index);
        ck_assert_int_eq(back.ctrs[0].gpus[0].mem_mib, a.ctrs[0].gpus[0].mem_mib);
    }
    json_decref(ann);
    free(node);
}
END_TEST

/* No node: indices stand in for UUIDs; no policy: no policy key; MiB aliyun unit. */
START_TEST(build_without_node)
{
    static const ctr_spec ctrs[] = {{"c", false, 2, {{3, 512, 0}, {0, 512, 0}}}};
    gp_assignment a;
    fill(&a, "n9", 1, ctrs);
    json_t *ann = annotations_build(&a, NULL, GP_PROFILE_ALIYUN, 1, NULL, 42);
    ck_assert_str_eq(ann_str(ann, GP_ANN_VISIBLE), "0,3");
    ck_assert_ptr_null(json_object_get(ann, GP_ANN_POLICY_USED));
    ck_assert_str_eq(ann_str(ann, GP_ANN_ASSUME_TIME), "42");
    ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_POD), "512");
    ck_assert_str_eq(ann_str(ann, GP_ANN_ALIYUN_DEV), "0");
    json_decref(ann);
}
END_TEST

/* -------------------------------------------------------- decoding -- */

typedef struct {
    const char *json;
    const char *node_name;
    int64_t unit;
    int rc;
    const char *node;
    int nctrs;
    int index0;
    int64_t mem0;
    int core0;
} decode_case;

static const decode_case decode_cases[] = {
    {"null", "n", 1024, 0, "", 0, 0, 0, 0},
    {"[]", "n", 1024, 0, "", 0, 0, 0, 0},
    {"{}", "n", 1024, 0, "", 0, 0, 0, 0},
    {"{'gpupack.io/visible-devices':'GPU-1','ALIYUN_COM_GPU_MEM_POD':'4'}", "n", 1024, 0, "", 0, 0, 0, 0},
    {"{'gpupack.io/assignment':'{\\'node\\':\\'n1\\',\\'containers\\':[]}'}", NULL, 1024, 1, "n1", 0, 0, 0, 0},
    /* core: missing = 0, integer or fraction percent */
    {"{'gpupack.io/assignment':'{\\'node\\':\\'n1\\',\\'containers\\':[{\\'name\\':\\'c\\',"
     "\\'gpus\\':[{\\'index\\':7,\\'memMiB\\':10}]}]}'}", NULL, 1024, 1, "n1", 1, 7, 10, 0},
    {"{'gpupack.io/assignment':'{\\'node\\':\\'n1\\',\\'containers\\':[{\\'name\\':\\'c\\',"
     "\\'gpus\\':[{\\'index\\':0,\\'memMiB\\':0,\\'core\\':12.5}]}]}'}", NULL, 1024, 1, "n1", 1, 0, 0, 125},
    {"{'gpupack.io/assignment':'{\\'node\\':\\'n1\\',\\'containers\\':[{\\'name\\':\\'c\\',"
     "\\'gpus\\':[{\\'index\\':4096,\\'memMiB\\':1,\\'core\\':100}]}]}'}", NULL, 1024, 1, "n1", 1, 4096, 1, 1000},
    /* gpupack key wins over the aliyun keys */
    {"{'gpupack.io/assignment':'{\\'node\\':\\'n1\\',\\'containers\\':[]}',"
     "'ALIYUN_COM_GPU_MEM_IDX':'1','ALIYUN_COM_GPU_MEM_POD':'4'}", "n2", 1024, 1, "n1", 0, 0, 0, 0},
    /* aliyun keys as the gpushare device plugin reads them */
    {"{'ALIYUN_COM_GPU_MEM_IDX':'1','ALIYUN_COM_GPU_MEM_POD':'4','ALIYUN_COM_GPU_MEM_DEV':'16',"
     "'ALIYUN_COM_GPU_MEM_ASSIGNED':'true','ALIYUN_COM_GPU_MEM_ASSUME_TIME':'1763706000123456789'}",
     "node-aliyun", 1024, 1, "node-aliyun", 1, 1, 4096, 0},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':'4'}", "node-aliyun", 1, 1,
     "node-aliyun", 1, 0, 4, 0},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':'4'}", "node-aliyun", 0, 1,
     "node-aliyun", 1, 0, 4096, 0},
};

START_TEST(decodes)
{
    const decode_case *c = &decode_cases[_i];
    json_t *ann = squote_json(c->json);
    gp_assignment a;
    memset(&a, 0x5a, sizeof a);
    gp_err err = {{0}};
    int rc = annotations_decode(ann, c->node_name, c->unit, &a, &err);
    ck_assert_msg(rc == c->rc, "case %d: rc %d (%s)", _i, rc, err.msg);
    ck_assert_str_eq(a.node, c->node);
    ck_assert_int_eq(a.nctrs, c->nctrs);
    if (c->nctrs) {
        ck_assert_int_eq(a.ctrs[0].ngpus, 1);
        ck_assert_int_eq(a.ctrs[0].gpus[0].index, c->index0);
        ck_assert_int_eq(a.ctrs[0].gpus[0].mem_mib, c->mem0);
        ck_assert_int_eq(a.ctrs[0].gpus[0].core, c->core0);
    }
    json_decref(ann);
}
END_TEST

typedef struct {
    const char *json;   /* the annotations object */
    const char *node_name;
    const char *msg;
} bad_case;

#define AS(x) "{'gpupack.io/assignment':'" x "'}"
#define NODE_C(ctrs) AS("{\\'node\\':\\'n\\',\\'containers\\':" ctrs "}")
#define ONE_GPU(g) NODE_C("[{\\'name\\':\\'c\\',\\'gpus\\':[" g "]}]")
#define W "annotation gpupack.io/assignment"

static const bad_case bad_cases[] = {
    {"{'gpupack.io/assignment':7}", "n", W ": must be a string"},
    {"{'gpupack.io/assignment':{}}", "n", W ": must be a string"},
    {AS("{"), "n", W ": invalid JSON"},
    {AS(""), "n", W ": invalid JSON"},
    {AS("not json"), "n", W ": invalid JSON"},
    {AS("{\\'node\\':\\'a\\',\\'node\\':\\'b\\',\\'containers\\':[]}"), "n", W ": invalid JSON"},
    {AS("[]"), "n", W ": \"node\""},
    {AS("{\\'containers\\':[]}"), "n", W ": \"node\""},
    {AS("{\\'node\\':1,\\'containers\\':[]}"), "n", W ": \"node\""},
    {AS("{\\'node\\':\\'n\\'}"), "n", W ": \"containers\""},
    {NODE_C("{}"), "n", W ": \"containers\""},
    {NODE_C("[7]"), "n", W ": containers[0]"},
    {NODE_C("[{\\'gpus\\':[]}]"), "n", W ": containers[0]"},
    {NODE_C("[{\\'name\\':\\'c\\'}]"), "n", W ": containers[0]"},
    {NODE_C("[{\\'name\\':\\'c\\',\\'gpus\\':{}}]"), "n", W ": containers[0]"},
    {NODE_C("[{\\'name\\':\\'c\\',\\'init\\':\\'yes\\',\\'gpus\\':[]}]"), "n", W ": containers[0]"},
    {NODE_C("[{\\'name\\':\\'c\\',\\'gpus\\':[]},{\\'name\\':5,\\'gpus\\':[]}]"), "n", W ": containers[1]"},
    {ONE_GPU("7"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'memMiB\\':1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':-1,\\'memMiB\\':1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':4097,\\'memMiB\\':1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':99999999999,\\'memMiB\\':1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':\\'0\\',\\'memMiB\\':1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':-1}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':1.5}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':1,\\'core\\':101}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':1,\\'core\\':-0.5}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':1,\\'core\\':\\'30\\'}"), "n", W ": containers[0].gpus[0]"},
    {ONE_GPU("{\\'index\\':0,\\'memMiB\\':1,\\'core\\':null}"), "n", W ": containers[0].gpus[0]"},
    /* aliyun keys */
    {"{'ALIYUN_COM_GPU_MEM_IDX':1,'ALIYUN_COM_GPU_MEM_POD':'4'}", "n", "annotation ALIYUN_COM_GPU_MEM_IDX: must be a string"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'one','ALIYUN_COM_GPU_MEM_POD':'4'}", "n", "annotation ALIYUN_COM_GPU_MEM_IDX"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'-1','ALIYUN_COM_GPU_MEM_POD':'4'}", "n", "annotation ALIYUN_COM_GPU_MEM_IDX"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0.5','ALIYUN_COM_GPU_MEM_POD':'4'}", "n", "annotation ALIYUN_COM_GPU_MEM_IDX"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'5000','ALIYUN_COM_GPU_MEM_POD':'4'}", "n", "annotation ALIYUN_COM_GPU_MEM_IDX: 5000 is not a device index"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0'}", "n", "annotation ALIYUN_COM_GPU_MEM_POD: must be a string"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':'1.5'}", "n", "annotation ALIYUN_COM_GPU_MEM_POD"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':''}", "n", "annotation ALIYUN_COM_GPU_MEM_POD"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':'9007199254740992'}", "n", "annotation ALIYUN_COM_GPU_MEM_POD: out of range"},
    {"{'ALIYUN_COM_GPU_MEM_IDX':'0','ALIYUN_COM_GPU_MEM_POD':'4'}", NULL, "without a node"},
};

START_TEST(rejects)
{
    const bad_case *c = &bad_cases[_i];
    json_t *ann = squote_json(c->json);
    gp_assignment a;
    gp_err err = {{0}};
    ck_assert_msg(annotations_decode(ann, c->node_name, 1024, &a, &err) == -1,
                  "case %d accepted: %s", _i, c->json);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, c->msg);
    json_decref(ann);
}
END_TEST

/* 16 containers of 16 GPUs each are the limits; one more of either fails. */
START_TEST(limits)
{
    for (int extra = 0; extra < 3; extra++) {
        json_t *ctrs = json_array();
        int nctrs = GP_MAX_CTRS + (extra == 1);
        for (int c = 0; c < nctrs; c++) {
            json_t *gpus = json_array();
            int ng = GP_MAX_GPUS_PER_CTR + (extra == 2 && c == 3);
            for (int g = 0; g < ng; g++)
                json_array_append_new(gpus, json_pack("{s:i,s:i,s:i}", "index", g, "memMiB", 1,
                                                      "core", 1));
            json_array_append_new(ctrs, json_pack("{s:s,s:o}", "name", "c", "gpus", gpus));
        }
        json_t *o = json_pack("{s:s,s:o}", "node", "n", "containers", ctrs);
        char *text = json_dumps(o, JSON_COMPACT);
        json_t *ann = json_pack("{s:s}", GP_ANN_ASSIGNMENT, text);
        gp_assignment a;
        gp_err err = {{0}};
        int rc = annotations_decode(ann, NULL, 1024, &a, &err);
        if (extra == 0) {
            ck_assert_msg(rc == 1, "%s", err.msg);
            ck_assert_int_eq(a.nctrs, GP_MAX_CTRS);
            ck_assert_int_eq(a.ctrs[GP_MAX_CTRS - 1].ngpus, GP_MAX_GPUS_PER_CTR);
            ck_assert_int_eq(a.ctrs[GP_MAX_CTRS - 1].gpus[GP_MAX_GPUS_PER_CTR - 1].core, 10);
        } else {
            ck_assert_int_eq(rc, -1);
            ck_assert_msg(strstr(err.msg, extra == 1 ? "\"containers\"" : "containers[3]"), "%s",
                          err.msg);
        }
        json_decref(ann);
        free(text);
        json_decref(o);
    }
}
END_TEST

/* The assignment text cut at every byte is refused (never accepted, never a
 * crash); only the whole text decodes. */
START_TEST(truncated_at_every_offset)
{
    const char *full = build_cases[1].assignment;
    size_t len = strlen(full);
    for (size_t k = 0; k <= len; k++) {
        char *part = xstrndup(full, k);
        json_t *ann = json_pack("{s:s}", GP_ANN_ASSIGNMENT, part);
        gp_assignment a;
        gp_err err = {{0}};
        int rc = annotations_decode(ann, NULL, 1024, &a, &err);
        if (k == len) {
            ck_assert_int_eq(rc, 1);
            ck_assert_int_eq(a.nctrs, 3);
        } else {
            ck_assert_msg(rc == -1, "prefix of %zu bytes accepted", k);
            ck_assert_msg(strstr(err.msg, W) != NULL, "%zu: %s", k, err.msg);
        }
        json_decref(ann);
        free(part);
    }
}
END_TEST

/* BUG (lead): memMiB has no upper bound, so an annotation can carry
 * INT64_MAX; gp_assignment_holds then sums two such grants on one GPU and
 * overflows (UB; the store's mem_used wraps negative and the GPU looks free).
 * The annotation is user-writable (anyone who can edit the pod). Proposed fix:
 * in decode_gpupack bound memMiB like the inventory bounds memoryMiB (1..16 TiB:
 * MAX_GPU_MEM_MIB), failing with containers[i].gpus[k]. */
START_TEST(bug_absurd_memory_accepted)
{
    json_t *ann = squote_json(ONE_GPU("{\\'index\\':0,\\'memMiB\\':9223372036854775807}"));
    gp_assignment a;
    gp_err err = {{0}};
    int rc = annotations_decode(ann, NULL, 1024, &a, &err);
    ck_assert_msg(rc == -1, "memMiB 9223372036854775807 accepted");
    ck_assert_msg(strstr(err.msg, "containers[0].gpus[0]") != NULL, "%s", err.msg);
    json_decref(ann);
}
END_TEST

Suite *suite_annotations(void);
Suite *suite_annotations(void)
{
    Suite *s = suite_create("annotations");
    TCase *t = tcase_create("codec");
    tcase_add_loop_test(t, build_and_round_trip, 0, (int)GP_ARRAY_LEN(build_cases));
    tcase_add_test(t, build_without_node);
    tcase_add_loop_test(t, decodes, 0, (int)GP_ARRAY_LEN(decode_cases));
    tcase_add_loop_test(t, rejects, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(t, limits);
    tcase_add_test(t, truncated_at_every_offset);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("bugs");
    tcase_add_test(b, bug_absurd_memory_accepted);
    suite_add_tcase(s, b);
    return s;
}
