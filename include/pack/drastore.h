/* drastore.h -- ResourceSlices, ResourceClaims and DeviceClasses as gpupack
 * reads them: per-node DRA views for the cluster store, and the GPU request
 * of a pod whose claims are not allocated yet. Pure (no I/O); one lock.
 *
 *   gp_drastore *ds = drastore_new(&drivers);
 *   drastore_put_slice(ds, &slice);          // takes the decoded slice's arrays
 *   drastore_put_claim(ds, &claim);
 *   drastore_flush(ds, cluster);             // views of the nodes that changed
 *   drastore_pod_request(ds, &podclaims, ns, &req, &err);
 *
 * Which device the allocator gives a request is predicted by placement (a
 * gp_pod_req with dra set, see pack/placement.c); this module supplies what
 * it needs: every node's GPUs in the allocator's order (pools by driver, then
 * pool name; slices of a pool by name; devices as the slice lists them; only
 * a pool's newest generation) and what the allocated claims consume of each.
 *
 * Thread-safety: every function takes the store's lock. */
#ifndef GP_DRASTORE_H
#define GP_DRASTORE_H

#include <stdbool.h>

#include "model/dra.h"
#include "model/gpu.h"
#include "pack/cluster.h"
#include "lib/util.h"

typedef struct gp_drastore gp_drastore;

/* Copies the driver table. */
gp_drastore *drastore_new(const gp_dra_drivers *t);
void drastore_free(gp_drastore *ds);   /* accepts NULL */
/* Replaces the driver table; every node is recomputed at the next flush.
 * Returns true when it differs from the one in use: the slices, decoded by
 * the old table, must then be listed again (dra_feed_drivers_changed). */
bool drastore_set_drivers(gp_drastore *ds, const gp_dra_drivers *t);
void drastore_drivers(gp_drastore *ds, gp_dra_drivers *out);

/* Adds or replaces an object; takes over the arrays of *s / *c (the struct
 * is zeroed). Deletes by name (slices, classes) or uid (claims). For claims,
 * true when an allocation the store held is gone with the change (the claim
 * deallocated or deleted): devices are free again. */
void drastore_put_slice(gp_drastore *ds, gp_dra_slice *s);
void drastore_del_slice(gp_drastore *ds, const char *name);
bool drastore_put_claim(gp_drastore *ds, gp_dra_claim *c);
bool drastore_del_claim(gp_drastore *ds, const char *uid);
void drastore_put_class(gp_drastore *ds, const gp_dra_class *cl);
void drastore_del_class(gp_drastore *ds, const char *name);

/* Relist support, per kind: objects of that kind not put between begin and
 * end are deleted at end. */
typedef enum { GP_DRA_SLICES = 0, GP_DRA_CLAIMS = 1, GP_DRA_CLASSES = 2 } gp_dra_kind;
void drastore_resync_begin(gp_drastore *ds, gp_dra_kind k);
void drastore_resync_end(gp_drastore *ds, gp_dra_kind k);

/* Hands the view of every node whose slices or claims changed since the last
 * flush to the cluster store (cluster_set_dra). Returns how many nodes. */
int drastore_flush(gp_drastore *ds, gp_cluster *c);

/* The view of one node as it stands (for tests and explain); free with
 * cluster_dra_view_free. */
void drastore_node_view(gp_drastore *ds, const char *node, gp_dra_node_view *out);

/* The GPU devices a pod's claims ask and no allocation has given yet, as GPU
 * "containers" of req (one per device request; req->dra set when there is
 * any). Leaves req alone and returns 0 when there is nothing to predict: no
 * claims, all allocated, none asking a GPU class. Returns 1 when a claim is
 * not known yet or asks something gpupack cannot predict (allocationMode
 * All): why says which, and req is left alone (the pod is then served as a
 * pod without GPU requests). */
int drastore_pod_request(gp_drastore *ds, const gp_dra_pod_claims *pc, const char *ns,
                         gp_pod_req *req, gp_err *why) GP_WUR;

typedef struct gp_drastore_stats {
    size_t slices, claims, classes, claims_allocated, gpus;
} gp_drastore_stats;
void drastore_stats(gp_drastore *ds, gp_drastore_stats *out);

#endif
