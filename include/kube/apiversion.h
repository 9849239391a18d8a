/* apiversion.h -- what the API server (and the kube-scheduler of its release)
 * offers, learnt from GET /version: the facts gpupack acts on, in one table.
 *
 * Other code asks a fact, never a version number:
 *
 *     gp_apiversion v;
 *     if (apiversion_fetch(kube, 5.0, &v, &err) == 0 &&
 *         apiversion_has(&v, GP_FACT_BINDING_UID))
 *         ... the Binding's metadata.uid is a precondition on this server ...
 *
 * An unknown version (no answer yet, or a gitVersion that does not parse)
 * gets each fact's conservative value (see the table in apiversion.c and
 * docs/kubernetes-versions.md). Parsing and the facts are pure; only
 * apiversion_fetch talks to the network. */
#ifndef GP_APIVERSION_H
#define GP_APIVERSION_H

#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"
#include "lib/util.h"

/* Largest /version answer accepted (real ones are ~400 bytes). */
#define GP_APIVERSION_BODY_MAX 16384

typedef struct gp_apiversion {
    bool known;                 /* false: every fact takes its value for unknown servers */
    int major, minor, patch;    /* from gitVersion ("v1.26.4+k3s1" -> 1, 26, 4), else
                                 * from major/minor (patch 0) */
    char git[64];               /* gitVersion as served (sanitised), "" when absent */
} gp_apiversion;

/* The facts. Each holds for a set of version ranges (apiversion.c). */
typedef enum gp_api_fact {
    /* pods/binding honours the Binding's metadata.uid as a precondition
     * (kube-apiserver wiped it from 1.25.0 until 1.26.4 / 1.27.0) */
    GP_FACT_BINDING_UID,
    /* kube-scheduler parks a pod whose scheduling failed with an error (an
     * extender that was down or not ready) in its unschedulable pool until a
     * cluster event or a 5-minute flush (fixed in kube-scheduler 1.29.0);
     * gpupack then makes it retry the pods it could not serve */
    GP_FACT_REQUEUE_NUDGES,
    /* kube-scheduler moves parked pods on a node event only if they pass a
     * pre-check that counts every requested resource against the node's
     * allocatable (no gpupack.io resource ever appears there), so GPU pods miss node
     * events; gone with queueing hints (on by default from 1.32) */
    GP_FACT_NODE_PRECHECK,
    GP_FACT_COUNT
} gp_api_fact;

/* Decodes a /version answer (borrowed). Returns 0 with out->known set, or -1
 * with a message naming the key and value (out is then unknown). Pure. */
int apiversion_parse(const char *body, size_t len, gp_apiversion *out, gp_err *err) GP_WUR;

/* GET /version (public on every kube-apiserver). Returns 0, or -1 with a
 * message (out is then unknown). Thread-safe. */
int apiversion_fetch(gp_kube *k, double timeout_s, gp_apiversion *out, gp_err *err) GP_WUR;

/* Whether fact f holds for v (v->known false: the fact's value for unknown
 * servers). Pure. */
bool apiversion_has(const gp_apiversion *v, gp_api_fact f);
/* A short name ("binding_uid", "requeue_nudges", "node_precheck") for logs and metrics. */
const char *apiversion_fact_name(gp_api_fact f);
/* "v1.26.0" (or "unknown") into out. */
void apiversion_describe(const gp_apiversion *v, char *out, size_t len);

#endif
