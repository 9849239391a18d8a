/* leader_label.h -- the leader marks its own Pod gpupack.io/leader=true; the Service selects
 * that label, so kube-scheduler reaches the leader while every synced replica stays Ready
 * (rolling updates and the PodDisruptionBudget count both). */
#ifndef GP_LEADER_LABEL_H
#define GP_LEADER_LABEL_H

#include <stdbool.h>

#include "kube/kube.h"

#define GP_LEADER_LABEL "gpupack.io/leader"

typedef struct gp_leader_label gp_leader_label;

/* For the Pod ns/name this process runs in (copied). Borrows k. No I/O. */
gp_leader_label *leader_label_new(gp_kube *k, const char *ns, const char *name, double timeout_s);
void leader_label_free(gp_leader_label *l);   /* accepts NULL */

/* Brings the labels in line with `leading`. Leading: removes the label from
 * every other Pod of the namespace that carries it (a dead or fenced leader),
 * then labels its own Pod. Not leading: removes its own label. Calls the API
 * only until it succeeded for the current value of `leading`. Failures are
 * logged and retried at the next call. One caller thread at a time. */
void leader_label_sync(gp_leader_label *l, bool leading);

#endif
