/* leader_label.c -- label the leader's Pod so that the Service routes to it. */
#include "ha/leader_label.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"

struct gp_leader_label {
    gp_kube *k;
    char *ns, *name;
    double timeout_s;
    int synced;            /* -1 unknown, 0 unlabelled, 1 labelled */
};

gp_leader_label *leader_label_new(gp_kube *k, const char *ns, const char *name, double timeout_s)
{
    gp_leader_label *l = xcalloc(1, sizeof *l);
    l->k = k;
    l->ns = xstrdup(ns);
    l->name = xstrdup(name);
    l->timeout_s = timeout_s;
    l->synced = -1;
    return l;
}

void leader_label_free(gp_leader_label *l)
{
    if (!l)
        return;
    free(l->ns);
    free(l->name);
    free(l);
}

/* Sets (on) or removes the label of Pod ns/name: a merge PATCH. 404 counts
 * as done when removing (the Pod is gone). */
static int patch_label(gp_leader_label *l, const char *name, bool on)
{
    char *path = kube_pod_path(l->ns, name, NULL);
    const char *body = on ? "{\"metadata\":{\"labels\":{\"" GP_LEADER_LABEL "\":\"true\"}}}"
                          : "{\"metadata\":{\"labels\":{\"" GP_LEADER_LABEL "\":null}}}";
    char what[600];
    snprintf(what, sizeof what, "leader label: PATCH pod %s/%s", l->ns, name);
    gp_kube_resp resp;
    gp_err err;
    long st = kube_call(l->k, "PATCH", path, "application/merge-patch+json", body, l->timeout_s,
                        NULL, what, &resp, &err);
    int rc = st / 100 == 2 || (!on && st == 404) ? 0 : -1;
    if (rc)
        LOG_WARN("%s", err.msg);
    kube_resp_free(&resp);
    free(path);
    return rc;
}

/* Removes the label from every other Pod of the namespace that has it. */
static int unlabel_others(gp_leader_label *l)
{
    char *ens = kube_escape(l->ns);
    char *path = xasprintf("/api/v1/namespaces/%s/pods?labelSelector=%s%%3Dtrue", ens,
                           "gpupack.io%2Fleader");
    gp_kube_resp resp;
    gp_err err;
    int rc = -1;
    json_t *list = NULL;
    if (kube_call(l->k, "GET", path, NULL, NULL, l->timeout_s, NULL,
                  "leader label: listing labelled pods", &resp, &err) / 100 != 2) {
        LOG_WARN("%s", err.msg);
        goto out;
    }
    if (!(list = json_loadb(resp.body.data, resp.body.len, 0, NULL))) {
        LOG_WARN("leader label: listing labelled pods: the answer is not JSON");
        goto out;
    }
    rc = 0;
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(list, "items"), i, pod) {
        const char *n = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        if (n && strcmp(n, l->name) != 0) {
            LOG_INFO("leader label: removing %s from pod %s/%s (no longer the leader)",
                     GP_LEADER_LABEL, l->ns, n);
            if (patch_label(l, n, false))
                rc = -1;
        }
    }
out:
    json_decref(list);
    kube_resp_free(&resp);
    free(path);
    free(ens);
    return rc;
}

void leader_label_sync(gp_leader_label *l, bool leading)
{
    if (l->synced == (int)leading)
        return;
    if (leading) {
        if (unlabel_others(l) == 0 && patch_label(l, l->name, true) == 0) {
            l->synced = 1;
            LOG_INFO("leader label: pod %s/%s is labelled %s=true", l->ns, l->name, GP_LEADER_LABEL);
        }
    } else if (patch_label(l, l->name, false) == 0) {
        l->synced = 0;
    }
}
