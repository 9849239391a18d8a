/* k8s_obs.h -- Kubernetes Pod / Node JSON -> what the store observes. Pure.
 *
 * The reflectors hand each object of a LIST or watch event to these; they
 * decode what the cluster store needs (a pod's assignment from its
 * annotations, a node's GPU inventory) and trim objects down to the fields
 * gpupack reads, so that a buffered LIST stays small. */
#ifndef GP_K8S_OBS_H
#define GP_K8S_OBS_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/jsonkeep.h"
#include "model/gpu.h"
#include "model/inventory.h"
#include "model/pod.h"
#include "lib/util.h"

/* A decoded pod. obs points into this struct: never copy it by value. */
typedef struct gp_pod_view {
    gp_pod pod;                      /* the one decode (model/pod.h), handed on to the watch's
                                      * observers; pod.json is the object given */
    gp_pod_obs obs;
    gp_assignment assign;            /* valid when obs.assign != NULL */
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX], node[GP_NAME_MAX];
    char policy[GP_NAME_MAX];
    bool pending;                    /* not bound, not terminal, not being deleted */
    bool wants_gpu;                  /* a container asks a resource whose name mentions "gpu"
                                      * or "vcuda", or KAI's gpu-fraction / gpu-memory annotation */
    bool sched_error;                /* pending, and its PodScheduled condition is False with
                                      * reason SchedulerError: kube-scheduler's last attempt
                                      * ended in an error (e.g. an extender it could not reach) */
    bool parked;                     /* pending, PodScheduled False (any reason): kube-scheduler
                                      * tried it and keeps it until something changes */
    char assign_err[256];            /* annotations present but malformed ("" = fine) */
    gp_gpu_ref refs[GP_MAX_GPUS_PER_NODE];   /* obs.uuids: the assignment's GPU UUIDs */
} gp_pod_view;

/* Decodes a pod (borrowed). deleted: the object came in a DELETED event.
 * terminal = deleted or phase Succeeded/Failed. A malformed assignment leaves
 * obs.assign NULL and says why in assign_err. Returns 0, or -1 with a message
 * when the object has no metadata.name/uid (not a pod). */
int k8s_obs_pod(const json_t *pod, bool deleted, int64_t aliyun_unit_mib, gp_pod_view *out,
                gp_err *err) GP_WUR;

/* Decodes a node (borrowed): name and GPU inventory. Returns 0; 1 when the
 * first inventory source present is malformed (inv->n == 0, err says why: the
 * node is kept with no usable GPUs); -1 when there is no metadata.name. */
int k8s_obs_node(const json_t *node, int64_t aliyun_unit_mib, char name[GP_NAME_MAX],
                 gp_inventory *inv, gp_err *err) GP_WUR;

/* Every member of a Pod that gpupack reads anywhere (metadata name,
 * namespace, uid, resourceVersion, labels, creation and deletion timestamps,
 * deletionGracePeriodSeconds, the annotations extargs_annotation_prefixes
 * names; spec.nodeName, priority, preemptionPolicy,
 * terminationGracePeriodSeconds; of each (init)container its name, resources,
 * restartPolicy and env names/valueFrom; of spec.resourceClaims and
 * status.resourceClaimStatuses the name, resourceClaimName and
 * resourceClaimTemplateName; status.phase, startTime, nominatedNodeName and
 * the conditions' type, status and reason).
 * The one table behind every reduced copy of a pod -- the ExtenderArgs
 * scanner (extargs_scan), the LIST buffer and the pods the extender keeps
 * between filter and bind (k8s_obs_trim_pod) -- so that a reduced pod decodes
 * exactly like the whole one (test_podmeaning checks it). A decoder that
 * reads a new member of a Pod adds it here. */
extern const gp_keep k8s_obs_pod_keep[];

/* Every member of a Node that gpupack's decoders read (metadata name, uid,
 * resourceVersion, labels, annotations; status capacity and allocatable):
 * the node watch's events are decoded reduced to it (a node's status lists
 * its images and conditions: most of its bytes). k8s_obs_trim_node keeps the
 * same. */
extern const gp_keep k8s_obs_node_keep[];

/* Copies (owned) holding only what gpupack reads: pods keep what
 * k8s_obs_pod_keep names (jsonkeep_trim), of the conditions only an unbound
 * pod's PodScheduled (the only one read); nodes keep metadata name, uid,
 * resourceVersion, labels, annotations, status.capacity/allocatable. */
json_t *k8s_obs_trim_pod(const json_t *pod);
json_t *k8s_obs_trim_node(const json_t *node);

#endif
