/* annotations.c -- assignment <-> pod annotations (docs/requests.md, "What bind
 * writes on the pod"; the per-container keys: docs/node-side.md), both profiles. */
#include "model/annotations.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quantity.h"

#define MAX_DEVICE_INDEX 4096
#define MAX_GPU_MEM_MIB (16LL * 1024 * 1024)   /* 16 TiB */

/* Compute share as users see it: percent, integral when it is. */
static json_t *core_percent(int permille)
{
    if (permille % 10 == 0)
        return json_integer(permille / 10);
    return json_real(permille / 10.0);
}

static const gp_gpu_info *gpu_info(const gp_node *node, int index)
{
    int pos = node ? gp_node_gpu_pos(node, index) : -1;
    return pos >= 0 ? &node->gpus[pos].info : NULL;
}

static json_t *assignment_obj(const gp_assignment *a, const gp_node *node)
{
    json_t *ctrs = json_array();
    for (int c = 0; c < a->nctrs; c++) {
        const gp_ctr_assign *ca = &a->ctrs[c];
        json_t *gpus = json_array();
        for (int g = 0; g < ca->ngpus; g++) {
            const gp_gpu_info *info = gpu_info(node, ca->gpus[g].index);
            json_t *o = json_object();
            json_object_set_new(o, "index", json_integer(ca->gpus[g].index));
            if (info && info->uuid[0])
                json_object_set_new(o, "uuid", json_string(info->uuid));
            json_object_set_new(o, "memMiB", json_integer(ca->gpus[g].mem_mib));
            json_object_set_new(o, "core", core_percent(ca->gpus[g].core));
            json_array_append_new(gpus, o);
        }
        json_t *co = json_object();
        json_object_set_new(co, "name", json_string(ca->name));
        if (ca->init)
            json_object_set_new(co, "init", json_true());
        json_object_set_new(co, "gpus", gpus);
        json_array_append_new(ctrs, co);
    }
    json_t *o = json_object();
    json_object_set_new(o, "node", json_string(a->node));
    json_object_set_new(o, "containers", ctrs);
    return o;
}

char *annotations_assignment_json(const gp_assignment *a, const gp_node *node)
{
    json_t *o = assignment_obj(a, node);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        abort();
    return s;
}

json_t *annotations_build(const gp_assignment *a, const gp_node *node, gp_profile profile,
                          int64_t aliyun_unit_mib, const char *policy, int64_t now_ns)
{
    json_t *ann = json_object();
    char *as = annotations_assignment_json(a, node);
    json_object_set_new(ann, GP_ANN_ASSIGNMENT, json_string(as));
    free(as);

    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(a, holds);
    /* visible devices in device-index order */
    for (int i = 1; i < nh; i++)
        for (int j = i; j > 0 && holds[j].index < holds[j - 1].index; j--) {
            gp_hold t = holds[j];
            holds[j] = holds[j - 1];
            holds[j - 1] = t;
        }
    gp_buf vis;
    gp_buf_init(&vis, 64 * GP_MAX_GPUS_PER_NODE * GP_UUID_MAX);
    for (int i = 0; i < nh; i++) {
        const gp_gpu_info *info = gpu_info(node, holds[i].index);
        if (i)
            gp_buf_append(&vis, ",", 1);
        if (info && info->uuid[0])
            gp_buf_printf(&vis, "%s", info->uuid);
        else
            gp_buf_printf(&vis, "%d", holds[i].index);
    }
    if (gp_buf_failed(&vis))
        abort();   /* the limit is above what nh <= 64 entries can write */
    json_object_set_new(ann, GP_ANN_VISIBLE, json_string(vis.data ? vis.data : ""));
    gp_buf_free(&vis);

    char ts[32];
    snprintf(ts, sizeof ts, "%" PRId64, now_ns);
    json_object_set_new(ann, GP_ANN_ASSUME_TIME, json_string(ts));
    if (policy && *policy)
        json_object_set_new(ann, GP_ANN_POLICY_USED, json_string(policy));

    if (profile == GP_PROFILE_ALIYUN && nh > 0) {
        int64_t unit = aliyun_unit_mib > 0 ? aliyun_unit_mib : 1024;
        const gp_gpu_info *info = gpu_info(node, holds[0].index);
        char buf[32];
        snprintf(buf, sizeof buf, "%d", holds[0].index);
        json_object_set_new(ann, GP_ANN_ALIYUN_IDX, json_string(buf));
        snprintf(buf, sizeof buf, "%" PRId64, holds[0].mem_mib / unit);
        json_object_set_new(ann, GP_ANN_ALIYUN_POD, json_string(buf));
        snprintf(buf, sizeof buf, "%" PRId64, info ? info->mem_total / unit : 0);
        json_object_set_new(ann, GP_ANN_ALIYUN_DEV, json_string(buf));
        json_object_set_new(ann, GP_ANN_ALIYUN_ASSIGNED, json_string("false"));
        json_object_set_new(ann, GP_ANN_ALIYUN_ASSUME_TIME, json_string(ts));
    }
    return ann;
}

/* ------------------------------------------------- per-container keys -- */

const gp_ctr_var_desc annotations_ctr_vars[GP_CTR_NVARS] = {
    [GP_CTR_VISIBLE] = {"NVIDIA_VISIBLE_DEVICES", "visible-devices"},
    [GP_CTR_MEM_LIMIT] = {"CUDA_DEVICE_MEMORY_LIMIT", "mem-limit"},
    [GP_CTR_SM_LIMIT] = {"CUDA_DEVICE_SM_LIMIT", "sm-limit"},
    [GP_CTR_MPS_MEM] = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "mps-mem-limit"},
    [GP_CTR_MPS_THREADS] = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "mps-threads"},
};

void annotations_ctr_key(char key[GP_CTR_KEY_MAX], bool init, size_t index, gp_ctr_var v)
{
    snprintf(key, GP_CTR_KEY_MAX, "gpupack.io/%s-%zu-%s", init ? "init" : "ctr", index,
             annotations_ctr_vars[v].suffix);
}

/* The assignment entry of a container: by name (Kubernetes keeps names unique
 * across containers and initContainers; an entry's init flag says "runs
 * once", which a sidecar listed in initContainers is not); in the aliyun
 * profile podreq merged the pod's containers into its one entry. */
static const gp_ctr_assign *grant_of(const gp_assignment *a, const char *name, gp_profile profile)
{
    for (int c = 0; c < a->nctrs; c++)
        if (profile == GP_PROFILE_ALIYUN || strcmp(a->ctrs[c].name, name) == 0)
            return &a->ctrs[c];
    return NULL;
}

/* The values of one container's variables. own_mib > 0 overrides the
 * granted memory (aliyun: the GPU's grant is the whole pod's). */
static void ctr_values(json_t *ann, bool init, size_t index, const gp_ctr_assign *ca,
                       const gp_node *node, int64_t own_mib)
{
    gp_gpu_grant g[GP_MAX_GPUS_PER_CTR];
    int n = ca->ngpus;
    memcpy(g, ca->gpus, (size_t)n * sizeof g[0]);
    for (int i = 1; i < n; i++)   /* device-index order, as the node lists them */
        for (int j = i; j > 0 && g[j].index < g[j - 1].index; j--) {
            gp_gpu_grant t = g[j];
            g[j] = g[j - 1];
            g[j - 1] = t;
        }
    char vis[GP_MAX_GPUS_PER_CTR * (GP_UUID_MAX + 1) + 1] = "";
    char mps[GP_MAX_GPUS_PER_CTR * 32] = "";
    size_t vl = 0, ml = 0;
    int64_t mem_min = -1;
    int core = GP_CORE_FULL;
    for (int i = 0; i < n; i++) {
        const gp_gpu_info *info = gpu_info(node, g[i].index);
        int64_t mem = own_mib > 0 ? own_mib : g[i].mem_mib;
        if (info && info->uuid[0])
            vl += (size_t)snprintf(vis + vl, sizeof vis - vl, "%s%s", i ? "," : "", info->uuid);
        else
            vl += (size_t)snprintf(vis + vl, sizeof vis - vl, "%s%d", i ? "," : "", g[i].index);
        ml += (size_t)snprintf(mps + ml, sizeof mps - ml, "%s%d=%" PRId64 "M", i ? "," : "", i,
                               mem);
        if (mem_min < 0 || mem < mem_min)
            mem_min = mem;
        if (g[i].core > 0 && g[i].core < core)
            core = g[i].core;
    }
    char key[GP_CTR_KEY_MAX], buf[32];
    annotations_ctr_key(key, init, index, GP_CTR_VISIBLE);
    json_object_set_new(ann, key, json_string(vis));
    annotations_ctr_key(key, init, index, GP_CTR_MPS_MEM);
    json_object_set_new(ann, key, json_string(mps));
    snprintf(buf, sizeof buf, "%" PRId64 "m", mem_min < 0 ? 0 : mem_min);
    annotations_ctr_key(key, init, index, GP_CTR_MEM_LIMIT);
    json_object_set_new(ann, key, json_string(buf));
    /* percent, whole (requests are whole percents); 0 = unconstrained = 100 */
    snprintf(buf, sizeof buf, "%d", core / 10 > 0 ? core / 10 : 1);
    annotations_ctr_key(key, init, index, GP_CTR_SM_LIMIT);
    json_object_set_new(ann, key, json_string(buf));
    annotations_ctr_key(key, init, index, GP_CTR_MPS_THREADS);
    json_object_set_new(ann, key, json_string(buf));
}

void annotations_add_containers(json_t *ann, const json_t *pod, const gp_assignment *a,
                                const gp_node *node, const gp_resource_names *names)
{
    static const struct {
        const char *key;
        bool init;
    } lists[] = {{"containers", false}, {"initContainers", true}};
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < GP_ARRAY_LEN(lists); l++) {
        const json_t *arr = json_object_get(spec, lists[l].key);
        size_t i;
        const json_t *c;
        json_array_foreach(arr, i, c) {
            gp_ctr_req req;
            gp_profile profile;
            gp_err err;
            if (podreq_container(pod, lists[l].init, i, names, &req, &profile, &err) != 1)
                continue;
            const gp_ctr_assign *ca = grant_of(a, req.name, profile);
            if (ca && ca->ngpus > 0)
                ctr_values(ann, lists[l].init, i, ca, node,
                           profile == GP_PROFILE_ALIYUN ? req.mem_mib : 0);
        }
    }
}

/* ------------------------------------------------------------ decoding -- */

static int decode_core(const json_t *v, int *out)
{
    double d;
    if (!v) {
        *out = 0;
        return 0;
    }
    if (json_is_integer(v))
        d = (double)json_integer_value(v);
    else if (json_is_real(v))
        d = json_real_value(v);
    else
        return -1;
    if (!(d >= 0 && d <= 100))
        return -1;
    *out = (int)lround(d * 10);
    return 0;
}

static int decode_gpupack(const char *text, gp_assignment *a, gp_err *err)
{
    static const char what[] = "annotation " GP_ANN_ASSIGNMENT;
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return gp_fail(err, "%s: invalid JSON: %s", what, je.text);
    int rc = -1;
    const json_t *node = json_object_get(o, "node");
    const json_t *ctrs = json_object_get(o, "containers");
    if (!json_is_string(node) || strlen(json_string_value(node)) >= sizeof a->node) {
        gp_fail(err, "%s: \"node\" must be a node name", what);
        goto out;
    }
    if (!json_is_array(ctrs) || json_array_size(ctrs) > GP_MAX_CTRS) {
        gp_fail(err, "%s: \"containers\" must be an array of at most %d", what, GP_MAX_CTRS);
        goto out;
    }
    gp_strlcpy(a->node, json_string_value(node), sizeof a->node);
    size_t i;
    const json_t *c;
    json_array_foreach(ctrs, i, c) {
        gp_ctr_assign *ca = &a->ctrs[a->nctrs];
        memset(ca, 0, sizeof *ca);
        const json_t *name = json_object_get(c, "name");
        const json_t *gpus = json_object_get(c, "gpus");
        const json_t *init = json_object_get(c, "init");
        if (!json_is_string(name) || strlen(json_string_value(name)) >= sizeof ca->name ||
            !json_is_array(gpus) || json_array_size(gpus) > GP_MAX_GPUS_PER_CTR ||
            (init && !json_is_boolean(init))) {
            gp_fail(err, "%s: containers[%zu] must have a name and at most %d gpus", what, i,
                    GP_MAX_GPUS_PER_CTR);
            goto out;
        }
        gp_strlcpy(ca->name, json_string_value(name), sizeof ca->name);
        ca->init = json_is_true(init);
        size_t k;
        const json_t *g;
        json_array_foreach(gpus, k, g) {
            const json_t *idx = json_object_get(g, "index");
            const json_t *mem = json_object_get(g, "memMiB");
            gp_gpu_grant *gr = &ca->gpus[ca->ngpus];
            if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
                json_integer_value(idx) > MAX_DEVICE_INDEX || !json_is_integer(mem) ||
                json_integer_value(mem) < 0 || json_integer_value(mem) > MAX_GPU_MEM_MIB ||
                decode_core(json_object_get(g, "core"), &gr->core)) {
                gp_fail(err, "%s: containers[%zu].gpus[%zu] needs index 0..%d, memMiB 0..%lld and "
                        "core 0..100", what, i, k, MAX_DEVICE_INDEX, MAX_GPU_MEM_MIB);
                goto out;
            }
            gr->index = (int)json_integer_value(idx);
            gr->mem_mib = json_integer_value(mem);
            ca->ngpus++;
        }
        a->nctrs++;
    }
    rc = 1;
out:
    json_decref(o);
    return rc;
}

static int ann_int(const json_t *ann, const char *key, int64_t *out, gp_err *err)
{
    const json_t *v = json_object_get(ann, key);
    gp_err e;
    if (!json_is_string(v))
        return gp_fail(err, "annotation %s: must be a string", key);
    if (quantity_parse_int(json_string_value(v), out, &e))
        return gp_fail(err, "annotation %s: %s", key, e.msg);
    return 0;
}

int annotations_decode(const json_t *annotations, const char *node_name, int64_t aliyun_unit_mib,
                       gp_assignment *a, gp_err *err)
{
    memset(a, 0, sizeof *a);
    if (!json_is_object(annotations))
        return 0;
    const json_t *g = json_object_get(annotations, GP_ANN_ASSIGNMENT);
    if (g) {
        if (!json_is_string(g))
            return gp_fail(err, "annotation %s: must be a string", GP_ANN_ASSIGNMENT);
        return decode_gpupack(json_string_value(g), a, err);
    }
    if (!json_object_get(annotations, GP_ANN_ALIYUN_IDX))
        return 0;
    int64_t idx, pod;
    if (ann_int(annotations, GP_ANN_ALIYUN_IDX, &idx, err) ||
        ann_int(annotations, GP_ANN_ALIYUN_POD, &pod, err))
        return -1;
    if (idx > MAX_DEVICE_INDEX)
        return gp_fail(err, "annotation %s: %lld is not a device index", GP_ANN_ALIYUN_IDX,
                       (long long)idx);
    int64_t unit = aliyun_unit_mib > 0 ? aliyun_unit_mib : 1024;
    if (pod > MAX_GPU_MEM_MIB / unit)
        return gp_fail(err, "annotation %s: out of range (larger than any GPU)", GP_ANN_ALIYUN_POD);
    if (!node_name || strlen(node_name) >= sizeof a->node)
        return gp_fail(err, "aliyun annotations on a pod without a node");
    gp_strlcpy(a->node, node_name, sizeof a->node);
    a->nctrs = 1;
    a->ctrs[0].ngpus = 1;
    a->ctrs[0].gpus[0] = (gp_gpu_grant){(int)idx, pod * unit, 0};
    return 1;
}

int annotations_gpu_refs(const json_t *annotations, gp_gpu_ref *out, int max)
{
    const char *text = json_string_value(json_object_get(annotations, GP_ANN_ASSIGNMENT));
    if (!text)
        return 0;
    json_t *a = json_loads(text, 0, NULL);
    int n = 0;
    size_t c, g;
    json_t *ctr, *gpu;
    json_array_foreach(json_object_get(a, "containers"), c, ctr) {
        json_array_foreach(json_object_get(ctr, "gpus"), g, gpu) {
            json_t *idx = json_object_get(gpu, "index");
            const char *uuid = json_string_value(json_object_get(gpu, "uuid"));
            if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
                json_integer_value(idx) > INT32_MAX)
                continue;
            int index = (int)json_integer_value(idx);
            int k = 0;
            while (k < n && out[k].index != index)
                k++;
            if (k < n || n == max)
                continue;
            out[n].index = index;
            gp_strlcpy(out[n].uuid, uuid && strlen(uuid) < GP_UUID_MAX ? uuid : "", GP_UUID_MAX);
            n++;
        }
    }
    json_decref(a);
    return n;
}
