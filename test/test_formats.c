/* test_formats.c -- other GPU-sharing systems' requests (model/formats.h): one table per
 * format built from the examples in that system's own documentation, the errors each
 * system's rules give, mixing, policy switches, placement of relative requests on
 * heterogeneous nodes, reasons in the user's terms, and the node-side annotations
 * checked against the fixtures of HAMi's and Volcano's own tests. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "model/formats.h"
#include "model/podreq.h"
#include "pack/placement.h"
#include "lib/util.h"
#include "testutil.h"

/* Inline JSON is written with ' for " to keep the tables readable. */
static json_t *sq(const char *s)
{
    char *t = xstrdup(s);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t je;
    json_t *v = json_loads(t, 0, &je);
    ck_assert_msg(v != NULL, "bad test JSON %s: %s", t, je.text);
    free(t);
    return v;
}

/* Pod builders: annotations, containers, init containers. */
#define POD(ann, ctrs) "{'metadata':{'name':'p','namespace':'ns','annotations':{" ann "}},'spec':{'containers':[" ctrs "]}}"
#define POD_INIT(ann, inits, ctrs)                                                               \
    "{'metadata':{'name':'p','annotations':{" ann "}},'spec':{'initContainers':[" inits        \
    "],'containers':[" ctrs "]}}"
#define CTR(name, limits) "{'name':'" name "','resources':{'limits':{" limits "}}}"
#define CTR_RQ(name, res) "{'name':'" name "','resources':" res "}"
#define PLAIN(name) "{'name':'" name "'}"

typedef enum { N_DEFAULT, N_NVGPU, N_NONE, N_NO_HAMI } names_kind;

static void names_for(names_kind k, gp_resource_names *n)
{
    podreq_default_names(n);
    if (k == N_NVGPU)
        n->nvidia_gpu = true;
    if (k == N_NONE)
        n->formats = 0;
    if (k == N_NO_HAMI)
        n->formats &= ~GP_FORMAT_BIT(GP_PROFILE_HAMI);
}

/* One expected container: name, init, GPUs, MiB, ppm, how asked, per-mille compute. */
typedef struct want_ctr {
    const char *name;
    bool init;
    int count;
    int64_t mem_mib;
    int32_t ppm;
    gp_ask ask;
    int core;
} want_ctr;

typedef struct decode_case {
    const char *source;        /* where the example comes from */
    const char *json;
    names_kind names;
    gp_profile profile;
    int nctrs;
    want_ctr c[3];
    const char *type_use, *type_nouse;
} decode_case;

static void check_decode(const decode_case *c)
{
    gp_resource_names n;
    names_for(c->names, &n);
    json_t *pod = sq(c->json);
    gp_pod_req r;
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &n, &r, &err) == 0, "%s: %s", c->source, err.msg);
    ck_assert_msg(r.nctrs == c->nctrs, "%s: %d containers, want %d", c->source, r.nctrs, c->nctrs);
    if (c->nctrs)
        ck_assert_msg(r.profile == c->profile, "%s: profile %d, want %d", c->source, r.profile,
                      c->profile);
    for (int i = 0; i < c->nctrs; i++) {
        const gp_ctr_req *g = &r.ctrs[i];
        const want_ctr *w = &c->c[i];
        ck_assert_msg(strcmp(g->name, w->name) == 0 && g->init == w->init && g->count == w->count &&
                          g->mem_mib == w->mem_mib && g->mem_ppm == w->ppm &&
                          g->ask == (unsigned char)w->ask && g->core == w->core,
                      "%s: container %d is {%s init %d count %d mem %lld ppm %d ask %d core %d}",
                      c->source, i, g->name, g->init, g->count, (long long)g->mem_mib, g->mem_ppm,
                      g->ask, g->core);
    }
    ck_assert_str_eq(r.type_use, c->type_use ? c->type_use : "");
    ck_assert_str_eq(r.type_nouse, c->type_nouse ? c->type_nouse : "");
    json_decref(pod);
}

#define MIB GP_ASK_MIB
#define WHOLE GP_ASK_WHOLE
#define FRAC GP_ASK_FRACTION
#define PCT GP_ASK_PERCENT
#define FULL GP_PPM_FULL

/* ------------------------------------------------------------ Run:ai / KAI --
 * KAI-Scheduler docs/gpu-sharing/README.md and its example pods. */

static const decode_case kai_cases[] = {
    {"KAI docs/gpu-sharing/gpu-sharing.yaml: half a GPU's memory",
     "{'metadata':{'name':'gpu-sharing','labels':{'kai.scheduler/queue':'default-queue'},"
     "'annotations':{'gpu-fraction':'0.5'}},'spec':{'schedulerName':'kai-scheduler',"
     "'containers':[{'name':'gpu-workload','image':'nvidia/cuda:13.0.2-base-ubi8',"
     "'command':['nvidia-smi'],'args':['-L']}]}}",
     N_DEFAULT, GP_PROFILE_KAI, 1, {{"gpu-workload", false, 1, 0, 500000, FRAC, 0}}, NULL, NULL},
    {"KAI docs/gpu-sharing/gpu-memory.yaml: 2000 MiB",
     "{'metadata':{'name':'gpu-sharing','annotations':{'gpu-memory':'2000'}},"
     "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'gpu-workload'}]}}",
     N_DEFAULT, GP_PROFILE_KAI, 1, {{"gpu-workload", false, 1, 2000, 0, MIB, 0}}, NULL, NULL},
    {"KAI docs/gpu-sharing/gpu-sharing-non-default-container.yaml",
     POD("'gpu-fraction':'0.5','gpu-fraction-container-name':'gpu-workload'",
         PLAIN("sidecar") "," PLAIN("gpu-workload") "," PLAIN("another-sidecar")),
     N_DEFAULT, GP_PROFILE_KAI, 1, {{"gpu-workload", false, 1, 0, 500000, FRAC, 0}}, NULL, NULL},
    {"KAI docs/gpu-sharing/gpu-sharing-init-container.yaml: an init container gets it",
     POD_INIT("'gpu-fraction':'0.5','gpu-fraction-container-name':'gpu-init'", PLAIN("gpu-init"),
              PLAIN("main-app")),
     N_DEFAULT, GP_PROFILE_KAI, 1, {{"gpu-init", true, 1, 0, 500000, FRAC, 0}}, NULL, NULL},
    {"KAI multi-fraction (gpu-fraction-num-devices, pod_info.go)",
     POD("'gpu-fraction':'0.25','gpu-fraction-num-devices':'2'", PLAIN("main")), N_DEFAULT,
     GP_PROFILE_KAI, 1, {{"main", false, 2, 0, 250000, FRAC, 0}}, NULL, NULL},
    {"KAI gpu-memory on several devices",
     POD("'gpu-memory':'4096','gpu-fraction-num-devices':'3'", PLAIN("main")), N_DEFAULT,
     GP_PROFILE_KAI, 1, {{"main", false, 3, 4096, 0, MIB, 0}}, NULL, NULL},
    {"KAI fractions finer than per-mille and in scientific notation",
     POD("'gpu-fraction':'0.0625'", PLAIN("main")), N_DEFAULT, GP_PROFILE_KAI, 1,
     {{"main", false, 1, 0, 62500, FRAC, 0}}, NULL, NULL},
    {"KAI 5e-1 (ParseFloat and ParseQuantity both read it)",
     POD("'gpu-fraction':'5e-1'", PLAIN("main")), N_DEFAULT, GP_PROFILE_KAI, 1,
     {{"main", false, 1, 0, 500000, FRAC, 0}}, NULL, NULL},
    {"KAI 1 is a whole GPU's memory (the scheduler's pod_info.go accepts it)",
     POD("'gpu-fraction':'1'", PLAIN("main")), N_DEFAULT, GP_PROFILE_KAI, 1,
     {{"main", false, 1, 0, FULL, FRAC, 0}}, NULL, NULL},
    {"KAI docs/quickstart/pods/gpu-pod.yaml: nvidia.com/gpu is the device plugin's",
     "{'metadata':{'name':'gpu-pod'},'spec':{'schedulerName':'kai-scheduler','containers':"
     "[{'name':'main','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}",
     N_DEFAULT, GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
    {"KAI docs/quickstart/pods/gpu-pod.yaml with nvidiaGPU: gpupack (whole, exclusive)",
     "{'metadata':{'name':'gpu-pod'},'spec':{'schedulerName':'kai-scheduler','containers':"
     "[{'name':'main','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}",
     N_NVGPU, GP_PROFILE_HAMI, 1, {{"main", false, 1, 0, FULL, WHOLE, 1000}}, NULL, NULL},
    {"KAI annotations ignored when the policy does not accept kai",
     POD("'gpu-fraction':'0.5'", PLAIN("main")), N_NONE, GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
};

START_TEST(kai_from_docs)
{
    check_decode(&kai_cases[_i]);
}
END_TEST

/* ------------------------------------------------------------------ HAMi --
 * HAMi examples/nvidia/ (its .yaml files); defaults from GenerateResourceRequests and
 * MutateAdmission (pkg/device/nvidia/device.go). */

static const decode_case hami_cases[] = {
    {"HAMi examples/nvidia/default_use.yaml",
     POD("", CTR("ubuntu-container", "'nvidia.com/gpu':1,'nvidia.com/gpumem':3000,"
                                     "'nvidia.com/gpucores':30")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 1, 3000, 0, MIB, 300}}, NULL, NULL},
    {"HAMi examples/nvidia/use_exclusive_card.yaml",
     POD("", CTR("ubuntu-container", "'nvidia.com/gpu':2,'nvidia.com/gpumem-percentage':100,"
                                     "'nvidia.com/gpucores':100")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 2, 0, FULL, PCT, 1000}}, NULL, NULL},
    {"HAMi examples/nvidia/use_memory_fraction.yaml",
     POD("", CTR("ubuntu-container", "'nvidia.com/gpu':2,'nvidia.com/gpumem-percentage':50,"
                                     "'nvidia.com/gpucores':30")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 2, 0, 500000, PCT, 300}}, NULL, NULL},
    {"HAMi examples/nvidia/use_sharing_card.yaml (gpu-pod1)",
     POD("", CTR("ubuntu-container", "'nvidia.com/gpu':1,'nvidia.com/gpumem-percentage':40,"
                                     "'nvidia.com/gpucores':60")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 1, 0, 400000, PCT, 600}}, NULL, NULL},
    {"HAMi examples/nvidia/example.yaml: gpumem without gpucores shares compute",
     POD("", CTR("cuda-sample-vector-add", "'nvidia.com/gpu':1,'nvidia.com/gpumem':3000")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"cuda-sample-vector-add", false, 1, 3000, 0, MIB, 0}}, NULL, NULL},
    {"HAMi examples/nvidia/specify_card_type_to_use.yaml (nvidiaGPU: gpupack)",
     POD("'nvidia.com/use-gputype':'A100,V100'", CTR("ubuntu-container", "'nvidia.com/gpu':2")),
     N_NVGPU, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 2, 0, FULL, WHOLE, 1000}},
     "A100,V100", NULL},
    {"HAMi examples/nvidia/specify_card_type_not_use.yaml with a share",
     POD("'nvidia.com/nouse-gputype':' 1080,2080 '",
         CTR("ubuntu-container", "'nvidia.com/gpu':2,'nvidia.com/gpumem':1000")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"ubuntu-container", false, 2, 1000, 0, MIB, 0}}, NULL,
     "1080,2080"},
    {"HAMi examples/nvidia/use_as_normal.yaml: the device plugin's by default",
     POD("", CTR("ubuntu-container", "'nvidia.com/gpu':1")), N_DEFAULT, GP_PROFILE_NATIVE, 0,
     {{0}}, NULL, NULL},
    {"HAMi webhook: gpumem alone gets nvidia.com/gpu 1 (defaultGPUNum)",
     POD("", CTR("c", "'nvidia.com/gpumem':'2048'")), N_DEFAULT, GP_PROFILE_HAMI, 1,
     {{"c", false, 1, 2048, 0, MIB, 0}}, NULL, NULL},
    {"HAMi: gpucores alone: all the memory (defaultMemory 0), 30 % compute",
     POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpucores':30")), N_DEFAULT,
     GP_PROFILE_HAMI, 1, {{"c", false, 1, 0, FULL, WHOLE, 300}}, NULL, NULL},
    {"HAMi: gpumem wins over a percentage (Fit reads Memreq first)",
     POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':1000,"
                      "'nvidia.com/gpumem-percentage':50")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"c", false, 1, 1000, 0, MIB, 0}}, NULL, NULL},
    {"HAMi: percentage 0 is ignored, then all the memory",
     POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem-percentage':0")), N_DEFAULT,
     GP_PROFILE_HAMI, 1, {{"c", false, 1, 0, FULL, WHOLE, 0}}, NULL, NULL},
    {"HAMi: nvidia.com/gpu 0 asks nothing",
     POD("", CTR("c", "'nvidia.com/gpu':0,'nvidia.com/gpumem':1000")), N_DEFAULT,
     GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
    {"HAMi: a second container with nvidia.com/gpu alone is HAMi's too (exclusive)",
     POD("", CTR("a", "'nvidia.com/gpu':1,'nvidia.com/gpumem':1000") "," CTR("b",
                                                                       "'nvidia.com/gpu':1")),
     N_DEFAULT, GP_PROFILE_HAMI, 2,
     {{"a", false, 1, 1000, 0, MIB, 0}, {"b", false, 1, 0, FULL, WHOLE, 1000}}, NULL, NULL},
    {"HAMi: init containers count (Resourcereqs reads them first)",
     POD_INIT("", CTR("init", "'nvidia.com/gpu':1,'nvidia.com/gpumem':500"),
              CTR("main", "'nvidia.com/gpu':1,'nvidia.com/gpumem':1500")),
     N_DEFAULT, GP_PROFILE_HAMI, 2,
     {{"main", false, 1, 1500, 0, MIB, 0}, {"init", true, 1, 500, 0, MIB, 0}}, NULL, NULL},
    {"HAMi: requests are read when limits lack the key",
     POD("", CTR_RQ("c", "{'requests':{'nvidia.com/gpu':'1','nvidia.com/gpumem':'1Ki'}}")),
     N_DEFAULT, GP_PROFILE_HAMI, 1, {{"c", false, 1, 1024, 0, MIB, 0}}, NULL, NULL},
    {"HAMi keys ignored when the policy does not accept hami",
     POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':1000")), N_NO_HAMI,
     GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
};

START_TEST(hami_from_docs)
{
    check_decode(&hami_cases[_i]);
}
END_TEST

/* ---------------------------------------------------------- Volcano vGPU --
 * volcano docs/user-guide/how_to_use_volcano_vgpu.md; ExtractResourceRequest
 * (pkg/scheduler/api/devices/util.go), checkNodeGPUSharingPredicateAndScore. */

static const decode_case volcano_cases[] = {
    {"Volcano user guide, HAMI-core usage",
     "{'metadata':{'name':'hami-pod','annotations':{'volcano.sh/vgpu-mode':'hami-core'}},"
     "'spec':{'schedulerName':'volcano','containers':[{'name':'cuda-container','image':"
     "'nvidia/cuda:9.0-devel','resources':{'limits':{'volcano.sh/vgpu-number':1,"
     "'volcano.sh/vgpu-cores':50,'volcano.sh/vgpu-memory':3000}}}]}}",
     N_DEFAULT, GP_PROFILE_VOLCANO, 1, {{"cuda-container", false, 1, 3000, 0, MIB, 500}}, NULL, NULL},
    {"Volcano user guide, dynamic MIG usage (the mode is the node's business)",
     "{'metadata':{'name':'mig-pod','annotations':{'volcano.sh/vgpu-mode':'mig'}},"
     "'spec':{'schedulerName':'volcano','containers':[{'name':'cuda-container','resources':"
     "{'limits':{'volcano.sh/vgpu-number':1,'volcano.sh/vgpu-memory':3000}}}]}}",
     N_DEFAULT, GP_PROFILE_VOLCANO, 1, {{"cuda-container", false, 1, 3000, 0, MIB, 0}}, NULL, NULL},
    {"Volcano user guide, GPU exclusivity pod example",
     "{'metadata':{'name':'training-job','labels':{'workloadType':'training'}},'spec':{"
     "'schedulerName':'volcano','containers':[{'name':'trainer','resources':{'limits':{"
     "'volcano.sh/vgpu-number':'4','volcano.sh/vgpu-memory':'16384'}}}]}}",
     N_DEFAULT, GP_PROFILE_VOLCANO, 1, {{"trainer", false, 4, 16384, 0, MIB, 0}}, NULL, NULL},
    {"Volcano: vgpu-memory alone is one GPU",
     POD("", CTR("c", "'volcano.sh/vgpu-memory':'2048'")), N_DEFAULT, GP_PROFILE_VOLCANO, 1,
     {{"c", false, 1, 2048, 0, MIB, 0}}, NULL, NULL},
    {"Volcano: vgpu-number alone takes all the memory, no compute share",
     POD("", CTR("c", "'volcano.sh/vgpu-number':'2'")), N_DEFAULT, GP_PROFILE_VOLCANO, 1,
     {{"c", false, 2, 0, FULL, WHOLE, 0}}, NULL, NULL},
    {"Volcano: a percentage replaces vgpu-memory",
     POD("", CTR("c", "'volcano.sh/vgpu-number':1,'volcano.sh/vgpu-memory':3000,"
                      "'volcano.sh/vgpu-memory-percentage':25")),
     N_DEFAULT, GP_PROFILE_VOLCANO, 1, {{"c", false, 1, 0, 250000, PCT, 0}}, NULL, NULL},
    {"Volcano: vgpu-cores alone asks nothing (checkVGPUResourcesInPod)",
     POD("", CTR("c", "'volcano.sh/vgpu-cores':'50'")), N_DEFAULT, GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
    {"Volcano: use-gputype (nouse-gputype is then not read)",
     POD("'nvidia.com/use-gputype':'A100','nvidia.com/nouse-gputype':'A100'",
         CTR("c", "'volcano.sh/vgpu-number':1")),
     N_DEFAULT, GP_PROFILE_VOLCANO, 1, {{"c", false, 1, 0, FULL, WHOLE, 0}}, "A100", "A100"},
};

START_TEST(volcano_from_docs)
{
    check_decode(&volcano_cases[_i]);
}
END_TEST

/* -------------------------------------------------------------------- TKE --
 * tkestack/gpu-manager README.md "Pod template example"; allocateOne
 * (pkg/services/allocator/nvidia/allocator.go). */

static const decode_case tke_cases[] = {
    {"gpu-manager README: 0.5 GPU utilization, 7680 MiB (30 x 256 MiB)",
     "{'metadata':{'name':'vcuda','annotations':{'tencent.com/vcuda-core-limit':'50'}},'spec':{"
     "'restartPolicy':'Never','containers':[{'image':'test','name':'nvidia','command':["
     "'/usr/local/nvidia/bin/nvidia-smi','pmon','-d','10'],'resources':{'requests':{"
     "'tencent.com/vcuda-core':50,'tencent.com/vcuda-memory':30},'limits':{"
     "'tencent.com/vcuda-core':50,'tencent.com/vcuda-memory':30}}}]}}",
     N_DEFAULT, GP_PROFILE_TKE, 1, {{"nvidia", false, 1, 7680, 0, MIB, 500}}, NULL, NULL},
    {"gpu-manager README: 2 GPU cards (vcuda-core 200)",
     "{'metadata':{'name':'vcuda'},'spec':{'restartPolicy':'Never','containers':[{'name':"
     "'nvidia','resources':{'requests':{'tencent.com/vcuda-core':200,'tencent.com/vcuda-memory':"
     "60},'limits':{'tencent.com/vcuda-core':200,'tencent.com/vcuda-memory':60}}}]}}",
     N_DEFAULT, GP_PROFILE_TKE, 1, {{"nvidia", false, 2, 0, FULL, WHOLE, 1000}}, NULL, NULL},
    {"TKE: vcuda-core 100 is one whole GPU",
     POD("", CTR("c", "'tencent.com/vcuda-core':'100'")), N_DEFAULT, GP_PROFILE_TKE, 1,
     {{"c", false, 1, 0, FULL, WHOLE, 1000}}, NULL, NULL},
    {"TKE: zeros ask nothing",
     POD("", CTR("c", "'tencent.com/vcuda-core':0,'tencent.com/vcuda-memory':0")), N_DEFAULT,
     GP_PROFILE_NATIVE, 0, {{0}}, NULL, NULL},
};

START_TEST(tke_from_docs)
{
    check_decode(&tke_cases[_i]);
}
END_TEST

/* ----------------------------------------------------------------- errors -- */

typedef struct bad_case {
    const char *json;
    names_kind names;
    const char *msg;   /* must appear in the message: the key and the value */
} bad_case;

static const bad_case bad_cases[] = {
    /* KAI (gpu_request_validator.go says what is refused) */
    {POD("'gpu-fraction':'1.5'", PLAIN("m")), N_DEFAULT,
     "annotation gpu-fraction: 1.5 is outside (0, 1]"},
    {POD("'gpu-fraction':'0'", PLAIN("m")), N_DEFAULT, "annotation gpu-fraction: 0 is outside"},
    {POD("'gpu-fraction':'-0.5'", PLAIN("m")), N_DEFAULT, "gpu-fraction: -0.5 is outside (0, 1]"},
    {POD("'gpu-fraction':'half'", PLAIN("m")), N_DEFAULT,
     "annotation gpu-fraction: \"half\" is not a number"},
    {POD("'gpu-fraction':'0.5.1'", PLAIN("m")), N_DEFAULT, "\"0.5.1\" is not a number"},
    {POD("'gpu-fraction':'500m'", PLAIN("m")), N_DEFAULT, "\"500m\" is not a number"},
    {POD("'gpu-fraction':'nan'", PLAIN("m")), N_DEFAULT, "\"nan\" is not a number"},
    {POD("'gpu-fraction':''", PLAIN("m")), N_DEFAULT, "\"\" is not a number"},
    {POD("'gpu-fraction':'1e-9'", PLAIN("m")), N_DEFAULT, "1e-9 is below one millionth"},
    {POD("'gpu-fraction':0.5", PLAIN("m")), N_DEFAULT, "annotation gpu-fraction: must be a string"},
    {POD("'gpu-memory':'0'", PLAIN("m")), N_DEFAULT,
     "annotation gpu-memory: \"0\" is not a positive whole number MiB"},
    {POD("'gpu-memory':'2Gi'", PLAIN("m")), N_DEFAULT, "gpu-memory: \"2Gi\" is not a positive"},
    {POD("'gpu-memory':'-5'", PLAIN("m")), N_DEFAULT, "gpu-memory: \"-5\""},
    {POD("'gpu-memory':'99999999999999999999999'", PLAIN("m")), N_DEFAULT, "is more than"},
    {POD("'gpu-fraction':'0.5','gpu-memory':'100'", PLAIN("m")), N_DEFAULT,
     "annotations gpu-fraction \"0.5\" and gpu-memory \"100\""},
    {POD("'gpu-fraction-num-devices':'2'", PLAIN("m")), N_DEFAULT,
     "gpu-fraction-num-devices \"2\" needs gpu-fraction or gpu-memory"},
    {POD("'gpu-fraction':'0.5','gpu-fraction-num-devices':'0'", PLAIN("m")), N_DEFAULT,
     "annotation gpu-fraction-num-devices: \"0\" is not a positive whole number"},
    {POD("'gpu-fraction':'0.5','gpu-fraction-num-devices':'17'", PLAIN("m")), N_DEFAULT,
     "gpu-fraction-num-devices: 17 is more than 16 GPUs"},
    {POD("'gpu-fraction':'0.5','gpu-fraction-container-name':'nope'", PLAIN("m")), N_DEFAULT,
     "annotation gpu-fraction-container-name: no container named \"nope\""},
    {"{'metadata':{'annotations':{'gpu-fraction':'0.5'}},'spec':{'containers':[]}}", N_DEFAULT,
     "no spec.containers[0]"},
    {POD("'gpu-fraction':'0.5'", CTR("m", "'nvidia.com/gpu':'1'")), N_DEFAULT,
     "annotation gpu-fraction: a pod asks either a share of a GPU or whole GPUs"},
    /* HAMi */
    {POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem-percentage':150")), N_DEFAULT,
     "spec.containers[0]: nvidia.com/gpumem-percentage is 150, a percent from 0 to 100"},
    {POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpucores':101")), N_DEFAULT,
     "nvidia.com/gpucores is 101"},
    {POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':'1.5'")), N_DEFAULT,
     "spec.containers[0].resources.limits[\"nvidia.com/gpumem\"]: quantity \"1.5\" is fractional"},
    {POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':-1")), N_DEFAULT,
     "limits[\"nvidia.com/gpumem\"]: -1 is negative"},
    {POD("", CTR("c", "'nvidia.com/gpu':17,'nvidia.com/gpumem':100")), N_DEFAULT,
     "nvidia.com/gpu is 17, at most 16 GPUs"},
    {POD("", CTR("c", "'nvidia.com/gpu':'x'")), N_NVGPU, "limits[\"nvidia.com/gpu\"]"},
    {POD("'nvidia.com/use-gputype':5", CTR("c", "'nvidia.com/gpumem':1")), N_DEFAULT,
     "annotation nvidia.com/use-gputype: must be a string"},
    /* Volcano */
    {POD("", CTR("c", "'volcano.sh/vgpu-number':1,'volcano.sh/vgpu-memory-percentage':0")),
     N_DEFAULT, "volcano.sh/vgpu-memory-percentage is 0, a percent from 1 to 100"},
    {POD("", CTR("c", "'volcano.sh/vgpu-number':1,'volcano.sh/vgpu-cores':120")), N_DEFAULT,
     "volcano.sh/vgpu-cores is 120"},
    {POD("", CTR("c", "'volcano.sh/vgpu-number':'true'")), N_DEFAULT,
     "limits[\"volcano.sh/vgpu-number\"]"},
    /* TKE */
    {POD("", CTR("c", "'tencent.com/vcuda-core':150,'tencent.com/vcuda-memory':10")), N_DEFAULT,
     "tencent.com/vcuda-core is 150; above 100 it must be a multiple of 100"},
    {POD("", CTR("c", "'tencent.com/vcuda-core':50")), N_DEFAULT,
     "tencent.com/vcuda-core 50 with tencent.com/vcuda-memory 0: a shared GPU needs both"},
    {POD("", CTR("c", "'tencent.com/vcuda-memory':10")), N_DEFAULT,
     "tencent.com/vcuda-core 0 with tencent.com/vcuda-memory 10"},
    {POD("", CTR("c", "'tencent.com/vcuda-core':1700")), N_DEFAULT, "at most 16 GPUs"},
    /* formats do not mix */
    {POD("", CTR("a", "'nvidia.com/gpumem':1000") "," CTR("b", "'volcano.sh/vgpu-memory':1000")),
     N_DEFAULT, "pod mixes nvidia.com/gpumem (spec.containers[0]) with volcano.sh/vgpu-memory "
                "(spec.containers[1])"},
    {POD("", CTR("a", "'gpupack.io/gpu-mem':1000,'tencent.com/vcuda-memory':4")), N_DEFAULT,
     "pod mixes gpupack.io/gpu-mem (spec.containers[0]) with tencent.com/vcuda-memory"},
    {POD("'gpu-fraction':'0.5'", CTR("a", "'nvidia.com/gpumem':1000")), N_DEFAULT,
     "pod mixes gpu-fraction (metadata.annotations) with nvidia.com/gpumem (spec.containers[0])"},
    {POD_INIT("", CTR("i", "'aliyun.com/gpu-mem':1"), CTR("a", "'volcano.sh/vgpu-number':1")),
     N_DEFAULT, "pod mixes aliyun.com/gpu-mem (spec.initContainers[0]) with volcano.sh/vgpu"},
    {POD("", CTR("a", "'gpupack.io/gpu-mem':1000") "," CTR("b", "'nvidia.com/gpu':1")), N_NVGPU,
     "pod mixes gpupack.io/gpu-mem (spec.containers[0]) with nvidia.com/gpu (spec.containers[1])"},
    {POD("", CTR("a", "'volcano.sh/vgpu-number':1") "," CTR("b", "'nvidia.com/gpu':1")), N_NVGPU,
     "pod mixes volcano.sh/vgpu-number"},
};

START_TEST(errors_name_key_and_value)
{
    const bad_case *c = &bad_cases[_i];
    gp_resource_names n;
    names_for(c->names, &n);
    json_t *pod = sq(c->json);
    gp_pod_req r;
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &n, &r, &err) == -1, "case %d accepted: %s", _i, c->json);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: \"%s\" lacks \"%s\"", _i, err.msg,
                  c->msg);
    json_decref(pod);
}
END_TEST

/* A format the policy does not accept is no mix: its keys are not read. */
START_TEST(disabled_format_is_not_read)
{
    gp_resource_names n;
    names_for(N_NO_HAMI, &n);
    json_t *pod = sq(POD("", CTR("a", "'gpupack.io/gpu-mem':1000,'nvidia.com/gpumem':'x'")));
    gp_pod_req r;
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &n, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.profile, GP_PROFILE_NATIVE);
    ck_assert_int_eq(r.nctrs, 1);
    ck_assert_int_eq(r.ctrs[0].mem_mib, 1000);
    json_decref(pod);
}
END_TEST

/* podreq_container: KAI's request belongs to one container only. */
START_TEST(container_view_of_kai)
{
    gp_resource_names n;
    podreq_default_names(&n);
    json_t *pod = sq(POD_INIT("'gpu-fraction':'0.25','gpu-fraction-container-name':'work'",
                              PLAIN("setup"), PLAIN("side") "," PLAIN("work")));
    gp_ctr_req r;
    gp_profile f;
    gp_err err;
    ck_assert_int_eq(podreq_container(pod, true, 0, &n, &r, &f, &err), 0);
    ck_assert_int_eq(podreq_container(pod, false, 0, &n, &r, &f, &err), 0);
    ck_assert_int_eq(podreq_container(pod, false, 1, &n, &r, &f, &err), 1);
    ck_assert_str_eq(r.name, "work");
    ck_assert_int_eq(r.mem_ppm, 250000);
    ck_assert_int_eq(f, GP_PROFILE_KAI);
    ck_assert_int_eq(podreq_container(pod, false, 7, &n, &r, &f, &err), 0);
    json_decref(pod);
}
END_TEST

/* ----------------------------------------------------- GPU types (HAMi) -- */

typedef struct type_case {
    gp_profile profile;
    const char *use, *nouse, *model;
    bool ok;
} type_case;

static const type_case type_cases[] = {
    /* HAMi device.CheckType: substring, case-insensitive, both lists apply */
    {GP_PROFILE_HAMI, "A100,V100", "", "NVIDIA-NVIDIA A100-SXM4-40GB", true},
    {GP_PROFILE_HAMI, "A100,V100", "", "Tesla-V100-PCIE-32GB", true},
    {GP_PROFILE_HAMI, "A100,V100", "", "Tesla-T4", false},
    {GP_PROFILE_HAMI, "a10", "", "A100-SXM4-80GB", true},   /* a substring, as HAMi matches */
    {GP_PROFILE_HAMI, "", "1080,2080", "GeForce-GTX-1080-Ti", false},
    {GP_PROFILE_HAMI, "", "1080,2080", "Tesla-T4", true},
    {GP_PROFILE_HAMI, "A100", "80GB", "A100-SXM4-80GB", false},
    {GP_PROFILE_HAMI, "A100", "80GB", "A100-SXM4-40GB", true},
    {GP_PROFILE_HAMI, ",", "", "A100", false},              /* blank entries never match */
    /* Volcano checkGPUtype: use-gputype decides alone */
    {GP_PROFILE_VOLCANO, "A100", "80GB", "A100-SXM4-80GB", true},
    {GP_PROFILE_VOLCANO, "", "80GB", "A100-SXM4-80GB", false},
};

START_TEST(gpu_types)
{
    const type_case *c = &type_cases[_i];
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    r.profile = c->profile;
    gp_strlcpy(r.type_use, c->use, sizeof r.type_use);
    gp_strlcpy(r.type_nouse, c->nouse, sizeof r.type_nouse);
    ck_assert_msg(gp_req_model_ok(&r, c->model) == c->ok, "use %s nouse %s on %s", c->use,
                  c->nouse, c->model);
}
END_TEST

/* ----------------------------------- placement on heterogeneous GPUs -- */

/* A node with the given GPUs (MiB, model) and per-GPU used memory. */
static gp_node *hnode(int n, const int64_t *mem, const char *const *model, const int64_t *used)
{
    gp_node *node = tu_node("mixed", n, mem, used, NULL);
    for (int i = 0; i < n; i++)
        node->gpus[i].info.model = gp_model_intern(model[i]);
    return node;
}

static void decode_str(const char *json, gp_pod_req *r)
{
    gp_resource_names n;
    podreq_default_names(&n);
    json_t *pod = sq(json);
    gp_err err = {{0}};
    ck_assert_msg(podreq_decode(pod, &n, r, &err) == 0, "%s", err.msg);
    json_decref(pod);
}

typedef struct hetero_case {
    const char *what;
    const char *pod;
    const char *model;            /* the only GPU model placement may use ("" = first fit) */
    int64_t want_mib[2];          /* per GPU granted, in GPU order */
} hetero_case;

static const int64_t H_MEM[3] = {81920, 16384, 15360};
static const char *const H_MODEL[3] = {"A100-SXM4-80GB", "V100-16GB", "Tesla-T4"};

static const hetero_case hetero_cases[] = {
    {"gpu-fraction 0.5 on the 80 GiB GPU", POD("'gpu-fraction':'0.5'", PLAIN("m")), "A100",
     {40960}},
    {"gpu-fraction 0.5 on the 16 GiB GPU", POD("'gpu-fraction':'0.5'", PLAIN("m")), "V100",
     {8192}},
    {"gpu-fraction 0.5 on the T4", POD("'gpu-fraction':'0.5'", PLAIN("m")), "T4", {7680}},
    {"HAMi percentage 25 on the A100",
     POD("'nvidia.com/use-gputype':'A100'", CTR("c", "'nvidia.com/gpumem-percentage':25")), "",
     {20480}},
    {"HAMi percentage 25 on the T4",
     POD("'nvidia.com/use-gputype':'T4'", CTR("c", "'nvidia.com/gpumem-percentage':25")), "",
     {3840}},
    {"Volcano percentage 50 on the V100",
     POD("'nvidia.com/use-gputype':'V100'", CTR("c", "'volcano.sh/vgpu-memory-percentage':50,"
                                                     "'volcano.sh/vgpu-number':1")),
     "", {8192}},
    {"TKE 2 whole GPUs: the V100 and the T4, each all of its memory",
     POD("", CTR("c", "'tencent.com/vcuda-core':200")), "V100|T4", {16384, 15360}},
    {"KAI 2 devices x 0.25 on A100 + T4: each its own quarter",
     POD("'gpu-fraction':'0.25','gpu-fraction-num-devices':'2'", PLAIN("m")), "A100|T4",
     {20480, 3840}},
};

START_TEST(relative_requests_resolve_per_gpu)
{
    const hetero_case *c = &hetero_cases[_i];
    gp_node *node = hnode(3, H_MEM, H_MODEL, NULL);
    gp_pod_req r;
    decode_str(c->pod, &r);
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("first-fit");
    gp_strlcpy(o.models, c->model, sizeof o.models);
    gp_assignment a;
    gp_fit_fail why;
    ck_assert_msg(placement_fit(node, &r, &o, &a, &why) == 0, "%s: %s", c->what, why.reason);
    ck_assert_int_eq(a.nctrs, 1);
    for (int g = 0; g < a.ctrs[0].ngpus; g++)
        ck_assert_msg(a.ctrs[0].gpus[g].mem_mib == c->want_mib[g], "%s: GPU %d got %lld MiB",
                      c->what, a.ctrs[0].gpus[g].index, (long long)a.ctrs[0].gpus[g].mem_mib);
    /* the assignment annotation records MiB per GPU: a restart needs nothing else */
    char *as = annotations_assignment_json(&a, node);
    gp_assignment back;
    gp_err err;
    json_t *ann = json_pack("{ss}", GP_ANN_ASSIGNMENT, as);
    ck_assert_int_eq(annotations_decode(ann, "mixed", 1024, &back, &err), 1);
    ck_assert(gp_assignment_equal(&a, &back));
    json_decref(ann);
    free(as);
    free(node);
}
END_TEST

/* Two halves fill a GPU exactly, on any size, and a third is refused with a
 * reason in the user's terms (the example). */
START_TEST(fractions_fill_and_refuse_in_user_terms)
{
    static const int64_t mem[1] = {15360};
    static const char *const model[1] = {"T4"};
    gp_node *node = hnode(1, mem, model, NULL);
    gp_pod_req r;
    decode_str(POD("'gpu-fraction':'0.5'", PLAIN("main")), &r);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(placement_fit(node, &r, &o, &a, &why), 0);
        ck_assert_int_eq(placement_apply(node, &a, +1), 0);
    }
    ck_assert_int_eq(node->gpus[0].mem_used, 15360);
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, &why), -1);
    ck_assert_str_eq(why.reason, "container main: gpu-fraction 0.5 of a T4 (7680 MiB) does not "
                                 "fit: largest free 0 MiB");
    node->gpus[0].mem_used = 11264;
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, &why), -1);
    ck_assert_str_eq(why.reason, "container main: gpu-fraction 0.5 of a T4 (7680 MiB) does not "
                                 "fit: largest free 4096 MiB");
    ck_assert(!why.unresolvable);
    /* 0.3 + 0.3 + 0.4 of a T4 of 15109 MiB fit together (rounded down) */
    node->gpus[0].info.mem_total = 15109;
    node->gpus[0].mem_used = 0;
    node->gpus[0].pods = 0;
    static const char *const parts[] = {"0.3", "0.3", "0.4"};
    for (int i = 0; i < 3; i++) {
        char pod[256];
        snprintf(pod, sizeof pod, POD("'gpu-fraction':'%s'", PLAIN("main")), parts[i]);
        decode_str(pod, &r);
        ck_assert_msg(placement_fit(node, &r, &o, &a, &why) == 0, "%s: %s", parts[i], why.reason);
        ck_assert_int_eq(placement_apply(node, &a, +1), 0);
    }
    ck_assert_int_le(node->gpus[0].mem_used, 15109);
    free(node);
}
END_TEST

typedef struct reason_case {
    const char *pod;
    int64_t used[3];
    const char *models;       /* policy models */
    const char *want;
} reason_case;

static const reason_case reasons[] = {
    {POD("'gpu-memory':'20000'", PLAIN("m")), {70000, 0, 0}, "",
     "container m: gpu-memory 20000 MiB does not fit: largest free 16384 MiB"},
    /* relative: said on the GPU that misses by least (the V100: 9830 needed, 8192 free) */
    {POD("", CTR("c", "'nvidia.com/gpumem-percentage':60")), {40960, 8192, 15000}, "",
     "container c: nvidia.com/gpumem-percentage 60 of a V100-16GB (9830 MiB) does not fit: "
     "largest free 8192 MiB"},
    {POD("", CTR("c", "'tencent.com/vcuda-core':10,'tencent.com/vcuda-memory':40")),
     {80000, 16000, 15000}, "",
     "container c: tencent.com/vcuda-memory 40 (10240 MiB) does not fit: largest free 1920 MiB"},
    {POD("", CTR("c", "'volcano.sh/vgpu-number':2")), {0, 1, 0}, "V100|T4",
     "container c: volcano.sh/vgpu-number 2: all the memory of a Tesla-T4 (15360 MiB) on each of "
     "2 GPUs does not fit: 1 GPU has that much free"},
};

START_TEST(type_annotations_in_reasons)
{
    gp_node *node = hnode(3, H_MEM, H_MODEL, NULL);
    gp_pod_req r;
    decode_str(POD("'nvidia.com/use-gputype':'H100'", CTR("c", "'nvidia.com/gpumem':100")), &r);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, &why), -1);
    ck_assert(why.unresolvable);
    ck_assert_msg(strstr(why.reason, "no healthy GPU of a type nvidia.com/use-gputype \"H100\" "
                                     "allows"), "%s", why.reason);
    free(node);
}
END_TEST

START_TEST(reasons_in_user_terms)
{
    const reason_case *c = &reasons[_i];
    gp_node *node = hnode(3, H_MEM, H_MODEL, c->used);
    gp_pod_req r;
    decode_str(c->pod, &r);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_strlcpy(o.models, c->models, sizeof o.models);
    gp_assignment a;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, &why), -1);
    ck_assert_str_eq(why.reason, c->want);
    free(node);
}
END_TEST

/* reserveMemoryMiB: a fraction is of what the policy hands out on that GPU. */
START_TEST(fraction_of_allocatable_memory)
{
    static const int64_t mem[1] = {16384};
    static const char *const model[1] = {"V100"};
    gp_node *node = hnode(1, mem, model, NULL);
    gp_pod_req r;
    decode_str(POD("'gpu-fraction':'0.5'", PLAIN("m")), &r);
    gp_place_opts o;
    placement_default_opts(&o);
    o.reserve_mem_mib = 1024;
    gp_assignment a;
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].mem_mib, 7680);   /* (16384 - 1024) / 2 */
    ck_assert_int_eq(placement_apply(node, &a, +1), 0);
    ck_assert_int_eq(placement_fit(node, &r, &o, &a, NULL), 0);   /* the second half fits */
    free(node);
}
END_TEST

/* 100 % compute is exclusive both ways (HAMi's and Volcano's rule). */
START_TEST(full_compute_is_exclusive)
{
    static const int64_t mem[1] = {16384};
    static const char *const model[1] = {"V100"};
    gp_node *node = hnode(1, mem, model, NULL);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_pod_req excl, share;
    decode_str(POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':2000,"
                                "'nvidia.com/gpucores':100")), &excl);
    decode_str(POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':2000")), &share);
    gp_assignment a;
    gp_fit_fail why;
    /* a pod without compute share holds the GPU: 100 % cannot join */
    ck_assert_int_eq(placement_fit(node, &share, &o, &a, NULL), 0);
    ck_assert_int_eq(placement_apply(node, &a, +1), 0);
    ck_assert_int_eq(placement_fit(node, &excl, &o, &a, &why), -1);
    ck_assert_msg(strstr(why.reason, "asks all the compute of a GPU (100%)"), "%s", why.reason);
    ck_assert(!why.unresolvable);
    node->gpus[0].mem_used = 0;   /* the share pod leaves */
    node->gpus[0].pods = 0;
    node->gpus[0].core_used = 0;
    /* 100 % first: a pod without compute share cannot join it */
    ck_assert_int_eq(placement_fit(node, &excl, &o, &a, NULL), 0);
    ck_assert_int_eq(placement_apply(node, &a, +1), 0);
    ck_assert_int_eq(placement_fit(node, &share, &o, &a, &why), -1);
    ck_assert_msg(strstr(why.reason, "have all their compute held"), "%s", why.reason);
    free(node);
}
END_TEST

/* ----------------------------------------------------------- node side -- */

/* HAMi's own fixture (pkg/device/nvidia/device_test.go, Test PatchAnnotations
 * "exist device"): one container on one GPU, 2000 MiB, 1 % cores. */
START_TEST(hami_annotations_match_hami_fixture)
{
    static const int64_t mem[1] = {16384};
    static const char *const model[1] = {"V100"};
    gp_node *node = hnode(1, mem, model, NULL);
    gp_strlcpy(node->gpus[0].info.uuid, "nvidia-device-0", sizeof node->gpus[0].info.uuid);
    json_t *pod = sq(POD("", CTR("c", "'nvidia.com/gpu':1,'nvidia.com/gpumem':2000,"
                                      "'nvidia.com/gpucores':1")));
    gp_assignment a = {.node = "mixed", .nctrs = 1};
    gp_strlcpy(a.ctrs[0].name, "c", sizeof a.ctrs[0].name);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 2000, 10};
    json_t *ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_HAMI, &a, node, 1700000000123456789LL);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-to-allocate")),
                     "nvidia-device-0,NVIDIA,2000,1:;");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-allocated")),
                     "nvidia-device-0,NVIDIA,2000,1:;");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-node")), "mixed");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-time")), "1700000000");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/bind-time")), "1700000000");
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/bind-phase")), "allocating");
    json_decref(ann);
    json_decref(pod);
    free(node);
}
END_TEST

/* HAMi's Test_DecodePodDevices fixture (pkg/device/devices_test.go): two
 * containers, one GPU each; plus init containers first and a container
 * without GPUs as an empty entry (Resourcereqs' order). */
START_TEST(hami_annotations_two_containers_and_init)
{
    static const int64_t mem[2] = {16384, 16384};
    static const char *const model[2] = {"V100", "V100"};
    gp_node *node = hnode(2, mem, model, NULL);
    gp_strlcpy(node->gpus[0].info.uuid, "GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76", GP_UUID_MAX);
    gp_strlcpy(node->gpus[1].info.uuid, "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", GP_UUID_MAX);
    json_t *pod = sq(POD("", CTR("a", "'nvidia.com/gpu':1,'nvidia.com/gpumem':500,"
                                      "'nvidia.com/gpucores':3") "," CTR("b", "'nvidia.com/gpu':1,"
                                      "'nvidia.com/gpumem':500,'nvidia.com/gpucores':3")));
    gp_assignment a = {.node = "mixed", .nctrs = 2};
    gp_strlcpy(a.ctrs[0].name, "a", GP_CTR_NAME_MAX);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 500, 30};
    gp_strlcpy(a.ctrs[1].name, "b", GP_CTR_NAME_MAX);
    a.ctrs[1].ngpus = 1;
    a.ctrs[1].gpus[0] = (gp_gpu_grant){1, 500, 30};
    json_t *ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_HAMI, &a, node, 0);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-to-allocate")),
                     "GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76,NVIDIA,500,3:;"
                     "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,NVIDIA,500,3:;");
    json_decref(ann);
    json_decref(pod);
    /* init container first, a plain container as an empty entry */
    pod = sq(POD_INIT("", CTR("i", "'nvidia.com/gpumem':500"),
                      PLAIN("sidecar") "," CTR("b", "'nvidia.com/gpumem':500")));
    gp_strlcpy(a.ctrs[0].name, "i", GP_CTR_NAME_MAX);
    a.ctrs[0].init = true;
    ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_HAMI, &a, node, 0);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "hami.io/vgpu-devices-allocated")),
                     "GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76,NVIDIA,500,3:;;"
                     "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,NVIDIA,500,3:;");
    json_decref(ann);
    json_decref(pod);
    free(node);
}
END_TEST

/* Volcano's fixture (pkg/scheduler/api/devices/nvidia/vgpu/device_info_test.go,
 * podWithVGPUAnnotations): "GPU-aaaa,NVIDIA,80,0:"; entries joined with ';',
 * one per spec.containers index (the device plugin's GetNextDeviceRequest). */
START_TEST(volcano_annotations_match_volcano_fixture)
{
    static const int64_t mem[1] = {16384};
    static const char *const model[1] = {"V100"};
    gp_node *node = hnode(1, mem, model, NULL);
    gp_strlcpy(node->gpus[0].info.uuid, "GPU-aaaa", GP_UUID_MAX);
    json_t *pod = sq(POD("", CTR("w", "'volcano.sh/vgpu-memory':80")));
    gp_assignment a = {.node = "node-a", .nctrs = 1};
    gp_strlcpy(a.ctrs[0].name, "w", GP_CTR_NAME_MAX);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 80, 0};
    json_t *ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_VOLCANO, &a, node, 1700000000LL * 1000000000);
    static const char *const keys[][2] = {
        {"volcano.sh/vgpu-ids-new", "GPU-aaaa,NVIDIA,80,0:"},
        {"volcano.sh/devices-to-allocate", "GPU-aaaa,NVIDIA,80,0:"},
        {"volcano.sh/vgpu-node", "node-a"},
        {"volcano.sh/vgpu-time", "1700000000"},
        {"volcano.sh/bind-time", "1700000000"},
        {"volcano.sh/bind-phase", "allocating"},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(keys); i++)
        ck_assert_str_eq(json_string_value(json_object_get(ann, keys[i][0])), keys[i][1]);
    ck_assert_int_eq(json_object_size(ann), GP_ARRAY_LEN(keys));
    json_decref(ann);
    json_decref(pod);
    /* a container without GPUs before it: an empty entry keeps the index */
    pod = sq(POD("", PLAIN("log") "," CTR("w", "'volcano.sh/vgpu-memory':80")));
    ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_VOLCANO, &a, node, 0);
    ck_assert_str_eq(json_string_value(json_object_get(ann, "volcano.sh/vgpu-ids-new")),
                     ";GPU-aaaa,NVIDIA,80,0:");
    json_decref(ann);
    json_decref(pod);
    free(node);
}
END_TEST

/* No UUID, no plugin annotations (those plugins find devices by UUID); other
 * formats get none. */
START_TEST(plugin_annotations_need_uuids)
{
    static const int64_t mem[1] = {16384};
    static const char *const model[1] = {"V100"};
    gp_node *node = hnode(1, mem, model, NULL);
    node->gpus[0].info.uuid[0] = '\0';
    json_t *pod = sq(POD("", CTR("w", "'volcano.sh/vgpu-memory':80")));
    gp_assignment a = {.node = "n", .nctrs = 1};
    gp_strlcpy(a.ctrs[0].name, "w", GP_CTR_NAME_MAX);
    a.ctrs[0].ngpus = 1;
    json_t *ann = json_object();
    formats_plugin_annotations(ann, pod, GP_PROFILE_VOLCANO, &a, node, 0);
    formats_plugin_annotations(ann, pod, GP_PROFILE_HAMI, &a, node, 0);
    node->gpus[0].info.uuid[0] = 'G';
    formats_plugin_annotations(ann, pod, GP_PROFILE_KAI, &a, node, 0);
    formats_plugin_annotations(ann, pod, GP_PROFILE_TKE, &a, node, 0);
    formats_plugin_annotations(ann, pod, GP_PROFILE_NATIVE, &a, node, 0);
    ck_assert_int_eq(json_object_size(ann), 0);
    json_decref(ann);
    json_decref(pod);
    free(node);
}
END_TEST

/* The annotations every trimmed copy of a pod keeps cover what decoding reads. */
START_TEST(kept_annotations)
{
    static const char *const kept[] = {"gpu-fraction", "gpu-fraction-num-devices",
                                       "gpu-fraction-container-name", "gpu-memory",
                                       "nvidia.com/use-gputype", "nvidia.com/nouse-gputype",
                                       "gpupack.io/gpu-model", "ALIYUN_COM_GPU_MEM_IDX"};
    for (size_t i = 0; i < GP_ARRAY_LEN(kept); i++)
        ck_assert_msg(formats_annotation_kept(kept[i], strlen(kept[i])), "%s", kept[i]);
    static const char *const dropped[] = {"kubectl.kubernetes.io/last-applied-configuration",
                                          "gpu", "nvidia.com/gpu", "hami.io/vgpu-node"};
    for (size_t i = 0; i < GP_ARRAY_LEN(dropped); i++)
        ck_assert_msg(!formats_annotation_kept(dropped[i], strlen(dropped[i])), "%s", dropped[i]);
}
END_TEST

START_TEST(names_and_owners)
{
    for (int f = 0; f < GP_PROFILE_COUNT; f++)
        ck_assert_int_eq(formats_by_name(formats_name((gp_profile)f)), f);
    ck_assert_int_eq(formats_by_name("run:ai"), -1);
    ck_assert_ptr_null(formats_name(GP_PROFILE_COUNT));
    ck_assert_str_eq(formats_resource_owner("nvidia.com/gpumem", GP_FORMATS_OTHER), "hami");
    ck_assert_str_eq(formats_resource_owner("tencent.com/vcuda-core", GP_FORMATS_OTHER), "tke");
    ck_assert_ptr_null(formats_resource_owner("nvidia.com/gpumem", 0));
    ck_assert_ptr_null(formats_resource_owner("gpupack.io/gpu-mem", GP_FORMATS_OTHER));
}
END_TEST

Suite *suite_formats(void);

Suite *suite_formats(void)
{
    Suite *s = suite_create("formats");
    TCase *t = tcase_create("decode");
    tcase_add_loop_test(t, kai_from_docs, 0, (int)GP_ARRAY_LEN(kai_cases));
    tcase_add_loop_test(t, hami_from_docs, 0, (int)GP_ARRAY_LEN(hami_cases));
    tcase_add_loop_test(t, volcano_from_docs, 0, (int)GP_ARRAY_LEN(volcano_cases));
    tcase_add_loop_test(t, tke_from_docs, 0, (int)GP_ARRAY_LEN(tke_cases));
    tcase_add_loop_test(t, errors_name_key_and_value, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(t, disabled_format_is_not_read);
    tcase_add_test(t, container_view_of_kai);
    tcase_add_loop_test(t, gpu_types, 0, (int)GP_ARRAY_LEN(type_cases));
    tcase_add_test(t, kept_annotations);
    tcase_add_test(t, names_and_owners);
    suite_add_tcase(s, t);
    TCase *p = tcase_create("placement");
    tcase_add_loop_test(p, relative_requests_resolve_per_gpu, 0, (int)GP_ARRAY_LEN(hetero_cases));
    tcase_add_test(p, fractions_fill_and_refuse_in_user_terms);
    tcase_add_loop_test(p, reasons_in_user_terms, 0, (int)GP_ARRAY_LEN(reasons));
    tcase_add_test(p, fraction_of_allocatable_memory);
    tcase_add_test(p, type_annotations_in_reasons);
    tcase_add_test(p, full_compute_is_exclusive);
    suite_add_tcase(s, p);
    TCase *n = tcase_create("node-side");
    tcase_add_test(n, hami_annotations_match_hami_fixture);
    tcase_add_test(n, hami_annotations_two_containers_and_init);
    tcase_add_test(n, volcano_annotations_match_volcano_fixture);
    tcase_add_test(n, plugin_annotations_need_uuids);
    suite_add_tcase(s, n);
    return s;
}
