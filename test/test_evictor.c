/* test_evictor.c -- preemption's API calls against the fake API server: the
 * requests sent (paths, bodies, preconditions) and how each answer is read. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "act/evictor.h"
#include "act/requeue.h"
#include "model/heldrec.h"

typedef struct env {
    gp_fakeapi *f;
    gp_kube *k;
} env;

static void env_up(env *x)
{
    x->f = fakeapi_start();
    ck_assert_ptr_nonnull(x->f);
    gp_kube_auth a = {.server = (char *)fakeapi_url(x->f)};
    gp_err err;
    x->k = kube_new(&a, &err);
    ck_assert_ptr_nonnull(x->k);
}

static void env_down(env *x)
{
    kube_free(x->k);
    fakeapi_stop(x->f);
}

/* The last request's body, parsed (owned). */
static json_t *last_body(env *x, char *url, size_t len)
{
    gp_fake_req r;
    ck_assert_int_eq(fakeapi_request(x->f, fakeapi_request_count(x->f) - 1, &r), 0);
    gp_strlcpy(url, r.url, len);
    json_t *j = json_loads(r.body, 0, NULL);
    fakeapi_req_clear(&r);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* Each answer of the Eviction API and what it means. */
static const struct {
    int status;
    gp_evict_outcome want;
} answers[] = {
    {201, GP_EVICT_DONE},    {200, GP_EVICT_DONE},    {404, GP_EVICT_GONE},
    {409, GP_EVICT_GONE},    {429, GP_EVICT_BLOCKED}, {500, GP_EVICT_RETRY},
    {503, GP_EVICT_RETRY},   {403, GP_EVICT_REFUSED}, {422, GP_EVICT_REFUSED},
};

START_TEST(eviction_answers)
{
    env x;
    env_up(&x);
    fakeapi_fail(x.f, "POST", "/eviction", answers[_i].status, 1);
    gp_err err;
    gp_evict_outcome o = evictor_evict(x.k, "ml", "victim", "uid-1", 5, &err);
    ck_assert_msg(o == answers[_i].want, "HTTP %d: got %d, want %d (%s)", answers[_i].status, o,
                  answers[_i].want, err.msg);
    char url[512];
    json_t *b = last_body(&x, url, sizeof url);
    ck_assert_str_eq(url, "/api/v1/namespaces/ml/pods/victim/eviction");
    ck_assert_str_eq(json_string_value(json_object_get(b, "apiVersion")), "policy/v1");
    ck_assert_str_eq(json_string_value(json_object_get(b, "kind")), "Eviction");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "name")), "victim");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(b, "deleteOptions"), "preconditions"), "uid")),
                     "uid-1");
    json_decref(b);
    env_down(&x);
}
END_TEST

START_TEST(eviction_unreachable)
{
    gp_kube_auth a = {.server = "http://127.0.0.1:1"};
    gp_err err;
    gp_kube *k = kube_new(&a, &err);
    ck_assert_int_eq(evictor_evict(k, "ml", "v", "u", 2, &err), GP_EVICT_RETRY);
    ck_assert_int_eq(evictor_nominate(k, "ml", "p", "u", "n1", NULL, 2, &err), -1);
    kube_free(k);
}
END_TEST

START_TEST(nominate_and_touch)
{
    env x;
    env_up(&x);
    fakeapi_put_pod(x.f, json_pack("{s:{s:s,s:s,s:s},s:{},s:{}}", "metadata", "name", "pre",
                                   "namespace", "ml", "uid", "uid-pre", "spec", "status"));
    gp_err err;
    /* the nomination: a merge patch of the status subresource with the uid as precondition */
    fakeapi_fail(x.f, "PATCH", "/status", 200, 1);
    ck_assert_int_eq(evictor_nominate(x.k, "ml", "pre", "uid-pre", "node-a", NULL, 5, &err), 0);
    char url[512];
    json_t *b = last_body(&x, url, sizeof url);
    ck_assert_str_eq(url, "/api/v1/namespaces/ml/pods/pre/status");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "status"), "nominatedNodeName")),
                     "node-a");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")), "uid-pre");
    json_decref(b);
    /* a consolidation's: a strategic merge patch that adds the record of held
     * places as a condition (merged by type: kube-scheduler's stay) */
    fakeapi_fail(x.f, "PATCH", "/status", 200, 1);
    ck_assert_int_eq(evictor_nominate(x.k, "ml", "pre", "uid-pre", "node-a", "{\"v\":1}", 5, &err), 0);
    gp_fake_req rq;
    ck_assert_int_eq(fakeapi_request(x.f, fakeapi_request_count(x.f) - 1, &rq), 0);
    ck_assert_str_eq(rq.content_type, "application/strategic-merge-patch+json");
    fakeapi_req_clear(&rq);
    b = last_body(&x, url, sizeof url);
    ck_assert_str_eq(url, "/api/v1/namespaces/ml/pods/pre/status");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "status"), "nominatedNodeName")),
                     "node-a");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")), "uid-pre");
    const json_t *hc = json_array_get(json_object_get(json_object_get(b, "status"), "conditions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(hc, "type")), GP_HELD_PLACES_CONDITION);
    ck_assert_str_eq(json_string_value(json_object_get(hc, "status")), "True");
    ck_assert_str_eq(json_string_value(json_object_get(hc, "message")), "{\"v\":1}");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(hc, "lastTransitionTime")));
    json_decref(b);
    static const struct {
        int status, want;
    } nom[] = {{404, 1}, {409, 1}, {422, 1}, {403, 2}, {500, -1}};
    for (size_t i = 0; i < sizeof nom / sizeof nom[0]; i++) {
        fakeapi_fail(x.f, "PATCH", "/status", nom[i].status, 1);
        ck_assert_int_eq(evictor_nominate(x.k, "ml", "pre", "uid-pre", "node-a", NULL, 5, &err), nom[i].want);
    }
    /* the nudge: the pod's own metadata, which kube-scheduler v1.26 reacts to */
    ck_assert_int_eq(evictor_nudge(x.k, "ml", "pre", "uid-pre", 5, &err), 0);
    json_t *pod = fakeapi_get_pod(x.f, "ml", "pre");
    const char *v = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), GP_REQUEUE_ANNOTATION));
    ck_assert_msg(v && atoll(v) > 0, "annotation %s not set", GP_REQUEUE_ANNOTATION);
    json_decref(pod);
    fakeapi_fail(x.f, "PATCH", "/pods/pre", 403, 1);
    ck_assert_int_eq(evictor_nudge(x.k, "ml", "pre", "uid-pre", 5, &err), 2);
    fakeapi_fail(x.f, "PATCH", "/pods/pre", 500, 1);
    ck_assert_int_eq(evictor_nudge(x.k, "ml", "pre", "uid-pre", 5, &err), -1);
    fakeapi_fail(x.f, "PATCH", "/pods/pre", 404, 1);
    ck_assert_int_eq(evictor_nudge(x.k, "ml", "pre", "uid-pre", 5, &err), 1);
    /* the nudge from 1.32: a condition on the status, a strategic merge patch
     * (it merges by type: kube-scheduler's PodScheduled stays) */
    fakeapi_fail(x.f, "PATCH", "/status", 200, 1);
    ck_assert_int_eq(evictor_nudge_status(x.k, "ml", "pre", "uid-pre", "GPU 0 is held", true, 5, &err), 0);
    gp_fake_req r;
    ck_assert_int_eq(fakeapi_request(x.f, fakeapi_request_count(x.f) - 1, &r), 0);
    ck_assert_str_eq(r.url, "/api/v1/namespaces/ml/pods/pre/status");
    ck_assert_str_eq(r.content_type, "application/strategic-merge-patch+json");
    fakeapi_req_clear(&r);
    b = last_body(&x, url, sizeof url);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")), "uid-pre");
    json_t *c = json_array_get(json_object_get(json_object_get(b, "status"), "conditions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "type")), GP_HELD_CONDITION);
    ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
    ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "GPU 0 is held");
    const char *probe = json_string_value(json_object_get(c, "lastProbeTime"));
    ck_assert_msg(probe && strlen(probe) == 20 && probe[19] == 'Z', "%s", probe ? probe : "(none)");
    ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")), probe);
    json_decref(b);
    /* a later nudge leaves the transition time as it was */
    fakeapi_fail(x.f, "PATCH", "/status", 200, 1);
    ck_assert_int_eq(evictor_nudge_status(x.k, "ml", "pre", "uid-pre", "GPU 0 is held", false, 5, &err), 0);
    b = last_body(&x, url, sizeof url);
    c = json_array_get(json_object_get(json_object_get(b, "status"), "conditions"), 0);
    ck_assert_ptr_null(json_object_get(c, "lastTransitionTime"));
    ck_assert_ptr_nonnull(json_object_get(c, "lastProbeTime"));
    json_decref(b);
    fakeapi_fail(x.f, "PATCH", "/status", 403, 1);
    ck_assert_int_eq(evictor_nudge_status(x.k, "ml", "pre", "uid-pre", "m", false, 5, &err), 2);
    fakeapi_fail(x.f, "PATCH", "/status", 422, 1);
    ck_assert_int_eq(evictor_nudge_status(x.k, "ml", "pre", "uid-pre", "m", false, 5, &err), 1);
    env_down(&x);
}
END_TEST

Suite *suite_evictor(void);
Suite *suite_evictor(void)
{
    Suite *s = suite_create("evictor");
    TCase *t = tcase_create("evictor");
    tcase_add_loop_test(t, eviction_answers, 0, (int)(sizeof answers / sizeof answers[0]));
    tcase_add_test(t, eviction_unreachable);
    tcase_add_test(t, nominate_and_touch);
    suite_add_tcase(s, t);
    return s;
}
