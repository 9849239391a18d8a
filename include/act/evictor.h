/* evictor.h -- preemption's API calls: evict a victim through the Eviction
 * API (PodDisruptionBudgets honoured by the API server), and nominate the
 * preemptor on its node (status.nominatedNodeName, as kube-scheduler does).
 *
 * Like binder.h: one request each, the answer classified; no retries here
 * (the preemption worker retries with backoff). Thread-safe. */
#ifndef GP_EVICTOR_H
#define GP_EVICTOR_H

#include <stdbool.h>

#include "kube/kube.h"
#include "sched/preempt.h"   /* gp_evict_outcome: what the evict hook reports */
#include "lib/util.h"

/* POST /api/v1/namespaces/NS/pods/NAME/eviction (policy/v1 Eviction, with a
 * uid precondition when uid is non-empty). err says why for every outcome
 * but DONE. */
gp_evict_outcome evictor_evict(gp_kube *k, const char *ns, const char *name, const char *uid,
                               double timeout_s, gp_err *err);

/* PATCH .../pods/NAME/status {"status":{"nominatedNodeName":node}} (merge
 * patch; the uid in the patch is a precondition). With held (a consolidation's
 * record of its held places, model/heldrec.h), a strategic merge patch that
 * also sets the condition GP_HELD_PLACES_CONDITION (True, reason
 * ConsolidationPlan, the record as its message): one write, before any
 * eviction. Returns 0 done, 1 when the pod is gone or another pod holds the
 * name (404, 409, 422), 2 when refused (401/403: RBAC lacks pods/status
 * patch), -1 to retry later (err says why). */
int evictor_nominate(gp_kube *k, const char *ns, const char *name, const char *uid,
                     const char *node, const char *held, double timeout_s, gp_err *err);

/* The preemptor's nudge: requeue.h's merge patch (the gpupack.io/requeue
 * annotation, with the uid as a precondition) -- an update of the pod's own
 * metadata, which makes kube-scheduler retry a parked pod. Returns 0 done,
 * 1 gone or another pod (404, 409, 422), 2 not allowed (401/403: RBAC
 * lacks pods patch, components/requeue-rbac), -1 to retry (err says why). */
int evictor_nudge(gp_kube *k, const char *ns, const char *name, const char *uid, double timeout_s,
                  gp_err *err);

/* The preemptor's nudge where kube-scheduler has queueing hints (1.32+), which
 * wakes a parked pod on any new resourceVersion of it, status included: the
 * pod condition GP_HELD_CONDITION (True, reason VictimsGone, msg) through a
 * strategic merge patch of pods/status -- which gpupack may patch already to
 * nominate (no cluster-wide pods patch) -- its lastProbeTime now, and with
 * first its lastTransitionTime too. Returns as evictor_nudge (2: RBAC lacks
 * pods/status patch). */
#define GP_HELD_CONDITION "gpupack.io/GPUShareHeld"
int evictor_nudge_status(gp_kube *k, const char *ns, const char *name, const char *uid,
                         const char *msg, bool first, double timeout_s, gp_err *err);

#endif
