/* annotations.h -- assignment <-> pod annotations (DESIGN §4), both profiles. Pure. */
#ifndef GP_ANNOTATIONS_H
#define GP_ANNOTATIONS_H

#include <jansson.h>

#include "gpu.h"
#include "util.h"

#define GP_ANN_ASSIGNMENT "gpupack.io/assignment"
#define GP_ANN_VISIBLE "gpupack.io/visible-devices"
#define GP_ANN_ASSUME_TIME "gpupack.io/assume-time"
#define GP_ANN_POLICY_USED "gpupack.io/policy-used"
#define GP_ANN_ALIYUN_IDX "ALIYUN_COM_GPU_MEM_IDX"
#define GP_ANN_ALIYUN_POD "ALIYUN_COM_GPU_MEM_POD"
#define GP_ANN_ALIYUN_DEV "ALIYUN_COM_GPU_MEM_DEV"
#define GP_ANN_ALIYUN_ASSIGNED "ALIYUN_COM_GPU_MEM_ASSIGNED"
#define GP_ANN_ALIYUN_ASSUME_TIME "ALIYUN_COM_GPU_MEM_ASSUME_TIME"

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
