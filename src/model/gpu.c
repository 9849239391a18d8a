/* gpu.c -- small pure helpers over the shared data model. */
#include "model/gpu.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

int gp_assignment_holds(const gp_assignment *a, gp_hold *holds)
{
    return gp_ctrs_holds(a->ctrs, a->nctrs, holds);
}

int gp_ctrs_holds(const gp_ctr_assign *ctrs, int nctrs, gp_hold *holds)
{
    int n = 0;
    /* regular containers add up; each init container alone is compared */
    gp_hold init[GP_MAX_GPUS_PER_NODE];
    int ninit = 0;
    for (int c = 0; c < nctrs; c++) {
        const gp_ctr_assign *ca = &ctrs[c];
        if (ca->init)
            continue;
        for (int g = 0; g < ca->ngpus; g++) {
            int k = 0;
            while (k < n && holds[k].index != ca->gpus[g].index)
                k++;
            if (k == n) {
                if (n == GP_MAX_GPUS_PER_NODE)
                    continue;
                holds[n++] = (gp_hold){ca->gpus[g].index, 0, 0, false};
            }
            holds[k].mem_mib += ca->gpus[g].mem_mib;
            holds[k].core += ca->gpus[g].core;
        }
    }
    for (int c = 0; c < nctrs; c++) {
        const gp_ctr_assign *ca = &ctrs[c];
        if (!ca->init)
            continue;
        for (int g = 0; g < ca->ngpus; g++) {
            int k = 0;
            while (k < ninit && init[k].index != ca->gpus[g].index)
                k++;
            if (k == ninit) {
                if (ninit == GP_MAX_GPUS_PER_NODE)
                    continue;
                init[ninit++] = (gp_hold){ca->gpus[g].index, 0, 0, false};
            }
            /* one init container at a time: take the max, not the sum */
            if (ca->gpus[g].mem_mib > init[k].mem_mib)
                init[k].mem_mib = ca->gpus[g].mem_mib;
            if (ca->gpus[g].core > init[k].core)
                init[k].core = ca->gpus[g].core;
        }
    }
    for (int i = 0; i < ninit; i++) {
        int k = 0;
        while (k < n && holds[k].index != init[i].index)
            k++;
        if (k == n) {
            if (n == GP_MAX_GPUS_PER_NODE)
                continue;
            holds[n++] = init[i];
            continue;
        }
        if (init[i].mem_mib > holds[k].mem_mib)
            holds[k].mem_mib = init[i].mem_mib;
        if (init[i].core > holds[k].core)
            holds[k].core = init[i].core;
    }
    return n;
}

bool gp_assignment_equal(const gp_assignment *x, const gp_assignment *y)
{
    return strcmp(x->node, y->node) == 0 && gp_ctrs_equal(x->ctrs, x->nctrs, y->ctrs, y->nctrs);
}

bool gp_ctrs_equal(const gp_ctr_assign *x, int nx, const gp_ctr_assign *y, int ny)
{
    if (nx != ny)
        return false;
    for (int c = 0; c < nx; c++) {
        const gp_ctr_assign *a = &x[c], *b = &y[c];
        if (strcmp(a->name, b->name) != 0 || a->init != b->init || a->ngpus != b->ngpus)
            return false;
        for (int g = 0; g < a->ngpus; g++)
            if (a->gpus[g].index != b->gpus[g].index || a->gpus[g].mem_mib != b->gpus[g].mem_mib ||
                a->gpus[g].core != b->gpus[g].core)
                return false;
    }
    return true;
}

int gp_node_gpu_pos(const gp_node *node, int index)
{
    for (int i = 0; i < node->ngpus; i++)
        if (node->gpus[i].info.index == index)
            return i;
    return -1;
}

int64_t gp_ctr_mem_on(const gp_ctr_req *c, int64_t alloc_mib)
{
    if (c->mem_mib > 0 || c->mem_ppm <= 0)
        return c->mem_mib;
    if (alloc_mib <= 0)
        return 1;   /* nothing to share: never fits an empty GPU */
    if (alloc_mib > INT64_MAX / GP_PPM_FULL)
        return alloc_mib;   /* beyond any GPU (inventories stop at 16 TiB) */
    int64_t scaled = alloc_mib * (c->mem_ppm > GP_PPM_FULL ? GP_PPM_FULL : c->mem_ppm);
    int64_t need;
    if (c->ask == GP_ASK_FRACTION || c->ask == GP_ASK_PERCENT)
        need = scaled / GP_PPM_FULL;   /* KAI: int64(total * portion); HAMi: total * pct / 100 */
    else
        need = (scaled + GP_PPM_FULL - 1) / GP_PPM_FULL;   /* the trace protocol's ceil */
    return need > 0 ? need : 1;
}

static bool is_sep(char c)
{
    return c == '\0' || c == '-' || c == ' ' || c == '_' || c == '/';
}

/* The entry must stand as whole tokens inside the model: "T4" matches
 * "Tesla-T4", "A100" matches "NVIDIA-A100-SXM4-40GB", "A10" does not match "A100". */
static bool entry_matches(const char *entry, size_t len, const char *model)
{
    if (len == 0)
        return false;
    size_t mlen = strlen(model);
    for (size_t off = 0; off + len <= mlen; off++) {
        if (off > 0 && !is_sep(model[off - 1]))
            continue;
        if (strncasecmp(model + off, entry, len) == 0 && is_sep(model[off + len]))
            return true;
    }
    return false;
}

/* HAMi's and Volcano's match: an entry of the ','-separated list occurs in
 * the model, ignoring case (device.CheckType in HAMi, checkGPUtype in
 * Volcano's vgpu utils.go); blank entries never match. */
static bool type_listed(const char *list, const char *model)
{
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *e = p;
        while (len && *e == ' ') {
            e++;
            len--;
        }
        while (len && e[len - 1] == ' ')
            len--;
        for (size_t off = 0; len && off + len <= strlen(model); off++)
            if (strncasecmp(model + off, e, len) == 0)
                return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

bool gp_req_model_ok(const gp_pod_req *req, const char *model)
{
    if (!gp_model_allowed(req->models, model))
        return false;
    if (req->type_use[0] && !type_listed(req->type_use, model))
        return false;
    if (req->type_use[0] && req->profile == GP_PROFILE_VOLCANO)
        return true;   /* Volcano reads nouse-gputype only without use-gputype */
    return !req->type_nouse[0] || !type_listed(req->type_nouse, model);
}

bool gp_model_allowed(const char *list, const char *model)
{
    if (!list || !*list)
        return true;
    const char *p = list;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        /* trim spaces around an entry */
        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        if (entry_matches(p, len, model))
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}
