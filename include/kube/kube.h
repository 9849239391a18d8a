/* kube.h -- libcurl client for the Kubernetes API server: credentials, requests, streams.
 *
 * One gp_kube per process is enough: it is thread-safe (every call uses its
 * own easy handle; connections and TLS sessions are shared). Calls that can
 * block take a gp_kube_cancel so that shutdown unblocks them at once, even a
 * watch stream that is waiting for data. curl.h stays inside kube.c. */
#ifndef GP_KUBE_H
#define GP_KUBE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/util.h"

/* Largest non-stream response body accepted (one LIST page, one object, a Status). */
#define GP_KUBE_BODY_MAX (64u * 1024u * 1024u)
/* Largest error body kept from a stream request that was not answered 200. */
#define GP_KUBE_ERRBODY_MAX (64u * 1024u)

/* Where the API server is and how to authenticate. PEM blobs are raw bytes
 * (already base64-decoded); a *_file and the matching blob are exclusive.
 * Every member is owned; kube_auth_clear frees them. */
typedef struct gp_kube_auth {
    char *server;                  /* "https://host:port" (no trailing '/') */
    char *ca_file;
    char *ca_pem;
    size_t ca_pem_len;
    char *cert_file, *key_file;
    char *cert_pem, *key_pem;
    size_t cert_pem_len, key_pem_len;
    char *token;                   /* static bearer token */
    char *token_file;              /* re-read whenever it changes (projected SA tokens rotate) */
    bool insecure;                 /* insecure-skip-tls-verify: no peer/host verification */
    char *origin;                  /* where this came from, for messages */
} gp_kube_auth;

void kube_auth_clear(gp_kube_auth *a);   /* accepts NULL; zeroes the struct */

/* In-cluster credentials: KUBERNETES_SERVICE_HOST / _PORT, and token + ca.crt
 * under sa_dir (NULL = /var/run/secrets/kubernetes.io/serviceaccount).
 * Checks that the files are readable. Returns 0 or -1 with a message. */
int kube_auth_incluster(const char *sa_dir, gp_kube_auth *out, gp_err *err) GP_WUR;

/* --- cancellation ------------------------------------------------------ */

typedef struct gp_kube_cancel gp_kube_cancel;

gp_kube_cancel *kube_cancel_new(void);
void kube_cancel_free(gp_kube_cancel *c);            /* accepts NULL; no call may be using it */
/* Makes every current and future call using c fail promptly. Thread-safe. */
void kube_cancel_fire(gp_kube_cancel *c);
bool kube_cancel_fired(gp_kube_cancel *c);
/* Sleeps up to `seconds`; returns true at once when (or if) c fires. */
bool kube_cancel_sleep(gp_kube_cancel *c, double seconds);

/* --- client ------------------------------------------------------------ */

typedef struct gp_kube gp_kube;

/* Copies auth; reads the token file once (so a bad path fails here). No network. */
gp_kube *kube_new(const gp_kube_auth *auth, gp_err *err);
void kube_free(gp_kube *k);                          /* accepts NULL */
const char *kube_server(const gp_kube *k);
/* How long a handle kept for reuse may stay unused before it is closed
 * (default 60 s; tests shorten it). */
void kube_set_idle_period(gp_kube *k, double seconds);

/* An answer: status and body (bounded by GP_KUBE_BODY_MAX). */
typedef struct gp_kube_resp {
    long status;
    gp_buf body;
} gp_kube_resp;

void kube_resp_free(gp_kube_resp *r);                /* accepts NULL */

/* One request. path starts with '/' and carries the query. body may be NULL
 * (then content_type is ignored). Returns 0 when the server answered (any
 * status: check resp->status), -1 with a message on transport errors,
 * timeout, cancellation or a body larger than the limit. resp is always
 * initialised; free it with kube_resp_free. Thread-safe. */
int kube_request(gp_kube *k, const char *method, const char *path, const char *content_type,
                 const char *body, double timeout_s, gp_kube_cancel *cancel, gp_kube_resp *resp,
                 gp_err *err) GP_WUR;

/* One request judged by its status, the step every caller that writes or
 * reads one object shares. Returns the HTTP status, or 0 when no answer came
 * (transport error, timeout, cancellation, a body over the limit). For 0 and
 * for any status outside 2xx, err gets "WHAT: <the transport error>" or
 * "WHAT: HTTP <status>: <the API's message>" (what names the call, e.g.
 * "evict pod ns/name"; NULL: no "WHAT: "); for 2xx it is left alone. resp is always initialised
 * (its body is the answer's when the status is not 0); free it with
 * kube_resp_free. Thread-safe. */
long kube_call(gp_kube *k, const char *method, const char *path, const char *content_type,
               const char *body, double timeout_s, gp_kube_cancel *cancel, const char *what,
               gp_kube_resp *resp, gp_err *err);

/* Receives stream bytes as they arrive; return 0 to go on, -1 to abort. */
typedef int (*gp_kube_data_fn)(void *ud, const char *p, size_t n);
/* Called once when the response headers are complete, with the status. */
typedef void (*gp_kube_open_fn)(void *ud, long status);

/* A streaming GET (watch). on_open (may be NULL) learns the status as soon
 * as the headers are in. When the answer is 200 the body goes to fn; any
 * other status puts up to GP_KUBE_ERRBODY_MAX bytes of body into errbody
 * (initialised here; caller frees). stall_s: abort when no byte arrived for
 * that long; max_s: abort after that long in total (0 = no limit).
 * Returns 0 when the server ended the response properly (for a watch: the
 * timeoutSeconds deadline, or a non-200 answer: check *status), -1 with a
 * message when the connection failed or was cut mid-body, the stream
 * stalled, fn aborted, or cancel fired. *status is 0 when no answer came. */
int kube_stream(gp_kube *k, const char *path, double stall_s, double max_s,
                gp_kube_cancel *cancel, gp_kube_open_fn on_open, gp_kube_data_fn fn, void *ud,
                long *status, gp_buf *errbody, gp_err *err) GP_WUR;

/* The message of an API Status body ("pods \"x\" not found"), else the body's
 * first bytes, sanitised to printable ASCII; "(empty body)" when empty. */
void kube_status_message(const char *body, size_t len, char *out, size_t outlen);

/* --- accounting -------------------------------------------------------- */

/* Appends, in Prometheus text, every request made so far by any client of
 * this process, by verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE, as
 * kube-apiserver's apiserver_request_total names them), resource and
 * subresource: gpupack_kube_requests_total, body bytes sent and received, and
 * gpupack_kube_connections_total (connections opened; a request that reused a
 * connection adds none). Thread-safe. */
void kube_metrics(void *unused, gp_buf *out);   /* a metrics_fn (lib/metrics.h); ud unused */

/* The resource and subresource a request path names ("/api/v1/namespaces/a/
 * pods/p/binding" -> "pods", "binding"; the query is ignored). Returns 1 for a
 * named object, 0 for a collection, -1 when the path is not an API path
 * (resource and sub are then ""). Pure. */
int kube_path_parts(const char *path, char *resource, size_t rlen, char *sub, size_t slen);

/* Percent-escapes one path segment or query value (owned). */
char *kube_escape(const char *s);

/* The API path of Pod ns/name ("/api/v1/namespaces/NS/pods/NAME"), or of its
 * subresource sub ("binding", "eviction", "status"; NULL or "" for the Pod
 * itself), ns and name escaped with kube_escape. Returns owned; free(). Pure. */
char *kube_pod_path(const char *ns, const char *name, const char *sub);

/* One PATCH of Pod ns/name (or its subresource sub) with body of content type
 * ctype, classified: */
typedef enum {
    GP_PATCH_DONE,      /* 2xx */
    GP_PATCH_GONE,      /* 404 deleted, 409 conflict, 422 a uid precondition failed (another
                         * pod under the name): nothing written */
    GP_PATCH_REFUSED,   /* 401 / 403: RBAC */
    GP_PATCH_RETRY      /* no answer, 5xx, anything else: may work later */
} gp_patch_outcome;
/* err says why for all but DONE ("HTTP 403: pods is forbidden: ..."); cancel
 * may be NULL. */
gp_patch_outcome kube_patch_pod(gp_kube *k, const char *ns, const char *name, const char *sub,
                                const char *ctype, const char *body, double timeout_s,
                                gp_kube_cancel *cancel, gp_err *err);

#endif
