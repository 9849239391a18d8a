/* api.c -- the test's own calls to the API server: objects, waits, events. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/util.h"

json_t *e2e_api(e2e_cp *cp, const char *method, const char *path, const json_t *body, long *status)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    const char *ct = "application/json";
    if (strcmp(method, "PATCH") == 0)
        ct = "application/merge-patch+json";
    gp_kube_resp r;
    gp_err err;
    int rc = kube_request(cp->kube, method, path, ct, text, 30, NULL, &r, &err);
    free(text);
    if (rc < 0) {
        kube_resp_free(&r);
        if (status) {
            *status = 0;
            return NULL;
        }
        ck_abort_msg("%s %s: %s", method, path, err.msg);
    }
    if (status)
        *status = r.status;
    json_t *j = r.body.data ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
    kube_resp_free(&r);
    return j;
}

json_t *e2e_api_ok(e2e_cp *cp, const char *method, const char *path, const char *content_type,
                   const json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    gp_kube_resp r;
    gp_err err;
    int rc = kube_request(cp->kube, method, path, content_type ? content_type : "application/json",
                          text, 30, NULL, &r, &err);
    free(text);
    if (rc < 0)
        ck_abort_msg("%s %s: %s", method, path, err.msg);
    if (r.status / 100 != 2) {
        char msg[512];
        kube_status_message(r.body.data, r.body.len, msg, sizeof msg);
        long st = r.status;
        kube_resp_free(&r);
        ck_abort_msg("%s %s: HTTP %ld: %s", method, path, st, msg);
    }
    json_t *j = r.body.data ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
    kube_resp_free(&r);
    return j;
}

void e2e_ns_create(e2e_cp *cp, const char *ns)
{
    json_t *o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                          "name", ns);
    json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces", NULL, o));
    json_decref(o);
}

/* ------------------------------------------------------------- nodes --- */

static json_t *node_base(const char *name)
{
    json_t *res = json_pack("{s:s,s:s,s:s}", "cpu", "64", "memory", "512Gi", "pods", "250");
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{}},s:{s:O,s:o,s:[{s:s,s:s,s:s,s:s}]}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                     "kubernetes.io/hostname", name, "annotations", "status", "capacity", res,
                     "allocatable", res, "conditions", "type", "Ready", "status", "True", "reason",
                     "KubeletReady", "message", "e2e fake node");
}

static json_t *md(json_t *node, const char *key)
{
    return json_object_get(json_object_get(node, "metadata"), key);
}

/* A uuid unique to (node, index), so that clashes would show in the checks. */
static char *fake_uuid(const char *node, int i)
{
    uint64_t h = gp_fnv1a(GP_FNV_OFFSET, node, strlen(node));
    return xasprintf("GPU-%08x-%04x-4000-8000-%012llx", (unsigned)(h >> 32), (unsigned)i,
                     (unsigned long long)(h & 0xffffffffffffULL));
}

json_t *e2e_node_gpupack(const char *name, int ngpus, long mem_mib, const char *model)
{
    json_t *n = node_base(name), *gpus = json_array();
    for (int i = 0; i < ngpus; i++) {
        char *u = fake_uuid(name, i);
        json_array_append_new(gpus, json_pack("{s:i,s:s,s:s,s:I,s:b}", "index", i, "uuid", u, "model",
                                              model, "memoryMiB", (json_int_t)mem_mib, "healthy", 1));
        free(u);
    }
    char *s = json_dumps(gpus, JSON_COMPACT);
    json_object_set_new(md(n, "annotations"), "gpupack.io/gpus", json_string(s));
    free(s);
    json_decref(gpus);
    return n;
}

json_t *e2e_node_hami(const char *name, int ngpus, long mem_mib, const char *type)
{
    json_t *n = node_base(name), *gpus = json_array();
    for (int i = 0; i < ngpus; i++) {
        char *u = fake_uuid(name, i);
        json_array_append_new(gpus, json_pack("{s:s,s:i,s:i,s:I,s:i,s:s,s:i,s:b}", "id", u, "index", i,
                                              "count", 10, "devmem", (json_int_t)mem_mib, "devcore",
                                              100, "type", type, "numa", 0, "health", 1));
        free(u);
    }
    char *s = json_dumps(gpus, JSON_COMPACT);
    json_object_set_new(md(n, "annotations"), "hami.io/node-nvidia-register", json_string(s));
    free(s);
    json_decref(gpus);
    return n;
}

json_t *e2e_node_gfd(const char *name, int ngpus, long mem_mib, const char *product)
{
    json_t *n = node_base(name), *l = md(n, "labels");
    char num[32];
    snprintf(num, sizeof num, "%d", ngpus);
    json_object_set_new(l, "nvidia.com/gpu.count", json_string(num));
    snprintf(num, sizeof num, "%ld", mem_mib);
    json_object_set_new(l, "nvidia.com/gpu.memory", json_string(num));
    json_object_set_new(l, "nvidia.com/gpu.product", json_string(product));
    return n;
}

json_t *e2e_node_aliyun(const char *name, int ngpus, long total_gib)
{
    json_t *n = node_base(name), *st = json_object_get(n, "status");
    char c[32], m[32];
    snprintf(c, sizeof c, "%d", ngpus);
    snprintf(m, sizeof m, "%ld", total_gib);
    /* capacity and allocatable share one object (node_base): set once */
    json_t *cap = json_object_get(st, "capacity");
    json_object_set_new(cap, "aliyun.com/gpu-count", json_string(c));
    json_object_set_new(cap, "aliyun.com/gpu-mem", json_string(m));
    json_object_set_new(md(n, "labels"), "gpushare", json_string("true"));
    return n;
}

json_t *e2e_node_plain(const char *name)
{
    return node_base(name);
}

void e2e_nudge_scheduler(e2e_cp *cp)
{
    /* an assigned pod deleted is the one event kube-scheduler v1.26 answers by
     * retrying every parked pod without a pre-check (a node added is pre-checked
     * against each pod's requests, which GPU pods fail on a node without them) */
    static int seq;
    char name[64];
    snprintf(name, sizeof name, "e2e-nudge-%d-%d", (int)getpid(), ++seq);
    json_t *p = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind",
                          "Pod", "metadata", "name", name, "namespace", "default", "spec", "nodeName",
                          "e2e-nudge", "terminationGracePeriodSeconds", 0, "containers", "name", "c",
                          "image", "registry.invalid/e2e:1");
    json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces/default/pods", NULL, p));
    json_decref(p);
    e2e_pod_delete(cp, "default", name);
}

void e2e_node_create(e2e_cp *cp, json_t *node)
{
    json_decref(e2e_api_ok(cp, "POST", "/api/v1/nodes", NULL, node));
    json_decref(node);
}

/* -------------------------------------------------------------- pods --- */

json_t *e2e_pod(const char *ns, const char *name)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{},s:{}},s:{s:s,s:i,s:[],s:[]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", name, "namespace", ns, "labels", "annotations",
                     "spec", "schedulerName", e2e_scheduler_name(), "terminationGracePeriodSeconds", 0,
                     "containers", "initContainers");
}

void e2e_pod_ctr(json_t *pod, const char *name, bool init, ...)
{
    json_t *lim = json_object();
    va_list ap;
    va_start(ap, init);
    for (const char *k; (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        json_object_set_new(lim, k, json_string(v));
    }
    va_end(ap);
    json_t *c = json_pack("{s:s,s:s,s:{s:o,s:{s:s}}}", "name", name, "image", "registry.invalid/e2e:1",
                          "resources", "limits", lim, "requests", "cpu", "10m");
    json_t *spec = json_object_get(pod, "spec");
    json_array_append_new(json_object_get(spec, init ? "initContainers" : "containers"), c);
}

void e2e_pod_annotate(json_t *pod, const char *key, const char *value)
{
    json_object_set_new(md(pod, "annotations"), key, json_string(value));
}

void e2e_pod_select(json_t *pod, const char *label, const char *value)
{
    json_t *spec = json_object_get(pod, "spec"), *sel = json_object_get(spec, "nodeSelector");
    if (!sel) {
        sel = json_object();
        json_object_set_new(spec, "nodeSelector", sel);
    }
    json_object_set_new(sel, label, json_string(value));
}

void e2e_pod_create(e2e_cp *cp, json_t *pod)
{
    json_t *spec = json_object_get(pod, "spec");
    if (json_array_size(json_object_get(spec, "initContainers")) == 0)
        json_object_del(spec, "initContainers");
    const char *ns = json_string_value(md(pod, "namespace"));
    char *path = xasprintf("/api/v1/namespaces/%s/pods", ns);
    json_decref(e2e_api_ok(cp, "POST", path, NULL, pod));
    free(path);
    json_decref(pod);
}

void e2e_pod_delete(e2e_cp *cp, const char *ns, const char *name)
{
    char *path = xasprintf("/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0", ns, name);
    json_decref(e2e_api_ok(cp, "DELETE", path, NULL, NULL));
    free(path);
}

void e2e_pod_set_phase(e2e_cp *cp, const char *ns, const char *name, const char *phase)
{
    char *path = xasprintf("/api/v1/namespaces/%s/pods/%s/status", ns, name);
    json_t *patch = json_pack("{s:{s:s}}", "status", "phase", phase);
    json_decref(e2e_api_ok(cp, "PATCH", path, "application/merge-patch+json", patch));
    json_decref(patch);
    free(path);
}

json_t *e2e_pod_get(e2e_cp *cp, const char *ns, const char *name)
{
    char *path = xasprintf("/api/v1/namespaces/%s/pods/%s", ns, name);
    long st;
    json_t *p = e2e_api(cp, "GET", path, NULL, &st);
    free(path);
    if (st != 200) {
        json_decref(p);
        return NULL;
    }
    return p;
}

json_t *e2e_pods(e2e_cp *cp, const char *ns)
{
    char *path = *ns ? xasprintf("/api/v1/namespaces/%s/pods", ns) : xstrdup("/api/v1/pods");
    json_t *l = e2e_api_ok(cp, "GET", path, NULL, NULL);
    json_t *items = json_incref(json_object_get(l, "items"));
    json_decref(l);
    free(path);
    ck_assert_msg(json_is_array(items), "LIST pods without items");
    return items;
}

static int count_bound(json_t *items)
{
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p) {
        const char *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (node && *node)
            n++;
    }
    return n;
}

int e2e_wait_bound(e2e_cp *cp, const char *ns, int want, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    for (;;) {
        json_t *items = e2e_pods(cp, ns);
        int n = count_bound(items);
        json_decref(items);
        if (n >= want || gp_mono_s() > end)
            return n;
        e2e_sleep(0.25);
    }
}

char *e2e_pod_event(e2e_cp *cp, const char *ns, const char *name, const char *reason)
{
    char *path = xasprintf("/api/v1/namespaces/%s/events?fieldSelector=involvedObject.name%%3D%s,reason%%3D%s",
                           ns, name, reason);
    json_t *l = e2e_api_ok(cp, "GET", path, NULL, NULL);
    free(path);
    char *msg = NULL, best[64] = "";
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(l, "items"), i, ev) {
        const char *m = json_string_value(json_object_get(ev, "message"));
        const char *t = json_string_value(json_object_get(ev, "lastTimestamp"));
        if (!t)
            t = json_string_value(json_object_get(ev, "eventTime"));
        if (!m)
            continue;
        if (!msg || (t && strcmp(t, best) >= 0)) {
            free(msg);
            msg = xstrdup(m);
            gp_strlcpy(best, t ? t : "", sizeof best);
        }
    }
    json_decref(l);
    return msg;
}

char *e2e_wait_pod_event(e2e_cp *cp, const char *ns, const char *name, const char *reason,
                         const char *needle, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    for (;;) {
        char *m = e2e_pod_event(cp, ns, name, reason);
        if (m && (!needle || strstr(m, needle)))
            return m;
        if (gp_mono_s() > end)
            return m;
        free(m);
        e2e_sleep(0.25);
    }
}
