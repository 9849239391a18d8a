/* h2.h -- one HTTP/2 connection over a TLS session (nghttp2 frames it): its
 * streams become requests to the listener (srvreq.h), the same routes and rules
 * as HTTP/1.1. Internal to http/. */
#ifndef GP_H2_H
#define GP_H2_H

#include <stdatomic.h>
#include <sys/types.h>

#include "http/srvreq.h"

/* Limits of one connection (0 = the default given). */
typedef struct h2_limits {
    unsigned max_streams;       /* concurrent streams the client may open (128) */
    unsigned idle_s;            /* no stream open and nothing received: GOAWAY, close (60) */
    unsigned request_s;         /* a request's headers and body must arrive within (60) */
} h2_limits;

/* What a read that stalled past its time-out returns. */
#define H2_IO_STALLED (-2)

/* The connection's bytes: TLS records in tlsfront.c, a plain socket in the
 * fuzzer. Blocking calls, bounded by time-outs. */
typedef struct h2_io {
    /* > 0 bytes read, 0 the peer closed, H2_IO_STALLED, or -1 an error */
    ssize_t (*recv)(void *ud, void *buf, size_t n);
    /* > 0 bytes written, else the peer does not take them (stalled or gone) */
    ssize_t (*send)(void *ud, const void *buf, size_t n);
    /* whether bytes are buffered already (a TLS record read in part); NULL: never */
    bool (*pending)(void *ud);
    /* the connection's client-certificate result, asked on first need (SRV_AUTH_*) */
    int (*auth)(void *ud);
    void *ud;
    int fd;                     /* what poll() waits on for reading */
} h2_io;

/* Writes all n bytes of p with snd (an h2_io's send, or the TLS front's
 * HTTP/1.1 pump's); false when the peer stalls past its time-out or fails. */
bool h2_send_all(ssize_t (*snd)(void *ud, const void *buf, size_t n), void *ud, const void *p,
                 size_t n);

/* Serves the connection until the client ends it, a limit or an error ends it,
 * or *stopping is set (then a GOAWAY goes out first). `wake` is an eventfd the
 * caller may write to make the loop look at *stopping. Returns when every
 * request it read is answered or dropped and freed; the caller closes the
 * connection. */
void h2_serve(gp_server *s, const h2_io *io, int wake, atomic_bool *stopping,
              const h2_limits *lim, const char *peer_addr);

#endif
