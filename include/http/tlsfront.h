/* tlsfront.h -- TLS on the listener's port, done by gpupack itself so that it
 * can offer HTTP/2 through ALPN: a client that picks h2 is served by h2.c, one
 * that picks http/1.1 (or nothing) is handed to libmicrohttpd over a socket
 * pair, with the client certificate already checked. Internal to http/. */
#ifndef GP_TLSFRONT_H
#define GP_TLSFRONT_H

#include <microhttpd.h>
#include <sys/socket.h>

#include "lib/util.h"

typedef struct gp_server gp_server;
typedef struct gp_tlsfront gp_tlsfront;

typedef struct tlsfront_config {
    const struct sockaddr *addr;
    socklen_t addrlen;
    const char *cert_pem, *key_pem;   /* the server's certificate and key (PEM text, borrowed) */
    const char *ca_pem;               /* --client-ca (PEM text), or NULL */
    unsigned max_connections;         /* past it, new connections are closed at once */
    unsigned handshake_s;             /* a TLS handshake must end within (10) */
    unsigned idle_s;                  /* HTTP/2: idle connections end after (60) */
    unsigned request_s;               /* HTTP/2: a request must arrive within (60) */
} tlsfront_config;

/* Listens on cfg->addr; HTTP/1.1 connections go to d (a daemon started with
 * MHD_USE_NO_LISTEN_SOCKET). Returns NULL with a message. */
gp_tlsfront *tlsfront_start(gp_server *s, struct MHD_Daemon *d, const tlsfront_config *cfg,
                            gp_err *err);
/* The bound port. */
int tlsfront_port(const gp_tlsfront *f);
/* What the client certificate of the connection handed to libmicrohttpd as
 * socket fd proved (SRV_AUTH_*; SRV_AUTH_NO_CERT when fd is not known). */
int tlsfront_auth_of(gp_tlsfront *f, int fd);
/* Stops listening, ends every connection (HTTP/2 ones with a GOAWAY) and
 * waits for their threads; accepts NULL. */
void tlsfront_stop(gp_tlsfront *f);

#endif
