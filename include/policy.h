/* policy.h -- packing policies: what governs a pod, and the live policy set.
 *
 * A policy set is immutable once built and reference-counted, so a reload
 * swaps sets atomically while requests in flight keep the one they started
 * with. */
#ifndef GP_POLICY_H
#define GP_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "placement.h"
#include "podreq.h"
#include "util.h"

typedef struct gp_policy_set gp_policy_set;

/* What the extender needs from the policy that governs one pod. Plain data:
 * `place.gpu`, `place.node` and `place.shapes` point into static tables or
 * into the set, which the caller keeps referenced while using the view. */
typedef struct gp_policy_view {
    char name[GP_NAME_MAX];
    gp_place_opts place;
    gp_resource_names names;
    bool decide_in_filter;        /* nodeDecision: filter */
    double ns_share_cap;          /* max share of a node's GPUs one namespace may hold; 0 = none */
} gp_policy_view;

/* The built-in default set: one policy named "default" with the defaults of
 * placement_default_opts() and podreq_default_names(). Returns owned ref. */
gp_policy_set *policy_set_default(void);
void policy_set_ref(gp_policy_set *s);
void policy_set_unref(gp_policy_set *s);        /* accepts NULL */

/* Chooses the policy for a pod: the one its gpupack.io/policy annotation
 * names (`requested`, may be NULL/"") if that policy allows it, else the
 * highest-priority policy whose match and time window fit (ties by name),
 * else the default. Returns 0, or -1 with a message when `requested` names a
 * policy that does not exist or does not allow being requested. */
int policy_select(const gp_policy_set *s, const char *ns, const json_t *labels,
                  const char *requested, time_t now, gp_policy_view *out, gp_err *err) GP_WUR;

/* Number of policies in the set and their names (for /inspect, metrics). */
int policy_set_count(const gp_policy_set *s);
const char *policy_set_name_at(const gp_policy_set *s, int i);

#endif
