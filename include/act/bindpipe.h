/* bindpipe.h -- the one path a bind takes once the bind verb has decided it.
 *
 * The verb (sched/extender) decides: which GPUs, held ASSUMED in the store,
 * and the annotations that say so. On a bind thread it then hands the call to
 * the pipe, which carries it out in this order and nowhere else:
 *
 *   1. gate     this replica may post now, checked once: its map is the API
 *               server's (live_serving); with leader election, its pod watch
 *               has streamed for BINDPIPE_WATCH_FRESH_S and it leads within
 *               its fencing budget, which bounds the API calls' timeout.
 *               Refused: the assumption is dropped, nothing is sent.
 *   2. claim    the store still holds exactly the decided GPUs
 *               (cluster_bind_claim); from here reconciliation leaves them
 *               alone. Released meanwhile: nothing is sent.
 *   3. claims   a pod whose GPUs come from ResourceClaims: its claims as
 *               kube-scheduler's PreBind left them (live).
 *   4. Binding  annotations and node in one write, with the preconditions
 *               (act/binder).
 *   5. outcome  into the store (cluster_bind_outcome): BOUND kept, REFUSED
 *               released, UNKNOWN kept until live's housekeeping settles it
 *               with a GET.
 *   6. Event    on the pod (act/events).
 *
 * It is the extender's binder (bindpipe_binder, ud = the pipe); main.c builds
 * it and adds bindpipe_metrics. Thread-safe.
 */
#ifndef GP_BINDPIPE_H
#define GP_BINDPIPE_H

#include <stdbool.h>

#include "act/events.h"
#include "act/live.h"
#include "ha/leader.h"
#include "pack/cluster.h"
#include "sched/extender.h"
#include "lib/util.h"

/* How long a leader's pod watch must have streamed before it binds: the
 * takeover quiet period's reasoning (the old leader's last Bindings reach the
 * watch within it) holds only for a watch that is connected. */
#define BINDPIPE_WATCH_FRESH_S 1.0

/* Step 4 in place of binder_bind (tests); the pipe passes the timeout the
 * fencing budget leaves. */
typedef gp_bind_outcome (*gp_bindpipe_post_fn)(void *ud, const gp_bind_call *call,
                                               double timeout_s, gp_err *err);

typedef struct gp_bindpipe_config {
    gp_cluster *c;                /* the store: claim before, outcome after (required) */
    gp_live *live;                /* readiness, the watch, the API client, DRA claims;
                                   * NULL (tests): no readiness gate, post required */
    gp_leader *leader;            /* NULL: no leader election, this replica binds */
    gp_events *events;            /* NULL: no Events */
    gp_bindpipe_post_fn post;     /* NULL: binder_bind through live's client */
    void *post_ud;
} gp_bindpipe_config;

typedef struct gp_bindpipe gp_bindpipe;

/* Borrows everything in cfg. */
gp_bindpipe *bindpipe_new(const gp_bindpipe_config *cfg);
void bindpipe_free(gp_bindpipe *p);   /* accepts NULL */

/* Steps 1-6 for one call. err says why for REFUSED and UNKNOWN. */
gp_bind_outcome bindpipe_run(gp_bindpipe *p, const gp_bind_call *call, gp_err *err);
/* bindpipe_run as the extender's gp_binder_fn (ud = the pipe). */
gp_binder_fn bindpipe_binder(void);

/* Step 1 alone: may this replica post a Binding now? *budget_s (may be NULL)
 * gets how long the bind's API calls may take in all (0: no limit from
 * leader election); why (may be NULL) says what is missing. */
bool bindpipe_may_bind(gp_bindpipe *p, double *budget_s, char *why, size_t whylen);

/* metrics_fn (pipe: a gp_bindpipe *): gpupack_api_binds_total,
 * gpupack_api_bind_duration_seconds, gpupack_binds_refused_total. */
void bindpipe_metrics(void *pipe, gp_buf *out);

#endif
