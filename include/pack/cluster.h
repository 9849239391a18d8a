/* cluster.h -- the node -> GPU -> allocation store; one lock; assume / confirm / forget.
 *
 * The store mirrors what the API server says (nodes and their GPUs, pods and
 * the GPUs their annotations name) plus what bind has assumed and the watch
 * has not yet confirmed. It is fed by the embedded cluster file or by the
 * watch, read by filter/prioritize/inspect, written by bind.
 *
 * Thread-safety: every function takes the store's lock itself, except the
 * cluster_rd_* accessors, which must be called between cluster_rdlock() and
 * cluster_unlock() -- pointers they return are valid only until the unlock.
 *
 * Memory: gp_node objects in the store are allocated to their GPU count: never
 * copy one by value; use gp_node_size() with memcpy. */
#ifndef GP_CLUSTER_H
#define GP_CLUSTER_H

#include <jansson.h>

#include "model/gpu.h"
#include "model/inventory.h"
#include "pack/placement.h"
#include "lib/util.h"

typedef struct gp_cluster gp_cluster;

gp_cluster *cluster_new(void);
void cluster_free(gp_cluster *c);           /* accepts NULL */

/* Bytes of a gp_node with n GPUs. */
size_t gp_node_size(int ngpus);

/* --- nodes ------------------------------------------------------------ */

/* Adds or replaces a node's inventory. A pod's hold on a GPU follows the
 * GPU's UUID when the assignment recorded one and the node reports UUIDs
 * (a GPU replaced or re-indexed after a reboot), else the device index.
 * Holds on GPUs that are gone are kept in the pod records, reported
 * (log, /inspect "missingGPUs", cluster_stats) and reapplied if the GPU
 * returns. */
void cluster_upsert_node(gp_cluster *c, const char *name, const gp_inventory *inv);
void cluster_remove_node(gp_cluster *c, const char *name);

/* Relist support: between begin and end, every node upserted is kept; at end
 * the nodes not upserted since begin are removed. */
void cluster_nodes_resync_begin(gp_cluster *c);
void cluster_nodes_resync_end(gp_cluster *c);

/* --- pods ------------------------------------------------------------- */

typedef enum {
    GP_POD_ASSUMED = 1,   /* bind chose GPUs; the API server has not shown it bound yet */
    GP_POD_BOUND = 2      /* seen bound with its assignment (or bound in embedded mode) */
} gp_pod_state;

/* What became of one Binding (see binder.h for how it is told). */
typedef enum {
    GP_BIND_BOUND = 0,     /* the API server applied it */
    GP_BIND_REFUSED = 1,   /* definitely not applied */
    GP_BIND_UNKNOWN = 2    /* may have been applied (timeout, 5xx, transport error) */
} gp_bind_outcome;

/* Where an ASSUMED pod's Binding stands. */
typedef enum {
    GP_PHASE_IN_FLIGHT = 0,  /* bind chose GPUs; its Binding has no answer yet */
    GP_PHASE_ACCEPTED = 1,   /* the API server applied it; the watch has not shown it yet */
    GP_PHASE_UNKNOWN = 2     /* the answer was lost: a GET (cluster_unsettled) or the watch decides */
} gp_bind_phase;

/* Atomically: place req on node `node` under the write lock, check the
 * namespace's share of the node (ns_share_cap, 0 = none, as filter does),
 * and record the result as `state` (ASSUMED for live bind, BOUND in
 * embedded mode). A request without GPU containers records the pod's host
 * CPU and memory only. If the pod (by uid) already holds GPUs on that node,
 * returns 0 with its existing assignment (idempotent bind); on another
 * node, -1. Returns 0 and fills *out, or -1 with a reason in err (no state
 * changed). */
int cluster_place_and_assume(gp_cluster *c, const char *node, const gp_pod_req *req,
                             const gp_place_opts *opts, double ns_share_cap, const char *policy,
                             gp_pod_state state, gp_assignment *out, gp_err *err) GP_WUR;

/* Filter-time reservation (policies with nodeDecision: filter): like
 * cluster_place_and_assume(..., GP_POD_ASSUMED, ...), after dropping this
 * pod's earlier reservation, but the record lapses ttl_s seconds from now
 * (cluster_expire_assumed) unless a bind takes it over: cluster_place_and_assume
 * on the same node returns the reserved assignment and makes it an ordinary
 * assumption; on another node it drops the reservation and places anew. So
 * the next pod's filter already sees the GPUs (and CPU) this pod will get,
 * before kube-scheduler's asynchronous bind arrives. */
int cluster_reserve(gp_cluster *c, const char *node, const gp_pod_req *req,
                    const gp_place_opts *opts, double ns_share_cap, const char *policy,
                    double ttl_s, gp_assignment *out, gp_err *err) GP_WUR;

/* Drops the pod's filter-time reservation, if it has one (a new filter call
 * for the pod decides afresh). */
void cluster_unreserve(gp_cluster *c, const char *uid);

/* The maxNamespaceShare rule: 0 when pod assignment a on node keeps namespace
 * ns within cap_share of the node's GPUs (or cap_share <= 0), else -1 with a
 * reason in why. Call under cluster_rdlock. */
int cluster_rd_ns_share_check(const gp_cluster *c, const gp_node *node, const char *ns,
                              const gp_assignment *a, double cap_share, char *why, size_t whylen);

/* Records a Binding's outcome for an ASSUMED pod: BOUND -> ACCEPTED (never
 * expires; the watch turns it BOUND); UNKNOWN -> UNKNOWN (kept, settled
 * later); REFUSED -> released. An ACCEPTED pod is never released or made
 * UNKNOWN by the outcome of a later retry. No-op for BOUND pods. */
void cluster_bind_outcome(gp_cluster *c, const char *uid, gp_bind_outcome outcome);

/* Same as cluster_bind_outcome(c, uid, GP_BIND_REFUSED). */
void cluster_forget(gp_cluster *c, const char *uid);

/* ASSUMED pods in phase UNKNOWN for at least min_age_s: copies of up to max
 * of them into out (caller's array); returns how many. The caller settles
 * each with a GET and reports through cluster_bind_outcome (BOUND ->
 * ACCEPTED, REFUSED -> released, UNKNOWN -> asked again later). */
typedef struct gp_unsettled {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    gp_assignment a;
} gp_unsettled;
size_t cluster_unsettled(gp_cluster *c, double min_age_s, gp_unsettled *out, size_t max);

/* Applies an observation: terminal -> release; bound with an assignment whose
 * node matches -> record/confirm as BOUND (the annotations are the truth, even
 * if they differ from what was assumed); bound without gpupack annotations ->
 * recorded as a host-only pod (its CPU and memory count on the node, no GPUs),
 * releasing a BOUND GPU record, and an ASSUMED one whose Binding is ACCEPTED
 * or UNKNOWN (ours carries the annotations, so it did not land); unbound
 * leaves ASSUMED state alone. Holds may over-commit a GPU here (the cluster says so); placement then
 * sees no free capacity there. */
void cluster_pod_observed(gp_cluster *c, const gp_pod_obs *obs);

/* Relist of pods: BOUND pods not observed between begin and end are
 * released; ACCEPTED ones not observed become UNKNOWN (a GET settles them);
 * other ASSUMED ones are left to their bind. */
void cluster_pods_resync_begin(gp_cluster *c);
void cluster_pods_resync_end(gp_cluster *c);

/* Releases ASSUMED pods still IN_FLIGHT after ttl_s seconds (monotonic
 * clock): a safety net for a bind that never reported. Never touches
 * ACCEPTED or UNKNOWN ones. Call only while the pod watch is healthy.
 * Also releases filter-time reservations past their own TTL. Returns how
 * many expired. */
int cluster_expire_assumed(gp_cluster *c, double ttl_s);

/* GPUs of `node` that pods of namespace `ns` hold (distinct devices). Call
 * under cluster_rdlock. */
int cluster_rd_ns_gpus(const gp_cluster *c, const char *node, const char *ns);

/* --- reading ---------------------------------------------------------- */

void cluster_rdlock(gp_cluster *c);
void cluster_unlock(gp_cluster *c);
const gp_node *cluster_rd_node(const gp_cluster *c, const char *name);   /* NULL if unknown */
/* Iterates nodes in no particular order; returns NULL past the end. */
const gp_node *cluster_rd_node_at(const gp_cluster *c, size_t *iter);
size_t cluster_rd_node_count(const gp_cluster *c);

/* A pod's recorded assignment (copy), state and policy; 0 or -1 when unknown. */
int cluster_pod_get(gp_cluster *c, const char *uid, gp_assignment *out, gp_pod_state *state);

typedef struct gp_cluster_stats {
    size_t nodes, gpus, pods_bound, pods_assumed;
    size_t pods_gpu_missing;        /* pods naming a GPU their node no longer has */
    int64_t mem_total, mem_used;    /* MiB over healthy GPUs */
    int64_t core_total, core_used;  /* per-mille */
    unsigned long lock_waits[2];    /* [0] read, [1] write: acquisitions that waited */
    double lock_wait_s[2];          /* and the time they waited */
} gp_cluster_stats;
void cluster_stats(gp_cluster *c, gp_cluster_stats *out);

/* JSON view for /inspect: {"nodes":[{name,source,gpus:[{index,uuid,model,healthy,
 * memory:{used,total},core:{used,total},pods:[{namespace,name,uid,state,policy,memMiB,core}]}]}]}
 * node == NULL: all nodes (sorted by name); else that one ({"node":...} or NULL
 * when unknown). Returns owned json. */
json_t *cluster_inspect(gp_cluster *c, const char *node);

#endif
