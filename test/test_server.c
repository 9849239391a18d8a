/* test_server.c -- the HTTP front on port 0, driven with libcurl: routes, limits, errors, races,
 * each over every carrier: plain HTTP/1.1 (libmicrohttpd), HTTP/1.1 over the TLS front (handed to
 * libmicrohttpd) and HTTP/2 over the TLS front (h2.c). */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/server.h"
#include "testutil.h"

/* The carrier the tests of one run use (a loop test's index picks it). */
enum { PLAIN, TLS_H1, TLS_H2, CARRIERS };
static int carrier;
static const char *const carrier_names[CARRIERS] = {"http/1.1", "https http/1.1", "https h2"};
#define TLS_DIR "test/fixtures/tls/"

typedef tu_listener fixture;

static void fx_start_hooks(fixture *f, const char *prefix, size_t max_body,
                           const gp_server_hooks *hooks)
{
    gp_server_config cfg = {.listen = "127.0.0.1:0", .url_prefix = prefix, .max_body = max_body};
    if (carrier != PLAIN) {
        cfg.tls_cert = TLS_DIR "server.crt";
        cfg.tls_key = TLS_DIR "server.key";
    }
    tu_listener_start(f, &cfg, hooks);
}

static void fx_start(fixture *f, const char *prefix, size_t max_body)
{
    fx_start_hooks(f, prefix, max_body, NULL);
}

typedef struct resp {
    long status;
    gp_buf body;
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, p, sz * n) ? 0 : sz * n;
}

/* The carrier's options on a reset handle. */
static void use_carrier(CURL *h)
{
    if (carrier != PLAIN)
        curl_easy_setopt(h, CURLOPT_CAINFO, TLS_DIR "ca.crt");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     carrier == TLS_H2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
}

/* The request went over the carrier asked for. */
static void check_carrier(CURL *h, const char *url)
{
    long v = 0;
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &v);
    ck_assert_msg(v == (carrier == TLS_H2 ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_1_1),
                  "%s: HTTP version %ld over %s", url, v, carrier_names[carrier]);
}

/* One request; body NULL = GET. chunked: send the body without Content-Length. */
static void http(CURL *h, const char *method, const char *url, const char *body, size_t len,
                 bool chunked, resp *r)
{
    gp_buf_init(&r->body, 64u << 20);
    curl_easy_reset(h);
    use_carrier(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (chunked)
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        if (!chunked)
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    CURLcode rc = curl_easy_perform(h);
    ck_assert_msg(rc == CURLE_OK, "%s %s over %s: %s", method, url, carrier_names[carrier],
                  curl_easy_strerror(rc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    check_carrier(h, url);
    curl_slist_free_all(hdrs);
}

static char *read_text(const char *path)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return xstrdup(buf);
}

START_TEST(verbs_over_http)
{
    carrier = _i;
    fixture f;
    fx_start(&f, NULL, 0);
    CURL *h = curl_easy_init();
    char url[128];
    resp r;
    char *filter = read_text("examples/filter-request.json");
    snprintf(url, sizeof url, "%s/filter", f.base);
    http(h, "POST", url, filter, strlen(filter), false, &r);
    ck_assert_int_eq(r.status, 200);
    json_t *j = json_loads(r.body.data, 0, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "NodeNames")), 4);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(j, "FailedAndUnresolvableNodes"), "node-cpu"));
    json_decref(j);
    gp_buf_free(&r.body);
    snprintf(url, sizeof url, "%s/prioritize", f.base);
    http(h, "POST", url, filter, strlen(filter), false, &r);
    ck_assert_int_eq(r.status, 200);
    j = json_loads(r.body.data, 0, NULL);
    ck_assert_uint_eq(json_array_size(j), 5);
    json_decref(j);
    gp_buf_free(&r.body);
    char *bind = read_text("examples/bind-request.json");
    snprintf(url, sizeof url, "%s/bind", f.base);
    http(h, "POST", url, bind, strlen(bind), false, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body.data, "{\"Error\":\"\"}");
    gp_buf_free(&r.body);
    /* the inference policy spreads: the emptiest node, as prioritize ranked it */
    snprintf(url, sizeof url, "%s/inspect/node-t4", f.base);
    http(h, "GET", url, NULL, 0, false, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body.data, "serving"), "%s", r.body.data);
    gp_buf_free(&r.body);
    /* the whole cluster: the compact answer (sent as written) says what the
     * indented one (built as a tree) says, summary included */
    json_t *ans[2];
    for (int k = 0; k < 2; k++) {
        snprintf(url, sizeof url, "%s/inspect%s", f.base, k ? "?compact=1" : "");
        http(h, "GET", url, NULL, 0, false, &r);
        ck_assert_int_eq(r.status, 200);
        ans[k] = json_loads(r.body.data, 0, NULL);
        ck_assert_msg(ans[k] != NULL, "%s", r.body.data);
        ck_assert_msg(k == 0 || !strchr(r.body.data, '\n'), "not compact: %.200s", r.body.data);
        gp_buf_free(&r.body);
    }
    ck_assert_ptr_nonnull(json_object_get(json_object_get(ans[1], "summary"), "gpus"));
    ck_assert_uint_eq(json_array_size(json_object_get(ans[1], "nodes")), 5);
    ck_assert(json_equal(ans[0], ans[1]));
    json_decref(ans[0]);
    json_decref(ans[1]);
    free(filter);
    free(bind);
    curl_easy_cleanup(h);
    tu_listener_stop(&f);
}
END_TEST

/* ------------------------------------------- verb connections of a standby -- */

static bool leads;   /* what keep_verb_connection answers */

static bool keep_if_leading(void *ud)
{
    (void)ud;
    return leads;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    bool *close = ud;
    if (sz * n >= 17 && strncasecmp(p, "Connection: close", 17) == 0)
        *close = true;
    return sz * n;
}

START_TEST(standby_closes_verb_connections)
{
    carrier = _i;
    fixture f;
    gp_server_hooks hooks = {.keep_verb_connection = keep_if_leading};
    fx_start_hooks(&f, NULL, 0, &hooks);
    CURL *h = curl_easy_init();
    char *filter = read_text("examples/filter-request.json");
    char *bind = read_text("examples/bind-request.json");
    char url[128];
    typedef struct step {
        bool leads;
        const char *method, *path;
        const char *body;
        bool close;
    } step;
    const step steps[] = {
        {true, "POST", "/filter", filter, false},      /* the leader keeps its connections */
        {true, "POST", "/prioritize", filter, false},
        {false, "POST", "/filter", filter, true},      /* a standby answers, then closes */
        {false, "POST", "/prioritize", filter, true},
        {false, "POST", "/bind", bind, true},          /* the refused or answered bind too */
        {false, "GET", "/healthz", NULL, false},       /* probes and pages are no verbs */
        {false, "GET", "/metrics", NULL, false},
        {true, "POST", "/filter", filter, false},
    };
    bool closed_before = false;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const step *st = &steps[i];
        leads = st->leads;
        snprintf(url, sizeof url, "%s%s", f.base, st->path);
        bool close = false;
        resp r;
        gp_buf_init(&r.body, 64u << 20);
        curl_easy_reset(h);
        use_carrier(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &close);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
        if (st->body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, st->body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(st->body));
        }
        CURLcode rc = curl_easy_perform(h);
        ck_assert_msg(rc == CURLE_OK, "%s: %s", url, curl_easy_strerror(rc));
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
        ck_assert_int_eq(r.status, 200);
        check_carrier(h, url);
        long fresh = -1;
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &fresh);
        /* HTTP/2 has no Connection header: a GOAWAY follows the answer instead,
         * which the next step's fresh connection shows */
        if (carrier == TLS_H2)
            close = st->close;
        ck_assert_msg(close == st->close, "step %zu %s: Connection: close %d, want %d", i, st->path,
                      close, st->close);
        /* a connection is reused unless the previous answer closed it */
        if (i > 0)
            ck_assert_msg(fresh == (closed_before ? 1 : 0), "step %zu %s: %ld new connection(s)",
                          i, st->path, fresh);
        if (strcmp(st->path, "/metrics") == 0)
            ck_assert_msg(strstr(r.body.data, "gpupack_http_verb_connections_closed_total 3\n"),
                          "%s", r.body.data);
        closed_before = close;
        gp_buf_free(&r.body);
    }
    free(filter);
    free(bind);
    curl_easy_cleanup(h);
    tu_listener_stop(&f);
}
END_TEST

typedef struct route_case {
    const char *method, *path, *body;
    long status;
    const char *fragment;
} route_case;

static const route_case routes[] = {
    {"GET", "/healthz", NULL, 200, "ok"},
    {"GET", "/readyz", NULL, 200, "ok"},
    {"GET", "/metrics", NULL, 200, "gpupack_nodes 5"},
    {"GET", "/inspect", NULL, 200, "node-t4"},
    {"GET", "/inspect/nope", NULL, 404, "node nope is not known"},
    {"GET", "/filter", NULL, 405, "method GET is not allowed"},
    {"POST", "/healthz", "{}", 405, "not allowed"},
    {"GET", "/nothing", NULL, 404, "no route"},
    /* a path that is not UTF-8 once decoded: answered, not a crash (fuzz_h2) */
    {"GET", "/%ff%fe%C3", NULL, 404, "no route GET /???"},
    {"DELETE", "/bind", NULL, 405, "not allowed"},
    {"POST", "/filter", "{", 400, "not valid JSON"},
    {"POST", "/filter", "", 400, "not valid JSON"},
    {"POST", "/bind", "{\"PodName\":1}", 400, "bind needs"},
    {"POST", "/prioritize", "[]", 400, "must be a JSON object"},
};

START_TEST(routes_and_errors)
{
    const route_case *c = &routes[_i % (int)GP_ARRAY_LEN(routes)];
    carrier = _i / (int)GP_ARRAY_LEN(routes);
    fixture f;
    fx_start(&f, NULL, 0);
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s%s", f.base, c->path);
    resp r;
    http(h, c->method, url, c->body, c->body ? strlen(c->body) : 0, false, &r);
    ck_assert_int_eq(r.status, c->status);
    ck_assert_msg(r.body.data && strstr(r.body.data, c->fragment), "%s %s -> %s", c->method,
                  c->path, r.body.data ? r.body.data : "(empty)");
    if (c->status >= 400) {
        json_t *j = json_loads(r.body.data, 0, NULL);
        ck_assert_msg(json_is_string(json_object_get(j, "Error")), "errors are JSON");
        json_decref(j);
    }
    gp_buf_free(&r.body);
    curl_easy_cleanup(h);
    tu_listener_stop(&f);
}
END_TEST

START_TEST(oversized_bodies_get_413)
{
    carrier = _i;
    fixture f;
    fx_start(&f, NULL, 4096);
    CURL *h = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "%s/filter", f.base);
    size_t n = 100000;
    char *big = xmalloc(n + 1);
    memset(big, ' ', n);
    big[n] = '\0';
    resp r;
    http(h, "POST", url, big, n, false, &r);            /* Content-Length over the limit */
    ck_assert_int_eq(r.status, 413);
    ck_assert_msg(strstr(r.body.data, "limit of 4096 bytes"), "%s", r.body.data);
    gp_buf_free(&r.body);
    http(h, "POST", url, big, n, true, &r);              /* chunked, no length announced */
    ck_assert_int_eq(r.status, 413);
    gp_buf_free(&r.body);
    /* the server still answers normally afterwards */
    snprintf(url, sizeof url, "%s/healthz", f.base);
    http(h, "GET", url, NULL, 0, false, &r);
    ck_assert_int_eq(r.status, 200);
    gp_buf_free(&r.body);
    free(big);
    curl_easy_cleanup(h);
    gp_cluster_stats st;
    cluster_stats(f.c, &st);
    ck_assert_uint_eq(st.pods_bound, 1);   /* only the pod from the cluster file */
    tu_listener_stop(&f);
}
END_TEST

START_TEST(url_prefix)
{
    carrier = _i;
    fixture f;
    fx_start(&f, "/gpupack/", 0);
    CURL *h = curl_easy_init();
    char url[128];
    resp r;
    char *filter = read_text("examples/filter-request.json");
    snprintf(url, sizeof url, "%s/gpupack/filter", f.base);
    http(h, "POST", url, filter, strlen(filter), false, &r);
    ck_assert_int_eq(r.status, 200);
    gp_buf_free(&r.body);
    snprintf(url, sizeof url, "%s/filter", f.base);
    http(h, "POST", url, filter, strlen(filter), false, &r);
    ck_assert_int_eq(r.status, 404);
    gp_buf_free(&r.body);
    snprintf(url, sizeof url, "%s/healthz", f.base);   /* probes stay at the root */
    http(h, "GET", url, NULL, 0, false, &r);
    ck_assert_int_eq(r.status, 200);
    gp_buf_free(&r.body);
    free(filter);
    curl_easy_cleanup(h);
    tu_listener_stop(&f);
}
END_TEST

START_TEST(listen_errors)
{
    gp_cluster *c = cluster_new();
    gp_extender *e = extender_new(c, NULL);
    static const char *const bad[] = {"nohost", "127.0.0.1:99999", "127.0.0.1:", "[::1:80",
                                      "example.com:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_server_config cfg = {.listen = bad[i]};
        gp_err err = {{0}};
        ck_assert_ptr_null(server_start(&cfg, e, c, NULL, &err));
        ck_assert_msg(strstr(err.msg, "--listen"), "%s: %s", bad[i], err.msg);
    }
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* ------------------------------------------------- concurrent HTTP binds -- */

typedef struct client {
    const char *base;
    int id, ok;
} client;

static void *http_client(void *arg)
{
    client *cl = arg;
    CURL *h = curl_easy_init();
    for (int i = 0; i < 25; i++) {
        char uid[32], f[700], b[256], url[128];
        snprintf(uid, sizeof uid, "h%d-%d", cl->id, i);
        snprintf(f, sizeof f,
                 "{\"Pod\":{\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"},\"spec\":{\"containers\":"
                 "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"6000\","
                 "\"gpupack.io/gpu-core\":\"20\"}}}]}},\"NodeNames\":[\"node-t4\"]}",
                 uid, uid);
        snprintf(b, sizeof b,
                 "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"%s\",\"Node\":\"node-t4\"}",
                 uid, uid);
        resp r;
        snprintf(url, sizeof url, "%s/filter", cl->base);
        http(h, "POST", url, f, strlen(f), false, &r);
        gp_buf_free(&r.body);
        snprintf(url, sizeof url, "%s/bind", cl->base);
        http(h, "POST", url, b, strlen(b), false, &r);
        if (r.status == 200 && strcmp(r.body.data, "{\"Error\":\"\"}") == 0)
            cl->ok++;
        gp_buf_free(&r.body);
    }
    curl_easy_cleanup(h);
    return NULL;
}

START_TEST(concurrent_http_binds_never_overcommit)
{
    carrier = _i;
    fixture f;
    fx_start(&f, NULL, 0);
    enum { N = 6 };
    pthread_t th[N];
    client cl[N];
    for (int i = 0; i < N; i++) {
        cl[i] = (client){f.base, i, 0};
        pthread_create(&th[i], NULL, http_client, &cl[i]);
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += cl[i].ok;
    }
    /* node-t4: 4 GPUs x 15360 MiB -> at most 2 pods of 6000 MiB per GPU */
    ck_assert_int_eq(ok, 8);
    cluster_rdlock(f.c);
    const gp_node *n = cluster_rd_node(f.c, "node-t4");
    for (int g = 0; g < n->ngpus; g++) {
        ck_assert_int_eq(n->gpus[g].mem_used, 12000);
        ck_assert_int_eq(n->gpus[g].core_used, 400);
    }
    cluster_unlock(f.c);
    tu_listener_stop(&f);
}
END_TEST

Suite *suite_server(void);
Suite *suite_server(void)
{
    Suite *s = suite_create("server");
    TCase *t = tcase_create("http");
    tcase_set_timeout(t, 60);
    /* every test but listen_errors once per carrier */
    tcase_add_loop_test(t, verbs_over_http, 0, CARRIERS);
    tcase_add_loop_test(t, routes_and_errors, 0, CARRIERS * (int)GP_ARRAY_LEN(routes));
    tcase_add_loop_test(t, oversized_bodies_get_413, 0, CARRIERS);
    tcase_add_loop_test(t, url_prefix, 0, CARRIERS);
    tcase_add_test(t, listen_errors);
    tcase_add_loop_test(t, concurrent_http_binds_never_overcommit, 0, CARRIERS);
    tcase_add_loop_test(t, standby_closes_verb_connections, 0, CARRIERS);
    suite_add_tcase(s, t);
    return s;
}
