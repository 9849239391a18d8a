/* pod.c -- a Pod decoded once per request: identity, policy, labels, priority. */
#include "model/pod.h"

#include <string.h>

#define ANN_POLICY "gpupack.io/policy"
#define ANN_GPU_MODEL "gpupack.io/gpu-model"

static int copy_str(char *dst, size_t len, const json_t *v, const char *what, gp_err *err)
{
    if (!v)
        return 0;
    if (!json_is_string(v))
        return gp_fail(err, "%s: must be a string", what);
    if (strlen(json_string_value(v)) >= len)
        return gp_fail(err, "%s: longer than %zu characters", what, len - 1);
    gp_strlcpy(dst, json_string_value(v), len);
    return 0;
}

int pod_decode(const json_t *pod, gp_pod *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    out->json = pod;
    if (!json_is_object(pod))
        return gp_fail(err, "Pod: must be an object");
    const json_t *md = json_object_get(pod, "metadata");
    if (!json_is_object(md))
        return gp_fail(err, "Pod.metadata: missing or not an object");
    if (copy_str(out->name, sizeof out->name, json_object_get(md, "name"), "Pod.metadata.name", err) ||
        copy_str(out->ns, sizeof out->ns, json_object_get(md, "namespace"),
                 "Pod.metadata.namespace", err) ||
        copy_str(out->uid, sizeof out->uid, json_object_get(md, "uid"), "Pod.metadata.uid", err))
        return -1;
    if (!out->ns[0])
        gp_strlcpy(out->ns, "default", sizeof out->ns);
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    if (rv && strlen(rv) < sizeof out->rv)
        gp_strlcpy(out->rv, rv, sizeof out->rv);
    const json_t *labels = json_object_get(md, "labels");
    out->labels = json_is_object(labels) ? labels : NULL;
    podprio_decode(pod, &out->prio);
    const json_t *spec = json_object_get(pod, "spec");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    if (node && strlen(node) < sizeof out->node)
        gp_strlcpy(out->node, node, sizeof out->node);
    out->nclaims = json_array_size(json_object_get(spec, "resourceClaims"));
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    out->finished = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    /* an unbound pod's only: a LIST keeps the condition of those alone (k8s_obs_trim_pod) */
    const char *st = out->node[0] ? NULL
                                  : json_string_value(json_object_get(pod_condition(pod, "PodScheduled"),
                                                                      "status"));
    out->sched_false = st && strcmp(st, "False") == 0;
    out->identified = true;
    /* last: a malformed annotation of gpupack's leaves everything above decoded */
    const json_t *ann = json_object_get(md, "annotations");
    if (ann && !json_is_object(ann))
        return gp_fail(err, "Pod.metadata.annotations: must be an object");
    out->annotations = ann;
    if (copy_str(out->models, sizeof out->models, json_object_get(ann, ANN_GPU_MODEL),
                 "annotation " ANN_GPU_MODEL, err) ||
        copy_str(out->policy, sizeof out->policy, json_object_get(ann, ANN_POLICY),
                 "annotation " ANN_POLICY, err))
        return -1;
    return 0;
}

const json_t *pod_condition(const json_t *pod, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

const char *pod_uid(const json_t *pod)
{
    const char *u = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
    return u && *u && strlen(u) < GP_UID_MAX ? u : NULL;
}
