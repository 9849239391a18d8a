/* preempt.h -- priorities for shared GPUs: gpupack's own preemption.
 *
 * kube-scheduler cannot preempt for GPU share: NodeResourcesFit ignores
 * gpupack's resources, so DefaultPreemption's dry run finds that every node
 * fits without victims and produces no candidate, and an extender's
 * ProcessPreemption is only ever called with candidates (docs/priorities.md
 * has the source references). So gpupack decides itself:
 *
 *   filter finds no node for a pod that asks GPUs (gp_preempt_hooks.nofit)
 *     -> choose victims among the request's nodes (pack/victims.h): strictly
 *        lower priority, not protected by their policy, the best set under
 *        kube-scheduler's ranking at GPU level, the node whose free share
 *        fragments least among equals;
 *     -> claim the share the pod will get (cluster_claim): pods of equal or
 *        lower priority cannot take it while the victims terminate;
 *     -> a worker thread sets the pod's status.nominatedNodeName (what a
 *        restarted gpupack and kube-scheduler read) and evicts the victims
 *        through the Eviction API (PodDisruptionBudgets honoured; a 429 makes
 *        it try the next plan);
 *   the victims keep their GPUs in the store until the watch shows them gone;
 *   then the worker touches the pod's metadata where kube-scheduler needs it
 *   (before 1.32 it retries a parked pod on such an update, not always on its
 *   victims' deletion), the
 *   pod fits its node and is bound like any other; the claim ends
 *   when it is bound, deleted, or after the victims' grace period plus
 *   `wait_s` (then it may plan again).
 *
 * After a restart nothing of the above is in memory: a pending pod with a
 * nominatedNodeName gets a claim again on that node when terminating pods
 * there (or free share) make room for it (preempt_pods_synced, before the
 * verbs answer); evictions not yet made are made when filter plans anew.
 *
 * kube-scheduler's preemptVerb (gp_preempt_hooks.process): for a pod that
 * asks GPUs, each node kube-scheduler proposes (it found host victims there)
 * keeps its victims plus the GPU victims gpupack adds, or is dropped when
 * GPUs cannot be freed there; other pods get their victims back unchanged.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef GP_PREEMPT_H
#define GP_PREEMPT_H

#include <jansson.h>
#include <stdbool.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "lib/util.h"

/* What an eviction came to (act/evictor.h makes it; the worker reads it). */
typedef enum {
    GP_EVICT_DONE = 0,      /* accepted: the pod is being deleted (its grace period runs) */
    GP_EVICT_GONE = 1,      /* no such pod (404), or another pod under that name (uid precondition) */
    GP_EVICT_BLOCKED = 2,   /* 429: a PodDisruptionBudget allows no disruption now */
    GP_EVICT_RETRY = 3,     /* transport error, timeout, 5xx: may work later */
    GP_EVICT_REFUSED = 4    /* 401/403 (RBAC: pods/eviction create), 400, 422: will not work */
} gp_evict_outcome;

/* The API calls preemption makes; tests fake them. Called from the worker
 * thread, without preemption's lock; event may also be called with it held
 * (it must not block). */
typedef struct gp_preempt_io {
    void *ud;
    gp_evict_outcome (*evict)(void *ud, const char *ns, const char *name, const char *uid,
                              gp_err *err);
    /* 0 done, 1 pod gone, 2 refused (go on without), -1 retry (evictor_nominate).
     * held: a consolidation's record of its held places (model/heldrec.h),
     * written with the nomination as the pod's gpupack.io/HeldPlaces
     * condition; NULL for a preemption */
    int (*nominate)(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                    const char *held, gp_err *err);
    void (*event)(void *ud, const char *ns, const char *name, const char *uid, bool warning,
                  const char *reason, const char *msg);
    /* The victims are gone: make kube-scheduler retry the preemptor now (an
     * update of the pod: evictor_nudge, evictor_nudge_status). msg says what
     * is held for it; first: the first nudge of this plan (else it is still
     * unbound renudge_s... later). 0 done, 1 gone, 2 not allowed, -1 retry. */
    int (*nudge)(void *ud, const char *ns, const char *name, const char *uid, const char *msg,
                 bool first, gp_err *err);
} gp_preempt_io;

typedef struct gp_preempt_config {
    gp_preempt_io io;
    double wait_s;        /* a claim outlives its victims' grace period by this much (default 60) */
    double tick_s;        /* worker period (default 0.2) */
    double renudge_s;     /* a preemptor still unbound this long after its nudge is nudged
                           * again, then after twice as long... (default 5; RENUDGES_MAX) */
    int search_budget;    /* feasibility checks per node (pack/victims.h; default 2048) */
} gp_preempt_config;

typedef struct gp_preempt gp_preempt;

/* Borrows c. No thread yet. */
gp_preempt *preempt_new(gp_cluster *c, const gp_preempt_config *cfg);
/* Stops the worker (no API call after this); the feeds and the hooks keep
 * working. Accepts NULL; idempotent. */
void preempt_stop(gp_preempt *p);
/* Stops (as preempt_stop) and frees; accepts NULL. */
void preempt_free(gp_preempt *p);
/* The hooks for gp_extender_config.preempt (ud = p). */
gp_preempt_hooks preempt_hooks(gp_preempt *p);
/* Borrows e (policies, pod requests). Starts the worker thread unless
 * `worker` is false (tests call preempt_tick). The budgets come from
 * act/pdb_feed (none known without it). */
int preempt_start(gp_preempt *p, gp_extender *e, bool worker, gp_err *err) GP_WUR;

/* The pod watch (live.h's observer): every pod object, and the end of a
 * full LIST. preempt_pod_seen takes the pod already decoded (model/pod.h;
 * the watch decodes each object once, k8s_obs); preempt_pod_event decodes it. */
void preempt_pod_event(gp_preempt *p, bool deleted, const json_t *pod);
void preempt_pod_seen(gp_preempt *p, bool deleted, const json_t *pod, const gp_pod *decoded);
void preempt_pods_synced(gp_preempt *p);
/* A full pod LIST begins (end false; since: when it asked its first page,
 * pre_now_s's clock) or has been applied (end true): at its end, the pods it
 * did not show are forgotten (deleted while no watch ran), and so is the plan
 * of a preemptor it did not show, made before `since`. */
void preempt_pods_listing(gp_preempt *p, bool end, double since);
/* The PodDisruptionBudget feed (act/pdb_feed; tests call it): each object,
 * and a full LIST beginning (end false) and ending, when the budgets it did
 * not show are dropped. */
void preempt_pdb_event(gp_preempt *p, bool deleted, const json_t *pdb);
void preempt_pdbs_resync(gp_preempt *p, bool end);

/* One round of the worker: nominations, evictions, expiry. */
void preempt_tick(gp_preempt *p);

/* For /inspect: {"preemptions":[{pod, priority, node, stage, frees, victims,
 * ageSeconds, expiresInSeconds}]}. Owned. */
json_t *preempt_inspect(gp_preempt *p);
/* metrics_fn (pre: a gp_preempt *, may be NULL): gpupack_preemptions_total,
 * gpupack_preemption_victims_total, ... */
void preempt_metrics(void *pre, gp_buf *out);

typedef struct gp_preempt_stats {
    unsigned long started;        /* preemptions that evict at least one pod */
    unsigned long waits;          /* claims on pods that were already terminating (no eviction) */
    unsigned long victims;        /* pods evicted (or found gone) for a preemptor */
    unsigned long bound, deleted, expired, replanned, failed;   /* how claims ended */
    unsigned long evict_blocked, evict_retry, evict_refused;
    unsigned long nudges, renudges;   /* preemptors told their share is free; told again */
    unsigned long active;         /* claims held now */
    /* consolidation (docs/consolidation.md) */
    unsigned long c_started;      /* plans that move at least one pod */
    unsigned long c_moved;        /* pods evicted to move */
    unsigned long c_bound, c_deleted, c_expired, c_blocked, c_failed;   /* how plans ended */
    unsigned long c_no_plan, c_budget;   /* tries that found no plan: none within the moves per
                                          * pod, or only one the hourly budget forbids */
    unsigned long c_held;         /* places held for replacements now */
    unsigned long c_held_used, c_held_expired;
    unsigned long c_held_rebuilt; /* held again from a waiting pod's record (restart, new leader) */
    unsigned long c_last_hour;    /* moves in the last hour */
    unsigned long pods_known;     /* pods the watch has shown and not deleted */
    unsigned long claims_parked;  /* of them, pending claim pods kube-scheduler found no node for
                                   * (the worker plans their preemption: dra_parked_round) */
} gp_preempt_stats;
void preempt_stats(gp_preempt *p, gp_preempt_stats *out);

#endif
