/* victims.h -- which lower-priority pods to evict so that a pod fits a node's
 * GPUs: a search over victim sets under kube-scheduler's candidate ranking,
 * applied at GPU level. Pure: takes a node snapshot and the candidates,
 * returns the victims; no locks, no I/O.
 *
 * kube-scheduler's DefaultPreemption chooses victims per node greedily
 * (SelectVictimsOnNode: remove every lower-priority pod, then add them back
 * most important first while the pod still fits) and ranks nodes
 * (pickOneNodeForPreemption: fewest PodDisruptionBudget violations, lowest
 * highest victim priority, smallest sum of priorities, fewest victims,
 * latest start among the highest-priority victims). The greedy pass depends
 * on the order it meets the pods in: with one pod holding GPU 0 and two on GPU
 * 1, it may take the two. Here the same ranking orders victim *sets* on one
 * node, and a bounded branch-and-bound search looks for the best feasible
 * set, starting from the greedy answer, so the result is never worse than
 * kube-scheduler's and is the best one whenever the search completes.
 *
 *   gp_victim_query q = {.node = n, .req = &req, .opts = &opts, .cands = c, .ncands = k};
 *   int buf[k];
 *   gp_victim_plan plan;
 *   switch (victims_select(&q, buf, &plan)) { ... }
 */
#ifndef GP_VICTIMS_H
#define GP_VICTIMS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"
#include "pack/placement.h"

/* One pod that may be evicted: strictly lower priority than the preemptor,
 * bound, not protected (the caller decides that). */
typedef struct gp_victim {
    int32_t priority;
    int64_t start_ns;             /* pod start; 0 = unknown (counts as the latest) */
    bool pdb_violating;           /* pdb_violations() said so */
    bool same_ns;                 /* in the preemptor's namespace (maxNamespaceShare) */
    int nholds;
    const gp_hold *holds;         /* borrowed: what it holds on this node, by device index */
    int64_t cpu_milli, mem_mib;   /* its host requests */
} gp_victim;

/* A victim set's rank; lower is better (victims_rank_cmp). */
typedef struct gp_victim_rank {
    int pdb_violations;
    int32_t max_priority;         /* INT32_MIN for the empty set */
    int64_t priority_sum;         /* sum of (priority + 2^31), as kube-scheduler adds them */
    int count;
    double frag;                  /* the node's fragmentation after the preemptor lands
                                   * (the policy's shapes, frag.h); compared across nodes */
    int64_t earliest_start;       /* earliest start among the highest-priority victims;
                                   * the later, the better (less running time lost) */
} gp_victim_rank;

typedef struct gp_victim_query {
    const gp_node *node;          /* counters include every candidate's holds */
    const gp_pod_req *req;        /* the preemptor; candidates of priority >= req->priority
                                   * are never chosen (only strictly lower ones are victims) */
    const gp_place_opts *opts;    /* the preemptor's policy (limits, reserve, models, shapes) */
    const gp_victim *cands;
    int ncands;
    double ns_share_cap;          /* the policy's maxNamespaceShare; 0 = none */
    const int *ns_gpu_pods;       /* per GPU position: pods of the preemptor's namespace
                                   * holding it (candidates included); NULL = none */
    int budget;                   /* feasibility checks the search may use; 0 = 4096 */
} gp_victim_query;

typedef struct gp_victim_plan {
    int nvictims;
    int *victims;                 /* indices into cands, into the caller's buffer */
    gp_victim_rank rank;
    gp_assignment a;              /* where the preemptor goes once they are gone */
    int checks;                   /* feasibility checks used */
    bool complete;                /* the search finished: no better set exists */
} gp_victim_plan;

typedef enum {
    GP_VICTIMS_NONE = 0,          /* no set of candidates makes the pod fit */
    GP_VICTIMS_FOUND = 1,         /* out holds the victims (at least one) */
    GP_VICTIMS_FITS = 2           /* the pod fits as the node stands (out->a is its place) */
} gp_victims_result;

/* Chooses the victims. victims_buf has room for q->ncands indices; out->victims
 * points into it. Never modifies the query. */
gp_victims_result victims_select(const gp_victim_query *q, int *victims_buf, gp_victim_plan *out);

/* Orders two ranks: PDB violations, highest priority, priority sum, count,
 * fragmentation after, then the later earliest start first. <0 when a is
 * better. Pure. */
int victims_rank_cmp(const gp_victim_rank *a, const gp_victim_rank *b);

#endif
