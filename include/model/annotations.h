/* annotations.h -- assignment <-> pod annotations (docs/requests.md, "What bind
 * writes on the pod"; the per-container keys: docs/node-side.md), both profiles. Pure. */
#ifndef GP_ANNOTATIONS_H
#define GP_ANNOTATIONS_H

#include <jansson.h>

#include "model/gpu.h"
#include "model/podreq.h"
#include "lib/util.h"

#define GP_ANN_ASSIGNMENT "gpupack.io/assignment"
#define GP_ANN_VISIBLE "gpupack.io/visible-devices"
#define GP_ANN_ASSUME_TIME "gpupack.io/assume-time"
#define GP_ANN_POLICY_USED "gpupack.io/policy-used"
#define GP_ANN_ALIYUN_IDX "ALIYUN_COM_GPU_MEM_IDX"
#define GP_ANN_ALIYUN_POD "ALIYUN_COM_GPU_MEM_POD"
#define GP_ANN_ALIYUN_DEV "ALIYUN_COM_GPU_MEM_DEV"
#define GP_ANN_ALIYUN_ASSIGNED "ALIYUN_COM_GPU_MEM_ASSIGNED"
#define GP_ANN_ALIYUN_ASSUME_TIME "ALIYUN_COM_GPU_MEM_ASSUME_TIME"

/* Per-container annotations: "gpupack.io/ctr-<i>-<suffix>" for spec.containers[i]
 * and "gpupack.io/init-<i>-<suffix>" for spec.initContainers[i] (the index is
 * stable: a pod's container lists cannot change after creation). Each one
 * holds the value of one environment variable, in the format its reader
 * expects; the admission webhook points the variables at these keys. */
typedef enum {
    GP_CTR_VISIBLE,        /* NVIDIA_VISIBLE_DEVICES: "GPU-uuid,GPU-uuid" (indices if unknown) */
    GP_CTR_MEM_LIMIT,      /* CUDA_DEVICE_MEMORY_LIMIT (HAMi-core): "4096m", per GPU */
    GP_CTR_SM_LIMIT,       /* CUDA_DEVICE_SM_LIMIT (HAMi-core): percent, "100" = no limit */
    GP_CTR_MPS_MEM,        /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: "0=4096M,1=4096M" */
    GP_CTR_MPS_THREADS,    /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: percent */
    GP_CTR_NVARS
} gp_ctr_var;

typedef struct gp_ctr_var_desc {
    const char *env;       /* the environment variable */
    const char *suffix;    /* the annotation key's last part */
} gp_ctr_var_desc;

extern const gp_ctr_var_desc annotations_ctr_vars[GP_CTR_NVARS];

#define GP_CTR_KEY_MAX 96

/* Writes the annotation key of variable v for container `index` of
 * spec.containers (init false) or spec.initContainers (init true). */
void annotations_ctr_key(char key[GP_CTR_KEY_MAX], bool init, size_t index, gp_ctr_var v);

/* Adds the per-container keys above to `ann` (borrowed, modified) for every
 * container of `pod` (borrowed Pod JSON) that asks gpupack resources under
 * `names`, from the assignment bind chose (matched by container name; in the
 * aliyun profile every asking container shares the pod's one GPU and gets
 * its own memory request as its limit). node supplies UUIDs. Containers with
 * no grant get no keys (their variables then resolve to "": no GPU). */
void annotations_add_containers(json_t *ann, const json_t *pod, const gp_assignment *a,
                                const gp_node *node, const gp_resource_names *names);

/* Builds the annotations object bind PATCHes onto the pod (owned json):
 * assignment JSON, visible devices (UUIDs, indices where unknown), assume time,
 * the deciding policy, and in the aliyun profile the ALIYUN_COM_GPU_MEM_* keys.
 * node supplies UUIDs and GPU memory (for _DEV); aliyun_unit_mib converts MiB
 * to the aliyun unit. */
json_t *annotations_build(const gp_assignment *a, const gp_node *node, gp_profile profile,
                          int64_t aliyun_unit_mib, const char *policy, int64_t now_ns);

/* The assignment JSON alone (owned string; free()). */
char *annotations_assignment_json(const gp_assignment *a, const gp_node *node);

/* Restores an assignment from a pod's annotations object (borrowed): the
 * gpupack.io/assignment key, else the aliyun keys (ALIYUN_COM_GPU_MEM_IDX +
 * _POD, one GPU, memory in aliyun units). node_name fills a->node for the
 * aliyun form. Returns 1 when found and valid, 0 when the pod has none, -1
 * with a message when present but malformed. */
int annotations_decode(const json_t *annotations, const char *node_name, int64_t aliyun_unit_mib,
                       gp_assignment *a, gp_err *err) GP_WUR;

/* The GPUs the gpupack.io/assignment annotation names, with their UUIDs
 * (borrowed annotations object; each index once; at most max). Returns how
 * many were written; 0 when there is no (valid) assignment annotation. */
int annotations_gpu_refs(const json_t *annotations, gp_gpu_ref *out, int max);

#endif
