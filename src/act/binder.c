/* binder.c -- bind in live mode: one POST of a Binding that carries the pod's annotations. */
#include "act/binder.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "lib/jsonw.h"
#include "lib/log.h"

/* Does the pod carry call->assign (any assignment is fine for a plain Binding)? */
static bool carries_ours(const json_t *annotations, const gp_bind_call *call)
{
    if (!call->assign)
        return true;
    gp_assignment *a = xmalloc(sizeof *a);   /* ~7 KiB: bind threads have small stacks */
    gp_err err;
    /* the unit only matters for aliyun-only annotations, which gpupack never writes alone */
    bool same = annotations_decode(annotations, call->node, 1024, a, &err) == 1 &&
                gp_assignment_equal(a, call->assign);
    free(a);
    return same;
}

/* What a pod object says about our Binding. When it is still our pod (same
 * uid), unbound and not being deleted, *fresh_rv gets its resourceVersion
 * (a Binding may be tried again on that state); else it is left "". */
static gp_bind_outcome judge_pod(const json_t *pod, const gp_bind_call *call, char *fresh_rv,
                                 size_t rvlen, gp_err *err)
{
    const json_t *md = json_object_get(pod, "metadata");
    const char *uid = json_string_value(json_object_get(md, "uid"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    fresh_rv[0] = '\0';
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (call->uid && *call->uid && (!uid || strcmp(uid, call->uid) != 0)) {
        gp_fail(err, "pod %s/%s now has uid %s, not %s", call->ns, call->name, uid ? uid : "(none)",
                call->uid);
        return GP_BIND_REFUSED;
    }
    if (!node || !*node) {
        if (json_object_get(md, "deletionTimestamp")) {
            gp_fail(err, "pod %s/%s is being deleted", call->ns, call->name);
        } else {
            gp_fail(err, "pod %s/%s is not bound", call->ns, call->name);
            if (rv && strlen(rv) < rvlen)
                gp_strlcpy(fresh_rv, rv, rvlen);
        }
        return GP_BIND_REFUSED;
    }
    if (strcmp(node, call->node) != 0) {
        gp_fail(err, "pod %s/%s is bound to node %s", call->ns, call->name, node);
        return GP_BIND_REFUSED;
    }
    if (!carries_ours(json_object_get(md, "annotations"), call)) {
        gp_fail(err, "pod %s/%s is bound to node %s with another GPU assignment", call->ns,
                call->name, node);
        return GP_BIND_REFUSED;
    }
    return GP_BIND_BOUND;
}

static gp_bind_outcome check_pod(gp_kube *k, const gp_bind_call *call, double timeout_s,
                                 char *fresh_rv, size_t rvlen, gp_err *err)
{
    gp_bind_outcome out = GP_BIND_UNKNOWN;
    fresh_rv[0] = '\0';
    char *path = kube_pod_path(call->ns, call->name, NULL);
    char what[600];
    snprintf(what, sizeof what, "GET pod %s/%s", call->ns, call->name);
    gp_kube_resp resp;
    long st = kube_call(k, "GET", path, NULL, NULL, timeout_s, NULL, what, &resp, err);
    if (st == 404) {
        gp_fail(err, "pod %s/%s is gone", call->ns, call->name);
        out = GP_BIND_REFUSED;
    } else if (st / 100 == 2) {
        json_t *pod = json_loadb(resp.body.data, resp.body.len, 0, NULL);
        if (json_is_object(pod))
            out = judge_pod(pod, call, fresh_rv, rvlen, err);
        else
            gp_fail(err, "GET pod %s/%s: the answer is not a JSON object", call->ns, call->name);
        json_decref(pod);
    }   /* else UNKNOWN: no answer, or one that says nothing of the pod (err says it) */
    kube_resp_free(&resp);
    free(path);
    return out;
}

gp_bind_outcome binder_check(gp_kube *k, const gp_bind_call *call, double timeout_s, gp_err *err)
{
    char rv[64];
    return check_pod(k, call, timeout_s, rv, sizeof rv, err);
}

#define BINDING_BODY_MAX (1u << 20)   /* the API server takes up to 3 MiB; ours are < 64 KiB */

static char *binding_body(const gp_bind_call *call, const char *rv)
{
    /* written as text: one Binding per pod, and building it as jansson
     * values cost as much as writing it (the strings are the extender's,
     * already valid UTF-8; the annotations are gpupack's own, bounded) */
    gp_buf b;
    gp_buf_init(&b, BINDING_BODY_MAX);
    jsonw_raw(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":");
    jsonw_str(&b, call->name);
    jsonw_raw(&b, ",\"namespace\":");
    jsonw_str(&b, call->ns);
    /* both preconditions: the uid is checked where the server honours it
     * (1.26.4+, 1.27+), and wiped harmlessly where it does not; the
     * resourceVersion is checked everywhere (a re-created pod has another) */
    if (call->uid && *call->uid) {
        jsonw_raw(&b, ",\"uid\":");
        jsonw_str(&b, call->uid);
    }
    if (rv && *rv) {
        jsonw_raw(&b, ",\"resourceVersion\":");
        jsonw_str(&b, rv);
    }
    if (call->annotations) {
        jsonw_raw(&b, ",\"annotations\":");
        jsonw_value(&b, call->annotations);
    }
    jsonw_raw(&b, "},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":");
    jsonw_str(&b, call->node);
    jsonw_raw(&b, "}}");
    if (gp_buf_failed(&b) || gp_buf_append(&b, "", 1)) {   /* NUL-terminated for the client */
        gp_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* One POST of the Binding with `rv` as precondition. Returns the outcome;
 * for a 409 not settled as ours, *fresh_rv tells whether one more try on the
 * pod's current state makes sense. */
static gp_bind_outcome post_binding(gp_kube *k, const gp_bind_call *call, const char *rv,
                                    double timeout_s, char *fresh_rv, size_t rvlen, gp_err *err)
{
    gp_bind_outcome out;
    char *path = kube_pod_path(call->ns, call->name, "binding");
    char *body = binding_body(call, rv);
    if (!body) {
        gp_fail(err, "binding of pod %s/%s to node %s not sent: its body passed %u bytes", call->ns,
                call->name, call->node, BINDING_BODY_MAX);
        free(path);
        fresh_rv[0] = '\0';
        return GP_BIND_REFUSED;
    }
    char what[900];
    snprintf(what, sizeof what, "POST binding of pod %s/%s to node %s", call->ns, call->name,
             call->node);
    gp_kube_resp resp;
    gp_err e;
    fresh_rv[0] = '\0';
    long st = kube_call(k, "POST", path, "application/json", body, timeout_s, NULL, what, &resp, &e);
    if (st / 100 == 2) {   /* 201 Created, as kube-apiserver answers */
        out = GP_BIND_BOUND;
        goto done;
    }
    gp_fail(err, "%s", e.msg);
    if (st == 0 || st >= 500) {
        out = GP_BIND_UNKNOWN;
    } else if (st == 409) {
        /* refused this time; an earlier attempt of ours may have landed */
        gp_err why;
        out = check_pod(k, call, timeout_s, fresh_rv, rvlen, &why);
        if (out == GP_BIND_BOUND)
            LOG_INFO("bind %s/%s: already bound to %s with these GPUs (a retried bind)", call->ns,
                     call->name, call->node);
        else if (out == GP_BIND_UNKNOWN)
            gp_fail(err, "%.900s; then %.500s", e.msg, why.msg);
        else
            gp_fail(err, "%.900s (%.500s)", e.msg, why.msg);
        /* the same state again: no point in a second try */
        if (rv && strcmp(fresh_rv, rv) == 0)
            fresh_rv[0] = '\0';
    } else {
        out = GP_BIND_REFUSED;
    }
done:
    kube_resp_free(&resp);
    free(body);
    free(path);
    return out;
}

gp_bind_outcome binder_bind(gp_kube *k, const gp_bind_call *call, bool server_checks_uid,
                            double timeout_s, gp_err *err)
{
    char fresh[64], rv[64];
    gp_strlcpy(rv, call->rv ? call->rv : "", sizeof rv);
    if (!rv[0] && !server_checks_uid) {
        /* a Binding without a resourceVersion on a server that ignores its uid
         * would land on whatever pod has the name now: read the pod first, and
         * bind it only if it is still the one kube-scheduler meant */
        gp_err why;
        gp_bind_outcome o = check_pod(k, call, timeout_s, fresh, sizeof fresh, &why);
        if (o == GP_BIND_BOUND) {
            LOG_INFO("bind %s/%s: already bound to %s with these GPUs (a retried bind)", call->ns,
                     call->name, call->node);
            return o;
        }
        if (!fresh[0]) {
            /* nothing was sent: gone, re-created, bound elsewhere, or the GET failed */
            gp_fail(err, "binding of pod %s/%s to node %s not sent (the API server ignores the "
                         "Binding's uid, and the pod's resourceVersion is unknown): %s",
                    call->ns, call->name, call->node, why.msg);
            return GP_BIND_REFUSED;
        }
        gp_strlcpy(rv, fresh, sizeof rv);
    }
    gp_bind_outcome out = post_binding(k, call, rv[0] ? rv : NULL, timeout_s, fresh, sizeof fresh, err);
    if (out == GP_BIND_REFUSED && fresh[0]) {
        /* the pod changed since bind decided (a status or label update), it is
         * still the same pod (uid), unbound: bind it as it is now, once */
        LOG_DEBUG("bind %s/%s: pod changed (resourceVersion %s -> %s), binding again", call->ns,
                  call->name, rv[0] ? rv : "-", fresh);
        gp_strlcpy(rv, fresh, sizeof rv);
        out = post_binding(k, call, rv, timeout_s, fresh, sizeof fresh, err);
    }
    return out;
}
