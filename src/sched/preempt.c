/* preempt.c -- priorities for shared GPUs: the state, the pod and PDB feeds, the worker that
 * nominates, evicts and nudges (preempt_int.h lists the other files). */
#include "sched/preempt_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double pre_now_s(void)
{
    return gp_mono_s();
}

/* Drops a pod's record of held places (heldrec.h). */
static void held_rec_drop(pmeta *m)
{
    if (m->held_rec)
        heldrec_clear(m->held_rec);
    free(m->held_rec);
    m->held_rec = NULL;
}

/* Drops m, the meta of pod uid (taken out of p->meta already). */
static void meta_free(gp_preempt *p, const char *uid, pmeta *m)
{
    if (!m)
        return;
    if (m->dra_parked)
        strmap_del(p->parked, uid);
    free(m->ns);   /* one block with name and labels */
    free(m->nominated);
    json_decref(m->pending);
    json_decref(m->dra_parked);
    held_rec_drop(m);
    free(m);
}

void pre_plan_free(plan *pl)
{
    if (!pl)
        return;
    free(pl->v);
    json_decref(pl->pod);
    free(pl->held_rec);
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
    if (p->cfg.renudge_s <= 0)
        p->cfg.renudge_s = RENUDGE_DEFAULT_S;
    if (p->cfg.search_budget <= 0)
        p->cfg.search_budget = BUDGET_DEFAULT;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->meta = strmap_new();
    p->parked = strmap_new();
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
    const char *uid;
    while ((v = strmap_next(p->meta, &it, &uid)))
        meta_free(p, uid, v);
    it = 0;
    while ((v = strmap_next(p->plans, &it, NULL)))
        pre_plan_free(v);
    it = 0;
    while ((v = strmap_next(p->pdbs, &it, NULL)))
        pdb_free(v);
    it = 0;
    while ((v = strmap_next(p->held, &it, NULL)))
        free(v);
    strmap_free(p->held);
    ledger_free(p->ledger);
    strmap_free(p->meta);
    strmap_free(p->parked);
    strmap_free(p->plans);
    strmap_free(p->pdbs);
    strmap_free(p->pdb_seen);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* ------------------------------------------------------------ text -- */

/* "GPU 1 (16384 MiB)", "GPUs 0, 1 (16384 MiB each)" ... what holds amount to. */
void pre_describe_holds(const gp_hold *h, int nh, char *out, size_t len)
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
size_t pre_list_victims(gp_preempt *p, const plan *pl, bool only_present, char *out, size_t len)
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


void pre_finish(gp_preempt *p, plan *pl, atomic_ulong *outcome, const char *why)
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
        pre_release_unmoved(p, pl);
    /* whatever ended the plan, the GPU held for its pod is not held any more
     * (a no-op where the caller or the map dropped it already). A pod deleted
     * while no watch ran gets no DELETED that would drop it: before this, its
     * claim stayed after a relist ended the plan (the 90-minute soak) */
    cluster_unclaim(p->c, pl->uid);
    if (outcome)
        atomic_fetch_add(outcome, 1);
    LOG_INFO("%s for %s/%s on %s ends: %s", pl->consol ? "consolidation" : "preemption", pl->ns,
             pl->name, pl->node, why);
    strmap_del(p->plans, pl->uid);
    pre_plan_free(pl);
}


/* The pod's record of a consolidation's held places (model/heldrec.h): kept
 * while it has one, and held again here once the pods are listed (a restart,
 * the standby following the leader's plans). Locked. */
static void held_record(gp_preempt *p, const char *uid, pmeta *m, const json_t *pod)
{
    gp_held_rec r;
    gp_err err;
    int rc = heldrec_from_pod(pod, &r, &err);
    if (rc < 0)
        LOG_WARN("pod %s/%s: its %s condition is ignored: %s", m->ns, m->name, GP_HELD_PLACES_CONDITION,
                 err.msg);
    if (rc <= 0) {
        held_rec_drop(m);
        return;
    }
    if (m->held_rec && m->held_rec->at_ns == r.at_ns) {
        heldrec_clear(&r);
        return;
    }
    if (!m->held_rec)
        m->held_rec = xmalloc(sizeof *m->held_rec);
    else
        heldrec_clear(m->held_rec);
    *m->held_rec = r;
    if (p->synced)
        pre_held_rebuild(p, uid, m);
}

void preempt_pod_event(gp_preempt *p, bool deleted, const json_t *pod)
{
    gp_pod *pd = xmalloc(sizeof *pd);
    gp_err err;
    if (pod_decode(pod, pd, &err) < 0 && !pd->identified)
        LOG_DEBUG("preemption: pod %s: %s", pd->uid[0] ? pd->uid : "?", err.msg);
    preempt_pod_seen(p, deleted, pod, pd);
    free(pd);
}

void preempt_pod_seen(gp_preempt *p, bool deleted, const json_t *pod, const gp_pod *pd)
{
    const char *uid = pod_uid(pod);
    if (!uid)
        return;
    /* identified: a malformed annotation of gpupack's does not hide the pod's priority */
    bool decoded = pd->identified;
    bool terminal = deleted || (decoded && pd->finished);
    if (!terminal && !decoded)
        return;
    const char *node = pd->node;
    pthread_mutex_lock(&p->mu);
    plan *pl = strmap_get(p->plans, uid);
    if (terminal) {
        meta_free(p, uid, strmap_del(p->meta, uid));
        if (pl)
            pre_finish(p, pl, &p->deleted, "the pod is gone");
        if (strmap_count(p->plans))
            pthread_cond_signal(&p->cv);   /* a victim may be gone: its preemptor's nudge */
        goto out;
    }
    pmeta *m = strmap_get(p->meta, uid);
    if (!m) {
        m = xcalloc(1, sizeof *m);
        strmap_put(p->meta, uid, m);
    }
    m->list_gen = p->list_gen;
    char labels[GP_LABELS_MAX];
    (void)podprio_labels(pod, labels, sizeof labels);
    size_t ll = 0;
    while (labels[ll])   /* compact: pairs of NUL-terminated strings, then one NUL */
        ll += strlen(labels + ll) + 1, ll += strlen(labels + ll) + 1;
    ll++;
    /* namespace, name and labels in one allocation, not three (a pod's
     * malloc headers and roundings add up at 20,000 pods), rebuilt only when
     * one of them changed */
    const char *name = pd->name[0] ? pd->name : m->name ? m->name : "?";
    if (!m->ns || strcmp(m->ns, pd->ns) != 0 || strcmp(m->name, name) != 0 || m->labels_len != ll ||
        memcmp(m->labels, labels, ll) != 0) {
        size_t nsl = strlen(pd->ns) + 1, nl = strlen(name) + 1;
        char *blk = xmalloc(nsl + nl + ll);
        memcpy(blk, pd->ns, nsl);
        memcpy(blk + nsl, name, nl);   /* before the old block goes: name may be in it */
        memcpy(blk + nsl + nl, labels, ll);
        free(m->ns);
        m->ns = blk;
        m->name = blk + nsl;
        m->labels = blk + nsl + nl;
        m->labels_len = ll;
    }
    const gp_pod_prio *pp = &pd->prio;
    m->priority = pp->priority;
    m->start_ns = pp->start_ns;
    m->deletion_ns = pp->deletion_ns;
    m->grace_s = pp->grace_s;
    m->owner = pp->owner;
    bool renominated = pp->nominated[0] && (!m->nominated || strcmp(m->nominated, pp->nominated) != 0);
    free(m->nominated);
    m->nominated = pp->nominated[0] ? xstrdup(pp->nominated) : NULL;
    m->bound = node && *node;
    json_decref(m->pending);
    m->pending = NULL;
    bool parked = !m->bound && !m->deletion_ns && pd->nclaims > 0 && pd->sched_false;
    json_t *was = m->dra_parked;
    m->dra_parked = parked ? k8s_obs_trim_pod(pod) : NULL;
    if (m->dra_parked && !was)   /* the set holds exactly the metas with dra_parked */
        strmap_put(p->parked, uid, m);
    else if (!m->dra_parked && was)
        strmap_del(p->parked, uid);
    json_decref(was);
    if (!parked)
        m->dra_wait = 0;   /* the next parking starts the retries afresh */
    held_record(p, uid, m, pod);
    if (m->bound) {
        if (pl)
            pre_finish(p, pl, &p->bound, "the pod is bound");
    } else if (m->nominated && !m->deletion_ns) {
        m->pending = k8s_obs_trim_pod(pod);
        /* nominated by kube-scheduler's own preemption, or by us before a restart */
        if (p->synced && !pl && renominated)
            pre_rebuild_one(p, uid, m);
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

/* Pods the LIST that just ended did not show were deleted while no watch
 * ran (a relist after 410 Gone, an API-server restart): what is known of
 * them goes. Locked. */
static bool meta_unlisted(const char *uid, void *val, void *ud)
{
    gp_preempt *p = ud;
    pmeta *m = val;
    if (m->list_gen == p->list_gen)
        return false;
    meta_free(p, uid, m);
    return true;
}

void preempt_pods_listing(gp_preempt *p, bool end, double since)
{
    pthread_mutex_lock(&p->mu);
    if (!end) {
        p->list_gen++;
        p->list_began = since;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    strmap_drop_if(p->meta, meta_unlisted, p);
    /* a plan made before the LIST asked its first page whose preemptor it did
     * not show: the pod is gone (one made since may be for a pod newer than
     * the LIST) */
    for (bool again = true; again;) {
        again = false;
        size_t it = 0;
        const char *uid;
        plan *pl;
        while ((pl = strmap_next(p->plans, &it, &uid)))
            if (pl->created < p->list_began && !strmap_get(p->meta, uid)) {
                pre_finish(p, pl, &p->deleted, "the pod is gone (not in the LIST)");
                again = true;   /* pre_finish changed the map: look again */
                break;
            }
    }
    if (strmap_count(p->plans))
        pthread_cond_signal(&p->cv);   /* victims may be among the pods gone */
    pthread_mutex_unlock(&p->mu);
}

static bool pdb_unlisted(const char *key, void *val, void *ud)
{
    gp_preempt *p = ud;
    if (strmap_get(p->pdb_seen, key))
        return false;
    pdb_free(val);
    return true;
}

void preempt_pdbs_resync(gp_preempt *p, bool end)
{
    pthread_mutex_lock(&p->mu);
    if (!end) {
        strmap_free(p->pdb_seen);
        p->pdb_seen = strmap_new();
    } else {   /* budgets the LIST did not show are gone */
        strmap_drop_if(p->pdbs, pdb_unlisted, p);
    }
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
    bool first;                   /* ... for the first time */
    bool consol;                  /* the victims move (consolidation) */
    char *held_rec;               /* ... the record of their held places (owned copy) */
    int nudged;                   /* the nudge's answer */
    gp_err err;
} job;

static void run_job(gp_preempt *p, job *j)
{
    const gp_preempt_io *io = &p->cfg.io;
    if (j->nudge) {
        char msg[GP_NAME_MAX + 256];
        snprintf(msg, sizeof msg, "%s on %s is free and held for this pod: the pods it "
                 "preempted are gone", j->frees, j->node);
        j->nudged = io->nudge ? io->nudge(io->ud, j->ns, j->name, j->uid, msg, j->first, &j->err)
                              : 0;
        return;
    }
    if (j->stage == S_NOMINATE) {
        j->nominated = io->nominate ? io->nominate(io->ud, j->ns, j->name, j->uid, j->node,
                                                   j->held_rec, &j->err)
                                    : 0;
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
    pl->retry_at = pre_now_s() + (d < BACKOFF_MAX_S ? d : BACKOFF_MAX_S);
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
        if (extender_pod_request_json(e, old->pod, set, req, &view, &err) == 0) {
            const char *nodes[ALTS_MAX + 1];
            size_t n = 0;
            nodes[n++] = old->node;   /* the same node without the blocked pod first */
            for (int i = 0; i < old->nalts; i++)
                nodes[n++] = old->alts[i];
            plan_query q = {req, &view, set, true, false, NULL, NULL, 0, old};
            node_plan best;
            char alts[ALTS_MAX][GP_NAME_MAX];
            int nalts;
            if (pre_plan_nodes(p, &q, nodes, NULL, n, &best, alts, &nalts) > 0) {
                placed = pre_commit(p, old->pod, req, &best, alts, nalts, old, &err) != NULL;
                pre_node_plan_clear(&best);
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
    pre_plan_free(old);
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
            pl->renudges = RENUDGES_MAX;   /* not allowed: no second try either */
            LOG_WARN("preemption for %s/%s: %s; kube-scheduler retries the pod on its next event "
                     "(grant pods patch: manifests/components/requeue-rbac)", pl->ns, pl->name,
                     j->err.msg);
        } else if (!pl->nudged) {
            pl->nudged = true;
            pl->nudged_at = pre_now_s();
            atomic_fetch_add(&p->nudged_n, 1);
            LOG_INFO("preemption for %s/%s: the share on %s is free; kube-scheduler retries the pod",
                     pl->ns, pl->name, pl->node);
        } else {
            pl->renudges++;
            pl->nudged_at = pre_now_s();
            atomic_fetch_add(&p->renudged, 1);
            LOG_INFO("preemption for %s/%s: the share on %s is still free and the pod unbound; "
                     "told kube-scheduler again (%d of %d)", pl->ns, pl->name, pl->node,
                     pl->renudges, RENUDGES_MAX);
        }
        return;
    }
    if (j->stage == S_NOMINATE) {
        if (j->nominated == 1) {
            cluster_unclaim(p->c, pl->uid);
            pre_finish(p, pl, &p->deleted, "the preemptor is gone");
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
                pre_consol_blocked(p, pl, v);
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
            pre_finish(p, pl, &p->failed, "an eviction was refused");
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
    double now = pre_now_s();
    pthread_mutex_lock(&p->mu);
    size_t it = 0;
    const char *uid;
    pmeta *m;
    while (n < DRA_ROUND_MAX && (m = strmap_next(p->parked, &it, &uid)))
        if (!strmap_get(p->plans, uid) &&
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
        gp_pod pod;
        if (pod_decode(pods[i], &pod, &err) == 0 &&
            extender_pod_request(e, &pod, set, req, &view, &err) == 0 && req->dra &&
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
                (void)pre_on_nofit(p, &pod, req, &view, set, list, NULL, nn, reason, sizeof reason);
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

/* A nudged preemptor still unbound: kube-scheduler may have retried it on its
 * own view of the victims' deletion before gpupack's watch showed it, been
 * refused from the older state, and parked it with no event to come (its
 * nudge could meet the same race with another pod's update). */
static bool renudge_due(const gp_preempt *p, const plan *pl, double now)
{
    if (!pl->nudged || pl->renudges >= RENUDGES_MAX)
        return false;
    double gap = p->cfg.renudge_s * (double)(1u << pl->renudges);
    return now - pl->nudged_at >= gap;
}

void preempt_tick(gp_preempt *p)
{
    dra_parked_round(p);
    pthread_mutex_lock(&p->mu);
    pre_held_round(p);
    size_t cap = strmap_count(p->plans), nj = 0;
    job *jobs = xcalloc(cap ? cap : 1, sizeof *jobs);
    for (;;) {   /* plans that are over leave the map: restart the walk after each */
        bool changed = false;
        size_t it = 0;
        plan *pl;
        while ((pl = strmap_next(p->plans, &it, NULL)))
            if (pre_plan_over(p, pl)) {
                changed = true;
                break;
            }
        if (!changed)
            break;
    }
    size_t it = 0;
    plan *pl;
    double now = pre_now_s();
    while ((pl = strmap_next(p->plans, &it, NULL)) && nj < cap) {
        if (now < pl->retry_at)
            continue;
        bool nudge = pl->stage == S_WAIT && (!pl->nudged || renudge_due(p, pl, now)) &&
                     !pre_waiting(p, pl);
        if (pl->stage == S_WAIT && !nudge)
            continue;
        job *j = &jobs[nj++];
        j->nudge = nudge;
        j->first = !pl->nudged;
        j->consol = pl->consol;
        j->held_rec = pl->stage == S_NOMINATE && !nudge ? xstrdup(pl->held_rec) : NULL;
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
        free(jobs[i].held_rec);
    }
    pthread_mutex_unlock(&p->mu);
    free(jobs);
}

static void *worker(void *arg)
{
    gp_preempt *p = arg;
    gp_thread_set_name("preempt");
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

int preempt_start(gp_preempt *p, gp_extender *e, bool run_worker, gp_err *err)
{
    atomic_store(&p->e, e);
    if (run_worker) {
        int rc = pthread_create(&p->th, NULL, worker, p);
        if (rc != 0)
            return gp_fail(err, "cannot start the preemption thread: %s", strerror(rc));
        p->started = true;
    }
    return 0;
}
