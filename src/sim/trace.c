/* trace.c -- bounded CSV readers for the openb trace, and the mapping of its rows
 * onto gpupack nodes and pod requests. */
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_COLS 32

/* GPU memory per model, MiB: the figures of the paper's simulator. */
static const struct {
    const char *model;
    int64_t mib;
} model_mem[] = {
    {"T4", 15109},      {"P100", 16280}, {"V100M16", 16160}, {"V100M32", 32510},
    {"A10", 22731},     {"A100", 81251}, {"G1", 10000},      {"G2", 20000},
    {"G3", 30000},
};

static const char *const kind_names[TRACE_KIND_COUNT] = {
    "cpu", "share", "1gpu", "2gpu", "4gpu", "8gpu", "other",
};

const char *trace_kind_name(trace_kind k)
{
    return (k >= 0 && k < TRACE_KIND_COUNT) ? kind_names[k] : "?";
}

trace_kind trace_pod_kind(const trace_pod *p)
{
    if (p->num_gpu == 0)
        return TRACE_KIND_CPU;
    if (p->num_gpu == 1 && p->gpu_milli < GP_CORE_FULL)
        return TRACE_KIND_SHARE;
    switch (p->num_gpu) {
    case 1:
        return TRACE_KIND_GPU1;
    case 2:
        return TRACE_KIND_GPU2;
    case 4:
        return TRACE_KIND_GPU4;
    case 8:
        return TRACE_KIND_GPU8;
    default:
        return TRACE_KIND_OTHER;
    }
}

int64_t trace_model_mem_mib(const char *model)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(model_mem); i++)
        if (strcasecmp(model_mem[i].model, model) == 0)
            return model_mem[i].mib;
    return 0;
}

int64_t trace_pod_gpu_milli(const trace_pod *p)
{
    return (int64_t)p->num_gpu * p->gpu_milli;
}

/* ------------------------------------------------------------ reading -- */

typedef struct reader {
    const char *path;
    FILE *f;
    long line;
    char buf[TRACE_LINE_MAX + 2];
    char *cols[MAX_COLS];
    int ncols;
} reader;

/* Reads the next non-empty line and splits it at commas (in place).
 * Returns 1 with a row, 0 at end of file, -1 on error. */
static int next_row(reader *r, gp_err *err)
{
    for (;;) {
        if (!fgets(r->buf, sizeof r->buf, r->f)) {
            if (ferror(r->f))
                return gp_fail(err, "%s:%ld: read error: %s", r->path, r->line + 1,
                               strerror(errno));
            return 0;
        }
        r->line++;
        size_t len = strlen(r->buf);
        if (len > 0 && r->buf[len - 1] == '\n')
            r->buf[--len] = '\0';
        else if (!feof(r->f))
            return gp_fail(err, "%s:%ld: line longer than %d bytes", r->path, r->line,
                           TRACE_LINE_MAX);
        if (len > 0 && r->buf[len - 1] == '\r')
            r->buf[--len] = '\0';
        if (len == 0)
            continue;
        r->ncols = 0;
        char *p = r->buf;
        for (;;) {
            if (r->ncols == MAX_COLS)
                return gp_fail(err, "%s:%ld: more than %d columns", r->path, r->line, MAX_COLS);
            r->cols[r->ncols++] = p;
            char *comma = strchr(p, ',');
            if (!comma)
                break;
            *comma = '\0';
            p = comma + 1;
        }
        return 1;
    }
}

static int col_index(const reader *r, const char *name)
{
    for (int i = 0; i < r->ncols; i++)
        if (strcmp(r->cols[i], name) == 0)
            return i;
    return -1;
}

static int parse_i64(const reader *r, const char *col, const char *s, int64_t lo, int64_t hi,
                     int64_t *out, gp_err *err)
{
    if (!*s)
        return gp_fail(err, "%s:%ld: column %s is empty", r->path, r->line, col);
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return gp_fail(err, "%s:%ld: column %s: \"%.40s\" is not an integer", r->path, r->line,
                       col, s);
    if (v < lo || v > hi)
        return gp_fail(err, "%s:%ld: column %s: %lld is outside %lld..%lld", r->path, r->line,
                       col, v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

static int copy_field(const reader *r, const char *col, const char *s, char *dst, size_t cap,
                      gp_err *err)
{
    if (strlen(s) >= cap)
        return gp_fail(err, "%s:%ld: column %s longer than %zu bytes", r->path, r->line, col,
                       cap - 1);
    gp_strlcpy(dst, s, cap);
    return 0;
}

static int open_reader(reader *r, const char *path, gp_err *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->f = fopen(path, "r");
    if (!r->f)
        return gp_fail(err, "%s: %s", path, strerror(errno));
    int rc = next_row(r, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return gp_fail(err, "%s: empty file (a header line is needed)", path);
    return 0;
}

/* Finds the named header columns; required ones must exist. */
static int map_columns(reader *r, const char *const *names, const bool *required, int n,
                       int *idx, gp_err *err)
{
    for (int i = 0; i < n; i++) {
        idx[i] = col_index(r, names[i]);
        if (idx[i] < 0 && required[i])
            return gp_fail(err, "%s:%ld: header has no column \"%s\"", r->path, r->line,
                           names[i]);
    }
    return 0;
}

static const char *field(const reader *r, int idx)
{
    return (idx >= 0 && idx < r->ncols) ? r->cols[idx] : NULL;
}

static int need_field(const reader *r, int idx, const char *col, const char **out, gp_err *err)
{
    *out = field(r, idx);
    if (!*out)
        return gp_fail(err, "%s:%ld: row has %d columns, column %s is missing", r->path, r->line,
                       r->ncols, col);
    return 0;
}

/* Decodes one row into *elem (zeroed). Returns 0, or -1 with a message. */
typedef int (*row_fn)(reader *r, const int *idx, void *elem, const char *path, gp_err *err);

#define TABLE_COLS_MAX 16

/* The frame both tables share: columns by name, rows bounded and decoded by
 * `row` into a growing array of elem_size elements. */
static int load_table(const char *path, const char *const *names, const bool *required, int ncols,
                      size_t elem_size, row_fn row, const char *what, void **out, size_t *n,
                      gp_err *err)
{
    reader r;
    char *v = NULL;
    size_t len = 0, cap = 0;
    int idx[TABLE_COLS_MAX];
    int rc = -1;

    *out = NULL;
    *n = 0;
    if (open_reader(&r, path, err) < 0)
        goto done;
    if (map_columns(&r, names, required, ncols, idx, err) < 0)
        goto done;
    for (;;) {
        int got = next_row(&r, err);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
        if (len == TRACE_ROWS_MAX) {
            gp_fail(err, "%s:%ld: more than %d rows", path, r.line, TRACE_ROWS_MAX);
            goto done;
        }
        if (len == cap) {
            cap = cap ? cap * 2 : 1024;
            v = xrealloc(v, cap * elem_size);
        }
        void *e = v + len * elem_size;
        memset(e, 0, elem_size);
        if (row(&r, idx, e, path, err) < 0)
            goto done;
        len++;
    }
    if (len == 0) {
        gp_fail(err, "%s: no %s rows", path, what);
        goto done;
    }
    *out = v;
    *n = len;
    v = NULL;
    rc = 0;
done:
    free(v);
    if (r.f)
        fclose(r.f);
    return rc;
}

enum { N_SN, N_CPU, N_MEM, N_GPU, N_MODEL, N_NCOLS };

static int node_row(reader *r, const int *idx, void *elem, const char *path, gp_err *err)
{
    trace_node *t = elem;
    const char *s;
    int64_t x;
    if (need_field(r, idx[N_SN], "sn", &s, err) < 0 ||
        copy_field(r, "sn", s, t->name, sizeof t->name, err) < 0)
        return -1;
    if (!t->name[0])
        return gp_fail(err, "%s:%ld: column sn is empty", path, r->line);
    if (need_field(r, idx[N_CPU], "cpu_milli", &s, err) < 0 ||
        parse_i64(r, "cpu_milli", s, 0, INT64_C(1) << 40, &t->cpu_milli, err) < 0)
        return -1;
    if (need_field(r, idx[N_MEM], "memory_mib", &s, err) < 0 ||
        parse_i64(r, "memory_mib", s, 0, INT64_C(1) << 40, &t->mem_mib, err) < 0)
        return -1;
    if (need_field(r, idx[N_GPU], "gpu", &s, err) < 0 ||
        parse_i64(r, "gpu", s, 0, GP_MAX_GPUS_PER_NODE, &x, err) < 0)
        return -1;
    t->gpus = (int)x;
    s = field(r, idx[N_MODEL]);
    if (s && copy_field(r, "model", s, t->model, sizeof t->model, err) < 0)
        return -1;
    if (t->gpus > 0) {
        t->gpu_mem_mib = trace_model_mem_mib(t->model);
        if (t->gpu_mem_mib == 0)
            return gp_fail(err,
                           "%s:%ld: unknown GPU model \"%s\" (known: T4 P100 V100M16 V100M32 A10 "
                           "A100 G1 G2 G3)",
                           path, r->line, t->model);
    }
    return 0;
}

int trace_load_nodes(const char *path, trace_node **out, size_t *n, gp_err *err)
{
    static const char *const names[N_NCOLS] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
    static const bool required[N_NCOLS] = {true, true, true, true, false};
    void *v;
    int rc = load_table(path, names, required, N_NCOLS, sizeof(trace_node), node_row, "node", &v,
                        n, err);
    *out = v;
    return rc;
}

enum { P_NAME, P_CPU, P_MEM, P_NGPU, P_MILLI, P_SPEC, P_CTIME, P_DTIME, P_NCOLS };

static int pod_row(reader *r, const int *idx, void *elem, const char *path, gp_err *err)
{
    trace_pod *p = elem;
    p->deletion = -1;
    const char *s;
    int64_t x;
    if (need_field(r, idx[P_NAME], "name", &s, err) < 0 ||
        copy_field(r, "name", s, p->name, sizeof p->name, err) < 0)
        return -1;
    if (need_field(r, idx[P_CPU], "cpu_milli", &s, err) < 0 ||
        parse_i64(r, "cpu_milli", s, 0, INT64_C(1) << 40, &p->cpu_milli, err) < 0)
        return -1;
    if (need_field(r, idx[P_MEM], "memory_mib", &s, err) < 0 ||
        parse_i64(r, "memory_mib", s, 0, INT64_C(1) << 40, &p->mem_mib, err) < 0)
        return -1;
    if (need_field(r, idx[P_NGPU], "num_gpu", &s, err) < 0 ||
        parse_i64(r, "num_gpu", s, 0, GP_MAX_GPUS_PER_CTR, &x, err) < 0)
        return -1;
    p->num_gpu = (int)x;
    if (need_field(r, idx[P_MILLI], "gpu_milli", &s, err) < 0 ||
        parse_i64(r, "gpu_milli", s, 0, GP_CORE_FULL, &x, err) < 0)
        return -1;
    p->gpu_milli = (int)x;
    if (p->num_gpu == 0 && p->gpu_milli != 0)
        return gp_fail(err, "%s:%ld: gpu_milli %d with num_gpu 0", path, r->line, p->gpu_milli);
    if (p->num_gpu > 0 && p->gpu_milli == 0)
        return gp_fail(err, "%s:%ld: num_gpu %d with gpu_milli 0", path, r->line, p->num_gpu);
    if (p->num_gpu > 1 && p->gpu_milli < GP_CORE_FULL)
        return gp_fail(err, "%s:%ld: gpu_milli %d below 1000 needs num_gpu 1 (has %d)", path,
                       r->line, p->gpu_milli, p->num_gpu);
    s = field(r, idx[P_SPEC]);
    if (s && copy_field(r, "gpu_spec", s, p->gpu_spec, sizeof p->gpu_spec, err) < 0)
        return -1;
    const char *ct = field(r, idx[P_CTIME]);
    const char *dt = field(r, idx[P_DTIME]);
    if (ct && *ct) {
        if (parse_i64(r, "creation_time", ct, 0, INT64_MAX, &p->creation, err) < 0)
            return -1;
        p->has_times = true;
        if (dt && *dt) {
            if (parse_i64(r, "deletion_time", dt, 0, INT64_MAX, &p->deletion, err) < 0)
                return -1;
            if (p->deletion < p->creation)
                return gp_fail(err, "%s:%ld: deletion_time %lld before creation_time %lld", path,
                               r->line, (long long)p->deletion, (long long)p->creation);
        }
    }
    return 0;
}

int trace_load_pods(const char *path, trace_pod **out, size_t *n, gp_err *err)
{
    static const char *const names[P_NCOLS] = {"name",     "cpu_milli",     "memory_mib",
                                               "num_gpu",  "gpu_milli",     "gpu_spec",
                                               "creation_time", "deletion_time"};
    static const bool required[P_NCOLS] = {true, true, true, true, true, false, false, false};
    void *v;
    int rc = load_table(path, names, required, P_NCOLS, sizeof(trace_pod), pod_row, "pod", &v, n,
                        err);
    *out = v;
    return rc;
}

/* ------------------------------------------------------------ mapping -- */

void trace_node_to_gp(const trace_node *t, gp_node *out)
{
    memset(out, 0, sizeof *out);
    gp_strlcpy(out->name, t->name, sizeof out->name);
    gp_strlcpy(out->source, "trace", sizeof out->source);
    out->ngpus = t->gpus;
    for (int i = 0; i < t->gpus; i++) {
        gp_gpu_info *g = &out->gpus[i].info;
        g->index = i;
        g->model = gp_model_intern(t->model);
        g->mem_total = t->gpu_mem_mib;
        g->core_total = GP_CORE_FULL;
        g->healthy = true;
    }
    out->cpu_alloc_milli = t->cpu_milli;
    out->host_mem_alloc_mib = t->mem_mib;
}

void trace_pod_to_req(const trace_pod *p, const char *name, gp_pod_req *out)
{
    memset(out, 0, sizeof *out);
    gp_strlcpy(out->ns, "trace", sizeof out->ns);
    gp_strlcpy(out->name, name, sizeof out->name);
    gp_strlcpy(out->uid, name, sizeof out->uid);
    gp_strlcpy(out->models, p->gpu_spec, sizeof out->models);
    out->cpu_milli = p->cpu_milli;
    out->host_mem_mib = p->mem_mib;
    if (p->num_gpu == 0)
        return;
    out->nctrs = 1;
    gp_ctr_req *c = &out->ctrs[0];
    gp_strlcpy(c->name, name, sizeof c->name);
    c->count = p->num_gpu;
    c->mem_ppm = p->gpu_milli * (GP_PPM_FULL / 1000);
    c->ask = GP_ASK_SHARE;
    c->core = p->gpu_milli;
}

/* ------------------------------------------------------ typical shapes -- */

typedef struct shape_count {
    int64_t cpu;
    int count;
    int core;
    const char *models;
    long pods;
} shape_count;

/* Most popular first; ties by the larger request, for a stable order. */
static int cmp_shape_count(const void *pa, const void *pb)
{
    const shape_count *a = pa, *b = pb;
    if (a->pods != b->pods)
        return a->pods > b->pods ? -1 : 1;
    if (a->cpu != b->cpu)
        return a->cpu > b->cpu ? -1 : 1;
    if (a->core != b->core)
        return a->core > b->core ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return -strcmp(a->models, b->models);
}

void trace_shapes(const trace_pod *pods, size_t n, double coverage, bool with_cpu,
                            bool by_gpus, gp_shapes *out)
{
    memset(out, 0, sizeof *out);
    shape_count *sc = NULL;
    size_t ns = 0, cap = 0;
    long total = 0;
    for (size_t i = 0; i < n; i++) {
        const trace_pod *p = &pods[i];
        if (!with_cpu && p->num_gpu == 0)
            continue;
        int64_t cpu = with_cpu ? p->cpu_milli : 0;
        size_t k = 0;
        while (k < ns && !(sc[k].cpu == cpu && sc[k].count == p->num_gpu &&
                           sc[k].core == p->gpu_milli && strcmp(sc[k].models, p->gpu_spec) == 0))
            k++;
        if (k == ns) {
            if (ns == cap) {
                cap = cap ? cap * 2 : 64;
                sc = xrealloc(sc, cap * sizeof *sc);
            }
            sc[ns++] = (shape_count){cpu, p->num_gpu, p->gpu_milli, p->gpu_spec, 0};
        }
        long w = (by_gpus && p->num_gpu > 1) ? p->num_gpu : 1;
        sc[k].pods += w;
        total += w;
    }
    if (ns == 0) {
        free(sc);
        return;
    }
    qsort(sc, ns, sizeof *sc, cmp_shape_count);
    if (coverage <= 0 || coverage > 1)
        coverage = 1;
    long cum = 0;
    for (size_t k = 0; k < ns && out->n < GP_MAX_SHAPES; k++) {
        if ((double)cum >= coverage * (double)total)
            break;
        gp_shape *m = &out->s[out->n++];
        m->count = sc[k].count;
        m->core = sc[k].core;
        m->cpu_milli = sc[k].cpu;
        gp_strlcpy(m->models, sc[k].models, sizeof m->models);
        m->weight = (double)sc[k].pods;
        cum += sc[k].pods;
    }
    for (int k = 0; k < out->n; k++)
        out->s[k].weight /= (double)cum;
    free(sc);
}
