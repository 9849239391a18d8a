/* clusterview.h -- cluster-wide figures for operators: GPU memory allocated,
 * idle GPUs, fragmentation (the simulator's definition, frag.c), allocation
 * per GPU model. Feeds /inspect's "summary", the /ui page and /metrics.
 *
 * The per-node accumulation is pure (tests feed gp_node structs); only
 * clusterview_of_cluster takes the store's read lock. */
#ifndef GP_CLUSTERVIEW_H
#define GP_CLUSTERVIEW_H

#include <jansson.h>

#include "pack/cluster.h"
#include "pack/placement.h"
#include "lib/util.h"

#define CLUSTERVIEW_MAX_MODELS 32   /* further models are summed under "other" */

typedef struct clusterview_model {
    char model[GP_MODEL_MAX];
    int gpus, gpus_idle;
    int64_t mem_total, mem_used;     /* MiB, healthy GPUs */
} clusterview_model;

typedef struct clusterview {
    size_t nodes, gpus, gpus_healthy, gpus_idle, gpus_full;
    int64_t mem_total, mem_used;     /* MiB, healthy GPUs */
    int64_t core_total, core_used;   /* per-mille, healthy GPUs */
    double frag, idle;               /* fragment and idle share, per-mille of a GPU (frag.c) */
    int nmodels;
    clusterview_model models[CLUSTERVIEW_MAX_MODELS];
} clusterview;

/* Zeroes v. */
void clusterview_init(clusterview *v);
/* Adds one node. `shapes` are the task shapes of the fragmentation measure
 * (NULL = frag_default_shapes()). Pure. */
void clusterview_add_node(clusterview *v, const gp_node *n, const gp_shapes *shapes);
/* Whole store, under its read lock. */
void clusterview_of_cluster(gp_cluster *c, const gp_shapes *shapes, clusterview *v);
/* Fragmentation as the simulator reports it: fragment / idle share (0 when
 * nothing is idle). */
double clusterview_frag_ratio(const clusterview *v);
/* {"nodes","gpus","gpusHealthy","gpusIdle","gpusFull","memoryMiB":{used,total},
 *  "corePercent":{used,total},"fragmentation":{"ratio","gpus"},"models":[...]}.
 * Returns owned json. */
json_t *clusterview_json(const clusterview *v);
/* Appends the gauges gpupack_gpus_idle, gpupack_gpu_fragmentation_ratio,
 * gpupack_gpu_fragment_gpus and gpupack_model_gpu_memory_mib{model,kind},
 * gpupack_model_gpus{model,state}. */
void clusterview_metrics(const clusterview *v, gp_buf *out);
/* metrics_fn (cluster: a gp_cluster *): the store's gauges (gpupack_nodes,
 * _gpus, _pods{state}, _pods_gpu_missing, _gpu_memory_mib{kind},
 * _gpu_core_percent{kind}), then clusterview_metrics over the whole store and
 * gpupack_node_gpu_memory_mib{node,kind} (two series per node). Takes the
 * store's read lock. */
void clusterview_store_metrics(void *cluster, gp_buf *out);

#endif
