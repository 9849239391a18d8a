/* preempt_consol.c -- consolidation: moving a few pods so that a pod that fits
 * nowhere runs (docs/consolidation.md). */
#include "sched/preempt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ consolidation -- */

#define CONSOL_NODES_MAX 500      /* nodes one plan looks at */
#define LEDGER_KEEP_S (7 * 86400.0)   /* the longest cool-down a policy may set */

/* Controllers that recreate an evicted pod at once with the same request.
 * Not a Job's pods (an evicted one counts as failed against its backoffLimit
 * unless its podFailurePolicy says otherwise), not a DaemonSet's (bound to
 * its node), not bare pods (nothing recreates them). */
static bool movable_kind(const char *kind)
{
    return strcmp(kind, "ReplicaSet") == 0 || strcmp(kind, "StatefulSet") == 0;
}

/* Releases the held places of the victims not evicted yet (the plan ends
 * without them). */
void pre_release_unmoved(gp_preempt *p, plan *pl)
{
    for (int i = 0; i < pl->nv; i++) {
        pvictim *v = &pl->v[i];
        if (!v->held[0] || v->state != V_TODO)
            continue;
        cluster_unclaim(p->c, v->held);
        free(strmap_del(p->held, v->held));
        v->held[0] = '\0';
    }
}

/* What one planning round copied out of the store. */
typedef struct cworld {
    size_t nn;
    gp_node **nodes;
    bool *target_ok;
    npods all;                    /* every copied pod, node after node, in one block */
    npods *pods;                  /* per node: a window of all.v, not owned */
    int nm;
    gp_mover *movers;             /* node by node */
    gp_pod_req *reqs;             /* the replacements' requests, one per distinct shape */
    int nreqs, capreqs;
    uint64_t *req_keys;           /* per request: the hash of what it was made from */
    const npod **req_from;        /* per request: the pod it was made from */
    int *req_node;                /* per request: that pod's node */
    gp_policy_view *views;        /* the movers' policies, one per policy name */
    const char **view_names;
    int nviews, capviews;
    const npod **mpod;            /* mover -> its pod */
    int ng;
    const char **groups;          /* budget groups: namespaces */
    int *group_left;
} cworld;

static void cworld_free(cworld *w)
{
    for (size_t i = 0; i < w->nn; i++)
        free(w->nodes[i]);
    free(w->all.v);
    free(w->nodes);
    free(w->target_ok);
    free(w->pods);
    free(w->movers);
    free(w->reqs);
    free(w->req_keys);
    free(w->req_from);
    free(w->req_node);
    free(w->views);
    free(w->view_names);
    free(w->mpod);
    free(w->groups);
    free(w->group_left);
}

static int group_of(cworld *w, const char *ns, int left)
{
    for (int g = 0; g < w->ng; g++)
        if (strcmp(w->groups[g], ns) == 0) {
            if (left < w->group_left[g])   /* policies differ within it: the strictest */
                w->group_left[g] = left;
            return g;
        }
    w->groups[w->ng] = ns;
    w->group_left[w->ng] = left;
    return w->ng++;
}

/* What is known of the pod `uid` if a controller may move it for req (bound,
 * not terminating, of priority at most req's, recreated by its owner, holding
 * GPU share that no DRA claim allocated), else NULL. p->mu held. */
static const pmeta *may_move_pod(gp_preempt *p, const gp_pod_req *req, const char *uid,
                                 gp_pod_state state, const gp_hold *holds, int nholds)
{
    if (state != GP_POD_BOUND || nholds == 0 || strcmp(uid, req->uid) == 0)
        return NULL;
    for (int h = 0; h < nholds; h++)
        if (holds[h].dra)   /* a claim's share: the allocator, not a controller, decides where it goes */
            return NULL;
    const pmeta *m = strmap_get(p->meta, uid);
    if (!m || !m->bound || m->deletion_ns || m->priority > req->priority ||
        !movable_kind(m->owner.kind))
        return NULL;
    return m;
}

static const pmeta *may_move(gp_preempt *p, const gp_pod_req *req, const npod *x)
{
    return may_move_pod(p, req, x->uid, x->state, x->holds, x->nholds);
}

/* Collects the pods of a node that may move for the query's pod: the others
 * are only the share their node's copy already counts as used. */
typedef struct movable_collect {
    gp_preempt *p;
    const gp_pod_req *req;
    npods *out;
} movable_collect;

static void collect_movable(void *ud, const gp_pod_on_node *x)
{
    movable_collect *c = ud;
    if (may_move_pod(c->p, c->req, x->uid, x->state, x->holds, x->nholds))
        pre_collect(c->out, x);
}

/* The policy view of the pods of policy `name` (the waiting pod's when it
 * names none that exists): one per name, however many pods share it. */
static int view_of(cworld *w, gp_policy_set *set, const gp_policy_view *view, const char *name)
{
    for (int k = 0; k < w->nviews; k++)
        if (strcmp(w->view_names[k], name) == 0)
            return k;
    if (w->nviews == w->capviews) {
        w->capviews = w->capviews ? 2 * w->capviews : 4;
        w->views = xrealloc(w->views, (size_t)w->capviews * sizeof *w->views);
        w->view_names = xrealloc(w->view_names, (size_t)w->capviews * sizeof *w->view_names);
    }
    gp_policy_view *mv = &w->views[w->nviews];
    gp_err err;
    if ((!name[0] || policy_view_by_name(set, name, mv, &err) != 0) &&
        policy_view_by_name(set, "default", mv, &err) != 0)
        *mv = *view;
    w->view_names[w->nviews] = name;
    return w->nviews++;
}

/* What a replacement's request is made from (consolidate_req_from_holds):
 * the holds' shares and the model of the GPU of the first. */
static uint64_t shape_key(const gp_node *n, const npod *x)
{
    uint64_t h = gp_fnv1a(14695981039346656037ULL, &x->nholds, sizeof x->nholds);
    for (int k = 0; k < x->nholds; k++) {
        h = gp_fnv1a(h, &x->holds[k].mem_mib, sizeof x->holds[k].mem_mib);
        h = gp_fnv1a(h, &x->holds[k].core, sizeof x->holds[k].core);
    }
    int pos = gp_node_gpu_pos(n, x->holds[0].index);
    gp_model_ref model = pos >= 0 ? n->gpus[pos].info.model : 0;
    return gp_fnv1a(h, &model, sizeof model);
}

static bool same_shape(const gp_node *na, const npod *a, const gp_node *nb, const npod *b)
{
    if (a->nholds != b->nholds)
        return false;
    for (int k = 0; k < a->nholds; k++)
        if (a->holds[k].mem_mib != b->holds[k].mem_mib || a->holds[k].core != b->holds[k].core)
            return false;
    int pa = gp_node_gpu_pos(na, a->holds[0].index), pb = gp_node_gpu_pos(nb, b->holds[0].index);
    return (pa >= 0 ? na->gpus[pa].info.model : 0) == (pb >= 0 ? nb->gpus[pb].info.model : 0);
}

/* The request of x's replacement, x on node i: one per distinct shape (a
 * request is 3 KiB, and the pods of a set share theirs). */
static int req_of(cworld *w, int i, const npod *x)
{
    uint64_t key = shape_key(w->nodes[i], x);
    for (int k = 0; k < w->nreqs; k++)
        if (w->req_keys[k] == key &&
            same_shape(w->nodes[w->req_node[k]], w->req_from[k], w->nodes[i], x))
            return k;
    if (w->nreqs == w->capreqs) {
        w->capreqs = w->capreqs ? 2 * w->capreqs : 8;
        w->reqs = xrealloc(w->reqs, (size_t)w->capreqs * sizeof *w->reqs);
        w->req_keys = xrealloc(w->req_keys, (size_t)w->capreqs * sizeof *w->req_keys);
        w->req_from = xrealloc(w->req_from, (size_t)w->capreqs * sizeof *w->req_from);
        w->req_node = xrealloc(w->req_node, (size_t)w->capreqs * sizeof *w->req_node);
    }
    consolidate_req_from_holds(w->nodes[i], x->holds, x->nholds, &w->reqs[w->nreqs]);
    w->req_keys[w->nreqs] = key;
    w->req_from[w->nreqs] = x;
    w->req_node[w->nreqs] = i;
    return w->nreqs++;
}

/* Copies the nodes and the pods that may move, and picks the movers among
 * them (policies, cool-downs, budgets, PDBs). Only those pods are copied: a
 * filter of a pod that fits nowhere runs this, and copying every pod of a
 * full cluster was most of its time (300 nodes, 3,200 pods: 7.7 MB per
 * call). The pods go into one block for the whole world (2.4 KB each: a few MB for a
 * few hundred nodes), not an array per node: the block is mapped for itself
 * and handed back whole when the plan ends, where hundreds of per-node arrays
 * of tens of KB came from the leader's heap and left it fragmented after
 * each round (docs/reliability.md, the leader's level under slow answers). */
static void cworld_build(gp_preempt *p, const gp_pod_req *req, const gp_policy_view *view,
                         gp_policy_set *set, const char *const *nodes, const bool *unresolvable,
                         size_t n, cworld *w)
{
    size_t cap = n < CONSOL_NODES_MAX ? n : CONSOL_NODES_MAX;
    w->nodes = xcalloc(cap ? cap : 1, sizeof *w->nodes);
    w->target_ok = xcalloc(cap ? cap : 1, sizeof *w->target_ok);
    w->pods = xcalloc(cap ? cap : 1, sizeof *w->pods);
    gp_node *scratch = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
    cluster_rdlock(p->c);
    for (size_t i = 0; i < n && w->nn < cap; i++) {
        const gp_node *v = cluster_rd_node_for(p->c, nodes[i], req, scratch);
        if (!v)
            continue;
        w->nodes[w->nn] = xmalloc(gp_node_size(v->ngpus));
        memcpy(w->nodes[w->nn], v, gp_node_size(v->ngpus));
        w->target_ok[w->nn] = !(unresolvable && unresolvable[i]);
        int before = w->all.n;
        movable_collect mc = {p, req, &w->all};
        cluster_rd_node_pods(p->c, nodes[i], collect_movable, &mc);
        w->pods[w->nn].n = w->pods[w->nn].cap = w->all.n - before;
        w->nn++;
    }
    cluster_unlock(p->c);
    free(scratch);
    int off = 0;   /* all.v has stopped moving: each node's window follows the one before */
    for (size_t i = 0; i < w->nn; off += w->pods[i++].n)
        w->pods[i].v = w->all.v ? w->all.v + off : NULL;
    /* every pod copied may move, as far as the store and its owner tell */
    size_t total = w->all.n ? (size_t)w->all.n : 1;
    w->movers = xcalloc(total, sizeof *w->movers);
    w->mpod = xcalloc(total, sizeof *w->mpod);
    w->groups = xcalloc(total, sizeof *w->groups);
    w->group_left = xcalloc(total, sizeof *w->group_left);
    int *mreq = xmalloc(total * sizeof *mreq), *mview = xmalloc(total * sizeof *mview);
    double now = pre_now_s();
    size_t npdb = strmap_count(p->pdbs);
    gp_pdb **pdbs = xmalloc((npdb ? npdb : 1) * sizeof *pdbs);
    size_t it = 0, k = 0;
    gp_pdb *b;
    while ((b = strmap_next(p->pdbs, &it, NULL)) && k < npdb)
        pdbs[k++] = b;
    gp_pdb_pod *pp = xmalloc(total * sizeof *pp);
    bool *viol = xmalloc(total * sizeof *viol);
    for (size_t i = 0; i < w->nn; i++) {
        int first = w->nm;
        for (int j = 0; j < w->pods[i].n; j++) {
            const npod *x = &w->pods[i].v[j];
            const pmeta *m = may_move(p, req, x);
            if (!m)
                continue;
            int vk = view_of(w, set, view, x->policy);
            const gp_policy_view *mv = &w->views[vk];
            if (mv->preempt.protect || !mv->consol.movable ||
                ledger_cooling(p->ledger, m->owner.uid, mv->consol.cooldown_s, now))
                continue;
            int g = group_of(w, x->ns, ledger_left(p->ledger, x->ns, mv->consol.max_per_hour, now));
            mreq[w->nm] = req_of(w, (int)i, x);
            mview[w->nm] = vk;
            w->movers[w->nm] = (gp_mover){(int)i, m->priority, false, g, x->nholds, x->holds,
                                          x->cpu, x->mem, NULL, NULL};
            pp[w->nm] = (gp_pdb_pod){x->ns, x->name, m->labels ? m->labels : ""};
            w->mpod[w->nm++] = x;
        }
        if (npdb && w->nm > first) {   /* PDBs counted first: per node, as kube-scheduler does */
            pdb_violations((gp_pdb *const *)pdbs, npdb, pp + first, (size_t)(w->nm - first),
                           viol + first);
            for (int j = first; j < w->nm; j++)
                w->movers[j].pdb_violating = viol[j];
        }
    }
    /* reqs and views have stopped moving */
    for (int j = 0; j < w->nm; j++) {
        w->movers[j].req = &w->reqs[mreq[j]];
        w->movers[j].opts = &w->views[mview[j]].place;
    }
    free(mreq);
    free(mview);
    free(viol);
    free(pp);
    free(pdbs);
}

/* A place for the replacement of pod ns/moved of controller owner (not in p->held yet). */
static held *held_new(gp_preempt *p, const char *owner, const char *ns, const char *moved)
{
    held *h = xcalloc(1, sizeof *h);
    snprintf(h->key, sizeof h->key, "held-%lu", ++p->held_seq);
    gp_strlcpy(h->owner, owner, sizeof h->owner);
    gp_strlcpy(h->ns, ns, sizeof h->ns);
    gp_strlcpy(h->moved, moved, sizeof h->moved);
    return h;
}

/* The store's claim of place h: share a on its node, for the controller's
 * replacement only (host requests cpu, mem). 0, or -1 with a reason. */
static int claim_place(gp_preempt *p, const held *h, int64_t cpu, int64_t mem, const gp_assignment *a,
                       gp_err *err)
{
    gp_claim *cl = xcalloc(1, sizeof *cl);
    gp_strlcpy(cl->uid, h->key, sizeof cl->uid);
    gp_strlcpy(cl->ns, h->ns, sizeof cl->ns);
    gp_strlcpy(cl->name, h->moved, sizeof cl->name);
    cl->priority = INT32_MAX;
    cl->cpu_milli = cpu;
    cl->mem_mib = mem;
    cl->a = *a;
    gp_strlcpy(cl->owner, h->owner, sizeof cl->owner);
    int rc = cluster_claim(p->c, cl, err);
    free(cl);
    return rc;
}

/* Holds the places the plan's moved pods' replacements go to, and fills the
 * victims. 0, or -1 when a place could not be held (none is then). */
static int hold_places(gp_preempt *p, const cworld *w, const gp_consol_plan *cp,
                       const gp_pod_req *req, const gp_policy_view *view, node_plan *np)
{
    double now = pre_now_s();
    np->v = xcalloc((size_t)cp->nmoves, sizeof *np->v);
    for (int i = 0; i < cp->nmoves; i++) {
        const gp_consol_move *mv = &cp->moves[i];
        const gp_mover *mo = &w->movers[mv->mover];
        const npod *x = w->mpod[mv->mover];
        const pmeta *m = strmap_get(p->meta, x->uid);
        pvictim *v = &np->v[np->nv];
        pre_fill_victim(v, x, m, true, mo->pdb_violating);
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        char gpus[96];
        pre_describe_holds(holds, gp_assignment_holds(&mv->a, holds), gpus, sizeof gpus);
        snprintf(v->to, sizeof v->to, "%s %s", mv->a.node, gpus);
        held *h = held_new(p, m->owner.uid, x->ns, x->name);
        snprintf(h->waiting, sizeof h->waiting, "%s/%s", req->ns, req->name);
        gp_strlcpy(h->where, v->to, sizeof h->where);
        int64_t grace = m->grace_s >= 0 ? m->grace_s : GRACE_DEFAULT_S;
        h->created = now;
        h->expires = now + p->cfg.wait_s + (double)grace + view->consol.hold_s;
        gp_err err;
        if (claim_place(p, h, x->cpu, x->mem, &mv->a, &err)) {
            LOG_WARN("consolidation for %s/%s not started: no place held for %s/%s: %s", req->ns,
                     req->name, x->ns, x->name, err.msg);
            free(h);
            for (int j = 0; j < np->nv; j++) {
                cluster_unclaim(p->c, np->v[j].held);
                free(strmap_del(p->held, np->v[j].held));
            }
            return -1;
        }
        gp_strlcpy(v->held, h->key, sizeof v->held);
        free(strmap_put(p->held, h->key, h));
        np->nv++;
    }
    return 0;
}

/* The record of the plan's held places (model/heldrec.h), which its
 * nomination writes on the waiting pod: a restart, or the standby taking the
 * lead, holds them again from it (pre_held_rebuild). */
static void record_places(gp_preempt *p, plan *pl)
{
    gp_held_rec r = {.at_ns = gp_now_ns()};
    double mono = pre_now_s();
    r.p = xcalloc((size_t)(pl->nv ? pl->nv : 1), sizeof *r.p);
    for (int i = 0; i < pl->nv; i++) {
        held *h = pl->v[i].held[0] ? strmap_get(p->held, pl->v[i].held) : NULL;
        gp_claim *cl = xmalloc(sizeof *cl);
        if (h && cluster_claim_get(p->c, h->key, cl) == 0) {
            gp_held_place *hp = &r.p[r.n++];
            gp_strlcpy(hp->owner, h->owner, sizeof hp->owner);
            gp_strlcpy(hp->ns, h->ns, sizeof hp->ns);
            gp_strlcpy(hp->pod, h->moved, sizeof hp->pod);
            gp_strlcpy(hp->node, cl->a.node, sizeof hp->node);
            hp->nholds = gp_assignment_holds(&cl->a, hp->holds);
            hp->cpu_milli = cl->cpu_milli;
            hp->mem_mib = cl->mem_mib;
            hp->expires_ns = r.at_ns + (int64_t)((h->expires - mono) * 1e9);
            gp_strlcpy(h->waiting_uid, pl->uid, sizeof h->waiting_uid);
            h->rec_at = r.at_ns;
        }
        free(cl);
    }
    for (int i = 0; i < pl->nv; i++) {
        held *h = pl->v[i].held[0] ? strmap_get(p->held, pl->v[i].held) : NULL;
        for (int k = 0; h && k < r.n; k++)
            h->owner_total += strcmp(r.p[k].owner, h->owner) == 0;
    }
    if (r.n > 0)
        pl->held_rec = heldrec_encode(&r);
    pmeta *m = strmap_get(p->meta, pl->uid);
    if (m)
        m->held_applied = r.at_ns;   /* its watch event shows what we hold already */
    heldrec_clear(&r);
}

/* Was a pod that started at start_ns made after the plan of record time
 * at_ns? creationTimestamp counts whole seconds: a pod made in the plan's
 * second reads as before it (its place stays held until it expires, or the
 * store drops it as this replica places the pod); one made earlier in that
 * second must not read as after it (the e2e scene on v1.26 made the set and
 * the plan within one second). */
static bool after_plan(int64_t start_ns, int64_t at_ns)
{
    return start_ns > at_ns;
}

/* Pods of controller owner bound that were made after the plan of at_ns. */
static int placed_since(gp_preempt *p, const char *owner, int64_t at_ns)
{
    int n = 0;
    size_t it = 0;
    const pmeta *o;
    while ((o = strmap_next(p->meta, &it, NULL)))
        n += o->bound && strcmp(o->owner.uid, owner) == 0 && after_plan(o->start_ns, at_ns);
    return n;
}

void pre_held_rebuild(gp_preempt *p, const char *uid, pmeta *m)
{
    const gp_held_rec *r = m->held_rec;
    if (!r || m->held_applied == r->at_ns)
        return;
    m->held_applied = r->at_ns;
    int64_t now = gp_now_ns();
    double mono = pre_now_s();
    size_t it = 0;
    held *h;
    while ((h = strmap_next(p->held, &it, NULL)))
        if (h->rec_at == r->at_ns && strcmp(h->waiting_uid, uid) == 0)
            return;   /* held here already: this replica made the plan */
    int rebuilt = 0;
    for (int i = 0; i < r->n; i++) {
        const gp_held_place *hp = &r->p[i];
        if (hp->expires_ns <= now || (double)(hp->expires_ns - now) / 1e9 > HELD_REBUILD_MAX_S)
            continue;   /* over, or further off than any plan holds a place */
        /* the replacements placed since the plan have used their places: a
         * controller's first places in the record go to them */
        int before = 0, total = 0;
        for (int k = 0; k < r->n; k++) {
            before += k < i && strcmp(r->p[k].owner, hp->owner) == 0;
            total += strcmp(r->p[k].owner, hp->owner) == 0;
        }
        if (before < placed_since(p, hp->owner, r->at_ns))
            continue;
        held *nh = held_new(p, hp->owner, hp->ns, hp->pod);
        snprintf(nh->waiting, sizeof nh->waiting, "%s/%s", m->ns ? m->ns : "", m->name ? m->name : "");
        char gpus[96];
        pre_describe_holds(hp->holds, hp->nholds, gpus, sizeof gpus);
        snprintf(nh->where, sizeof nh->where, "%s %s", hp->node, gpus);
        nh->created = mono;
        nh->expires = mono + (double)(hp->expires_ns - now) / 1e9;
        gp_strlcpy(nh->waiting_uid, uid, sizeof nh->waiting_uid);
        nh->rec_at = r->at_ns;
        nh->rebuilt = true;
        nh->owner_total = total;
        gp_assignment *a = xmalloc(sizeof *a);
        heldrec_assignment(hp, a);
        gp_err err;
        int rc = claim_place(p, nh, hp->cpu_milli, hp->mem_mib, a, &err);
        free(a);
        if (rc != 0) {
            LOG_WARN("consolidation for %s: the place held on %s for the replacement of %s/%s "
                     "is not held again: %s", nh->waiting, nh->where, hp->ns, hp->pod, err.msg);
            free(nh);
        } else {
            free(strmap_put(p->held, nh->key, nh));
            rebuilt++;
        }
    }
    if (rebuilt) {
        atomic_fetch_add(&p->c_held_rebuilt, (unsigned long)rebuilt);
        LOG_INFO("consolidation for %s/%s: %d place%s held again for the replacements of the pods "
                 "moved for it (from its %s condition)", m->ns, m->name, rebuilt,
                 rebuilt == 1 ? "" : "s", GP_HELD_PLACES_CONDITION);
    }
}

/* filter's last resort for a pod that fits no node and that preemption does
 * not help: move a few pods of the same or lower priority whose controllers
 * recreate them (docs/consolidation.md). Returns the index of the node the
 * pod waits for, or -1. Called with p->mu held. */
long pre_try_consolidate(gp_preempt *p, const json_t *pod, const gp_pod_prio *pp, const gp_pod_req *req,
                         const gp_policy_view *view, gp_policy_set *set,
                         const char *const *nodes, const bool *unresolvable, size_t n,
                         char *reason, size_t len)
{
    if (!view->consol.enabled || req->dra)
        return -1;   /* a claim pod's devices are the allocator's to choose */
    if (pp->deletion_ns)
        return -1;
    cworld w = {0};
    cworld_build(p, req, view, set, nodes, unresolvable, n, &w);
    gp_consol_query q = {.nodes = (const gp_node *const *)w.nodes, .nnodes = (int)w.nn,
                         .target_ok = w.target_ok, .req = req, .opts = &view->place,
                         .movers = w.movers, .nmovers = w.nm, .max_moves = view->consol.max_moves,
                         .group_left = w.group_left, .ngroups = w.ng};
    gp_consol_plan *cp = xmalloc(sizeof *cp);
    long at = -1;
    if (consolidate_plan(&q, cp) == 0) {
        bool spent = false;
        for (int g = 0; g < w.ng; g++)
            spent = spent || w.group_left[g] == 0;
        q.group_left = NULL;
        if (spent && consolidate_plan(&q, cp) == 1) {
            atomic_fetch_add(&p->c_budget, 1);
            snprintf(reason, len, "moving %d pod%s would make room, but the hourly move budget "
                     "(maxMovesPerHour) of their namespace is spent", cp->nmoves,
                     cp->nmoves == 1 ? "" : "s");
            at = pre_index_of(nodes, n, w.nodes[cp->node]->name);   /* the reason shows there */
        } else {
            atomic_fetch_add(&p->c_no_plan, 1);
        }
        goto out;
    }
    node_plan np;
    memset(&np, 0, sizeof np);
    gp_strlcpy(np.node, w.nodes[cp->node]->name, sizeof np.node);
    np.a = cp->a;
    np.consol = true;
    np.pdb_violations = cp->pdb_violations;
    if (hold_places(p, &w, cp, req, view, &np) != 0) {
        pre_node_plan_clear(&np);
        goto out;
    }
    gp_err err;
    plan *pl = pre_commit(p, pod, req, &np, NULL, 0, NULL, &err);
    if (!pl) {
        LOG_WARN("consolidation for %s/%s not started: %s", req->ns, req->name, err.msg);
        for (int j = 0; j < np.nv; j++) {
            cluster_unclaim(p->c, np.v[j].held);
            free(strmap_del(p->held, np.v[j].held));
        }
        pre_node_plan_clear(&np);
        goto out;
    }
    pre_node_plan_clear(&np);
    record_places(p, pl);
    double now = pre_now_s();
    for (int i = 0; i < cp->nmoves; i++) {
        const pmeta *m = strmap_get(p->meta, w.mpod[cp->moves[i].mover]->uid);
        ledger_record(p->ledger, w.mpod[cp->moves[i].mover]->ns, m ? m->owner.uid : "", now);
    }
    char list[600];
    pre_list_victims(p, pl, false, list, sizeof list);
    snprintf(reason, len, "moving %d pod%s to free %s for this pod: %s", pl->nv,
             pl->nv == 1 ? "" : "s", pl->frees, list);
    at = pre_index_of(nodes, n, pl->node);
out:
    free(cp);
    cworld_free(&w);
    return at;
}

/* A recorded plan's places of one controller go as its pods are bound: at
 * most (the record's places for it) - (its pods bound since the plan) stay
 * held. This replica's own binds drop them in the store already
 * (cluster_place_and_assume); this catches the binds another replica made --
 * held here from the record, or made here before the lead moved. p->mu held. */
static void held_placed_elsewhere(gp_preempt *p)
{
    size_t n = strmap_count(p->held), nh = 0, it = 0;
    held **v = xmalloc((n + 1) * sizeof *v), *h;
    while ((h = strmap_next(p->held, &it, NULL)))
        if (h->rec_at && cluster_claim_get(p->c, h->key, NULL) == 0)
            v[nh++] = h;
    for (size_t i = 0; i < nh; i++) {
        if (!v[i])
            continue;   /* its group was done */
        const held *g = v[i];   /* the group: one record, one controller */
        int64_t at = g->rec_at;
        char owner[GP_UID_MAX], waiting[GP_UID_MAX];
        gp_strlcpy(owner, g->owner, sizeof owner);
        gp_strlcpy(waiting, g->waiting_uid, sizeof waiting);
        int live = 0, keep = g->owner_total - placed_since(p, owner, at);
        for (size_t k = i; k < nh; k++) {
            h = v[k];
            if (!h || h->rec_at != at || strcmp(h->owner, owner) != 0 || strcmp(h->waiting_uid, waiting) != 0)
                continue;
            if (++live > (keep > 0 ? keep : 0)) {
                atomic_fetch_add(&p->c_held_used, 1);
                LOG_INFO("consolidation: a replacement of %s/%s (moved for %s) is bound; the place "
                         "held on %s is released", h->ns, h->moved, h->waiting, h->where);
                cluster_unclaim(p->c, h->key);
                free(strmap_del(p->held, h->key));
            }
            v[k] = NULL;
        }
    }
    free(v);
}

/* The places held for replacements: used (a pod of the controller was
 * placed, the store dropped the claim) or expired. p->mu held. */
void pre_held_round(gp_preempt *p)
{
    if (!strmap_count(p->held))
        goto prune;
    double now = pre_now_s();
    size_t n = 0, it = 0;
    char (*done)[GP_UID_MAX] = xmalloc((strmap_count(p->held) + 1) * sizeof *done);
    held *h;
    held_placed_elsewhere(p);
    while ((h = strmap_next(p->held, &it, NULL))) {
        if (cluster_claim_get(p->c, h->key, NULL) != 0) {
            atomic_fetch_add(&p->c_held_used, 1);
            LOG_INFO("consolidation: the replacement of %s/%s (moved for %s) is placed; the "
                     "place held on %s is released", h->ns, h->moved, h->waiting, h->where);
        } else if (now > h->expires) {
            atomic_fetch_add(&p->c_held_expired, 1);
            LOG_WARN("consolidation: no replacement of %s/%s (moved for %s) came within %.0f s; "
                     "the place held on %s is released", h->ns, h->moved, h->waiting,
                     h->expires - h->created, h->where);
            cluster_unclaim(p->c, h->key);
        } else {
            continue;
        }
        gp_strlcpy(done[n++], h->key, GP_UID_MAX);
    }
    for (size_t i = 0; i < n; i++)   /* not during the walk */
        free(strmap_del(p->held, done[i]));
    free(done);
prune:
    if (pre_now_s() - p->ledger_pruned > 60) {
        ledger_prune(p->ledger, pre_now_s(), LEDGER_KEEP_S);
        p->ledger_pruned = pre_now_s();
    }
}


/* A PodDisruptionBudget refused to move a pod: the plan ends (the pods
 * moved so far keep their held places) and the pod's controller rests for
 * its cool-down, so that filter's next plan moves others. */
void pre_consol_blocked(gp_preempt *p, plan *pl, const pvictim *v)
{
    held *h = v->held[0] ? strmap_get(p->held, v->held) : NULL;
    if (h)
        ledger_record(p->ledger, NULL, h->owner, pre_now_s());
    char msg[600];
    snprintf(msg, sizeof msg, "a PodDisruptionBudget refused to move pod %.100s/%.100s; the plan "
             "is dropped and the next one leaves that pod's controller alone", v->ns, v->name);
    if (p->cfg.io.event)
        p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, true, "ConsolidationBlocked", msg);
    LOG_WARN("consolidation for %s/%s: %s", pl->ns, pl->name, msg);
    cluster_unclaim(p->c, pl->uid);
    pre_finish(p, pl, &p->replanned, "a PodDisruptionBudget refused an eviction");
}
