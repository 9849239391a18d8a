/* kube.c -- libcurl client for the Kubernetes API server: credentials, requests, streams. */
#include "kube/kube.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/log.h"
#include "lib/idlestack.h"
#include "lib/metrics.h"

#define KUBE_USER_AGENT "gpupack/0.1"
#define KUBE_TOKEN_MAX (64u * 1024u)
#define KUBE_CONNECT_TIMEOUT_S 5L
#define KUBE_TOKEN_RECHECK_S 60.0   /* re-read the token file at least this often */
/* Idle connections kept for reuse. Each transfer runs on its own multi handle
 * (so that cancel can wake it); libcurl would size the shared connection cache
 * to 4 per easy handle of that multi, i.e. 4 in all, and close a connection
 * after almost every request once binds, Events and watches overlap. */
#define KUBE_MAX_CONNS 64L
/* Idle multi handles kept for the next request. A multi handle is cheap to
 * use but not to make: each comes with a socket pair (its wake-up channel)
 * and hash tables, made and closed again per request before (a profile at
 * 5,000 nodes: the socket pair's creation and close were about a tenth of the
 * bind threads' CPU). One per thread that talks at once is enough. */
#define KUBE_IDLE_MULTIS 32
#define KUBE_IDLE_EASY 32
/* An idle handle no request took for this long is closed (lib/idlestack.h):
 * after a burst (the binds an API-server restart held back, all at once) the
 * handles it left go again instead of staying for the life of the process. */
#define KUBE_IDLE_TRIM_S 60.0
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void kube_auth_clear(gp_kube_auth *a)
{
    if (!a)
        return;
    free(a->server);
    free(a->ca_file);
    free(a->ca_pem);
    free(a->cert_file);
    free(a->key_file);
    free(a->cert_pem);
    free(a->key_pem);
    free(a->token);
    free(a->token_file);
    free(a->origin);
    memset(a, 0, sizeof *a);
}

static int readable(const char *path, gp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gp_fail(err, "%s: %s", path, strerror(errno));
    fclose(f);
    return 0;
}

int kube_auth_incluster(const char *sa_dir, gp_kube_auth *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return gp_fail(err, "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); "
                            "pass --kubeconfig FILE or --cluster FILE");
    if (!sa_dir)
        sa_dir = SA_DIR;
    bool v6 = strchr(host, ':') != NULL;
    out->server = xasprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    out->token_file = xasprintf("%s/token", sa_dir);
    out->ca_file = xasprintf("%s/ca.crt", sa_dir);
    out->origin = xasprintf("in-cluster service account (%s)", sa_dir);
    if (readable(out->token_file, err) < 0 || readable(out->ca_file, err) < 0) {
        kube_auth_clear(out);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* cancellation: a flag, a condition for sleepers, and the multi handles of
 * calls in flight (curl_multi_wakeup is the one multi call that may be made
 * from another thread) */

struct gp_kube_cancel {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool fired;
    CURLM **active;           /* slots; NULL = free */
    size_t nactive;
};

gp_kube_cancel *kube_cancel_new(void)
{
    gp_kube_cancel *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&c->fired, false);
    return c;
}

void kube_cancel_free(gp_kube_cancel *c)
{
    if (!c)
        return;
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c->active);
    free(c);
}

void kube_cancel_fire(gp_kube_cancel *c)
{
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->fired, true);
    for (size_t i = 0; i < c->nactive; i++)
        if (c->active[i])
            curl_multi_wakeup(c->active[i]);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

bool kube_cancel_fired(gp_kube_cancel *c)
{
    return c && atomic_load(&c->fired);
}

bool kube_cancel_sleep(gp_kube_cancel *c, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (seconds < 0)
        seconds = 0;
    long long ns = (long long)ts.tv_nsec + (long long)((seconds - (double)(long long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&c->mu);
    while (!atomic_load(&c->fired)) {
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
            break;
    }
    bool fired = atomic_load(&c->fired);
    pthread_mutex_unlock(&c->mu);
    return fired;
}

/* Registers m so that fire() wakes it; -1 when already fired. */
static int cancel_attach(gp_kube_cancel *c, CURLM *m)
{
    if (!c)
        return 0;
    int rc = -1;
    pthread_mutex_lock(&c->mu);
    if (!atomic_load(&c->fired)) {
        size_t i;
        for (i = 0; i < c->nactive && c->active[i]; i++)
            ;
        if (i == c->nactive) {
            c->nactive = c->nactive ? 2 * c->nactive : 4;
            c->active = xrealloc(c->active, c->nactive * sizeof *c->active);
            memset(c->active + i, 0, (c->nactive - i) * sizeof *c->active);
        }
        c->active[i] = m;
        rc = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void cancel_detach(gp_kube_cancel *c, CURLM *m)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nactive; i++)
        if (c->active[i] == m)
            c->active[i] = NULL;
    pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------------- */

struct gp_kube {
    gp_kube_auth auth;
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    pthread_mutex_t token_mu;
    char *token;              /* current bearer token (static or from the file) */
    struct stat token_st;     /* of the file when last read */
    double token_read_at;
    pthread_mutex_t idle_mu;
    gp_idlestack idle_multi;   /* CURLM *: multi handles between requests (perform) */
    gp_idlestack idle_easy;    /* CURL *: kube_request's handles between requests */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h;
    (void)access;
    gp_kube *k = ud;
    pthread_mutex_lock(&k->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    gp_kube *k = ud;
    pthread_mutex_unlock(&k->share_mu[data]);
}

/* Reads the token file into k->token (caller holds token_mu). The file is
 * stat'ed before it is read: a rotation in between shows as a change at the
 * next request and the token is read again. */
static int token_load(gp_kube *k, gp_err *err)
{
    const char *path = k->auth.token_file;
    struct stat st;
    if (stat(path, &st) < 0)
        return gp_fail(err, "token file %s: %s", path, strerror(errno));
    size_t n;
    gp_err e;
    char *buf = gp_read_file(path, KUBE_TOKEN_MAX, &n, &e);
    if (!buf)
        return gp_fail(err, "token file %s", e.msg);
    int rc = -1;
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        n--;
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!isgraph((unsigned char)buf[i])) {
            gp_fail(err, "token file %s holds a non-printable byte", path);
            goto out;
        }
    }
    free(k->token);
    k->token = xstrdup(buf);
    k->token_st = st;
    k->token_read_at = gp_mono_s();
    rc = 0;
out:
    free(buf);
    return rc;
}

/* The bearer header for one request (owned; NULL when no token). Re-reads a
 * token file that changed (kubelet swaps a symlink when it rotates). */
static char *token_header(gp_kube *k)
{
    char *h = NULL;
    pthread_mutex_lock(&k->token_mu);
    if (k->auth.token_file) {
        struct stat st;
        bool changed = stat(k->auth.token_file, &st) == 0 &&
                       (st.st_ino != k->token_st.st_ino || st.st_size != k->token_st.st_size ||
                        st.st_mtim.tv_sec != k->token_st.st_mtim.tv_sec ||
                        st.st_mtim.tv_nsec != k->token_st.st_mtim.tv_nsec);
        if (changed || gp_mono_s() - k->token_read_at > KUBE_TOKEN_RECHECK_S) {
            gp_err err;
            if (token_load(k, &err) < 0)
                LOG_WARN("kube: keeping the previous token: %s", err.msg);
            else if (changed)
                LOG_INFO("kube: token file %s changed, re-read it", k->auth.token_file);
        }
    }
    if (k->token && *k->token)
        h = xasprintf("Authorization: Bearer %s", k->token);
    pthread_mutex_unlock(&k->token_mu);
    return h;
}

static char *dup_blob(const char *p, size_t n)
{
    if (!p)
        return NULL;
    char *d = xmalloc(n + 1);
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

gp_kube *kube_new(const gp_kube_auth *auth, gp_err *err)
{
    if (!auth->server || !*auth->server) {
        gp_fail(err, "no API server address");
        return NULL;
    }
    if (strncmp(auth->server, "https://", 8) != 0 && strncmp(auth->server, "http://", 7) != 0) {
        gp_fail(err, "API server address \"%s\" is not an http(s) URL", auth->server);
        return NULL;
    }
    pthread_once(&global_once, global_init);
    gp_kube *k = xcalloc(1, sizeof *k);
    gp_kube_auth *a = &k->auth;
    a->server = xstrdup(auth->server);
    size_t sl = strlen(a->server);
    while (sl > 0 && a->server[sl - 1] == '/')
        a->server[--sl] = '\0';
    a->ca_file = xstrdup(auth->ca_file);
    a->ca_pem = dup_blob(auth->ca_pem, auth->ca_pem_len);
    a->ca_pem_len = auth->ca_pem_len;
    a->cert_file = xstrdup(auth->cert_file);
    a->key_file = xstrdup(auth->key_file);
    a->cert_pem = dup_blob(auth->cert_pem, auth->cert_pem_len);
    a->cert_pem_len = auth->cert_pem_len;
    a->key_pem = dup_blob(auth->key_pem, auth->key_pem_len);
    a->key_pem_len = auth->key_pem_len;
    a->token = xstrdup(auth->token);
    a->token_file = xstrdup(auth->token_file);
    a->insecure = auth->insecure;
    a->origin = xstrdup(auth->origin ? auth->origin : "credentials");
    pthread_mutex_init(&k->token_mu, NULL);
    pthread_mutex_init(&k->idle_mu, NULL);
    idlestack_init(&k->idle_multi, KUBE_IDLE_MULTIS, KUBE_IDLE_TRIM_S, gp_mono_s());
    idlestack_init(&k->idle_easy, KUBE_IDLE_EASY, KUBE_IDLE_TRIM_S, gp_mono_s());
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&k->share_mu[i], NULL);
    k->token = xstrdup(a->token);
    if (a->token_file && token_load(k, err) < 0) {
        kube_free(k);
        return NULL;
    }
    k->share = curl_share_init();
    if (k->share) {
        curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
        curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
        curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    }
    if (a->insecure)
        LOG_WARN("kube: TLS verification of %s is OFF (insecure-skip-tls-verify)", a->server);
    return k;
}

void kube_set_idle_period(gp_kube *k, double seconds)
{
    pthread_mutex_lock(&k->idle_mu);
    k->idle_multi.period = k->idle_easy.period = seconds;
    pthread_mutex_unlock(&k->idle_mu);
}

void kube_free(gp_kube *k)
{
    if (!k)
        return;
    void *p;
    while ((p = idlestack_pop(&k->idle_multi)))
        curl_multi_cleanup(p);
    while ((p = idlestack_pop(&k->idle_easy)))
        curl_easy_cleanup(p);
    idlestack_free(&k->idle_multi);
    idlestack_free(&k->idle_easy);
    pthread_mutex_destroy(&k->idle_mu);
    if (k->share)
        curl_share_cleanup(k->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&k->share_mu[i]);
    pthread_mutex_destroy(&k->token_mu);
    free(k->token);
    kube_auth_clear(&k->auth);
    free(k);
}

const char *kube_server(const gp_kube *k)
{
    return k->auth.server;
}

void kube_resp_free(gp_kube_resp *r)
{
    if (r)
        gp_buf_free(&r->body);
}

/* ---------------------------------------------------------------------- */
/* accounting: every request by verb and resource, as kube-apiserver's own
 * apiserver_request_total names them, and the connections opened; one table
 * for the process (all clients), rendered on /metrics */

#define ACCT_MAX 48               /* distinct (verb, resource, subresource); more go to "other" */

typedef struct acct_row {
    char verb[8], resource[48], sub[24];   /* set once, under acct.mu */
    atomic_ulong requests;
    atomic_ullong sent, received;
} acct_row;

static struct {
    pthread_mutex_t mu;
    acct_row rows[ACCT_MAX];
    size_t n;
    atomic_ulong connections;
    atomic_ulong idle_closed[2];   /* idle handles closed after KUBE_IDLE_TRIM_S: multi, easy */
} acct = {.mu = PTHREAD_MUTEX_INITIALIZER};

int kube_path_parts(const char *path, char *resource, size_t rlen, char *sub, size_t slen)
{
    char seg[5][64];   /* [namespaces NS] RESOURCE [NAME [SUB]] */
    int n = 0;
    resource[0] = sub[0] = '\0';
    const char *p = path;
    if (strncmp(p, "/api/", 5) == 0)
        p += 5;
    else if (strncmp(p, "/apis/", 6) == 0)
        p += 6;
    else
        return -1;
    int skip = path[4] == '/' ? 1 : 2;   /* the version; the group too under /apis */
    while (*p && *p != '?' && n < 5) {
        size_t l = strcspn(p, "/?");
        if (skip > 0) {
            skip--;
        } else {
            if (l >= sizeof seg[0])
                return -1;
            memcpy(seg[n], p, l);
            seg[n++][l] = '\0';
        }
        p += l;
        if (*p == '/')
            p++;
    }
    int base = 0;
    if (n >= 3 && strcmp(seg[0], "namespaces") == 0 &&
        !(n == 3 && (strcmp(seg[2], "status") == 0 || strcmp(seg[2], "finalize") == 0)))
        base = 2;   /* namespaces/NS/RESOURCE[/NAME[/SUB]] */
    if (n <= base)
        return -1;
    gp_strlcpy(resource, seg[base], rlen);
    if (n > base + 2)
        gp_strlcpy(sub, seg[base + 2], slen);
    return n > base + 1;   /* 1: a named object, 0: the collection */
}

/* The row of a request (rows never move: counters may be added without the
 * lock). A watch counts as a request when it opens; its bytes as they come. */
static acct_row *acct_row_of(const char *method, const char *path, bool watch)
{
    char res[48], sub[24];
    int named = kube_path_parts(path, res, sizeof res, sub, sizeof sub);
    if (named < 0) {
        gp_strlcpy(res, "other", sizeof res);
        sub[0] = '\0';
    }
    const char *verb = watch ? "WATCH" : strcmp(method, "GET") == 0 && named == 0 ? "LIST" : method;
    pthread_mutex_lock(&acct.mu);
    acct_row *r = NULL;
    for (size_t i = 0; i < acct.n && !r; i++)
        if (strcmp(acct.rows[i].verb, verb) == 0 && strcmp(acct.rows[i].resource, res) == 0 &&
            strcmp(acct.rows[i].sub, sub) == 0)
            r = &acct.rows[i];
    if (!r && acct.n < ACCT_MAX - 1) {
        r = &acct.rows[acct.n++];
        gp_strlcpy(r->verb, verb, sizeof r->verb);
        gp_strlcpy(r->resource, res, sizeof r->resource);
        gp_strlcpy(r->sub, sub, sizeof r->sub);
    }
    if (!r) {   /* the last row collects everything past the table */
        r = &acct.rows[ACCT_MAX - 1];
        gp_strlcpy(r->verb, "other", sizeof r->verb);
        gp_strlcpy(r->resource, "other", sizeof r->resource);
        r->sub[0] = '\0';
        acct.n = ACCT_MAX;
    }
    pthread_mutex_unlock(&acct.mu);
    return r;
}

/* Adds a finished transfer's connections, and a request's bytes (a stream's
 * came in as they arrived). */
static void acct_done(acct_row *r, CURL *h, bool stream)
{
    long conns = 0;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
    atomic_fetch_add(&acct.connections, conns > 0 ? (unsigned long)conns : 0);
    if (stream)
        return;
    curl_off_t up = 0, down = 0;
    curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up);
    curl_easy_getinfo(h, CURLINFO_SIZE_DOWNLOAD_T, &down);
    atomic_fetch_add(&r->requests, 1);
    atomic_fetch_add(&r->sent, up > 0 ? (unsigned long long)up : 0);
    atomic_fetch_add(&r->received, down > 0 ? (unsigned long long)down : 0);
}

void kube_metrics(void *unused, gp_buf *out)
{
    (void)unused;
    static const struct {
        const char *name, *help;
        int what;
    } fam[] = {
        {"gpupack_kube_requests_total",
         "Requests to the API server, by verb (as kube-apiserver counts them) and resource.", 0},
        {"gpupack_kube_request_sent_bytes_total",
         "Request body bytes sent to the API server, by verb and resource.", 1},
        {"gpupack_kube_response_received_bytes_total",
         "Response body bytes received from the API server (watch streams included), by verb "
         "and resource.", 2},
    };
    pthread_mutex_lock(&acct.mu);
    size_t n = acct.n;
    pthread_mutex_unlock(&acct.mu);   /* rows below n are set for good */
    for (size_t f = 0; f < GP_ARRAY_LEN(fam); f++) {
        metrics_header(out, fam[f].name, "counter", fam[f].help);
        for (size_t i = 0; i < n; i++) {
            acct_row *r = &acct.rows[i];
            char res[48], sub[24], labels[160];
            metrics_label_value(res, sizeof res, r->resource);
            metrics_label_value(sub, sizeof sub, r->sub);
            snprintf(labels, sizeof labels, "verb=\"%s\",resource=\"%s\",subresource=\"%s\"", r->verb,
                     res, sub);
            unsigned long long v = fam[f].what == 0   ? atomic_load(&r->requests)
                                   : fam[f].what == 1 ? atomic_load(&r->sent)
                                                      : atomic_load(&r->received);
            metrics_u(out, fam[f].name, labels, v);
        }
    }
    metrics_header(out, "gpupack_kube_connections_total", "counter",
                   "Connections (TCP and TLS handshakes) opened to the API server; the other "
                   "requests reused one.");
    metrics_u(out, "gpupack_kube_connections_total", NULL, atomic_load(&acct.connections));
    metrics_header(out, "gpupack_kube_idle_handles_closed_total", "counter",
                   "libcurl handles kept for reuse and closed after a minute unused (the ones a "
                   "burst of requests left): multi handles (a socket pair each) and easy handles.");
    metrics_u(out, "gpupack_kube_idle_handles_closed_total", "kind=\"multi\"",
              atomic_load(&acct.idle_closed[0]));
    metrics_u(out, "gpupack_kube_idle_handles_closed_total", "kind=\"easy\"",
              atomic_load(&acct.idle_closed[1]));
}

/* ---------------------------------------------------------------------- */

typedef struct xfer {
    gp_buf *body;              /* non-stream body, or a stream's error body */
    bool body_overflow;
    gp_kube_data_fn fn;        /* stream: receives 200 bodies */
    gp_kube_open_fn on_open;   /* stream: told the status once headers are in */
    void *ud;
    bool opened;
    bool fn_aborted;
    CURL *easy;
    long status;               /* known once headers are in */
    acct_row *acct;            /* stream: where its bytes count */
} xfer;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->status == 0)
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
    if (x->fn && x->status == 200) {
        atomic_fetch_add(&x->acct->received, n);
        if (x->fn(x->ud, p, n) < 0) {
            x->fn_aborted = true;
            return 0;
        }
        return n;
    }
    if (gp_buf_append(x->body, p, n) < 0) {
        x->body_overflow = true;
        return 0;
    }
    return n;
}

/* Spots the end of the final header block (not a 100 Continue's). */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->opened && (n == 2 && p[0] == '\r' && p[1] == '\n')) {
        long st = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &st);
        if (st >= 200) {
            x->opened = true;
            x->status = st;
            if (x->on_open)
                x->on_open(x->ud, st);
        }
    }
    return n;
}

/* A handle with what every request of this client sets: protocol, time-outs,
 * TLS and credentials (easy_prepare adds the request's own). */
static CURL *easy_common(gp_kube *k)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_USERAGENT, KUBE_USER_AGENT);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, KUBE_CONNECT_TIMEOUT_S);
    /* a vanished peer (no FIN) shows up within a minute, not at the stall limit */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    if (k->share)
        curl_easy_setopt(h, CURLOPT_SHARE, k->share);
    const gp_kube_auth *a = &k->auth;
    if (a->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (a->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, a->ca_file);
    if (a->ca_pem) {
        struct curl_blob b = {.data = a->ca_pem, .len = a->ca_pem_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (a->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, a->cert_file);
    if (a->cert_pem) {
        struct curl_blob b = {.data = a->cert_pem, .len = a->cert_pem_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
    }
    if (a->cert_file || a->cert_pem)
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    if (a->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, a->key_file);
    if (a->key_pem) {
        struct curl_blob b = {.data = a->key_pem, .len = a->key_pem_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
    }
    if (a->key_file || a->key_pem)
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    return h;
}

/* The request's own part: its URL, where its answer goes, and the headers
 * (the bearer token as it is now: the file may have been rotated). */
static void easy_prepare(gp_kube *k, CURL *h, const char *path, struct curl_slist **hdrs, xfer *x)
{
    char *url = xasprintf("%s%s", k->auth.server, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    *hdrs = curl_slist_append(*hdrs, "Accept: application/json");
    char *auth = token_header(k);
    if (auth) {
        *hdrs = curl_slist_append(*hdrs, auth);
        free(auth);
    }
    x->easy = h;
}

static CURL *easy_new(gp_kube *k, const char *path, struct curl_slist **hdrs, xfer *x)
{
    CURL *h = easy_common(k);
    if (h)
        easy_prepare(k, h, path, hdrs, x);
    return h;
}

/* The client's stacks of idle handles (multi and easy), under idle_mu: the
 * most recent one, or NULL; and a push that says whether there was room. A
 * push also closes, once a minute, the handles of that stack no request took
 * all that time. */
static void *idle_pop(gp_kube *k, gp_idlestack *st)
{
    pthread_mutex_lock(&k->idle_mu);
    void *p = idlestack_pop(st);
    pthread_mutex_unlock(&k->idle_mu);
    return p;
}

static bool idle_push(gp_kube *k, gp_idlestack *st, void *p)
{
    void *old[KUBE_IDLE_MULTIS > KUBE_IDLE_EASY ? KUBE_IDLE_MULTIS : KUBE_IDLE_EASY];
    pthread_mutex_lock(&k->idle_mu);
    bool room = idlestack_push(st, p);
    int n = idlestack_trim(st, gp_mono_s(), old, (int)GP_ARRAY_LEN(old));
    pthread_mutex_unlock(&k->idle_mu);
    bool multi = st == &k->idle_multi;
    for (int i = 0; i < n; i++) {
        if (multi)
            curl_multi_cleanup(old[i]);
        else
            curl_easy_cleanup(old[i]);
    }
    if (n)
        atomic_fetch_add(&acct.idle_closed[multi ? 0 : 1], (unsigned long)n);
    return room;
}

/* A handle for kube_request: an idle one (easy_give), else a new one.
 * Making a handle and setting the credentials on it cost about as much CPU
 * as a small request's TLS work. */
static CURL *easy_take(gp_kube *k, const char *path, struct curl_slist **hdrs, xfer *x)
{
    CURL *h = idle_pop(k, &k->idle_easy);
    if (!h)
        h = easy_common(k);
    if (h)
        easy_prepare(k, h, path, hdrs, x);
    return h;
}

/* Back to the idle ones after a request that ended normally, with every
 * option kube_request sets per request undone (its next user sets its own);
 * closed after anything else, or when enough are idle. */
static void easy_give(gp_kube *k, CURL *h, bool reuse)
{
    if (reuse) {
        curl_easy_setopt(h, CURLOPT_URL, NULL);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);   /* the method back to GET */
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 0L);
        if (idle_push(k, &k->idle_easy, h))
            return;
    }
    curl_easy_cleanup(h);
}

/* A multi handle no other transfer uses: an idle one, else a new one. */
static CURLM *multi_take(gp_kube *k)
{
    CURLM *m = idle_pop(k, &k->idle_multi);
    if (!m) {
        m = curl_multi_init();
        if (m)
            curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, KUBE_MAX_CONNS);
    }
    return m;
}

/* Back to the idle ones once its transfer is removed (the connection stays in
 * the share's cache, not in the multi handle), or closed when enough are idle. */
static void multi_give(gp_kube *k, CURLM *m)
{
    if (!idle_push(k, &k->idle_multi, m))
        curl_multi_cleanup(m);
}

/* Runs one transfer on a multi handle of its own so that cancel can wake it.
 * Returns the curl result; CURLE_ABORTED_BY_CALLBACK when cancelled. */
static CURLcode perform(gp_kube *k, CURL *h, gp_kube_cancel *cancel)
{
    CURLM *m = multi_take(k);
    if (!m)
        return CURLE_OUT_OF_MEMORY;
    CURLcode res = CURLE_ABORTED_BY_CALLBACK;
    if (cancel_attach(cancel, m) < 0) {
        multi_give(k, m);
        return res;
    }
    curl_multi_add_handle(m, h);
    for (;;) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc != CURLM_OK) {
            res = CURLE_RECV_ERROR;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *msg = curl_multi_info_read(m, &left);
            res = (msg && msg->msg == CURLMSG_DONE) ? msg->data.result : CURLE_RECV_ERROR;
            break;
        }
        if (kube_cancel_fired(cancel)) {
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        mc = curl_multi_poll(m, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK) {
            res = CURLE_RECV_ERROR;
            break;
        }
        if (kube_cancel_fired(cancel)) {
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
    }
    cancel_detach(cancel, m);
    curl_multi_remove_handle(m, h);
    multi_give(k, m);
    return res;
}

int kube_request(gp_kube *k, const char *method, const char *path, const char *content_type,
                 const char *body, double timeout_s, gp_kube_cancel *cancel, gp_kube_resp *resp,
                 gp_err *err)
{
    memset(resp, 0, sizeof *resp);
    gp_buf_init(&resp->body, GP_KUBE_BODY_MAX);
    xfer x = {.body = &resp->body};
    struct curl_slist *hdrs = NULL;
    int rc = -1;
    CURLcode res = CURLE_FAILED_INIT;
    CURL *h = easy_take(k, path, &hdrs, &x);
    if (!h) {
        gp_fail(err, "%s %s: cannot create a curl handle", method, path);
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");   /* big lists come gzipped */
    }
    if (body) {
        char *ct = xasprintf("Content-Type: %s", content_type ? content_type : "application/json");
        hdrs = curl_slist_append(hdrs, ct);
        free(ct);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (timeout_s > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    res = perform(k, h, cancel);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    acct_done(acct_row_of(method, path, false), h, false);
    if (x.body_overflow) {
        gp_fail(err, "%s %s: response body exceeds %zu bytes", method, path, resp->body.max);
        goto out;
    }
    if (res == CURLE_ABORTED_BY_CALLBACK && kube_cancel_fired(cancel)) {
        gp_fail(err, "%s %s: cancelled", method, path);
        goto out;
    }
    if (res != CURLE_OK) {
        gp_fail(err, "%s %s%s: %s", method, kube_server(k), path, curl_easy_strerror(res));
        goto out;
    }
    rc = 0;
out:
    if (h)
        easy_give(k, h, res == CURLE_OK && !x.body_overflow);
    curl_slist_free_all(hdrs);   /* after: the handle points at the list until then */
    return rc;
}

int kube_stream(gp_kube *k, const char *path, double stall_s, double max_s,
                gp_kube_cancel *cancel, gp_kube_open_fn on_open, gp_kube_data_fn fn, void *ud,
                long *status, gp_buf *errbody, gp_err *err)
{
    *status = 0;
    gp_buf_init(errbody, GP_KUBE_ERRBODY_MAX);
    xfer x = {.body = errbody, .fn = fn, .on_open = on_open, .ud = ud,
              .acct = acct_row_of("GET", path, true)};
    atomic_fetch_add(&x.acct->requests, 1);
    struct curl_slist *hdrs = NULL;
    int rc = -1;
    CURL *h = easy_new(k, path, &hdrs, &x);
    if (!h) {
        gp_fail(err, "GET %s: cannot create a curl handle", path);
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    if (stall_s > 0) {
        long t = (long)stall_s;
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, t < 1 ? 1L : t);
    }
    if (max_s > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(max_s * 1000));
    CURLcode res = perform(k, h, cancel);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    acct_done(x.acct, h, true);
    if (res == CURLE_ABORTED_BY_CALLBACK && kube_cancel_fired(cancel)) {
        gp_fail(err, "watch %s: cancelled", path);
        goto out;
    }
    if (x.fn_aborted) {
        gp_fail(err, "watch %s: aborted by the reader", path);
        goto out;
    }
    if (res == CURLE_WRITE_ERROR && x.body_overflow) {
        /* an error answer bigger than we keep: the status is what matters */
        rc = 0;
        goto out;
    }
    if (res == CURLE_OPERATION_TIMEDOUT) {
        gp_fail(err, "watch %s%s: no data for %.0f s or over %.0f s in total (stuck stream)",
                kube_server(k), path, stall_s, max_s);
        goto out;
    }
    if (res != CURLE_OK) {
        gp_fail(err, "watch %s%s: %s", kube_server(k), path, curl_easy_strerror(res));
        goto out;
    }
    rc = 0;
out:
    curl_slist_free_all(hdrs);
    if (h)
        curl_easy_cleanup(h);
    return rc;
}

/* ---------------------------------------------------------------------- */

void kube_status_message(const char *body, size_t len, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    out[0] = '\0';
    if (!body || len == 0) {
        gp_strlcpy(out, "(empty body)", outlen);
        return;
    }
    json_t *j = json_loadb(body, len, 0, NULL);
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (msg && *msg) {
        gp_strlcpy(out, msg, outlen);
    } else {
        size_t n = 0;
        for (size_t i = 0; i < len && n + 1 < outlen && n < 200; i++) {
            unsigned char c = (unsigned char)body[i];
            out[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : ' ';
        }
        while (n > 0 && out[n - 1] == ' ')
            n--;
        out[n] = '\0';
    }
    json_decref(j);
}

char *kube_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *o = xmalloc(3 * n + 1), *p = o;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return o;
}

char *kube_pod_path(const char *ns, const char *name, const char *sub)
{
    char *ens = kube_escape(ns), *ename = kube_escape(name);
    char *path = sub && *sub ? xasprintf("/api/v1/namespaces/%s/pods/%s/%s", ens, ename, sub)
                             : xasprintf("/api/v1/namespaces/%s/pods/%s", ens, ename);
    free(ens);
    free(ename);
    return path;
}

long kube_call(gp_kube *k, const char *method, const char *path, const char *content_type,
               const char *body, double timeout_s, gp_kube_cancel *cancel, const char *what,
               gp_kube_resp *resp, gp_err *err)
{
    gp_err e;
    const char *sep = what ? ": " : "";
    what = what ? what : "";
    if (kube_request(k, method, path, content_type, body, timeout_s, cancel, resp, &e) < 0) {
        gp_fail(err, "%s%s%s", what, sep, e.msg);
        return 0;
    }
    if (resp->status < 200 || resp->status > 299) {
        char msg[300];
        kube_status_message(resp->body.data, resp->body.len, msg, sizeof msg);
        gp_fail(err, "%s%sHTTP %ld: %s", what, sep, resp->status, msg);
    }
    return resp->status;
}

gp_patch_outcome kube_patch_pod(gp_kube *k, const char *ns, const char *name, const char *sub,
                                const char *ctype, const char *body, double timeout_s,
                                gp_kube_cancel *cancel, gp_err *err)
{
    char *path = kube_pod_path(ns, name, sub);
    gp_kube_resp r;
    long st = kube_call(k, "PATCH", path, ctype, body, timeout_s, cancel, NULL, &r, err);
    kube_resp_free(&r);
    free(path);
    return st / 100 == 2                           ? GP_PATCH_DONE
           : st == 404 || st == 409 || st == 422 ? GP_PATCH_GONE
           : st == 401 || st == 403               ? GP_PATCH_REFUSED
                                                  : GP_PATCH_RETRY;
}
