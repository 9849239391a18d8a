/* inspect_cli.c -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#include "cli/inspect_cli.h"

#include <curl/curl.h>
#include <string.h>

#include "lib/util.h"

#define INSPECT_MAX_BODY (256u << 20)

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void print_node(FILE *f, const json_t *n)
{
    const char *name = json_string_value(json_object_get(n, "name"));
    const json_t *gpus = json_object_get(n, "gpus");
    if (json_array_size(gpus) == 0) {
        fprintf(f, "%-24s %-4s %-22s %s\n", name ? name : "?", "-", "(no GPUs)", "");
        return;
    }
    size_t i;
    const json_t *g;
    json_array_foreach(gpus, i, g) {
        const json_t *mem = json_object_get(g, "memoryMiB");
        const json_t *core = json_object_get(g, "corePercent");
        const json_t *pods = json_object_get(g, "pods");
        char podlist[512] = "";
        size_t off = 0;
        size_t k;
        const json_t *p;
        json_array_foreach(pods, k, p) {
            if (off >= sizeof podlist - 80)
                break;
            off += (size_t)snprintf(podlist + off, sizeof podlist - off, "%s%s/%s%s",
                                    off ? " " : "",
                                    str(p, "namespace"), str(p, "name"),
                                    strcmp(str(p, "state"), "assumed") == 0 ? "(assumed)" : "");
        }
        json_array_foreach(json_object_get(g, "reservations"), k, p) {   /* preemption */
            if (off >= sizeof podlist - 80)
                break;
            off += (size_t)snprintf(podlist + off, sizeof podlist - off,
                                    "%sreserved:%s/%s(%lld MiB)", off ? " " : "",
                                    str(p, "namespace"), str(p, "name"),
                                    (long long)json_integer_value(json_object_get(p, "memMiB")));
        }
        char memtxt[48], coretxt[32];
        snprintf(memtxt, sizeof memtxt, "%lld/%lld",
                 (long long)json_integer_value(json_object_get(mem, "used")),
                 (long long)json_integer_value(json_object_get(mem, "total")));
        snprintf(coretxt, sizeof coretxt, "%g/%g",
                 json_number_value(json_object_get(core, "used")),
                 json_number_value(json_object_get(core, "total")));
        fprintf(f, "%-24s %-4lld %-22.22s %-15s %-9s %-3s %s\n", i ? "" : name,
                (long long)json_integer_value(json_object_get(g, "index")),
                str(g, "model"), memtxt, coretxt,
                json_is_true(json_object_get(g, "healthy")) ? "ok" : "BAD", podlist);
    }
}

void inspect_print_table(FILE *f, const json_t *inspect)
{
    fprintf(f, "%-24s %-4s %-22s %-15s %-9s %-3s %s\n", "NODE", "GPU", "MODEL", "MEM MiB",
            "CORE %", "OK", "PODS");
    const json_t *one = json_object_get(inspect, "node");
    if (one) {
        print_node(f, one);
        return;
    }
    size_t i;
    const json_t *n;
    json_array_foreach(json_object_get(inspect, "nodes"), i, n) print_node(f, n);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, ptr, size * nmemb) ? 0 : size * nmemb;
}

int inspect_main(int argc, char **argv)
{
    const char *server = "http://127.0.0.1:8765";
    const char *node = NULL;
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--server") == 0 && i + 1 < argc)
            server = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            as_json = 1;
        else if (argv[i][0] != '-' && !node)
            node = argv[i];
        else {
            fprintf(stderr, "usage: gpupack inspect [--server URL] [--json] [NODE]\n");
            return 2;
        }
    }
    char *url = xasprintf("%s/inspect%s%s", server, node ? "/" : "", node ? node : "");
    gp_buf body;
    gp_buf_init(&body, INSPECT_MAX_BODY);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    int exit_code = 1;
    if (rc != CURLE_OK) {
        fprintf(stderr, "gpupack inspect: %s: %s\n", url, curl_easy_strerror(rc));
        goto out;
    }
    json_error_t je;
    json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    if (status != 200 || !j) {
        fprintf(stderr, "gpupack inspect: %s answered %ld: %.300s\n", url, status,
                body.data ? body.data : "");
        json_decref(j);
        goto out;
    }
    if (as_json)
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    else
        inspect_print_table(stdout, j);
    json_decref(j);
    exit_code = 0;
out:
    gp_buf_free(&body);
    free(url);
    return exit_code;
}
