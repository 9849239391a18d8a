/* metrics.h -- lock-free latency histograms and Prometheus text helpers. */
#ifndef GP_METRICS_H
#define GP_METRICS_H

#include <stdatomic.h>

#include "lib/util.h"

#define GP_HISTO_BUCKETS 14

typedef struct gp_histo {
    atomic_ulong bucket[GP_HISTO_BUCKETS];   /* non-cumulative; last = +Inf */
    atomic_ulong count;
    atomic_ullong sum_ns;
} gp_histo;

/* Records one observation in seconds. Thread-safe. */
void metrics_observe(gp_histo *h, double seconds);

/* Appends a histogram in Prometheus text format. labels: `verb="filter"` or "". */
void metrics_render_histo(gp_buf *out, const char *name, const char *labels, const gp_histo *h);

/* Appends "# HELP"/"# TYPE" lines. */
void metrics_header(gp_buf *out, const char *name, const char *type, const char *help);

#endif
