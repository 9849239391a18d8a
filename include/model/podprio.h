/* podprio.h -- what preemption reads of a Pod: priority, preemptionPolicy,
 * start and deletion times, nominated node, labels. Pure.
 *
 * The rules follow kube-scheduler (component-helpers corev1.PodPriority, and
 * util.GetPodStartTime): a pod without spec.priority has priority 0; its start
 * time is status.startTime, else metadata.creationTimestamp. */
#ifndef GP_PODPRIO_H
#define GP_PODPRIO_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"

/* Labels kept compactly: "key\0value\0key\0value\0\0" (at most GP_LABELS_MAX bytes,
 * longer label sets are cut at a whole pair and flagged). */
#define GP_LABELS_MAX 1024

/* The pod's controller: the ownerReference with controller: true. */
typedef struct gp_pod_owner {
    char kind[32];                /* "" = none (or a kind longer than this) */
    char uid[GP_UID_MAX];
} gp_pod_owner;

/* Reads the controller of a pod; out zeroed when it has none. */
void podprio_owner(const json_t *pod, gp_pod_owner *out);

typedef struct gp_pod_prio {
    int32_t priority;             /* spec.priority; 0 when absent */
    bool never;                   /* spec.preemptionPolicy: Never */
    int64_t start_ns;             /* status.startTime, else creationTimestamp; 0 = unknown */
    int64_t deletion_ns;          /* metadata.deletionTimestamp; 0 = not being deleted */
    int64_t grace_s;              /* metadata.deletionGracePeriodSeconds, else
                                   * spec.terminationGracePeriodSeconds; -1 = unknown */
    char nominated[GP_NAME_MAX];  /* status.nominatedNodeName; "" = none */
    gp_pod_owner owner;           /* its controller */
} gp_pod_prio;

/* Decodes from a pod (borrowed). Never fails: absent or malformed fields
 * take the defaults above. */
void podprio_decode(const json_t *pod, gp_pod_prio *out);

/* Compacts metadata.labels (string values only) into out (GP_LABELS_MAX
 * bytes). Returns false when some pairs did not fit (they are left out). */
bool podprio_labels(const json_t *pod, char *out, size_t outlen);

/* The value of `key` in compact labels, or NULL. */
const char *podprio_label(const char *labels, const char *key);

/* kube-scheduler's util.MoreImportantPod: higher priority first; at equal
 * priority the one that started earlier (unknown start = latest). <0 when a
 * is more important than b, >0 when less, 0 when alike. */
int podprio_importance_cmp(int32_t prio_a, int64_t start_a, int32_t prio_b, int64_t start_b);

#endif
