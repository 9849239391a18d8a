/* fakeapi.h -- a fake Kubernetes API server for tests (libmicrohttpd on 127.0.0.1, port 0).
 *
 * Speaks the wire protocol of kube-apiserver v1.26 (test/fixtures/captured/wire/
 * holds the captures the tests read): compact JSON + "\n", lists with
 * metadata.resourceVersion and limit/continue paging, watch streams as chunked
 * newline-delimited events (one chunk per event) with bookmarks and the ERROR
 * 410 event for expired resourceVersions, merge PATCH of pods (a metadata.uid
 * other than the pod's: 422, as the field is immutable), pods/NAME/binding
 * (copying the Binding's annotations onto the pod; metadata.resourceVersion is a
 * precondition, metadata.uid is ignored as kube-apiserver 1.26.0 wipes it, or
 * checked: fakeapi_set_version), GET /version, API Status error bodies. Faults can be
 * injected and every request is recorded. Thread-safe. */
#ifndef GP_FAKEAPI_H
#define GP_FAKEAPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gp_fakeapi gp_fakeapi;

/* Starts on 127.0.0.1, a free port. NULL on failure. */
gp_fakeapi *fakeapi_start(void);
/* The same over HTTPS with this certificate and key (PEM text, kept by the
 * caller while the fake runs); fakeapi_url says https. */
gp_fakeapi *fakeapi_start_tls(const char *cert_pem, const char *key_pem);
/* An API-server restart: every connection and watch ends, nothing answers
 * for down_ms, then the same state is served on the same port again. 0, or
 * -1 when the port could not be had again (the fake then answers nothing). */
int fakeapi_restart(gp_fakeapi *f, int down_ms);
/* Stops the daemon (cutting open watches) and frees everything; accepts NULL. */
void fakeapi_stop(gp_fakeapi *f);
int fakeapi_port(const gp_fakeapi *f);
/* "http://127.0.0.1:PORT" (borrowed). */
const char *fakeapi_url(const gp_fakeapi *f);
/* Requires "Authorization: Bearer TOKEN" (401 Status otherwise); NULL = none. */
void fakeapi_set_token(gp_fakeapi *f, const char *token);

/* What GET /version answers (default "v1.26.0", like the kit's default) and
 * whether pods/binding checks the Binding's metadata.uid (kube-apiserver
 * 1.26.4+ / 1.27+ do: 409 on a mismatch; default false, as 1.26.0 wipes it). */
void fakeapi_set_version(gp_fakeapi *f, const char *git_version, bool binding_checks_uid);

/* --- cluster state: every change bumps the resourceVersion and is an event */

/* Adds or replaces a node / pod (steals obj). The fake sets
 * metadata.resourceVersion, and uid/creationTimestamp when missing. */
void fakeapi_put_node(gp_fakeapi *f, json_t *node);
void fakeapi_put_pod(gp_fakeapi *f, json_t *pod);
/* DELETED event with the last state; 0, or -1 when unknown. */
int fakeapi_delete_node(gp_fakeapi *f, const char *name);
int fakeapi_delete_pod(gp_fakeapi *f, const char *ns, const char *name);
/* Sets status.phase (e.g. "Succeeded"): a MODIFIED event. */
int fakeapi_set_pod_phase(gp_fakeapi *f, const char *ns, const char *name, const char *phase);
/* Copies (owned) of the current objects; NULL when unknown. */
json_t *fakeapi_get_pod(gp_fakeapi *f, const char *ns, const char *name);
long fakeapi_rv(gp_fakeapi *f);

/* --- faults ----------------------------------------------------------- */

/* The next `count` requests whose method matches and whose "path?query"
 * contains `match` get HTTP `status` with a Status body (after delay_ms). */
void fakeapi_fail(gp_fakeapi *f, const char *method, const char *match, int status, int count);
/* The next `count` matching requests take effect, but are answered `status`
 * (a write committed whose answer was lost: 500, 504...). */
void fakeapi_fail_after(gp_fakeapi *f, const char *method, const char *match, int status, int count);
/* Every watch open now goes silent and stays open (a half-open connection:
 * no events, no bookmarks, no end); watches opened later work. */
void fakeapi_stall_watches(gp_fakeapi *f);
/* The next `count` matching requests are answered normally after delay_ms. */
void fakeapi_delay(gp_fakeapi *f, const char *method, const char *match, int delay_ms, int count);
/* The next `count` matching requests are each held until all `count` have
 * arrived (at most max_ms), then answered normally: requests that overlap
 * whatever the machine's speed. */
void fakeapi_gather(gp_fakeapi *f, const char *method, const char *match, int count, int max_ms);
/* Requests arrived and held by a delay rule right now. */
int fakeapi_delaying(gp_fakeapi *f);
/* Every open watch ends without the terminating chunk (a dropped
 * connection); mid_event: after sending the first half of one more event. */
void fakeapi_cut_watches(gp_fakeapi *f, bool mid_event);
/* Every open watch ends properly (as at timeoutSeconds). */
void fakeapi_end_watches(gp_fakeapi *f);
/* Every resourceVersion older than the current one becomes too old (as after
 * an apiserver restart): watches from one get HTTP 200 + a single ERROR event
 * (Status 410 Expired) and end; continue tokens issued so far get HTTP 410. */
void fakeapi_expire(gp_fakeapi *f);
/* Appends a raw line (must end in '\n') to the event stream of pods or
 * nodes, as if it were an event at the current resourceVersion (for
 * malformed-event tests). */
void fakeapi_inject_raw(gp_fakeapi *f, bool pod, const char *line);
/* The next event of pods (pod = true) or nodes is recorded cut in half, as a
 * malformed line: watchers never get it whole (a lost event). */
void fakeapi_corrupt_next(gp_fakeapi *f, bool pod);
/* Sends a BOOKMARK to every open watch that asked for bookmarks. */
void fakeapi_bookmark(gp_fakeapi *f);
/* Open watch streams of a resource ("pods", "nodes"; NULL = all). */
int fakeapi_open_watches(gp_fakeapi *f, const char *resource);
/* Waits until at least n watches of a resource are open; returns how many
 * are. A stall (fakeapi_stall_watches) reaches only watches already open,
 * so a test stalls after this says the client's watch is there. */
int fakeapi_wait_watches(gp_fakeapi *f, const char *resource, int n, double timeout_s);

/* --- recorded requests ------------------------------------------------- */

typedef struct gp_fake_req {
    char *method;
    char *url;            /* path?query, values unescaped, in arrival order */
    char *content_type;   /* NULL when absent */
    char *auth;           /* Authorization header, NULL when absent */
    char *body;           /* "" when none */
    int status;           /* what the fake answered */
} gp_fake_req;

size_t fakeapi_request_count(gp_fakeapi *f);
/* Copy of request i (owned; fakeapi_req_clear). 0, or -1 when out of range. */
int fakeapi_request(gp_fakeapi *f, size_t i, gp_fake_req *out);
void fakeapi_req_clear(gp_fake_req *r);
/* Requests with that method whose url contains `match` (NULL = any). */
int fakeapi_count(gp_fakeapi *f, const char *method, const char *match);
/* Polls (short sleeps) until fakeapi_count(...) >= n or timeout_s; returns the count. */
int fakeapi_wait_count(gp_fakeapi *f, const char *method, const char *match, int n, double timeout_s);

#endif
