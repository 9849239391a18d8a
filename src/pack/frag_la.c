/* frag_la.c -- fragmentation-aware node scoring with a one-step look-ahead
 * over the typical task shapes (FGD, then "where would the next typical pod
 * go on this node, and what would it leave"). A pure function of the node and
 * the request (no cache needed; the simulator may memoise).
 *
 * The live extender calls it for every node of every filter, so it is written
 * for speed while computing exactly (bit for bit) what the definition says
 * (test/test_frag.c keeps the straightforward version and compares):
 *  - the shapes are prepared once per call: weight, CPU, per-GPU need, and a
 *    bitmask of the node's GPUs whose model each accepts (model lists are
 *    parsed here, never in the inner loops);
 *  - for a view, each shape's count of GPUs that can serve it and its idle
 *    share below are computed once; the view after a candidate placement is
 *    a small list of changed GPUs, and every shape's fragment there follows
 *    from those counts in O(1) (no copy of the view, no rescan of its GPUs);
 *  - shapes with the same GPU dimensions (count, need, accepted GPUs) form a
 *    group: the GPU placements are tried once per group, and the fragment is
 *    summed once per group and placement for every set of shapes the members'
 *    leftover CPU excludes (usually one set: CPU is rarely the limit);
 *  - GPUs with equal free share and model are tried once; shapes that fit no
 *    GPU cost nothing;
 *  - the current fragmentation of each view is computed once and reused.
 * Sums are taken in the same order with the same terms as frag_amount(), so
 * the results are identical, not merely close. */
#include "pack/frag_la.h"

#include <math.h>
#include <string.h>

/* Tunables (compile-time, -D to experiment; the defaults are the best
 * measured on the openb default trace, docs/simulator.md). */
#ifndef FRAG_LA_BETA
#define FRAG_LA_BETA 5.0   /* weight of the look-ahead decrease */
#endif
#ifndef FRAG_LA_STEP
#define FRAG_LA_STEP 10.0  /* per-mille: scores this close are ties */
#endif

/* The terms of the measure's sum, in shape order, for one set of shapes the
 * free CPU excludes (identified by its size, the key): weight, and the group
 * whose fragment it takes (ngroups: the whole idle share, an excluded shape);
 * CPU-only shapes that fit add nothing and are left out. */
#define LA_TERM_SLOTS 4
typedef struct la_terms {
    int key;          /* -1: empty slot */
    int n;
    double w[GP_MAX_SHAPES];
    int group[GP_MAX_SHAPES];
} la_terms;

/* A typical shape prepared for one node (shapes of weight <= 0 are dropped:
 * the measure ignores them). */
typedef struct la_shape {
    double w;
    int64_t cpu;
    int count;        /* GPUs; 0 = CPU-only */
    int need;         /* free share each of its GPUs must have */
    uint64_t ok;      /* the node's GPUs whose model it accepts */
    int group;        /* shapes with the same count, need and ok share a group */
} la_shape;

typedef struct la_shapes {
    int n, ngroups;
    la_shape s[GP_MAX_SHAPES];
    int lead[GP_MAX_SHAPES];      /* per group: its first shape */
    int first[GP_MAX_SHAPES + 1]; /* per group: its members are member[first[g]..first[g+1]) */
    int member[GP_MAX_SHAPES];    /* shape indices grouped, each group in shape order */
    int64_t cpu_max;              /* the largest CPU request of a shape */
    bool sorted;                  /* cpu_desc filled (only when some CPU is short) */
    int64_t cpu_desc[GP_MAX_SHAPES]; /* the shapes' CPU requests, largest first */
    la_terms terms[LA_TERM_SLOTS];   /* term lists of the last keys seen */
} la_shapes;

/* Per view and group: GPUs that can serve the group's shapes, idle share of the others. */
typedef struct la_base {
    int64_t total;
    int fit[GP_MAX_SHAPES];
    int64_t below[GP_MAX_SHAPES];
} la_base;

/* A candidate placement: GPUs whose free share changes from old to new. */
typedef struct la_change {
    int n;
    int gpu[GP_MAX_GPUS_PER_NODE];
    int old_free[GP_MAX_GPUS_PER_NODE];
    int new_free[GP_MAX_GPUS_PER_NODE];
} la_change;

static void la_prepare(const frag_view *v, const gp_shapes *shapes, la_shapes *L)
{
    uint64_t all = v->n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << v->n) - 1;
    int size[GP_MAX_SHAPES];
    L->n = 0;
    L->ngroups = 0;
    L->cpu_max = 0;
    L->sorted = false;
    for (int t = 0; t < LA_TERM_SLOTS; t++)
        L->terms[t].key = -1;
    for (int k = 0; k < shapes->n; k++) {
        const gp_shape *m = &shapes->s[k];
        if (m->weight <= 0)
            continue;
        la_shape *s = &L->s[L->n];
        s->w = m->weight;
        s->cpu = m->cpu_milli;
        s->count = m->count > 0 ? m->count : 0;
        s->need = s->count == 0 ? 0 : m->core > 0 ? m->core : 1;
        s->ok = s->count == 0 ? 0 : all;
        if (s->count > 0 && m->models[0]) {
            s->ok = 0;
            bool allowed = false;
            for (int i = 0; i < v->n; i++) {
                if (i == 0 || v->model[i] != v->model[i - 1])
                    allowed = gp_model_allowed(m->models, gp_model_name(v->model[i]));
                if (allowed)
                    s->ok |= UINT64_C(1) << i;
            }
        }
        int g = 0;
        while (g < L->ngroups) {
            const la_shape *t = &L->s[L->lead[g]];
            if (t->count == s->count && t->need == s->need && t->ok == s->ok)
                break;
            g++;
        }
        if (g == L->ngroups) {
            L->lead[g] = L->n;
            size[g] = 0;
            L->ngroups++;
        }
        s->group = g;
        size[g]++;
        if (s->cpu > L->cpu_max)
            L->cpu_max = s->cpu;
        L->n++;
    }
    L->first[0] = 0;
    for (int g = 0; g < L->ngroups; g++) {
        L->first[g + 1] = L->first[g] + size[g];
        size[g] = L->first[g];   /* now the next free slot */
    }
    for (int k = 0; k < L->n; k++)
        L->member[size[L->s[k].group]++] = k;
}

static void la_base_of(const frag_view *v, const la_shapes *L, la_base *b)
{
    b->total = frag_idle(v);
    for (int g = 0; g < L->ngroups; g++) {
        const la_shape *s = &L->s[L->lead[g]];
        int fit = 0;
        int64_t below = 0;
        for (int i = 0; i < v->n; i++) {
            if (((s->ok >> i) & 1) && v->free[i] >= s->need)
                fit++;
            else
                below += v->free[i];
        }
        b->fit[g] = fit;
        b->below[g] = below;
    }
}

/* frag_amount() of the view `b` describes after change `c`, with idle share
 * `total` and the terms `t` of its free CPU: same terms, same order. */
static double la_amount(const la_shapes *L, const la_base *b, const la_change *c, int64_t total,
                        const la_terms *t)
{
    if (total == 0)
        return 0.0;
    double frag[GP_MAX_SHAPES + 1];   /* per group: the fragment of its shapes */
    if (c->n == 1) {
        int gpu = c->gpu[0], was = c->old_free[0], now = c->new_free[0];
        for (int g = 0; g < L->ngroups; g++) {
            const la_shape *s = &L->s[L->lead[g]];
            bool ok = (s->ok >> gpu) & 1;
            bool fit_was = ok && was >= s->need, fit_now = ok && now >= s->need;
            int fit = b->fit[g] - fit_was + fit_now;
            int64_t below = b->below[g] - (fit_was ? 0 : was) + (fit_now ? 0 : now);
            frag[g] = (double)(fit >= s->count ? below : total);
        }
    } else {
        for (int g = 0; g < L->ngroups; g++) {
            const la_shape *s = &L->s[L->lead[g]];
            int fit = b->fit[g];
            int64_t below = b->below[g];
            for (int x = 0; x < c->n; x++) {
                bool ok = (s->ok >> c->gpu[x]) & 1;
                if (ok && c->old_free[x] >= s->need)
                    fit--;
                else
                    below -= c->old_free[x];
                if (ok && c->new_free[x] >= s->need)
                    fit++;
                else
                    below += c->new_free[x];
            }
            frag[g] = (double)(fit >= s->count ? below : total);
        }
    }
    frag[L->ngroups] = (double)total;   /* a shape the node cannot host at all */
    double sum = 0.0;
    for (int j = 0; j < t->n; j++)
        sum += t->w[j] * frag[t->group[j]];
    return sum;
}

/* The term list of free CPU `cpu` whose key is `key` (cached per key). */
static const la_terms *la_terms_of(la_shapes *L, int key, int64_t cpu)
{
    la_terms *t = &L->terms[key % LA_TERM_SLOTS];
    if (t->key == key)
        return t;
    t->key = key;
    t->n = 0;
    for (int j = 0; j < L->n; j++) {
        const la_shape *s = &L->s[j];
        if (cpu >= 0 && s->cpu > cpu) {
            t->w[t->n] = s->w;
            t->group[t->n++] = L->ngroups;
        } else if (s->count > 0) {
            t->w[t->n] = s->w;
            t->group[t->n++] = s->group;
        }
    }
    return t;
}

/* How many shapes a leftover CPU of `cpu` excludes (those asking more):
 * shapes of a group whose leftover CPU excludes as many see the same fragment. */
static int la_cpu_key(la_shapes *L, int64_t cpu)
{
    if (cpu < 0 || cpu >= L->cpu_max)
        return 0;
    if (!L->sorted) {   /* insertion sort, largest first */
        for (int j = 0; j < L->n; j++) {
            int p = j;
            while (p > 0 && L->cpu_desc[p - 1] < L->s[j].cpu) {
                L->cpu_desc[p] = L->cpu_desc[p - 1];
                p--;
            }
            L->cpu_desc[p] = L->s[j].cpu;
        }
        L->sorted = true;
    }
    int lo = 0, hi = L->n;   /* the first position whose request is <= cpu */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->cpu_desc[mid] > cpu)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The look-ahead fragment of view v (and its plain fragment in *now). */
static double la_lookahead(const frag_view *v, la_shapes *L, double *now)
{
    la_base b;
    la_base_of(v, L, &b);
    la_change c;   /* not zero-initialised: only the first n entries are read */
    c.n = 0;
    *now = la_amount(L, &b, &c, b.total,
                     la_terms_of(L, la_cpu_key(L, v->cpu_free), v->cpu_free));

    /* GPUs worth trying: the first of each (free share, model) */
    int cls[GP_MAX_GPUS_PER_NODE], ncls = 0;
    for (int g = 0; g < v->n; g++) {
        bool seen = false;
        for (int x = 0; x < ncls && !seen; x++)
            seen = v->free[cls[x]] == v->free[g] && v->model[cls[x]] == v->model[g];
        if (!seen)
            cls[ncls++] = g;
    }

    double best[GP_MAX_SHAPES];
    int64_t cpu_left[GP_MAX_SHAPES];
    int key[GP_MAX_SHAPES];
    int memo_stamp[GP_MAX_SHAPES + 1];
    double memo[GP_MAX_SHAPES + 1];
    for (int x = 0; x <= L->n; x++)
        memo_stamp[x] = -1;
    int stamp = 0;
    for (int G = 0; G < L->ngroups; G++) {
        /* members that fit the node's CPU, with what they leave of it */
        int fits[GP_MAX_SHAPES], nfits = 0;
        for (int i = L->first[G]; i < L->first[G + 1]; i++) {
            int k = L->member[i];
            best[k] = *now;
            if (v->cpu_free >= 0 && L->s[k].cpu > v->cpu_free)
                continue;
            cpu_left[k] = v->cpu_free >= 0 ? v->cpu_free - L->s[k].cpu : v->cpu_free;
            key[k] = la_cpu_key(L, cpu_left[k]);
            fits[nfits++] = k;
        }
        if (nfits == 0)
            continue;
        const la_shape *s = &L->s[L->lead[G]];
        int tries = s->count == 1 ? ncls : 1;
        for (int t = 0; t < tries; t++) {
            int64_t total = b.total;
            c.n = 0;
            if (s->count == 1) {
                int g = cls[t];
                if (!((s->ok >> g) & 1) || v->free[g] < s->need)
                    continue;
                c.gpu[0] = g;
                c.old_free[0] = v->free[g];
                c.new_free[0] = v->free[g] - s->need;
                c.n = 1;
                total -= s->need;
            } else if (s->count > 1) {   /* the first allowed GPUs that fit */
                for (int i = 0; i < v->n && c.n < s->count; i++) {
                    if (((s->ok >> i) & 1) && v->free[i] >= s->need) {
                        c.gpu[c.n] = i;
                        c.old_free[c.n] = v->free[i];
                        c.new_free[c.n] = v->free[i] - s->need;
                        c.n++;
                        total -= s->need;
                    }
                }
                if (c.n < s->count)
                    continue;
            }
            stamp++;
            for (int i = 0; i < nfits; i++) {
                int k = fits[i];
                if (memo_stamp[key[k]] != stamp) {
                    memo[key[k]] = la_amount(L, &b, &c, total,
                                             la_terms_of(L, key[k], cpu_left[k]));
                    memo_stamp[key[k]] = stamp;
                }
                /* one-GPU shapes: the best GPU, kept only when it beats the
                 * node as is; other shapes: their one placement, as it is */
                if (s->count != 1 || memo[key[k]] < best[k])
                    best[k] = memo[key[k]];
            }
        }
    }
    double sum = 0.0;
    for (int k = 0; k < L->n; k++)
        sum += L->s[k].w * best[k];
    return sum;
}

/* Expected fragment after the next typical pod (see frag_la.h): a one-GPU
 * shape on the GPU where it leaves the least fragment, unless the node as is
 * has less; a multi-GPU or CPU-only shape where it goes (the first allowed
 * GPUs that fit), whatever that leaves; a shape that does not fit: the node
 * as is. */
double frag_lookahead_amount(const frag_view *v, const gp_shapes *shapes)
{
    if (!shapes)
        shapes = frag_default_shapes();
    la_shapes L;
    la_prepare(v, shapes, &L);
    double now;
    return la_lookahead(v, &L, &now);
}

static double quantise(double d, double step)
{
    return step > 0 ? floor(d / step + 0.5) * step : d;
}

static double left_per_gpu(const frag_view *after)
{
    return after->n > 0 ? (double)frag_idle(after) / after->n : 0.0;   /* 0..1000 */
}

double frag_node_score_lookahead(const gp_node *node, const gp_pod_req *req,
                                 const gp_assignment *a, const gp_place_opts *opts)
{
    const gp_shapes *shapes = opts->shapes ? opts->shapes : frag_default_shapes();
    frag_view before, after;
    frag_view_of_node(node, opts, &before);
    frag_view_after(node, req, a, opts, &after);
    la_shapes L;   /* the same GPUs and models before and after */
    la_prepare(&before, shapes, &L);
    double f_before, f_after, l_before;
    /* the node as it is: the same for every pod that comes, so kept by state
     * (two entries: both must be there) */
    gp_keycache *memo = opts->memo && node->state_hash ? opts->memo->cache : NULL;
    uint64_t k1 = 0, k2 = 0;
    if (memo) {
        k1 = (node->state_hash ^ opts->memo->salt) * GP_FNV_PRIME;
        k1 = (k1 ^ k1 >> 29) | 1;
        k2 = (k1 * GP_FNV_PRIME ^ 0x5bd1e995u) | 1;
    }
    if (!memo || !keycache_get(memo, k1, &l_before) || !keycache_get(memo, k2, &f_before)) {
        l_before = la_lookahead(&before, &L, &f_before);
        keycache_put(memo, k1, l_before);
        keycache_put(memo, k2, f_before);
    }
    double l_after = la_lookahead(&after, &L, &f_after);
    double d = f_before - f_after;
    double d2 = l_before - l_after;
    double q = quantise(d + FRAG_LA_BETA * d2, FRAG_LA_STEP);
    return q - left_per_gpu(&after) / (GP_CORE_FULL + 1.0);
}
