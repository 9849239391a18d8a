/* tcpfwd.c -- a TCP forwarder on 127.0.0.1 (tcpfwd.h). */
#include "tcpfwd.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/util.h"

typedef struct conn {
    tcpfwd *f;
    int c, b;
    unsigned gen;
} conn;

static void *splice_conn(void *arg)
{
    conn *x = arg;
    char *buf = xmalloc(65536);
    struct pollfd p[2] = {{x->c, POLLIN, 0}, {x->b, POLLIN, 0}};
    for (;;) {
        int n = poll(p, 2, 500);
        if (atomic_load(&x->f->gen) != x->gen)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if (n == 0)
            continue;
        bool done = false;
        for (int i = 0; i < 2 && !done; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(p[i].fd, buf, 65536);
            if (r <= 0) {
                done = true;
                break;
            }
            int d = atomic_load(&x->f->delay_ms);
            if (i == 1 && d > 0)    /* the server's answer, late */
                usleep((useconds_t)d * 1000);
            for (ssize_t off = 0; off < r;) {
                ssize_t w = send(p[1 - i].fd, buf + off, (size_t)(r - off), MSG_NOSIGNAL);   /* no SIGPIPE */
                if (w <= 0) {
                    done = true;
                    break;
                }
                off += w;
            }
        }
        if (done)
            break;
    }
    close(x->c);
    close(x->b);
    free(buf);
    free(x);
    return NULL;
}

static void *acceptor(void *arg)
{
    tcpfwd *f = arg;
    for (;;) {
        int c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EBADF || errno == EINVAL)
                return NULL;
            continue;
        }
        int port = atomic_load(&f->target);
        int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (port == 0 || atomic_load(&f->partitioned) || connect(b, (struct sockaddr *)&a, sizeof a) != 0) {
            close(b);
            close(c);
            continue;
        }
        conn *x = xmalloc(sizeof *x);
        *x = (conn){.f = f, .c = c, .b = b, .gen = atomic_load(&f->gen)};
        atomic_fetch_add(&f->conns, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, splice_conn, x) == 0) {
            pthread_detach(t);
        } else {
            close(c);
            close(b);
            free(x);
        }
    }
}

int tcpfwd_start(tcpfwd *f)
{
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(f->lfd, 128) != 0 ||
        getsockname(f->lfd, (struct sockaddr *)&a, &len) != 0) {
        if (f->lfd >= 0)
            close(f->lfd);
        f->lfd = -1;
        return -1;
    }
    f->port = ntohs(a.sin_port);
    if (pthread_create(&f->acceptor, NULL, acceptor, f) != 0) {
        close(f->lfd);
        f->lfd = -1;
        return -1;
    }
    return 0;
}

void tcpfwd_stop(tcpfwd *f)
{
    atomic_fetch_add(&f->gen, 1);      /* connection threads end within 0.5 s */
    shutdown(f->lfd, SHUT_RDWR);
    close(f->lfd);
    pthread_join(f->acceptor, NULL);
}
