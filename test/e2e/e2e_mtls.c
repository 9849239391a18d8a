/* e2e_mtls.c -- the shipped stanza's mutual TLS against the real kube-scheduler: it
 * binds GPU pods through gpupack over HTTPS with its client certificate, while a
 * caller without a certificate, or with one from another CA, is refused and changes
 * nothing; probes and /inspect stay open and show no pod uids. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NS "e2e-mtls"

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, p, sz * n) ? 0 : sz * n;
}

/* POST body to gpupack's url+path with the client certificate `cert` (a name under
 * test/fixtures/tls/, NULL = none); returns the status, *out the answer (owned). */
static long post(e2e_gp *g, const char *path, const char *cert, const char *body, char **out)
{
    char url[128], ca[1200], crt[1200], key[1200];
    snprintf(url, sizeof url, "%s%s", g->url, path);
    snprintf(ca, sizeof ca, "%s/test/fixtures/tls/ca.crt", e2e_env.repo);
    gp_buf b;
    gp_buf_init(&b, 1u << 20);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    if (cert) {
        snprintf(crt, sizeof crt, "%s/test/fixtures/tls/%s.crt", e2e_env.repo, cert);
        snprintf(key, sizeof key, "%s/test/fixtures/tls/%s.key", e2e_env.repo, cert);
        curl_easy_setopt(h, CURLOPT_SSLCERT, crt);
        curl_easy_setopt(h, CURLOPT_SSLKEY, key);
    }
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(h);
    ck_assert_msg(rc == CURLE_OK, "POST %s: %s", url, curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    *out = b.data ? b.data : xstrdup("");
    return status;
}

/* The counters that tell which protocol callers used, from one /metrics read
 * (which is itself one connection and one request). */
typedef struct proto_counts {
    double h1, h2, streams;
} proto_counts;

static proto_counts protocols(e2e_gp *g)
{
    long st;
    char *m = e2e_gp_get(g, "/metrics", &st);
    ck_assert_int_eq(st, 200);
    proto_counts c = {
        e2e_metric_in(m, "gpupack_http_connections_by_protocol_total{protocol=\"http/1.1\"}"),
        e2e_metric_in(m, "gpupack_http_connections_by_protocol_total{protocol=\"h2\"}"),
        e2e_metric_in(m, "gpupack_http2_events_total{event=\"stream\"}")};
    free(m);
    ck_assert_msg(c.h1 >= 0 && c.h2 >= 0 && c.streams >= 0, "/metrics lacks the protocol counters");
    return c;
}

START_TEST(scheduler_binds_over_mtls_and_strangers_are_refused)
{
    e2e_world *w = e2e_world_up(NULL);
    ck_assert_msg(strncmp(w->gp->url, "https://", 8) == 0, "the shipped stanza is not HTTPS: %s",
                  w->gp->url);
    e2e_ns_create(w->cp, NS);
    e2e_node_create(w->cp, e2e_node_gpupack("mtls-0", 2, 15360, "Tesla-T4"));
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        json_t *p = e2e_pod(NS, name);
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "4096", NULL);
        e2e_pod_create(w->cp, p);
    }
    ck_assert_int_eq(e2e_wait_bound(w->cp, NS, 3, 60), 3);   /* kube-scheduler got through */
    e2e_verdict v;
    e2e_assert_consistent(w->cp, w->gp, 10, &v);

    /* a forged bind of p0 onto the node, without and with a foreign certificate */
    json_t *p0 = e2e_pod_get(w->cp, NS, "p0");
    const char *uid = json_string_value(json_object_get(json_object_get(p0, "metadata"), "uid"));
    char body[512];
    snprintf(body, sizeof body,
             "{\"PodName\":\"p0\",\"PodNamespace\":\"" NS "\",\"PodUID\":\"%s\",\"Node\":\"mtls-0\"}", uid);
    long st;
    char *before = e2e_gp_get(w->gp, "/inspect", &st);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(!strstr(before, uid), "/inspect shows pod uid %s", uid);
    static const struct {
        const char *cert;
        long status;
    } strangers[] = {{NULL, 401}, {"other/client", 403}};
    for (size_t i = 0; i < GP_ARRAY_LEN(strangers); i++) {
        char *out;
        long s = post(w->gp, "/bind", strangers[i].cert, body, &out);
        ck_assert_msg(s == strangers[i].status, "bind with %s: HTTP %ld: %s",
                      strangers[i].cert ? strangers[i].cert : "no certificate", s, out);
        free(out);
    }
    char *after = e2e_gp_get(w->gp, "/inspect", &st);
    ck_assert_str_eq(before, after);
    ck_assert_double_eq(e2e_gp_metric(w->gp, "gpupack_http_unauthenticated_total{reason=\"no_certificate\"}"), 1);
    ck_assert_double_eq(e2e_gp_metric(w->gp, "gpupack_http_unauthenticated_total{reason=\"untrusted\"}"), 1);
    free(before);
    free(after);
    json_decref(p0);
    e2e_assert_consistent(w->cp, w->gp, 10, &v);

    /* kube-scheduler speaks HTTP/2 to gpupack: 20 more pods (a filter and a bind
     * each) come over at most one or two new connections, none of them HTTP/1.1
     * (over HTTP/1.1 it opened about one per two binds: bench/results/scale.md) */
    proto_counts c0 = protocols(w->gp);
    enum { MORE = 20 };
    for (int i = 0; i < MORE; i++) {
        char name[16];
        snprintf(name, sizeof name, "h2-%d", i);
        json_t *p = e2e_pod(NS, name);
        e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "512", NULL);
        e2e_pod_create(w->cp, p);
    }
    ck_assert_int_eq(e2e_wait_bound(w->cp, NS, 3 + MORE, 90), 3 + MORE);
    proto_counts c1 = protocols(w->gp);
    e2e_log("over %d pods: %.0f new HTTP/2 connection(s) (one is this read), %.0f HTTP/1.1, "
            "%.0f HTTP/2 requests", MORE, c1.h2 - c0.h2, c1.h1 - c0.h1, c1.streams - c0.streams);
    ck_assert_msg(c1.h1 == c0.h1, "kube-scheduler opened %.0f HTTP/1.1 connection(s)", c1.h1 - c0.h1);
    ck_assert_msg(c1.h2 - c0.h2 <= 3, "%.0f new HTTP/2 connections for %d pods", c1.h2 - c0.h2, MORE);
    ck_assert_msg(c1.streams - c0.streams >= 2 * MORE, "only %.0f HTTP/2 requests for %d pods",
                  c1.streams - c0.streams, MORE);
    e2e_assert_consistent(w->cp, w->gp, 10, &v);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(mtls)
{
    Suite *s = suite_create("e2e mtls");
    E2E_TEST(s, scheduler_binds_over_mtls_and_strangers_are_refused, 180);
    return s;
}
