/* test_kube.c -- the API client's accounting: request paths named as kube-apiserver
 * names them, requests and bytes counted by verb and resource, and connections
 * kept for reuse when requests overlap. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "lib/log.h"

typedef struct path_case {
    const char *path, *resource, *sub;
    int named;
} path_case;

static const path_case path_cases[] = {
    {"/api/v1/pods?watch=1&resourceVersion=5", "pods", "", 0},
    {"/api/v1/nodes?limit=500", "nodes", "", 0},
    {"/api/v1/nodes/n1", "nodes", "", 1},
    {"/api/v1/namespaces/default/pods", "pods", "", 0},
    {"/api/v1/namespaces/default/pods/p1", "pods", "", 1},
    {"/api/v1/namespaces/default/pods/p1/binding", "pods", "binding", 1},
    {"/api/v1/namespaces/default/events/p1.17a", "events", "", 1},
    {"/api/v1/namespaces", "namespaces", "", 0},
    {"/api/v1/namespaces/default", "namespaces", "", 1},
    {"/api/v1/namespaces/default/status", "namespaces", "status", 1},
    {"/apis/coordination.k8s.io/v1/namespaces/gpupack-system/leases/gpupack", "leases", "", 1},
    {"/apis/events.k8s.io/v1/namespaces/a/events", "events", "", 0},
    {"/healthz", "", "", -1},
    {"/api/v1", "", "", -1},
};

START_TEST(paths_name_resource_and_subresource)
{
    const path_case *c = &path_cases[_i];
    char res[48], sub[24];
    int named = kube_path_parts(c->path, res, sizeof res, sub, sizeof sub);
    ck_assert_msg(named == c->named, "%s: %d, want %d", c->path, named, c->named);
    ck_assert_str_eq(res, c->resource);
    ck_assert_str_eq(sub, c->sub);
}
END_TEST

/* A pod's paths: segments escaped, the subresource after the name, and named
 * back as the pod resource by the accounting. */
START_TEST(pod_paths_are_escaped_and_named)
{
    static const struct {
        const char *ns, *name, *sub, *path, *acct_sub;
    } c[] = {
        {"default", "p1", NULL, "/api/v1/namespaces/default/pods/p1", ""},
        {"default", "p1", "", "/api/v1/namespaces/default/pods/p1", ""},
        {"ml", "job-0.a", "binding", "/api/v1/namespaces/ml/pods/job-0.a/binding", "binding"},
        {"ml", "p", "eviction", "/api/v1/namespaces/ml/pods/p/eviction", "eviction"},
        {"a b", "x/y?z", "status", "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz/status", "status"},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(c); i++) {
        char *p = kube_pod_path(c[i].ns, c[i].name, c[i].sub);
        ck_assert_str_eq(p, c[i].path);
        char res[48], sub[24];
        ck_assert_int_eq(kube_path_parts(p, res, sizeof res, sub, sizeof sub), 1);
        ck_assert_str_eq(res, "pods");
        ck_assert_str_eq(sub, c[i].acct_sub);
        free(p);
    }
}
END_TEST

/* A counter of kube_metrics' text; 0 when absent. */
static double counter(const char *series)
{
    gp_buf b;
    gp_buf_init(&b, 1u << 20);
    kube_metrics(NULL, &b);
    char key[256];
    snprintf(key, sizeof key, "\n%s ", series);
    const char *p = strstr(b.data, key);
    double v = p ? atof(p + strlen(key)) : 0;
    gp_buf_free(&b);
    return v;
}

typedef struct fixture {
    gp_fakeapi *f;
    gp_kube *k;
} fixture;

static void setup(fixture *x)
{
    gp_log_set_level(GP_LOG_ERROR);
    x->f = fakeapi_start();
    ck_assert_ptr_nonnull(x->f);
    gp_kube_auth a = {.server = (char *)fakeapi_url(x->f)};
    gp_err err;
    x->k = kube_new(&a, &err);
    ck_assert_msg(x->k != NULL, "%s", err.msg);
}

static void teardown(fixture *x)
{
    kube_free(x->k);
    fakeapi_stop(x->f);
}

static void request(gp_kube *k, const char *method, const char *path, const char *body)
{
    gp_kube_resp r;
    gp_err err;
    int rc = kube_request(k, method, path, "application/json", body, 10, NULL, &r, &err);
    ck_assert_msg(rc == 0, "%s %s: %s", method, path, err.msg);
    kube_resp_free(&r);
}

#define REQS(verb, res, sub)                                                                    \
    "gpupack_kube_requests_total{verb=\"" verb "\",resource=\"" res "\",subresource=\"" sub "\"}"

START_TEST(requests_are_counted_by_verb_and_resource)
{
    fixture x;
    setup(&x);
    double list0 = counter(REQS("LIST", "nodes", "")), get0 = counter(REQS("GET", "pods", ""));
    double post0 = counter(REQS("POST", "pods", "binding"));
    double sent0 = counter("gpupack_kube_request_sent_bytes_total{verb=\"POST\",resource=\"pods\","
                           "subresource=\"binding\"}");
    request(x.k, "GET", "/api/v1/nodes?limit=10", NULL);
    request(x.k, "GET", "/api/v1/nodes", NULL);
    request(x.k, "GET", "/api/v1/namespaces/default/pods/nope", NULL);
    static const char binding[] = "{\"kind\":\"Binding\",\"target\":{\"name\":\"n1\"}}";
    request(x.k, "POST", "/api/v1/namespaces/default/pods/nope/binding", binding);
    ck_assert_double_eq(counter(REQS("LIST", "nodes", "")) - list0, 2);
    ck_assert_double_eq(counter(REQS("GET", "pods", "")) - get0, 1);
    ck_assert_double_eq(counter(REQS("POST", "pods", "binding")) - post0, 1);
    ck_assert_double_eq(counter("gpupack_kube_request_sent_bytes_total{verb=\"POST\",resource=\"pods\","
                                "subresource=\"binding\"}") - sent0,
                        (double)strlen(binding));
    teardown(&x);
}
END_TEST

/* kube_call: the status, and a message that names the call for anything but
 * 2xx (the API's own message inside), none for 2xx; 0 when no answer came. */
START_TEST(calls_are_judged_by_status)
{
    fixture x;
    setup(&x);
    json_t *pod = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", "p", "namespace", "ns",
                            "uid", "u1");
    fakeapi_put_pod(x.f, pod);   /* takes it */
    gp_kube_resp r;
    gp_err err;
    strcpy(err.msg, "untouched");
    ck_assert_int_eq(kube_call(x.k, "GET", "/api/v1/namespaces/ns/pods/p", NULL, NULL, 10, NULL,
                               "GET pod ns/p", &r, &err), 200);
    ck_assert_str_eq(err.msg, "untouched");
    ck_assert_msg(strstr(r.body.data, "\"u1\""), "%s", r.body.data);
    kube_resp_free(&r);
    ck_assert_int_eq(kube_call(x.k, "GET", "/api/v1/namespaces/ns/pods/q", NULL, NULL, 10, NULL,
                               "GET pod ns/q", &r, &err), 404);
    ck_assert_msg(strncmp(err.msg, "GET pod ns/q: HTTP 404: ", 24) == 0 && strlen(err.msg) > 24,
                  "%s", err.msg);
    kube_resp_free(&r);
    fakeapi_fail(x.f, "GET", "/api/v1/namespaces/ns/pods/p", 503, 1);
    ck_assert_int_eq(kube_call(x.k, "GET", "/api/v1/namespaces/ns/pods/p", NULL, NULL, 10, NULL,
                               NULL, &r, &err), 503);
    ck_assert_msg(strncmp(err.msg, "HTTP 503", 8) == 0, "%s", err.msg);
    kube_resp_free(&r);
    int port = fakeapi_port(x.f);
    teardown(&x);
    /* nobody listens any more */
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    gp_kube_auth a = {.server = url};
    gp_kube *k = kube_new(&a, &err);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(kube_call(k, "GET", "/api/v1/nodes", NULL, NULL, 2, NULL, "list nodes", &r,
                               &err), 0);
    ck_assert_msg(strncmp(err.msg, "list nodes: ", 12) == 0 && strlen(err.msg) > 12, "%s", err.msg);
    kube_resp_free(&r);
    kube_free(k);
}
END_TEST

typedef struct caller {
    gp_kube *k;
    int i;
} caller;

static void *call_one(void *arg)
{
    caller *c = arg;
    char path[64];
    snprintf(path, sizeof path, "/api/v1/nodes/slow-%d", c->i);
    gp_kube_resp r;
    gp_err err;
    if (kube_request(c->k, "GET", path, NULL, NULL, 10, NULL, &r, &err) == 0)
        kube_resp_free(&r);
    return NULL;
}

/* Runs n requests at once (the fake holds each until all n are in). */
static void overlapping(fixture *x, int n)
{
    fakeapi_gather(x->f, "GET", "/api/v1/nodes/slow-", n, 10000);
    pthread_t th[16];
    caller c[16];
    for (int i = 0; i < n; i++) {
        c[i] = (caller){x->k, i};
        pthread_create(&th[i], NULL, call_one, &c[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* Binds, Events and watches overlap: the connections they opened stay for
 * the next ones instead of being closed past libcurl's per-handle default. */
START_TEST(overlapping_requests_reuse_connections)
{
    fixture x;
    setup(&x);
    double c0 = counter("gpupack_kube_connections_total");
    overlapping(&x, 8);
    double c1 = counter("gpupack_kube_connections_total");
    ck_assert_double_eq(c1 - c0, 8);   /* eight at once: eight connections */
    overlapping(&x, 8);
    ck_assert_double_eq(counter("gpupack_kube_connections_total") - c1, 0);
    teardown(&x);
}
END_TEST

/* The handles a burst left are closed once a whole period passed without
 * them; the one steady traffic keeps using stays. */
START_TEST(idle_handles_a_burst_left_are_closed)
{
    fixture x;
    setup(&x);
    kube_set_idle_period(x.k, 0.3);
    const char *multi = "gpupack_kube_idle_handles_closed_total{kind=\"multi\"}";
    const char *easy = "gpupack_kube_idle_handles_closed_total{kind=\"easy\"}";
    double m0 = counter(multi), e0 = counter(easy);
    overlapping(&x, 8);   /* 8 multi and 8 easy handles idle after it */
    for (int i = 0; i < 3; i++) {   /* then one request at a time, over three periods */
        usleep(350 * 1000);
        request(x.k, "GET", "/api/v1/nodes", NULL);
    }
    /* 7 of each were idle through a whole period: closed (processes running
     * other suites at once may add to the process-wide counters, never take) */
    ck_assert_double_ge(counter(multi) - m0, 7);
    ck_assert_double_ge(counter(easy) - e0, 7);
    double c0 = counter("gpupack_kube_connections_total");
    request(x.k, "GET", "/api/v1/nodes", NULL);   /* the client still works, on its connection */
    ck_assert_double_eq(counter("gpupack_kube_connections_total") - c0, 0);
    teardown(&x);
}
END_TEST

typedef struct cancelled_call {
    gp_kube *k;
    gp_kube_cancel *cancel;
    int rc;
    gp_err err;
} cancelled_call;

static void *call_cancelled(void *arg)
{
    cancelled_call *c = arg;
    gp_kube_resp r;
    c->rc = kube_request(c->k, "GET", "/api/v1/nodes/held", NULL, NULL, 10, c->cancel, &r, &c->err);
    kube_resp_free(&r);
    return NULL;
}

/* The handles a request waits on are kept for the next ones: one a
 * cancellation woke (shutdown, a leader stepping down) must not end or wake
 * the requests that use it after it, and what is kept is freed with the
 * client (LeakSanitizer, valgrind). */
START_TEST(a_cancelled_request_leaves_the_next_ones_alone)
{
    fixture x;
    setup(&x);
    fakeapi_delay(x.f, "GET", "/api/v1/nodes/held", 5000, 1);
    cancelled_call c = {.k = x.k, .cancel = kube_cancel_new()};
    pthread_t th;
    pthread_create(&th, NULL, call_cancelled, &c);
    for (int i = 0; i < 500 && fakeapi_delaying(x.f) < 1; i++)
        usleep(10000);
    ck_assert_int_eq(fakeapi_delaying(x.f), 1);   /* the fake holds it */
    kube_cancel_fire(c.cancel);
    pthread_join(th, NULL);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_msg(strstr(c.err.msg, "cancelled"), "%s", c.err.msg);
    /* the next requests, slow ones among them, get their answers */
    fakeapi_delay(x.f, "GET", "/api/v1/nodes/later", 300, 1);
    for (int i = 0; i < 20; i++)
        request(x.k, "GET", i == 0 ? "/api/v1/nodes/later" : "/api/v1/nodes", NULL);
    overlapping(&x, 8);   /* and as many at once as the bind threads */
    for (int i = 0; i < 20; i++)
        request(x.k, "GET", "/api/v1/nodes", NULL);
    kube_cancel_free(c.cancel);
    teardown(&x);
}
END_TEST

/* The client keeps its handles between requests: nothing of one request
 * (method, body, content type) reaches the next. */
START_TEST(a_request_carries_nothing_of_the_one_before)
{
    fixture x;
    setup(&x);
    size_t base = fakeapi_request_count(x.f);
    static const struct {
        const char *method, *path, *ct, *body;
    } seq[] = {
        {"POST", "/api/v1/namespaces/default/pods/a/binding", "application/json", "{\"kind\":\"Binding\"}"},
        {"GET", "/api/v1/namespaces/default/pods/a", NULL, NULL},
        {"PATCH", "/api/v1/namespaces/default/pods/a", "application/merge-patch+json", "{\"metadata\":{}}"},
        {"DELETE", "/api/v1/namespaces/default/pods/a", NULL, NULL},
        {"GET", "/api/v1/nodes", NULL, NULL},
    };
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < GP_ARRAY_LEN(seq); i++) {
            gp_kube_resp r;
            gp_err err;
            ck_assert_int_eq(kube_request(x.k, seq[i].method, seq[i].path, seq[i].ct, seq[i].body, 10,
                                          NULL, &r, &err), 0);
            kube_resp_free(&r);
        }
    ck_assert_uint_eq(fakeapi_request_count(x.f) - base, 3 * GP_ARRAY_LEN(seq));
    for (size_t n = 0; n < 3 * GP_ARRAY_LEN(seq); n++) {
        size_t i = n % GP_ARRAY_LEN(seq);
        gp_fake_req q;
        ck_assert_int_eq(fakeapi_request(x.f, base + n, &q), 0);
        ck_assert_str_eq(q.method, seq[i].method);
        ck_assert_str_eq(q.url, seq[i].path);
        ck_assert_str_eq(q.body, seq[i].body ? seq[i].body : "");
        if (seq[i].ct)
            ck_assert_str_eq(q.content_type ? q.content_type : "(none)", seq[i].ct);
        else
            ck_assert_msg(q.content_type == NULL, "%s %s sent Content-Type %s", q.method, q.url,
                          q.content_type);
        ck_assert_ptr_null(q.auth);   /* this client has no token */
        fakeapi_req_clear(&q);
    }
    teardown(&x);
}
END_TEST

/* The fake API server the bench uses for restarts and HTTPS (test/fakeapi.h):
 * after fakeapi_restart the same port serves the same objects, and the
 * client's kept connection, cut, is replaced by a new one. */
START_TEST(the_fake_restarts_with_its_state_and_serves_https)
{
    fixture x;
    setup(&x);
    fakeapi_put_pod(x.f, json_pack("{s:{s:s,s:s}}", "metadata", "name", "p", "namespace", "default"));
    request(x.k, "GET", "/api/v1/namespaces/default/pods/p", NULL);
    int port = fakeapi_port(x.f);
    ck_assert_int_eq(fakeapi_restart(x.f, 50), 0);
    ck_assert_int_eq(fakeapi_port(x.f), port);
    gp_kube_resp r;
    gp_err err;
    ck_assert_int_eq(kube_request(x.k, "GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, 10,
                                  NULL, &r, &err), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"name\":\"p\""));
    kube_resp_free(&r);
    teardown(&x);

    char *cert = gp_read_file("test/fixtures/tls/server.crt", 1 << 20, NULL, &err);
    char *key = gp_read_file("test/fixtures/tls/server.key", 1 << 20, NULL, &err);
    ck_assert(cert && key);
    gp_fakeapi *f = fakeapi_start_tls(cert, key);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(strncmp(fakeapi_url(f), "https://", 8), 0);
    gp_kube_auth a = {.server = (char *)fakeapi_url(f), .ca_file = "test/fixtures/tls/ca.crt"};
    gp_kube *k = kube_new(&a, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    ck_assert_int_eq(kube_request(k, "GET", "/version", NULL, NULL, 10, NULL, &r, &err), 0);
    ck_assert_int_eq(r.status, 200);
    kube_resp_free(&r);
    kube_free(k);
    fakeapi_stop(f);
    free(cert);
    free(key);
}
END_TEST

Suite *suite_kube(void);
Suite *suite_kube(void)
{
    Suite *s = suite_create("kube");
    TCase *t = tcase_create("accounting");
    tcase_set_timeout(t, 30);
    tcase_add_loop_test(t, paths_name_resource_and_subresource, 0, (int)GP_ARRAY_LEN(path_cases));
    tcase_add_test(t, pod_paths_are_escaped_and_named);
    tcase_add_test(t, requests_are_counted_by_verb_and_resource);
    tcase_add_test(t, calls_are_judged_by_status);
    tcase_add_test(t, overlapping_requests_reuse_connections);
    tcase_add_test(t, idle_handles_a_burst_left_are_closed);
    tcase_add_test(t, a_cancelled_request_leaves_the_next_ones_alone);
    tcase_add_test(t, a_request_carries_nothing_of_the_one_before);
    tcase_add_test(t, the_fake_restarts_with_its_state_and_serves_https);
    suite_add_tcase(s, t);
    return s;
}
