/* formats.h -- the GPU-sharing requests of other systems, decoded as those systems
 * define them. Pure.
 *
 *   Run:ai / KAI   pod annotations gpu-fraction, gpu-memory (MiB), gpu-fraction-num-devices,
 *                  gpu-fraction-container-name
 *   HAMi           nvidia.com/gpu with nvidia.com/gpumem (MiB), gpumem-percentage, gpucores;
 *                  pod annotations nvidia.com/use-gputype, nvidia.com/nouse-gputype
 *   Volcano vGPU   volcano.sh/vgpu-number, vgpu-memory (MiB), vgpu-memory-percentage, vgpu-cores
 *   TKE            tencent.com/vcuda-core (100 = one GPU), vcuda-memory (256 MiB units)
 *
 * podreq.c is the only caller of the decoders (podreq_decode, podreq_container are the
 * entry points everyone else uses): formats_detect tells which format a pod is written
 * in, formats_container and formats_kai turn requests into gpupack's units. Requests
 * relative to a GPU (fractions, percentages, whole GPUs) stay relative (mem_ppm, with
 * the gp_ask that says how they were written) until placement resolves them on each
 * candidate GPU. docs/migrating.md cites, per format, the file and function of the
 * other system each rule follows. */
#ifndef GP_FORMATS_H
#define GP_FORMATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/gpu.h"
#include "model/resnames.h"
#include "lib/util.h"

/* The format's name as policies write it ("gpupack", "aliyun", "kai", "hami",
 * "volcano", "tke"); NULL out of range. */
const char *formats_name(gp_profile f);

/* The format called `name`, or -1. */
int formats_by_name(const char *name);

/* The format (its name, as formats_name) among `accepted` (GP_FORMAT_BIT
 * bits) whose pods ask with resource `name`, or NULL: policies may not give
 * gpupack's own resources a name another accepted format reads. */
const char *formats_resource_owner(const char *name, unsigned accepted);

/* Which format `pod` (borrowed Pod JSON) is written in, among those `n` accepts
 * (n->formats, and n->nvidia_gpu for nvidia.com/gpu alone): KAI, HAMI, VOLCANO or
 * TKE, else GP_PROFILE_NATIVE (gpupack's own resources or the aliyun profile,
 * which podreq tells apart; also a pod that asks nothing). Keys of formats the
 * policy does not accept are not read at all. Returns 0, or -1 with a message
 * naming two keys when the pod mixes formats (also gpupack's own with another
 * system's, and KAI's gpu-fraction with an nvidia.com/gpu limit, which KAI
 * refuses too). */
int formats_detect(const json_t *pod, const gp_resource_names *n, gp_profile *out,
                   gp_err *err) GP_WUR;

/* One container (borrowed; `where` names it in messages, e.g.
 * "spec.containers[1]") of a pod in format f (HAMI, VOLCANO or TKE). Returns 1
 * and fills *out (name, count, memory, compute; init is left false) when it asks
 * GPUs, 0 when it does not, -1 with a message naming the key and its value. */
int formats_container(const json_t *c, const char *where, gp_profile f,
                      const gp_resource_names *n, gp_ctr_req *out, gp_err *err) GP_WUR;

/* KAI's request, which the pod's annotations make for one container: the one
 * gpu-fraction-container-name names (init containers searched first, as KAI's
 * binder does) or spec.containers[0]. Returns 0 with *out filled (init left
 * false) and the container's place (*init_list: in spec.initContainers;
 * *index), or -1 with a message naming the annotation and its value. */
int formats_kai(const json_t *pod, gp_ctr_req *out, bool *init_list, size_t *index,
                gp_err *err) GP_WUR;

/* HAMi's and Volcano's GPU-type annotations of `pod` into req->type_use and
 * req->type_nouse (nothing for other formats). Returns 0, or -1 with a message
 * when a value is not a string or too long. */
int formats_pod_types(const json_t *pod, gp_profile f, gp_pod_req *req, gp_err *err) GP_WUR;

/* A container's memory request in the terms its format writes it, on a GPU of
 * `model` where it amounts to need_mib: "gpu-fraction 0.5 of a T4 (7680 MiB)",
 * "nvidia.com/gpumem 3000 MiB", "tencent.com/vcuda-memory 40 (10240 MiB)".
 * model may be "" (unknown). Always terminates buf. */
void formats_describe(gp_profile f, const gp_ctr_req *r, const char *model, int64_t need_mib,
                      char *buf, size_t len);

/* True when a pod annotation with this key (len bytes, not NUL-terminated) is
 * read by podreq_decode or restores an assignment: what every trimmed copy of a
 * Pod must keep (the watch, bind's memory of pods; the ExtenderArgs scanner
 * keeps the same list, extargs_annotation_prefixes). */
bool formats_annotation_kept(const char *key, size_t len);

/* Node side: adds to `ann` (borrowed, modified) the annotations the format's own
 * device plugin reads, when a pod of format f is bound by assignment a on node
 * (its GPUs' UUIDs):
 *   HAMI     hami.io/vgpu-devices-to-allocate, hami.io/vgpu-devices-allocated,
 *            hami.io/vgpu-node, hami.io/vgpu-time, hami.io/bind-time,
 *            hami.io/bind-phase=allocating
 *   VOLCANO  volcano.sh/vgpu-ids-new, volcano.sh/devices-to-allocate,
 *            volcano.sh/vgpu-node, volcano.sh/vgpu-time, volcano.sh/bind-time,
 *            volcano.sh/bind-phase=allocating
 * nothing for other formats, and nothing when a GPU's UUID is unknown (those
 * plugins find devices by UUID). now_ns is the bind time. */
void formats_plugin_annotations(json_t *ann, const json_t *pod, gp_profile f,
                                const gp_assignment *a, const gp_node *node, int64_t now_ns);

#endif
