/* test_h2.c -- HTTP/2 on the TLS front: many requests (binds among them) share one
 * connection and never over-commit; the limits of a connection hold against a
 * hand-driven client (a request that never finishes is reset, an idle
 * connection gets a GOAWAY, headers past their bound reset the stream, a
 * client that does not speak HTTP/2 is dropped), and the server still serves
 * afterwards. The same routes over both protocols: test_server, test_guard. */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http/server.h"
#include "testutil.h"

#define TLS_DIR "test/fixtures/tls/"

typedef tu_listener fixture;

static void fx_start(fixture *f, unsigned idle_s, unsigned request_s)
{
    gp_server_config cfg = {.listen = "127.0.0.1:0", .tls_cert = TLS_DIR "server.crt",
                            .tls_key = TLS_DIR "server.key", .h2_idle_s = idle_s,
                            .h2_request_s = request_s};
    tu_listener_start(f, &cfg, NULL);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    return gp_buf_append(ud, p, sz * n) ? 0 : sz * n;
}

/* One GET over HTTP/1.1 (so that it does not count as an HTTP/2 connection). */
static char *get_h1(const fixture *f, const char *path)
{
    char url[128];
    snprintf(url, sizeof url, "%s%s", f->base, path);
    gp_buf b;
    gp_buf_init(&b, 16u << 20);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, TLS_DIR "ca.crt");
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    CURLcode rc = curl_easy_perform(h);
    ck_assert_msg(rc == CURLE_OK, "%s: %s", url, curl_easy_strerror(rc));
    curl_easy_cleanup(h);
    return b.data ? b.data : xstrdup("");
}

static double metric(const fixture *f, const char *series)
{
    char *m = get_h1(f, "/metrics");
    double v = tu_metric_in(m, series);
    free(m);
    return v;
}

/* ---------------------------------------------- one shared connection -- */

typedef struct call {
    CURL *h;
    gp_buf body;
    char *payload;
    long status;
} call;

/* Runs every call at once over one multiplexed HTTP/2 connection. */
static void run_multiplexed(CURLM *m, call *calls, int n, const char *base, const char *path)
{
    char url[128];
    snprintf(url, sizeof url, "%s%s", base, path);
    for (int i = 0; i < n; i++) {
        call *c = &calls[i];
        gp_buf_init(&c->body, 1u << 20);
        c->h = curl_easy_init();
        curl_easy_setopt(c->h, CURLOPT_URL, url);
        curl_easy_setopt(c->h, CURLOPT_CAINFO, TLS_DIR "ca.crt");
        curl_easy_setopt(c->h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(c->h, CURLOPT_PIPEWAIT, 1L);   /* wait for the connection, do not open more */
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, c->payload);
        curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->body);
        curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 30L);
        curl_multi_add_handle(m, c->h);
    }
    int running = 1;
    while (running) {
        ck_assert_int_eq(curl_multi_perform(m, &running), CURLM_OK);
        if (running)
            curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)))
        ck_assert_msg(msg->data.result == CURLE_OK, "%s", curl_easy_strerror(msg->data.result));
    for (int i = 0; i < n; i++) {
        call *c = &calls[i];
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
        long v = 0;
        curl_easy_getinfo(c->h, CURLINFO_HTTP_VERSION, &v);
        ck_assert_int_eq(v, CURL_HTTP_VERSION_2_0);
        curl_multi_remove_handle(m, c->h);
        curl_easy_cleanup(c->h);
    }
}

/* 30 filters at once, then their 30 binds at once, all streams of one
 * connection: node-t4 (4 GPUs of 15360 MiB) takes exactly 8 pods of 6000 MiB,
 * whatever order the streams are answered in. */
START_TEST(many_requests_share_one_connection)
{
    fixture f;
    fx_start(&f, 0, 0);
    enum { N = 30 };
    call *filters = xcalloc(N, sizeof *filters), *binds = xcalloc(N, sizeof *binds);
    for (int i = 0; i < N; i++) {
        filters[i].payload = xasprintf(
            "{\"Pod\":{\"metadata\":{\"name\":\"m%d\",\"uid\":\"m%d\"},\"spec\":{\"containers\":"
            "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"6000\","
            "\"gpupack.io/gpu-core\":\"20\"}}}]}},\"NodeNames\":[\"node-t4\"]}", i, i);
        binds[i].payload = xasprintf(
            "{\"PodName\":\"m%d\",\"PodNamespace\":\"default\",\"PodUID\":\"m%d\",\"Node\":\"node-t4\"}",
            i, i);
    }
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    run_multiplexed(m, filters, N, f.base, "/filter");
    run_multiplexed(m, binds, N, f.base, "/bind");
    curl_multi_cleanup(m);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(filters[i].status, 200);
        ck_assert_msg(strstr(filters[i].body.data, "node-t4"), "%s", filters[i].body.data);
        ck_assert_int_eq(binds[i].status, 200);
        ok += strcmp(binds[i].body.data, "{\"Error\":\"\"}") == 0;
        gp_buf_free(&filters[i].body);
        gp_buf_free(&binds[i].body);
        free(filters[i].payload);
        free(binds[i].payload);
    }
    free(filters);
    free(binds);
    ck_assert_int_eq(ok, 8);
    cluster_rdlock(f.c);
    const gp_node *n = cluster_rd_node(f.c, "node-t4");
    for (int g = 0; g < n->ngpus; g++)
        ck_assert_int_eq(n->gpus[g].mem_used, 12000);
    cluster_unlock(f.c);
    /* one HTTP/2 connection carried the 60 requests */
    ck_assert_double_eq(metric(&f, "gpupack_http_connections_by_protocol_total{protocol=\"h2\"}"), 1);
    ck_assert_double_eq(metric(&f, "gpupack_http2_events_total{event=\"stream\"}"), 2 * N);
    tu_listener_stop(&f);
}
END_TEST

/* ------------------------------------------------- a hand-driven client -- */

typedef struct raw {
    int fd;
    gnutls_session_t ses;
    gnutls_certificate_credentials_t cred;
} raw;

/* A TLS connection that asks for `proto` through ALPN (no certificate checks:
 * the test is about what comes after). */
static void raw_open(raw *r, int port, const char *proto)
{
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(r->fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {.tv_sec = 1};
    setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(gnutls_certificate_allocate_credentials(&r->cred), 0);
    ck_assert_int_eq(gnutls_init(&r->ses, GNUTLS_CLIENT), 0);
    ck_assert_int_eq(gnutls_set_default_priority(r->ses), 0);
    ck_assert_int_eq(gnutls_credentials_set(r->ses, GNUTLS_CRD_CERTIFICATE, r->cred), 0);
    gnutls_datum_t p = {(unsigned char *)proto, (unsigned)strlen(proto)};
    ck_assert_int_eq(gnutls_alpn_set_protocols(r->ses, &p, 1, 0), 0);
    gnutls_transport_set_int(r->ses, r->fd);
    int rc;
    do
        rc = gnutls_handshake(r->ses);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    ck_assert_msg(rc == 0, "handshake: %s", gnutls_strerror(rc));
}

static void raw_close(raw *r)
{
    gnutls_deinit(r->ses);
    gnutls_certificate_free_credentials(r->cred);
    close(r->fd);
}

static void raw_send(raw *r, const void *p, size_t n)
{
    ck_assert_int_eq(gnutls_record_send(r->ses, p, n), (ssize_t)n);
}

static void frame(raw *r, uint8_t type, uint8_t flags, uint32_t stream, const void *p, size_t n)
{
    uint8_t h[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                    (uint8_t)(stream >> 24), (uint8_t)(stream >> 16), (uint8_t)(stream >> 8),
                    (uint8_t)stream};
    raw_send(r, h, sizeof h);
    if (n)
        raw_send(r, p, n);
}

/* The client preface and an empty SETTINGS frame. */
static void preface(raw *r)
{
    static const char pri[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    raw_send(r, pri, sizeof pri - 1);
    frame(r, 4, 0, 0, NULL, 0);
}

/* HPACK: a string with a 7-bit length prefix (no Huffman coding). */
static void hpack_str(gp_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (n < 127) {
        uint8_t c = (uint8_t)n;
        gp_buf_append(b, &c, 1);
    } else {
        uint8_t c = 127;
        gp_buf_append(b, &c, 1);
        for (n -= 127; n >= 128; n >>= 7) {
            c = (uint8_t)(0x80 | (n & 0x7f));
            gp_buf_append(b, &c, 1);
        }
        c = (uint8_t)n;
        gp_buf_append(b, &c, 1);
    }
    gp_buf_append(b, s, strlen(s));
}

/* A HEADERS frame with literal fields (name, value pairs, NULL-terminated). */
static void headers(raw *r, uint32_t stream, bool end_stream, const char *const *nv)
{
    gp_buf b;
    gp_buf_init(&b, 1u << 16);
    for (size_t i = 0; nv[i]; i += 2) {
        uint8_t lit = 0;   /* literal without indexing, new name */
        gp_buf_append(&b, &lit, 1);
        hpack_str(&b, nv[i]);
        hpack_str(&b, nv[i + 1]);
    }
    frame(r, 1, (uint8_t)(0x4 | (end_stream ? 0x1 : 0)), stream, b.data, b.len);
    gp_buf_free(&b);
}

static uint32_t last_error;   /* of the last RST_STREAM or GOAWAY read */

/* Reads frames until one of `type` (on `stream`, or any stream when stream
 * is -1) comes, for up to `secs`; returns whether it came. Answers SETTINGS. */
static bool wait_frame(raw *r, uint8_t type, long stream, int secs)
{
    double end = gp_mono_s() + secs;
    uint8_t h[9];
    size_t have = 0;
    static uint8_t payload[1 << 16];
    while (gp_mono_s() < end) {
        ssize_t n = gnutls_record_recv(r->ses, h + have, sizeof h - have);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n <= 0)
            return false;   /* the server closed the connection */
        if ((have += (size_t)n) < sizeof h)
            continue;
        have = 0;
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        uint32_t id = ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) & 0x7fffffff;
        ck_assert_uint_le(len, sizeof payload);
        for (size_t got = 0; got < len;) {
            n = gnutls_record_recv(r->ses, payload + got, len - got);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                continue;
            ck_assert_int_gt(n, 0);
            got += (size_t)n;
        }
        if (h[3] == 4 && !(h[4] & 1))
            frame(r, 4, 1, 0, NULL, 0);   /* ACK the server's SETTINGS */
        if (h[3] == 3 && len >= 4)   /* RST_STREAM: the error code */
            last_error = (uint32_t)payload[0] << 24 | (uint32_t)payload[1] << 16 | (uint32_t)payload[2] << 8 | payload[3];
        if (h[3] == 7 && len >= 8)   /* GOAWAY: the error code after the last stream id */
            last_error = (uint32_t)payload[4] << 24 | (uint32_t)payload[5] << 16 | (uint32_t)payload[6] << 8 | payload[7];
        if (h[3] == type && (stream < 0 || id == (uint32_t)stream))
            return true;
    }
    return false;
}

/* Whether the server closes the connection within secs (reads until the end). */
static bool closed_within(raw *r, int secs)
{
    double end = gp_mono_s() + secs;
    char buf[4096];
    while (gp_mono_s() < end) {
        ssize_t n = gnutls_record_recv(r->ses, buf, sizeof buf);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n <= 0)
            return true;
    }
    return false;
}

enum { F_HEADERS = 1, F_RST_STREAM = 3, F_GOAWAY = 7 };

static const char *const healthz[] = {":method", "GET", ":scheme", "https", ":path", "/healthz",
                                      ":authority", "127.0.0.1", NULL};

/* A request whose body never comes is reset after the request time limit;
 * the connection goes on serving the next request. */
START_TEST(stalled_request_is_reset)
{
    fixture f;
    fx_start(&f, 0, 1);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    preface(&r);
    static const char *const post[] = {":method", "POST", ":scheme", "https", ":path", "/filter",
                                       ":authority", "127.0.0.1", "content-length", "100", NULL};
    headers(&r, 1, false, post);   /* ... and no DATA */
    ck_assert_msg(wait_frame(&r, F_RST_STREAM, 1, 10), "no RST_STREAM for the stalled request");
    ck_assert_uint_eq(last_error, 8);   /* CANCEL: gpupack's limit, not a protocol error */
    headers(&r, 3, true, healthz);
    ck_assert_msg(wait_frame(&r, F_HEADERS, 3, 10), "no answer on the same connection afterwards");
    raw_close(&r);
    ck_assert_double_ge(metric(&f, "gpupack_http2_events_total{event=\"stalled\"}"), 1);
    tu_listener_stop(&f);
}
END_TEST

/* A connection without streams gets a GOAWAY after the idle time, and is
 * closed if the client keeps it open. */
START_TEST(idle_connection_gets_goaway)
{
    fixture f;
    fx_start(&f, 1, 0);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    preface(&r);
    headers(&r, 1, true, healthz);
    ck_assert(wait_frame(&r, F_HEADERS, 1, 10));
    ck_assert_msg(wait_frame(&r, F_GOAWAY, 0, 10), "no GOAWAY on an idle connection");
    ck_assert_uint_eq(last_error, 0);   /* NO_ERROR: a graceful end */
    ck_assert_msg(closed_within(&r, 15), "the idle connection stayed open after its GOAWAY");
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* A :path past its bound resets that stream only; the connection goes on. */
START_TEST(oversized_headers_reset_the_stream)
{
    fixture f;
    fx_start(&f, 0, 0);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    preface(&r);
    char *path = xmalloc(10001);
    path[0] = '/';
    memset(path + 1, 'a', 9999);
    path[10000] = '\0';
    const char *const long_path[] = {":method", "GET", ":scheme", "https", ":path", path,
                                     ":authority", "127.0.0.1", NULL};
    headers(&r, 1, true, long_path);
    ck_assert_msg(wait_frame(&r, F_RST_STREAM, 1, 10), "no RST_STREAM for a 10,000-byte :path");
    headers(&r, 3, true, healthz);
    ck_assert_msg(wait_frame(&r, F_HEADERS, 3, 10), "no answer on the same connection afterwards");
    free(path);
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* A client that negotiates h2 and then sends something else loses the
 * connection (a GOAWAY first); the server serves the next client. */
START_TEST(bad_preface_ends_the_connection)
{
    fixture f;
    fx_start(&f, 0, 0);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_send(&r, junk, sizeof junk - 1);
    ck_assert_msg(closed_within(&r, 10), "the server kept a connection that sent no preface");
    raw_close(&r);
    ck_assert_double_ge(metric(&f, "gpupack_http2_events_total{event=\"protocol_error\"}"), 1);
    raw_open(&r, server_port(f.s), "h2");
    preface(&r);
    headers(&r, 1, true, healthz);
    ck_assert(wait_frame(&r, F_HEADERS, 1, 10));
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* The frames of one TLS record read whole (gnutls_record_recv returns at most
 * one record): their types and stream ids, in order. Returns how many, 0 at the
 * end or after `secs`. */
static size_t record_frames(raw *r, uint8_t *types, uint32_t *ids, uint8_t *flags, size_t max,
                            int secs)
{
    static uint8_t rec[1 << 15];
    double end = gp_mono_s() + secs;
    ssize_t n;
    do
        n = gnutls_record_recv(r->ses, rec, sizeof rec);
    while ((n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) && gp_mono_s() < end);
    size_t k = 0;
    for (size_t at = 0; n > 0 && at + 9 <= (size_t)n && k < max; k++) {
        size_t len = (size_t)rec[at] << 16 | (size_t)rec[at + 1] << 8 | rec[at + 2];
        types[k] = rec[at + 3];
        flags[k] = rec[at + 4];
        ids[k] = ((uint32_t)rec[at + 5] << 24 | (uint32_t)rec[at + 6] << 16 |
                  (uint32_t)rec[at + 7] << 8 | rec[at + 8]) & 0x7fffffff;
        at += 9 + len;
        ck_assert_uint_le(at, (size_t)n);   /* a frame never spans two of these records */
    }
    return k;
}

enum { F_DATA = 0, F_SETTINGS = 4 };

/* An answer's HEADERS and DATA leave in one TLS record (one write), not one
 * record per frame. */
START_TEST(an_answer_is_one_record)
{
    fixture f;
    fx_start(&f, 0, 0);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    preface(&r);
    ck_assert(wait_frame(&r, F_SETTINGS, 0, 10));   /* the server's SETTINGS, answered */
    headers(&r, 1, true, healthz);
    uint8_t types[16], flags[16];
    uint32_t ids[16];
    bool headers_seen = false;
    for (int rec = 0; rec < 8 && !headers_seen; rec++) {
        size_t n = record_frames(&r, types, ids, flags, 16, 10);
        ck_assert_uint_gt(n, 0);
        for (size_t i = 0; i < n; i++) {
            if (types[i] != F_HEADERS || ids[i] != 1)
                continue;
            headers_seen = true;
            ck_assert_msg(i + 1 < n && types[i + 1] == F_DATA && ids[i + 1] == 1 &&
                              (flags[i + 1] & 1),
                          "the answer's DATA did not follow its HEADERS in the same record");
        }
    }
    ck_assert(headers_seen);
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* Requests that arrive together, in one TCP segment, are all answered: the
 * server reads ahead of GnuTLS, and what it read but has not handled yet
 * counts as waiting input (poll would not see it in the socket any more). */
START_TEST(requests_read_together_are_all_answered)
{
    fixture f;
    fx_start(&f, 0, 0);
    raw r;
    raw_open(&r, server_port(f.s), "h2");
    int one = 1, zero = 0;
    ck_assert_int_eq(setsockopt(r.fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one), 0);
    preface(&r);
    for (uint32_t id = 1; id <= 9; id += 2)
        headers(&r, id, true, healthz);   /* five requests, ten records */
    ck_assert_int_eq(setsockopt(r.fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero), 0);
    unsigned answered = 0;   /* a bit per stream */
    uint8_t types[16], flags[16];
    uint32_t ids[16];
    double end = gp_mono_s() + 10;
    while (answered != 0x1f && gp_mono_s() < end) {
        size_t n = record_frames(&r, types, ids, flags, 16, 1);
        /* nothing is sent meanwhile (not even the SETTINGS ACK): a byte
         * arriving would make the socket readable and hide a server that
         * leaves read-ahead input unhandled */
        for (size_t i = 0; i < n; i++) {
            if (types[i] == F_HEADERS && ids[i] % 2 == 1 && ids[i] <= 9)
                answered |= 1u << (ids[i] / 2);
        }
    }
    ck_assert_msg(answered == 0x1f, "answered streams: %#x of 0x1f", answered);
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* A TLS client that offers no ALPN at all is served HTTP/1.1. */
START_TEST(no_alpn_is_http11)
{
    fixture f;
    fx_start(&f, 0, 0);
    raw r;
    raw_open(&r, server_port(f.s), "x-none");   /* a protocol the server does not offer */
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    raw_send(&r, req, sizeof req - 1);
    char buf[512] = "";
    size_t have = 0;
    double end = gp_mono_s() + 10;
    while (have < sizeof buf - 1 && gp_mono_s() < end) {
        ssize_t n = gnutls_record_recv(r.ses, buf + have, sizeof buf - 1 - have);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
    raw_close(&r);
    tu_listener_stop(&f);
}
END_TEST

/* Connections one after another are served by the threads the first ones
 * started: a thread per connection grew the heap by GnuTLS's per-thread state
 * with every connection ever made. Each GET below is a connection of its own
 * (a new curl handle), closed before the next. */
START_TEST(connection_threads_are_reused)
{
    fixture f;
    fx_start(&f, 0, 0);
    double threads0 = metric(&f, "gpupack_http2_events_total{event=\"thread_started\"}");
    double conns0 = metric(&f, "gpupack_http_connections_total");
    enum { N = 24 };
    for (int i = 0; i < N; i++)
        free(get_h1(&f, "/healthz"));
    double conns = metric(&f, "gpupack_http_connections_total") - conns0;
    double threads = metric(&f, "gpupack_http2_events_total{event=\"thread_started\"}") - threads0;
    ck_assert_msg(threads0 >= 1, "the first GET's connection had a thread: %.0f", threads0);
    ck_assert_msg(conns >= N, "connections: %.0f", conns);
    /* the next connection may come while the last one's thread still closes
     * it, so a thread or two more may start; far fewer than the connections */
    ck_assert_msg(threads <= N / 3, "%.0f threads for %.0f connections", threads, conns);
    tu_listener_stop(&f);
}
END_TEST

Suite *suite_h2(void);
Suite *suite_h2(void)
{
    Suite *s = suite_create("h2");
    TCase *t = tcase_create("h2");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, many_requests_share_one_connection);
    tcase_add_test(t, stalled_request_is_reset);
    tcase_add_test(t, idle_connection_gets_goaway);
    tcase_add_test(t, oversized_headers_reset_the_stream);
    tcase_add_test(t, bad_preface_ends_the_connection);
    tcase_add_test(t, no_alpn_is_http11);
    tcase_add_test(t, an_answer_is_one_record);
    tcase_add_test(t, requests_read_together_are_all_answered);
    tcase_add_test(t, connection_threads_are_reused);
    suite_add_tcase(s, t);
    return s;
}
