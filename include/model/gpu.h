/* gpu.h -- the shared data model: GPUs, nodes, pod GPU requests, assignments.
 *
 * Units everywhere inside gpupack:
 *   memory  MiB (int64_t)
 *   compute per-mille of one GPU (int, 0..GP_CORE_FULL); users write percent
 *           (gpupack.io/gpu-core: 30 == 300 here), the traces write milli.
 * Plain structs with fixed bounds: no ownership questions, cheap to copy. */
#ifndef GP_GPU_H
#define GP_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "model/modelref.h"

#define GP_CORE_FULL 1000
#define GP_MAX_GPUS_PER_NODE 64   /* inventories larger than this are rejected */
#define GP_MAX_GPUS_PER_CTR 16    /* gpu-count above this is rejected */
#define GP_MAX_CTRS 16            /* GPU-using containers per pod (init included) */
#define GP_UUID_MAX 96
#define GP_NAME_MAX 254           /* DNS subdomain 253 + NUL */
#define GP_CTR_NAME_MAX 64        /* DNS label 63 + NUL */
#define GP_UID_MAX 64
#define GP_MODELS_MAX 256         /* a '|'-separated model list */

/* One physical GPU of a node, as an inventory source reports it. The fields
 * placement reads come first and the strings last: a filter over thousands
 * of nodes is bound by memory traffic, not arithmetic. */
typedef struct gp_gpu_info {
    int64_t mem_total;            /* MiB */
    int core_total;               /* per-mille; GP_CORE_FULL for a whole GPU */
    int index;                    /* device index on the node */
    bool healthy;
    gp_model_ref model;           /* 0 when unknown; gp_model_name() gives the name */
    char uuid[GP_UUID_MAX];       /* "" when the source does not know it */
} gp_gpu_info;

/* What Dynamic Resource Allocation says of a GPU (docs/dra.md): a device a
 * DRA driver publishes in a ResourceSlice, and what the allocated
 * ResourceClaims consume of it. Kubernetes' allocator sees only this: not
 * the pods gpupack places itself. A zeroed struct: not published through DRA. */
typedef struct gp_gpu_dra {
    int64_t mem_total;            /* MiB the driver publishes */
    int64_t mem_used;             /* MiB the allocated claims consume (also in gp_gpu.mem_used) */
    int64_t step_mib, min_mib;    /* the memory requestPolicy: amounts are rounded up to
                                   * min + k * step (0: not set) */
    int64_t default_mib;          /* what a request without an amount consumes (0: the whole device) */
    int16_t order;                /* 1 + position in the allocator's search on this node;
                                   * 0 = not published through DRA */
    uint16_t claims;              /* allocated claims on it (also in gp_gpu.pods) */
    int16_t core_used;            /* per-mille of its compute capacity the claims consume */
    int16_t core_default;         /* per-mille a request without a compute amount consumes
                                   * (the requestPolicy default, else all) */
    bool cores;                   /* it publishes a compute capacity (HAMi: "cores") */
    bool multi;                   /* allowMultipleAllocations: claims share it by capacity */
    bool only;                    /* known from DRA alone: offered to claims, not to gpupack's
                                   * own pods (no node side would enforce their share) */
} gp_gpu_dra;

/* A GPU with its allocation, as the cluster store and placement see it. */
typedef struct gp_gpu {
    int64_t mem_used;             /* MiB held by pods (assumed or bound) and claims */
    int core_used;                /* per-mille held by pods and claims */
    int pods;                     /* pods and claims holding any part of this GPU */
    gp_gpu_dra dra;
    gp_gpu_info info;
} gp_gpu;

/* A node as placement sees it. `cpu_*`/`host_mem_*` are 0 when unknown
 * (the live extender leaves those checks to kube-scheduler; the simulator
 * fills them). */
typedef struct gp_node {
    /* Fingerprint of the state placement depends on (placement_state_hash),
     * kept current by whoever owns the node; 0 = not kept (then readers hash
     * the node themselves). Lets one request share verdicts between nodes in
     * the same state without reading their GPUs again. First, beside ngpus
     * and the start of the name: a filter that finds a node by name and
     * reuses a verdict reads one cache line of it (pack/cluster.c). */
    uint64_t state_hash;
    int ngpus;
    char name[GP_NAME_MAX];
    char source[16];              /* inventory source: gpupack, hami, gfd, aliyun, trace */
    int64_t cpu_alloc_milli, cpu_used_milli;
    int64_t host_mem_alloc_mib, host_mem_used_mib;
    /* Must stay the last member: stores allocate nodes to their GPU count
     * (gp_node_size() in cluster.h). Positions 0..ngpus-1, sorted by index. */
    gp_gpu gpus[GP_MAX_GPUS_PER_NODE];
} gp_node;

/* The request format a pod is written in: gpupack's own resources, the
 * Aliyun gpushare profile, or another GPU-sharing system's (model/formats.h
 * decodes those). The aliyun profile runs the whole pod on one GPU. */
typedef enum {
    GP_PROFILE_NATIVE = 0,
    GP_PROFILE_ALIYUN = 1,
    GP_PROFILE_KAI = 2,           /* Run:ai / KAI gpu-fraction, gpu-memory annotations */
    GP_PROFILE_HAMI = 3,          /* nvidia.com/gpu + gpumem, gpumem-percentage, gpucores */
    GP_PROFILE_VOLCANO = 4,       /* volcano.sh/vgpu-number, vgpu-memory, vgpu-cores */
    GP_PROFILE_TKE = 5,           /* tencent.com/vcuda-core, vcuda-memory */
    GP_PROFILE_COUNT
} gp_profile;

/* Parts per million: the unit of memory shares relative to each GPU. */
#define GP_PPM_FULL 1000000

/* How a container asked for its memory. Relative requests (all but MIB) are
 * resolved on each candidate GPU at placement, never at decode time. */
typedef enum {
    GP_ASK_MIB = 0,               /* an amount in MiB (mem_mib) */
    GP_ASK_WHOLE,                 /* whole GPUs: all the memory of each */
    GP_ASK_FRACTION,              /* a fraction of each GPU's memory (KAI gpu-fraction); rounded down */
    GP_ASK_PERCENT,               /* a percentage of it (HAMi, Volcano); rounded down */
    GP_ASK_SHARE                  /* the trace protocol's share; rounded up */
} gp_ask;

/* One GPU-using container's request. Memory comes either in MiB or, when
 * mem_mib is 0 and mem_ppm > 0, as a share of each GPU's own memory (whole
 * GPUs, fractions, percentages, trace replays): gp_ctr_mem_on() resolves it. */
typedef struct gp_ctr_req {
    char name[GP_CTR_NAME_MAX];
    bool init;                    /* an init container: runs before the others */
    int count;                    /* physical GPUs, >= 1 */
    int64_t mem_mib;              /* per GPU */
    int32_t mem_ppm;              /* per GPU, parts per million; used when mem_mib == 0 */
    int core;                     /* per GPU, per-mille; 0 = unconstrained */
    unsigned char ask;            /* gp_ask: how the memory was asked (rounding, messages) */
} gp_ctr_req;

/* What a pod asks of gpupack. `nctrs == 0` means the pod is not managed. */
typedef struct gp_pod_req {
    char ns[GP_NAME_MAX];
    char name[GP_NAME_MAX];
    char uid[GP_UID_MAX];
    gp_profile profile;
    int nctrs;
    gp_ctr_req ctrs[GP_MAX_CTRS]; /* regular containers first, then init containers */
    char models[GP_MODELS_MAX];   /* gpupack.io/gpu-model; "" = any */
    char policy[GP_NAME_MAX];     /* gpupack.io/policy; "" = none asked */
    /* HAMi / Volcano GPU-type annotations (nvidia.com/use-gputype,
     * nouse-gputype): ','-separated, matched as case-insensitive substrings of
     * the GPU model, as those systems do; "" = no constraint */
    char type_use[GP_MODELS_MAX];
    char type_nouse[GP_MODELS_MAX];
    int64_t cpu_milli;            /* host requests, for the simulator's fit (0 = none) */
    int64_t host_mem_mib;
    int32_t priority;             /* spec.priority (0 when absent): preemption claims it may ignore */
    char owner[GP_UID_MAX];       /* its controller's uid ("" = none): consolidation's held
                                   * places are for the replacements a controller makes */
    /* the GPU containers stand for the device requests of the pod's
     * ResourceClaims that are not allocated yet: Kubernetes' allocator picks
     * the devices (placement predicts its choice, docs/dra.md), on GPUs
     * published through DRA only */
    bool dra;
} gp_pod_req;

/* Where a pod's containers run: the answer of placement, what bind records
 * and what the gpupack.io/assignment annotation carries. */
typedef struct gp_gpu_grant {
    int index;                    /* device index on the node */
    int64_t mem_mib;
    int core;                     /* per-mille */
} gp_gpu_grant;

typedef struct gp_ctr_assign {
    char name[GP_CTR_NAME_MAX];
    bool init;
    int ngpus;
    gp_gpu_grant gpus[GP_MAX_GPUS_PER_CTR];
} gp_ctr_assign;

typedef struct gp_assignment {
    char node[GP_NAME_MAX];
    int nctrs;
    gp_ctr_assign ctrs[GP_MAX_CTRS];   /* last member: stores keep only nctrs of them */
} gp_assignment;

/* A GPU as an assignment names it: the device index, and the UUID when the
 * node's inventory knew one ("" otherwise). Holds follow the UUID. */
typedef struct gp_gpu_ref {
    int index;
    char uuid[GP_UUID_MAX];
} gp_gpu_ref;

/* What a pod holds on one GPU over its life: max(any one init container,
 * sum of the regular containers), per dimension. */
typedef struct gp_hold {
    int index;
    int64_t mem_mib;
    int core;
    bool dra;                     /* a ResourceClaim's share: DRA's allocator counts it too
                                   * (gp_gpu_dra), on a GPU DRA publishes */
} gp_hold;

/* What the watch (or the cluster file) knows of a pod: the store applies it
 * (cluster_pod_observed). All pointers are borrowed. */
typedef struct gp_pod_obs {
    const char *uid, *ns, *name;
    const char *node_name;         /* spec.nodeName; NULL or "" = not bound */
    bool terminal;                 /* deleted, or phase Succeeded/Failed */
    const gp_assignment *assign;   /* decoded from annotations; NULL = none */
    const gp_gpu_ref *refs;        /* the assignment's GPUs with UUIDs (may be NULL) */
    int nrefs;
    const char *policy;            /* gpupack.io/policy-used, for /inspect; may be NULL */
    int64_t cpu_milli, mem_mib;    /* host requests (podreq_host) */
} gp_pod_obs;

/* Fills holds (capacity GP_MAX_GPUS_PER_NODE) from an assignment; returns
 * how many GPUs the pod holds. Pure. */
int gp_assignment_holds(const gp_assignment *a, gp_hold *holds);

/* The same from an assignment's containers alone (a store that keeps the
 * node's name apart). */
int gp_ctrs_holds(const gp_ctr_assign *ctrs, int nctrs, gp_hold *holds);

/* Same node, containers and grants (only the used entries are compared). */
bool gp_assignment_equal(const gp_assignment *x, const gp_assignment *y);

/* Same containers and grants. */
bool gp_ctrs_equal(const gp_ctr_assign *x, int nx, const gp_ctr_assign *y, int ny);

/* Position of device `index` in node->gpus, or -1. */
int gp_node_gpu_pos(const gp_node *node, int index);

/* Memory a request needs on a GPU with `alloc_mib` allocatable MiB (its
 * memory less any policy reserve): resolves mem_ppm, rounding down for
 * fractions and percentages (as KAI and HAMi compute them: fractions summing
 * to 1 always fit together) and up otherwise (the trace protocol); at least
 * 1 MiB. */
int64_t gp_ctr_mem_on(const gp_ctr_req *c, int64_t alloc_mib);

/* True when the pod may use a GPU of `model`: gpupack.io/gpu-model (req->models)
 * and the HAMi/Volcano type annotations (type_use, type_nouse; with Volcano,
 * use-gputype wins and nouse-gputype is then not read, as Volcano does). */
bool gp_req_model_ok(const gp_pod_req *req, const char *model);

/* True when `model` is allowed by a '|'-separated list ("" allows all).
 * Case-insensitive; an entry matches whole '-'/' '/'_'-separated tokens of the
 * model: "A100" matches "A100-SXM4-40GB" and "T4" matches "Tesla-T4", but "A10"
 * does not match "A100". */
bool gp_model_allowed(const char *list, const char *model);

#endif
