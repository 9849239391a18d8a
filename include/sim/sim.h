/* sim.h -- trace replay through gpupack's own placement code (`gpupack simulate`).
 *
 * The simulator plays kube-scheduler and gpupack together: kube-scheduler's
 * node checks (CPU and host memory fit), then placement_fit /
 * placement_node_score / placement_normalize / placement_apply with the
 * policy's strategies, in one of the two deployment modes:
 *   filter      gpupack decides: the node with the best raw score;
 *   prioritize  kube-scheduler decides: its LeastAllocated score (CPU+memory,
 *               0..100) plus gpupack's 0..10 score x weight x 10.
 * Ties are broken by a seeded RNG. Reports follow the reference protocol of
 * shared/traces/README.md (allocation ratio vs arrived workload,
 * fragmentation rate, unallocated GPUs, failed pods by kind). */
#ifndef GP_SIM_H
#define GP_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/frag.h"
#include "pack/placement.h"
#include "sim/schedcfg.h"
#include "sim/trace.h"
#include "lib/util.h"

/* The extender weight the shipped manifests configure
 * (manifests/base/scheduler-config.yaml, extenders[0].weight; test_sim checks). */
#define SIM_DEFAULT_WEIGHT 25

/* What `gpupack simulate` plays by default: the shipped deployment. */
#define SIM_SCHEDULER_CONFIG "manifests/base/scheduler-config.yaml"
#define SIM_POLICIES_DIR "policies"

#define SIM_MAX_STEPS 64   /* report points at 10 % of capacity each */

typedef enum { SIM_MODE_FILTER = 0, SIM_MODE_PRIORITIZE = 1 } sim_mode;
typedef enum { SIM_TIES_RANDOM = 0, SIM_TIES_KUBE = 1 } sim_ties;
typedef enum { SIM_CPU_PODS_POLICY = 0, SIM_CPU_PODS_KUBE = 1 } sim_cpu_pods;

/* The order in which waiting pods that fit a node with new room are tried. */
typedef enum {
    SIM_SERVE_ARRIVAL = 0,   /* oldest first */
    SIM_SERVE_LARGEST,       /* largest GPU request first, oldest first among equals */
    SIM_SERVE_FILL,          /* the pod after which the GPU's rest is best filled by the
                              * waiting pods' sizes, then largest, then oldest */
} sim_serve;

/* Everything one replay needs. Borrowed pointers must outlive the run. */
typedef struct sim_config {
    const trace_node *nodes;
    size_t nnodes;
    const trace_pod *pods;
    size_t npods;
    gp_place_opts place;       /* strategies etc.; place.shapes NULL -> `shapes` below */
    const gp_shapes *shapes;   /* typical shapes for the fragmentation metric (required) */
    sim_mode mode;
    int weight;                /* extender weight in prioritize mode (kube-scheduler's);
                                * `gpupack simulate` defaults to SIM_DEFAULT_WEIGHT */
    sim_ties ties;             /* filter mode: equal best scores -> RNG, or kube-scheduler's score */
    sim_cpu_pods cpu_pods;     /* CPU-only pods: scored by the policy (paper) or kube-scheduler */
    double inflate;            /* arrivals: re-sample until sum GPU request = inflate x capacity; 0 = none */
    bool departures;           /* replay creation/deletion times instead (no shuffle, no inflation) */
    bool shuffle;              /* arrivals: shuffle the pod order (reference protocol: yes) */
    bool cache;                /* memoise fit+score per (node state, pod shape) */
    /* Non-NULL: play kube-scheduler v1.26 as this configuration says (node
     * sampling, round robin, plugin scores, extender interest and weight,
     * ignored resources); `mode` is then the policy's nodeDecision and
     * `weight`, `ties`, `cpu_pods` are not used. */
    const schedcfg *kube;
    bool extender_cpu;         /* kube mode: gpupack sees host CPU and memory and
                                * decides CPU-only pods too (live gpupack does, from
                                * node allocatable and every pod's requests) */
    /* GPU pods ask through ResourceClaims (docs/dra.md): every GPU is a DRA
     * device shared by capacity (memory and compute, as HAMi's driver
     * publishes them), kube-scheduler's DRA plugin keeps the nodes where its
     * allocator finds devices and the allocator picks them (first fit in
     * published order); a configured extender chooses among those nodes. */
    bool dra;
    /* Churn (sim_run with churn set; docs/simulator.md "Churn and
     * consolidation"): pods arrive in the seeded order of the pod list,
     * cycled, while the offered load -- the GPU request of the running and
     * the waiting pods over the GPU capacity -- stays below churn_load; every
     * placed pod leaves after an exponential lifetime of mean churn_lifetime
     * seconds; waiting pods are retried, in arrival order, when something
     * leaves. The run stops at churn_horizon mean lifetimes; allocation and
     * waiting times are measured from churn_warmup mean lifetimes on. */
    bool churn;
    double churn_load;         /* e.g. 1.3 */
    double churn_lifetime;     /* seconds, > 0 */
    double churn_horizon;      /* mean lifetimes */
    double churn_warmup;       /* mean lifetimes, < churn_horizon */
    /* Consolidation (pack/consolidate.h) when a GPU pod fits nowhere: at most
     * consol_budget percent of the placements so far may have been moves
     * (cumulative; 0 = off), at most consol_max_moves per waiting pod,
     * consol_checks feasibility checks per plan (0 = the planner's default). */
    double consol_budget;
    int consol_max_moves;
    int consol_checks;
    /* Background defragmentation: while fewer than defrag_free GPUs of the
     * cluster are entirely free, pods are moved (within consol_budget) to
     * free one more, one plan per event; 0 = off. */
    int defrag_free;
    /* While a pod asking whole GPUs waits, a pod asking a GPU share may not
     * start on an entirely free GPU of a node that pod could run on once it
     * lacked at most whole_first_near more free GPUs (churn only): a choice
     * of which pods to serve, for comparison. */
    bool whole_first;
    int whole_first_near;
    /* Which waiting pods start when room frees on a node (churn only): a
     * choice of which pods to serve that holds nothing back, for comparison. */
    sim_serve serve;
} sim_config;

typedef struct sim_point {
    double arrived;            /* arrived GPU request / capacity */
    double alloc;              /* allocated GPU share / capacity */
    double frag;               /* fragmentation rate: fragment / idle */
} sim_point;

/* What a churn run measured (sim_config.churn). Times in seconds; a pod
 * still waiting at the end counts with the time it has waited so far. */
typedef struct sim_churn_stats {
    double alloc_mean;               /* GPU allocation, time-weighted over the window */
    double alloc_min;                /* lowest allocation seen in the window */
    long placements;                 /* pods placed (moves not counted) */
    long moves;                      /* pods moved by consolidation */
    long plans;                      /* plans carried out */
    long plan_failures;              /* searches that found no plan */
    long plan_incomplete;            /* ... of which stopped by --consolidate-checks */
    long budget_refusals;            /* pods that fit nowhere while the budget was spent */
    long defrag_plans;               /* background defragmentation: plans carried out */
    long defrag_failures;            /* ... and searches that found none */
    long held_back;                  /* share placements refused by whole_first */
    long whole_arrived;              /* pods asking >= 1 whole GPU, arrived in the window */
    long whole_waited;               /* ... of which placed later than they arrived, or never */
    double whole_wait_mean, whole_wait_p50, whole_wait_p95, whole_wait_max;
    long all_arrived;                /* every pod arrived in the window */
    double all_wait_mean;
    long waiting_end, whole_waiting_end;   /* pods waiting at the end */
} sim_churn_stats;

typedef struct sim_result {
    uint64_t seed;
    int nsteps;
    sim_point step[SIM_MAX_STEPS];   /* step[k]: first time arrived >= (k+1) x 10 % */
    sim_point end;
    double unalloc_gpus;             /* (1 - end.alloc) x GPUs */
    long arrived[TRACE_KIND_COUNT];
    long failed[TRACE_KIND_COUNT];
    long failed_total;
    long pods;                       /* pods replayed */
    double wall_s;
    sim_churn_stats churn;           /* churn runs: step[k].arrived is then the time
                                      * in mean lifetimes, every quarter lifetime */
} sim_result;

/* Replays the trace once with `seed`. Returns 0, or -1 with a message (bad
 * configuration). Thread-safe: runs share only the read-only config. */
int sim_run(const sim_config *cfg, uint64_t seed, sim_result *out, gp_err *err) GP_WUR;

/* `gpupack simulate ...`: argv[0] is "simulate". Prints the report on stdout,
 * progress and errors on stderr; returns the process exit status. */
int sim_main(int argc, char **argv);

#endif
