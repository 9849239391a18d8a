/* microbench.c -- CPU time of one extender verb in-process (no HTTP), to tell
 * our own cost from the machine's load.
 *   bin/microbench CLUSTER.json NODES [REPEAT] [SAMPLE.json]
 * MICROBENCH_COLD=1: before each call (outside the timing), 64 MiB are
 * written, so that the call finds the store out of the CPU's caches as a
 * live service does between requests (the watches and binds run between).
 * MICROBENCH_PREFIX: the nodes' names before their five digits ("node-" by
 * default; "bn-" for a dump of bench/scale.sh's cluster). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "pack/clusterfile.h"
#include "sched/extender.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: microbench CLUSTER.json NODES [REPEAT] [SAMPLE.json]\n");
        return 2;
    }
    int nodes = atoi(argv[2]), repeat = argc > 3 ? atoi(argv[3]) : 200;
    gp_cluster *c = cluster_new();
    gp_err err;
    if (clusterfile_load(c, argv[1], 1024, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    json_t *pod = NULL;
    if (argc > 4) {
        json_t *j = json_load_file(argv[4], 0, NULL);
        pod = json_incref(json_object_get(json_object_get(j, "body"), "Pod"));
        json_decref(j);
    }
    if (!pod)
        pod = json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:{s:{s:s}}}]}}", "metadata", "name", "p", "uid",
                        "u", "spec", "containers", "name", "c", "resources", "limits",
                        "gpupack.io/gpu-mem", "4096");
    json_t *names = json_array();
    const char *prefix = getenv("MICROBENCH_PREFIX");
    for (int i = 0; i < nodes; i++) {
        char n[64];
        snprintf(n, sizeof n, "%.40s%05d", prefix ? prefix : "node-", i);
        json_array_append_new(names, json_string(n));
    }
    json_t *args = json_pack("{s:o,s:o}", "Pod", pod, "NodeNames", names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    gp_extender *e = extender_new(c, NULL);
    const char *vn[2] = {"filter", "prioritize"};
    int (*verbs[2])(gp_extender *, const char *, size_t, char **) = {extender_filter,
                                                                      extender_prioritize};
    const char *cold_env = getenv("MICROBENCH_COLD");
    size_t cold_len = cold_env && *cold_env == '1' ? 64u << 20 : 0;
    volatile char *cold = cold_len ? malloc(cold_len) : NULL;
    for (int v = 0; v < 2; v++) {
        double best = 1e9, sum = 0, cpu = 0;
        for (int i = 0; i < repeat; i++) {
            char *out;
            for (size_t k = 0; cold && k < cold_len; k += 64)
                cold[k] = (char)i;
            double t = gp_mono_s(), c0 = gp_cpu_s();
            verbs[v](e, body, strlen(body), &out);
            double d = gp_mono_s() - t;
            cpu += gp_cpu_s() - c0;
            free(out);
            sum += d;
            if (d < best)
                best = d;
        }
        printf("%s nodes=%d wall_ms_mean=%.3f wall_ms_min=%.3f cpu_ms_mean=%.3f\n", vn[v], nodes,
               sum / repeat * 1e3, best * 1e3, cpu / repeat * 1e3);
    }
    extender_free(e);
    cluster_free(c);
    free(body);
    free((void *)cold);
    return 0;
}
