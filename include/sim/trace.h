/* trace.h -- readers for the Alibaba "openb" GPU-sharing trace CSVs (shared/traces/),
 * and their mapping onto gpupack's data model.
 *
 * Columns are found by name in the header line, so column order and extra
 * columns do not matter. Parsing is bounded (line length, field length, row
 * count) and every error names file:line and what is wrong. Pure apart from
 * reading the named file; thread-safe. */
#ifndef GP_TRACE_H
#define GP_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"
#include "pack/placement.h"
#include "lib/util.h"

#define TRACE_LINE_MAX 4096       /* longer lines are an error */
#define TRACE_ROWS_MAX 10000000   /* more rows are an error */
#define TRACE_NAME_MAX 128        /* pod/node names longer than this are an error */

/* One node row: `sn,cpu_milli,memory_mib,gpu,model`. */
typedef struct trace_node {
    char name[TRACE_NAME_MAX];
    int64_t cpu_milli;
    int64_t mem_mib;              /* host memory */
    int gpus;
    char model[GP_MODEL_MAX];     /* "" for CPU-only nodes */
    int64_t gpu_mem_mib;          /* per GPU, from the model table; 0 without GPUs */
} trace_node;

/* One pod row: `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...,
 * creation_time,deletion_time,...]`. */
typedef struct trace_pod {
    char name[TRACE_NAME_MAX];
    int64_t cpu_milli;
    int64_t mem_mib;              /* host memory */
    int num_gpu;                  /* 0 = CPU-only */
    int gpu_milli;                /* per GPU, 0..1000 */
    char gpu_spec[GP_MODELS_MAX]; /* '|'-separated allowed models; "" = any */
    bool has_times;               /* creation/deletion columns were present and set */
    int64_t creation;             /* seconds from trace start */
    int64_t deletion;             /* -1 when the pod never leaves */
} trace_pod;

/* Kinds of pods, for failure accounting. */
typedef enum {
    TRACE_KIND_CPU = 0,   /* num_gpu 0 */
    TRACE_KIND_SHARE,     /* one GPU, gpu_milli < 1000 */
    TRACE_KIND_GPU1,
    TRACE_KIND_GPU2,
    TRACE_KIND_GPU4,
    TRACE_KIND_GPU8,
    TRACE_KIND_OTHER,     /* any other whole-GPU count */
    TRACE_KIND_COUNT
} trace_kind;

/* Short name of a kind ("cpu", "share", "1gpu", ...). */
const char *trace_kind_name(trace_kind k);
trace_kind trace_pod_kind(const trace_pod *p);

/* GPU memory (MiB) of a trace model name (T4, P100, ..., G1..G3); 0 when unknown. */
int64_t trace_model_mem_mib(const char *model);

/* Read a node/pod list. On success *out is an owned array of *n rows (free
 * with free()); on failure returns -1 with "file:line: what" in err. */
int trace_load_nodes(const char *path, trace_node **out, size_t *n, gp_err *err) GP_WUR;
int trace_load_pods(const char *path, trace_pod **out, size_t *n, gp_err *err) GP_WUR;

/* A node row as placement sees it: `gpus` GPUs of the row's model (memory
 * from the model table, compute GP_CORE_FULL, healthy, indices 0..n-1), CPU and
 * host memory allocatable from the row, nothing used. */
void trace_node_to_gp(const trace_node *t, gp_node *out);

/* A pod row as gpupack's request: CPU-only pods get nctrs == 0 (they only
 * need CPU and host memory); GPU pods get one container of `num_gpu` GPUs
 * with core = gpu_milli per GPU and the same share of each GPU's memory
 * (mem_ppm, GP_ASK_SHARE: rounded up), and gpu_spec as the model constraint.
 * `name` becomes the pod and container name. */
void trace_pod_to_req(const trace_pod *p, const char *name, gp_pod_req *out);

/* Total GPU request of a pod in milli (num_gpu x gpu_milli). */
int64_t trace_pod_gpu_milli(const trace_pod *p);

/* The task shapes of the fragmentation measure (frag.h), from a trace: the
 * paper's "typical pods", distinct (CPU, GPUs, share, allowed models)
 * shapes of a pod list by popularity, the most popular ones until `coverage`
 * (0..1] of pods (at most GP_MAX_SHAPES), weights renormalised to sum to 1.
 * `with_cpu` keeps the CPU request in the shape (and CPU-only pods as shapes).
 * `by_gpus` counts a multi-GPU pod once per GPU (popularity by GPU demand
 * rather than by pod count; the paper counts pods). */
void trace_shapes(const trace_pod *pods, size_t n, double coverage, bool with_cpu, bool by_gpus,
                  gp_shapes *out);

#endif
