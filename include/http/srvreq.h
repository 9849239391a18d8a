/* srvreq.h -- one request to the listener, whatever carries it: a
 * libmicrohttpd connection (HTTP/1.1) or an HTTP/2 stream (h2.c). The route
 * table, the client-certificate rule, the body limit, the in-flight memory
 * budget and the counters are server.c's and the same for both carriers.
 * Internal to http/. */
#ifndef GP_SRVREQ_H
#define GP_SRVREQ_H

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "http/server.h"

/* What a client certificate proved (checked at most once per connection). */
enum { SRV_AUTH_UNKNOWN, SRV_AUTH_OK, SRV_AUTH_NO_CERT, SRV_AUTH_UNTRUSTED };

/* An answer for the carrier to send. */
typedef struct gp_answer {
    int status;
    char *body;                 /* owned, NUL-terminated */
    const char *ctype;          /* static text */
    const char *allow;          /* 405: the method that is allowed, or NULL */
    const char *location;       /* 302: static text, or NULL */
    /* the caller should reach another replica next (this one does not lead):
     * HTTP/1.1 sends Connection: close, HTTP/2 a GOAWAY */
    bool close;
} gp_answer;

/* The connection a request came on, as the route rules need it. */
typedef struct gp_peer {
    /* SRV_AUTH_*: asked only for routes that need a client certificate */
    int (*auth)(void *ud);
    /* the client's address as text, for a refusal's log line */
    void (*addr)(void *ud, char *buf, size_t len);
    void *ud;
} gp_peer;

typedef struct gp_req gp_req;

/* A new request. `resume` is called (from a bind thread, with the server's
 * bind lock held) when srvreq_end returned 0 and the answer is in; the carrier
 * then calls srvreq_end again from its own thread. */
gp_req *srvreq_new(gp_server *s, void (*resume)(void *ud), void *ud);
/* The request line and headers. query: what followed '?' in the path (NULL:
 * none); content_length: the header as sent, or NULL. Returns 1 when the body
 * should be read, 0 when *a holds the answer already (404, 401, 413, ...). */
int srvreq_begin(gp_req *rq, const char *method, const char *path, const char *query,
                 const char *content_length, const gp_peer *peer, gp_answer *a);
/* A piece of the body (bounded: past the limit it is dropped and answered 413). */
void srvreq_data(gp_req *rq, const void *p, size_t n);
/* The body is complete. Returns 1 with *a filled, or 0 when a bind thread
 * answers later (resume). */
int srvreq_end(gp_req *rq, gp_answer *a);
/* Frees the request (its memory budget goes back). Waits out a bind thread
 * that is answering it right now; never call it while a bind is queued. */
void srvreq_free(gp_req *rq);

/* The TLS peer's certificate chain against --client-ca: SRV_AUTH_*. */
int srv_verify_session(gp_server *s, gnutls_session_t ses);

/* A client's IPv4 or IPv6 address as text ("?" for other families), for log lines. */
void srv_addr_text(const struct sockaddr *sa, char *buf, size_t len);

/* The carriers' counters (server_metrics renders them). */
typedef enum { SRV_PROTO_H1, SRV_PROTO_H2 } srv_proto;
void srv_count_connection(gp_server *s, srv_proto p);
/* An HTTP/2 connection or stream ended for a reason worth counting. */
typedef enum {
    SRV_H2_STREAMS,             /* requests (streams) served */
    SRV_H2_STALLED,             /* connections closed: no progress within the time limit */
    SRV_H2_REFUSED,             /* connections refused: at the connection limit */
    SRV_H2_PROTOCOL,            /* connections or streams ended for a protocol error */
    SRV_H2_GOAWAY,              /* GOAWAY sent because this replica does not lead */
    SRV_H2_THREAD,              /* connection threads started (each serves many connections in turn) */
    SRV_H2_COUNT
} srv_h2_event;
void srv_count_h2(gp_server *s, srv_h2_event e);

#endif
