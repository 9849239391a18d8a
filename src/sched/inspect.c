/* inspect.c -- the /inspect answer as a per-GPU table (gpupack inspect, ?format=text). */
#include "sched/inspect.h"

#include <string.h>

#include "model/gpu.h"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Column widths: the widest node name and GPU model of the answer (no name is
 * cut), at least the header's. */
typedef struct widths {
    int node, model;
} widths;

static int width(const char *s, int w)
{
    size_t n = strlen(s);
    if (n > GP_NAME_MAX)
        n = GP_NAME_MAX;
    return (int)n > w ? (int)n : w;
}

static void measure(const json_t *n, widths *w)
{
    w->node = width(str(n, "name"), w->node);
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(n, "gpus"), i, g)
        w->model = width(str(g, "model"), w->model);
}

static void print_node(FILE *f, const json_t *n, const widths *w)
{
    const char *name = json_string_value(json_object_get(n, "name"));
    const json_t *gpus = json_object_get(n, "gpus");
    if (json_array_size(gpus) == 0) {
        fprintf(f, "%-*.*s %-4s %-*s %s\n", w->node, GP_NAME_MAX, name ? name : "?", "-", w->model,
                "(no GPUs)", "");
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
        fprintf(f, "%-*.*s %-4lld %-*.*s %-15s %-9s %-3s %s\n", w->node, GP_NAME_MAX,
                i ? "" : (name ? name : "?"),
                (long long)json_integer_value(json_object_get(g, "index")), w->model, GP_NAME_MAX,
                str(g, "model"), memtxt, coretxt,
                json_is_true(json_object_get(g, "healthy")) ? "ok" : "BAD", podlist);
    }
}

void inspect_print_table(FILE *f, const json_t *inspect)
{
    widths w = {24, 22};   /* the narrowest the table gets */
    const json_t *one = json_object_get(inspect, "node");
    size_t i;
    const json_t *n;
    if (one)
        measure(one, &w);
    json_array_foreach(json_object_get(inspect, "nodes"), i, n)
        measure(n, &w);
    fprintf(f, "%-*s %-4s %-*s %-15s %-9s %-3s %s\n", w.node, "NODE", "GPU", w.model, "MODEL",
            "MEM MiB", "CORE %", "OK", "PODS");
    if (one) {
        print_node(f, one, &w);
        return;
    }
    json_array_foreach(json_object_get(inspect, "nodes"), i, n)
        print_node(f, n, &w);
}
