/* placement.c -- fitting one pod onto one node's GPUs; strategies as tables. */
#include "pack/placement.h"

#include "pack/frag.h"   /* fragmentation-aware and baseline strategy rows */
#include "model/formats.h"
#include "pack/frag_la.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct gp_place_ctx {
    const gp_node *node;
    const gp_place_opts *opts;
    int64_t base_mem[GP_MAX_GPUS_PER_NODE];   /* free before this pod */
    int base_core[GP_MAX_GPUS_PER_NODE];
    int64_t reg_mem[GP_MAX_GPUS_PER_NODE];    /* this pod's regular containers */
    int reg_core[GP_MAX_GPUS_PER_NODE];
    int64_t init_mem[GP_MAX_GPUS_PER_NODE];   /* this pod's largest init container */
    int init_core[GP_MAX_GPUS_PER_NODE];
    bool touched[GP_MAX_GPUS_PER_NODE];
    bool allowed[GP_MAX_GPUS_PER_NODE];       /* healthy and of an allowed model */
    bool init_phase;
};

/* ---------------------------------------------------------------- ctx -- */

static int64_t hold_mem(const gp_place_ctx *x, int pos)
{
    return x->reg_mem[pos] > x->init_mem[pos] ? x->reg_mem[pos] : x->init_mem[pos];
}

static int hold_core(const gp_place_ctx *x, int pos)
{
    return x->reg_core[pos] > x->init_core[pos] ? x->reg_core[pos] : x->init_core[pos];
}

const gp_node *place_ctx_node(const gp_place_ctx *ctx)
{
    return ctx->node;
}

int64_t place_ctx_mem_free(const gp_place_ctx *ctx, int pos)
{
    return ctx->base_mem[pos] - hold_mem(ctx, pos);
}

int place_ctx_core_free(const gp_place_ctx *ctx, int pos)
{
    return ctx->base_core[pos] - hold_core(ctx, pos);
}

const gp_place_opts *place_ctx_opts(const gp_place_ctx *ctx)
{
    return ctx->opts;
}

static int64_t alloc_mem(const gp_gpu *g, const gp_place_opts *o)
{
    int64_t a = g->info.mem_total - o->reserve_mem_mib;
    return a > 0 ? a : 0;
}

static void weights(const gp_place_opts *o, double *wm, double *wc)
{
    *wm = o->w_mem;
    *wc = o->w_core;
    if (*wm <= 0 && *wc <= 0)
        *wm = *wc = 1.0;
}

/* Utilisation of one GPU after adding (mem, core): weighted mean of memory
 * and compute fractions in 0..1. Shared by strategies. */
static double placement_gpu_util(const gp_gpu *g, int64_t mem_add, int core_add,
                                 const gp_place_opts *o)
{
    double wm, wc;
    weights(o, &wm, &wc);
    int64_t am = alloc_mem(g, o);
    double fm = am > 0 ? (double)(g->mem_used + mem_add) / (double)am : 1.0;
    double fc = g->info.core_total > 0 ? (double)(g->core_used + core_add) / g->info.core_total : 1.0;
    return (wm * fm + wc * fc) / (wm + wc);
}

/* ------------------------------------------------------ GPU strategies -- */

/* Leftover after placing, as a weighted fraction: the tightest GPU wins. */
static double cost_best_fit(const gp_place_ctx *x, int pos, const gp_ctr_req *r)
{
    const gp_gpu *g = &x->node->gpus[pos];
    double wm, wc;
    weights(x->opts, &wm, &wc);
    int64_t am = alloc_mem(g, x->opts);
    int64_t need = gp_ctr_mem_on(r, am);
    double lm = am > 0 ? (double)(place_ctx_mem_free(x, pos) - need) / (double)am : 0;
    double lc = (double)(place_ctx_core_free(x, pos) - r->core) / GP_CORE_FULL;
    return (wm * lm + wc * lc) / (wm + wc);
}

/* Most-used GPU first (fills GPUs that already host pods). */
static double cost_binpack(const gp_place_ctx *x, int pos, const gp_ctr_req *r)
{
    const gp_gpu *g = &x->node->gpus[pos];
    int64_t held = hold_mem(x, pos);
    return -placement_gpu_util(g, held, hold_core(x, pos), x->opts);
}

/* Least-used GPU first (isolation, latency). */
static double cost_spread(const gp_place_ctx *x, int pos, const gp_ctr_req *r)
{
    return -cost_binpack(x, pos, r);
}

/* Lowest device index that fits. */
static double cost_first_fit(const gp_place_ctx *x, int pos, const gp_ctr_req *r)
{
    return 0.0;
}

static const gp_gpu_strategy gpu_strategies[] = {
    {"best-fit", "the GPU left with the least free memory and compute", cost_best_fit, false},
    {"binpack", "the most used GPU that fits", cost_binpack, false},
    {"spread", "the least used GPU that fits", cost_spread, false},
    {"first-fit", "the lowest device index that fits", cost_first_fit, false},
    {"fragmentation-aware",
     "the GPU whose use leaves the node least fragmented for the typical task shapes (FGD)",
     frag_gpu_cost_fgd, false},
    {"random", "a pseudo-random GPU that fits, stable per container and node", frag_gpu_cost_random,
     true},
    /* more GPU strategies: add rows here */
};

/* ----------------------------------------------------- node strategies -- */

/* Weighted utilisation of the node's healthy GPUs after the placement. */
static double node_util_after(const gp_node *n, const gp_assignment *a, const gp_place_opts *o)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    double sum = 0;
    int count = 0;
    for (int i = 0; i < n->ngpus; i++) {
        const gp_gpu *g = &n->gpus[i];
        if (!g->info.healthy)
            continue;
        int64_t am = 0;
        int ac = 0;
        for (int h = 0; h < nh; h++) {
            if (holds[h].index == g->info.index) {
                am = holds[h].mem_mib;
                ac = holds[h].core;
            }
        }
        sum += placement_gpu_util(g, am, ac, o);
        count++;
    }
    return count ? sum / count : 0.0;
}

static double score_binpack(const gp_node *n, const gp_pod_req *r, const gp_assignment *a,
                            const gp_place_opts *o)
{
    return node_util_after(n, a, o);
}

static double score_spread(const gp_node *n, const gp_pod_req *r, const gp_assignment *a,
                           const gp_place_opts *o)
{
    return -node_util_after(n, a, o);
}

static const gp_node_strategy node_strategies[] = {
    {"binpack", "the node whose GPUs are most used after placement", score_binpack},
    {"spread", "the node whose GPUs are least used after placement", score_spread},
    {"fragmentation-aware",
     "the node whose expected fragmentation for the typical task shapes drops most (FGD)",
     frag_node_score_fgd},
    {"fragmentation-aware-bestfit",
     "fragmentation-aware, near-ties broken towards the fuller node", frag_node_score_fgd_bestfit},
    {"fragmentation-aware-lookahead",
     "fragmentation-aware-bestfit, also counting the fragment the next typical pod would leave",
     frag_node_score_lookahead},
    {"best-fit", "the node left with the least free GPU share and CPU", frag_node_score_best_fit},
    {"random", "all fitting nodes score alike; the scheduler's tie-breaking picks",
     frag_node_score_none},
    /* more node strategies: add rows here */
};

/* --------------------------------------------------------------- tables -- */

#define NGPU_STRATEGIES GP_ARRAY_LEN(gpu_strategies)
#define NNODE_STRATEGIES GP_ARRAY_LEN(node_strategies)
static const char *gpu_names[NGPU_STRATEGIES + 1];
static const char *node_names[NNODE_STRATEGIES + 1];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void)
{
    for (size_t i = 0; i < NGPU_STRATEGIES; i++)
        gpu_names[i] = gpu_strategies[i].name;
    for (size_t i = 0; i < NNODE_STRATEGIES; i++)
        node_names[i] = node_strategies[i].name;
}

const gp_gpu_strategy *placement_gpu_strategy(const char *name)
{
    for (size_t i = 0; i < NGPU_STRATEGIES; i++)
        if (strcmp(gpu_strategies[i].name, name) == 0)
            return &gpu_strategies[i];
    return NULL;
}

const gp_node_strategy *placement_node_strategy(const char *name)
{
    for (size_t i = 0; i < NNODE_STRATEGIES; i++)
        if (strcmp(node_strategies[i].name, name) == 0)
            return &node_strategies[i];
    return NULL;
}

const char *const *placement_gpu_strategy_names(void)
{
    pthread_once(&names_once, names_init);
    return gpu_names;
}

const char *const *placement_node_strategy_names(void)
{
    pthread_once(&names_once, names_init);
    return node_names;
}

void placement_default_opts(gp_place_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpu = &gpu_strategies[0];
    o->node = &node_strategies[0];
    o->w_mem = 1.0;
    o->w_core = 1.0;
}

/* ------------------------------------------------------------- fitting -- */

/* The pod's model rules and the policy's both allow a GPU of this model. */
static bool models_allow(const gp_pod_req *req, const gp_place_opts *o, gp_model_ref ref)
{
    const char *model = gp_model_name(ref);
    return gp_req_model_ok(req, model) && gp_model_allowed(o->models, model);
}

/* Touches only the node's GPUs: the arrays are sized for the largest node,
 * and clearing all of them per node dominated filter time on big clusters. */
static void ctx_init(gp_place_ctx *x, const gp_node *node, const gp_pod_req *req,
                     const gp_place_opts *o, bool empty)
{
    x->node = node;
    x->opts = o;
    x->init_phase = false;
    bool any_models = req->models[0] || o->models[0] || req->type_use[0] || req->type_nouse[0];
    gp_model_ref last = 0;   /* a node's GPUs are mostly of one model: its verdict once */
    bool last_ok = false, have_last = false;
    for (int i = 0; i < node->ngpus; i++) {
        const gp_gpu *g = &node->gpus[i];
        x->base_mem[i] = alloc_mem(g, o) - (empty ? 0 : g->mem_used);
        x->base_core[i] = g->info.core_total - (empty ? 0 : g->core_used);
        x->reg_mem[i] = x->init_mem[i] = 0;
        x->reg_core[i] = x->init_core[i] = 0;
        x->touched[i] = false;
        /* claims go where DRA publishes GPUs; gpupack's own pods where a
         * node side of its own enforces their share */
        bool source_ok = req->dra ? g->dra.order > 0 : !g->dra.only;
        bool model_ok = true;
        if (any_models) {
            if (!have_last || g->info.model != last) {
                last = g->info.model;
                last_ok = models_allow(req, o, last);
                have_last = true;
            }
            model_ok = last_ok;
        }
        x->allowed[i] = source_ok && g->info.healthy && model_ok;
    }
}

/* 100 % compute is exclusive: a container asking all of a GPU's compute gets
 * a GPU that no other pod (nor, for a regular container, another container
 * of its own pod) uses, and a GPU whose compute is all held takes no
 * container that leaves compute unconstrained (core 0). HAMi and Volcano rule
 * it so ("Coresreq=100 indicates it want this card exclusively", "You can't
 * allocate core=0 job to an already full GPU"); a share of compute asked
 * explicitly is refused by the plain compute check anyway. */
static bool exclusive_ok(const gp_place_ctx *x, int pos, const gp_ctr_req *r, bool empty)
{
    int free_core = r->init ? x->base_core[pos] : x->base_core[pos] - x->reg_core[pos];
    if (r->core == 0)
        return free_core > 0;
    if (r->core < GP_CORE_FULL)
        return true;
    int others = empty ? 0 : x->node->gpus[pos].pods;
    return others == 0 && (r->init || !x->touched[pos]);
}

static bool gpu_fits(const gp_place_ctx *x, int pos, const gp_ctr_req *r, bool empty)
{
    if (!x->allowed[pos])
        return false;
    const gp_gpu *g = &x->node->gpus[pos];
    int64_t need = gp_ctr_mem_on(r, alloc_mem(g, x->opts));
    if (r->init) {
        /* an init container runs alone: it only competes with other pods */
        if (need > x->base_mem[pos] || r->core > x->base_core[pos])
            return false;
    } else if (need > x->base_mem[pos] - x->reg_mem[pos] ||
               r->core > x->base_core[pos] - x->reg_core[pos]) {
        return false;
    }
    if (!exclusive_ok(x, pos, r, empty))
        return false;
    int max = x->opts->max_pods_per_gpu;
    if (max > 0 && !x->touched[pos] && (empty ? 0 : g->pods) >= max)
        return false;
    return true;
}

typedef struct cand {
    int pos;
    double cost;
} cand;

/* GPUs a and b look alike to a strategy that is not per_node: same inventory
 * and the same use, before and during this pod. Their costs are then equal
 * (fragmentation-aware: the node's view after either is the same multiset of
 * free shares), and the candidates' order, which breaks ties by device index,
 * comes out the same whether the cost is computed again or copied. */
static bool same_gpu_state(const gp_place_ctx *x, int a, int b)
{
    const gp_gpu *ga = &x->node->gpus[a], *gb = &x->node->gpus[b];
    return ga->mem_used == gb->mem_used && ga->core_used == gb->core_used &&
           ga->pods == gb->pods && ga->info.mem_total == gb->info.mem_total &&
           ga->info.core_total == gb->info.core_total && x->base_mem[a] == x->base_mem[b] &&
           x->base_core[a] == x->base_core[b] && x->reg_mem[a] == x->reg_mem[b] &&
           x->reg_core[a] == x->reg_core[b] && x->init_mem[a] == x->init_mem[b] &&
           x->init_core[a] == x->init_core[b] && x->touched[a] == x->touched[b] &&
           ga->info.model == gb->info.model;
}

static void sort_cands(cand *c, int n)
{
    /* insertion sort: n <= 64, and stable on device order for equal costs */
    for (int i = 1; i < n; i++) {
        cand v = c[i];
        int j = i - 1;
        while (j >= 0 && c[j].cost > v.cost) {
            c[j + 1] = c[j];
            j--;
        }
        c[j + 1] = v;
    }
}

/* Another system's request whose memory does not fit, said in the terms the
 * pod wrote it (formats_describe), on the GPU model where it misses by least:
 * "container main: gpu-fraction 0.5 of a T4 (7680 MiB) does not fit: largest
 * free 4096 MiB". */
static void describe_mem_format(const gp_place_ctx *x, const gp_pod_req *req,
                                const gp_ctr_req *r, int mem_ok, char *out, size_t len)
{
    const gp_node *n = x->node;
    int best = -1;
    int64_t best_short = 0, best_need = 0;
    for (int i = 0; i < n->ngpus; i++) {
        if (!x->allowed[i])
            continue;
        int64_t need = gp_ctr_mem_on(r, alloc_mem(&n->gpus[i], x->opts));
        int64_t fm = r->init ? x->base_mem[i] : x->base_mem[i] - x->reg_mem[i];
        if (best < 0 || need - fm < best_short) {
            best = i;
            best_short = need - fm;
            best_need = need;
        }
    }
    if (best < 0) {
        snprintf(out, len, "no GPU to place it on");
        return;
    }
    /* a relative request is said on one model: the free memory of that model's
     * GPUs; an amount in MiB is the same everywhere: the node's largest */
    gp_model_ref model = n->gpus[best].info.model;
    bool relative = r->mem_mib == 0;
    int64_t largest = 0;
    for (int i = 0; i < n->ngpus; i++) {
        if (!x->allowed[i] || (relative && n->gpus[i].info.model != model))
            continue;
        int64_t fm = r->init ? x->base_mem[i] : x->base_mem[i] - x->reg_mem[i];
        if (fm > largest)
            largest = fm;
    }
    char what[192];
    formats_describe(req->profile, r, gp_model_name(model), best_need, what, sizeof what);
    const char *kind = r->init ? "init container" : "container";
    char line[512];   /* room for every part; the caller's buffer may cut it */
    if (r->count == 1)
        snprintf(line, sizeof line, "%s %s: %s does not fit: largest free %lld MiB", kind,
                 r->name, what, (long long)largest);
    else
        snprintf(line, sizeof line, "%s %s: %s on each of %d GPUs does not fit: %d GPU%s that "
                 "much free", kind, r->name, what, r->count, mem_ok, mem_ok == 1 ? " has" : "s have");
    gp_strlcpy(out, line, len);
}

static bool other_format(const gp_pod_req *req)
{
    return req->profile != GP_PROFILE_NATIVE && req->profile != GP_PROFILE_ALIYUN;
}

static void describe_fail(const gp_place_ctx *x, const gp_pod_req *req, const gp_ctr_req *r,
                          char *out, size_t len)
{
    const gp_node *n = x->node;
    int allowed = 0, mem_ok = 0, both_ok = 0, unhealthy = 0, full_pods = 0, excl = 0;
    int64_t best_mem = -1, best_alloc = 0;
    int best_core = -1;
    for (int i = 0; i < n->ngpus; i++) {
        if (!n->gpus[i].info.healthy)
            unhealthy++;
        if (!x->allowed[i])
            continue;
        allowed++;
        int64_t am = alloc_mem(&n->gpus[i], x->opts);
        int64_t need = gp_ctr_mem_on(r, am);
        int64_t fm = r->init ? x->base_mem[i] : x->base_mem[i] - x->reg_mem[i];
        int fc = r->init ? x->base_core[i] : x->base_core[i] - x->reg_core[i];
        if (fm > best_mem)
            best_mem = fm;
        if (am > best_alloc)
            best_alloc = am;
        if (fm >= need) {
            mem_ok++;
            if (fc > best_core)
                best_core = fc;
            if (fc >= r->core) {
                both_ok++;
                int max = x->opts->max_pods_per_gpu;
                if (!exclusive_ok(x, i, r, false))
                    excl++;
                else if (max > 0 && !x->touched[i] && n->gpus[i].pods >= max)
                    full_pods++;
            }
        }
    }
    const char *what = r->init ? "init container" : "container";
    int64_t need0 = r->mem_mib > 0 ? r->mem_mib : gp_ctr_mem_on(r, best_alloc);
    if (n->ngpus == 0) {
        snprintf(out, len, "node has no GPUs known to gpupack");
    } else if (allowed == 0 && unhealthy == n->ngpus) {
        snprintf(out, len, "all %d GPU%s of the node %s unhealthy", n->ngpus, gp_s(n->ngpus),
                 n->ngpus == 1 ? "is" : "are");
    } else if (allowed == 0 && !req->models[0] && !x->opts->models[0]) {
        /* only the HAMi/Volcano type annotations can have excluded them all */
        char line[400], use[128] = "", nouse[128] = "";
        if (req->type_use[0])
            snprintf(use, sizeof use, " nvidia.com/use-gputype \"%.60s\" allows", req->type_use);
        if (req->type_nouse[0])
            snprintf(nouse, sizeof nouse, "%s nvidia.com/nouse-gputype \"%.60s\" does not exclude",
                     use[0] ? " and" : "", req->type_nouse);
        snprintf(line, sizeof line, "no healthy GPU of a type%s%s (node has %.63s)", use, nouse,
                 n->gpus[0].info.model ? gp_model_name(n->gpus[0].info.model) : "GPUs of unknown model");
        gp_strlcpy(out, line, len);
    } else if (allowed == 0) {
        const char *models = req->models[0] ? req->models : x->opts->models;
        snprintf(out, len, "no healthy GPU of model %.100s on node (node has %.63s)", models,
                 n->gpus[0].info.model ? gp_model_name(n->gpus[0].info.model) : "GPUs of unknown model");
    } else if (allowed < r->count) {
        snprintf(out, len, "%s %s needs %d GPU%s, node has %d usable", what, r->name, r->count,
                 gp_s(r->count), allowed);
    } else if (mem_ok < r->count && other_format(req)) {
        describe_mem_format(x, req, r, mem_ok, out, len);
    } else if (mem_ok < r->count) {
        if (r->count == 1)
            snprintf(out, len, "largest free GPU has %lld MiB, %s %s needs %lld MiB per GPU",
                     (long long)(best_mem < 0 ? 0 : best_mem), what, r->name, (long long)need0);
        else
            snprintf(out, len, "%d GPU%s %s %lld MiB free, %s %s needs %d of them", mem_ok,
                     gp_s(mem_ok), mem_ok == 1 ? "has" : "have", (long long)need0, what, r->name,
                     r->count);
    } else if (both_ok < r->count) {
        if (r->count == 1)
            snprintf(out, len,
                     "most free compute on a GPU with enough memory is %d.%d%%, %s %s needs "
                     "%d.%d%%",
                     best_core / 10, best_core % 10, what, r->name, r->core / 10, r->core % 10);
        else
            snprintf(out, len, "%d GPU%s %s %lld MiB and %d.%d%% compute free, %s %s needs %d",
                     both_ok, gp_s(both_ok), both_ok == 1 ? "has" : "have", (long long)need0,
                     r->core / 10, r->core % 10, what, r->name, r->count);
    } else if (excl > 0 && r->core >= GP_CORE_FULL) {
        snprintf(out, len, "%s %s asks all the compute of a GPU (100%%), which takes a GPU no "
                 "other pod uses: every GPU with room hosts pods", what, r->name);
    } else if (excl > 0) {
        snprintf(out, len, "GPUs with room have all their compute held (a pod asking 100%% has "
                 "its GPU alone); %s %s asks no compute share", what, r->name);
    } else if (full_pods > 0) {
        snprintf(out, len, "GPUs with room already host the policy's maximum of %d pod%s",
                 x->opts->max_pods_per_gpu, gp_s(x->opts->max_pods_per_gpu));
    } else {
        snprintf(out, len, "containers of the pod do not fit together on the node's GPUs");
    }
}

/* ---------------------------------------------------- DRA prediction -- */
/* For a pod whose GPUs come from ResourceClaims, Kubernetes' allocator picks
 * the devices on the node kube-scheduler chose, and it sees only the claims:
 * not gpupack's own pods. Its search (docs/dra.md, "Which device") takes the
 * node's devices in the order they are published and gives each request the
 * first that fits by what allocated claims leave; no scoring, no backtracking
 * between requests that do not constrain each other. So placement predicts
 * that choice, then checks it against everything the GPU really holds: a
 * node where the allocator's choice would over-commit a GPU (gpupack's pods
 * on it) does not fit. */

/* Memory a request consumes on device g, as the allocator counts it: an
 * exclusive device whole; else the amount asked (or the requestPolicy's
 * default, or the whole device when there is none), rounded up to the
 * policy's minimum and step. */
static int64_t dra_need(const gp_gpu *g, const gp_ctr_req *r)
{
    if (!g->dra.multi)
        return g->dra.mem_total;
    int64_t need = r->ask == GP_ASK_WHOLE ? g->dra.default_mib
                   : r->mem_mib > 0       ? r->mem_mib
                   : r->mem_ppm > 0       ? gp_ctr_mem_on(r, g->dra.mem_total)   /* a share */
                                          : 0;
    if (need <= 0)
        return g->dra.mem_total;
    if (need < g->dra.min_mib)
        need = g->dra.min_mib;
    if (g->dra.step_mib > 0) {
        int64_t over = (need - g->dra.min_mib) % g->dra.step_mib;
        if (over)
            need += g->dra.step_mib - over;
    }
    return need;
}

/* Compute (per-mille) a request consumes on a shared device that publishes
 * a compute capacity: the amount asked, else the policy's default. Every
 * capacity of the device is consumed, asked or not (docs/dra.md). */
static int dra_need_core(const gp_gpu *g, const gp_ctr_req *r)
{
    if (!g->dra.multi)
        return GP_CORE_FULL;
    if (!g->dra.cores)
        return 0;
    return r->core > 0 ? r->core : g->dra.core_default;
}

/* What the allocator would see free on device pos for this pod: nothing on
 * an exclusive device any claim (or an earlier request of this pod) holds. */
static bool dra_visible_fits(const gp_place_ctx *x, int pos, int64_t need, int need_core, bool empty)
{
    const gp_gpu *g = &x->node->gpus[pos];
    if (!g->dra.multi)
        return (empty || g->dra.claims == 0) && !x->touched[pos];
    int64_t used = (empty ? 0 : g->dra.mem_used) + x->reg_mem[pos];
    int core_used = (empty ? 0 : g->dra.core_used) + x->reg_core[pos];
    return need <= g->dra.mem_total - used && need_core <= GP_CORE_FULL - core_used;
}

/* The allocator's choice for every request, checked against the real
 * capacity. Returns 0, or the index+1 of the request that failed with a
 * reason in why (len bytes). */
static int fit_dra(gp_place_ctx *x, const gp_pod_req *req, gp_assignment *out, bool empty,
                   char *why, size_t len)
{
    const gp_node *n = x->node;
    int byorder[GP_MAX_GPUS_PER_NODE], nb = 0;
    for (int i = 0; i < n->ngpus; i++)
        if (x->allowed[i])
            byorder[nb++] = i;
    for (int i = 1; i < nb; i++) {   /* insertion sort by the allocator's order */
        int v = byorder[i], j = i - 1;
        while (j >= 0 && n->gpus[byorder[j]].dra.order > n->gpus[v].dra.order) {
            byorder[j + 1] = byorder[j];
            j--;
        }
        byorder[j + 1] = v;
    }
    out->nctrs = 0;
    gp_strlcpy(out->node, n->name, sizeof out->node);
    for (int c = 0; c < req->nctrs; c++) {
        const gp_ctr_req *r = &req->ctrs[c];
        if (r->count > GP_MAX_GPUS_PER_CTR) {
            snprintf(why, len, "claim request %s asks %d devices, more than %d", r->name, r->count,
                     GP_MAX_GPUS_PER_CTR);
            return c + 1;
        }
        gp_ctr_assign *ca = &out->ctrs[out->nctrs++];
        gp_strlcpy(ca->name, r->name, sizeof ca->name);
        ca->init = false;
        ca->ngpus = 0;
        for (int k = 0; k < nb && ca->ngpus < r->count; k++) {
            int pos = byorder[k];
            const gp_gpu *g = &n->gpus[pos];
            int64_t need = dra_need(g, r);
            int core = dra_need_core(g, r);
            if (!dra_visible_fits(x, pos, need, core, empty))
                continue;
            int64_t free_mem = x->base_mem[pos] - x->reg_mem[pos];
            int free_core = x->base_core[pos] - x->reg_core[pos];
            bool excl = !g->dra.multi;
            if (need > free_mem || core > free_core || (excl && !empty && g->pods > 0)) {
                snprintf(why, len,
                         "Kubernetes' DRA allocator would give claim request %s GPU %d (%lld MiB), "
                         "where gpupack's own pods hold %lld of %lld MiB: that would over-commit it",
                         r->name, g->info.index, (long long)need,
                         (long long)(g->mem_used - g->dra.mem_used), (long long)g->info.mem_total);
                return c + 1;
            }
            ca->gpus[ca->ngpus++] = (gp_gpu_grant){g->info.index, need, core};
            x->touched[pos] = true;
            x->reg_mem[pos] += need;
            x->reg_core[pos] += core;
        }
        if (ca->ngpus < r->count) {
            if (nb == 0)
                snprintf(why, len, "no GPU of the node is published through DRA%s",
                         req->models[0] || x->opts->models[0] ? " with an allowed model" : "");
            else if (r->ask == GP_ASK_WHOLE)
                snprintf(why, len, "claim request %s needs %d whole device%s, %d of %d published "
                         "here %s free for the allocator", r->name, r->count, gp_s(r->count),
                         ca->ngpus, nb, ca->ngpus == 1 ? "is" : "are");
            else
                snprintf(why, len, "claim request %s needs %lld MiB on %d device%s: %d of the "
                         "node's %d DRA GPU%s %s that much left by the allocated claims", r->name,
                         (long long)r->mem_mib, r->count, gp_s(r->count), ca->ngpus, nb, gp_s(nb),
                         ca->ngpus == 1 ? "has" : "have");
            return c + 1;
        }
    }
    return 0;
}

/* Places all containers on the tentative state x. Returns 0 or the index+1 of
 * the container that failed. */
static int fit_all(gp_place_ctx *x, const gp_pod_req *req, gp_assignment *out, bool empty)
{
    const gp_gpu_strategy *gs = x->opts->gpu ? x->opts->gpu : &gpu_strategies[0];
    /* out is filled as containers are placed; it is not cleared whole (it is
     * ~5 KiB and this runs once per node per request) */
    out->nctrs = 0;
    gp_strlcpy(out->node, x->node->name, sizeof out->node);
    /* regular containers first, then init containers, whatever the input order */
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < req->nctrs; c++) {
            const gp_ctr_req *r = &req->ctrs[c];
            if (r->init != (pass == 1))
                continue;
            x->init_phase = r->init;
            cand cands[GP_MAX_GPUS_PER_NODE];
            int nc = 0;
            for (int i = 0; i < x->node->ngpus; i++) {
                if (!gpu_fits(x, i, r, empty))
                    continue;
                int same = -1;   /* an earlier candidate in the same state */
                for (int k = 0; k < nc && same < 0 && !gs->per_node; k++)
                    if (same_gpu_state(x, cands[k].pos, i))
                        same = k;
                cands[nc++] = (cand){i, same >= 0 ? cands[same].cost : gs->cost(x, i, r)};
            }
            if (nc < r->count || r->count > GP_MAX_GPUS_PER_CTR)
                return c + 1;
            sort_cands(cands, nc);
            gp_ctr_assign *ca = &out->ctrs[out->nctrs++];
            gp_strlcpy(ca->name, r->name, sizeof ca->name);
            ca->init = r->init;
            ca->ngpus = r->count;
            for (int k = 0; k < r->count; k++) {
                int pos = cands[k].pos;
                const gp_gpu *g = &x->node->gpus[pos];
                int64_t need = gp_ctr_mem_on(r, alloc_mem(g, x->opts));
                ca->gpus[k] = (gp_gpu_grant){g->info.index, need, r->core};
                x->touched[pos] = true;
                if (r->init) {
                    if (need > x->init_mem[pos])
                        x->init_mem[pos] = need;
                    if (r->core > x->init_core[pos])
                        x->init_core[pos] = r->core;
                } else {
                    x->reg_mem[pos] += need;
                    x->reg_core[pos] += r->core;
                }
            }
        }
    }
    return 0;
}

int placement_fit(const gp_node *node, const gp_pod_req *req, const gp_place_opts *opts,
                  gp_assignment *out, gp_fit_fail *why)
{
    gp_place_ctx x;
    ctx_init(&x, node, req, opts, false);
    if (req->dra) {
        char msg[256];
        if (fit_dra(&x, req, out, false, msg, sizeof msg) == 0)
            return 0;
        if (why) {
            gp_place_ctx empty;
            gp_assignment scratch;
            char msg2[200];
            ctx_init(&empty, node, req, opts, true);
            why->unresolvable = fit_dra(&empty, req, &scratch, true, msg2, sizeof msg2) != 0;
            if (why->unresolvable)
                snprintf(why->reason, sizeof why->reason, "%s even with all GPUs free", msg2);
            else
                gp_strlcpy(why->reason, msg, sizeof why->reason);
        }
        return -1;
    }
    int failed = fit_all(&x, req, out, false);
    if (!failed)
        return 0;
    if (why) {
        const gp_ctr_req *r = &req->ctrs[failed - 1];
        describe_fail(&x, req, r, why->reason, sizeof why->reason);
        /* could it fit if every GPU of the node were free? */
        gp_place_ctx empty;
        gp_assignment scratch;
        ctx_init(&empty, node, req, opts, true);
        int f2 = node->ngpus == 0 ? 0 : fit_all(&empty, req, &scratch, true);
        why->unresolvable = node->ngpus == 0 || f2 != 0;
        if (f2) {
            /* describe the container that fails on the empty node */
            char msg[200];
            describe_fail(&empty, req, &req->ctrs[f2 - 1], msg, sizeof msg);
            snprintf(why->reason, sizeof why->reason, "%s even with all GPUs free", msg);
        }
    }
    return -1;
}

double placement_node_score(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                            const gp_place_opts *opts)
{
    const gp_node_strategy *ns = opts->node ? opts->node : &node_strategies[0];
    return ns->score(node, req, a, opts);
}

void placement_normalize(const double *raw, int n, int *scores)
{
    if (n <= 0)
        return;
    double lo = raw[0], hi = raw[0];
    for (int i = 1; i < n; i++) {
        if (raw[i] < lo)
            lo = raw[i];
        if (raw[i] > hi)
            hi = raw[i];
    }
    for (int i = 0; i < n; i++) {
        if (hi - lo < 1e-12)
            scores[i] = 10;
        else
            scores[i] = (int)lround(10.0 * (raw[i] - lo) / (hi - lo));
    }
}

static bool same_dra(const gp_gpu_dra *x, const gp_gpu_dra *y)
{
    return x->order == y->order && (x->order == 0 ||
           (x->mem_total == y->mem_total && x->mem_used == y->mem_used &&
            x->step_mib == y->step_mib && x->min_mib == y->min_mib &&
            x->default_mib == y->default_mib && x->claims == y->claims && x->multi == y->multi &&
            x->only == y->only && x->core_used == y->core_used &&
            x->core_default == y->core_default && x->cores == y->cores));
}

bool placement_same_state(const gp_node *a, const gp_node *b)
{
    if (a->ngpus != b->ngpus || a->cpu_alloc_milli != b->cpu_alloc_milli ||
        a->cpu_used_milli != b->cpu_used_milli || a->host_mem_alloc_mib != b->host_mem_alloc_mib ||
        a->host_mem_used_mib != b->host_mem_used_mib)
        return false;
    for (int i = 0; i < a->ngpus; i++) {
        const gp_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        if (x->mem_used != y->mem_used || x->core_used != y->core_used || x->pods != y->pods ||
            x->info.mem_total != y->info.mem_total || x->info.core_total != y->info.core_total ||
            x->info.index != y->info.index || x->info.healthy != y->info.healthy ||
            x->info.model != y->info.model || !same_dra(&x->dra, &y->dra))
            return false;
    }
    return true;
}

uint64_t placement_state_hash(const gp_node *n)
{
    /* FNV-1a over whole values rather than bytes: fewer steps, and the
     * splitmix finaliser below makes up for the weaker mixing */
    uint64_t h = GP_FNV_OFFSET;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * GP_FNV_PRIME)
    MIX(n->ngpus);
    MIX(n->cpu_alloc_milli);
    MIX(n->cpu_used_milli);
    MIX(n->host_mem_alloc_mib);
    MIX(n->host_mem_used_mib);
    for (int i = 0; i < n->ngpus; i++) {
        const gp_gpu *g = &n->gpus[i];
        MIX(g->mem_used);
        MIX(g->core_used);
        MIX(g->pods);
        MIX(g->info.mem_total);
        MIX(g->info.core_total);
        MIX(g->info.index);
        MIX(g->info.healthy);
        if (g->dra.order) {
            MIX(g->dra.mem_total);
            MIX(g->dra.mem_used);
            MIX(g->dra.step_mib ^ (g->dra.min_mib << 20) ^ (g->dra.default_mib << 40));
            MIX((uint64_t)(uint16_t)g->dra.core_used | (uint64_t)(uint16_t)g->dra.core_default << 16 |
                (uint64_t)g->dra.cores << 32);
            MIX((uint64_t)g->dra.order | (uint64_t)g->dra.claims << 16 |
                (uint64_t)g->dra.multi << 32 | (uint64_t)g->dra.only << 33);
        }
        MIX(g->info.model);   /* equal names, equal references (modelref.h) */
    }
#undef MIX
    /* finalise (splitmix64): FNV alone mixes the high bits poorly */
    h ^= h >> 30;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h ? h : 1;   /* 0 means "not kept" */
}

void placement_hold(gp_node *node, int pos, const gp_hold *h, int sign)
{
    gp_gpu *g = &node->gpus[pos];
    g->mem_used += sign * h->mem_mib;
    g->core_used += sign * h->core;
    g->pods += sign;
    if (h->dra && g->dra.order > 0) {
        g->dra.mem_used += sign * h->mem_mib;
        if (g->dra.cores)
            g->dra.core_used = (int16_t)(g->dra.core_used + sign * h->core);
        g->dra.claims = (uint16_t)(g->dra.claims + sign);
    }
}

int placement_apply(gp_node *node, const gp_assignment *a, int sign)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    int pos[GP_MAX_GPUS_PER_NODE];
    for (int h = 0; h < nh; h++) {
        pos[h] = gp_node_gpu_pos(node, holds[h].index);
        if (pos[h] < 0)
            return -1;
    }
    for (int h = 0; h < nh; h++)
        placement_hold(node, pos[h], &holds[h], sign);
    return 0;
}
