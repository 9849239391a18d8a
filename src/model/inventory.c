/* inventory.c -- a Kubernetes Node (JSON) -> its physical GPUs, from four sources. */
#include "model/inventory.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quantity.h"

#define MAX_DEVICE_INDEX 4096
#define MAX_GPU_MEM_MIB (16LL * 1024 * 1024)   /* 16 TiB: anything above is a typo */

typedef int (*source_fn)(const json_t *node, int64_t unit, gp_inventory *inv, gp_err *err);

static const json_t *meta_get(const json_t *node, const char *section, const char *key)
{
    return json_object_get(json_object_get(json_object_get(node, "metadata"), section), key);
}

static int cmp_index(const void *a, const void *b)
{
    const gp_gpu_info *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Sorts and rejects duplicate indices. */
static int finish(gp_inventory *inv, const char *what, gp_err *err)
{
    qsort(inv->gpus, (size_t)inv->n, sizeof inv->gpus[0], cmp_index);
    for (int i = 1; i < inv->n; i++)
        if (inv->gpus[i].index == inv->gpus[i - 1].index)
            return gp_fail(err, "%s: GPU index %d appears twice", what, inv->gpus[i].index);
    return 0;
}

static int parse_array_annotation(const char *text, const char *what, json_t **out, gp_err *err)
{
    json_error_t je;
    json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!arr)
        return gp_fail(err, "%s: invalid JSON at column %d: %s", what, je.column, je.text);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return gp_fail(err, "%s: must be a JSON array", what);
    }
    if (json_array_size(arr) > GP_MAX_GPUS_PER_NODE) {
        json_decref(arr);
        return gp_fail(err, "%s: more than %d GPUs", what, GP_MAX_GPUS_PER_NODE);
    }
    *out = arr;
    return 0;
}

static int get_str(const json_t *o, const char *key, char *dst, size_t len, const char *what,
                   size_t i, gp_err *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || strlen(json_string_value(v)) >= len)
        return gp_fail(err, "%s[%zu].%s: must be a string of at most %zu characters", what, i, key,
                       len - 1);
    gp_strlcpy(dst, json_string_value(v), len);
    return 0;
}

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *what, size_t i, gp_err *err)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gp_fail(err, "%s[%zu].%s: must be an integer from %lld to %lld", what, i, key,
                       (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* The two JSON-array inventories differ only in their key names: a table. */
typedef struct array_source {
    const char *source;      /* inventory source name */
    const char *annotation;
    const char *index;
    bool index_required;     /* else it defaults to the array position */
    const char *mem;         /* MiB, required */
    const char *core;        /* percent, optional (default 100; 0 means 100) */
    int64_t core_min;
    const char *uuid, *model, *health;
} array_source;

/* 1. gpupack.io/gpus: [{"index":0,"uuid":"GPU-..","model":"..","memoryMiB":40960,"healthy":true}] */
static const array_source gpupack_source = {
    "gpupack", "gpupack.io/gpus", "index", true, "memoryMiB", "core", 1, "uuid", "model", "healthy"};
/* 2. HAMi: hami.io/node-nvidia-register, JSON form:
 *    [{"id":"GPU-..","index":0,"count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-..","health":true}] */
static const array_source hami_source = {
    "hami", "hami.io/node-nvidia-register", "index", false, "devmem", "devcore", 0, "id", "type",
    "health"};

static int src_array(const array_source *src, const json_t *node, gp_inventory *inv, gp_err *err)
{
    char what[96];
    snprintf(what, sizeof what, "annotation %s", src->annotation);
    const json_t *a = meta_get(node, "annotations", src->annotation);
    if (!a)
        return 0;
    if (!json_is_string(a))
        return gp_fail(err, "%s: must be a string", what);
    json_t *arr = NULL;
    if (parse_array_annotation(json_string_value(a), what, &arr, err))
        return -1;
    int rc = -1;
    size_t i;
    json_t *g;
    json_array_foreach(arr, i, g) {
        gp_gpu_info *info = &inv->gpus[inv->n];
        memset(info, 0, sizeof *info);
        int64_t idx = (int64_t)i, mem, core = 100;
        char model[GP_MODEL_MAX] = "";
        if (!json_is_object(g)) {
            gp_fail(err, "%s[%zu]: must be an object", what, i);
            goto out;
        }
        if (((src->index_required || json_object_get(g, src->index)) &&
             get_int(g, src->index, 0, MAX_DEVICE_INDEX, &idx, what, i, err)) ||
            get_int(g, src->mem, 1, MAX_GPU_MEM_MIB, &mem, what, i, err) ||
            (json_object_get(g, src->core) &&
             get_int(g, src->core, src->core_min, 100, &core, what, i, err)) ||
            get_str(g, src->uuid, info->uuid, sizeof info->uuid, what, i, err) ||
            get_str(g, src->model, model, sizeof model, what, i, err))
            goto out;
        const json_t *h = json_object_get(g, src->health);
        if (h && !json_is_boolean(h)) {
            gp_fail(err, "%s[%zu].%s: must be true or false", what, i, src->health);
            goto out;
        }
        info->index = (int)idx;
        info->model = gp_model_intern(model);
        info->mem_total = mem;
        info->core_total = core > 0 ? (int)core * 10 : GP_CORE_FULL;
        info->healthy = h ? json_is_true(h) : true;
        inv->n++;
    }
    rc = finish(inv, what, err);
out:
    json_decref(arr);
    if (rc == 0)
        gp_strlcpy(inv->source, src->source, sizeof inv->source);
    return rc;
}

static int src_gpupack(const json_t *node, int64_t unit, gp_inventory *inv, gp_err *err)
{
    return src_array(&gpupack_source, node, inv, err);
}

static int src_hami(const json_t *node, int64_t unit, gp_inventory *inv, gp_err *err)
{
    return src_array(&hami_source, node, inv, err);
}

static int label_int(const json_t *v, const char *what, int64_t lo, int64_t hi, int64_t *out,
                     gp_err *err)
{
    gp_err e;
    if (!json_is_string(v))
        return gp_fail(err, "%s: must be a string", what);
    if (quantity_parse_int(json_string_value(v), out, &e))
        return gp_fail(err, "%s: %s", what, e.msg);
    if (*out < lo || *out > hi)
        return gp_fail(err, "%s: %lld is out of range %lld..%lld", what, (long long)*out,
                       (long long)lo, (long long)hi);
    return 0;
}

static void fill_even(gp_inventory *inv, int n, int64_t mem, const char *model)
{
    for (int i = 0; i < n; i++) {
        gp_gpu_info *info = &inv->gpus[i];
        memset(info, 0, sizeof *info);
        info->index = i;
        info->mem_total = mem;
        info->core_total = GP_CORE_FULL;
        info->healthy = true;
        info->model = gp_model_intern(model);
    }
    inv->n = n;
}

/* 3. GPU feature discovery labels. */
static int src_gfd(const json_t *node, int64_t unit, gp_inventory *inv, gp_err *err)
{
    const json_t *count = meta_get(node, "labels", "nvidia.com/gpu.count");
    const json_t *mem = meta_get(node, "labels", "nvidia.com/gpu.memory");
    if (!count || !mem)
        return 0;
    int64_t n, m;
    if (label_int(count, "label nvidia.com/gpu.count", 0, GP_MAX_GPUS_PER_NODE, &n, err) ||
        label_int(mem, "label nvidia.com/gpu.memory", 1, MAX_GPU_MEM_MIB, &m, err))
        return -1;
    const json_t *prod = meta_get(node, "labels", "nvidia.com/gpu.product");
    fill_even(inv, (int)n, m, json_is_string(prod) ? json_string_value(prod) : "");
    gp_strlcpy(inv->source, "gfd", sizeof inv->source);
    return 0;
}

/* 4. aliyun gpushare device plugin capacity: total memory split evenly. */
static int src_aliyun(const json_t *node, int64_t unit, gp_inventory *inv, gp_err *err)
{
    const json_t *cap = json_object_get(json_object_get(node, "status"), "capacity");
    const json_t *count = json_object_get(cap, "aliyun.com/gpu-count");
    const json_t *mem = json_object_get(cap, "aliyun.com/gpu-mem");
    if (!count || !mem)
        return 0;
    int64_t n, m;
    if (label_int(count, "capacity aliyun.com/gpu-count", 0, GP_MAX_GPUS_PER_NODE, &n, err) ||
        label_int(mem, "capacity aliyun.com/gpu-mem", 0, MAX_GPU_MEM_MIB, &m, err))
        return -1;
    if (n > 0 && m / n * unit > MAX_GPU_MEM_MIB)
        return gp_fail(err, "capacity aliyun.com/gpu-mem: %lld is out of range", (long long)m);
    if (n > 0 && m / n == 0)
        return gp_fail(err, "capacity aliyun.com/gpu-mem: %lld split over %lld GPUs is nothing",
                       (long long)m, (long long)n);
    fill_even(inv, (int)n, n ? m / n * unit : 0, "");
    gp_strlcpy(inv->source, "aliyun", sizeof inv->source);
    return 0;
}

static const source_fn sources[] = {src_gpupack, src_hami, src_gfd, src_aliyun};

/* status.allocatable[name] in thousandths, 0 when absent or malformed. */
static int64_t allocatable_milli(const json_t *node, const char *name)
{
    const json_t *v =
        json_object_get(json_object_get(json_object_get(node, "status"), "allocatable"), name);
    int64_t m = 0;
    if (!json_is_string(v) || quantity_parse_milli(json_string_value(v), &m, NULL) != 0 || m < 0)
        return 0;
    return m;
}

int inventory_decode(const json_t *node, int64_t aliyun_unit_mib, gp_inventory *inv, gp_err *err)
{
    memset(inv, 0, sizeof *inv);
    if (!json_is_object(node))
        return gp_fail(err, "Node: must be an object");
    /* host resources, for strategies that weigh CPU (fragmentation-aware) */
    inv->cpu_alloc_milli = allocatable_milli(node, "cpu");
    inv->mem_alloc_mib = allocatable_milli(node, "memory") / 1000 / (1024 * 1024);
    for (size_t i = 0; i < GP_ARRAY_LEN(sources); i++) {
        int rc = sources[i](node, aliyun_unit_mib > 0 ? aliyun_unit_mib : 1024, inv, err);
        if (rc < 0) {
            inv->n = 0;
            inv->source[0] = '\0';
            return -1;
        }
        if (inv->source[0])
            return 0;
    }
    return 0;
}

const char *inventory_node_name(const json_t *node)
{
    const json_t *n = json_object_get(json_object_get(node, "metadata"), "name");
    return json_is_string(n) ? json_string_value(n) : NULL;
}
