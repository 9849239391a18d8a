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
 * each with a GET and reports through cluster_settle (BOUND -> ACCEPTED,
 * REFUSED -> released, UNKNOWN -> asked again later). */
typedef struct gp_unsettled {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    unsigned attempt;              /* which of its Bindings is unsettled (cluster_settle) */
    gp_assignment a;
} gp_unsettled;
size_t cluster_unsettled(gp_cluster *c, double min_age_s, gp_unsettled *out, size_t max);
/* What the GET for u found (BOUND, REFUSED; UNKNOWN keeps it unsettled), as
 * cluster_bind_outcome does -- unless the pod has posted a Binding again since
 * u was taken (kube-scheduler retried its bind on the same node): that
 * Binding's own answer decides then, and a GET that saw the pod unbound
 * before it landed releases nothing. */
void cluster_settle(gp_cluster *c, const gp_unsettled *u, gp_bind_outcome outcome);

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
 * other ASSUMED ones are left to their bind, unless reconciliation (below)
 * releases them. */
void cluster_pods_resync_begin(gp_cluster *c);
void cluster_pods_resync_end(gp_cluster *c);

/* --- reconciliation with the API server's truth -------------------------
 *
 * A pod the API server shows bound with an assignment always holds what its
 * annotations say. Whenever that leaves a GPU holding more memory or compute
 * than it has -- after each such observation outside a LIST, after a whole
 * LIST (cluster_pods_resync_end), after a node's inventory changes -- the
 * assumptions on that GPU whose Binding was not posted yet (filter-time
 * reservations; binds not yet claimed, see cluster_bind_claim) are released,
 * newest first, until it fits. A GPU still over capacity then is the API
 * server's doing (a Binding that landed after gpupack had given its GPUs up,
 * annotations written by hand, a GPU gone from the inventory): gpupack
 * follows it, placement offers nothing there until pods leave, and each
 * transition to over capacity is counted and queued as a notice. */

/* Counters since start (cluster_stats copies them). */
typedef struct gp_cluster_truth {
    unsigned long released_reservations;   /* filter-time reservations released */
    unsigned long released_assumptions;    /* binds' assumptions released before posting */
    unsigned long kept_in_flight;          /* assumptions with a Binding out, on a GPU over
                                            * capacity: kept until their outcome is known */
    unsigned long over_capacity;           /* GPUs that went over capacity */
    unsigned long notices_dropped;         /* over-capacity notices the queue had no room for */
    unsigned long dra_conflicts;           /* of over_capacity: GPUs DRA claims share with
                                            * gpupack's pods when they went over */
} gp_cluster_truth;

/* A GPU that went over capacity, and the pod most recently recorded on it. */
#define GP_OVER_NOTICES_MAX 64
typedef struct gp_over_notice {
    char node[GP_NAME_MAX];
    int index;                                  /* device index */
    int64_t mem_used, mem_total;                /* MiB */
    int core_used, core_total;                  /* per-mille */
    char ns[GP_NAME_MAX], name[GP_NAME_MAX], uid[GP_UID_MAX];   /* "" when none */
    int64_t dra_mem;                            /* MiB of it DRA's allocated claims hold */
    int dra_claims;                             /* how many claims */
} gp_over_notice;

/* Takes up to max queued notices (oldest first) into out; returns how many. */
size_t cluster_take_over_notices(gp_cluster *c, gp_over_notice *out, size_t max);

/* Called by a bind thread right before it posts the Binding for pod uid with
 * assignment a (NULL: a plain Binding, no GPUs): 0 when the pod still holds
 * exactly a in the store (from then on reconciliation never releases it:
 * the Binding may land; a pod whose earlier Binding's answer was lost is in
 * flight again, and a settle about that earlier one no longer applies), -1
 * when it was released meanwhile (do not post; nothing to roll back). */
int cluster_bind_claim(gp_cluster *c, const char *uid, const gp_assignment *a) GP_WUR;

/* Drops pod uid's assumption if no Binding was posted for it (a bind that
 * gives up before posting). */
void cluster_bind_abandon(gp_cluster *c, const char *uid);

/* Releases ASSUMED pods still IN_FLIGHT after ttl_s seconds (monotonic
 * clock): a safety net for a bind that never reported. Never touches
 * ACCEPTED or UNKNOWN ones. Call only while the pod watch is healthy.
 * Also releases filter-time reservations past their own TTL. Returns how
 * many expired. */
int cluster_expire_assumed(gp_cluster *c, double ttl_s);

/* GPUs of `node` that pods of namespace `ns` hold (distinct devices). Call
 * under cluster_rdlock. */
int cluster_rd_ns_gpus(const gp_cluster *c, const char *node, const char *ns);

/* --- preemption claims ------------------------------------------------ */

/* A claim keeps GPU share on one node for a pending pod (a preemptor) while
 * the pods evicted for it terminate. Placement for any other pod of equal or
 * lower priority sees the claimed share (and host CPU/memory) as used; the
 * claimant itself and pods of higher priority do not -- kube-scheduler's rule
 * for nominated pods. A claim never enters the GPU counters, so it cannot
 * over-commit anything: a victim keeps its hold until the watch shows it gone,
 * and the claimant fits only then. One claim per pod (uid). It ends with
 * cluster_unclaim, when its pod is assumed (bind), seen bound or terminal, or
 * when its node goes. */
typedef struct gp_claim {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    int32_t priority;
    int64_t cpu_milli, mem_mib;   /* the claimant's host requests */
    bool dra;                     /* a claim pod's share: DRA's allocator is predicted to count it */
    /* non-empty: a held place (consolidation) for the replacement that this
     * controller makes of a moved pod. Every pod but one of this controller
     * sees it as used, whatever its priority; it ends when a pod of the
     * controller is placed (cluster_place_and_assume, any node), or with
     * cluster_unclaim */
    char owner[GP_UID_MAX];
    double created;               /* monotonic seconds, set by cluster_claim */
    gp_assignment a;              /* the node and GPU share claimed (a.node) */
} gp_claim;

#define GP_CLAIMS_MAX 4096        /* claims held at once; more are refused */

/* Records (or replaces) the claim of cl->uid. Returns 0, or -1 with a reason
 * (unknown node, a GPU index the node lacks, too many claims). */
int cluster_claim(gp_cluster *c, const gp_claim *cl, gp_err *err) GP_WUR;
void cluster_unclaim(gp_cluster *c, const char *uid);
/* Copies the claim of uid into out (NULL: only whether there is one): 0, or
 * -1 when it has none. */
int cluster_claim_get(gp_cluster *c, const char *uid, gp_claim *out);

/* The node as placement should see it for pod req (its uid, priority and
 * controller): the stored node itself when no claim applies to that pod,
 * else a copy in `scratch` (room for gp_node_size(GP_MAX_GPUS_PER_NODE))
 * whose counters include the claims of other pods of priority >=
 * req->priority and the held places of other controllers. Call under
 * cluster_rdlock; NULL when the node is unknown. */
const gp_node *cluster_rd_node_for(const gp_cluster *c, const char *name, const gp_pod_req *req,
                                   gp_node *scratch);
/* The same in steps, for a filter's loop over hundreds of names (strmap.h):
 * h = cluster_node_hash(name); cluster_rd_prefetch(c, h, 0) some names ahead
 * (the map's slot), cluster_rd_prefetch(c, h, 1) a few names later (the
 * node's first line), then cluster_rd_node_for_hashed. Under cluster_rdlock. */
uint64_t cluster_node_hash(const char *name);
void cluster_rd_prefetch(const gp_cluster *c, uint64_t h, int step);
const gp_node *cluster_rd_node_for_hashed(const gp_cluster *c, const char *name, uint64_t h,
                                          const gp_pod_req *req, gp_node *scratch);

/* One pod the store counts on a node, as preemption reads it. Pointers are
 * valid during the callback only. */
typedef struct gp_pod_on_node {
    const char *uid, *ns, *name, *policy;
    gp_pod_state state;
    bool applied;                 /* ASSUMED, and the API server applied its Binding (ACCEPTED) */
    int nholds;
    const gp_hold *holds;         /* by the device index of the GPU each hold sits on now */
    int64_t cpu_milli, mem_mib;
} gp_pod_on_node;
/* Calls fn for every pod recorded on `node` (GPU and host-only pods). Call
 * under cluster_rdlock; fn must not call into the store. */
void cluster_rd_node_pods(const gp_cluster *c, const char *node,
                          void (*fn)(void *ud, const gp_pod_on_node *p), void *ud);

/* --- DRA --------------------------------------------------------------
 *
 * GPUs that a Dynamic Resource Allocation driver publishes, and what the
 * allocated ResourceClaims hold of them, as one node's view (built from the
 * ResourceSlices and ResourceClaims by act/dra_feed.c). The store merges
 * them into the node's GPUs: a DRA GPU whose UUID the node's inventory also
 * names is that GPU (one map, one set of counters); one the inventory lacks,
 * or that has no UUID, is added as a GPU of its own (index after the
 * inventory's), offered to claims only. What claims hold counts as used for
 * every pod; when claims and gpupack's pods together over-fill a GPU, the
 * store reconciles as for annotations (unsent assumptions released, the rest
 * followed, counted and reported with a notice). */
typedef struct gp_dra_gpu_view {
    char uuid[GP_UUID_MAX];
    char model[GP_MODEL_MAX];
    char driver[64], pool[GP_NAME_MAX], device[64];
    gp_gpu_dra dra;               /* order (1-based), capacity, policy, what claims use */
    int core_used;                /* per-mille claims hold (an exclusive device: all) */
} gp_dra_gpu_view;

/* One allocated claim's share of one GPU of the view. */
typedef struct gp_dra_holder {
    int gpu;                      /* position in the view's gpus */
    char claim_ns[GP_NAME_MAX], claim[GP_NAME_MAX];
    char pod_uid[GP_UID_MAX], pod[GP_NAME_MAX];   /* the first pod it is reserved for; "" none */
    int64_t mem_mib;
    int core;
} gp_dra_holder;

typedef struct gp_dra_node_view {
    int ngpus;
    gp_dra_gpu_view *gpus;        /* in the allocator's order */
    int nholders;
    gp_dra_holder *holders;
} gp_dra_node_view;

/* Replaces what DRA says of node `name` (copied; v NULL or empty: nothing).
 * May come before the node itself: it is kept and merged when the node
 * arrives. A pod that gpupack assumed on DRA GPUs (a gp_pod_req with dra set)
 * and that the view now shows holding its claims gives its assumed GPUs up:
 * the claims count instead. */
void cluster_set_dra(gp_cluster *c, const char *name, const gp_dra_node_view *v);
/* True while an allocated claim on node `name` is reserved for pod uid, or
 * one reserved for no pod is still allocated there (on its way out: its
 * reservation is cleared before it is deleted or deallocated). */
bool cluster_dra_holds_pod(gp_cluster *c, const char *name, const char *uid);
/* Frees the arrays of a view built by the caller; accepts a zeroed view. */
void cluster_dra_view_free(gp_dra_node_view *v);

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
    size_t gpus_over;               /* GPUs holding more than they have (annotations) */
    size_t dra_gpus;                /* GPUs published through DRA */
    int64_t dra_mem_total, dra_mem_used;   /* MiB they publish / allocated claims hold */
    size_t dra_claims;              /* claim shares on them (a claim on two GPUs: 2) */
    gp_cluster_truth truth;
    int64_t mem_total, mem_used;    /* MiB over healthy GPUs */
    int64_t core_total, core_used;  /* per-mille */
    unsigned long lock_waits[2];    /* [0] read, [1] write: acquisitions that waited */
    double lock_wait_s[2];          /* and the time they waited */
} gp_cluster_stats;
void cluster_stats(gp_cluster *c, gp_cluster_stats *out);

/* JSON view for /inspect: {"nodes":[{name,source,gpus:[{index,uuid,model,healthy,
 * memoryMiB:{used,total},corePercent:{used,total},overCapacity (only when true),
 * pods:[{namespace,name,uid,state,binding,policy,memMiB,corePercent}],dra,reservations}],
 * missingGPUs}]}
 * node == NULL: all nodes (sorted by name); else that one ({"node":...} or NULL
 * when unknown). Returns owned json. */
json_t *cluster_inspect(gp_cluster *c, const char *node);
/* The same as JSON text, compact, appended to out (with the pods' uids only
 * when `uids`): what /inspect sends without building the tree. -1 (nothing
 * appended) when `node` is not known. A full answer is bounded by out's
 * limit (CLUSTER_INSPECT_MAX for the callers here: 5,000 nodes of 8 GPUs
 * are a few MiB). */
#define CLUSTER_INSPECT_MAX ((size_t)256 << 20)
int cluster_inspect_write(gp_cluster *c, const char *node, bool uids, gp_buf *out);

#endif
