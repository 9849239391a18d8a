/* cluster.c -- the node -> GPU -> allocation store; one lock; assume / confirm / forget. */
#include "pack/cluster.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonw.h"
#include "lib/log.h"
#include "lib/strmap.h"

/* A pod's assignment as the store keeps it: the node's name apart, in the
 * same block after the grants actually used (a one-GPU pod's ~110 bytes
 * instead of the 350 a gp_assignment copy up to that grant took: 20,000 pods
 * at 5,000 nodes, bench/results/scale.md). Members named as gp_assignment's. */
typedef struct held_assign {
    const char *node;
    int nctrs;
    gp_ctr_assign ctrs[GP_MAX_CTRS];   /* last member: only what ctrs_size counts is allocated */
} held_assign;

/* A GPU the assignment names, with the UUID its node reported (the string in
 * the same block as the array; "" when unknown). */
typedef struct held_ref {
    int index;
    const char *uuid;
} held_ref;

typedef struct pod_rec {
    char uid[GP_UID_MAX];
    /* in one allocation (names_set): fixed arrays would be three quarters of
     * the store's memory with 20,000 pods */
    char *ns, *name, *policy;
    gp_pod_state state;
    gp_bind_phase phase;        /* ASSUMED only: where its Binding stands */
    double assumed_at;          /* monotonic seconds */
    double phase_at;            /* when phase last changed */
    double reserved_until;      /* > 0: a filter-time reservation lapsing then */
    bool sent;                  /* ASSUMED: a bind thread posts (or posted) its Binding, which
                                 * may land: reconciliation never releases it */
    bool conflict_seen;         /* ASSUMED and sent, on a GPU the API server's pods over-fill:
                                 * counted once */
    unsigned attempt;           /* Bindings posted for it so far (cluster_bind_claim) */
    unsigned gen;               /* last resync generation it was observed in */
    int nrefs;                  /* GPUs named with their UUIDs (holds follow the UUID) */
    held_ref *refs;
    int missing;                /* held GPUs its node no longer has (while attached) */
    held_assign *a;             /* a->nctrs containers (0: host-only pod) */
    int64_t cpu_milli, mem_mib; /* host requests, counted on a->node */
    bool dra;                   /* its GPUs are the allocator's predicted choice for its claims:
                                 * held until the claims show up allocated (cluster_set_dra) */
} pod_rec;

typedef struct node_ent {
    unsigned gen;
    int ninv;                   /* node.gpus[0..ninv) are the inventory's; DRA-only GPUs follow */
    char inv_source[16];        /* the inventory's source (node.source says "dra" for a node
                                 * whose GPUs all come from DRA) */
    uint64_t over;              /* GPU positions over capacity at the last reconcile */
    pod_rec **pods;             /* pods whose assignment names this node */
    size_t npods, cappods;
    /* allocated to node.ngpus GPUs: keep last. On a cache line of its own
     * (ent_build), so that its first line holds the map's key and what a
     * filter reads of a node whose verdict it already has. */
    _Alignas(64) gp_node node;
} node_ent;

struct gp_cluster {
    pthread_rwlock_t lock;
    /* lock acquisitions that had to wait, and how long (ns), read and write */
    atomic_ulong waits[2];
    atomic_ullong wait_ns[2];
    strmap *nodes;              /* node.name -> node_ent (the key is the entry's) */
    strmap *pods;               /* uid -> pod_rec */
    size_t orphans;             /* pods whose node is not (yet) in the store */
    unsigned node_gen, pod_gen;
    bool pods_resyncing;        /* between cluster_pods_resync_begin and _end */
    gp_cluster_truth truth;     /* reconciliation counters */
    gp_over_notice notices[GP_OVER_NOTICES_MAX];   /* GPUs gone over capacity, not yet taken */
    size_t nnotices;
    gp_claim **claims;          /* preemption claims (few: a plain array) */
    size_t nclaims;
    strmap *dra;                /* node name -> gp_dra_node_view (owned copies) */
};

static int dra_pod_holds(const node_ent *e, const gp_dra_node_view *v, const char *uid, bool *told,
                         gp_hold *holds, int n);

size_t gp_node_size(int ngpus)
{
    return offsetof(gp_node, gpus) + (size_t)ngpus * sizeof(gp_gpu);
}

static size_t ent_size(int ngpus)
{
    return offsetof(node_ent, node) + gp_node_size(ngpus);
}

/* The bytes of an assignment's containers up to the last used GPU grant:
 * nothing past a container's ngpus grants, or past nctrs containers, is read. */
static size_t ctrs_size(const gp_ctr_assign *ctrs, int nctrs)
{
    if (nctrs <= 0)
        return 0;
    const gp_ctr_assign *last = &ctrs[nctrs - 1];
    int ng = last->ngpus < 0 ? 0 : last->ngpus > GP_MAX_GPUS_PER_CTR ? GP_MAX_GPUS_PER_CTR : last->ngpus;
    return (size_t)(nctrs - 1) * sizeof(gp_ctr_assign) + offsetof(gp_ctr_assign, gpus) +
           (size_t)ng * sizeof(gp_gpu_grant);
}

static held_assign *held_new(const gp_assignment *a)
{
    int nctrs = a->nctrs < 0 ? 0 : a->nctrs > GP_MAX_CTRS ? GP_MAX_CTRS : a->nctrs;
    size_t cs = ctrs_size(a->ctrs, nctrs), at = offsetof(held_assign, ctrs) + cs,
           nl = strnlen(a->node, GP_NAME_MAX - 1);
    held_assign *h = xmalloc(at + nl + 1);
    h->nctrs = nctrs;
    memcpy(h->ctrs, a->ctrs, cs);
    char *node = (char *)h + at;
    memcpy(node, a->node, nl);
    node[nl] = '\0';
    h->node = node;
    return h;
}

/* The full assignment of a stored one (unused grants zeroed). */
static void held_out(const held_assign *h, gp_assignment *out)
{
    memset(out, 0, sizeof *out);
    gp_strlcpy(out->node, h->node, sizeof out->node);
    out->nctrs = h->nctrs;
    memcpy(out->ctrs, h->ctrs, ctrs_size(h->ctrs, h->nctrs));
}

static int held_holds(const held_assign *h, gp_hold *holds)
{
    return gp_ctrs_holds(h->ctrs, h->nctrs, holds);
}

static bool held_equal(const held_assign *h, const gp_assignment *a)
{
    return strcmp(h->node, a->node) == 0 && gp_ctrs_equal(h->ctrs, h->nctrs, a->ctrs, a->nctrs);
}

gp_cluster *cluster_new(void)
{
    gp_cluster *c = xcalloc(1, sizeof *c);
    pthread_rwlock_init(&c->lock, NULL);
    c->nodes = strmap_new_borrowing();   /* keyed on each entry's node.name */
    c->pods = strmap_new();
    c->dra = strmap_new();
    return c;
}

/* Is kept exactly the first n bytes of given (what names_set would store)? */
static bool same_prefix(const char *kept, const char *given, size_t n)
{
    return strlen(kept) == n && memcmp(kept, given, n) == 0;
}

/* Sets the pod's namespace, name and policy (copied: the arguments may be
 * the record's own). */
static void names_set(pod_rec *r, const char *ns, const char *name, const char *policy)
{
    ns = ns ? ns : "";
    name = name ? name : "";
    policy = policy ? policy : "";
    size_t a = strnlen(ns, GP_NAME_MAX - 1), b = strnlen(name, GP_NAME_MAX - 1),
           p = strnlen(policy, GP_NAME_MAX - 1);
    /* every watch event of a bound pod names its policy again: keep the block
     * when nothing changed (a fresh small block per event, interleaved with
     * the event's decoding, scatters the records over the heap's pages) */
    if (r->ns && same_prefix(r->ns, ns, a) && same_prefix(r->name, name, b) &&
        same_prefix(r->policy, policy, p))
        return;
    char *blk = xmalloc(a + b + p + 3);
    memcpy(blk, ns, a);
    blk[a] = '\0';
    memcpy(blk + a + 1, name, b);
    blk[a + 1 + b] = '\0';
    memcpy(blk + a + b + 2, policy, p);
    blk[a + b + 2 + p] = '\0';
    free(r->ns);
    r->ns = blk;
    r->name = blk + a + 1;
    r->policy = blk + a + b + 2;
}

static void rec_free(pod_rec *r)
{
    if (r) {
        free(r->ns);
        free(r->refs);
        free(r->a);
        free(r);
    }
}

static void ent_free(node_ent *e)
{
    if (e) {
        free(e->pods);
        free(e);
    }
}

void cluster_free(gp_cluster *c)
{
    if (!c)
        return;
    size_t it = 0;
    node_ent *e;
    while ((e = strmap_next(c->nodes, &it, NULL)))
        ent_free(e);
    it = 0;
    pod_rec *r;
    while ((r = strmap_next(c->pods, &it, NULL)))
        rec_free(r);
    strmap_free(c->nodes);
    strmap_free(c->pods);
    gp_dra_node_view *dv;
    it = 0;
    while ((dv = strmap_next(c->dra, &it, NULL))) {
        cluster_dra_view_free(dv);
        free(dv);
    }
    strmap_free(c->dra);
    for (size_t i = 0; i < c->nclaims; i++)
        free(c->claims[i]);
    free(c->claims);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

/* Takes the lock, counting the time spent waiting when it was held (a
 * filter's evaluation against a bind, for instance). */
static void lock_timed(gp_cluster *c, int w)
{
    if ((w ? pthread_rwlock_trywrlock(&c->lock) : pthread_rwlock_tryrdlock(&c->lock)) == 0)
        return;
    double t0 = gp_mono_s();
    if (w)
        pthread_rwlock_wrlock(&c->lock);
    else
        pthread_rwlock_rdlock(&c->lock);
    atomic_fetch_add(&c->waits[w], 1);
    atomic_fetch_add(&c->wait_ns[w], (unsigned long long)((gp_mono_s() - t0) * 1e9));
}

static void wrlock(gp_cluster *c)
{
    lock_timed(c, 1);
}

void cluster_rdlock(gp_cluster *c)
{
    lock_timed(c, 0);
}

void cluster_unlock(gp_cluster *c)
{
    pthread_rwlock_unlock(&c->lock);
}

/* --------------------------------------------------------- accounting -- */

static bool node_has_uuids(const gp_node *n)
{
    for (int g = 0; g < n->ngpus; g++)
        if (n->gpus[g].info.uuid[0])
            return true;
    return false;
}

/* Where a pod's hold on device `index` sits on node n: by the UUID the
 * assignment recorded when the node reports UUIDs, else by index; -1 when
 * that GPU is not on the node. */
static int hold_pos(const gp_node *n, const pod_rec *r, int index)
{
    for (int i = 0; i < r->nrefs; i++) {
        if (r->refs[i].index != index || !r->refs[i].uuid[0])
            continue;
        if (!node_has_uuids(n))
            break;
        for (int g = 0; g < n->ngpus; g++)
            if (strcmp(n->gpus[g].info.uuid, r->refs[i].uuid) == 0)
                return g;
        return -1;
    }
    return gp_node_gpu_pos(n, index);
}

/* Adds (sign 1) or removes (-1) a pod's holds on the GPUs of e that exist. */
static void apply_holds(node_ent *e, pod_rec *r, int sign)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = held_holds(r->a, holds);
    int missing = 0;
    for (int h = 0; h < nh; h++) {
        int pos = hold_pos(&e->node, r, holds[h].index);
        if (pos < 0) {
            missing++;
            continue;
        }
        /* a claim pod's predicted share: the allocator holds it in flight, so it
         * counts as DRA's too */
        holds[h].dra = r->dra;
        placement_hold(&e->node, pos, &holds[h], sign);
    }
    e->node.cpu_used_milli += sign * r->cpu_milli;
    e->node.host_mem_used_mib += sign * r->mem_mib;
    e->node.state_hash = placement_state_hash(&e->node);
    if (sign > 0 && missing && !r->missing)
        LOG_WARN("pod %s/%s: %d of the GPUs its assignment names are not on node %s (replaced "
                 "or removed?); /inspect lists them under missingGPUs", r->ns, r->name, missing,
                 e->node.name);
    r->missing = sign > 0 ? missing : 0;
}

static void attach(gp_cluster *c, pod_rec *r)
{
    node_ent *e = strmap_get(c->nodes, r->a->node);
    if (!e) {
        c->orphans++;
        return;
    }
    if (e->npods == e->cappods) {
        e->cappods = e->cappods ? e->cappods * 2 : 4;
        e->pods = xrealloc(e->pods, e->cappods * sizeof *e->pods);
    }
    e->pods[e->npods++] = r;
    apply_holds(e, r, 1);
}

/* A GPU marked over capacity that a pod's departure brought back within it:
 * unmarked, so that going over again is counted and reported again. */
static void recheck_over(node_ent *e)
{
    for (int pos = 0; pos < e->node.ngpus && e->over; pos++) {
        const gp_gpu *g = &e->node.gpus[pos];
        uint64_t bit = (uint64_t)1 << pos;
        if (!(e->over & bit) || g->mem_used > g->info.mem_total || g->core_used > g->info.core_total)
            continue;
        e->over &= ~bit;
        LOG_INFO("node %s GPU %d is within capacity again (%lld of %lld MiB)", e->node.name,
                 g->info.index, (long long)g->mem_used, (long long)g->info.mem_total);
    }
}

static void detach(gp_cluster *c, pod_rec *r)
{
    node_ent *e = strmap_get(c->nodes, r->a->node);
    if (!e) {
        c->orphans--;
        return;
    }
    for (size_t i = 0; i < e->npods; i++) {
        if (e->pods[i] == r) {
            e->pods[i] = e->pods[--e->npods];
            apply_holds(e, r, -1);
            recheck_over(e);
            return;
        }
    }
}

static void pod_remove(gp_cluster *c, pod_rec *r)
{
    detach(c, r);
    strmap_del(c->pods, r->uid);
    rec_free(r);
}

static void set_phase(pod_rec *r, gp_bind_phase phase)
{
    r->phase = phase;
    r->phase_at = gp_mono_s();
}

static void set_refs(pod_rec *r, const gp_gpu_ref *refs, int nrefs)
{
    free(r->refs);
    r->refs = NULL;
    r->nrefs = 0;
    if (refs && nrefs > 0) {
        nrefs = nrefs > GP_MAX_GPUS_PER_NODE ? GP_MAX_GPUS_PER_NODE : nrefs;
        size_t len[GP_MAX_GPUS_PER_NODE], bytes = (size_t)nrefs * sizeof *r->refs;
        for (int i = 0; i < nrefs; i++)
            bytes += (len[i] = strnlen(refs[i].uuid, GP_UUID_MAX - 1)) + 1;
        r->refs = xmalloc(bytes);
        char *str = (char *)(r->refs + nrefs);
        for (int i = 0; i < nrefs; i++) {
            memcpy(str, refs[i].uuid, len[i]);
            str[len[i]] = '\0';
            r->refs[i] = (held_ref){refs[i].index, str};
            str += len[i] + 1;
        }
        r->nrefs = nrefs;
    }
}

static pod_rec *pod_add(gp_cluster *c, const char *uid, const char *ns, const char *name,
                        const char *policy, const gp_assignment *a, gp_pod_state state,
                        const gp_gpu_ref *refs, int nrefs, int64_t cpu_milli, int64_t mem_mib)
{
    pod_rec *r = xcalloc(1, sizeof *r);
    gp_strlcpy(r->uid, uid, sizeof r->uid);
    names_set(r, ns, name, policy);
    r->state = state;
    r->phase = GP_PHASE_IN_FLIGHT;
    r->assumed_at = r->phase_at = gp_mono_s();
    r->gen = c->pod_gen;
    r->a = held_new(a);
    r->cpu_milli = cpu_milli > 0 ? cpu_milli : 0;
    r->mem_mib = mem_mib > 0 ? mem_mib : 0;
    set_refs(r, refs, nrefs);
    strmap_put(c->pods, r->uid, r);
    attach(c, r);
    return r;
}

/* ----------------------------------------------------- reconciliation -- */
/* The API server is the truth: a pod listed or watched bound with an
 * assignment holds its GPUs whatever gpupack assumed. When that leaves a GPU
 * holding more than it has, the assumptions on it that no Binding was posted
 * for (filter-time reservations, binds still waiting for a thread) are
 * released, newest first, until it fits; their binds are then refused before
 * posting (cluster_bind_claim). What stays over capacity is the API server's
 * doing (a Binding that landed after gpupack gave its GPUs up, hand-written
 * annotations, a GPU that left the inventory): it is followed, counted and
 * reported, and placement offers nothing on that GPU until pods leave. */

static bool gpu_over(const gp_gpu *g)
{
    return g->mem_used > g->info.mem_total || g->core_used > g->info.core_total;
}

static bool holds_pos(const node_ent *e, const pod_rec *r, int pos)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = held_holds(r->a, holds);
    for (int h = 0; h < nh; h++)
        if (hold_pos(&e->node, r, holds[h].index) == pos)
            return true;
    return false;
}

static bool releasable(const pod_rec *r)
{
    return r->state == GP_POD_ASSUMED && !r->sent && r->phase == GP_PHASE_IN_FLIGHT;
}

/* Releases unsent assumptions on over-capacity GPU `pos` of e, newest first,
 * until it fits or none is left. */
static void release_conflicts(gp_cluster *c, node_ent *e, int pos)
{
    while (gpu_over(&e->node.gpus[pos])) {
        pod_rec *newest = NULL;
        for (size_t i = 0; i < e->npods; i++) {
            pod_rec *r = e->pods[i];
            if (releasable(r) && holds_pos(e, r, pos) && (!newest || r->assumed_at > newest->assumed_at))
                newest = r;
        }
        if (!newest)
            return;
        const gp_gpu *g = &e->node.gpus[pos];
        bool reserved = newest->reserved_until > 0;
        LOG_WARN("pod %s/%s: released its %s on node %s: GPU %d holds %lld of %lld MiB and %d.%d%% "
                 "of %d.%d%% compute with the pods the API server shows bound (their annotations "
                 "win); %s", newest->ns, newest->name,
                 reserved ? "filter-time reservation" : "assumed GPUs", e->node.name, g->info.index,
                 (long long)g->mem_used, (long long)g->info.mem_total, g->core_used / 10,
                 g->core_used % 10, g->info.core_total / 10, g->info.core_total % 10,
                 reserved ? "its bind will place it afresh"
                          : "its Binding will not be posted, kube-scheduler retries the pod");
        if (reserved)
            c->truth.released_reservations++;
        else
            c->truth.released_assumptions++;
        pod_remove(c, newest);
    }
}

/* The pod most recently recorded on GPU pos (the likely cause of its going over). */
static const pod_rec *newest_on(const node_ent *e, int pos)
{
    const pod_rec *best = NULL;
    for (size_t i = 0; i < e->npods; i++)
        if (holds_pos(e, e->pods[i], pos) && (!best || e->pods[i]->assumed_at >= best->assumed_at))
            best = e->pods[i];
    return best;
}

static void reconcile_node(gp_cluster *c, node_ent *e)
{
    uint64_t over = 0;
    for (int pos = 0; pos < e->node.ngpus; pos++) {
        if (!gpu_over(&e->node.gpus[pos]))
            continue;
        release_conflicts(c, e, pos);
        if (!gpu_over(&e->node.gpus[pos]))
            continue;
        over |= (uint64_t)1 << pos;
        for (size_t i = 0; i < e->npods; i++) {
            pod_rec *r = e->pods[i];
            if (r->state == GP_POD_ASSUMED && !r->conflict_seen && holds_pos(e, r, pos)) {
                r->conflict_seen = true;   /* its Binding is out: it may land */
                c->truth.kept_in_flight++;
                LOG_WARN("pod %s/%s: its Binding to node %s is out (outcome not known yet) while "
                         "GPU %d is over capacity with the pods the API server shows bound; its "
                         "GPUs stay held until the outcome is known", r->ns, r->name, e->node.name,
                         e->node.gpus[pos].info.index);
            }
        }
    }
    recheck_over(e);   /* those back within capacity (an inventory that grew) */
    uint64_t went = over & ~e->over;
    for (int pos = 0; pos < e->node.ngpus && went; pos++) {
        const gp_gpu *g = &e->node.gpus[pos];
        uint64_t bit = (uint64_t)1 << pos;
        if (!(went & bit))
            continue;
        c->truth.over_capacity++;
        if (g->dra.claims > 0 && g->mem_used > g->dra.mem_used)
            c->truth.dra_conflicts++;
        const pod_rec *why = newest_on(e, pos);
        LOG_WARN("node %s GPU %d is OVER CAPACITY: the pods' annotations%s hold %lld of %lld MiB "
                 "and %d.%d%% of %d.%d%% compute (%lld MiB of it %d DRA claim%s; last recorded: pod "
                 "%s/%s); gpupack follows them and offers nothing on this GPU until pods leave",
                 e->node.name, g->info.index, g->dra.claims ? " and DRA's allocated claims" : "",
                 (long long)g->mem_used, (long long)g->info.mem_total, g->core_used / 10,
                 g->core_used % 10, g->info.core_total / 10, g->info.core_total % 10,
                 (long long)g->dra.mem_used, g->dra.claims, gp_s(g->dra.claims),
                 why ? why->ns : "-", why ? why->name : "-");
        if (c->nnotices == GP_OVER_NOTICES_MAX) {
            c->truth.notices_dropped++;
            continue;
        }
        gp_over_notice *n = &c->notices[c->nnotices++];
        memset(n, 0, sizeof *n);
        gp_strlcpy(n->node, e->node.name, sizeof n->node);
        n->index = g->info.index;
        n->mem_used = g->mem_used;
        n->mem_total = g->info.mem_total;
        n->core_used = g->core_used;
        n->core_total = g->info.core_total;
        n->dra_mem = g->dra.mem_used;
        n->dra_claims = g->dra.claims;
        if (why) {
            gp_strlcpy(n->ns, why->ns, sizeof n->ns);
            gp_strlcpy(n->name, why->name, sizeof n->name);
            gp_strlcpy(n->uid, why->uid, sizeof n->uid);
        }
    }
    e->over = over;
}

/* Reconciles the node a pod record names, unless a LIST is being applied
 * (its end reconciles every node, once the pods it lacks are gone). */
static void reconcile_for(gp_cluster *c, const char *node)
{
    node_ent *e = c->pods_resyncing ? NULL : strmap_get(c->nodes, node);
    if (e)
        reconcile_node(c, e);
}

static void reconcile_all(gp_cluster *c)
{
    size_t it = 0;
    node_ent *e;
    while ((e = strmap_next(c->nodes, &it, NULL)))
        reconcile_node(c, e);
}

size_t cluster_take_over_notices(gp_cluster *c, gp_over_notice *out, size_t max)
{
    wrlock(c);
    size_t n = c->nnotices < max ? c->nnotices : max;
    memcpy(out, c->notices, n * sizeof *out);
    memmove(c->notices, c->notices + n, (c->nnotices - n) * sizeof *out);
    c->nnotices -= n;
    cluster_unlock(c);
    return n;
}

int cluster_bind_claim(gp_cluster *c, const char *uid, const gp_assignment *a)
{
    int rc = a ? -1 : 0;
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, uid);
    if (r && (!a || held_equal(r->a, a))) {
        r->sent = true;
        r->attempt++;
        /* a Binding is out again (a retry of one whose answer was lost): its own
         * answer settles the pod, not a GET that saw it before it landed */
        if (r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_UNKNOWN)
            set_phase(r, GP_PHASE_IN_FLIGHT);
        rc = 0;
    }
    cluster_unlock(c);
    return rc;
}

/* ------------------------------------------------------------- claims -- */

static size_t claim_find(const gp_cluster *c, const char *uid)
{
    for (size_t i = 0; i < c->nclaims; i++)
        if (strcmp(c->claims[i]->uid, uid) == 0)
            return i;
    return c->nclaims;
}

static void claim_drop_at(gp_cluster *c, size_t i)
{
    free(c->claims[i]);
    c->claims[i] = c->claims[--c->nclaims];
}

static void claim_drop(gp_cluster *c, const char *uid)
{
    size_t i = c->nclaims ? claim_find(c, uid) : 0;
    if (i < c->nclaims)
        claim_drop_at(c, i);
}

/* Drops one held place of controller owner, the one on `node` if any. */
static void held_drop(gp_cluster *c, const char *owner, const char *node)
{
    size_t any = c->nclaims;
    for (size_t i = 0; i < c->nclaims; i++) {
        if (strcmp(c->claims[i]->owner, owner) != 0)
            continue;
        if (strcmp(c->claims[i]->a.node, node) == 0) {
            claim_drop_at(c, i);
            return;
        }
        if (any == c->nclaims)
            any = i;
    }
    if (any < c->nclaims)
        claim_drop_at(c, any);
}

/* Does claim cl weigh on placement for pod req? */
static bool claim_applies(const gp_claim *cl, const char *node, const gp_pod_req *req)
{
    if (strcmp(cl->a.node, node) != 0)
        return false;
    if (cl->owner[0])   /* a held place: for its controller's replacement only */
        return strcmp(cl->owner, req->owner) != 0;
    return strcmp(cl->uid, req->uid) != 0 && cl->priority >= req->priority;
}

/* Adds claim cl to a node copy's counters. */
static void claim_add(gp_node *n, const gp_claim *cl)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(&cl->a, holds);
    for (int h = 0; h < nh; h++) {
        int pos = gp_node_gpu_pos(n, holds[h].index);
        if (pos < 0)
            continue;
        holds[h].dra = cl->dra;   /* held for a claim pod: its prediction counts it as DRA's */
        placement_hold(n, pos, &holds[h], 1);
    }
    n->cpu_used_milli += cl->cpu_milli;
    n->host_mem_used_mib += cl->mem_mib;
}

/* The node placement sees for pod uid/prio: e's node, or a copy into
 * scratch with the applicable claims added. */
static const gp_node *node_view(const gp_cluster *c, const node_ent *e, const gp_pod_req *req,
                                gp_node *scratch)
{
    bool any = false;
    for (size_t i = 0; i < c->nclaims; i++) {
        if (!claim_applies(c->claims[i], e->node.name, req))
            continue;
        if (!any)
            memcpy(scratch, &e->node, gp_node_size(e->node.ngpus));
        any = true;
        claim_add(scratch, c->claims[i]);
    }
    if (!any)
        return &e->node;
    scratch->state_hash = placement_state_hash(scratch);
    return scratch;
}

const gp_node *cluster_rd_node_for(const gp_cluster *c, const char *name, const gp_pod_req *req,
                                   gp_node *scratch)
{
    return cluster_rd_node_for_hashed(c, name, strmap_hash(name), req, scratch);
}

uint64_t cluster_node_hash(const char *name)
{
    return strmap_hash(name);
}

void cluster_rd_prefetch(const gp_cluster *c, uint64_t h, int step)
{
    if (step == 0)
        strmap_prefetch(c->nodes, h);
    else
        strmap_prefetch_key(c->nodes, h);   /* the key is node.name, on the entry's first line */
}

const gp_node *cluster_rd_node_for_hashed(const gp_cluster *c, const char *name, uint64_t h,
                                          const gp_pod_req *req, gp_node *scratch)
{
    node_ent *e = strmap_get_hashed(c->nodes, name, h);
    return e ? node_view(c, e, req, scratch) : NULL;
}

int cluster_claim(gp_cluster *c, const gp_claim *cl, gp_err *err)
{
    int rc = -1;
    wrlock(c);
    node_ent *e = strmap_get(c->nodes, cl->a.node);
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(&cl->a, holds);
    size_t at = claim_find(c, cl->uid);
    if (!e) {
        gp_fail(err, "node %s is not known to gpupack", cl->a.node);
        goto out;
    }
    for (int h = 0; h < nh; h++)
        if (gp_node_gpu_pos(&e->node, holds[h].index) < 0) {
            gp_fail(err, "node %s has no GPU %d", cl->a.node, holds[h].index);
            goto out;
        }
    if (at == c->nclaims && c->nclaims >= GP_CLAIMS_MAX) {
        gp_fail(err, "%d preemption claims are held already", GP_CLAIMS_MAX);
        goto out;
    }
    gp_claim *copy = xmalloc(sizeof *copy);
    *copy = *cl;
    copy->created = gp_mono_s();
    if (at < c->nclaims) {
        free(c->claims[at]);
        c->claims[at] = copy;
    } else {
        c->claims = xrealloc(c->claims, (c->nclaims + 1) * sizeof *c->claims);
        c->claims[c->nclaims++] = copy;
    }
    rc = 0;
out:
    cluster_unlock(c);
    return rc;
}

void cluster_bind_abandon(gp_cluster *c, const char *uid)
{
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, uid);
    if (r && releasable(r))
        pod_remove(c, r);
    cluster_unlock(c);
}

void cluster_unclaim(gp_cluster *c, const char *uid)
{
    wrlock(c);
    claim_drop(c, uid);
    cluster_unlock(c);
}

int cluster_claim_get(gp_cluster *c, const char *uid, gp_claim *out)
{
    cluster_rdlock(c);
    size_t i = claim_find(c, uid);
    if (i < c->nclaims && out)
        *out = *c->claims[i];
    cluster_unlock(c);
    return i < c->nclaims ? 0 : -1;
}

void cluster_rd_node_pods(const gp_cluster *c, const char *node,
                          void (*fn)(void *ud, const gp_pod_on_node *p), void *ud)
{
    node_ent *e = strmap_get(c->nodes, node);
    if (!e)
        return;
    const gp_dra_node_view *dv = strmap_get(c->dra, node);
    bool *told = dv && dv->nholders ? xcalloc((size_t)dv->nholders, sizeof *told) : NULL;
    for (size_t i = 0; i < e->npods; i++) {
        const pod_rec *r = e->pods[i];
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int nh = held_holds(r->a, holds), k = 0;
        for (int h = 0; h < nh; h++) {
            int pos = hold_pos(&e->node, r, holds[h].index);
            if (pos < 0)
                continue;   /* a GPU the node no longer has: nothing to free there */
            holds[k] = holds[h];
            holds[k].dra = r->dra;
            holds[k++].index = e->node.gpus[pos].info.index;
        }
        /* what its ResourceClaims hold: freed with it, once the claims go */
        k = dra_pod_holds(e, dv, r->uid, told, holds, k);
        bool applied = r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_ACCEPTED;
        gp_pod_on_node p = {r->uid, r->ns, r->name, r->policy, r->state, applied, k, holds,
                            r->cpu_milli, r->mem_mib};
        fn(ud, &p);
    }
    /* claims reserved for pods the store has no record of here */
    for (int i = 0; told && i < dv->nholders; i++) {
        const gp_dra_holder *d = &dv->holders[i];
        if (told[i] || !d->pod_uid[0])
            continue;
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int k = dra_pod_holds(e, dv, d->pod_uid, told, holds, 0);
        gp_pod_on_node p = {d->pod_uid, d->claim_ns, d->pod, "", GP_POD_BOUND, false, k, holds, 0, 0};
        fn(ud, &p);
    }
    free(told);
}

/* -------------------------------------------------------------- nodes -- */

/* A node entry from the inventory's GPUs and what DRA publishes on the node
 * (c->dra), with what the claims hold counted; no pods attached yet. */
static node_ent *ent_build(gp_cluster *c, const char *name, const char *source, int64_t cpu_milli,
                           int64_t mem_mib, const gp_gpu_info *inv, int ninv)
{
    const gp_dra_node_view *dv = strmap_get(c->dra, name);
    int extra = 0;
    int match[GP_MAX_GPUS_PER_NODE];   /* view GPU -> position, -1 = added */
    int maxidx = -1;
    for (int i = 0; i < ninv; i++)
        if (inv[i].index > maxidx)
            maxidx = inv[i].index;
    for (int k = 0; dv && k < dv->ngpus && k < GP_MAX_GPUS_PER_NODE; k++) {
        match[k] = -1;
        for (int i = 0; i < ninv && dv->gpus[k].uuid[0]; i++)
            if (strcmp(inv[i].uuid, dv->gpus[k].uuid) == 0)
                match[k] = i;
        if (match[k] < 0 && ninv + extra < GP_MAX_GPUS_PER_NODE)
            extra++;
    }
    node_ent *e = xcalloc_aligned(_Alignof(node_ent), ent_size(ninv + extra));
    gp_strlcpy(e->node.name, name, sizeof e->node.name);
    gp_strlcpy(e->inv_source, source, sizeof e->inv_source);
    gp_strlcpy(e->node.source, ninv == 0 && extra ? "dra" : source, sizeof e->node.source);
    e->node.ngpus = ninv;
    e->ninv = ninv;
    e->node.cpu_alloc_milli = cpu_milli;
    e->node.host_mem_alloc_mib = mem_mib;
    for (int i = 0; i < ninv; i++)
        e->node.gpus[i].info = inv[i];
    for (int k = 0; dv && k < dv->ngpus && k < GP_MAX_GPUS_PER_NODE; k++) {
        const gp_dra_gpu_view *v = &dv->gpus[k];
        int pos = match[k];
        if (pos < 0) {
            if (e->node.ngpus == GP_MAX_GPUS_PER_NODE)
                continue;
            pos = e->node.ngpus++;
            gp_gpu_info *gi = &e->node.gpus[pos].info;
            gi->mem_total = v->dra.mem_total;
            gi->core_total = GP_CORE_FULL;
            gi->index = ++maxidx;
            gi->healthy = true;
            gi->model = gp_model_intern(v->model);
            gp_strlcpy(gi->uuid, v->uuid, sizeof gi->uuid);
        }
        gp_gpu *g = &e->node.gpus[pos];
        g->dra = v->dra;
        g->dra.only = match[k] < 0;
        g->mem_used += v->dra.mem_used;
        g->core_used += v->core_used;
        g->pods += v->dra.claims;
    }
    e->node.state_hash = placement_state_hash(&e->node);
    return e;
}

/* e replaces old under the same name: old's pods recounted on e, old freed. */
static void ent_adopt(gp_cluster *c, node_ent *e, node_ent *old)
{
    for (size_t i = 0; i < old->npods; i++)
        attach(c, old->pods[i]);
    int n = e->node.ngpus < old->node.ngpus ? e->node.ngpus : old->node.ngpus;
    e->over = n < 64 ? old->over & (((uint64_t)1 << n) - 1) : old->over;
    ent_free(old);
}

static bool same_inventory(const node_ent *e, const gp_inventory *inv)
{
    const gp_node *n = &e->node;
    if (e->ninv != inv->n || strcmp(e->inv_source, inv->source) != 0 ||
        n->cpu_alloc_milli != inv->cpu_alloc_milli || n->host_mem_alloc_mib != inv->mem_alloc_mib)
        return false;
    for (int i = 0; i < inv->n; i++)
        if (memcmp(&n->gpus[i].info, &inv->gpus[i], sizeof inv->gpus[i]) != 0)
            return false;
    return true;
}

void cluster_upsert_node(gp_cluster *c, const char *name, const gp_inventory *inv)
{
    if (strlen(name) >= GP_NAME_MAX)
        return;
    wrlock(c);
    node_ent *old = strmap_get(c->nodes, name);
    if (old && same_inventory(old, inv)) {
        old->gen = c->node_gen;
        cluster_unlock(c);
        return;
    }
    node_ent *e = ent_build(c, name, inv->source, inv->cpu_alloc_milli, inv->mem_alloc_mib,
                            inv->gpus, inv->n);
    e->gen = c->node_gen;
    strmap_put(c->nodes, e->node.name, e);
    if (old) {
        ent_adopt(c, e, old);
    } else if (c->orphans > 0) {
        /* pods seen before their node: adopt them (a scan, but only then) */
        size_t it = 0;
        pod_rec *r;
        while ((r = strmap_next(c->pods, &it, NULL)))
            if (strcmp(r->a->node, name) == 0) {
                c->orphans--;
                attach(c, r);
            }
    }
    reconcile_for(c, name);   /* an inventory that shrank may leave GPUs over capacity */
    cluster_unlock(c);
}

static void drop_node(gp_cluster *c, const char *name)
{
    for (size_t i = c->nclaims; i-- > 0;)
        if (strcmp(c->claims[i]->a.node, name) == 0)
            claim_drop_at(c, i);
    node_ent *e = strmap_del(c->nodes, name);
    if (e)
        c->orphans += e->npods;   /* their records stay until the pods go */
    ent_free(e);
}

void cluster_remove_node(gp_cluster *c, const char *name)
{
    wrlock(c);
    drop_node(c, name);
    cluster_unlock(c);
}

void cluster_nodes_resync_begin(gp_cluster *c)
{
    wrlock(c);
    c->node_gen++;
    cluster_unlock(c);
}

void cluster_nodes_resync_end(gp_cluster *c)
{
    wrlock(c);
    const char *gone[256];
    for (;;) {
        size_t n = 0, it = 0;
        const char *key;
        node_ent *e;
        while (n < GP_ARRAY_LEN(gone) && (e = strmap_next(c->nodes, &it, &key)))
            if (e->gen != c->node_gen)
                gone[n++] = key;
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            LOG_INFO("node %s is gone after relist", gone[i]);
            char name[GP_NAME_MAX];
            gp_strlcpy(name, gone[i], sizeof name);
            drop_node(c, name);
        }
    }
    cluster_unlock(c);
}

/* ---------------------------------------------------------------- DRA -- */

void cluster_dra_view_free(gp_dra_node_view *v)
{
    if (v) {
        free(v->gpus);
        free(v->holders);
        v->gpus = NULL;
        v->holders = NULL;
        v->ngpus = v->nholders = 0;
    }
}

/* Appends to holds (n used) what the claims reserved for pod uid hold on e's
 * GPUs, marking those holders in told; returns the new count. */
static int dra_pod_holds(const node_ent *e, const gp_dra_node_view *v, const char *uid, bool *told,
                         gp_hold *holds, int n)
{
    for (int i = 0; v && told && i < v->nholders; i++) {
        const gp_dra_holder *d = &v->holders[i];
        if (told[i] || strcmp(d->pod_uid, uid) != 0 || d->gpu < 0 || d->gpu >= v->ngpus)
            continue;
        told[i] = true;
        int pos = -1;
        for (int g = 0; g < e->node.ngpus && pos < 0; g++)
            if (e->node.gpus[g].dra.order == v->gpus[d->gpu].dra.order)
                pos = g;
        if (pos < 0 || n == GP_MAX_GPUS_PER_NODE)
            continue;
        holds[n++] = (gp_hold){e->node.gpus[pos].info.index, d->mem_mib, d->core, true};
    }
    return n;
}

static bool view_holds_pod(const gp_dra_node_view *v, const char *uid)
{
    for (int i = 0; v && i < v->nholders; i++)
        if (v->holders[i].pod_uid[0] && strcmp(v->holders[i].pod_uid, uid) == 0)
            return true;
    return false;
}

/* A pod assumed on the allocator's predicted GPUs whose claims now count in
 * the view: it keeps its node and host requests, its GPUs go (the claims
 * hold them instead). */
static void dra_pod_settled(gp_cluster *c, pod_rec *r)
{
    detach(c, r);
    r->a->nctrs = 0;
    set_refs(r, NULL, 0);
    r->dra = false;
    attach(c, r);
}

bool cluster_dra_holds_pod(gp_cluster *c, const char *name, const char *uid)
{
    cluster_rdlock(c);
    const gp_dra_node_view *v = strmap_get(c->dra, name);
    bool held = view_holds_pod(v, uid);
    /* a claim whose pods are gone but that is still allocated (its
     * reservation is cleared before it is deleted or deallocated) may be
     * this pod's: its share is not back yet */
    for (int i = 0; v && !held && i < v->nholders; i++)
        held = !v->holders[i].pod_uid[0];
    cluster_unlock(c);
    return held;
}

void cluster_set_dra(gp_cluster *c, const char *name, const gp_dra_node_view *v)
{
    if (strlen(name) >= GP_NAME_MAX)
        return;
    gp_dra_node_view *copy = NULL;
    if (v && v->ngpus > 0) {
        copy = xcalloc(1, sizeof *copy);
        copy->ngpus = v->ngpus > GP_MAX_GPUS_PER_NODE ? GP_MAX_GPUS_PER_NODE : v->ngpus;
        copy->gpus = xmalloc((size_t)copy->ngpus * sizeof *copy->gpus);
        memcpy(copy->gpus, v->gpus, (size_t)copy->ngpus * sizeof *copy->gpus);
        copy->nholders = v->nholders;
        copy->holders = xmalloc((size_t)(v->nholders ? v->nholders : 1) * sizeof *copy->holders);
        if (v->nholders)
            memcpy(copy->holders, v->holders, (size_t)v->nholders * sizeof *copy->holders);
    }
    wrlock(c);
    gp_dra_node_view *old_view = strmap_del(c->dra, name);
    cluster_dra_view_free(old_view);
    free(old_view);
    if (copy)
        strmap_put(c->dra, name, copy);
    node_ent *old = strmap_get(c->nodes, name);
    if (old) {
        gp_gpu_info inv[GP_MAX_GPUS_PER_NODE];
        for (int i = 0; i < old->ninv; i++)
            inv[i] = old->node.gpus[i].info;
        node_ent *e = ent_build(c, name, old->inv_source, old->node.cpu_alloc_milli,
                                old->node.host_mem_alloc_mib, inv, old->ninv);
        e->gen = old->gen;
        strmap_put(c->nodes, e->node.name, e);
        ent_adopt(c, e, old);
        /* pods whose claims the view now holds: their predicted GPUs go */
        size_t n = 0;
        pod_rec **settled = xmalloc((e->npods ? e->npods : 1) * sizeof *settled);
        for (size_t i = 0; copy && i < e->npods; i++)
            if (e->pods[i]->dra && e->pods[i]->a->nctrs > 0 && view_holds_pod(copy, e->pods[i]->uid))
                settled[n++] = e->pods[i];
        for (size_t i = 0; i < n; i++)
            dra_pod_settled(c, settled[i]);
        free(settled);
        reconcile_for(c, name);
    }
    cluster_unlock(c);
}

/* --------------------------------------------------------------- pods -- */

/* The maxNamespaceShare rule, shared by filter and bind. GPUs the pod adds
 * that the namespace already holds are not told apart: the pod's GPUs all
 * count as new (conservative). */
static int ns_share_check(const gp_cluster *c, const gp_node *node, const char *ns,
                          const gp_assignment *a, double cap_share, char *why, size_t whylen)
{
    if (cap_share <= 0 || node->ngpus <= 0)
        return 0;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    int held = cluster_rd_ns_gpus(c, node->name, ns);
    int cap = (int)(cap_share * node->ngpus + 1e-9);
    if (held + nh <= cap)
        return 0;
    snprintf(why, whylen, "namespace %.60s would hold %d of %d GPU%s, the policy allows %d", ns,
             held + nh, node->ngpus, gp_s(node->ngpus), cap);
    return -1;
}

int cluster_rd_ns_share_check(const gp_cluster *c, const gp_node *node, const char *ns,
                              const gp_assignment *a, double cap_share, char *why, size_t whylen)
{
    return ns_share_check(c, node, ns, a, cap_share, why, whylen);
}

int cluster_place_and_assume(gp_cluster *c, const char *node, const gp_pod_req *req,
                             const gp_place_opts *opts, double ns_share_cap, const char *policy,
                             gp_pod_state state, gp_assignment *out, gp_err *err)
{
    int rc = -1;
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, req->uid);
    if (r && r->reserved_until > 0 && strcmp(r->a->node, node) != 0) {
        pod_remove(c, r);   /* kube-scheduler chose another node than reserved */
        r = NULL;
    }
    if (r) {
        if (r->reserved_until > 0) {   /* the bind takes the reservation over */
            r->reserved_until = 0;
            r->assumed_at = gp_mono_s();
            r->state = state;
            r->phase = GP_PHASE_IN_FLIGHT;
            r->phase_at = r->assumed_at;
        }
        if (strcmp(r->a->node, node) != 0) {
            gp_fail(err, "pod %s/%s already holds GPUs on node %s", req->ns, req->name,
                    r->a->node);
            goto out;
        }
        held_out(r->a, out);
        rc = 0;
        goto out;
    }
    node_ent *e = strmap_get(c->nodes, node);
    if (!e) {
        gp_fail(err, "node %s is not known to gpupack", node);
        goto out;
    }
    if (req->dra && view_holds_pod(strmap_get(c->dra, node), req->uid)) {
        /* its claims already count (allocated before this bind): no GPUs of its own */
        memset(out, 0, sizeof *out);
        gp_strlcpy(out->node, node, sizeof out->node);
        pod_add(c, req->uid, req->ns, req->name, policy, out, state, NULL, 0, req->cpu_milli,
                req->host_mem_mib);
        rc = 0;
        goto out;
    }
    gp_fit_fail why;
    gp_node *scratch = c->nclaims ? xmalloc(gp_node_size(e->node.ngpus)) : NULL;
    int fit = placement_fit(node_view(c, e, req, scratch), req, opts, out, &why);
    free(scratch);
    if (fit) {
        gp_fail(err, "pod %s/%s no longer fits node %s: %s", req->ns, req->name, node, why.reason);
        goto out;
    }
    char nswhy[200];
    if (ns_share_check(c, &e->node, req->ns, out, ns_share_cap, nswhy, sizeof nswhy)) {
        gp_fail(err, "pod %s/%s no longer fits node %s: %s", req->ns, req->name, node, nswhy);
        goto out;
    }
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    gp_gpu_ref refs[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(out, holds);
    for (int h = 0; h < nh; h++) {
        int pos = gp_node_gpu_pos(&e->node, holds[h].index);
        refs[h].index = holds[h].index;
        gp_strlcpy(refs[h].uuid, pos >= 0 ? e->node.gpus[pos].info.uuid : "", sizeof refs[h].uuid);
    }
    {
        pod_rec *nr = pod_add(c, req->uid, req->ns, req->name, policy, out, state, refs, nh,
                              req->cpu_milli, req->host_mem_mib);
        if (req->dra) {   /* counted again as the allocator's, in flight */
            detach(c, nr);
            nr->dra = true;
            attach(c, nr);
        }
    }
    claim_drop(c, req->uid);   /* its own hold replaces what was claimed for it */
    if (req->owner[0])
        held_drop(c, req->owner, node);   /* a replacement: its held place has served */
    rc = 0;
out:
    cluster_unlock(c);
    return rc;
}

int cluster_reserve(gp_cluster *c, const char *node, const gp_pod_req *req,
                    const gp_place_opts *opts, double ns_share_cap, const char *policy,
                    double ttl_s, gp_assignment *out, gp_err *err)
{
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, req->uid);
    if (r && r->reserved_until > 0)
        pod_remove(c, r);
    else if (r) {
        cluster_unlock(c);
        return gp_fail(err, "pod %s/%s is already being bound", req->ns, req->name);
    }
    cluster_unlock(c);
    if (cluster_place_and_assume(c, node, req, opts, ns_share_cap, policy, GP_POD_ASSUMED, out, err))
        return -1;
    wrlock(c);
    r = strmap_get(c->pods, req->uid);
    if (r && r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_IN_FLIGHT)
        r->reserved_until = gp_mono_s() + (ttl_s > 0 ? ttl_s : 0) + 1e-9;
    cluster_unlock(c);
    return 0;
}

void cluster_unreserve(gp_cluster *c, const char *uid)
{
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, uid);
    if (r && r->reserved_until > 0 && r->state == GP_POD_ASSUMED)
        pod_remove(c, r);
    cluster_unlock(c);
}

/* An ASSUMED pod's Binding outcome (the store's lock held). */
static void apply_outcome(gp_cluster *c, pod_rec *r, gp_bind_outcome outcome)
{
    switch (outcome) {
    case GP_BIND_BOUND:
        set_phase(r, GP_PHASE_ACCEPTED);
        break;
    case GP_BIND_UNKNOWN:
        /* an accepted Binding stays accepted whatever a retry meets */
        if (r->phase != GP_PHASE_ACCEPTED)
            set_phase(r, GP_PHASE_UNKNOWN);
        break;
    case GP_BIND_REFUSED:
        /* a retried bind that is refused must not undo an earlier one that landed */
        if (r->phase != GP_PHASE_ACCEPTED)
            pod_remove(c, r);
        break;
    }
}

void cluster_bind_outcome(gp_cluster *c, const char *uid, gp_bind_outcome outcome)
{
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, uid);
    if (r && r->state == GP_POD_ASSUMED)
        apply_outcome(c, r, outcome);
    cluster_unlock(c);
}

void cluster_settle(gp_cluster *c, const gp_unsettled *u, gp_bind_outcome outcome)
{
    wrlock(c);
    pod_rec *r = strmap_get(c->pods, u->uid);
    /* only about the Binding whose answer was lost: a retry that posted again
     * since (attempt moved on) decides by its own answer */
    if (r && r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_UNKNOWN && r->attempt == u->attempt)
        apply_outcome(c, r, outcome);
    cluster_unlock(c);
}

void cluster_forget(gp_cluster *c, const char *uid)
{
    cluster_bind_outcome(c, uid, GP_BIND_REFUSED);
}

size_t cluster_unsettled(gp_cluster *c, double min_age_s, gp_unsettled *out, size_t max)
{
    size_t n = 0, it = 0;
    double cutoff = gp_mono_s() - min_age_s;
    pod_rec *r;
    cluster_rdlock(c);
    while (n < max && (r = strmap_next(c->pods, &it, NULL))) {
        if (r->state != GP_POD_ASSUMED || r->phase != GP_PHASE_UNKNOWN || r->phase_at > cutoff)
            continue;
        gp_unsettled *u = &out[n++];
        u->attempt = r->attempt;
        gp_strlcpy(u->uid, r->uid, sizeof u->uid);
        gp_strlcpy(u->ns, r->ns, sizeof u->ns);
        gp_strlcpy(u->name, r->name, sizeof u->name);
        held_out(r->a, &u->a);
    }
    cluster_unlock(c);
    return n;
}

void cluster_pod_observed(gp_cluster *c, const gp_pod_obs *obs)
{
    if (!obs->uid || !*obs->uid || strlen(obs->uid) >= GP_UID_MAX)
        return;
    wrlock(c);
    if (c->nclaims && (obs->terminal || (obs->node_name && *obs->node_name)))
        claim_drop(c, obs->uid);   /* the claimant was bound (anywhere) or is gone */
    pod_rec *r = strmap_get(c->pods, obs->uid);
    if (obs->terminal) {
        if (r)
            pod_remove(c, r);
        goto out;
    }
    bool bound = obs->assign && obs->node_name && *obs->node_name &&
                 strcmp(obs->assign->node, obs->node_name) == 0;
    if (bound) {
        if (r && held_equal(r->a, obs->assign)) {
            r->state = GP_POD_BOUND;
            r->reserved_until = 0;
            r->gen = c->pod_gen;
            if (obs->policy && *obs->policy)
                names_set(r, r->ns, r->name, obs->policy);
            goto out;
        }
        if (r) {
            LOG_WARN("pod %s/%s: annotations name other GPUs than assumed; following the "
                     "annotations", obs->ns, obs->name);
            pod_remove(c, r);
        }
        pod_add(c, obs->uid, obs->ns, obs->name, obs->policy, obs->assign, GP_POD_BOUND, obs->refs,
                obs->nrefs, obs->cpu_milli, obs->mem_mib);
        reconcile_for(c, obs->assign->node);
        goto out;
    }
    bool host_only = obs->node_name && *obs->node_name && !obs->assign;
    if (r) {
        r->gen = c->pod_gen;
        bool same_host = host_only && r->a->nctrs == 0 && strcmp(r->a->node, obs->node_name) == 0 &&
                         r->cpu_milli == obs->cpu_milli && r->mem_mib == obs->mem_mib;
        if (same_host) {
            r->state = GP_POD_BOUND;
            r->reserved_until = 0;
            goto out;
        }
        bool elsewhere = obs->node_name && *obs->node_name;
        if (r->dra && host_only && r->a->nctrs > 0 && strcmp(r->a->node, obs->node_name) == 0 &&
            !view_holds_pod(strmap_get(c->dra, obs->node_name), r->uid)) {
            /* bound where predicted, its claims not seen allocated yet: the
             * prediction holds their place until they are (cluster_set_dra) */
            r->state = GP_POD_BOUND;
            r->reserved_until = 0;
            goto out;
        }
        bool keep;
        if (r->state == GP_POD_BOUND)
            keep = false;   /* a recorded binding whose pod no longer carries it: the cluster is the truth */
        else if (r->a->nctrs > 0)
            /* GPUs assumed: seen bound without our assignment after our Binding
             * landed or may have landed means ours did not land (a Binding
             * carries the annotations in the same write); one still in flight
             * waits for its own answer */
            keep = !(elsewhere && r->phase != GP_PHASE_IN_FLIGHT);
        else
            keep = !host_only;   /* host-only: assumed until the watch shows it bound */
        if (keep)
            goto out;
        pod_remove(c, r);
    }
    if (host_only && strlen(obs->node_name) < GP_NAME_MAX) {
        gp_assignment a;
        memset(&a, 0, sizeof a);
        gp_strlcpy(a.node, obs->node_name, sizeof a.node);
        pod_add(c, obs->uid, obs->ns, obs->name, obs->policy, &a, GP_POD_BOUND, NULL, 0,
                obs->cpu_milli, obs->mem_mib);
    }
out:
    cluster_unlock(c);
}

void cluster_pods_resync_begin(gp_cluster *c)
{
    wrlock(c);
    c->pod_gen++;
    c->pods_resyncing = true;
    cluster_unlock(c);
}

/* Removes the records `stale` selects, in batches (no map changes while iterating). */
static int sweep_pods(gp_cluster *c, bool (*stale)(const gp_cluster *, const pod_rec *, double),
                      double arg)
{
    int total = 0;
    for (;;) {
        pod_rec *batch[256];
        size_t n = 0, it = 0;
        pod_rec *r;
        while (n < GP_ARRAY_LEN(batch) && (r = strmap_next(c->pods, &it, NULL)))
            if (stale(c, r, arg))
                batch[n++] = r;
        if (n == 0)
            return total;
        for (size_t i = 0; i < n; i++)
            pod_remove(c, batch[i]);
        total += (int)n;
    }
}

static bool unseen_bound(const gp_cluster *c, const pod_rec *r, double unused)
{
    return r->state == GP_POD_BOUND && r->gen != c->pod_gen;
}

static bool assumed_before(const gp_cluster *c, const pod_rec *r, double cutoff)
{
    /* never a Binding that landed or may have landed */
    return r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_IN_FLIGHT && r->assumed_at < cutoff;
}

static bool assumed_or_reserved_before(const gp_cluster *c, const pod_rec *r, double cutoff)
{
    if (r->reserved_until > 0 && r->state == GP_POD_ASSUMED && r->reserved_until <= gp_mono_s())
        return true;
    return r->reserved_until <= 0 && assumed_before(c, r, cutoff);
}

void cluster_pods_resync_end(gp_cluster *c)
{
    wrlock(c);
    int n = sweep_pods(c, unseen_bound, 0);
    if (n)
        LOG_INFO("%d pod%s released: gone after relist", n, gp_s(n));
    /* an accepted Binding whose pod the relist lacks: deleted meanwhile, or
     * listed just before the Binding; a GET will tell (cluster_unsettled) */
    size_t it = 0;
    pod_rec *r;
    while ((r = strmap_next(c->pods, &it, NULL)))
        if (r->state == GP_POD_ASSUMED && r->phase == GP_PHASE_ACCEPTED && r->gen != c->pod_gen)
            set_phase(r, GP_PHASE_UNKNOWN);
    c->pods_resyncing = false;
    reconcile_all(c);   /* the listed pods against what was assumed before the LIST */
    cluster_unlock(c);
}

int cluster_expire_assumed(gp_cluster *c, double ttl_s)
{
    wrlock(c);
    int n = sweep_pods(c, assumed_or_reserved_before, gp_mono_s() - ttl_s);
    cluster_unlock(c);
    if (n)
        LOG_WARN("%d assumed pods expired: never seen bound within %.0f s", n, ttl_s);
    return n;
}

/* ------------------------------------------------------------ reading -- */

const gp_node *cluster_rd_node(const gp_cluster *c, const char *name)
{
    node_ent *e = strmap_get(c->nodes, name);
    return e ? &e->node : NULL;
}

const gp_node *cluster_rd_node_at(const gp_cluster *c, size_t *iter)
{
    node_ent *e = strmap_next(c->nodes, iter, NULL);
    return e ? &e->node : NULL;
}

size_t cluster_rd_node_count(const gp_cluster *c)
{
    return strmap_count(c->nodes);
}

int cluster_rd_ns_gpus(const gp_cluster *c, const char *node, const char *ns)
{
    node_ent *e = strmap_get(c->nodes, node);
    if (!e)
        return 0;
    bool held[GP_MAX_GPUS_PER_NODE] = {false};
    int n = 0;
    for (size_t i = 0; i < e->npods; i++) {
        if (strcmp(e->pods[i]->ns, ns) != 0)
            continue;
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int nh = held_holds(e->pods[i]->a, holds);
        for (int h = 0; h < nh; h++) {
            int pos = hold_pos(&e->node, e->pods[i], holds[h].index);
            if (pos >= 0 && !held[pos]) {
                held[pos] = true;
                n++;
            }
        }
    }
    return n;
}

int cluster_pod_get(gp_cluster *c, const char *uid, gp_assignment *out, gp_pod_state *state)
{
    int rc = -1;
    cluster_rdlock(c);
    pod_rec *r = strmap_get(c->pods, uid);
    if (r) {
        held_out(r->a, out);
        if (state)
            *state = r->state;
        rc = 0;
    }
    cluster_unlock(c);
    return rc;
}

void cluster_stats(gp_cluster *c, gp_cluster_stats *s)
{
    memset(s, 0, sizeof *s);
    for (int w = 0; w < 2; w++) {
        s->lock_waits[w] = atomic_load(&c->waits[w]);
        s->lock_wait_s[w] = (double)atomic_load(&c->wait_ns[w]) / 1e9;
    }
    cluster_rdlock(c);
    size_t it = 0;
    node_ent *e;
    while ((e = strmap_next(c->nodes, &it, NULL))) {
        s->nodes++;
        for (int i = 0; i < e->node.ngpus; i++) {
            const gp_gpu *g = &e->node.gpus[i];
            s->gpus++;
            if (gpu_over(g))
                s->gpus_over++;
            if (!g->info.healthy)
                continue;
            s->mem_total += g->info.mem_total;
            s->mem_used += g->mem_used;
            s->core_total += g->info.core_total;
            s->core_used += g->core_used;
            if (g->dra.order > 0) {
                s->dra_gpus++;
                s->dra_mem_total += g->dra.mem_total;
                s->dra_mem_used += g->dra.mem_used;
                s->dra_claims += g->dra.claims;
            }
        }
    }
    s->truth = c->truth;
    it = 0;
    pod_rec *r;
    while ((r = strmap_next(c->pods, &it, NULL))) {
        if (r->a->nctrs == 0)
            continue;   /* host-only pods: counted for CPU, not GPU pods */
        if (r->state == GP_POD_BOUND)
            s->pods_bound++;
        else
            s->pods_assumed++;
        if (r->missing)
            s->pods_gpu_missing++;
    }
    cluster_unlock(c);
}

/* ------------------------------------------------------------ inspect -- */

/* /inspect is written straight as JSON text: a 5,000-node answer would be
 * hundreds of thousands of jansson objects built and freed for each call
 * (the /ui page and the soak's checker ask every few seconds). */

/* A per-mille share as percent: an integer when whole. */
static void w_percent(gp_buf *b, int permille)
{
    if (permille % 10 == 0)
        gp_buf_printf(b, "%d", permille / 10);
    else
        gp_buf_printf(b, "%.17g", permille / 10.0);
}

/* ,"key": */
static void w_key(gp_buf *b, bool first, const char *key)
{
    if (!first)
        jsonw_raw(b, ",");
    jsonw_str(b, key);
    jsonw_raw(b, ":");
}

static void w_kstr(gp_buf *b, bool first, const char *key, const char *v)
{
    w_key(b, first, key);
    jsonw_str(b, v ? v : "");
}

static void w_kint(gp_buf *b, bool first, const char *key, long long v)
{
    w_key(b, first, key);
    gp_buf_printf(b, "%lld", v);
}

/* The claims that sit on GPU `index` of node n: "reservations", none when empty. */
static void w_claims(const gp_cluster *c, const gp_node *n, int index, bool uids, gp_buf *b)
{
    double now = gp_mono_s();
    bool any = false;
    for (size_t i = 0; i < c->nclaims; i++) {
        const gp_claim *cl = c->claims[i];
        if (strcmp(cl->a.node, n->name) != 0)
            continue;
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int nh = gp_assignment_holds(&cl->a, holds);
        for (int h = 0; h < nh; h++) {
            if (holds[h].index != index)
                continue;
            jsonw_raw(b, any ? ",{" : ",\"reservations\":[{");
            any = true;
            w_kstr(b, true, "namespace", cl->ns);
            w_kstr(b, false, "name", cl->name);
            if (uids)
                w_kstr(b, false, "uid", cl->uid);
            w_kint(b, false, "priority", cl->priority);
            w_kint(b, false, "memMiB", holds[h].mem_mib);
            w_key(b, false, "corePercent");
            w_percent(b, holds[h].core);
            w_kint(b, false, "ageSeconds", (int)(now - cl->created));
            jsonw_raw(b, "}");
        }
    }
    if (any)
        jsonw_raw(b, "]");
}

/* What DRA says of GPU g: the device, what the allocated claims hold, and
 * each claim with the pod it is reserved for. */
static void w_dra(const gp_cluster *c, const gp_node *n, const gp_gpu *g, bool uids, gp_buf *b)
{
    const gp_dra_node_view *v = strmap_get(c->dra, n->name);
    const char *driver = NULL, *pool = NULL, *device = NULL;
    for (int k = 0; v && k < v->ngpus; k++)
        if (v->gpus[k].dra.order == g->dra.order)
            driver = v->gpus[k].driver, pool = v->gpus[k].pool, device = v->gpus[k].device;
    jsonw_raw(b, ",\"dra\":{");
    bool first = true;
    if (device) {
        w_kstr(b, true, "driver", driver);
        w_kstr(b, false, "pool", pool);
        w_kstr(b, false, "device", device);
        first = false;
    }
    w_key(b, first, "onlyDRA");
    jsonw_raw(b, g->dra.only ? "true" : "false");
    w_key(b, false, "shared");
    jsonw_raw(b, g->dra.multi ? "true" : "false");
    gp_buf_printf(b, ",\"memoryMiB\":{\"usedByClaims\":%lld,\"published\":%lld},\"claims\":[",
                  (long long)g->dra.mem_used, (long long)g->dra.mem_total);
    bool any = false;
    for (int k = 0; v && k < v->ngpus; k++) {
        if (v->gpus[k].dra.order != g->dra.order)
            continue;
        for (int h = 0; h < v->nholders; h++) {
            const gp_dra_holder *d = &v->holders[h];
            if (d->gpu != k)
                continue;
            jsonw_raw(b, any ? ",{" : "{");
            any = true;
            w_kstr(b, true, "namespace", d->claim_ns);
            w_kstr(b, false, "claim", d->claim);
            w_kstr(b, false, "pod", d->pod);
            if (uids)
                w_kstr(b, false, "podUID", d->pod_uid);
            w_kint(b, false, "memMiB", d->mem_mib);
            w_key(b, false, "corePercent");
            w_percent(b, d->core);
            jsonw_raw(b, "}");
        }
    }
    jsonw_raw(b, "]}");
}

static void w_node(const gp_cluster *c, const node_ent *e, bool uids, gp_buf *b)
{
    static const char *const phases[] = {[GP_PHASE_IN_FLIGHT] = "in-flight",
                                         [GP_PHASE_ACCEPTED] = "accepted",
                                         [GP_PHASE_UNKNOWN] = "unknown"};
    const gp_node *n = &e->node;
    jsonw_raw(b, "{");
    w_kstr(b, true, "name", n->name);
    w_kstr(b, false, "source", n->source);
    jsonw_raw(b, ",\"gpus\":[");
    for (int i = 0; i < n->ngpus; i++) {
        const gp_gpu *g = &n->gpus[i];
        jsonw_raw(b, i ? ",{" : "{");
        w_kint(b, true, "index", g->info.index);
        w_kstr(b, false, "uuid", g->info.uuid);
        w_kstr(b, false, "model", gp_model_name(g->info.model));
        w_key(b, false, "healthy");
        jsonw_raw(b, g->info.healthy ? "true" : "false");
        gp_buf_printf(b, ",\"memoryMiB\":{\"used\":%lld,\"total\":%lld},\"corePercent\":{\"used\":",
                      (long long)g->mem_used, (long long)g->info.mem_total);
        w_percent(b, g->core_used);
        jsonw_raw(b, ",\"total\":");
        w_percent(b, g->info.core_total);
        jsonw_raw(b, "}");
        if (gpu_over(g))   /* the annotations over-fill it: nothing is offered here */
            jsonw_raw(b, ",\"overCapacity\":true");
        jsonw_raw(b, ",\"pods\":[");
        bool any = false;
        for (size_t p = 0; p < e->npods; p++) {
            const pod_rec *r = e->pods[p];
            gp_hold holds[GP_MAX_GPUS_PER_NODE];
            int nh = held_holds(r->a, holds);
            for (int h = 0; h < nh; h++) {
                if (hold_pos(n, r, holds[h].index) != i)
                    continue;
                jsonw_raw(b, any ? ",{" : "{");
                any = true;
                w_kstr(b, true, "namespace", r->ns);
                w_kstr(b, false, "name", r->name);
                if (uids)   /* what a forged bind needs: shown only when asked */
                    w_kstr(b, false, "uid", r->uid);
                w_kstr(b, false, "state", r->state == GP_POD_BOUND ? "bound" : "assumed");
                if (r->state == GP_POD_ASSUMED)
                    w_kstr(b, false, "binding", phases[r->phase]);
                w_kstr(b, false, "policy", r->policy);
                w_kint(b, false, "memMiB", holds[h].mem_mib);
                w_key(b, false, "corePercent");
                w_percent(b, holds[h].core);
                jsonw_raw(b, "}");
            }
        }
        jsonw_raw(b, "]");
        if (g->dra.order > 0)
            w_dra(c, n, g, uids, b);
        if (c->nclaims)   /* share held for a preemptor while its victims terminate */
            w_claims(c, n, g->info.index, uids, b);
        jsonw_raw(b, "}");
    }
    jsonw_raw(b, "]");
    /* holds whose GPU is gone: counted nowhere, shown here */
    bool any = false;
    for (size_t p = 0; p < e->npods; p++) {
        const pod_rec *r = e->pods[p];
        if (!r->missing)
            continue;
        gp_hold holds[GP_MAX_GPUS_PER_NODE];
        int nh = held_holds(r->a, holds);
        for (int h = 0; h < nh; h++) {
            if (hold_pos(n, r, holds[h].index) >= 0)
                continue;
            const char *uuid = "";
            for (int k = 0; k < r->nrefs; k++)
                if (r->refs[k].index == holds[h].index)
                    uuid = r->refs[k].uuid;
            jsonw_raw(b, any ? ",{" : ",\"missingGPUs\":[{");
            any = true;
            w_kstr(b, true, "namespace", r->ns);
            w_kstr(b, false, "name", r->name);
            if (uids)
                w_kstr(b, false, "uid", r->uid);
            w_kint(b, false, "index", holds[h].index);
            w_kstr(b, false, "uuid", uuid);
            w_kint(b, false, "memMiB", holds[h].mem_mib);
            jsonw_raw(b, "}");
        }
    }
    if (any)
        jsonw_raw(b, "]");
    jsonw_raw(b, "}");
}

static int cmp_ent(const void *a, const void *b)
{
    const node_ent *x = *(node_ent *const *)a, *y = *(node_ent *const *)b;
    return strcmp(x->node.name, y->node.name);
}

int cluster_inspect_write(gp_cluster *c, const char *node, bool uids, gp_buf *out)
{
    cluster_rdlock(c);
    if (node) {
        node_ent *e = strmap_get(c->nodes, node);
        if (e) {
            jsonw_raw(out, "{\"node\":");
            w_node(c, e, uids, out);
            jsonw_raw(out, "}");
        }
        cluster_unlock(c);
        return e ? 0 : -1;
    }
    size_t n = strmap_count(c->nodes), it = 0, k = 0;
    node_ent **all = xmalloc((n ? n : 1) * sizeof *all);
    node_ent *e;
    while ((e = strmap_next(c->nodes, &it, NULL)))
        all[k++] = e;
    qsort(all, k, sizeof *all, cmp_ent);
    jsonw_raw(out, "{\"nodes\":[");
    for (size_t i = 0; i < k; i++) {
        if (i)
            jsonw_raw(out, ",");
        w_node(c, all[i], uids, out);
    }
    jsonw_raw(out, "]}");
    free(all);
    cluster_unlock(c);
    return 0;
}

json_t *cluster_inspect(gp_cluster *c, const char *node)
{
    gp_buf b;
    gp_buf_init(&b, CLUSTER_INSPECT_MAX);
    json_t *out = NULL;
    if (cluster_inspect_write(c, node, true, &b) == 0 && !gp_buf_failed(&b)) {
        json_error_t jerr;
        out = json_loadb(b.data, b.len, 0, &jerr);
        if (!out)   /* the writer's own text: a bug, not an input */
            LOG_ERROR("/inspect: the JSON written does not parse: %s (offset %d)", jerr.text,
                      jerr.position);
    }
    gp_buf_free(&b);
    return out;
}
