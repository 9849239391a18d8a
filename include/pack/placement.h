/* placement.h -- fitting one pod onto one node's GPUs, and scoring the node.
 *
 * Pure: takes a node snapshot and a request, returns an assignment and a
 * score. No locks, no I/O; the cluster store calls it under its lock, the
 * simulator calls it directly. Strategies are table entries (see
 * placement_gpu_strategies / placement_node_strategies); adding one is adding
 * a row. */
#ifndef GP_PLACEMENT_H
#define GP_PLACEMENT_H

#include "lib/keycache.h"
#include "model/gpu.h"
#include "lib/util.h"

/* Tentative state of one node while a pod's containers are placed on it. */
typedef struct gp_place_ctx gp_place_ctx;
typedef struct gp_place_opts gp_place_opts;

/* Chooses among the GPUs that fit one container: lower cost wins, ties go
 * to the lower device index. */
typedef double (*gp_gpu_cost_fn)(const gp_place_ctx *ctx, int pos, const gp_ctr_req *req);
/* Raw node preference after a successful fit: higher is better. Compared
 * across nodes only for the same pod. */
typedef double (*gp_node_score_fn)(const gp_node *node, const gp_pod_req *req,
                                   const gp_assignment *a, const gp_place_opts *opts);

typedef struct gp_gpu_strategy {
    const char *name;
    const char *doc;
    gp_gpu_cost_fn cost;
    /* choices depend on the node's identity (its name), not only on its GPU
     * state: two nodes in the same state may be placed differently, so their
     * results must not be shared (see extender.c's per-request memo) */
    bool per_node;
} gp_gpu_strategy;

typedef struct gp_node_strategy {
    const char *name;
    const char *doc;
    gp_node_score_fn score;
} gp_node_strategy;

/* The task-shape distribution fragmentation-aware strategies reason about:
 * shapes (GPUs, per-GPU compute per-mille) with popularity weights summing to 1. */
#define GP_MAX_SHAPES 64
typedef struct gp_shape {
    int count;
    int core;        /* per-mille per GPU */
    double weight;
    int64_t cpu_milli;            /* host CPU the shape needs; 0 = not considered */
    char models[GP_MODELS_MAX];   /* '|'-separated models it accepts; "" = any */
} gp_shape;

typedef struct gp_shapes {
    int n;
    gp_shape s[GP_MAX_SHAPES];
} gp_shapes;

struct gp_place_opts {
    const gp_gpu_strategy *gpu;       /* NULL = best-fit */
    const gp_node_strategy *node;     /* NULL = binpack */
    int64_t reserve_mem_mib;          /* per GPU, never handed out */
    int max_pods_per_gpu;             /* 0 = no limit */
    double w_mem, w_core;             /* weights in utilisation scores; both 0 = 1,1 */
    char models[GP_MODELS_MAX];       /* policy-allowed GPU models; "" = any */
    const gp_shapes *shapes;          /* for fragmentation-aware; NULL = built-in default */
    /* Not a setting: optional memory for the parts of a node's score that
     * depend on its state alone (the look-ahead of the node as it is), kept
     * across calls under the node's state fingerprint and `salt`, which the
     * owner derives from the settings above (extender.c). NULL: computed each
     * time (the simulator, explain, the bind re-check). */
    const struct gp_score_memo *memo;
};

typedef struct gp_score_memo {
    gp_keycache *cache;
    uint64_t salt;
} gp_score_memo;

/* Defaults: best-fit GPUs, binpack nodes, no reserve, no limits, weights 1/1. */
void placement_default_opts(gp_place_opts *o);

/* What the tentative state offers to strategies. */
const gp_node *place_ctx_node(const gp_place_ctx *ctx);
int64_t place_ctx_mem_free(const gp_place_ctx *ctx, int pos);
int place_ctx_core_free(const gp_place_ctx *ctx, int pos);
const gp_place_opts *place_ctx_opts(const gp_place_ctx *ctx);

/* Why a pod does not fit a node: a sentence a person can act on, and whether
 * it could never fit (even with every GPU of the node free). */
typedef struct gp_fit_fail {
    bool unresolvable;
    char reason[256];
} gp_fit_fail;

/* Places every GPU container of req on node. Returns 0 and fills *out, or -1
 * and fills *why (when non-NULL). The node is not modified. */
int placement_fit(const gp_node *node, const gp_pod_req *req, const gp_place_opts *opts,
                  gp_assignment *out, gp_fit_fail *why) GP_WUR;

/* Raw node score for a fitted assignment (node strategy of opts). */
double placement_node_score(const gp_node *node, const gp_pod_req *req,
                            const gp_assignment *a, const gp_place_opts *opts);

/* Maps raw scores of the fitting nodes to kube-scheduler's 0..10: the best
 * gets 10, the worst 0, linear between; all equal -> 10. In place. */
void placement_normalize(const double *raw, int n, int *scores);

/* True when nodes a and b are in the same state for placement: same GPUs
 * (inventory and use), same host resources. Their fit and score for one
 * request are then the same, unless the GPU strategy is per_node. */
bool placement_same_state(const gp_node *a, const gp_node *b);
/* A 64-bit fingerprint of what placement_same_state compares; never 0. */
uint64_t placement_state_hash(const gp_node *n);

/* Strategy tables and lookup by name (NULL when unknown). */
const gp_gpu_strategy *placement_gpu_strategy(const char *name);
const gp_node_strategy *placement_node_strategy(const char *name);
/* NULL-terminated name lists, for validation messages and docs. */
const char *const *placement_gpu_strategy_names(void);
const char *const *placement_node_strategy_names(void);

/* Adds (sign 1) or removes (-1) one hold on the GPU at position pos: memory,
 * compute and pods, and for a claim's share (h->dra) what DRA's allocator
 * counts too. The one place this arithmetic lives (the store, victim search,
 * preemption's node copies). */
void placement_hold(gp_node *node, int pos, const gp_hold *h, int sign);

/* Applies / removes an assignment's holds on a node's GPU counters (the store
 * and the simulator share this arithmetic). Returns 0, or -1 when a GPU index
 * is not on the node (nothing is changed then). */
int placement_apply(gp_node *node, const gp_assignment *a, int sign) GP_WUR;

#endif
