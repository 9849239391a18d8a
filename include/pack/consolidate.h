/* consolidate.h -- the fewest moves that make room for a waiting pod.
 *
 * Departures leave GPUs each holding a small share; a pod that needs a whole
 * GPU (or a large part of one) then fits nowhere although the free memory
 * adds up to many GPUs. Consolidation moves a few pods: each is evicted and
 * its controller makes a replacement, which lands where the plan held a
 * place for it. This is the planning half: pure, over node copies, no locks
 * and no I/O; the live service (sched/preempt.c) and the simulator (sim.c)
 * call it and carry the plan out themselves.
 *
 * A plan is accepted only when, at planning time,
 *   - the waiting pod fits its target node once the moved pods are gone, and
 *   - every moved pod fits again somewhere (another node, or another GPU of
 *     the same node), after the waiting pod took its place and the earlier
 *     moved pods took theirs.
 * Among the accepted plans: fewest moves, then fewest PodDisruptionBudget
 * violations, then the least memory moved, then the lowest priorities.
 *
 * The search: for each target node, subsets of the movers on it in order of
 * size (1, 2, .. max_moves), the movers least costly to move first (no
 * PDB violation, low priority, little memory), each subset checked as above,
 * within a budget of feasibility checks shared by all nodes. The first subset
 * that works on a node is that node's plan; once a plan of k moves exists,
 * other nodes are searched for fewer moves only (or as many, while the plan
 * breaks a PDB), so a one-move plan without PDB violations ends the search.
 *
 *   gp_consol_query q = {.nodes = copies, .nnodes = n, .req = &req, .opts = &opts,
 *                        .movers = m, .nmovers = k, .max_moves = 4};
 *   gp_consol_plan *plan = xmalloc(sizeof *plan);
 *   if (consolidate_plan(&q, plan) == 1) ... plan->moves[0..nmoves-1]
 */
#ifndef GP_CONSOLIDATE_H
#define GP_CONSOLIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"
#include "pack/placement.h"

#define GP_CONSOL_MOVES_MAX 16      /* moves one plan may make (KAI's limit too) */
#define GP_CONSOL_BUDGET_DEFAULT 20000

/* A pod that may be moved: the caller has checked that a controller
 * recreates it, its priority is at most the waiting pod's, no policy
 * protects it and it was not moved within the cool-down. */
typedef struct gp_mover {
    int node;                     /* index into q->nodes: where it runs */
    int32_t priority;
    bool pdb_violating;           /* evicting it now would break a PodDisruptionBudget */
    int group;                    /* budget group (namespace, pool): index into q->group_left;
                                   * -1 = none */
    int nholds;
    const gp_hold *holds;         /* borrowed: what it holds on its node */
    int64_t cpu_milli, mem_mib;   /* host requests, released with it */
    const gp_pod_req *req;        /* borrowed: what its replacement asks */
    const gp_place_opts *opts;    /* its policy's placement; NULL = q->opts */
} gp_mover;

typedef struct gp_consol_query {
    const gp_node *const *nodes;  /* every node, as the waiting pod sees it (claims counted) */
    int nnodes;
    const bool *target_ok;        /* nodes the waiting pod may go to; NULL = all */
    const gp_pod_req *req;        /* the waiting pod */
    const gp_place_opts *opts;    /* its policy */
    const gp_mover *movers;
    int nmovers;
    int max_moves;                /* 1 .. GP_CONSOL_MOVES_MAX */
    const int *group_left;        /* moves each group may still make; NULL = no groups */
    int ngroups;
    int budget;                   /* feasibility checks; 0 = GP_CONSOL_BUDGET_DEFAULT */
} gp_consol_query;

typedef struct gp_consol_move {
    int mover;                    /* index into q->movers */
    int node;                     /* where its replacement is expected (index into q->nodes) */
    gp_assignment a;              /* and its share there */
} gp_consol_move;

typedef struct gp_consol_plan {
    int node;                     /* where the waiting pod goes */
    gp_assignment a;              /* its share there */
    int nmoves;
    gp_consol_move moves[GP_CONSOL_MOVES_MAX];
    int pdb_violations;
    int64_t moved_mib;            /* GPU memory the moved pods hold */
    int checks;                   /* feasibility checks used */
    bool complete;                /* the search ran to its end (within the budget) */
} gp_consol_plan;

/* Plans. Returns 1 with *out filled, 0 when no plan within max_moves and the
 * budget makes room (out->checks still says what was spent). */
int consolidate_plan(const gp_consol_query *q, gp_consol_plan *out);

/* The request a moved pod's replacement makes, rebuilt from what the pod
 * holds: one container per GPU (one container over all of them when every
 * hold is the same), on the model of the GPU it holds now. */
void consolidate_req_from_holds(const gp_node *node, const gp_hold *holds, int nholds,
                                gp_pod_req *out);

#endif
