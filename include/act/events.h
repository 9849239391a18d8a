/* events.h -- Kubernetes Events on the pods gpupack binds, aggregated and
 * rate-limited the way client-go's event correlator does it.
 *
 * Three layers:
 *   - pure text: what a bind did, as one sentence (events_describe_bind);
 *   - a pure correlator (events_agg): per involved object a token bucket
 *     (burst 25, one token per 5 minutes), similar events (same object,
 *     type, reason; 10 different messages within 10 minutes) folded into one
 *     "(combined from similar events)" event, and repeats of one event
 *     counted: the first occurrence creates the Event, later ones PATCH its
 *     count and lastTimestamp;
 *   - a sender thread with a bounded queue that posts through kube.c, so a
 *     bind never waits for an Event.
 *
 *   gp_events *ev = events_new(&auth, cluster, &err);
 *   events_bind_result(ev, call, ok, why);        // from the bind path
 *   events_free(ev);
 */
#ifndef GP_EVENTS_H
#define GP_EVENTS_H

#include <jansson.h>
#include <stdbool.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "model/gpu.h"
#include "kube/kube.h"
#include "lib/util.h"

#define EVENTS_MSG_MAX 1024            /* the API server's limit on Event messages */
#define EVENTS_REASON_OK "GPUsAssigned"
#define EVENTS_REASON_FAILED "GPUBindFailed"
#define EVENTS_REASON_OVER "GPUOverCapacity"   /* the pods' annotations over-fill a GPU */

/* "assigned GPU 1 (A100-SXM4-80GB, 8192 MiB, 25 %) on node-a100, policy
 * inference"; several GPUs are listed one after the other. `node` (may be
 * NULL) gives the models. Pure. */
void events_describe_bind(const gp_assignment *a, const gp_node *node, const char *policy,
                          char *out, size_t len);

/* ---------------------------------------------------------- correlator -- */

typedef struct events_occurrence {
    const char *ns, *pod, *uid;       /* the involved Pod */
    const char *type;                 /* "Normal" or "Warning" */
    const char *reason, *message;
} events_occurrence;

typedef enum { EVENTS_CREATE, EVENTS_PATCH, EVENTS_DROP } events_action;

/* What to send for one occurrence: CREATE posts `body` (a whole Event) to
 * namespaces/ns/events; PATCH merges `body` into the Event `name`; DROP
 * sends nothing (rate-limited). `body` is owned by the caller. */
typedef struct events_send {
    events_action action;
    char ns[GP_NAME_MAX];
    char name[GP_NAME_MAX];
    json_t *body;
} events_send;

typedef struct events_agg events_agg;

/* component / instance: the Event's source. Returns owned. */
events_agg *events_agg_new(const char *component, const char *instance);
void events_agg_free(events_agg *a);   /* accepts NULL */
/* Correlates one occurrence at wall time now_ns (Unix ns). Pure apart from
 * the correlator's own state; not thread-safe (the sender owns it). */
void events_agg_record(events_agg *a, const events_occurrence *o, int64_t now_ns,
                       events_send *out);
/* A created Event vanished (404 on PATCH): forget it, so the next
 * occurrence creates it again. */
void events_agg_forget(events_agg *a, const char *ns, const char *name);

/* ------------------------------------------------------------- sender -- */

typedef struct gp_events gp_events;

/* Starts the sender with its own API client (auth is copied); `c` (borrowed)
 * gives GPU models for messages. Returns NULL with err on failure. */
gp_events *events_new(const gp_kube_auth *auth, gp_cluster *c, gp_err *err);
/* Stops the sender; events still queued are dropped. Accepts NULL. */
void events_free(gp_events *ev);

/* Which binds leave an Event (--bind-events): every bind; binds of pods that
 * hold GPUs and failed binds (a pod without GPUs gets only kube-scheduler's
 * own Scheduled Event, which says the same); failed binds only. */
typedef enum { GP_EVENTS_ALL = 0, GP_EVENTS_GPU, GP_EVENTS_FAILURES } gp_events_level;

/* Parses "all", "gpu" or "failures"; -1 on anything else. */
int events_level_parse(const char *s, gp_events_level *out) GP_WUR;
/* Sets the level (default GP_EVENTS_ALL) before binds start. ev may be NULL. */
void events_set_level(gp_events *ev, gp_events_level level);
/* The bind hook: records GPUsAssigned (ok) or GPUBindFailed (why) on the
 * pod. Never blocks; a full queue drops the event. Thread-safe; ev may be NULL. */
void events_bind_result(gp_events *ev, const gp_bind_call *call, bool ok, const char *why);
/* Any other Event on a pod (preemption's "Preempting" / "Preempted"):
 * Normal, or Warning when `warning`. Same queue and correlation; never
 * blocks; thread-safe; ev may be NULL. */
void events_pod(gp_events *ev, const char *ns, const char *pod, const char *uid, bool warning,
                const char *reason, const char *msg);
/* metrics_fn (events: a gp_events *, may be NULL): gpupack_events_total{result}. */
void events_metrics(void *events, gp_buf *out);

#endif
