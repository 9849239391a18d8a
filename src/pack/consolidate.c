/* consolidate.c -- the fewest moves that make room for a waiting pod (consolidate.h). */
#include "pack/consolidate.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "pack/cluster.h"

/* The search's working state. */
typedef struct search {
    const gp_consol_query *q;
    int budget, checks;
    int *order;                   /* movers on the target node, cheapest to move first */
    int m;
    int pick[GP_CONSOL_MOVES_MAX];   /* positions into order */
    int refit[GP_CONSOL_MOVES_MAX];  /* the subset, largest first: indices into movers */
    gp_node *target;              /* the target node without the subset, then with the pod */
    gp_node *touched[GP_CONSOL_MOVES_MAX];   /* other nodes' copies a move lands on */
    int touched_at[GP_CONSOL_MOVES_MAX];
    int ntouched;
    gp_assignment *a;             /* scratch for fits */
} search;

static const gp_place_opts *mover_opts(const gp_consol_query *q, const gp_mover *m)
{
    return m->opts ? m->opts : q->opts;
}

static int64_t mover_mib(const gp_mover *m)
{
    int64_t s = 0;
    for (int h = 0; h < m->nholds; h++)
        s += m->holds[h].mem_mib;
    return s;
}

/* qsort has no context argument: the query being sorted, per thread (the
 * simulator plans in several threads at once). */
static _Thread_local const gp_consol_query *cmp_q;
static int cmp_cheapest(const void *a, const void *b)
{
    const gp_mover *x = &cmp_q->movers[*(const int *)a], *y = &cmp_q->movers[*(const int *)b];
    if (x->pdb_violating != y->pdb_violating)
        return x->pdb_violating ? 1 : -1;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    int64_t mx = mover_mib(x), my = mover_mib(y);
    if (mx != my)
        return mx < my ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static int cmp_largest(const void *a, const void *b)
{
    int64_t mx = mover_mib(&cmp_q->movers[*(const int *)a]);
    int64_t my = mover_mib(&cmp_q->movers[*(const int *)b]);
    if (mx != my)
        return mx > my ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static gp_node *node_copy(const gp_node *n)
{
    gp_node *c = xmalloc(gp_node_size(n->ngpus));
    memcpy(c, n, gp_node_size(n->ngpus));
    return c;
}

/* Host CPU and memory, when the node carries them (placement_fit checks GPUs only). */
static bool host_fits(const gp_node *n, int64_t cpu_milli, int64_t mem_mib)
{
    if (n->cpu_alloc_milli > 0 && n->cpu_used_milli + cpu_milli > n->cpu_alloc_milli)
        return false;
    if (n->host_mem_alloc_mib > 0 && n->host_mem_used_mib + mem_mib > n->host_mem_alloc_mib)
        return false;
    return true;
}

static void drop_mover(gp_node *n, const gp_mover *m)
{
    for (int h = 0; h < m->nholds; h++) {
        int pos = gp_node_gpu_pos(n, m->holds[h].index);
        if (pos >= 0)
            placement_hold(n, pos, &m->holds[h], -1);
    }
    n->cpu_used_milli -= m->cpu_milli;
    n->host_mem_used_mib -= m->mem_mib;
}

/* The node j as the moves so far left it (a copy when one landed there). */
static gp_node *current(search *s, int j, int t)
{
    if (j == t)
        return s->target;
    for (int i = 0; i < s->ntouched; i++)
        if (s->touched_at[i] == j)
            return s->touched[i];
    return NULL;
}

static void untouch(search *s)
{
    for (int i = 0; i < s->ntouched; i++)
        free(s->touched[i]);
    s->ntouched = 0;
}

static bool within_groups(const search *s, int k)
{
    const gp_consol_query *q = s->q;
    if (!q->group_left)
        return true;
    for (int i = 0; i < k; i++) {
        int g = q->movers[s->order[s->pick[i]]].group;
        if (g < 0 || g >= q->ngroups)
            continue;
        int used = 0;
        for (int j = 0; j < k; j++)
            used += q->movers[s->order[s->pick[j]]].group == g;
        if (used > q->group_left[g])
            return false;
    }
    return true;
}

/* Checks the subset pick[0..k-1] on target node t: 1 with the plan in *out,
 * 0 when it does not work, -1 when the budget ran out. */
static int try_subset(search *s, int t, int k, gp_consol_plan *out)
{
    const gp_consol_query *q = s->q;
    const gp_node *tn = q->nodes[t];
    memcpy(s->target, tn, gp_node_size(tn->ngpus));
    for (int i = 0; i < k; i++)
        drop_mover(s->target, &q->movers[s->order[s->pick[i]]]);
    if (s->checks >= s->budget)
        return -1;
    s->checks++;
    if (!host_fits(s->target, q->req->cpu_milli, q->req->host_mem_mib) ||
        placement_fit(s->target, q->req, q->opts, &out->a, NULL) != 0)
        return 0;
    if (placement_apply(s->target, &out->a, 1) != 0)
        return 0;
    s->target->cpu_used_milli += q->req->cpu_milli;
    s->target->host_mem_used_mib += q->req->host_mem_mib;
    s->target->state_hash = 0;
    for (int i = 0; i < k; i++)
        s->refit[i] = s->order[s->pick[i]];
    cmp_q = q;
    qsort(s->refit, (size_t)k, sizeof *s->refit, cmp_largest);
    int rc = 1;
    for (int i = 0; i < k && rc == 1; i++) {
        const gp_mover *m = &q->movers[s->refit[i]];
        int placed = -1;
        /* the target node first (a move between its GPUs), then the others in order */
        for (int step = 0; step < q->nnodes && placed < 0; step++) {
            int j = step == 0 ? t : (step <= t ? step - 1 : step);
            gp_node *cur = current(s, j, t);
            const gp_node *n = cur ? cur : q->nodes[j];
            if (s->checks >= s->budget) {
                rc = -1;
                break;
            }
            s->checks++;
            if (!host_fits(n, m->cpu_milli, m->mem_mib) ||
                placement_fit(n, m->req, mover_opts(q, m), s->a, NULL) != 0)
                continue;
            if (!cur) {
                if (s->ntouched == GP_CONSOL_MOVES_MAX)
                    continue;
                cur = node_copy(n);
                s->touched[s->ntouched] = cur;
                s->touched_at[s->ntouched++] = j;
            }
            if (placement_apply(cur, s->a, 1) != 0)
                continue;
            cur->cpu_used_milli += m->cpu_milli;
            cur->host_mem_used_mib += m->mem_mib;
            cur->state_hash = 0;
            placed = j;
            gp_consol_move *mv = &out->moves[i];
            mv->mover = s->refit[i];
            mv->node = j;
            mv->a = *s->a;
            gp_strlcpy(mv->a.node, q->nodes[j]->name, sizeof mv->a.node);
        }
        if (placed < 0 && rc == 1)
            rc = 0;
    }
    untouch(s);
    if (rc != 1)
        return rc;
    out->node = t;
    gp_strlcpy(out->a.node, tn->name, sizeof out->a.node);
    out->nmoves = k;
    out->pdb_violations = 0;
    out->moved_mib = 0;
    for (int i = 0; i < k; i++) {
        const gp_mover *m = &q->movers[out->moves[i].mover];
        out->pdb_violations += m->pdb_violating;
        out->moved_mib += mover_mib(m);
    }
    return 1;
}

/* Is plan a better than plan b? */
static bool better(const gp_consol_plan *a, const gp_consol_plan *b)
{
    if (a->nmoves != b->nmoves)
        return a->nmoves < b->nmoves;
    if (a->pdb_violations != b->pdb_violations)
        return a->pdb_violations < b->pdb_violations;
    return a->moved_mib < b->moved_mib;
}

/* Subsets of size k of the m movers on the node, in order: 1 found, 0 none,
 * -1 budget. */
static int search_size(search *s, int t, int k, gp_consol_plan *cand)
{
    for (int i = 0; i < k; i++)
        s->pick[i] = i;
    for (;;) {
        if (within_groups(s, k)) {
            int rc = try_subset(s, t, k, cand);
            if (rc != 0)
                return rc;
        }
        int i = k - 1;
        while (i >= 0 && s->pick[i] == s->m - k + i)
            i--;
        if (i < 0)
            return 0;
        s->pick[i]++;
        for (int j = i + 1; j < k; j++)
            s->pick[j] = s->pick[j - 1] + 1;
    }
}

int consolidate_plan(const gp_consol_query *q, gp_consol_plan *out)
{
    memset(out, 0, sizeof *out);
    out->complete = true;
    int max_moves = q->max_moves < 1 ? 1 : q->max_moves;
    if (max_moves > GP_CONSOL_MOVES_MAX)
        max_moves = GP_CONSOL_MOVES_MAX;
    if (!q->req || q->nnodes <= 0 || q->nmovers <= 0)
        return 0;
    search s = {.q = q, .budget = q->budget > 0 ? q->budget : GP_CONSOL_BUDGET_DEFAULT};
    s.order = xmalloc((size_t)q->nmovers * sizeof *s.order);
    s.target = xmalloc(gp_node_size(GP_MAX_GPUS_PER_NODE));
    s.a = xmalloc(sizeof *s.a);
    gp_consol_plan *cand = xcalloc(1, sizeof *cand);
    bool found = false, complete = true;
    for (int t = 0; t < q->nnodes; t++) {
        if (q->target_ok && !q->target_ok[t])
            continue;
        s.m = 0;
        for (int i = 0; i < q->nmovers; i++)
            if (q->movers[i].node == t && q->movers[i].nholds > 0 && q->movers[i].req)
                s.order[s.m++] = i;
        if (s.m == 0)
            continue;
        cmp_q = q;
        qsort(s.order, (size_t)s.m, sizeof *s.order, cmp_cheapest);
        int limit = max_moves;
        if (found)   /* only a plan that can be better */
            limit = out->pdb_violations > 0 ? out->nmoves : out->nmoves - 1;
        if (limit > s.m)
            limit = s.m;
        int rc = 0;
        for (int k = 1; k <= limit && rc == 0; k++)
            rc = search_size(&s, t, k, cand);
        if (rc == 1) {
            cand->checks = 0;
            if (!found || better(cand, out)) {
                memcpy(out, cand, sizeof *out);
                found = true;
            }
            if (out->nmoves == 1 && out->pdb_violations == 0)
                break;
        } else if (rc < 0) {
            complete = false;
            break;
        }
    }
    out->checks = s.checks;
    out->complete = complete;
    free(cand);
    free(s.a);
    free(s.target);
    free(s.order);
    return found ? 1 : 0;
}

void consolidate_req_from_holds(const gp_node *node, const gp_hold *holds, int nholds,
                                gp_pod_req *out)
{
    memset(out, 0, sizeof *out);
    if (nholds <= 0)
        return;
    if (nholds > GP_MAX_GPUS_PER_CTR * GP_MAX_CTRS)
        nholds = GP_MAX_GPUS_PER_CTR * GP_MAX_CTRS;
    bool same = true;
    for (int h = 1; h < nholds; h++)
        same = same && holds[h].mem_mib == holds[0].mem_mib && holds[h].core == holds[0].core;
    if (same && nholds <= GP_MAX_GPUS_PER_CTR) {
        out->nctrs = 1;
        out->ctrs[0] = (gp_ctr_req){"moved", false, nholds, holds[0].mem_mib, 0, holds[0].core,
                                    GP_ASK_MIB};
    } else {
        for (int h = 0; h < nholds && out->nctrs < GP_MAX_CTRS; h++)
            out->ctrs[out->nctrs++] = (gp_ctr_req){"moved", false, 1, holds[h].mem_mib, 0,
                                                    holds[h].core, GP_ASK_MIB};
    }
    int pos = node ? gp_node_gpu_pos(node, holds[0].index) : -1;
    if (pos >= 0 && node->gpus[pos].info.model)
        gp_strlcpy(out->models, gp_model_name(node->gpus[pos].info.model), sizeof out->models);
}
