/* loadgen.c -- load generator for the extender verbs: one client, keep-alive,
 * latency percentiles and throughput. Also writes synthetic clusters.
 *
 *   bin/loadgen --gen-cluster 5000 > /tmp/c5000.json      5,000 nodes x 8 GPUs
 *   bin/loadgen --url http://127.0.0.1:8765 --verb filter --nodes 5000 --requests 2000
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"

#define GPUS_PER_NODE 8

/* A running pod in namespace bench holding the GPUs `assign` names. */
static json_t *bench_pod_holding(const char *uid, const char *node, const char *assign)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s}},s:{s:s},s:{s:s}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", uid, "namespace", "bench", "uid", uid,
                     "annotations", "gpupack.io/assignment", assign, "spec", "nodeName", node,
                     "status", "phase", "Running");
}

/* Every 4th node has all GPUs taken by one pod, so filter answers carry
 * failure reasons as well as fits. varied: every other node also holds a
 * different share of one GPU, so (almost) no two nodes are in the same state
 * and the extender cannot share verdicts between nodes. */
static int gen_cluster(int n, int varied)
{
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        char name[32], gpus[2048];
        snprintf(name, sizeof name, "node-%05d", i);
        size_t off = 0;
        off += (size_t)snprintf(gpus + off, sizeof gpus - off, "[");
        for (int g = 0; g < GPUS_PER_NODE; g++)
            off += (size_t)snprintf(gpus + off, sizeof gpus - off,
                                    "%s{\"index\":%d,\"uuid\":\"GPU-%05d-%d\",\"model\":\"A100-SXM4-80GB\","
                                    "\"memoryMiB\":81920,\"healthy\":true}",
                                    g ? "," : "", g, i, g);
        snprintf(gpus + off, sizeof gpus - off, "]");
        json_array_append_new(items, json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1",
                                               "kind", "Node", "metadata", "name", name,
                                               "annotations", "gpupack.io/gpus", gpus));
        if (varied && i % 4 != 0) {
            char assign[256], uid[64];
            snprintf(assign, sizeof assign,
                     "{\"node\":\"%s\",\"containers\":[{\"name\":\"c\",\"gpus\":[{\"index\":%d,"
                     "\"memMiB\":%d,\"core\":%d}]}]}",
                     name, i % GPUS_PER_NODE, 1024 + (i * 7919) % 70000, 5 + (i * 31) % 90);
            snprintf(uid, sizeof uid, "bench-v-%05d", i);
            json_array_append_new(items, bench_pod_holding(uid, name, assign));
        }
        if (i % 4 == 0) {
            char assign[1024], uid[64];
            off = (size_t)snprintf(assign, sizeof assign,
                                   "{\"node\":\"%s\",\"containers\":[{\"name\":\"c\",\"gpus\":[", name);
            for (int g = 0; g < GPUS_PER_NODE; g++)
                off += (size_t)snprintf(assign + off, sizeof assign - off,
                                        "%s{\"index\":%d,\"memMiB\":81920,\"core\":100}", g ? "," : "", g);
            snprintf(assign + off, sizeof assign - off, "]}]}");
            snprintf(uid, sizeof uid, "bench-%05d", i);
            json_array_append_new(items, bench_pod_holding(uid, name, assign));
        }
    }
    json_t *list = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
    json_dumpf(list, stdout, JSON_COMPACT);
    json_decref(list);
    return 0;
}

/* A pod shaped like the one kube-scheduler v1.26 sent (test/fixtures/captured/)
 * (managedFields, tolerations and defaulted fields included). */
static json_t *bench_pod(const char *sample)
{
    if (sample) {
        json_t *j = json_load_file(sample, 0, NULL);
        json_t *pod = json_incref(json_object_get(json_object_get(j, "body"), "Pod"));
        json_decref(j);
        if (pod)
            return pod;
        fprintf(stderr, "loadgen: %s has no body.Pod; using the built-in pod\n", sample);
    }
    return json_pack("{s:{s:s,s:s,s:s},s:{s:[{s:s,s:s,s:{s:{s:s,s:s}}}]}}", "metadata", "name",
                     "bench-pod", "namespace", "default", "uid", "bench-uid-1", "spec",
                     "containers", "name", "main", "image", "registry.invalid/x:1", "resources",
                     "limits", "gpupack.io/gpu-mem", "4096", "gpupack.io/gpu-core", "20");
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    size_t *bytes = ud;
    *bytes += sz * n;
    return sz * n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *url = "http://127.0.0.1:8765", *verb = "filter", *sample = NULL;
    int nodes = 100, requests = 2000, warmup = 200, print_body = 0, varied = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--varied") == 0)
            varied = 1;
        else if (strcmp(argv[i], "--gen-cluster") == 0 && i + 1 < argc)
            return gen_cluster(atoi(argv[++i]), varied);
        else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--verb") == 0 && i + 1 < argc)
            verb = argv[++i];
        else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
            requests = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pod-sample") == 0 && i + 1 < argc)
            sample = argv[++i];
        else if (strcmp(argv[i], "--print-body") == 0)
            print_body = 1;
        else {
            fprintf(stderr, "usage: loadgen [--varied] --gen-cluster N | [--url U] [--verb filter|prioritize]"
                            " [--nodes N] [--requests K] [--warmup W] [--pod-sample FILE]"
                            " [--print-body]\n");
            return 2;
        }
    }
    if (nodes <= 0 || requests <= 0 || warmup < 0) {
        fprintf(stderr, "loadgen: counts must be positive\n");
        return 2;
    }
    json_t *names = json_array();
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%05d", i);
        json_array_append_new(names, json_string(name));
    }
    json_t *args = json_pack("{s:o,s:o,s:n}", "Pod", bench_pod(sample), "NodeNames", names, "Nodes");
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    if (print_body) {   /* for other clients (wrk) to send the same request */
        fputs(body, stdout);
        free(body);
        return 0;
    }
    char *full = xasprintf("%s/%s", url, verb);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    /* kube-scheduler's Go client sends no "Expect: 100-continue"; libcurl does
     * for bodies over 1 KiB and then waits for the interim 100 answer */
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    size_t bytes = 0;
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    double *lat = xcalloc((size_t)requests, sizeof *lat);
    int errors = 0;
    double t0 = 0;
    for (int i = -warmup; i < requests; i++) {
        if (i == 0)
            t0 = gp_mono_s();
        double s = gp_mono_s();
        CURLcode rc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status != 200)
            errors++;
        if (i >= 0)
            lat[i] = gp_mono_s() - s;
    }
    double total = gp_mono_s() - t0;
    qsort(lat, (size_t)requests, sizeof *lat, cmp_double);
    printf("verb=%s nodes=%d requests=%d errors=%d body_bytes=%zu p50_ms=%.3f p90_ms=%.3f "
           "p99_ms=%.3f max_ms=%.3f rps=%.0f\n",
           verb, nodes, requests, errors, strlen(body), lat[requests / 2] * 1e3,
           lat[requests * 9 / 10] * 1e3, lat[requests * 99 / 100] * 1e3,
           lat[requests - 1] * 1e3, requests / total);
    free(lat);
    free(full);
    free(body);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
