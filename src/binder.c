/* binder.c -- bind in live mode: PATCH the pod's annotations, then POST its Binding. */
#include "binder.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static char *pod_path(const gp_bind_call *call, const char *suffix)
{
    char *ns = kube_escape(call->ns), *name = kube_escape(call->name);
    char *p = xasprintf("/api/v1/namespaces/%s/pods/%s%s", ns, name, suffix);
    free(ns);
    free(name);
    return p;
}

/* Is the pod bound to `node` right now? (for a 409 on the Binding) */
static bool bound_to(gp_kube *k, const gp_bind_call *call, double timeout_s)
{
    char *path = pod_path(call, "");
    gp_kube_resp resp;
    gp_err err;
    bool yes = false;
    if (kube_request(k, "GET", path, NULL, NULL, timeout_s, NULL, &resp, &err) == 0 &&
        resp.status == 200) {
        json_t *pod = json_loadb(resp.body.data, resp.body.len, 0, NULL);
        const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        yes = node && strcmp(node, call->node) == 0 &&
              (!call->uid || !*call->uid || (uid && strcmp(uid, call->uid) == 0));
        json_decref(pod);
    }
    kube_resp_free(&resp);
    free(path);
    return yes;
}

int binder_bind(gp_kube *k, const gp_bind_call *call, double timeout_s, gp_err *err)
{
    int rc = -1;
    char *patch_path = pod_path(call, "");
    char *bind_path = pod_path(call, "/binding");
    json_t *patch = json_pack("{s:{s:O}}", "metadata", "annotations", call->annotations);
    json_t *binding = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                                "Binding", "metadata", "name", call->name, "namespace", call->ns,
                                "target", "apiVersion", "v1", "kind", "Node", "name", call->node);
    char *patch_body = NULL, *bind_body = NULL;
    gp_kube_resp resp = {0};
    char msg[300];
    gp_err e;
    if (!patch || !binding) {
        gp_fail(err, "bind %s/%s: cannot build the request bodies", call->ns, call->name);
        goto out;
    }
    if (call->uid && *call->uid)
        json_object_set_new(json_object_get(binding, "metadata"), "uid", json_string(call->uid));
    patch_body = json_dumps(patch, JSON_COMPACT);
    bind_body = json_dumps(binding, JSON_COMPACT);

    /* step 1: the annotations (none for a pod without GPUs: a plain Binding) */
    if (json_object_size(call->annotations) == 0)
        goto binding;
    if (kube_request(k, "PATCH", patch_path, "application/merge-patch+json", patch_body, timeout_s,
                     NULL, &resp, &e) < 0) {
        gp_fail(err, "PATCH annotations of pod %s/%s: %s", call->ns, call->name, e.msg);
        goto out;
    }
    if (resp.status != 200) {
        kube_status_message(resp.body.data, resp.body.len, msg, sizeof msg);
        gp_fail(err, "PATCH annotations of pod %s/%s: HTTP %ld: %s", call->ns, call->name,
                resp.status, msg);
        goto out;
    }
    kube_resp_free(&resp);

binding:
    /* step 2: the Binding */
    if (kube_request(k, "POST", bind_path, "application/json", bind_body, timeout_s, NULL, &resp,
                     &e) < 0) {
        gp_fail(err, "POST binding of pod %s/%s to node %s: %s", call->ns, call->name, call->node,
                e.msg);
        goto out;
    }
    if (resp.status == 409 && bound_to(k, call, timeout_s)) {
        LOG_INFO("bind %s/%s: already bound to %s (a retried bind)", call->ns, call->name, call->node);
    } else if (resp.status != 201 && resp.status != 200) {
        kube_status_message(resp.body.data, resp.body.len, msg, sizeof msg);
        gp_fail(err, "POST binding of pod %s/%s to node %s: HTTP %ld: %s", call->ns, call->name,
                call->node, resp.status, msg);
        goto out;
    }
    rc = 0;
out:
    kube_resp_free(&resp);
    free(patch_body);
    free(bind_body);
    json_decref(patch);
    json_decref(binding);
    free(patch_path);
    free(bind_path);
    return rc;
}
