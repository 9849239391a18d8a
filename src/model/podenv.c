/* podenv.c -- the GPU variables a container reads, pointed at bind's per-container annotations. */
#include "model/podenv.h"

#include <stdio.h>
#include <string.h>

#include "model/annotations.h"

const podenv_list podenv_lists[PODENV_NLISTS] = {{"containers", false},
                                                 {"initContainers", true}};

/* The fieldPath a variable of this container must carry. */
static void field_path(char *buf, size_t len, bool init, size_t index, gp_ctr_var v)
{
    char key[GP_CTR_KEY_MAX];
    annotations_ctr_key(key, init, index, v);
    snprintf(buf, len, "metadata.annotations['%s']", key);
}

json_t *podenv_entry(bool init, size_t index, gp_ctr_var v)
{
    char fp[GP_CTR_KEY_MAX + 32];
    field_path(fp, sizeof fp, init, index, v);
    return json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", annotations_ctr_vars[v].env, "valueFrom",
                     "fieldRef", "apiVersion", "v1", "fieldPath", fp);
}

bool podenv_is_ours(const json_t *e, bool init, size_t index, gp_ctr_var v)
{
    char fp[GP_CTR_KEY_MAX + 32];
    field_path(fp, sizeof fp, init, index, v);
    const json_t *p = json_object_get(
        json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath");
    return json_is_string(p) && strcmp(json_string_value(p), fp) == 0;
}

const char *podenv_name(const json_t *e)
{
    const json_t *n = json_object_get(e, "name");
    return json_is_string(n) ? json_string_value(n) : "";
}

int podenv_check(const json_t *pod, const gp_resource_names *names, gp_err *err)
{
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < PODENV_NLISTS; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, podenv_lists[l].key), i, c) {
            gp_ctr_req one;
            gp_profile profile;
            gp_err e;
            if (podreq_container(pod, podenv_lists[l].init, i, names, &one, &profile, &e) != 1)
                continue;
            size_t k;
            const json_t *ev;
            bool ok = false;
            json_array_foreach(json_object_get(c, "env"), k, ev)
                ok |= strcmp(podenv_name(ev), annotations_ctr_vars[GP_CTR_VISIBLE].env) == 0 &&
                      podenv_is_ours(ev, podenv_lists[l].init, i, GP_CTR_VISIBLE);
            if (!ok)
                return gp_fail(err,
                               "%s[%zu] (%s) lacks the NVIDIA_VISIBLE_DEVICES the gpupack webhook "
                               "injects (created while the webhook was down?); delete and recreate "
                               "the pod",
                               podenv_lists[l].key, i, one.name);
        }
    }
    return 0;
}
