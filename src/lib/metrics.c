/* metrics.c -- lock-free latency histograms and Prometheus text helpers. */
#include "lib/metrics.h"

static const double bounds[GP_HISTO_BUCKETS - 1] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
};

void metrics_observe(gp_histo *h, double seconds)
{
    int b = 0;
    while (b < GP_HISTO_BUCKETS - 1 && seconds > bounds[b])
        b++;
    atomic_fetch_add(&h->bucket[b], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_ns, (unsigned long long)(seconds > 0 ? seconds * 1e9 : 0));
}

/* A failed append sticks in `out`: the page's owner checks it once. */
#define EMIT(...) gp_buf_printf(out, __VA_ARGS__)

void metrics_render_histo(gp_buf *out, const char *name, const char *labels, const gp_histo *h)
{
    unsigned long cum = 0;
    const char *sep = labels && *labels ? "," : "";
    for (int b = 0; b < GP_HISTO_BUCKETS; b++) {
        cum += atomic_load(&h->bucket[b]);
        if (b < GP_HISTO_BUCKETS - 1)
            EMIT("%s_bucket{%s%sle=\"%g\"} %lu\n", name, labels, sep, bounds[b], cum);
        else
            EMIT("%s_bucket{%s%sle=\"+Inf\"} %lu\n", name, labels, sep, cum);
    }
    EMIT("%s_sum{%s} %.9f\n", name, labels, (double)atomic_load(&h->sum_ns) / 1e9);
    EMIT("%s_count{%s} %lu\n", name, labels, atomic_load(&h->count));
}

void metrics_header(gp_buf *out, const char *name, const char *type, const char *help)
{
    EMIT("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
