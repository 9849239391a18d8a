/* podreq.h -- a Kubernetes Pod (JSON) -> what it asks of gpupack. Pure. */
#ifndef GP_PODREQ_H
#define GP_PODREQ_H

#include <jansson.h>

#include "model/gpu.h"
#include "lib/util.h"

/* Which resource names mean what, and their units. A policy can rename them. */
typedef struct gp_resource_names {
    char mem[GP_NAME_MAX];          /* default gpupack.io/gpu-mem */
    int64_t mem_unit_mib;           /* MiB per unit of `mem`: 1 (MiB) or 1024 (GiB) */
    char count[GP_NAME_MAX];        /* default gpupack.io/gpu-count */
    char core[GP_NAME_MAX];         /* default gpupack.io/gpu-core (percent) */
    char aliyun_mem[GP_NAME_MAX];   /* default aliyun.com/gpu-mem; "" disables the profile */
    int64_t aliyun_unit_mib;        /* default 1024 (GiB), 1 when configured as MiB */
} gp_resource_names;

void podreq_default_names(gp_resource_names *n);

/* Decodes pod metadata and the GPU requests of its containers: limits, with
 * requests as a fallback; init containers flagged; quantities as strings or
 * numbers. A container with only gpu-count gets whole GPUs. Pods asking the
 * aliyun memory resource get the aliyun profile (one GPU per container).
 * Returns 0 (out->nctrs == 0 means not a gpupack pod) or -1 with a message
 * that names the field. `pod` is borrowed. */
int podreq_decode(const json_t *pod, const gp_resource_names *names, gp_pod_req *out,
                  gp_err *err) GP_WUR;

/* The pod's host requests as kube-scheduler counts them: per resource, the
 * larger of the regular containers' sum and the biggest init container
 * (requests, limits as a fallback). cpu in milli-CPU, memory in MiB; 0 when
 * absent or malformed. Never fails. `pod` is borrowed. */
void podreq_host(const json_t *pod, int64_t *cpu_milli, int64_t *mem_mib);

/* One container object (borrowed) of a pod: 1 when it asks gpupack resources
 * (out = its own request, not merged with its siblings as podreq_decode does
 * in the aliyun profile; *profile = which resources it asked), 0 when it asks
 * none, -1 with a message naming `where` when a value is malformed. */
int podreq_container(const json_t *c, const char *where, const gp_resource_names *names,
                     gp_ctr_req *out, gp_profile *profile, gp_err *err) GP_WUR;

/* The pod's labels object (borrowed from pod; NULL when absent). */
const json_t *podreq_labels(const json_t *pod);

#endif
