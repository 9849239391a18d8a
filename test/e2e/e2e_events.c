/* e2e_events.c -- Events on the real API server: kube-scheduler binds a GPU
 * pod through gpupack and the pod gets GPUsAssigned (GPU, model, memory,
 * compute, node, policy); a bind the API server refuses gets GPUBindFailed,
 * and the same failure again raises that Event's count instead of adding
 * one; gpupack's counters agree. */
#include <curl/curl.h>
#include <string.h>

#include "harness.h"

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    return sz * n;
}

/* POST body to gpupack; returns the HTTP status. */
static long gp_post(e2e_gp *g, const char *path, const char *body)
{
    char url[160];
    snprintf(url, sizeof url, "%s%s", g->url, path);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    /* the verbs need kube-scheduler's client certificate (the shipped stanza is mTLS) */
    char ca[1200], crt[1200], key[1200];
    snprintf(ca, sizeof ca, "%s/test/fixtures/tls/ca.crt", e2e_env.repo);
    snprintf(crt, sizeof crt, "%s/test/fixtures/tls/client.crt", e2e_env.repo);
    snprintf(key, sizeof key, "%s/test/fixtures/tls/client.key", e2e_env.repo);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_SSLCERT, crt);
    curl_easy_setopt(h, CURLOPT_SSLKEY, key);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return status;
}

/* The Event of `reason` about ns/pod, whole (owned), or NULL. */
static json_t *event_of(e2e_cp *cp, const char *ns, const char *pod, const char *reason)
{
    char *path = xasprintf("/api/v1/namespaces/%s/events?fieldSelector=involvedObject.name%%3D%s,"
                           "reason%%3D%s", ns, pod, reason);
    json_t *l = e2e_api_ok(cp, "GET", path, NULL, NULL);
    free(path);
    json_t *ev = json_incref(json_array_get(json_object_get(l, "items"), 0));
    ck_assert_uint_le(json_array_size(json_object_get(l, "items")), 1);   /* aggregated, not repeated */
    json_decref(l);
    return ev;
}

START_TEST(bind_events_on_the_pod)
{
    /* GPUsAssigned is opt-in (the default is failures only) */
    static const char *const args[] = {"--bind-events", "gpu", NULL};
    e2e_world_opts o = {.gpupack_args = args};
    e2e_world *w = e2e_world_up(&o);
    e2e_ns_create(w->cp, "e2e-events");
    e2e_node_create(w->cp, e2e_node_gpupack("ev-a100", 2, 81920, "A100-SXM4-80GB"));
    json_t *p = e2e_pod("e2e-events", "infer");
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "8192", "gpupack.io/gpu-core", "25", NULL);
    e2e_pod_create(w->cp, p);
    ck_assert_int_eq(e2e_wait_bound(w->cp, "e2e-events", 1, 60), 1);
    char *m = e2e_wait_pod_event(w->cp, "e2e-events", "infer", "GPUsAssigned", "on ev-a100", 30);
    ck_assert_msg(m != NULL, "no GPUsAssigned event on the pod");
    e2e_log("GPUsAssigned: %s", m);
    ck_assert_msg(strstr(m, "assigned GPU ") && strstr(m, "(A100-SXM4-80GB, 8192 MiB, 25 %) on ev-a100, policy "),
                  "message: %s", m);
    free(m);
    json_t *ev = event_of(w->cp, "e2e-events", "infer", "GPUsAssigned");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "Normal");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "source"), "component")), "gpupack");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "involvedObject"), "kind")), "Pod");
    json_decref(ev);

    /* a bind the API server refuses: a pod it does not have */
    const char *filter = "{\"Pod\":{\"metadata\":{\"name\":\"ghost\",\"namespace\":\"e2e-events\","
                         "\"uid\":\"e2e-ghost-uid\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                         "\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"1024\"}}}]}},"
                         "\"NodeNames\":[\"ev-a100\"]}";
    const char *bind = "{\"PodName\":\"ghost\",\"PodNamespace\":\"e2e-events\","
                       "\"PodUID\":\"e2e-ghost-uid\",\"Node\":\"ev-a100\"}";
    ck_assert_int_eq(gp_post(w->gp, "/filter", filter), 200);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(gp_post(w->gp, "/bind", bind), 200);   /* {"Error": "..."} */
    m = e2e_wait_pod_event(w->cp, "e2e-events", "ghost", "GPUBindFailed", "binding to ev-a100 failed", 30);
    ck_assert_msg(m != NULL, "no GPUBindFailed event");
    e2e_log("GPUBindFailed: %s", m);
    free(m);
    /* the second failure is counted on the first Event */
    double end = gp_mono_s() + 20;
    long count = 0;
    while (count < 2 && gp_mono_s() < end) {
        ev = event_of(w->cp, "e2e-events", "ghost", "GPUBindFailed");
        count = (long)json_integer_value(json_object_get(ev, "count"));
        ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "Warning");
        json_decref(ev);
        if (count < 2)
            e2e_sleep(0.25);
    }
    ck_assert_int_eq(count, 2);
    ck_assert_double_ge(e2e_gp_metric(w->gp, "gpupack_events_total{result=\"created\"}"), 2);
    ck_assert_double_ge(e2e_gp_metric(w->gp, "gpupack_events_total{result=\"aggregated\"}"), 1);
    ck_assert_double_eq(e2e_gp_metric(w->gp, "gpupack_events_total{result=\"failed\"}"), 0);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(events)
{
    Suite *s = suite_create("e2e events");
    E2E_TEST(s, bind_events_on_the_pod, 180);
    return s;
}
