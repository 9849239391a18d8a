/* frag.c -- GPU fragmentation measure and the fragmentation-aware (FGD) and
 * baseline placement strategies. */
#include "pack/frag.h"

#include <stdlib.h>
#include <string.h>

#include <math.h>

#define FRAG_TIE_STEP 10.0   /* per-mille: fgd-bestfit's tie granularity */

/* ------------------------------------------------------------ the view -- */

static int64_t alloc_mem(const gp_gpu *g, const gp_place_opts *o)
{
    int64_t a = g->info.mem_total - (o ? o->reserve_mem_mib : 0);
    return a > 0 ? a : 0;
}

int frag_gpu_free_share(const gp_gpu *g, int64_t mem_free, int core_free, const gp_place_opts *o)
{
    int64_t am = alloc_mem(g, o);
    int ct = g->info.core_total > 0 ? g->info.core_total : GP_CORE_FULL;
    int64_t c = (int64_t)core_free * GP_CORE_FULL / ct;
    int64_t m = am > 0 ? mem_free * GP_CORE_FULL / am : 0;
    int64_t s = c < m ? c : m;
    if (s < 0)
        s = 0;
    if (s > GP_CORE_FULL)
        s = GP_CORE_FULL;
    return (int)s;
}

static int64_t node_cpu_free(const gp_node *node)
{
    if (node->cpu_alloc_milli <= 0)
        return -1;
    int64_t f = node->cpu_alloc_milli - node->cpu_used_milli;
    return f > 0 ? f : 0;
}

void frag_view_of_node(const gp_node *node, const gp_place_opts *opts, frag_view *v)
{
    v->n = 0;
    for (int i = 0; i < node->ngpus; i++) {
        const gp_gpu *g = &node->gpus[i];
        if (!g->info.healthy)
            continue;
        v->free[v->n] = frag_gpu_free_share(g, alloc_mem(g, opts) - g->mem_used,
                                            g->info.core_total - g->core_used, opts);
        v->model[v->n] = g->info.model;
        v->n++;
    }
    v->cpu_free = node_cpu_free(node);
}

int64_t frag_idle(const frag_view *v)
{
    int64_t t = 0;
    for (int i = 0; i < v->n; i++)
        t += v->free[i];
    return t;
}

/* ---------------------------------------------------------- the measure -- */

/* Fragment of one shape on a node whose GPUs all have one model. */
static int64_t shape_frag_homog(const frag_view *v, const gp_shape *m, int64_t total)
{
    if (m->models[0] && !gp_model_allowed(m->models, gp_model_name(v->model[0])))
        return total;
    int need = m->core > 0 ? m->core : 1;
    int fit = 0;
    int64_t below = 0;
    for (int i = 0; i < v->n; i++) {
        if (v->free[i] >= need)
            fit++;
        else
            below += v->free[i];
    }
    return fit >= m->count ? below : total;
}

static int64_t shape_frag_mixed(const frag_view *v, const gp_shape *m, int64_t total)
{
    int need = m->core > 0 ? m->core : 1;
    int fit = 0;
    int64_t below = 0;
    for (int i = 0; i < v->n; i++) {
        bool ok = !m->models[0] || gp_model_allowed(m->models, gp_model_name(v->model[i]));
        if (ok && v->free[i] >= need)
            fit++;
        else
            below += v->free[i];
    }
    return fit >= m->count ? below : total;
}

double frag_amount(const frag_view *v, const gp_shapes *shapes)
{
    if (!shapes)
        shapes = frag_default_shapes();
    int64_t total = frag_idle(v);
    if (total == 0)
        return 0.0;
    bool homog = true;
    for (int i = 1; i < v->n && homog; i++)
        if (v->model[i] != v->model[0])
            homog = false;
    double sum = 0.0;
    for (int k = 0; k < shapes->n; k++) {
        const gp_shape *m = &shapes->s[k];
        if (m->weight <= 0)
            continue;
        if (v->cpu_free >= 0 && m->cpu_milli > v->cpu_free) {
            sum += m->weight * (double)total;   /* the node cannot host m at all */
            continue;
        }
        if (m->count <= 0)
            continue;                           /* CPU-only shape: hosted, no GPU fragment */
        int64_t f = homog ? shape_frag_homog(v, m, total) : shape_frag_mixed(v, m, total);
        sum += m->weight * (double)f;
    }
    return sum;
}

/* ------------------------------------------------------------ shapes -- */

static const gp_shapes default_shapes = {
    .n = 9,
    .s =
        {
            /* openb_pod_list_default.csv, GPU pods: 95.4 % of them, renormalised */
            {.count = 1, .core = 1000, .weight = 0.5806},
            {.count = 1, .core = 810, .weight = 0.1600},
            {.count = 1, .core = 470, .weight = 0.1113},
            {.count = 1, .core = 320, .weight = 0.0487},
            {.count = 1, .core = 650, .weight = 0.0375},
            {.count = 1, .core = 230, .weight = 0.0208},
            {.count = 1, .core = 460, .weight = 0.0190},
            {.count = 1, .core = 590, .weight = 0.0111},
            {.count = 1, .core = 160, .weight = 0.0110},
        },
};

const gp_shapes *frag_default_shapes(void)
{
    return &default_shapes;
}

/* ---------------------------------------------------- GPU strategies -- */

double frag_gpu_cost_fgd(const gp_place_ctx *ctx, int pos, const gp_ctr_req *req)
{
    const gp_node *node = place_ctx_node(ctx);
    const gp_place_opts *o = place_ctx_opts(ctx);
    frag_view v;
    v.n = 0;
    for (int i = 0; i < node->ngpus; i++) {
        const gp_gpu *g = &node->gpus[i];
        if (!g->info.healthy)
            continue;
        int64_t mf = place_ctx_mem_free(ctx, i);
        int cf = place_ctx_core_free(ctx, i);
        if (i == pos) {
            mf -= gp_ctr_mem_on(req, alloc_mem(g, o));
            cf -= req->core;
        }
        v.free[v.n] = frag_gpu_free_share(g, mf, cf, o);
        v.model[v.n] = g->info.model;
        v.n++;
    }
    v.cpu_free = node_cpu_free(node);
    return frag_amount(&v, o->shapes);
}

double frag_gpu_cost_random(const gp_place_ctx *ctx, int pos, const gp_ctr_req *req)
{
    const gp_node *node = place_ctx_node(ctx);
    uint64_t h = GP_FNV_OFFSET;
    h = gp_fnv1a(h, req->name, strlen(req->name));
    h = gp_fnv1a(h, node->name, strlen(node->name));
    h = gp_fnv1a(h, &pos, sizeof pos);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (double)(h >> 11) / (double)(UINT64_C(1) << 53);
}

/* --------------------------------------------------- node strategies -- */

void frag_view_after(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                     const gp_place_opts *o, frag_view *v)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    v->n = 0;
    for (int i = 0; i < node->ngpus; i++) {
        const gp_gpu *g = &node->gpus[i];
        if (!g->info.healthy)
            continue;
        int64_t mf = alloc_mem(g, o) - g->mem_used;
        int cf = g->info.core_total - g->core_used;
        for (int h = 0; h < nh; h++) {
            if (holds[h].index == g->info.index) {
                mf -= holds[h].mem_mib;
                cf -= holds[h].core;
            }
        }
        v->free[v->n] = frag_gpu_free_share(g, mf, cf, o);
        v->model[v->n] = g->info.model;
        v->n++;
    }
    v->cpu_free = node_cpu_free(node);
    if (v->cpu_free >= 0) {
        v->cpu_free -= req->cpu_milli;
        if (v->cpu_free < 0)
            v->cpu_free = 0;
    }
}

double frag_node_score_fgd(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                           const gp_place_opts *opts)
{
    frag_view before, after;
    frag_view_of_node(node, opts, &before);
    frag_view_after(node, req, a, opts, &after);
    return frag_amount(&before, opts->shapes) - frag_amount(&after, opts->shapes);
}

double frag_node_score_fgd_bestfit(const gp_node *node, const gp_pod_req *req,
                                   const gp_assignment *a, const gp_place_opts *opts)
{
    frag_view before, after;
    frag_view_of_node(node, opts, &before);
    frag_view_after(node, req, a, opts, &after);
    double d = frag_amount(&before, opts->shapes) - frag_amount(&after, opts->shapes);
    /* decreases within FRAG_TIE_STEP per-mille are alike: then prefer the
     * node left with less free share per GPU (best fit) */
    double q = floor(d / FRAG_TIE_STEP + 0.5) * FRAG_TIE_STEP;
    double left = after.n > 0 ? (double)frag_idle(&after) / after.n : 0.0;   /* 0..1000 */
    return q - left / (GP_CORE_FULL + 1.0);
}

double frag_node_score_best_fit(const gp_node *node, const gp_pod_req *req,
                                const gp_assignment *a, const gp_place_opts *opts)
{
    frag_view after;
    frag_view_after(node, req, a, opts, &after);
    double left = (double)frag_idle(&after);
    if (after.cpu_free >= 0)
        left += (double)after.cpu_free / 16.0;
    return -left / GP_CORE_FULL;
}

double frag_node_score_none(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                            const gp_place_opts *opts)
{
    return 0.0;
}
