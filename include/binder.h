/* binder.h -- bind in live mode: PATCH the pod's annotations, then POST its Binding. */
#ifndef GP_BINDER_H
#define GP_BINDER_H

#include "extender.h"
#include "kube.h"
#include "util.h"

/* Each API call of a bind gives up after this long (kube-scheduler's
 * extender httpTimeout must leave room for two). */
#define GP_BINDER_TIMEOUT_S 5.0

/* 1. PATCH /api/v1/namespaces/NS/pods/NAME (application/merge-patch+json)
 *    {"metadata":{"annotations":{...call->annotations}}} -> expects 200;
 *    skipped when call->annotations is empty (a pod without GPUs);
 * 2. POST .../pods/NAME/binding, a v1 Binding to call->node (with the pod's
 *    uid) -> expects 201; a 409 is success when the pod turns out to be bound
 *    to that same node already (a retried bind).
 * Returns 0, or -1 with a message naming the step, the pod, the HTTP status
 * and the API's own message. Rolling back the store is the caller's job.
 * Thread-safe; borrows everything. */
int binder_bind(gp_kube *k, const gp_bind_call *call, double timeout_s, gp_err *err) GP_WUR;

#endif
