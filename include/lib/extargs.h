/* extargs.h -- fast decoding of kube-scheduler's ExtenderArgs. Pure.
 *
 * A 5,000-node filter request is mostly "NodeNames": 5,000 short strings.
 * Building a jansson value for each costs more than fitting the pod on the
 * nodes, so the top level is scanned here: NodeNames are copied into one
 * arena and only "Pod" (reduced to the members gpupack reads: a pod as sent
 * is mostly managedFields, status and defaulted fields) and "Nodes" go
 * through jansson. The scanner accepts
 * only the plain case -- ASCII names without escapes, known keys once each,
 * well-formed JSON -- and declines everything else, so callers then parse the
 * whole body with jansson and get its exact behaviour and error messages. */
#ifndef GP_EXTARGS_H
#define GP_EXTARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gp_extargs {
    json_t *pod;            /* owned; NULL when absent or null. Reduced to what the
                             * extender reads: metadata name, namespace, uid, labels
                             * and the annotations extargs_annotation_prefixes name;
                             * spec.containers and spec.initContainers with their name
                             * and resources. */
    json_t *nodes;          /* owned; NULL when absent or null */
    bool has_names;         /* NodeNames present and not null */
    size_t nnames;
    const char **names;     /* nnames pointers into arena */
    char *arena;
} gp_extargs;

/* The pod annotations the scanner keeps, by key prefix (NULL-terminated): what
 * podreq_decode reads (gpupack's, and the other systems' request formats of
 * model/formats.h) and what restores assignments. formats_annotation_kept()
 * applies the same list to every other trimmed copy of a pod. */
extern const char *const extargs_annotation_prefixes[];

/* Returns 0 and fills *out, or -1 when the body is not in the plain form
 * (nothing to free then). */
int extargs_scan(const char *body, size_t len, size_t max_names, gp_extargs *out);
void extargs_free(gp_extargs *a);   /* accepts a zeroed struct */

#endif
