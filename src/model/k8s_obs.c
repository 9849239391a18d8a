/* k8s_obs.c -- Kubernetes Pod / Node JSON -> what the store observes. */
#include "model/k8s_obs.h"

#include <ctype.h>
#include <string.h>

#include "lib/extargs.h"
#include "lib/jsonpath.h"
#include "model/annotations.h"
#include "model/formats.h"
#include "model/heldrec.h"
#include "model/pod.h"
#include "model/podreq.h"


/* "gpu" anywhere (gpupack.io/gpu-mem, nvidia.com/gpumem, volcano.sh/vgpu-number
 * ...), or TKE's "vcuda" (tencent.com/vcuda-core). */
static bool mentions_gpu(const char *k)
{
    for (const char *p = k; *p; p++)
        if ((tolower((unsigned char)p[0]) == 'g' && tolower((unsigned char)p[1]) == 'p' &&
             tolower((unsigned char)p[2]) == 'u') ||
            strncmp(p, "vcuda", 5) == 0)
            return true;
    return false;
}

static bool list_wants_gpu(const json_t *ctrs)
{
    size_t i;
    const json_t *c;
    json_array_foreach(ctrs, i, c) {
        const json_t *res = json_object_get(c, "resources");
        static const char *const kinds[] = {"limits", "requests"};
        for (size_t k = 0; k < GP_ARRAY_LEN(kinds); k++) {
            const char *key;
            json_t *v;
            json_object_foreach((json_t *)json_object_get(res, kinds[k]), key, v) {
                if (mentions_gpu(key))
                    return true;
            }
        }
    }
    return false;
}

int k8s_obs_pod(const json_t *pod, bool deleted, int64_t aliyun_unit_mib, gp_pod_view *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const gp_pod *p = &out->pod;
    gp_err perr;
    /* a malformed annotation of gpupack's (identified) does not hide the pod */
    if (pod_decode(pod, &out->pod, &perr) < 0 && !p->identified)
        return gp_fail(err, "pod object: %s", perr.msg);
    if (!p->uid[0] || !p->name[0])
        return gp_fail(err, "pod object without metadata.name/uid");
    gp_strlcpy(out->uid, p->uid, sizeof out->uid);
    gp_strlcpy(out->ns, p->ns, sizeof out->ns);
    gp_strlcpy(out->name, p->name, sizeof out->name);
    gp_strlcpy(out->node, p->node, sizeof out->node);
    bool terminal = deleted || p->finished;
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *ann = json_object_get(md, "annotations");
    const char *pol = gp_json_str_at(ann, GP_ANN_POLICY_USED, NULL);
    gp_strlcpy(out->policy, pol ? pol : "", sizeof out->policy);

    out->obs.uid = out->uid;
    out->obs.ns = out->ns;
    out->obs.name = out->name;
    out->obs.node_name = out->node;
    out->obs.terminal = terminal;
    out->obs.policy = out->policy[0] ? out->policy : NULL;
    podreq_host(pod, &out->obs.cpu_milli, &out->obs.mem_mib);
    if (json_is_object(ann)) {
        gp_err aerr;
        int rc = annotations_decode(ann, out->node, aliyun_unit_mib, &out->assign, &aerr);
        if (rc == 1) {
            out->obs.assign = &out->assign;
            out->obs.nrefs = annotations_gpu_refs(ann, out->refs, GP_MAX_GPUS_PER_NODE);
            out->obs.refs = out->refs;
        }
        else if (rc < 0)
            gp_strlcpy(out->assign_err, aerr.msg, sizeof out->assign_err);
    }
    const json_t *spec = json_object_get(pod, "spec");
    out->wants_gpu = list_wants_gpu(json_object_get(spec, "containers")) ||
                     list_wants_gpu(json_object_get(spec, "initContainers")) ||
                     json_object_get(ann, "gpu-fraction") || json_object_get(ann, "gpu-memory");
    out->pending = !terminal && out->node[0] == '\0' && p->prio.deletion_ns == 0;
    out->parked = out->pending && p->sched_false;
    const char *reason = out->parked ? gp_json_str_at(pod_condition(pod, "PodScheduled"), "reason", NULL)
                                     : NULL;
    out->sched_error = reason && strcmp(reason, "SchedulerError") == 0;
    return 0;
}

int k8s_obs_node(const json_t *node, int64_t aliyun_unit_mib, char name[GP_NAME_MAX],
                 gp_inventory *inv, gp_err *err)
{
    memset(inv, 0, sizeof *inv);
    name[0] = '\0';
    const char *n = inventory_node_name(node);
    if (!n || !*n)
        return gp_fail(err, "node object without metadata.name");
    if (strlen(n) >= GP_NAME_MAX)
        return gp_fail(err, "node name too long");
    gp_strlcpy(name, n, GP_NAME_MAX);
    if (inventory_decode(node, aliyun_unit_mib, inv, err) < 0) {
        memset(inv, 0, sizeof *inv);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */

/* Every member of a Pod that gpupack's decoders read: podreq (requests,
 * sidecars, the annotations of gpupack and the other formats), policy
 * selection (namespace, labels), k8s_obs_pod (node, phase, deletion,
 * assignment annotations, kube-scheduler's PodScheduled verdict), dra_pod_claims
 * (spec.resourceClaims, status.resourceClaimStatuses), the webhook
 * check at bind (env), bind's precondition (resourceVersion), preemption
 * (priority, preemptionPolicy, grace periods, start and creation times, the
 * nominated node, the record of consolidation's held places: heldrec.h). */
static const gp_keep env_keep[] = {{.key = "name"}, {.key = "valueFrom"}, {0}};
static const gp_keep ctr_keep[] = {{.key = "name"},
                                   {.key = "resources"},
                                   {.key = "restartPolicy"},   /* native sidecars */
                                   {.key = "env", .sub = env_keep, .each = true},
                                   {0}};
/* consolidation: who recreates a moved pod */
static const gp_keep owner_keep[] = {{.key = "kind"}, {.key = "uid"}, {.key = "controller"}, {0}};
static const gp_keep meta_keep[] = {{.key = "name"},
                                    {.key = "namespace"},
                                    {.key = "uid"},
                                    {.key = "resourceVersion"},
                                    {.key = "labels"},
                                    {.key = "creationTimestamp"},
                                    {.key = "deletionTimestamp"},
                                    {.key = "deletionGracePeriodSeconds"},
                                    {.key = "ownerReferences", .sub = owner_keep, .each = true},
                                    {.key = "annotations", .prefixes = extargs_annotation_prefixes},
                                    {0}};
/* dra_pod_claims: the pod's names for its ResourceClaims, and the claims made from templates */
static const gp_keep claim_keep[] = {{.key = "name"},
                                     {.key = "resourceClaimName"},
                                     {.key = "resourceClaimTemplateName"},
                                     {0}};
static const gp_keep spec_keep[] = {{.key = "nodeName"},
                                    {.key = "priority"},
                                    {.key = "preemptionPolicy"},
                                    {.key = "terminationGracePeriodSeconds"},
                                    {.key = "containers", .sub = ctr_keep, .each = true},
                                    {.key = "initContainers", .sub = ctr_keep, .each = true},
                                    {.key = "resourceClaims", .sub = claim_keep, .each = true},
                                    {0}};
/* a condition as the scanner keeps it: the message for consolidation's held
 * places (heldrec.h); k8s_obs_trim_pod then keeps the two conditions read */
static const gp_keep cond_scan_keep[] = {{.key = "type"}, {.key = "status"}, {.key = "reason"},
                                         {.key = "message"}, {0}};
static const gp_keep cond_keep[] = {{.key = "type"}, {.key = "status"}, {.key = "reason"}, {0}};
static const gp_keep held_cond_keep[] = {{.key = "type"}, {.key = "status"}, {.key = "message"}, {0}};
static const gp_keep status_keep[] = {{.key = "phase"},
                                      {.key = "startTime"},
                                      {.key = "nominatedNodeName"},
                                      {.key = "conditions", .sub = cond_scan_keep, .each = true},
                                      {.key = "resourceClaimStatuses", .sub = claim_keep,
                                       .each = true},
                                      {0}};
const gp_keep k8s_obs_pod_keep[] = {{.key = "metadata", .sub = meta_keep},
                                    {.key = "spec", .sub = spec_keep},
                                    {.key = "status", .sub = status_keep},
                                    {0}};

json_t *k8s_obs_trim_pod(const json_t *pod)
{
    json_t *t = jsonkeep_trim(pod, k8s_obs_pod_keep);
    /* of the conditions, k8s_obs_pod reads only an unbound pod's PodScheduled
     * (kube-scheduler's verdict, for the requeue), and preemption the record
     * of held places (heldrec.h): the LIST buffer holds no more */
    json_t *st = json_object_get(t, "status");
    if (json_is_object(st) && json_object_get(st, "conditions")) {
        const char *node = gp_json_str_at(pod, "spec", "nodeName");
        const json_t *cond = node && *node ? NULL : pod_condition(pod, "PodScheduled");
        const json_t *held = pod_condition(pod, GP_HELD_PLACES_CONDITION);
        json_t *keep = json_array();
        if (cond)
            json_array_append_new(keep, jsonkeep_trim(cond, cond_keep));
        if (held)
            json_array_append_new(keep, jsonkeep_trim(held, held_cond_keep));
        if (json_array_size(keep))
            json_object_set_new(st, "conditions", keep);
        else {
            json_decref(keep);
            json_object_del(st, "conditions");
        }
    }
    return t;
}

static void copy_keys(json_t *dst, const json_t *src, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(src, keys[i]);
        if (v)
            json_object_set_new(dst, keys[i], json_deep_copy(v));
    }
}

static const gp_keep node_meta_keep[] = {{.key = "name"},   {.key = "uid"},
                                         {.key = "resourceVersion"}, {.key = "labels"},
                                         {.key = "annotations"}, {0}};
static const gp_keep node_status_keep[] = {{.key = "capacity"}, {.key = "allocatable"}, {0}};
const gp_keep k8s_obs_node_keep[] = {{.key = "metadata", .sub = node_meta_keep},
                                     {.key = "status", .sub = node_status_keep},
                                     {0}};

json_t *k8s_obs_trim_node(const json_t *node)
{
    json_t *out = json_object();
    json_t *tmd = json_object();
    static const char *const mkeys[] = {"name", "uid", "resourceVersion", "labels", "annotations"};
    copy_keys(tmd, json_object_get(node, "metadata"), mkeys, GP_ARRAY_LEN(mkeys));
    json_object_set_new(out, "metadata", tmd);
    json_t *tst = json_object();
    static const char *const skeys[] = {"capacity", "allocatable"};
    copy_keys(tst, json_object_get(node, "status"), skeys, GP_ARRAY_LEN(skeys));
    json_object_set_new(out, "status", tst);
    return out;
}
