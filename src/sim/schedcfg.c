/* schedcfg.c -- KubeSchedulerConfiguration v1 -> the knobs kube-scheduler v1.26
 * places pods with (see schedcfg.h for what is read). */
#include "sim/schedcfg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/yamljson.h"

#define FIT "NodeResourcesFit"
#define BAL "NodeResourcesBalancedAllocation"

void schedcfg_defaults(schedcfg *out)
{
    memset(out, 0, sizeof *out);
    out->w_fit = 1;
    out->w_bal = 1;
    out->strategy = SCHEDCFG_LEAST_ALLOCATED;
    out->fit_res[0] = (schedcfg_res){"cpu", 1};
    out->fit_res[1] = (schedcfg_res){"memory", 1};
    out->nfit_res = 2;
    out->bal_res[0] = (schedcfg_res){"cpu", 1};
    out->bal_res[1] = (schedcfg_res){"memory", 1};
    out->nbal_res = 2;
    out->ext_weight = 1;
}

/* An optional integer member in [lo, hi]; absent leaves *out alone. */
static int opt_int(const json_t *obj, const char *key, const char *where, int64_t lo, int64_t hi,
                   int64_t *out, gp_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gp_fail(err, "%s.%s: must be an integer in %lld..%lld", where, key, (long long)lo,
                       (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

static int opt_str(const json_t *obj, const char *key, const char *where, const char **out,
                   gp_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= SCHEDCFG_NAME_MAX)
        return gp_fail(err, "%s.%s: must be a string shorter than %d bytes", where, key,
                       SCHEDCFG_NAME_MAX);
    *out = json_string_value(v);
    return 0;
}

static int opt_array(const json_t *obj, const char *key, const char *where, size_t max,
                     const json_t **out, gp_err *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return gp_fail(err, "%s.%s: must be a list", where, key);
    if (json_array_size(v) > max)
        return gp_fail(err, "%s.%s: at most %zu entries", where, key, max);
    *out = v;
    return 0;
}

static int opt_object(const json_t *obj, const char *key, const char *where, const json_t **out,
                      gp_err *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return gp_fail(err, "%s.%s: must be a mapping", where, key);
    *out = v;
    return 0;
}

/* A list of {name, weight}; weight 0 or absent means 1 (defaults.go). */
static int read_resources(const json_t *list, const char *where, schedcfg_res *res, int *n,
                          gp_err *err)
{
    size_t i;
    const json_t *e;
    *n = 0;
    json_array_foreach(list, i, e)
    {
        const char *name = NULL;
        int64_t w = 0;
        if (!json_is_object(e))
            return gp_fail(err, "%s[%zu]: must be a mapping", where, i);
        if (opt_str(e, "name", where, &name, err) || opt_int(e, "weight", where, 0, 100, &w, err))
            return -1;
        if (!name || !*name)
            return gp_fail(err, "%s[%zu]: name is required", where, i);
        gp_strlcpy(res[*n].name, name, SCHEDCFG_NAME_MAX);
        res[*n].weight = w ? w : 1;
        (*n)++;
    }
    return 0;
}

static int read_names(const json_t *list, const char *where, char (*names)[SCHEDCFG_NAME_MAX],
                      int *n, gp_err *err)
{
    size_t i;
    const json_t *e;
    *n = 0;
    json_array_foreach(list, i, e)
    {
        if (!json_is_string(e) || json_string_length(e) >= SCHEDCFG_NAME_MAX)
            return gp_fail(err, "%s[%zu]: must be a string shorter than %d bytes", where, i,
                           SCHEDCFG_NAME_MAX);
        gp_strlcpy(names[(*n)++], json_string_value(e), SCHEDCFG_NAME_MAX);
    }
    return 0;
}

/* plugins.<point>.disabled then .enabled, for the two scoring plugins. */
static int read_plugin_set(const json_t *set, const char *where, schedcfg *out, gp_err *err)
{
    const json_t *dis, *en, *e;
    size_t i;
    if (!set)
        return 0;
    if (opt_array(set, "disabled", where, 64, &dis, err) ||
        opt_array(set, "enabled", where, 64, &en, err))
        return -1;
    json_array_foreach(dis, i, e)
    {
        const char *name = NULL;
        if (!json_is_object(e) || opt_str(e, "name", where, &name, err) || !name)
            return gp_fail(err, "%s.disabled[%zu]: needs a name", where, i);
        if (!strcmp(name, "*") || !strcmp(name, FIT))
            out->w_fit = 0;
        if (!strcmp(name, "*") || !strcmp(name, BAL))
            out->w_bal = 0;
    }
    json_array_foreach(en, i, e)
    {
        const char *name = NULL;
        int64_t w = 0;
        if (!json_is_object(e) || opt_str(e, "name", where, &name, err) || !name)
            return gp_fail(err, "%s.enabled[%zu]: needs a name", where, i);
        if (opt_int(e, "weight", where, 0, 100, &w, err))
            return -1;
        int *slot = !strcmp(name, FIT) ? &out->w_fit : !strcmp(name, BAL) ? &out->w_bal : NULL;
        if (slot)
            *slot = w ? (int)w : (*slot ? *slot : 1);
    }
    return 0;
}

static int read_fit_args(const json_t *args, schedcfg *out, gp_err *err)
{
    const char *w = "pluginConfig[NodeResourcesFit].args";
    const json_t *ss, *list, *rtcr;
    if (opt_array(args, "ignoredResources", w, SCHEDCFG_MAX_NAMES, &list, err) ||
        read_names(list, "ignoredResources", out->ignored, &out->nignored, err) ||
        opt_array(args, "ignoredResourceGroups", w, SCHEDCFG_MAX_NAMES, &list, err) ||
        read_names(list, "ignoredResourceGroups", out->ignored_groups, &out->nignored_groups, err) ||
        opt_object(args, "scoringStrategy", w, &ss, err))
        return -1;
    if (!ss)
        return 0;
    const char *type = NULL;
    if (opt_str(ss, "type", "scoringStrategy", &type, err))
        return -1;
    if (!type || !strcmp(type, "LeastAllocated"))
        out->strategy = SCHEDCFG_LEAST_ALLOCATED;
    else if (!strcmp(type, "MostAllocated"))
        out->strategy = SCHEDCFG_MOST_ALLOCATED;
    else if (!strcmp(type, "RequestedToCapacityRatio"))
        out->strategy = SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO;
    else
        return gp_fail(err, "scoringStrategy.type: \"%.60s\" is not LeastAllocated, "
                            "MostAllocated or RequestedToCapacityRatio", type);
    if (opt_array(ss, "resources", "scoringStrategy", SCHEDCFG_MAX_RES, &list, err))
        return -1;
    if (list && read_resources(list, "scoringStrategy.resources", out->fit_res, &out->nfit_res, err))
        return -1;
    if (opt_object(ss, "requestedToCapacityRatio", "scoringStrategy", &rtcr, err))
        return -1;
    if (out->strategy != SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO)
        return 0;
    if (!rtcr || opt_array(rtcr, "shape", "requestedToCapacityRatio", SCHEDCFG_MAX_SHAPE, &list, err))
        return rtcr ? -1 : gp_fail(err, "scoringStrategy: RequestedToCapacityRatio needs "
                                        "requestedToCapacityRatio.shape");
    size_t i;
    const json_t *e;
    out->nshape = 0;
    json_array_foreach(list, i, e)
    {
        int64_t u = -1, s = -1;
        if (!json_is_object(e) || opt_int(e, "utilization", "shape", 0, 100, &u, err) ||
            opt_int(e, "score", "shape", 0, 10, &s, err))
            return json_is_object(e) ? -1 : gp_fail(err, "shape[%zu]: must be a mapping", i);
        if (u < 0 || s < 0)
            return gp_fail(err, "shape[%zu]: needs utilization 0..100 and score 0..10", i);
        if (i > 0 && u <= out->shape_util[i - 1])
            return gp_fail(err, "shape[%zu]: utilization must increase", i);
        out->shape_util[i] = (int)u;
        out->shape_score[i] = (int)s;
        out->nshape++;
    }
    if (out->nshape == 0)
        return gp_fail(err, "requestedToCapacityRatio.shape: at least one point");
    return 0;
}

static int read_profile(const json_t *prof, schedcfg *out, gp_err *err)
{
    const json_t *plugins, *cfgs, *set, *e;
    int64_t pct = -1;
    size_t i;
    if (!json_is_object(prof))
        return gp_fail(err, "profiles[0]: must be a mapping");
    if (opt_int(prof, "percentageOfNodesToScore", "profiles[0]", 0, 100, &pct, err) ||
        opt_object(prof, "plugins", "profiles[0]", &plugins, err) ||
        opt_array(prof, "pluginConfig", "profiles[0]", 64, &cfgs, err))
        return -1;
    if (pct >= 0)
        out->pct = (int)pct;
    if (plugins) {
        if (opt_object(plugins, "multiPoint", "plugins", &set, err) ||
            read_plugin_set(set, "plugins.multiPoint", out, err) ||
            opt_object(plugins, "score", "plugins", &set, err) ||
            read_plugin_set(set, "plugins.score", out, err))
            return -1;
    }
    json_array_foreach(cfgs, i, e)
    {
        const char *name = NULL;
        const json_t *args;
        if (!json_is_object(e) || opt_str(e, "name", "pluginConfig", &name, err) || !name)
            return gp_fail(err, "pluginConfig[%zu]: needs a name", i);
        if (opt_object(e, "args", "pluginConfig", &args, err))
            return -1;
        if (!args)
            continue;
        if (!strcmp(name, FIT) && read_fit_args(args, out, err))
            return -1;
        if (!strcmp(name, BAL)) {
            const json_t *list;
            if (opt_array(args, "resources", "pluginConfig[" BAL "].args", SCHEDCFG_MAX_RES, &list,
                          err))
                return -1;
            if (list && read_resources(list, BAL ".resources", out->bal_res, &out->nbal_res, err))
                return -1;
        }
    }
    return 0;
}

static int read_extender(const json_t *ext, schedcfg *out, gp_err *err)
{
    const char *w = "extenders[0]";
    const char *verb = NULL;
    const json_t *list, *e;
    int64_t weight = 0;
    size_t i;
    if (!json_is_object(ext))
        return gp_fail(err, "%s: must be a mapping", w);
    out->has_extender = true;
    if (opt_int(ext, "weight", w, 0, 1000000, &weight, err))
        return -1;
    out->ext_weight = weight > 0 ? (int)weight : 1;
    verb = NULL;
    if (opt_str(ext, "filterVerb", w, &verb, err))
        return -1;
    out->ext_filter = verb && *verb;
    verb = NULL;
    if (opt_str(ext, "prioritizeVerb", w, &verb, err))
        return -1;
    out->ext_prioritize = verb && *verb;
    if (out->ext_prioritize && weight <= 0)
        return gp_fail(err, "%s.weight: must be positive with a prioritizeVerb", w);
    verb = NULL;
    if (opt_str(ext, "bindVerb", w, &verb, err))
        return -1;
    out->ext_bind = verb && *verb;
    if (opt_array(ext, "managedResources", w, SCHEDCFG_MAX_NAMES, &list, err))
        return -1;
    json_array_foreach(list, i, e)
    {
        const char *name = NULL;
        const json_t *ign;
        if (!json_is_object(e) || opt_str(e, "name", "managedResources", &name, err) || !name ||
            !*name)
            return gp_fail(err, "%s.managedResources[%zu]: needs a name", w, i);
        ign = json_object_get(e, "ignoredByScheduler");
        if (ign && !json_is_boolean(ign))
            return gp_fail(err, "%s.managedResources[%zu].ignoredByScheduler: must be a boolean", w,
                           i);
        gp_strlcpy(out->managed[out->nmanaged].name, name, SCHEDCFG_NAME_MAX);
        out->managed[out->nmanaged].ignored_by_scheduler = ign && json_is_true(ign);
        out->nmanaged++;
    }
    return 0;
}

int schedcfg_parse(const char *text, size_t len, schedcfg *out, gp_err *err)
{
    schedcfg_defaults(out);
    json_t *docs = yamljson_parse(text, len, err);
    if (!docs)
        return -1;
    int rc = -1;
    const json_t *doc = json_array_get(docs, 0);
    const char *api = NULL, *kind = NULL;
    const json_t *profiles, *exts;
    int64_t pct = 0;
    if (!json_is_object(doc)) {
        gp_fail(err, "not a KubeSchedulerConfiguration (no mapping)");
        goto done;
    }
    if (opt_str(doc, "apiVersion", "", &api, err) || opt_str(doc, "kind", "", &kind, err))
        goto done;
    if (!api || strcmp(api, "kubescheduler.config.k8s.io/v1") != 0 || !kind ||
        strcmp(kind, "KubeSchedulerConfiguration") != 0) {
        gp_fail(err, "apiVersion/kind: want kubescheduler.config.k8s.io/v1 "
                     "KubeSchedulerConfiguration");
        goto done;
    }
    if (opt_int(doc, "percentageOfNodesToScore", "", 0, 100, &pct, err) ||
        opt_array(doc, "profiles", "", 64, &profiles, err) ||
        opt_array(doc, "extenders", "", 16, &exts, err))
        goto done;
    out->pct = (int)pct;
    if (json_array_size(profiles) > 0 && read_profile(json_array_get(profiles, 0), out, err))
        goto done;
    if (json_array_size(exts) > 1) {
        gp_fail(err, "extenders: the simulator models one extender");
        goto done;
    }
    if (json_array_size(exts) == 1 && read_extender(json_array_get(exts, 0), out, err))
        goto done;
    rc = 0;
done:
    json_decref(docs);
    return rc;
}

int schedcfg_load(const char *path, schedcfg *out, gp_err *err)
{
    size_t len;
    char *text = gp_read_file(path, 1u << 20, &len, err);
    if (!text)
        return -1;
    gp_err e;
    int rc = schedcfg_parse(text, len, out, &e);
    if (rc)
        gp_fail(err, "%s: %s", path, e.msg);
    free(text);
    return rc;
}
