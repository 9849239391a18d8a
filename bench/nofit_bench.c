/* nofit_bench.c -- CPU time of a filter for a pod that fits on no node of a
 * full cluster, in-process (no HTTP): placement says no everywhere, then
 * preemption and consolidation look for a plan, as a live leader does each
 * time kube-scheduler retries a pending pod.
 *   bin/nofit_bench [NODES] [REPEAT] [OWNED_PCT]
 * NODES nodes of 8 GPUs (default 300), each GPU held by one pod of priority
 * 100 asking all its memory; OWNED_PCT % of those pods belong to a
 * ReplicaSet (default 0: bare pods, as bench/soak.sh makes them), so that
 * consolidation may move them. The pod filtered asks one whole GPU at
 * priority 100: no lower-priority victim exists, and no GPU is free. Prints
 * CPU milliseconds per filter (the median of REPEAT calls, default 200) and
 * the plans found (0 when nothing may move). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "model/inventory.h"
#include "model/modelref.h"
#include "pack/cluster.h"
#include "sched/extender.h"
#include "sched/preempt.h"

#define GPU_MIB 16384

static int evictions;

static gp_evict_outcome f_evict(void *ud, const char *ns, const char *name, const char *uid,
                                gp_err *err)
{
    (void)ud, (void)ns, (void)name, (void)uid, (void)err;
    evictions++;
    return GP_EVICT_DONE;
}

static int f_nominate(void *ud, const char *ns, const char *name, const char *uid,
                      const char *node, const char *held, gp_err *err)
{
    (void)ud, (void)ns, (void)name, (void)uid, (void)node, (void)held, (void)err;
    return 0;
}

static void f_event(void *ud, const char *ns, const char *name, const char *uid, bool warning,
                    const char *reason, const char *msg)
{
    (void)ud, (void)ns, (void)name, (void)uid, (void)warning, (void)reason, (void)msg;
}

static int f_nudge(void *ud, const char *ns, const char *name, const char *uid, const char *msg,
                   bool first, gp_err *err)
{
    (void)ud, (void)ns, (void)name, (void)uid, (void)msg, (void)first, (void)err;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_t *pod_json(const char *name, const char *node, bool owned)
{
    json_t *j = json_pack(
        "{s:{s:s,s:s,s:s,s:s},s:{s:i,s:[{s:s,s:{s:{s:s,s:s}}}]},s:{s:s}}", "metadata", "name", name,
        "namespace", "ml", "uid", name, "creationTimestamp", "2025-01-01T00:00:00Z", "spec",
        "priority", 100, "containers", "name", "main", "resources", "limits", "gpupack.io/gpu-mem",
        "16384", "gpupack.io/gpu-count", "1", "status", "startTime", "2025-01-01T00:00:00Z");
    if (node)
        json_object_set_new(json_object_get(j, "spec"), "nodeName", json_string(node));
    if (owned)
        json_object_set_new(json_object_get(j, "metadata"), "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:b}]", "kind", "ReplicaSet", "name", "rs",
                                      "uid", "rs-uid", "controller", 1));
    return j;
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 300, repeat = argc > 2 ? atoi(argv[2]) : 200;
    int owned_pct = argc > 3 ? atoi(argv[3]) : 0;
    if (nodes < 1 || nodes > 20000 || repeat < 1 || repeat > 100000 || owned_pct < 0 ||
        owned_pct > 100) {
        fprintf(stderr, "usage: nofit_bench [NODES 1..20000] [REPEAT] [OWNED_PCT 0..100]\n");
        return 2;
    }
    gp_cluster *c = cluster_new();
    gp_preempt_config pc = {.io = {NULL, f_evict, f_nominate, f_event, f_nudge}};
    gp_preempt *p = preempt_new(c, &pc);
    gp_extender_config ec = {.preempt = preempt_hooks(p)};
    gp_extender *e = extender_new(c, &ec);
    gp_err err;
    if (preempt_start(p, e, false, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    json_t *names = json_array();
    long pods = 0;
    for (int i = 0; i < nodes; i++) {
        char node[32];
        snprintf(node, sizeof node, "node-%05d", i);
        gp_inventory inv;
        memset(&inv, 0, sizeof inv);
        gp_strlcpy(inv.source, "gpupack", sizeof inv.source);
        inv.n = 8;
        for (int g = 0; g < 8; g++)
            inv.gpus[g] = (gp_gpu_info){.mem_total = GPU_MIB, .core_total = GP_CORE_FULL,
                                        .index = g, .healthy = true,
                                        .model = gp_model_intern("A100")};
        cluster_upsert_node(c, node, &inv);
        json_array_append_new(names, json_string(node));
        for (int g = 0; g < 8; g++, pods++) {
            char name[48];
            snprintf(name, sizeof name, "p-%05d-%d", i, g);
            gp_assignment a;
            memset(&a, 0, sizeof a);
            gp_strlcpy(a.node, node, sizeof a.node);
            a.nctrs = 1;
            gp_strlcpy(a.ctrs[0].name, "main", sizeof a.ctrs[0].name);
            a.ctrs[0].ngpus = 1;
            a.ctrs[0].gpus[0] = (gp_gpu_grant){g, GPU_MIB, 0};
            gp_pod_obs obs = {name, "ml", name, node, false, &a, NULL, 0, "default", 0, 0};
            cluster_pod_observed(c, &obs);
            json_t *j = pod_json(name, node, pods % 100 < owned_pct);
            preempt_pod_event(p, false, j);
            json_decref(j);
        }
    }
    json_t *args = json_pack("{s:o,s:o}", "Pod", pod_json("waiting", NULL, false), "NodeNames",
                             names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    double *t = xmalloc((size_t)repeat * sizeof *t);
    int fit = 0;
    for (int r = 0; r < repeat; r++) {
        char *out = NULL;
        double t0 = gp_cpu_s() * 1e3;
        int st = extender_filter(e, body, strlen(body), &out);
        t[r] = gp_cpu_s() * 1e3 - t0;
        json_t *ans = out ? json_loads(out, 0, NULL) : NULL;
        fit += st == 200 && json_array_size(json_object_get(ans, "NodeNames")) > 0;
        json_decref(ans);
        free(out);
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    printf("nodes %d, pods %ld (%d %% owned by a ReplicaSet), %d filters: CPU per filter median "
           "%.3f ms, p90 %.3f ms; answers with a node %d; evictions %d\n",
           nodes, pods, owned_pct, repeat, t[repeat / 2], t[repeat * 9 / 10], fit, evictions);
    free(t);
    free(body);
    preempt_free(p);
    extender_free(e);
    cluster_free(c);
    return 0;
}
