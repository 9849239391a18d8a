/* metrics.h -- Prometheus text: how every module writes its metrics.
 *
 * A module that has metrics owns its counters and renders them itself with a
 * writer of type metrics_fn: `void x_metrics(void *x, gp_buf *out)` (x is the
 * module's own handle; NULL writes nothing unless the module says otherwise).
 * main and the server only list the writers in a gp_metrics, in page order,
 * and render them into one /metrics page. Writers append through the helpers
 * below only, so the page has one style:
 *
 *   # HELP name help
 *   # TYPE name counter|gauge|histogram
 *   name{k1="v1",k2="v2"} value
 *
 * A writer appends and never checks: a failure sticks in `out` (gp_buf) and
 * the page's owner checks it once. Label values that come from outside
 * (node, model, identity) go through metrics_label_value first. */
#ifndef GP_METRICS_H
#define GP_METRICS_H

#include <stdatomic.h>

#include "lib/util.h"

/* ------------------------------------------------------------ writers -- */

typedef void (*metrics_fn)(void *ud, gp_buf *out);

#define METRICS_WRITERS_MAX 32

/* An ordered list of writers; zero-initialise it (or metrics_init). Holds
 * borrowed ud pointers: they must outlive every metrics_write. Fill it before
 * serving; metrics_write may then run on any thread. */
typedef struct gp_metrics {
    int n;
    struct {
        metrics_fn fn;
        void *ud;
    } w[METRICS_WRITERS_MAX];
} gp_metrics;

void metrics_init(gp_metrics *m);
/* Appends a writer; more than METRICS_WRITERS_MAX is a programming error
 * (abort). */
void metrics_add(gp_metrics *m, metrics_fn fn, void *ud);
/* Runs every writer in order into out. m may be NULL (nothing). */
void metrics_write(const gp_metrics *m, gp_buf *out);

/* ------------------------------------------------------------ text -- */

/* "# HELP name help\n# TYPE name type\n". */
void metrics_header(gp_buf *out, const char *name, const char *type, const char *help);

/* One sample line `name{labels} value`. labels: preformatted `k="v",k2="v2"`,
 * or NULL / "" for none. _u and _i print integers, _f with `decimals`
 * digits after the point. */
void metrics_u(gp_buf *out, const char *name, const char *labels, unsigned long long v);
void metrics_i(gp_buf *out, const char *name, const char *labels, long long v);
void metrics_f(gp_buf *out, const char *name, const char *labels, int decimals, double v);

/* A label value made safe for the text format: printable ASCII, with '"',
 * '\\' and every other byte replaced by '_'; truncated to len - 1 bytes. */
void metrics_label_value(char *dst, size_t len, const char *s);

/* ------------------------------------------------------ histograms -- */

#define GP_HISTO_BUCKETS 14

typedef struct gp_histo {
    atomic_ulong bucket[GP_HISTO_BUCKETS];   /* non-cumulative; last = +Inf */
    atomic_ulong count;
    atomic_ullong sum_ns;
} gp_histo;

/* Records one observation in seconds. Thread-safe. */
void metrics_observe(gp_histo *h, double seconds);

/* Appends a histogram's samples (_bucket, _sum, _count); labels: `verb="filter"` or "". */
void metrics_render_histo(gp_buf *out, const char *name, const char *labels, const gp_histo *h);

#endif
