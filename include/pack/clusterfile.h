/* clusterfile.h -- the embedded cluster: a Kubernetes List of Nodes (and Pods
 * holding GPU assignments), YAML or JSON, as `kubectl get nodes,pods -o yaml`
 * prints it, loaded into the store. */
#ifndef GP_CLUSTERFILE_H
#define GP_CLUSTERFILE_H

#include <jansson.h>

#include "pack/cluster.h"
#include "lib/util.h"

typedef struct gp_clusterfile_stats {
    int nodes, gpus, pods;
} gp_clusterfile_stats;

/* Loads docs (an array of YAML documents; each a List/NodeList/PodList or a
 * single Node or Pod) into c. Nodes whose inventory is malformed are loaded
 * without GPUs and reported in the log. Returns 0, or -1 with a message for
 * documents that are not Kubernetes objects. */
int clusterfile_apply(gp_cluster *c, const json_t *docs, int64_t aliyun_unit_mib,
                      gp_clusterfile_stats *stats, gp_err *err) GP_WUR;

/* Reads and applies a file. */
int clusterfile_load(gp_cluster *c, const char *path, int64_t aliyun_unit_mib,
                     gp_clusterfile_stats *stats, gp_err *err) GP_WUR;

#endif
