/* live.c -- live mode: reflectors feed the store from the API server; housekeeping settles
 * lost bind outcomes and expires binds that never reported. */
#include "act/live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act/binder.h"
#include "act/events.h"
#include "act/requeue.h"
#include "kube/apiversion.h"
#include "model/k8s_obs.h"
#include "model/modelref.h"
#include "model/pod.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "kube/reflector.h"
#include "model/dra.h"
#include "pack/drastore.h"
#include "act/dra_feed.h"

#define LIVE_DEFAULT_TTL_S 120.0
#define LIVE_DEFAULT_STALL_S 90.0
#define LIVE_SETTLE_BATCH 64        /* UNKNOWN binds checked per housekeeping round */
#define LIVE_DEFAULT_ALIYUN_UNIT 1024
#define LIVE_VERSION_RETRY_S 1.0    /* GET /version at most this often until it answers */
#define LIVE_VERSION_TIMEOUT_S 3.0
#define LIVE_TRIM_S 60.0            /* free heap pages handed back at least this often */

struct gp_live {
    gp_live_config cfg;
    gp_cluster *c;
    gp_kube *kube;
    _Atomic(gp_extender *) ext;
    gp_reflector *nodes, *pods;
    gp_kube_cancel *stop;           /* the housekeeping thread's */
    pthread_t hk;
    bool hk_started;
    atomic_ulong settled_bound, settled_released, expired, bypassed;
    gp_live_gate gate;              /* NULL fn: this replica may bind whenever it serves */
    pthread_mutex_t ver_mu;         /* guards ver, ver_tried */
    gp_apiversion ver;              /* what /version said (ver.known false: not yet) */
    double ver_tried;               /* monotonic time of the last GET /version */
    gp_requeue *rq;                 /* nudges parked pods after regaining service */
    gp_live_pod_observer observer;  /* preemption; NULL fns: none */
    atomic_bool nodes_listed, pods_listed;   /* a LIST of each applied: the observer's
                                              * synced waits for both */
    gp_live_warn warn;              /* NULL fn: over-capacity GPUs are only logged */
    gp_drastore *ds;                /* DRA objects (docs/dra.md) */
    gp_dra_feed *dra;               /* their LIST + WATCH, where the API serves them */
    atomic_bool trim_due;           /* a pod LIST ended: its memory is free, hand it back */
    atomic_ulong trims, trim_us;    /* heap trims done, and the time they took */
};

/* Turns the store's over-capacity notices into Warning Events on the pod
 * recorded last on each GPU (the store logged and counted them already). */
static void report_over(gp_live *l)
{
    gp_over_notice n[8];
    size_t k;
    while ((k = cluster_take_over_notices(l->c, n, GP_ARRAY_LEN(n))) > 0) {
        for (size_t i = 0; i < k && l->warn.fn; i++) {
            char msg[768];
            if (n[i].dra_claims > 0)
                snprintf(msg, sizeof msg,
                         "GPU %d of node %.200s is over capacity: %d ResourceClaim%s allocated by "
                         "Kubernetes' DRA allocator hold %lld MiB of it and gpupack's pods the rest "
                         "of %lld of %lld MiB (the allocator does not see gpupack's pods: a claim "
                         "scheduled without gpupack's filter, see docs/dra.md); gpupack offers "
                         "nothing on this GPU until pods leave",
                         n[i].index, n[i].node, n[i].dra_claims, gp_s(n[i].dra_claims),
                         (long long)n[i].dra_mem, (long long)n[i].mem_used,
                         (long long)n[i].mem_total);
            else
                snprintf(msg, sizeof msg,
                         "GPU %d of node %.200s is over capacity: the pods' gpupack.io/assignment "
                         "annotations hold %lld of %lld MiB and %d.%d%% of %d.%d%% compute (a "
                         "Binding that landed after gpupack had given its GPUs up, or annotations "
                         "written elsewhere); gpupack offers nothing on this GPU until pods leave",
                         n[i].index, n[i].node, (long long)n[i].mem_used, (long long)n[i].mem_total,
                         n[i].core_used / 10, n[i].core_used % 10, n[i].core_total / 10,
                         n[i].core_total % 10);
            l->warn.fn(l->warn.ud, n[i].ns, n[i].name, n[i].uid, EVENTS_REASON_OVER, msg);
        }
    }
}

/* ----------------------------------------------------------- version --- */

/* GET /version unless known, or asked less than LIVE_VERSION_RETRY_S ago. */
static void version_refresh(gp_live *l)
{
    pthread_mutex_lock(&l->ver_mu);
    bool ask = !l->ver.known && gp_mono_s() - l->ver_tried >= LIVE_VERSION_RETRY_S;
    if (ask)
        l->ver_tried = gp_mono_s();
    pthread_mutex_unlock(&l->ver_mu);
    if (!ask)
        return;
    gp_apiversion v;
    gp_err err;
    if (apiversion_fetch(l->kube, LIVE_VERSION_TIMEOUT_S, &v, &err) < 0) {
        LOG_WARN("API server version unknown (asked again later): %s", err.msg);
        return;
    }
    char d[80];
    apiversion_describe(&v, d, sizeof d);
    bool errs = apiversion_has(&v, GP_FACT_REQUEUE_NUDGES), nodes = apiversion_has(&v, GP_FACT_NODE_PRECHECK);
    LOG_INFO("API server %s: Binding uid precondition %s; %s", d,
             apiversion_has(&v, GP_FACT_BINDING_UID) ? "honoured (sent with the resourceVersion)"
                                                     : "ignored (bind relies on the resourceVersion)",
             errs || nodes ? "kube-scheduler may park pods where a newer one would retry them: "
                             "gpupack nudges them (see docs/kubernetes-versions.md)"
                           : "kube-scheduler retries parked pods by itself: no nudges");
    pthread_mutex_lock(&l->ver_mu);
    l->ver = v;
    pthread_mutex_unlock(&l->ver_mu);
}

static bool version_has(gp_live *l, gp_api_fact f, bool *known)
{
    pthread_mutex_lock(&l->ver_mu);
    bool has = apiversion_has(&l->ver, f);
    if (known)
        *known = l->ver.known;
    pthread_mutex_unlock(&l->ver_mu);
    return has;
}

/* ------------------------------------------------------------- nodes --- */

static void nodes_begin(void *ud)
{
    gp_live *l = ud;
    cluster_nodes_resync_begin(l->c);
}

/* Both LISTs applied: the observer's synced (preemption rebuilds the
 * reservations of nominated pods, which needs the nodes as much as the pods).
 * Called at the end of every LIST of either; the second of the first two
 * calls it first, before its reflector counts as synced, so the verbs and
 * /readyz wait for it. */
static void listed(gp_live *l, atomic_bool *mine, atomic_bool *other)
{
    atomic_store(mine, true);
    if (atomic_load(other) && l->observer.synced)
        l->observer.synced(l->observer.ud);
}

static void nodes_end(void *ud)
{
    gp_live *l = ud;
    cluster_nodes_resync_end(l->c);
    report_over(l);
    listed(l, &l->nodes_listed, &l->pods_listed);
}

static void nodes_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    gp_live *l = ud;
    char name[GP_NAME_MAX];
    gp_inventory inv;
    gp_err err;
    int rc = k8s_obs_node(obj, l->cfg.aliyun_unit_mib, name, &inv, &err);
    if (rc < 0) {
        LOG_WARN("nodes: skipping an object: %s", err.msg);
        return;
    }
    if (type == GP_WATCH_DELETED) {
        cluster_remove_node(l->c, name);
        return;
    }
    /* more GPU memory than before on this node: parked GPU pods may fit now */
    int64_t had = 0, has = 0;
    for (int g = 0; g < inv.n; g++)
        has += inv.gpus[g].healthy ? inv.gpus[g].mem_total : 0;
    cluster_rdlock(l->c);
    const gp_node *old = cluster_rd_node(l->c, name);
    for (int g = 0; old && g < old->ngpus; g++)
        had += old->gpus[g].info.healthy ? old->gpus[g].info.mem_total : 0;
    cluster_unlock(l->c);
    if (has > had)
        requeue_capacity_grew(l->rq);
    if (!listed && type == GP_WATCH_ADDED)
        requeue_moving_event(l->rq);   /* kube-scheduler moves parked pods on a new node */
    if (rc == 1) {
        /* status heartbeats repeat MODIFIED often: say it loudly once */
        if (listed || type == GP_WATCH_ADDED)
            LOG_WARN("node %s: GPU inventory unusable, no GPUs offered: %s", name, err.msg);
        else
            LOG_DEBUG("node %s: GPU inventory unusable: %s", name, err.msg);
    }
    cluster_upsert_node(l->c, name, &inv);
    report_over(l);
}

/* -------------------------------------------------------------- pods --- */

static void pods_begin(void *ud)
{
    gp_live *l = ud;
    cluster_pods_resync_begin(l->c);
    /* what was noted before the LIST asked its first page and is not in it is gone */
    double since = reflector_list_began(l->pods);
    requeue_listing(l->rq, false);
    gp_extender *e = atomic_load(&l->ext);
    if (e)
        extender_pods_listing(e, false, since);
    if (l->observer.listing)
        l->observer.listing(l->observer.ud, false, since);
}

/* What each keeps per pod and the LIST did not show goes: pods deleted
 * while no watch ran never send their DELETED. */
static void pods_end(void *ud)
{
    gp_live *l = ud;
    cluster_pods_resync_end(l->c);
    requeue_listing(l->rq, true);
    gp_extender *e = atomic_load(&l->ext);
    if (e)
        extender_pods_listing(e, true, 0);
    if (l->observer.listing)
        l->observer.listing(l->observer.ud, true, 0);
    report_over(l);
    listed(l, &l->pods_listed, &l->nodes_listed);
    atomic_store(&l->trim_due, true);
}

/* GPUs for a pod already bound to `node` without gpupack's bind, under the
 * policy that governs it: 0 (fits), 1 (fits only by over-committing: chosen as
 * if the node's GPUs were free), 2 (not a gpupack pod), -1 with a message
 * (cannot be placed there at all). Nothing is recorded. */
static int place_bound(gp_live *l, gp_extender *e, const json_t *pod, const char *node,
                       gp_assignment *out, char policy[GP_NAME_MAX], gp_err *err)
{
    gp_policy_set *set = extender_policies(e);
    gp_pod_req req;
    gp_policy_view view;
    gp_node *copy = NULL;
    int rc = -1;
    if (extender_pod_request_json(e, pod, set, &req, &view, err) < 0)
        goto done;
    rc = 2;
    if (req.nctrs == 0)
        goto done;
    gp_strlcpy(policy, view.name, GP_NAME_MAX);
    cluster_rdlock(l->c);
    const gp_node *n = cluster_rd_node(l->c, node);
    if (n) {
        copy = xmalloc(gp_node_size(n->ngpus));
        memcpy(copy, n, gp_node_size(n->ngpus));
    }
    cluster_unlock(l->c);
    rc = -1;
    if (!copy) {
        gp_fail(err, "node %.200s is unknown to gpupack", node);
        goto done;
    }
    rc = 0;
    if (placement_fit(copy, &req, &view.place, out, NULL) == 0)
        goto done;
    for (int g = 0; g < copy->ngpus; g++) {
        copy->gpus[g].mem_used = 0;
        copy->gpus[g].core_used = 0;
        copy->gpus[g].pods = 0;
    }
    copy->state_hash = 0;
    gp_fit_fail why;
    rc = 1;
    if (placement_fit(copy, &req, &view.place, out, &why) < 0)
        rc = gp_fail(err, "%s", why.reason);
done:
    free(copy);
    policy_set_unref(set);
    return rc;
}

/* A pod bound without gpupack's bind that asks gpupack resources (created
 * with spec.nodeName, or bound by another scheduler): its GPUs are chosen on
 * its node by the governing policy, even if that over-commits, so that the
 * capacity is not handed out twice. Sets v->obs.assign for the store; a pod
 * the store already holds keeps its GPUs, so this warns and counts once. */
static void account_bypassed(gp_live *l, const json_t *obj, bool announce, gp_pod_view *v)
{
    gp_pod_state st;
    if (cluster_pod_get(l->c, v->uid, &v->assign, &st) == 0) {
        if (strcmp(v->assign.node, v->node) == 0)
            v->obs.assign = &v->assign;
        return;
    }
    gp_extender *e = atomic_load(&l->ext);
    gp_err err;
    char policy[GP_NAME_MAX];
    int rc = e ? place_bound(l, e, obj, v->node, &v->assign, policy, &err) : 2;
    if (rc == 2)
        return;
    if (rc < 0) {
        if (announce)
            LOG_WARN("pod %s/%s is bound to %s without gpupack and cannot be accounted there: %s",
                     v->ns, v->name, v->node, err.msg);
        return;
    }
    v->obs.assign = &v->assign;
    gp_strlcpy(v->policy, policy, sizeof v->policy);
    v->obs.policy = v->policy;
    atomic_fetch_add(&l->bypassed, 1);
    LOG_WARN("pod %s/%s is bound to %s without gpupack's bind (spec.nodeName set, or another "
             "scheduler): accounted on its GPUs by policy %s%s", v->ns, v->name, v->node, policy,
             rc == 1 ? "; this OVER-COMMITS the node" : "");
}

/* What the requeue needs to know of a pod. */
static gp_requeue_seen requeue_seen(const gp_pod_view *v, const json_t *obj)
{
    if (v->pending) {
        if (v->sched_error)
            return GP_REQUEUE_PARKED_ERROR;
        return v->parked ? GP_REQUEUE_PARKED : GP_REQUEUE_PENDING;
    }
    (void)obj;
    return v->node[0] && !v->obs.terminal ? GP_REQUEUE_BOUND : GP_REQUEUE_GONE;
}

/* A claim's allocation gone frees GPU share as a GPU pod's end does: the
 * race of two watches (requeue.h RACE) again, this time with the claim watch. */
static void claim_freed(void *ud)
{
    gp_live *l = ud;
    requeue_released(l->rq);
}

static void pods_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    gp_live *l = ud;
    gp_pod_view *v = xmalloc(sizeof *v);   /* ~7 KiB: keep it off small thread stacks */
    gp_err err;
    if (k8s_obs_pod(obj, type == GP_WATCH_DELETED, l->cfg.aliyun_unit_mib, v, &err) < 0) {
        LOG_WARN("pods: skipping an object: %s", err.msg);
        free(v);
        return;
    }
    if (v->assign_err[0] && !v->obs.terminal)
        LOG_WARN("pod %s/%s: ignoring its GPU annotations: %s", v->ns, v->name, v->assign_err);
    if (!v->obs.terminal && v->node[0] && !v->obs.assign && !v->assign_err[0] && v->wants_gpu)
        account_bypassed(l, obj, listed || type == GP_WATCH_ADDED, v);
    cluster_pod_observed(l->c, &v->obs);
    if (!listed)
        report_over(l);   /* a LIST's reconciliation comes at its end */
    requeue_observe(l->rq, v->uid, v->ns, v->name, requeue_seen(v, obj), v->wants_gpu);
    /* the race of two watches (requeue.h RACE): a bound pod gone frees what it
     * held; kube-scheduler moves parked pods on it (GPU pods or not) */
    if (!listed && v->node[0] && v->obs.terminal) {
        if (v->wants_gpu)
            requeue_released(l->rq);
        else
            requeue_moving_event(l->rq);
    }
    if (l->observer.apply)
        l->observer.apply(l->observer.ud, type == GP_WATCH_DELETED, obj, &v->pod);
    gp_extender *e = atomic_load(&l->ext);
    if (e && v->pending)   /* every pod may reach bind (no managedResources) */
        extender_note_pod(e, obj);
    else if (e && v->node[0] && !v->obs.terminal)   /* bound: its bind is over */
        extender_forget_pod(e, v->uid);
    else if (e && !v->node[0])   /* deleted (or being deleted) before it was bound */
        extender_pod_gone(e, v->uid);
    free(v);
}

static const gp_reflector_ops node_ops = {nodes_begin, nodes_end, nodes_apply, k8s_obs_trim_node,
                                          k8s_obs_node_keep};
/* a pod event is read as the LIST's trim keeps a pod, and its conditions with
 * their messages (k8s_obs.h); the rest of a pod (managedFields, most of its
 * status) is never built */
static const gp_reflector_ops pod_ops = {pods_begin, pods_end, pods_apply, k8s_obs_trim_pod,
                                         k8s_obs_pod_keep};

/* ------------------------------------------------------------ binds --- */

bool live_api_has(gp_live *l, gp_api_fact f)
{
    return version_has(l, f, NULL);
}

bool live_scheduler_parks(gp_live *l)
{
    bool known;
    /* queueing hints (on from 1.32) end both this and the node pre-check */
    bool parks = version_has(l, GP_FACT_NODE_PRECHECK, &known);
    return parks || !known;
}

void live_set_pod_observer(gp_live *l, gp_live_pod_observer o)
{
    l->observer = o;
}

void live_set_bind_gate(gp_live *l, gp_live_gate gate)
{
    l->gate = gate;
}

void live_set_warn(gp_live *l, gp_live_warn warn)
{
    l->warn = warn;
}

gp_kube *live_kube(gp_live *l)
{
    return l->kube;
}

/* ---------------------------------------------------------------- DRA --- */

static int live_dra_request(void *ud, const json_t *pod, gp_pod_req *req, gp_err *why)
{
    gp_live *l = ud;
    if (dra_feed_state(l->dra) != GP_DRA_PRESENT)
        return 0;
    gp_dra_pod_claims pc;
    if (dra_pod_claims(pod, &pc, why) < 0)
        return 1;
    return drastore_pod_request(l->ds, &pc, req->ns, req, why);
}

/* Which devices are GPUs follows the policy set in force: its default
 * policy's spec.dra (a reload may change it; the slices are then listed
 * again). Once per housekeeping round, off the verbs' path. */
static void dra_drivers_follow(gp_live *l)
{
    gp_extender *e = atomic_load(&l->ext);
    if (!e)
        return;
    gp_policy_set *set = extender_policies(e);
    gp_dra_drivers t;
    policy_set_dra_drivers(set, &t);
    policy_set_unref(set);
    if (drastore_set_drivers(l->ds, &t) && dra_feed_state(l->dra) == GP_DRA_PRESENT) {
        LOG_INFO("DRA: the GPU driver table changed (%d driver%s): listing ResourceSlices again",
                 t.n, gp_s(t.n));
        dra_feed_drivers_changed(l->dra);
    }
}

void live_refresh_pod_claims(gp_live *l, const json_t *pod)
{
    gp_dra_pod_claims pc;
    gp_err err;
    if (dra_pod_claims(pod, &pc, &err) < 0)
        return;
    const char *names[GP_DRA_POD_CLAIMS_MAX];
    int n = 0;
    for (int i = 0; i < pc.n; i++)
        if (pc.c[i].claim[0])
            names[n++] = pc.c[i].claim;
    gp_pod pd;
    if (pod_decode(pod, &pd, &err) < 0 && !pd.identified)
        return;
    dra_feed_refresh_claims(l->dra, pd.ns, names, n, GP_BINDER_TIMEOUT_S / 2);
}

static void live_refused(void *ud, const char *uid, const char *ns, const char *name)
{
    gp_live *l = ud;
    requeue_refused(l->rq, uid, ns, name);
}

void live_requeue_hooks(gp_live *l, gp_extender_config *ecfg)
{
    ecfg->refused = live_refused;
    ecfg->refused_ud = l;
}

void live_dra_hooks(gp_live *l, gp_extender_config *ecfg)
{
    ecfg->dra_request = live_dra_request;
    ecfg->dra_ud = l;
}

/* ------------------------------------------------------ housekeeping --- */

/* Asks the API server about binds whose outcome was lost. */
static void settle_unknown(gp_live *l)
{
    gp_unsettled *u = xmalloc(LIVE_SETTLE_BATCH * sizeof *u);
    /* give a Binding the API server is still working on time to land first */
    size_t n = cluster_unsettled(l->c, GP_BINDER_TIMEOUT_S, u, LIVE_SETTLE_BATCH);
    for (size_t i = 0; i < n && !kube_cancel_fired(l->stop); i++) {
        gp_bind_call call = {u[i].ns, u[i].name, u[i].uid, u[i].a.node, NULL, NULL, &u[i].a, NULL,
                             NULL};
        gp_err err;
        gp_bind_outcome o = binder_check(l->kube, &call, GP_BINDER_TIMEOUT_S, &err);
        if (o == GP_BIND_BOUND) {
            atomic_fetch_add(&l->settled_bound, 1);
            LOG_INFO("bind %s/%s -> %s: settled, the Binding had landed", u[i].ns, u[i].name,
                     u[i].a.node);
        } else if (o == GP_BIND_REFUSED) {
            atomic_fetch_add(&l->settled_released, 1);
            LOG_WARN("bind %s/%s -> %s: settled, the Binding had not landed (%s); GPUs released",
                     u[i].ns, u[i].name, u[i].a.node, err.msg);
        } else {
            LOG_WARN("bind %s/%s -> %s: still unsettled: %s", u[i].ns, u[i].name, u[i].a.node,
                     err.msg);
        }
        cluster_settle(l->c, &u[i], o);
    }
    free(u);
}

static void *housekeeping(void *arg)
{
    gp_live *l = arg;
    gp_thread_set_name("housekeeping");
    double period = l->cfg.assume_ttl_s / 4;
    if (period > 1)
        period = 1;
    if (period < 0.05)
        period = 0.05;
    double trimmed = gp_mono_s();
    while (!kube_cancel_sleep(l->stop, period)) {
        /* the heap's free pages back to the system after a LIST (its objects
         * are freed once applied) and once a minute: the resident size then
         * follows what is in use, not the highest it ever was. Not more often:
         * a trim walks every free block with the arena locked, 10-60 ms in the
         * soak (gpupack_heap_trim_seconds_total), and the verbs wait for it. */
        double t0 = gp_mono_s();
        if (atomic_exchange(&l->trim_due, false) || t0 - trimmed >= LIVE_TRIM_S) {
            gp_heap_trim();
            trimmed = gp_mono_s();
            atomic_fetch_add(&l->trims, 1);
            atomic_fetch_add(&l->trim_us, (unsigned long)((trimmed - t0) * 1e6));
        }
        version_refresh(l);
        dra_feed_poll(l->dra);
        dra_drivers_follow(l);
        report_over(l);   /* what DRA's claims brought over capacity (the feed only queues it) */
        settle_unknown(l);
        /* a silent watch may be hiding the event that would confirm a pod */
        if (!reflector_synced(l->pods) || !reflector_healthy(l->pods, NULL, 0))
            continue;
        int n = cluster_expire_assumed(l->c, l->cfg.assume_ttl_s);
        if (n > 0) {
            atomic_fetch_add(&l->expired, (unsigned long)n);
            LOG_WARN("released %d assumed pod(s) whose bind never reported within %.0f s", n,
                     l->cfg.assume_ttl_s);
        }
    }
    return NULL;
}

/* ----------------------------------------------------------- requeue --- */

/* This replica serves the verbs: its map is the API server's (listed, no
 * relist due: live_serving), and it may bind. Regaining it -- a restart's
 * first LISTs, the end of a relist, a takeover -- is when the requeue nudges
 * the pods the verbs refused meanwhile. */
static bool requeue_serving(void *ud)
{
    gp_live *l = ud;
    return l->gate.fn ? l->gate.fn(l->gate.ud) : live_serving(l, NULL, 0);
}

static int live_requeue_needed(void *ud)
{
    gp_live *l = ud;
    version_refresh(l);
    bool known;
    unsigned need = (version_has(l, GP_FACT_REQUEUE_NUDGES, &known) ? GP_REQUEUE_ERRORS : 0) |
                    (version_has(l, GP_FACT_NODE_PRECHECK, NULL) ? GP_REQUEUE_NODES : 0);
    return known ? (int)need : -1;
}

/* -------------------------------------------------------------- life --- */

gp_live *live_new(const gp_live_config *cfg, gp_cluster *c, gp_err *err)
{
    gp_kube_auth auth;
    int rc = cfg->kubeconfig && *cfg->kubeconfig ? kubeconfig_load(cfg->kubeconfig, NULL, &auth, err)
                                                  : kube_auth_incluster(NULL, &auth, err);
    if (rc < 0)
        return NULL;
    gp_kube *k = kube_new(&auth, err);
    if (!k) {
        kube_auth_clear(&auth);
        return NULL;
    }
    LOG_INFO("API server %s from %s", auth.server, auth.origin);
    kube_auth_clear(&auth);
    gp_live *l = xcalloc(1, sizeof *l);
    l->cfg = *cfg;
    l->cfg.kubeconfig = NULL;   /* not kept: the caller owns the string */
    if (l->cfg.assume_ttl_s <= 0)
        l->cfg.assume_ttl_s = LIVE_DEFAULT_TTL_S;
    if (l->cfg.aliyun_unit_mib <= 0)
        l->cfg.aliyun_unit_mib = LIVE_DEFAULT_ALIYUN_UNIT;
    if (l->cfg.watch_stall_s <= 0)
        l->cfg.watch_stall_s = LIVE_DEFAULT_STALL_S;
    l->c = c;
    l->kube = k;
    pthread_mutex_init(&l->ver_mu, NULL);
    gp_requeue_config rcfg = {.serving = requeue_serving, .needed = live_requeue_needed, .ud = l};
    l->rq = requeue_new(k, &rcfg);
    atomic_init(&l->ext, NULL);
    l->stop = kube_cancel_new();
    /* A healthy API server ends each watch at timeoutSeconds (60 s) and gpupack re-watches at
     * once; bookmarks cannot be relied on to keep an idle watch talking (kube-apiserver 1.26
     * sent none in 200 s on an idle watch of the test kit). So a watch silent for longer
     * than its timeout plus slack is half-open: cut and re-opened. */
    int timeout = (int)(l->cfg.watch_stall_s * 2 / 3);
    gp_reflector_config ncfg = {.resource = "nodes", .path = "/api/v1/nodes",
                                .watch_timeout_s = timeout > 1 ? timeout : 1,
                                .stall_s = l->cfg.watch_stall_s};
    gp_reflector_config pcfg = ncfg;
    pcfg.resource = "pods";
    pcfg.path = "/api/v1/pods";
    gp_dra_drivers drivers;
    dra_default_drivers(&drivers);
    l->ds = drastore_new(&drivers);
    l->dra = dra_feed_new(k, c, l->ds, l->cfg.watch_stall_s);
    dra_feed_on_freed(l->dra, claim_freed, l);
    l->nodes = reflector_new(k, &ncfg, &node_ops, l);
    l->pods = reflector_new(k, &pcfg, &pod_ops, l);
    /* pods name nodes: list nodes first so that every hold lands on a known node */
    reflector_set_gate(l->pods, l->nodes);
    return l;
}

int live_start(gp_live *l, gp_extender *e, gp_err *err)
{
    atomic_store(&l->ext, e);
    dra_drivers_follow(l);   /* which DRA devices are GPUs, before the first LIST */
    if (reflector_start(l->nodes, err) < 0 || reflector_start(l->pods, err) < 0)
        return -1;
    dra_feed_poll(l->dra);   /* discovery now rather than at the first housekeeping round */
    int rc = pthread_create(&l->hk, NULL, housekeeping, l);
    if (rc != 0)
        return gp_fail(err, "cannot start the housekeeping thread: %s", strerror(rc));
    l->hk_started = true;
    return requeue_start(l->rq, err);
}

/* True once the first full LIST of nodes and of pods has been applied. */
static bool live_ready(gp_live *l)
{
    return l && reflector_synced(l->nodes) && reflector_synced(l->pods);
}

bool live_serving(gp_live *l, char *why, size_t whylen)
{
    if (!l)
        return false;
    char a[200] = "", b[200] = "", d[200] = "";
    bool nok = reflector_current(l->nodes, a, sizeof a);
    bool pok = reflector_current(l->pods, b, sizeof b);
    bool dok = dra_feed_current(l->dra, d, sizeof d);
    if (nok && pok && dok)
        return true;
    if (why && whylen)
        snprintf(why, whylen, "%s%s%s%s%s", a, a[0] && (b[0] || d[0]) ? "; " : "", b,
                 b[0] && d[0] ? "; " : "", d);
    return false;
}

bool live_fresh(gp_live *l, double min_s, char *why, size_t whylen)
{
    if (!live_serving(l, why, whylen))
        return false;
    double up = reflector_healthy_for(l->pods);
    if (up >= min_s)
        return true;
    if (why && whylen) {
        char down[256] = "";
        reflector_healthy(l->pods, down, sizeof down);
        if (up < 0)
            snprintf(why, whylen, "the pod watch is down (%s)", down);
        else
            snprintf(why, whylen, "the pod watch resumed %.1f s ago", up);
    }
    return false;
}

bool live_stale(gp_live *l, char *why, size_t whylen)
{
    if (!l)
        return true;
    char a[256] = "", b[256] = "";
    bool nok = reflector_healthy(l->nodes, a, sizeof a);
    bool pok = reflector_healthy(l->pods, b, sizeof b);
    if (nok && pok)
        return false;
    if (why && whylen)
        snprintf(why, whylen, "%s%s%s", a, (!nok && !pok) ? "; " : "", b);
    return true;
}

/* Counters for /metrics (thread-safe snapshot). */
typedef struct gp_live_stats {
    gp_reflector_stats nodes, pods;
    unsigned long settled_bound, settled_released;   /* UNKNOWN outcomes a GET settled */
    unsigned long assumed_expired;      /* in-flight binds released by the TTL */
    unsigned long bypassed;             /* pods found bound without gpupack's bind, accounted */
} gp_live_stats;

static void live_stats(gp_live *l, gp_live_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    reflector_stats(l->nodes, &out->nodes);
    reflector_stats(l->pods, &out->pods);
    out->settled_bound = atomic_load(&l->settled_bound);
    out->settled_released = atomic_load(&l->settled_released);
    out->assumed_expired = atomic_load(&l->expired);
    out->bypassed = atomic_load(&l->bypassed);
}

/* One family over both reflectors: `name{resource="nodes",<key>="<v>"}` for
 * each (key value, counter) pair. */
typedef struct refl_sample {
    const char *value;
    size_t off;   /* offsetof the counter in gp_reflector_stats */
} refl_sample;

static void refl_family(gp_buf *out, const gp_live_stats *ls, const char *name, const char *help,
                        const char *key, const refl_sample *smp, size_t n)
{
    const struct {
        const char *res;
        const gp_reflector_stats *st;
    } rs[] = {{"nodes", &ls->nodes}, {"pods", &ls->pods}};
    metrics_header(out, name, "counter", help);
    for (size_t r = 0; r < GP_ARRAY_LEN(rs); r++)
        for (size_t i = 0; i < n; i++) {
            char labels[96];
            if (key)
                snprintf(labels, sizeof labels, "resource=\"%s\",%s=\"%s\"", rs[r].res, key,
                         smp[i].value);
            else
                snprintf(labels, sizeof labels, "resource=\"%s\"", rs[r].res);
            unsigned long v = *(const unsigned long *)((const char *)rs[r].st + smp[i].off);
            metrics_u(out, name, labels, v);
        }
}

#define RS(field, value) {value, offsetof(gp_reflector_stats, field)}

void live_metrics(void *live, gp_buf *out)
{
    gp_live *l = live;
    char why[8];
    metrics_header(out, "gpupack_cluster_ready", "gauge", "1 once the first full list was applied.");
    metrics_i(out, "gpupack_cluster_ready", NULL, l ? live_ready(l) : 1);
    metrics_header(out, "gpupack_cluster_stale", "gauge", "1 while the API server watch is down.");
    metrics_i(out, "gpupack_cluster_stale", NULL, l ? live_stale(l, why, sizeof why) : 0);
    if (!l)
        return;
    size_t heap_used, heap_free;
    if (gp_heap_stats(&heap_used, &heap_free)) {
        /* beside RSS: a heap in use that stays flat while RSS climbs is
         * fragmentation, not something kept (docs/reliability.md) */
        metrics_header(out, "gpupack_heap_bytes", "gauge",
                       "The process heap by state: in use (allocated, not freed), free (held, not in use).");
        metrics_u(out, "gpupack_heap_bytes", "state=\"in_use\"", heap_used);
        metrics_u(out, "gpupack_heap_bytes", "state=\"free\"", heap_free);
    }
    metrics_header(out, "gpupack_gpu_model_names", "gauge",
                   "Distinct GPU model names kept (model/modelref.h), and names refused because the table was full.");
    metrics_i(out, "gpupack_gpu_model_names", "state=\"kept\"", gp_model_refs_used());
    metrics_i(out, "gpupack_gpu_model_names", "state=\"refused\"", gp_model_refs_refused());
    metrics_header(out, "gpupack_heap_trims_total", "counter",
                   "Times the heap's free pages were handed back to the system.");
    metrics_u(out, "gpupack_heap_trims_total", NULL, atomic_load(&l->trims));
    metrics_header(out, "gpupack_heap_trim_seconds_total", "counter", "Time spent handing free heap pages back.");
    metrics_f(out, "gpupack_heap_trim_seconds_total", NULL, 6, (double)atomic_load(&l->trim_us) / 1e6);
    gp_live_stats ls;
    live_stats(l, &ls);
    static const refl_sample events[] = {RS(events, "event"), RS(bookmarks, "bookmark"),
                                         RS(bad_events, "malformed")};
    refl_family(out, &ls, "gpupack_watch_events_total",
                "Watch events applied, by resource and kind.", "kind", events,
                GP_ARRAY_LEN(events));
    static const refl_sample lists[] = {RS(lists, "ok"), RS(list_failures, "failed")};
    refl_family(out, &ls, "gpupack_lists_total", "Full LISTs, by resource and outcome.", "result",
                lists, GP_ARRAY_LEN(lists));
    static const refl_sample shrinks[] = {RS(page_shrinks, "")};
    refl_family(out, &ls, "gpupack_list_page_shrinks_total",
                "LIST pages asked again with half the limit (too large).", NULL, shrinks, 1);
    static const refl_sample watches[] = {RS(watches, "ok"), RS(watch_failures, "failed"),
                                          RS(expired, "expired")};
    refl_family(out, &ls, "gpupack_watches_total", "Watch requests, by resource and outcome.",
                "result", watches, GP_ARRAY_LEN(watches));
    metrics_header(out, "gpupack_binds_settled_total", "counter",
                   "Unknown bind outcomes settled by a GET, by what the GET showed.");
    metrics_u(out, "gpupack_binds_settled_total", "result=\"bound\"", ls.settled_bound);
    metrics_u(out, "gpupack_binds_settled_total", "result=\"released\"", ls.settled_released);
    metrics_header(out, "gpupack_assumed_expired_total", "counter",
                   "Assumed pods released because their bind never reported.");
    metrics_u(out, "gpupack_assumed_expired_total", NULL, ls.assumed_expired);
    metrics_header(out, "gpupack_pods_bypassed_total", "counter",
                   "Pods found bound without gpupack's bind that ask its resources, accounted on "
                   "their node.");
    metrics_u(out, "gpupack_pods_bypassed_total", NULL, ls.bypassed);
    pthread_mutex_lock(&l->ver_mu);
    gp_apiversion v = l->ver;
    pthread_mutex_unlock(&l->ver_mu);
    char raw[80], d[80], labels[256];
    apiversion_describe(&v, raw, sizeof raw);
    metrics_label_value(d, sizeof d, raw);
    size_t n = (size_t)snprintf(labels, sizeof labels, "version=\"%s\"", d);
    for (int f = 0; f < GP_FACT_COUNT && n < sizeof labels; f++)
        n += (size_t)snprintf(labels + n, sizeof labels - n, ",%s=\"%s\"",
                              apiversion_fact_name((gp_api_fact)f),
                              apiversion_has(&v, (gp_api_fact)f) ? "true" : "false");
    metrics_header(out, "gpupack_kubernetes_info", "gauge",
                   "The API server's version (/version) and what gpupack does about it.");
    metrics_u(out, "gpupack_kubernetes_info", labels, 1);
    requeue_metrics(l->rq, out);
    dra_feed_metrics(l->dra, out);
}

void live_free(gp_live *l)
{
    if (!l)
        return;
    kube_cancel_fire(l->stop);
    requeue_free(l->rq);   /* its thread asks the reflectors and the gate */
    if (l->hk_started)
        pthread_join(l->hk, NULL);   /* it polls the DRA feed */
    dra_feed_free(l->dra);
    reflector_free(l->pods);
    reflector_free(l->nodes);
    drastore_free(l->ds);
    kube_cancel_free(l->stop);
    kube_free(l->kube);
    pthread_mutex_destroy(&l->ver_mu);
    free(l);
}
