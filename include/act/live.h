/* live.h -- live mode: the API server feeds the store (LIST+WATCH); the
 * verbs' hooks into it; housekeeping settles lost bind outcomes and expires
 * binds that never reported. The Binding itself is act/bindpipe's. */
#ifndef GP_LIVE_H
#define GP_LIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "kube/apiversion.h"
#include "kube/kube.h"
#include "kube/reflector.h"
#include "lib/util.h"

typedef struct gp_live_config {
    const char *kubeconfig;        /* NULL: in-cluster service account */
    double assume_ttl_s;           /* a bind that never reported is released after this (default 120) */
    double watch_stall_s;          /* a watch silent this long is restarted (default 90);
                                    * watches ask timeoutSeconds = 2/3 of it, so a healthy
                                    * server always ends them first */
    int64_t aliyun_unit_mib;       /* for restoring aliyun annotations (default 1024) */
} gp_live_config;

typedef struct gp_live gp_live;

/* Reads credentials and prepares the client; no network yet. Borrows c. */
gp_live *live_new(const gp_live_config *cfg, gp_cluster *c, gp_err *err);
/* Whether this replica may bind now (act/bindpipe's gate: it serves, and
 * with leader election it leads). The requeue nudges parked pods only then.
 * Called from the requeue's thread: must be thread-safe. */
typedef struct gp_live_gate {
    bool (*fn)(void *ud);
    void *ud;
} gp_live_gate;
/* Without one, this replica binds whenever it serves. Set before live_start;
 * borrows gate.ud. */
void live_set_bind_gate(gp_live *l, gp_live_gate gate);
/* What the API server's version does (apiversion.h; false while unknown).
 * Thread-safe. */
bool live_api_has(gp_live *l, gp_api_fact f);
/* Before the Binding of a pod whose GPUs come from ResourceClaims: reads its
 * claims again, to learn the allocation kube-scheduler wrote in its PreBind
 * (docs/dra.md). Called from a bind thread. */
void live_refresh_pod_claims(gp_live *l, const json_t *pod);
/* Raises a Warning Event `reason` with `msg` on pod ns/name (uid may be "";
 * ns/name are "" when no pod is concerned). Called from the reflector
 * threads: must not block. */
typedef struct gp_live_warn {
    void (*fn)(void *ud, const char *ns, const char *name, const char *uid, const char *reason,
               const char *msg);
    void *ud;
} gp_live_warn;
/* Where GPUs found over capacity are reported (cluster.h, reconciliation).
 * Set before live_start; borrows warn.ud. */
void live_set_warn(gp_live *l, gp_live_warn warn);
/* Who else hears of pods (preemption): every pod object the watch applies,
 * after the store did; the start and the end of every full pod LIST
 * (`listing`: what a LIST does not show and was known before it asked its
 * first page was deleted while no watch ran); and
 * the end of every LIST once both nodes and pods are known (`synced`, called
 * before gpupack_cluster_ready turns 1 after the first). From the reflectors'
 * threads. Set before live_start; borrows ud; a NULL function is skipped. */
typedef struct gp_live_pod_observer {
    void (*apply)(void *ud, bool deleted, const json_t *pod, const gp_pod *decoded);
    void (*listing)(void *ud, bool end, double since);   /* since: at the start, when the
                                                          * LIST asked its first page (monotonic) */
    void (*synced)(void *ud);
    void *ud;
} gp_live_pod_observer;
void live_set_pod_observer(gp_live *l, gp_live_pod_observer o);
/* Does this cluster's kube-scheduler leave a pod parked when an event that
 * frees room for it is one its rejecting plugins did not register for (no
 * queueing hints: before 1.32; apiversion.h GP_FACT_NODE_PRECHECK)? True also
 * while the API server's version is not known yet. Thread-safe. */
bool live_scheduler_parks(gp_live *l);
/* Fills the extender's DRA hook (docs/dra.md): pods' claims become GPU
 * requests. */
void live_dra_hooks(gp_live *l, gp_extender_config *ecfg);
/* Fills the extender's `refused` hook: the requeue's race of two watches
 * (requeue.h RACE). */
void live_requeue_hooks(gp_live *l, gp_extender_config *ecfg);
/* The API client (borrowed; lives as long as l). */
gp_kube *live_kube(gp_live *l);
/* Starts the node and pod reflectors (threads). Borrows e for note_pod. */
int live_start(gp_live *l, gp_extender *e, gp_err *err) GP_WUR;
/* True while the map may answer the verbs: the nodes and the pods have been
 * listed and applied, and no relist that will replace either view is due
 * (reflector_current). Until then gpupack's map is not the API server's
 * truth, and a decision from it may hand out GPUs that listed pods hold.
 * why (may be NULL) says what is awaited. Thread-safe. */
bool live_serving(gp_live *l, char *why, size_t whylen);
/* live_serving, and the pod watch has streamed without a break for at least
 * min_s: the events of every write committed until shortly before now have
 * arrived. What a replica that may have just taken over from another binder
 * needs before it binds: that binder's last Bindings must be in its map
 * (a watch in its retry backoff after an API server outage can lag for
 * tens of seconds). Thread-safe. */
bool live_fresh(gp_live *l, double min_s, char *why, size_t whylen);
/* True while the data may be stale (watch down); why gets a reason. */
bool live_stale(gp_live *l, char *why, size_t whylen);
/* Stops threads and frees; accepts NULL. Call before freeing the extender
 * and the cluster (the reflectors use both until they stop). */
void live_free(gp_live *l);

/* metrics_fn (live: a gp_live *, or NULL in embedded mode, which reports
 * ready 1, stale 0 and nothing else): gpupack_cluster_ready/_stale, the
 * reflectors' watch/list counters, settled and expired binds. Thread-safe.
 * The Bindings' own families are act/bindpipe's. */
void live_metrics(void *live, gp_buf *out);

#endif
