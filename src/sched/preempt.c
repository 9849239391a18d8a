/* preempt.c -- priorities for shared GPUs: plans, claims, evictions, the pod and PDB feeds. */
#include "sched/preempt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/reflector.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/strmap.h"
#include "model/k8s_obs.h"
#include "model/pdb.h"
#include "model/podprio.h"
#include "pack/consolidate.h"
#include "pack/frag.h"
#include "pack/moveledger.h"
#include "pack/victims.h"

#define WAIT_DEFAULT_S 60.0        /* a claim outlives its victims' grace period by this */
#define GRACE_DEFAULT_S 30         /* a victim whose grace period is unknown (Kubernetes' default) */
#define TICK_DEFAULT_S 0.2
#define BUDGET_DEFAULT 2048        /* feasibility checks per node */
#define ALTS_MAX 8                 /* other nodes kept to try after a 429 */
#define BLOCKED_MAX 32             /* victims a PDB refused, per preemptor */
#define CANDIDATES_MIN 100         /* kube-scheduler's minCandidateNodesAbsolute ... */
#define CANDIDATES_PCT 10          /* ... and minCandidateNodesPercentage */
#define BACKOFF_MAX_S 10.0
#define MSG_MAX 1024               /* an Event message (the API server's limit) */

/* ------------------------------------------------------------ state -- */

/* What the pod watch said about one pod. */
typedef struct pmeta {
    char *ns, *name;
    char *labels;                 /* compact (podprio.h), owned */
    size_t labels_len;
    int32_t priority;
    int64_t start_ns, deletion_ns, grace_s;   /* as gp_pod_prio */
    gp_pod_owner owner;           /* its controller: consolidation moves only what one recreates */
    char *nominated;              /* status.nominatedNodeName; NULL = none */
    bool bound;
    json_t *pending;              /* trimmed pod: pending with a nominated node (rebuilds) */
    /* trimmed pod: pending with ResourceClaims, and kube-scheduler found no
     * node (PodScheduled False). Its DRA plugin rejects such a pod before any
     * extender is asked, so gpupack's filter never sees it: the worker plans
     * its preemption from here (dra_parked_round) */
    json_t *dra_parked;
    double dra_tried;             /* monotonic time of the last attempt */
    double dra_wait;              /* seconds until the next one: doubles while nothing comes
                                   * of them (DRA_RETRY_S .. DRA_RETRY_MAX_S) */
} pmeta;

enum { V_TODO, V_EVICTED, V_GONE };

/* A pod a plan evicts (ours) or waits for (terminating already). */
typedef struct pvictim {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    int32_t priority;
    bool covered;                 /* selected by a PodDisruptionBudget: evicted first */
    bool ours;                    /* we evict it; else it was terminating already */
    int state;
    char frees[96];               /* "GPU 1 (8192 MiB)" */
    char to[GP_NAME_MAX + 96];    /* consolidation: where its replacement's place is held */
    char held[GP_UID_MAX];        /* ... the key of that place ("" = none) */
} pvictim;

enum { S_NOMINATE, S_EVICT, S_WAIT };
static const char *const stage_names[] = {"nominating", "evicting", "waiting"};

typedef struct plan {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    int32_t priority;
    char node[GP_NAME_MAX];
    char frees[160];              /* what the preemptor gets: "GPU 1 (16384 MiB)" */
    int nv;
    pvictim *v;
    int stage;
    double created, deadline, retry_at;
    int failures;
    json_t *pod;                  /* trimmed: planning again after a 429 */
    int nalts;
    char alts[ALTS_MAX][GP_NAME_MAX];
    int nblocked;
    char blocked[BLOCKED_MAX][GP_UID_MAX];
    bool warned_nominate;
    bool nudged;                  /* the pod was told its victims are gone */
    bool consol;                  /* consolidation: the victims move (held places), not preempted */
} plan;

/* A place held for the replacement of a moved pod (consolidation): a claim
 * with the controller as its owner. */
typedef struct held {
    char key[GP_UID_MAX];         /* the claim's uid: "held-" + a counter */
    char owner[GP_UID_MAX];
    char ns[GP_NAME_MAX], moved[GP_NAME_MAX];   /* the moved pod */
    char waiting[2 * GP_NAME_MAX];              /* ns/name of the pod it was moved for */
    char where[GP_NAME_MAX + 96];               /* node and GPUs */
    double created, expires;
} held;

struct gp_preempt {
    gp_cluster *c;
    gp_preempt_config cfg;
    _Atomic(gp_extender *) e;
    pthread_mutex_t mu;           /* meta, plans, pdbs */
    strmap *meta;                 /* uid -> pmeta */
    strmap *plans;                /* preemptor uid -> plan */
    strmap *pdbs;                 /* PDB uid (or ns/name) -> gp_pdb */
    unsigned pdb_gen;
    strmap *pdb_seen;             /* keys seen since the last resync began */
    bool synced;                  /* a first pod LIST was applied */
    gp_reflector *pdb_refl;
    pthread_t th;
    bool started, stop;
    pthread_cond_t cv;
    atomic_ulong started_n, waits, victims, bound, deleted, expired, replanned, failed;
    atomic_ulong evict_blocked, evict_retry, evict_refused;
    /* consolidation */
    gp_ledger *ledger;            /* recent moves: per-namespace budget, controllers' cool-down */
    strmap *held;                 /* claim key -> held */
    unsigned long held_seq;
    double ledger_pruned;
    atomic_ulong c_started, c_moved, c_bound, c_expired, c_blocked, c_failed, c_deleted;
    atomic_ulong c_no_plan, c_budget, c_held_used, c_held_expired;
};

static double now_s(void)
{
    return gp_mono_s();
}

static void meta_free(pmeta *m)
{
    if (!m)
        return;
    free(m->ns);
    free(m->name);
    free(m->labels);
    free(m->nominated);
    json_decref(m->pending);
    json_decref(m->dra_parked);
    free(m);
}

static void plan_free(plan *pl)
{
    if (!pl)
        return;
    free(pl->v);
    json_decref(pl->pod);
    free(pl);
}

gp_preempt *preempt_new(gp_cluster *c, const gp_preempt_config *cfg)
{
    gp_preempt *p = xcalloc(1, sizeof *p);
    p->c = c;
    if (cfg)
        p->cfg = *cfg;
    if (p->cfg.wait_s <= 0)
        p->cfg.wait_s = WAIT_DEFAULT_S;
    if (p->cfg.tick_s <= 0)
        p->cfg.tick_s = TICK_DEFAULT_S;
    if (p->cfg.search_budget <= 0)
        p->cfg.search_budget = BUDGET_DEFAULT;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->meta = strmap_new();
    p->plans = strmap_new();
    p->pdbs = strmap_new();
    p->pdb_seen = strmap_new();
    p->ledger = ledger_new();
    p->held = strmap_new();
    return p;
}

void preempt_stop(gp_preempt *p)
{
    if (!p)
        return;
    reflector_free(p->pdb_refl);
    p->pdb_refl = NULL;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
        p->started = false;
    }
}

void preempt_free(gp_preempt *p)
{
    if (!p)
        return;
    preempt_stop(p);
    size_t it = 0;
    void *v;
    while ((v = strmap_next(p->meta, &it, NULL)))
        meta_free(v);
    it = 0;
    while ((v = strmap_next(p->plans, &it, NULL)))
        plan_free(v);
    it = 0;
    while ((v = strmap_next(p->pdbs, &it, NULL)))
        pdb_free(v);
    it = 0;
    while ((v = strmap_next(p->held, &it, NULL)))
        free(v);
    strmap_free(p->held);
    ledger_free(p->ledger);
    strmap_free(p->meta);
    strmap_free(p->plans);
    strmap_free(p->pdbs);
    strmap_free(p->pdb_seen);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* ------------------------------------------------------------ text -- */

/* "GPU 1 (16384 MiB)", "GPUs 0, 1 (16384 MiB each)" ... what holds amount to. */
static void describe_holds(const gp_hold *h, int nh, char *out, size_t len)
{
    size_t off = (size_t)snprintf(out, len, "GPU%s ", nh == 1 ? "" : "s");
    for (int i = 0; i < nh && off < len; i++)
        off += h[i].core ? (size_t)snprintf(out + off, len - off, "%s%d (%lld MiB, %d %%)",
                                            i ? ", " : "", h[i].index, (long long)h[i].mem_mib,
                                            h[i].core / 10)
                         : (size_t)snprintf(out + off, len - off, "%s%d (%lld MiB)", i ? ", " : "",
                                            h[i].index, (long long)h[i].mem_mib);
    if (nh == 0)
        snprintf(out, len, "host CPU and memory");
}

/* "ns/a, ns/b" of the victims matching `ours` that are still around (store):
 * the pod, or a ResourceClaim still allocated for it on the plan's node (the
 * share comes back only once the claim is deleted or deallocated). */
static size_t list_victims(gp_preempt *p, const plan *pl, bool only_present, char *out, size_t len)
{
    size_t off = 0, n = 0;
    out[0] = '\0';
    for (int i = 0; i < pl->nv; i++) {
        gp_assignment *a = xmalloc(sizeof *a);
        bool present = cluster_pod_get(p->c, pl->v[i].uid, a, NULL) == 0 ||
                       cluster_dra_holds_pod(p->c, pl->node, pl->v[i].uid);
        free(a);
        if (only_present && !present)
            continue;
        n++;
        if (off < len)
            off += (size_t)snprintf(out + off, len - off, "%s%s/%s", off ? ", " : "", pl->v[i].ns,
                                    pl->v[i].name);
    }
    return n;
}

/* ------------------------------------------------------------ the pod feed -- */

static const char *uid_of(const json_t *pod)
{
    const char *u = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
    return u && *u && strlen(u) < GP_UID_MAX ? u : NULL;
}

static void release_unmoved(gp_preempt *p, plan *pl);

static void finish(gp_preempt *p, plan *pl, atomic_ulong *outcome, const char *why)
{
    if (pl->consol) {   /* the same ends, counted apart */
        outcome = outcome == &p->bound     ? &p->c_bound
                  : outcome == &p->expired ? &p->c_expired
                  : outcome == &p->failed  ? &p->c_failed
                  : outcome == &p->deleted ? &p->c_deleted
                  : outcome == &p->replanned ? &p->c_blocked
                                           : outcome;
    }
    if (pl->consol)
        release_unmoved(p, pl);
    if (outcome)
        atomic_fetch_add(outcome, 1);
    LOG_INFO("%s for %s/%s on %s ends: %s", pl->consol ? "consolidation" : "preemption", pl->ns,
             pl->name, pl->node, why);
    strmap_del(p->plans, pl->uid);
    plan_free(pl);
}

static void rebuild_one(gp_preempt *p, const char *uid, pmeta *m);

/* kube-scheduler tried the pod and found no node: PodScheduled False. */
static bool pod_parked(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && strcmp(t, "PodScheduled") == 0)
            return strcmp(st, "False") == 0;
    }
    return false;
}

void preempt_pod_event(gp_preempt *p, bool deleted, const json_t *pod)
{
    const char *uid = uid_of(pod);
    if (!uid)
        return;
    const json_t *md = json_object_get(pod, "metadata");
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    bool terminal = deleted || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, uid);
    if (terminal) {
        meta_free(strmap_del(p->meta, uid));
        if (pl)
            finish(p, pl, &p->deleted, "the pod is gone");
        if (strmap_count(p->plans))
            pthread_cond_signal(&p->cv);   /* a victim may be gone: its preemptor's nudge */
        goto out;
    }
    pmeta *m = strmap_get(p->meta, uid);
    if (!m) {
        m = xcalloc(1, sizeof *m);
        strmap_put(p->meta, uid, m);
    }
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!m->ns || strcmp(m->ns, ns ? ns : "default") != 0) {
        free(m->ns);
        m->ns = xstrdup(ns ? ns : "default");
    }
    if (!m->name || (name && strcmp(m->name, name) != 0)) {
        free(m->name);
        m->name = xstrdup(name ? name : "?");
    }
    char labels[GP_LABELS_MAX];
    (void)podprio_labels(pod, labels, sizeof labels);
    size_t ll = 0;
    while (labels[ll])   /* compact: pairs of NUL-terminated strings, then one NUL */
        ll += strlen(labels + ll) + 1, ll += strlen(labels + ll) + 1;
    ll++;
    if (!m->labels || m->labels_len != ll || memcmp(m->labels, labels, ll) != 0) {
        free(m->labels);
        m->labels = xmalloc(ll);
        memcpy(m->labels, labels, ll);
        m->labels_len = ll;
    }
    gp_pod_prio *pp = xmalloc(sizeof *pp);
    podprio_decode(pod, pp);
    m->priority = pp->priority;
    m->start_ns = pp->start_ns;
    m->deletion_ns = pp->deletion_ns;
    m->grace_s = pp->grace_s;
    m->owner = pp->owner;
    bool renominated = pp->nominated[0] && (!m->nominated || strcmp(m->nominated, pp->nominated) != 0);
    free(m->nominated);
    m->nominated = pp->nominated[0] ? xstrdup(pp->nominated) : NULL;
    free(pp);
    m->bound = node && *node;
    json_decref(m->pending);
    m->pending = NULL;
    const json_t *claims = json_object_get(json_object_get(pod, "spec"), "resourceClaims");
    bool parked = !m->bound && !m->deletion_ns && json_array_size(claims) > 0 && pod_parked(pod);
    json_decref(m->dra_parked);
    m->dra_parked = parked ? k8s_obs_trim_pod(pod) : NULL;
    if (!parked)
        m->dra_wait = 0;   /* the next parking starts the retries afresh */
    if (m->bound) {
        if (pl)
            finish(p, pl, &p->bound, "the pod is bound");
    } else if (m->nominated && !m->deletion_ns) {
        m->pending = k8s_obs_trim_pod(pod);
        /* nominated by kube-scheduler's own preemption, or by us before a restart */
        if (p->synced && !pl && renominated)
            rebuild_one(p, uid, m);
    }
out:
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------ PDB feed -- */

static void pdb_key(const json_t *obj, char *key, size_t len)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    snprintf(key, len, "%.250s/%.250s", ns ? ns : "", name ? name : "");
}

void preempt_pdb_event(gp_preempt *p, bool deleted, const json_t *obj)
{
    char key[512];
    pdb_key(obj, key, sizeof key);
    gp_err err;
    gp_pdb *b = deleted ? NULL : pdb_decode(obj, &err);
    if (!deleted && !b) {
        LOG_WARN("PodDisruptionBudget %s: %s", key, err.msg);
        return;
    }
    pthread_mutex_lock(&p->mu);
    pdb_free(strmap_del(p->pdbs, key));
    if (b)
        strmap_put(p->pdbs, key, b);
    strmap_put(p->pdb_seen, key, p);
    pthread_mutex_unlock(&p->mu);
}

/* The PodDisruptionBudget LIST begins (end false) or ends: budgets it did not
 * show are dropped. */
static void preempt_pdbs_resync(gp_preempt *p, bool end)
{
    pthread_mutex_lock(&p->mu);
    if (!end) {
        strmap_free(p->pdb_seen);
        p->pdb_seen = strmap_new();
    } else {
        for (;;) {   /* budgets the LIST did not show are gone */
            char gone[512] = "";
            size_t it = 0;
            const char *k;
            while (strmap_next(p->pdbs, &it, &k))
                if (!strmap_get(p->pdb_seen, k)) {
                    gp_strlcpy(gone, k, sizeof gone);
                    break;
                }
            if (!gone[0])
                break;
            pdb_free(strmap_del(p->pdbs, gone));
        }
    }
    pthread_mutex_unlock(&p->mu);
}

static void pdb_begin(void *ud)
{
    preempt_pdbs_resync(ud, false);
}

static void pdb_end(void *ud)
{
    preempt_pdbs_resync(ud, true);
}

static void pdb_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    preempt_pdb_event(ud, type == GP_WATCH_DELETED, obj);
}

static const gp_reflector_ops pdb_ops = {pdb_begin, pdb_end, pdb_apply, NULL};

/* ------------------------------------------------------------ planning -- */

/* One pod on a node, copied out of the store. */
typedef struct npod {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX], policy[GP_NAME_MAX];
    gp_pod_state state;
    int nholds;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int64_t cpu, mem;
} npod;

typedef struct npods {
    npod *v;
    int n, cap;
} npods;

static void collect(void *ud, const gp_pod_on_node *p)
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
    x->nholds = p->nholds;
    memcpy(x->holds, p->holds, (size_t)p->nholds * sizeof *p->holds);
    x->cpu = p->cpu_milli;
    x->mem = p->mem_mib;
}

/* The best plan on one node. */
typedef struct node_plan {
    char node[GP_NAME_MAX];
    gp_victims_result res;
    gp_victim_rank rank;
    gp_assignment a;
    int nv;                       /* victims we evict (forced ones first) */
    int nwait;                    /* terminating pods it counts on */
    pvictim *v;                   /* nv + nwait entries, owned */
    int pdb_violations;           /* among the victims we add */
    bool consol;                  /* the victims move (consolidation) */
} node_plan;

static void node_plan_clear(node_plan *np)
{
    free(np->v);
    memset(np, 0, sizeof *np);
}

/* What to plan: the preemptor and how. */
typedef struct plan_query {
    const gp_pod_req *req;
    const gp_policy_view *view;
    gp_policy_set *set;
    bool may_evict;               /* choose victims (else only wait for terminating pods) */
    bool fits_ok;                 /* a node where it fits now counts (rebuilds after a restart) */
    const char *nominated;        /* its status.nominatedNodeName: the one node where it may
                                   * hold share while only waiting for terminating pods */
    const char *const *forced;    /* uids evicted in any case (kube-scheduler's proposal) */
    int nforced;
    const plan *old;              /* blocked victims to leave alone; may be NULL */
} plan_query;

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

static bool is_forced(const plan_query *q, const char *uid)
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

static void fill_victim(pvictim *pv, const npod *x, const pmeta *m, bool ours, bool covered)
{
    memset(pv, 0, sizeof *pv);
    gp_strlcpy(pv->uid, x->uid, sizeof pv->uid);
    gp_strlcpy(pv->ns, x->ns, sizeof pv->ns);
    gp_strlcpy(pv->name, x->name, sizeof pv->name);
    pv->priority = m ? m->priority : 0;
    pv->ours = ours;
    pv->covered = covered;
    describe_holds(x->holds, x->nholds, pv->frees, sizeof pv->frees);
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

/* Copies the node and its pods out of the store. false: unknown node. */
static bool snapshot(gp_preempt *p, const plan_query *q, const char *node, node_work *w)
{
    gp_node *scratch = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
    cluster_rdlock(p->c);
    const gp_node *view = cluster_rd_node_for(p->c, node, q->req, scratch);
    if (view) {
        w->n = xmalloc(gp_node_size(view->ngpus));
        memcpy(w->n, view, gp_node_size(view->ngpus));
        cluster_rd_node_pods(p->c, node, collect, &w->pods);
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
        if (is_forced(q, x->uid)) {   /* kube-scheduler evicts it anyway */
            drop_pod(w->n, x);
            fill_victim(&np->v[np->nv++], x, m, true, false);
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
                fill_victim(&w->waits[w->nwait++], x, m, false, false);
            }
            continue;
        }
        bool same_ns = x->ns[0] && strcmp(x->ns, q->req->ns) == 0;
        for (int h = 0; same_ns && h < x->nholds; h++) {
            int pos = gp_node_gpu_pos(w->n, x->holds[h].index);
            if (pos >= 0)
                w->ns_pods[pos]++;
        }
        if (!q->may_evict || !m || !m->bound || x->state != GP_POD_BOUND ||
            m->priority >= q->req->priority || protected_by_policy(q->set, x->policy) ||
            is_blocked(q->old, x->uid))
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
        fill_victim(&np->v[np->nv++], x, m, true, covered);
        np->pdb_violations += w->cands[vp->victims[i]].pdb_violating;
    }
    memcpy(np->v + np->nv, w->waits, (size_t)w->nwait * sizeof *w->waits);
    np->nwait = w->nwait;
}

/* Plans on one node: 0 with np filled when a plan exists, -1 otherwise.
 * Called with p->mu held; takes the store's read lock itself. */
static int plan_node(gp_preempt *p, const plan_query *q, const char *node, node_plan *np)
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
        node_plan_clear(np);
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
static int plan_nodes(gp_preempt *p, const plan_query *q, const char *const *nodes, const bool *skip,
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
        if (plan_node(p, q, nodes[i], &np) < 0)
            continue;
        r[found++] = (ranked){np.rank, i};
        if (found == 1 || victims_rank_cmp(&np.rank, &best->rank) < 0) {
            node_plan_clear(best);
            *best = np;
        } else {
            node_plan_clear(&np);
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
static const char *not_eligible(const gp_pod_prio *pp, const gp_policy_view *view, char *buf,
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
static plan *commit(gp_preempt *p, const json_t *pod, const gp_pod_req *req, node_plan *np,
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
    describe_holds(holds, gp_assignment_holds(&np->a, holds), pl->frees, sizeof pl->frees);
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
    pl->created = now_s();
    pl->deadline = pl->created + (double)grace + p->cfg.wait_s;
    pl->stage = S_NOMINATE;
    pl->pod = k8s_obs_trim_pod(pod);
    for (int i = 0; i < nalts; i++)
        gp_strlcpy(pl->alts[pl->nalts++], alts[i], GP_NAME_MAX);
    if (old) {
        pl->nblocked = old->nblocked;
        memcpy(pl->blocked, old->blocked, sizeof pl->blocked);
    }
    plan_free(strmap_put(p->plans, pl->uid, pl));
    if (np->nv > 0) {
        atomic_fetch_add(pl->consol ? &p->c_started : &p->started_n, 1);
        char list[600];
        list_victims(p, pl, false, list, sizeof list);
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
static bool waiting(gp_preempt *p, const plan *pl)
{
    if (pl->stage != S_WAIT)
        return true;
    char list[8];
    return list_victims(p, pl, true, list, sizeof list) > 0;
}

/* The claim is gone (bound, assumed, deleted) or the deadline passed. */
static bool plan_over(gp_preempt *p, plan *pl)
{
    gp_claim *cl = xmalloc(sizeof *cl);
    bool gone = cluster_claim_get(p->c, pl->uid, cl) != 0;
    free(cl);
    if (gone) {
        /* bind took the share over (the pod is assumed or bound), or the node went */
        gp_assignment *a = xmalloc(sizeof *a);
        bool placed = cluster_pod_get(p->c, pl->uid, a, NULL) == 0;
        free(a);
        finish(p, pl, placed ? &p->bound : NULL,
               placed ? "the pod is being bound" : "its reservation was released");
        return true;
    }
    if (now_s() > pl->deadline) {
        char list[600];
        size_t left = list_victims(p, pl, true, list, sizeof list);
        char msg[900];
        snprintf(msg, sizeof msg, "%.160s on %.100s not freed within %.0f s (%zu pod%s still there%s%.500s); "
                 "the reservation is released",
                 pl->frees, pl->node, pl->deadline - pl->created, left, left == 1 ? "" : "s",
                 left ? ": " : "", list);
        LOG_WARN("preemption for %s/%s: %s", pl->ns, pl->name, msg);
        if (p->cfg.io.event)
            p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, true, "PreemptionTimedOut", msg);
        cluster_unclaim(p->c, pl->uid);
        finish(p, pl, &p->expired, "deadline passed");
        return true;
    }
    return false;
}

static long index_of(const char *const *nodes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i], name) == 0)
            return (long)i;
    return -1;
}

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
static void release_unmoved(gp_preempt *p, plan *pl)
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
    npods *pods;                  /* per node */
    int nm;
    gp_mover *movers;             /* node by node */
    gp_pod_req *reqs;             /* the movers' replacements */
    gp_policy_view *views;        /* the movers' policies */
    const npod **mpod;            /* mover -> its pod */
    int ng;
    const char **groups;          /* budget groups: namespaces */
    int *group_left;
} cworld;

static void cworld_free(cworld *w)
{
    for (size_t i = 0; i < w->nn; i++) {
        free(w->nodes[i]);
        free(w->pods[i].v);
    }
    free(w->nodes);
    free(w->target_ok);
    free(w->pods);
    free(w->movers);
    free(w->reqs);
    free(w->views);
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

/* Copies the nodes and their pods, and picks the pods that may move. */
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
        cluster_rd_node_pods(p->c, nodes[i], collect, &w->pods[w->nn]);
        w->nn++;
    }
    cluster_unlock(p->c);
    free(scratch);
    size_t total = 0;
    for (size_t i = 0; i < w->nn; i++)
        total += (size_t)w->pods[i].n;
    total = total ? total : 1;
    w->movers = xcalloc(total, sizeof *w->movers);
    w->reqs = xmalloc(total * sizeof *w->reqs);
    w->views = xmalloc(total * sizeof *w->views);
    w->mpod = xcalloc(total, sizeof *w->mpod);
    w->groups = xcalloc(total, sizeof *w->groups);
    w->group_left = xcalloc(total, sizeof *w->group_left);
    double now = now_s();
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
            const pmeta *m = strmap_get(p->meta, x->uid);
            if (!m || !m->bound || x->state != GP_POD_BOUND || m->deletion_ns ||
                m->priority > req->priority || !movable_kind(m->owner.kind) || x->nholds == 0 ||
                strcmp(x->uid, req->uid) == 0)
                continue;
            bool dra = false;
            for (int h = 0; h < x->nholds; h++)
                dra = dra || x->holds[h].dra;
            if (dra)   /* a claim's share: the allocator, not a controller, decides where it goes */
                continue;
            gp_policy_view *mv = &w->views[w->nm];
            gp_err err;
            if ((!x->policy[0] || policy_view_by_name(set, x->policy, mv, &err) != 0) &&
                policy_view_by_name(set, "default", mv, &err) != 0)
                *mv = *view;
            if (mv->preempt.protect || !mv->consol.movable ||
                ledger_cooling(p->ledger, m->owner.uid, mv->consol.cooldown_s, now))
                continue;
            int g = group_of(w, x->ns, ledger_left(p->ledger, x->ns, mv->consol.max_per_hour, now));
            consolidate_req_from_holds(w->nodes[i], x->holds, x->nholds, &w->reqs[w->nm]);
            w->movers[w->nm] = (gp_mover){(int)i, m->priority, false, g, x->nholds, x->holds,
                                          x->cpu, x->mem, &w->reqs[w->nm], &mv->place};
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
    free(viol);
    free(pp);
    free(pdbs);
}

/* Holds the places the plan's moved pods' replacements go to, and fills the
 * victims. 0, or -1 when a place could not be held (none is then). */
static int hold_places(gp_preempt *p, const cworld *w, const gp_consol_plan *cp,
                       const gp_pod_req *req, const gp_policy_view *view, node_plan *np)
{
    double now = now_s();
    np->v = xcalloc((size_t)cp->nmoves, sizeof *np->v);
    for (int i = 0; i < cp->nmoves; i++) {
        const gp_consol_move *mv = &cp->moves[i];
        const gp_mover *mo = &w->movers[mv->mover];
        const npod *x = w->mpod[mv->mover];
        const pmeta *m = strmap_get(p->meta, x->uid);
        pvictim *v = &np->v[np->nv];
        fill_victim(v, x, m, true, mo->pdb_violating);
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        char gpus[96];
        describe_holds(holds, gp_assignment_holds(&mv->a, holds), gpus, sizeof gpus);
        snprintf(v->to, sizeof v->to, "%s %s", mv->a.node, gpus);
        held *h = xcalloc(1, sizeof *h);
        snprintf(h->key, sizeof h->key, "held-%lu", ++p->held_seq);
        gp_strlcpy(h->owner, m->owner.uid, sizeof h->owner);
        gp_strlcpy(h->ns, x->ns, sizeof h->ns);
        gp_strlcpy(h->moved, x->name, sizeof h->moved);
        snprintf(h->waiting, sizeof h->waiting, "%s/%s", req->ns, req->name);
        gp_strlcpy(h->where, v->to, sizeof h->where);
        int64_t grace = m->grace_s >= 0 ? m->grace_s : GRACE_DEFAULT_S;
        h->created = now;
        h->expires = now + p->cfg.wait_s + (double)grace + view->consol.hold_s;
        gp_claim *cl = xcalloc(1, sizeof *cl);
        gp_strlcpy(cl->uid, h->key, sizeof cl->uid);
        gp_strlcpy(cl->ns, x->ns, sizeof cl->ns);
        gp_strlcpy(cl->name, x->name, sizeof cl->name);
        cl->priority = INT32_MAX;
        cl->cpu_milli = x->cpu;
        cl->mem_mib = x->mem;
        cl->a = mv->a;
        gp_strlcpy(cl->owner, h->owner, sizeof cl->owner);
        gp_err err;
        int rc = cluster_claim(p->c, cl, &err);
        free(cl);
        if (rc) {
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

/* filter's last resort for a pod that fits no node and that preemption does
 * not help: move a few pods of the same or lower priority whose controllers
 * recreate them (docs/consolidation.md). Returns the index of the node the
 * pod waits for, or -1. Called with p->mu held. */
static long try_consolidate(gp_preempt *p, const json_t *pod, const gp_pod_req *req,
                            const gp_policy_view *view, gp_policy_set *set,
                            const char *const *nodes, const bool *unresolvable, size_t n,
                            char *reason, size_t len)
{
    if (!view->consol.enabled || req->dra)
        return -1;   /* a claim pod's devices are the allocator's to choose */
    gp_pod_prio pp;
    podprio_decode(pod, &pp);
    if (pp.deletion_ns)
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
            at = index_of(nodes, n, w.nodes[cp->node]->name);   /* the reason shows there */
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
        node_plan_clear(&np);
        goto out;
    }
    gp_err err;
    plan *pl = commit(p, pod, req, &np, NULL, 0, NULL, &err);
    if (!pl) {
        LOG_WARN("consolidation for %s/%s not started: %s", req->ns, req->name, err.msg);
        for (int j = 0; j < np.nv; j++) {
            cluster_unclaim(p->c, np.v[j].held);
            free(strmap_del(p->held, np.v[j].held));
        }
        node_plan_clear(&np);
        goto out;
    }
    node_plan_clear(&np);
    double now = now_s();
    for (int i = 0; i < cp->nmoves; i++) {
        const pmeta *m = strmap_get(p->meta, w.mpod[cp->moves[i].mover]->uid);
        ledger_record(p->ledger, w.mpod[cp->moves[i].mover]->ns, m ? m->owner.uid : "", now);
    }
    char list[600];
    list_victims(p, pl, false, list, sizeof list);
    snprintf(reason, len, "moving %d pod%s to free %s for this pod: %s", pl->nv,
             pl->nv == 1 ? "" : "s", pl->frees, list);
    at = index_of(nodes, n, pl->node);
out:
    free(cp);
    cworld_free(&w);
    return at;
}

/* The places held for replacements: used (a pod of the controller was
 * placed, the store dropped the claim) or expired. p->mu held. */
static void held_round(gp_preempt *p)
{
    double now = now_s();
    for (;;) {   /* deleting during a walk: restart after each */
        size_t it = 0;
        held *h;
        bool gone = false;
        gp_claim *cl = xmalloc(sizeof *cl);
        while ((h = strmap_next(p->held, &it, NULL))) {
            if (cluster_claim_get(p->c, h->key, cl) != 0) {
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
            free(strmap_del(p->held, h->key));
            gone = true;
            break;
        }
        free(cl);
        if (!gone)
            break;
    }
    if (now - p->ledger_pruned > 60) {
        ledger_prune(p->ledger, now, LEDGER_KEEP_S);
        p->ledger_pruned = now;
    }
}


/* filter's hook: no node fits a pod that asks GPUs. */
static long on_nofit(void *ud, const json_t *pod, const gp_pod_req *req, const gp_policy_view *view,
                     gp_policy_set *set, const char *const *nodes, const bool *unresolvable,
                     size_t n, char *reason, size_t len)
{
    gp_preempt *p = ud;
    gp_pod_prio pp;
    podprio_decode(pod, &pp);
    long at = -1;
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, req->uid);
    if (pl && !plan_over(p, pl)) {
        if (waiting(p, pl)) {
            char list[600];
            size_t left = list_victims(p, pl, true, list, sizeof list);
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
            at = index_of(nodes, n, pl->node);
            goto out;
        }
        /* its victims are gone and it still fits nowhere: the plan did not hold */
        cluster_unclaim(p->c, pl->uid);
        finish(p, pl, &p->replanned, "its victims are gone but the pod still does not fit");
    }
    char why[200];
    if (not_eligible(&pp, view, why, sizeof why))
        goto consolidate;
    plan_query q = {req, view, set, true, false, pp.nominated[0] ? pp.nominated : NULL, NULL, 0, NULL};
    node_plan best;
    char alts[ALTS_MAX][GP_NAME_MAX];
    int nalts;
    if (plan_nodes(p, &q, nodes, unresolvable, n, &best, alts, &nalts) == 0)
        goto consolidate;
    gp_err err;
    pl = commit(p, pod, req, &best, alts, nalts, NULL, &err);
    node_plan_clear(&best);
    if (!pl) {
        LOG_WARN("preemption for %s/%s not started: %s", req->ns, req->name, err.msg);
        goto out;
    }
    char list[600];
    int ours = 0;
    for (int i = 0; i < pl->nv; i++)
        ours += pl->v[i].ours;
    list_victims(p, pl, false, list, sizeof list);
    if (ours)
        snprintf(reason, len, "preempting %d lower-priority pod%s to free %s for this pod: %s", ours,
                 ours == 1 ? "" : "s", pl->frees, list);
    else
        snprintf(reason, len, "waiting for %d pod%s to terminate, %s held for this pod: %s", pl->nv,
                 pl->nv == 1 ? "" : "s", pl->frees, list);
    at = index_of(nodes, n, pl->node);
    goto out;
consolidate:   /* preemption does not apply: moving pods may */
    at = try_consolidate(p, pod, req, view, set, nodes, unresolvable, n, reason, len);
out:
    pthread_mutex_unlock(&p->mu);
    return at;
}

/* After a restart (or kube-scheduler's own preemption): a pending pod
 * nominated on a node gets a claim there when the node has room for it once
 * its terminating pods are gone. No eviction: filter plans those. */
static void rebuild_one(gp_preempt *p, const char *uid, pmeta *m)
{
    gp_extender *e = atomic_load(&p->e);
    if (!e || !m->pending || strmap_get(p->plans, uid))
        return;
    gp_policy_set *set = extender_policies(e);
    gp_pod_req *req = xmalloc(sizeof *req);
    gp_policy_view view;
    gp_err err;
    if (extender_pod_request(e, m->pending, set, req, &view, &err) == 0 && req->nctrs > 0) {
        plan_query q = {req, &view, set, false, true, NULL, NULL, 0, NULL};
        node_plan np;
        const char *node = m->nominated;
        if (plan_node(p, &q, node, &np) == 0) {
            if (!commit(p, m->pending, req, &np, NULL, 0, NULL, &err))
                LOG_WARN("pod %s/%s nominated on %s: no reservation: %s", m->ns, m->name, node,
                         err.msg);
            node_plan_clear(&np);
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
            rebuild_one(p, uid, m);
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------ the worker -- */

/* What one round does for one plan, copied out so the API calls run unlocked. */
typedef struct job {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX], node[GP_NAME_MAX];
    char frees[160];
    int stage;
    int nv;
    pvictim *v;
    int *results;                 /* per victim: gp_evict_outcome, or -1 not tried */
    int nominated;                /* evictor_nominate's answer */
    bool nudge;                   /* the victims are gone: make kube-scheduler retry the pod */
    bool consol;                  /* the victims move (consolidation) */
    int nudged;                   /* the nudge's answer */
    gp_err err;
} job;

static void run_job(gp_preempt *p, job *j)
{
    const gp_preempt_io *io = &p->cfg.io;
    if (j->nudge) {
        j->nudged = io->nudge ? io->nudge(io->ud, j->ns, j->name, j->uid, &j->err) : 0;
        return;
    }
    if (j->stage == S_NOMINATE) {
        j->nominated = io->nominate ? io->nominate(io->ud, j->ns, j->name, j->uid, j->node, &j->err) : 0;
        if (j->nominated != 0 && j->nominated != 2)
            return;
        j->stage = S_EVICT;
    }
    for (int i = 0; i < j->nv; i++)
        j->results[i] = -1;
    for (int i = 0; i < j->nv; i++) {
        if (!j->v[i].ours || j->v[i].state != V_TODO)
            continue;
        gp_evict_outcome o = io->evict ? io->evict(io->ud, j->v[i].ns, j->v[i].name, j->v[i].uid, &j->err)
                                       : GP_EVICT_DONE;
        j->results[i] = (int)o;
        if (o == GP_EVICT_DONE || o == GP_EVICT_GONE) {
            char msg[800];
            if (j->consol)
                snprintf(msg, sizeof msg, "moved by gpupack: evicted to free %.95s on %.100s for "
                         "pod %.100s/%.100s, which fits nowhere else; a place is held for the "
                         "replacement on %.200s", j->v[i].frees, j->node, j->ns, j->name,
                         j->v[i].to);
            else
                snprintf(msg, sizeof msg, "preempted by %.100s/%.100s to free %.95s on %.100s", j->ns,
                         j->name, j->v[i].frees, j->node);
            if (io->event)
                io->event(io->ud, j->v[i].ns, j->v[i].name, j->v[i].uid, false,
                          j->consol ? "MovedForConsolidation" : "Preempted", msg);
            continue;
        }
        break;   /* blocked, retry or refused: the rest waits */
    }
}

static void backoff(gp_preempt *p, plan *pl)
{
    double d = 0.5;
    for (int i = 0; i < pl->failures && d < BACKOFF_MAX_S; i++)
        d *= 2;
    pl->failures++;
    pl->retry_at = now_s() + (d < BACKOFF_MAX_S ? d : BACKOFF_MAX_S);
}

/* A PodDisruptionBudget refused an eviction: plan again without that pod, on
 * the nodes that had plans. */
static void replan(gp_preempt *p, plan *pl, const char *blocked_uid)
{
    gp_extender *e = atomic_load(&p->e);
    if (pl->nblocked < BLOCKED_MAX)
        gp_strlcpy(pl->blocked[pl->nblocked++], blocked_uid, GP_UID_MAX);
    cluster_unclaim(p->c, pl->uid);
    plan *old = pl;
    strmap_del(p->plans, old->uid);
    atomic_fetch_add(&p->replanned, 1);
    bool placed = false;
    if (e && old->pod) {
        gp_policy_set *set = extender_policies(e);
        gp_pod_req *req = xmalloc(sizeof *req);
        gp_policy_view view;
        gp_err err;
        if (extender_pod_request(e, old->pod, set, req, &view, &err) == 0) {
            const char *nodes[ALTS_MAX + 1];
            size_t n = 0;
            nodes[n++] = old->node;   /* the same node without the blocked pod first */
            for (int i = 0; i < old->nalts; i++)
                nodes[n++] = old->alts[i];
            plan_query q = {req, &view, set, true, false, NULL, NULL, 0, old};
            node_plan best;
            char alts[ALTS_MAX][GP_NAME_MAX];
            int nalts;
            if (plan_nodes(p, &q, nodes, NULL, n, &best, alts, &nalts) > 0) {
                placed = commit(p, old->pod, req, &best, alts, nalts, old, &err) != NULL;
                node_plan_clear(&best);
            }
        }
        free(req);
        policy_set_unref(set);
    }
    if (!placed) {
        char msg[600];
        snprintf(msg, sizeof msg, "a PodDisruptionBudget refused to evict pod %s and no other plan "
                 "frees %s; kube-scheduler will try again", blocked_uid, old->frees);
        if (p->cfg.io.event)
            p->cfg.io.event(p->cfg.io.ud, old->ns, old->name, old->uid, true, "PreemptionBlocked", msg);
        LOG_WARN("preemption for %s/%s: %s", old->ns, old->name, msg);
    }
    plan_free(old);
}

/* A PodDisruptionBudget refused to move a pod: the plan ends (the pods
 * moved so far keep their held places) and the pod's controller rests for
 * its cool-down, so that filter's next plan moves others. */
static void consol_blocked(gp_preempt *p, plan *pl, const pvictim *v)
{
    held *h = v->held[0] ? strmap_get(p->held, v->held) : NULL;
    if (h)
        ledger_record(p->ledger, NULL, h->owner, now_s());
    char msg[600];
    snprintf(msg, sizeof msg, "a PodDisruptionBudget refused to move pod %.100s/%.100s; the plan "
             "is dropped and the next one leaves that pod's controller alone", v->ns, v->name);
    if (p->cfg.io.event)
        p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, true, "ConsolidationBlocked", msg);
    LOG_WARN("consolidation for %s/%s: %s", pl->ns, pl->name, msg);
    cluster_unclaim(p->c, pl->uid);
    finish(p, pl, &p->replanned, "a PodDisruptionBudget refused an eviction");
}

/* Records what a job did (p->mu held). */
static void apply_job(gp_preempt *p, const job *j)
{
    plan *pl = strmap_get(p->plans, j->uid);
    if (!pl)
        return;
    if (j->nudge) {
        if (j->nudged < 0) {
            LOG_WARN("preemption for %s/%s: %s (retrying)", pl->ns, pl->name, j->err.msg);
            backoff(p, pl);
        } else if (j->nudged == 2) {
            pl->nudged = true;
            LOG_WARN("preemption for %s/%s: %s; kube-scheduler retries the pod on its next event "
                     "(grant pods patch: manifests/components/requeue-rbac)", pl->ns, pl->name,
                     j->err.msg);
        } else {
            pl->nudged = true;
            LOG_INFO("preemption for %s/%s: the share on %s is free; kube-scheduler retries the pod",
                     pl->ns, pl->name, pl->node);
        }
        return;
    }
    if (j->stage == S_NOMINATE) {
        if (j->nominated == 1) {
            cluster_unclaim(p->c, pl->uid);
            finish(p, pl, &p->deleted, "the preemptor is gone");
        } else {
            LOG_WARN("preemption for %s/%s: %s (retrying)", pl->ns, pl->name, j->err.msg);
            backoff(p, pl);
        }
        return;
    }
    if (j->nominated == 2 && !pl->warned_nominate) {
        pl->warned_nominate = true;
        LOG_WARN("preemption for %s/%s goes on without a nominated node: %s", pl->ns, pl->name,
                 j->err.msg);
    }
    pl->stage = S_EVICT;
    bool all = true;
    for (int i = 0; i < pl->nv && i < j->nv; i++) {
        pvictim *v = &pl->v[i];
        int r = j->results[i];
        if (r == GP_EVICT_DONE || r == GP_EVICT_GONE) {
            v->state = r == GP_EVICT_DONE ? V_EVICTED : V_GONE;
            atomic_fetch_add(pl->consol ? &p->c_moved : &p->victims, 1);
            LOG_INFO("%s for %s/%s: evicted %s/%s (%s on %s)",
                     pl->consol ? "consolidation" : "preemption", pl->ns, pl->name, v->ns,
                     v->name, v->frees, pl->node);
        } else if (r == GP_EVICT_BLOCKED) {
            atomic_fetch_add(&p->evict_blocked, 1);
            LOG_WARN("%s for %s/%s: %s", pl->consol ? "consolidation" : "preemption", pl->ns,
                     pl->name, j->err.msg);
            if (pl->consol)
                consol_blocked(p, pl, v);
            else
                replan(p, pl, v->uid);
            return;
        } else if (r == GP_EVICT_RETRY) {
            atomic_fetch_add(&p->evict_retry, 1);
            LOG_WARN("preemption for %s/%s: %s (retrying)", pl->ns, pl->name, j->err.msg);
            backoff(p, pl);
            return;
        } else if (r == GP_EVICT_REFUSED) {
            atomic_fetch_add(&p->evict_refused, 1);
            char msg[700];
            snprintf(msg, sizeof msg, "cannot evict %.100s/%.100s: %.450s", v->ns, v->name, j->err.msg);
            LOG_ERROR("preemption for %s/%s: %s", pl->ns, pl->name, msg);
            if (p->cfg.io.event)
                p->cfg.io.event(p->cfg.io.ud, pl->ns, pl->name, pl->uid, true, "PreemptionFailed", msg);
            cluster_unclaim(p->c, pl->uid);
            finish(p, pl, &p->failed, "an eviction was refused");
            return;
        }
        if (v->ours && v->state == V_TODO)
            all = false;
    }
    if (all) {
        pl->stage = S_WAIT;
        pl->failures = 0;
    }
}

/* Pods with ResourceClaims that kube-scheduler parked: its DRA plugin
 * answers "cannot allocate all claims" before any extender is asked, and
 * tells its own preemption that nothing helps. For each (at most every
 * DRA_RETRY_S), when the claims fit no node as gpupack predicts the
 * allocator, plan a preemption over every node it knows, as filter would. */
#define DRA_RETRY_S 2.0
#define DRA_RETRY_MAX_S 60.0
#define DRA_ROUND_MAX 16
static void dra_parked_round(gp_preempt *p)
{
    gp_extender *e = atomic_load(&p->e);
    if (!e)
        return;
    json_t *pods[DRA_ROUND_MAX];
    int n = 0;
    double now = now_s();
    pthread_mutex_lock(&p->mu);
    size_t it = 0;
    const char *uid;
    pmeta *m;
    while (n < DRA_ROUND_MAX && (m = strmap_next(p->meta, &it, &uid)))
        if (m->dra_parked && !strmap_get(p->plans, uid) &&
            now - m->dra_tried >= (m->dra_wait > 0 ? m->dra_wait : DRA_RETRY_S)) {
            /* a pod no preemption helps is asked again less and less often */
            m->dra_tried = now;
            m->dra_wait = m->dra_wait > 0 ? m->dra_wait * 2 : DRA_RETRY_S;
            if (m->dra_wait > DRA_RETRY_MAX_S)
                m->dra_wait = DRA_RETRY_MAX_S;
            pods[n++] = json_incref(m->dra_parked);
        }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++) {
        gp_policy_set *set = extender_policies(e);
        gp_pod_req *req = xmalloc(sizeof *req);
        gp_policy_view view;
        gp_err err;
        if (extender_pod_request(e, pods[i], set, req, &view, &err) == 0 && req->dra &&
            req->nctrs > 0) {
            /* every node the store knows: preemption's own candidate limit applies */
            size_t nn = 0, cap = 64;
            char (*names)[GP_NAME_MAX] = xmalloc(cap * sizeof *names);
            bool fits = false;
            gp_node *scratch = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
            cluster_rdlock(p->c);
            size_t ni = 0;
            const gp_node *node;
            while ((node = cluster_rd_node_at(p->c, &ni))) {
                bool dra = false;
                for (int g = 0; g < node->ngpus && !dra; g++)
                    dra = node->gpus[g].dra.order > 0;
                if (!dra)
                    continue;   /* no device DRA publishes: nothing to free there */
                const gp_node *v = cluster_rd_node_for(p->c, node->name, req, scratch);
                gp_assignment *a = xmalloc(sizeof *a);
                fits = fits || placement_fit(v, req, &view.place, a, NULL) == 0;
                free(a);
                if (nn == cap)
                    names = xrealloc(names, (cap *= 2) * sizeof *names);
                gp_strlcpy(names[nn++], node->name, GP_NAME_MAX);
            }
            cluster_unlock(p->c);
            free(scratch);
            if (!fits) {   /* fits somewhere: kube-scheduler's next try places it */
                const char **list = xmalloc((nn ? nn : 1) * sizeof *list);
                for (size_t k = 0; k < nn; k++)
                    list[k] = names[k];
                char reason[300] = "";
                (void)on_nofit(p, pods[i], req, &view, set, list, NULL, nn, reason, sizeof reason);
                if (reason[0])
                    LOG_INFO("pod %s/%s (ResourceClaims, parked by kube-scheduler): %s", req->ns,
                             req->name, reason);
                free(list);
            }
            free(names);
        }
        free(req);
        policy_set_unref(set);
        json_decref(pods[i]);
    }
}

void preempt_tick(gp_preempt *p)
{
    dra_parked_round(p);
    pthread_mutex_lock(&p->mu);
    held_round(p);
    size_t cap = strmap_count(p->plans), nj = 0;
    job *jobs = xcalloc(cap ? cap : 1, sizeof *jobs);
    for (;;) {   /* plans that are over leave the map: restart the walk after each */
        bool changed = false;
        size_t it = 0;
        plan *pl;
        while ((pl = strmap_next(p->plans, &it, NULL)))
            if (plan_over(p, pl)) {
                changed = true;
                break;
            }
        if (!changed)
            break;
    }
    size_t it = 0;
    plan *pl;
    double now = now_s();
    while ((pl = strmap_next(p->plans, &it, NULL)) && nj < cap) {
        if (now < pl->retry_at)
            continue;
        bool nudge = pl->stage == S_WAIT && !pl->nudged && !waiting(p, pl);
        if (pl->stage == S_WAIT && !nudge)
            continue;
        job *j = &jobs[nj++];
        j->nudge = nudge;
        j->consol = pl->consol;
        gp_strlcpy(j->uid, pl->uid, sizeof j->uid);
        gp_strlcpy(j->ns, pl->ns, sizeof j->ns);
        gp_strlcpy(j->name, pl->name, sizeof j->name);
        gp_strlcpy(j->node, pl->node, sizeof j->node);
        gp_strlcpy(j->frees, pl->frees, sizeof j->frees);
        j->stage = pl->stage;
        j->nv = pl->nv;
        j->v = xmalloc((size_t)(j->nv ? j->nv : 1) * sizeof *j->v);
        memcpy(j->v, pl->v, (size_t)j->nv * sizeof *j->v);
        j->results = xmalloc((size_t)(j->nv ? j->nv : 1) * sizeof *j->results);
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < nj; i++)
        run_job(p, &jobs[i]);
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < nj; i++) {
        apply_job(p, &jobs[i]);
        free(jobs[i].v);
        free(jobs[i].results);
    }
    pthread_mutex_unlock(&p->mu);
    free(jobs);
}

static void *worker(void *arg)
{
    gp_preempt *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = ts.tv_sec + ts.tv_nsec / 1e9 + p->cfg.tick_s;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        if (p->stop)
            break;
        pthread_mutex_unlock(&p->mu);
        preempt_tick(p);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int preempt_start(gp_preempt *p, gp_extender *e, gp_kube *k, bool run_worker, gp_err *err)
{
    atomic_store(&p->e, e);
    if (k) {
        gp_reflector_config rc = {.resource = "poddisruptionbudgets",
                                  .path = "/apis/policy/v1/poddisruptionbudgets",
                                  .watch_timeout_s = 60, .stall_s = 90};
        p->pdb_refl = reflector_new(k, &rc, &pdb_ops, p);
        if (reflector_start(p->pdb_refl, err) < 0)
            return -1;
    }
    if (run_worker) {
        int rc = pthread_create(&p->th, NULL, worker, p);
        if (rc != 0)
            return gp_fail(err, "cannot start the preemption thread: %s", strerror(rc));
        p->started = true;
    }
    return 0;
}

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
    if (extender_pod_request(e, pod, set, req, &view, &err) || req->nctrs == 0) {
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
                const json_t *u = form ? json_object_get(json_object_get(x, "metadata"), "uid")
                                       : json_object_get(x, "UID");
                if (json_is_string(u))
                    pr->uids[pr->n++] = json_string_value(u);
            }
        }
    }
    gp_pod_prio pp;
    podprio_decode(pod, &pp);
    char why[200];
    bool may_evict = !not_eligible(&pp, &view, why, sizeof why);
    json_t *res = json_object();
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, req->uid);
    if (pl && plan_over(p, pl))
        pl = NULL;
    for (size_t i = 0; i < np; i++) {
        proposal *pr = &props[i];
        if (pl && strcmp(pr->node, pl->node) != 0)
            continue;   /* our preemption is under way elsewhere: no second one */
        plan_query q = {req, &view, set, may_evict && !pl, true, NULL, pr->uids, pr->n, NULL};
        node_plan npl;
        if (plan_node(p, &q, pr->node, &npl) < 0)
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
            if (!is_forced(&q, npl.v[k].uid))
                all[nv++] = npl.v[k];
        qsort(all, (size_t)nv, sizeof *all, cmp_prio_desc);   /* Pods[0]: highest priority */
        json_t *arr = json_array();
        for (int k = 0; k < nv; k++)
            json_array_append_new(arr, json_pack("{s:s}", "UID", all[k].uid));
        free(all);
        json_object_set_new(res, pr->node, json_pack("{s:o,s:I}", "Pods", arr, "NumPDBViolations",
                                                     (json_int_t)(pr->pdb + npl.pdb_violations)));
        node_plan_clear(&npl);
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
    return (gp_preempt_hooks){p, on_nofit, on_process, on_status};
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
    const char *uid = uid_of(pod);
    if (!e)
        return json_pack("{s:s,s:s}", "state", "none", "message", "preemption is not running");
    gp_policy_set *set = extender_policies(e);
    gp_pod_req *req = xmalloc(sizeof *req);
    gp_policy_view view;
    gp_err err;
    json_t *out = NULL;
    if (extender_pod_request(e, pod, set, req, &view, &err) || req->nctrs == 0) {
        out = json_pack("{s:s,s:s}", "state", "none", "message",
                        "the pod asks no GPUs: kube-scheduler's own preemption applies");
        goto done;
    }
    gp_pod_prio pp;
    podprio_decode(pod, &pp);
    pthread_mutex_lock(&p->mu);
    plan *pl = uid ? strmap_get(p->plans, uid) : NULL;
    if (pl) {
        char list[600], msg[1400];
        size_t left = list_victims(p, pl, true, list, sizeof list);
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
                        "expiresInSeconds", (int)(pl->deadline - now_s()));
        pthread_mutex_unlock(&p->mu);
        goto done;
    }
    char why[200];
    const char *ne = not_eligible(&pp, &view, why, sizeof why);
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
    plan_query q = {req, &view, set, true, false, pp.nominated[0] ? pp.nominated : NULL, NULL, 0, NULL};
    node_plan best;
    if (plan_nodes(p, &q, ptrs, NULL, nn, &best, NULL, NULL) == 0) {
        out = json_pack("{s:s,s:s}", "state", "cannot", "message",
                        "no set of lower-priority pods (unprotected, of priority below this pod's) "
                        "frees what this pod needs on any node");
    } else {
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        char frees[160], msg[300];
        describe_holds(holds, gp_assignment_holds(&best.a, holds), frees, sizeof frees);
        snprintf(msg, sizeof msg, "would %s %d pod%s on %.100s to free %.150s",
                 best.nv ? "preempt" : "wait for", best.nv ? best.nv : best.nwait,
                 (best.nv ? best.nv : best.nwait) == 1 ? "" : "s", best.node, frees);
        out = json_pack("{s:s,s:s,s:s,s:s,s:o}", "state", "would-preempt", "message", msg, "node",
                        best.node, "frees", frees, "victims",
                        victims_json(p, best.v, best.nv + best.nwait));
        node_plan_clear(&best);
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
    double now = now_s();
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
                              json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "movedPod", id, "controllerUID",
                                        h->owner, "for", h->waiting, "place", h->where,
                                        "ageSeconds", (int)(now - h->created), "expiresInSeconds",
                                        (int)(h->expires - now)));
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
    pthread_mutex_lock(&p->mu);
    s->active = strmap_count(p->plans);
    s->c_held = strmap_count(p->held);
    s->c_last_hour = ledger_last_hour(p->ledger, now_s());
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
}
