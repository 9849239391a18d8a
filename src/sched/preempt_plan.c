/* preempt_plan.c -- planning a preemption: node copies, victims, the claim;
 * filter's hook and rebuilding after a restart. */
#include "sched/preempt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ planning -- */



void pre_collect(void *ud, const gp_pod_on_node *p)
{
    npods *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    npod *x = &l->v[l->n++];
    gp_strlcpy(x->uid, p->uid, sizeof x->uid);
    gp_strlcpy(x->ns, p->ns, sizeof x->ns);
    gp_strlcpy(x->name, p->name, sizeof x->name);
    gp_strlcpy(x->policy, p->policy ? p->policy : "", sizeof x->policy);
    x->state = p->state;
    x->applied = p->applied;
    x->nholds = p->nholds;
    memcpy(x->holds, p->holds, (size_t)p->nholds * sizeof *p->holds);
    x->cpu = p->cpu_milli;
    x->mem = p->mem_mib;
}


void pre_node_plan_clear(node_plan *np)
{
    free(np->v);
    memset(np, 0, sizeof *np);
}

/* The victim's policy says priorityPreemptible: false (a pod of it is never evicted). */
static bool protected_by_policy(gp_policy_set *set, const char *policy)
{
    gp_policy_view v;
    gp_err err;
    return policy && *policy && set && policy_view_by_name(set, policy, &v, &err) == 0 &&
           v.preempt.protect;
}

static bool is_blocked(const plan *old, const char *uid)
{
    for (int i = 0; old && i < old->nblocked; i++)
        if (strcmp(old->blocked[i], uid) == 0)
            return true;
    return false;
}

bool pre_is_forced(const plan_query *q, const char *uid)
{
    for (int i = 0; i < q->nforced; i++)
        if (strcmp(q->forced[i], uid) == 0)
            return true;
    return false;
}

/* Removes a pod's holds and host requests from a node copy. */
static void drop_pod(gp_node *n, const npod *x)
{
    for (int h = 0; h < x->nholds; h++) {
        int pos = gp_node_gpu_pos(n, x->holds[h].index);
        if (pos < 0)
            continue;
        placement_hold(n, pos, &x->holds[h], -1);
    }
    n->cpu_used_milli -= x->cpu;
    n->host_mem_used_mib -= x->mem;
}

/* kube-scheduler's order of importance, for the PDB count: most important first. */
static const gp_victim *imp_cands;
static int cmp_importance_r(const void *a, const void *b)
{
    const gp_victim *x = &imp_cands[*(const int *)a], *y = &imp_cands[*(const int *)b];
    int c = podprio_importance_cmp(x->priority, x->start_ns, y->priority, y->start_ns);
    return c ? c : *(const int *)a - *(const int *)b;
}

void pre_fill_victim(pvictim *pv, const npod *x, const pmeta *m, bool ours, bool covered)
{
    memset(pv, 0, sizeof *pv);
    gp_strlcpy(pv->uid, x->uid, sizeof pv->uid);
    gp_strlcpy(pv->ns, x->ns, sizeof pv->ns);
    gp_strlcpy(pv->name, x->name, sizeof pv->name);
    pv->priority = m ? m->priority : 0;
    pv->ours = ours;
    pv->covered = covered;
    pre_describe_holds(x->holds, x->nholds, pv->frees, sizeof pv->frees);
}

/* One node as planning sees it: a copy of the node as this pod sees it (other
 * pods' claims counted), the pods on it, and which of them may be evicted. */
typedef struct node_work {
    gp_node *n;
    npods pods;
    gp_victim *cands;
    int *cidx;                    /* cands[i] is pods.v[cidx[i]] */
    int nc;
    int ns_pods[GP_MAX_GPUS_PER_NODE];
    pvictim *waits;               /* terminating pods whose share comes back */
    int nwait;
    gp_pdb **pdbs;
    size_t npdb;
} node_work;

static void work_free(node_work *w)
{
    free(w->pdbs);
    free(w->waits);
    free(w->cidx);
    free(w->cands);
    free(w->pods.v);
    free(w->n);
}

/* Whether a node holds a pod a plan could use: one kube-scheduler evicts
 * anyway, one terminating, or one of lower priority (a superset of
 * classify's candidates: protections are left to it). */
typedef struct relevant_scan {
    gp_preempt *p;
    const plan_query *q;
    bool found;
} relevant_scan;

static void scan_relevant(void *ud, const gp_pod_on_node *x)
{
    relevant_scan *r = ud;
    if (r->found)
        return;
    if (pre_is_forced(r->q, x->uid)) {
        r->found = true;
        return;
    }
    const pmeta *m = strmap_get(r->p->meta, x->uid);
    r->found = m && (m->deletion_ns || (r->q->may_evict && m->priority < r->q->req->priority));
}

/* Copies the node and its pods for planning; false when it is unknown or,
 * unless a plan may be a fit without victims (q->fits_ok), when none of its
 * pods could be a victim or be waited for: classify would find nothing, and
 * a filter of a pod that fits nowhere asks this of every node (copying each
 * node's pods for nothing was about a quarter of that filter's time in a soak). */
static bool snapshot(gp_preempt *p, const plan_query *q, const char *node, node_work *w)
{
    gp_node *scratch = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
    cluster_rdlock(p->c);
    relevant_scan rs = {p, q, q->fits_ok};
    if (!rs.found)
        cluster_rd_node_pods(p->c, node, scan_relevant, &rs);
    const gp_node *view = rs.found ? cluster_rd_node_for(p->c, node, q->req, scratch) : NULL;
    if (view) {
        w->n = xmalloc(gp_node_size(view->ngpus));
        memcpy(w->n, view, gp_node_size(view->ngpus));
        cluster_rd_node_pods(p->c, node, pre_collect, &w->pods);
    }
    cluster_unlock(p->c);
    free(scratch);
    return w->n != NULL;
}

/* Sorts the node's pods: kube-scheduler's proposed victims (into np, out of
 * the node), pods terminating on time (out of the node, into w->waits), the
 * candidates, and the rest (which stay). */
static void classify(gp_preempt *p, const plan_query *q, node_work *w, node_plan *np)
{
    size_t cap = (size_t)(w->pods.n ? w->pods.n : 1);
    w->cands = xmalloc(cap * sizeof *w->cands);
    w->cidx = xmalloc(cap * sizeof *w->cidx);
    w->waits = xmalloc(cap * sizeof *w->waits);
    np->v = xcalloc(cap, sizeof *np->v);
    int64_t now = gp_now_ns();
    for (int i = 0; i < w->pods.n; i++) {
        const npod *x = &w->pods.v[i];
        const pmeta *m = strmap_get(p->meta, x->uid);
        if (pre_is_forced(q, x->uid)) {   /* kube-scheduler evicts it anyway */
            drop_pod(w->n, x);
            pre_fill_victim(&np->v[np->nv++], x, m, true, false);
            continue;
        }
        if (m && m->deletion_ns) {
            /* terminating: its share comes back once it is gone -- unless it is
             * overdue (stuck: then it keeps holding and no one waits for it) */
            int64_t grace = m->grace_s >= 0 ? m->grace_s : GRACE_DEFAULT_S;
            bool going = now < m->deletion_ns + (int64_t)(p->cfg.wait_s * 1e9) ||
                         now < m->deletion_ns + grace * INT64_C(1000000000);
            if (going) {
                drop_pod(w->n, x);
                pre_fill_victim(&w->waits[w->nwait++], x, m, false, false);
            }
            continue;
        }
        bool same_ns = x->ns[0] && strcmp(x->ns, q->req->ns) == 0;
        for (int h = 0; same_ns && h < x->nholds; h++) {
            int pos = gp_node_gpu_pos(w->n, x->holds[h].index);
            if (pos >= 0)
                w->ns_pods[pos]++;
        }
        /* bound as the watch shows it, or as the answer to gpupack's own
         * Binding showed it a moment before the watch (as kube-scheduler's
         * cache counts its assumed pods): a pod bound just before the
         * preemptor came is a victim like any other */
        bool bound = (m && m->bound && x->state == GP_POD_BOUND) || x->applied;
        if (!q->may_evict || !m || !bound || m->priority >= q->req->priority ||
            protected_by_policy(q->set, x->policy) || is_blocked(q->old, x->uid))
            continue;   /* stays */
        w->cands[w->nc] = (gp_victim){m->priority, m->start_ns, false, same_ns, x->nholds,
                                      x->holds, x->cpu, x->mem};
        w->cidx[w->nc++] = i;
    }
}

/* PodDisruptionBudget violations, counted as kube-scheduler counts them:
 * candidates most important first. */
static void count_pdb(gp_preempt *p, node_work *w)
{
    w->npdb = strmap_count(p->pdbs);
    if (w->nc == 0 || w->npdb == 0)
        return;
    w->pdbs = xmalloc(w->npdb * sizeof *w->pdbs);
    size_t it = 0, k = 0;
    gp_pdb *b;
    while ((b = strmap_next(p->pdbs, &it, NULL)))
        w->pdbs[k++] = b;
    int *order = xmalloc((size_t)w->nc * sizeof *order);
    for (int i = 0; i < w->nc; i++)
        order[i] = i;
    imp_cands = w->cands;   /* under p->mu: one planner at a time */
    qsort(order, (size_t)w->nc, sizeof *order, cmp_importance_r);
    gp_pdb_pod *pp = xmalloc((size_t)w->nc * sizeof *pp);
    bool *violating = xmalloc((size_t)w->nc * sizeof *violating);
    for (int i = 0; i < w->nc; i++) {
        const npod *x = &w->pods.v[w->cidx[order[i]]];
        const pmeta *m = strmap_get(p->meta, x->uid);
        pp[i] = (gp_pdb_pod){x->ns, x->name, m ? m->labels : ""};
    }
    pdb_violations((gp_pdb *const *)w->pdbs, w->npdb, pp, (size_t)w->nc, violating);
    for (int i = 0; i < w->nc; i++)
        w->cands[order[i]].pdb_violating = violating[i];
    free(violating);
    free(pp);
    free(order);
}

/* The node plan from the search's answer: the rank with kube-scheduler's own
 * victims counted like chosen ones, then the chosen victims, then the pods
 * it waits for. */
static void fill_plan(gp_preempt *p, const node_work *w, const gp_victim_plan *vp, node_plan *np)
{
    np->rank = vp->rank;
    np->a = vp->a;
    for (int i = 0; i < np->nv; i++) {
        np->rank.count++;
        np->rank.priority_sum += (int64_t)np->v[i].priority + INT64_C(2147483648);
        if (np->v[i].priority > np->rank.max_priority || np->rank.count == 1)
            np->rank.max_priority = np->v[i].priority;
    }
    for (int i = 0; i < vp->nvictims; i++) {
        const npod *x = &w->pods.v[w->cidx[vp->victims[i]]];
        const pmeta *m = strmap_get(p->meta, x->uid);
        bool covered = w->npdb && pdb_covered((gp_pdb *const *)w->pdbs, w->npdb, x->ns,
                                              m ? m->labels : "");
        pre_fill_victim(&np->v[np->nv++], x, m, true, covered);
        np->pdb_violations += w->cands[vp->victims[i]].pdb_violating;
    }
    memcpy(np->v + np->nv, w->waits, (size_t)w->nwait * sizeof *w->waits);
    np->nwait = w->nwait;
}

/* Plans on one node: 0 with np filled when a plan exists, -1 otherwise.
 * Called with p->mu held; takes the store's read lock itself. */
int pre_plan_node(gp_preempt *p, const plan_query *q, const char *node, node_plan *np)
{
    int rc = -1;
    memset(np, 0, sizeof *np);
    gp_strlcpy(np->node, node, sizeof np->node);
    node_work w = {0};
    int *buf = NULL;
    if (!snapshot(p, q, node, &w))
        goto out;
    classify(p, q, &w, np);
    count_pdb(p, &w);
    gp_victim_query vq = {.node = w.n, .req = q->req, .opts = &q->view->place, .cands = w.cands,
                          .ncands = w.nc, .ns_share_cap = q->view->ns_share_cap,
                          .ns_gpu_pods = w.ns_pods, .budget = p->cfg.search_budget};
    buf = xmalloc((size_t)(w.nc ? w.nc : 1) * sizeof *buf);
    gp_victim_plan vp;
    np->res = victims_select(&vq, buf, &vp);
    if (np->res == GP_VICTIMS_NONE)
        goto out;
    /* nothing to evict: a reservation only where the pod was nominated (its
     * preemption is done: by us before a restart, or by kube-scheduler) */
    bool nominated_here = q->nominated && strcmp(q->nominated, node) == 0 && w.nwait > 0;
    if (np->res == GP_VICTIMS_FITS && np->nv == 0 && !q->fits_ok && !nominated_here)
        goto out;
    fill_plan(p, &w, &vp, np);
    rc = 0;
out:
    if (rc)
        pre_node_plan_clear(np);
    free(buf);
    work_free(&w);
    return rc;
}

typedef struct ranked {
    gp_victim_rank rank;
    size_t at;                    /* index into nodes */
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    int c = victims_rank_cmp(&x->rank, &y->rank);
    return c ? c : (x->at < y->at ? -1 : x->at > y->at);
}

/* Plans over `nodes` (skipping those marked in `skip`), at most kube-scheduler's
 * number of candidate nodes: the best node plan in best, the next best nodes'
 * names in alts (when non-NULL). Returns how many nodes had a plan. */
int pre_plan_nodes(gp_preempt *p, const plan_query *q, const char *const *nodes, const bool *skip,
                   size_t n, node_plan *best, char alts[][GP_NAME_MAX], int *nalts)
{
    size_t want = n * CANDIDATES_PCT / 100, found = 0;
    if (want < CANDIDATES_MIN)
        want = CANDIDATES_MIN;
    ranked *r = xmalloc((n ? n : 1) * sizeof *r);
    memset(best, 0, sizeof *best);
    for (size_t i = 0; i < n && found < want; i++) {
        if (skip && skip[i])
            continue;
        node_plan np;
        if (pre_plan_node(p, q, nodes[i], &np) < 0)
            continue;
        r[found++] = (ranked){np.rank, i};
        if (found == 1 || victims_rank_cmp(&np.rank, &best->rank) < 0) {
            pre_node_plan_clear(best);
            *best = np;
        } else {
            pre_node_plan_clear(&np);
        }
    }
    qsort(r, found, sizeof *r, cmp_ranked);
    if (nalts) {
        *nalts = 0;
        for (size_t i = 0; i < found && *nalts < ALTS_MAX; i++)
            if (strcmp(nodes[r[i].at], best->node) != 0)
                gp_strlcpy(alts[(*nalts)++], nodes[r[i].at], GP_NAME_MAX);
    }
    free(r);
    return (int)found;
}

/* May this pod preempt at all? NULL when yes, else why not. */
const char *pre_not_eligible(const gp_pod_prio *pp, const gp_policy_view *view, char *buf,
                             size_t len)
{
    if (pp->deletion_ns)
        return "the pod is being deleted";
    if (pp->never)
        return "preemptionPolicy: Never";
    if (!view->preempt.may_preempt) {
        snprintf(buf, len, "policy %.100s says mayPreempt: false", view->name);
        return buf;
    }
    if (view->preempt.has_min && pp->priority < view->preempt.min_priority) {
        snprintf(buf, len, "priority %d is below the minPriority %d of policy %.100s", pp->priority,
                 view->preempt.min_priority, view->name);
        return buf;
    }
    return NULL;
}

/* Makes node plan np the pod's plan: the claim, then the worker's job. */
plan *pre_commit(gp_preempt *p, const json_t *pod, const gp_pod_req *req, node_plan *np,
                 char alts[][GP_NAME_MAX], int nalts, const plan *old, gp_err *err)
{
    gp_claim *cl = xcalloc(1, sizeof *cl);
    gp_strlcpy(cl->uid, req->uid, sizeof cl->uid);
    gp_strlcpy(cl->ns, req->ns, sizeof cl->ns);
    gp_strlcpy(cl->name, req->name, sizeof cl->name);
    /* a consolidation's freed share is for this pod alone: pods of its own
     * priority (the usual case) would otherwise take it meanwhile */
    cl->priority = np->consol ? INT32_MAX : req->priority;
    cl->cpu_milli = req->cpu_milli;
    cl->mem_mib = req->host_mem_mib;
    cl->dra = req->dra;
    cl->a = np->a;
    gp_strlcpy(cl->a.node, np->node, sizeof cl->a.node);
    int rc = cluster_claim(p->c, cl, err);
    free(cl);
    if (rc)
        return NULL;
    plan *pl = xcalloc(1, sizeof *pl);
    gp_strlcpy(pl->uid, req->uid, sizeof pl->uid);
    gp_strlcpy(pl->ns, req->ns, sizeof pl->ns);
    gp_strlcpy(pl->name, req->name, sizeof pl->name);
    pl->priority = req->priority;
    pl->consol = np->consol;
    gp_strlcpy(pl->node, np->node, sizeof pl->node);
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    pre_describe_holds(holds, gp_assignment_holds(&np->a, holds), pl->frees, sizeof pl->frees);
    pl->nv = np->nv + np->nwait;
    pl->v = np->v;
    np->v = NULL;
    /* PDB-covered victims first: a 429 then stops before the others are evicted */
    for (int i = 1; i < np->nv; i++) {
        pvictim x = pl->v[i];
        int j = i - 1;
        while (j >= 0 && x.covered && !pl->v[j].covered) {
            pl->v[j + 1] = pl->v[j];
            j--;
        }
        pl->v[j + 1] = x;
    }
    int64_t grace = 0;
    for (int i = 0; i < pl->nv; i++) {
        const pmeta *m = strmap_get(p->meta, pl->v[i].uid);
        int64_t g = m && m->grace_s >= 0 ? m->grace_s : GRACE_DEFAULT_S;
        if (g > grace)
            grace = g;
    }
    pl->created = pre_now_s();
    pl->deadline = pl->created + (double)grace + p->cfg.wait_s;
    pl->stage = S_NOMINATE;
    pl->pod = k8s_obs_trim_pod(pod);
    for (int i = 0; i < nalts; i++)
        gp_strlcpy(pl->alts[pl->nalts++], alts[i], GP_NAME_MAX);
    if (old) {
        pl->nblocked = old->nblocked;
        memcpy(pl->blocked, old->blocked, sizeof pl->blocked);
    }
    pre_plan_free(strmap_put(p->plans, pl->uid, pl));
    if (np->nv > 0) {
        atomic_fetch_add(pl->consol ? &p->c_started : &p->started_n, 1);
        char list[600];
        pre_list_victims(p, pl, false, list, sizeof list);
        char msg[MSG_MAX];
        if (pl->consol)
            snprintf(msg, sizeof msg, "moving %d pod%s on %.100s to free %.160s for this pod (their "
                     "controllers recreate them where a place is held): %.600s",
                     np->nv, np->nv == 1 ? "" : "s", pl->node, pl->frees, list);
        else
            snprintf(msg, sizeof msg, "preempting %d lower-priority pod%s on %.100s to free %.160s: %.600s",
                     np->nv, np->nv == 1 ? "" : "s", pl->node, pl->frees, list);
        LOG_INFO("pod %s/%s (priority %d): %s", pl->ns, pl->name, pl->priority, msg);
        if (p->cfg.io.event)
            p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, false,
                            pl->consol ? "Consolidating" : "Preempting", msg);
    } else {
        atomic_fetch_add(&p->waits, 1);
        LOG_INFO("pod %s/%s (priority %d): holding %s on %s while %d terminating pod(s) go",
                 pl->ns, pl->name, pl->priority, pl->frees, pl->node, np->nwait);
    }
    pthread_cond_signal(&p->cv);
    return pl;
}

/* Is the plan still waiting for something (nomination, evictions, pods to go)? */
bool pre_waiting(gp_preempt *p, const plan *pl)
{
    if (pl->stage != S_WAIT)
        return true;
    char list[8];
    return pre_list_victims(p, pl, true, list, sizeof list) > 0;
}

/* The claim is gone (bound, assumed, deleted) or the deadline passed. */
bool pre_plan_over(gp_preempt *p, plan *pl)
{
    gp_claim *cl = xmalloc(sizeof *cl);
    bool gone = cluster_claim_get(p->c, pl->uid, cl) != 0;
    free(cl);
    if (gone) {
        /* bind took the share over (the pod is assumed or bound), or the node went */
        gp_assignment *a = xmalloc(sizeof *a);
        bool placed = cluster_pod_get(p->c, pl->uid, a, NULL) == 0;
        free(a);
        pre_finish(p, pl, placed ? &p->bound : NULL,
                   placed ? "the pod is being bound" : "its reservation was released");
        return true;
    }
    if (pre_now_s() > pl->deadline) {
        char list[600];
        size_t left = pre_list_victims(p, pl, true, list, sizeof list);
        char msg[900];
        snprintf(msg, sizeof msg, "%.160s on %.100s not freed within %.0f s (%zu pod%s still there%s%.500s); "
                 "the reservation is released",
                 pl->frees, pl->node, pl->deadline - pl->created, left, left == 1 ? "" : "s",
                 left ? ": " : "", list);
        LOG_WARN("preemption for %s/%s: %s", pl->ns, pl->name, msg);
        if (p->cfg.io.event)
            p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, true, "PreemptionTimedOut", msg);
        cluster_unclaim(p->c, pl->uid);
        pre_finish(p, pl, &p->expired, "deadline passed");
        return true;
    }
    return false;
}

long pre_index_of(const char *const *nodes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i], name) == 0)
            return (long)i;
    return -1;
}

/* filter's hook: no node fits a pod that asks GPUs. */
long pre_on_nofit(void *ud, const gp_pod *pod, const gp_pod_req *req, const gp_policy_view *view,
                  gp_policy_set *set, const char *const *nodes, const bool *unresolvable,
                  size_t n, char *reason, size_t len)
{
    gp_preempt *p = ud;
    const gp_pod_prio *pp = &pod->prio;
    long at = -1;
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, req->uid);
    if (pl && !pre_plan_over(p, pl)) {
        if (pre_waiting(p, pl)) {
            char list[600];
            size_t left = pre_list_victims(p, pl, true, list, sizeof list);
            int ours = 0;
            for (int i = 0; i < pl->nv; i++)
                ours += pl->v[i].ours;
            if (pl->stage == S_WAIT || ours == 0)
                snprintf(reason, len, "waiting for %zu pod%s to %s, %s held for this pod: %s",
                         left, left == 1 ? "" : "s", pl->consol ? "move" : "terminate", pl->frees,
                         list);
            else
                snprintf(reason, len, "%s %d %spod%s to free %s for this pod: %s",
                         pl->consol ? "moving" : "preempting", ours,
                         pl->consol ? "" : "lower-priority ", ours == 1 ? "" : "s", pl->frees, list);
            at = pre_index_of(nodes, n, pl->node);
            goto out;
        }
        /* its victims are gone and it still fits nowhere: the plan did not hold */
        cluster_unclaim(p->c, pl->uid);
        pre_finish(p, pl, &p->replanned, "its victims are gone but the pod still does not fit");
    }
    char why[200];
    if (pre_not_eligible(pp, view, why, sizeof why))
        goto consolidate;
    plan_query q = {req, view, set, true, false, pp->nominated[0] ? pp->nominated : NULL, NULL, 0, NULL};
    node_plan best;
    char alts[ALTS_MAX][GP_NAME_MAX];
    int nalts;
    if (pre_plan_nodes(p, &q, nodes, unresolvable, n, &best, alts, &nalts) == 0)
        goto consolidate;
    gp_err err;
    pl = pre_commit(p, pod->json, req, &best, alts, nalts, NULL, &err);
    pre_node_plan_clear(&best);
    if (!pl) {
        LOG_WARN("preemption for %s/%s not started: %s", req->ns, req->name, err.msg);
        goto out;
    }
    char list[600];
    int ours = 0;
    for (int i = 0; i < pl->nv; i++)
        ours += pl->v[i].ours;
    pre_list_victims(p, pl, false, list, sizeof list);
    if (ours)
        snprintf(reason, len, "preempting %d lower-priority pod%s to free %s for this pod: %s", ours,
                 ours == 1 ? "" : "s", pl->frees, list);
    else
        snprintf(reason, len, "waiting for %d pod%s to terminate, %s held for this pod: %s", pl->nv,
                 pl->nv == 1 ? "" : "s", pl->frees, list);
    at = pre_index_of(nodes, n, pl->node);
    goto out;
consolidate:   /* preemption does not apply: moving pods may */
    at = pre_try_consolidate(p, pod->json, pp, req, view, set, nodes, unresolvable, n, reason, len);
out:
    pthread_mutex_unlock(&p->mu);
    return at;
}

/* After a restart (or kube-scheduler's own preemption): a pending pod
 * nominated on a node gets a claim there when the node has room for it once
 * its terminating pods are gone. No eviction: filter plans those. */
void pre_rebuild_one(gp_preempt *p, const char *uid, pmeta *m)
{
    gp_extender *e = atomic_load(&p->e);
    if (!e || !m->pending || strmap_get(p->plans, uid))
        return;
    gp_policy_set *set = extender_policies(e);
    gp_pod_req *req = xmalloc(sizeof *req);
    gp_policy_view view;
    gp_err err;
    if (extender_pod_request_json(e, m->pending, set, req, &view, &err) == 0 && req->nctrs > 0) {
        plan_query q = {req, &view, set, false, true, NULL, NULL, 0, NULL};
        node_plan np;
        const char *node = m->nominated;
        if (pre_plan_node(p, &q, node, &np) == 0) {
            if (!pre_commit(p, m->pending, req, &np, NULL, 0, NULL, &err))
                LOG_WARN("pod %s/%s nominated on %s: no reservation: %s", m->ns, m->name, node,
                         err.msg);
            pre_node_plan_clear(&np);
        }
    }
    free(req);
    policy_set_unref(set);
}

void preempt_pods_synced(gp_preempt *p)
{
    pthread_mutex_lock(&p->mu);
    p->synced = true;
    size_t it = 0;
    const char *uid;
    pmeta *m;
    while ((m = strmap_next(p->meta, &it, &uid)))
        if (m->pending && !strmap_get(p->plans, uid))
            pre_rebuild_one(p, uid, m);
    it = 0;   /* consolidations' held places, once every pod is known (what was bound since) */
    while ((m = strmap_next(p->meta, &it, &uid)))
        if (m->held_rec)
            pre_held_rebuild(p, uid, m);
    pthread_mutex_unlock(&p->mu);
}
