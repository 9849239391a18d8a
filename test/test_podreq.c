/* test_podreq.c -- Pod JSON -> gp_pod_req: captured pods and scheduler bodies, native and aliyun profiles, and errors that name the field. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/podreq.h"
#include "lib/util.h"

#define FIX "test/fixtures/decode/"

/* Inline JSON is written with ' for " to keep the tables readable. */
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

/* A file, then a path of object keys inside it ("body.Pod"), borrowed from root. */
static const json_t *dig(const json_t *root, const char *path)
{
    const json_t *v = root;
    char *p = xstrdup(path), *save = NULL;
    for (char *k = strtok_r(p, ".", &save); k; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    free(p);
    ck_assert_msg(v != NULL, "no %s", path);
    return v;
}

typedef enum { NAMES_DEFAULT, NAMES_GIB, NAMES_ALIYUN_MIB, NAMES_NO_ALIYUN, NAMES_RENAMED } names_kind;

static void names_for(names_kind k, gp_resource_names *n)
{
    podreq_default_names(n);
    switch (k) {
    case NAMES_GIB:
        n->mem_unit_mib = 1024;
        break;
    case NAMES_ALIYUN_MIB:
        n->aliyun_unit_mib = 1;
        break;
    case NAMES_NO_ALIYUN:
        n->aliyun_mem[0] = '\0';
        break;
    case NAMES_RENAMED:
        gp_strlcpy(n->mem, "example.com/vram", sizeof n->mem);
        gp_strlcpy(n->count, "example.com/gpus", sizeof n->count);
        gp_strlcpy(n->core, "example.com/sm", sizeof n->core);
        break;
    default:
        break;
    }
}

START_TEST(default_names)
{
    gp_resource_names n;
    memset(&n, 0x5a, sizeof n);
    podreq_default_names(&n);
    ck_assert_str_eq(n.mem, "gpupack.io/gpu-mem");
    ck_assert_str_eq(n.count, "gpupack.io/gpu-count");
    ck_assert_str_eq(n.core, "gpupack.io/gpu-core");
    ck_assert_str_eq(n.aliyun_mem, "aliyun.com/gpu-mem");
    ck_assert_int_eq(n.mem_unit_mib, 1);
    ck_assert_int_eq(n.aliyun_unit_mib, 1024);
}
END_TEST

typedef struct {
    const char *name;
    bool init;
    int count;
    int64_t mem;
    int permille;
    int core;
} ctr_want;

typedef struct {
    const char *file;   /* fixture file, or NULL: `json` is inline */
    const char *path;   /* inside the file; NULL = the whole file */
    const char *json;
    names_kind names;
    gp_profile profile;
    const char *ns, *name, *uid, *models, *policy;
    int64_t cpu_milli, host_mem_mib;
    int nctrs;
    ctr_want ctrs[4];
} ok_case;

#define MULTI_UID "c9a1de39-2f3c-463e-a1fd-355731ab0ad1"
/* gpu-pod-multi: trainer 2 x 2048 MiB, a core-only sidecar (30 %), init-weights 1024 MiB;
 * cpu 500m + 100m (init 100m), memory 1Gi + 128Mi. */
#define MULTI_CTRS                                                                      \
    3, {{"trainer", false, 2, 2048, 0, 0}, {"sidecar", false, 1, 0, 0, 300},            \
        {"init-weights", true, 1, 1024, 0, 0}}

#define P(ctrs) "{'metadata':{'name':'p','namespace':'ns1','uid':'u1'},'spec':{'containers':[" ctrs "]}}"
#define C(name, res) "{'name':'" name "','resources':" res "}"
#define LIM(x) "{'limits':{" x "}}"

static const ok_case ok_cases[] = {
    {FIX "pod-gpu-multi.json", NULL, NULL, NAMES_DEFAULT, GP_PROFILE_NATIVE, "default",
     "gpu-pod-multi", MULTI_UID, "", "", 600, 1152, MULTI_CTRS},
    /* the same pod as kube-scheduler sent it to the extender */
    {FIX "filter-multi.json", "body.Pod", NULL, NAMES_DEFAULT, GP_PROFILE_NATIVE, "default",
     "gpu-pod-multi", MULTI_UID, "", "", 600, 1152, MULTI_CTRS},
    {FIX "pod-gpu-4096.json", NULL, NULL, NAMES_DEFAULT, GP_PROFILE_NATIVE, "default",
     "gpu-pod-4096", "1bcace8b-dc85-4501-8882-6b86556a9821", "", "", 0, 0, 1,
     {{"main", false, 1, 4096, 0, 0}}},
    {FIX "pod-gpu-4096.json", NULL, NULL, NAMES_GIB, GP_PROFILE_NATIVE, "default",
     "gpu-pod-4096", "1bcace8b-dc85-4501-8882-6b86556a9821", "", "", 0, 0, 1,
     {{"main", false, 1, 4096 * 1024, 0, 0}}},
    {FIX "pod-cpu.json", NULL, NULL, NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "cpu-pod",
     NULL, "", "", 250, 256, 0, {{0}}},
    /* filter-1: aliyun.com/gpu-mem "4" (GiB by default) */
    {FIX "filter-aliyun.json", "body.Pod", NULL, NAMES_DEFAULT, GP_PROFILE_ALIYUN, "default",
     "gpu-pod-1", "045d9023-5ba8-4e0a-aec1-4fcb1d4ca901", "", "", 0, 0, 1,
     {{NULL, false, 1, 4096, 0, 0}}},
    {FIX "filter-aliyun.json", "body.Pod", NULL, NAMES_ALIYUN_MIB, GP_PROFILE_ALIYUN, "default",
     "gpu-pod-1", "045d9023-5ba8-4e0a-aec1-4fcb1d4ca901", "", "", 0, 0, 1,
     {{NULL, false, 1, 4, 0, 0}}},
    {FIX "filter-aliyun.json", "body.Pod", NULL, NAMES_NO_ALIYUN, GP_PROFILE_NATIVE, "default",
     "gpu-pod-1", "045d9023-5ba8-4e0a-aec1-4fcb1d4ca901", "", "", 0, 0, 0, {{0}}},
    /* gpu-count alone: whole GPUs */
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-count':'2'"))), NAMES_DEFAULT, GP_PROFILE_NATIVE,
     "ns1", "p", "u1", "", "", 0, 0, 1, {{"c", false, 2, 0, 1000, 1000}}},
    /* percent -> per-mille; numbers as well as strings */
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-mem':1024,'gpupack.io/gpu-core':50"))),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 1, 1024, 0, 500}}},
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-mem':2048.0,'gpupack.io/gpu-core':'100'"))),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 1, 2048, 0, 1000}}},
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-mem':'4Ki','gpupack.io/gpu-count':1"))),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 1, 4096, 0, 0}}},
    /* gpu-count 0 with memory: one GPU */
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-mem':'512','gpupack.io/gpu-count':'0'"))),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 1, 512, 0, 0}}},
    /* limits win over requests; requests alone count */
    {NULL, NULL,
     P(C("c", "{'limits':{'gpupack.io/gpu-mem':'4096'},'requests':{'gpupack.io/gpu-mem':'1024'}}")),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 1, 4096, 0, 0}}},
    {NULL, NULL, P(C("c", "{'requests':{'gpupack.io/gpu-mem':'1024','cpu':2,'memory':'1Gi'}}")),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 2000, 1024, 1,
     {{"c", false, 1, 1024, 0, 0}}},
    /* zero and null are "not asked" */
    {NULL, NULL, P(C("c", LIM("'gpupack.io/gpu-mem':'0','gpupack.io/gpu-core':null"))),
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 0, {{0}}},
    {NULL, NULL, P("{'name':'c'}," C("d", "{}")), NAMES_DEFAULT, GP_PROFILE_NATIVE, "ns1",
     "p", "u1", "", "", 0, 0, 0, {{0}}},
    /* resource names are configurable */
    {NULL, NULL,
     P(C("c", LIM("'example.com/vram':'300','example.com/gpus':'2','example.com/sm':'25',"
                  "'gpupack.io/gpu-mem':'999'"))),
     NAMES_RENAMED, GP_PROFILE_NATIVE, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"c", false, 2, 300, 0, 250}}},
    /* aliyun: all containers share one GPU; memory adds up */
    {NULL, NULL,
     P(C("a", LIM("'aliyun.com/gpu-mem':'2'")) "," C("b", LIM("'aliyun.com/gpu-mem':3")) ","
       C("c", "{}")),
     NAMES_DEFAULT, GP_PROFILE_ALIYUN, "ns1", "p", "u1", "", "", 0, 0, 1,
     {{"a", false, 1, 5120, 0, 0}}},
    /* metadata: default namespace, model and policy annotations */
    {NULL, NULL,
     "{'metadata':{'name':'m','annotations':{'gpupack.io/gpu-model':'T4|A10',"
     "'gpupack.io/policy':'inference'}},'spec':{'initContainers':null,'containers':[" C(
         "c", LIM("'gpupack.io/gpu-mem':'1'")) "]}}",
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "m", "", "T4|A10", "inference", 0, 0, 1,
     {{"c", false, 1, 1, 0, 0}}},
    /* aliyun with init containers: one entry on one GPU, max(largest init, sum of the others) */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("a", LIM("'aliyun.com/gpu-mem':'2'")) "],"
     "'initContainers':[" C("i", LIM("'aliyun.com/gpu-mem':'4'")) "]}}",
     NAMES_DEFAULT, GP_PROFILE_ALIYUN, "default", "", "", "", "", 0, 0, 1,
     {{"a", false, 1, 4096, 0, 0}}},
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("a", LIM("'aliyun.com/gpu-mem':'2'")) ","
     C("b", LIM("'aliyun.com/gpu-mem':'3'")) "],"
     "'initContainers':[" C("i", LIM("'aliyun.com/gpu-mem':'4'")) "]}}",
     NAMES_DEFAULT, GP_PROFILE_ALIYUN, "default", "", "", "", "", 0, 0, 1,
     {{"a", false, 1, 5120, 0, 0}}},
    /* aliyun + a native sidecar: it runs beside the containers and beside later init containers */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("a", LIM("'aliyun.com/gpu-mem':'2'")) "],"
     "'initContainers':[{'name':'s','restartPolicy':'Always','resources':"
     LIM("'aliyun.com/gpu-mem':'3'") "}," C("i", LIM("'aliyun.com/gpu-mem':'4'")) "]}}",
     NAMES_DEFAULT, GP_PROFILE_ALIYUN, "default", "", "", "", "", 0, 0, 1,
     {{"a", false, 1, 7168, 0, 0}}},
    /* native sidecars (restartPolicy: Always) hold their GPU share for the pod's life */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("main", LIM("'gpupack.io/gpu-mem':'10000'")) "],"
     "'initContainers':[{'name':'side','restartPolicy':'Always','resources':"
     LIM("'gpupack.io/gpu-mem':'10000'") "}]}}",
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "", "", "", "", 0, 0, 2,
     {{"main", false, 1, 10000, 0, 0}, {"side", false, 1, 10000, 0, 0}}},
    /* a run-once init container after a sidecar runs beside it */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("main", LIM("'gpupack.io/gpu-mem':'500'")) "],"
     "'initContainers':[{'name':'side','restartPolicy':'Always','resources':"
     LIM("'gpupack.io/gpu-mem':'1000','gpupack.io/gpu-core':'10'") "},"
     C("job", LIM("'gpupack.io/gpu-mem':'2000','gpupack.io/gpu-core':'20'")) ","
     "{'name':'other','restartPolicy':'OnFailure','resources':" LIM("'gpupack.io/gpu-mem':'100'") "}]}}",
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "", "", "", "", 0, 0, 4,
     {{"main", false, 1, 500, 0, 0}, {"side", false, 1, 1000, 0, 100},
      {"job", true, 1, 3000, 0, 300}, {"other", true, 1, 1100, 0, 100}}},
    /* host requests with a sidecar: sum includes it; a later init container adds it too */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("a", "{'requests':{'cpu':'1'}}") "],"
     "'initContainers':[{'name':'s','restartPolicy':'Always','resources':{'requests':{'cpu':'2'}}},"
     C("i", "{'requests':{'cpu':'2'}}") "]}}",
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "", "", "", "", 4000, 0, 0, {{0}}},
    /* host requests: max(init, sum of regular) */
    {NULL, NULL,
     "{'metadata':{},'spec':{'containers':[" C("a", "{'requests':{'cpu':'1','memory':'512Mi'}}") ","
     C("b", "{'limits':{'cpu':'500m','memory':'256Mi'}}") "],'initContainers':["
     C("i", "{'requests':{'cpu':'4','memory':'128Mi'}}") "]}}",
     NAMES_DEFAULT, GP_PROFILE_NATIVE, "default", "", "", "", "", 4000, 768, 0, {{0}}},
};

START_TEST(decodes)
{
    const ok_case *c = &ok_cases[_i];
    json_t *root = NULL;
    if (c->file) {
        json_error_t je;
        root = json_load_file(c->file, 0, &je);
        ck_assert_msg(root != NULL, "%s: %s", c->file, je.text);
    } else {
        root = squote_json(c->json);
    }
    const json_t *pod = c->path ? dig(root, c->path) : root;
    gp_resource_names names;
    names_for(c->names, &names);
    gp_pod_req r;
    memset(&r, 0x5a, sizeof r);
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &names, &r, &err) == 0, "case %d: %s", _i, err.msg);
    ck_assert_str_eq(r.ns, c->ns);
    ck_assert_str_eq(r.name, c->name);
    if (c->uid)
        ck_assert_str_eq(r.uid, c->uid);
    ck_assert_str_eq(r.models, c->models);
    ck_assert_str_eq(r.policy, c->policy);
    ck_assert_int_eq(r.nctrs, c->nctrs);
    if (c->nctrs)
        ck_assert_int_eq(r.profile, c->profile);
    ck_assert_int_eq(r.cpu_milli, c->cpu_milli);
    ck_assert_int_eq(r.host_mem_mib, c->host_mem_mib);
    for (int i = 0; i < c->nctrs; i++) {
        const ctr_want *w = &c->ctrs[i];
        const gp_ctr_req *g = &r.ctrs[i];
        if (w->name)
            ck_assert_str_eq(g->name, w->name);
        ck_assert_msg(g->init == w->init && g->count == w->count && g->mem_mib == w->mem &&
                          g->mem_ppm == w->permille * 1000 && g->core == w->core,
                      "case %d ctr %d (%s): init %d count %d mem %lld permille %d core %d", _i, i,
                      g->name, g->init, g->count, (long long)g->mem_mib, g->mem_ppm / 1000, g->core);
    }
    json_decref(root);
}
END_TEST

/* Limits: 16 GPU containers and 16 GPUs per container pass, one more fails. */
START_TEST(limits)
{
    gp_resource_names names;
    podreq_default_names(&names);
    for (int n = GP_MAX_CTRS; n <= GP_MAX_CTRS + 1; n++) {
        json_t *ctrs = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(ctrs, json_pack("{s:s+,s:{s:{s:s}}}", "name", "c",
                                                  i < 10 ? "0" : "1", "resources", "limits",
                                                  "gpupack.io/gpu-mem", "1"));
        json_t *pod = json_pack("{s:{},s:{s:o}}", "metadata", "spec", "initContainers", ctrs);
        gp_pod_req r;
        gp_err err = {{0}};
        int rc = podreq_decode(pod, &names, &r, &err);
        if (n == GP_MAX_CTRS) {
            ck_assert_msg(rc == 0, "%s", err.msg);
            ck_assert_int_eq(r.nctrs, n);
            ck_assert(r.ctrs[n - 1].init);
        } else {
            ck_assert_int_eq(rc, -1);
            ck_assert_msg(strstr(err.msg, "spec.initContainers[16]") &&
                              strstr(err.msg, "more than 16"), "%s", err.msg);
        }
        json_decref(pod);
    }
}
END_TEST

/* ------------------------------------------------------------ errors -- */

typedef struct {
    const char *json;
    names_kind names;
    const char *msg;   /* the field the message must name */
} bad_case;

#define LIMQ(name, q) P(C("c", LIM("'" name "':" q)))
#define MEMQ(q) LIMQ("gpupack.io/gpu-mem", q)
#define F_MEM "spec.containers[0].resources.limits[\"gpupack.io/gpu-mem\"]"
#define F_CNT "spec.containers[0].resources.limits[\"gpupack.io/gpu-count\"]"
#define F_CORE "spec.containers[0].resources.limits[\"gpupack.io/gpu-core\"]"
#define F_ALI "spec.containers[0].resources.limits[\"aliyun.com/gpu-mem\"]"

static const bad_case bad_cases[] = {
    /* quantities of integer resources */
    {MEMQ("'1.5'"), NAMES_DEFAULT, F_MEM ": quantity \"1.5\" is fractional"},
    {MEMQ("'500m'"), NAMES_DEFAULT, F_MEM ": quantity \"500m\" is fractional"},
    {LIMQ("gpupack.io/gpu-count", "'500m'"), NAMES_DEFAULT, F_CNT},
    {LIMQ("gpupack.io/gpu-core", "'0.5'"), NAMES_DEFAULT, F_CORE},
    {MEMQ("'-1'"), NAMES_DEFAULT, F_MEM ": quantity \"-1\" is negative"},
    {MEMQ("-1"), NAMES_DEFAULT, F_MEM ": -1 is negative"},
    {MEMQ("-1.0"), NAMES_DEFAULT, F_MEM},
    {MEMQ("'abc'"), NAMES_DEFAULT, F_MEM},
    {MEMQ("''"), NAMES_DEFAULT, F_MEM ": empty quantity"},
    {MEMQ("'9999999999999999999Ki'"), NAMES_DEFAULT, F_MEM ": quantity \"9999999999999999999Ki\" is too large"},
    {MEMQ("1.5"), NAMES_DEFAULT, F_MEM ": 1.5 is not a whole"},
    {MEMQ("1e300"), NAMES_DEFAULT, F_MEM},
    {MEMQ("true"), NAMES_DEFAULT, F_MEM ": must be a quantity string or a number"},
    {MEMQ("{}"), NAMES_DEFAULT, F_MEM},
    {MEMQ("['1']"), NAMES_DEFAULT, F_MEM},
    {LIMQ("aliyun.com/gpu-mem", "'0.5'"), NAMES_DEFAULT, F_ALI},
    {LIMQ("aliyun.com/gpu-mem", "false"), NAMES_DEFAULT, F_ALI},
    /* requests are read when limits lack the resource, and named as such */
    {P(C("c", "{'requests':{'gpupack.io/gpu-mem':'x'}}")), NAMES_DEFAULT,
     "spec.containers[0].resources.requests[\"gpupack.io/gpu-mem\"]"},
    {"{'metadata':{},'spec':{'initContainers':[" C("i", LIM("'gpupack.io/gpu-mem':'1.5'")) "]}}",
     NAMES_DEFAULT, "spec.initContainers[0].resources.limits[\"gpupack.io/gpu-mem\"]"},
    /* ranges */
    {LIMQ("gpupack.io/gpu-core", "'101'"), NAMES_DEFAULT, "spec.containers[0]: gpupack.io/gpu-core is 101"},
    {LIMQ("gpupack.io/gpu-count", "17"), NAMES_DEFAULT, "spec.containers[0]: gpupack.io/gpu-count is 17"},
    {LIMQ("gpupack.io/gpu-count", "'1Ki'"), NAMES_DEFAULT, "gpupack.io/gpu-count is 1024"},
    {MEMQ("'9007199254740992'"), NAMES_GIB, "spec.containers[0]: GPU memory request is out of range"},
    {LIMQ("aliyun.com/gpu-mem", "'9007199254740992'"), NAMES_DEFAULT, "spec.containers[0]: GPU memory"},
    /* profiles do not mix */
    {P(C("a", LIM("'gpupack.io/gpu-mem':'1'")) "," C("b", LIM("'aliyun.com/gpu-mem':'1'"))),
     NAMES_DEFAULT, "spec.containers[1]: pod mixes aliyun.com/gpu-mem"},
    {P(C("a", LIM("'aliyun.com/gpu-mem':'1'")) "," C("b", LIM("'gpupack.io/gpu-core':'10'"))),
     NAMES_DEFAULT, "spec.containers[1]: pod mixes"},
    /* shapes */
    {"[]", NAMES_DEFAULT, "Pod: must be an object"},
    {"'pod'", NAMES_DEFAULT, "Pod: must be an object"},
    {"{'spec':{}}", NAMES_DEFAULT, "Pod.metadata"},
    {"{'metadata':[],'spec':{}}", NAMES_DEFAULT, "Pod.metadata"},
    {"{'metadata':{'name':5},'spec':{}}", NAMES_DEFAULT, "Pod.metadata.name: must be a string"},
    {"{'metadata':{'namespace':{}},'spec':{}}", NAMES_DEFAULT, "Pod.metadata.namespace"},
    {"{'metadata':{'uid':true},'spec':{}}", NAMES_DEFAULT, "Pod.metadata.uid"},
    {"{'metadata':{'uid':'0123456789012345678901234567890123456789012345678901234567890123'},"
     "'spec':{}}", NAMES_DEFAULT, "Pod.metadata.uid: longer than 63"},
    {"{'metadata':{'annotations':'x'},'spec':{}}", NAMES_DEFAULT, "Pod.metadata.annotations"},
    {"{'metadata':{'annotations':{'gpupack.io/gpu-model':['T4']}},'spec':{}}", NAMES_DEFAULT,
     "annotation gpupack.io/gpu-model"},
    {"{'metadata':{'annotations':{'gpupack.io/policy':1}},'spec':{}}", NAMES_DEFAULT,
     "annotation gpupack.io/policy"},
    {"{'metadata':{}}", NAMES_DEFAULT, "Pod.spec"},
    {"{'metadata':{},'spec':[]}", NAMES_DEFAULT, "Pod.spec"},
    {"{'metadata':{},'spec':{'containers':{}}}", NAMES_DEFAULT, "Pod.spec.containers: must be an array"},
    {"{'metadata':{},'spec':{'initContainers':'x'}}", NAMES_DEFAULT, "Pod.spec.initContainers"},
    {P(C("a", "{}") ",7"), NAMES_DEFAULT, "spec.containers[1]: must be an object"},
    {P(C("a", "[]")), NAMES_DEFAULT, "spec.containers[0].resources: must be an object"},
    {P(C("0123456789012345678901234567890123456789012345678901234567890123",
         LIM("'gpupack.io/gpu-mem':'1'"))), NAMES_DEFAULT, "spec.containers[0].name: longer than 63"},
};

START_TEST(rejects)
{
    const bad_case *c = &bad_cases[_i];
    json_t *pod = squote_json(c->json);
    gp_resource_names names;
    names_for(c->names, &names);
    gp_pod_req r;
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &names, &r, &err) == -1, "case %d accepted: %s", _i, c->json);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, c->msg);
    json_decref(pod);
}
END_TEST

/* The pod decoded once (model/pod.h): identity, policy, labels, priority and
 * controller, as podreq_decode reads them, with the same errors. */
START_TEST(pod_decoded_once)
{
    json_t *pod = squote_json(
        "{'metadata':{'name':'p','uid':'u1','labels':{'tier':'inference'},"
        "'annotations':{'gpupack.io/policy':'gold','gpupack.io/gpu-model':'A100'},"
        "'creationTimestamp':'2026-01-02T03:04:05Z',"
        "'ownerReferences':[{'kind':'ReplicaSet','uid':'rs1','controller':true}]},"
        "'spec':{'priority':7,'preemptionPolicy':'Never','containers':[{'name':'c','resources':"
        "{'limits':{'gpupack.io/gpu-mem':'3072'}}}]}}");
    gp_pod p;
    gp_err err = {{0}};
    ck_assert_int_eq(pod_decode(pod, &p, &err), 0);
    ck_assert_ptr_eq(p.json, pod);
    ck_assert_str_eq(p.ns, "default");
    ck_assert_str_eq(p.name, "p");
    ck_assert_str_eq(p.uid, "u1");
    ck_assert_str_eq(p.policy, "gold");
    ck_assert_str_eq(p.models, "A100");
    ck_assert_str_eq(json_string_value(json_object_get(p.labels, "tier")), "inference");
    ck_assert_int_eq(p.prio.priority, 7);
    ck_assert(p.prio.never);
    ck_assert_int_gt(p.prio.start_ns, 0);
    ck_assert_str_eq(p.prio.owner.uid, "rs1");
    /* the request under a policy's names carries what the pod decode found */
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req a, b;
    ck_assert_msg(podreq_of(&p, &names, &a, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(podreq_decode(pod, &names, &b, &err), 0);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
    ck_assert_int_eq(a.nctrs, 1);
    ck_assert_int_eq(a.priority, 7);
    ck_assert_str_eq(a.owner, "rs1");
    ck_assert_str_eq(a.policy, "gold");
    ck_assert_str_eq(a.models, "A100");
    ck_assert_str_eq(p.node, "");
    ck_assert(!p.finished && !p.sched_false);
    ck_assert_uint_eq(p.nclaims, 0);
    json_decref(pod);

    /* the watch's fields: bound node, phase, PodScheduled, claims */
    pod = squote_json("{'metadata':{'name':'q','namespace':'ns','resourceVersion':'42'},"
                      "'spec':{'nodeName':'n1','resourceClaims':[{'name':'a'},{'name':'b'}]},"
                      "'status':{'phase':'Failed','conditions':[{'type':'Ready','status':'False'},"
                      "{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}");
    ck_assert_int_eq(pod_decode(pod, &p, &err), 0);
    ck_assert_str_eq(p.ns, "ns");
    ck_assert_str_eq(p.rv, "42");
    ck_assert_str_eq(p.node, "n1");
    ck_assert(p.finished && !p.sched_false);   /* bound: its PodScheduled does not count */
    ck_assert_uint_eq(p.nclaims, 2);
    ck_assert_str_eq(json_string_value(json_object_get(pod_condition(pod, "PodScheduled"), "reason")),
                     "Unschedulable");
    ck_assert_ptr_null(pod_condition(pod, "Initialized"));
    ck_assert_ptr_null(pod_uid(pod));   /* no uid */
    json_object_del(json_object_get(pod, "spec"), "nodeName");
    ck_assert_int_eq(pod_decode(pod, &p, &err), 0);
    ck_assert(p.sched_false && !p.node[0]);
    json_decref(pod);

    /* labels that are not an object count as none */
    pod = squote_json("{'metadata':{'name':'p','labels':'x'}}");
    ck_assert_int_eq(pod_decode(pod, &p, &err), 0);
    ck_assert_ptr_null(p.labels);
    json_decref(pod);

    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"[]", "Pod: must be an object"},
        {"{'spec':{}}", "Pod.metadata: missing"},
        {"{'metadata':{'name':3}}", "Pod.metadata.name: must be a string"},
        {"{'metadata':{'name':'p','annotations':[]}}", "Pod.metadata.annotations: must be an object"},
        {"{'metadata':{'name':'p','annotations':{'gpupack.io/policy':1}}}",
         "annotation gpupack.io/policy: must be a string"},
    };
    /* a bad annotation of gpupack's: an error, but who the pod is still holds */
    pod = squote_json("{'metadata':{'name':'p','namespace':'n','annotations':{'gpupack.io/gpu-model':7}},"
                      "'spec':{'priority':5,'nodeName':'n1'}}");
    ck_assert_int_eq(pod_decode(pod, &p, &err), -1);
    ck_assert(strstr(err.msg, "gpupack.io/gpu-model"));
    ck_assert(p.identified);
    ck_assert_str_eq(p.name, "p");
    ck_assert_int_eq(p.prio.priority, 5);
    ck_assert_str_eq(p.node, "n1");
    json_decref(pod);
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
        pod = squote_json(bad[i].json);
        ck_assert_msg(pod_decode(pod, &p, &err) == -1, "%s accepted", bad[i].json);
        ck_assert(!p.identified || strstr(bad[i].msg, "annotation"));
        ck_assert_msg(strstr(err.msg, bad[i].msg), "%s: \"%s\" lacks \"%s\"", bad[i].json, err.msg,
                      bad[i].msg);
        json_decref(pod);
    }
    ck_assert_int_eq(pod_decode(NULL, &p, &err), -1);
}
END_TEST

/* ------------------------------------------------------ bugs (lead) -- */

/* BUG: aliyun memory of the containers is summed without an overflow check;
 * each container passes its own check (9e15 GiB * 1024 fits int64) but the
 * sum wraps to a negative request (UB; UBSan aborts here). Proposed fix: in
 * decode_container, check `amem * unit > INT64_MAX - ctrs[i].mem_mib` before
 * adding and fail with the field, or cap requests at a sane maximum (16 TiB). */
START_TEST(bug_aliyun_sum_overflow)
{
    /* each container alone is below the 16 TiB cap; together they are not
     * (the original 9e15 GiB per container is now refused at containers[0]) */
    json_t *pod = squote_json(P(C("a", LIM("'aliyun.com/gpu-mem':'10000'")) ","
                                C("b", LIM("'aliyun.com/gpu-mem':'10000'"))));
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req r;
    gp_err err = {{0}};
    int rc = podreq_decode(pod, &names, &r, &err);
    ck_assert_msg(rc == -1, "accepted: %d containers, mem %lld MiB", r.nctrs,
                  (long long)r.ctrs[0].mem_mib);
    ck_assert_msg(strstr(err.msg, "spec.containers[1]") != NULL, "%s", err.msg);
    json_decref(pod);
}
END_TEST

/* Aliyun init containers run one after another: two 4 GiB init containers
 * need 4 GiB, not 8, and the pod stays one entry on one GPU (the gpushare
 * device plugin runs the whole pod on the GPU the annotations name). */
START_TEST(bug_aliyun_init_containers_sum)
{
    json_t *pod = squote_json(
        "{'metadata':{},'spec':{'containers':[" C("a", LIM("'aliyun.com/gpu-mem':'2'")) "],"
        "'initContainers':[" C("i1", LIM("'aliyun.com/gpu-mem':'4'")) ","
        C("i2", LIM("'aliyun.com/gpu-mem':'4'")) "]}}");
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req r;
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &names, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.nctrs, 1);
    ck_assert(!r.ctrs[0].init);
    ck_assert_msg(r.ctrs[0].mem_mib == 4096, "entry asks %lld MiB, want 4096",
                  (long long)r.ctrs[0].mem_mib);
    json_decref(pod);
}
END_TEST

/* BUG: host cpu requests given as JSON numbers are multiplied by 1000 without
 * a range check (signed overflow: UB, UBSan aborts) and negative numbers are
 * kept, so they cancel other containers' requests; the string path clamps to
 * >= 0 but its sum can overflow too. Proposed fix: in host_milli reject or
 * clamp integers outside 0..INT64_MAX/1000, and saturate cpu_sum/mem_sum. */
static const char *const host_cases[] = {
    P(C("a", "{'requests':{'cpu':-5}}") "," C("b", "{'requests':{'cpu':'1'}}")),
    P(C("a", "{'requests':{'cpu':10000000000000000}}") "," C("b", "{'requests':{'cpu':'1'}}")),
    P(C("a", "{'requests':{'cpu':'9223372036854775'}}") ","
      C("b", "{'requests':{'cpu':'9223372036854775'}}")),
};

START_TEST(bug_host_requests_overflow)
{
    json_t *pod = squote_json(host_cases[_i]);
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req r;
    gp_err err = {{0}};
    int rc = podreq_decode(pod, &names, &r, &err);
    /* either refused with the field named, or a total at least container b's 1 cpu */
    if (rc == -1)
        ck_assert_msg(strstr(err.msg, "cpu") != NULL, "%s", err.msg);
    else
        ck_assert_msg(r.cpu_milli >= 1000, "case %d: cpu_milli %lld", _i, (long long)r.cpu_milli);
    json_decref(pod);
}
END_TEST

Suite *suite_podreq(void);
Suite *suite_podreq(void)
{
    Suite *s = suite_create("podreq");
    TCase *t = tcase_create("decode");
    tcase_add_test(t, default_names);
    tcase_add_loop_test(t, decodes, 0, (int)GP_ARRAY_LEN(ok_cases));
    tcase_add_test(t, limits);
    tcase_add_loop_test(t, rejects, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(t, pod_decoded_once);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("bugs");
    tcase_add_test(b, bug_aliyun_sum_overflow);
    tcase_add_test(b, bug_aliyun_init_containers_sum);
    tcase_add_loop_test(b, bug_host_requests_overflow, 0, (int)GP_ARRAY_LEN(host_cases));
    suite_add_tcase(s, b);
    return s;
}
