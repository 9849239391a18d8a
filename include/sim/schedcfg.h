/* schedcfg.h -- the parts of a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
 * that decide where kube-scheduler v1.26 puts a pod, read from YAML. Pure (no I/O
 * besides schedcfg_load reading the file).
 *
 * What is read (everything else in the file is accepted and ignored):
 *   percentageOfNodesToScore, top level and profiles[0] (the profile's wins);
 *   profiles[0].plugins.{multiPoint,score}.{enabled,disabled}: the weights of
 *     NodeResourcesFit and NodeResourcesBalancedAllocation ("*" disables all);
 *   profiles[0].pluginConfig: NodeResourcesFit.{scoringStrategy, ignoredResources,
 *     ignoredResourceGroups}, NodeResourcesBalancedAllocation.resources;
 *   extenders[0]: weight, filterVerb, prioritizeVerb, bindVerb, managedResources.
 * Defaults are v1.26's (apis/config/v1/default_plugins.go, defaults.go). */
#ifndef GP_SCHEDCFG_H
#define GP_SCHEDCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/util.h"

#define SCHEDCFG_NAME_MAX 128
#define SCHEDCFG_MAX_RES 8       /* scoring resources per plugin */
#define SCHEDCFG_MAX_NAMES 32    /* ignored resources, groups, managed resources */
#define SCHEDCFG_MAX_SHAPE 11    /* requestedToCapacityRatio points (kube allows 0..100 step) */

typedef enum {
    SCHEDCFG_LEAST_ALLOCATED = 0,
    SCHEDCFG_MOST_ALLOCATED,
    SCHEDCFG_REQUESTED_TO_CAPACITY_RATIO,
} schedcfg_strategy;

typedef struct schedcfg_res {
    char name[SCHEDCFG_NAME_MAX];
    int64_t weight;
} schedcfg_res;

typedef struct schedcfg_managed {
    char name[SCHEDCFG_NAME_MAX];
    bool ignored_by_scheduler;
} schedcfg_managed;

typedef struct schedcfg {
    int pct;                          /* percentageOfNodesToScore; 0 = adaptive */
    /* NodeResourcesFit scoring */
    int w_fit;                        /* plugin weight; 0 = score disabled */
    schedcfg_strategy strategy;
    schedcfg_res fit_res[SCHEDCFG_MAX_RES];
    int nfit_res;
    int shape_util[SCHEDCFG_MAX_SHAPE], shape_score[SCHEDCFG_MAX_SHAPE];   /* score 0..10 */
    int nshape;
    /* NodeResourcesFit filter: extended resources it does not check */
    char ignored[SCHEDCFG_MAX_NAMES][SCHEDCFG_NAME_MAX];
    int nignored;
    char ignored_groups[SCHEDCFG_MAX_NAMES][SCHEDCFG_NAME_MAX];
    int nignored_groups;
    /* NodeResourcesBalancedAllocation */
    int w_bal;
    schedcfg_res bal_res[SCHEDCFG_MAX_RES];
    int nbal_res;
    /* extenders[0] */
    bool has_extender;
    int ext_weight;
    bool ext_filter, ext_prioritize, ext_bind;
    schedcfg_managed managed[SCHEDCFG_MAX_NAMES];
    int nmanaged;
} schedcfg;

/* v1.26 defaults: adaptive percentage, NodeResourcesFit LeastAllocated on
 * cpu and memory (weights 1) with plugin weight 1, BalancedAllocation on cpu
 * and memory with weight 1, no extender. */
void schedcfg_defaults(schedcfg *out);

/* Parses the first document of a YAML/JSON stream. Returns 0, or -1 with
 * "what is wrong" in err (wrong apiVersion/kind, wrong types, out-of-range
 * values, more entries than the limits above). */
int schedcfg_parse(const char *text, size_t len, schedcfg *out, gp_err *err) GP_WUR;

/* Reads and parses a file; errors are prefixed with the path. */
int schedcfg_load(const char *path, schedcfg *out, gp_err *err) GP_WUR;

#endif
