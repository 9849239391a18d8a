/* workq.h -- a fixed pool of threads running queued jobs in arrival order.
 *
 * For work that waits on the network (binds) and must stay off the HTTP
 * threads. Thread-safe. */
#ifndef GP_WORKQ_H
#define GP_WORKQ_H

#include <stddef.h>

#include "lib/util.h"

typedef struct gp_workq gp_workq;
typedef void (*gp_work_fn)(void *arg);

/* Starts `threads` workers (at least 1). Returns NULL with a message when no
 * thread could be started. */
gp_workq *workq_new(int threads, const char *name, gp_err *err);
/* Queues fn(arg); runs on some worker, exactly once, even when workq_free
 * comes first (it waits). Borrows arg (fn usually frees it). */
void workq_push(gp_workq *q, gp_work_fn fn, void *arg);
/* Runs what is queued, stops the workers and frees; accepts NULL. */
void workq_free(gp_workq *q);

#endif
