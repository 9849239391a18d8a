/* sim.c -- trace replay through gpupack's placement code: the reference protocol,
 * the two deployment modes, and the reports of `gpupack simulate`. */
#include "sim/sim.h"
#include "sim/sim_plot.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "sim/kubesim.h"
#include "pack/consolidate.h"
#include "policy/policy.h"
#include "policy/policy_store.h"
#include "lib/cpus.h"
#include "lib/flags.h"

/* ---------------------------------------------------------------- rng -- */

/* splitmix64: small, fast, good enough to shuffle and break ties. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}

/* ------------------------------------------------------------- state -- */

#define SCORE_EPS 1e-9   /* raw scores closer than this are a tie */

typedef struct cache_ent {
    uint32_t ver;        /* node version it was computed at; 0 = empty */
    int8_t fit;
    double raw;
} cache_ent;

/* What a placed pod holds, to release it on departure. */
typedef struct placed {
    int node;            /* -1 = not placed */
    int ngpus;
    gp_hold holds[GP_MAX_GPUS_PER_CTR];
} placed;

/* kube-scheduler's accounting of a node (NodeInfo.Requested / NonZeroRequested). */
typedef struct kacct {
    int64_t cpu_alloc, mem_alloc;   /* milli-CPU, MiB */
    int64_t cpu_req, mem_req;       /* sum of pod requests */
    int64_t cpu_nz, mem_nz;         /* same with kube's defaults for absent requests */
} kacct;

typedef struct run {
    const sim_config *cfg;
    kacct *ka;
    size_t start;        /* kube mode: nextStartNodeIndex */
    bool blind;          /* gpupack's nodes carry no CPU/memory */
    rng r;
    gp_node *nodes;
    uint32_t *ver;
    size_t nn;
    int *cls;            /* pod row -> class (identical requests) */
    int ncls;
    cache_ent *cache;    /* nn x ncls */
    bool cache_on;
    double *raw;         /* per node scratch */
    int *fits;           /* indices of fitting nodes */
    int *norm;
    int64_t cap_milli;
    int gpus;
    int64_t alloc_milli;
} run;

/* Capacity of a node list: GPUs and GPU share (milli). */
static void sim_capacity(const trace_node *nodes, size_t n, int *gpus, int64_t *milli)
{
    int g = 0;
    for (size_t i = 0; i < n; i++)
        g += nodes[i].gpus;
    *gpus = g;
    *milli = (int64_t)g * GP_CORE_FULL;
}

/* Pods with identical requests share placement results on an unchanged node. */
static int classify(const trace_pod *pods, size_t n, int *cls)
{
    typedef struct key {
        int64_t cpu, mem;
        int ng, milli;
        const char *spec;
    } key;
    size_t cap = 256, nk = 0;
    key *k = xmalloc(cap * sizeof *k);
    /* open-addressing hash of keys -> class */
    size_t hcap = 1;
    while (hcap < 2 * n + 16)
        hcap <<= 1;
    int *h = xmalloc(hcap * sizeof *h);
    for (size_t i = 0; i < hcap; i++)
        h[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const trace_pod *p = &pods[i];
        uint64_t x = UINT64_C(1469598103934665603);
        x = (x ^ (uint64_t)p->cpu_milli) * UINT64_C(1099511628211);
        x = (x ^ (uint64_t)p->mem_mib) * UINT64_C(1099511628211);
        x = (x ^ (uint64_t)p->num_gpu) * UINT64_C(1099511628211);
        x = (x ^ (uint64_t)p->gpu_milli) * UINT64_C(1099511628211);
        for (const char *s = p->gpu_spec; *s; s++)
            x = (x ^ (unsigned char)*s) * UINT64_C(1099511628211);
        size_t slot = (size_t)(x & (hcap - 1));
        for (;;) {
            int c = h[slot];
            if (c < 0) {
                if (nk == cap) {
                    cap *= 2;
                    k = xrealloc(k, cap * sizeof *k);
                }
                k[nk] = (key){p->cpu_milli, p->mem_mib, p->num_gpu, p->gpu_milli, p->gpu_spec};
                h[slot] = (int)nk;
                cls[i] = (int)nk++;
                break;
            }
            if (k[c].cpu == p->cpu_milli && k[c].mem == p->mem_mib && k[c].ng == p->num_gpu &&
                k[c].milli == p->gpu_milli && strcmp(k[c].spec, p->gpu_spec) == 0) {
                cls[i] = c;
                break;
            }
            slot = (slot + 1) & (hcap - 1);
        }
    }
    free(h);
    free(k);
    return (int)nk;
}

/* kube-scheduler's NodeResourcesFit filter, for the two resources the trace has. */
static bool kube_fits(const kacct *n, const trace_pod *p)
{
    if (n->cpu_req + p->cpu_milli > n->cpu_alloc)
        return false;
    if (n->mem_req + p->mem_mib > n->mem_alloc)
        return false;
    return true;
}

/* A trace pod's CPU and memory as kube's scoring counts them: an absent
 * (zero) request counts as 100m / 200 MiB (schedutil.GetRequestForResource). */
static int64_t nz_cpu(const trace_pod *p)
{
    return p->cpu_milli ? p->cpu_milli : KUBESIM_DEFAULT_MILLI_CPU;
}

static int64_t nz_mem(const trace_pod *p)
{
    return p->mem_mib ? p->mem_mib : KUBESIM_DEFAULT_MEMORY_MIB;
}

/* kube-scheduler's LeastAllocated score (NodeResourcesFit, CPU and memory
 * weighted 1:1), 0..100, integer arithmetic as kube-scheduler does it. */
static int64_t least_allocated(const kacct *n, const trace_pod *p)
{
    int64_t s = 0;
    int64_t a = n->cpu_alloc, r = n->cpu_req + p->cpu_milli;
    if (a > 0 && r <= a)
        s += (a - r) * 100 / a;
    a = n->mem_alloc;
    r = n->mem_req + p->mem_mib;
    if (a > 0 && r <= a)
        s += (a - r) * 100 / a;
    return s / 2;
}

/* Fit and raw score of pod row `pi` on node `ni`, through placement's code
 * (memoised per node version and pod class when that is exact). */
static bool node_eval(run *R, size_t ni, size_t pi, const gp_pod_req *req, double *raw)
{
    cache_ent *e = NULL;
    if (R->cache_on) {
        e = &R->cache[ni * (size_t)R->ncls + (size_t)R->cls[pi]];
        if (e->ver == R->ver[ni]) {
            *raw = e->raw;
            return e->fit;
        }
    }
    gp_assignment a;
    bool fit = placement_fit(&R->nodes[ni], req, &R->cfg->place, &a, NULL) == 0;
    double s = fit ? placement_node_score(&R->nodes[ni], req, &a, &R->cfg->place) : 0.0;
    if (e) {
        e->ver = R->ver[ni];
        e->fit = fit;
        e->raw = s;
    }
    *raw = s;
    return fit;
}

/* Picks among R->fits[0..nf) the index with the highest key, ties by RNG. */
static int pick_max_i64(run *R, const int *idx, int nf, const int64_t *key)
{
    int best = -1, ties = 0;
    for (int k = 0; k < nf; k++) {
        if (best < 0 || key[k] > key[best]) {
            best = k;
            ties = 1;
        } else if (key[k] == key[best]) {
            ties++;
            if (rng_below(&R->r, (uint64_t)ties) == 0)
                best = k;
        }
    }
    return best < 0 ? -1 : idx[best];
}

/* Chooses a node for the pod, or -1. */
static int choose_node(run *R, size_t pi, const gp_pod_req *req)
{
    const sim_config *c = R->cfg;
    const trace_pod *p = &c->pods[pi];
    int nf = 0;
    bool kube_only = p->num_gpu == 0 && c->cpu_pods == SIM_CPU_PODS_KUBE;
    for (size_t i = 0; i < R->nn; i++) {
        const gp_node *n = &R->nodes[i];
        if (!kube_fits(&R->ka[i], p))
            continue;
        if (p->num_gpu > n->ngpus)
            continue;   /* placement_fit would say the same, only slower */
        double s = 0;
        if (!kube_only && !node_eval(R, i, pi, req, &s))
            continue;
        R->fits[nf] = (int)i;
        R->raw[nf] = s;
        nf++;
    }
    if (nf == 0)
        return -1;
    int64_t *key = xmalloc((size_t)nf * sizeof *key);
    int chosen;
    if (kube_only) {
        for (int k = 0; k < nf; k++)
            key[k] = least_allocated(&R->ka[R->fits[k]], p);
        chosen = pick_max_i64(R, R->fits, nf, key);
    } else if (c->mode == SIM_MODE_PRIORITIZE) {
        placement_normalize(R->raw, nf, R->norm);
        for (int k = 0; k < nf; k++)
            key[k] = least_allocated(&R->ka[R->fits[k]], p) +
                     (int64_t)R->norm[k] * c->weight * 10;
        chosen = pick_max_i64(R, R->fits, nf, key);
    } else {
        double best = -INFINITY;
        for (int k = 0; k < nf; k++)
            if (R->raw[k] > best)
                best = R->raw[k];
        int nt = 0;
        for (int k = 0; k < nf; k++) {
            if (R->raw[k] >= best - SCORE_EPS) {
                R->fits[nt] = R->fits[k];
                key[nt] = c->ties == SIM_TIES_KUBE ? least_allocated(&R->ka[R->fits[k]], p) : 0;
                nt++;
            }
        }
        chosen = pick_max_i64(R, R->fits, nt, key);
    }
    free(key);
    return chosen;
}

/* ------------------------------------------------------ kube-scheduler -- */

/* What a GPU trace pod asks kube-scheduler for (a CPU-only pod asks none). */
static const char *const gpu_resources[] = {"gpupack.io/gpu-mem", "gpupack.io/gpu-core",
                                            "gpupack.io/gpu-count"};

/* kube's (allocatable, requested-with-pod) of one scoring resource; (0, 0)
 * for resources the trace has no notion of. */
static void kube_resource(const kacct *n, const trace_pod *p, const char *name, bool nonzero,
                          int64_t *alloc, int64_t *req)
{
    *alloc = 0;
    *req = 0;
    if (strcmp(name, "cpu") == 0) {
        *alloc = n->cpu_alloc;
        *req = nonzero ? n->cpu_nz + nz_cpu(p) : n->cpu_req + p->cpu_milli;
    } else if (strcmp(name, "memory") == 0) {
        *alloc = n->mem_alloc;
        *req = nonzero ? n->mem_nz + nz_mem(p) : n->mem_req + p->mem_mib;
    }
}

/* The score plugins that vary between trace nodes: NodeResourcesFit (on
 * NonZeroRequested) and NodeResourcesBalancedAllocation (on Requested), each
 * times its weight. TaintToleration, NodeAffinity, PodTopologySpread,
 * InterPodAffinity and ImageLocality give every trace node the same score. */
static int64_t kube_plugin_score(const schedcfg *k, const kacct *n, const trace_pod *p)
{
    int64_t req[SCHEDCFG_MAX_RES], alloc[SCHEDCFG_MAX_RES], total = 0;
    if (k->w_fit > 0) {
        for (int i = 0; i < k->nfit_res; i++)
            kube_resource(n, p, k->fit_res[i].name, true, &alloc[i], &req[i]);
        total += k->w_fit * kubesim_fit_score(k, req, alloc);
    }
    if (k->w_bal > 0) {
        for (int i = 0; i < k->nbal_res; i++)
            kube_resource(n, p, k->bal_res[i].name, false, &alloc[i], &req[i]);
        total += k->w_bal * kubesim_balanced_score(req, alloc, k->nbal_res);
    }
    return total;
}

/* One scheduling cycle of kube-scheduler v1.26 with gpupack as its extender
 * (schedule_one.go: findNodesThatPassFilters, findNodesThatPassExtenders,
 * prioritizeNodes, selectHost). gpupack answers as src/sched/extender.c does:
 * filter keeps the nodes the pod fits (in nodeDecision: filter only the first
 * best one, reserved), prioritize normalises raw scores 0..10; gpupack decides
 * CPU-only pods the same way when it knows host CPU (extender_cpu), else
 * they pass every node and score 0. Returns the node or -1. */
static int choose_node_kube(run *R, size_t pi, const gp_pod_req *req)
{
    const sim_config *c = R->cfg;
    const schedcfg *k = c->kube;
    const trace_pod *p = &c->pods[pi];
    bool gpu = p->num_gpu > 0;
    int nres = gpu ? (int)GP_ARRAY_LEN(gpu_resources) : 0;
    int nall = (int)R->nn;
    if (nall == 0)
        return -1;
    /* NodeResourcesFit filter: no node advertises gpupack's resources (a
     * pod asking through claims asks none) */
    for (int i = 0; i < nres && !c->dra; i++)
        if (kubesim_checks_resource(k, gpu_resources[i])) {
            R->start = (R->start + R->nn) % R->nn;   /* every node was examined */
            return -1;
        }
    int want = kubesim_num_feasible(k->pct, nall), nf = 0;
    size_t processed = 0;
    for (int i = 0; i < nall && nf < want; i++) {
        size_t ni = (R->start + (size_t)i) % R->nn;
        processed++;
        double unused;
        /* DRA's Filter: the allocator finds devices for the claims there */
        if (kube_fits(&R->ka[ni], p) &&
            (!c->dra || !gpu || (p->num_gpu <= R->nodes[ni].ngpus && node_eval(R, ni, pi, req, &unused))))
            R->fits[nf++] = (int)ni;
    }
    R->start = (R->start + processed) % R->nn;
    /* gpupack decides GPU pods, and CPU-only pods too when it knows host CPU */
    bool ours = k->has_extender && (gpu || c->extender_cpu) &&
                kubesim_interested(k, gpu_resources, nres);
    bool evaluated = false;
    if (ours && k->ext_filter) {
        int nk = 0;
        double best = -INFINITY;
        for (int i = 0; i < nf; i++) {
            double s = 0;
            if (p->num_gpu > R->nodes[R->fits[i]].ngpus ||
                !node_eval(R, (size_t)R->fits[i], pi, req, &s))
                continue;
            R->fits[nk] = R->fits[i];
            R->raw[nk++] = s;
            if (s > best)
                best = s;
        }
        nf = nk;
        if (c->mode == SIM_MODE_FILTER) {
            /* the first best node in kube-scheduler's order, reserved at
             * filter time (extender.c reserve_one): the only node passed on */
            for (int i = 0; i < nf; i++)
                if (R->raw[i] >= best - 1e-12)
                    return R->fits[i];
        }
        evaluated = true;
    }
    if (nf <= 1)
        return nf == 1 ? R->fits[0] : -1;
    int64_t *key = xmalloc((size_t)nf * sizeof *key);
    for (int i = 0; i < nf; i++)
        key[i] = kube_plugin_score(k, &R->ka[R->fits[i]], p);
    if (ours && k->ext_prioritize) {
        /* the live extender normalises over the nodes the pod fits; the others score 0 */
        double *raw = xmalloc((size_t)nf * sizeof *raw);
        bool *fit = xmalloc((size_t)nf * sizeof *fit);
        int nk = 0;
        for (int i = 0; i < nf; i++) {
            double s = evaluated ? R->raw[i] : 0;
            fit[i] = evaluated || (p->num_gpu <= R->nodes[R->fits[i]].ngpus &&
                                   node_eval(R, (size_t)R->fits[i], pi, req, &s));
            if (fit[i])
                raw[nk++] = s;
        }
        placement_normalize(raw, nk, R->norm);
        nk = 0;
        for (int i = 0; i < nf; i++)
            if (fit[i])
                key[i] += kubesim_extender_score(R->norm[nk++], k->ext_weight);
        free(fit);
        free(raw);
    }
    int chosen = pick_max_i64(R, R->fits, nf, key);
    free(key);
    return chosen;
}

static void node_changed(run *R, int ni)
{
    if (++R->ver[ni] == 0)
        R->ver[ni] = 1;
}

/* CPU and memory of a pod joining (+1) or leaving (-1) a node: kube's
 * accounting, and gpupack's when it sees host resources. */
static void account(run *R, int ni, const trace_pod *p, int sign)
{
    kacct *k = &R->ka[ni];
    k->cpu_req += sign * p->cpu_milli;
    k->mem_req += sign * p->mem_mib;
    k->cpu_nz += sign * nz_cpu(p);
    k->mem_nz += sign * nz_mem(p);
    if (!R->blind) {
        R->nodes[ni].cpu_used_milli = k->cpu_req;
        R->nodes[ni].host_mem_used_mib = k->mem_req;
    }
}

static int place_pod(run *R, size_t pi, const char *name, placed *out)
{
    const trace_pod *p = &R->cfg->pods[pi];
    gp_pod_req req;
    trace_pod_to_req(p, name, &req);
    req.dra = R->cfg->dra && req.nctrs > 0;
    out->node = -1;
    out->ngpus = 0;
    int ni = R->cfg->kube ? choose_node_kube(R, pi, &req) : choose_node(R, pi, &req);
    if (ni < 0)
        return -1;
    gp_node *n = &R->nodes[ni];
    gp_assignment a;
    if (placement_fit(n, &req, &R->cfg->place, &a, NULL) != 0)
        return -1;   /* cannot happen: the node was chosen because it fits */
    out->ngpus = gp_assignment_holds(&a, out->holds);
    for (int h = 0; h < out->ngpus; h++) {
        int pos = gp_node_gpu_pos(n, out->holds[h].index);
        if (pos < 0)
            return -1;
        out->holds[h].dra = req.dra;   /* a claim's share: the allocator counts it */
        placement_hold(n, pos, &out->holds[h], +1);
    }
    account(R, ni, p, +1);
    node_changed(R, ni);
    out->node = ni;
    R->alloc_milli += trace_pod_gpu_milli(p);
    return 0;
}

static void remove_pod(run *R, size_t pi, const placed *pl)
{
    if (pl->node < 0)
        return;
    const trace_pod *p = &R->cfg->pods[pi];
    gp_node *n = &R->nodes[pl->node];
    for (int g = 0; g < pl->ngpus; g++) {
        int pos = gp_node_gpu_pos(n, pl->holds[g].index);
        if (pos >= 0)
            placement_hold(n, pos, &pl->holds[g], -1);
    }
    account(R, pl->node, p, -1);
    node_changed(R, pl->node);
    R->alloc_milli -= trace_pod_gpu_milli(p);
}

static double frag_rate(const run *R)
{
    double frag = 0;
    int64_t idle = 0;
    for (size_t i = 0; i < R->nn; i++) {
        frag_view v;
        frag_view_of_node(&R->nodes[i], &R->cfg->place, &v);
        int64_t id = frag_idle(&v);
        if (id == 0)
            continue;
        idle += id;
        frag += frag_amount(&v, R->cfg->shapes);
    }
    return idle > 0 ? frag / (double)idle : 0.0;
}

static sim_point point_now(const run *R, int64_t arrived_milli)
{
    sim_point pt;
    pt.arrived = (double)arrived_milli / (double)R->cap_milli;
    pt.alloc = (double)R->alloc_milli / (double)R->cap_milli;
    pt.frag = frag_rate(R);
    return pt;
}

/* The arrival order of the reference protocol: shuffled rows, then rows
 * re-sampled at random until the GPU request reaches inflate x capacity
 * (or random rows removed while it is above). Returns the length. */
static size_t arrival_order(run *R, size_t **order_out)
{
    const sim_config *c = R->cfg;
    size_t n = c->npods, cap = n + 16;
    size_t *o = xmalloc(cap * sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    if (c->shuffle)
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)rng_below(&R->r, (uint64_t)i + 1);
            size_t t = o[i];
            o[i] = o[j];
            o[j] = t;
        }
    if (c->inflate > 0) {
        double target = c->inflate * (double)R->cap_milli;
        int64_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += trace_pod_gpu_milli(&c->pods[o[i]]);
        while ((double)total > target && n > 0) {
            size_t j = (size_t)rng_below(&R->r, n);
            total -= trace_pod_gpu_milli(&c->pods[o[j]]);
            memmove(&o[j], &o[j + 1], (n - j - 1) * sizeof *o);
            n--;
        }
        for (;;) {
            size_t j = (size_t)rng_below(&R->r, c->npods);
            int64_t g = trace_pod_gpu_milli(&c->pods[j]);
            if ((double)(total + g) > target)
                break;
            if (n == cap) {
                cap *= 2;
                o = xrealloc(o, cap * sizeof *o);
            }
            o[n++] = j;
            total += g;
        }
    }
    *order_out = o;
    return n;
}

typedef struct event {
    int64_t t;
    int del;     /* 0 = creation, 1 = deletion; deletions first at equal times */
    size_t pod;
} event;

static int cmp_event(const void *pa, const void *pb)
{
    const event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->del != b->del)
        return a->del > b->del ? -1 : 1;
    return a->pod < b->pod ? -1 : (a->pod > b->pod);
}

/* The run's node copies, kube-scheduler's accounts and the scratch arrays. */
static void run_init(run *R, const sim_config *cfg)
{
    R->nodes = xcalloc(R->nn, sizeof *R->nodes);
    R->ver = xcalloc(R->nn, sizeof *R->ver);
    R->ka = xcalloc(R->nn ? R->nn : 1, sizeof *R->ka);
    R->blind = cfg->kube && !cfg->extender_cpu;
    for (size_t i = 0; i < R->nn; i++) {
        gp_node *n = &R->nodes[i];
        trace_node_to_gp(&cfg->nodes[i], n);
        for (int g = 0; cfg->dra && g < n->ngpus; g++)
            n->gpus[g].dra = (gp_gpu_dra){.mem_total = n->gpus[g].info.mem_total,
                                          .order = (int16_t)(g + 1), .multi = true,
                                          .cores = true, .core_default = GP_CORE_FULL};
        R->ka[i] = (kacct){n->cpu_alloc_milli, n->host_mem_alloc_mib, n->cpu_used_milli,
                           n->host_mem_used_mib, n->cpu_used_milli, n->host_mem_used_mib};
        if (R->blind) {
            n->cpu_alloc_milli = n->cpu_used_milli = 0;
            n->host_mem_alloc_mib = n->host_mem_used_mib = 0;
        }
        R->ver[i] = 1;
    }
    R->cls = xmalloc(cfg->npods * sizeof *R->cls);
    R->ncls = classify(cfg->pods, cfg->npods, R->cls);
    /* memoising is exact when a pod's fit and score depend only on the node
     * state and its request; the random GPU strategy also hashes the pod name */
    R->cache_on = cfg->cache &&
                  !(cfg->place.gpu == placement_gpu_strategy("random") &&
                    cfg->place.node != placement_node_strategy("random"));
    if (R->cache_on)
        R->cache = xcalloc(R->nn * (size_t)R->ncls, sizeof *R->cache);
    R->raw = xmalloc(R->nn * sizeof *R->raw);
    R->fits = xmalloc(R->nn * sizeof *R->fits);
    R->norm = xmalloc(R->nn * sizeof *R->norm);
}

static void run_free(run *R)
{
    free(R->norm);
    free(R->fits);
    free(R->raw);
    free(R->cache);
    free(R->cls);
    free(R->ver);
    free(R->ka);
    free(R->nodes);
}

/* The events to replay: creations and deletions by time (--departures, with
 * *pl the placements to undo), else arrivals in the run's order. Returns how
 * many; *ev owned by the caller. */
static size_t make_events(run *R, const sim_config *cfg, event **ev, placed **pl)
{
    size_t nev = 0;
    if (cfg->departures) {
        *ev = xmalloc((2 * cfg->npods + 1) * sizeof **ev);
        for (size_t i = 0; i < cfg->npods; i++) {
            (*ev)[nev++] = (event){cfg->pods[i].creation, 0, i};
            if (cfg->pods[i].deletion >= 0)
                (*ev)[nev++] = (event){cfg->pods[i].deletion, 1, i};
        }
        qsort(*ev, nev, sizeof **ev, cmp_event);
        *pl = xmalloc((cfg->npods ? cfg->npods : 1) * sizeof **pl);
        for (size_t i = 0; i < cfg->npods; i++)
            (*pl)[i].node = -1;
        return nev;
    }
    size_t *order = NULL;
    nev = arrival_order(R, &order);
    *ev = xmalloc((nev ? nev : 1) * sizeof **ev);
    for (size_t i = 0; i < nev; i++)
        (*ev)[i] = (event){(int64_t)i, 0, order[i]};
    free(order);
    return nev;
}

/* -------------------------------------------------------------- churn -- */

/* Churn: pods leave after a seeded lifetime and new ones keep arriving, so
 * that the holes departures leave stay in the cluster as they do in a live
 * one. Arrivals follow the pod list in a seeded order, cycled (re-shuffled
 * each cycle), whenever the offered load (GPU request of running and waiting
 * pods / capacity) is below cfg->churn_load: a closed model whose arrival
 * rate follows departures. A pod that fits nowhere waits; waiting pods are
 * retried in arrival order when a pod leaves (only the node it left can have
 * become feasible), and, with a budget, consolidation makes room for them. */

#define CHURN_SAMPLES_PER_LIFETIME 4
/* How often plans are searched (each search costs up to --consolidate-checks
 * fits): waiting pods, oldest first, one search per departure; a pod whose
 * search failed waits 2, 4, .. CHURN_BACKOFF_MAX events (arrivals and
 * departures) before its next, a request (pod class) CHURN_CLASS_BACKOFF,
 * and any search CHURN_SEARCH_BACKOFF after a search that found nothing. */
#define CHURN_TRIES_PER_EVENT 1
#define CHURN_BACKOFF_MAX 256
#define CHURN_CLASS_BACKOFF 64
#define CHURN_SEARCH_BACKOFF 32

enum { INST_WAITING, INST_RUNNING, INST_GONE };

/* One arrival of a trace row. */
typedef struct inst {
    size_t pod;
    double arrive, leave;
    placed pl;
    int state;
    int run_pos;                    /* position in churn.running */
    long next_try;                  /* no plan search for it before this event */
    int fails;
    bool counted;                   /* in churn.wholeq */
} inst;

typedef struct heap_ent {
    double t;
    int id;
} heap_ent;

typedef struct churn {
    run *R;
    rng life;                       /* lifetimes and the arrival order */
    inst *in;
    size_t nin, capin;
    size_t *order;                  /* the arrival stream: a shuffled cycle of rows */
    size_t next;
    int *running;
    size_t nrun;
    heap_ent *heap;
    size_t nheap, capheap;
    int *wait;                      /* waiting pods, in arrival order */
    size_t nwait;
    int64_t offered;                /* GPU milli of running and waiting pods */
    double now, warm, end, area;
    long departures;
    long events;                    /* arrivals and departures: the clock of the backoffs */
    long search_after;              /* no search before this event (after one found nothing) */
    long defrag_after;              /* no defragmentation search before this event */
    int *wholeq;                    /* pods asking whole GPUs that wait, in no order
                                     * (--whole-first) */
    size_t nwholeq;
    long searches;                  /* plan searches so far: the clock of cls_fit_at */
    long *cls_fit_at;               /* per class: the search cls_fits[] holds the answer of */
    bool *cls_fits;                 /* per class: mover_may_refit */
    int *node_free;                 /* per node: its largest free GPU share, this search */
    gp_pod_req *creq;               /* a request per pod class (the movers' re-fit) */
    const gp_node **ptrs;
    gp_mover *movers;
    int *mover_inst;
    bool *target_ok;
    bool *only;                     /* the one target of a planner call */
    bool *mover_ok;                 /* per running pod: offered to the planner */
    int64_t *tkey;                  /* target nodes in the order they are searched */
    long *cls_retry;                /* per pod class: no search before this event */
    int *node_start;                /* movers of node i: [node_start[i], node_start[i+1]) */
    double *whole_waits, *all_waits;
    size_t nwhole, nall;
    sim_churn_stats st;
} churn;

static double rng_unit(rng *r)
{
    return ((double)(rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static void heap_push(churn *C, double t, int id)
{
    if (C->nheap == C->capheap) {
        C->capheap = C->capheap ? 2 * C->capheap : 1024;
        C->heap = xrealloc(C->heap, C->capheap * sizeof *C->heap);
    }
    size_t i = C->nheap++;
    while (i > 0 && C->heap[(i - 1) / 2].t > t) {
        C->heap[i] = C->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    C->heap[i] = (heap_ent){t, id};
}

static heap_ent heap_pop(churn *C)
{
    heap_ent top = C->heap[0], last = C->heap[--C->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= C->nheap)
            break;
        if (c + 1 < C->nheap && C->heap[c + 1].t < C->heap[c].t)
            c++;
        if (C->heap[c].t >= last.t)
            break;
        C->heap[i] = C->heap[c];
        i = c;
    }
    if (C->nheap > 0)
        C->heap[i] = last;
    return top;
}

static bool whole_gpu(const trace_pod *p)
{
    return p->num_gpu >= 1 && p->gpu_milli >= 1000;
}

/* The next row of the arrival stream (a new shuffle at each cycle). */
static size_t next_row(churn *C)
{
    size_t n = C->R->cfg->npods;
    if (C->next == n) {
        for (size_t i = n - 1; C->R->cfg->shuffle && i > 0; i--) {
            size_t j = (size_t)rng_below(&C->life, (uint64_t)i + 1);
            size_t t = C->order[i];
            C->order[i] = C->order[j];
            C->order[j] = t;
        }
        C->next = 0;
    }
    return C->order[C->next];
}

/* Allocation is constant between events: the window's area up to `t`, and
 * the samples (every quarter lifetime) that fall before it. */
static void advance(churn *C, double t, sim_result *out)
{
    run *R = C->R;
    double alloc = (double)R->alloc_milli / (double)R->cap_milli;
    double from = C->now > C->warm ? C->now : C->warm, to = t < C->end ? t : C->end;
    if (to > from)
        C->area += alloc * (to - from);
    if (t >= C->warm && alloc < C->st.alloc_min)
        C->st.alloc_min = alloc;
    double step = R->cfg->churn_lifetime / CHURN_SAMPLES_PER_LIFETIME;
    while (step > 0 && out->nsteps < SIM_MAX_STEPS && out->nsteps * step <= to) {
        sim_point pt = point_now(R, 0);
        pt.arrived = out->nsteps * step / R->cfg->churn_lifetime;
        out->step[out->nsteps++] = pt;
    }
    C->now = t;
}

static void wait_record(churn *C, const inst *w, double waited)
{
    if (w->arrive < C->warm)
        return;
    C->all_waits[C->nall++] = waited;
    if (whole_gpu(&C->R->cfg->pods[w->pod]))
        C->whole_waits[C->nwhole++] = waited;
}

/* A pod starts running: its lifetime, the running set, the waits. */
static void started(churn *C, int id)
{
    inst *w = &C->in[id];
    w->state = INST_RUNNING;
    if (w->counted) {
        w->counted = false;
        for (size_t i = 0; i < C->nwholeq; i++)
            if (C->wholeq[i] == id) {
                C->wholeq[i] = C->wholeq[--C->nwholeq];
                break;
            }
    }
    if (C->R->cfg->churn_lifetime > 0) {
        w->leave = C->now - C->R->cfg->churn_lifetime * log(rng_unit(&C->life));
        heap_push(C, w->leave, id);
    } else {
        w->leave = INFINITY;   /* arrivals only: pods never leave */
    }
    w->run_pos = (int)C->nrun;
    C->running[C->nrun++] = id;
    C->st.placements++;
    wait_record(C, w, C->now - w->arrive);
}

/* GPUs of node n that no pod holds any part of. */
static int free_gpus(const gp_node *n)
{
    int k = 0;
    for (int g = 0; g < n->ngpus; g++)
        k += n->gpus[g].pods == 0;
    return k;
}

/* Could waiting whole-GPU pod `id` run on node ni once it had `freed` GPUs
 * entirely free: enough GPUs of a model it accepts, its CPU and memory. */
static bool whole_could_use(const churn *C, int id, int ni, int freed)
{
    const run *R = C->R;
    size_t pi = C->in[id].pod;
    const trace_pod *p = &R->cfg->pods[pi];
    const gp_node *n = &R->nodes[ni];
    if (p->num_gpu > n->ngpus || freed + R->cfg->whole_first_near < p->num_gpu ||
        !kube_fits(&R->ka[ni], p))
        return false;
    const gp_pod_req *req = &C->creq[R->cls[pi]];
    for (int g = 0; g < n->ngpus; g++)
        if (gp_req_model_ok(req, gp_model_name(n->gpus[g].info.model)))
            return true;
    return false;
}

/* --whole-first: a pod asking a GPU share that took an entirely free GPU
 * while a pod asking whole GPUs waits. With --whole-first-near N, only on a
 * node that such a pod could use with at most N more GPUs freed. */
static bool held_back(const churn *C, size_t pi, const placed *pl)
{
    const trace_pod *p = &C->R->cfg->pods[pi];
    if (!C->R->cfg->whole_first || C->nwholeq == 0 || p->num_gpu == 0 || whole_gpu(p))
        return false;
    const gp_node *n = &C->R->nodes[pl->node];
    int took = 0;
    for (int h = 0; h < pl->ngpus; h++) {
        int pos = gp_node_gpu_pos(n, pl->holds[h].index);
        took += pos >= 0 && n->gpus[pos].pods == 1;
    }
    if (took == 0)
        return false;
    int freed = free_gpus(n) + took;   /* entirely free before this pod */
    for (size_t i = 0; i < C->nwholeq; i++)
        if (whole_could_use(C, C->wholeq[i], pl->node, freed))
            return true;
    return false;
}

static int try_place(churn *C, int id)
{
    inst *w = &C->in[id];
    char name[GP_NAME_MAX];
    snprintf(name, sizeof name, "%s-%d", C->R->cfg->pods[w->pod].name, id);
    if (place_pod(C->R, w->pod, name, &w->pl) != 0)
        return -1;
    if (held_back(C, w->pod, &w->pl)) {
        remove_pod(C->R, w->pod, &w->pl);
        w->pl.node = -1;
        C->st.held_back++;
        return -1;
    }
    started(C, id);
    return 0;
}

/* A pod takes `a` on node ni (a plan's share): holds, accounting. */
static void hold_assignment(run *R, int ni, size_t pi, const gp_assignment *a, placed *pl)
{
    gp_hold h[GP_MAX_GPUS_PER_NODE];
    gp_node *n = &R->nodes[ni];
    int nh = gp_assignment_holds(a, h);
    pl->ngpus = 0;
    for (int k = 0; k < nh && k < GP_MAX_GPUS_PER_CTR; k++) {
        int pos = gp_node_gpu_pos(n, h[k].index);
        if (pos < 0)
            continue;
        pl->holds[pl->ngpus++] = h[k];
        placement_hold(n, pos, &h[k], +1);
    }
    account(R, ni, &R->cfg->pods[pi], +1);
    node_changed(R, ni);
    pl->node = ni;
    R->alloc_milli += trace_pod_gpu_milli(&R->cfg->pods[pi]);
}

/* Could the waiting pod go to node ni as it is now? (Placement's verdict,
 * memoised like choose_node's; a necessary condition in kube mode.) */
static bool fits_node(churn *C, int ni, size_t pi)
{
    run *R = C->R;
    const trace_pod *p = &R->cfg->pods[pi];
    if (!kube_fits(&R->ka[ni], p) || p->num_gpu > R->nodes[ni].ngpus)
        return false;
    if (p->num_gpu == 0)
        return true;
    double s;
    return node_eval(R, (size_t)ni, pi, &C->creq[R->cls[pi]], &s);
}

typedef struct serve_cand {
    size_t pos;          /* in C->wait */
    int64_t milli;       /* its GPU request */
    int waste;           /* --serve fill: what the waiting pods could not fill after it */
} serve_cand;

static int cmp_serve(const void *a, const void *b)
{
    const serve_cand *x = a, *y = b;
    if (x->waste != y->waste)
        return x->waste < y->waste ? -1 : 1;
    if (x->milli != y->milli)
        return x->milli > y->milli ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* --serve fill: what a GPU with `rest` per-mille free keeps free once the
 * largest waiting share that fits is put on it, again and again (le[r]: the
 * largest waiting share of at most r, 0 if none). An estimate: the waiting
 * pods' CPU and memory are not looked at. */
static int fill_rest(const int *le, int rest)
{
    while (rest > 0 && le[rest] > 0)
        rest -= le[rest];
    return rest;
}

/* --serve fill: the score of waiting pod pi on node n: 0 for whole GPUs,
 * the rest fill_rest() leaves on the GPU of n where it leaves the least for
 * a share, -1 if no GPU of n has its share free; CPU-only pods last. */
static int fill_waste(const churn *C, const int *le, const gp_node *n, size_t pi)
{
    const trace_pod *p = &C->R->cfg->pods[pi];
    if (p->num_gpu == 0)
        return 1001;
    if (whole_gpu(p))
        return 0;
    int best = -1;
    for (int g = 0; g < n->ngpus; g++) {
        int free_share = 1000 - n->gpus[g].core_used;
        if (free_share < p->gpu_milli)
            continue;
        int w = fill_rest(le, free_share - (int)p->gpu_milli);
        if (best < 0 || w < best)
            best = w;
    }
    return best;
}

/* --serve largest|fill: the waiting pods that fit node ni, in the order of
 * cmp_serve, each checked again when its turn comes. Largest first is one
 * pass (the order does not depend on the node); fill makes the order again
 * from the node's new state after each start. */
static void retry_ordered(churn *C, int ni)
{
    const run *R = C->R;
    bool fill = R->cfg->serve == SIM_SERVE_FILL;
    serve_cand *c = xmalloc((C->nwait ? C->nwait : 1) * sizeof *c);
    int le[1001] = {0};
    size_t nc = 0;
    for (size_t i = 0; i < C->nwait; i++) {
        int id = C->wait[i];
        const trace_pod *p = &R->cfg->pods[C->in[id].pod];
        if (fill && p->num_gpu == 1 && p->gpu_milli > 0 && p->gpu_milli < 1000)
            le[p->gpu_milli] = (int)p->gpu_milli;
        if (C->in[id].state == INST_WAITING && fits_node(C, ni, C->in[id].pod))
            c[nc++] = (serve_cand){i, trace_pod_gpu_milli(p), 0};
    }
    for (int r = 1; r <= 1000; r++)
        if (le[r] == 0)
            le[r] = le[r - 1];
    for (bool again = true; again && nc > 0;) {
        again = false;
        size_t k = 0;
        for (size_t j = 0; j < nc; j++) {
            c[j].waste = fill ? fill_waste(C, le, &R->nodes[ni], C->in[C->wait[c[j].pos]].pod) : 0;
            if (c[j].waste >= 0)
                c[k++] = c[j];
        }
        nc = k;
        qsort(c, nc, sizeof *c, cmp_serve);
        for (size_t j = 0; j < nc; j++) {
            int id = C->wait[c[j].pos];
            if (fits_node(C, ni, C->in[id].pod) && try_place(C, id) == 0) {
                C->wait[c[j].pos] = -1;
                if (fill) {
                    c[j] = c[--nc];
                    again = true;
                    break;
                }
            }
        }
    }
    free(c);
    size_t k = 0;
    for (size_t i = 0; i < C->nwait; i++)
        if (C->wait[i] >= 0)
            C->wait[k++] = C->wait[i];
    C->nwait = k;
}

/* After node ni lost pods: the waiting pods that now fit it, oldest first
 * (or in another order, --serve). */
static void retry_waiting(churn *C, int ni)
{
    if (C->R->cfg->serve != SIM_SERVE_ARRIVAL) {
        retry_ordered(C, ni);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < C->nwait; i++) {
        int id = C->wait[i];
        if (C->in[id].state == INST_WAITING && fits_node(C, ni, C->in[id].pod) &&
            try_place(C, id) == 0)
            continue;
        C->wait[k++] = id;
    }
    C->nwait = k;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Could a mover of row pi's class re-fit into room that is free now: some
 * node with a GPU that has its share free, and its CPU and memory? Movers
 * that could not are left out of the search: they could only take room
 * another move of the same plan leaves, a case the simulator leaves out
 * because each costs a scan of every node. Memoised per class and search;
 * node_free[] holds each node's largest free GPU share. */
static bool mover_may_refit(churn *C, size_t pi)
{
    run *R = C->R;
    int cls = R->cls[pi];
    if (C->cls_fit_at[cls] == C->searches)
        return C->cls_fits[cls];
    const trace_pod *p = &R->cfg->pods[pi];
    bool ok = false;
    for (size_t i = 0; i < R->nn && !ok; i++)
        ok = C->node_free[i] >= p->gpu_milli && kube_fits(&R->ka[i], p);
    C->cls_fit_at[cls] = C->searches;
    C->cls_fits[cls] = ok;
    return ok;
}

/* Nodes a plan may target: enough GPUs that are free enough already or, for
 * a whole-GPU request, held by at most max_moves pods each. Cheap, and
 * necessary: the planner decides. */
static int mark_targets(churn *C, const trace_pod *p, int max_moves)
{
    run *R = C->R;
    int n = 0;
    for (size_t i = 0; i < R->nn; i++) {
        const gp_node *nd = &R->nodes[i];
        int ok = 0;
        for (int g = 0; g < nd->ngpus; g++) {
            const gp_gpu *u = &nd->gpus[g];
            bool free_enough = GP_CORE_FULL - u->core_used >= p->gpu_milli;
            ok += free_enough || p->gpu_milli < 1000 || u->pods <= max_moves;
        }
        C->target_ok[i] = ok >= p->num_gpu && R->ka[i].cpu_alloc >= p->cpu_milli &&
                          R->ka[i].mem_alloc >= p->mem_mib;
        n += C->target_ok[i];
    }
    return n;
}

static void remove_waiting(churn *C, int id)
{
    size_t k = 0;
    for (size_t i = 0; i < C->nwait; i++)
        if (C->wait[i] != id)
            C->wait[k++] = C->wait[i];
    C->nwait = k;
}

/* The plan search for a pod asking p (pack/consolidate.c, one planner call
 * per target node, the cheapest to empty first). With `more_free`, nodes
 * where p already fits on GPUs that are entirely free are no targets: the
 * plan must free GPUs, not find them (background defragmentation). Returns
 * 1 and *plan, 0 when no plan was found (*checks_left: the feasibility
 * checks not spent), -1 when no node could be a target at all. */
static int search_plan(churn *C, const trace_pod *p, const char *name, int max_moves,
                       bool more_free, gp_consol_plan *plan, int *checks_left)
{
    run *R = C->R;
    const sim_config *cfg = R->cfg;
    *checks_left = 0;
    int ntargets = mark_targets(C, p, max_moves);
    for (size_t i = 0; more_free && i < R->nn; i++) {
        if (C->target_ok[i] && free_gpus(&R->nodes[i]) >= p->num_gpu) {
            C->target_ok[i] = false;
            ntargets--;
        }
    }
    if (ntargets == 0)
        return -1;
    C->searches++;
    for (size_t i = 0; i < R->nn; i++) {
        int best = 0;
        for (int g = 0; g < R->nodes[i].ngpus; g++)
            if (GP_CORE_FULL - R->nodes[i].gpus[g].core_used > best)
                best = GP_CORE_FULL - R->nodes[i].gpus[g].core_used;
        C->node_free[i] = best;
    }
    /* movers grouped by node (counting sort), so that each target's search
     * sees its own movers only: one planner call per target node, the
     * cheapest to empty first, each allowed fewer moves than the best plan so far -- the
     * planner's own rule across nodes when no mover breaks a PDB */
    for (size_t i = 0; i <= R->nn; i++)
        C->node_start[i] = 0;
    for (size_t i = 0; i < C->nrun; i++) {
        inst *m = &C->in[C->running[i]];
        C->mover_ok[i] = m->pl.ngpus > 0 && m->pl.node >= 0 && C->target_ok[m->pl.node] &&
                         mover_may_refit(C, m->pod);
        if (C->mover_ok[i])
            C->node_start[m->pl.node + 1]++;
    }
    for (size_t i = 0; i < R->nn; i++)
        C->node_start[i + 1] += C->node_start[i];
    for (size_t i = 0; i < C->nrun; i++) {
        inst *m = &C->in[C->running[i]];
        if (!C->mover_ok[i])
            continue;
        const trace_pod *mp = &cfg->pods[m->pod];
        int at = C->node_start[m->pl.node]++;
        C->movers[at] = (gp_mover){.node = m->pl.node, .priority = 0, .group = -1,
                                   .nholds = m->pl.ngpus, .holds = m->pl.holds,
                                   .cpu_milli = mp->cpu_milli, .mem_mib = mp->mem_mib,
                                   .req = &C->creq[R->cls[m->pod]]};
        C->mover_inst[at] = C->running[i];
    }
    for (size_t i = R->nn; i > 0; i--)   /* back to the starts */
        C->node_start[i] = C->node_start[i - 1];
    C->node_start[0] = 0;
    gp_pod_req req;
    trace_pod_to_req(p, name, &req);
    gp_consol_plan cand;
    int found = 0, checks = cfg->consol_checks > 0 ? cfg->consol_checks : GP_CONSOL_BUDGET_DEFAULT;
    bool *only = C->only;
    /* targets cheapest to empty first: the least GPU share held on the
     * GPUs the pod would need (the sum of its num_gpu least used GPUs) */
    size_t nt = 0;
    for (size_t i = 0; i < R->nn; i++) {
        if (!C->target_ok[i] || C->node_start[i + 1] == C->node_start[i])
            continue;
        const gp_node *nd = &R->nodes[i];
        int used[GP_MAX_GPUS_PER_NODE];
        for (int g = 0; g < nd->ngpus; g++)
            used[g] = nd->gpus[g].core_used;
        qsort(used, (size_t)nd->ngpus, sizeof *used, cmp_int);
        int64_t key = 0;
        for (int g = 0; g < p->num_gpu && g < nd->ngpus; g++)
            key += used[g];
        C->tkey[nt] = key * (int64_t)(R->nn + 1) + (int64_t)i;   /* ties: node order */
        nt++;
    }
    qsort(C->tkey, nt, sizeof *C->tkey, cmp_i64);
    for (size_t ti = 0; ti < nt && checks > 0; ti++) {
        size_t t = (size_t)(C->tkey[ti] % (int64_t)(R->nn + 1));
        int from = C->node_start[t], nm = C->node_start[t + 1] - from;
        if (!C->target_ok[t] || nm == 0)
            continue;
        only[t] = true;
        gp_consol_query q = {.nodes = C->ptrs, .nnodes = (int)R->nn, .target_ok = only,
                             .req = &req, .opts = &cfg->place, .movers = C->movers + from,
                             .nmovers = nm, .max_moves = found ? plan->nmoves - 1 : max_moves,
                             .budget = checks};
        int rc = consolidate_plan(&q, &cand);
        only[t] = false;
        checks -= cand.checks;
        if (rc == 1) {
            for (int k = 0; k < cand.nmoves; k++)
                cand.moves[k].mover += from;   /* into C->movers */
            *plan = cand;
            found = 1;
            if (plan->nmoves == 1)
                break;
        }
    }
    *checks_left = checks;
    return found;
}

/* The moves of a plan: each moved pod leaves and takes the place the plan
 * found for it (after the waiting pod, if any, took its own). */
static void move_pods(churn *C, const gp_consol_plan *plan, int waiting)
{
    run *R = C->R;
    for (int k = 0; k < plan->nmoves; k++) {
        inst *m = &C->in[C->mover_inst[plan->moves[k].mover]];
        remove_pod(R, m->pod, &m->pl);
    }
    if (waiting >= 0)
        hold_assignment(R, plan->node, C->in[waiting].pod, &plan->a, &C->in[waiting].pl);
    for (int k = 0; k < plan->nmoves; k++) {
        inst *m = &C->in[C->mover_inst[plan->moves[k].mover]];
        hold_assignment(R, plan->moves[k].node, m->pod, &plan->moves[k].a, &m->pl);
    }
    C->st.moves += plan->nmoves;
}

/* Moves one plan may make now: --consolidate-max-moves, or fewer when the
 * budget (cumulative: a share of the placements so far) allows fewer; < 1 =
 * none. */
static int plan_max_moves(const churn *C)
{
    const sim_config *cfg = C->R->cfg;
    long allowed = (long)floor(cfg->consol_budget / 100.0 * (double)C->st.placements) -
                   C->st.moves;
    return cfg->consol_max_moves < allowed ? cfg->consol_max_moves : (int)allowed;
}

/* Consolidation for waiting pod id (in the wait list): plan, then carry the plan out (the
 * moved pods leave, the waiting pod takes its place, each moved pod takes
 * the place the plan found for it). Returns 0 when the pod now runs. */
static int try_consolidate(churn *C, int id)
{
    run *R = C->R;
    const sim_config *cfg = R->cfg;
    inst *w = &C->in[id];
    const trace_pod *p = &cfg->pods[w->pod];
    if (cfg->consol_budget <= 0 || p->num_gpu == 0)
        return -1;
    int max_moves = plan_max_moves(C);
    if (max_moves < 1) {
        C->st.budget_refusals++;
        return -1;
    }
    int cls = R->cls[w->pod];
    if (C->cls_retry[cls] > C->events || C->search_after > C->events)
        return -1;   /* the same request, or any, found no plan a moment ago */
    char name[GP_NAME_MAX];
    snprintf(name, sizeof name, "%s-%d", p->name, id);
    gp_consol_plan plan;
    int checks;
    int rc = search_plan(C, p, name, max_moves, false, &plan, &checks);
    if (rc != 1) {
        C->st.plan_failures++;
        C->st.plan_incomplete += rc == 0 && checks <= 0;
        C->cls_retry[cls] = C->events + CHURN_CLASS_BACKOFF;
        C->search_after = C->events + CHURN_SEARCH_BACKOFF;
        return -1;
    }
    move_pods(C, &plan, id);
    C->st.plans++;
    started(C, id);
    remove_waiting(C, id);
    retry_waiting(C, plan.node);
    return 0;
}

/* Does a moved pod of the plan land on a GPU that is entirely free now? Such
 * a plan frees one GPU by filling another: no gain. */
static bool takes_free_gpu(const churn *C, const gp_consol_plan *plan)
{
    for (int k = 0; k < plan->nmoves; k++) {
        const gp_node *n = &C->R->nodes[plan->moves[k].node];
        const gp_assignment *a = &plan->moves[k].a;
        for (int c = 0; c < a->nctrs; c++)
            for (int g = 0; g < a->ctrs[c].ngpus; g++) {
                int pos = gp_node_gpu_pos(n, a->ctrs[c].gpus[g].index);
                if (pos >= 0 && n->gpus[pos].pods == 0)
                    return true;
            }
    }
    return false;
}

/* Background defragmentation (--defrag-free N): while fewer than N GPUs are
 * entirely free, one plan per event makes one more free, as if a pod asking
 * a whole GPU were waiting, within the same budget of moves. The freed GPU
 * is not reserved: the waiting pods, oldest first, may take it at once. */
static void defragment(churn *C)
{
    run *R = C->R;
    const sim_config *cfg = R->cfg;
    if (cfg->defrag_free == 0 || cfg->consol_budget <= 0 || C->defrag_after > C->events)
        return;
    long nfree = 0;
    for (size_t i = 0; i < R->nn; i++)
        nfree += free_gpus(&R->nodes[i]);
    int max_moves = plan_max_moves(C);
    if (nfree >= (long)cfg->defrag_free || max_moves < 1)
        return;
    trace_pod whole = {.name = "defrag", .num_gpu = 1, .gpu_milli = 1000, .deletion = -1};
    gp_consol_plan plan;
    int checks;
    if (search_plan(C, &whole, "defrag", max_moves, true, &plan, &checks) != 1 ||
        takes_free_gpu(C, &plan)) {
        C->st.defrag_failures++;
        C->defrag_after = C->events + CHURN_SEARCH_BACKOFF;
        return;
    }
    move_pods(C, &plan, -1);
    C->st.defrag_plans++;
    retry_waiting(C, plan.node);
}

/* Arrivals while the offered load is below the target. */
static void arrivals(churn *C)
{
    run *R = C->R;
    double target = R->cfg->churn_load * (double)R->cap_milli;
    for (;;) {
        size_t pi = next_row(C);
        int64_t g = trace_pod_gpu_milli(&R->cfg->pods[pi]);
        if (C->offered > 0 && (double)(C->offered + g) > target)
            return;
        C->next++;
        if (C->nin == C->capin) {
            C->capin *= 2;
            C->in = xrealloc(C->in, C->capin * sizeof *C->in);
            C->movers = xrealloc(C->movers, C->capin * sizeof *C->movers);
            C->mover_inst = xrealloc(C->mover_inst, C->capin * sizeof *C->mover_inst);
            C->running = xrealloc(C->running, C->capin * sizeof *C->running);
            C->mover_ok = xrealloc(C->mover_ok, C->capin * sizeof *C->mover_ok);
            C->wait = xrealloc(C->wait, C->capin * sizeof *C->wait);
            C->wholeq = xrealloc(C->wholeq, C->capin * sizeof *C->wholeq);
            C->whole_waits = xrealloc(C->whole_waits, C->capin * sizeof *C->whole_waits);
            C->all_waits = xrealloc(C->all_waits, C->capin * sizeof *C->all_waits);
        }
        int id = (int)C->nin++;
        C->events++;
        inst *w = &C->in[id];
        memset(w, 0, sizeof *w);
        w->pod = pi;
        w->arrive = C->now;
        w->pl.node = -1;
        C->offered += g;
        if (C->now >= C->warm)
            C->st.all_arrived++;
        if (C->now >= C->warm && whole_gpu(&R->cfg->pods[pi]))
            C->st.whole_arrived++;
        C->wait[C->nwait++] = id;   /* in arrival order, until placed */
        if (try_place(C, id) == 0) {
            C->nwait--;
            continue;
        }
        if (whole_gpu(&R->cfg->pods[pi])) {
            w->counted = true;
            C->wholeq[C->nwholeq++] = id;
        }
        (void)try_consolidate(C, id);
    }
}

/* Plan searches for waiting pods after a departure: oldest first, a few per
 * departure, each pod backing off after a failed search. */
static void consolidate_waiting(churn *C)
{
    if (C->R->cfg->consol_budget <= 0)
        return;
    int tries = 0;
    for (size_t i = 0; i < C->nwait && tries < CHURN_TRIES_PER_EVENT; i++) {
        int id = C->wait[i];
        inst *w = &C->in[id];
        if (w->next_try > C->events || C->R->cfg->pods[w->pod].num_gpu == 0)
            continue;
        long spent = C->st.budget_refusals;
        tries++;
        if (try_consolidate(C, id) == 0) {
            i = (size_t)-1;   /* the list changed: from the oldest again */
            continue;
        }
        if (C->st.budget_refusals != spent)
            return;   /* no budget: nothing else can move either */
        w->fails++;
        long back = 1L << (w->fails < 8 ? w->fails : 8);
        w->next_try = C->events + (back < CHURN_BACKOFF_MAX ? back : CHURN_BACKOFF_MAX);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)ceil(q * (double)n);
    return v[k > 0 ? k - 1 : 0];
}

static void churn_report(churn *C, sim_result *out)
{
    run *R = C->R;
    sim_churn_stats *st = &C->st;
    /* the pods still waiting count with what they have waited so far */
    for (size_t i = 0; i < C->nwait; i++) {
        inst *w = &C->in[C->wait[i]];
        wait_record(C, w, C->end - w->arrive);
        st->waiting_end++;
        st->whole_waiting_end += whole_gpu(&R->cfg->pods[w->pod]);
    }
    qsort(C->whole_waits, C->nwhole, sizeof *C->whole_waits, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < C->nwhole; i++) {
        sum += C->whole_waits[i];
        st->whole_waited += C->whole_waits[i] > 0;
    }
    st->whole_wait_mean = C->nwhole ? sum / (double)C->nwhole : 0;
    st->whole_wait_p50 = quantile(C->whole_waits, C->nwhole, 0.50);
    st->whole_wait_p95 = quantile(C->whole_waits, C->nwhole, 0.95);
    st->whole_wait_max = C->nwhole ? C->whole_waits[C->nwhole - 1] : 0;
    sum = 0;
    for (size_t i = 0; i < C->nall; i++)
        sum += C->all_waits[i];
    st->all_wait_mean = C->nall ? sum / (double)C->nall : 0;
    st->alloc_mean = C->end > C->warm ? C->area / (C->end - C->warm) : 0;
    out->churn = *st;
}

/* The churn replay (sim_config.churn). */
static int sim_churn(run *R, uint64_t seed, sim_result *out)
{
    const sim_config *cfg = R->cfg;
    churn C;
    memset(&C, 0, sizeof C);
    C.R = R;
    C.life.s = seed ^ UINT64_C(0x6c69666574696d65);   /* its own stream: ties do not shift it */
    C.warm = cfg->churn_warmup * cfg->churn_lifetime;
    C.end = cfg->churn_horizon * cfg->churn_lifetime;
    C.st.alloc_min = 1;
    C.capin = 2 * cfg->npods + 1024;
    C.in = xmalloc(C.capin * sizeof *C.in);
    C.movers = xmalloc(C.capin * sizeof *C.movers);
    C.mover_inst = xmalloc(C.capin * sizeof *C.mover_inst);
    C.running = xmalloc(C.capin * sizeof *C.running);
    C.mover_ok = xmalloc(C.capin * sizeof *C.mover_ok);
    C.wait = xmalloc(C.capin * sizeof *C.wait);
    C.wholeq = xmalloc(C.capin * sizeof *C.wholeq);
    C.whole_waits = xmalloc(C.capin * sizeof *C.whole_waits);
    C.all_waits = xmalloc(C.capin * sizeof *C.all_waits);
    C.order = xmalloc(cfg->npods * sizeof *C.order);
    for (size_t i = 0; i < cfg->npods; i++)
        C.order[i] = i;
    C.next = cfg->npods;   /* next_row shuffles first */
    C.creq = xmalloc((size_t)R->ncls * sizeof *C.creq);
    for (size_t i = cfg->npods; i-- > 0;)
        trace_pod_to_req(&cfg->pods[i], cfg->pods[i].name, &C.creq[R->cls[i]]);
    C.ptrs = xmalloc(R->nn * sizeof *C.ptrs);
    for (size_t i = 0; i < R->nn; i++)
        C.ptrs[i] = &R->nodes[i];
    C.target_ok = xmalloc(R->nn * sizeof *C.target_ok);
    C.only = xcalloc(R->nn, sizeof *C.only);
    C.tkey = xmalloc(R->nn * sizeof *C.tkey);
    C.node_free = xmalloc(R->nn * sizeof *C.node_free);
    C.cls_fit_at = xcalloc((size_t)R->ncls, sizeof *C.cls_fit_at);
    C.cls_fits = xcalloc((size_t)R->ncls, sizeof *C.cls_fits);
    C.cls_retry = xcalloc((size_t)R->ncls, sizeof *C.cls_retry);

    C.node_start = xmalloc((R->nn + 1) * sizeof *C.node_start);

    arrivals(&C);
    defragment(&C);
    while (C.nheap > 0 && C.heap[0].t <= C.end) {
        heap_ent e = heap_pop(&C);
        inst *w = &C.in[e.id];
        advance(&C, e.t, out);
        int ni = w->pl.node;
        remove_pod(R, w->pod, &w->pl);
        w->pl.node = -1;
        w->state = INST_GONE;
        int last = C.running[--C.nrun];
        C.running[w->run_pos] = last;
        C.in[last].run_pos = w->run_pos;
        C.offered -= trace_pod_gpu_milli(&cfg->pods[w->pod]);
        C.departures++;
        C.events++;
        retry_waiting(&C, ni);
        arrivals(&C);
        consolidate_waiting(&C);
        defragment(&C);
    }
    advance(&C, C.end, out);
    out->end = point_now(R, 0);
    churn_report(&C, out);
    if (cfg->churn_lifetime > 0) {
        out->end.arrived = C.end / cfg->churn_lifetime;
    } else {   /* arrivals only: the end is what counts, as in the reference protocol */
        out->end.arrived = (double)C.offered / (double)R->cap_milli;
        out->churn.alloc_mean = out->churn.alloc_min = out->end.alloc;
    }
    out->pods = (long)C.nin;
    for (size_t i = 0; i < C.nin; i++) {
        trace_kind kind = trace_pod_kind(&cfg->pods[C.in[i].pod]);
        out->arrived[kind]++;
        if (C.in[i].state == INST_WAITING) {
            out->failed[kind]++;
            out->failed_total++;
        }
    }
    free(C.mover_ok);
    free(C.cls_retry);
    free(C.node_start);
    free(C.cls_fits);
    free(C.cls_fit_at);
    free(C.node_free);
    free(C.tkey);
    free(C.only);
    free(C.target_ok);
    free(C.ptrs);
    free(C.creq);
    free(C.order);
    free(C.all_waits);
    free(C.whole_waits);
    free(C.wait);
    free(C.wholeq);
    free(C.running);
    free(C.mover_inst);
    free(C.movers);
    free(C.heap);
    free(C.in);
    return 0;
}

int sim_run(const sim_config *cfg, uint64_t seed, sim_result *out, gp_err *err)
{
    double t0 = gp_mono_s();
    run R;
    memset(&R, 0, sizeof R);
    memset(out, 0, sizeof *out);
    out->seed = seed;
    R.cfg = cfg;
    R.r.s = seed;
    R.nn = cfg->nnodes;
    if (!cfg->shapes)
        return gp_fail(err, "simulator: no task shapes for the fragmentation metric");
    if (cfg->departures)
        for (size_t i = 0; i < cfg->npods; i++)
            if (!cfg->pods[i].has_times)
                return gp_fail(err,
                               "--departures needs creation_time/deletion_time, pod %s has none",
                               cfg->pods[i].name);
    sim_capacity(cfg->nodes, cfg->nnodes, &R.gpus, &R.cap_milli);
    if (R.cap_milli <= 0)
        return gp_fail(err, "simulator: the node list has no GPUs");
    if (cfg->churn) {
        bool gpu_pods = false;
        for (size_t i = 0; i < cfg->npods && !gpu_pods; i++)
            gpu_pods = trace_pod_gpu_milli(&cfg->pods[i]) > 0;
        if (cfg->departures)
            return gp_fail(err, "churn and --departures exclude each other");
        if (!gpu_pods)
            return gp_fail(err, "churn: the pod list has no GPU pods to keep the load with");
        if (!(cfg->churn_load > 0) || !(cfg->churn_lifetime >= 0) ||
            !(cfg->churn_horizon > cfg->churn_warmup) || cfg->churn_warmup < 0)
            return gp_fail(err, "churn: load must be > 0, lifetime >= 0, warm-up < horizon");
    }
    if (cfg->consol_budget > 0) {
        if (!cfg->churn)
            return gp_fail(err, "consolidation is simulated with churn only");
        if (cfg->dra || (cfg->kube && !cfg->extender_cpu))
            return gp_fail(err, "consolidation needs gpupack to see host CPU and memory, "
                                "without DRA claims");
        if (cfg->consol_max_moves < 1 || cfg->consol_max_moves > GP_CONSOL_MOVES_MAX)
            return gp_fail(err, "consolidation: max moves must be 1..%d", GP_CONSOL_MOVES_MAX);
    }
    if (cfg->whole_first && !cfg->churn)
        return gp_fail(err, "whole-first is simulated with churn only");
    if (cfg->serve != SIM_SERVE_ARRIVAL && !cfg->churn)
        return gp_fail(err, "an order of service other than arrival is simulated with churn only");
    if (cfg->defrag_free < 0 || (cfg->defrag_free > 0 && !(cfg->consol_budget > 0)))
        return gp_fail(err, "defragmentation needs a consolidation budget (its moves count in it)");
    run_init(&R, cfg);
    if (cfg->churn) {
        int rc = sim_churn(&R, seed, out);
        out->wall_s = gp_mono_s() - t0;
        out->unalloc_gpus = (1.0 - out->end.alloc) * R.gpus;
        run_free(&R);
        return rc;
    }
    event *ev = NULL;
    placed *pl = NULL;
    size_t nev = make_events(&R, cfg, &ev, &pl);
    int64_t arrived = 0;
    int next_step = 0;
    char name[GP_NAME_MAX];
    for (size_t e = 0; e < nev; e++) {
        size_t pi = ev[e].pod;
        const trace_pod *p = &cfg->pods[pi];
        if (ev[e].del) {
            remove_pod(&R, pi, &pl[pi]);
            pl[pi].node = -1;
            continue;
        }
        trace_kind kind = trace_pod_kind(p);
        snprintf(name, sizeof name, "%s-%zu", p->name, e);
        placed tmp;
        placed *dst = pl ? &pl[pi] : &tmp;
        out->pods++;
        out->arrived[kind]++;
        arrived += trace_pod_gpu_milli(p);
        if (place_pod(&R, pi, name, dst) != 0) {
            out->failed[kind]++;
            out->failed_total++;
        }
        while (next_step < SIM_MAX_STEPS &&
               arrived * 10 >= (int64_t)(next_step + 1) * R.cap_milli) {
            out->step[next_step++] = point_now(&R, arrived);
        }
    }
    out->nsteps = next_step;
    out->end = point_now(&R, arrived);
    out->unalloc_gpus = (1.0 - out->end.alloc) * R.gpus;
    out->wall_s = gp_mono_s() - t0;
    free(pl);
    free(ev);
    run_free(&R);
    return 0;
}

/* --------------------------------------------------------------- CLI -- */

#define MAX_SEEDS 1000

typedef struct cli {
    const char *nodes_path, *pods_path, *policy_path, *label;
    const char *plot_path;        /* --plot FILE.png: gnuplot chart of the mean curves */
    const char *policies_dir;     /* --policies DIR */
    const char *sched_path;       /* --scheduler-config FILE; NULL = ideal mode */
    bool sched_explicit, ideal_knob, extender_no_cpu;
    const char *node_strategy, *gpu_strategy;
    const char *format;           /* table | csv | json */
    const char *shapes_src;       /* trace | trace-gpu | policy */
    double coverage;
    uint64_t seeds[MAX_SEEDS];
    int nseeds;
    int nmodes;
    sim_mode modes[2];
    bool mode_set;
    int jobs;
    bool quiet;
    bool by_gpus;                 /* typical shapes weighted by GPU demand */
    bool emit_shapes;             /* print the trace's shapes as spec.shapes and stop */
    double inflate;               /* --inflate */
    int weight;                   /* --weight */
    sim_ties ties;                /* --ties */
    sim_cpu_pods cpu_pods;        /* --cpu-pods */
    bool departures, no_shuffle, no_cache;
    bool dra;                     /* --dra */
    bool churn;                   /* --churn and its knobs */
    double churn_load, churn_lifetime, churn_horizon, churn_warmup;
    double consol_budget;         /* --consolidate-budget PCT */
    unsigned consol_max_moves, consol_checks;
    unsigned defrag_free;         /* --defrag-free N */
    bool whole_first;             /* --whole-first */
    unsigned whole_first_near;    /* --whole-first-near N */
    int serve;                    /* --serve */
} cli;

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s)
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int parse_seeds(const char *s, cli *c, gp_err *err)
{
    c->nseeds = 0;
    const char *dots = strstr(s, "..");
    if (dots) {
        char a[32];
        size_t la = (size_t)(dots - s);
        uint64_t lo, hi;
        if (la == 0 || la >= sizeof a)
            return gp_fail(err, "--seeds: \"%s\" is not A..B", s);
        memcpy(a, s, la);
        a[la] = '\0';
        if (parse_u64(a, &lo) || parse_u64(dots + 2, &hi) || hi < lo)
            return gp_fail(err, "--seeds: \"%s\" is not A..B with A <= B", s);
        if (hi - lo >= MAX_SEEDS)
            return gp_fail(err, "--seeds: at most %d seeds", MAX_SEEDS);
        for (uint64_t x = lo; x <= hi; x++)
            c->seeds[c->nseeds++] = x;
        return 0;
    }
    char buf[1024];
    if (strlen(s) >= sizeof buf)
        return gp_fail(err, "--seeds: list too long");
    gp_strlcpy(buf, s, sizeof buf);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (c->nseeds == MAX_SEEDS)
            return gp_fail(err, "--seeds: at most %d seeds", MAX_SEEDS);
        if (parse_u64(t, &c->seeds[c->nseeds]))
            return gp_fail(err, "--seeds: \"%s\" is not a number", t);
        c->nseeds++;
    }
    if (c->nseeds == 0)
        return gp_fail(err, "--seeds: no seeds");
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out,
                        gp_err *err)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi))
        return gp_fail(err, "%s: \"%s\" is not a number in %g..%g", opt, s, lo, hi);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ flags -- */

static int f_sched(void *base, const char *v, gp_err *err)
{
    cli *c = base;
    c->sched_path = strcmp(v, "none") == 0 ? NULL : v;
    c->sched_explicit = true;
    return 0;
}

static int f_mode(void *base, const char *v, gp_err *err)
{
    cli *c = base;
    static const struct {
        const char *name;
        int n;
        sim_mode m[2];
    } modes[] = {{"filter", 1, {SIM_MODE_FILTER}},
                 {"prioritize", 1, {SIM_MODE_PRIORITIZE}},
                 {"both", 2, {SIM_MODE_FILTER, SIM_MODE_PRIORITIZE}}};
    for (size_t i = 0; i < GP_ARRAY_LEN(modes); i++)
        if (strcmp(v, modes[i].name) == 0) {
            c->mode_set = true;
            c->nmodes = modes[i].n;
            memcpy(c->modes, modes[i].m, sizeof c->modes);
            return 0;
        }
    return gp_fail(err, "filter, prioritize or both, not \"%s\"", v);
}

static int f_weight(void *base, const char *v, gp_err *err)
{
    cli *c = base;
    double w = 0;
    if (parse_double("--weight", v, 1, 100, &w, err))
        return -1;
    c->weight = (int)w;
    c->ideal_knob = true;
    return 0;
}

static int f_ties(void *base, const char *v, gp_err *err)
{
    cli *c = base;
    c->ideal_knob = true;
    if (strcmp(v, "random") == 0)
        c->ties = SIM_TIES_RANDOM;
    else if (strcmp(v, "kube") == 0)
        c->ties = SIM_TIES_KUBE;
    else
        return gp_fail(err, "random or kube, not \"%s\"", v);
    return 0;
}

static int f_cpu_pods(void *base, const char *v, gp_err *err)
{
    cli *c = base;
    c->ideal_knob = true;
    if (strcmp(v, "policy") == 0)
        c->cpu_pods = SIM_CPU_PODS_POLICY;
    else if (strcmp(v, "kube") == 0)
        c->cpu_pods = SIM_CPU_PODS_KUBE;
    else
        return gp_fail(err, "policy or kube, not \"%s\"", v);
    return 0;
}

static int f_jobs(void *base, const char *v, gp_err *err)
{
    double j = 0;
    if (parse_double("--jobs", v, 1, 64, &j, err))
        return -1;
    ((cli *)base)->jobs = (int)j;
    return 0;
}

static int f_seeds(void *base, const char *v, gp_err *err)
{
    return parse_seeds(v, base, err);
}

static int f_shapes(void *base, const char *v, gp_err *err)
{
    if (strcmp(v, "trace") && strcmp(v, "trace-gpu") && strcmp(v, "policy"))
        return gp_fail(err, "trace, trace-gpu or policy, not \"%s\"", v);
    ((cli *)base)->shapes_src = v;
    return 0;
}

static int f_shape_weight(void *base, const char *v, gp_err *err)
{
    if (strcmp(v, "pods") && strcmp(v, "gpus"))
        return gp_fail(err, "pods or gpus, not \"%s\"", v);
    ((cli *)base)->by_gpus = strcmp(v, "gpus") == 0;
    return 0;
}

static int f_format(void *base, const char *v, gp_err *err)
{
    if (strcmp(v, "table") && strcmp(v, "csv") && strcmp(v, "json"))
        return gp_fail(err, "table, csv or json, not \"%s\"", v);
    ((cli *)base)->format = v;
    return 0;
}

static int f_csv(void *base, const char *v, gp_err *err)
{
    ((cli *)base)->format = "csv";
    return 0;
}

static int f_json(void *base, const char *v, gp_err *err)
{
    ((cli *)base)->format = "json";
    return 0;
}

#define O(field) offsetof(cli, field)
#define FN(name, fn_, arg, help) GP_FLAG(name, FLAG_FN, 0, arg, help, .fn = fn_)
static const gp_flag sim_flags[] = {
    GP_FLAG("--nodes", FLAG_STR, O(nodes_path), "NODES.csv", "the trace's nodes (required)"),
    GP_FLAG("--pods", FLAG_STR, O(pods_path), "PODS.csv", "the trace's pods (required)"),
    FN("--scheduler-config", f_sched, "FILE",
       "play kube-scheduler v1.26 as this KubeSchedulerConfiguration\n"
       "says (default: manifests/base/scheduler-config.yaml, the shipped\n"
       "deployment); \"none\" = ideal mode: gpupack places every pod\n"
       "over every node (--weight, --ties, --cpu-pods imply it)"),
    GP_FLAG("--policies", FLAG_STR, O(policies_dir), "DIR",
     "the policy set `gpupack serve --policies DIR` would use,\n"
     "trace pods matched as namespace \"trace\", no labels\n"
     "(default with a scheduler configuration: policies/)"),
    GP_FLAG("--extender-no-cpu", FLAG_BOOL, O(extender_no_cpu), NULL,
     "with a scheduler configuration: gpupack does not see host\n"
     "CPU and memory and passes CPU-only pods everywhere (what\n"
     "gpupack did before it tracked them)"),
    GP_FLAG("--policy", FLAG_STR, O(policy_path), "FILE",
     "packing policy (YAML); default: the built-in default"),
    GP_FLAG("--node-strategy", FLAG_STR, O(node_strategy), "NAME", "override the policy's node strategy"),
    GP_FLAG("--gpu-strategy", FLAG_STR, O(gpu_strategy), "NAME", "override the policy's GPU strategy"),
    FN("--mode", f_mode, "filter|prioritize|both",
       "deployment mode (default: the policy's nodeDecision)"),
    FN("--weight", f_weight, "N",
       "extender weight in prioritize mode (default 25, as\n"
       "manifests/base/scheduler-config.yaml ships it)"),
    FN("--ties", f_ties, "random|kube",
       "filter mode: break equal best scores by RNG (default)\n"
       "or by kube-scheduler's LeastAllocated score, as live"),
    FN("--cpu-pods", f_cpu_pods, "policy|kube",
       "CPU-only pods scored by the policy (default, as the\n"
       "paper's simulator) or by kube-scheduler alone (as live)"),
    FN("--seeds", f_seeds, "A..B|A,B,...", "(default 42..51)"),
    GP_FLAG("--inflate", FLAG_DOUBLE, O(inflate), "X",
     "re-sample to X x GPU capacity (default 1.3; 0 = off)", .min = 0, .max = 100),
    GP_FLAG("--dra", FLAG_BOOL, O(dra), NULL,
     "GPU pods ask through DRA ResourceClaims: GPUs are devices\n"
     "shared by memory and compute capacity, the allocator picks\n"
     "the first that fits on the node chosen (docs/dra.md)"),
    GP_FLAG("--departures", FLAG_BOOL, O(departures), NULL,
     "replay creation/deletion times (no shuffle, no inflation)"),
    GP_FLAG("--no-shuffle", FLAG_BOOL, O(no_shuffle), NULL, "keep the file order"),
    GP_FLAG("--churn", FLAG_BOOL, O(churn), NULL,
     "pods leave after a seeded lifetime (exponential) and new\n"
     "ones arrive, in the seeded order of the pod list, cycled,\n"
     "while the offered load (GPU request of running and waiting\n"
     "pods / capacity) is below --churn-load; waiting pods retry\n"
     "when a pod leaves (replaces --inflate)"),
    GP_FLAG("--churn-load", FLAG_DOUBLE, O(churn_load), "X",
     "offered load kept with --churn (default 1.3)", .min = 0, .min_open = true, .max = 100),
    GP_FLAG("--churn-lifetime", FLAG_DOUBLE, O(churn_lifetime), "SECONDS",
     "mean pod lifetime with --churn (default 3600); 0 = pods\n"
     "never leave (the reference protocol's arrivals, pods that\n"
     "fit nowhere waiting instead of failing)", .min = 0, .max = 1e9),
    GP_FLAG("--churn-horizon", FLAG_DOUBLE, O(churn_horizon), "N",
     "run length in mean lifetimes (default 4)", .min = 0, .min_open = true, .max = 1000),
    GP_FLAG("--churn-warmup", FLAG_DOUBLE, O(churn_warmup), "N",
     "measure from N mean lifetimes on (default 1)", .min = 0, .max = 1000),
    GP_FLAG("--consolidate-budget", FLAG_DOUBLE, O(consol_budget), "PCT",
     "with --churn: when a GPU pod fits nowhere, move pods to\n"
     "make room (pack/consolidate.c), as long as moves stay\n"
     "within PCT %% of the pods placed so far (default 0: off)", .min = 0, .max = 100),
    GP_FLAG("--consolidate-max-moves", FLAG_UINT, O(consol_max_moves), "N",
     "moves per waiting pod, at most (default 4)", .min = 1, .max = GP_CONSOL_MOVES_MAX),
    GP_FLAG("--consolidate-checks", FLAG_UINT, O(consol_checks), "N",
     "feasibility checks per plan search (default 20000)", .min = 1, .max = 100000000),
    GP_FLAG("--whole-first", FLAG_BOOL, O(whole_first), NULL,
     "with --churn: while a pod asking whole GPUs waits, a pod\n"
     "asking a GPU share does not start on an entirely free GPU\n"
     "(it waits for room on a GPU in use) on a node that pod\n"
     "could use (--whole-first-near)"),
    GP_FLAG("--whole-first-near", FLAG_UINT, O(whole_first_near), "N",
     "with --whole-first: hold the free GPUs of a node for a\n"
     "waiting whole-GPU pod only while it lacks at most N more\n"
     "(default 1; 8: every node it could run on)", .max = GP_MAX_GPUS_PER_NODE),
    GP_FLAG("--serve", FLAG_CHOICE, O(serve), "arrival|largest|fill",
     "with --churn: when room frees on a node, the order in\n"
     "which the waiting pods that fit it start: oldest first\n"
     "(default), largest GPU request first, or the one after\n"
     "which the waiting pods' sizes fill its GPU best; nothing\n"
     "is held back", .choices = "arrival|largest|fill"),
    GP_FLAG("--defrag-free", FLAG_UINT, O(defrag_free), "N",
     "with --consolidate-budget: background defragmentation;\n"
     "while fewer than N GPUs are entirely free, move pods (one\n"
     "plan per event, counted in the budget) to free one more", .max = 1000000),
    FN("--shapes", f_shapes, "trace|trace-gpu|policy",
       "typical task shapes the strategies use: the pod list's\n"
       "with CPU, its GPU pods only, or the policy's (its\n"
       "spec.shapes, else the built-in ones, as live gpupack;\n"
       "the default with a scheduler configuration, else trace)"),
    GP_FLAG("--coverage", FLAG_DOUBLE, O(coverage), "X",
     "share of pods the typical shapes cover (default 0.95)", .min = 0.01, .max = 1),
    FN("--shape-weight", f_shape_weight, "pods|gpus",
       "shape popularity by pod count (the paper) or by GPUs,\n"
       "a multi-GPU pod counting once per GPU (default)"),
    FN("--format", f_format, "table|csv|json", "report format (default table)"),
    GP_FLAG("--csv", FLAG_FN, 0, NULL, "--format csv", .fn = f_csv, .fn_no_value = true),
    GP_FLAG("--json", FLAG_FN, 0, NULL, "--format json", .fn = f_json, .fn_no_value = true),
    GP_FLAG("--label", FLAG_STR, O(label), "NAME", "policy name in the reports"),
    GP_FLAG("--plot", FLAG_STR, O(plot_path), "FILE.png",
     "chart allocation and fragmentation against arrived load\n"
     "(mean over seeds, one curve per mode; needs gnuplot)"),
    FN("--jobs", f_jobs, "N", "seeds run in parallel (default: online CPUs)"),
    GP_FLAG("--no-cache", FLAG_BOOL, O(no_cache), NULL,
     "evaluate every node for every pod (slow; for checking)"),
    GP_FLAG("--emit-shapes", FLAG_BOOL, O(emit_shapes), NULL,
     "print the pod list's typical shapes (--coverage,\n"
     "--shape-weight) as a policy's spec.shapes, and stop"),
    GP_FLAG("--quiet", FLAG_BOOL, O(quiet), NULL, "no progress on stderr"),
};
#undef FN
#undef O


/* ---------------------------------------------------------- workers -- */

typedef struct job {
    const sim_config *cfg;
    const uint64_t *seeds;
    sim_result *res;
    int n;
    atomic_int next;
    atomic_int done;
    atomic_int failed;
    gp_err err;
    pthread_mutex_t mu;
    bool quiet;
    const char *what;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    gp_thread_set_name("sim");
    for (;;) {
        int k = atomic_fetch_add(&j->next, 1);
        if (k >= j->n)
            break;
        gp_err err;
        if (sim_run(j->cfg, j->seeds[k], &j->res[k], &err) != 0) {
            pthread_mutex_lock(&j->mu);
            j->err = err;
            pthread_mutex_unlock(&j->mu);
            atomic_store(&j->failed, 1);
            break;
        }
        int d = atomic_fetch_add(&j->done, 1) + 1;
        if (!j->quiet) {
            pthread_mutex_lock(&j->mu);
            fprintf(stderr, "simulate: %s seed %llu done in %.1f s (%d/%d)\n", j->what,
                    (unsigned long long)j->seeds[k], j->res[k].wall_s, d, j->n);
            pthread_mutex_unlock(&j->mu);
        }
    }
    return NULL;
}

static int run_seeds(const sim_config *cfg, const cli *c, const char *what, sim_result *res,
                     gp_err *err)
{
    job j;
    memset(&j, 0, sizeof j);
    j.cfg = cfg;
    j.seeds = c->seeds;
    j.res = res;
    j.n = c->nseeds;
    j.quiet = c->quiet;
    j.what = what;
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.mu, NULL);
    int nt = c->jobs < j.n ? c->jobs : j.n;
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < nt && i < 64; i++)
        if (pthread_create(&th[i], NULL, worker, &j) == 0)
            started++;
    if (started == 0)
        worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.mu);
    if (atomic_load(&j.failed)) {
        *err = j.err;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- reports -- */

static void mean_result(const sim_result *r, int n, sim_result *m)
{
    memset(m, 0, sizeof *m);
    m->nsteps = SIM_MAX_STEPS;
    for (int i = 0; i < n; i++)
        if (r[i].nsteps < m->nsteps)
            m->nsteps = r[i].nsteps;
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < m->nsteps; s++) {
            m->step[s].arrived += r[i].step[s].arrived / n;
            m->step[s].alloc += r[i].step[s].alloc / n;
            m->step[s].frag += r[i].step[s].frag / n;
        }
        m->end.arrived += r[i].end.arrived / n;
        m->end.alloc += r[i].end.alloc / n;
        m->end.frag += r[i].end.frag / n;
        m->unalloc_gpus += r[i].unalloc_gpus / n;
        m->wall_s += r[i].wall_s;
        m->pods += r[i].pods;
        m->failed_total += r[i].failed_total;
        for (int k = 0; k < TRACE_KIND_COUNT; k++) {
            m->failed[k] += r[i].failed[k];
            m->arrived[k] += r[i].arrived[k];
        }
    }
}

/* The mean of the churn figures over seeds. */
static void mean_churn(const sim_result *r, int n, sim_churn_stats *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < n; i++) {
        const sim_churn_stats *c = &r[i].churn;
        m->alloc_mean += c->alloc_mean / n;
        m->alloc_min += c->alloc_min / n;
        m->placements += c->placements;
        m->moves += c->moves;
        m->plans += c->plans;
        m->plan_failures += c->plan_failures;
        m->plan_incomplete += c->plan_incomplete;
        m->budget_refusals += c->budget_refusals;
        m->defrag_plans += c->defrag_plans;
        m->defrag_failures += c->defrag_failures;
        m->held_back += c->held_back;
        m->whole_arrived += c->whole_arrived;
        m->whole_waited += c->whole_waited;
        m->whole_wait_mean += c->whole_wait_mean / n;
        m->whole_wait_p50 += c->whole_wait_p50 / n;
        m->whole_wait_p95 += c->whole_wait_p95 / n;
        m->whole_wait_max += c->whole_wait_max / n;
        m->all_arrived += c->all_arrived;
        m->all_wait_mean += c->all_wait_mean / n;
        m->waiting_end += c->waiting_end;
        m->whole_waiting_end += c->whole_waiting_end;
    }
}

static double stddev_churn_alloc(const sim_result *r, int n, double mean)
{
    if (n < 2)
        return 0;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (r[i].churn.alloc_mean - mean) * (r[i].churn.alloc_mean - mean);
    return sqrt(s / (n - 1));
}

static double stddev_alloc(const sim_result *r, int n, double mean)
{
    if (n < 2)
        return 0;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (r[i].end.alloc - mean) * (r[i].end.alloc - mean);
    return sqrt(s / (n - 1));
}

static const char *mode_name(sim_mode m)
{
    return m == SIM_MODE_PRIORITIZE ? "prioritize" : "filter";
}

static const char *serve_name(int s)
{
    return s == SIM_SERVE_LARGEST ? "largest" : s == SIM_SERVE_FILL ? "fill" : "arrival";
}

static void print_table(FILE *f, const cli *c, const sim_result *res, sim_mode mode)
{
    int n = c->nseeds;
    sim_result m;
    mean_result(res, n, &m);
    fprintf(f, "\n== %s, nodeDecision: %s ==\n", c->label, mode_name(mode));
    fprintf(f, "%-6s %8s %8s %9s %7s %7s %5s %5s %5s %5s %5s %5s %5s %7s\n", "seed", "arrived%",
            "alloc%", "unalloc", "frag%", "failed", "cpu", "share", "1gpu", "2gpu", "4gpu",
            "8gpu", "other", "time_s");
    for (int i = 0; i < n; i++) {
        const sim_result *r = &res[i];
        fprintf(f, "%-6llu %8.2f %8.2f %9.1f %7.2f %7ld", (unsigned long long)r->seed,
                100 * r->end.arrived, 100 * r->end.alloc, r->unalloc_gpus, 100 * r->end.frag,
                r->failed_total);
        for (int k = 0; k < TRACE_KIND_COUNT; k++)
            fprintf(f, " %5ld", r->failed[k]);
        fprintf(f, " %7.2f\n", r->wall_s);
    }
    fprintf(f, "%-6s %8.2f %8.2f %9.1f %7.2f %7.1f", "mean", 100 * m.end.arrived,
            100 * m.end.alloc, m.unalloc_gpus, 100 * m.end.frag, (double)m.failed_total / n);
    for (int k = 0; k < TRACE_KIND_COUNT; k++)
        fprintf(f, " %5.1f", (double)m.failed[k] / n);
    fprintf(f, " %7.2f\n", m.wall_s);
    fprintf(f, "alloc%% std over seeds: %.2f\n", 100 * stddev_alloc(res, n, m.end.alloc));
    fprintf(f, "allocation ratio (mean) vs arrived workload:\n  arrived%%");
    for (int s = 0; s < m.nsteps; s++)
        fprintf(f, " %6d", (s + 1) * 10);
    fprintf(f, "\n  alloc%%  ");
    for (int s = 0; s < m.nsteps; s++)
        fprintf(f, " %6.2f", 100 * m.step[s].alloc);
    fprintf(f, "\n  frag%%   ");
    for (int s = 0; s < m.nsteps; s++)
        fprintf(f, " %6.2f", 100 * m.step[s].frag);
    fprintf(f, "\n");
}

/* One churn row: a seed's figures (div 1) or the sums of mean_churn (div n). */
static void churn_row(FILE *f, const char *seed, const sim_churn_stats *s, double frag, double div,
                      double wall)
{
    double moved = s->placements ? 100.0 * (double)s->moves / (double)s->placements : 0;
    double waited = s->whole_arrived ? 100.0 * (double)s->whole_waited / (double)s->whole_arrived
                                     : 0;
    fprintf(f, "%-6s %7.2f %7.2f %6.2f %9.0f %7.0f %6.2f %7.1f %7.1f %8.1f %8.1f %8.1f %7.1f %7.1f %7.2f\n",
            seed, 100 * s->alloc_mean, 100 * s->alloc_min, 100 * frag,
            (double)s->placements / div, (double)s->moves / div, moved,
            (double)s->plan_failures / div, (double)s->whole_arrived / div, waited,
            s->whole_wait_mean / 60, s->whole_wait_p95 / 60, (double)s->whole_waiting_end / div,
            s->all_wait_mean / 60, wall);
}

static void print_churn_table(FILE *f, const cli *c, const sim_result *res, sim_mode mode)
{
    int n = c->nseeds;
    fprintf(f, "\n== %s, nodeDecision: %s, churn: load %.2f, mean lifetime %.0f s, "
               "measured %.2f..%.2f lifetimes, consolidation %s ==\n",
            c->label, mode_name(mode), c->churn_load, c->churn_lifetime, c->churn_warmup,
            c->churn_horizon, c->consol_budget > 0 ? "on" : "off");
    if (c->consol_budget > 0)
        fprintf(f, "consolidation budget %.2f %% of placements, at most %u moves per pod\n",
                c->consol_budget, c->consol_max_moves);

    fprintf(f, "columns: alloc%% (time-weighted mean over the window), its minimum, frag%% at "
               "the end; pods placed, moved, moved%% of placed, plan searches that failed; "
               "whole-GPU pods (>= 1 whole GPU) arrived in the window, %% of them that waited, "
               "their mean and p95 wait (min), still waiting at the end; mean wait of every "
               "pod (min)\n");
    fprintf(f, "%-6s %7s %7s %6s %9s %7s %6s %7s %7s %8s %8s %8s %7s %7s %7s\n", "seed",
            "alloc%", "min%", "frag%", "placed", "moved", "moved%", "nofit", "whole",
            "waited%", "wait_m", "p95_m", "waiting", "all_m", "time_s");
    char seed[32];
    for (int i = 0; i < n; i++) {
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)res[i].seed);
        churn_row(f, seed, &res[i].churn, res[i].end.frag, 1, res[i].wall_s);
    }
    sim_churn_stats m;
    sim_result mr;
    mean_churn(res, n, &m);
    mean_result(res, n, &mr);
    churn_row(f, "mean", &m, mr.end.frag, n, mr.wall_s);
    if (c->defrag_free > 0)
        fprintf(f, "background defragmentation: keeps %u GPUs entirely free; plans %.1f, "
                   "searches without a plan %.1f (means over seeds)\n", c->defrag_free,
                (double)m.defrag_plans / n, (double)m.defrag_failures / n);
    fprintf(f, "alloc%% std over seeds: %.2f\n", 100 * stddev_churn_alloc(res, n, m.alloc_mean));
    fprintf(f, "allocation (mean over seeds) over time:\n  lifetimes");
    for (int k = 0; k < mr.nsteps; k++)
        fprintf(f, " %6.2f", mr.step[k].arrived);
    fprintf(f, "\n  alloc%%   ");
    for (int k = 0; k < mr.nsteps; k++)
        fprintf(f, " %6.2f", 100 * mr.step[k].alloc);
    fprintf(f, "\n  frag%%    ");
    for (int k = 0; k < mr.nsteps; k++)
        fprintf(f, " %6.2f", 100 * mr.step[k].frag);
    fprintf(f, "\n");
}

static void print_churn_csv(FILE *f, const cli *c, const sim_result *res, sim_mode mode)
{
    int n = c->nseeds;
    sim_result mr;
    mean_result(res, n, &mr);
    fprintf(f, "policy,mode,seed,load,lifetime_s,budget_pct,max_moves,alloc_pct,alloc_min_pct,"
               "frag_end_pct,placed,moved,moved_pct,plans,plan_failures,plan_incomplete,budget_refusals,"
               "defrag_free,defrag_plans,defrag_failures,whole_first,held_back,serve,"
               "whole_arrived,whole_waited_pct,whole_wait_mean_s,whole_wait_p50_s,"
               "whole_wait_p95_s,whole_wait_max_s,whole_waiting_end,all_wait_mean_s,"
               "waiting_end,wall_s");
    for (int k = 0; k < mr.nsteps; k++)
        fprintf(f, ",alloc_pct_t%.2f", mr.step[k].arrived);
    fprintf(f, "\n");
    for (int i = 0; i <= n; i++) {
        sim_churn_stats m;
        const sim_churn_stats *s;
        const sim_result *r;
        double div = 1;
        char seed[32];
        if (i == n) {
            mean_churn(res, n, &m);
            s = &m;
            r = &mr;
            div = n;
            gp_strlcpy(seed, "mean", sizeof seed);
        } else {
            s = &res[i].churn;
            r = &res[i];
            snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
        }
        double moved = s->placements ? 100.0 * (double)s->moves / (double)s->placements : 0;
        double waited = s->whole_arrived
                            ? 100.0 * (double)s->whole_waited / (double)s->whole_arrived
                            : 0;
        fprintf(f, "%s,%s,%s,%.2f,%.0f,%.2f,%u,%.4f,%.4f,%.4f,%.1f,%.1f,%.4f,%.1f,%.1f,%.1f,%.1f,"
                   "%u,%.1f,%.1f,%d,%.1f,%s,"
                   "%.1f,%.2f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f",
                c->label, mode_name(mode), seed, c->churn_load, c->churn_lifetime,
                c->consol_budget, c->consol_max_moves, 100 * s->alloc_mean, 100 * s->alloc_min,
                100 * r->end.frag, (double)s->placements / div, (double)s->moves / div, moved,
                (double)s->plans / div, (double)s->plan_failures / div,
                (double)s->plan_incomplete / div, (double)s->budget_refusals / div,
                c->defrag_free, (double)s->defrag_plans / div, (double)s->defrag_failures / div,
                c->whole_first ? 1 : 0, (double)s->held_back / div, serve_name(c->serve),
                (double)s->whole_arrived / div, waited,
                s->whole_wait_mean, s->whole_wait_p50, s->whole_wait_p95, s->whole_wait_max,
                (double)s->whole_waiting_end / div, s->all_wait_mean,
                (double)s->waiting_end / div, r->wall_s / div);
        for (int k = 0; k < mr.nsteps; k++)
            fprintf(f, ",%.4f", k < r->nsteps ? 100 * r->step[k].alloc : 0.0);
        fprintf(f, "\n");
    }
}

static void csv_row(FILE *f, const cli *c, sim_mode mode, const char *seed, const char *point,
                    const sim_point *pt, const sim_result *r, double div, int gpus)
{
    fprintf(f, "%s,%s,%s,%s,%.4f,%.4f,%.1f,%.4f", c->label, mode_name(mode), seed, point,
            100 * pt->arrived, 100 * pt->alloc, (1 - pt->alloc) * gpus, 100 * pt->frag);
    fprintf(f, ",%.1f", (double)r->failed_total / div);
    for (int k = 0; k < TRACE_KIND_COUNT; k++)
        fprintf(f, ",%.1f", (double)r->failed[k] / div);
    fprintf(f, ",%.3f\n", r->wall_s / div);
}

static void print_csv_header(FILE *f)
{
    fprintf(f, "policy,mode,seed,point,arrived_pct,alloc_pct,unalloc_gpus,frag_pct,failed");
    for (int k = 0; k < TRACE_KIND_COUNT; k++)
        fprintf(f, ",failed_%s", trace_kind_name((trace_kind)k));
    fprintf(f, ",wall_s\n");
}

static void print_csv(FILE *f, const cli *c, const sim_result *res, sim_mode mode, int gpus)
{
    char seed[32], point[16];
    for (int i = 0; i <= c->nseeds; i++) {
        sim_result m;
        const sim_result *r = &res[i < c->nseeds ? i : 0];
        double div = 1;
        if (i == c->nseeds) {
            mean_result(res, c->nseeds, &m);
            r = &m;
            div = c->nseeds;
            gp_strlcpy(seed, "mean", sizeof seed);
        } else {
            snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
        }
        for (int s = 0; s < r->nsteps; s++) {
            snprintf(point, sizeof point, "%d", (s + 1) * 10);
            csv_row(f, c, mode, seed, point, &r->step[s], r, div, gpus);
        }
        csv_row(f, c, mode, seed, "end", &r->end, r, div, gpus);
    }
}

/* --plot: the mean curve of every mode run. */
static int plot_modes(const cli *c, sim_result *const *res, gp_err *err)
{
    sim_result mean[2];
    sim_plot_series series[2];
    for (int m = 0; m < c->nmodes; m++) {
        mean_result(res[m], c->nseeds, &mean[m]);
        series[m] = (sim_plot_series){c->label, mode_name(c->modes[m]), &mean[m]};
    }
    return sim_plot_write(c->plot_path, series, c->nmodes, err);
}

static json_t *json_point(const sim_point *p)
{
    return json_pack("{s:f,s:f,s:f}", "arrived", p->arrived, "alloc", p->alloc, "frag", p->frag);
}

static json_t *json_result(const sim_result *r, int gpus, double div)
{
    json_t *steps = json_array();
    for (int s = 0; s < r->nsteps; s++)
        json_array_append_new(steps, json_point(&r->step[s]));
    json_t *failed = json_object(), *arrived = json_object();
    for (int k = 0; k < TRACE_KIND_COUNT; k++) {
        json_object_set_new(failed, trace_kind_name((trace_kind)k),
                            json_real((double)r->failed[k] / div));
        json_object_set_new(arrived, trace_kind_name((trace_kind)k),
                            json_real((double)r->arrived[k] / div));
    }
    json_t *ch = json_pack(
        "{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "alloc_mean",
        r->churn.alloc_mean, "alloc_min", r->churn.alloc_min, "placed",
        (double)r->churn.placements / div, "moved", (double)r->churn.moves / div, "plans",
        (double)r->churn.plans / div, "plan_failures", (double)r->churn.plan_failures / div,
        "whole_arrived", (double)r->churn.whole_arrived / div, "whole_waited",
        (double)r->churn.whole_waited / div, "whole_wait_mean_s", r->churn.whole_wait_mean,
        "whole_wait_p50_s", r->churn.whole_wait_p50, "whole_wait_p95_s", r->churn.whole_wait_p95,
        "whole_waiting_end", (double)r->churn.whole_waiting_end / div, "all_wait_mean_s",
        r->churn.all_wait_mean, "waiting_end", (double)r->churn.waiting_end / div);
    return json_pack("{s:o,s:o,s:o,s:f,s:f,s:o,s:o,s:f}", "churn", ch, "steps", steps, "end", json_point(&r->end),
                     "unalloc_gpus", (1 - r->end.alloc) * gpus, "failed_total",
                     (double)r->failed_total / div, "failed", failed, "arrived", arrived,
                     "wall_s", r->wall_s / div);
}

static json_t *json_mode(const cli *c, const sim_result *res, sim_mode mode, int gpus)
{
    json_t *runs = json_array();
    for (int i = 0; i < c->nseeds; i++) {
        json_t *o = json_result(&res[i], gpus, 1);
        json_object_set_new(o, "seed", json_integer((json_int_t)res[i].seed));
        json_array_append_new(runs, o);
    }
    sim_result m;
    mean_result(res, c->nseeds, &m);
    return json_pack("{s:s,s:o,s:o}", "mode", mode_name(mode), "runs", runs, "mean",
                     json_result(&m, gpus, c->nseeds));
}

/* spec.shapes of a policy (docs/policies.md), from typical shapes. */
static void print_shapes(FILE *f, const gp_shapes *sh, const char *src)
{
    fprintf(f, "  # typical task shapes of %s (gpupack simulate --emit-shapes)\n", src);
    fprintf(f, "  shapes:\n");
    for (int i = 0; i < sh->n; i++) {
        const gp_shape *s = &sh->s[i];
        fprintf(f, "    - {gpus: %d, core: %g, weight: %.5f", s->count, s->core / 10.0, s->weight);
        if (s->cpu_milli > 0)
            fprintf(f, ", cpuMilli: %lld", (long long)s->cpu_milli);
        if (s->models[0]) {
            fprintf(f, ", gpuModels: [");
            const char *m = s->models;
            for (int k = 0; *m; k++) {
                size_t len = strcspn(m, "|");
                fprintf(f, "%s\"%.*s\"", k ? ", " : "", (int)len, m);
                m += len;
                if (*m == '|')
                    m++;
            }
            fprintf(f, "]");
        }
        fprintf(f, "}\n");
    }
}

/* ------------------------------------------------------------- main -- */

/* The policy that governs trace pods: --policy FILE through the policy
 * loader when given, else the built-in default set. A file with one policy
 * is replayed under that policy whatever its match says (that is what tuning
 * it offline means); a file with several is matched like a live cluster
 * would match pods of a namespace "trace" without labels. --policies DIR
 * loads a directory as `gpupack serve --policies` does and matches the same
 * way. The set behind the view is returned in *keep (unref when done). */
static int load_policy(const char *path, const char *dir, gp_policy_view *view,
                       gp_policy_set **keep, gp_err *err)
{
    gp_policy_set *set = NULL;
    *keep = NULL;
    if (path) {
        if (policy_set_load_file(path, &set, err) != 0)
            return -1;
    } else if (dir) {
        policy_store *st = NULL;
        if (policy_store_open(dir, &st, err) != 0)
            return -1;
        set = policy_store_current(st);
        policy_store_free(st);   /* the set stays valid while referenced */
        *keep = set;
        return policy_select(set, "trace", NULL, NULL, time(NULL), view, err);
    } else {
        set = policy_set_default();
    }
    const char *only = NULL;
    int own = 0;
    for (int i = 0; i < policy_set_count(set); i++) {
        const char *n = policy_set_name_at(set, i);
        if (n && strcmp(n, "default") != 0) {
            only = n;
            own++;
        }
    }
    int rc = path && own == 1 ? policy_view_by_name(set, only, view, err)
                              : policy_select(set, "trace", NULL, NULL, time(NULL), view, err);
    /* the view points into static tables or into the set: the caller keeps
     * a set loaded from a file until it is done */
    if (!path)
        policy_set_unref(set);
    else
        *keep = set;
    return rc;
}

static const gp_command sim_cmd = {
    "gpupack simulate", "--nodes NODES.csv --pods PODS.csv [flags]",
    "Replays a trace through gpupack's placement code (and a model of kube-scheduler) and\n"
    "reports allocation, fragmentation and failed pods per seed.",
    sim_flags, GP_ARRAY_LEN(sim_flags), NULL, 0};

static void print_strategies(FILE *f)
{
    fprintf(f, "\nstrategies: node:");
    for (const char *const *n = placement_node_strategy_names(); *n; n++)
        fprintf(f, " %s", *n);
    fprintf(f, "; gpu:");
    for (const char *const *n = placement_gpu_strategy_names(); *n; n++)
        fprintf(f, " %s", *n);
    fprintf(f, "\n");
}

/* The command line into c, with the defaults; FLAGS_OK, FLAGS_HELP or
 * FLAGS_ERROR (flags.h). */
static int sim_parse(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    c->format = "table";
    c->shapes_src = NULL;   /* default: policy with a scheduler configuration, else trace */
    c->coverage = 0.95;
    c->by_gpus = true;
    c->jobs = gp_cpus_usable();
    if (c->jobs < 1)
        c->jobs = 1;
    c->inflate = 1.3;
    c->churn_load = 1.3;
    c->churn_lifetime = 3600;
    c->churn_horizon = 4;
    c->churn_warmup = 1;
    c->consol_max_moves = 4;
    c->whole_first_near = 1;
    c->consol_checks = GP_CONSOL_BUDGET_DEFAULT;
    c->weight = SIM_DEFAULT_WEIGHT;
    c->ties = SIM_TIES_RANDOM;
    c->cpu_pods = SIM_CPU_PODS_POLICY;
    for (uint64_t s = 42; s <= 51; s++)
        c->seeds[c->nseeds++] = s;
    int rc = flags_parse(&sim_cmd, argc, argv, c, NULL, NULL);
    if (rc == FLAGS_HELP)
        print_strategies(stdout);
    if (rc != FLAGS_OK)
        return rc;
    if (!c->nodes_path || !c->pods_path)
        return flags_error(&sim_cmd, "--nodes and --pods are required");
    if (c->consol_budget > 0 && !c->churn)
        return flags_error(&sim_cmd, "--consolidate-budget needs --churn");
    if (c->whole_first && !c->churn)
        return flags_error(&sim_cmd, "--whole-first needs --churn");
    if (c->serve != SIM_SERVE_ARRIVAL && !c->churn)
        return flags_error(&sim_cmd, "--serve needs --churn");
    if (c->defrag_free > 0 && !(c->consol_budget > 0))
        return flags_error(&sim_cmd, "--defrag-free needs --consolidate-budget (its moves count in it)");
    if (c->churn && c->departures)
        return flags_error(&sim_cmd, "--churn and --departures exclude each other");
    if (c->churn && c->churn_warmup >= c->churn_horizon)
        return flags_error(&sim_cmd, "--churn-warmup must be below --churn-horizon");
    if (c->node_strategy && !placement_node_strategy(c->node_strategy))
        return flags_error(&sim_cmd, "unknown node strategy \"%s\"", c->node_strategy);
    if (c->gpu_strategy && !placement_gpu_strategy(c->gpu_strategy))
        return flags_error(&sim_cmd, "unknown GPU strategy \"%s\"", c->gpu_strategy);
    return FLAGS_OK;
}

/* One simulate command: what it loaded, how it is configured, what it found. */
typedef struct sim_run {
    trace_node *nodes;
    trace_pod *pods;
    size_t nnodes, npods;
    schedcfg kube;
    gp_policy_set *set;
    gp_policy_view view;
    gp_shapes *shapes;
    sim_config cfg;
    sim_result *res[2];
    int gpus;
    int64_t cap_milli;
    char label[256];
} sim_job;

/* The scheduler configuration, the policy (with --node-strategy and
 * --gpu-strategy applied) and the trace. */
static int sim_load(cli *c, sim_job *r, gp_err *err)
{
    if (!c->sched_explicit && !c->ideal_knob) {
        if (access(SIM_SCHEDULER_CONFIG, R_OK) == 0)
            c->sched_path = SIM_SCHEDULER_CONFIG;
        else
            fprintf(stderr, "simulate: no %s here (run from the repository root, or give "
                            "--scheduler-config FILE): ideal mode\n", SIM_SCHEDULER_CONFIG);
    }
    if (c->sched_path) {
        if (schedcfg_load(c->sched_path, &r->kube, err))
            return -1;
        if (!c->policy_path && !c->policies_dir && access(SIM_POLICIES_DIR, R_OK) == 0)
            c->policies_dir = SIM_POLICIES_DIR;
    }
    if (load_policy(c->policy_path, c->policies_dir, &r->view, &r->set, err))
        return -1;
    if (c->node_strategy)
        r->view.place.node = placement_node_strategy(c->node_strategy);
    if (c->gpu_strategy)
        r->view.place.gpu = placement_gpu_strategy(c->gpu_strategy);
    if (!c->mode_set) {
        c->nmodes = 1;
        c->modes[0] = r->view.decide_in_filter ? SIM_MODE_FILTER : SIM_MODE_PRIORITIZE;
    }
    if (trace_load_nodes(c->nodes_path, &r->nodes, &r->nnodes, err) ||
        trace_load_pods(c->pods_path, &r->pods, &r->npods, err))
        return -1;
    return 0;
}

/* The replay's configuration from the command line and what was loaded. */
static void sim_configure(cli *c, sim_job *r)
{
    r->shapes = xcalloc(1, sizeof *r->shapes);
    if (!c->shapes_src)
        c->shapes_src = c->sched_path ? "policy" : "trace";
    trace_shapes(r->pods, r->npods, c->coverage, strcmp(c->shapes_src, "trace-gpu") != 0,
                 c->by_gpus, r->shapes);
    sim_config *cfg = &r->cfg;
    memset(cfg, 0, sizeof *cfg);
    cfg->nodes = r->nodes;
    cfg->nnodes = r->nnodes;
    cfg->pods = r->pods;
    cfg->npods = r->npods;
    cfg->place = r->view.place;
    /* the policy's shapes are what live gpupack uses (the built-in ones when
     * the policy has none): the default when playing the deployment */
    if (strcmp(c->shapes_src, "policy") != 0)
        cfg->place.shapes = r->shapes;
    cfg->shapes = r->shapes;
    cfg->weight = c->weight;
    cfg->ties = c->ties;
    cfg->cpu_pods = c->cpu_pods;
    cfg->inflate = c->departures ? 0 : c->inflate;
    cfg->departures = c->departures;
    cfg->shuffle = !c->no_shuffle && !c->departures;
    cfg->cache = !c->no_cache;
    cfg->kube = c->sched_path ? &r->kube : NULL;
    cfg->extender_cpu = !c->extender_no_cpu;
    cfg->dra = c->dra;
    cfg->churn = c->churn;
    cfg->churn_load = c->churn_load;
    cfg->churn_lifetime = c->churn_lifetime;
    cfg->churn_horizon = c->churn_horizon;
    cfg->churn_warmup = c->churn_warmup;
    cfg->consol_budget = c->consol_budget;
    cfg->defrag_free = (int)c->defrag_free;
    cfg->whole_first = c->whole_first;
    cfg->whole_first_near = (int)c->whole_first_near;
    cfg->serve = (sim_serve)c->serve;
    cfg->consol_max_moves = (int)c->consol_max_moves;
    cfg->consol_checks = (int)c->consol_checks;
    if (c->churn)
        cfg->inflate = 0;
    if (!c->label) {
        snprintf(r->label, sizeof r->label, "%s/%s",
                 cfg->place.node ? cfg->place.node->name : "binpack",
                 cfg->place.gpu ? cfg->place.gpu->name : "best-fit");
        c->label = r->label;
    }
    sim_capacity(r->nodes, r->nnodes, &r->gpus, &r->cap_milli);
}

static void report_json(FILE *f, const cli *c, const sim_job *r, double wall)
{
    json_t *modes = json_array();
    for (int m = 0; m < c->nmodes; m++)
        json_array_append_new(modes, json_mode(c, r->res[m], c->modes[m], r->gpus));
    json_t *root = json_pack(
        "{s:s,s:s,s:s,s:i,s:i,s:f,s:b,s:i,s:s,s:s,s:i,s:o,s:f}", "policy", c->label, "nodes",
        c->nodes_path, "pods", c->pods_path, "gpus", r->gpus, "seeds", c->nseeds, "inflate",
        r->cfg.inflate, "departures", c->departures, "weight", c->weight, "ties",
        c->ties == SIM_TIES_KUBE ? "kube" : "random", "cpu_pods",
        c->cpu_pods == SIM_CPU_PODS_KUBE ? "kube" : "policy", "shapes", r->shapes->n, "modes",
        modes, "wall_s", wall);
    json_object_set_new(root, "scheduler_config",
                        c->sched_path ? json_string(c->sched_path) : json_null());
    char *s = json_dumps(root, JSON_INDENT(2));
    if (s)
        fprintf(f, "%s\n", s);
    free(s);
    json_decref(root);
}

static void report_table_head(FILE *f, const cli *c, const sim_job *r)
{
    const schedcfg *kube = r->cfg.kube;
    fprintf(f, "gpupack simulate: %s (%zu node%s, %d GPU%s) x %s (%zu pod%s), inflate %.2f%s%s, "
               "%d seed%s, %d typical shape%s\n",
            c->nodes_path, r->nnodes, gp_s((long long)r->nnodes), r->gpus, gp_s(r->gpus),
            c->pods_path, r->npods, gp_s((long long)r->npods), r->cfg.inflate,
            c->churn ? ", churn" : c->departures ? ", departures" : "", c->dra ? ", GPUs through DRA claims" : "", c->nseeds, gp_s(c->nseeds), r->shapes->n,
            gp_s(r->shapes->n));
    if (kube)
        fprintf(f, "scheduler: %s (percentageOfNodesToScore %d%s, NodeResourcesFit %s x%d, "
                   "BalancedAllocation x%d, extender %s weight %d, %d managedResources), "
                   "policies %s, gpupack %s host CPU\n",
                c->sched_path, kube->pct, kube->pct ? "" : " = adaptive",
                kube->strategy == SCHEDCFG_MOST_ALLOCATED ? "MostAllocated"
                : kube->strategy == SCHEDCFG_LEAST_ALLOCATED ? "LeastAllocated"
                                                             : "RequestedToCapacityRatio",
                kube->w_fit, kube->w_bal, kube->has_extender ? "yes" : "none", kube->ext_weight,
                kube->nmanaged, c->policy_path ? c->policy_path : c->policies_dir ? c->policies_dir
                                                                                : "built-in",
                r->cfg.extender_cpu ? "sees" : "does not see");
    else
        fprintf(f, "scheduler: none (ideal: gpupack places every pod over every node)\n");
}

static void report_table(FILE *f, const cli *c, const sim_job *r, double wall)
{
    report_table_head(f, c, r);
    fprintf(f, "columns: arrived%% and alloc%% of GPU capacity at the end; unalloc = "
               "unallocated GPUs; frag%% = fragment / idle GPU share; failed pods by kind\n");
    for (int m = 0; m < c->nmodes; m++)
        print_table(f, c, r->res[m], c->modes[m]);
    fprintf(f, "\nwall time: %.2f s\n", wall);
}

static void sim_job_free(sim_job *r)
{
    policy_set_unref(r->set);
    free(r->shapes);
    free(r->res[0]);
    free(r->res[1]);
    free(r->pods);
    free(r->nodes);
}

/* --plot FILE: its directory must exist and be writable, checked before a
 * run that may take minutes. */
static int plot_dir_ok(const char *png, gp_err *err)
{
    const char *slash = strrchr(png, '/');
    char dir[4096];
    if (!slash)
        gp_strlcpy(dir, ".", sizeof dir);
    else if (slash == png)
        gp_strlcpy(dir, "/", sizeof dir);
    else if ((size_t)(slash - png) >= sizeof dir)
        return gp_fail(err, "--plot %.200s: path too long", png);
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - png), png);
    struct stat st;
    if (stat(dir, &st) != 0)
        return gp_fail(err, "--plot %s: directory %s: %s", png, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gp_fail(err, "--plot %s: %s is not a directory", png, dir);
    if (access(dir, W_OK) != 0)
        return gp_fail(err, "--plot %s: cannot write in directory %s: %s", png, dir,
                       strerror(errno));
    return 0;
}

int sim_main(int argc, char **argv)
{
    cli c;
    int prc = sim_parse(argc, argv, &c);
    if (prc != FLAGS_OK)
        return prc == FLAGS_HELP ? 0 : 2;
    int status = 1;
    gp_err err;
    sim_job r;
    memset(&r, 0, sizeof r);
    if (c.plot_path && plot_dir_ok(c.plot_path, &err))
        goto fail;
    if (sim_load(&c, &r, &err))
        goto fail;
    if (c.emit_shapes) {
        gp_shapes sh;
        trace_shapes(r.pods, r.npods, c.coverage, true, c.by_gpus, &sh);
        print_shapes(stdout, &sh, c.pods_path);
        status = 0;
        goto done;
    }
    sim_configure(&c, &r);
    if (!c.quiet)
        fprintf(stderr,
                "simulate: %zu node%s (%d GPU%s), %zu pod%s, %s, %d typical shape%s, %d seed%s, "
                "%d job%s\n",
                r.nnodes, gp_s((long long)r.nnodes), r.gpus, gp_s(r.gpus), r.npods,
                gp_s((long long)r.npods), c.label, r.shapes->n, gp_s(r.shapes->n), c.nseeds,
                gp_s(c.nseeds), c.jobs, gp_s(c.jobs));
    double t0 = gp_mono_s();
    for (int m = 0; m < c.nmodes; m++) {
        r.cfg.mode = c.modes[m];
        r.res[m] = xcalloc((size_t)c.nseeds, sizeof *r.res[m]);
        if (run_seeds(&r.cfg, &c, mode_name(r.cfg.mode), r.res[m], &err))
            goto fail;
    }
    double wall = gp_mono_s() - t0;
    if (c.churn && strcmp(c.format, "json") != 0) {
        bool csv = strcmp(c.format, "csv") == 0;
        if (!csv)
            report_table_head(stdout, &c, &r);
        for (int m = 0; m < c.nmodes; m++)
            (csv ? print_churn_csv : print_churn_table)(stdout, &c, r.res[m], c.modes[m]);
        if (!csv)
            fprintf(stdout, "\nwall time: %.2f s\n", wall);
    } else if (strcmp(c.format, "csv") == 0) {
        print_csv_header(stdout);
        for (int m = 0; m < c.nmodes; m++)
            print_csv(stdout, &c, r.res[m], c.modes[m], r.gpus);
    } else if (strcmp(c.format, "json") == 0) {
        report_json(stdout, &c, &r, wall);
    } else {
        report_table(stdout, &c, &r, wall);
    }
    if (c.plot_path && plot_modes(&c, r.res, &err))
        goto fail;
    if (!c.quiet)
        fprintf(stderr, "simulate: wall time %.2f s\n", wall);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "gpupack simulate: %s\n", err.msg);
done:
    sim_job_free(&r);
    return status;
}
