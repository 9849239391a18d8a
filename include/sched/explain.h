/* explain.h -- why a pending pod fits no node, and what would make it fit.
 *
 * The verdicts come from filter itself (extender_filter over every node of
 * the store), so explain never disagrees with the scheduler; explain adds,
 * per node that fails, a what-if: which pods would have to leave the node for
 * this pod to fit (or that no amount of freeing helps), and groups nodes by
 * the kind of reason (the reason with its numbers taken out).
 *
 *   json_t *ex = explain_pod(e, c, pod, &err);   // {"pod","policy","fits":[..],"groups":[..]}
 *   explain_print(stdout, ex);
 *
 * explain_hint and explain_group are pure; explain_pod reads the store. */
#ifndef GP_EXPLAIN_H
#define GP_EXPLAIN_H

#include <jansson.h>
#include <stdio.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "model/gpu.h"
#include "pack/placement.h"
#include "lib/util.h"

/* One pod's hold on one GPU of a node, as /inspect lists it: its own, or
 * an allocated ResourceClaim reserved for it (dra). */
typedef struct explain_hold {
    char pod[2 * GP_NAME_MAX];   /* "namespace/name" ("claim namespace/name" for a claim no
                                  * pod reserves) */
    int index;                   /* device index */
    int64_t mem_mib;
    int core;                    /* per-mille */
    bool dra;                    /* a claim's share (DRA's allocator counts it too) */
} explain_hold;

/* What would make req fit `node` (which it does not fit now): writes a
 * sentence into hint, e.g. "fits if research/nb (20480 MiB, 30 %) left the
 * node" or "never fits here, even with every GPU free: ...". Pure; the node is
 * not modified. */
void explain_hint(const gp_node *node, const explain_hold *holds, int nholds,
                  const gp_pod_req *req, const gp_place_opts *opts, char *hint, size_t len);

/* The grouping key of a reason: digit runs replaced by '#'. */
void explain_reason_key(const char *reason, char *key, size_t len);

/* Groups a filter answer (borrowed): {"fits":[names],"groups":[{"key","unresolvable",
 * "nodes":[{"node","reason"}]}]}, groups by size, largest first. Returns owned json. */
json_t *explain_group(const json_t *filter_answer);

/* Runs filter for `pod` (borrowed Pod JSON) over every node of the store and
 * adds a hint per failing node. Returns owned json, or NULL with err set. */
json_t *explain_pod(gp_extender *e, gp_cluster *c, const json_t *pod, gp_err *err);

/* Human-readable rendering of explain_pod's answer. */
void explain_print(FILE *f, const json_t *ex);

#endif
