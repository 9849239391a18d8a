/* preempt_view.c -- kube-scheduler's preemptVerb, and what preemption shows:
 * explain, /inspect, metrics. */
#include "sched/preempt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ preemptVerb -- */

/* The victims kube-scheduler proposed on one node, by uid. */
typedef struct proposal {
    const char *node;
    const char **uids;
    int n;
    int64_t pdb;
} proposal;

static int cmp_prio_desc(const void *a, const void *b)
{
    const pvictim *x = a, *y = b;
    return x->priority > y->priority ? -1 : x->priority < y->priority ? 1 : 0;
}

/* kube-scheduler's ProcessPreemption for a pod that asks GPUs. */
static int on_process(void *ud, const json_t *args, char **out)
{
    gp_preempt *p = ud;
    gp_extender *e = atomic_load(&p->e);
    const json_t *pod = json_object_get(args, "Pod");
    if (!e) {
        *out = extender_preempt_echo(args);
        return 200;
    }
    gp_policy_set *set = extender_policies(e);
    gp_pod_req *req = xmalloc(sizeof *req);
    gp_policy_view view;
    gp_err err;
    gp_pod pd;
    if (pod_decode(pod, &pd, &err) || extender_pod_request(e, &pd, set, req, &view, &err) ||
        req->nctrs == 0) {
        /* no GPUs asked (or gpupack cannot read them): kube-scheduler's ordinary preemption */
        free(req);
        policy_set_unref(set);
        *out = extender_preempt_echo(args);
        return 200;
    }
    /* the proposals, from either form */
    size_t cap = 0;
    const char *node;
    json_t *v;
    const json_t *meta = json_object_get(args, "NodeNameToMetaVictims");
    const json_t *full = json_object_get(args, "NodeNameToVictims");
    cap = json_object_size(meta) + json_object_size(full);
    proposal *props = xcalloc(cap ? cap : 1, sizeof *props);
    size_t np = 0;
    for (int form = 0; form < 2; form++) {
        json_object_foreach((json_t *)(form ? full : meta), node, v) {
            const json_t *pods = json_object_get(v, "Pods");
            proposal *pr = &props[np++];
            pr->node = node;
            pr->pdb = json_integer_value(json_object_get(v, "NumPDBViolations"));
            pr->uids = xcalloc(json_array_size(pods) + 1, sizeof *pr->uids);
            size_t i;
            const json_t *x;
            json_array_foreach(pods, i, x) {
                const char *u = form ? pod_uid(x) : json_string_value(json_object_get(x, "UID"));
                if (u)
                    pr->uids[pr->n++] = u;
            }
        }
    }
    char why[200];
    bool may_evict = !pre_not_eligible(&pd.prio, &view, why, sizeof why);
    json_t *res = json_object();
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, req->uid);
    if (pl && pre_plan_over(p, pl))
        pl = NULL;
    for (size_t i = 0; i < np; i++) {
        proposal *pr = &props[i];
        if (pl && strcmp(pr->node, pl->node) != 0)
            continue;   /* our preemption is under way elsewhere: no second one */
        plan_query q = {req, &view, set, may_evict && !pl, true, NULL, pr->uids, pr->n, NULL};
        node_plan npl;
        if (pre_plan_node(p, &q, pr->node, &npl) < 0)
            continue;   /* GPUs cannot be freed there */
        /* kube-scheduler's victims as it proposed them (gpupack may not know
         * them all), then the GPU victims gpupack adds */
        int nv = pr->n;
        pvictim *all = xcalloc((size_t)(pr->n + npl.nv + 1), sizeof *all);
        for (int k = 0; k < pr->n; k++) {
            gp_strlcpy(all[k].uid, pr->uids[k], sizeof all[k].uid);
            const pmeta *m = strmap_get(p->meta, pr->uids[k]);
            all[k].priority = m ? m->priority : INT32_MAX;   /* unknown: keep it first */
        }
        for (int k = 0; k < npl.nv; k++)
            if (!pre_is_forced(&q, npl.v[k].uid))
                all[nv++] = npl.v[k];
        qsort(all, (size_t)nv, sizeof *all, cmp_prio_desc);   /* Pods[0]: highest priority */
        json_t *arr = json_array();
        for (int k = 0; k < nv; k++)
            json_array_append_new(arr, json_pack("{s:s}", "UID", all[k].uid));
        free(all);
        json_object_set_new(res, pr->node, json_pack("{s:o,s:I}", "Pods", arr, "NumPDBViolations",
                                                     (json_int_t)(pr->pdb + npl.pdb_violations)));
        pre_node_plan_clear(&npl);
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < np; i++)
        free(props[i].uids);
    free(props);
    free(req);
    policy_set_unref(set);
    json_t *ans = json_pack("{s:o}", "NodeNameToMetaVictims", res);
    *out = json_dumps(ans, JSON_COMPACT);
    json_decref(ans);
    if (!*out)
        abort();
    return 200;
}

static json_t *preempt_status(gp_preempt *p, const json_t *pod);

static json_t *on_status(void *ud, const json_t *pod)
{
    return preempt_status(ud, pod);
}

gp_preempt_hooks preempt_hooks(gp_preempt *p)
{
    return (gp_preempt_hooks){p, pre_on_nofit, on_process, on_status};
}

/* ------------------------------------------------------------ views -- */

static json_t *victims_json(gp_preempt *p, const pvictim *v, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        gp_assignment *a = xmalloc(sizeof *a);
        bool present = cluster_pod_get(p->c, v[i].uid, a, NULL) == 0;
        free(a);
        static const char *const st[] = {[V_TODO] = "to-evict", [V_EVICTED] = "evicted",
                                         [V_GONE] = "gone"};
        const char *state = !present ? "gone" : !v[i].ours ? "terminating" : st[v[i].state];
        char *id = xasprintf("%s/%s", v[i].ns, v[i].name);
        json_t *o = json_pack("{s:s,s:i,s:s,s:s,s:b}", "pod", id, "priority", (int)v[i].priority,
                              "frees", v[i].frees, "state", state, "evictedByGpupack", v[i].ours);
        if (v[i].to[0])
            json_object_set_new(o, "replacementPlace", json_string(v[i].to));
        json_array_append_new(arr, o);
        free(id);
    }
    return arr;
}

/* For `gpupack explain` (the hooks' status): what preemption does or would do
 * for this pod (borrowed Pod JSON): {"state": "preempting"|"waiting"|
 * "would-preempt"|"cannot"|"not-eligible"|"none", "message", "node",
 * "victims":[...]}. A dry run: nothing is claimed or evicted. Returns owned
 * JSON. */
static json_t *preempt_status(gp_preempt *p, const json_t *pod)
{
    gp_extender *e = atomic_load(&p->e);
    const char *uid = pod_uid(pod);
    if (!e)
        return json_pack("{s:s,s:s}", "state", "none", "message", "preemption is not running");
    gp_policy_set *set = extender_policies(e);
    gp_pod_req *req = xmalloc(sizeof *req);
    gp_policy_view view;
    gp_err err;
    json_t *out = NULL;
    gp_pod pd;
    if (pod_decode(pod, &pd, &err) || extender_pod_request(e, &pd, set, req, &view, &err) ||
        req->nctrs == 0) {
        out = json_pack("{s:s,s:s}", "state", "none", "message",
                        "the pod asks no GPUs: kube-scheduler's own preemption applies");
        goto done;
    }
    const gp_pod_prio *pp = &pd.prio;
    pthread_mutex_lock(&p->mu);
    plan *pl = uid ? strmap_get(p->plans, uid) : NULL;
    if (pl) {
        char list[600], msg[1400];
        size_t left = pre_list_victims(p, pl, true, list, sizeof list);
        if (pl->stage == S_WAIT)
            snprintf(msg, sizeof msg, "waiting for %zu pod%s to %s on %.100s; %.160s is held for this pod%s%.500s",
                     left, left == 1 ? "" : "s", pl->consol ? "move away" : "terminate", pl->node,
                     pl->frees, left ? ": " : "", list);
        else if (pl->consol)
            snprintf(msg, sizeof msg, "waiting for consolidation on %.100s (%s): %d pod%s move to free "
                     "%.160s for this pod (their replacements have places held elsewhere): %.500s",
                     pl->node, stage_names[pl->stage], pl->nv, pl->nv == 1 ? "" : "s", pl->frees,
                     list);
        else
            snprintf(msg, sizeof msg, "preempting on %s (%s) to free %s for this pod", pl->node,
                     stage_names[pl->stage], pl->frees);
        out = json_pack("{s:s,s:s,s:s,s:s,s:o,s:i}", "state",
                        pl->stage == S_WAIT ? "waiting" : pl->consol ? "consolidating" : "preempting",
                        "message", msg, "node",
                        pl->node, "frees", pl->frees, "victims", victims_json(p, pl->v, pl->nv),
                        "expiresInSeconds", (int)(pl->deadline - pre_now_s()));
        pthread_mutex_unlock(&p->mu);
        goto done;
    }
    char why[200];
    const char *ne = pre_not_eligible(pp, &view, why, sizeof why);
    if (ne) {
        pthread_mutex_unlock(&p->mu);
        out = json_pack("{s:s,s:s}", "state", "not-eligible", "message", ne);
        goto done;
    }
    /* a dry run over every node of the store */
    size_t nn = 0, it = 0;
    cluster_rdlock(p->c);
    size_t total = cluster_rd_node_count(p->c);
    char (*names)[GP_NAME_MAX] = xmalloc((total ? total : 1) * GP_NAME_MAX);
    const gp_node *n;
    while ((n = cluster_rd_node_at(p->c, &it)) && nn < total)
        gp_strlcpy(names[nn++], n->name, GP_NAME_MAX);
    cluster_unlock(p->c);
    const char **ptrs = xmalloc((nn ? nn : 1) * sizeof *ptrs);
    for (size_t i = 0; i < nn; i++)
        ptrs[i] = names[i];
    plan_query q = {req, &view, set, true, false, pp->nominated[0] ? pp->nominated : NULL, NULL, 0, NULL};
    node_plan best;
    if (pre_plan_nodes(p, &q, ptrs, NULL, nn, &best, NULL, NULL) == 0) {
        out = json_pack("{s:s,s:s}", "state", "cannot", "message",
                        "no set of lower-priority pods (unprotected, of priority below this pod's) "
                        "frees what this pod needs on any node");
    } else {
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        char frees[160], msg[300];
        pre_describe_holds(holds, gp_assignment_holds(&best.a, holds), frees, sizeof frees);
        snprintf(msg, sizeof msg, "would %s %d pod%s on %.100s to free %.150s",
                 best.nv ? "preempt" : "wait for", best.nv ? best.nv : best.nwait,
                 (best.nv ? best.nv : best.nwait) == 1 ? "" : "s", best.node, frees);
        out = json_pack("{s:s,s:s,s:s,s:s,s:o}", "state", "would-preempt", "message", msg, "node",
                        best.node, "frees", frees, "victims",
                        victims_json(p, best.v, best.nv + best.nwait));
        pre_node_plan_clear(&best);
    }
    pthread_mutex_unlock(&p->mu);
    free(ptrs);
    free(names);
done:
    free(req);
    policy_set_unref(set);
    return out;
}

json_t *preempt_inspect(gp_preempt *p)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&p->mu);
    size_t it = 0;
    plan *pl;
    double now = pre_now_s();
    while ((pl = strmap_next(p->plans, &it, NULL))) {
        char *id = xasprintf("%s/%s", pl->ns, pl->name);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:o,s:i,s:i}", "pod", id,
                                             "kind", pl->consol ? "consolidation" : "preemption",
                                             "priority", (int)pl->priority, "node", pl->node,
                                             "stage", stage_names[pl->stage], "frees", pl->frees,
                                             "victims", victims_json(p, pl->v, pl->nv),
                                             "ageSeconds", (int)(now - pl->created),
                                             "expiresInSeconds", (int)(pl->deadline - now)));
        free(id);
    }
    json_t *held_arr = json_array();
    it = 0;
    held *h;
    while ((h = strmap_next(p->held, &it, NULL))) {
        char *id = xasprintf("%s/%s", h->ns, h->moved);
        json_array_append_new(held_arr,
                              json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:b}", "movedPod", id, "controllerUID",
                                        h->owner, "for", h->waiting, "place", h->where,
                                        "ageSeconds", (int)(now - h->created), "expiresInSeconds",
                                        (int)(h->expires - now), "rebuilt", h->rebuilt));
        free(id);
    }
    pthread_mutex_unlock(&p->mu);
    return json_pack("{s:o,s:o}", "preemptions", arr, "heldPlaces", held_arr);
}

void preempt_stats(gp_preempt *p, gp_preempt_stats *s)
{
    memset(s, 0, sizeof *s);
    s->started = atomic_load(&p->started_n);
    s->waits = atomic_load(&p->waits);
    s->victims = atomic_load(&p->victims);
    s->bound = atomic_load(&p->bound);
    s->deleted = atomic_load(&p->deleted);
    s->expired = atomic_load(&p->expired);
    s->replanned = atomic_load(&p->replanned);
    s->failed = atomic_load(&p->failed);
    s->evict_blocked = atomic_load(&p->evict_blocked);
    s->evict_retry = atomic_load(&p->evict_retry);
    s->evict_refused = atomic_load(&p->evict_refused);
    s->nudges = atomic_load(&p->nudged_n);
    s->renudges = atomic_load(&p->renudged);
    s->c_started = atomic_load(&p->c_started);
    s->c_moved = atomic_load(&p->c_moved);
    s->c_bound = atomic_load(&p->c_bound);
    s->c_deleted = atomic_load(&p->c_deleted);
    s->c_expired = atomic_load(&p->c_expired);
    s->c_blocked = atomic_load(&p->c_blocked);
    s->c_failed = atomic_load(&p->c_failed);
    s->c_no_plan = atomic_load(&p->c_no_plan);
    s->c_budget = atomic_load(&p->c_budget);
    s->c_held_used = atomic_load(&p->c_held_used);
    s->c_held_expired = atomic_load(&p->c_held_expired);
    s->c_held_rebuilt = atomic_load(&p->c_held_rebuilt);
    pthread_mutex_lock(&p->mu);
    s->active = strmap_count(p->plans);
    s->c_held = strmap_count(p->held);
    s->c_last_hour = ledger_last_hour(p->ledger, pre_now_s());
    s->pods_known = strmap_count(p->meta);
    s->claims_parked = strmap_count(p->parked);
    pthread_mutex_unlock(&p->mu);
}

void preempt_metrics(void *pre, gp_buf *out)
{
    gp_preempt *p = pre;
    if (!p)
        return;
    gp_preempt_stats s;
    preempt_stats(p, &s);
    metrics_header(out, "gpupack_preemptions_total", "counter",
                   "Preemptions gpupack started for pods asking GPUs (at least one pod evicted).");
    metrics_u(out, "gpupack_preemptions_total", NULL, s.started);
    metrics_header(out, "gpupack_preemption_victims_total", "counter",
                   "Pods evicted (or found gone) to free GPU share for a higher-priority pod.");
    metrics_u(out, "gpupack_preemption_victims_total", NULL, s.victims);
    metrics_header(out, "gpupack_preemption_waits_total", "counter",
                   "Reservations made for a pod that only waits for pods already terminating.");
    metrics_u(out, "gpupack_preemption_waits_total", NULL, s.waits);
    metrics_header(out, "gpupack_preemption_reservations", "gauge",
                   "GPU share held for preemptors now (one per pod).");
    metrics_u(out, "gpupack_preemption_reservations", NULL, s.active);
    metrics_header(out, "gpupack_preemption_pods_known", "gauge",
                   "Pods whose priority, owner and labels preemption keeps (every pod the watch "
                   "shows until it is deleted or a LIST no longer shows it).");
    metrics_u(out, "gpupack_preemption_pods_known", NULL, s.pods_known);
    metrics_header(out, "gpupack_preemption_claim_pods_parked", "gauge",
                   "Pending pods with ResourceClaims that kube-scheduler found no node for: the "
                   "ones gpupack's worker looks at for preemption.");
    metrics_u(out, "gpupack_preemption_claim_pods_parked", NULL, s.claims_parked);
    metrics_header(out, "gpupack_preemption_ends_total", "counter",
                   "How reservations ended: the pod was bound or deleted, the victims did not go in "
                   "time, a PodDisruptionBudget made it plan again, an eviction was refused.");
    const struct {
        const char *label;
        unsigned long v;
    } ends[] = {{"result=\"bound\"", s.bound},         {"result=\"deleted\"", s.deleted},
                {"result=\"expired\"", s.expired},     {"result=\"replanned\"", s.replanned},
                {"result=\"failed\"", s.failed}},
      fails[] = {{"reason=\"blocked\"", s.evict_blocked},
                 {"reason=\"retry\"", s.evict_retry},
                 {"reason=\"refused\"", s.evict_refused}};
    for (size_t i = 0; i < GP_ARRAY_LEN(ends); i++)
        metrics_u(out, "gpupack_preemption_ends_total", ends[i].label, ends[i].v);
    metrics_header(out, "gpupack_preemption_evictions_failed_total", "counter",
                   "Evictions not made: blocked by a PodDisruptionBudget (429), to retry (API "
                   "server unreachable, 5xx), refused (RBAC, bad request).");
    for (size_t i = 0; i < GP_ARRAY_LEN(fails); i++)
        metrics_u(out, "gpupack_preemption_evictions_failed_total", fails[i].label, fails[i].v);
    metrics_header(out, "gpupack_preemption_nudges_total", "counter",
                   "Preemptors whose pod gpupack patched to have kube-scheduler retry it once its "
                   "share was free: first nudges, and again for a pod still unbound.");
    metrics_u(out, "gpupack_preemption_nudges_total", "kind=\"first\"", s.nudges);
    metrics_u(out, "gpupack_preemption_nudges_total", "kind=\"again\"", s.renudges);
    metrics_header(out, "gpupack_consolidations_total", "counter",
                   "Consolidations started: pods moved so that a waiting pod fits.");
    metrics_u(out, "gpupack_consolidations_total", NULL, s.c_started);
    metrics_header(out, "gpupack_consolidation_moves_total", "counter",
                   "Pods evicted (or found gone) to be recreated elsewhere by their controller.");
    metrics_u(out, "gpupack_consolidation_moves_total", NULL, s.c_moved);
    metrics_header(out, "gpupack_consolidation_moves_last_hour", "gauge",
                   "Moves in the last hour, all namespaces (the policies' maxMovesPerHour "
                   "applies per namespace).");
    metrics_u(out, "gpupack_consolidation_moves_last_hour", NULL, s.c_last_hour);
    metrics_header(out, "gpupack_consolidation_ends_total", "counter",
                   "How consolidations ended: the pod was bound or deleted, the moved pods did not "
                   "go in time, a PodDisruptionBudget blocked a move, an eviction was refused.");
    const struct {
        const char *label;
        unsigned long v;
    } cends[] = {{"result=\"bound\"", s.c_bound},     {"result=\"deleted\"", s.c_deleted},
                 {"result=\"expired\"", s.c_expired}, {"result=\"blocked\"", s.c_blocked},
                 {"result=\"failed\"", s.c_failed}},
      refused[] = {{"reason=\"no_plan\"", s.c_no_plan}, {"reason=\"budget\"", s.c_budget}},
      held_ends[] = {{"result=\"used\"", s.c_held_used}, {"result=\"expired\"", s.c_held_expired}};
    for (size_t i = 0; i < GP_ARRAY_LEN(cends); i++)
        metrics_u(out, "gpupack_consolidation_ends_total", cends[i].label, cends[i].v);
    metrics_header(out, "gpupack_consolidation_refused_total", "counter",
                   "Tries (one per filter of a waiting pod) that found no consolidation: none "
                   "within the policy's maxMovesPerPod, or only one the hourly budget forbids.");
    for (size_t i = 0; i < GP_ARRAY_LEN(refused); i++)
        metrics_u(out, "gpupack_consolidation_refused_total", refused[i].label, refused[i].v);
    metrics_header(out, "gpupack_consolidation_held_places", "gauge",
                   "Places held now for the replacements of moved pods.");
    metrics_u(out, "gpupack_consolidation_held_places", NULL, s.c_held);
    metrics_header(out, "gpupack_consolidation_held_ends_total", "counter",
                   "How held places ended: a pod of the controller was placed, or none came in time.");
    for (size_t i = 0; i < GP_ARRAY_LEN(held_ends); i++)
        metrics_u(out, "gpupack_consolidation_held_ends_total", held_ends[i].label, held_ends[i].v);
    metrics_header(out, "gpupack_consolidation_held_rebuilt_total", "counter",
                   "Places held again from a waiting pod's gpupack.io/HeldPlaces condition (after a "
                   "restart, or by the standby following the leader).");
    metrics_u(out, "gpupack_consolidation_held_rebuilt_total", NULL, s.c_held_rebuilt);
}
