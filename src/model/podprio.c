/* podprio.c -- what preemption reads of a Pod (priority, times, nomination, labels). */
#include "model/podprio.h"

#include <string.h>

#include "lib/jsonpath.h"
#include "lib/timefmt.h"
#include "lib/util.h"


static int64_t time_at(const json_t *o, const char *a, const char *b)
{
    int64_t ns;
    return gp_rfc3339_parse(json_string_value(gp_json_at(o, a, b)), &ns) == 0 ? ns : 0;
}

/* Just spec.priority (0 when absent or malformed). */
static int32_t priority_of(const json_t *pod)
{
    const json_t *p = gp_json_at(pod, "spec", "priority");
    if (!json_is_integer(p))
        return 0;
    json_int_t v = json_integer_value(p);
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

void podprio_decode(const json_t *pod, gp_pod_prio *out)
{
    memset(out, 0, sizeof *out);
    out->priority = priority_of(pod);
    const char *pp = json_string_value(gp_json_at(pod, "spec", "preemptionPolicy"));
    out->never = pp && strcmp(pp, "Never") == 0;
    out->start_ns = time_at(pod, "status", "startTime");
    if (!out->start_ns)
        out->start_ns = time_at(pod, "metadata", "creationTimestamp");
    out->deletion_ns = time_at(pod, "metadata", "deletionTimestamp");
    /* a pod whose deletionTimestamp cannot be read is still being deleted */
    if (!out->deletion_ns && gp_json_at(pod, "metadata", "deletionTimestamp"))
        out->deletion_ns = 1;
    const json_t *g = gp_json_at(pod, "metadata", "deletionGracePeriodSeconds");
    if (!json_is_integer(g))
        g = gp_json_at(pod, "spec", "terminationGracePeriodSeconds");
    out->grace_s = json_is_integer(g) && json_integer_value(g) >= 0 ? json_integer_value(g) : -1;
    const char *nn = json_string_value(gp_json_at(pod, "status", "nominatedNodeName"));
    if (nn && strlen(nn) < sizeof out->nominated)
        gp_strlcpy(out->nominated, nn, sizeof out->nominated);
    podprio_owner(pod, &out->owner);
}

void podprio_owner(const json_t *pod, gp_pod_owner *out)
{
    memset(out, 0, sizeof *out);
    size_t i;
    const json_t *r;
    json_array_foreach(gp_json_at(pod, "metadata", "ownerReferences"), i, r) {
        if (!json_is_true(json_object_get(r, "controller")))
            continue;
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *uid = json_string_value(json_object_get(r, "uid"));
        if (kind && uid && *uid && strlen(kind) < sizeof out->kind &&
            strlen(uid) < sizeof out->uid) {
            gp_strlcpy(out->kind, kind, sizeof out->kind);
            gp_strlcpy(out->uid, uid, sizeof out->uid);
        }
        return;   /* one controller at most */
    }
}

bool podprio_labels(const json_t *pod, char *out, size_t outlen)
{
    size_t off = 0;
    bool all = true;
    const char *k;
    const json_t *v;
    if (outlen < 1)
        return false;
    json_object_foreach((json_t *)gp_json_at(pod, "metadata", "labels"), k, v) {
        const char *s = json_string_value(v);
        if (!s)
            continue;
        size_t kl = strlen(k) + 1, vl = strlen(s) + 1;
        if (off + kl + vl + 1 > outlen) {
            all = false;
            continue;
        }
        memcpy(out + off, k, kl);
        memcpy(out + off + kl, s, vl);
        off += kl + vl;
    }
    out[off] = '\0';
    return all;
}

const char *podprio_label(const char *labels, const char *key)
{
    for (const char *p = labels; p && *p;) {
        const char *val = p + strlen(p) + 1;
        if (strcmp(p, key) == 0)
            return val;
        p = val + strlen(val) + 1;
    }
    return NULL;
}

int podprio_importance_cmp(int32_t prio_a, int64_t start_a, int32_t prio_b, int64_t start_b)
{
    if (prio_a != prio_b)
        return prio_a > prio_b ? -1 : 1;
    /* unknown start counts as the latest (the least running time lost) */
    int64_t a = start_a ? start_a : INT64_MAX, b = start_b ? start_b : INT64_MAX;
    return a < b ? -1 : a > b ? 1 : 0;
}
