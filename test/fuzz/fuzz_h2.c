/* fuzz_h2.c -- HTTP/2 frames from an untrusted client, through nghttp2 and
 * gpupack's stream handling (src/http/h2.c) into the listener's routes: the
 * input follows the client preface on a socket pair, a thread serves it as
 * one connection, and the answers are read and dropped. Nothing may crash,
 * leak or hang; the connection must end when the input does.
 *
 *   make fuzz-short FUZZ_ONLY=h2     (or build/fuzz/fuzz_h2 -max_total_time=60 test/fuzz/corpus/h2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http/h2.h"
#include "http/server.h"
#include "pack/clusterfile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gp_cluster *cluster;
static gp_extender *ext;
static gp_server *srv;

typedef struct side {
    int fd, wake;
} side;

static ssize_t fd_recv(void *ud, void *buf, size_t n)
{
    side *sd = ud;
    ssize_t r = recv(sd->fd, buf, n, 0);
    return r < 0 ? -1 : r;
}

static ssize_t fd_send(void *ud, const void *buf, size_t n)
{
    side *sd = ud;
    ssize_t w = send(sd->fd, buf, n, MSG_NOSIGNAL);
    return w < 0 ? -1 : w;
}

static int trusted(void *ud)
{
    return SRV_AUTH_OK;
}

static void *serve(void *arg)
{
    side *sd = arg;
    static atomic_bool stopping;
    h2_limits lim = {0};
    h2_io io = {.recv = fd_recv, .send = fd_send, .auth = trusted, .ud = sd, .fd = sd->fd};
    h2_serve(srv, &io, sd->wake, &stopping, &lim, "fuzz");
    shutdown(sd->fd, SHUT_RDWR);
    return NULL;
}

/* A fresh cluster, extender and listener: what binds of made-up pods add to
 * the map is state, not a leak, so the world is rebuilt now and then to keep
 * the fuzzer's memory flat. */
static void world_up(void)
{
    cluster = cluster_new();
    gp_err err;
    if (clusterfile_load(cluster, "examples/cluster.yaml", 1024, NULL, &err) != 0)
        fprintf(stderr, "fuzz_h2: %s; the cluster stays empty\n", err.msg);
    ext = extender_new(cluster, NULL);
    gp_server_config cfg = {.listen = "127.0.0.1:0", .max_body = 64u << 10};
    srv = server_start(&cfg, ext, cluster, NULL, &err);
    if (!srv)
        abort();
}

static void world_down(void)
{
    server_stop(srv);
    extender_free(ext);
    cluster_free(cluster);
}

/* libmicrohttpd 0.9.75 keeps two 16-byte blocks of a daemon that was
 * started and stopped (LeakSanitizer reports them after a rebuild above,
 * allocated inside libmicrohttpd; valgrind sees no such loss in the unit
 * suites' many servers): not gpupack's memory, so not reported here. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libmicrohttpd.so\n";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    world_up();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    static unsigned runs;
    if (++runs % 5000 == 0) {
        world_down();
        world_up();
    }
    int sv[2];
    if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    /* a stalled write ends the connection instead of hanging the fuzzer */
    struct timeval tv = {.tv_sec = 2};
    setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    side sd = {sv[0], eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    pthread_t t;
    if (sd.wake < 0 || pthread_create(&t, NULL, serve, &sd) != 0)
        abort();
    /* the input fits the socket's buffer: these writes do not wait for the server */
    if (write(sv[1], preface, sizeof preface - 1) < 0 || (size && write(sv[1], data, size) < 0))
        abort();
    shutdown(sv[1], SHUT_WR);
    char buf[16384];
    while (read(sv[1], buf, sizeof buf) > 0)
        ;
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);
    close(sd.wake);
    return 0;
}
