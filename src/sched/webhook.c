/* webhook.c -- the mutating admission webhook: AdmissionReview v1 -> JSONPatch of container env. */
#include "sched/webhook.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base64.h"
#include "lib/jsonpath.h"
#include "model/annotations.h"
#include "model/podenv.h"

#define REVIEW_API "admission.k8s.io/v1"

static void warn(json_t *warnings, const char *fmt, ...) GP_PRINTF(2, 3);

static void warn(json_t *warnings, const char *fmt, ...)
{
    if (!warnings)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(warnings, json_string(msg));
}

static void add_op(json_t *ops, const char *op, const char *path, json_t *value)
{
    json_array_append_new(ops, json_pack("{s:s,s:s,s:o}", "op", op, "path", path, "value", value));
}

/* The ops for one container that asks. NVIDIA_VISIBLE_DEVICES is always
 * gpupack's (a value in the spec would bypass the packing); the limits the
 * pod sets itself are kept (they only tighten or loosen what the container
 * does to itself) and reported. */
static void inject(json_t *ops, const json_t *c, const char *list, bool init, size_t index,
                   const char *name, json_t *warnings)
{
    char base[64], path[96];
    snprintf(base, sizeof base, "/spec/%s/%zu/env", list, index);
    const json_t *env = json_object_get(c, "env");
    if (!env || json_is_null(env)) {
        json_t *arr = json_array();
        for (int v = 0; v < GP_CTR_NVARS; v++)
            json_array_append_new(arr, podenv_entry(init, index, (gp_ctr_var)v));
        add_op(ops, "add", base, arr);
        return;
    }
    if (!json_is_array(env)) {
        warn(warnings, "gpupack: %s[%zu] (%s): env is not a list; no GPU variables injected",
             list, index, name);
        return;
    }
    json_t *appends = json_array();
    for (int v = 0; v < GP_CTR_NVARS; v++) {
        const char *var = annotations_ctr_vars[v].env;
        bool found = false;
        size_t k;
        const json_t *e;
        json_array_foreach(env, k, e) {
            if (strcmp(podenv_name(e), var) != 0)
                continue;
            found = true;
            if (podenv_is_ours(e, init, index, (gp_ctr_var)v))
                continue;
            if (v == GP_CTR_VISIBLE) {
                snprintf(path, sizeof path, "%s/%zu", base, k);
                add_op(ops, "replace", path, podenv_entry(init, index, (gp_ctr_var)v));
                warn(warnings, "gpupack: %s[%zu] (%s): its own %s is replaced by the GPUs gpupack assigns",
                     list, index, name, var);
            } else {
                warn(warnings, "gpupack: %s[%zu] (%s): keeps its own %s", list, index, name, var);
            }
        }
        if (!found)
            json_array_append_new(appends, podenv_entry(init, index, (gp_ctr_var)v));
    }
    snprintf(path, sizeof path, "%s/-", base);
    size_t k;
    json_t *e;
    json_array_foreach(appends, k, e)
        add_op(ops, "add", path, json_incref(e));
    json_decref(appends);
}

json_t *webhook_patch(const json_t *pod, const gp_resource_names *names, json_t *warnings)
{
    json_t *ops = json_array();
    gp_pod_req req;
    gp_err err;
    if (podreq_decode(pod, names, &req, &err)) {
        warn(warnings, "gpupack: no GPU variables injected: %.400s", err.msg);
        return ops;
    }
    if (req.nctrs == 0)
        return ops;
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < GP_ARRAY_LEN(podenv_lists); l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, podenv_lists[l].key), i, c) {
            gp_ctr_req one;
            gp_profile profile;
            if (podreq_container(pod, podenv_lists[l].init, i, names, &one, &profile, &err) == 1)
                inject(ops, c, podenv_lists[l].key, podenv_lists[l].init, i, one.name, warnings);
        }
    }
    return ops;
}

/* --------------------------------------------------- AdmissionReview -- */

static char *review(const char *uid, json_t *response)
{
    json_object_set_new(response, "uid", json_string(uid));
    json_t *r = json_pack("{s:s,s:s,s:o}", "apiVersion", REVIEW_API, "kind", "AdmissionReview",
                          "response", response);
    char *s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(r);
    if (!s)
        abort();
    return s;
}

static int bad(char **out, const char *uid, const char *msg)
{
    /* jansson takes UTF-8 only: msg may quote the request's bytes or be cut mid-character */
    char text[300];
    gp_strlcpy(text, msg, sizeof text);
    json_t *resp = json_pack("{s:b,s:{s:i,s:s,s:s}}", "allowed", 0, "status", "code", 400,
                             "reason", "BadRequest", "message", gp_utf8_scrub(text));
    *out = review(uid, resp);
    return 400;
}


int webhook_review(const char *body, size_t len, const gp_resource_names *names, char **out)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    int status;
    char msg[300];
    if (!doc) {
        snprintf(msg, sizeof msg, "not JSON: %s at line %d column %d", je.text, je.line,
                 je.column);
        return bad(out, "", msg);
    }
    const json_t *req = json_object_get(doc, "request");
    const char *api = gp_json_str_at(doc, "apiVersion", NULL);
    const char *kind = gp_json_str_at(doc, "kind", NULL);
    const char *uid = gp_json_str_at(req, "uid", NULL);
    if (!json_is_object(doc) || !kind || strcmp(kind, "AdmissionReview") != 0) {
        status = bad(out, "", "expected an object of kind AdmissionReview");
    } else if (!api || strcmp(api, REVIEW_API) != 0) {
        snprintf(msg, sizeof msg, "apiVersion %.60s is not served; register the webhook with "
                 "admissionReviewVersions: [v1]", api ? api : "(missing)");
        status = bad(out, "", msg);
    } else if (!json_is_object(req) || !uid || !*uid || strlen(uid) > 128) {
        status = bad(out, "", "request.uid must be a non-empty string (of at most 128 bytes)");
    } else {
        const json_t *rk = json_object_get(req, "kind");
        const char *group = gp_json_str_at(rk, "group", NULL);
        const char *rkind = gp_json_str_at(rk, "kind", NULL);
        const char *op = gp_json_str_at(req, "operation", NULL);
        const char *sub = gp_json_str_at(req, "subResource", NULL);
        const json_t *pod = json_object_get(req, "object");
        json_t *resp = json_pack("{s:b}", "allowed", 1);
        if (!json_is_object(rk) || !rkind || !op) {
            json_decref(resp);
            status = bad(out, uid, "request.kind and request.operation are required");
        } else if ((group && *group) || strcmp(rkind, "Pod") != 0 || strcmp(op, "CREATE") != 0 ||
                   (sub && *sub)) {
            *out = review(uid, resp);   /* not ours: allowed untouched */
            status = 200;
        } else if (!json_is_object(pod)) {
            json_decref(resp);
            status = bad(out, uid, "request.object must be the Pod being created");
        } else {
            json_t *warnings = json_array();
            json_t *ops = webhook_patch(pod, names, warnings);
            if (json_array_size(ops)) {
                char *p = json_dumps(ops, JSON_COMPACT | JSON_PRESERVE_ORDER);
                if (!p)
                    abort();
                json_object_set_new(resp, "patchType", json_string("JSONPatch"));
                char *b64 = gp_base64_encode(p, strlen(p));
                json_object_set_new(resp, "patch", json_string(b64));
                free(b64);
                free(p);
            }
            if (json_array_size(warnings))
                json_object_set(resp, "warnings", warnings);
            json_decref(warnings);
            json_decref(ops);
            *out = review(uid, resp);
            status = 200;
        }
    }
    json_decref(doc);
    return status;
}
