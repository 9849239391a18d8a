/* bindpipe.c -- a decided bind carried out: gate, claim, Binding, outcome, Event. */
#include "act/bindpipe.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "act/binder.h"
#include "kube/apiversion.h"
#include "lib/log.h"
#include "lib/metrics.h"

struct gp_bindpipe {
    gp_bindpipe_config cfg;
    atomic_ulong gate_refused;         /* binds step 1 refused */
    atomic_ulong by[3];                /* Bindings posted, by outcome (gp_bind_outcome) */
    gp_histo api;                      /* step 4 as the pipe waits for it */
};

gp_bindpipe *bindpipe_new(const gp_bindpipe_config *cfg)
{
    gp_bindpipe *p = xcalloc(1, sizeof *p);
    p->cfg = *cfg;
    return p;
}

void bindpipe_free(gp_bindpipe *p)
{
    free(p);
}

bool bindpipe_may_bind(gp_bindpipe *p, double *budget_s, char *why, size_t whylen)
{
    if (budget_s)
        *budget_s = 0;
    if (p->cfg.live && !p->cfg.leader && !live_serving(p->cfg.live, why, whylen))
        return false;
    if (p->cfg.leader) {
        /* a leader binds only from a map its connected watch keeps current:
         * seen in e2e_chaos, a replica that took the lease back right after an
         * API server outage bound from a map its watch, still in its retry
         * backoff, had not updated with the other replica's binds */
        if (p->cfg.live && !live_fresh(p->cfg.live, BINDPIPE_WATCH_FRESH_S, why, whylen))
            return false;
        if (!leader_may_bind(p->cfg.leader, budget_s)) {
            if (why)
                snprintf(why, whylen, "this replica does not lead (standby, or fenced: its "
                                      "lease renewal is late)");
            return false;
        }
    }
    return true;
}

/* Step 4 through live's client: the uid precondition where the API server
 * honours it (binder.h). */
static gp_bind_outcome post_binding(gp_bindpipe *p, const gp_bind_call *call, double timeout_s,
                                    gp_err *err)
{
    if (p->cfg.post)
        return p->cfg.post(p->cfg.post_ud, call, timeout_s, err);
    if (!p->cfg.live) {
        gp_fail(err, "bind pipe: no API client and no post step");
        return GP_BIND_REFUSED;
    }
    return binder_bind(live_kube(p->cfg.live), call,
                       live_api_has(p->cfg.live, GP_FACT_BINDING_UID), timeout_s, err);
}

gp_bind_outcome bindpipe_run(gp_bindpipe *p, const gp_bind_call *call, gp_err *err)
{
    /* 1. the gate: the verb decided from a complete map, but a relist may have
     * begun, or leadership moved, while this bind waited for a thread; its GPUs
     * may then be held by pods the LIST will show, or by the other replica's
     * binds: decide again later */
    double budget = 0;
    char why[400] = "";
    if (!bindpipe_may_bind(p, &budget, why, sizeof why)) {
        atomic_fetch_add(&p->gate_refused, 1);
        cluster_bind_abandon(p->cfg.c, call->uid);
        gp_fail(err, "gpupack is not ready to bind: %s; nothing was sent, kube-scheduler retries "
                     "the pod", why);
        return GP_BIND_REFUSED;   /* nothing was sent */
    }
    /* 2. the claim */
    if (cluster_bind_claim(p->cfg.c, call->uid, call->assign)) {
        /* released meanwhile (reconciliation, or the pod's deletion): nothing
         * of it is left in the store to roll back, and nothing is posted */
        gp_fail(err, "not posted: gpupack released the GPUs this bind had chosen meanwhile (the "
                     "pod is gone, or pods the API server shows bound hold them); kube-scheduler "
                     "retries the pod");
        return GP_BIND_REFUSED;
    }
    /* 3. a claim pod's allocation, written in kube-scheduler's PreBind before
     * this bind: counted now rather than when the watch shows it */
    if (call->claims_pod && p->cfg.live)
        live_refresh_pod_claims(p->cfg.live, call->claims_pod);
    /* 4. the Binding; a bind makes up to three API calls within the budget */
    double timeout = GP_BINDER_TIMEOUT_S;
    if (budget > 0 && budget / 3 < timeout)
        timeout = budget / 3;
    double t0 = gp_mono_s();
    gp_bind_outcome o = post_binding(p, call, timeout, err);
    metrics_observe(&p->api, gp_mono_s() - t0);
    atomic_fetch_add(&p->by[o], 1);
    /* 5. the outcome */
    cluster_bind_outcome(p->cfg.c, call->uid, o);
    if (o == GP_BIND_UNKNOWN)
        LOG_WARN("bind %s/%s -> %s: outcome unknown, GPUs stay assumed until a GET or the watch "
                 "settles it: %s", call->ns, call->name, call->node, err->msg);
    /* 6. the Event */
    if (p->cfg.events)
        events_bind_result(p->cfg.events, call, o == GP_BIND_BOUND,
                           o == GP_BIND_BOUND ? NULL : err->msg);
    return o;
}

static gp_bind_outcome pipe_binder(void *ud, const gp_bind_call *call, gp_err *err)
{
    return bindpipe_run(ud, call, err);
}

gp_binder_fn bindpipe_binder(void)
{
    return pipe_binder;
}

void bindpipe_metrics(void *pipe, gp_buf *out)
{
    gp_bindpipe *p = pipe;
    metrics_header(out, "gpupack_api_binds_total", "counter",
                   "Bindings posted to the API server, by outcome.");
    metrics_u(out, "gpupack_api_binds_total", "result=\"bound\"", atomic_load(&p->by[GP_BIND_BOUND]));
    metrics_u(out, "gpupack_api_binds_total", "result=\"refused\"",
              atomic_load(&p->by[GP_BIND_REFUSED]));
    metrics_u(out, "gpupack_api_binds_total", "result=\"unknown\"",
              atomic_load(&p->by[GP_BIND_UNKNOWN]));
    metrics_header(out, "gpupack_api_bind_duration_seconds", "histogram",
                   "Time one bind spends in its API calls (the Binding, and a GET/retry after a 409).");
    metrics_render_histo(out, "gpupack_api_bind_duration_seconds", "", &p->api);
    metrics_header(out, "gpupack_binds_refused_total", "counter",
                   "Binds refused before anything was sent: this replica does not lead, or its "
                   "map or pod watch is not current.");
    metrics_u(out, "gpupack_binds_refused_total", NULL, atomic_load(&p->gate_refused));
}
