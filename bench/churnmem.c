/* churnmem.c -- what a gpupack replica's memory does under hours of pod churn
 * and relists, in minutes, without a control plane.
 *
 *   bin/churnmem [--gpupack BIN] [--pods N] [--alive N] [--nodes N] [--every N]
 *                [--relist-every N] [--restart-every N] [--rate PODS_PER_S] [--clients N]
 *                [--slow N] [--tls] [--api-tls] [--seed S] [--csv FILE]
 *
 * Runs BIN (default bin/gpupack) `serve` in live mode against an in-process
 * fake API server (test/fakeapi.c) holding --nodes nodes of 8 GPUs, and plays
 * kube-scheduler: each pod is created pending, filtered over every node,
 * bound through gpupack's /bind (gpupack's Binding lands in the fake, which
 * copies the annotations and the node onto the pod, and the watch brings it
 * back); a pod that does not bind is tried again (10 times, 100 ms apart: a
 * bind that lost its GPUs to another, a relist under way), then deleted; once
 * --alive pods are alive each new bound one replaces a random older one,
 * which is deleted (seeded: with one client the same run every time).
 * --rate paces the pods' starts (default 0: as fast as gpupack and the fake
 * take them; a sample then comes at most once a minute, with the trims).
 * --restart-every N: an API-server restart (every connection and watch cut,
 * 3 s without an answer, the same state back on the same port). --api-tls:
 * the fake API server over HTTPS, so gpupack's watches and Bindings go
 * through libcurl and GnuTLS as against kube-apiserver.
 * --tls: the verbs over HTTPS (gpupack's TLS front, HTTP/2 where the client
 * offers it) with the unit tests' certificates, as kube-scheduler calls them.
 * --clients pods are on their way at once (kube-scheduler's binding
 * goroutines); with --slow N, half-way between samples the next N Bindings
 * are answered 300 ms late (a slow API server: binds pile up).
 * Every --relist-every pods (default 0: never) every resourceVersion expires
 * and the watches are cut (as after an etcd compaction: 410, LIST again);
 * gpupack's watches back off after failures in a row (0.2 s doubling to 30 s,
 * halved for every 10 s without a failure), so relists or restarts closer than
 * that keep its map stale for longer each time (binds then stay assumed: not
 * what a soak sees). Every
 * --every pods, once gpupack's next heap trim is counted (once a minute, and
 * after each LIST; the churn goes on meanwhile), the bench samples
 * /proc/PID/status and gpupack_heap_bytes: the memory resident beside the heap
 * in use is what fragmentation and thread stacks keep; the pods column is the
 * count at that moment, beside gpupack's own count of the pods it holds as
 * bound and as assumed. Prints one line per sample and a summary; --csv
 * writes the samples. Its CPU figures are not the point: the fake API server runs in
 * this process. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "lib/flags.h"
#include "lib/log.h"
#include "lib/util.h"

extern char **environ;

#define CLIENTS_MAX 64
#define TLS_DIR "test/fixtures/tls/"   /* the unit tests' certificates (--tls) */
#define TRIES 10   /* a pod's filter and bind, 100 ms apart, before it is deleted */

typedef struct opts {
    const char *bin, *csv;
    long pods, alive, every, relist_every, restart_every, slow;
    double rate;
    bool tls, api_tls;
    int clients;
    int nodes;
    unsigned seed;
} opts;

static json_t *node_json(int i)
{
    char name[32], gpus[2048] = "[";
    snprintf(name, sizeof name, "node-%04d", i);
    for (int g = 0; g < 8; g++) {
        char one[200];
        snprintf(one, sizeof one,
                 "%s{\"index\":%d,\"uuid\":\"GPU-%04d-%d\",\"model\":\"A100-SXM4-80GB\","
                 "\"memoryMiB\":81920,\"healthy\":true}", g ? "," : "", g, i, g);
        strcat(gpus, one);
    }
    strcat(gpus, "]");
    return json_pack("{s:{s:s,s:{s:s}},s:{},s:{s:{s:s,s:s}}}", "metadata", "name", name,
                     "annotations", "gpupack.io/gpus", gpus, "spec", "status", "capacity", "cpu",
                     "128", "memory", "1024Gi");
}

/* A pod of the sizes the soak draws: a share of one GPU, or one to four whole ones. */
static json_t *pod_json(long i, unsigned *seed)
{
    char name[32], mem[16], count[8];
    snprintf(name, sizeof name, "p-%07ld", i);
    int r = rand_r(seed) % 10;
    json_t *limits;
    if (r < 7) {
        snprintf(mem, sizeof mem, "%d", 2048 * (1 + rand_r(seed) % 16));
        limits = json_pack("{s:s}", "gpupack.io/gpu-mem", mem);
    } else {
        snprintf(count, sizeof count, "%d", 1 << (rand_r(seed) % 3));
        limits = json_pack("{s:s}", "gpupack.io/gpu", count);
    }
    return json_pack("{s:{s:s,s:s,s:{s:s,s:s}},s:{s:[{s:s,s:s,s:{s:O,s:o}}],s:s,s:i},s:{s:s}}",
                     "metadata", "name", name, "namespace", "churn", "labels", "app", "churn",
                     "tier", r < 3 ? "low" : "high", "spec", "containers", "name", "main",
                     "image", "registry.invalid/x", "resources", "limits", limits, "requests",
                     limits, "schedulerName", "default-scheduler", "priority", r < 3 ? 0 : 100,
                     "status", "phase", "Pending");
}

static long gp_call(gp_kube *gp, const char *method, const char *path, const char *body,
                    gp_kube_resp *r)
{
    gp_err err;
    if (kube_request(gp, method, path, "application/json", body, 30, NULL, r, &err) < 0) {
        fprintf(stderr, "churnmem: %s %s: %s\n", method, path, err.msg);
        return -1;
    }
    return r->status;
}

/* A sample's value by its whole name and labels ("gpupack_pods{state=\"bound\"}"); -1 when absent. */
static double metric(const char *metrics, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = strstr(metrics, series); p; p = strstr(p + 1, series)) {
        if ((p == metrics || p[-1] == '\n') && p[n] == ' ')
            return atof(p + n + 1);
    }
    return -1;
}

static double trims(const char *metrics)
{
    return metric(metrics, "gpupack_heap_trims_total");
}

static char *metrics_text(gp_kube *gp)
{
    gp_kube_resp r;
    char *text = NULL;
    if (gp_call(gp, "GET", "/metrics", NULL, &r) == 200 && r.body.data)
        text = xstrdup(r.body.data);
    kube_resp_free(&r);
    return text;
}

/* VmRSS, RssAnon and Threads of pid. */
static void proc_status(pid_t pid, double *rss, double *anon, int *threads)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    *rss = *anon = -1;
    *threads = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6))
            *rss = atof(line + 6) / 1024;
        else if (!strncmp(line, "RssAnon:", 8))
            *anon = atof(line + 8) / 1024;
        else if (!strncmp(line, "Threads:", 8))
            *threads = atoi(line + 8);
    }
    if (f)
        fclose(f);
}

/* Waits (at most 10 s) for /readyz: after a relist the verbs refuse until the LIST is in. */
static void wait_ready(gp_kube *gp)
{
    for (int i = 0; i < 500; i++) {
        gp_kube_resp r;
        long st = gp_call(gp, "GET", "/readyz", NULL, &r);
        kube_resp_free(&r);
        if (st == 200)
            return;
        usleep(20000);
    }
}

/* The command line, as lib/flags reads it; main copies it into opts. */
typedef struct cli {
    const char *bin, *csv;
    size_t pods, alive, every, relist_every, restart_every, slow;
    double rate;
    bool tls, api_tls;
    unsigned clients, nodes, seed;
} cli;

#define C(field) offsetof(cli, field)
static const gp_flag cli_flags[] = {
    GP_FLAG("--gpupack", FLAG_STR, C(bin), "BIN", "the gpupack to run (default bin/gpupack)"),
    GP_FLAG("--pods", FLAG_SIZE, C(pods), "N", "pods created in all (default 60000)", .min = 1),
    GP_FLAG("--alive", FLAG_SIZE, C(alive), "N", "bound pods kept alive (default 3300)", .min = 1),
    GP_FLAG("--nodes", FLAG_UINT, C(nodes), "N", "nodes of 8 GPUs (default 300)", .min = 1,
            .max = 9999),
    GP_FLAG("--every", FLAG_SIZE, C(every), "N", "a sample every N pods (default 5000)", .min = 1),
    GP_FLAG("--relist-every", FLAG_SIZE, C(relist_every), "N",
            "a relist (410, LIST again) every N pods (default 0: never)"),
    GP_FLAG("--restart-every", FLAG_SIZE, C(restart_every), "N",
            "an API-server restart every N pods: every connection and watch ends, nothing\n"
            "answers for 3 s, the same state comes back (default 0: never)"),
    GP_FLAG("--rate", FLAG_DOUBLE, C(rate), "PODS_PER_S",
            "pods started per second (default 0: as fast as they go)"),
    GP_FLAG("--clients", FLAG_UINT, C(clients), "N", "pods on their way at once (default 1)",
            .min = 1, .max = CLIENTS_MAX),
    GP_FLAG("--slow", FLAG_SIZE, C(slow), "N",
            "half-way between samples, the next N Bindings answered 300 ms late (default 0)"),
    GP_FLAG("--tls", FLAG_BOOL, C(tls), NULL, "the verbs over HTTPS (the unit tests' certificates)"),
    GP_FLAG("--api-tls", FLAG_BOOL, C(api_tls), NULL,
            "the fake API server over HTTPS (the same certificates): gpupack's watches and\n"
            "Bindings through libcurl and GnuTLS, as against kube-apiserver"),
    GP_FLAG("--seed", FLAG_UINT, C(seed), "S", "the pods' seed (default 42)"),
    GP_FLAG("--csv", FLAG_STR, C(csv), "FILE", "also write the samples as CSV"),
};
#undef C

static const gp_command cli_cmd = {
    "churnmem", "[flags]",
    "What a gpupack replica's memory does under pod churn and relists, without a control plane.",
    cli_flags, GP_ARRAY_LEN(cli_flags), NULL, 0};

/* 0, or the exit status (0 after --help, 2 on a usage error) with *done set. */
static int parse(int argc, char **argv, opts *o, bool *done)
{
    cli c = {.bin = "bin/gpupack", .pods = 60000, .alive = 3300, .every = 5000, .clients = 1,
             .nodes = 300, .seed = 42};
    int rc = flags_parse(&cli_cmd, argc, argv, &c, NULL, NULL);
    *done = rc != FLAGS_OK;
    if (*done)
        return rc == FLAGS_HELP ? 0 : 2;
    *o = (opts){.bin = c.bin, .csv = c.csv, .pods = (long)c.pods, .alive = (long)c.alive,
                .every = (long)c.every, .relist_every = (long)c.relist_every,
                .restart_every = (long)c.restart_every,
                .slow = (long)c.slow, .rate = c.rate, .tls = c.tls, .api_tls = c.api_tls,
                .clients = (int)c.clients,
                .nodes = (int)c.nodes, .seed = c.seed};
    return 0;
}

/* What the clients share. */
typedef struct run {
    const opts *o;
    gp_fakeapi *f;
    gp_kube *gp;
    pid_t pid;
    const char *names;
    FILE *csv;
    pthread_mutex_t mu;          /* the fields below */
    long next, *alive, nalive, unbound;
    unsigned seed;
    double first_gap, last_gap;
    double t0;                   /* when the first pod started (gp_mono_s) */
} run;

/* One try of a pod: filtered over every node, bound on the first node filter
 * kept. False when it was not bound. */
static bool try_pod(run *R, const char *name, const json_t *pj, int attempt)
{
    json_t *args = json_pack("{s:O,s:n}", "Pod", pj, "Nodes");
    json_object_set_new(args, "NodeNames", json_loads(R->names, 0, NULL));
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    gp_kube_resp r;
    bool bound = false;
    static atomic_int told;   /* the first failures of the last tries, to stderr */
    if (gp_call(R->gp, "POST", "/filter", body, &r) == 200) {
        json_t *ans = json_loadb(r.body.data, r.body.len, 0, NULL);
        const char *chosen = json_string_value(json_array_get(json_object_get(ans, "NodeNames"), 0));
        if (!chosen && attempt == TRIES - 1 && atomic_fetch_add(&told, 1) < 3)
            fprintf(stderr, "churnmem: filter %s: %.300s\n", name, r.body.data ? r.body.data : "");
        kube_resp_free(&r);
        if (chosen) {
            json_t *b = json_pack("{s:s,s:s,s:s,s:s}", "PodName", name, "PodNamespace", "churn",
                                  "PodUID", json_string_value(json_object_get(json_object_get(pj,
                                  "metadata"), "uid")), "Node", chosen);
            char *bb = json_dumps(b, JSON_COMPACT);
            json_decref(b);
            bound = gp_call(R->gp, "POST", "/bind", bb, &r) == 200 &&
                    strstr(r.body.data ? r.body.data : "", "\"Error\":\"\"");
            if (!bound && attempt == TRIES - 1 && atomic_fetch_add(&told, 1) < 3)
                fprintf(stderr, "churnmem: bind %s: %.300s\n", name, r.body.data ? r.body.data : "");
            kube_resp_free(&r);
            free(bb);
        }
        json_decref(ans);
    } else {
        kube_resp_free(&r);
    }
    free(body);
    return bound;
}

/* One pod: created, then tried as kube-scheduler retries a pod (a bind that
 * lost its GPUs to another, a relist under way), TRIES times 100 ms apart; a
 * pod that never binds is deleted, as its user gives up. False then. */
static bool one_pod(run *R, long i, json_t *pod)
{
    char name[32];
    snprintf(name, sizeof name, "p-%07ld", i);
    fakeapi_put_pod(R->f, pod);   /* stolen */
    json_t *pj = fakeapi_get_pod(R->f, "churn", name);   /* with its uid, as kube-scheduler sends it */
    bool bound = false;
    for (int a = 0; pj && a < TRIES && !bound; a++) {
        if (a)
            usleep(100000);
        bound = try_pod(R, name, pj, a);
    }
    json_decref(pj);
    if (!bound)
        fakeapi_delete_pod(R->f, "churn", name);
    return bound;
}

/* As after a compaction: the watches end, and the resourceVersion they
 * resume from is gone (a change made while they are down makes it older than
 * the current one): gpupack LISTs again. */
static void relist(run *R)
{
    fakeapi_cut_watches(R->f, false);
    fakeapi_put_node(R->f, node_json(0));
    fakeapi_expire(R->f);
}

/* One sample, after gpupack's next trim (the minute's, or a LIST's). */
static void sample(run *R)
{
    char *m = metrics_text(R->gp);
    double t0 = m ? trims(m) : -1;
    free(m);
    m = NULL;
    for (int w = 0; w < 1300; w++) {
        usleep(50000);
        free(m);
        m = metrics_text(R->gp);
        if (!m || trims(m) != t0)
            break;
    }
    double rss, anon;
    int threads;
    proc_status(R->pid, &rss, &anon, &threads);
    double used = m ? metric(m, "gpupack_heap_bytes{state=\"in_use\"}") / 1048576.0 : -1;
    double fr = m ? metric(m, "gpupack_heap_bytes{state=\"free\"}") / 1048576.0 : -1;
    double bound = m ? metric(m, "gpupack_pods{state=\"bound\"}") : -1;
    double assumed = m ? metric(m, "gpupack_pods{state=\"assumed\"}") : -1;
    free(m);
    pthread_mutex_lock(&R->mu);
    long done = R->next;
    printf("%9ld %8.2f %8.2f %8.2f %10.2f %8.2f %7d %7.0f %7.0f\n", done, rss, anon, used,
           anon - used, fr, threads, bound, assumed);
    fflush(stdout);
    if (R->csv)
        fprintf(R->csv, "%ld,%.2f,%.2f,%.2f,%.2f,%d,%.0f,%.0f\n", done, rss, anon, used, fr, threads,
                bound, assumed);
    if (R->first_gap < 0)
        R->first_gap = anon - used;
    R->last_gap = anon - used;
    pthread_mutex_unlock(&R->mu);
    wait_ready(R->gp);
}

/* A client: kube-scheduler's binding goroutines, one pod at a time each. */
static void *client(void *arg)
{
    run *R = arg;
    const opts *o = R->o;
    for (;;) {
        pthread_mutex_lock(&R->mu);
        long i = R->next < o->pods ? R->next++ : -1;
        json_t *pod = i >= 0 ? pod_json(i, &R->seed) : NULL;
        pthread_mutex_unlock(&R->mu);
        if (i < 0)
            return NULL;
        if (o->rate > 0) {   /* pod i starts i / rate seconds after the first */
            double wait = R->t0 + (double)i / o->rate - gp_mono_s();
            if (wait > 0)
                usleep((useconds_t)(wait * 1e6));
        }
        if (o->slow > 0 && i % o->every == o->every / 2)   /* half-way: a slow API server */
            fakeapi_delay(R->f, "POST", "/binding", 300, (int)o->slow);
        bool bound = one_pod(R, i, pod);
        /* the alive set: the newest replace a random older one */
        char old[32] = "";
        pthread_mutex_lock(&R->mu);
        if (!bound) {
            R->unbound++;
        } else if (R->nalive < o->alive) {
            R->alive[R->nalive++] = i;
        } else {   /* bound, and the set is full */
            long slot = rand_r(&R->seed) % o->alive;
            snprintf(old, sizeof old, "p-%07ld", R->alive[slot]);
            R->alive[slot] = i;
        }
        pthread_mutex_unlock(&R->mu);
        if (old[0])
            fakeapi_delete_pod(R->f, "churn", old);
        if (o->relist_every && (i + 1) % o->relist_every == 0)
            relist(R);
        if (o->restart_every && (i + 1) % o->restart_every == 0 && fakeapi_restart(R->f, 3000) < 0)
            fprintf(stderr, "churnmem: the fake API server did not come back on its port\n");
        if ((i + 1) % o->every == 0)
            sample(R);
    }
}

int main(int argc, char **argv)
{
    opts o;
    bool done;
    int prc = parse(argc, argv, &o, &done);
    if (done)
        return prc;
    gp_log_set_level(GP_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    gp_err rerr;
    char *cert = o.api_tls ? gp_read_file(TLS_DIR "server.crt", 1 << 20, NULL, &rerr) : NULL;
    char *key = o.api_tls ? gp_read_file(TLS_DIR "server.key", 1 << 20, NULL, &rerr) : NULL;
    if (o.api_tls && (!cert || !key)) {
        fprintf(stderr, "churnmem: cannot read %sserver.crt or .key (run from the repository)\n",
                TLS_DIR);
        return 1;
    }
    gp_fakeapi *f = o.api_tls ? fakeapi_start_tls(cert, key) : fakeapi_start();
    if (!f) {
        fprintf(stderr, "churnmem: the fake API server did not start\n");
        return 1;
    }
    for (int i = 0; i < o.nodes; i++)
        fakeapi_put_node(f, node_json(i));
    char dir[] = "/tmp/churnmem-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char kc[64], logp[64];
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    snprintf(logp, sizeof logp, "%s/gpupack.log", dir);
    FILE *k = fopen(kc, "w");
    if (!k) {
        perror(kc);
        return 1;
    }
    char ca[PATH_MAX + 64] = "";
    if (o.api_tls) {
        char cwd[PATH_MAX];
        snprintf(ca, sizeof ca, ", certificate-authority: \"%s/%sca.crt\"",
                 getcwd(cwd, sizeof cwd) ? cwd : ".", TLS_DIR);
    }
    fprintf(k, "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: fake\n"
               "  cluster: {server: \"%s\"%s}\ncontexts:\n- name: t\n  context: {cluster: fake, "
               "user: u}\nusers:\n- name: u\n  user: {token: t}\n", fakeapi_url(f), ca);
    fclose(k);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    char *const plain[] = {(char *)o.bin, "serve", "--kubeconfig", kc, "--listen", "127.0.0.1:0",
                           "--policies", "policies", NULL};
    char *const tls[] = {(char *)o.bin, "serve", "--kubeconfig", kc, "--listen", "127.0.0.1:0",
                         "--policies", "policies", "--tls-cert", TLS_DIR "server.crt", "--tls-key",
                         TLS_DIR "server.key", NULL};
    char *const *args = o.tls ? tls : plain;
    pid_t pid;
    if (posix_spawn(&pid, o.bin, &fa, NULL, args, environ) != 0) {
        fprintf(stderr, "churnmem: cannot start %s\n", o.bin);
        return 1;
    }
    posix_spawn_file_actions_destroy(&fa);
    int port = 0;
    for (int i = 0; i < 500 && !port; i++) {
        usleep(20000);
        FILE *l = fopen(logp, "r");
        char line[512];
        while (l && fgets(line, sizeof line, l)) {
            const char *p = strstr(line, "(port ");
            if (p)
                port = atoi(p + 6);
        }
        if (l)
            fclose(l);
    }
    int rc = 1;
    gp_kube *gp = NULL;
    FILE *csv = NULL;
    long *alive = NULL;
    char *names = NULL;
    if (!port) {
        fprintf(stderr, "churnmem: gpupack did not say its port (log %s)\n", logp);
        goto out;
    }
    char url[64];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d", o.tls ? "https" : "http", port);
    gp_kube_auth auth = {.server = url, .ca_file = o.tls ? TLS_DIR "ca.crt" : NULL};
    gp_err err;
    gp = kube_new(&auth, &err);
    wait_ready(gp);
    /* the NodeNames every filter sends: all the nodes */
    json_t *nn = json_array();
    for (int i = 0; i < o.nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%04d", i);
        json_array_append_new(nn, json_string(name));
    }
    names = json_dumps(nn, JSON_COMPACT);
    json_decref(nn);
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        perror(o.csv);
        goto out;
    }
    if (csv)
        fprintf(csv, "pods,rss_mib,rss_anon_mib,heap_in_use_mib,heap_free_mib,threads,bound,assumed\n");
    printf("# churnmem: %s, %d nodes x 8 GPUs, %ld pods at %g/s (0: at once), %ld alive, a sample every "
           "%ld, a relist every %ld, an API-server restart every %ld, %d clients%s, API server over "
           "%s, %ld slow Bindings per sample, seed %u\n", o.bin, o.nodes, o.pods, o.rate, o.alive,
           o.every, o.relist_every, o.restart_every, o.clients, o.tls ? " over TLS" : "",
           o.api_tls ? "HTTPS" : "HTTP", o.slow, o.seed);
    printf("%9s %8s %8s %8s %10s %8s %7s %7s %7s\n", "pods", "RSS", "anon", "in use", "anon-used",
           "free", "threads", "bound", "assumed");
    alive = xcalloc((size_t)o.alive, sizeof *alive);
    run R = {.o = &o, .f = f, .gp = gp, .pid = pid, .names = names, .alive = alive, .csv = csv,
             .seed = o.seed, .first_gap = -1, .t0 = gp_mono_s()};
    pthread_mutex_init(&R.mu, NULL);
    pthread_t th[CLIENTS_MAX];
    for (int c = 0; c < o.clients; c++)
        pthread_create(&th[c], NULL, client, &R);
    for (int c = 0; c < o.clients; c++)
        pthread_join(th[c], NULL);
    pthread_mutex_destroy(&R.mu);
    long unbound = R.unbound;
    double first_gap = R.first_gap, last_gap = R.last_gap;
    printf("# %ld pods, %ld not bound; anon - in use: first sample %.2f MiB, last %.2f MiB\n",
           o.pods, unbound, first_gap, last_gap);
    rc = 0;
out:
    if (csv)
        fclose(csv);
    free(alive);
    free(names);
    kube_free(gp);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fakeapi_stop(f);
    free(cert);
    free(key);
    return rc;
}
