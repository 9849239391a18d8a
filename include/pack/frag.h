/* frag.h -- GPU fragmentation (the measure of Weng et al., ATC '23, "Beware of
 * Fragmentation") and the placement strategies built on it: fragmentation-aware
 * node scoring and GPU choice (FGD), plus the paper's baselines (random fit,
 * best fit) as strategy functions for placement's tables.
 *
 * The measure: for a node and a task shape m (GPUs, per-GPU share, CPU, allowed
 * models), the node's idle GPU share counts as fragment when the node cannot
 * host m at all; when it can, only the GPUs that cannot serve m (free share
 * below m's per-GPU request, or of a model m does not allow) count. A node's
 * fragmentation is the popularity-weighted sum over the typical shapes.
 *
 * A GPU's free share is min(free compute, free memory as a share of its
 * allocatable memory), per-mille: a task asking x per-mille of compute and of
 * memory fits exactly when the free share is >= x. Pure and thread-safe. */
#ifndef GP_FRAG_H
#define GP_FRAG_H

#include <stddef.h>

#include "pack/placement.h"

/* What the measure needs of a node: each usable GPU's free share and model,
 * and the node's free CPU (-1 = unknown, never limits). */
typedef struct frag_view {
    int n;
    int free[GP_MAX_GPUS_PER_NODE];          /* per-mille of a whole GPU */
    gp_model_ref model[GP_MAX_GPUS_PER_NODE];
    int64_t cpu_free;
} frag_view;

/* Fills v from a node's counters (healthy GPUs only); `opts` gives the memory
 * reserve (may be NULL). */
void frag_view_of_node(const gp_node *node, const gp_place_opts *opts, frag_view *v);

/* The node's view after assignment `a` and the pod's CPU (`a` not yet applied). */
void frag_view_after(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                     const gp_place_opts *opts, frag_view *v);

/* Free share of one GPU, per-mille. */
int frag_gpu_free_share(const gp_gpu *g, int64_t mem_free, int core_free, const gp_place_opts *o);

/* Expected fragment of a node (per-mille of a GPU, weighted by shape
 * popularity), and its idle share (sum of free shares). */
double frag_amount(const frag_view *v, const gp_shapes *shapes);
int64_t frag_idle(const frag_view *v);

/* The built-in task-shape distribution (the openb default trace's GPU shapes
 * covering 95 % of GPU pods), used when a policy gives none. Static. */
const gp_shapes *frag_default_shapes(void);

/* ---- strategy functions for placement's tables (see placement.h) ---- */

/* GPU: the GPU whose use leaves the node's expected fragmentation lowest. */
double frag_gpu_cost_fgd(const gp_place_ctx *ctx, int pos, const gp_ctr_req *req);
/* GPU: a pseudo-random GPU, stable for a given container name, node and GPU
 * (the random-fit baseline; deterministic, so the live extender can use it). */
double frag_gpu_cost_random(const gp_place_ctx *ctx, int pos, const gp_ctr_req *req);

/* Node: decrease of expected fragmentation the placement causes (FGD). */
double frag_node_score_fgd(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                           const gp_place_opts *opts);
/* Node: FGD, decreases that differ by less than 10 per-mille taken as ties,
 * broken towards the node left with the least free share per GPU (best fit). */
double frag_node_score_fgd_bestfit(const gp_node *node, const gp_pod_req *req,
                                   const gp_assignment *a, const gp_place_opts *opts);
/* Node: the node left with the least free resources: GPU share plus CPU
 * weighted 1 GPU = 16 cores (the paper's best-fit baseline). */
double frag_node_score_best_fit(const gp_node *node, const gp_pod_req *req,
                                const gp_assignment *a, const gp_place_opts *opts);
/* Node: every fitting node scores the same (random fit: the caller's
 * tie-breaking, kube-scheduler's or the simulator's RNG, picks). */
double frag_node_score_none(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                            const gp_place_opts *opts);

#endif
