/* podreq.h -- a Kubernetes Pod (JSON) -> what it asks of gpupack. Pure. */
#ifndef GP_PODREQ_H
#define GP_PODREQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/gpu.h"
#include "model/pod.h"
#include "model/resnames.h"
#include "lib/util.h"

void podreq_default_names(gp_resource_names *n);

/* Decodes pod metadata and the GPU requests of its containers: limits, with
 * requests as a fallback; init containers flagged; quantities as strings or
 * numbers. A container with only gpu-count gets whole GPUs. Pods asking the
 * aliyun memory resource get the aliyun profile (one GPU per container); pods
 * written for another GPU-sharing system (KAI, HAMi, Volcano, TKE: see
 * model/formats.h) get that format, decoded as that system defines it, when
 * `names` accepts it. The one entry point for every reader of pods (filter,
 * bind, the watch, explain, the webhook, the e2e checker).
 * Returns 0 (out->nctrs == 0 means not a gpupack pod) or -1 with a message
 * that names the field. `pod` is borrowed. */
int podreq_decode(const json_t *pod, const gp_resource_names *names, gp_pod_req *out,
                  gp_err *err) GP_WUR;

/* The same from a pod already decoded (model/pod.h): what the verbs call once
 * they know the policy that governs the pod (its resource names). */
int podreq_of(const gp_pod *p, const gp_resource_names *names, gp_pod_req *out,
              gp_err *err) GP_WUR;

/* The pod's host requests as kube-scheduler counts them: per resource, the
 * larger of the regular containers' sum and the biggest init container
 * (requests, limits as a fallback). cpu in milli-CPU, memory in MiB; 0 when
 * absent or malformed. Never fails. `pod` is borrowed. */
void podreq_host(const json_t *pod, int64_t *cpu_milli, int64_t *mem_mib);

/* Container `index` of spec.containers (init_list false) or spec.initContainers
 * (true) of `pod` (borrowed): 1 when it asks GPUs (out = its own request, not
 * merged with its siblings as podreq_decode does in the aliyun profile or with
 * sidecars; *profile = the pod's format), 0 when it asks none (or is not
 * there), -1 with a message when the pod's request is malformed. KAI's
 * annotations ask for one container only: the others answer 0. */
int podreq_container(const json_t *pod, bool init_list, size_t index,
                     const gp_resource_names *names, gp_ctr_req *out, gp_profile *profile,
                     gp_err *err) GP_WUR;

#endif
