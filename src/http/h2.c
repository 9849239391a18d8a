/* h2.c -- one HTTP/2 connection (over TLS: tlsfront.c): nghttp2 frames it, each
 * stream is a request to the listener (srvreq.h). The connection's thread
 * reads, answers what can be answered at once (filter, prioritize, probes) and
 * leaves binds to the bind threads: a bind's stream stays open and its answer
 * comes back through an eventfd. */
#include "http/h2.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"

#define H2_PATH_MAX 8192          /* a longer :path is refused (RST_STREAM) */
#define H2_HEADERS_MAX (32u << 10) /* header bytes one request may send */
#define H2_STREAM_WINDOW (1u << 20)   /* what a client may send on a stream unasked */
#define H2_CONN_WINDOW (16u << 20)    /* ... and on the connection */
#define H2_READ_CHUNK (16u << 10)
#define H2_OUT_CHUNK (16u << 10)      /* frames gathered per write: a TLS record's most */
#define H2_READS_PER_POLL 16          /* records read in a row before the loop looks around */
/* How often the streams are walked for requests that did not arrive in time:
 * the time-out is whole seconds. A walk after every read visited every open
 * stream, binds waiting for the API server among them, a cache miss each:
 * 3 % of the verbs' connection threads' CPU at 5,000 nodes x 20,000 pods. */
#define H2_REAP_PERIOD_S 0.5

typedef struct h2_conn h2_conn;

typedef struct h2_stream {
    h2_conn *c;
    int32_t id;
    gp_req *rq;
    char method[16];
    char *path;                 /* :path as sent (owned), bounded by H2_PATH_MAX */
    char clen[24];
    size_t hdr_bytes;
    bool bad;                   /* a header past its bound: the stream is reset */
    bool begun, complete, answered, waiting, closed;
    double start;
    gp_answer a;                /* the answer being sent */
    size_t len, sent;
    struct h2_stream *prev, *next;     /* the connection's streams */
    struct h2_stream *ready_next;      /* on the ready list (bind answered) */
} h2_stream;

struct h2_conn {
    gp_server *s;
    const h2_io *io;
    nghttp2_session *ng;
    int wake;
    const char *peer_addr;
    int auth;                   /* SRV_AUTH_*, cached */
    h2_limits lim;
    h2_stream *streams;
    size_t waiting;             /* streams whose bind is pending */
    bool goaway, failed;
    bool dead;                  /* the connection is gone: answers are dropped */
    pthread_mutex_t mu;         /* the ready list: bind threads push, the connection pops */
    h2_stream *ready;
    uint8_t *out;               /* flush's gathering buffer, H2_OUT_CHUNK bytes */
};

/* ------------------------------------------------------------ streams -- */

static void stream_unlink(h2_conn *c, h2_stream *st)
{
    if (st->prev)
        st->prev->next = st->next;
    else
        c->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
}

static void stream_free(h2_conn *c, h2_stream *st)
{
    stream_unlink(c, st);
    srvreq_free(st->rq);
    free(st->a.body);
    free(st->path);
    free(st);
}

/* A bind thread's answer is in (called with the server's bind lock held). */
static void stream_resume(void *ud)
{
    h2_stream *st = ud;
    h2_conn *c = st->c;
    pthread_mutex_lock(&c->mu);
    st->ready_next = c->ready;
    c->ready = st;
    pthread_mutex_unlock(&c->mu);
    uint64_t one = 1;
    ssize_t w = write(c->wake, &one, sizeof one);
    (void)w;   /* an eventfd at its maximum is already readable */
}

static ssize_t body_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    h2_stream *st = src->ptr;
    size_t left = st->len - st->sent;
    size_t n = left < len ? left : len;
    memcpy(buf, st->a.body + st->sent, n);
    st->sent += n;
    if (st->sent == st->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* A graceful GOAWAY (once): streams already begun are answered, no new
 * ones are taken, and the connection ends when they are done. */
static void goaway(h2_conn *c)
{
    if (c->goaway)
        return;
    c->goaway = true;
    nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->ng),
                          NGHTTP2_NO_ERROR, NULL, 0);
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

/* Sends st->a on its stream; a GOAWAY follows when the answer says the caller
 * should go to another replica. */
static void stream_answer(h2_conn *c, h2_stream *st)
{
    char status[8], clen[24];
    st->len = strlen(st->a.body);
    snprintf(status, sizeof status, "%d", st->a.status);
    snprintf(clen, sizeof clen, "%zu", st->len);
    nghttp2_nv nv[8] = {NV(":status", status), NV("content-type", st->a.ctype),
                        NV("content-length", clen)};
    size_t n = 3;
    if (st->a.allow)
        nv[n++] = (nghttp2_nv)NV("allow", st->a.allow);
    if (st->a.status == 503)
        nv[n++] = (nghttp2_nv)NV("retry-after", "1");
    if (st->a.status == 401)
        nv[n++] = (nghttp2_nv)NV("www-authenticate", "Mutual-TLS realm=\"gpupack\"");
    if (st->a.location)
        nv[n++] = (nghttp2_nv)NV("location", st->a.location);
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = body_read};
    st->answered = true;
    srv_count_h2(c->s, SRV_H2_STREAMS);
    if (nghttp2_submit_response(c->ng, st->id, nv, n, &prd) != 0)
        c->failed = true;
    if (st->a.close && !c->goaway) {
        srv_count_h2(c->s, SRV_H2_GOAWAY);
        goaway(c);
    }
}

static int conn_auth(void *ud)
{
    h2_conn *c = ud;
    if (c->auth == SRV_AUTH_UNKNOWN)
        c->auth = c->io->auth ? c->io->auth(c->io->ud) : SRV_AUTH_NO_CERT;
    return c->auth;
}

static void conn_addr(void *ud, char *buf, size_t len)
{
    h2_conn *c = ud;
    snprintf(buf, len, "%s", c->peer_addr);
}

static int hexval(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* Decodes %XX in place, as libmicrohttpd does to HTTP/1.1 paths, so that a
 * path routes the same over both (a malformed escape stays as it is). */
static void percent_decode(char *p)
{
    char *w = p;
    for (; *p; p++) {
        int hi, lo;
        if (p[0] == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0) {
            *w++ = (char)(hi * 16 + lo);
            p += 2;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
}

/* The request's headers are in: route, certificate and size rules. */
static void stream_begin(h2_conn *c, h2_stream *st)
{
    st->begun = true;
    st->rq = srvreq_new(c->s, stream_resume, st);
    char *q = st->path ? strchr(st->path, '?') : NULL;
    if (q)
        *q++ = '\0';
    if (st->path)
        percent_decode(st->path);
    gp_peer peer = {.auth = conn_auth, .addr = conn_addr, .ud = c};
    if (!srvreq_begin(st->rq, st->method, st->path ? st->path : "", q,
                      st->clen[0] ? st->clen : NULL, &peer, &st->a))
        stream_answer(c, st);
}

/* The request's body is in. */
static void stream_end(h2_conn *c, h2_stream *st)
{
    st->complete = true;
    if (st->answered)
        return;   /* answered at its headers; the body was drained */
    if (srvreq_end(st->rq, &st->a))
        stream_answer(c, st);
    else {
        st->waiting = true;
        c->waiting++;
    }
}

/* ---------------------------------------------------- nghttp2 callbacks -- */

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    h2_conn *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2_stream *st = xcalloc(1, sizeof *st);
    st->c = c;
    st->id = f->hd.stream_id;
    st->start = gp_mono_s();
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    nghttp2_session_set_stream_user_data(ng, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st || st->begun)
        return 0;   /* trailers: ignored */
    st->hdr_bytes += namelen + valuelen + 32;
    if (st->hdr_bytes > H2_HEADERS_MAX) {
        st->bad = true;
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* resets the stream */
    }
    if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
        snprintf(st->method, sizeof st->method, "%.*s", (int)valuelen, (const char *)value);
    } else if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
        if (valuelen > H2_PATH_MAX || st->path) {
            st->bad = true;
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        st->path = xstrndup((const char *)value, valuelen);
    } else if (namelen == 14 && memcmp(name, "content-length", 14) == 0) {
        snprintf(st->clen, sizeof st->clen, "%.*s", (int)valuelen, (const char *)value);
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
    h2_conn *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st || st->bad)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && !st->begun)
        stream_begin(c, st);
    if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) && st->begun && !st->complete)
        stream_end(c, st);
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud)
{
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
    if (st && st->begun && !st->answered && !st->complete)
        srvreq_data(st->rq, data, len);
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud)
{
    h2_conn *c = ud;
    h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st)
        return 0;
    nghttp2_session_set_stream_user_data(ng, id, NULL);
    st->closed = true;
    if (code != NGHTTP2_NO_ERROR && !st->answered)
        srv_count_h2(c->s, SRV_H2_PROTOCOL);
    if (!st->waiting)
        stream_free(c, st);   /* else freed when its bind's answer comes */
    return 0;
}

/* ------------------------------------------------------------ the loop -- */

bool h2_send_all(ssize_t (*snd)(void *ud, const void *buf, size_t n), void *ud, const void *p,
                 size_t n)
{
    const char *q = p;
    while (n) {
        ssize_t w = snd(ud, q, n);
        if (w <= 0)
            return false;
        q += w;
        n -= (size_t)w;
    }
    return true;
}

/* Writes what nghttp2 has queued; false when the peer does not take it.
 * nghttp2 hands its frames out one at a time (an answer's HEADERS, then its
 * DATA): they are gathered into c->out and written together, so that an
 * answer, or several ready at once, costs one TLS record and one system call
 * where each frame cost its own. A frame larger than the room left goes
 * after what is gathered, straight from nghttp2's buffer. */
static bool flush(h2_conn *c)
{
    size_t have = 0;
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->ng, &data);
        if (n < 0)
            return false;
        if (n == 0)
            break;
        if ((size_t)n <= H2_OUT_CHUNK - have) {
            memcpy(c->out + have, data, (size_t)n);   /* valid only until the next call */
            have += (size_t)n;
            continue;
        }
        if (have && !h2_send_all(c->io->send, c->io->ud, c->out, have))
            return false;
        have = 0;
        if ((size_t)n <= H2_OUT_CHUNK) {
            memcpy(c->out, data, (size_t)n);
            have = (size_t)n;
        } else if (!h2_send_all(c->io->send, c->io->ud, data, (size_t)n)) {
            return false;   /* the send time-out passed, or the peer left */
        }
    }
    return !have || h2_send_all(c->io->send, c->io->ud, c->out, have);
}

/* Answers the streams whose bind is done. */
static void drain_ready(h2_conn *c)
{
    uint64_t v;
    ssize_t r = read(c->wake, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&c->mu);
    h2_stream *list = c->ready;
    c->ready = NULL;
    pthread_mutex_unlock(&c->mu);
    while (list) {
        h2_stream *st = list;
        list = st->ready_next;
        st->waiting = false;
        c->waiting--;
        if (st->closed || c->dead) {
            stream_free(c, st);   /* the client reset it, or left, meanwhile */
            continue;
        }
        if (srvreq_end(st->rq, &st->a))
            stream_answer(c, st);
    }
}

/* Resets the streams whose request did not arrive in time. */
static void reap_slow_requests(h2_conn *c, double now)
{
    for (h2_stream *st = c->streams; st; st = st->next)
        if (!st->complete && !st->bad && now - st->start > c->lim.request_s) {
            st->bad = true;
            srv_count_h2(c->s, SRV_H2_STALLED);
            nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
        }
}

/* Reads what the connection has and feeds it to nghttp2: one read, then more
 * while bytes are buffered already (the rest of a request's records), up to
 * H2_READS_PER_POLL, without a poll between. False when the connection is
 * done: closed, a TLS error, stalled past the time-out, or a protocol error
 * (the GOAWAY for it sent). */
static bool read_some(h2_conn *c, uint8_t *buf)
{
    for (int k = 0; k < H2_READS_PER_POLL; k++) {
        if (k > 0 && !(c->io->pending && c->io->pending(c->io->ud)))
            break;
        ssize_t n = c->io->recv(c->io->ud, buf, H2_READ_CHUNK);
        if (n == H2_IO_STALLED) {   /* a record started and stalled past the time-out */
            srv_count_h2(c->s, SRV_H2_STALLED);
            return false;
        }
        if (n <= 0)
            return false;   /* closed, or a TLS error */
        if (nghttp2_session_mem_recv(c->ng, buf, (size_t)n) < 0) {
            srv_count_h2(c->s, SRV_H2_PROTOCOL);
            flush(c);   /* nghttp2 queued a GOAWAY for the error */
            return false;
        }
    }
    return true;
}

static void serve_loop(h2_conn *c, atomic_bool *stopping)
{
    uint8_t *buf = xmalloc(H2_READ_CHUNK);
    double last_rx = gp_mono_s(), next_reap = last_rx + H2_REAP_PERIOD_S;
    for (;;) {
        if (!flush(c))
            break;
        if (c->failed)
            break;
        if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng))
            break;
        if (atomic_load(stopping) && !c->goaway) {
            goaway(c);
            continue;
        }
        if (atomic_load(stopping) && !c->streams)
            break;
        bool pending = c->io->pending && c->io->pending(c->io->ud);
        struct pollfd pf[2] = {{.fd = c->io->fd, .events = POLLIN}, {.fd = c->wake, .events = POLLIN}};
        int timeout = pending ? 0 : 1000;
        int pr = poll(pf, 2, timeout);
        if (pr < 0 && errno != EINTR)
            break;
        double now = gp_mono_s();
        if (pf[1].revents & POLLIN)
            drain_ready(c);
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) || pending) {
            if (!read_some(c, buf))
                break;
            last_rx = now;
        }
        if (now >= next_reap) {
            reap_slow_requests(c, now);
            next_reap = now + H2_REAP_PERIOD_S;
        }
        if (!c->streams && now - last_rx > c->lim.idle_s && !c->goaway) {
            goaway(c);   /* idle: the client opens a new connection when it needs one */
        } else if (!c->streams && c->goaway && now - last_rx > c->lim.idle_s + 5) {
            break;   /* a client that never closes after the GOAWAY */
        }
    }
    free(buf);
}

void h2_serve(gp_server *s, const h2_io *io, int wake, atomic_bool *stopping,
              const h2_limits *lim, const char *peer_addr)
{
    h2_conn c = {.s = s, .io = io, .wake = wake, .peer_addr = peer_addr};
    c.out = xmalloc(H2_OUT_CHUNK);
    c.lim.max_streams = lim && lim->max_streams ? lim->max_streams : 128;
    c.lim.idle_s = lim && lim->idle_s ? lim->idle_s : 60;
    c.lim.request_s = lim && lim->request_s ? lim->request_s : 60;
    pthread_mutex_init(&c.mu, NULL);
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        abort();
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0)
        abort();
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    int rc = nghttp2_session_server_new2(&c.ng, cb, &c, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    if (rc != 0)
        abort();
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c.lim.max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_HEADERS_MAX},
    };
    nghttp2_submit_settings(c.ng, NGHTTP2_FLAG_NONE, iv, GP_ARRAY_LEN(iv));
    nghttp2_session_set_local_window_size(c.ng, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW);
    serve_loop(&c, stopping);
    c.dead = true;
    /* the binds still owed an answer: their streams are freed as the answers
     * come (each bind is bounded by its API time-outs) */
    while (c.waiting > 0) {
        struct pollfd pf = {.fd = c.wake, .events = POLLIN};
        if (poll(&pf, 1, 1000) > 0)
            drain_ready(&c);
    }
    nghttp2_session_del(c.ng);   /* closes no stream through the callbacks */
    while (c.streams)
        stream_free(&c, c.streams);
    free(c.out);
    pthread_mutex_destroy(&c.mu);
}
