/* test_podmeaning.c -- one meaning of a pod: every way gpupack reduces a Pod before decoding it
 * (filter's fast ExtenderArgs scanner, the copy kept between filter and bind, the LIST
 * buffer's trim) must decode to the same request as the whole Pod through jansson.
 *
 * A differential test over every pod the repository has: the JSON fixtures (test/fixtures,
 * captures included), every fuzz corpus entry (test/fuzz/corpus/), and pods generated from a
 * seed. Each goes through the entry point the verbs use (extender_pod_request: policy
 * selection, then podreq_decode and whatever decoders sit behind it) once whole and once
 * per reduced form; the decoded requests are compared field by field (containers, their
 * order, init and sidecar roles, quantities, profile, models, policy) and then as a whole
 * struct, so a field added to gp_pod_req later is compared too. The LIST path's
 * observation (k8s_obs_pod: node, phase, assignment, host requests) is compared the same
 * way. */
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/extargs.h"
#include "lib/yamljson.h"
#include "model/k8s_obs.h"
#include "model/podreq.h"
#include "pack/cluster.h"
#include "policy/policy_store.h"
#include "sched/extender.h"
#include "testutil.h"

/* ------------------------------------------------------------ decoding -- */

typedef struct decoded {
    int rc;
    char err[512];
    char policy[GP_NAME_MAX];
    gp_pod_req req;
} decoded;

typedef struct ctx {
    gp_cluster *c;
    policy_store *ps;
    gp_extender *e;
    gp_pod_view *full_obs, *trim_obs;   /* large: on the heap */
    int pods, scanned, declined, failures;
    char report[4096];
} ctx;

static void decode(ctx *x, const json_t *pod, decoded *d)
{
    memset(d, 0, sizeof *d);
    gp_policy_set *set = extender_policies(x->e);
    gp_policy_view view;
    gp_err err = {0};
    d->rc = extender_pod_request_json(x->e, pod, set, &d->req, &view, &err);
    if (d->rc == 0)
        gp_strlcpy(d->policy, view.name, sizeof d->policy);
    else
        gp_strlcpy(d->err, err.msg, sizeof d->err);
    policy_set_unref(set);
}

static void differ(ctx *x, const char *what, const char *origin, const char *fmt, ...)
    GP_PRINTF(4, 5);
static void differ(ctx *x, const char *what, const char *origin, const char *fmt, ...)
{
    x->failures++;
    size_t len = strlen(x->report);
    if (len + 300 > sizeof x->report)
        return;
    len += (size_t)snprintf(x->report + len, sizeof x->report - len, "%s (%s): ", what, origin);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->report + len, sizeof x->report - len - 1, fmt, ap);
    va_end(ap);
    strcat(x->report, "\n");
}

/* The decoded requests must be the same; says the first difference. */
static void compare(ctx *x, const char *what, const char *origin, const decoded *a, const decoded *b)
{
    if (a->rc != b->rc) {
        differ(x, what, origin, "whole pod %s, reduced %s", a->rc ? a->err : "decodes",
             b->rc ? b->err : "decodes");
        return;
    }
    if (a->rc) {
        if (strcmp(a->err, b->err) != 0)
            differ(x, what, origin, "errors differ: \"%s\" vs \"%s\"", a->err, b->err);
        return;
    }
    const gp_pod_req *p = &a->req, *q = &b->req;
    if (strcmp(a->policy, b->policy) != 0)
        differ(x, what, origin, "policy %s vs %s", a->policy, b->policy);
    else if (strcmp(p->ns, q->ns) || strcmp(p->name, q->name) || strcmp(p->uid, q->uid))
        differ(x, what, origin, "metadata %s/%s %s vs %s/%s %s", p->ns, p->name, p->uid, q->ns,
             q->name, q->uid);
    else if (p->profile != q->profile)
        differ(x, what, origin, "profile %d vs %d", (int)p->profile, (int)q->profile);
    else if (p->nctrs != q->nctrs)
        differ(x, what, origin, "%d GPU containers vs %d", p->nctrs, q->nctrs);
    else if (strcmp(p->models, q->models) || strcmp(p->policy, q->policy))
        differ(x, what, origin, "annotations: models \"%s\" policy \"%s\" vs \"%s\" \"%s\"", p->models,
             p->policy, q->models, q->policy);
    else if (p->cpu_milli != q->cpu_milli || p->host_mem_mib != q->host_mem_mib)
        differ(x, what, origin, "host requests %lldm/%lld MiB vs %lldm/%lld MiB",
             (long long)p->cpu_milli, (long long)p->host_mem_mib, (long long)q->cpu_milli,
             (long long)q->host_mem_mib);
    else {
        for (int i = 0; i < p->nctrs; i++) {
            const gp_ctr_req *r = &p->ctrs[i], *s = &q->ctrs[i];
            if (strcmp(r->name, s->name) || r->init != s->init || r->count != s->count ||
                r->mem_mib != s->mem_mib || r->mem_ppm != s->mem_ppm || r->ask != s->ask ||
                r->core != s->core) {
                differ(x, what, origin,
                     "container %d: %s%s x%d %lld MiB %d ppm (ask %d) core %d vs %s%s x%d %lld MiB "
                     "%d ppm (ask %d) core %d",
                     i, r->name, r->init ? " (init)" : "", r->count, (long long)r->mem_mib,
                     (int)r->mem_ppm, r->ask, r->core, s->name, s->init ? " (init)" : "", s->count,
                     (long long)s->mem_mib, (int)s->mem_ppm, s->ask, s->core);
                return;
            }
        }
        /* every field, those added later included (both start zeroed) */
        if (memcmp(p, q, sizeof *p) != 0)
            differ(x, what, origin, "the decoded requests differ in a field not compared above");
    }
}

/* The LIST path's observation of the pod: what the store learns from it. */
static void compare_obs(ctx *x, const char *origin, const json_t *full, const json_t *trimmed)
{
    gp_err e1 = {0}, e2 = {0};
    int r1 = k8s_obs_pod(full, false, 1024, x->full_obs, &e1);
    int r2 = k8s_obs_pod(trimmed, false, 1024, x->trim_obs, &e2);
    const gp_pod_view *a = x->full_obs, *b = x->trim_obs;
    if (r1 != r2) {
        differ(x, "LIST trim, k8s_obs_pod", origin, "rc %d vs %d", r1, r2);
        return;
    }
    if (r1)
        return;
    if (strcmp(a->node, b->node) || a->obs.terminal != b->obs.terminal || a->pending != b->pending ||
        a->wants_gpu != b->wants_gpu || strcmp(a->policy, b->policy) ||
        strcmp(a->assign_err, b->assign_err) || (a->obs.assign == NULL) != (b->obs.assign == NULL) ||
        (a->obs.assign && !gp_assignment_equal(&a->assign, &b->assign)) ||
        a->obs.nrefs != b->obs.nrefs || a->obs.cpu_milli != b->obs.cpu_milli ||
        a->obs.mem_mib != b->obs.mem_mib || a->parked != b->parked || a->sched_error != b->sched_error)
        differ(x, "LIST trim, k8s_obs_pod", origin,
             "node %s/%s terminal %d/%d pending %d/%d wants_gpu %d/%d assignment %d/%d host %lld/%lld "
             "parked %d/%d scheduler error %d/%d",
             a->node, b->node, a->obs.terminal, b->obs.terminal, a->pending, b->pending,
             a->wants_gpu, b->wants_gpu, a->obs.assign != NULL, b->obs.assign != NULL,
             (long long)a->obs.cpu_milli, (long long)b->obs.cpu_milli, a->parked, b->parked,
             a->sched_error, b->sched_error);
    /* the one decode the watch hands to preemption (model/pod.h) */
    const gp_pod *pa = &a->pod, *pb = &b->pod;
    if (strcmp(pa->ns, pb->ns) || strcmp(pa->name, pb->name) || strcmp(pa->uid, pb->uid) ||
        strcmp(pa->rv, pb->rv) || strcmp(pa->policy, pb->policy) || strcmp(pa->models, pb->models) ||
        strcmp(pa->node, pb->node) || pa->finished != pb->finished || pa->sched_false != pb->sched_false ||
        pa->nclaims != pb->nclaims || pa->identified != pb->identified ||
        pa->prio.priority != pb->prio.priority || pa->prio.never != pb->prio.never ||
        pa->prio.start_ns != pb->prio.start_ns || pa->prio.deletion_ns != pb->prio.deletion_ns ||
        pa->prio.grace_s != pb->prio.grace_s || strcmp(pa->prio.nominated, pb->prio.nominated) ||
        strcmp(pa->prio.owner.kind, pb->prio.owner.kind) || strcmp(pa->prio.owner.uid, pb->prio.owner.uid) ||
        ((pa->labels || pb->labels) && !json_equal(pa->labels, pb->labels)))
        differ(x, "LIST trim, pod_decode", origin,
               "priority %d/%d start %lld/%lld owner %s/%s nominated %s/%s claims %zu/%zu "
               "PodScheduled False %d/%d rv %s/%s",
               (int)pa->prio.priority, (int)pb->prio.priority, (long long)pa->prio.start_ns,
               (long long)pb->prio.start_ns, pa->prio.owner.uid, pb->prio.owner.uid,
               pa->prio.nominated, pb->prio.nominated, pa->nclaims, pb->nclaims, pa->sched_false,
               pb->sched_false, pa->rv, pb->rv);
}

/* The scanner path of one ExtenderArgs body, against jansson on the same bytes. */
static void check_body(ctx *x, const char *origin, const char *body, size_t len)
{
    json_t *whole = json_loadb(body, len, 0, NULL);
    const json_t *pod = json_object_get(whole, "Pod");
    gp_extargs a;
    if (extargs_scan(body, len, 100000, k8s_obs_pod_keep, &a) != 0) {
        x->declined++;   /* the verbs decode it with jansson then: one meaning by construction */
        json_decref(whole);
        return;
    }
    x->scanned++;
    if (!whole || (pod && !json_is_null(pod) && !a.pod) || (a.pod && !pod))
        differ(x, "scanner", origin, "the scanner and jansson disagree on whether there is a Pod");
    else if (a.pod) {
        decoded d1, d2;
        decode(x, pod, &d1);
        decode(x, a.pod, &d2);
        compare(x, "scanner", origin, &d1, &d2);
    }
    extargs_free(&a);
    json_decref(whole);
}

/* One pod through every reduced form. */
static void check_pod(ctx *x, const char *origin, const json_t *pod)
{
    if (!json_is_object(pod))
        return;
    x->pods++;
    decoded full, red;
    decode(x, pod, &full);
    /* filter's scanner, on the body kube-scheduler would send (compact and indented) */
    json_t *args = json_pack("{s:O,s:[s]}", "Pod", pod, "NodeNames", "n1");
    for (int style = 0; style < 2; style++) {
        char *body = json_dumps(args, style ? JSON_INDENT(2) : JSON_COMPACT);
        if (body)
            check_body(x, origin, body, strlen(body));
        free(body);
    }
    json_decref(args);
    /* the LIST buffer's copy */
    json_t *t = k8s_obs_trim_pod(pod);
    decode(x, t, &red);
    compare(x, "LIST trim", origin, &full, &red);
    compare_obs(x, origin, pod, t);
    json_decref(t);
}

/* Pods inside a document: a Pod, ExtenderArgs, a captured request, a watch
 * event, a list, an array of those. `pod`: j is a Pod by where it sits (the
 * value of ExtenderArgs' "Pod", an entry of the podreq corpus), whatever its
 * shape. Otherwise an object is taken for a Pod by its kind, or, without one,
 * when its spec names containers. */
static void walk(ctx *x, const char *origin, const json_t *j, int depth, bool pod)
{
    if (depth > 6)
        return;
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) walk(x, origin, v, depth + 1, false);
        return;
    }
    if (pod) {
        check_pod(x, origin, j);
        return;
    }
    if (!json_is_object(j))
        return;
    walk(x, origin, json_object_get(j, "Pod"), depth + 1, json_object_get(j, "Pod") != NULL);
    static const char *const wrappers[] = {"body", "object", "items", "request"};
    for (size_t i = 0; i < GP_ARRAY_LEN(wrappers); i++)
        walk(x, origin, json_object_get(j, wrappers[i]), depth + 1, false);
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const json_t *spec = json_object_get(j, "spec");
    if (kind ? strcmp(kind, "Pod") == 0
             : (json_object_get(spec, "containers") || json_object_get(spec, "initContainers")))
        check_pod(x, origin, j);
}

static void each_file(ctx *x, const char *dir, void (*fn)(ctx *, const char *path))
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *path = xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            each_file(x, path, fn);
        else if (S_ISREG(st.st_mode))
            fn(x, path);
        free(path);
    }
    closedir(d);
}

static void fixture_file(ctx *x, const char *path)
{
    size_t n = strlen(path);
    gp_err err;
    json_t *j = NULL;
    if (n > 5 && strcmp(path + n - 5, ".json") == 0)
        j = json_load_file(path, 0, NULL);
    else if (n > 5 && strcmp(path + n - 5, ".yaml") == 0 && !strstr(path, "/policy/"))
        j = yamljson_load_file(path, &err);
    if (!j)
        return;
    walk(x, path, j, 0, false);
    json_decref(j);
}

/* A corpus entry: the raw bytes through the scanner (they are ExtenderArgs
 * bodies, valid or not), then whatever pods parse out of it, whole or line by
 * line (watch streams). */
static void corpus_file(ctx *x, const char *path)
{
    size_t len;
    gp_err err;
    char *text = gp_read_file(path, 1u << 20, &len, &err);
    if (!text)
        return;
    check_body(x, path, text, len);
    json_t *j = json_loadb(text, len, 0, NULL);
    if (j)   /* the podreq corpus holds Pods, whatever their shape */
        walk(x, path, j, 0, strstr(path, "/corpus/podreq/") != NULL);
    json_decref(j);
    for (char *line = text; line && *line;) {
        char *nl = memchr(line, '\n', len - (size_t)(line - text));
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        json_t *ev = json_loadb(line, ll, 0, NULL);
        if (ev)
            walk(x, path, ev, 0, false);
        json_decref(ev);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
}

/* ----------------------------------------------------- generated pods -- */

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static json_t *pick_value(unsigned *s)
{
    static const char *const strs[] = {"4096", "10000", "4Ki", "2k", "1.5", "-1", "abc", "0",
                                       "100", "30", "2", "16", "1Gi", "500m", "17", "8Gi", ""};
    switch (rnd(s) % 8) {
    case 0: return json_integer((json_int_t)(rnd(s) % 20000));
    case 1: return json_real((rnd(s) % 4) + 0.5 * (rnd(s) % 2));
    case 2: return json_null();
    case 3: return json_object();
    default: return json_string(strs[rnd(s) % GP_ARRAY_LEN(strs)]);
    }
}

static json_t *gen_resources(unsigned *s)
{
    static const char *const names[] = {"gpupack.io/gpu-mem", "gpupack.io/gpu-count",
                                        "gpupack.io/gpu-core", "aliyun.com/gpu-mem", "cpu",
                                        "memory", "nvidia.com/gpu", "example.com/foo"};
    json_t *res = json_object();
    static const char *const kinds[] = {"limits", "requests"};
    for (int k = 0; k < 2; k++) {
        if (rnd(s) % 3 == 0)
            continue;
        json_t *l = json_object();
        int n = (int)(rnd(s) % 4);
        for (int i = 0; i < n; i++)
            json_object_set_new(l, names[rnd(s) % GP_ARRAY_LEN(names)], pick_value(s));
        json_object_set_new(res, kinds[k], l);
    }
    return res;
}

static json_t *gen_ctr(unsigned *s, int i)
{
    json_t *c = json_object();
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    if (rnd(s) % 20)
        json_object_set_new(c, "name", json_string(name));
    json_object_set_new(c, "image", json_string("registry.invalid/x:1"));
    static const char *const restart[] = {"Always", "OnFailure", "Never", "always"};
    switch (rnd(s) % 6) {
    case 0:
    case 1: json_object_set_new(c, "restartPolicy", json_string("Always")); break;
    case 2: json_object_set_new(c, "restartPolicy", json_string(restart[rnd(s) % 4])); break;
    case 3: json_object_set_new(c, "restartPolicy", json_integer(1)); break;
    default: break;
    }
    if (rnd(s) % 8)
        json_object_set_new(c, "resources", rnd(s) % 30 ? gen_resources(s) : json_string("x"));
    if (rnd(s) % 3 == 0)
        json_object_set_new(c, "env", json_pack("[{s:s,s:s},{s:s,s:{s:{s:s}}}]", "name", "A", "value",
                                                "1", "name", "NVIDIA_VISIBLE_DEVICES", "valueFrom",
                                                "fieldRef", "fieldPath",
                                                "metadata.annotations['gpupack.io/visible-devices']"));
    json_object_set_new(c, "command", json_pack("[s,s]", "sh", "-c"));
    return c;
}

static json_t *gen_pod(unsigned *s, int n)
{
    char name[32], uid[40];
    snprintf(name, sizeof name, "g%d", n);
    snprintf(uid, sizeof uid, "uid-%d", n);
    static const char *const nss[] = {"default", "serving", "research", "batch"};
    json_t *md = json_pack("{s:s,s:s,s:s,s:s}", "name", name, "namespace", nss[rnd(s) % 4], "uid", uid,
                           "resourceVersion", "7");
    if (rnd(s) % 2)
        json_object_set_new(md, "labels", json_pack("{s:s,s:s}", "tier", rnd(s) % 2 ? "inference" : "batch",
                                                    "gpupack.io/packing", "fragmentation-aware"));
    if (rnd(s) % 2) {
        json_t *ann = json_object();
        static const char *const keys[] = {"gpupack.io/gpu-model", "gpupack.io/policy",
                                           "gpupack.io/policy-used", "example.com/other",
                                           "kubectl.kubernetes.io/last-applied-configuration"};
        static const char *const vals[] = {"A100|A10", "notebook", "default", "T4", "{}",
                                           "fragmentation-aware"};
        for (int i = 0; i < 3; i++)
            json_object_set_new(ann, keys[rnd(s) % GP_ARRAY_LEN(keys)],
                                rnd(s) % 10 ? json_string(vals[rnd(s) % GP_ARRAY_LEN(vals)]) : json_integer(3));
        json_object_set_new(md, "annotations", ann);
    }
    json_t *spec = json_object();
    static const char *const lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        int k = (int)(rnd(s) % 5);
        if (k == 4 && rnd(s) % 4 == 0) {
            json_object_set_new(spec, lists[l], json_string("not a list"));
            continue;
        }
        json_t *arr = json_array();
        for (int i = 0; i < k; i++)
            json_array_append_new(arr, rnd(s) % 40 ? gen_ctr(s, l * 10 + i) : json_integer(5));
        json_object_set_new(spec, lists[l], arr);
    }
    switch (rnd(s) % 6) {
    case 0: json_object_set_new(spec, "nodeName", json_string("n1")); break;
    case 1: json_object_set_new(spec, "nodeName", json_string("")); break;
    default: break;
    }
    json_object_set_new(spec, "schedulerName", json_string("gpupack-scheduler"));
    if (rnd(s) % 2) {   /* what preemption reads */
        json_object_set_new(spec, "priority", rnd(s) % 8 ? json_integer((json_int_t)(rnd(s) % 2000)) : json_string("x"));
        json_object_set_new(spec, "preemptionPolicy", json_string(rnd(s) % 2 ? "Never" : "PreemptLowerPriority"));
        json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
        json_object_set_new(md, "creationTimestamp", json_string("2026-11-24T10:00:00Z"));
    }
    if (rnd(s) % 10 == 0)
        json_object_set_new(md, "deletionTimestamp", json_string("2026-11-24T11:00:00Z"));
    json_t *status = json_pack("{s:s}", "phase", rnd(s) % 5 ? "Pending" : "Succeeded");
    if (rnd(s) % 2) {   /* kube-scheduler's verdicts, which the requeue reads */
        static const char *const reasons[] = {"Unschedulable", "SchedulerError", ""};
        json_t *conds = json_array();
        if (rnd(s) % 2)
            json_array_append_new(conds, json_pack("{s:s,s:s}", "type", "Ready", "status", "False"));
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", "PodScheduled", "status",
                                               rnd(s) % 3 ? "False" : "True", "reason",
                                               reasons[rnd(s) % 3], "message", "0/3 nodes"));
        if (rnd(s) % 4 == 0)
            json_array_append_new(conds, json_integer(7));
        json_object_set_new(status, "conditions", rnd(s) % 20 ? conds : (json_decref(conds), json_string("x")));
        json_object_set_new(status, "nominatedNodeName", json_string("n2"));
        json_object_set_new(status, "startTime", json_string("2026-11-24T10:00:01Z"));
    }
    json_t *pod = json_pack("{s:o,s:o,s:o}", "metadata", md, "spec", spec, "status", status);
    return pod;
}

/* ---------------------------------------------------------------- test -- */

static void ctx_init(ctx *x)
{
    memset(x, 0, sizeof *x);
    gp_err err;
    ck_assert_msg(policy_store_open("policies", &x->ps, &err) == 0, "%s", err.msg);
    x->c = cluster_new();
    gp_extender_config cfg = {.policies = policy_store_current, .policies_ud = x->ps};
    x->e = extender_new(x->c, &cfg);
    x->full_obs = xmalloc(sizeof *x->full_obs);
    x->trim_obs = xmalloc(sizeof *x->trim_obs);
}

static void ctx_free(ctx *x)
{
    extender_free(x->e);
    cluster_free(x->c);
    policy_store_free(x->ps);
    free(x->full_obs);
    free(x->trim_obs);
}

START_TEST(fixtures_decode_alike)
{
    ctx x;
    ctx_init(&x);
    each_file(&x, "test/fixtures", fixture_file);
    ck_assert_msg(x.failures == 0, "%d of %d fixture pods differ:\n%s", x.failures, x.pods, x.report);
    ck_assert_int_gt(x.pods, 10);
    ck_assert_int_gt(x.scanned, 10);
    ctx_free(&x);
}
END_TEST

START_TEST(fuzz_corpus_decodes_alike)
{
    ctx x;
    ctx_init(&x);
    each_file(&x, "test/fuzz/corpus", corpus_file);
    ck_assert_msg(x.failures == 0, "%d differences over %d corpus pods:\n%s", x.failures, x.pods, x.report);
    ck_assert_int_gt(x.pods, 50);
    ck_assert_int_gt(x.scanned, 100);
    ctx_free(&x);
}
END_TEST

START_TEST(generated_pods_decode_alike)
{
    ctx x;
    ctx_init(&x);
    unsigned seed = 20261124u;
    for (int i = 0; i < 3000; i++) {
        json_t *pod = gen_pod(&seed, i);
        char origin[32];
        snprintf(origin, sizeof origin, "generated #%d", i);
        check_pod(&x, origin, pod);
        json_decref(pod);
    }
    ck_assert_msg(x.failures == 0, "%d differences over %d generated pods:\n%s", x.failures, x.pods,
                  x.report);
    ck_assert_int_gt(x.scanned, 4000);   /* the rest are declined: jansson decodes them */
    ctx_free(&x);
}
END_TEST

Suite *suite_podmeaning(void);
Suite *suite_podmeaning(void)
{
    Suite *s = suite_create("podmeaning");
    TCase *t = tcase_create("differential");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, fixtures_decode_alike);
    tcase_add_test(t, fuzz_corpus_decodes_alike);
    tcase_add_test(t, generated_pods_decode_alike);
    suite_add_tcase(s, t);
    return s;
}
