/* front.c -- the Service in front of gpupack replicas, modelled by a TCP forwarder: it routes
 * each connection to the replica whose Pod carries gpupack.io/leader=true, with or without
 * a readiness gate; and the replicas themselves (a Pod object each plus gpupack). */
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "harness.h"

#define READY_POLL_S 1.0      /* endpoints follow labels and readiness with some delay */

struct e2e_front {
    int lfd, port;
    bool ready_gate;          /* route only to a replica whose /readyz says 200 */
    gp_kube *api;
    pthread_mutex_t mu;
    char name[2][64];         /* replica Pod names and their ports */
    int bport[2];
    _Atomic int route;        /* the port connections go to, 0 = none */
    atomic_bool stop;
    pthread_t acceptor, checker;
};

static size_t drop_body(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

/* The replica answers /readyz 200 (a Ready endpoint) within a second, over
 * TLS when the shipped stanza serves it so (as a kubelet probe would). */
static bool port_ready(int port)
{
    if (port <= 0)
        return false;
    bool tls = false;
    for (const char *const *a = e2e_shipped_gp_args(); *a; a++)
        tls = tls || strcmp(*a, "--tls-cert") == 0;
    char url[64], ca[1100];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/readyz", tls ? "https" : "http", port);
    snprintf(ca, sizeof ca, "%s/test/fixtures/tls/ca.crt", e2e_env.repo);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drop_body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return status == 200;
}

/* The port of a replica whose Pod is labelled leader (and Ready, with the
 * gate); 0 = none. While the API server is down, the last answer stands (as
 * endpoints do). */
static int labelled_port(e2e_front *f, int last)
{
    gp_kube_resp resp;
    gp_err err;
    int port = 0;
    if (kube_request(f->api, "GET",
                     "/api/v1/namespaces/gpupack-system/pods?labelSelector=gpupack.io%2Fleader%3Dtrue",
                     NULL, NULL, 2, NULL, &resp, &err) < 0 || resp.status != 200) {
        kube_resp_free(&resp);
        return last;
    }
    json_t *l = json_loadb(resp.body.data, resp.body.len, 0, NULL);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p) {
        const char *n = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        pthread_mutex_lock(&f->mu);
        for (int k = 0; k < 2 && n && !port; k++)
            if (strcmp(f->name[k], n) == 0 && (!f->ready_gate || port_ready(f->bport[k])))
                port = f->bport[k];
        pthread_mutex_unlock(&f->mu);
    }
    json_decref(l);
    kube_resp_free(&resp);
    return port;
}

static void *checker(void *arg)
{
    e2e_front *f = arg;
    while (!atomic_load(&f->stop)) {
        atomic_store(&f->route, labelled_port(f, atomic_load(&f->route)));
        e2e_sleep(READY_POLL_S);
    }
    return NULL;
}

static void *splice_conn(void *arg)
{
    int *fds = arg;
    int c = fds[0], b = fds[1];
    free(fds);
    char buf[65536];
    struct pollfd p[2] = {{c, POLLIN, 0}, {b, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, 60000) <= 0)
            break;
        int i = (p[0].revents & (POLLIN | POLLHUP | POLLERR)) ? 0 : 1;
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t n = read(p[i].fd, buf, sizeof buf);
        if (n <= 0)
            break;
        int to = p[1 - i].fd;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(to, buf + off, (size_t)(n - off));
            if (w <= 0)
                goto done;
            off += w;
        }
    }
done:
    close(c);
    close(b);
    return NULL;
}

static void *acceptor(void *arg)
{
    e2e_front *f = arg;
    while (!atomic_load(&f->stop)) {
        int c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        int port = atomic_load(&f->route);
        int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (port == 0 || connect(b, (struct sockaddr *)&a, sizeof a) != 0) {
            close(b);
            close(c);   /* no endpoint: the connection is refused */
            continue;
        }
        int *fds = xmalloc(2 * sizeof *fds);
        fds[0] = c;
        fds[1] = b;
        pthread_t t;
        if (pthread_create(&t, NULL, splice_conn, fds) == 0)
            pthread_detach(t);
    }
    return NULL;
}

e2e_front *e2e_front_start(e2e_cp *cp, bool ready_gate)
{
    e2e_front *f = xcalloc(1, sizeof *f);
    f->api = cp->kube;
    f->ready_gate = ready_gate;
    pthread_mutex_init(&f->mu, NULL);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert(bind(f->lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(f->lfd, 64) == 0);
    ck_assert(getsockname(f->lfd, (struct sockaddr *)&a, &len) == 0);
    f->port = ntohs(a.sin_port);
    pthread_create(&f->acceptor, NULL, acceptor, f);
    pthread_create(&f->checker, NULL, checker, f);
    return f;
}

int e2e_front_port(const e2e_front *f)
{
    return f->port;
}

void e2e_front_backend(e2e_front *f, int slot, const char *pod, int port)
{
    pthread_mutex_lock(&f->mu);
    gp_strlcpy(f->name[slot], pod, sizeof f->name[slot]);
    f->bport[slot] = port;
    pthread_mutex_unlock(&f->mu);
}

void e2e_front_stop(e2e_front *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, true);
    shutdown(f->lfd, SHUT_RDWR);
    close(f->lfd);
    pthread_join(f->checker, NULL);
    /* the acceptor may sit in accept(): it is detached with the process */
    pthread_detach(f->acceptor);
    free(f);
}

/* ------------------------------------------------------------ replicas --- */

e2e_gp *e2e_replica_start(e2e_cp *cp, const char *pod, const char *identity, const char *node)
{
    char *path = xasprintf("/api/v1/namespaces/gpupack-system/pods/%s", pod);
    long st = 0;
    json_decref(e2e_api(cp, "GET", path, NULL, &st));
    free(path);
    if (st == 404) {
        json_t *p = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:[{s:s,s:s}]}}", "apiVersion",
                              "v1", "kind", "Pod", "metadata", "name", pod, "namespace",
                              "gpupack-system", "labels", "app.kubernetes.io/name", "gpupack",
                              "spec", "nodeName", node, "containers", "name", "gpupack", "image",
                              "gpupack:latest");
        json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces/gpupack-system/pods", NULL, p));
        json_decref(p);
    }
    char podarg[128];
    snprintf(podarg, sizeof podarg, "gpupack-system/%s", pod);
    const char *extra[24] = {"--leader-elect", "--leader-elect-identity", identity,
                             "--leader-elect-pod", podarg};
    size_t n = 5;
    for (const char *const *a = e2e_shipped_gp_args(); *a && n + 1 < GP_ARRAY_LEN(extra); a++)
        extra[n++] = *a;   /* serve as the shipped stanza expects (TLS + client CA) */
    extra[n] = NULL;
    e2e_gp *g = e2e_gp_start(cp, extra);
    e2e_log("replica %s (%s): pid %d on %s", pod, identity, (int)g->pid, g->url);
    return g;
}
