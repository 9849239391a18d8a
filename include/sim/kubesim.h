/* kubesim.h -- kube-scheduler v1.26's node search and scoring arithmetic, as pure
 * functions, for the simulator (pkg/scheduler/schedule_one.go and
 * framework/plugins/noderesources; docs/simulator.md cites each piece). */
#ifndef GP_KUBESIM_H
#define GP_KUBESIM_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/schedcfg.h"

#define KUBESIM_MAX_NODE_SCORE 100      /* framework.MaxNodeScore */
#define KUBESIM_MAX_EXTENDER_PRIORITY 10 /* extenderv1.MaxExtenderPriority */
#define KUBESIM_MIN_FEASIBLE 100         /* minFeasibleNodesToFind */
#define KUBESIM_MIN_PCT 5                /* minFeasibleNodesPercentageToFind */
#define KUBESIM_DEFAULT_MILLI_CPU 100    /* schedutil.DefaultMilliCPURequest */
#define KUBESIM_DEFAULT_MEMORY_MIB 200   /* schedutil.DefaultMemoryRequest (200 MiB) */

/* numFeasibleNodesToFind: how many nodes passing the filter plugins end the
 * search. pct 0 = adaptive (50 - n/125, at least 5); never fewer than 100. */
int kubesim_num_feasible(int pct, int nall);

/* One resource: leastRequestedScore / mostRequestedScore (0..100, integer). */
int64_t kubesim_least_requested(int64_t requested, int64_t capacity);
int64_t kubesim_most_requested(int64_t requested, int64_t capacity);

/* helper.BuildBrokenLinearFunction over the configured shape (scores 0..10
 * scaled to 0..100), at utilisation p (0..100). */
int64_t kubesim_shape_at(const schedcfg *c, int64_t p);

/* NodeResourcesFit's score with c's strategy. requested[i] / alloc[i] belong to
 * c->fit_res[i]; alloc 0 means the resource is left out (as kube does for an
 * extended resource the pod does not ask for). */
int64_t kubesim_fit_score(const schedcfg *c, const int64_t *requested, const int64_t *alloc);

/* NodeResourcesBalancedAllocation over n resources (alloc 0 left out). */
int64_t kubesim_balanced_score(const int64_t *requested, const int64_t *alloc, int n);

/* What an extender's 0..10 score adds to a node's total: score x weight x
 * (MaxNodeScore / MaxExtenderPriority). */
int64_t kubesim_extender_score(int64_t score, int weight);

/* HTTPExtender.IsInterested: true without managedResources, else when the
 * pod asks (requests or limits, any container) one of them. */
bool kubesim_interested(const schedcfg *c, const char *const *pod_resources, int n);

/* Whether NodeResourcesFit's filter checks extended resource `name` on the
 * node: false when it is in ignoredResources, its group (prefix before '/')
 * in ignoredResourceGroups, or a managed resource with ignoredByScheduler. */
bool kubesim_checks_resource(const schedcfg *c, const char *name);

#endif
