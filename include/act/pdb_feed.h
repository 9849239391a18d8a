/* pdb_feed.h -- the PodDisruptionBudget reflector behind preemption's and
 * consolidation's budget view: LIST + WATCH of policy/v1
 * poddisruptionbudgets, every object and relist handed to sched/preempt.
 *
 *   gp_pdb_feed *f = pdb_feed_start(kube, preempt, &err);
 *   ...
 *   pdb_feed_stop(f);   // before preempt_free
 */
#ifndef GP_PDB_FEED_H
#define GP_PDB_FEED_H

#include "kube/kube.h"
#include "sched/preempt.h"
#include "lib/util.h"

typedef struct gp_pdb_feed gp_pdb_feed;

/* Borrows k and p; NULL with err set when the watch cannot start. */
gp_pdb_feed *pdb_feed_start(gp_kube *k, gp_preempt *p, gp_err *err);
/* Stops the watch (nothing reaches p after this) and frees; accepts NULL. */
void pdb_feed_stop(gp_pdb_feed *f);

#endif
