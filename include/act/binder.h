/* binder.h -- bind in live mode: one POST of a Binding that carries the pod's annotations.
 *
 * The API server copies metadata.annotations of a Binding onto the pod in the
 * same write that sets spec.nodeName, with metadata.resourceVersion (and, where
 * honoured, metadata.uid) as preconditions: the GPUs and the node land together
 * or not at all, and only on the pod that kube-scheduler meant. */
#ifndef GP_BINDER_H
#define GP_BINDER_H

#include <stdbool.h>

#include "sched/extender.h"
#include "kube/kube.h"
#include "lib/util.h"

/* Each API call of a bind gives up after this long (kube-scheduler's
 * extender httpTimeout must leave room for the Binding and one GET). */
#define GP_BINDER_TIMEOUT_S 5.0

/* POST /api/v1/namespaces/NS/pods/NAME/binding
 *   {"kind":"Binding","metadata":{"name","namespace","uid","resourceVersion","annotations"},
 *    "target":{"kind":"Node","name"}}
 * (annotations only when call->annotations is non-NULL; uid and resourceVersion
 * when known). Both are preconditions where the server honours them:
 * server_checks_uid says whether it checks metadata.uid (apiversion.h,
 * GP_FACT_BINDING_UID). When it does not (kube-apiserver 1.25.0-1.26.3 wipe
 * the uid) the resourceVersion is the only guard against a pod deleted and
 * re-created under the same name, so a Binding never goes out without one:
 * when call->rv is NULL the pod is read first (GET), its uid compared, and its
 * resourceVersion used. Classifies the outcome:
 *   BOUND    201/200; or a 409 after which a GET shows the pod (same uid)
 *            bound to call->node carrying call's gpupack.io/assignment (a
 *            retried bind whose first attempt landed);
 *   REFUSED  any other 4xx (409 bound elsewhere / wrong uid / being
 *            deleted, 404, 403, 422, 429...): nothing was written;
 *   UNKNOWN  transport error, timeout, 5xx, or the GET after a 409 failed:
 *            the API server may have committed the Binding.
 * err gets a message naming the pod, the HTTP status and the API's message
 * (for BOUND it is left alone). Thread-safe; borrows everything. */
gp_bind_outcome binder_bind(gp_kube *k, const gp_bind_call *call, bool server_checks_uid,
                            double timeout_s, gp_err *err);

/* Settles an earlier UNKNOWN outcome with a GET of the pod: BOUND when it is
 * bound to call->node with call's assignment annotation (uid matching),
 * REFUSED when it is gone, has another uid, is bound elsewhere or without
 * that assignment, or is still unbound; UNKNOWN when the GET failed.
 * Thread-safe; borrows everything. */
gp_bind_outcome binder_check(gp_kube *k, const gp_bind_call *call, double timeout_s, gp_err *err);

#endif
