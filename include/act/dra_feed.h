/* dra_feed.h -- LIST + WATCH of ResourceSlices, ResourceClaims and DeviceClasses
 * into the DRA store and the GPU map, wherever the API server serves
 * resource.k8s.io/v1.
 *
 * Found through discovery (GET /apis/resource.k8s.io/v1), never a flag: a
 * server that answers 404 has no DRA for gpupack (Kubernetes before 1.34, or
 * the API turned off) and nothing more is asked; one that cannot be reached
 * is asked again (dra_feed_poll). Once found, three reflectors run with the
 * same rules as nodes and pods: the verbs wait until all are listed and
 * after every relist (dra_feed_current), each relist reconciles, and what the
 * API server says replaces whatever was assumed.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef GP_DRA_FEED_H
#define GP_DRA_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"
#include "lib/util.h"
#include "pack/cluster.h"
#include "pack/drastore.h"

typedef struct gp_dra_feed gp_dra_feed;

/* Borrows k, c and ds (they outlive the feed). No network yet. */
gp_dra_feed *dra_feed_new(gp_kube *k, gp_cluster *c, gp_drastore *ds, double stall_s);
/* Stops the reflectors; accepts NULL. */
void dra_feed_free(gp_dra_feed *f);
/* Called (from a reflector's thread, after the map has it) whenever a watch
 * event shows a claim's allocation gone: deallocated or deleted, its devices
 * free again. Set before the feed starts; fn NULL: nobody is told. */
void dra_feed_on_freed(gp_dra_feed *f, void (*fn)(void *ud), void *ud);

/* Asks discovery unless answered (at most once a second) and starts the
 * reflectors when the API is there. Call from a housekeeping loop. */
void dra_feed_poll(gp_dra_feed *f);

typedef enum {
    GP_DRA_UNKNOWN = 0,   /* discovery not answered yet */
    GP_DRA_ABSENT = 1,    /* the server does not serve resource.k8s.io/v1 */
    GP_DRA_PRESENT = 2    /* served: the feed runs */
} gp_dra_state;
gp_dra_state dra_feed_state(gp_dra_feed *f);

/* True when the verbs may trust the map as far as DRA goes: the API is
 * absent, or all three views are listed and current. Otherwise why says
 * which (discovery unanswered, a view not listed or due a relist). */
bool dra_feed_current(gp_dra_feed *f, char *why, size_t whylen);

/* The GPU driver table changed (policy reload): the slices are listed again
 * and decoded with it; the verbs wait for that LIST. */
void dra_feed_drivers_changed(gp_dra_feed *f);

/* GET each named claim of namespace ns and apply it to the store, then flush
 * (a bind learns the allocation kube-scheduler wrote in its PreBind before
 * the watch shows it). Returns how many were applied. */
int dra_feed_refresh_claims(gp_dra_feed *f, const char *ns, const char *const *names, int n,
                            double timeout_s);

/* Prometheus text: discovery state, the reflectors, the store's objects. A
 * metrics_fn (lib/metrics.h). */
void dra_feed_metrics(void *feed, gp_buf *out);

#endif
