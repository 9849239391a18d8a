/* requeue.h -- makes an older kube-scheduler retry the pods it parked where a newer one would.
 *
 * kube-scheduler keeps pods that failed to schedule in an "unschedulable pool"
 * and retries them on cluster events (or a 5-minute flush). Two gaps of older
 * releases leave gpupack's pods there with nothing to wake them
 * (docs/kubernetes-versions.md has the sources):
 *
 *  ERRORS   before 1.29 a pod whose attempt ended in an error -- gpupack
 *           unreachable or not ready -- is parked like an unschedulable one;
 *           gpupack coming back is no event (1.29+ retries it after a backoff).
 *           apiversion.h: GP_FACT_REQUEUE_NUDGES.
 *  NODES    before 1.32 (queueing hints off) a new or grown node moves only the
 *           parked pods that pass a pre-check counting every requested resource
 *           against the node's allocatable -- which never lists gpupack's resources, so
 *           GPU pods are never moved by node events. GP_FACT_NODE_PRECHECK.
 *
 * An update of the pod's own metadata is an event for that pod alone
 * (kube-scheduler 1.26 PriorityQueue.Update: isPodUpdated compares the pods
 * without status, so an annotation change moves the pod out of the pool). So a
 * nudge is one merge patch of the annotation gpupack.io/requeue, with the pod's
 * uid in the patch (a pod re-created under the name refuses it: 422).
 *
 * When: each time this replica (re)gains the ability to serve (`serving` turns
 * true: first full LIST applied, leadership won), pending pods whose
 * PodScheduled condition says SchedulerError (ERRORS) and pending GPU pods
 * parked for any reason (NODES: nodes may have come while gpupack was away);
 * and, while serving, each time gpupack's map gains GPU capacity (a node added
 * or grown), the parked GPU pods (NODES). Pods reported parked within a short
 * window after the trigger are included (their report may trail the trigger).
 * One nudge per pod and trigger, at a bounded rate (token bucket); except that
 * a pod still parked after an error renudge_s after its nudge, while the
 * trigger's window is open, is nudged again (GP_REQUEUE_RENUDGE_MAX times at
 * most): its retry failed again (e.g. its filter call met the Service's
 * endpoints mid-change), and a retry that fails alike changes nothing in the pod
 * the watch could show, while 1.26.0 would keep it parked up to 5 minutes.
 * Where kube-scheduler needs neither, nothing is patched and nothing tracked.
 *
 *  RACE     every version: kube-scheduler's watch may show a GPU pod deleted
 *           before gpupack's does. A waiting pod it retries at once in between
 *           is refused from the older state and parked, and the deletion that
 *           freed its GPU is spent: nothing wakes it before the 5-minute flush
 *           unless another event moves parked pods. So filter reports the GPU
 *           pods it refused on every node (requeue_refused), the pod watch the
 *           GPU share it sees freed (requeue_released) and every other event
 *           that moves parked pods by itself -- an assigned pod's or a node's
 *           (requeue_moving_event). GP_REQUEUE_RACE_SETTLE_S after a release
 *           with no such event since, the pods refused up to
 *           GP_REQUEUE_RACE_WINDOW_S before it are nudged, each at most once per
 *           GP_REQUEUE_RACE_GAP_S. In a busy cluster the next event comes first
 *           and nothing is sent.
 * The nudge is the annotation where kube-scheduler parks GPU pods on node
 * events (< 1.32, mask GP_REQUEUE_NODES); from 1.32 any new resourceVersion of
 * a parked pod wakes it, and gpupack writes the condition GP_REQUEUE_CONDITION
 * on its status instead (pods/status, which the base RBAC grants).
 *
 * The pod watch feeds requeue_observe; a thread of its own does the rest. */
#ifndef GP_REQUEUE_H
#define GP_REQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "kube/kube.h"
#include "lib/util.h"

#define GP_REQUEUE_ANNOTATION "gpupack.io/requeue"
#define GP_REQUEUE_RATE_DEFAULT 20.0    /* pods nudged per second ... */
#define GP_REQUEUE_BURST_DEFAULT 20.0   /* ... and at most this many at once */
#define GP_REQUEUE_WINDOW_DEFAULT 60.0  /* after regaining service: pods reported parked
                                         * this long later are still nudged */
#define GP_REQUEUE_NODES_WINDOW_DEFAULT 5.0   /* the same after GPU capacity grew */
#define GP_REQUEUE_TRACK_MAX 100000     /* parked pods remembered; more are not nudged */
#define GP_REQUEUE_RENUDGE_DEFAULT 10.0 /* a pod still parked after an error this long after
                                         * its nudge is nudged again (within the window) ... */
#define GP_REQUEUE_RENUDGE_MAX 5        /* ... this many times per trigger at most */
#define GP_REQUEUE_RACE_WINDOW_S 10.0   /* RACE: pods refused this long before a release (the
                                         * watch may lag that much under load) ... */
#define GP_REQUEUE_RACE_SETTLE_S 1.0    /* ... are nudged this long after it, with no moving
                                         * event since ... */
#define GP_REQUEUE_RACE_GAP_S 30.0      /* ... each at most once in this long */
#define GP_REQUEUE_RACE_MAX 10000       /* refusals remembered; more are not nudged */
#define GP_REQUEUE_CONDITION "gpupack.io/GPURequeue"

/* What kube-scheduler needs (the `needed` callback's bits). */
#define GP_REQUEUE_ERRORS 1u
#define GP_REQUEUE_NODES 2u

typedef struct gp_requeue gp_requeue;

typedef struct gp_requeue_config {
    double rate, burst;                 /* <= 0: the defaults above */
    double window_s, nodes_window_s;    /* <= 0: the defaults above */
    double renudge_s;                   /* <= 0: the default above */
    double poll_s;                      /* how often `serving` is asked (default 0.1 s) */
    /* Does this replica serve the verbs now (ready, and the leader if elected)?
     * Polled from the requeue thread. */
    bool (*serving)(void *ud);
    /* Which gaps the cluster's kube-scheduler has: GP_REQUEUE_* bits, or -1
     * when not known yet (asked again at the next poll). Asked from the requeue
     * thread each time service is regained; may block briefly (GET /version). */
    int (*needed)(void *ud);
    void *ud;
} gp_requeue_config;

/* Borrows k (used from the requeue thread) and cfg->ud. No thread yet. */
gp_requeue *requeue_new(gp_kube *k, const gp_requeue_config *cfg);
int requeue_start(gp_requeue *rq, gp_err *err) GP_WUR;
/* Stops the thread (an API call in flight is cancelled) and frees; accepts NULL. */
void requeue_free(gp_requeue *rq);

typedef enum gp_requeue_seen {
    GP_REQUEUE_PARKED_ERROR,    /* pending, PodScheduled False / SchedulerError */
    GP_REQUEUE_PARKED,          /* pending, PodScheduled False for another reason */
    GP_REQUEUE_PENDING,         /* pending, anything else */
    GP_REQUEUE_BOUND,           /* spec.nodeName set */
    GP_REQUEUE_GONE,            /* deleted, being deleted, Succeeded / Failed */
} gp_requeue_seen;

/* What the pod watch saw of one pod; gpu: it asks GPU resources. Thread-safe,
 * cheap; borrows the strings. Does nothing once kube-scheduler is known to
 * need no nudges. */
void requeue_observe(gp_requeue *rq, const char *uid, const char *ns, const char *name,
                     gp_requeue_seen seen, bool gpu);
/* A full pod LIST begins (end false) or has been applied (end true): at its
 * end the pods it did not show are forgotten (deleted while no watch ran,
 * so no DELETED came). Thread-safe; accepts NULL. */
void requeue_listing(gp_requeue *rq, bool end);
/* gpupack's map gained GPU capacity (a node with GPUs added, or more of them):
 * the parked GPU pods are nudged (when kube-scheduler needs it). Thread-safe. */
void requeue_capacity_grew(gp_requeue *rq);
/* RACE (every version; thread-safe, cheap, borrow the strings): filter refused
 * this GPU pod on every node kube-scheduler offered; ... */
void requeue_refused(gp_requeue *rq, const char *uid, const char *ns, const char *name);
/* ... the pod watch saw GPU share freed (a GPU pod deleted or finished); ... */
void requeue_released(gp_requeue *rq);
/* ... or another change kube-scheduler moves parked pods on by itself (an
 * assigned pod's, a node's). */
void requeue_moving_event(gp_requeue *rq);

typedef struct gp_requeue_stats {
    unsigned long regained;         /* times this replica regained the ability to serve */
    unsigned long race_passes;      /* releases after which refused pods were nudged */
    unsigned long race_quiet_skips; /* ... and those another event made needless */
    unsigned long passes[2];        /* triggers acted on: [0] regained, [1] capacity grew */
    unsigned long sent, gone, failed, forbidden;   /* nudges by outcome */
    unsigned long bound[2];         /* nudged pods seen bound afterwards, by trigger */
    unsigned long parked;           /* parked pods known right now */
    int needed;                     /* the last answer of `needed` (-1 not asked yet) */
} gp_requeue_stats;
void requeue_stats(gp_requeue *rq, gp_requeue_stats *out);
/* Appends the gpupack_requeue_* metrics (Prometheus text). Thread-safe. */
void requeue_metrics(gp_requeue *rq, gp_buf *out);

/* The merge patch of one nudge (owned): the annotation, and the uid as a
 * precondition (a re-created pod answers 422, nothing is written). Pure. */
char *requeue_patch_body(const char *uid, int64_t now_ns);
/* The strategic merge patch of pods/status for a nudge from 1.32 (owned):
 * one condition {type, status True, reason, message, lastProbeTime now, and
 * lastTransitionTime now when first}, and the uid as a precondition. Pure. */
char *requeue_condition_body(const char *uid, const char *type, const char *reason, const char *msg,
                             bool first, int64_t now_ns);

#endif
