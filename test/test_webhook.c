/* test_webhook.c -- the admission webhook: review fixtures, truncations, idempotency, the
 * per-container annotations bind writes, bind's check, and the webhook listener's routes. */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "http/server.h"
#include "testutil.h"
#include "model/podenv.h"
#include "sched/webhook.h"
#include "lib/yamljson.h"

#define REAL_REVIEW "test/fixtures/webhook/review-real.json"

static gp_resource_names names(void)
{
    gp_resource_names n;
    podreq_default_names(&n);
    return n;
}

/* An AdmissionReview v1 request around a pod (JSON text). */
static char *review_of(const char *pod, const char *op, const char *kind)
{
    return xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                     "\"kind\":\"%s\"},\"operation\":\"%s\",\"namespace\":\"default\","
                     "\"object\":%s}}",
                     kind, op, pod);
}

/* Decodes a base64 string (the test fails on malformed input). */
static char *unbase64(const char *s)
{
    size_t n;
    char *out = gp_base64_decode(s, &n);
    ck_assert_msg(out, "not base64: %s", s);
    return out;
}

/* Runs a review: returns the parsed answer, *ops the decoded patch (or NULL). */
static json_t *run(const char *body, int *status, json_t **ops)
{
    gp_resource_names n = names();
    char *out = NULL;
    *status = webhook_review(body, strlen(body), &n, &out);
    json_error_t je;
    json_t *ans = json_loads(out, 0, &je);
    ck_assert_msg(ans != NULL, "answer is not JSON: %s", out);
    free(out);
    *ops = NULL;
    const json_t *patch = json_object_get(json_object_get(ans, "response"), "patch");
    if (patch) {
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "response"),
                                                           "patchType")),
                         "JSONPatch");
        char *p = unbase64(json_string_value(patch));
        *ops = json_loads(p, 0, &je);
        ck_assert_msg(*ops != NULL, "patch is not JSON: %s", p);
        free(p);
    }
    return ans;
}

/* ------------------------------------------------- a JSONPatch applier -- */

/* Applies add/replace ops (enough for what the webhook emits, but generic
 * over object members and array indices, with ~0/~1 unescaping). */
static void apply_patch(json_t *doc, const json_t *ops)
{
    size_t i;
    const json_t *op;
    json_array_foreach(ops, i, op) {
        const char *kind = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        json_t *value = json_object_get(op, "value");
        ck_assert(kind && path && path[0] == '/' && value);
        char *copy = xstrdup(path + 1);
        json_t *cur = doc;
        char *save = NULL;
        char *tok = strtok_r(copy, "/", &save);
        while (tok) {
            char *next = strtok_r(NULL, "/", &save);
            char key[256];
            size_t k = 0;
            for (const char *p = tok; *p && k < sizeof key - 1; p++) {
                if (p[0] == '~' && p[1] == '1')
                    key[k++] = '/', p++;
                else if (p[0] == '~' && p[1] == '0')
                    key[k++] = '~', p++;
                else
                    key[k++] = *p;
            }
            key[k] = '\0';
            if (!next) {
                if (json_is_array(cur) && strcmp(key, "-") == 0) {
                    ck_assert_str_eq(kind, "add");
                    json_array_append(cur, value);
                } else if (json_is_array(cur)) {
                    size_t idx = strtoul(key, NULL, 10);
                    ck_assert_uint_lt(idx, json_array_size(cur) + (strcmp(kind, "add") == 0));
                    if (strcmp(kind, "replace") == 0)
                        json_array_set(cur, idx, value);
                    else
                        json_array_insert(cur, idx, value);
                } else {
                    ck_assert(json_is_object(cur));
                    if (strcmp(kind, "replace") == 0)
                        ck_assert_msg(json_object_get(cur, key), "replace of absent %s", path);
                    json_object_set(cur, key, value);
                }
            } else {
                json_t *child = json_is_array(cur) ? json_array_get(cur, strtoul(key, NULL, 10))
                                                   : json_object_get(cur, key);
                ck_assert_msg(child != NULL, "path %s does not exist", path);
                cur = child;
            }
            tok = next;
        }
        free(copy);
    }
}

/* ---------------------------------------------------------- fixtures -- */

#define CTR_GPU "{\"name\":\"main\",\"image\":\"x\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"4096\",\"gpupack.io/gpu-core\":\"30\"}}"
#define CTR_PLAIN "{\"name\":\"side\",\"image\":\"x\"}"
#define POD(spec) "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":" spec "}"

typedef struct review_case {
    const char *name;
    const char *pod;        /* NULL: body is given whole */
    const char *op, *kind;
    const char *body;
    int status;
    bool allowed;
    const char *ops;        /* the expected patch (compact JSON), NULL = none */
    const char *warning;    /* a substring of some warning, NULL = no warnings */
} review_case;

static const char *const FP_C0 = "metadata.annotations['gpupack.io/ctr-0-visible-devices']";

static const review_case review_cases[] = {
    {"no env: one add of the whole list", POD("{\"containers\":[" CTR_GPU "}]}"), "CREATE", "Pod",
     NULL, 200, true, "ADD_ALL:/spec/containers/0/env", NULL},
    {"env null is absent", POD("{\"containers\":[" CTR_GPU ",\"env\":null}]}"), "CREATE", "Pod",
     NULL, 200, true, "ADD_ALL:/spec/containers/0/env", NULL},
    {"env present: appended after the pod's own",
     POD("{\"containers\":[" CTR_GPU ",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}"), "CREATE",
     "Pod", NULL, 200, true, "APPEND5:/spec/containers/0/env/-", NULL},
    {"empty env list", POD("{\"containers\":[" CTR_GPU ",\"env\":[]}]}"), "CREATE", "Pod", NULL,
     200, true, "APPEND5:/spec/containers/0/env/-", NULL},
    {"the pod's NVIDIA_VISIBLE_DEVICES=all is replaced",
     POD("{\"containers\":[" CTR_GPU ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]}]}"),
     "CREATE", "Pod", NULL, 200, true, "REPLACE0+APPEND4", "replaced"},
    {"the pod's own memory limit is kept",
     POD("{\"containers\":[" CTR_GPU ",\"env\":[{\"name\":\"CUDA_DEVICE_MEMORY_LIMIT\",\"value\":\"1g\"}]}]}"),
     "CREATE", "Pod", NULL, 200, true, "APPEND4-KEEP-MEM", "keeps its own CUDA_DEVICE_MEMORY_LIMIT"},
    {"second container asks, first does not",
     POD("{\"containers\":[" CTR_PLAIN "," CTR_GPU "}]}"), "CREATE", "Pod", NULL, 200, true,
     "ADD_ALL:/spec/containers/1/env", NULL},
    {"init container asks",
     POD("{\"initContainers\":[" CTR_GPU "}],\"containers\":[" CTR_PLAIN "]}"), "CREATE", "Pod",
     NULL, 200, true, "ADD_ALL:/spec/initContainers/0/env", NULL},
    {"pod asking nothing", POD("{\"containers\":[" CTR_PLAIN "]}"), "CREATE", "Pod", NULL, 200,
     true, NULL, NULL},
    {"aliyun profile", POD("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"2\"}}}]}"),
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/containers/0/env", NULL},
    /* other systems' formats get the same variables, on the containers that ask */
    {"KAI gpu-fraction: the fraction container only",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"annotations\":"
     "{\"gpu-fraction\":\"0.5\",\"gpu-fraction-container-name\":\"gpu-workload\"}},\"spec\":{"
     "\"schedulerName\":\"kai-scheduler\",\"containers\":[" CTR_PLAIN ",{\"name\":\"gpu-workload\"}]}}",
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/containers/1/env", NULL},
    {"KAI gpu-memory on an init container",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"annotations\":"
     "{\"gpu-memory\":\"2000\",\"gpu-fraction-container-name\":\"gpu-init\"}},\"spec\":{"
     "\"initContainers\":[{\"name\":\"gpu-init\"}],\"containers\":[" CTR_PLAIN "]}}",
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/initContainers/0/env", NULL},
    {"KAI gpu-fraction out of range: untouched, warned",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"annotations\":"
     "{\"gpu-fraction\":\"2\"}},\"spec\":{\"containers\":[" CTR_PLAIN "]}}",
     "CREATE", "Pod", NULL, 200, true, NULL, "annotation gpu-fraction: 2 is outside (0, 1]"},
    {"HAMi", POD("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
                 "\"nvidia.com/gpu\":1,\"nvidia.com/gpumem\":3000,\"nvidia.com/gpucores\":30}}}]}"),
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/containers/0/env", NULL},
    {"Volcano, second container",
     POD("{\"containers\":[" CTR_PLAIN ",{\"name\":\"c\",\"resources\":{\"limits\":{"
         "\"volcano.sh/vgpu-number\":1,\"volcano.sh/vgpu-memory\":3000}}}]}"),
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/containers/1/env", NULL},
    {"TKE", POD("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
                "\"tencent.com/vcuda-core\":50,\"tencent.com/vcuda-memory\":30}}}]}"),
     "CREATE", "Pod", NULL, 200, true, "ADD_ALL:/spec/containers/0/env", NULL},
    {"nvidia.com/gpu alone: the device plugin's, untouched",
     POD("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}"),
     "CREATE", "Pod", NULL, 200, true, NULL, NULL},
    {"mixed formats: untouched, warned",
     POD("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
         "\"gpupack.io/gpu-mem\":1,\"volcano.sh/vgpu-memory\":3}}}]}"),
     "CREATE", "Pod", NULL, 200, true, NULL, "pod mixes gpupack.io/gpu-mem"},
    {"malformed request: untouched, warned",
     POD("{\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{\"gpupack.io/gpu-core\":\"200\"}}}]}"),
     "CREATE", "Pod", NULL, 200, true, NULL, "compute share"},
    {"env not a list: untouched, warned", POD("{\"containers\":[" CTR_GPU ",\"env\":{}}]}"),
     "CREATE", "Pod", NULL, 200, true, NULL, "env is not a list"},
    {"UPDATE passes", POD("{\"containers\":[" CTR_GPU "}]}"), "UPDATE", "Pod", NULL, 200, true,
     NULL, NULL},
    {"another kind passes", "{\"kind\":\"Deployment\"}", "CREATE", "Deployment", NULL, 200, true,
     NULL, NULL},
    {"subresource passes", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
     "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\","
     "\"subResource\":\"ephemeralcontainers\",\"object\":{}}}",
     200, true, NULL, NULL},
    {"not JSON", NULL, NULL, NULL, "{\"kind\":", 400, false, NULL, NULL},
    /* jansson's message quotes the bytes near the fault, cut inside a character:
     * the process aborted on this (found by fuzz_verbs in the extender's twin) */
    {"not JSON, quoting half a character", NULL, NULL, NULL, "{\"kind\":\"\\\xd8\x92\"}", 400,
     false, NULL, NULL},
    {"an apiVersion cut inside a character", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1--\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
     400, false, NULL, NULL},
    {"an array", NULL, NULL, NULL, "[]", 400, false, NULL, NULL},
    {"wrong kind", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"u\"}}", 400,
     false, NULL, NULL},
    {"v1beta1", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
     400, false, NULL, NULL},
    {"no uid", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}", 400,
     false, NULL, NULL},
    {"no request kind", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
     400, false, NULL, NULL},
    {"a Pod CREATE without the object", NULL, NULL, NULL,
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
     "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\"}}",
     400, false, NULL, NULL},
};

/* Checks the shape of the ops against a case's shorthand. */
static void check_ops(const review_case *rc, const json_t *ops)
{
    if (!rc->ops) {
        ck_assert_msg(ops == NULL, "%s: unexpected patch", rc->name);
        return;
    }
    ck_assert_msg(ops != NULL, "%s: no patch", rc->name);
    const char *want = rc->ops;
    const json_t *o0 = json_array_get(ops, 0);
    const char *p0 = json_string_value(json_object_get(o0, "path"));
    if (strncmp(want, "ADD_ALL:", 8) == 0) {
        ck_assert_uint_eq(json_array_size(ops), 1);
        ck_assert_str_eq(json_string_value(json_object_get(o0, "op")), "add");
        ck_assert_str_eq(p0, want + 8);
        const json_t *v = json_object_get(o0, "value");
        ck_assert_uint_eq(json_array_size(v), GP_CTR_NVARS);
        for (int i = 0; i < GP_CTR_NVARS; i++)
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(v, (size_t)i), "name")),
                             annotations_ctr_vars[i].env);
    } else if (strncmp(want, "APPEND5:", 8) == 0) {
        ck_assert_uint_eq(json_array_size(ops), 5);
        ck_assert_str_eq(p0, want + 8);
    } else if (strcmp(want, "REPLACE0+APPEND4") == 0) {
        ck_assert_uint_eq(json_array_size(ops), 5);
        ck_assert_str_eq(json_string_value(json_object_get(o0, "op")), "replace");
        ck_assert_str_eq(p0, "/spec/containers/0/env/0");
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(
                             json_object_get(o0, "value"), "valueFrom"), "fieldRef"), "fieldPath")),
                         FP_C0);
    } else if (strcmp(want, "APPEND4-KEEP-MEM") == 0) {
        ck_assert_uint_eq(json_array_size(ops), 4);
        size_t i;
        const json_t *o;
        json_array_foreach(ops, i, o) {
            ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "/spec/containers/0/env/-");
            ck_assert_str_ne(json_string_value(json_object_get(json_object_get(o, "value"), "name")),
                             "CUDA_DEVICE_MEMORY_LIMIT");
        }
    } else {
        ck_abort_msg("bad case shorthand %s", want);
    }
}

START_TEST(test_review_table)
{
    const review_case *rc = &review_cases[_i];
    char *body = rc->pod ? review_of(rc->pod, rc->op, rc->kind) : xstrdup(rc->body);
    int status;
    json_t *ops;
    json_t *ans = run(body, &status, &ops);
    ck_assert_msg(status == rc->status, "%s: status %d", rc->name, status);
    ck_assert_str_eq(json_string_value(json_object_get(ans, "apiVersion")), "admission.k8s.io/v1");
    ck_assert_str_eq(json_string_value(json_object_get(ans, "kind")), "AdmissionReview");
    const json_t *resp = json_object_get(ans, "response");
    ck_assert_msg(json_is_boolean(json_object_get(resp, "allowed")) &&
                      json_is_true(json_object_get(resp, "allowed")) == rc->allowed,
                  "%s: allowed", rc->name);
    ck_assert(json_is_string(json_object_get(resp, "uid")));
    if (rc->status == 400) {
        const json_t *st = json_object_get(resp, "status");
        ck_assert_int_eq(json_integer_value(json_object_get(st, "code")), 400);
        ck_assert_msg(strlen(json_string_value(json_object_get(st, "message"))) > 10,
                      "%s: message", rc->name);
    } else {
        ck_assert_str_eq(json_string_value(json_object_get(resp, "uid")), rc->pod ? "u-1" : "u");
    }
    check_ops(rc, ops);
    const json_t *warnings = json_object_get(resp, "warnings");
    if (rc->warning) {
        bool found = false;
        size_t i;
        const json_t *w;
        json_array_foreach(warnings, i, w)
            found |= strstr(json_string_value(w), rc->warning) != NULL;
        ck_assert_msg(found, "%s: no warning containing \"%s\"", rc->name, rc->warning);
    } else {
        ck_assert_msg(warnings == NULL, "%s: unexpected warnings", rc->name);
    }
    json_decref(ops);
    json_decref(ans);
    free(body);
}
END_TEST

/* Applying the patch and reviewing the result again gives no patch; the pod
 * outside the env arrays of asking containers is unchanged. */
START_TEST(test_idempotent)
{
    const review_case *rc = &review_cases[_i];
    if (!rc->pod || !rc->ops)
        return;
    char *body = review_of(rc->pod, rc->op, rc->kind);
    int status;
    json_t *ops;
    json_t *ans = run(body, &status, &ops);
    json_t *pod = json_loads(rc->pod, 0, NULL);
    json_t *orig = json_deep_copy(pod);
    apply_patch(pod, ops);
    /* only env arrays changed */
    json_t *a = json_deep_copy(pod), *b = json_deep_copy(orig);
    static const char *const lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(a, "spec"), lists[l]), i, c)
            json_object_del(c, "env");
        json_array_foreach(json_object_get(json_object_get(b, "spec"), lists[l]), i, c)
            json_object_del(c, "env");
    }
    ck_assert_msg(json_equal(a, b), "%s: the patch changed more than env", rc->name);
    gp_resource_names n = names();
    gp_err err;
    ck_assert_msg(podenv_check(pod, &n, &err) == 0, "%s: %s", rc->name, err.msg);
    char *pod_text = json_dumps(pod, JSON_COMPACT);
    char *body2 = review_of(pod_text, "CREATE", "Pod");
    json_t *ops2;
    json_t *ans2 = run(body2, &status, &ops2);
    ck_assert_msg(ops2 == NULL, "%s: reinvocation patched again", rc->name);
    json_decref(ans2);
    free(body2);
    free(pod_text);
    json_decref(a);
    json_decref(b);
    json_decref(orig);
    json_decref(pod);
    json_decref(ops);
    json_decref(ans);
    free(body);
}
END_TEST

START_TEST(test_check_pod_refuses_unmutated)
{
    gp_resource_names n = names();
    gp_err err;
    json_t *pod = json_loads(POD("{\"containers\":[" CTR_PLAIN "," CTR_GPU "}]}"), 0, NULL);
    ck_assert_int_eq(podenv_check(pod, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "containers[1] (main)"));
    json_decref(pod);
    /* a hand-wired variable pointing elsewhere does not count */
    pod = json_loads(POD("{\"containers\":[" CTR_GPU ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\","
                         "\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.annotations['gpupack.io/visible-devices']\"}}}]}]}"),
                     0, NULL);
    ck_assert_int_eq(podenv_check(pod, &n, &err), -1);
    json_decref(pod);
    pod = json_loads(POD("{\"containers\":[" CTR_PLAIN "]}"), 0, NULL);
    ck_assert_int_eq(podenv_check(pod, &n, &err), 0);
    json_decref(pod);
}
END_TEST

/* A review the real kube-apiserver v1.26 sent (captured), and every
 * truncation of it: a clear 400, never a crash. */
START_TEST(test_real_review_and_truncations)
{
    gp_resource_names n = names();
    size_t len = 0;
    gp_err err;
    char *body = gp_read_file(REAL_REVIEW, 1 << 20, &len, &err);
    ck_assert_msg(body != NULL, "%s", err.msg);
    char *out = NULL;
    ck_assert_int_eq(webhook_review(body, len, &n, &out), 200);
    json_t *ans = json_loads(out, 0, NULL);
    const json_t *resp = json_object_get(ans, "response");
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ck_assert_ptr_nonnull(json_object_get(resp, "patch"));
    ck_assert_uint_gt(json_string_length(json_object_get(resp, "uid")), 0);
    json_decref(ans);
    free(out);
    while (len && strchr(" \t\r\n", body[len - 1]))   /* the file's trailing newline */
        len--;
    for (size_t cut = 0; cut < len; cut++) {
        char *part = xstrndup(body, cut);
        out = NULL;
        int st = webhook_review(part, cut, &n, &out);
        ck_assert_msg(st == 400, "cut %zu: status %d", cut, st);
        ans = json_loads(out, 0, NULL);
        ck_assert_msg(ans && json_is_false(json_object_get(json_object_get(ans, "response"), "allowed")),
                      "cut %zu: %s", cut, out);
        json_decref(ans);
        free(out);
        free(part);
    }
    free(body);
}
END_TEST

/* ------------------------------------------ per-container annotations -- */

static gp_node *two_gpu_node(void)
{
    static const int64_t mem[] = {40960, 40960};
    gp_node *n = tu_node("n1", 2, mem, NULL, NULL);
    gp_strlcpy(n->gpus[0].info.uuid, "GPU-aaa", sizeof n->gpus[0].info.uuid);
    gp_strlcpy(n->gpus[1].info.uuid, "GPU-bbb", sizeof n->gpus[1].info.uuid);
    return n;
}

static const char *ann(const json_t *a, const char *key)
{
    const json_t *v = json_object_get(a, key);
    return v ? json_string_value(v) : "(absent)";
}

START_TEST(test_annotations_native)
{
    gp_node *node = two_gpu_node();
    json_t *pod = json_loads(
        POD("{\"initContainers\":[{\"name\":\"fetch\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"1024\"}}}],"
            "\"containers\":[" CTR_PLAIN ",{\"name\":\"train\",\"resources\":{\"limits\":{"
            "\"gpupack.io/gpu-mem\":\"8192\",\"gpupack.io/gpu-count\":\"2\"}}}]}"),
        0, NULL);
    gp_assignment a = {.node = "n1", .nctrs = 2};
    gp_strlcpy(a.ctrs[0].name, "train", sizeof a.ctrs[0].name);
    a.ctrs[0].ngpus = 2;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){1, 8192, 0};
    a.ctrs[0].gpus[1] = (gp_gpu_grant){0, 8192, 0};
    gp_strlcpy(a.ctrs[1].name, "fetch", sizeof a.ctrs[1].name);
    a.ctrs[1].init = true;
    a.ctrs[1].ngpus = 1;
    a.ctrs[1].gpus[0] = (gp_gpu_grant){1, 1024, 250};
    json_t *out = json_object();
    gp_resource_names n = names();
    annotations_add_containers(out, pod, &a, node, &n);
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-visible-devices"), "GPU-aaa,GPU-bbb");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mem-limit"), "8192m");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-sm-limit"), "100");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mps-mem-limit"), "0=8192M,1=8192M");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mps-threads"), "100");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-visible-devices"), "GPU-bbb");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-mem-limit"), "1024m");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-sm-limit"), "25");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-mps-threads"), "25");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-mps-mem-limit"), "0=1024M");
    ck_assert_ptr_null(json_object_get(out, "gpupack.io/ctr-0-visible-devices"));
    ck_assert_uint_eq(json_object_size(out), 10);
    /* every key fits the 63-character name limit */
    const char *k;
    json_t *v;
    json_object_foreach(out, k, v)
        ck_assert_uint_le(strlen(strchr(k, '/') + 1), 63);
    json_decref(out);
    json_decref(pod);
    free(node);
}
END_TEST

START_TEST(test_annotations_aliyun)
{
    gp_node *node = two_gpu_node();
    node->gpus[1].info.uuid[0] = '\0';   /* no UUID known: the index */
    json_t *pod = json_loads(
        POD("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"2\"}}},"
            "{\"name\":\"b\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"3\"}}}]}"),
        0, NULL);
    gp_assignment a = {.node = "n1", .nctrs = 1};
    gp_strlcpy(a.ctrs[0].name, "a", sizeof a.ctrs[0].name);   /* podreq merged a and b */
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){1, 5120, 0};
    json_t *out = json_object();
    gp_resource_names n = names();
    annotations_add_containers(out, pod, &a, node, &n);
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-0-visible-devices"), "1");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-visible-devices"), "1");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-0-mem-limit"), "2048m");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mem-limit"), "3072m");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mps-mem-limit"), "0=3072M");
    json_decref(out);
    json_decref(pod);
    free(node);
}
END_TEST

/* A native sidecar (an init container that keeps running) asking GPUs gets
 * its keys, and so does an aliyun pod's init container (its own request as
 * its limit, on the pod's one GPU). */
START_TEST(test_annotations_sidecar_and_aliyun_init)
{
    gp_node *node = two_gpu_node();
    json_t *pod = json_loads(
        POD("{\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\","
            "\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"100\"}}}],"
            "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"200\"}}}]}"),
        0, NULL);
    gp_resource_names n = names();
    gp_pod_req r;
    gp_err err;
    ck_assert_int_eq(podreq_decode(pod, &n, &r, &err), 0);
    ck_assert_int_eq(r.nctrs, 2);
    gp_assignment a = {.node = "n1", .nctrs = 2};
    for (int i = 0; i < 2; i++) {
        gp_strlcpy(a.ctrs[i].name, r.ctrs[i].name, sizeof a.ctrs[i].name);
        a.ctrs[i].init = r.ctrs[i].init;   /* the sidecar's is false: it does not run once */
        a.ctrs[i].ngpus = 1;
        a.ctrs[i].gpus[0] = (gp_gpu_grant){0, r.ctrs[i].mem_mib, 0};
    }
    json_t *out = json_object();
    annotations_add_containers(out, pod, &a, node, &n);
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-mem-limit"), "100m");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-0-mem-limit"), "200m");
    json_decref(out);
    json_decref(pod);
    pod = json_loads(
        POD("{\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"1\"}}}],"
            "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"2\"}}}]}"),
        0, NULL);
    gp_assignment b = {.node = "n1", .nctrs = 1};
    gp_strlcpy(b.ctrs[0].name, "m", sizeof b.ctrs[0].name);
    b.ctrs[0].ngpus = 1;
    b.ctrs[0].gpus[0] = (gp_gpu_grant){1, 2048, 0};
    out = json_object();
    annotations_add_containers(out, pod, &b, node, &n);
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-mem-limit"), "1024m");
    ck_assert_str_eq(ann(out, "gpupack.io/init-0-visible-devices"), "GPU-bbb");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-0-mem-limit"), "2048m");
    json_decref(out);
    json_decref(pod);
    free(node);
}
END_TEST

/* A KAI pod: the fraction container gets the keys, with the memory its
 * fraction came to on the GPU bind chose; its siblings get none. */
START_TEST(test_annotations_kai)
{
    gp_node *node = two_gpu_node();
    json_t *pod = json_loads(
        "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"gpu-fraction\":\"0.5\","
        "\"gpu-fraction-container-name\":\"gpu-workload\"}},\"spec\":{\"containers\":["
        "{\"name\":\"sidecar\"},{\"name\":\"gpu-workload\"}]}}",
        0, NULL);
    gp_assignment a = {.node = "n1", .nctrs = 1};
    gp_strlcpy(a.ctrs[0].name, "gpu-workload", sizeof a.ctrs[0].name);
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 20480, 0};
    json_t *out = json_object();
    gp_resource_names n = names();
    annotations_add_containers(out, pod, &a, node, &n);
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-visible-devices"), "GPU-aaa");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-mem-limit"), "20480m");
    ck_assert_str_eq(ann(out, "gpupack.io/ctr-1-sm-limit"), "100");
    ck_assert_ptr_null(json_object_get(out, "gpupack.io/ctr-0-visible-devices"));
    ck_assert_uint_eq(json_object_size(out), 5);
    json_decref(out);
    json_decref(pod);
    free(node);
}
END_TEST

/* ----------------------------------------------------- the listener -- */

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    return sz * n;
}

static long post(const char *url, const char *body)
{
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long status = 0;
    ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return status;
}

START_TEST(test_listener_routes)
{
    gp_cluster *c = cluster_new();
    gp_extender *e = extender_new(c, NULL);
    gp_resource_names n = names();
    gp_err err;
    gp_server_config wcfg = {.listen = "127.0.0.1:0", .webhook = &n};
    gp_server_config mcfg = {.listen = "127.0.0.1:0"};
    gp_server *ws = server_start(&wcfg, e, c, NULL, &err);
    ck_assert_msg(ws != NULL, "%s", err.msg);
    gp_server *ms = server_start(&mcfg, e, c, NULL, &err);
    ck_assert_msg(ms != NULL, "%s", err.msg);
    char url[128];
    char *body = review_of(POD("{\"containers\":[" CTR_GPU "}]}"), "CREATE", "Pod");
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mutate", server_port(ws));
    ck_assert_int_eq(post(url, body), 200);
    ck_assert_int_eq(post(url, "{"), 400);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/filter", server_port(ws));
    ck_assert_int_eq(post(url, "{}"), 404);   /* the extender verbs are not on the webhook port */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", server_port(ws));
    ck_assert_int_eq(post(url, NULL), 200);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mutate", server_port(ms));
    ck_assert_int_eq(post(url, body), 404);   /* nor the webhook on the extender's */
    free(body);
    server_stop(ms);
    server_stop(ws);
    extender_free(e);
    cluster_free(c);
}
END_TEST

Suite *suite_webhook(void);
Suite *suite_webhook(void)
{
    Suite *s = suite_create("webhook");
    TCase *tc = tcase_create("webhook");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_review_table, 0, (int)GP_ARRAY_LEN(review_cases));
    tcase_add_loop_test(tc, test_idempotent, 0, (int)GP_ARRAY_LEN(review_cases));
    tcase_add_test(tc, test_check_pod_refuses_unmutated);
    tcase_add_test(tc, test_real_review_and_truncations);
    tcase_add_test(tc, test_annotations_native);
    tcase_add_test(tc, test_annotations_aliyun);
    tcase_add_test(tc, test_annotations_kai);
    tcase_add_test(tc, test_annotations_sidecar_and_aliyun_init);
    tcase_add_test(tc, test_listener_routes);
    suite_add_tcase(s, tc);
    return s;
}
