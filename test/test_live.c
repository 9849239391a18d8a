/* test_live.c -- the real gpupack binary against the fake API server: filter -> prioritize ->
 * bind, restart with an identical map, watch cuts with changes meanwhile, binds racing deletions. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "livetest.h"
#include "testutil.h"
#include "lib/log.h"

#define TOKEN "live-test-token"

typedef struct live_env {
    gp_fakeapi *f;
    char *dir, *kubeconfig, *log;
    pid_t pid;
    int port;
    gp_kube *gp;      /* an HTTP client pointed at gpupack */
    const char *extra[8];   /* more serve flags (NULL-terminated) */
    bool no_wait;           /* gp_start returns before /readyz says ready */
} live_env;

static json_t *node(const char *name, int ngpus, int mem)
{
    char gpus[1024] = "[";
    for (int i = 0; i < ngpus; i++) {
        char one[200];
        snprintf(one, sizeof one,
                 "%s{\"index\":%d,\"uuid\":\"GPU-%s-%d\",\"model\":\"A10\",\"memoryMiB\":%d,\"healthy\":true}",
                 i ? "," : "", i, name, i, mem);
        strcat(gpus, one);
    }
    strcat(gpus, "]");
    return json_pack("{s:{s:s,s:{s:s}},s:{},s:{s:{s:s}}}", "metadata", "name", name, "annotations",
                     "gpupack.io/gpus", gpus, "spec", "status", "capacity", "cpu", "32");
}

static json_t *gpu_pod(const char *name, int mem)
{
    char m[32];
    snprintf(m, sizeof m, "%d", mem);
    return json_pack("{s:{s:s,s:s,s:{s:s}},s:{s:[{s:s,s:s,s:{s:{s:s},s:{s:s}}}],s:s},s:{s:s}}",
                     "metadata", "name", name, "namespace", "default", "labels", "app", "t", "spec",
                     "containers", "name", "main", "image", "registry.invalid/x", "resources",
                     "limits", "gpupack.io/gpu-mem", m, "requests", "gpupack.io/gpu-mem", m,
                     "schedulerName", "default-scheduler", "status", "phase", "Pending");
}

/* ------------------------------------------------------------ process --- */

static int read_port(const char *log, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (gp_mono_s() < end) {
        size_t len;
        char *s = livetest_read(log, &len);
        const char *p = s ? strstr(s, "(port ") : NULL;
        int port = p ? atoi(p + 6) : 0;
        free(s);
        if (port > 0)
            return port;
        usleep(10000);
    }
    return 0;
}

static int http(live_env *x, const char *method, const char *path, const char *body, json_t **out,
                long *status)
{
    gp_kube_resp r;
    gp_err err;
    if (out)
        *out = NULL;
    if (kube_request(x->gp, method, path, "application/json", body, 10, NULL, &r, &err) < 0) {
        kube_resp_free(&r);
        return -1;
    }
    *status = r.status;
    if (out)
        *out = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
    kube_resp_free(&r);
    return 0;
}

static bool wait_ready(live_env *x, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (gp_mono_s() < end) {
        long st = 0;
        if (http(x, "GET", "/readyz", NULL, NULL, &st) == 0 && st == 200)
            return true;
        usleep(20000);
    }
    return false;
}

/* Starts gpupack and reads its port; does not wait for /readyz. */
static void gp_spawn(live_env *x)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set");
    unlink(x->log);   /* so that the port read below is this run's */
    const char *argv[24] = {bin, "serve", "--kubeconfig", x->kubeconfig, "--listen",
                            "127.0.0.1:0", "--assume-ttl", "3"};
    int n = 8;
    for (int i = 0; i < 8 && x->extra[i]; i++)
        argv[n++] = x->extra[i];
    int fd = open(x->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", x->log, strerror(errno));
    x->pid = tu_spawn(argv, fd, fd);
    close(fd);
    x->port = read_port(x->log, 10);
    if (x->port <= 0) {
        tu_describe_process(x->pid);
        kill(x->pid, SIGKILL);
        waitpid(x->pid, NULL, 0);
    }
    ck_assert_msg(x->port > 0, "gpupack did not report its port (log %s; its threads above)",
                  x->log);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", x->port);
    gp_kube_auth a = {.server = url};
    gp_err err;
    x->gp = kube_new(&a, &err);
    ck_assert_ptr_nonnull(x->gp);
}

static void gp_start(live_env *x)
{
    gp_spawn(x);
    ck_assert_msg(x->no_wait || wait_ready(x, 10), "gpupack never became ready");
}

/* Makes the open pod and node watches go silent (half-open). gpupack is
 * ready once its LISTs are in, and its watches open just after: the stall
 * waits for them, or a watch opened after it would stream on. */
static void stall_watches(live_env *x)
{
    ck_assert_int_ge(fakeapi_wait_watches(x->f, "pods", 1, 10), 1);
    ck_assert_int_ge(fakeapi_wait_watches(x->f, "nodes", 1, 10), 1);
    fakeapi_stall_watches(x->f);
}

static void gp_stop(live_env *x)
{
    if (x->pid <= 0)
        return;
    kill(x->pid, SIGTERM);
    int status = 0;
    double end = gp_mono_s() + 10;
    pid_t w;
    while ((w = waitpid(x->pid, &status, WNOHANG)) == 0 && gp_mono_s() < end)
        usleep(10000);
    if (w == 0) {
        kill(x->pid, SIGKILL);
        waitpid(x->pid, &status, 0);
        ck_abort_msg("gpupack did not stop on SIGTERM");
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "gpupack exit status %d", status);
    x->pid = 0;
    kube_free(x->gp);
    x->gp = NULL;
}

static void env_setup(live_env *x)
{
    memset(x, 0, sizeof *x);
    gp_log_set_level(GP_LOG_ERROR);
    x->f = fakeapi_start();
    ck_assert_ptr_nonnull(x->f);
    fakeapi_set_token(x->f, TOKEN);
    x->dir = livetest_tmpdir();
    x->kubeconfig = xasprintf("%s/kubeconfig", x->dir);
    x->log = xasprintf("%s/gpupack.log", x->dir);
    char *kc = xasprintf("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                         "clusters:\n- name: fake\n  cluster: {server: \"%s\"}\n"
                         "contexts:\n- name: t\n  context: {cluster: fake, user: u}\n"
                         "users:\n- name: u\n  user: {token: %s}\n",
                         fakeapi_url(x->f), TOKEN);
    ck_assert(livetest_write(x->kubeconfig, kc, strlen(kc)) == 0);
    free(kc);
    fakeapi_put_node(x->f, node("node-a", 2, 16384));
    fakeapi_put_node(x->f, node("node-b", 1, 16384));
}

static void env_teardown(live_env *x)
{
    gp_stop(x);
    fakeapi_stop(x->f);
    if (getenv("GPUPACK_KEEP_LOGS") == NULL)
        livetest_rmtree(x->dir);
    free(x->dir);
    free(x->kubeconfig);
    free(x->log);
}

/* ------------------------------------------------------------ helpers --- */

/* The Pod as kube-scheduler sends it (no kind/apiVersion). */
static json_t *sched_pod(live_env *x, const char *name)
{
    json_t *p = fakeapi_get_pod(x->f, "default", name);
    ck_assert_ptr_nonnull(p);
    json_object_del(p, "kind");
    json_object_del(p, "apiVersion");
    return p;
}

static const char *uid_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
}

static long bind(live_env *x, const char *name, const char *uid, const char *node_name, json_t **out)
{
    json_t *args = json_pack("{s:s,s:s,s:s,s:s}", "PodName", name, "PodNamespace", "default",
                             "PodUID", uid, "Node", node_name);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    long st = 0;
    int rc = http(x, "POST", "/bind", body, out, &st);
    free(body);
    return rc < 0 ? -1 : st;
}

/* /inspect with each GPU's pods sorted by uid (observation order is not part of the map). */
static json_t *inspect(live_env *x)
{
    json_t *j = NULL;
    long st = 0;
    ck_assert(http(x, "GET", "/inspect", NULL, &j, &st) == 0);
    ck_assert_int_eq(st, 200);
    size_t i, g;
    json_t *n, *gpu;
    json_array_foreach(json_object_get(j, "nodes"), i, n) {
        json_array_foreach(json_object_get(n, "gpus"), g, gpu) {
            json_t *pods = json_object_get(gpu, "pods");
            size_t np = json_array_size(pods);
            for (size_t a = 1; a < np; a++)
                for (size_t b = a; b > 0; b--) {
                    const char *u1 = json_string_value(json_object_get(json_array_get(pods, b - 1), "uid"));
                    const char *u2 = json_string_value(json_object_get(json_array_get(pods, b), "uid"));
                    if (strcmp(u1, u2) <= 0)
                        break;
                    json_t *t = json_incref(json_array_get(pods, b));
                    json_array_set(pods, b, json_array_get(pods, b - 1));
                    json_array_set_new(pods, b - 1, t);
                }
        }
    }
    return j;
}

/* Counts pods in /inspect in a state ("bound"/"assumed"; NULL = any). */
static int inspect_pods(const json_t *j, const char *state)
{
    int c = 0;
    size_t i, g, p;
    json_t *n, *gpu, *pod;
    json_array_foreach(json_object_get(j, "nodes"), i, n)
        json_array_foreach(json_object_get(n, "gpus"), g, gpu)
            json_array_foreach(json_object_get(gpu, "pods"), p, pod)
                if (!state || strcmp(json_string_value(json_object_get(pod, "state")), state) == 0)
                    c++;
    return c;
}

static bool wait_pods(live_env *x, const char *state, int n, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (gp_mono_s() < end) {
        json_t *j = inspect(x);
        int c = inspect_pods(j, state), all = inspect_pods(j, NULL);
        json_decref(j);
        if (c == n && all == n)
            return true;
        usleep(20000);
    }
    return false;
}

/* ---------------------------------------------------------------- tests --- */

START_TEST(schedule_bind_restart_same_map)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("p1", 8192));
    fakeapi_put_pod(x.f, gpu_pod("p2", 12288));
    gp_start(&x);
    ck_assert_int_ge(fakeapi_count(x.f, "GET", "/api/v1/nodes?limit="), 1);
    ck_assert_int_ge(fakeapi_count(x.f, "GET", "/api/v1/pods?limit="), 1);

    /* filter -> prioritize -> bind, as kube-scheduler drives it */
    json_t *pod = sched_pod(&x, "p1");
    json_t *args = json_pack("{s:O,s:n,s:[s,s]}", "Pod", pod, "Nodes", "NodeNames", "node-a", "node-b");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out;
    long st;
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "NodeNames")), 2);
    json_decref(out);
    ck_assert(http(&x, "POST", "/prioritize", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    ck_assert_int_eq(json_array_size(out), 2);
    json_decref(out);
    free(body);
    json_decref(args);
    size_t before = fakeapi_request_count(x.f);
    ck_assert_int_eq(bind(&x, "p1", uid_of(pod), "node-a", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);

    /* exactly one call: the Binding, carrying the annotations and the uid */
    size_t n = fakeapi_request_count(x.f);
    int patches = 0, bindings = 0;
    for (size_t i = before; i < n; i++) {
        gp_fake_req r;
        ck_assert(fakeapi_request(x.f, i, &r) == 0);
        if (strstr(r.url, "/events")) {
            /* the GPUsAssigned Event, posted asynchronously (test_events) */
        } else if (strcmp(r.method, "PATCH") == 0) {
            patches++;
        } else if (strcmp(r.method, "POST") == 0) {
            bindings++;
            ck_assert_str_eq(r.url, "/api/v1/namespaces/default/pods/p1/binding");
            ck_assert_str_eq(r.content_type, "application/json");
            ck_assert_str_eq(r.auth, "Bearer " TOKEN);
            json_t *b = json_loads(r.body, 0, NULL);
            ck_assert_str_eq(json_string_value(json_object_get(b, "kind")), "Binding");
            ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "target"), "name")), "node-a");
            ck_assert_str_eq(json_string_value(json_object_get(b, "apiVersion")), "v1");
            ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "target"), "kind")), "Node");
            json_t *md = json_object_get(b, "metadata");
            ck_assert_str_eq(json_string_value(json_object_get(md, "name")), "p1");
            ck_assert_str_eq(json_string_value(json_object_get(md, "namespace")), "default");
            ck_assert_str_eq(json_string_value(json_object_get(md, "uid")), uid_of(pod));
            /* the pod's resourceVersion as gpupack saw it: the Binding's precondition */
            ck_assert_str_eq(json_string_value(json_object_get(md, "resourceVersion")),
                             json_string_value(json_object_get(json_object_get(pod, "metadata"),
                                                               "resourceVersion")));
            json_t *ann = json_object_get(md, "annotations");
            ck_assert_ptr_nonnull(json_object_get(ann, "gpupack.io/assignment"));
            ck_assert_ptr_nonnull(json_object_get(ann, "gpupack.io/visible-devices"));
            ck_assert_ptr_nonnull(json_object_get(ann, "gpupack.io/assume-time"));
            json_decref(b);
            ck_assert_int_eq(r.status, 201);
        }
        fakeapi_req_clear(&r);
    }
    ck_assert_int_eq(patches, 0);
    ck_assert_int_eq(bindings, 1);
    /* the annotations landed on the pod with the Binding */
    json_t *bound = fakeapi_get_pod(x.f, "default", "p1");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(bound, "metadata"), "annotations"),
                                          "gpupack.io/assignment"));
    json_decref(bound);
    json_decref(pod);

    /* bind without a preceding filter: the watch noted the pending pod */
    json_t *p2 = sched_pod(&x, "p2");
    ck_assert_int_eq(bind(&x, "p2", uid_of(p2), "node-a", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    json_decref(p2);
    ck_assert_msg(wait_pods(&x, "bound", 2, 10), "the watch never confirmed both binds");
    json_t *map1 = inspect(&x);

    /* a restarted gpupack rebuilds exactly the same map from the annotations */
    gp_stop(&x);
    gp_start(&x);
    ck_assert(wait_pods(&x, "bound", 2, 10));
    json_t *map2 = inspect(&x);
    char *s1 = json_dumps(map1, JSON_SORT_KEYS), *s2 = json_dumps(map2, JSON_SORT_KEYS);
    ck_assert_msg(json_equal(map1, map2), "before: %s\nafter: %s", s1, s2);
    free(s1);
    free(s2);
    json_decref(map1);
    json_decref(map2);
    env_teardown(&x);
}
END_TEST

START_TEST(bind_errors_roll_back)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("q1", 4096));
    gp_start(&x);
    json_t *pod = sched_pod(&x, "q1");
    json_t *out;
    /* the Binding is refused (403): an error naming the call, nothing held */
    fakeapi_fail(x.f, "POST", "/pods/q1/binding", 403, 1);
    ck_assert_int_eq(bind(&x, "q1", uid_of(pod), "node-b", &out), 200);
    const char *e = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(e && strstr(e, "POST binding of pod default/q1 to node node-b: HTTP 403"), "%s", e ? e : "(null)");
    json_decref(out);
    ck_assert(wait_pods(&x, NULL, 0, 5));
    /* the Binding conflicts and the pod is not bound there: refused, rolled back */
    fakeapi_fail(x.f, "POST", "/pods/q1/binding", 409, 1);
    ck_assert_int_eq(bind(&x, "q1", uid_of(pod), "node-b", &out), 200);
    e = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(e && strstr(e, "POST binding of pod default/q1 to node node-b: HTTP 409"), "%s", e ? e : "(null)");
    json_decref(out);
    ck_assert(wait_pods(&x, NULL, 0, 5));
    /* now it works; a retried bind to the same node (409 from the API) is success */
    ck_assert_int_eq(bind(&x, "q1", uid_of(pod), "node-b", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert(wait_pods(&x, "bound", 1, 10));
    /* the watch showed it bound: its request is no longer kept, and the retry
     * below is answered from the store */
    gp_kube_resp mr;
    gp_err merr;
    ck_assert(kube_request(x.gp, "GET", "/metrics", NULL, NULL, 10, NULL, &mr, &merr) == 0);
    ck_assert_msg(strstr(mr.body.data, "\ngpupack_pods_remembered 0\n"), "%s",
                  strstr(mr.body.data, "gpupack_pods_remembered"));
    kube_resp_free(&mr);
    ck_assert_int_eq(bind(&x, "q1", uid_of(pod), "node-b", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    json_decref(pod);
    ck_assert(wait_pods(&x, "bound", 1, 5));
    env_teardown(&x);
}
END_TEST

/* A pod without GPUs goes through gpupack too (the shipped scheduler
 * configuration has no managedResources): it binds with a plain Binding, no
 * PATCH, and its CPU counts on the node once the watch shows it bound. */
START_TEST(cpu_only_pod_plain_binding)
{
    live_env x;
    env_setup(&x);
    json_t *cpu = json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:s,s:{s:{s:s}}}],s:s},s:{s:s}}", "metadata",
                            "name", "c1", "namespace", "default", "spec", "containers", "name",
                            "main", "image", "registry.invalid/x", "resources", "requests", "cpu",
                            "2", "schedulerName", "default-scheduler", "status", "phase", "Pending");
    fakeapi_put_pod(x.f, cpu);
    gp_start(&x);
    json_t *pod = sched_pod(&x, "c1");
    json_t *args = json_pack("{s:O,s:[s,s]}", "Pod", pod, "NodeNames", "node-a", "node-b");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out;
    long st = 0;
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "NodeNames")), 2);
    json_decref(out);
    ck_assert_int_eq(bind(&x, "c1", uid_of(pod), "node-a", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", "/pods/c1"), 0);
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/pods/c1/binding"), 1);
    json_t *bound = fakeapi_get_pod(x.f, "default", "c1");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(bound, "spec"), "nodeName")),
                     "node-a");
    json_decref(bound);
    free(body);
    json_decref(args);
    json_decref(pod);
    env_teardown(&x);
}
END_TEST

START_TEST(watch_cut_converges)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("w1", 4096));
    gp_start(&x);
    json_t *pod = sched_pod(&x, "w1"), *out;
    ck_assert_int_eq(bind(&x, "w1", uid_of(pod), "node-a", &out), 200);
    json_decref(out);
    json_decref(pod);
    ck_assert(wait_pods(&x, "bound", 1, 10));
    /* the API server goes away; the cluster changes meanwhile; its cache moves on */
    fakeapi_fail(x.f, "GET", "watch=1", 503, 4);
    fakeapi_cut_watches(x.f, true);
    fakeapi_delete_pod(x.f, "default", "w1");
    fakeapi_put_node(x.f, node("node-c", 4, 24576));
    fakeapi_delete_node(x.f, "node-b");
    json_t *bound = gpu_pod("w2", 2048);
    json_t *md = json_object_get(bound, "metadata");
    json_object_set_new(md, "annotations",
                        json_pack("{s:s}", "gpupack.io/assignment",
                                  "{\"node\":\"node-c\",\"containers\":[{\"name\":\"main\",\"gpus\":"
                                  "[{\"index\":3,\"memMiB\":2048,\"core\":0}]}]}"));
    json_object_set_new(json_object_get(bound, "spec"), "nodeName", json_string("node-c"));
    json_object_set_new(json_object_get(bound, "status"), "phase", json_string("Running"));
    fakeapi_put_pod(x.f, bound);
    fakeapi_expire(x.f);
    /* converged: node-b gone, node-c with w2 on GPU 3, w1 released */
    double end = gp_mono_s() + 10;
    bool ok = false;
    while (!ok && gp_mono_s() < end) {
        json_t *j = inspect(&x);
        const json_t *nodes = json_object_get(j, "nodes");   /* sorted by name */
        ok = json_array_size(nodes) == 2 &&
             strcmp(json_string_value(json_object_get(json_array_get(nodes, 0), "name")), "node-a") == 0 &&
             strcmp(json_string_value(json_object_get(json_array_get(nodes, 1), "name")), "node-c") == 0;
        if (ok) {
            const json_t *c3 = json_array_get(json_object_get(json_array_get(nodes, 1), "gpus"), 3);
            ok = inspect_pods(j, "bound") == 1 && inspect_pods(j, NULL) == 1 &&
                 json_integer_value(json_object_get(json_object_get(c3, "memoryMiB"), "used")) == 2048;
        }
        json_decref(j);
        if (!ok)
            usleep(20000);
    }
    ck_assert_msg(ok, "gpupack did not converge after the watch was cut");
    long st;
    ck_assert(http(&x, "GET", "/readyz", NULL, NULL, &st) == 0);
    ck_assert_int_eq(st, 200);
    env_teardown(&x);
}
END_TEST

typedef struct racer {
    live_env *x;
    int first, n;
} racer;

static void *bind_some(void *arg)
{
    racer *r = arg;
    for (int i = r->first; i < r->first + r->n; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        json_t *p = fakeapi_get_pod(r->x->f, "default", name);
        if (!p)
            continue;
        json_t *out = NULL;
        (void)bind(r->x, name, uid_of(p), (i % 3) ? "node-a" : "node-b", &out);
        json_decref(out);
        json_decref(p);
    }
    return NULL;
}

static void *delete_some(void *arg)
{
    racer *r = arg;
    for (int i = r->first; i < r->first + r->n; i += 2) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        usleep(3000);
        (void)fakeapi_delete_pod(r->x->f, "default", name);
    }
    return NULL;
}

START_TEST(binds_race_deletions)
{
    live_env x;
    env_setup(&x);
    enum { NPODS = 16 };
    for (int i = 0; i < NPODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        fakeapi_put_pod(x.f, gpu_pod(name, 6144));   /* 2 fit per 16 GiB GPU: 6 places for 16 pods */
    }
    gp_start(&x);
    /* slow API answers widen the windows between assume, PATCH and Binding */
    fakeapi_delay(x.f, "PATCH", "/pods/r", 5, 1000);
    fakeapi_delay(x.f, "POST", "/binding", 5, 1000);
    pthread_t t[4];
    racer rs[4] = {{&x, 0, 8}, {&x, 8, 8}, {&x, 0, 16}, {&x, 1, 15}};
    pthread_create(&t[0], NULL, bind_some, &rs[0]);
    pthread_create(&t[1], NULL, bind_some, &rs[1]);
    pthread_create(&t[2], NULL, delete_some, &rs[2]);
    pthread_create(&t[3], NULL, delete_some, &rs[3]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    /* converged: what gpupack holds per GPU == what the API server's bound
     * pods' annotations say, never above capacity; nothing assumed left */
    double end = gp_mono_s() + 10;
    bool ok = false;
    char why[512] = "";
    while (!ok && gp_mono_s() < end) {
        json_t *want = json_object();   /* "node/index" -> MiB */
        for (int i = 0; i < NPODS; i++) {
            char name[32];
            snprintf(name, sizeof name, "r%d", i);
            json_t *p = fakeapi_get_pod(x.f, "default", name);
            const char *nn = p ? json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")) : NULL;
            const char *as = p ? json_string_value(json_object_get(json_object_get(json_object_get(p, "metadata"), "annotations"), "gpupack.io/assignment")) : NULL;
            if (nn && as) {
                json_t *a = json_loads(as, 0, NULL);
                json_t *g = json_array_get(json_object_get(json_array_get(json_object_get(a, "containers"), 0), "gpus"), 0);
                char key[64];
                snprintf(key, sizeof key, "%s/%lld", nn, (long long)json_integer_value(json_object_get(g, "index")));
                json_int_t cur = json_integer_value(json_object_get(want, key));
                json_object_set_new(want, key, json_integer(cur + json_integer_value(json_object_get(g, "memMiB"))));
                json_decref(a);
            }
            json_decref(p);
        }
        json_t *j = inspect(&x);
        ok = inspect_pods(j, "assumed") == 0;
        size_t i, g;
        json_t *n, *gpu;
        json_array_foreach(json_object_get(j, "nodes"), i, n) {
            json_array_foreach(json_object_get(n, "gpus"), g, gpu) {
                char key[64];
                snprintf(key, sizeof key, "%s/%lld", json_string_value(json_object_get(n, "name")),
                         (long long)json_integer_value(json_object_get(gpu, "index")));
                json_t *mem = json_object_get(gpu, "memoryMiB");
                json_int_t used = json_integer_value(json_object_get(mem, "used"));
                json_int_t total = json_integer_value(json_object_get(mem, "total"));
                ck_assert_msg(used <= total, "%s over-committed: %lld > %lld", key, (long long)used, (long long)total);
                if (used != json_integer_value(json_object_get(want, key))) {
                    ok = false;
                    snprintf(why, sizeof why, "%s holds %lld MiB, the API server says %lld", key,
                             (long long)used, (long long)json_integer_value(json_object_get(want, key)));
                }
            }
        }
        json_decref(j);
        json_decref(want);
        if (!ok)
            usleep(50000);
    }
    ck_assert_msg(ok, "no convergence: %s", why);
    env_teardown(&x);
}
END_TEST

/* A pod created with spec.nodeName (no scheduler, no bind, no annotations) that
 * asks gpupack resources holds GPUs on its node in gpupack's map, is counted once
 * however often it changes, keeps filter from handing its room out, and is
 * released when deleted. */
START_TEST(bypassed_pod_accounted)
{
    live_env x;
    env_setup(&x);
    json_t *byp = gpu_pod("byp", 12288);
    json_object_set_new(json_object_get(byp, "spec"), "nodeName", json_string("node-b"));
    fakeapi_put_pod(x.f, byp);
    gp_start(&x);
    ck_assert_msg(wait_pods(&x, "bound", 1, 10), "the bypassed pod is not in the map");
    json_t *j = inspect(&x);
    json_t *gpu = json_array_get(json_object_get(json_array_get(json_object_get(j, "nodes"), 1), "gpus"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 1), "name")),
                     "node-b");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(gpu, "memoryMiB"), "used")), 12288);
    json_decref(j);
    /* updates neither move nor count it again */
    ck_assert_int_eq(fakeapi_set_pod_phase(x.f, "default", "byp", "Running"), 0);
    fakeapi_put_pod(x.f, gpu_pod("p1", 8192));
    ck_assert_msg(wait_pods(&x, NULL, 1, 5), "map changed");
    gp_kube_resp r;
    gp_err err;
    ck_assert(kube_request(x.gp, "GET", "/metrics", NULL, NULL, 10, NULL, &r, &err) == 0);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\ngpupack_pods_bypassed_total 1\n"));
    kube_resp_free(&r);
    /* node-b's 4 GiB left do not take 8 GiB */
    json_t *pod = sched_pod(&x, "p1");
    json_t *args = json_pack("{s:O,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "node-b");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out;
    long st;
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "NodeNames")), 0);
    json_decref(out);
    free(body);
    json_decref(args);
    json_decref(pod);
    ck_assert_int_eq(fakeapi_delete_pod(x.f, "default", "byp"), 0);
    ck_assert_msg(wait_pods(&x, NULL, 0, 5), "the bypassed pod was not released");
    env_teardown(&x);
}
END_TEST

/* ------------------------------------------------------ bind faults --- */

/* bind's Error ("" on success), owned. */
static char *bind_error(live_env *x, const char *name, const char *node_name)
{
    json_t *pod = sched_pod(x, name), *out = NULL;
    long st = bind(x, name, uid_of(pod), node_name, &out);
    ck_assert_int_eq(st, 200);
    const char *e = json_string_value(json_object_get(out, "Error"));
    ck_assert_ptr_nonnull(e);
    char *r = xstrdup(e);
    json_decref(out);
    json_decref(pod);
    return r;
}

static json_int_t gpu_mem_used(live_env *x, const char *node_name, int index)
{
    json_t *j = inspect(x);
    json_int_t used = -1;
    size_t i, g;
    json_t *n, *gpu;
    json_array_foreach(json_object_get(j, "nodes"), i, n)
        if (strcmp(json_string_value(json_object_get(n, "name")), node_name) == 0)
            json_array_foreach(json_object_get(n, "gpus"), g, gpu)
                if (json_integer_value(json_object_get(gpu, "index")) == index)
                    used = json_integer_value(json_object_get(json_object_get(gpu, "memoryMiB"), "used"));
    json_decref(j);
    return used;
}

/* A GET answered as text (status, body owned). */
static char *http_text(live_env *x, const char *path, long *status)
{
    gp_kube_resp r;
    gp_err err;
    char *body = NULL;
    *status = 0;
    if (kube_request(x->gp, "GET", path, NULL, NULL, 10, NULL, &r, &err) == 0) {
        *status = r.status;
        body = xstrdup(r.body.data ? r.body.data : "");
    }
    kube_resp_free(&r);
    return body;
}

/* The Binding lands but its answer is lost (500): gpupack must keep the GPUs
 * (a second pod is refused), and the late "bound" event must not count twice. */
START_TEST(unknown_outcome_keeps_gpus)
{
    live_env x;
    env_setup(&x);
    x.extra[0] = "--watch-stall";
    x.extra[1] = "3";
    fakeapi_put_pod(x.f, gpu_pod("k1", 10000));
    fakeapi_put_pod(x.f, gpu_pod("k2", 10000));
    gp_start(&x);
    /* the watch must not tell gpupack the truth before k2 comes */
    stall_watches(&x);
    fakeapi_fail_after(x.f, "POST", "/pods/k1/binding", 500, 1);
    char *e = bind_error(&x, "k1", "node-b");
    ck_assert_msg(strstr(e, "HTTP 500"), "%s", e);
    free(e);
    e = bind_error(&x, "k2", "node-b");   /* one 16,384 MiB GPU: no room for both */
    ck_assert_msg(strstr(e, "no longer fits"), "k2 bound over k1's unsettled GPU: '%s'", e);
    free(e);
    /* a new watch brings k1's bound event: counted once */
    ck_assert_msg(wait_pods(&x, "bound", 1, 20), "k1 never confirmed");
    ck_assert_int_eq(gpu_mem_used(&x, "node-b", 0), 10000);
    env_teardown(&x);
}
END_TEST

/* The pod watch goes silent (half-open) while a bind is accepted: the TTL
 * (3 s here) must not release a pod the API server has bound. */
START_TEST(accepted_bind_never_expires)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("s1", 10000));
    fakeapi_put_pod(x.f, gpu_pod("s2", 10000));
    gp_start(&x);
    stall_watches(&x);
    char *e = bind_error(&x, "s1", "node-b");
    ck_assert_str_eq(e, "");
    free(e);
    usleep(4500 * 1000);   /* past --assume-ttl 3: the old expiry would have released s1 */
    ck_assert_int_eq(gpu_mem_used(&x, "node-b", 0), 10000);
    e = bind_error(&x, "s2", "node-b");
    ck_assert_msg(strstr(e, "no longer fits"), "s2 bound over s1's GPU: '%s'", e);
    free(e);
    env_teardown(&x);
}
END_TEST

/* A half-open watch is restarted after --watch-stall, and /readyz says the
 * data may be stale while the new watch cannot be opened. */
START_TEST(stalled_watch_is_restarted)
{
    live_env x;
    env_setup(&x);
    x.extra[0] = "--watch-stall";
    x.extra[1] = "2";
    gp_start(&x);
    int watches = fakeapi_count(x.f, "GET", "/api/v1/pods?watch=1");
    fakeapi_fail(x.f, "GET", "/api/v1/pods?watch=1", 503, 3);
    stall_watches(&x);
    bool said_stale = false;
    double end = gp_mono_s() + 20;
    while (!said_stale && gp_mono_s() < end) {
        long st;
        char *b = http_text(&x, "/readyz", &st);
        said_stale = b && st == 200 && strstr(b, "stale") && strstr(b, "pods");
        free(b);
        usleep(20000);
    }
    ck_assert_msg(said_stale, "/readyz never said the pod data may be stale");
    /* a new watch streams again; the change made meanwhile arrives */
    fakeapi_put_pod(x.f, gpu_pod("after", 1000));
    ck_assert_int_ge(fakeapi_wait_count(x.f, "GET", "/api/v1/pods?watch=1", watches + 4, 20), watches + 4);
    json_t *pod = NULL;
    end = gp_mono_s() + 10;
    bool fresh = false;
    while (!fresh && gp_mono_s() < end) {
        long st;
        char *b = http_text(&x, "/readyz", &st);
        fresh = b && st == 200 && strcmp(b, "ok\n") == 0;
        free(b);
        usleep(20000);
    }
    ck_assert_msg(fresh, "/readyz did not recover");
    pod = sched_pod(&x, "after");
    json_t *out;
    ck_assert_int_eq(bind(&x, "after", uid_of(pod), "node-a", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    json_decref(pod);
    env_teardown(&x);
}
END_TEST

/* kube-scheduler binds a pod that was deleted and re-created under the same
 * name: the Binding's uid precondition refuses it, and nothing is written
 * on the new pod. */
START_TEST(wrong_uid_writes_nothing)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("w1", 4096));
    gp_start(&x);
    json_t *old = sched_pod(&x, "w1");
    ck_assert_int_eq(fakeapi_delete_pod(x.f, "default", "w1"), 0);
    fakeapi_put_pod(x.f, gpu_pod("w1", 4096));   /* a new uid */
    json_t *out;
    ck_assert_int_eq(bind(&x, "w1", uid_of(old), "node-a", &out), 200);
    json_t *now = fakeapi_get_pod(x.f, "default", "w1");
    json_t *ann = json_object_get(json_object_get(now, "metadata"), "annotations");
    ck_assert_msg(json_object_get(ann, "gpupack.io/assignment") == NULL,
                  "the new pod got another pod's GPU assignment");
    const char *e = json_string_value(json_object_get(out, "Error"));
    /* refused by the API server (409), or not even posted when the watch's
     * DELETED reached gpupack first (the old uid's hold was released) */
    ck_assert_msg(e && strstr(e, "refused") && (strstr(e, "409") || strstr(e, "not posted")), "%s",
                  e ? e : "(null)");
    json_decref(out);
    json_decref(old);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 0);
    json_decref(now);
    ck_assert(wait_pods(&x, NULL, 0, 5));
    env_teardown(&x);
}
END_TEST

/* A restarted gpupack has listed the nodes but not yet the pods: a filter
 * sees every GPU free, and a bind placed there could hand out another pod's
 * GPUs. It is refused before any API call; kube-scheduler retries it. */
START_TEST(bind_refused_before_pods_listed)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("early", 4096));
    fakeapi_delay(x.f, "GET", "/api/v1/pods?", 4000, 1);   /* the first pod LIST is slow */
    x.no_wait = true;
    gp_start(&x);
    json_t *pod = sched_pod(&x, "early");
    json_t *args = json_pack("{s:O,s:[s]}", "Pod", pod, "NodeNames", "node-a");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out = NULL;
    long st = 0;
    for (int i = 0; i < 200 && fakeapi_count(x.f, "GET", "/api/v1/nodes?") == 0; i++)
        usleep(10000);
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    json_decref(out);
    ck_assert_int_eq(bind(&x, "early", uid_of(pod), "node-a", &out), 200);
    const char *e = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(e && strstr(e, "not ready"), "%s", e ? e : "(null)");
    json_decref(out);
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/binding"), 0);
    /* once the map is complete the same bind goes through */
    ck_assert(wait_ready(&x, 10));
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    json_decref(out);
    ck_assert_int_eq(bind(&x, "early", uid_of(pod), "node-a", &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    free(body);
    json_decref(args);
    json_decref(pod);
    env_teardown(&x);
}
END_TEST

/* The pod changed after gpupack last saw it (a label, with the watch
 * silent): the Binding's resourceVersion precondition fails, gpupack checks
 * that it is the same pod, still unbound, and binds it as it is now. */
START_TEST(changed_pod_binds_on_second_try)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("c1", 4096));
    gp_start(&x);
    stall_watches(&x);
    json_t *p = fakeapi_get_pod(x.f, "default", "c1");
    json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), "touched",
                        json_string("yes"));
    fakeapi_put_pod(x.f, p);   /* same uid, new resourceVersion */
    char *e = bind_error(&x, "c1", "node-a");
    ck_assert_str_eq(e, "");
    free(e);
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/pods/c1/binding"), 2);
    json_t *now = fakeapi_get_pod(x.f, "default", "c1");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(now, "metadata"), "annotations"),
                                          "gpupack.io/assignment"));
    json_decref(now);
    env_teardown(&x);
}
END_TEST

typedef struct slow_bind {
    live_env *x;
    const char *name;
    char err[256];
} slow_bind;

static void *bind_thread(void *arg)
{
    slow_bind *b = arg;
    char *e = bind_error(b->x, b->name, "node-a");
    gp_strlcpy(b->err, e, sizeof b->err);
    free(e);
    return NULL;
}

/* More binds waiting on the API server than gpupack has HTTP threads:
 * /healthz and filter still answer while every Binding is pending. */
START_TEST(slow_binds_leave_verbs_free)
{
    enum { NB = 4 };
    live_env x;
    env_setup(&x);
    x.extra[0] = "--threads";
    x.extra[1] = "2";
    static const char *const names[NB] = {"h1", "h2", "h3", "h4"};
    for (int i = 0; i < NB; i++)
        fakeapi_put_pod(x.f, gpu_pod(names[i], 1000));
    fakeapi_put_pod(x.f, gpu_pod("probe", 1000));
    gp_start(&x);
    fakeapi_delay(x.f, "POST", "/binding", 3000, NB);
    pthread_t th[NB];
    slow_bind sb[NB];
    for (int i = 0; i < NB; i++) {
        sb[i] = (slow_bind){&x, names[i], ""};
        pthread_create(&th[i], NULL, bind_thread, &sb[i]);
    }
    double end = gp_mono_s() + 10;
    while (fakeapi_delaying(x.f) < NB && gp_mono_s() < end)
        usleep(5000);
    ck_assert_msg(fakeapi_delaying(x.f) == NB, "only %d of %d Bindings reached the API server at once",
                  fakeapi_delaying(x.f), NB);
    long st;
    char *b = http_text(&x, "/healthz", &st);
    ck_assert_int_eq(st, 200);
    free(b);
    json_t *pod = sched_pod(&x, "probe");
    json_t *args = json_pack("{s:O,s:n,s:[s]}", "Pod", pod, "Nodes", "NodeNames", "node-a");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out;
    ck_assert(http(&x, "POST", "/filter", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    json_decref(out);
    free(body);
    json_decref(args);
    json_decref(pod);
    /* the order is the point: both answered while no Binding had been answered */
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/binding"), 0);
    for (int i = 0; i < NB; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(sb[i].err[0] == '\0', "%s: %s", names[i], sb[i].err);
    }
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/binding"), NB);
    env_teardown(&x);
}
END_TEST

/* ------------------------------------------------ the verbs wait (21) --- */

/* A pod bound by a previous gpupack to GPU `gpu` of node_name, `mem` MiB. */
static json_t *bound_pod(const char *name, const char *node_name, int gpu, int mem)
{
    json_t *p = gpu_pod(name, mem);
    char *a = xasprintf("{\"node\":\"%s\",\"containers\":[{\"name\":\"main\",\"gpus\":"
                        "[{\"index\":%d,\"uuid\":\"GPU-%s-%d\",\"memMiB\":%d,\"core\":0}]}]}",
                        node_name, gpu, node_name, gpu, mem);
    json_object_set_new(json_object_get(p, "metadata"), "annotations",
                        json_pack("{s:s}", "gpupack.io/assignment", a));
    free(a);
    json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node_name));
    json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    return p;
}

/* filter's Error for pod `name` over node-a and node-b (""), and its NodeNames count. */
static char *filter_error(live_env *x, const char *name, size_t *passed)
{
    json_t *pod = sched_pod(x, name);
    json_t *args = json_pack("{s:O,s:n,s:[s,s]}", "Pod", pod, "Nodes", "NodeNames", "node-a", "node-b");
    char *body = json_dumps(args, JSON_COMPACT);
    json_t *out = NULL;
    long st = 0;
    ck_assert(http(x, "POST", "/filter", body, &out, &st) == 0);
    ck_assert_int_eq(st, 200);
    const char *e = json_string_value(json_object_get(out, "Error"));
    *passed = json_array_size(json_object_get(out, "NodeNames"));
    char *r = xstrdup(e ? e : "");
    json_decref(out);
    free(body);
    json_decref(args);
    json_decref(pod);
    return r;
}

/* Until the pods are listed, the verbs decide nothing. Before: the restarted
 * gpupack had its nodes and no pods, filter passed node-a and bind put the
 * new pod on GPU 0, which the listed pod `old` holds (over-committed). */
START_TEST(verbs_wait_for_the_first_pod_list)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, bound_pod("old", "node-a", 0, 16384));
    fakeapi_put_pod(x.f, gpu_pod("new", 16384));
    fakeapi_delay(x.f, "GET", "/api/v1/pods?limit", 4000, 1);
    gp_spawn(&x);
    /* the pods LIST is held: the nodes are applied (pods wait for them) */
    double end = gp_mono_s() + 10;
    while (fakeapi_delaying(x.f) < 1 && gp_mono_s() < end)
        usleep(10000);
    ck_assert_int_eq(fakeapi_delaying(x.f), 1);
    long st = 0;
    size_t passed;
    char *e = filter_error(&x, "new", &passed);
    ck_assert_msg(strstr(e, "not the API server's yet"), "filter before the pod LIST: \"%s\", %zu nodes passed", e,
                  passed);
    ck_assert_uint_eq(passed, 0);
    free(e);
    ck_assert(http(&x, "POST", "/prioritize", "{\"Pod\":null,\"NodeNames\":[\"node-a\"]}", NULL, &st) == 0);
    ck_assert_int_eq(st, 503);
    e = bind_error(&x, "new", "node-a");
    ck_assert_msg(strstr(e, "not the API server's yet"), "bind before the pod LIST: \"%s\"", e);
    free(e);
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/binding"), 0);
    char *text = http_text(&x, "/readyz", &st);
    ck_assert_int_eq(st, 503);
    ck_assert_msg(strstr(text, "pods: first LIST not applied yet"), "%s", text);
    free(text);
    /* once listed, the truth decides: GPU 0 is old's */
    ck_assert(wait_ready(&x, 10));
    e = filter_error(&x, "new", &passed);
    ck_assert_str_eq(e, "");
    free(e);
    e = bind_error(&x, "new", "node-a");
    ck_assert_str_eq(e, "");
    free(e);
    ck_assert_int_eq(gpu_mem_used(&x, "node-a", 0), 16384);
    ck_assert_int_eq(gpu_mem_used(&x, "node-a", 1), 16384);
    text = http_text(&x, "/metrics", &st);
    ck_assert_msg(strstr(text, "gpupack_verbs_unready_total{verb=\"filter\"} 1\n") &&
                  strstr(text, "gpupack_verbs_unready_total{verb=\"bind\"} 1\n"), "%s", text);
    free(text);
    env_teardown(&x);
}
END_TEST

/* A relist (the watch met 410 Gone: events were lost) closes the verbs until
 * its LIST is applied; the pods it brings then decide. Meanwhile another
 * binder filled node-b, which gpupack learns only from that LIST. */
START_TEST(verbs_wait_for_a_relist)
{
    live_env x;
    env_setup(&x);
    fakeapi_put_pod(x.f, gpu_pod("new", 16384));
    gp_start(&x);
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 10), 1);   /* a cut reaches open watches */
    fakeapi_cut_watches(x.f, false);
    fakeapi_fail(x.f, "GET", "watch=1", 503, 2);    /* the events below are lost, not resent */
    fakeapi_put_pod(x.f, bound_pod("other", "node-b", 0, 16384));
    fakeapi_delay(x.f, "GET", "/api/v1/pods?limit", 4000, 1);
    fakeapi_expire(x.f);
    double end = gp_mono_s() + 10;
    while (fakeapi_delaying(x.f) < 1 && gp_mono_s() < end)
        usleep(10000);
    ck_assert_int_eq(fakeapi_delaying(x.f), 1);
    size_t passed;
    char *e = filter_error(&x, "new", &passed);
    ck_assert_msg(strstr(e, "not the API server's yet"), "filter during the relist: \"%s\", %zu nodes passed",
                  e, passed);
    free(e);
    e = bind_error(&x, "new", "node-b");
    ck_assert_msg(strstr(e, "not the API server's yet"), "bind during the relist: \"%s\"", e);
    free(e);
    ck_assert_int_eq(fakeapi_count(x.f, "POST", "/binding"), 0);
    long st = 0;
    char *text = http_text(&x, "/readyz", &st);
    ck_assert_int_eq(st, 503);
    ck_assert_msg(strstr(text, "pods: listing again"), "%s", text);
    free(text);
    ck_assert(wait_ready(&x, 10));
    e = bind_error(&x, "new", "node-b");
    ck_assert_msg(strstr(e, "no longer fits"), "bind after the relist: \"%s\"", e);
    free(e);
    ck_assert_int_eq(gpu_mem_used(&x, "node-b", 0), 16384);
    env_teardown(&x);
}
END_TEST

Suite *suite_live(void);
Suite *suite_live(void)
{
    Suite *s = suite_create("live");
    TCase *tc = tcase_create("binary");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, schedule_bind_restart_same_map);
    tcase_add_test(tc, bind_errors_roll_back);
    tcase_add_test(tc, cpu_only_pod_plain_binding);
    tcase_add_test(tc, watch_cut_converges);
    tcase_add_test(tc, binds_race_deletions);
    tcase_add_test(tc, bypassed_pod_accounted);
    suite_add_tcase(s, tc);
    TCase *tw = tcase_create("truth-gate");
    tcase_set_timeout(tw, 60);
    tcase_add_test(tw, verbs_wait_for_the_first_pod_list);
    tcase_add_test(tw, verbs_wait_for_a_relist);
    suite_add_tcase(s, tw);
    TCase *tb = tcase_create("bind-faults");
    tcase_set_timeout(tb, 60);
    tcase_add_test(tb, unknown_outcome_keeps_gpus);
    tcase_add_test(tb, accepted_bind_never_expires);
    tcase_add_test(tb, stalled_watch_is_restarted);
    tcase_add_test(tb, wrong_uid_writes_nothing);
    tcase_add_test(tb, bind_refused_before_pods_listed);
    tcase_add_test(tb, changed_pod_binds_on_second_try);
    tcase_add_test(tb, slow_binds_leave_verbs_free);
    suite_add_tcase(s, tb);
    return s;
}
