/* preempt_int.h -- what the files of preemption and consolidation share
 * (sched/preempt*.c): their state, plans and node copies. Private to them:
 * nothing else includes it (sched/preempt.h is the interface).
 *
 *   preempt.c          the state, the pod and PDB feeds, the worker that
 *                      nominates, evicts and nudges
 *   preempt_plan.c     planning a preemption: node copies, victims, the claim;
 *                      filter's hook, rebuilding after a restart
 *   preempt_consol.c   consolidation: moving pods for a pod that fits nowhere
 *   preempt_view.c     kube-scheduler's preemptVerb, explain, /inspect, metrics */
#ifndef GP_PREEMPT_INT_H
#define GP_PREEMPT_INT_H

#include "sched/preempt.h"

#include <pthread.h>
#include <stdatomic.h>


#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/strmap.h"
#include "model/heldrec.h"
#include "model/k8s_obs.h"
#include "model/pdb.h"
#include "model/podprio.h"
#include "pack/consolidate.h"
#include "pack/frag.h"
#include "pack/moveledger.h"
#include "pack/victims.h"

#define WAIT_DEFAULT_S 60.0        /* a claim outlives its victims' grace period by this */
#define GRACE_DEFAULT_S 30         /* a victim whose grace period is unknown (Kubernetes' default) */
#define TICK_DEFAULT_S 0.2
#define BUDGET_DEFAULT 2048        /* feasibility checks per node */
#define ALTS_MAX 8                 /* other nodes kept to try after a 429 */
#define BLOCKED_MAX 32             /* victims a PDB refused, per preemptor */
#define CANDIDATES_MIN 100         /* kube-scheduler's minCandidateNodesAbsolute ... */
#define CANDIDATES_PCT 10          /* ... and minCandidateNodesPercentage */
#define BACKOFF_MAX_S 10.0
#define RENUDGE_DEFAULT_S 5.0      /* a preemptor still unbound this long after its nudge is
                                    * nudged again; the gap doubles ... */
#define RENUDGES_MAX 3             /* ... this many times at most */
#define MSG_MAX 1024               /* an Event message (the API server's limit) */
#define HELD_REBUILD_MAX_S 3600.0  /* a recorded place further off than this is not held again */

/* ------------------------------------------------------------ state -- */

/* What the pod watch said about one pod. */
typedef struct pmeta {
    char *ns, *name;              /* one block owned through ns: "ns\0name\0" then labels */
    char *labels;                 /* compact (podprio.h), in ns's block */
    size_t labels_len;
    int32_t priority;
    int64_t start_ns, deletion_ns, grace_s;   /* as gp_pod_prio */
    gp_pod_owner owner;           /* its controller: consolidation moves only what one recreates */
    char *nominated;              /* status.nominatedNodeName; NULL = none */
    bool bound;
    json_t *pending;              /* trimmed pod: pending with a nominated node (rebuilds) */
    /* trimmed pod: pending with ResourceClaims, and kube-scheduler found no
     * node (PodScheduled False). Its DRA plugin rejects such a pod before any
     * extender is asked, so gpupack's filter never sees it: the worker plans
     * its preemption from here (dra_parked_round) */
    json_t *dra_parked;
    double dra_tried;             /* monotonic time of the last attempt */
    double dra_wait;              /* seconds until the next one: doubles while nothing comes
                                   * of them (DRA_RETRY_S .. DRA_RETRY_MAX_S) */
    unsigned list_gen;            /* the pod LIST that last showed it (preempt_pods_listing) */
    gp_held_rec *held_rec;        /* its gpupack.io/HeldPlaces record (NULL = none) */
    int64_t held_applied;         /* the record (at_ns) held here already */
} pmeta;

enum { V_TODO, V_EVICTED, V_GONE };

/* A pod a plan evicts (ours) or waits for (terminating already). */
typedef struct pvictim {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    int32_t priority;
    bool covered;                 /* selected by a PodDisruptionBudget: evicted first */
    bool ours;                    /* we evict it; else it was terminating already */
    int state;
    char frees[96];               /* "GPU 1 (8192 MiB)" */
    char to[GP_NAME_MAX + 96];    /* consolidation: where its replacement's place is held */
    char held[GP_UID_MAX];        /* ... the key of that place ("" = none) */
} pvictim;

enum { S_NOMINATE, S_EVICT, S_WAIT };
static const char *const stage_names[] = {"nominating", "evicting", "waiting"};

typedef struct plan {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    int32_t priority;
    char node[GP_NAME_MAX];
    char frees[160];              /* what the preemptor gets: "GPU 1 (16384 MiB)" */
    int nv;
    pvictim *v;
    int stage;
    double created, deadline, retry_at;
    int failures;
    json_t *pod;                  /* trimmed: planning again after a 429 */
    int nalts;
    char alts[ALTS_MAX][GP_NAME_MAX];
    int nblocked;
    char blocked[BLOCKED_MAX][GP_UID_MAX];
    bool warned_nominate;
    bool nudged;                  /* the pod was told its victims are gone ... */
    int renudges;                 /* ... and told again this many times (still unbound) */
    double nudged_at;             /* monotonic time of the last nudge */
    bool consol;                  /* consolidation: the victims move (held places), not preempted */
    char *held_rec;               /* ... the record of those places the nomination writes
                                   * (model/heldrec.h; owned, NULL = none) */
} plan;

/* A place held for the replacement of a moved pod (consolidation): a claim
 * with the controller as its owner. */
typedef struct held {
    char key[GP_UID_MAX];         /* the claim's uid: "held-" + a counter */
    char owner[GP_UID_MAX];
    char ns[GP_NAME_MAX], moved[GP_NAME_MAX];   /* the moved pod */
    char waiting[2 * GP_NAME_MAX];              /* ns/name of the pod it was moved for */
    char where[GP_NAME_MAX + 96];               /* node and GPUs */
    double created, expires;
    char waiting_uid[GP_UID_MAX]; /* the pod it was moved for, and its plan's record: */
    int64_t rec_at;               /* heldrec's at_ns (wall clock); 0 = not recorded */
    int owner_total;              /* the record's places for this controller */
    bool rebuilt;                 /* held again from that record (a restart, a new leader) */
} held;

struct gp_preempt {
    gp_cluster *c;
    gp_preempt_config cfg;
    _Atomic(gp_extender *) e;
    pthread_mutex_t mu;           /* meta, plans, pdbs */
    strmap *meta;                 /* uid -> pmeta */
    strmap *parked;               /* uid -> pmeta (meta's) with dra_parked set: the worker's DRA
                                   * round walks these, not every pod known */
    strmap *plans;                /* preemptor uid -> plan */
    strmap *pdbs;                 /* PDB uid (or ns/name) -> gp_pdb */
    unsigned pdb_gen;
    strmap *pdb_seen;             /* keys seen since the last resync began */
    bool synced;                  /* a first pod LIST was applied */
    unsigned list_gen;            /* pod LISTs begun: the pods a LIST does not show are gone */
    double list_began;            /* when the last began (pre_now_s) */
    pthread_t th;
    bool started, stop;
    pthread_cond_t cv;
    atomic_ulong started_n, waits, victims, bound, deleted, expired, replanned, failed;
    atomic_ulong evict_blocked, evict_retry, evict_refused;
    atomic_ulong nudged_n, renudged;
    /* consolidation */
    gp_ledger *ledger;            /* recent moves: per-namespace budget, controllers' cool-down */
    strmap *held;                 /* claim key -> held */
    unsigned long held_seq;
    double ledger_pruned;
    atomic_ulong c_started, c_moved, c_bound, c_expired, c_blocked, c_failed, c_deleted;
    atomic_ulong c_no_plan, c_budget, c_held_used, c_held_expired, c_held_rebuilt;
};

/* ------------------------------------------------------------ node copies -- */

/* One pod on a node, copied out of the store. */
typedef struct npod {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX], policy[GP_NAME_MAX];
    gp_pod_state state;
    bool applied;                 /* its Binding applied, the watch not yet caught up */
    int nholds;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int64_t cpu, mem;
} npod;

typedef struct npods {
    npod *v;
    int n, cap;
} npods;

/* The best plan on one node. */
typedef struct node_plan {
    char node[GP_NAME_MAX];
    gp_victims_result res;
    gp_victim_rank rank;
    gp_assignment a;
    int nv;                       /* victims we evict (forced ones first) */
    int nwait;                    /* terminating pods it counts on */
    pvictim *v;                   /* nv + nwait entries, owned */
    int pdb_violations;           /* among the victims we add */
    bool consol;                  /* the victims move (consolidation) */
} node_plan;

/* What to plan: the preemptor and how. */
typedef struct plan_query {
    const gp_pod_req *req;
    const gp_policy_view *view;
    gp_policy_set *set;
    bool may_evict;               /* choose victims (else only wait for terminating pods) */
    bool fits_ok;                 /* a node where it fits now counts (rebuilds after a restart) */
    const char *nominated;        /* its status.nominatedNodeName: the one node where it may
                                   * hold share while only waiting for terminating pods */
    const char *const *forced;    /* uids evicted in any case (kube-scheduler's proposal) */
    int nforced;
    const plan *old;              /* blocked victims to leave alone; may be NULL */
} plan_query;

/* ------------------------------------------------------------ shared functions -- */

/* preempt.c: time, text, the end of a plan */
double pre_now_s(void);
void pre_plan_free(plan *pl);
/* "GPU 1 (16384 MiB)", "GPUs 0, 1 (16384 MiB each)" ... what holds amount to */
void pre_describe_holds(const gp_hold *h, int nh, char *out, size_t len);
/* "ns/a, ns/b" of the victims still around (only_present) or all; returns how many */
size_t pre_list_victims(gp_preempt *p, const plan *pl, bool only_present, char *out, size_t len);
/* Ends a plan (counted under outcome, logged with why) and frees it; p->mu held. */
void pre_finish(gp_preempt *p, plan *pl, atomic_ulong *outcome, const char *why);

/* preempt_plan.c: node copies and plans */
void pre_collect(void *ud, const gp_pod_on_node *p);   /* cluster_rd_node_pods -> npods */
void pre_node_plan_clear(node_plan *np);
bool pre_is_forced(const plan_query *q, const char *uid);
void pre_fill_victim(pvictim *pv, const npod *x, const pmeta *m, bool ours, bool covered);
int pre_plan_node(gp_preempt *p, const plan_query *q, const char *node, node_plan *np);
int pre_plan_nodes(gp_preempt *p, const plan_query *q, const char *const *nodes, const bool *skip,
                   size_t n, node_plan *best, char alts[][GP_NAME_MAX], int *nalts);
const char *pre_not_eligible(const gp_pod_prio *pp, const gp_policy_view *view, char *buf,
                             size_t len);
/* Makes node plan np the pod's plan: the claim, then the worker's job. */
plan *pre_commit(gp_preempt *p, const json_t *pod, const gp_pod_req *req, node_plan *np,
                 char alts[][GP_NAME_MAX], int nalts, const plan *old, gp_err *err);
bool pre_waiting(gp_preempt *p, const plan *pl);
bool pre_plan_over(gp_preempt *p, plan *pl);
long pre_index_of(const char *const *nodes, size_t n, const char *name);
void pre_rebuild_one(gp_preempt *p, const char *uid, pmeta *m);
/* filter's hook (gp_preempt_hooks.nofit) */
long pre_on_nofit(void *ud, const gp_pod *pod, const gp_pod_req *req, const gp_policy_view *view,
                  gp_policy_set *set, const char *const *nodes, const bool *unresolvable,
                  size_t n, char *reason, size_t len);

/* preempt_consol.c: consolidation */
void pre_release_unmoved(gp_preempt *p, plan *pl);
long pre_try_consolidate(gp_preempt *p, const json_t *pod, const gp_pod_prio *pp, const gp_pod_req *req,
                         const gp_policy_view *view, gp_policy_set *set,
                         const char *const *nodes, const bool *unresolvable, size_t n,
                         char *reason, size_t len);
void pre_held_round(gp_preempt *p);
/* The places of the held-places record of pending-or-bound pod uid
 * (m->held_rec), held again unless this replica holds them already, their
 * replacements were placed, or they are over (a restart, a new leader). */
void pre_held_rebuild(gp_preempt *p, const char *uid, pmeta *m);

void pre_consol_blocked(gp_preempt *p, plan *pl, const pvictim *v);

#endif
