/* podenv.h -- the GPU variables of a container (NVIDIA_VISIBLE_DEVICES and the
 * limits, annotations.h's annotations_ctr_vars) as env entries whose
 * valueFrom.fieldRef points at the per-container annotations bind writes.
 * The admission webhook injects them (webhook.c); bind checks they are there
 * when the webhook is required (extender.c). Pure. */
#ifndef GP_PODENV_H
#define GP_PODENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/annotations.h"
#include "model/podreq.h"
#include "lib/util.h"

/* The pod spec's container lists, in the order bind numbers them. */
#define PODENV_NLISTS 2
typedef struct podenv_list {
    const char *key;   /* "containers", "initContainers" */
    bool init;
} podenv_list;
extern const podenv_list podenv_lists[PODENV_NLISTS];

/* The env entry for variable v of container `index` of a list (owned). */
json_t *podenv_entry(bool init, size_t index, gp_ctr_var v);

/* True when env entry e (borrowed) is the one podenv_entry makes (the
 * apiVersion may have been defaulted by the API server, so only the
 * fieldPath counts). */
bool podenv_is_ours(const json_t *e, bool init, size_t index, gp_ctr_var v);

/* An env entry's name, "" when it has none. */
const char *podenv_name(const json_t *e);

/* 0 when every container of `pod` (borrowed) that asks gpupack resources has
 * NVIDIA_VISIBLE_DEVICES pointing at its annotation (the webhook ran), -1
 * with a message naming the first that has not (the pod was created while
 * the webhook was down or not registered). */
int podenv_check(const json_t *pod, const gp_resource_names *names, gp_err *err) GP_WUR;

#endif
