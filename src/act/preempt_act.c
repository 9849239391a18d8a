/* preempt_act.c -- preemption's API calls and Events on the live client, and its view
 * of the pod watch. */
#include "act/preempt_act.h"

#include "act/evictor.h"
#include "lib/util.h"

struct gp_preempt_act {
    gp_live *live;
    gp_events *events;
};

#define CALL_TIMEOUT_S 10   /* each eviction, nomination and nudge */

gp_preempt_act *preempt_act_new(gp_live *live, gp_events *events)
{
    gp_preempt_act *a = xcalloc(1, sizeof *a);
    a->live = live;
    a->events = events;
    return a;
}

void preempt_act_free(gp_preempt_act *a)
{
    free(a);
}

static gp_evict_outcome act_evict(void *ud, const char *ns, const char *name, const char *uid,
                                  gp_err *err)
{
    gp_preempt_act *a = ud;
    return evictor_evict(live_kube(a->live), ns, name, uid, CALL_TIMEOUT_S, err);
}

static int act_nominate(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                        const char *held, gp_err *err)
{
    gp_preempt_act *a = ud;
    return evictor_nominate(live_kube(a->live), ns, name, uid, node, held, CALL_TIMEOUT_S, err);
}

static int act_nudge(void *ud, const char *ns, const char *name, const char *uid, const char *msg,
                     bool first, gp_err *err)
{
    gp_preempt_act *a = ud;
    /* on every version: kube-scheduler retries the pod on its own informer's
     * word of the victims' deletion, which may come before gpupack's watch
     * shows it; gpupack then refuses the pod from the older state, and nothing
     * else would wake it before kube-scheduler's 5-minute flush. Before 1.32
     * only a change of the pod's metadata wakes it (components/requeue-rbac);
     * from 1.32 a status condition does (pods/status: the base RBAC) */
    if (live_scheduler_parks(a->live))
        return evictor_nudge(live_kube(a->live), ns, name, uid, CALL_TIMEOUT_S, err);
    return evictor_nudge_status(live_kube(a->live), ns, name, uid, msg, first, CALL_TIMEOUT_S, err);
}

static void act_event(void *ud, const char *ns, const char *name, const char *uid, bool warning,
                      const char *reason, const char *msg)
{
    gp_preempt_act *a = ud;
    events_pod(a->events, ns, name, uid, warning, reason, msg);
}

gp_preempt_io preempt_act_io(gp_preempt_act *a)
{
    return (gp_preempt_io){a, act_evict, act_nominate, act_event, act_nudge};
}

static void observe_pod(void *ud, bool deleted, const json_t *pod, const gp_pod *decoded)
{
    preempt_pod_seen(ud, deleted, pod, decoded);
}

static void observe_listing(void *ud, bool end, double since)
{
    preempt_pods_listing(ud, end, since);
}

static void observe_synced(void *ud)
{
    preempt_pods_synced(ud);
}

gp_live_pod_observer preempt_act_observer(gp_preempt *p)
{
    return (gp_live_pod_observer){observe_pod, observe_listing, observe_synced, p};
}
