/* preempt_act.h -- preemption's and consolidation's decisions carried out on the live
 * API client: the evictions, the nomination, the nudge of the preemptor and the Events
 * (act/evictor, act/events), and the pod watch's view handed to preemption (its
 * observer). cli/main.c builds it once; the plans themselves are sched/preempt's.
 */
#ifndef GP_PREEMPT_ACT_H
#define GP_PREEMPT_ACT_H

#include "act/events.h"
#include "act/live.h"
#include "sched/preempt.h"

typedef struct gp_preempt_act gp_preempt_act;

/* Borrows live and events, which must outlive it. */
gp_preempt_act *preempt_act_new(gp_live *live, gp_events *events);
void preempt_act_free(gp_preempt_act *a);   /* accepts NULL */
/* The calls preemption makes (gp_preempt_config.io); ud is a. */
gp_preempt_io preempt_act_io(gp_preempt_act *a);
/* Every pod the watch applies, each full pod LIST's start and end, and the
 * end of every LIST once nodes and pods are known, handed to p
 * (live_set_pod_observer). */
gp_live_pod_observer preempt_act_observer(gp_preempt *p);

#endif
