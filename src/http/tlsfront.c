/* tlsfront.c -- TLS on the listener's port with ALPN: h2 to h2.c, http/1.1 to
 * libmicrohttpd over a socket pair. One thread accepts; each connection is
 * served by a thread of its own while it lasts (the handshake, then HTTP/2 or
 * the copying for HTTP/1.1), up to max_connections. The threads are kept for
 * the next connections (up to KEEP_IDLE waiting), not started per connection:
 * GnuTLS keeps a random generator per thread that it frees only at exit of the
 * library (3.7: a few hundred bytes a thread), so a thread per connection grew
 * the heap by every connection a client ever made. */
#include "http/tlsfront.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http/h2.h"
#include "http/srvreq.h"
#include "lib/log.h"

#define PUMP_CHUNK (16u << 10)
#define IO_TIMEOUT_S 10           /* a record, or a write, stalled this long ends the connection */
#define KEEP_IDLE 16              /* connection threads kept waiting for the next connection */

typedef struct fconn {
    gp_tlsfront *f;
    int fd, wake;
    int mhd_fd;                   /* the pair's end libmicrohttpd got, or -1 */
    int auth;                     /* SRV_AUTH_* (HTTP/1.1 hand-over) */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char addr_text[INET6_ADDRSTRLEN + 8];
    atomic_bool handshaking;      /* tlsfront_stop cuts these short */
    atomic_bool done;
    struct fconn *next;           /* every connection (conns) */
    struct fconn *qnext;          /* the connections no thread has taken yet (queue) */
} fconn;

/* A thread that serves connections, one at a time. */
typedef struct fworker {
    struct gp_tlsfront *f;
    pthread_t th;
    bool exited;                  /* under f->mu: it returned, join it */
    struct fworker *next;
} fworker;

struct gp_tlsfront {
    gp_server *s;
    struct MHD_Daemon *d;
    tlsfront_config cfg;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    int lfd, port;
    int stop_pipe[2];
    pthread_t acceptor;
    atomic_bool stopping;
    pthread_mutex_t mu;           /* conns, the queue, the workers */
    pthread_cond_t work;          /* a connection was queued, or stopping */
    fconn *conns;
    unsigned nconns;
    fconn *queue, *queue_tail;
    unsigned nqueued, idle;       /* queued connections; workers waiting for one */
    fworker *workers;
};

static const gnutls_datum_t alpn[] = {{(unsigned char *)"h2", 2},
                                      {(unsigned char *)"http/1.1", 8}};

static void set_timeouts(int fd, unsigned s)
{
    struct timeval tv = {.tv_sec = s};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static ssize_t plain_send(void *ud, const void *buf, size_t n)
{
    for (;;) {
        ssize_t w = send(*(int *)ud, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        return w;
    }
}

/* ------------------------------------------------- the TLS session's I/O -- */

typedef struct tls_io {
    fconn *fc;
    gnutls_session_t ses;
    /* HTTP/2's read-ahead (tls_read_ahead): bytes received from the socket
     * that GnuTLS has not taken yet; NULL before */
    uint8_t *ra;
    size_t ra_off, ra_len;
} tls_io;

/* GnuTLS reads a record with two receives, its 5-byte header and then its
 * body, and a client's request is two or three records (HEADERS, DATA): each
 * a system call. HTTP/2's connections read instead whatever the socket holds,
 * up to READ_AHEAD bytes, and hand it to GnuTLS from here. */
#define READ_AHEAD (16u << 10)

static ssize_t ra_pull(gnutls_transport_ptr_t p, void *buf, size_t n)
{
    tls_io *t = p;
    if (t->ra_off == t->ra_len) {
        ssize_t r;
        do
            r = recv(t->fc->fd, t->ra, READ_AHEAD, 0);
        while (r < 0 && errno == EINTR);
        if (r <= 0)
            return r;   /* errno says EAGAIN when the receive time-out passed */
        t->ra_off = 0;
        t->ra_len = (size_t)r;
    }
    size_t k = t->ra_len - t->ra_off < n ? t->ra_len - t->ra_off : n;
    memcpy(buf, t->ra + t->ra_off, k);
    t->ra_off += k;
    return (ssize_t)k;
}

static int ra_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    tls_io *t = p;
    if (t->ra_off < t->ra_len)
        return 1;
    struct pollfd pf = {.fd = t->fc->fd, .events = POLLIN};
    int r;
    do
        r = poll(&pf, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
    while (r < 0 && errno == EINTR);
    return r;
}

/* A record out in one system call, as GnuTLS's own writer does. */
static ssize_t ra_push(gnutls_transport_ptr_t p, const giovec_t *iov, int iovcnt)
{
    tls_io *t = p;
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
    ssize_t w;
    do
        w = sendmsg(t->fc->fd, &m, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w;   /* errno says EAGAIN when the send time-out passed */
}

/* From here on the session's bytes go through t: reads through its buffer.
 * Nothing is lost in the switch: GnuTLS has read only whole handshake
 * records so far, and the socket holds the rest. */
static void tls_read_ahead(tls_io *t)
{
    t->ra = xmalloc(READ_AHEAD);
    t->ra_off = t->ra_len = 0;
    gnutls_transport_set_ptr(t->ses, t);
    gnutls_transport_set_pull_function(t->ses, ra_pull);
    gnutls_transport_set_pull_timeout_function(t->ses, ra_pull_timeout);
    gnutls_transport_set_vec_push_function(t->ses, ra_push);
}

static ssize_t tls_recv(void *ud, void *buf, size_t n)
{
    tls_io *t = ud;
    for (;;) {
        ssize_t r = gnutls_record_recv(t->ses, buf, n);
        if (r == GNUTLS_E_INTERRUPTED)
            continue;
        if (r == GNUTLS_E_AGAIN)
            return H2_IO_STALLED;   /* the receive time-out passed inside a record */
        return r < 0 ? -1 : r;
    }
}

static ssize_t tls_send(void *ud, const void *buf, size_t n)
{
    tls_io *t = ud;
    for (;;) {
        ssize_t w = gnutls_record_send(t->ses, buf, n);
        if (w == GNUTLS_E_INTERRUPTED)
            continue;
        return w < 0 ? -1 : w;
    }
}

static bool tls_pending(void *ud)
{
    tls_io *t = ud;
    return gnutls_record_check_pending(t->ses) > 0 || t->ra_off < t->ra_len;
}

static int tls_auth(void *ud)
{
    tls_io *t = ud;
    return t->fc->f->cfg.ca_pem ? srv_verify_session(t->fc->f->s, t->ses) : SRV_AUTH_NO_CERT;
}

/* HTTP/1.1: libmicrohttpd serves the connection through a socket pair; this
 * copies between it and the TLS session until either side ends. */
static void pump(fconn *fc, gnutls_session_t ses)
{
    gp_tlsfront *f = fc->f;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        LOG_WARN("TLS front: socketpair: %s", strerror(errno));
        return;
    }
    set_timeouts(pair[0], IO_TIMEOUT_S);
    pthread_mutex_lock(&f->mu);
    fc->mhd_fd = pair[1];
    pthread_mutex_unlock(&f->mu);
    if (MHD_add_connection(f->d, pair[1], (const struct sockaddr *)&fc->addr, fc->addrlen) !=
        MHD_YES) {
        LOG_WARN("TLS front: libmicrohttpd did not take the connection from %s", fc->addr_text);
        pthread_mutex_lock(&f->mu);
        fc->mhd_fd = -1;
        pthread_mutex_unlock(&f->mu);
        close(pair[0]);
        return;   /* libmicrohttpd closed pair[1] */
    }
    tls_io t = {.fc = fc, .ses = ses};
    char *buf = xmalloc(PUMP_CHUNK);
    /* false once libmicrohttpd closed its side for reading (it answered a
     * request early, 413 say): its answer still goes out, the rest of the
     * client's body is dropped */
    bool to_mhd = true;
    while (!atomic_load(&f->stopping)) {
        struct pollfd pf[3] = {{.fd = fc->fd, .events = POLLIN},
                               {.fd = pair[0], .events = POLLIN},
                               {.fd = fc->wake, .events = POLLIN}};
        int pr = gnutls_record_check_pending(ses) > 0 ? 1 : poll(pf, 3, -1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0 || (pf[2].revents & POLLIN))
            break;
        /* libmicrohttpd's side first: an answer it wrote before closing must
         * reach the client before the client's next bytes fail to go in */
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(pair[0], buf, PUMP_CHUNK);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || !h2_send_all(tls_send, &t, buf, (size_t)n))
                break;
            continue;   /* drain it before reading the client again */
        }
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) || gnutls_record_check_pending(ses) > 0) {
            ssize_t n = gnutls_record_recv(ses, buf, PUMP_CHUNK);
            if (n == GNUTLS_E_INTERRUPTED)
                continue;
            if (n <= 0)
                break;
            if (to_mhd && !h2_send_all(plain_send, &pair[0], buf, (size_t)n))
                to_mhd = false;
        }
    }
    free(buf);
    pthread_mutex_lock(&f->mu);
    fc->mhd_fd = -1;   /* libmicrohttpd may close its end, and the number be reused, from now on */
    pthread_mutex_unlock(&f->mu);
    close(pair[0]);   /* libmicrohttpd sees the end and closes its side */
}

/* Ends the connection gracefully: close_notify, no more writes, and what the
 * client still sends (the rest of a body answered early) is read and dropped
 * for up to 2 s, so that the kernel does not reset the connection -- and
 * throw away an answer the client has not read yet -- when it is closed with
 * unread data. */
static void linger(fconn *fc, gnutls_session_t ses)
{
    gnutls_bye(ses, GNUTLS_SHUT_WR);
    shutdown(fc->fd, SHUT_WR);
    struct timeval tv = {.tv_usec = 200000};
    setsockopt(fc->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    double end = gp_mono_s() + 2;
    while (gp_mono_s() < end && !atomic_load(&fc->f->stopping)) {
        ssize_t n = recv(fc->fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
    }
}

/* One connection, from the handshake to its close. */
static void serve(fconn *fc)
{
    gp_tlsfront *f = fc->f;
    gnutls_session_t ses = NULL;
    tls_io t = {.ra = NULL};   /* an HTTP/2 session's transport (tls_read_ahead) */
    bool ok = !atomic_load(&f->stopping) &&
              gnutls_init(&ses, GNUTLS_SERVER | GNUTLS_NO_SIGNAL) == GNUTLS_E_SUCCESS;
    if (ok) {
        gnutls_priority_set(ses, f->prio);
        gnutls_credentials_set(ses, GNUTLS_CRD_CERTIFICATE, f->cred);
        if (f->cfg.ca_pem)
            gnutls_certificate_server_set_request(ses, GNUTLS_CERT_REQUEST);
        gnutls_alpn_set_protocols(ses, alpn, GP_ARRAY_LEN(alpn), GNUTLS_ALPN_SERVER_PRECEDENCE);
        gnutls_transport_set_int(ses, fc->fd);
        gnutls_handshake_set_timeout(ses, f->cfg.handshake_s * 1000);
        set_timeouts(fc->fd, f->cfg.handshake_s);
        int rc;
        atomic_store(&fc->handshaking, true);
        do
            rc = gnutls_handshake(ses);
        while (rc < 0 && !gnutls_error_is_fatal(rc) && rc != GNUTLS_E_AGAIN &&
               !atomic_load(&f->stopping));
        atomic_store(&fc->handshaking, false);
        ok = rc == GNUTLS_E_SUCCESS && !atomic_load(&f->stopping);
        if (!ok && rc == GNUTLS_E_AGAIN)
            srv_count_h2(f->s, SRV_H2_STALLED);
        else if (!ok)
            LOG_DEBUG("TLS front: handshake with %s failed: %s", fc->addr_text, gnutls_strerror(rc));
    }
    if (ok) {
        set_timeouts(fc->fd, IO_TIMEOUT_S);
        gnutls_datum_t proto = {0};
        bool h2 = gnutls_alpn_get_selected_protocol(ses, &proto) == 0 && proto.size == 2 &&
                  memcmp(proto.data, "h2", 2) == 0;
        srv_count_connection(f->s, h2 ? SRV_PROTO_H2 : SRV_PROTO_H1);
        if (h2) {
            int one = 1;
            setsockopt(fc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            h2_limits lim = {.idle_s = f->cfg.idle_s, .request_s = f->cfg.request_s};
            t = (tls_io){.fc = fc, .ses = ses};
            tls_read_ahead(&t);   /* t outlives the session: it is its transport now */
            h2_io io = {.recv = tls_recv, .send = tls_send, .pending = tls_pending,
                        .auth = tls_auth, .ud = &t, .fd = fc->fd};
            h2_serve(f->s, &io, fc->wake, &f->stopping, &lim, fc->addr_text);
        } else {
            fc->auth = f->cfg.ca_pem ? srv_verify_session(f->s, ses) : SRV_AUTH_NO_CERT;
            pump(fc, ses);
        }
        linger(fc, ses);
    }
    if (ses)
        gnutls_deinit(ses);
    free(t.ra);
    pthread_mutex_lock(&f->mu);
    close(fc->fd);
    fc->fd = -1;
    atomic_store(&fc->done, true);   /* the last touch: reap may free it from now on */
    pthread_mutex_unlock(&f->mu);
}

/* Serves queued connections until stopping, or until enough others wait. */
static void *worker_main(void *arg)
{
    fworker *w = arg;
    gp_tlsfront *f = w->f;
    gp_thread_set_name("verbs-conn");
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->queue && !atomic_load(&f->stopping)) {
            f->idle++;
            pthread_cond_wait(&f->work, &f->mu);
            f->idle--;
        }
        fconn *fc = f->queue;
        if (!fc)
            break;   /* stopping, nothing left to serve */
        f->queue = fc->qnext;
        if (!f->queue)
            f->queue_tail = NULL;
        f->nqueued--;
        pthread_mutex_unlock(&f->mu);
        serve(fc);
        pthread_mutex_lock(&f->mu);
        if (f->idle >= KEEP_IDLE)
            break;
    }
    w->exited = true;
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Frees the connections that ended and joins the workers that returned (all
 * of both when `all`: the workers have been told to stop). */
static void reap(gp_tlsfront *f, bool all)
{
    pthread_mutex_lock(&f->mu);
    for (fworker **wp = &f->workers; *wp;) {
        fworker *w = *wp;
        if (!all && !w->exited) {
            wp = &w->next;
            continue;
        }
        *wp = w->next;
        pthread_mutex_unlock(&f->mu);
        pthread_join(w->th, NULL);
        free(w);
        pthread_mutex_lock(&f->mu);
    }
    fconn **pp = &f->conns;
    while (*pp) {
        fconn *fc = *pp;
        if (!all && !atomic_load(&fc->done)) {
            pp = &fc->next;
            continue;
        }
        *pp = fc->next;
        f->nconns--;
        if (fc->fd >= 0)
            close(fc->fd);   /* never taken by a worker */
        close(fc->wake);
        free(fc);
    }
    pthread_mutex_unlock(&f->mu);
}

/* Queues a connection for a waiting worker, or starts one first when every
 * waiting worker has one already; under f->mu. False when no thread could be
 * started for it (it is not queued then). */
static bool dispatch(gp_tlsfront *f, fconn *fc)
{
    bool spare = f->idle > f->nqueued;
    if (!spare) {
        fworker *w = xcalloc(1, sizeof *w);
        w->f = f;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            free(w);
            return false;
        }
        w->next = f->workers;
        f->workers = w;
        srv_count_h2(f->s, SRV_H2_THREAD);
    }
    fc->qnext = NULL;
    if (f->queue_tail)
        f->queue_tail->qnext = fc;
    else
        f->queue = fc;
    f->queue_tail = fc;
    f->nqueued++;
    if (spare)
        pthread_cond_signal(&f->work);
    return true;
}

static void *accept_main(void *arg)
{
    gp_tlsfront *f = arg;
    gp_thread_set_name("verbs-accept");
    while (!atomic_load(&f->stopping)) {
        struct pollfd pf[2] = {{.fd = f->lfd, .events = POLLIN}, {.fd = f->stop_pipe[0], .events = POLLIN}};
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            break;
        reap(f, false);
        if (!(pf[0].revents & POLLIN))
            continue;
        fconn *fc = xcalloc(1, sizeof *fc);
        fc->addrlen = sizeof fc->addr;
        fc->fd = accept4(f->lfd, (struct sockaddr *)&fc->addr, &fc->addrlen, SOCK_CLOEXEC);
        if (fc->fd < 0) {
            free(fc);
            continue;
        }
        pthread_mutex_lock(&f->mu);
        bool full = f->nconns >= f->cfg.max_connections;
        pthread_mutex_unlock(&f->mu);
        fc->wake = full ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (full || fc->wake < 0) {
            srv_count_h2(f->s, SRV_H2_REFUSED);
            close(fc->fd);
            if (fc->wake >= 0)
                close(fc->wake);
            free(fc);
            continue;
        }
        fc->f = f;
        fc->mhd_fd = -1;
        srv_addr_text((const struct sockaddr *)&fc->addr, fc->addr_text, sizeof fc->addr_text);
        pthread_mutex_lock(&f->mu);
        if (!dispatch(f, fc)) {
            pthread_mutex_unlock(&f->mu);
            LOG_WARN("TLS front: cannot start a thread for the connection from %s", fc->addr_text);
            close(fc->fd);
            close(fc->wake);
            free(fc);
            continue;
        }
        fc->next = f->conns;
        f->conns = fc;
        f->nconns++;
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

int tlsfront_auth_of(gp_tlsfront *f, int fd)
{
    int auth = SRV_AUTH_NO_CERT;
    pthread_mutex_lock(&f->mu);
    for (fconn *fc = f->conns; fc; fc = fc->next)
        if (fc->mhd_fd == fd && !atomic_load(&fc->done)) {
            auth = fc->auth;
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return auth;
}

gp_tlsfront *tlsfront_start(gp_server *s, struct MHD_Daemon *d, const tlsfront_config *cfg,
                            gp_err *err)
{
    gp_tlsfront *f = xcalloc(1, sizeof *f);
    f->s = s;
    f->d = d;
    f->cfg = *cfg;
    f->lfd = f->stop_pipe[0] = f->stop_pipe[1] = -1;
    if (!f->cfg.max_connections)
        f->cfg.max_connections = 256;
    if (!f->cfg.handshake_s)
        f->cfg.handshake_s = 10;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->work, NULL);
    gnutls_datum_t crt = {(unsigned char *)cfg->cert_pem, (unsigned)strlen(cfg->cert_pem)};
    gnutls_datum_t key = {(unsigned char *)cfg->key_pem, (unsigned)strlen(cfg->key_pem)};
    int rc = gnutls_certificate_allocate_credentials(&f->cred);
    if (rc == 0)
        rc = gnutls_certificate_set_x509_key_mem(f->cred, &crt, &key, GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
        gp_fail(err, "--tls-cert/--tls-key: %s", gnutls_strerror(rc));
        goto fail;
    }
    if (cfg->ca_pem) {
        gnutls_datum_t ca = {(unsigned char *)cfg->ca_pem, (unsigned)strlen(cfg->ca_pem)};
        rc = gnutls_certificate_set_x509_trust_mem(f->cred, &ca, GNUTLS_X509_FMT_PEM);
        if (rc <= 0) {
            gp_fail(err, "--client-ca: %s", rc < 0 ? gnutls_strerror(rc) : "no certificate in it");
            goto fail;
        }
    }
    if (gnutls_priority_init(&f->prio, "NORMAL", NULL) < 0) {
        gp_fail(err, "TLS: cannot set the cipher priorities");
        goto fail;
    }
    f->lfd = socket(cfg->addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (f->lfd < 0 || setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(f->lfd, cfg->addr, cfg->addrlen) != 0 || listen(f->lfd, 128) != 0) {
        gp_fail(err, "cannot listen: %s (address in use, or not an address of this host?)",
                strerror(errno));
        goto fail;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(f->lfd, (struct sockaddr *)&ss, &sl) == 0)
        f->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    if (pipe2(f->stop_pipe, O_CLOEXEC) != 0 ||
        pthread_create(&f->acceptor, NULL, accept_main, f) != 0) {
        gp_fail(err, "TLS front: cannot start its thread");
        goto fail;
    }
    return f;
fail:
    if (f->lfd >= 0)
        close(f->lfd);
    if (f->stop_pipe[0] >= 0) {
        close(f->stop_pipe[0]);
        close(f->stop_pipe[1]);
    }
    if (f->prio)
        gnutls_priority_deinit(f->prio);
    if (f->cred)
        gnutls_certificate_free_credentials(f->cred);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return NULL;
}

int tlsfront_port(const gp_tlsfront *f)
{
    return f->port;
}

void tlsfront_stop(gp_tlsfront *f)
{
    if (!f)
        return;
    atomic_store(&f->stopping, true);
    ssize_t w = write(f->stop_pipe[1], "x", 1);
    (void)w;
    pthread_join(f->acceptor, NULL);
    close(f->lfd);
    pthread_mutex_lock(&f->mu);
    uint64_t one = 1;
    for (fconn *fc = f->conns; fc; fc = fc->next) {
        if (write(fc->wake, &one, sizeof one) < 0)
            LOG_DEBUG("TLS front: cannot wake a connection: %s", strerror(errno));
        if (fc->fd >= 0 && atomic_load(&fc->handshaking))
            shutdown(fc->fd, SHUT_RDWR);   /* a handshake waits for no one at stop */
    }
    pthread_cond_broadcast(&f->work);   /* the waiting workers return */
    pthread_mutex_unlock(&f->mu);
    reap(f, true);
    close(f->stop_pipe[0]);
    close(f->stop_pipe[1]);
    gnutls_priority_deinit(f->prio);
    gnutls_certificate_free_credentials(f->cred);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
