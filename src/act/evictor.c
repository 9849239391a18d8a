/* evictor.c -- preemption's API calls: Eviction and the nominated node. */
#include "act/evictor.h"

#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "act/requeue.h"
#include "lib/timefmt.h"
#include "model/heldrec.h"

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s)
        abort();
    return s;
}

gp_evict_outcome evictor_evict(gp_kube *k, const char *ns, const char *name, const char *uid,
                               double timeout_s, gp_err *err)
{
    json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                           "metadata", "name", name, "namespace", ns);
    if (!ev)
        abort();   /* names the store validated */
    if (uid && *uid)
        json_object_set_new(ev, "deleteOptions",
                            json_pack("{s:{s:s}}", "preconditions", "uid", uid));
    char *body = dump(ev);
    char *path = kube_pod_path(ns, name, "eviction");
    char what[600];
    snprintf(what, sizeof what, "evict pod %s/%s", ns, name);
    gp_kube_resp r;
    long st = kube_call(k, "POST", path, "application/json", body, timeout_s, NULL, what, &r, err);
    gp_evict_outcome out = st / 100 == 2                   ? GP_EVICT_DONE
                           /* gone, or the uid precondition failed: another pod */
                           : st == 404 || st == 409               ? GP_EVICT_GONE
                           : st == 429                            ? GP_EVICT_BLOCKED   /* a PDB */
                           : st == 0 || st >= 500 || st == 408    ? GP_EVICT_RETRY
                                                                  : GP_EVICT_REFUSED;
    kube_resp_free(&r);
    free(path);
    free(body);
    return out;
}

/* One patch of a pod (sub NULL, or "status"; a merge patch, or a strategic
 * one when strategic), body as text. Returns 0 done, 1 gone or another pod
 * (404, 409, 422), 2 refused (401, 403), -1 to retry; err says why. */
static int patch_text(gp_kube *k, const char *ns, const char *name, const char *sub,
                      bool strategic, const char *body, const char *what, double timeout_s,
                      gp_err *err)
{
    gp_err e;
    gp_patch_outcome o = kube_patch_pod(k, ns, name, sub,
                                        strategic ? "application/strategic-merge-patch+json"
                                                  : "application/merge-patch+json",
                                        body, timeout_s, NULL, &e);
    if (o != GP_PATCH_DONE)
        gp_fail(err, "%s pod %s/%s: %s", what, ns, name, e.msg);
    static const int rc[] = {[GP_PATCH_DONE] = 0, [GP_PATCH_GONE] = 1, [GP_PATCH_REFUSED] = 2,
                             [GP_PATCH_RETRY] = -1};
    return rc[o];
}

/* patch_text of a merge patch built here, with the uid as a precondition. */
static int patch_pod(gp_kube *k, const char *ns, const char *name, const char *uid,
                     const char *sub, json_t *patch, const char *what, double timeout_s,
                     gp_err *err)
{
    if (uid && *uid) {
        json_t *md = json_object_get(patch, "metadata");
        if (!md)
            json_object_set_new(patch, "metadata", md = json_object());
        json_object_set_new(md, "uid", json_string(uid));
    }
    char *body = dump(patch);
    int rc = patch_text(k, ns, name, sub, false, body, what, timeout_s, err);
    free(body);
    return rc;
}

int evictor_nominate(gp_kube *k, const char *ns, const char *name, const char *uid,
                     const char *node, const char *held, double timeout_s, gp_err *err)
{
    if (held) {
        char ts[32];
        gp_rfc3339_format(gp_now_ns(), ts, sizeof ts);
        json_t *patch = json_pack("{s:{s:s},s:{s:s,s:[{s:s,s:s,s:s,s:s,s:s}]}}", "metadata", "uid",
                                  uid ? uid : "", "status", "nominatedNodeName", node, "conditions",
                                  "type", GP_HELD_PLACES_CONDITION, "status", "True", "reason",
                                  "ConsolidationPlan", "message", held, "lastTransitionTime", ts);
        if (!patch)
            abort();
        if (!uid || !*uid)
            json_object_del(patch, "metadata");
        char *body = dump(patch);
        int rc = patch_text(k, ns, name, "status", true, body, "nominate", timeout_s, err);
        free(body);
        return rc;
    }
    json_t *patch = json_pack("{s:{s:s}}", "status", "nominatedNodeName", node);
    if (!patch)
        abort();
    return patch_pod(k, ns, name, uid, "status", patch, "nominate", timeout_s, err);
}

int evictor_nudge(gp_kube *k, const char *ns, const char *name, const char *uid, double timeout_s,
                  gp_err *err)
{
    char *text = requeue_patch_body(uid, gp_now_ns());   /* the requeue nudge's own patch */
    int rc = patch_text(k, ns, name, NULL, false, text, "touch", timeout_s, err);
    free(text);
    return rc;
}

int evictor_nudge_status(gp_kube *k, const char *ns, const char *name, const char *uid,
                         const char *msg, bool first, double timeout_s, gp_err *err)
{
    char *text = requeue_condition_body(uid, GP_HELD_CONDITION, "VictimsGone", msg, first,
                                        gp_now_ns());
    int rc = patch_text(k, ns, name, "status", true, text, "nudge", timeout_s, err);
    free(text);
    return rc;
}
