/* k8s_obs.c -- Kubernetes Pod / Node JSON -> what the store observes. */
#include "model/k8s_obs.h"

#include <ctype.h>
#include <string.h>

#include "model/annotations.h"
#include "model/formats.h"
#include "model/podreq.h"

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

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

/* The PodScheduled condition in status.conditions (borrowed), or NULL. */
static const json_t *pod_scheduled_cond(const json_t *pod)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *type = str_at(c, "type", NULL);
        if (type && strcmp(type, "PodScheduled") == 0)
            return c;
    }
    return NULL;
}

int k8s_obs_pod(const json_t *pod, bool deleted, int64_t aliyun_unit_mib, gp_pod_view *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const json_t *md = json_object_get(pod, "metadata");
    const char *uid = str_at(md, "uid", NULL), *name = str_at(md, "name", NULL);
    const char *ns = str_at(md, "namespace", NULL);
    if (!json_is_object(pod) || !uid || !*uid || !name || !*name)
        return gp_fail(err, "pod object without metadata.name/uid");
    if (strlen(uid) >= sizeof out->uid || strlen(name) >= sizeof out->name)
        return gp_fail(err, "pod %.64s: name or uid too long", name);
    gp_strlcpy(out->uid, uid, sizeof out->uid);
    gp_strlcpy(out->ns, ns ? ns : "default", sizeof out->ns);
    gp_strlcpy(out->name, name, sizeof out->name);
    const char *node = str_at(pod, "spec", "nodeName");
    gp_strlcpy(out->node, node ? node : "", sizeof out->node);
    const char *phase = str_at(pod, "status", "phase");
    bool terminal = deleted || (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
    const json_t *ann = json_object_get(md, "annotations");
    const char *pol = str_at(ann, GP_ANN_POLICY_USED, NULL);
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
    out->pending = !terminal && out->node[0] == '\0' && !json_object_get(md, "deletionTimestamp");
    const json_t *cond = out->pending ? pod_scheduled_cond(pod) : NULL;
    const char *cst = str_at(cond, "status", NULL), *reason = str_at(cond, "reason", NULL);
    out->parked = cst && strcmp(cst, "False") == 0;
    out->sched_error = out->parked && reason && strcmp(reason, "SchedulerError") == 0;
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

static void copy_keys(json_t *dst, const json_t *src, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(src, keys[i]);
        if (v)
            json_object_set_new(dst, keys[i], json_deep_copy(v));
    }
}

static json_t *trim_ctrs(const json_t *arr)
{
    json_t *out = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(arr, i, c) {
        json_t *t = json_object();
        static const char *const keys[] = {"name", "resources"};
        copy_keys(t, c, keys, GP_ARRAY_LEN(keys));
        json_array_append_new(out, t);
    }
    return out;
}

json_t *k8s_obs_trim_pod(const json_t *pod)
{
    json_t *out = json_object();
    const json_t *md = json_object_get(pod, "metadata");
    json_t *tmd = json_object();
    static const char *const mkeys[] = {"name", "namespace", "uid", "resourceVersion", "labels",
                                        "deletionTimestamp"};
    copy_keys(tmd, md, mkeys, GP_ARRAY_LEN(mkeys));
    const json_t *ann = json_object_get(md, "annotations");
    if (json_is_object(ann)) {
        json_t *tann = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)ann, k, v) {
            if (formats_annotation_kept(k, strlen(k)))   /* decoding and restoring read these */
                json_object_set_new(tann, k, json_deep_copy(v));
        }
        json_object_set_new(tmd, "annotations", tann);
    }
    json_object_set_new(out, "metadata", tmd);
    const json_t *spec = json_object_get(pod, "spec");
    json_t *tspec = json_object();
    const char *node = str_at(spec, "nodeName", NULL);
    if (node)
        json_object_set_new(tspec, "nodeName", json_string(node));
    if (json_is_array(json_object_get(spec, "containers")))
        json_object_set_new(tspec, "containers", trim_ctrs(json_object_get(spec, "containers")));
    if (json_is_array(json_object_get(spec, "initContainers")))
        json_object_set_new(tspec, "initContainers", trim_ctrs(json_object_get(spec, "initContainers")));
    json_object_set_new(out, "spec", tspec);
    const char *phase = str_at(pod, "status", "phase");
    json_t *tst = json_object();
    if (phase)
        json_object_set_new(tst, "phase", json_string(phase));
    const json_t *cond = node ? NULL : pod_scheduled_cond(pod);
    if (cond) {
        /* kube-scheduler's verdict on an unbound pod: the requeue after an outage reads it */
        json_t *tc = json_object();
        static const char *const ckeys[] = {"type", "status", "reason"};
        copy_keys(tc, cond, ckeys, GP_ARRAY_LEN(ckeys));
        json_object_set_new(tst, "conditions", json_pack("[o]", tc));
    }
    json_object_set_new(out, "status", tst);
    return out;
}

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
