/* e2eload.c -- load generator for bench/e2e.sh and bench/scale.sh: creates nodes and
 * pods on a real API server from many keep-alive connections at once, watches the
 * pods get bound and reports throughput, create->bound latency, GPUs used against
 * the ideal, over-committed GPUs and the CPU each named process spent.
 *
 *   bin/e2eload sched-config --shipped manifests/base/scheduler-config.yaml --port P --qps Q [--no-extender]
 *                            [--tls-dir DIR]   (an HTTPS stanza: DIR's client.crt/.key and ca.crt)
 *                            [--managed]       (managedResources: only pods asking gpupack's
 *                                               resources reach the extender)
 *   bin/e2eload nodes --kubeconfig F --count N [--gpus 4 --gpu-gib 16] [--threads 16]
 *                     [--trace-nodes CSV --seed S]   (8-GPU nodes, models mixed as in the trace)
 *   bin/e2eload pods  --kubeconfig F --ns NS --count P --scheduler NAME --profile aliyun|cpu|openb
 *                     [--gib 4] [--threads 16] [--timeout 900]
 *                     [--trace-pods CSV --trace-nodes CSV --seed S]   (openb: pods sampled from the trace)
 *                     [--gpu-only]         (openb: only the trace's pods that ask GPUs)
 *                     [--strip-gpu]        (openb: the same pods asking their CPU and memory only)
 *                     [--backlog CMD]      (create every pod first, then run CMD: it starts the scheduler)
 *                     [--pids NAME=PID|NAME=@PIDFILE,...]   (CPU seconds and peak RSS of each)
 *                     [--timeline CSV]     (pods bound per second)
 *                     [--stall 60]         (stop waiting when no pod was bound for this long)
 *                     [--dump FILE]        (the nodes and pods at the end, a List for gpupack serve --cluster)
 * `pods` prints one JSON line of figures. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "model/gpu.h"
#include "model/k8s_obs.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "schedrw.h"
#include "lib/strmap.h"
#include "kube/watchstream.h"
#include "sim/trace.h"

typedef struct opts {
    const char *kubeconfig, *ns, *scheduler, *profile, *shipped, *tls_dir;
    const char *trace_nodes, *trace_pods, *backlog, *pids, *timeline, *dump;
    int count, threads, gpus, gpu_gib, gib, port, qps;
    uint64_t seed;
    double timeout, stall;
    bool no_extender;
    bool managed, gpu_only, strip_gpu;
} opts;

/* ------------------------------------------------------------- trace --- */

/* What the openb trace gives the generated cluster: the GPU models weighted by
 * how many GPUs of each the trace's nodes hold, and the pod rows to sample. */
#define MIX_MODELS 16
#define NODE_GPUS 8

static struct {
    int nm;
    char model[MIX_MODELS][GP_MODEL_MAX];
    int64_t mem[MIX_MODELS], cpu[MIX_MODELS], hmem[MIX_MODELS];
    double cum[MIX_MODELS];       /* cumulative share of GPUs */
    int64_t ref_mib;              /* the smallest GPU memory among the models */
    trace_pod *pods;
    size_t np;
} mix;

/* splitmix64: the i-th draw of stream `st` under `seed`, the same from any thread. */
static uint64_t draw(uint64_t seed, uint64_t st, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (st << 48) + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double draw01(uint64_t seed, uint64_t st, uint64_t i)
{
    return (double)(draw(seed, st, i) >> 11) / 9007199254740992.0;
}

static void mix_load_nodes(const char *path)
{
    trace_node *t;
    size_t n;
    gp_err err;
    if (trace_load_nodes(path, &t, &n, &err) < 0) {
        fprintf(stderr, "e2eload: %s\n", err.msg);
        exit(2);
    }
    double total = 0;
    int64_t gpus[MIX_MODELS] = {0};
    for (size_t i = 0; i < n; i++) {
        if (t[i].gpus <= 0)
            continue;
        int m = 0;
        while (m < mix.nm && strcmp(mix.model[m], t[i].model) != 0)
            m++;
        if (m == mix.nm) {
            if (mix.nm == MIX_MODELS)
                continue;
            gp_strlcpy(mix.model[m], t[i].model, sizeof mix.model[m]);
            mix.mem[m] = t[i].gpu_mem_mib;
            mix.cpu[m] = 96000;             /* the trace's usual 8-GPU machine */
            mix.hmem[m] = 393216;
            mix.nm++;
        }
        if (t[i].gpus == NODE_GPUS) {       /* this model's own 8-GPU machine */
            mix.cpu[m] = t[i].cpu_milli;
            mix.hmem[m] = t[i].mem_mib;
        }
        gpus[m] += t[i].gpus;
        total += t[i].gpus;
    }
    double acc = 0;
    mix.ref_mib = INT64_MAX;
    for (int m = 0; m < mix.nm; m++) {
        acc += (double)gpus[m] / total;
        mix.cum[m] = acc;
        if (mix.mem[m] < mix.ref_mib)
            mix.ref_mib = mix.mem[m];
    }
    free(t);
    if (mix.nm == 0) {
        fprintf(stderr, "e2eload: %s: no GPU nodes\n", path);
        exit(2);
    }
}

static void mix_load_pods(const char *path)
{
    gp_err err;
    if (trace_load_pods(path, &mix.pods, &mix.np, &err) < 0 || mix.np == 0) {
        fprintf(stderr, "e2eload: %s\n", mix.np ? err.msg : "no pods in the trace");
        exit(2);
    }
}

static int node_model(const opts *o, int i)
{
    double u = draw01(o->seed, 1, (uint64_t)i);
    for (int m = 0; m < mix.nm; m++)
        if (u < mix.cum[m])
            return m;
    return mix.nm - 1;
}

static const trace_pod *pod_row(const opts *o, int i)
{
    const trace_pod *t = &mix.pods[draw(o->seed, 2, (uint64_t)i) % mix.np];
    /* --gpu-only: drawn again (seeded streams) until the row asks GPUs */
    for (uint64_t k = 0; o->gpu_only && t->num_gpu == 0 && k < 1000; k++)
        t = &mix.pods[draw(o->seed, 1000 + k, (uint64_t)i) % mix.np];
    return t;
}

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static bool flag(int argc, char **argv, const char *name)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

static gp_kube *client(const char *kubeconfig)
{
    gp_kube_auth auth;
    gp_err err;
    if (!kubeconfig || kubeconfig_load(kubeconfig, NULL, &auth, &err) < 0) {
        fprintf(stderr, "e2eload: --kubeconfig: %s\n", kubeconfig ? err.msg : "required");
        exit(2);
    }
    gp_kube *k = kube_new(&auth, &err);
    kube_auth_clear(&auth);
    if (!k) {
        fprintf(stderr, "e2eload: %s\n", err.msg);
        exit(2);
    }
    return k;
}

/* ------------------------------------------------------------ create --- */

typedef json_t *(*make_fn)(const opts *o, int i);

typedef struct creator {
    gp_kube *k;
    const opts *o;
    const char *path;
    make_fn make;
    atomic_int next, failed;
    double *t_sent, *t_done;        /* per object, monotonic seconds */
} creator;

static void *create_worker(void *arg)
{
    creator *c = arg;
    for (;;) {
        int i = atomic_fetch_add(&c->next, 1);
        if (i >= c->o->count)
            return NULL;
        json_t *obj = c->make(c->o, i);
        char *body = json_dumps(obj, JSON_COMPACT);
        json_decref(obj);
        gp_kube_resp r;
        gp_err err;
        for (int attempt = 0; attempt < 5; attempt++) {
            c->t_sent[i] = gp_mono_s();
            int rc = kube_request(c->k, "POST", c->path, "application/json", body, 60, NULL, &r, &err);
            long st = r.status;
            kube_resp_free(&r);
            if (rc == 0 && st / 100 == 2) {
                c->t_done[i] = gp_mono_s();
                break;
            }
            if (attempt == 4) {
                fprintf(stderr, "e2eload: POST %s #%d: %s (HTTP %ld)\n", c->path, i, rc ? err.msg : "", st);
                atomic_fetch_add(&c->failed, 1);
            }
        }
        free(body);
    }
}

/* Creates o->count objects over o->threads connections; returns seconds taken. */
static double create_all(creator *c)
{
    int n = c->o->threads > 0 ? c->o->threads : 16;
    pthread_t th[256];
    if (n > 256)
        n = 256;
    double t0 = gp_mono_s();
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, create_worker, c);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return gp_mono_s() - t0;
}

/* A node of NODE_GPUS GPUs of one model drawn from the trace's mix, its GPUs
 * in the gpupack.io/gpus annotation, CPU and memory of the trace's machine. */
static json_t *make_trace_node(const opts *o, int i)
{
    char name[32], cpu[32], hmem[32];
    snprintf(name, sizeof name, "bn-%05d", i);
    int m = node_model(o, i);
    json_t *gpus = json_array();
    for (int g = 0; g < NODE_GPUS; g++) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "GPU-%s-%d", name, g);
        json_array_append_new(gpus, json_pack("{s:i,s:s,s:s,s:I,s:b}", "index", g, "uuid", uuid, "model",
                                              mix.model[m], "memoryMiB", (json_int_t)mix.mem[m], "healthy", 1));
    }
    char *ann = json_dumps(gpus, JSON_COMPACT);
    json_decref(gpus);
    snprintf(cpu, sizeof cpu, "%" PRId64 "m", mix.cpu[m]);
    snprintf(hmem, sizeof hmem, "%" PRId64 "Mi", mix.hmem[m]);
    json_t *cap = json_pack("{s:s,s:s,s:s}", "cpu", cpu, "memory", hmem, "pods", "250");
    json_t *n = json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:{s:O,s:o,s:[{s:s,s:s}]}}", "apiVersion", "v1",
                          "kind", "Node", "metadata", "name", name, "labels", "kubernetes.io/hostname", name,
                          "annotations", "gpupack.io/gpus", ann, "status", "capacity", cap, "allocatable", cap,
                          "conditions", "type", "Ready", "status", "True");
    free(ann);
    return n;
}

static json_t *make_node(const opts *o, int i)
{
    if (mix.nm)
        return make_trace_node(o, i);
    char name[32], cnt[16], mem[16];
    snprintf(name, sizeof name, "bn-%05d", i);
    json_t *cap = json_pack("{s:s,s:s,s:s}", "cpu", "64", "memory", "256Gi", "pods", "110");
    if (o->gpus > 0) {
        snprintf(cnt, sizeof cnt, "%d", o->gpus);
        snprintf(mem, sizeof mem, "%d", o->gpus * o->gpu_gib);
        json_object_set_new(cap, "aliyun.com/gpu-count", json_string(cnt));
        json_object_set_new(cap, "aliyun.com/gpu-mem", json_string(mem));
    }
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:O,s:o,s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind",
                     "Node", "metadata", "name", name, "labels", "kubernetes.io/hostname", name, "status",
                     "capacity", cap, "allocatable", cap, "conditions", "type", "Ready", "status", "True");
}

/* A pod drawn from the trace: its CPU and memory requests, and as gpupack
 * resources a share of one GPU (compute gpu_milli/10 %, memory the same share
 * of the smallest GPU model, so that compute decides as in the trace) or whole
 * GPUs (gpu-count). */
static json_t *make_trace_pod(const opts *o, int i)
{
    const trace_pod *t = pod_row(o, i);
    char name[32], v[32];
    snprintf(name, sizeof name, "bp-%06d", i);
    json_t *req = json_object();
    snprintf(v, sizeof v, "%" PRId64 "m", t->cpu_milli > 0 ? t->cpu_milli : 100);
    json_object_set_new(req, "cpu", json_string(v));
    if (t->mem_mib > 0) {
        snprintf(v, sizeof v, "%" PRId64 "Mi", t->mem_mib);
        json_object_set_new(req, "memory", json_string(v));
    }
    json_t *res = json_pack("{s:o}", "requests", req);
    if (t->num_gpu > 0 && !o->strip_gpu) {
        json_t *lim = json_object();
        if (t->num_gpu == 1 && t->gpu_milli < GP_CORE_FULL) {
            snprintf(v, sizeof v, "%" PRId64, (t->gpu_milli * mix.ref_mib + 999) / 1000);
            json_object_set_new(lim, "gpupack.io/gpu-mem", json_string(v));
            snprintf(v, sizeof v, "%d", (t->gpu_milli + 9) / 10);
            json_object_set_new(lim, "gpupack.io/gpu-core", json_string(v));
        } else {
            snprintf(v, sizeof v, "%d", t->num_gpu);
            json_object_set_new(lim, "gpupack.io/gpu-count", json_string(v));
        }
        json_object_set_new(res, "limits", lim);
    }
    json_t *md = json_pack("{s:s}", "name", name);
    if (t->gpu_spec[0] && !o->strip_gpu)
        json_object_set_new(md, "annotations", json_pack("{s:s}", "gpupack.io/gpu-model", t->gpu_spec));
    return json_pack("{s:s,s:s,s:o,s:{s:s,s:i,s:[{s:s,s:s,s:o}]}}", "apiVersion", "v1", "kind", "Pod",
                     "metadata", md, "spec", "schedulerName", o->scheduler, "terminationGracePeriodSeconds", 0,
                     "containers", "name", "main", "image", "registry.invalid/bench:1", "resources", res);
}

static json_t *make_pod(const opts *o, int i)
{
    if (strcmp(o->profile, "openb") == 0)
        return make_trace_pod(o, i);
    char name[32], gib[16];
    snprintf(name, sizeof name, "bp-%06d", i);
    snprintf(gib, sizeof gib, "%d", o->gib);
    json_t *lim = json_pack("{s:s}", "cpu", "100m");
    if (strcmp(o->profile, "aliyun") == 0)
        json_object_set_new(lim, "aliyun.com/gpu-mem", json_string(gib));
    return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:i,s:[{s:s,s:s,s:{s:o,s:{s:s}}}]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", name, "spec", "schedulerName", o->scheduler,
                     "terminationGracePeriodSeconds", 0, "containers", "name", "main", "image",
                     "registry.invalid/bench:1", "resources", "limits", lim, "requests", "cpu", "100m");
}

/* ----------------------------------------------------- CPU and memory --- */

/* The processes to account (--pids): NAME=PID, or NAME=@FILE to read the PID
 * from FILE at every sample (a scheduler started later has none at first). */
#define MAX_PROCS 8

typedef struct proc_set {
    int n;
    char name[MAX_PROCS][32];
    char src[MAX_PROCS][512];
} proc_set;

typedef struct sample {
    double t;
    double cpu[MAX_PROCS + 1];      /* seconds; the last one is this tool */
} sample;

static void procs_parse(const char *spec, proc_set *ps)
{
    memset(ps, 0, sizeof *ps);
    if (!spec)
        return;
    char *dup = xstrdup(spec), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok && ps->n < MAX_PROCS; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        gp_strlcpy(ps->name[ps->n], tok, sizeof ps->name[0]);
        gp_strlcpy(ps->src[ps->n], eq + 1, sizeof ps->src[0]);
        ps->n++;
    }
    free(dup);
}

static long proc_pid(const proc_set *ps, int i)
{
    const char *s = ps->src[i];
    if (*s != '@')
        return atol(s);
    FILE *f = fopen(s + 1, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* utime + stime of pid in seconds; 0 when it is gone or not yet there. */
static double proc_cpu(long pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');   /* the command may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* VmHWM (peak resident set) of pid in MiB; 0 when unknown. */
static double proc_hwm_mib(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib / 1024;
}

static void take_sample(const proc_set *ps, sample *s)
{
    s->t = gp_mono_s();
    for (int i = 0; i < ps->n; i++)
        s->cpu[i] = proc_cpu(proc_pid(ps, i));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    s->cpu[MAX_PROCS] = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                        ru.ru_stime.tv_usec / 1e6;
}

/* Samples every process twice a second until cancelled, so that a window can
 * end at the last bind rather than when the waiting stopped. */
typedef struct sampler {
    const proc_set *ps;
    gp_kube_cancel *cancel;
    pthread_mutex_t mu;
    sample *s;
    size_t n, cap;
} sampler;

static void *sampler_thread(void *arg)
{
    sampler *sp = arg;
    do {
        sample x;
        take_sample(sp->ps, &x);
        pthread_mutex_lock(&sp->mu);
        if (sp->n == sp->cap) {
            sp->cap = sp->cap ? 2 * sp->cap : 1024;
            sp->s = xrealloc(sp->s, sp->cap * sizeof *sp->s);
        }
        sp->s[sp->n++] = x;
        pthread_mutex_unlock(&sp->mu);
    } while (!kube_cancel_sleep(sp->cancel, 0.5));
    return NULL;
}

/* The sample where the processes calmed down after the last bind at `last`:
 * the first one from which, over the next second or more, they used less than
 * a quarter of their mean rate between `from` (the first bind) and `last`; or
 * the first `cap` seconds after `last`. NULL while the samples do not tell
 * yet. The caller holds sp->mu. */
static const sample *quiet_after(const sampler *sp, const proc_set *ps, double from, double last,
                                 double cap)
{
    const sample *a = NULL, *b = NULL;
    for (size_t i = 0; i < sp->n && !(a && b); i++) {
        if (!a && sp->s[i].t >= from)
            a = &sp->s[i];
        if (!b && sp->s[i].t >= last)
            b = &sp->s[i];
    }
    if (!a || !b)
        return NULL;
    double busy = 0;
    for (int k = 0; k < ps->n; k++)
        busy += b->cpu[k] - a->cpu[k];
    double rate = b->t > a->t ? busy / (b->t - a->t) : 0;
    for (size_t i = (size_t)(b - sp->s); i < sp->n; i++) {
        const sample *x = &sp->s[i];
        if (x->t - last > cap)
            return x;
        for (size_t j = i + 1; j < sp->n; j++) {
            const sample *y = &sp->s[j];
            if (y->t - x->t < 1.0)
                continue;
            double r = 0;
            for (int k = 0; k < ps->n; k++)
                r += y->cpu[k] - x->cpu[k];
            if (r / (y->t - x->t) < rate / 4)
                return x;
            break;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------- watch --- */

typedef struct watcher {
    gp_kube *k;
    const opts *o;
    const proc_set *ps;
    char rv[64];                    /* last resourceVersion seen: where a re-watch resumes */
    int rewatches;
    gp_kube_cancel *cancel;
    gp_watchstream *ws;
    double *t_bound;
    atomic_int bound;
    sample at_first_bind;           /* taken by the watch thread at the first bind */
} watcher;

static int on_line(void *ud, const char *line, size_t len)
{
    watcher *w = ud;
    gp_watch_event ev;
    gp_err err;
    if (watchstream_event_parse(line, len, &ev, &err) < 0)
        return 0;
    if (ev.rv[0])
        gp_strlcpy(w->rv, ev.rv, sizeof w->rv);
    const char *name = json_string_value(json_object_get(json_object_get(ev.object, "metadata"), "name"));
    const char *node = json_string_value(json_object_get(json_object_get(ev.object, "spec"), "nodeName"));
    int i;
    if (name && node && *node && sscanf(name, "bp-%d", &i) == 1 && i >= 0 && i < w->o->count &&
        w->t_bound[i] == 0) {
        w->t_bound[i] = gp_mono_s();
        if (atomic_fetch_add(&w->bound, 1) == 0)
            take_sample(w->ps, &w->at_first_bind);
    }
    watchstream_event_clear(&ev);
    return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
    watcher *w = ud;
    gp_err err;
    return watchstream_feed(w->ws, p, n, &err);
}

/* Watches the namespace's pods until cancelled; the API server may end a
 * watch early (a slow reader on a loaded machine): resume from the last
 * resourceVersion seen, so that no bind is missed. */
static void *watch_thread(void *arg)
{
    watcher *w = arg;
    while (!kube_cancel_fired(w->cancel)) {
        char *path = xasprintf("/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d",
                               w->o->ns, w->rv, (int)w->o->timeout + 30);
        long st;
        gp_buf eb;
        gp_err err;
        watchstream_reset(w->ws);
        int rc = kube_stream(w->k, path, 60, w->o->timeout + 60, w->cancel, NULL, on_data, w, &st, &eb, &err);
        free(path);
        gp_buf_free(&eb);
        if (kube_cancel_fired(w->cancel))
            break;
        w->rewatches++;
        fprintf(stderr, "e2eload: watch ended (%s, HTTP %ld); resuming from %s\n", rc < 0 ? err.msg : "by the server",
                st, w->rv);
        kube_cancel_sleep(w->cancel, 0.2);
    }
    return NULL;
}

/* ----------------------------------------------------------- figures --- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Calls fn on every object of a paged LIST; -1 when a page fails. */
static int list_all(gp_kube *k, const char *path, void (*fn)(void *ud, const json_t *obj), void *ud)
{
    char cont[4096] = "";
    do {
        char *esc = kube_escape(cont);
        char *p = xasprintf("%s?limit=2000%s%s", path, cont[0] ? "&continue=" : "", esc);
        free(esc);
        gp_kube_resp r;
        gp_err err;
        int rc = kube_request(k, "GET", p, NULL, NULL, 120, NULL, &r, &err);
        free(p);
        if (rc < 0 || r.status != 200) {
            fprintf(stderr, "e2eload: LIST %s: %s (HTTP %ld)\n", path, rc < 0 ? err.msg : "", r.status);
            kube_resp_free(&r);
            return -1;
        }
        json_t *l = json_loadb(r.body.data, r.body.len, 0, NULL);
        kube_resp_free(&r);
        size_t i;
        json_t *obj;
        json_array_foreach(json_object_get(l, "items"), i, obj)
            fn(ud, obj);
        const char *c = json_string_value(json_object_get(json_object_get(l, "metadata"), "continue"));
        gp_strlcpy(cont, c ? c : "", sizeof cont);
        json_decref(l);
    } while (cont[0]);
    return 0;
}

/* The GPUs of every node, and what the bound pods hold on each. */
typedef struct gpu_use {
    int64_t mem_total, mem_used;
    int core_used;
    bool seen;
} gpu_use;

typedef struct audit {
    json_t *dump;                   /* NULL, or the trimmed objects (--dump) */
    strmap *nodes;                  /* name -> gpu_use[GP_MAX_GPUS_PER_NODE] */
    gp_pod_view *v;
    int pods, assigned, gpu_pods_unassigned, unknown_gpu;
} audit;

static void audit_node(void *ud, const json_t *obj)
{
    audit *a = ud;
    char name[GP_NAME_MAX];
    if (a->dump) {
        json_t *t = k8s_obs_trim_node(obj);
        json_object_set_new(t, "kind", json_string("Node"));
        json_object_set_new(t, "apiVersion", json_string("v1"));
        json_array_append_new(a->dump, t);
    }
    gp_inventory *inv = xmalloc(sizeof *inv);
    gp_err err;
    if (k8s_obs_node(obj, 1024, name, inv, &err) >= 0) {
        gpu_use *u = xcalloc(GP_MAX_GPUS_PER_NODE, sizeof *u);
        for (int g = 0; g < inv->n; g++)
            if (inv->gpus[g].index >= 0 && inv->gpus[g].index < GP_MAX_GPUS_PER_NODE)
                u[inv->gpus[g].index].mem_total = inv->gpus[g].mem_total;
        free(strmap_put(a->nodes, name, u));
    }
    free(inv);
}

static void audit_pod(void *ud, const json_t *obj)
{
    audit *a = ud;
    gp_err err;
    a->pods++;
    if (a->dump) {
        json_t *t = k8s_obs_trim_pod(obj);
        json_object_set_new(t, "kind", json_string("Pod"));
        json_object_set_new(t, "apiVersion", json_string("v1"));
        json_array_append_new(a->dump, t);
    }
    if (k8s_obs_pod(obj, false, 1024, a->v, &err) < 0)
        return;
    if (!a->v->obs.assign) {
        if (a->v->wants_gpu)
            a->gpu_pods_unassigned++;
        return;
    }
    a->assigned++;
    gpu_use *u = strmap_get(a->nodes, a->v->node);
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(&a->v->assign, holds);
    for (int h = 0; h < nh; h++) {
        int g = holds[h].index;
        if (!u || g < 0 || g >= GP_MAX_GPUS_PER_NODE || u[g].mem_total == 0) {
            a->unknown_gpu++;
            continue;
        }
        u[g].seen = true;
        u[g].mem_used += holds[h].mem_mib;
        u[g].core_used += holds[h].core;
    }
}

typedef struct audit_result {
    int gpus_used, overcommitted, gpu_pods_unassigned, unknown_gpu, assigned;
} audit_result;

/* Sums every GPU's holds from the pods' assignment annotations: GPUs used,
 * and GPUs whose memory or compute holds exceed the GPU (over-commit). */
static int audit_gpus(gp_kube *k, const char *ns, const char *dump, audit_result *out)
{
    audit a = {.nodes = strmap_new(), .v = xmalloc(sizeof(gp_pod_view)), .dump = dump ? json_array() : NULL};
    char *ppath = xasprintf("/api/v1/namespaces/%s/pods", ns);
    int rc = list_all(k, "/api/v1/nodes", audit_node, &a);
    if (rc == 0)
        rc = list_all(k, ppath, audit_pod, &a);
    memset(out, 0, sizeof *out);
    size_t it = 0;
    gpu_use *u;
    while ((u = strmap_next(a.nodes, &it, NULL))) {
        for (int g = 0; g < GP_MAX_GPUS_PER_NODE; g++) {
            if (!u[g].seen)
                continue;
            out->gpus_used++;
            if (u[g].mem_used > u[g].mem_total || u[g].core_used > GP_CORE_FULL)
                out->overcommitted++;
        }
        free(u);
    }
    if (a.dump && rc == 0) {
        /* the cluster as gpupack serve --cluster reads it: bench/scale.sh times filter on it */
        json_t *list = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", a.dump);
        a.dump = NULL;
        if (json_dump_file(list, dump, JSON_COMPACT) < 0)
            fprintf(stderr, "e2eload: --dump %s: cannot write\n", dump);
        json_decref(list);
    }
    json_decref(a.dump);
    out->gpu_pods_unassigned = a.gpu_pods_unassigned;
    out->unknown_gpu = a.unknown_gpu;
    out->assigned = a.assigned;
    strmap_free(a.nodes);
    free(a.v);
    free(ppath);
    return rc;
}

/* Pods bound per second, from t0: "second,bound,total". */
static void write_timeline(const char *path, const double *t_bound, int n, double t0)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "e2eload: %s: cannot write\n", path);
        return;
    }
    int secs = 0;
    for (int i = 0; i < n; i++)
        if (t_bound[i] > 0 && t_bound[i] - t0 + 1 > secs)
            secs = (int)(t_bound[i] - t0) + 1;
    int *bins = xcalloc((size_t)secs + 1, sizeof *bins);
    for (int i = 0; i < n; i++)
        if (t_bound[i] >= t0)
            bins[(int)(t_bound[i] - t0)]++;
    fprintf(f, "second,bound,total\n");
    int total = 0;
    for (int s = 0; s < secs; s++) {
        total += bins[s];
        fprintf(f, "%d,%d,%d\n", s, bins[s], total);
    }
    free(bins);
    fclose(f);
}

static void cpu_json(json_t *o, const proc_set *ps, const sample *a, const sample *b, double pods)
{
    for (int i = 0; i <= ps->n; i++) {
        int slot = i < ps->n ? i : MAX_PROCS;
        double d = b->cpu[slot] - a->cpu[slot];
        json_object_set_new(o, i < ps->n ? ps->name[i] : "load", json_real(round(d * 100) / 100));
        (void)pods;
    }
}

static int cmd_pods(const opts *o)
{
    gp_kube *k = client(o->kubeconfig);
    gp_kube_resp r;
    gp_err err;
    proc_set ps;
    procs_parse(o->pids, &ps);
    /* namespace, then the resourceVersion to watch from */
    json_t *nsobj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", o->ns);
    char *body = json_dumps(nsobj, JSON_COMPACT);
    json_decref(nsobj);
    if (kube_request(k, "POST", "/api/v1/namespaces", "application/json", body, 30, NULL, &r, &err) < 0) {
        fprintf(stderr, "e2eload: namespace: %s\n", err.msg);
        return 1;
    }
    kube_resp_free(&r);
    free(body);
    char *lpath = xasprintf("/api/v1/namespaces/%s/pods?limit=1", o->ns);
    if (kube_request(k, "GET", lpath, NULL, NULL, 30, NULL, &r, &err) < 0 || r.status != 200) {
        fprintf(stderr, "e2eload: list: %s\n", err.msg);
        return 1;
    }
    json_t *l = json_loadb(r.body.data, r.body.len, 0, NULL);
    const char *rv = json_string_value(json_object_get(json_object_get(l, "metadata"), "resourceVersion"));
    watcher w = {.k = k, .o = o, .ps = &ps};
    gp_strlcpy(w.rv, rv ? rv : "0", sizeof w.rv);
    json_decref(l);
    kube_resp_free(&r);
    free(lpath);
    w.cancel = kube_cancel_new();
    w.ws = watchstream_new(GP_WATCH_LINE_MAX, on_line, &w);
    w.t_bound = xcalloc((size_t)o->count, sizeof(double));
    pthread_t wt;
    pthread_create(&wt, NULL, watch_thread, &w);

    char *ppath = xasprintf("/api/v1/namespaces/%s/pods", o->ns);
    creator c = {.k = k, .o = o, .path = ppath, .make = make_pod};
    c.t_sent = xcalloc((size_t)o->count, sizeof(double));
    c.t_done = xcalloc((size_t)o->count, sizeof(double));
    sampler sp = {.ps = &ps, .cancel = kube_cancel_new()};
    pthread_mutex_init(&sp.mu, NULL);
    pthread_t st;
    pthread_create(&st, NULL, sampler_thread, &sp);
    sample s_start;
    take_sample(&ps, &s_start);
    double t0 = gp_mono_s();
    double create_s = create_all(&c);
    double t_sched = 0;
    if (o->backlog) {
        /* every pod is pending: now the scheduler starts */
        t_sched = gp_mono_s();
        int rc = system(o->backlog);
        if (rc != 0)
            fprintf(stderr, "e2eload: --backlog command exited with %d\n", rc);
    }
    /* until every pod is bound, or none was for --stall seconds (pods that fit
     * nowhere stay pending), or the timeout */
    int seen = -1;
    double since = gp_mono_s();
    while (atomic_load(&w.bound) < o->count - atomic_load(&c.failed) && gp_mono_s() - t0 < o->timeout) {
        int b = atomic_load(&w.bound);
        if (b != seen) {
            seen = b;
            since = gp_mono_s();
        } else if (b > 0 && gp_mono_s() - since > o->stall) {
            fprintf(stderr, "e2eload: no bind for %.0f s: %d of %d pods bound, the rest stay pending\n",
                    o->stall, b, o->count);
            break;
        }
        kube_cancel_sleep(w.cancel, 0.05);
    }
    /* work the binds caused may go on after the last one (Events queued, watch
     * fan-out): the CPU windows end where the processes calm down after the
     * last bind, at most 30 s after it (quiet_after) */
    double last_bind = 0;
    for (int i = 0; i < o->count; i++)
        if (w.t_bound[i] > last_bind)
            last_bind = w.t_bound[i];
    const sample *quiet = NULL;
    for (;;) {
        pthread_mutex_lock(&sp.mu);
        quiet = quiet_after(&sp, &ps, w.at_first_bind.t, last_bind, 30);
        pthread_mutex_unlock(&sp.mu);
        if (quiet || last_bind == 0)
            break;
        kube_cancel_sleep(w.cancel, 0.5);
    }
    kube_cancel_fire(sp.cancel);
    pthread_join(st, NULL);
    kube_cancel_fire(w.cancel);
    pthread_join(wt, NULL);

    double first = 1e300, last = 0, first_bind = 1e300;
    double *lat = xcalloc((size_t)o->count, sizeof(double));
    int nl = 0;
    int64_t milli = 0;
    for (int i = 0; i < o->count; i++) {
        if (c.t_sent[i] > 0 && c.t_sent[i] < first)
            first = c.t_sent[i];
        if (w.t_bound[i] > last)
            last = w.t_bound[i];
        if (w.t_bound[i] > 0 && w.t_bound[i] < first_bind)
            first_bind = w.t_bound[i];
        double from = o->backlog ? t_sched : c.t_done[i];
        if (w.t_bound[i] > 0 && c.t_done[i] > 0)
            lat[nl++] = (w.t_bound[i] - from) * 1000;
        if (mix.np)
            milli += trace_pod_gpu_milli(pod_row(o, i));
    }
    qsort(lat, (size_t)nl, sizeof *lat, cmp_d);
    int bound = atomic_load(&w.bound);
    /* stream: first create -> last bind; backlog: first bind -> last bind
     * (the scheduler's start and its first LIST are not scheduling) */
    double span = o->backlog ? last - first_bind : last - first;
    double rate = bound > 1 && span > 0 ? (o->backlog ? bound - 1 : bound) / span : 0;
    if (o->timeline)
        write_timeline(o->timeline, w.t_bound, o->count, o->backlog ? first_bind : first);
    audit_result au = {0};
    bool gpu_profile = strcmp(o->profile, "cpu") != 0 && !o->strip_gpu;
    if (gpu_profile && audit_gpus(k, o->ns, o->dump, &au) < 0)
        au.gpus_used = -1;
    int perfect = strcmp(o->profile, "aliyun") == 0 ? (o->count * o->gib + o->gpu_gib - 1) / o->gpu_gib
                  : mix.np ? (int)((milli + 999) / 1000) : 0;

    json_t *res = json_pack("{s:i,s:i,s:f,s:f,s:i,s:f,s:f,s:f,s:f,s:i,s:i,s:i,s:i,s:i,s:i,s:s}",
                            "pods", o->count, "created", o->count - atomic_load(&c.failed), "create_s",
                            round(create_s * 100) / 100, "create_per_s", round(o->count / create_s),
                            "bound", bound, "span_s", round(span * 100) / 100, "pods_per_s",
                            round(rate * 10) / 10, "p50_ms", nl ? round(lat[nl / 2]) : 0.0, "p99_ms",
                            nl ? round(lat[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1]) : 0.0,
                            "gpus_used", au.gpus_used, "gpus_perfect", perfect, "overcommitted_gpus",
                            au.overcommitted, "gpu_pods_unassigned", au.gpu_pods_unassigned,
                            "holds_on_unknown_gpus", au.unknown_gpu, "rewatches", w.rewatches, "arrival",
                            o->backlog ? "backlog" : "stream");
    /* CPU: over the whole run (first create -> last bind), and in backlog
     * mode over the scheduling alone (first bind -> last bind) */
    const sample *s_end = quiet ? quiet : &sp.s[sp.n - 1];
    json_t *cpu = json_object(), *rss = json_object();
    cpu_json(cpu, &ps, &s_start, s_end, bound);
    json_object_set_new(res, "cpu_s", cpu);
    if (o->backlog && bound > 0) {
        json_t *cs = json_object();
        cpu_json(cs, &ps, &w.at_first_bind, s_end, bound);
        json_object_set_new(res, "cpu_s_scheduling", cs);
    }
    json_object_set_new(res, "wall_s", json_real(round((s_end->t - s_start.t) * 100) / 100));
    json_object_set_new(res, "settle_s", json_real(round((s_end->t - last) * 100) / 100));
    for (int i = 0; i < ps.n; i++)
        json_object_set_new(rss, ps.name[i], json_real(round(proc_hwm_mib(proc_pid(&ps, i)) * 10) / 10));
    json_object_set_new(res, "peak_rss_mib", rss);
    char *line = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(10));
    puts(line);
    free(line);
    json_decref(res);
    free(sp.s);
    pthread_mutex_destroy(&sp.mu);
    kube_cancel_free(sp.cancel);
    free(lat);
    free(c.t_sent);
    free(c.t_done);
    free(ppath);
    free(w.t_bound);
    watchstream_free(w.ws);
    kube_cancel_free(w.cancel);
    kube_free(k);
    return bound > 0 ? 0 : 1;
}

static int cmd_nodes(const opts *o)
{
    gp_kube *k = client(o->kubeconfig);
    creator c = {.k = k, .o = o, .path = "/api/v1/nodes", .make = make_node};
    c.t_sent = xcalloc((size_t)o->count, sizeof(double));
    c.t_done = xcalloc((size_t)o->count, sizeof(double));
    double s = create_all(&c);
    fprintf(stderr, "e2eload: %d nodes in %.1f s (%.0f/s), %d failed\n", o->count, s, o->count / s,
            atomic_load(&c.failed));
    free(c.t_sent);
    free(c.t_done);
    kube_free(k);
    return atomic_load(&c.failed) ? 1 : 0;
}

static int cmd_sched_config(const opts *o)
{
    gp_err err;
    json_t *cfg = schedrw_load(o->shipped, &err);
    if (!cfg) {
        fprintf(stderr, "e2eload: %s\n", err.msg);
        return 1;
    }
    schedrw_rewrite(cfg, o->port);
    if (o->tls_dir)
        schedrw_tls(cfg, o->tls_dir);
    if (o->no_extender)
        json_object_del(cfg, "extenders");
    if (o->managed) {   /* only pods asking these reach gpupack; the scheduler ignores them */
        json_t *mr = json_array();
        static const char *const names[] = {"gpupack.io/gpu-mem", "gpupack.io/gpu-core",
                                            "gpupack.io/gpu-count"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            json_array_append_new(mr, json_pack("{s:s,s:b}", "name", names[i], "ignoredByScheduler", 1));
        size_t i;
        json_t *ext;
        json_array_foreach(json_object_get(cfg, "extenders"), i, ext)
            json_object_set(ext, "managedResources", mr);
        json_decref(mr);
    }
    json_t *cc = json_object_get(cfg, "clientConnection");
    json_object_set_new(cc, "qps", json_integer(o->qps));
    json_object_set_new(cc, "burst", json_integer(o->qps * 2));
    json_dumpf(cfg, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(cfg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: e2eload sched-config|nodes|pods [flags] (see the top of bench/e2eload.c)\n");
        return 2;
    }
    opts o = {
        .kubeconfig = arg(argc, argv, "--kubeconfig", NULL),
        .ns = arg(argc, argv, "--ns", "bench"),
        .scheduler = arg(argc, argv, "--scheduler", "default-scheduler"),
        .profile = arg(argc, argv, "--profile", "aliyun"),
        .shipped = arg(argc, argv, "--shipped", "manifests/base/scheduler-config.yaml"),
        .count = atoi(arg(argc, argv, "--count", "100")),
        .threads = atoi(arg(argc, argv, "--threads", "16")),
        .gpus = atoi(arg(argc, argv, "--gpus", "4")),
        .gpu_gib = atoi(arg(argc, argv, "--gpu-gib", "16")),
        .gib = atoi(arg(argc, argv, "--gib", "4")),
        .port = atoi(arg(argc, argv, "--port", "0")),
        .qps = atoi(arg(argc, argv, "--qps", "50")),
        .timeout = atof(arg(argc, argv, "--timeout", "900")),
        .stall = atof(arg(argc, argv, "--stall", "60")),
        .no_extender = flag(argc, argv, "--no-extender"),
        .managed = flag(argc, argv, "--managed"),
        .gpu_only = flag(argc, argv, "--gpu-only"),
        .strip_gpu = flag(argc, argv, "--strip-gpu"),
        .tls_dir = arg(argc, argv, "--tls-dir", NULL),
        .trace_nodes = arg(argc, argv, "--trace-nodes", NULL),
        .trace_pods = arg(argc, argv, "--trace-pods", NULL),
        .backlog = arg(argc, argv, "--backlog", NULL),
        .pids = arg(argc, argv, "--pids", NULL),
        .timeline = arg(argc, argv, "--timeline", NULL),
        .dump = arg(argc, argv, "--dump", NULL),
        .seed = strtoull(arg(argc, argv, "--seed", "42"), NULL, 10),
    };
    if (o.trace_nodes)
        mix_load_nodes(o.trace_nodes);
    if (o.trace_pods)
        mix_load_pods(o.trace_pods);
    if (strcmp(argv[1], "pods") == 0 && strcmp(o.profile, "openb") == 0 && (!mix.np || !mix.nm)) {
        fprintf(stderr, "e2eload: --profile openb needs --trace-pods and --trace-nodes\n");
        return 2;
    }
    if (o.count <= 0 || o.gib <= 0 || o.gpu_gib <= 0) {
        fprintf(stderr, "e2eload: --count, --gib and --gpu-gib must be positive\n");
        return 2;
    }
    if (strcmp(argv[1], "sched-config") == 0)
        return cmd_sched_config(&o);
    if (strcmp(argv[1], "nodes") == 0)
        return cmd_nodes(&o);
    if (strcmp(argv[1], "pods") == 0)
        return cmd_pods(&o);
    fprintf(stderr, "e2eload: unknown command %s\n", argv[1]);
    return 2;
}
