/* metrics.c -- Prometheus text: writer lists, sample lines, latency histograms. */
#include "lib/metrics.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ writers -- */

void metrics_init(gp_metrics *m)
{
    m->n = 0;
}

void metrics_add(gp_metrics *m, metrics_fn fn, void *ud)
{
    if (m->n >= METRICS_WRITERS_MAX) {
        fprintf(stderr, "gpupack: more than %d metrics writers\n", METRICS_WRITERS_MAX);
        abort();
    }
    m->w[m->n].fn = fn;
    m->w[m->n].ud = ud;
    m->n++;
}

void metrics_write(const gp_metrics *m, gp_buf *out)
{
    for (int i = 0; m && i < m->n; i++)
        m->w[i].fn(m->w[i].ud, out);
}

/* ------------------------------------------------------------ text -- */

void metrics_header(gp_buf *out, const char *name, const char *type, const char *help)
{
    gp_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_name(gp_buf *out, const char *name, const char *labels)
{
    if (labels && *labels)
        gp_buf_printf(out, "%s{%s} ", name, labels);
    else
        gp_buf_printf(out, "%s ", name);
}

void metrics_u(gp_buf *out, const char *name, const char *labels, unsigned long long v)
{
    sample_name(out, name, labels);
    gp_buf_printf(out, "%llu\n", v);
}

void metrics_i(gp_buf *out, const char *name, const char *labels, long long v)
{
    sample_name(out, name, labels);
    gp_buf_printf(out, "%lld\n", v);
}

void metrics_f(gp_buf *out, const char *name, const char *labels, int decimals, double v)
{
    sample_name(out, name, labels);
    gp_buf_printf(out, "%.*f\n", decimals, v);
}

void metrics_label_value(char *dst, size_t len, const char *s)
{
    size_t k = 0;
    for (; *s && k + 1 < len; s++)
        dst[k++] = (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') ? *s : '_';
    dst[k] = '\0';
}

/* ------------------------------------------------------ histograms -- */

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

void metrics_render_histo(gp_buf *out, const char *name, const char *labels, const gp_histo *h)
{
    unsigned long cum = 0;
    const char *sep = labels && *labels ? "," : "";
    for (int b = 0; b < GP_HISTO_BUCKETS; b++) {
        cum += atomic_load(&h->bucket[b]);
        if (b < GP_HISTO_BUCKETS - 1)
            gp_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %lu\n", name, labels, sep, bounds[b], cum);
        else
            gp_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %lu\n", name, labels, sep, cum);
    }
    gp_buf_printf(out, "%s_sum{%s} %.9f\n", name, labels, (double)atomic_load(&h->sum_ns) / 1e9);
    gp_buf_printf(out, "%s_count{%s} %lu\n", name, labels, atomic_load(&h->count));
}
