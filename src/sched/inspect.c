/* inspect.c -- the /inspect answer as a per-GPU table (gpupack inspect, ?format=text). */
#include "sched/inspect.h"

#include <string.h>

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
