/* moveledger.h -- what consolidation has moved lately: moves per namespace
 * over the last hour (the policy's maxMovesPerHour) and when each
 * controller's pod was last moved (its cooldownSeconds). Pure bookkeeping
 * over times the caller passes (monotonic seconds); not thread-safe (the
 * caller's lock). Bounded: entries older than a week are pruned, and a
 * namespace keeps at most LEDGER_NS_MAX move times. */
#ifndef GP_MOVELEDGER_H
#define GP_MOVELEDGER_H

#include <stdbool.h>
#include <stddef.h>

#define LEDGER_NS_MAX 100000      /* move times kept per namespace (maxMovesPerHour's bound) */

typedef struct gp_ledger gp_ledger;

gp_ledger *ledger_new(void);
void ledger_free(gp_ledger *l);   /* accepts NULL */

/* A pod of namespace ns, made by controller owner ("" = none), was moved at
 * now. ns NULL: only the controller's cool-down starts (a move refused). */
void ledger_record(gp_ledger *l, const char *ns, const char *owner, double now);
/* Moves namespace ns may still make in the hour before now under a limit of
 * per_hour (never below 0). */
int ledger_left(gp_ledger *l, const char *ns, int per_hour, double now);
/* Was a pod of controller owner moved less than cooldown_s before now? */
bool ledger_cooling(const gp_ledger *l, const char *owner, double cooldown_s, double now);
/* Moves of every namespace in the hour before now. */
size_t ledger_last_hour(gp_ledger *l, double now);
/* Forgets what is older than keep_s (the largest cool-down; an hour at least). */
void ledger_prune(gp_ledger *l, double now, double keep_s);

#endif
