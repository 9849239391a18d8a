/* dra.c -- Dynamic Resource Allocation objects (resource.k8s.io/v1) -> gpupack's structs.
 *
 * Every member read is checked: absent or null takes the default, a wrong
 * type, a string longer than its field, a list past its *_MAX and a
 * malformed quantity refuse the object with a message naming the member
 * ("ResourceSlice node-1-gpu: spec.devices[2].capacity["memory"].value:
 * quantity "80Gx" has an unknown suffix "Gx""), and the decoder frees what it
 * allocated and zeroes its output. Members gpupack does not read are not
 * looked at. Quantities are parsed by quantity_parse_units: whole units,
 * saturating at INT64_MAX. */
#include "model/dra.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/quantity.h"

__extension__ typedef __int128 i128;

#define MIB (INT64_C(1) << 20)
#define WHERE_MAX 192                /* a member's path in a message */
#define CEL_MAX (10 * 1024)          /* a selector's expression (the API allows 10 KiB) */
#define CEL_DEPTH 16                 /* parentheses around && conjuncts gpupack looks into */
#define SELECTORS_MAX 32             /* CEL selectors of a class or a request (the API allows 32) */

/* ----------------------------------------------------------- drivers --- */

/* NVIDIA's k8s-dra-driver-gpu (github.com/NVIDIA/k8s-dra-driver-gpu at
 * 22407113785e): DriverName "gpu.nvidia.com" (cmd/gpu-kubelet-plugin/main.go);
 * GpuInfo.Attributes() publishes "type" = GpuDeviceType "gpu" (types.go; MIG
 * devices are "mig", passthrough "vfio"), "uuid", "productName"
 * (deviceinfo.go); fullGpuCapacity() the capacity "memory" in bytes
 * (partitions.go). No compute capacity: a device is a whole GPU or a MIG slice.
 *
 * HAMi's DRA driver (github.com/Project-HAMi/k8s-dra-driver at ebeaad97463a):
 * DriverName "hami-core-gpu.project-hami.io" (cmd/hami-kubelet-plugin/main.go);
 * HAMiGpuInfo.GetDevice() publishes "type" = HAMiGpuDeviceType "hami-gpu",
 * "uuid", "productName", consumable capacities "memory" (bytes) and "cores"
 * (100 = the whole GPU, requestPolicy 0..100 step 1) and
 * allowMultipleAllocations (hami_core.go). */
static const gp_dra_driver default_drivers[] = {
    {.driver = "gpu.nvidia.com",
     .type_attr = "type",
     .type_value = "gpu",
     .uuid_attr = "uuid",
     .model_attr = "productName",
     .mem_capacity = "memory"},
    {.driver = "hami-core-gpu.project-hami.io",
     .type_attr = "type",
     .type_value = "hami-gpu",
     .uuid_attr = "uuid",
     .model_attr = "productName",
     .mem_capacity = "memory",
     .core_capacity = "cores",
     .core_full = 100},
};

void dra_default_drivers(gp_dra_drivers *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < GP_ARRAY_LEN(default_drivers); i++)
        out->d[out->n++] = default_drivers[i];
}

const gp_dra_driver *dra_driver_find(const gp_dra_drivers *t, const char *driver)
{
    if (!t || !driver)
        return NULL;
    for (int i = 0; i < t->n && i < GP_DRA_DRIVERS_MAX; i++)
        if (strcmp(t->d[i].driver, driver) == 0)
            return &t->d[i];
    return NULL;
}

/* ------------------------------------------------------ JSON members --- */

/* "WHERE.KEY" into buf ("KEY" at the top, where ""). */
static const char *path(char buf[WHERE_MAX], const char *where, const char *key)
{
    snprintf(buf, WHERE_MAX, "%s%s%s", where, where[0] ? "." : "", key);
    return buf;
}

/* Fails with "WHERE.KEY: message". */
GP_PRINTF(4, 5)
static int fail_at(gp_err *err, const char *where, const char *key, const char *fmt, ...)
{
    char m[sizeof err->msg], at[WHERE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return gp_fail(err, "%s: %s", path(at, where, key), m);
}

/* Formats a member's path into buf (truncated past WHERE_MAX: it is for messages). */
GP_PRINTF(2, 3)
static const char *pathf(char buf[WHERE_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, WHERE_MAX, fmt, ap);
    va_end(ap);
    return buf;
}

/* Member key of o, NULL when absent or null. */
static const json_t *member(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

/* Copies string member key of o into dst ("" when absent). */
static int get_str(const json_t *o, const char *key, char *dst, size_t size, const char *where,
                   gp_err *err)
{
    dst[0] = '\0';
    const json_t *v = member(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return fail_at(err, where, key, "must be a string");
    size_t len = json_string_length(v);
    if (len >= size)
        return fail_at(err, where, key, "%zu characters, more than %zu", len, size - 1);
    if (strlen(json_string_value(v)) != len)
        return fail_at(err, where, key, "holds a NUL character");
    memcpy(dst, json_string_value(v), len + 1);
    return 0;
}

/* get_str for a member that must be there and not empty. */
static int need_str(const json_t *o, const char *key, char *dst, size_t size, const char *where,
                    gp_err *err)
{
    if (get_str(o, key, dst, size, where, err))
        return -1;
    return dst[0] ? 0 : fail_at(err, where, key, "missing");
}

static int get_bool(const json_t *o, const char *key, bool *out, const char *where, gp_err *err)
{
    const json_t *v = member(o, key);
    *out = false;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return fail_at(err, where, key, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

/* Integer member in [lo, hi]; *out keeps its value when absent. */
static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *where, gp_err *err)
{
    const json_t *v = member(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail_at(err, where, key, "must be an integer from %lld to %lld", (long long)lo,
                       (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* Object member (NULL when absent). */
static int get_obj(const json_t *o, const char *key, const json_t **out, const char *where,
                   gp_err *err)
{
    *out = member(o, key);
    if (*out && !json_is_object(*out))
        return fail_at(err, where, key, "must be an object");
    return 0;
}

/* Array member of at most max entries (NULL when absent; *n its size). */
static int get_arr(const json_t *o, const char *key, size_t max, const json_t **out, size_t *n,
                   const char *where, gp_err *err)
{
    *out = member(o, key);
    *n = 0;
    if (!*out)
        return 0;
    if (!json_is_array(*out))
        return fail_at(err, where, key, "must be a list");
    *n = json_array_size(*out);
    if (*n > max)
        return fail_at(err, where, key, "%zu entries, more than %zu", *n, max);
    return 0;
}

/* A quantity (string, or a JSON integer) in its own unit, not negative;
 * saturates at INT64_MAX. */
static int qty(const json_t *v, const char *where, int64_t *out, gp_err *err)
{
    if (!v || json_is_null(v))
        return gp_fail(err, "%s: missing", where);
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else if (json_is_string(v)) {
        gp_err e;
        if (quantity_parse_units(json_string_value(v), out, &e))
            return gp_fail(err, "%s: %s", where, e.msg);
    } else {
        return gp_fail(err, "%s: must be a quantity string", where);
    }
    if (*out < 0)
        return gp_fail(err, "%s: negative quantity", where);
    return 0;
}

/* Optional quantity member: *present says whether it was there. */
static int opt_qty(const json_t *o, const char *key, bool *present, int64_t *out,
                   const char *where, gp_err *err)
{
    const json_t *v = member(o, key);
    *present = v != NULL;
    if (!v)
        return 0;
    char w[WHERE_MAX];
    return qty(v, path(w, where, key), out, err);
}

static int64_t mib_down(int64_t bytes)
{
    return bytes / MIB;
}

/* Rounds up: a nonzero amount never reads as 0 ("not set"). */
static int64_t mib_up(int64_t bytes)
{
    return bytes / MIB + (bytes % MIB != 0);
}

/* A name (object key) copied into a GP_DRA_NAME_MAX field. */
static int copy_key(char dst[GP_DRA_NAME_MAX], const char *key, const char *where, gp_err *err)
{
    size_t len = strlen(key);
    if (len >= GP_DRA_NAME_MAX)
        return gp_fail(err, "%s: name \"%.64s...\" has %zu characters, more than %d", where, key,
                       len, GP_DRA_NAME_MAX - 1);
    memcpy(dst, key, len + 1);
    return 0;
}

/* Counters: an object NAME -> quantity (capacity.requests, consumedCapacity)
 * or NAME -> {value: quantity} (wrapped: counter sets). */
static int get_counters(const json_t *o, const char *key, bool wrapped, int max,
                        gp_dra_counter *c, int *n, const char *where, gp_err *err)
{
    const json_t *obj;
    *n = 0;
    if (get_obj(o, key, &obj, where, err))
        return -1;
    if (!obj)
        return 0;
    if (json_object_size(obj) > (size_t)max)
        return fail_at(err, where, key, "%zu entries, more than %d", json_object_size(obj), max);
    const char *name;
    json_t *v;
    char at[WHERE_MAX];
    path(at, where, key);
    json_object_foreach((json_t *)obj, name, v) {
        char w[WHERE_MAX];
        if (copy_key(c[*n].name, name, at, err))
            return -1;
        pathf(w, "%s[\"%s\"]", at, c[*n].name);
        if (wrapped) {
            if (!json_is_object(v))
                return gp_fail(err, "%s: must be an object", w);
            size_t len = strlen(w);
            snprintf(w + len, sizeof w - len, ".value");
            v = json_object_get(v, "value");
        }
        if (qty(v, w, &c[*n].value, err))
            return -1;
        (*n)++;
    }
    return 0;
}

/* A counter set: {NAMEKEY: "...", counters: {...}}. */
static int get_counter_set(const json_t *o, const char *namekey, gp_dra_counter_set *cs,
                           const char *where, gp_err *err)
{
    if (!json_is_object(o))
        return gp_fail(err, "%s: must be an object", where);
    if (need_str(o, namekey, cs->name, sizeof cs->name, where, err))
        return -1;
    return get_counters(o, "counters", true, GP_DRA_COUNTERS_MAX, cs->c, &cs->n, where, err);
}

/* Prefixes the message with the object it is about. */
static int in_object(gp_err *err, const char *kind, const char *name)
{
    if (err) {
        char m[sizeof err->msg];
        memcpy(m, err->msg, sizeof m);
        m[sizeof m - 1] = '\0';
        gp_fail(err, "%s%s%.253s: %s", kind, name[0] ? " " : "", name, m);
    }
    return -1;
}

/* metadata: name (required), uid (required when uid != NULL), namespace and
 * resourceVersion (when asked). */
static int get_meta(const json_t *obj, const char *kind, char name[GP_NAME_MAX], char *uid,
                    char *ns, char rv[32], gp_err *err)
{
    const json_t *md;
    if (!json_is_object(obj))
        return gp_fail(err, "%s: must be a JSON object", kind);
    if (get_obj(obj, "metadata", &md, "", err) ||
        need_str(md, "name", name, GP_NAME_MAX, "metadata", err) ||
        (uid && need_str(md, "uid", uid, GP_UID_MAX, "metadata", err)) ||
        (ns && get_str(md, "namespace", ns, GP_NAME_MAX, "metadata", err)) ||
        (rv && get_str(md, "resourceVersion", rv, 32, "metadata", err)))
        return in_object(err, kind, "");
    return 0;
}

/* ----------------------------------------------------- ResourceSlice --- */

/* Member `name` of a device's attributes or capacity: as written, and plain
 * names also qualified by the driver's domain, qualified ones by the driver's
 * domain also plain ("uuid" == "gpu.nvidia.com/uuid"). */
static const json_t *named(const json_t *o, const char *driver, const char *name)
{
    if (!o || !name[0])
        return NULL;
    const json_t *v = member(o, name);
    if (v)
        return v;
    size_t dl = strlen(driver);
    if (strncmp(name, driver, dl) == 0 && name[dl] == '/')
        return member(o, name + dl + 1);
    if (strchr(name, '/'))
        return NULL;
    char q[GP_DRA_DRIVER_MAX + GP_DRA_NAME_MAX + 1];
    snprintf(q, sizeof q, "%s/%s", driver, name);
    return member(o, q);
}

/* A string attribute ({"string": "..."}); "" when absent or of another type. */
static int attr_str(const json_t *attrs, const char *driver, const char *name, char *dst,
                    size_t size, const char *where, gp_err *err)
{
    dst[0] = '\0';
    const json_t *a = named(attrs, driver, name);
    if (!a)
        return 0;
    char w[WHERE_MAX];
    pathf(w, "%s.attributes[\"%s\"]", where, name);
    if (!json_is_object(a))
        return gp_fail(err, "%s: must be an object", w);
    return get_str(a, "string", dst, size, w, err);
}

/* The memory capacity's requestPolicy, in MiB. */
static int get_policy(const json_t *cap, gp_dra_device *dev, const char *where, gp_err *err)
{
    const json_t *pol, *range, *vals;
    size_t n;
    bool set;
    int64_t v;
    if (get_obj(cap, "requestPolicy", &pol, where, err))
        return -1;
    if (!pol)
        return 0;
    char w[WHERE_MAX];
    pathf(w, "%s.requestPolicy", where);
    if (opt_qty(pol, "default", &set, &v, w, err))
        return -1;
    dev->mem_default_mib = set ? mib_up(v) : 0;
    if (get_obj(pol, "validRange", &range, w, err))
        return -1;
    if (range) {
        char wr[WHERE_MAX];
        pathf(wr, "%s.validRange", w);
        if (opt_qty(range, "min", &set, &v, wr, err))
            return -1;
        dev->mem_min_mib = set ? mib_up(v) : 0;
        if (opt_qty(range, "max", &set, &v, wr, err))
            return -1;
        dev->mem_max_mib = set ? mib_down(v) : 0;
        if (opt_qty(range, "step", &set, &v, wr, err))
            return -1;
        dev->mem_step_mib = set ? mib_up(v) : 0;
    }
    if (get_arr(pol, "validValues", GP_DRA_VALUES_MAX, &vals, &n, w, err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        char wv[WHERE_MAX];
        pathf(wv, "%s.validValues[%zu]", w, i);
        if (qty(json_array_get(vals, i), wv, &v, err))
            return -1;
        /* sorted by insertion: at most GP_DRA_VALUES_MAX values */
        int64_t mib = mib_up(v);
        int k = dev->nvalues++;
        for (; k > 0 && dev->mem_values_mib[k - 1] > mib; k--)
            dev->mem_values_mib[k] = dev->mem_values_mib[k - 1];
        dev->mem_values_mib[k] = mib;
    }
    return 0;
}

/* What the driver table says about a device: GPU or not, UUID, model,
 * memory and compute. */
static int device_by_table(const json_t *d, const char *driver, const gp_dra_driver *drv,
                           gp_dra_device *dev, const char *where, gp_err *err)
{
    const json_t *attrs, *caps, *cap;
    char type[GP_DRA_DRIVER_MAX + GP_DRA_NAME_MAX];   /* not kept: any API length */
    char w[WHERE_MAX];
    int64_t v;
    if (get_obj(d, "attributes", &attrs, where, err) || get_obj(d, "capacity", &caps, where, err))
        return -1;
    if (attr_str(attrs, driver, drv->type_attr, type, sizeof type, where, err) ||
        attr_str(attrs, driver, drv->uuid_attr, dev->uuid, sizeof dev->uuid, where, err) ||
        attr_str(attrs, driver, drv->model_attr, dev->model, sizeof dev->model, where, err))
        return -1;
    dev->gpu = !drv->type_attr[0] || strcmp(type, drv->type_value) == 0;
    cap = named(caps, driver, drv->mem_capacity);
    if (cap) {
        pathf(w, "%s.capacity[\"%s\"]", where, drv->mem_capacity);
        if (!json_is_object(cap))
            return gp_fail(err, "%s: must be an object", w);
        size_t len = strlen(w);
        snprintf(w + len, sizeof w - len, ".value");
        if (qty(json_object_get(cap, "value"), w, &v, err))
            return -1;
        dev->mem_mib = mib_down(v);
        w[len] = '\0';
        if (get_policy(cap, dev, w, err))
            return -1;
    }
    cap = drv->core_full > 0 ? named(caps, driver, drv->core_capacity) : NULL;
    if (cap) {
        pathf(w, "%s.capacity[\"%s\"].value", where, drv->core_capacity);
        if (!json_is_object(cap))
            return gp_fail(err, "%s: must be an object", w);
        if (qty(json_object_get(cap, "value"), w, &v, err))
            return -1;
        if (v > drv->core_full)
            return gp_fail(err, "%s: %lld is more than a whole GPU (%lld)", w, (long long)v,
                           (long long)drv->core_full);
        dev->core = (int)((i128)v * GP_CORE_FULL / drv->core_full);
    }
    return 0;
}

static int get_device(const json_t *d, const char *driver, const gp_dra_driver *drv,
                      gp_dra_device *dev, const char *where, gp_err *err)
{
    const json_t *cons;
    size_t n;
    if (!json_is_object(d))
        return gp_fail(err, "%s: must be an object", where);
    if (need_str(d, "name", dev->name, sizeof dev->name, where, err))
        return -1;
    dev->core = GP_CORE_FULL;
    if (drv && device_by_table(d, driver, drv, dev, where, err))
        return -1;
    if (get_bool(d, "allowMultipleAllocations", &dev->multi, where, err) ||
        get_str(d, "nodeName", dev->node, sizeof dev->node, where, err) ||
        get_arr(d, "consumesCounters", GP_DRA_COUNTER_SETS_MAX, &cons, &n, where, err))
        return -1;
    if (n) {
        dev->cons = xcalloc(n, sizeof *dev->cons);
        dev->ncons = (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        char w[WHERE_MAX];
        pathf(w, "%s.consumesCounters[%zu]", where, i);
        if (get_counter_set(json_array_get(cons, i), "counterSet", &dev->cons[i], w, err))
            return -1;
    }
    return 0;
}

static int slice_spec(const json_t *obj, const gp_dra_drivers *t, gp_dra_slice *out, gp_err *err)
{
    const json_t *spec, *pool, *sel, *devs, *shared;
    size_t n;
    int64_t v;
    if (get_obj(obj, "spec", &spec, "", err) ||
        need_str(spec, "driver", out->driver, sizeof out->driver, "spec", err) ||
        get_obj(spec, "pool", &pool, "spec", err) ||
        get_str(pool, "name", out->pool, sizeof out->pool, "spec.pool", err) ||
        get_int(pool, "generation", 0, INT64_MAX, &out->pool_generation, "spec.pool", err))
        return -1;
    v = 0;
    if (get_int(pool, "resourceSliceCount", 0, INT32_MAX, &v, "spec.pool", err) ||
        get_str(spec, "nodeName", out->node, sizeof out->node, "spec", err) ||
        get_bool(spec, "allNodes", &out->all_nodes, "spec", err) ||
        get_obj(spec, "nodeSelector", &sel, "spec", err))
        return -1;
    out->pool_slices = (int)v;
    out->all_nodes |= sel != NULL;
    const gp_dra_driver *drv = dra_driver_find(t, out->driver);
    if (get_arr(spec, "devices", GP_DRA_DEVICES_MAX, &devs, &n, "spec", err))
        return -1;
    if (n) {
        out->devices = xcalloc(n, sizeof *out->devices);
        out->ndevices = (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        char w[WHERE_MAX];
        pathf(w, "spec.devices[%zu]", i);
        if (get_device(json_array_get(devs, i), out->driver, drv, &out->devices[i], w, err))
            return -1;
    }
    if (get_arr(spec, "sharedCounters", GP_DRA_COUNTER_SETS_MAX, &shared, &n, "spec", err))
        return -1;
    if (n) {
        out->shared = xcalloc(n, sizeof *out->shared);
        out->nshared = (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        char w[WHERE_MAX];
        pathf(w, "spec.sharedCounters[%zu]", i);
        if (get_counter_set(json_array_get(shared, i), "name", &out->shared[i], w, err))
            return -1;
    }
    return 0;
}

int dra_slice_decode(const json_t *obj, const gp_dra_drivers *t, gp_dra_slice *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (get_meta(obj, "ResourceSlice", out->name, out->uid, NULL, out->rv, err)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (slice_spec(obj, t, out, err)) {
        char name[GP_NAME_MAX];
        memcpy(name, out->name, sizeof name);
        dra_slice_free(out);
        return in_object(err, "ResourceSlice", name);
    }
    return 0;
}

void dra_slice_free(gp_dra_slice *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ndevices && s->devices; i++)
        free(s->devices[i].cons);
    free(s->devices);
    free(s->shared);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------- DeviceClass --- */

/* The CEL gpupack reads: an expression that is a conjunction (&&, at the top
 * level or inside parentheses) of parts, of which it recognizes two forms:
 *   device.driver == "X"                       (the driver test)
 *   device.attributes["D"].NAME == "V"         (a string-attribute test)
 * either side of the ==, single or double quotes, no escapes in the literal.
 * Every other part -- and a whole expression with a top-level || or ?:, or one
 * it cannot scan (unbalanced, triple-quoted strings) -- is "other": gpupack
 * cannot evaluate it and says so in other_selectors. It is not a CEL parser:
 * `device . driver`, `device.attributes["D"]["NAME"]` or `"X" == (device.driver)`
 * read as other. */
typedef struct span {
    const char *p;
    size_t n;
} span;

typedef struct cel_result {
    char driver[GP_DRA_DRIVER_MAX];
    bool conflict;                    /* two different driver tests */
    char attr[GP_DRA_DRIVER_MAX + GP_DRA_NAME_MAX];
    char attr_value[GP_DRA_NAME_MAX];
    bool other;
} cel_result;

static span trim(span s)
{
    while (s.n && (*s.p == ' ' || *s.p == '\t' || *s.p == '\n' || *s.p == '\r')) {
        s.p++;
        s.n--;
    }
    while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\n' ||
                   s.p[s.n - 1] == '\r'))
        s.n--;
    return s;
}

/* Length of the string literal at the start of s (quote to quote, escapes
 * skipped), 0 when s does not start one or it does not end. */
static size_t literal_len(span s)
{
    if (!s.n || (s.p[0] != '"' && s.p[0] != '\''))
        return 0;
    for (size_t i = 1; i < s.n; i++) {
        if (s.p[i] == '\\')
            i++;
        else if (s.p[i] == s.p[0])
            return i + 1;
    }
    return 0;
}

/* Scans all of s, outside literals: the offset of its first top-level `op`
 * ("&&" or "=="; s.n when none), and how many there are. Returns false when
 * s does not scan (an unbalanced bracket or quote, a triple-quoted string) or
 * has a top-level `||` or `?` -- then it is no conjunction of tests. */
static bool scan(span s, const char *op, size_t *first, int *count)
{
    int depth = 0;
    *first = s.n;
    *count = 0;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i], d = i + 1 < s.n ? s.p[i + 1] : '\0';
        if (c == '"' || c == '\'') {
            size_t l = literal_len((span){s.p + i, s.n - i});
            if (!l || (l == 2 && i + 2 < s.n && s.p[i + 2] == c))   /* a triple quote */
                return false;
            i += l - 1;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if (c == ')' || c == ']' || c == '}') {
            if (--depth < 0)
                return false;
        } else if (depth == 0 && (c == '?' || (c == '|' && d == '|'))) {
            return false;
        } else if (depth == 0 && c == op[0] && d == op[1]) {
            if (!(*count)++)
                *first = i;
            i++;
        }
    }
    return depth == 0;
}

/* s, without parentheses that enclose all of it. */
static span unparen(span s)
{
    for (int k = 0; k < CEL_DEPTH && s.n >= 2 && s.p[0] == '(' && s.p[s.n - 1] == ')'; k++) {
        span in = {s.p + 1, s.n - 2};
        size_t at;
        int count;
        /* "(a) && (b)": the first ( closes early, and the inside does not scan */
        if (!scan(in, "&&", &at, &count))
            return s;
        s = trim(in);
    }
    return s;
}

static bool span_is(span s, const char *word)
{
    return s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

/* s is exactly a literal without escapes: its text. */
static bool plain_literal(span s, span *text)
{
    if (s.n < 2 || literal_len(s) != s.n || memchr(s.p, '\\', s.n))
        return false;
    *text = (span){s.p + 1, s.n - 2};
    return true;
}

/* s is `device.attributes["D"].NAME`: *name gets "D/NAME". */
static bool attr_ref(span s, char *name, size_t size)
{
    static const char head[] = "device.attributes[";
    size_t hl = sizeof head - 1;
    if (s.n <= hl || memcmp(s.p, head, hl) != 0)
        return false;
    span rest = {s.p + hl, s.n - hl}, dom;
    size_t l = literal_len(rest);
    if (!l || !plain_literal((span){rest.p, l}, &dom) || l + 2 > rest.n || rest.p[l] != ']' ||
        rest.p[l + 1] != '.')
        return false;
    span id = {rest.p + l + 2, rest.n - l - 2};
    if (!id.n)
        return false;
    for (size_t i = 0; i < id.n; i++) {
        char c = id.p[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i && c >= '0' && c <= '9'))
            return false;
    }
    if (dom.n + 1 + id.n >= size)
        return false;
    snprintf(name, size, "%.*s/%.*s", (int)dom.n, dom.p, (int)id.n, id.p);
    return true;
}

/* Copies a literal's text into a field, refusing what does not fit. */
static int copy_lit(char *dst, size_t size, span lit, const char *what, const char *where,
                    gp_err *err)
{
    if (lit.n >= size)
        return gp_fail(err, "%s: %s \"%.*s...\" has %zu characters, more than %zu", where, what,
                       (int)(lit.n > 64 ? 64 : lit.n), lit.p, lit.n, size - 1);
    memcpy(dst, lit.p, lit.n);
    dst[lit.n] = '\0';
    return 0;
}

/* One conjunct: the driver test, an attribute test, or other. */
static int cel_part(span s, cel_result *r, const char *where, gp_err *err)
{
    size_t eq;
    int count;
    span lit;
    if (!scan(s, "==", &eq, &count) || count != 1) {
        r->other = true;
        return 0;
    }
    span lhs = trim((span){s.p, eq}), rhs = trim((span){s.p + eq + 2, s.n - eq - 2});
    if (!plain_literal(rhs, &lit)) {     /* "X" == device.driver */
        span tmp = lhs;
        lhs = rhs;
        rhs = tmp;
        if (!plain_literal(rhs, &lit)) {
            r->other = true;
            return 0;
        }
    }
    char attr[GP_DRA_DRIVER_MAX + GP_DRA_NAME_MAX], value[GP_DRA_NAME_MAX];
    if (span_is(lhs, "device.driver")) {
        if (r->driver[0] && !span_is(lit, r->driver))
            r->conflict = true;
        else if (copy_lit(r->driver, sizeof r->driver, lit, "driver", where, err))
            return -1;
    } else if (attr_ref(lhs, attr, sizeof attr)) {
        if (copy_lit(value, sizeof value, lit, "attribute value", where, err))
            return -1;
        if (!r->attr[0]) {
            memcpy(r->attr, attr, sizeof r->attr);
            memcpy(r->attr_value, value, sizeof r->attr_value);
        } else if (strcmp(r->attr, attr) != 0 || strcmp(r->attr_value, value) != 0) {
            r->other = true;
        }
    } else {
        r->other = true;
    }
    return 0;
}

/* An expression (or a parenthesized part of one): its && conjuncts. */
static int cel_expr(span s, int depth, cel_result *r, const char *where, gp_err *err)
{
    size_t at;
    int count;
    s = unparen(trim(s));
    if (!scan(s, "&&", &at, &count) || depth > CEL_DEPTH) {
        r->other = true;
        return 0;
    }
    if (!count)
        return cel_part(s, r, where, err);
    for (;;) {
        if (cel_expr((span){s.p, at}, depth + 1, r, where, err))
            return -1;
        if (at == s.n)
            return 0;
        s = (span){s.p + at + 2, s.n - at - 2};
        if (!scan(s, "&&", &at, &count))   /* cannot fail: the rest of a span that scanned */
            at = s.n;
    }
}

static int class_spec(const json_t *obj, gp_dra_class *out, gp_err *err)
{
    const json_t *spec, *sels;
    size_t n;
    cel_result r;
    memset(&r, 0, sizeof r);
    if (get_obj(obj, "spec", &spec, "", err) ||
        get_str(spec, "extendedResourceName", out->extended_resource,
                sizeof out->extended_resource, "spec", err) ||
        get_arr(spec, "selectors", SELECTORS_MAX, &sels, &n, "spec", err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *sel = json_array_get(sels, i), *cel;
        char w[WHERE_MAX];
        pathf(w, "spec.selectors[%zu]", i);
        if (!json_is_object(sel))
            return gp_fail(err, "%s: must be an object", w);
        if (get_obj(sel, "cel", &cel, w, err))
            return -1;
        const json_t *ex = member(cel, "expression");
        size_t len = strlen(w);
        snprintf(w + len, sizeof w - len, ".cel.expression");
        if (!cel) {
            r.other = true;            /* a selector kind gpupack does not know */
            continue;
        }
        if (!json_is_string(ex))
            return gp_fail(err, "%s: must be a string", w);
        if (json_string_length(ex) > CEL_MAX)
            return gp_fail(err, "%s: %zu characters, more than %d", w, json_string_length(ex),
                           CEL_MAX);
        if (cel_expr((span){json_string_value(ex), json_string_length(ex)}, 0, &r, w, err))
            return -1;
    }
    if (r.conflict) {                  /* no device passes: say so, pin nothing */
        r.driver[0] = '\0';
        r.other = true;
    }
    memcpy(out->driver, r.driver, sizeof out->driver);
    memcpy(out->attr, r.attr, sizeof out->attr);
    memcpy(out->attr_value, r.attr_value, sizeof out->attr_value);
    out->other_selectors = r.other;
    return 0;
}

int dra_class_decode(const json_t *obj, gp_dra_class *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (get_meta(obj, "DeviceClass", out->name, NULL, NULL, NULL, err)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (class_spec(obj, out, err)) {
        char name[GP_NAME_MAX];
        memcpy(name, out->name, sizeof name);
        memset(out, 0, sizeof *out);
        return in_object(err, "DeviceClass", name);
    }
    return 0;
}

/* ----------------------------------------------------- ResourceClaim --- */

/* `exactly`, or one entry of firstAvailable, into q (all but its name). */
static int get_subrequest(const json_t *r, gp_dra_request *q, const char *where, gp_err *err)
{
    const json_t *sels, *cap;
    size_t n;
    char mode[16];
    int64_t count = 1;
    if (!json_is_object(r))
        return gp_fail(err, "%s: must be an object", where);
    if (need_str(r, "deviceClassName", q->cls, sizeof q->cls, where, err) ||
        get_arr(r, "selectors", SELECTORS_MAX, &sels, &n, where, err) ||
        get_str(r, "allocationMode", mode, sizeof mode, where, err) ||
        get_bool(r, "adminAccess", &q->admin, where, err) ||
        get_obj(r, "capacity", &cap, where, err))
        return -1;
    q->selectors = n > 0;
    if (strcmp(mode, "All") == 0) {
        q->all = true;
        q->count = 0;
    } else if (!mode[0] || strcmp(mode, "ExactCount") == 0) {
        if (get_int(r, "count", 1, GP_DRA_RESULTS_MAX, &count, where, err))
            return -1;
        q->count = (int)count;
    } else {
        return gp_fail(err, "%s.allocationMode: \"%s\" is neither ExactCount nor All", where, mode);
    }
    char w[WHERE_MAX];
    pathf(w, "%s.capacity", where);
    return get_counters(cap, "requests", false, GP_DRA_CAPS_MAX, q->cap, &q->ncap, w, err);
}

static int get_request(const json_t *r, gp_dra_request *q, const char *where, gp_err *err)
{
    const json_t *exactly, *alts;
    size_t n;
    char w[WHERE_MAX];
    if (!json_is_object(r))
        return gp_fail(err, "%s: must be an object", where);
    if (need_str(r, "name", q->name, sizeof q->name, where, err) ||
        get_obj(r, "exactly", &exactly, where, err) ||
        get_arr(r, "firstAvailable", GP_DRA_ALTS_MAX, &alts, &n, where, err))
        return -1;
    if (exactly && alts)
        return gp_fail(err, "%s: both exactly and firstAvailable", where);
    if (exactly) {
        pathf(w, "%s.exactly", where);
        return get_subrequest(exactly, q, w, err);
    }
    if (!n)
        return gp_fail(err, "%s: neither exactly nor firstAvailable", where);
    /* the first alternative is the request; the others are checked alike */
    for (size_t i = n; i-- > 0;) {
        gp_dra_request alt;
        memset(&alt, 0, sizeof alt);
        pathf(w, "%s.firstAvailable[%zu]", where, i);
        if (get_subrequest(json_array_get(alts, i), i ? &alt : q, w, err))
            return -1;
    }
    q->nalts = (int)n;
    return 0;
}

static int get_result(const json_t *r, gp_dra_result *res, const char *where, gp_err *err)
{
    if (!json_is_object(r))
        return gp_fail(err, "%s: must be an object", where);
    if (need_str(r, "request", res->request, sizeof res->request, where, err) ||
        need_str(r, "driver", res->driver, sizeof res->driver, where, err) ||
        need_str(r, "pool", res->pool, sizeof res->pool, where, err) ||
        need_str(r, "device", res->device, sizeof res->device, where, err) ||
        get_bool(r, "adminAccess", &res->admin, where, err) ||
        get_str(r, "shareID", res->share_id, sizeof res->share_id, where, err))
        return -1;
    return get_counters(r, "consumedCapacity", false, GP_DRA_CAPS_MAX, res->cap, &res->ncap, where,
                        err);
}

/* The one node value a node selector requirement pins (`KEY In [node]`), or NULL. */
static const char *pinned(const json_t *reqs, const char *key)
{
    size_t i;
    const json_t *q;
    json_array_foreach(reqs, i, q) {
        const char *k = json_string_value(json_object_get(q, "key"));
        const char *op = json_string_value(json_object_get(q, "operator"));
        const json_t *vals = json_object_get(q, "values");
        if (k && op && strcmp(k, key) == 0 && strcmp(op, "In") == 0 &&
            json_array_size(vals) == 1 && json_is_string(json_array_get(vals, 0)))
            return json_string_value(json_array_get(vals, 0));
    }
    return NULL;
}

/* allocation.nodeSelector: one term that pins one node by matchFields
 * metadata.name or matchExpressions kubernetes.io/hostname (both: they must
 * agree). Anything else, several terms (ORed) included, is not one node. */
static int alloc_node(const json_t *alloc, char node[GP_NAME_MAX], gp_err *err)
{
    const json_t *terms = json_object_get(json_object_get(alloc, "nodeSelector"),
                                          "nodeSelectorTerms");
    node[0] = '\0';
    if (json_array_size(terms) != 1)
        return 0;
    const json_t *term = json_array_get(terms, 0);
    const char *byname = pinned(json_object_get(term, "matchFields"), "metadata.name");
    const char *byhost = pinned(json_object_get(term, "matchExpressions"),
                                "kubernetes.io/hostname");
    const char *n = byname ? byname : byhost;
    if (!n || (byname && byhost && strcmp(byname, byhost) != 0))
        return 0;
    if (strlen(n) >= GP_NAME_MAX)
        return gp_fail(err, "status.allocation.nodeSelector: node name of %zu characters, more "
                       "than %d", strlen(n), GP_NAME_MAX - 1);
    gp_strlcpy(node, n, GP_NAME_MAX);
    return 0;
}

static bool is_pod_ref(const json_t *r)
{
    const char *group = json_string_value(json_object_get(r, "apiGroup"));
    const char *res = json_string_value(json_object_get(r, "resource"));
    return res && strcmp(res, "pods") == 0 && (!group || !group[0]);
}

static int claim_reserved(const json_t *status, gp_dra_claim *out, gp_err *err)
{
    const json_t *refs;
    size_t n;
    if (get_arr(status, "reservedFor", GP_DRA_RESERVED_MAX, &refs, &n, "status", err))
        return -1;
    out->nreserved = (int)n;
    int pods = 0;
    for (size_t i = 0; i < n; i++) {
        if (!json_is_object(json_array_get(refs, i)))
            return gp_fail(err, "status.reservedFor[%zu]: must be an object", i);
        pods += is_pod_ref(json_array_get(refs, i));
    }
    if (pods)
        out->reserved = xcalloc((size_t)pods, sizeof *out->reserved);
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(refs, i);
        if (!is_pod_ref(r))
            continue;
        gp_dra_ref *ref = &out->reserved[out->nreserved_pods++];
        char w[WHERE_MAX];
        pathf(w, "status.reservedFor[%zu]", i);
        if (get_str(r, "uid", ref->uid, sizeof ref->uid, w, err) ||
            get_str(r, "name", ref->name, sizeof ref->name, w, err))
            return -1;
    }
    return 0;
}

static int claim_body(const json_t *obj, gp_dra_claim *out, gp_err *err)
{
    const json_t *spec, *devs, *reqs, *status, *alloc, *adevs, *results;
    size_t n;
    if (get_obj(obj, "spec", &spec, "", err) ||
        get_obj(spec, "devices", &devs, "spec", err) ||
        get_arr(devs, "requests", GP_DRA_REQUESTS_MAX, &reqs, &n, "spec.devices", err))
        return -1;
    if (n) {
        out->req = xcalloc(n, sizeof *out->req);
        out->nreq = (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        char w[WHERE_MAX];
        pathf(w, "spec.devices.requests[%zu]", i);
        if (get_request(json_array_get(reqs, i), &out->req[i], w, err))
            return -1;
    }
    if (get_obj(obj, "status", &status, "", err) ||
        get_obj(status, "allocation", &alloc, "status", err))
        return -1;
    out->allocated = alloc != NULL;
    if (get_obj(alloc, "devices", &adevs, "status.allocation", err) ||
        get_arr(adevs, "results", GP_DRA_RESULTS_MAX, &results, &n, "status.allocation.devices",
                err))
        return -1;
    if (n) {
        out->res = xcalloc(n, sizeof *out->res);
        out->nres = (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        char w[WHERE_MAX];
        pathf(w, "status.allocation.devices.results[%zu]", i);
        if (get_result(json_array_get(results, i), &out->res[i], w, err))
            return -1;
    }
    if (alloc_node(alloc, out->node, err))
        return -1;
    return claim_reserved(status, out, err);
}

int dra_claim_decode(const json_t *obj, gp_dra_claim *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (get_meta(obj, "ResourceClaim", out->name, out->uid, out->ns, out->rv, err)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (!out->ns[0])
        gp_strlcpy(out->ns, "default", sizeof out->ns);
    out->deleting = member(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
    if (claim_body(obj, out, err)) {
        char name[2 * GP_NAME_MAX];
        snprintf(name, sizeof name, "%s/%s", out->ns, out->name);
        dra_claim_free(out);
        return in_object(err, "ResourceClaim", name);
    }
    return 0;
}

void dra_claim_free(gp_dra_claim *c)
{
    if (!c)
        return;
    free(c->req);
    free(c->res);
    free(c->reserved);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------- a pod's claims --- */

static int pod_claims(const json_t *pod, gp_dra_pod_claims *out, gp_err *err)
{
    const json_t *spec, *status, *claims, *statuses;
    size_t n, ns;
    if (!json_is_object(pod))
        return gp_fail(err, "must be a JSON object");
    if (get_obj(pod, "spec", &spec, "", err) ||
        get_arr(spec, "resourceClaims", GP_DRA_POD_CLAIMS_MAX, &claims, &n, "spec", err) ||
        get_obj(pod, "status", &status, "", err) ||
        get_arr(status, "resourceClaimStatuses", GP_DRA_POD_CLAIMS_MAX, &statuses, &ns, "status",
                err))
        return -1;
    for (size_t i = 0; i < ns; i++)
        if (!json_is_object(json_array_get(statuses, i)))
            return gp_fail(err, "status.resourceClaimStatuses[%zu]: must be an object", i);
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(claims, i);
        gp_dra_pod_claims_entry *e = &out->c[i];
        char w[WHERE_MAX], tmpl[GP_NAME_MAX];
        pathf(w, "spec.resourceClaims[%zu]", i);
        if (!json_is_object(c))
            return gp_fail(err, "%s: must be an object", w);
        if (need_str(c, "name", e->name, sizeof e->name, w, err) ||
            get_str(c, "resourceClaimName", e->claim, sizeof e->claim, w, err) ||
            get_str(c, "resourceClaimTemplateName", tmpl, sizeof tmpl, w, err))
            return -1;
        if (!e->claim[0] == !tmpl[0])
            return gp_fail(err, "%s: needs one of resourceClaimName and "
                           "resourceClaimTemplateName", w);
        e->from_template = tmpl[0] != '\0';
        for (size_t k = 0; e->from_template && k < ns; k++) {
            const json_t *st = json_array_get(statuses, k);
            const char *sn = json_string_value(json_object_get(st, "name"));
            if (!sn || strcmp(sn, e->name) != 0)
                continue;
            pathf(w, "status.resourceClaimStatuses[%zu]", k);
            if (get_str(st, "resourceClaimName", e->claim, sizeof e->claim, w, err))
                return -1;
            break;
        }
        out->n++;
    }
    return 0;
}

int dra_pod_claims(const json_t *pod, gp_dra_pod_claims *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (pod_claims(pod, out, err)) {
        const json_t *md = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        char who[2 * GP_NAME_MAX];
        snprintf(who, sizeof who, "%.253s/%.253s", ns ? ns : "default", name ? name : "?");
        memset(out, 0, sizeof *out);
        return in_object(err, "Pod", who);
    }
    return 0;
}
