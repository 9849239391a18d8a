/* podreq.c -- a Kubernetes Pod (JSON) -> what it asks of gpupack. */
#include "model/podreq.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/formats.h"
#include "model/pod.h"
#include "model/quantity.h"

#define MAX_GPU_MEM_MIB (16LL * 1024 * 1024)   /* 16 TiB per GPU: beyond any real GPU */
#define MAX_HOST_MILLI (INT64_MAX / 4)         /* host requests saturate here */

void podreq_default_names(gp_resource_names *n)
{
    memset(n, 0, sizeof *n);
    gp_strlcpy(n->mem, "gpupack.io/gpu-mem", sizeof n->mem);
    n->mem_unit_mib = 1;
    gp_strlcpy(n->count, "gpupack.io/gpu-count", sizeof n->count);
    gp_strlcpy(n->core, "gpupack.io/gpu-core", sizeof n->core);
    gp_strlcpy(n->aliyun_mem, "aliyun.com/gpu-mem", sizeof n->aliyun_mem);
    n->aliyun_unit_mib = 1024;
    n->formats = GP_FORMATS_OTHER;
    n->nvidia_gpu = false;
}

/* Host cpu/memory in thousandths, clamped to 0..MAX_HOST_MILLI (these only
 * feed the simulator's fit; bad values must not cancel other containers). */
static int64_t host_milli(const json_t *res, const char *name)
{
    const json_t *v = json_object_get(json_object_get(res, "requests"), name);
    if (!v)
        v = json_object_get(json_object_get(res, "limits"), name);
    int64_t m = 0;
    if (json_is_string(v) && quantity_parse_milli(json_string_value(v), &m, NULL) == 0)
        return m < 0 ? 0 : m > MAX_HOST_MILLI ? MAX_HOST_MILLI : m;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        return i <= 0 ? 0 : i > MAX_HOST_MILLI / 1000 ? MAX_HOST_MILLI : (int64_t)i * 1000;
    }
    return 0;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > MAX_HOST_MILLI - b ? MAX_HOST_MILLI : a + b;
}

void podreq_host(const json_t *pod, int64_t *cpu_milli, int64_t *mem_mib)
{
    static const char *const lists[] = {"containers", "initContainers"};
    int64_t cpu[2] = {0, 0}, mem[2] = {0, 0};   /* [0] sum of regular, [1] max of init */
    const json_t *spec = json_object_get(pod, "spec");
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const json_t *res = json_object_get(c, "resources");
            int64_t cm = host_milli(res, "cpu");
            int64_t mm = host_milli(res, "memory") / 1000 / (1024 * 1024);
            if (l == 0) {
                cpu[0] = sat_add(cpu[0], cm);
                mem[0] = sat_add(mem[0], mm);
            } else {
                cpu[1] = cm > cpu[1] ? cm : cpu[1];
                mem[1] = mm > mem[1] ? mm : mem[1];
            }
        }
    }
    *cpu_milli = cpu[0] > cpu[1] ? cpu[0] : cpu[1];
    *mem_mib = mem[0] > mem[1] ? mem[0] : mem[1];
}

/* A fresh request entry for a container, or NULL when the pod has too many. */
static gp_ctr_req *new_ctr(gp_pod_req *out, const char *name, bool init)
{
    if (out->nctrs == GP_MAX_CTRS)
        return NULL;
    gp_ctr_req *r = &out->ctrs[out->nctrs++];
    memset(r, 0, sizeof *r);
    gp_strlcpy(r->name, name, sizeof r->name);
    r->init = init;
    return r;
}

/* The gpupack resources of one container, in the units the pod wrote them. */
typedef struct gpu_fields {
    int64_t gmem, count, core, amem;
} gpu_fields;

/* Reads and bounds-checks a container's gpupack resources. 1 when it asks
 * any (a non-zero value), 0 when not, -1 with a message naming the field. */
static int read_gpu_fields(const json_t *res, const char *name, const char *where,
                           const gp_resource_names *n, gpu_fields *f, gp_err *err)
{
    memset(f, 0, sizeof *f);
    if (quantity_resource(res, n->mem, where, &f->gmem, err) < 0 ||
        quantity_resource(res, n->count, where, &f->count, err) < 0 ||
        quantity_resource(res, n->core, where, &f->core, err) < 0 ||
        (n->aliyun_mem[0] && quantity_resource(res, n->aliyun_mem, where, &f->amem, err) < 0))
        return -1;
    if (!f->gmem && !f->count && !f->core && !f->amem)
        return 0;
    if (f->core > 100)
        return gp_fail(err, "%s: %s is %lld, compute share is a percent from 0 to 100", where,
                       n->core, (long long)f->core);
    if (f->count > GP_MAX_GPUS_PER_CTR)
        return gp_fail(err, "%s: %s is %lld, at most %d GPUs per container", where, n->count,
                       (long long)f->count, GP_MAX_GPUS_PER_CTR);
    if (strlen(name) >= GP_CTR_NAME_MAX)
        return gp_fail(err, "%s.name: longer than %d characters", where, GP_CTR_NAME_MAX - 1);
    int64_t munit = n->mem_unit_mib > 0 ? n->mem_unit_mib : 1;
    int64_t aunit = n->aliyun_unit_mib > 0 ? n->aliyun_unit_mib : 1;
    if (f->gmem > MAX_GPU_MEM_MIB / munit || f->amem > MAX_GPU_MEM_MIB / aunit)
        return gp_fail(err, "%s: GPU memory request is out of range (more than any GPU: 16 TiB)", where);
    return 1;
}

/* One container's request from its checked fields; returns its profile. The
 * aliyun profile takes one GPU and no compute share; a native container with
 * only a GPU count gets whole GPUs. */
static gp_profile fill_req(const gpu_fields *f, const char *name, const gp_resource_names *n,
                           gp_ctr_req *r)
{
    memset(r, 0, sizeof *r);
    gp_strlcpy(r->name, name, sizeof r->name);
    r->count = 1;
    if (f->amem) {
        r->mem_mib = f->amem * (n->aliyun_unit_mib > 0 ? n->aliyun_unit_mib : 1);
        return GP_PROFILE_ALIYUN;
    }
    if (f->count)
        r->count = (int)f->count;
    r->mem_mib = f->gmem * (n->mem_unit_mib > 0 ? n->mem_unit_mib : 1);
    r->core = (int)f->core * 10;
    if (r->mem_mib == 0 && r->core == 0) {
        r->mem_ppm = GP_PPM_FULL;
        r->ask = GP_ASK_WHOLE;
        r->core = GP_CORE_FULL;
    }
    return GP_PROFILE_NATIVE;
}

/* One container under the pod's format `fmt` (formats_detect): 1 and *one
 * (with *profile) when it asks, 0 when not, -1 with a message. KAI's request
 * (kai, from the pod's annotations) belongs to the container at (kai_init,
 * kai_index) only. */
typedef struct kai_target {
    bool init_list;
    size_t index;
    gp_ctr_req req;
} kai_target;

static int container_req(const json_t *c, const char *where, bool init_list, size_t index,
                         gp_profile fmt, const kai_target *kai, const gp_resource_names *n,
                         gp_ctr_req *one, gp_profile *profile, gp_err *err)
{
    memset(one, 0, sizeof *one);
    *profile = fmt;
    if (fmt == GP_PROFILE_KAI) {
        if (kai->init_list != init_list || kai->index != index)
            return 0;
        *one = kai->req;
        return 1;
    }
    if (fmt != GP_PROFILE_NATIVE)
        return formats_container(c, where, fmt, n, one, err);
    const json_t *res = json_object_get(c, "resources");
    if (!res)
        return 0;
    const json_t *jname = json_object_get(c, "name");
    const char *name = json_is_string(jname) ? json_string_value(jname) : "";
    gpu_fields f;
    int asks = read_gpu_fields(res, name, where, n, &f, err);
    if (asks <= 0)
        return asks;
    *profile = fill_req(&f, name, n, one);
    return 1;
}

/* The pod's format and, for KAI, its one request. */
static int pod_format(const json_t *pod, const gp_resource_names *n, gp_profile *fmt,
                      kai_target *kai, gp_err *err)
{
    memset(kai, 0, sizeof *kai);
    if (formats_detect(pod, n, fmt, err))
        return -1;
    if (*fmt == GP_PROFILE_KAI &&
        formats_kai(pod, &kai->req, &kai->init_list, &kai->index, err))
        return -1;
    return 0;
}

int podreq_container(const json_t *pod, bool init_list, size_t index,
                     const gp_resource_names *n, gp_ctr_req *out, gp_profile *profile, gp_err *err)
{
    memset(out, 0, sizeof *out);
    *profile = GP_PROFILE_NATIVE;
    const char *list = init_list ? "initContainers" : "containers";
    const json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), list), index);
    if (!c)
        return 0;
    char where[64];
    snprintf(where, sizeof where, "spec.%s[%zu]", list, index);
    if (!json_is_object(c))
        return gp_fail(err, "%s: must be an object", where);
    const json_t *res = json_object_get(c, "resources");
    if (res && !json_is_object(res))
        return gp_fail(err, "%s.resources: must be an object", where);
    gp_profile fmt;
    kai_target kai;
    if (pod_format(pod, n, &fmt, &kai, err))
        return -1;
    return container_req(c, where, init_list, index, fmt, &kai, n, out, profile, err);
}

/* What a pod asks, accumulated over its containers the way kube-scheduler
 * does it since native sidecars (Kubernetes 1.28; PodRequests in
 * k8s.io/component-helpers/resource/helpers.go, before that
 * pkg/api/v1/resource/helpers.go, and KEP-753 "exposing pod resource
 * requirements"): regular containers and sidecars -- init containers with
 * restartPolicy: Always -- add up; a run-once init container uses its own
 * request plus every sidecar started before it; the pod needs the larger of
 * the sum and the largest such init use. */
typedef struct acc {
    int64_t cpu_sum, mem_sum, cpu_init, mem_init;   /* host requests */
    int64_t cpu_side, mem_side;                     /* sidecars started so far */
    int64_t gmem_side;                              /* native: sidecars' MiB per GPU */
    int gcore_side;                                 /* native: sidecars' per-mille per GPU */
    int64_t al_sum, al_side, al_init;               /* aliyun: MiB of the pod's one GPU */
    char al_name[GP_CTR_NAME_MAX];                  /* aliyun: the entry's name */
    bool al_name_regular;
    bool native, aliyun;
} acc;

static void max_into(int64_t *m, int64_t v)
{
    if (v > *m)
        *m = v;
}

static int decode_container(const json_t *c, const char *where, bool init, size_t index,
                            gp_profile fmt, const kai_target *kai, const gp_resource_names *n,
                            gp_pod_req *out, acc *a, gp_err *err)
{
    if (!json_is_object(c))
        return gp_fail(err, "%s: must be an object", where);
    const json_t *res = json_object_get(c, "resources");
    if (res && !json_is_object(res))
        return gp_fail(err, "%s.resources: must be an object", where);
    const json_t *jname = json_object_get(c, "name");
    const char *name = json_is_string(jname) ? json_string_value(jname) : "";
    const char *restart = json_string_value(json_object_get(c, "restartPolicy"));
    bool sidecar = init && restart && strcmp(restart, "Always") == 0;
    int64_t cpu = host_milli(res, "cpu");
    int64_t mem = host_milli(res, "memory") / 1000 / (1024 * 1024);   /* bytes -> MiB */
    if (init && !sidecar) {
        max_into(&a->cpu_init, sat_add(cpu, a->cpu_side));
        max_into(&a->mem_init, sat_add(mem, a->mem_side));
    } else {
        a->cpu_sum = sat_add(a->cpu_sum, cpu);
        a->mem_sum = sat_add(a->mem_sum, mem);
        if (sidecar) {
            a->cpu_side = sat_add(a->cpu_side, cpu);
            a->mem_side = sat_add(a->mem_side, mem);
        }
    }
    gp_ctr_req one;
    gp_profile profile;
    int asks = container_req(c, where, init, index, fmt, kai, n, &one, &profile, err);
    if (asks <= 0)
        return asks;   /* 0: not a GPU container */

    if (profile == GP_PROFILE_ALIYUN) {
        a->aliyun = true;
        if (a->native)
            goto mixed;
        /* aliyun profile: the gpushare device plugin runs the whole pod on the
         * one GPU its annotations name, so the pod is one entry (made in
         * podreq_decode); the memory follows kube-scheduler's rule (acc) */
        int64_t add = one.mem_mib;
        if (init && !sidecar) {
            max_into(&a->al_init, add + a->al_side);
        } else {
            if (a->al_sum > MAX_GPU_MEM_MIB - add)
                return gp_fail(err, "%s: the pod's %s adds up to more than any GPU (16 TiB)",
                               where, n->aliyun_mem);
            a->al_sum += add;
            if (sidecar)
                a->al_side += add;
        }
        if (!a->al_name[0] || (!init && !a->al_name_regular)) {
            gp_strlcpy(a->al_name, name, sizeof a->al_name);
            a->al_name_regular = !init;
        }
        return 0;
    }
    a->native = true;
    if (a->aliyun)
        goto mixed;
    /* a sidecar holds its share for the pod's life, like a regular container */
    gp_ctr_req *r = new_ctr(out, name, init && !sidecar);
    if (!r)
        goto too_many;
    *r = one;
    r->init = init && !sidecar;
    if (r->mem_ppm) {
        /* relative to each GPU (whole GPUs, fractions): nothing to add */
    } else if (sidecar) {
        a->gmem_side += r->mem_mib;
        a->gcore_side += r->core;
    } else if (init && r->mem_mib > 0) {
        /* runs beside the sidecars started before it; which GPUs they got is
         * not known here, so they count as if on this container's GPUs
         * (never less than kube-scheduler's rule, more only when they differ) */
        r->mem_mib += a->gmem_side;
        r->core += a->gcore_side;
        if (r->mem_mib > MAX_GPU_MEM_MIB)
            return gp_fail(err, "%s: GPU memory with the sidecars before it is out of range "
                           "(more than any GPU: 16 TiB)", where);
    }
    return 0;
mixed:
    return gp_fail(err, "%s: pod mixes %s with %s resources; use one profile per pod", where,
                   n->aliyun_mem, "gpupack.io");
too_many:
    return gp_fail(err, "%s: pod has more than %d GPU containers", where, GP_MAX_CTRS);
}

int podreq_decode(const json_t *pod, const gp_resource_names *names, gp_pod_req *out, gp_err *err)
{
    gp_pod p;
    if (pod_decode(pod, &p, err)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return podreq_of(&p, names, out, err);
}

int podreq_of(const gp_pod *p, const gp_resource_names *names, gp_pod_req *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const json_t *pod = p->json;
    gp_strlcpy(out->name, p->name, sizeof out->name);
    gp_strlcpy(out->ns, p->ns, sizeof out->ns);
    gp_strlcpy(out->uid, p->uid, sizeof out->uid);
    gp_strlcpy(out->policy, p->policy, sizeof out->policy);
    out->priority = p->prio.priority;
    gp_strlcpy(out->owner, p->prio.owner.uid, sizeof out->owner);
    gp_strlcpy(out->models, p->models, sizeof out->models);

    const json_t *spec = json_object_get(pod, "spec");
    if (!json_is_object(spec))
        return gp_fail(err, "Pod.spec: missing or not an object");
    gp_profile fmt;
    kai_target kai;
    if (pod_format(pod, names, &fmt, &kai, err) || formats_pod_types(pod, fmt, out, err))
        return -1;
    acc a = {0};
    static const struct {
        const char *key;
        bool init;
    } lists[] = {{"containers", false}, {"initContainers", true}};
    for (size_t l = 0; l < GP_ARRAY_LEN(lists); l++) {
        const json_t *arr = json_object_get(spec, lists[l].key);
        if (!arr || json_is_null(arr))
            continue;
        if (!json_is_array(arr))
            return gp_fail(err, "Pod.spec.%s: must be an array", lists[l].key);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            char where[64];
            snprintf(where, sizeof where, "spec.%s[%zu]", lists[l].key, i);
            if (decode_container(json_array_get(arr, i), where, lists[l].init, i, fmt, &kai,
                                 names, out, &a, err))
                return -1;
        }
    }
    if (a.aliyun) {
        gp_ctr_req *r = new_ctr(out, a.al_name, false);   /* nctrs is 0: never NULL */
        r->count = 1;
        r->mem_mib = a.al_sum > a.al_init ? a.al_sum : a.al_init;
    }
    out->profile = a.aliyun ? GP_PROFILE_ALIYUN : fmt;
    out->cpu_milli = a.cpu_sum > a.cpu_init ? a.cpu_sum : a.cpu_init;
    out->host_mem_mib = a.mem_sum > a.mem_init ? a.mem_sum : a.mem_init;
    return 0;
}
