/* lease_kube.h -- the leader's Lease store on the API server (coordination.k8s.io/v1). */
#ifndef GP_LEASE_KUBE_H
#define GP_LEASE_KUBE_H

#include <jansson.h>

#include "kube/kube.h"
#include "ha/leader.h"
#include "lib/util.h"

typedef struct gp_lease_kube gp_lease_kube;

/* A store for namespace ns, Lease name (both copied); each call gives up
 * after timeout_s. Borrows k (must outlive the store). */
gp_lease_kube *lease_kube_new(gp_kube *k, const char *ns, const char *name, double timeout_s);
void lease_kube_free(gp_lease_kube *s);   /* accepts NULL */
/* The gp_lease_store that leader_new copies (ud = s). interrupt cancels the
 * calls in progress and every later call except an update that releases the
 * Lease (empty holder), so that shutdown can still give the Lease back. */
gp_lease_store lease_kube_store(gp_lease_kube *s);

/* --- pure: Lease JSON <-> record (tests use them directly) ------------- */

/* Decodes a Lease object (borrowed). Absent spec fields are zero/"".
 * Returns 0, or -1 with a message when it is not a usable Lease. */
int lease_kube_decode(const json_t *lease, gp_lease_rec *out, gp_err *err) GP_WUR;
/* A Lease object for rec (owned); metadata.resourceVersion only when rec->rv
 * is set. Times as RFC 3339 with microseconds (MicroTime). */
json_t *lease_kube_encode(const gp_lease_rec *rec, const char *ns, const char *name);
/* Unix ns <-> "2006-01-02T15:04:05.000000Z". parse returns 0 or -1. */
void lease_kube_format_time(int64_t ns, char out[40]);
int lease_kube_parse_time(const char *s, int64_t *ns) GP_WUR;

#endif
