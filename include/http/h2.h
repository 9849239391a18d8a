/* h2.h -- one HTTP/2 connection over a TLS session (nghttp2 frames it): its
 * streams become requests to the listener (srvreq.h), the same routes and rules
 * as HTTP/1.1. Internal to http/. */
#ifndef GP_H2_H
#define GP_H2_H

#include <gnutls/gnutls.h>
#include <stdatomic.h>

#include "http/srvreq.h"

/* Limits of one connection (0 = the default given). */
typedef struct h2_limits {
    unsigned max_streams;       /* concurrent streams the client may open (128) */
    unsigned idle_s;            /* no stream open and nothing received: GOAWAY, close (60) */
    unsigned request_s;         /* a request's headers and body must arrive within (60) */
} h2_limits;

/* Serves the connection until the client ends it, a limit or an error ends it,
 * or *stopping is set (then a GOAWAY goes out first). `fd` is the session's
 * socket (blocking, with send and receive time-outs set); `wake` an eventfd the
 * caller may write to make the loop look at *stopping. Auth is the connection's
 * client-certificate result, computed on first use (SRV_AUTH_*). Returns when
 * every request it read is answered or dropped and freed; the caller closes
 * the socket and the session. */
void h2_serve(gp_server *s, gnutls_session_t ses, int fd, int wake, atomic_bool *stopping,
              const h2_limits *lim, const char *peer_addr);

#endif
