/* frag_la.c -- fragmentation-aware node scoring with a one-step look-ahead
 * over the typical task shapes (FGD, then "where would the next typical pod
 * go on this node, and what would it leave"). A pure function of the node and
 * the request (no cache needed; the simulator may memoise). */
#include "frag_la.h"

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

/* The node after a pod of shape m: a one-GPU shape on GPU `gpu`, a multi-GPU
 * shape on the first allowed GPUs that fit; false when m does not fit. */
static bool place_shape(const frag_view *v, const gp_shape *m, int gpu, frag_view *out)
{
    if (v->cpu_free >= 0 && m->cpu_milli > v->cpu_free)
        return false;
    *out = *v;
    if (out->cpu_free >= 0)
        out->cpu_free -= m->cpu_milli;
    if (m->count <= 0)
        return true;
    int need = m->core > 0 ? m->core : 1;
    if (m->count == 1) {
        if (out->free[gpu] < need ||
            (m->models[0] && !gp_model_allowed(m->models, out->model[gpu])))
            return false;
        out->free[gpu] -= need;
        return true;
    }
    int got = 0;
    for (int i = 0; i < out->n && got < m->count; i++) {
        if (out->free[i] >= need && (!m->models[0] || gp_model_allowed(m->models, out->model[i]))) {
            out->free[i] -= need;
            got++;
        }
    }
    return got == m->count;
}

/* Expected fragment after the next typical pod: for each shape, the lowest
 * fragment its best placement here leaves, or the fragment as is when that is
 * lower or the shape does not fit (the pod would go elsewhere). GPUs with
 * equal free share and model are tried once. */
double frag_lookahead_amount(const frag_view *v, const gp_shapes *shapes)
{
    if (!shapes)
        shapes = frag_default_shapes();
    double now = frag_amount(v, shapes);
    double sum = 0.0;
    for (int k = 0; k < shapes->n; k++) {
        const gp_shape *m = &shapes->s[k];
        if (m->weight <= 0)
            continue;
        double best = now;
        frag_view nx;
        if (m->count == 1) {
            for (int g = 0; g < v->n; g++) {
                bool seen = false;
                for (int j = 0; j < g && !seen; j++)
                    seen = v->free[j] == v->free[g] &&
                           (v->model[j] == v->model[g] || strcmp(v->model[j], v->model[g]) == 0);
                if (seen || !place_shape(v, m, g, &nx))
                    continue;
                double f = frag_amount(&nx, shapes);
                if (f < best)
                    best = f;
            }
        } else if (place_shape(v, m, 0, &nx)) {
            best = frag_amount(&nx, shapes);
        }
        sum += m->weight * best;
    }
    return sum;
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
    frag_view before, after;
    frag_view_of_node(node, opts, &before);
    frag_view_after(node, req, a, opts, &after);
    double d = frag_amount(&before, opts->shapes) - frag_amount(&after, opts->shapes);
    double d2 = frag_lookahead_amount(&before, opts->shapes) -
                frag_lookahead_amount(&after, opts->shapes);
    double q = quantise(d + FRAG_LA_BETA * d2, FRAG_LA_STEP);
    return q - left_per_gpu(&after) / (GP_CORE_FULL + 1.0);
}
