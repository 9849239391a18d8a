/* victims.c -- choosing preemption victims on one node: kube-scheduler's
 * greedy pass as a start, then a bounded branch-and-bound over victim sets. */
#include "pack/victims.h"

#include <stdlib.h>
#include <string.h>

#include "pack/cluster.h"   /* gp_node_size */
#include "pack/frag.h"

#define DEFAULT_BUDGET 4096
#define PRIO_OFFSET (INT64_C(2147483647) + 1)   /* kube-scheduler: MaxInt32 + 1 */

/* The search's state: the node with the current set removed. */
typedef struct search {
    const gp_victim_query *q;
    gp_node *node;                /* scratch copy, counters change as victims come and go */
    bool *in;                     /* in[i]: candidate i is in the current set */
    int *order;                   /* candidate indices, cheapest first */
    int n;                        /* relevant candidates in order */
    int removed_ns[GP_MAX_GPUS_PER_NODE];   /* same-namespace victims removed per position */
    int checks, budget;
    bool out_of_budget;
    bool have_best;
    gp_victim_rank best_rank;
    bool *best_in;
    gp_assignment best_a;
    gp_assignment scratch_a;
} search;

int victims_rank_cmp(const gp_victim_rank *a, const gp_victim_rank *b)
{
    if (a->pdb_violations != b->pdb_violations)
        return a->pdb_violations < b->pdb_violations ? -1 : 1;
    if (a->max_priority != b->max_priority)
        return a->max_priority < b->max_priority ? -1 : 1;
    if (a->priority_sum != b->priority_sum)
        return a->priority_sum < b->priority_sum ? -1 : 1;
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    if (a->frag < b->frag - 1e-9 || a->frag > b->frag + 1e-9)
        return a->frag < b->frag ? -1 : 1;
    if (a->earliest_start != b->earliest_start)
        return a->earliest_start > b->earliest_start ? -1 : 1;
    return 0;
}

/* The first four criteria only: what adding victims can never improve. */
static int rank4_cmp(const gp_victim_rank *a, const gp_victim_rank *b)
{
    gp_victim_rank x = *a, y = *b;
    x.frag = y.frag = 0;
    x.earliest_start = y.earliest_start = 0;
    return victims_rank_cmp(&x, &y);
}

static void rank_add(gp_victim_rank *r, const gp_victim *v)
{
    r->pdb_violations += v->pdb_violating;
    if (r->count == 0 || v->priority > r->max_priority)
        r->max_priority = v->priority;
    r->priority_sum += (int64_t)v->priority + PRIO_OFFSET;
    r->count++;
}

static int64_t start_of(const gp_victim *v)
{
    return v->start_ns ? v->start_ns : INT64_MAX;
}

/* Rank of the set `in` (without frag). */
static gp_victim_rank rank_of(const search *s, const bool *in)
{
    gp_victim_rank r = {0, INT32_MIN, 0, 0, 0, INT64_MAX};
    for (int i = 0; i < s->q->ncands; i++)
        if (in[i])
            rank_add(&r, &s->q->cands[i]);
    for (int i = 0; i < s->q->ncands; i++)
        if (in[i] && s->q->cands[i].priority == r.max_priority && start_of(&s->q->cands[i]) < r.earliest_start)
            r.earliest_start = start_of(&s->q->cands[i]);
    if (r.count == 0)
        r.earliest_start = 0;
    return r;
}

/* Removes (sign 1) or puts back (-1) candidate i's holds and host requests. */
static void take(search *s, int i, int sign)
{
    const gp_victim *v = &s->q->cands[i];
    gp_node *n = s->node;
    for (int h = 0; h < v->nholds; h++) {
        int pos = gp_node_gpu_pos(n, v->holds[h].index);
        if (pos < 0)
            continue;
        placement_hold(n, pos, &v->holds[h], -sign);
        if (v->same_ns)
            s->removed_ns[pos] += sign;
    }
    n->cpu_used_milli -= sign * v->cpu_milli;
    n->host_mem_used_mib -= sign * v->mem_mib;
    s->in[i] = sign > 0;
}

static bool host_fits(const gp_node *n, const gp_pod_req *req)
{
    if (n->cpu_alloc_milli > 0 && n->cpu_used_milli + req->cpu_milli > n->cpu_alloc_milli)
        return false;
    if (n->host_mem_alloc_mib > 0 && n->host_mem_used_mib + req->host_mem_mib > n->host_mem_alloc_mib)
        return false;
    return true;
}

/* maxNamespaceShare as cluster.c applies it: the namespace's GPUs after the
 * removals plus every GPU the pod takes (counted as new: conservative). */
static bool ns_fits(const search *s, const gp_assignment *a)
{
    const gp_victim_query *q = s->q;
    if (q->ns_share_cap <= 0 || !q->ns_gpu_pods || s->node->ngpus <= 0)
        return true;
    int held = 0;
    for (int p = 0; p < s->node->ngpus; p++)
        if (q->ns_gpu_pods[p] - s->removed_ns[p] > 0)
            held++;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    return held + nh <= (int)(q->ns_share_cap * s->node->ngpus + 1e-9);
}

/* Does the preemptor fit the node as it stands in the search? */
static bool fits(search *s, gp_assignment *a)
{
    s->checks++;
    if (s->checks >= s->budget)
        s->out_of_budget = true;
    s->node->state_hash = 0;
    return host_fits(s->node, s->q->req) && placement_fit(s->node, s->q->req, s->q->opts, a, NULL) == 0 &&
           ns_fits(s, a);
}

static double frag_after(search *s, const gp_assignment *a)
{
    frag_view v;
    frag_view_after(s->node, s->q->req, a, s->q->opts, &v);
    const gp_shapes *shapes = s->q->opts->shapes ? s->q->opts->shapes : frag_default_shapes();
    return frag_amount(&v, shapes);
}

/* The current set fits: keep it if it beats the best so far. */
static void consider(search *s, const gp_assignment *a)
{
    gp_victim_rank r = rank_of(s, s->in);
    r.frag = frag_after(s, a);
    if (s->have_best && victims_rank_cmp(&r, &s->best_rank) >= 0)
        return;
    s->have_best = true;
    s->best_rank = r;
    memcpy(s->best_in, s->in, (size_t)s->q->ncands * sizeof *s->in);
    s->best_a = *a;
}

/* Does removing everything from order[k..] (besides the current set) make it fit? */
static bool rest_fits(search *s, int k)
{
    for (int j = k; j < s->n; j++)
        take(s, s->order[j], 1);
    bool ok = fits(s, &s->scratch_a);
    for (int j = k; j < s->n; j++)
        take(s, s->order[j], -1);
    return ok;
}

/* Branch and bound over order[k..]; the current set does not fit. */
static void dfs(search *s, int k)
{
    if (k >= s->n || s->out_of_budget || !rest_fits(s, k))
        return;
    int i = s->order[k];
    /* with c_i: only while it can still tie or beat the best on the criteria
     * more victims only worsen */
    bool try_in = true;
    if (s->have_best) {
        s->in[i] = true;
        gp_victim_rank r = rank_of(s, s->in);
        s->in[i] = false;
        try_in = rank4_cmp(&r, &s->best_rank) <= 0;
    }
    if (try_in) {
        take(s, i, 1);
        if (fits(s, &s->scratch_a))
            consider(s, &s->scratch_a);   /* supersets only rank worse */
        else
            dfs(s, k + 1);
        take(s, i, -1);
    }
    dfs(s, k + 1);   /* without c_i */
}

/* kube-scheduler's SelectVictimsOnNode on this node: everything relevant
 * removed, then put back PDB-violating ones first, each group most important
 * first, keeping out those without which the pod no longer fits. */
static void greedy(search *s)
{
    int *by_importance = xmalloc((size_t)(s->n ? s->n : 1) * sizeof *by_importance);
    int m = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = s->n - 1; j >= 0; j--) {   /* order is cheapest first: walk it backwards */
            int i = s->order[j];
            if (s->q->cands[i].pdb_violating == (pass == 0))
                by_importance[m++] = i;
        }
    for (int j = 0; j < s->n; j++)
        take(s, s->order[j], 1);
    for (int j = 0; j < m; j++) {
        take(s, by_importance[j], -1);
        if (!fits(s, &s->scratch_a))
            take(s, by_importance[j], 1);
    }
    if (fits(s, &s->scratch_a))
        consider(s, &s->scratch_a);
    for (int j = 0; j < s->n; j++)
        if (s->in[s->order[j]])
            take(s, s->order[j], -1);
    free(by_importance);
}

/* Could evicting candidate i help at all? It must hold a GPU the pod may use,
 * or host resources when those are short, or count against the namespace cap. */
static bool relevant(const search *s, const gp_victim *v, bool host_short)
{
    if (v->priority >= s->q->req->priority)
        return false;   /* kube-scheduler: only strictly lower priority */
    if (host_short && (v->cpu_milli > 0 || v->mem_mib > 0))
        return true;
    if (v->same_ns && s->q->ns_share_cap > 0)
        return true;
    const gp_pod_req *req = s->q->req;
    const gp_place_opts *o = s->q->opts;
    for (int h = 0; h < v->nholds; h++) {
        int pos = gp_node_gpu_pos(s->node, v->holds[h].index);
        if (pos < 0)
            continue;
        const gp_gpu_info *g = &s->node->gpus[pos].info;
        const char *model = gp_model_name(g->model);
        if (g->healthy && gp_model_allowed(req->models, model) && gp_model_allowed(o->models, model))
            return true;
    }
    return false;
}

/* <0 when candidate a should be tried before b: PDB-respecting first, then
 * the least important (the reverse of kube-scheduler's MoreImportantPod). */
static int cheaper(const gp_victim *cands, int a, int b)
{
    const gp_victim *x = &cands[a], *y = &cands[b];
    if (x->pdb_violating != y->pdb_violating)
        return x->pdb_violating ? 1 : -1;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    if (start_of(x) != start_of(y))
        return start_of(x) > start_of(y) ? -1 : 1;
    return a - b;
}

/* insertion sort: qsort's comparator has no context pointer */
static void sort_order(int *order, int n, const gp_victim *cands)
{
    for (int i = 1; i < n; i++) {
        int v = order[i], j = i - 1;
        while (j >= 0 && cheaper(cands, order[j], v) > 0) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
}

gp_victims_result victims_select(const gp_victim_query *q, int *victims_buf, gp_victim_plan *out)
{
    gp_victims_result res = GP_VICTIMS_NONE;
    memset(out, 0, sizeof *out);
    out->victims = victims_buf;
    search s = {.q = q, .budget = q->budget > 0 ? q->budget : DEFAULT_BUDGET};
    size_t nsz = gp_node_size(q->node->ngpus);
    s.node = xmalloc(nsz);
    memcpy(s.node, q->node, nsz);
    int nc = q->ncands > 0 ? q->ncands : 0;
    s.in = xcalloc((size_t)(nc ? nc : 1), sizeof *s.in);
    s.best_in = xcalloc((size_t)(nc ? nc : 1), sizeof *s.best_in);
    s.order = xmalloc((size_t)(nc ? nc : 1) * sizeof *s.order);
    if (fits(&s, &out->a)) {
        res = GP_VICTIMS_FITS;
        out->rank = (gp_victim_rank){0, INT32_MIN, 0, 0, frag_after(&s, &out->a), 0};
        goto done;
    }
    bool host_short = !host_fits(s.node, q->req);
    for (int i = 0; i < nc; i++)
        if (relevant(&s, &q->cands[i], host_short))
            s.order[s.n++] = i;
    sort_order(s.order, s.n, q->cands);
    if (s.n == 0 || !rest_fits(&s, 0))
        goto done;
    greedy(&s);
    dfs(&s, 0);
    if (!s.have_best)
        goto done;   /* only when the budget ran out before the greedy pass ended */
    res = GP_VICTIMS_FOUND;
    out->rank = s.best_rank;
    out->a = s.best_a;
    for (int i = 0; i < nc; i++)
        if (s.best_in[i])
            victims_buf[out->nvictims++] = i;
done:
    out->checks = s.checks;
    out->complete = !s.out_of_budget;
    free(s.order);
    free(s.best_in);
    free(s.in);
    free(s.node);
    return res;
}
