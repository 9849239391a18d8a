/* kubesim.c -- kube-scheduler v1.26's node search and scoring arithmetic (pure). */
#include "sim/kubesim.h"

#include <math.h>
#include <string.h>

int kubesim_num_feasible(int pct, int nall)
{
    if (nall < KUBESIM_MIN_FEASIBLE)
        return nall;
    if (pct <= 0) {
        pct = 50 - nall / 125;
        if (pct < KUBESIM_MIN_PCT)
            pct = KUBESIM_MIN_PCT;
    }
    int n = (int)((int64_t)nall * pct / 100);
    return n < KUBESIM_MIN_FEASIBLE ? KUBESIM_MIN_FEASIBLE : n;
}

int64_t kubesim_least_requested(int64_t requested, int64_t capacity)
{
    if (capacity == 0 || requested > capacity)
        return 0;
    return (capacity - requested) * KUBESIM_MAX_NODE_SCORE / capacity;
}

int64_t kubesim_most_requested(int64_t requested, int64_t capacity)
{
    if (capacity == 0)
        return 0;
    if (requested > capacity)
        requested = capacity;   /* v1.26: over-requested nodes score as full */
    return requested * KUBESIM_MAX_NODE_SCORE / capacity;
}

int64_t kubesim_shape_at(const schedcfg *c, int64_t p)
{
    const int64_t scale = KUBESIM_MAX_NODE_SCORE / 10;   /* MaxCustomPriorityScore = 10 */
    int n = c->nshape;
    if (n == 0)
        return 0;
    int i = 0;
    while (i < n && p > c->shape_util[i])
        i++;
    if (i == 0)
        return c->shape_score[0] * scale;
    if (i == n)
        return c->shape_score[n - 1] * scale;
    int64_t u0 = c->shape_util[i - 1], u1 = c->shape_util[i];
    int64_t s0 = c->shape_score[i - 1] * scale, s1 = c->shape_score[i] * scale;
    return s0 + (s1 - s0) * (p - u0) / (u1 - u0);
}

int64_t kubesim_fit_score(const schedcfg *c, const int64_t *requested, const int64_t *alloc)
{
    int64_t sum = 0, wsum = 0;
    for (int i = 0; i < c->nfit_res; i++) {
        if (alloc[i] == 0)
            continue;
        int64_t w = c->fit_res[i].weight, s;
        switch (c->strategy) {
        case SCHEDCFG_MOST_ALLOCATED:
            s = kubesim_most_requested(requested[i], alloc[i]);
            break;
        case SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO:
            s = requested[i] > alloc[i] ? kubesim_shape_at(c, 100)
                                        : kubesim_shape_at(c, requested[i] * 100 / alloc[i]);
            if (s <= 0)
                continue;   /* RTCR leaves zero-scored resources out of the mean */
            break;
        default:
            s = kubesim_least_requested(requested[i], alloc[i]);
            break;
        }
        sum += s * w;
        wsum += w;
    }
    if (wsum == 0)
        return 0;
    if (c->strategy == SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO)
        return (int64_t)llround((double)sum / (double)wsum);
    return sum / wsum;
}

int64_t kubesim_balanced_score(const int64_t *requested, const int64_t *alloc, int n)
{
    double f[SCHEDCFG_MAX_RES], total = 0;
    int k = 0;
    for (int i = 0; i < n && k < SCHEDCFG_MAX_RES; i++) {
        if (alloc[i] == 0)
            continue;
        double x = (double)requested[i] / (double)alloc[i];
        if (x > 1)
            x = 1;
        f[k++] = x;
        total += x;
    }
    double sd = 0;
    if (k == 2) {
        sd = fabs((f[0] - f[1]) / 2);
    } else if (k > 2) {
        double mean = total / k, s = 0;
        for (int i = 0; i < k; i++)
            s += (f[i] - mean) * (f[i] - mean);
        sd = sqrt(s / k);
    }
    return (int64_t)((1 - sd) * KUBESIM_MAX_NODE_SCORE);
}

int64_t kubesim_extender_score(int64_t score, int weight)
{
    return score * weight * (KUBESIM_MAX_NODE_SCORE / KUBESIM_MAX_EXTENDER_PRIORITY);
}

bool kubesim_interested(const schedcfg *c, const char *const *pod_resources, int n)
{
    if (c->nmanaged == 0)
        return true;
    for (int i = 0; i < n; i++)
        for (int m = 0; m < c->nmanaged; m++)
            if (strcmp(pod_resources[i], c->managed[m].name) == 0)
                return true;
    return false;
}

bool kubesim_checks_resource(const schedcfg *c, const char *name)
{
    for (int i = 0; i < c->nignored; i++)
        if (strcmp(name, c->ignored[i]) == 0)
            return false;
    const char *slash = strchr(name, '/');
    size_t glen = slash ? (size_t)(slash - name) : 0;
    for (int i = 0; slash && i < c->nignored_groups; i++)
        if (strlen(c->ignored_groups[i]) == glen && strncmp(name, c->ignored_groups[i], glen) == 0)
            return false;
    for (int m = 0; m < c->nmanaged; m++)
        if (c->managed[m].ignored_by_scheduler && strcmp(name, c->managed[m].name) == 0)
            return false;
    return true;
}
