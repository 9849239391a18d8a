/* testutil.h -- builders for nodes and requests, fixture loading (tests only). */
#ifndef GP_TESTUTIL_H
#define GP_TESTUTIL_H

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "http/server.h"
#include "pack/cluster.h"
#include "model/gpu.h"

/* A node of n GPUs with mem[i] MiB each (model "A100" unless models given),
 * usage (mem_used, core_used per-mille) applied. Returns owned (free()). */
gp_node *tu_node(const char *name, int n, const int64_t *mem, const int64_t *used_mem,
                 const int *used_core);
/* An inventory of n identical GPUs. */
void tu_inventory(gp_inventory *inv, int n, int64_t mem, const char *model);
/* A pod request with one container. */
void tu_req(gp_pod_req *r, const char *uid, int count, int64_t mem, int core_permille);
/* Adds a container. */
void tu_add_ctr(gp_pod_req *r, const char *name, bool init, int count, int64_t mem, int core);
/* Loads a JSON file (aborts the test on failure); path relative to the repo root. */
json_t *tu_load_json(const char *path);
/* Path of a capture from the real kube-scheduler / kube-apiserver under
 * test/fixtures/captured/ (README there); static buffer, overwritten by the next call. */
const char *tu_captured(const char *rel);
/* One HTTP request (body NULL: none); returns the answer body, owned. */
char *tu_http(const char *method, const char *url, const char *body, long *status);
/* A whole text file (aborts the test on failure); owned. */
char *tu_read_text(const char *path);
/* Writes a kubeconfig for the API server at url (token "t") to a new file
 * /tmp/gpupack-kc-XXXXXX; path (at least 32 bytes) gets its name. The caller
 * unlinks it. */
void tu_kubeconfig(const char *url, char *path, size_t len);
/* Starts argv[0] (a path) with argv, its stdout on out_fd and its stderr on
 * err_fd (-1: the test's own). posix_spawn, not fork: the test process has
 * threads (a fake API server's, a listener's), and a forked child that takes
 * a lock one of them held -- the allocator's, a sanitizer's -- before it
 * execs waits for ever. Fails the test if the program cannot start. */
pid_t tu_spawn(const char *const *argv, int out_fd, int err_fd);
/* Prints to stderr what a process is doing: its executable and, per thread,
 * name, state, wait channel and current system call (from /proc). */
void tu_describe_process(pid_t pid);
/* How long tu_serve waits for the server to say where it listens. */
#define TU_SERVE_WAIT_S 20.0
/* The N of a server log's first whole line "listening on ... (port N)"; 0 when none is there yet. */
int tu_port_in(const char *text);
/* Reads fd (a child's piped log) into text (cap bytes, NUL-terminated; the
 * newer half kept when full) until done(text) holds, the pipe ends (*eof) or
 * wait_s pass. Returns done(text). */
bool tu_read_log(int fd, bool (*done)(const char *text), char *text, size_t cap, double wait_s,
                 bool *eof);
/* Starts `$GPUPACK_BIN serve ARGS...` (args NULL-terminated, at most 14) with
 * its stderr piped, and reads that log until the line "listening on ... (port
 * N)". Returns the pid; *port gets N and *log the rest of the log (owned: the
 * caller reads or fcloses it; a server writing to a full pipe blocks). Fails
 * the test if GPUPACK_BIN is unset, or if the server ends or is silent for
 * TU_SERVE_WAIT_S before it says where it listens: then what it wrote and
 * (if it still runs) its threads are printed, and it is killed. */
pid_t tu_serve(const char *const *args, int *port, FILE **log);

/* A served gpupack whose log a thread reads to its end (so the server never
 * blocks on it). A thread, not a child process: a forked child would carry
 * the parent's allocations (an in-process fake API server's) to its exit,
 * where valgrind reports them as lost. */
typedef struct tu_server {
    pid_t pid;
    int port;
    FILE *log;
    pthread_t reader;
} tu_server;
void tu_server_start(tu_server *s, const char *const *args);
void tu_server_stop(tu_server *s);   /* SIGTERM, reap, join the reader */

/* The listener in process on port 0, over examples/cluster.yaml (embedded
 * mode): what the HTTP suites (server, guard, h2) start. base is
 * http(s)://127.0.0.1:PORT, https when cfg gives a certificate. */
typedef struct tu_listener {
    gp_cluster *c;
    gp_extender *e;
    gp_server *s;
    char base[64];
} tu_listener;
void tu_listener_start(tu_listener *l, const gp_server_config *cfg, const gp_server_hooks *hooks);
void tu_listener_stop(tu_listener *l);

/* The value of one series ("name" or "name{labels}", exactly as written) in
 * Prometheus text, or -1 when it is not there. */
double tu_metric_in(const char *text, const char *series);

#endif
