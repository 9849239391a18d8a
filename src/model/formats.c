/* formats.c -- other GPU-sharing systems' requests -> gpupack's (see formats.h and
 * docs/migrating.md for the source of every rule). */
#include "model/formats.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quantity.h"
#include "lib/extargs.h"

#define MAX_GPU_MEM_MIB (16LL * 1024 * 1024)   /* 16 TiB per GPU, as podreq.c bounds it */
#define TKE_BLOCK_MIB 256      /* gpu-manager pkg/types: MemoryBlockSize = 268435456 bytes */
#define TKE_CORE_GPU 100       /* gpu-manager pkg/device/nvidia/tree.go: HundredCore */
#define WHERE_MAX 64

/* KAI annotations: pkg/common/constants/constants.go */
#define KAI_FRACTION "gpu-fraction"
#define KAI_MEMORY "gpu-memory"
#define KAI_NUM_DEVICES "gpu-fraction-num-devices"
#define KAI_CONTAINER "gpu-fraction-container-name"
/* HAMi pkg/device/nvidia/device.go (Volcano's vgpu/type.go reads the same two) */
#define TYPE_USE "nvidia.com/use-gputype"
#define TYPE_NOUSE "nvidia.com/nouse-gputype"
#define NVIDIA_GPU "nvidia.com/gpu"

static const char *const format_names[GP_PROFILE_COUNT] = {
    [GP_PROFILE_NATIVE] = "gpupack", [GP_PROFILE_ALIYUN] = "aliyun", [GP_PROFILE_KAI] = "kai",
    [GP_PROFILE_HAMI] = "hami",      [GP_PROFILE_VOLCANO] = "volcano", [GP_PROFILE_TKE] = "tke",
};

const char *formats_name(gp_profile f)
{
    return (unsigned)f < GP_PROFILE_COUNT ? format_names[f] : NULL;
}

int formats_by_name(const char *name)
{
    for (int f = 0; f < GP_PROFILE_COUNT; f++)
        if (strcmp(format_names[f], name) == 0)
            return f;
    return -1;
}

/* ------------------------------------------------ resource formats -- */

/* Which of a format's keys mark a container as written in it. */
enum { K_COUNT = 1, K_MEM = 2, K_PCT = 4, K_CORE = 8 };

typedef struct res_format res_format;
typedef int (*ctr_fn)(const res_format *d, const json_t *res, const char *where, gp_ctr_req *out,
                      gp_err *err);

/* A format asked with container resources: its keys (NULL when it has none)
 * and the function that turns their values into a request. */
struct res_format {
    gp_profile f;
    const char *count;     /* GPUs per container */
    const char *mem;       /* memory per GPU: MiB (TKE: 256 MiB blocks) */
    const char *pct;       /* percent of each GPU's memory */
    const char *core;      /* percent of each GPU's compute (TKE: 100 per whole GPU) */
    int triggers;          /* K_*: keys whose presence makes a container this format's */
    ctr_fn decode;
};

/* The values of a container's keys: v[k] set when has[k]. */
typedef struct ctr_vals {
    int64_t count, mem, pct, core;
    bool has_count, has_mem, has_pct, has_core;
} ctr_vals;

static int read_vals(const res_format *d, const json_t *res, const char *where, ctr_vals *v,
                     gp_err *err)
{
    memset(v, 0, sizeof *v);
    const struct {
        const char *name;
        int64_t *val;
        bool *has;
    } keys[] = {{d->count, &v->count, &v->has_count}, {d->mem, &v->mem, &v->has_mem},
                {d->pct, &v->pct, &v->has_pct},       {d->core, &v->core, &v->has_core}};
    for (size_t i = 0; i < GP_ARRAY_LEN(keys); i++) {
        if (!keys[i].name)
            continue;
        int rc = quantity_resource(res, keys[i].name, where, keys[i].val, err);
        if (rc < 0)
            return -1;
        *keys[i].has = rc == 1;
    }
    return 0;
}

static int check_count(const char *where, const char *key, int64_t n, gp_err *err)
{
    if (n > GP_MAX_GPUS_PER_CTR)
        return gp_fail(err, "%s: %s is %lld, at most %d GPUs per container", where, key,
                       (long long)n, GP_MAX_GPUS_PER_CTR);
    return 0;
}

static int check_percent(const char *where, const char *key, int64_t p, int64_t min, gp_err *err)
{
    if (p < min || p > 100)
        return gp_fail(err, "%s: %s is %lld, a percent from %lld to 100", where, key,
                       (long long)p, (long long)min);
    return 0;
}

static int check_mib(const char *where, const char *key, int64_t mib, gp_err *err)
{
    if (mib > MAX_GPU_MEM_MIB)
        return gp_fail(err, "%s: %s is out of range (more than any GPU: 16 TiB)", where, key);
    return 0;
}

/* HAMi: GenerateResourceRequests (pkg/device/nvidia/device.go) for memory and
 * cores, with what HAMi's admission webhook adds first (MutateAdmission):
 * nvidia.com/gpu = 1 when only gpumem/gpucores/gpumem-percentage are given
 * (defaultGPUNum 1 in the chart), gpucores = 100 (exclusive) when neither a
 * percentage below 100 nor gpumem is given (defaultExclusiveCoreIfNeeded). */
static int decode_hami(const res_format *d, const json_t *res, const char *where, gp_ctr_req *out,
                       gp_err *err)
{
    ctr_vals v;
    if (read_vals(d, res, where, &v, err))
        return -1;
    if (!v.has_count && !v.has_mem && !v.has_pct && !v.has_core)
        return 0;
    int64_t count = v.has_count ? v.count : 1;
    if (count == 0)
        return 0;   /* Nums 0: HAMi allocates nothing */
    if (check_count(where, d->count, count, err) || check_mib(where, d->mem, v.mem, err) ||
        (v.has_pct && check_percent(where, d->pct, v.pct, 0, err)) ||
        (v.has_core && check_percent(where, d->core, v.core, 0, err)))
        return -1;
    out->count = (int)count;
    if (v.mem > 0) {
        out->mem_mib = v.mem;   /* gpumem wins over a percentage: memreq > 0 first in Fit */
        out->ask = GP_ASK_MIB;
    } else if (v.has_pct && v.pct > 0) {
        out->mem_ppm = (int32_t)(v.pct * (GP_PPM_FULL / 100));
        out->ask = GP_ASK_PERCENT;
    } else {
        out->mem_ppm = GP_PPM_FULL;   /* defaultMemory 0: 100 % of the GPU */
        out->ask = GP_ASK_WHOLE;
    }
    int64_t core = v.core;
    if (!v.has_core)
        core = (v.has_pct ? v.pct == 100 : !v.has_mem) ? 100 : 0;   /* else defaultCores 0 */
    out->core = (int)core * 10;
    return 1;
}

/* Volcano: ExtractResourceRequest (pkg/scheduler/api/devices/util.go) and
 * checkNodeGPUSharingPredicateAndScore (pkg/scheduler/api/devices/nvidia/vgpu/
 * utils.go): a container asks with vgpu-number or vgpu-memory (then one GPU);
 * a percentage replaces vgpu-memory; neither means 100 %; cores default 0. */
static int decode_volcano(const res_format *d, const json_t *res, const char *where,
                          gp_ctr_req *out, gp_err *err)
{
    ctr_vals v;
    if (read_vals(d, res, where, &v, err))
        return -1;
    if (!v.has_count && !v.has_mem)
        return 0;
    int64_t count = v.has_count ? v.count : 1;
    if (count == 0)
        return 0;
    if (check_count(where, d->count, count, err) || check_mib(where, d->mem, v.mem, err) ||
        (v.has_pct && check_percent(where, d->pct, v.pct, 1, err)) ||
        (v.has_core && check_percent(where, d->core, v.core, 0, err)))
        return -1;
    out->count = (int)count;
    if (v.has_pct) {
        out->mem_ppm = (int32_t)(v.pct * (GP_PPM_FULL / 100));
        out->ask = GP_ASK_PERCENT;
    } else if (v.mem > 0) {
        out->mem_mib = v.mem;
        out->ask = GP_ASK_MIB;
    } else {
        out->mem_ppm = GP_PPM_FULL;
        out->ask = GP_ASK_WHOLE;
    }
    out->core = (int)v.core * 10;
    return 1;
}

/* TKE gpu-manager: NvidiaTopoAllocator.allocateOne (pkg/services/allocator/
 * nvidia/allocator.go): vcuda-core 100, 200 ... are whole GPUs (other values
 * above 100 are refused), below 100 one shared GPU that needs vcuda-memory too
 * ("cores or memory is zero is not permitted in share mode"). */
static int decode_tke(const res_format *d, const json_t *res, const char *where, gp_ctr_req *out,
                      gp_err *err)
{
    ctr_vals v;
    if (read_vals(d, res, where, &v, err))
        return -1;
    if (v.core == 0 && v.mem == 0)
        return 0;
    if (v.core >= TKE_CORE_GPU) {
        if (v.core % TKE_CORE_GPU)
            return gp_fail(err, "%s: %s is %lld; above 100 it must be a multiple of 100 "
                           "(whole GPUs)", where, d->core, (long long)v.core);
        if (check_count(where, d->core, v.core / TKE_CORE_GPU, err))
            return -1;
        out->count = (int)(v.core / TKE_CORE_GPU);
        out->mem_ppm = GP_PPM_FULL;   /* whole devices: vcuda-memory does not matter */
        out->ask = GP_ASK_WHOLE;
        out->core = GP_CORE_FULL;
        return 1;
    }
    if (v.core == 0 || v.mem == 0)
        return gp_fail(err, "%s: %s %lld with %s %lld: a shared GPU needs both (gpu-manager "
                       "refuses zero cores or zero memory)", where, d->core, (long long)v.core,
                       d->mem, (long long)v.mem);
    if (v.mem > MAX_GPU_MEM_MIB / TKE_BLOCK_MIB)
        return check_mib(where, d->mem, MAX_GPU_MEM_MIB + 1, err);
    out->count = 1;
    out->mem_mib = v.mem * TKE_BLOCK_MIB;
    out->ask = GP_ASK_MIB;
    out->core = (int)v.core * 10;
    return 1;
}

static const res_format res_formats[] = {
    {GP_PROFILE_HAMI, NVIDIA_GPU, "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
     "nvidia.com/gpucores", K_MEM | K_PCT | K_CORE, decode_hami},
    {GP_PROFILE_VOLCANO, "volcano.sh/vgpu-number", "volcano.sh/vgpu-memory",
     "volcano.sh/vgpu-memory-percentage", "volcano.sh/vgpu-cores", K_COUNT | K_MEM,
     decode_volcano},
    {GP_PROFILE_TKE, NULL, "tencent.com/vcuda-memory", NULL, "tencent.com/vcuda-core",
     K_MEM | K_CORE, decode_tke},
};

static const res_format *res_format_of(gp_profile f)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(res_formats); i++)
        if (res_formats[i].f == f)
            return &res_formats[i];
    return NULL;
}

const char *formats_resource_owner(const char *name, unsigned accepted)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(res_formats); i++) {
        const res_format *d = &res_formats[i];
        const char *keys[] = {d->count, d->mem, d->pct, d->core};
        if (!(accepted & GP_FORMAT_BIT(d->f)))
            continue;
        for (size_t k = 0; k < GP_ARRAY_LEN(keys); k++)
            if (keys[k] && strcmp(keys[k], name) == 0)
                return format_names[d->f];
    }
    return NULL;
}

static bool accepts(const gp_resource_names *n, gp_profile f)
{
    return (n->formats & GP_FORMAT_BIT(f)) != 0;
}

int formats_container(const json_t *c, const char *where, gp_profile f,
                      const gp_resource_names *n, gp_ctr_req *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const res_format *d = res_format_of(f);
    if (!d)
        return 0;
    if (!json_is_object(c))
        return gp_fail(err, "%s: must be an object", where);
    const json_t *res = json_object_get(c, "resources");
    if (!res || json_is_null(res))
        return 0;
    if (!json_is_object(res))
        return gp_fail(err, "%s.resources: must be an object", where);
    const json_t *jname = json_object_get(c, "name");
    const char *name = json_is_string(jname) ? json_string_value(jname) : "";
    int rc = d->decode(d, res, where, out, err);
    if (rc <= 0)
        return rc;
    if (strlen(name) >= GP_CTR_NAME_MAX)
        return gp_fail(err, "%s.name: longer than %d characters", where, GP_CTR_NAME_MAX - 1);
    gp_strlcpy(out->name, name, sizeof out->name);
    return 1;
}

/* ---------------------------------------------------------- detection -- */

/* A resource key present in limits or requests (null counts as absent). */
static bool has_res(const json_t *res, const char *key)
{
    static const char *const lists[] = {"limits", "requests"};
    for (size_t i = 0; i < GP_ARRAY_LEN(lists); i++) {
        const json_t *v = json_object_get(json_object_get(res, lists[i]), key);
        if (v && !json_is_null(v))
            return true;
    }
    return false;
}

/* Where a format is first met in a pod, for messages. */
typedef struct mention {
    bool seen;
    char where[WHERE_MAX];
    const char *key;
} mention;

static void note(mention *m, const char *where, const char *key)
{
    if (m->seen)
        return;
    m->seen = true;
    gp_strlcpy(m->where, where, sizeof m->where);
    m->key = key;
}

static int mixed(gp_err *err, const mention *a, const mention *b)
{
    return gp_fail(err, "pod mixes %s (%s) with %s (%s); use one request format per pod", a->key,
                   a->where, b->key, b->where);
}

/* The first trigger key of d present in res, or NULL. */
static const char *trigger_of(const res_format *d, const json_t *res)
{
    const struct {
        int bit;
        const char *key;
    } keys[] = {{K_COUNT, d->count}, {K_MEM, d->mem}, {K_PCT, d->pct}, {K_CORE, d->core}};
    for (size_t i = 0; i < GP_ARRAY_LEN(keys); i++)
        if ((d->triggers & keys[i].bit) && keys[i].key && has_res(res, keys[i].key))
            return keys[i].key;
    return NULL;
}

static const char *native_key(const gp_resource_names *n, const json_t *res)
{
    const char *keys[] = {n->mem, n->count, n->core, n->aliyun_mem};
    for (size_t i = 0; i < GP_ARRAY_LEN(keys); i++)
        if (keys[i][0] && has_res(res, keys[i]))
            return keys[i];
    return NULL;
}

static const json_t *pod_annotations(const json_t *pod)
{
    const json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
    return json_is_object(a) ? a : NULL;
}

int formats_detect(const json_t *pod, const gp_resource_names *n, gp_profile *out, gp_err *err)
{
    *out = GP_PROFILE_NATIVE;
    mention m[GP_PROFILE_COUNT];
    memset(m, 0, sizeof m);
    mention nv_any = {0}, nv_limit = {0};   /* nvidia.com/gpu anywhere; in limits (KAI) */
    const json_t *ann = pod_annotations(pod);
    if (accepts(n, GP_PROFILE_KAI)) {
        static const char *const kai_keys[] = {KAI_FRACTION, KAI_MEMORY, KAI_NUM_DEVICES};
        for (size_t i = 0; i < GP_ARRAY_LEN(kai_keys); i++)
            if (json_object_get(ann, kai_keys[i]))
                note(&m[GP_PROFILE_KAI], "metadata.annotations", kai_keys[i]);
    }
    static const struct {
        const char *key;
        const char *list;
    } lists[] = {{"containers", "spec.containers"}, {"initContainers", "spec.initContainers"}};
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < GP_ARRAY_LEN(lists); l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l].key), i, c) {
            const json_t *res = json_object_get(c, "resources");
            if (!json_is_object(res))
                continue;   /* podreq reports malformed containers */
            char where[WHERE_MAX];
            snprintf(where, sizeof where, "%s[%zu]", lists[l].list, i);
            mention here[GP_PROFILE_COUNT];
            memset(here, 0, sizeof here);
            const char *k = native_key(n, res);
            if (k)
                note(&here[GP_PROFILE_NATIVE], where, k);
            for (size_t f = 0; f < GP_ARRAY_LEN(res_formats); f++) {
                const res_format *d = &res_formats[f];
                if (accepts(n, d->f) && (k = trigger_of(d, res)))
                    note(&here[d->f], where, k);
            }
            const mention *first = NULL;
            for (int f = 0; f < GP_PROFILE_COUNT; f++) {
                if (!here[f].seen)
                    continue;
                if (first)
                    return mixed(err, first, &here[f]);
                first = &here[f];
                note(&m[f], here[f].where, here[f].key);
            }
            if (has_res(res, NVIDIA_GPU))
                note(&nv_any, where, NVIDIA_GPU);
            if (json_object_get(json_object_get(res, "limits"), NVIDIA_GPU))
                note(&nv_limit, where, NVIDIA_GPU);
        }
    }
    const mention *first = NULL;
    for (int f = 0; f < GP_PROFILE_COUNT; f++) {
        if (!m[f].seen)
            continue;
        if (first)
            return mixed(err, first, &m[f]);
        first = &m[f];
        *out = (gp_profile)f;
    }
    if (*out == GP_PROFILE_KAI && nv_limit.seen)
        return gp_fail(err, "annotation %s: a pod asks either a share of a GPU or whole GPUs, "
                       "not both (%s has an %s limit; KAI refuses this too)", m[GP_PROFILE_KAI].key,
                       nv_limit.where, NVIDIA_GPU);
    /* nvidia.com/gpu belongs to HAMi pods; alone, to the device plugin unless
     * the policy gives it to gpupack (then read as HAMi reads it: whole GPUs) */
    if (nv_any.seen && *out != GP_PROFILE_HAMI && n->nvidia_gpu && accepts(n, GP_PROFILE_HAMI)) {
        if (first)
            return mixed(err, first, &nv_any);
        *out = GP_PROFILE_HAMI;
    }
    return 0;
}

/* ---------------------------------------------------------------- KAI -- */

/* An annotation's string value: NULL when absent, -1 when not a string. */
static int ann_str(const json_t *ann, const char *key, const char **out, gp_err *err)
{
    const json_t *v = json_object_get(ann, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return gp_fail(err, "annotation %s: must be a string", key);
    *out = json_string_value(v);
    return 0;
}

/* Shown values are cut to keep messages bounded. */
#define SHOW(s) 40, (s)

/* A positive whole number written with digits only (KAI reads these with
 * strconv.ParseUint / ParseInt). */
static int parse_positive(const char *key, const char *s, int64_t max, const char *unit,
                          int64_t *out, gp_err *err)
{
    int64_t v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (INT64_MAX - 9) / 10) {
            v = INT64_MAX;
            break;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (i == 0 || (s[i] && v != INT64_MAX) || v == 0)
        return gp_fail(err, "annotation %s: \"%.*s\" is not a positive whole number%s", key,
                       SHOW(s), unit);
    if (v > max)
        return gp_fail(err, "annotation %s: %.*s is more than %lld%s", key, SHOW(s),
                       (long long)max, unit);
    *out = v;
    return 0;
}

/* gpu-fraction: what both strconv.ParseFloat and resource.ParseQuantity accept
 * (gpu_request_validator.go): decimal digits, one optional point, an optional
 * exponent; in (0, 1] (pod_info.go accepts 1; KAI's admission check stops
 * below it). Parts per million, rounded to nearest. */
static int parse_fraction(const char *s, int32_t *ppm, gp_err *err)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t digits = 0, points = 0;
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.')
            points++;
        else
            digits++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t ed = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            ed++;
        if (ed == 0 || ed > 4)
            digits = 0;
    }
    if (digits == 0 || points > 1 || *p || p - s > 64)
        return gp_fail(err, "annotation %s: \"%.*s\" is not a number (write a decimal such as "
                       "0.5)", KAI_FRACTION, SHOW(s));
    double d = strtod(s, NULL);
    if (!(d > 0 && d <= 1))
        return gp_fail(err, "annotation %s: %.*s is outside (0, 1]", KAI_FRACTION, SHOW(s));
    long long v = llround(d * GP_PPM_FULL);
    if (v < 1)
        return gp_fail(err, "annotation %s: %.*s is below one millionth of a GPU", KAI_FRACTION,
                       SHOW(s));
    *ppm = (int32_t)v;
    return 0;
}

/* The container KAI's binder gives the fraction to: GetFractionContainerRef
 * (pkg/binder/common/gpu_access.go). */
static int kai_container(const json_t *pod, const char *name, bool *init_list, size_t *index,
                         const json_t **c, gp_err *err)
{
    const json_t *spec = json_object_get(pod, "spec");
    if (!name) {
        *c = json_array_get(json_object_get(spec, "containers"), 0);
        *init_list = false;
        *index = 0;
        if (!json_is_object(*c))
            return gp_fail(err, "annotation %s: the pod has no spec.containers[0] to give it to",
                           KAI_FRACTION);
        return 0;
    }
    static const struct {
        const char *key;
        bool init;
    } lists[] = {{"initContainers", true}, {"containers", false}};
    for (size_t l = 0; l < GP_ARRAY_LEN(lists); l++) {
        size_t i;
        const json_t *x;
        json_array_foreach(json_object_get(spec, lists[l].key), i, x) {
            const char *xn = json_string_value(json_object_get(x, "name"));
            if (xn && strcmp(xn, name) == 0) {
                *c = x;
                *init_list = lists[l].init;
                *index = i;
                return 0;
            }
        }
    }
    return gp_fail(err, "annotation %s: no container named \"%.*s\"", KAI_CONTAINER, SHOW(name));
}

int formats_kai(const json_t *pod, gp_ctr_req *out, bool *init_list, size_t *index, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const json_t *ann = pod_annotations(pod);
    const char *frac, *mem, *ndev, *cname;
    if (ann_str(ann, KAI_FRACTION, &frac, err) || ann_str(ann, KAI_MEMORY, &mem, err) ||
        ann_str(ann, KAI_NUM_DEVICES, &ndev, err) || ann_str(ann, KAI_CONTAINER, &cname, err))
        return -1;
    if (frac && mem)
        return gp_fail(err, "annotations %s \"%.*s\" and %s \"%.*s\": a pod asks one of them, "
                       "not both (KAI refuses both too)", KAI_FRACTION, SHOW(frac), KAI_MEMORY,
                       SHOW(mem));
    if (!frac && !mem)
        return gp_fail(err, "annotation %s \"%.*s\" needs %s or %s beside it", KAI_NUM_DEVICES,
                       SHOW(ndev ? ndev : ""), KAI_FRACTION, KAI_MEMORY);
    int64_t count = 1;
    if (ndev && parse_positive(KAI_NUM_DEVICES, ndev, GP_MAX_GPUS_PER_CTR, " GPUs", &count, err))
        return -1;
    if (frac) {
        if (parse_fraction(frac, &out->mem_ppm, err))
            return -1;
        out->ask = GP_ASK_FRACTION;
    } else {
        if (parse_positive(KAI_MEMORY, mem, MAX_GPU_MEM_MIB, " MiB", &out->mem_mib, err))
            return -1;
        out->ask = GP_ASK_MIB;
    }
    const json_t *c = NULL;
    if (kai_container(pod, cname, init_list, index, &c, err))
        return -1;
    const char *name = json_string_value(json_object_get(c, "name"));
    if (name && strlen(name) >= GP_CTR_NAME_MAX)
        return gp_fail(err, "spec.%s[%zu].name: longer than %d characters",
                       *init_list ? "initContainers" : "containers", *index, GP_CTR_NAME_MAX - 1);
    gp_strlcpy(out->name, name ? name : "", sizeof out->name);
    out->count = (int)count;
    out->core = 0;   /* KAI shares by memory; compute is not divided */
    return 0;
}

/* ------------------------------------------------------- GPU types -- */

static int type_list(const json_t *ann, const char *key, char *dst, gp_err *err)
{
    const char *s;
    if (ann_str(ann, key, &s, err))
        return -1;
    dst[0] = '\0';
    if (!s)
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len >= GP_MODELS_MAX)
        return gp_fail(err, "annotation %s: longer than %d characters", key, GP_MODELS_MAX - 1);
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

int formats_pod_types(const json_t *pod, gp_profile f, gp_pod_req *req, gp_err *err)
{
    req->type_use[0] = req->type_nouse[0] = '\0';
    if (f != GP_PROFILE_HAMI && f != GP_PROFILE_VOLCANO)
        return 0;
    const json_t *ann = pod_annotations(pod);
    if (type_list(ann, TYPE_USE, req->type_use, err) ||
        type_list(ann, TYPE_NOUSE, req->type_nouse, err))
        return -1;
    return 0;
}

/* ------------------------------------------------------ user's terms -- */

/* A ppm share as the shortest decimal: 500000 -> "0.5", 1000000 -> "1". */
static void ppm_text(int32_t ppm, char *buf, size_t len)
{
    if (ppm >= GP_PPM_FULL) {
        snprintf(buf, len, "1");
        return;
    }
    char digits[8];
    snprintf(digits, sizeof digits, "%06d", ppm < 0 ? 0 : ppm);
    size_t n = strlen(digits);
    while (n > 1 && digits[n - 1] == '0')
        n--;
    snprintf(buf, len, "0.%.*s", (int)n, digits);
}

void formats_describe(gp_profile f, const gp_ctr_req *r, const char *model, int64_t need_mib,
                      char *buf, size_t len)
{
    const char *m = model && *model ? model : "GPU of unknown model";
    const res_format *d = res_format_of(f);
    long long need = (long long)need_mib;
    char share[16];
    switch (r->ask) {
    case GP_ASK_FRACTION:
        ppm_text(r->mem_ppm, share, sizeof share);
        snprintf(buf, len, "%s %s of a %s (%lld MiB)", KAI_FRACTION, share, m, need);
        return;
    case GP_ASK_PERCENT:
        snprintf(buf, len, "%s %d of a %s (%lld MiB)", d && d->pct ? d->pct : "memory percentage",
                 r->mem_ppm / (GP_PPM_FULL / 100), m, need);
        return;
    case GP_ASK_SHARE:
        snprintf(buf, len, "a %d.%d%% share of a %s (%lld MiB)", r->mem_ppm / 10000,
                 r->mem_ppm / 1000 % 10, m, need);
        return;
    case GP_ASK_WHOLE:
        if (f == GP_PROFILE_TKE)
            snprintf(buf, len, "%s %d: all of a %s (%lld MiB)", d->core, r->count * TKE_CORE_GPU,
                     m, need);
        else if (d)
            snprintf(buf, len, "%s %d: all the memory of a %s (%lld MiB)",
                     d->count, r->count, m, need);
        else
            snprintf(buf, len, "whole GPU%s: all the memory of a %s (%lld MiB)",
                     r->count > 1 ? "s" : "", m, need);
        return;
    default:
        break;
    }
    if (f == GP_PROFILE_KAI)
        snprintf(buf, len, "%s %lld MiB", KAI_MEMORY, (long long)r->mem_mib);
    else if (f == GP_PROFILE_TKE)
        snprintf(buf, len, "%s %lld (%lld MiB)", d->mem, (long long)(r->mem_mib / TKE_BLOCK_MIB),
                 (long long)r->mem_mib);
    else if (d)
        snprintf(buf, len, "%s %lld MiB", d->mem, (long long)r->mem_mib);
    else
        snprintf(buf, len, "%lld MiB", (long long)r->mem_mib);
}

/* ------------------------------------------------------ annotations -- */

bool formats_annotation_kept(const char *key, size_t len)
{
    for (const char *const *p = extargs_annotation_prefixes; *p; p++) {
        size_t pl = strlen(*p);
        if (len >= pl && memcmp(key, *p, pl) == 0)
            return true;
    }
    return false;
}

/* ---------------------------------------------------------- node side -- */

/* One device plugin's annotations (the ones its scheduler writes at bind). */
typedef struct plugin_keys {
    gp_profile f;
    const char *devices[2];      /* the per-container device lists (same value) */
    const char *node, *time, *bind_time, *bind_phase;
    bool init_first;             /* entries for initContainers, then containers */
    bool trailing;               /* ';' after every entry (HAMi), or between them (Volcano) */
} plugin_keys;

static const plugin_keys plugins[] = {
    /* HAMi: pkg/util/types.go; PatchAnnotations (pkg/device/nvidia/device.go) and
     * EncodePodSingleDevice (pkg/device/devices.go); the scheduler's Bind
     * (pkg/scheduler/scheduler.go) adds bind-phase and bind-time; entries follow
     * Resourcereqs: init containers first */
    {GP_PROFILE_HAMI,
     {"hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-devices-allocated"},
     "hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/bind-time", "hami.io/bind-phase", true,
     true},
    /* Volcano: pkg/scheduler/api/devices/nvidia/vgpu/type.go and Allocate in
     * device_info.go (encodePodDevices joins entries with ';'); the
     * volcano-vgpu-device-plugin maps entry i to spec.containers[i]
     * (GetNextDeviceRequest, pkg/util/util.go) */
    {GP_PROFILE_VOLCANO,
     {"volcano.sh/vgpu-ids-new", "volcano.sh/devices-to-allocate"},
     "volcano.sh/vgpu-node", "volcano.sh/vgpu-time", "volcano.sh/bind-time",
     "volcano.sh/bind-phase", false, false},
};

/* "UUID,NVIDIA,mem,cores:" per GPU of the container named `name`. Returns -1
 * when a GPU's UUID is unknown. */
static int plugin_entry(gp_buf *b, const gp_assignment *a, const gp_node *node, const char *name)
{
    for (int c = 0; c < a->nctrs; c++) {
        const gp_ctr_assign *ca = &a->ctrs[c];
        if (strcmp(ca->name, name) != 0)
            continue;
        for (int g = 0; g < ca->ngpus; g++) {
            int pos = node ? gp_node_gpu_pos(node, ca->gpus[g].index) : -1;
            if (pos < 0 || !node->gpus[pos].info.uuid[0])
                return -1;
            if (gp_buf_printf(b, "%s,NVIDIA,%" PRId64 ",%d:", node->gpus[pos].info.uuid,
                              ca->gpus[g].mem_mib, ca->gpus[g].core / 10))
                return -1;
        }
        return 0;
    }
    return 0;
}

void formats_plugin_annotations(json_t *ann, const json_t *pod, gp_profile f,
                                const gp_assignment *a, const gp_node *node, int64_t now_ns)
{
    const plugin_keys *k = NULL;
    for (size_t i = 0; i < GP_ARRAY_LEN(plugins); i++)
        if (plugins[i].f == f)
            k = &plugins[i];
    if (!k)
        return;
    const char *order[2] = {"initContainers", "containers"};
    if (!k->init_first) {
        order[0] = "containers";
        order[1] = NULL;   /* Volcano's plugin reads spec.containers only */
    }
    gp_buf b;
    gp_buf_init(&b, (size_t)GP_MAX_CTRS * GP_MAX_GPUS_PER_CTR * (GP_UUID_MAX + 48) + 4096);
    int rc = gp_buf_append(&b, "", 0);
    bool first = true;
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < 2 && order[l] && rc == 0; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, order[l]), i, c) {
            if (!k->trailing && !first)
                rc |= gp_buf_append(&b, ";", 1);
            first = false;
            const char *name = json_string_value(json_object_get(c, "name"));
            rc |= plugin_entry(&b, a, node, name ? name : "");
            if (k->trailing)
                rc |= gp_buf_append(&b, ";", 1);
        }
    }
    if (rc == 0) {
        char secs[32];
        snprintf(secs, sizeof secs, "%" PRId64, now_ns / 1000000000);
        for (size_t i = 0; i < GP_ARRAY_LEN(k->devices); i++)
            json_object_set_new(ann, k->devices[i], json_string(b.data));
        json_object_set_new(ann, k->node, json_string(a->node));
        json_object_set_new(ann, k->time, json_string(secs));
        json_object_set_new(ann, k->bind_time, json_string(secs));
        json_object_set_new(ann, k->bind_phase, json_string("allocating"));
    }
    gp_buf_free(&b);
}
