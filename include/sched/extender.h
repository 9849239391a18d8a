/* extender.h -- kube-scheduler extender verbs: decoded request -> decision.
 *
 * No sockets here: server.c hands over request bodies and sends back what
 * these return. In live mode a binder (kube side) posts the Binding, which
 * carries the annotations, from the extender's bind threads; in embedded
 * mode there is none and bind only records. */
#ifndef GP_EXTENDER_H
#define GP_EXTENDER_H

#include <jansson.h>
#include <stddef.h>

#include "model/pod.h"
#include "pack/cluster.h"
#include "policy/policy.h"
#include "lib/util.h"

typedef struct gp_extender gp_extender;

/* How long a filter-time reservation (nodeDecision: filter) waits for its
 * bind before it lapses; the live loop sweeps every --assume-ttl/4 s. */
#define GP_RESERVE_TTL_S 30.0

/* What bind asks the binder to do for one pod. */
typedef struct gp_bind_call {
    const char *ns, *name, *uid, *node;
    const char *rv;               /* the pod's resourceVersion bind decided on; NULL = none */
    const json_t *annotations;    /* metadata.annotations of the Binding; NULL = none */
    const gp_assignment *assign;  /* what they say; NULL for a plain Binding */
    const char *policy;
    const json_t *claims_pod;     /* its GPUs come from ResourceClaims: the pod (the binder
                                   * learns their allocation first); NULL otherwise */
} gp_bind_call;

/* Carries one decided bind out (act/bindpipe.h): the gate, the store's claim
 * on the GPUs, the Binding, its outcome into the store; err says why for
 * REFUSED and UNKNOWN. Called from a bind thread, without store locks. */
typedef gp_bind_outcome (*gp_binder_fn)(void *ud, const gp_bind_call *call, gp_err *err);

/* Returns the current policy set, referenced (caller unrefs). */
typedef gp_policy_set *(*gp_policy_source_fn)(void *ud);

/* Preemption (sched/preempt.h) as the verbs reach it; every member optional. */
typedef struct gp_preempt_hooks {
    void *ud;
    /* filter found no node for a pod that asks GPUs: may start a preemption
     * or report one under way. `nodes` are the request's nodes, `unresolvable`
     * filter's verdict on each; set (referenced by the caller) holds the view.
     * Returns the index of a node whose failure reason becomes `reason`, or -1.
     * Called from request threads. */
    long (*nofit)(void *ud, const gp_pod *pod, const gp_pod_req *req, const gp_policy_view *view,
                  gp_policy_set *set, const char *const *nodes, const bool *unresolvable,
                  size_t n, char *reason, size_t len);
    /* kube-scheduler's preemptVerb: ExtenderPreemptionArgs (borrowed) -> the
     * HTTP status and an owned ExtenderPreemptionResult (or {"Error"}). */
    int (*process)(void *ud, const json_t *args, char **out);
    /* explain: what preemption does or would do for the pod (owned JSON). */
    json_t *(*status)(void *ud, const json_t *pod);
} gp_preempt_hooks;

typedef struct gp_extender_config {
    gp_binder_fn binder;          /* NULL: embedded mode, bind records as BOUND */
    void *binder_ud;
    gp_policy_source_fn policies; /* NULL: the built-in default set */
    void *policies_ud;
    size_t pending_max;           /* pod requests remembered between filter and bind (default 10000) */
    double pending_ttl_s;         /* how long they are remembered (default 600) */
    double pending_gone_s;        /* ... and after the watch shows the pod deleted (default 60) */
    int bind_threads;             /* binds talking to the API server at once (default 16) */
    /* threads that evaluate one node list of 1,024 nodes or more together
     * (default: one per CPU, at most 4; 1: the request's own thread alone) */
    int eval_threads;
    /* Non-NULL: the admission webhook runs with these resource names, and
     * bind refuses pods asking them that it did not mutate (borrowed). */
    const gp_resource_names *webhook_names;
    /* Live mode: whether gpupack's map is the API server's truth right now
     * (live_serving: nodes and pods listed and applied, no relist due); NULL:
     * always (embedded mode). Until it is, the verbs decide nothing: filter
     * and bind answer an Error, prioritize HTTP 503, and kube-scheduler
     * retries the pod later. Called from request and bind threads. */
    bool (*serving)(void *ud, char *why, size_t whylen);
    void *serving_ud;
    gp_preempt_hooks preempt;     /* live mode: priorities and preemption */
    /* DRA (live mode, docs/dra.md; optional): for a pod that asks no GPUs
     * of gpupack's own, the GPU devices its ResourceClaims ask and no
     * allocation has given yet, into req (drastore_pod_request: 0, or 1 with
     * why when it cannot be predicted). */
    int (*dra_request)(void *ud, const json_t *pod, gp_pod_req *req, gp_err *why);
    void *dra_ud;
    /* Optional: kube-scheduler's filter refused this GPU pod on every node it
     * offered (requeue_refused: the race of two watches). */
    void (*refused)(void *ud, const char *uid, const char *ns, const char *name);
    void *refused_ud;
} gp_extender_config;

/* Borrows c (must outlive the extender). */
gp_extender *extender_new(gp_cluster *c, const gp_extender_config *cfg);
/* Finishes the binds in flight and stops the bind threads: at shutdown, once
 * no request can arrive (server_stop) and before what the binds use -- the
 * leader's fencing, the watch's client -- goes. Call no verb afterwards. */
void extender_stop_binds(gp_extender *e);
void extender_free(gp_extender *e);   /* accepts NULL */

/* One verb: `body` is the raw request (borrowed). Returns the HTTP status and
 * sets *out to the answer as owned JSON text (free()); a 4xx answer is
 * {"Error": "what is wrong"}. Thread-safe. */
int extender_filter(gp_extender *e, const char *body, size_t len, char **out);
/* filter that never starts a preemption (explain asks it). */
int extender_filter_readonly(gp_extender *e, const char *body, size_t len, char **out);
/* kube-scheduler's preemptVerb (ExtenderPreemptionArgs -> ExtenderPreemptionResult):
 * 400 for a malformed body; without preemption hooks every proposed victim
 * set is returned unchanged (kube-scheduler's ordinary preemption). */
int extender_preempt(gp_extender *e, const char *body, size_t len, char **out);
/* What preemption does or would do for a pod (borrowed), for explain:
 * owned JSON, or NULL when preemption is not running (embedded mode). */
json_t *extender_preempt_status(gp_extender *e, const json_t *pod);
/* The victims of ExtenderPreemptionArgs (borrowed) as an owned
 * ExtenderPreemptionResult text, unchanged (MetaVictims by UID). */
char *extender_preempt_echo(const json_t *args);
int extender_prioritize(gp_extender *e, const char *body, size_t len, char **out);
int extender_bind(gp_extender *e, const char *body, size_t len, char **out);

/* bind without waiting: *out/return as extender_bind when the answer is
 * known at once (bad request, no fit, embedded mode) -- then returns the
 * status and never calls done. Otherwise returns 0 and later calls
 * done(ud, status, out) exactly once from a bind thread, out owned by the
 * callee. The GPUs are assumed before this returns either way, so the next
 * filter already sees them. */
typedef void (*gp_bind_done_fn)(void *ud, int status, char *out);
int extender_bind_start(gp_extender *e, const char *body, size_t len, gp_bind_done_fn done,
                        void *ud, char **out);

/* Remembers a pending pod's request (the watch calls this for unscheduled
 * pods, so bind knows them even without a preceding filter). Borrows pod. */
void extender_note_pod(gp_extender *e, const json_t *pod);
/* Forgets a remembered pod that the watch showed bound: its bind is over (a
 * retried bind to the same node is answered from the store), and 10,000
 * remembered pods are 6 MB. Thread-safe. */
void extender_forget_pod(gp_extender *e, const char *uid);
/* The watch showed a pending pod deleted (or being deleted): its request is
 * forgotten pending_gone_s later -- not at once, so that a bind kube-scheduler
 * had already decided still reaches the Binding, whose uid precondition
 * refuses it -- and so is every request nothing refreshed (filter, a watch
 * event) for pending_ttl_s. Without this, the pods that churn deletes before
 * they bind stayed until a relist or until the map filled. Thread-safe. */
void extender_pod_gone(gp_extender *e, const char *uid);
/* A full pod LIST begins (end false; since: when it asked its first page,
 * gp_mono_s's clock) or has been applied (end true): every pending pod it
 * showed was noted again, so what was remembered before `since` and not
 * since is gone or bound (its DELETED or its binding fell in a watch gap)
 * and is forgotten. Thread-safe. */
void extender_pods_listing(gp_extender *e, bool end, double since);

/* The policy set in force, referenced (release with policy_set_unref). */
gp_policy_set *extender_policies(gp_extender *e);
/* The pod's request under the policy of `set` that governs it, as filter
 * decodes it (`view` points into `set`: keep the set referenced while using
 * it). Returns 0, or -1 with why the pod cannot be scheduled as it stands. */
int extender_pod_request(gp_extender *e, const gp_pod *pod, gp_policy_set *set, gp_pod_req *req,
                         gp_policy_view *view, gp_err *err) GP_WUR;
/* The same for a pod not decoded yet (model/pod.h decodes it here). */
int extender_pod_request_json(gp_extender *e, const json_t *pod, gp_policy_set *set,
                              gp_pod_req *req, gp_policy_view *view, gp_err *err) GP_WUR;

/* Counters for /metrics. */
typedef struct gp_extender_stats {
    unsigned long filter, prioritize, bind, bind_errors, bad_requests;
    /* verbs refused because the map was not the API server's truth yet
     * (config.serving), per verb: filter, prioritize, bind, preempt */
    unsigned long unready[4];
    unsigned long fit_cache_hits, fit_cache_misses;   /* node verdicts reused across requests */
    unsigned long score_memo_hits, score_memo_misses; /* look-ups of a node's look-ahead as it is */
    unsigned long remembered;                         /* pending pods kept for bind */
} gp_extender_stats;
void extender_stats(gp_extender *e, gp_extender_stats *out);
/* metrics_fn (extender: a gp_extender *): gpupack_bind_errors_total and
 * gpupack_bad_requests_total. */
void extender_metrics(void *extender, gp_buf *out);

#endif
