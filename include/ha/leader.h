/* leader.h -- leader election over a coordination.k8s.io/v1 Lease: which replica may bind.
 *
 * The semantics follow kube-scheduler's leader election (client-go):
 *  - one attempt = read the Lease, then create it or update it with the read
 *    resourceVersion as precondition (optimistic concurrency: of two
 *    candidates writing the same version, one gets 409 Conflict);
 *  - another holder's Lease counts as expired only after this replica has
 *    seen the same record unchanged for lease_duration on its own monotonic
 *    clock (no trust in other machines' wall clocks);
 *  - the leader renews every retry_period; an empty holderIdentity (a Lease
 *    released on shutdown) may be taken at once.
 * Fencing, stricter than client-go: the leader may start a bind only while
 * now < last successful renew + renew_deadline, and every bind must end by
 * last renew + lease_duration - GP_LEADER_MARGIN_S (leader_may_bind gives the
 * time left), so a bind never overlaps the next leader's. A replica that took
 * the Lease over from another live holder waits takeover_quiet_s before its
 * first bind, so that the old leader's last writes reach its watch.
 *
 * The decision logic is pure: the Lease store and the clock are injected
 * (lease_kube.h is the API server's store), so tests drive leader_step with a
 * fake store and a fake clock. */
#ifndef GP_LEADER_H
#define GP_LEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util.h"

#define GP_LEADER_ID_MAX 256
/* Binds must end this long before the Lease could expire on a standby's clock. */
#define GP_LEADER_MARGIN_S 1.0

/* --- the Lease record and its store ------------------------------------ */

typedef struct gp_lease_rec {
    char holder[GP_LEADER_ID_MAX];   /* spec.holderIdentity; "" = nobody */
    int duration_s;                  /* spec.leaseDurationSeconds */
    int64_t acquire_ns, renew_ns;    /* spec.acquireTime / renewTime, Unix ns (0 = absent) */
    int transitions;                 /* spec.leaseTransitions */
    char rv[64];                     /* metadata.resourceVersion */
} gp_lease_rec;

typedef enum {
    GP_LEASE_ERROR = -1,       /* transport or unexpected answer: err says what */
    GP_LEASE_OK = 0,
    GP_LEASE_NOT_FOUND = 1,    /* get: no such Lease */
    GP_LEASE_CONFLICT = 2      /* create: exists already; update: resourceVersion is not current */
} gp_lease_rc;

/* Where the Lease lives. Each call fills rec->rv with the stored version on
 * success; update sends rec->rv as its precondition. Called from one thread
 * at a time. interrupt (may be NULL) makes calls in progress, and later
 * get/create calls, fail promptly (shutdown); update still works, for the
 * release. */
typedef struct gp_lease_store {
    void *ud;
    gp_lease_rc (*get)(void *ud, gp_lease_rec *out, gp_err *err);
    gp_lease_rc (*create)(void *ud, gp_lease_rec *rec, gp_err *err);
    gp_lease_rc (*update)(void *ud, gp_lease_rec *rec, gp_err *err);
    void (*interrupt)(void *ud);
} gp_lease_store;

/* Clocks (NULL members = the real ones): monotonic seconds for every
 * decision, wall clock only for the times written into the Lease. */
typedef struct gp_leader_clock {
    void *ud;
    double (*mono_s)(void *ud);
    int64_t (*wall_ns)(void *ud);
} gp_leader_clock;

typedef struct gp_leader_config {
    const char *identity;          /* required, < GP_LEADER_ID_MAX bytes; copied */
    double lease_duration_s;       /* 0 = 15 */
    double renew_deadline_s;       /* 0 = 10 */
    double retry_period_s;         /* 0 = 2 */
    double takeover_quiet_s;       /* 0 = 1; negative = none */
    /* Called on the election thread after every attempt with whether this
     * replica holds the Lease (e.g. to label its Pod); may be NULL. */
    void (*on_step)(void *ud, bool leading);
    void *on_step_ud;
} gp_leader_config;

typedef struct gp_leader gp_leader;

/* Validates cfg (lease_duration > renew_deadline > 1.2 x retry_period, and
 * renew_deadline + GP_LEADER_MARGIN_S < lease_duration) and copies cfg, store
 * and clock (clock may be NULL). No I/O. NULL with a message on bad values. */
gp_leader *leader_new(const gp_leader_config *cfg, const gp_lease_store *store,
                      const gp_leader_clock *clock, gp_err *err);
/* Stops the thread if started (without releasing) and frees; accepts NULL. */
void leader_free(gp_leader *l);

/* One attempt to acquire or renew the Lease. Returns true when this replica
 * leads afterwards. Not thread-safe against itself: the election thread (or
 * a test) is the only caller. */
bool leader_step(gp_leader *l);

/* Stops binding at once; then, if this replica holds the Lease, writes it
 * back with an empty holder and leaseDurationSeconds 1 so that a standby
 * takes over at its next attempt. Returns 0, or -1 when the write failed (the
 * Lease then expires normally). Call after leader_stop (or in tests). */
int leader_release(gp_leader *l, gp_err *err) GP_WUR;

/* The fencing rule: true when this replica may start a bind now. *budget_s
 * (may be NULL) gets how long the bind may take in total. Thread-safe. */
bool leader_may_bind(gp_leader *l, double *budget_s);

/* For /readyz, /metrics and /inspect. Thread-safe. */
typedef struct gp_leader_status {
    char identity[GP_LEADER_ID_MAX];
    char holder[GP_LEADER_ID_MAX];   /* last holder seen in the Lease ("" = none or unknown) */
    bool leading;                    /* holds the Lease (may still be in the quiet period) */
    bool may_bind;
    double since_renew_s;            /* since the last successful renew; -1 when not leading */
    double quiet_left_s;             /* takeover quiet period left */
    unsigned long acquired, lost;    /* times this replica became leader / stopped leading */
    unsigned long attempts_failed;   /* attempts that ended in an error or conflict */
} gp_leader_status;
void leader_status(gp_leader *l, gp_leader_status *out);

/* metrics_fn (leader: a gp_leader *): the gpupack_leader_* families. */
void leader_metrics(void *leader, gp_buf *out);
/* {"identity","holder","leading","mayBind","sinceRenewSeconds",...} (owned). */
json_t *leader_inspect(gp_leader *l);

/* How long the election thread waits before its next attempt: retry_period
 * x 1.0-1.2 (jitter), or less for a standby whose holder's lease expires
 * sooner on its clock (it then tries right at expiry). Election thread only. */
double leader_next_wait(gp_leader *l);

/* Runs leader_step every leader_next_wait() seconds on a thread. */
int leader_start(gp_leader *l, gp_err *err) GP_WUR;
/* Stops binding, interrupts the store and joins the thread; idempotent. */
void leader_stop(gp_leader *l);

/* "HOSTNAME_RANDOMHEX" into out (a fresh identity per process). */
void leader_identity(char *out, size_t len);

#endif
