/* test_guard.c -- hostile clients against the HTTP front: mutual TLS on the verbs,
 * pod uids kept out of /inspect, bodies refused before decoding, the in-flight
 * memory budget, and the binary's peak RSS under the worst bodies. */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/server.h"
#include "testutil.h"
#include "lib/yamljson.h"

#define TLS_DIR "test/fixtures/tls/"

typedef tu_listener fixture;

typedef struct resp {
    long status;
    gp_buf body;
    char retry_after[16];
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, p, sz * n) ? 0 : sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    resp *r = ud;
    if (sz * n > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
        snprintf(r->retry_after, sizeof r->retry_after, "%.*s", (int)(sz * n - 13), p + 13);
    return sz * n;
}

/* The protocol the HTTPS calls of a test ask for (a loop test's index picks
 * it): HTTP/2 through ALPN, or HTTP/1.1. Plain-HTTP calls use HTTP/1.1. */
static bool use_h2;

/* One request (body NULL = GET) presenting the client certificate `cert`
 * (a name under test/fixtures/tls/ without extension, or NULL for none). */
static void http(const char *url, const char *cert, const char *body, size_t len, resp *r)
{
    memset(r, 0, sizeof *r);
    gp_buf_init(&r->body, 1u << 20);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_CAINFO, TLS_DIR "ca.crt");
    char crt[128], key[128];
    if (cert) {
        snprintf(crt, sizeof crt, TLS_DIR "%s.crt", cert);
        snprintf(key, sizeof key, TLS_DIR "%s.key", cert);
        curl_easy_setopt(h, CURLOPT_SSLCERT, crt);
        curl_easy_setopt(h, CURLOPT_SSLKEY, key);
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    bool h2 = use_h2 && strncmp(url, "https:", 6) == 0;
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, h2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    CURLcode rc = curl_easy_perform(h);
    ck_assert_msg(rc == CURLE_OK, "%s: %s", url, curl_easy_strerror(rc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    long v = 0;
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &v);
    ck_assert_msg(v == (h2 ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_1_1), "%s: HTTP version %ld", url, v);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
}

static char *read_text(const char *path, size_t *len)
{
    gp_err err;
    char *t = gp_read_file(path, 1u << 20, len, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

/* ------------------------------------------------------- mutual TLS -- */

typedef struct auth_case {
    const char *path;
    const char *cert;       /* NULL: no client certificate */
    long status;
    const char *fragment;
} auth_case;

static const auth_case auth_cases[] = {
    {"/filter", NULL, 401, "needs a TLS client certificate"},
    {"/prioritize", NULL, 401, "needs a TLS client certificate"},
    {"/bind", NULL, 401, "needs a TLS client certificate"},
    {"/filter", "other/client", 403, "not trusted"},
    {"/bind", "other/client", 403, "not trusted"},
    {"/filter", "client", 200, "NodeNames"},
    {"/prioritize", "client", 200, "Score"},
    {"/healthz", NULL, 200, "ok"},
    {"/readyz", NULL, 200, "ok"},
    {"/metrics", NULL, 200, "gpupack_http_unauthenticated_total"},
    {"/inspect", NULL, 200, "node-a100"},
};

START_TEST(verbs_need_a_trusted_client_certificate)
{
    const auth_case *c = &auth_cases[_i % (int)GP_ARRAY_LEN(auth_cases)];
    use_h2 = _i >= (int)GP_ARRAY_LEN(auth_cases);   /* each case over HTTP/1.1, then HTTP/2 */
    gp_server_config cfg = {.listen = "127.0.0.1:0", .tls_cert = TLS_DIR "server.crt",
                            .tls_key = TLS_DIR "server.key", .client_ca = TLS_DIR "ca.crt"};
    fixture f;
    tu_listener_start(&f, &cfg, NULL);
    size_t len = 0;
    char *body = c->path[1] == 'f' || c->path[1] == 'p' ? read_text("examples/filter-request.json", &len)
                 : c->path[1] == 'b'                    ? read_text("test/fixtures/tls/bind-new-pod.json", &len)
                                                        : NULL;
    char url[128];
    resp before, r, after;
    snprintf(url, sizeof url, "%s/inspect", f.base);
    http(url, NULL, NULL, 0, &before);
    snprintf(url, sizeof url, "%s%s", f.base, c->path);
    http(url, c->cert, body, len, &r);
    ck_assert_msg(r.status == c->status, "%s with %s: HTTP %ld, want %ld: %s", c->path,
                  c->cert ? c->cert : "no certificate", r.status, c->status, r.body.data);
    ck_assert_msg(strstr(r.body.data, c->fragment), "%s: %s", c->path, r.body.data);
    /* a refused call changed nothing */
    snprintf(url, sizeof url, "%s/inspect", f.base);
    http(url, NULL, NULL, 0, &after);
    if (c->status >= 400)
        ck_assert_str_eq(before.body.data, after.body.data);
    gp_buf_free(&before.body);
    gp_buf_free(&r.body);
    gp_buf_free(&after.body);
    free(body);
    tu_listener_stop(&f);
}
END_TEST

static double metric(const char *base, const char *name);   /* below */

/* Each connection's chain is checked once; a chain that verified before is
 * trusted from the cache, and never a different one because of it. */
START_TEST(verified_client_chains_are_remembered)
{
    use_h2 = _i;
    gp_server_config cfg = {.listen = "127.0.0.1:0", .tls_cert = TLS_DIR "server.crt",
                            .tls_key = TLS_DIR "server.key", .client_ca = TLS_DIR "ca.crt"};
    fixture f;
    tu_listener_start(&f, &cfg, NULL);
    size_t len;
    char *body = read_text("examples/filter-request.json", &len);
    char url[128];
    snprintf(url, sizeof url, "%s/filter", f.base);
    static const struct {
        const char *cert;
        long status;
    } seq[] = {{"client", 200}, {"other/client", 403}, {"client", 200},
               {NULL, 401},     {"other/client", 403}, {"client", 200}};
    for (size_t i = 0; i < GP_ARRAY_LEN(seq); i++) {
        resp r;
        http(url, seq[i].cert, body, len, &r);   /* a new connection (and handshake) each */
        ck_assert_msg(r.status == seq[i].status, "call %zu with %s: HTTP %ld, want %ld", i,
                      seq[i].cert ? seq[i].cert : "no certificate", r.status, seq[i].status);
        gp_buf_free(&r.body);
    }
    /* verified in full: the first trusted chain and both untrusted ones */
    ck_assert_double_eq(metric(f.base, "gpupack_http_client_chain_checks_total{result=\"verified\"}"), 3);
    ck_assert_double_eq(metric(f.base, "gpupack_http_client_chain_checks_total{result=\"cached\"}"), 2);
    /* six calls and three /metrics reads, each on its own connection */
    ck_assert_double_eq(metric(f.base, "gpupack_http_connections_total"), 9);
    free(body);
    tu_listener_stop(&f);
}
END_TEST

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* The stalled client's transport: what GnuTLS sends goes out on the socket, and
 * it never gets to read, so its handshake stops after the ClientHello whatever
 * the timing (reading the socket, a fast server's answer could let it finish). */
static ssize_t push_to_socket(gnutls_transport_ptr_t fd, const void *buf, size_t n)
{
    return send((int)(intptr_t)fd, buf, n, MSG_NOSIGNAL);
}

static ssize_t pull_nothing(gnutls_transport_ptr_t fd, void *buf, size_t n)
{
    errno = EAGAIN;
    return -1;
}

/* Clients that stop in the middle of a TLS handshake -- one silent after
 * connecting, one after its ClientHello (the server has answered and waits for
 * the client's certificate, the state kube-scheduler's new connections sit in
 * while it computes) -- leave the server idle: its threads wait in poll()
 * instead of retrying the handshake in a loop. The bound is a resource bound,
 * not a speed one: a spinning thread burns a core for the whole second (about
 * 1 s of CPU), an idle server next to nothing; the test allows 0.3 s. */
START_TEST(stalled_tls_handshakes_do_not_spin)
{
    gp_server_config cfg = {.listen = "127.0.0.1:0", .tls_cert = TLS_DIR "server.crt",
                            .tls_key = TLS_DIR "server.key", .client_ca = TLS_DIR "ca.crt"};
    fixture f;
    tu_listener_start(&f, &cfg, NULL);
    int silent = tcp_connect(server_port(f.s));
    int hello = tcp_connect(server_port(f.s));
    gnutls_certificate_credentials_t cred;
    gnutls_session_t sess;
    ck_assert_int_eq(gnutls_certificate_allocate_credentials(&cred), 0);
    ck_assert_int_eq(gnutls_init(&sess, GNUTLS_CLIENT | GNUTLS_NONBLOCK), 0);
    ck_assert_int_eq(gnutls_set_default_priority(sess), 0);
    ck_assert_int_eq(gnutls_credentials_set(sess, GNUTLS_CRD_CERTIFICATE, cred), 0);
    gnutls_transport_set_ptr(sess, (gnutls_transport_ptr_t)(intptr_t)hello);
    gnutls_transport_set_push_function(sess, push_to_socket);
    gnutls_transport_set_pull_function(sess, pull_nothing);
    /* sends the ClientHello, then is told there is nothing to read */
    ck_assert_int_eq(gnutls_handshake(sess), GNUTLS_E_AGAIN);
    char peek;
    for (int i = 0; i < 200 && recv(hello, &peek, 1, MSG_PEEK | MSG_DONTWAIT) != 1; i++)
        usleep(10000);   /* the server's answer is here: it now waits for us */
    ck_assert_int_eq(recv(hello, &peek, 1, MSG_PEEK | MSG_DONTWAIT), 1);
    double cpu0 = process_cpu_s();
    usleep(1000000);
    double used = process_cpu_s() - cpu0;
    fprintf(stderr, "guard: CPU while two TLS handshakes stalled for 1 s: %.3f s\n", used);
    ck_assert_msg(used < 0.3, "the server used %.2f s of CPU in 1 s with two stalled handshakes", used);
    gnutls_deinit(sess);
    gnutls_certificate_free_credentials(cred);
    close(hello);
    close(silent);
    tu_listener_stop(&f);
}
END_TEST

START_TEST(client_ca_needs_tls)
{
    gp_cluster *c = cluster_new();
    gp_extender *e = extender_new(c, NULL);
    gp_server_config cfg = {.listen = "127.0.0.1:0", .client_ca = TLS_DIR "ca.crt"};
    gp_err err = {{0}};
    ck_assert_ptr_null(server_start(&cfg, e, c, NULL, &err));
    ck_assert_msg(strstr(err.msg, "--client-ca needs TLS"), "%s", err.msg);
    cfg.tls_cert = TLS_DIR "server.crt";
    cfg.tls_key = TLS_DIR "server.key";
    cfg.client_ca = "/nonexistent/ca.crt";
    ck_assert_ptr_null(server_start(&cfg, e, c, NULL, &err));
    ck_assert_msg(strstr(err.msg, "/nonexistent/ca.crt"), "%s", err.msg);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(inspect_hides_pod_uids_unless_asked)
{
    static const char *const paths[] = {"/inspect", "/inspect/node-a100"};
    for (int show = 0; show < 2; show++) {
        gp_server_config cfg = {.listen = "127.0.0.1:0", .show_uids = show};
        fixture f;
        tu_listener_start(&f, &cfg, NULL);
        for (size_t i = 0; i < GP_ARRAY_LEN(paths); i++) {
            char url[128];
            snprintf(url, sizeof url, "%s%s", f.base, paths[i]);
            resp r;
            http(url, NULL, NULL, 0, &r);
            ck_assert_int_eq(r.status, 200);
            ck_assert_msg(strstr(r.body.data, "notebook-alice"), "%s", r.body.data);
            bool has_uid = strstr(r.body.data, "0b7c1d2e-0000-4000-8000-00000000a11c") != NULL;
            ck_assert_msg(has_uid == (show == 1), "%s (show_uids %d): %s", paths[i], show,
                          r.body.data);
            gp_buf_free(&r.body);
        }
        tu_listener_stop(&f);
    }
}
END_TEST

/* ---------------------------------------------------- memory bounds -- */

/* prefix + n copies of unit, comma-separated, + suffix (owned). */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix, size_t *len)
{
    gp_buf b;
    gp_buf_init(&b, (size_t)1 << 30);
    ck_assert_int_eq(gp_buf_append(&b, prefix, strlen(prefix)), 0);
    size_t ul = strlen(unit);
    for (size_t i = 0; i < n; i++)
        if ((i && gp_buf_append(&b, ",", 1)) || gp_buf_append(&b, unit, ul))
            ck_abort_msg("body too large");
    ck_assert_int_eq(gp_buf_append(&b, suffix, strlen(suffix)), 0);
    *len = b.len;
    return b.data;
}

/* A body far cheaper to send than to decode is refused before decoding. */
START_TEST(amplifying_body_is_refused_before_decoding)
{
    gp_server_config cfg = {.listen = "127.0.0.1:0"};
    fixture f;
    tu_listener_start(&f, &cfg, NULL);
    size_t len;
    char *body = repeat("{\"Pod\":{},\"Nodes\":{\"items\":[", "{}", 1000000, "]}}", &len);
    char url[128];
    snprintf(url, sizeof url, "%s/filter", f.base);
    resp r;
    http(url, NULL, body, len, &r);
    ck_assert_msg(r.status == 413, "HTTP %ld: %.300s", r.status, r.body.data);
    ck_assert_msg(strstr(r.body.data, "--max-inflight"), "%s", r.body.data);
    gp_buf_free(&r.body);
    free(body);
    tu_listener_stop(&f);
}
END_TEST

/* Value of a metric line "name value" in /metrics text (-1 when absent). */
static double metric(const char *base, const char *name)
{
    char url[128];
    snprintf(url, sizeof url, "%s/metrics", base);
    resp r;
    http(url, NULL, NULL, 0, &r);
    double v = tu_metric_in(r.body.data, name);
    gp_buf_free(&r.body);
    return v;
}

/* While one request holds most of the budget, another gets 503 + Retry-After;
 * once the first is gone, the same request passes. */
START_TEST(inflight_budget_answers_503_then_recovers)
{
    gp_server_config cfg = {.listen = "127.0.0.1:0", .max_inflight = 256u << 10};
    fixture f;
    tu_listener_start(&f, &cfg, NULL);
    /* a slow client: announces 100,000 bytes, sends a few */
    int fd = tcp_connect(server_port(f.s));
    const char *head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       "Content-Length: 100000\r\n\r\n{\"Pod\":";
    ck_assert_int_eq(write(fd, head, strlen(head)), (ssize_t)strlen(head));
    for (int i = 0; i < 500 && metric(f.base, "gpupack_http_inflight_bytes") <= 0; i++)
        usleep(10000);
    ck_assert_double_gt(metric(f.base, "gpupack_http_inflight_bytes"), 200000);

    size_t len;
    char *req = read_text("examples/filter-request.json", &len);
    gp_buf padded;
    gp_buf_init(&padded, 1u << 20);
    ck_assert_int_eq(gp_buf_append(&padded, req, len), 0);
    for (int i = 0; i < 30000; i++)
        ck_assert_int_eq(gp_buf_append(&padded, " ", 1), 0);
    char url[128];
    snprintf(url, sizeof url, "%s/filter", f.base);
    resp r;
    http(url, NULL, padded.data, padded.len, &r);
    ck_assert_msg(r.status == 503, "HTTP %ld: %s", r.status, r.body.data);
    ck_assert_msg(strstr(r.body.data, "server busy"), "%s", r.body.data);
    ck_assert_str_eq(r.retry_after, "1\r\n");
    gp_buf_free(&r.body);
    ck_assert_double_eq(metric(f.base, "gpupack_http_busy_total"), 1);

    close(fd);
    for (int i = 0; i < 500 && metric(f.base, "gpupack_http_inflight_bytes") != 0; i++)
        usleep(10000);
    ck_assert_double_eq(metric(f.base, "gpupack_http_inflight_bytes"), 0);
    http(url, NULL, padded.data, padded.len, &r);
    ck_assert_msg(r.status == 200, "HTTP %ld: %s", r.status, r.body.data);
    gp_buf_free(&r.body);
    gp_buf_free(&padded);
    free(req);
    tu_listener_stop(&f);
}
END_TEST

/* ------------------------------------------- the binary's peak RSS -- */

typedef struct flood {
    const char *url;
    const char *body;
    size_t len;
    int rounds;
} flood;

static void *flood_run(void *arg)
{
    flood *fl = arg;
    CURL *h = curl_easy_init();
    gp_buf sink;
    gp_buf_init(&sink, 1u << 20);
    for (int i = 0; i < fl->rounds; i++) {
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, fl->url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, fl->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)fl->len);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
        (void)curl_easy_perform(h);   /* 413, 503 or an answer: all fine */
        gp_buf_reset(&sink);
    }
    gp_buf_free(&sink);
    curl_easy_cleanup(h);
    return NULL;
}

static long vm_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0)
            v = atol(line + strlen(field) + 1);
    fclose(f);
    return v;
}

/* The worst bodies at default limits, from 8 clients at once, against the
 * real binary: peak RSS (VmHWM) stays under 64 MiB. */
START_TEST(binary_peak_rss_under_worst_bodies)
{
#if defined(__SANITIZE_ADDRESS__)
    return;   /* ASan's shadow memory and quarantine make RSS meaningless */
#endif
    static const char *const args[] = {"--cluster=examples/cluster.yaml", "--listen=127.0.0.1:0",
                                       NULL};
    int port;
    FILE *log;
    pid_t pid = tu_serve(args, &port, &log);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/filter", port);

    size_t n = (4u << 20) / 3 - 16;   /* each body just under the 4 MiB default */
    char *bodies[4];
    size_t lens[4];
    bodies[0] = repeat("{\"Pod\":{},\"Nodes\":{\"items\":[", "{}", n, "]}}", &lens[0]);
    bodies[1] = repeat("{\"Pod\":{},\"NodeNames\":[", "[]", n, "]}", &lens[1]);
    bodies[2] = repeat("{\"Pod\":{\"metadata\":{\"labels\":{\"a\":[", "0", n * 3 / 2 - 64, "]}}}}", &lens[2]);
    bodies[3] = repeat("{\"Pod\":{},\"NodeNames\":[", "\"n\"", n * 3 / 4, "]}", &lens[3]);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_lt(lens[i], 4u << 20);
    pthread_t th[8];
    flood fl[8];
    for (int i = 0; i < 8; i++) {
        fl[i] = (flood){url, bodies[i % 4], lens[i % 4], 3};
        ck_assert_int_eq(pthread_create(&th[i], NULL, flood_run, &fl[i]), 0);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    long hwm = vm_kib(pid, "VmHWM");
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    fclose(log);
    for (int i = 0; i < 4; i++)
        free(bodies[i]);
    fprintf(stderr, "guard: gpupack peak RSS under the worst bodies: %ld KiB\n", hwm);
    ck_assert_msg(hwm > 0 && hwm < 64 * 1024, "VmHWM %ld KiB, goal < 65536 KiB", hwm);
}
END_TEST

Suite *suite_guard(void);
Suite *suite_guard(void)
{
    Suite *s = suite_create("guard");
    TCase *t = tcase_create("tls");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, verbs_need_a_trusted_client_certificate, 0, 2 * (int)GP_ARRAY_LEN(auth_cases));
    tcase_add_loop_test(t, verified_client_chains_are_remembered, 0, 2);
    tcase_add_test(t, stalled_tls_handshakes_do_not_spin);
    tcase_add_test(t, client_ca_needs_tls);
    tcase_add_test(t, inspect_hides_pod_uids_unless_asked);
    suite_add_tcase(s, t);
    t = tcase_create("memory");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, amplifying_body_is_refused_before_decoding);
    tcase_add_test(t, inflight_budget_answers_503_then_recovers);
    tcase_add_test(t, binary_peak_rss_under_worst_bodies);
    suite_add_tcase(s, t);
    return s;
}
