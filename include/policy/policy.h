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

#include "pack/placement.h"
#include "model/dra.h"
#include "model/podreq.h"
#include "lib/util.h"

typedef struct gp_policy_set gp_policy_set;

/* spec.preemption: who may preempt for GPUs, and who is never evicted for them. */
typedef struct gp_preempt_rules {
    bool may_preempt;             /* pods it governs may evict lower-priority pods (default true) */
    bool has_min;                 /* min_priority is set */
    int32_t min_priority;         /* ... only when their priority is at least this */
    bool protect;                 /* pods placed under it are never GPU preemption victims */
} gp_preempt_rules;

/* spec.consolidation: moving a few pods so that a waiting pod fits
 * (docs/consolidation.md). The waiting pod's policy says whether and how
 * much; the moved pod's policy says whether it may move, how often its
 * namespace may be disrupted and its cool-down. */
typedef struct gp_consol_rules {
    bool enabled;                 /* pods it governs may have others moved for them (default true) */
    int max_moves;                /* moves one waiting pod may cause (default 4) */
    int max_per_hour;             /* moves of pods of one namespace per hour (default 20) */
    int cooldown_s;               /* a moved controller's pods rest this long (default 600) */
    int hold_s;                   /* a replacement's held place lasts this long (default 120) */
    bool movable;                 /* pods placed under it may be moved (default true) */
} gp_consol_rules;

#define GP_CONSOL_DEFAULTS {true, 4, 20, 600, 120, true}

/* What the extender needs from the policy that governs one pod. Plain data:
 * `place.gpu`, `place.node` and `place.shapes` point into static tables or
 * into the set, which the caller keeps referenced while using the view. */
typedef struct gp_policy_view {
    char name[GP_NAME_MAX];
    gp_place_opts place;
    gp_resource_names names;
    bool decide_in_filter;        /* nodeDecision: filter */
    double ns_share_cap;          /* max share of a node's GPUs one namespace may hold; 0 = none */
    gp_preempt_rules preempt;
    gp_consol_rules consol;
} gp_policy_view;

/* The built-in default set: one policy named "default" with the defaults of
 * placement_default_opts() and podreq_default_names(). Returns owned ref. */
gp_policy_set *policy_set_default(void);
void policy_set_ref(gp_policy_set *s);
void policy_set_unref(gp_policy_set *s);        /* accepts NULL */

/* Chooses the policy for a pod: the one its gpupack.io/policy annotation
 * names (`requested`, may be NULL/"") if that policy allows it (match and
 * schedule are not checked then), else the highest-priority policy whose
 * match (namespace `ns`, pod `labels`, either may be NULL) and time window
 * (at `now`, in the policy's zone) fit (ties by name), else the default.
 * A NULL set means the built-in default. Returns 0, or -1 with a message when
 * `requested` names a policy that does not exist or does not allow being
 * requested. Pure and thread-safe; the view points into `s` (see above). */
int policy_select(const gp_policy_set *s, const char *ns, const json_t *labels,
                  const char *requested, time_t now, gp_policy_view *out, gp_err *err) GP_WUR;

/* The view of the policy called `name`, whatever its match, schedule and
 * allowRequest say: for offline tools (`gpupack simulate --policy FILE`
 * replays a trace under that file's policy). Returns 0, or -1 when the set
 * has no such policy. */
int policy_view_by_name(const gp_policy_set *s, const char *name, gp_policy_view *out,
                        gp_err *err) GP_WUR;

/* Which DRA devices are GPUs (docs/dra.md): the default policy's spec.dra
 * drivers, else the built-in table (dra_default_drivers). s NULL: built-in. */
void policy_set_dra_drivers(const gp_policy_set *s, gp_dra_drivers *out);

/* Number of policies in the set and their names (for /inspect, metrics). */
int policy_set_count(const gp_policy_set *s);
const char *policy_set_name_at(const gp_policy_set *s, int i);

/* ---------------------------------------------------------------- loading
 * (policy files: see policy_yaml.h for the schema, docs/policies.md for
 * users). */

typedef struct gp_policy gp_policy;
typedef struct policy_diag policy_diag;

/* Builds a set from parsed policies. Takes ownership of `pols` (the array
 * and every policy) in all cases. Checks what no single document can: two
 * policies with one name, two with the same priority that can match the
 * same pod at the same time, selectors that can never match. Adds the
 * built-in "default" unless a policy is named so. Returns 0 and an owned ref
 * in *out, or -1 with every problem appended to diag. */
int policy_set_build(gp_policy **pols, int n, policy_diag *diag, gp_policy_set **out) GP_WUR;

/* Parses the files (in the order given) into one set, as a policy directory
 * is loaded: every error of every file goes to diag; any error rejects the
 * whole set. Returns 0 and an owned ref in *out, or -1. */
int policy_set_load_files(const char *const *paths, int n, gp_policy_set **out,
                          policy_diag *diag) GP_WUR;

/* One file -> a set that also holds the default (for `gpupack simulate
 * --policy FILE`). Returns 0 and an owned ref, or -1 with the first error
 * ("file:line:col: ...") and the count of the others in err. */
int policy_set_load_file(const char *path, gp_policy_set **out, gp_err *err) GP_WUR;

/* The policy named `name` in the set, or NULL. Borrowed from the set. */
const gp_policy *policy_set_find(const gp_policy_set *s, const char *name);

/* A JSON description of the set for /inspect: [{"name", "file", "priority",
 * "node", "gpu", "nodeDecision", "activeNow"}...] in selection order.
 * Returns an owned array. */
json_t *policy_set_to_json(const gp_policy_set *s, time_t now);

#endif
