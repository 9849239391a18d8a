/* inventory.h -- a Kubernetes Node (JSON) -> its physical GPUs. Pure.
 *
 * Sources, first found wins (docs/requests.md, "Where a node's GPUs come from"):
 *   1. annotation gpupack.io/gpus               (JSON array)
 *   2. annotation hami.io/node-nvidia-register  (HAMi, JSON array form)
 *   3. labels nvidia.com/gpu.count/.memory/.product (GPU feature discovery)
 *   4. capacity aliyun.com/gpu-count + aliyun.com/gpu-mem (split evenly)
 */
#ifndef GP_INVENTORY_H
#define GP_INVENTORY_H

#include <jansson.h>

#include "model/gpu.h"
#include "lib/util.h"

typedef struct gp_inventory {
    char source[16];                 /* "gpupack", "hami", "gfd", "aliyun", "" = none */
    int n;
    gp_gpu_info gpus[GP_MAX_GPUS_PER_NODE];   /* sorted by index */
    int64_t cpu_alloc_milli;         /* status.allocatable.cpu; 0 = unknown */
    int64_t mem_alloc_mib;           /* status.allocatable.memory; 0 = unknown */
} gp_inventory;

/* Reads a node's GPUs. Returns 0 (inv->n may be 0: no source present), or -1
 * with a message when the first present source is malformed (such a node
 * has no usable GPUs). aliyun_unit_mib: MiB per unit of aliyun.com/gpu-mem. */
int inventory_decode(const json_t *node, int64_t aliyun_unit_mib, gp_inventory *inv,
                     gp_err *err) GP_WUR;

/* Node name from metadata.name (borrowed), or NULL. */
const char *inventory_node_name(const json_t *node);

#endif
