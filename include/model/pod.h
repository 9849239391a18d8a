/* pod.h -- a Pod decoded once per request. Pure.
 *
 * The verbs (filter, prioritize, bind, preemption, explain) and preemption's
 * pod memory decode each pod they are handed once, here: who it is, the
 * policy it asks, its labels, priority and the times preemption orders by,
 * its controller. What it asks of GPUs depends on the policy that governs it
 * (the resource names a policy accepts), so podreq_of decodes that from the
 * gp_pod under the chosen policy's names. Nothing outside model/ walks a
 * pod's JSON for these. */
#ifndef GP_POD_H
#define GP_POD_H

#include <jansson.h>

#include "model/gpu.h"
#include "model/podprio.h"
#include "lib/util.h"

typedef struct gp_pod {
    const json_t *json;           /* the pod (borrowed): kept by callers that hold on to it, and
                                   * read by the request decoders (containers, annotations) */
    char ns[GP_NAME_MAX];         /* "default" when absent */
    char name[GP_NAME_MAX];
    char uid[GP_UID_MAX];
    char rv[64];                  /* metadata.resourceVersion; "" = absent or longer than this */
    char policy[GP_NAME_MAX];     /* the gpupack.io/policy annotation; "" = none asked */
    char models[GP_MODELS_MAX];   /* the gpupack.io/gpu-model annotation; "" = any */
    const json_t *labels;         /* metadata.labels (borrowed from json; NULL = none) */
    const json_t *annotations;    /* metadata.annotations (borrowed; NULL = none) */
    gp_pod_prio prio;             /* priority, preemptionPolicy, start and deletion times,
                                   * grace period, nominated node, controller */
    char node[GP_NAME_MAX];       /* spec.nodeName; "" = not bound (or longer than this) */
    bool finished;                /* status.phase Succeeded or Failed */
    bool sched_false;             /* not bound and its PodScheduled condition is False:
                                   * kube-scheduler tried it and found no node (it keeps it
                                   * until something changes) */
    size_t nclaims;               /* entries of spec.resourceClaims */
    bool identified;              /* all but policy, models and annotations decoded: what a
                                   * failure in the annotations (decoded last) leaves usable */
} gp_pod;

/* Decodes `pod` (borrowed; out->json points at it, so keep it alive while out
 * is used). Returns 0, or -1 with a message naming the field when the pod is
 * not an object, has no metadata object, or its name, namespace, uid,
 * gpupack.io/policy or gpupack.io/gpu-model annotation is not a string or is too long; annotations
 * that are not an object are an error too. Absent fields are "" (namespace
 * "default"); priority and times take podprio's defaults. The annotations are
 * decoded last: when only they fail, out->identified is still true and every
 * field but policy, models and annotations holds (what preemption's memory of
 * every pod reads, whatever its annotations). */
int pod_decode(const json_t *pod, gp_pod *out, gp_err *err) GP_WUR;

/* Just metadata.uid of a pod (borrowed; NULL when absent, empty or too long):
 * for the callers that need only the pod's identity (watch events, the
 * victims kube-scheduler proposes). */
const char *pod_uid(const json_t *pod);

/* The pod's status condition of that type (borrowed), or NULL. */
const json_t *pod_condition(const json_t *pod, const char *type);

#endif
